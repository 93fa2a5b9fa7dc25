//! Systolic grid: cosimulation of the generated Verilog against the golden
//! model (docs/systolic.md), lint and synthesis checks, snapshot.

use gpurtl_gen::rtl_engine::{compile_design, spec};
use gpurtl_gen::tools;
use gpurtl_hw::blocks::systolic::build;
use gpurtl_params::systolic::{Dataflow, Dsp, ElemType, SystolicParams, STAT_BITS};
use gpurtl_params::BlockParams;
use gpurtl_sim::models::systolic as model;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::systolic as tb;
use gpurtl_sim::tb::Stalls;
use gpurtl_sim::cosim::{compile, Compiled};
use gpurtl_tests::{failure_dir, plant, seeds};

const SEEDS: u64 = 200;


fn point(name: &str) -> SystolicParams {
    let d = SystolicParams::default();
    match name {
        "1x1" => SystolicParams { rows: 1, cols: 1, group: 1, pipeline: 0, ..d },
        "3x5" => SystolicParams {
            rows: 3,
            cols: 5,
            lanes: 2,
            channel_bits: 16,
            a_type: ElemType::I8,
            b_type: ElemType::U4,
            acc_bits: 20,
            group: 3,
            pipeline: 2,
            ..d
        },
        "8x8" => SystolicParams { rows: 8, cols: 8, pipeline: 1, ..d },
        "int4x4" => SystolicParams::presets()[2].1.clone(),
        "dense" => SystolicParams { rows: 2, cols: 3, pipeline: 0, gating: false, load_filter: false, rowcol_skip: false, a_type: ElemType::U2, b_type: ElemType::I2, acc_bits: 8, ..d },
        "minimal" => SystolicParams::presets().into_iter().find(|(n, _)| *n == "minimal").expect("minimal preset").1,
        // Gating and the load filter without the counters or the C0 add.
        "bare-3x5" => SystolicParams { stats: false, c0_add: false, ..point("3x5") },
        ws if ws.starts_with("ws-") => SystolicParams { dataflow: Dataflow::Ws, ..point(&ws[3..]) },
        inf if inf.starts_with("infer-") => SystolicParams { dsp: Dsp::Infer, ..point(&inf[6..]) },
        "bare-nostats" => SystolicParams { stats: false, ..point("3x5") },
        split if split.starts_with("split-") => SystolicParams { pipeline: 3, ..point(&split[6..]) },
        // Floating point (weight-stationary): each type, lanes 1 to 4, every
        // pipeline depth, mixed pairs, and the skipping levels on and off.
        "fp-bf16" => SystolicParams { fp_stages: 5, ..fp(ElemType::Bf16, ElemType::Bf16, 3, 4, 2, 2) },
        "fp-fp16" => SystolicParams { gating: false, ..fp(ElemType::Fp16, ElemType::Fp16, 2, 3, 1, 0) },
        // fp-bf16's significand products go through the multiplier module
        // (pipeline 2, fp_stages >= 2); here they are inline.
        "fp-infer-bf16" => SystolicParams { dsp: Dsp::Infer, ..point("fp-bf16") },
        "fp-e4m3" => SystolicParams { fp_stages: 3, ..fp(ElemType::Fp8e4m3, ElemType::Fp8e5m2, 4, 2, 4, 3) },
        // Output-stationary floating point, with C0 (where each accumulator
        // starts) and without.
        "fp-os-bf16" => SystolicParams { dataflow: Dataflow::Os, fp_stages: 0, group: 2, ..point("fp-bf16") },
        "fp-os-e4m3" => SystolicParams {
            dataflow: Dataflow::Os,
            group: 3,
            ..fp(ElemType::Fp8e4m3, ElemType::Fp8e4m3, 2, 2, 4, 3)
        },
        "fp-os-fp16" => SystolicParams {
            dataflow: Dataflow::Os,
            c0_add: false,
            gating: false,
            group: 1,
            ..fp(ElemType::Fp16, ElemType::Fp8e5m2, 1, 3, 1, 0)
        },
        "fp-plant" => SystolicParams { gating: false, ..fp(ElemType::Fp16, ElemType::Bf16, 2, 2, 4, 1) },
        "fp-e5m2" => SystolicParams {
            load_filter: false,
            rowcol_skip: false,
            stats: false,
            fp_stages: 2,
            ..fp(ElemType::Fp8e5m2, ElemType::Fp8e4m3, 1, 1, 3, 1)
        },
        _ => unreachable!(),
    }
}

