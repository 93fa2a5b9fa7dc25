//! Command processor front end: cosimulation of the generated Verilog against
//! the golden model (docs/cmdproc.md), lint and synthesis checks, snapshot.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_hw::blocks::cmdproc::build;
use gpurtl_params::cmdproc::{Cause, CmdprocParams, Opcode};
use gpurtl_params::BlockParams;
use gpurtl_sim::models::cmdproc::{self as model, Outcome, Status, Workload};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cmdproc::{self as tb, Env};
use gpurtl_tests::{failure_dir, seeds};
use std::collections::BTreeSet;

const SEEDS: u64 = 500;
const AXI_SEEDS: u64 = 200;

fn points() -> Vec<(&'static str, CmdprocParams)> {
    let pr = CmdprocParams::presets();
    vec![
        ("default", pr[0].1.clone()),
        // 32-bit fetch, nesting 0.
        ("small", pr[1].1.clone()),
        // 128-bit fetch, nesting 2.
        ("wide", pr[2].1.clone()),
        // Every queue at its smallest, one state register, 4-bit ids (they
        // wrap), nesting 3.
        ("tiny", CmdprocParams { fetch_bits: 64, pool_beats: 2, prim_beats: 2, out_depth: 1, prim_jobs: 1, state_regs: 1, nesting: 3, id_bits: 4, ..CmdprocParams::default() }),
        // One dword a beat with indirect buffers three deep, 3 jobs (not a
        // power of two), the largest table, 32-bit ids.
        ("narrow", CmdprocParams { fetch_bits: 32, pool_beats: 2, prim_beats: 2, out_depth: 1, prim_jobs: 3, state_regs: 64, nesting: 3, id_bits: 32, ..CmdprocParams::default() }),
        // Four dwords a beat through two-beat pools, the largest queues.
        ("deep", CmdprocParams { fetch_bits: 128, pool_beats: 2, prim_beats: 2, out_depth: 16, prim_jobs: 32, state_regs: 64, nesting: 3, id_bits: 32, ..CmdprocParams::default() }),
        // Compute mode (the gpu top's queue front end) at its preset.
        ("compute", CmdprocParams { compute: true, ..CmdprocParams::default() }),
        // Compute mode, one dword a beat, a one-entry output queue, small
        // capacities (a need of a few threads already fails) and 6-bit
        // block counts.
        ("compute_small", CmdprocParams { compute: true, fetch_bits: 32, pool_beats: 4, out_depth: 1, state_regs: 4, nesting: 2, max_threads: 48, max_regs: 640, max_smem: 3000, block_bits: 6, ..CmdprocParams::default() }),
        // Compute mode, four dwords a beat (both packets of a cycle may be
        // SET_SH_REGs or a dispatch and its registers), the largest
        // scratchpad capacity (2^18: above any LDS_SIZE, so never `need`).
        ("compute_wide", CmdprocParams { compute: true, fetch_bits: 128, out_depth: 2, max_threads: 1024, max_regs: 4096, max_smem: 262144, block_bits: 20, ..CmdprocParams::default() }),
    ]
}

fn random_env(rng: &mut Rng, seed: u64) -> Env {
    let pct = |rng: &mut Rng| if rng.chance(25) { 0 } else { rng.below(70) as u32 };
    Env {
        seed,
        latency: (1, 1 + rng.below(30) as u32),
        imem_req_stall: pct(rng),
        imem_rsp_stall: pct(rng),
        pmem_req_stall: pct(rng),
        pmem_rsp_stall: pct(rng),
        wr_stall: pct(rng),
        cmd_stall: pct(rng),
        prim_stall: pct(rng),
        axi_stall: pct(rng),
    }
}

/// What the random workloads reached, so that the test fails if the
/// stimulus stops covering a path.
#[derive(Default)]
struct Reached {
    opcodes: BTreeSet<u32>,
    causes: BTreeSet<&'static str>,
    done: usize,
    prims: usize,
    writes: usize,
    /// State readers whose state a later `SET_CONTEXT_REG` changed (the
    /// state hold matters for them).
    overwritten: usize,
    /// The same for dispatches' snapshots and `SET_SH_REG` (compute mode).
    snapshots_overwritten: usize,
}

impl Reached {
    fn add(&mut self, o: &Outcome) {
        for c in &o.commands {
            self.opcodes.insert((c.record.header >> 8) & 0xFF);
            self.prims += c.prims.len();
            self.overwritten += c.state.as_ref().is_some_and(|s| *s != o.state_table) as usize;
            self.snapshots_overwritten += c.sh.as_ref().is_some_and(|s| Some(s) != o.sh_table.as_ref()) as usize;
        }
        match o.error {
            Some((c, _)) => {
                self.causes.insert(c.name());
            }
            None => self.done += 1,
        }
        self.writes += o.memory_writes.len();
    }
}

