//! Designs that instantiate designs. `compress_pair`, a block of this test
//! only, holds two compress units of different widths side by side, each
//! stream exposed under its own prefix. It is generated through the command
//! line (nested parameters on the command line and in JSON), linted with
//! `verilator -Wall` and checked by yosys, on its own and behind the
//! synthesis wrapper, and cosimulated channel by channel against the golden
//! model, both units on one simulation, each driven by its own agent.

use gpurtl_gen::bench::yosys_area;
use gpurtl_gen::block::{BenchOpts, Block, BlockDef};
use gpurtl_gen::cli::main_with_blocks;
use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::emit;
use gpurtl_hw::blocks::compress;
use gpurtl_hw::rtl::{ModuleBuilder, RtlError};
use gpurtl_hw::Design;
use gpurtl_params::compress::CompressParams;
use gpurtl_params::{nested_table, BlockParams, Checker, ParamErrors, ParamInfo};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::compress::{self as model, Op, Output};
use gpurtl_sim::models::{InputError, InputErrors};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::agents::Bench;
use gpurtl_sim::tb::compress as tb;
use gpurtl_sim::tb::Stalls;
use gpurtl_tests::seeds;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PairParams {
    narrow: CompressParams,
    wide: CompressParams,
}

impl Default for PairParams {
    fn default() -> Self {
        PairParams { narrow: CompressParams { width: 64, latency: 1, stream: false }, wide: CompressParams { width: 256, latency: 3, stream: false } }
    }
}

impl BlockParams for PairParams {
    const BLOCK: &'static str = "compress_pair";

    fn table() -> Vec<ParamInfo> {
        [nested_table("narrow", CompressParams::table()), nested_table("wide", CompressParams::table())].concat()
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let mut c = Checker::default();
        c.nested("narrow", self.narrow.validate());
        c.nested("wide", self.wide.validate());
        c.check(
            self.wide.width >= self.narrow.width,
            "wide.width",
            self.wide.width,
            format!("at least narrow.width ({})", self.narrow.width),
        );
        c.finish()
    }

    fn presets() -> Vec<(&'static str, Self)> {
        let twin = CompressParams { width: 128, latency: 2, stream: false };
        vec![("default", Self::default()), ("twins", PairParams { narrow: twin.clone(), wide: twin })]
    }
}