/// A weight-stationary floating-point point: types, R x C, lanes, pipeline
/// (each lane's slot the wider element's width).
fn fp(a: ElemType, b: ElemType, rows: u32, cols: u32, lanes: u32, pipeline: u32) -> SystolicParams {
    let slot = a.bits().max(b.bits());
    SystolicParams {
        rows,
        cols,
        lanes,
        channel_bits: (lanes * slot).max(8),
        a_type: a,
        b_type: b,
        dataflow: Dataflow::Ws,
        pipeline,
        ..SystolicParams::default()
    }
}

/// Every test point, output-stationary and weight-stationary.
const POINTS: [&str; 26] = [
    "1x1", "3x5", "8x8", "int4x4", "dense", "ws-1x1", "ws-3x5", "ws-8x8", "ws-int4x4", "ws-dense", "infer-int4x4",
    "ws-infer-3x5", "split-3x5", "ws-split-dense", "split-1x1", "minimal", "bare-3x5", "ws-bare-nostats", "fp-bf16",
    "fp-infer-bf16", "fp-fp16", "fp-e4m3", "fp-e5m2", "fp-os-bf16", "fp-os-e4m3", "fp-os-fp16",
];

fn cosim(name: &str) {
    let p = point(name);
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    let mut counts = (0, 0, 0);
    if let Some((seed, env, gemm, problem)) = first_mismatch(&compiled, &p, &seeds(SEEDS), &mut counts) {
        let vcd = failure_dir().join(format!("systolic_{name}_seed{seed}.vcd"));
        let _ = tb::run(&compiled, &p, &gemm, env, Some(&vcd));
        panic!(
            "systolic {name} seed {seed} (env {env:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test systolic",
            vcd.display()
        );
    }
    let (macs, gated, skipped) = counts;
    eprintln!("systolic {name}: {} seeds, {macs} useful MACs, {gated} gated products, {skipped} skipped k-steps, all match", seeds(SEEDS).len());
}

/// Random GEMMs (one per seed, random stalls on three seeds of four)
/// through the grid and the model: the first that differs, as (seed,
/// stalls, GEMM, what differs). `counts` adds up the model's (useful,
/// gated, skipped).
fn first_mismatch(
    compiled: &Compiled,
    cfg: &SystolicParams,
    seeds: &[u64],
    counts: &mut (u64, u64, u64),
) -> Option<(u64, Option<Stalls>, model::Gemm, String)> {
    for &seed in seeds {
        let mut rng = Rng::new(seed * 65_537 + cfg.rows as u64 * 31 + cfg.cols as u64);
        let gemm = tb::random_gemm(&mut rng, cfg, 3 * cfg.rows.max(cfg.cols).max(4) as u64);
        let env = (seed % 4 != 0).then(|| Stalls { seed, in_pct: rng.below(60) as u32, out_pct: rng.below(60) as u32 });
        let raw = model::run(cfg, &gemm);
        counts.0 += raw.useful_macs;
        counts.1 += raw.gated_products;
        counts.2 += raw.skipped_ksteps;
        // Without counters the grid reports no counts.
        let want = tb::comparable(cfg, &raw);
        let problem = match tb::run(compiled, cfg, &gemm, env, None) {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((mut got, _)) => {
                if env.is_some() {
                    got.cycles = want.cycles;
                }
                (got != want).then(|| format!("\n  model: {want:?}\n  rtl:   {got:?}\n  gemm: {gemm:?}"))
            }
        };
        if let Some(problem) = problem {
            return Some((seed, env, gemm, problem));
        }
    }
    None
}

