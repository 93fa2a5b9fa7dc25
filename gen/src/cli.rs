//! The `gpurtl` command line. Exit status: 0 success, 2 bad parameters,
//! arguments, input file or output path (the message names the option or
//! field), 1 a failing tool.
//!
//! Files: every input file is read through one size-limited reader
//! ([`crate::json::read_bytes`]; a UTF-8 byte order mark before text is
//! skipped); an empty path is an error for every path option; no output
//! may be one of the command's inputs or another of its outputs
//! ([`distinct_files`]); outputs are written atomically and through
//! symbolic links ([`emit::write_atomic`]); `gen` removes only files it
//! provably wrote and holds its folder's lock while it writes ([`emit`]).

use crate::block::{BenchOpts, Block, Engine};
use crate::error::{Error, Result};
use crate::{bench, blocks, emit, jobs, synth, sweep, tables, tools};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Default)]
struct Opts {
    pub block: Option<String>,
    pub all: bool,
    pub pairs: Vec<(String, String)>,
    pub params_file: Option<PathBuf>,
    pub preset: Option<String>,
    pub out_dir: Option<PathBuf>,
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub engine: Option<String>,
    /// `run --max-cycles N`: the run budget.
    pub max_cycles: Option<String>,
    /// `asm`/`disasm --isa pm4|cu`.
    pub isa: Option<String>,
    pub vcd: Option<PathBuf>,
    pub image: Option<PathBuf>,
    pub output_image: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub prune_block: Option<String>,
    pub target: Option<String>,
    pub clock_mhz: Option<String>,
    pub seed: Option<String>,
    pub seeds: Option<String>,
    pub zip: bool,
    pub names: bool,
    /// `list --markdown`, `list --table T`.
    pub markdown: bool,
    pub table: Option<String>,
    pub threshold: Option<String>,
    pub random: Option<String>,
    /// `regress --points N`, `--points-seed R`, `--seeds-per-job K`.
    pub points: Option<String>,
    pub points_seed: Option<String>,
    pub seeds_per_job: Option<String>,
    /// A job's resources: `--timeout-s`, `--mem-mb`.
    pub timeout_s: Option<String>,
    pub mem_mb: Option<String>,
    /// `--emit FILE`, `--emit-format F`: jobs instead of a run.
    pub emit: Option<PathBuf>,
    pub emit_format: Option<String>,
    /// `sweep --point I`: one point, as a job.
    pub point: Option<String>,
    /// `job --index N`.
    pub index: Option<String>,
    /// The whole command line, `gpurtl` first (what a job's result records).
    pub argv: Vec<String>,
    /// The options given, by their long names, in order.
    pub given: Vec<&'static str>,
}

/// The command line `args` (the command first) read by its grammar
/// ([`crate::args`]): the command's name and its options. A usage error is
/// exit 2 in the house's form; `Ok((cmd, None))` for a help or version
/// request whose text is in `cmd`.
fn parse(args: &[String]) -> Result<(String, Option<Opts>)> {
    use crate::args::{Cli, Command as C};
    use clap::Parser;
    let cmd = args.first().map(String::as_str).filter(|c| !c.starts_with('-'));
    let argv = std::iter::once("gpurtl".to_string()).chain(args.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            return match crate::args::usage_error(&e, cmd) {
                Ok(text) => Ok((text, None)),
                Err(m) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Err(Error::Usage(m)),
                Err(m) => Err(Error::Bad(m)),
            }
        }
    };
    let mut o = Opts::default();
    let mut given: Vec<&'static str> = Vec::new();
    fn text(given: &mut Vec<&'static str>, name: &'static str, v: Option<String>) -> Option<String> {
        if v.is_some() {
            given.push(name);
        }
        v
    }
    fn path(given: &mut Vec<&'static str>, name: &'static str, v: Option<String>) -> Result<Option<PathBuf>> {
        text(given, name, v).map(|v| path_value(name, v)).transpose()
    }
    fn flag(given: &mut Vec<&'static str>, name: &'static str, v: bool) -> bool {
        if v {
            given.push(name);
        }
        v
    }
    fn params(o: &mut Opts, given: &mut Vec<&'static str>, p: crate::args::Params) -> Result<()> {
        if !p.param.is_empty() {
            given.push("--param");
        }
        for kv in p.param {
            match kv.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    let k = k.trim().to_string();
                    if o.pairs.iter().any(|(x, _)| *x == k) {
                        return Err(Error::Bad(format!("parameter `{k}` is given twice; give it once")));
                    }
                    o.pairs.push((k, v.to_string()))
                }
                _ => return Err(Error::Bad(format!("option `--param` = `{kv}`: must be KEY=VALUE"))),
            }
        }
        o.params_file = path(given, "--params", p.params)?;
        o.preset = text(given, "--preset", p.preset);
        Ok(())
    }
    fn emit(o: &mut Opts, given: &mut Vec<&'static str>, e: crate::args::Emit) -> Result<()> {
        o.emit = path(given, "--emit", e.emit)?;
        o.emit_format = text(given, "--emit-format", e.emit_format);
        o.timeout_s = text(given, "--timeout-s", e.timeout_s);
        o.mem_mb = text(given, "--mem-mb", e.mem_mb);
        Ok(())
    }
    fn synthesis(o: &mut Opts, given: &mut Vec<&'static str>, s: crate::args::Synthesis) -> Result<()> {
        o.target = text(given, "--target", s.target);
        o.clock_mhz = text(given, "--clock-mhz", s.clock_mhz);
        o.seed = text(given, "--seed", s.seed);
        o.seeds = text(given, "--seeds", s.seeds);
        o.out_dir = path(given, "--out", s.out)?;
        Ok(())
    }
    let g = &mut given;
    let name = match cli.command {
        C::List { block, names, markdown, table, params: p } => {
            o.block = block;
            o.names = flag(g, "--names", names);
            o.markdown = flag(g, "--markdown", markdown);
            o.table = text(g, "--table", table);
            params(&mut o, g, p)?;
            // `list` reads parameters for the ports' widths only.
            if o.table.as_deref() != Some("ports") {
                if let Some(opt) = g.iter().find(|x| matches!(**x, "--param" | "--params" | "--preset")) {
                    return Err(Error::Bad(if o.markdown || o.table.is_some() {
                        format!(
                            "option `{opt}` is used by `list` with `--table ports` only (the ports' widths at those parameters); the other tables show every value"
                        )
                    } else {
                        format!("option `{opt}` is not used by `list`; see `gpurtl list --help`")
                    }));
                }
            }
            "list"
        }
        C::Gen { block, all, out, params: p } => {
            o.block = block;
            o.all = flag(g, "--all", all);
            o.out_dir = path(g, "--out", out)?;
            params(&mut o, g, p)?;
            "gen"
        }
        C::Run { block, input, output, engine, max_cycles, vcd, image, output_image, params: p } => {
            o.block = block;
            o.input = path(g, "--input", input)?;
            o.output = path(g, "--output", output)?;
            o.engine = text(g, "--engine", engine);
            o.max_cycles = text(g, "--max-cycles", max_cycles);
            o.vcd = path(g, "--vcd", vcd)?;
            o.image = path(g, "--image", image)?;
            o.output_image = path(g, "--output-image", output_image)?;
            params(&mut o, g, p)?;
            "run"
        }
        C::Lint { block, params: p } => {
            o.block = block;
            params(&mut o, g, p)?;
            "lint"
        }
        C::Bench { block, json, random, seed, params: p } => {
            o.block = block;
            o.json = path(g, "--json", json)?;
            o.random = text(g, "--random", random);
            o.seed = text(g, "--seed", seed);
            params(&mut o, g, p)?;
            "bench"
        }
        C::Synth { block, synth: sy, params: p } => {
            o.block = block;
            synthesis(&mut o, g, sy)?;
            params(&mut o, g, p)?;
            "synth"
        }
        C::SynthTable { dir } => {
            o.block = dir;
            "synth-table"
        }
        C::Sweep { block, synth: sy, zip, point, emit: e, params: p } => {
            o.block = block;
            synthesis(&mut o, g, sy)?;
            o.zip = flag(g, "--zip", zip);
            o.point = text(g, "--point", point);
            emit(&mut o, g, e)?;
            params(&mut o, g, p)?;
            "sweep"
        }
        C::Cosim { block, seeds, seed, out, params: p } => {
            o.block = block;
            o.seeds = text(g, "--seeds", seeds);
            o.seed = text(g, "--seed", seed);
            o.out_dir = path(g, "--out", out)?;
            params(&mut o, g, p)?;
            "cosim"
        }
        C::Regress { block, all, points, points_seed, seeds, seeds_per_job, out, emit: e, params: p } => {
            o.block = block;
            o.all = flag(g, "--all", all);
            o.points = text(g, "--points", points);
            o.points_seed = text(g, "--points-seed", points_seed);
            o.seeds = text(g, "--seeds", seeds);
            o.seeds_per_job = text(g, "--seeds-per-job", seeds_per_job);
            o.out_dir = path(g, "--out", out)?;
            emit(&mut o, g, e)?;
            params(&mut o, g, p)?;
            "regress"
        }
        C::Job { manifest, index } => {
            o.block = manifest;
            o.index = text(g, "--index", index);
            "job"
        }
        C::Collect { dir } => {
            o.block = dir;
            "collect"
        }
        C::Asm { input, output, isa } => {
            o.block = input;
            o.output = path(g, "--output", output)?;
            o.isa = text(g, "--isa", isa);
            "asm"
        }
        C::Disasm { input, output, isa } => {
            o.block = input;
            o.output = path(g, "--output", output)?;
            o.isa = text(g, "--isa", isa);
            "disasm"
        }
        C::Prune { input, output, block, threshold } => {
            o.input = path(g, "--input", input)?;
            o.output = path(g, "--output", output)?;
            o.prune_block = text(g, "--block", block);
            o.threshold = text(g, "--threshold", threshold);
            "prune"
        }
        C::Version => return Ok((format!("gpurtl {}\n", emit::VERSION), None)),
        C::Completions { shell } => return completions(shell.as_deref()).map(|t| (t, None)),
    };
    o.given = given;
    Ok((name.to_string(), Some(o)))
}

