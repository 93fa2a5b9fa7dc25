//! Results and counters from the formulas of "Exact arithmetic", written
//! directly: no tiles, no patch, no register banks.

use super::{all_channel_op, Level, Op, OpResult, Texture, Workload, QUAD};
use gpurtl_params::texture::{AddressMode, Broadcast, Format, Stitch, TextureParams};

/// Coordinate `x` on an axis of size `s` under `mode`: clamp
/// `min(max(x, 0), s-1)`; repeat `x mod s` (Euclidean); mirror `m = x mod 2s`,
/// then `m` if `m < s`, else `2s-1-m`.
pub(crate) fn address(mode: AddressMode, x: i64, s: u32) -> i64 {
    let s = s as i64;
    match mode {
        AddressMode::Clamp => x.clamp(0, s - 1),
        AddressMode::Repeat => x.rem_euclid(s),
        AddressMode::Mirror => {
            let m = x.rem_euclid(2 * s);
            if m < s {
                m
            } else {
                2 * s - 1 - m
            }
        }
    }
}

/// The level an op reads: `min(level, levels - 1)`.
pub(super) fn level_index(t: &Texture, level: u32) -> usize {
    (level as usize).min(t.levels.len() - 1)
}

/// One level as the ops see it: T(x, y) with the address modes applied.
pub(super) struct Sampler<'a> {
    level: &'a Level,
    format: Format,
    modes: [AddressMode; 2],
}

