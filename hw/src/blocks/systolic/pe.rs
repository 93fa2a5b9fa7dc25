//! Processing elements of both dataflows and their dot products: inline,
//! through the multiplier module, or split into half products.

use super::fp;
use super::mul::mul_widths;
use crate::rtl::{clog2, Expr, Module, ModuleBuilder, RtlError};
use gpurtl_params::systolic::SystolicParams;

/// One processing element. A, valid and last move right; B moves down.
pub(super) fn pe(p: &SystolicParams, mul: Option<&Module>) -> Result<Module, RtlError> {
    let (ab, bb, l, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.lanes, p.acc_bits);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe");
    m.doc("Output-stationary processing element of gpurtl_systolic (seed 004 §331-333).");
    m.doc(format!("acc += sum over {l} lanes of a*b ({} x {}); gated lanes do not multiply.", p.a_type.name(), p.b_type.name()));
    let clk = m.clock("clk_i");
    let rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let valid_i = m.input("valid_i", 1, "a step is here");
    let last_i = m.input("last_i", 1, "the step ends the tile");
    let b_i = m.input("b_i", l * bb, "B lanes from above");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let valid_o = m.output("valid_o", 1, "valid to the right");
    let last_o = m.output("last_o", 1, "last to the right");
    let b_o = m.output("b_o", l * bb, "B lanes downwards");
    let res_o = m.output("res_o", acc_w, "the last finished tile's result");
    let done_o = m.output("done_o", 1, "res_o changes at the end of this cycle");
    // With gating, each lane's non-zero flag travels beside the operand, so
    // no zero test sits in front of the multiplier's input register.
    let flags = if p.gating {
        let (a_nz_i, b_nz_i) =
            (m.input("a_nz_i", l, "lane k of a_i is not zero"), m.input("b_nz_i", l, "lane k of b_i is not zero"));
        let (a_nz_o, b_nz_o) = (m.output("a_nz_o", l, "a_nz to the right"), m.output("b_nz_o", l, "b_nz downwards"));
        let a_nz_q = m.pipe("a_nz_q", &a_nz_i, &Expr::bit(true));
        let b_nz_q = m.pipe("b_nz_q", &b_nz_i, &Expr::bit(true));
        m.assign(&a_nz_o, &a_nz_q);
        m.assign(&b_nz_o, &b_nz_q);
        Some((a_nz_i, b_nz_i))
    } else {
        None
    };
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let b_q = m.pipe("b_q", &b_i, &Expr::bit(true));
    let valid_q = m.reg("valid_q", 1, 0);
    let last_q = m.reg_noreset("last_q", 1);
    m.next(&valid_q, &valid_i, None);
    m.next(&last_q, &last_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&b_o, &b_q);
    m.assign(&valid_o, &valid_q);
    m.assign(&last_o, &last_q);
    // Gating on the operands: a lane with a zero operand feeds the multiplier
    // zeros, so it does not toggle (§333, §338).
    let (mut mac_a, mut mac_b, nzs) = gate_lanes(&mut m, &a_i, &b_i, flags.as_ref().map(|(x, y)| (x, y)), p);
    let mut any_nz = if p.gating { Expr::cat_lanes(&nzs).any() } else { Expr::bit(true) };
    let (mut mac_v, mut mac_l) = (valid_i.clone(), last_i.clone());
    // pipeline >= 2: register the gated operands, so the multiplier (a DSP
    // on FPGAs) sits alone between two registers.
    let dsp = mul.is_some();
    if p.pipeline >= 2 {
        if !dsp {
            mac_a = m.pipe("mac_a_q", &mac_a, &Expr::bit(true));
            mac_b = m.pipe("mac_b_q", &mac_b, &Expr::bit(true));
        }
        if p.gating {
            any_nz = m.pipe("mac_nz_q", &any_nz, &Expr::bit(true));
        }
        mac_v = valid_q.clone();
        mac_l = last_q.clone();
    }
    let sum = match mul {
        Some(mm) => dsp_dot(&mut m, mm, &clk, &mac_a, &mac_b, p),
        None if p.pipeline >= 3 => {
            // The half products take a stage of their own.
            let vq = m.reg("mac2_valid_q", 1, 0);
            m.next(&vq, &mac_v, None);
            mac_v = vq;
            mac_l = m.pipe("mac2_last_q", &mac_l, &Expr::bit(true));
            if p.gating {
                any_nz = m.pipe("mac2_nz_q", &any_nz, &Expr::bit(true));
            }
            split_dot(&mut m, &mac_a, &mac_b, p)
        }
        None => dot(&mut m, &mac_a, &mac_b, p),
    };
    // Gating: the accumulator holds when no lane multiplies (unless the tile ends).
    let work = if p.gating { any_nz.or(&mac_l) } else { Expr::bit(true) };
    // pipeline >= 1: register the product sum before the accumulator.
    let (sum, work, v, last) = if p.pipeline >= 1 {
        let vq = m.reg("mac_valid_q", 1, 0);
        m.next(&vq, &mac_v, None);
        (
            if dsp { sum } else { m.pipe("sum_q", &sum, &Expr::bit(true)) },
            m.pipe("work_q", &work, &Expr::bit(true)),
            vq,
            m.pipe("mac_last_q", &mac_l, &Expr::bit(true)),
        )
    } else {
        (sum, work, mac_v, mac_l)
    };
    // The accumulator clears on reset and at the end of a tile through one
    // condition, so that synthesis can use the flip-flops' synchronous
    // reset for both instead of a multiplexer in front of every bit.
    let acc = m.reg_noreset("acc_q", acc_w);
    let total = m.let_("total", &acc.add(&sum));
    let acc_clear = m.let_("acc_clear", &rst.or(&last));
    m.next(&acc, &acc_clear.mux(&Expr::zero(acc_w), &total), Some(&rst.or(&v.and(&work))));
    let done = m.let_("done", &v.and(&last));
    let res = m.pipe("res_q", &total, &done);
    m.assign(&res_o, &res);
    m.assign(&done_o, &done);
    m.finish()
}