/// `gpurtl completions SHELL`: clap_complete's script for the shell.
fn completions(shell: Option<&str>) -> Result<String> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    const ALLOWED: &str = "bash, zsh, fish, elvish or powershell";
    let raw = shell.ok_or_else(|| Error::Bad(format!("`completions` needs a shell: `gpurtl completions SHELL`, SHELL one of {ALLOWED}")))?;
    let sh = match raw {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        "elvish" => Shell::Elvish,
        "powershell" => Shell::PowerShell,
        _ => return Err(Error::Bad(format!("argument `SHELL` = `{raw}`: must be one of {ALLOWED}"))),
    };
    let mut buf = Vec::new();
    clap_complete::generate(sh, &mut crate::args::Cli::command(), "gpurtl", &mut buf);
    String::from_utf8(buf).map_err(|e| Error::Failed(format!("completion script: {e}")))
}

/// The value of a path option: an empty one is an error, not the current
/// folder.
fn path_value(option: &str, v: String) -> Result<PathBuf> {
    if v.is_empty() {
        return Err(Error::Bad(format!("option `{option}` = ``: is empty; must be a path")));
    }
    Ok(v.into())
}

/// Refuse an output that would replace one of the command's inputs or
/// another of its outputs, before any work. `outputs`: (option, path);
/// `inputs`: (what the file is, path), e.g. ("the `--input` file", path).
/// Paths are compared as files ([`emit::same_file`]: canonical paths,
/// through symbolic and hard links; an output not made yet by its folder's
/// canonical path and its name). An output that is a device or a pipe
/// replaces no file and is not compared.
fn distinct_files(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<()> {
    for (i, (opt, out)) in outputs.iter().enumerate() {
        if !emit::replaces_a_file(out) {
            continue;
        }
        let shown = out.display();
        if let Some((what, _)) = inputs.iter().find(|(_, f)| emit::same_file(out, f)) {
            return Err(Error::Bad(format!("option `{opt}` = `{shown}`: is {what}; must be another file")));
        }
        if let Some((other, _)) = outputs[..i].iter().find(|(_, f)| emit::same_file(out, f)) {
            return Err(Error::Bad(format!("option `{opt}` = `{shown}`: is the `{other}` file; must be another file")));
        }
    }
    Ok(())
}

/// An error of writing into the folder of option `option`, named by it.
fn in_folder(option: &str, dir: &Path, e: Error) -> Error {
    let m = format!("option `{option}` = `{}`: {}", dir.display(), e.message());
    match e {
        Error::Bad(_) | Error::Usage(_) => Error::Bad(m),
        Error::Failed(_) => Error::Failed(m),
    }
}

/// The `--params` file, if given, as an input of the command.
fn params_input(o: &Opts) -> Vec<(&'static str, &Path)> {
    o.params_file.iter().map(|p| ("the `--params` file", p.as_path())).collect()
}

/// A folder option (`-o DIR` of `synth`, `sweep`): checked up front, and
/// the `--params` file may not lie inside it, where the command writes.
fn check_work_dir(o: &Opts) -> Result<()> {
    let Some(dir) = &o.out_dir else { return Ok(()) };
    emit::check_out_dir("--out", dir).map_err(Error::Bad)?;
    if let Some(p) = o.params_file.as_ref().filter(|p| emit::is_inside(p, dir)) {
        return Err(Error::Bad(format!(
            "option `--params` = `{}`: is inside the folder `--out` = `{}`, which this command writes into; must be outside it",
            p.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The command line with its block registry.
struct Cli<'a> {
    blocks: &'a [&'a dyn Block],
}

/// Write `warnings` to `err`, each line prefixed `warning: `.
fn warn(err: &mut dyn Write, warnings: &[String]) {
    for w in warnings {
        let _ = writeln!(err, "warning: {w}");
    }
}

impl<'a> Cli<'a> {
    /// The block that offers the command `cmd` (`asm`, `disasm`, `prune`):
    /// the first in the registry that lists it.
    fn offering(&self, cmd: &str) -> Result<&'a dyn Block> {
        self.blocks
            .iter()
            .copied()
            .find(|b| b.commands().contains(&cmd))
            .ok_or_else(|| Error::Bad(format!("unknown command `{cmd}`: no block offers it; see `gpurtl help`")))
    }

    /// The block whose instruction set `asm`/`disasm` use: `--isa pm4` (the
    /// default: the command processor's packets) or `--isa cu` (the compute
    /// unit's kernels).
    fn isa(&self, cmd: &str, o: &Opts) -> Result<&'a dyn Block> {
        let name = match o.isa.as_deref() {
            None => return self.offering(cmd),
            Some("pm4") => "cmdproc",
            Some("cu") => "cu",
            Some(x) => return Err(Error::Bad(format!("option `--isa` = `{x}`: must be pm4 or cu"))),
        };
        blocks::find(self.blocks, name)
            .filter(|b| b.commands().contains(&cmd))
            .ok_or_else(|| Error::Bad(format!("option `--isa`: block `{name}` does not offer `{cmd}` in this build")))
    }

    fn block_of(&self, o: &Opts) -> Result<&'a dyn Block> {
        let known = self.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ");
        let name = o.block.as_deref().ok_or_else(|| Error::Bad(format!("a block name is needed; blocks: {known}")))?;
        blocks::find(self.blocks, name).ok_or_else(|| Error::Bad(format!("unknown block `{name}`; blocks: {known}")))
    }

    /// Every block, or the one named; with `--markdown` or `--table`, the
    /// named block's tables ([`tables`]).
    fn list(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        if o.markdown || o.table.is_some() {
            return self.list_tables(o, out);
        }
        let blocks: Vec<&dyn Block> = match &o.block {
            Some(_) => vec![self.block_of(o)?],
            None => self.blocks.to_vec(),
        };
        for b in blocks {
            if o.names {
                let _ = writeln!(out, "{}", b.name());
                continue;
            }
            let _ = writeln!(out, "{}: {}", b.name(), b.summary());
            let _ = write!(out, "{}", tables::params(b, false));
            let presets: Vec<String> = b.presets().iter().map(|(n, v)| format!("{n} {v}")).collect();
            let _ = writeln!(out, "  presets: {}", presets.join(", "));
        }
        Ok(())
    }

    /// `gpurtl list BLOCK --markdown [--table T]`, `gpurtl list BLOCK --table T`.
    fn list_tables(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let opt = if o.markdown { "--markdown" } else { "--table" };
        if o.names {
            return Err(Error::Bad(format!("options `--names` and `{opt}`: give one of them (`--names` lists the blocks, `{opt}` one block's tables)")));
        }
        let table = o.table.as_deref().map(tables::Table::parse).transpose()?;
        if o.block.is_none() {
            let known = self.blocks.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ");
            return Err(Error::Bad(format!("option `{opt}` needs a block: `gpurtl list BLOCK {opt}`; blocks: {known}")));
        }
        let b = self.block_of(o)?;
        let md = o.markdown;
        let text = match table {
            None => format!("{}
{}", tables::params(b, md), tables::presets(b, md)),
            Some(tables::Table::Params) => tables::params(b, md),
            Some(tables::Table::Presets) => tables::presets(b, md),
            Some(tables::Table::Ports) => {
                let params = params_of(b, o)?;
                let mut at: Vec<String> = Vec::new();
                if let Some(p) = &o.preset {
                    at.push(format!("the preset `{p}`"));
                }
                if let Some(f) = &o.params_file {
                    at.push(format!("the parameters of `{}`", f.display()));
                }
                if !o.pairs.is_empty() {
                    let pairs = o.pairs.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(" ");
                    at.push(if at.is_empty() { format!("the parameters {pairs}") } else { pairs });
                }
                let at = if at.is_empty() { "the default parameters".to_string() } else { at.join(" with ") };
                tables::ports(b, &params, &at, md)?
            }
        };
        let _ = write!(out, "{text}");
        Ok(())
    }

    fn gen(&self, o: &Opts, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
        let dir = o.out_dir.as_ref().ok_or_else(|| Error::Bad("`gen` needs `-o DIR`".into()))?;
        emit::check_out_dir("--out", dir).map_err(Error::Bad)?;
        if o.all {
            if o.block.is_some() || !o.pairs.is_empty() || o.params_file.is_some() || o.preset.is_some() {
                return Err(Error::Bad("`gen --all` writes every block at its defaults and takes no block or parameters".into()));
            }
            for b in self.blocks {
                let sub = dir.join(b.name());
                let (_, files) = gen_one(*b, &b.defaults(), &sub, &[], err)?;
                let _ = writeln!(out, "{}: {} files in {}", b.name(), files.len(), sub.display());
            }
            return Ok(());
        }
        let b = self.block_of(o)?;
        let params = params_of(b, o)?;
        let (_, files) = gen_one(b, &params, dir, &params_input(o), err)?;
        for (f, _) in files {
            let _ = writeln!(out, "{}", dir.join(f).display());
        }
        Ok(())
    }

    fn lint(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let b = self.block_of(o)?;
        let params = params_of(b, o)?;
        let tmp = tempfile::tempdir().map_err(|e| Error::Failed(format!("cannot make a temporary directory: {e}")))?;
        let dir = o.out_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
        let (top, files) = gen_one(b, &params, &dir, &[], &mut std::io::sink())?;
        // Progress on stderr: yosys takes up to minutes on a large design.
        let progress = crate::progress::Progress::new(format!("lint {}", b.name()), 2);
        progress.running("verilator --lint-only -Wall");
        tools::verilator_lint(&dir, &top)?;
        progress.done("verilator --lint-only -Wall: clean");
        let _ = writeln!(out, "verilator --lint-only -Wall: clean");
        progress.running("yosys synth + check -assert");
        let s = tools::yosys_synth(&dir, &top, &emit::sources(&files))?;
        progress.done("yosys: clean");
        let _ = writeln!(out, "yosys synth + check -assert: clean, no latches ({} cells, {} flip-flops)", s.cells, s.flip_flops);
        Ok(())
    }

    fn run(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let b = self.block_of(o)?;
        let params = params_of(b, o)?;
        let input = o.input.as_ref().ok_or_else(|| Error::Bad("`run` needs `--input IN.json`".into()))?;
        let output = o.output.as_ref().ok_or_else(|| Error::Bad("`run` needs `--output OUT.json`".into()))?;
        let engine = match o.engine.as_deref() {
            None | Some("model") => Engine::Model,
            Some("rtl") => Engine::Rtl,
            Some(e) => return Err(Error::Bad(format!("option `--engine` = `{e}`: must be model or rtl"))),
        };
        if o.vcd.is_some() && engine != Engine::Rtl {
            return Err(Error::Bad("option `--vcd` needs `--engine rtl`".into()));
        }
        let max_cycles = match o.max_cycles.as_deref() {
            None => None,
            Some(raw) => Some(raw.parse::<u64>().ok().filter(|n| (1..=MAX_CYCLES_LIMIT).contains(n)).ok_or_else(|| {
                Error::Bad(format!("option `--max-cycles` = `{raw}`: must be an integer from 1 to {MAX_CYCLES_LIMIT}"))
            })?),
        };
        // Outputs are checked before any work: each one's folder exists, and
        // none replaces an input or another output.
        emit::check_output("--output", output).map_err(Error::Bad)?;
        if let Some(vcd) = &o.vcd {
            emit::check_output("--vcd", vcd).map_err(Error::Bad)?;
        }
        if let Some(img) = &o.output_image {
            emit::check_output("--output-image", img).map_err(Error::Bad)?;
        }
        let outputs: Vec<(&str, &Path)> = [("--output", Some(output)), ("--vcd", o.vcd.as_ref()), ("--output-image", o.output_image.as_ref())]
            .into_iter()
            .filter_map(|(k, p)| Some((k, p?.as_path())))
            .collect();
        let mut inputs = vec![("the `--input` file", input.as_path())];
        inputs.extend(o.image.iter().map(|p| ("the `--image` file", p.as_path())));
        inputs.extend(params_input(o));
        distinct_files(&outputs, &inputs)?;
        let base = input.parent().map(Path::to_path_buf).unwrap_or_default();
        // The default budget grows with the input (its files' bytes).
        let input_bytes: u64 = std::iter::once(input.as_path())
            .chain(o.image.as_deref())
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum();
        let budget = max_cycles.unwrap_or_else(|| default_max_cycles(input_bytes));
        let mut input = read_run_input(b, &params, input)?;
        if let Some(path) = &o.image {
            let img = crate::image::read_png("--image", path)?;
            input = b.with_image(&params, input, &img)?;
        }
        if o.output_image.is_some() {
            b.gives_image(&params, &input)?;
        }
        // The waveform is traced beside its path and moved there when the
        // run ends, or ends in a failure it shows; a run stopped by its
        // budget leaves nothing.
        let staged = match &o.vcd {
            Some(vcd) => emit::stage_path(vcd).map_err(|e| emit::output_error("--vcd", vcd, e))?,
            None => None,
        };
        let vcd_path: Option<&Path> = match &staged {
            Some((tmp, _)) => Some(tmp),
            None => o.vcd.as_deref(),
        };
        let (result, over) = gpurtl_sim::budget::within(budget, || b.run(&params, &input, &base, engine, vcd_path));
        if let (Some((tmp, target)), Some(vcd), false) = (staged, &o.vcd, over) {
            // An empty file: the run never began (a failed build).
            if std::fs::metadata(&tmp).is_ok_and(|m| m.len() > 0) {
                tmp.persist(&target).map_err(|e| emit::output_error("--vcd", vcd, e.error))?;
            }
        }
        if over {
            let why = match max_cycles {
                Some(_) => "as given".to_string(),
                None => format!(
                    "the default for {input_bytes} bytes of input: {DEFAULT_MAX_CYCLES} and {MAX_CYCLES_PER_INPUT_BYTE} a byte; give a larger one to run longer"
                ),
            };
            return Err(Error::Bad(format!(
                "the run did not end within its budget of {budget} cycles (`--max-cycles` = {budget}, {why}); nothing was written"
            )));
        }
        let result = result?;
        let picture = match &o.output_image {
            Some(path) => Some((path, b.output_image(&params, &input, &result)?)),
            None => None,
        };
        let text = serde_json::to_string_pretty(&result)? + "\n";
        if text.len() as u64 > MAX_OUTPUT_BYTES {
            return Err(Error::Bad(format!(
                "option `--output`: the run's result is {} bytes, over the {} MiB a run may write; nothing was written (run less work at once)",
                text.len(),
                MAX_OUTPUT_BYTES >> 20
            )));
        }
        emit::write_atomic(output, text.as_bytes()).map_err(|e| emit::output_error("--output", output, e))?;
        let _ = writeln!(out, "{}", output.display());
        if let Some((path, img)) = picture {
            crate::image::write_png("--output-image", path, &img)?;
            let _ = writeln!(out, "{}", path.display());
        }
        Ok(())
    }

    fn bench(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let harness = o.block.as_deref() == Some("harness");
        let block = if harness {
            if !o.pairs.is_empty() || o.params_file.is_some() || o.preset.is_some() {
                return Err(Error::Bad("`bench harness` measures fixed designs and takes no parameters".into()));
            }
            None
        } else {
            let b = self.block_of(o)?;
            Some((b, params_of(b, o)?))
        };
        // Options a block's bench does not read are refused, not dropped.
        let reads: &[&str] = block.as_ref().map_or(&[], |(b, _)| b.bench_options());
        if let Some(g) = o.given.iter().find(|g| matches!(**g, "--random" | "--seed") && !reads.contains(g)) {
            let name = block.as_ref().map_or("harness", |(b, _)| b.name());
            return Err(Error::Bad(format!("option `{g}` is not used by `bench {name}`; see `gpurtl help`")));
        }
        let random = match o.random.as_deref() {
            None => None,
            Some(raw) => Some(raw.parse::<u64>().ok().filter(|n| (1..=10_000).contains(n)).ok_or_else(|| {
                Error::Bad(format!("option `--random` = `{raw}`: must be an integer from 1 to 10000"))
            })?),
        };
        let seed = match o.seed.as_deref() {
            None => None,
            Some(raw) => Some(raw.parse::<u64>().map_err(|_| {
                Error::Bad(format!("option `--seed` = `{raw}`: must be an integer from 0 to {}", u64::MAX))
            })?),
        };
        // The report's path is checked before minutes of work; the default
        // `out/bench/<name>.json` is made.
        let json = match &o.json {
            Some(p) => {
                emit::check_output("--json", p).map_err(Error::Bad)?;
                p.clone()
            }
            None => {
                let dir = Path::new("out/bench");
                std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
                dir.join(format!("{}.json", block.as_ref().map_or("harness", |(b, _)| b.name())))
            }
        };
        distinct_files(&[("--json", &json)], &params_input(o))?;
        match block {
            None => bench::write_report(&bench::harness(self.blocks, out)?, &json, out),
            Some((b, params)) => {
                let progress = Some(std::sync::Arc::new(crate::progress::Progress::new(format!("bench {}", b.name()), 0)));
                bench::run(b, &params, &BenchOpts { random, seed, report: json, progress }, out)
            }
        }
    }

    fn synth(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let b = self.block_of(o)?;
        let (target, clock_mhz) = target_and_clock(o)?;
        check_work_dir(o)?;
        let params = params_of(b, o)?;
        let dir = o.out_dir.clone().unwrap_or_else(|| synth_dir(b, o, &params, target));
        let seeds = pnr_seeds(o)?;
        if target == synth::Target::Generic {
            if let Some(g) = o.given.iter().find(|g| matches!(**g, "--seed" | "--seeds")) {
                return Err(Error::Bad(format!("option `{g}` is used by the FPGA targets (ice40, ecp5) only: `generic` places nothing")));
            }
        }
        synth::run(b, &params, &synth::Opts { target, clock_mhz, seeds, dir: &dir, progress: true }, out).map(|_| ())
    }

    fn sweep(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let b = self.block_of(o)?;
        let (target, clock_mhz) = target_and_clock(o)?;
        let emit_to = emit_target(o)?;
        let point = match (&o.point, &emit_to) {
            (Some(_), Some(_)) => {
                return Err(Error::Bad("options `--point` and `--emit`: give one of them (`--emit` writes the jobs, `--point` runs one)".into()))
            }
            (Some(raw), None) => Some(raw.trim().parse::<usize>().map_err(|_| {
                Error::Bad(format!("option `--point` = `{raw}`: must be the index of a point of the sweep, from 0"))
            })?),
            (None, _) => None,
        };
        if emit_to.is_none() {
            if let Some(g) = o.given.iter().find(|g| matches!(**g, "--timeout-s" | "--mem-mb")) {
                return Err(Error::Bad(format!("option `{g}` is a job's resource: it needs `--emit FILE`")));
            }
        }
        match point {
            // A job may read the sweep's copy of the `--params` file in the
            // folder, not in its own point's folder.
            Some(i) => {
                if let Some(dir) = &o.out_dir {
                    emit::check_out_dir("--out", dir).map_err(Error::Bad)?;
                    let sub = dir.join(sweep::point_dir(i));
                    if let Some(p) = o.params_file.as_ref().filter(|p| emit::is_inside(p, &sub)) {
                        return Err(Error::Bad(format!(
                            "option `--params` = `{}`: is inside the folder `{}`, which this command writes into; must be outside it",
                            p.display(),
                            sub.display()
                        )));
                    }
                }
            }
            None => check_work_dir(o)?,
        }
        let seeds = pnr_seeds(o)?;
        let layers = layers_of(b, o)?;
        let lists: Vec<(String, Vec<String>)> =
            o.pairs.iter().map(|(k, v)| (k.clone(), v.split(',').map(|s| s.trim().to_string()).collect())).collect();
        let dir = o.out_dir.clone().unwrap_or_else(|| format!("out/sweep/{}-{}", b.name(), target.name()).into());
        let refs: Vec<&Value> = layers.iter().collect();
        let opts = sweep::Opts { target, clock_mhz, seeds, zip: o.zip, dir: &dir };
        if let Some(i) = point {
            return sweep::run_point(b, &refs, &lists, &opts, i, &o.argv, out);
        }
        let Some((file, format)) = emit_to else {
            return sweep::run(b, &refs, &lists, &opts, out);
        };
        // Jobs: every point validated first; each job runs the sweep's own
        // command line with `--point I`.
        let resources = jobs::Resources::parse(o.timeout_s.as_deref(), o.mem_mb.as_deref())?;
        let n = sweep::expand(b, &refs, &lists, o.zip)?.len();
        check_emit_file(&file, format, &dir, o)?;
        let params_copy = dir.join("sweep.params.json");
        let mut argv: Vec<String> = vec!["gpurtl".into(), "sweep".into(), b.name().into()];
        if let Some(p) = &o.preset {
            argv.extend(["--preset".into(), p.clone()]);
        }
        if o.params_file.is_some() {
            argv.extend(["--params".into(), params_copy.to_string_lossy().into_owned()]);
        }
        for (k, v) in &o.pairs {
            argv.extend(["--param".into(), format!("{k}={v}")]);
        }
        if o.zip {
            argv.push("--zip".into());
        }
        argv.extend(["--target".into(), target.name().into(), "--clock-mhz".into(), clock_mhz.to_string()]);
        if target != synth::Target::Generic {
            let list: Vec<String> = opts.seeds.iter().map(u32::to_string).collect();
            argv.extend([if list.len() == 1 { "--seed" } else { "--seeds" }.into(), list.join(",")]);
        }
        argv.extend(["-o".into(), dir.to_string_lossy().into_owned()]);
        // Synthesis runs two yosys at once, then place and route a seed a core.
        let cpus = if target == synth::Target::Generic { 1 } else { opts.seeds.len().max(2) as u64 };
        let list: Vec<jobs::Job> = (0..n)
            .map(|i| {
                let argv = [argv.clone(), vec!["--point".into(), i.to_string()]].concat();
                jobs::job(sweep::point_dir(i), argv, None, cpus, resources, &dir)
            })
            .collect();
        jobs::emit(&list, format, &file, &dir, &command_text(&o.argv), out)?;
        if let Some(layer) = o.params_file.as_ref().and(layers.last()) {
            let text = serde_json::to_string_pretty(layer)? + "\n";
            emit::write_atomic(&params_copy, text.as_bytes()).map_err(|e| Error::io("write", &params_copy, e))?;
        }
        Ok(())
    }

    /// `gpurtl cosim`: seeds of the block's random workload, both engines.
    fn cosim(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let b = self.block_of(o)?;
        check_work_dir(o)?;
        let seeds = jobs::parse_seeds(o.seeds.as_deref(), o.seed.as_deref(), None)?;
        let params = params_of(b, o)?;
        jobs::cosim(b, &params, seeds, &o.argv, o.out_dir.as_deref(), out)
    }

    /// `gpurtl regress`: cosimulation jobs at points of a block (or of
    /// every block), emitted or run here and collected.
    fn regress(&self, o: &Opts, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
        let blocks: Vec<&dyn Block> = if o.all {
            if o.block.is_some() || !o.pairs.is_empty() || o.params_file.is_some() || o.preset.is_some() {
                return Err(Error::Bad("`regress --all` draws the points of every block and takes no block or parameters".into()));
            }
            self.blocks.to_vec()
        } else {
            vec![self.block_of(o)?]
        };
        let int = |opt: &str, raw: Option<&str>, default: u64, max: u64| -> Result<u64> {
            match raw {
                None => Ok(default),
                Some(r) => r
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|x| (1..=max).contains(x))
                    .ok_or_else(|| Error::Bad(format!("option `{opt}` = `{r}`: must be an integer from 1 to {max}"))),
            }
        };
        let n = int("--points", o.points.as_deref(), 1, 1000)? as usize;
        let per_job = int("--seeds-per-job", o.seeds_per_job.as_deref(), 100, 1_000_000_000)?;
        let draw_seed = match o.points_seed.as_deref() {
            None => 1,
            Some(r) => r
                .trim()
                .parse::<u64>()
                .map_err(|_| Error::Bad(format!("option `--points-seed` = `{r}`: must be an integer from 0 to {}", u64::MAX)))?,
        };
        let seeds = jobs::parse_seeds(o.seeds.as_deref(), None, Some(200))?;
        let resources = jobs::Resources::parse(o.timeout_s.as_deref(), o.mem_mb.as_deref())?;
        let emit_to = emit_target(o)?;
        check_work_dir(o)?;
        let dir = o.out_dir.clone().unwrap_or_else(|| match &blocks[..] {
            [b] if !o.all => format!("out/regress/{}", b.name()).into(),
            _ => "out/regress".into(),
        });
        let total = (blocks.len() * n) as u64 * (seeds.1 - seeds.0).div_ceil(per_job);
        if total > jobs::MAX_JOBS as u64 {
            return Err(Error::Bad(format!(
                "`regress` would emit {total} jobs ({} point(s) x {} seeds in ranges of {per_job}); at most {}: \
                 fewer points or seeds, or more seeds a job (`--seeds-per-job`)",
                blocks.len() * n,
                seeds.1 - seeds.0,
                jobs::MAX_JOBS
            )));
        }
        if let Some((file, format)) = &emit_to {
            check_emit_file(file, *format, &dir, o)?;
        }
        let mut list = Vec::new();
        for b in &blocks {
            let base = if o.all { b.defaults() } else { params_of(*b, o)? };
            let points = jobs::draw_points(*b, base, &o.pairs, n, draw_seed, jobs::MAX_LINES)?;
            list.extend(jobs::regress_jobs(*b, &points, seeds, per_job, resources, &dir));
        }
        if let Some((file, format)) = emit_to {
            return jobs::emit(&list, format, &file, &dir, &command_text(&o.argv), out);
        }
        // Run every job here, as a runner would, then collect.
        jobs::write_manifest(&dir, &list)?;
        let done = std::sync::Mutex::new(0usize);
        let runs = tools::parallel_map(list.len(), |i| {
            let (mut o, mut e) = (Vec::new(), Vec::new());
            let code = main_with_blocks(&list[i].argv[1..], self.blocks, &mut o, &mut e);
            let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
            *d += 1;
            eprintln!("[{}/{}] {}: {}", *d, list.len(), list[i].id, if code == 0 { "ok" } else { "failed" });
            (o, e)
        });
        for (o, e) in runs {
            let _ = out.write_all(&o);
            let _ = err.write_all(&e);
        }
        self.collect_dir(&dir, out)
    }

    /// `gpurtl collect DIR`.
    fn collect(&self, o: &Opts, out: &mut dyn Write) -> Result<()> {
        let dir = o.block.as_deref().ok_or_else(|| Error::Bad("`collect` needs the jobs' folder: `gpurtl collect DIR`".into()))?;
        if dir.is_empty() {
            return Err(Error::Bad("argument `DIR` of `collect` = ``: is empty; must be a path".into()));
        }
        self.collect_dir(Path::new(dir), out)
    }

    fn collect_dir(&self, dir: &Path, out: &mut dyn Write) -> Result<()> {
        jobs::collect(dir, &|argv: &[String]| self.describe(argv), out)
    }

    /// What the job of `argv` is, for `collect`: read as the command line
    /// reads it.
    fn describe(&self, argv: &[String]) -> Result<jobs::Kind> {
        let cmd = argv.get(1).map(String::as_str).unwrap_or("");
        if !is_gpurtl(&argv[0]) || !matches!(cmd, "sweep" | "cosim") {
            return Err(Error::Bad(format!(
                "runs `{}`; `collect` collects `gpurtl sweep ... --point I` and `gpurtl cosim` jobs",
                argv.iter().take(2).cloned().collect::<Vec<_>>().join(" ")
            )));
        }
        let Some(o) = parse(&argv[1..])?.1 else {
            return Err(Error::Bad("is not a job: it asks for help".into()));
        };
        let b = self.block_of(&o)?;
        if cmd == "cosim" {
            let params = params_of(b, &o)?;
            let seeds = jobs::parse_seeds(o.seeds.as_deref(), o.seed.as_deref(), None)?;
            return Ok(jobs::Kind::Cosim { block: b.name().into(), label: jobs::label(b, &params), params, seeds });
        }
        let (target, clock_mhz) = target_and_clock(&o)?;
        let lists: Vec<(String, Vec<String>)> =
            o.pairs.iter().map(|(k, v)| (k.clone(), v.split(',').map(|s| s.trim().to_string()).collect())).collect();
        let points = sweep::points(&lists, o.zip)?;
        let i = o.point.as_deref().ok_or_else(|| Error::Bad("is a `gpurtl sweep` without `--point`: not a job".into()))?;
        let point = i.parse::<usize>().ok().and_then(|i| points.get(i)).ok_or_else(|| {
            Error::Bad(format!("option `--point` = `{i}`: the sweep has {} points; must be from 0 to {}", points.len(), points.len() - 1))
        })?;
        Ok(jobs::Kind::SweepPoint {
            block: b.name().into(),
            target,
            clock_mhz,
            keys: lists.iter().map(|(k, _)| k.clone()).collect(),
            point: point.clone(),
        })
    }

    /// `gpurtl job MANIFEST --index N`: job N of the manifest, here, with
    /// its environment (a Slurm array task, a GitHub Actions matrix entry).
    fn job(&self, o: &Opts, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
        const FORM: &str = "`gpurtl job MANIFEST --index N`";
        let path = o.block.as_deref().ok_or_else(|| Error::Bad(format!("`job` needs a manifest: {FORM}")))?;
        if path.is_empty() {
            return Err(Error::Bad(format!("argument `MANIFEST` = ``: is empty; must be a path: {FORM}")));
        }
        let raw = o.index.as_deref().ok_or_else(|| Error::Bad(format!("`job` needs `--index N`: {FORM}")))?;
        let path = Path::new(path);
        let list = jobs::read_manifest(path, "MANIFEST")?;
        let i = raw.trim().parse::<usize>().ok().filter(|i| *i < list.len()).ok_or_else(|| {
            Error::Bad(format!(
                "option `--index` = `{raw}`: the manifest `{}` holds {} jobs; must be an integer from 0 to {}",
                path.display(),
                list.len(),
                list.len() - 1
            ))
        })?;
        let j = &list[i];
        let at = format!("manifest `{}`: job {i} (`{}`)", path.display(), j.id);
        if !is_gpurtl(&j.argv[0]) {
            return Err(Error::Bad(format!("{at}: argv[0] = `{}`: must be `gpurtl`; `gpurtl job` runs gpurtl commands", j.argv[0])));
        }
        if j.argv.get(1).map(String::as_str) == Some("job") {
            return Err(Error::Bad(format!("{at}: runs `gpurtl job` itself; a job must run another command")));
        }
        for (k, v) in &j.env {
            std::env::set_var(k, v);
        }
        let _ = writeln!(err, "job {i} ({}): {}", j.id, command_text(&j.argv));
        dispatch(&j.argv[1..], self.blocks, out, err)
    }
}

/// Whether a job's argv[0] names gpurtl (`gpurtl`, or a path ending in it).
fn is_gpurtl(arg0: &str) -> bool {
    Path::new(arg0).file_name().is_some_and(|n| n == "gpurtl")
}

/// A command line as one shell line.
fn command_text(argv: &[String]) -> String {
    argv.iter().map(|a| jobs::shell_quote(a)).collect::<Vec<_>>().join(" ")
}

/// `--emit FILE` and `--emit-format F` (default jsonl).
fn emit_target(o: &Opts) -> Result<Option<(PathBuf, jobs::Format)>> {
    let format = o.emit_format.as_deref().map(jobs::Format::parse).transpose()?;
    match (&o.emit, format) {
        (None, Some(_)) => Err(Error::Bad("option `--emit-format` needs `--emit FILE`".into())),
        (None, None) => Ok(None),
        (Some(file), format) => Ok(Some((file.clone(), format.unwrap_or(jobs::Format::Jsonl)))),
    }
}

/// The `--emit` file, before any work: its folder exists (or is the jobs'
/// folder `dir`, which the command makes); it is not an input, nor, but in
/// the manifest's own format, the manifest the command writes beside the
/// jobs.
fn check_emit_file(file: &Path, format: jobs::Format, dir: &Path, o: &Opts) -> Result<()> {
    let in_dir = file.parent().is_some_and(|p| p == dir || (p.exists() && dir.exists() && emit::same_file(p, dir)));
    if in_dir {
        if file.is_dir() {
            return Err(Error::Bad(format!("option `--emit` = `{}`: is a directory; must be a file", file.display())));
        }
    } else {
        emit::check_output("--emit", file).map_err(Error::Bad)?;
    }
    distinct_files(&[("--emit", file)], &params_input(o))?;
    let manifest = dir.join(jobs::MANIFEST);
    if format != jobs::Format::Jsonl && emit::same_file(file, &manifest) {
        return Err(Error::Bad(format!(
            "option `--emit` = `{}`: is the manifest `{}` this command writes; must be another file for the `{}` rendering",
            file.display(),
            manifest.display(),
            format.name()
        )));
    }
    Ok(())
}

/// The JSON layers under the `--param` pairs: the preset (if any), then the
/// params file (if any).
fn layers_of(b: &dyn Block, o: &Opts) -> Result<Vec<Value>> {
    let mut layers = Vec::new();
    if let Some(n) = &o.preset {
        match b.presets().into_iter().find(|(p, _)| p == n) {
            Some((_, v)) => layers.push(v),
            None => {
                let names: Vec<_> = b.presets().iter().map(|(p, _)| *p).collect();
                return Err(Error::Bad(format!("preset `{n}` of block `{}`: must be one of {}", b.name(), names.join(", "))));
            }
        }
    }
    if let Some(f) = &o.params_file {
        layers.push(crate::json::read(f, "--params")?);
    }
    Ok(layers)
}

/// Preset (or defaults), then the params file, then `--param` pairs; validated.
fn params_of(b: &dyn Block, o: &Opts) -> Result<Value> {
    let layers = layers_of(b, o)?;
    let refs: Vec<&Value> = layers.iter().collect();
    Ok(b.resolve(&refs, &o.pairs)?)
}

/// Generate and write a block's files into `dir` (option `--out`); returns
/// the top's name and the files. None of them may be one of `inputs`
/// (what the file is, path). Warnings about files of an earlier generation
/// left in place go to `err`.
fn gen_one(
    b: &dyn Block,
    params: &Value,
    dir: &Path,
    inputs: &[(&str, &Path)],
    err: &mut dyn Write,
) -> Result<(String, Vec<(String, String)>)> {
    let design = b.design(params)?;
    let files = emit::files(&design);
    for name in files.iter().map(|(f, _)| f.as_str()).chain([emit::MANIFEST]) {
        if let Some((what, _)) = inputs.iter().find(|(_, f)| emit::same_file(&dir.join(name), f)) {
            return Err(Error::Bad(format!(
                "option `--out` = `{}`: `gen` would write `{name}` there, which is {what}; must be a folder where no input is replaced",
                dir.display()
            )));
        }
    }
    let warnings = emit::write_all(dir, &files).map_err(|e| in_folder("--out", dir, e))?;
    warn(err, &warnings);
    Ok((design.elaborate().top_name().to_string(), files))
}

/// A `gpurtl run` input file: JSON, or, for a block with a text form (see
/// [`crate::block::BlockDef::text_input`]), text. A file that opens as JSON
/// does (`{` or `[` first) is read as JSON, so a broken JSON file gets the
/// JSON error; a block without a text form gets the JSON error too. Each
/// line of a text form's error names the file.
/// `gpurtl synth`'s default folder: `out/synth/<block>-<target>` at the
/// defaults, with the preset's name (`<block>-<preset>-<target>`) and, when
/// parameters are given, a hash of the resolved parameters
/// (`<block>[-<preset>]-p<8 hex digits>-<target>`), so that runs at other
/// parameters never share a folder.
fn synth_dir(b: &dyn Block, o: &Opts, params: &Value, target: synth::Target) -> PathBuf {
    let mut name = b.name().to_string();
    if let Some(p) = &o.preset {
        name += &format!("-{p}");
    }
    if !o.pairs.is_empty() || o.params_file.is_some() {
        name += &format!("-p{:08x}", emit::fnv1a64(params.to_string().as_bytes()) as u32);
    }
    format!("out/synth/{name}-{}", target.name()).into()
}

/// The run budget without `--max-cycles`: this many cycles, and
/// [`MAX_CYCLES_PER_INPUT_BYTE`] more for each byte of the input's files.
/// The examples end in at most tens of thousands of cycles.
pub const DEFAULT_MAX_CYCLES: u64 = 1 << 22;
pub const MAX_CYCLES_PER_INPUT_BYTE: u64 = 1 << 10;
/// The largest `--max-cycles`.
pub const MAX_CYCLES_LIMIT: u64 = 1 << 48;
/// The most a run writes as its result (the JSON text).
pub const MAX_OUTPUT_BYTES: u64 = 256 << 20;

/// The run budget for an input of `bytes` bytes.
pub fn default_max_cycles(bytes: u64) -> u64 {
    DEFAULT_MAX_CYCLES.saturating_add(MAX_CYCLES_PER_INPUT_BYTE.saturating_mul(bytes)).min(MAX_CYCLES_LIMIT)
}

fn read_run_input(b: &dyn Block, params: &Value, path: &Path) -> Result<Value> {
    const WHAT: &str = "input file";
    let text = crate::json::read_text(path, "--input")?;
    let e = match crate::json::parse(&text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if text.trim_start().starts_with(['{', '[']) {
        return Err(crate::json::not_json(path, WHAT, &e));
    }
    match b.text_input(params, &text) {
        None => Err(crate::json::not_json(path, WHAT, &e)),
        Some(Ok(v)) => Ok(v),
        Some(Err(Error::Bad(m))) => Err(Error::Bad(in_file(path, &m))),
        Some(Err(e)) => Err(e),
    }
}

/// Each line of `message` prefixed with the input file's name.
fn in_file(path: &Path, message: &str) -> String {
    message.lines().map(|l| format!("input file `{}`: {l}", path.display())).collect::<Vec<_>>().join("\n")
}

/// Whether a file name ends in `.bin` (raw little-endian dwords).
fn is_bin(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("bin"))
}

/// The input file of `asm`/`disasm` and its `--output` (checked up front).
fn asm_files<'o>(cmd: &str, o: &'o Opts, form: &str) -> Result<(PathBuf, Option<&'o PathBuf>)> {
    let input = o.block.as_ref().map(PathBuf::from).ok_or_else(|| Error::Bad(format!("`{cmd}` needs an input file: {form}")))?;
    if input.as_os_str().is_empty() {
        return Err(Error::Bad(format!("argument `IN` = ``: is empty; must be a path: {form}")));
    }
    if let Some(output) = &o.output {
        emit::check_output("--output", output).map_err(Error::Bad)?;
        distinct_files(&[("--output", output)], &[("the input file", &input)])?;
    }
    Ok((input, o.output.as_ref()))
}

