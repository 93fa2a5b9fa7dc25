//! The command line: every invalid parameter and malformed input file gets
//! its exact message and exit status 2; the happy paths write what they say.

use gpurtl_tests::gpurtl;
use std::path::Path;

fn bad(args: &[&str], message: &str) {
    let (code, out, err) = gpurtl(args);
    assert_eq!(code, 2, "{args:?}: stdout {out} stderr {err}");
    assert_eq!(err, message, "{args:?}");
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs `gpurtl run BLOCK [params] --input input` with the model and with the
/// RTL, asserts both succeed with byte-identical output files, and returns
/// the file's JSON.
fn both_engines(dir: &Path, block: &str, params: &[&str], input: &str) -> serde_json::Value {
    let out = |engine: &str| dir.join(format!("{block}-{}-{engine}.json", params.join("_")));
    for engine in ["model", "rtl"] {
        let o = out(engine);
        let args = [&["run", block][..], params, &["--input", input, "--output", o.to_str().unwrap(), "--engine", engine]].concat();
        let (code, _, err) = gpurtl(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let m = std::fs::read_to_string(out("model")).unwrap();
    assert_eq!(m, std::fs::read_to_string(out("rtl")).unwrap(), "{block} {params:?}");
    serde_json::from_str(&m).unwrap()
}

#[test]
fn invalid_parameters() {
    bad(
        &["gen", "compress", "--param", "width=100", "-o", "x"],
        "error: parameter `width` = 100: must be a power of two from 64 to 1024\n",
    );
    bad(
        &["gen", "compress", "--param", "width=2048", "-o", "x"],
        "error: parameter `width` = 2048: must be a power of two from 64 to 1024\n",
    );
    bad(
        &["gen", "compress", "--param", "width=32", "-o", "x"],
        "error: parameter `width` = 32: must be a power of two from 64 to 1024\n",
    );
    bad(
        &["gen", "compress", "--param", "latency=0", "-o", "x"],
        "error: parameter `latency` = 0: must be an integer from 1 to 11 (2*log2(width/8)+3 layers at width 128)\n",
    );
    bad(
        &["gen", "compress", "--param", "width=64", "--param", "latency=10", "-o", "x"],
        "error: parameter `latency` = 10: must be an integer from 1 to 9 (2*log2(width/8)+3 layers at width 64)\n",
    );
    bad(
        &["gen", "compress", "--param", "width=abc", "-o", "x"],
        "error: parameter `width` = `abc`: must be a power of two from 64 to 1024\n",
    );
    bad(
        &["gen", "compress", "--param", "widht=128", "-o", "x"],
        "error: parameter `widht`: unknown for block `compress`; known: width, latency, stream\n",
    );
    // Every violation is reported, not only the first.
    bad(
        &["gen", "compress", "--param", "width=100", "--param", "latency=0", "-o", "x"],
        "error: parameter `width` = 100: must be a power of two from 64 to 1024\n\
         error: parameter `latency` = 0: must be an integer from 1 to 17\n",
    );
    bad(&["gen", "compress", "--param", "width", "-o", "x"], "error: option `--param` = `width`: must be KEY=VALUE\n");
    bad(
        &["gen", "compress", "--preset", "huge", "-o", "x"],
        "error: preset `huge` of block `compress`: must be one of default, small, wide, max, fpga, stream\n",
    );
    bad(&["gen", "nosuch", "-o", "x"], "error: unknown block `nosuch`; blocks: compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu\n");
    bad(&["gen", "compress"], "error: `gen` needs `-o DIR`\n");
    bad(&["frobnicate"], "error: unknown command `frobnicate`; see `gpurtl help`\n");
}

#[test]
fn invalid_params_file() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", r#"{"width": "wide"}"#);
    bad(
        &["gen", "compress", "--params", &f, "-o", "x"],
        "error: parameter `width` = \"wide\": must be a power of two from 64 to 1024\n",
    );
    let f = write(d.path(), "q.json", "[1, 2]");
    bad(
        &["gen", "compress", "--params", &f, "-o", "x"],
        "error: parameter `(params file)` = [1,2]: must be a JSON object of parameter names to values\n",
    );
    let f = write(d.path(), "r.json", "{");
    let (code, _, err) = gpurtl(&["gen", "compress", "--params", &f, "-o", "x"]);
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("error: params file `{f}`: not valid JSON: ")), "{err}");
}

fn run_input(input: &str) -> (i32, String) {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", input);
    let o = d.path().join("out.json");
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &i, "--output", o.to_str().unwrap()]);
    assert!(!o.exists() || code == 0, "no output file is written on error");
    (code, err)
}

fn bad_input(input: &str, message: &str) {
    let (code, err) = run_input(input);
    assert_eq!(code, 2, "{input}: {err}");
    assert_eq!(err, format!("error: {message}\n"), "{input}");
}

#[test]
fn malformed_inputs() {
    bad_input("[]", "input `(file)` = []: must be a JSON object with an `ops` list");
    bad_input("{}", "input `ops` = (missing): must be a list of operations");
    bad_input(r#"{"ops": 3}"#, "input `ops` = 3: must be a list of operations");
    bad_input(r#"{"ops": [], "extra": 1}"#, "input `extra` = (given): must be absent: the only key is `ops`");
    bad_input(r#"{"ops": [7]}"#, "input `ops[0]` = 7: must be an object");
    bad_input(
        r#"{"ops": [{"op": "squash", "element_bits": 8, "src": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]}"#,
        "input `ops[0].op` = \"squash\": must be \"compress\" or \"expand\"",
    );
    bad_input(
        r#"{"ops": [{"element_bits": 8, "src": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]}"#,
        "input `ops[0].op` = (missing): must be \"compress\" or \"expand\"",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 12, "src": []}]}"#,
        "input `ops[0].element_bits` = 12: must be 8, 16, 32 or 64",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64, "src": [1]}]}"#,
        "input `ops[0].src` = a list of 1 values: must be a list of 2 values (width 128 / element_bits 64)",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64}]}"#,
        "input `ops[0].src` = (missing): must be a list of 2 unsigned integers",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 32, "src": [1, 2, 4294967296, 3]}]}"#,
        "input `ops[0].src[2]` = 4294967296: must be unsigned integers from 0 to 4294967295",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 32, "src": [1, -2, 3, 4]}]}"#,
        "input `ops[0].src[1]` = -2: must be unsigned integers from 0 to 4294967295",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64, "src": [1, 2], "mask": [1, 2]}]}"#,
        "input `ops[0].mask[1]` = 2: must be bits from 0 to 1",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64, "src": [1, 2], "old": [1]}]}"#,
        "input `ops[0].old` = a list of 1 values: must be a list of 2 values (width 128 / element_bits 64)",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64, "src": [1, 2], "zeroing": "yes"}]}"#,
        "input `ops[0].zeroing` = \"yes\": must be true or false",
    );
    bad_input(
        r#"{"ops": [{"op": "expand", "element_bits": 64, "src": [1, 2], "zero": true}]}"#,
        "input `ops[0].zero` = (given): must be absent: keys are op, element_bits, src, mask, old, zeroing",
    );
    let (code, err) = run_input("{\"ops\": [");
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON"), "{err}");
}

#[test]
fn run_options() {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", r#"{"ops": []}"#);
    bad(&["run", "compress", "--input", &i], "error: `run` needs `--output OUT.json`\n");
    bad(&["run", "compress", "--output", "o.json"], "error: `run` needs `--input IN.json`\n");
    bad(
        &["run", "compress", "--input", &i, "--output", "o.json", "--engine", "spice"],
        "error: option `--engine` = `spice`: must be model or rtl\n",
    );
    // An option the command does not read is an error, not silently dropped.
    bad(&["gen", "compress", "--seed", "3", "-o", "x"], "error: option `--seed` is not used by `gen`; see `gpurtl gen --help`\n");
    bad(&["prune", "--preset", "wide"], "error: option `--preset` is not used by `prune`; see `gpurtl prune --help`\n");
    bad(
        &["run", "compress", "--input", &i, "--output", "o.json", "--target", "ice40"],
        "error: option `--target` is not used by `run`; see `gpurtl run --help`\n",
    );
    bad(
        &["synth", "compress", "--target", "generic", "--seed", "-1"],
        "error: option `--seed` = `-1`: must be an integer from 0 to 2147483647\n",
    );
    bad(
        &["synth", "compress", "--target", "generic", "--seeds", "3"],
        "error: option `--seeds` is used by the FPGA targets (ice40, ecp5) only: `generic` places nothing\n",
    );
    for (seeds, why) in [
        ("0", "must be a count from 1 to 64 or a comma-separated list of seeds"),
        ("65", "must be a count from 1 to 64 or a comma-separated list of seeds"),
        ("x", "must be a count from 1 to 64 or a comma-separated list of seeds"),
        ("1,1", "seed 1 is listed more than once; must list distinct seeds"),
        ("3,1,3,2,1,3", "seeds 3, 1 are listed more than once; must list distinct seeds"),
    ] {
        bad(&["synth", "compress", "--target", "ecp5", "--seeds", seeds], &format!("error: option `--seeds` = `{seeds}`: {why}\n"));
    }
    let many: Vec<String> = (1..=65).map(|s| s.to_string()).collect();
    let many = many.join(",");
    bad(&["synth", "compress", "--target", "ecp5", "--seeds", &many], &format!("error: option `--seeds` = `{many}`: lists 65 seeds; must list at most 64\n"));
    bad(&["synth", "compress", "--target", "ecp5", "--seeds", "1,-2"], "error: option `--seeds` = `1,-2`: `-2` must be an integer from 0 to 2147483647\n");
    bad(
        &["synth", "compress", "--target", "ecp5", "--seed", "1", "--seeds", "2,3"],
        "error: options `--seed` and `--seeds`: give one of them, not both\n",
    );
    bad(
        &["run", "compress", "--input", "/nonexistent/in.json", "--output", "o.json"],
        "error: option `--input` = `/nonexistent/in.json`: cannot be read: No such file or directory (os error 2)\n",
    );
}

