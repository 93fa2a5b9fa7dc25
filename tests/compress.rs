//! Compress/expand unit: cosimulation of the generated Verilog against the
//! golden model, lint and synthesis checks, snapshot of the default output.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::tools;
use gpurtl_hw::blocks::compress::build;
use gpurtl_params::compress::CompressParams;
use gpurtl_params::BlockParams;
use gpurtl_sim::models::compress as model;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use gpurtl_sim::tb::Stalls;
use gpurtl_tests::{failure_dir, seeds};

/// Parameter points: smallest width, default, a wide one at the deepest
/// pipeline, and the largest width.
const POINTS: &[(u32, u32)] = &[(64, 1), (128, 2), (256, 10), (1024, 4), (128, 6), (512, 15)];
const SEEDS: u64 = 200;

fn cosim(width: u32, latency: u32) {
    let p = CompressParams { width, latency };
    p.validate().expect("test point is valid");
    let design = build(&p).expect("design builds");
    let compiled = compile_design(&design).expect("verilator build");
    let mut ops_total = 0;
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 7919 + width as u64);
        let n = 1 + rng.below(40) as usize;
        let ops = tb::random_ops(&mut rng, width, n, None);
        ops_total += ops.len();
        // Every fourth seed runs without stalls so cycle counts are exact.
        let stalls = (seed % 4 != 0).then(|| Stalls {
            seed,
            in_pct: rng.below(70) as u32,
            out_pct: rng.below(70) as u32,
        });
        let want = model::run(&ops, latency);
        let got = tb::run(&compiled, width, &ops, stalls, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, _)) => {
                if let Some(i) = (0..n).find(|&i| got.results[i] != want.results[i]) {
                    Some(format!(
                        "op {i} {:?}\n  model: {:?}\n  rtl:   {:?}",
                        ops[i], want.results[i], got.results[i]
                    ))
                } else if stalls.is_none() && got.cycles != want.cycles {
                    Some(format!("cycles: model {} rtl {}", want.cycles, got.cycles))
                } else {
                    None
                }
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("compress_w{width}_l{latency}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, width, &ops, stalls, Some(&vcd));
            panic!(
                "compress width={width} latency={latency} seed {seed}: {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test compress",
                vcd.display()
            );
        }
    }
    eprintln!("compress width={width} latency={latency}: {} seeds, {ops_total} ops, all match", seeds(SEEDS).len());
}

#[test]
fn cosim_width64_latency1() {
    cosim(POINTS[0].0, POINTS[0].1)
}
#[test]
fn cosim_width128_latency2() {
    cosim(POINTS[1].0, POINTS[1].1)
}
#[test]
fn cosim_width256_latency10() {
    cosim(POINTS[2].0, POINTS[2].1)
}
#[test]
fn cosim_width1024_latency4() {
    cosim(POINTS[3].0, POINTS[3].1)
}
/// The `fpga` preset.
#[test]
fn cosim_width128_latency6() {
    cosim(POINTS[4].0, POINTS[4].1)
}
/// Every layer registered (the most latency at 512 bits).
#[test]
fn cosim_width512_latency15() {
    cosim(POINTS[5].0, POINTS[5].1)
}

/// Steady state is one vector per cycle: n ops take n - 1 + latency cycles.
#[test]
fn full_throughput_without_stalls() {
    let p = CompressParams { width: 128, latency: 3 };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let ops = tb::random_ops(&mut Rng::new(1), 128, 500, None);
    let (got, _) = tb::run(&compiled, 128, &ops, None, None).unwrap();
    assert_eq!(got.cycles, 500 - 1 + 3);
    assert_eq!(got.results, model::run(&ops, 3).results);
}

/// Output stalls must not lose or duplicate results, and a stalled pipeline
/// still refills at full rate: with the sink ready every other cycle the
/// run takes about twice as long, not more.
#[test]
fn back_pressure_keeps_order() {
    let p = CompressParams { width: 64, latency: 4 };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let ops = tb::random_ops(&mut Rng::new(2), 64, 300, None);
    let (got, _) = tb::run(&compiled, 64, &ops, Some(Stalls { seed: 5, in_pct: 0, out_pct: 90 }), None).unwrap();
    assert_eq!(got.results, model::run(&ops, 4).results);
}

fn generated(p: &CompressParams) -> (tempfile::TempDir, String, Vec<String>) {
    gpurtl_tests::generated(&build(p).unwrap())
}

#[test]
fn verilator_lint_wall_is_clean_at_every_point() {
    for &(width, latency) in POINTS.iter().chain(&[(512, 3), (64, 10), (1024, 1)]) {
        let (dir, top, _) = generated(&CompressParams { width, latency });
        if let Err(e) = tools::verilator_lint(dir.path(), &top) {
            panic!("width={width} latency={latency}: {e}");
        }
    }
}

#[test]
fn yosys_synth_check_assert_no_latches() {
    for &(width, latency) in &[(64u32, 1u32), (128, 2), (256, 10)] {
        let (dir, top, vs) = generated(&CompressParams { width, latency });
        let s = tools::yosys_synth(dir.path(), &top, &vs).unwrap_or_else(|e| panic!("width={width}: {e}"));
        assert!(s.cells > 0);
        assert!(!s.by_type.iter().any(|(t, _)| t.contains("LATCH")), "latches at width={width}: {:?}", s.by_type);
    }
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in CompressParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// The default-parameter output is kept in tests/snapshots so that a review
/// shows how a change alters the Verilog. Refresh with GPURTL_BLESS=1.
#[test]
fn default_output_matches_snapshot() {
    let p = CompressParams::default();
    gpurtl_tests::check_snapshot("compress", &build(&p).unwrap());
}
