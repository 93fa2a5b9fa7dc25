//! The compress/expand unit on the command line: run, bench, and its
//! design of the harness bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef, HarnessPoint};
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::compress::build;
use gpurtl_params::compress::CompressParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::compress::{self as model, Output, RunInput, Stream, StreamKind, StreamOutput, StreamVector};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Compress;
pub const BLOCK: Compress = Compress;

/// A run's results: vector operations, or streams.
pub enum RunOutput {
    Ops(Output),
    Streams(StreamOutput),
}

impl BlockDef for Compress {
    type Params = CompressParams;
    type Input = RunInput;
    type Output = RunOutput;
    const SUMMARY: &'static str =
        "packed compress/expand unit: 8/16/32/64-bit elements, merge or zeroing, one vector per cycle";

    fn build(p: &CompressParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &CompressParams, input: &Value) -> Result<RunInput, InputErrors> {
        model::parse_run_input(input, p.width, p.stream)
    }
    fn model(p: &CompressParams, input: &RunInput) -> Result<RunOutput> {
        Ok(match input {
            // The stream unit's input queue and issue register add two cycles.
            RunInput::Ops(ops) => RunOutput::Ops(model::run(ops, p.latency + 2 * p.stream as u32)),
            RunInput::Streams(s) => RunOutput::Streams(model::run_streams(s, p.width, p.latency)),
        })
    }
    fn rtl(p: &CompressParams, compiled: &Compiled, input: &RunInput, vcd: Option<&Path>) -> Result<RunOutput, CosimError> {
        Ok(match input {
            RunInput::Ops(ops) => RunOutput::Ops(tb::run(compiled, p.width, ops, None, vcd)?.0),
            RunInput::Streams(s) => RunOutput::Streams(tb::run_streams(compiled, p.width, p.latency, &tb::StreamRun::plain(s), vcd)?.0),
        })
    }
    fn output_json(_: &CompressParams, out: &RunOutput) -> Value {
        match out {
            RunOutput::Ops(o) => serde_json::to_value(o),
            RunOutput::Streams(o) => serde_json::to_value(o),
        }
        .unwrap_or(Value::Null)
    }
    fn random_input(p: &CompressParams, rng: &mut Rng) -> RunInput {
        if p.stream && rng.chance(75) {
            let n = 1 + rng.below(4) as usize;
            RunInput::Streams(tb::random_streams(rng, p.width, n, 12, None))
        } else {
            let n = 1 + rng.below(24) as usize;
            RunInput::Ops(tb::random_ops(rng, p.width, n, None))
        }
    }
    /// The unit at 1024 bits on random 8-bit operations, after the
    /// systolic grids in the table.
    fn harness() -> Result<Vec<HarnessPoint>> {
        let p = CompressParams { width: 1024, latency: 2, stream: false };
        let ops = tb::random_ops(&mut Rng::new(3), p.width, 4000, Some(8));
        let w = p.width;
        Ok(vec![HarnessPoint {
            label: "compress 1024",
            order: 1,
            design: build(&p)?,
            run: Box::new(move |c| Ok(tb::run(c, w, &ops, None, None)?.1)),
            whole: None,
        }])
    }

    /// Throughput and latency without stalls, area and cosim speed at the
    /// given parameters (`make bench` runs it at each width for docs/compress.md).
    fn bench(p: &CompressParams, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        // The throughput run, the area, the stream unit's build and area, its 16 rows.
        o.steps(2 + 1 + 2 * 2 * 4);
        o.running("throughput: the Verilator build and 2000 vectors");
        let design = build(p)?;
        // Throughput: a long run with no stalls. Steady state = results / (cycles - latency + 1).
        let compiled = compile_design(&design)?;
        let n = 2000;
        let ops = tb::random_ops(&mut Rng::new(p.width as u64), p.width, n, Some(8));
        let (res, stats) = tb::run(&compiled, p.width, &ops, None, None)?;
        let vpc = n as f64 / (res.cycles - p.latency as u64 + 1) as f64;
        o.done(&format!("throughput, {n} vectors"));
        o.running("yosys area");
        let s = yosys_area(&design)?;
        o.done("yosys area");
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
        let streams = stream_bench(p, o, out)?;
        Ok(json!({
            "block": "compress",
            "generator": generator(),
            "params": p,
            "vectors": n, "cycles": res.cycles, "vectors_per_cycle": vpc,
            "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops, "cosim_cycles_per_second": stats.rate(),
            "stream": streams,
        }))
    }
}

