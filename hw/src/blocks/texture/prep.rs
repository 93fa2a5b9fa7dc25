//! The accept stage and the prep stages: the op's level and start
//! coordinates, then start mod S by a restoring divider, a few dividend
//! bits per stage, with the word addresses of the level's top rows worked
//! out beside it. The stages form an elastic chain into the sequencer.

use super::config::Config;
use super::{fit, slt, DIV_BITS_PER_STAGE};
use crate::rtl::{bits_for, select, Expr, ModuleBuilder, Stream};
use gpurtl_params::texture::{OpKind, TextureParams};

/// Restoring-division steps over `bits` (most significant first), two at
/// a time: `rem` (below S, as wide as S - 1) takes two bits in and
/// subtracts 3S, 2S or S, the largest that fits (the three subtractions
/// side by side), an odd last bit alone. Returns the remainder and the
/// quotient's lowest bit (`q0` when there are no bits). `name`: the
/// wires of step i, `<name><i>_minus<m>s`.
fn div_steps(b: &mut ModuleBuilder, name: &str, rem: &Expr, q0: &Expr, bits: &[Expr], s: &Expr, s3: &Expr) -> (Expr, Expr) {
    let rw = rem.width();
    let (mut rem, mut q0) = (rem.clone(), q0.clone());
    for (i, pair) in bits.chunks(2).enumerate() {
        let n = pair.len() as u32;
        let v = b.let_(&format!("{name}{i}_in"), &Expr::cat(&[&[rem.clone()][..], pair].concat()));
        let ww = rw + n + 1;
        let multiples = if n == 2 { vec![s.clone(), Expr::cat(&[s.clone(), Expr::bit(false)]), s3.clone()] } else { vec![s.clone()] };
        let (mut r, mut q) = (v.slice(rw - 1, 0), Expr::bit(false));
        for (m, sm) in multiples.iter().enumerate() {
            let t = b.let_(&format!("{name}{i}_minus{}s", m + 1), &v.zext(ww).sub(&sm.zext(ww)));
            b.waive_unused(&t, "the sign says whether it fits; then it is below S, as wide as the remainder");
            let fits = t.bit_at(ww - 1).not();
            r = fits.mux(&t.slice(rw - 1, 0), &r);
            q = fits.mux(&Expr::bit(m % 2 == 0), &q);
        }
        (rem, q0) = (r, q);
    }
    (rem, q0)
}

/// `((y >> by) * pitch) mod 2^aw`: the word offset of the row pair holding
/// texel row `y` (a multiplier of exactly the operands' widths).
pub(super) fn row_offset(y: &Expr, pitch: &Expr, by: u32, aw: u32) -> Expr {
    if y.width() <= by {
        return Expr::zero(aw);
    }
    let yr = y.slice(y.width() - 1, by);
    let pw = yr.width() + pitch.width();
    fit(&yr.zext(pw).mul(&pitch.zext(pw)), aw)
}

/// Named fields of a prep stage, in order (each a register `prep<k>_<name>_q`).
#[derive(Clone, Default)]
pub(super) struct Fields(Vec<(String, Expr)>);

impl Fields {
    pub fn get(&self, name: &str) -> Expr {
        match self.0.iter().find(|(n, _)| n == name) {
            Some((_, e)) => e.clone(),
            None => panic!("prep stage field `{name}` is not carried this far"),
        }
    }
    fn set(&mut self, name: &str, e: &Expr) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = e.clone(),
            None => self.0.push((name.to_string(), e.clone())),
        }
    }
    fn remove(&mut self, name: &str) {
        self.0.retain(|(n, _)| n != name);
    }
    fn map(&self, mut f: impl FnMut(&str, &Expr) -> Expr) -> Fields {
        Fields(self.0.iter().map(|(n, e)| (n.clone(), f(n, e))).collect())
    }
}

