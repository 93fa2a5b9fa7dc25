//! Testbench for the integrated top (docs/gpu.md): an AXI4-Lite host that
//! programs every listed queue and rings its doorbell, waits until the top
//! is idle and reads the registers back; the AXI4 slave memory on
//! `m_axi_*`; watchers on the trace ports and the kernel and unit pulses.
//! Results come back in the golden model's format, cycles the RTL's own.

use super::agents::{shared, Agent, AxiRandom, AxiSlave, Bench, LiteMaster, LiteOp};
use super::cmdproc::RecPorts;
use super::{LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::cmdproc::pm4::trace_line_mode;
use crate::models::gpu::{Counters, KernelRecord, Outcome, QueueStatus, Run};
use gpurtl_params::cmdproc::{reg as qreg, Cause, Opcode};
use gpurtl_params::gpu::reg;
use gpurtl_params::gpu::GpuParams;
use std::path::Path;

/// Randomized environment: AXI latency, ready and gaps; host timing.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    pub latency: (u32, u32),
    /// Percent of cycles an AXI ready is low (AR, AW, W) or a due response
    /// is held (R, B).
    pub stall: u32,
    /// Percent chance of each cycle of host delay.
    pub host: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Writing the queues' registers and doorbells.
    Program,
    /// Waiting for the top to be idle.
    Run,
    /// Reading the registers back.
    Read,
    Done,
}

/// The host, the watchers and the result.
pub struct GpuDriver {
    host: LiteMaster,
    queues: usize,
    phase: Phase,
    /// Writes and reads owed a response.
    owed: usize,
    /// The first doorbell's handshake.
    t0: Option<u64>,
    busy: PortHandle,
    irq: PortHandle,
    ksub: PortHandle,
    kstart: PortHandle,
    kend: PortHandle,
    retire: PortHandle,
    cpl: PortHandle,
    /// The per-unit timeline: `dsp_o`, `dsp_queue_o`, `dsp_share_o`,
    /// `cpl_share_o`; the blocks running (unit, share) -> (queue, start),
    /// and the finished bars.
    dsp: [PortHandle; 4],
    running: std::collections::HashMap<(u32, u32), (u32, u64)>,
    bars: Vec<Bar>,
    trace_valid: Vec<PortHandle>,
    trace: Vec<RecPorts>,
    /// Per queue: its trace lines, its dispatch records (addr, blocks), the
    /// cycles of its kernels' pulses.
    lines: Vec<Vec<String>>,
    dispatches: Vec<Vec<(u32, u64)>>,
    sub_at: Vec<Vec<u64>>,
    start_at: Vec<Vec<u64>>,
    end_at: Vec<Vec<u64>>,
    instructions: u64,
    blocks: u64,
    regs: Vec<(u64, u64)>,
    end: u64,
    irq_end: bool,
    progress: u64,
}

impl GpuDriver {
    pub fn new(sim: &Sim, p: &GpuParams, r: &Run, env: Option<Env>) -> Result<GpuDriver, CosimError> {
        let mut host = LiteMaster::new(sim, "s_axi_")?;
        if let Some(e) = env {
            host = host.random(e.seed, e.host);
        }
        let n = r.queues.len();
        let mut top_irq = 0u64;
        for (q, qi) in r.queues.iter().enumerate() {
            let w = |off: u32, data: u64| LiteOp::Write { addr: off as u64, data, strb: 0xF };
            host.push(w(reg::top(q, reg::PRIORITY), qi.priority as u64));
            host.push(w(reg::queue(q, qreg::CMD_BASE), qi.cmd_base as u64));
            host.push(w(reg::queue(q, qreg::CMD_SIZE), qi.cmd_size as u64));
            host.push(w(reg::queue(q, qreg::IRQ_ENABLE), qreg::IRQ_ERROR as u64));
            top_irq |= 3 << (2 * q);
        }
        host.push(LiteOp::Write { addr: reg::IRQ_ENABLE as u64, data: top_irq, strb: 0xF });
        for q in 0..n {
            host.push(LiteOp::Write { addr: reg::queue(q, qreg::DOORBELL) as u64, data: 1, strb: 0xF });
        }
        let port = |s: &str| sim.port(s);
        let mut trace_valid = Vec::new();
        let mut trace = Vec::new();
        for q in 0..p.queues as usize {
            trace_valid.push(port(&format!("q{q}_trace_valid_o"))?);
            trace.push(RecPorts::find(sim, &format!("q{q}_trace"))?);
        }
        let owed = 5 * n + 1;
        Ok(GpuDriver {
            host,
            queues: n,
            phase: Phase::Program,
            owed,
            t0: None,
            busy: port("busy_o")?,
            irq: port("irq_o")?,
            ksub: port("ksub_o")?,
            kstart: port("kstart_o")?,
            kend: port("kend_o")?,
            retire: port("retire_o")?,
            cpl: port("cpl_o")?,
            dsp: [port("dsp_o")?, port("dsp_queue_o")?, port("dsp_share_o")?, port("cpl_share_o")?],
            running: Default::default(),
            bars: Vec::new(),
            trace_valid,
            trace,
            lines: vec![Vec::new(); n],
            dispatches: vec![Vec::new(); n],
            sub_at: vec![Vec::new(); n],
            start_at: vec![Vec::new(); n],
            end_at: vec![Vec::new(); n],
            instructions: 0,
            blocks: 0,
            regs: Vec::new(),
            end: 0,
            irq_end: false,
            progress: 0,
        })
    }

