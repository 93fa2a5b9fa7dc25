//! The reference result: C = A x B + C0 by a naive triple loop, wrapped to
//! the accumulator.

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

/// The reference C: naive triple loop plus C0, wrapped.
pub(super) fn reference_c(cfg: &SystolicParams, g: &Gemm) -> Vec<Vec<i64>> {
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

