//! Testbench for the generated systolic grid: plays the sequencer's step
//! program (docs/systolic.md) into the grid group by group, answers the
//! initial-accumulator read port, collects result rows into C, and reads the
//! statistics counters. Random stalls on the input and the output.

use super::{fail, mask, put, take, LoopTimer, RunStats, Staller, Stalls};
use crate::cosim::{Compiled, CosimError, PortHandle};
use crate::models::systolic::{program, ws_program, Gemm, Outcome};
use gpurtl_params::systolic::{Dataflow, ElemType, SystolicParams};
use crate::rng::Rng;
use std::path::Path;

struct Ports {
    rst: PortHandle,
    in_valid: PortHandle,
    in_ready: PortHandle,
    in_a: PortHandle,
    in_b: PortHandle,
    in_steps: PortHandle,
    in_last: PortHandle,
    out_valid: PortHandle,
    out_ready: PortHandle,
    out_row: PortHandle,
    out_c: PortHandle,
    /// Absent without `c0_add`.
    out_c0: Option<PortHandle>,
    /// The counters; absent without `stats`.
    stats: Option<(PortHandle, PortHandle, PortHandle)>,
}

/// Runs one GEMM through the grid of either dataflow.
pub fn run(
    compiled: &Compiled,
    cfg: &SystolicParams,
    gemm: &Gemm,
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    if cfg.dataflow == Dataflow::Ws {
        run_ws(compiled, cfg, gemm, stalls, vcd)
    } else {
        run_os(compiled, cfg, gemm, stalls, vcd)
    }
}

/// A value of `acc` bits read as the accumulator's type: signed when either
/// element type is, held as in [`Gemm`].
fn acc_value(raw: u64, acc: u32, signed: bool) -> i64 {
    if signed && acc < 64 && (raw >> (acc - 1)) & 1 == 1 {
        (raw | !mask(acc)) as i64
    } else {
        raw as i64
    }
}

