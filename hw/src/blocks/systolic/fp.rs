//! Floating-point arithmetic of the weight-stationary grid (docs/systolic.md,
//! "Floating point"): an element product rounded to binary32, and the
//! binary32 add. Both round to nearest even, keep subnormals and give
//! canonical results (never -0; the only NaN is 0x7FC00000).
//!
//! Both end in [`round_pack`]: a significand and the exponent of its least
//! significant bit in, normalised by a leading-zero count and a left shift,
//! shifted right again (with a sticky bit) where the result is subnormal,
//! rounded and packed. Exponents are held as `e + OFF` in `EW` bits so that
//! every comparison is unsigned.

use crate::rtl::{clog2, Expr, ModuleBuilder};
use gpurtl_params::systolic::ElemType;

/// Width of an offset exponent.
const EW: u32 = 12;
/// The offset of an exponent held in `EW` bits: wide enough for the
/// smallest product of two bf16 subnormals (2^-266) and the largest (2^256).
const OFF: u64 = 1024;
/// The quiet NaN every NaN result is.
pub(super) const QNAN: u64 = 0x7FC0_0000;
/// +Inf's pattern (the largest magnitude: anything at or above is Inf).
const INF: u64 = 0x7F80_0000;

/// Registers the values of `vals` (one register, `name`), and puts the
/// register's fields back in their place.
pub(super) fn cut(m: &mut ModuleBuilder, name: &str, vals: &mut [&mut Expr]) {
    let v = Expr::cat(&vals.iter().map(|x| (**x).clone()).collect::<Vec<_>>());
    let q = m.pipe(name, &v, &Expr::bit(true));
    let mut lo = 0;
    for x in vals.iter_mut().rev() {
        let w = x.width();
        **x = q.slice(lo + w - 1, lo);
        lo += w;
    }
}

/// Shift left by `amt` (bits shifted out are lost): a mux level per bit of `amt`.
fn shl(x: &Expr, amt: &Expr) -> Expr {
    let w = x.width();
    let mut v = x.clone();
    for k in 0..amt.width() {
        let s = 1u32 << k;
        let shifted = if s >= w { Expr::zero(w) } else { Expr::cat(&[v.slice(w - 1 - s, 0), Expr::zero(s)]) };
        v = amt.bit_at(k).mux(&shifted, &v);
    }
    v
}

/// Shift right by `amt`, and whether any set bit was shifted out.
fn shr_sticky(x: &Expr, amt: &Expr) -> (Expr, Expr) {
    let w = x.width();
    let mut v = x.clone();
    let mut sticky = Expr::bit(false);
    for k in 0..amt.width() {
        let (s, b) = (1u32 << k, amt.bit_at(k));
        let (out, shifted) = if s >= w {
            (v.any(), Expr::zero(w))
        } else {
            (v.slice(s - 1, 0).any(), Expr::cat(&[Expr::zero(s), v.slice(w - 1, s)]))
        };
        sticky = sticky.or(&b.and(&out));
        v = b.mux(&shifted, &v);
    }
    (v, sticky)
}

/// Leading zeros of a non-zero `x` (`clog2` of its width rounded up to a
/// power of two, bits wide; any value when `x` is zero), as a tree of
/// halves.
fn clz(x: &Expr) -> Expr {
    let w = x.width();
    let p = 1u32 << clog2(w as u64).max(1);
    let padded = if p == w { x.clone() } else { Expr::cat(&[x.clone(), Expr::zero(p - w)]) };
    // (all zero, leading zeros) of a power-of-two slice.
    fn rec(v: &Expr) -> (Expr, Expr) {
        let n = v.width();
        if n == 2 {
            return (v.any().not(), v.bit_at(1).not());
        }
        let (zh, ch) = rec(&v.slice(n - 1, n / 2));
        let (zl, cl) = rec(&v.slice(n / 2 - 1, 0));
        let count = zh.mux(&Expr::cat(&[Expr::bit(true), cl]), &Expr::cat(&[Expr::bit(false), ch]));
        (zh.and(&zl), count)
    }
    rec(&padded).1
}

