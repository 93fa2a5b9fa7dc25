//! Compress/expand unit: cosimulation of the generated Verilog against the
//! golden model, lint and synthesis checks, snapshot of the default output.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_gen::tools;
use gpurtl_hw::blocks::compress::build;
use gpurtl_params::compress::CompressParams;
use gpurtl_params::BlockParams;
use gpurtl_sim::models::compress::{self as model, Stream, StreamKind, StreamVector};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::compress as tb;
use gpurtl_sim::tb::Stalls;
use gpurtl_tests::{failure_dir, seeds};

/// Parameter points: smallest width, default, a wide one at the deepest
/// pipeline, and the largest width.
const POINTS: &[(u32, u32)] = &[(64, 1), (128, 2), (256, 10), (1024, 4), (128, 6), (512, 15)];
const SEEDS: u64 = 200;

fn cosim(width: u32, latency: u32) {
    let p = CompressParams { width, latency, stream: false };
    p.validate().expect("test point is valid");
    let design = build(&p).expect("design builds");
    let compiled = compile_design(&design).expect("verilator build");
    let mut ops_total = 0;
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 7919 + width as u64);
        let n = 1 + rng.below(40) as usize;
        let ops = tb::random_ops(&mut rng, width, n, None);
        ops_total += ops.len();
        // Every fourth seed runs without stalls so cycle counts are exact.
        let stalls = (seed % 4 != 0).then(|| Stalls {
            seed,
            in_pct: rng.below(70) as u32,
            out_pct: rng.below(70) as u32,
        });
        let want = model::run(&ops, latency);
        let got = tb::run(&compiled, width, &ops, stalls, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, _)) => {
                if let Some(i) = (0..n).find(|&i| got.results[i] != want.results[i]) {
                    Some(format!(
                        "op {i} {:?}\n  model: {:?}\n  rtl:   {:?}",
                        ops[i], want.results[i], got.results[i]
                    ))
                } else if stalls.is_none() && got.cycles != want.cycles {
                    Some(format!("cycles: model {} rtl {}", want.cycles, got.cycles))
                } else {
                    None
                }
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("compress_w{width}_l{latency}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, width, &ops, stalls, Some(&vcd));
            panic!(
                "compress width={width} latency={latency} seed {seed}: {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test compress",
                vcd.display()
            );
        }
    }
    eprintln!("compress width={width} latency={latency}: {} seeds, {ops_total} ops, all match", seeds(SEEDS).len());
}

#[test]
fn cosim_width64_latency1() {
    cosim(POINTS[0].0, POINTS[0].1)
}
#[test]
fn cosim_width128_latency2() {
    cosim(POINTS[1].0, POINTS[1].1)
}
#[test]
fn cosim_width256_latency10() {
    cosim(POINTS[2].0, POINTS[2].1)
}
/// The widest vector unit: `make test-full` (its build is the suite's
/// second longest).
#[test]
fn cosim_width1024_latency4() {
    if gpurtl_tests::full_tier("compress width=1024 latency=4") {
        cosim(POINTS[3].0, POINTS[3].1)
    }
}
/// The `fpga` preset.
#[test]
fn cosim_width128_latency6() {
    cosim(POINTS[4].0, POINTS[4].1)
}
/// Every layer registered (the most latency at 512 bits): `make test-full`
/// (`width256_latency10` registers most layers in `make test`).
#[test]
fn cosim_width512_latency15() {
    if gpurtl_tests::full_tier("compress width=512 latency=15") {
        cosim(POINTS[5].0, POINTS[5].1)
    }
}

/// Steady state is one vector per cycle: n ops take n - 1 + latency cycles.
#[test]
fn full_throughput_without_stalls() {
    let p = CompressParams { width: 128, latency: 3, stream: false };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let ops = tb::random_ops(&mut Rng::new(1), 128, 500, None);
    let (got, _) = tb::run(&compiled, 128, &ops, None, None).unwrap();
    assert_eq!(got.cycles, 500 - 1 + 3);
    assert_eq!(got.results, model::run(&ops, 3).results);
}

