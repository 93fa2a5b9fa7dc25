//! The spec's state ("State") and what each rule reads from it: the
//! definitions (`head`, `open`, `elig`, `first`, `sched`, `score`), the
//! comparator's value and the pick.

use super::Kernel;
use gpurtl_params::scheduler::{Policy, SchedulerParams, StreamOrder, AGE_BITS, SCORE_BITS};
use std::collections::VecDeque;

/// An SM's free resources, or a block's need (`slot` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Res {
    pub(super) thr: u32,
    pub(super) reg: u32,
    pub(super) mem: u32,
    pub(super) slot: u32,
}

impl Res {
    /// A kernel's per-block need: `(threads, regs, smem, 1)`.
    pub(super) fn need(k: &Kernel) -> Res {
        Res { thr: k.threads, reg: k.regs, mem: k.smem, slot: 1 }
    }
    /// `fits(k, m)`: every need within what is free, and a free slot.
    pub(super) fn fits_in(&self, free: &Res) -> bool {
        self.thr <= free.thr && self.reg <= free.reg && self.mem <= free.mem && free.slot >= 1
    }
    pub(super) fn sub(&mut self, n: &Res) {
        self.thr -= n.thr;
        self.reg -= n.reg;
        self.mem -= n.mem;
        self.slot -= n.slot;
    }
    pub(super) fn add(&mut self, n: &Res) {
        self.thr += n.thr;
        self.reg += n.reg;
        self.mem += n.mem;
        self.slot += n.slot;
    }
}

/// A queue entry: a kernel.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    /// Input index of the kernel (for the environment's draws).
    pub(super) kernel: usize,
    pub(super) id: u64,
    pub(super) blocks: u32,
    pub(super) need: Res,
    pub(super) prio: u32,
    /// Blocks dispatched.
    pub(super) issued: u32,
    /// Blocks completed.
    pub(super) done: u32,
}

/// One stream's queue: Q entries in a ring (`None` = free).
#[derive(Clone, Debug)]
pub(super) struct Queue {
    pub(super) entry: Vec<Option<Entry>>,
    pub(super) hptr: usize,
    pub(super) dptr: usize,
    pub(super) tptr: usize,
    pub(super) cnt: usize,
    pub(super) pend: usize,
}

/// One stream's comparator registers.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Comp {
    pub(super) elig: bool,
    pub(super) sched: bool,
    pub(super) aged: bool,
    pub(super) fresh: bool,
    pub(super) agev: u32,
    pub(super) prio: u32,
    pub(super) score: u32,
}

/// The kernel in the dispatcher (`cur_v` = `Some`).
#[derive(Clone, Debug)]
pub(super) struct Cur {
    pub(super) s: usize,
    pub(super) tag: usize,
    pub(super) id: u64,
    pub(super) kernel: usize,
    pub(super) need: Res,
    pub(super) next: u32,
    pub(super) left: u32,
}

/// A dispatch record: `count` blocks of one kernel, lane j on `sm[j]`.
#[derive(Clone, Debug)]
pub(super) struct Record {
    pub(super) tag: usize,
    pub(super) id: u64,
    pub(super) kernel: usize,
    pub(super) block: u32,
    pub(super) sm: Vec<u32>,
}

#[derive(Clone, Debug)]
pub(super) struct State {
    pub(super) free: Vec<Res>,
    pub(super) q: Vec<Queue>,
    pub(super) age: Vec<u32>,
    pub(super) comp: Vec<Comp>,
    pub(super) pick_v: bool,
    pub(super) pick_s: usize,
    pub(super) cur: Option<Cur>,
    pub(super) fifo: VecDeque<Record>,
    pub(super) rr: usize,
    /// The submission register: the input index of the kernel held.
    pub(super) sub_q: Option<usize>,
    /// The rejection register: the input index of the kernel held.
    pub(super) rej_q: Option<usize>,
}

/// Largest age: ages saturate at 2^AGE_BITS - 1.
pub(super) const AGE_MAX: u32 = (1 << AGE_BITS) - 1;
/// Scores are SCORE_BITS wide (each of the four terms is at most 255).
const SCORE_MASK: u32 = (1 << SCORE_BITS) - 1;
/// Dispatch FIFO depth.
pub(super) const FIFO_DEPTH: usize = 2;

impl State {
    /// The state after reset.
    pub(super) fn reset(p: &SchedulerParams) -> State {
        let cap = Res { thr: p.sm_threads, reg: p.sm_regs, mem: p.sm_smem, slot: p.sm_slots };
        let queue = Queue { entry: vec![None; p.queue_depth as usize], hptr: 0, dptr: 0, tptr: 0, cnt: 0, pend: 0 };
        let s = p.streams as usize;
        State {
            free: vec![cap; p.sms as usize],
            q: vec![queue; s],
            age: vec![0; s],
            comp: vec![Comp::default(); s],
            pick_v: false,
            pick_s: 0,
            cur: None,
            fifo: VecDeque::new(),
            rr: 0,
            sub_q: None,
            rej_q: None,
        }
    }

    // ---- Definitions (spec "Definitions") ----

    /// `head(s)`: the kernel in entry `dptr[s]`, present when `pend[s] > 0`.
    pub(super) fn head(&self, s: usize) -> Option<&Entry> {
        let q = &self.q[s];
        if q.pend > 0 {
            Some(q.entry[q.dptr].as_ref().expect("the head entry is occupied"))
        } else {
            None
        }
    }

