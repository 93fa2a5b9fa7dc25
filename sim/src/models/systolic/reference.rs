//! The reference result: C = A x B + C0 by a naive triple loop, wrapped to
//! the accumulator; for floating-point element types the spec's definition
//! of C ("Accumulation"): the accumulator starts at start(C0) and adds each
//! k-step's lane tree in increasing k, straight from A and B (not from the
//! tiles).

use super::fp::{self, FpType};
use super::Gemm;
use gpurtl_params::systolic::SystolicParams;

/// Lowest and highest value of the accumulator as read back.
pub(super) fn acc_range(cfg: &SystolicParams) -> (i128, i128) {
    let n = cfg.acc_bits;
    if cfg.signed() {
        (-(1i128 << (n - 1)), (1i128 << (n - 1)) - 1)
    } else {
        (0, (1i128 << n) - 1)
    }
}


/// `x` modulo 2^acc_bits, read signed or unsigned (unsigned 64-bit values
/// >= 2^63 as their bit pattern).
pub(super) fn wrap(cfg: &SystolicParams, x: i128) -> i64 {
    let n = cfg.acc_bits;
    let m = x.rem_euclid(1i128 << n);
    if cfg.signed() && m >= 1i128 << (n - 1) {
        (m - (1i128 << n)) as i64
    } else {
        m as u64 as i64
    }
}

/// The reference C: naive triple loop plus C0, wrapped; for floating-point
/// element types [`reference_fp`].
pub(super) fn reference_c(cfg: &SystolicParams, g: &Gemm) -> Vec<Vec<i64>> {
    if cfg.float() {
        return reference_fp(cfg, g);
    }
    let m = g.a.len();
    let k = g.b.len();
    let n = g.b.first().map_or(0, |row| row.len());
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let mut s: i128 = g.c0.as_ref().map_or(0, |c0| c0[i][j] as i128);
                    for kk in 0..k {
                        s += g.a[i][kk] as i128 * g.b[kk][j] as i128;
                    }
                    wrap(cfg, s)
                })
                .collect()
        })
        .collect()
}


/// The floating-point C (docs/systolic.md, "Accumulation"), as binary32
/// patterns in `0 .. 2^32`: for each (m, n), acc = start(C0[m][n]) (or +0
/// without C0), then acc = acc ⊕ t_k for k = 0 .. ceil(K/L) - 1 in order,
/// t_k the lane tree of step k: lane l is the product of A[m][k*L+l] and
/// B[k*L+l][n], +0 for K indices >= K (zero elements). A and B hold
/// element patterns, C0 binary32 patterns.
pub(super) fn reference_fp(cfg: &SystolicParams, g: &Gemm) -> Vec<Vec<i64>> {
    let (ta, tb) = fp_types(cfg);
    let lanes = cfg.lanes as usize;
    let m = g.a.len();
    let k = g.b.len();
    let n = g.b.first().map_or(0, |row| row.len());
    let steps = k.div_ceil(lanes);
    (0..m)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let mut acc = fp::start(g.c0.as_ref().map_or(0, |c0| c0[i][j] as u32));
                    for s in 0..steps {
                        let at = |l: usize| s * lanes + l;
                        let a = |l: usize| if at(l) < k { g.a[i][at(l)] as u32 } else { 0 };
                        let b = |l: usize| if at(l) < k { g.b[at(l)][j] as u32 } else { 0 };
                        acc = fp::mac(acc, lane_tree(ta, tb, lanes, a, b));
                    }
                    acc as i64
                })
                .collect()
        })
        .collect()
}

/// The element types of a floating-point grid (both fp: validation refuses
/// a mixed pair).
pub(super) fn fp_types(cfg: &SystolicParams) -> (FpType, FpType) {
    match (FpType::of(cfg.a_type), FpType::of(cfg.b_type)) {
        (Some(ta), Some(tb)) => (ta, tb),
        _ => panic!("floating-point grid with element types {} x {}", cfg.a_type, cfg.b_type),
    }
}

/// One k-step's sum t ("One k-step: the lane tree"): the `lanes` products
/// a(l) ⊗ b(l), padded with +0 to the next power of two, added pairwise
/// level by level: (p0 ⊕ p1) ⊕ (p2 ⊕ p3) for 4 lanes. The same as
/// [`fp::step`], without its allocations (the reference runs it M·N·K/L
/// times).
pub(super) fn lane_tree(ta: FpType, tb: FpType, lanes: usize, a: impl Fn(usize) -> u32, b: impl Fn(usize) -> u32) -> u32 {
    const MAX: usize = 8;
    if lanes > MAX {
        let (av, bv): (Vec<u32>, Vec<u32>) = (0..lanes).map(|l| (a(l), b(l))).unzip();
        return fp::step(ta, tb, &av, &bv);
    }
    let mut p = [0u32; MAX];
    for (l, x) in p.iter_mut().enumerate().take(lanes) {
        *x = fp::mul(ta, a(l), tb, b(l));
    }
    let mut width = lanes.next_power_of_two();
    while width > 1 {
        width /= 2;
        for i in 0..width {
            p[i] = fp::add(p[2 * i], p[2 * i + 1]);
        }
    }
    p[0]
}
