//! The memory arbiter and its AXI4 bridge (docs/arbiter.md): lint and
//! synthesis at the points that differ in shape, and the properties proven.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::tools;
use gpurtl_hw::blocks::arbiter::build;
use gpurtl_params::arbiter::{ArbiterParams, Out};
use gpurtl_params::BlockParams;
use gpurtl_sim::models::arbiter as model;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::arbiter::{self as tb, Env};
use gpurtl_tests::{failure_dir, generated, lint_and_synth_clean, seeds};

/// Seeds per cosimulation point (`GPURTL_SEED=N` runs one).
const SEEDS: u64 = 200;

/// Random workloads (bursts that cross 4 KB, caps reached, every source
/// busy, partial strobes) at `p`: every fourth seed with the spec's
/// deterministic memory and sources, where the whole output (cycles too)
/// must equal the model's; the rest with random source stalls and
/// back-pressure and a random memory (latency, ready, gaps; with AXI4
/// responses reordered and interleaved across sources), where everything
/// but the cycles must.
fn cosim(name: &str, p: &ArbiterParams) -> (u64, u64) {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let (mut splits, mut beats) = (0, 0);
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 7919 + p.data_bits as u64 + p.reads as u64 * 31 + p.writes as u64);
        let n = 1 + rng.below(6) as usize;
        let w = model::random_workload(&mut rng, p, n);
        let env = (seed % 4 != 0).then(|| Env {
            seed,
            src_stall: rng.below(60) as u32,
            rsp_stall: rng.below(60) as u32,
            latency: (1, 1 + rng.below(30) as u32),
            mem_stall: rng.below(60) as u32,
            mem_gap: rng.below(60) as u32,
        });
        let want = model::run(p, &w);
        splits += want.counters.split_bursts;
        beats += want.counters.read_beats + want.counters.write_beats;
        let problem = match tb::run(&compiled, p, &w, env, None) {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((mut got, _)) => {
                if env.is_some() {
                    got.cycles = want.cycles;
                }
                (got != want).then(|| format!("\n  model: {:?}\n  rtl:   {:?}", model::output_json(p, &want), model::output_json(p, &got)))
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("arbiter_{name}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, p, &w, env, Some(&vcd));
            panic!(
                "arbiter {name} seed {seed} (env {env:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test arbiter",
                vcd.display()
            );
        }
    }
    (splits, beats)
}

#[test]
fn cosim_points() {
    for (name, p) in points() {
        let (splits, beats) = cosim(name, &p);
        eprintln!("arbiter cosim {name}: {beats} beats, {splits} bursts split at 4 KB");
        if p.out == Out::Axi4 && p.max_burst > 1 && p.addr_bits > 12 && std::env::var_os("GPURTL_SEED").is_none() {
            assert!(splits > 0, "{name}: the random workloads never crossed a 4 KB boundary");
        }
    }
}

/// Shapes: bursts and single beats, a one-beat response queue, one source
/// and many, reads or writes only, wide data (a 4 KB page of 32 beats), both outputs.
fn points() -> Vec<(&'static str, ArbiterParams)> {
    let d = ArbiterParams::default();
    vec![
        ("default", d.clone()),
        ("native", ArbiterParams { out: Out::Native, ..d.clone() }),
        ("single_beat", ArbiterParams { max_burst: 1, read_buffer: 2, reads: 3, writes: 3, ..d.clone() }),
        // A one-beat response queue (its pointers must stay at entry 0).
        ("one_beat_buffer", ArbiterParams { max_burst: 1, read_buffer: 1, reads: 3, writes: 1, ..d.clone() }),
        ("reads_only", ArbiterParams { reads: 7, writes: 0, data_bits: 32, ..d.clone() }),
        ("writes_only", ArbiterParams { reads: 0, writes: 1, ..d.clone() }),
        ("wide", ArbiterParams { data_bits: 1024, max_burst: 32, read_buffer: 32, addr_bits: 40, ..d.clone() }),
        ("page", ArbiterParams { addr_bits: 12, data_bits: 8, max_burst: 256, read_buffer: 256, reads: 1, writes: 1, ..d }),
    ]
}

/// Lint and synthesis at the points that differ in structure; the wide and
/// page points (their response queues are thousands of flip-flops) are
/// cosimulated, and the parameter-space test lints random points.
#[test]
fn verilator_lint_and_yosys_are_clean() {
    for (name, p) in points().into_iter().filter(|(n, _)| !matches!(*n, "wide" | "page")) {
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