/// The output-stationary processing element of floating-point types
/// (docs/systolic.md, "The output-stationary floating-point grid"): `acc =
/// acc ⊕ t`, t the lane tree of the products, `depth` cycles after the
/// operands arrive; the accumulator starts each tile at start(C0) (`c0_add`:
/// `c0_i` takes its place in the tile's first add) or at +0.
pub(super) fn pe_os_fp(p: &SystolicParams) -> Result<Module, RtlError> {
    let (ab, bb, l) = (p.a_type.bits(), p.b_type.bits(), p.lanes);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe");
    m.doc("Output-stationary processing element of gpurtl_systolic (seed 004 §331-333), floating point.");
    m.doc(format!(
        "acc = acc + the pairwise tree of {l} lane product(s) ({} x {} to binary32, nearest even); gated lanes do not multiply.",
        p.a_type.name(),
        p.b_type.name()
    ));
    let _clk = m.clock("clk_i");
    let rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let valid_i = m.input("valid_i", 1, "a step is here");
    let last_i = m.input("last_i", 1, "the step ends the tile");
    let b_i = m.input("b_i", l * bb, "B lanes from above");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let valid_o = m.output("valid_o", 1, "valid to the right");
    let last_o = m.output("last_o", 1, "last to the right");
    let b_o = m.output("b_o", l * bb, "B lanes downwards");
    let res_o = m.output("res_o", 32, "the last finished tile's result (binary32)");
    let done_o = m.output("done_o", 1, "res_o changes at the end of this cycle");
    let c0_i = p.c0_add.then(|| m.input("c0_i", 32, "C0 (binary32) of the tile whose first step reaches the accumulator this cycle"));
    let on = Expr::bit(true);
    let flags = if p.gating {
        let (a_nz_i, b_nz_i) =
            (m.input("a_nz_i", l, "lane k of a_i is not zero"), m.input("b_nz_i", l, "lane k of b_i is not zero"));
        let (a_nz_o, b_nz_o) = (m.output("a_nz_o", l, "a_nz to the right"), m.output("b_nz_o", l, "b_nz downwards"));
        let a_nz_q = m.pipe("a_nz_q", &a_nz_i, &on);
        let b_nz_q = m.pipe("b_nz_q", &b_nz_i, &on);
        m.assign(&a_nz_o, &a_nz_q);
        m.assign(&b_nz_o, &b_nz_q);
        Some((a_nz_i, b_nz_i))
    } else {
        None
    };
    let a_q = m.pipe("a_q", &a_i, &on);
    let b_q = m.pipe("b_q", &b_i, &on);
    let valid_q = m.reg("valid_q", 1, 0);
    let last_q = m.reg_noreset("last_q", 1);
    m.next(&valid_q, &valid_i, None);
    m.next(&last_q, &last_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&b_o, &b_q);
    m.assign(&valid_o, &valid_q);
    m.assign(&last_o, &last_q);
    let (mac_a, mac_b, nzs) = gate_lanes(&mut m, &a_i, &b_i, flags.as_ref().map(|(x, y)| (x, y)), p);
    // (valid, last, some lane multiplies) beside the operands, stage by stage.
    let any_nz = if p.gating { Expr::cat_lanes(&nzs).any() } else { on.clone() };
    let mut ctl = (valid_i.clone(), last_i.clone(), any_nz);
    let stage = |m: &mut ModuleBuilder, name: &str, ctl: &mut (Expr, Expr, Expr)| {
        let v = m.reg(&format!("{name}_valid_q"), 1, 0);
        m.next(&v, &ctl.0, None);
        let last = m.pipe(&format!("{name}_last_q"), &ctl.1, &on);
        let nz = if p.gating { m.pipe(&format!("{name}_nz_q"), &ctl.2, &on) } else { ctl.2.clone() };
        *ctl = (v, last, nz);
    };
    // pipeline >= 2: fp_dot registers the gated operands (decoded).
    if p.pipeline >= 2 {
        stage(&mut m, "mac", &mut ctl);
    }
    let t = fp_dot(&mut m, p, &mac_a, &mac_b, None, None, false, true, &mut |m, name| stage(m, name, &mut ctl));
    let (v, last, nz) = ctl;
    // Gating: the accumulator holds when no lane multiplies (unless the
    // tile ends): the same as adding +0.
    let work = if p.gating { nz.or(&last) } else { on.clone() };
    let acc = m.reg_noreset("acc_q", 32);
    let total = match &c0_i {
        // Without C0 the accumulator is cleared as a tile ends.
        None => {
            let total = fp::add(&mut m, "acc", &acc, &t, 0);
            let acc_clear = m.let_("acc_clear", &rst.or(&last));
            m.next(&acc, &acc_clear.mux(&Expr::zero(32), &total), Some(&rst.or(&v.and(&work))));
            total
        }
        // With C0 a tile's first step adds to C0 in place of the
        // accumulator (`fresh_q`: the next step is a tile's first), even
        // when its lanes are all gated: C0 ⊕ +0 is start(C0).
        Some(c0) => {
            let fresh = m.reg("fresh_q", 1, 1);
            let base = m.let_("acc_base", &fresh.mux(c0, &acc));
            let total = fp::add(&mut m, "acc", &base, &t, 0);
            let work = if p.gating { work.or(&fresh) } else { work };
            m.next(&acc, &total, Some(&v.and(&work)));
            m.next(&fresh, &last, Some(&v));
            total
        }
    };
    let done = m.let_("done", &v.and(&last));
    let res = m.pipe("res_q", &total, &done);
    m.assign(&res_o, &res);
    m.assign(&done_o, &done);
    m.finish()
}

