//! Testbench for the generated compute unit (docs/cu.md), built from agents
//! over one [`Memory`]: a native responder on each of the unit's memory
//! ports (`ifetch`, `cdl`, `dma_rd`, `dma_wr`), or with `mem_if = axi4` the
//! AXI4 slave on `m_axi_*`, and [`CuDriver`], which
//! plays the run's dispatcher (docs/cu.md, "`gpurtl run cu`": shares, the
//! lowest free one, the tag = the share), takes completions and records the
//! retire port as the trace. Results come back in the golden model's format.

use super::agents::{shared, Agent, AxiRandom, AxiSlave, Bench, MemRandom, MemResponder, Monitor, NativePort, Pace};
use super::{fail, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::cu::{BlockResult, Counters, Outcome, Retire, Run};
use crate::rng::Rng;
use gpurtl_params::cu::{CuParams, Status};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// Randomized environment: per-request memory latency and stalls on every
/// handshake. Without one, each memory port answers `mem_latency` cycles
/// after a request and everything is ready.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    pub latency: (u32, u32),
    /// Percent of cycles a memory port's request ready is low.
    pub req_stall: u32,
    /// Percent of cycles a due memory answer is held back.
    pub rsp_stall: u32,
    /// Percent of cycles the dispatcher holds a dispatch back.
    pub dsp_stall: u32,
    /// Percent of cycles the completion ready is low.
    pub cpl_stall: u32,
}

struct Ports {
    dsp_valid: PortHandle,
    dsp_ready: PortHandle,
    dsp: [PortHandle; 10],
    cpl_valid: PortHandle,
    cpl_ready: PortHandle,
    cpl: [PortHandle; 7],
    retire_valid: PortHandle,
    retire_slot: PortHandle,
    retire_pc: PortHandle,
    retire_insn: PortHandle,
}

/// What the driver saw: blocks in dispatch order, the trace, each trace
/// entry's block (its dispatch index), the run's cycles.
struct Finished {
    blocks: Vec<BlockResult>,
    trace: Vec<Retire>,
    trace_block: Vec<usize>,
    cycles: u64,
}

/// The dispatcher, the completion sink and the retire watcher.
pub struct CuDriver {
    p: Ports,
    run: Run,
    shares: Vec<Option<usize>>,
    next: usize,
    offered: Option<(usize, u32)>,
    dsp_pace: Pace,
    cpl_pace: Pace,
    cpl_ready: bool,
    tag_bits: u32,
    rng: Rng,
    c0: u64,
    dispatched: Vec<(u32, u64)>,
    results: Vec<Option<BlockResult>>,
    trace: Vec<Retire>,
    /// The block (dispatch index) of each trace entry.
    trace_block: Vec<usize>,
    progress: u64,
}

impl CuDriver {
    pub fn new(sim: &Sim, p: &CuParams, run: &Run, env: Option<Env>) -> Result<CuDriver, CosimError> {
        let port = |n: &str| sim.port(n);
        let dsp_f = ["prog", "x", "y", "z", "user", "smem_base", "smem_size", "reg_base", "reg_count", "tag"];
        let cpl_f = ["tag", "slot", "x", "y", "z", "status", "pc"];
        let mut dsp = Vec::new();
        for f in dsp_f {
            dsp.push(port(&format!("dsp_{f}_i"))?);
        }
        let mut cpl = Vec::new();
        for f in cpl_f {
            cpl.push(port(&format!("cpl_{f}_o"))?);
        }
        let ports = Ports {
            dsp_valid: port("dsp_valid_i")?,
            dsp_ready: port("dsp_ready_o")?,
            dsp: dsp.try_into().expect("ten fields"),
            cpl_valid: port("cpl_valid_o")?,
            cpl_ready: port("cpl_ready_i")?,
            cpl: cpl.try_into().expect("seven fields"),
            retire_valid: port("retire_valid_o")?,
            retire_slot: port("retire_slot_o")?,
            retire_pc: port("retire_pc_o")?,
            retire_insn: port("retire_insn_o")?,
        };
        let seed = env.map_or(0, |e| e.seed);
        Ok(CuDriver {
            p: ports,
            run: run.clone(),
            shares: vec![None; crate::models::cu::shares(p, run.smem_bytes, run.regs) as usize],
            next: 0,
            offered: None,
            dsp_pace: Pace::random_or_steady(env.map(|e| e.dsp_stall)),
            cpl_pace: Pace::random_or_steady(env.map(|e| e.cpl_stall)),
            cpl_ready: false,
            tag_bits: p.tag_bits,
            rng: super::agents::agent_rng(seed, "cu"),
            c0: sim.cycle(),
            dispatched: Vec::new(),
            results: vec![None; run.blocks.len()],
            trace: Vec::new(),
            trace_block: Vec::new(),
            progress: 0,
        })
    }

    fn now(&self, sim: &Sim) -> u64 {
        sim.cycle() - self.c0
    }

    /// Blocks, trace and cycles as the model reports them (memory and
    /// counters are filled in by [`run`]).
    fn finish(self, sim: &mut Sim) -> Result<Finished, CosimError> {
        let mut blocks = Vec::new();
        for (i, r) in self.results.into_iter().enumerate() {
            match r {
                Some(r) => blocks.push(r),
                None => return Err(fail(sim, format!("block {i} was never completed"))),
            }
        }
        let first = blocks.iter().map(|b| b.dispatch_cycle).min().unwrap_or(0);
        let last = blocks.iter().map(|b| b.complete_cycle).max().unwrap_or(0);
        Ok(Finished { blocks, trace: self.trace, trace_block: self.trace_block, cycles: last - first })
    }
}

