//! Round-robin arbiters that join several native ports into one
//! (docs/arbiter.md, "Read side" and "Write side"): one request (or write
//! beat) a cycle, caps on what each source has in flight, responses routed
//! back by the source tag. The bridge to AXI4 is `axi.rs`.

use super::bus::{Native, Role};
use super::expr::{bits_for, clog2, lowest_bit, select, select_onehot, Expr};
use super::module::{Module, ModuleBuilder, RtlError};

/// A round-robin choice among request bits.
pub struct RoundRobin {
    /// One bit a requester: granted (at most one).
    pub grant: Vec<Expr>,
    /// Some requester is granted.
    pub any: Expr,
    /// The granted requester's index (`clog2(n)` bits, at least 1).
    pub index: Expr,
}

/// Grant the first set bit of `req` after the pointer `<name>_ptr_q` (the
/// last requester granted; it resets to the last index, so requester 0 is
/// preferred first). The pointer moves to the granted one at an edge where
/// `advance` is high.
pub fn round_robin(b: &mut ModuleBuilder, name: &str, req: &[Expr], advance: &Expr) -> RoundRobin {
    let n = req.len();
    let iw = clog2(n as u64).max(1);
    if n == 1 {
        return RoundRobin { grant: req.to_vec(), any: req[0].clone(), index: Expr::zero(iw) };
    }
    let ptr = b.reg(&format!("{name}_ptr_q"), iw, n as u64 - 1);
    let reqs = b.let_(&format!("{name}_req"), &Expr::cat_lanes(req));
    // Requesters after the pointer first; if none, the lowest of all.
    let after: Vec<Expr> = (0..n).map(|i| if i == 0 { Expr::bit(false) } else { ptr.lt(&Expr::lit(iw, i as u64)) }).collect();
    let upper = b.let_(&format!("{name}_upper"), &reqs.and(&Expr::cat_lanes(&after)));
    let pick = upper.any().mux(&lowest_bit(&upper), &lowest_bit(&reqs));
    let grant = b.let_(&format!("{name}_grant"), &pick);
    let index = b.let_(&format!("{name}_index"), &onehot_index(&grant, n, iw));
    let any = b.let_(&format!("{name}_any"), &reqs.any());
    b.next(&ptr, &index, Some(&advance.and(&any)));
    RoundRobin { grant: (0..n).map(|i| grant.bit_at(i as u32)).collect(), any, index }
}

/// The index of the set bit of the one-hot `x` (`n` bits), `width` bits wide.
pub fn onehot_index(x: &Expr, n: usize, width: u32) -> Expr {
    let bits: Vec<Expr> = (0..width)
        .map(|j| {
            (0..n)
                .filter(|i| i >> j & 1 == 1)
                .map(|i| x.bit_at(i as u32))
                .reduce(|a, c| a.or(&c))
                .unwrap_or_else(|| Expr::bit(false))
        })
        .collect();
    Expr::cat_lanes(&bits)
}

/// A queue of `depth` entries of `width` bits in registers, read at the
/// head: (not empty, head data). `push` appends `data`; `pop` removes the
/// head (only when not empty). Registers `<name>_*`.
pub(crate) fn fifo(b: &mut ModuleBuilder, name: &str, depth: u32, data: &Expr, push: &Expr, pop: &Expr) -> (Expr, Expr, Expr) {
    let pw = clog2(depth as u64).max(1);
    let cw = bits_for(depth as u64);
    let count = b.reg(&format!("{name}_count_q"), cw, 0);
    let head = b.reg(&format!("{name}_rd_q"), pw, 0);
    let tail = b.reg(&format!("{name}_wr_q"), pw, 0);
    let entries: Vec<Expr> = (0..depth)
        .map(|i| b.pipe(&format!("{name}{i}_q"), data, &push.and(&tail.eq_lit(i as u64))))
        .collect();
    // The pointers count modulo `depth` (a one-entry queue's stay at 0).
    let wrap = |p: &Expr| {
        if depth.is_power_of_two() && depth > 1 {
            p.add(&Expr::lit(pw, 1))
        } else {
            p.eq_lit(depth as u64 - 1).mux(&Expr::zero(pw), &p.add(&Expr::lit(pw, 1)))
        }
    };
    b.next(&tail, &wrap(&tail), Some(push));
    b.next(&head, &wrap(&head), Some(pop));
    b.next(&count, &count.add(&push.zext(cw)).sub(&pop.zext(cw)), Some(&push.xor(pop)));
    let valid = b.let_(&format!("{name}_valid"), &count.eq_lit(0).not());
    (valid, select(&head, &entries), count)
}