fn build(p: &PairParams) -> Result<Design, RtlError> {
    let mut b = ModuleBuilder::new("compress_pair");
    b.doc("Two compress units side by side (a composed design of the tests).");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    for (name, unit) in [("narrow", &p.narrow), ("wide", &p.wide)] {
        let d = compress::build(unit)?;
        let u = b.instance_of(&d, &format!("u_{name}"), &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
        b.expose(&u.stream("in"), &format!("{name}_in"));
        b.expose(&u.stream("out"), &format!("{name}_out"));
    }
    Ok(Design::of(b.finish()?, p))
}

/// The pair on the command line: a `run` input is one compress input per
/// channel, `{"narrow": {"ops": [...]}, "wide": {"ops": [...]}}`.
struct Pair;

impl BlockDef for Pair {
    type Params = PairParams;
    type Input = (Vec<Op>, Vec<Op>);
    type Output = (Output, Output);
    const SUMMARY: &'static str = "two compress units of different widths (a composed design of the tests)";

    fn build(p: &PairParams) -> Result<Design, RtlError> {
        build(p)
    }
    fn parse_input(p: &PairParams, input: &Value) -> Result<Self::Input, InputErrors> {
        let channel = |name: &str, width: u32| {
            model::parse_input(&input[name], width).map_err(|es| {
                InputErrors(es.0.into_iter().map(|e| InputError { field: format!("{name}.{}", e.field), ..e }).collect(), es.1)
            })
        };
        match (channel("narrow", p.narrow.width), channel("wide", p.wide.width)) {
            (Ok(n), Ok(w)) => Ok((n, w)),
            (n, w) => {
                let es: Vec<InputErrors> = n.err().into_iter().chain(w.err()).collect();
                let more: usize = es.iter().map(|e| e.1).sum();
                let all = InputErrors::new(es.into_iter().flat_map(|e| e.0).collect());
                Err(InputErrors(all.0, all.1 + more))
            }
        }
    }
    fn model(p: &PairParams, (n, w): &Self::Input) -> gpurtl_gen::error::Result<Self::Output> {
        Ok((model::run(n, p.narrow.latency), model::run(w, p.wide.latency)))
    }
    /// Both units on one simulation at once, each driven by its own agent.
    fn rtl(p: &PairParams, c: &Compiled, (n, w): &Self::Input, vcd: Option<&Path>) -> Result<Self::Output, CosimError> {
        let mut sim = c.start(vcd)?;
        let rst = sim.port("rst_i")?;
        let mut narrow = tb::CompressDriver::vector(&sim, "narrow_", p.narrow.width, n, None)?;
        let mut wide = tb::CompressDriver::vector(&sim, "wide_", p.wide.width, w, None)?;
        sim.reset(rst, 2);
        Bench::new(2000 + 40 * (n.len() + w.len()) as u64).run(&mut sim, &mut [&mut narrow, &mut wide])?;
        let outs = (narrow.outcome(&mut sim, n)?, wide.outcome(&mut sim, w)?);
        sim.trace_close();
        Ok(outs)
    }
    fn output_json(_: &PairParams, (n, w): &Self::Output) -> Value {
        json!({"narrow": n, "wide": w})
    }
    fn random_input(p: &PairParams, rng: &mut Rng) -> Self::Input {
        (tb::random_ops(rng, p.narrow.width, 8, None), tb::random_ops(rng, p.wide.width, 8, None))
    }
    fn bench(p: &PairParams, _: &BenchOpts, out: &mut dyn Write) -> gpurtl_gen::error::Result<Value> {
        let s = yosys_area(&build(p)?)?;
        let _ = writeln!(out, "compress_pair: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({"block": "compress_pair", "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops}))
    }
}

