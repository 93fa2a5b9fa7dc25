//! Kernel scheduler: cosimulation of the generated Verilog against the
//! golden model (docs/scheduler.md), the spec's properties on every trace,
//! lint and synthesis checks, snapshot.

use gpurtl_gen::rtl_engine::{compile_design, spec};
use gpurtl_gen::tools;
use gpurtl_sim::cosim::{compile, Compiled};
use gpurtl_hw::blocks::scheduler::build;
use gpurtl_params::scheduler::{Policy, SchedulerParams, StreamOrder};
use gpurtl_params::BlockParams;
use gpurtl_sim::models::scheduler::{self as model, Env};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::scheduler as tb;
use gpurtl_tests::{failure_dir, seeds};

const SEEDS: u64 = 200;

/// The cosimulated points: one and many streams and SMs, every policy,
/// aging on (with thresholds low enough to trigger) and off, reserve, both
/// stream orders, dispatch widths 1 to 3, odd capacities and narrow fields.
fn points() -> Vec<(&'static str, SchedulerParams)> {
    let d = SchedulerParams::default();
    vec![
        ("default", d.clone()),
        (
            "single",
            SchedulerParams {
                streams: 1, sms: 1, queue_depth: 1, policy: Policy::Rr, sm_slots: 3,
                stream_order: StreamOrder::Complete, ..d.clone()
            },
        ),
        (
            "wide",
            SchedulerParams {
                streams: 6, sms: 12, queue_depth: 3, policy: Policy::Least, age_threshold: 40, reserve: true,
                dispatch_width: 3, stream_order: StreamOrder::Complete, sm_threads: 1536, sm_regs: 50000,
                sm_smem: 49152, sm_slots: 5, ..d.clone()
            },
        ),
        (
            "priority",
            SchedulerParams {
                streams: 3, sms: 5, queue_depth: 2, policy: Policy::Priority, age_threshold: 0, dispatch_width: 2,
                sm_threads: 100, sm_regs: 300, sm_smem: 1000, sm_slots: 7, id_bits: 7, block_bits: 6, prio_bits: 3, ..d.clone()
            },
        ),
        (
            "rr",
            SchedulerParams { streams: 5, sms: 3, policy: Policy::Rr, dispatch_width: 3, queue_depth: 5, sm_slots: 2, ..d.clone() },
        ),
        (
            "reserve",
            SchedulerParams { streams: 2, sms: 2, policy: Policy::BestFit, age_threshold: 25, reserve: true, sm_slots: 64, ..d.clone() },
        ),
        // One entry per queue with several streams and two lanes.
        (
            "q1",
            SchedulerParams { streams: 3, sms: 4, queue_depth: 1, age_threshold: 30, dispatch_width: 2, sm_slots: 4, ..d.clone() },
        ),
        // 16 streams of 16-entry queues (8-bit tags).
        (
            "deep",
            SchedulerParams {
                streams: 16, sms: 3, queue_depth: 16, policy: Policy::Least, age_threshold: 60,
                stream_order: StreamOrder::Complete, ..d
            },
        ),
    ]
}

