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

/// `f(0) .. f(n-1)` on up to the machine's cores at a time (no more threads
/// than items); the results in index order.
pub fn parallel_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let jobs = std::thread::available_parallelism().map_or(1, |c| c.get()).clamp(1, n.max(1));
    let next = std::sync::Mutex::new(0usize);
    let results: std::sync::Mutex<Vec<Option<T>>> = std::sync::Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = {
                    let mut k = next.lock().unwrap_or_else(|e| e.into_inner());
                    if *k >= n {
                        break;
                    }
                    *k += 1;
                    *k - 1
                };
                let r = f(i);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    // Every index was taken by exactly one thread, and a panic in `f`
    // propagates out of the scope, so every slot is filled.
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect()
}

/// One module of a hierarchical `stat`: its own cells (submodule instances
/// not counted in them) and how many times it occurs under the top.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModuleStat {
    pub module: String,
    pub instances: u64,
    /// Cell type -> count, for one instance, without submodule instances.
    pub cells: Vec<(String, u64)>,
    /// Submodule -> instances in one instance of this module.
    pub children: Vec<(String, u64)>,
}

impl ModuleStat {
    /// Cells of one instance whose type satisfies `f`.
    pub fn count(&self, f: impl Fn(&str) -> bool) -> u64 {
        self.cells.iter().filter(|(t, _)| f(t)).map(|(_, n)| n).sum()
    }
}

/// The per-module sections (`=== name ===`) of the last `stat` in a yosys
/// log, in the order printed, with instance counts under `top` (modules
/// that do not occur under it get 0).
pub fn module_stats(log: &str, top: &str) -> Vec<ModuleStat> {
    let stat = log.rsplit("Printing statistics").next().unwrap_or("");
    let mut mods: Vec<ModuleStat> = Vec::new();
    let mut in_cells = false;
    for line in stat.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("=== ").and_then(|x| x.strip_suffix(" ===")) {
            in_cells = false;
            if name == "design hierarchy" {
                break;
            }
            mods.push(ModuleStat { module: name.to_string(), ..Default::default() });
        } else if t.starts_with("Number of cells:") || t.ends_with(" cells") {
            // `Number of cells: N` (yosys 0.23) or `N cells` (0.70).
            in_cells = true;
        } else if in_cells {
            // `TYPE N` (0.23) or `N   TYPE` (0.70; submodules listed after
            // an `N submodules` line, as cells of a module's type).
            let w: Vec<&str> = t.split_whitespace().collect();
            let pair = match w[..] {
                [a, b] => match (a.parse::<u64>(), b.parse::<u64>()) {
                    (Ok(n), Err(_)) => Some((b, n)),
                    (Err(_), Ok(n)) => Some((a, n)),
                    _ => None,
                },
                _ => None,
            };
            match pair {
                Some(("submodules", _)) => {}
                Some((name, n)) => {
                    if let Some(m) = mods.last_mut() {
                        m.cells.push((name.to_string(), n));
                    }
                }
                None => in_cells = false,
            }
        }
    }
    // Instances of a module type are cells of that type; count down the tree.
    let names: Vec<String> = mods.iter().map(|m| m.module.clone()).collect();
    for m in mods.iter_mut() {
        let (kids, own): (Vec<_>, Vec<_>) = m.cells.drain(..).partition(|(t, _)| names.contains(t));
        m.cells = own;
        m.children = kids;
    }
    fn walk(mods: &mut [ModuleStat], name: &str, times: u64, depth: usize) {
        if depth > 64 {
            return;
        }
        let Some(i) = mods.iter().position(|m| m.module == name) else { return };
        mods[i].instances += times;
        for (kid, n) in mods[i].children.clone() {
            walk(mods, &kid, times * n, depth + 1);
        }
    }
    walk(&mut mods, top, 1, 0);
    mods
}