fn compare(name: &str, seed: u64, want: &Outcome, got: &Outcome, exact_cycles: bool) -> Option<String> {
    let mut want = want.clone();
    if !exact_cycles {
        want.cycles = got.cycles;
    }
    if &want == got {
        return None;
    }
    let first = want.commands.iter().zip(&got.commands).position(|(a, b)| a != b);
    Some(format!(
        "{name} seed {seed}: outcomes differ (first differing command {first:?})\n  model: status {:?} error {:?} irq {} cycles {} commands {} writes {:?} state {:x?}\n  rtl:   status {:?} error {:?} irq {} cycles {} commands {} writes {:?} state {:x?}\n  model trace: {:?}\n  rtl trace:   {:?}",
        want.status, want.error, want.irq, want.cycles, want.commands.len(), want.memory_writes, want.state_table,
        got.status, got.error, got.irq, got.cycles, got.commands.len(), got.memory_writes, got.state_table,
        want.trace, got.trace,
    ))
}

/// Cosimulation over random workloads. Native memory: `SEEDS` seeds, every
/// fourth with fixed latency and no stalls, so cycles must match too.
/// `mem_if = axi4`: `AXI_SEEDS` seeds, every one through the AXI4 slave
/// agent with random latency, readiness, R/B gaps and reordering across the
/// two fetchers' IDs (and every 20th also through the deterministic slave);
/// every field but `cycles` (BUSY_CYCLES: the fetchers share the AXI read
/// channel, so the model's timing does not apply) must match, the writes
/// read from the slave's write log.
fn cosim(name: &str, p: &CmdprocParams) {
    p.validate().expect("test point is valid");
    let axi = p.mem_if == gpurtl_params::MemIf::Axi4;
    let n_seeds = if axi { AXI_SEEDS } else { SEEDS };
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let mut reached = Reached::default();
    for seed in seeds(n_seeds) {
        let mut rng = Rng::new(seed * 7_919 + p.fetch_bits as u64 + p.nesting as u64);
        let lat = 1 + rng.below(24) as u32;
        // Every fourth seed: fixed latency, no stalls, so cycles must match.
        let stalled = seed % 4 != 0 || axi;
        let env = stalled.then(|| random_env(&mut rng, seed));
        // Every eighth seed: two or three runs in one simulation (the
        // doorbell restarts after an error), extra doorbells while busy.
        let runs = if seed % 8 == 5 { 2 + rng.below(2) as usize } else { 1 };
        let mut ws: Vec<Workload> = (0..runs).map(|_| tb::random_workload(&mut rng, p, lat)).collect();
        // Half the unstalled seeds: the run input's own back-pressure on the
        // pipeline port (`"pipeline"`), which both engines follow cycle for
        // cycle, so cycles still match.
        if !stalled && rng.chance(50) {
            for w in &mut ws {
                w.pipeline = model::Pipeline { stall: [0.2, 0.5, 0.8][rng.below(3) as usize], seed: rng.next_u64(), ..Default::default() };
            }
        }
        // Compute mode, two seeds of five: the top's verdict `kerr_i` on a
        // few command ids; those that are dispatches stop the run (`kernel`).
        if p.compute && rng.chance(40) {
            for w in &mut ws {
                w.pipeline.kerr = (0..1 + rng.below(3)).map(|_| rng.below(24) as u16).collect();
            }
        }
        let wants: Vec<Outcome> = ws.iter().map(|w| model::run(p, w)).collect();
        let got = tb::run_many(&compiled, p, &ws, env, runs > 1, None);
        let problem = match &got {
            Err(e) => Some(format!("{name} seed {seed}: the RTL run failed: {e}")),
            Ok((outs, _)) => wants.iter().zip(outs).find_map(|(w, g)| compare(name, seed, w, g, !stalled)),
        };
        let problem = problem.or_else(|| match (axi && seed % 20 == 0).then(|| tb::run_many(&compiled, p, &ws, None, runs > 1, None)) {
            Some(Err(e)) => Some(format!("{name} seed {seed}: the RTL run through the deterministic slave failed: {e}")),
            Some(Ok((outs, _))) => wants.iter().zip(&outs).find_map(|(w, g)| compare(name, seed, w, g, false)),
            None => None,
        });
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("cmdproc_{name}_seed{seed}.vcd"));
            let _ = tb::run_many(&compiled, p, &ws, env, runs > 1, Some(&vcd));
            panic!(
                "{problem}\n  env {env:?}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test cmdproc cosim_{name}\n  workloads: {ws:?}",
                vcd.display()
            );
        }
        for w in &wants {
            reached.add(w);
        }
    }
    if std::env::var("GPURTL_SEED").is_err() {
        // Every opcode that commits in this mode (draws do not in compute
        // mode), every cause the mode can raise.
        let all_ops: BTreeSet<u32> = Opcode::ALL
            .iter()
            .filter(|o| o.known(p) && !(p.compute && o.is_draw()))
            .map(|o| o.code())
            .filter(|&c| p.nesting > 0 || c != Opcode::IndirectBuffer.code())
            .collect();
        assert!(reached.opcodes.is_superset(&all_ops), "{name}: opcodes reached {:x?}", reached.opcodes);
        let causes: BTreeSet<&str> =
            Cause::ALL.iter().filter(|c| if p.compute { **c != Cause::PrimRange } else { !c.compute_only() }).map(|c| c.name()).collect();
        assert_eq!(reached.causes, causes, "{name}: causes reached");
        assert!(reached.done > n_seeds as usize / 4 && (reached.prims > 0 || p.compute) && reached.writes > 0, "{name}: done {} prims {} writes {}", reached.done, reached.prims, reached.writes);
        if p.compute {
            assert!(reached.snapshots_overwritten >= 20, "{name}: only {} dispatches saw a snapshot that a later SET_SH_REG changed", reached.snapshots_overwritten);
        }
        assert!(reached.overwritten >= 20, "{name}: only {} state readers saw a state that a later SET_CONTEXT_REG changed", reached.overwritten);
    }
}

