//! Testbench for the generated command processor front end
//! (docs/cmdproc.md), built from agents: [`CmdprocDriver`] (the host on
//! the AXI4-Lite slave, programming the registers and ringing the doorbell
//! the way a driver does; sinks with back-pressure on the write, pipeline
//! and primitive ports; and a monitor that checks, cycle by cycle, every
//! promise of the document it can see from the ports) and the memory
//! agents of [`memory_agents`] over one [`Memory`] holding the workload's
//! dword runs ([`memory_image`]): in-order native responders with
//! per-request latency and stalls on `imem` and `pmem`, or, when the design
//! has an AXI4 master (`mem_if=axi4`), the AXI4 slave on `m_axi_*`, whose
//! write log gives the run's writes. Results come back in the golden
//! model's format.
//!
//! Files: `driver.rs` (the driver agent and its phases), `host.rs` (the
//! AXI4-Lite host side: register programming and the register checks),
//! `checks.rs` (the port checks and the outcome), `random.rs` (random
//! workloads and the walk of a workload's buffers); here, the environment,
//! the memory and running workloads.

mod checks;
mod driver;
mod host;
mod random;

pub use driver::CmdprocDriver;
pub use random::{random_workload, WRITES};

use super::agents::{shared, Agent, AxiRandom, AxiSlave, Bench, MemRandom, MemResponder, MemWatch, NativePort, SharedMemory, WriteLog};
use super::{LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::mem::Memory;
use crate::models::cmdproc::{Outcome, Record, Workload};
use gpurtl_params::cmdproc::{CmdprocParams, Opcode};
use random::walk;
use std::path::Path;

/// Randomized environment. Without one (what `gpurtl run` uses) the memory
/// answers a request taken in cycle `c` exactly in cycle
/// `max(c + mem_latency, previous answer + 1)`, the write, pipeline and
/// primitive ports are always ready and the AXI master drives its
/// transactions back to back: the timing the model's `cycles` describes.
/// With one, everything but `cycles` must be the same.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    /// Seeds the stalls, the delays and the order of the register writes.
    pub seed: u64,
    /// Latency of each read request, uniform in this range (inclusive; at
    /// least 1); answers stay in request order, one a cycle per port.
    /// Through AXI4: each burst's, less the 3 cycles of the arbiter and the
    /// bridge ([`crate::tb::axi_latency`]), with AR readiness from
    /// `imem_req_stall`, R gaps from `imem_rsp_stall`, AW and W readiness
    /// from `wr_stall`, B gaps from `pmem_rsp_stall`, and the two fetchers'
    /// bursts reordered.
    pub latency: (u32, u32),
    /// Percent of cycles `imem_req_ready_i` is low.
    pub imem_req_stall: u32,
    /// Percent of cycles an instruction answer that is due is held back.
    pub imem_rsp_stall: u32,
    /// Percent of cycles `pmem_req_ready_i` is low.
    pub pmem_req_stall: u32,
    /// Percent of cycles a primitive answer that is due is held back.
    pub pmem_rsp_stall: u32,
    /// Percent of cycles `wr_ready_i` is low.
    pub wr_stall: u32,
    /// Percent of cycles `cmd_ready_i` is low.
    pub cmd_stall: u32,
    /// Percent of cycles `prim_ready_i` is low.
    pub prim_stall: u32,
    /// AXI master: the chance (percent) of each further cycle of delay
    /// before a transaction, between its address and data valids, and of
    /// `bready` / `rready` being low in a cycle.
    pub axi_stall: u32,
}

