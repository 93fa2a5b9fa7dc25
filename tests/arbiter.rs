//! The memory arbiter and its AXI4 bridge (docs/arbiter.md): lint and
//! synthesis at the points that differ in shape, and the properties proven.

use gpurtl_gen::tools;
use gpurtl_hw::blocks::arbiter::build;
use gpurtl_params::arbiter::{ArbiterParams, Out};
use gpurtl_params::BlockParams;
use gpurtl_tests::{generated, lint_and_synth_clean};

/// Shapes: bursts and single beats, one source and many, reads or writes
/// only, wide data (a 4 KB page of 32 beats), both outputs.
fn points() -> Vec<(&'static str, ArbiterParams)> {
    let d = ArbiterParams::default();
    vec![
        ("default", d.clone()),
        ("native", ArbiterParams { out: Out::Native, ..d.clone() }),
        ("single_beat", ArbiterParams { max_burst: 1, read_buffer: 2, reads: 3, writes: 3, ..d.clone() }),
        ("reads_only", ArbiterParams { reads: 7, writes: 0, data_bits: 32, ..d.clone() }),
        ("writes_only", ArbiterParams { reads: 0, writes: 1, ..d.clone() }),
        ("wide", ArbiterParams { data_bits: 1024, max_burst: 32, read_buffer: 32, addr_bits: 40, ..d.clone() }),
        ("page", ArbiterParams { addr_bits: 12, data_bits: 8, max_burst: 256, read_buffer: 256, reads: 1, writes: 1, ..d }),
    ]
}

#[test]
fn verilator_lint_and_yosys_are_clean() {
    for (name, p) in points() {
        p.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        lint_and_synth_clean(&format!("arbiter {name}"), &build(&p).unwrap());
    }
}

/// Small points where induction closes: bursts that split, single beats.
/// Narrow data and a 12-bit address keep the state small; the logic does
/// not depend on the data.
fn formal_points() -> Vec<(&'static str, ArbiterParams)> {
    let small = ArbiterParams {
        reads: 2,
        writes: 2,
        addr_bits: 12,
        data_bits: 8,
        max_burst: 4,
        read_buffer: 4,
        write_outstanding: 2,
        out: Out::Axi4,
    };
    vec![
        ("small", small.clone()),
        ("single_beat", ArbiterParams { max_burst: 1, read_buffer: 2, ..small.clone() }),
        ("one_each", ArbiterParams { reads: 1, writes: 1, ..small }),
    ]
}

/// Each part's properties, proven on its own (the arbiters' toward their
/// sources, the bridge's on the AXI channels).
#[test]
fn formal_properties_are_proven() {
    for (name, p) in formal_points() {
        let design = build(&p).unwrap();
        let (dir, _top, vs) = generated(&design);
        for part in ["gpurtl_arbiter_rd", "gpurtl_arbiter_wr", "gpurtl_axi_bridge"] {
            let t0 = std::time::Instant::now();
            let k = match tools::prove(dir.path(), part, &vs, 12) {
                Ok(k) => k,
                Err(e) => panic!("{name} {part}: {e} (files kept in {})", dir.keep().display()),
            };
            eprintln!("arbiter formal {name} {part}: proven (induction length {k}, {:.1} s)", t0.elapsed().as_secs_f64());
        }
    }
}

/// Planted bugs in the bridge give counterexamples naming the property they
/// break: a burst that crosses a 4 KB boundary (no split), and WLAST one
/// beat early.
#[test]
fn planted_bridge_bugs_give_counterexamples() {
    let p = formal_points()[0].1.clone();
    let bugs = [
        ("no split at 4 KB", "  assign rd_split = ", "  assign rd_split = 1'b0;", "prop_ar_no_4k"),
        ("WLAST one beat early", "  assign w_piece_last = wr_req_last_i |", "  assign w_piece_last = (wk_q + 2'd1 == wr_req_len_i) | wr_req_last_i |", "prop_wlast_exact"),
    ];
    for (what, line, with, prop) in bugs {
        let (dir, _top, vs) = generated(&build(&p).unwrap());
        let path = dir.path().join("gpurtl_axi_bridge.v");
        let text = std::fs::read_to_string(&path).unwrap();
        let at = text.find(line).unwrap_or_else(|| panic!("{what}: `{line}` not in the bridge"));
        let end = at + text[at..].find('\n').unwrap();
        let old = &text[at..end];
        let new = if with.ends_with('|') { old.replacen(line, with, 1) } else { with.to_string() };
        std::fs::write(&path, format!("{}{new}{}", &text[..at], &text[end..])).unwrap();
        match tools::prove(dir.path(), "gpurtl_axi_bridge", &vs, 12) {
            Err(tools::ProofFailure::Counterexample { failed, .. }) if failed.iter().any(|f| f == prop) => {
                eprintln!("arbiter formal: planted bug ({what}) found: {failed:?}")
            }
            other => panic!("{what}: should give a counterexample to {prop}, got {other:?}"),
        }
    }
}

/// Write the small formal point's files into `GPURTL_DUMP` (a directory), for reading.
#[test]
fn dump_small_point_when_asked() {
    let Some(dir) = std::env::var_os("GPURTL_DUMP") else { return };
    let p = formal_points()[0].1.clone();
    let files = gpurtl_gen::emit::files(&build(&p).unwrap());
    gpurtl_gen::emit::write_all(std::path::Path::new(&dir), &files).unwrap();
}