    fn rel(&self, now: u64) -> u64 {
        now - self.t0.unwrap_or(now)
    }

    /// The outcome (memory filled in by [`run`]).
    fn outcome(&self) -> Result<Outcome, String> {
        let read = |a: u32| self.regs.iter().find(|(x, _)| *x == a as u64).map(|(_, v)| *v).ok_or_else(|| format!("register 0x{a:03x} was not read"));
        let mut kernels = Vec::new();
        let mut status = Vec::new();
        let mut k = Counters { instructions: self.instructions, blocks: self.blocks, ..Counters::default() };
        for q in 0..self.queues {
            let (d, s, st, e) = (&self.dispatches[q], &self.sub_at[q], &self.start_at[q], &self.end_at[q]);
            if s.len() != d.len() || e.len() != d.len() || st.len() != d.len() {
                return Err(format!(
                    "queue {q}: {} dispatches of blocks in its trace, but {} kernels submitted, {} started and {} completed",
                    d.len(),
                    s.len(),
                    st.len(),
                    e.len()
                ));
            }
            for (i, (addr, blocks)) in d.iter().enumerate() {
                kernels.push(KernelRecord { queue: q as u32, addr: *addr, blocks: *blocks, submit: Some(s[i]), start: Some(st[i]), end: Some(e[i]) });
            }
            let qs = read(reg::queue(q, qreg::STATUS))? as u32;
            let cause = read(reg::queue(q, qreg::ERR_CAUSE))? as u32;
            let error = match cause {
                0 => None,
                c => Some((Cause::from_code(c).map_or_else(|| format!("cause {c}"), |c| c.name().to_string()), read(reg::queue(q, qreg::ERR_ADDR))? as u32)),
            };
            let t = |off: u32| reg::top(q, off);
            let qst = QueueStatus {
                queue: q as u32,
                done: qs & qreg::STATUS_DONE != 0,
                error,
                fences: read(t(reg::FENCES))? as u32,
                kernels: read(t(reg::KERNELS))? as u32,
                kerr_mask: read(t(reg::KERR_MASK))? as u32,
                kerr_addr: read(t(reg::KERR_ADDR))? as u32,
                kerr_blocks: read(t(reg::KERR_BLOCKS))? as u32,
            };
            k.commands += read(reg::queue(q, qreg::CMD_COUNT))?;
            k.kernels += qst.kernels as u64;
            k.failed_blocks += qst.kerr_blocks as u64;
            k.fences += qst.fences as u64;
            status.push(qst);
        }
        let trace = self.lines.iter().enumerate().map(|(q, l)| (q as u32, l.clone())).collect();
        Ok(Outcome {
            memory: crate::mem::Memory::default(),
            kernels,
            trace,
            status,
            irq: self.irq_end,
            counters: k,
            cycles: Some(self.end),
        })
    }
}

fn bits(v: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |i| v >> i & 1 == 1)
}

impl Agent for GpuDriver {
    fn name(&self) -> &str {
        "gpu host"
    }

