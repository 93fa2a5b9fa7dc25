//! What the command line knows about a block.
//!
//! A block implements [`BlockDef`] once, in `gen/src/blocks/<block>.rs`: its
//! params type, how its design is built, how a `gpurtl run` input file is
//! read, the golden model, the testbench that runs the RTL, the output file
//! and the bench. Every [`BlockDef`] is a [`Block`], the object-safe form the
//! command line and the flows (synth, sweep, bench, run) use, with the
//! parameters as their resolved JSON object.
//!
//! A block may also offer commands of its own (`asm`, `disasm`, `prune`:
//! [`BlockDef::COMMANDS`] and their hooks) and designs for `gpurtl bench
//! harness` ([`BlockDef::harness`]); the command line finds them through
//! the registry, so that it names no block.

use crate::error::{Error, Result};
use crate::image::Image;
use crate::rtl_engine::compile_design;
use gpurtl_hw::rtl::RtlError;
use gpurtl_hw::Design;
use gpurtl_params::{BlockParams, ParamErrors, ParamInfo};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::RunStats;
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// Which engine `gpurtl run` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The golden model.
    Model,
    /// The generated Verilog, compiled by Verilator, driven by the block's testbench.
    Rtl,
}

/// What `gpurtl bench` gives a block besides its parameters.
#[derive(Clone, Debug)]
pub struct BenchOpts {
    /// `--random N`: random workloads to measure (blocks that list it in
    /// [`BlockDef::BENCH_OPTIONS`]).
    pub random: Option<u64>,
    /// `--seed S`: the seed of the random workloads.
    pub seed: Option<u64>,
    /// Where the JSON report goes; charts go beside it, named after it.
    pub report: std::path::PathBuf,
    /// The bench's progress on stderr: a bench says how many steps it
    /// measures ([`BenchOpts::steps`]) and each one done ([`BenchOpts::done`]).
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
}

impl BenchOpts {
    /// The bench measures `n` steps (said once, before the first).
    pub fn steps(&self, n: u64) {
        if let Some(p) = &self.progress {
            p.set_total(n);
        }
    }
    /// Step `what` is running (shown on a terminal's bar).
    pub fn running(&self, what: &str) {
        if let Some(p) = &self.progress {
            p.running(what);
        }
    }
    /// Step `what` is done.
    pub fn done(&self, what: &str) {
        if let Some(p) = &self.progress {
            p.done(what);
        }
    }
    /// A chart's path: beside the report, `<report stem>-<name>`.
    pub fn beside(&self, name: &str) -> std::path::PathBuf {
        let stem = self.report.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
        self.report.with_file_name(format!("{stem}-{name}"))
    }
}

/// Runs a block's testbench once on its workload.
pub type TestbenchRun = Box<dyn Fn(&Compiled) -> Result<RunStats>>;

/// One design of `gpurtl bench harness`: the testbench's rate on a real
/// workload against a native Verilator loop of the same design.
pub struct HarnessPoint {
    pub label: &'static str,
    /// The harness table lists its points by `order`, then in registry order.
    pub order: u32,
    pub design: Design,
    pub run: TestbenchRun,
    /// A whole `gpurtl run BLOCK --engine rtl` to time at this point, on a
    /// small and a large input: its marginal rate (the cycles and seconds
    /// between the two) against the native loop.
    pub whole: Option<WholeRun>,
}

/// The inputs of a whole-run measurement ([`HarnessPoint::whole`]): the
/// parameters, and a small and a large `--input` file's text (whose results
/// report `cycles`).
pub struct WholeRun {
    pub params: Value,
    pub small: String,
    pub large: String,
}

/// A hook of a command the block does not offer.
fn not_offered(block: &str, cmd: &str) -> Error {
    Error::Bad(format!("block `{block}` offers no `{cmd}`"))
}

