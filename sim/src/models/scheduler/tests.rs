//! Hand-worked cases of the golden model, the trace checks and the input file.

use super::env::{mix, Environment, GOLDEN};
use super::state::{Entry, Res, State};
use super::timing::simulate;
use super::*;
use gpurtl_params::scheduler::{Policy, StreamOrder};
use serde_json::{json, Value};

/// A scripted environment: stalls and extra latencies in chosen places.
#[derive(Default)]
struct Script {
    src_stall: Vec<u64>,
    dsp_stall: Vec<u64>,
    rej_stall: Vec<u64>,
    /// ((kernel index, block), extra).
    extra: Vec<((usize, u32), u64)>,
}

impl Environment for Script {
    fn src_stall(&self, c: u64) -> bool {
        self.src_stall.contains(&c)
    }
    fn dsp_ready(&self, c: u64) -> bool {
        !self.dsp_stall.contains(&c)
    }
    fn rej_ready(&self, c: u64) -> bool {
        !self.rej_stall.contains(&c)
    }
    fn extra(&self, kernel: usize, block: u32) -> u64 {
        self.extra.iter().find(|(k, _)| *k == (kernel, block)).map_or(0, |x| x.1)
    }
    fn max_extra(&self) -> u64 {
        self.extra.iter().map(|x| x.1).max().unwrap_or(0)
    }
}

/// A kernel with no regs or smem need, priority 0, submitted at 0.
fn k(id: u64, stream: u32, blocks: u32, threads: u32, duration: u64) -> Kernel {
    Kernel { id, stream, blocks, threads, regs: 0, smem: 0, duration, priority: 0, submit: 0 }
}

fn wl(kernels: Vec<Kernel>) -> Workload {
    Workload { kernels }
}

fn ev(cycle: u64, kernel: u64, block: u32, sm: u32) -> BlockEvent {
    BlockEvent { cycle, kernel, block, sm }
}

/// Small SMs: 1024 threads/regs/smem (score shift 3), 4 slots (shift 0);
/// no aging.
fn small(streams: u32, sms: u32) -> SchedulerParams {
    SchedulerParams {
        streams,
        sms,
        sm_threads: 1024,
        sm_regs: 1024,
        sm_smem: 1024,
        sm_slots: 4,
        age_threshold: 0,
        ..SchedulerParams::default()
    }
}

/// Runs with `Env::default()` and checks the trace with [`check_trace`].
fn run_checked(p: &SchedulerParams, w: &Workload) -> Trace {
    let t = run(p, w, &Env::default());
    check_trace(p, w, &Env::default(), &t).unwrap();
    t
}

// ---- environment draws ----

#[test]
fn draws_are_pure_and_in_range() {
    let e = Env { seed: 7, src_stall_pct: 30, dsp_stall_pct: 50, rej_stall_pct: 0, max_extra: 5 };
    // Pure: the same answer whatever the order of asking.
    let a: Vec<bool> = (0..200).map(|c| e.dsp_ready(c)).collect();
    let b: Vec<bool> = (0..200).rev().map(|c| e.dsp_ready(c)).collect::<Vec<_>>().into_iter().rev().collect();
    assert_eq!(a, b);
    let ready = a.iter().filter(|&&r| r).count();
    assert!((60..140).contains(&ready), "about half ready: {ready}");
    assert!((0..200).all(|c| e.rej_ready(c)));
    assert!((0..1000).all(|b| e.extra(3, b) <= 5));
    assert!((0..=5).all(|x| (0..1000).any(|b| e.extra(3, b) == x)));
    // The formula.
    assert_eq!(e.src_stall(11), draw(7, 1, 11, 0) % 100 < 30);
    assert_eq!(e.extra(2, 9), draw(7, 4, 2, 9) % 6);
    let d = Env::default();
    assert!((0..1000).all(|c| !d.src_stall(c) && d.dsp_ready(c) && d.rej_ready(c)));
    assert!((0..1000).all(|b| d.extra(1, b) == 0));
    // SplitMix64: the first output from state 0 is mix(G).
    assert_eq!(mix(0), 0);
    assert_eq!(mix(GOLDEN), 0xE220_A839_7B1D_CDAF);
}

// ---- hand-worked timing ----

#[test]
fn one_block_on_one_sm() {
    // Submission transfer t = 0; enqueue 1; comparator 2; pick 3; load 4;
    // decision 5; dispatch transfer 6; completion 6 + 10 = 16.
    let p = small(1, 1);
    let t = run_checked(&p, &wl(vec![k(3, 0, 1, 100, 10)]));
    assert_eq!(t.submissions, vec![(0, 3)]);
    assert_eq!(t.dispatches, vec![ev(6, 3, 0, 0)]);
    assert_eq!(t.completions, vec![ev(16, 3, 0, 0)]);
    assert!(t.rejections.is_empty());
    // Submitted from cycle 5: everything 5 later.
    let t = run_checked(&p, &wl(vec![Kernel { submit: 5, ..k(3, 0, 1, 100, 10) }]));
    assert_eq!(t.submissions, vec![(5, 3)]);
    assert_eq!(t.dispatches, vec![ev(11, 3, 0, 0)]);
    assert_eq!(t.completions, vec![ev(21, 3, 0, 0)]);
}

#[test]
fn spec_example_output() {
    // Default parameters, 8 blocks of (256, 8192, 16384): decisions 5..12,
    // one block per cycle (W = 1), transfers 6..13. SM 0 holds 4 blocks
    // (smem 4 x 16384 = 65536), so blocks 4..7 go on SM 1. Completions
    // 126..133. wait = 6 - 0.
    let p = SchedulerParams::default();
    let v = json!({"kernels": [{"id": 0, "stream": 0, "blocks": 8, "threads": 256, "regs": 8192,
                                "smem": 16384, "duration": 120, "priority": 0, "submit": 0}]});
    let w = parse_input(&v, &p).unwrap();
    let t = run_checked(&p, &w);
    let d: Vec<BlockEvent> = (0..8).map(|b| ev(6 + b as u64, 0, b, b / 4)).collect();
    assert_eq!(t.dispatches, d);
    let c: Vec<BlockEvent> = (0..8).map(|b| ev(126 + b as u64, 0, b, b / 4)).collect();
    assert_eq!(t.completions, c);
    let o = output_json(&p, &w, &t);
    assert_eq!(o["kernels"], json!([{"id": 0, "submitted": 0, "first_dispatch": 6, "last_dispatch": 13, "finish": 133, "wait": 6}]));
    assert_eq!(o["dispatches"][0], json!({"cycle": 6, "kernel": 0, "block": 0, "sm": 0}));
    assert_eq!(o["completions"][0], json!({"cycle": 126, "kernel": 0, "block": 0, "sm": 0}));
    assert_eq!(o["rejected"], json!([]));
    assert_eq!(o["makespan"], json!(133));
    assert_eq!(o["worst_wait"], json!(6));
    // Each block runs 120 cycles: sum need * 120 * 8 / (8 SMs * cap * 133).
    let u = |need: f64, cap: f64| need * 960.0 / (8.0 * cap * 133.0);
    assert_eq!(o["utilization"]["threads"], json!(u(256.0, 2048.0)));
    assert_eq!(o["utilization"]["regs"], json!(u(8192.0, 65536.0)));
    assert_eq!(o["utilization"]["smem"], json!(u(16384.0, 65536.0)));
    assert_eq!(o["utilization"]["slots"], json!(u(1.0, 16.0)));
}

