//! The weight-stationary grid: shadow/active weights per PE, A vectors
//! moving right, partial sums moving down, deskew and a credit FIFO on the
//! output (docs/systolic.md, "Weight-stationary").

use super::mul::dsp_mul;
use super::fp::nonzero;
use super::pe::{pe_ws, pe_ws_fp};
use super::{grid_builder, mac_counters};
use crate::rtl::pipe::{credit_begin, credit_begin_registered, credit_end, credit_end_ram};
use crate::rtl::{bits_for, popcount, sum_tree, Expr, RtlError};
use crate::Design;
use gpurtl_params::systolic::{SystolicParams, STAT_BITS};

/// The weight-stationary grid (docs/systolic.md, "Weight-stationary").
pub(super) fn build(p: &SystolicParams) -> Result<Design, RtlError> {
    build_with(p, true)
}

/// [`build`], with the floating-point lane tree pairwise (the spec's) or,
/// for the planted-bug test only, summed left to right.
pub(super) fn build_with(p: &SystolicParams, pairwise: bool) -> Result<Design, RtlError> {
    let (r, c, l) = (p.rows, p.cols, p.lanes);
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let (slot, ch) = (p.slot_bits(), p.channel_bits);
    let row_w = l * ab;
    let mul = dsp_mul(p)?;
    let fp = p.float();
    let pe_mod = if fp { pe_ws_fp(p, mul.as_ref(), pairwise)? } else { pe_ws(p, mul.as_ref())? };
    let sums = if fp { "binary32 partial sums".to_string() } else { format!("{acc_w}-bit partial sums") };
    let mut b = grid_builder(p, "weight-stationary", &sums);
    b.doc(format!(
        "PE gating {}. A tile is {r} weight rows, then A vectors; one output row per vector. Behaviour and timing: docs/systolic.md.",
        if p.gating { "on" } else { "off" }
    ));
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let w_valid = b.input("w_valid_i", 1, "a weight row is offered");
    let w_ready = b.output("w_ready_o", 1, "the weight row is taken");
    let w_in = b.input("w_i", c * ch, "weights of the next PE row: column j at channel j; lane slots of channel_bits/lanes");
    let a_valid = b.input("a_valid_i", 1, "an A vector is offered");
    let a_ready = b.output("a_ready_o", 1, "the A vector is taken");
    let a_in = b.input("a_i", r * ch, "A vector: PE row i at channel i; lane slots of channel_bits/lanes");
    let a_last = b.input("a_last_i", 1, "the vector ends the tile");
    // Floating point: the running sums enter with the vector, at the top of
    // the columns (docs/systolic.md, "The floating-point grid").
    let a_c0 = fp.then(|| b.input("a_c0_i", c * 32, "running sums of the vector's output row (binary32), column j at j*32"));
    let out_valid = b.output("out_valid_o", 1, "a result row is offered");
    let out_ready = b.input("out_ready_i", 1, "the row is taken");
    let out_last = b.output("out_last_o", 1, "the row is the tile's last");
    let out_c = if fp {
        b.output("out_c_o", c * 32, "the row's sums (binary32), column j at j*32")
    } else {
        b.output("out_c_o", c * acc_w, "the row's sums plus out_c0_i, column j at j*acc_bits")
    };
    let out_c0 = (!fp).then(|| b.input("out_c0_i", c * acc_w, "accumulator values for the offered row (C0 or earlier K blocks)"));
    let stats = p.stats.then(|| {
        (
            b.output("stat_useful_o", STAT_BITS, "useful multiply-accumulates since reset"),
            b.output("stat_gated_o", STAT_BITS, "gated products since reset"),
        )
    });
    if slot > ab.max(bb) || slot > ab.min(bb) {
        b.waive_unused(&a_in, "slot bits above the element type are not used");
        b.waive_unused(&w_in, "slot bits above the element type are not used");
    }
    let lanes_of = |x: &Expr, n: u32, eb: u32| -> Vec<Expr> {
        (0..n)
            .map(|i| Expr::cat_lanes(&(0..l).map(|ln| x.part(i * ch + ln * slot, eb)).collect::<Vec<_>>()))
            .collect()
    };
    let w_cols = lanes_of(&w_in, c, bb);
    let a_rows = Expr::cat_lanes(&lanes_of(&a_in, r, ab));

    // ---- weights: shadow rows written in order, R + C - 1 cycles apart from a switch ----
    let wcnt = b.reg("w_count_q", bits_for(r as u64), 0);
    // The cycles until the last PE has switched to the shadow weights after a
    // tile's first vector: (R - 1)·H + C (H the partial sum's hop).
    let h = p.hop();
    let wblock_init = (r - 1) * h + c;
    let wblock = b.reg("w_block_q", bits_for(wblock_init as u64), 0);
    // Floating point (a large grid, its control spread wide): "the shadow
    // rows are full" and the weight port's readiness are registers of their
    // own, their next values worked out a cycle ahead (the same values).
    let regs_ahead = fp.then(|| (b.reg("shadow_full_q", 1, 0), b.reg("w_ready_q", 1, 1)));
    match &regs_ahead {
        Some((_, ready_q)) => b.assign(&w_ready, ready_q),
        None => b.assign(&w_ready, &wcnt.lt(&Expr::lit(wcnt.width(), r as u64)).and(&wblock.eq_lit(0))),
    }
    let w_fire = b.let_("w_fire", &w_valid.and(&w_ready));
    let w_load: Vec<Expr> =
        (0..r).map(|i| b.let_(&format!("w_load_row{i}"), &w_fire.and(&wcnt.eq_lit(i as u64)))).collect();
    let shadow_full = match &regs_ahead {
        Some((full_q, _)) => full_q.clone(),
        None => b.let_("shadow_full", &wcnt.eq_lit(r as u64)),
    };

    // ---- A input register and issue (a credit pipeline to the output FIFO) ----
    // The held vector (one register; floating point: the head of two).
    let aq_valid = if fp { b.wire("a_head_valid", 1) } else { b.reg("a_valid_q", 1, 0) };
    let open = b.reg("tile_open_q", 1, 0);
    let stages = (r * h + c + p.depth()) as usize;
    let want = b.let_("issue_want", &aq_valid.and(&open.or(&shadow_full)));
    // Floating point (its grids are large, the issue's fan-out wide): the
    // credit a register of its own, so the issue is a few gates from registers.
    let ctl = if fp { credit_begin_registered(&mut b, stages, &want) } else { credit_begin(&mut b, stages, &want) };
    let issue = b.let_("issue", &ctl.accept);
    let switch = b.let_("issue_switch", &issue.and(&open.not()));
    let (aq_a, aq_last, aq_c0) = if fp {
        // Floating point: two input registers, the port ready while one is
        // free (a register's decision: the issue is not behind a_ready_o,
        // nor the input registers' enables). The head issues; the vectors
        // issue in the same cycles as through one register.
        // How many are held, as two registers: one or more (the head is
        // valid), two (the port is not ready).
        let (held1, held2) = (b.reg("a_held1_q", 1, 0), b.reg("a_held2_q", 1, 0));
        let head = b.reg("a_head_q", 1, 0);
        let wr = b.reg("a_wr_q", 1, 0);
        b.assign(&a_ready, &held2.not());
        let a_fire = b.let_("a_fire", &a_valid.and(&a_ready));
        let c0 = a_c0.clone().expect("a floating-point grid has a_c0_i");
        b.next(&held1, &a_fire.or(&held2).or(&held1.and(&issue.not())), None);
        let held2_next = b.let_("a_held2_next", &issue.not().and(&held2.or(&held1.and(&a_fire))));
        b.next(&held2, &held2_next, None);
        let wr_next = b.let_("a_wr_next", &a_fire.mux(&wr.not(), &wr));
        let mut slots = Vec::new();
        for k in 0..2u64 {
            // The slot the next vector goes to, while there is room, loads
            // the port every cycle (what it takes without a transfer is
            // never used): its wide enable is this register, not the
            // transfer.
            let we = b.reg(&format!("a_slot{k}_open_q"), 1, if k == 0 { 1 } else { 0 });
            b.next(&we, &wr_next.eq_lit(k).and(&held2_next.not()), None);
            b.assert_always(
                &format!("a_slot{k}_open"),
                &we.eq(&wr.eq_lit(k).and(&held2.not())),
                "input buffer: a slot loads the port exactly while it is the next one written and there is room",
            );
            slots.push((
                b.pipe(&format!("a_slot{k}_a_q"), &a_rows, &we),
                b.pipe(&format!("a_slot{k}_last_q"), &a_last, &we),
                b.pipe(&format!("a_slot{k}_c0_q"), &c0, &we),
            ));
        }
        b.next(&wr, &wr_next, None);
        b.next(&head, &head.not(), Some(&issue));
        b.assign(&aq_valid, &held1);
        let pick = |x: &Expr, y: &Expr| head.mux(y, x);
        (
            b.let_("a_head_a", &pick(&slots[0].0, &slots[1].0)),
            b.let_("a_head_last", &pick(&slots[0].1, &slots[1].1)),
            Some(b.let_("a_head_c0", &pick(&slots[0].2, &slots[1].2))),
        )
    } else {
        b.assign(&a_ready, &aq_valid.not().or(&issue));
        let a_fire = b.let_("a_fire", &a_valid.and(&a_ready));
        let aq_a = b.pipe("a_q", &a_rows, &a_fire);
        let aq_last = b.pipe("a_last_q", &a_last, &a_fire);
        b.next(&aq_valid, &a_fire.or(&aq_valid.and(&issue.not())), None);
        (aq_a, aq_last, None)
    };
    b.next(&open, &aq_last.not(), Some(&issue));
    let one = Expr::lit(wcnt.width(), 1);
    b.next(&wcnt, &switch.mux(&Expr::zero(wcnt.width()), &wcnt.add(&one)), Some(&switch.or(&w_fire)));
    let bw = wblock.width();
    b.next(
        &wblock,
        &switch.mux(&Expr::lit(bw, wblock_init as u64), &wblock.sub(&Expr::lit(bw, 1))),
        Some(&switch.or(&wblock.eq_lit(0).not())),
    );
    if let Some((full_q, ready_q)) = &regs_ahead {
        // After a switch the count is 0 and the block counter restarts;
        // otherwise the rows fill with transfers and the counter counts down.
        let full_next =
            b.let_("shadow_full_next", &switch.not().and(&full_q.or(&w_fire.and(&wcnt.eq_lit(r as u64 - 1)))));
        b.next(full_q, &full_next, None);
        // (The block counter at most 1: its bits above the lowest clear.)
        let at_most_1 = if bw == 1 { Expr::bit(true) } else { wblock.part(1, bw - 1).eq_lit(0) };
        let block_done_next = switch.not().and(&at_most_1);
        b.next(ready_q, &full_next.not().and(&block_done_next), None);
        b.assert_always(
            "ws_regs_ahead",
            &full_q.eq(&wcnt.eq_lit(r as u64)).and(&ready_q.eq(&wcnt.lt(&Expr::lit(wcnt.width(), r as u64)).and(&wblock.eq_lit(0)))),
            "weight side: the registered shadow-full and ready flags are the count's and the block counter's",
        );
    }

    // The issue register: the issued vector, zero when none issues.
    let iss_a = b.pipe("issue_a_q", &issue.repl(r * row_w).and(&aq_a), &Expr::bit(true));
    if let Some((stat_useful, stat_gated)) = &stats {
        // ---- counters: non-zero weights per (PE row, lane), shadow and active ----
        let cw = bits_for(c as u64);
        let mut terms = Vec::new();
        for i in 0..r {
            for lane in 0..l {
                let nzw: Vec<Expr> = (0..c).map(|j| nonzero(&w_cols[j as usize].part(lane * bb, bb), p.b_type)).collect();
                let sh = b.pipe(&format!("nzw_shadow_r{i}_l{lane}_q"), &popcount(&nzw, cw), &w_load[i as usize]);
                let act = b.pipe(&format!("nzw_active_r{i}_l{lane}_q"), &sh, &switch);
                // Counted from registers only, a cycle after the issue: the
                // issue register holds the issued vector (zero otherwise),
                // and the active count is then the issue's weights' (a
                // switch copied the shadow count at the issue).
                let nza = nonzero(&iss_a.part(i * row_w + lane * ab, ab), p.a_type);
                terms.push(b.pipe(&format!("useful_r{i}_l{lane}_q"), &act.and(&nza.repl(cw)), &Expr::bit(true)));
            }
        }
        let stat_v1 = b.reg("stat_valid1_q", 1, 0);
        b.next(&stat_v1, &issue, None);
        let stat_v1b = b.reg("stat_valid1b_q", 1, 0);
        b.next(&stat_v1b, &stat_v1, None);
        let useful_sum = b.let_("useful_sum", &sum_tree(&terms, p.macs_bits()));
        mac_counters(&mut b, p, &useful_sum, &stat_v1b, stat_useful, stat_gated);
    }

    // ---- issue register and skew: row i delayed i·H ----
    let iss_sw = b.reg("issue_switch_q", 1, 0);
    b.next(&iss_sw, &switch, None);
    let mut west = Vec::new();
    for i in 0..r {
        let (mut a, mut sw) = (iss_a.part(i * row_w, row_w), iss_sw.clone());
        for d in 0..i * h {
            a = b.pipe(&format!("skew_a{i}_{d}_q"), &a, &Expr::bit(true));
            let q = b.reg(&format!("skew_sw{i}_{d}_q"), 1, 0);
            b.next(&q, &sw, None);
            sw = q;
        }
        west.push((a, sw));
    }

    // ---- the partial sums entering at the top: zero, or (floating point)
    // the running sums, column j delayed j + depth after the issue register ----
    let mut north: Vec<Expr> = match &aq_c0 {
        None => (0..c).map(|_| Expr::zero(acc_w)).collect(),
        Some(c0) => {
            let iss_c0 = b.pipe("issue_c0_q", c0, &Expr::bit(true));
            (0..c)
                .map(|j| {
                    let mut v = iss_c0.part(j * 32, 32);
                    for d in 0..(j + p.depth()) {
                        v = b.pipe(&format!("top_c{j}_{d}_q"), &v, &Expr::bit(true));
                    }
                    v
                })
                .collect()
        }
    };

    // ---- the grid ----
    for i in 0..r {
        let (mut a, mut sw) = west[i as usize].clone();
        for j in 0..c {
            let n = format!("pe_{i}_{j}");
            let (a_o, sw_o, ps_o) =
                (b.wire(&format!("{n}_a"), row_w), b.wire(&format!("{n}_sw"), 1), b.wire(&format!("{n}_psum"), acc_w));
            b.instance(
                &pe_mod,
                &format!("u_{n}"),
                &[
                    ("clk_i", clk.clone()),
                    ("rst_i", rst.clone()),
                    ("a_i", a.clone()),
                    ("sw_i", sw.clone()),
                    ("w_i", w_cols[j as usize].clone()),
                    ("w_load_i", w_load[i as usize].clone()),
                    ("psum_i", north[j as usize].clone()),
                    ("a_o", a_o.clone()),
                    ("sw_o", sw_o.clone()),
                    ("psum_o", ps_o.clone()),
                ],
            );
            if j + 1 == c {
                for w in [&a_o, &sw_o] {
                    b.waive_unused(w, "leaves the grid at the east edge");
                }
            }
            (a, sw) = (a_o, sw_o);
            north[j as usize] = ps_o;
        }
    }

    // ---- deskew (column j delayed C-1-j), the tile's last flag, output FIFO ----
    let mut row = Vec::new();
    for j in 0..c {
        let mut v = north[j as usize].clone();
        for d in 0..(c - 1 - j) {
            v = b.pipe(&format!("deskew_c{j}_{d}_q"), &v, &Expr::bit(true));
        }
        row.push(v);
    }
    let mut last = issue.and(&aq_last);
    for d in 0..stages {
        last = b.pipe(&format!("last_d{d}_q"), &last, &Expr::bit(true));
    }
    // The output FIFO: floating point (R·H + C + D + 1 rows of C binary32
    // sums) in block RAM, the integer grid's in flip-flops.
    let fields = [("c", Expr::cat_lanes(&row)), ("last", last)];
    let (valid, outs) =
        if fp { credit_end_ram(&mut b, &ctl, &fields, &out_ready) } else { credit_end(&mut b, &ctl, &fields, &out_ready) };
    match &out_c0 {
        Some(out_c0) => {
            let sums: Vec<Expr> =
                (0..c).map(|j| outs[0].part(j * acc_w, acc_w).add(&out_c0.part(j * acc_w, acc_w))).collect();
            b.assign(&out_c, &Expr::cat_lanes(&sums));
        }
        None => b.assign(&out_c, &outs[0]),
    }
    b.assign(&out_last, &outs[1]);
    b.assign(&out_valid, &valid);
    let top = b.finish()?;
    Ok(Design::of(top, p))
}

