//! Constant-buffer burst load: cosimulation of the generated Verilog against
//! the golden model (docs/cbload.md), lint and synthesis checks, snapshot.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_hw::blocks::cbload::build;
use gpurtl_params::cbload::{CbloadParams, ErrorKind};
use gpurtl_params::BlockParams;
use gpurtl_sim::models::cbload as model;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cbload::{self as tb, Env};
use gpurtl_tests::{failure_dir, seeds};

const SEEDS: u64 = 200;


fn points() -> Vec<(&'static str, CbloadParams)> {
    let d = CbloadParams::default();
    vec![
        ("default", d.clone()),
        ("small", CbloadParams::presets()[1].1.clone()),
        // One beat per register, odd register and view counts, O = 1.
        (
            "narrow",
            CbloadParams { reg_bits: 64, read_bits: 64, regs: 13, views: 5, max_burst: 7, max_outstanding: 1, addr_bits: 20, tag_bits: 3, mem_if: gpurtl_params::MemIf::Native },
        ),
        ("wide", CbloadParams { reg_bits: 512, read_bits: 128, regs: 32, max_burst: 32, max_outstanding: 4, ..d }),
        // The `ice40` preset: the default with 16-bit addresses.
        ("ice40", CbloadParams::presets()[3].1.clone()),
    ]
}