#[test]
fn empty_workload() {
    let p = SchedulerParams::default();
    let w = parse_input(&json!({"kernels": []}), &p).unwrap();
    let t = run_checked(&p, &w);
    assert_eq!(t, Trace::default());
    let o = output_json(&p, &w, &t);
    assert_eq!(
        o,
        json!({"dispatches": [], "completions": [], "kernels": [], "rejected": [], "makespan": 0,
               "utilization": {"threads": 0.0, "regs": 0.0, "smem": 0.0, "slots": 0.0}, "worst_wait": 0})
    );
}

#[test]
fn rejected_kernel() {
    // Kernel 5 needs 2000 threads > 1024: transfer 0, sub_q 1, rej_q 2,
    // rejection transfer 2. Kernel 6 is offered from cycle 1 but sub_q
    // holds kernel 5 in cycle 1: transfer 2, enqueue 3, comparator 4,
    // pick 5, load 6, decision 7, dispatch 8, completion 8 + 4 = 12.
    let p = small(2, 1);
    let w = wl(vec![k(5, 0, 1, 2000, 4), k(6, 1, 1, 10, 4)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.submissions, vec![(0, 5), (2, 6)]);
    assert_eq!(t.rejections, vec![(2, 5)]);
    assert_eq!(t.dispatches, vec![ev(8, 6, 0, 0)]);
    assert_eq!(t.completions, vec![ev(12, 6, 0, 0)]);
    let o = output_json(&p, &w, &t);
    assert_eq!(o["rejected"], json!([5]));
    assert_eq!(o["kernels"], json!([{"id": 6, "submitted": 2, "first_dispatch": 8, "last_dispatch": 8, "finish": 12, "wait": 6}]));
    // makespan from the first submission, the rejected kernel's.
    assert_eq!(o["makespan"], json!(12));
    // Every kind of bad kernel: stream >= S, no blocks, each need too big.
    for bad in [
        Kernel { stream: 2, ..k(1, 0, 1, 1, 1) },
        k(1, 0, 0, 1, 1),
        k(1, 0, 1, 1025, 1),
        Kernel { regs: 1025, ..k(1, 0, 1, 1, 1) },
        Kernel { smem: 1025, ..k(1, 0, 1, 1, 1) },
    ] {
        let t = run(&p, &wl(vec![bad.clone()]), &Env::default());
        assert_eq!(t.rejections, vec![(2, 1)], "{bad:?}");
    }
    // Needs exactly at capacity are fine.
    let full = Kernel { regs: 1024, smem: 1024, ..k(1, 0, 1, 1024, 1) };
    assert_eq!(run_checked(&p, &wl(vec![full])).dispatches, vec![ev(6, 1, 0, 0)]);
}

#[test]
fn rejection_register_and_sink_stalls() {
    // Two bad kernels, rej_ready_i low in cycles 2 and 3.
    // Kernel 1: transfer 0, rej_q from 2, transfer out at 4 (first ready
    // cycle). Kernel 2: transfer 2, sub_q from 3; rej_q is valid at the
    // start of 3 and 4 (it empties at the end of 4), so it moves in
    // cycle 5, rej_q from 6, transfer out 6.
    let p = small(1, 1);
    let w = wl(vec![k(1, 0, 0, 1, 1), k(2, 0, 0, 1, 1)]);
    let env = Script { rej_stall: vec![2, 3], ..Script::default() };
    let t = simulate(&p, &w, &env, true);
    assert_eq!(t.submissions, vec![(0, 1), (2, 2)]);
    assert_eq!(t.rejections, vec![(4, 1), (6, 2)]);
    // Without stalls: 2, and kernel 2 moves in cycle 3 (rej_q emptied at
    // the end of 2), out at 4.
    let t = run_checked(&p, &w);
    assert_eq!(t.rejections, vec![(2, 1), (4, 2)]);
}

#[test]
fn source_stalls_delay_the_offer() {
    // Stall draws in cycles 0 and 1: kernel offered from 2; the second
    // kernel's first candidate cycle is 3 (after the transfer at 2), a
    // stall, then 4 (sub_q is empty again at 4: enqueued in 3).
    let p = small(1, 1);
    let w = wl(vec![k(1, 0, 1, 1, 3), k(2, 0, 1, 1, 3)]);
    let env = Script { src_stall: vec![0, 1, 3], ..Script::default() };
    let t = simulate(&p, &w, &env, true);
    assert_eq!(t.submissions, vec![(2, 1), (4, 2)]);
    assert_eq!(t.dispatches[0], ev(8, 1, 0, 0));
}

#[test]
fn dispatch_width_two() {
    // W = 2 on 2 SMs, 3 blocks. Decision 5: fits on SMs 0 and 1, c =
    // min(2, 3, 2) = 2. Decision 6 (FIFO holds 1): c = min(2, 1, 2) = 1,
    // SM 0, released. Transfers 6 (lanes 0, 1) and 7. Due 16, 16, 17:
    // two completions in cycle 16 (W = 2), in lane order.
    let p = SchedulerParams { dispatch_width: 2, ..small(1, 2) };
    let t = run_checked(&p, &wl(vec![k(9, 0, 3, 10, 10)]));
    assert_eq!(t.dispatches, vec![ev(6, 9, 0, 0), ev(6, 9, 1, 1), ev(7, 9, 2, 0)]);
    assert_eq!(t.completions, vec![ev(16, 9, 0, 0), ev(16, 9, 1, 1), ev(17, 9, 2, 0)]);
    let o = output_json(&p, &wl(vec![k(9, 0, 3, 10, 10)]), &t);
    assert_eq!(o["kernels"][0]["last_dispatch"], json!(7));
    // One block per SM per cycle: W = 1 puts both blocks on SM 0 (the
    // lowest that fits) in consecutive cycles.
    let p = SchedulerParams { dispatch_width: 1, ..small(1, 2) };
    let t = run_checked(&p, &wl(vec![k(9, 0, 2, 10, 10)]));
    assert_eq!(t.dispatches, vec![ev(6, 9, 0, 0), ev(7, 9, 1, 0)]);
}

#[test]
fn completions_limited_to_w_in_due_order() {
    // W = 1, one SM, 2 blocks: block 0 transferred at 6 with x = 1 (due
    // 17), block 1 at 7 with x = 0 (due 17). At 17 both are due: by
    // dispatch cycle, block 0 first; block 1 at 18.
    let p = small(1, 1);
    let w = wl(vec![k(1, 0, 2, 10, 10)]);
    let env = Script { extra: vec![((0, 0), 1)], ..Script::default() };
    let t = simulate(&p, &w, &env, true);
    assert_eq!(t.completions, vec![ev(17, 1, 0, 0), ev(18, 1, 1, 0)]);
    // x = 5 on block 0: due 21, block 1 due 17 completes first.
    let env = Script { extra: vec![((0, 0), 5)], ..Script::default() };
    let t = simulate(&p, &w, &env, true);
    assert_eq!(t.completions, vec![ev(17, 1, 1, 0), ev(21, 1, 0, 0)]);
}

#[test]
fn dispatch_fifo_full() {
    // dsp_ready_i low in cycles 6, 7, 8; 4 blocks on one SM.
    // Decision 5 -> FIFO [b0] at 6. Cycle 6: 1 record, decide b1 -> [b0,
    // b1] at 7. Cycles 7, 8: 2 records, the dispatcher waits. Cycle 9: 2
    // records at the start: no decision though b0 transfers. Cycle 10:
    // decide b2, transfer b1. 11: decide b3 (released), transfer b2. 12:
    // transfer b3.
    let p = small(1, 1);
    let w = wl(vec![k(1, 0, 4, 10, 10)]);
    let env = Script { dsp_stall: vec![6, 7, 8], ..Script::default() };
    let t = simulate(&p, &w, &env, true);
    let want: Vec<BlockEvent> = (0..4).map(|b| ev(9 + b as u64, 1, b, 0)).collect();
    assert_eq!(t.dispatches, want);
    assert_eq!(t.completions.iter().map(|e| e.cycle).collect::<Vec<_>>(), vec![19, 20, 21, 22]);
    // The room check uses the start of the cycle: the decisions were 5,
    // 6, 10, 11 (not 9, 10), so the dispatcher is free from 12. A second
    // kernel (stream 1, enqueued in 3, picked every cycle while kernel 1
    // is in the dispatcher) is loaded in 12, decided in 13 (the FIFO is
    // empty again: b3 left at 12), transferred at 14.
    let p = SchedulerParams { sm_slots: 8, ..small(2, 1) };
    let w = wl(vec![k(1, 0, 4, 10, 10), k(2, 1, 1, 10, 10)]);
    let t = simulate(&p, &w, &env, true);
    let mut want: Vec<BlockEvent> = (0..4).map(|b| ev(9 + b as u64, 1, b, 0)).collect();
    want.push(ev(14, 2, 0, 0));
    assert_eq!(t.dispatches, want);
}

#[test]
fn stream_order_dispatch_and_complete() {
    // One stream, 2 SMs, kernels A (id 1) and B (id 2), 1 block each of
    // duration 10. A: transfer 0, dispatch 6, completion 16. B: transfer
    // 2, enqueued in 3.
    let w = wl(vec![k(1, 0, 1, 10, 10), k(2, 0, 1, 10, 10)]);
    // dispatch: A is loaded in 4 and decided in 5 (head moves: B from
    // state 6). The pick of 5 reads the comparator registers of state 4
    // (head A, eligible) through the dispatcher at the start of 5, which
    // holds stream 0: busy(0), so no pick (it used to pick stream 0 and
    // load B in 6 unscored). The pick of 6 (registers of state 5, A in the
    // dispatcher: not eligible) is none. The comparator of 6 sees B:
    // pick 7, load 8, decision 9, transfer 10, completion 20.
    let p = small(1, 2);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(10, 2, 0, 0)]);
    assert_eq!(t.completions, vec![ev(16, 1, 0, 0), ev(20, 2, 0, 0)]);
    let o = output_json(&p, &w, &t);
    // ready(B) = max(submitted 2, last_dispatch(A) 6) = 6: wait 10 - 6 = 4.
    assert_eq!(o["kernels"][1]["wait"], json!(4));
    // complete: B is not open while A is in the queue (cnt 2, pend 1).
    // A completes at 16, done from 17, retired in 17, cnt 1 from 18:
    // comparator 18, pick 19, load 20, decision 21, transfer 22, done 32.
    let p = SchedulerParams { stream_order: StreamOrder::Complete, ..small(1, 2) };
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(22, 2, 0, 0)]);
    assert_eq!(t.completions, vec![ev(16, 1, 0, 0), ev(32, 2, 0, 0)]);
    let o = output_json(&p, &w, &t);
    // ready(B) = max(2, finish(A) 16): wait 6.
    assert_eq!(o["kernels"][1]["wait"], json!(6));
    assert_eq!(o["worst_wait"], json!(6));
}

