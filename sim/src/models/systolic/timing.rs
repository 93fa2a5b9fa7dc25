//! Cycles and counters: the loader rules (output-stationary) and the WS
//! cycle rules of docs/systolic.md, played cycle by cycle over a program.

#[cfg(test)]
use super::sequencer::Tile;
use super::sequencer::{Group, WsTile, WsVector};
use gpurtl_params::systolic::SystolicParams;
use std::borrow::Borrow;
use std::collections::VecDeque;

/// A step offered to the grid: a real step (index in its group) or the null
/// step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    Step(usize),
    Null,
}

/// The group in the loader (the group itself, or a reference to it).
struct Held<G> {
    group: G,
    /// Useful steps not yet issued, lowest index first.
    pending: VecDeque<usize>,
    ended: bool,
}

impl<G: Borrow<Group>> Held<G> {
    /// The candidate and whether it is tile-ending; `None` when nothing remains.
    fn candidate(&self) -> Option<(Candidate, bool)> {
        let last = self.group.borrow().last;
        if let Some(&k) = self.pending.front() {
            Some((Candidate::Step(k), last && self.pending.len() == 1))
        } else if last && !self.ended {
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
/// both have a non-zero value (zero as the element type's
/// `ElemType::is_zero`); without, always.
fn useful(cfg: &SystolicParams, g: &Group, s: usize) -> bool {
    let (za, zb) = (cfg.a_type, cfg.b_type);
    !cfg.load_filter || (g.step_a(s).iter().any(|&x| !za.is_zero(x)) && g.step_b(s).iter().any(|&x| !zb.is_zero(x)))
}

/// `sum_l nzA[l] * nzB[l]` of step `s` (zero as the element type's).
fn step_macs(cfg: &SystolicParams, g: &Group, s: usize) -> u64 {
    let lanes = cfg.lanes as usize;
    let (za, zb) = (cfg.a_type, cfg.b_type);
    let (a, b) = (g.step_a(s), g.step_b(s));
    (0..lanes)
        .map(|l| {
            let nza = a.iter().skip(l).step_by(lanes).filter(|&&x| !za.is_zero(x)).count() as u64;
            let nzb = b.iter().skip(l).step_by(lanes).filter(|&&x| !zb.is_zero(x)).count() as u64;
            nza * nzb
        })
        .sum()
}

/// (cycles, useful_macs, gated_products, skipped_ksteps) of a program.
#[cfg(test)]
pub(super) fn simulate(cfg: &SystolicParams, tiles: &[Tile]) -> (u64, u64, u64, u64) {
    simulate_groups(cfg, tiles.iter().flat_map(|t| t.groups.iter()))
}

/// [`simulate`] on the program's groups in order, taken from `groups` one
/// at a time as the loader accepts them (nothing else of the program is
/// kept): each cycle costs the same however many tiles came before. The
/// groups are offered back-to-back: [`Loader`] with a group offered in every
/// cycle while one is left.
pub(super) fn simulate_groups<G: Borrow<Group>>(cfg: &SystolicParams, groups: impl Iterator<Item = G>) -> (u64, u64, u64, u64) {
    let mut groups = groups;
    // The loader's cycle 0 is its first accept; the unit accepted that group
    // one cycle earlier, into its input register.
    let mut loader = Loader::new(cfg, 0);
    let mut next = groups.next();
    while loader.holds() || next.is_some() {
        if crate::budget::over(loader.cycle()) {
            break;
        }
        loader.step(&mut next);
        if next.is_none() {
            next = groups.next();
        }
    }
    let cycles = loader.last_transfer().map_or(0, |t| t + 1);
    crate::budget::spend(cycles);
    let (useful_macs, gated, skipped) = loader.counters();
    (cycles, useful_macs, gated, skipped)
}

/// A tile's end in the [`Loader`]: the cycle its tile-ending step issued
/// and the cycles its output rows are transferred (row `r` at `rows[r]`,
/// the output always ready).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileEnd {
    pub issue: u64,
    pub rows: Vec<u64>,
}

/// The output-stationary loader of docs/systolic.md ("The grid, cycle by
/// cycle"), played one cycle at a time over a stream of groups (tile after
/// tile: the in-flight rule and the output register hold across tiles),
/// with the output always ready. Cycles are numbered from `first` (given to
/// [`Loader::new`]), one a [`Loader::step`]; a group taken in cycle `c` is
/// held from `c + 1`.
///
/// The pipeline term is the depth D = `cfg.depth()` ("The output-stationary
/// floating-point grid", "Timing": P replaced by D): row `r` of a tile whose
/// tile-ending step issued in cycle `s` is ready from `s + r + C + 1 + D`,
/// and so the tile is in flight until its last row, D later as well. For
/// integer types D = `pipeline`; for floating point `pipeline + ceil(log2
/// lanes)` (`fp_stages` is 0 in the output-stationary grid, so H = 1 and
/// the `fp_stages` term of the depth is 0).
pub struct Loader<G> {
    cfg: SystolicParams,
    /// The cycle the next [`Loader::step`] plays.
    cycle: u64,
    held: Option<Held<G>>,
    /// (tile-ending issue cycle, last in-flight cycle) of the latest ended
    /// tile. Tiles end in order and their last row transfers increase, so
    /// when any earlier tile is in flight the latest one is: it alone is kept.
    latest: Option<(u64, u64)>,
    last_transfer: Option<u64>,
    /// Steps present in the groups taken so far.
    present: u64,
    useful_macs: u64,
    gated: u64,
    issued_steps: u64,
}

impl<G: Borrow<Group>> Loader<G> {
    /// An empty loader (no group held, no tile in flight) whose first
    /// [`Loader::step`] plays cycle `first`.
    pub fn new(cfg: &SystolicParams, first: u64) -> Self {
        Loader {
            cfg: cfg.clone(),
            cycle: first,
            held: None,
            latest: None,
            last_transfer: None,
            present: 0,
            useful_macs: 0,
            gated: 0,
            issued_steps: 0,
        }
    }

    /// The cycle the next [`Loader::step`] plays.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// True while a group is held (at the start of the next cycle).
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The latest row transfer so far (`None` before the first tile ended).
    pub fn last_transfer(&self) -> Option<u64> {
        self.last_transfer
    }

    /// (useful_macs, gated_products, skipped_ksteps) of the groups taken so
    /// far (skipped: present steps not issued).
    pub fn counters(&self) -> (u64, u64, u64) {
        (self.useful_macs, self.gated, self.present - self.issued_steps)
    }

    /// Plays one cycle: the held group's candidate issues if the rules
    /// allow; then, if the loader is ready for a new group and `offer` holds
    /// one, it is taken (`offer` becomes `None`) and held from the next
    /// cycle. Returns the tile's end when a tile-ending step issued.
    pub fn step(&mut self, offer: &mut Option<G>) -> Option<TileEnd> {
        let cfg = &self.cfg;
        let (r, c, l) = (cfg.rows as u64, cfg.cols as u64, cfg.lanes as u64);
        // The depth D: `pipeline`, plus ceil(log2 lanes) for floating point
        // (the lane tree's levels; H = 1 here: no fp_stages in os), in place
        // of P in every rule.
        let d = cfg.depth() as u64;
        let cycle = self.cycle;
        let mut end = None;
        let mut ready = true;
        if let Some(h) = self.held.as_mut() {
            match h.candidate() {
                // Only a non-`last` group with no useful step: nothing to do,
                // the loader is free this cycle.
                None => {}
                Some((cand, ending)) => {
                    let in_flight = self.latest.is_some_and(|(s, t)| s < cycle && cycle <= t);
                    if ending && in_flight {
                        ready = false;
                    } else {
                        if let Candidate::Step(k) = cand {
                            let macs = step_macs(cfg, h.group.borrow(), k);
                            self.useful_macs += macs;
                            if cfg.gating {
                                self.gated += r * c * l - macs;
                            }
                            self.issued_steps += 1;
                            h.pending.pop_front();
                        }
                        if ending {
                            h.ended = true;
                            let s = cycle;
                            let mut rows = Vec::with_capacity(r as usize);
                            for row in 0..r {
                                // Row `row` ready at s + row + C + 1 + D; +1: the
                                // output register in front of the port.
                                let ready_at = s + row + c + 1 + d + 1;
                                let t = match self.last_transfer {
                                    Some(p) => ready_at.max(p + 1),
                                    None => ready_at,
                                };
                                self.last_transfer = Some(t);
                                rows.push(t);
                            }
                            // Free once the last row is in the output register.
                            self.latest = Some((s, self.last_transfer.unwrap() - 1));
                            end = Some(TileEnd { issue: s, rows });
                        }
                        ready = h.nothing_remains();
                    }
                }
            }
            if ready {
                self.held = None;
            }
        }
        if ready {
            if let Some(g) = offer.take() {
                let gr = g.borrow();
                self.present += gr.len() as u64;
                let pending = (0..gr.len()).filter(|&k| useful(cfg, gr, k)).collect();
                self.held = Some(Held { group: g, pending, ended: false });
            }
        }
        self.cycle += 1;
        end
    }
}

/// Useful (PE, lane) pairs of one WS vector against its tile's weights:
/// A value `a[i][l]` and weight `weights[i][j][l]` both non-zero (zero as
/// the element type's `ElemType::is_zero`: +0 and -0 for floating point;
/// a NaN or Inf is non-zero).
fn ws_vector_macs(cfg: &SystolicParams, tile: &WsTile, v: &WsVector) -> u64 {
    let (za, zb) = (cfg.a_type, cfg.b_type);
    let mut n = 0u64;
    for (a_row, w_row) in v.a.iter().zip(&tile.weights) {
        for w_col in w_row {
            n += a_row.iter().zip(w_col).filter(|&(&a, &w)| !za.is_zero(a) && !zb.is_zero(w)).count() as u64;
        }
    }
    n
}

/// (cycles, useful_macs, gated_products) of a WS program of `n_tiles`
/// tiles, by the spec's "WS cycle rules" with weight rows and A vectors
/// offered back-to-back (each in global order across tiles) and the output
/// always ready. Cycle 0 is the first weight transfer. The tiles are taken
/// from `tiles` one at a time as the A vector stream reaches them (the
/// weight stream only counts rows).
///
/// The pipeline term is the depth D = `cfg.depth()` (`pipeline`, plus
/// `fp_stages` + ceil(log2 lanes)·H for floating point: the products'
/// `fp_stages` registers and the lane tree) and the hop H = `cfg.hop()`
/// (`fp_stages` + 1: the cycles of one binary32 add, so of a partial sum's
/// step from one PE row to the next; 1 for integers) ("The floating-point
/// grid", "Timing"): a vector issued in cycle `s` gives its row in
/// `s + R·H + C + D`, at most `R·H + C + D + 1` vectors are issued and not
/// yet transferred, and a tile's first vector sets `wblock = (R - 1)·H + C`
/// (R + C - 1 when H = 1: the integer rules with D = `pipeline` = P). For
/// floating point the driver's rule: a vector of a column block's second or
/// later tile takes its running sums from the previous tile's row for the
/// same output row, so it is offered (can be accepted) only from the cycle
/// after that row's transfer.
pub(super) fn simulate_ws<T: Borrow<WsTile>>(cfg: &SystolicParams, n_tiles: usize, tiles: impl Iterator<Item = T>) -> (u64, u64, u64) {
    let (r, c, l) = (cfg.rows as u64, cfg.cols as u64, cfg.lanes as u64);
    let d = cfg.depth() as u64;
    // H: 1 for integers and for fp_stages = 0 (validation keeps fp_stages
    // at 0 for integer types), so every rule is then the integer one.
    let h = cfg.hop() as u64;
    // A vector issued at s: its row is offered (and, the output always
    // ready, transferred) at s + latency.
    let latency = r * h + c + d;
    // wblock set by a tile's first vector: the cycles until the last PE row
    // has switched to the shadow weights.
    let wblock_first = (r - 1) * h + c;
    let driver_rule = cfg.float();
    // The two input streams: R weight rows per tile; the vectors, tile by tile.
    let weight_rows = n_tiles as u64 * r;
    let mut vectors = VectorStream::new(cfg, tiles);
    let mut next_w = 0u64;
    let (mut wcnt, mut wblock, mut open) = (0u64, 0u64, false);
    // The input register: the held vector's (useful MACs, last).
    let mut held: Option<(u64, bool)> = None;
    // Output transfer cycles of issued vectors not yet transferred (in order).
    let mut outstanding: VecDeque<u64> = VecDeque::new();
    let mut last_transfer: Option<u64> = None;
    // The driver's rule: the row transfer cycles of the previous tile's
    // vectors and of the current tile's issued so far (vector i of a tile
    // is its row list's i-th row, the same in every tile). Vectors issue in
    // stream order, so a tile's vectors have all issued before the next
    // tile's first is accepted.
    let (mut prev_rows, mut cur_rows): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    let (mut useful_macs, mut gated) = (0u64, 0u64);
    let mut cycle: u64 = 0;
    while next_w < weight_rows || vectors.any_left() || held.is_some() {
        if crate::budget::over(cycle) {
            break;
        }
        // 4. Rows go out in order; with the output always ready a row is
        // transferred in its offer cycle (issues are at most one per cycle).
        while outstanding.front().is_some_and(|&t| t < cycle) {
            outstanding.pop_front();
        }
        let credit = (outstanding.len() as u64) < latency + 1;
        // 1. Weight port (state at the start of the cycle).
        let w_transfer = next_w < weight_rows && wcnt < r && wblock == 0;
        // 2. Issue.
        let issue = held.is_some() && (open || wcnt == r) && credit;
        let mut first = false;
        if issue {
            let (macs, last) = held.unwrap();
            useful_macs += macs;
            if cfg.gating {
                gated += r * c * l - macs;
            }
            first = !open;
            open = !last;
            let t = cycle + latency;
            outstanding.push_back(t);
            last_transfer = Some(t);
            if driver_rule {
                cur_rows.push(t);
                if last {
                    prev_rows = std::mem::take(&mut cur_rows);
                }
            }
        }
        if w_transfer {
            wcnt += 1;
            next_w += 1;
        }
        if first {
            wcnt = 0;
            wblock = wblock_first;
        } else {
            wblock = wblock.saturating_sub(1);
        }
        // 3. Activation port: ready when the register is empty or its vector
        // issues now; an accepted vector is held from the next cycle. The
        // next vector is offered once the row it depends on (if any) was
        // transferred in an earlier cycle.
        if issue {
            held = None;
        }
        if held.is_none() {
            let offered = match vectors.depends_on() {
                Some(i) if driver_rule => prev_rows[i] < cycle,
                _ => true,
            };
            if offered {
                held = vectors.take();
            }
        }
        cycle += 1;
    }
    let cycles = last_transfer.map_or(0, |t| t + 1);
    crate::budget::spend(cycles);
    (cycles, useful_macs, gated)
}

/// The A vectors of a WS program in order, from its tiles one at a time:
/// each vector as (its useful MACs against its tile's weights, last).
struct VectorStream<'c, T, I> {
    cfg: &'c SystolicParams,
    tiles: I,
    /// The tile of the next vector and that vector's index in it; `None`
    /// when no vector is left.
    cur: Option<(T, usize)>,
    /// Whether `cur`'s tile continues the previous tile's column block (the
    /// same columns: a later k block).
    cont: bool,
}

impl<'c, T: Borrow<WsTile>, I: Iterator<Item = T>> VectorStream<'c, T, I> {
    fn new(cfg: &'c SystolicParams, tiles: I) -> Self {
        let mut s = VectorStream { cfg, tiles, cur: None, cont: false };
        s.advance();
        s
    }

