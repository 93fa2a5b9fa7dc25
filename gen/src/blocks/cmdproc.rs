//! The command processor front end on the command line: run (JSON or the
//! assembler's run text), `asm` and `disasm` of PM4 packets, and a bench of
//! decode throughput and latency.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::cmdproc::build;
use gpurtl_params::cmdproc::{CmdprocParams, Opcode};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::cmdproc::{self as model, pm4, Outcome, Registers, Workload};
use pm4::header;
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cmdproc as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Cmdproc;
pub const BLOCK: Cmdproc = Cmdproc;

/// A run of `dwords` at 0x1000 with an index buffer of `prims` at 0x10_0000.
fn workload(dwords: Vec<u32>, prims: Vec<u32>, latency: u32) -> Workload {
    let registers = Registers {
        cmd_base: 0x1000,
        cmd_size: 4 * dwords.len() as u32,
        prim_base: 0x10_0000,
        prim_size: 4 * prims.len() as u32,
        state: vec![],
        state_ptr: 0,
        irq_enable: 3,
    };
    let mut memory = vec![(0x1000, dwords)];
    if !prims.is_empty() {
        memory.push((0x10_0000, prims));
    }
    Workload { registers, memory, mem_latency: latency, pipeline: Default::default() }
}

impl BlockDef for Cmdproc {
    type Params = CmdprocParams;
    type Input = Workload;
    type Output = Outcome;
    const SUMMARY: &'static str =
        "command processor front end: AXI4-Lite registers and doorbell, PM4 fetch and decode, primitive pool, serialized output, trace";

    fn build(p: &CmdprocParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &CmdprocParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    /// The assembler's run text (`.registers`, `.memory`, packets).
    fn text_input(_p: &CmdprocParams, text: &str) -> Option<Result<Value>> {
        Some(pm4::run_input(text).map_err(|e| Error::Bad(pm4::errors_text(&e))))
    }
    fn unmodeled(p: &Self::Params) -> &'static [&'static str] {
        if p.mem_if == gpurtl_params::MemIf::Axi4 {
            &["cycles"]
        } else {
            &[]
        }
    }
    fn model(p: &CmdprocParams, w: &Workload) -> Result<Outcome> {
        Ok(model::run(p, w))
    }
    fn rtl(p: &CmdprocParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, w, None, vcd)?.0)
    }
    fn output_json(p: &CmdprocParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &CmdprocParams, rng: &mut Rng) -> Workload {
        let latency = 1 + rng.below(24) as u32;
        tb::random_workload(rng, p, latency)
    }
    const COMMANDS: &'static [&'static str] = &["asm", "disasm"];
    /// PM4 packet lines (docs/cmdproc.md, Assembler text).
    fn assemble(text: &str) -> Result<Vec<u32>> {
        pm4::assemble(text).map_err(|e| Error::Bad(pm4::errors_text(&e)))
    }
    fn disassemble(dwords: &[u32]) -> Result<String> {
        Ok(pm4::disassemble(dwords))
    }

    /// Commands per cycle at steady state against min(1, F / packet dwords),
    /// for NOPs of 1, 2, 4 and 6 dwords and for indexed draws, at memory
    /// latency 1 and 20; doorbell-to-first-command latency.
    fn bench(cfg: &CmdprocParams, bo: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        // The Verilator build, 6 rows at each of 2 latencies, the doorbell, the area.
        bo.steps(1 + 2 * (4 + 2) + 1 + 1);
        bo.running("the Verilator build");
        let design = build(cfg)?;
        let compiled = compile_design(&design)?;
        bo.done("the Verilator build");
        let f = cfg.fetch_dwords() as f64;
        let run = |w: &Workload| -> Result<(Outcome, f64)> {
            let (o, stats) = tb::run(&compiled, cfg, w, None, None)?;
            if model::run(cfg, w) != o {
                return Err(Error::Failed("cmdproc bench: the RTL and the golden model disagree".into()));
            }
            Ok((o, stats.rate()))
        };
        let nops = |k: u32, count: usize| -> Vec<u32> {
            (0..count).flat_map(|_| std::iter::once(header(Opcode::Nop, k - 1)).chain((1..k).map(|j| j * 3))).collect()
        };
        let _ = writeln!(
            out,
            "cmdproc bench: {}-bit fetch, {}-beat pool, {}-command output queue; steady state from runs of N and 2N packets",
            cfg.fetch_bits, cfg.pool_beats, cfg.out_depth
        );
        let _ = writeln!(out, "{:<22} {:>8} {:>10} {:>8} {:>9} {:>14}", "packets", "latency", "cmd/cycle", "bound", "vs bound", "cosim cyc/s");
        let mut rows = Vec::new();
        let n = 400usize;
        let mut row = |name: String, latency: u32, bound: f64, make: &dyn Fn(usize) -> Workload| -> Result<()> {
            let what = format!("{name}, latency {latency}");
            bo.running(&what);
            let (a, _) = run(&make(n))?;
            let (b2, cps) = run(&make(2 * n))?;
            let rate = n as f64 / (b2.cycles - a.cycles) as f64;
            let _ = writeln!(out, "{:<22} {:>8} {:>10.3} {:>8.3} {:>8.1}% {:>14.0}", name, latency, rate, bound, 100.0 * rate / bound, cps);
            rows.push(json!({"packets": name, "latency": latency, "commands_per_cycle": rate, "bound": bound,
                             "ratio": rate / bound, "cycles_n": a.cycles, "cycles_2n": b2.cycles, "n": n,
                             "cosim_cycles_per_second": cps}));
            bo.done(&what);
            Ok(())
        };
        for latency in [1u32, 20] {
            for k in [1u32, 2, 4, 6] {
                let bound = (f / k as f64).min(1.0);
                row(format!("NOP, {k} dwords"), latency, bound, &|c| workload(nops(k, c), vec![], latency))?;
            }
            for m in [1u32, 4] {
                // INDEX_TYPE 32, then draws of m indices each: 5 dwords a
                // draw, one index a cycle on the primitive port.
                let bound = (f / 5.0).min(1.0 / m as f64).min(1.0);
                let make = |c: usize| {
                    let mut d = vec![header(Opcode::IndexType, 1), 1];
                    for i in 0..c {
                        d.extend([header(Opcode::DrawIndexOffset2, 4), 0, (i as u32 * m) % 64, m, 0]);
                    }
                    workload(d, (0..64 + 4).collect(), latency)
                };
                row(format!("draws, {m} indices"), latency, bound, &make)?;
            }
        }
        // Doorbell to first command: a one-NOP buffer; the command leaves in
        // the run's second-to-last busy cycle.
        let mut first = Vec::new();
        bo.running("doorbell to first command");
        for latency in [1u32, 20] {
            let (o, _) = run(&workload(nops(1, 1), vec![], latency))?;
            let _ = writeln!(out, "doorbell to first command at latency {latency}: {} cycles", o.cycles - 1);
            first.push(json!({"latency": latency, "cycles": o.cycles - 1}));
        }
        bo.done("doorbell to first command");
        bo.running("yosys area");
        let s = yosys_area(&design)?;
        bo.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({
            "block": "cmdproc",
            "generator": generator(),
            "params": cfg,
            "rows": rows,
            "doorbell_to_first_command": first,
            "yosys_cells": s.cells,
            "yosys_flip_flops": s.flip_flops,
        }))
    }
}