#[test]
fn queue_full_holds_the_source() {
    // Q = 1, one SM with one slot, three 1-block kernels of duration 20
    // on stream 0.
    // k1: transfer 0, enqueue 1, dispatch 6, completion 26.
    // k2: transfer 2 (offered from 1, sub_q busy in 1); sub_q from 3; the
    //   stream is full until k1 retires: done from 27, retired in 27, cnt
    //   0 from 28: enqueued in 28; comparator 29, pick 30, load 31,
    //   decision 32, transfer 33, completion 53.
    // k3: offered from 3, sub_q busy 3..28: transfer 29; waits for k2 to
    //   retire: done 54, retired 54, enqueued 55; transfer 60, done 80.
    let p = SchedulerParams { queue_depth: 1, sm_slots: 1, policy: Policy::BestFit, ..small(1, 1) };
    let w = wl(vec![k(1, 0, 1, 10, 20), k(2, 0, 1, 10, 20), k(3, 0, 1, 10, 20)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.submissions, vec![(0, 1), (2, 2), (29, 3)]);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(33, 2, 0, 0), ev(60, 3, 0, 0)]);
    assert_eq!(t.completions, vec![ev(26, 1, 0, 0), ev(53, 2, 0, 0), ev(80, 3, 0, 0)]);
    let o = output_json(&p, &w, &t);
    // ready(k2) = max(2, 6) = 6, wait 27; ready(k3) = max(29, 33), wait 27.
    assert_eq!(o["kernels"][1]["wait"], json!(27));
    assert_eq!(o["kernels"][2]["wait"], json!(27));
}

/// Two streams competing for one SM (1024 threads, 4 slots), aging off:
/// X (stream 0, 1024 threads, 20 cycles) fills the SM; A (stream 0, 512
/// threads) and B (stream 1, 256 threads) wait for it.
fn competing() -> Workload {
    wl(vec![k(10, 0, 1, 1024, 20), k(11, 0, 1, 512, 10), k(12, 1, 1, 256, 10)])
}

#[test]
fn best_fit_and_rr_differ() {
    // Common part. X: transfer 0, load 4 (rr <- 1), decision 5, transfer
    // 6, completion 26 (free again from 27). A: transfer 2, enqueued 3,
    // head from state 6 (X moved in 5). B: transfer 4, enqueued 5, head
    // from state 6. The pick of 5 (registers of state 4: X only) sees
    // stream 0 in the dispatcher at the start of 5: no pick (so A is not
    // loaded in 6, and rr stays 1); the pick of 6 (registers of state 5,
    // X in the dispatcher) has nothing either. From the comparator of 6
    // no stream fits until 27: comparator 27 sees both fit.
    // best_fit scores (sh = 3 for 1024, 0 for 4 slots): A leaves
    // 512>>3 + 1024>>3 + 1024>>3 + 3 = 323, B 768>>3 + 128 + 128 + 3 = 355.
    // Pick 28: A. Load 29, decision 30, transfer 31. The pick of 29 is A
    // again (no load in 30: A is in the dispatcher). The pick of 30 reads
    // the registers of state 29 (A 323, B 355, both fit) through the
    // dispatcher at the start of 30, which holds A: c(0) false, so B:
    // load 31, decision 32 (512 threads left), transfer 33. (Before the
    // rule: A again, whose stream had no head in 31; B at 34.)
    let p = SchedulerParams { policy: Policy::BestFit, ..small(2, 1) };
    let t = run_checked(&p, &competing());
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 11, 0, 0), ev(33, 12, 0, 0)]);
    assert_eq!(t.completions, vec![ev(26, 10, 0, 0), ev(41, 11, 0, 0), ev(43, 12, 0, 0)]);
    // rr: the pointer is 1 (X's load): pick 28 takes B (first e(s) at or
    // after 1); load 29 (rr <- 0), decision 30, transfer 31. The pick of
    // 30 (registers of state 29, B in the dispatcher at 30: e(1) false;
    // rr 0) takes A: load 31, decision 32 (768 threads left), transfer 33.
    let p = SchedulerParams { policy: Policy::Rr, ..small(2, 1) };
    let t = run_checked(&p, &competing());
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 12, 0, 0), ev(33, 11, 0, 0)]);
    assert_eq!(t.completions, vec![ev(26, 10, 0, 0), ev(41, 12, 0, 0), ev(43, 11, 0, 0)]);
    // least: the smaller need goes first: B (256>>3 + 0 + 0 + 1 = 33)
    // before A (65). Pick 28: B, load 29, decision 30, transfer 31. The
    // pick of 29 is B again (no load in 30). The pick of 30 (registers of
    // state 29, both fit) sees B in the dispatcher: A: load 31, decision
    // 32, transfer 33. (Before the rule: B again, whose stream had no
    // head in 31; A at 34.)
    let p = SchedulerParams { policy: Policy::Least, ..small(2, 1) };
    let t = run_checked(&p, &competing());
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 12, 0, 0), ev(33, 11, 0, 0)]);
}

