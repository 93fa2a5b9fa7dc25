//! The kernel scheduler on the command line: run, and a bench that plays
//! workload mixes through every policy against the round-robin baseline.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::emit;
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::scheduler::build;
use gpurtl_params::scheduler::{Policy, SchedulerParams};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::scheduler::{self as model, Env, Kernel, Trace, Workload};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::scheduler as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Scheduler;
pub const BLOCK: Scheduler = Scheduler;

/// A run: the workload (the output file needs it) and the port trace.
pub struct Run {
    pub workload: Workload,
    pub trace: Trace,
}

impl BlockDef for Scheduler {
    type Params = SchedulerParams;
    type Input = Workload;
    type Output = Run;
    const SUMMARY: &'static str =
        "resource-table kernel scheduler: streams of kernels onto SMs by best fit, least need or priority, with aging";
    const BENCH_OPTIONS: &'static [&'static str] = &["--random", "--seed"];

    fn build(p: &SchedulerParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &SchedulerParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    fn model(p: &SchedulerParams, w: &Workload) -> Result<Run> {
        Ok(Run { workload: w.clone(), trace: model::run(p, w, &Env::default()) })
    }
    fn rtl(p: &SchedulerParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Run, CosimError> {
        let (trace, _) = tb::run(compiled, p, w, &Env::default(), vcd)?;
        Ok(Run { workload: w.clone(), trace })
    }
    fn output_json(p: &SchedulerParams, r: &Run) -> Value {
        model::output_json(p, &r.workload, &r.trace)
    }
    fn random_input(p: &SchedulerParams, rng: &mut Rng) -> Workload {
        let n = 1 + rng.below(10) as usize;
        tb::random_workload(rng, p, n, 120)
    }

    /// Every policy against round-robin on the named mixes and on random
    /// ones: makespan, utilization, worst wait; the reserve run's worst wait
    /// against its bound; a Gantt chart per named mix. The golden model plays
    /// the mixes (the cosimulation proves it equals the RTL cycle for cycle);
    /// the RTL replays the named mixes at the given parameters and must give
    /// the same output files.
    fn bench(p: &SchedulerParams, o: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let n_random = o.random.unwrap_or(100);
        let seed = o.seed.unwrap_or(1);
        let policies = policy_points(p);
        let mixes = named_mixes(p);
        for (name, _, w) in &mixes {
            check_mix(p, name, w)?;
        }
        // The Verilator build, each named mix, the random mixes, the area.
        o.steps(1 + mixes.len() as u64 + 1 + 1);
        let _ = writeln!(
            out,
            "scheduler bench: {} streams, {} SMs ({} threads, {} regs, {} B smem, {} slots), queue {}, {} per cycle, stream order {}, age threshold {}",
            p.streams, p.sms, p.sm_threads, p.sm_regs, p.sm_smem, p.sm_slots, p.queue_depth, p.dispatch_width, p.stream_order, p.age_threshold
        );
        o.running("the Verilator build");
        let design = build(p)?;
        let compiled = compile_design(&design)?;
        o.done("the Verilator build");
        let mut mixes_json = Vec::new();
        for (name, about, w) in mixes {
            o.running(&format!("mix `{name}`: every policy, then the RTL"));
            let _ = writeln!(out, "\nmix `{name}`: {about} ({} kernels, {} blocks)", w.kernels.len(), blocks_of(&w));
            let _ = writeln!(
                out,
                "{:<18} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>10} {:>8}",
                "policy", "makespan", "vs rr", "thr", "regs", "smem", "slots", "worst wait", "bound"
            );
            let mut rows = Vec::new();
            let mut runs = Vec::new();
            for (label, q) in &policies {
                let t = model::run(q, &w, &Env::default());
                let f = Figures::of(q, &w, &t);
                runs.push((label.clone(), t));
                rows.push((label.clone(), q.clone(), f));
            }
            let rr = rows[0].2.makespan.max(1) as f64;
            let mut row_json = Vec::new();
            for (label, q, f) in &rows {
                let bound = q.reserve.then(|| wait_bound(q, &w));
                let _ = writeln!(
                    out,
                    "{:<18} {:>9} {:>+6.1}% {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>10} {:>8}",
                    label,
                    f.makespan,
                    100.0 * (f.makespan as f64 / rr - 1.0),
                    f.util[0],
                    f.util[1],
                    f.util[2],
                    f.util[3],
                    f.worst_wait,
                    bound.map_or("-".to_string(), |b| b.to_string())
                );
                row_json.push(json!({
                    "policy": label, "params": q, "makespan": f.makespan, "vs_rr": f.makespan as f64 / rr,
                    "utilization": {"threads": f.util[0], "regs": f.util[1], "smem": f.util[2], "slots": f.util[3]},
                    "worst_wait": f.worst_wait, "wait_bound": bound,
                    "within_bound": bound.map(|b| f.worst_wait <= b),
                }));
            }
            let best = rows[1..].iter().min_by_key(|r| r.2.makespan).expect("policies besides rr");
            let gain = 1.0 - best.2.makespan as f64 / rr;
            let _ = writeln!(out, "best: {} ({:+.1}% makespan against rr)", best.0, 100.0 * (best.2.makespan as f64 / rr - 1.0));
            // The RTL at the given parameters gives the same output file.
            let want = model::output_json(p, &w, &model::run(p, &w, &Env::default()));
            let (t, stats) = tb::run(&compiled, p, &w, &Env::default(), None)?;
            let got = model::output_json(p, &w, &t);
            if got != want {
                return Err(Error::Failed(format!("mix `{name}`: the RTL's output differs from the golden model's")));
            }
            let _ = writeln!(out, "RTL ({}): same output as the model; {:.0} cosim cycles/s", p.policy, stats.rate());
            let chart = o.beside(&format!("{name}.svg"));
            let shown = [&runs[0], runs.iter().find(|r| r.0 == best.0).expect("the best run")];
            let svg = gantt(p, &w, &format!("mix `{name}`"), &shown.iter().map(|r| (r.0.as_str(), &r.1)).collect::<Vec<_>>());
            emit::write_atomic(&chart, svg.as_bytes()).map_err(|e| Error::io("write", &chart, e))?;
            let _ = writeln!(out, "chart: {}", chart.display());
            o.done(&format!("mix `{name}`"));
            mixes_json.push(json!({
                "mix": name, "about": about, "kernels": w.kernels.len(), "blocks": blocks_of(&w),
                "rows": row_json, "best": best.0, "best_vs_rr": 1.0 - gain,
                "rtl_matches_model": true, "cosim_cycles_per_second": stats.rate(), "chart": chart.display().to_string(),
            }));
        }

        // Random mixes.
        let _ = writeln!(out, "\n{n_random} random mixes from seed {seed}:");
        let mut sums = vec![0f64; policies.len()];
        let mut worse = vec![0u64; policies.len()];
        let mut waits = vec![0u64; policies.len()];
        let mut bound_ok = true;
        let mut rng = Rng::new(seed);
        o.running(&format!("{n_random} random mixes"));
        for k in 0..n_random {
            let w = random_mix(&mut rng, p);
            check_mix(p, &format!("random {}", k + 1), &w)?;
            let mut spans = Vec::new();
            for (j, (_, q)) in policies.iter().enumerate() {
                let t = model::run(q, &w, &Env::default());
                let f = Figures::of(q, &w, &t);
                if q.reserve && f.worst_wait > wait_bound(q, &w) {
                    bound_ok = false;
                }
                waits[j] = waits[j].max(f.worst_wait);
                spans.push(f.makespan);
            }
            for (j, s) in spans.iter().enumerate() {
                sums[j] += *s as f64;
                worse[j] += (*s > spans[0]) as u64;
            }
            if (k + 1) % 25 == 0 && k + 1 < n_random {
                let _ = writeln!(out, "  {} of {n_random} mixes", k + 1);
            }
        }
        let _ = writeln!(out, "{:<18} {:>14} {:>7} {:>19} {:>15}", "policy", "mean makespan", "vs rr", "mixes worse than rr", "worst wait");
        let mut random_json = Vec::new();
        for (j, (label, q)) in policies.iter().enumerate() {
            let mean = sums[j] / n_random as f64;
            let vs = sums[j] / sums[0].max(1.0);
            let _ = writeln!(out, "{:<18} {:>14.1} {:>+6.1}% {:>19} {:>15}", label, mean, 100.0 * (vs - 1.0), worse[j], waits[j]);
            random_json.push(json!({
                "policy": label, "params": q, "mean_makespan": mean, "vs_rr": vs, "mixes_worse_than_rr": worse[j], "worst_wait": waits[j],
            }));
        }
        let _ = writeln!(out, "reserve: every worst wait within its bound: {}", if bound_ok { "yes" } else { "NO" });
        o.done(&format!("{n_random} random mixes"));
        o.running("yosys area");
        let s = yosys_area(&design)?;
        o.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({
            "block": "scheduler",
            "generator": generator(),
            "params": p,
            "mixes": mixes_json,
            "random": {"mixes": n_random, "seed": seed, "rows": random_json, "reserve_within_bound": bound_ok},
            "yosys_cells": s.cells,
            "yosys_flip_flops": s.flip_flops,
        }))
    }
}