impl Env {
    pub(super) fn worst_stall(&self) -> u32 {
        [
            self.imem_req_stall,
            self.imem_rsp_stall,
            self.pmem_req_stall,
            self.pmem_rsp_stall,
            self.wr_stall,
            self.cmd_stall,
            self.prim_stall,
            self.axi_stall,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}


/// The fields of a command record (`cmd_*` or `trace_*`).
#[derive(Clone)]
pub(crate) struct RecPorts {
    id: PortHandle,
    addr: PortHandle,
    header: PortHandle,
    count: PortHandle,
    /// p0..p3, and p4, p5 in compute mode.
    p: Vec<PortHandle>,
}

impl RecPorts {
    pub(crate) fn find(s: &Sim, name: &str) -> Result<RecPorts, CosimError> {
        let f = |field: &str| s.port(&format!("{name}_{field}_o"));
        Ok(RecPorts {
            id: f("id")?,
            addr: f("addr")?,
            header: f("header")?,
            count: f("count")?,
            p: (0..6).map_while(|k| f(&format!("p{k}")).ok()).collect(),
        })
    }
    pub(crate) fn read(&self, s: &Sim) -> Record {
        Record {
            id: s.get(self.id) as u32,
            addr: s.get(self.addr) as u32,
            header: s.get(self.header) as u32,
            count: s.get(self.count) as u32,
            p: std::array::from_fn(|k| self.p.get(k).map_or(0, |h| s.get(*h) as u32)),
        }
    }
}

fn bit(sim: &Sim, h: PortHandle) -> bool {
    sim.get(h) == 1
}

fn op_of(header: u32) -> Option<Opcode> {
    Opcode::from_code((header >> 8) & 0xFF)
}

/// A workload the testbench can run: aligned memory runs, `STATE_INIT`
/// values that fit the table.
fn check_workload(p: &CmdprocParams, w: &Workload) -> Result<(), String> {
    if w.registers.state.len() > p.state_regs as usize {
        return Err(format!("{} STATE_INIT values for {} registers", w.registers.state.len(), p.state_regs));
    }
    match w.memory.iter().position(|(a, _)| a % 4 != 0) {
        Some(i) => Err(format!("memory[{i}] starts at 0x{:08x}, not a multiple of 4", w.memory[i].0)),
        None => Ok(()),
    }
}

/// The run's memory at the doorbell: the workload's dword runs
/// (little-endian, a run's dword `i` at `(addr + 4i) mod 2^32`), zero
/// elsewhere.
pub fn memory_image(p: &CmdprocParams, w: &Workload) -> Memory {
    let _ = p;
    crate::models::cmdproc::memory_image(&w.memory)
}

/// The memory behind the unit `<prefix>`, over `mem`: the AXI4 slave on
/// `<prefix>m_axi_*` when the design has `<prefix>m_axi_arvalid`
/// (`mem_if=axi4`; deterministic latency [`super::axi_latency`] of the
/// workload's), else the native responders on `<prefix>imem` and
/// `<prefix>pmem` (whose response ready must always be 1). Each agent with
/// the name and lag its [`CmdprocDriver::watch`] takes, and the AXI4
/// slave's write log for [`CmdprocDriver::write_log`].
pub fn memory_agents(sim: &Sim, prefix: &str, latency: u32, mem: SharedMemory, env: Option<Env>) -> Result<(Vec<MemoryAgent>, Option<WriteLog>), CosimError> {
    let axi = format!("{prefix}m_axi_");
    if sim.port(&format!("{axi}arvalid")).is_ok() {
        let lat = super::axi_latency(latency);
        let mut a = AxiSlave::new(sim, &axi, mem, lat)?;
        if let Some(e) = env {
            let (lo, hi) = (super::axi_latency(e.latency.0.max(1)), super::axi_latency(e.latency.1.max(1)));
            a = a.random(AxiRandom {
                seed: e.seed,
                latency: (lo, hi.max(lo)),
                ar_stall: e.imem_req_stall,
                aw_stall: e.wr_stall,
                w_stall: e.wr_stall,
                r_gap: e.imem_rsp_stall,
                b_gap: e.pmem_rsp_stall,
            });
        }
        let (watch, log) = (a.watch(), a.write_log());
        return Ok((vec![MemoryAgent { agent: Box::new(a), watch, name: axi, lag: 1 }], Some(log)));
    }
    let mut agents = Vec::new();
    for (port, req) in [("imem", Env::imem_stalls as fn(&Env) -> (u32, u32)), ("pmem", Env::pmem_stalls)] {
        let mut r = MemResponder::new(NativePort::master(sim, &format!("{prefix}{port}"))?, mem.clone(), latency.max(1)).rsp_always_ready();
        if let Some(e) = env {
            let (req_stall, rsp_stall) = req(&e);
            r = r.random(MemRandom { seed: e.seed, latency: (e.latency.0.max(1), e.latency.1.max(e.latency.0.max(1))), req_stall, rsp_stall });
        }
        let watch = r.watch();
        agents.push(MemoryAgent { agent: Box::new(r), watch, name: port.to_string(), lag: 0 });
    }
    Ok((agents, None))
}

/// A memory agent and what [`CmdprocDriver::watch`] takes of it.
pub struct MemoryAgent {
    pub agent: Box<dyn Agent>,
    pub watch: MemWatch,
    pub name: String,
    /// Cycles from the memory's answer to the unit's.
    pub lag: u64,
}

impl Env {
    fn imem_stalls(&self) -> (u32, u32) {
        (self.imem_req_stall, self.imem_rsp_stall)
    }
    fn pmem_stalls(&self) -> (u32, u32) {
        (self.pmem_req_stall, self.pmem_rsp_stall)
    }
}

/// Give up on a run after this many cycles from its doorbell: generous for
/// what its buffers hold (every dword, index and jump at the worst latency,
/// slowed by the worst stall).
pub(super) fn run_limit(p: &CmdprocParams, w: &Workload, env: Option<Env>) -> u64 {
    let k = walk(p, w);
    let lat = env.map_or(w.mem_latency, |e| e.latency.0.max(e.latency.1)).max(1) as u64;
    let slow = 100 / (100 - env.map_or(0, |e| e.worst_stall()).min(95) as u64) + 1;
    let units = k.dwords + k.indices + 2 * k.packets + 4 * k.jumps + 16;
    (2_000 + 2 * units * (lat + 8)).saturating_mul(slow)
}

/// Run the workload through the RTL: [`run_many`] of one workload.
pub fn run(
    compiled: &Compiled,
    p: &CmdprocParams,
    w: &Workload,
    env: Option<Env>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let (mut o, stats) = run_many(compiled, p, std::slice::from_ref(w), env, false, vcd)?;
    Ok((o.remove(0), stats))
}

/// Run the workloads one after the other in one simulation, reset once:
/// for each, load its memory image, program the registers over AXI (in a
/// random order under an environment), clear `IRQ_STATUS`, read some back,
/// ring the doorbell and serve the ports until `busy_o` has risen and
/// fallen, then read the result registers. With `extra_doorbells`, a few
/// more doorbells are rung while `busy_o` is 1; `IGNORED` must count them.
/// Every promise of docs/cmdproc.md visible at the ports is checked; the
/// first violation ends the simulation with an error (and a complete
/// waveform in `vcd`).
pub fn run_many(
    compiled: &Compiled,
    p: &CmdprocParams,
    ws: &[Workload],
    env: Option<Env>,
    extra_doorbells: bool,
    vcd: Option<&Path>,
) -> Result<(Vec<Outcome>, RunStats), CosimError> {
    for (i, w) in ws.iter().enumerate() {
        check_workload(p, w).map_err(|m| CosimError::Io(format!("workload {i}: {m}")))?;
    }
    let Some(first) = ws.first() else { return Err(CosimError::Io("no workload".into())) };
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let mem = shared(memory_image(p, first));
    let mut driver = CmdprocDriver::new(&sim, "", p, first, env)?.extra_doorbells(extra_doorbells);
    let (mut memory, log) = memory_agents(&sim, "", first.mem_latency, mem.clone(), env)?;
    for m in &memory {
        driver = driver.watch(&m.name, m.watch.clone(), m.lag);
    }
    if let Some(log) = log {
        driver = driver.write_log(log, 0);
    }
    for h in sim.compiled().ports().iter().filter(|s| s.dir == crate::cosim::PortDir::Input).map(|s| s.name.clone()).collect::<Vec<_>>() {
        let h = sim.port(&h)?;
        sim.set_words(h, &[]);
    }
    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    let mut out = Vec::with_capacity(ws.len());
    for (i, w) in ws.iter().enumerate() {
        if i > 0 {
            *mem.borrow_mut() = memory_image(p, w);
            driver.next_workload(&sim, w)?;
        }
        let budget = driver.budget();
        let mut agents: Vec<&mut dyn Agent> = vec![&mut driver];
        agents.extend(memory.iter_mut().map(|m| &mut *m.agent as &mut dyn Agent));
        Bench::new(budget).run(&mut sim, &mut agents)?;
        out.push(driver.outcome(&mut sim)?);
    }
    sim.trace_close();
    Ok((out, timer.stats(&sim)))
}
