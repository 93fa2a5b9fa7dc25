//! `gpurtl bench`: figures measured on the generated RTL, printed as a table
//! and written as JSON. Timing numbers come from here, never from tests.
//! Each block's measurements are its adapter's `bench` (`gen/src/blocks/`);
//! the pieces they share are here.

use crate::block::{BenchOpts, Block, HarnessPoint};
use crate::emit;
use crate::error::{Error, Result};
use crate::tools::{self, SynthStats};
use gpurtl_hw::Design;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Run the block's bench at `params`; the report goes to `o.report`.
pub fn run(b: &dyn Block, params: &Value, o: &BenchOpts, out: &mut dyn Write) -> Result<()> {
    let report = b.bench(params, o, out)?;
    write_report(&report, &o.report, out)
}

/// Write a bench's JSON report and say where.
pub fn write_report(report: &Value, path: &Path, out: &mut dyn Write) -> Result<()> {
    let text = serde_json::to_string_pretty(report)? + "\n";
    emit::write_atomic(path, text.as_bytes()).map_err(|e| Error::io("write", path, e))?;
    let _ = writeln!(out, "JSON report: {}", path.display());
    Ok(())
}

/// yosys generic synthesis of `design` (in a temporary directory): cells and flip-flops.
pub fn yosys_area(design: &Design) -> Result<SynthStats> {
    let dir = tempfile::tempdir().map_err(|e| Error::Failed(format!("cannot make a temporary directory: {e}")))?;
    let files = emit::files(design);
    emit::write_all(dir.path(), &files).map_err(|e| Error::io("write to", dir.path(), e))?;
    let top = design.elaborate().top_name().to_string();
    Ok(tools::yosys_synth(dir.path(), &top, &emit::sources(&files))?)
}

/// The report's `generator` field.
pub fn generator() -> String {
    format!("gpurtl {}", emit::VERSION)
}

/// Measurement rounds per point of `gpurtl bench harness`.
const ROUNDS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Repeat `f` until at least `min_secs` have passed: (units done, seconds).
fn timed(min_secs: f64, mut f: impl FnMut() -> Result<u64>) -> Result<(u64, f64)> {
    let t0 = std::time::Instant::now();
    let mut n = 0;
    loop {
        n += f()?;
        let secs = t0.elapsed().as_secs_f64();
        if secs >= min_secs {
            return Ok((n, secs));
        }
    }
}