/// `gpurtl asm IN.txt --output OUT`: assembler lines to dwords, by the block
/// that offers `asm`.
fn cmd_asm(b: &dyn Block, o: &Opts, out: &mut dyn Write) -> Result<()> {
    const FORM: &str = "`gpurtl asm IN.txt --output OUT` (OUT.bin: raw little-endian dwords; any other name: a hex file, one dword a line)";
    let (input, output) = asm_files("asm", o, FORM)?;
    let output = output.ok_or_else(|| Error::Bad(format!("`asm` needs `--output OUT`: {FORM}")))?;
    let text = crate::json::read_text(&input, "IN")?;
    let dwords = b.assemble(&text).map_err(|e| match e {
        Error::Bad(m) => Error::Bad(in_file(&input, &m)),
        e => e,
    })?;
    let bytes: Vec<u8> = if is_bin(output) {
        dwords.iter().flat_map(|d| d.to_le_bytes()).collect()
    } else {
        dwords.iter().map(|d| format!("{d:08x}\n")).collect::<String>().into_bytes()
    };
    emit::write_atomic(output, &bytes).map_err(|e| emit::output_error("--output", output, e))?;
    let form = if is_bin(output) { "raw little-endian" } else { "hex, one a line" };
    let _ = writeln!(out, "{}: {} dwords ({form})", output.display(), dwords.len());
    Ok(())
}