/// Output stalls must not lose or duplicate results, and a stalled pipeline
/// still refills at full rate: with the sink ready every other cycle the
/// run takes about twice as long, not more.
#[test]
fn back_pressure_keeps_order() {
    let p = CompressParams { width: 64, latency: 4, stream: false };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let ops = tb::random_ops(&mut Rng::new(2), 64, 300, None);
    let (got, _) = tb::run(&compiled, 64, &ops, Some(Stalls { seed: 5, in_pct: 0, out_pct: 90 }), None).unwrap();
    assert_eq!(got.results, model::run(&ops, 4).results);
}

fn generated(p: &CompressParams) -> (tempfile::TempDir, String, Vec<String>) {
    gpurtl_tests::generated(&build(p).unwrap())
}

#[test]
fn verilator_lint_wall_is_clean_at_every_point() {
    for &(width, latency) in POINTS.iter().chain(&[(512, 3), (64, 10), (1024, 1)]) {
        let (dir, top, _) = generated(&CompressParams { width, latency, stream: false });
        if let Err(e) = tools::verilator_lint(dir.path(), &top) {
            panic!("width={width} latency={latency}: {e}");
        }
    }
}

#[test]
fn yosys_synth_check_assert_no_latches() {
    for &(width, latency) in &[(64u32, 1u32), (128, 2), (256, 10)] {
        let (dir, top, vs) = generated(&CompressParams { width, latency, stream: false });
        let s = tools::yosys_synth(dir.path(), &top, &vs).unwrap_or_else(|e| panic!("width={width}: {e}"));
        assert!(s.cells > 0);
        assert!(!s.by_type.iter().any(|(t, _)| t.contains("LATCH")), "latches at width={width}: {:?}", s.by_type);
    }
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in CompressParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// The default-parameter output is kept in tests/snapshots so that a review
/// shows how a change alters the Verilog. Refresh with GPURTL_BLESS=1.
#[test]
fn default_output_matches_snapshot() {
    let p = CompressParams::default();
    gpurtl_tests::check_snapshot("compress", &build(&p).unwrap());
}

// ---- stream mode (docs/compress.md "Stream mode") ----

/// Stream-unit points: the smallest width, the `stream` preset, a wide one,
/// and a deep pipeline.
const STREAM_POINTS: &[(u32, u32)] = &[(64, 1), (128, 2), (512, 3), (256, 10)];

fn stream_cosim(width: u32, latency: u32, seed_count: u64) {
    let p = CompressParams { width, latency, stream: true };
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(&p).expect("design builds")).expect("verilator build");
    let (mut vectors, mut beats) = (0, 0);
    for seed in seeds(seed_count) {
        let mut rng = Rng::new(seed * 104_729 + width as u64);
        let count = 1 + rng.below(4) as usize;
        // Mostly short streams, some up to 100 vectors; one element size per
        // seed or all of them.
        let max_len = *rng.pick(&[3usize, 10, 100]);
        let eb = rng.chance(50).then(|| *rng.pick(&[8u32, 16, 32, 64]));
        let streams = tb::random_streams(&mut rng, width, count, max_len, eb);
        // Every fourth seed runs without stalls so cycle counts are exact.
        let stalls = (seed % 4 != 0).then(|| Stalls { seed, in_pct: rng.below(70) as u32, out_pct: rng.below(70) as u32 });
        let want = model::run_streams(&streams, width, latency);
        // Every fourth seed (with stalls) mixes the compress streams, the
        // expand streams and vector operations.
        let mix = (seed % 4 == 1).then_some(seed);
        let k = if mix.is_some() { rng.below(12) as usize } else { 0 };
        let vector_ops = tb::random_ops(&mut rng, width, k, None);
        let run = tb::StreamRun { streams: &streams, vector_ops: &vector_ops, stalls, mix };
        let got = tb::run_streams(&compiled, width, latency, &run, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, vector_got, _)) => {
                if let Some(i) = (0..vector_ops.len()).find(|&i| vector_got[i] != model::apply(&vector_ops[i])) {
                    Some(format!(
                        "vector op {i} {:?} among the streams\n  model: {:?}\n  rtl:   {:?}",
                        vector_ops[i],
                        model::apply(&vector_ops[i]),
                        vector_got[i]
                    ))
                } else if let Some(i) = (0..streams.len()).find(|&i| got.streams[i] != want.streams[i]) {
                    Some(format!(
                        "stream {i} ({:?}, {} bits, {} vectors)\n  model: {:?}\n  rtl:   {:?}",
                        streams[i].op,
                        streams[i].element_bits,
                        streams[i].vectors.len(),
                        want.streams[i],
                        got.streams[i]
                    ))
                } else if stalls.is_none() && got.cycles != want.cycles {
                    Some(format!("cycles: model {} rtl {}", want.cycles, got.cycles))
                } else {
                    None
                }
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("compress_stream_w{width}_l{latency}_seed{seed}.vcd"));
            let _ = tb::run_streams(&compiled, width, latency, &run, Some(&vcd));
            panic!(
                "compress stream width={width} latency={latency} seed {seed}: {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test compress stream",
                vcd.display()
            );
        }
        vectors += streams.iter().map(|s| s.vectors.len()).sum::<usize>();
        beats += want.streams.iter().filter_map(|s| s.beats.as_ref().map(|b| b.len())).sum::<usize>();
    }
    eprintln!("compress stream width={width} latency={latency}: {} seeds, {vectors} vectors, {beats} dense beats, all match", seeds(seed_count).len());
}

