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
