//! `gpurtl bench`: figures measured on the generated RTL, printed as a table
//! and written as JSON. Timing numbers come from here, never from tests.
//! Each block's measurements are its adapter's `bench` (`gen/src/blocks/`);
//! the pieces they share are here.

use crate::block::Block;
use crate::emit;
use crate::error::{Error, Result};
use crate::tools::{self, SynthStats};
use gpurtl_hw::Design;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Run the block's bench at `params`; the report goes to `json_out`
/// (default `out/bench/<block>.json`).
pub fn run(b: &dyn Block, params: &Value, json_out: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let report = b.bench(params, out)?;
    let path = json_out.map(Path::to_path_buf).unwrap_or_else(|| format!("out/bench/{}.json", b.name()).into());
    let text = serde_json::to_string_pretty(&report)? + "\n";
    emit::write_atomic(&path, text.as_bytes()).map_err(|e| Error::io("write", &path, e))?;
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