/// The dwords of a hex file: one a line, 1 to 8 hex digits, blank lines and
/// `//` comments skipped. Bad lines are reported (the first 20).
pub fn hex_dwords(path: &Path, bytes: &[u8]) -> Result<Vec<u32>> {
    const SHOWN: usize = 20;
    let shown = path.display();
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Error::Bad(format!(
            "input file `{shown}`: not a hex file: byte {} is not text (a file of raw little-endian dwords must be named *.bin)",
            e.valid_up_to()
        ))
    })?;
    // A UTF-8 byte order mark at the start is no part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut dwords = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        let ok = code.len() <= 8 && code.chars().all(|c| c.is_ascii_hexdigit());
        match u32::from_str_radix(code, 16) {
            Ok(v) if ok => dwords.push(v),
            _ => {
                let why = if code.starts_with('@') {
                    "address lines are not read: the file is one dword a line from the first"
                } else {
                    "must be one dword: 1 to 8 hex digits"
                };
                let code: String = if code.chars().count() > 40 { code.chars().take(37).collect::<String>() + "..." } else { code.into() };
                bad.push(format!("input file `{shown}`: line {}: `{code}`: {why}", i + 1));
            }
        }
    }
    if bad.is_empty() {
        return Ok(dwords);
    }
    let more = bad.len().saturating_sub(SHOWN);
    bad.truncate(SHOWN);
    if more > 0 {
        bad.push(format!("input file `{shown}`: {more} more bad lines"));
    }
    Err(Error::Bad(bad.join("\n")))
}

