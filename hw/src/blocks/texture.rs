//! Texture unit (seed `002_bad8977c8705306b.txt` §61-84, §110-111, claims
//! 1-20; docs/texture.md).
//!
//! bilinear and nearest samples, gather4 with the filter bypassed (any mip
//! level, integer offsets), and `conv_quad`: the union patch of a 2x2 quad's
//! kernels fetched once, in 2x2 tiles, broadcast to the four pixels'
//! register banks (whole or selective) and multiplied-accumulated.
//!
//! Pipeline: accept (level lookup, start coordinate, its wrap by a
//! restoring divider, two bits per step) -> sequencer (one tile at a time,
//! its columns and rows kept wrapped and stepped two texels per tile, the
//! rows' word addresses with them; a tile is one or more *passes*, each at
//! most one texel per bank) -> per-bank request registers
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

/// Bits of the dividend one restoring-division stage consumes (docs/texture.md, prep stages).
pub const DIV_BITS_PER_STAGE: u32 = 4;

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
fn row_offset(y: &Expr, pitch: &Expr, by: u32, aw: u32) -> Expr {
    if y.width() <= by {
        return Expr::zero(aw);
    }
    let yr = y.slice(y.width() - 1, by);
    let pw = yr.width() + pitch.width();
    fit(&yr.zext(pw).mul(&pitch.zext(pw)), aw)
}

/// Named fields of a prep stage, in order (each a register `prep<k>_<name>_q`).
#[derive(Clone, Default)]
struct Fields(Vec<(String, Expr)>);