    fn drive(&mut self, sim: &mut Sim) {
        self.host.drive(sim);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        self.host.sample(sim)?;
        let now = sim.cycle();
        let ev = self.host.events();
        if let Some((addr, ..)) = ev.write {
            if self.t0.is_none() && addr % reg::QUEUE as u64 == qreg::DOORBELL as u64 && addr < reg::TOP as u64 {
                self.t0 = Some(now);
            }
        }
        if ev.response.is_some() || ev.data.is_some() {
            self.owed -= 1;
            self.progress += 1;
        }
        for (a, v) in self.host.take_results() {
            self.regs.push((a, v));
        }
        // Watchers.
        for q in 0..self.trace.len() {
            if sim.get(self.trace_valid[q]) == 1 {
                let r = self.trace[q].read(sim);
                if q >= self.queues {
                    return Err(format!("queue {q} was not programmed, yet traces a command"));
                }
                self.lines[q].push(trace_line_mode(&r, true));
                let x = r.p[0] as u64 * r.p[1] as u64 * r.p[2] as u64;
                if Opcode::from_code((r.header >> 8) & 0xFF) == Some(Opcode::DispatchDirect) && x > 0 {
                    self.dispatches[q].push((r.addr, x));
                }
                self.progress += 1;
            }
        }
        let rel = self.rel(now);
        for (port, list) in [(self.ksub, 0), (self.kstart, 1), (self.kend, 2)] {
            for q in bits(sim.get(port)) {
                if q >= self.queues {
                    return Err(format!("a kernel pulse of queue {q}, which was not programmed"));
                }
                [&mut self.sub_at, &mut self.start_at, &mut self.end_at][list][q].push(rel);
                self.progress += 1;
            }
        }
        self.instructions += sim.get(self.retire).count_ones() as u64;
        let cpl = sim.get(self.cpl);
        self.blocks += cpl.count_ones() as u64;
        // The timeline: a block ends on its (unit, share), another may start
        // there in the same cycle.
        for u in bits(cpl) {
            let share = sim.get(self.dsp[3]) as u32;
            let (queue, start) = self.running.remove(&(u as u32, share)).ok_or_else(|| format!("a completion on unit {u}, share {share}, which runs no block"))?;
            self.bars.push(Bar { queue, unit: u as u32, share, start, end: rel });
        }
        for u in bits(sim.get(self.dsp[0])) {
            let (queue, share) = (sim.get(self.dsp[1]) as u32, sim.get(self.dsp[2]) as u32);
            if self.running.insert((u as u32, share), (queue, rel)).is_some() {
                return Err(format!("a block dispatched to unit {u}, share {share}, which runs one"));
            }
        }
        match self.phase {
            Phase::Program if self.owed == 0 => {
                self.phase = Phase::Run;
            }
            Phase::Run if sim.get(self.busy) == 0 => {
                self.end = rel;
                self.irq_end = sim.get(self.irq) == 1;
                for q in 0..self.queues {
                    for off in [qreg::STATUS, qreg::ERR_CAUSE, qreg::ERR_ADDR, qreg::CMD_COUNT] {
                        self.host.push(LiteOp::Read { addr: reg::queue(q, off) as u64 });
                    }
                    for off in [reg::FENCES, reg::KERNELS, reg::KERR_MASK, reg::KERR_ADDR, reg::KERR_BLOCKS] {
                        self.host.push(LiteOp::Read { addr: reg::top(q, off) as u64 });
                    }
                }
                self.owed = 9 * self.queues;
                self.phase = Phase::Read;
            }
            Phase::Read if self.owed == 0 => self.phase = Phase::Done,
            _ => {}
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    fn waiting(&self) -> String {
        match self.phase {
            Phase::Program => format!("programming the queues: {} register writes owed a response", self.owed),
            Phase::Run => "the top to be idle (busy_o low)".to_string(),
            Phase::Read => format!("reading the registers back: {} owed", self.owed),
            Phase::Done => "nothing".to_string(),
        }
    }

    fn progress(&self) -> u64 {
        self.progress + self.instructions + self.blocks
    }
}

/// The cycle budget of a run: generous, a hang is reported by the quiet
/// watch first.
pub fn budget(_p: &GpuParams, _r: &Run) -> u64 {
    1 << 26
}

/// One block on the per-unit timeline: dispatched to `unit`'s `share` in
/// cycle `start`, completed in cycle `end` (both from the first doorbell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    pub queue: u32,
    pub unit: u32,
    pub share: u32,
    pub start: u64,
    pub end: u64,
}

/// The AXI4 port's traffic over a run: bursts and beats on each side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub ar: u64,
    pub r: u64,
    pub aw: u64,
    pub w: u64,
}

