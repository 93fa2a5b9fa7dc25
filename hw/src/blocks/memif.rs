//! `mem_if = axi4` (docs/memory.md): blocks whose memory ports go through
//! the arbiter and its bridge to one AXI4 master `m_axi_*`.
//!
//! [`axi4_top`] wraps one or several block designs (their native form, the
//! "cores"): every port of a core that is not one of its memory ports
//! becomes a port of the top (under a prefix when several share it), the
//! memory ports become sources of one read arbiter and one write arbiter,
//! and those feed the bridge. A block with `mem_if = axi4` is one core; a
//! composed design (tests/memsys.rs) is several on one AXI port.

use crate::rtl::{self, Axi, BusKind, Expr, ModuleBuilder, Native, RtlError};
use crate::Design;

/// What a memory port of a core is. A port's data width `S` is its own
/// (a power of two); the top's is `D` (docs/memory.md, "Sources of another
/// width").
pub enum Kind {
    /// A native read port `<port>_req` / `<port>_rsp` with one beat a
    /// request, `S <= D` (a narrower one reads the beat holding its bytes and
    /// takes its lane), `credits` beats of response buffer in the arbiter (at
    /// least what the core has in flight, so the arbiter never holds it back).
    Read { credits: u32 },
    /// A native read port with `len`: a request of `len + 1` beats of `S`
    /// bits, its bytes a whole number of `D`-bit beats from an address
    /// aligned to both, read as bursts of at most `chunk` beats of `D` bits
    /// (`chunk` beats of buffer), one request of the core at a time; the
    /// beats come back regrouped into `S`-bit ones.
    Burst { chunk: u32 },
    /// A native write port, one beat a request, `S <= D` (a narrower beat
    /// goes in its lane with its strobes); up to `outstanding` in flight.
    Write { outstanding: u32 },
    /// A dword write stream `<port>` (`addr`, `data`: 32 bits, `last`; the
    /// command processor's `wr`): each dword a one-beat write with the
    /// strobes of its four bytes; up to `outstanding` in flight.
    Dwords { outstanding: u32 },
}

/// A memory port of a core.
pub struct Source {
    pub port: String,
    pub kind: Kind,
    /// The AXI byte address (the top's `addr_bits` wide) of a core address.
    pub addr: Box<dyn Fn(&Expr) -> Expr>,
}

/// One core in the top.
pub struct Part<'a> {
    pub design: &'a Design,
    /// Instance name (`u_core`).
    pub inst: &'a str,
    /// Prefix of its ports on the top ("" for a block's own top).
    pub prefix: &'a str,
    pub sources: Vec<Source>,
    /// An output of the core that says it is busy (`busy_o`): on the top it
    /// also stays high while the core's writes wait for their responses.
    pub busy: Option<&'a str>,
}