/// Stream mode at the same width and latency: 10 streams of 100 vectors per
/// row, no stalls, masks of one density (each mask bit set with that
/// probability). For compress, the dense beats against the floor (the
/// selected elements / lanes, rounded up per stream); for both, vectors per
/// cycle. The RTL's results and cycles are checked against the model.
fn stream_bench(p: &CompressParams, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
    let ones = |v: &StreamVector| v.mask.as_ref().map_or(0, |m| m.iter().filter(|&&b| b == 1).count());
    let sp = CompressParams { stream: true, ..p.clone() };
    o.running("stream unit: the Verilator build and yosys area");
    let design = build(&sp)?;
    let compiled = compile_design(&design)?;
    let area = yosys_area(&design)?;
    o.done("stream unit: the Verilator build and yosys area");
    let _ = writeln!(out, "\ncompress stream mode (stream unit, width {}, latency {}: {} cells, {} FFs)", p.width, p.latency, area.cells, area.flip_flops);
    let _ = writeln!(
        out,
        "{:>8} {:>5} {:>8} {:>8} {:>9} {:>7} {:>7} {:>8} {:>10} {:>11}",
        "stream", "bits", "density", "vectors", "elements", "beats", "floor", "cycles", "vec/cycle", "beats/cycle"
    );
    let mut rows = Vec::new();
    let mut rng = Rng::new(p.width as u64 ^ 0x5eed);
    for kind in [StreamKind::CompressStream, StreamKind::ExpandStream] {
        for eb in [8u32, 32] {
            for density in [10u32, 50, 90, 100] {
                let what = format!("{} streams, {eb}-bit elements, mask density {density}%", if kind == StreamKind::CompressStream { "compress" } else { "expand" });
                o.running(&what);
                let n = (p.width / eb) as usize;
                let max = (1u64 << eb) - 1;
                let streams: Vec<Stream> = (0..10)
                    .map(|_| {
                        let vectors: Vec<StreamVector> = (0..100)
                            .map(|_| {
                                let mask: Vec<u8> = (0..n).map(|_| rng.chance(density) as u8).collect();
                                let src = (kind == StreamKind::CompressStream).then(|| (0..n).map(|_| 1 + rng.below(max)).collect());
                                StreamVector { src, mask: Some(mask), old: None }
                            })
                            .collect();
                        let total: usize = vectors.iter().map(ones).sum();
                        let dense = if kind == StreamKind::ExpandStream { (0..total).map(|_| rng.below(max)).collect() } else { Vec::new() };
                        Stream { op: kind, element_bits: eb, zeroing: true, vectors, dense }
                    })
                    .collect();
                let (got, _, _) = tb::run_streams(&compiled, p.width, p.latency, &tb::StreamRun::plain(&streams), None)?;
                if got != model::run_streams(&streams, p.width, p.latency) {
                    return Err(Error::Failed(format!("compress stream bench: the RTL and the model differ ({kind:?}, {eb} bits, density {density}%)")));
                }
                let vectors: usize = streams.iter().map(|s| s.vectors.len()).sum();
                let per_stream: Vec<usize> = streams.iter().map(|s| s.vectors.iter().map(ones).sum()).collect();
                let elements: usize = per_stream.iter().sum();
                let floor: usize = per_stream.iter().map(|t| t.div_ceil(n)).sum();
                // Compress: beats out; expand: beats in, which the testbench
                // offers (ceil(T/n) a stream) and checks are all taken.
                let beats: usize = match kind {
                    StreamKind::CompressStream => got.streams.iter().filter_map(|s| s.beats.as_ref().map(|b| b.len())).sum(),
                    StreamKind::ExpandStream => floor,
                };
                let name = if kind == StreamKind::CompressStream { "compress" } else { "expand" };
                let vpc = vectors as f64 / got.cycles as f64;
                let bpc = beats as f64 / got.cycles as f64;
                let _ = writeln!(
                    out,
                    "{:>8} {:>5} {:>7}% {:>8} {:>9} {:>7} {:>7} {:>8} {:>10.4} {:>11.4}",
                    name, eb, density, vectors, elements, beats, floor, got.cycles, vpc, bpc
                );
                o.done(&what);
                rows.push(json!({
                    "op": name, "element_bits": eb, "density_percent": density, "streams": streams.len(),
                    "vectors": vectors, "elements": elements, "beats": beats, "floor_beats": floor,
                    "cycles": got.cycles, "vectors_per_cycle": vpc, "beats_per_cycle": bpc,
                }));
            }
        }
    }
    let _ = writeln!(out, "(beats: dense beats out for compress, in for expand; floor: ceil(selected elements / (width / bits)) per stream)");
    Ok(json!({"params": sp, "yosys_cells": area.cells, "yosys_flip_flops": area.flip_flops, "rows": rows}))
}
