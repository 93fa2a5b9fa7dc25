//! The banked scratchpad (docs/scratchpad.md): lint and synthesis at the
//! points that differ in shape, the properties proven, and block RAM on both
//! FPGA families.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::tools;
use gpurtl_hw::blocks::scratchpad::build;
use gpurtl_params::scratchpad::ScratchpadParams;
use gpurtl_params::BlockParams;
use gpurtl_sim::models::scratchpad as model;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::scratchpad::{self as tb, Env};
use gpurtl_tests::{failure_dir, generated, lint_and_synth_clean, seeds};

/// Seeds per cosimulation point (`GPURTL_SEED=N` runs one).
const SEEDS: u64 = 200;

/// Random phases at `p`: every other seed with ports that offer back to
/// back and take at once, where the whole output (cycles, conflict waits)
/// must equal the model's, and some of those with a read and a write of
/// one word in a phase (the read held back a cycle, seen only there); the
/// rest with random holds and back-pressure, where every word read must.
fn cosim(name: &str, p: &ScratchpadParams) -> u64 {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let mut waits = 0;
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 6007 + p.banks as u64 * 13 + p.read_ports as u64);
        let exact = seed % 2 == 0;
        let hazards = exact && seed % 4 == 0;
        let (phases, per_port) = (1 + rng.below(4) as usize, 1 + rng.below(10) as usize);
        let w = model::random_workload(&mut rng, p, phases, per_port, hazards);
        let env = (!exact).then(|| Env { seed, req_stall: rng.below(60) as u32, rsp_stall: rng.below(60) as u32 });
        let want = model::run(p, &w);
        waits += want.counters.conflict_waits;
        let problem = match tb::run(&compiled, p, &w, env, None) {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, _)) => {
                let same = if exact {
                    got == want
                } else {
                    got.phases.iter().zip(&want.phases).all(|(g, m)| g.reads == m.reads && g.writes == m.writes)
                };
                (!same).then(|| format!("\n  model: {}\n  rtl:   {}", model::output_json(p, &want), model::output_json(p, &got)))
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("scratchpad_{name}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, p, &w, env, Some(&vcd));
            panic!(
                "scratchpad {name} seed {seed} (env {env:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test scratchpad",
                vcd.display()
            );
        }
    }
    waits
}

#[test]
fn cosim_points() {
    let points = [
        ("default", ScratchpadParams::default()),
        ("small", preset("small")),
        ("one_bank_bytes", ScratchpadParams { banks: 1, words: 16, data_bits: 8, read_ports: 1, write_ports: 1 }),
        ("many_ports", ScratchpadParams { banks: 2, words: 32, data_bits: 64, read_ports: 4, write_ports: 3 }),
    ];
    for (name, p) in points {
        let waits = cosim(name, &p);
        eprintln!("scratchpad cosim {name}: {waits} conflict waits");
        if p.read_ports + p.write_ports > 2 && std::env::var_os("GPURTL_SEED").is_none() {
            assert!(waits > 0, "{name}: the random workloads never met a bank conflict");
        }
    }
}

fn preset(name: &str) -> ScratchpadParams {
    ScratchpadParams::presets().into_iter().find(|(n, _)| *n == name).unwrap().1
}

/// One bank and eight, byte and 128-bit words, one port and four.
fn points() -> Vec<(&'static str, ScratchpadParams)> {
    vec![
        ("default", ScratchpadParams::default()),
        ("cu", preset("cu")),
        ("one_bank_bytes", ScratchpadParams { banks: 1, words: 16, data_bits: 8, read_ports: 1, write_ports: 1 }),
        ("wide_many", ScratchpadParams { banks: 8, words: 64, data_bits: 128, read_ports: 4, write_ports: 4 }),
    ]
}

#[test]
fn verilator_lint_and_yosys_are_clean() {
    for (name, p) in points() {
        p.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        lint_and_synth_clean(&format!("scratchpad {name}"), &build(&p).unwrap());
    }
}

#[test]
fn formal_properties_are_proven() {
    for (name, p) in [("small", preset("small")), ("one_bank", ScratchpadParams { banks: 1, ..preset("small") })] {
        let (dir, top, vs) = generated(&build(&p).unwrap());
        let k = match tools::prove(dir.path(), &top, &vs, 8) {
            Ok(k) => k,
            Err(e) => panic!("{name}: {e} (files kept in {})", dir.keep().display()),
        };
        eprintln!("scratchpad formal {name}: proven (induction length {k})");
    }
}

/// The banks are block RAM on both FPGA families: yosys maps the default
/// scratchpad (4 banks of 512 x 32 bits) to DP16KD (ECP5) and SB_RAM40_4K
/// (iCE40), with less than 5% of its bits in flip-flops.
#[test]
fn banks_map_to_block_ram() {
    let p = ScratchpadParams::default();
    let bits = (p.banks * p.words * p.data_bits) as u64;
    let (dir, top, vs) = generated(&build(&p).unwrap());
    for (arch, ram, ff) in [("ecp5", "DP16KD", "TRELLIS_FF"), ("ice40", "SB_RAM40_4K", "SB_DFF")] {
        let script = format!("read_verilog {}; synth_{arch} -top {top}; stat", vs.join(" "));
        let out = std::process::Command::new("yosys").current_dir(dir.path()).args(["-p", &script]).output().expect("yosys runs");
        let log = String::from_utf8_lossy(&out.stdout);
        let text = log.rsplit("Printing statistics").next().unwrap_or("");
        let count = |cell: &str| -> u64 {
            text.lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    let (name, n) = (w.next()?, w.next()?);
                    name.starts_with(cell).then(|| n.parse::<u64>().ok()).flatten()
                })
                .sum()
        };
        let (rams, ffs) = (count(ram), count(ff));
        eprintln!("scratchpad {arch}: {rams} {ram}, {ffs} flip-flops for {bits} bits");
        assert!(rams > 0, "{arch}: no {ram} in\n{text}");
        assert!(ffs * 20 < bits, "{arch}: {ffs} flip-flops, 5% of {bits} bits or more");
    }
}
