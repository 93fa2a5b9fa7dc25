//! The tile sequencers of docs/systolic.md: how a GEMM becomes the step
//! program of the output-stationary grid, or the weight rows and A vectors
//! of the weight-stationary grid. (Stimulus, shared with the RTL testbench.)
//!
//! Values are as in [`Gemm`]: integers, or for floating-point element types
//! the elements' bit patterns; padding and K indices >= K are 0 (for floating
//! point the +0 pattern). Every zero test is the element type's
//! (`ElemType::is_zero`: +0 and -0 for floating point).

use super::Gemm;
use gpurtl_params::systolic::SystolicParams;

/// One k-step as the grid sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// `a[i][l]`: PE row `i`, lane `l` (R x L).
    pub a: Vec<Vec<i64>>,
    /// `b[j][l]`: PE column `j`, lane `l` (C x L).
    pub b: Vec<Vec<i64>>,
}

/// One input transfer: up to `group` consecutive steps of a tile, their
/// values held flat (two allocations a group, not one a PE row and column
/// a step: a run plays millions of steps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Steps in the group.
    pub n: usize,
    /// PE rows, PE columns and lanes of each step.
    pub dims: (usize, usize, usize),
    /// Step `s`, PE row `i`, lane `l` at `(s * R + i) * L + l`.
    pub a: Vec<i64>,
    /// Step `s`, PE column `j`, lane `l` at `(s * C + j) * L + l`.
    pub b: Vec<i64>,
    pub last: bool,
}

