//! The command processor's driver agent: the host on the AXI4-Lite slave,
//! sinks on the pipeline, primitive and (native) write ports, the trace
//! monitor, and the phases of a workload (program, ring, run, read back).

use super::host::ReadCtx;
use super::{bit, run_limit, Env, RecPorts};
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::mem::Memory;
use crate::models::cmdproc::{memory_image, Outcome, PipelineStall, Record, Workload};
use crate::rng::Rng;
use crate::tb::agents::{agent_rng, Agent, LiteMaster, MemWatch, Pace, StreamSink, WriteLog};
use crate::tb::fail;
use gpurtl_params::cmdproc::{reg, CmdprocParams, Opcode};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// `cmd_ready` from the workload's `"pipeline"` draws, one per busy cycle
/// (docs/cmdproc.md, "`gpurtl run cmdproc`"): what the driver shares with
/// the pipeline sink's pace. Without an environment only.
#[derive(Default)]
pub(super) struct PipeDraws {
    /// `busy_o` in the cycle being driven.
    pub(super) busy: bool,
    /// The run's generator (none: always ready).
    pub(super) stalls: Option<PipelineStall>,
}

impl PipeDraws {
    /// Whether `cmd_ready` is low in this cycle; draws once if busy.
    fn stall(&mut self) -> bool {
        match (&mut self.stalls, self.busy) {
            (Some(s), true) => !s.ready(),
            _ => false,
        }
    }
}

/// The unit's ports the driver reads and drives itself (the streams are
/// its sinks', the register slave's the master's).
pub(super) struct Ports {
    pub(super) awvalid: PortHandle,
    pub(super) awready: PortHandle,
    pub(super) wvalid: PortHandle,
    pub(super) wready: PortHandle,
    pub(super) bvalid: PortHandle,
    pub(super) arready: PortHandle,
    pub(super) rvalid: PortHandle,
    pub(super) trace_valid: PortHandle,
    pub(super) trace: RecPorts,
    pub(super) state: PortHandle,
    /// `sh_o` (compute mode).
    pub(super) sh: Option<PortHandle>,
    pub(super) busy: PortHandle,
    pub(super) irq: PortHandle,
    /// Compute mode: `kerr_i`, and `cmd_valid_o` / `cmd_id_o` that say
    /// which command it speaks for.
    pub(super) kerr: Option<(PortHandle, PortHandle, PortHandle)>,
    /// Valids that must stay low while `busy_o` is 0: the streams', and the
    /// memory requests' under the prefix (native `imem`/`pmem`, or AXI4).
    pub(super) activity: Vec<(PortHandle, String)>,
}

impl Ports {
    fn find(s: &Sim, prefix: &str) -> Result<Ports, CosimError> {
        let port = |name: &str| s.port(&format!("{prefix}{name}"));
        let mut activity = Vec::new();
        for name in ["trace_valid_o", "cmd_valid_o", "prim_valid_o", "wr_valid_o", "imem_req_valid_o", "pmem_req_valid_o", "m_axi_arvalid", "m_axi_awvalid", "m_axi_wvalid"] {
            if let Ok(h) = port(name) {
                activity.push((h, name.to_string()));
            }
        }
        Ok(Ports {
            awvalid: port("s_axi_awvalid")?,
            awready: port("s_axi_awready")?,
            wvalid: port("s_axi_wvalid")?,
            wready: port("s_axi_wready")?,
            bvalid: port("s_axi_bvalid")?,
            arready: port("s_axi_arready")?,
            rvalid: port("s_axi_rvalid")?,
            trace_valid: port("trace_valid_o")?,
            trace: RecPorts::find(s, &format!("{prefix}trace"))?,
            state: port("state_o")?,
            sh: port("sh_o").ok(),
            busy: port("busy_o")?,
            irq: port("irq_o")?,
            kerr: match port("kerr_i") {
                Ok(k) => Some((k, port("cmd_valid_o")?, port("cmd_id_o")?)),
                Err(_) => None,
            },
            activity,
        })
    }
}

