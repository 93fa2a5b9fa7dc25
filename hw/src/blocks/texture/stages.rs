//! S1 (a whole tile), S2 (the filter inputs, or the pixels' register banks
//! and weights, and the stitch codes of the op's sub-operations so far) and
//! the result register: 16 multipliers in 4 groups (a 17-bit texel or
//! channel by a weight), with `all_channels` 48 more (an rgba8 channel by a
//! weight) for the g, b, a sums of an all-channel conv_quad, the conv
//! accumulators (4 per pixel, else 1), the result's lanes (16, else 4).

use super::config::Config;
use super::memory::Tags;
use crate::rtl::{bits_for, popcount, select, sum_tree, Expr, ModuleBuilder, Stream};
use gpurtl_params::texture::{Broadcast, OpKind, TextureParams};

/// The stages' valids and moves: each moves on when the next is free or
/// moves on; S2 holds a conv op's tiles until its last.
pub(super) struct Stages {
    s1_valid: Expr,
    s2_valid: Expr,
    pub res_valid: Expr,
    s2_kind: Expr,
    s2_op_last: Expr,
    s2_conv: Expr,
    s2_ends: Expr,
    s2_move: Expr,
    s1_move: Expr,
    pub s1_free: Expr,
}

/// S1's registers.
pub(super) struct S1 {
    tex: Vec<Expr>,
    kind: Expr,
    op_last: Expr,
    fa: Expr,
    fb: Expr,
    chan: Expr,
    ti: Expr,
    tj: Expr,
    mask: Expr,
}

/// S2's registers: the texels, the pixels' register banks and the
/// multipliers' second operands (per group).
pub(super) struct S2 {
    tex: Vec<Expr>,
    pix: Vec<Vec<Expr>>,
    w: Vec<Vec<Expr>>,
    chan: Expr,
    /// The op's sub-operations' stitch codes, 2 bits each.
    stitch: Expr,
}

/// Channel `c` (its low 2 bits) of a texel word in the configured format (16 bits).
fn channel(cfg: &Config, t: &Expr, c: &Expr) -> Expr {
    let byte = select(&c.slice(1, 0), &(0..4).map(|n| t.slice(8 * n + 7, 8 * n)).collect::<Vec<_>>()).zext(16);
    cfg.is_rgba.mux(&byte, &cfg.is_r16.mux(&t.slice(15, 0), &t.slice(7, 0).zext(16)))
}

impl Stages {
    /// The valids and moves, back from the result port (`res_s`).
    pub fn handshakes(b: &mut ModuleBuilder, res_s: &Stream) -> Stages {
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
        Stages { s1_valid, s2_valid, res_valid, s2_kind, s2_op_last, s2_conv, s2_ends, s2_move, s1_move, s1_free }
    }

    /// S1 loads a whole tile when its last pass is collected (`collect`;
    /// `tile`: its texels, `tags`: the head pass's fields).
    pub fn s1(&self, b: &mut ModuleBuilder, tags: &Tags, collect: &Expr, tile: &[Expr]) -> S1 {
        let Stages { s1_valid, s1_move, .. } = self;
        let Tags { tile_last: h_tile_last, op_last: h_op_last, kind: h_kind, fa: h_fa, fb: h_fb, chan: h_chan, ti: h_ti, tj: h_tj, mask: h_mask, .. } = tags;
        let s1_load = b.let_("s1_load", &collect.and(h_tile_last));
        b.next(s1_valid, &s1_load.or(&s1_valid.and(&s1_move.not())), None);
        let s1_tex: Vec<Expr> = (0..4).map(|t| b.pipe(&format!("s1_texel{t}_q"), &tile[t], &s1_load)).collect();
        let s1_kind = b.pipe("s1_kind_q", h_kind, &s1_load);
        let s1_op_last = b.pipe("s1_op_last_q", h_op_last, &s1_load);
        let s1_fa = b.pipe("s1_frac_x_q", h_fa, &s1_load);
        let s1_fb = b.pipe("s1_frac_y_q", h_fb, &s1_load);
        let s1_chan = b.pipe("s1_channel_q", h_chan, &s1_load);
        let s1_ti = b.pipe("s1_tile_i_q", h_ti, &s1_load);
        let s1_tj = b.pipe("s1_tile_j_q", h_tj, &s1_load);
        let s1_mask = b.pipe("s1_mask_q", h_mask, &s1_load);
        S1 { tex: s1_tex, kind: s1_kind, op_last: s1_op_last, fa: s1_fa, fb: s1_fb, chan: s1_chan, ti: s1_ti, tj: s1_tj, mask: s1_mask }
    }

