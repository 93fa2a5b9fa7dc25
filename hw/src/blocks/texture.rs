//! Texture unit (seed `002_bad8977c8705306b.txt` §61-84, §110-111, claims
//! 1-20; docs/texture.md).
//!
//! bilinear and nearest samples, gather4 with the filter bypassed (any mip
//! level, integer offsets), and `conv_quad`: the union patch of a 2x2 quad's
//! kernels fetched once, in 2x2 tiles, broadcast to the four pixels'
//! register banks (whole or selective) and multiplied-accumulated.
//!
//! Pipeline: accept (level lookup, start coordinate, its wrap by a
//! restoring divider) -> sequencer (one tile at a time; a tile is one or more
//! *passes*, each at most one texel per bank) -> per-bank request registers
//! -> memory -> collect (the tag queue says which banks a pass used and where
//! each texel goes) -> S1 (a whole tile) -> S2 (filter inputs, or the pixels'
//! register banks and weights) -> result register. Timing: docs/texture.md.

use crate::rtl::{bits_for, clog2, popcount, select, sum_tree, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::texture::{cfg, AddressMode, Broadcast, Format, OpKind, TextureParams};

/// Name of the top module.
pub const TOP: &str = "gpurtl_texture";

/// Signed `a < b` for equal-width two's-complement values.
fn slt(a: &Expr, b: &Expr) -> Expr {
    let w = a.width();
    let flip = Expr::cat(&[Expr::bit(true), Expr::zero(w - 1)]);
    a.xor(&flip).lt(&b.xor(&flip))
}

/// `e` cut or zero-extended to `w` bits (word arithmetic is modulo 2^addr_bits).
fn fit(e: &Expr, w: u32) -> Expr {
    if e.width() >= w {
        e.slice(w - 1, 0)
    } else {
        e.zext(w)
    }
}

/// Bits of |x| one restoring-division stage consumes (docs/texture.md, prep stages).
pub const DIV_BITS_PER_STAGE: u32 = 4;

/// Restoring-division steps over `bits` (most significant first): `rem`
/// (below `d`, as wide as `d`) takes each bit in and subtracts `d` where it
/// can.
fn div_steps(rem: &Expr, bits: &[Expr], d: &Expr) -> Expr {
    let w = d.width();
    let dd = d.zext(w + 1);
    let mut rem = rem.clone();
    for bit in bits {
        let shifted = Expr::cat(&[rem.clone(), bit.clone()]);
        rem = shifted.ge(&dd).mux(&shifted.sub(&dd), &shifted).slice(w - 1, 0);
    }
    rem
}

pub fn build(p: &TextureParams) -> Result<Design, RtlError> {
    let ls = p.size_log();
    let f = p.frac_bits;
    let ub = p.uv_bits();
    let ib = p.int_bits();
    let cw = p.coord_bits();
    let lb = p.level_bits();
    let db = p.dim_bits();
    let mw = db + 1; // a wrapped position below 2 * max_size
    let aw = p.addr_bits;
    let ob = p.offset_bits;
    let nl = p.max_levels();
    let mk = p.max_kernel;
    let kb = bits_for(mk as u64); // kernel sizes 1..=MK
    let tb = p.tile_bits();
    let wb = p.weight_bits;
    let ab = p.acc_bits;
    let lw = p.lane_bits();
    let nb = p.banks;
    let (bx, by) = (u32::from(nb >= 2), u32::from(nb == 4));
    let depth = p.max_outstanding;
    let pw = clog2(depth as u64).max(1);
    let cntw = bits_for(depth as u64);

    let mut b = ModuleBuilder::new(TOP);
    b.doc("Texture unit (gpurtl block `texture`; seed 002 §61-84, §110-111, claims 1-20).");
    b.doc("bilinear / nearest samples, gather4 bypass from any level, conv_quad collective fetch with broadcast and MAC.");
    b.doc(format!(
        "{nb} bank(s) of 32-bit texel words, levels up to {}x{}, {f} fraction bits, kernels up to {mk}x{mk}, {} broadcast.",
        p.max_size, p.max_size, p.broadcast
    ));
    b.doc("Behaviour and cycle timing: docs/texture.md.");

    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let cfg_s = b.stream_in(
        "cfg",
        "a configuration write is offered",
        "the unit is idle and takes it",
        &[("addr", cfg::ADDR_BITS, "register address (docs/texture.md, Configuration)"), ("data", 32, "value")],
    );
    let [cfg_addr, cfg_data] = cfg_s.get(["addr", "data"]);
    b.waive_unused(&cfg_data, "bits outside a register's fields are ignored (docs/texture.md, Configuration)");
    let op_s = b.stream_in(
        "op",
        "an operation is offered",
        "the sequencer takes it",
        &[
            ("kind", 2, "0 bilinear, 1 nearest, 2 gather4, 3 conv_quad"),
            ("u", ub, "u (F fraction bits); conv_quad: pixel x"),
            ("v", ub, "v (F fraction bits); conv_quad: pixel y"),
            ("level", lb, "mip level (clamped to the descriptor's last)"),
            ("channel", 2, "channel of an rgba8 texture (gather4, conv_quad)"),
            ("dx", ob, "gather4 x offset (signed)"),
            ("dy", ob, "gather4 y offset (signed)"),
        ],
    );
    let [op_kind, op_u, op_v, op_level, op_chan, op_dx, op_dy] =
        op_s.get(["kind", "u", "v", "level", "channel", "dx", "dy"]);
    let mut req = Vec::new();
    let mut rsp = Vec::new();
    for k in 0..nb {
        req.push(b.stream_out(
            &format!("mem{k}_req"),
            &format!("bank {k} read request offered"),
            &format!("bank {k} read request taken"),
            &[("addr", aw, "word address")],
        ));
        rsp.push(b.stream_in(
            &format!("mem{k}_rsp"),
            &format!("bank {k} read data offered, in request order"),
            &format!("bank {k} read data taken"),
            &[("data", 32, "texel word")],
        ));
    }
    let res_s = b.stream_out(
        "res",
        "a result is offered, in op order",
        "the result is taken",
        &[
            ("kind", 2, "the op's kind"),
            ("data", 4 * lw, "4 lanes: channels, gather4 texels or conv_quad pixels"),
            ("stitch", 2, "conv_quad: 0 none, 1 4x4, 2 2x8, 3 8x2"),
            ("subops", p.subop_bits(), "conv_quad: sub-operations"),
        ],
    );
    let idle_o = b.output("idle_o", 1, "no op in the unit (configuration writes are taken)");
    let reg_writes_o = b.output("reg_writes_o", 32, "pixel register writes so far (wraps)");

    // ---- configuration ----
    let inflight = b.reg("inflight_q", bits_for(depth as u64 + 8), 0);
    let idle = b.let_("idle", &inflight.eq_lit(0));
    b.assign(&cfg_s.ready, &idle);
    b.assign(&idle_o, &idle);
    let cfg_we = b.let_("cfg_we", &cfg_s.valid.and(&idle));
    let we_at = |b: &mut ModuleBuilder, a: u64| b.let_(&format!("cfg_we_{a:03x}"), &cfg_we.and(&cfg_addr.eq_lit(a)));
    // Configuration registers reset to zero.
    let cfg_reg = |b: &mut ModuleBuilder, name: &str, d: &Expr, we: &Expr| {
        let r = b.reg(name, d.width(), 0);
        b.next(&r, d, Some(we));
        r
    };
    let we_ctl = we_at(&mut b, cfg::CONTROL);
    let fmt = cfg_reg(&mut b, "format_q", &cfg_data.slice(1, 0), &we_ctl);
    let mode_x = cfg_reg(&mut b, "mode_x_q", &cfg_data.slice(3, 2), &we_ctl);
    let mode_y = cfg_reg(&mut b, "mode_y_q", &cfg_data.slice(5, 4), &we_ctl);
    let levels_m1 = cfg_reg(&mut b, "levels_m1_q", &cfg_data.slice(8 + lb - 1, 8), &we_ctl);
    let we_k = we_at(&mut b, cfg::KERNEL);
    let kw_m1 = cfg_reg(&mut b, "kernel_w_m1_q", &cfg_data.slice(kb - 1, 0), &we_k);
    let kh_m1 = cfg_reg(&mut b, "kernel_h_m1_q", &cfg_data.slice(8 + kb - 1, 8), &we_k);
    let mut bases = Vec::new();
    let mut wm1s = Vec::new();
    let mut hm1s = Vec::new();
    for l in 0..nl {
        let we_b = we_at(&mut b, cfg::level_base(l));
        let we_s = we_at(&mut b, cfg::level_size(l));
        bases.push(cfg_reg(&mut b, &format!("level{l}_base_q"), &cfg_data.slice(aw - 1, 0), &we_b));
        wm1s.push(cfg_reg(&mut b, &format!("level{l}_w_m1_q"), &cfg_data.slice(ls - 1, 0), &we_s));
        hm1s.push(cfg_reg(&mut b, &format!("level{l}_h_m1_q"), &cfg_data.slice(16 + ls - 1, 16), &we_s));
    }
    // Weights, row by row (row j holds w(0..MK, j)).
    let mut wrows: Vec<Vec<Expr>> = Vec::new();
    for j in 0..mk {
        let mut row = Vec::new();
        for i in 0..mk {
            let we = we_at(&mut b, cfg::weight(i, j));
            row.push(cfg_reg(&mut b, &format!("w_{i}_{j}_q"), &cfg_data.slice(wb - 1, 0), &we));
        }
        wrows.push(row);
    }
    let kw = b.let_("kernel_w", &kw_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)));
    let kh = b.let_("kernel_h", &kh_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)));
    let is_rgba = fmt.bit_at(1);
    let is_r16 = fmt.eq_lit(Format::R16.code());
    let mirror_x = mode_x.bit_at(1);
    let mirror_y = mode_y.bit_at(1);
    let clamp_x = mode_x.eq_lit(AddressMode::Clamp.code());
    let clamp_y = mode_y.eq_lit(AddressMode::Clamp.code());

    // ---- accept: level, start coordinates and their wraps ----
    let lvl = b.let_("acc_level", &op_level.gt(&levels_m1).mux(&levels_m1, &op_level));
    let base_in = b.let_("acc_base", &select(&lvl, &bases));
    let w_in = b.let_("acc_w", &select(&lvl, &wm1s).zext(db).add(&Expr::lit(db, 1)));
    let h_in = b.let_("acc_h", &select(&lvl, &hm1s).zext(db).add(&Expr::lit(db, 1)));
    let is_conv_in = op_kind.eq_lit(OpKind::ConvQuad.code());
    let is_near_in = op_kind.eq_lit(OpKind::Nearest.code());
    let is_gath_in = op_kind.eq_lit(OpKind::Gather4.code());
    let half = Expr::lit(ub + 1, 1 << (f - 1));
    let mut start = Vec::new();
    let mut fracs = Vec::new();
    for (axis, coord, off, ksize_m1) in [("x", &op_u, &op_dx, &kw_m1), ("y", &op_v, &op_dy, &kh_m1)] {
        let shifted = coord.zext(ub + 1).sub(&half); // u - 2^(F-1), signed
        let x0 = shifted.slice(ub, f).sext(cw); // floor(u' / 2^F)
        fracs.push(b.let_(&format!("acc_frac_{axis}"), &shifted.slice(f - 1, 0)));
        let gath = x0.add(&off.sext(cw));
        let near = coord.slice(ub - 1, f).zext(cw);
        let half_k = ksize_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)).slice(kb, 1).zext(cw);
        let conv = coord.slice(ib - 1, 0).zext(cw).sub(&half_k);
        let s = is_conv_in.mux(&conv, &is_near_in.mux(&near, &is_gath_in.mux(&gath, &x0)));
        start.push(b.let_(&format!("acc_start_{axis}"), &s));
    }
    // The modulus of each axis: S (repeat) or 2S (mirror).
    let modulus = |b: &mut ModuleBuilder, name: &str, size: &Expr, mirror: &Expr| {
        let s = size.zext(mw);
        b.let_(name, &mirror.mux(&Expr::cat(&[s.slice(mw - 2, 0), Expr::bit(false)]), &s))
    };
    let mod_x_in = modulus(&mut b, "acc_mod_x", &w_in, &mirror_x);
    let mod_y_in = modulus(&mut b, "acc_mod_y", &h_in, &mirror_y);

    // ---- prep stages: the op with its level, then start mod S (or 2S) ----
    // Stage 0 holds the op as accepted; stages 1..=n each take
    // DIV_BITS_PER_STAGE bits of |start| into the remainder of a restoring
    // divider. Each stage moves on when the next is empty or moves on.
    let n_div = cw.div_ceil(DIV_BITS_PER_STAGE);
    let n_prep = 1 + n_div as usize;
    let names = ["kind", "frac_x", "frac_y", "channel", "base", "w", "h", "mod_x", "mod_y", "start_x", "start_y", "rem_x", "rem_y"];
    let mag = |s: &Expr| s.bit_at(cw - 1).mux(&Expr::zero(cw).sub(s), s);
    let stage0_in = vec![
        op_kind.clone(),
        fracs[0].clone(),
        fracs[1].clone(),
        op_chan.clone(),
        base_in.clone(),
        w_in.clone(),
        h_in.clone(),
        mod_x_in.clone(),
        mod_y_in.clone(),
        start[0].clone(),
        start[1].clone(),
        Expr::zero(mw),
        Expr::zero(mw),
    ];
    let mut prep_valid = Vec::new();
    let mut prep: Vec<Vec<Expr>> = Vec::new();
    let mut prep_in: Vec<Vec<Expr>> = Vec::new();
    for k in 0..n_prep {
        prep_valid.push(b.reg(&format!("prep{k}_valid_q"), 1, 0));
        let d = if k == 0 {
            stage0_in.clone()
        } else {
            // Stage k takes bits [cw - 1 - 4(k-1) ..] of |start|.
            let prev = &prep[k - 1];
            let hi = cw as i64 - 1 - (DIV_BITS_PER_STAGE * (k as u32 - 1)) as i64;
            let lo = (hi - DIV_BITS_PER_STAGE as i64 + 1).max(0);
            let mut d = prev.clone();
            for (axis, si, ri, mi) in [("x", 9, 11, 7), ("y", 10, 12, 8)] {
                let m = mag(&prev[si]);
                let bits: Vec<Expr> = (lo..=hi).rev().map(|i| m.bit_at(i as u32)).collect();
                d[ri] = b.let_(&format!("prep{k}_rem_{axis}_d"), &div_steps(&prev[ri], &bits, &prev[mi]));
            }
            d
        };
        let regs: Vec<Expr> = names.iter().zip(&d).map(|(n, e)| b.reg_noreset(&format!("prep{k}_{n}_q"), e.width())).collect();
        prep_in.push(d);
        prep.push(regs);
    }
    let last = prep[n_prep - 1].clone();
    let [pk, pfa, pfb, pch, pbase, pw_in, ph_in, pmx, pmy, psx, psy, prx, pry] =
        <[Expr; 13]>::try_from(last).expect("13 prep fields");
    // The remainder of |start|, then the sign: (-x) mod d = d - (x mod d) unless 0.
    let wrap_of = |b: &mut ModuleBuilder, axis: &str, st: &Expr, rem: &Expr, d: &Expr| {
        let r0 = rem.clone();
        let fix = st.bit_at(cw - 1).and(&r0.ne(&Expr::zero(mw)));
        b.let_(&format!("wrap_start_{axis}"), &fix.mux(&d.sub(&r0), &r0))
    };
    let wrap_x_in = wrap_of(&mut b, "x", &psx, &prx, &pmx);
    let wrap_y_in = wrap_of(&mut b, "y", &psy, &pry, &pmy);
    // Tiles of the op, minus one per axis: ceil((K + 1) / 2) - 1 = ceil(K / 2) - 1 + [K even]... = (K - 1 + 1) / 2 = K >> 1 with K = size.
    let tiles_x_m1 = kw.slice(kb, 1).slice(tb - 1, 0);
    let tiles_y_m1 = kh.slice(kb, 1).slice(tb - 1, 0);
    let kw_even = kw.bit_at(0).not();
    let kh_even = kh.bit_at(0).not();

    // ---- sequencer ----
    let seq_valid = b.reg("seq_valid_q", 1, 0);
    let seq_kind = b.reg_noreset("seq_kind_q", 2);
    let seq_base = b.reg_noreset("seq_base_q", aw);
    let seq_w = b.reg_noreset("seq_w_q", db);
    let seq_h = b.reg_noreset("seq_h_q", db);
    let seq_mod_x = b.reg_noreset("seq_mod_x_q", mw);
    let seq_mod_y = b.reg_noreset("seq_mod_y_q", mw);
    let seq_fa = b.reg_noreset("seq_frac_x_q", f);
    let seq_fb = b.reg_noreset("seq_frac_y_q", f);
    let seq_chan = b.reg_noreset("seq_channel_q", 2);
    let seq_x0 = b.reg_noreset("seq_start_x_q", cw);
    let seq_m0 = b.reg_noreset("seq_wrap_start_x_q", mw);
    let ti = b.reg_noreset("tile_i_q", tb);
    let tj = b.reg_noreset("tile_j_q", tb);
    let cx = b.reg_noreset("tile_x_q", cw);
    let cy = b.reg_noreset("tile_y_q", cw);
    let cmx = b.reg_noreset("tile_wrap_x_q", mw);
    let cmy = b.reg_noreset("tile_wrap_y_q", mw);
    let todo = b.reg_noreset("todo_q", 4);
    let tile_mask = b.reg_noreset("tile_mask_q", 4);
    let seq_conv = seq_kind.eq_lit(OpKind::ConvQuad.code());
    let seq_txm1 = seq_conv.mux(&tiles_x_m1, &Expr::zero(tb));
    let seq_tym1 = seq_conv.mux(&tiles_y_m1, &Expr::zero(tb));

    // The current tile's texels: bank and word of each, registered when
    // the tile starts (worked out below from the next tile's coordinates).
    let bank_w = match nb {
        1 => 1,
        2 => 1,
        _ => 2,
    };
    let word: Vec<Expr> = (0..4).map(|k| b.reg_noreset(&format!("word{k}_q"), aw)).collect();
    let bank: Vec<Expr> = (0..4).map(|k| b.reg_noreset(&format!("bank{k}_q"), bank_w)).collect();
    // The pass: per bank, the lowest-numbered texel of todo in that bank.
    let mut in_pass = Vec::new();
    for k in 0..4 {
        let mut e = todo.bit_at(k as u32);
        for j in 0..k {
            e = e.and(&todo.bit_at(j as u32).and(&bank[j].eq(&bank[k])).not());
        }
        in_pass.push(b.let_(&format!("in_pass{k}"), &e));
    }
    let pass = Expr::cat_lanes(&in_pass);
    let tag_count = b.reg("tag_count_q", cntw, 0);
    let mut used = Vec::new();
    let mut slot = Vec::new();
    let mut req_addr_d = Vec::new();
    let mut bank_free = Vec::new();
    let req_valid: Vec<Expr> = (0..nb).map(|k| b.reg(&format!("req{k}_valid_q"), 1, 0)).collect();
    for k in 0..nb {
        let hit: Vec<Expr> = (0..4).map(|t| in_pass[t].and(&bank[t].eq_lit(k as u64))).collect();
        used.push(b.let_(&format!("pass_bank{k}"), &hit.iter().cloned().reduce(|a, c| a.or(&c)).unwrap_or(Expr::bit(false))));
        let oh = Expr::cat_lanes(&hit);
        slot.push(Expr::cat(&[oh.bit_at(2).or(&oh.bit_at(3)), oh.bit_at(1).or(&oh.bit_at(3))]));
        req_addr_d.push(crate::rtl::select_onehot(&oh, &word));
        bank_free.push(req_valid[k as usize].not().or(&req[k as usize].ready));
    }
    let mut can = seq_valid.and(&tag_count.lt(&Expr::lit(cntw, depth as u64)));
    for k in 0..nb as usize {
        can = can.and(&used[k].not().or(&bank_free[k]));
    }
    let issue = b.let_("issue", &can);
    let todo_left = b.let_("todo_left", &todo.and(&pass.not()));
    let tile_done = b.let_("tile_done", &todo_left.eq_lit(0));
    let last_col = ti.eq(&seq_txm1);
    let last_tile = b.let_("last_tile", &last_col.and(&tj.eq(&seq_tym1)));
    let op_done = b.let_("op_done", &issue.and(&tile_done).and(&last_tile));
    // The prep stages' moves, from the sequencer back to the op port.
    let mut free_next = b.let_("seq_free", &seq_valid.not().or(&op_done));
    let mut moves = vec![Expr::bit(false); n_prep];
    for k in (0..n_prep).rev() {
        moves[k] = b.let_(&format!("prep{k}_move"), &prep_valid[k].and(&free_next));
        free_next = prep_valid[k].not().or(&moves[k]);
    }
    let op_ready = b.let_("op_ready", &cfg_s.valid.not().and(&free_next));
    b.assign(&op_s.ready, &op_ready);
    let op_take = b.let_("op_take", &op_s.valid.and(&op_ready));
    for k in 0..n_prep {
        let load = if k == 0 { op_take.clone() } else { moves[k - 1].clone() };
        b.next(&prep_valid[k], &load.or(&prep_valid[k].and(&moves[k].not())), None);
        for (r, d) in prep[k].iter().zip(&prep_in[k]) {
            b.next(r, d, Some(&load));
        }
    }
    let seq_load = moves[n_prep - 1].clone();

    // The mask of tile (i, j) of an op: conv patches with an even kernel
    // size leave the last tile column / row half empty.
    let mask_of = |kind_conv: &Expr, kind_near: &Expr, i_last: &Expr, j_last: &Expr| -> Expr {
        let col1 = kind_conv.not().or(&kw_even.and(i_last).not());
        let row1 = kind_conv.not().or(&kh_even.and(j_last).not());
        let full = Expr::cat(&[col1.and(&row1), row1.clone(), col1, Expr::bit(true)]);
        kind_near.mux(&Expr::lit(4, 1), &full)
    };
    // Next tile (raster order) and its coordinates.
    let ti_n = last_col.mux(&Expr::zero(tb), &ti.add(&Expr::lit(tb, 1)));
    let tj_n = last_col.mux(&tj.add(&Expr::lit(tb, 1)), &tj);
    let step2 = |m: &Expr, modulus: &Expr| -> Expr {
        let t = m.add(&Expr::lit(mw, 2));
        let t = t.ge(modulus).mux(&t.sub(modulus), &t);
        t.ge(modulus).mux(&t.sub(modulus), &t)
    };
    let cx_n = last_col.mux(&seq_x0, &cx.add(&Expr::lit(cw, 2)));
    let cmx_n = last_col.mux(&seq_m0, &step2(&cmx, &seq_mod_x));
    let cy_n = last_col.mux(&cy.add(&Expr::lit(cw, 2)), &cy);
    let cmy_n = last_col.mux(&step2(&cmy, &seq_mod_y), &cmy);
    let seq_near = seq_kind.eq_lit(OpKind::Nearest.code());
    let todo_n = mask_of(&seq_conv, &seq_near, &ti_n.eq(&seq_txm1), &tj_n.eq(&seq_tym1));
    let p_conv = pk.eq_lit(OpKind::ConvQuad.code());
    let p_near = pk.eq_lit(OpKind::Nearest.code());
    let todo_in = mask_of(&p_conv, &p_near, &tiles_x_m1.eq_lit(0), &tiles_y_m1.eq_lit(0));
    let next_tile = b.let_("next_tile", &issue.and(&tile_done).and(&last_tile.not()));
    b.next(&seq_valid, &seq_load.or(&seq_valid.and(&op_done.not())), None);
    for (r, d) in [
        (&seq_kind, &pk),
        (&seq_base, &pbase),
        (&seq_w, &pw_in),
        (&seq_h, &ph_in),
        (&seq_mod_x, &pmx),
        (&seq_mod_y, &pmy),
        (&seq_fa, &pfa),
        (&seq_fb, &pfb),
        (&seq_chan, &pch),
        (&seq_x0, &psx),
        (&seq_m0, &wrap_x_in),
    ] {
        b.next(r, d, Some(&seq_load));
    }
    let tile_en = seq_load.or(&next_tile);
    b.next(&ti, &seq_load.mux(&Expr::zero(tb), &ti_n), Some(&tile_en));
    b.next(&tj, &seq_load.mux(&Expr::zero(tb), &tj_n), Some(&tile_en));
    b.next(&cx, &seq_load.mux(&psx, &cx_n), Some(&tile_en));
    b.next(&cy, &seq_load.mux(&psy, &cy_n), Some(&tile_en));
    b.next(&cmx, &seq_load.mux(&wrap_x_in, &cmx_n), Some(&tile_en));
    b.next(&cmy, &seq_load.mux(&wrap_y_in, &cmy_n), Some(&tile_en));
    // Wrapped coordinates of the tile's two columns and two rows.
    let wrap_pair = |b: &mut ModuleBuilder, axis: &str, c: &Expr, m: &Expr, size: &Expr, modulus: &Expr, clamp: &Expr, mirror: &Expr| -> [Expr; 2] {
        let last = size.zext(cw).sub(&Expr::lit(cw, 1));
        let clamp_of = |v: &Expr| -> Expr {
            let neg = v.bit_at(cw - 1);
            let over = slt(&last, v);
            neg.mux(&Expr::zero(cw), &over.mux(&last, v)).slice(mw - 1, 0)
        };
        let c1 = c.add(&Expr::lit(cw, 1));
        let m1 = m.add(&Expr::lit(mw, 1));
        let m1 = m1.eq(modulus).mux(&Expr::zero(mw), &m1);
        let size_w = size.zext(mw);
        let fold = |v: &Expr| -> Expr {
            let twice_m1 = modulus.sub(&Expr::lit(mw, 1));
            mirror.and(&v.ge(&size_w)).mux(&twice_m1.sub(v), v)
        };
        let x0 = clamp.mux(&clamp_of(c), &fold(m));
        let x1 = clamp.mux(&clamp_of(&c1), &fold(&m1));
        [b.let_(&format!("tex_{axis}0"), &x0), b.let_(&format!("tex_{axis}1"), &x1)]
    };
    let nx = |b: &mut ModuleBuilder, name: &str, from_prep: &Expr, from_seq: &Expr| b.let_(&format!("next_{name}"), &seq_load.mux(from_prep, from_seq));
    let g_cx = nx(&mut b, "tile_x", &psx, &cx_n);
    let g_cy = nx(&mut b, "tile_y", &psy, &cy_n);
    let g_mx = nx(&mut b, "tile_wrap_x", &wrap_x_in, &cmx_n);
    let g_my = nx(&mut b, "tile_wrap_y", &wrap_y_in, &cmy_n);
    let g_w = nx(&mut b, "w", &pw_in, &seq_w);
    let g_h = nx(&mut b, "h", &ph_in, &seq_h);
    let g_modx = nx(&mut b, "mod_x", &pmx, &seq_mod_x);
    let g_mody = nx(&mut b, "mod_y", &pmy, &seq_mod_y);
    let g_base = nx(&mut b, "base", &pbase, &seq_base);
    let [tx0, tx1] = wrap_pair(&mut b, "x", &g_cx, &g_mx, &g_w, &g_modx, &clamp_x, &mirror_x);
    let [ty0, ty1] = wrap_pair(&mut b, "y", &g_cy, &g_my, &g_h, &g_mody, &clamp_y, &mirror_y);
    let pitch = b.let_("pitch", &g_w.add(&Expr::lit(db, bx as u64)).slice(db - 1, bx).zext(db));
    let rows: Vec<Expr> = [&ty0, &ty1]
        .iter()
        .enumerate()
        .map(|(r, y)| {
            let yr = y.slice(mw - 1, by).zext(2 * db);
            let prod = yr.mul(&pitch.zext(2 * db));
            let prod = fit(&prod, aw);
            b.let_(&format!("row_offset{r}"), &prod)
        })
        .collect();
    let texel_xy = |k: usize| -> (&Expr, &Expr, usize) { (if k & 1 == 0 { &tx0 } else { &tx1 }, if k & 2 == 0 { &ty0 } else { &ty1 }, k >> 1) };
    if aw + bx < mw {
        for x in [&tx0, &tx1] {
            b.waive_unused(x, "word addresses are modulo 2^addr_bits");
        }
    }
    for k in 0..4 {
        let (x, y, r) = texel_xy(k);
        let col = fit(x, aw + bx).slice(aw + bx - 1, bx);
        b.next(&word[k], &g_base.add(&rows[r]).add(&col), Some(&tile_en));
        let bk = match nb {
            1 => Expr::zero(1),
            2 => x.bit_at(0),
            _ => Expr::cat(&[y.bit_at(0), x.bit_at(0)]),
        };
        b.next(&bank[k], &bk, Some(&tile_en));
    }
    let todo_d = seq_load.mux(&todo_in, &next_tile.mux(&todo_n, &todo_left));
    b.next(&todo, &todo_d, Some(&seq_load.or(&issue)));
    b.next(&tile_mask, &seq_load.mux(&todo_in, &todo_n), Some(&tile_en));

    // ---- request registers ----
    for k in 0..nb as usize {
        let load = issue.and(&used[k]);
        let v = req_valid[k].clone();
        b.next(&v, &load.or(&v.and(&req[k].ready.not())), None);
        let a = b.pipe(&format!("req{k}_addr_q"), &req_addr_d[k], &load);
        b.assign(&req[k].valid, &v);
        b.assign(&req[k].field("addr"), &a);
    }

    // ---- tag queue ----
    let tag_fields: Vec<(&str, Expr)> = vec![
        ("used", Expr::cat_lanes(&used)),
        ("slots", Expr::cat_lanes(&slot)),
        ("tile_last", tile_done.clone()),
        ("op_last", last_tile.clone()),
        ("kind", seq_kind.clone()),
        ("fa", seq_fa.clone()),
        ("fb", seq_fb.clone()),
        ("chan", seq_chan.clone()),
        ("ti", ti.clone()),
        ("tj", tj.clone()),
        ("mask", tile_mask.clone()),
    ];
    let tag_w: u32 = tag_fields.iter().map(|(_, e)| e.width()).sum();
    let tag_d = Expr::cat(&tag_fields.iter().rev().map(|(_, e)| e.clone()).collect::<Vec<_>>());
    let wr = b.reg("tag_wr_q", pw, 0);
    let rd = b.reg("tag_rd_q", pw, 0);
    let entries: Vec<Expr> = (0..depth).map(|k| b.reg_noreset(&format!("tag{k}_q"), tag_w)).collect();
    for (k, e) in entries.iter().enumerate() {
        b.next(e, &tag_d, Some(&issue.and(&wr.eq_lit(k as u64))));
    }
    let bump = |p: &Expr| p.eq_lit(depth as u64 - 1).mux(&Expr::zero(pw), &p.add(&Expr::lit(pw, 1)));
    b.next(&wr, &bump(&wr), Some(&issue));
    let head = b.let_("tag_head", &select(&rd, &entries));
    let mut at = 0;
    let mut field = |w: u32| {
        let e = head.slice(at + w - 1, at);
        at += w;
        e
    };
    let h_used = field(nb);
    let h_slots = field(2 * nb);
    let h_tile_last = field(1);
    let h_op_last = field(1);
    let h_kind = field(2);
    let h_fa = field(f);
    let h_fb = field(f);
    let h_chan = field(2);
    let h_ti = field(tb);
    let h_tj = field(tb);
    let h_mask = field(4);

    // ---- collect, S1, S2, result ----
    let s1_valid = b.reg("s1_valid_q", 1, 0);
    let s2_valid = b.reg("s2_valid_q", 1, 0);
    let res_valid = b.reg("res_valid_q", 1, 0);
    b.assign(&res_s.valid, &res_valid);
    let res_free = b.let_("res_free", &res_valid.not().or(&res_s.ready));
    let s2_kind = b.reg_noreset("s2_kind_q", 2);
    let s2_op_last = b.reg_noreset("s2_op_last_q", 1);
    let s2_conv = s2_kind.eq_lit(OpKind::ConvQuad.code());
    let s2_ends = b.let_("s2_ends_op", &s2_conv.not().or(&s2_op_last));
    let s2_move = b.let_("s2_move", &s2_valid.and(&s2_ends.not().or(&res_free)));
    let s2_free = b.let_("s2_free", &s2_valid.not().or(&s2_move));
    let s1_move = b.let_("s1_move", &s1_valid.and(&s2_free));
    let s1_free = b.let_("s1_free", &s1_valid.not().or(&s1_move));
    let nonempty = tag_count.ne(&Expr::zero(cntw));
    let mut have = nonempty.and(&h_tile_last.not().or(&s1_free));
    for k in 0..nb {
        have = have.and(&h_used.bit_at(k).not().or(&rsp[k as usize].valid));
    }
    let collect = b.let_("collect", &have);
    for k in 0..nb {
        b.assign(&rsp[k as usize].ready, &collect.and(&h_used.bit_at(k)));
    }
    b.next(&rd, &bump(&rd), Some(&collect));
    b.next(&tag_count, &tag_count.add(&issue.zext(cntw)).sub(&collect.zext(cntw)), None);
    // Texel t of the tile: this pass's data where one of its banks brings it.
    let mut tile = Vec::new();
    for t in 0..4u64 {
        let asm = b.reg_noreset(&format!("asm{t}_q"), 32);
        let mut v = asm.clone();
        for k in 0..nb {
            let here = h_used.bit_at(k).and(&h_slots.slice(2 * k + 1, 2 * k).eq_lit(t));
            v = here.mux(&rsp[k as usize].field("data"), &v);
        }
        let v = b.let_(&format!("tile_texel{t}"), &v);
        b.next(&asm, &v, Some(&collect));
        tile.push(v);
    }
    let s1_load = b.let_("s1_load", &collect.and(&h_tile_last));
    b.next(&s1_valid, &s1_load.or(&s1_valid.and(&s1_move.not())), None);
    let s1_tex: Vec<Expr> = (0..4).map(|t| b.pipe(&format!("s1_texel{t}_q"), &tile[t], &s1_load)).collect();
    let s1_kind = b.pipe("s1_kind_q", &h_kind, &s1_load);
    let s1_op_last = b.pipe("s1_op_last_q", &h_op_last, &s1_load);
    let s1_fa = b.pipe("s1_frac_x_q", &h_fa, &s1_load);
    let s1_fb = b.pipe("s1_frac_y_q", &h_fb, &s1_load);
    let s1_chan = b.pipe("s1_channel_q", &h_chan, &s1_load);
    let s1_ti = b.pipe("s1_tile_i_q", &h_ti, &s1_load);
    let s1_tj = b.pipe("s1_tile_j_q", &h_tj, &s1_load);
    let s1_mask = b.pipe("s1_mask_q", &h_mask, &s1_load);

    // Channel c of a texel word in the configured format (16 bits).
    let channel = |t: &Expr, c: &Expr| -> Expr {
        let byte = select(c, &(0..4).map(|n| t.slice(8 * n + 7, 8 * n)).collect::<Vec<_>>()).zext(16);
        is_rgba.mux(&byte, &is_r16.mux(&t.slice(15, 0), &t.slice(7, 0).zext(16)))
    };

    // S1 -> S2: the pixels' register banks and their weights.
    let s1_conv = s1_kind.eq_lit(OpKind::ConvQuad.code());
    b.next(&s2_valid, &s1_move.or(&s2_valid.and(&s2_move.not())), None);
    b.next(&s2_kind, &s1_kind, Some(&s1_move));
    b.next(&s2_op_last, &s1_op_last, Some(&s1_move));
    let s2_tex: Vec<Expr> = (0..4).map(|t| b.pipe(&format!("s2_texel{t}_q"), &s1_tex[t], &s1_move)).collect();
    // bilinear weights from S1's fractions: (2^F - a)(2^F - b), a(2^F - b),
    // (2^F - a)b, ab; they share the conv multipliers in S2.
    let one = Expr::lit(f + 1, 1 << f);
    let (fa, fb) = (s1_fa.zext(f + 1), s1_fb.zext(f + 1));
    let (na, nb_) = (one.sub(&fa), one.sub(&fb));
    let bbw = wb.max(2 * f + 2);
    let bil_w: Vec<Expr> = [(&na, &nb_), (&fa, &nb_), (&na, &fb), (&fa, &fb)]
        .iter()
        .enumerate()
        .map(|(k, (x, y))| b.let_(&format!("bil_w{k}"), &x.zext(bbw).mul(&y.zext(bbw))))
        .collect();
    let s2_chan = b.pipe("s2_channel_q", &s1_chan, &s1_move);
    // Weight rows 2j-1, 2j, 2j+1 and columns 2i-1, 2i, 2i+1 (index +1, so
    // that row -1 is the zero row at index 0).
    let zero_w = Expr::zero(wb);
    let pad = |items: Vec<Expr>| -> Vec<Expr> {
        let mut v = vec![Expr::zero(items[0].width())];
        v.extend(items);
        v
    };
    let row_items: Vec<Expr> = pad(wrows.iter().map(|r| Expr::cat_lanes(r)).collect());
    let iw = tb + 2;
    let two_i = Expr::cat(&[s1_ti.clone(), Expr::bit(false)]).zext(iw);
    let two_j = Expr::cat(&[s1_tj.clone(), Expr::bit(false)]).zext(iw);
    let sel_row: Vec<Expr> = (0..3u64)
        .map(|d| b.let_(&format!("w_row{d}"), &select(&two_j.add(&Expr::lit(iw, d)), &row_items)))
        .collect();
    let mut win = vec![vec![zero_w.clone(); 3]; 3];
    for (d, row) in sel_row.iter().enumerate() {
        let cols: Vec<Expr> = pad((0..mk).map(|i| row.slice(wb * i + wb - 1, wb * i)).collect());
        for e in 0..3u64 {
            win[d][e as usize] = b.let_(&format!("w_win{d}{e}"), &select(&two_i.add(&Expr::lit(iw, e)), &cols));
        }
    }
    let kwx = kw.zext(iw);
    let khx = kh.zext(iw);
    let mut writes = Vec::new();
    let mut s2_w = vec![Vec::new(); 4];
    let mut s2_pix = vec![Vec::new(); 4];
    let s1_vals: Vec<Expr> = (0..4).map(|t| b.let_(&format!("s1_value{t}"), &channel(&s1_tex[t], &s1_chan))).collect();
    for p_ in 0..4usize {
        let (dx, dy) = ((p_ & 1) as u64, (p_ >> 1) as u64);
        for t in 0..4usize {
            let (ox, oy) = ((t & 1) as u64, (t >> 1) as u64);
            // Patch position minus the pixel's offset, +1: the kernel column and row, +1.
            let ci = two_i.add(&Expr::lit(iw, ox + 1 - dx));
            let rj = two_j.add(&Expr::lit(iw, oy + 1 - dy));
            let inside = ci.ne(&Expr::zero(iw)).and(&ci.le(&kwx)).and(&rj.ne(&Expr::zero(iw))).and(&rj.le(&khx));
            let inside = b.let_(&format!("in_kernel_p{p_}_t{t}"), &inside.and(&s1_mask.bit_at(t as u32)));
            let we = match p.broadcast {
                Broadcast::Whole => s1_mask.bit_at(t as u32),
                Broadcast::Selective => inside.clone(),
            };
            let we = b.let_(&format!("pix{p_}_we{t}"), &we.and(&s1_conv));
            writes.push(we.and(&s1_move));
            let reg = b.reg_noreset(&format!("pix{p_}_r{t}_q"), 16);
            b.next(&reg, &s1_vals[t], Some(&we.and(&s1_move)));
            s2_pix[p_].push(reg);
            let w = inside.mux(&win[(oy + 1 - dy) as usize][(ox + 1 - dx) as usize], &zero_w).sext(bbw);
            // The multiplier's second operand: the pixel's weight, or the
            // texel's bilinear weight (group p is then channel p).
            let w = s1_conv.mux(&w, &bil_w[t]);
            s2_w[p_].push(b.pipe(&format!("mul{p_}_b{t}_q"), &w, &s1_move));
        }
    }
    let reg_writes = b.reg("reg_writes_q", 32, 0);
    b.next(&reg_writes, &reg_writes.add(&popcount(&writes, 32)), None);
    b.assign(&reg_writes_o, &reg_writes);

    // ---- S2 -> result ----
    let s2_load_res = b.let_("res_load", &s2_move.and(&s2_ends));
    // 16 multipliers, 4 groups of 4: group p sums pixel p's products
    // (conv_quad) or channel p's bilinear terms.
    let sw = (17 + bbw + 2).max(ab);
    let lane_ch: Vec<Expr> = (0..4u64).map(|c| Expr::lit(2, c)).collect();
    let mut conv_lanes = Vec::new();
    let mut bil_lanes = Vec::new();
    let mut near_lanes = Vec::new();
    for c in 0..4usize {
        let exists = if c == 0 { Expr::bit(true) } else { is_rgba.clone() };
        let vals: Vec<Expr> = (0..4)
            .map(|t| b.let_(&format!("s2_ch{c}_texel{t}"), &exists.mux(&channel(&s2_tex[t], &lane_ch[c]), &Expr::zero(16))))
            .collect();
        let prods: Vec<Expr> = (0..4)
            .map(|t| {
                let a = s2_conv.mux(&s2_pix[c][t], &vals[t]);
                b.let_(&format!("mul{c}_p{t}"), &a.zext(17).smul(&s2_w[c][t]).sext(sw))
            })
            .collect();
        let sum = b.let_(&format!("mul{c}_sum"), &sum_tree(&prods, sw));
        let acc = b.reg(&format!("acc{c}_q"), ab, 0);
        let total = b.let_(&format!("acc{c}_next"), &acc.add(&sum.slice(ab - 1, 0)));
        b.next(&acc, &s2_ends.mux(&Expr::zero(ab), &total), Some(&s2_move.and(&s2_conv)));
        conv_lanes.push(total.zext(lw));
        let rounded = sum.add(&Expr::lit(sw, 1 << (2 * f - 1))).slice(2 * f + 15, 2 * f);
        bil_lanes.push(rounded.zext(lw));
        near_lanes.push(vals[0].zext(lw));
    }
    let gather_lanes: Vec<Expr> = (0..4).map(|t| channel(&s2_tex[t], &s2_chan).zext(lw)).collect();
    let res_data_d = select(
        &s2_kind,
        &[Expr::cat_lanes(&bil_lanes), Expr::cat_lanes(&near_lanes), Expr::cat_lanes(&gather_lanes), Expr::cat_lanes(&conv_lanes)],
    );
    // Stitch code and sub-operations of the configured kernel.
    let txs = kw.slice(kb, 1).zext(8).add(&Expr::lit(8, 1));
    let tys = kh.slice(kb, 1).zext(8).add(&Expr::lit(8, 1));
    let stitch = txs.eq_lit(2).and(&tys.eq_lit(2)).mux(
        &Expr::lit(2, 1),
        &txs.eq_lit(1).and(&tys.eq_lit(4)).mux(&Expr::lit(2, 2), &txs.eq_lit(4).and(&tys.eq_lit(1)).mux(&Expr::lit(2, 3), &Expr::lit(2, 0))),
    );
    let sbits = p.subop_bits();
    let tiles = txs.zext(16).mul(&tys.zext(16)).add(&Expr::lit(16, 3)).slice(15, 2);
    let subops = tiles.zext(16).slice(sbits - 1, 0);
    b.next(&res_valid, &s2_load_res.or(&res_valid.and(&res_s.ready.not())), None);
    let res_fields = [
        ("kind", s2_kind.clone()),
        ("data", res_data_d),
        ("stitch", s2_conv.mux(&stitch, &Expr::zero(2))),
        ("subops", s2_conv.mux(&subops, &Expr::zero(sbits))),
    ];
    for (name, d) in res_fields {
        let q = b.pipe(&format!("res_{name}_q"), &d, &s2_load_res);
        b.assign(&res_s.field(name), &q);
    }

    // ---- ops in flight ----
    let res_take = res_valid.and(&res_s.ready);
    let iw_ = inflight.width();
    b.next(&inflight, &inflight.add(&op_take.zext(iw_)).sub(&res_take.zext(iw_)), None);

    Ok(Design::of(b.finish()?, p))
}
