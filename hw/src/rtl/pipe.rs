//! Valid/ready pipelines shared by the blocks.
//!
//! A credit pipeline: the `stages` registers advance every cycle, so they
//! need no load enables and no ready signal runs back through them; results
//! that the consumer cannot take yet wait in a bypass FIFO of `stages + 1`
//! entries. The input is ready while fewer than `stages + 1` items are in the
//! pipeline and the FIFO together, a registered compare, so `out_ready` never
//! reaches `in_ready` combinationally. Without back-pressure the FIFO is
//! bypassed: latency is `stages`, one transfer per cycle.
//!
//! Use: `credit_begin`, register the datapath between stages with
//! [`CreditCtl::load`] (always on), then `credit_end` with the last stage's
//! fields.
//!
//! Or, for a long pipeline with wide results: `credit_end_ram`, the waiting
//! results in a block RAM behind a head register (the same timing at the
//! ports).
//!
//! Or, so that no read multiplexer sits between a register and the outputs:
//! `credit_queue_begin`, the datapath registered into all stages but the last,
//! then `credit_queue_end` with the values entering the last stage: the last
//! stage register is the head of an output queue of `stages + 1` entries.
//! The timing at the ports is the same.
//!
//! Each piece states its invariants next to its logic (printed under
//! `` `ifdef FORMAL `` in every module that uses it): the credit pipeline's
//! occupancy is its valid stage registers plus its waiting results, at most
//! `stages + 1`, and counts every result it offers; the bypass FIFO's write
//! pointer is its read pointer plus its count; the output and shift queues'
//! held entries come first and a push always finds room. `tests/formal.rs`
//! proves them by induction (length 1) in small wrappers, with a planted bug
//! per piece, and in the blocks that use them.

use super::ram::{RamRead, RamWrite};
use super::{bits_for, clog2, select, Expr, ExprKind, ModuleBuilder};
use num_bigint::BigUint;

pub struct CreditCtl {
    /// Drive `in_ready_o`.
    pub in_ready: Expr,
    /// An input transfer this cycle.
    pub accept: Expr,
    /// Valid of each stage register, stage 1 first.
    pub valid: Vec<Expr>,
    /// Load enable of the stage registers: always on.
    pub load: Expr,
    stages: usize,
    occupancy: Expr,
    /// [`credit_begin_registered`]: the input's readiness as a register of
    /// its own (`occupancy < stages + 1`, a cycle ahead).
    credit_q: Option<Expr>,
}

pub fn credit_begin(b: &mut ModuleBuilder, stages: usize, in_valid: &Expr) -> CreditCtl {
    begin(b, stages, stages, in_valid, false)
}

/// [`credit_begin`] with the input's readiness a register (the compare of
/// the next occupancy, made a cycle ahead), so that `in_ready` and
/// `accept` are no deeper than the caller's `in_valid`: the same values as
/// [`credit_begin`]'s, cycle by cycle.
pub fn credit_begin_registered(b: &mut ModuleBuilder, stages: usize, in_valid: &Expr) -> CreditCtl {
    begin(b, stages, stages, in_valid, true)
}

/// [`credit_begin`] for [`credit_queue_end`]: `stages` (at least 1)
/// registers from input to output, valid registers for all but the last.
pub fn credit_queue_begin(b: &mut ModuleBuilder, stages: usize, in_valid: &Expr) -> CreditCtl {
    assert!(stages >= 1, "a credit queue has at least its head register");
    begin(b, stages, stages - 1, in_valid, false)
}

fn begin(b: &mut ModuleBuilder, stages: usize, valid_regs: usize, in_valid: &Expr, registered: bool) -> CreditCtl {
    let depth = stages as u64 + 1;
    let credit_q = registered.then(|| b.reg("credit_q", 1, 1));
    let occupancy = b.reg("occupancy_q", bits_for(depth), 0);
    let in_ready = match &credit_q {
        Some(q) => b.let_("credit", q),
        None => b.let_("credit", &occupancy.lt(&Expr::lit(occupancy.width(), depth))),
    };
    let accept = b.let_("accept", &in_valid.and(&in_ready));
    let mut valid = Vec::new();
    let mut prev = accept.clone();
    for r in 1..=valid_regs {
        let v = b.reg(&format!("valid_p{r}_q"), 1, 0);
        b.next(&v, &prev, None);
        prev = v.clone();
        valid.push(v);
    }
    CreditCtl { in_ready, accept, valid, load: Expr::bit(true), stages, occupancy, credit_q }
}

