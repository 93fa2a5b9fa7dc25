//! The compress/expand unit on the command line: run and bench.

use crate::bench::{generator, yosys_area};
use crate::block::BlockDef;
use crate::error::Result;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::compress::build;
use gpurtl_params::compress::CompressParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::compress::{self as model, Op, Output};
use gpurtl_sim::models::InputError;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

pub struct Compress;
pub const BLOCK: Compress = Compress;

impl BlockDef for Compress {
    type Params = CompressParams;
    type Input = Vec<Op>;
    type Output = Output;
    const SUMMARY: &'static str =
        "packed compress/expand unit: 8/16/32/64-bit elements, merge or zeroing, one vector per cycle";

    fn build(p: &CompressParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &CompressParams, input: &Value) -> Result<Vec<Op>, InputError> {
        model::parse_input(input, p.width)
    }
    fn model(p: &CompressParams, ops: &Vec<Op>) -> Output {
        model::run(ops, p.latency)
    }
    fn rtl(p: &CompressParams, compiled: &Compiled, ops: &Vec<Op>, vcd: Option<&Path>) -> Result<Output, CosimError> {
        Ok(tb::run(compiled, p.width, ops, None, vcd)?.0)
    }
    fn output_json(_: &CompressParams, out: &Output) -> Value {
        serde_json::to_value(out).unwrap_or(Value::Null)
    }

    /// Throughput and latency without stalls, area and cosim speed at
    /// widths 128..1024 (at the given latency where a width allows it).
    fn bench(p: &CompressParams, out: &mut dyn Write) -> Result<Value> {
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
            let design = build(&q)?;
            // Throughput: a long run with no stalls. Steady state = results / (cycles - latency + 1).
            let compiled = compile_design(&design)?;
            let n = 2000;
            let ops = tb::random_ops(&mut Rng::new(width as u64), width, n, Some(8));
            let t0 = Instant::now();
            let (res, stats) = tb::run(&compiled, width, &ops, None, None)?;
            let secs = t0.elapsed().as_secs_f64();
            let vpc = n as f64 / (res.cycles - lat as u64 + 1) as f64;
            let cps = stats.ticks as f64 / secs;
            let s = yosys_area(&design)?;
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
        let _ = writeln!(
            out,
            "area growth 128->1024: {:.2}x (W log W predicts 14x, a crossbar 64x)",
            rows[3]["cells_vs_w128"].as_f64().unwrap_or(0.0)
        );
        Ok(json!({
            "block": "compress",
            "generator": generator(),
            "command": format!("gpurtl bench compress --param latency={}", p.latency),
            "rows": rows,
        }))
    }
}