/// Rounds `sig · 2^(x - OFF)` (with `sign`) to binary32, nearest even: Inf
/// at and beyond 2^128 - 2^103, subnormals below 2^-126, +0 for a zero `sig`
/// (an exact cancellation) or a result that rounds to zero. Wires are named
/// `<pfx>_...`. `cuts` registers inside, in this order as it grows: 1 after
/// the normalisation (the leading-zero count and its shift), 2 (counted by
/// the caller: the significand product) none here, 3 after the subnormal
/// shift, 4 after the leading-zero count, 5 after the rounding decision.
/// `carry` goes through the registers beside the value.
fn round_pack(m: &mut ModuleBuilder, pfx: &str, sign: &Expr, sig: &Expr, x: &Expr, cuts: u32, carry: &mut Expr) -> Expr {
    let w = sig.width();
    let (mut sign, mut sig, mut x) = (sign.clone(), sig.clone(), x.clone());
    let mut lz = m.let_(&format!("{pfx}_lz"), &clz(&sig));
    if cuts >= 4 {
        cut(m, &format!("{pfx}_lz_q"), &mut [carry, &mut sign, &mut x, &mut lz, &mut sig]);
    }
    let mut norm = m.let_(&format!("{pfx}_norm"), &shl(&sig, &lz));
    // The exponent of the leading one, + OFF.
    let e = m.let_(&format!("{pfx}_exp"), &x.add(&Expr::lit(EW, (w - 1) as u64)).sub(&lz.zext(EW)));
    // Below 2^-126 the result is subnormal: its last bit weighs 2^-149, so
    // shift right by -126 - e (at most 31: past 26 every bit is sticky).
    let emin = Expr::lit(EW, OFF - 126);
    let sub = m.let_(&format!("{pfx}_sub"), &e.lt(&emin));
    let rs_full = emin.sub(&e);
    let rs = rs_full.slice(EW - 1, 5).any().mux(&Expr::lit(5, 31), &rs_full.slice(4, 0));
    let mut rs = m.let_(&format!("{pfx}_rs"), &sub.mux(&rs, &Expr::zero(5)));
    // The field base: a normal significand's leading one adds one to the
    // exponent field, so base e - (OFF - 126) = E + 126; a subnormal's base
    // is 0. A rounding carry moves into the exponent field by itself.
    let mut base = sub.mux(&Expr::zero(EW), &e.sub(&emin));
    if cuts >= 1 {
        cut(m, &format!("{pfx}_norm_q"), &mut [carry, &mut sign, &mut base, &mut rs, &mut norm]);
    }
    // 26 bits from the leading one down: 24 significand bits, a guard bit
    // and a bit that collects the sticky.
    let (v26, st_low) = if w >= 26 {
        (norm.slice(w - 1, w - 26), if w > 26 { norm.slice(w - 27, 0).any() } else { Expr::bit(false) })
    } else {
        (Expr::cat(&[norm.clone(), Expr::zero(26 - w)]), Expr::bit(false))
    };
    let (den, st_shift) = shr_sticky(&v26, &rs);
    let mut den = m.let_(&format!("{pfx}_den"), &den);
    let mut sticky = den.bit_at(0).or(&st_shift).or(&st_low);
    // norm is zero exactly when sig is: then the result is +0.
    let mut nz = norm.bit_at(w - 1);
    if cuts >= 3 {
        cut(m, &format!("{pfx}_den_q"), &mut [carry, &mut sign, &mut nz, &mut base, &mut sticky, &mut den]);
    }
    let mut n = den.slice(25, 2);
    let mut up = m.let_(&format!("{pfx}_up"), &den.bit_at(1).and(&sticky.or(&n.bit_at(0))));
    if cuts >= 5 {
        cut(m, &format!("{pfx}_up_q"), &mut [carry, &mut sign, &mut nz, &mut base, &mut up, &mut n]);
    }
    let (mag, ovf, any) = pack(m, pfx, &base, &n, &up);
    let finite = Expr::cat(&[sign.and(&any), mag]);
    let inf = Expr::cat(&[sign.clone(), Expr::lit(31, INF)]);
    let out = nz.mux(&ovf.mux(&inf, &finite), &Expr::zero(32));
    m.let_(&format!("{pfx}_rnd"), &out)
}

