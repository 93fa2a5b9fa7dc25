//! Testbench for the generated constant-buffer load RTL, built from agents:
//! [`CbloadDriver`] (the view table, a register file with a synchronous
//! read port and a stallable write port, the instruction source on `in`
//! and the response sink on `rsp`) and a memory agent over one
//! [`Memory`] holding the views: a native responder on `mem_req`/`mem_rsp`
//! (in order, per-request latency, stalls on both handshakes), or, when the
//! design has an AXI4 master (`m_axi_arvalid`), the AXI4 slave on
//! `m_axi_*`. Results come back in the golden model's format.

use super::agents::{shared, Agent, AxiRandom, AxiSlave, Bench, Expect, MemRandom, NativePort, MemResponder, Pace, SharedMemory};
use super::agents::{StreamSink, StreamSource};
use super::{fail, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::mem::Memory;
use crate::models::cbload::{Instr, Offset, Outcome, Response, Workload};
use crate::rng::Rng;
use gpurtl_params::cbload::{CbloadParams, ErrorKind};
use num_bigint::BigUint;
use std::path::Path;

/// Randomized environment. Without one, the memory answers each request
/// exactly `mem_latency` cycles after it is taken and everything is ready.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    /// Latency of each request, uniform in this range (inclusive).
    pub latency: (u32, u32),
    /// Percent of cycles each party is not ready / holds back.
    pub in_stall: u32,
    pub mem_req_stall: u32,
    pub mem_rsp_stall: u32,
    pub rf_stall: u32,
    pub rsp_stall: u32,
}

/// The register file's ports and the view table's.
struct Ports {
    rf_re: PortHandle,
    rf_raddr: PortHandle,
    rf_rdata: PortHandle,
    rf_we: PortHandle,
    rf_wready: PortHandle,
    rf_waddr: PortHandle,
    rf_wdata: PortHandle,
    cfg_we: PortHandle,
    cfg_addr: PortHandle,
    cfg_wdata: PortHandle,
    oob: PortHandle,
    oob_tag: PortHandle,
}

/// Everything a cbload block needs besides memory, on the ports of a block
/// named `<prefix>...` (`""` for the block on its own): the view table,
/// the register file, the instructions in and the responses out.
pub struct CbloadDriver {
    name: String,
    p: Ports,
    regs: Vec<BigUint>,
    /// The register read last cycle: its value is on `rf_rdata_i` this one.
    read_reg: Option<usize>,
    rdata: u64,
    amask: u64,
    rf_pace: Pace,
    rf_ready: bool,
    rng: Rng,
    input: StreamSource,
    output: StreamSink,
}

impl CbloadDriver {
    pub fn new(sim: &Sim, prefix: &str, cfg: &CbloadParams, w: &Workload, env: Option<Env>) -> Result<CbloadDriver, CosimError> {
        let port = |name: &str| sim.port(&format!("{prefix}{name}"));
        let p = Ports {
            rf_re: port("rf_re_o")?,
            rf_raddr: port("rf_raddr_o")?,
            rf_rdata: port("rf_rdata_i")?,
            rf_we: port("rf_we_o")?,
            rf_wready: port("rf_wready_i")?,
            rf_waddr: port("rf_waddr_o")?,
            rf_wdata: port("rf_wdata_o")?,
            cfg_we: port("cfg_we_i")?,
            cfg_addr: port("cfg_addr_i")?,
            cfg_wdata: port("cfg_wdata_i")?,
            oob: port("oob_o")?,
            oob_tag: port("oob_tag_o")?,
        };
        let seed = env.map_or(0, |e| e.seed);
        let name = format!("{prefix}cbload");
        let mut rng = super::agents::agent_rng(seed, &name);
        let mut input = StreamSource::find(sim, &format!("{prefix}in"), &["dest", "view", "offset", "offset_is_reg", "offset_reg", "burst", "size", "tag"])?
            .seed(seed)
            .pace(Pace::random_or_steady(env.map(|e| e.in_stall)));
        for i in &w.instrs {
            // The offset field the instruction does not use gets junk.
            let (imm, is_reg, reg) = match i.offset {
                Offset::Imm(o) => (o, 0, rng.next_u64()),
                Offset::Reg(r) => (rng.next_u64(), 1, r as u64),
            };
            let item = input.fields().pack_u64(&[i.dest as u64, i.view as u64, imm, is_reg, reg, i.burst as u64, i.size as u64, i.tag as u64]);
            input.push(item);
        }
        let output = StreamSink::find(sim, &format!("{prefix}rsp"), &["tag", "error"])?
            .seed(seed)
            .pace(Pace::random_or_steady(env.map(|e| e.rsp_stall)))
            .expect(Expect::Items(w.instrs.len()));
        let mut regs = vec![BigUint::default(); cfg.regs as usize];
        for (r, v) in &w.init_regs {
            regs[*r as usize] = v.clone();
        }
        Ok(CbloadDriver {
            name,
            p,
            regs,
            read_reg: None,
            rdata: 0,
            amask: super::mask(cfg.addr_bits),
            rf_pace: Pace::random_or_steady(env.map(|e| e.rf_stall)),
            rf_ready: false,
            rng,
            input,
            output,
        })
    }