/// The top `name`: the parts, the arbiters and the bridge (`axi`: address
/// and data width; the ID width is worked out here). `doc`: the top's
/// comment lines.
pub fn axi4_top(name: &str, doc: &[String], parts: &[Part], axi: Axi) -> Result<ModuleBuilder, RtlError> {
    let mut b = ModuleBuilder::new(name);
    for d in doc {
        b.doc(d.clone());
    }
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    // The arbiters' ports: `D` bits, a `len` as long as the longest chunk.
    let chunk = parts.iter().flat_map(|p| &p.sources).filter_map(|s| if let Kind::Burst { chunk } = s.kind { Some(chunk) } else { None }).max();
    let rd_src = Native { addr_bits: axi.addr_bits, data_bits: axi.data_bits, len_bits: chunk.map_or(0, |c| rtl::clog2(c as u64)), tag_bits: 0 };
    let wr_src = Native { addr_bits: axi.addr_bits, data_bits: axi.data_bits, len_bits: 0, tag_bits: 0 };
    let db = axi.data_bits / 8;
    // Read sources with their buffer beats; write sources with their part.
    let mut reads: Vec<(rtl::Bus, &Source, u32)> = Vec::new();
    let mut writes: Vec<(Wsrc, &Source, usize)> = Vec::new();
    let mut outstanding = 1;
    let mut busy: Vec<(usize, Expr, Expr)> = Vec::new();
    for (pi, part) in parts.iter().enumerate() {
        let m = part.design.top();
        let memory: Vec<String> = part
            .sources
            .iter()
            .flat_map(|s| match s.kind {
                Kind::Read { .. } | Kind::Burst { .. } | Kind::Write { .. } => vec![format!("{}_req", s.port), format!("{}_rsp", s.port)],
                Kind::Dwords { .. } => vec![s.port.clone()],
            })
            .collect();
        let in_stream = |id| m.streams.iter().any(|d| d.valid == id || d.ready == id || d.fields.iter().any(|f| f.1 == id));
        // Plain ports: clock and reset joined, the rest on the top.
        let mut conns: Vec<(&str, Expr)> = vec![("clk_i", clk.clone()), ("rst_i", rst.clone())];
        let mut busy_wire = None;
        for &id in &m.ports {
            let p = m.sig(id);
            if in_stream(id) || p.name == "clk_i" || p.name == "rst_i" {
                continue;
            }
            let top_name = format!("{}{}", part.prefix, p.name);
            let e = if part.busy == Some(p.name.as_str()) {
                let w = b.wire(&format!("{}_{}", part.inst, p.name.trim_end_matches("_o")), p.width);
                busy_wire = Some((b.output(&top_name, p.width, &p.doc), w.clone()));
                w
            } else if p.kind == rtl::SigKind::Input {
                b.input(&top_name, p.width, &p.doc)
            } else {
                b.output(&top_name, p.width, &p.doc)
            };
            conns.push((p.name.as_str(), e));
        }
        let u = b.instance_of(part.design, part.inst, &conns);
        if let Some((out, w)) = busy_wire {
            busy.push((pi, out, w));
        }
        for d in &m.streams {
            if !memory.contains(&d.name) {
                b.expose(&u.stream(&d.name), &format!("{}{}", part.prefix, d.name));
            }
        }
        for s in &part.sources {
            match s.kind {
                Kind::Read { credits } => reads.push((u.bus(BusKind::Read, &s.port), s, credits)),
                Kind::Burst { chunk } => reads.push((u.bus(BusKind::Read, &s.port), s, chunk)),
                Kind::Write { outstanding: o } => {
                    outstanding = outstanding.max(o);
                    writes.push((Wsrc::Port(u.bus(BusKind::Write, &s.port)), s, pi))
                }
                Kind::Dwords { outstanding: o } => {
                    outstanding = outstanding.max(o);
                    writes.push((Wsrc::Dwords(u.stream(&s.port)), s, pi))
                }
            }
        }
    }

    let id_bits = rtl::clog2(reads.len().max(writes.len()) as u64).max(1);
    let axi = Axi { id_bits, ..axi };
    let cr = [("clk_i", clk.clone()), ("rst_i", rst.clone())];
    let lg = rtl::clog2(db as u64);
    let mut mem_rd = None;
    if !reads.is_empty() {
        let credits: Vec<u32> = reads.iter().map(|r| r.2).collect();
        let m = rtl::arbiter::read_arbiter(&format!("{name}_rd_arbiter"), rd_src, &credits)?;
        let u = b.instance(&m, "u_rd_arbiter", &cr);
        for (k, (core, s, credits)) in reads.iter().enumerate() {
            let arb = u.bus(BusKind::Read, &format!("rd{k}"));
            match s.kind {
                Kind::Burst { chunk } => burst_read(&mut b, &s.port, core, &arb, &(s.addr)(&core.req().field("addr")), chunk, axi.data_bits),
                _ => narrow_read(&mut b, &s.port, core, &arb, &(s.addr)(&core.req().field("addr")), *credits, axi.data_bits, rd_src.len_bits),
            }
        }
        mem_rd = Some(u.bus(BusKind::Read, "mem_rd"));
    }
    let mut mem_wr = None;
    // Per part, its writes taken and not yet answered.
    let mut owing: Vec<Vec<Expr>> = vec![Vec::new(); parts.len()];
    if !writes.is_empty() {
        let m = rtl::arbiter::write_arbiter(&format!("{name}_wr_arbiter"), writes.len() as u32, wr_src, outstanding)?;
        let u = b.instance(&m, "u_wr_arbiter", &cr);
        for (k, (core, s, pi)) in writes.iter().enumerate() {
            let arb = u.bus(BusKind::Write, &format!("wr{k}"));
            let (valid, ready, addr, data, strb) = match core {
                Wsrc::Dwords(st) => {
                    b.waive_unused(&st.field("last"), "a packet's last dword needs nothing more of memory");
                    (st.valid.clone(), st.ready.clone(), (s.addr)(&st.field("addr")), st.field("data"), Expr::ones(4))
                }
                Wsrc::Port(p) => {
                    let q = p.req();
                    // Its response passes through.
                    b.assign(&p.rsp().valid, &arb.rsp().valid);
                    b.assign(&arb.rsp().ready, &p.rsp().ready);
                    (q.valid.clone(), q.ready.clone(), (s.addr)(&q.field("addr")), q.field("data"), q.field("strb"))
                }
            };
            // The beat holding the source's beat, its strobes in its lane.
            let sw = data.width();
            let ls = rtl::clog2(sw as u64 / 8);
            let (beat, lanes) = if lg > ls {
                let lane = addr.slice(lg - 1, ls);
                let lanes: Vec<Expr> = (0..axi.data_bits / sw).map(|j| lane.eq_lit(j as u64).mux(&strb, &Expr::zero(sw / 8))).collect();
                (beat_address(&addr, lg), Expr::cat_lanes(&lanes))
            } else {
                (addr.clone(), strb.clone())
            };
            b.assign(&arb.req().valid, &valid);
            b.assign(&arb.req().field("addr"), &beat);
            b.assign(&arb.req().field("data"), &data.repl(axi.data_bits / sw));
            b.assign(&arb.req().field("strb"), &lanes);
            b.assign(&ready, &arb.req().ready);
            if lg > ls && ls > 0 {
                b.waive_unused(&addr, "the byte offset within the source's beat: its beats are aligned");
            }
            if let Wsrc::Dwords(_) = core {
                // Writes taken and not yet answered keep the part busy.
                b.assign(&arb.rsp().ready, &Expr::bit(true));
                let ow = rtl::bits_for(outstanding as u64);
                let owed = b.reg(&format!("wr{k}_owed_q"), ow, 0);
                let took = arb.req().valid.and(&arb.req().ready);
                b.next(&owed, &owed.add(&took.zext(ow)).sub(&arb.rsp().valid.zext(ow)), None);
                owing[*pi].push(owed.eq_lit(0).not());
            }
        }
        mem_wr = Some(u.bus(BusKind::Write, "mem_wr"));
    }
    for (pi, out, w) in &busy {
        b.assign(out, &owing[*pi].iter().fold(w.clone(), |a, o| a.or(o)));
    }
    let rd = mem_rd.as_ref().map(|_| Native { tag_bits: rtl::clog2(reads.len() as u64).max(1), ..rd_src });
    let wr = mem_wr.as_ref().map(|_| (Native { tag_bits: rtl::clog2(writes.len() as u64).max(1), ..wr_src }, outstanding));
    let bridge = rtl::axi::bridge(&format!("{name}_axi_bridge"), rd, wr, axi)?;
    let err = b.output("axi_err_o", 1, "sticky: an R beat or B response other than OKAY was taken");
    let u = b.instance(&bridge, "u_axi", &[("clk_i", clk), ("rst_i", rst), ("axi_err_o", err)]);
    if let Some(r) = &mem_rd {
        b.connect_bus(r, &u.bus(BusKind::Read, "rd"));
    }
    if let Some(w) = &mem_wr {
        b.connect_bus(w, &u.bus(BusKind::Write, "wr"));
    }
    b.expose_bus(&u.bus(BusKind::Axi4, "m_axi_"), "m_axi_");
    Ok(b)
}