#[test]
fn priority_policy() {
    // As `competing`, with B at priority 3: B first, with the cycles of
    // `least` (the higher priority wins every pick while both fit; the
    // pick of 30 sees B in the dispatcher and takes A: transfer 33).
    let p = SchedulerParams { policy: Policy::Priority, ..small(2, 1) };
    let mut w = competing();
    w.kernels[2].priority = 3;
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 12, 0, 0), ev(33, 11, 0, 0)]);
    // Equal priorities: the larger age. A and B both became heads at
    // state 6 (X moved in 5, B enqueued in 5): equal ages, the lowest
    // stream, A; the cycles of best_fit (B transferred at 33).
    w.kernels[2].priority = 0;
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 11, 0, 0), ev(33, 12, 0, 0)]);
    // B at priority 0, A at 1: A.
    w.kernels[1].priority = 1;
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 11, 0, 0), ev(33, 12, 0, 0)]);
    // Equal priorities, B older: B submitted before A (the order of
    // `aging_threshold_is_strict`): B's head from state 4, A's from 6. The
    // pick of 5 (registers of state 4: X and B fit) sees stream 0 in the
    // dispatcher: B; B is loaded in 6 and released in 7 (X holds the SM
    // from state 6); a release does not reset its age. Comparator 27:
    // ages B 23, A 21: B: pick 28, load 29, decision 30, transfer 31; the
    // pick of 29 is B too; the pick of 30 (registers of state 29, B in
    // the dispatcher at 30) is A: load 31, decision 32, transfer 33.
    let w = wl(vec![k(10, 0, 1, 1024, 20), k(12, 1, 1, 256, 10), k(11, 0, 1, 512, 10)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 12, 0, 0), ev(33, 11, 0, 0)]);
}

#[test]
fn scores_by_the_formula() {
    // Default capacities: sh(2048) = 12 - 8 = 4, sh(65536) = 17 - 8 = 9,
    // sh(16) = 0. A head needing (256, 8192, 16384) that does not fit
    // SM 0 (no slot) and fits SM 1 with (1000, 60000, 30000, 5) free.
    let mut p = SchedulerParams { sms: 2, ..SchedulerParams::default() };
    let mut st = State::reset(&p);
    let kern = Kernel { regs: 8192, smem: 16384, ..k(1, 0, 1, 256, 1) };
    st.q[0].entry[0] = Some(Entry { kernel: 0, id: 1, blocks: 1, need: Res::need(&kern), prio: 0, issued: 0, done: 0 });
    st.q[0].cnt = 1;
    st.q[0].pend = 1;
    st.q[0].tptr = 1;
    st.free[0].slot = 0;
    st.free[1] = Res { thr: 1000, reg: 60000, mem: 30000, slot: 5 };
    assert_eq!(st.first(0), Some(1));
    // best_fit: 744>>4 = 46, 51808>>9 = 101, 13616>>9 = 26, 4>>0 = 4.
    p.policy = Policy::BestFit;
    assert_eq!(st.score(&p, 0), 46 + 101 + 26 + 4);
    assert_eq!(st.compare(&p, 0).score, 177);
    // least: 256>>4 = 16, 8192>>9 = 16, 16384>>9 = 32, 1>>0 = 1.
    p.policy = Policy::Least;
    assert_eq!(st.compare(&p, 0).score, 65);
    // No fit: not sched, score 0.
    st.free[1].slot = 0;
    let c = st.compare(&p, 0);
    assert!(c.elig && !c.sched && c.fresh);
    assert_eq!(c.score, 0);
    // The largest terms: 4095 >> 4, 262143 >> 10 (each 255), 63 >> 0.
    let p = SchedulerParams { sm_threads: 4095, sm_regs: 262143, sm_smem: 262143, sm_slots: 64, policy: Policy::BestFit, ..p };
    let mut st = State::reset(&p);
    st.q[0].entry[0] = Some(Entry { kernel: 0, id: 1, blocks: 1, need: Res::need(&k(1, 0, 1, 0, 1)), prio: 0, issued: 0, done: 0 });
    st.q[0].cnt = 1;
    st.q[0].pend = 1;
    assert_eq!(st.score(&p, 0), 255 + 255 + 255 + 63);
}

/// One SM of 1024 threads; X (stream 0, 512 threads, 30 cycles), Big
/// (stream 1, 1024 threads, 10 cycles), Y (stream 0, 256 threads, 100
/// cycles); best_fit, age threshold 3.
fn reserve_case(reserve: bool) -> (SchedulerParams, Workload) {
    let p = SchedulerParams { policy: Policy::BestFit, age_threshold: 3, reserve, ..small(2, 1) };
    (p, wl(vec![k(1, 0, 1, 512, 30), k(2, 1, 1, 1024, 10), k(3, 0, 1, 256, 100)]))
}

#[test]
fn reserve_with_aging_makes_the_big_kernel_go_first() {
    // Common part. Transfers: X 0, Big 2, Y 4; enqueued 1, 3, 5.
    // Ages: stream 0 from 0 at state 2 (X), X moves in 5: 0 at 6, Y's age
    // = k - 6 at state k. Stream 1 (Big) open from state 4: age k - 4.
    // X: pick 3, load 4, decision 5, transfer 6, completion 36 (512
    // threads free from state 6 to 36).
    // Pick 5 (state 4: X and Big fit; scores X 64+128+128+3 = 323, Big
    // 0+128+128+3 = 259; X's stream is in the dispatcher anyway): Big.
    // Load 6, nothing fits in 7: release. Pick 6 (state 5) is Big again
    // (no load in 7). Pick 7 (state 6: Y fits in 512, Big does not and
    // is in the dispatcher at 7): Y, load 8.
    //
    // Without reserve: decision 9, transfer 10, Y runs 10..110; Big fits
    // only once X (36) and Y (110) are done: comparator 111, pick 112,
    // load 113, decision 114, transfer 115, completion 125.
    let (p, w) = reserve_case(false);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(10, 3, 0, 0), ev(115, 2, 0, 0)]);
    assert_eq!(t.completions, vec![ev(36, 1, 0, 0), ev(110, 3, 0, 0), ev(125, 2, 0, 0)]);
    // With reserve: the comparator of 8 sees Big aged (age 4 > 3), fresh,
    // eligible, not fitting: blocked in 9, the dispatcher releases Y.
    // X completes at 36; comparator 37: Big and Y both fit and are aged
    // and fresh; Big's age (33) beats Y's (31): pick 38, load 39,
    // decision 40, transfer 41, completion 51. The pick of 39 is Big
    // again (no load in 40). The pick of 40 (registers of state 39, both
    // fit; Big in the dispatcher at 40) is Y: load 41. The comparator of
    // 41 sees Y aged, fresh, eligible and not fitting (Big holds the SM),
    // but in 42 Y is in the dispatcher (e(0) false): not blocked; the
    // decision of 42 finds no SM: release. Blocked from 44 (comparator
    // 43). Big completes at 51: comparator 52, pick 53, load 54, decision
    // 55, transfer 56, completion 156.
    let (p, w) = reserve_case(true);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(41, 2, 0, 0), ev(56, 3, 0, 0)]);
    assert_eq!(t.completions, vec![ev(36, 1, 0, 0), ev(51, 2, 0, 0), ev(156, 3, 0, 0)]);
    let o = output_json(&p, &w, &t);
    // Big: ready 2, wait 39; Y: ready max(4, 6) = 6, wait 50.
    assert_eq!(o["kernels"][1]["wait"], json!(39));
    assert_eq!(o["kernels"][2]["wait"], json!(50));
}

