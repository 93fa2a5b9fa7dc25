//! The memory arbiter and its AXI4 bridge on the command line: run and bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::Result;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::arbiter::build;
use gpurtl_params::arbiter::ArbiterParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::arbiter::{self as model, Outcome, ReadRequest, Workload, WriteBurst};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::arbiter as tb;
use num_bigint::BigUint;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Arbiter;
pub const BLOCK: Arbiter = Arbiter;

impl BlockDef for Arbiter {
    type Params = ArbiterParams;
    type Input = Workload;
    type Output = Outcome;
    const SUMMARY: &'static str =
        "memory arbiter: native read and write ports, round robin with per-source caps, onto one AXI4 master (INCR bursts, no 4 KB crossing)";

    fn build(p: &ArbiterParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &ArbiterParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    fn model(p: &ArbiterParams, w: &Workload) -> Result<Outcome> {
        Ok(model::run(p, w))
    }
    fn rtl(p: &ArbiterParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, w, None, vcd)?.0)
    }
    fn output_json(p: &ArbiterParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &ArbiterParams, rng: &mut Rng) -> Workload {
        let n = 1 + rng.below(6) as usize;
        model::random_workload(rng, p, n)
    }

    /// Beats a cycle through the memory port against its floor of one beat
    /// a cycle on R (W): every source reading (writing) bursts back to back,
    /// at a short and a long memory latency; and what a 4 KB split costs.
    fn bench(p: &ArbiterParams, bo: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let design = build(p)?;
        let db = p.data_bytes() as u64;
        let per_source = 64u64;
        let _ = writeln!(
            out,
            "arbiter bench: {} read / {} write sources, {}-bit data, bursts of up to {} beats, {} buffer beats per read source, out={}",
            p.reads, p.writes, p.data_bits, p.max_burst, p.read_buffer, p.out
        );
        let _ = writeln!(out, "{:<34} {:>7} {:>8} {:>8} {:>10} {:>12}", "pattern", "latency", "beats", "cycles", "beats/cyc", "of floor");
        let mut rows = Vec::new();
        // Sources in disjoint 1 MiB regions, bursts within a page.
        let base = |k: u64| k << 20 & ((1u64 << p.addr_bits.min(63)) - 1);
        let patterns: Vec<(&str, u32)> = vec![("reads, longest bursts", p.max_burst), ("reads, one beat", 1), ("writes, longest bursts", p.max_burst), ("writes, one beat", 1)];
        let patterns: Vec<(&str, u32)> =
            patterns.into_iter().filter(|(name, _)| if name.starts_with("writes") { p.writes > 0 } else { p.reads > 0 }).collect();
        // The Verilator build, each pattern at 2 latencies, the area.
        bo.steps(1 + 2 * patterns.len() as u64 + 1);
        bo.running("the Verilator build");
        let compiled = compile_design(&design)?;
        bo.done("the Verilator build");
        for (name, beats) in patterns {
            let writing = name.starts_with("writes");
            for latency in [4u32, 20] {
                bo.running(&format!("{name}, latency {latency}"));
                let n = (per_source / beats as u64).max(1);
                let mut w = Workload { latency, memory: vec![], reads: vec![vec![]; p.reads as usize], writes: vec![vec![]; p.writes as usize] };
                if writing {
                    for k in 0..p.writes as usize {
                        w.writes[k] = (0..n)
                            .map(|i| WriteBurst {
                                addr: base(k as u64) + i * beats as u64 * db,
                                data: vec![BigUint::from(i + 1); beats as usize],
                                strb: vec![(BigUint::from(1u8) << db) - 1u8; beats as usize],
                            })
                            .collect();
                    }
                } else {
                    for k in 0..p.reads as usize {
                        w.reads[k] = (0..n).map(|i| ReadRequest { addr: base(k as u64) + i * beats as u64 * db, beats }).collect();
                    }
                }
                let (o, _) = tb::run(&compiled, p, &w, None, None)?;
                let total = if writing { o.counters.write_beats } else { o.counters.read_beats };
                let rate = total as f64 / o.cycles.max(1) as f64;
                let _ = writeln!(out, "{:<34} {:>7} {:>8} {:>8} {:>10.3} {:>11.1}%", name, latency, total, o.cycles, rate, 100.0 * rate);
                rows.push(json!({"pattern": name, "latency": latency, "beats": total, "cycles": o.cycles, "beats_per_cycle": rate, "floor_beats_per_cycle": 1.0}));
                bo.done(&format!("{name}, latency {latency}"));
            }
        }
        bo.running("yosys area");
        let s = yosys_area(&design)?;
        bo.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({"block": "arbiter", "generator": generator(), "params": p, "rows": rows, "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops}))
    }
}
