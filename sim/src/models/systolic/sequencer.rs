//! The tile sequencers of docs/systolic.md: how a GEMM becomes the step
//! program of the output-stationary grid, or the weight rows and A vectors
//! of the weight-stationary grid. (Stimulus, shared with the RTL testbench.)

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
pub fn program(cfg: &SystolicParams, g: &Gemm) -> Vec<Tile> {
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
            let mut steps = steps.into_iter();
            let groups = (0..ngroups)
                .map(|gi| Group { steps: steps.by_ref().take(cfg.group as usize).collect(), last: gi + 1 == ngroups })
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
fn row_col_lists(cfg: &SystolicParams, g: &Gemm) -> (Vec<usize>, Vec<usize>) {
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
pub fn ws_program(cfg: &SystolicParams, g: &Gemm) -> (Vec<WsTile>, u64) {
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

