//! Golden model of the systolic PE grid with zero skipping, written from
//! `docs/systolic.md` only.
//!
//! Values: `C = A x B + C0` by a naive triple loop, wrapped to `acc_bits` and
//! read back signed if either element type is signed, else unsigned. Rows and
//! columns skipped by `rowcol_skip` come out as exactly C0 because the loop
//! never looks at the sequencer.
//!
//! Timing and counters: the sequencer ([`program`]) cuts the GEMM into R x C
//! tiles and each tile's k-steps into groups; a cycle-by-cycle loop then plays
//! the loader rules of the spec with the groups offered back-to-back and the
//! output always ready:
//!
//! ```text
//! candidate  = lowest useful unissued step of the held group, or the null
//!              step if the group is `last`, has no useful step left and has
//!              not issued its tile-ending step
//! tile-ending: group `last` and no other useful step left (or null step)
//! a tile-ending candidate waits while an earlier tile is in flight
//!              (cycles s+1 ..= its last row transfer - 1: the last row
//!              has moved into the output register)
//! tile ending at s: row r ready at s + r + C + 1 + pipeline; transferred at
//!              max(ready + 1, previous row transfer + 1) (the output
//!              register); all R rows go out
//! loader ready: holds nothing, or the candidate issued and nothing remains
//! accepted in cycle c -> held from c + 1
//! cycles = last row transfer - first accept by the unit, one cycle before the
//!          loader's (the input register), so last transfer + 1 (0 with no tile)
//! ```
//!
//! Weight-stationary (`dataflow = "ws"`): [`ws_program`] cuts the column list
//! into blocks of C and each block's (useful) k-steps into blocks of R; a
//! tile is R weight rows then one A vector per listed row. C is the same
//! reference loop (the K blocks accumulate through `out_c0_i`). The cycle
//! loop plays the WS rules with both input streams offered back-to-back in
//! global order and the output always ready:
//!
//! ```text
//! weight port ready: wcnt < R and wblock == 0 (start-of-cycle state);
//!              a transfer increments wcnt
//! held vector issues: open or wcnt == R; a first vector (not open) sets
//!              wcnt = 0, wblock = R + C - 1; open = !last; in any other
//!              cycle wblock counts down while non-zero
//! activation port ready: register empty or its vector issues; held from
//!              the next cycle
//! vector issued at s: output row transferred at s + R + C + pipeline
//! cycles = last transfer - first weight transfer (cycle 0), + 1; 0 no tile
//! ```

use super::{err, shown, InputError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

/// An element type of A or B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    I8,
    U8,
    I4,
    U4,
    I2,
    U2,
}

impl ElemType {
    pub const ALL: [ElemType; 6] = [ElemType::I8, ElemType::U8, ElemType::I4, ElemType::U4, ElemType::I2, ElemType::U2];

    pub fn bits(self) -> u32 {
        match self {
            ElemType::I8 | ElemType::U8 => 8,
            ElemType::I4 | ElemType::U4 => 4,
            ElemType::I2 | ElemType::U2 => 2,
        }
    }

    pub fn signed(self) -> bool {
        matches!(self, ElemType::I8 | ElemType::I4 | ElemType::I2)
    }

    pub fn min(self) -> i64 {
        if self.signed() {
            -(1i64 << (self.bits() - 1))
        } else {
            0
        }
    }

    pub fn max(self) -> i64 {
        if self.signed() {
            (1i64 << (self.bits() - 1)) - 1
        } else {
            (1i64 << self.bits()) - 1
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I4 => "i4",
            ElemType::U4 => "u4",
            ElemType::I2 => "i2",
            ElemType::U2 => "u2",
        }
    }

    /// The type named `s` ("i8" ... "u2"), if any.
    pub fn from_name(s: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// The block's parameters (docs/systolic.md "Parameters"). Not checked here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub rows: u32,
    pub cols: u32,
    pub lanes: u32,
    pub channel_bits: u32,
    pub a_type: ElemType,
    pub b_type: ElemType,
    pub acc_bits: u32,
    pub dataflow: String,
    pub group: u32,
    pub gating: bool,
    pub load_filter: bool,
    pub rowcol_skip: bool,
    /// Extra PE register stages: rows are ready `pipeline` cycles later.
    pub pipeline: u32,
}

impl Default for Config {
    /// The defaults of the spec's parameter table.
    fn default() -> Config {
        Config {
            rows: 4,
            cols: 4,
            lanes: 1,
            channel_bits: 8,
            a_type: ElemType::I8,
            b_type: ElemType::I8,
            acc_bits: 32,
            dataflow: "os".to_string(),
            group: 8,
            gating: true,
            load_filter: true,
            rowcol_skip: true,
            pipeline: 2,
        }
    }
}

impl Config {
    /// The accumulator (and C) is read as signed when either type is signed.
    pub fn acc_signed(&self) -> bool {
        self.a_type.signed() || self.b_type.signed()
    }

    /// Lowest and highest value of the accumulator as read back.
    fn acc_range(&self) -> (i128, i128) {
        let n = self.acc_bits;
        if self.acc_signed() {
            (-(1i128 << (n - 1)), (1i128 << (n - 1)) - 1)
        } else {
            (0, (1i128 << n) - 1)
        }
    }
}

/// One GEMM: A is M x K, B is K x N, C0 (if given) is M x N.
///
/// Accumulator-range values (C0 here, C in [`Outcome`]) are held in an `i64`;
/// with an unsigned 64-bit accumulator a value >= 2^63 is held as its 64-bit
/// pattern (`value as i64`, i.e. value - 2^64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub a: Vec<Vec<i64>>,
    pub b: Vec<Vec<i64>>,
    pub c0: Option<Vec<Vec<i64>>>,
}

/// One k-step as the grid sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// `a[i][l]`: PE row `i`, lane `l` (R x L).
    pub a: Vec<Vec<i64>>,
    /// `b[j][l]`: PE column `j`, lane `l` (C x L).
    pub b: Vec<Vec<i64>>,
}

/// One input transfer: up to `group` consecutive steps of a tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub steps: Vec<Step>,
    pub last: bool,
}

/// One R x C output tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Length R: the matrix row of PE row `i`; `None` = padding.
    pub rows: Vec<Option<usize>>,
    /// Length C: the matrix column of PE column `j`; `None` = padding.
    pub cols: Vec<Option<usize>>,
    pub groups: Vec<Group>,
}

/// The sequencer of docs/systolic.md: tiles in order with their groups.
/// (Stimulus, shared with the RTL testbench.)
pub fn program(cfg: &Config, g: &Gemm) -> Vec<Tile> {
    let (r, c, l) = (cfg.rows as usize, cfg.cols as usize, cfg.lanes as usize);
    let k = g.b.len();
    let (row_list, col_list) = row_col_lists(cfg, g);
    let nsteps = k.div_ceil(l);
    let ngroups = nsteps.div_ceil(cfg.group as usize);
    let mut tiles = Vec::new();
    for rb in row_list.chunks(r) {
        let rows: Vec<Option<usize>> = (0..r).map(|i| rb.get(i).copied()).collect();
        for cb in col_list.chunks(c) {
            let cols: Vec<Option<usize>> = (0..c).map(|j| cb.get(j).copied()).collect();
            let steps: Vec<Step> = (0..nsteps)
                .map(|s| Step {
                    a: rows
                        .iter()
                        .map(|row| {
                            (0..l)
                                .map(|ln| match row {
                                    Some(mm) if s * l + ln < k => g.a[*mm][s * l + ln],
                                    _ => 0,
                                })
                                .collect()
                        })
                        .collect(),
                    b: cols
                        .iter()
                        .map(|col| {
                            (0..l)
                                .map(|ln| match col {
                                    Some(nn) if s * l + ln < k => g.b[s * l + ln][*nn],
                                    _ => 0,
                                })
                                .collect()
                        })
                        .collect(),
                })
                .collect();
            let groups = steps
                .chunks(cfg.group as usize)
                .enumerate()
                .map(|(gi, ch)| Group { steps: ch.to_vec(), last: gi + 1 == ngroups })
                .collect();
            tiles.push(Tile { rows: rows.clone(), cols, groups });
        }
    }
    tiles
}

/// One A vector of a WS tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsVector {
    /// The matrix row of A this vector carries (its output row).
    pub row: usize,
    /// `a[i][l]`: PE row i, lane l (R x L); 0 for padding.
    pub a: Vec<Vec<i64>>,
    pub last: bool,
}

