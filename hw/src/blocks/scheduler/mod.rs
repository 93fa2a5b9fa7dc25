//! Resource-table kernel scheduler (seed `003_98d769e6fee1e9cf.txt`, claims
//! 1-10, figures 2-5; behaviour and exact timing: docs/scheduler.md).
//!
//! Kernels arrive on a submission stream into per-stream queues. The
//! available-resource table (one `gpurtl_scheduler_sm` per SM) compares
//! every stream head against every SM (the comparator, claim 2); the
//! comparator's results are registered, the pick (aging, then the policy:
//! claims 3-7, or round-robin) is registered, and the dispatcher hands the
//! picked kernel's blocks to the lowest SMs where they fit, `dispatch_width`
//! per cycle, through a two-record FIFO. Completions return resources. The
//! comparator and the pick are a stage each, so the critical path is the
//! dispatcher's own fit, select and table update. To keep the comparator
//! short, the heads' needs are registers (kept equal to the head entries'),
//! and each SM works out every head's best-fit leftover beside its fit, so
//! the score is a one-hot select of results computed in parallel.
//!
//! Files: `sm.rs` (an SM's table entry), `props.rs` (the properties, proven
//! with yosys); here the queues, comparator, pick, dispatcher and ports.

mod props;
mod sm;

use crate::rtl::{bits_for, lowest_bit, popcount, select, select_onehot, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::scheduler::{Policy, SchedulerParams, StreamOrder, AGE_BITS, SCORE_BITS};
use sm::Need;

/// Name of the top module.
pub const TOP: &str = "gpurtl_scheduler";

/// Field widths of the table and the needs.
pub(super) struct Widths {
    pub thr: u32,
    pub reg: u32,
    pub mem: u32,
    pub slot: u32,
    /// A need: threads, registers, shared memory.
    pub need: u32,
    /// A table entry: the need's three and the slots.
    pub free: u32,
}

impl Widths {
    fn of(p: &SchedulerParams) -> Widths {
        let (thr, reg, mem, slot) = (p.thread_bits(), p.reg_bits(), p.smem_bits(), p.slots_bits());
        Widths { thr, reg, mem, slot, need: thr + reg + mem, free: thr + reg + mem + slot }
    }
}

/// `p + 1` wrapping at `n` (a ring index of `p.width()` bits).
fn ring_next(p: &Expr, n: u32) -> Expr {
    let w = p.width();
    if n == 1 << w {
        p.add(&Expr::lit(w, 1))
    } else {
        p.eq_lit((n - 1) as u64).mux(&Expr::zero(w), &p.add(&Expr::lit(w, 1)))
    }
}

/// The index of the set bit of a one-hot vector (0 when none), `bits` wide.
fn encode(onehot: &Expr, bits: u32) -> Expr {
    let items: Vec<Expr> = (0..onehot.width()).map(|i| Expr::lit(bits, i as u64)).collect();
    select_onehot(onehot, &items)
}

/// `x >> sh` as 8 bits, zero-extended to the score width.
pub(super) fn scaled(x: &Expr, sh: u32) -> Expr {
    let v = if sh == 0 { x.clone() } else { x.slice(x.width() - 1, sh) };
    v.zext(v.width().max(SCORE_BITS)).part(0, SCORE_BITS)
}

/// The candidate with the best key among those `valid`, ties to the lowest
/// index: `(any valid, index)`. `better(a, b)` is true when key `a` beats
/// key `b` strictly.
fn best(valid: &[Expr], keys: &[Expr], better: &dyn Fn(&Expr, &Expr) -> Expr, index_bits: u32) -> (Expr, Expr) {
    if valid.len() == 1 {
        // No choice: the keys are not kept.
        return (valid[0].clone(), Expr::zero(index_bits));
    }
    let mut level: Vec<(Expr, Expr, Expr)> =
        (0..valid.len()).map(|i| (valid[i].clone(), keys[i].clone(), Expr::lit(index_bits, i as u64))).collect();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| {
                if c.len() == 1 {
                    return c[0].clone();
                }
                let ((va, ka, ia), (vb, kb, ib)) = (&c[0], &c[1]);
                // The higher-index one wins only when it is valid and strictly better.
                let take_b = vb.and(&va.not().or(&better(kb, ka)));
                (va.or(vb), take_b.mux(kb, ka), take_b.mux(ib, ia))
            })
            .collect();
    }
    let (v, _, i) = level.swap_remove(0);
    (v, i)
}