/// The floating-point dot product of the gated lanes `mac_a` x `mac_b`:
/// each lane's product rounded to binary32 (registered as `pipeline` and
/// `fp_stages` say), then their pairwise tree, each level registered and
/// each add `fp_stages` + 1 cycles (`pairwise` false: summed left to right,
/// a planted bug for the tests). `stage(m, name)` is called after each
/// register level that all lanes pass (the products' front at `pipeline` 3,
/// the products, each tree level), so that the caller can move its control
/// signals along beside.
///
/// With `alt` = (sel, b2), lane products take `b2` for B where `sel` is
/// high: both operand pairs are decoded and the decoded fields selected, so
/// that `sel` comes late. `dsp` = (the multiplier module, the clock): each
/// significand product is an instance of it (the caller's parameters have
/// `pipeline` 2 and `fp_stages` >= 2). `gate`: zero-operand products get
/// zero significands (PE gating, where the caller has not gated the operands).
#[allow(clippy::too_many_arguments)]
fn fp_dot(
    m: &mut ModuleBuilder,
    p: &SystolicParams,
    mac_a: &Expr,
    mac_b: &Expr,
    alt: Option<(&Expr, &Expr)>,
    dsp: Option<(&Module, &Expr)>,
    gate: bool,
    pairwise: bool,
    stage: &mut dyn FnMut(&mut ModuleBuilder, &str),
) -> Expr {
    let (ab, bb, l) = (p.a_type.bits(), p.b_type.bits(), p.lanes);
    let on = Expr::bit(true);
    let mut level = Vec::new();
    for lane in 0..l {
        let pfx = format!("mul_l{lane}");
        // pipeline >= 2: the gated operands registered, decoded, so that
        // nothing stands between the register and the multiplier.
        let x = mac_a.part(lane * ab, ab);
        let mut ops = match alt {
            None => fp::mul_ops(m, &pfx, &x, p.a_type, &mac_b.part(lane * bb, bb), p.b_type, gate),
            Some((sel, b2)) => {
                let ops1 = fp::mul_ops(m, &format!("{pfx}_act"), &x, p.a_type, &mac_b.part(lane * bb, bb), p.b_type, gate);
                let ops2 = fp::mul_ops(m, &format!("{pfx}_sh"), &x, p.a_type, &b2.part(lane * bb, bb), p.b_type, gate);
                ops1.select(m, &pfx, sel, ops2)
            }
        };
        let f = if let Some((mm, clk)) = dsp {
            // The multiplier module holds the significands' and the
            // product's registers (pipeline 2, fp_stages >= 2: the same two
            // stages as below); the other fields go round it.
            let fp::MulOps { mut special, mut sign, mut exp, sig_a, sig_b } = ops;
            let (wa, wb) = mul_widths(p);
            let sw = sig_a.width() + sig_b.width();
            let prod = m.wire(&format!("{pfx}_dsp_p"), wa + wb);
            m.instance(mm, &format!("u_{pfx}"), &[("clk_i", clk.clone()), ("a_i", sig_a.zext(wa)), ("b_i", sig_b.zext(wb)), ("p_o", prod.clone())]);
            m.waive_unused(&prod, "the product of the zero-extended significands has zero top bits");
            fp::cut(m, &format!("{pfx}_ops_q"), &mut [&mut special, &mut sign, &mut exp]);
            fp::cut(m, &format!("{pfx}_front2_q"), &mut [&mut special, &mut sign, &mut exp]);
            fp::MulFront { special, sign, sig: prod.part(0, sw), exp }
        } else {
            if p.pipeline >= 2 {
                ops.register(m, &format!("{pfx}_ops_q"));
            }
            let mut f = fp::mul_front(m, &pfx, ops);
            if p.pipeline >= 3 {
                f.register(m, &format!("{pfx}_front_q"));
            }
            // fp_stages >= 2: the significand product registered (again, at
            // pipeline 3); the other fp_stages registers are inside the rounding.
            if p.fp_stages >= 2 {
                f.register(m, &format!("{pfx}_front2_q"));
            }
            f
        };
        let prod = fp::mul_back(m, &pfx, &f, p.fp_stages);
        level.push(if p.pipeline >= 1 { m.pipe(&format!("prod_l{lane}_q"), &prod, &on) } else { prod });
    }
    if p.pipeline >= 3 {
        stage(m, "mulf");
    }
    if p.pipeline >= 1 {
        stage(m, "prod");
    }
    if !pairwise {
        let mut sum = level[0].clone();
        for (k, x) in level.iter().enumerate().skip(1) {
            sum = fp::add(m, &format!("seq{k}"), &sum, x, 0);
        }
        level.truncate(1);
        level[0] = sum;
        for lv in 0..clog2(l as u64) * p.hop() {
            level[0] = m.pipe(&format!("seq_d{lv}_q"), &level[0], &on);
        }
    }
    // The pairwise tree: an odd one out passes to the next level as it is
    // (x ⊕ +0 = x for the canonical products).
    let mut lv = 0;
    while level.len() > 1 {
        let mut next = Vec::new();
        for (k, pair) in level.chunks(2).enumerate() {
            let v = if pair.len() == 2 {
                fp::add(m, &format!("tree{lv}_{k}"), &pair[0], &pair[1], p.fp_stages)
            } else {
                // The odd one out waits as long as an add takes.
                let mut x = pair[0].clone();
                for d in 0..p.fp_stages {
                    x = m.pipe(&format!("tree{lv}_{k}_wait{d}_q"), &x, &on);
                }
                x
            };
            next.push(m.pipe(&format!("tree{lv}_{k}_q"), &v, &on));
        }
        stage(m, &format!("tree{lv}"));
        level = next;
        lv += 1;
    }
    level.swap_remove(0)
}


