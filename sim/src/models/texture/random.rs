//! Random workloads for the tests: formats, level sizes, address modes,
//! coordinates and kernels chosen to reach the edges.

use super::layout::layout;
use super::reference::patch;
use super::{ConvJob, Kernel, Level, Op, Texture, Workload, ALL_CHANNELS};
use crate::rng::Rng;
use gpurtl_params::texture::{AddressMode, Format, TextureParams};

/// Uniform in `lo..=hi`.
fn rand_in(rng: &mut Rng, lo: i64, hi: i64) -> i64 {
    lo + rng.below((hi - lo + 1) as u64) as i64
}

/// A u or v for a level of `size` texels: mostly in and just around the
/// level, sometimes near 0 (x0 = -1), near the top of the range or anywhere.
fn rand_uv(rng: &mut Rng, p: &TextureParams, size: u32) -> u64 {
    let f = p.frac_bits;
    let max = (1u64 << p.uv_bits()) - 1;
    match rng.below(10) {
        0 => rng.below(1 << f),
        1 => max - rng.below(1 << f),
        2 => rng.below(max + 1),
        _ => rng.below(((size as u64 + 2) << f).min(max + 1)),
    }
}

/// Random weights for a w x h kernel, the range's ends now and then.
fn rand_kernel(rng: &mut Rng, p: &TextureParams, width: u32, height: u32) -> Kernel {
    let (lo, hi) = p.weight_range();
    let weights = (0..width * height)
        .map(|_| match rng.below(10) {
            0 => lo,
            1 => hi,
            _ => rand_in(rng, lo, hi),
        })
        .collect();
    Kernel { width, height, weights }
}

/// A conv_quad's channel: on rgba8 half the time none given (all-channel),
/// else a channel of the format (r8, r16: 0, as the parser stores a missing
/// one). With `all_channels = false` always a channel (no all-channel op).
fn conv_channel(rng: &mut Rng, p: &TextureParams, format: Format) -> u32 {
    if format == Format::Rgba8 && p.all_channels && rng.chance(50) {
        ALL_CHANNELS
    } else {
        rng.below(format.channels() as u64) as u32
    }
}

