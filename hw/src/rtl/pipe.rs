//! Valid/ready pipelines shared by the blocks.
//!
//! A credit pipeline: the `stages` registers advance every cycle, so they
//! need no load enables and no ready signal runs back through them; results
//! that the consumer cannot take yet wait in a bypass FIFO of `stages + 1`
//! entries. The input is ready while fewer than `stages + 1` items are in the
//! pipeline and the FIFO together, a registered compare, so `out_ready` never
//! reaches `in_ready` combinationally. Without back-pressure the FIFO is
//! bypassed: latency is `stages`, one transfer per cycle.
//!
//! Use: `credit_begin`, register the datapath between stages with
//! [`CreditCtl::load`] (always on), then `credit_end` with the last stage's
//! fields.

use super::{bits_for, clog2, select, Expr, ModuleBuilder};

pub struct CreditCtl {
    /// Drive `in_ready_o`.
    pub in_ready: Expr,
    /// An input transfer this cycle.
    pub accept: Expr,
    /// Valid of each stage register, stage 1 first.
    pub valid: Vec<Expr>,
    /// Load enable of the stage registers: always on.
    pub load: Expr,
    stages: usize,
    occupancy: Expr,
}

pub fn credit_begin(b: &mut ModuleBuilder, stages: usize, in_valid: &Expr) -> CreditCtl {
    let depth = stages as u64 + 1;
    let occupancy = b.reg("occupancy_q", bits_for(depth), 0);
    let in_ready = b.let_("credit", &occupancy.lt(&Expr::lit(occupancy.width(), depth)));
    let accept = b.let_("accept", &in_valid.and(&in_ready));
    let mut valid = Vec::new();
    let mut prev = accept.clone();
    for r in 1..=stages {
        let v = b.reg(&format!("valid_p{r}_q"), 1, 0);
        b.next(&v, &prev, None);
        prev = v.clone();
        valid.push(v);
    }
    CreditCtl { in_ready, accept, valid, load: Expr::bit(true), stages, occupancy }
}

/// The output side: `fields` are the last stage's registers. Returns
/// (out_valid, the fields as seen at the output).
pub fn credit_end(b: &mut ModuleBuilder, ctl: &CreditCtl, fields: &[(&str, Expr)], out_ready: &Expr) -> (Expr, Vec<Expr>) {
    let depth = ctl.stages as u64 + 1;
    let pw = clog2(depth).max(1);
    let last_valid = ctl.valid[ctl.stages - 1].clone();
    let count = b.reg("fifo_count_q", bits_for(depth), 0);
    let rd = b.reg("fifo_rd_q", pw, 0);
    let wr = b.reg("fifo_wr_q", pw, 0);
    let empty = b.let_("fifo_empty", &count.eq_lit(0));
    let out_valid = b.let_("out_valid", &empty.not().or(&last_valid));
    let fire = b.let_("out_fire", &out_valid.and(out_ready));
    let push = b.let_("fifo_push", &last_valid.and(&empty.and(out_ready).not()));
    let pop = b.let_("fifo_pop", &fire.and(&empty.not()));
    let mut outs = Vec::new();
    for (name, e) in fields {
        let entries: Vec<Expr> = (0..depth)
            .map(|i| b.pipe(&format!("fifo{i}_{name}_q"), e, &push.and(&wr.eq_lit(i))))
            .collect();
        outs.push(empty.mux(e, &select(&rd, &entries)));
    }
    let wrap = |p: &Expr| p.eq_lit(depth - 1).mux(&Expr::zero(pw), &p.add(&Expr::lit(pw, 1)));
    b.next(&wr, &wrap(&wr), Some(&push));
    b.next(&rd, &wrap(&rd), Some(&pop));
    let cw = count.width();
    let one = Expr::lit(cw, 1);
    b.next(&count, &push.mux(&pop.mux(&count, &count.add(&one)), &pop.mux(&count.sub(&one), &count)), None);
    let ow = ctl.occupancy.width();
    let occ_in = ctl.accept.zext(ow);
    let occ_out = fire.zext(ow);
    b.next(&ctl.occupancy, &ctl.occupancy.add(&occ_in).sub(&occ_out), None);
    (out_valid, outs)
}