/// A block, typed: everything the command line needs, in one place.
pub trait BlockDef: Sync + 'static {
    type Params: BlockParams + Sync;
    /// A `gpurtl run` workload, checked against the parameters.
    type Input;
    /// What a run gives: results, cycle counts, counters.
    type Output;
    /// One line for `gpurtl list`.
    const SUMMARY: &'static str;

    fn build(p: &Self::Params) -> Result<Design, RtlError>;
    /// Read a `gpurtl run` input file; every violation, each naming its field.
    fn parse_input(p: &Self::Params, input: &Value) -> Result<Self::Input, InputErrors>;
    /// [`BlockDef::parse_input`] for an input file in folder `base`: blocks
    /// whose input names other files (relative to it) read them here.
    fn parse_input_in(p: &Self::Params, input: &Value, _base: &Path) -> Result<Self::Input, InputErrors> {
        Self::parse_input(p, input)
    }
    /// `gpurtl run --input` with a file that is not JSON: the block's text
    /// form of an input, as the JSON input it stands for (then read by
    /// [`BlockDef::parse_input`]); an error names the line: `Error::Bad` with
    /// one line per problem (the command line puts the file's name before
    /// each). `None`: the block has no text form, and the file's JSON error
    /// is reported. Called only for a file that is not JSON and does not
    /// start with `{` or `[` (a broken JSON file gets its JSON error).
    fn text_input(_p: &Self::Params, _text: &str) -> Option<Result<Value>> {
        None
    }
    /// The golden model.
    /// The golden model (an error: a run the model refuses, e.g. past its
    /// cycle budget; exit 2).
    fn model(p: &Self::Params, input: &Self::Input) -> Result<Self::Output>;
    /// Output fields the golden model does not model at these parameters
    /// (with `mem_if = axi4` a block whose ports share the AXI read channel
    /// runs at a pace the model, written for its native ports, does not
    /// know): the RTL's own figures, left out when the engines are compared.
    fn unmodeled(_p: &Self::Params) -> &'static [&'static str] {
        &[]
    }
    /// The RTL through the block's testbench (`vcd`: a waveform of the run).
    fn rtl(p: &Self::Params, compiled: &Compiled, input: &Self::Input, vcd: Option<&Path>) -> Result<Self::Output, CosimError>;
    /// The `gpurtl run` output file; both engines give the same one.
    fn output_json(p: &Self::Params, output: &Self::Output) -> Value;
    /// A short random workload that reaches the block's corner cases (for
    /// the parameter-space test).
    fn random_input(p: &Self::Params, rng: &mut Rng) -> Self::Input;
    /// The options of `gpurtl bench` this block reads besides `--json`
    /// (`--random`, `--seed`); any other is refused.
    const BENCH_OPTIONS: &'static [&'static str] = &[];
    /// `gpurtl bench`: measure the block's figures, print a table on `out`,
    /// return the JSON report.
    fn bench(p: &Self::Params, o: &BenchOpts, out: &mut dyn Write) -> Result<Value>;
    /// `gpurtl run --image`: the input file with the picture in place of
    /// the block's own picture input. Blocks that take none refuse it.
    fn with_image(_p: &Self::Params, _input: Value, _img: &Image) -> Result<Value> {
        Err(Error::Bad(format!("option `--image`: block `{}` takes no picture", Self::Params::BLOCK)))
    }
    /// `gpurtl run --output-image`, before the run: whether a run of
    /// `input` gives a picture (an error saying why not).
    fn gives_image(_p: &Self::Params, _input: &Value) -> Result<()> {
        Err(Error::Bad(format!("option `--output-image`: block `{}` gives no picture", Self::Params::BLOCK)))
    }
    /// `gpurtl run --output-image`: the picture of a run's output file
    /// (`input`: the input file the run was given).
    fn output_image(_p: &Self::Params, _input: &Value, _output: &Value) -> Result<Image> {
        Err(Error::Bad(format!("option `--output-image`: block `{}` gives no picture", Self::Params::BLOCK)))
    }
    /// The commands of its own this block offers: `asm`, `disasm`, `prune`.
    /// The command line hands each to the first block (in registry order)
    /// that lists it; the hooks of the others refuse.
    const COMMANDS: &'static [&'static str] = &[];
    /// `gpurtl asm`: assembler text to dwords; an error is `Error::Bad` with
    /// one line per problem (the command line puts the file's name before
    /// each).
    fn assemble(_text: &str) -> Result<Vec<u32>> {
        Err(not_offered(Self::Params::BLOCK, "asm"))
    }
    /// `gpurtl disasm`: dwords to assembler text.
    fn disassemble(_dwords: &[u32]) -> Result<String> {
        Err(not_offered(Self::Params::BLOCK, "disasm"))
    }
    /// `gpurtl prune`: the input file with its matrices' `block` x `block`
    /// blocks whose |sum| is below `threshold` zeroed, and how many non-zero
    /// values that zeroed.
    fn prune(_input: Value, _block: usize, _threshold: i64) -> Result<(Value, usize)> {
        Err(not_offered(Self::Params::BLOCK, "prune"))
    }
    /// `gpurtl bench harness`: the designs this block adds to the harness
    /// bench (none by default).
    fn harness() -> Result<Vec<HarnessPoint>> {
        Ok(Vec::new())
    }
}