/// Rounds a sum `s · 2^(exp_b - 153)` (28 bits: a carry, the hidden bit at
/// 26, the fraction, guard, round and sticky bits) to binary32. A sum is
/// never below the subnormal spacing, so one left shift does: by the leading
/// zeros, or by less where that would take the exponent below -126 (then the
/// result is subnormal, its last bit worth 2^-149). Wires `<pfx>_...`. With
/// `lz_cut` a register after the shift amount, with `norm_cut` one after the
/// shift; `carry` goes through them beside the value.
fn round_sum(m: &mut ModuleBuilder, pfx: &str, sign: &Expr, s: &Expr, exp_b: &Expr, lz_cut: bool, norm_cut: bool, carry: &mut Expr) -> Expr {
    let (mut sign, mut s, mut exp_b) = (sign.clone(), s.clone(), exp_b.clone());
    let lz = m.let_(&format!("{pfx}_lz"), &clz(&s));
    // Bit 27 weighs 2^(exp_b - 126) before the shift: at most exp_b to the left.
    let mut lsh = m.let_(&format!("{pfx}_lsh"), &exp_b.lt(&lz.zext(8)).mux(&exp_b.slice(4, 0), &lz));
    if lz_cut {
        cut(m, &format!("{pfx}_lz_q"), &mut [carry, &mut sign, &mut exp_b, &mut lsh, &mut s]);
    }
    let mut norm = m.let_(&format!("{pfx}_norm"), &shl(&s, &lsh));
    // Exponent field exp_b - lsh (+1 from a normal significand's leading
    // one, 0 for a subnormal's); a rounding carry moves in by itself.
    let mut base = exp_b.sub(&lsh.zext(8));
    let mut nz = s.any();
    if norm_cut {
        cut(m, &format!("{pfx}_norm_q"), &mut [carry, &mut sign, &mut nz, &mut base, &mut norm]);
    }
    let n = norm.slice(27, 4);
    let sticky = norm.slice(2, 0).any();
    let up = m.let_(&format!("{pfx}_up"), &norm.bit_at(3).and(&sticky.or(&n.bit_at(0))));
    let (mag, ovf, any) = pack(m, pfx, &base, &n, &up);
    let finite = Expr::cat(&[sign.and(&any), mag]);
    let inf = Expr::cat(&[sign.clone(), Expr::lit(31, INF)]);
    let out = nz.mux(&ovf.mux(&inf, &finite), &Expr::zero(32));
    m.let_(&format!("{pfx}_rnd"), &out)
}

/// The magnitude `base·2^23 + n + up` (31 bits), whether it reaches Inf
/// (2^31 - 2^23 and above) and whether it is not zero, with no carry chain
/// behind another: `n + up` is a 23-bit increment, and the two bits it can
/// add to the exponent field (the hidden bit, and a carry out of an all-ones
/// fraction) are known from `n` and `up` alone; the overflow compares `base`
/// with constants, and a zero magnitude is a zero `base`, `n` and `up`.
fn pack(m: &mut ModuleBuilder, pfx: &str, base: &Expr, n: &Expr, up: &Expr) -> (Expr, Expr, Expr) {
    let frac = m.let_(&format!("{pfx}_frac"), &n.slice(22, 0).add(&up.zext(23)));
    let (h, c) = (n.bit_at(23), m.let_(&format!("{pfx}_fc"), &up.and(&n.slice(22, 0).all())));
    // field = base + h + c
    let k = Expr::cat(&[h.and(&c), h.xor(&c)]);
    let field = m.let_(&format!("{pfx}_field"), &base.slice(7, 0).add(&k.zext(8)));
    let w = base.width();
    let hi = if w > 8 { base.slice(w - 1, 8).any() } else { Expr::bit(false) };
    let top = base.slice(7, 2).all();
    let (b1, b0) = (base.bit_at(1), base.bit_at(0));
    let ge255 = hi.or(&top.and(&b1).and(&b0));
    let ge254 = hi.or(&top.and(&b1));
    let ge253 = hi.or(&top.and(&b1.or(&b0)));
    let ovf = m.let_(&format!("{pfx}_ovf"), &ge255.or(&h.or(&c).and(&ge254)).or(&h.and(&c).and(&ge253)));
    let any = base.any().or(&n.any()).or(up);
    let mag = m.let_(&format!("{pfx}_mag"), &Expr::cat(&[field, frac]));
    (mag, ovf, any)
}