/// The arithmetic on many values: a 1x1 bf16 grid of two lanes computes
/// C0 ⊕ (a0·b0 ⊕ a1·b1) per output, so 20 GEMMs of 500 x 2 x 8 give
/// 80,000 of each of the two products (rounded to binary32: bf16 products
/// overflow and underflow), the tree add and the partial sum add, on values
/// of every class (all three stimulus profiles) and random C0 patterns; the
/// grid against the model, bit for bit, in both dataflows (C0 in ws only).
#[test]
fn fp_arithmetic_on_many_values() {
    for dataflow in [Dataflow::Ws, Dataflow::Os] {
        let ws = dataflow == Dataflow::Ws;
        let p = SystolicParams { dataflow, c0_add: ws, fp_stages: if ws { 4 } else { 0 }, rows: 1, cols: 1, ..point("fp-bf16") };
        p.validate().expect("test point is valid");
        let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
        let mut rng = Rng::new(2027);
        for run in 0..20u64 {
            let profile = run % 3;
            let (m, n) = (500, 8);
            let mut matrix = |rows: usize, cols: usize| -> Vec<Vec<i64>> {
                (0..rows).map(|_| (0..cols).map(|_| tb::fp_element(&mut rng, ElemType::Bf16, profile)).collect()).collect()
            };
            let (a, b) = (matrix(m, 2), matrix(2, n));
            let c0 = p.c0_add.then(|| (0..m).map(|_| (0..n).map(|_| tb::fp_c0(&mut rng)).collect()).collect());
            let gemm = model::Gemm { a, b, c0 };
            let want = model::run(&p, &gemm);
            let (got, _) = tb::run(&compiled, &p, &gemm, None, None).unwrap();
            assert_eq!(got, want, "{dataflow} run {run}: the grid and the model differ");
        }
    }
}

/// Planted floating-point bugs, each caught (docs/systolic.md, "Floating
/// point"): the partial sum add rounding toward zero instead of to nearest
/// even; the lane tree summed left to right instead of pairwise; -0 kept
/// (a product with a zero operand signed, and -0 + -0 = -0, as IEEE has
/// them). The first two on a 2x2 fp16 x bf16 grid of four lanes, the
/// third on the 2x3 fp16 grid of one lane; both without gating, so that
/// zero operands reach the multipliers.
#[test]
fn planted_fp_bugs_are_caught() {
    let (p4, p1) = (point("fp-plant"), point("fp-fp16"));
    p4.validate().expect("test point is valid");
    let clean = spec(&build(&p4).unwrap());
    let sequential = spec(&gpurtl_hw::blocks::systolic::build_planted_sequential_tree(&p4).unwrap());
    let negative_zero = {
        let mut s = spec(&build(&p1).unwrap());
        s = plant(&s, "a -0 product", "  assign mul_l0_prod = ", "mul_l0_cls[0] ? 32'd0", "mul_l0_cls[0] ? {mul_l0_sign, 31'd0}");
        plant(&s, "-0 + -0 = -0", "  assign psum_rnd = ", ": 32'd0", ": {psum_big[31] & psum_small[31], 31'd0}")
    };
    // Output-stationary with C0 (the bf16 point: lanes 2, C0 on half the seeds).
    let os = point("fp-os-bf16");
    let os_clean = spec(&build(&os).unwrap());
    let bugs: [(&str, &SystolicParams, gpurtl_sim::cosim::DesignSpec); 6] = [
        ("the partial sum rounds toward zero", &p4, plant(&clean, "round toward zero", "  assign psum_up = ", "psum_up = psum_norm[3] &", "psum_up = 1'b0 &")),
        ("the lane tree summed left to right", &p4, sequential),
        ("-0 kept", &p1, negative_zero),
        ("os: the accumulator starts at +0, not C0", &os, plant(&os_clean, "C0 dropped", "  assign acc_base = ", "fresh_q ? c0_i", "fresh_q ? 32'd0")),
        (
            "os: C0 read with every group, not the tile's first",
            &os,
            plant(&os_clean, "C0 of every group", "      in_c0_load_q <= in_ready_next & in_first_next;", "in_ready_next & in_first_next", "in_ready_next"),
        ),
        // PE(0,0)'s C0 a cycle early (D = 3 here): the next issue's.
        ("os: a C0 a cycle early", &os, plant(&os_clean, "C0 early", "    .c0_i    (c0_r0_2_q[31:0]),", "c0_r0_2_q", "c0_r0_1_q")),
    ];
    let all: Vec<u64> = (0..SEEDS).collect();
    for (what, p, s) in bugs {
        let compiled = compile(&s).expect("verilator build");
        let Some((seed, _, _, diff)) = first_mismatch(&compiled, p, &all, &mut (0, 0, 0)) else {
            panic!("planted bug `{what}` was not caught in {SEEDS} seeds");
        };
        eprintln!("planted bug `{what}`: caught at seed {seed}: {}", diff.lines().nth(1).unwrap_or("").trim());
    }
}