/// The output side: `fields` are the last stage's registers. Returns
/// (out_valid, the fields as seen at the output).
pub fn credit_end(b: &mut ModuleBuilder, ctl: &CreditCtl, fields: &[(&str, Expr)], out_ready: &Expr) -> (Expr, Vec<Expr>) {
    let depth = ctl.stages as u64 + 1;
    let pw = clog2(depth).max(1);
    let last_valid = ctl.valid[ctl.stages - 1].clone();
    let count = b.reg("fifo_count_q", bits_for(depth), 0);
    let rd = b.reg("fifo_rd_q", pw, 0);
    let wr = b.reg("fifo_wr_q", pw, 0);
    let empty = b.let_("fifo_empty", &count.eq_lit(0));
    let out_valid = b.let_("out_valid", &empty.not().or(&last_valid));
    let fire = b.let_("out_fire", &out_valid.and(out_ready));
    let push = b.let_("fifo_push", &last_valid.and(&empty.and(out_ready).not()));
    let pop = b.let_("fifo_pop", &fire.and(&empty.not()));
    let mut outs = Vec::new();
    for (name, e) in fields {
        let entries: Vec<Expr> = (0..depth)
            .map(|i| b.pipe(&format!("fifo{i}_{name}_q"), e, &push.and(&wr.eq_lit(i))))
            .collect();
        outs.push(empty.mux(e, &select(&rd, &entries)));
    }
    let pointers_ok = ring_update(b, depth, &wr, &rd, &count, &push, &pop);
    let cw = count.width();
    occupancy_update(b, ctl, &fire);
    credit_props(b, ctl, &count, &out_valid);
    // The bypass FIFO: its write pointer is its read pointer plus its count,
    // both pointers name entries, and a push always finds a free entry.
    b.assert_always(
        "credit_fifo_pointers",
        &pointers_ok,
        "credit pipeline: the FIFO's pointers name entries, the write pointer is the read pointer plus the count",
    );
    b.assert_always(
        "credit_fifo_room",
        &push.not().or(&count.lt(&Expr::lit(cw, depth))),
        "credit pipeline: a result goes into the FIFO only when it has a free entry",
    );
    (out_valid, outs)
}

/// A ring of `depth` entries: the write pointer `wr` steps on `push`, the
/// read pointer `rd` on `pop`, both wrapping, and `count` follows. Returns
/// the ring's invariant: both pointers name entries and the write pointer
/// is the read pointer plus the count.
fn ring_update(b: &mut ModuleBuilder, depth: u64, wr: &Expr, rd: &Expr, count: &Expr, push: &Expr, pop: &Expr) -> Expr {
    let pw = wr.width();
    let wrap = |p: &Expr| p.eq_lit(depth - 1).mux(&Expr::zero(pw), &p.add(&Expr::lit(pw, 1)));
    b.next(wr, &wrap(wr), Some(push));
    b.next(rd, &wrap(rd), Some(pop));
    let one = Expr::lit(count.width(), 1);
    b.next(count, &push.mux(&pop.mux(count, &count.add(&one)), &pop.mux(&count.sub(&one), count)), None);
    let sw = bits_for(2 * depth);
    let ahead = rd.zext(sw).add(&count.zext(sw));
    let dl = Expr::lit(sw, depth);
    let ahead = ahead.ge(&dl).mux(&ahead.sub(&dl), &ahead);
    let in_range = |p: &Expr| p.zext(sw).lt(&dl);
    in_range(rd).and(&in_range(wr)).and(&wr.zext(sw).eq(&ahead))
}

