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
