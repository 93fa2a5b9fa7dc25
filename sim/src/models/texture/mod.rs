//! Golden model of the texture unit, written from `docs/texture.md` only.
//!
//! Three parts, each written straight from its section of the spec and
//! sharing nothing with the others but the address-mode formula:
//!
//! * **Results** ([`op_result`](reference::op_result)): the formulas of
//!   "Exact arithmetic", written directly. A `conv_quad` pixel is the double
//!   sum over the kernel of
//!   `w(i, j) * T(x + dx' + i - KW/2, y + dy' + j - KH/2)`: no tiles, no
//!   patch, no register banks, so it checks the hardware's tile, broadcast
//!   and accumulate path independently.
//!   An all-channel conv_quad (no `channel` on rgba8, on a unit built with
//!   `all_channels = true`) is the same double sum for each channel c =
//!   0..3 (16 sums, one op, one fetch of the patch).
//! * **Stitch codes** ([`stitch`](reference::stitch)): one per
//!   sub-operation (tiles 4s .. 4s+3 of the raster order), by the four
//!   rules of "Tiles" in order: `8x2` (two or more tiles, one tile row),
//!   `2x8` (two or more, TX = 1), `4x4` (four, TX = 2), else `none`.
//! * **Counters**: `texel_fetches` is 4 per bilinear or gather4, 1 per
//!   nearest, `PW * PH = (KW + 1)(KH + 1)` per conv_quad. `register_writes`
//!   per conv_quad is `4 * PW * PH` (whole: every fetched texel into the four
//!   banks), `4 * KW * KH` (selective: pixel p's bank receives exactly the
//!   KW x KH texels of its own kernel) or `PW * PH` (shared: one bank, each
//!   fetched texel written once). All-channel ops fetch and write exactly as
//!   one-channel ones. A test checks the three against the per-tile rules of
//!   "Broadcast and convolution". The script's total of `register_writes` is
//!   reported modulo 2^32, as `reg_writes_o` counts it.
//! * **Timing** ([`simulate`](timing::simulate)): the eight rules of
//!   "Timing" played cycle by cycle, every `ready` high and the memory
//!   answering at exactly L, driven by the run driver's [`script`]. It
//!   needs, per op, only its tiles' masks and the bank of each texel
//!   ([`tiles`](timing::tiles)).
//!
//! Cycle of one op alone whose tile is one pass (accepted in c), with
//! `PD = 1 + ceil(CW / 4)` prep stages (5 at the defaults):
//!
//! ```text
//! c          op handshake
//! c+1+k      in prep stage k (k < PD)
//! c+PD+1     in the sequencer; its pass issues (request registers load, tag pushed)
//! c+PD+2     request handshake on every bank of the pass
//! c+PD+2+L   responses valid, the pass is collected (tile -> S1)
//! c+PD+3+L   S1 -> S2
//! c+PD+4+L   S2 -> result register
//! c+PD+5+L   result valid, handshake (res_ready high)
//! ```
//!
//! The prep stages are an elastic chain: an op moves on to the next stage
//! (the last stage into the sequencer) as soon as there is room, so back to
//! back ops are accepted one per cycle until the chain fills behind a busy
//! sequencer. A pass issued in cycle i is
//! collected in i+1+L and popped at that edge, so it counts in the tag
//! queue at the start of cycles i+1 ..= i+1+L (L+1 cycles): passes issue
//! every cycle as long as D >= L+2.
//!
//! Spec readings (the most literal one where the doc leaves room; to be
//! settled in the doc):
//!
//! 1. `channel` is a key of gather4 and conv_quad only, `offset` of gather4
//!    only: other ops refuse them as unknown keys. Required: `texture`,
//!    `format`, each level's `width`, `height`, `texels`, an op's `op`, `u`
//!    and `v` (or `x` and `y`) and `kernel`, a kernel's three keys, the conv
//!    section's `kernel`; the rest have the doc's defaults.
//! 2. The mip chain does not stop at 1x1: levels past it are 1x1 again.
//! 3. A weight's data word is its low weight_bits bits (two's complement).
//! 4. The memory shows a bank's next response from the cycle after the
//!    previous one's handshake at the earliest (each held until taken); with
//!    no stalls collect never waits, so this never shows.
//! 5. A conv_quad (op or `conv` section) without `channel` is stored with
//!    `channel = ALL_CHANNELS` on rgba8 (an all-channel op: the driver
//!    drives `op_all_channels_i` = 1, `op_channel_i` = 0) and with channel 0
//!    on r8 and r16 (a one-channel op, as the doc says). Code that builds
//!    ops itself may give `ALL_CHANNELS` on r8 or r16: it reads channel 0
//!    and drives `op_all_channels_i` = 0, as if the key were absent.
//! 6. With `all_channels = false` (no all-channel datapath) the parser
//!    refuses a conv_quad or conv section without `channel` on rgba8 (the
//!    spec's message; the conv section's names `conv.channel`), and the
//!    random workloads give every rgba8 conv_quad a channel. An op built
//!    with `ALL_CHANNELS` on rgba8 anyway (code that builds ops itself) is
//!    not all-channel ([`all_channel_op`]): the driver drives
//!    `op_channel_i` = 0 as for r8 and r16, so it is a one-channel
//!    conv_quad of channel 0 (4 sums).
//!
//! Files: `reference.rs` (results and counters from the formulas),
//! `layout.rs` (the texture memory layout: level bases, bank contents),
//! `script.rs` (the run driver's script), `timing.rs` (the cycle rules),
//! `io.rs` (input and output files), `random.rs` (random workloads for the
//! tests); here, the types, `run` and the conv section's image.