#[test]
fn stream_cosim_width64_latency1() {
    stream_cosim(STREAM_POINTS[0].0, STREAM_POINTS[0].1, SEEDS)
}
#[test]
fn stream_cosim_width128_latency2() {
    stream_cosim(STREAM_POINTS[1].0, STREAM_POINTS[1].1, SEEDS)
}
/// `make test-full`.
#[test]
fn stream_cosim_width512_latency3() {
    if gpurtl_tests::full_tier("compress stream width=512 latency=3") {
        stream_cosim(STREAM_POINTS[2].0, STREAM_POINTS[2].1, SEEDS)
    }
}
#[test]
fn stream_cosim_width256_latency10() {
    stream_cosim(STREAM_POINTS[3].0, STREAM_POINTS[3].1, SEEDS)
}
/// The widest unit, fewer seeds (its Verilator model is the slowest):
/// `make test-full` (its build is the suite's longest).
#[test]
fn stream_cosim_width1024_latency4() {
    if gpurtl_tests::full_tier("compress stream width=1024 latency=4") {
        stream_cosim(1024, 4, 50)
    }
}

/// Vector operations through the stream unit: the same results, two more
/// cycles of latency (the input queue and the issue register), one vector
/// per cycle.
#[test]
fn stream_unit_runs_vector_operations() {
    let p = CompressParams { width: 128, latency: 2, stream: true };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let ops = tb::random_ops(&mut Rng::new(3), 128, 300, None);
    let (got, _) = tb::run(&compiled, 128, &ops, None, None).unwrap();
    assert_eq!(got.results, model::run(&ops, 4).results);
    assert_eq!(got.cycles, 300 - 1 + 4);
    let (got, _) = tb::run(&compiled, 128, &ops, Some(Stalls { seed: 9, in_pct: 30, out_pct: 60 }), None).unwrap();
    assert_eq!(got.results, model::run(&ops, 4).results);
}