/// An element's fields: sign, the classes, the significand (the hidden bit
/// and the mantissa field) and the exponent field with 0 read as 1.
struct Elem {
    sign: Expr,
    zero: Expr,
    inf: Expr,
    nan: Expr,
    sig: Expr,
    exp: Expr,
}

fn decode(x: &Expr, t: ElemType) -> Elem {
    let (eb, mb) = t.fp_fields();
    let (e, mant) = (x.slice(eb + mb - 1, mb), x.slice(mb - 1, 0));
    let e_any = e.any();
    let top = e.all();
    let (inf, nan) = if t == ElemType::Fp8e4m3 {
        (Expr::bit(false), top.and(&mant.all()))
    } else {
        (top.and(&mant.any().not()), top.and(&mant.any()))
    };
    Elem {
        sign: x.bit_at(eb + mb),
        zero: e_any.or(&mant.any()).not(),
        inf,
        nan,
        sig: Expr::cat(&[e_any.clone(), mant]),
        exp: e.or(&e_any.not().zext(eb)),
    }
}

/// An element product's operands, decoded: the classes, the sign, both
/// significands and the product's exponent. With `pipeline >= 2` the PE
/// registers them, so that the multiplier (a DSP on FPGAs) sits between
/// registers with no logic in front.
pub(super) struct MulOps {
    pub special: Expr,
    pub sign: Expr,
    pub exp: Expr,
    pub sig_a: Expr,
    pub sig_b: Expr,
}

impl MulOps {
    /// `sel ? that : self`, field by field, the fields named as
    /// [`mul_ops`] names them under `pfx`.
    pub fn select(self, m: &mut ModuleBuilder, pfx: &str, sel: &Expr, that: MulOps) -> MulOps {
        MulOps {
            special: m.let_(&format!("{pfx}_cls"), &sel.mux(&that.special, &self.special)),
            sign: m.let_(&format!("{pfx}_sign"), &sel.mux(&that.sign, &self.sign)),
            exp: m.let_(&format!("{pfx}_expp"), &sel.mux(&that.exp, &self.exp)),
            sig_a: sel.mux(&that.sig_a, &self.sig_a),
            sig_b: sel.mux(&that.sig_b, &self.sig_b),
        }
    }

    /// All fields through one register, `name`.
    pub fn register(&mut self, m: &mut ModuleBuilder, name: &str) {
        cut(m, name, &mut [&mut self.special, &mut self.sign, &mut self.exp, &mut self.sig_a, &mut self.sig_b]);
    }
}

/// The first half of an element product: the classes, the sign, the exact
/// significand product and its exponent. With `pipeline = 3` or
/// `fp_stages >= 2` the PE registers it before [`mul_back`].
pub(super) struct MulFront {
    pub special: Expr,
    pub sign: Expr,
    pub sig: Expr,
    pub exp: Expr,
}

impl MulFront {
    /// All fields through one register, `name`.
    pub fn register(&mut self, m: &mut ModuleBuilder, name: &str) {
        cut(m, name, &mut [&mut self.special, &mut self.sign, &mut self.sig, &mut self.exp]);
    }
}