pub fn yosys_synth(dir: &Path, top: &str, files: &[String]) -> Result<SynthStats, ToolError> {
    // A generic target has no block RAM: `synth` would map every memory
    // array to flip-flops (minutes and gigabytes for a scratchpad). Memories
    // stay memory cells (`$mem_v2`, counted in the statistics); the rest of
    // `synth`'s fine script runs as usual.
    let has_ram = files.iter().any(|f| std::fs::read_to_string(dir.join(f)).is_ok_and(|t| t.contains("(* no_rw_check *)")));
    let synth = if has_ram {
        format!("synth -top {top} -run :fine; opt -fast -full; techmap; opt -fast; abc -fast; opt -fast; hierarchy -check")
    } else {
        format!("synth -top {top}")
    };
    let script = format!(
        "read_verilog {}; {synth}; check -assert; select -assert-none t:$dlatch t:$_DLATCH_*; stat",
        files.join(" ")
    );
    let mut c = Command::new(locate("yosys")?);
    c.current_dir(dir).args(["-p", &script]);
    let text = run_logged("yosys", &mut c, &dir.join(format!("{top}.yosys.log")))?;
    Ok(synth_stats(&text))
}

/// Cells, flip-flops and cell types of the whole design from a yosys 0.23
/// log: the last `stat` block, and in it, with submodules, the design
/// hierarchy's totals (after each module's own).
fn synth_stats(text: &str) -> SynthStats {
    let stat = text.rsplit("Printing statistics").next().unwrap_or("");
    let stat = stat.rsplit("=== design hierarchy ===").next().unwrap_or(stat);
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
    s
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
    Counterexample { log: PathBuf, failed: Vec<String> },
    /// No counterexample within `max_steps`, but the induction did not close
    /// (`failed`: the assertions the last induction step broke).
    Inconclusive { log: PathBuf, failed: Vec<String> },
    /// yosys did not get as far as the proof.
    Tool(String),
}

impl fmt::Display for ProofFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofFailure::Counterexample { log, failed } if failed.is_empty() => {
                write!(f, "an assertion fails in a reachable state (trace: {})", log.display())
            }
            ProofFailure::Counterexample { log, failed } => {
                write!(f, "{} fail(s) in a reachable state (trace: {})", failed.join(", "), log.display())
            }
            ProofFailure::Inconclusive { log, failed } => {
                write!(f, "the induction did not close (log: {})", log.display())?;
                if !failed.is_empty() {
                    write!(f, "; not inductive: {}", failed.join(", "))?;
                }
                Ok(())
            }
            ProofFailure::Tool(e) => write!(f, "{e}"),
        }
    }
}

/// Prove the `` `ifdef FORMAL `` properties of `top` with yosys: read with
/// `-formal`, flatten, memories as registers, then `sat -tempinduct` with the reset high in the
/// first cycle (every other register, and every input, free), assumptions
/// taken, induction up to `max_steps`. The induction length at which the
/// proof closed.
pub fn prove(dir: &Path, top: &str, files: &[String], max_steps: u32) -> Result<u32, ProofFailure> {
    let script = format!(
        "read_verilog -formal {}; prep -top {top} -flatten; memory_map; opt_clean; \
         sat -tempinduct -prove-asserts -set-assumes -seq 1 -set-at 1 rst_i 1 -maxsteps {max_steps} -show-public -verify",
        files.join(" ")
    );
    let yosys = locate("yosys").map_err(|e| ProofFailure::Tool(e.to_string()))?;
    // yosys also writes its log itself (`-l`): when the proof fails it exits
    // without flushing its standard output, which then ends inside the
    // counterexample's trace, before the last step's assertions.
    let own_log = format!("{top}.prove.yosys.log");
    let mut c = Command::new(yosys);
    c.current_dir(dir).args(["-l", &own_log, "-p", &script]);
    let log = dir.join(format!("{top}.prove.log"));
    let text = match run_logged("yosys", &mut c, &log) {
        Ok(t) => t,
        Err(ToolError::Failed { .. }) => {
            let text = std::fs::read_to_string(dir.join(&own_log)).or_else(|_| std::fs::read_to_string(&log)).unwrap_or_default();
            let log = dir.join(&own_log);
            return Err(if text.contains("model found for base case: FAIL!") {
                ProofFailure::Counterexample { failed: failed_properties(&text), log }
            } else if text.contains("Reached maximum number of time steps") || text.contains("Induction step failed") {
                ProofFailure::Inconclusive { failed: failed_properties(&text), log }
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
        return Err(ProofFailure::Inconclusive { failed: failed_properties(&text), log });
    }
    Ok(induction_length)
}

/// The assertions low in the last step of a counterexample's trace (the
/// printer gives each a `<label>_holds` wire): their labels, hierarchy first.
fn failed_properties(log: &str) -> Vec<String> {
    let Some(at) = log.rfind("Time Signal Name") else { return Vec::new() };
    let rows: Vec<(&str, &str, &str)> = log[at..]
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?, w.next()?))
        })
        .collect();
    let last = rows.iter().filter_map(|r| r.0.parse::<u32>().ok()).max();
    let mut failed: Vec<String> = rows
        .iter()
        .filter(|(t, name, v)| t.parse::<u32>().ok() == last && name.ends_with("_holds") && *v == "0")
        .map(|(_, name, _)| name.trim_start_matches('\\').trim_end_matches("_holds").to_string())
        .collect();
    failed.sort();
    failed.dedup();
    failed
}

