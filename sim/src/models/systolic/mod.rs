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
//! tile ending at s: row r ready at s + r + C + 1 + D (D = depth, below);
//!              transferred at max(ready + 1, previous row transfer + 1)
//!              (the output register); all R rows go out
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
//!              wcnt = 0, wblock = (R - 1)·H + C; open = !last; in any
//!              other cycle wblock counts down while non-zero
//! activation port ready: register empty or its vector issues; held from
//!              the next cycle
//! vector issued at s: output row transferred at s + R·H + C + D (D =
//!              depth, H = hop); issue needs a credit: fewer than
//!              R·H + C + D + 1 vectors issued and not yet transferred
//! cycles = last transfer - first weight transfer (cycle 0), + 1; 0 no tile
//! ```
//!
//! D = `cfg.depth()` in both dataflows: `pipeline` for integers (so the
//! integer timing is the spec's with P), `pipeline + fp_stages +
//! ceil(log2 lanes)·H` for floating point (`fp_stages` registers inside
//! the products' rounding, and the lane tree's registered levels, each a
//! binary32 add). H = `cfg.hop()` = `fp_stages` + 1 ("The floating-point grid",
//! "Parameters" and "Timing"): the cycles of one binary32 add, so of a
//! partial sum's hop from one PE row to the next (PE row i sees a vector
//! H·i cycles after row 0). `fp_stages` is non-zero only for the
//! floating-point WS grid, so for integers and in `os` H = 1, and with
//! H = 1 the rules above are the integer WS cycle rules (wblock R + C - 1,
//! rows at s + R + C + D). Only the timing depends on `fp_stages`: C and
//! the counters do not.
//!
//! Floating point (`a_type`/`b_type` in bf16, fp16, fp8e4m3, fp8e5m2;
//! binary32 accumulation; both dataflows, each taking C0 where its sums
//! begin; docs/systolic.md "Floating point"): A and B
//! hold the elements' bit patterns, C0 and C binary32 patterns (as `i64`,
//! 0 .. 2^bits). C is the spec's definition straight from A and B, with the
//! arithmetic core of `fp.rs` (each operation canonical: no -0, one NaN):
//!
//! ```text
//! C[m][n] = ((start(C0[m][n]) + t_0) + t_1) + ... + t_last   (+ is ⊕)
//! start(c0) = c0 ⊕ +0 (+0 without C0)
//! t_k = lane tree of step k: products A[m][kL+l] ⊗ B[kL+l][n] (K indices
//!       >= K are +0), padded with +0 to a power of two, added pairwise
//! ```
//!
//! Every zero test (rowcol_skip's lists, the load filter, gating and the
//! counters, in both dataflows) is the element type's `ElemType::is_zero`:
//! +0 and -0 for floating point (a NaN, Inf or subnormal is non-zero).
//! A zero element's product is +0 and the accumulator is canonical, so
//! skipping never changes C. The WS cycle loop adds the driver's rule for
//! floating point (the running sums enter with the vector, `a_c0_i`):
//!
//! ```text
//! a vector of a column block's 2nd or later tile depends on the previous
//!              tile's output row for the same matrix row (the vector of the
//!              same index); it is offered only from the cycle after that
//!              row's transfer (otherwise back-to-back, as above)
//! ```
//!
//! Output-stationary floating point ("The output-stationary floating-point
//! grid"): the same sequencer, loader and counters as for integers, with
//! every zero test the type's and D in place of P (the [`Loader`] reads
//! `cfg.depth()`). Each PE's accumulator starts a tile at start(C0) of its
//! place (with `c0_add`: C0 enters with the tile's groups, `in_c0_i`) or at
//! +0 (without `c0_add`, where `parse_input` refuses `c0` and `c0_bits`),
//! and adds the lane tree of each step it is given; a gated lane's product
//! is +0, a skipped step's t is +0, the null step adds +0, and start(C0) is
//! canonical, so acc ⊕ +0 = acc: the tile gives ((start(C0) ⊕ t_0) ⊕ t_1)
//! ⊕ ... over all ceil(K/L) steps, the reference, whatever the skipping
//! parameters; a row or column left out by `rowcol_skip` is start(C0) (+0
//! without C0), which the reference gives too. So `run` takes C from the
//! reference, as for integers; C0 changes no cycle:
//!
//! ```text
//! C[m][n] = ((start(C0[m][n]) ⊕ t_0) ⊕ t_1) ⊕ ... ⊕ t_last   (start(no C0) = +0)
//! row r of a tile ending at s ready at s + r + C + 1 + D,
//!              D = pipeline + ceil(log2 lanes)   (fp_stages = 0: H = 1,
//!              no product registers)
//! ```