/// The read arbiter (docs/arbiter.md, "Read side"): native read slaves
/// `rd<k>` (shape `src`, no tag), one tagged native read master `mem_rd`,
/// `buffers[k]` beats of response queue for source `k`.
pub fn read_arbiter(name: &str, src: Native, buffers: &[u32]) -> Result<Module, RtlError> {
    let n = buffers.len();
    let sources = n as u32;
    let tw = clog2(sources as u64).max(1);
    let mut b = ModuleBuilder::new(name);
    let each = if buffers.windows(2).all(|w| w[0] == w[1]) { format!("{} beats", buffers[0]) } else { format!("{buffers:?} beats") };
    b.doc(format!("Round-robin read arbiter: {sources} native read sources, response queues of {each} (docs/arbiter.md)."));
    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let srcs: Vec<_> = (0..n).map(|k| b.read_port(&format!("rd{k}"), Role::Slave, src)).collect();
    let mem = b.read_port("mem_rd", Role::Master, Native { tag_bits: tw, ..src });
    let cw = bits_for(*buffers.iter().max().unwrap_or(&1) as u64);

    // The output request register.
    let q_valid = b.reg("q_valid_q", 1, 0);
    let load = b.let_("q_load", &q_valid.not().or(&mem.req().ready));
    let cred: Vec<Expr> = (0..n).map(|k| b.reg(&format!("cred{k}_q"), cw, buffers[k] as u64)).collect();
    let len = |k: usize| if src.len_bits > 0 { srcs[k].req().field("len") } else { Expr::zero(1) };
    let elig: Vec<Expr> = (0..n)
        .map(|k| {
            // len + 1 <= cred, i.e. len < cred.
            let fits = len(k).zext(cw.max(len(k).width())).lt(&cred[k].zext(cw.max(len(k).width())));
            b.let_(&format!("elig{k}"), &srcs[k].req().valid.and(&fits))
        })
        .collect();
    let rr = round_robin(&mut b, "rr", &elig, &load);
    let grant: Vec<Expr> = rr.grant.iter().map(|g| g.and(&load)).collect();
    for k in 0..n {
        b.assign(&srcs[k].req().ready, &grant[k]);
    }
    let onehot = Expr::cat_lanes(&grant);
    let addr = select_onehot(&onehot, &srcs.iter().map(|s| s.req().field("addr")).collect::<Vec<_>>());
    b.next(&q_valid, &rr.any, Some(&load));
    let q_addr = b.pipe("q_addr_q", &addr, &load);
    let q_tag = b.pipe("q_tag_q", &rr.index, &load);
    b.assign(&mem.req().valid, &q_valid);
    b.assign(&mem.req().field("addr"), &q_addr);
    b.assign(&mem.req().field("tag"), &q_tag);
    if src.len_bits > 0 {
        let l = select_onehot(&onehot, &(0..n).map(len).collect::<Vec<_>>());
        let q_len = b.pipe("q_len_q", &l, &load);
        b.assign(&mem.req().field("len"), &q_len);
    }

    // Responses: always taken, queued per source.
    b.assign(&mem.rsp().ready, &Expr::bit(true));
    let (rvalid, rdata, rtag) = (mem.rsp().valid.clone(), mem.rsp().field("data"), mem.rsp().field("tag"));
    for k in 0..n {
        let buffer = buffers[k];
        let push = b.let_(&format!("push{k}"), &rvalid.and(&rtag.eq_lit(k as u64)));
        let pop = b.let_(&format!("pop{k}"), &srcs[k].rsp().valid.and(&srcs[k].rsp().ready));
        let (v, d, count) = fifo(&mut b, &format!("fifo{k}"), buffer, &rdata, &push, &pop);
        b.assign(&srcs[k].rsp().valid, &v);
        b.assign(&srcs[k].rsp().field("data"), &d);
        let granted = grant[k].and(&srcs[k].req().valid);
        let taken = granted.mux(&len(k).zext(cw).add(&Expr::lit(cw, 1)), &Expr::zero(cw));
        b.next(&cred[k], &cred[k].sub(&taken).add(&pop.zext(cw)), None);
        // Beats requested and not yet answered: never negative, and the
        // queue never overflows.
        let full = Expr::lit(cw + 1, buffer as u64);
        let inflight = b.formal_let(&format!("inflight{k}"), &full.sub(&cred[k].zext(cw + 1)).sub(&count.zext(cw + 1)));
        b.assert_always(
            &format!("credits{k}"),
            &cred[k].zext(cw + 1).add(&count.zext(cw + 1)).le(&full),
            &format!("source {k}: free beats and queued beats never exceed the buffer"),
        );
        b.assume_always(
            &format!("rsp_outstanding{k}"),
            &push.not().or(&inflight.eq_lit(0).not()),
            &format!("memory answers source {k} only for a beat it asked for"),
        );
        b.assert_always(
            &format!("rsp_only_outstanding{k}"),
            &v.not().or(&cred[k].lt(&Expr::lit(cw, buffer as u64))),
            &format!("source {k} sees a response only while it has a beat outstanding"),
        );
    }
    let mut held = vec![q_addr.clone(), q_tag.clone()];
    if src.len_bits > 0 {
        held.push(mem.req().field("len"));
    }
    b.assert_held("mem_rd_req_held", &q_valid, &mem.req().ready, &held, "the granted request is held until taken");
    b.finish()
}