/// The address of the `2^lg`-byte beat holding byte `addr`.
fn beat_address(addr: &Expr, lg: u32) -> Expr {
    Expr::cat(&[addr.slice(addr.width() - 1, lg), Expr::zero(lg)])
}

/// A write source as the core declares it.
enum Wsrc {
    Port(rtl::Bus),
    Dwords(rtl::Stream),
}

/// A read port of one beat a request (`S <= D` bits) on arbiter port
/// `arb`: the request at its beat's address, the response's lane picked by
/// the request's address, the lanes of requests in flight in a queue of
/// `credits` entries (registers `<port>_lane*`). `len_bits`: the arbiter's
/// `len` (0 here).
#[allow(clippy::too_many_arguments)]
fn narrow_read(b: &mut ModuleBuilder, port: &str, core: &rtl::Bus, arb: &rtl::Bus, addr: &Expr, credits: u32, d: u32, len_bits: u32) {
    let (q, r) = (core.req(), core.rsp());
    let sw = r.field("data").width();
    let (lg, ls) = (rtl::clog2(d as u64 / 8), rtl::clog2(sw as u64 / 8));
    b.assign(&arb.req().valid, &q.valid);
    b.assign(&q.ready, &arb.req().ready);
    if len_bits > 0 {
        b.assign(&arb.req().field("len"), &Expr::zero(len_bits));
    }
    b.assign(&arb.rsp().ready, &r.ready);
    b.assign(&r.valid, &arb.rsp().valid);
    if lg == ls {
        b.assign(&arb.req().field("addr"), addr);
        b.assign(&r.field("data"), &arb.rsp().field("data"));
        return;
    }
    b.assign(&arb.req().field("addr"), &beat_address(addr, lg));
    let push = q.valid.and(&arb.req().ready);
    let pop = arb.rsp().valid.and(&r.ready);
    let (queued, lane, _) = rtl::arbiter::fifo(b, &format!("{port}_lane"), credits, &addr.slice(lg - 1, ls), &push, &pop);
    b.waive_unused(&queued, "a response comes only for a request in flight: the arbiter's queue says when");
    if ls > 0 {
        b.waive_unused(addr, "the byte offset within the source's beat: its beats are aligned");
    }
    let beat = arb.rsp().field("data");
    let lanes: Vec<Expr> = (0..d / sw).map(|j| beat.part(j * sw, sw)).collect();
    b.assign(&r.field("data"), &rtl::select(&lane, &lanes));
}

