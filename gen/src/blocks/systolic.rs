//! The systolic grid on the command line: run, bench, `prune` of an input
//! file's matrices, and its designs of the harness bench.

use crate::bench::generator;
use crate::block::{BenchOpts, BlockDef, HarnessPoint, WholeRun};
use crate::emit;
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::systolic::build;
use gpurtl_params::systolic::{Dataflow, ElemType, SystolicParams};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::systolic::fp::FpType;
use gpurtl_sim::models::systolic::{self as model, program, ws_program, Gemm, Outcome};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::systolic as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

pub struct Systolic;
pub const BLOCK: Systolic = Systolic;

impl BlockDef for Systolic {
    type Params = SystolicParams;
    type Input = Gemm;
    type Output = Outcome;
    const SUMMARY: &'static str =
        "systolic PE grid (output- or weight-stationary) with PE gating, load filter and row/column skip";

    fn build(p: &SystolicParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &SystolicParams, input: &Value) -> Result<Gemm, InputErrors> {
        model::parse_input(input, p)
    }
    fn model(p: &SystolicParams, g: &Gemm) -> Result<Outcome> {
        Ok(model::run(p, g))
    }
    fn rtl(p: &SystolicParams, compiled: &Compiled, g: &Gemm, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, g, None, vcd)?.0)
    }
    fn output_json(p: &SystolicParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &SystolicParams, rng: &mut Rng) -> Gemm {
        tb::random_gemm(rng, p, 2 * p.rows.max(p.cols).max(3) as u64)
    }
    const COMMANDS: &'static [&'static str] = &["prune"];
    /// Block pruning (seed 004 §369) of the `a` and `b` matrices.
    fn prune(mut v: Value, block: usize, threshold: i64) -> Result<(Value, usize)> {
        // The file is a systolic input: checked as `gpurtl run systolic` checks
        // one, at the element types it names (i8 where it names none), so a
        // ragged matrix, a value out of its type or an unknown key is refused.
        let elem = |key: &str| match v.get(key) {
            None => Ok(ElemType::I8),
            Some(x) => x.as_str().and_then(ElemType::from_name).ok_or_else(|| {
                Error::Bad(format!("input `{key}` = {}: must be one of {}", gpurtl_params::short(x), ElemType::NAMES.join(", ")))
            }),
        };
        let p = SystolicParams { a_type: elem("a_type")?, b_type: elem("b_type")?, acc_bits: 64, ..SystolicParams::default() };
        for (key, t) in [("a_type", p.a_type), ("b_type", p.b_type)] {
            if t.is_float() {
                return Err(Error::Bad(format!(
                    "input `{key}` = \"{t}\": prune takes integer matrices (i8, u8, i4, u4, i2, u2); floating-point inputs are not pruned"
                )));
            }
        }
        let gemm = model::parse_input(&v, &p)?;
        let mut zeroed = 0usize;
        for (key, m) in [("a", &gemm.a), ("b", &gemm.b)] {
            let p = model::prune(m, block, threshold);
            zeroed += m.iter().flatten().zip(p.iter().flatten()).filter(|(x, y)| **x != 0 && **y == 0).count();
            v[key] = json!(p);
        }
        Ok((v, zeroed))
    }
    /// The 4x4 and 8x8 grids on a dense 64x64x64 GEMM, first in the table.
    fn harness() -> Result<Vec<HarnessPoint>> {
        let gemm = {
            let mut rng = Rng::new(7);
            let mut m = || (0..64).map(|_| (0..64).map(|_| rng.below(255) as i64 - 127).collect()).collect();
            Gemm { a: m(), b: m(), c0: None }
        };
        let point = |label: &'static str, p: SystolicParams, whole: Option<WholeRun>| -> Result<HarnessPoint> {
            let g = gemm.clone();
            let q = p.clone();
            Ok(HarnessPoint { label, order: 0, design: build(&p)?, run: Box::new(move |c| Ok(tb::run(c, &q, &g, None, None)?.1)), whole })
        };
        // The whole run of issue 29: `gpurtl run systolic --engine rtl` on
        // the 8x8 grid, a 16^3 and a 128^3 random int8 GEMM.
        let square = |n: usize, seed: u64| {
            let mut rng = Rng::new(seed);
            let mut m = || Value::from((0..n).map(|_| Value::from((0..n).map(|_| rng.below(255) as i64 - 127).collect::<Vec<_>>())).collect::<Vec<_>>());
            json!({"a": m(), "b": m()}).to_string()
        };
        let p8 = SystolicParams { rows: 8, cols: 8, ..SystolicParams::default() };
        let whole = WholeRun { params: serde_json::to_value(&p8).unwrap_or(Value::Null), small: square(16, 1), large: square(128, 2) };
        Ok(vec![point("systolic 4x4", SystolicParams::default(), None)?, point("systolic 8x8", p8, Some(whole))?])
    }

    /// Utilization, load-filter speedups, gating counts, generation size and
    /// time, cosim speed, at the given parameters (`--preset grid8` is the
    /// 8x8 grid of docs/systolic.md's figures).
    fn bench(p: &SystolicParams, bo: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        // Dense, the load filter off and on at two sparsities, gating, model
        // against RTL, generation.
        bo.steps(1 + 2 * 2 + 1 + 1 + 1);
        let run = |p: &SystolicParams, gemm: &Gemm| -> Result<(Outcome, f64)> {
            let compiled = compile_design(&build(p)?)?;
            let (o, st) = tb::run(&compiled, p, gemm, None, None)?;
            Ok((o, st.rate()))
        };
        let _ = writeln!(
            out,
            "systolic bench: {}x{} grid, {} lane(s), {}",
            p.rows,
            p.cols,
            p.lanes,
            if p.dataflow == Dataflow::Ws { "weight-stationary".to_string() } else { format!("output-stationary, group {}", p.group) }
        );
        // The figures are counts: a grid built without counters is measured
        // with them (they are off every path that sets a cycle count, and the
        // cosimulation checks the cycles at both settings).
        if !p.stats {
            let _ = writeln!(out, "(stats = false: measured with the counters built in; cycle counts are the same)");
        }
        let p = &SystolicParams { stats: true, ..p.clone() };
        let mut rng = Rng::new(7);
        // Dense utilization on a 64x64x64 GEMM.
        let dense = sparse_gemm(&mut rng, p, 64, 64, 64, 0);
        bo.running("dense 64x64x64 GEMM (with the Verilator build)");
        let (dense_o, cps) = run(p, &dense)?;
        bo.done("dense 64x64x64 GEMM");
        let macs = (p.rows * p.cols * p.lanes) as f64;
        let util = dense_o.useful_macs as f64 / (macs * dense_o.cycles as f64);
        let _ = writeln!(
            out,
            "dense 64x64x64: {} cycles, {} useful MACs, utilization {:.1}%, cosim {:.0} cycles/s",
            dense_o.cycles, dense_o.useful_macs, util * 100.0, cps
        );
        // Load filter on vs off.
        let mut filter_rows = Vec::new();
        for pct in [50u32, 75] {
            let g = sparse_gemm(&mut rng, p, 64, 64, 64, pct);
            let off = SystolicParams { load_filter: false, ..p.clone() };
            let on = SystolicParams { load_filter: true, ..p.clone() };
            bo.running(&format!("{pct}% zero k-slices, load filter off"));
            let (o_off, _) = run(&off, &g)?;
            bo.done(&format!("{pct}% zero k-slices, load filter off"));
            bo.running(&format!("{pct}% zero k-slices, load filter on"));
            let (o_on, _) = run(&on, &g)?;
            bo.done(&format!("{pct}% zero k-slices, load filter on"));
            // All-zero k-slices of A (a k-step's `lanes` columns).
            let l = p.lanes as usize;
            let steps = 64usize.div_ceil(l);
            let zero_k = (0..steps).filter(|st| g.a.iter().all(|row| row[st * l..(st * l + l).min(64)].iter().all(|&x| p.a_type.is_zero(x)))).count();
            let speedup = o_off.cycles as f64 / o_on.cycles as f64;
            let _ = writeln!(
                out,
                "{pct}% zero k-slices ({zero_k}/{steps} measured): filter off {} cycles, on {} cycles, {speedup:.2}x fewer (skipped {} k-steps)",
                o_off.cycles, o_on.cycles, o_on.skipped_ksteps
            );
            filter_rows.push(json!({"zero_pct": pct, "zero_kslices": zero_k, "cycles_filter_off": o_off.cycles, "cycles_filter_on": o_on.cycles, "speedup": speedup, "skipped_ksteps": o_on.skipped_ksteps}));
        }
        // Gated products against a direct count of zero-operand products over the program.
        let g = sparse_gemm(&mut rng, p, 24, 40, 24, 30);
        let gp = SystolicParams { load_filter: false, rowcol_skip: false, ..p.clone() };
        bo.running("gated products on 24x40x24");
        let (o, _) = run(&gp, &g)?;
        bo.done("gated products on 24x40x24");
        let cfg = gp.clone();
        let mut zero_products = 0u64;
        // Zero elements: for floating point +0 and -0.
        let zero = |x: &i64, y: &i64| p.a_type.is_zero(*x) || p.b_type.is_zero(*y);
        for t in ws_program(&cfg, &g).0.iter().filter(|_| p.dataflow == Dataflow::Ws) {
            for v in &t.vectors {
                for (ai, wrow) in v.a.iter().zip(&t.weights) {
                    for wj in wrow {
                        zero_products += ai.iter().zip(wj).filter(|(x, y)| zero(x, y)).count() as u64;
                    }
                }
            }
        }
        for t in program(&cfg, &g).iter().filter(|_| p.dataflow != Dataflow::Ws) {
            for gr in &t.groups {
                for st in &gr.steps() {
                    for ai in &st.a {
                        for bj in &st.b {
                            zero_products += ai.iter().zip(bj).filter(|(x, y)| zero(x, y)).count() as u64;
                        }
                    }
                }
            }
        }
        let _ = writeln!(out, "gating on 24x40x24 (30% zero k-slices, filter off): RTL gated {} products, direct count {}", o.gated_products, zero_products);
        bo.running("the model against the RTL");
        let engines = model_vs_rtl(p, out)?;
        bo.done("the model against the RTL");
        bo.running("generation of 8x8, 16x16 and 32x32 grids");
        // Generation size and time.
        let mut gen_rows = Vec::new();
        for d in [8u32, 16, 32] {
            let q = SystolicParams { rows: d, cols: d, ..p.clone() };
            let t0 = Instant::now();
            let design = build(&q)?;
            let files = emit::files(&design);
            let secs = t0.elapsed().as_secs_f64();
            let lines: usize = files.iter().filter(|(f, _)| f.ends_with(".v")).map(|(_, t)| t.lines().count()).sum();
            let _ = writeln!(out, "generate {d}x{d}: {lines} Verilog lines, {} modules, {:.3} s", design.elaborate().units.len(), secs);
            gen_rows.push(json!({"grid": d, "verilog_lines": lines, "modules": design.elaborate().units.len(), "seconds": secs}));
        }
        bo.done("generation of 8x8, 16x16 and 32x32 grids");
        Ok(json!({
            "block": "systolic",
            "generator": generator(),
            "params": p,
            "dense_64x64x64": {"cycles": dense_o.cycles, "utilization": util, "cosim_cycles_per_second": cps},
            "load_filter": filter_rows,
            "gating": {"rtl_gated_products": o.gated_products, "zero_operand_products": zero_products},
            "model_vs_rtl": engines,
            "generation": gen_rows,
        }))
    }
}