    /// `open(s)`: a head, and with `complete` every earlier kernel gone.
    pub(super) fn open(&self, p: &SchedulerParams, s: usize) -> bool {
        let q = &self.q[s];
        q.pend > 0 && (p.stream_order == StreamOrder::Dispatch || q.cnt == q.pend)
    }

    /// `elig(s)`: open, and not the kernel in the dispatcher.
    pub(super) fn elig(&self, p: &SchedulerParams, s: usize) -> bool {
        self.open(p, s) && !matches!(&self.cur, Some(c) if c.s == s)
    }

    /// `first(s)`: the lowest SM the head's block fits on.
    pub(super) fn first(&self, s: usize) -> Option<usize> {
        let need = self.head(s)?.need;
        (0..self.free.len()).find(|&m| need.fits_in(&self.free[m]))
    }

    /// `sched(s)`: eligible and the head's block fits some SM.
    pub(super) fn sched(&self, p: &SchedulerParams, s: usize) -> bool {
        self.elig(p, s) && self.first(s).is_some()
    }

    /// `score(s)` by the policy (only meaningful when `sched(s)`).
    pub(super) fn score(&self, p: &SchedulerParams, s: usize) -> u32 {
        let sh = SchedulerParams::score_shift;
        let Some(h) = self.head(s) else { return 0 };
        let n = h.need;
        let v = match p.policy {
            Policy::BestFit => {
                let Some(f) = self.first(s) else { return 0 };
                let fr = self.free[f];
                ((fr.thr - n.thr) >> sh(p.sm_threads))
                    + ((fr.reg - n.reg) >> sh(p.sm_regs))
                    + ((fr.mem - n.mem) >> sh(p.sm_smem))
                    + ((fr.slot - 1) >> sh(p.sm_slots))
            }
            Policy::Least => {
                (n.thr >> sh(p.sm_threads)) + (n.reg >> sh(p.sm_regs)) + (n.mem >> sh(p.sm_smem)) + (1 >> sh(p.sm_slots))
            }
            Policy::Rr | Policy::Priority => 0,
        };
        v & SCORE_MASK
    }

    /// Step 1's value for stream `s`: the comparator registers' next value.
    pub(super) fn compare(&self, p: &SchedulerParams, s: usize) -> Comp {
        let head = self.head(s);
        let sched = self.sched(p, s);
        Comp {
            elig: self.elig(p, s),
            sched,
            aged: self.age[s] > p.age_threshold,
            fresh: head.is_some_and(|h| h.issued == 0),
            agev: self.age[s],
            prio: head.map_or(0, |h| h.prio),
            score: if sched { self.score(p, s) } else { 0 },
        }
    }

    /// Step 2: (`blocked`, the stream picked) from the comparator registers,
    /// `rr` and the dispatcher's `cur_v`, `cur_s`. The comparator registers
    /// are a cycle old, so they are read through the dispatcher's state at
    /// the start of this cycle: `busy(s)` = `cur_v` and `cur_s == s`, `e(s)`
    /// = `elig_q[s]` and not `busy(s)`, `c(s)` = `sched_q[s]` and not
    /// `busy(s)`; every rule below uses `e`/`c` in place of
    /// `elig_q`/`sched_q`.
    pub(super) fn pick(&self, p: &SchedulerParams) -> (bool, Option<usize>) {
        let c = &self.comp;
        let n = c.len();
        let aging = p.aging();
        let busy = |s: usize| matches!(&self.cur, Some(k) if k.s == s);
        let e = |s: usize| c[s].elig && !busy(s);
        let cs = |s: usize| c[s].sched && !busy(s);
        let blocked = p.reserve && aging && (0..n).any(|s| e(s) && c[s].aged && c[s].fresh && !cs(s));
        if blocked {
            return (true, None);
        }
        let sched: Vec<usize> = (0..n).filter(|&s| cs(s)).collect();
        let aged: Vec<usize> = sched.iter().copied().filter(|&s| c[s].aged).collect();
        if aging && !aged.is_empty() {
            // The fresh ones (not started) if any; of them the largest age,
            // ties the lowest stream.
            let fresh: Vec<usize> = aged.iter().copied().filter(|&s| c[s].fresh).collect();
            let pool = if fresh.is_empty() { aged } else { fresh };
            let mut best = pool[0];
            for &s in &pool[1..] {
                if c[s].agev > c[best].agev {
                    best = s;
                }
            }
            return (false, Some(best));
        }
        let pick = match p.policy {
            Policy::Rr => {
                // The first stream at or after rr with e(s) holds the turn;
                // picked if c(s).
                let turn = (0..n).map(|i| (self.rr + i) % n).find(|&s| e(s));
                turn.filter(|&s| cs(s))
            }
            Policy::BestFit | Policy::Least => {
                let mut best: Option<usize> = None;
                for &s in &sched {
                    if best.is_none_or(|b| c[s].score < c[b].score) {
                        best = Some(s);
                    }
                }
                best
            }
            Policy::Priority => {
                let mut best: Option<usize> = None;
                for &s in &sched {
                    if best.is_none_or(|b| (c[s].prio, c[s].agev) > (c[b].prio, c[b].agev)) {
                        best = Some(s);
                    }
                }
                best
            }
        };
        (false, pick)
    }
}