/// A draw whose indices are due on the primitive port.
pub(super) struct Draw {
    /// Its trace record's position.
    pub(super) k: usize,
    pub(super) s: u32,
    pub(super) o: u32,
    pub(super) m: u32,
}

/// What one run showed on the ports, from its doorbell on.
#[derive(Default)]
pub(super) struct RunObs {
    pub(super) doorbell: u64,
    pub(super) ended: bool,
    pub(super) busy_cycles: u64,
    pub(super) prim_base: u32,
    pub(super) prim_size: u32,
    pub(super) state_ptr: u32,
    /// `STATE_INIT` at the doorbell, as `state_o` words.
    pub(super) init: Vec<u32>,
    pub(super) traces: Vec<Record>,
    pub(super) cmds: Vec<Record>,
    /// Per command, a state reader's `state_o` in the cycle it left, and
    /// a dispatch's `sh_o` (compute mode).
    pub(super) states: Vec<Option<Vec<u32>>>,
    pub(super) snapshots: Vec<Option<Vec<u32>>>,
    /// Per trace record, the indices taken so far.
    pub(super) prims: Vec<Vec<u32>>,
    pub(super) draws: VecDeque<Draw>,
    pub(super) index_size: u32,
    pub(super) writes: Vec<(u32, Vec<u32>)>,
    pub(super) write_open: bool,
    pub(super) write_cmds: usize,
}

/// Where a workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Programming the registers (and reading some back).
    Program,
    /// The doorbell rung: until `busy_o` has risen and fallen.
    Run { runs0: u64 },
    /// The transactions queued during the run, to their end.
    During,
    /// Reading the result registers.
    Finals,
    Done,
}

/// Drives a command processor whose ports are named `<prefix>...` (`""`
/// for the unit on its own) through one workload at a time, the way a
/// driver does: programs the registers over the AXI4-Lite slave
/// `<prefix>s_axi_*` (in a random order, with random strobes and writes
/// that must change nothing, under an environment), rings the doorbell
/// (and, with [`CmdprocDriver::extra_doorbells`], more while busy), takes
/// the commands, indices and (native) writes with back-pressure, then
/// reads the result registers. Checks, cycle by cycle, every promise of
/// docs/cmdproc.md it can see from the ports; the memory's side of them
/// (nothing in flight when `busy_o` falls) through the memory agents'
/// [`MemWatch`]es given with [`CmdprocDriver::watch`].
pub struct CmdprocDriver {
    pub(super) name: String,
    pub(super) p: CmdprocParams,
    pub(super) env: Option<Env>,
    /// Orders, picks and the doorbell strobes.
    pub(super) rng: Rng,
    /// Junk in values that must not matter.
    pub(super) junk: Rng,
    pub(super) io: Ports,
    pub(super) host: LiteMaster,
    cmd: StreamSink,
    pub(super) pipe: Rc<RefCell<PipeDraws>>,
    prim: StreamSink,
    pub(super) wr: Option<StreamSink>,
    pub(super) watches: Vec<(String, MemWatch, u64)>,
    /// Through AXI4: the slave's write log and the address the unit's 0 is at.
    pub(super) log: Option<(WriteLog, u64)>,
    /// The log's length at the doorbell.
    pub(super) log_at: usize,
    /// The workload, and its memory as at the doorbell (what every check reads).
    pub(super) w: Workload,
    pub(super) mem: Memory,
    pub(super) extra: bool,
    phase: Phase,
    /// The cycle the phase began.
    since: u64,
    results: Vec<(u64, u64)>,
    /// The `rw` registers as written, by offset / 4.
    pub(super) shadow: Vec<u32>,
    /// `IGNORED` as it must be.
    pub(super) ignored: u64,
    pub(super) prev_busy: bool,
    /// `busy_o` must rise in this cycle (the one after a doorbell).
    pub(super) start_at: Option<u64>,
    pub(super) runs: u64,
    pub(super) run: RunObs,
    pub(super) r_ctx: Option<ReadCtx>,
    /// The workload being run (for messages).
    which: usize,
}

