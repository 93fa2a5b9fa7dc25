//! `gpurtl bench`: figures measured on the generated RTL, printed as a table
//! and written as JSON. Timing numbers come from here, never from tests.

use crate::blocks::Block;
use crate::cli::CliError;
use crate::rtl_engine::compile_design;
use crate::{emit, tools};
use gpurtl_hw::blocks::compress::CompressParams;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

pub fn run(b: &dyn Block, params: &Value, json_out: Option<&Path>, out: &mut dyn Write) -> Result<(), CliError> {
    let report = match b.name() {
        "compress" => {
            let p: CompressParams = serde_json::from_value(params.clone()).map_err(|e| CliError::Bad(e.to_string()))?;
            compress(b, &p, out)?
        }
        "cbload" => cbload(b, params, out)?,
        "systolic" => systolic(b, params, out)?,
        other => return Err(CliError::Bad(format!("block `{other}` has no bench yet"))),
    };
    let path = json_out.map(Path::to_path_buf).unwrap_or_else(|| format!("out/bench/{}.json", b.name()).into());
    let text = serde_json::to_string_pretty(&report).map_err(|e| CliError::Failed(e.to_string()))? + "\n";
    emit::write_atomic(&path, text.as_bytes())
        .map_err(|e| CliError::Failed(format!("cannot write `{}`: {e}", path.display())))?;
    let _ = writeln!(out, "JSON report: {}", path.display());
    Ok(())
}

fn compress(b: &dyn Block, p: &CompressParams, out: &mut dyn Write) -> Result<Value, CliError> {
    let mut rows = Vec::new();
    let _ = writeln!(out, "compress bench (latency {}, 8-bit elements, no stalls)", p.latency);
    let _ = writeln!(
        out,
        "{:>6} {:>9} {:>12} {:>8} {:>9} {:>7} {:>10} {:>14}",
        "width", "vectors", "vec/cycle", "latency", "cells", "FFs", "vs W=128", "cosim cyc/s"
    );
    let mut base_cells = None;
    for width in [128u32, 256, 512, 1024] {
        let lat = p.latency.min(CompressParams { width, latency: 1 }.layers());
        let q = CompressParams { width, latency: lat };
        let params = serde_json::to_value(&q).map_err(|e| CliError::Failed(e.to_string()))?;
        let design = b.design(&params).map_err(CliError::Failed)?;
        // Throughput: a long run with no stalls. Steady state = results / (cycles - latency + 1).
        let compiled = compile_design(&design)?;
        let n = 2000;
        let ops = tb::random_ops(&mut Rng::new(width as u64), width, n, Some(8));
        let t0 = Instant::now();
        let (res, stats) = tb::run(&compiled, width, &ops, None, None)?;
        let secs = t0.elapsed().as_secs_f64();
        let vpc = n as f64 / (res.cycles - lat as u64 + 1) as f64;
        let cps = stats.ticks as f64 / secs;
        // Area: yosys generic synthesis.
        let dir = tempfile::tempdir().map_err(|e| CliError::Failed(e.to_string()))?;
        let files = emit::files(&design, &b.provenance(&params));
        emit::write_all(dir.path(), &files).map_err(|e| CliError::Failed(e.to_string()))?;
        let s = tools::yosys_synth(dir.path(), &design.top, &emit::sources(&files))?;
        let growth = s.cells as f64 / *base_cells.get_or_insert(s.cells) as f64;
        let _ = writeln!(
            out,
            "{:>6} {:>9} {:>12.4} {:>8} {:>9} {:>7} {:>9.2}x {:>14.0}",
            width, n, vpc, lat, s.cells, s.flip_flops, growth, cps
        );
        rows.push(json!({
            "width": width, "latency": lat, "vectors": n, "cycles": res.cycles,
            "vectors_per_cycle": vpc, "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops,
            "cells_vs_w128": growth, "cosim_cycles_per_second": cps,
        }));
    }
    let _ = writeln!(out, "area growth 128->1024: {:.2}x (W log W predicts 14x, a crossbar 64x)", rows[3]["cells_vs_w128"].as_f64().unwrap_or(0.0));
    Ok(json!({
        "block": "compress",
        "generator": format!("gpurtl {}", emit::VERSION),
        "command": format!("gpurtl bench compress --param latency={}", p.latency),
        "rows": rows,
    }))
}

