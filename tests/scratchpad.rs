//! The banked scratchpad (docs/scratchpad.md): lint and synthesis at the
//! points that differ in shape, the properties proven, and block RAM on both
//! FPGA families.

use gpurtl_gen::tools;
use gpurtl_hw::blocks::scratchpad::build;
use gpurtl_params::scratchpad::ScratchpadParams;
use gpurtl_params::BlockParams;
use gpurtl_tests::{generated, lint_and_synth_clean};

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

/// Write a point's files into `GPURTL_DUMP` (a directory), for reading.
#[test]
fn dump_default_when_asked() {
    let Some(dir) = std::env::var_os("GPURTL_DUMP") else { return };
    let files = gpurtl_gen::emit::files(&build(&ScratchpadParams::default()).unwrap());
    gpurtl_gen::emit::write_all(std::path::Path::new(&dir), &files).unwrap();
}