/// The GEMM on which the bench times the golden model against the RTL
/// engine (M x K x N), and the seed of its values.
const ENGINES_GEMM: (usize, usize, usize) = (1024, 64, 1024);
const ENGINES_SEED: u64 = 1;

/// Wall-clock time of the golden model and of the RTL engine (the
/// testbench's run; the Verilator build apart) on the same large GEMM of
/// random values (uniform over the element types), at the bench's
/// parameters; the two outcomes must be equal.
fn model_vs_rtl(p: &SystolicParams, out: &mut dyn Write) -> Result<Value> {
    let (m, k, n) = ENGINES_GEMM;
    let mut rng = Rng::new(ENGINES_SEED);
    let mut matrix = |rows: usize, cols: usize, t: ElemType| -> Vec<Vec<i64>> {
        let span = (t.max() - t.min() + 1) as u64;
        (0..rows).map(|_| (0..cols).map(|_| t.min() + rng.below(span) as i64).collect()).collect()
    };
    let a = matrix(m, k, p.a_type);
    let b = matrix(k, n, p.b_type);
    let gemm = Gemm { a, b, c0: None };
    let t0 = Instant::now();
    let model_o = model::run(p, &gemm);
    let model_secs = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let compiled = compile_design(&build(p)?)?;
    let build_secs = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let (rtl_o, st) = tb::run(&compiled, p, &gemm, None, None)?;
    let rtl_secs = t0.elapsed().as_secs_f64();
    if rtl_o != model_o {
        return Err(Error::Failed(format!(
            "model against RTL on {m}x{k}x{n}: the outcomes differ (cycles {} and {}, useful MACs {} and {})",
            model_o.cycles, rtl_o.cycles, model_o.useful_macs, rtl_o.useful_macs
        )));
    }
    let ratio = model_secs / rtl_secs;
    let _ = writeln!(
        out,
        "model against RTL on {m}x{k}x{n} (random {}/{}, seed {ENGINES_SEED}; {} cycles, same outcome): model {model_secs:.2} s, RTL {rtl_secs:.2} s (+ {build_secs:.1} s Verilator build), model/RTL {ratio:.3}",
        p.a_type.name(),
        p.b_type.name(),
        model_o.cycles
    );
    Ok(json!({
        "m": m, "k": k, "n": n, "seed": ENGINES_SEED, "cycles": model_o.cycles,
        "model_seconds": model_secs, "rtl_seconds": rtl_secs, "rtl_build_seconds": build_secs,
        "model_over_rtl": ratio, "cosim_cycles_per_second": st.rate(),
    }))
}