/// The occupancy (and the registered credit, if any) after a cycle whose
/// input transfer is `ctl.accept` and output transfer `fire`.
fn occupancy_update(b: &mut ModuleBuilder, ctl: &CreditCtl, fire: &Expr) {
    let depth = ctl.stages as u64 + 1;
    let ow = ctl.occupancy.width();
    let occ_next = ctl.occupancy.add(&ctl.accept.zext(ow)).sub(&fire.zext(ow));
    if let Some(q) = &ctl.credit_q {
        b.next(&ctl.occupancy, &occ_next, None);
        // The next credit without the next occupancy's add: one more item
        // inside keeps a credit while the occupancy is below depth - 1 (a
        // compare of registers, made beside the transfers), one fewer always
        // leaves a credit, and neither or both keeps it as it is.
        let more = b.let_("credit_more", &ctl.accept.and(&fire.not()));
        let fewer = b.let_("credit_fewer", &fire.and(&ctl.accept.not()));
        let room = b.let_("credit_room", &ctl.occupancy.lt(&Expr::lit(ow, depth - 1)));
        b.next(q, &fewer.or(&more.mux(&room, q)), None);
        b.assert_always(
            "credit_registered",
            &q.eq(&ctl.occupancy.lt(&Expr::lit(ow, depth))),
            "credit pipeline: the registered credit is the occupancy below its credits",
        );
    } else {
        b.next(&ctl.occupancy, &occ_next, None);
    }
}

/// [`credit_end`] with the waiting results in a block RAM (`fifo_mem`,
/// `stages + 1` words of all the fields), for a pipeline so long that a
/// FIFO of flip-flops, its write enables and its read multiplexer would be
/// the design's largest and slowest logic. The ports are cycle for cycle
/// [`credit_end`]'s: a result nobody waits before goes straight to the
/// output when it is taken, and the oldest waiting result is offered every
/// cycle. That one sits in a head register: the RAM's read register,
/// loaded from the RAM the cycle the previous head leaves, or a register
/// of its own that takes a result straight from the pipeline when the RAM
/// holds none (a RAM cannot give in the next cycle the word it is written
/// in this one). The output is a two-way choice between registers and the
/// last stage. Returns (out_valid, the fields as seen at the output).
pub fn credit_end_ram(b: &mut ModuleBuilder, ctl: &CreditCtl, fields: &[(&str, Expr)], out_ready: &Expr) -> (Expr, Vec<Expr>) {
    let depth = ctl.stages as u64 + 1;
    let pw = clog2(depth).max(1);
    let last_valid = ctl.valid[ctl.stages - 1].clone();
    let word = Expr::cat_lanes(&fields.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>());
    let width = word.width();
    // The head: valid, and which register holds it.
    let head_valid = b.reg("fifo_head_valid_q", 1, 0);
    let head_direct = b.reg("fifo_head_direct_q", 1, 0);
    // Results in the RAM, behind the head.
    let count = b.reg("fifo_count_q", bits_for(depth), 0);
    let rd = b.reg("fifo_rd_q", pw, 0);
    let wr = b.reg("fifo_wr_q", pw, 0);
    let out_valid = b.let_("out_valid", &head_valid.or(&last_valid));
    let fire = b.let_("out_fire", &out_valid.and(out_ready));
    // A result waits unless nothing is waiting and the output takes it.
    let push = b.let_("fifo_push", &last_valid.and(&head_valid.not().and(out_ready).not()));
    // The head is free for the next cycle: empty, or leaving.
    let refill = b.let_("fifo_refill", &head_valid.not().or(out_ready));
    let in_ram = b.let_("fifo_in_ram", &count.eq_lit(0).not());
    let read = b.let_("fifo_read", &refill.and(&in_ram));
    let direct = b.let_("fifo_direct", &refill.and(&in_ram.not()).and(&push));
    let write = b.let_("fifo_write", &push.and(&direct.not()));
    let rdata = b.ram(
        "fifo_mem",
        "results waiting behind the head, in order",
        depth,
        width,
        RamWrite { en: write.clone(), addr: wr.clone(), data: word.clone(), strb: None },
        RamRead { en: read.clone(), addr: rd.clone() },
    );
    let direct_q = b.pipe("fifo_direct_word_q", &word, &direct);
    b.next(&head_direct, &direct, Some(&refill));
    b.next(&head_valid, &refill.not().or(&read).or(&direct), None);
    let pointers_ok = ring_update(b, depth, &wr, &rd, &count, &write, &read);
    let cw = count.width();
    occupancy_update(b, ctl, &fire);
    let head = b.let_("fifo_head", &head_direct.mux(&direct_q, &rdata));
    let shown = head_valid.mux(&head, &word);
    let mut outs = Vec::new();
    let mut lo = 0;
    for (_, e) in fields {
        outs.push(shown.part(lo, e.width()));
        lo += e.width();
    }
    let qw = bits_for(depth + 1);
    let queued = head_valid.zext(qw).add(&count.zext(qw));
    credit_props(b, ctl, &queued, &out_valid);
    // The RAM's queue: nothing in it without a head, fewer words than it
    // has (so a read never meets the write), the write pointer the read
    // pointer plus the count.
    b.assert_always(
        "credit_ram_pointers",
        &pointers_ok.and(&count.lt(&Expr::lit(cw, depth))),
        "credit RAM: the pointers name words, the write pointer is the read pointer plus the count, a word is always free",
    );
    b.assert_always(
        "credit_ram_head",
        &head_valid.or(&count.eq_lit(0)),
        "credit RAM: results wait in the RAM only behind a head",
    );
    (out_valid, outs)
}