mod io;
mod layout;
mod random;
pub(crate) mod reference;
mod script;
pub(crate) mod timing;
#[cfg(test)]
mod tests;

pub use io::{output_json, parse_input};
pub use layout::{bank_words, interleaved, level_bases};
pub use random::random_workload;
pub use reference::stitch;
pub use script::{all_ops, script};

use gpurtl_params::texture::{AddressMode, Format, OpKind, Stitch, TextureParams};
use reference::{level_index, op_result, register_writes, texel_fetches};
use timing::{simulate, steps, tiles};

#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub width: u32,
    pub height: u32,
    /// Row-major, each texel packed as its 32-bit memory word (r8 in 7:0,
    /// r16 in 15:0, rgba8: r in 7:0, g 15:8, b 23:16, a 31:24).
    pub texels: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    pub format: Format,
    pub levels: Vec<Level>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub width: u32,
    pub height: u32,
    /// Row-major: `weights[j * width + i]` is w(i, j). Shared, not copied,
    /// by the quads of a `conv` section.
    pub weights: std::sync::Arc<[i64]>,
}

/// A conv_quad's (or the conv section's) `channel` when the input gave none
/// on an rgba8 texture: the op is all-channel (`op_all_channels_i` = 1; r, g,
/// b, a from one fetch of the patch). On r8 and r16 it reads channel 0, as a
/// one-channel op (the driver then drives `op_all_channels_i` = 0).
pub const ALL_CHANNELS: u32 = 4;

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Bilinear { u: u64, v: u64, level: u32 },
    Nearest { u: u64, v: u64, level: u32 },
    Gather4 { u: u64, v: u64, level: u32, dx: i64, dy: i64, channel: u32 },
    /// `channel`: 0..3, or [`ALL_CHANNELS`].
    ConvQuad { x: u64, y: u64, level: u32, channel: u32, kernel: Kernel },
}

/// Whether a conv_quad of `channel` on `format` is all-channel on a unit
/// built with `all_channels = true`: no channel given ([`ALL_CHANNELS`]) and
/// the format rgba8. [`all_channel_op`] also asks the parameter.
pub fn all_channels(format: Format, channel: u32) -> bool {
    channel == ALL_CHANNELS && format == Format::Rgba8
}

/// Whether a conv_quad of `channel` on `format` is all-channel on the unit
/// `p`: [`all_channels`], and the unit built with `all_channels = true`.
/// With `all_channels = false` no op is all-channel: the parser refuses a
/// missing `channel` on rgba8, and an op built with [`ALL_CHANNELS`] anyway
/// is a one-channel conv_quad of channel 0 (the driver drives
/// `op_channel_i` = 0 and there is no `op_all_channels_i`).
pub fn all_channel_op(p: &TextureParams, format: Format, channel: u32) -> bool {
    p.all_channels && all_channels(format, channel)
}

/// The input's `conv` section: the whole level as quads.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvJob {
    pub level: u32,
    /// 0..3, or [`ALL_CHANNELS`] (every quad all-channel on rgba8).
    pub channel: u32,
    pub kernel: Kernel,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub texture: Texture,
    /// [x mode, y mode].
    pub address: [AddressMode; 2],
    pub mem_latency: u32,
    pub ops: Vec<Op>,
    pub conv: Option<ConvJob>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpResult {
    /// bilinear, nearest: one value per channel of the format.
    Texel(Vec<u64>),
    /// gather4: the chosen channel of the footprint's four texels.
    Texels([u64; 4]),
    /// conv_quad: the sums (signed, wrapped to acc_bits) in the order of
    /// `res_data_o`'s lanes: one-channel, 4 of them (pixel p at p);
    /// all-channel, 16 (pixel p's sum of channel c at 4c + p: r sums at
    /// 0..3, g 4..7, b 8..11, a 12..15). `stitch`: each sub-operation's
    /// code, in order, `sub_ops` of them.
    Pixels { pixels: Vec<i64>, stitch: Vec<Stitch>, sub_ops: u32 },
}