#[test]
fn cosim_1x1() {
    cosim("1x1")
}
#[test]
fn cosim_3x5_mixed_i8_u4_lanes2() {
    cosim("3x5")
}
#[test]
fn cosim_8x8() {
    cosim("8x8")
}
#[test]
fn cosim_int4_lanes4() {
    cosim("int4x4")
}
#[test]
fn cosim_no_skipping_int2() {
    cosim("dense")
}
/// At `pipeline = 2` the default `dsp = auto` puts each multiply in the
/// multiplier module (its generic body: the timing of the MULT18X18D with
/// its registers); `dsp = infer` keeps the inline `*` between the PE's own
/// registers, in the output- and weight-stationary PEs.
#[test]
fn cosim_inline_multiplier_int4_lanes4() {
    cosim("infer-int4x4")
}
#[test]
fn cosim_ws_inline_multiplier_3x5_mixed_i8_u4_lanes2() {
    cosim("ws-infer-3x5")
}
/// `pipeline = 3`: each multiply split into half products (mixed signedness,
/// 2-bit elements).
#[test]
fn cosim_split_multiplier_3x5_mixed_i8_u4() {
    cosim("split-3x5")
}
#[test]
fn cosim_split_multiplier_1x1_i8() {
    cosim("split-1x1")
}
#[test]
fn cosim_ws_split_multiplier_int2() {
    cosim("ws-split-dense")
}
#[test]
fn cosim_ws_1x1() {
    cosim("ws-1x1")
}
#[test]
fn cosim_ws_3x5_mixed_i8_u4_lanes2() {
    cosim("ws-3x5")
}
#[test]
fn cosim_ws_8x8() {
    cosim("ws-8x8")
}
#[test]
fn cosim_ws_int4_lanes4() {
    cosim("ws-int4x4")
}
#[test]
fn cosim_ws_no_skipping_int2() {
    cosim("ws-dense")
}

