//! The `gpurtl` command line's grammar, in clap's derive API: one struct of
//! options a command. Each command declares exactly the options it reads,
//! so an option it does not read is an error, and an option given twice is
//! an error (clap's default for a single value); `--param` is the one
//! repeatable option. Values stay text here: `cli` checks each one and names
//! the option, the value and what is allowed. Usage errors become exit 2
//! with a message in the house's form ([`usage_error`]).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, Parser, Subcommand};

/// gpurtl: GPU and accelerator blocks as synthesizable Rust; Verilog out,
/// cosimulated in Verilator against a Rust golden model.
#[derive(Parser, Debug)]
#[command(
    name = "gpurtl",
    version = crate::emit::VERSION,
    arg_required_else_help = true,
    disable_version_flag = false,
    after_help = "Parameters (gen, run, lint, bench, synth, sweep, cosim, regress):\n  \
                  -p, --param KEY=VALUE   set one parameter (repeatable)\n  \
                  --params FILE.json      a JSON object of parameters\n  \
                  --preset NAME           start from a named preset (see `gpurtl list`)\n\n\
                  Exit status: 0 success; 2 bad parameters, arguments, input or output path; 1 a tool failed.\n\
                  Each block's page: docs/<block>.md; the command line: docs/cli.md."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The parameters a command reads: `--param` (repeatable), `--params`,
/// `--preset`.
#[derive(Args, Debug, Default)]
pub struct Params {
    /// Set one parameter (repeatable).
    #[arg(allow_hyphen_values = true, short = 'p', long = "param", value_name = "KEY=VALUE", action = clap::ArgAction::Append)]
    pub param: Vec<String>,
    /// A JSON object of parameters.
    #[arg(allow_hyphen_values = true, long = "params", value_name = "FILE.json")]
    pub params: Option<String>,
    /// Start from a named preset (see `gpurtl list`).
    #[arg(allow_hyphen_values = true, long = "preset", value_name = "NAME")]
    pub preset: Option<String>,
}

/// Job resources and where jobs go (`sweep`, `regress`).
#[derive(Args, Debug, Default)]
pub struct Emit {
    /// Write the jobs into FILE instead of running them (docs/jobs.md).
    #[arg(allow_hyphen_values = true, long = "emit", value_name = "FILE")]
    pub emit: Option<String>,
    /// The format of `--emit`: jsonl (default), parallel, slurm, make or gha.
    #[arg(allow_hyphen_values = true, long = "emit-format", value_name = "F")]
    pub emit_format: Option<String>,
    /// A job's time limit, in seconds.
    #[arg(allow_hyphen_values = true, long = "timeout-s", value_name = "S")]
    pub timeout_s: Option<String>,
    /// A job's memory, in MB.
    #[arg(allow_hyphen_values = true, long = "mem-mb", value_name = "M")]
    pub mem_mb: Option<String>,
}

