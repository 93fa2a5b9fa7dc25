//! The integrated top (docs/gpu.md): lint and synthesis at its presets;
//! cosimulation against the composed golden model.

use gpurtl_hw::blocks::gpu::build;
use gpurtl_params::gpu::GpuParams;
use gpurtl_params::BlockParams;

/// Verilator's lint at every cosim point; Icarus and yosys's checks (no
/// latches, nothing undriven, after `proc`) at `small`, and with
/// `GPURTL_FULL=1` at every point (the default's take minutes).
#[test]
fn verilator_lint_and_yosys_are_clean() {
    let full = std::env::var("GPURTL_FULL").is_ok();
    for (name, p) in points() {
        let (dir, top, sources) = gpurtl_tests::generated(&build(&p).unwrap());
        if let Err(e) = gpurtl_gen::tools::verilator_lint(dir.path(), &top) {
            panic!("{name}: {e}");
        }
        if full || name == "small" {
            if let Err(e) = gpurtl_gen::tools::iverilog(dir.path(), &top, &sources) {
                panic!("{name}: {e}");
            }
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
        // Three queues over four small two-slot units, a 128-bit port (the
        // gemm and conv kernels run at `default`).
        ("wide", GpuParams { queues: 3, units: 4, data_bits: 128, threads: 256, cu: two_slot_small(), ..Default::default() }),
    ]
}

/// The `small` preset's unit with two slots of 32 registers and 1 KiB of
/// scratchpad each (`copy2d` and `compress` fit): quick to build.
fn two_slot_small() -> gpurtl_params::cu::CuParams {
    gpurtl_params::cu::CuParams { slots: 2, regs: 64, max_outstanding: 2, ..GpuParams::presets()[1].1.cu.clone() }
}

/// What must agree: everything but the cycles (docs/gpu.md: the model
/// composes results, the RTL's cycles are its own).
fn view(p: &GpuParams, r: &Run, o: &Outcome) -> Value {
    model::untimed(model::output_json(p, r, o))
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
/// Three queues, four units, a 128-bit port: `make test-full` (the
/// suite's largest Verilator build; `default` runs two queues on two units
/// in `make test`).
#[test]
fn cosim_wide() {
    if gpurtl_tests::full_tier("gpu wide") {
        cosim("wide", &points()[2].1)
    }
}

/// Bugs planted in the generated Verilog (at `small` with a two-slot unit:
/// a quick Verilator build each; three in `make test`, all six with
/// `GPURTL_FULL=1`), each caught: a
/// dispatch taken from the queue at its submission instead of its end (so
/// the registers written after it, and the next dispatch, reach a kernel
/// still running), a block id whose x wraps one early, a 64-bit fence that
/// writes one dword, a completion that frees the other share of its
/// unit, a failing kernel that does not stop its queue, and a dispatch that
/// reads a register written after it (the `cmdproc`'s dispatch barrier and
/// state hold both gone, so a `SET_SH_REG` behind a waiting dispatch
/// changes `sh_o` before the top copies it).
#[test]
fn planted_bugs_are_caught() {
    let p = GpuParams { cu: two_slot_small(), threads: 128, ..GpuParams::presets()[1].1.clone() };
    let clean = gpurtl_gen::rtl_engine::spec(&build(&p).unwrap());
    let bugs: [(&str, &str, &str, &str); 6] = [
        ("a dispatch taken at its submission", "  assign u_q0_cmd_ready = ", "| k0_finished_q)", "| k0_live_q)"),
        ("block id x wraps one early", "k0_bx_q <= (sub_taken", "({1'd0, k0_bx_q} + 17'd1) == k0_x_q", "({1'd0, k0_bx_q} + 17'd2) == k0_x_q"),
        ("a 64-bit fence writes one dword", "fence_left_q <= fence_go", "== 3'd2) ? 2'd2", "== 3'd2) ? 2'd1"),
        ("a completion frees the other share", "      u0_shares_q <= (u0_shares_q", "(cpl_tag[0] == 1'd1)", "(cpl_tag[0] == 1'd0)"),
        ("a failing kernel does not stop its queue", "  assign u_q0_kerr = ", "& k0_failed_q", "& 1'b0"),
        ("a dispatch reads a register written after it", "  assign decoding = ", "& ~out_has_reader;", ";"),
    ];
    // `make test` plants three (each a Verilator build); GPURTL_FULL=1 all six.
    let full = gpurtl_tests::full();
    let quick = ["a dispatch reads a register written after it", "a failing kernel does not stop its queue", "block id x wraps one early"];
    let all: Vec<u64> = (0..SEEDS).collect();
    for (what, line, from, to) in bugs.into_iter().filter(|b| full || quick.contains(&b.0)) {
        let mut s = gpurtl_tests::plant(&clean, what, line, from, to);
        if what.starts_with("a dispatch reads") {
            s = gpurtl_tests::plant(&s, what, "  assign first_state_held = ", "& out_has_reader;", "& 1'b0;");
        }
        let compiled = gpurtl_sim::cosim::compile(&s).expect("verilator build");
        let Some((seed, diff, _, _)) = first_mismatch(&compiled, &p, &all, &mut [0; 7]) else {
            panic!("planted bug `{what}` was not caught in {SEEDS} seeds");
        };
        eprintln!("planted bug `{what}`: caught at seed {seed}: {}", diff.lines().next().unwrap_or(""));
    }
}

/// The example runs the same in both engines, and its results are what a
/// plain computation gives: the Sobel of the image (mirrored edges), the
/// GEMM with bias and ReLU, the compress counts, the three fences.
#[test]
fn example_runs_the_same_in_both_engines() {
    let p = GpuParams::default();
    let dir = gpurtl_tests::repo().join("examples/gpu");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("two-queues.json")).unwrap()).unwrap();
    let r = model::parse_input(&input, &dir, &p).unwrap();
    let want = model::run(&p, &r).unwrap();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let (got, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
    assert_eq!(view(&p, &r, &want), view(&p, &r, &got));
    let m = &got.memory;
    let i8s = |addr: u64, n: usize| m.bytes(addr, n).into_iter().map(|b| b as i8 as i64).collect::<Vec<i64>>();
    let i32s = |addr: u64, n: usize| m.bytes(addr, 4 * n).chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64).collect::<Vec<i64>>();
    // Queue 0: the Sobel, mirrored edges (docs/texture.md).
    let img = m.bytes(0x20000, 256);
    let w = i8s(0x21000, 9);
    let mir = |v: i64| if v < 0 { -v - 1 } else if v >= 16 { 31 - v } else { v };
    let out = i32s(0x30000, 256);
    for y in 0..16i64 {
        for x in 0..16i64 {
            let s: i64 = (0..3).flat_map(|j| (0..3).map(move |i| (j, i))).map(|(j, i)| w[(3 * j + i) as usize] * img[(mir(y + j - 1) * 16 + mir(x + i - 1)) as usize] as i64).sum();
            assert_eq!(out[(y * 16 + x) as usize], s, "Sobel at ({x}, {y})");
        }
    }
    // Queue 1: C = relu(A.B + bias), then the compress counts.
    let (a, b, bias, c) = (i8s(0x40000, 32 * 64), i8s(0x41000, 64 * 32), i32s(0x42000, 32), i32s(0x50000, 1024));
    for i in 0..32 {
        for j in 0..32 {
            let s: i64 = (0..64).map(|k| a[i * 64 + k] * b[k * 32 + j]).sum::<i64>() + bias[j];
            assert_eq!(c[i * 32 + j], s.max(0), "C[{i}][{j}]");
        }
    }
    let counts = i32s(0x62000, 16);
    for (x, n) in counts.iter().enumerate() {
        assert_eq!(*n, c[64 * x..64 * x + 64].iter().filter(|v| **v != 0).count() as i64, "compress count of block {x}");
    }
    assert_eq!(i32s(0x7000, 6), vec![1, 0, 2, 0, 3, 0], "the fences: 1; 2; then 3 and its high dword");
    assert!(got.status.iter().all(|q| q.done && q.error.is_none()));
}