fn blocks_of(w: &Workload) -> u64 {
    w.kernels.iter().map(|k| k.blocks as u64).sum()
}

/// The policies the bench compares, round-robin first: every policy at the
/// given parameters (no reserve), then the given policy (best fit if it is
/// rr) with reserve, aging at the given threshold (512 if it is 0).
fn policy_points(p: &SchedulerParams) -> Vec<(String, SchedulerParams)> {
    let mut v: Vec<(String, SchedulerParams)> = [Policy::Rr, Policy::BestFit, Policy::Least, Policy::Priority]
        .into_iter()
        .map(|policy| (policy.to_string(), SchedulerParams { policy, reserve: false, ..p.clone() }))
        .collect();
    let policy = if p.policy == Policy::Rr { Policy::BestFit } else { p.policy };
    let age_threshold = if p.age_threshold == 0 { 512 } else { p.age_threshold };
    v.push((format!("{policy}+reserve"), SchedulerParams { policy, reserve: true, age_threshold, ..p.clone() }));
    v
}

/// docs/scheduler.md "Reserve and the wait bound": `age_threshold + S * (D + W + 12)`.
fn wait_bound(p: &SchedulerParams, w: &Workload) -> u64 {
    let d = w.kernels.iter().map(|k| k.duration).max().unwrap_or(0);
    p.age_threshold as u64 + p.streams as u64 * (d + p.dispatch_width as u64 + 12)
}