/// One WS tile: a column block and a block of up to R k-steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsTile {
    /// Length C: matrix column of PE column j; None = padding.
    pub cols: Vec<Option<usize>>,
    /// Length R: the k-step of PE row i; None = padding.
    pub ksteps: Vec<Option<usize>>,
    /// `weights[t][j][l]`: weight transfer t (= PE row t), column j, lane l (R x C x L).
    pub weights: Vec<Vec<Vec<i64>>>,
    pub vectors: Vec<WsVector>,
}

/// The row list and column list of the sequencer (all rows / columns, or
/// with `rowcol_skip` only the non-zero ones); shared by `os` and `ws`.
fn row_col_lists(cfg: &Config, g: &Gemm) -> (Vec<usize>, Vec<usize>) {
    let m = g.a.len();
    let k = g.b.len();
    let n = g.b.first().map_or(0, |row| row.len());
    let row_list = (0..m).filter(|&i| !cfg.rowcol_skip || g.a[i].iter().any(|&x| x != 0)).collect();
    let col_list = (0..n).filter(|&j| !cfg.rowcol_skip || (0..k).any(|kk| g.b[kk][j] != 0)).collect();
    (row_list, col_list)
}

/// The WS sequencer of docs/systolic.md: tiles in order, and skipped_ksteps.
/// (Stimulus, shared with the RTL testbench.)
///
/// For each column block (C columns of the column list, column-block-major):
/// its k-steps (all, or with `load_filter` those where some listed row has a
/// non-zero A value and some column of the block a non-zero B value among
/// the step's K indices) cut into blocks of R; one tile per k block: R
/// weight rows, then one A vector per listed row. No tiles when the row list
/// is empty. `skipped_ksteps` = sum over column blocks of
/// (ceil(K/L) - useful steps) with `load_filter`, else 0.
pub fn ws_program(cfg: &Config, g: &Gemm) -> (Vec<WsTile>, u64) {
    let (r, c, l) = (cfg.rows as usize, cfg.cols as usize, cfg.lanes as usize);
    let k = g.b.len();
    let (row_list, col_list) = row_col_lists(cfg, g);
    let nsteps = k.div_ceil(l);
    // The K indices of step s that exist.
    let kidx = |s: usize| s * l..(s * l + l).min(k);
    let mut tiles = Vec::new();
    let mut skipped = 0u64;
    for cb in col_list.chunks(c) {
        let cols: Vec<Option<usize>> = (0..c).map(|j| cb.get(j).copied()).collect();
        let steps: Vec<usize> = (0..nsteps)
            .filter(|&s| {
                !cfg.load_filter
                    || (row_list.iter().any(|&m| kidx(s).any(|kk| g.a[m][kk] != 0))
                        && cb.iter().any(|&n| kidx(s).any(|kk| g.b[kk][n] != 0)))
            })
            .collect();
        if cfg.load_filter {
            skipped += (nsteps - steps.len()) as u64;
        }
        if row_list.is_empty() {
            continue;
        }
        for kb in steps.chunks(r) {
            let ksteps: Vec<Option<usize>> = (0..r).map(|i| kb.get(i).copied()).collect();
            // Lane `ln` of step `s`: K index s*L + ln, if it exists.
            let at = |s: Option<usize>, ln: usize| s.map(|s| s * l + ln).filter(|&kk| kk < k);
            let weights = ksteps
                .iter()
                .map(|&s| {
                    cols.iter()
                        .map(|col| {
                            (0..l)
                                .map(|ln| match (at(s, ln), col) {
                                    (Some(kk), Some(n)) => g.b[kk][*n],
                                    _ => 0,
                                })
                                .collect()
                        })
                        .collect()
                })
                .collect();
            let vectors = row_list
                .iter()
                .enumerate()
                .map(|(vi, &m)| WsVector {
                    row: m,
                    a: ksteps
                        .iter()
                        .map(|&s| (0..l).map(|ln| at(s, ln).map_or(0, |kk| g.a[m][kk])).collect())
                        .collect(),
                    last: vi + 1 == row_list.len(),
                })
                .collect();
            tiles.push(WsTile { cols: cols.clone(), ksteps, weights, vectors });
        }
    }
    (tiles, skipped)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub c: Vec<Vec<i64>>,
    pub cycles: u64,
    pub useful_macs: u64,
    pub gated_products: u64,
    pub skipped_ksteps: u64,
}

impl Outcome {
    /// useful_macs / (R*C*L*cycles), 0 when cycles is 0.
    pub fn utilization(&self, cfg: &Config) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        let slots = cfg.rows as f64 * cfg.cols as f64 * cfg.lanes as f64 * self.cycles as f64;
        self.useful_macs as f64 / slots
    }
}

/// `x` modulo 2^acc_bits, read signed or unsigned (unsigned 64-bit values
/// >= 2^63 as their bit pattern).
fn wrap(cfg: &Config, x: i128) -> i64 {
    let n = cfg.acc_bits;
    let m = x.rem_euclid(1i128 << n);
    if cfg.acc_signed() && m >= 1i128 << (n - 1) {
        (m - (1i128 << n)) as i64
    } else {
        m as u64 as i64
    }
}

/// The reference C: naive triple loop plus C0, wrapped.
fn reference_c(cfg: &Config, g: &Gemm) -> Vec<Vec<i64>> {
    let m = g.a.len();
    let k = g.b.len();
    let n = g.b.first().map_or(0, |row| row.len());
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let mut s: i128 = g.c0.as_ref().map_or(0, |c0| c0[i][j] as i128);
                    for kk in 0..k {
                        s += g.a[i][kk] as i128 * g.b[kk][j] as i128;
                    }
                    wrap(cfg, s)
                })
                .collect()
        })
        .collect()
}

/// A step offered to the grid: a real step (index in its group) or the null
/// step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    Step(usize),
    Null,
}

/// The group in the loader.
struct Held<'a> {
    group: &'a Group,
    /// Useful steps not yet issued, lowest index first.
    pending: VecDeque<usize>,
    ended: bool,
}

impl Held<'_> {
    /// The candidate and whether it is tile-ending; `None` when nothing remains.
    fn candidate(&self) -> Option<(Candidate, bool)> {
        if let Some(&k) = self.pending.front() {
            Some((Candidate::Step(k), self.group.last && self.pending.len() == 1))
        } else if self.group.last && !self.ended {
            Some((Candidate::Null, true))
        } else {
            None
        }
    }

    fn nothing_remains(&self) -> bool {
        self.candidate().is_none()
    }
}

/// Whether a step is useful: with `load_filter`, its A slice and its B slice
/// both have a non-zero value; without, always.
fn useful(cfg: &Config, s: &Step) -> bool {
    !cfg.load_filter
        || (s.a.iter().flatten().any(|&x| x != 0) && s.b.iter().flatten().any(|&x| x != 0))
}

/// `sum_l nzA[l] * nzB[l]` of one step.
fn step_macs(s: &Step, lanes: usize) -> u64 {
    (0..lanes)
        .map(|l| {
            let nza = s.a.iter().filter(|row| row[l] != 0).count() as u64;
            let nzb = s.b.iter().filter(|col| col[l] != 0).count() as u64;
            nza * nzb
        })
        .sum()
}

