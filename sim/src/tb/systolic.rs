//! Testbench for the generated systolic grid, built from agents: a
//! [`SystolicDriver`] plays the sequencer's step program (docs/systolic.md)
//! into the grid group by group on stream sources, takes result rows with a
//! stream sink into C, and answers the `out_c0_i` port for the row due;
//! the statistics counters are read after the run. Random stalls on every
//! stream.

use super::agents::{Agent, Bench, Expect, Pace, StreamSink, StreamSource};
use super::{mask, put, take, LoopTimer, RunStats, Stalls};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::systolic::{fp, os_tiles, ws_tiles, Gemm, Outcome};
use gpurtl_params::systolic::{Dataflow, ElemType, SystolicParams};
use crate::rng::Rng;
use std::path::Path;

/// Runs one GEMM through the grid of either dataflow.
pub fn run(
    compiled: &Compiled,
    cfg: &SystolicParams,
    gemm: &Gemm,
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let mut d = SystolicDriver::new(&sim, "", cfg, gemm, stalls)?;
    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    Bench::new(d.budget).run(&mut sim, &mut [&mut d])?;
    let outcome = d.outcome(&mut sim);
    sim.trace_close();
    Ok((outcome, timer.stats(&sim)))
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

/// Everything a systolic grid needs, on the ports of a grid named
/// `<prefix>...`: its input streams, the result rows, the `out_c0_i`
/// answer, the counters.
pub struct SystolicDriver {
    name: String,
    /// OS: groups of steps on `in`. WS: weight rows on `w`, A vectors on
    /// `a`. The first one's first transfer starts the cycle count.
    inputs: Vec<StreamSource>,
    /// WS: the k-steps the sequencer skipped (it counts them).
    skipped: u64,
    out: StreamSink,
    /// Per result row: its output row of C and, per PE column, the column
    /// of C (OS: (tile, row) in order; WS: one per A vector).
    rows: Vec<(Option<usize>, Vec<Option<usize>>)>,
    /// WS: whether each result row is its tile's last.
    lasts: Vec<bool>,
    /// Floating point, WS: per A vector, the result row whose sums it
    /// carries on `a_c0_i` (the same output row in the column block's
    /// previous tile), if any. A vector is released once that row is in.
    deps: Vec<Option<usize>>,
    fp: bool,
    /// Floating point: the elements of C a result row has written.
    covered: Vec<Vec<bool>>,
    /// C as far as the results have come (C0, or 0, before).
    c: Vec<Vec<i64>>,
    /// OS: C0 as given (the `out_c0_i` answer of each row).
    c0: Vec<Vec<i64>>,
    out_c0: Option<PortHandle>,
    /// The answer on `out_c0_i` and the result row it is for.
    wc0: Vec<u32>,
    c0_for: Option<usize>,
    /// (useful, gated, skipped) counters, where the grid has them.
    stats: Option<(PortHandle, PortHandle, Option<PortHandle>)>,
    /// Result rows per tile (OS).
    r: usize,
    acc: u32,
    signed: bool,
    ws: bool,
    budget: u64,
}

impl SystolicDriver {
    pub fn new(sim: &Sim, prefix: &str, cfg: &SystolicParams, gemm: &Gemm, stalls: Option<Stalls>) -> Result<SystolicDriver, CosimError> {
        let port = |name: &str| sim.port(&format!("{prefix}{name}"));
        let seed = stalls.map_or(0, |s| s.seed);
        let src = |name: &str, fields: &[&str]| -> Result<StreamSource, CosimError> {
            Ok(StreamSource::find(sim, &format!("{prefix}{name}"), fields)?.seed(seed).pace(Pace::random_or_steady(stalls.map(|s| s.in_pct))))
        };
        let (r, c) = (cfg.rows, cfg.cols);
        let (ab, bb, acc) = (cfg.a_type.bits(), cfg.b_type.bits(), cfg.acc_bits);
        let (ch, slot) = (cfg.channel_bits, cfg.channel_bits / cfg.lanes);
        let (m, n) = (gemm.a.len(), gemm.b[0].len());
        let c0: Vec<Vec<i64>> = (0..m).map(|i| (0..n).map(|j| gemm.c0.as_ref().map_or(0, |c0| c0[i][j])).collect()).collect();
        let ws = cfg.dataflow == Dataflow::Ws;
        let fp = cfg.float();
        let mut rows = Vec::new();
        let mut lasts = Vec::new();
        let mut deps = Vec::new();
        // Stimulus packed before the run, out of the per-cycle path (the
        // sequencer's tiles one at a time: only the packed words are kept).
        let (inputs, skipped, out_fields, budget) = if ws {
            let (tiles, _, skipped) = ws_tiles(cfg, gemm);
            let mut w = src("w", &[""])?;
            let mut a = if fp { src("a", &["", "last", "c0"])?.hold_from(0) } else { src("a", &["", "last"])? };
            // Floating point: the last result row of each (output row, column block).
            let mut latest = std::collections::HashMap::new();
            for t in tiles {
                for row in &t.weights {
                    let mut words = vec![0u32; (c * ch).div_ceil(32) as usize];
                    for (j, lanes) in row.iter().enumerate() {
                        for (ln, &v) in lanes.iter().enumerate() {
                            put(&mut words, j as u32 * ch + ln as u32 * slot, bb, v as u64);
                        }
                    }
                    w.push(words);
                }
                for v in &t.vectors {
                    let mut words = vec![0u32; (r * ch).div_ceil(32) as usize];
                    for (i, lanes) in v.a.iter().enumerate() {
                        for (ln, &x) in lanes.iter().enumerate() {
                            put(&mut words, i as u32 * ch + ln as u32 * slot, ab, x as u64);
                        }
                    }
                    let item = if fp {
                        // The running sums are set as the vector is released.
                        a.fields().pack(&[&words, &[v.last as u32], &[]])
                    } else {
                        a.fields().pack(&[&words, &[v.last as u32]])
                    };
                    a.push(item);
                    if fp {
                        deps.push(latest.insert((v.row, t.cols.clone()), rows.len()));
                    }
                    rows.push((Some(v.row), t.cols.clone()));
                    lasts.push(v.last);
                }
            }
            let budget = 1000 + (w.len() + a.len()) as u64 * (r + c + 4) as u64 * 20;
            (vec![w, a], skipped, ["last", "c"], budget)
        } else {
            // Floating point with C0: the tile's C0 on each of its groups.
            let fp_c0 = fp && cfg.c0_add;
            let fields: &[&str] = if fp_c0 { &["a", "b", "steps", "last", "c0"] } else { &["a", "b", "steps", "last"] };
            let mut input = src("in", fields)?;
            let (a_words, b_words) = ((cfg.group * r * ch).div_ceil(32) as usize, (cfg.group * c * ch).div_ceil(32) as usize);
            let (mut steps_total, mut n_tiles) = (0u64, 0u64);
            for t in os_tiles(cfg, gemm) {
                n_tiles += 1;
                // PE(i,j)'s C0 at bit (i·C + j)·32; +0 for padding.
                let mut wc0 = vec![0u32; if fp_c0 { (r * c) as usize } else { 0 }];
                if fp_c0 {
                    for (i, mr) in t.rows.iter().enumerate() {
                        for (j, nc) in t.cols.iter().enumerate() {
                            if let (Some(mr), Some(nc)) = (mr, nc) {
                                wc0[i * c as usize + j] = c0[*mr][*nc] as u32;
                            }
                        }
                    }
                }
                for (gi, gr) in t.groups.iter().enumerate() {
                    let (mut wa, mut wb) = (vec![0u32; a_words], vec![0u32; b_words]);
                    let lanes = cfg.lanes as usize;
                    // Values in order: PE row (column) i, lane ln of step si
                    // is value (si * R + i) * L + ln, at bit ((si * R + i) *
                    // ch + ln * slot) of the word.
                    for (x, &v) in gr.a.iter().enumerate() {
                        let (slot_i, ln) = ((x / lanes) as u32, (x % lanes) as u32);
                        put(&mut wa, slot_i * ch + ln * slot, ab, v as u64);
                    }
                    for (x, &v) in gr.b.iter().enumerate() {
                        let (slot_j, ln) = ((x / lanes) as u32, (x % lanes) as u32);
                        put(&mut wb, slot_j * ch + ln * slot, bb, v as u64);
                    }
                    // C0 (when the grid takes it) is read with the tile's
                    // first group only: the later ones carry its complement,
                    // so a grid that reads them shows it.
                    let c0_field: Vec<u32> = if gi == 0 { wc0.clone() } else { wc0.iter().map(|w| !w).collect() };
                    let (steps, last) = ([gr.len() as u32], [gr.last as u32]);
                    let parts: [&[u32]; 5] = [&wa, &wb, &steps, &last, &c0_field];
                    let item = input.fields().pack(&parts[..fields.len()]);
                    input.push(item);
                    steps_total += gr.len() as u64 + 1;
                }
                rows.extend(t.rows.iter().map(|&mr| (mr, t.cols.clone())));
            }
            let budget = 1000 + (steps_total + n_tiles * (r + c) as u64 * 4) * 20;
            (vec![input], 0, ["row", "c"], budget)
        };
        let out = StreamSink::find(sim, &format!("{prefix}out"), &out_fields)?
            .seed(seed)
            .pace(Pace::random_or_steady(stalls.map(|s| s.out_pct)))
            .expect(Expect::Items(rows.len()));
        let out_c0 = if !fp && (ws || cfg.c0_add) { Some(port("out_c0_i")?) } else { None };
        let stats = match (cfg.stats, ws) {
            (false, _) => None,
            (true, true) => Some((port("stat_useful_o")?, port("stat_gated_o")?, None)),
            (true, false) => Some((port("stat_useful_o")?, port("stat_gated_o")?, Some(port("stat_skipped_o")?))),
        };
        Ok(SystolicDriver {
            name: format!("{prefix}systolic"),
            inputs,
            skipped,
            out,
            rows,
            lasts,
            deps,
            fp,
            covered: vec![vec![false; n]; m],
            c: c0.clone(),
            c0,
            out_c0,
            wc0: vec![0u32; (c * acc).div_ceil(32) as usize],
            c0_for: None,
            stats,
            r: r as usize,
            acc,
            signed: cfg.a_type.signed() || cfg.b_type.signed(),
            ws,
            budget,
        })
    }

    /// The outcome once the bench has run: C, the cycles (OS: first group
    /// taken to last row; WS: first weight row taken to last row,
    /// inclusive) and the counters, final a few cycles after the last step.
    pub fn outcome(&self, sim: &mut Sim) -> Outcome {
        let last_out = self.out.cycles().last().copied().unwrap_or(0);
        let cycles = self.inputs[0].taken().first().map_or(0, |f| last_out - f + self.ws as u64);
        sim.idle(if self.ws { 5 } else { 6 });
        let (useful_macs, gated_products) = self.stats.map_or((0, 0), |(u, g, _)| (sim.get(u), sim.get(g)));
        // Without `stats` no counts are reported (see `comparable`), the
        // WS sequencer's included.
        let skipped_ksteps = match self.stats {
            None => 0,
            Some((_, _, Some(s))) => sim.get(s),
            Some((_, _, None)) => self.skipped,
        };
        // Floating point: an element no tile covered is start(C0) (the
        // others are as the grid gave them).
        let mut c = self.c.clone();
        if self.fp {
            for (row, covered) in c.iter_mut().zip(&self.covered) {
                for (x, &cov) in row.iter_mut().zip(covered) {
                    if !cov {
                        *x = fp::start(*x as u32) as i64;
                    }
                }
            }
        }
        Outcome { c, cycles, useful_macs, gated_products, skipped_ksteps }
    }

    /// Floating point: releases the A vectors whose running sums are known
    /// (no earlier tile, or its row is in), with those sums on `a_c0_i`: C0
    /// (or +0) before any tile, else the latest result; +0 for padding.
    fn release_vectors(&mut self) {
        let done = self.out.items().len();
        let a = &mut self.inputs[1];
        while a.released() < self.deps.len() {
            let k = a.released();
            if self.deps[k].is_some_and(|d| d >= done) {
                break;
            }
            let mut words = vec![0u32; self.wc0.len()];
            if let (Some(mr), cols) = &self.rows[k] {
                for (j, col) in cols.iter().enumerate() {
                    if let Some(nc) = col {
                        put(&mut words, j as u32 * 32, 32, self.c[*mr][*nc] as u64);
                    }
                }
            }
            a.set_field(k, 2, &words);
            a.release();
        }
    }

    /// Takes the result row `k` just received into C.
    fn take_row(&mut self, k: usize) -> Result<(), String> {
        if self.ws {
            let last = self.out.field_u64(k, 0) == 1;
            if last != self.lasts[k] {
                return Err(format!("row {k} (matrix row {:?}): out_last_o is {} where the vector's last is {}", self.rows[k].0, last as u8, self.lasts[k]));
            }
        } else {
            let (r, row) = (self.r, self.out.field_u64(k, 0) as usize);
            if row != k % r {
                return Err(format!("tile {}: row {row} came out where row {} was due", k / r, k % r));
            }
        }
        let (mr, cols) = &self.rows[k];
        if let Some(mr) = mr {
            let words = self.out.field(k, 1);
            for (j, col) in cols.iter().enumerate() {
                if let Some(nc) = col {
                    self.c[*mr][*nc] = acc_value(take(words, j as u32 * self.acc, self.acc), self.acc, self.signed);
                    if self.fp {
                        self.covered[*mr][*nc] = true;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Agent for SystolicDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        if self.fp && self.ws {
            self.release_vectors();
        }
        for i in &mut self.inputs {
            i.drive(sim);
        }
        self.out.drive(sim);
        // `out_c0_i` answers for the row due: OS, C0 of its place; WS, the
        // running sums of its output row (they change only when a row of
        // that output row comes out).
        let due = self.out.items().len();
        if let (Some(p), true) = (self.out_c0, self.c0_for != Some(due)) {
            self.wc0.fill(0);
            if let Some((Some(mr), cols)) = self.rows.get(due) {
                let src = if self.ws { &self.c } else { &self.c0 };
                for (j, col) in cols.iter().enumerate() {
                    if let Some(nc) = col {
                        put(&mut self.wc0, j as u32 * self.acc, self.acc, src[*mr][*nc] as u64);
                    }
                }
            }
            sim.set_words(p, &self.wc0);
            self.c0_for = Some(due);
        }
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        for i in &mut self.inputs {
            i.sample(sim)?;
        }
        let k = self.out.items().len();
        self.out.sample(sim)?;
        if self.out.items().len() > k {
            self.take_row(k)?;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.out.done()
    }

    fn waiting(&self) -> String {
        let inputs: Vec<String> = self.inputs.iter().map(|i| format!("{} {}", i.name(), i.waiting())).collect();
        format!("result row {} ({})", self.out.waiting(), inputs.join(", "))
    }

    fn progress(&self) -> u64 {
        self.inputs.iter().map(|i| i.progress()).sum::<u64>() + self.out.progress()
    }
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
    // Floating point: a GEMM draws from every class of value (its sums are
    // then mostly Inf or NaN), or from finite values only, near 1 (where
    // sums round and cancel) or of any exponent.
    let profile = rng.below(3);
    let value = |rng: &mut Rng, t: ElemType| {
        if t.is_float() {
            return fp_element(rng, t, profile);
        }
        match rng.below(4) {
            0 => t.min(),
            1 => t.max(),
            _ => t.min() + rng.below((t.max() - t.min() + 1) as u64) as i64,
        }
    };
    // A zero: 0, or for floating point +0 or -0.
    let zero = |rng: &mut Rng, t: ElemType| if t.is_float() && rng.chance(50) { 1i64 << (t.bits() - 1) } else { 0 };
    let dead_k: Vec<bool> = (0..k).map(|_| rng.chance(zero_pct / 2)).collect();
    let dead_row: Vec<bool> = (0..m).map(|_| rng.chance(15)).collect();
    let dead_col: Vec<bool> = (0..n).map(|_| rng.chance(15)).collect();
    let a = (0..m)
        .map(|i| {
            (0..k)
                .map(|kk| if dead_k[kk] || dead_row[i] || rng.chance(zero_pct) { zero(rng, cfg.a_type) } else { value(rng, cfg.a_type) })
                .collect()
        })
        .collect();
    let b = (0..k)
        .map(|_| (0..n).map(|j| if dead_col[j] || rng.chance(zero_pct) { zero(rng, cfg.b_type) } else { value(rng, cfg.b_type) }).collect())
        .collect();
    let signed = cfg.a_type.signed() || cfg.b_type.signed();
    let c0 = (cfg.c0_add && rng.chance(50)).then(|| {
        (0..m)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        if cfg.float() {
                            return fp_c0(rng);
                        }
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

/// A random element pattern of a floating-point type, biased to where the
/// arithmetic has edges: zeros of both signs, subnormals, the smallest and
/// largest normals, Inf and NaN, values near 1 (so that sums cancel), and
/// any pattern at all. `profile` 1 keeps to finite values near 1, 2 to
/// finite values of any exponent, 0 draws from all.
pub fn fp_element(rng: &mut Rng, t: ElemType, profile: u64) -> i64 {
    let (eb, mb) = t.fp_fields();
    let sign = (rng.below(2) as i64) << (eb + mb);
    let bias = (1i64 << (eb - 1)) - 1;
    let emax = (1i64 << eb) - 1;
    let mant = |rng: &mut Rng| rng.below(1 << mb) as i64;
    let class = match profile {
        1 => *rng.pick(&[1u64, 5, 6, 7, 7, 7, 7, 7]),
        2 => *rng.pick(&[1u64, 2, 3, 5, 9]),
        _ => rng.below(10),
    };
    let (e, m) = match class {
        0 => (0, 0),
        1 => (0, 1 + rng.below((1 << mb) - 1) as i64),
        2 => (1, mant(rng)),
        3 => (emax - 1, mant(rng)),
        // E4M3's top binade is finite (its NaN is S.1111.111); elsewhere
        // this is Inf or a NaN.
        4 => (emax, if rng.chance(50) { 0 } else { mant(rng) }),
        5..=7 => (bias - 2 + rng.below(5) as i64, mant(rng)),
        // Any exponent below the top binade (finite in every type).
        9 => (rng.below(emax as u64) as i64, mant(rng)),
        _ => return rng.below(1 << t.bits()) as i64,
    };
    sign | (e << mb) | m
}

/// A random binary32 C0 pattern: zeros of both signs (one in nine each),
/// subnormals, NaNs
/// with any payload, infinities, values near the overflow threshold and
/// near 1, and any pattern at all.
pub fn fp_c0(rng: &mut Rng) -> i64 {
    let sign = (rng.below(2) as i64) << 31;
    let mant = |rng: &mut Rng| rng.below(1 << 23) as i64;
    let (e, m) = match rng.below(9) {
        0 | 8 => (0, 0),
        1 => (0, mant(rng)),
        2 => (255, if rng.chance(50) { 0 } else { 1 + rng.below((1 << 23) - 1) as i64 }),
        3 => (254, mant(rng)),
        4 | 5 => (125 + rng.below(5) as i64, mant(rng)),
        _ => return rng.below(1 << 32) as i64,
    };
    sign | (e << 23) | m
}