/// A block as the command line sees it; parameters travel as their resolved
/// JSON object.
pub trait Block: Sync {
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    fn table(&self) -> Vec<ParamInfo>;
    fn defaults(&self) -> Value;
    fn presets(&self) -> Vec<(&'static str, Value)>;
    /// What a preset is for (see [`BlockParams::preset_doc`]).
    fn preset_doc(&self, name: &str) -> &'static str;
    /// Defaults, then each JSON object of `layers` (a preset, a file), then
    /// `KEY=VALUE` pairs; type-checked and validated: the resolved set.
    fn resolve(&self, layers: &[&Value], pairs: &[(String, String)]) -> Result<Value, ParamErrors>;
    fn design(&self, params: &Value) -> Result<Design>;
    /// The JSON input a text input file stands for (see [`BlockDef::text_input`]).
    fn text_input(&self, params: &Value, text: &str) -> Option<Result<Value>>;
    /// Read a `gpurtl run` input as [`Block::run`] does, and stop there: no
    /// model, no RTL (the input fuzz test, tests/fuzz.rs).
    fn check_input(&self, params: &Value, input: &Value, base: &Path) -> Result<()>;
    /// `base`: the folder of the input file (its relative paths start there).
    fn run(&self, params: &Value, input: &Value, base: &Path, engine: Engine, vcd: Option<&Path>) -> Result<Value>;
    fn bench_options(&self) -> &'static [&'static str];
    fn bench(&self, params: &Value, o: &BenchOpts, out: &mut dyn Write) -> Result<Value>;
    /// Both engines on a random workload from `seed`: `Ok(None)` when the
    /// output files agree, else the two (model, RTL).
    fn self_check(&self, params: &Value, compiled: &Compiled, seed: u64) -> Result<Option<(Value, Value)>>;
    fn with_image(&self, params: &Value, input: Value, img: &Image) -> Result<Value>;
    fn gives_image(&self, params: &Value, input: &Value) -> Result<()>;
    fn output_image(&self, params: &Value, input: &Value, output: &Value) -> Result<Image>;
    /// See [`BlockDef::COMMANDS`] and the hooks after it.
    fn commands(&self) -> &'static [&'static str];
    fn assemble(&self, text: &str) -> Result<Vec<u32>>;
    fn disassemble(&self, dwords: &[u32]) -> Result<String>;
    fn prune(&self, input: Value, block: usize, threshold: i64) -> Result<(Value, usize)>;
    fn harness(&self) -> Result<Vec<HarnessPoint>>;
}

fn typed<P: BlockParams>(params: &Value) -> Result<P> {
    serde_json::from_value(params.clone()).map_err(|e| Error::Bad(format!("parameters of block `{}`: {e}", P::BLOCK)))
}