/// The example of seed 004 figure 35a, through both engines: same file.
#[test]
fn run_model_and_rtl_agree() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"ops":[
          {"op":"compress","element_bits":16,"src":[1,2,3,4,5,6,7,8],"mask":[0,1,0,0,1,1,0,1],"old":[9,9,9,9,9,9,9,9]},
          {"op":"expand","element_bits":16,"src":[1,2,3,4,5,6,7,8],"mask":[0,1,0,0,1,1,0,1],"zeroing":true},
          {"op":"compress","element_bits":8,"src":[0,7,0,3,0,0,0,0,1,2,0,0,0,0,0,9]}]}"#,
    );
    let m = d.path().join("m.json");
    let r = d.path().join("r.json");
    let vcd = d.path().join("r.vcd");
    assert_eq!(gpurtl(&["run", "compress", "--input", &i, "--output", m.to_str().unwrap()]).0, 0);
    let (code, _, err) = gpurtl(&[
        "run", "compress", "--input", &i, "--output", r.to_str().unwrap(), "--engine", "rtl", "--vcd", vcd.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let m = std::fs::read_to_string(m).unwrap();
    assert_eq!(m, std::fs::read_to_string(r).unwrap());
    let v: serde_json::Value = serde_json::from_str(&m).unwrap();
    assert_eq!(v["results"][0]["dst"], serde_json::json!([2, 5, 6, 8, 9, 9, 9, 9]));
    assert_eq!(v["results"][1]["dst"], serde_json::json!([0, 1, 0, 0, 2, 3, 0, 4]));
    assert_eq!(v["results"][2]["count"], 5);
    assert_eq!(v["cycles"], 3 - 1 + 2);
    assert!(std::fs::read_to_string(vcd).unwrap().contains("$enddefinitions"));
}

#[test]
fn gen_writes_verilog_filelist_and_json() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("c");
    let (code, _, err) = gpurtl(&["gen", "compress", "--param", "width=256", "-o", o.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v = std::fs::read_to_string(o.join("gpurtl_compress.v")).unwrap();
    assert!(v.starts_with("// Generated by gpurtl"));
    assert!(v.contains("// Regenerate: gpurtl gen compress --param latency=2 --param stream=false --param width=256 -o <dir>"));
    assert!(v.contains("input  wire [255:0] in_src_i,"));
    assert_eq!(std::fs::read_to_string(o.join("gpurtl_compress.f")).unwrap().lines().last(), Some("gpurtl_compress.v"));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(o.join("gpurtl_compress.json")).unwrap()).unwrap();
    assert_eq!(j["params"]["width"], 256);
    assert_eq!(j["ports"][0]["name"], "clk_i");
    // No temporary or lock file is left beside the outputs and the manifest.
    let n = std::fs::read_dir(&o).unwrap().count();
    assert_eq!(n, 5);
    assert!(o.join("gpurtl.manifest.json").is_file());
}

#[test]
fn list_shows_parameters_and_ranges() {
    let (code, out, _) = gpurtl(&["list"]);
    assert_eq!(code, 0);
    assert!(out.contains("width      default 128    a power of two from 64 to 1024"), "{out}");
}

#[test]
fn cbload_invalid_parameters() {
    bad(
        &["gen", "cbload", "--param", "reg_bits=100", "-o", "x"],
        "error: parameter `reg_bits` = 100: must be a power of two from 32 to 1024\n",
    );
    bad(
        &["gen", "cbload", "--param", "read_bits=512", "--param", "reg_bits=128", "-o", "x"],
        "error: parameter `read_bits` = 512: must be at most reg_bits (128): a beat fills part of one register\n",
    );
    bad(
        &["gen", "cbload", "--param", "max_burst=65", "-o", "x"],
        "error: parameter `max_burst` = 65: must be at most regs (64)\n",
    );
    bad(
        &["gen", "cbload", "--param", "regs=1", "-o", "x"],
        "error: parameter `regs` = 1: must be an integer from 2 to 256\n\
         error: parameter `max_burst` = 64: must be at most regs (1)\n",
    );
    bad(
        &["gen", "cbload", "--param", "views=0", "--param", "max_outstanding=65", "-o", "x"],
        "error: parameter `max_outstanding` = 65: must be an integer from 1 to 64\n\
         error: parameter `views` = 0: must be an integer from 1 to 16\n",
    );
    bad(&["gen", "cbload", "--param", "addr_bits=64", "-o", "x"], "error: parameter `addr_bits` = 64: must be an integer from 16 to 48\n");
}

fn cbload_bad_input(input: &str, message: &str) {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", input);
    let o = d.path().join("out.json");
    let (code, _, err) = gpurtl(&["run", "cbload", "--input", &i, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 2, "{input}: {err}");
    assert_eq!(err, format!("error: {message}\n"), "{input}");
    assert!(!o.exists());
}

#[test]
fn cbload_malformed_inputs() {
    let view = r#""views": [{"base": 0, "size": 64}]"#;
    cbload_bad_input(
        &format!(r#"{{{view}, "instructions": [{{"dest": 0, "view": 8, "offset": 0}}]}}"#),
        "input `instructions[0].view` = 8: must be an integer from 0 to 7",
    );
    cbload_bad_input(
        &format!(r#"{{{view}, "instructions": [{{"dest": 0, "view": 0, "offset": 4}}]}}"#),
        "input `instructions[0].offset` = 4: must be an integer multiple of 8 from 0 to 4294967288",
    );
    cbload_bad_input(
        &format!(r#"{{{view}, "instructions": [{{"dest": 0, "view": 0, "offset": 0, "burst": true, "size": 0}}]}}"#),
        "input `instructions[0].size` = 0: must be an integer from 1 to 2048 (given with burst)",
    );
    cbload_bad_input(
        &format!(r#"{{{view}, "instructions": [{{"dest": 64, "view": 0, "offset": 0}}]}}"#),
        "input `instructions[0].dest` = 64: must be an integer from 0 to 63",
    );
    cbload_bad_input(
        &format!(r#"{{{view}, "instructions": [{{"dest": 0, "view": 0}}]}}"#),
        "input `instructions[0].offset` = (missing): must be given: exactly one of offset, offset_reg",
    );
    cbload_bad_input(
        r#"{"views": [{"base": 4, "size": 64}], "instructions": []}"#,
        "input `views[0].base` = 4: must be an integer multiple of 8 from 0 to 4294967288",
    );
    cbload_bad_input(r#"{"views": []}"#, "input `instructions` = (missing): must be a list of instructions");
}

/// Both engines give the same file for a workload with a burst crossing the
/// end of its view, a register offset and a range error.
#[test]
fn cbload_run_model_and_rtl_agree() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"mem_latency": 7,
            "views": [{"base": 0, "size": 72, "data": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]},
                      {"base": 4096, "size": 4096, "data": [255, 254]}],
            "regs": [{"reg": 5, "value": "0x8"}],
            "instructions": [
              {"dest": 0, "view": 0, "offset": 8, "burst": true, "size": 80, "tag": 1},
              {"dest": 10, "view": 1, "offset_reg": 5, "tag": 2},
              {"dest": 63, "view": 1, "offset": 0, "burst": true, "size": 64, "tag": 3}]}"#,
    );
    let v = both_engines(d.path(), "cbload", &[], &i);
    assert_eq!(v["responses"][2]["error"], "range");
    assert_eq!(v["oob"], true);
    assert_eq!(v["oob_tag"], 1);
    // Register 0 holds bytes 8..39 of view 0: 9, 10 then zeros.
    assert_eq!(v["regs"][0], format!("0x{:0>64}", "0a09"));
}

#[test]
fn systolic_invalid_parameters() {
    bad(&["gen", "systolic", "--param", "rows=0", "-o", "x"], "error: parameter `rows` = 0: must be an integer from 1 to 64\n");
    bad(&["gen", "systolic", "--param", "cols=65", "-o", "x"], "error: parameter `cols` = 65: must be an integer from 1 to 64\n");
    bad(
        &["gen", "systolic", "--param", "lanes=3", "--param", "channel_bits=32", "-o", "x"],
        "error: parameter `lanes` = 3: must be a divisor of channel_bits (32)\n",
    );
    bad(
        &["gen", "systolic", "--param", "lanes=2", "-o", "x"],
        "error: parameter `channel_bits` = 8: must be at least lanes x 8 = 16 (each lane's slot holds one element)\n",
    );
    bad(
        &["gen", "systolic", "--param", "acc_bits=15", "--param", "b_type=u8", "-o", "x"],
        "error: parameter `acc_bits` = 15: must be at least the product width 17 (i8 x u8)\n",
    );
    bad(
        &["gen", "systolic", "--param", "a_type=i16", "-o", "x"],
        "error: parameter `a_type` = `i16`: must be one of i8, u8, i4, u4, i2, u2, bf16, fp16, fp8e4m3, fp8e5m2\n",
    );
    bad(
        &["gen", "systolic", "--param", "a_type=bf16", "--param", "channel_bits=16", "-o", "x"],
        "error: parameter `b_type` = `i8`: must be a floating-point type (bf16, fp16, fp8e4m3, fp8e5m2) when a_type is `bf16`: floating-point types pair only with floating-point types\n",
    );
    bad(
        &["gen", "systolic", "--preset", "bf16", "--param", "acc_bits=24", "--param", "dsp=ecp5", "--param", "fp_stages=1", "-o", "x"],
        "error: parameter `acc_bits` = 24: must be 32 with floating-point types (bf16 x bf16): the accumulator is binary32\n\
         error: parameter `dsp` = `ecp5`: must be auto or infer with floating-point types (bf16 x bf16) unless the grid is weight-stationary with fp_stages >= 2 (here ws with fp_stages = 1): only there does the significand product have the DSP's two registers around it\n",
    );
    bad(&["gen", "systolic", "--param", "dataflow=is", "-o", "x"], "error: parameter `dataflow` = `is`: must be one of os, ws\n");
    bad(&["gen", "systolic", "--param", "dsp=xilinx", "-o", "x"], "error: parameter `dsp` = `xilinx`: must be one of auto, infer, ecp5\n");
    bad(
        &["gen", "systolic", "--param", "dsp=ecp5", "--param", "pipeline=1", "-o", "x"],
        "error: parameter `dsp` = `ecp5`: must be auto or infer when pipeline is 1 (ecp5 uses the DSP's input and output registers as the PE's two stages: pipeline = 2)\n",
    );
    bad(&["gen", "systolic", "--param", "gating=maybe", "-o", "x"], "error: parameter `gating` = `maybe`: must be true or false\n");
    bad(
        &["gen", "systolic", "--preset", "ws", "--param", "c0_add=false", "-o", "x"],
        "error: parameter `c0_add` = false: must be true when dataflow is ws (the weight-stationary grid adds K blocks through out_c0_i)\n",
    );
}

/// The `minimal` grid has no C0 add and no counters: a `c0` in the input is
/// an error, and the output has no counts, from either engine.
#[test]
fn systolic_minimal_grid() {
    let d = tempfile::tempdir().unwrap();
    let bad_in = write(d.path(), "bad.json", r#"{"a": [[1]], "b": [[1]], "c0": [[1]]}"#);
    let o = d.path().join("o.json");
    let (code, _, err) = gpurtl(&["run", "systolic", "--preset", "minimal", "--input", &bad_in, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err, "error: input `c0` = (given): must be absent: the grid is built without the C0 add (parameter c0_add = false)\n");
    assert!(!o.exists());
    let i = write(d.path(), "in.json", r#"{"a": [[1, 0, 2], [3, 4, -128]], "b": [[1, 2], [0, 0], [127, -1]]}"#);
    let v = both_engines(d.path(), "systolic", &["--preset", "minimal"], &i);
    assert_eq!(v["c"], serde_json::json!([[255, 0], [3 - 128 * 127, 6 + 128]]));
    assert!(["useful_macs", "gated_products", "skipped_ksteps", "utilization"].iter().all(|k| v.get(k).is_none()), "{v}");
}

fn systolic_bad_input(input: &str, message: &str) {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", input);
    let o = d.path().join("out.json");
    let (code, _, err) = gpurtl(&["run", "systolic", "--input", &i, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 2, "{input}: {err}");
    assert_eq!(err, format!("error: {message}\n"), "{input}");
    assert!(!o.exists());
}

#[test]
fn systolic_malformed_inputs() {
    systolic_bad_input(
        r#"{"a": [[1, 2], [3]], "b": [[1], [2]]}"#,
        "input `a[1]` = a list of 1 values: must be a list of 2 values (the length of a[0])",
    );
    systolic_bad_input(
        r#"{"a": [[1, 2]], "b": [[1], [2], [3]]}"#,
        "input `b` = a list of 3 rows: must be a list of 2 rows (the columns of a)",
    );
    systolic_bad_input(
        r#"{"a": [[1, 200]], "b": [[1], [2]]}"#,
        "input `a[0][1]` = 200: must be an integer from -128 to 127 (i8)",
    );
    systolic_bad_input(
        r#"{"a": [[1]], "b": [[1]], "a_type": "u8"}"#,
        "input `a_type` = \"u8\": must be \"i8\" (the block's a_type parameter)",
    );
    systolic_bad_input(r#"{"a": [[1]]}"#, "input `b` = (missing): must be a list of lists of integers");
    systolic_bad_input(
        r#"{"a": [[1]], "b": [[1]], "c0": [[1], [2]]}"#,
        "input `c0` = a list of 2 rows: must be a list of 1 rows (the rows of a)",
    );
}

/// Floating point (the `bf16` preset): numbers rounded to bf16, bit
/// patterns, -0, NaN and Inf; both engines give the same C, as numbers and
/// as patterns.
#[test]
fn systolic_run_floating_point_both_engines() {
    let d = tempfile::tempdir().unwrap();
    // A: 1.5, -2, 0.1 (bf16 0x3DCD = 0.10009765625), -0; B as patterns:
    // 1.0, 0.5, 2.0, NaN in one column, +Inf in the other. C0 -0 and 1e30.
    let i = write(
        d.path(),
        "in.json",
        r#"{"a": [[1.5, -2, 0.1, -0.0], [0, 0, 0, 0]],
            "b_bits": [[16256, 16256], [16128, 16128], [16384, 16384], [32705, 32640]],
            "c0": [[-0.0, 1e30], [-0.0, 5]]}"#,
    );
    let v = both_engines(d.path(), "systolic", &["--preset", "bf16"], &i);
    // Row 0: ((-0 + (1.5 - 1)) + (0.2001953125 + (-0 x NaN = +0))); the
    // second column adds 1e30 first.
    let c00 = 0.5f32 + (205.0f32 / 1024.0);
    assert_eq!(v["c_bits"][0][0], serde_json::json!(c00.to_bits()));
    assert_eq!(v["c"][0][0], serde_json::json!(c00 as f64));
    assert_eq!(v["c_bits"][0][1], serde_json::json!(((1e30f32 + 0.5) + (205.0f32 / 1024.0)).to_bits()));
    // Row 1 is all zero (skipped): C0, with -0 as +0.
    assert_eq!(v["c_bits"][1], serde_json::json!([0, 5f32.to_bits()]));
    let bad_in = write(d.path(), "bad.json", r#"{"a": [[1e39]], "b": [[1]]}"#);
    let (code, _, err) = gpurtl(&["run", "systolic", "--preset", "bf16", "--input", &bad_in, "--output", "x.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: input `a[0][0]` = 1e+39: must be a number that rounds to a finite bf16 value"), "{err}");
}

/// Both engines agree on a GEMM with zero rows, columns and k-slices, in
/// both dataflows.
#[test]
fn systolic_run_model_and_rtl_agree() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"a": [[1, 0, 2, 0, 3], [0, 0, 0, 0, 0], [-4, 0, 5, 0, -128], [7, 0, 1, 0, 1], [1, 0, 1, 0, 1]],
            "b": [[1, 2, 0], [3, 4, 0], [5, 6, 0], [7, 8, 0], [127, -1, 0]],
            "c0": [[1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, 5]]}"#,
    );
    for preset in ["default", "ws"] {
        let v = both_engines(d.path(), "systolic", &["--preset", preset], &i);
        assert_eq!(v["c"][0], serde_json::json!([1 + 1 + 10 + 381, 1 + 2 + 12 - 3, 1]), "{preset}");
        assert_eq!(v["c"][1], serde_json::json!([2, 2, 2]), "{preset}");
        assert!(v["skipped_ksteps"].as_u64().unwrap() > 0, "{preset}");
    }
}

#[test]
fn prune_zeroes_small_blocks() {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", r#"{"a": [[1, 0, 9, 9], [0, 0, 9, 9]], "b": [[1, 1], [1, 1], [1, 1], [1, 1]]}"#);
    let o = d.path().join("p.json");
    let (code, out, err) =
        gpurtl(&["prune", "--input", &i, "--output", o.to_str().unwrap(), "--block", "2", "--threshold", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with("1 non-zero values pruned\n"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&o).unwrap()).unwrap();
    assert_eq!(v["a"], serde_json::json!([[0, 0, 9, 9], [0, 0, 9, 9]]));
    bad(
        &["prune", "--input", &i, "--output", "x.json", "--block", "0", "--threshold", "2"],
        "error: option `--block` = `0`: must be an integer from 1 to 64\n",
    );
    bad(
        &["prune", "--input", &i, "--output", "x.json", "--block", "2", "--threshold", "-1"],
        "error: option `--threshold` = `-1`: must be a non-negative integer\n",
    );
}

#[cfg(unix)]
#[test]
fn generated_files_are_world_readable() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", d.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mode = std::fs::metadata(d.path().join("gpurtl_compress.v")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

// ---- Defects found by trying the tool as a new user and as an adversary ----

/// Non-ASCII text in a value that a message quotes: cut between
/// characters, never a panic.
#[test]
fn non_ascii_values_in_messages() {
    let (code, err) = run_input(&format!(r#"{{"ops": [{{"op": "{}", "element_bits": 64, "src": [1, 2]}}]}}"#, "é".repeat(30)));
    assert_eq!(code, 2);
    assert_eq!(err, format!("error: input `ops[0].op` = \"{}\": must be \"compress\" or \"expand\"\n", "é".repeat(30)));
    let (code, err) = run_input(&format!(r#"{{"ops": [{{"op": "{}", "element_bits": 64, "src": [1, 2]}}]}}"#, "é".repeat(50)));
    assert_eq!(code, 2);
    assert_eq!(err, format!("error: input `ops[0].op` = \"{}...: must be \"compress\" or \"expand\"\n", "é".repeat(39)));
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", &format!(r#"{{"width": "{}"}}"#, "é".repeat(50)));
    bad(
        &["gen", "compress", "--params", &f, "-o", "x"],
        &format!("error: parameter `width` = \"{}...: must be a power of two from 64 to 1024\n", "é".repeat(39)),
    );
}

/// `prune` checks its input as a systolic input: a ragged matrix, an
/// unknown key and a value out of its type are refused, not passed on.
#[test]
fn prune_checks_its_input() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("p.json");
    let prune = |text: &str| {
        let i = write(d.path(), "in.json", text);
        gpurtl(&["prune", "--input", &i, "--output", o.to_str().unwrap(), "--block", "2", "--threshold", "1"])
    };
    let (code, _, err) = prune(r#"{"a":[[1,2,3],[1]],"b":[[1],[2],[3]]}"#);
    assert_eq!((code, err.as_str()), (2, "error: input `a[1]` = a list of 1 values: must be a list of 3 values (the length of a[0])\n"));
    let (code, _, err) = prune(r#"{"a":[[1]],"b":[[1]],"bias":[[2]]}"#);
    assert_eq!((code, err.as_str()), (2, "error: input `bias` = (given): must be absent: keys are a, b, c0, a_type, b_type\n"));
    let (code, _, err) = prune(r#"{"a":[[1,300]],"b":[[1],[2]],"a_type":"u8"}"#);
    assert_eq!((code, err.as_str()), (2, "error: input `a[0][1]` = 300: must be an integer from 0 to 255 (u8)\n"));
    assert!(!o.exists());
    let (code, _, err) = prune(r#"{"a":[[1.5]],"b":[[2]],"a_type":"bf16","b_type":"bf16"}"#);
    assert_eq!(
        (code, err.as_str()),
        (2, "error: input `a_type` = \"bf16\": prune takes integer matrices (i8, u8, i4, u4, i2, u2); floating-point inputs are not pruned\n")
    );
    assert!(!o.exists());
    let (code, _, err) = prune(r#"{"a":[[1,200]],"b":[[1],[2]],"a_type":"u8","c0":[[5]]}"#);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&o).unwrap()).unwrap();
    assert_eq!(v["a_type"], "u8");
    assert_eq!(v["c0"], serde_json::json!([[5]]));
}

/// Integers the field cannot hold are reported with the field's range.
#[test]
fn negative_and_huge_integers_name_the_field() {
    bad(&["gen", "systolic", "--param", "rows=-1", "-o", "x"], "error: parameter `rows` = -1: must be an integer from 1 to 64\n");
    bad(
        &["gen", "compress", "--param", "width=4294967296", "-o", "x"],
        "error: parameter `width` = 4294967296: must be a power of two from 64 to 1024\n",
    );
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "p.json", r#"{"rows": -3, "cols": 65}"#);
    bad(
        &["gen", "systolic", "--params", &f, "-o", "x"],
        "error: parameter `rows` = -3: must be an integer from 1 to 64\n\
         error: parameter `cols` = 65: must be an integer from 1 to 64\n",
    );
}

/// Every option given is read, or refused.
#[test]
fn options_are_not_silently_ignored() {
    bad(&["gen", "--all", "--preset", "wide", "-o", "x"], "error: `gen --all` writes every block at its defaults and takes no block or parameters\n");
    bad(&["list", "--param", "width=1"], "error: option `--param` is not used by `list`; see `gpurtl list --help`\n");
    bad(&["help", "extra"], "error: unknown command `extra`; see `gpurtl help`\n");
    bad(&["list", "nosuch"], "error: unknown block `nosuch`; blocks: compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu\n");
    let (code, out, _) = gpurtl(&["list", "compress"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("compress:") && !out.contains("cbload"), "{out}");
}

/// The table states the real range: latency 17 is allowed (at width 1024).
#[test]
fn the_table_states_the_real_range() {
    let (_, out, _) = gpurtl(&["list", "compress"]);
    assert!(out.contains("latency    default 2      an integer from 1 to 17;"), "{out}");
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "--param", "width=1024", "--param", "latency=17", "-o", d.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
}

/// An input file with several errors: every one is reported.
#[test]
fn every_violation_of_an_input_is_reported() {
    let (code, err) = run_input(r#"{"ops": [{"op": "squash", "element_bits": 64, "src": [1]}, {"op": "expand", "element_bits": 12}], "x": 1}"#);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "error: input `x` = (given): must be absent: the only key is `ops`\n\
         error: input `ops[0].op` = \"squash\": must be \"compress\" or \"expand\"\n\
         error: input `ops[0].src` = a list of 1 values: must be a list of 2 values (width 128 / element_bits 64)\n\
         error: input `ops[1].element_bits` = 12: must be 8, 16, 32 or 64\n"
    );
}

/// A file of many bad entries gives the first 50 violations and a count,
/// whatever reads it: 80,000 bad ops, 80,000 bad assembler lines (PM4 and
/// cu), a parameter file of 80,000 unknown keys.
#[test]
fn error_lists_are_capped() {
    let d = tempfile::tempdir().unwrap();
    let ops: Vec<serde_json::Value> = (0..80_000).map(|_| serde_json::json!({"op": "squash", "element_bits": 12, "x": 1})).collect();
    let (code, err) = run_input(&serde_json::json!({ "ops": ops }).to_string());
    assert_eq!(code, 2);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 51, "{}", lines[..3].join("\n"));
    assert_eq!(lines[0], "error: input `ops[0].x` = (given): must be absent: keys are op, element_bits, src, mask, old, zeroing");
    assert_eq!(lines[50], "error: input: 239950 more violations (the first 50 are listed above)");
    for (isa, text) in [("pm4", "BOGUS x=1\n"), ("cu", "bogus r1, r2\n")] {
        let i = write(d.path(), "bad.txt", &text.repeat(80_000));
        let o = d.path().join("o.hex");
        let (code, _, err) = gpurtl(&["asm", "--isa", isa, &i, "--output", o.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 51, "{isa}");
        assert_eq!(lines[50], format!("error: input file `{i}`: 79950 more bad lines (the first 50 are listed above)"), "{isa}");
    }
    let keys: serde_json::Map<String, serde_json::Value> = (0..80_000).map(|k| (format!("k{k}"), serde_json::json!(1))).collect();
    let p = write(d.path(), "p.json", &serde_json::Value::Object(keys).to_string());
    let (code, _, err) = gpurtl(&["gen", "compress", "--params", &p, "-o", d.path().join("out").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 51);
    assert_eq!(lines[50], "error: parameters: 79950 more violations (the first 50 are listed above)");
}

/// Inputs past the documented size, and workloads whose model would not fit
/// in memory, are refused with a message.
#[test]
fn large_inputs_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.json");
    std::fs::File::create(&big).unwrap().set_len(17 << 20).unwrap();
    let (code, _, err) = gpurtl(&["run", "compress", "--input", big.to_str().unwrap(), "--output", d.path().join("o.json").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "error: option `--input` = `{}`: 17825792 bytes is larger than the limit of 16777216 bytes (16 MiB); split the workload into several runs\n",
            big.display()
        )
    );
    let m: Vec<Vec<i64>> = vec![vec![1; 300]; 300];
    let i = write(d.path(), "gemm.json", &serde_json::json!({"a": m, "b": m}).to_string());
    let (code, _, err) = gpurtl(&["run", "systolic", "--input", &i, "--output", d.path().join("o.json").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: input `a` = a 300 x 300 matrix (with b 300 x 300): must be a GEMM whose step program on this 4 x 4 grid holds at most 4000000 lane vectors"), "{err}");
}

/// `--output` through a symbolic link replaces the file it points to and
/// keeps the link; into a pipe it writes through; `--vcd` onto the output
/// is refused.
#[cfg(unix)]
#[test]
fn outputs_write_through_links_and_pipes() {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", r#"{"ops": []}"#);
    let target = d.path().join("real.json");
    std::fs::write(&target, "old").unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &i, "--output", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&target).unwrap().contains("\"results\""));
    // A named pipe stays a pipe, and its reader gets the file.
    let fifo = d.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &i, "--output", fifo.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(reader.join().unwrap().contains("\"cycles\": 0"));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let o = d.path().join("o.json");
    bad(
        &["run", "compress", "--input", &i, "--output", o.to_str().unwrap(), "--engine", "rtl", "--vcd", o.to_str().unwrap()],
        &format!("error: option `--vcd` = `{}`: is the `--output` file; must be another file\n", o.display()),
    );
}

/// Outputs are checked before any work, and a missing directory is not made.
#[test]
fn a_missing_output_directory_is_refused_up_front() {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "in.json", r#"{"ops": []}"#);
    let o = d.path().join("nonexist").join("o.json");
    bad(
        &["run", "compress", "--input", &i, "--output", o.to_str().unwrap()],
        &format!("error: option `--output` = `{}`: the directory `{}` does not exist\n", o.display(), o.parent().unwrap().display()),
    );
    assert!(!o.parent().unwrap().exists());
    let j = d.path().join("nonexist").join("b.json");
    let t = std::time::Instant::now();
    bad(
        &["bench", "compress", "--json", j.to_str().unwrap()],
        &format!("error: option `--json` = `{}`: the directory `{}` does not exist\n", j.display(), j.parent().unwrap().display()),
    );
    // Refused before the bench's work (cosimulation, synthesis) starts.
    assert!(t.elapsed().as_secs() < 5);
}

/// A repeated option or parameter, or a repeated key in a JSON file, is an
/// error rather than the last one silently winning.
#[test]
fn repeats_are_errors() {
    bad(&["run", "compress", "--input", "a", "--input", "b", "--output", "o"], "error: option `--input` is given twice; give it once\n");
    bad(&["gen", "compress", "-o", "a", "-o", "b"], "error: option `--out` is given twice; give it once\n");
    bad(&["gen", "compress", "--param", "width=64", "--param", "width=128", "-o", "x"], "error: parameter `width` is given twice; give it once\n");
    let (code, err) = run_input(r#"{"ops": [{"op": "compress", "op": "expand", "element_bits": 64, "src": [1, 2]}]}"#);
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON: key `op` appears twice in one object at line 1"), "{err}");
}

/// `gen` changes no file when it cannot write them all.
#[test]
fn gen_writes_all_its_files_or_none() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("gpurtl_compress.v"), "old").unwrap();
    std::fs::create_dir(d.path().join("gpurtl_compress.json")).unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", d.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        format!("error: option `--out` = `{}`: `gpurtl_compress.json` is a directory; gpurtl writes a file of that name there\n", d.path().display())
    );
    assert_eq!(std::fs::read_to_string(d.path().join("gpurtl_compress.v")).unwrap(), "old");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2, "no temporary file is left");
}

/// Generating into a folder that holds an earlier configuration leaves
/// only the new configuration's files.
#[test]
fn gen_removes_the_files_of_an_earlier_configuration() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().to_str().unwrap();
    assert_eq!(gpurtl(&["gen", "systolic", "-o", o]).0, 0);
    assert!(d.path().join("gpurtl_systolic_mul.v").exists() && d.path().join("gpurtl_systolic_mul.ecp5.v").exists());
    std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
    assert_eq!(gpurtl(&["gen", "systolic", "--param", "pipeline=1", "-o", o]).0, 0);
    let mut names: Vec<String> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "gpurtl.manifest.json",
            "gpurtl_systolic.core",
            "gpurtl_systolic.f",
            "gpurtl_systolic.json",
            "gpurtl_systolic.v",
            "gpurtl_systolic_pe.v",
            "notes.txt"
        ]
    );
}

/// `bench` measures the parameters it is given (here width 64), not a
/// fixed sweep of widths.
#[test]
fn bench_measures_the_given_point() {
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("b.json");
    let (code, out, err) = gpurtl(&["bench", "compress", "--param", "width=64", "--param", "latency=1", "--json", j.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["params"], serde_json::json!({"width": 64, "latency": 1, "stream": false}));
    assert_eq!(v["vectors_per_cycle"], 1.0);
}

#[test]
fn scheduler_invalid_parameters() {
    bad(&["gen", "scheduler", "--param", "sms=0", "-o", "x"], "error: parameter `sms` = 0: must be an integer from 1 to 64\n");
    bad(
        &["gen", "scheduler", "--param", "dispatch_width=5", "--param", "sms=4", "-o", "x"],
"error: parameter `dispatch_width` = 5: must be at most sms (4) and at most 2^block_bits - 1 (65535): one block per SM per cycle, of one kernel\n",
    );
    bad(
        &["gen", "scheduler", "--param", "reserve=true", "--param", "policy=rr", "-o", "x"],
        "error: parameter `reserve` = true: must be false unless aging is on (age_threshold 512 and policy rr): \
         reserve needs age_threshold > 0 and a policy other than rr\n",
    );
    bad(
        &["gen", "scheduler", "--param", "policy=fifo", "-o", "x"],
        "error: parameter `policy` = `fifo`: must be one of rr, best_fit, least, priority\n",
    );
    bad(&["bench", "compress", "--random", "5"], "error: option `--random` is not used by `bench compress`; see `gpurtl help`\n");
    bad(&["bench", "scheduler", "--random", "0"], "error: option `--random` = `0`: must be an integer from 1 to 10000\n");
    // The bench's mixes are refused, not cut down, when the fields are too narrow.
    bad(
        &["bench", "scheduler", "--param", "block_bits=3", "--json", "/tmp/never-written.json"],
        "error: bench scheduler: mix `contention`: kernels[0].blocks = 8 does not fit 3 bits; \
         the bench's mixes need id_bits and block_bits wide enough for 18 kernels of up to 16 blocks\n",
    );
}

/// An unknown stream, a kernel with 0 blocks, a duplicate id: every
/// violation, each naming its field; nothing is written.
#[test]
fn scheduler_malformed_inputs() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"kernels": [{"id": 0, "stream": 4, "blocks": 0, "threads": 4096, "regs": 1, "smem": 1, "duration": 5},
                        {"id": 0, "stream": 0, "blocks": 1, "threads": 1, "regs": 1, "smem": 1, "duration": 0, "prio": 1}]}"#,
    );
    let o = d.path().join("out.json");
    let (code, _, err) = gpurtl(&["run", "scheduler", "--input", &i, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        "error: input `kernels[0].stream` = 4: must be an integer from 0 to 3\n\
         error: input `kernels[0].blocks` = 0: must be an integer from 1 to 65535\n\
         error: input `kernels[0].threads` = 4096: must be an integer from 0 to 4095\n\
         error: input `kernels[1].prio` = (given): must be absent: keys are id, stream, blocks, threads, regs, smem, duration, priority, submit\n\
         error: input `kernels[1].id` = 0: must be distinct: kernels[0].id is 0 too\n\
         error: input `kernels[1].duration` = 0: must be an integer from 1 to 1000000\n"
    );
    assert!(!o.exists());
}


/// Both engines give the same file; a kernel whose blocks need more threads
/// than an SM has is not an input error: the hardware rejects it.
#[test]
fn scheduler_run_model_and_rtl_agree() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"kernels": [
            {"id": 0, "stream": 0, "blocks": 3, "threads": 3000, "regs": 1, "smem": 1, "duration": 5},
            {"id": 1, "stream": 0, "blocks": 2, "threads": 64, "regs": 100, "smem": 1000, "duration": 50, "submit": 3},
            {"id": 7, "stream": 2, "blocks": 9, "threads": 1024, "regs": 32768, "smem": 40000, "duration": 20}]}"#,
    );
    let v = both_engines(d.path(), "scheduler", &[], &i);
    assert_eq!(v["rejected"], serde_json::json!([0]));
    // Kernel 7: 9 blocks of 40000 B shared memory, one per SM at a time on
    // 8 SMs: the ninth waits for the first to complete.
    assert_eq!(v["kernels"][1]["id"], 7);
    assert_eq!(v["dispatches"].as_array().unwrap().len(), 11);
    assert_eq!(v["makespan"], 60);
}

/// A kernel submitted long after the others: both engines wait for it (the
/// RTL cycle by cycle, the model skipping the idle stretch).
#[test]
fn scheduler_run_with_a_long_gap() {
    let d = tempfile::tempdir().unwrap();
    let i = write(
        d.path(),
        "in.json",
        r#"{"kernels": [
            {"id": 0, "stream": 0, "blocks": 2, "threads": 64, "regs": 64, "smem": 64, "duration": 10},
            {"id": 1, "stream": 1, "blocks": 2, "threads": 64, "regs": 64, "smem": 64, "duration": 10, "submit": 100000}]}"#,
    );
    let v = both_engines(d.path(), "scheduler", &[], &i);
    assert_eq!(v["kernels"][1]["submitted"], 100000);
}

/// Stream mode on the command line: the documented example through both
/// engines, and malformed stream files (exit 2, one message each).
#[test]
fn compress_stream_runs_and_malformed_stream_inputs() {
    let d = tempfile::tempdir().unwrap();
    let example = r#"{"streams":[
      {"op":"compress_stream","element_bits":16,"zeroing":false,
       "vectors":[{"src":[1,0,3,0,5,0,7,0]},{"src":[1,2,3,4,5,6,7,8],"mask":[1,1,0,0,0,0,0,1],"old":[9,9,9,9,9,9,9,9]}]},
      {"op":"expand_stream","element_bits":16,"zeroing":true,
       "dense":[1,3,5,7,1,2,8],
       "vectors":[{"mask":[1,0,1,0,1,0,1,0]},{"mask":[1,1,0,0,0,0,0,1]}]}]}"#;
    let i = write(d.path(), "streams.json", example);
    let v = both_engines(d.path(), "compress", &["--preset", "stream"], &i);
    assert_eq!(v["cycles"], 7);
    assert_eq!(v["streams"][0]["beats"], serde_json::json!([{"count": 7, "data": [1, 3, 5, 7, 1, 2, 8, 0], "last": true}]));
    assert_eq!(v["streams"][1]["results"][1]["dst"], serde_json::json!([1, 2, 0, 0, 0, 0, 0, 8]));
    let stream_input = |input: &str, message: &str| {
        let f = write(d.path(), "bad.json", input);
        let o = d.path().join("bad-out.json");
        let (code, _, err) = gpurtl(&["run", "compress", "--preset", "stream", "--input", &f, "--output", o.to_str().unwrap()]);
        assert_eq!((code, err.as_str()), (2, format!("error: {message}\n").as_str()), "{input}");
        assert!(!o.exists(), "no output file on error");
    };
    // Without stream mode the stream form is refused.
    bad_input(r#"{"streams": []}"#, "input `streams` = (given): must be absent: stream mode needs --param stream=true");
    stream_input(
        r#"{"streams": [{"op":"expand_stream","element_bits":64,"vectors":[{"mask":[1,1]}],"dense":[1]}]}"#,
        "input `streams[0].dense` = a list of 1 values: must be a list of 2 values (the ones of the vectors' masks)",
    );
    stream_input(
        r#"{"streams": [{"op":"expand_stream","element_bits":64,"vectors":[{"mask":[1,1],"src":[1,2]}],"dense":[1,2]}]}"#,
        "input `streams[0].vectors[0].src` = (given): must be absent: an expand stream takes its source from `dense`",
    );
    stream_input(
        r#"{"streams": [{"op":"compress_stream","element_bits":64,"vectors":[]}]}"#,
        "input `streams[0].vectors` = a list of 0 values: must be a list of 1 to 4096 vector objects",
    );
    stream_input(
        r#"{"ops": [], "streams": []}"#,
        "input `streams` = (given): must be absent when `ops` is given: the file has one of `ops` and `streams`",
    );
}

/// The spec's example file through both engines (docs/texture.md).
#[test]
fn texture_run_model_and_rtl_agree() {
    let d = tempfile::tempdir().unwrap();
    let example = r#"{"texture": {"format": "r8", "levels": [{"width": 4, "height": 2, "texels": [1,2,3,4,5,6,7,8]}]},
 "address": ["clamp", "repeat"], "mem_latency": 10,
 "ops": [{"op": "bilinear", "u": 384, "v": 128, "level": 0},
         {"op": "gather4", "u": 256, "v": 256, "offset": [-1, 0], "level": 0, "channel": 0},
         {"op": "conv_quad", "x": 0, "y": 0, "level": 0, "channel": 0,
          "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}],
 "conv": {"level": 0, "channel": 0, "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}}"#;
    let i = write(d.path(), "tex.json", example);
    let v = both_engines(d.path(), "texture", &[], &i);
    assert_eq!(v["results"][0], serde_json::json!({"texel": [2]}));
    assert_eq!(v["results"][1], serde_json::json!({"texels": [1, 1, 5, 5]}));
    assert_eq!(v["results"][2], serde_json::json!({"pixels": [52, 64, 52, 64], "stitch": ["4x4"], "sub_ops": 1}));
    assert_eq!(v["image"], serde_json::json!([[52, 64, 80, 92], [52, 64, 80, 92]]));
    assert_eq!((v["texel_fetches"].as_u64(), v["register_writes"].as_u64()), (Some(56), Some(108)));
}

#[test]
fn texture_malformed_inputs_and_pictures() {
    let d = tempfile::tempdir().unwrap();
    let run = |input: &str, extra: &[&str]| {
        let i = write(d.path(), "in.json", input);
        let o = d.path().join("out.json");
        let args = [&["run", "texture", "--input", &i, "--output", o.to_str().unwrap()][..], extra].concat();
        let (code, _, err) = gpurtl(&args);
        assert!(!o.exists(), "no output file on error: {input}");
        (code, err)
    };
    let bad_tex = |input: &str, extra: &[&str], message: &str| {
        assert_eq!(run(input, extra), (2, format!("error: {message}\n")), "{input} {extra:?}");
    };
    let tex = r#""texture": {"format": "r8", "levels": [{"width": 4, "height": 2, "texels": [1,2,3,4,5,6,7,8]}, {"width": 2, "height": 1, "texels": [1,2]}]}"#;
    let w20: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
    bad_tex(
        &format!(r#"{{{tex}, "ops": [{{"op": "conv_quad", "x": 0, "y": 0, "kernel": {{"width": 20, "height": 1, "weights": [{}]}}}}]}}"#, w20.join(",")),
        &[],
        "input `ops[0].kernel.width` = 20: must be an integer from 1 to 19 (max_kernel)",
    );
    bad_tex(
        &format!(r#"{{{tex}, "ops": [{{"op": "bilinear", "u": 0, "v": 0, "level": 2}}]}}"#),
        &[],
        "input `ops[0].level` = 2: must be an integer from 0 to 1 (below the texture's 2 levels)",
    );
    bad_tex(
        r#"{"texture": {"format": "r8", "levels": [{"width": 4, "height": 2, "texels": [1,2,3,4,5,6,7,8]}, {"width": 3, "height": 1, "texels": [1,2,3]}]}}"#,
        &[],
        "input `texture.levels[1].width` = 3: must be an integer from 2 to 2 (max(1, 4 >> 1): levels[0].width halved)",
    );
    bad_tex(
        r#"{"texture": {"format": "r8", "levels": [{"width": 2, "height": 1, "texels": [1,256]}]}}"#,
        &[],
        "input `texture.levels[0].texels[1]` = 256: must be an integer from 0 to 255",
    );
    bad_tex(
        r#"{"texture": {"format": "rgba8", "levels": [{"width": 1, "height": 1, "texels": [[1,2,3]]}]}}"#,
        &[],
        "input `texture.levels[0].texels[0]` = [1,2,3]: must be a list [r, g, b, a] of integers from 0 to 255",
    );
    bad_tex(
        &format!(r#"{{{tex}, "conv": {{"kernel": {{"width": 1, "height": 1, "weights": [128]}}}}}}"#),
        &[],
        "input `conv.kernel.weights[0]` = 128: must be an integer from -128 to 127",
    );
    bad_tex(
        &format!(r#"{{{tex}, "ops": [{{"op": "gather4", "u": 0, "v": 0, "offset": [32, 0]}}]}}"#),
        &[],
        "input `ops[0].offset[0]` = 32: must be an integer from -32 to 31",
    );
    bad_tex(r#"{"ops": []}"#, &["--image", "/nonexistent/a.png"], "option `--image` = `/nonexistent/a.png`: cannot open it: No such file or directory (os error 2)");
    let not_png = write(d.path(), "n.png", "not a png");
    bad_tex(
        r#"{"ops": []}"#,
        &["--image", &not_png],
        &format!("option `--image` = `{not_png}`: not a readable PNG file: Invalid PNG signature; must be an 8-bit PNG"),
    );
    // A PNG signature, then garbage: the decoder's chunk types by name, not
    // as the Rust structures it prints.
    let garbage = d.path().join("g.png");
    std::fs::write(&garbage, [&b"\x89PNG\r\n\x1a\n"[..], &b"garbage".repeat(10)].concat()).unwrap();
    let g = garbage.to_str().unwrap();
    bad_tex(
        r#"{"ops": []}"#,
        &["--image", g],
        &format!("option `--image` = `{g}`: not a readable PNG file: `ageg` chunk appeared before IHDR chunk; must be an 8-bit PNG"),
    );
    // A header whose CRC is wrong.
    let mut png = std::fs::read(gpurtl_tests::repo().join("docs/figures/texture-camera.png")).unwrap();
    png[20] ^= 0xff;
    std::fs::write(&garbage, &png).unwrap();
    let (code, err) = run(r#"{"ops": []}"#, &["--image", g]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with(&format!("error: option `--image` = `{g}`: not a readable PNG file: CRC error: expected 0x")), "{err}");
    assert!(err.ends_with("while decoding `IHDR` chunk; must be an 8-bit PNG\n") && !err.contains('{'), "{err}");
    let camera = gpurtl_tests::repo().join("docs/figures/texture-camera.png");
    let inp = d.path().join("in.json");
    bad_tex(
        r#"{"ops": []}"#,
        &["--output-image", inp.to_str().unwrap()],
        &format!("option `--output-image` = `{}`: is the `--input` file; must be another file", inp.display()),
    );
    bad_tex(&format!("{{{tex}}}"), &["--image", camera.to_str().unwrap()], "input `texture`: given together with `--image`; must be one or the other");
    bad_tex(&format!("{{{tex}}}"), &["--output-image", "x.png"], "option `--output-image`: the input has no `conv` section, so the run gives no image");
    bad_tex(r#"{"ops": []}"#, &["--image", camera.to_str().unwrap(), "--param", "max_size=256"], "option `--image`: the picture is 512x512 pixels; must be at most max_size (256) on each side (parameter `max_size`)");
    // Another block takes no picture.
    let (code, err) = {
        let i = write(d.path(), "c.json", r#"{"ops": []}"#);
        let o = d.path().join("c-out.json");
        let (code, _, err) = gpurtl(&["run", "cbload", "--input", &i, "--output", o.to_str().unwrap(), "--image", camera.to_str().unwrap()]);
        (code, err)
    };
    assert_eq!((code, err.as_str()), (2, "error: option `--image`: block `cbload` takes no picture\n"));
}

/// docs/texture.md's pictures: a real photograph (docs/figures/texture-camera.png,
/// CC0) through the generated RTL gives the model's output byte for byte,
/// and the committed outputs are what the RTL gives today.
#[test]
fn texture_pictures_through_the_rtl_match_the_model_and_the_readme() {
    let d = tempfile::tempdir().unwrap();
    let fig = gpurtl_tests::repo().join("docs/figures");
    for name in ["edges", "blur"] {
        let mut pngs = Vec::new();
        for engine in ["model", "rtl"] {
            let o = d.path().join(format!("{name}-{engine}.json"));
            let png = d.path().join(format!("{name}-{engine}.png"));
            let (code, _, err) = gpurtl(&[
                "run", "texture", "--image", fig.join("texture-camera.png").to_str().unwrap(),
                "--input", fig.join(format!("texture-{name}.json")).to_str().unwrap(),
                "--output", o.to_str().unwrap(), "--output-image", png.to_str().unwrap(), "--engine", engine,
            ]);
            assert_eq!(code, 0, "{err}");
            pngs.push(std::fs::read(&png).unwrap());
        }
        assert!(pngs[0] == pngs[1], "{name}: the RTL's picture differs from the model's");
        assert!(pngs[1] == std::fs::read(fig.join(format!("texture-{name}.png"))).unwrap(), "docs/figures/texture-{name}.png is stale");
    }
}

/// Packet text with every mnemonic, in the canonical form `disasm` prints.
const PM4_EVERY: &str = "\
NOP
NOP payload=1,2,3 shader=1
SET_CONTEXT_REG offset=2 values=5,6,7,8,9
INDEX_TYPE size=16
INDEX_TYPE size=32 predicate=1
DRAW_INDEX_AUTO count=3 initiator=0x00000002
DRAW_INDEX_OFFSET_2 max_size=100 offset=4 count=6 initiator=0x00000000
DISPATCH_DIRECT x=1 y=2 z=3 initiator=0x00000001 shader=1 predicate=1
WRITE_DATA control=0x00000500 addr=0x00002002 data=1,2,3
INDIRECT_BUFFER addr=0x00004000 size=1048575
FILLER
DWORD value=0x00000000
DWORD value=0x4000abcd
";

/// `gpurtl asm` to a .bin and to a hex file, then `gpurtl disasm` of each,
/// gives the program back; the files hold what they say.
#[test]
fn asm_then_disasm_gives_the_program_back() {
    let d = tempfile::tempdir().unwrap();
    let programs = [
        PM4_EVERY.to_string(),
        "".to_string(),
        "SET_CONTEXT_REG offset=0 values=1\nINDIRECT_BUFFER addr=0x00001001 size=0\nWRITE_DATA control=0x00000000 addr=0x00000003 data=4294967295\n".to_string(),
        format!("NOP payload={}\nFILLER\n", vec!["7"; 16383].join(",")),
    ];
    for (k, text) in programs.iter().enumerate() {
        let src = write(d.path(), &format!("p{k}.txt"), text);
        // Comments, blank lines and other spellings of the same numbers assemble the same.
        let noisy = text.replace("initiator=0x00000002", "initiator=2").replace('\n', "   # c\n\n");
        let src2 = write(d.path(), &format!("q{k}.txt"), &format!("# program {k}\n{noisy}"));
        let bin = d.path().join(format!("p{k}.bin"));
        let hex = d.path().join(format!("p{k}.hex"));
        for (s, out) in [(&src, &bin), (&src2, &hex)] {
            let (code, stdout, err) = gpurtl(&["asm", s, "--output", out.to_str().unwrap()]);
            assert_eq!(code, 0, "{err}");
            assert!(stdout.starts_with(&format!("{}: ", out.display())), "{stdout}");
        }
        let raw = std::fs::read(&bin).unwrap();
        let dwords: Vec<u32> = raw.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let hex_text = std::fs::read_to_string(&hex).unwrap();
        assert_eq!(hex_text, dwords.iter().map(|w| format!("{w:08x}\n")).collect::<String>());
        for f in [&bin, &hex] {
            let (code, stdout, err) = gpurtl(&["disasm", f.to_str().unwrap()]);
            assert_eq!(code, 0, "{err}");
            assert_eq!(stdout, *text, "program {k}");
        }
        let txt = d.path().join(format!("back{k}.txt"));
        let (code, stdout, err) = gpurtl(&["disasm", bin.to_str().unwrap(), "--output", txt.to_str().unwrap()]);
        assert_eq!((code, stdout), (0, format!("{}\n", txt.display())), "{err}");
        assert_eq!(std::fs::read_to_string(&txt).unwrap(), *text);
    }
    // The dwords of the program with every mnemonic.
    let raw = std::fs::read(d.path().join("p0.bin")).unwrap();
    assert_eq!(raw.len(), 4 * 43);
    assert_eq!(&raw[..8], &[0x00, 0x10, 0xFF, 0xFF, 0x02, 0x10, 0x02, 0xC0]);
    // A hex file may have comments, blank lines and short or upper-case dwords.
    let h = write(d.path(), "h.hex", "// header\nc0002a00 // INDEX_TYPE\n\n  1\nFFFF1000\n");
    let (code, stdout, err) = gpurtl(&["disasm", &h]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout, "INDEX_TYPE size=32\nNOP\n");
}

/// Any binary disassembles to text that assembles to the same bytes.
#[test]
fn disasm_then_asm_gives_any_binary_back() {
    let d = tempfile::tempdir().unwrap();
    for seed in 0..20u64 {
        let mut rng = gpurtl_sim::rng::Rng::new(seed);
        let n = rng.below(64) as usize;
        let dwords: Vec<u32> = (0..n)
            .map(|_| match rng.below(3) {
                0 => rng.next_u64() as u32,
                // Headers of known opcodes with short counts and random low bits,
                // and small payload values.
                1 => {
                    let op = *rng.pick(&[0x10u32, 0x69, 0x2A, 0x2D, 0x35, 0x15, 0x37, 0x3F]);
                    let c = (rng.below(6) as u32 + 0x3FFF) & 0x3FFF;
                    0xC000_0000 | (c << 16) | (op << 8) | rng.below(4) as u32
                }
                _ => rng.below(3) as u32,
            })
            .collect();
        let bytes: Vec<u8> = dwords.iter().flat_map(|w| w.to_le_bytes()).collect();
        let bin = d.path().join(format!("r{seed}.bin"));
        std::fs::write(&bin, &bytes).unwrap();
        let txt = d.path().join(format!("r{seed}.txt"));
        let (code, _, err) = gpurtl(&["disasm", bin.to_str().unwrap(), "--output", txt.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let again = d.path().join(format!("r{seed}-again.bin"));
        let (code, _, err) = gpurtl(&["asm", txt.to_str().unwrap(), "--output", again.to_str().unwrap()]);
        assert_eq!(code, 0, "seed {seed}: {err}");
        assert_eq!(std::fs::read(&again).unwrap(), bytes, "seed {seed}");
    }
}

/// Every bad line of an `asm` input is reported, each naming the file, the
/// line and what is wrong; nothing is written.
#[test]
fn asm_errors_name_the_line() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("o.bin");
    let o = out.to_str().unwrap();
    let asm_bad = |text: &str, lines: &[&str]| {
        let f = write(d.path(), "bad.txt", text);
        let want: String = lines.iter().map(|l| format!("error: input file `{f}`: {l}\n")).collect();
        bad(&["asm", &f, "--output", o], &want);
        assert!(!out.exists(), "no output file is written on error");
    };
    const KNOWN: &str = "known: NOP, SET_CONTEXT_REG, INDEX_TYPE, DRAW_INDEX_AUTO, DRAW_INDEX_OFFSET_2, DISPATCH_DIRECT, WRITE_DATA, INDIRECT_BUFFER, SET_SH_REG, RELEASE_MEM, FILLER, DWORD";
    asm_bad("NOP\n\nFOO x=1\n", &[&format!("line 3: `FOO x=1`: unknown mnemonic `FOO`; {KNOWN}")]);
    asm_bad(
        "NOP\nBAD # first\nINDEX_TYPE size=8\nDRAW_INDEX_AUTO count=1\nDRAW_INDEX_AUTO initiator=1 count=1\nDWORD value=1 value=2\nINDEX_TYPE bits=16\n\
         SET_CONTEXT_REG offset=1 values=\nDWORD value=4294967296\nDWORD value=12a\nINDIRECT_BUFFER addr=0 size=1048576\nNOP payload=1,x\nNOP\n",
        &[
            &format!("line 2: `BAD # first`: unknown mnemonic `BAD`; {KNOWN}"),
            "line 3: `INDEX_TYPE size=8`: field `size` = `8`: must be 16 or 32 (bits per index)",
            "line 4: `DRAW_INDEX_AUTO count=1`: missing field `initiator`; the fields of `DRAW_INDEX_AUTO` are, in order: count, initiator, shader, predicate",
            "line 5: `DRAW_INDEX_AUTO initiator=1 count=1`: field `count` must come before `initiator`: the fields of `DRAW_INDEX_AUTO` are, in order: count, initiator, shader, predicate",
            "line 6: `DWORD value=1 value=2`: field `value` is given twice",
            "line 7: `INDEX_TYPE bits=16`: unknown field `bits`; the fields of `INDEX_TYPE` are, in order: size, shader, predicate",
            "line 8: `SET_CONTEXT_REG offset=1 values=`: field `values` is empty: needs at least one value",
            "line 9: `DWORD value=4294967296`: field `value` = `4294967296` is too large: numbers are below 2^32 = 4294967296",
            "line 10: `DWORD value=12a`: field `value` = `12a` is not a number (decimal, or 0x and hex digits)",
            "line 11: `INDIRECT_BUFFER addr=0 size=1048576`: field `size` = `1048576`: must be below 2^20 = 1048576 (a 20-bit size in dwords)",
            "line 12: `NOP payload=1,x`: field `payload` = `1,x`: value 2 `x` is not a number (decimal, or 0x and hex digits)",
        ],
    );
    asm_bad(
        &format!("WRITE_DATA control=0 addr=0 data={}\n", vec!["1"; 16381].join(",")),
        &["line 1: `WRITE_DATA control=0 addr=0 data=1,1,1,1,1,1,1,1,1,1,1,1,...`: field `data` has 16381 values; at most 16380 fit (a packet's payload is at most 16383 dwords)"],
    );
    // A run file is not an `asm` input.
    asm_bad(
        ".registers cmd_base=0x1000\n.memory 0x10000 1,2\nNOP\n",
        &[
            "line 1: `.registers cmd_base=0x1000`: `.registers`: a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only",
            "line 2: `.memory 0x10000 1,2`: `.memory`: a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only",
        ],
    );
    // Command line errors.
    let f = write(d.path(), "ok.txt", "NOP\n");
    const FORM: &str = "`gpurtl asm IN.txt --output OUT` (OUT.bin: raw little-endian dwords; any other name: a hex file, one dword a line)";
    bad(&["asm", &f], &format!("error: `asm` needs `--output OUT`: {FORM}\n"));
    bad(&["asm", "--output", o], &format!("error: `asm` needs an input file: {FORM}\n"));
    bad(&["asm", &f, "--output", &f], &format!("error: option `--output` = `{f}`: is the input file; must be another file\n"));
    bad(&["asm", &f, "--output", o, "--param", "x=1"], "error: option `--param` is not used by `asm`; see `gpurtl asm --help`\n");
    bad(&["asm", &f, "extra", "--output", o], "error: unexpected argument `extra` to `asm`; see `gpurtl asm --help`\n");
    let nodir = d.path().join("nonexist").join("o.bin");
    bad(
        &["asm", &f, "--output", nodir.to_str().unwrap()],
        &format!("error: option `--output` = `{}`: the directory `{}` does not exist\n", nodir.display(), nodir.parent().unwrap().display()),
    );
    let missing = d.path().join("missing.txt");
    bad(
        &["asm", missing.to_str().unwrap(), "--output", o],
        &format!("error: argument `IN` = `{}`: cannot be read: No such file or directory (os error 2)\n", missing.display()),
    );
    assert!(!out.exists());
}

/// `disasm` refuses a .bin that is not whole dwords, a hex file's bad lines
/// (each named) and an unreadable file.
#[test]
fn disasm_errors_name_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let odd = d.path().join("odd.bin");
    std::fs::write(&odd, [1u8, 2, 3, 4, 5, 6]).unwrap();
    bad(
        &["disasm", odd.to_str().unwrap()],
        &format!("error: input file `{}`: 6 bytes is not a whole number of dwords: a .bin file is raw little-endian dwords, 4 bytes each\n", odd.display()),
    );
    let h = write(d.path(), "p.hex", "c0002a00\nzz\n123456789\n@10\n0x10\n00000001\n");
    bad(
        &["disasm", &h],
        &format!(
            "error: input file `{h}`: line 2: `zz`: must be one dword: 1 to 8 hex digits\n\
             error: input file `{h}`: line 3: `123456789`: must be one dword: 1 to 8 hex digits\n\
             error: input file `{h}`: line 4: `@10`: address lines are not read: the file is one dword a line from the first\n\
             error: input file `{h}`: line 5: `0x10`: must be one dword: 1 to 8 hex digits\n"
        ),
    );
    // Raw dwords in a file not named .bin.
    let raw = d.path().join("raw.dat");
    std::fs::write(&raw, [0u8, 0x10, 0xFF, 0xFF]).unwrap();
    bad(
        &["disasm", raw.to_str().unwrap()],
        &format!("error: input file `{}`: not a hex file: byte 2 is not text (a file of raw little-endian dwords must be named *.bin)\n", raw.display()),
    );
    // Many bad lines: the first 20 and a count.
    let many = write(d.path(), "many.hex", &"x\n".repeat(25));
    let (code, _, err) = gpurtl(&["disasm", &many]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 21, "{err}");
    assert!(err.ends_with(&format!("error: input file `{many}`: 5 more bad lines\n")), "{err}");
    let missing = d.path().join("missing.bin");
    bad(
        &["disasm", missing.to_str().unwrap()],
        &format!("error: argument `IN` = `{}`: cannot be read: No such file or directory (os error 2)\n", missing.display()),
    );
    bad(
        &["disasm"],
        "error: `disasm` needs an input file: `gpurtl disasm IN [--output OUT.txt]` (IN.bin: raw little-endian dwords; any other name: a hex file, one dword a line)\n",
    );
    let ok = write(d.path(), "ok.hex", "ffff1000\n");
    bad(&["disasm", &ok, "--output", &ok], &format!("error: option `--output` = `{ok}`: is the input file; must be another file\n"));
    bad(&["disasm", &ok, "--engine", "rtl"], "error: option `--engine` is not used by `disasm`; see `gpurtl disasm --help`\n");
}

/// A `run` input that is not JSON, for a block without a text form, gets
/// the JSON error as before (the text-input hook returns nothing).
#[test]
fn asm_text_run_input_needs_a_block_with_a_text_form() {
    let d = tempfile::tempdir().unwrap();
    let i = write(d.path(), "prog.txt", ".registers cmd_base=0\nNOP\n");
    let o = d.path().join("o.json");
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &i, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.starts_with(&format!("error: input file `{i}`: not valid JSON: ")), "{err}");
    assert!(!o.exists());
    let (code, out, _) = gpurtl(&["help"]);
    assert_eq!(code, 0);
    assert!(out.contains("\n  asm ") && out.contains("\n  disasm "), "{out}");
}

/// Help from clap: `gpurtl help CMD` and `gpurtl CMD --help` on stdout with
/// exit 0, a bare `gpurtl` the overview on stderr with exit 2; completion
/// scripts; usage errors name the option and the command's help.
#[test]
fn help_usage_and_completions() {
    for args in [&["gen", "--help"][..], &["help", "gen"], &["gen", "-h"]] {
        let (code, out, err) = gpurtl(args);
        assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
        assert!(out.contains("Usage: gpurtl gen [OPTIONS] [BLOCK]") && out.contains("-o, --out <DIR>"), "{args:?}: {out}");
    }
    let (code, out, err) = gpurtl(&["run", "--help"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("--max-cycles <N>") && out.contains("--param <KEY=VALUE>"), "{out}");
    let (code, out, err) = gpurtl(&[]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("Usage: gpurtl <COMMAND>") && err.contains("  run ") && !err.contains("error:"), "{err}");
    let (code, out, _) = gpurtl(&["--version"]);
    assert_eq!((code, out.starts_with("gpurtl ")), (0, true));
    for (shell, mark) in [("bash", "_gpurtl()"), ("zsh", "#compdef gpurtl"), ("fish", "complete -c gpurtl")] {
        let (code, out, err) = gpurtl(&["completions", shell]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(mark) && out.contains("max-cycles"), "{shell}");
    }
    bad(&["completions", "tcsh"], "error: argument `SHELL` = `tcsh`: must be one of bash, zsh, fish, elvish or powershell\n");
    bad(&["run", "compress", "--vcd"], "error: option `--vcd` needs a value\n");
    bad(&["run", "compress", "--bogus", "1"], "error: option `--bogus` is not used by `run`; see `gpurtl run --help`\n");
    bad(&["gen", "compress", "--all", "--all"], "error: option `--all` is given twice; give it once\n");
    bad(&["gen", "a", "b"], "error: unexpected argument `b` to `gen`; see `gpurtl gen --help`\n");
}

#[test]
fn cmdproc_runs_text_and_json_inputs_through_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    // docs/cmdproc.md's example: a text run file.
    let v = both_engines(dir.path(), "cmdproc", &[], "examples/cmdproc/draw.txt");
    assert_eq!(v["status"], "done");
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 6);
    assert_eq!(cmds[1]["prims"], serde_json::json!([2, 3, 4]));
    assert_eq!(v["memory_writes"], serde_json::json!([{"addr": 8192, "dwords": [1, 2]}]));
    assert_eq!(v["state_table"][1], 5);
    assert_eq!(v["trace"][0], "#0 @0x00001000 INDEX_TYPE size=16");
    // Render state in order under the run's own back-pressure (`.pipeline`):
    // each reader's record carries the state it was issued with.
    let v = both_engines(dir.path(), "cmdproc", &[], "examples/cmdproc/state.txt");
    let states: Vec<serde_json::Value> = v["commands"].as_array().unwrap().iter().filter_map(|c| c.get("state").map(|s| s.as_array().unwrap()[..4].into())).collect();
    assert_eq!(states, vec![serde_json::json!([1, 1, 0, 0]), serde_json::json!([2, 2, 0, 0]), serde_json::json!([2, 3, 3, 3]), serde_json::json!([2, 3, 3, 4])]);
    assert!(v["commands"][0].get("state").is_none(), "a SET_CONTEXT_REG record has no state");
    // Compute mode: each dispatch's snapshot, though the next kernel's
    // SET_SH_REGs are read while it waits; the fence carried whole.
    let v = both_engines(dir.path(), "cmdproc", &["--preset", "compute"], "examples/cmdproc/compute.txt");
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds[4]["sh"].as_array().unwrap()[..8], serde_json::json!([4, 1, 1, 256, 0, 0, 65536, 131072]).as_array().unwrap()[..]);
    assert_eq!(cmds[8]["sh"].as_array().unwrap()[..8], serde_json::json!([8, 2, 1, 256, 0, 0, 65536, 163840]).as_array().unwrap()[..]);
    assert_eq!(cmds[5]["payload"], serde_json::json!([0x514, 0x2200_0000, 0x3000, 0, 1, 0]));
    assert_eq!(v["sh_table"].as_array().unwrap().len(), 23);
    // The spec's example, as JSON.
    let spec = write(
        dir.path(),
        "spec.json",
        r#"{"registers": {"cmd_base": 4096, "cmd_size": 8, "prim_base": 65536, "prim_size": 1024,
                         "state": [0, 1, 2], "state_ptr": 0, "irq_enable": 3},
            "memory": [{"addr": 4096, "dwords": [3221229568, 0]}],
            "mem_latency": 20}"#,
    );
    let v = both_engines(dir.path(), "cmdproc", &[], &spec);
    assert_eq!(v["trace"], serde_json::json!(["#0 @0x00001000 NOP dwords=1"]));
    assert_eq!((v["cycles"].as_u64(), v["irq"].as_bool()), (Some(24), Some(true)));
    // An error: an unknown opcode after one command.
    let err = write(
        dir.path(),
        "err.txt",
        ".registers cmd_base=0x1000 mem_latency=3\nNOP\nDWORD value=0xC0FF7700\nNOP\n",
    );
    let v = both_engines(dir.path(), "cmdproc", &["--param", "fetch_bits=32"], &err);
    assert_eq!(v["status"], "error");
    assert_eq!(v["error"], serde_json::json!({"cause": "opcode", "addr": 4100}));
    assert_eq!(v["commands"].as_array().unwrap().len(), 1);
}

#[test]
fn cmdproc_malformed_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o.json");
    let o = o.to_str().unwrap();
    let j = write(
        dir.path(),
        "bad.json",
        r#"{"registers": {"cmd_base": 4097, "cmd_size": 8, "state": [1, 2, 3, 4, 5, 6, 7, 8, 9]},
            "memory": [{"addr": 4096, "dwords": [1, 2]}, {"addr": 4100, "dwords": [3]}],
            "mem_latency": 0}"#,
    );
    let (code, _, err) = gpurtl(&["run", "cmdproc", "--preset", "small", "--input", &j, "--output", o]);
    assert_eq!(code, 2, "{err}");
    for field in ["registers.cmd_base", "registers.state", "memory[1]", "mem_latency"] {
        assert!(err.contains(&format!("input `{field}`")), "{field}: {err}");
    }
    let t = write(dir.path(), "bad.txt", ".registers cmd_base=0x1000\nNOP\nDRAW_INDEX_AUTO count=1\nFOO\n");
    let (code, _, err) = gpurtl(&["run", "cmdproc", "--input", &t, "--output", o]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 3: `DRAW_INDEX_AUTO count=1`"), "{err}");
    assert!(err.contains("line 4: `FOO`: unknown mnemonic `FOO`"), "{err}");
    assert!(!Path::new(o).exists());
}

// ---- Outputs never lose a user's file; every input goes through one bounded reader ----

/// The names in a folder, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

/// An output that is one of the command's inputs, however it is spelled
/// (another path, a symbolic or hard link, a file not made yet through a
/// linked folder), is refused before any work, and the input is untouched.
#[cfg(unix)]
#[test]
fn outputs_never_replace_inputs() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let x = write(p, "x.json", r#"{"ops": []}"#);
    let same = |what: &str, opt: &str, path: &str| format!("error: option `{opt}` = `{path}`: is {what}; must be another file\n");
    bad(&["run", "compress", "--input", &x, "--output", &x], &same("the `--input` file", "--output", &x));
    let spelled = format!("{}/./sub/../x.json", p.display());
    std::fs::create_dir(p.join("sub")).unwrap();
    bad(&["run", "compress", "--input", &x, "--output", &spelled], &same("the `--input` file", "--output", &spelled));
    std::os::unix::fs::symlink(p.join("x.json"), p.join("link.json")).unwrap();
    std::fs::hard_link(p.join("x.json"), p.join("hard.json")).unwrap();
    for alias in ["link.json", "hard.json"] {
        let a = p.join(alias);
        let a = a.to_str().unwrap();
        bad(&["run", "compress", "--input", &x, "--output", a], &same("the `--input` file", "--output", a));
    }
    // An output not made yet, through a linked folder, that names the input.
    std::os::unix::fs::symlink(p.join("sub"), p.join("sublink")).unwrap();
    let i2 = write(&p.join("sub"), "new.json", r#"{"ops": []}"#);
    let via = p.join("sublink/new.json");
    std::fs::remove_file(&i2).unwrap();
    let o = p.join("o.json");
    bad(
        &["run", "compress", "--input", via.to_str().unwrap(), "--output", o.to_str().unwrap(), "--engine", "rtl", "--vcd", &i2],
        &same("the `--input` file", "--vcd", &i2),
    );
    bad(&["run", "compress", "--input", &x, "--output", o.to_str().unwrap(), "--engine", "rtl", "--vcd", &x], &same("the `--input` file", "--vcd", &x));
    let params = write(p, "params.json", r#"{"width": 64}"#);
    bad(&["run", "compress", "--params", &params, "--input", &x, "--output", &params], &same("the `--params` file", "--output", &params));
    // texture: the picture is an input too.
    let png = p.join("p.png");
    std::fs::copy(gpurtl_tests::repo().join("docs/figures/texture-camera.png"), &png).unwrap();
    let png = png.to_str().unwrap();
    bad(&["run", "texture", "--image", png, "--input", &x, "--output", png], &same("the `--image` file", "--output", png));
    let g = write(p, "g.json", r#"{"a": [[1]], "b": [[1]]}"#);
    bad(&["prune", "--input", &g, "--output", &g, "--block", "2", "--threshold", "1"], &same("the `--input` file", "--output", &g));
    bad(&["bench", "compress", "--params", &params, "--json", &params], &same("the `--params` file", "--json", &params));
    // `gen`: a params file where gen writes; synth: one inside its folder.
    let gd = p.join("gen");
    std::fs::create_dir(&gd).unwrap();
    let inside = write(&gd, "gpurtl_compress.json", r#"{"width": 64}"#);
    bad(
        &["gen", "compress", "--params", &inside, "-o", gd.to_str().unwrap()],
        &format!(
            "error: option `--out` = `{}`: `gen` would write `gpurtl_compress.json` there, which is the `--params` file; must be a folder where no input is replaced\n",
            gd.display()
        ),
    );
    bad(
        &["synth", "compress", "--params", &inside, "-o", gd.to_str().unwrap()],
        &format!(
            "error: option `--params` = `{inside}`: is inside the folder `--out` = `{}`, which this command writes into; must be outside it\n",
            gd.display()
        ),
    );
    assert_eq!(std::fs::read_to_string(&x).unwrap(), r#"{"ops": []}"#);
    assert_eq!(std::fs::read_to_string(&g).unwrap(), r#"{"a": [[1]], "b": [[1]]}"#);
    assert_eq!(std::fs::read_to_string(&params).unwrap(), r#"{"width": 64}"#);
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), r#"{"width": 64}"#);
    assert!(!o.exists());
    assert_eq!(names_in(&gd), ["gpurtl_compress.json"]);
    // Devices are written through, not compared: stdout may be the terminal stdin is.
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &x, "--output", "/dev/null"]);
    assert_eq!(code, 0, "{err}");
}

/// `gen` removes only files its manifest proves it wrote and that are
/// unchanged: not a hand-written file, not one a planted `<top>.json` lists,
/// not one edited since (a warning names it); the files of an earlier top
/// go, so the folder holds one design.
#[test]
fn gen_removes_only_files_it_provably_wrote() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let o = p.to_str().unwrap();
    std::fs::write(p.join("gpurtl_compress.json"), r#"{"files":["important.v"]}"#).unwrap();
    std::fs::write(p.join("important.v"), "mine").unwrap();
    std::fs::write(p.join("gpurtl_compress.ecp5.v"), "hand-mapped").unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", o]);
    assert_eq!((code, err.as_str()), (0, ""));
    let compress = ["gpurtl_compress.core", "gpurtl_compress.f", "gpurtl_compress.json", "gpurtl_compress.v"];
    let kept = ["gpurtl_compress.ecp5.v", "important.v"];
    let want = |design: &[&str]| {
        let mut w: Vec<String> = design.iter().chain(&kept).chain(&["gpurtl.manifest.json"]).map(|s| s.to_string()).collect();
        w.sort();
        w
    };
    assert_eq!(names_in(p), want(&compress));
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p.join("gpurtl.manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["top"], "gpurtl_compress");
    assert_eq!(manifest["files"].as_object().unwrap().keys().collect::<Vec<_>>(), compress);
    // Another top into the folder: the first top's files go.
    let (code, _, err) = gpurtl(&["gen", "systolic", "-o", o]);
    assert_eq!((code, err.as_str()), (0, ""));
    let systolic = [
        "gpurtl_systolic.core",
        "gpurtl_systolic.f",
        "gpurtl_systolic.json",
        "gpurtl_systolic.v",
        "gpurtl_systolic_mul.ecp5.v",
        "gpurtl_systolic_mul.v",
        "gpurtl_systolic_pe.v",
    ];
    assert_eq!(names_in(p), want(&systolic));
    // An edited file of the earlier generation stays, with a warning.
    std::fs::write(p.join("gpurtl_systolic_pe.v"), "edited").unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", o]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        format!(
            "warning: `{}`: changed since an earlier generation wrote it (its content hash is not the one in `gpurtl.manifest.json`); left in place\n",
            p.join("gpurtl_systolic_pe.v").display()
        )
    );
    assert_eq!(names_in(p), want(&[&compress[..], &["gpurtl_systolic_pe.v"]].concat()));
    assert_eq!(std::fs::read_to_string(p.join("gpurtl_systolic_pe.v")).unwrap(), "edited");
    // The new filelist reads only files that are there.
    for line in std::fs::read_to_string(p.join("gpurtl_compress.f")).unwrap().lines().filter(|l| l.ends_with(".v")) {
        assert!(p.join(line.trim()).exists(), "{line}");
    }
    // A manifest entry without a hash, or out of the folder, proves nothing.
    std::fs::write(p.join("gpurtl.manifest.json"), r#"{"files": {"important.v": null, "../x.v": "0000000000000000"}}"#).unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", o]);
    assert_eq!(code, 0, "{err}");
    let m = p.join("gpurtl.manifest.json");
    assert_eq!(
        err,
        format!(
            "warning: the manifest `{}` lists `../x.v`, which is not a file gpurtl writes in this folder; ignored\n\
             warning: `{}`: listed by `gpurtl.manifest.json` without a content hash, so not provably gpurtl's; left in place\n",
            m.display(),
            p.join("important.v").display()
        )
    );
    assert_eq!(std::fs::read_to_string(p.join("important.v")).unwrap(), "mine");
}

/// Eight `gen`s of two tops into one folder at once take turns on its lock:
/// every one succeeds, and the folder ends up as one generation wrote it
/// (manifest, filelist and files agree; no lock or temporary file left).
#[test]
fn concurrent_gens_into_one_folder_take_turns() {
    let d = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..8)
            .map(|i| {
                let o = d.path().to_str().unwrap();
                s.spawn(move || gpurtl(&["gen", if i % 2 == 0 { "compress" } else { "systolic" }, "-o", o]))
            })
            .collect();
        for r in runs {
            let (code, _, err) = r.join().unwrap();
            assert_eq!((code, err.as_str()), (0, ""));
        }
    });
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    let p = d.path();
    let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p.join("gpurtl.manifest.json")).unwrap()).unwrap();
    let top = manifest["top"].as_str().unwrap();
    let files = manifest["files"].as_object().unwrap();
    let mut want: Vec<String> = files.keys().cloned().chain(["gpurtl.manifest.json".to_string()]).collect();
    want.sort();
    assert_eq!(names_in(p), want);
    for (name, hash) in files {
        let bytes = std::fs::read(p.join(name)).unwrap();
        assert_eq!(format!("{:016x}", gpurtl_gen::emit::fnv1a64(&bytes)), hash.as_str().unwrap(), "{name}");
    }
    let filelist = std::fs::read_to_string(p.join(format!("{top}.f"))).unwrap();
    let listed: Vec<&str> = filelist.lines().filter(|l| l.ends_with(".v")).map(str::trim).collect();
    assert!(!listed.is_empty());
    for f in listed {
        assert!(files.contains_key(f), "{f} listed by {top}.f but not by the manifest");
    }
}

/// A run holding the folder's lock is waited for; a lock file that no
/// running gpurtl holds (left by a killed run) is taken over at once.
#[test]
fn gen_waits_for_a_held_lock_and_takes_over_a_stale_one() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().to_str().unwrap();
    let lock = gpurtl_gen::emit::lock_dir(d.path(), std::time::Duration::ZERO).unwrap();
    let t = std::time::Instant::now();
    let run = std::thread::spawn({
        let o = o.to_string();
        move || gpurtl(&["gen", "compress", "-o", &o])
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!d.path().join("gpurtl_compress.v").exists(), "gen wrote while the lock was held");
    drop(lock);
    let (code, _, err) = run.join().unwrap();
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(t.elapsed().as_millis() >= 300);
    // A stale lock file: present, held by no one.
    std::fs::write(d.path().join("gpurtl.lock"), "99999999\n").unwrap();
    let t = std::time::Instant::now();
    let (code, _, err) = gpurtl(&["gen", "systolic", "-o", o]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(t.elapsed().as_secs() < 5);
    assert!(!d.path().join("gpurtl.lock").exists());
}

/// An empty path is an error for every path option, never the current
/// folder.
#[test]
fn empty_paths_are_errors() {
    for (args, opt) in [
        (&["gen", "compress", "-o", ""][..], "--out"),
        (&["gen", "compress", "--params", "", "-o", "x"], "--params"),
        (&["run", "compress", "--input", "", "--output", "o.json"], "--input"),
        (&["run", "compress", "--input", "i.json", "--output", ""], "--output"),
        (&["run", "compress", "--input", "i.json", "--output", "o.json", "--vcd", ""], "--vcd"),
        (&["run", "texture", "--input", "i.json", "--output", "o.json", "--image", ""], "--image"),
        (&["run", "texture", "--input", "i.json", "--output", "o.json", "--output-image", ""], "--output-image"),
        (&["bench", "compress", "--json", ""], "--json"),
        (&["synth", "compress", "-o", ""], "--out"),
        (&["asm", "a.txt", "--output", ""], "--output"),
    ] {
        bad(args, &format!("error: option `{opt}` = ``: is empty; must be a path\n"));
    }
    bad(
        &["asm", "", "--output", "x.hex"],
        "error: argument `IN` = ``: is empty; must be a path: `gpurtl asm IN.txt --output OUT` (OUT.bin: raw little-endian dwords; any other name: a hex file, one dword a line)\n",
    );
    bad(&["synth-table", ""], "error: argument `DIR` of `synth-table` = ``: is empty; must be a path\n");
}

/// Output paths: a dangling symbolic link is written through (the link
/// stays, its target is made), for a file and for `gen`'s folder; a link
/// whose target's folder is missing, a file where `gen` needs a folder and
/// a folder under a file are exit 2 naming the option and the path.
#[cfg(unix)]
#[test]
fn output_paths_through_dangling_links_and_their_problems() {
    use std::os::unix::fs::symlink;
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let i = write(p, "in.json", r#"{"ops": []}"#);
    symlink("target.json", p.join("dangling.json")).unwrap();
    let (code, _, err) = gpurtl(&["run", "compress", "--input", &i, "--output", p.join("dangling.json").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(p.join("dangling.json")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(p.join("target.json")).unwrap().contains("\"results\""));
    let txt = write(p, "a.txt", "FILLER\n");
    symlink("a.hex", p.join("dangling.hex")).unwrap();
    let (code, _, err) = gpurtl(&["asm", &txt, "--output", p.join("dangling.hex").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(p.join("dangling.hex")).unwrap().file_type().is_symlink() && p.join("a.hex").is_file());
    symlink("gen-here", p.join("dangling-dir")).unwrap();
    let (code, _, err) = gpurtl(&["gen", "compress", "-o", p.join("dangling-dir").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(p.join("dangling-dir")).unwrap().file_type().is_symlink());
    assert!(p.join("gen-here/gpurtl_compress.v").is_file());
    // A link into a missing folder.
    let nowhere = p.join("nowhere/x.json");
    symlink(&nowhere, p.join("lost.json")).unwrap();
    let lost = p.join("lost.json");
    bad(
        &["run", "compress", "--input", &i, "--output", lost.to_str().unwrap()],
        &format!(
            "error: option `--output` = `{}` (a symbolic link to `{}`): the directory `{}` does not exist\n",
            lost.display(),
            nowhere.display(),
            p.join("nowhere").display()
        ),
    );
    // `gen -o` onto a file, and under one.
    let f = write(p, "file", "mine");
    bad(&["gen", "compress", "-o", &f], &format!("error: option `--out` = `{f}`: is a file; must be a folder (made when missing)\n"));
    let under = format!("{f}/sub");
    bad(&["gen", "compress", "-o", &under], &format!("error: option `--out` = `{under}`: cannot make the folder: Not a directory (os error 20)\n"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine");
}

/// Every input file goes through one reader that stops past the limit,
/// whatever the file is: an endless device is refused (exit 2, naming the
/// option, the path and the limit), neither hanging nor filling memory.
#[cfg(unix)]
#[test]
fn endless_inputs_are_cut_off_at_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("o.json");
    let o = o.to_str().unwrap();
    let limit = "more than 16777216 bytes arrived (it is not a regular file); the limit is 16777216 bytes (16 MiB)";
    let t = std::time::Instant::now();
    bad(&["disasm", "/dev/zero"], &format!("error: argument `IN` = `/dev/zero`: {limit}\n"));
    bad(&["asm", "/dev/zero", "--output", o], &format!("error: argument `IN` = `/dev/zero`: {limit}\n"));
    bad(&["run", "compress", "--input", "/dev/zero", "--output", o], &format!("error: option `--input` = `/dev/zero`: {limit}; split the workload into several runs\n"));
    bad(&["gen", "compress", "--params", "/dev/zero", "-o", d.path().to_str().unwrap()], &format!("error: option `--params` = `/dev/zero`: {limit}\n"));
    let i = write(d.path(), "in.json", r#"{"ops": []}"#);
    bad(
        &["run", "texture", "--input", &i, "--output", o, "--image", "/dev/zero"],
        "error: option `--image` = `/dev/zero`: more than 67108864 bytes arrived (it is not a regular file); the limit is 67108864 bytes (64 MiB)\n",
    );
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
}

/// A UTF-8 byte order mark at the start of a JSON, assembler or hex input
/// is skipped.
#[test]
fn a_byte_order_mark_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let bom = |name: &str, text: &str| {
        let f = p.join(name);
        std::fs::write(&f, [&b"\xef\xbb\xbf"[..], text.as_bytes()].concat()).unwrap();
        f.to_string_lossy().into_owned()
    };
    let i = bom("in.json", r#"{"ops": []}"#);
    let params = bom("p.json", r#"{"width": 128}"#);
    let o = p.join("o.json");
    let (code, _, err) = gpurtl(&["run", "compress", "--params", &params, "--input", &i, "--output", o.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = gpurtl(&["gen", "compress", "--params", &params, "-o", p.join("g").to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(p.join("g/gpurtl_compress.json")).unwrap().contains("\"width\": 128"));
    let txt = bom("a.txt", "FILLER\n");
    let hex = p.join("a.hex");
    let (code, _, err) = gpurtl(&["asm", &txt, "--output", hex.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let hex_bom = bom("b.hex", &std::fs::read_to_string(&hex).unwrap());
    let (code, out, err) = gpurtl(&["disasm", &hex_bom]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "FILLER\n");
}