#[test]
fn aging_threshold_is_strict() {
    // X (stream 0, 1024 threads, 20 cycles), then B (stream 1, 256) and A
    // (stream 0, 512), best_fit. X: pick 3, load 4, decision 5, transfer
    // 6, completion 26. B: transfer 2, enqueued 3, head from state 4: age
    // k - 4 at state k. A: transfer 4, enqueued 5, head from state 6 (X
    // moved in 5): age k - 6. The pick of 5 (X, B fit) is X (259 < 355):
    // A is loaded in 6, released in 7 (nothing fits). Comparator 27:
    // both fit, ages B 23, A 21.
    let w = wl(vec![k(10, 0, 1, 1024, 20), k(12, 1, 1, 256, 10), k(11, 0, 1, 512, 10)]);
    // (With the pick reading through the dispatcher: the pick of 5 sees
    // stream 0 in the dispatcher and takes B, loaded in 6 and released
    // in 7, instead of loading A; the ages are the same.)
    // Threshold 23: nobody is aged (23 > 23 is false): best_fit picks A
    // in 28: load 29, decision 30, transfer 31. The pick of 29 (B now
    // aged, 24) and of 30 is B: load 31, decision 32, transfer 33.
    let p = SchedulerParams { policy: Policy::BestFit, age_threshold: 23, ..small(2, 1) };
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 11, 0, 0), ev(33, 12, 0, 0)]);
    // Threshold 22: B is aged (23 > 22) in the pick of 28 and goes first:
    // load 29, decision 30, transfer 31. The pick of 29 is B again. The
    // pick of 30 (registers of state 29: both aged, fresh and fitting, B
    // older) sees B in the dispatcher at 30: c(1) false, so A: load 31,
    // decision 32, transfer 33. (Before the rule: B again, whose stream
    // was empty in 31; A at 34.)
    let p = SchedulerParams { age_threshold: 22, ..p };
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 10, 0, 0), ev(31, 12, 0, 0), ev(33, 11, 0, 0)]);
}

#[test]
fn aged_fresh_heads_go_before_started_ones() {
    // One SM of 1024 threads, best_fit, threshold 2. P (stream 0, 3
    // blocks of 512 threads, 20 cycles), F (stream 1, 1 block of 512).
    // P: load 4, decisions 5 (b0), 6 (b1), 7 (nothing fits: released
    // with 2 blocks issued); transfers 6, 7; completions 26, 27. F:
    // enqueued in 3, head from state 4; picked in 5, 6, 7 (P in the
    // dispatcher at the start of each), loaded in 8 (the dispatcher is
    // busy before), released in 9 (nothing free from state 7).
    // Comparator 27 (512 free): P (age 25, started) and F (age 23, fresh)
    // both fit and are aged: F, the fresh one, though P is older: pick
    // 28, load 29, decision 30 (1024 free), transfer 31. The pick of 29 is
    // F again. The pick of 30 (registers of state 29: both fit and are
    // aged) sees F in the dispatcher at 30: c(1) false, so P: load 31,
    // decision 32 (512 free), transfer 33, completion 53. (Before the
    // rule: F again in 30, whose stream was empty in 31; P at 34.)
    let p = SchedulerParams { policy: Policy::BestFit, age_threshold: 2, ..small(2, 1) };
    let w = wl(vec![k(1, 0, 3, 512, 20), k(2, 1, 1, 512, 20)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(7, 1, 1, 0), ev(31, 2, 0, 0), ev(33, 1, 2, 0)]);
    assert_eq!(t.completions, vec![ev(26, 1, 0, 0), ev(27, 1, 1, 0), ev(51, 2, 0, 0), ev(53, 1, 2, 0)]);
}

#[test]
fn load_ignores_blocked() {
    // Spec reading 1: Load does not look at `blocked`. One SM of 1024
    // threads, policy least, reserve, threshold 21. (Reworked for the
    // pick reading through the dispatcher: Big must fit only from the
    // state where Z is already in the dispatcher, or Big would be picked
    // while Z is busy and loaded before the cycle it blocks.)
    // Y (stream 0, 256 threads, 38 cycles): load 4, decision 5, transfer
    //   6, due 44. W (stream 0, 512 threads, 32 cycles): head from state
    //   6; the picks of 5 and 6 see stream 0 in the dispatcher (none);
    //   comparator 6, pick 7, load 8, decision 9, transfer 10, due 42.
    //   256 threads free from state 10.
    // Big (stream 1, 768 threads, submit 20): transfer 20, head from
    //   state 22: age k - 22; it does not fit until W completes.
    // Z (stream 0, 256 threads, submit 38): transfer 38, head from 40.
    // Comparator 40: Z fits, Big does not: pick 41 Z, load 42 (the pick
    //   of 42 is Z again, no load in 43), decision 43 (table of 43: W
    //   completed at 42, 768 free; 512 free from state 44), transfer 44.
    //   The pick of 43 (registers of state 42: Z fits, Big does not) sees
    //   Z in the dispatcher: no pick, so nothing is loaded in 44.
    // Comparator 43: Big fits (768), age 21, not aged (blocked in 43 and
    //   44 would need it aged: 20, 21 > 21 is false). Pick 44: Big.
    // Cycle 45: the comparator of 44 saw Big aged (22 > 21), fresh, not
    //   fitting (512 free), and the dispatcher is empty at 45: blocked,
    //   no pick. The dispatcher is free and pick_v is set: Big is loaded
    //   anyway. Y completed at 44 (768 free from 45): the comparator of 45
    //   sees Big fit, so 46 is not blocked (and Big, in the dispatcher,
    //   has e(1) false): Big is decided in 46 and transferred at 47.
    // (Were Load to wait while blocked: pick 46, load 47, transfer 49.)
    let p = SchedulerParams { policy: Policy::Least, age_threshold: 21, reserve: true, ..small(2, 1) };
    let w = wl(vec![
        k(1, 0, 1, 256, 38),
        k(2, 0, 1, 512, 32),
        Kernel { submit: 20, ..k(3, 1, 1, 768, 10) },
        Kernel { submit: 38, ..k(4, 0, 1, 256, 10) },
    ]);
    let t = run_checked(&p, &w);
    assert_eq!(t.submissions, vec![(0, 1), (2, 2), (20, 3), (38, 4)]);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(10, 2, 0, 0), ev(44, 4, 0, 0), ev(47, 3, 0, 0)]);
    assert_eq!(t.completions, vec![ev(42, 2, 0, 0), ev(44, 1, 0, 0), ev(54, 4, 0, 0), ev(57, 3, 0, 0)]);
}

