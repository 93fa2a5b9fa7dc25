//! The parameter-space property test: every block must generate, lint and
//! elaborate at every point its parameter table allows, and its RTL must
//! match its golden model there. Random valid points are drawn from each
//! block's own table (tests/support/space.rs); each is generated, linted
//! with `verilator --lint-only -Wall`, elaborated by Icarus (`iverilog
//! -g2005`) and checked by yosys (`check -assert`, no latches), and some are
//! cosimulated against the golden model on a short random workload.
//!
//! Every run draws new points from a seed it prints; `GPURTL_PARAM_SEED=S`
//! reruns exactly those points. A CI run tries `GPURTL_PARAM_POINTS` points
//! per block (default 3, 6 with `GPURTL_FULL=1`) of at most `GPURTL_PARAM_MAX_LINES` lines of
//! Verilog (default 12000: both ends of every range are reached, not all at
//! once) and cosimulates `GPURTL_PARAM_COSIM` of them (default 1). A longer
//! run, e.g. `GPURTL_PARAM_POINTS=60 GPURTL_PARAM_COSIM=10
//! GPURTL_PARAM_MAX_LINES=60000 cargo test --release --test param_space`.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::{emit, tools};
use gpurtl_tests::space::{points, run_seed, setting, Point};

fn reproduce(seed: u64) -> String {
    format!("reproduce: GPURTL_PARAM_SEED={seed} cargo test --release --test param_space")
}

/// Generation, Verilator lint, Icarus and yosys at each point; every
/// failure is collected, then reported together.
#[test]
fn every_point_generates_lints_and_elaborates() {
    let seed = run_seed();
    // Two points a block in `make test` (new ones every run: CI draws
    // afresh each time), six with GPURTL_FULL.
    let default_points = if std::env::var_os("GPURTL_FULL").is_some() { 6 } else { 2 };
    let (n, max_lines) = (setting("GPURTL_PARAM_POINTS", default_points), setting("GPURTL_PARAM_MAX_LINES", 12_000));
    eprintln!("parameter space: seed {seed}, {n} points per block, at most {max_lines} lines each");
    let mut failures = Vec::new();
    let mut tried = 0;
    for b in gpurtl_gen::blocks::all() {
        for (k, pt) in points(b, seed, n, max_lines).into_iter().enumerate() {
            tried += 1;
            eprintln!("  {} point {k}: {}", b.name(), pt.args());
            if let Err(e) = check(b, &pt) {
                failures.push(format!("{} point {k} ({}): {e}", b.name(), pt.args()));
            }
        }
    }
    eprintln!("parameter space: {tried} points tried, {} failed", failures.len());
    assert!(failures.is_empty(), "{}\n{}", failures.join("\n"), reproduce(seed));
}

fn check(b: &dyn gpurtl_gen::block::Block, pt: &Point) -> Result<(), String> {
    let design = b.design(&pt.params).map_err(|e| format!("does not generate: {e}"))?;
    let files = emit::files(&design);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    emit::write_all(dir.path(), &files).map_err(|e| e.to_string())?;
    let top = design.elaborate().top_name().to_string();
    let sources = emit::sources(&files);
    tools::verilator_lint(dir.path(), &top).map_err(|e| e.to_string())?;
    tools::iverilog(dir.path(), &top, &sources).map_err(|e| e.to_string())?;
    tools::yosys_check(dir.path(), &top, &sources).map_err(|e| e.to_string())?;
    Ok(())
}

/// The RTL against the golden model at some of the points (the first ones
/// of a second draw, so they differ from the lint points).
#[test]
fn points_cosimulate_against_the_model() {
    let seed = run_seed().wrapping_add(1);
    // Each point is a new Verilator build (a minute or more for the largest
    // designs), so `make test` cosimulates designs of at most 4,000 lines;
    // GPURTL_FULL the lint test's 12,000.
    let default_lines = if std::env::var_os("GPURTL_FULL").is_some() { 12_000 } else { 4_000 };
    let (n, max_lines) = (setting("GPURTL_PARAM_COSIM", 1), setting("GPURTL_PARAM_COSIM_MAX_LINES", default_lines));
    eprintln!("parameter space cosim: seed {seed}, {n} points per block, at most {max_lines} lines each");
    let mut failures = Vec::new();
    for b in gpurtl_gen::blocks::all() {
        for (k, pt) in points(b, seed, n, max_lines).into_iter().enumerate() {
            eprintln!("  {} point {k}: {}", b.name(), pt.args());
            let outcome = b
                .design(&pt.params)
                .map_err(|e| e.to_string())
                .and_then(|d| compile_design(&d).map_err(|e| e.to_string()))
                .and_then(|c| b.self_check(&pt.params, &c, seed).map_err(|e| e.to_string()));
            match outcome {
                Ok(None) => {}
                Ok(Some((model, rtl))) => {
                    failures.push(format!("{} point {k} ({}):\n  model: {model}\n  rtl:   {rtl}", b.name(), pt.args()))
                }
                Err(e) => failures.push(format!("{} point {k} ({}): {e}", b.name(), pt.args())),
            }
        }
    }
    assert!(failures.is_empty(), "{}\n{}", failures.join("\n"), reproduce(seed.wrapping_sub(1)));
}