/// A synthesis's target, clock, placement seeds and folder (`synth`,
/// `sweep`).
#[derive(Args, Debug, Default)]
pub struct Synthesis {
    /// generic, ice40, ecp5 (an LFE5U-25F) or ecp5-85k (an LFE5U-85F).
    #[arg(allow_hyphen_values = true, long, value_name = "T")]
    pub target: Option<String>,
    /// The clock constraint, MHz.
    #[arg(allow_hyphen_values = true, long = "clock-mhz", value_name = "F")]
    pub clock_mhz: Option<String>,
    /// One placement seed.
    #[arg(allow_hyphen_values = true, long, value_name = "N")]
    pub seed: Option<String>,
    /// Placement seeds: a list (1,2,3, the default) or a count K.
    #[arg(allow_hyphen_values = true, long, value_name = "LIST|K")]
    pub seeds: Option<String>,
    /// The report's folder.
    #[arg(allow_hyphen_values = true, short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Blocks, their parameters, defaults and allowed values; with
    /// `--markdown` or `--table`, one block's tables.
    List {
        /// A block (default: every block).
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// The block names only, one a line.
        #[arg(long)]
        names: bool,
        /// The block's tables as Markdown (docs/<block>.md holds them).
        #[arg(long)]
        markdown: bool,
        /// One table: params, presets or ports (ports: at the parameters given).
        #[arg(allow_hyphen_values = true, long, value_name = "T")]
        table: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// Write Verilog, a filelist DIR/<top>.f and DIR/<top>.json.
    Gen {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// Every block at its defaults, each in DIR/<block>.
        #[arg(long)]
        all: bool,
        /// The output folder.
        #[arg(allow_hyphen_values = true, short = 'o', long = "out", value_name = "DIR")]
        out: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// Run a workload through the golden model or the RTL (cmdproc: IN may
    /// also be a run file in assembler text; docs/cmdproc.md).
    Run {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// The workload (JSON).
        #[arg(allow_hyphen_values = true, long, value_name = "IN.json")]
        input: Option<String>,
        /// The result (JSON).
        #[arg(allow_hyphen_values = true, long, value_name = "OUT.json")]
        output: Option<String>,
        /// model (default) or rtl.
        #[arg(allow_hyphen_values = true, long, value_name = "ENGINE")]
        engine: Option<String>,
        /// The run budget in cycles (default: 4194304 and 1024 a byte of
        /// input; docs/cli.md, Run budget).
        #[arg(allow_hyphen_values = true, long = "max-cycles", value_name = "N")]
        max_cycles: Option<String>,
        /// A waveform of the RTL run.
        #[arg(allow_hyphen_values = true, long, value_name = "FILE")]
        vcd: Option<String>,
        /// (texture) a picture as the texture.
        #[arg(allow_hyphen_values = true, long, value_name = "IN.png")]
        image: Option<String>,
        /// (texture) the conv result as a picture.
        #[arg(allow_hyphen_values = true, long = "output-image", value_name = "OUT.png")]
        output_image: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// verilator --lint-only -Wall and yosys synth + check -assert.
    Lint {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// Measure the block's figures (table + JSON); `bench harness`: the
    /// cosimulation harness against a native Verilator loop.
    Bench {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// The figures as JSON, here.
        #[arg(allow_hyphen_values = true, long, value_name = "FILE")]
        json: Option<String>,
        /// (scheduler) N random mixes.
        #[arg(allow_hyphen_values = true, long, value_name = "N")]
        random: Option<String>,
        /// (scheduler) the random mixes' seed.
        #[arg(allow_hyphen_values = true, long, value_name = "S")]
        seed: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// yosys (+ nextpnr) report: cells, LUTs, FFs, DSPs, Fmax (median over
    /// the placement seeds).
    Synth {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        #[command(flatten)]
        synth: Synthesis,
        #[command(flatten)]
        params: Params,
    },
    /// A Markdown table of the synth reports under DIR.
    #[command(name = "synth-table")]
    SynthTable {
        #[arg(value_name = "DIR")]
        dir: Option<String>,
    },
    /// Synthesis per point of `--param K=V1,V2,...` in parallel; CSV, JSON
    /// and an SVG plot; or a job a point (`--emit`).
    Sweep {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        #[command(flatten)]
        synth: Synthesis,
        /// Points from the lists side by side, not their product.
        #[arg(long)]
        zip: bool,
        /// Run point I only (a job): DIR/runI/result.json.
        #[arg(allow_hyphen_values = true, long, value_name = "I")]
        point: Option<String>,
        #[command(flatten)]
        emit: Emit,
        #[command(flatten)]
        params: Params,
    },
    /// The RTL against the golden model on each seed's random workload;
    /// DIR/result.json; exit 1 on a mismatch.
    Cosim {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// N (seeds 0 to N-1) or A..B (A to B-1).
        #[arg(allow_hyphen_values = true, long, value_name = "N|A..B")]
        seeds: Option<String>,
        /// One seed.
        #[arg(allow_hyphen_values = true, long, value_name = "N")]
        seed: Option<String>,
        #[arg(allow_hyphen_values = true, short = 'o', long = "out", value_name = "DIR")]
        out: Option<String>,
        #[command(flatten)]
        params: Params,
    },
    /// Cosim jobs at N points: the manifest DIR/jobs.jsonl, run here, or
    /// with `--emit` rendered into FILE.
    Regress {
        #[arg(value_name = "BLOCK")]
        block: Option<String>,
        /// Every block.
        #[arg(long)]
        all: bool,
        /// Points (default 1: the parameters given).
        #[arg(allow_hyphen_values = true, long, value_name = "N")]
        points: Option<String>,
        /// The seed the further points are drawn from.
        #[arg(allow_hyphen_values = true, long = "points-seed", value_name = "R")]
        points_seed: Option<String>,
        /// Seeds a point (default 200).
        #[arg(allow_hyphen_values = true, long, value_name = "N|A..B")]
        seeds: Option<String>,
        /// Seeds a job (default 100).
        #[arg(allow_hyphen_values = true, long = "seeds-per-job", value_name = "K")]
        seeds_per_job: Option<String>,
        #[arg(allow_hyphen_values = true, short = 'o', long = "out", value_name = "DIR")]
        out: Option<String>,
        #[command(flatten)]
        emit: Emit,
        #[command(flatten)]
        params: Params,
    },
    /// Run job N (from 0) of a manifest (a Slurm array task).
    Job {
        #[arg(value_name = "MANIFEST")]
        manifest: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "N")]
        index: Option<String>,
    },
    /// Merge the jobs' DIR/<id>/result.json into DIR/collected.json and .csv.
    Collect {
        #[arg(value_name = "DIR")]
        dir: Option<String>,
    },
    /// Assemble PM4 packet lines (or with `--isa cu` kernel lines) into
    /// dwords: OUT ending in .bin gets raw little-endian dwords, any other
    /// name a $readmemh hex file.
    Asm {
        #[arg(value_name = "IN.txt")]
        input: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "OUT")]
        output: Option<String>,
        /// pm4 (default) or cu.
        #[arg(allow_hyphen_values = true, long, value_name = "ISA")]
        isa: Option<String>,
    },
    /// PM4 dwords (or with `--isa cu` kernel instructions) to lines, on
    /// stdout or into OUT.txt.
    Disasm {
        #[arg(value_name = "IN")]
        input: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "OUT.txt")]
        output: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "ISA")]
        isa: Option<String>,
    },
    /// Block pruning (seed 004) of a systolic input: every N x N block of
    /// `a` and `b` whose |sum| < T becomes zero.
    Prune {
        #[arg(allow_hyphen_values = true, long, value_name = "IN.json")]
        input: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "OUT.json")]
        output: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "N")]
        block: Option<String>,
        #[arg(allow_hyphen_values = true, long, value_name = "T")]
        threshold: Option<String>,
    },
    /// The version.
    Version,
    /// A shell completion script (bash, zsh, fish, elvish or powershell) on
    /// stdout.
    Completions {
        #[arg(value_name = "SHELL")]
        shell: Option<String>,
    },
}