/// A random workload for tests: every format, 1..4 levels (odd sizes often,
/// small so runs are quick), random address modes and latency, bilinear and
/// nearest anywhere in the u, v range, gather4 with offsets at both ends,
/// conv_quad with kernels 3x3, 7x1, 1x7, 5x5, 19x1, 1x19, 2x2, 9x3, 3x5 or
/// random (clipped to max_kernel), all-channel on rgba8 half the time, and
/// sometimes a small conv section (all-channel on rgba8 half the time). With
/// `all_channels = false` every conv_quad and conv section names its
/// channel: no all-channel op.
pub fn random_workload(rng: &mut Rng, p: &TextureParams, n_ops: usize) -> Workload {
    let format = *rng.pick(Format::ALL);
    let cap = p.max_size.min(40);
    let dim = |rng: &mut Rng| {
        if rng.chance(50) {
            1 + 2 * rng.below(cap.div_ceil(2) as u64) as u32
        } else {
            1 + rng.below(cap as u64) as u32
        }
    };
    let n_levels = 1 + rng.below(p.max_levels().min(4) as u64) as usize;
    let (mut w0, mut h0) = (dim(rng), dim(rng));
    let chain = |w0: u32, h0: u32| {
        let mut s = vec![(w0, h0)];
        for _ in 1..n_levels {
            let (w, h) = *s.last().unwrap();
            s.push(((w >> 1).max(1), (h >> 1).max(1)));
        }
        s
    };
    while layout(p, &chain(w0, h0)).1 > 1u64 << p.addr_bits {
        (w0, h0) = ((w0 / 2).max(1), (h0 / 2).max(1));
    }
    let levels: Vec<Level> = chain(w0, h0)
        .into_iter()
        .map(|(width, height)| {
            let texels = (0..width * height)
                .map(|_| match format {
                    Format::R8 => rng.below(256) as u32,
                    Format::R16 if rng.chance(20) => *rng.pick(&[0, 0xffff, 0x8000, 0x00ff]),
                    Format::R16 => rng.below(1 << 16) as u32,
                    Format::Rgba8 => rng.next_u64() as u32,
                })
                .collect();
            Level { width, height, texels }
        })
        .collect();
    let address = [*rng.pick(AddressMode::ALL), *rng.pick(AddressMode::ALL)];
    let mem_latency = 1 + rng.below(20) as u32;
    let channels = format.channels() as u64;
    let (olo, ohi) = p.offset_range();
    let mk = p.max_kernel;
    let xy_max = (1u64 << p.int_bits()) - 1;

    let mut ops = Vec::with_capacity(n_ops);
    for _ in 0..n_ops {
        let level = rng.below(n_levels as u64) as u32;
        let (lw, lh) = (levels[level as usize].width, levels[level as usize].height);
        let op = match rng.below(100) {
            0..=29 => Op::Bilinear { u: rand_uv(rng, p, lw), v: rand_uv(rng, p, lh), level },
            30..=44 => Op::Nearest { u: rand_uv(rng, p, lw), v: rand_uv(rng, p, lh), level },
            45..=69 => {
                let offset = |rng: &mut Rng| match rng.below(5) {
                    0 => olo,
                    1 => ohi,
                    2 => 0,
                    _ => rand_in(rng, olo, ohi),
                };
                let (dx, dy) = (offset(rng), offset(rng));
                let (u, v) = (rand_uv(rng, p, lw), rand_uv(rng, p, lh));
                Op::Gather4 { u, v, level, dx, dy, channel: rng.below(channels) as u32 }
            }
            _ => {
                // 9x3 and 3x5: sub-operations with differing stitch codes.
                let shapes = [(3, 3), (7, 1), (1, 7), (5, 5), (19, 1), (1, 19), (2, 2), (9, 3), (3, 5), (0, 0)];
                let (kw, kh) = match *rng.pick(&shapes) {
                    (0, 0) => (1 + rng.below(mk.min(6) as u64) as u32, 1 + rng.below(mk.min(6) as u64) as u32),
                    (w, h) => (w.min(mk), h.min(mk)),
                };
                let coord = |rng: &mut Rng, size: u32| {
                    if rng.chance(85) {
                        rng.below(size as u64 + 2).min(xy_max)
                    } else {
                        rng.below(xy_max + 1)
                    }
                };
                let (x, y) = (coord(rng, lw), coord(rng, lh));
                let kernel = rand_kernel(rng, p, kw, kh);
                Op::ConvQuad { x, y, level, channel: conv_channel(rng, p, format), kernel }
            }
        };
        ops.push(op);
    }

    // Sometimes a conv section over a small level (at most 64 texels).
    let small: Vec<u32> = (0..n_levels as u32).filter(|&l| levels[l as usize].width * levels[l as usize].height <= 64).collect();
    let conv = if !small.is_empty() && rng.chance(35) {
        let level = *rng.pick(&small);
        // Now and then the last conv_quad's kernel (no kernel writes), if small.
        let last = ops.iter().rev().find_map(|op| match op {
            Op::ConvQuad { kernel, .. } if patch(kernel.width) * patch(kernel.height) <= 16 => Some(kernel.clone()),
            _ => None,
        });
        let kernel = match last {
            Some(k) if rng.chance(30) => k,
            _ => {
                let (w, h) = *rng.pick(&[(3, 3), (2, 2), (1, 1), (5, 1), (1, 3), (3, 2)]);
                rand_kernel(rng, p, w.min(mk), h.min(mk))
            }
        };
        Some(ConvJob { level, channel: conv_channel(rng, p, format), kernel })
    } else {
        None
    };
    Workload { texture: Texture { format, levels }, address, mem_latency, ops, conv }
}