impl Agent for CuDriver {
    fn name(&self) -> &str {
        "cu"
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        if self.offered.is_none() && self.next < self.run.blocks.len() {
            if let Some(k) = self.shares.iter().position(|s| s.is_none()) {
                if !self.dsp_pace.stall(&mut self.rng, now) {
                    self.offered = Some((self.next, k as u32));
                } else {
                    self.progress += 1;
                }
            }
        }
        match self.offered {
            Some((i, k)) => {
                let b = &self.run.blocks[i];
                let user: Vec<u32> = b.user_data.to_vec();
                sim.set(self.p.dsp_valid, 1);
                let vals = [
                    self.run.program as u64,
                    b.id[0] as u64,
                    b.id[1] as u64,
                    b.id[2] as u64,
                    0,
                    k as u64 * self.run.smem_bytes as u64,
                    self.run.smem_bytes as u64,
                    k as u64 * self.run.regs as u64,
                    self.run.regs as u64,
                    k as u64,
                ];
                for (j, v) in vals.iter().enumerate() {
                    if j == 4 {
                        sim.set_words(self.p.dsp[j], &user);
                    } else {
                        sim.set(self.p.dsp[j], *v);
                    }
                }
            }
            None => sim.set(self.p.dsp_valid, 0),
        }
        self.cpl_ready = !self.cpl_pace.stall(&mut self.rng, now);
        sim.set(self.p.cpl_ready, self.cpl_ready as u64);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = self.now(sim);
        if sim.get(self.p.retire_valid) == 1 {
            let slot = sim.get(self.p.retire_slot) as u32;
            let Some(Some(b)) = self.shares.get(slot as usize) else {
                return Err(format!("an instruction retires in slot {slot}, which holds no block"));
            };
            self.trace_block.push(*b);
            self.trace.push(Retire {
                cycle: now,
                slot,
                block: self.run.blocks[*b].id,
                pc: sim.get(self.p.retire_pc) as u32,
                insn: sim.get(self.p.retire_insn),
            });
        }
        if sim.get(self.p.cpl_valid) == 1 && self.cpl_ready {
            let g = |k: usize| sim.get(self.p.cpl[k]);
            let (tag, slot) = (g(0) as usize, g(1) as usize);
            // The tag is the share's low `tag_bits` bits (the share is the slot).
            if tag != slot & ((1usize << self.tag_bits) - 1) {
                return Err(format!("completion with tag {tag} from slot {slot}: the run's tag is the share's low {} bits, and the share is the slot", self.tag_bits));
            }
            let Some(Some(b)) = self.shares.get(slot).copied() else {
                return Err(format!("completion from slot {slot}: no block holds that share"));
            };
            let id = self.run.blocks[b].id;
            let got = [g(2) as u16, g(3) as u16, g(4) as u16];
            if got != id {
                return Err(format!("completion of share {slot} names block {got:?}, which is block {id:?}"));
            }
            let Some(status) = Status::from_code(g(5)) else {
                return Err(format!("completion status {} is not defined", g(5)));
            };
            let (share, dcycle) = self.dispatched[b];
            self.results[b] = Some(BlockResult { id, status, pc: g(6) as u32, share, dispatch_cycle: dcycle, complete_cycle: now });
            self.shares[slot] = None;
            self.progress += 1;
        }
        if sim.get(self.p.dsp_valid) == 1 && sim.get(self.p.dsp_ready) == 1 {
            let (i, k) = self.offered.take().expect("a dispatch is offered");
            self.shares[k as usize] = Some(i);
            self.dispatched.push((k, now));
            self.next += 1;
            self.progress += 1;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.next == self.run.blocks.len() && self.shares.iter().all(|s| s.is_none())
    }

    fn waiting(&self) -> String {
        let resident: Vec<String> = self.shares.iter().flatten().map(|b| format!("{:?}", self.run.blocks[*b].id)).collect();
        format!("{} block(s) to dispatch; resident, not complete: {}", self.run.blocks.len() - self.next, resident.join(", "))
    }

    fn progress(&self) -> u64 {
        self.progress + self.trace.len() as u64
    }
}

/// The cycle budget of an RTL run: the golden model's (the start, then
/// `CYCLES_PER_BLOCK` a block, at most `MAX_CYCLES`).
pub fn budget(p: &CuParams, r: &Run) -> u64 {
    use crate::models::cu::{CYCLES_PER_BLOCK, MAX_CYCLES};
    (2 * (p.slots as u64 + 1) + CYCLES_PER_BLOCK * r.blocks.len() as u64).min(MAX_CYCLES)
}

/// Run `r` through the RTL within `budget` cycles.
pub fn run(compiled: &Compiled, p: &CuParams, r: &Run, env: Option<Env>, budget: u64, vcd: Option<&Path>) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    sim.reset(rst, 2);
    let mem = shared(r.memory.clone());
    let mut driver = CuDriver::new(&sim, p, r, env)?;
    let counts = Rc::new(RefCell::new(Counters::default()));
    let h = |n: &str| sim.port(n);
    let tex_fetch = h("tex_fetch_o")?;
    let mut agents: Vec<Box<dyn Agent>> = Vec::new();
    let c = counts.clone();
    let monitor = if sim.port("m_axi_arvalid").is_ok() {
        // mem_if = axi4 (docs/memory.md): one AXI4 slave; the counters from
        // its beats by ID (reads: 0 ifetch, 1 cdl, 2 dma_rd; dma_wr the one
        // write source), in the native ports' terms.
        let mut a = AxiSlave::new(&sim, "m_axi_", mem.clone(), super::axi_latency(r.mem_latency))?;
        if let Some(e) = env {
            a = a.random(AxiRandom::even(e.seed, e.latency, e.req_stall, e.rsp_stall));
        }
        agents.push(Box::new(a));
        let (rv, rr, rid) = (h("m_axi_rvalid")?, h("m_axi_rready")?, h("m_axi_rid")?);
        let (wv, wr) = (h("m_axi_wvalid")?, h("m_axi_wready")?);
        // AXI beats of one program load, and native beats (64 bits) of it.
        let per_load = (p.imem_depth as u64 * 64 / p.axi_bits as u64).max(1);
        let depth = p.imem_depth as u64;
        let mut ifetch_beats = 0u64;
        Monitor::new("counters", move |sim| {
            let mut c = c.borrow_mut();
            if sim.get(rv) == 1 && sim.get(rr) == 1 {
                match sim.get(rid) {
                    0 => {
                        ifetch_beats += 1;
                        if ifetch_beats.is_multiple_of(per_load) {
                            c.loads += 1;
                            c.rd_beats += depth;
                        }
                    }
                    _ => c.rd_beats += 1,
                }
            }
            c.wr_beats += (sim.get(wv) == 1 && sim.get(wr) == 1) as u64;
            c.texel_fetches += sim.get(tex_fetch);
            Ok(())
        })
    } else {
        for name in ["ifetch", "cdl", "dma_rd", "dma_wr"] {
            let mut a = MemResponder::new(NativePort::master(&sim, name)?, mem.clone(), r.mem_latency);
            if let Some(e) = env {
                a = a.random(MemRandom { seed: e.seed, latency: e.latency, req_stall: e.req_stall, rsp_stall: e.rsp_stall });
            }
            agents.push(Box::new(a));
        }
        // Counters off the ports: program loads, read beats, write beats.
        let (ifq_v, ifq_r) = (h("ifetch_req_valid_o")?, h("ifetch_req_ready_i")?);
        let rd: Vec<(PortHandle, PortHandle)> = ["ifetch", "cdl", "dma_rd"]
            .iter()
            .map(|n| Ok((h(&format!("{n}_rsp_valid_i"))?, h(&format!("{n}_rsp_ready_o"))?)))
            .collect::<Result<_, CosimError>>()?;
        let (wq_v, wq_r) = (h("dma_wr_req_valid_o")?, h("dma_wr_req_ready_i")?);
        Monitor::new("counters", move |sim| {
            let fire = |v: PortHandle, r: PortHandle| sim.get(v) == 1 && sim.get(r) == 1;
            let mut c = c.borrow_mut();
            c.loads += fire(ifq_v, ifq_r) as u64;
            c.rd_beats += rd.iter().filter(|(v, r)| fire(*v, *r)).count() as u64;
            c.wr_beats += fire(wq_v, wq_r) as u64;
            c.texel_fetches += sim.get(tex_fetch);
            Ok(())
        })
    };
    let mut monitor = monitor;
    let timer = LoopTimer::start(&sim);
    {
        let mut all: Vec<&mut dyn Agent> = vec![&mut driver, &mut monitor];
        for a in agents.iter_mut() {
            all.push(a.as_mut());
        }
        Bench::new(budget).run(&mut sim, &mut all)?;
    }
    let stats = timer.stats(&sim);
    let Finished { blocks, trace, trace_block, cycles } = driver.finish(&mut sim)?;
    sim.trace_close();
    let mut counters = *counts.borrow();
    counters.instructions = trace.len() as u64;
    // Operations started: every cdl/ld/st retired but a block's erring last one.
    let mut last = vec![usize::MAX; blocks.len()];
    for (i, b) in trace_block.iter().enumerate() {
        last[*b] = i;
    }
    for (i, t) in trace.iter().enumerate() {
        let b = trace_block[i];
        if last[b] == i && !matches!(blocks[b].status, Status::Ok | Status::Dispatch) {
            continue;
        }
        match (t.insn & 0xFF) as u8 {
            0x50 | 0x51 => counters.cdl += 1,
            0x60 => counters.ld += 1,
            0x61 => counters.st += 1,
            0x71 => counters.act += 1,
            0x72 => counters.cmp += 1,
            0x73 => counters.exp += 1,
            0x70 => counters.mma += 1,
            0x74 => counters.tex += 1,
            _ => {}
        }
    }
    let memory = mem.borrow().clone();
    Ok((Outcome { memory, blocks, trace, counters, cycles }, stats))
}