#[test]
fn cosim_compute() {
    let (n, p) = &points()[6];
    cosim(n, p)
}
#[test]
fn cosim_compute_small() {
    let (n, p) = &points()[7];
    cosim(n, p)
}
#[test]
fn cosim_compute_wide() {
    let (n, p) = &points()[8];
    cosim(n, p)
}

#[test]
fn cosim_default() {
    let (n, p) = &points()[0];
    cosim(n, p)
}
#[test]
fn cosim_small() {
    let (n, p) = &points()[1];
    cosim(n, p)
}
#[test]
fn cosim_wide() {
    let (n, p) = &points()[2];
    cosim(n, p)
}
#[test]
fn cosim_tiny() {
    let (n, p) = &points()[3];
    cosim(n, p)
}

#[test]
fn cosim_narrow() {
    let (n, p) = &points()[4];
    cosim(n, p)
}
#[test]
fn cosim_deep() {
    let (n, p) = &points()[5];
    cosim(n, p)
}
/// The default point with `mem_if = axi4`: both fetchers and the writes
/// through one AXI4 master, behind the AXI4 slave agent.
#[test]
fn cosim_axi4() {
    let p = CmdprocParams { mem_if: gpurtl_params::MemIf::Axi4, ..CmdprocParams::default() };
    cosim("axi4", &p)
}

/// A type-3 packet: header and payload.
fn pkt(op: Opcode, payload: &[u32]) -> Vec<u32> {
    let n = payload.len() as u32;
    let mut v = vec![gpurtl_sim::models::cmdproc::pm4::header(op, n)];
    v.extend_from_slice(payload);
    v
}

fn workload(cmd_base: u32, cmd: Vec<u32>, prim_base: u32, prims: Vec<u32>, prim_size: u32, latency: u32) -> Workload {
    use gpurtl_sim::models::cmdproc::Registers;
    let cmd_size = 4 * cmd.len() as u32;
    let mut memory = vec![(cmd_base, cmd)];
    if !prims.is_empty() {
        memory.push((prim_base, prims));
    }
    Workload {
        registers: Registers { cmd_base, cmd_size, prim_base, prim_size, state: vec![], state_ptr: 0x5000, irq_enable: 3 },
        memory,
        mem_latency: latency,
        pipeline: Default::default(),
    }
}

/// The RTL, unstalled and stalled, against the model; the unstalled outcome.
fn agree(what: &str, p: &CmdprocParams, w: &Workload) -> Outcome {
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let want = model::run(p, w);
    let (got, _) = tb::run(&compiled, p, w, None, None).unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(d) = compare(what, 0, &want, &got, true) {
        panic!("{d}");
    }
    let mut rng = Rng::new(7);
    let (got, _) = tb::run(&compiled, p, w, Some(random_env(&mut rng, 7)), None).unwrap_or_else(|e| panic!("{what} stalled: {e}"));
    if let Some(d) = compare(what, 7, &want, &got, false) {
        panic!("{d}");
    }
    want
}

