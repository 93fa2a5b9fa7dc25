//! Valid/ready pipeline control shared by the blocks.
//!
//! `stages` registers between input and output, one transfer per cycle at
//! steady state. A stage loads when it is empty or when its content moves on
//! in the same cycle, so a stall at the output freezes only the stages that
//! are full (bubbles are squeezed out). The ready path is combinational from
//! `out_ready` to `in_ready`, one OR gate per stage.

use super::{Expr, ModuleBuilder};

pub struct PipeCtl {
    /// Accept an input this cycle (drive `in_ready_o`).
    pub in_ready: Expr,
    /// Load enable of each stage's data registers, stage 1 first.
    pub load: Vec<Expr>,
    /// Valid of the last stage (drive `out_valid_o`).
    pub out_valid: Expr,
}

pub fn valid_ready(b: &mut ModuleBuilder, stages: usize, in_valid: &Expr, out_ready: &Expr) -> PipeCtl {
    let valid: Vec<Expr> = (1..=stages).map(|r| b.reg(&format!("valid_p{r}_q"), 1, 0)).collect();
    let mut load = vec![Expr::bit(false); stages];
    let mut downstream = out_ready.clone();
    for r in (0..stages).rev() {
        load[r] = b.let_(&format!("load_p{}", r + 1), &valid[r].not().or(&downstream));
        downstream = load[r].clone();
    }
    for r in 0..stages {
        let prev = if r == 0 { in_valid.clone() } else { valid[r - 1].clone() };
        b.next(&valid[r], &prev, Some(&load[r]));
    }
    PipeCtl { in_ready: load[0].clone(), out_valid: valid[stages - 1].clone(), load }
}