/// Where the random runs put things: the kernel, the data blocks read, and
/// one output region a block (blocks never write the same bytes, so the
/// memory after a run does not depend on the blocks' order).
const IN_BASE: u32 = 0x1_0000;
const IN_BYTES: u32 = 0x1000;
const OUT_BASE: u32 = 0x4_0000;
const OUT_BYTES: u32 = 0x1000;

/// The error a random program ends with, if any (docs/cu.md, "Errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Planted {
    None,
    Opcode,
    Field,
    Reg,
    Pc,
    Align,
    Smem,
}

impl Planted {
    pub const ALL: [Planted; 7] = [Planted::None, Planted::Opcode, Planted::Field, Planted::Reg, Planted::Pc, Planted::Align, Planted::Smem];
}

/// A random kernel for blocks of `regs` registers and `smem` scratchpad
/// bytes: `cdl` of the user data (r3 = its output region, r4 = the input
/// data), then arithmetic of every kind, `cdl` from memory, `ld`/`st` with
/// ragged ends, forward branches and counted loops, and `end` (or the error
/// `plant` at a random place). Fits `depth` instructions.
pub fn random_program(rng: &mut Rng, depth: u32, regs: u32, smem: u32, kmax: u32, tex: bool, plant: Planted) -> Vec<u64> {
    use crate::models::cu::isa::{encode, AluOp, Insn};
    let mut v: Vec<u64> = Vec::new();
    let ud_n = 2 + rng.below(regs.min(16) as u64 - 4) as u8;
    let ud_n = ud_n.min((regs - 3) as u8).max(2);
    v.push(encode(&Insn::CdlUd { rd: 3, n: ud_n, i: 0 }));
    // The share's bytes are not defined before a write: fill it first, so
    // that every `st` copies bytes this block loaded.
    if smem > 0 {
        v.push(encode(&Insn::Li { rd: 5, imm: 0 }));
        v.push(encode(&Insn::Li { rd: 6, imm: 1 << 16 | smem }));
        v.push(encode(&Insn::Ld { rd: 5, ra: 4, rb: 6, rc: 6, p: 0 }));
    }
    let word = |op: u8, rd: u8, ra: u8, rb: u8, imm: u32| op as u64 | (rd as u64) << 8 | (ra as u64) << 16 | (rb as u64) << 24 | (imm as u64) << 32;
    // r5 = 0 and r6 = the share's shape stay as the start sets them, for
    // the closing store of the whole share.
    let scratch = |rng: &mut Rng| 7 + rng.below(regs as u64 - 7) as u8;
    let any_reg = |rng: &mut Rng| rng.below(regs as u64) as u8;
    let imm = |rng: &mut Rng| match rng.below(4) {
        0 => rng.below(16) as u32,
        1 => rng.next_u64() as u32,
        2 => (rng.below(64) as i32 - 32) as u32,
        _ => 0x8000_0000 | rng.below(8) as u32,
    };
    let alu = |rng: &mut Rng, avoid: Option<u8>| -> u64 {
        let op = AluOp::ALL[rng.below(16) as usize];
        let mut rd = scratch(rng);
        if Some(rd) == avoid {
            rd = if rd + 1 < regs as u8 { rd + 1 } else { 5 };
        }
        if rng.chance(50) {
            encode(&Insn::Alu { op, rd, ra: any_reg(rng), rb: any_reg(rng) })
        } else if rng.chance(15) {
            encode(&Insn::Li { rd, imm: imm(rng) })
        } else {
            encode(&Insn::AluI { op, rd, ra: any_reg(rng), imm: imm(rng) })
        }
    };
    // Room for the last group and `end` (or the planted error).
    let budget = depth as usize - 6;
    let mut plant_at = if plant == Planted::None { usize::MAX } else { 1 + rng.below(budget as u64 - 1) as usize };
    while v.len() < budget {
        if v.len() >= plant_at {
            break;
        }
        let room = budget - v.len();
        match rng.below(17) {
            0..=2 => v.push(alu(rng, None)),
            3 if room >= 6 => {
                // A counted loop over a little arithmetic.
                let c = scratch(rng);
                v.push(encode(&Insn::Li { rd: c, imm: 1 + rng.below(4) as u32 }));
                let top = v.len() as u32;
                for _ in 0..1 + rng.below(3) {
                    v.push(alu(rng, Some(c)));
                }
                v.push(encode(&Insn::Loop { rd: c, t: top }));
            }
            4 if room >= 5 => {
                // A forward branch over 1..3 instructions.
                let s = 1 + rng.below(3) as u32;
                let t = v.len() as u32 + 1 + s;
                v.push(match rng.below(3) {
                    0 => encode(&Insn::Bnz { ra: any_reg(rng), t }),
                    1 => encode(&Insn::Bz { ra: any_reg(rng), t }),
                    _ => encode(&Insn::Jmp { t }),
                });
                for _ in 0..s {
                    v.push(alu(rng, None));
                }
            }
            5 if room >= 2 => {
                // cdl from the input data (aligned).
                let n = 1 + rng.below(16.min(regs as u64 - 7)) as u8;
                let rd = 7 + rng.below(regs as u64 - 7 - n as u64 + 1) as u8;
                v.push(encode(&Insn::CdlMem { rd, ra: 4, n, i: 4 * rng.below(IN_BYTES as u64 / 4 - 16) as u32 }));
                // Registers are seen only through addresses and branches:
                // half the time, branch on one bit of one loaded value, so
                // that a wrong value changes the trace half the time.
                if room >= 5 && rng.chance(50) {
                    let t = v.len() as u32 + 3;
                    let x = scratch(rng);
                    v.push(encode(&Insn::AluI { op: AluOp::And, rd: x, ra: rd + rng.below(n as u64) as u8, imm: 1 << rng.below(32) }));
                    v.push(encode(&Insn::Bnz { ra: x, t }));
                    v.push(alu(rng, None));
                }
            }
            6..=9 if room >= 6 && smem >= 4 => {
                // ld from the input data, or st to the block's output region.
                let st = rng.chance(50);
                let (s_r, a_r, str_r, sh_r) = (scratch(rng), scratch(rng), scratch(rng), scratch(rng));
                let distinct = [s_r, a_r, str_r, sh_r].iter().collect::<std::collections::HashSet<_>>().len() == 4;
                if !distinct {
                    continue;
                }
                let rows = 1 + rng.below(4) as u32;
                let n = 1 + rng.below((smem / rows).clamp(1, 64) as u64) as u32;
                let p = if rng.chance(50) { 0 } else { n + rng.below(8) as u32 };
                let pitch = if p == 0 { n } else { p };
                let span = (rows - 1) * pitch + n;
                if span > smem {
                    continue;
                }
                // A third of the loads also write their rows' zero map
                // (`, zmap`: the map's word just below an aligned `s`).
                let zmap = !st && span + 4 <= smem && rng.chance(33);
                let s_off = if zmap { 4 + 4 * rng.below(((smem - span - 4) / 4) as u64 + 1) as u32 } else { rng.below((smem - span) as u64 + 1) as u32 };
                let stride = match rng.below(3) {
                    0 => n,
                    1 => 1 + rng.below(64) as u32,
                    _ => n + rng.below(100) as u32,
                };
                let mspan = (rows - 1) * stride + n;
                let limit = if st { OUT_BYTES } else { IN_BYTES };
                if mspan > limit {
                    continue;
                }
                let a_off = rng.below((limit - mspan) as u64 + 1) as u32;
                v.push(encode(&Insn::Li { rd: s_r, imm: s_off }));
                v.push(encode(&Insn::AluI { op: AluOp::Add, rd: a_r, ra: if st { 3 } else { 4 }, imm: a_off }));
                v.push(encode(&Insn::Li { rd: str_r, imm: stride }));
                v.push(encode(&Insn::Li { rd: sh_r, imm: rows << 16 | n }));
                let p16 = p as u16;
                v.push(encode(&if st {
                    Insn::St { rd: s_r, ra: a_r, rb: str_r, rc: sh_r, p: p16 }
                } else if zmap {
                    Insn::LdZmap { rd: s_r, ra: a_r, rb: str_r, rc: sh_r, p: p16 }
                } else {
                    Insn::Ld { rd: s_r, ra: a_r, rb: str_r, rc: sh_r, p: p16 }
                }));
            }
            10 if room >= 4 && smem >= 16 => {
                // act over a few int32 rows of the share.
                let (s_r, sh_r) = (scratch(rng), scratch(rng));
                if s_r == sh_r {
                    continue;
                }
                let rows = rng.below(4) as u32;
                let w = rng.below(6) as u32;
                let p = if rng.chance(50) { 0 } else { 4 * (w + rng.below(3) as u32) };
                let pitch = if p == 0 { 4 * w } else { p };
                let span = if rows == 0 || w == 0 { 0 } else { (rows - 1) * pitch + 4 * w };
                if span > smem {
                    continue;
                }
                let off = 4 * rng.below(((smem - span) / 4) as u64 + 1) as u32;
                v.push(encode(&Insn::Li { rd: s_r, imm: off }));
                v.push(encode(&Insn::Li { rd: sh_r, imm: rows << 16 | w }));
                v.push(word(0x71, s_r, sh_r, 0, p << 16));
            }
            11 | 12 if room >= 6 && smem >= 64 => {
                // cmp of n elements, then (often) exp of what it wrote, in
                // thirds of the share.
                let rs: Vec<u8> = (0..4).map(|_| scratch(rng)).collect();
                if rs.iter().collect::<std::collections::HashSet<_>>().len() < 4 {
                    continue;
                }
                let third = (smem / 3) & !3;
                let zc = rng.below(3) as u32;
                let z = 1u32 << zc;
                let q_need = |n: u32| 4 + 4 * n.div_ceil(32);
                let max_n = (third.saturating_sub(8) / z).min(80);
                let n = if rng.chance(10) { 0 } else { rng.below(max_n as u64 + 1) as u32 };
                if n * z + 8 > third || q_need(n) > third {
                    continue;
                }
                let (src, dst, q) = (0u32, third, 2 * third);
                let (src, dst) = if rng.chance(50) { (src, dst) } else { (dst, src) };
                v.push(encode(&Insn::Li { rd: rs[0], imm: dst }));
                v.push(encode(&Insn::Li { rd: rs[1], imm: src }));
                v.push(encode(&Insn::Li { rd: rs[2], imm: q }));
                v.push(encode(&Insn::Li { rd: rs[3], imm: n | (rng.below(4) as u32) << 16 }));
                v.push(word(0x72, rs[0], rs[1], rs[2], rs[3] as u32 | zc << 8));
                if v.len() < budget && rng.chance(60) {
                    // Expand the packed elements back over the source.
                    v.push(word(0x73, rs[1], rs[0], rs[2], rs[3] as u32 | zc << 8));
                }
            }
            13 | 14 if room >= 6 && smem >= 8 => {
                // mma on tiles anywhere in the share (C may overlap A or B);
                // with `, skip` (60%) its k-map is the words below B: what
                // the share holds there, or (half the time) the map of an
                // `ld ..., zmap` of B's rows just before.
                let mut rs: Vec<u8> = (0..4).map(|_| scratch(rng)).collect();
                if rs.iter().collect::<std::collections::HashSet<_>>().len() < 4 {
                    continue;
                }
                // A fifth for the zmap load's shape: the first scratch
                // register not taken (there are at least 5).
                rs.push((7..regs as u8).find(|r| !rs.contains(r)).expect("five scratch registers"));
                let mut tm = 1 + rng.below(6) as u32;
                let mut tn = 1 + rng.below(10) as u32;
                let mut k = 1 + rng.below(kmax.min(24) as u64) as u32;
                if rng.chance(15) {
                    k = kmax - rng.below(4) as u32 * 4;
                    (tm, tn) = (1 + rng.below(2) as u32, 1 + rng.below(3) as u32);
                }
                match rng.below(40) {
                    0 => tm = 0,
                    1 => tn = 0,
                    2 => k = 0,
                    _ => {}
                }
                let (qa, qb) = if rng.chance(50) { (0, 0) } else { (rng.below(4) as u32, rng.below(4) as u32) };
                let (pa, pb) = (4 * k.div_ceil(4) + 4 * qa, 8 * tn.div_ceil(8) + 4 * qb);
                let skip = rng.chance(60);
                let map = if skip { 4 * k.div_ceil(32) } else { 0 };
                let sizes = [4 * tm * tn, tm * pa, k * pb + map];
                if sizes.iter().any(|&z| z > smem) || 4 * tn > smem {
                    continue;
                }
                for (i, (r, z)) in rs.iter().zip(sizes).enumerate() {
                    let off = 4 * rng.below(((smem - z) / 4) as u64 + 1) as u32;
                    // B after its map.
                    v.push(encode(&Insn::Li { rd: *r, imm: off + if i == 2 { map } else { 0 } }));
                }
                if skip && k > 0 && tn > 0 && room >= 11 && rng.chance(50) {
                    // B's k rows of tn bytes (pitch PB) from the input data,
                    // with their zero map.
                    let stride = tn + rng.below(8) as u32;
                    if (k - 1) * stride + tn <= IN_BYTES {
                        let a_off = rng.below((IN_BYTES - (k - 1) * stride - tn) as u64 + 1) as u32;
                        v.push(encode(&Insn::AluI { op: AluOp::Add, rd: rs[0], ra: 4, imm: a_off }));
                        v.push(encode(&Insn::Li { rd: rs[3], imm: stride }));
                        v.push(encode(&Insn::Li { rd: rs[4], imm: k << 16 | tn }));
                        v.push(encode(&Insn::LdZmap { rd: rs[2], ra: rs[0], rb: rs[3], rc: rs[4], p: pb as u16 }));
                        let off = 4 * rng.below(((smem - sizes[0]) / 4) as u64 + 1) as u32;
                        v.push(encode(&Insn::Li { rd: rs[0], imm: off }));
                    }
                }
                v.push(encode(&Insn::Li { rd: rs[3], imm: tm | tn << 8 | k << 16 }));
                // C0: none, C itself, or a bias row anywhere in the share.
                let mode = [0u32, 0, 1, 2][rng.below(4) as usize];
                let bias = if mode == 2 { rng.below(((smem - 4 * tn) / 4).min(0xFFFF) as u64 + 1) as u32 } else { 0 };
                v.push(word(0x70, rs[0], rs[1], rs[2], rs[3] as u32 | mode << 8 | qa << 10 | qb << 12 | (skip as u32) << 14 | bias << 16));
            }
            15 | 16 if tex && room >= 6 && smem >= 16 => {
                // tex on a small texture anywhere in the share: samples
                // whose coordinates are the share's bytes, or a conv over a
                // few quads with its kernel just before the texture.
                let rs: Vec<u8> = (0..4).map(|_| scratch(rng)).collect();
                if rs.iter().collect::<std::collections::HashSet<_>>().len() < 4 {
                    continue;
                }
                let fmt = rng.below(3) as u32;
                let z = 1u32 << fmt;
                let (w, h) = (1 + rng.below(12) as u32, 1 + rng.below(8) as u32);
                let tb = w * h * z;
                let (mx, my) = (rng.below(3) as u32, rng.below(3) as u32);
                let ch = if fmt == 2 { rng.below(4) as u32 } else { 0 };
                let conv = rng.chance(50);
                let words4 = |rng: &mut Rng, x: u32| 4 * rng.below((x / 4) as u64 + 1) as u32;
                let (o, t, c, tail, ksz) = if conv {
                    let (kw, kh) = (1 + rng.below(8) as u32, 1 + rng.below(8) as u32);
                    let (qw, qh) = (1 + rng.below(3) as u32, 1 + rng.below(3) as u32);
                    let out = 16 * qw * qh;
                    // Texture (after its kernel) and output, in either order.
                    let kb = (kw * kh).next_multiple_of(4);
                    if kb + tb.next_multiple_of(4) + out > smem {
                        continue;
                    }
                    let slack = smem - kb - tb.next_multiple_of(4) - out;
                    let first = words4(rng, slack);
                    let (t, o) = if rng.chance(50) { (first + kb, first + kb + tb.next_multiple_of(4)) } else { (first + out + kb, first) };
                    let (x0, y0) = (rng.below(w as u64) as u32, rng.below(h as u64) as u32);
                    (o, t, x0 | y0 << 16, (qw - 1) << 24 | (qh - 1) << 28, (kw - 1) << 13 | (kh - 1) << 29)
                } else {
                    let n = if rng.chance(10) { 0 } else { 1 + rng.below(4) as u32 };
                    if tb > smem || 8 * n > smem || 16 * n > smem {
                        continue;
                    }
                    // The list, the texture and the output anywhere (they may meet).
                    let t = words4(rng, smem - tb);
                    let l = words4(rng, smem - 8 * n);
                    let o = words4(rng, smem - 16 * n);
                    // Kernel-size bits, ignored by the sample kinds.
                    (o, t, l, n << 18, (rng.below(8) as u32) << 13 | (rng.below(8) as u32) << 29)
                };
                let kind = if conv { 3 } else { rng.below(3) as u32 };
                v.push(encode(&Insn::Li { rd: rs[0], imm: o }));
                v.push(encode(&Insn::Li { rd: rs[1], imm: t }));
                v.push(encode(&Insn::Li { rd: rs[2], imm: w | h << 16 | ksz }));
                v.push(encode(&Insn::Li { rd: rs[3], imm: c }));
                v.push(word(0x74, rs[0], rs[1], rs[2], rs[3] as u32 | kind << 8 | ch << 10 | fmt << 12 | mx << 14 | my << 16 | tail));
            }
            _ => v.push(alu(rng, None)),
        }
    }
    // The whole share out to the block's output region, so that what every
    // instruction left in the scratchpad is compared.
    if smem > 0 {
        v.push(encode(&Insn::St { rd: 5, ra: 3, rb: 6, rc: 6, p: 0 }));
    }
    plant_at = v.len();
    let _ = plant_at;
    match plant {
        Planted::None => {}
        Planted::Opcode => {
            let ops = [0x00u8, 0x11, 0x20, 0x31, 0x45, 0x52, 0x62, 0x6F, 0x75, 0x7E, 0x80, 0xFF];
            v.push(word(ops[rng.below(ops.len() as u64) as usize], 0, 0, 0, 0));
        }
        Planted::Field => v.push(match rng.below(10) {
            // tex: format 3, a mode 3, or a channel past r8/r16's one.
            9 => word(0x74, 5, 5, 5, 6 | [3 << 12, 3 << 14, 3 << 16, (1 + rng.below(3) as u32) << 10 | (rng.below(2) as u32) << 12, 3 << 8 | (1 + rng.below(63) as u32) << 18][rng.below(5) as usize]),
            8 => word(0x70, 5, 5, 5, 6 | [3 << 8, 1 << 15 | (rng.below(3) as u32) << 8 | (rng.below(2) as u32) << 14, (1 + rng.below(0xFFFF) as u32) << 16 | (rng.below(2) as u32) << 8][rng.below(3) as usize]),
            5 => word(0x71, 5, 5, 0, 1 + rng.below(255) as u32),
            6 => word(0x72, 5, 5, 5, 5 | 3 << 8),
            7 => word(0x73, 5, 5, 5, 5 | (1 + rng.below(0xFFFF) as u32) << 16),
            0 => word(0x01, 5, 5, 5, 1 + rng.below(1000) as u32),
            1 => word(0x7F, 1 + rng.below(255) as u8, 0, 0, 0),
            2 => word(0x50, 5, 0, [0u8, 17, 200][rng.below(3) as usize], 0),
            3 => word(0x41, 0, 1, 0, 0),
            // ld's bits 15:9 (bit 8 is `zmap`), or st's 15:8.
            _ => word(0x60 + rng.below(2) as u8, 5, 5, 5, (1 + rng.below(127) as u32) << 9 | (rng.below(2) as u32) << 8),
        }),
        Planted::Reg => v.push(match rng.below(5) {
            4 => word(0x74, 5, 5, 5, (regs + rng.below(256 - regs as u64) as u32) | 3 << 8),
            3 => word(0x70, 5, 5, 5, regs + rng.below(256 - regs as u64) as u32),
            0 => word(0x01, regs as u8 + rng.below(256 - regs as u64) as u8, 0, 0, 0),
            1 => word(0x50, (regs - 1) as u8, 0, 2, 0),
            _ => word(0x60, 5, 5, 5, regs + rng.below(256 - regs as u64) as u32),
        }),
        Planted::Pc => v.push(encode(&Insn::Jmp { t: depth + rng.below(1000) as u32 })),
        Planted::Align if rng.chance(50) => v.push(encode(&Insn::CdlUd { rd: 5, n: 1, i: 1 + 4 * rng.below(4) as u32 + rng.below(3) as u32 })),
        Planted::Align => {
            v.push(encode(&Insn::Li { rd: 5, imm: 1 + rng.below(3) as u32 }));
            v.push(encode(&Insn::Li { rd: 6, imm: 1 << 16 | 1 }));
            v.push(match rng.below(4) {
                // tex with a misaligned output, texture or (samples) list.
                3 => [word(0x74, 5, 0, 6, 0), word(0x74, 0, 5, 6, 3 << 8), word(0x74, 0, 0, 6, 5 | 1 << 18)][rng.below(3) as usize],
                0 if rng.chance(50) => word(0x71, 5, 6, 0, 0),
                // ld ..., zmap at a misaligned s (r5 = 1..3).
                0 => word(0x60, 5, 0, 0, 6 | 1 << 8),
                1 => word(0x72 + rng.below(2) as u8, 5, 6, 6, 6),
                // mma with a misaligned C, A or B (6 = a 1 x 1 x 1 shape).
                _ => [word(0x70, 5, 0, 0, 6), word(0x70, 0, 5, 0, 6), word(0x70, 0, 0, 5, 6)][rng.below(3) as usize],
            });
        }
        Planted::Smem if rng.chance(40) => {
            // cmp or exp whose packed region runs past the share.
            v.push(encode(&Insn::Li { rd: 5, imm: 0 }));
            v.push(encode(&Insn::Li { rd: 6, imm: smem / 4 + 1 + rng.below(64) as u32 }));
            v.push(word(0x72 + rng.below(2) as u8, 5, 5, 5, 6 | 2 << 8));
        }
        Planted::Smem if rng.chance(30) => {
            // mma with K past kmax, or a tile past the share.
            let (off, shape) = if rng.chance(50) {
                (0, 1 | 1 << 8 | (kmax + 1 + rng.below(64) as u32) << 16)
            } else {
                (smem + 4 * rng.below(4) as u32, 1 | 1 << 8 | 1 << 16)
            };
            v.push(encode(&Insn::Li { rd: 5, imm: off }));
            v.push(encode(&Insn::Li { rd: 6, imm: shape }));
            v.push(word(0x70, 5, 5, 5, 6));
        }
        Planted::Smem if rng.chance(40) => {
            // tex with r5 = 0 (output, texture and list or x0|y0 all at 0)
            // and r6 = W | H << 16: a size 0 or past 4096, a texture past
            // the share, a conv with no room for its 1 x 1 kernel before
            // the texture, or one starting at x0 = W.
            v.push(encode(&Insn::Li { rd: 5, imm: 0 }));
            let fmt = rng.below(3) as u32;
            let (wh, kind) = match rng.below(4) {
                0 => ([0u32, 1 << 16, 1, 4097 | 1 << 16, 1 | 4097 << 16][rng.below(5) as usize], rng.below(4) as u32),
                1 => ((smem + 1) | 1 << 16, rng.below(3) as u32),
                2 => (1 | 1 << 16, 3),
                _ => (1 | 1 << 16, 3),
            };
            v.push(encode(&Insn::Li { rd: 6, imm: wh }));
            let rc = if kind == 3 && rng.chance(50) { 6 } else { 5 };
            v.push(word(0x74, 5, 5, 6, rc | kind << 8 | fmt << 12));
        }
        Planted::Smem if rng.chance(30) => {
            // ld ..., zmap or mma ..., skip with no room below s or Bo for
            // the map (s = Bo = 0), or a zmap of more than kmax rows.
            v.push(encode(&Insn::Li { rd: 5, imm: 0 }));
            let last = match rng.below(3) {
                0 => {
                    v.push(encode(&Insn::Li { rd: 6, imm: 1 << 16 | 1 }));
                    encode(&Insn::LdZmap { rd: 5, ra: 4, rb: 4, rc: 6, p: 0 })
                }
                1 => {
                    v.push(encode(&Insn::Li { rd: 7, imm: 4 }));
                    v.push(encode(&Insn::Li { rd: 6, imm: (kmax + 1) << 16 | 1 }));
                    encode(&Insn::LdZmap { rd: 7, ra: 4, rb: 4, rc: 6, p: 0 })
                }
                _ => {
                    v.push(encode(&Insn::Li { rd: 6, imm: 1 | 1 << 8 | 1 << 16 }));
                    word(0x70, 5, 5, 5, 6 | 1 << 14)
                }
            };
            v.push(last);
        }
        Planted::Smem => {
            v.push(encode(&Insn::Li { rd: 5, imm: smem + rng.below(64) as u32 }));
            v.push(encode(&Insn::Li { rd: 6, imm: 1 << 16 | 1 }));
            v.push(encode(&Insn::Ld { rd: 5, ra: 4, rb: 4, rc: 6, p: 0 }));
        }
    }
    v.push(encode(&Insn::End));
    v
}