#[test]
fn rr_head_that_does_not_fit_holds_its_turn() {
    // One SM of 1024 threads, rr. X (stream 0, 512 threads, 20 cycles),
    // Big (stream 1, 768, 10 cycles), S1 (stream 0, 256, 100 cycles), S2
    // (stream 0, 256, 10 cycles).
    // X: load 4 (rr <- 1), decision 5 (512 free from 6), transfer 6,
    //   completion 26. Transfers: Big 2, S1 4, S2 6; heads: Big from
    //   state 4, S1 from 6 (X moved in 5), S2 from 10.
    // Pick 5 (state 4: X and Big fit, rr 1): Big; loaded in 6 (rr <- 0),
    //   released in 7 (512 free). Pick 7 (state 6, rr 0): S1; load 8 (rr
    //   <- 1), decision 9 (256 free from 10), transfer 10.
    // From the pick of 9 on, rr = 1: Big is the first eligible stream and
    //   does not fit: no pick, though S2 fits (256 free) from state 10.
    // X completes at 26 (768 free from 27): pick 28 Big, load 29 (rr <-
    //   0), decision 30 (0 free from 31), transfer 31, completion 41. The
    //   pick of 30 (rr 0) is S2: loaded in 31 (rr <- 1), released in 32.
    // Big completes at 41: comparator 42, pick 43 (rr 1: stream 1 has no
    //   head, stream 0 fits): S2, load 44, decision 45, transfer 46.
    let p = SchedulerParams { policy: Policy::Rr, ..small(2, 1) };
    let w = wl(vec![k(1, 0, 1, 512, 20), k(2, 1, 1, 768, 10), k(3, 0, 1, 256, 100), k(4, 0, 1, 256, 10)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(10, 3, 0, 0), ev(31, 2, 0, 0), ev(46, 4, 0, 0)]);
    assert_eq!(t.completions, vec![ev(26, 1, 0, 0), ev(41, 2, 0, 0), ev(56, 4, 0, 0), ev(110, 3, 0, 0)]);
}

#[test]
fn a_completion_frees_the_table_from_the_next_cycle() {
    // One SM with one slot, two 1-block kernels of duration 1 on one
    // stream. A: load 4, decision 5, transfer 6, completion 7. A2 is the
    // head from state 6; the picks of 5 and 6 see A in the dispatcher
    // (directly, or through the registers of state 5): none. The
    // comparators of 6 and 7 read the table at the start of their
    // cycle, where A still holds the slot (its completion at 7 counts
    // from 8): A2 does not fit. The comparator of 8 sees the slot free:
    // pick 9, load 10, decision 11, transfer 12, completion 13 (were the
    // completion to count in its own cycle: comparator 7, transfer 11).
    let p = SchedulerParams { sm_slots: 1, ..small(1, 1) };
    let w = wl(vec![k(1, 0, 1, 10, 1), k(2, 0, 1, 10, 1)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(12, 2, 0, 0)]);
    assert_eq!(t.completions, vec![ev(7, 1, 0, 0), ev(13, 2, 0, 0)]);
}

#[test]
fn a_stream_just_loaded_is_not_picked_from_stale_registers() {
    // Spec step 2: the pick reads the comparator registers through the
    // dispatcher at the start of the cycle. Policy priority, one SM of
    // 1024 threads, 4 slots, aging off; every kernel 1 block, 10 cycles.
    // Blk (stream 1, 1024 threads), M (stream 1, 256, prio 2), H (stream
    // 0, 256, prio 3), Lo (stream 0, 256, prio 0), in that input order.
    // Transfers 0, 2, 4, 6; enqueued 1, 3, 5, 7.
    // Blk: comparator 2, pick 3, load 4, decision 5 (0 free from state
    //   6), transfer 6, completion 16 (1024 free from state 17). M is
    //   stream 1's head from state 6 (Blk moved in 5), H stream 0's from
    //   6, Lo behind H. The pick of 5 (registers of state 4: Blk) sees
    //   stream 1 in the dispatcher: none; from the comparator of 6 nothing
    //   fits until 17.
    // Comparator 17: H (prio 3) and M (prio 2) fit: pick 18 H, load 19,
    //   decision 20 (768 free from state 21; H moves: Lo is stream 0's
    //   head from state 21), transfer 21. The pick of 19 is H again (no
    //   load in 20: H is in the dispatcher).
    // The pick of 20: the registers of state 19 still show H (prio 3,
    //   eligible, fitting) but the dispatcher holds stream 0 at the start
    //   of 20: c(0) false, so M (prio 2). Load 21 (H left in 20),
    //   decision 22 (512 free from 23), transfer 23.
    //   (Without the rule: stream 0 in 20, and Lo, its head at 21, is
    //   loaded in 21 without ever being scored: Lo at 23, M at 25.)
    // The pick of 21 (registers of state 20: H's stream busy, M fits) is
    //   M (no load in 22). The pick of 22 (registers of state 21: Lo prio
    //   0 and M prio 2 fit; M in the dispatcher at 22) is Lo: load 23,
    //   decision 24, transfer 25.
    // Completions: Blk 16, H 31, M 33, Lo 35.
    let p = SchedulerParams { policy: Policy::Priority, ..small(2, 1) };
    let w = wl(vec![
        k(1, 1, 1, 1024, 10),
        Kernel { priority: 2, ..k(2, 1, 1, 256, 10) },
        Kernel { priority: 3, ..k(3, 0, 1, 256, 10) },
        Kernel { priority: 0, ..k(4, 0, 1, 256, 10) },
    ]);
    let t = run_checked(&p, &w);
    assert_eq!(t.submissions, vec![(0, 1), (2, 2), (4, 3), (6, 4)]);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(21, 3, 0, 0), ev(23, 2, 0, 0), ev(25, 4, 0, 0)]);
    assert_eq!(t.completions, vec![ev(16, 1, 0, 0), ev(31, 3, 0, 0), ev(33, 2, 0, 0), ev(35, 4, 0, 0)]);
}

#[test]
fn idle_stretches_are_skipped_exactly() {
    // A kernel at cycle 10^9 and a long one: fast, and the same as the
    // plain loop on a shorter version.
    let p = small(2, 2);
    let w = wl(vec![
        Kernel { submit: 1_000_000_000, ..k(1, 0, 2, 10, 1_000_000) },
        Kernel { submit: 1_000_000_000, ..k(2, 1, 1, 10, 5) },
    ]);
    let t = run_checked(&p, &w);
    assert_eq!(t.submissions, vec![(1_000_000_000, 1), (1_000_000_002, 2)]);
    assert_eq!(t.dispatches[0], ev(1_000_000_006, 1, 0, 0));
    assert_eq!(t.completions.last().unwrap().cycle, 1_000_000_007 + 1_000_000);
}

// ---- random workloads: check_trace, skipping ----

