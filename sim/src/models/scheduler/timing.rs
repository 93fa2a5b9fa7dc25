//! The cycle loop: the spec's eight per-cycle rules over [`State`], the
//! environment played beside them, and the skipping of idle stretches.

use super::env::Environment;
use super::state::{Cur, Entry, Record, Res, State, AGE_MAX, FIFO_DEPTH};
use super::{is_bad, BlockEvent, Trace, Workload};
use gpurtl_params::scheduler::SchedulerParams;
use std::collections::BTreeMap;

/// A block running on its SM (dispatched, not completed).
#[derive(Clone, Debug)]
struct Running {
    kernel: usize,
    id: u64,
    block: u32,
    sm: u32,
    tag: usize,
}

/// The source: kernels in input order, one at a time.
#[derive(Clone, Debug)]
struct Source {
    /// The next kernel to offer (input index).
    next: usize,
    /// The cycle it is offered from.
    start: u64,
}

/// The cycle the source starts offering kernel `i`: the first `c >=
/// submit_i` after the previous transfer (`after`) whose stall draw is false.
pub(super) fn source_start(w: &Workload, env: &dyn Environment, i: usize, after: Option<u64>) -> u64 {
    let mut c = w.kernels[i].submit;
    if let Some(t) = after {
        c = c.max(t + 1);
    }
    while env.src_stall(c) {
        c += 1;
    }
    c
}

struct Sim<'a> {
    p: &'a SchedulerParams,
    w: &'a Workload,
    env: &'a dyn Environment,
    st: State,
    src: Source,
    /// Running blocks keyed by (due cycle, dispatch cycle, lane): the SM
    /// stand-in's completion order.
    running: BTreeMap<(u64, u64, u32), Running>,
    /// Completed blocks per kernel (input index).
    completed: Vec<u32>,
    /// Kernels rejected or with every block completed.
    resolved: usize,
    trace: Trace,
}

