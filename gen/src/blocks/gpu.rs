//! The integrated top on the command line: `gpurtl run gpu` (queues,
//! memory, dumps) and a bench of a GEMM over 1, 2 and 4 compute units.

use crate::bench::generator;
use crate::block::{BenchOpts, BlockDef};
use crate::emit;
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::gpu::build;
use gpurtl_params::gpu::GpuParams;
use gpurtl_params::scheduler::Policy;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::mem::Memory;
use gpurtl_sim::models::cu::Region;
use gpurtl_sim::models::gpu::{self as model, MemTiming, Outcome, QueueInput, Run};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::gpu as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Gpu;
pub const BLOCK: Gpu = Gpu;

/// A run and what it gave (the output reports the run's `dump` regions).
pub struct Done {
    run: Run,
    outcome: Outcome,
}

impl BlockDef for Gpu {
    type Params = GpuParams;
    type Input = Run;
    type Output = Done;
    const SUMMARY: &'static str = "integrated top: PM4 queues launch kernels through the scheduler onto compute units, one AXI4 port";

    fn build(p: &GpuParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &GpuParams, input: &Value) -> Result<Run, InputErrors> {
        model::parse_input(input, Path::new(""), p)
    }
    fn parse_input_in(p: &GpuParams, input: &Value, base: &Path) -> Result<Run, InputErrors> {
        model::parse_input(input, base, p)
    }
    fn model(p: &GpuParams, r: &Run) -> Result<Done> {
        let outcome = model::run(p, r).map_err(|e| Error::Bad(format!("run gpu: {e}")))?;
        Ok(Done { run: r.clone(), outcome })
    }
    /// The golden model composes results; cycles (and the kernels' cycle
    /// fields) are the RTL's own (docs/gpu.md).
    fn unmodeled(_p: &GpuParams) -> &'static [&'static str] {
        &["cycles", "kernels"]
    }
    fn rtl(p: &GpuParams, compiled: &Compiled, r: &Run, vcd: Option<&Path>) -> Result<Done, CosimError> {
        let env = (r.mem.stall > 0.0).then(|| {
            let pct = (r.mem.stall * 100.0).round() as u32;
            tb::Env { seed: r.mem.seed, latency: (r.mem.latency, r.mem.latency), stall: pct, host: 0 }
        });
        let (outcome, _) = tb::run(compiled, p, r, env, tb::budget(p, r), vcd)?;
        Ok(Done { run: r.clone(), outcome })
    }
    fn output_json(p: &GpuParams, d: &Done) -> Value {
        model::output_json(p, &d.run, &d.outcome)
    }
    fn random_input(p: &GpuParams, rng: &mut Rng) -> Run {
        tb::random_run(rng, p)
    }

    /// A `S x S x S` int8 GEMM (`examples/cu/gemm.s`, 16 x 16 tiles, S =
    /// 256) on 1, 2 and 4 units: MACs a cycle against the roofline, the
    /// scaling, the doorbell-to-first-block latency, AXI beats a cycle and
    /// the mean burst; two queues of one GEMM each under `rr` and
    /// `best_fit` (each queue's makespan); cosim speed. Every run's results
    /// are checked against the golden model.
    fn bench(p: &GpuParams, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        const S: u32 = 256;
        const LATENCY: u32 = 20;
        o.steps(6);
        let _ = writeln!(out, "gpu bench: {S} x {S} x {S} int8 GEMM (gemm.s, 16 x 16 tiles), AXI latency {LATENCY}, {}-bit port", p.data_bits);
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8} {:>10}",
            "workload", "cycles", "MACs/cyc", "roofline", "of roof", "scaling", "beats/cyc", "burst", "cosim c/s"
        );
        let mut rows = Vec::new();
        let mut charts = Vec::new();
        let mut gemm_panels = Vec::new();
        let mut one = 0.0;
        let grid = (p.cu.grid_rows * p.cu.grid_cols) as f64;
        // A 16 x 16 tile over K reads 16K + 16K bytes and writes 1 KiB.
        let intensity = (16.0 * 16.0 * S as f64) / (32.0 * S as f64 + 1024.0);
        for units in [1u32, 2, 4] {
            o.done(&format!("GEMM on {units} unit(s)"));
            let q = GpuParams { units, ..p.clone() };
            let compiled = compile_design(&build(&q)?)?;
            let r = gemm_run(&q, &[(S, S, S)], LATENCY)?;
            let (got, stats, t, bars) = checked(&compiled, &q, &r)?;
            gemm_panels.push((format!("{units} unit(s)"), bars));
            let k = &got.kernels[0];
            let cycles = k.end.unwrap_or(0) - k.submit.unwrap_or(0);
            let macs = (S as f64).powi(3) / cycles as f64;
            if units == 1 {
                one = macs;
            }
            let roof = (units as f64 * grid).min(p.data_bits as f64 / 8.0 * intensity);
            let beats = (t.r + t.w) as f64 / got.cycles.unwrap_or(1) as f64;
            let burst = (t.r + t.w) as f64 / (t.ar + t.aw).max(1) as f64;
            let name = format!("GEMM, {units} unit(s)");
            let _ = writeln!(
                out,
                "{:<28} {:>9} {:>9.2} {:>9.2} {:>7.1}% {:>9.2} {:>9.3} {:>8.2} {:>10.0}",
                name,
                cycles,
                macs,
                roof,
                100.0 * macs / roof,
                macs / one,
                beats,
                burst,
                stats.rate()
            );
            rows.push(json!({"workload": name, "units": units, "cycles": cycles, "macs_per_cycle": macs, "roofline": roof,
                             "of_roofline": macs / roof, "scaling": macs / one, "doorbell_to_first_block": k.start,
                             "axi_beats_per_cycle": beats, "mean_burst": burst, "axi": {"ar": t.ar, "r": t.r, "aw": t.aw, "w": t.w},
                             "cosim_cycles_per_second": stats.rate()}));
            if units == 1 {
                let _ = writeln!(out, "{:<28} {:>9}", "doorbell to first block", k.start.unwrap_or(0));
            }
        }
        // Two queues of one GEMM each (the second half as large) under rr
        // and best_fit, on two units.
        let half = S / 2;
        for policy in [Policy::Rr, Policy::BestFit] {
            o.done(&format!("two queues, {}", policy.name()));
            let q = GpuParams { units: 2, queues: p.queues.max(2), policy, ..p.clone() };
            let compiled = compile_design(&build(&q)?)?;
            let r = gemm_run(&q, &[(S, S, S), (half, half, S)], LATENCY)?;
            let (got, stats, _, _) = checked(&compiled, &q, &r)?;
            let spans: Vec<u64> = got.kernels.iter().map(|k| k.end.unwrap_or(0)).collect();
            let name = format!("two queues, {}", policy.name());
            let _ = writeln!(out, "{:<28} {:>9} {:>9} (queue makespans, from the first doorbell; cosim {:.0} c/s)", name, spans[0], spans[1], stats.rate());
            rows.push(json!({"workload": name, "policy": policy.name(), "makespan": spans, "cycles": got.cycles, "cosim_cycles_per_second": stats.rate()}));
        }
        let gemm_chart = o.beside("gemm.svg");
        let panels: Vec<crate::gantt::Panel> = gemm_panels.iter().map(|(l, b)| crate::gantt::Panel { label: l, bars: gantt_bars(b) }).collect();
        let svg = crate::gantt::gantt(&format!("{S}^3 int8 GEMM"), "bars: blocks, colour: queue", "unit", 4, &panels);
        emit::write_atomic(&gemm_chart, svg.as_bytes()).map_err(|e| Error::io("write", &gemm_chart, e))?;
        let _ = writeln!(out, "chart: {}", gemm_chart.display());
        charts.push(json!({"chart": gemm_chart.display().to_string(), "of": "the GEMM on 1, 2 and 4 units"}));
        // The example, when the bench runs in a checkout (its files are
        // read from examples/gpu/), at the bench's parameters.
        o.done("the example's timeline");
        let example = Path::new(EXAMPLE);
        match example_run(p, example) {
            Ok(r) => {
                let compiled = compile_design(&build(p)?)?;
                let (got, _, _, bars) = checked(&compiled, p, &r)?;
                let chart = o.beside("timeline.svg");
                let panel = crate::gantt::Panel { label: EXAMPLE, bars: gantt_bars(&bars) };
                let sub = format!("{} queues, {} units; bars: blocks, colour: queue", r.queues.len(), p.units);
                let svg = crate::gantt::gantt("per-unit timeline", &sub, "unit", p.units, &[panel]);
                emit::write_atomic(&chart, svg.as_bytes()).map_err(|e| Error::io("write", &chart, e))?;
                let _ = writeln!(out, "{:<28} {:>9} (cycles; chart: {})", EXAMPLE, got.cycles.unwrap_or(0), chart.display());
                charts.push(json!({"chart": chart.display().to_string(), "of": EXAMPLE, "cycles": got.cycles, "blocks": bars.len()}));
            }
            Err(why) => {
                let _ = writeln!(out, "{EXAMPLE}: not charted ({why})");
            }
        }
        Ok(json!({"block": "gpu", "generator": generator(), "params": p, "size": S, "mem_latency": LATENCY, "rows": rows, "charts": charts}))
    }
}