/// A GEMM whose A has exactly `zero_pct` percent of its k-slices all zero
/// (chosen at random; a k-slice is a k-step's `lanes` columns); other values
/// are non-zero: integers from -127 to 127 (for floating point, those
/// divided by 16, rounded to the element type, so never zero, Inf or NaN).
fn sparse_gemm(rng: &mut Rng, p: &SystolicParams, m: usize, k: usize, n: usize, zero_pct: u32) -> Gemm {
    let nz = |rng: &mut Rng, t: ElemType| loop {
        let v = rng.below(255) as i64 - 127;
        if v == 0 {
            continue;
        }
        match FpType::of(t) {
            None => return v,
            Some(f) => {
                if let Ok(bits) = f.from_f64(v as f64 / 16.0) {
                    return bits as i64;
                }
            }
        }
    };
    // Partial Fisher-Yates over the k-slices (a k-step's `lanes` K
    // indices): the first steps*pct/100 of a shuffled order are dead.
    let l = p.lanes as usize;
    let steps = k.div_ceil(l);
    let mut order: Vec<usize> = (0..steps).collect();
    let n_dead = steps * zero_pct as usize / 100;
    for i in 0..n_dead {
        let j = i + rng.below((steps - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut dead = vec![false; steps];
    for &st in &order[..n_dead] {
        dead[st] = true;
    }
    let a = (0..m).map(|_| (0..k).map(|kk| if dead[kk / l] { 0 } else { nz(rng, p.a_type) }).collect()).collect();
    let b = (0..k).map(|_| (0..n).map(|_| nz(rng, p.b_type)).collect()).collect();
    Gemm { a, b, c0: None }
}

