//! The scheduler's properties (docs/scheduler.md, "Proven properties"):
//! stated next to the logic, printed under `` `ifdef FORMAL ``, proven by
//! the tests with yosys at small parameter points.
//!
//! What is asserted: with one SM, no table entry above its capacity (an
//! entry below zero wraps above it); a block goes only to an SM where it fits; a kernel is
//! dispatched only as its stream's head (after its predecessor's last
//! block), and with `stream_order = complete` only once its predecessors
//! have completed; with one SM, each resource in use equals the needs of
//! the blocks in flight (the slots: the number of blocks in flight). The
//! queue and dispatcher invariants that make these inductive are asserted
//! too. What is assumed: the SMs complete only blocks that are in flight.

use super::{Entry, Widths};
use crate::rtl::{bits_for, select, sum_tree, Expr, ModuleBuilder};
use gpurtl_params::scheduler::{SchedulerParams, StreamOrder};

/// The registers and wires the properties read.
pub(super) struct State<'a> {
    pub ent: &'a [Vec<Entry>],
    pub hptr: &'a [Expr],
    pub dptr: &'a [Expr],
    pub tptr: &'a [Expr],
    pub cnt: &'a [Expr],
    pub pend: &'a [Expr],
    /// The dispatcher: valid, stream, entry, id, need, next block, blocks left.
    pub cur: [&'a Expr; 7],
    pub fifo_n: &'a Expr,
    /// Per stream, the head's need as the comparator sees it.
    pub head_need: &'a [Expr],
    /// One bit per SM: a block starts there this cycle.
    pub take: &'a Expr,
    /// Per SM: free threads, registers, shared memory, slots (from the low bits).
    pub free: &'a [Expr],
    /// Completion lanes: (valid, tag, SM).
    pub cpl: &'a [(Expr, Expr, Expr)],
}

/// `(a + d) mod q` for a ring index `a < q` and a distance `d <= q`, as wide as `a`.
fn ring_add(a: &Expr, d: &Expr, q: u32) -> Expr {
    let w = a.width().max(d.width()) + 1;
    let sum = a.zext(w).add(&d.zext(w));
    let q = Expr::lit(w, q as u64);
    sum.ge(&q).mux(&sum.sub(&q), &sum).part(0, a.width())
}

/// `(i - h) mod q`: how far entry `i` is from the ring index `h`, `width` bits.
fn dist(h: &Expr, i: u32, q: u32, width: u32) -> Expr {
    let w = width.max(h.width()) + 1;
    let (h, i) = (h.zext(w), Expr::lit(w, i as u64));
    i.ge(&h).mux(&i.sub(&h), &i.add(&Expr::lit(w, q as u64)).sub(&h)).part(0, width)
}

