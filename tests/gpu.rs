//! The integrated top (docs/gpu.md): lint and synthesis at its presets;
//! cosimulation against the composed golden model.

use gpurtl_hw::blocks::gpu::build;
use gpurtl_params::gpu::GpuParams;
use gpurtl_params::BlockParams;

/// Verilator's lint and yosys's checks at every preset.
#[test]
fn verilator_lint_and_yosys_are_clean_at_every_preset() {
    for (name, p) in GpuParams::presets() {
        let (dir, top, sources) = gpurtl_tests::generated(&build(&p).unwrap());
        if let Err(e) = gpurtl_gen::tools::verilator_lint(dir.path(), &top) {
            panic!("{name}: {e}");
        }
        if std::env::var("GPURTL_GPU_YOSYS").is_ok() {
            if let Err(e) = gpurtl_gen::tools::yosys_check(dir.path(), &top, &sources) {
                panic!("{name}: {e}");
            }
        }
    }
}

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_sim::cosim::Compiled;
use gpurtl_sim::models::gpu::{self as model, Outcome, Run};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::gpu::{self as tb, Env};
use gpurtl_tests::{failure_dir, seeds};
use serde_json::Value;

const SEEDS: u64 = 100;

fn points() -> Vec<(&'static str, GpuParams)> {
    let presets = GpuParams::presets();
    vec![
        ("small", presets[1].1.clone()),
        ("default", presets[0].1.clone()),
        // Three queues over four units, a 128-bit port; no tex (the conv
        // kernel runs at `default`).
        ("wide", GpuParams { queues: 3, units: 4, data_bits: 128, cu: gpurtl_params::cu::CuParams { tex: false, tag_bits: 8, ..Default::default() }, ..Default::default() }),
    ]
}

/// What must agree: everything but the cycles (docs/gpu.md: the model
/// composes results, the RTL's cycles are its own).
fn view(p: &GpuParams, r: &Run, o: &Outcome) -> Value {
    let mut v = model::output_json(p, r, o);
    v.as_object_mut().unwrap().remove("cycles");
    if let Some(ks) = v["kernels"].as_array_mut() {
        for k in ks {
            for f in ["submit", "start", "end"] {
                k.as_object_mut().unwrap().remove(f);
            }
        }
    }
    v
}

/// What the runs covered: kernels, blocks, failed blocks, fences,
/// instructions, queue errors, runs with two queues or more.
type Stats = [u64; 7];

fn first_mismatch(compiled: &Compiled, p: &GpuParams, seeds: &[u64], stats: &mut Stats) -> Option<(u64, String, Run, Option<Env>)> {
    for &seed in seeds {
        let mut rng = Rng::new(seed * 7919 + p.queues as u64 * 31 + p.units as u64);
        let r = tb::random_run(&mut rng, p);
        let env = (seed % 4 != 0).then(|| Env { seed, latency: (1, 1 + rng.below(24) as u32), stall: rng.below(40) as u32, host: rng.below(50) as u32 });
        let want = match model::run(p, &r) {
            Ok(o) => o,
            Err(e) => return Some((seed, format!("the model refused the run: {e}"), r, env)),
        };
        let k = &want.counters;
        for (s, v) in stats.iter_mut().zip([
            k.kernels,
            k.blocks,
            k.failed_blocks,
            k.fences,
            k.instructions,
            want.status.iter().filter(|q| q.error.is_some()).count() as u64,
            (r.queues.len() > 1) as u64,
        ]) {
            *s += v;
        }
        match tb::run(compiled, p, &r, env, tb::budget(p, &r), None) {
            Err(e) => return Some((seed, format!("the RTL run failed: {e}"), r, env)),
            Ok((got, _)) => {
                let (w, g) = (view(p, &r, &want), view(p, &r, &got));
                if w != g {
                    let key = w.as_object().unwrap().keys().find(|k| w[k.as_str()] != g[k.as_str()]).cloned().unwrap_or_default();
                    let first = |x: &Value| x[key.as_str()].to_string().chars().take(900).collect::<String>();
                    return Some((seed, format!("`{key}` differs\n  model: {}\n  rtl:   {}", first(&w), first(&g)), r, env));
                }
            }
        }
    }
    None
}

fn cosim(name: &str, p: &GpuParams) {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let all = seeds(SEEDS);
    let mut stats = [0; 7];
    if let Some((seed, problem, r, env)) = first_mismatch(&compiled, p, &all, &mut stats) {
        let vcd = failure_dir().join(format!("gpu_{name}_seed{seed}.vcd"));
        let _ = tb::run(&compiled, p, &r, env, tb::budget(p, &r), Some(&vcd));
        panic!("gpu {name} seed {seed} (env {env:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test gpu cosim_{name}", vcd.display());
    }
    eprintln!("gpu {name}: {} seeds, kernels/blocks/failed blocks/fences/instructions/queue errors/multi-queue runs: {stats:?}, all match", all.len());
    if std::env::var("GPURTL_SEED").is_err() {
        assert!(stats.iter().all(|&s| s >= 5) || p.queues == 1 && stats[..6].iter().all(|&s| s >= 5), "{name}: too little covered: {stats:?}");
    }
}

#[test]
fn cosim_small() {
    cosim("small", &points()[0].1)
}
#[test]
fn cosim_default() {
    cosim("default", &points()[1].1)
}
#[test]
fn cosim_wide() {
    cosim("wide", &points()[2].1)
}
