//! The `gpurtl` command line. Exit status: 0 success, 2 bad parameters,
//! arguments or input file (the message names the field), 1 a failing tool.

use crate::blocks::{self, Block};
use crate::{bench, emit, runners, tools};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const USAGE: &str = "\
usage: gpurtl <command> [options]

commands:
  list                         blocks, their parameters, defaults and allowed values
  gen BLOCK|--all -o DIR       write Verilog, a filelist DIR/<top>.f and DIR/<top>.json
  run BLOCK --input IN.json --output OUT.json [--engine model|rtl] [--vcd FILE]
                               run a workload through the golden model or the RTL
  lint BLOCK                   verilator --lint-only -Wall and yosys synth + check -assert
  bench BLOCK [--json FILE]    measure the block's figures (table + JSON)
  synth BLOCK --target generic|ice40|ecp5 [--clock-mhz F] [--seed N] [-o DIR]
                               yosys (+ nextpnr) report: cells, LUTs, FFs, DSPs, Fmax
  synth-table DIR              Markdown table of the synth reports under DIR
  sweep BLOCK --param K=V1,V2,... [--zip] --target T [--clock-mhz F] [--seed N] [-o DIR]
                               synth per point in parallel; CSV, JSON and an SVG plot
  prune --input IN.json --output OUT.json --block N --threshold T
                               block pruning (seed 004 §369) of the `a` and `b`
                               matrices of a systolic input: every N x N block
                               whose |sum| < T becomes zero

parameters (gen, run, lint, bench):
  --param KEY=VALUE            set one parameter (repeatable)
  --params FILE.json           a JSON object of parameters
  --preset NAME                start from a named preset (see `gpurtl list`)
";

/// Why a command failed, and so its exit status.
#[derive(Debug)]
pub enum CliError {
    /// Bad arguments, parameters or input: exit 2.
    Bad(String),
    /// A tool or the file system failed: exit 1.
    Failed(String),
}

impl CliError {
    pub fn code(&self) -> i32 {
        match self {
            CliError::Bad(_) => 2,
            CliError::Failed(_) => 1,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (CliError::Bad(m) | CliError::Failed(m)) = self;
        write!(f, "{m}")
    }
}

impl From<tools::ToolError> for CliError {
    fn from(e: tools::ToolError) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl From<gpurtl_sim::cosim::CosimError> for CliError {
    fn from(e: gpurtl_sim::cosim::CosimError) -> Self {
        CliError::Failed(e.to_string())
    }
}

#[derive(Clone, Default)]
pub struct Opts {
    pub block: Option<String>,
    pub all: bool,
    pub pairs: Vec<(String, String)>,
    pub params_file: Option<PathBuf>,
    pub preset: Option<String>,
    pub out_dir: Option<PathBuf>,
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub engine: Option<String>,
    pub vcd: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub prune_block: Option<String>,
    pub target: Option<String>,
    pub clock_mhz: Option<String>,
    pub seed: Option<String>,
    pub zip: bool,
    pub threshold: Option<String>,
    /// The options given, by their long names, in order.
    pub given: Vec<&'static str>,
}

fn parse(args: &[String]) -> Result<Opts, CliError> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next().cloned().ok_or_else(|| CliError::Bad(format!("option `{name}` needs a value")))
        };
        if let Some(long) = long_name(a) {
            o.given.push(long);
        }
        match a.as_str() {
            "--param" | "-p" => {
                let kv = val(a)?;
                match kv.split_once('=') {
                    Some((k, v)) if !k.is_empty() => o.pairs.push((k.trim().to_string(), v.to_string())),
                    _ => return Err(CliError::Bad(format!("option `--param` = `{kv}`: must be KEY=VALUE"))),
                }
            }
            "--params" => o.params_file = Some(val(a)?.into()),
            "--preset" => o.preset = Some(val(a)?),
            "-o" | "--out" => o.out_dir = Some(val(a)?.into()),
            "--input" => o.input = Some(val(a)?.into()),
            "--output" => o.output = Some(val(a)?.into()),
            "--engine" => o.engine = Some(val(a)?),
            "--vcd" => o.vcd = Some(val(a)?.into()),
            "--json" => o.json = Some(val(a)?.into()),
            "--block" => o.prune_block = Some(val(a)?),
            "--target" => o.target = Some(val(a)?),
            "--clock-mhz" => o.clock_mhz = Some(val(a)?),
            "--seed" => o.seed = Some(val(a)?),
            "--threshold" => o.threshold = Some(val(a)?),
            "--all" => o.all = true,
            "--zip" => o.zip = true,
            s if s.starts_with('-') => return Err(CliError::Bad(format!("unknown option `{s}`; see `gpurtl help`"))),
            s => {
                if o.block.is_some() {
                    return Err(CliError::Bad(format!("unexpected argument `{s}`; see `gpurtl help`")));
                }
                o.block = Some(s.to_string());
            }
        }
    }
    Ok(o)
}