/// Floating point, weight-stationary (docs/systolic.md, "The
/// floating-point grid"): bit-identical C with zeros of both signs,
/// subnormals, infinities, NaNs and values near the thresholds; counters;
/// cycles at the model's count with the driver's rule for the running sums.
#[test]
fn cosim_fp_bf16_lanes2() {
    cosim("fp-bf16")
}
#[test]
fn cosim_fp_fp16_lanes1_pipeline0_no_gating() {
    cosim("fp-fp16")
}
#[test]
fn cosim_fp_e4m3_by_e5m2_lanes4_pipeline3() {
    cosim("fp-e4m3")
}
/// (`make test-full` only: the four points above and below cover every
/// type, lanes 1, 2 and 4 and both dataflows.)
#[test]
fn cosim_fp_bf16_lanes2_inline_multipliers() {
    if gpurtl_tests::full_tier("systolic cosim fp-infer-bf16") {
        cosim("fp-infer-bf16")
    }
}
#[test]
fn cosim_fp_e5m2_by_e4m3_lanes3_no_skipping() {
    if gpurtl_tests::full_tier("systolic cosim fp-e5m2") {
        cosim("fp-e5m2")
    }
}
/// Output-stationary floating point: the accumulator a loop through the
/// binary32 add, from start(C0) each tile (C0 on half the seeds).
#[test]
fn cosim_fp_os_bf16_lanes2() {
    cosim("fp-os-bf16")
}
/// (`make test-full` only.)
#[test]
fn cosim_fp_os_e4m3_lanes4_pipeline3() {
    if gpurtl_tests::full_tier("systolic cosim fp-os-e4m3") {
        cosim("fp-os-e4m3")
    }
}
#[test]
fn cosim_fp_os_fp16_by_e5m2_no_gating() {
    cosim("fp-os-fp16")
}

/// The `minimal` preset: no gating, no load filter, no counters, no C0 add.
#[test]
fn cosim_minimal_preset() {
    cosim("minimal")
}

/// Gating and the load filter at work without the counters or the C0 add;
/// the weight-stationary grid without counters.
#[test]
fn cosim_without_counters_or_c0_add() {
    cosim("bare-3x5");
    cosim("ws-bare-nostats");
}

/// Long dense GEMMs keep the grid busy: tiles follow each other without
/// bubbles, so utilization is exact to the cycle the model predicts and high.
#[test]
fn dense_gemm_utilization() {
    for name in ["8x8", "ws-8x8"] {
        dense_utilization(name);
    }
}

fn dense_utilization(name: &str) {
    let p = point(name);
    let cfg = p.clone();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let gemm = model::Gemm {
        a: (0..32).map(|i| (0..64).map(|k| 1 + ((i + k) % 100) as i64).collect()).collect(),
        b: (0..64).map(|k| (0..32).map(|j| 1 + ((k * 3 + j) % 100) as i64).collect()).collect(),
        c0: None,
    };
    let (got, _) = tb::run(&compiled, &cfg, &gemm, None, None).unwrap();
    assert_eq!(got, model::run(&cfg, &gemm));
    assert!(got.utilization(&cfg) > 0.9, "{name}: {}", got.utilization(&cfg));
}

fn generated(p: &SystolicParams) -> (tempfile::TempDir, String, Vec<String>) {
    gpurtl_tests::generated(&build(p).unwrap())
}

#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    for name in POINTS {
        if name.starts_with("fp-") {
            // A floating-point grid's full synthesis takes a minute or more:
            // here yosys's checks after elaboration, the synthesis with
            // GPURTL_FULL=1 (the same no-latch check).
            gpurtl_tests::lint_and_yosys_clean(name, &build(&point(name)).unwrap(), false);
            continue;
        }
        let (dir, top, vs) = generated(&point(name));
        if let Err(e) = tools::verilator_lint(dir.path(), &top) {
            panic!("{name}: {e}");
        }
        if !name.ends_with("8x8") {
            let s = tools::yosys_synth(dir.path(), &top, &vs).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!s.by_type.iter().any(|(t, _)| t.contains("LATCH")), "{name}: {:?}", s.by_type);
        }
    }
}

#[test]
fn one_pe_module_instantiated_per_grid_position() {
    let d = build(&SystolicParams { rows: 16, cols: 16, ..SystolicParams::default() }).unwrap();
    let e = d.elaborate();
    let names: Vec<&str> = e.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["gpurtl_systolic_mul", "gpurtl_systolic_pe", "gpurtl_systolic"]);
    assert_eq!(d.top().instances.len(), 256);
}