/// (cycles, useful_macs, gated_products, skipped_ksteps) of a program.
fn simulate(cfg: &Config, tiles: &[Tile]) -> (u64, u64, u64, u64) {
    let (r, c, l) = (cfg.rows as u64, cfg.cols as u64, cfg.lanes as u64);
    let groups: Vec<&Group> = tiles.iter().flat_map(|t| t.groups.iter()).collect();
    let present: u64 = groups.iter().map(|g| g.steps.len() as u64).sum();
    let mut next = 0;
    let mut held: Option<Held> = None;
    // (tile-ending issue cycle, last in-flight cycle) of every ended tile.
    let mut ended: Vec<(u64, u64)> = Vec::new();
    let mut last_transfer: Option<u64> = None;
    let (mut useful_macs, mut gated, mut issued_steps) = (0u64, 0u64, 0u64);
    let mut cycle: u64 = 0;
    while held.is_some() || next < groups.len() {
        let mut ready = true;
        if let Some(h) = held.as_mut() {
            match h.candidate() {
                // Only a non-`last` group with no useful step: nothing to do,
                // the loader is free this cycle.
                None => {}
                Some((cand, ending)) => {
                    let in_flight = ended.iter().any(|&(s, t)| s < cycle && cycle <= t);
                    if ending && in_flight {
                        ready = false;
                    } else {
                        if let Candidate::Step(k) = cand {
                            let step = &h.group.steps[k];
                            let macs = step_macs(step, l as usize);
                            useful_macs += macs;
                            if cfg.gating {
                                gated += r * c * l - macs;
                            }
                            issued_steps += 1;
                            h.pending.pop_front();
                        }
                        if ending {
                            h.ended = true;
                            let s = cycle;
                            for row in 0..r {
                                // +1: the output register in front of the port.
                                let ready_at = s + row + c + 1 + cfg.pipeline as u64 + 1;
                                let t = match last_transfer {
                                    Some(p) => ready_at.max(p + 1),
                                    None => ready_at,
                                };
                                last_transfer = Some(t);
                            }
                            // Free once the last row is in the output register.
                            ended.push((s, last_transfer.unwrap() - 1));
                        }
                        ready = h.nothing_remains();
                    }
                }
            }
            if ready {
                held = None;
            }
        }
        if ready && next < groups.len() {
            let g = groups[next];
            let pending = (0..g.steps.len()).filter(|&k| useful(cfg, &g.steps[k])).collect();
            held = Some(Held { group: g, pending, ended: false });
            next += 1;
        }
        cycle += 1;
    }
    // The loader takes the first group in cycle 0 of this schedule; the unit
    // accepted it one cycle earlier, into its input register.
    let cycles = last_transfer.map_or(0, |t| t + 1);
    (cycles, useful_macs, gated, present - issued_steps)
}

/// Useful (PE, lane) pairs of one WS vector against its tile's weights:
/// A value `a[i][l]` and weight `weights[i][j][l]` both non-zero.
fn ws_vector_macs(tile: &WsTile, v: &WsVector) -> u64 {
    let mut n = 0u64;
    for (a_row, w_row) in v.a.iter().zip(&tile.weights) {
        for w_col in w_row {
            n += a_row.iter().zip(w_col).filter(|&(&a, &w)| a != 0 && w != 0).count() as u64;
        }
    }
    n
}

/// (cycles, useful_macs, gated_products) of a WS program, by the spec's "WS
/// cycle rules" with weight rows and A vectors offered back-to-back (each in
/// global order across tiles) and the output always ready. Cycle 0 is the
/// first weight transfer.
fn simulate_ws(cfg: &Config, tiles: &[WsTile]) -> (u64, u64, u64) {
    let (r, c, l) = (cfg.rows as u64, cfg.cols as u64, cfg.lanes as u64);
    let p = cfg.pipeline as u64;
    // The two input streams: R weight rows per tile; the vectors, each with
    // its tile.
    let weight_rows = tiles.len() as u64 * r;
    let vectors: Vec<(&WsTile, &WsVector)> = tiles.iter().flat_map(|t| t.vectors.iter().map(move |v| (t, v))).collect();
    let (mut next_w, mut next_v) = (0u64, 0usize);
    let (mut wcnt, mut wblock, mut open) = (0u64, 0u64, false);
    // The input register: index of the held vector.
    let mut held: Option<usize> = None;
    // Output transfer cycles of issued vectors not yet transferred (in order).
    let mut outstanding: VecDeque<u64> = VecDeque::new();
    let mut last_transfer: Option<u64> = None;
    let (mut useful_macs, mut gated) = (0u64, 0u64);
    let mut cycle: u64 = 0;
    while next_w < weight_rows || next_v < vectors.len() || held.is_some() {
        // 4. Rows go out in order; with the output always ready a row is
        // transferred in its offer cycle (issues are at most one per cycle).
        while outstanding.front().is_some_and(|&t| t < cycle) {
            outstanding.pop_front();
        }
        let credit = (outstanding.len() as u64) < r + c + p + 1;
        // 1. Weight port (state at the start of the cycle).
        let w_transfer = next_w < weight_rows && wcnt < r && wblock == 0;
        // 2. Issue.
        let issue = held.is_some() && (open || wcnt == r) && credit;
        let mut first = false;
        if issue {
            let (tile, v) = vectors[held.unwrap()];
            let macs = ws_vector_macs(tile, v);
            useful_macs += macs;
            if cfg.gating {
                gated += r * c * l - macs;
            }
            first = !open;
            open = !v.last;
            let t = cycle + r + c + p;
            outstanding.push_back(t);
            last_transfer = Some(t);
        }
        if w_transfer {
            wcnt += 1;
            next_w += 1;
        }
        if first {
            wcnt = 0;
            wblock = r + c - 1;
        } else {
            wblock = wblock.saturating_sub(1);
        }
        // 3. Activation port: ready when the register is empty or its vector
        // issues now; an accepted vector is held from the next cycle.
        if issue {
            held = None;
        }
        if held.is_none() && next_v < vectors.len() {
            held = Some(next_v);
            next_v += 1;
        }
        cycle += 1;
    }
    let cycles = last_transfer.map_or(0, |t| t + 1);
    (cycles, useful_macs, gated)
}

/// C computed directly from the matrices (naive triple loop + C0, wrapped to
/// acc_bits); counters and cycles from the program and the spec's cycle
/// rules, with the output always ready and the inputs offered back-to-back.
/// `dataflow = "ws"` uses [`ws_program`] and the WS cycle rules (C is the
/// same: the K blocks accumulating through `out_c0_i` give the same sum
/// modulo 2^acc_bits); anything else is `os`.
pub fn run(cfg: &Config, g: &Gemm) -> Outcome {
    let c = reference_c(cfg, g);
    if cfg.dataflow == "ws" {
        let (tiles, skipped_ksteps) = ws_program(cfg, g);
        let (cycles, useful_macs, gated_products) = simulate_ws(cfg, &tiles);
        return Outcome { c, cycles, useful_macs, gated_products, skipped_ksteps };
    }
    let (cycles, useful_macs, gated_products, skipped_ksteps) = simulate(cfg, &program(cfg, g));
    Outcome { c, cycles, useful_macs, gated_products, skipped_ksteps }
}