/// `gpurtl disasm IN [--output OUT.txt]`: dwords to assembler lines, by the
/// block that offers `disasm`.
fn cmd_disasm(b: &dyn Block, o: &Opts, out: &mut dyn Write) -> Result<()> {
    const FORM: &str = "`gpurtl disasm IN [--output OUT.txt]` (IN.bin: raw little-endian dwords; any other name: a hex file, one dword a line)";
    let (input, output) = asm_files("disasm", o, FORM)?;
    let bytes = crate::json::read_bytes(&input, "IN")?;
    let dwords = if is_bin(&input) {
        if bytes.len() % 4 != 0 {
            return Err(Error::Bad(format!(
                "input file `{}`: {} bytes is not a whole number of dwords: a .bin file is raw little-endian dwords, 4 bytes each",
                input.display(),
                bytes.len()
            )));
        }
        bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    } else {
        hex_dwords(&input, &bytes)?
    };
    let text = b.disassemble(&dwords)?;
    match output {
        Some(path) => {
            emit::write_atomic(path, text.as_bytes()).map_err(|e| emit::output_error("--output", path, e))?;
            let _ = writeln!(out, "{}", path.display());
        }
        None => {
            let _ = write!(out, "{text}");
        }
    }
    Ok(())
}

/// `gpurtl prune`: the options and files; the pruning is the block's that
/// offers `prune`.
fn cmd_prune(b: &dyn Block, o: &Opts, out: &mut dyn Write) -> Result<()> {
    let input = o.input.as_ref().ok_or_else(|| Error::Bad("`prune` needs `--input IN.json`".into()))?;
    let output = o.output.as_ref().ok_or_else(|| Error::Bad("`prune` needs `--output OUT.json`".into()))?;
    let raw = o.prune_block.as_deref().unwrap_or("");
    let block = match raw.parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => n,
        _ => return Err(Error::Bad(format!("option `--block` = `{raw}`: must be an integer from 1 to 64"))),
    };
    let raw = o.threshold.as_deref().unwrap_or("");
    let threshold = match raw.parse::<i64>() {
        Ok(t) if t >= 0 => t,
        _ => return Err(Error::Bad(format!("option `--threshold` = `{raw}`: must be a non-negative integer"))),
    };
    emit::check_output("--output", output).map_err(Error::Bad)?;
    distinct_files(&[("--output", output)], &[("the `--input` file", input)])?;
    let (v, zeroed) = b.prune(crate::json::read(input, "--input")?, block, threshold)?;
    let text = serde_json::to_string(&v)? + "\n";
    emit::write_atomic(output, text.as_bytes()).map_err(|e| emit::output_error("--output", output, e))?;
    let _ = writeln!(out, "{}: {zeroed} non-zero values pruned", output.display());
    Ok(())
}