fn addrs(o: &Outcome) -> Vec<u32> {
    o.commands.iter().map(|c| c.record.addr).collect()
}

/// Buffers, writes, returns and index reads that cross 2^32 wrap around.
#[test]
fn addresses_wrap_around() {
    let wide = CmdprocParams::presets()[2].1.clone();
    let cmd = [
        pkt(Opcode::SetContextReg, &[0, 0xAAAA, 0xBBBB]),
        pkt(Opcode::DrawIndexAuto, &[5, 6]),
        pkt(Opcode::WriteData, &[0, 0xFFFF_FFF8, 0, 1, 2, 3]),
    ]
    .concat();
    let o = agree("command buffer across 2^32", &wide, &workload(0xFFFF_FFF4, cmd, 0, vec![], 0, 5));
    assert_eq!(o.status, Status::Done);
    assert_eq!(addrs(&o), vec![0xFFFF_FFF4, 0x0000_0004, 0x0000_0010]);
    assert_eq!(&o.state_table[..2], &[0xAAAA, 0xBBBB]);
    assert_eq!(o.memory_writes, vec![(0xFFFF_FFF8, vec![1, 2, 3])]);
    // The return address after an indirect buffer wraps.
    let cmd = [pkt(Opcode::IndirectBuffer, &[0x2000, 0, 1]), pkt(Opcode::Nop, &[7])].concat();
    let mut w = workload(0xFFFF_FFF0, cmd, 0, vec![], 0, 3);
    w.memory.push((0x2000, pkt(Opcode::Nop, &[])));
    let o = agree("return across 2^32", &CmdprocParams::default(), &w);
    assert_eq!(addrs(&o), vec![0xFFFF_FFF0, 0x2000, 0x0000_0000]);
    // 16-bit indices across 2^32: o = 5, m = 10 from 0xFFFFFFF0.
    let cmd = [pkt(Opcode::IndexType, &[0]), pkt(Opcode::DrawIndexOffset2, &[0, 5, 10, 0])].concat();
    let mut w = workload(0x1000, cmd, 0xFFFF_FFF0, (0..4).map(|k| ((2 * k + 1) << 16) | (2 * k)).collect(), 0x40, 4);
    w.memory.push((0, (0..4).map(|k| ((2 * k + 9) << 16) | (2 * k + 8)).collect()));
    let o = agree("indices across 2^32", &wide, &w);
    assert_eq!(o.commands[1].prims, (5..15).collect::<Vec<u32>>());
}

/// The longest payload, started as a cycle's second packet, and a buffer
/// longer than 2^15 dwords (the overrun compare sees its upper bits).
#[test]
fn longest_packets() {
    let wide = CmdprocParams::presets()[2].1.clone();
    let mut nop: Vec<u32> = (0..16384).map(|i| i as u32).collect();
    nop[0] = pkt(Opcode::Nop, &[0; 16383])[0];
    let cmd = [pkt(Opcode::DispatchDirect, &[1, 2, 3, 4]), nop.clone(), pkt(Opcode::DrawIndexAuto, &[5, 6])].concat();
    let o = agree("a 16383-dword NOP", &wide, &workload(0x10_0000, cmd, 0, vec![], 0, 2));
    assert_eq!(addrs(&o), vec![0x10_0000, 0x10_0014, 0x10_0014 + 4 * 16384]);
    assert_eq!((o.commands[1].record.count, o.commands[1].record.p), (16383, [1, 2, 3, 4, 0, 0]));
    let cmd = [nop.clone(), nop, vec![0x8000_0000]].concat();
    let o = agree("two of them and a filler", &CmdprocParams::default(), &workload(0x10_0000, cmd, 0, vec![], 0, 2));
    assert_eq!((o.status, o.commands.len()), (Status::Done, 2));
}

/// Draws wait for a job slot; their indices leave in order, the fence after
/// them all; one long draw through a two-beat primitive pool.
#[test]
fn draws_wait_for_job_slots() {
    let p = CmdprocParams { prim_jobs: 3, prim_beats: 2, ..CmdprocParams::default() };
    let mut cmd: Vec<u32> = (0..7).flat_map(|i| pkt(Opcode::DrawIndexOffset2, &[0, i, 1, 0])).collect();
    cmd.extend(pkt(Opcode::WriteData, &[0, 0x9000, 0, 42]));
    cmd.extend(pkt(Opcode::DrawIndexOffset2, &[0, 0, 5000, 0]));
    let prims: Vec<u32> = (0..5000).map(|i| i * 3 + 1).collect();
    let o = agree("draws and a fence", &p, &workload(0x1000, cmd, 0x4_0000, prims.clone(), 4 * 5000, 50));
    assert_eq!(o.status, Status::Done);
    for (c, &want) in o.commands.iter().zip(&prims).take(7) {
        assert_eq!(c.prims, vec![want]);
    }
    assert_eq!(o.commands[8].prims, prims);
    assert_eq!(o.memory_writes, vec![(0x9000, vec![42])]);
}

