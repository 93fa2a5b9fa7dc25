//! Testbench of the memory arbiter and its AXI4 bridge (docs/arbiter.md):
//! a native master agent on every source port, and behind the arbiter the
//! AXI4 slave memory (`out = axi4`) or native responders on `mem_rd` and
//! `mem_wr` (`out = native`), all over one memory. Without a random
//! environment the memory is the spec's deterministic testbench memory and
//! every source offers its requests back to back and takes every response
//! at once: the run driver of the spec, so `cycles` equals the model's.

use super::agents::{shared, Agent, AxiRandom, AxiSlave, Bench, MemRandom, MemResponder, Monitor, NativeMaster, NativePort, ReadRequest, WriteBurst};
use super::{LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, Sim};
use crate::mem::Memory;
use crate::models::arbiter::{Counters, Outcome, Region, Workload};
use gpurtl_params::arbiter::{ArbiterParams, Out};
use num_bigint::BigUint;
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

/// Random timing on every side: sources holding requests back and
/// back-pressuring responses, the memory's latency, ready and gaps (with
/// AXI4: responses of different sources reordered and interleaved).
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    /// Percent of cycles a source holds its next request beat back.
    pub src_stall: u32,
    /// Percent of cycles a source does not take a response.
    pub rsp_stall: u32,
    /// Memory latency range (inclusive).
    pub latency: (u32, u32),
    /// Percent of cycles the memory is not ready for a request (AR, AW, W).
    pub mem_stall: u32,
    /// Percent of cycles the memory holds back a due response (R, B).
    pub mem_gap: u32,
}

/// A beat's value as port words (`bits` wide).
fn words(v: &BigUint, bits: u32) -> Vec<u32> {
    let mut w = v.to_u32_digits();
    w.resize(bits.div_ceil(32) as usize, 0);
    w
}

/// The initial memory of a run.
pub fn memory_image(w: &Workload) -> Memory {
    let mut m = Memory::new();
    for r in &w.memory {
        m.load(r.addr, &r.bytes);
    }
    m
}

/// Run the workload through the RTL.
pub fn run(compiled: &Compiled, p: &ArbiterParams, w: &Workload, env: Option<Env>, vcd: Option<&Path>) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let db = p.data_bytes() as u64;
    let mem = shared(memory_image(w));
    let mut masters: Vec<NativeMaster> = Vec::new();
    for (k, reqs) in w.reads.iter().enumerate() {
        let r: Vec<ReadRequest> = reqs.iter().map(|q| ReadRequest { addr: q.addr, len: q.beats as u64 - 1, tag: 0 }).collect();
        masters.push(NativeMaster::reads(NativePort::slave(&sim, &format!("rd{k}"))?, &r));
    }
    for (k, bursts) in w.writes.iter().enumerate() {
        let b: Vec<WriteBurst> = bursts
            .iter()
            .map(|b| WriteBurst {
                addr: b.addr,
                tag: 0,
                beats: b.data.iter().zip(&b.strb).map(|(d, s)| (words(d, p.data_bits), words(s, p.data_bits / 8))).collect(),
            })
            .collect();
        masters.push(NativeMaster::writes(NativePort::slave(&sim, &format!("wr{k}"))?, &b));
    }
    if let Some(e) = env {
        masters = masters.into_iter().enumerate().map(|(i, m)| m.random(e.seed.wrapping_add(i as u64), e.src_stall, e.rsp_stall)).collect();
    }
    let mut memory: Vec<Box<dyn Agent>> = Vec::new();
    // Requests as AXI4 carries them: pieces split at a 4 KB boundary count
    // as AR (AW) bursts beyond the requests.
    let (ar, aw) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    match p.out {
        Out::Axi4 => {
            let mut a = AxiSlave::new(&sim, "m_axi_", mem.clone(), w.latency)?;
            if let Some(e) = env {
                a = a.random(AxiRandom::even(e.seed, e.latency, e.mem_stall, e.mem_gap));
            }
            memory.push(Box::new(a));
            for (ch, count) in [("ar", ar.clone()), ("aw", aw.clone())] {
                let (v, r) = (sim.port(&format!("m_axi_{ch}valid"))?, sim.port(&format!("m_axi_{ch}ready"))?);
                memory.push(Box::new(Monitor::new(&format!("m_axi_{ch} count"), move |s: &Sim| {
                    count.set(count.get() + (s.get(v) & s.get(r)));
                    Ok(())
                })));
            }
        }
        Out::Native => {
            for (name, n) in [("mem_rd", p.reads), ("mem_wr", p.writes)] {
                if n == 0 {
                    continue;
                }
                let mut r = MemResponder::new(NativePort::master(&sim, name)?, mem.clone(), w.latency);
                if let Some(e) = env {
                    r = r.random(MemRandom { seed: e.seed, latency: e.latency, req_stall: e.mem_stall, rsp_stall: e.mem_gap });
                }
                memory.push(Box::new(r));
            }
        }
    }

    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    let beats: u64 = w.reads.iter().flatten().map(|r| r.beats as u64).sum::<u64>() + w.writes.iter().flatten().map(|b| b.beats() as u64).sum::<u64>();
    let max_lat = env.map_or(w.latency, |e| e.latency.1) as u64;
    let requests = (w.reads.iter().map(Vec::len).sum::<usize>() + w.writes.iter().map(Vec::len).sum::<usize>()) as u64;
    let budget = 1000 + (beats + requests) * (max_lat + 20);
    {
        let mut agents: Vec<&mut dyn Agent> = masters.iter_mut().map(|m| m as &mut dyn Agent).collect();
        agents.extend(memory.iter_mut().map(|m| &mut **m as &mut dyn Agent));
        Bench::new(budget).run(&mut sim, &mut agents)?;
    }
    sim.trace_close();

    let nr = w.reads.len();
    let reads: Vec<Vec<BigUint>> = (0..nr)
        .map(|k| (0..w.reads[k].len()).flat_map(|i| masters[k].data(i).into_iter().map(BigUint::from_slice).collect::<Vec<_>>()).collect())
        .collect();
    let writes: Vec<u64> = (0..w.writes.len()).map(|k| masters[nr + k].responses().len() as u64).collect();
    let m = mem.borrow();
    let memory_after: Vec<Region> = w
        .writes
        .iter()
        .flatten()
        .map(|b| {
            let mut bytes = vec![0u8; (b.beats() as u64 * db) as usize];
            m.read(b.addr, &mut bytes);
            Region { addr: b.addr, bytes }
        })
        .collect();
    let first = masters.iter().filter_map(|m| m.taken().first().copied()).min();
    let last = masters.iter().filter_map(|m| m.responses().last().copied()).max();
    let cycles = match (first, last) {
        (Some(f), Some(l)) => l - f + 1,
        _ => 0,
    };
    let read_requests = w.reads.iter().map(Vec::len).sum::<usize>() as u64;
    let write_bursts = w.writes.iter().map(Vec::len).sum::<usize>() as u64;
    let split_bursts = if p.out == Out::Axi4 { ar.get() - read_requests + aw.get() - write_bursts } else { 0 };
    let counters = Counters {
        read_requests,
        read_beats: w.reads.iter().flatten().map(|r| r.beats as u64).sum(),
        write_bursts,
        write_beats: w.writes.iter().flatten().map(|b| b.beats() as u64).sum(),
        split_bursts,
    };
    Ok((Outcome { reads, writes, memory: memory_after, cycles, counters }, timer.stats(&sim)))
}
