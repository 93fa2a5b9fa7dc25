//! The floating-point arithmetic checked against the host's IEEE arithmetic.
//!
//! The reference side is independent of the model's integer code:
//! - elements decode through host floats: bf16 as the top half of an f32,
//!   fp16 and E4M3 by the spec's formula in f64, E5M2 as the top byte of an
//!   fp16;
//! - a product is the f64 product of the two decoded elements, which is
//!   exact (at most 11 x 11 significant bits, exponents within 2^±300), then
//!   `as f32`, which Rust defines as IEEE round-to-nearest-even (overflow to
//!   Inf, subnormals kept): one rounding of the exact product, so no double
//!   rounding even where the result is an f32 subnormal;
//! - an add is f32 `+` (IEEE, nearest even; Rust keeps subnormals);
//! - the tree is written out per lanes value;
//! - the spec's rules are applied on top: a zero operand gives +0, every
//!   result -0 -> +0, every NaN -> 0x7FC00000.
//!
//! Stimulus: the project's SplitMix64 with fixed seeds; bit patterns drawn
//! uniformly and biased toward zeros of both signs, subnormals, Inf, NaN, the
//! largest finite values, the smallest normals, and products aimed at
//! binary32's overflow and underflow thresholds; sums biased toward
//! cancellation, equal and near-equal magnitudes and every exponent distance
//! up to 130 (the model's sticky frame starts at 101).

use super::*;
use crate::rng::Rng;

const PAIRS_PER_TYPE_PAIR: usize = 1 << 16; // 16 type pairs: 1,048,576 products
const SUMS: usize = 1 << 20; // 1,048,576 adds
const STEPS: usize = 200_000; // k-steps of 1..8 lanes, chained into accumulators

fn formula(bits: u32, eb: u32, mb: u32, bias: i32, ieee: bool) -> f64 {
    let s = if (bits >> (eb + mb)) & 1 == 1 { -1.0 } else { 1.0 };
    let e = (bits >> mb) & ((1 << eb) - 1);
    let m = bits & ((1 << mb) - 1);
    let emax = (1 << eb) - 1;
    if ieee && e == emax {
        return if m == 0 { s * f64::INFINITY } else { f64::NAN };
    }
    if !ieee && e == emax && m == (1 << mb) - 1 {
        return f64::NAN;
    }
    let frac = m as f64 / (1u32 << mb) as f64;
    if e == 0 {
        s * frac * 2f64.powi(1 - bias)
    } else {
        s * (1.0 + frac) * 2f64.powi(e as i32 - bias)
    }
}

fn ref_decode(t: FpType, bits: u32) -> f64 {
    match t {
        FpType::Bf16 => f32::from_bits(bits << 16) as f64,
        FpType::Fp16 => formula(bits, 5, 10, 15, true),
        FpType::Fp8E4M3 => formula(bits, 4, 3, 7, false),
        FpType::Fp8E5M2 => ref_decode(FpType::Fp16, bits << 8),
    }
}