/// The long name of a known option (`-p` is `--param`, `-o` is `--out`).
fn long_name(a: &str) -> Option<&'static str> {
    const LONG: &[&str] = &[
        "--param", "--params", "--preset", "--out", "--input", "--output", "--engine", "--vcd", "--json", "--block",
        "--target", "--clock-mhz", "--seed", "--threshold", "--all", "--zip",
    ];
    match a {
        "-p" => Some("--param"),
        "-o" => Some("--out"),
        _ => LONG.iter().find(|l| **l == a).copied(),
    }
}

/// The options each command reads; any other given option is an error, so
/// that a mistyped command line is not run with a setting silently dropped.
fn check_options(cmd: &str, o: &Opts) -> Result<(), CliError> {
    const PARAMS: &[&str] = &["--param", "--params", "--preset"];
    let own: &[&str] = match cmd {
        "gen" => &["--out", "--all"],
        "run" => &["--input", "--output", "--engine", "--vcd"],
        "lint" => &[],
        "bench" => &["--json"],
        "synth" => &["--target", "--clock-mhz", "--seed", "--out"],
        "sweep" => &["--target", "--clock-mhz", "--seed", "--zip", "--out"],
        "prune" => &["--input", "--output", "--block", "--threshold"],
        _ => return Ok(()),
    };
    let takes_params = !matches!(cmd, "prune");
    let reads = |g: &&str| own.contains(g) || (takes_params && PARAMS.contains(g));
    match o.given.iter().find(|g| !reads(g)) {
        Some(g) => Err(CliError::Bad(format!("option `{g}` is not used by `{cmd}`; see `gpurtl help`"))),
        None => Ok(()),
    }
}

pub fn read_json(path: &Path, what: &str) -> Result<Value, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Bad(format!("{what} `{}`: cannot be read: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::Bad(format!("{what} `{}`: not valid JSON: {e}", path.display())))
}

fn block_of(o: &Opts) -> Result<&'static dyn Block, CliError> {
    let known = blocks::all().iter().map(|b| b.name()).collect::<Vec<_>>().join(", ");
    let name = o.block.as_deref().ok_or_else(|| CliError::Bad(format!("a block name is needed; blocks: {known}")))?;
    blocks::find(name).ok_or_else(|| CliError::Bad(format!("unknown block `{name}`; blocks: {known}")))
}

/// Preset (or defaults), then the params file, then `--param` pairs; validated.
pub fn params_of(b: &dyn Block, o: &Opts) -> Result<Value, CliError> {
    let mut base = match &o.preset {
        None => None,
        Some(n) => match b.presets().into_iter().find(|(p, _)| p == n) {
            Some((_, v)) => Some(v),
            None => {
                let names: Vec<_> = b.presets().iter().map(|(p, _)| *p).collect();
                return Err(CliError::Bad(format!(
                    "preset `{n}` of block `{}`: must be one of {}",
                    b.name(),
                    names.join(", ")
                )));
            }
        },
    };
    if let Some(f) = &o.params_file {
        let v = read_json(f, "params file")?;
        base = Some(match (base, v) {
            (Some(Value::Object(mut a)), Value::Object(f)) => {
                a.extend(f);
                Value::Object(a)
            }
            (_, v) => v,
        });
    }
    b.resolve(base.as_ref(), &o.pairs).map_err(|e| CliError::Bad(e.to_string()))
}

/// Generate and write a block's files; returns the top's name and the files.
fn gen_one(b: &dyn Block, params: &Value, dir: &Path) -> Result<(String, Vec<(String, String)>), CliError> {
    let design = b.design(params).map_err(CliError::Failed)?;
    let files = emit::files(&design, &b.provenance(params));
    emit::write_all(dir, &files).map_err(|e| CliError::Failed(format!("cannot write to `{}`: {e}", dir.display())))?;
    Ok((design.top, files))
}

fn cmd_list(out: &mut dyn Write) -> Result<(), CliError> {
    for b in blocks::all() {
        let _ = writeln!(out, "{}: {}", b.name(), b.summary());
        let d = b.defaults();
        for p in b.table() {
            let _ = writeln!(out, "  {:<10} default {:<6} {}; {}", p.name, d[p.name].to_string(), p.allowed(), p.doc);
        }
        let presets: Vec<String> = b.presets().iter().map(|(n, v)| format!("{n} {v}")).collect();
        let _ = writeln!(out, "  presets: {}", presets.join(", "));
    }
    Ok(())
}