impl CmdprocDriver {
    /// The driver for workload `w`. Its memory image must be in the memory
    /// the memory agents serve ([`super::memory_image`]) when the bench runs.
    pub fn new(sim: &Sim, prefix: &str, p: &CmdprocParams, w: &Workload, env: Option<Env>) -> Result<CmdprocDriver, CosimError> {
        super::check_workload(p, w).map_err(CosimError::Io)?;
        let seed = env.map_or(0, |e| e.seed);
        let name = format!("{prefix}cmdproc");
        let mut host = LiteMaster::new(sim, &format!("{prefix}s_axi_"))?;
        if let Some(e) = env {
            host = host.random(seed, e.axi_stall);
        }
        let pace = |pct: fn(&Env) -> u32| Pace::random_or_steady(env.map(|e| pct(&e)));
        let sink = |stream: &str, fields: &[&str], pace: Pace| -> Result<StreamSink, CosimError> {
            Ok(StreamSink::find(sim, &format!("{prefix}{stream}"), fields)?.seed(seed).pace(pace))
        };
        // The pipeline port: the environment's random stalls, or else the
        // workload's `"pipeline"` draws.
        let pipe = Rc::new(RefCell::new(PipeDraws::default()));
        let cmd_pace = match env {
            Some(e) => Pace::random_or_steady(Some(e.cmd_stall)),
            None => {
                let pipe = pipe.clone();
                Pace::Pattern(Box::new(move |_| pipe.borrow_mut().stall()))
            }
        };
        let cmd_fields: &[&str] = if p.compute {
            &["id", "addr", "header", "count", "p0", "p1", "p2", "p3", "p4", "p5", "state_ptr"]
        } else {
            &["id", "addr", "header", "count", "p0", "p1", "p2", "p3", "state_ptr"]
        };
        let cmd = sink("cmd", cmd_fields, cmd_pace)?;
        let prim = sink("prim", &["id", "index", "last"], pace(|e| e.prim_stall))?;
        let wr = match sim.port(&format!("{prefix}wr_valid_o")) {
            Ok(_) => Some(sink("wr", &["addr", "data", "last"], pace(|e| e.wr_stall))?),
            Err(_) => None,
        };
        let mut d = CmdprocDriver {
            rng: agent_rng(seed, &name),
            junk: agent_rng(seed, &format!("{name} junk")),
            name,
            p: p.clone(),
            env,
            io: Ports::find(sim, prefix)?,
            host,
            cmd,
            pipe,
            prim,
            wr,
            watches: Vec::new(),
            log: None,
            log_at: 0,
            w: w.clone(),
            mem: memory_image(&w.memory),
            extra: false,
            phase: Phase::Program,
            since: sim.cycle(),
            results: Vec::new(),
            shadow: vec![0; (reg::STATE_INIT / 4 + p.state_regs) as usize],
            ignored: 0,
            prev_busy: false,
            start_at: None,
            runs: 0,
            run: RunObs::default(),
            r_ctx: None,
            which: 0,
        };
        d.program();
        Ok(d)
    }

    /// Rings a few more doorbells while `busy_o` is 1 (`IGNORED` must count
    /// them); set before the bench runs. Not through AXI4 (no `wr` port):
    /// there `busy_o` stays 1 while the writes are answered after the unit
    /// is idle, when a doorbell starts a run.
    pub fn extra_doorbells(mut self, on: bool) -> CmdprocDriver {
        self.extra = on && self.wr.is_some();
        self
    }