impl Fields {
    fn get(&self, name: &str) -> Expr {
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

/// One texel column (or row) of the tile walk: `at` the texel index after
/// the address mode (0..S-1), `up` whether a mirrored coordinate runs up at
/// its next step, `raw` the coordinate before the mode (for clamp).
#[derive(Clone)]
struct Coord {
    at: Expr,
    up: Expr,
    raw: Expr,
}

impl Coord {
    fn mux(sel: &Expr, t: &Coord, f: &Coord) -> Coord {
        Coord { at: sel.mux(&t.at, &f.at), up: sel.mux(&t.up, &f.up), raw: sel.mux(&t.raw, &f.raw) }
    }
    fn load(&self, b: &mut ModuleBuilder, d: &Coord, en: &Expr) {
        b.next(&self.at, &d.at, Some(en));
        b.next(&self.up, &d.up, Some(en));
        b.next(&self.raw, &d.raw, Some(en));
    }
}

/// An op's address mode on one axis: `clamp` (also any mode at S = 1, where
/// every coordinate is texel 0), else `mirror` or repeat; `last` = S - 1,
/// `last2` = S - 2 (signed, as wide as `raw`).
struct AxisRule {
    clamp: Expr,
    mirror: Expr,
    last: Expr,
    last2: Expr,
}

/// How a coordinate moved one step on: up or down by one texel, or round
/// from S - 1 to 0 (repeat); otherwise it stayed.
struct Move1 {
    up: Expr,
    down: Expr,
    wrap: Expr,
}

/// The coordinate one texel on (`name`: the wire of the new index).
fn step1(b: &mut ModuleBuilder, name: &str, c: &Coord, r: &AxisRule) -> (Coord, Move1) {
    let (vw, cw) = (c.at.width(), c.raw.width());
    let raw = b.let_(&format!("{name}_raw"), &c.raw.add(&Expr::lit(cw, 1)));
    let below = c.raw.bit_at(cw - 1);
    let over = slt(&c.raw, &r.last.zext(cw)).not(); // raw >= S - 1
    let clamped = over.mux(&r.last, &raw.bit_at(cw - 1).mux(&Expr::zero(vw), &raw.slice(vw - 1, 0)));
    let at_top = c.at.eq(&r.last);
    let at_bottom = c.at.eq_lit(0);
    let inc = b.let_(&format!("{name}_plus1"), &c.at.add(&Expr::lit(vw, 1)));
    let dec = b.let_(&format!("{name}_minus1"), &c.at.sub(&Expr::lit(vw, 1)));
    let mirrored = c.up.mux(&at_top.mux(&r.last, &inc), &at_bottom.mux(&Expr::zero(vw), &dec));
    let repeated = at_top.mux(&Expr::zero(vw), &inc);
    let at = b.let_(name, &r.clamp.mux(&clamped, &r.mirror.mux(&mirrored, &repeated)));
    let up = c.up.mux(&at_top.not(), &at_bottom);
    let wraps = r.clamp.not();
    let moved = Move1 {
        up: r.clamp.mux(&below.or(&over).not(), &r.mirror.mux(&c.up, &Expr::bit(true)).and(&at_top.not())),
        down: wraps.and(&r.mirror).and(&c.up.not()).and(&at_bottom.not()),
        wrap: wraps.and(&r.mirror.not()).and(&at_top),
    };
    (Coord { at, up, raw }, moved)
}

/// How a row's word address follows a step of two: one row pair on
/// (`inc`) or back (`dec`), else an edge row: `top` S - 1 (`bit`) or
/// S - 2, or the bottom row `bit` (0 or 1).
struct Move2 {
    inc: Expr,
    dec: Expr,
    top: Expr,
    bit: Expr,
}

/// The coordinate two texels on: the next tile's (`name`: the wire of the
/// new index). Repeat wraps once at most (S >= 2); mirror turns at an edge.
fn step2(b: &mut ModuleBuilder, name: &str, c: &Coord, r: &AxisRule) -> (Coord, Move2) {
    let (vw, cw) = (c.at.width(), c.raw.width());
    let raw = b.let_(&format!("{name}_raw"), &c.raw.add(&Expr::lit(cw, 2)));
    let below = c.raw.bit_at(cw - 1);
    let over = slt(&c.raw, &r.last2).not(); // raw >= S - 2
    let clamped = over.mux(&r.last, &raw.bit_at(cw - 1).mux(&Expr::zero(vw), &raw.slice(vw - 1, 0)));
    // raw is -1 or -2: raw + 2 is 1 or 0.
    let near = c.raw.slice(cw - 1, 1).all();
    let last2 = r.last2.slice(vw - 1, 0);
    let diff = b.let_(&format!("{name}_from_last2"), &c.at.zext(vw + 1).sub(&last2.zext(vw + 1)));
    let high = diff.bit_at(vw).not(); // at >= S - 2: repeat wraps, mirror turns down
    let low = if vw > 1 { c.at.slice(vw - 1, 1).eq_lit(0) } else { Expr::bit(true) }; // at < 2
    // (At a 1-bit index S <= 2: every step turns or wraps, never +-2.)
    let two = if vw > 1 { Expr::lit(vw, 2) } else { Expr::zero(vw) };
    let inc = b.let_(&format!("{name}_plus2"), &c.at.add(&two));
    let dec = b.let_(&format!("{name}_minus2"), &c.at.sub(&two));
    // At the top a mirrored S - 2 goes to S - 1 and S - 1 to S - 2.
    let to_last = c.at.bit_at(0).eq(&r.last2.bit_at(0));
    let turned_down = to_last.mux(&r.last, &last2);
    let turned_up = c.at.bit_at(0).not().zext(vw);
    let mirrored = c.up.mux(&high.mux(&turned_down, &inc), &low.mux(&turned_up, &dec));
    let repeated = high.mux(&diff.slice(vw - 1, 0), &inc);
    let at = b.let_(name, &r.clamp.mux(&clamped, &r.mirror.mux(&mirrored, &repeated)));
    let up = c.up.mux(&high.not(), &low);
    let wraps = r.clamp.not();
    let moved = Move2 {
        inc: r.clamp.mux(&below.or(&over).not(), &r.mirror.mux(&c.up, &Expr::bit(true)).and(&high.not())),
        dec: wraps.and(&r.mirror).and(&c.up.not()).and(&low.not()),
        top: r.clamp.mux(&over, &r.mirror.and(&c.up)),
        bit: r.clamp.mux(
            &over.or(&near.and(&c.raw.bit_at(0))),
            &r.mirror.mux(&c.up.mux(&to_last, &c.at.bit_at(0).not()), &c.at.bit_at(0).xor(&r.last2.bit_at(0))),
        ),
    };
    (Coord { at, up, raw }, moved)
}

pub fn build(p: &TextureParams) -> Result<Design, RtlError> {
    let ls = p.size_log();
    let f = p.frac_bits;
    let ub = p.uv_bits();
    let ib = p.int_bits();
    let cw = p.coord_bits();
    let lb = p.level_bits();
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
    // Ops in the unit: at most the PD prep stages, the sequencer, one per
    // tag queue entry, S1, S2 and the result register.
    let most_inflight = (1 + cw.div_ceil(DIV_BITS_PER_STAGE)) as u64 + depth as u64 + 4;
    let inflight = b.reg("inflight_q", bits_for(most_inflight), 0);
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

    // ---- accept: level, start coordinates ----
    let lvl = b.let_("acc_level", &op_level.gt(&levels_m1).mux(&levels_m1, &op_level));
    let base_in = b.let_("acc_base", &select(&lvl, &bases));
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
        [("x", &op_u, &op_dx, &kw_m1, &wm1s, &clamp_x), ("y", &op_v, &op_dy, &kh_m1, &hm1s, &clamp_y)]
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
    stage0_in.set("channel", &op_chan);
    stage0_in.set("base", &base_in);

    // ---- prep stages: the op with its level, then start mod S ----
    // Stage 0 holds the op as accepted; stages 1..=n each take
    // DIV_BITS_PER_STAGE bits of the dividend (the last stage what is left,
    // fewer) into the remainder of a restoring divider, two bits per step.
    // The quotient's lowest bit says which way a mirrored start runs. Beside
    // the divider, stage 1 multiplies out the top rows' offset and stage 2
    // adds it to the base; the last stage wraps the first tile's coordinates.
    // Each stage moves on when the next is empty or moves on.
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
            for (axis, mirror) in [("x", &mirror_x), ("y", &mirror_y)] {
                let field = |n: &str| prev.get(&format!("{n}_{axis}"));
                let mut rem = if k == 1 { Expr::zero(ls) } else { field("rem") };
                let mut q0 = if hi >= 0 { Expr::bit(false) } else { field("quot0") };
                if hi >= 0 {
                    let dividend = field("dividend");
                    let bits: Vec<Expr> = (lo..=hi).rev().map(|i| dividend.bit_at(i as u32)).collect();
                    let size3 = if bits.len() >= 2 { field("size3") } else { Expr::zero(ls + 2) }; // no pair, no 3S
                    let (r, q) = div_steps(&mut b, &format!("prep{k}_div_{axis}"), &rem, &q0, &bits, &field("size"), &size3);
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
    let pl = prep[last_stage].clone();
    let pk = pl.get("kind");
    // Tiles of the op, minus one per axis: ceil((K + 1) / 2) - 1 = K >> 1 with K = size.
    let tiles_x_m1 = kw.slice(kb, 1).slice(tb - 1, 0);
    let tiles_y_m1 = kh.slice(kb, 1).slice(tb - 1, 0);
    let kw_even = kw.bit_at(0).not();
    let kh_even = kh.bit_at(0).not();

    // ---- sequencer ----
    let seq_valid = b.reg("seq_valid_q", 1, 0);
    let seq_kind = b.reg_noreset("seq_kind_q", 2);
    let seq_fa = b.reg_noreset("seq_frac_x_q", f);
    let seq_fb = b.reg_noreset("seq_frac_y_q", f);
    let seq_chan = b.reg_noreset("seq_channel_q", 2);
    // The op's address rule on each axis, and the word addresses of its
    // edge rows: row 0 (the base) and row 1, rows S - 1 and S - 2.
    let rule_regs = |b: &mut ModuleBuilder, axis: &str, mirror: &Expr| AxisRule {
        clamp: b.reg_noreset(&format!("seq_clamp_{axis}_q"), 1),
        mirror: mirror.clone(),
        last: b.reg_noreset(&format!("seq_last_{axis}_q"), ls),
        last2: b.reg_noreset(&format!("seq_last2_{axis}_q"), cw),
    };
    let rule_x = rule_regs(&mut b, "x", &mirror_x);
    let rule_y = rule_regs(&mut b, "y", &mirror_y);
    let seq_base = b.reg_noreset("seq_base_q", aw);
    let seq_row_one = if by == 0 { b.reg_noreset("seq_row_one_q", aw) } else { seq_base.clone() };
    let seq_row_step = b.reg_noreset("seq_row_step_q", aw);
    let seq_row_top1 = b.reg_noreset("seq_row_top1_q", aw);
    let seq_row_top2 = b.reg_noreset("seq_row_top2_q", aw);
    let ti = b.reg_noreset("tile_i_q", tb);
    let tj = b.reg_noreset("tile_j_q", tb);
    // The current tile's columns and rows (coordinates after the address
    // mode), the first tile's columns (each tile row starts there again),
    // and the word address of each row's first texel.
    let coord_regs = |b: &mut ModuleBuilder, name: &str| Coord {
        at: b.reg_noreset(&format!("{name}_q"), ls),
        up: b.reg_noreset(&format!("{name}_up_q"), 1),
        raw: b.reg_noreset(&format!("{name}_raw_q"), cw),
    };
    let tile_x: Vec<Coord> = (0..2).map(|k| coord_regs(&mut b, &format!("tile_x{k}"))).collect();
    let first_x: Vec<Coord> = (0..2).map(|k| coord_regs(&mut b, &format!("first_x{k}"))).collect();
    let tile_y: Vec<Coord> = (0..2).map(|k| coord_regs(&mut b, &format!("tile_y{k}"))).collect();
    let row_addr: Vec<Expr> = (0..2).map(|k| b.reg_noreset(&format!("row{k}_addr_q"), aw)).collect();
    let todo = b.reg_noreset("todo_q", 4);
    let tile_mask = b.reg_noreset("tile_mask_q", 4);
    let seq_conv = seq_kind.eq_lit(OpKind::ConvQuad.code());
    let seq_txm1 = seq_conv.mux(&tiles_x_m1, &Expr::zero(tb));
    let seq_tym1 = seq_conv.mux(&tiles_y_m1, &Expr::zero(tb));

    // The current tile's texels: bank and word of each, from its column
    // and row (texel k is column k & 1 of row k >> 1).
    let mut word = Vec::new();
    let mut bank = Vec::new();
    for k in 0..4 {
        let (x, r) = (&tile_x[k & 1].at, k >> 1);
        let y = &tile_y[r].at;
        let col = if ls > bx { fit(&x.slice(ls - 1, bx), aw) } else { Expr::zero(aw) };
        word.push(b.let_(&format!("word{k}"), &row_addr[r].add(&col)));
        let bk = match nb {
            1 => Expr::zero(1),
            2 => x.bit_at(0),
            _ => Expr::cat(&[y.bit_at(0), x.bit_at(0)]),
        };
        bank.push(b.let_(&format!("bank{k}"), &bk));
    }
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
        for ((_, r), (_, d)) in prep[k].0.iter().zip(&prep_in[k].0) {
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
    // Next tile (raster order).
    let ti_n = last_col.mux(&Expr::zero(tb), &ti.add(&Expr::lit(tb, 1)));
    let tj_n = last_col.mux(&tj.add(&Expr::lit(tb, 1)), &tj);
    let seq_near = seq_kind.eq_lit(OpKind::Nearest.code());
    let todo_n = mask_of(&seq_conv, &seq_near, &ti_n.eq(&seq_txm1), &tj_n.eq(&seq_tym1));
    let p_conv = pk.eq_lit(OpKind::ConvQuad.code());
    let p_near = pk.eq_lit(OpKind::Nearest.code());
    let todo_in = mask_of(&p_conv, &p_near, &tiles_x_m1.eq_lit(0), &tiles_y_m1.eq_lit(0));
    let next_tile = b.let_("next_tile", &issue.and(&tile_done).and(&last_tile.not()));
    b.next(&seq_valid, &seq_load.or(&seq_valid.and(&op_done.not())), None);
    let pitch = fit(&pl.get("pitch"), aw);
    let row_step = if by == 1 { pitch } else { pitch.add(&pitch) };
    let mut loads = vec![
        (seq_kind.clone(), pk.clone()),
        (seq_fa.clone(), pl.get("frac_x")),
        (seq_fb.clone(), pl.get("frac_y")),
        (seq_chan.clone(), pl.get("channel")),
        (seq_base.clone(), pl.get("base")),
        (seq_row_step.clone(), row_step),
        (seq_row_top1.clone(), pl.get("row_top1")),
        (seq_row_top2.clone(), pl.get("row_top2")),
    ];
    if by == 0 {
        loads.push((seq_row_one.clone(), pl.get("base_up")));
    }
    for (rule, axis) in [(&rule_x, "x"), (&rule_y, "y")] {
        loads.push((rule.clamp.clone(), pl.get(&format!("clamp_{axis}"))));
        loads.push((rule.last.clone(), pl.get(&format!("last_{axis}"))));
        loads.push((rule.last2.clone(), pl.get(&format!("last2_{axis}"))));
    }
    for (r, d) in &loads {
        b.next(r, d, Some(&seq_load));
    }
    let tile_en = seq_load.or(&next_tile);
    b.next(&ti, &seq_load.mux(&Expr::zero(tb), &ti_n), Some(&tile_en));
    b.next(&tj, &seq_load.mux(&Expr::zero(tb), &tj_n), Some(&tile_en));

    // The first tile, from the last prep stage: column and row 0 as it
    // wrapped them, column and row 1 one texel on; row 0's word address by
    // the multiplier, row 1's the same, one row pair on or back.
    let prep_rule = |axis: &str, mirror: &Expr| AxisRule {
        clamp: pl.get(&format!("clamp_{axis}")),
        mirror: mirror.clone(),
        last: pl.get(&format!("last_{axis}")),
        last2: pl.get(&format!("last2_{axis}")),
    };
    let first = |axis: &str| Coord { at: pl.get(&format!("first_{axis}")), up: pl.get(&format!("first_up_{axis}")), raw: pl.get(&format!("start_{axis}")) };
    let x_in0 = first("x");
    let (x_in1, _) = step1(&mut b, "load_x1", &x_in0, &prep_rule("x", &mirror_x));
    let y_in0 = first("y");
    let (y_in1, y_move) = step1(&mut b, "load_y1", &y_in0, &prep_rule("y", &mirror_y));
    let base = pl.get("base");
    let row0_offset = b.let_("load_row0_offset", &row_offset(&y_in0.at, &pl.get("pitch"), by, aw));
    // (y + 1) >> by and (y - 1) >> by leave y's row pair when by = 0, or y's parity says so.
    let (pair_up, pair_down) = if by == 1 { (y_in0.at.bit_at(0), y_in0.at.bit_at(0).not()) } else { (Expr::bit(true), Expr::bit(true)) };
    let row1_base = y_move.up.and(&pair_up).mux(&pl.get("base_up"), &y_move.down.and(&pair_down).mux(&pl.get("base_down"), &base));
    let row_in = [base.add(&row0_offset), y_move.wrap.mux(&base, &row0_offset.add(&row1_base))];

    // The walk: the columns step two texels per tile and start again at
    // the first tile's after a row; the rows step two texels per tile row,
    // their word addresses one row pair on or back, or an edge row's.
    let x_in = [x_in0, x_in1];
    for k in 0..2 {
        let (stepped, _) = step2(&mut b, &format!("tile_x{k}_next"), &tile_x[k], &rule_x);
        let walked = Coord::mux(&last_col, &first_x[k], &stepped);
        tile_x[k].load(&mut b, &Coord::mux(&seq_load, &x_in[k], &walked), &tile_en);
        first_x[k].load(&mut b, &x_in[k], &seq_load);
    }
    let row_en = seq_load.or(&next_tile.and(&last_col));
    let y_in = [y_in0, y_in1];
    for k in 0..2 {
        let (stepped, moved) = step2(&mut b, &format!("tile_y{k}_next"), &tile_y[k], &rule_y);
        tile_y[k].load(&mut b, &Coord::mux(&seq_load, &y_in[k], &stepped), &row_en);
        let edge = moved.top.mux(&moved.bit.mux(&seq_row_top1, &seq_row_top2), &moved.bit.mux(&seq_row_one, &seq_base));
        let walked = moved.inc.mux(&row_addr[k].add(&seq_row_step), &moved.dec.mux(&row_addr[k].sub(&seq_row_step), &edge));
        let walked = b.let_(&format!("row{k}_addr_next"), &walked);
        b.next(&row_addr[k], &seq_load.mux(&row_in[k], &walked), Some(&row_en));
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