/// Burst versus single loads at memory latency 10, against the bandwidth
/// floor of N*reg_bits/read_bits beats.
fn cbload(b: &dyn Block, params: &Value, out: &mut dyn Write) -> Result<Value, CliError> {
    use gpurtl_sim::models::cbload::{Config, Instr, Offset, View, Workload};
    use gpurtl_sim::tb::cbload as cb_tb;
    let cfg: Config = serde_json::from_value(params.clone()).map_err(|e| CliError::Failed(e.to_string()))?;
    let design = b.design(params).map_err(CliError::Failed)?;
    let compiled = compile_design(&design)?;
    let gb = cfg.reg_bits / 8;
    let per_reg = (cfg.reg_bits / cfg.read_bits) as u64;
    let latency = 10;
    let size = cfg.max_burst as u64 * gb as u64;
    let view = View { base: 0, size, data: (0..size).map(|i| (i * 7 + 1) as u8).collect() };
    let mut rows = Vec::new();
    let _ = writeln!(
        out,
        "cbload bench: {}-bit registers, {}-bit reads, {} in flight, memory latency {latency}",
        cfg.reg_bits, cfg.read_bits, cfg.max_outstanding
    );
    let _ = writeln!(out, "{:>4} {:>8} {:>12} {:>12} {:>8} {:>10} {:>14}", "N", "floor", "burst", "N singles", "speedup", "burst/floor", "cosim cyc/s");
    for n in [1u32, 4, 16, 64].into_iter().filter(|&n| n <= cfg.max_burst) {
        let load = |burst: bool| -> Vec<Instr> {
            let one = |dest: u32, offset: u64, size: u32| Instr { dest, view: 0, offset: Offset::Imm(offset), burst, size, tag: dest };
            if burst {
                vec![one(0, 0, n * gb)]
            } else {
                (0..n).map(|j| one(j, j as u64 * gb as u64, 0)).collect()
            }
        };
        let mut cycles = [0u64; 2];
        let mut cps = 0.0;
        for (k, burst) in [true, false].into_iter().enumerate() {
            let w = Workload { mem_latency: latency, views: vec![view.clone()], init_regs: vec![], instrs: load(burst) };
            let t0 = Instant::now();
            let (res, stats) = cb_tb::run(&compiled, &cfg, &w, None, None)?;
            cps = stats.ticks as f64 / t0.elapsed().as_secs_f64();
            cycles[k] = res.cycles;
        }
        let floor = n as u64 * per_reg;
        let ratio = cycles[0] as f64 / floor as f64;
        let speedup = cycles[1] as f64 / cycles[0] as f64;
        let _ = writeln!(out, "{:>4} {:>8} {:>12} {:>12} {:>7.2}x {:>10.3}x {:>14.0}", n, floor, cycles[0], cycles[1], speedup, ratio, cps);
        rows.push(json!({
            "registers": n, "floor_beats": floor, "burst_cycles": cycles[0], "single_loads_cycles": cycles[1],
            "speedup": speedup, "burst_vs_floor": ratio, "cosim_cycles_per_second": cps,
        }));
    }
    let dir = tempfile::tempdir().map_err(|e| CliError::Failed(e.to_string()))?;
    let files = emit::files(&design, &b.provenance(params));
    emit::write_all(dir.path(), &files).map_err(|e| CliError::Failed(e.to_string()))?;
    let s = tools::yosys_synth(dir.path(), &design.top, &emit::sources(&files))?;
    let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
    Ok(json!({
        "block": "cbload",
        "generator": format!("gpurtl {}", emit::VERSION),
        "params": params,
        "memory_latency": latency,
        "rows": rows,
        "yosys_cells": s.cells,
        "yosys_flip_flops": s.flip_flops,
    }))
}

/// A GEMM whose A has exactly `zero_pct` percent of its k columns all zero
/// (chosen at random), so that share of the k-slices is zero; other values
/// are non-zero.
fn sparse_gemm(rng: &mut Rng, m: usize, k: usize, n: usize, zero_pct: u32) -> gpurtl_sim::models::systolic::Gemm {
    let nz = |rng: &mut Rng| loop {
        let v = rng.below(255) as i64 - 127;
        if v != 0 {
            return v;
        }
    };
    // Partial Fisher-Yates: the first k*pct/100 of a shuffled order are dead.
    let mut order: Vec<usize> = (0..k).collect();
    let n_dead = k * zero_pct as usize / 100;
    for i in 0..n_dead {
        let j = i + rng.below((k - i) as u64) as usize;
        order.swap(i, j);
    }
    let mut dead = vec![false; k];
    for &kk in &order[..n_dead] {
        dead[kk] = true;
    }
    let a = (0..m).map(|_| (0..k).map(|kk| if dead[kk] { 0 } else { nz(rng) }).collect()).collect();
    let b = (0..k).map(|_| (0..n).map(|_| nz(rng)).collect()).collect();
    gpurtl_sim::models::systolic::Gemm { a, b, c0: None }
}

