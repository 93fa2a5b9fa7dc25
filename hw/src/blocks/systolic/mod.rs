//! Systolic PE grid with zero skipping (seed `004_2358758020164c9d.txt`
//! §318-343, §366-370).
//!
//! Output-stationary (§331-332): PE(i,j) accumulates one element of the
//! output tile; A values move right, B values move down, one hop per cycle.
//! Each PE adds a dot product of `lanes` element pairs per cycle (§326).
//! Zero skipping (§333-343):
//! 1. PE gating: a lane with a zero operand does not multiply, and the
//!    accumulator holds when every lane is gated;
//! 2. load filter: the loader holds `group` k-steps and issues the next
//!    useful one (A and B slices both non-zero) every cycle, skipping any
//!    number of zero steps in the same cycle (§339);
//! 3. row/column skip lives in the tile sequencer (docs/systolic.md).
//!
//! A tile's result moves to a result register when its last step passes,
//! so the next tile computes while rows drain. Weight-stationary
//! (`dataflow = ws`) is the second dataflow. Behaviour and timing:
//! `docs/systolic.md`.
//!
//! Files: `os.rs` and `ws.rs` (the two grids), `pe.rs` (the PEs and their
//! dot products), `mul.rs` (the multiplier module and its ECP5 body),
//! `fp.rs` (the floating-point product and add of the fp grid); here,
//! what both grids share.

mod fp;
mod mul;
mod os;
mod pe;
mod ws;

use crate::rtl::{split_counter, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::systolic::{Dataflow, SystolicParams, STAT_BITS};

/// Name of the top module.
pub const TOP: &str = "gpurtl_systolic";

pub fn build(p: &SystolicParams) -> Result<Design, RtlError> {
    match p.dataflow {
        Dataflow::Os => os::build(p),
        Dataflow::Ws => ws::build(p),
    }
}

/// A floating-point weight-stationary grid whose lane tree is summed left
/// to right, ((p0 + p1) + p2) + p3, against the spec's pairwise tree: a
/// planted bug for the cosimulation to catch (tests/systolic.rs), not a
/// design to use.
#[doc(hidden)]
pub fn build_planted_sequential_tree(p: &SystolicParams) -> Result<Design, RtlError> {
    ws::build_with(p, false)
}

/// The useful-MAC and gated-product counters, from the issued item's useful
/// MAC count (`useful`, `macs_bits` wide, valid when `valid`). Each stage is
/// registered: the count, then the useful counter and the gated increment
/// (all lanes minus the useful ones), then the gated counter; and each
/// counter's upper half follows a cycle after its lower half (see
/// [`stat_counter`]). So the useful counter is final three cycles after
/// `valid`, the gated counter four.
pub(super) fn mac_counters(b: &mut ModuleBuilder, p: &SystolicParams, useful: &Expr, valid: &Expr, useful_port: &Expr, gated_port: &Expr) {
    let useful_now = b.pipe("useful_now_q", useful, &Expr::bit(true));
    let v2 = b.reg("stat_valid2_q", 1, 0);
    b.next(&v2, valid, None);
    let st_useful = stat_counter(b, "useful_count", &useful_now, &v2);
    b.assign(useful_port, &st_useful);
    if p.gating {
        let all = Expr::lit(p.macs_bits(), (p.rows * p.cols * p.lanes) as u64);
        let gated_now = b.pipe("gated_now_q", &all.sub(&useful_now), &Expr::bit(true));
        let v3 = b.reg("stat_valid3_q", 1, 0);
        b.next(&v3, &v2, None);
        let st_gated = stat_counter(b, "gated_count", &gated_now, &v3);
        b.assign(gated_port, &st_gated);
    } else {
        b.assign(gated_port, &Expr::zero(STAT_BITS));
    }
}

/// A `STAT_BITS` statistics counter in two halves with a registered carry
/// ([`split_counter`]): exact one cycle after the last add.
pub fn stat_counter(b: &mut ModuleBuilder, name: &str, inc: &Expr, en: &Expr) -> Expr {
    split_counter(b, name, STAT_BITS, inc, en)
}


/// The top module's builder with its first two doc lines: what the block is,
/// and the grid (`dataflow` PEs, lanes, types, then `tail`).
pub(super) fn grid_builder(p: &SystolicParams, dataflow: &str, tail: &str) -> ModuleBuilder {
    let mut b = ModuleBuilder::new(TOP);
    b.doc("Systolic PE grid with zero skipping (gpurtl block `systolic`; seed 004 §318-343).");
    b.doc(format!(
        "{} x {} {dataflow} PEs, {} lane(s), {} x {}, {tail}.",
        p.rows,
        p.cols,
        p.lanes,
        p.a_type.name(),
        p.b_type.name()
    ));
    b
}