impl<T: BlockDef> Block for T {
    fn name(&self) -> &'static str {
        T::Params::BLOCK
    }
    fn summary(&self) -> &'static str {
        T::SUMMARY
    }
    fn table(&self) -> Vec<ParamInfo> {
        T::Params::table()
    }
    fn defaults(&self) -> Value {
        serde_json::to_value(T::Params::default()).unwrap_or(Value::Null)
    }
    fn presets(&self) -> Vec<(&'static str, Value)> {
        T::Params::presets().into_iter().map(|(n, p)| (n, serde_json::to_value(p).unwrap_or(Value::Null))).collect()
    }
    fn preset_doc(&self, name: &str) -> &'static str {
        T::Params::preset_doc(name)
    }
    fn resolve(&self, layers: &[&Value], pairs: &[(String, String)]) -> Result<Value, ParamErrors> {
        let p: T::Params = gpurtl_params::resolve(layers, pairs)?;
        Ok(serde_json::to_value(p).unwrap_or(Value::Null))
    }
    fn design(&self, params: &Value) -> Result<Design> {
        Ok(T::build(&typed(params)?)?)
    }
    fn text_input(&self, params: &Value, text: &str) -> Option<Result<Value>> {
        match typed(params) {
            Ok(p) => T::text_input(&p, text),
            Err(e) => Some(Err(e)),
        }
    }
    fn check_input(&self, params: &Value, input: &Value, base: &Path) -> Result<()> {
        T::parse_input_in(&typed(params)?, input, base)?;
        Ok(())
    }
    fn run(&self, params: &Value, input: &Value, base: &Path, engine: Engine, vcd: Option<&Path>) -> Result<Value> {
        let p = typed(params)?;
        let input = T::parse_input_in(&p, input, base)?;
        let output = match engine {
            Engine::Model => T::model(&p, &input)?,
            Engine::Rtl => {
                let compiled = compile_design(&T::build(&p)?)?;
                T::rtl(&p, &compiled, &input, vcd)?
            }
        };
        Ok(T::output_json(&p, &output))
    }
    fn bench_options(&self) -> &'static [&'static str] {
        T::BENCH_OPTIONS
    }
    fn bench(&self, params: &Value, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        T::bench(&typed(params)?, o, out)
    }
    fn self_check(&self, params: &Value, compiled: &Compiled, seed: u64) -> Result<Option<(Value, Value)>> {
        let p = typed(params)?;
        let input = T::random_input(&p, &mut Rng::new(seed));
        let mut want = T::output_json(&p, &T::model(&p, &input)?);
        let mut got = T::output_json(&p, &T::rtl(&p, compiled, &input, None)?);
        for f in T::unmodeled(&p) {
            for v in [&mut want, &mut got] {
                if let Some(o) = v.as_object_mut() {
                    o.remove(*f);
                }
            }
        }
        Ok((want != got).then_some((want, got)))
    }
    fn with_image(&self, params: &Value, input: Value, img: &Image) -> Result<Value> {
        T::with_image(&typed(params)?, input, img)
    }
    fn gives_image(&self, params: &Value, input: &Value) -> Result<()> {
        T::gives_image(&typed(params)?, input)
    }
    fn output_image(&self, params: &Value, input: &Value, output: &Value) -> Result<Image> {
        T::output_image(&typed(params)?, input, output)
    }
    fn commands(&self) -> &'static [&'static str] {
        T::COMMANDS
    }
    fn assemble(&self, text: &str) -> Result<Vec<u32>> {
        T::assemble(text)
    }
    fn disassemble(&self, dwords: &[u32]) -> Result<String> {
        T::disassemble(dwords)
    }
    fn prune(&self, input: Value, block: usize, threshold: i64) -> Result<(Value, usize)> {
        T::prune(input, block, threshold)
    }
    fn harness(&self) -> Result<Vec<HarnessPoint>> {
        T::harness()
    }
}