/// The example the bench charts, from the working directory.
const EXAMPLE: &str = "examples/gpu/two-queues.json";

/// The example's run, if it is here and fits `p`.
fn example_run(p: &GpuParams, path: &Path) -> std::result::Result<Run, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    model::parse_input(&v, path.parent().unwrap_or(Path::new("")), p).map_err(|e| e.to_string())
}

/// The timeline's bars as the chart draws them: a row per unit, coloured
/// by queue.
fn gantt_bars(bars: &[tb::Bar]) -> Vec<crate::gantt::Bar> {
    let mut v: Vec<crate::gantt::Bar> = bars
        .iter()
        .map(|b| crate::gantt::Bar {
            row: b.unit,
            start: b.start,
            end: b.end,
            colour: b.queue as u64,
            tip: format!("queue {}, unit {}, share {}, cycles {}..{}", b.queue, b.unit, b.share, b.start, b.end),
        })
        .collect();
    // In dispatch order, as the chart stacks them.
    v.sort_by_key(|b| (b.start, b.row));
    v
}

/// The RTL's run, checked against the golden model (everything but the
/// cycles).
fn checked(compiled: &Compiled, p: &GpuParams, r: &Run) -> Result<(Outcome, gpurtl_sim::tb::RunStats, tb::Traffic, Vec<tb::Bar>)> {
    let want = model::run(p, r).map_err(|e| Error::Bad(format!("bench gpu: {e}")))?;
    let (got, stats, t, bars) = tb::run_timeline(compiled, p, r, None, tb::budget(p, r), None)?;
    if model::untimed(model::output_json(p, r, &want)) != model::untimed(model::output_json(p, r, &got)) {
        return Err(Error::Bad("bench gpu: the RTL and the golden model disagree on a bench run".into()));
    }
    Ok((got, stats, t, bars))
}