fn canon(v: f32) -> u32 {
    if v.is_nan() {
        NAN
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

fn ref_mul(ta: FpType, a: u32, tb: FpType, b: u32) -> f32 {
    let (x, y) = (ref_decode(ta, a), ref_decode(tb, b));
    if x == 0.0 || y == 0.0 {
        return 0.0; // the zero rule, whatever the other operand
    }
    f32::from_bits(canon((x * y) as f32))
}

fn ref_add(x: f32, y: f32) -> f32 {
    f32::from_bits(canon(x + y))
}

/// The spec's table, written out.
fn ref_tree(p: &[f32]) -> f32 {
    let a = ref_add;
    match p.len() {
        1 => p[0],
        2 => a(p[0], p[1]),
        3 => a(a(p[0], p[1]), p[2]),
        4 => a(a(p[0], p[1]), a(p[2], p[3])),
        5 => a(a(a(p[0], p[1]), a(p[2], p[3])), p[4]),
        6 => a(a(a(p[0], p[1]), a(p[2], p[3])), a(p[4], p[5])),
        7 => a(a(a(p[0], p[1]), a(p[2], p[3])), a(a(p[4], p[5]), p[6])),
        8 => a(a(a(p[0], p[1]), a(p[2], p[3])), a(a(p[4], p[5]), a(p[6], p[7]))),
        n => panic!("{n} lanes"),
    }
}

/// An element pattern: uniform, or biased toward the special places.
fn elem(rng: &mut Rng, t: FpType) -> u32 {
    let f = t.format();
    let (eb, mb) = (f.exp_bits, f.man_bits);
    let sign = (rng.below(2) as u32) << (eb + mb);
    let emax = (1u32 << eb) - 1;
    let m = match rng.below(4) {
        0 => 0,
        1 => (1 << mb) - 1,
        _ => rng.below(1 << mb) as u32,
    };
    let field = |e: u32| sign | (e << mb) | m;
    match rng.below(16) {
        0..=4 => rng.below(1 << f.bits()) as u32,
        5 | 6 => sign,                                            // +0, -0
        7 | 8 => field(0),                                        // subnormals
        9 => field(emax),                                         // Inf, NaN (E4M3: its top binade)
        10 => field(emax - 1),                                    // near the largest finite
        11 => field(1 + rng.below(2) as u32),                     // the smallest normals
        12 => sign | f.max_finite,                                // the largest finite
        _ => field((f.bias - 4 + rng.below(9) as i32) as u32),   // around 1
    }
}

/// Exponent of an element's value as a normal would have it (subnormals at
/// the bottom), with its field width: to aim products.
fn pair(rng: &mut Rng, ta: FpType, tb: FpType) -> (u32, u32) {
    let a = elem(rng, ta);
    if rng.below(4) != 0 {
        return (a, elem(rng, tb));
    }
    // Aim the product at binary32's underflow (2^-152 .. 2^-118) or
    // overflow (2^124 .. 2^128) range, where the exponents allow it.
    let (fa, fb) = (ta.format(), tb.format());
    let ea = ((a >> fa.man_bits) & ((1 << fa.exp_bits) - 1)).max(1) as i32 - fa.bias;
    let target = if rng.below(2) == 0 { -152 + rng.below(35) as i32 } else { 124 + rng.below(5) as i32 };
    let eb_field = target - ea + fb.bias;
    let emax = (1i32 << fb.exp_bits) - 1;
    if eb_field < 1 || eb_field > emax - 1 {
        return (a, elem(rng, tb));
    }
    let sign = (rng.below(2) as u32) << (fb.exp_bits + fb.man_bits);
    (a, sign | ((eb_field as u32) << fb.man_bits) | rng.below(1 << fb.man_bits) as u32)
}

/// A binary32 pattern: uniform, or biased.
fn f32_val(rng: &mut Rng) -> u32 {
    let sign = (rng.below(2) as u32) << 31;
    let m = match rng.below(4) {
        0 => 0,
        1 => 0x7F_FFFF - rng.below(4) as u32,
        2 => rng.below(8) as u32,
        _ => rng.below(1 << 23) as u32,
    };
    let e = match rng.below(12) {
        0 => return rng.next_u64() as u32,
        1 => return sign,
        2 => 0,
        3 => 255,
        4 => 254 - rng.below(3) as u32,
        5 => 1 + rng.below(3) as u32,
        _ => 100 + rng.below(55) as u32,
    };
    sign | (e << 23) | m
}

fn f32_pair(rng: &mut Rng) -> (u32, u32) {
    let x = f32_val(rng);
    let y = match rng.below(6) {
        0 | 1 => f32_val(rng),
        2 => x ^ SIGN32,                                                    // exact cancellation
        3 => (x ^ SIGN32).wrapping_add(rng.below(9) as u32).wrapping_sub(4), // near cancellation
        _ => {
            let ex = (x >> 23) & 0xFF;
            let ey = ex.saturating_sub(rng.below(131) as u32).min(254);
            let m = if rng.below(3) == 0 { 0 } else { rng.below(1 << 23) as u32 };
            ((rng.below(2) as u32) << 31) | (ey << 23) | m
        }
    };
    if rng.below(2) == 0 {
        (x, y)
    } else {
        (y, x)
    }
}

#[test]
fn fp_decode_matches_the_host_exhaustively() {
    for t in FP_TYPES {
        for p in 0..1u32 << t.bits() {
            let (m, r) = (t.to_f64(p), ref_decode(t, p));
            assert!(m.to_bits() == r.to_bits() || (m.is_nan() && r.is_nan()), "{} {p:#x}: {m} vs {r}", t.name());
            assert_eq!(t.is_zero(p), r == 0.0, "{} {p:#x}", t.name());
        }
    }
}

#[test]
fn fp_products_against_the_host() {
    let mut n = 0u64;
    for (i, ta) in FP_TYPES.into_iter().enumerate() {
        for (j, tb) in FP_TYPES.into_iter().enumerate() {
            let mut rng = Rng::new(0xF00D + (i * 4 + j) as u64);
            for _ in 0..PAIRS_PER_TYPE_PAIR {
                let (a, b) = pair(&mut rng, ta, tb);
                let (m, r) = (mul(ta, a, tb, b), ref_mul(ta, a, tb, b).to_bits());
                assert_eq!(m, r, "{} {a:#x} x {} {b:#x}: {m:#010x}, host {r:#010x}", ta.name(), tb.name());
                n += 1;
            }
        }
    }
    // Every product of two 8-bit elements.
    for ta in [FpType::Fp8E4M3, FpType::Fp8E5M2] {
        for tb in [FpType::Fp8E4M3, FpType::Fp8E5M2] {
            for a in 0..256 {
                for b in 0..256 {
                    assert_eq!(mul(ta, a, tb, b), ref_mul(ta, a, tb, b).to_bits(), "{} {a:#x} x {} {b:#x}", ta.name(), tb.name());
                    n += 1;
                }
            }
        }
    }
    println!("{n} products checked");
    assert!(n >= 1_000_000);
}

#[test]
fn fp_sums_against_the_host() {
    let mut rng = Rng::new(0x5EED_0001);
    for i in 0..SUMS {
        let (x, y) = f32_pair(&mut rng);
        let (m, r) = (add(x, y), ref_add(f32::from_bits(x), f32::from_bits(y)).to_bits());
        assert_eq!(m, r, "#{i}: {x:#010x} + {y:#010x}: {m:#010x}, host {r:#010x}");
    }
    println!("{SUMS} sums checked");
}

#[test]
fn fp_steps_and_accumulation_against_the_host() {
    let mut rng = Rng::new(0x5EED_0002);
    let (mut products, mut adds) = (0u64, 0u64);
    let mut i = 0;
    while i < STEPS {
        let (ta, tb) = (*rng.pick(&FP_TYPES), *rng.pick(&FP_TYPES));
        let lanes = 1 + rng.below(8) as usize;
        let c0 = f32_val(&mut rng);
        let (mut acc, mut racc) = (start(c0), ref_add(f32::from_bits(c0), 0.0));
        assert_eq!(acc, racc.to_bits(), "start({c0:#010x})");
        let ksteps = 1 + rng.below(6);
        for _ in 0..ksteps {
            let zero_bias = rng.below(3) == 0;
            let draw = |t: FpType, rng: &mut Rng| if zero_bias && rng.chance(50) { (rng.below(2) as u32) << (t.bits() - 1) } else { elem(rng, t) };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..lanes {
                if rng.below(4) == 0 {
                    let (x, y) = pair(&mut rng, ta, tb);
                    a.push(x);
                    b.push(y);
                } else {
                    a.push(draw(ta, &mut rng));
                    b.push(draw(tb, &mut rng));
                }
            }
            let p: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| ref_mul(ta, x, tb, y)).collect();
            let (t, rt) = (step(ta, tb, &a, &b), ref_tree(&p));
            assert_eq!(t, rt.to_bits(), "{} {a:x?} . {} {b:x?}", ta.name(), tb.name());
            acc = mac(acc, t);
            racc = ref_add(racc, rt);
            assert_eq!(acc, racc.to_bits(), "acc after {} {a:x?} . {} {b:x?}", ta.name(), tb.name());
            products += lanes as u64;
            adds += lanes as u64; // lanes - 1 in the tree, 1 into the accumulator
            i += 1;
        }
    }
    println!("{i} k-steps: {products} products, {adds} adds checked");
}

/// Zero skipping is exact: a step with one side all zero changes no
/// accumulator, and a skipped row is start(C0).
#[test]
fn fp_zero_steps_change_nothing() {
    let mut rng = Rng::new(0x5EED_0003);
    for _ in 0..100_000 {
        let (ta, tb) = (*rng.pick(&FP_TYPES), *rng.pick(&FP_TYPES));
        let lanes = 1 + rng.below(8) as usize;
        let acc = start(f32_val(&mut rng));
        let zeros = |t: FpType, rng: &mut Rng| -> Vec<u32> { (0..lanes).map(|_| (rng.below(2) as u32) << (t.bits() - 1)).collect() };
        let other = |t: FpType, rng: &mut Rng| -> Vec<u32> { (0..lanes).map(|_| elem(rng, t)).collect() };
        let (a, b) = if rng.below(2) == 0 { (zeros(ta, &mut rng), other(tb, &mut rng)) } else { (other(ta, &mut rng), zeros(tb, &mut rng)) };
        assert_eq!(step(ta, tb, &a, &b), 0);
        assert_eq!(mac(acc, step(ta, tb, &a, &b)), acc, "{acc:#010x}");
        assert_ne!(acc, SIGN32);
    }
}

#[test]
fn fp_to_types_rounds_to_nearest_even_at_every_midpoint() {
    for t in FP_TYPES {
        let f = t.format();
        let v = |p: u32| t.to_f64(p);
        for n in 0..f.max_finite {
            let (lo, hi) = (v(n), v(n + 1));
            let mid = (lo + hi) / 2.0; // exact in f64
            let even = if n & 1 == 0 { n } else { n + 1 };
            for s in [0, f.sign_bit()] {
                let neg = |x: f64| if s != 0 { -x } else { x };
                assert_eq!(t.from_f64(neg(lo)), Ok(s | n), "{} {lo}", t.name());
                assert_eq!(t.from_f64(neg(mid)), Ok(s | even), "{} {mid}", t.name());
                assert_eq!(t.from_f64(neg(mid.next_down())), Ok(s | n), "{} below {mid}", t.name());
                assert_eq!(t.from_f64(neg(mid.next_up())), Ok(s | (n + 1)), "{} above {mid}", t.name());
            }
        }
        // Every finite pattern rounds to itself, -0 included.
        for p in 0..1u32 << t.bits() {
            let x = v(p);
            if x.is_finite() {
                assert_eq!(t.from_f64(x), Ok(p), "{} {p:#x}", t.name());
            } else {
                assert!(t.from_f64(x).is_err());
            }
        }
        // Half the smallest subnormal is a tie with zero (even).
        let half_min = v(1) / 2.0;
        assert_eq!(t.from_f64(half_min), Ok(0));
        assert_eq!(t.from_f64(-half_min), Ok(f.sign_bit()));
        assert_eq!(t.from_f64(half_min.next_up()), Ok(1));
        assert_eq!(t.from_f64(5e-324), Ok(0));
        assert_eq!(t.from_f64(-1e-300), Ok(f.sign_bit()));
    }
}

#[test]
fn fp_overflow_thresholds() {
    // The first magnitude that is an error (docs/systolic.md's table).
    let cases: [(Format, f64, bool); 5] = [
        (FpType::Bf16.format(), 2f64.powi(128) - 2f64.powi(119), true),
        (FpType::Fp16.format(), 65520.0, true),
        (FpType::Fp8E4M3.format(), 464.0, false),
        (FpType::Fp8E5M2.format(), 61440.0, true),
        (BINARY32, 2f64.powi(128) - 2f64.powi(103), true),
    ];
    for (f, x, tie_is_error) in cases {
        for s in [1.0, -1.0] {
            let sign = if s < 0.0 { f.sign_bit() } else { 0 };
            assert_eq!(f.from_f64(s * x.next_down()), Ok(sign | f.max_finite), "{} {x}", f.name);
            assert_eq!(f.from_f64(s * x).is_err(), tie_is_error, "{} {x}", f.name);
            assert!(f.from_f64(s * x.next_up()).is_err(), "{} {x}", f.name);
            assert!(f.from_f64(s * 1e300).is_err());
            assert!(f.from_f64(s * f64::INFINITY).is_err());
        }
        assert!(f.from_f64(f64::NAN).is_err());
    }
    assert_eq!(FpType::Fp8E4M3.from_f64(464.0), Ok(0x7E));
    assert_eq!(FpType::Fp8E4M3.from_f64(-464.0), Ok(0xFE));
    assert!(FpType::Fp8E4M3.from_f64(480.0).unwrap_err().contains("fp8e4m3's largest finite value 448"));
    assert!(FpType::Fp16.from_f64(65520.0).unwrap_err().contains("65520"));
}

#[test]
fn fp_binary32_numbers_against_the_host() {
    let mut rng = Rng::new(0x5EED_0004);
    let limit = 2f64.powi(128) - 2f64.powi(103);
    for _ in 0..200_000 {
        let x = match rng.below(4) {
            0 => f64::from_bits(rng.next_u64()),
            1 => f64::from_bits(rng.next_u64() & 0x800F_FFFF_FFFF_FFFF | ((0x3FF - 152 + rng.below(30)) << 52)), // f32 subnormals
            2 => f64::from_bits(rng.next_u64() & 0x800F_FFFF_FFFF_FFFF | ((0x3FF + 126 + rng.below(3)) << 52)), // near overflow
            _ => {
                // binary32 midpoints and their neighbours
                let p = f32_val(&mut rng) & 0x7F7F_FFFF;
                let mid = (f32::from_bits(p) as f64 + f32::from_bits(p + 1) as f64) / 2.0;
                [mid, mid.next_up(), mid.next_down()][rng.below(3) as usize]
            }
        };
        let m = f32_from_f64(x);
        if x.is_nan() || x.abs() >= limit {
            assert!(m.is_err(), "{x}");
        } else {
            assert_eq!(m, Ok((x as f32).to_bits()), "{x:e}");
        }
    }
}

fn f(x: f32) -> u32 {
    x.to_bits()
}

#[test]
fn fp_hand_cases() {
    use FpType::*;
    // Decoding.
    assert_eq!(Fp8E4M3.to_f64(0x7E), 448.0);
    assert_eq!(Fp8E4M3.to_f64(0xFE), -448.0);
    assert_eq!(Fp8E4M3.to_f64(0x78), 256.0);
    assert_eq!(Fp8E4M3.to_f64(0x7D), 416.0);
    assert_eq!(Fp8E4M3.to_f64(0x01), 2f64.powi(-9));
    assert_eq!(Fp8E4M3.decode(0x7F), Value::NaN);
    assert_eq!(Fp8E4M3.decode(0xFF), Value::NaN);
    assert_eq!(Fp8E5M2.decode(0x7C), Value::Inf { neg: false });
    assert_eq!(Fp8E5M2.decode(0xFC), Value::Inf { neg: true });
    assert_eq!(Fp8E5M2.decode(0x7D), Value::NaN);
    assert_eq!(Fp8E5M2.to_f64(0x7B), 57344.0);
    assert_eq!(Fp8E5M2.to_f64(0x01), 2f64.powi(-16));
    assert_eq!(Fp16.to_f64(0x7BFF), 65504.0);
    assert_eq!(Fp16.to_f64(0x0001), 2f64.powi(-24));
    assert_eq!(Bf16.to_f64(0x7F7F), (2.0 - 2f64.powi(-7)) * 2f64.powi(127));
    assert_eq!(Bf16.to_f64(0x0001), 2f64.powi(-133));
    assert_eq!(Fp8E4M3.decode(0x80), Value::Zero { neg: true });
    assert!(Fp8E4M3.is_zero(0x80) && !Fp8E4M3.is_zero(0x01));

    // Round to nearest even: products into binary32's subnormals (bf16).
    assert_eq!(mul(Bf16, 0x00C0, Bf16, 0x3400), 2); // 1.5 · 2^-149 -> 2 · 2^-149
    assert_eq!(mul(Bf16, 0x00A0, Bf16, 0x3480), 2); // 2.5 · 2^-149 -> 2 · 2^-149
    assert_eq!(mul(Bf16, 0x0080, Bf16, 0x3380), 0); // 2^-150 -> +0
    assert_eq!(mul(Bf16, 0x8080, Bf16, 0x3380), 0); // -2^-150 -> +0, not -0
    assert_eq!(mul(Bf16, 0x0081, Bf16, 0x3380), 1); // just above the tie
    // ... and adds.
    assert_eq!(add(f(1.0), 0x3380_0000), f(1.0)); // 1 + 2^-24: tie, down to even
    assert_eq!(add(0x3F80_0001, 0x3380_0000), 0x3F80_0002); // tie, up to even
    // ... and numbers.
    assert_eq!(Fp16.from_f64(1.0 + 2f64.powi(-11)), Ok(0x3C00));
    assert_eq!(Fp16.from_f64(1.0 + 3.0 * 2f64.powi(-11)), Ok(0x3C02));
    assert_eq!(Bf16.from_f64(1.0 + 2f64.powi(-8)), Ok(0x3F80));
    assert_eq!(Bf16.from_f64(1.0 + 3.0 * 2f64.powi(-8)), Ok(0x3F82));

    // Largest finite products.
    assert_eq!(mul(Bf16, 0x7F7F, Bf16, 0x7F7F), INF);
    assert_eq!(mul(Bf16, 0x7F7F, Bf16, 0xFF7F), INF | SIGN32);
    assert_eq!(mul(Bf16, 0x7F7F, Bf16, 0x3F80), 0x7F7F_0000);
    assert_eq!(mul(Bf16, 0x7F7F, Bf16, 0x3F81), INF); // (2 + 2^-7 - 2^-14) · 2^127
    assert_eq!(mul(Fp16, 0x7BFF, Fp16, 0x7BFF), f(4_290_774_016.0)); // 65504², exact
    assert_eq!(mul(Fp16, 0xFBFF, Fp16, 0x7BFF), f(-4_290_774_016.0));
    assert_eq!(mul(Fp8E4M3, 0x7E, Fp8E4M3, 0x7E), f(200_704.0));
    assert_eq!(mul(Fp8E5M2, 0x7B, Fp8E4M3, 0xFE), f(-25_690_112.0));

    // E4M3's NaN, E5M2's Inf.
    assert_eq!(mul(Fp8E4M3, 0x7F, Fp8E4M3, 0x38), NAN);
    assert_eq!(mul(Fp8E4M3, 0xFF, Fp16, 0x3C00), NAN);
    assert_eq!(mul(Fp8E4M3, 0x7F, Fp8E4M3, 0x80), 0); // zero rule
    assert_eq!(mul(Fp8E5M2, 0x7C, Fp8E5M2, 0x3C), INF);
    assert_eq!(mul(Fp8E5M2, 0xFC, Fp8E5M2, 0x3C), INF | SIGN32);
    assert_eq!(mul(Fp8E5M2, 0x7C, Fp8E5M2, 0xFC), INF | SIGN32);
    assert_eq!(mul(Fp8E5M2, 0x7D, Fp8E5M2, 0x3C), NAN);
    assert_eq!(mul(Fp8E5M2, 0x7D, Fp8E5M2, 0x7C), NAN);

    // Subnormal x subnormal.
    assert_eq!(mul(Bf16, 0x0001, Bf16, 0x0001), 0); // 2^-266 -> +0
    assert_eq!(mul(Bf16, 0x8001, Bf16, 0x0001), 0); // -2^-266 -> +0, not -0
    assert_eq!(mul(Bf16, 0x0001, Fp16, 0x0001), 0); // 2^-157 -> +0
    assert_eq!(mul(Bf16, 0x007F, Fp8E4M3, 0x01), 0x3F80); // 127 · 2^-142, an exact f32 subnormal
    assert_eq!(mul(Bf16, 0x0001, Bf16, 0x3A80), 0x40); // 2^-143
    assert_eq!(mul(Fp16, 0x0001, Fp16, 0x0001), 0x2780_0000); // 2^-48, normal
    assert_eq!(mul(Fp8E5M2, 0x01, Fp8E4M3, 0x01), 0x3300_0000); // 2^-25

    // The zero rule: Inf · 0 and NaN · 0 are +0.
    assert_eq!(mul(Bf16, 0x7F80, Bf16, 0x8000), 0);
    assert_eq!(mul(Bf16, 0xFF80, Fp8E5M2, 0x00), 0);
    assert_eq!(mul(Bf16, 0x7FC1, Fp16, 0x0000), 0);
    assert_eq!(mul(Fp16, 0x8000, Fp16, 0x8000), 0);

    // Inf - Inf, and NaN canonical.
    assert_eq!(add(INF, INF | SIGN32), NAN);
    assert_eq!(add(INF, INF), INF);
    assert_eq!(add(INF | SIGN32, f(-3.0e38)), INF | SIGN32);
    assert_eq!(step(Fp8E5M2, Fp8E5M2, &[0x7C, 0x7C], &[0x3C, 0xBC]), NAN);
    assert_eq!(add(0x7F80_0001, f(1.0)), NAN);
    assert_eq!(add(f(1.0), 0xFFC0_0000), NAN);
    assert_eq!(mul(Bf16, 0xFFC1, Bf16, 0x3F80), NAN);
    assert_eq!(start(0xFFFF_FFFF), NAN);
    assert_eq!(start(0x7F80_0001), NAN);
    assert_eq!(add(f(f32::MAX), f(f32::MAX)), INF);
    assert_eq!(add(f(f32::MAX), f(2f32.powi(103))), INF); // half a spacing: the tie goes to 2^128 (even)
    assert_eq!(add(f(f32::MAX), f(2f32.powi(102))), f(f32::MAX));

    // -0 stored as +0.
    assert_eq!(add(SIGN32, SIGN32), 0);
    assert_eq!(add(f(1.5), f(-1.5)), 0);
    assert_eq!(add(1, SIGN32 | 1), 0);
    assert_eq!(start(SIGN32), 0);
    assert_eq!(start(0), 0);
    assert_eq!(start(f(1.0)), f(1.0));
    assert_eq!(start(1), 1); // a subnormal C0 stays
    assert_eq!(mac(0, step(Fp16, Fp16, &[0x8000], &[0x8000])), 0);
    assert_eq!(add(SIGN32, f(-2.0)), f(-2.0));

    // The tree's association: 1, 2^-24, 2^-24, 2^-24 (fp16 1.0 x 1.0 and
    // the smallest subnormal x 1.0).
    let one = 0x3C00;
    assert_eq!(step(Fp16, Fp16, &[one; 4], &[one, 1, 1, 1]), 0x3F80_0001); // (1 + 2^-24) + (2^-24 + 2^-24)
    assert_eq!(step(Fp16, Fp16, &[one; 3], &[one, 1, 1]), f(1.0)); // (1 + 2^-24) + 2^-24
    assert_eq!(step(Fp16, Fp16, &[one; 3], &[1, 1, one]), 0x3F80_0001); // (2^-24 + 2^-24) + 1
    assert_eq!(step(Fp16, Fp16, &[one; 8], &[one, 1, 1, 1, 0, 0, 0, 0]), 0x3F80_0001);
    assert_eq!(step(Fp16, Fp16, &[one; 5], &[one, 1, 0, 0, 1]), f(1.0)); // ((1 + 2^-24) + 0) + 2^-24
    // C0 is where the sum begins: ((1 + 2^-24) + 2^-24) = 1, not 1 + 2^-23.
    let t = step(Fp16, Fp16, &[one], &[1]);
    assert_eq!(mac(mac(start(f(1.0)), t), t), f(1.0));
    assert_eq!(add(mac(mac(start(0), t), t), f(1.0)), 0x3F80_0001);
}