/// The lanes of `a` and `b` with each lane zeroed when either operand of the
/// lane is zero (PE gating, §333), and the per-lane non-zero flags. `flags`
/// are the lanes' non-zero flags when they travel with the operands (one bit
/// per lane of `a`, of `b`); without them they are worked out here.
fn gate_lanes(
    m: &mut ModuleBuilder,
    a: &Expr,
    b: &Expr,
    flags: Option<(&Expr, &Expr)>,
    p: &SystolicParams,
) -> (Expr, Expr, Vec<Expr>) {
    let (ab, bb) = (p.a_type.bits(), p.b_type.bits());
    let (mut ga, mut gb, mut nzs) = (Vec::new(), Vec::new(), Vec::new());
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        if p.gating {
            let (xa, ya) = match flags {
                Some((fa, fb)) => (fa.bit_at(lane), fb.bit_at(lane)),
                None => (fp::nonzero(&x, p.a_type), fp::nonzero(&y, p.b_type)),
            };
            let nz = m.let_(&format!("nz_l{lane}"), &xa.and(&ya));
            ga.push(x.and(&nz.repl(ab)));
            gb.push(y.and(&nz.repl(bb)));
            nzs.push(nz);
        } else {
            ga.push(x);
            gb.push(y);
        }
    }
    (Expr::cat_lanes(&ga), Expr::cat_lanes(&gb), nzs)
}