/// The conv section's image: `height` rows of `width` values of the level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image {
    /// One-channel quads: a signed sum per pixel.
    OneChannel(Vec<Vec<i64>>),
    /// All-channel quads: per pixel its [r, g, b, a] sums.
    AllChannels(Vec<Vec<[i64; 4]>>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// How many of `results` come from `ops` (output_json prints only those).
    pub n_ops: usize,
    /// One per op of the whole script, the conv section's quads included, in order.
    pub results: Vec<OpResult>,
    /// The conv section's image.
    pub image: Option<Image>,
    pub texel_fetches: u64,
    /// Modulo 2^32, as `reg_writes_o` counts them.
    pub register_writes: u64,
    /// The no-stall timing of docs/texture.md.
    pub cycles: u64,
}

/// One item of the run driver's script (docs/texture.md "The run driver").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Cfg { addr: u64, data: u64 },
    /// The op's port values: kind code, op_u_i, op_v_i, op_level_i,
    /// op_channel_i, op_all_channels_i, dx, dy (signed).
    Op { kind: OpKind, u: u64, v: u64, level: u32, channel: u32, all_channels: bool, dx: i64, dy: i64 },
}

/// The four pixels of a quad, in result order: (dx', dy').
const QUAD: [(i64, i64); 4] = [(0, 0), (1, 0), (0, 1), (1, 1)];

/// Results, counters and no-stall cycles of the whole script.
pub fn run(p: &TextureParams, w: &Workload) -> Outcome {
    let ops = all_ops(w);
    let results: Vec<OpResult> = ops.iter().map(|op| op_result(p, w, op)).collect();
    let texel_fetches = ops.iter().map(texel_fetches).sum();
    // As `reg_writes_o` counts them: modulo 2^32.
    let register_writes = ops.iter().map(|op| register_writes(p, op)).sum::<u64>() & 0xffff_ffff;
    let cycles = simulate(p, w.mem_latency as u64, &steps(&script(p, w)), &|i| tiles(p, w, &ops[i]));
    let image = conv_image(w, &results);
    Outcome { n_ops: w.ops.len(), results, image, texel_fetches, register_writes, cycles }
}

/// The conv section's image, from its quads' results (the tail of
/// `results`): quads that stick out of an odd-sized level drop their outside
/// pixels. All-channel quads (16 sums each) give [r, g, b, a] per pixel; a
/// section without `channel` on rgba8 whose quads gave 4 sums (a unit built
/// with `all_channels = false`, which has no all-channel op) is one-channel.
pub fn conv_image(w: &Workload, results: &[OpResult]) -> Option<Image> {
    let job = w.conv.as_ref()?;
    let lv = &w.texture.levels[level_index(&w.texture, job.level)];
    let (width, height) = (lv.width as usize, lv.height as usize);
    let per_row = width.div_ceil(2);
    let quads = per_row * height.div_ceil(2);
    let all = all_channels(w.texture.format, job.channel)
        && matches!(results.last(), Some(OpResult::Pixels { pixels, .. }) if pixels.len() == 16);
    let mut image = vec![vec![[0i64; 4]; width]; height];
    for (q, r) in results[results.len() - quads..].iter().enumerate() {
        let OpResult::Pixels { pixels, .. } = r else {
            panic!("conv section result {q} is not a conv_quad's");
        };
        let (qx, qy) = (2 * (q % per_row), 2 * (q / per_row));
        for (n, &(dx, dy)) in QUAD.iter().enumerate() {
            let (x, y) = (qx + dx as usize, qy + dy as usize);
            if x < width && y < height {
                // Channel c of pixel n at 4c + n (a short result reads 0).
                for (c, v) in image[y][x].iter_mut().enumerate().take(if all { 4 } else { 1 }) {
                    *v = pixels.get(4 * c + n).copied().unwrap_or(0);
                }
            }
        }
    }
    Some(if all {
        Image::AllChannels(image)
    } else {
        Image::OneChannel(image.into_iter().map(|row| row.into_iter().map(|v| v[0]).collect()).collect())
    })
}
