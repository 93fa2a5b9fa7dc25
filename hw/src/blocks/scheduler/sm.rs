//! One SM's entry of the available-resource table: its free threads,
//! registers, shared memory and block slots, the fit of every stream head
//! and of the dispatcher's kernel against them, and their update by this
//! cycle's dispatch and completions.

use super::{scaled, Widths};
use crate::rtl::{Expr, Module, ModuleBuilder, RtlError};
use gpurtl_params::scheduler::{SchedulerParams, SCORE_BITS};

/// The need of one block: threads, registers, shared memory (packed in
/// that order from the low bits).
pub(super) struct Need {
    pub thr: Expr,
    pub reg: Expr,
    pub mem: Expr,
}

impl Need {
    pub fn unpack(x: &Expr, w: &Widths) -> Need {
        Need { thr: x.part(0, w.thr), reg: x.part(w.thr, w.reg), mem: x.part(w.thr + w.reg, w.mem) }
    }
}

/// `need <= free` for every resource, and a free slot.
fn fits(need: &Need, free: &[Expr; 4]) -> Expr {
    need.thr.le(&free[0]).and(&need.reg.le(&free[1])).and(&need.mem.le(&free[2])).and(&free[3].any())
}

pub(super) const NAME: &str = "gpurtl_scheduler_sm";

/// `leftover`: also give, per stream head, the best-fit score on this SM
/// (`left_o`).
pub(super) fn build(p: &SchedulerParams, w: &Widths, leftover: bool) -> Result<Module, RtlError> {
    let (s, lanes) = (p.streams, p.dispatch_width);
    let mut b = ModuleBuilder::new(NAME);
    b.doc("One SM's entry of gpurtl_scheduler's available-resource table (seed 003 claim 1).");
    b.doc("Free resources; the fit of each stream head and of the dispatched kernel (the comparator's column).");
    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let heads = b.input("heads_i", s * w.need, "each stream head's per-block need, stream k at k*need bits");
    let cur = b.input("cur_i", w.need, "the dispatcher's kernel's per-block need");
    let take = b.input("take_i", 1, "a block of the dispatcher's kernel starts here this cycle");
    let ret_v = b.input("ret_valid_i", lanes, "completion lane k returns a block of this SM");
    let ret = b.input("ret_need_i", lanes * w.need, "completion lane k's block need");
    let fits_o = b.output("fits_o", s, "bit k: a block of stream k's head fits here now");
    let fit_cur = b.output("fit_cur_o", 1, "a block of the dispatcher's kernel fits here now");
    let free_o = b.output("free_o", w.free, "free threads, registers, shared memory, slots (from the low bits)");

    let free: [Expr; 4] = [
        b.reg("free_thr_q", w.thr, p.sm_threads as u64),
        b.reg("free_reg_q", w.reg, p.sm_regs as u64),
        b.reg("free_mem_q", w.mem, p.sm_smem as u64),
        b.reg("free_slot_q", w.slot, p.sm_slots as u64),
    ];
    let each: Vec<Expr> = (0..s).map(|k| fits(&Need::unpack(&heads.part(k * w.need, w.need), w), &free)).collect();
    b.assign(&fits_o, &Expr::cat_lanes(&each));
    if leftover {
        let left_o = b.output("left_o", s * SCORE_BITS, "bits k*10..: the best-fit score of stream k's head here (meaningful where it fits)");
        let sh = SchedulerParams::score_shift;
        let lefts: Vec<Expr> = (0..s)
            .map(|k| {
                let n = Need::unpack(&heads.part(k * w.need, w.need), w);
                scaled(&free[0].sub(&n.thr), sh(p.sm_threads))
                    .add(&scaled(&free[1].sub(&n.reg), sh(p.sm_regs)))
                    .add(&scaled(&free[2].sub(&n.mem), sh(p.sm_smem)))
                    .add(&scaled(&free[3].sub(&Expr::lit(w.slot, 1)), sh(p.sm_slots)))
            })
            .collect();
        b.assign(&left_o, &Expr::cat_lanes(&lefts));
    }
    let cur = Need::unpack(&cur, w);
    b.assign(&fit_cur, &fits(&cur, &free));
    b.assign(&free_o, &Expr::cat_lanes(&free));

    // New value: start value, minus this cycle's dispatch, plus this cycle's
    // completions. Modular arithmetic at each width is exact: the result is
    // never above the capacity.
    let taken = |x: &Expr| take.repl(x.width()).and(x);
    let returned = |f: &dyn Fn(&Need) -> Expr, width: u32| -> Expr {
        let lane = |k: u32| ret_v.bit_at(k).repl(width).and(&f(&Need::unpack(&ret.part(k * w.need, w.need), w)));
        (1..lanes).fold(lane(0), |sum, k| sum.add(&lane(k)))
    };
    let next = [
        free[0].sub(&taken(&cur.thr)).add(&returned(&|n| n.thr.clone(), w.thr)),
        free[1].sub(&taken(&cur.reg)).add(&returned(&|n| n.reg.clone(), w.reg)),
        free[2].sub(&taken(&cur.mem)).add(&returned(&|n| n.mem.clone(), w.mem)),
        free[3].sub(&take.zext(w.slot)).add(&returned(&|_| Expr::lit(w.slot, 1), w.slot)),
    ];
    for (q, d) in free.iter().zip(&next) {
        b.next(q, d, None);
    }
    b.finish()
}