/// The dot product of the lanes of `a` and `b`, each product extended to
/// `acc_bits`: one wire per lane, summed.
fn dot(m: &mut ModuleBuilder, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, pw, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.product_bits(), p.acc_bits);
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        // Signed operands use the signed multiply (native in FPGA DSPs); the
        // unsigned operand of a mixed pair gets a zero sign bit.
        let prod = match (p.a_type.signed(), p.b_type.signed()) {
            (true, true) => x.smul(&y),
            (true, false) => x.smul(&y.zext(bb + 1)),
            (false, true) => x.zext(ab + 1).smul(&y),
            (false, false) => x.zext(pw).mul(&y.zext(pw)),
        };
        let ext = if p.signed() { prod.sext(acc_w) } else { prod.zext(acc_w) };
        terms.push(m.let_(&format!("prod_l{lane}"), &ext));
    }
    terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t))
}


/// One weight-stationary processing element: A moves right, the partial sum
/// moves down, the weights stay. A shadow weight register is written from the
/// weight bus while the active one computes; the tile's first vector (`sw`)
/// switches to the shadow as it passes.
pub(super) fn pe_ws(p: &SystolicParams, mul: Option<&Module>) -> Result<Module, RtlError> {
    let (ab, bb, l, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.lanes, p.acc_bits);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe_ws");
    m.doc("Weight-stationary processing element of gpurtl_systolic (seed 004 §331).");
    m.doc(format!(
        "psum_o = psum_i + sum over {l} lane(s) of a*w ({} x {}), {} register stage(s); gated lanes do not multiply.",
        p.a_type.name(),
        p.b_type.name(),
        p.pipeline + 1
    ));
    let clk = m.clock("clk_i");
    let _rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let sw_i = m.input("sw_i", 1, "the tile's first vector: use and keep the shadow weights");
    let w_i = m.input("w_i", l * bb, "weight bus (this column's lanes)");
    let w_load_i = m.input("w_load_i", 1, "write the shadow weights from the bus");
    let psum_i = m.input("psum_i", acc_w, "partial sum from above");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let sw_o = m.output("sw_o", 1, "sw to the right");
    let psum_o = m.output("psum_o", acc_w, "partial sum downwards");
    let shadow = m.pipe("w_shadow_q", &w_i, &w_load_i);
    let active = m.pipe("w_active_q", &shadow, &sw_i);
    let w_use = m.let_("w_use", &sw_i.mux(&shadow, &active));
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let sw_q = m.reg("sw_q", 1, 0);
    m.next(&sw_q, &sw_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&sw_o, &sw_q);
    let (mut mac_a, mut mac_w, _) = gate_lanes(&mut m, &a_i, &w_use, None, p);
    // pipeline >= 2: the gated operands are registered, so the multiplier
    // sits alone between two registers.
    let sum = if let Some(mm) = mul {
        dsp_dot(&mut m, mm, &clk, &mac_a, &mac_w, p)
    } else {
        if p.pipeline >= 2 {
            mac_a = m.pipe("mac_a_q", &mac_a, &Expr::bit(true));
            mac_w = m.pipe("mac_w_q", &mac_w, &Expr::bit(true));
        }
        let sum = if p.pipeline >= 3 { split_dot(&mut m, &mac_a, &mac_w, p) } else { dot(&mut m, &mac_a, &mac_w, p) };
        if p.pipeline >= 1 {
            m.pipe("sum_q", &sum, &Expr::bit(true))
        } else {
            sum
        }
    };
    // psum_i arrives `pipeline` cycles after a_i, with the product sum.
    let psum = m.pipe("psum_q", &psum_i.add(&sum), &Expr::bit(true));
    m.assign(&psum_o, &psum);
    m.finish()
}