    /// A memory agent's watch: when `busy_o` falls, nothing of `name` may
    /// be in flight, and no answer may have reached the unit in its last
    /// busy cycle (`lag`: cycles from the memory's answer to the unit's, 0
    /// native, 1 through the AXI4 bridge). Put the driver before the memory
    /// agents on the bench (it reads their state as of the cycle before).
    pub fn watch(mut self, name: &str, watch: MemWatch, lag: u64) -> CmdprocDriver {
        self.watches.push((name.to_string(), watch, lag));
        self
    }

    /// Through AXI4 (no `wr` port): the outcome's `memory_writes` from the
    /// slave's log, the unit's address 0 at `base` of the slave's.
    pub fn write_log(mut self, log: WriteLog, base: u64) -> CmdprocDriver {
        self.log = Some((log, base));
        self
    }

    /// After the bench has run one workload to its end: the next one (its
    /// memory image loaded by the caller). The unit keeps its registers.
    pub fn next_workload(&mut self, sim: &Sim, w: &Workload) -> Result<(), CosimError> {
        super::check_workload(&self.p, w).map_err(CosimError::Io)?;
        self.w = w.clone();
        self.mem = memory_image(&w.memory);
        self.which += 1;
        self.phase = Phase::Program;
        self.since = sim.cycle();
        self.program();
        Ok(())
    }

    /// Cycles the workload may take at the most on the bench: each phase's
    /// limit (the run's from what its buffers hold, at the worst latency
    /// and stall).
    pub fn budget(&self) -> u64 {
        let axi = |ops: u64| 500 + 200 * (ops + 1);
        axi(self.host.queued() as u64) + run_limit(&self.p, &self.w, self.env) + axi(8) + axi(16)
    }

    /// The workload's outcome once the bench has run it to the end: the
    /// result registers as read, `irq_o` and `state_o` as the last edge
    /// left them, and what the ports showed.
    pub fn outcome(&self, sim: &mut Sim) -> Result<Outcome, CosimError> {
        let val = |a: u32| self.results.iter().find(|(x, _)| *x == a as u64).map_or(0, |r| r.1 as u32);
        sim.eval();
        let irq = sim.get(self.io.irq) == 1;
        let state_table = sim.words(self.io.state).to_vec();
        let sh_table = self.io.sh.map(|h| sim.words(h).to_vec());
        let regs = [reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IRQ_STATUS].map(val);
        self.outcome_of(regs, irq, state_table, sh_table).map_err(|m| {
            let m = format!("{}: workload {}, cycle {}: {m}", self.name, self.which, sim.cycle());
            fail(sim, m)
        })
    }

    /// Phase changes at the end of a cycle's sample.
    fn advance(&mut self, now: u64) -> Result<(), String> {
        loop {
            let next = match self.phase {
                Phase::Program if self.host.idle() => {
                    let irq_status = self.host.take_results().last().map_or(0, |r| r.1);
                    if irq_status != 0 {
                        return Err(format!("IRQ_STATUS is {irq_status} after writing 1s to clear it"));
                    }
                    let runs0 = self.runs;
                    self.ring();
                    Phase::Run { runs0 }
                }
                Phase::Run { runs0 } if self.runs > runs0 && self.run.ended => Phase::During,
                Phase::During if self.host.idle() => {
                    self.host.take_results();
                    self.read_results();
                    Phase::Finals
                }
                Phase::Finals if self.host.idle() => {
                    self.results = self.host.take_results();
                    Phase::Done
                }
                _ => return Ok(()),
            };
            self.phase = next;
            self.since = now;
        }
    }