/// A queue entry's registers.
pub(super) struct Entry {
    pub id: Expr,
    pub blocks: Expr,
    pub need: Expr,
    /// Kept by the priority policy only.
    pub prio: Option<Expr>,
    pub issued: Expr,
    pub done: Expr,
}

pub fn build(p: &SchedulerParams) -> Result<Design, RtlError> {
    let w = Widths::of(p);
    let (s_n, m_n, q_n, lanes) = (p.streams, p.sms, p.queue_depth, p.dispatch_width);
    let (sb, mb, qb, tb, bb) = (p.stream_bits(), p.sm_bits(), p.entry_bits(), p.tag_bits(), p.block_bits);
    let (ib, pb, cw) = (p.id_bits, p.prio_bits, p.count_bits());
    let qcw = bits_for(q_n as u64);
    // With best fit among several streams, each SM works out every head's
    // leftover score there, beside its fit (in parallel, not after the
    // first-fit select).
    let leftover = p.policy == Policy::BestFit && s_n > 1;
    let sm_mod = sm::build(p, &w, leftover)?;

    let mut b = ModuleBuilder::new(TOP);
    b.doc("Resource-table kernel scheduler (gpurtl block `scheduler`; seed 003 claims 1-10).");
    b.doc(format!(
        "{s_n} streams x {q_n} kernels, {m_n} SMs, policy {}, aging {}, {} per cycle, stream order {}.",
        p.policy,
        if p.aging() { format!("after {} cycles{}", p.age_threshold, if p.reserve { " with reserve" } else { "" }) } else { "off".into() },
        lanes,
        p.stream_order
    ));
    b.doc("Behaviour and timing: docs/scheduler.md.");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let sub = b.stream_in(
        "sub",
        "a kernel is submitted",
        "the kernel is taken",
        &[
            ("id", ib, "kernel id"),
            ("stream", sb, "its stream"),
            ("blocks", bb, "thread blocks (1 or more)"),
            ("threads", w.thr, "threads per block"),
            ("regs", w.reg, "registers per block"),
            ("smem", w.mem, "shared memory bytes per block"),
            ("prio", pb, "priority: higher is more urgent"),
        ],
    );
    let rej = b.stream_out("rej", "a submission is rejected", "the rejection is taken", &[("id", ib, "its kernel id")]);
    let dsp = b.stream_out(
        "dsp",
        "blocks are dispatched",
        "the dispatch is taken",
        &[
            ("count", cw, "blocks in this dispatch: lanes 0..count-1"),
            ("tag", tb, "the kernel's tag, returned with its completions"),
            ("id", ib, "the kernel's id"),
            ("block", bb, "block index of lane 0; lane k runs block+k"),
            ("sm", lanes * mb, "lane k's SM at k*sm_bits"),
        ],
    );
    let cpl = b.stream_in(
        "cpl",
        "blocks have finished",
        "always 1: every completion is taken",
        &[
            ("count", cw, "finished blocks: lanes 0..count-1"),
            ("tag", lanes * tb, "lane k's kernel tag"),
            ("sm", lanes * mb, "lane k's SM"),
        ],
    );
    b.assign(&cpl.ready, &Expr::bit(true));

    // ---- submission and rejection registers ----
    let sub_v = b.reg("sub_valid_q", 1, 0);
    // The priority is kept by the priority policy only (with more than one stream).
    let keep_prio = p.policy == Policy::Priority && p.streams > 1;
    let sub_f: Vec<(String, Expr)> = sub.fields.iter().filter(|(n, _)| keep_prio || n != "prio").cloned().collect();
    if !keep_prio {
        b.waive_unused(&sub.field("prio"), "the priority is read by the priority policy only, with several streams");
    }
    let sub_q: Vec<Expr> = sub_f.iter().map(|(n, e)| b.reg_noreset(&format!("sub_{n}_q"), e.width())).collect();
    let sq = |n: &str| sub_q[sub_f.iter().position(|(f, _)| f == n).expect("a submission field")].clone();
    b.assign(&sub.ready, &sub_v.not());
    let sub_fire = b.let_("sub_fire", &sub.valid.and(&sub.ready));
    for (q, (_, d)) in sub_q.iter().zip(&sub_f) {
        b.next(q, d, Some(&sub_fire));
    }
    let (st, threads, regs, smem) = (sq("stream"), sq("threads"), sq("regs"), sq("smem"));
    let stream_bad = (s_n != 1 << sb).then(|| st.ge(&Expr::lit(sb, s_n as u64)));
    // A need above the capacity (when its width can express one).
    let over = |x: &Expr, cap: u32| (cap as u64 != (1u64 << x.width()) - 1).then(|| x.gt(&Expr::lit(x.width(), cap as u64)));
    let mut bad = sq("blocks").eq_lit(0);
    for x in [stream_bad, over(&threads, p.sm_threads), over(&regs, p.sm_regs), over(&smem, p.sm_smem)].into_iter().flatten() {
        bad = bad.or(&x);
    }
    let bad = b.let_("sub_bad", &bad);
    let rej_v = b.reg("rej_valid_q", 1, 0);
    let rej_id = b.reg_noreset("rej_id_q", ib);
    b.assign(&rej.valid, &rej_v);
    b.assign(&rej.field("id"), &rej_id);
    let to_rej = b.let_("sub_to_rej", &sub_v.and(&bad).and(&rej_v.not()));
    b.next(&rej_id, &sq("id"), Some(&to_rej));
    b.next(&rej_v, &to_rej.or(&rej_v.and(&rej.ready.not())), None);

    // ---- queues: per stream a ring of entries ----
    let regs_of = |b: &mut ModuleBuilder, name: &str, width: u32, reset: Option<u64>| -> Vec<Expr> {
        (0..s_n)
            .map(|s| match reset {
                Some(r) => b.reg(&format!("s{s}_{name}_q"), width, r),
                None => b.reg_noreset(&format!("s{s}_{name}_q"), width),
            })
            .collect()
    };
    let hptr = regs_of(&mut b, "hptr", qb, Some(0));
    let dptr = regs_of(&mut b, "dptr", qb, Some(0));
    let tptr = regs_of(&mut b, "tptr", qb, Some(0));
    let cnt = regs_of(&mut b, "cnt", qcw, Some(0));
    let pend = regs_of(&mut b, "pend", qcw, Some(0));
    // What the pick reads, so that nothing else is kept: with one stream
    // there is nothing to choose between, so no scores, priorities or age
    // comparisons; ages matter to aging and to the priority policy.
    let choose = s_n > 1;
    let uses_score = choose && matches!(p.policy, Policy::BestFit | Policy::Least);
    let uses_prio = choose && p.policy == Policy::Priority;
    let uses_agev = (choose && p.aging()) || uses_prio;
    let uses_age = p.aging() || uses_agev;
    let age = if uses_age { regs_of(&mut b, "age", AGE_BITS, Some(0)) } else { Vec::new() };
    // Entry fields, [stream][entry].
    let mut ent: Vec<Vec<Entry>> = Vec::new();
    for s in 0..s_n {
        let mut row = Vec::new();
        for i in 0..q_n {
            let n = |f: &str| format!("s{s}_e{i}_{f}_q");
            row.push(Entry {
                id: b.reg_noreset(&n("id"), ib),
                blocks: b.reg_noreset(&n("blocks"), bb),
                need: b.reg_noreset(&n("need"), w.need),
                prio: uses_prio.then(|| b.reg_noreset(&n("prio"), pb)),
                issued: b.reg_noreset(&n("issued"), bb),
                done: b.reg_noreset(&n("done"), bb),
            });
        }
        ent.push(row);
    }
    let head = |b: &mut ModuleBuilder, s: usize, f: &dyn Fn(&Entry) -> Expr, name: &str| -> Expr {
        let items: Vec<Expr> = ent[s].iter().map(f).collect();
        b.let_(&format!("s{s}_head_{name}"), &select(&dptr[s], &items))
    };
    let mut head_need = Vec::new();
    let mut head_prio = Vec::new();
    let mut head_issued = Vec::new();
    let mut open = Vec::new();
    // The heads' needs feed the comparator: with more than one entry per
    // queue they are registers, kept equal to the head entry's need (the
    // entry select and its routing leave the comparator's path).
    let need_regs = q_n > 1;
    for s in 0..s_n as usize {
        if need_regs {
            head_need.push(b.reg_noreset(&format!("s{s}_head_need_q"), w.need));
        } else {
            head_need.push(head(&mut b, s, &|e| e.need.clone(), "need"));
        }
        if uses_prio {
            head_prio.push(head(&mut b, s, &|e| e.prio.clone().expect("the priority policy keeps priorities"), "prio"));
        }
        head_issued.push(head(&mut b, s, &|e| e.issued.clone(), "issued"));
        let has = pend[s].ne(&Expr::zero(qcw));
        let o = match p.stream_order {
            StreamOrder::Dispatch => has,
            StreamOrder::Complete => has.and(&cnt[s].eq(&pend[s])),
        };
        open.push(b.let_(&format!("s{s}_open"), &o));
    }

    // ---- the table: one SM entry each ----
    let cur_v = b.reg("cur_valid_q", 1, 0);
    let cur_s = b.reg_noreset("cur_stream_q", sb);
    let cur_slot = b.reg_noreset("cur_entry_q", qb);
    let cur_id = b.reg_noreset("cur_id_q", ib);
    let cur_need = b.reg_noreset("cur_need_q", w.need);
    let cur_next = b.reg_noreset("cur_next_q", bb);
    let cur_left = b.reg_noreset("cur_left_q", bb);
    let heads_packed = Expr::cat_lanes(&head_need);
    let take = b.wire("take", m_n);
    let ret_valid: Vec<Expr> = (0..m_n).map(|m| b.wire(&format!("sm{m}_ret_valid"), lanes)).collect();
    let ret_need = b.wire("ret_need", lanes * w.need);
    let mut fits_sm = Vec::new();
    let mut fit_cur = Vec::new();
    let mut free_sm = Vec::new();
    let mut left_sm = Vec::new();
    for m in 0..m_n {
        let u = b.instance(
            &sm_mod,
            &format!("u_sm{m}"),
            &[
                ("clk_i", clk.clone()),
                ("rst_i", rst.clone()),
                ("heads_i", heads_packed.clone()),
                ("cur_i", cur_need.clone()),
                ("take_i", take.bit_at(m)),
                ("ret_valid_i", ret_valid[m as usize].clone()),
                ("ret_need_i", ret_need.clone()),
            ],
        );
        fits_sm.push(u.port("fits_o"));
        fit_cur.push(u.port("fit_cur_o"));
        b.waive_unused(&u.port("free_o"), "an SM's free resources are read by the properties (ifdef FORMAL) only");
        free_sm.push(u.port("free_o"));
        if leftover {
            left_sm.push(u.port("left_o"));
        }
    }

    // ---- comparator (registered) ----
    let fit_col: Vec<Expr> =
        (0..s_n).map(|s| b.let_(&format!("s{s}_fit_sms"), &Expr::cat_lanes(&fits_sm.iter().map(|f| f.bit_at(s)).collect::<Vec<_>>()))).collect();
    let mut elig_q = Vec::new();
    let mut sched_q = Vec::new();
    let mut aged_q = Vec::new();
    let mut fresh_q = Vec::new();
    let mut agev_q = Vec::new();
    let mut prio_q = Vec::new();
    let mut score_q = Vec::new();
    let one = Expr::bit(true);
    // busy[s]: stream s's kernel is in the dispatcher.
    let mut busy = Vec::new();
    for s in 0..s_n as usize {
        let here = b.let_(&format!("s{s}_busy"), &cur_v.and(&cur_s.eq_lit(s as u64)));
        busy.push(here.clone());
        let elig = b.let_(&format!("s{s}_elig"), &open[s].and(&here.not()));
        let sched = b.let_(&format!("s{s}_sched"), &elig.and(&fit_col[s].any()));
        if p.policy == Policy::Rr {
            elig_q.push(b.pipe(&format!("s{s}_elig_q"), &elig, &one));
        }
        sched_q.push(b.pipe(&format!("s{s}_sched_q"), &sched, &one));
        let has = pend[s].ne(&Expr::zero(qcw));
        if p.aging() {
            aged_q.push(b.pipe(&format!("s{s}_aged_q"), &age[s].gt(&Expr::lit(AGE_BITS, p.age_threshold as u64)), &one));
            fresh_q.push(b.pipe(&format!("s{s}_fresh_q"), &has.and(&head_issued[s].eq_lit(0)), &one));
            if p.reserve {
                elig_q.push(b.pipe(&format!("s{s}_elig_q"), &elig, &one));
            }
        }
        if uses_agev {
            agev_q.push(b.pipe(&format!("s{s}_agev_q"), &age[s], &one));
        }
        if uses_prio {
            prio_q.push(b.pipe(&format!("s{s}_prio_q"), &has.repl(pb).and(&head_prio[s]), &one));
        }
        let need = Need::unpack(&head_need[s], &w);
        let sh = |cap: u32| SchedulerParams::score_shift(cap);
        let score = match p.policy {
            _ if !uses_score => None,
            Policy::BestFit => {
                // The leftover on the lowest SM where the head fits.
                let first = b.let_(&format!("s{s}_first_fit"), &lowest_bit(&fit_col[s]));
                let lefts: Vec<Expr> = left_sm.iter().map(|l| l.part(s as u32 * SCORE_BITS, SCORE_BITS)).collect();
                Some(select_onehot(&first, &lefts))
            }
            Policy::Least => Some(
                scaled(&need.thr, sh(p.sm_threads))
                    .add(&scaled(&need.reg, sh(p.sm_regs)))
                    .add(&scaled(&need.mem, sh(p.sm_smem)))
                    .add(&scaled(&Expr::lit(w.slot, 1), sh(p.sm_slots))),
            ),
            _ => None,
        };
        if let Some(score) = score {
            let score = b.let_(&format!("s{s}_score"), &score);
            score_q.push(b.pipe(&format!("s{s}_score_q"), &sched.repl(SCORE_BITS).and(&score), &one));
        }
    }

    // ---- pick (registered) ----
    // The round-robin pointer (rr only).
    let rr = (p.policy == Policy::Rr).then(|| b.reg("rr_q", sb, 0));
    let aging = p.aging();
    // The comparator registers are a cycle old: a stream loaded since then
    // is no candidate (its next kernel was never scored).
    let cand: Vec<Expr> = (0..s_n as usize).map(|s| b.let_(&format!("s{s}_cand"), &sched_q[s].and(&busy[s].not()))).collect();
    let elig_c: Vec<Expr> = elig_q.iter().enumerate().map(|(s, e)| e.and(&busy[s].not())).collect();
    let blocked = if p.reserve && aging {
        let any: Vec<Expr> =
            (0..s_n as usize).map(|s| elig_c[s].and(&aged_q[s]).and(&fresh_q[s]).and(&cand[s].not())).collect();
        Some(b.let_("blocked", &Expr::cat_lanes(&any).any()))
    } else {
        None
    };
    // `x` and not blocked (`x` without reserve).
    let unblocked = |x: &Expr| blocked.as_ref().map_or_else(|| x.clone(), |bl| bl.not().and(x));
    let gt = |a: &Expr, c: &Expr| a.gt(c);
    let lt = |a: &Expr, c: &Expr| a.lt(c);
    let (pol_v, pol_s) = match p.policy {
        Policy::Rr => {
            // The first eligible stream at or after rr, cyclically.
            let e = Expr::cat_lanes(&elig_c);
            let rr = rr.as_ref().expect("rr keeps its pointer");
            // `s >= rr`; always true for the largest index the pointer holds.
            let at_or_after: Vec<Expr> =
                (0..s_n).map(|s| if s + 1 == 1 << sb { Expr::bit(true) } else { Expr::lit(sb, s as u64).ge(rr) }).collect();
            let hi = e.and(&Expr::cat_lanes(&at_or_after));
            let first = hi.any().mux(&lowest_bit(&hi), &lowest_bit(&e));
            let first = b.let_("rr_first", &first);
            let sched = Expr::cat_lanes(&cand);
            (first.and(&sched).any(), encode(&first, sb))
        }
        _ if !choose => (cand[0].clone(), Expr::zero(sb)),
        Policy::BestFit | Policy::Least => best(&cand, &score_q, &lt, sb),
        Policy::Priority => {
            let keys: Vec<Expr> = (0..s_n as usize).map(|s| Expr::cat(&[prio_q[s].clone(), agev_q[s].clone()])).collect();
            best(&cand, &keys, &gt, sb)
        }
    };
    let (pick_v_d, pick_s_d) = if aging {
        let aged: Vec<Expr> = (0..s_n as usize).map(|s| cand[s].and(&aged_q[s])).collect();
        let aged_fresh: Vec<Expr> = (0..s_n as usize).map(|s| aged[s].and(&fresh_q[s])).collect();
        let any_fresh = b.let_("pick_any_aged_fresh", &Expr::cat_lanes(&aged_fresh).any());
        let set: Vec<Expr> =
            (0..s_n as usize).map(|s| b.let_(&format!("s{s}_aged_cand"), &any_fresh.mux(&aged_fresh[s], &aged[s]))).collect();
        let (av, a_s) = best(&set, &agev_q, &gt, sb);
        let av = b.let_("pick_aged", &av);
        (av.or(&pol_v), av.mux(&a_s, &pol_s))
    } else {
        (pol_v, pol_s)
    };
    let pick_v = b.reg("pick_valid_q", 1, 0);
    let pick_s = b.reg_noreset("pick_stream_q", sb);
    let picked = b.let_("picked", &unblocked(&pick_v_d));
    b.next(&pick_v, &picked, None);
    b.next(&pick_s, &pick_s_d, Some(&picked));

    // ---- dispatcher ----
    let pick_open = select(&pick_s, &open);
    let load = b.let_("load", &cur_v.not().and(&pick_v).and(&pick_open));
    // The dispatch FIFO: two records.
    let rec_w = cw + tb + ib + bb + lanes * mb;
    let fifo_n = b.reg("fifo_count_q", 2, 0);
    let fifo_rd = b.reg("fifo_rd_q", 1, 0);
    let fifo_wr = b.reg("fifo_wr_q", 1, 0);
    let fifo: Vec<Expr> = (0..2).map(|k| b.reg_noreset(&format!("fifo{k}_q"), rec_w)).collect();
    let room = b.let_("fifo_room", &fifo_n.lt(&Expr::lit(2, 2)));
    let go = b.let_("dispatch_go", &unblocked(&cur_v.and(&room)));
    // Lane j: the j-th lowest SM where a block fits, while blocks are left.
    let mut avail = Expr::cat_lanes(&fit_cur).and(&go.repl(m_n));
    let mut lane_v = Vec::new();
    let mut lane_sm = Vec::new();
    let mut grants = Expr::zero(m_n);
    for j in 0..lanes {
        let free_sms = b.let_(&format!("lane{j}_fit_sms"), &avail);
        let pickj = b.let_(&format!("lane{j}_sm_onehot"), &lowest_bit(&free_sms));
        let v = b.let_(&format!("lane{j}_valid"), &pickj.any().and(&cur_left.gt(&Expr::lit(bb, j as u64))));
        let pickj = b.let_(&format!("lane{j}_grant"), &v.repl(m_n).and(&pickj));
        grants = grants.or(&pickj);
        avail = avail.and(&pickj.not());
        lane_sm.push(encode(&pickj, mb));
        lane_v.push(v);
    }
    b.assign(&take, &grants);
    let count = b.let_("dispatch_count", &popcount(&lane_v, cw));
    let pushed = b.let_("dispatch_push", &lane_v[0].clone());
    let finished = b.let_("dispatch_last", &pushed.and(&cur_left.eq(&count.zext(bb.max(cw)).part(0, bb))));
    let stuck = room.and(&pushed.not());
    let release = b.let_("dispatch_release", &cur_v.and(&blocked.as_ref().map_or_else(|| stuck.clone(), |bl| bl.or(&stuck))));
    let cur_tag = Expr::cat(&[cur_s.clone(), cur_slot.clone()]);
    let record = b.let_(
        "dispatch_record",
        &Expr::cat(&[Expr::cat_lanes(&lane_sm), cur_next.clone(), cur_id.clone(), cur_tag.clone(), count.clone()]),
    );
    for (k, e) in fifo.iter().enumerate() {
        b.next(e, &record, Some(&pushed.and(&fifo_wr.eq_lit(k as u64))));
    }
    let pop = b.let_("fifo_pop", &dsp.valid.and(&dsp.ready));
    b.assign(&dsp.valid, &fifo_n.ne(&Expr::zero(2)));
    let head_rec = fifo_rd.mux(&fifo[1], &fifo[0]);
    let head_rec = b.let_("fifo_head", &head_rec);
    b.assign(&dsp.field("count"), &head_rec.part(0, cw));
    b.assign(&dsp.field("tag"), &head_rec.part(cw, tb));
    b.assign(&dsp.field("id"), &head_rec.part(cw + tb, ib));
    b.assign(&dsp.field("block"), &head_rec.part(cw + tb + ib, bb));
    b.assign(&dsp.field("sm"), &head_rec.part(cw + tb + ib + bb, lanes * mb));
    b.next(&fifo_wr, &fifo_wr.not(), Some(&pushed));
    b.next(&fifo_rd, &fifo_rd.not(), Some(&pop));
    b.next(&fifo_n, &fifo_n.add(&pushed.zext(2)).sub(&pop.zext(2)), None);

    // Dispatcher registers.
    let pick_need = select(&pick_s, &head_need);
    let pick_issued = select(&pick_s, &head_issued);
    let pick_blocks = select(&pick_s, &(0..s_n as usize).map(|s| select(&dptr[s], &ent[s].iter().map(|e| e.blocks.clone()).collect::<Vec<_>>())).collect::<Vec<_>>());
    let pick_id = select(&pick_s, &(0..s_n as usize).map(|s| select(&dptr[s], &ent[s].iter().map(|e| e.id.clone()).collect::<Vec<_>>())).collect::<Vec<_>>());
    b.next(&cur_v, &load.or(&cur_v.and(&finished.not()).and(&release.not())), None);
    b.next(&cur_s, &pick_s, Some(&load));
    b.next(&cur_slot, &select(&pick_s, &dptr), Some(&load));
    b.next(&cur_id, &pick_id, Some(&load));
    b.next(&cur_need, &pick_need, Some(&load));
    let cnt_b = count.zext(bb.max(cw)).part(0, bb);
    b.next(&cur_next, &load.mux(&pick_issued, &cur_next.add(&cnt_b)), Some(&load.or(&pushed)));
    b.next(&cur_left, &load.mux(&pick_blocks.sub(&pick_issued), &cur_left.sub(&cnt_b)), Some(&load.or(&pushed)));
    if let Some(rr) = &rr {
        b.next(rr, &ring_next(&pick_s, s_n), Some(&load));
    }

    // ---- completions ----
    let cpl_tag = cpl.field("tag");
    let cpl_sm = cpl.field("sm");
    let cpl_count = cpl.field("count");
    let mut lane_ret = Vec::new();
    let mut ret_needs = Vec::new();
    let needs_by_tag: Vec<Expr> = (0..(1u32 << tb))
        .map(|t| {
            let (s, i) = (t >> qb, t & ((1 << qb) - 1));
            if s < s_n && i < q_n {
                ent[s as usize][i as usize].need.clone()
            } else {
                Expr::zero(w.need)
            }
        })
        .collect();
    for j in 0..lanes {
        let v = b.let_(&format!("cpl{j}_valid"), &cpl.valid.and(&cpl_count.gt(&Expr::lit(cw, j as u64))));
        let tag = cpl_tag.part(j * tb, tb);
        ret_needs.push(select(&tag, &needs_by_tag));
        lane_ret.push((v, tag, cpl_sm.part(j * mb, mb)));
    }
    b.assign(&ret_need, &Expr::cat_lanes(&ret_needs));
    for m in 0..m_n {
        let bits: Vec<Expr> = lane_ret.iter().map(|(v, _, sm)| v.and(&sm.eq_lit(m as u64))).collect();
        b.assign(&ret_valid[m as usize], &Expr::cat_lanes(&bits));
    }

    // ---- queue updates ----
    let enq_ok = b.let_("sub_enqueue", &sub_v.and(&bad.not()).and(&select(&st, &cnt).lt(&Expr::lit(qcw, q_n as u64))));
    b.next(&sub_v, &sub_fire.or(&sub_v.and(&to_rej.not()).and(&enq_ok.not())), None);
    let sub_need = Expr::cat(&[smem.clone(), regs.clone(), threads.clone()]);
    let cur_tag_w = b.let_("cur_tag", &cur_tag);
    for s in 0..s_n as usize {
        let enq = b.let_(&format!("s{s}_enq"), &enq_ok.and(&st.eq_lit(s as u64)));
        let fin = b.let_(&format!("s{s}_fin"), &finished.and(&cur_s.eq_lit(s as u64)));
        let hd_done = select(&hptr[s], &ent[s].iter().map(|e| e.done.clone()).collect::<Vec<_>>());
        let hd_blocks = select(&hptr[s], &ent[s].iter().map(|e| e.blocks.clone()).collect::<Vec<_>>());
        let retire = b.let_(&format!("s{s}_retire"), &cnt[s].gt(&pend[s]).and(&hd_done.eq(&hd_blocks)));
        b.next(&tptr[s], &ring_next(&tptr[s], q_n), Some(&enq));
        let dptr_next = b.let_(&format!("s{s}_dptr_next"), &ring_next(&dptr[s], q_n));
        b.next(&dptr[s], &dptr_next, Some(&fin));
        b.next(&hptr[s], &ring_next(&hptr[s], q_n), Some(&retire));
        b.next(&cnt[s], &cnt[s].add(&enq.zext(qcw)).sub(&retire.zext(qcw)), None);
        b.next(&pend[s], &pend[s].add(&enq.zext(qcw)).sub(&fin.zext(qcw)), None);
        if need_regs {
            // The next head's need: entry dptr, or dptr + 1 when the head
            // moves; the submission's when it is written there now.
            let needs: Vec<Expr> = ent[s].iter().map(|e| e.need.clone()).collect();
            let at = |i: &Expr| enq.and(&tptr[s].eq(i)).mux(&sub_need, &select(i, &needs));
            let next = fin.mux(&at(&dptr_next), &at(&dptr[s]));
            b.next(&head_need[s], &next, None);
        }
        if uses_age {
            let stay = open[s].and(&fin.not());
            let sat = age[s].eq(&Expr::ones(AGE_BITS));
            let aged = sat.mux(&age[s], &age[s].add(&Expr::lit(AGE_BITS, 1)));
            b.next(&age[s], &stay.mux(&aged, &Expr::zero(AGE_BITS)), None);
        }
        for (i, e) in ent[s].iter().enumerate() {
            let tag = ((s as u64) << qb) | i as u64;
            let write = b.let_(&format!("s{s}_e{i}_write"), &enq.and(&tptr[s].eq_lit(i as u64)));
            b.next(&e.id, &sq("id"), Some(&write));
            b.next(&e.blocks, &sq("blocks"), Some(&write));
            b.next(&e.need, &sub_need, Some(&write));
            if let Some(prio) = &e.prio {
                b.next(prio, &sq("prio"), Some(&write));
            }
            let mine = pushed.and(&cur_tag_w.eq_lit(tag));
            b.next(&e.issued, &write.mux(&Expr::zero(bb), &e.issued.add(&cnt_b)), Some(&write.or(&mine)));
            let hits: Vec<Expr> = lane_ret.iter().map(|(v, t, _)| v.and(&t.eq_lit(tag))).collect();
            let n = popcount(&hits, bits_for(lanes as u64).min(bb).max(1)).zext(bb);
            b.next(&e.done, &write.mux(&Expr::zero(bb), &e.done.add(&n)), None);
        }
    }
    props::state(
        &mut b,
        p,
        &w,
        &props::State {
            ent: &ent,
            hptr: &hptr,
            dptr: &dptr,
            tptr: &tptr,
            cnt: &cnt,
            pend: &pend,
            cur: [&cur_v, &cur_s, &cur_slot, &cur_id, &cur_need, &cur_next, &cur_left],
            fifo_n: &fifo_n,
            head_need: &head_need,
            take: &take,
            free: &free_sm,
            cpl: &lane_ret,
        },
    );
    Ok(Design::of(b.finish()?, p))
}
