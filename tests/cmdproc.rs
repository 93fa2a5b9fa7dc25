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

/// Silence the unused import of Status until a directed test uses it.
#[allow(dead_code)]
fn _status(s: Status) -> Status {
    s
}