#[test]
fn default_output_matches_snapshot() {
    let p = SystolicParams::default();
    gpurtl_tests::check_snapshot("systolic", &build(&p).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in SystolicParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// The statistics counters add in two halves with a registered carry: large
/// increments cross 2^24 within a few cycles, against a plain sum. (The
/// cosimulations never count that far.)
#[test]
fn stat_counter_carries_into_its_upper_half() {
    use gpurtl_hw::blocks::systolic::stat_counter;
    use gpurtl_hw::rtl::ModuleBuilder;
    let mut b = ModuleBuilder::new("stat_counter_tb");
    b.clock("clk_i");
    let rst = b.reset("rst_i");
    b.waive_unused(&rst, "the counter's registers take the builder's reset");
    let inc = b.input("inc_i", STAT_BITS / 2, "increment");
    let en = b.input("en_i", 1, "add the increment");
    let out = b.output("count_o", STAT_BITS, "the count");
    let count = stat_counter(&mut b, "count", &inc, &en);
    b.assign(&out, &count);
    let m = b.finish().unwrap();
    let origin = gpurtl_hw::Origin { block: "stat_counter_tb".into(), params: serde_json::json!({}) };
    let compiled = compile_design(&gpurtl_hw::Design::new(m, origin)).expect("verilator build");
    let mut sim = compiled.start(None).unwrap();
    let (rst, inc, en, out) =
        (sim.port("rst_i").unwrap(), sim.port("inc_i").unwrap(), sim.port("en_i").unwrap(), sim.port("count_o").unwrap());
    sim.reset(rst, 2);
    let mut rng = Rng::new(11);
    let mut total = 0u64;
    let mut carries = 0;
    for _ in 0..400 {
        for _ in 0..rng.below(5) {
            let v = (1 << 23) + rng.below(1 << 23);
            let on = rng.chance(80);
            sim.set(inc, v);
            sim.set(en, on as u64);
            sim.tick();
            if on {
                carries += ((total & 0xff_ffff) + v >= 1 << 24) as u32;
                total += v;
            }
        }
        sim.set(en, 0);
        sim.tick();
        assert_eq!(sim.get(out), total, "one cycle after the last add");
    }
    assert!(carries > 100, "{carries} carries into the upper half");
}

/// Found by the parameter-space test: without gating, pipeline 2 and 3
/// registered a non-zero flag that nothing read, so the design did not
/// build. Every pipeline depth generates and lints, in both dataflows.
#[test]
fn gating_off_generates_at_every_pipeline_depth() {
    for dataflow in [Dataflow::Os, Dataflow::Ws] {
        for pipeline in 0..=3 {
            let p = SystolicParams { gating: false, pipeline, dataflow, rows: 2, cols: 2, ..SystolicParams::default() };
            let d = build(&p).unwrap_or_else(|e| panic!("{dataflow} pipeline {pipeline}: {e}"));
            let (dir, top, _) = gpurtl_tests::generated(&d);
            tools::verilator_lint(dir.path(), &top).unwrap_or_else(|e| panic!("{dataflow} pipeline {pipeline}: {e}"));
        }
    }
}

/// Found by the parameter-space test: a wide input with every other lane
/// unused printed a waiver comment, and a concatenation, on one line of
/// 40,000 characters, past what Verilator's preprocessor and Icarus' lexer
/// take. Long statements are broken over lines; long waivers summarized.
#[test]
fn wide_grids_print_lines_the_tools_read() {
    let p = SystolicParams {
        rows: 1,
        cols: 50,
        lanes: 8,
        channel_bits: 64,
        a_type: ElemType::I4,
        b_type: ElemType::I4,
        acc_bits: 64,
        group: 7,
        pipeline: 3,
        dsp: Dsp::Infer,
        ..SystolicParams::default()
    };
    let (dir, top, sources) = gpurtl_tests::generated(&build(&p).unwrap());
    for f in &sources {
        let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(text.lines().all(|l| l.len() <= 1000), "{f} has a line over 1000 characters");
    }
    tools::verilator_lint(dir.path(), &top).unwrap();
    tools::iverilog(dir.path(), &top, &sources).unwrap();
}