/// One GEMM `(M, N, K)` a queue (`examples/cu/gemm.s`, bias, ReLU), at
/// memory latency `latency`; every C dumped.
fn gemm_run(p: &GpuParams, gemms: &[(u32, u32, u32)], latency: u32) -> Result<Run> {
    let text = include_str!("../../../examples/cu/gemm.s");
    let words = gpurtl_sim::models::cu::isa::assemble(text).map_err(|e| Error::Bad(gpurtl_sim::models::cu::isa::errors_text(&e)))?;
    let mut memory = Memory::new();
    let prog = 0x8000u32;
    memory.write(prog as u64, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
    let mut queues = Vec::new();
    let mut dump = Vec::new();
    for (q, &(m, n, k)) in gemms.iter().enumerate() {
        let base = 0x100_0000 * (q as u32 + 1);
        let (a, b, c, bias) = (base, base + 0x40_0000, base + 0x80_0000, base + 0xC0_0000);
        memory.write(a as u64, &(0..m * k).map(|i| (i * 7 + 3) as u8).collect::<Vec<u8>>());
        memory.write(b as u64, &(0..k * n).map(|i| (i * 13 + 5) as u8).collect::<Vec<u8>>());
        memory.write(bias as u64, &(0..4 * n).map(|i| (i * 3) as u8).collect::<Vec<u8>>());
        dump.push(Region { addr: c, bytes: 4 * m * n });
        let lines = [
            format!("SET_SH_REG reg=COMPUTE_PGM_LO values={},0", prog >> 8),
            format!("SET_SH_REG reg=COMPUTE_PGM_RSRC1 values=0,{}", 11 << 15),
            "SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=8,1,1".to_string(),
            format!("SET_SH_REG reg=COMPUTE_USER_DATA_0 values={a},{b},{c},{bias},{m},{n},{k},1"),
            format!("DISPATCH_DIRECT x={} y={} z=1 initiator=1", n.div_ceil(16), m.div_ceil(16)),
            format!("RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr={} data=1,0", 0x7000 + 8 * q),
        ];
        let dwords = gpurtl_sim::models::cmdproc::pm4::assemble(&lines.join("\n")).map_err(|e| Error::Bad(format!("bench gpu: {e:?}")))?;
        let ring = 0x1000 * (q as u32 + 1);
        memory.write(ring as u64, &dwords.iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>());
        queues.push(QueueInput { cmd_base: ring, cmd_size: 4 * dwords.len() as u32, priority: 0 });
    }
    if (p.cu.regs / p.cu.slots) < 32 || (p.smem_bytes() / p.cu.slots) < 5632 {
        return Err(Error::Bad(format!(
            "bench gpu: gemm.s needs 32 registers and 5632 scratchpad bytes a block; a unit's slot has {} and {}",
            p.cu.regs / p.cu.slots,
            p.smem_bytes() / p.cu.slots
        )));
    }
    Ok(Run { queues, memory, dump, mem: MemTiming { latency, stall: 0.0, seed: 1 } })
}