pub(super) fn state(b: &mut ModuleBuilder, p: &SchedulerParams, w: &Widths, st: &State) {
    let (s_n, q_n, m_n) = (p.streams, p.queue_depth, p.sms);
    let qcw = bits_for(q_n as u64);
    let bb = p.block_bits;
    let [cur_v, cur_s, cur_slot, cur_id, cur_need, cur_next, cur_left] = st.cur;
    let implies = |a: &Expr, c: &Expr| a.not().or(c);
    let qlit = Expr::lit(qcw, q_n as u64);

    // ---- queues ----
    // occupied[s][i]: entry i holds a kernel (from hptr, cnt entries).
    let mut occupied: Vec<Vec<Expr>> = Vec::new();
    for s in 0..s_n as usize {
        let (cnt, pend) = (&st.cnt[s], &st.pend[s]);
        b.assert_always(
            &format!("s{s}_counts"),
            &pend.le(cnt).and(&cnt.le(&qlit)),
            "kernels not fully dispatched <= kernels in the queue <= queue_depth",
        );
        if q_n != 1 << st.hptr[s].width() {
            let ql = Expr::lit(st.hptr[s].width(), q_n as u64);
            b.assert_always(
                &format!("s{s}_pointers_in_range"),
                &st.hptr[s].lt(&ql).and(&st.dptr[s].lt(&ql)).and(&st.tptr[s].lt(&ql)),
                "every ring pointer is below queue_depth",
            );
        }
        let done_n = b.formal_let(&format!("formal_s{s}_dispatched"), &cnt.sub(pend));
        b.assert_always(
            &format!("s{s}_pointers"),
            &st.tptr[s].eq(&ring_add(&st.hptr[s], cnt, q_n)).and(&st.dptr[s].eq(&ring_add(&st.hptr[s], &done_n, q_n))),
            "the tail is cnt entries after the oldest, the head cnt - pend after it",
        );
        let needs: Vec<Expr> = st.ent[s].iter().map(|e| e.need.clone()).collect();
        b.assert_always(
            &format!("s{s}_head_need"),
            &implies(&pend.ne(&Expr::zero(qcw)), &st.head_need[s].eq(&select(&st.dptr[s], &needs))),
            "the comparator's copy of the head's need is the head entry's need",
        );
        let mut row = Vec::new();
        for i in 0..q_n as usize {
            let e = &st.ent[s][i];
            let d = b.formal_let(&format!("formal_s{s}_e{i}_dist"), &dist(&st.hptr[s], i as u32, q_n, qcw));
            let occ = b.formal_let(&format!("formal_s{s}_e{i}_queued"), &d.lt(cnt));
            let counts = e.blocks.ne(&Expr::zero(bb)).and(&e.done.le(&e.issued)).and(&e.issued.le(&e.blocks));
            b.assert_always(
                &format!("s{s}_e{i}_counts"),
                &implies(&occ, &counts),
                "a queued kernel has blocks, and done <= issued <= blocks",
            );
            b.assert_always(
                &format!("s{s}_e{i}_dispatched"),
                &implies(&d.lt(&done_n), &e.issued.eq(&e.blocks)),
                "a kernel before its stream's head is fully dispatched",
            );
            b.assert_always(
                &format!("s{s}_e{i}_pending"),
                &implies(&occ.and(&done_n.le(&d)), &e.issued.lt(&e.blocks)),
                "a kernel at or behind its stream's head is not fully dispatched",
            );
            b.assert_always(
                &format!("s{s}_e{i}_waiting"),
                &implies(&done_n.lt(&d).and(&occ), &e.issued.eq_lit(0).and(&e.done.eq_lit(0))),
                "a kernel behind its stream's head has not started",
            );
            row.push(occ);
        }
        occupied.push(row);
    }

    // ---- the dispatcher ----
    let sb = cur_s.width();
    let valid_s = if s_n == 1 << sb { Expr::bit(true) } else { cur_s.lt(&Expr::lit(sb, s_n as u64)) };
    let of_cur = |f: &dyn Fn(&Entry) -> Expr| -> Expr {
        let per: Vec<Expr> = (0..s_n as usize).map(|s| select(cur_slot, &st.ent[s].iter().map(f).collect::<Vec<_>>())).collect();
        select(cur_s, &per)
    };
    let head = select(cur_s, st.pend).ne(&Expr::zero(qcw)).and(&cur_slot.eq(&select(cur_s, st.dptr)));
    b.assert_always(
        "dispatch_from_stream_head",
        &implies(cur_v, &valid_s.and(&head)),
        "the dispatcher's kernel is its stream's head: every earlier kernel of the stream is fully dispatched",
    );
    if p.stream_order == StreamOrder::Complete {
        b.assert_always(
            "dispatch_after_predecessors_complete",
            &implies(cur_v, &select(cur_s, st.cnt).eq(&select(cur_s, st.pend))),
            "stream_order complete: no earlier kernel of the dispatcher's stream is still in the queue (not completed)",
        );
    }
    let blocks = of_cur(&|e| e.blocks.clone());
    let issued = of_cur(&|e| e.issued.clone());
    b.assert_always(
        "dispatcher_matches_its_entry",
        &implies(
            cur_v,
            &cur_left
                .ne(&Expr::zero(bb))
                .and(&cur_next.eq(&issued))
                .and(&cur_left.eq(&blocks.sub(&issued)))
                .and(&cur_need.eq(&of_cur(&|e| e.need.clone())))
                .and(&cur_id.eq(&of_cur(&|e| e.id.clone()))),
        ),
        "the dispatcher's copy of its kernel (id, need, next block, blocks left) agrees with the queue entry",
    );
    b.assert_always("fifo_count", &st.fifo_n.le(&Expr::lit(2, 2)), "the dispatch FIFO holds at most 2 records");

    // ---- the table ----
    let caps = [p.sm_threads, p.sm_regs, p.sm_smem, p.sm_slots];
    let field_w = [w.thr, w.reg, w.mem, w.slot];
    let lo = [0, w.thr, w.thr + w.reg, w.need];
    let field = |x: &Expr, k: usize| x.part(lo[k], field_w[k]);
    for m in 0..m_n as usize {
        let f = &st.free[m];
        // With several SMs, the assumption below cannot say that a
        // completion returns a block to the SM it ran on (the block does not
        // record it), so the bounds hold only given a truthful environment
        // and are not stated.
        if m_n == 1 {
            let within = (0..4).map(|k| field(f, k).le(&Expr::lit(field_w[k], caps[k] as u64))).reduce(|a, c| a.and(&c));
            b.assert_always(
                &format!("sm{m}_within_capacity"),
                &within.expect("four resources"),
                "no free resource above its capacity (nor below zero, which would wrap above it)",
            );
        }
        let fits = (0..3).map(|k| field(cur_need, k).le(&field(f, k))).fold(field(f, 3).ne(&Expr::zero(w.slot)), |a, c| a.and(&c));
        b.assert_always(
            &format!("sm{m}_dispatch_fits"),
            &implies(&st.take.bit_at(m as u32), &fits),
            "a block starts only on an SM where its need fits and a slot is free",
        );
    }
    if m_n == 1 {
        // Each resource in use = the needs of the blocks in flight (issued,
        // not completed) of the queued kernels; for the slots, their number.
        let f = &st.free[0];
        for k in 0..4 {
            let pw = bb + field_w[k];
            let width = pw + bits_for((s_n * q_n) as u64);
            let terms: Vec<Expr> = (0..s_n as usize)
                .flat_map(|s| (0..q_n as usize).map(move |i| (s, i)))
                .map(|(s, i)| {
                    let e = &st.ent[s][i];
                    let flight = e.issued.sub(&e.done).zext(pw);
                    let need = if k == 3 { Expr::lit(pw, 1) } else { field(&e.need, k).zext(pw) };
                    occupied[s][i].repl(pw).and(&flight.mul(&need))
                })
                .collect();
            let used = Expr::lit(field_w[k], caps[k] as u64).sub(&field(f, k)).zext(width);
            let name = ["threads", "regs", "smem", "slots"][k];
            b.assert_always(
                &format!("sm0_{name}_in_flight"),
                &used.eq(&sum_tree(&terms, width)),
                "with one SM: the resource in use equals the needs of the blocks in flight (slots: their number)",
            );
        }
    }

    // ---- the environment ----
    let qb = st.hptr[0].width();
    for (j, (v, tag, sm)) in st.cpl.iter().enumerate() {
        let (ts, ti) = (tag.part(qb, tag.width() - qb), tag.part(0, qb));
        // Earlier lanes of this transfer with the same tag.
        let before: Vec<Expr> = st.cpl[..j].iter().map(|(v2, t2, _)| v2.and(&t2.eq(tag))).collect();
        let cw = bits_for(st.cpl.len() as u64);
        let n = sum_tree(&before, cw).zext(bb + cw + 1);
        let mut ok = Expr::bit(false);
        for (s, (row, queued)) in st.ent.iter().zip(&occupied).enumerate() {
            for (i, (e, occ)) in row.iter().zip(queued).enumerate() {
                let in_flight = e.done.zext(bb + cw + 1).add(&n).lt(&e.issued.zext(bb + cw + 1));
                ok = ok.or(&ts.eq_lit(s as u64).and(&ti.eq_lit(i as u64)).and(occ).and(&in_flight));
            }
        }
        let sm_ok = if m_n == 1 << sm.width() { Expr::bit(true) } else { sm.lt(&Expr::lit(sm.width(), m_n as u64)) };
        b.assume_always(
            &format!("cpl{j}_in_flight"),
            &implies(v, &ok.and(&sm_ok)),
            "the SMs complete only blocks in flight: a queued kernel's tag, fewer completed than issued, an SM that exists",
        );
    }
}
