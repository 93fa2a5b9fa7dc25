//! The unit register by register (docs/cmdproc.md, "Timing"): its state,
//! a jump, and the cycle loop that runs the fetcher, the primitive unit,
//! the decoder and the output queue from the state at the start of each
//! cycle.

use super::packet::Packet;
use super::prim::Job;
use super::{Command, Outcome, Record, Registers, Status, Workload};
use gpurtl_params::cmdproc::{sh, Cause, CmdprocParams, Opcode};
use super::memory_image;
use crate::mem::Memory;
use std::collections::VecDeque;

/// A run longer than this is a bug of the model (the spec's machine always
/// ends): `run` panics rather than loop for ever.
const CYCLE_LIMIT: u64 = 1 << 28;

/// The whole unit, register by register (docs/cmdproc.md, "Timing").
pub(super) struct Sim<'a> {
    pub(super) p: &'a CmdprocParams,
    /// Memory as the unit reads it: the contents at the doorbell (writes
    /// do not change what the unit reads).
    pub(super) mem: Memory,
    pub(super) regs: &'a Registers,
    /// `F`, `BB`, `L`.
    pub(super) f: u32,
    pub(super) bb: u32,
    pub(super) lat: u64,

    // The instruction fetcher.
    pub(super) fa: u32,
    pub(super) fbeats: u64,
    pub(super) credits: u32,
    pub(super) inflight: u32,
    pub(super) drop: u32,
    pub(super) fetching: bool,
    /// Requests taken, not yet answered: (answer cycle, beat address).
    pub(super) answers: VecDeque<(u64, u32)>,
    pub(super) last_answer: u64,

    // The decoder.
    /// Beats in the pool (their addresses; memory is static).
    pub(super) pool: VecDeque<u32>,
    pub(super) pos: u32,
    pub(super) left: u32,
    pub(super) daddr: u32,
    pub(super) cur: Option<Packet>,
    /// Return stack: (byte address, left).
    pub(super) stack: Vec<(u32, u32)>,
    /// Index size in bytes (2 or 4).
    pub(super) index_size: u32,
    pub(super) next_id: u64,
    pub(super) finished: bool,
    pub(super) stopped: bool,

    // The output queue: its commands (indices into `commands`), oldest
    // first; an entry is a state reader when its command has a `state`.
    pub(super) queue: VecDeque<usize>,

    // The primitive unit.
    /// The jobs it holds, in commit order (at most `prim_jobs`).
    pub(super) jobs: VecDeque<Job>,
    /// The `seq` of the next job handed to it.
    pub(super) next_seq: u64,
    /// `prim_beats` at the doorbell, -1 a request taken, +1 a beat popped.
    pub(super) pcredits: u32,
    /// Primitive read requests not yet answered: (answer cycle, the `seq`
    /// of the job whose beat it is).
    pub(super) panswers: VecDeque<(u64, u64)>,
    pub(super) last_panswer: u64,

    // What the run gives.
    pub(super) table: Vec<u32>,
    /// The compute registers (`sh::REGS`, 0 at the doorbell; written only
    /// with `compute = true`).
    pub(super) sh: Vec<u32>,
    pub(super) commands: Vec<Command>,
    pub(super) trace: Vec<String>,
    pub(super) memory_writes: Vec<(u32, Vec<u32>)>,
    pub(super) error: Option<(Cause, u32)>,
}

impl<'a> Sim<'a> {
    fn new(p: &'a CmdprocParams, w: &'a Workload) -> Sim<'a> {
        let f = p.fetch_dwords();
        let regs = &w.registers;
        let table = (0..p.state_regs as usize).map(|i| regs.state.get(i).copied().unwrap_or(0)).collect();
        Sim {
            p,
            mem: memory_image(&w.memory),
            regs,
            f,
            bb: 4 * f,
            lat: w.mem_latency.max(1) as u64,
            fa: 0,
            fbeats: 0,
            credits: p.pool_beats,
            inflight: 0,
            drop: 0,
            fetching: false,
            answers: VecDeque::new(),
            last_answer: 0,
            pool: VecDeque::new(),
            pos: 0,
            left: 0,
            daddr: 0,
            cur: None,
            stack: Vec::new(),
            index_size: 4,
            next_id: 0,
            finished: false,
            stopped: false,
            queue: VecDeque::new(),
            jobs: VecDeque::new(),
            next_seq: 0,
            pcredits: p.prim_beats,
            panswers: VecDeque::new(),
            last_panswer: 0,
            table,
            sh: vec![0; sh::REGS],
            commands: Vec::new(),
            trace: Vec::new(),
            memory_writes: Vec::new(),
            error: None,
        }
    }

    /// A jump to a buffer of `s` dwords at byte address `a`, at an edge
    /// (after that edge's update of `inflight`).
    fn jump(&mut self, a: u32, s: u32) {
        let f = self.f;
        self.pool.clear();
        self.pos = (a / 4) % f;
        self.fa = a.wrapping_sub(4 * self.pos);
        // An empty buffer fetches nothing (the spec says so since reading 7).
        self.fbeats = if s == 0 { 0 } else { (self.pos as u64 + s as u64).div_ceil(f as u64) };
        self.left = s;
        self.daddr = a;
        self.cur = None;
        self.credits = self.p.pool_beats;
        self.drop = self.inflight;
        self.fetching = true;
    }
}