/// Utilization, load-filter speedups, gating counts, generation size and
/// time, cosim speed. Uses an 8x8 int8 grid unless the parameters say otherwise.
fn systolic(b: &dyn Block, params: &Value, out: &mut dyn Write) -> Result<Value, CliError> {
    use gpurtl_hw::blocks::systolic::SystolicParams;
    use gpurtl_sim::models::systolic::{program, ws_program, Config};
    use gpurtl_sim::tb::systolic as sy_tb;
    let mut p: SystolicParams = serde_json::from_value(params.clone()).map_err(|e| CliError::Failed(e.to_string()))?;
    if *params == b.defaults() {
        p.rows = 8;
        p.cols = 8;
    }
    let run = |p: &SystolicParams, gemm: &gpurtl_sim::models::systolic::Gemm| -> Result<(gpurtl_sim::models::systolic::Outcome, f64), CliError> {
        let v = serde_json::to_value(p).map_err(|e| CliError::Failed(e.to_string()))?;
        let cfg: Config = serde_json::from_value(v.clone()).map_err(|e| CliError::Failed(e.to_string()))?;
        let compiled = compile_design(&b.design(&v).map_err(CliError::Failed)?)?;
        let t0 = Instant::now();
        let (o, st) = sy_tb::run(&compiled, &cfg, gemm, None, None)?;
        Ok((o, st.ticks as f64 / t0.elapsed().as_secs_f64()))
    };
    let _ = writeln!(
        out,
        "systolic bench: {}x{} grid, {} lane(s), {}",
        p.rows,
        p.cols,
        p.lanes,
        if p.dataflow == "ws" { "weight-stationary".to_string() } else { format!("output-stationary, group {}", p.group) }
    );
    let mut rng = Rng::new(7);
    // Dense utilization on a 64x64x64 GEMM.
    let dense = sparse_gemm(&mut rng, 64, 64, 64, 0);
    let (dense_o, cps) = run(&p, &dense)?;
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
        let g = sparse_gemm(&mut rng, 64, 64, 64, pct);
        let off = SystolicParams { load_filter: false, ..p.clone() };
        let on = SystolicParams { load_filter: true, ..p.clone() };
        let (o_off, _) = run(&off, &g)?;
        let (o_on, _) = run(&on, &g)?;
        let zero_k = g.a[0].iter().enumerate().filter(|(k, _)| g.a.iter().all(|row| row[*k] == 0)).count();
        let speedup = o_off.cycles as f64 / o_on.cycles as f64;
        let _ = writeln!(
            out,
            "{pct}% zero k-slices ({zero_k}/64 measured): filter off {} cycles, on {} cycles, {speedup:.2}x fewer (skipped {} k-steps)",
            o_off.cycles, o_on.cycles, o_on.skipped_ksteps
        );
        filter_rows.push(json!({"zero_pct": pct, "zero_kslices": zero_k, "cycles_filter_off": o_off.cycles, "cycles_filter_on": o_on.cycles, "speedup": speedup, "skipped_ksteps": o_on.skipped_ksteps}));
    }
    // Gated products against a direct count of zero-operand products over the program.
    let g = sparse_gemm(&mut rng, 24, 40, 24, 30);
    let gp = SystolicParams { load_filter: false, rowcol_skip: false, ..p.clone() };
    let (o, _) = run(&gp, &g)?;
    let cfg: Config = serde_json::from_value(serde_json::to_value(&gp).unwrap_or_default()).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut zero_products = 0u64;
    let zero = |x: &i64, y: &i64| *x == 0 || *y == 0;
    for t in ws_program(&cfg, &g).0.iter().filter(|_| p.dataflow == "ws") {
        for v in &t.vectors {
            for (ai, wrow) in v.a.iter().zip(&t.weights) {
                for wj in wrow {
                    zero_products += ai.iter().zip(wj).filter(|(x, y)| zero(x, y)).count() as u64;
                }
            }
        }
    }
    for t in program(&cfg, &g).iter().filter(|_| p.dataflow != "ws") {
        for gr in &t.groups {
            for st in &gr.steps {
                for ai in &st.a {
                    for bj in &st.b {
                        zero_products += ai.iter().zip(bj).filter(|(x, y)| zero(x, y)).count() as u64;
                    }
                }
            }
        }
    }
    let _ = writeln!(out, "gating on 24x40x24 (30% zero k-slices, filter off): RTL gated {} products, direct count {}", o.gated_products, zero_products);
    // Generation size and time.
    let mut gen_rows = Vec::new();
    for d in [8u32, 16, 32] {
        let q = SystolicParams { rows: d, cols: d, ..p.clone() };
        let v = serde_json::to_value(&q).map_err(|e| CliError::Failed(e.to_string()))?;
        let t0 = Instant::now();
        let design = b.design(&v).map_err(CliError::Failed)?;
        let files = emit::files(&design, &b.provenance(&v));
        let secs = t0.elapsed().as_secs_f64();
        let lines: usize = files.iter().filter(|(f, _)| f.ends_with(".v")).map(|(_, t)| t.lines().count()).sum();
        let _ = writeln!(out, "generate {d}x{d}: {lines} Verilog lines, {} modules, {:.3} s", design.modules.len(), secs);
        gen_rows.push(json!({"grid": d, "verilog_lines": lines, "modules": design.modules.len(), "seconds": secs}));
    }
    Ok(json!({
        "block": "systolic",
        "generator": format!("gpurtl {}", emit::VERSION),
        "params": serde_json::to_value(&p).unwrap_or_default(),
        "dense_64x64x64": {"cycles": dense_o.cycles, "utilization": util, "cosim_cycles_per_second": cps},
        "load_filter": filter_rows,
        "gating": {"rtl_gated_products": o.gated_products, "zero_operand_products": zero_products},
        "generation": gen_rows,
    }))
}