fn run_os(
    compiled: &Compiled,
    cfg: &SystolicParams,
    gemm: &Gemm,
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let s = &sim;
    let p = Ports {
        rst: s.port("rst_i")?,
        in_valid: s.port("in_valid_i")?,
        in_ready: s.port("in_ready_o")?,
        in_a: s.port("in_a_i")?,
        in_b: s.port("in_b_i")?,
        in_steps: s.port("in_steps_i")?,
        in_last: s.port("in_last_i")?,
        out_valid: s.port("out_valid_o")?,
        out_ready: s.port("out_ready_i")?,
        out_row: s.port("out_row_o")?,
        out_c: s.port("out_c_o")?,
        out_c0: if cfg.c0_add { Some(s.port("out_c0_i")?) } else { None },
        stats: if cfg.stats {
            Some((s.port("stat_useful_o")?, s.port("stat_gated_o")?, s.port("stat_skipped_o")?))
        } else {
            None
        },
    };
    let (r, c, l, g) = (cfg.rows, cfg.cols, cfg.lanes, cfg.group);
    let (ab, bb, acc) = (cfg.a_type.bits(), cfg.b_type.bits(), cfg.acc_bits);
    let (ch, slot) = (cfg.channel_bits, cfg.channel_bits / cfg.lanes);
    let signed = cfg.a_type.signed() || cfg.b_type.signed();
    let (m, n) = (gemm.a.len(), gemm.b[0].len());
    let c0_at = |row: usize, col: usize| gemm.c0.as_ref().map_or(0, |c0| c0[row][col]);
    let mut out: Vec<Vec<i64>> = (0..m).map(|i| (0..n).map(|j| c0_at(i, j)).collect()).collect();

    let tiles = program(cfg, gemm);
    let groups: Vec<_> = tiles.iter().flat_map(|t| t.groups.iter()).collect();
    let mut stall = Staller::new(stalls);

    sim.reset(p.rst, 2);

    let mut next = 0usize;
    let mut offering = false;
    let (mut tile, mut rows_out) = (0usize, 0u32);
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    // Stimulus packed before the run, out of the per-cycle path.
    let a_words = (g * r * ch).div_ceil(32) as usize;
    let b_words = (g * c * ch).div_ceil(32) as usize;
    let packed: Vec<(Vec<u32>, Vec<u32>)> = groups
        .iter()
        .map(|gr| {
            let (mut wa, mut wb) = (vec![0u32; a_words], vec![0u32; b_words]);
            for (si, st) in gr.steps.iter().enumerate() {
                let si = si as u32;
                for i in 0..r {
                    for ln in 0..l {
                        put(&mut wa, (si * r + i) * ch + ln * slot, ab, st.a[i as usize][ln as usize] as u64);
                    }
                }
                for j in 0..c {
                    for ln in 0..l {
                        put(&mut wb, (si * c + j) * ch + ln * slot, bb, st.b[j as usize][ln as usize] as u64);
                    }
                }
            }
            (wa, wb)
        })
        .collect();
    // The initial-accumulator answer, kept for the (tile, row) it was made for.
    let mut wc0 = vec![0u32; (c * acc).div_ceil(32) as usize];
    let mut c0_for: Option<(usize, usize)> = None;
    let mut words = Vec::new();
    let steps_total: u64 = groups.iter().map(|gr| gr.steps.len() as u64 + 1).sum();
    let limit = sim.cycle() + 1000 + (steps_total + tiles.len() as u64 * (r + c) as u64 * 4) * 20;
    let timer = LoopTimer::start(&sim);
    while tile < tiles.len() {
        if sim.cycle() > limit {
            let msg = format!("the RTL stopped making progress: {tile} of {} tiles out", tiles.len());
            return Err(fail(&mut sim, msg));
        }
        let now = sim.cycle();
        if !offering && next < groups.len() && !stall.hold_input() {
            offering = true;
            let gr = groups[next];
            sim.set_words(p.in_a, &packed[next].0);
            sim.set_words(p.in_b, &packed[next].1);
            sim.set(p.in_steps, gr.steps.len() as u64);
            sim.set(p.in_last, gr.last as u64);
        }
        sim.set(p.in_valid, offering as u64);
        let ready = !stall.hold_output();
        sim.set(p.out_ready, ready as u64);
        // The initial-accumulator port answers for the row on offer. The row
        // is a register (known since the last edge); should it ever follow
        // the inputs, the answer is made again and the model settled again.
        let t = &tiles[tile];
        let mut row = sim.get(p.out_row) as usize;
        loop {
            if let (Some(out_c0), true) = (p.out_c0, c0_for != Some((tile, row))) {
                wc0.fill(0);
                if let Some(Some(mr)) = t.rows.get(row) {
                    for (j, col) in t.cols.iter().enumerate() {
                        if let Some(nc) = col {
                            put(&mut wc0, j as u32 * acc, acc, c0_at(*mr, *nc) as u64);
                        }
                    }
                }
                sim.set_words(out_c0, &wc0);
                c0_for = Some((tile, row));
            }
            sim.eval();
            let settled = sim.get(p.out_row) as usize;
            if settled == row {
                break;
            }
            row = settled;
        }
        if offering && sim.get(p.in_ready) == 1 {
            first_in.get_or_insert(now);
            offering = false;
            next += 1;
        }
        if ready && sim.get(p.out_valid) == 1 {
            if row as u32 != rows_out {
                return Err(fail(&mut sim, format!("tile {tile}: row {row} came out where row {rows_out} was due")));
            }
            sim.get_words(p.out_c, &mut words);
            if let Some(Some(mr)) = t.rows.get(row) {
                for (j, col) in t.cols.iter().enumerate() {
                    if let Some(nc) = col {
                        out[*mr][*nc] = acc_value(take(&words, j as u32 * acc, acc), acc, signed);
                    }
                }
            }
            last_out = now;
            rows_out += 1;
            if rows_out == r {
                rows_out = 0;
                tile += 1;
            }
        }
        sim.tick();
    }
    // The counters are final 6 cycles after the last step issued.
    sim.set(p.in_valid, 0);
    sim.idle(6);
    // Without counters the outcome's counts are 0 (see `comparable`).
    let (useful_macs, gated_products, skipped_ksteps) =
        p.stats.map_or((0, 0, 0), |(u, g, s)| (sim.get(u), sim.get(g), sim.get(s)));
    let outcome = Outcome { c: out, cycles: first_in.map_or(0, |f| last_out - f), useful_macs, gated_products, skipped_ksteps };
    sim.trace_close();
    Ok((outcome, timer.stats(&sim)))
}