/// `--target` (default generic) and `--clock-mhz` (default 150 on ECP5, else 100).
fn target_and_clock(o: &Opts) -> Result<(synth::Target, f64)> {
    let target = synth::Target::parse(o.target.as_deref().unwrap_or("generic"))?;
    let default_mhz = if matches!(target, synth::Target::Ecp5(_)) { 150.0 } else { 100.0 };
    let clock_mhz = match o.clock_mhz.as_deref() {
        None => default_mhz,
        Some(raw) => match raw.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 2000.0 => f,
            _ => return Err(Error::Bad(format!("option `--clock-mhz` = `{raw}`: must be a number above 0 and at most 2000"))),
        },
    };
    Ok((target, clock_mhz))
}

/// The place-and-route seeds: `--seed N` (one), `--seeds 1,4,9` (a list) or
/// `--seeds K` (seeds 1 to K); by default 1, 2 and 3, since placement moves
/// Fmax by several per cent and a figure is the median over seeds.
fn pnr_seeds(o: &Opts) -> Result<Vec<u32>> {
    const MAX: u32 = i32::MAX as u32;
    let one = |opt: &str, raw: &str| {
        raw.trim()
            .parse::<u32>()
            .ok()
            .filter(|s| *s <= MAX)
            .ok_or_else(|| Error::Bad(format!("option `{opt}` = `{raw}`: must be an integer from 0 to {MAX}")))
    };
    match (o.seed.as_deref(), o.seeds.as_deref()) {
        (Some(_), Some(_)) => Err(Error::Bad("options `--seed` and `--seeds`: give one of them, not both".into())),
        (Some(raw), None) => Ok(vec![one("--seed", raw)?]),
        (None, None) => Ok(vec![1, 2, 3]),
        (None, Some(raw)) if !raw.contains(',') => {
            let k = raw.trim().parse::<u32>().ok().filter(|k| (1..=64).contains(k)).ok_or_else(|| {
                Error::Bad(format!("option `--seeds` = `{raw}`: must be a count from 1 to 64 or a comma-separated list of seeds"))
            })?;
            Ok((1..=k).collect())
        }
        (None, Some(raw)) => {
            let list = raw
                .split(',')
                .map(|s| {
                    one("--seeds", s).map_err(|_| {
                        Error::Bad(format!("option `--seeds` = `{raw}`: `{s}` must be an integer from 0 to {MAX}"))
                    })
                })
                .collect::<Result<Vec<u32>>>()?;
            let mut twice: Vec<u32> = Vec::new();
            for (i, s) in list.iter().enumerate() {
                if list[..i].contains(s) && !twice.contains(s) {
                    twice.push(*s);
                }
            }
            if !twice.is_empty() {
                let names: Vec<String> = twice.iter().map(|s| s.to_string()).collect();
                let (what, verb) = if twice.len() == 1 { ("seed", "is") } else { ("seeds", "are") };
                return Err(Error::Bad(format!(
                    "option `--seeds` = `{raw}`: {what} {} {verb} listed more than once; must list distinct seeds",
                    names.join(", ")
                )));
            }
            if list.len() > 64 {
                return Err(Error::Bad(format!("option `--seeds` = `{raw}`: lists {} seeds; must list at most 64", list.len())));
            }
            Ok(list)
        }
    }
}

