//! Shared helpers for the integration tests in `tests/`.

use std::path::PathBuf;

/// Run the `gpurtl` command line in-process: (exit status, stdout, stderr).
pub fn gpurtl(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = gpurtl_gen::cli::main_with(&args, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

/// Repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where failing cosimulations leave their waveforms.
pub fn failure_dir() -> PathBuf {
    let d = repo().join("target").join("cosim-failures");
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Seeds to run: `GPURTL_SEED=N` runs only N (to reproduce a failure).
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("GPURTL_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(s) => vec![s],
        None => (0..count).collect(),
    }
}

use gpurtl_gen::emit;
use gpurtl_hw::Design;

/// Write the design's files (what `gpurtl gen` writes) into a temporary
/// directory: (dir, top, Verilog sources).
pub fn generated(design: &Design) -> (tempfile::TempDir, String, Vec<String>) {
    let files = emit::files(design);
    let dir = tempfile::tempdir().expect("temporary directory");
    emit::write_all(dir.path(), &files).expect("files are written");
    (dir, design.elaborate().top_name().to_string(), emit::sources(&files))
}

/// The default-parameter output of each block is kept in tests/snapshots/<block>
/// so that a review shows how a change alters the Verilog. GPURTL_BLESS=1
/// rewrites the snapshot instead of comparing.
pub fn check_snapshot(block: &str, design: &Design) {
    let dir = repo().join("tests/snapshots").join(block);
    for (name, text) in emit::files(design) {
        let path = dir.join(&name);
        if std::env::var_os("GPURTL_BLESS").is_some() {
            emit::write_atomic(&path, text.as_bytes()).expect("snapshot is written");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            want == text,
            "{} is stale; regenerate with: GPURTL_BLESS=1 cargo test --release --test {block} default_output",
            path.display()
        );
    }
}

/// Building and emitting twice gives byte-identical files.
pub fn check_stable(build: impl Fn() -> Design) {
    let d = build();
    assert_eq!(emit::files(&d), emit::files(&build()), "{} {}", d.origin().block, d.origin().params);
}
pub mod space;

/// `verilator --lint-only -Wall` finds nothing, and yosys synthesizes the
/// design (`check -assert`) without latches; `what` names it in a failure.
pub fn lint_and_synth_clean(what: &str, design: &Design) {
    lint_and_yosys_clean(what, design, true);
}

/// Whether the heavier tier runs: `GPURTL_FULL` set (`make test-full`).
pub fn full() -> bool {
    std::env::var_os("GPURTL_FULL").is_some()
}

/// Whether planted bug `k` of a test's list is planted in this run: every
/// one under `GPURTL_FULL=1`, else those listed in `quick` (each planted bug
/// is a Verilator build).
pub fn planted_in_tier(k: usize, quick: &[usize]) -> bool {
    full() || quick.contains(&k)
}

/// A test of the heavier tier only: false (after saying so on stderr)
/// unless `GPURTL_FULL` is set. For the cosimulation points whose
/// Verilator build costs the most (docs/testing.md).
pub fn full_tier(what: &str) -> bool {
    if full() {
        return true;
    }
    eprintln!("{what}: with GPURTL_FULL=1 only (make test-full)");
    false
}

/// `verilator --lint-only -Wall` finds nothing, and yosys finds no latch,
/// combinational loop, undriven or multiply driven net: after a full
/// synthesis when `synth` is set or under `GPURTL_FULL=1`, else after
/// elaboration (`tools::yosys_check`, the same checks on the design before
/// technology mapping: a second where a synthesis can take a minute).
pub fn lint_and_yosys_clean(what: &str, design: &Design, synth: bool) {
    let (dir, top, sources) = generated(design);
    if let Err(e) = gpurtl_gen::tools::verilator_lint(dir.path(), &top) {
        panic!("{what}: {e}");
    }
    if synth || full() {
        let s = gpurtl_gen::tools::yosys_synth(dir.path(), &top, &sources).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!s.by_type.iter().any(|(t, _)| t.contains("LATCH")), "{what}: latches: {:?}", s.by_type);
    } else if let Err(e) = gpurtl_gen::tools::yosys_check(dir.path(), &top, &sources) {
        panic!("{what}: {e}");
    }
}

/// `spec` with a bug planted: on the first line that holds `line`, the
/// first `from` becomes `to`. Panics, naming the bug `what`, when there is
/// no such line or `from` is not on it (the Verilog moved on: update the bug).
pub fn plant(spec: &gpurtl_sim::cosim::DesignSpec, what: &str, line: &str, from: &str, to: &str) -> gpurtl_sim::cosim::DesignSpec {
    let mut s = spec.clone();
    let at = s.verilog.find(line).unwrap_or_else(|| panic!("{what}: no line `{line}` in the generated Verilog"));
    let start = s.verilog[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = at + s.verilog[at..].find('\n').unwrap_or(s.verilog.len() - at);
    let planted = s.verilog[start..end].replacen(from, to, 1);
    assert_ne!(planted, s.verilog[start..end], "{what}: `{from}` is not on the line `{line}`");
    s.verilog.replace_range(start..end, &planted);
    s
}