/// The weight-stationary grid: weight rows and A vectors from the WS
/// sequencer on two independent streams, each stalled at random; the driver
/// keeps the running sums and answers `out_c0_i` with them (K blocks
/// accumulate through that port).
fn run_ws(
    compiled: &Compiled,
    cfg: &SystolicParams,
    gemm: &Gemm,
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let s = &sim;
    let (rst, w_valid, w_ready, w_in) = (s.port("rst_i")?, s.port("w_valid_i")?, s.port("w_ready_o")?, s.port("w_i")?);
    let (a_valid, a_ready, a_in, a_last) =
        (s.port("a_valid_i")?, s.port("a_ready_o")?, s.port("a_i")?, s.port("a_last_i")?);
    let (out_valid, out_ready, out_last, out_c, out_c0) = (
        s.port("out_valid_o")?,
        s.port("out_ready_i")?,
        s.port("out_last_o")?,
        s.port("out_c_o")?,
        s.port("out_c0_i")?,
    );
    let counters = if cfg.stats { Some((s.port("stat_useful_o")?, s.port("stat_gated_o")?)) } else { None };
    let (r, c) = (cfg.rows, cfg.cols);
    let (ab, bb, acc) = (cfg.a_type.bits(), cfg.b_type.bits(), cfg.acc_bits);
    let (ch, slot) = (cfg.channel_bits, cfg.channel_bits / cfg.lanes);
    let signed = cfg.a_type.signed() || cfg.b_type.signed();
    let (m, n) = (gemm.a.len(), gemm.b[0].len());
    let c0_at = |row: usize, col: usize| gemm.c0.as_ref().map_or(0, |c0| c0[row][col]);
    let mut sums: Vec<Vec<i64>> = (0..m).map(|i| (0..n).map(|j| c0_at(i, j)).collect()).collect();

    let (tiles, skipped) = ws_program(cfg, gemm);
    let weights: Vec<&Vec<Vec<i64>>> = tiles.iter().flat_map(|t| t.weights.iter()).collect();
    let vectors: Vec<(usize, &crate::models::systolic::WsVector)> =
        tiles.iter().enumerate().flat_map(|(ti, t)| t.vectors.iter().map(move |v| (ti, v))).collect();
    let mut stall = Staller::new(stalls);
    // Stimulus packed before the run, out of the per-cycle path.
    let packed_w: Vec<Vec<u32>> = weights
        .iter()
        .map(|row| {
            let mut w = vec![0u32; (c * ch).div_ceil(32) as usize];
            for (j, lanes) in row.iter().enumerate() {
                for (ln, &v) in lanes.iter().enumerate() {
                    put(&mut w, j as u32 * ch + ln as u32 * slot, bb, v as u64);
                }
            }
            w
        })
        .collect();
    let packed_a: Vec<Vec<u32>> = vectors
        .iter()
        .map(|(_, v)| {
            let mut w = vec![0u32; (r * ch).div_ceil(32) as usize];
            for (i, lanes) in v.a.iter().enumerate() {
                for (ln, &x) in lanes.iter().enumerate() {
                    put(&mut w, i as u32 * ch + ln as u32 * slot, ab, x as u64);
                }
            }
            w
        })
        .collect();
    let mut wc0 = vec![0u32; (c * acc).div_ceil(32) as usize];
    let mut c0_for: Option<usize> = None;

    sim.reset(rst, 2);

    let (mut next_w, mut next_a, mut next_out) = (0usize, 0usize, 0usize);
    let (mut offer_w, mut offer_a) = (false, false);
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    let mut words = Vec::new();
    let limit = sim.cycle() + 1000 + (weights.len() + vectors.len()) as u64 * (r + c + 4) as u64 * 20;
    let timer = LoopTimer::start(&sim);
    while next_out < vectors.len() {
        if sim.cycle() > limit {
            let msg = format!(
                "the RTL stopped making progress: {next_out} of {} rows out, {next_w} of {} weight rows and {next_a} vectors in",
                vectors.len(),
                weights.len()
            );
            return Err(fail(&mut sim, msg));
        }
        let now = sim.cycle();
        if !offer_w && next_w < weights.len() && !stall.hold_input() {
            offer_w = true;
            sim.set_words(w_in, &packed_w[next_w]);
        }
        if !offer_a && next_a < vectors.len() && !stall.hold_input() {
            offer_a = true;
            sim.set_words(a_in, &packed_a[next_a]);
            sim.set(a_last, vectors[next_a].1.last as u64);
        }
        sim.set(w_valid, offer_w as u64);
        sim.set(a_valid, offer_a as u64);
        let ready = !stall.hold_output();
        sim.set(out_ready, ready as u64);
        // The accumulator port answers with the running sums of the row due
        // (they change only when that row comes out).
        if c0_for != Some(next_out) {
            wc0.fill(0);
            if let Some((ti, v)) = vectors.get(next_out) {
                for (j, col) in tiles[*ti].cols.iter().enumerate() {
                    if let Some(nc) = col {
                        put(&mut wc0, j as u32 * acc, acc, sums[v.row][*nc] as u64);
                    }
                }
            }
            sim.set_words(out_c0, &wc0);
            c0_for = Some(next_out);
        }
        sim.eval();
        if offer_w && sim.get(w_ready) == 1 {
            first_in.get_or_insert(now);
            offer_w = false;
            next_w += 1;
        }
        if offer_a && sim.get(a_ready) == 1 {
            offer_a = false;
            next_a += 1;
        }
        if ready && sim.get(out_valid) == 1 {
            let (ti, v) = vectors[next_out];
            if (sim.get(out_last) == 1) != v.last {
                let msg = format!(
                    "row {next_out} (tile {ti}, matrix row {}): out_last_o is {} where the vector's last is {}",
                    v.row,
                    sim.get(out_last),
                    v.last
                );
                return Err(fail(&mut sim, msg));
            }
            sim.get_words(out_c, &mut words);
            for (j, col) in tiles[ti].cols.iter().enumerate() {
                if let Some(nc) = col {
                    sums[v.row][*nc] = acc_value(take(&words, j as u32 * acc, acc), acc, signed);
                }
            }
            last_out = now;
            next_out += 1;
        }
        sim.tick();
    }
    // The counters are final 5 cycles after the last vector issued.
    sim.set(w_valid, 0);
    sim.set(a_valid, 0);
    sim.idle(5);
    let outcome = Outcome {
        c: sums,
        cycles: first_in.map_or(0, |f| last_out - f + 1),
        useful_macs: counters.map_or(0, |(u, _)| sim.get(u)),
        gated_products: counters.map_or(0, |(_, g)| sim.get(g)),
        // Without `stats` no counts are reported (see `comparable`), the
        // sequencer's included.
        skipped_ksteps: if cfg.stats { skipped } else { 0 },
    };
    sim.trace_close();
    Ok((outcome, timer.stats(&sim)))
}