/// A read port with `len` on arbiter port `arb` (docs/memory.md, "Sources
/// of another width"): the core's request held in `<port>_busy_q`, read as
/// bursts of at most `chunk` beats of `d` bits; the beats regrouped.
fn burst_read(b: &mut ModuleBuilder, port: &str, core: &rtl::Bus, arb: &rtl::Bus, addr: &Expr, chunk: u32, d: u32) {
    let (q, r) = (core.req(), core.rsp());
    let sw = r.field("data").width();
    let len = q.field("len");
    let lb = len.width();
    let aw = addr.width();
    let db = d / 8;
    // Bus beats of the request: (len + 1) * S / D.
    let total_w = lb + 1 + rtl::clog2((sw / d.min(sw)) as u64);
    let beats = len.zext(total_w).add(&Expr::lit(total_w, 1));
    let total = match sw.cmp(&d) {
        std::cmp::Ordering::Equal => beats,
        std::cmp::Ordering::Greater => Expr::cat(&[beats, Expr::zero(rtl::clog2((sw / d) as u64))]).slice(total_w - 1, 0),
        std::cmp::Ordering::Less => beats.slice(total_w - 1, rtl::clog2((d / sw) as u64)).zext(total_w),
    };
    let busy = b.reg(&format!("{port}_busy_q"), 1, 0);
    let next = b.reg_noreset(&format!("{port}_addr_q"), aw);
    let left = b.reg_noreset(&format!("{port}_left_q"), total_w);
    let cw = rtl::bits_for(chunk as u64);
    let lw = rtl::clog2(chunk as u64);
    assert!(chunk >= 2 && (chunk as u64) < 1 << total_w, "a burst source's chunk is 2 beats or more and fits its request");
    let take = q.valid.and(&busy.not());
    b.assign(&q.ready, &busy.not());
    let big = left.ge(&Expr::lit(total_w, chunk as u64));
    let n = b.let_(&format!("{port}_beats"), &big.mux(&Expr::lit(cw, chunk as u64), &left.slice(cw.min(total_w) - 1, 0).zext(cw)));
    let fire = busy.and(&arb.req().ready);
    b.assign(&arb.req().valid, &busy);
    b.assign(&arb.req().field("addr"), &next);
    b.assign(&arb.req().field("len"), &n.sub(&Expr::lit(cw, 1)).slice(lw - 1, 0).zext(arb.req().field("len").width()));
    let step = Expr::cat(&[n.clone(), Expr::zero(rtl::clog2(db as u64))]);
    let sw_n = step.width().min(aw);
    b.next(&next, &take.mux(addr, &next.add(&step.slice(sw_n - 1, 0).zext(aw))), Some(&take.or(&fire)));
    b.next(&left, &take.mux(&total, &left.sub(&n.zext(total_w))), Some(&take.or(&fire)));
    b.next(&busy, &take.or(&busy.and(&left.ne(&n.zext(total_w)))), Some(&take.or(&fire)));
    let beat = arb.rsp().field("data");
    if sw == d {
        b.assign(&r.valid, &arb.rsp().valid);
        b.assign(&r.field("data"), &beat);
        b.assign(&arb.rsp().ready, &r.ready);
    } else if sw > d {
        // Gather S / D beats, the lowest address in the low bits.
        let k = sw / d;
        let kw = rtl::clog2(k as u64);
        let cnt = b.reg(&format!("{port}_part_q"), kw, 0);
        let last = cnt.eq_lit(k as u64 - 1);
        let held: Vec<Expr> = (0..k - 1).map(|j| b.reg_noreset(&format!("{port}_part{j}_q"), d)).collect();
        let took = arb.rsp().valid.and(&arb.rsp().ready);
        for (j, h) in held.iter().enumerate() {
            b.next(h, &beat, Some(&took.and(&cnt.eq_lit(j as u64))));
        }
        b.next(&cnt, &cnt.add(&Expr::lit(kw, 1)), Some(&took));
        b.assign(&r.valid, &arb.rsp().valid.and(&last));
        let mut lanes = held.clone();
        lanes.push(beat);
        b.assign(&r.field("data"), &Expr::cat_lanes(&lanes));
        b.assign(&arb.rsp().ready, &last.not().or(&r.ready));
    } else {
        // Split each beat into D / S, the lowest address first.
        let k = d / sw;
        let kw = rtl::clog2(k as u64);
        let cnt = b.reg(&format!("{port}_part_q"), kw, 0);
        let lanes: Vec<Expr> = (0..k).map(|j| beat.part(j * sw, sw)).collect();
        b.assign(&r.valid, &arb.rsp().valid);
        b.assign(&r.field("data"), &rtl::select(&cnt, &lanes));
        b.next(&cnt, &cnt.add(&Expr::lit(kw, 1)), Some(&arb.rsp().valid.and(&r.ready)));
        b.assign(&arb.rsp().ready, &r.ready.and(&cnt.eq_lit(k as u64 - 1)));
    }
}