/// What stage 0 loads from the op port (`op_s`).
pub(super) fn accept(b: &mut ModuleBuilder, p: &TextureParams, c: &Config, op_s: &Stream) -> Fields {
    let ls = p.size_log();
    let f = p.frac_bits;
    let ub = p.uv_bits();
    let ib = p.int_bits();
    let cw = p.coord_bits();
    let kb = bits_for(p.max_kernel as u64);
    let bx = u32::from(p.banks >= 2);
    let [op_kind, op_u, op_v, op_level, op_chan, op_dx, op_dy] = op_s.get(["kind", "u", "v", "level", "channel", "dx", "dy"]);
    let lvl = b.let_("acc_level", &op_level.gt(&c.levels_m1).mux(&c.levels_m1, &op_level));
    let base_in = b.let_("acc_base", &select(&lvl, &c.bases));
    let is_conv_in = op_kind.eq_lit(OpKind::ConvQuad.code());
    let is_near_in = op_kind.eq_lit(OpKind::Nearest.code());
    let is_gath_in = op_kind.eq_lit(OpKind::Gather4.code());
    let half = Expr::lit(ub + 1, 1 << (f - 1));
    // Stage 0's fields: the op, and per axis its level's S - 1, S, 3S and
    // S - 2 (signed), its address mode (clamp at S = 1 too), the start
    // coordinate and the dividend of its wrap: x, or -1 - x below 0.
    let mut stage0_in = Fields::default();
    stage0_in.set("kind", &op_kind);
    for (axis, coord, off, ksize_m1, m1s, clamp) in
        [("x", &op_u, &op_dx, &c.kw_m1, &c.wm1s, &c.clamp_x), ("y", &op_v, &op_dy, &c.kh_m1, &c.hm1s, &c.clamp_y)]
    {
        let shifted = coord.zext(ub + 1).sub(&half); // u - 2^(F-1), signed
        let x0 = shifted.slice(ub, f).sext(cw); // floor(u' / 2^F)
        stage0_in.set(&format!("frac_{axis}"), &b.let_(&format!("acc_frac_{axis}"), &shifted.slice(f - 1, 0)));
        let gath = x0.add(&off.sext(cw));
        let near = coord.slice(ub - 1, f).zext(cw);
        let half_k = ksize_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)).slice(kb, 1).zext(cw);
        let conv = coord.slice(ib - 1, 0).zext(cw).sub(&half_k);
        let s = is_conv_in.mux(&conv, &is_near_in.mux(&near, &is_gath_in.mux(&gath, &x0)));
        let start = b.let_(&format!("acc_start_{axis}"), &s);
        let m1 = b.let_(&format!("acc_last_{axis}"), &select(&lvl, m1s));
        stage0_in.set(&format!("last_{axis}"), &m1);
        stage0_in.set(&format!("size_{axis}"), &m1.zext(ls + 1).add(&Expr::lit(ls + 1, 1)));
        // 3S = 4(S - 1) + 3 - (S - 1): one subtraction.
        stage0_in.set(&format!("size3_{axis}"), &Expr::cat(&[m1.clone(), Expr::lit(2, 3)]).sub(&m1.zext(ls + 2)));
        stage0_in.set(&format!("last2_{axis}"), &m1.zext(cw).sub(&Expr::lit(cw, 1)));
        stage0_in.set(&format!("clamp_{axis}"), &clamp.or(&m1.eq_lit(0)));
        stage0_in.set(&format!("start_{axis}"), &start);
        let sign = start.bit_at(cw - 1);
        stage0_in.set(&format!("dividend_{axis}"), &start.slice(cw - 2, 0).xor(&sign.repl(cw - 1)));
        if axis == "x" {
            // Words per row: ceil(W / 2^bx) = ((W - 1) >> bx) + 1.
            let pw = ls + 1 - bx;
            let pitch = if ls > bx { m1.slice(ls - 1, bx).zext(pw).add(&Expr::lit(pw, 1)) } else { Expr::lit(pw, 1) };
            stage0_in.set("pitch", &b.let_("acc_pitch", &pitch));
        }
    }
    // The channel, and (with all_channels) above it whether a conv_quad is
    // all-channel (the format is checked where the texels are: it cannot
    // change under an op).
    if p.all_channels {
        let op_all = op_s.field("all_channels");
        stage0_in.set("channel", &Expr::cat(&[op_all.and(&is_conv_in), op_chan]));
    } else {
        stage0_in.set("channel", &op_chan);
    }
    stage0_in.set("base", &base_in);
    stage0_in
}