/// A clap error in the house's form: exit 2, one line naming the option
/// (`option `--seed` is not used by `gen``, `option `--input` is given
/// twice`), and a pointer to the command's help. Help and version requests
/// are not errors: `Ok(text)` to print on standard output.
pub fn usage_error(e: &clap::Error, cmd: Option<&str>) -> Result<String, String> {
    let help = match cmd {
        Some(c) => format!("see `gpurtl {c} --help`"),
        None => "see `gpurtl help`".to_string(),
    };
    let arg = || match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => match s.split([' ', '=']).next().unwrap_or(s) {
            "-o" => "--out".to_string(),
            "-p" => "--param".to_string(),
            a => a.to_string(),
        },
        _ => String::new(),
    };
    let value = || match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(e.render().to_string()),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Err(e.render().to_string().trim_end().to_string()),
        ErrorKind::UnknownArgument => {
            let a = arg();
            match cmd {
                Some(c) if a.starts_with('-') => Err(format!("option `{a}` is not used by `{c}`; {help}")),
                Some(c) => Err(format!("unexpected argument `{a}` to `{c}`; {help}")),
                None if a.starts_with('-') => Err(format!("unknown option `{a}`; {help}")),
                None => Err(format!("unexpected argument `{a}`; {help}")),
            }
        }
        ErrorKind::ArgumentConflict => {
            let a = arg();
            match e.get(ContextKind::PriorArg) {
                Some(ContextValue::String(p)) if p.split([' ', '=']).next() == Some(a.as_str()) => {
                    Err(format!("option `{a}` is given twice; give it once"))
                }
                _ => Err(format!("option `{a}` cannot be used here; {help}")),
            }
        }
        ErrorKind::InvalidSubcommand => {
            let sub = match e.get(ContextKind::InvalidSubcommand) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            Err(format!("unknown command `{sub}`; see `gpurtl help`"))
        }
        ErrorKind::InvalidValue | ErrorKind::NoEquals if value().is_empty() => Err(format!("option `{}` needs a value", arg())),
        _ => Err(e.render().to_string().trim_end().trim_start_matches("error: ").to_string()),
    }
}