fn dispatch(args: &[String], blocks: &[&dyn Block], out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let (cmd, o) = parse(args)?;
    let Some(mut o) = o else {
        // Help, the version or a completion script.
        let _ = write!(out, "{cmd}");
        return Ok(());
    };
    o.argv = std::iter::once("gpurtl".to_string()).chain(args.iter().cloned()).collect();
    let cli = Cli { blocks };
    match cmd.as_str() {
        "list" => cli.list(&o, out),
        "gen" => cli.gen(&o, out, err),
        "lint" => cli.lint(&o, out),
        "run" => cli.run(&o, out),
        "bench" => cli.bench(&o, out),
        "prune" => cmd_prune(cli.offering(&cmd)?, &o, out),
        "asm" => cmd_asm(cli.isa(&cmd, &o)?, &o, out),
        "disasm" => cmd_disasm(cli.isa(&cmd, &o)?, &o, out),
        "synth-table" => {
            let dir = o.block.as_deref().ok_or_else(|| Error::Bad("`synth-table` needs a directory of synth runs".into()))?;
            if dir.is_empty() {
                return Err(Error::Bad("argument `DIR` of `synth-table` = ``: is empty; must be a path".into()));
            }
            let t = synth::table(Path::new(dir))?;
            let _ = write!(out, "{t}");
            Ok(())
        }
        "sweep" => cli.sweep(&o, out),
        "cosim" => cli.cosim(&o, out),
        "regress" => cli.regress(&o, out, err),
        "collect" => cli.collect(&o, out),
        "job" => cli.job(&o, out, err),
        "synth" => cli.synth(&o, out),
        other => Err(Error::Bad(format!("unknown command `{other}`; see `gpurtl help`"))),
    }
}