    /// Moves `cur` to the next tile that has a vector (none left: `None`).
    fn advance(&mut self) {
        let prev_cols = self.cur.as_ref().map(|(t, _)| t.borrow().cols.clone());
        self.cur = self.tiles.by_ref().find(|t| !t.borrow().vectors.is_empty()).map(|t| (t, 0));
        // Column blocks are disjoint pieces of the column list, so equal
        // columns mean the same block.
        self.cont = match (&self.cur, prev_cols) {
            (Some((t, _)), Some(p)) => t.borrow().cols == p,
            _ => false,
        };
    }

    fn any_left(&self) -> bool {
        self.cur.is_some()
    }

    /// The next vector's index in its tile when its tile continues a column
    /// block, i.e. when its running sums are the previous tile's row for the
    /// same output row, that tile's vector of the same index.
    fn depends_on(&self) -> Option<usize> {
        match &self.cur {
            Some((_, i)) if self.cont => Some(*i),
            _ => None,
        }
    }

    fn take(&mut self) -> Option<(u64, bool)> {
        let (tile, i) = self.cur.as_mut()?;
        let t: &WsTile = (*tile).borrow();
        let v = &t.vectors[*i];
        let item = (ws_vector_macs(self.cfg, t, v), v.last);
        *i += 1;
        if *i == t.vectors.len() {
            self.advance();
        }
        Some(item)
    }
}