#[cfg(test)]
mod tests {
    use super::{module_stats, synth_stats};

    /// A design with a submodule: the totals are the hierarchy's, each
    /// module's own flip-flops are not counted again.
    #[test]
    fn synth_stats_counts_the_hierarchy_once() {
        let text = "Printing statistics.\n=== sub ===\n   Number of cells: 5\n     $_AND_ 2\n     $_DFF_P_ 3\n=== top ===\n   Number of cells: 6\n     $_DFF_P_ 4\n     $_OR_ 1\n     sub 1\n=== design hierarchy ===\n   top 1\n     sub 1\n   Number of cells: 10\n     $_AND_ 2\n     $_DFF_P_ 7\n     $_OR_ 1\n";
        let s = synth_stats(text);
        assert_eq!((s.cells, s.flip_flops), (10, 7));
        assert_eq!(s.by_type.len(), 3);
        // A flat design has no hierarchy section.
        let flat = synth_stats("Printing statistics.\n=== top ===\n   Number of cells: 4\n     $_SDFF_PP0_ 3\n     $_XOR_ 1\n");
        assert_eq!((flat.cells, flat.flip_flops), (4, 3));
    }

    /// yosys 0.23 (`TYPE N` lines) and 0.70 (`N   TYPE` lines, submodules
    /// apart): the same three-level hierarchy, instances multiplied down.
    #[test]
    fn module_stats_reads_both_stat_formats() {
        let old = "Printing statistics.\n=== top ===\n   Number of wires: 9\n   Number of cells: 7\n     $_AND_ 5\n     pe 2\n=== mul ===\n   Number of cells: 1\n     MULT18X18D 1\n=== pe ===\n   Number of cells: 4\n     $_DFF_P_ 3\n     mul 1\n=== design hierarchy ===\n   top 1\n";
        let new = "5. Printing statistics.\n=== mul ===\n        +----------Local Count, excluding submodules.\n        | \n        7 wires\n        1 cells\n        1   MULT18X18D\n=== pe ===\n        +----------Local Count, excluding submodules.\n        | \n      156 cells\n       3   $_DFF_P_\n        1 submodules\n        1   mul\n=== top ===\n     4809 cells\n        5   $_AND_\n        2 submodules\n        2   pe\n=== design hierarchy ===\n     7321 top\n";
        for text in [old, new] {
            let mut m = module_stats(text, "top");
            m.sort_by(|a, b| a.module.cmp(&b.module));
            type Row<'a> = (&'a str, u64, Vec<(String, u64)>);
            let got: Vec<Row> = m.iter().map(|m| (m.module.as_str(), m.instances, m.cells.clone())).collect();
            assert_eq!(
                got,
                vec![
                    ("mul", 2, vec![("MULT18X18D".to_string(), 1)]),
                    ("pe", 2, vec![("$_DFF_P_".to_string(), 3)]),
                    ("top", 1, vec![("$_AND_".to_string(), 5)]),
                ]
            );
        }
    }
}