/// The prep stages: the registers of each (`valid` and its fields) and
/// what each loads.
pub(super) struct Prep {
    pub valid: Vec<Expr>,
    pub regs: Vec<Fields>,
    pub ins: Vec<Fields>,
}

impl Prep {
    /// The stages after accept, stage 0 loading `stage0_in`. Stage 0 holds
    /// the op as accepted; stages 1..=n each take DIV_BITS_PER_STAGE bits
    /// of the dividend (the last stage what is left, fewer) into the
    /// remainder of a restoring divider, two bits per step. The quotient's
    /// lowest bit says which way a mirrored start runs. Beside the divider,
    /// stage 1 multiplies out the top rows' offset and stage 2 adds it to
    /// the base; the last stage wraps the first tile's coordinates.
    pub fn build(b: &mut ModuleBuilder, p: &TextureParams, c: &Config, stage0_in: Fields) -> Prep {
        let ls = p.size_log();
        let cw = p.coord_bits();
        let aw = p.addr_bits;
        let by = u32::from(p.banks == 4);
        let n_div = cw.div_ceil(DIV_BITS_PER_STAGE);
        let n_prep = 1 + n_div as usize;
        let last_stage = n_prep - 1;
        let mut prep_valid = Vec::new();
        let mut prep: Vec<Fields> = Vec::new();
        let mut prep_in: Vec<Fields> = Vec::new();
        for k in 0..n_prep {
            prep_valid.push(b.reg(&format!("prep{k}_valid_q"), 1, 0));
            let d = if k == 0 {
                stage0_in.clone()
            } else {
                let prev = &prep[k - 1];
                let mut d = prev.clone();
                // Stage k takes bits [cw - 2 - 4(k-1) ..] of the dividend (bit cw - 2 its top).
                let hi = cw as i64 - 2 - (DIV_BITS_PER_STAGE * (k as u32 - 1)) as i64;
                let lo = (hi - DIV_BITS_PER_STAGE as i64 + 1).max(0);
                for (axis, mirror) in [("x", &c.mirror_x), ("y", &c.mirror_y)] {
                    let field = |n: &str| prev.get(&format!("{n}_{axis}"));
                    let mut rem = if k == 1 { Expr::zero(ls) } else { field("rem") };
                    let mut q0 = if hi >= 0 { Expr::bit(false) } else { field("quot0") };
                    if hi >= 0 {
                        let dividend = field("dividend");
                        let bits: Vec<Expr> = (lo..=hi).rev().map(|i| dividend.bit_at(i as u32)).collect();
                        let size3 = if bits.len() >= 2 { field("size3") } else { Expr::zero(ls + 2) }; // no pair, no 3S
                        let (r, q) = div_steps(b, &format!("prep{k}_div_{axis}"), &rem, &q0, &bits, &field("size"), &size3);
                        rem = b.let_(&format!("prep{k}_rem_{axis}_d"), &r);
                        q0 = if k == last_stage { b.let_(&format!("prep{k}_quot0_{axis}_d"), &q) } else { q };
                        d.set(&format!("rem_{axis}"), &rem);
                        // The bits below go on; the quotient's lowest bit only
                        // when no later stage divides.
                        if lo > 0 {
                            d.set(&format!("dividend_{axis}"), &dividend.slice(lo as u32 - 1, 0));
                            d.remove(&format!("quot0_{axis}"));
                            if lo == 1 {
                                d.remove(&format!("size3_{axis}")); // one step left: S alone
                            }
                        } else {
                            for n in ["dividend", "size", "size3"] {
                                d.remove(&format!("{n}_{axis}"));
                            }
                            d.set(&format!("quot0_{axis}"), &q0);
                        }
                    }
                    if k == last_stage {
                        // The first tile's coordinate 0: repeat below 0 runs
                        // down from S - 1 ((-1 - x) mod S = S - 1 - (x' mod S));
                        // mirror folds odd quotients (x' mod 2S >= S) down from
                        // S - 1 and runs down there (up for -1 - x).
                        let (start, last) = (field("start"), field("last"));
                        let neg = start.bit_at(cw - 1);
                        let flip = mirror.mux(&q0, &neg);
                        let wrapped = flip.mux(&last.sub(&rem), &rem);
                        let inside = slt(&last.zext(cw), &start).mux(&last, &start.slice(ls - 1, 0));
                        let clamped = neg.mux(&Expr::zero(ls), &inside);
                        let at = field("clamp").mux(&clamped, &wrapped);
                        d.set(&format!("first_{axis}"), &b.let_(&format!("prep{k}_first_{axis}_d"), &at));
                        d.set(&format!("first_up_{axis}"), &q0.xor(&neg).not());
                        for n in ["rem", "quot0"] {
                            d.remove(&format!("{n}_{axis}"));
                        }
                    }
                }
                if k == 1 {
                    // The top rows (S - 1 and S - 2 on y) for the walk's edges:
                    // ((S - 1) >> by) * pitch; (S - 2) >> by is one row less
                    // unless by = 1 and S - 1 is odd.
                    let (pitch, last_y, base) = (prev.get("pitch"), prev.get("last_y"), prev.get("base"));
                    d.set("top_offset", &b.let_("prep1_top_offset_d", &row_offset(&last_y, &pitch, by, aw)));
                    let pa = fit(&pitch, aw);
                    d.set("base_up", &base.add(&pa));
                    d.set("base_down", &base.sub(&pa));
                    let one_less = if by == 1 { last_y.bit_at(0).not() } else { Expr::bit(true) };
                    d.set("base_top2", &base.sub(&one_less.mux(&pa, &Expr::zero(aw))));
                }
                if k == 2 {
                    let top = prev.get("top_offset");
                    d.set("row_top1", &prev.get("base").add(&top));
                    d.set("row_top2", &prev.get("base_top2").add(&top));
                    d.remove("top_offset");
                    d.remove("base_top2");
                }
                d
            };
            let regs = d.map(|n, e| b.reg_noreset(&format!("prep{k}_{n}_q"), e.width()));
            prep_in.push(d);
            prep.push(regs);
        }
        Prep { valid: prep_valid, regs: prep, ins: prep_in }
    }