/// A `DISPATCH_DIRECT` command (its header's opcode).
fn is_dispatch(r: &Record) -> bool {
    Opcode::from_code((r.header >> 8) & 0xFF) == Some(Opcode::DispatchDirect)
}

/// The golden model: one run from a doorbell.
pub fn run(p: &CmdprocParams, w: &Workload) -> Outcome {
    let mut s = Sim::new(p, w);
    let mut ready = w.pipeline.stalls();
    // The doorbell edge: the jump to the main buffer.
    s.jump(w.registers.cmd_base, w.registers.cmd_size / 4);
    let mut c: u64 = 1;
    loop {
        // The end: at the start of the cycle.
        if (s.finished || s.stopped) && s.queue.is_empty() && s.jobs.is_empty() && s.inflight == 0 {
            break;
        }
        if crate::budget::over(c) {
            break;
        }
        // A model bug's guard, unless a run budget is in force (it decides).
        assert!(
            c <= CYCLE_LIMIT || crate::budget::limit() != u64::MAX,
            "cmdproc model: the run did not end within {CYCLE_LIMIT} cycles (runaway)"
        );
        // cmd_ready of this busy cycle: one draw a busy cycle.
        let cmd_ready = ready.ready();
        let q0 = s.queue.len() as u32;
        let jobs0 = s.jobs.len();
        let reader0 = s.queue.iter().any(|&i| s.commands[i].state.is_some());
        // The dispatch barrier (compute mode): a DISPATCH_DIRECT in the
        // queue at the start of the cycle (then it is the youngest entry).
        let dispatch0 = p.compute && s.queue.iter().any(|&i| is_dispatch(&s.commands[i].record));
        // The command presented on cmd_* (the oldest): when it is a state
        // reader, state_o (the table) is its state in this cycle.
        if let Some(&i) = s.queue.front() {
            if let Some(st) = &s.commands[i].state {
                assert!(
                    *st == s.table,
                    "cmdproc model: state_o is not the state of the reader #{} presented in cycle {c}",
                    s.commands[i].record.id
                );
            }
            // sh_o (compute mode): a dispatch's snapshot while it is
            // presented.
            if let Some(snap) = &s.commands[i].sh {
                assert!(
                    *snap == s.sh,
                    "cmdproc model: sh_o is not the snapshot of the dispatch #{} presented in cycle {c}",
                    s.commands[i].record.id
                );
            }
        }
        // The fetcher's request (from the state at the start of the cycle).
        if s.fetching && s.fbeats > 0 && s.credits > 0 {
            let at = (c + s.lat).max(s.last_answer + 1);
            s.last_answer = at;
            s.answers.push_back((at, s.fa));
            s.fa = s.fa.wrapping_add(s.bb);
            s.fbeats -= 1;
            s.credits -= 1;
            s.inflight += 1;
        }
        // The primitive unit (from the jobs it holds at the start of the
        // cycle; a job committed below is held from the next cycle).
        s.prim_cycle(c);
        // The decoder (reads the pool before this cycle's answer).
        let jump = s.decode(q0, jobs0, reader0, dispatch0);
        // The output queue: the oldest command (held at the start of the
        // cycle) leaves at the edge when cmd_ready; one committed in this
        // cycle is behind it.
        if q0 > 0 && cmd_ready {
            let i = s.queue.pop_front().unwrap();
            // kerr_i (compute mode): a DISPATCH_DIRECT leaving with a
            // listed id raises `kernel` at this edge, at its header
            // address; the decoder did nothing in this cycle (the
            // barrier), so it raised no error of its own.
            let r = &s.commands[i].record;
            if p.compute && is_dispatch(r) && w.pipeline.kerr_i(r.id) {
                assert!(
                    s.error.is_none() && s.queue.is_empty() && jump.is_none(),
                    "cmdproc model: the dispatch #{} left in cycle {c} with a decoder error, a jump or a command behind it (the barrier)",
                    r.id
                );
                s.error = Some((Cause::Kernel, r.addr));
                s.stopped = true;
                s.fetching = false;
            }
        }
        // The fetcher's answer of the cycle.
        if s.answers.front().map(|x| x.0) == Some(c) {
            let (_, beat) = s.answers.pop_front().unwrap();
            s.inflight -= 1;
            if s.drop > 0 {
                s.drop -= 1;
            } else {
                s.pool.push_back(beat);
            }
        }
        if let Some((a, left)) = jump {
            s.jump(a, left);
        }
        c += 1;
    }
    // The run's last busy cycle is the one in which the end holds.
    let cycles = c;
    let status = if s.error.is_some() { Status::Error } else { Status::Done };
    let irq_status = match status {
        Status::Done => gpurtl_params::cmdproc::reg::IRQ_DONE,
        Status::Error => gpurtl_params::cmdproc::reg::IRQ_ERROR,
    };
    Outcome {
        commands: s.commands,
        state_table: s.table,
        sh_table: p.compute.then_some(s.sh),
        status,
        error: s.error,
        irq: irq_status & w.registers.irq_enable != 0,
        memory_writes: s.memory_writes,
        trace: s.trace,
        cycles,
    }
}