/// A small deterministic generator for the tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn random_case(seed: u64) -> (SchedulerParams, Workload, Env) {
    let mut r = Rng(seed);
    let sms = 1 + r.below(4) as u32;
    let policy = r.pick(&[Policy::Rr, Policy::BestFit, Policy::Least, Policy::Priority]);
    let age_threshold = r.pick(&[0, 0, 5, 20, 100]);
    let aging = age_threshold > 0 && policy != Policy::Rr;
    let p = SchedulerParams {
        streams: 1 + r.below(4) as u32,
        sms,
        sm_threads: r.pick(&[64, 1024, 2048]),
        sm_regs: r.pick(&[100, 65536]),
        sm_smem: r.pick(&[1, 300, 65536]),
        sm_slots: 1 + r.below(4) as u32,
        queue_depth: 1 + r.below(3) as u32,
        policy,
        age_threshold,
        reserve: aging && r.below(2) == 0,
        dispatch_width: 1 + r.below(sms as u64) as u32,
        stream_order: r.pick(&[StreamOrder::Dispatch, StreamOrder::Complete]),
        ..SchedulerParams::default()
    };
    // Every fourth case a longer workload.
    let n = r.below(if seed.is_multiple_of(4) { 40 } else { 12 }) as usize;
    let mut kernels = Vec::new();
    for i in 0..n {
        let frac = |r: &mut Rng, cap: u32| -> u32 {
            let x = r.below(cap as u64 + 1) as u32;
            // Now and then one above the capacity (a bad kernel).
            if r.below(25) == 0 {
                cap + 1
            } else {
                x / (1 + r.below(4) as u32)
            }
        };
        kernels.push(Kernel {
            id: 100 + i as u64,
            stream: r.below(p.streams as u64) as u32,
            blocks: if r.below(30) == 0 { 0 } else { 1 + r.below(6) as u32 },
            threads: frac(&mut r, p.sm_threads),
            regs: frac(&mut r, p.sm_regs),
            smem: frac(&mut r, p.sm_smem),
            duration: 1 + r.below(40),
            priority: r.below(4) as u32,
            submit: if r.below(3) == 0 { r.below(100) } else { 0 },
        });
    }
    let stalls = r.below(2) == 0;
    let env = if stalls {
        Env {
            seed: r.next(),
            src_stall_pct: r.below(60) as u32,
            dsp_stall_pct: r.below(60) as u32,
            rej_stall_pct: r.below(60) as u32,
            max_extra: r.below(10),
        }
    } else {
        Env::default()
    };
    (p, wl(kernels), env)
}

#[test]
fn random_traces_pass_check_trace_and_skipping_is_exact() {
    for seed in 0..600 {
        let (p, w, env) = random_case(seed);
        let t = run(&p, &w, &env);
        if let Err(e) = check_trace(&p, &w, &env, &t) {
            panic!("seed {seed}: {e}\n{p:?}\n{w:?}\n{env:?}");
        }
        let plain = simulate(&p, &w, &env, false);
        assert_eq!(t, plain, "seed {seed}: skipping idle cycles changed the trace");
        // The output file is built from the trace without surprises.
        let o = output_json(&p, &w, &t);
        assert_eq!(o["dispatches"].as_array().unwrap().len(), t.dispatches.len());
    }
}

#[test]
fn reserve_wait_bound_holds_on_random_workloads() {
    // Spec "Reserve and the wait bound": with reserve, every wait is at
    // most age_threshold + S * (D + W + 12), D the longest block run time.
    for seed in 0..600 {
        let (mut p, w, env) = random_case(seed);
        if !p.aging() {
            continue;
        }
        p.reserve = true;
        let t = run(&p, &w, &env);
        let o = output_json(&p, &w, &t);
        let d = w
            .kernels
            .iter()
            .enumerate()
            .flat_map(|(i, k)| (0..k.blocks).map(move |b| k.duration + env.extra(i, b)))
            .max()
            .unwrap_or(0);
        let bound = p.age_threshold as u64 + p.streams as u64 * (d + p.dispatch_width as u64 + 12);
        for kj in o["kernels"].as_array().unwrap() {
            let wait = kj["wait"].as_u64().unwrap();
            assert!(wait <= bound, "seed {seed}: kernel {} waits {wait} > bound {bound}", kj["id"]);
        }
    }
}

// ---- check_trace rejects tampered traces ----

/// Two 1-block kernels on two streams, 2 SMs with 1 slot each; both run
/// 50 cycles. A: transfer 0, dispatch 6 on SM 0, completion 56. B:
/// transfer 2, enqueued 3. The pick of 5 reads the registers of state 4
/// (A and B fit, equal best_fit scores: stream 0 would win) through the
/// dispatcher at the start of 5, which holds A: c(0) false, so B. Load 6
/// (A was decided in 5), decision 7 (SM 0 full from state 6), transfer 8
/// on SM 1, completion 58. (Before the rule: stream 0 in 5, no head in 6,
/// B picked in 6 and transferred at 9.)
fn two_sms() -> (SchedulerParams, Workload, Trace) {
    let p = SchedulerParams { sm_slots: 1, ..small(2, 2) };
    let w = wl(vec![k(1, 0, 1, 10, 50), k(2, 1, 1, 10, 50)]);
    let t = run_checked(&p, &w);
    assert_eq!(t.dispatches, vec![ev(6, 1, 0, 0), ev(8, 2, 0, 1)]);
    assert_eq!(t.completions, vec![ev(56, 1, 0, 0), ev(58, 2, 0, 1)]);
    (p, w, t)
}

#[test]
fn check_trace_flags_a_block_on_a_full_sm() {
    let (p, w, mut t) = two_sms();
    t.dispatches[1].sm = 0;
    t.completions[1].sm = 0;
    let e = check_trace(&p, &w, &Env::default(), &t).unwrap_err();
    assert_eq!(e, "SM 0 at cycle 8: 2 slots in use by running blocks, capacity 1");
    // A block that starts where another completes in the same cycle is
    // over capacity too (both are counted by the table then).
    let (p, w, mut t) = two_sms();
    t.dispatches[1] = ev(56, 2, 0, 0);
    t.completions[1] = ev(106, 2, 0, 0);
    let e = check_trace(&p, &w, &Env::default(), &t).unwrap_err();
    assert_eq!(e, "SM 0 at cycle 56: 2 slots in use by running blocks, capacity 1");
    // Two cycles later it is fine.
    t.dispatches[1] = ev(58, 2, 0, 0);
    t.completions[1] = ev(108, 2, 0, 0);
    t.completions.sort_by_key(|e| e.cycle);
    check_trace(&p, &w, &Env::default(), &t).unwrap();
}

#[test]
fn check_trace_flags_a_block_dispatched_twice() {
    let (p, w, mut t) = two_sms();
    t.dispatches.push(ev(10, 2, 0, 0));
    let e = check_trace(&p, &w, &Env::default(), &t).unwrap_err();
    assert_eq!(e, "kernel 2 block 0 dispatched at cycle 10 on SM 0: dispatched twice");
}