/// A matrix of the input file, checked: `rows` (the row count, or `None`:
/// at least 1) and `cols` (the row length, or `None`: at least 1, every row
/// as long as row 0), each with the reason shown in the message; `elem`
/// reads one value or rejects it with `elem_allowed`.
fn matrix(
    name: &str,
    v: &Value,
    rows: Option<(usize, &str)>,
    cols: Option<(usize, &str)>,
    elem: &dyn Fn(&Value) -> Option<i64>,
    elem_allowed: &str,
) -> Result<Vec<Vec<i64>>, InputError> {
    let list = v.as_array().ok_or_else(|| err(name, shown(v), "a list of lists of integers"))?;
    match rows {
        None if list.is_empty() => return Err(err(name, "a list of 0 rows", "a list of at least 1 row")),
        Some((n, why)) if list.len() != n => {
            return Err(err(name, format!("a list of {} rows", list.len()), format!("a list of {n} rows ({why})")))
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(list.len());
    let mut width: Option<(usize, String)> = cols.map(|(n, why)| (n, why.to_string()));
    for (i, row) in list.iter().enumerate() {
        let at = format!("{name}[{i}]");
        let vals = row.as_array().ok_or_else(|| err(&at, shown(row), "a list of integers"))?;
        match &width {
            None => {
                if vals.is_empty() {
                    return Err(err(&at, "a list of 0 values", "a list of at least 1 value"));
                }
                width = Some((vals.len(), format!("the length of {name}[0]")));
            }
            Some((n, why)) => {
                if vals.len() != *n {
                    return Err(err(&at, format!("a list of {} values", vals.len()), format!("a list of {n} values ({why})")));
                }
            }
        }
        let mut r = Vec::with_capacity(vals.len());
        for (j, x) in vals.iter().enumerate() {
            match elem(x) {
                Some(e) => r.push(e),
                None => return Err(err(format!("{at}[{j}]"), shown(x), elem_allowed)),
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// Parse and check an input file (docs/systolic.md "`gpurtl run systolic`"),
/// first violation reported. Order: the object, its keys, `a_type`, `b_type`,
/// `a` (row by row: list, length, values), `b`, `c0`.
pub fn parse_input(v: &Value, cfg: &Config) -> Result<Gemm, InputError> {
    let obj = v.as_object().ok_or_else(|| err("(file)", shown(v), "a JSON object with matrices `a` and `b`"))?;
    for k in obj.keys() {
        if !["a", "b", "c0", "a_type", "b_type"].contains(&k.as_str()) {
            return Err(err(k.as_str(), "(given)", "absent: keys are a, b, c0, a_type, b_type"));
        }
    }
    for (key, want) in [("a_type", cfg.a_type), ("b_type", cfg.b_type)] {
        if let Some(x) = obj.get(key) {
            if x.as_str() != Some(want.name()) {
                return Err(err(key, shown(x), format!("\"{}\" (the block's {key} parameter)", want.name())));
            }
        }
    }
    let elem_of = |t: ElemType| {
        move |x: &Value| x.as_i64().filter(|e| (t.min()..=t.max()).contains(e))
    };
    let type_allowed = |t: ElemType| format!("an integer from {} to {} ({})", t.min(), t.max(), t.name());

    let av = obj.get("a").ok_or_else(|| err("a", "(missing)", "a list of lists of integers"))?;
    let a = matrix("a", av, None, None, &elem_of(cfg.a_type), &type_allowed(cfg.a_type))?;
    let (m, k) = (a.len(), a[0].len());

    let bv = obj.get("b").ok_or_else(|| err("b", "(missing)", "a list of lists of integers"))?;
    let b = matrix("b", bv, Some((k, "the columns of a")), None, &elem_of(cfg.b_type), &type_allowed(cfg.b_type))?;
    let n = b[0].len();

    let c0 = match obj.get("c0") {
        None => None,
        Some(cv) => {
            let (lo, hi) = cfg.acc_range();
            let acc = |x: &Value| -> Option<i64> {
                if let Some(e) = x.as_i64() {
                    return ((e as i128) >= lo && (e as i128) <= hi).then_some(e);
                }
                // Above i64::MAX: only an unsigned 64-bit accumulator holds it
                // (kept as its bit pattern).
                x.as_u64().filter(|&u| (u as i128) <= hi).map(|u| u as i64)
            };
            let allowed = format!(
                "an integer from {lo} to {hi} (the {} {}-bit accumulator)",
                if cfg.acc_signed() { "signed" } else { "unsigned" },
                cfg.acc_bits
            );
            Some(matrix("c0", cv, Some((m, "the rows of a")), Some((n, "the columns of b")), &acc, &allowed)?)
        }
    };
    Ok(Gemm { a, b, c0 })
}

/// The output file: `c` (unsigned 64-bit accumulator values written as
/// unsigned), the counters, `cycles` and `utilization`.
pub fn output_json(cfg: &Config, o: &Outcome) -> Value {
    let unsigned = !cfg.acc_signed();
    let c: Vec<Value> = o
        .c
        .iter()
        .map(|row| {
            Value::Array(
                row.iter()
                    .map(|&x| if unsigned { Value::from(x as u64) } else { Value::from(x) })
                    .collect(),
            )
        })
        .collect();
    serde_json::json!({
        "c": c,
        "cycles": o.cycles,
        "useful_macs": o.useful_macs,
        "gated_products": o.gated_products,
        "skipped_ksteps": o.skipped_ksteps,
        "utilization": o.utilization(cfg),
    })
}

/// Block pruning (seed §369): split `m` into `block` x `block` tiles (edge
/// tiles smaller); zero every tile whose |sum of its elements| < threshold.
pub fn prune(m: &[Vec<i64>], block: usize, threshold: i64) -> Vec<Vec<i64>> {
    assert!(block >= 1, "prune: block must be at least 1");
    let mut out = m.to_vec();
    let rows = m.len();
    let cols = m.first().map_or(0, |r| r.len());
    for r0 in (0..rows).step_by(block) {
        for c0 in (0..cols).step_by(block) {
            let (r1, c1) = ((r0 + block).min(rows), (c0 + block).min(cols));
            let sum: i128 = (r0..r1).flat_map(|i| (c0..c1).map(move |j| (i, j))).map(|(i, j)| m[i][j] as i128).sum();
            if sum.abs() < threshold as i128 {
                for row in out.iter_mut().take(r1).skip(r0) {
                    for x in row.iter_mut().take(c1).skip(c0) {
                        *x = 0;
                    }
                }
            }
        }
    }
    out
}

// The hand-worked cycle counts below follow the loader schedule of
// docs/systolic.md; `1 + ...` is the unit's input register, which takes each
// group one cycle before the loader does.
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(rows: u32, cols: u32) -> Config {
        Config { rows, cols, pipeline: 0, ..Config::default() }
    }

    fn gemm(a: Vec<Vec<i64>>, b: Vec<Vec<i64>>) -> Gemm {
        Gemm { a, b, c0: None }
    }

    // ---- values ----

    #[test]
    fn grid_2x2_on_2x3x2() {
        let c = cfg(2, 2);
        let g = gemm(vec![vec![1, 2, 3], vec![4, 5, 6]], vec![vec![7, 8], vec![9, 10], vec![11, 12]]);
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![58, 64], vec![139, 154]]);
        // One tile, one group of 3 steps: accept 0, issues 1..3, tile-ending
        // at 3; rows ready at 3+0+2+1 = 6 and 7, out at 7 and 8.
        assert_eq!(o.cycles, 1 + 8);
        assert_eq!(o.useful_macs, 12);
        assert_eq!(o.gated_products, 0);
        assert_eq!(o.skipped_ksteps, 0);
        assert!((o.utilization(&c) - 12.0 / 36.0).abs() < 1e-12);
    }

    #[test]
    fn mixed_types_at_extremes() {
        // i8 x u8: signed accumulator.
        let c = Config { b_type: ElemType::U8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![-128, 127]], vec![vec![255], vec![255]]));
        assert_eq!(o.c, vec![vec![-255]]);
        let o = run(&c, &gemm(vec![vec![-128, -128]], vec![vec![255], vec![255]]));
        assert_eq!(o.c, vec![vec![-65280]]);
        // i4 x i2.
        let c = Config { a_type: ElemType::I4, b_type: ElemType::I2, acc_bits: 8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![-8, 7]], vec![vec![-2], vec![1]]));
        assert_eq!(o.c, vec![vec![23]]);
        // u4 x u2: unsigned accumulator.
        let c = Config { a_type: ElemType::U4, b_type: ElemType::U2, acc_bits: 8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![15, 15]], vec![vec![3], vec![3]]));
        assert_eq!(o.c, vec![vec![90]]);
        // u4 x i2: signed.
        let c = Config { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![15]], vec![vec![-2]]));
        assert_eq!(o.c, vec![vec![-30]]);
        // Type helpers.
        assert_eq!((ElemType::I2.min(), ElemType::I2.max()), (-2, 1));
        assert_eq!((ElemType::U4.min(), ElemType::U4.max()), (0, 15));
        assert_eq!(ElemType::from_name("u2"), Some(ElemType::U2));
        assert_eq!(ElemType::from_name("i16"), None);
    }

    #[test]
    fn wraps_to_acc_bits() {
        // 3 * 49 = 147 -> 147 - 256 = -109 (signed 8-bit).
        let c = Config { a_type: ElemType::I4, b_type: ElemType::I4, acc_bits: 8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![7, 7, 7]], vec![vec![7], vec![7], vec![7]]));
        assert_eq!(o.c, vec![vec![-109]]);
        // 2 * 64 = 128 -> -128.
        let o = run(&c, &gemm(vec![vec![-8, -8]], vec![vec![-8], vec![-8]]));
        assert_eq!(o.c, vec![vec![-128]]);
        // Unsigned: 2 * 225 = 450 -> 194.
        let c = Config { a_type: ElemType::U4, b_type: ElemType::U4, acc_bits: 8, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![15, 15]], vec![vec![15], vec![15]]));
        assert_eq!(o.c, vec![vec![194]]);
    }

    #[test]
    fn c0_added_and_wrapped() {
        let c = cfg(2, 2);
        let g = Gemm {
            a: vec![vec![1, 2], vec![3, 4]],
            b: vec![vec![1, 0], vec![0, 1]],
            c0: Some(vec![vec![10, -20], vec![2147483647, 0]]),
        };
        assert_eq!(run(&c, &g).c, vec![vec![11, -18], vec![-2147483646, 4]]);
        // Unsigned 64-bit accumulator: held as the bit pattern, written unsigned.
        let c = Config { a_type: ElemType::U8, b_type: ElemType::U8, acc_bits: 64, ..cfg(1, 1) };
        let g = parse_input(&json!({"a": [[0]], "b": [[5]], "c0": [[18446744073709551615u64]]}), &c).unwrap();
        assert_eq!(g.c0, Some(vec![vec![-1]]));
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![-1]]);
        assert_eq!(output_json(&c, &o)["c"], json!([[18446744073709551615u64]]));
        let g = Gemm { a: vec![vec![1]], b: vec![vec![1]], c0: Some(vec![vec![-1]]) };
        assert_eq!(run(&c, &g).c, vec![vec![0]]);
    }

    #[test]
    fn lanes_2_with_odd_k() {
        let c = Config { lanes: 2, channel_bits: 16, ..cfg(1, 1) };
        let g = gemm(vec![vec![1, 2, 3]], vec![vec![4], vec![5], vec![6]]);
        let t = program(&c, &g);
        assert_eq!(t.len(), 1);
        let steps = &t[0].groups[0].steps;
        assert_eq!(
            steps,
            &vec![Step { a: vec![vec![1, 2]], b: vec![vec![4, 5]] }, Step { a: vec![vec![3, 0]], b: vec![vec![6, 0]] }]
        );
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![32]]);
        // Step 0: 1*1 + 1*1 = 2 MACs; step 1: lane 0 only, 1 MAC, 1 gated.
        assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (3, 1, 0));
        // Issues at 1, 2 (tile-ending); row 0 ready at 2+0+1+1 = 4, out at 5.
        assert_eq!(o.cycles, 1 + 5);
        assert!((o.utilization(&c) - 3.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn rowcol_skip_drops_zero_row_and_column() {
        let a = vec![vec![1, 2], vec![0, 0], vec![3, 4]];
        let b = vec![vec![0, 5], vec![0, 6]];
        let c0 = vec![vec![1, 2], vec![3, 4], vec![5, 6]];
        let g = Gemm { a, b, c0: Some(c0) };
        let on = cfg(1, 1);
        let off = Config { rowcol_skip: false, ..cfg(1, 1) };
        let t = program(&on, &g);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].rows.clone(), t[0].cols.clone()), (vec![Some(0)], vec![Some(1)]));
        assert_eq!((t[1].rows.clone(), t[1].cols.clone()), (vec![Some(2)], vec![Some(1)]));
        assert_eq!(program(&off, &g).len(), 6);
        let want = vec![vec![1, 2 + 17], vec![3, 4], vec![5, 6 + 39]];
        assert_eq!(run(&on, &g).c, want);
        assert_eq!(run(&off, &g).c, want);
        // Nothing to stream at all: no tile, cycles 0, C = C0.
        let g = Gemm { a: vec![vec![0, 0]], b: vec![vec![1], vec![2]], c0: Some(vec![vec![7]]) };
        assert!(program(&on, &g).is_empty());
        let o = run(&on, &g);
        assert_eq!(o, Outcome { c: vec![vec![7]], cycles: 0, useful_macs: 0, gated_products: 0, skipped_ksteps: 0 });
        assert_eq!(o.utilization(&on), 0.0);
    }

    // ---- the step program ----

    #[test]
    fn program_shape() {
        // R = C = 2, L = 2, group 2; M = 3, K = 5, N = 1.
        let c = Config { lanes: 2, channel_bits: 16, group: 2, ..cfg(2, 2) };
        let a = vec![vec![1, 2, 3, 4, 5], vec![6, 7, 8, 9, 10], vec![11, 12, 13, 14, 15]];
        let b = vec![vec![1], vec![2], vec![3], vec![4], vec![5]];
        let t = program(&c, &gemm(a, b));
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].rows, vec![Some(0), Some(1)]);
        assert_eq!(t[1].rows, vec![Some(2), None]);
        assert_eq!(t[0].cols, vec![Some(0), None]);
        // ceil(5/2) = 3 steps -> groups of 2 and 1.
        for tile in &t {
            assert_eq!(tile.groups.len(), 2);
            assert_eq!((tile.groups[0].steps.len(), tile.groups[0].last), (2, false));
            assert_eq!((tile.groups[1].steps.len(), tile.groups[1].last), (1, true));
        }
        assert_eq!(t[0].groups[0].steps[1], Step { a: vec![vec![3, 4], vec![8, 9]], b: vec![vec![3, 4], vec![0, 0]] });
        assert_eq!(t[1].groups[1].steps[0], Step { a: vec![vec![15, 0], vec![0, 0]], b: vec![vec![5, 0], vec![0, 0]] });
        // Row-block-major tile order.
        let c = cfg(1, 1);
        let t = program(&c, &gemm(vec![vec![1], vec![2]], vec![vec![1, 2]]));
        let order: Vec<_> = t.iter().map(|x| (x.rows[0], x.cols[0])).collect();
        assert_eq!(order, vec![(Some(0), Some(0)), (Some(0), Some(1)), (Some(1), Some(0)), (Some(1), Some(1))]);
    }

    // ---- cycles and counters ----

    #[test]
    fn cycles_single_pe_one_tile() {
        // Accept at 0, issues at 1, 2, 3, tile-ending at 3, row 0 ready at
        // 3+0+1+1 = 5, out at 6 (output register).
        let o = run(&cfg(1, 1), &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]]));
        assert_eq!(o.cycles, 1 + 6);
        assert_eq!(o.c, vec![vec![6]]);
        // Same with the steps cut into groups of 2 (back-to-back groups).
        let c = Config { group: 2, ..cfg(1, 1) };
        assert_eq!(run(&c, &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]])).cycles, 1 + 6);
    }

    #[test]
    fn cycles_second_tile_waits_for_first_to_drain() {
        // 1x1 grid, K = 2, two tiles (rows 0 and 1).
        // Tile 0: accept 0, issues 1, 2 (ending), row ready at 4, into the
        // output register at 4, out at 5: in flight 3..=4.
        // Tile 1: accepted at 2, step 0 at 3, ending step waits at 4, issues
        // at 5, row ready at 5+0+1+1 = 7, out at 8.
        let o = run(&cfg(1, 1), &gemm(vec![vec![1, 2], vec![3, 4]], vec![vec![1], vec![1]]));
        assert_eq!(o.c, vec![vec![3], vec![7]]);
        assert_eq!(o.cycles, 1 + 8);
        // K = 4: tile 0 out at 7 (in flight 5..=6); tile 1's ending step
        // comes at 8, no wait: out at 11.
        let o = run(&cfg(1, 1), &gemm(vec![vec![1; 4], vec![1; 4]], vec![vec![1]; 4]));
        assert_eq!(o.cycles, 1 + 11);
        // 2x2 grid, K = 1, two column tiles: tile 0 ends at 1, rows ready at
        // 4, 5, out at 5, 6 (in flight 2..=5); tile 1 accepted at 1, ending
        // waits until 6, rows ready at 9, 10, out at 10, 11.
        let o = run(&cfg(2, 2), &gemm(vec![vec![1], vec![1]], vec![vec![1, 1, 1]]));
        assert_eq!(o.cycles, 1 + 11);
    }

    #[test]
    fn load_filter_on_and_off() {
        let g = gemm(vec![vec![1, 0, 2, 0]], vec![vec![3], vec![4], vec![5], vec![6]]);
        // On: steps 0 and 2 issue at 1, 2 (ending); ready at 4, out at 5.
        let on = cfg(1, 1);
        let o = run(&on, &g);
        assert_eq!(o.c, vec![vec![13]]);
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 5, 2, 0, 2));
        // Off: all 4 issue at 1..4; ready at 6, out at 7; the zero steps are gated.
        let off = Config { load_filter: false, ..cfg(1, 1) };
        let o = run(&off, &g);
        assert_eq!(o.c, vec![vec![13]]);
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 7, 2, 2, 0));
        // Off and ungated.
        let o = run(&Config { gating: false, ..off }, &g);
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 7, 2, 0, 0));
    }

    #[test]
    fn all_zero_tile_issues_a_null_step() {
        let c = Config { rowcol_skip: false, ..cfg(1, 1) };
        let g = gemm(vec![vec![0, 0]], vec![vec![1], vec![1]]);
        // Accept 0, null step (tile-ending) at 1, ready at 1+0+1+1 = 3, out
        // at 4 (output register).
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![0]]);
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (1 + 4, 0, 0, 2));
    }

    #[test]
    fn empty_non_last_group_frees_the_loader() {
        // group 2, K = 4: group 0 (steps 0, 1) all zero, group 1 useful.
        // Accept g0 at 0; at 1 it has nothing -> accept g1 at 1; issues at 2,
        // 3 (ending); ready at 3+0+1+1 = 5, out at 6.
        let c = Config { group: 2, ..cfg(1, 1) };
        let o = run(&c, &gemm(vec![vec![0, 0, 1, 1]], vec![vec![1]; 4]));
        assert_eq!((o.cycles, o.skipped_ksteps, o.useful_macs), (1 + 6, 2, 2));
    }

    #[test]
    fn gated_and_useful_by_hand() {
        // 2x2 grid, K = 2. Step 0: A col (1, 2), B row (0, 4): 2*1 = 2 MACs,
        // 2 gated. Step 1: A (0, 3), B (5, 6): 1*2 = 2 MACs, 2 gated.
        let g = gemm(vec![vec![1, 0], vec![2, 3]], vec![vec![0, 4], vec![5, 6]]);
        let o = run(&cfg(2, 2), &g);
        assert_eq!(o.c, vec![vec![0, 4], vec![15, 26]]);
        assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (4, 4, 0));
        // Issues 1, 2 (ending): rows ready at 2+0+2+1 = 5 and 6, out at 6, 7.
        assert_eq!(o.cycles, 1 + 7);
        let o = run(&Config { gating: false, ..cfg(2, 2) }, &g);
        assert_eq!((o.useful_macs, o.gated_products), (4, 0));
        // Padding counts as gated: a 3x3 grid on the same GEMM.
        let o = run(&cfg(3, 3), &g);
        assert_eq!((o.useful_macs, o.gated_products), (4, 2 * 9 - 4));
    }

    #[test]
    fn output_keys() {
        let c = cfg(1, 1);
        let o = run(&c, &gemm(vec![vec![1, 2, 3]], vec![vec![1], vec![1], vec![1]]));
        assert_eq!(
            output_json(&c, &o),
            json!({"c": [[6]], "cycles": 1 + 6, "useful_macs": 3, "gated_products": 0, "skipped_ksteps": 0,
                   "utilization": 3.0 / 7.0})
        );
    }

    #[test]
    fn prune_blocks() {
        let m = vec![vec![1, 1, 5, -5], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, -1, 0, 0]];
        // Block sums: 4, 0, -1, 9.
        assert_eq!(
            prune(&m, 2, 2),
            vec![vec![1, 1, 0, 0], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, 0, 0, 0]]
        );
        assert_eq!(prune(&m, 2, 1), vec![vec![1, 1, 0, 0], vec![1, 1, 0, 0], vec![0, 0, 9, 0], vec![0, -1, 0, 0]]);
        assert_eq!(prune(&m, 2, 0), m);
        // Edge tiles are smaller: 3x3 in 2x2 blocks.
        let m = vec![vec![1, 1, 3], vec![1, 1, 0], vec![-2, 0, 1]];
        assert_eq!(prune(&m, 2, 2), vec![vec![1, 1, 3], vec![1, 1, 0], vec![-2, 0, 0]]);
    }

    // ---- parse_input ----

    fn perr(v: Value, c: &Config) -> String {
        parse_input(&v, c).unwrap_err().to_string()
    }

    #[test]
    fn parse_example() {
        let c = cfg(2, 2);
        let g = parse_input(
            &json!({"a": [[1, -2]], "b": [[3], [4]], "c0": [[-5]], "a_type": "i8", "b_type": "i8"}),
            &c,
        )
        .unwrap();
        assert_eq!(g, Gemm { a: vec![vec![1, -2]], b: vec![vec![3], vec![4]], c0: Some(vec![vec![-5]]) });
        let g = parse_input(&json!({"a": [[127, -128]], "b": [[0, 1], [2, 3]]}), &c).unwrap();
        assert_eq!(g.c0, None);
    }

    #[test]
    fn parse_messages() {
        let i8c = cfg(2, 2);
        let u4 = Config { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(2, 2) };
        let uu = Config { a_type: ElemType::U8, b_type: ElemType::U2, acc_bits: 16, ..cfg(2, 2) };
        let ab = |extra: Value| {
            let mut o = json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 4], [5, 6], [7, 8]]});
            for (k, v) in extra.as_object().unwrap() {
                o[k] = v.clone();
            }
            o
        };
        let cases: Vec<(Value, &Config, &str)> = vec![
            (json!([1]), &i8c, "input `(file)` = [1]: must be a JSON object with matrices `a` and `b`"),
            (ab(json!({"d": 1})), &i8c, "input `d` = (given): must be absent: keys are a, b, c0, a_type, b_type"),
            (json!({"b": [[1]]}), &i8c, "input `a` = (missing): must be a list of lists of integers"),
            (json!({"a": [[1]]}), &i8c, "input `b` = (missing): must be a list of lists of integers"),
            (json!({"a": 3, "b": [[1]]}), &i8c, "input `a` = 3: must be a list of lists of integers"),
            (json!({"a": [1], "b": [[1]]}), &i8c, "input `a[0]` = 1: must be a list of integers"),
            (json!({"a": [], "b": [[1]]}), &i8c, "input `a` = a list of 0 rows: must be a list of at least 1 row"),
            (json!({"a": [[]], "b": [[1]]}), &i8c, "input `a[0]` = a list of 0 values: must be a list of at least 1 value"),
            (
                json!({"a": [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3]], "b": [[1]]}),
                &i8c,
                "input `a[2]` = a list of 3 values: must be a list of 4 values (the length of a[0])",
            ),
            (
                json!({"a": [[1, 2, 3, 4]], "b": [[1], [2], [3]]}),
                &i8c,
                "input `b` = a list of 3 rows: must be a list of 4 rows (the columns of a)",
            ),
            (
                json!({"a": [[1, 2, 3, 4]], "b": []}),
                &i8c,
                "input `b` = a list of 0 rows: must be a list of 4 rows (the columns of a)",
            ),
            (json!({"a": [[1]], "b": "x"}), &i8c, "input `b` = \"x\": must be a list of lists of integers"),
            (json!({"a": [[1]], "b": [[]]}), &i8c, "input `b[0]` = a list of 0 values: must be a list of at least 1 value"),
            (
                json!({"a": [[1, 1]], "b": [[1, 2], [3]]}),
                &i8c,
                "input `b[1]` = a list of 1 values: must be a list of 2 values (the length of b[0])",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 128, 8]]})),
                &i8c,
                "input `a[1][2]` = 128: must be an integer from -128 to 127 (i8)",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 1.5, 8]]})),
                &i8c,
                "input `a[1][2]` = 1.5: must be an integer from -128 to 127 (i8)",
            ),
            (
                ab(json!({"b": [[1, 2], [3, 4], [5, -129], [7, 8]]})),
                &i8c,
                "input `b[2][1]` = -129: must be an integer from -128 to 127 (i8)",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 16, 8]]})),
                &u4,
                "input `a[1][2]` = 16: must be an integer from 0 to 15 (u4)",
            ),
            (ab(json!({"a": [[1, 2, 3, -1], [0, 0, 0, 0]]})), &u4, "input `a[0][3]` = -1: must be an integer from 0 to 15 (u4)"),
            (ab(json!({"b": [[1, 2], [3, 4], [5, 6], [7, 8]]})), &u4, "input `b[0][1]` = 2: must be an integer from -2 to 1 (i2)"),
            (ab(json!({"c0": 5})), &i8c, "input `c0` = 5: must be a list of lists of integers"),
            (ab(json!({"c0": [[1, 2]]})), &i8c, "input `c0` = a list of 1 rows: must be a list of 2 rows (the rows of a)"),
            (ab(json!({"c0": [[1, 2], 3]})), &i8c, "input `c0[1]` = 3: must be a list of integers"),
            (
                ab(json!({"c0": [[1, 2], [3, 4, 5]]})),
                &i8c,
                "input `c0[1]` = a list of 3 values: must be a list of 2 values (the columns of b)",
            ),
            (
                ab(json!({"c0": [[1, 2], [3, 2147483648u64]]})),
                &i8c,
                "input `c0[1][1]` = 2147483648: must be an integer from -2147483648 to 2147483647 (the signed 32-bit accumulator)",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 0], [-2, 1], [0, 0], [1, 1]], "c0": [[1, -129], [3, 4]]})),
                &u4,
                "input `c0[0][1]` = -129: must be an integer from -128 to 127 (the signed 8-bit accumulator)",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 0], [1, 2], [3, 0]], "c0": [[-1, 0], [0, 0]]})),
                &uu,
                "input `c0[0][0]` = -1: must be an integer from 0 to 65535 (the unsigned 16-bit accumulator)",
            ),
            (
                ab(json!({"a": [[1, 2, 3, 4], [5, 6, 7, 8]], "b": [[1, 2], [3, 0], [1, 2], [3, 0]], "c0": [[0, 65536], [0, 0]]})),
                &uu,
                "input `c0[0][1]` = 65536: must be an integer from 0 to 65535 (the unsigned 16-bit accumulator)",
            ),
            (ab(json!({"a_type": "u8"})), &i8c, "input `a_type` = \"u8\": must be \"i8\" (the block's a_type parameter)"),
            (ab(json!({"a_type": "int8"})), &i8c, "input `a_type` = \"int8\": must be \"i8\" (the block's a_type parameter)"),
            (ab(json!({"b_type": 8})), &i8c, "input `b_type` = 8: must be \"i8\" (the block's b_type parameter)"),
            (ab(json!({"b_type": "i8"})), &u4, "input `b_type` = \"i8\": must be \"i2\" (the block's b_type parameter)"),
        ];
        for (v, c, want) in cases {
            assert_eq!(perr(v.clone(), c), want, "{v}");
        }
        // Accepted edges: values at the type limits, c0 at the accumulator's.
        let c = Config { a_type: ElemType::U4, b_type: ElemType::I2, acc_bits: 8, ..cfg(2, 2) };
        let g = parse_input(&json!({"a": [[0, 15]], "b": [[-2], [1]], "c0": [[-128]], "a_type": "u4", "b_type": "i2"}), &c)
            .unwrap();
        assert_eq!(g.b, vec![vec![-2], vec![1]]);
        let c = Config { acc_bits: 64, ..cfg(2, 2) };
        let g = parse_input(&json!({"a": [[0]], "b": [[0]], "c0": [[i64::MIN]]}), &c).unwrap();
        assert_eq!(g.c0, Some(vec![vec![i64::MIN]]));
        assert_eq!(
            perr(json!({"a": [[0]], "b": [[0]], "c0": [[9223372036854775808u64]]}), &c),
            "input `c0[0][0]` = 9223372036854775808: must be an integer from -9223372036854775808 to 9223372036854775807 (the signed 64-bit accumulator)"
        );
    }

    // ---- weight-stationary (dataflow = ws) ----
    //
    // Hand-worked cycles follow the "WS cycle rules": cycle 0 is the first
    // weight transfer; a vector accepted in cycle c is held from c + 1; the
    // output row of a vector issued at s goes out at s + R + C + pipeline.

    fn ws(rows: u32, cols: u32) -> Config {
        Config { dataflow: "ws".to_string(), ..cfg(rows, cols) }
    }

    #[test]
    fn ws_single_pe() {
        // Weight at 0 (wcnt 0 -> 1); vector accepted at 0, held from 1;
        // issues at 1 (wcnt == R); row out at 1+1+1+P.
        let g = gemm(vec![vec![3]], vec![vec![5]]);
        let c = Config { pipeline: 2, ..ws(1, 1) };
        let o = run(&c, &g);
        assert_eq!(o, Outcome { c: vec![vec![15]], cycles: 1 + 1 + 1 + 2 + 1, useful_macs: 1, gated_products: 0, skipped_ksteps: 0 });
        assert_eq!(run(&ws(1, 1), &g).cycles, 4);
        // K = 2, M = 1: two tiles of one vector. Tile 0: weight 0, issue 1
        // (wblock = 1), out 3. Cycle 2: wblock 1 -> 0; weight of tile 1 at
        // 3; vector held since 2 issues at 4; out at 6.
        let o = run(&ws(1, 1), &gemm(vec![vec![1, 2]], vec![vec![3], vec![4]]));
        assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products), (vec![vec![11]], 7, 2, 0));
        // K = 2, M = 5: tile 0 issues at 1..=5; its wblock runs out at 2 and
        // tile 1's weight goes into the shadow at 3 while tile 0 streams;
        // tile 1's vector 0 (accepted at 5, held from 6) issues at 6..=10.
        let o = run(&ws(1, 1), &gemm(vec![vec![1, 1]; 5], vec![vec![1], vec![1]]));
        assert_eq!((o.c.clone(), o.cycles), (vec![vec![2]; 5], 10 + 2 + 1));
        // A zero product in a 1x1 grid is gated when the step is kept.
        let c = Config { load_filter: false, rowcol_skip: false, ..ws(1, 1) };
        let o = run(&c, &gemm(vec![vec![1, 0]], vec![vec![3], vec![4]]));
        assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (vec![vec![3]], 7, 1, 1, 0));
        let o = run(&Config { gating: false, ..c }, &gemm(vec![vec![1, 0]], vec![vec![3], vec![4]]));
        assert_eq!((o.useful_macs, o.gated_products), (1, 0));
    }

    #[test]
    fn ws_grid_2x2_dense_m3() {
        // R = C = 2, K = 2, M = 3, N = 2: one tile, 3 vectors.
        // Weights at 0, 1; vector 0 accepted 0, held 1, issues at 2 (wcnt ==
        // 2; wcnt = 0, wblock = 3, open); vector 1 accepted 2, issues 3;
        // vector 2 accepted 3, issues 4 (last). Rows out at 6, 7, 8.
        let a = vec![vec![1, 2], vec![3, 4], vec![5, 6]];
        let b = vec![vec![1, 2], vec![3, 4]];
        let o = run(&ws(2, 2), &gemm(a.clone(), b.clone()));
        assert_eq!(o.c, vec![vec![7, 10], vec![15, 22], vec![23, 34]]);
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (9, 12, 0, 0));
        assert!((o.utilization(&ws(2, 2)) - 12.0 / 36.0).abs() < 1e-12);
        let p2 = Config { pipeline: 2, ..ws(2, 2) };
        assert_eq!(run(&p2, &gemm(a.clone(), b.clone())).cycles, 11);
        // K = 3: k blocks {0, 1} and {2, pad}. Tile 0 as above (first issue
        // at 2, wblock 3 -> 2 -> 1 -> 0 over cycles 3..5); tile 1's weights
        // at 6, 7; its vector 0 (accepted at 4, held from 5) issues at 8,
        // then 9, 10; rows out at 12, 13, 14.
        let a = vec![vec![1, 2, 1], vec![3, 4, 1], vec![5, 6, 1]];
        let b = vec![vec![1, 2], vec![3, 4], vec![1, -1]];
        let o = run(&ws(2, 2), &gemm(a.clone(), b.clone()));
        assert_eq!(o.c, vec![vec![8, 9], vec![16, 21], vec![24, 33]]);
        // Tile 1: PE row 1 is padding: 2 useful, 2 gated per vector.
        assert_eq!((o.cycles, o.useful_macs, o.gated_products, o.skipped_ksteps), (15, 18, 6, 0));
        assert_eq!(run(&p2, &gemm(a, b)).cycles, 17);
    }

    #[test]
    fn ws_program_filters_and_padding() {
        // Row 1 of A and column 1 of B are zero (rowcol_skip); step 1 has no
        // non-zero A among the listed rows, step 2 none in B (load_filter).
        let a = vec![vec![1, 0, 2, 3], vec![0, 0, 0, 0], vec![4, 0, 5, 0]];
        let b = vec![vec![1, 0, 2], vec![6, 0, 7], vec![0, 0, 0], vec![8, 0, 9]];
        let g = Gemm { a, b, c0: Some(vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]]) };
        let c = ws(3, 3);
        let (t, skipped) = ws_program(&c, &g);
        assert_eq!(skipped, 2);
        assert_eq!(
            t,
            vec![WsTile {
                cols: vec![Some(0), Some(2), None],
                ksteps: vec![Some(0), Some(3), None],
                weights: vec![
                    vec![vec![1], vec![2], vec![0]],
                    vec![vec![8], vec![9], vec![0]],
                    vec![vec![0], vec![0], vec![0]],
                ],
                vectors: vec![
                    WsVector { row: 0, a: vec![vec![1], vec![3], vec![0]], last: false },
                    WsVector { row: 2, a: vec![vec![4], vec![0], vec![0]], last: true },
                ],
            }]
        );
        let o = run(&c, &g);
        assert_eq!(o.c, vec![vec![1 + 25, 2, 3 + 29], vec![4, 5, 6], vec![7 + 4, 8, 9 + 8]]);
        assert_eq!(o.c, reference_c(&c, &g));
        // Vector 0: (1, 3) x (1, 2 | 8, 9) = 4; vector 1: (4) x (1, 2) = 2.
        assert_eq!((o.useful_macs, o.gated_products, o.skipped_ksteps), (6, 18 - 6, 2));
        // Weights 0..2, issues 3, 4; rows out at 9, 10.
        assert_eq!(o.cycles, 11);
        // No load filter: all 4 steps, k blocks {0, 1, 2} and {3, pad, pad}.
        let (t, skipped) = ws_program(&Config { load_filter: false, ..ws(3, 3) }, &g);
        assert_eq!(skipped, 0);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].ksteps, vec![Some(0), Some(1), Some(2)]);
        assert_eq!(t[1].ksteps, vec![Some(3), None, None]);
        assert_eq!(t[1].weights[0], vec![vec![8], vec![9], vec![0]]);
        assert_eq!(t[1].vectors[0].a, vec![vec![3], vec![0], vec![0]]);
        // No row/column skip: all rows and columns, same useful steps.
        let (t, skipped) = ws_program(&Config { rowcol_skip: false, ..ws(3, 3) }, &g);
        assert_eq!(skipped, 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].cols, vec![Some(0), Some(1), Some(2)]);
        assert_eq!(t[0].weights[1], vec![vec![8], vec![0], vec![9]]);
        let rows: Vec<_> = t[0].vectors.iter().map(|v| (v.row, v.last)).collect();
        assert_eq!(rows, vec![(0, false), (1, false), (2, true)]);
    }

    #[test]
    fn ws_program_blocks_lanes_and_empty() {
        // Column blocks in order; a block with no useful step has no tile.
        // A = [1 0]; column 0 uses step 0; column 1 has B only at k = 1.
        let g = gemm(vec![vec![1, 0]], vec![vec![1, 0], vec![0, 1]]);
        let (t, skipped) = ws_program(&ws(1, 1), &g);
        assert_eq!(skipped, 1 + 2);
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].cols.clone(), t[0].ksteps.clone()), (vec![Some(0)], vec![Some(0)]));
        assert_eq!(run(&ws(1, 1), &g).c, vec![vec![1, 0]]);
        // Two column blocks, column-block-major, the last one short.
        let g = gemm(vec![vec![1, 1]], vec![vec![1, 2, 3], vec![4, 5, 6]]);
        let (t, _) = ws_program(&ws(1, 2), &g);
        let order: Vec<_> = t.iter().map(|x| (x.cols.clone(), x.ksteps.clone())).collect();
        assert_eq!(
            order,
            vec![
                (vec![Some(0), Some(1)], vec![Some(0)]),
                (vec![Some(0), Some(1)], vec![Some(1)]),
                (vec![Some(2), None], vec![Some(0)]),
                (vec![Some(2), None], vec![Some(1)]),
            ]
        );
        // Lanes: L = 2, K = 3: step 1 covers K index 2 and a zero lane.
        let c = Config { lanes: 2, channel_bits: 16, ..ws(1, 1) };
        let g = gemm(vec![vec![1, 2, 3]], vec![vec![4], vec![5], vec![6]]);
        let (t, skipped) = ws_program(&c, &g);
        assert_eq!(skipped, 0);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].weights.clone(), t[0].vectors[0].a.clone()), (vec![vec![vec![4, 5]]], vec![vec![1, 2]]));
        assert_eq!((t[1].weights.clone(), t[1].vectors[0].a.clone()), (vec![vec![vec![6, 0]]], vec![vec![3, 0]]));
        let o = run(&c, &g);
        // Issues at 1 and 4 (as in ws_single_pe); lane 1 of step 1 gated.
        assert_eq!((o.c.clone(), o.cycles, o.useful_macs, o.gated_products), (vec![vec![32]], 7, 3, 1));
        // No listed row: no tile, C = C0, cycles 0; every step of the
        // column block counts as skipped.
        let g = Gemm { a: vec![vec![0, 0]], b: vec![vec![1], vec![2]], c0: Some(vec![vec![7]]) };
        let (t, skipped) = ws_program(&ws(1, 1), &g);
        assert!(t.is_empty());
        assert_eq!(skipped, 2);
        let o = run(&ws(1, 1), &g);
        assert_eq!(o, Outcome { c: vec![vec![7]], cycles: 0, useful_macs: 0, gated_products: 0, skipped_ksteps: 2 });
        // Without load_filter nothing is skipped, and still no tile.
        let c = Config { load_filter: false, ..ws(1, 1) };
        assert_eq!(ws_program(&c, &g), (vec![], 0));
    }

    /// C played through the WS program: each vector's output row is
    /// `sum_i sum_l a[i][l] * weights[i][j][l]`, added to the running sum
    /// (C0 or zero first), wrapped (the `out_c0_i` accumulation).
    fn ws_replay(cfg: &Config, g: &Gemm, tiles: &[WsTile]) -> Vec<Vec<i64>> {
        let n = g.b[0].len();
        let mut c: Vec<Vec<i64>> = match &g.c0 {
            Some(c0) => c0.clone(),
            None => vec![vec![0; n]; g.a.len()],
        };
        for t in tiles {
            for v in &t.vectors {
                for (j, col) in t.cols.iter().enumerate() {
                    let Some(col) = col else { continue };
                    let mut s = c[v.row][*col] as i128;
                    for (i, a_row) in v.a.iter().enumerate() {
                        for (ln, &a) in a_row.iter().enumerate() {
                            s += a as i128 * t.weights[i][j][ln] as i128;
                        }
                    }
                    c[v.row][*col] = wrap(cfg, s);
                }
            }
        }
        c
    }

    #[test]
    fn ws_random_against_reference() {
        // A small LCG; about half the values zero so every filter has work.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for case in 0..300 {
            let (rows, cols) = (1 + next(4) as u32, 1 + next(4) as u32);
            let lanes = [1u32, 2, 4][next(3) as usize];
            let c = Config {
                lanes,
                channel_bits: 8 * lanes,
                acc_bits: [16u32, 32][next(2) as usize],
                pipeline: next(3) as u32,
                gating: next(2) == 0,
                load_filter: next(2) == 0,
                rowcol_skip: next(2) == 0,
                ..ws(rows, cols)
            };
            let (m, k, n) = (1 + next(5) as usize, 1 + next(7) as usize, 1 + next(5) as usize);
            let mut val = || if next(2) == 0 { 0 } else { next(256) as i64 - 128 };
            let a: Vec<Vec<i64>> = (0..m).map(|_| (0..k).map(|_| val()).collect()).collect();
            let b: Vec<Vec<i64>> = (0..k).map(|_| (0..n).map(|_| val()).collect()).collect();
            let c0 = (next(2) == 0).then(|| (0..m).map(|_| (0..n).map(|_| next(2001) as i64 - 1000).collect()).collect());
            let g = Gemm { a, b, c0 };
            let o = run(&c, &g);
            let (tiles, skipped) = ws_program(&c, &g);
            assert_eq!(o.c, reference_c(&c, &g), "case {case}");
            assert_eq!(ws_replay(&c, &g, &tiles), o.c, "case {case}");
            assert_eq!(o.skipped_ksteps, skipped);
            // Every non-zero product is in exactly one tile, whatever the
            // filters drop.
            let nz: u64 = (0..m)
                .flat_map(|i| (0..k).flat_map(move |kk| (0..n).map(move |j| (i, kk, j))))
                .filter(|&(i, kk, j)| g.a[i][kk] != 0 && g.b[kk][j] != 0)
                .count() as u64;
            assert_eq!(o.useful_macs, nz, "case {case}");
            let (r, cc, l, p) = (rows as u64, cols as u64, lanes as u64, c.pipeline as u64);
            let nv: u64 = tiles.iter().map(|t| t.vectors.len() as u64).sum();
            assert_eq!(o.gated_products, if c.gating { nv * r * cc * l - nz } else { 0 }, "case {case}");
            // Closed form of the schedule: tile 0's first vector issues at
            // R; tile t+1's at the later of (its weights, R + C after tile
            // t's first issue, then R rows) and (tile t's last issue + 1).
            let per_tile = tiles.first().map_or(0, |t| t.vectors.len() as u64);
            let mut first = r;
            for _ in 1..tiles.len() {
                first = (first + 2 * r + cc).max(first + per_tile);
            }
            let want = if tiles.is_empty() { 0 } else { first + per_tile - 1 + r + cc + p + 1 };
            assert_eq!(o.cycles, want, "case {case}");
        }
    }

    #[test]
    fn os_ignores_ws() {
        // dataflow "os" still runs the step program.
        let g = gemm(vec![vec![1, 2], vec![3, 4], vec![5, 6]], vec![vec![1, 2], vec![3, 4]]);
        let os = run(&cfg(2, 2), &g);
        let w = run(&ws(2, 2), &g);
        assert_eq!(os.c, w.c);
        let (_, _, _, skipped) = simulate(&cfg(2, 2), &program(&cfg(2, 2), &g));
        assert_eq!(os.skipped_ksteps, skipped);
        assert_ne!(os.cycles, w.cycles);
    }
}