impl<'a> Sampler<'a> {
    pub(super) fn new(w: &'a Workload, level: u32) -> Sampler<'a> {
        Sampler { level: &w.texture.levels[level_index(&w.texture, level)], format: w.texture.format, modes: w.address }
    }
    /// The wrapped coordinates of (x, y).
    pub(super) fn wrap(&self, x: i64, y: i64) -> (u32, u32) {
        (address(self.modes[0], x, self.level.width) as u32, address(self.modes[1], y, self.level.height) as u32)
    }
    /// Channel `c` of T(x, y).
    fn t(&self, x: i64, y: i64, c: u32) -> u64 {
        let (x, y) = self.wrap(x, y);
        let word = self.level.texels[(y * self.level.width + x) as usize];
        channel_of(self.format, word, c)
    }
}

/// Channel `c` of a texel word.
fn channel_of(format: Format, word: u32, c: u32) -> u64 {
    let bits = format.channel_bits();
    (word as u64 >> (bits * c)) & ((1 << bits) - 1)
}

/// The channel a one-channel op with `channel` reads: it for rgba8, 0 for r8
/// and r16 (and for [`ALL_CHANNELS`](super::ALL_CHANNELS) on them).
fn used_channel(format: Format, channel: u32) -> u32 {
    if format == Format::Rgba8 && channel != super::ALL_CHANNELS {
        channel & 3
    } else {
        0
    }
}

/// `(x0, a)` of a coordinate `u` with `f` fraction bits: `u' = u - 2^(f-1)`,
/// `x0 = floor(u' / 2^f)`, `a = u' mod 2^f` (x0 may be -1).
pub(crate) fn split(u: u64, f: u32) -> (i64, i64) {
    let u1 = u as i64 - (1 << (f - 1));
    (u1.div_euclid(1 << f), u1.rem_euclid(1 << f))
}

/// `s` modulo 2^bits, read as a signed number.
pub(super) fn wrap_signed(s: i64, bits: u32) -> i64 {
    let r = s.rem_euclid(1 << bits);
    if r >= 1 << (bits - 1) {
        r - (1 << bits)
    } else {
        r
    }
}

/// Patch width (or height) of a conv_quad for kernel width (or height) `k`:
/// the union of two kernels one texel apart.
pub(super) fn patch(k: u32) -> u32 {
    k + 1
}

/// The stitch codes and sub-operation count of a KW x KH kernel ("Tiles":
/// "Sub-operations and stitch codes"): `TX = ceil(PW/2)` by `TY = ceil(PH/2)`
/// tiles, tile (i, j) numbered `j*TX + i`, cut in raster order into
/// `ceil(TX*TY/4)` sub-operations, s holding tiles 4s .. min(4s+4, TX*TY)-1.
/// With k its tile count, the first rule that holds gives its code:
/// `8x2` when k >= 2 and its tiles are in one tile row; `2x8` when k >= 2
/// and TX = 1; `4x4` when k = 4 and TX = 2; otherwise `none`.
pub fn stitch(kw: u32, kh: u32) -> (Vec<Stitch>, u32) {
    let tx = patch(kw).div_ceil(2);
    let ty = patch(kh).div_ceil(2);
    let n = tx * ty;
    let sub_ops = n.div_ceil(4);
    let codes = (0..sub_ops)
        .map(|s| {
            let (first, last) = (4 * s, (4 * s + 4).min(n) - 1);
            let k = last - first + 1;
            if k >= 2 && first / tx == last / tx {
                Stitch::S8x2
            } else if k >= 2 && tx == 1 {
                Stitch::S2x8
            } else if k == 4 && tx == 2 {
                Stitch::S4x4
            } else {
                Stitch::None
            }
        })
        .collect();
    (codes, sub_ops)
}

/// The result of one op, from the formulas of "Exact arithmetic".
pub(crate) fn op_result(p: &TextureParams, w: &Workload, op: &Op) -> OpResult {
    let f = p.frac_bits;
    let one = 1i64 << f; // 2^F
    let channels = w.texture.format.channels();
    match op {
        Op::Bilinear { u, v, level } => {
            let s = Sampler::new(w, *level);
            let (x0, a) = split(*u, f);
            let (y0, b) = split(*v, f);
            let texel = (0..channels)
                .map(|c| {
                    let t = |dx: i64, dy: i64| s.t(x0 + dx, y0 + dy, c) as i64;
                    let sum = t(0, 0) * (one - a) * (one - b)
                        + t(1, 0) * a * (one - b)
                        + t(0, 1) * (one - a) * b
                        + t(1, 1) * a * b
                        + (1 << (2 * f - 1));
                    (sum >> (2 * f)) as u64
                })
                .collect();
            OpResult::Texel(texel)
        }
        Op::Nearest { u, v, level } => {
            let s = Sampler::new(w, *level);
            let (x, y) = ((u >> f) as i64, (v >> f) as i64);
            OpResult::Texel((0..channels).map(|c| s.t(x, y, c)).collect())
        }
        Op::Gather4 { u, v, level, dx, dy, channel } => {
            let s = Sampler::new(w, *level);
            let c = used_channel(w.texture.format, *channel);
            let (x0, y0) = (split(*u, f).0 + dx, split(*v, f).0 + dy);
            OpResult::Texels([s.t(x0, y0, c), s.t(x0 + 1, y0, c), s.t(x0, y0 + 1, c), s.t(x0 + 1, y0 + 1, c)])
        }
        Op::ConvQuad { x, y, level, channel, kernel } => {
            let s = Sampler::new(w, *level);
            // One channel: pixel p's sum at p. All-channel: channel c's at 4c + p.
            let channels: Vec<u32> = if all_channel_op(p, w.texture.format, *channel) {
                (0..4).collect()
            } else {
                vec![used_channel(w.texture.format, *channel)]
            };
            let (kw, kh) = (kernel.width as i64, kernel.height as i64);
            let mut pixels = Vec::with_capacity(4 * channels.len());
            for &c in &channels {
                for &(dxp, dyp) in &QUAD {
                    let mut sum = 0i64;
                    for j in 0..kh {
                        for i in 0..kw {
                            let wt = kernel.weights[(j * kw + i) as usize];
                            let tx = *x as i64 + dxp + i - kw / 2;
                            let ty = *y as i64 + dyp + j - kh / 2;
                            sum += wt * s.t(tx, ty, c) as i64;
                        }
                    }
                    pixels.push(wrap_signed(sum, p.acc_bits));
                }
            }
            let (stitch, sub_ops) = stitch(kernel.width, kernel.height);
            OpResult::Pixels { pixels, stitch, sub_ops }
        }
    }
}

/// Texels an op fetches: 4, 1, or the patch's PW * PH.
pub(crate) fn texel_fetches(op: &Op) -> u64 {
    match op {
        Op::Bilinear { .. } | Op::Gather4 { .. } => 4,
        Op::Nearest { .. } => 1,
        Op::ConvQuad { kernel, .. } => (patch(kernel.width) * patch(kernel.height)) as u64,
    }
}

/// Register writes of an op: whole, 4 per fetched texel; selective, one per
/// (texel, pixel whose kernel holds it), which is KW * KH per pixel; shared,
/// one per fetched texel (the one bank the four pixels read). The same for
/// one-channel and all-channel ops (a register holds the whole texel).
pub(super) fn register_writes(p: &TextureParams, op: &Op) -> u64 {
    match op {
        Op::ConvQuad { kernel, .. } => match p.broadcast {
            Broadcast::Whole => 4 * texel_fetches(op),
            Broadcast::Selective => 4 * (kernel.width * kernel.height) as u64,
            Broadcast::Shared => texel_fetches(op),
        },
        _ => 0,
    }
}
