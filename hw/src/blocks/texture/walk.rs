//! The tile walk's coordinates: a texel column or row kept wrapped by the
//! op's address mode, stepped one texel on (the first tile's second column
//! and row) or two (the next tile's), with how its row's word address
//! follows.

use super::slt;
use crate::rtl::{Expr, ModuleBuilder};

/// One texel column (or row) of the tile walk: `at` the texel index after
/// the address mode (0..S-1), `up` whether a mirrored coordinate runs up at
/// its next step, `raw` the coordinate before the mode (for clamp).
#[derive(Clone)]
pub(super) struct Coord {
    pub at: Expr,
    pub up: Expr,
    pub raw: Expr,
}

impl Coord {
    pub fn mux(sel: &Expr, t: &Coord, f: &Coord) -> Coord {
        Coord { at: sel.mux(&t.at, &f.at), up: sel.mux(&t.up, &f.up), raw: sel.mux(&t.raw, &f.raw) }
    }
    pub fn load(&self, b: &mut ModuleBuilder, d: &Coord, en: &Expr) {
        b.next(&self.at, &d.at, Some(en));
        b.next(&self.up, &d.up, Some(en));
        b.next(&self.raw, &d.raw, Some(en));
    }
}

/// An op's address mode on one axis: `clamp` (also any mode at S = 1, where
/// every coordinate is texel 0), else `mirror` or repeat; `last` = S - 1,
/// `last2` = S - 2 (signed, as wide as `raw`).
pub(super) struct AxisRule {
    pub clamp: Expr,
    pub mirror: Expr,
    pub last: Expr,
    pub last2: Expr,
}

/// How a coordinate moved one step on: up or down by one texel, or round
/// from S - 1 to 0 (repeat); otherwise it stayed.
pub(super) struct Move1 {
    pub up: Expr,
    pub down: Expr,
    pub wrap: Expr,
}

/// The coordinate one texel on (`name`: the wire of the new index).
pub(super) fn step1(b: &mut ModuleBuilder, name: &str, c: &Coord, r: &AxisRule) -> (Coord, Move1) {
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
pub(super) struct Move2 {
    pub inc: Expr,
    pub dec: Expr,
    pub top: Expr,
    pub bit: Expr,
}

/// The coordinate two texels on: the next tile's (`name`: the wire of the
/// new index). Repeat wraps once at most (S >= 2); mirror turns at an edge.
pub(super) fn step2(b: &mut ModuleBuilder, name: &str, c: &Coord, r: &AxisRule) -> (Coord, Move2) {
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
