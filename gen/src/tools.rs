//! External tools (Verilator, yosys, nextpnr): finding them, running them
//! with their output in a log file, and clear errors when one is missing or
//! fails. Every flow runs its tools through [`run_logged`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug)]
pub enum ToolError {
    /// Not on PATH nor in the project venv; `installer` is the make target that installs it.
    Missing { tool: String, installer: &'static str },
    Failed { tool: String, log: PathBuf, tail: String },
    Io(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Missing { tool, installer } => {
                write!(f, "{tool} not found on PATH or in .venv: run `{installer}` to install it")
            }
            ToolError::Failed { tool, log, tail } => write!(f, "{tool} failed (log: {}):\n{tail}", log.display()),
            ToolError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ToolError {}

/// The make target that installs `tool`.
fn installer(tool: &str) -> &'static str {
    match tool {
        "yosys" | "verilator" | "iverilog" => "make deps",
        _ => "make fpga-deps",
    }
}

/// `tool` on `path`, or in the project venv `venv` (`bin/<tool>`).
pub fn find_tool(tool: &str, path: Option<&std::ffi::OsStr>, venv: &Path) -> Option<PathBuf> {
    let on_path = path.and_then(|p| std::env::split_paths(p).map(|d| d.join(tool)).find(|c| c.is_file()));
    on_path.or_else(|| Some(venv.join("bin").join(tool)).filter(|c| c.is_file()))
}

/// The project venv: `$GPURTL_VENV`, else `<repo>/.venv`.
fn venv_dir() -> PathBuf {
    std::env::var_os("GPURTL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(".venv"))
}

/// Where `tool` is, on PATH or in the project venv.
pub fn locate(tool: &str) -> Result<PathBuf, ToolError> {
    find_tool(tool, std::env::var_os("PATH").as_deref(), &venv_dir())
        .ok_or_else(|| ToolError::Missing { tool: tool.to_string(), installer: installer(tool) })
}

/// Run `cmd` (the program `tool`, already located), its stdout and stderr
/// into `log`; the output text, or the log's last lines when it fails.
pub fn run_logged(tool: &str, cmd: &mut Command, log: &Path) -> Result<String, ToolError> {
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::Missing { tool: tool.to_string(), installer: installer(tool) })
        }
        Err(e) => return Err(ToolError::Io(format!("cannot run {tool}: {e}"))),
    };
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    std::fs::write(log, &text).map_err(|e| ToolError::Io(format!("cannot write {}: {e}", log.display())))?;
    if !out.status.success() {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        return Err(ToolError::Failed { tool: tool.to_string(), log: log.to_path_buf(), tail });
    }
    Ok(text)
}

/// The first line a tool prints for `flag` (its version), or empty.
pub fn version(tool: &Path, flag: &str) -> String {
    Command::new(tool)
        .arg(flag)
        .output()
        .ok()
        // Some tools print their version on stderr.
        .map(|o| {
            let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

/// `verilator --lint-only -Wall` on a filelist; Ok means zero warnings.
pub fn verilator_lint(dir: &Path, top: &str) -> Result<(), ToolError> {
    let mut c = Command::new(locate("verilator")?);
    c.current_dir(dir).args(["--lint-only", "-Wall", "-f", &format!("{top}.f"), "--top-module", top]);
    run_logged("verilator", &mut c, &dir.join(format!("{top}.lint.log"))).map(|_| ())
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
    let mut c = Command::new(locate("yosys")?);
    c.current_dir(dir).args(["-p", &script]);
    let text = run_logged("yosys", &mut c, &dir.join(format!("{top}.yosys.log")))?;
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

/// Icarus Verilog elaborates the sources as Verilog-2005 (a second
/// front end, stricter about some constructs than Verilator).
pub fn iverilog(dir: &Path, top: &str, files: &[String]) -> Result<(), ToolError> {
    let mut c = Command::new(locate("iverilog")?);
    c.current_dir(dir).args(["-g2005", "-Wall", "-o", "/dev/null", "-s", top]).args(files);
    let text = run_logged("iverilog", &mut c, &dir.join(format!("{top}.iverilog.log")))?;
    // Icarus warns without failing; a generated design has nothing to warn about.
    match text.lines().find(|l| l.contains("warning")) {
        Some(l) => Err(ToolError::Failed { tool: "iverilog".into(), log: dir.join(format!("{top}.iverilog.log")), tail: l.to_string() }),
        None => Ok(()),
    }
}

/// yosys reads the sources, elaborates the hierarchy and runs `check
/// -assert` (undriven or multiply driven nets, combinational loops) and the
/// latch check, without synthesizing: fast enough for many parameter points.
pub fn yosys_check(dir: &Path, top: &str, files: &[String]) -> Result<(), ToolError> {
    let script = format!(
        "read_verilog {}; hierarchy -check -top {top}; proc; check -assert; select -assert-none t:$dlatch",
        files.join(" ")
    );
    let mut c = Command::new(locate("yosys")?);
    c.current_dir(dir).args(["-q", "-p", &script]);
    run_logged("yosys", &mut c, &dir.join(format!("{top}.check.log"))).map(|_| ())
}

/// How a proof failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProofFailure {
    /// An assertion fails in a reachable state: the log holds the trace.
    Counterexample { log: PathBuf },
    /// No counterexample within `max_steps`, but the induction did not close.
    Inconclusive { log: PathBuf },
    /// yosys did not get as far as the proof.
    Tool(String),
}

impl fmt::Display for ProofFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofFailure::Counterexample { log } => write!(f, "an assertion fails in a reachable state (trace: {})", log.display()),
            ProofFailure::Inconclusive { log } => write!(f, "the induction did not close (log: {})", log.display()),
            ProofFailure::Tool(e) => write!(f, "{e}"),
        }
    }
}

/// Prove the `` `ifdef FORMAL `` properties of `top` with yosys: read with
/// `-formal`, flatten, then `sat -tempinduct` with the reset high in the
/// first cycle (every other register, and every input, free), assumptions
/// taken, induction up to `max_steps`. The induction length at which the
/// proof closed.
pub fn prove(dir: &Path, top: &str, files: &[String], max_steps: u32) -> Result<u32, ProofFailure> {
    let script = format!(
        "read_verilog -formal {}; prep -top {top} -flatten; \
         sat -tempinduct -prove-asserts -set-assumes -seq 1 -set-at 1 rst_i 1 -maxsteps {max_steps} -verify",
        files.join(" ")
    );
    let yosys = locate("yosys").map_err(|e| ProofFailure::Tool(e.to_string()))?;
    let mut c = Command::new(yosys);
    c.current_dir(dir).args(["-p", &script]);
    let log = dir.join(format!("{top}.prove.log"));
    let text = match run_logged("yosys", &mut c, &log) {
        Ok(t) => t,
        Err(ToolError::Failed { .. }) => {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(if text.contains("model found for base case: FAIL!") {
                ProofFailure::Counterexample { log }
            } else if text.contains("Reached maximum number of time steps") {
                ProofFailure::Inconclusive { log }
            } else {
                ProofFailure::Tool(format!("yosys failed before the proof (log: {})", log.display()))
            });
        }
        Err(e) => return Err(ProofFailure::Tool(e.to_string())),
    };
    let induction_length = text
        .lines()
        .filter_map(|l| l.strip_prefix("Base case for induction length ")?.split(' ').next()?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    if !text.contains("Induction step proven: SUCCESS!") {
        return Err(ProofFailure::Inconclusive { log });
    }
    Ok(induction_length)
}
