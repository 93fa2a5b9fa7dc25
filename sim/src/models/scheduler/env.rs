//! The environment of the spec (source, dispatch and rejection sinks, the
//! SM stand-in's extra latency): its draws, and the trait the cycle loop
//! asks them through.

/// The environment's random parts ("The environment" in the spec). Every
/// draw is a pure function of (seed, what, cycle or kernel/block), so the
/// testbench and the model see the same values whatever order they ask in.
/// Zero percentages and `max_extra` 0 = no stalls, no extra latency (what
/// `gpurtl run` uses). A percentage of 100 or more stalls forever: [`run`](super::run)
/// refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Env {
    pub seed: u64,
    pub src_stall_pct: u32,
    pub dsp_stall_pct: u32,
    pub rej_stall_pct: u32,
    pub max_extra: u64,
}

/// The golden-ratio increment of SplitMix64.
pub(super) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 finaliser.
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The environment's hash, the definition every engine uses:
///
/// ```text
/// h = seed
/// for v in [what, a, b]:  h = mix((h + G) ^ v)        (+ wrapping, 64 bits)
/// G   = 0x9E3779B97F4A7C15
/// mix(z): z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
///         z = (z ^ z>>27) * 0x94D049BB133111EB
///         z ^ z>>31                                   (* wrapping, 64 bits)
/// ```
pub fn draw(seed: u64, what: u64, a: u64, b: u64) -> u64 {
    let mut h = seed;
    for v in [what, a, b] {
        h = mix(h.wrapping_add(GOLDEN) ^ v);
    }
    h
}

/// `what` of the source's stall draw.
pub const WHAT_SRC: u64 = 1;
/// `what` of the dispatch sink's stall draw.
pub const WHAT_DSP: u64 = 2;
/// `what` of the rejection sink's stall draw.
pub const WHAT_REJ: u64 = 3;
/// `what` of a block's extra latency.
pub const WHAT_EXTRA: u64 = 4;

impl Env {
    /// The source does not start offering a kernel in cycle `c` (spec
    /// "Source"): `draw(seed, 1, c, 0) % 100 < src_stall_pct`.
    pub fn src_stall(&self, c: u64) -> bool {
        draw(self.seed, WHAT_SRC, c, 0) % 100 < self.src_stall_pct as u64
    }
    /// `dsp_ready_i` in cycle `c`: `!(draw(seed, 2, c, 0) % 100 < dsp_stall_pct)`.
    pub fn dsp_ready(&self, c: u64) -> bool {
        draw(self.seed, WHAT_DSP, c, 0) % 100 >= self.dsp_stall_pct as u64
    }
    /// `rej_ready_i` in cycle `c`: `!(draw(seed, 3, c, 0) % 100 < rej_stall_pct)`.
    pub fn rej_ready(&self, c: u64) -> bool {
        draw(self.seed, WHAT_REJ, c, 0) % 100 >= self.rej_stall_pct as u64
    }
    /// Extra latency x of block `block` of the kernel at input index
    /// `kernel`: `draw(seed, 4, kernel, block) % (max_extra + 1)` (the draw
    /// itself when `max_extra` is `u64::MAX`), so 0 when `max_extra` is 0.
    pub fn extra(&self, kernel: usize, block: u32) -> u64 {
        let h = draw(self.seed, WHAT_EXTRA, kernel as u64, block as u64);
        match self.max_extra.checked_add(1) {
            Some(m) => h % m,
            None => h,
        }
    }
}

/// The environment as the cycle loop sees it: [`Env`], or in the tests a
/// scripted one (stalls in chosen cycles).
pub(super) trait Environment {
    fn src_stall(&self, c: u64) -> bool;
    fn dsp_ready(&self, c: u64) -> bool;
    fn rej_ready(&self, c: u64) -> bool;
    fn extra(&self, kernel: usize, block: u32) -> u64;
    /// The largest `extra` can be.
    fn max_extra(&self) -> u64;
}

impl Environment for Env {
    fn src_stall(&self, c: u64) -> bool {
        Env::src_stall(self, c)
    }
    fn dsp_ready(&self, c: u64) -> bool {
        Env::dsp_ready(self, c)
    }
    fn rej_ready(&self, c: u64) -> bool {
        Env::rej_ready(self, c)
    }
    fn extra(&self, kernel: usize, block: u32) -> u64 {
        Env::extra(self, kernel, block)
    }
    fn max_extra(&self) -> u64 {
        self.max_extra
    }
}