/// Decodes a product's operands. The special cases of a product are two
/// bits: 0 finite, 1 zero, 2 NaN, 3 Inf. With `gate`, a product with a zero
/// operand gets zero significands (PE gating: the multiplier does not
/// toggle).
pub(super) fn mul_ops(m: &mut ModuleBuilder, pfx: &str, a: &Expr, ta: ElemType, b: &Expr, tb: ElemType, gate: bool) -> MulOps {
    let (x, y) = (decode(a, ta), decode(b, tb));
    let (ma, mb) = (ta.fp_fields().1, tb.fp_fields().1);
    let bias = |t: ElemType| (1u64 << (t.fp_fields().0 - 1)) - 1;
    // value = sig_a · sig_b · 2^(ea - bias_a - ma + eb - bias_b - mb)
    let k = OFF - bias(ta) - bias(tb) - ma as u64 - mb as u64;
    let exp = m.let_(&format!("{pfx}_expp"), &x.exp.zext(EW).add(&y.exp.zext(EW)).add(&Expr::lit(EW, k)));
    // Zero first (whatever the other operand), then NaN, then Inf.
    let zero = x.zero.or(&y.zero);
    let nan = x.nan.or(&y.nan);
    let inf = x.inf.or(&y.inf);
    let special = zero.mux(&Expr::lit(2, 1), &nan.mux(&Expr::lit(2, 2), &inf.mux(&Expr::lit(2, 3), &Expr::zero(2))));
    let special = m.let_(&format!("{pfx}_cls"), &special);
    let sign = m.let_(&format!("{pfx}_sign"), &x.sign.xor(&y.sign));
    let (sig_a, sig_b) = if gate {
        let nz = zero.not();
        (x.sig.and(&nz.repl(x.sig.width())), y.sig.and(&nz.repl(y.sig.width())))
    } else {
        (x.sig, y.sig)
    };
    MulOps { special, sign, exp, sig_a, sig_b }
}

/// The significand product of decoded operands.
pub(super) fn mul_front(m: &mut ModuleBuilder, pfx: &str, o: MulOps) -> MulFront {
    let w = o.sig_a.width() + o.sig_b.width();
    let sig = m.let_(&format!("{pfx}_sigp"), &o.sig_a.zext(w).mul(&o.sig_b.zext(w)));
    MulFront { special: o.special, sign: o.sign, sig, exp: o.exp }
}

/// The product's binary32 pattern from its [`MulFront`], with `cuts`
/// registers inside the rounding ([`round_pack`]).
pub(super) fn mul_back(m: &mut ModuleBuilder, pfx: &str, f: &MulFront, cuts: u32) -> Expr {
    let mut carry = Expr::cat(&[f.sign.clone(), f.special.clone()]);
    let r = round_pack(m, pfx, &f.sign, &f.sig, &f.exp, cuts, &mut carry);
    let (sign, special) = if cuts >= 1 { (carry.bit_at(2), carry.slice(1, 0)) } else { (f.sign.clone(), f.special.clone()) };
    let inf = Expr::cat(&[sign, Expr::lit(31, INF)]);
    let out = select2(&special, &[r, Expr::zero(32), Expr::lit(32, QNAN), inf]);
    m.let_(&format!("{pfx}_prod"), &out)
}

/// `items[sel]` for a two-bit select.
fn select2(sel: &Expr, items: &[Expr; 4]) -> Expr {
    let lo = sel.bit_at(0);
    sel.bit_at(1).mux(&lo.mux(&items[3], &items[2]), &lo.mux(&items[1], &items[0]))
}