/// Two SET_CONTEXT_REG packets write register 5 in one cycle (lane 0 of the
/// first, lane 3 of the second): the second's value stays.
#[test]
fn the_later_write_of_a_register_wins() {
    let wide = CmdprocParams::presets()[2].1.clone();
    let cmd = [pkt(Opcode::SetContextReg, &[3, 30, 40, 50]), pkt(Opcode::SetContextReg, &[5, 55, 66])].concat();
    let o = agree("two writes of a register", &wide, &workload(0x1000, cmd, 0, vec![], 0, 1));
    assert_eq!(&o.state_table[3..7], &[30, 40, 55, 66]);
}

/// At the points that differ in fetch width (the lanes' logic) and in
/// every queue's size; the others are linted by the parameter-space test's
/// random points (synthesis takes a while at each). A full synthesis at the
/// default point, yosys's checks without it at the others (a full one at
/// each with `GPURTL_FULL=1`: `deep`'s takes 40 s).
#[test]
fn verilator_lint_and_yosys_are_clean() {
    for (name, p) in points().into_iter().filter(|(n, _)| matches!(*n, "default" | "narrow" | "deep")) {
        p.validate().expect("test point is valid");
        gpurtl_tests::lint_and_yosys_clean(name, &build(&p).unwrap(), name == "default");
    }
}

