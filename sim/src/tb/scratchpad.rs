//! Testbench of the banked scratchpad (docs/scratchpad.md): a native
//! master agent on every port, phase by phase as the spec's run driver
//! goes (a phase's agents on one bench until every response is taken, the
//! next phase from the following cycle), and a monitor counting the cycles
//! a port waits on a bank. Without a random environment every port offers
//! its requests back to back and takes its responses at once, so the
//! cycles equal the model's.

use super::agents::{Agent, Bench, Monitor, NativeMaster, NativePort, ReadRequest, WriteBurst};
use super::{LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::scratchpad::{Counters, Outcome, PhaseOutcome, Workload};
use gpurtl_params::scratchpad::ScratchpadParams;
use num_bigint::BigUint;
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

/// Random holds of requests and back-pressure on responses, per port.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    pub req_stall: u32,
    pub rsp_stall: u32,
}

/// The request and response handshake ports of a port `<name>`.
struct Watch {
    req_valid: PortHandle,
    req_ready: PortHandle,
    rsp_valid: PortHandle,
    rsp_ready: PortHandle,
}

impl Watch {
    fn find(sim: &Sim, name: &str) -> Result<Watch, CosimError> {
        let p = |s: &str| sim.port(&format!("{name}_{s}"));
        Ok(Watch { req_valid: p("req_valid_i")?, req_ready: p("req_ready_o")?, rsp_valid: p("rsp_valid_o")?, rsp_ready: p("rsp_ready_i")? })
    }
    /// Offered with its slot free and not taken: lost its bank this cycle.
    fn waits(&self, s: &Sim) -> bool {
        let free = s.get(self.rsp_valid) == 0 || s.get(self.rsp_ready) == 1;
        s.get(self.req_valid) == 1 && s.get(self.req_ready) == 0 && free
    }
}

/// Run the workload through the RTL.
pub fn run(compiled: &Compiled, p: &ScratchpadParams, w: &Workload, env: Option<Env>, vcd: Option<&Path>) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let names: Vec<String> = (0..p.read_ports).map(|k| format!("rd{k}")).chain((0..p.write_ports).map(|k| format!("wr{k}"))).collect();
    let watches: Vec<Watch> = names.iter().map(|n| Watch::find(&sim, n)).collect::<Result<_, _>>()?;
    let waits = Rc::new(Cell::new(0u64));
    let counter = waits.clone();
    let mut monitor = Monitor::new("bank conflicts", move |s: &Sim| {
        counter.set(counter.get() + watches.iter().filter(|x| x.waits(s)).count() as u64);
        Ok(())
    });
    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    let mut phases = Vec::new();
    let (mut reads, mut writes) = (0u64, 0u64);
    for (i, ph) in w.phases.iter().enumerate() {
        let start = sim.cycle();
        let mut masters: Vec<NativeMaster> = Vec::new();
        for k in 0..p.read_ports as usize {
            let addrs = ph.reads.get(k).cloned().unwrap_or_default();
            let r: Vec<ReadRequest> = addrs.iter().map(|&addr| ReadRequest { addr, len: 0, tag: 0 }).collect();
            reads += r.len() as u64;
            masters.push(NativeMaster::reads(NativePort::slave(&sim, &format!("rd{k}"))?, &r));
        }
        for k in 0..p.write_ports as usize {
            let ws = ph.writes.get(k).cloned().unwrap_or_default();
            let wb: Vec<WriteBurst> = ws
                .iter()
                .map(|x| {
                    let mut d = x.data.to_u32_digits();
                    d.resize(p.data_bits.div_ceil(32) as usize, 0);
                    WriteBurst { addr: x.addr, tag: 0, beats: vec![(d, vec![x.strb])] }
                })
                .collect();
            writes += wb.len() as u64;
            masters.push(NativeMaster::writes(NativePort::slave(&sim, &format!("wr{k}"))?, &wb));
        }
        if let Some(e) = env {
            let seed = e.seed.wrapping_mul(1000).wrapping_add(i as u64 * 16);
            masters = masters.into_iter().enumerate().map(|(j, m)| m.random(seed + j as u64, e.req_stall, e.rsp_stall)).collect();
        }
        let ops: usize = ph.reads.iter().map(Vec::len).sum::<usize>() + ph.writes.iter().map(Vec::len).sum::<usize>();
        let budget = 100 + 20 * ops as u64;
        {
            let mut agents: Vec<&mut dyn Agent> = masters.iter_mut().map(|m| m as &mut dyn Agent).collect();
            agents.push(&mut monitor);
            Bench::new(budget).run(&mut sim, &mut agents)?;
        }
        let last = masters.iter().filter_map(|m| m.responses().last().copied()).max();
        let nr = p.read_ports as usize;
        phases.push(PhaseOutcome {
            reads: (0..nr)
                .map(|k| (0..ph.reads.get(k).map_or(0, Vec::len)).map(|i| BigUint::from_slice(masters[k].data(i)[0])).collect())
                .collect(),
            writes: (0..p.write_ports as usize).map(|k| masters[nr + k].responses().len() as u64).collect(),
            cycles: last.map_or(0, |l| l - start + 1),
        });
    }
    sim.trace_close();
    let cycles = phases.iter().map(|x| x.cycles).sum();
    Ok((Outcome { phases, cycles, counters: Counters { reads, writes, conflict_waits: waits.get() } }, timer.stats(&sim)))
}