/// The weight-stationary processing element of floating-point types
/// (docs/systolic.md, "The floating-point grid"): `psum_o = psum_i ⊕ t`, t
/// the lane tree of the products, each level registered. `psum_i` arrives
/// `depth` = `pipeline` + tree levels cycles after `a_i`. `pairwise` false
/// sums the products left to right instead (a planted bug, for the tests).
pub(super) fn pe_ws_fp(p: &SystolicParams, mul: Option<&Module>, pairwise: bool) -> Result<Module, RtlError> {
    let (ab, bb, l) = (p.a_type.bits(), p.b_type.bits(), p.lanes);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe_ws");
    m.doc("Weight-stationary processing element of gpurtl_systolic (seed 004 §331), floating point.");
    m.doc(format!(
        "psum_o = psum_i + the pairwise tree of {l} lane product(s) ({} x {} to binary32, nearest even), {} register stage(s), each add {} cycle(s); gated lanes do not multiply.",
        p.a_type.name(),
        p.b_type.name(),
        p.depth() + p.hop(),
        p.hop()
    ));
    let clk = m.clock("clk_i");
    let _rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let sw_i = m.input("sw_i", 1, "the tile's first vector: use and keep the shadow weights");
    let w_i = m.input("w_i", l * bb, "weight bus (this column's lanes)");
    let w_load_i = m.input("w_load_i", 1, "write the shadow weights from the bus");
    let psum_i = m.input("psum_i", 32, "partial sum from above (binary32)");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let sw_o = m.output("sw_o", 1, "sw to the right");
    let psum_o = m.output("psum_o", 32, "partial sum downwards (binary32)");
    let shadow = m.pipe("w_shadow_q", &w_i, &w_load_i);
    let active = m.pipe("w_active_q", &shadow, &sw_i);
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let sw_q = m.reg("sw_q", 1, 0);
    m.next(&sw_q, &sw_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&sw_o, &sw_q);
    // The first vector of a tile uses the shadow weights (sw_i), the others
    // the active ones: both decoded, the decoded fields selected by sw_i.
    // Gating zeroes a zero product's significands.
    let on = Expr::bit(true);
    let t = fp_dot(&mut m, p, &a_i, &active, Some((&sw_i, &shadow)), mul.map(|mm| (mm, &clk)), p.gating, pairwise, &mut |_, _| {});
    let sum = fp::add(&mut m, "psum", &psum_i, &t, p.fp_stages);
    let psum = m.pipe("psum_q", &sum, &on);
    m.assign(&psum_o, &psum);
    m.finish()
}