impl<'a> Sim<'a> {
    fn new(p: &'a SchedulerParams, w: &'a Workload, env: &'a dyn Environment) -> Sim<'a> {
        let start = if w.kernels.is_empty() { 0 } else { source_start(w, env, 0, None) };
        Sim {
            p,
            w,
            env,
            st: State::reset(p),
            src: Source { next: 0, start },
            running: BTreeMap::new(),
            completed: vec![0; w.kernels.len()],
            resolved: 0,
            trace: Trace::default(),
        }
    }

    fn q_depth(&self) -> usize {
        self.p.queue_depth as usize
    }

    /// Whether the source offers a kernel in cycle `c` (`sub_valid_i`).
    fn offering(&self, c: u64) -> bool {
        self.src.next < self.w.kernels.len() && self.src.start <= c
    }

    /// One cycle: every rule reads `s0` (the state at the start of cycle
    /// `c`) and writes the next state into `self.st`. Returns whether a port
    /// event (a transfer or a completion) happened.
    fn step(&mut self, c: u64) -> bool {
        let p = self.p;
        let nq = self.q_depth();
        let w_lanes = p.dispatch_width as usize;
        let s0 = self.st.clone();
        let mut event = false;

        // ---- The environment's inputs in cycle c ----
        let sub_xfer = (self.offering(c) && s0.sub_q.is_none()).then_some(self.src.next);
        let dsp_xfer = !s0.fifo.is_empty() && self.env.dsp_ready(c);
        let rej_xfer = s0.rej_q.is_some() && self.env.rej_ready(c);
        // The stand-in offers the blocks due by now, by (due, dispatch
        // cycle, lane), the first W of them.
        let cpl: Vec<(u64, u64, u32)> = self.running.keys().take_while(|k| k.0 <= c).take(w_lanes).copied().collect();

        // ---- 1. Comparator ----
        for s in 0..s0.q.len() {
            self.st.comp[s] = s0.compare(p, s);
        }

        // ---- 2. Pick ----
        let (blocked, pick) = s0.pick(p);
        self.st.pick_v = pick.is_some();
        if let Some(s) = pick {
            self.st.pick_s = s;
        }

        // ---- 3. Dispatcher ----
        let mut moved = vec![false; s0.q.len()];
        match &s0.cur {
            None => {
                // Load.
                if s0.pick_v && s0.open(p, s0.pick_s) {
                    let s = s0.pick_s;
                    let k = s0.head(s).expect("open implies a head");
                    self.st.cur = Some(Cur {
                        s,
                        tag: s * nq + s0.q[s].dptr,
                        id: k.id,
                        kernel: k.kernel,
                        need: k.need,
                        next: k.issued,
                        left: k.blocks - k.issued,
                    });
                    self.st.rr = (s + 1) % s0.q.len();
                }
            }
            Some(cur) => {
                if blocked {
                    self.st.cur = None; // release
                } else if s0.fifo.len() >= FIFO_DEPTH {
                    // The dispatcher waits.
                } else {
                    // The SMs the block fits on, lowest first: one block per SM.
                    let fit: Vec<usize> = (0..s0.free.len()).filter(|&m| cur.need.fits_in(&s0.free[m])).collect();
                    let n = w_lanes.min(cur.left as usize).min(fit.len());
                    if n == 0 {
                        self.st.cur = None; // release: nothing fits
                    } else {
                        let sms = &fit[..n];
                        self.st.fifo.push_back(Record {
                            tag: cur.tag,
                            id: cur.id,
                            kernel: cur.kernel,
                            block: cur.next,
                            sm: sms.iter().map(|&m| m as u32).collect(),
                        });
                        for &m in sms {
                            self.st.free[m].sub(&cur.need);
                        }
                        let (s, i) = (cur.s, cur.tag - cur.s * nq);
                        assert_eq!(i, s0.q[s].dptr, "the dispatcher's kernel is its stream's head");
                        self.st.q[s].entry[i].as_mut().expect("occupied").issued += n as u32;
                        let left = cur.left - n as u32;
                        if left == 0 {
                            // Fully dispatched: the head moves on.
                            self.st.cur = None;
                            self.st.q[s].dptr = (s0.q[s].dptr + 1) % nq;
                            self.st.q[s].pend -= 1;
                            moved[s] = true;
                        } else {
                            let nc = self.st.cur.as_mut().expect("cur_v");
                            nc.next += n as u32;
                            nc.left = left;
                        }
                    }
                }
            }
        }

        // ---- 4. Completions ----
        for key in cpl {
            let b = self.running.remove(&key).expect("running");
            let (s, i) = (b.tag / nq, b.tag % nq);
            let e = self.st.q[s].entry[i].as_mut().expect("a completing block's entry is occupied");
            assert_eq!(e.kernel, b.kernel, "tag of a completing block");
            e.done += 1;
            let need = e.need;
            self.st.free[b.sm as usize].add(&need);
            self.trace.completions.push(BlockEvent { cycle: c, kernel: b.id, block: b.block, sm: b.sm });
            self.completed[b.kernel] += 1;
            if self.completed[b.kernel] == self.w.kernels[b.kernel].blocks {
                self.resolved += 1;
            }
            event = true;
        }

        // ---- 5. Retire ----
        for s in 0..s0.q.len() {
            let q = &s0.q[s];
            if q.cnt > q.pend {
                let e = q.entry[q.hptr].as_ref().expect("hptr entry is occupied");
                if e.done == e.blocks {
                    let nqs = &mut self.st.q[s];
                    nqs.entry[q.hptr] = None;
                    nqs.hptr = (q.hptr + 1) % nq;
                    nqs.cnt -= 1;
                }
            }
        }

        // ---- 6. Submission ----
        if let Some(k) = s0.sub_q {
            let kern = &self.w.kernels[k];
            if is_bad(p, kern) {
                if s0.rej_q.is_none() {
                    self.st.rej_q = Some(k);
                    self.st.sub_q = None;
                }
            } else {
                let s = kern.stream as usize;
                if s0.q[s].cnt < nq {
                    let t = s0.q[s].tptr;
                    let nqs = &mut self.st.q[s];
                    assert!(nqs.entry[t].is_none(), "tptr entry is free");
                    nqs.entry[t] = Some(Entry {
                        kernel: k,
                        id: kern.id,
                        blocks: kern.blocks,
                        need: Res::need(kern),
                        prio: kern.priority,
                        issued: 0,
                        done: 0,
                    });
                    nqs.tptr = (t + 1) % nq;
                    nqs.cnt += 1;
                    nqs.pend += 1;
                    self.st.sub_q = None;
                }
            }
        }
        if let Some(k) = sub_xfer {
            // sub_ready_o = !sub_q.valid: the register is empty at the start.
            self.st.sub_q = Some(k);
            self.trace.submissions.push((c, self.w.kernels[k].id));
            self.src.next += 1;
            if self.src.next < self.w.kernels.len() {
                self.src.start = source_start(self.w, self.env, self.src.next, Some(c));
            }
            event = true;
        }
        if rej_xfer {
            let k = s0.rej_q.expect("rej_valid_o");
            self.st.rej_q = None;
            self.trace.rejections.push((c, self.w.kernels[k].id));
            self.resolved += 1;
            event = true;
        }

        // ---- 7. Dispatch port ----
        if dsp_xfer {
            // The oldest record (the one pushed this cycle, if any, is behind it).
            let r = self.st.fifo.pop_front().expect("dsp_valid_o");
            let dur = self.w.kernels[r.kernel].duration;
            for (lane, &sm) in r.sm.iter().enumerate() {
                let block = r.block + lane as u32;
                self.trace.dispatches.push(BlockEvent { cycle: c, kernel: r.id, block, sm });
                let due = c + dur + self.env.extra(r.kernel, block);
                self.running.insert((due, c, lane as u32), Running { kernel: r.kernel, id: r.id, block, sm, tag: r.tag });
            }
            event = true;
        }

        // ---- 8. Ages ----
        for (s, &mv) in moved.iter().enumerate() {
            self.st.age[s] = if !s0.open(p, s) || mv { 0 } else { (s0.age[s] + 1).min(AGE_MAX) };
        }

        event
    }

    /// If nothing but the ages can change from cycle `c` until some later
    /// cycle `e` (the next completion due, or the source's next offer into an
    /// empty `sub_q`), `Some(e)`. The conditions, on the state at the start
    /// of `c`: no kernel in the dispatcher and no pick registered (so no load
    /// or dispatch), no `sched_q` and no `sched(s)` (so no pick now or later:
    /// with no kernel in the dispatcher the pick's `c(s)` is `sched_q[s]`,
    /// and the table and the heads only change through completions,
    /// dispatches and enqueues), an empty FIFO and `rej_q`, no retire
    /// possible, and `sub_q` empty with no offer yet or holding a good kernel
    /// of a full stream. Then each cycle only moves the ages (and the
    /// comparator's age fields, which matter only for picks among the `c(s)`
    /// streams and for `blocked`, which matters only with a kernel in the
    /// dispatcher).
    fn idle_until(&self, c: u64) -> Option<u64> {
        let (p, st) = (self.p, &self.st);
        let streams = st.q.len();
        if st.cur.is_some() || st.pick_v || !st.fifo.is_empty() || st.rej_q.is_some() {
            return None;
        }
        if st.comp.iter().any(|x| x.sched) || (0..streams).any(|s| st.sched(p, s)) {
            return None;
        }
        let retire = st.q.iter().any(|q| q.cnt > q.pend && q.entry[q.hptr].as_ref().is_some_and(|e| e.done == e.blocks));
        if retire {
            return None;
        }
        let mut next: Option<u64> = None;
        match st.sub_q {
            None => {
                if self.offering(c) {
                    return None;
                }
                if self.src.next < self.w.kernels.len() {
                    next = Some(self.src.start);
                }
            }
            Some(k) => {
                let kern = &self.w.kernels[k];
                if is_bad(p, kern) || st.q[kern.stream as usize].cnt < self.q_depth() {
                    return None;
                }
            }
        }
        if let Some((&(due, _, _), _)) = self.running.iter().next() {
            if due <= c {
                return None;
            }
            next = Some(next.map_or(due, |n| n.min(due)));
        }
        match next {
            Some(e) => Some(e),
            None => panic!("scheduler model: deadlock at cycle {c} with {} of {} kernels resolved", self.resolved, self.w.kernels.len()),
        }
    }

    /// Jump from the start of cycle `c` to the start of cycle `e - 1` (see
    /// [`Sim::idle_until`]): only the ages move. The comparator registers are
    /// left as they are at `c` (no `sched_q`): in cycle `e - 1` they give no
    /// pick, as the true ones would, and cycle `e - 1` recomputes them.
    fn skip_to(&mut self, c: u64, e: u64) {
        let d = e - 1 - c;
        for s in 0..self.st.q.len() {
            let a = if self.st.open(self.p, s) { (self.st.age[s] as u64 + d).min(AGE_MAX as u64) as u32 } else { 0 };
            self.st.age[s] = a;
        }
    }
}

/// The cycle loop; `skip`: jump over idle stretches (see [`Sim::idle_until`]).
pub(super) fn simulate(p: &SchedulerParams, w: &Workload, env: &dyn Environment, skip: bool) -> Trace {
    let mut sim = Sim::new(p, w, env);
    // A guard against a model bug: no port event for this many simulated
    // cycles (idle stretches that are skipped count as one) is a livelock.
    // Without one, a stretch lasts at most until the next completion.
    let longest = w.kernels.iter().map(|k| k.duration).max().unwrap_or(0);
    let guard = longest.saturating_add(env.max_extra()).saturating_mul(10).saturating_add(10_000_000);
    let mut quiet: u64 = 0;
    let mut c: u64 = 0;
    while sim.resolved < w.kernels.len() {
        if crate::budget::over(c) {
            break;
        }
        if skip {
            if let Some(e) = sim.idle_until(c) {
                if e > c + 1 {
                    sim.skip_to(c, e);
                    c = e - 1;
                }
            }
        }
        if sim.step(c) {
            quiet = 0;
        } else {
            quiet += 1;
            assert!(quiet < guard, "scheduler model: no progress for {quiet} cycles at cycle {c}");
        }
        c += 1;
    }
    sim.trace
}