impl Group {
    /// Steps in the group.
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Step `s`'s A values, PE row by PE row (R x L).
    pub fn step_a(&self, s: usize) -> &[i64] {
        let (r, _, l) = self.dims;
        &self.a[s * r * l..(s + 1) * r * l]
    }
    /// Step `s`'s B values, PE column by PE column (C x L).
    pub fn step_b(&self, s: usize) -> &[i64] {
        let (_, c, l) = self.dims;
        &self.b[s * c * l..(s + 1) * c * l]
    }
    /// Step `s` as a [`Step`].
    pub fn step(&self, s: usize) -> Step {
        let l = self.dims.2;
        Step { a: self.step_a(s).chunks(l).map(<[i64]>::to_vec).collect(), b: self.step_b(s).chunks(l).map(<[i64]>::to_vec).collect() }
    }
    /// Every step as a [`Step`].
    pub fn steps(&self) -> Vec<Step> {
        (0..self.n).map(|s| self.step(s)).collect()
    }
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
/// (Stimulus, shared with the RTL testbench.) All of [`os_tiles`] at once.
pub fn program(cfg: &SystolicParams, g: &Gemm) -> Vec<Tile> {
    os_tiles(cfg, g).collect()
}

/// The tiles of [`program`] in order, each built when it is asked for: a
/// run that plays them holds one at a time, not the whole program (which
/// holds every tile's slices of A and B).
pub fn os_tiles<'a>(cfg: &'a SystolicParams, g: &'a Gemm) -> impl Iterator<Item = Tile> + 'a {
    let (r, c) = (cfg.rows as usize, cfg.cols as usize);
    let (row_list, col_list) = row_col_lists(cfg, g);
    let (row_blocks, col_blocks) = (row_list.len().div_ceil(r), col_list.len().div_ceil(c));
    // Row-block-major: tile t is row block t / col_blocks, column block t % col_blocks.
    (0..row_blocks * col_blocks).map(move |t| {
        let (rb, cb) = (t / col_blocks, t % col_blocks);
        let rows = &row_list[rb * r..(rb * r + r).min(row_list.len())];
        let cols = &col_list[cb * c..(cb * c + c).min(col_list.len())];
        os_tile(cfg, g, rows, cols)
    })
}

/// One tile of the OS program: the R x C block of output rows `rb` and
/// columns `cb` (short blocks padded), its steps cut into groups.
fn os_tile(cfg: &SystolicParams, g: &Gemm, rb: &[usize], cb: &[usize]) -> Tile {
    let (r, c, l) = (cfg.rows as usize, cfg.cols as usize, cfg.lanes as usize);
    let k = g.b.len();
    let nsteps = k.div_ceil(l);
    let ngroups = nsteps.div_ceil(cfg.group as usize);
    let rows: Vec<Option<usize>> = (0..r).map(|i| rb.get(i).copied()).collect();
    let cols: Vec<Option<usize>> = (0..c).map(|j| cb.get(j).copied()).collect();
    let group = cfg.group as usize;
    let groups = (0..ngroups)
        .map(|gi| {
            let steps = gi * group..((gi + 1) * group).min(nsteps);
            let n = steps.len();
            let (mut a, mut b) = (Vec::with_capacity(n * r * l), Vec::with_capacity(n * c * l));
            for s in steps {
                for row in &rows {
                    a.extend((0..l).map(|ln| match row {
                        Some(mm) if s * l + ln < k => g.a[*mm][s * l + ln],
                        _ => 0,
                    }));
                }
                for col in &cols {
                    b.extend((0..l).map(|ln| match col {
                        Some(nn) if s * l + ln < k => g.b[s * l + ln][*nn],
                        _ => 0,
                    }));
                }
            }
            Group { n, dims: (r, c, l), a, b, last: gi + 1 == ngroups }
        })
        .collect();
    Tile { rows, cols, groups }
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
/// Zero is the element type's (`ElemType::is_zero`): for floating point
/// the +0 and -0 patterns.
fn row_col_lists(cfg: &SystolicParams, g: &Gemm) -> (Vec<usize>, Vec<usize>) {
    let m = g.a.len();
    let k = g.b.len();
    let n = g.b.first().map_or(0, |row| row.len());
    let (za, zb) = (cfg.a_type, cfg.b_type);
    let row_list = (0..m).filter(|&i| !cfg.rowcol_skip || g.a[i].iter().any(|&x| !za.is_zero(x))).collect();
    let col_list = (0..n).filter(|&j| !cfg.rowcol_skip || (0..k).any(|kk| !zb.is_zero(g.b[kk][j]))).collect();
    (row_list, col_list)
}

/// The WS sequencer of docs/systolic.md: tiles in order, and skipped_ksteps.
/// (Stimulus, shared with the RTL testbench.) All of [`ws_tiles`] at once.
///
/// For each column block (C columns of the column list, column-block-major):
/// its k-steps (all, or with `load_filter` those where some listed row has a
/// non-zero A value and some column of the block a non-zero B value among
/// the step's K indices; zero as `ElemType::is_zero`: +0 and -0 for
/// floating point) cut into blocks of R; one tile per k block: R
/// weight rows, then one A vector per listed row. No tiles when the row list
/// is empty. `skipped_ksteps` = sum over column blocks of
/// (ceil(K/L) - useful steps) with `load_filter`, else 0.
pub fn ws_program(cfg: &SystolicParams, g: &Gemm) -> (Vec<WsTile>, u64) {
    let (tiles, _, skipped) = ws_tiles(cfg, g);
    (tiles.collect(), skipped)
}

/// The tiles of [`ws_program`] in order, each built when it is asked for
/// (a run that plays them holds one at a time), with the number of tiles
/// and `skipped_ksteps`, which are known before any tile is built.
pub fn ws_tiles<'a>(cfg: &'a SystolicParams, g: &'a Gemm) -> (impl Iterator<Item = WsTile> + 'a, usize, u64) {
    let (r, c, l) = (cfg.rows as usize, cfg.cols as usize, cfg.lanes as usize);
    let k = g.b.len();
    let (row_list, col_list) = row_col_lists(cfg, g);
    let nsteps = k.div_ceil(l);
    let (za, zb) = (cfg.a_type, cfg.b_type);
    // The K indices of step s that exist.
    let kidx = |s: usize| s * l..(s * l + l).min(k);
    // With `load_filter`: whether some listed row has a non-zero A value in
    // step s (the same for every column block).
    let rows_nz: Vec<bool> = match cfg.load_filter {
        true => (0..nsteps).map(|s| row_list.iter().any(|&m| kidx(s).any(|kk| !za.is_zero(g.a[m][kk])))).collect(),
        false => Vec::new(),
    };
    // Per column block: its columns and its k-steps.
    let mut blocks: Vec<(Vec<Option<usize>>, Vec<usize>)> = Vec::new();
    let mut skipped = 0u64;
    for cb in col_list.chunks(c) {
        let cols: Vec<Option<usize>> = (0..c).map(|j| cb.get(j).copied()).collect();
        let steps: Vec<usize> = (0..nsteps)
            .filter(|&s| !cfg.load_filter || (rows_nz[s] && cb.iter().any(|&n| kidx(s).any(|kk| !zb.is_zero(g.b[kk][n])))))
            .collect();
        if cfg.load_filter {
            skipped += (nsteps - steps.len()) as u64;
        }
        blocks.push((cols, steps));
    }
    // The tiles: (column block, first step of its k block), none when the
    // row list is empty.
    let tiles: Vec<(usize, usize)> = if row_list.is_empty() {
        Vec::new()
    } else {
        blocks.iter().enumerate().flat_map(|(bi, (_, steps))| (0..steps.len()).step_by(r).map(move |k0| (bi, k0))).collect()
    };
    let count = tiles.len();
    let iter = tiles.into_iter().map(move |(bi, k0)| {
        let (cols, steps) = &blocks[bi];
        ws_tile(cfg, g, &row_list, cols, &steps[k0..(k0 + r).min(steps.len())])
    });
    (iter, count, skipped)
}

/// One WS tile: the block of columns `cols` (padded to C) and the k-steps
/// `kb` (at most R, padded to R).
fn ws_tile(cfg: &SystolicParams, g: &Gemm, row_list: &[usize], cols: &[Option<usize>], kb: &[usize]) -> WsTile {
    let (r, l) = (cfg.rows as usize, cfg.lanes as usize);
    let k = g.b.len();
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
            a: ksteps.iter().map(|&s| (0..l).map(|ln| at(s, ln).map_or(0, |kk| g.a[m][kk])).collect()).collect(),
            last: vi + 1 == row_list.len(),
        })
        .collect();
    WsTile { cols: cols.to_vec(), ksteps, weights, vectors }
}