    /// The last stage's registers: the op the sequencer loads.
    pub fn last(&self) -> &Fields {
        &self.regs[self.regs.len() - 1]
    }

    /// The moves of the stages, each when the next is empty or moves on,
    /// back from the sequencer (`seq_free`: it takes an op this cycle) to
    /// the op port, which is ready when no configuration write is offered
    /// (`cfg_valid`). Returns the op handshake and the sequencer's load.
    pub fn advance(&self, b: &mut ModuleBuilder, seq_free: &Expr, cfg_valid: &Expr, op_s: &Stream) -> (Expr, Expr) {
        let n_prep = self.valid.len();
        let mut free_next = seq_free.clone();
        let mut moves = vec![Expr::bit(false); n_prep];
        for k in (0..n_prep).rev() {
            moves[k] = b.let_(&format!("prep{k}_move"), &self.valid[k].and(&free_next));
            free_next = self.valid[k].not().or(&moves[k]);
        }
        let op_ready = b.let_("op_ready", &cfg_valid.not().and(&free_next));
        b.assign(&op_s.ready, &op_ready);
        let op_take = b.let_("op_take", &op_s.valid.and(&op_ready));
        for k in 0..n_prep {
            let load = if k == 0 { op_take.clone() } else { moves[k - 1].clone() };
            b.next(&self.valid[k], &load.or(&self.valid[k].and(&moves[k].not())), None);
            for ((_, r), (_, d)) in self.regs[k].0.iter().zip(&self.ins[k].0) {
                b.next(r, d, Some(&load));
            }
        }
        (op_take, moves[n_prep - 1].clone())
    }
}