fn first_difference(a: &model::Trace, b: &model::Trace) -> String {
    fn diff<T: std::fmt::Debug + PartialEq>(what: &str, a: &[T], b: &[T]) -> Option<String> {
        let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
        Some(format!("{what}[{i}]: model {:?}, rtl {:?}", a.get(i), b.get(i)))
    }
    [
        diff("submissions", &a.submissions, &b.submissions),
        diff("rejections", &a.rejections, &b.rejections),
        diff("dispatches", &a.dispatches, &b.dispatches),
        diff("completions", &a.completions, &b.completions),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("\n  ")
}

/// The environment of `seed`: every fourth seed has no stalls and no extra
/// latency (what `gpurtl run` does), the others random ones.
fn env_of(seed: u64, rng: &mut Rng) -> Env {
    if seed.is_multiple_of(4) {
        Env { seed, ..Env::default() }
    } else {
        Env {
            seed,
            src_stall_pct: rng.below(70) as u32,
            dsp_stall_pct: rng.below(70) as u32,
            rej_stall_pct: rng.below(70) as u32,
            max_extra: rng.below(40),
        }
    }
}

fn workload_of(seed: u64, p: &SchedulerParams) -> (model::Workload, Env) {
    let mut rng = Rng::new(seed * 7_919 + p.streams as u64 * 31 + p.sms as u64);
    let n = 1 + rng.below(24) as usize;
    let w = tb::random_workload(&mut rng, p, n, 400);
    (w, env_of(seed, &mut rng))
}

/// The first seed (of `seeds`) where the RTL's trace differs from the
/// model's: (seed, what differs, whether the spec's trace properties alone
/// also catch it).
fn first_mismatch(compiled: &Compiled, p: &SchedulerParams, seeds: &[u64]) -> Option<(u64, String, bool)> {
    for &seed in seeds {
        let (w, env) = workload_of(seed, p);
        let want = model::run(p, &w, &env);
        match tb::run(compiled, p, &w, &env, None) {
            Err(e) => return Some((seed, format!("the RTL run failed: {e}"), true)),
            Ok((got, _)) if got != want => {
                let props = model::check_trace(p, &w, &env, &got).is_err();
                return Some((seed, first_difference(&want, &got), props));
            }
            Ok(_) => {}
        }
    }
    None
}

fn cosim(name: &str, p: &SchedulerParams) {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let (mut kernels, mut blocks, mut rejected) = (0usize, 0usize, 0usize);
    for seed in seeds(SEEDS) {
        let (w, env) = workload_of(seed, p);
        let want = model::run(p, &w, &env);
        if let Err(e) = model::check_trace(p, &w, &env, &want) {
            panic!("scheduler {name} seed {seed}: the model breaks the spec: {e}\n  workload {w:?}");
        }
        kernels += w.kernels.len();
        blocks += want.dispatches.len();
        rejected += want.rejections.len();
        let got = tb::run(&compiled, p, &w, &env, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            // The trace properties of the spec are checked on the RTL's
            // trace too: with identical traces they hold for both.
            Ok((got, _)) => {
                (got != &want).then(|| first_difference(&want, got)).or_else(|| model::check_trace(p, &w, &env, got).err())
            }
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("scheduler_{name}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, p, &w, &env, Some(&vcd));
            panic!(
                "scheduler {name} seed {seed} (env {env:?}):\n  {problem}\n  workload: {w:?}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test scheduler",
                vcd.display()
            );
        }
    }
    eprintln!("scheduler {name}: {} seeds, {kernels} kernels, {blocks} blocks, {rejected} rejected, all match", seeds(SEEDS).len());
}

#[test]
fn cosim_default() {
    cosim("default", &points()[0].1);
}

#[test]
fn cosim_single() {
    cosim("single", &points()[1].1);
}

#[test]
fn cosim_wide() {
    cosim("wide", &points()[2].1);
}

#[test]
fn cosim_priority() {
    cosim("priority", &points()[3].1);
}

#[test]
fn cosim_rr() {
    cosim("rr", &points()[4].1);
}

#[test]
fn cosim_reserve() {
    cosim("reserve", &points()[5].1);
}

#[test]
fn cosim_q1() {
    cosim("q1", &points()[6].1);
}

#[test]
fn cosim_deep() {
    cosim("deep", &points()[7].1);
}

/// Three bugs planted in the generated Verilog, each caught by the
/// cosimulation: a dispatch that ignores the SM's free threads (SMs are
/// over-subscribed), aging one cycle early (`>=` for `>`), and a dispatch
/// FIFO that takes a third record (one is overwritten under back-pressure).
#[test]
fn planted_bugs_are_caught() {
    let p = SchedulerParams { age_threshold: 30, ..SchedulerParams::default() };
    let design = build(&p).unwrap();
    let clean = spec(&design);
    let bugs: [(&str, &str, &str, bool); 3] = [
        ("dispatch ignores threads", "(cur_i[11:0] <= free_thr_q)", "1'b1", true),
        ("aging one cycle early", "s0_age_q > 16'd30", "s0_age_q >= 16'd30", false),
        ("dispatch FIFO takes a third record", "fifo_count_q < 2'd2", "fifo_count_q < 2'd3", false),
    ];
    let seeds: Vec<u64> = (0..SEEDS).collect();
    for (what, from, to, props) in bugs {
        let mut s = clean.clone();
        assert!(s.verilog.contains(from), "{what}: `{from}` is not in the generated Verilog");
        s.verilog = s.verilog.replace(from, to);
        let compiled = compile(&s).expect("verilator build");
        let Some((seed, diff, caught_by_props)) = first_mismatch(&compiled, &p, &seeds) else {
            panic!("planted bug `{what}` was not caught in {SEEDS} seeds");
        };
        eprintln!("planted bug `{what}`: caught at seed {seed}: {diff} (trace properties alone: {caught_by_props})");
        if props {
            assert!(caught_by_props, "{what}: the trace properties should catch an over-subscribed SM");
        }
    }
}

/// docs/scheduler.md "Reserve and the wait bound": `age_threshold + S * (D +
/// W + 12)`, D the longest block run time (duration + extra latency).
fn wait_bound(p: &SchedulerParams, w: &model::Workload, env: &Env) -> u64 {
    let d = w.kernels.iter().enumerate().map(|(i, k)| k.duration + (0..k.blocks).map(|b| env.extra(i, b)).max().unwrap_or(0)).max().unwrap_or(0);
    p.age_threshold as u64 + p.streams as u64 * (d + p.dispatch_width as u64 + 12)
}

/// Reserve is what bounds the wait: a head that needs a whole SM while the
/// other stream keeps both SMs partly busy waits past the bound without
/// reserve and within it with reserve (model, and the RTL with reserve).
#[test]
fn reserve_is_what_bounds_the_wait() {
    let p = points()[5].1.clone();
    let small = |id: u64| model::Kernel {
        id,
        stream: 1,
        blocks: 4,
        threads: 64,
        regs: 64,
        smem: 29491,
        duration: 50 + 10 * (id % 3),
        priority: 0,
        submit: 0,
    };
    let mut kernels: Vec<model::Kernel> = (0..30).map(small).collect();
    let big = model::Kernel { id: 100, stream: 0, blocks: 2, smem: 65536, duration: 50, ..small(0) };
    kernels.insert(1, big);
    let w = model::Workload { kernels };
    let env = Env::default();
    let bound = wait_bound(&p, &w, &env);
    let wait = |q: &SchedulerParams, t: &model::Trace| model::output_json(q, &w, t)["worst_wait"].as_u64().unwrap();
    let without = SchedulerParams { reserve: false, ..p.clone() };
    let starved = wait(&without, &model::run(&without, &w, &env));
    assert!(starved > bound, "without reserve the big head should wait past the bound {bound}: {starved}");
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    let (t, _) = tb::run(&compiled, &p, &w, &env, None).expect("rtl run");
    assert_eq!(t, model::run(&p, &w, &env));
    let reserved = wait(&p, &t);
    assert!(reserved <= bound, "with reserve: worst wait {reserved} above the bound {bound}");
    eprintln!("reserve: worst wait {starved} without, {reserved} with; bound {bound}");
}

/// The wait bound of reserve on random workloads through the RTL: random
/// source stalls and extra block latency, the dispatch port always ready
/// (the bound has no term for back-pressure).
#[test]
fn reserve_bounds_the_wait_in_the_rtl() {
    let p = points()[5].1.clone();
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    let mut worst = 0f64;
    for seed in seeds(50) {
        let (w, env) = workload_of(seed, &p);
        let env = Env { dsp_stall_pct: 0, rej_stall_pct: 0, ..env };
        let (t, _) = tb::run(&compiled, &p, &w, &env, None).expect("rtl run");
        let out = model::output_json(&p, &w, &t);
        let bound = wait_bound(&p, &w, &env);
        let wait = out["worst_wait"].as_u64().unwrap();
        assert!(wait <= bound, "seed {seed}: worst wait {wait} above the bound {bound}");
        worst = worst.max(wait as f64 / bound as f64);
    }
    eprintln!("reserve: largest worst wait / bound over 50 seeds: {worst:.2}");
}

fn generated(p: &SchedulerParams) -> (tempfile::TempDir, String, Vec<String>) {
    gpurtl_tests::generated(&build(p).unwrap())
}

/// Verilator lint and yosys's checks at every point and preset (but
/// `wide`, below; the `default` preset is the default point); a full
/// synthesis at the default point (at every one with `GPURTL_FULL=1`: the
/// `deep` point's takes over a minute).
#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    let mut all = points();
    for (name, p) in SchedulerParams::presets() {
        if name != "wide" && !all.iter().any(|(_, q)| *q == p) {
            all.push((name, p));
        }
    }
    assert_eq!(all.len(), points().len() + 3, "the presets rr, cuda and small");
    for (name, p) in all {
        gpurtl_tests::lint_and_yosys_clean(name, &build(&p).unwrap(), name == "default");
    }
}

/// 16 streams x 64 SMs (the `wide` preset, 4 per cycle) generates and is
/// lint-clean; its synthesis is measured by `make synth-table`.
#[test]
fn wide_preset_is_lint_clean() {
    let p = SchedulerParams::presets().into_iter().find(|(n, _)| *n == "wide").unwrap().1;
    assert_eq!((p.streams, p.sms), (16, 64));
    let (dir, top, _) = generated(&p);
    tools::verilator_lint(dir.path(), &top).unwrap();
}

#[test]
fn default_output_matches_snapshot() {
    gpurtl_tests::check_snapshot("scheduler", &build(&SchedulerParams::default()).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in SchedulerParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// The small points the properties are proven at: tiny capacities and
/// fields, every policy and stream order, queues and stream counts that are
/// and are not powers of two; one SM (where the table bounds and the
/// resources in use are checked against the blocks in flight), and two SMs
/// with two lanes (several completions in one transfer).
fn formal_points() -> Vec<(&'static str, SchedulerParams)> {
    let tiny = SchedulerParams {
        streams: 2,
        sms: 1,
        queue_depth: 2,
        sm_threads: 3,
        sm_regs: 3,
        sm_smem: 3,
        sm_slots: 2,
        id_bits: 1,
        block_bits: 2,
        prio_bits: 1,
        age_threshold: 3,
        ..SchedulerParams::default()
    };
    vec![
        ("best_fit", tiny.clone()),
        ("rr_complete", SchedulerParams { policy: Policy::Rr, stream_order: StreamOrder::Complete, ..tiny.clone() }),
        (
            "priority_reserve",
            SchedulerParams { streams: 3, queue_depth: 3, policy: Policy::Priority, reserve: true, sm_slots: 3, ..tiny.clone() },
        ),
        ("least_one_stream", SchedulerParams { streams: 1, queue_depth: 1, policy: Policy::Least, sm_slots: 1, ..tiny.clone() }),
        ("two_sms_two_lanes", SchedulerParams { sms: 2, dispatch_width: 2, ..tiny }),
    ]
}

/// The properties stated in the RTL (hw/src/blocks/scheduler/props.rs) are
/// proven by induction with yosys at each formal point; a planted bug (a
/// dispatch that ignores the free threads) makes the proof fail.
#[test]
fn formal_properties_are_proven() {
    for (name, p) in formal_points() {
        p.validate().unwrap();
        let design = build(&p).unwrap();
        let props = design.top().props.len();
        assert!(props > 10, "{name}: {props} properties");
        let (dir, top, vs) = generated(&p);
        let k = tools::prove(dir.path(), &top, &vs, 12).unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("scheduler formal {name}: {props} properties proven (induction length {k})");
    }
    let p = formal_points()[0].1.clone();
    let (dir, top, vs) = generated(&p);
    let sm = dir.path().join("gpurtl_scheduler_sm.v");
    let text = std::fs::read_to_string(&sm).unwrap();
    let from = "(cur_i[1:0] <= free_thr_q)";
    assert!(text.contains(from));
    std::fs::write(&sm, text.replace(from, "1'b1")).unwrap();
    match tools::prove(dir.path(), &top, &vs, 12) {
        Err(e @ tools::ProofFailure::Counterexample { .. }) => eprintln!("scheduler formal: planted bug found: {e}"),
        other => panic!("the planted bug should give a counterexample, got {other:?}"),
    }
}