fn cmd_gen(o: &Opts, out: &mut dyn Write) -> Result<(), CliError> {
    let dir = o.out_dir.as_ref().ok_or_else(|| CliError::Bad("`gen` needs `-o DIR`".into()))?;
    if o.all {
        if o.block.is_some() || !o.pairs.is_empty() || o.params_file.is_some() {
            return Err(CliError::Bad("`gen --all` writes every block at its defaults and takes no block or parameters".into()));
        }
        for b in blocks::all() {
            let sub = dir.join(b.name());
            let (_, files) = gen_one(b, &b.defaults(), &sub)?;
            let _ = writeln!(out, "{}: {} files in {}", b.name(), files.len(), sub.display());
        }
        return Ok(());
    }
    let b = block_of(o)?;
    let params = params_of(b, o)?;
    let (_, files) = gen_one(b, &params, dir)?;
    for (f, _) in files {
        let _ = writeln!(out, "{}", dir.join(f).display());
    }
    Ok(())
}

fn cmd_lint(o: &Opts, out: &mut dyn Write) -> Result<(), CliError> {
    let b = block_of(o)?;
    let params = params_of(b, o)?;
    let tmp = tempfile::tempdir().map_err(|e| CliError::Failed(format!("cannot make a temporary directory: {e}")))?;
    let dir = o.out_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let (top, files) = gen_one(b, &params, &dir)?;
    tools::verilator_lint(&dir, &top)?;
    let _ = writeln!(out, "verilator --lint-only -Wall: clean");
    let s = tools::yosys_synth(&dir, &top, &emit::sources(&files))?;
    let _ = writeln!(out, "yosys synth + check -assert: clean, no latches ({} cells, {} flip-flops)", s.cells, s.flip_flops);
    Ok(())
}

fn cmd_run(o: &Opts, out: &mut dyn Write) -> Result<(), CliError> {
    let b = block_of(o)?;
    let params = params_of(b, o)?;
    let input = o.input.as_ref().ok_or_else(|| CliError::Bad("`run` needs `--input IN.json`".into()))?;
    let output = o.output.as_ref().ok_or_else(|| CliError::Bad("`run` needs `--output OUT.json`".into()))?;
    let engine = match o.engine.as_deref() {
        None | Some("model") => runners::Engine::Model,
        Some("rtl") => runners::Engine::Rtl,
        Some(e) => return Err(CliError::Bad(format!("option `--engine` = `{e}`: must be model or rtl"))),
    };
    if o.vcd.is_some() && engine != runners::Engine::Rtl {
        return Err(CliError::Bad("option `--vcd` needs `--engine rtl`".into()));
    }
    let input = read_json(input, "input file")?;
    let result = runners::run(b, &params, &input, engine, o.vcd.as_deref())?;
    let text = serde_json::to_string_pretty(&result).map_err(|e| CliError::Failed(e.to_string()))? + "\n";
    emit::write_atomic(output, text.as_bytes())
        .map_err(|e| CliError::Failed(format!("cannot write `{}`: {e}", output.display())))?;
    let _ = writeln!(out, "{}", output.display());
    Ok(())
}

fn cmd_prune(o: &Opts, out: &mut dyn Write) -> Result<(), CliError> {
    let input = o.input.as_ref().ok_or_else(|| CliError::Bad("`prune` needs `--input IN.json`".into()))?;
    let output = o.output.as_ref().ok_or_else(|| CliError::Bad("`prune` needs `--output OUT.json`".into()))?;
    let raw = o.prune_block.as_deref().unwrap_or("");
    let block = match raw.parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => n,
        _ => return Err(CliError::Bad(format!("option `--block` = `{raw}`: must be an integer from 1 to 64"))),
    };
    let raw = o.threshold.as_deref().unwrap_or("");
    let threshold = match raw.parse::<i64>() {
        Ok(t) if t >= 0 => t,
        _ => return Err(CliError::Bad(format!("option `--threshold` = `{raw}`: must be a non-negative integer"))),
    };
    let mut v = read_json(input, "input file")?;
    let mut zeroed = 0usize;
    for key in ["a", "b"] {
        let m: Vec<Vec<i64>> = match v.get(key).map(|x| serde_json::from_value(x.clone())) {
            Some(Ok(m)) => m,
            _ => {
                return Err(CliError::Bad(format!(
                    "input `{key}` = {}: must be a matrix (a list of lists of integers)",
                    v.get(key).map_or("(missing)".to_string(), gpurtl_sim::models::shown)
                )))
            }
        };
        let p = gpurtl_sim::models::systolic::prune(&m, block, threshold);
        zeroed += m.iter().flatten().zip(p.iter().flatten()).filter(|(x, y)| **x != 0 && **y == 0).count();
        v[key] = serde_json::json!(p);
    }
    let text = serde_json::to_string(&v).map_err(|e| CliError::Failed(e.to_string()))? + "\n";
    emit::write_atomic(output, text.as_bytes())
        .map_err(|e| CliError::Failed(format!("cannot write `{}`: {e}", output.display())))?;
    let _ = writeln!(out, "{}: {zeroed} non-zero values pruned", output.display());
    Ok(())
}