    /// Programs the view table, one write a cycle (before the bench runs).
    pub fn configure(&self, sim: &mut Sim, cfg: &CbloadParams, w: &Workload) {
        for v in 0..cfg.views {
            let (base, size) = w.views.get(v as usize).map_or((0, 0), |x| (x.base, x.size));
            for (k, val) in [(2 * v, base), (2 * v + 1, size)] {
                sim.set(self.p.cfg_we, 1);
                sim.set(self.p.cfg_addr, k as u64);
                sim.set(self.p.cfg_wdata, val);
                sim.eval();
                sim.tick();
            }
        }
        sim.set(self.p.cfg_we, 0);
    }

    /// The outcome once the bench has run: the registers, the responses,
    /// `oob_o` as the last edge left it, and the cycles from the first
    /// instruction taken to the last response.
    pub fn outcome(&self, sim: &mut Sim) -> Result<Outcome, CosimError> {
        let mut responses = Vec::with_capacity(self.output.items().len());
        for i in 0..self.output.items().len() {
            let code = self.output.field_u64(i, 1);
            let Some(error) = ErrorKind::from_code(code) else {
                let c = self.output.cycles()[i];
                return Err(fail(sim, format!("cycle {c}: response {i}: error code {code} is not defined")));
            };
            responses.push(Response { tag: self.output.field_u64(i, 0) as u32, error });
        }
        sim.eval();
        let oob = sim.get(self.p.oob) == 1;
        let oob_tag = oob.then(|| sim.get(self.p.oob_tag) as u32);
        let last_out = self.output.cycles().last().copied().unwrap_or(0);
        let cycles = self.input.taken().first().map_or(0, |f| last_out - f);
        Ok(Outcome { regs: self.regs.clone(), responses, oob, oob_tag, cycles })
    }
}

impl Agent for CbloadDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        if let Some(r) = self.read_reg.take() {
            let v = self.regs.get(r).cloned().unwrap_or_default() & BigUint::from(self.amask);
            self.rdata = v.iter_u64_digits().next().unwrap_or(0);
        }
        sim.set(self.p.rf_rdata, self.rdata);
        self.rf_ready = !self.rf_pace.stall(&mut self.rng, sim.cycle());
        sim.set(self.p.rf_wready, self.rf_ready as u64);
        self.input.drive(sim);
        self.output.drive(sim);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        self.input.sample(sim)?;
        self.output.sample(sim)?;
        // A read sees the write of the same edge (the value is read after it).
        self.read_reg = (sim.get(self.p.rf_re) == 1).then(|| sim.get(self.p.rf_raddr) as usize);
        if sim.get(self.p.rf_we) == 1 && self.rf_ready {
            let r = sim.get(self.p.rf_waddr) as usize;
            if r >= self.regs.len() {
                return Err(format!("register write to {r}, past the {} registers", self.regs.len()));
            }
            self.regs[r] = sim.get_big(self.p.rf_wdata);
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.input.done() && self.output.done()
    }

    fn waiting(&self) -> String {
        format!("instruction {}, response {}", self.input.waiting(), self.output.waiting())
    }

    fn progress(&self) -> u64 {
        self.input.progress() + self.output.progress()
    }
}

/// The views as one memory: a byte belongs to the first view whose data
/// holds it, zero elsewhere.
pub fn view_memory(w: &Workload) -> Memory {
    let mut m = Memory::new();
    // Later views first, so an earlier one wins where they overlap.
    for v in w.views.iter().rev() {
        m.load(v.base, &v.data);
    }
    m
}

/// The memory behind the block `<prefix>`: the AXI4 slave when the design
/// has `<prefix>m_axi_arvalid` (`mem_if=axi4`), else the native responder
/// on `<prefix>mem_req`/`<prefix>mem_rsp`. Without `env`, each request is
/// answered `latency` cycles after it is taken (through the AXI path: the
/// memory's latency less the path's, [`super::axi_latency`]).
pub fn memory_agent(sim: &Sim, prefix: &str, mem: SharedMemory, latency: u32, env: Option<Env>) -> Result<Box<dyn Agent>, CosimError> {
    if sim.port(&format!("{prefix}m_axi_arvalid")).is_ok() {
        let mut a = AxiSlave::new(sim, &format!("{prefix}m_axi_"), mem, super::axi_latency(latency))?;
        if let Some(e) = env {
            a = a.random(AxiRandom::even(e.seed, e.latency, e.mem_req_stall, e.mem_rsp_stall));
        }
        return Ok(Box::new(a));
    }
    let mut r = MemResponder::new(NativePort::master(sim, &format!("{prefix}mem"))?, mem, latency);
    if let Some(e) = env {
        r = r.random(MemRandom { seed: e.seed, latency: e.latency, req_stall: e.mem_req_stall, rsp_stall: e.mem_rsp_stall });
    }
    Ok(Box::new(r))
}

