//! The banked scratchpad on the command line: run and bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::Result;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::scratchpad::build;
use gpurtl_params::scratchpad::ScratchpadParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::scratchpad::{self as model, Outcome, Phase, Workload, Write as WriteOp};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::scratchpad as tb;
use num_bigint::BigUint;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Scratchpad;
pub const BLOCK: Scratchpad = Scratchpad;

impl BlockDef for Scratchpad {
    type Params = ScratchpadParams;
    type Input = Workload;
    type Output = Outcome;
    const SUMMARY: &'static str = "scratchpad: banked block RAM behind native read and write ports, round robin per bank";

    fn build(p: &ScratchpadParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &ScratchpadParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    fn model(p: &ScratchpadParams, w: &Workload) -> Result<Outcome> {
        Ok(model::run(p, w))
    }
    fn rtl(p: &ScratchpadParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, w, None, vcd)?.0)
    }
    fn output_json(p: &ScratchpadParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &ScratchpadParams, rng: &mut Rng) -> Workload {
        let hazards = rng.chance(30);
        let (phases, per_port) = (1 + rng.below(4) as usize, 1 + rng.below(8) as usize);
        model::random_workload(rng, p, phases, per_port, hazards)
    }

    /// Words a cycle against the floor of min(ports, banks): every read
    /// port streaming consecutive words (no conflict), then every read port
    /// on one bank (all conflicts), and the write ports likewise.
    fn bench(p: &ScratchpadParams, bo: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        // The Verilator build, 4 patterns, the area.
        bo.steps(1 + 4 + 1);
        bo.running("the Verilator build");
        let design = build(p)?;
        let compiled = compile_design(&design)?;
        bo.done("the Verilator build");
        let db = p.data_bytes() as u64;
        let n = 256u64.min(p.words as u64 * p.banks as u64 / p.read_ports.max(p.write_ports) as u64);
        let _ = writeln!(out, "scratchpad bench: {} banks x {} words x {} bits, {} read / {} write ports", p.banks, p.words, p.data_bits, p.read_ports, p.write_ports);
        let _ = writeln!(out, "{:<28} {:>7} {:>8} {:>10} {:>8} {:>10}", "pattern", "words", "cycles", "words/cyc", "floor", "waits");
        let mut rows = Vec::new();
        // Port k's i-th word: interleaved over the banks (no two ports on one
        // bank in a cycle when ports <= banks), or all on bank 0.
        let addr = |k: u64, i: u64, ports: u64, spread: bool| if spread { (i * ports + k) * db } else { (i * ports + k) * p.banks as u64 * db };
        let fill: Vec<Vec<WriteOp>> = (0..p.write_ports as u64)
            .map(|k| {
                (0..n * p.read_ports as u64 / p.write_ports as u64 + 1)
                    .map(|i| WriteOp { addr: (i * p.write_ports as u64 + k) * db, data: BigUint::from(i), strb: (1u32 << db) - 1 })
                    .filter(|x| x.addr < (1u64 << p.addr_bits()))
                    .collect()
            })
            .collect();
        for (name, spread) in [("reads, consecutive words", true), ("reads, one bank", false), ("writes, consecutive words", true), ("writes, one bank", false)] {
            bo.running(name);
            let writing = name.starts_with("writes");
            let ports = if writing { p.write_ports } else { p.read_ports } as u64;
            let span = 1u64 << p.addr_bits();
            let ops = |k: u64| (0..n).map(move |i| addr(k, i, ports, spread) % span);
            let phase = if writing {
                Phase { reads: vec![], writes: (0..ports).map(|k| ops(k).map(|a| WriteOp { addr: a, data: BigUint::from(a), strb: (1u32 << db) - 1 }).collect()).collect() }
            } else {
                Phase { reads: (0..ports).map(|k| ops(k).collect()).collect(), writes: vec![] }
            };
            let mut phases = vec![];
            if !writing {
                phases.push(Phase { reads: vec![], writes: fill.clone() });
            }
            phases.push(phase);
            let w = Workload { phases };
            let (o, _) = tb::run(&compiled, p, &w, None, None)?;
            let last = o.phases.last().expect("a phase");
            let words = n * ports;
            let rate = words as f64 / last.cycles.max(1) as f64;
            let floor = if spread { ports.min(p.banks as u64) } else { 1 } as f64;
            let _ = writeln!(out, "{:<28} {:>7} {:>8} {:>10.3} {:>8.1} {:>10}", name, words, last.cycles, rate, floor, o.counters.conflict_waits);
            rows.push(json!({"pattern": name, "words": words, "cycles": last.cycles, "words_per_cycle": rate, "floor_words_per_cycle": floor, "conflict_waits": o.counters.conflict_waits}));
            bo.done(name);
        }
        bo.running("yosys area");
        let s = yosys_area(&design)?;
        bo.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops (memories as memory cells)", s.cells, s.flip_flops);
        Ok(json!({"block": "scratchpad", "generator": generator(), "params": p, "rows": rows, "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops}))
    }
}