struct Figures {
    makespan: u64,
    util: [f64; 4],
    worst_wait: u64,
}

impl Figures {
    fn of(p: &SchedulerParams, w: &Workload, t: &Trace) -> Figures {
        let v = model::output_json(p, w, t);
        let u = |k: &str| v["utilization"][k].as_f64().unwrap_or(0.0);
        Figures {
            makespan: v["makespan"].as_u64().unwrap_or(0),
            util: [u("threads"), u("regs"), u("smem"), u("slots")],
            worst_wait: v["worst_wait"].as_u64().unwrap_or(0),
        }
    }
}

/// A kernel taking `frac` thousandths of an SM's threads, registers and
/// shared memory per block (at least 1 of each).
fn kernel(p: &SchedulerParams, id: u64, stream: u32, blocks: u32, frac: [u64; 3], duration: u64) -> Kernel {
    let part = |cap: u32, f: u64| ((cap as u64 * f / 1000).clamp(1, cap as u64)) as u32;
    Kernel {
        id,
        stream,
        blocks: blocks.max(1),
        threads: part(p.sm_threads, frac[0]),
        regs: part(p.sm_regs, frac[1]),
        smem: part(p.sm_smem, frac[2]),
        duration,
        priority: 0,
        submit: 0,
    }
}

/// The kernels numbered in list order.
fn finish(mut kernels: Vec<Kernel>) -> Workload {
    for (i, k) in kernels.iter_mut().enumerate() {
        k.id = i as u64;
    }
    Workload { kernels }
}

/// A mix whose ids or block counts the ports cannot carry is refused, not cut down.
fn check_mix(p: &SchedulerParams, name: &str, w: &Workload) -> Result<()> {
    tb::fits_ports(p, w).map_err(|e| {
        Error::Bad(format!(
            "bench scheduler: mix `{name}`: {e}; the bench's mixes need id_bits and block_bits wide enough for {} kernels of up to {} blocks",
            w.kernels.len(),
            w.kernels.iter().map(|k| k.blocks).max().unwrap_or(0)
        ))
    })
}

