//! The output-stationary grid: two-bank loader with the load filter, skew,
//! PE array, result registers and the row drain (docs/systolic.md, "The
//! grid, cycle by cycle").

use super::mul::dsp_mul;
use super::fp::nonzero;
use super::pe::{pe, pe_os_fp};
use super::{grid_builder, mac_counters, stat_counter};
use crate::rtl::{bits_for, lowest_bit, popcount, select, select_onehot, sum_tree, Expr, RtlError};
use crate::Design;
use gpurtl_params::systolic::{ElemType, SystolicParams, STAT_BITS};

/// The output-stationary grid (docs/systolic.md, "The grid, cycle by cycle").
pub(super) fn build(p: &SystolicParams) -> Result<Design, RtlError> {
    let (r, c, l, g) = (p.rows, p.cols, p.lanes, p.group);
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let slot = p.slot_bits();
    let ch = p.channel_bits;
    let mul = dsp_mul(p)?;
    let fp = p.float();
    let pe_mod = if fp { pe_os_fp(p)? } else { pe(p, mul.as_ref())? };
    let accs = if fp { "binary32 accumulators".to_string() } else { format!("{acc_w}-bit accumulators") };
    let mut b = grid_builder(p, "output-stationary", &format!("{accs}; {g} k-steps per input transfer"));
    b.doc(format!(
        "PE gating {}, load filter {}. Behaviour and timing: docs/systolic.md.",
        if p.gating { "on" } else { "off" },
        if p.load_filter { "on" } else { "off" }
    ));
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    // Floating point with C0: the tile's C0 enters with its groups, since
    // each accumulator starts from it (docs/systolic.md, "The
    // output-stationary floating-point grid").
    let fp_c0 = fp && p.c0_add;
    let mut in_fields = vec![
        ("a", g * r * ch, "A: step s, PE row i at channel s*rows+i; lane slots of channel_bits/lanes"),
        ("b", g * c * ch, "B: step s, PE column j at channel s*cols+j"),
        ("steps", p.steps_bits(), "steps present in the group (1..group)"),
        ("last", 1, "the group ends the tile"),
    ];
    if fp_c0 {
        in_fields.push(("c0", r * c * 32, "C0 of the tile (binary32), PE(i,j) at (i*cols+j)*32; read with the tile's first group"));
    }
    let in_s = b.stream_in("in", "a group of k-steps is offered", "the group is taken", &in_fields);
    let in_idle = b.output("in_idle_o", 1, "the unit holds no group (input register and loader empty)");
    let (in_valid, in_ready) = (in_s.valid.clone(), in_s.ready.clone());
    let [in_a, in_b, in_steps, in_last] = in_s.get(["a", "b", "steps", "last"]);
    let out_s = b.stream_out(
        "out",
        "a result row is offered",
        "the row is taken",
        &[
            ("row", p.row_index_bits(), "row of the tile"),
            ("c", c * acc_w, if fp { "the row's results (binary32), column j at j*32" } else { "the row's results (plus out_c0_i), column j at j*acc_bits" }),
        ],
    );
    let (out_valid, out_ready) = (out_s.valid.clone(), out_s.ready.clone());
    let [out_row, out_c] = out_s.get(["row", "c"]);
    let out_c0 = (p.c0_add && !fp).then(|| b.input("out_c0_i", c * acc_w, "initial accumulator values for row out_row_o"));
    let stats = p.stats.then(|| {
        (
            b.output("stat_useful_o", STAT_BITS, "useful multiply-accumulates since reset"),
            b.output("stat_gated_o", STAT_BITS, "gated products since reset"),
            b.output("stat_skipped_o", STAT_BITS, "k-steps skipped by the load filter since reset"),
        )
    });
    if slot > ab.max(bb) || slot > ab.min(bb) {
        b.waive_unused(&in_a, "slot bits above the element type are not used");
        b.waive_unused(&in_b, "slot bits above the element type are not used");
    }

    // ---- input: elements out of their slots, useful flags ----
    let elems = |x: &Expr, n: u32, eb: u32| -> Vec<Vec<Expr>> {
        // [step][pe] -> lanes packed, lane 0 low
        (0..g)
            .map(|s| {
                (0..n)
                    .map(|i| {
                        let base = (s * n + i) * ch;
                        Expr::cat_lanes(&(0..l).map(|ln| x.part(base + ln * slot, eb)).collect::<Vec<_>>())
                    })
                    .collect()
            })
            .collect()
    };
    let a_in = elems(&in_a, r, ab);
    let b_in = elems(&in_b, c, bb);
    let accept = b.let_("accept", &in_valid.and(&in_ready));

    // ---- loader: two group banks, one issuing ----
    // Timing is the one-group loader of docs/systolic.md: the active bank
    // issues; when it is done the other bank takes over the next cycle, and an
    // empty non-last group costs its one cycle. The second bank only lets a
    // group be taken early, so `in_ready_o` is a register and no same-cycle
    // path runs from the issue logic to the group registers.
    let row_w = l * ab;
    let col_w = l * bb;
    let packed_a = Expr::cat_lanes(&a_in.iter().map(|v| Expr::cat_lanes(v)).collect::<Vec<_>>());
    let packed_b = Expr::cat_lanes(&b_in.iter().map(|v| Expr::cat_lanes(v)).collect::<Vec<_>>());
    let act = b.reg("active_bank_q", 1, 0);
    let wr = b.reg("write_bank_q", 1, 0);
    let inflight = b.reg("inflight_q", 2, 0);
    let full: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_full_q"), 1, 0)).collect();
    let rem: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_rem_q"), g, 0)).collect();
    // The lowest remaining step of each bank, one-hot, kept beside `rem` so
    // that the step select starts from a register.
    let low: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_low_q"), g, 0)).collect();
    // ... and the one after it, so the step after an issue is a register too.
    let low2: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_low2_q"), g, 0)).collect();
    let need: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_need_end_q"), 1, 0)).collect();
    let wr_full = select(&wr, &full);

    // Input register: the group lands here first; its useful flags and skip
    // count are worked out from registers, off the input pins' paths.
    let inq_valid = b.reg("in_valid_q", 1, 0);
    // in_ready_o = !in_valid_q | take, kept as a register of its own (worked
    // out from the next states). It is also the input register's load
    // enable: whenever the register may take a group it samples the pins,
    // and what it samples without an accept is never used. So the wide
    // enable comes straight from a flip-flop. (A LUT of the state flip-flops
    // would do too, but yosys then shares that high-fanout LUT with the
    // loader's logic and places it among the enables.)
    let in_ready_q = b.reg("in_ready_q", 1, 1);
    let inq_a = b.pipe("in_a_q", &packed_a, &in_ready_q);
    let inq_b = b.pipe("in_b_q", &packed_b, &in_ready_q);
    let inq_last = b.pipe("in_last_q", &in_last, &in_ready_q);
    // C0: sampled with a tile's first group and kept for the tile's later
    // groups, so each group carries its tile's C0 (a tile's first step may
    // come from any of its groups, the load filter skipping the others).
    // Its wide enable is a flip-flop, as the input register's is: ready and
    // expecting a first group, worked out from the next states.
    let inq_c0 = fp_c0.then(|| {
        let first = b.reg("in_first_q", 1, 1);
        let first_next = b.let_("in_first_next", &accept.mux(&in_last, &first));
        b.next(&first, &first_next, None);
        let load = b.reg("in_c0_load_q", 1, 1);
        (load, first_next)
    });
    let take = b.let_("take", &inq_valid.and(&wr_full.not()));
    b.assign(&in_ready, &in_ready_q);
    let inq_valid_next = b.let_("in_valid_next", &accept.or(&inq_valid.and(&take.not())));
    b.next(&inq_valid, &inq_valid_next, None);
    // Idle: nothing in the input register or either bank (registers only).
    b.assign(&in_idle, &inq_valid.or(&full[0]).or(&full[1]).not());
    // The non-zero tests are worked out as the group enters the input
    // register, so the wide tests have a cycle of their own; the step count
    // is registered as it is, and the present flags come from it.
    let steps_in = b.pipe("in_steps_q", &in_steps, &in_ready_q);
    let present_in =
        Expr::cat_lanes(&(0..g).map(|s| steps_in.gt(&Expr::lit(p.steps_bits(), s as u64))).collect::<Vec<_>>());
    let useful_in = if p.load_filter {
        // The A and B tests are registered apart: each is half as wide.
        // A step's slice is not all zero (floating point: +0 and -0 are zero).
        let any_of = |x: &[Vec<Expr>], t: ElemType| {
            let eb = t.bits();
            let nz = |v: &Vec<Expr>| {
                if t.is_float() {
                    Expr::cat_lanes(&v.iter().flat_map(|e| (0..l).map(move |ln| nonzero(&e.part(ln * eb, eb), t))).collect::<Vec<_>>()).any()
                } else {
                    Expr::cat(v).any()
                }
            };
            Expr::cat_lanes(&x.iter().map(nz).collect::<Vec<_>>())
        };
        let a_nz = b.pipe("in_a_nonzero_q", &any_of(&a_in, p.a_type), &in_ready_q);
        let b_nz = b.pipe("in_b_nonzero_q", &any_of(&b_in, p.b_type), &in_ready_q);
        b.let_("in_useful", &present_in.and(&a_nz).and(&b_nz))
    } else {
        present_in.clone()
    };
    let sw = bits_for(g as u64);
    let bits = |v: &Expr| (0..g).map(|i| v.bit_at(i)).collect::<Vec<_>>();
    let skipped_now = popcount(&bits(&present_in.and(&useful_in.not())), sw);

    let load: Vec<Expr> = (0..2).map(|k| b.let_(&format!("bank{k}_load"), &take.and(&wr.eq_lit(k)))).collect();
    // A bank that is not full is not in use: it copies the input register
    // every cycle, so its wide enable is a flip-flop (`!full`) rather than
    // the load decision.
    let ga: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_a_q"), &inq_a, &full[k].not())).collect();
    let gb: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_b_q"), &inq_b, &full[k].not())).collect();
    // Each lane's non-zero flag, [step][pe][lane] (lane 0 low), worked out
    // from the input register as a bank copies it, then carried beside the
    // operands into the grid: neither the counters nor the PEs' gating test
    // operands for zero, and the input pins' paths stay short.
    // Without gating and counters nothing reads them.
    let lane_nz = |x: &Expr, n: u32, t: ElemType| {
        let eb = t.bits();
        Expr::cat_lanes(&(0..g * n * l).map(|k| nonzero(&x.part(k * eb, eb), t)).collect::<Vec<_>>())
    };
    let bank_nz = (p.gating || p.stats).then(|| {
        let (a_nz_in, b_nz_in) = (lane_nz(&inq_a, r, p.a_type), lane_nz(&inq_b, c, p.b_type));
        let ga_nz: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_a_nz_q"), &a_nz_in, &full[k].not())).collect();
        let gb_nz: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_b_nz_q"), &b_nz_in, &full[k].not())).collect();
        (ga_nz, gb_nz)
    });
    let wr_next = b.let_("write_bank_next", &take.mux(&wr.not(), &wr));
    b.next(&wr, &wr_next, None);

    // A bank that is not full has no remaining step and no end pending (both
    // are cleared as it finishes), so only the active bank's flags matter.
    // The issue decision reads one-bit registers only: whether the bank has
    // a step left (`bankN_any_q`), a second one (`bankN_any2_q`), and
    // whether no tile is in flight (`idle_q`), so it is a LUT or two deep.
    // The issued step is picked straight from registers: bankN_pick_q is the
    // lowest remaining step of bank N while N is active, else zero.
    let picks: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_pick_q"), g, 0)).collect();
    let any: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_any_q"), 1, 0)).collect();
    let any2: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_any2_q"), 1, 0)).collect();
    let idle = b.reg("idle_q", 1, 1);
    let held = b.let_("held", &select(&act, &full));
    let need_end = b.let_("cur_need_end", &select(&act, &need));
    let has_rem = b.let_("has_rem", &select(&act, &any));
    let cand = b.let_("cand", &has_rem.or(&need_end));
    let rest_any = b.let_("rest_any", &select(&act, &any2));
    let cand_end = b.let_("cand_end", &need_end.and(&rest_any.not()));
    let issue = b.let_("issue", &cand.and(&cand_end.not().or(&idle)));
    // The active group is done: nothing to issue, or its last candidate issues now.
    let done = b.let_("group_done", &held.and(&cand.not().or(&issue.and(&rest_any.not()))));
    // A held empty bank hands over too, so the pointer never waits on it.
    let advance = b.let_("advance", &done.or(&held.not().and(&select(&act.not(), &full))));
    b.next(&act, &act.not(), Some(&advance));
    let act_next = b.let_("active_bank_next", &advance.mux(&act.not(), &act));
    // The group in the input register: its first and second useful steps.
    let in_low = b.let_("in_low", &lowest_bit(&useful_in));
    let in_low2 = b.let_("in_low2", &lowest_bit(&useful_in.and(&in_low.not())));
    let mut full_next = Vec::new();
    for k in 0..2u64 {
        let ku = k as usize;
        let is_act = act.eq_lit(k);
        let finish = is_act.and(&done);
        let fn_ = b.let_(&format!("bank{k}_full_next"), &load[ku].or(&full[ku].and(&finish.not())));
        b.next(&full[ku], &fn_, None);
        full_next.push(fn_);
        let stepped = is_act.and(&issue);
        let rem_en = load[ku].or(&stepped);
        // The bank's lowest remaining step is the one that issues.
        b.next(&rem[ku], &load[ku].mux(&useful_in, &rem[ku].and(&low[ku].not())), Some(&rem_en));
        let low_next = b.let_(
            &format!("bank{k}_low_next"),
            &load[ku].mux(&in_low, &stepped.mux(&low2[ku], &low[ku])),
        );
        b.next(&low[ku], &low_next, None);
        b.next(&picks[ku], &act_next.eq_lit(k).repl(g).and(&low_next), None);
        let after = rem[ku].and(&low[ku].not()).and(&low2[ku].not());
        b.next(&low2[ku], &load[ku].mux(&in_low2, &lowest_bit(&after)), Some(&rem_en));
        b.next(&any[ku], &load[ku].mux(&useful_in.any(), &any2[ku]), Some(&rem_en));
        b.next(&any2[ku], &load[ku].mux(&in_low2.any(), &after.any()), Some(&rem_en));
        b.next(
            &need[ku],
            &load[ku].mux(&inq_last, &Expr::bit(false)),
            Some(&load[ku].or(&stepped.and(&cand_end))),
        );
    }
    let in_ready_next = inq_valid_next.not().or(&select(&wr_next, &full_next).not());
    // (Named only where the C0 enable reads it too.)
    let in_ready_next = if fp_c0 { b.let_("in_ready_next", &in_ready_next) } else { in_ready_next };
    b.next(&in_ready_q, &in_ready_next, None);
    let inq_c0 = inq_c0.map(|(load, first_next)| {
        b.next(&load, &in_ready_next.and(&first_next), None);
        b.pipe("in_c0_q", &in_s.field("c0"), &load)
    });
    let gc0: Option<Vec<Expr>> =
        inq_c0.as_ref().map(|c0| (0..2).map(|k| b.pipe(&format!("bank{k}_c0_q"), c0, &full[k].not())).collect());

    // The issued step: picked operands and their lanes' non-zero flags
    // (zero for the null step). `select_pick` is both banks' pick registers.
    let sel = b.let_("select_pick", &Expr::cat_lanes(&picks));
    let a_steps: Vec<Expr> = ga.iter().flat_map(|x| (0..g).map(move |s| x.part(s * r * row_w, r * row_w))).collect();
    let b_steps: Vec<Expr> = gb.iter().flat_map(|x| (0..g).map(move |s| x.part(s * c * col_w, c * col_w))).collect();
    let step_a = b.let_("step_a", &select_onehot(&sel, &a_steps));
    let step_b = b.let_("step_b", &select_onehot(&sel, &b_steps));
    let steps_of = |banks: &[Expr], n: u32| -> Vec<Expr> {
        banks.iter().flat_map(|x| (0..g).map(move |s| x.part(s * n * l, n * l))).collect()
    };
    // The issued step's non-zero flags: for the gating and the counters.
    let step_nz = bank_nz.as_ref().map(|(ga_nz, gb_nz)| {
        (
            b.let_("step_a_nz", &select_onehot(&sel, &steps_of(ga_nz, r))),
            b.let_("step_b_nz", &select_onehot(&sel, &steps_of(gb_nz, c))),
        )
    });

    // ---- issue register and skew: row i delayed i, column j delayed j ----
    let iss_valid = b.reg("issue_valid_q", 1, 0);
    b.next(&iss_valid, &issue, None);
    let iss_last = b.pipe("issue_last_q", &cand_end, &Expr::bit(true));
    let iss_a = b.pipe("issue_a_q", &step_a, &Expr::bit(true));
    let iss_b = b.pipe("issue_b_q", &step_b, &Expr::bit(true));
    let (iss_a_nz, iss_b_nz) = match &step_nz {
        Some((a_nz, b_nz)) => (b.pipe("issue_a_nz_q", a_nz, &Expr::bit(true)), b.pipe("issue_b_nz_q", b_nz, &Expr::bit(true))),
        // Without gating or counters nothing reads the flags: all ones.
        None => (Expr::ones(r * l), Expr::ones(c * l)),
    };
    // ---- counters, pipelined off the issue registers (off the issue path) ----
    if let Some((stat_useful, stat_gated, stat_skipped)) = &stats {
        let cb = bits_for(c as u64);
        let iss_real = b.reg("issue_real_q", 1, 0);
        let issue_null = b.let_("issue_null", &issue.and(&has_rem.not()));
        b.next(&iss_real, &issue.and(&issue_null.not()), None);
        let mut pcs = Vec::new();
        for lane in 0..l {
            let nza: Vec<Expr> = (0..r).map(|i| iss_a_nz.bit_at(i * l + lane)).collect();
            let nzb: Vec<Expr> = (0..c).map(|j| iss_b_nz.bit_at(j * l + lane)).collect();
            let pa = b.pipe(&format!("nz_rows_l{lane}_q"), &Expr::cat_lanes(&nza), &Expr::bit(true));
            let pb = b.pipe(&format!("nz_cols_l{lane}_q"), &popcount(&nzb, cb), &Expr::bit(true));
            pcs.push((pa, pb));
        }
        let stat_v1 = b.reg("stat_valid1_q", 1, 0);
        b.next(&stat_v1, &iss_real, None);
        // A lane's count is at most rows x cols.
        let pw = bits_for((r * c) as u64);
        // non-zero rows x non-zero columns, as a sum of masked column counts
        // (LUTs, not a multiplier).
        let terms: Vec<Expr> = pcs
            .iter()
            .map(|(pa, pb)| sum_tree(&(0..r).map(|i| pb.and(&pa.bit_at(i).repl(cb))).collect::<Vec<_>>(), pw).zext(p.macs_bits()))
            .collect();
        let useful_sum = b.let_("useful_sum", &terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t)));
        mac_counters(&mut b, p, &useful_sum, &stat_v1, stat_useful, stat_gated);
        // Registered apart from `accept`, so the loader's state stays off this path.
        let skipped_q = b.pipe("skipped_now_q", &skipped_now, &Expr::bit(true));
        let accepted_q = b.reg("accepted_q", 1, 0);
        b.next(&accepted_q, &take, None);
        let st_skipped = stat_counter(&mut b, "skipped_count", &skipped_q, &accepted_q);
        b.assign(stat_skipped, &st_skipped);
    }

    // C0 (floating point): the active bank's beside the issued step, then
    // PE(i,j)'s delayed to the cycle the step reaches its accumulator:
    // i + j + D after the issue register.
    let pe_c0: Option<Vec<Vec<Expr>>> = gc0.as_ref().map(|banks| {
        let iss_c0 = b.pipe("issue_c0_q", &select(&act, banks), &Expr::bit(true));
        let d = p.depth();
        (0..r)
            .map(|i| {
                let mut row = iss_c0.part(i * c * 32, c * 32);
                for k in 0..(d + i) {
                    row = b.pipe(&format!("c0_r{i}_{k}_q"), &row, &Expr::bit(true));
                }
                (0..c)
                    .map(|j| {
                        let mut v = row.part(j * 32, 32);
                        for k in 0..j {
                            v = b.pipe(&format!("c0_r{i}_c{j}_{k}_q"), &v, &Expr::bit(true));
                        }
                        v
                    })
                    .collect()
            })
            .collect()
    });

    // With gating the lanes' non-zero flags are skewed beside the operands.
    let gating = p.gating;
    let mut west = Vec::new(); // (a, a_nz, valid, last) entering PE(i, 0)
    for i in 0..r {
        let (mut a, mut v, mut la) = (iss_a.part(i * row_w, row_w), iss_valid.clone(), iss_last.clone());
        let mut nz = iss_a_nz.part(i * l, l);
        for d in 0..i {
            a = b.pipe(&format!("skew_a{i}_{d}_q"), &a, &Expr::bit(true));
            if gating {
                nz = b.pipe(&format!("skew_a_nz{i}_{d}_q"), &nz, &Expr::bit(true));
            }
            let vq = b.reg(&format!("skew_v{i}_{d}_q"), 1, 0);
            b.next(&vq, &v, None);
            v = vq;
            la = b.pipe(&format!("skew_l{i}_{d}_q"), &la, &Expr::bit(true));
        }
        west.push((a, nz, v, la));
    }
    let mut north = Vec::new();
    for j in 0..c {
        let (mut bv, mut nz) = (iss_b.part(j * col_w, col_w), iss_b_nz.part(j * l, l));
        for d in 0..j {
            bv = b.pipe(&format!("skew_b{j}_{d}_q"), &bv, &Expr::bit(true));
            if gating {
                nz = b.pipe(&format!("skew_b_nz{j}_{d}_q"), &nz, &Expr::bit(true));
            }
        }
        north.push((bv, nz));
    }

    // ---- the grid ----
    let mut results = vec![Vec::new(); r as usize];
    let mut row_done = Vec::new();
    let mut south = north.clone();
    for i in 0..r {
        let (mut a, mut a_nz, mut v, mut la) = west[i as usize].clone();
        for j in 0..c {
            let n = format!("pe_{i}_{j}");
            let (a_o, v_o, l_o, b_o) = (
                b.wire(&format!("{n}_a"), row_w),
                b.wire(&format!("{n}_valid"), 1),
                b.wire(&format!("{n}_last"), 1),
                b.wire(&format!("{n}_b"), col_w),
            );
            let (res, done) = (b.wire(&format!("{n}_res"), acc_w), b.wire(&format!("{n}_done"), 1));
            let (b_in, b_nz) = south[j as usize].clone();
            let mut ports = vec![
                ("clk_i", clk.clone()),
                ("rst_i", rst.clone()),
                ("a_i", a.clone()),
                ("valid_i", v.clone()),
                ("last_i", la.clone()),
                ("b_i", b_in),
                ("a_o", a_o.clone()),
                ("valid_o", v_o.clone()),
                ("last_o", l_o.clone()),
                ("b_o", b_o.clone()),
                ("res_o", res.clone()),
                ("done_o", done.clone()),
            ];
            if let Some(c0) = &pe_c0 {
                ports.push(("c0_i", c0[i as usize][j as usize].clone()));
            }
            let (a_nz_o, b_nz_o) = if gating {
                let (x, y) = (b.wire(&format!("{n}_a_nz"), l), b.wire(&format!("{n}_b_nz"), l));
                ports.extend([("a_nz_i", a_nz.clone()), ("b_nz_i", b_nz), ("a_nz_o", x.clone()), ("b_nz_o", y.clone())]);
                if j + 1 == c {
                    b.waive_unused(&x, "leaves the grid at the east edge");
                }
                if i + 1 == r {
                    b.waive_unused(&y, "leaves the grid at the south edge");
                }
                (x, y)
            } else {
                (a_nz.clone(), b_nz)
            };
            b.instance(&pe_mod, &format!("u_{n}"), &ports);
            if j + 1 == c {
                for w in [&a_o, &v_o, &l_o] {
                    b.waive_unused(w, "leaves the grid at the east edge");
                }
                row_done.push(done);
            } else {
                b.waive_unused(&done, "only the east column marks a row finished");
            }
            if i + 1 == r {
                b.waive_unused(&b_o, "leaves the grid at the south edge");
            }
            results[i as usize].push(res);
            (a, a_nz, v, la) = (a_o, a_nz_o, v_o, l_o);
            south[j as usize] = (b_o, b_nz_o);
        }
    }

    // ---- output rows in order, through an output register ----
    // The row on offer sits in a register, so the port's `out_c0_i` add has
    // no row select in front of it.
    let riw = p.row_index_bits();
    let out_row_q = b.reg("out_row_q", riw, 0);
    // Rows finish in order, at most one per cycle (a tile's rows a cycle
    // apart, and a tile's first row only after the tile before has gone), so
    // the finished rows not yet taken are a count, and "the next row is
    // ready" is a register of its own.
    let rcw = bits_for(r as u64);
    let rows_ready = b.reg("rows_ready_q", rcw, 0);
    let ready_now = b.reg("row_ready_q", 1, 0);
    let oq_valid = b.reg("out_valid_q", 1, 0);
    let out_fire = b.let_("out_fire", &oq_valid.and(&out_ready));
    let take_row = b.let_("take_row", &ready_now.and(&oq_valid.not().or(&out_fire)));
    let last_row = b.let_("last_row", &out_row_q.eq_lit((r - 1) as u64));
    let row_in = Expr::cat_lanes(&row_done).any().zext(rcw);
    let rows_ready_next =
        b.let_("rows_ready_next", &rows_ready.add(&row_in).sub(&take_row.zext(rcw)));
    b.next(&rows_ready, &rows_ready_next, None);
    b.next(&ready_now, &rows_ready_next.eq_lit(0).not(), None);
    b.next(
        &out_row_q,
        &last_row.mux(&Expr::zero(riw), &out_row_q.add(&Expr::lit(riw, 1))),
        Some(&take_row),
    );
    b.next(&oq_valid, &take_row.or(&oq_valid.and(&out_fire.not())), None);
    let rows: Vec<Expr> = results.iter().map(|row| Expr::cat_lanes(row)).collect();
    let oq_data = b.pipe("out_data_q", &select(&out_row_q, &rows), &take_row);
    let oq_row = b.pipe("out_row_index_q", &out_row_q, &take_row);
    // A tile is in flight until its last row moves into the output register:
    // then its result registers are free for the next tile.
    let tile_out = take_row.and(&last_row);
    let tile_in = issue.and(&cand_end);
    let one = Expr::lit(2, 1);
    let inflight_next = b.let_(
        "inflight_next",
        &tile_in.mux(&tile_out.mux(&inflight, &inflight.add(&one)), &tile_out.mux(&inflight.sub(&one), &inflight)),
    );
    b.next(&inflight, &inflight_next, None);
    b.next(&idle, &inflight_next.eq_lit(0), None);
    match &out_c0 {
        Some(c0) => {
            let sums: Vec<Expr> = (0..c).map(|j| oq_data.part(j * acc_w, acc_w).add(&c0.part(j * acc_w, acc_w))).collect();
            b.assign(&out_c, &Expr::cat_lanes(&sums));
        }
        None => b.assign(&out_c, &oq_data),
    }
    b.assign(&out_valid, &oq_valid);
    b.assign(&out_row, &oq_row);

    let top = b.finish()?;
    Ok(Design::of(top, p))
}