/// `gpurtl bench harness`: the cosimulation harness against a native
/// Verilator loop (`verilator --cc --exe`, the harness's flags, every input
/// random every cycle, two evals per cycle) on the same generated designs,
/// side by side: the designs the `blocks` offer ([`Block::harness`]), each
/// on its own workload. The harness rate counts every tick of the testbench
/// run, stimulus and checks included.
pub fn harness(blocks: &[&dyn Block], out: &mut dyn Write) -> Result<Value> {
    let mut points: Vec<(&dyn Block, HarnessPoint)> = Vec::new();
    for b in blocks {
        points.extend(b.harness()?.into_iter().map(|pt| (*b, pt)));
    }
    points.sort_by_key(|(_, pt)| pt.order);
    let _ = writeln!(out, "harness against a native Verilator loop (same design, same flags; cycles per second)");
    let _ = writeln!(out, "{:<16} {:>12} {:>12} {:>7} {:>12} {:>12} {:>7}", "design", "harness", "native", "ratio", "whole run", "gpurtl run", "ratio");
    let mut rows = Vec::new();
    let progress = crate::progress::Progress::new("bench harness", points.len() as u64);
    for (b, pt) in &points {
        progress.running(&format!("{}: the Verilator builds, then {ROUNDS} rounds", pt.label));
        let compiled = crate::rtl_engine::compile_design(&pt.design)?;
        let native = crate::rtl_engine::native_loop(&pt.design)?;
        // Rounds of the testbench's cycle loop (stimulus prepared before it)
        // and of the native loop, one after the other, so that a machine
        // that speeds up or slows down during the bench moves both alike;
        // the medians over the rounds. "whole run" also counts the
        // sequencing, packing, instantiation and reset of each run.
        let (mut harness_r, mut native_r, mut ratio_r, mut whole_r) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut ticks = 0;
        for _ in 0..ROUNDS {
            let (mut loop_ticks, mut loop_secs) = (0, 0.0);
            let (t, secs) = timed(0.4, || {
                let st = (pt.run)(&compiled)?;
                loop_ticks += st.loop_ticks;
                loop_secs += st.loop_seconds;
                Ok(st.ticks)
            })?;
            ticks += t;
            let (mut cycles, mut nsecs) = (0, 0.0);
            while nsecs < 0.4 {
                let (c, s) = native_run(&native, 100_000)?;
                cycles += c;
                nsecs += s;
            }
            let (h, n) = (loop_ticks as f64 / loop_secs, cycles as f64 / nsecs);
            harness_r.push(h);
            native_r.push(n);
            ratio_r.push(h / n);
            whole_r.push(t as f64 / secs);
        }
        let (harness, native_rate, ratio, whole) = (median(harness_r), median(native_r), median(ratio_r), median(whole_r));
        // `gpurtl run BLOCK --engine rtl` whole (the input's text parsed,
        // the design loaded from the cache, run, the result's JSON text),
        // as the marginal rate between a small and a large input.
        let marginal = match &pt.whole {
            Some(w) => Some(whole_marginal(*b, w)?),
            None => None,
        };
        let (run_col, run_ratio_col) = match marginal {
            Some(m) => (format!("{m:.0}"), format!("{:.2}x", m / native_rate)),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(out, "{:<16} {:>12.0} {:>12.0} {:>6.2}x {:>12.0} {:>12} {:>7}", pt.label, harness, native_rate, ratio, whole, run_col, run_ratio_col);
        progress.done(&format!("{}: {ratio:.2}x the native loop", pt.label));
        rows.push(serde_json::json!({
            "design": pt.label, "harness_cycles_per_second": harness, "native_cycles_per_second": native_rate,
            "ratio": ratio, "whole_run_cycles_per_second": whole, "harness_ticks": ticks,
            "gpurtl_run_marginal_cycles_per_second": marginal, "gpurtl_run_ratio": marginal.map(|m| m / native_rate),
        }));
    }
    Ok(serde_json::json!({"bench": "harness", "generator": generator(), "rows": rows}))
}

/// The marginal rate of whole `gpurtl run ... --engine rtl` runs: the
/// large input's cycles less the small one's over its time less the small
/// one's (medians of [`ROUNDS`] rounds, each a small and a large run), so
/// that what every run pays once (loading the design) cancels out.
fn whole_marginal(b: &dyn Block, w: &crate::block::WholeRun) -> Result<f64> {
    let once = |text: &str| -> Result<(u64, f64)> {
        let t0 = std::time::Instant::now();
        let input: Value = serde_json::from_str(text)?;
        let result = b.run(&w.params, &input, Path::new("."), crate::block::Engine::Rtl, None)?;
        let json = serde_json::to_string_pretty(&result)?;
        let secs = t0.elapsed().as_secs_f64();
        std::hint::black_box(json.len());
        let cycles = result["cycles"].as_u64().ok_or_else(|| Error::Failed("whole run: the result has no `cycles`".into()))?;
        Ok((cycles, secs))
    };
    let mut rates = Vec::new();
    for _ in 0..ROUNDS {
        let (cs, ts) = once(&w.small)?;
        let (cl, tl) = once(&w.large)?;
        if cl > cs && tl > ts {
            rates.push((cl - cs) as f64 / (tl - ts));
        }
    }
    if rates.is_empty() {
        return Err(Error::Failed("whole run: the large input was not slower than the small one".into()));
    }
    Ok(median(rates))
}

/// Runs the native loop for `cycles`: (cycles, seconds) as it reports them.
/// Its own timer covers the loop only, not the process start.
fn native_run(exe: &Path, cycles: u64) -> Result<(u64, f64)> {
    let out = std::process::Command::new(exe)
        .arg(cycles.to_string())
        .output()
        .map_err(|e| Error::Failed(format!("cannot run {}: {e}", exe.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    match (it.next().and_then(|c| c.parse::<u64>().ok()), it.next().and_then(|s| s.parse::<f64>().ok())) {
        (Some(c), Some(s)) if out.status.success() => Ok((c, s)),
        _ => Err(Error::Failed(format!("the native loop {} printed `{}`", exe.display(), text.trim()))),
    }
}