/// The credit invariants, stated where the pipeline ends: the occupancy
/// counts exactly the valid stage registers and the items `queued` at the
/// end, it never passes the `stages + 1` credits, and an item is offered
/// only while the occupancy counts it. (The last is what a block that
/// instantiates the pipeline takes for granted of its ports: see the
/// compress stream unit.)
fn credit_props(b: &mut ModuleBuilder, ctl: &CreditCtl, queued: &Expr, out_valid: &Expr) {
    let depth = ctl.stages as u64 + 1;
    let sw = bits_for(2 * depth + ctl.valid.len() as u64);
    let inside = super::popcount(&ctl.valid, sw).add(&queued.zext(sw));
    let occ = ctl.occupancy.zext(sw);
    b.assert_always(
        "credit_occupancy",
        &occ.eq(&inside),
        "credit pipeline: the occupancy is the valid stage registers plus the waiting results",
    );
    b.assert_always("credit_bound", &occ.le(&Expr::lit(sw, depth)), "credit pipeline: at most stages + 1 items inside");
    b.assert_always(
        "credit_out_counted",
        &out_valid.not().or(&occ.ne(&Expr::zero(sw))),
        "credit pipeline: a result is offered only while the occupancy counts it",
    );
}

/// The output side of [`credit_queue_begin`]: `fields` are the values
/// entering the last stage. Returns (out_valid, the head's fields).
pub fn credit_queue_end(b: &mut ModuleBuilder, ctl: &CreditCtl, fields: &[(&str, Expr)], out_ready: &Expr) -> (Expr, Vec<Expr>) {
    assert!(ctl.credit_q.is_none(), "credit_queue_end goes with credit_queue_begin, not credit_begin_registered");
    let push = ctl.valid.last().unwrap_or(&ctl.accept).clone();
    let depth = ctl.stages as u32 + 1;
    let (out_valid, fire, outs, full) = output_queue(b, depth, &push, fields, out_ready);
    let ow = ctl.occupancy.width();
    b.next(&ctl.occupancy, &ctl.occupancy.add(&ctl.accept.zext(ow)).sub(&fire.zext(ow)), None);
    let waiting = super::popcount(&(0..depth).map(|i| full.bit_at(i)).collect::<Vec<_>>(), bits_for(depth as u64));
    credit_props(b, ctl, &waiting, &out_valid);
    (out_valid, outs)
}