/// x ⊕ y for binary32 patterns `x` and `y` (any patterns: -0 and NaNs of
/// any payload included), `stages` cycles later: 0 to 5 registers inside,
/// in this order as `stages` grows: 1 after the sum of the aligned
/// significands, 2 after the alignment shift, 3 after the leading-zero
/// count, 4 after the normalising shift, 5 after the exponent compare.
pub(super) fn add(m: &mut ModuleBuilder, pfx: &str, x: &Expr, y: &Expr, stages: u32) -> Expr {
    let class = |v: &Expr| {
        let (e, f) = (v.slice(30, 23), v.slice(22, 0));
        (e.all().and(&f.any()), e.all().and(&f.any().not()))
    };
    let ((nan_x, inf_x), (nan_y, inf_y)) = (class(x), class(y));
    // The larger magnitude first: the exponent fields and the fractions
    // compared apart, and both exponent differences, side by side.
    let (ex, ey) = (x.slice(30, 23), y.slice(30, 23));
    let frac_lt = x.slice(22, 0).lt(&y.slice(22, 0));
    let swap = m.let_(&format!("{pfx}_swap"), &ex.lt(&ey).or(&ex.eq(&ey).and(&frac_lt)));
    let big = m.let_(&format!("{pfx}_big"), &swap.mux(y, x));
    let small = m.let_(&format!("{pfx}_small"), &swap.mux(x, y));
    let parts = |v: &Expr| {
        let e = v.slice(30, 23);
        let e_any = e.any();
        (Expr::cat(&[e_any.clone(), v.slice(22, 0)]), e.or(&e_any.not().zext(8)))
    };
    let ((sig_b, mut exp_b), (mut sig_s, _)) = (parts(&big), parts(&small));
    // Align the smaller: three bits below the significand (guard, round,
    // and a sticky bit that collects what is shifted out).
    let ((_, xe), (_, ye)) = (parts(x), parts(y));
    let d = swap.mux(&ye.sub(&xe), &xe.sub(&ye));
    let mut d = m.let_(&format!("{pfx}_d"), &d.slice(7, 5).any().mux(&Expr::lit(5, 31), &d.slice(4, 0)));
    let mut sb = Expr::cat(&[sig_b, Expr::zero(3)]).zext(28);
    let mut diff = big.bit_at(31).xor(&small.bit_at(31));
    let mut sign = big.bit_at(31);
    let mut nan = nan_x.or(&nan_y).or(&inf_x.and(&inf_y).and(&x.bit_at(31).xor(&y.bit_at(31))));
    let mut inf = inf_x.or(&inf_y);
    if stages >= 5 {
        cut(m, &format!("{pfx}_cmp_q"), &mut [&mut sig_s, &mut d, &mut sb, &mut diff, &mut sign, &mut exp_b, &mut nan, &mut inf]);
    }
    let (al, st) = shr_sticky(&Expr::cat(&[sig_s, Expr::zero(3)]), &d);
    let al = Expr::cat(&[al.slice(26, 1), al.bit_at(0).or(&st)]);
    let mut al = m.let_(&format!("{pfx}_al"), &al);
    if stages >= 2 {
        cut(m, &format!("{pfx}_align_q"), &mut [&mut al, &mut sb, &mut diff, &mut sign, &mut exp_b, &mut nan, &mut inf]);
    }
    let mut s = m.let_(&format!("{pfx}_s"), &diff.mux(&sb.sub(&al.zext(28)), &sb.add(&al.zext(28))));
    if stages >= 1 {
        cut(m, &format!("{pfx}_sum_q"), &mut [&mut s, &mut sign, &mut exp_b, &mut nan, &mut inf]);
    }
    // The sign goes with the rounding's own (an Inf's sign is the larger
    // operand's).
    let mut carry = Expr::cat(&[sign.clone(), nan.clone(), inf.clone()]);
    let r = round_sum(m, pfx, &sign, &s, &exp_b, stages >= 3, stages >= 4, &mut carry);
    if stages >= 3 {
        (sign, nan, inf) = (carry.bit_at(2), carry.bit_at(1), carry.bit_at(0));
    }
    let inf_out = Expr::cat(&[sign, Expr::lit(31, INF)]);
    let out = nan.mux(&Expr::lit(32, QNAN), &inf.mux(&inf_out, &r));
    m.let_(&format!("{pfx}_sum"), &out)
}

/// Whether an element is not zero (+0 and -0 are zero; floating point
/// tests the exponent and mantissa fields, integers every bit).
pub(super) fn nonzero(x: &Expr, t: ElemType) -> Expr {
    if t.is_float() {
        x.slice(t.bits() - 2, 0).any()
    } else {
        x.any()
    }
}