/// `--target` (default generic) and `--clock-mhz` (default 150 on ECP5, else 100).
fn target_and_clock(o: &Opts) -> Result<(crate::synth::Target, f64), CliError> {
    let target = crate::synth::Target::parse(o.target.as_deref().unwrap_or("generic"))?;
    let default_mhz = if target == crate::synth::Target::Ecp5 { 150.0 } else { 100.0 };
    let clock_mhz = match o.clock_mhz.as_deref() {
        None => default_mhz,
        Some(raw) => match raw.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 2000.0 => f,
            _ => return Err(CliError::Bad(format!("option `--clock-mhz` = `{raw}`: must be a number above 0 and at most 2000"))),
        },
    };
    Ok((target, clock_mhz))
}

/// `--seed` of the place-and-route run (default 1): placement, and so Fmax,
/// varies with it, so a designer compares seeds.
fn pnr_seed(o: &Opts) -> Result<u32, CliError> {
    match o.seed.as_deref() {
        None => Ok(1),
        Some(raw) => raw
            .parse::<u32>()
            .ok()
            .filter(|s| *s <= i32::MAX as u32)
            .ok_or_else(|| CliError::Bad(format!("option `--seed` = `{raw}`: must be an integer from 0 to 2147483647"))),
    }
}

fn dispatch(args: &[String], out: &mut dyn Write) -> Result<(), CliError> {
    let Some(cmd) = args.first() else {
        return Err(CliError::Bad(format!("a command is needed\n{USAGE}")));
    };
    let o = parse(&args[1..])?;
    check_options(cmd, &o)?;
    match cmd.as_str() {
        "help" | "--help" | "-h" => {
            let _ = write!(out, "{USAGE}");
            Ok(())
        }
        "--version" | "version" => {
            let _ = writeln!(out, "gpurtl {}", emit::VERSION);
            Ok(())
        }
        "list" => cmd_list(out),
        "gen" => cmd_gen(&o, out),
        "lint" => cmd_lint(&o, out),
        "run" => cmd_run(&o, out),
        "bench" => {
            let b = block_of(&o)?;
            let params = params_of(b, &o)?;
            bench::run(b, &params, o.json.as_deref(), out)
        }
        "prune" => cmd_prune(&o, out),
        "synth-table" => {
            let dir = o.block.as_deref().ok_or_else(|| CliError::Bad("`synth-table` needs a directory of synth runs".into()))?;
            let t = crate::synth::table(Path::new(dir))?;
            let _ = write!(out, "{t}");
            Ok(())
        }
        "sweep" => {
            let b = block_of(&o)?;
            let (target, clock_mhz) = target_and_clock(&o)?;
            let seed = pnr_seed(&o)?;
            crate::sweep::run(b, &o, target, clock_mhz, seed, o.zip, out)
        }
        "synth" => {
            let b = block_of(&o)?;
            let (target, clock_mhz) = target_and_clock(&o)?;
            let params = params_of(b, &o)?;
            let dir = o.out_dir.clone().unwrap_or_else(|| format!("out/synth/{}-{}", b.name(), target.name()).into());
            let seed = pnr_seed(&o)?;
            crate::synth::run(b, &params, &crate::synth::Opts { target, clock_mhz, seed, dir: &dir }, out).map(|_| ())
        }
        other => Err(CliError::Bad(format!("unknown command `{other}`; see `gpurtl help`"))),
    }
}

/// Run the command line; returns the exit status. Never panics on user input.
pub fn main_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match dispatch(args, out) {
        Ok(()) => 0,
        Err(e) => {
            let (CliError::Bad(m) | CliError::Failed(m)) = &e;
            for line in m.lines() {
                let _ = writeln!(err, "error: {line}");
            }
            e.code()
        }
    }
}