/// The command line with the pair beside the real blocks: (status, stdout, stderr).
fn gpurtl(args: &[&str]) -> (i32, String, String) {
    let mut blocks: Vec<&dyn Block> = gpurtl_gen::blocks::all();
    blocks.push(&Pair);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = main_with_blocks(&args, &blocks, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn units_of_different_widths_get_distinct_stable_names_and_their_own_banners() {
    let d = tempfile::tempdir().unwrap();
    let (code, out, err) = gpurtl(&["gen", "compress_pair", "-o", d.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let keys: Vec<String> =
        [PairParams::default().narrow, PairParams::default().wide].iter().map(|u| compress::build(u).unwrap().top().key.clone()).collect();
    let (narrow, wide) = (format!("gpurtl_compress_{}", &keys[0][..6]), format!("gpurtl_compress_{}", &keys[1][..6]));
    let list = read(d.path(), "compress_pair.f");
    let files: Vec<&str> = list.lines().filter(|l| !l.starts_with("//")).collect();
    assert_eq!(files, [format!("{narrow}.v"), format!("{wide}.v"), "compress_pair.v".to_string()]);
    // Each unit's file says which block and parameters it comes from; the
    // regenerate command is the composed design's, with nested parameters.
    let n = read(d.path(), &format!("{narrow}.v"));
    assert!(n.contains("// Block:      compress\n// Parameters: latency=1 stream=false width=64\n"), "{n}");
    assert!(n.contains(&format!("module {narrow} (")), "{n}");
    assert!(read(d.path(), &format!("{wide}.v")).contains("// Parameters: latency=3 stream=false width=256\n"));
    let top = read(d.path(), "compress_pair.v");
    assert!(
        top.contains("// Regenerate: gpurtl gen compress_pair --param narrow.latency=1 --param narrow.stream=false --param narrow.width=64 --param wide.latency=3 --param wide.stream=false --param wide.width=256 -o <dir>"),
        "{top}"
    );
    assert!(top.contains(&format!("  {narrow} u_narrow (")) && top.contains(&format!("  {wide} u_wide (")), "{top}");
    assert!(top.contains("  input  wire [255:0] wide_in_src_i,"), "{top}");
    let j: Value = serde_json::from_str(&read(d.path(), "compress_pair.json")).unwrap();
    assert_eq!(j["params"], json!({"narrow": {"width": 64, "latency": 1, "stream": false}, "wide": {"width": 256, "latency": 3, "stream": false}}));
    // The same files again, byte for byte.
    let again = tempfile::tempdir().unwrap();
    assert_eq!(gpurtl(&["gen", "compress_pair", "-o", again.path().to_str().unwrap()]).0, 0);
    for f in &files {
        assert_eq!(read(d.path(), f), read(again.path(), f), "{f}");
    }
}

#[test]
fn identical_units_are_emitted_once() {
    let design = build(&PairParams::presets()[1].1).unwrap();
    let e = design.elaborate();
    let names: Vec<&str> = e.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["gpurtl_compress", "compress_pair"]);
    assert_eq!(design.top().instances.len(), 2);
}

#[test]
fn nested_parameters_on_the_command_line_and_in_json() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("o");
    let o = o.to_str().unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress_pair", "--param", "narrow.width=128", "--param", "wide.latency=5", "-o", o]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&read(Path::new(o), "compress_pair.json")).unwrap();
    assert_eq!(j["params"], json!({"narrow": {"width": 128, "latency": 1, "stream": false}, "wide": {"width": 256, "latency": 5, "stream": false}}));
    // A params file, nested or with dotted names; a preset underneath.
    for (k, text) in [r#"{"wide": {"latency": 2}}"#, r#"{"wide.latency": 2}"#].iter().enumerate() {
        let f = d.path().join(format!("p{k}.json"));
        std::fs::write(&f, text).unwrap();
        let (code, _, err) = gpurtl(&["gen", "compress_pair", "--preset", "twins", "--params", f.to_str().unwrap(), "-o", o]);
        assert_eq!(code, 0, "{err}");
        let j: Value = serde_json::from_str(&read(Path::new(o), "compress_pair.json")).unwrap();
        assert_eq!(j["params"], json!({"narrow": {"width": 128, "latency": 2, "stream": false}, "wide": {"width": 128, "latency": 2, "stream": false}}), "{text}");
    }
    let bad = |args: &[&str], msg: &str| {
        let (code, _, err) = gpurtl(&[&["gen", "compress_pair"], args, &["-o", o]].concat());
        assert_eq!((code, err.as_str()), (2, msg), "{args:?}");
    };
    bad(&["--param", "narrow.width=100"], "error: parameter `narrow.width` = 100: must be a power of two from 64 to 1024\n");
    bad(
        &["--param", "narrow.widht=64"],
        "error: parameter `narrow.widht`: unknown for block `compress_pair`; known: narrow.width, narrow.latency, narrow.stream, wide.width, wide.latency, wide.stream\n",
    );
    bad(
        &["--param", "narrow.width=512", "--param", "narrow.latency=20"],
        "error: parameter `narrow.latency` = 20: must be an integer from 1 to 15 (2*log2(width/8)+3 layers at width 512)\n\
         error: parameter `wide.width` = 256: must be at least narrow.width (512)\n",
    );
    let (code, out, _) = gpurtl(&["list"]);
    assert_eq!(code, 0);
    assert!(out.contains("compress_pair: two compress units") && out.contains("  narrow.width default 64"), "{out}");
}

#[test]
fn verilator_lint_and_yosys_are_clean_alone_and_behind_the_wrapper() {
    let pair = build(&PairParams::default()).unwrap();
    let wrapped = gpurtl_hw::wrapper::wrap(&pair).unwrap();
    for (what, d) in [("pair", &pair), ("wrapped pair", &wrapped)] {
        gpurtl_tests::lint_and_synth_clean(what, d);
    }
    // The wrapper's files: the two units, the pair, the wrapper, in that order.
    let names: Vec<String> = emit::sources(&emit::files(&wrapped));
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(names[2..], ["compress_pair.v", "compress_pair_synth_wrap.v"]);
}

/// Each channel of the composed top against the golden model, with random
/// stalls, while the other channel sits idle.
#[test]
fn cosim_both_channels_against_the_model() {
    let p = PairParams::default();
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    for seed in seeds(40) {
        for (prefix, unit) in [("narrow_", &p.narrow), ("wide_", &p.wide)] {
            let mut rng = Rng::new(seed * 31 + unit.width as u64);
            let n = 1 + rng.below(30) as usize;
            let ops = tb::random_ops(&mut rng, unit.width, n, None);
            let stalls = (seed % 2 == 1).then(|| Stalls { seed, in_pct: rng.below(60) as u32, out_pct: rng.below(60) as u32 });
            let (got, _) = tb::run_at(&compiled, prefix, unit.width, &ops, stalls, None).unwrap_or_else(|e| panic!("{prefix} seed {seed}: {e}"));
            let want = model::run(&ops, unit.latency);
            assert_eq!(got.results, want.results, "{prefix} seed {seed}");
            if stalls.is_none() {
                assert_eq!(got.cycles, want.cycles, "{prefix} seed {seed}");
            }
        }
    }
}

/// `gpurtl run` of the composed design: both engines give the same file.
#[test]
fn run_with_both_engines_gives_the_same_file() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("in.json");
    let op = |w: usize| json!({"op": "compress", "element_bits": 8, "src": (0..w / 8).map(|i| i % 3).collect::<Vec<_>>()});
    std::fs::write(&input, json!({"narrow": {"ops": [op(64), op(64)]}, "wide": {"ops": [op(256)]}}).to_string()).unwrap();
    let mut outputs = Vec::new();
    for engine in ["model", "rtl"] {
        let o = d.path().join(format!("{engine}.json"));
        let (code, _, err) = gpurtl(&["run", "compress_pair", "--input", input.to_str().unwrap(), "--output", o.to_str().unwrap(), "--engine", engine]);
        assert_eq!(code, 0, "{engine}: {err}");
        outputs.push(read(d.path(), &format!("{engine}.json")));
    }
    assert_eq!(outputs[0], outputs[1]);
    let v: Value = serde_json::from_str(&outputs[0]).unwrap();
    assert_eq!(v["wide"]["results"][0]["count"], 21, "{v}");
    // A bad channel input names the channel.
    std::fs::write(&input, json!({"narrow": {"ops": [op(64)]}, "wide": {"ops": [op(64)]}}).to_string()).unwrap();
    let (code, _, err) = gpurtl(&["run", "compress_pair", "--input", input.to_str().unwrap(), "--output", d.path().join("x.json").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: input `wide.ops[0].src` = a list of 8 values: must be a list of 32 values"), "{err}");
}

/// docs/compose.md shows this file's code: each `rust` block of that page
/// is in this file, as it is.
#[test]
fn the_doc_samples_are_this_files_code() {
    let doc = std::fs::read_to_string(gpurtl_tests::repo().join("docs/compose.md")).unwrap();
    let samples: Vec<&str> = doc.split("```rust\n").skip(1).map(|s| s.split("```").next().unwrap()).collect();
    assert!(samples.len() >= 2, "docs/compose.md has {} rust samples", samples.len());
    for s in samples {
        assert!(include_str!("compose.rs").contains(s), "docs/compose.md shows code that tests/compose.rs does not hold:\n{s}");
    }
}