/// The dot product of the gated lanes through one [`dsp_mul`] per lane: the
/// product, extended to `acc_bits`, comes out two cycles after the operands.
fn dsp_dot(m: &mut ModuleBuilder, mul: &Module, clk: &Expr, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, pw, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.product_bits(), p.acc_bits);
    let (wa, wb) = mul_widths(p);
    let ext = |e: Expr, signed: bool, w: u32| if signed { e.sext(w) } else { e.zext(w) };
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let x = ext(a.part(lane * ab, ab), p.a_type.signed(), wa);
        let y = ext(b.part(lane * bb, bb), p.b_type.signed(), wb);
        let prod = m.wire(&format!("dsp_p_l{lane}"), wa + wb);
        m.instance(mul, &format!("u_mul_l{lane}"), &[("clk_i", clk.clone()), ("a_i", x), ("b_i", y), ("p_o", prod.clone())]);
        let v = if wa + wb > pw {
            m.waive_unused(&prod, "the top bits of the product of the sign-extended operands repeat its sign");
            prod.part(0, pw)
        } else {
            prod
        };
        terms.push(if p.signed() { v.sext(acc_w) } else { v.zext(acc_w) });
    }
    let sum = terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t));
    m.let_("prod_sum", &sum)
}

/// The dot product with each multiply split in two (`pipeline = 3`, for
/// FPGAs without multipliers): A times the low and the high half of B, each
/// half product registered, then `hi << half + lo` summed over the lanes.
fn split_dot(m: &mut ModuleBuilder, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let (a_s, b_s) = (p.a_type.signed(), p.b_type.signed());
    let h = bb / 2;
    // x (signed if `xs`) times y (signed if `ys`), extended to acc_bits.
    let product = |x: &Expr, xs: bool, y: &Expr, ys: bool| -> (Expr, bool) {
        let (xw, yw) = (x.width(), y.width());
        match (xs, ys) {
            (true, true) => (x.smul(y), true),
            (true, false) => (x.smul(&y.zext(yw + 1)), true),
            (false, true) => (x.zext(xw + 1).smul(y), true),
            (false, false) => (x.zext(xw + yw).mul(&y.zext(xw + yw)), false),
        }
    };
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        let (lo, lo_s) = product(&x, a_s, &y.part(0, h), false);
        let (hi, hi_s) = product(&x, a_s, &y.part(h, bb - h), b_s);
        let lo = m.pipe(&format!("pp_lo_l{lane}_q"), &lo, &Expr::bit(true));
        let hi = m.pipe(&format!("pp_hi_l{lane}_q"), &hi, &Expr::bit(true));
        let ext = |e: &Expr, signed: bool| if signed { e.sext(acc_w) } else { e.zext(acc_w) };
        let hi_shifted = Expr::cat_lanes(&[Expr::zero(h), ext(&hi, hi_s).part(0, acc_w - h)]);
        terms.push(m.let_(&format!("prod_l{lane}"), &hi_shifted.add(&ext(&lo, lo_s))));
    }
    terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t))
}