//!
//! Files: `reference.rs` (C by a naive loop), `sequencer.rs` (the tile
//! sequencers of both dataflows: the step programs), `timing.rs` (the cycle
//! loops of the loader and WS rules; [`Loader`], the loader stepped one
//! cycle at a time, which `run` plays with the groups back-to-back and the
//! compute unit's `mma` (docs/cu.md) with its groups as its tiles start),
//! `io.rs` (input and output files, pruning), `fp.rs` (the floating-point
//! arithmetic: products, adds, the lane tree, start); here, the types and
//! `run`.
//!
//! Cost: `run` is linear in the cycles and steps it plays (plus the
//! reference's M·N·K). The sequencer builds each tile when the cycle loop
//! reaches it and drops it once played, and the loop keeps only the latest
//! ended tile's in-flight window and a running last row transfer, so a
//! cycle costs the same however many tiles came before it.

pub mod fp;
mod io;
mod reference;
mod sequencer;
mod timing;
#[cfg(test)]
mod tests;

pub use io::{output_json, parse_input, program_size, prune, MAX_PROGRAM};
pub use sequencer::{os_tiles, program, ws_program, ws_tiles, Group, Step, Tile, WsTile, WsVector};

use gpurtl_params::systolic::{Dataflow, SystolicParams};
use reference::reference_c;
use timing::{simulate_groups, simulate_ws};
pub use timing::{Loader, TileEnd};

/// One GEMM: A is M x K, B is K x N, C0 (if given) is M x N.
///
/// Accumulator-range values (C0 here, C in [`Outcome`]) are held in an `i64`;
/// with an unsigned 64-bit accumulator a value >= 2^63 is held as its 64-bit
/// pattern (`value as i64`, i.e. value - 2^64).
///
/// For floating-point element types `a` and `b` hold each element's bit
/// pattern (0 .. 2^bits - 1) and `c0` binary32 patterns (0 .. 2^32 - 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub a: Vec<Vec<i64>>,
    pub b: Vec<Vec<i64>>,
    pub c0: Option<Vec<Vec<i64>>>,
}


/// The result of a run: C (for floating-point element types binary32
/// patterns, 0 .. 2^32 - 1, canonical), the cycles and the counters.
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
    pub fn utilization(&self, cfg: &SystolicParams) -> f64 {
        if self.cycles == 0 {
            return 0.0;
        }
        let slots = cfg.rows as f64 * cfg.cols as f64 * cfg.lanes as f64 * self.cycles as f64;
        self.useful_macs as f64 / slots
    }
}


/// C computed directly from the matrices (naive triple loop + C0, wrapped to
/// acc_bits; for floating point the spec's accumulation, start(C0) then
/// each k-step's lane tree in order); counters and cycles from the program
/// and the spec's cycle rules, with the output always ready and the inputs
/// offered back-to-back (for floating point, a later k block's vectors as
/// the driver's rule allows). `dataflow = "ws"` uses [`ws_program`] and the
/// WS cycle rules (C is the same: the K blocks accumulating through
/// `out_c0_i` give the same sum modulo 2^acc_bits, and the floating-point
/// running sums add the steps in the same order); anything else is `os`,
/// whose loader takes D = `cfg.depth()` for P (`pipeline + ceil(log2
/// lanes)` for floating point; a floating-point `os` grid's accumulators
/// start each tile at start(C0), or +0 without C0, so C is the reference,
/// and the cycles do not depend on C0).
pub fn run(cfg: &SystolicParams, g: &Gemm) -> Outcome {
    let c = reference_c(cfg, g);
    // The tiles are built as the cycle loops reach them, one at a time.
    if cfg.dataflow == Dataflow::Ws {
        let (tiles, n_tiles, skipped_ksteps) = ws_tiles(cfg, g);
        let (cycles, useful_macs, gated_products) = simulate_ws(cfg, n_tiles, tiles);
        return Outcome { c, cycles, useful_macs, gated_products, skipped_ksteps };
    }
    let (cycles, useful_macs, gated_products, skipped_ksteps) = simulate_groups(cfg, os_tiles(cfg, g).flat_map(|t| t.groups));
    Outcome { c, cycles, useful_macs, gated_products, skipped_ksteps }
}