/// Full masks at one element size: every input vector fills one dense beat,
/// one vector in per cycle, the beats right behind.
#[test]
fn stream_full_masks_run_at_one_vector_per_cycle() {
    let p = CompressParams { width: 128, latency: 2, stream: true };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let full = StreamVector { src: Some(vec![7; 8]), mask: Some(vec![1; 8]), old: None };
    let streams = vec![Stream { op: StreamKind::CompressStream, element_bits: 16, zeroing: false, vectors: vec![full; 200], dense: Vec::new() }];
    let (got, _, _) = tb::run_streams(&compiled, 128, 2, &tb::StreamRun::plain(&streams), None).unwrap();
    let want = model::run_streams(&streams, 128, 2);
    assert!(got == want, "the RTL and the model differ (cycles: rtl {}, model {})", got.cycles, want.cycles);
    let beats = got.streams[0].beats.as_ref().unwrap();
    assert_eq!(beats.len(), 200);
    // In at edges 0..199, out at latency 4 and the beat one cycle later.
    assert_eq!(got.cycles, 199 + 4 + 1);
}

#[test]
fn stream_unit_lint_and_synthesis_are_clean() {
    for &(width, latency) in &[(64u32, 1u32), (128, 2), (1024, 4)] {
        let (dir, top, vs) = generated(&CompressParams { width, latency, stream: true });
        if let Err(e) = tools::verilator_lint(dir.path(), &top) {
            panic!("stream width={width} latency={latency}: {e}");
        }
        if width <= 128 {
            let s = tools::yosys_synth(dir.path(), &top, &vs).unwrap_or_else(|e| panic!("stream width={width}: {e}"));
            assert!(!s.by_type.iter().any(|(t, _)| t.contains("LATCH")), "latches at stream width={width}: {:?}", s.by_type);
        }
    }
}

/// A compress stream expanded back with its saved masks gives the selected
/// elements back in place (zero elsewhere): the dense beats' elements (below
/// each beat's count; a count-0 beat carries none) are the expand stream's
/// source. Both directions through the RTL, generated and given masks.
#[test]
fn stream_round_trip_restores_the_selected_elements() {
    for (width, latency) in [(128u32, 2u32), (64, 1)] {
        let compiled = compile_design(&build(&CompressParams { width, latency, stream: true }).unwrap()).unwrap();
        for seed in 0..20u64 {
            let mut rng = Rng::new(seed + 77);
            let eb = *rng.pick(&[8u32, 16, 32, 64]);
            let mut compress = tb::random_streams(&mut rng, width, 1, 30, Some(eb));
            compress[0].op = StreamKind::CompressStream;
            compress[0].dense.clear();
            let n = (width / eb) as usize;
            for v in &mut compress[0].vectors {
                v.src.get_or_insert_with(|| vec![1; n]);
            }
            let (packed, _, _) = tb::run_streams(&compiled, width, latency, &tb::StreamRun::plain(&compress), None).unwrap();
            let out = &packed.streams[0];
            let dense: Vec<u64> =
                out.beats.as_ref().unwrap().iter().flat_map(|b| b.data[..b.count as usize].iter().copied()).collect();
            let vectors: Vec<StreamVector> =
                out.results.iter().map(|r| StreamVector { src: None, mask: Some(r.mask.clone()), old: None }).collect();
            let expand = vec![Stream { op: StreamKind::ExpandStream, element_bits: eb, zeroing: true, vectors, dense }];
            let (back, _, _) = tb::run_streams(&compiled, width, latency, &tb::StreamRun::plain(&expand), None).unwrap();
            for (k, (v, r)) in compress[0].vectors.iter().zip(&back.streams[0].results).enumerate() {
                let src = v.src.as_ref().unwrap();
                let want: Vec<u64> = src.iter().zip(&r.mask).map(|(&x, &m)| if m == 1 { x } else { 0 }).collect();
                assert_eq!(r.dst, want, "width {width} seed {seed} vector {k}");
            }
        }
    }
}