    /// S1 -> S2: the texels on, the bilinear weights, the conv tile's
    /// texels into the pixels' register banks (whole or selective) or the
    /// one bank they share, with their weights; `reg_writes_o` counts the
    /// bank writes. A conv tile that ends a sub-operation writes its stitch
    /// code.
    pub fn s2(&self, b: &mut ModuleBuilder, p: &TextureParams, cfg: &Config, s1: &S1, reg_writes_o: &Expr) -> S2 {
        let Stages { s2_valid, s2_kind, s2_op_last, s2_move, s1_move, .. } = self;
        let S1 { tex: s1_tex, kind: s1_kind, op_last: s1_op_last, fa: s1_fa, fb: s1_fb, chan: s1_chan, ti: s1_ti, tj: s1_tj, mask: s1_mask } = s1;
        let f = p.frac_bits;
        let mk = p.max_kernel;
        let tb = p.tile_bits();
        let wb = p.weight_bits;
        // S1 -> S2: the pixels' register banks and their weights.
        let s1_conv = s1_kind.eq_lit(OpKind::ConvQuad.code());
        b.next(s2_valid, &s1_move.or(&s2_valid.and(&s2_move.not())), None);
        b.next(s2_kind, s1_kind, Some(s1_move));
        b.next(s2_op_last, s1_op_last, Some(s1_move));
        let s2_tex: Vec<Expr> = (0..4).map(|t| b.pipe(&format!("s2_texel{t}_q"), &s1_tex[t], s1_move)).collect();
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
        let s2_chan = b.pipe("s2_channel_q", s1_chan, s1_move);
        // Weight rows 2j-1, 2j, 2j+1 and columns 2i-1, 2i, 2i+1 (index +1, so
        // that row -1 is the zero row at index 0).
        let zero_w = Expr::zero(wb);
        let pad = |items: Vec<Expr>| -> Vec<Expr> {
            let mut v = vec![Expr::zero(items[0].width())];
            v.extend(items);
            v
        };
        let row_items: Vec<Expr> = pad(cfg.wrows.iter().map(|r| Expr::cat_lanes(r)).collect());
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
        let kwx = cfg.kw.zext(iw);
        let khx = cfg.kh.zext(iw);
        let mut writes = Vec::new();
        let mut s2_w = vec![Vec::new(); 4];
        let mut s2_pix = vec![Vec::new(); 4];
        // A register holds the channel, or (with all_channels) an
        // all-channel op's whole rgba8 texel.
        let rw = if p.all_channels { 32 } else { 16 };
        let s1_all = p.all_channels.then(|| b.let_("s1_all_channels", &s1_chan.bit_at(2).and(&cfg.is_rgba)));
        let s1_vals: Vec<Expr> = (0..4)
            .map(|t| {
                let ch = channel(cfg, &s1_tex[t], s1_chan).zext(rw);
                let v = match &s1_all {
                    Some(all) => all.mux(&s1_tex[t], &ch),
                    None => ch,
                };
                b.let_(&format!("s1_value{t}"), &v)
            })
            .collect();
        // broadcast = shared: one bank of 4 registers, each fetched texel
        // written once, read by all four pixels.
        let shared: Vec<Expr> = if p.broadcast == Broadcast::Shared {
            (0..4usize)
                .map(|t| {
                    let we = b.let_(&format!("shared_we{t}"), &s1_mask.bit_at(t as u32).and(&s1_conv));
                    writes.push(we.and(s1_move));
                    let reg = b.reg_noreset(&format!("shared_r{t}_q"), rw);
                    b.next(&reg, &s1_vals[t], Some(&we.and(s1_move)));
                    reg
                })
                .collect()
        } else {
            Vec::new()
        };
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
                    Broadcast::Whole => Some(s1_mask.bit_at(t as u32)),
                    Broadcast::Selective => Some(inside.clone()),
                    Broadcast::Shared => None,
                };
                if let Some(we) = we {
                    let we = b.let_(&format!("pix{p_}_we{t}"), &we.and(&s1_conv));
                    writes.push(we.and(s1_move));
                    let reg = b.reg_noreset(&format!("pix{p_}_r{t}_q"), rw);
                    b.next(&reg, &s1_vals[t], Some(&we.and(s1_move)));
                    s2_pix[p_].push(reg);
                } else {
                    s2_pix[p_].push(shared[t].clone());
                }
                let w = inside.mux(&win[(oy + 1 - dy) as usize][(ox + 1 - dx) as usize], &zero_w).sext(bbw);
                // The multiplier's second operand: the pixel's weight, or the
                // texel's bilinear weight (group p is then channel p).
                let w = s1_conv.mux(&w, &bil_w[t]);
                s2_w[p_].push(b.pipe(&format!("mul{p_}_b{t}_q"), &w, s1_move));
            }
        }
        let reg_writes = b.reg("reg_writes_q", 32, 0);
        b.next(&reg_writes, &reg_writes.add(&popcount(&writes, 32)), None);
        b.assign(reg_writes_o, &reg_writes);
        let stitch = self.stitch_codes(b, p, cfg, s1);
        S2 { tex: s2_tex, pix: s2_pix, w: s2_w, chan: s2_chan, stitch }
    }

    /// The stitch codes of a conv op's sub-operations (docs/texture.md,
    /// "Tiles"), worked out as its tiles move S1 -> S2 in raster order: a
    /// count of the sub-operation's tiles so far, its first tile's row and
    /// whether every tile since was in it; a tile that ends a
    /// sub-operation (its fourth, or the op's last) writes the code into
    /// the sub-operation's slot. The op's first tile clears the other slots.
    fn stitch_codes(&self, b: &mut ModuleBuilder, p: &TextureParams, cfg: &Config, s1: &S1) -> Expr {
        let Stages { s1_move, .. } = self;
        let S1 { kind: s1_kind, op_last: s1_op_last, ti: s1_ti, tj: s1_tj, .. } = s1;
        let kb = bits_for(p.max_kernel as u64);
        let tb = p.tile_bits();
        let sm = p.max_subops();
        let sb = bits_for(sm as u64);
        let conv_move = b.let_("stitch_move", &s1_move.and(&s1_kind.eq_lit(OpKind::ConvQuad.code())));
        let first = b.let_("stitch_op_first", &s1_ti.eq_lit(0).and(&s1_tj.eq_lit(0)));
        let n = b.reg_noreset("subop_tiles_q", 2);
        let idx = b.reg_noreset("subop_index_q", sb);
        let j0 = b.reg_noreset("subop_row_q", tb);
        let one_row = b.reg_noreset("subop_one_row_q", 1);
        let codes = b.reg_noreset("stitch_codes_q", 2 * sm);
        // This tile's place in its sub-operation and op.
        let n_now = first.mux(&Expr::zero(2), &n);
        let idx_now = first.mux(&Expr::zero(sb), &idx);
        let starts = n_now.eq_lit(0);
        let j0_now = starts.mux(s1_tj, &j0);
        let row_now = starts.or(&one_row.and(&s1_tj.eq(&j0)));
        let ends = b.let_("subop_ends", &n_now.eq_lit(3).or(s1_op_last));
        // Its code, should it end the sub-operation (k = n_now + 1 tiles).
        let two_plus = n_now.ne(&Expr::zero(2));
        let tx_m1 = cfg.kw.slice(kb, 1).zext(tb.max(kb));
        let tx1 = tx_m1.eq_lit(0);
        let tx2 = tx_m1.eq_lit(1);
        use gpurtl_params::texture::Stitch;
        let lit = |s: Stitch| Expr::lit(2, s.code());
        let code = two_plus.and(&row_now).mux(
            &lit(Stitch::S8x2),
            &two_plus.and(&tx1).mux(&lit(Stitch::S2x8), &n_now.eq_lit(3).and(&tx2).mux(&lit(Stitch::S4x4), &lit(Stitch::None))),
        );
        let code = b.let_("subop_code", &code);
        let slots: Vec<Expr> = (0..sm)
            .map(|s| {
                let old = first.mux(&Expr::zero(2), &codes.slice(2 * s + 1, 2 * s));
                ends.and(&idx_now.eq_lit(s as u64)).mux(&code, &old)
            })
            .collect();
        b.next(&codes, &Expr::cat_lanes(&slots), Some(&conv_move));
        b.next(&n, &n_now.add(&Expr::lit(2, 1)), Some(&conv_move));
        b.next(&idx, &idx_now.add(&n_now.eq_lit(3).zext(sb)), Some(&conv_move));
        b.next(&j0, &j0_now, Some(&conv_move));
        b.next(&one_row, &row_now, Some(&conv_move));
        codes
    }

    /// S2 -> result: the multipliers, the conv accumulators, and the result
    /// register on the result port (`res_s`).
    pub fn result(&self, b: &mut ModuleBuilder, p: &TextureParams, cfg: &Config, s2: &S2, res_s: &Stream) {
        let Stages { res_valid, s2_kind, s2_conv, s2_ends, s2_move, .. } = self;
        let S2 { tex: s2_tex, pix: s2_pix, w: s2_w, chan: s2_chan, stitch: s2_stitch } = s2;
        let f = p.frac_bits;
        let kb = bits_for(p.max_kernel as u64);
        let ab = p.acc_bits;
        let lw = p.lane_bits();
        let bbw = p.weight_bits.max(2 * f + 2);
        let s2_load_res = b.let_("res_load", &s2_move.and(s2_ends));
        // 16 multipliers, 4 groups of 4: group p sums pixel p's products
        // (conv_quad) or channel p's bilinear terms.
        let sw = (17 + bbw + 2).max(ab);
        let lane_ch: Vec<Expr> = (0..4u64).map(|c| Expr::lit(2, c)).collect();
        let s2_all = p.all_channels.then(|| b.let_("s2_all_channels", &s2_chan.bit_at(2).and(&cfg.is_rgba)));
        let wb = p.weight_bits;
        let mut conv_lanes = Vec::new();
        let mut bil_lanes = Vec::new();
        let mut near_lanes = Vec::new();
        for c in 0..4usize {
            let exists = if c == 0 { Expr::bit(true) } else { cfg.is_rgba.clone() };
            let vals: Vec<Expr> = (0..4)
                .map(|t| b.let_(&format!("s2_ch{c}_texel{t}"), &exists.mux(&channel(cfg, &s2_tex[t], &lane_ch[c]), &Expr::zero(16))))
                .collect();
            let prods: Vec<Expr> = (0..4)
                .map(|t| {
                    // Pixel c's register: its channel, or an all-channel op's r.
                    let reg = &s2_pix[c][t];
                    let r = match &s2_all {
                        Some(all) => all.mux(&reg.slice(7, 0).zext(16), &reg.slice(15, 0)),
                        None => reg.clone(),
                    };
                    let a = s2_conv.mux(&r, &vals[t]);
                    b.let_(&format!("mul{c}_p{t}"), &a.zext(17).smul(&s2_w[c][t]).sext(sw))
                })
                .collect();
            let sum = b.let_(&format!("mul{c}_sum"), &sum_tree(&prods, sw));
            let acc = b.reg(&format!("acc{c}_q"), ab, 0);
            let total = b.let_(&format!("acc{c}_next"), &acc.add(&sum.slice(ab - 1, 0)));
            b.next(&acc, &s2_ends.mux(&Expr::zero(ab), &total), Some(&s2_move.and(s2_conv)));
            conv_lanes.push(total.zext(lw));
            let rounded = sum.add(&Expr::lit(sw, 1 << (2 * f - 1))).slice(2 * f + 15, 2 * f);
            bil_lanes.push(rounded.zext(lw));
            near_lanes.push(vals[0].zext(lw));
        }
        // The g, b and a sums of an all-channel conv_quad (all_channels
        // only): pixel p's channel c (1..3) by its weights (the conv
        // weights, low wb bits of the multiplier operands), accumulator
        // (p, c), lane 4c + p.
        let cw_ = (9 + wb + 2).max(ab);
        let mut chan_lanes = vec![Vec::new(); if s2_all.is_some() { 3 } else { 0 }];
        for (c, lanes) in chan_lanes.iter_mut().enumerate() {
            let Some(s2_all) = &s2_all else { break };
            let c = c + 1;
            for p_ in 0..4usize {
                let prods: Vec<Expr> = (0..4)
                    .map(|t| {
                        let byte = s2_pix[p_][t].slice(8 * c as u32 + 7, 8 * c as u32).zext(9);
                        b.let_(&format!("mul{p_}_ch{c}_p{t}"), &byte.smul(&s2_w[p_][t].slice(wb - 1, 0)).sext(cw_))
                    })
                    .collect();
                let sum = b.let_(&format!("mul{p_}_ch{c}_sum"), &sum_tree(&prods, cw_));
                if cw_ > ab {
                    b.waive_unused(&sum, "the accumulator wraps at acc_bits: the sum's bits above are not needed");
                }
                let acc = b.reg(&format!("acc{p_}_ch{c}_q"), ab, 0);
                let total = b.let_(&format!("acc{p_}_ch{c}_next"), &acc.add(&sum.slice(ab - 1, 0)));
                b.next(&acc, &s2_ends.mux(&Expr::zero(ab), &total), Some(&s2_move.and(s2_conv).and(s2_all)));
                lanes.push(s2_all.mux(&total, &Expr::zero(ab)).zext(lw));
            }
        }
        let gather_lanes: Vec<Expr> = (0..4).map(|t| channel(cfg, &s2_tex[t], s2_chan).zext(lw)).collect();
        let conv_all: Vec<Expr> = conv_lanes.iter().chain(chan_lanes.iter().flatten()).cloned().collect();
        // Four lanes, and with all_channels 12 more, 0 but for an all-channel conv_quad.
        let widen = |four: &[Expr]| {
            let lanes = Expr::cat_lanes(four);
            if p.lanes() > 4 {
                Expr::cat(&[Expr::zero((p.lanes() - 4) * lw), lanes])
            } else {
                lanes
            }
        };
        let res_data_d = select(s2_kind, &[widen(&bil_lanes), widen(&near_lanes), widen(&gather_lanes), Expr::cat_lanes(&conv_all)]);
        // Sub-operations of the configured kernel.
        let txs = cfg.kw.slice(kb, 1).zext(8).add(&Expr::lit(8, 1));
        let tys = cfg.kh.slice(kb, 1).zext(8).add(&Expr::lit(8, 1));
        let sbits = p.subop_bits();
        let tiles = txs.zext(16).mul(&tys.zext(16)).add(&Expr::lit(16, 3)).slice(15, 2);
        let subops = tiles.zext(16).slice(sbits - 1, 0);
        b.next(res_valid, &s2_load_res.or(&res_valid.and(&res_s.ready.not())), None);
        let res_fields = [
            ("kind", s2_kind.clone()),
            ("data", res_data_d),
            ("stitch", s2_conv.mux(s2_stitch, &Expr::zero(p.stitch_bits()))),
            ("subops", s2_conv.mux(&subops, &Expr::zero(sbits))),
        ];
        for (name, d) in res_fields {
            let q = b.pipe(&format!("res_{name}_q"), &d, &s2_load_res);
            b.assign(&res_s.field(name), &q);
        }
    }
}