/// The model's outcome as a grid of these parameters reports it: without
/// `stats` the grid has no counters, and their counts read 0.
pub fn comparable(cfg: &SystolicParams, o: &Outcome) -> Outcome {
    if cfg.stats {
        o.clone()
    } else {
        Outcome { useful_macs: 0, gated_products: 0, skipped_ksteps: 0, ..o.clone() }
    }
}

/// A random GEMM that reaches every skip path: element sparsity from none to
/// all-zero, zero k-slices, zero A rows and B columns, extreme values, and an
/// initial accumulator half the time.
pub fn random_gemm(rng: &mut Rng, cfg: &SystolicParams, max_dim: u64) -> Gemm {
    let (m, k, n) = (1 + rng.below(max_dim) as usize, 1 + rng.below(max_dim) as usize, 1 + rng.below(max_dim) as usize);
    let zero_pct = *rng.pick(&[0u32, 20, 50, 80, 95, 100]);
    let value = |rng: &mut Rng, t: ElemType| match rng.below(4) {
        0 => t.min(),
        1 => t.max(),
        _ => t.min() + rng.below((t.max() - t.min() + 1) as u64) as i64,
    };
    let dead_k: Vec<bool> = (0..k).map(|_| rng.chance(zero_pct / 2)).collect();
    let dead_row: Vec<bool> = (0..m).map(|_| rng.chance(15)).collect();
    let dead_col: Vec<bool> = (0..n).map(|_| rng.chance(15)).collect();
    let a = (0..m)
        .map(|i| {
            (0..k)
                .map(|kk| if dead_k[kk] || dead_row[i] || rng.chance(zero_pct) { 0 } else { value(rng, cfg.a_type) })
                .collect()
        })
        .collect();
    let b = (0..k)
        .map(|_| (0..n).map(|j| if dead_col[j] || rng.chance(zero_pct) { 0 } else { value(rng, cfg.b_type) }).collect())
        .collect();
    let signed = cfg.a_type.signed() || cfg.b_type.signed();
    let c0 = (cfg.c0_add && rng.chance(50)).then(|| {
        (0..m)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        // A random acc_bits pattern, read signed or unsigned.
                        let v = rng.next_u64() >> (64 - cfg.acc_bits);
                        let neg = cfg.acc_bits < 64 && signed && (v >> (cfg.acc_bits - 1)) & 1 == 1;
                        if neg {
                            (v | (u64::MAX << cfg.acc_bits)) as i64
                        } else {
                            v as i64
                        }
                    })
                    .collect()
            })
            .collect()
    });
    Gemm { a, b, c0 }
}