/// A queue of `depth` entries that shift towards entry 0, the head, which
/// drives the output: results wait here in order until taken. `push` writes
/// `fields` behind the last waiting result (behind the one leaving, if one
/// leaves this cycle). Each entry loads either the entry behind it or the new
/// result, chosen by a register bit, so the head is a plain register.
/// Returns (out_valid, the output transfer, the head's fields, the held
/// entries' thermometer register).
fn output_queue(b: &mut ModuleBuilder, depth: u32, push: &Expr, fields: &[(&str, Expr)], out_ready: &Expr) -> (Expr, Expr, Vec<Expr>, Expr) {
    // Thermometer: bit i = entry i holds a result.
    let full = b.reg("oq_valid_q", depth, 0);
    let v = |i: i64| held(&full, i);
    let out_valid = v(0);
    let fire = b.let_("out_fire", &out_valid.and(out_ready));
    let entries: Vec<Vec<Expr>> =
        (0..depth).map(|i| fields.iter().map(|(name, e)| b.reg_noreset(&format!("oq{i}_{name}_q"), e.width())).collect()).collect();
    let mut next_full = Vec::new();
    for i in 0..depth as i64 {
        // With an output transfer the entries shift down and a new result
        // lands in the last waiting one's place; without, behind it.
        let load = fire.mux(&v(i + 1).or(&push.and(&v(i))), &push.and(&v(i).not()).and(&v(i - 1)));
        let load = b.let_(&format!("oq{i}_load"), &load);
        for (f, (_, e)) in fields.iter().enumerate() {
            let q = &entries[i as usize][f];
            let d = if i + 1 < depth as i64 { v(i + 1).mux(&entries[i as usize + 1][f], e) } else { e.clone() };
            b.next(q, &d, Some(&load));
        }
        next_full.push(fire.mux(&push.mux(&v(i), &v(i + 1)), &push.mux(&v(i - 1), &v(i))));
    }
    b.next(&full, &Expr::cat_lanes(&next_full), None);
    let bits: Vec<Expr> = (0..depth).map(|i| full.bit_at(i)).collect();
    b.assert_always("oq_thermometer", &thermometer(&bits), "output queue: the held entries are the first ones");
    b.assert_always(
        "oq_room",
        &push.not().or(&v(depth as i64 - 1).not()).or(&fire),
        "output queue: a result goes in only when an entry is free or the head leaves",
    );
    (out_valid, fire, entries[0].clone(), full)
}

/// A queue whose entries shift towards entry 0, the head, and which can take
/// several items and give several in one cycle: the general form of the
/// output queue above, for stream buffers that see all their entries.
pub struct ShiftQueue {
    /// Entry `i` holds an item (a thermometer: entry 0 first).
    pub has: Vec<Expr>,
    /// Each entry's fields, entry 0 (the head) first.
    pub entries: Vec<Vec<Expr>>,
}

/// A [`ShiftQueue`] of `depth` entries with `fields` (name, width), registers
/// named `<prefix><i>_<field>_q` and `<prefix>_valid_q`. At an edge, the
/// items counted by `pops` leave from the head (`pops[k]` = more than `k`
/// leave; a thermometer, and never more than are held), then the valid
/// items of `pushes` (valid, fields) land behind the ones that stay, in
/// order (their valid bits a thermometer too). The caller makes sure there
/// is room; the queue asserts it (`prop_<prefix>_fits`).
pub fn shift_queue(
    b: &mut ModuleBuilder,
    prefix: &str,
    depth: u32,
    fields: &[(&str, u32)],
    pops: &[Expr],
    pushes: &[(Expr, Vec<Expr>)],
) -> ShiftQueue {
    let full = b.reg(&format!("{prefix}_valid_q"), depth, 0);
    let has = |i: i64| held(&full, i);
    let entries: Vec<Vec<Expr>> = (0..depth)
        .map(|i| fields.iter().map(|(name, w)| b.reg_noreset(&format!("{prefix}{i}_{name}_q"), *w)).collect())
        .collect();
    // How many leave, one-hot: popped[q] = exactly q leave.
    let q_max = pops.len();
    let popped: Vec<Expr> = (0..=q_max)
        .map(|q| {
            let more = if q == 0 { Expr::bit(true) } else { pops[q - 1].clone() };
            if q < q_max { and(&more, &not(&pops[q])) } else { more }
        })
        .collect();
    // Push j goes to slot m (counted before the pops) when the queue holds
    // exactly m - j items.
    let lands = |m: i64, j: usize| and(&has(m - j as i64 - 1), &not(&has(m - j as i64)));
    let mut next_full = Vec::new();
    for i in 0..depth as i64 {
        let mut filled = Expr::bit(false);
        let mut d: Option<Vec<Expr>> = None;
        for q in (0..=q_max).rev() {
            let m = i + q as i64;
            // The item for entry i when q leave: the one held at m, or a push.
            let mut item: Vec<Expr> = pushes.last().map_or_else(|| entries[i as usize].clone(), |p| p.1.clone());
            let mut got = Expr::bit(false);
            for (j, (valid, f)) in pushes.iter().enumerate().rev() {
                let here = lands(m, j);
                item = item.iter().zip(f).map(|(x, y)| mux(&here, y, x)).collect();
                got = or(&got, &and(&here, valid));
            }
            if m < depth as i64 {
                item = item.iter().zip(&entries[m as usize]).map(|(x, y)| mux(&has(m), y, x)).collect();
                got = or(&got, &has(m));
            }
            filled = or(&filled, &and(&popped[q], &got));
            d = Some(match d {
                None => item,
                Some(prev) => item.iter().zip(&prev).map(|(x, y)| mux(&popped[q], x, y)).collect(),
            });
        }
        for (f, e) in d.expect("at least one case").iter().enumerate() {
            b.next(&entries[i as usize][f], e, None);
        }
        next_full.push(filled);
    }
    b.next(&full, &Expr::cat_lanes(&next_full), None);
    // What the caller promises, proven where the block's tests prove its
    // properties: the pops and the pushes are thermometers, nothing leaves
    // that is not held and every push finds room.
    let cw = bits_for(depth as u64 + pushes.len() as u64);
    let count = |bits: &[Expr]| super::popcount(bits, cw);
    let held = count(&(0..depth).map(|i| full.bit_at(i)).collect::<Vec<_>>());
    let out = count(pops);
    let valids: Vec<Expr> = pushes.iter().map(|(v, _)| v.clone()).collect();
    let inn = count(&valids);
    let therm = thermometer;
    let ok = therm(&(0..depth).map(|i| full.bit_at(i)).collect::<Vec<_>>());
    b.assert_always(&format!("{prefix}_thermometer"), &ok, &format!("{prefix}: the held entries are the first ones"));
    b.assert_always(
        &format!("{prefix}_fits"),
        &and(&and(&therm(pops), &therm(&valids)), &and(&out.le(&held), &held.sub(&out).add(&inn).le(&Expr::lit(cw, depth as u64)))),
        &format!("{prefix}: pops and pushes are thermometers, a pop takes a held entry, a push finds room"),
    );
    ShiftQueue { has: (0..depth).map(|i| full.bit_at(i)).collect(), entries }
}