/// Run `r` through the RTL within `budget` cycles.
pub fn run(compiled: &Compiled, p: &GpuParams, r: &Run, env: Option<Env>, budget: u64, vcd: Option<&Path>) -> Result<(Outcome, RunStats), CosimError> {
    run_traffic(compiled, p, r, env, budget, vcd).map(|(o, s, _)| (o, s))
}

/// [`run`], with the AXI4 port's traffic.
pub fn run_traffic(compiled: &Compiled, p: &GpuParams, r: &Run, env: Option<Env>, budget: u64, vcd: Option<&Path>) -> Result<(Outcome, RunStats, Traffic), CosimError> {
    run_timeline(compiled, p, r, env, budget, vcd).map(|(o, s, t, _)| (o, s, t))
}

/// [`run_traffic`], with the per-unit timeline: every block's bar, in the
/// order they completed.
pub fn run_timeline(
    compiled: &Compiled,
    p: &GpuParams,
    r: &Run,
    env: Option<Env>,
    budget: u64,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats, Traffic, Vec<Bar>), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    sim.reset(rst, 2);
    let mem = shared(r.memory.clone());
    let mut driver = GpuDriver::new(&sim, p, r, env)?;
    let mut axi = AxiSlave::new(&sim, "m_axi_", mem.clone(), super::axi_latency(r.mem.latency))?;
    if let Some(e) = env {
        axi = axi.random(AxiRandom::even(e.seed, e.latency, e.stall, e.stall));
    }
    let traffic = std::rc::Rc::new(std::cell::RefCell::new(Traffic::default()));
    let t = traffic.clone();
    let h = |n: &str| sim.port(&format!("m_axi_{n}"));
    let hs: Vec<(PortHandle, PortHandle)> =
        [("arvalid", "arready"), ("rvalid", "rready"), ("awvalid", "awready"), ("wvalid", "wready")].iter().map(|(v, r)| Ok((h(v)?, h(r)?))).collect::<Result<_, CosimError>>()?;
    let mut monitor = super::agents::Monitor::new("axi traffic", move |sim| {
        let fire: Vec<u64> = hs.iter().map(|(v, r)| (sim.get(*v) == 1 && sim.get(*r) == 1) as u64).collect();
        let mut t = t.borrow_mut();
        t.ar += fire[0];
        t.r += fire[1];
        t.aw += fire[2];
        t.w += fire[3];
        Ok(())
    });
    let timer = LoopTimer::start(&sim);
    Bench::new(budget).quiet(200_000).run(&mut sim, &mut [&mut driver, &mut axi, &mut monitor])?;
    let stats = timer.stats(&sim);
    let mut o = driver.outcome().map_err(|m| super::fail(&mut sim, m))?;
    sim.trace_close();
    o.memory = mem.borrow().clone();
    let t = *traffic.borrow();
    if !driver.running.is_empty() {
        return Err(CosimError::Mismatch(format!("{} blocks were dispatched but never completed", driver.running.len())));
    }
    Ok((o, stats, t, driver.bars))
}

/// The example kernels (examples/cu/), with their per-block registers and
/// scratchpad bytes (the sidecars' `regs` and `smem_bytes`).
const KERNELS: [(&str, &str, u32, u32); 4] = [
    ("copy2d", include_str!("../../../examples/cu/copy2d.s"), 16, 32),
    ("compress", include_str!("../../../examples/cu/compress.s"), 32, 1024),
    ("gemm", include_str!("../../../examples/cu/gemm.s"), 32, 5184),
    ("conv", include_str!("../../../examples/cu/conv.s"), 32, 8192),
];
/// Where the programs are: kernel `i` at `PROGRAMS + 0x800 i`; a program
/// of undefined instructions (every block fails with `opcode`) after them.
const PROGRAMS: u32 = 0x8000;
const BAD_PROGRAM: u32 = PROGRAMS + 0x800 * 4;