/// The write arbiter (docs/arbiter.md, "Write side"): native write slaves
/// `wr<k>` (shape `src`, no tag), one tagged native write master `mem_wr`;
/// at most `outstanding` bursts per source without their response.
pub fn write_arbiter(name: &str, sources: u32, src: Native, outstanding: u32) -> Result<Module, RtlError> {
    let n = sources as usize;
    let tw = clog2(sources as u64).max(1);
    let bursts = src.len_bits > 0;
    let mut b = ModuleBuilder::new(name);
    b.doc(format!("Round-robin write arbiter: {sources} native write sources, {outstanding} bursts in flight each (docs/arbiter.md)."));
    let _clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let srcs: Vec<_> = (0..n).map(|k| b.write_port(&format!("wr{k}"), Role::Slave, src)).collect();
    let mem = b.write_port("mem_wr", Role::Master, Native { tag_bits: tw, ..src });
    let cw = bits_for(outstanding as u64);

    let q_valid = b.reg("q_valid_q", 1, 0);
    let load = b.let_("q_load", &q_valid.not().or(&mem.req().ready));
    let wcred: Vec<Expr> = (0..n).map(|k| b.reg(&format!("wcred{k}_q"), cw, outstanding as u64)).collect();
    let done: Vec<Expr> = (0..n).map(|k| b.reg(&format!("done{k}_q"), cw, 0)).collect();
    let (locked, owner) = if bursts {
        (b.reg("lock_q", 1, 0), b.reg("owner_q", tw, 0))
    } else {
        (Expr::bit(false), Expr::zero(tw))
    };
    let elig: Vec<Expr> =
        (0..n).map(|k| b.let_(&format!("elig{k}"), &srcs[k].req().valid.and(&wcred[k].eq_lit(0).not()))).collect();
    let rr = round_robin(&mut b, "rr", &elig, &load.and(&locked.not()));
    let ready: Vec<Expr> = (0..n)
        .map(|k| {
            let mine = if bursts { locked.mux(&owner.eq_lit(k as u64), &rr.grant[k]) } else { rr.grant[k].clone() };
            b.let_(&format!("ready{k}"), &load.and(&mine))
        })
        .collect();
    for k in 0..n {
        b.assign(&srcs[k].req().ready, &ready[k]);
    }
    let taken: Vec<Expr> = (0..n).map(|k| ready[k].and(&srcs[k].req().valid)).collect();
    let taken_bits = b.let_("taken", &Expr::cat_lanes(&taken));
    let any = taken_bits.any();
    let index = if bursts { locked.mux(&owner, &rr.index) } else { rr.index.clone() };
    let field = |f: &str| select_onehot(&taken_bits, &srcs.iter().map(|s| s.req().field(f)).collect::<Vec<_>>());
    b.next(&q_valid, &any, Some(&load));
    let mut fields = vec!["addr", "data", "strb"];
    if bursts {
        fields.extend(["len", "last"]);
    }
    let mut held = Vec::new();
    for f in fields {
        let q = b.pipe(&format!("q_{f}_q"), &field(f), &load);
        b.assign(&mem.req().field(f), &q);
        held.push(q);
    }
    let q_tag = b.pipe("q_tag_q", &index, &load);
    b.assign(&mem.req().field("tag"), &q_tag);
    b.assign(&mem.req().valid, &q_valid);
    held.push(q_tag);
    if bursts {
        let last = field("last");
        b.next(&locked, &last.not(), Some(&any));
        b.next(&owner, &index, Some(&any));
    }

    b.assign(&mem.rsp().ready, &Expr::bit(true));
    let (rvalid, rtag) = (mem.rsp().valid.clone(), mem.rsp().field("tag"));
    for k in 0..n {
        let arrive = b.let_(&format!("arrive{k}"), &rvalid.and(&rtag.eq_lit(k as u64)));
        let pop = b.let_(&format!("pop{k}"), &srcs[k].rsp().valid.and(&srcs[k].rsp().ready));
        b.assign(&srcs[k].rsp().valid, &done[k].eq_lit(0).not());
        b.next(&done[k], &done[k].add(&arrive.zext(cw)).sub(&pop.zext(cw)), None);
        let starts = if bursts { taken[k].and(&locked.not()) } else { taken[k].clone() };
        b.next(&wcred[k], &wcred[k].sub(&starts.zext(cw)).add(&pop.zext(cw)), None);
        let full = Expr::lit(cw + 1, outstanding as u64);
        let waiting = b.formal_let(&format!("waiting{k}"), &full.sub(&wcred[k].zext(cw + 1)).sub(&done[k].zext(cw + 1)));
        b.assert_always(
            &format!("wcredits{k}"),
            &wcred[k].zext(cw + 1).add(&done[k].zext(cw + 1)).le(&full),
            &format!("source {k}: free slots and undelivered responses never exceed write_outstanding"),
        );
        // A burst whose first beat is not yet passed on has no response;
        // the memory answers only bursts it was given (counted loosely
        // here as bursts started and not yet answered).
        b.assume_always(
            &format!("wrsp_outstanding{k}"),
            &arrive.not().or(&waiting.eq_lit(0).not()),
            &format!("memory answers source {k} only for a burst it was given"),
        );
        b.assert_always(
            &format!("wrsp_only_outstanding{k}"),
            &done[k].eq_lit(0).or(&wcred[k].lt(&Expr::lit(cw, outstanding as u64))),
            &format!("source {k} sees a write response only while it has a burst outstanding"),
        );
    }
    b.assert_held("mem_wr_req_held", &q_valid, &mem.req().ready, &held, "the granted beat is held until taken");
    if bursts {
        // Bursts never interleave on the output: after a beat that is not
        // last, every beat up to the last has the same tag.
        let fire = q_valid.and(&mem.req().ready);
        let open = b.formal_reg("out_open", 1);
        let tag = b.formal_reg("out_tag", tw);
        let last = mem.req().field("last");
        b.formal_next(&open, &rst.mux(&Expr::bit(false), &fire.mux(&last.not(), &open)));
        b.formal_next(&tag, &fire.mux(&mem.req().field("tag"), &tag));
        // What makes it inductive: a beat waiting in `q` that is not its
        // burst's last is the locked source's, and an open burst's next beat
        // is in `q` or still with the locked source.
        let q_last = mem.req().field("last");
        let q_tag = mem.req().field("tag");
        b.assert_always(
            "lock_follows_q",
            &q_valid.and(&q_last.not()).not().or(&locked.and(&owner.eq(&q_tag))),
            "a beat in the output register that is not last keeps its source locked",
        );
        b.assert_always(
            "open_burst_owner",
            &open.not().or(&q_valid.and(&q_tag.eq(&tag))).or(&locked.and(&owner.eq(&tag))),
            "an open burst's next beat is in the output register or with the locked source",
        );
        b.assert_always(
            "no_interleave",
            &open.not().or(&q_valid.not()).or(&mem.req().field("tag").eq(&tag)),
            "a write burst's beats are not interleaved with another source's",
        );
    }
    b.finish()
}
