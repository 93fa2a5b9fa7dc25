//! The compress/expand unit on the command line: run and bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::Result;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::compress::build;
use gpurtl_params::compress::CompressParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::compress::{self as model, Op, Output};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

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
    fn parse_input(p: &CompressParams, input: &Value) -> Result<Vec<Op>, InputErrors> {
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
    fn random_input(p: &CompressParams, rng: &mut Rng) -> Vec<Op> {
        let n = 1 + rng.below(24) as usize;
        tb::random_ops(rng, p.width, n, None)
    }

    /// Throughput and latency without stalls, area and cosim speed at the
    /// given parameters (the README's table runs it at each width).
    fn bench(p: &CompressParams, _: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let design = build(p)?;
        // Throughput: a long run with no stalls. Steady state = results / (cycles - latency + 1).
        let compiled = compile_design(&design)?;
        let n = 2000;
        let ops = tb::random_ops(&mut Rng::new(p.width as u64), p.width, n, Some(8));
        let (res, stats) = tb::run(&compiled, p.width, &ops, None, None)?;
        let vpc = n as f64 / (res.cycles - p.latency as u64 + 1) as f64;
        let s = yosys_area(&design)?;
        let _ = writeln!(out, "compress bench (8-bit elements, no stalls)");
        let _ = writeln!(
            out,
            "{:>6} {:>9} {:>12} {:>8} {:>9} {:>7} {:>14}",
            "width", "vectors", "vec/cycle", "latency", "cells", "FFs", "cosim cyc/s"
        );
        let _ = writeln!(
            out,
            "{:>6} {:>9} {:>12.4} {:>8} {:>9} {:>7} {:>14.0}",
            p.width,
            n,
            vpc,
            p.latency,
            s.cells,
            s.flip_flops,
            stats.rate()
        );
        Ok(json!({
            "block": "compress",
            "generator": generator(),
            "params": p,
            "vectors": n, "cycles": res.cycles, "vectors_per_cycle": vpc,
            "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops, "cosim_cycles_per_second": stats.rate(),
        }))
    }
}