/// Run the command line with every block; returns the exit status. Never
/// panics on user input.
pub fn main_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    main_with_blocks(args, &blocks::all(), out, err)
}

/// Run the command line with the blocks `blocks` (a test adds a composed
/// design of its own); returns the exit status.
pub fn main_with_blocks(args: &[String], blocks: &[&dyn Block], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match dispatch(args, blocks, out, err) {
        Ok(()) => 0,
        Err(Error::Usage(text)) => {
            let _ = writeln!(err, "{text}");
            2
        }
        Err(e) => {
            for line in e.message().lines() {
                let _ = writeln!(err, "error: {line}");
            }
            e.code()
        }
    }
}

#[cfg(test)]
mod tests {
    //! A block of this test only, which offers `asm`: the command line hands
    //! it the command through the registry, and refuses a command that no
    //! block offers.

    use super::main_with_blocks;
    use crate::block::{BenchOpts, BlockDef};
    use crate::error::Result;
    use gpurtl_hw::rtl::RtlError;
    use gpurtl_hw::Design;
    use gpurtl_params::{BlockParams, ParamErrors, ParamInfo};
    use gpurtl_sim::cosim::{Compiled, CosimError};
    use gpurtl_sim::models::InputErrors;
    use gpurtl_sim::rng::Rng;
    use serde_json::Value;
    use std::io::Write;
    use std::path::Path;

    #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
    struct NoParams {}

    impl BlockParams for NoParams {
        const BLOCK: &'static str = "hooked";
        fn table() -> Vec<ParamInfo> {
            Vec::new()
        }
        fn validate(&self) -> Result<(), ParamErrors> {
            Ok(())
        }
        fn presets() -> Vec<(&'static str, Self)> {
            vec![("default", NoParams {})]
        }
    }

    /// Assembles each word of its text into its length.
    struct Hooked;

    impl BlockDef for Hooked {
        type Params = NoParams;
        type Input = ();
        type Output = ();
        const SUMMARY: &'static str = "a block with an assembler and nothing else";
        const COMMANDS: &'static [&'static str] = &["asm"];

        fn build(_: &NoParams) -> Result<Design, RtlError> {
            unreachable!("the test builds no design")
        }
        fn parse_input(_: &NoParams, _: &Value) -> Result<(), InputErrors> {
            Ok(())
        }
        fn model(_: &NoParams, _: &()) -> Result<()> {
            Ok(())
        }
        fn rtl(_: &NoParams, _: &Compiled, _: &(), _: Option<&Path>) -> Result<(), CosimError> {
            Ok(())
        }
        fn output_json(_: &NoParams, _: &()) -> Value {
            Value::Null
        }
        fn random_input(_: &NoParams, _: &mut Rng) {}
        fn bench(_: &NoParams, _: &BenchOpts, _: &mut dyn Write) -> Result<Value> {
            Ok(Value::Null)
        }
        fn assemble(text: &str) -> Result<Vec<u32>> {
            Ok(text.split_whitespace().map(|w| w.len() as u32).collect())
        }
    }

    /// The command line with `Hooked` as its only block: (status, stdout, stderr).
    fn gpurtl(args: &[&str]) -> (i32, String, String) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main_with_blocks(&args, &[&Hooked], &mut out, &mut err);
        (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
    }

    #[test]
    fn a_block_plugs_in_its_own_commands() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("in.txt"), d.path().join("out.hex"));
        std::fs::write(&src, "ab cde\n").unwrap();
        let (src, dst) = (src.to_str().unwrap(), dst.to_str().unwrap());
        let (code, out, err) = gpurtl(&["asm", src, "--output", dst]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, format!("{dst}: 2 dwords (hex, one a line)\n"));
        assert_eq!(std::fs::read_to_string(dst).unwrap(), "00000002\n00000003\n");
        let (code, _, err) = gpurtl(&["disasm", dst]);
        assert_eq!(code, 2);
        assert_eq!(err, "error: unknown command `disasm`: no block offers it; see `gpurtl help`\n");
    }

    /// `synth`'s default folder differs with the preset and the parameters.
    #[test]
    fn synth_folders_name_the_preset_and_the_parameters() {
        let blocks = crate::blocks::all();
        let b = crate::blocks::find(&blocks, "compress").unwrap();
        let dir = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let o = super::parse(&args).unwrap().1.unwrap();
            let params = super::params_of(b, &o).unwrap();
            super::synth_dir(b, &o, &params, crate::synth::Target::Ecp5(crate::synth::Ecp5Part::U25F)).to_string_lossy().into_owned()
        };
        assert_eq!(dir(&["synth", "compress"]), "out/synth/compress-ecp5");
        assert_eq!(dir(&["synth", "compress", "--preset", "fpga"]), "out/synth/compress-fpga-ecp5");
        let w64 = dir(&["synth", "compress", "--param", "width=64"]);
        let w128 = dir(&["synth", "compress", "--param", "width=128"]);
        assert!(w64.starts_with("out/synth/compress-p") && w64.ends_with("-ecp5") && w64.len() == "out/synth/compress-p12345678-ecp5".len(), "{w64}");
        assert_ne!(w64, w128);
        assert!(dir(&["synth", "compress", "--preset", "fpga", "--param", "width=64"]).starts_with("out/synth/compress-fpga-p"));
    }
}