/// The named mixes: (name, what it shows, workload).
fn named_mixes(p: &SchedulerParams) -> Vec<(&'static str, &'static str, Workload)> {
    let (s, m) = (p.streams, p.sms);
    // contention (seed figures 2 and 4): stream 0 runs a long kernel, one
    // block per SM (60% of its threads, 40% of its registers and shared
    // memory); stream 1's head needs a whole SM's shared memory, so it fits
    // nowhere until the long kernel ends. The other streams (stream 0 too
    // when there are only two) bring small kernels: few threads, 10% of the
    // memory. Round-robin holds every stream at stream 1's turn while its
    // head does not fit, so 60% of every SM idles; the policies run the
    // small kernels there meanwhile.
    let mut k = vec![kernel(p, 0, 0, m, [600, 400, 400], 1000)];
    if s > 1 {
        k.push(kernel(p, 1, 1, m, [250, 250, 1000], 100));
    }
    let small: Vec<u32> = if s > 2 { (2..s).collect() } else { vec![0] };
    let mut id = 2u64;
    for round in 0..8u32 {
        for &st in &small {
            k.push(kernel(p, id, st, 2 * m, [20, 100, 100], 120 + 20 * ((round + st) as u64 % 3)));
            id += 1;
        }
    }
    let contention = finish(k);
    // uniform: every stream the same medium kernels (policies cannot do
    // much better than turns).
    let mut k = Vec::new();
    let mut id = 0u64;
    for _ in 0..4 {
        for st in 0..s {
            k.push(kernel(p, id, st, m, [250, 250, 250], 100));
            id += 1;
        }
    }
    let uniform = finish(k);
    // sizes: each stream its own block size, from a sixteenth of an SM to
    // all of it, and durations that differ (best fit packs the leftovers).
    let mut k = Vec::new();
    let mut id = 0u64;
    for r in 0..4u32 {
        for st in 0..s {
            let f = [62u64, 250, 500, 1000][((st + r) % 4) as usize];
            k.push(kernel(p, id, st, m + st % 3 * m / 2, [f, f / 2 + 1, f], 40 + 30 * ((st + 2 * r) % 5) as u64));
            id += 1;
        }
    }
    let sizes = finish(k);
    // starve: stream 0's head needs a whole SM's shared memory while the
    // other streams keep every SM partly busy with small kernels. A policy
    // without reserve runs the small kernels as long as there are any (the
    // big head never fits); rr holds the turn; reserve bounds the wait.
    let mut k = Vec::new();
    let mut id = 0u64;
    let others: Vec<u32> = (1..s).collect();
    for round in 0..12u32 {
        for &st in &others {
            k.push(kernel(p, id, st, 2 * m, [100, 100, 450], 100 + 20 * ((round + st) as u64 % 3)));
            id += 1;
        }
        if round == 0 {
            k.push(kernel(p, id, 0, m, [250, 250, 1000], 100));
            id += 1;
        }
    }
    let starve = finish(k);
    vec![
        ("contention", "a long kernel on every SM, a head that needs a whole SM, small kernels on the other streams", contention),
        ("starve", "a whole-SM head on stream 0 while small kernels keep every SM partly busy", starve),
        ("uniform", "every stream the same quarter-SM kernels", uniform),
        ("sizes", "block sizes from 1/16 of an SM to a whole SM, durations 40..160", sizes),
    ]
}

/// A random mix: every stream 1..6 kernels of a random size class, block
/// count 1..2M, duration 10..400, random priority, submitted at 0 or later.
fn random_mix(rng: &mut Rng, p: &SchedulerParams) -> Workload {
    let mut k = Vec::new();
    let mut id = 0u64;
    for st in 0..p.streams {
        for _ in 0..1 + rng.below(6) {
            let size = |rng: &mut Rng| match rng.below(4) {
                0 => 1 + rng.below(60),
                1 => 60 + rng.below(200),
                2 => 250 + rng.below(500),
                _ => 750 + rng.below(251),
            };
            let frac = [size(rng), size(rng), size(rng)];
            let blocks = 1 + rng.below(2 * p.sms as u64) as u32;
            let mut x = kernel(p, id, st, blocks, frac, 10 + rng.below(391));
            x.priority = rng.below(1 << p.prio_bits) as u32;
            x.submit = if rng.chance(70) { 0 } else { rng.below(2000) };
            k.push(x);
            id += 1;
        }
    }
    // Submission order across streams is random too.
    rng.shuffle(&mut k);
    finish(k)
}

/// A Gantt chart: a panel per run, a row per SM, a bar per block from its
/// dispatch to its completion, coloured by kernel.
fn gantt(p: &SchedulerParams, w: &Workload, title: &str, runs: &[(&str, &Trace)]) -> String {
    let index: std::collections::HashMap<u64, usize> = w.kernels.iter().enumerate().map(|(i, k)| (k.id, i)).collect();
    let panels: Vec<crate::gantt::Panel> = runs
        .iter()
        .map(|(label, t)| {
            let done: std::collections::HashMap<(u64, u32), u64> = t.completions.iter().map(|c| ((c.kernel, c.block), c.cycle)).collect();
            let bars = t
                .dispatches
                .iter()
                .map(|d| {
                    let c = done.get(&(d.kernel, d.block)).copied().unwrap_or(d.cycle);
                    let colour = index.get(&d.kernel).copied().unwrap_or(0) as u64;
                    crate::gantt::Bar { row: d.sm, start: d.cycle, end: c, colour, tip: format!("kernel {}, SM {}, cycles {}..{c}", d.kernel, d.sm, d.cycle) }
                })
                .collect();
            crate::gantt::Panel { label, bars }
        })
        .collect();
    crate::gantt::gantt(title, &format!("{} SMs; bars: blocks, colour: kernel", p.sms), "SM", p.sms, &panels)
}