/// Cosimulation over `SEEDS` random workloads; every fourth seed with
/// fixed latency and no stalls, so cycles must match too. With `mem_if =
/// axi4` the memory is the AXI4 slave agent: the other seeds with random
/// latency, AR readiness, R gaps (cycles not compared), the fixed-latency
/// ones with latency at least 4, where the AXI path gives the model's
/// cycles exactly (one read port: the arbiter and bridge add 3 cycles that
/// the slave's latency gives back).
fn cosim(name: &str, p: &CbloadParams) {
    p.validate().expect("test point is valid");
    let axi = p.mem_if == gpurtl_params::MemIf::Axi4;
    let cfg = p.clone();
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let (mut instrs, mut errors) = (0, [0usize; 5]);
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 104_729 + p.reg_bits as u64 + p.regs as u64);
        let lat = if axi && seed % 4 == 0 { 4 + rng.below(9) as u32 } else { 1 + rng.below(12) as u32 };
        let n = 1 + rng.below(12) as usize;
        let w = tb::random_workload(&mut rng, &cfg, n, lat);
        // Every fourth seed: fixed latency, no stalls, so cycles must match.
        let env = (seed % 4 != 0).then(|| Env {
            seed,
            latency: (1, 1 + rng.below(20) as u32),
            in_stall: rng.below(60) as u32,
            mem_req_stall: rng.below(60) as u32,
            mem_rsp_stall: rng.below(60) as u32,
            rf_stall: rng.below(60) as u32,
            rsp_stall: rng.below(60) as u32,
        });
        let want = model::run(&cfg, &w);
        instrs += w.instrs.len();
        for r in &want.responses {
            errors[r.error.code() as usize] += 1;
        }
        let got = tb::run(&compiled, &cfg, &w, env, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, _)) => {
                let mut cycles_want = want.clone();
                if env.is_some() {
                    cycles_want.cycles = got.cycles;
                }
                (got != &cycles_want).then(|| {
                    let reg = (0..cfg.regs as usize).find(|&r| got.regs[r] != want.regs[r]);
                    format!(
                        "first differing register {reg:?}\n  model: {:?} oob {:?}/{:?} cycles {} regs {:x?}\n  rtl:   {:?} oob {:?}/{:?} cycles {} regs {:x?}\n  workload: {:?}",
                        want.responses, want.oob, want.oob_tag, want.cycles, reg.map(|r| &want.regs[r]),
                        got.responses, got.oob, got.oob_tag, got.cycles, reg.map(|r| &got.regs[r]), w
                    )
                })
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("cbload_{name}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, &cfg, &w, env, Some(&vcd));
            panic!(
                "cbload {name} seed {seed} (env {env:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test cbload cosim_{name}",
                vcd.display()
            );
        }
    }
    eprintln!("cbload {name}: {} seeds, {instrs} instructions, responses by error none/view/misaligned/size/range: {errors:?}, all match", seeds(SEEDS).len());
    if std::env::var("GPURTL_SEED").is_err() {
        // The random mix must reach every error path, or the test proves less than it claims.
        assert!(errors.iter().all(|&n| n > 0) || p.views.is_power_of_two() && errors[1] == 0, "{errors:?}");
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
fn cosim_narrow() {
    let (n, p) = &points()[2];
    cosim(n, p)
}
#[test]
fn cosim_wide() {
    let (n, p) = &points()[3];
    cosim(n, p)
}
#[test]
fn cosim_ice40() {
    let (n, p) = &points()[4];
    cosim(n, p)
}
/// The default point with `mem_if = axi4`, behind the AXI4 slave agent.
#[test]
fn cosim_axi4() {
    let p = CbloadParams { mem_if: gpurtl_params::MemIf::Axi4, ..CbloadParams::default() };
    cosim("axi4", &p)
}

/// `gpurtl cosim cbload --param mem_if=axi4` (its random workloads, cycles
/// compared) matches on 40 seeds: the workload keeps its memory latency
/// above the AXI path's cycles.
#[test]
fn cosim_command_workload_at_axi4() {
    let p = CbloadParams { mem_if: gpurtl_params::MemIf::Axi4, ..CbloadParams::default() };
    let params = serde_json::to_value(&p).unwrap();
    let b = gpurtl_gen::blocks::find(&gpurtl_gen::blocks::all(), "cbload").unwrap();
    let compiled = compile_design(&b.design(&params).unwrap()).unwrap();
    for seed in 0..40 {
        let diff = b.self_check(&params, &compiled, seed).unwrap();
        assert!(diff.is_none(), "seed {seed}: {diff:?}");
    }
}

/// A burst streams one beat per cycle once the pipe is full: N registers
/// take N*P beats plus the latency and a fixed overhead of 2 cycles.
#[test]
fn burst_streams_at_one_beat_per_cycle() {
    let p = CbloadParams::default();
    let cfg = p.clone();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let w: model::Workload = model::parse_input(
        &serde_json::json!({
            "mem_latency": 10,
            "views": [{"base": 0, "size": 4096, "data": (0..2048).map(|i| i % 251).collect::<Vec<_>>()}],
            "instructions": [{"dest": 0, "view": 0, "offset": 64, "burst": true, "size": 16 * 32}]
        }),
        &cfg,
    )
    .unwrap();
    let (got, _) = tb::run(&compiled, &cfg, &w, None, None).unwrap();
    let beats = 16 * 256 / 64;
    assert_eq!(got.cycles, 10 + beats + 2);
    assert_eq!(got, model::run(&cfg, &w));
    assert_eq!(got.responses[0].error, ErrorKind::None);
}

#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    let mut all = points();
    all.push(("simd32", CbloadParams::presets()[2].1.clone()));
    for (name, p) in all {
        gpurtl_tests::lint_and_synth_clean(name, &build(&p).unwrap());
    }
}

#[test]
fn default_output_matches_snapshot() {
    let p = CbloadParams::default();
    gpurtl_tests::check_snapshot("cbload", &build(&p).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in CbloadParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// Every corner of the parameter table builds (each parameter at its least
/// and its most, where the combination is valid): widths that meet in a
/// compare or a slice must agree at every corner, not only at the points
/// the cosim runs.
#[test]
fn every_corner_of_the_parameter_table_builds() {
    let mut built = 0;
    for bits in 0..256u32 {
        let pick = |i: u32, lo: u32, hi: u32| if bits >> i & 1 == 1 { hi } else { lo };
        let p = CbloadParams {
            reg_bits: pick(0, 32, 1024),
            read_bits: pick(1, 32, 512),
            regs: pick(2, 2, 256),
            max_burst: pick(3, 1, 256),
            addr_bits: pick(4, 16, 48),
            views: pick(5, 1, 16),
            max_outstanding: pick(6, 1, 64),
            tag_bits: pick(7, 1, 16),
            mem_if: gpurtl_params::MemIf::Native,
        };
        if p.validate().is_err() {
            continue;
        }
        if let Err(e) = build(&p) {
            panic!("{p:?}: {e}");
        }
        built += 1;
    }
    assert!(built >= 64, "only {built} corners are valid");
}