/// A random run of `blocks` blocks of one random kernel (see
/// [`random_program`]), each with its own output region, at a random share
/// size and memory latency.
pub fn random_run(rng: &mut Rng, p: &CuParams, blocks: usize, plant: Planted) -> Run {
    use crate::mem::Memory;
    use crate::models::cu::{Block, Region};
    let resident = 1 + rng.below(p.slots as u64) as u32;
    let regs = (p.regs / resident).clamp(12, 32);
    let smem = ((p.smem_bytes() / resident as u64) as u32 & !3).min(2048);
    let smem = if rng.chance(20) && smem >= 128 { smem & !63 } else { smem - 4 * rng.below(smem as u64 / 8 + 1) as u32 };
    let words = random_program(rng, p.imem_depth, regs, smem, p.kmax, p.tex, plant);
    let program = 0x1000 + 0x100 * rng.below(16) as u32;
    let mut memory = Memory::new();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    memory.write(program as u64, &bytes);
    // Zero-rich input: a quarter of the 16-byte chunks zero, a fifth of the
    // other bytes zero (zero k-steps, rows and columns for mma).
    let data: Vec<u8> = (0..IN_BYTES / 16)
        .flat_map(|_| {
            let zero = rng.chance(25);
            (0..16).map(|_| if zero || rng.chance(20) { 0 } else { rng.below(256) as u8 }).collect::<Vec<_>>()
        })
        .collect();
    memory.write(IN_BASE as u64, &data);
    let blocks: Vec<Block> = (0..blocks)
        .map(|b| {
            let mut user_data = [0u32; 16];
            user_data[0] = OUT_BASE + OUT_BYTES * b as u32;
            user_data[1] = IN_BASE;
            for u in user_data.iter_mut().skip(2) {
                *u = rng.next_u64() as u32;
            }
            Block { id: [rng.below(1 << 16) as u16, rng.below(4) as u16, b as u16], user_data }
        })
        .collect();
    let dump = (0..blocks.len()).map(|b| Region { addr: OUT_BASE + OUT_BYTES * b as u32, bytes: OUT_BYTES }).collect();
    Run { program, memory, blocks, smem_bytes: smem, regs, mem_latency: 1 + rng.below(20) as u32, dump }
}