#[test]
fn default_output_matches_snapshot() {
    gpurtl_tests::check_snapshot("cmdproc", &build(&CmdprocParams::default()).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    gpurtl_tests::check_stable(|| build(&CmdprocParams::default()).unwrap());
}


/// The register interface, driven cycle by cycle: strobes, read-only and
/// unmapped offsets, address bits [1:0], doorbells that are not, writes and
/// doorbells during a run, IRQ_STATUS across runs and its clearing, a write
/// offered while its response is held back, a read and a write in one
/// cycle. Every expected value is from docs/cmdproc.md ("Registers").
#[test]
fn axi_register_interface() {
    use gpurtl_params::cmdproc::reg;
    use gpurtl_sim::cosim::{PortHandle, Sim};
    use std::collections::{HashMap, VecDeque};

    struct Bench {
        sim: Sim,
        h: HashMap<&'static str, PortHandle>,
        mem: HashMap<u32, u32>,
        pending: VecDeque<(u32, u64)>,
        now: u64,
        busy_cycles: u64,
    }
    impl Bench {
        fn set(&mut self, n: &'static str, v: u64) {
            let p = self.h[n];
            self.sim.set(p, v);
        }
        fn get(&self, n: &'static str) -> u64 {
            self.sim.get(self.h[n])
        }
        /// One cycle: the memory (latency 1) and always-ready sinks; the
        /// AXI inputs as set. Returns whether (aw/w, ar) were taken.
        fn cycle(&mut self) -> (bool, bool) {
            let due = self.pending.front().filter(|x| x.1 <= self.now).map(|x| x.0);
            self.set("imem_rsp_valid_i", due.is_some() as u64);
            let beat = due.map_or(0, |a| self.mem.get(&a).copied().unwrap_or(0) as u64 | (self.mem.get(&(a + 4)).copied().unwrap_or(0) as u64) << 32);
            self.set("imem_rsp_data_i", beat);
            for r in ["imem_req_ready_i", "pmem_req_ready_i", "wr_ready_i", "cmd_ready_i", "prim_ready_i"] {
                self.set(r, 1);
            }
            self.sim.eval();
            if due.is_some() {
                self.pending.pop_front();
            }
            if self.get("imem_req_valid_o") == 1 {
                let a = self.get("imem_req_addr_o") as u32;
                self.pending.push_back((a, self.now + 1));
            }
            self.busy_cycles += self.get("busy_o");
            let w = self.get("s_axi_awready") == 1;
            let r = self.get("s_axi_arready") == 1 && self.get("s_axi_arvalid") == 1;
            self.sim.tick();
            self.now += 1;
            (w, r)
        }
        fn write(&mut self, addr: u32, data: u32, strb: u32) {
            self.set("s_axi_awvalid", 1);
            self.set("s_axi_wvalid", 1);
            self.set("s_axi_awaddr", addr as u64);
            self.set("s_axi_wdata", data as u64);
            self.set("s_axi_wstrb", strb as u64);
            self.set("s_axi_bready", 1);
            for _ in 0..10 {
                if self.cycle().0 {
                    break;
                }
            }
            self.set("s_axi_awvalid", 0);
            self.set("s_axi_wvalid", 0);
            self.sim.eval();
            assert_eq!((self.get("s_axi_bvalid"), self.get("s_axi_bresp")), (1, 0), "write response");
            self.cycle();
        }
        fn read(&mut self, addr: u32) -> u32 {
            self.set("s_axi_arvalid", 1);
            self.set("s_axi_araddr", addr as u64);
            self.set("s_axi_rready", 1);
            for _ in 0..10 {
                if self.cycle().1 {
                    break;
                }
            }
            self.set("s_axi_arvalid", 0);
            self.sim.eval();
            assert_eq!((self.get("s_axi_rvalid"), self.get("s_axi_rresp")), (1, 0), "read response");
            let v = self.get("s_axi_rdata") as u32;
            self.cycle();
            v
        }
        fn wait_idle(&mut self) {
            for _ in 0..10_000 {
                self.sim.eval();
                if self.get("busy_o") == 0 {
                    return;
                }
                self.cycle();
            }
            panic!("the run did not end");
        }
    }

    let p = CmdprocParams::default();
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    let mut sim = compiled.start(None).unwrap();
    let names = [
        "rst_i", "s_axi_awvalid", "s_axi_awready", "s_axi_awaddr", "s_axi_wvalid", "s_axi_wready", "s_axi_wdata", "s_axi_wstrb",
        "s_axi_bvalid", "s_axi_bready", "s_axi_bresp", "s_axi_arvalid", "s_axi_arready", "s_axi_araddr", "s_axi_rvalid",
        "s_axi_rready", "s_axi_rdata", "s_axi_rresp", "imem_req_valid_o", "imem_req_ready_i", "imem_req_addr_o",
        "imem_rsp_valid_i", "imem_rsp_data_i", "pmem_req_ready_i", "wr_ready_i", "cmd_ready_i", "prim_ready_i", "busy_o",
        "irq_o", "state_o",
    ];
    let h: HashMap<&'static str, PortHandle> = names.iter().map(|n| (*n, sim.port(n).unwrap())).collect();
    sim.reset(h["rst_i"], 2);
    let mut b = Bench { sim, h, mem: HashMap::new(), pending: VecDeque::new(), now: 0, busy_cycles: 0 };
    b.sim.eval();
    assert!(b.sim.words(b.h["state_o"]).iter().all(|&w| w == 0), "the table resets to 0");
    // Every offset reads 0 after reset; unmapped ones and DOORBELL always.
    for a in (0..0x40 + 4 * p.state_regs + 8).step_by(4) {
        assert_eq!(b.read(a), 0, "offset 0x{a:x} after reset");
    }
    // Strobes, bits that read 0, address bits [1:0].
    b.write(reg::PRIM_SIZE, 0x1234_AB00, 0b0010);
    assert_eq!(b.read(reg::PRIM_SIZE), 0x0000_AB00);
    b.write(reg::PRIM_SIZE + 1, 0x1234_5678, 0b0001);
    assert_eq!(b.read(reg::PRIM_SIZE + 2), 0x0000_AB78);
    b.write(reg::CMD_BASE, 0x1003, 0xF);
    assert_eq!(b.read(reg::CMD_BASE), 0x1000);
    b.write(reg::IRQ_ENABLE, 0xFFFF_FFFF, 0xF);
    assert_eq!(b.read(reg::IRQ_ENABLE), 3);
    for ro in [reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::IRQ_STATUS, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IGNORED, 0x38, 0x3C] {
        b.write(ro, 0xFFFF_FFFF, 0xF);
        assert_eq!(b.read(ro), 0, "offset 0x{ro:x} is not writable");
    }
    b.write(reg::STATE_INIT + 4, 77, 0xF);
    assert_eq!(b.read(reg::STATE_INIT + 4), 77);
    // A NOP of 100 payload dwords at 0x1000; then a type-0 header.
    let nop = pkt(Opcode::Nop, &[9; 100]);
    for (i, d) in nop.iter().chain(&[0u32]).enumerate() {
        b.mem.insert(0x1000 + 4 * i as u32, *d);
    }
    b.write(reg::CMD_SIZE, 4 * 102, 0xF);
    b.write(reg::STATE_PTR, 0x5000, 0xF);
    // Not doorbells: another value, byte 0 not strobed.
    b.write(reg::DOORBELL, 2, 0xF);
    b.write(reg::DOORBELL, 1, 0b1110);
    b.sim.eval();
    assert_eq!(b.get("busy_o"), 0, "not a doorbell");
    b.busy_cycles = 0;
    b.write(reg::DOORBELL, 1, 0xF);
    assert_eq!(b.get("busy_o"), 1);
    assert_eq!(b.sim.words(b.h["state_o"])[1], 77, "the table from STATE_INIT at the doorbell");
    // During the run: descriptor registers change the next run only; two
    // doorbells and one non-doorbell; STATE_INIT changes.
    b.write(reg::DOORBELL, 1, 0xF);
    b.write(reg::DOORBELL, 3, 0xF);
    b.write(reg::DOORBELL, 1, 0x1);
    b.write(reg::STATE_INIT + 4, 88, 0xF);
    b.write(reg::CMD_SIZE, 8, 0xF);
    assert_eq!(b.read(reg::STATUS), reg::STATUS_BUSY);
    b.wait_idle();
    // One command, then `type` at 0x1000 + 404.
    assert_eq!(b.read(reg::STATUS), reg::STATUS_ERROR);
    assert_eq!((b.read(reg::ERR_CAUSE), b.read(reg::ERR_ADDR)), (Cause::Type.code(), 0x1000 + 404));
    assert_eq!(b.read(reg::CMD_COUNT), 1);
    assert_eq!(b.read(reg::IGNORED), 2);
    assert_eq!(b.read(reg::BUSY_CYCLES) as u64, b.busy_cycles);
    assert_eq!(b.sim.words(b.h["state_o"])[1], 77, "STATE_INIT written during the run is for the next one");
    assert_eq!(b.read(reg::IRQ_STATUS), reg::IRQ_ERROR);
    b.sim.eval();
    assert_eq!(b.get("irq_o"), 1);
    // The next run: one 1-dword NOP; IRQ_STATUS keeps the error bit.
    b.write(reg::CMD_SIZE, 4, 0xF);
    b.mem.insert(0x1000, pkt(Opcode::Nop, &[])[0]);
    b.write(reg::DOORBELL, 1, 0xF);
    assert_eq!(b.sim.words(b.h["state_o"])[1], 88);
    b.wait_idle();
    assert_eq!(b.read(reg::STATUS), reg::STATUS_DONE);
    assert_eq!((b.read(reg::ERR_CAUSE), b.read(reg::ERR_ADDR)), (0, 0), "a doorbell clears the error registers");
    assert_eq!(b.read(reg::IRQ_STATUS), reg::IRQ_ERROR | reg::IRQ_DONE, "a doorbell does not clear IRQ_STATUS");
    // Clearing: byte 0 must be strobed; only the bits written as 1.
    b.write(reg::IRQ_STATUS, 3, 0b0010);
    assert_eq!(b.read(reg::IRQ_STATUS), 3);
    b.write(reg::IRQ_STATUS, reg::IRQ_DONE, 0x1);
    assert_eq!(b.read(reg::IRQ_STATUS), reg::IRQ_ERROR);
    b.sim.eval();
    assert_eq!(b.get("irq_o"), 1);
    b.write(reg::IRQ_ENABLE, reg::IRQ_DONE, 0xF);
    b.sim.eval();
    assert_eq!(b.get("irq_o"), 0, "IRQ_ENABLE acts at once");
    // A write offered while the last write's response is held back waits.
    b.set("s_axi_awvalid", 1);
    b.set("s_axi_wvalid", 1);
    b.set("s_axi_awaddr", reg::STATE_PTR as u64);
    b.set("s_axi_wdata", 0x6000);
    b.set("s_axi_wstrb", 0xF);
    b.set("s_axi_bready", 0);
    assert!(b.cycle().0, "taken");
    for _ in 0..3 {
        b.set("s_axi_wdata", 0x7000);
        b.sim.eval();
        assert_eq!((b.get("s_axi_bvalid"), b.get("s_axi_awready"), b.get("s_axi_wready")), (1, 0, 0));
        b.cycle();
    }
    b.set("s_axi_bready", 1);
    b.cycle();
    assert!(b.cycle().0, "taken once the response has gone");
    b.set("s_axi_awvalid", 0);
    b.set("s_axi_wvalid", 0);
    b.cycle();
    // A read and a write of one register in one cycle: the read gives the
    // value before the write.
    b.set("s_axi_awvalid", 1);
    b.set("s_axi_wvalid", 1);
    b.set("s_axi_wdata", 0x8000);
    b.set("s_axi_arvalid", 1);
    b.set("s_axi_araddr", reg::STATE_PTR as u64);
    b.set("s_axi_rready", 1);
    let (w, r) = b.cycle();
    assert!(w && r);
    b.set("s_axi_awvalid", 0);
    b.set("s_axi_wvalid", 0);
    b.set("s_axi_arvalid", 0);
    b.sim.eval();
    assert_eq!(b.get("s_axi_rdata"), 0x7000);
    b.cycle();
    assert_eq!(b.read(reg::STATE_PTR), 0x8000);
}

/// Render state in order (issue 26): draws and a dispatch held on the
/// pipeline port (the run input's `"pipeline"` back-pressure) while later
/// `SET_CONTEXT_REG` packets wait behind them; each keeps its own state, in
/// both engines, cycle for cycle.
#[test]
fn state_readers_keep_their_state_under_back_pressure() {
    let p = CmdprocParams::default();
    let cmd = [
        pkt(Opcode::SetContextReg, &[0, 1, 2]),
        pkt(Opcode::DrawIndexAuto, &[3, 0]),
        pkt(Opcode::SetContextReg, &[0, 10]),
        pkt(Opcode::SetContextReg, &[1, 20, 30]),
        pkt(Opcode::DispatchDirect, &[1, 1, 1, 0]),
        pkt(Opcode::SetContextReg, &[2, 40]),
        pkt(Opcode::DrawIndexAuto, &[3, 0]),
        pkt(Opcode::Nop, &[]),
    ]
    .concat();
    let mut w = workload(0x1000, cmd, 0, vec![], 0, 3);
    w.pipeline = model::Pipeline { stall: 0.8, seed: 11, ..Default::default() };
    let o = agree("readers under back-pressure", &p, &w);
    assert_eq!(o.status, Status::Done);
    let states: Vec<Vec<u32>> = o.commands.iter().filter_map(|c| c.state.as_ref().map(|s| s[..3].to_vec())).collect();
    assert_eq!(states, vec![vec![1, 2, 0], vec![10, 20, 30], vec![10, 20, 40]]);
    let mut free = w.clone();
    free.pipeline = Default::default();
    assert!(model::run(&p, &w).cycles > model::run(&p, &free).cycles, "the stalls cost cycles");
}

/// Compute mode's dispatch barrier and `kerr_i`, directed, in both engines
/// cycle for cycle (docs/cmdproc.md, "`DISPATCH_DIRECT`"): NOPs behind a
/// dispatch commit only after it has left, at once and with the dispatch
/// held by the pipeline; a listed dispatch ends the run in `kernel` at its
/// address with nothing after it read (a bad header behind it included).
#[test]
fn dispatch_barrier_and_kernel_errors() {
    let p = CmdprocParams { compute: true, fetch_bits: 64, ..CmdprocParams::default() };
    let ssr = pkt(Opcode::SetShReg, &[0x207, 1, 1, 1]);
    let disp = pkt(Opcode::DispatchDirect, &[1, 1, 1, 0]);
    let nop = pkt(Opcode::Nop, &[0]);
    let cmd: Vec<u32> = [ssr.clone(), disp.clone(), nop.clone(), nop.clone()].concat();
    let w = workload(0x1000, cmd, 0, vec![], 0, 1);
    let o = agree("a dispatch and two NOPs", &p, &w);
    // The model's own unit tests derive 12 cycles from the spec.
    assert_eq!((o.cycles, o.commands.len(), o.error), (12, 4, None));
    let mut held = w.clone();
    held.pipeline = model::Pipeline { stall: 0.5, seed: 1272, ..Default::default() };
    assert_eq!(agree("a held dispatch and two NOPs", &p, &held).cycles, 13);
    // kerr on the dispatch (id 1): the run stops there.
    let mut k = w.clone();
    k.pipeline.kerr = vec![1];
    let o = agree("a dispatch with kerr", &p, &k);
    assert_eq!((o.commands.len(), o.error), (2, Some((Cause::Kernel, 0x1000 + 4 * ssr.len() as u32))));
    // ... also with a bad header right behind it, which is never read.
    let bad: Vec<u32> = [ssr, disp, vec![0x1234_5678], nop].concat();
    let mut kb = workload(0x1000, bad, 0, vec![], 0, 3);
    kb.pipeline = model::Pipeline { stall: 0.5, seed: 80, kerr: vec![1] };
    assert_eq!(agree("a dispatch with kerr before a bad header", &p, &kb).error.map(|e| e.0), Some(Cause::Kernel));
}