/// The bits, first one first, are a thermometer: no 1 after a 0.
fn thermometer(bits: &[Expr]) -> Expr {
    bits.windows(2).fold(Expr::bit(true), |acc, w| and(&acc, &or(&w[0], &not(&w[1]))))
}

/// Entry `i` of a queue whose thermometer register is `full` holds an item:
/// always below entry 0 (the place a new head comes from), never past the end.
fn held(full: &Expr, i: i64) -> Expr {
    if i < 0 {
        Expr::bit(true)
    } else if i >= full.width() as i64 {
        Expr::bit(false)
    } else {
        full.bit_at(i as u32)
    }
}

/// The value of a constant bit.
fn const_bit(e: &Expr) -> Option<bool> {
    match e.kind() {
        ExprKind::Const(v) if e.width() == 1 => Some(*v != BigUint::from(0u8)),
        _ => None,
    }
}

// Gates that fold constants and equal arms, so that the queues' Verilog
// shows only the logic that is there (a queue's edge cases are constants).
fn and(a: &Expr, b: &Expr) -> Expr {
    match (const_bit(a), const_bit(b)) {
        (Some(false), _) | (_, Some(false)) => Expr::bit(false),
        (Some(true), _) => b.clone(),
        (_, Some(true)) => a.clone(),
        _ => a.and(b),
    }
}
fn or(a: &Expr, b: &Expr) -> Expr {
    match (const_bit(a), const_bit(b)) {
        (Some(true), _) | (_, Some(true)) => Expr::bit(true),
        (Some(false), _) => b.clone(),
        (_, Some(false)) => a.clone(),
        _ => a.or(b),
    }
}
fn not(a: &Expr) -> Expr {
    const_bit(a).map_or_else(|| a.not(), |v| Expr::bit(!v))
}
fn mux(sel: &Expr, t: &Expr, f: &Expr) -> Expr {
    match const_bit(sel) {
        Some(true) => t.clone(),
        Some(false) => f.clone(),
        None if std::rc::Rc::ptr_eq(&t.node, &f.node) => t.clone(),
        None => sel.mux(t, f),
    }
}
