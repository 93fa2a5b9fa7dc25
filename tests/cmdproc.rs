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
        ("tiny", CmdprocParams { fetch_bits: 64, pool_beats: 2, prim_beats: 2, out_depth: 1, prim_jobs: 1, state_regs: 1, nesting: 3, id_bits: 4 }),
        // One dword a beat with indirect buffers three deep, 3 jobs (not a
        // power of two), the largest table, 32-bit ids.
        ("narrow", CmdprocParams { fetch_bits: 32, pool_beats: 2, prim_beats: 2, out_depth: 1, prim_jobs: 3, state_regs: 64, nesting: 3, id_bits: 32 }),
        // Four dwords a beat through two-beat pools, the largest queues.
        ("deep", CmdprocParams { fetch_bits: 128, pool_beats: 2, prim_beats: 2, out_depth: 16, prim_jobs: 32, state_regs: 64, nesting: 3, id_bits: 32 }),
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
}

impl Reached {
    fn add(&mut self, o: &Outcome) {
        for c in &o.commands {
            self.opcodes.insert((c.record.header >> 8) & 0xFF);
            self.prims += c.prims.len();
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

fn cosim(name: &str, p: &CmdprocParams) {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let mut reached = Reached::default();
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 7_919 + p.fetch_bits as u64 + p.nesting as u64);
        let lat = 1 + rng.below(24) as u32;
        // Every fourth seed: fixed latency, no stalls, so cycles must match.
        let stalled = seed % 4 != 0;
        let env = stalled.then(|| random_env(&mut rng, seed));
        // Every eighth seed: two or three runs in one simulation (the
        // doorbell restarts after an error), extra doorbells while busy.
        let runs = if seed % 8 == 5 { 2 + rng.below(2) as usize } else { 1 };
        let ws: Vec<Workload> = (0..runs).map(|_| tb::random_workload(&mut rng, p, lat)).collect();
        let wants: Vec<Outcome> = ws.iter().map(|w| model::run(p, w)).collect();
        let got = tb::run_many(&compiled, p, &ws, env, runs > 1, None);
        let problem = match &got {
            Err(e) => Some(format!("{name} seed {seed}: the RTL run failed: {e}")),
            Ok((outs, _)) => wants.iter().zip(outs).find_map(|(w, g)| compare(name, seed, w, g, !stalled)),
        };
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
        let all_ops: BTreeSet<u32> = Opcode::ALL.iter().map(|o| o.code()).filter(|&c| p.nesting > 0 || c != Opcode::IndirectBuffer.code()).collect();
        assert!(reached.opcodes.is_superset(&all_ops), "{name}: opcodes reached {:x?}", reached.opcodes);
        let causes: BTreeSet<&str> = Cause::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(reached.causes, causes, "{name}: causes reached");
        assert!(reached.done > SEEDS as usize / 4 && reached.prims > 0 && reached.writes > 0, "{name}: done {} prims {} writes {}", reached.done, reached.prims, reached.writes);
    }
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

/// A type-3 packet: header and payload.
fn pkt(op: Opcode, payload: &[u32]) -> Vec<u32> {
    let n = payload.len() as u32;
    let mut v = vec![(3 << 30) | (((n + 0x3FFF) & 0x3FFF) << 16) | (op.code() << 8)];
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
    assert_eq!((o.commands[1].record.count, o.commands[1].record.p), (16383, [1, 2, 3, 4]));
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

#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    for (name, p) in points() {
        p.validate().expect("test point is valid");
        gpurtl_tests::lint_and_synth_clean(name, &build(&p).unwrap());
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