#[test]
fn check_trace_flags_other_tampering() {
    let env = Env::default();
    let (p, w, t) = two_sms();
    let bad = |f: &dyn Fn(&mut Trace)| {
        let mut x = t.clone();
        f(&mut x);
        check_trace(&p, &w, &env, &x).unwrap_err()
    };
    assert_eq!(bad(&|x| x.completions[0].cycle = 55), "completion 0 is kernel 1 block 0 on SM 0 at cycle 55; the SM stand-in completes kernel 1 block 0 on SM 0 at cycle 56");
    assert_eq!(bad(&|x| { x.dispatches.pop(); }), "kernel 2: 0 of its 1 blocks dispatched");
    assert_eq!(bad(&|x| x.rejections.push((9, 1))), "rejected kernels [1]; the bad ones are []");
    assert_eq!(bad(&|x| x.submissions[1].0 = 1), "kernel 2 submitted at cycle 1, within 2 cycles of the previous submission (0)");
    assert_eq!(bad(&|x| x.submissions.swap(0, 1)), "submission 0 at cycle 2 is kernel 2; the source offers kernels[0] (id 1) then");
    // Stream order: both kernels on stream 0 with `complete`, B moved
    // before A's completion (and onto SM 1, where it fits).
    let p = SchedulerParams { stream_order: StreamOrder::Complete, ..p.clone() };
    let w = wl(vec![k(1, 0, 1, 10, 50), k(2, 0, 1, 10, 50)]);
    let t = run_checked(&p, &w);
    let mut x = t.clone();
    x.dispatches[1] = ev(8, 2, 0, 1);
    x.completions[1] = ev(58, 2, 0, 1);
    assert_eq!(
        check_trace(&p, &w, &env, &x).unwrap_err(),
        "kernel 2 first dispatched at cycle 8, not after its stream predecessor 1 completed (cycle 56)"
    );
}

// ---- parse_input ----

fn kernel_json() -> Value {
    json!({"id": 0, "stream": 0, "blocks": 8, "threads": 256, "regs": 8192, "smem": 16384, "duration": 120})
}

fn messages(v: Value) -> Vec<String> {
    parse_input(&v, &SchedulerParams::default()).unwrap_err().0.iter().map(|e| e.to_string()).collect()
}

#[test]
fn parse_defaults_and_edges() {
    let p = SchedulerParams::default();
    let w = parse_input(&json!({"kernels": [kernel_json()]}), &p).unwrap();
    assert_eq!(
        w.kernels,
        vec![Kernel { id: 0, stream: 0, blocks: 8, threads: 256, regs: 8192, smem: 16384, duration: 120, priority: 0, submit: 0 }]
    );
    // Largest values: needs up to the port widths (12, 17, 17 bits), so
    // above the capacity (the hardware rejects those).
    let v = json!({"kernels": [{"id": 65535, "stream": 3, "blocks": 65535, "threads": 4095, "regs": 131071,
                                "smem": 131071, "duration": 1000000, "priority": 3, "submit": 1000000000}]});
    let w = parse_input(&v, &p).unwrap();
    assert_eq!(w.kernels[0].threads, 4095);
    assert!(is_bad(&p, &w.kernels[0]));
    // Exactly 100,000 blocks in all is allowed.
    let p16 = SchedulerParams { block_bits: 17, ..p.clone() };
    let v = json!({"kernels": [{"id": 1, "stream": 0, "blocks": 100000, "threads": 0, "regs": 0, "smem": 0, "duration": 1}]});
    assert!(parse_input(&v, &p16).is_ok());
}

#[test]
fn parse_reports_every_violation() {
    let v = json!({
        "kernels": [
            {"id": 65536, "stream": 4, "blocks": 0, "threads": 4096, "regs": 131072, "smem": -1,
             "duration": 0, "priority": 4, "submit": 1000000001, "name": "x"},
            kernel_json(),
            kernel_json(),
            {"stream": 0},
            3
        ],
        "extra": true
    });
    assert_eq!(
        messages(v),
        vec![
            "input `extra` = (given): must be absent: the only key is `kernels`",
            "input `kernels[0].name` = (given): must be absent: keys are id, stream, blocks, threads, regs, smem, duration, priority, submit",
            "input `kernels[0].id` = 65536: must be an integer from 0 to 65535",
            "input `kernels[0].stream` = 4: must be an integer from 0 to 3",
            "input `kernels[0].blocks` = 0: must be an integer from 1 to 65535",
            "input `kernels[0].threads` = 4096: must be an integer from 0 to 4095",
            "input `kernels[0].regs` = 131072: must be an integer from 0 to 131071",
            "input `kernels[0].smem` = -1: must be an integer from 0 to 131071",
            "input `kernels[0].duration` = 0: must be an integer from 1 to 1000000",
            "input `kernels[0].priority` = 4: must be an integer from 0 to 3",
            "input `kernels[0].submit` = 1000000001: must be an integer from 0 to 1000000000",
            "input `kernels[2].id` = 0: must be distinct: kernels[1].id is 0 too",
            "input `kernels[3].id` = (missing): must be an integer from 0 to 65535",
            "input `kernels[3].blocks` = (missing): must be an integer from 1 to 65535",
            "input `kernels[3].threads` = (missing): must be an integer from 0 to 4095",
            "input `kernels[3].regs` = (missing): must be an integer from 0 to 131071",
            "input `kernels[3].smem` = (missing): must be an integer from 0 to 131071",
            "input `kernels[3].duration` = (missing): must be an integer from 1 to 1000000",
            "input `kernels[4]` = 3: must be an object",
        ]
    );
}

#[test]
fn parse_messages() {
    let with = |f: &str, x: Value| {
        let mut o = kernel_json();
        o[f] = x;
        json!({"kernels": [o]})
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "input `(file)` = []: must be a JSON object with a `kernels` list"),
        (json!({}), "input `kernels` = (missing): must be a list of kernels"),
        (json!({"kernels": {}}), "input `kernels` = {}: must be a list of kernels"),
        (with("id", json!(1.5)), "input `kernels[0].id` = 1.5: must be an integer from 0 to 65535"),
        (with("stream", json!(null)), "input `kernels[0].stream` = null: must be an integer from 0 to 3"),
        (with("blocks", json!("8")), "input `kernels[0].blocks` = \"8\": must be an integer from 1 to 65535"),
        (with("duration", json!(1000001)), "input `kernels[0].duration` = 1000001: must be an integer from 1 to 1000000"),
        (with("priority", json!(-1)), "input `kernels[0].priority` = -1: must be an integer from 0 to 3"),
    ];
    for (v, want) in cases {
        assert_eq!(messages(v.clone()), vec![want.to_string()], "{v}");
    }
    // Widths follow the parameters.
    let p = SchedulerParams { id_bits: 4, block_bits: 3, prio_bits: 1, streams: 2, sm_threads: 100, ..SchedulerParams::default() };
    let v = json!({"kernels": [{"id": 16, "stream": 2, "blocks": 8, "threads": 128, "regs": 0, "smem": 0, "duration": 1, "priority": 2}]});
    let got: Vec<String> = parse_input(&v, &p).unwrap_err().0.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        vec![
            "input `kernels[0].id` = 16: must be an integer from 0 to 15",
            "input `kernels[0].stream` = 2: must be an integer from 0 to 1",
            "input `kernels[0].blocks` = 8: must be an integer from 1 to 7",
            "input `kernels[0].threads` = 128: must be an integer from 0 to 127",
            "input `kernels[0].priority` = 2: must be an integer from 0 to 1",
        ]
    );
    // Too many blocks in all.
    let p = SchedulerParams { block_bits: 20, ..SchedulerParams::default() };
    let kern = |id: u64| json!({"id": id, "stream": 0, "blocks": 60000, "threads": 0, "regs": 0, "smem": 0, "duration": 1});
    let got: Vec<String> = parse_input(&json!({"kernels": [kern(1), kern(2)]}), &p).unwrap_err().0.iter().map(|e| e.to_string()).collect();
    assert_eq!(got, vec!["input `kernels` = 120000 blocks in all: must be at most 100000 blocks in all"]);
}