/// Run the workload through the RTL.
pub fn run(
    compiled: &Compiled,
    cfg: &CbloadParams,
    w: &Workload,
    env: Option<Env>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let mut driver = CbloadDriver::new(&sim, "", cfg, w, env)?;
    let mut memory = memory_agent(&sim, "", shared(view_memory(w)), w.mem_latency, env)?;

    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    driver.configure(&mut sim, cfg, w);
    let read_bytes = cfg.read_bits as u64 / 8;
    let total_beats: u64 = w.instrs.iter().map(|i| (if i.burst { i.size as u64 } else { cfg.reg_bits as u64 / 8 }) / read_bytes + 2).sum();
    let max_lat = env.map_or(w.mem_latency, |e| e.latency.1) as u64;
    let budget = 1000 + (total_beats + w.instrs.len() as u64) * (max_lat + 20);
    Bench::new(budget).run(&mut sim, &mut [&mut driver, &mut *memory])?;
    let outcome = driver.outcome(&mut sim)?;
    sim.trace_close();
    Ok((outcome, timer.stats(&sim)))
}

/// A random workload that reaches every path: bursts and single loads,
/// immediate and register offsets, partial last registers, reads past a
/// view's end, missing views, and every error kind.
pub fn random_workload(rng: &mut Rng, cfg: &CbloadParams, n: usize, mem_latency: u32) -> Workload {
    use crate::models::cbload::View;
    let rb = cfg.read_bits as u64 / 8;
    let gb = cfg.reg_bits as u64 / 8;
    let max_len = cfg.max_burst as u64 * gb;
    let amax = (1u64 << cfg.addr_bits) - 1;
    // Views live in disjoint regions of the address space.
    let region = (1u64 << (cfg.addr_bits - 4)) & !(rb - 1);
    let n_views = rng.below(cfg.views as u64 + 1) as usize;
    let views: Vec<View> = (0..n_views)
        .map(|v| {
            let size = match rng.below(4) {
                0 => rng.below(4 * rb),
                1 => rng.below(2 * max_len + 1),
                _ => rng.below(region.min(4 * max_len) + 1),
            }
            .min(region);
            let len = rng.below(size + 1) as usize;
            View { base: v as u64 * region, size, data: (0..len).map(|_| rng.below(256) as u8).collect() }
        })
        .collect();
    let reg_mask = (BigUint::from(1u8) << cfg.reg_bits) - 1u8;
    let init_regs = (0..rng.below(cfg.regs as u64 + 1))
        .map(|_| {
            let r = rng.below(cfg.regs as u64) as u32;
            let low = match rng.below(4) {
                0 => rng.next_u64() & amax,
                1 => rng.below(4 * max_len) | 1,
                _ => rng.below(4 * max_len) & !(rb - 1),
            };
            let high = BigUint::from(rng.next_u64()) << cfg.addr_bits;
            (r, (high | BigUint::from(low)) & &reg_mask)
        })
        .collect();
    let dest_lim = 1u64 << cfg.reg_index_bits();
    let view_lim = 1u64 << cfg.view_index_bits();
    let size_lim = 1u64 << (64 - max_len.leading_zeros());
    let instrs = (0..n)
        .map(|_| {
            let burst = rng.chance(60);
            let offset = if rng.chance(30) {
                Offset::Reg(rng.below(dest_lim) as u32)
            } else {
                Offset::Imm(match rng.below(10) {
                    0 => rng.next_u64() & amax,
                    1 => rng.below(4 * max_len) | 1,
                    _ => rng.below(2 * max_len) & !(rb - 1),
                })
            };
            Instr {
                dest: if rng.chance(20) { rng.below(dest_lim) } else { rng.below(cfg.regs as u64 / 2 + 1) } as u32,
                view: if rng.chance(10) { rng.below(view_lim) } else { rng.below(cfg.views as u64) } as u32,
                offset,
                burst,
                size: match rng.below(10) {
                    0 => 0,
                    1 => rng.below(size_lim),
                    2 => max_len,
                    _ => 1 + rng.below(max_len.min(8 * gb)),
                } as u32,
                tag: rng.below(1 << cfg.tag_bits) as u32,
            }
        })
        .collect();
    Workload { mem_latency, views, init_regs, instrs }
}
