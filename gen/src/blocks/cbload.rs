//! The constant-buffer burst load unit on the command line: run and bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::Result;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::cbload::build;
use gpurtl_params::cbload::CbloadParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::cbload::{self as model, Instr, Offset, Outcome, View, Workload};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cbload as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Cbload;
pub const BLOCK: Cbload = Cbload;

impl BlockDef for Cbload {
    type Params = CbloadParams;
    type Input = Workload;
    type Output = Outcome;
    const SUMMARY: &'static str =
        "constant-buffer burst load: one CDL instruction fills N registers from a constant buffer view";

    fn build(p: &CbloadParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &CbloadParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    fn model(p: &CbloadParams, w: &Workload) -> Result<Outcome> {
        Ok(model::run(p, w))
    }
    fn rtl(p: &CbloadParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, w, None, vcd)?.0)
    }
    fn output_json(p: &CbloadParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &CbloadParams, rng: &mut Rng) -> Workload {
        let n = 1 + rng.below(8) as usize;
        // Through AXI4 the path takes AXI_PATH_CYCLES of the latency, so the
        // model's cycles are the RTL's only from one cycle more (tests/cbload.rs).
        let min = if p.mem_if == gpurtl_params::MemIf::Axi4 { gpurtl_sim::tb::AXI_PATH_CYCLES + 1 } else { 1 };
        let latency = min + rng.below(12) as u32;
        tb::random_workload(rng, p, n, latency)
    }

    /// Burst versus single loads at memory latency 10, against the bandwidth
    /// floor of N*reg_bits/read_bits beats.
    fn bench(cfg: &CbloadParams, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let sizes: Vec<u32> = [1u32, 4, 16, 64].into_iter().filter(|&n| n <= cfg.max_burst).collect();
        // The Verilator build, a burst and singles at each size, the area.
        o.steps(1 + 2 * sizes.len() as u64 + 1);
        o.running("the Verilator build");
        let design = build(cfg)?;
        let compiled = compile_design(&design)?;
        o.done("the Verilator build");
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
        for n in sizes {
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
                let what = format!("{n} registers, {}", if burst { "a burst" } else { "single loads" });
                o.running(&what);
                let (res, stats) = tb::run(&compiled, cfg, &w, None, None)?;
                o.done(&what);
                cps = stats.rate();
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
        o.running("yosys area");
        let s = yosys_area(&design)?;
        o.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({
            "block": "cbload",
            "generator": generator(),
            "params": cfg,
            "memory_latency": latency,
            "rows": rows,
            "yosys_cells": s.cells,
            "yosys_flip_flops": s.flip_flops,
        }))
    }
}