/// A random run of the top (docs/gpu.md): 1..`queues` queues, each a ring
/// of 1..4 kernels of the example kinds that fit the units (`copy2d`,
/// `compress`, `gemm`, `conv`) at random sizes on their own data, or one
/// whose blocks all fail; `SET_SH_REG`s with random thread and register
/// splits of the need, `WRITE_DATA`s and fences of every `DATA_SEL` and
/// `INT_SEL`, empty dispatches, `NOP`s, and now and then a draw or an
/// `sh_range` packet that stops the queue. Every output region, fence and
/// `WRITE_DATA` address is dumped.
pub fn random_run(rng: &mut crate::rng::Rng, p: &GpuParams) -> Run {
    use crate::mem::Memory;
    use crate::models::cu::Region;
    use crate::models::gpu::{MemTiming, QueueInput};
    let cp = p.cmdproc();
    let mut mem = Memory::default();
    let mut dump = Vec::new();
    // Instructions of each kernel, as placed.
    let mut lengths = Vec::new();
    for (i, (_, text, _, _)) in KERNELS.iter().enumerate() {
        let words = crate::models::cu::isa::assemble(text).expect("the example kernels assemble");
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        mem.write(PROGRAMS as u64 + 0x800 * i as u64, &bytes);
        lengths.push(words.len() as u32);
    }
    mem.write(BAD_PROGRAM as u64, &vec![0xFF; 8 * p.cu.imem_depth as usize]);
    let fits: Vec<usize> = (0..KERNELS.len())
        .filter(|&i| KERNELS[i].2 <= cp.max_regs && KERNELS[i].3 <= cp.max_smem && (i != 3 || p.cu.tex) && lengths[i] <= p.cu.imem_depth)
        .collect();
    let nq = 1 + rng.below(p.queues as u64) as usize;
    let mut queues = Vec::new();
    let bytes_of = |rng: &mut crate::rng::Rng, n: usize, zeros: u64| -> Vec<u8> {
        (0..n).map(|_| if rng.chance(zeros as u32) { 0 } else { rng.below(256) as u8 }).collect()
    };
    for q in 0..nq {
        let mut lines: Vec<String> = Vec::new();
        let kernels = 1 + rng.below(4) as usize;
        for k in 0..kernels {
            let base = 0x10_0000 * (q as u32 + 1) + 0x1_0000 * k as u32;
            let (inp, out) = (base, base + 0x8000);
            if rng.chance(15) {
                lines.push(format!("NOP payload={}", rng.below(1000)));
            }
            // The kernel: its program, need, grid and user data.
            let bad = fits.is_empty() || rng.chance(10);
            let kind = if bad { usize::MAX } else { fits[rng.below(fits.len() as u64) as usize] };
            let (prog, regs, smem) = if bad { (BAD_PROGRAM, 16, 512) } else { (PROGRAMS + 0x800 * kind as u32, KERNELS[kind].2, KERNELS[kind].3) };
            let (grid, args): ([u32; 3], Vec<u32>) = match kind {
                0 => {
                    let (w, h) = (1 + rng.below(40) as u32, 1 + rng.below(20) as u32);
                    let (tw, th) = ([4, 8][rng.below(2) as usize], [2, 4][rng.below(2) as usize]);
                    let img = bytes_of(rng, (w * h) as usize, 0);
                    mem.write(inp as u64, &img);
                    dump.push(Region { addr: out, bytes: w * h });
                    ([w.div_ceil(tw), h.div_ceil(th), 1], vec![inp, out, w, h, tw, th])
                }
                1 => {
                    let n = 1 + rng.below(200) as u32;
                    let eb = [8, 16, 32][rng.below(3) as usize];
                    let src = bytes_of(rng, (n * eb / 8) as usize, 50);
                    mem.write(inp as u64, &src);
                    let (dense, masks, counts) = (out, out + 0x1000, out + 0x2000);
                    let blocks = n.div_ceil(64);
                    dump.push(Region { addr: dense, bytes: n * eb / 8 + 8 });
                    dump.push(Region { addr: masks, bytes: blocks * 8 + 4 });
                    dump.push(Region { addr: counts, bytes: 4 * blocks });
                    ([blocks, 1, 1], vec![inp, n, dense, masks, counts, eb])
                }
                2 => {
                    let (m, n, kk) = (1 + rng.below(24) as u32, 1 + rng.below(24) as u32, 1 + rng.below(40) as u32);
                    let (a, b_, bias) = (inp, inp + 0x2000, inp + 0x4000);
                    let a_ = bytes_of(rng, (m * kk) as usize, 20);
                    let bb = bytes_of(rng, (kk * n) as usize, 20);
                    mem.write(a as u64, &a_);
                    mem.write(b_ as u64, &bb);
                    let with_bias = rng.chance(50);
                    if with_bias {
                        let bv = bytes_of(rng, (4 * n) as usize, 0);
                        mem.write(bias as u64, &bv);
                    }
                    dump.push(Region { addr: out, bytes: 4 * m * n });
                    ([n.div_ceil(16), m.div_ceil(16), 1], vec![a, b_, out, if with_bias { bias } else { 0 }, m, n, kk, rng.below(2) as u32])
                }
                3 => {
                    let (w, h) = (4 + rng.below(21) as u32, 4 + rng.below(9) as u32);
                    let (kw, kh) = (1 + rng.below(4) as u32, 1 + rng.below(4) as u32);
                    let img = bytes_of(rng, (w * h) as usize, 10);
                    let wts = bytes_of(rng, (kw * kh) as usize, 10);
                    mem.write(inp as u64, &img);
                    mem.write(inp as u64 + 0x4000, &wts);
                    dump.push(Region { addr: out, bytes: 4 * w * h });
                    ([w.div_ceil(16), h.div_ceil(8), 1], vec![inp, out, w, h, inp + 0x4000, kw, kh, rng.below(3) as u32])
                }
                _ => ([1 + rng.below(4) as u32, 1 + rng.below(2) as u32, 1], vec![]),
            };
            // The need: R = T * 4 * (VGPRS + 1) = regs, M = 512 * LDS_SIZE >= smem.
            let vg = [0u32, 1, 3].into_iter().filter(|v| regs % (4 * (v + 1)) == 0).collect::<Vec<_>>();
            let v = vg[rng.below(vg.len() as u64) as usize];
            let t = regs / (4 * (v + 1));
            let lds = smem.div_ceil(512);
            lines.push(format!("SET_SH_REG reg=COMPUTE_PGM_LO values={},0", prog >> 8));
            lines.push(format!("SET_SH_REG reg=COMPUTE_PGM_RSRC1 values={v},{}", lds << 15));
            lines.push(format!("SET_SH_REG reg=COMPUTE_NUM_THREAD_X values={t},1,1"));
            if !args.is_empty() {
                let list: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                lines.push(format!("SET_SH_REG reg=COMPUTE_USER_DATA_0 values={}", list.join(",")));
            }
            if rng.chance(10) {
                lines.push("DISPATCH_DIRECT x=0 y=3 z=1 initiator=1".to_string());
            }
            lines.push(format!("DISPATCH_DIRECT x={} y={} z={} initiator=1", grid[0], grid[1], grid[2]));
            // A SET_SH_REG right behind it must not change it.
            if rng.chance(30) {
                lines.push(format!("SET_SH_REG reg=COMPUTE_PGM_LO values={},0", BAD_PROGRAM >> 8));
            }
            if rng.chance(40) {
                let a = 0x6_0000 + 0x400 * q as u32 + 16 * k as u32;
                let n = 1 + rng.below(3) as u32;
                let d: Vec<String> = (0..n).map(|_| rng.below(1 << 32).to_string()).collect();
                lines.push(format!("WRITE_DATA control=0 addr={a} data={}", d.join(",")));
                dump.push(Region { addr: a, bytes: 4 * n });
            }
            if rng.chance(60) {
                let a = 0x5_0000 + 0x400 * q as u32 + 8 * k as u32;
                let ds = rng.below(3);
                let is = rng.below(4);
                lines.push(format!("RELEASE_MEM event=0x514 data_sel={ds} int_sel={is} addr={a} data={},{}", rng.below(1 << 32), rng.below(1 << 32)));
                dump.push(Region { addr: a, bytes: 8 });
            }
        }
        if rng.chance(8) {
            lines.push(if rng.chance(50) { "DRAW_INDEX_AUTO count=3 initiator=0".to_string() } else { "SET_SH_REG reg=0xB800 values=1".to_string() });
            lines.push("NOP".to_string());
        }
        let dwords = crate::models::cmdproc::pm4::assemble(&lines.join("\n")).unwrap_or_else(|e| panic!("the random ring assembles: {e:?}\n{}", lines.join("\n")));
        let ring = 0x1000 * (q as u32 + 1);
        assert!(dwords.len() * 4 <= 0x1000, "a ring fits its 4 KiB");
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        mem.write(ring as u64, &bytes);
        queues.push(QueueInput { cmd_base: ring, cmd_size: 4 * dwords.len() as u32, priority: rng.below(4) as u32 });
    }
    Run { queues, memory: mem, dump, mem: MemTiming { latency: 1 + rng.below(30) as u32, stall: 0.0, seed: rng.next_u64() } }
}
