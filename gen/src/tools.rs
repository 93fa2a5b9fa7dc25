//! External tools: Verilator lint and yosys synthesis, with clear errors when
//! a tool is missing or fails.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug)]
pub enum ToolError {
    Missing { tool: &'static str },
    Failed { tool: &'static str, log: PathBuf, tail: String },
    Io(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Missing { tool } => write!(f, "{tool} not found on PATH: run `make deps` to install it"),
            ToolError::Failed { tool, log, tail } => write!(f, "{tool} failed (log: {}):\n{tail}", log.display()),
            ToolError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ToolError {}

fn run(tool: &'static str, cmd: &mut Command, log: &Path) -> Result<String, ToolError> {
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ToolError::Missing { tool }),
        Err(e) => return Err(ToolError::Io(format!("cannot run {tool}: {e}"))),
    };
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    std::fs::write(log, &text).map_err(|e| ToolError::Io(format!("cannot write {}: {e}", log.display())))?;
    if !out.status.success() {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        return Err(ToolError::Failed { tool, log: log.to_path_buf(), tail });
    }
    Ok(text)
}

/// `verilator --lint-only -Wall` on a filelist; Ok means zero warnings.
pub fn verilator_lint(dir: &Path, top: &str) -> Result<(), ToolError> {
    let mut c = Command::new("verilator");
    c.current_dir(dir).args(["--lint-only", "-Wall", "-f", &format!("{top}.f"), "--top-module", top]);
    run("verilator", &mut c, &dir.join(format!("{top}.lint.log"))).map(|_| ())
}

/// Cell counts from yosys `synth` + `check -assert` (fails on latches, loops,
/// undriven or multiply driven nets).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SynthStats {
    pub cells: u64,
    pub flip_flops: u64,
    pub by_type: Vec<(String, u64)>,
}

pub fn yosys_synth(dir: &Path, top: &str, files: &[String]) -> Result<SynthStats, ToolError> {
    let script = format!(
        "read_verilog {}; synth -top {top}; check -assert; select -assert-none t:$dlatch t:$_DLATCH_*; stat",
        files.join(" ")
    );
    let mut c = Command::new("yosys");
    c.current_dir(dir).args(["-p", &script]);
    let text = run("yosys", &mut c, &dir.join(format!("{top}.yosys.log")))?;
    // The last `stat` block is the whole design.
    let stat = text.rsplit("Printing statistics").next().unwrap_or("");
    let mut s = SynthStats::default();
    for line in stat.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Number of cells:") {
            s.cells = v.trim().parse().unwrap_or(0);
        } else if t.starts_with('$') {
            let mut it = t.split_whitespace();
            if let (Some(name), Some(n)) = (it.next(), it.next().and_then(|n| n.parse::<u64>().ok())) {
                if name.contains("DFF") {
                    s.flip_flops += n;
                }
                s.by_type.push((name.to_string(), n));
            }
        }
    }
    Ok(s)
}
