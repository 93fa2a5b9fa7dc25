//! Golden model of the resource-table kernel scheduler, written from
//! `docs/scheduler.md` only.
//!
//! [`run`] plays the spec's eight per-cycle rules ("In each cycle t, all at
//! once") literally: at the start of every cycle the whole state is copied,
//! every rule reads the copy (the state at the start of the cycle) and writes
//! its changes into the next state, so that "decided in cycle t, visible from
//! cycle t+1" holds by construction. The environment of the spec (source,
//! dispatch and rejection sinks, the SM stand-in) is played in the same loop.
//! The only departure from a plain cycle loop is
//! [`Sim::idle_until`](timing::Sim::idle_until): long stretches where
//! provably nothing but the ages changes (e.g. waiting for a `submit` cycle
//! up to 10^9, or for a block of duration 10^6) are skipped; a test checks
//! that skipping gives the same trace as not skipping.
//!
//! Timing of one kernel alone (spec "Timing summary"), submission transfer at t:
//!
//! ```text
//! t    submission transfer (sub_q loaded)
//! t+1  enqueued (cnt, pend += 1)
//! t+2  comparator sees the head          -> elig_q, sched_q
//! t+3  pick                              -> pick_v, pick_s
//! t+4  load into the dispatcher          -> cur_v
//! t+5  first blocks decided              -> FIFO record, free -= need
//! t+6  dispatch transfer (dsp_valid_o)   -> the blocks start on their SMs
//! t+6+D+x completion (port always ready, W lanes per cycle)
//! ```
//!
//! Spec readings (ambiguities resolved by the most literal reading; to be
//! settled in the doc):
//!
//! 1. Load ignores `blocked`: the spec's Load condition is only `!cur_v`,
//!    `pick_v`, `open(pick_s)`. A `pick_v` registered before the block began
//!    can load a kernel in a blocked cycle; it is released the next cycle.
//!    Picks are registered from comparator registers a cycle old, read
//!    through the dispatcher's state (spec step 2, `e(s)`, `c(s)`): a stream
//!    picked in cycle t was in the dispatcher neither at the start of t-1
//!    (the comparator's state) nor of t, so the head loaded in t+1 is the
//!    one the comparator saw; the table may have changed since (the
//!    decision then releases it if nothing fits).
//! 2. A bad submission waits if `rej_q` is valid at the start of the cycle,
//!    even when `rej_q` transfers out in that same cycle.
//! 3. Source: kernel i is offered from the first cycle `c >= submit_i`,
//!    `c > (transfer cycle of kernel i-1)`, whose source stall draw is false;
//!    once offered it is held (no further draws) until it transfers.
//! 4. `age[s] <- 0` tests `open(s)` on the start-of-cycle state; "the head
//!    moved" is a flag (with Q = 1, `dptr + 1 mod Q` equals `dptr`). An age
//!    keeps counting while its head is in the dispatcher, partly dispatched
//!    or released: only a move or a closed stream resets it.
//! 5. Output `makespan`: "the first submission's cycle" is the first
//!    submission transfer of any kernel, rejected ones included.
//! 6. Output `wait`: `ready` = the later of `submitted` and the predecessor's
//!    `last_dispatch` (`dispatch`) / `finish` (`complete`); the predecessor
//!    is the previous *accepted* kernel of the same stream in input order.
//! 7. Output `kernels[]` entries carry `id` (as in the example, though the
//!    field list does not name it); `worst_wait` is 0 without accepted kernels.
//! 8. The example output's `utilization` (all 0.0) does not follow the
//!    formula: for that example it would be threads 0.1128, regs 0.1128,
//!    smem 0.2256, slots 0.0564 (245760/2179072 etc.). The formula is used.
//!    The example's blocks 4..7 go on SM 1 (SM 0 holds 4 blocks of 16384 B
//!    of shared memory), which the example does not show.
//! 9. Input: `kernels` is required (it "may be empty"); every violation of
//!    every kernel is reported (no per-list cap), in the order: object,
//!    unknown keys, id, stream, blocks, threads, regs, smem, duration,
//!    priority, submit; a repeated id is reported at the later kernel; the
//!    100,000-block total comes last (sum of the well-formed `blocks`).
//! 10. [`run`] takes a workload whose fields fit their ports (what
//!     [`parse_input`] checks, except that `stream >= streams` is allowed
//!     and rejected as the spec's bad submission).
//!
//! Files: `env.rs` (the environment's draws), `state.rs` (the spec's state,
//! its definitions, the comparator and the pick), `timing.rs` (the cycle
//! loop), `check.rs` (trace checks independent of the scheduling rules),
//! `io.rs` (input and output files); here, the workload and trace types
//! and `run`.

mod check;
mod env;
mod io;
mod state;
mod timing;
#[cfg(test)]
mod tests;

pub use check::check_trace;
pub use env::{draw, Env, WHAT_DSP, WHAT_EXTRA, WHAT_REJ, WHAT_SRC};
pub use io::{output_json, parse_input};

use gpurtl_params::scheduler::SchedulerParams;
use timing::simulate;

/// One kernel of a workload (docs/scheduler.md "`gpurtl run scheduler`").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub id: u64,
    pub stream: u32,
    pub blocks: u32,
    pub threads: u32,
    pub regs: u32,
    pub smem: u32,
    pub duration: u64,
    pub priority: u32,
    pub submit: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub kernels: Vec<Kernel>,
}

/// Most blocks a workload may hold in all (spec input rules).
pub const MAX_BLOCKS: u64 = 100_000;
/// Largest `duration` of a kernel.
pub const MAX_DURATION: u64 = 1_000_000;
/// Largest `submit` cycle of a kernel.
pub const MAX_SUBMIT: u64 = 1_000_000_000;

/// One block's dispatch or completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockEvent {
    pub cycle: u64,
    /// The kernel's id.
    pub kernel: u64,
    pub block: u32,
    pub sm: u32,
}

/// Everything observable at the ports, in port order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Trace {
    /// (cycle, kernel id) of each submission transfer, in order.
    pub submissions: Vec<(u64, u64)>,
    /// (cycle, kernel id) of each rejection transfer, in order.
    pub rejections: Vec<(u64, u64)>,
    /// One per block, in dispatch-port order (cycle, then lane).
    pub dispatches: Vec<BlockEvent>,
    /// One per block, in completion order (cycle, then lane).
    pub completions: Vec<BlockEvent>,
}

/// The spec's **bad** submission: `stream >= S`, or `blocks == 0`, or a
/// per-block need above an SM's capacity (a block that fits no SM, even an
/// empty one).
pub fn is_bad(p: &SchedulerParams, k: &Kernel) -> bool {
    k.stream >= p.streams || k.blocks == 0 || k.threads > p.sm_threads || k.regs > p.sm_regs || k.smem > p.sm_smem
}

/// Cycle-exact simulation of the spec's rules with the environment; until
/// every kernel is rejected or has completed all its blocks. Cycle 0 = first
/// cycle after reset.
pub fn run(p: &SchedulerParams, w: &Workload, env: &Env) -> Trace {
    for (name, pct) in [("src", env.src_stall_pct), ("dsp", env.dsp_stall_pct), ("rej", env.rej_stall_pct)] {
        assert!(pct < 100, "scheduler model: {name}_stall_pct {pct} would stall forever");
    }
    simulate(p, w, env, true)
}
