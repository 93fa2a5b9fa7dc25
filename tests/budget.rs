//! The run budget (`gpurtl run --max-cycles N`, docs/cli.md): every block
//! stops in both engines when its budget runs out, with exit 2, the budget
//! named and nothing written; the runaways the budget exists for stop in
//! seconds; every example ends well within the default.

use gpurtl_tests::{gpurtl, repo};
use std::path::Path;

/// Every block's example input (and the parameters it is run at).
fn examples() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    vec![
        ("arbiter", vec![], "examples/arbiter/rw.json"),
        ("cbload", vec![], "examples/cbload/load.json"),
        ("cmdproc", vec![], "examples/cmdproc/draw.txt"),
        ("cmdproc", vec![], "examples/cmdproc/state.txt"),
        ("cmdproc", vec!["--preset", "compute"], "examples/cmdproc/compute.txt"),
        ("compress", vec![], "examples/compress/ops.json"),
        ("scheduler", vec![], "examples/scheduler/kernels.json"),
        ("scratchpad", vec![], "examples/scratchpad/phases.json"),
        ("systolic", vec![], "examples/systolic/gemm.json"),
        ("texture", vec![], "examples/texture/sample.json"),
        ("cu", vec![], "examples/cu/copy2d-run.json"),
        ("cu", vec![], "examples/cu/gemm-run.json"),
    ]
}

/// The blocks whose RTL runs here also write a waveform.
fn with_vcd(block: &str) -> bool {
    matches!(block, "cbload" | "arbiter" | "cmdproc")
}

fn run(block: &str, params: &[&str], input: &str, engine: &str, extra: &[&str], dir: &Path) -> (i32, String, bool, bool) {
    let out = dir.join(format!("{block}-{engine}.json"));
    let vcd = dir.join(format!("{block}.vcd"));
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&vcd);
    let root = repo();
    let params: Vec<String> = params.iter().map(|p| if p.starts_with("examples/") { root.join(p).to_string_lossy().into_owned() } else { p.to_string() }).collect();
    let input = root.join(input);
    let mut args = vec!["run".to_string(), block.to_string()];
    args.extend(params);
    for a in ["--input", input.to_str().unwrap(), "--output", out.to_str().unwrap(), "--engine", engine] {
        args.push(a.to_string());
    }
    // A waveform asks for a design's traced build (docs/cosim.md): three
    // small blocks show that a stopped run writes none and a finished one
    // writes its own (cmdproc's also in the runaway below); the other
    // blocks run the same code in `gpurtl run`.
    if engine == "rtl" && with_vcd(block) {
        args.push("--vcd".into());
        args.push(vcd.to_string_lossy().into_owned());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = gpurtl(&argv);
    (code, err, out.exists(), vcd.exists())
}

/// At a budget of 2 cycles every example stops, in both engines: exit 2,
/// the budget named, no result and no waveform. With the default budget
/// each runs to its end.
#[test]
fn every_block_stops_at_its_budget_in_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    for (block, params, input) in examples() {
        for engine in ["model", "rtl"] {
            let (code, err, out, vcd) = run(block, &params, input, engine, &["--max-cycles", "2"], dir.path());
            assert_eq!(code, 2, "{block} {input} {engine}: {err}");
            assert_eq!(
                err,
                "error: the run did not end within its budget of 2 cycles (`--max-cycles` = 2, as given); nothing was written\n",
                "{block} {input} {engine}"
            );
            assert!(!out && !vcd, "{block} {input} {engine}: an output was written");
            let (code, err, out, vcd) = run(block, &params, input, engine, &[], dir.path());
            assert_eq!(code, 0, "{block} {input} {engine}: {err}");
            assert!(out && (vcd == (engine == "rtl" && with_vcd(block))), "{block} {input} {engine}");
        }
    }
}

/// The model's count is what the budget is checked against: a run of C
/// cycles fits a budget of C and stops at C - 1.
#[test]
fn a_run_fits_a_budget_of_its_own_length() {
    let dir = tempfile::tempdir().unwrap();
    for (block, input, cycles) in [("cbload", "examples/cbload/load.json", "cycles"), ("systolic", "examples/systolic/gemm.json", "cycles")] {
        let (code, err, _, _) = run(block, &[], input, "model", &[], dir.path());
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(format!("{block}-model.json"))).unwrap()).unwrap();
        let c = v[cycles].as_u64().unwrap();
        assert!(c > 2, "{block}: {c}");
        let (code, err, ..) = run(block, &[], input, "model", &["--max-cycles", &c.to_string()], dir.path());
        assert_eq!(code, 0, "{block} at {c}: {err}");
        let (code, err, ..) = run(block, &[], input, "model", &["--max-cycles", &(c - 1).to_string()], dir.path());
        assert_eq!(code, 2, "{block} at {}: {err}", c - 1);
    }
}

/// The issue's runaways: a kernel submitted at cycle 10^9, a draw of 10^9
/// indices (which panicked, aborted on memory or wrote 220 MB before). Both
/// engines stop at the default budget.
#[test]
fn runaways_stop_at_the_default_budget() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sched = d.join("k.json");
    std::fs::write(&sched, r#"{"kernels":[{"id":1,"stream":0,"blocks":8,"threads":32,"regs":16,"smem":16,"duration":30,"submit":1000000000}]}"#).unwrap();
    let draw = d.join("d.txt");
    std::fs::write(
        &draw,
        ".registers cmd_base=0x1000 prim_base=0x10000000 prim_size=0xFFFFFFF0\nINDEX_TYPE size=32\n\
         DRAW_INDEX_OFFSET_2 max_size=0xFFFFFFFF offset=0 count=1000000000 initiator=0\n",
    )
    .unwrap();
    for (block, input) in [("scheduler", &sched), ("cmdproc", &draw)] {
        let bytes = std::fs::metadata(input).unwrap().len();
        let budget = gpurtl_gen::cli::default_max_cycles(bytes);
        for engine in ["model", "rtl"] {
            let (code, err, out, vcd) = run(block, &[], input.to_str().unwrap(), engine, &[], d);
            assert_eq!(code, 2, "{block} {engine}: {err}");
            assert_eq!(
                err,
                format!(
                    "error: the run did not end within its budget of {budget} cycles (`--max-cycles` = {budget}, the default for {bytes} bytes of input: 4194304 and 1024 a byte; give a larger one to run longer); nothing was written\n"
                ),
                "{block} {engine}"
            );
            assert!(!out && !vcd, "{block} {engine}");
        }
    }
}

#[test]
fn bad_budgets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (v, msg) in [
        ("0", "error: option `--max-cycles` = `0`: must be an integer from 1 to 281474976710656\n"),
        ("-5", "error: option `--max-cycles` = `-5`: must be an integer from 1 to 281474976710656\n"),
        ("1e6", "error: option `--max-cycles` = `1e6`: must be an integer from 1 to 281474976710656\n"),
        ("281474976710657", "error: option `--max-cycles` = `281474976710657`: must be an integer from 1 to 281474976710656\n"),
    ] {
        let (code, err, out, _) = run("cbload", &[], "examples/cbload/load.json", "model", &["--max-cycles", v], dir.path());
        assert_eq!((code, err.as_str(), out), (2, msg, false), "{v}");
    }
    let (code, _, err) = gpurtl(&["gen", "cbload", "--max-cycles", "5", "-o", dir.path().join("g").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`--max-cycles`"), "{err}");
}