    fn on_cycle(&mut self, sim: &Sim) -> Result<(), String> {
        let io = &self.io;
        let now = sim.cycle();
        let busy = bit(sim, io.busy);
        self.track_busy(sim, now, busy)?;
        if !busy {
            if let Some((_, name)) = self.io.activity.iter().find(|(h, _)| bit(sim, *h)) {
                return Err(format!("{name} is 1 while busy_o is 0"));
            }
        }
        if bit(sim, self.io.trace_valid) {
            let r = self.io.trace.read(sim);
            self.on_trace(r)?;
        }
        let k = self.cmd.items().len();
        self.cmd.sample(sim)?;
        if self.cmd.items().len() > k {
            let f = |i| self.cmd.field_u64(k, i) as u32;
            let np = if self.p.compute { 6 } else { 4 };
            let r = Record { id: f(0), addr: f(1), header: f(2), count: f(3), p: std::array::from_fn(|k| if k < np { f(4 + k) } else { 0 }) };
            let sp = f(4 + np);
            // A state reader's state (and in compute mode a dispatch's
            // snapshot): `state_o` (`sh_o`) in the cycle it leaves.
            let op = super::op_of(r.header);
            let state = op.is_some_and(|o| o.reads_state()).then(|| sim.words(self.io.state).to_vec());
            let snap = match (op, self.io.sh) {
                (Some(Opcode::DispatchDirect), Some(h)) => Some(sim.words(h).to_vec()),
                _ => None,
            };
            self.on_cmd(r, sp, state, snap)?;
        }
        let k = self.prim.items().len();
        self.prim.sample(sim)?;
        if self.prim.items().len() > k {
            let (id, index, last) = (self.prim.field_u64(k, 0) as u32, self.prim.field_u64(k, 1) as u32, self.prim.field_u64(k, 2) == 1);
            self.on_prim(id, index, last)?;
        }
        if let Some(wr) = &mut self.wr {
            let k = wr.items().len();
            wr.sample(sim)?;
            if wr.items().len() > k {
                let (addr, data, last) = (wr.field_u64(k, 0) as u32, wr.field_u64(k, 1) as u32, wr.field_u64(k, 2) == 1);
                self.on_write(addr, data, last)?;
            }
        }
        self.check_slave(sim)?;
        self.host.sample(sim)?;
        self.host_events(sim, now, busy)?;
        self.advance(now)
    }
}

impl Agent for CmdprocDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        // Both are registers: their values for this cycle are already out.
        let busy = bit(sim, self.io.busy);
        let gate = busy && !bit(sim, self.io.bvalid);
        self.host.gate(gate);
        self.host.drive(sim);
        self.pipe.borrow_mut().busy = busy;
        // kerr_i: 1 while a command the workload's `pipeline.kerr` lists is
        // presented (docs/cmdproc.md, "`gpurtl run cmdproc`").
        if let Some((kerr, valid, id)) = self.io.kerr {
            let listed = bit(sim, valid) && self.w.pipeline.kerr.contains(&(sim.get(id) as u16));
            sim.set(kerr, listed as u64);
        }
        self.cmd.drive(sim);
        self.prim.drive(sim);
        if let Some(wr) = &mut self.wr {
            wr.drive(sim);
        }
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let which = self.which;
        self.on_cycle(sim).map_err(|m| format!("workload {which}: {m}"))
    }

    fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    fn waiting(&self) -> String {
        let o = &self.run;
        let what = match self.phase {
            Phase::Program => "programming the registers".to_string(),
            Phase::Run { .. } => format!(
                "the run to end: busy_o {}, {} commands committed, {} left the pipeline port, {} draws waiting for indices, {} write entries",
                self.prev_busy as u8,
                o.traces.len(),
                o.cmds.len(),
                o.draws.len(),
                o.writes.len(),
            ),
            Phase::During => "the transactions during the run".to_string(),
            Phase::Finals => "reading the results".to_string(),
            Phase::Done => "nothing".to_string(),
        };
        format!("workload {}: {what} (since cycle {}; AXI4-Lite: {})", self.which, self.since, self.host.waiting())
    }

    fn progress(&self) -> u64 {
        self.host.progress() + self.cmd.progress() + self.prim.progress() + self.wr.as_ref().map_or(0, |w| w.progress()) + self.run.busy_cycles
    }
}
