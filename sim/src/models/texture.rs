//! Golden model of the texture unit, written from `docs/texture.md` only.
//!
//! Three parts, each written straight from its section of the spec and
//! sharing nothing with the others but the address-mode formula:
//!
//! * **Results** ([`op_result`]): the formulas of "Exact arithmetic", written
//!   directly. A `conv_quad` pixel is the double sum over the kernel of
//!   `w(i, j) * T(x + dx' + i - KW/2, y + dy' + j - KH/2)`: no tiles, no
//!   patch, no register banks, so it checks the hardware's tile, broadcast
//!   and accumulate path independently.
//! * **Counters**: `texel_fetches` is 4 per bilinear or gather4, 1 per
//!   nearest, `PW * PH = (KW + 1)(KH + 1)` per conv_quad. `register_writes`
//!   per conv_quad is `4 * PW * PH` (whole: every fetched texel into the four
//!   banks) or `4 * KW * KH` (selective: pixel p's bank receives exactly the
//!   KW x KH texels of its own kernel). A test checks both against the
//!   per-tile rules of "Broadcast and convolution". The script's total of
//!   `register_writes` is reported modulo 2^32, as `reg_writes_o` counts it.
//! * **Timing** ([`simulate`]): the eight rules of "Timing" played cycle by
//!   cycle, every `ready` high and the memory answering at exactly L, driven
//!   by the run driver's [`script`]. It needs, per op, only its tiles' masks
//!   and the bank of each texel ([`tiles`]).
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

use super::{err, shown, InputError, InputErrors, Violations};
use crate::rng::Rng;
use gpurtl_params::texture::{cfg, AddressMode, Broadcast, Format, OpKind, Stitch, TextureParams};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;

// ---------------------------------------------------------------------------
// The workload and the outcome
// ---------------------------------------------------------------------------

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

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Bilinear { u: u64, v: u64, level: u32 },
    Nearest { u: u64, v: u64, level: u32 },
    Gather4 { u: u64, v: u64, level: u32, dx: i64, dy: i64, channel: u32 },
    ConvQuad { x: u64, y: u64, level: u32, channel: u32, kernel: Kernel },
}

/// The input's `conv` section: the whole level as quads.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvJob {
    pub level: u32,
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
    /// conv_quad: the four pixels' sums (signed, wrapped to acc_bits).
    Pixels { pixels: [i64; 4], stitch: Stitch, sub_ops: u32 },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// How many of `results` come from `ops` (output_json prints only those).
    pub n_ops: usize,
    /// One per op of the whole script, the conv section's quads included, in order.
    pub results: Vec<OpResult>,
    /// The conv section's image: height rows of width values.
    pub image: Option<Vec<Vec<i64>>>,
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
    /// The op's port values: kind code, op_u_i, op_v_i, op_level_i, op_channel_i, dx, dy (signed).
    Op { kind: OpKind, u: u64, v: u64, level: u32, channel: u32, dx: i64, dy: i64 },
}

/// The four pixels of a quad, in result order: (dx', dy').
const QUAD: [(i64, i64); 4] = [(0, 0), (1, 0), (0, 1), (1, 1)];

// ---------------------------------------------------------------------------
// Exact arithmetic
// ---------------------------------------------------------------------------

/// Coordinate `x` on an axis of size `s` under `mode`: clamp
/// `min(max(x, 0), s-1)`; repeat `x mod s` (Euclidean); mirror `m = x mod 2s`,
/// then `m` if `m < s`, else `2s-1-m`.
fn address(mode: AddressMode, x: i64, s: u32) -> i64 {
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
fn level_index(t: &Texture, level: u32) -> usize {
    (level as usize).min(t.levels.len() - 1)
}

/// One level as the ops see it: T(x, y) with the address modes applied.
struct Sampler<'a> {
    level: &'a Level,
    format: Format,
    modes: [AddressMode; 2],
}

impl<'a> Sampler<'a> {
    fn new(w: &'a Workload, level: u32) -> Sampler<'a> {
        Sampler { level: &w.texture.levels[level_index(&w.texture, level)], format: w.texture.format, modes: w.address }
    }
    /// The wrapped coordinates of (x, y).
    fn wrap(&self, x: i64, y: i64) -> (u32, u32) {
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

/// The channel an op with `op_channel_i = channel` reads: it for rgba8, 0 for
/// r8 and r16 (`op_channel_i` is 2 bits).
fn used_channel(format: Format, channel: u32) -> u32 {
    if format == Format::Rgba8 {
        channel & 3
    } else {
        0
    }
}

/// `(x0, a)` of a coordinate `u` with `f` fraction bits: `u' = u - 2^(f-1)`,
/// `x0 = floor(u' / 2^f)`, `a = u' mod 2^f` (x0 may be -1).
fn split(u: u64, f: u32) -> (i64, i64) {
    let u1 = u as i64 - (1 << (f - 1));
    (u1.div_euclid(1 << f), u1.rem_euclid(1 << f))
}

/// `s` modulo 2^bits, read as a signed number.
fn wrap_signed(s: i64, bits: u32) -> i64 {
    let r = s.rem_euclid(1 << bits);
    if r >= 1 << (bits - 1) {
        r - (1 << bits)
    } else {
        r
    }
}

/// Patch width (or height) of a conv_quad for kernel width (or height) `k`:
/// the union of two kernels one texel apart.
fn patch(k: u32) -> u32 {
    k + 1
}

/// Stitch code and sub-operation count of a KW x KH kernel: `TX = ceil(PW/2)`
/// by `TY = ceil(PH/2)` tiles, cut into `ceil(TX*TY/4)` sub-operations.
fn stitch(kw: u32, kh: u32) -> (Stitch, u32) {
    let tx = patch(kw).div_ceil(2);
    let ty = patch(kh).div_ceil(2);
    let code = match (tx, ty) {
        (2, 2) => Stitch::S4x4,
        (1, 4) => Stitch::S2x8,
        (4, 1) => Stitch::S8x2,
        _ => Stitch::None,
    };
    (code, (tx * ty).div_ceil(4))
}

/// The result of one op, from the formulas of "Exact arithmetic".
fn op_result(p: &TextureParams, w: &Workload, op: &Op) -> OpResult {
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
            let c = used_channel(w.texture.format, *channel);
            let (kw, kh) = (kernel.width as i64, kernel.height as i64);
            let mut pixels = [0i64; 4];
            for (n, &(dxp, dyp)) in QUAD.iter().enumerate() {
                let mut sum = 0i64;
                for j in 0..kh {
                    for i in 0..kw {
                        let wt = kernel.weights[(j * kw + i) as usize];
                        let tx = *x as i64 + dxp + i - kw / 2;
                        let ty = *y as i64 + dyp + j - kh / 2;
                        sum += wt * s.t(tx, ty, c) as i64;
                    }
                }
                pixels[n] = wrap_signed(sum, p.acc_bits);
            }
            let (stitch, sub_ops) = stitch(kernel.width, kernel.height);
            OpResult::Pixels { pixels, stitch, sub_ops }
        }
    }
}

/// Texels an op fetches: 4, 1, or the patch's PW * PH.
fn texel_fetches(op: &Op) -> u64 {
    match op {
        Op::Bilinear { .. } | Op::Gather4 { .. } => 4,
        Op::Nearest { .. } => 1,
        Op::ConvQuad { kernel, .. } => (patch(kernel.width) * patch(kernel.height)) as u64,
    }
}

/// Register writes of an op: whole, 4 per fetched texel; selective, one per
/// (texel, pixel whose kernel holds it), which is KW * KH per pixel.
fn register_writes(p: &TextureParams, op: &Op) -> u64 {
    match op {
        Op::ConvQuad { kernel, .. } => match p.broadcast {
            Broadcast::Whole => 4 * texel_fetches(op),
            Broadcast::Selective => 4 * (kernel.width * kernel.height) as u64,
        },
        _ => 0,
    }
}

// ---------------------------------------------------------------------------
// Texture memory layout
// ---------------------------------------------------------------------------

/// `bx`: 1 if banks >= 2.
fn bx(p: &TextureParams) -> u32 {
    (p.banks >= 2) as u32
}
/// `by`: 1 if banks = 4.
fn by(p: &TextureParams) -> u32 {
    (p.banks == 4) as u32
}

/// Each level's base and the words per bank of the whole layout, for levels
/// of `sizes` (width, height): `base_0 = 0`,
/// `base_{L+1} = base_L + ceil(W_L / 2^bx) * ceil(H_L / 2^by)`.
fn layout(p: &TextureParams, sizes: &[(u32, u32)]) -> (Vec<u64>, u64) {
    let mut bases = Vec::with_capacity(sizes.len());
    let mut next = 0u64;
    for &(w, h) in sizes {
        bases.push(next);
        next += (w as u64).div_ceil(1 << bx(p)) * (h as u64).div_ceil(1 << by(p));
    }
    (bases, next)
}

fn sizes(t: &Texture) -> Vec<(u32, u32)> {
    t.levels.iter().map(|l| (l.width, l.height)).collect()
}

/// Level bases (word addresses, the same in every bank).
pub fn level_bases(p: &TextureParams, t: &Texture) -> Vec<u64> {
    layout(p, &sizes(t)).0
}

/// The bank holding wrapped texel (x, y): `(x & bx) + 2 * (y & by)`.
fn bank_of(p: &TextureParams, x: u32, y: u32) -> usize {
    ((x & bx(p)) + 2 * (y & by(p))) as usize
}

/// The banks' contents: `banks` vectors of 32-bit words indexed by word
/// address, as long as the layout. Texel (X, Y) of level L is at word
/// `base_L + (Y >> by) * pitch_L + (X >> bx)`, `pitch_L = ceil(W_L / 2^bx)`.
/// Words holding no texel are 0.
pub fn bank_words(p: &TextureParams, t: &Texture) -> Vec<Vec<u32>> {
    let (bases, total) = layout(p, &sizes(t));
    let mask = (1u64 << p.addr_bits) - 1;
    let mut banks = vec![vec![0u32; total as usize]; p.banks as usize];
    for (l, lv) in t.levels.iter().enumerate() {
        let pitch = (lv.width as u64).div_ceil(1 << bx(p));
        for y in 0..lv.height {
            for x in 0..lv.width {
                let word = (bases[l] + (y >> by(p)) as u64 * pitch + (x >> bx(p)) as u64) & mask;
                banks[bank_of(p, x, y)][word as usize] = lv.texels[(y * lv.width + x) as usize];
            }
        }
    }
    banks
}

// ---------------------------------------------------------------------------
// The run driver's script
// ---------------------------------------------------------------------------

/// The whole op list: `ops`, then the conv section's quads (raster order,
/// y outer, x inner, x and y even) over its whole level.
pub fn all_ops(w: &Workload) -> Vec<Op> {
    let mut ops = w.ops.clone();
    if let Some(job) = &w.conv {
        let lv = &w.texture.levels[level_index(&w.texture, job.level)];
        for y in (0..lv.height as u64).step_by(2) {
            for x in (0..lv.width as u64).step_by(2) {
                ops.push(Op::ConvQuad { x, y, level: job.level, channel: job.channel, kernel: job.kernel.clone() });
            }
        }
    }
    ops
}

/// The driver's script: the descriptor writes (0x000, then per level its
/// base and size), then per op the kernel writes when its kernel differs
/// from the last one written (0x001, then w(i, j), j outer, i inner; the
/// first conv_quad always writes its kernel), then the op.
pub fn script(p: &TextureParams, w: &Workload) -> Vec<Item> {
    let t = &w.texture;
    let mut items = Vec::new();
    let control = t.format.code()
        | w.address[0].code() << 2
        | w.address[1].code() << 4
        | (t.levels.len() as u64 - 1) << 8;
    items.push(Item::Cfg { addr: cfg::CONTROL, data: control });
    let addr_mask = (1u64 << p.addr_bits) - 1;
    for (l, (lv, base)) in t.levels.iter().zip(level_bases(p, t)).enumerate() {
        let l = l as u32;
        items.push(Item::Cfg { addr: cfg::level_base(l), data: base & addr_mask });
        let size = (lv.width as u64 - 1) | (lv.height as u64 - 1) << 16;
        items.push(Item::Cfg { addr: cfg::level_size(l), data: size });
    }
    let weight_mask = (1u64 << p.weight_bits) - 1;
    let mut written: Option<&Kernel> = None;
    let ops = all_ops(w);
    for op in &ops {
        let item = match op {
            Op::Bilinear { u, v, level } => {
                Item::Op { kind: OpKind::Bilinear, u: *u, v: *v, level: *level, channel: 0, dx: 0, dy: 0 }
            }
            Op::Nearest { u, v, level } => {
                Item::Op { kind: OpKind::Nearest, u: *u, v: *v, level: *level, channel: 0, dx: 0, dy: 0 }
            }
            Op::Gather4 { u, v, level, dx, dy, channel } => {
                Item::Op { kind: OpKind::Gather4, u: *u, v: *v, level: *level, channel: *channel, dx: *dx, dy: *dy }
            }
            Op::ConvQuad { x, y, level, channel, kernel } => {
                if written != Some(kernel) {
                    let size = (kernel.width as u64 - 1) | (kernel.height as u64 - 1) << 8;
                    items.push(Item::Cfg { addr: cfg::KERNEL, data: size });
                    for j in 0..kernel.height {
                        for i in 0..kernel.width {
                            let wt = kernel.weights[(j * kernel.width + i) as usize];
                            items.push(Item::Cfg { addr: cfg::weight(i, j), data: wt as u64 & weight_mask });
                        }
                    }
                    written = Some(kernel);
                }
                Item::Op { kind: OpKind::ConvQuad, u: *x, v: *y, level: *level, channel: *channel, dx: 0, dy: 0 }
            }
        };
        items.push(item);
    }
    items
}

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

/// One tile as the timing sees it: the mask of texels to fetch and the bank
/// of each texel k (from its wrapped coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tile {
    bank: [usize; 4],
    mask: u8,
}

/// The op's tiles ("Tiles: what is fetched"): texel k of a tile at origin
/// (tx, ty) is at unwrapped (tx + (k & 1), ty + (k >> 1)).
fn tiles(p: &TextureParams, w: &Workload, op: &Op) -> Vec<Tile> {
    let f = p.frac_bits;
    let level = match op {
        Op::Bilinear { level, .. } | Op::Nearest { level, .. } | Op::Gather4 { level, .. } | Op::ConvQuad { level, .. } => *level,
    };
    let s = Sampler::new(w, level);
    let tile = |tx: i64, ty: i64, mask: u8| {
        let mut bank = [0; 4];
        for (k, b) in bank.iter_mut().enumerate() {
            let (x, y) = s.wrap(tx + (k as i64 & 1), ty + (k as i64 >> 1));
            *b = bank_of(p, x, y);
        }
        Tile { bank, mask }
    };
    match op {
        Op::Bilinear { u, v, .. } => vec![tile(split(*u, f).0, split(*v, f).0, 0b1111)],
        Op::Gather4 { u, v, dx, dy, .. } => vec![tile(split(*u, f).0 + dx, split(*v, f).0 + dy, 0b1111)],
        Op::Nearest { u, v, .. } => vec![tile((u >> f) as i64, (v >> f) as i64, 0b0001)],
        Op::ConvQuad { x, y, kernel, .. } => {
            let (kw, kh) = (kernel.width, kernel.height);
            let (px, py) = (*x as i64 - (kw / 2) as i64, *y as i64 - (kh / 2) as i64);
            let (pw, ph) = (patch(kw), patch(kh));
            let mut list = Vec::new();
            for j in 0..ph.div_ceil(2) {
                for i in 0..pw.div_ceil(2) {
                    let mut mask = 0u8;
                    for k in 0..4 {
                        if 2 * i + (k & 1) < pw && 2 * j + (k >> 1) < ph {
                            mask |= 1 << k;
                        }
                    }
                    list.push(tile(px + 2 * i as i64, py + 2 * j as i64, mask));
                }
            }
            list
        }
    }
}

/// The pass of a tile with `todo` left: per bank, the lowest-numbered texel
/// of `todo` in that bank. Returns (its texels, its banks) as masks.
fn pass(tile: &Tile, todo: u8) -> (u8, u8) {
    let (mut texels, mut banks) = (0u8, 0u8);
    for k in 0..4 {
        let b = 1 << tile.bank[k];
        if todo & (1 << k) != 0 && banks & b == 0 {
            texels |= 1 << k;
            banks |= b;
        }
    }
    (texels, banks)
}

/// A script item as the timing sees it: a configuration write, or the
/// op of that index in the op list.
enum Step {
    Cfg,
    Op(usize),
}

/// The script as the timing sees it: op items numbered in order.
fn steps(items: &[Item]) -> Vec<Step> {
    let mut n = 0;
    items
        .iter()
        .map(|item| match item {
            Item::Cfg { .. } => Step::Cfg,
            Item::Op { .. } => {
                n += 1;
                Step::Op(n - 1)
            }
        })
        .collect()
}

/// A tag queue entry: one issued pass.
#[derive(Clone, Copy, Debug)]
struct Tag {
    banks: u8,
    /// The pass empties its tile: its collect loads S1.
    last_of_tile: bool,
    /// ... and that tile is its op's last.
    ends_op: bool,
}

/// `PD`, the number of prep stages: `1 + ceil(CW / 4)` with the signed
/// texel coordinate width `CW = max(IB, offset_bits, 6) + 2`,
/// `IB = log2(max_size) + 1` (5 at the defaults).
fn prep_depth(p: &TextureParams) -> usize {
    let ib = p.max_size.trailing_zeros() + 1;
    let cw = ib.max(p.offset_bits).max(6) + 2;
    1 + cw.div_ceil(4) as usize
}

/// `cycles` of the script `steps` without stalls: every ready high, the
/// memory answering at exactly `latency`; `tiles_of(i)` gives op i's tiles
/// (asked when the op enters the sequencer). Each cycle first evaluates
/// every rule from the registers at its start (and that cycle's inputs),
/// then applies the edge.
fn simulate(p: &TextureParams, latency: u64, steps: &[Step], tiles_of: &dyn Fn(usize) -> Vec<Tile>) -> u64 {
    schedule(p, latency, steps, tiles_of).0
}

/// [`simulate`], also giving the cycle of each op's handshake, in op order.
fn schedule(p: &TextureParams, latency: u64, steps: &[Step], tiles_of: &dyn Fn(usize) -> Vec<Tile>) -> (u64, Vec<u64>) {
    let nb = p.banks as usize;
    let depth = p.max_outstanding as usize;
    let in_pass = |banks: u8, b: usize| banks & (1 << b) != 0;

    // The driver: the first item not yet handshaken.
    let mut next = 0usize;
    // The prep stages: the index of the op each holds, stage 0 first.
    let mut prep: Vec<Option<usize>> = vec![None; prep_depth(p)];
    // The sequencer: (its op's tiles, tile index, todo mask), or free.
    let mut seq: Option<(Vec<Tile>, usize, u8)> = None;
    // Request registers: valid, per bank.
    let mut req = vec![false; nb];
    // The memory, per bank: the earliest cycle of each requested response,
    // in order; and the first cycle the head may show (after a handshake the
    // next response shows from the next cycle: one per cycle, each held).
    let mut mem: Vec<VecDeque<u64>> = vec![VecDeque::new(); nb];
    let mut mem_from = vec![0u64; nb];
    // The tag queue; its length is the registered count.
    let mut tags: VecDeque<Tag> = VecDeque::new();
    // S1, S2: Some(the tile ends its op).
    let mut s1: Option<bool> = None;
    let mut s2: Option<bool> = None;
    // The result register (valid).
    let mut res = false;
    // Ops accepted minus results taken.
    let mut in_flight = 0u64;

    let mut accepted = Vec::new();
    let mut last_handshake: Option<u64> = None;
    let mut last_activity = 0u64;
    let mut t = 0u64;
    while next < steps.len() || in_flight > 0 {
        assert!(t <= last_activity + latency + 8, "texture timing model: no progress since cycle {last_activity}");

        // ---- the cycle: everything from the registers at its start ----
        let cfg_valid = matches!(steps.get(next), Some(Step::Cfg));
        let op_valid = matches!(steps.get(next), Some(Step::Op(_)));
        // 8. cfg_ready = idle = (in-flight count is 0).
        let cfg_hs = cfg_valid && in_flight == 0;
        // 7. res_ready is high: a valid result is taken.
        let res_hs = res;
        // 6. S2 moves on unless it ends an op and the result register is
        //    full and not emptying.
        let s2_moves = s2.is_some_and(|ends| !ends || !res || res_hs);
        // 5. S1 moves on when S2 is empty or moves on.
        let s1_moves = s1.is_some() && (s2.is_none() || s2_moves);
        // 3. A bank's response is valid from its earliest cycle.
        let rsp_valid: Vec<bool> = (0..nb).map(|b| mem[b].front().is_some_and(|&at| at.max(mem_from[b]) <= t)).collect();
        // 4. Collect the head pass: every bank of it valid, and a tile's
        //    last pass needs S1 empty or moving on.
        let collect = tags.front().copied().filter(|tag| {
            (0..nb).all(|b| !in_pass(tag.banks, b) || rsp_valid[b]) && (!tag.last_of_tile || s1.is_none() || s1_moves)
        });
        // Request handshakes: ready is high.
        let req_hs = req.clone();
        // 1. The sequencer's pass issues when the tag count is below D and
        //    each of its banks' request register is empty or handshaking.
        let mut issue: Option<(u8, u8, Tag)> = None; // (texels, banks, tag)
        if let Some((tl, ti, todo)) = &seq {
            let (ti, todo) = (*ti, *todo);
            let (texels, banks) = pass(&tl[ti], todo);
            let free = (0..nb).all(|b| !in_pass(banks, b) || !req[b] || req_hs[b]);
            if tags.len() < depth && free {
                let last_of_tile = todo & !texels == 0;
                let ends_op = last_of_tile && ti + 1 == tl.len();
                issue = Some((texels, banks, Tag { banks, last_of_tile, ends_op }));
            }
        }
        // 2. The sequencer takes an op when it is free or its pass issues
        //    and empties its op's last tile. The last prep stage moves into
        //    it when it holds an op and the sequencer takes one; stage
        //    k < PD-1 moves on when it holds an op and stage k+1 is empty or
        //    moves on. op_ready: no cfg offered, and stage 0 empty or moving.
        let seq_takes = seq.is_none() || issue.is_some_and(|(_, _, tag)| tag.ends_op);
        let mut moves = vec![false; prep.len()];
        for k in (0..prep.len()).rev() {
            let room = match prep.get(k + 1) {
                None => seq_takes,
                Some(next) => next.is_none() || moves[k + 1],
            };
            moves[k] = prep[k].is_some() && room;
        }
        let op_ready = !cfg_valid && (prep[0].is_none() || moves[0]);
        let op_hs = op_valid && op_ready;

        // ---- the edge ----
        let active = cfg_hs
            || op_hs
            || res_hs
            || s1_moves
            || s2_moves
            || collect.is_some()
            || issue.is_some()
            || moves.iter().any(|&m| m);
        if active || req_hs.iter().any(|&h| h) {
            last_activity = t;
        }
        // Request registers: a handshake hands the request to the memory;
        // an issuing pass loads its banks.
        for b in 0..nb {
            if req_hs[b] {
                req[b] = false;
                mem[b].push_back(t + latency);
            }
        }
        if let Some((_, banks, _)) = issue {
            for (b, r) in req.iter_mut().enumerate() {
                if in_pass(banks, b) {
                    *r = true;
                }
            }
        }
        // Collect: the pass's responses are taken, the head is popped, a
        // tile's last pass loads S1 (which is empty or moving on).
        let s1_before = s1;
        if s1_moves {
            s1 = None;
        }
        if let Some(tag) = collect {
            for b in 0..nb {
                if in_pass(tag.banks, b) {
                    mem[b].pop_front();
                    mem_from[b] = t + 1;
                }
            }
            tags.pop_front();
            if tag.last_of_tile {
                s1 = Some(tag.ends_op);
            }
        }
        if let Some((_, _, tag)) = issue {
            tags.push_back(tag);
        }
        // S2 and the result register.
        let s2_before = s2;
        if s2_moves {
            s2 = None;
        }
        if s1_moves {
            s2 = s1_before;
        }
        if res_hs {
            res = false;
        }
        if s2_moves && s2_before == Some(true) {
            res = true;
        }
        // The sequencer: the pass leaves todo; an empty todo moves to the
        // next tile or frees it; the last prep stage's op enters it when it
        // moves on.
        if let Some((texels, _, _)) = issue {
            let (tl, ti, todo) = seq.take().expect("a pass issues from a busy sequencer");
            let left = todo & !texels;
            seq = if left != 0 {
                Some((tl, ti, left))
            } else if ti + 1 < tl.len() {
                let mask = tl[ti + 1].mask;
                Some((tl, ti + 1, mask))
            } else {
                None
            };
        }
        let last = prep.len() - 1;
        if moves[last] {
            let i = prep[last].take().expect("a moving prep stage holds an op");
            let tl = tiles_of(i);
            let mask = tl[0].mask;
            seq = Some((tl, 0, mask));
        }
        // The prep stages, from the last: a moving stage's op goes to the
        // next one (emptied or moving on itself); an accepted op enters
        // stage 0 (empty or moving on).
        for k in (0..last).rev() {
            if moves[k] {
                prep[k + 1] = prep[k].take();
            }
        }
        if op_hs {
            let Some(&Step::Op(i)) = steps.get(next) else {
                unreachable!("an op handshake takes an op");
            };
            prep[0] = Some(i);
            in_flight += 1;
            accepted.push(t);
        }
        if res_hs {
            in_flight -= 1;
        }
        if cfg_hs || op_hs {
            next += 1;
        }
        if cfg_hs || op_hs || res_hs {
            last_handshake = Some(t);
        }
        t += 1;
    }
    (last_handshake.map_or(0, |c| c + 1), accepted)
}

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

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
/// pixels.
pub fn conv_image(w: &Workload, results: &[OpResult]) -> Option<Vec<Vec<i64>>> {
    let job = w.conv.as_ref()?;
    let lv = &w.texture.levels[level_index(&w.texture, job.level)];
    let (width, height) = (lv.width as usize, lv.height as usize);
    let per_row = width.div_ceil(2);
    let quads = per_row * height.div_ceil(2);
    let mut image = vec![vec![0i64; width]; height];
    for (q, r) in results[results.len() - quads..].iter().enumerate() {
        let OpResult::Pixels { pixels, .. } = r else {
            panic!("conv section result {q} is not a conv_quad's");
        };
        let (qx, qy) = (2 * (q % per_row), 2 * (q / per_row));
        for (n, &(dx, dy)) in QUAD.iter().enumerate() {
            let (x, y) = (qx + dx as usize, qy + dy as usize);
            if x < width && y < height {
                image[y][x] = pixels[n];
            }
        }
    }
    Some(image)
}

// ---------------------------------------------------------------------------
// Input file
// ---------------------------------------------------------------------------

/// Records `at(key)` for every key of `o` not in `keys`.
fn refuse_unknown(e: &mut Violations, o: &Map<String, Value>, at: &dyn Fn(&str) -> String, keys: &[&str], whose: &str) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: {whose}keys are {}", keys.join(", "))));
        }
    }
}

/// `o[key]` (named `path`): an integer in `lo..=hi` (`why` explains the
/// range in the message); `default` when absent, or missing if `None`.
fn uint_at(o: &Map<String, Value>, key: &str, path: &str, default: Option<u64>, lo: u64, hi: u64, why: &str) -> Result<u64, InputError> {
    let allowed = format!("an integer from {lo} to {hi}{why}");
    match o.get(key) {
        None => default.ok_or_else(|| err(path, "(missing)", allowed)),
        Some(x) => match x.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(err(path, shown(x), allowed)),
        },
    }
}

/// A signed integer in `lo..=hi`.
fn int_value(x: &Value, path: &str, lo: i64, hi: i64) -> Result<i64, InputError> {
    match x.as_i64() {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(err(path, shown(x), format!("an integer from {lo} to {hi}"))),
    }
}

/// What later checks need to know of the texture, even when it is bad.
struct Shape {
    /// Its number of levels, if its level list is good.
    levels: Option<usize>,
    format: Option<Format>,
}

impl Shape {
    /// `o.level`: below the number of levels (default 0).
    fn level(&self, p: &TextureParams, o: &Map<String, Value>, path: &str) -> Result<u32, InputError> {
        let (max, why) = match self.levels {
            Some(n) => (n as u64 - 1, format!(" (below the texture's {n} levels)")),
            None => (p.max_levels() as u64 - 1, String::new()),
        };
        uint_at(o, "level", path, Some(0), 0, max, &why).map(|n| n as u32)
    }
    /// `o.channel`: below the format's channels (default 0).
    fn channel(&self, o: &Map<String, Value>, path: &str) -> Result<u32, InputError> {
        let (max, why) = match self.format {
            Some(f) => (f.channels() as u64 - 1, format!(" (below the {} channels of {f})", f.channels())),
            None => (3, String::new()),
        };
        uint_at(o, "channel", path, Some(0), 0, max, &why).map(|n| n as u32)
    }
}

/// Parse and validate an input file (docs/texture.md "`gpurtl run
/// texture`"); every violation is reported.
pub fn parse_input(v: &Value, p: &TextureParams) -> Result<Workload, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with a `texture`"))));
    };
    refuse_unknown(&mut e, obj, &|k| k.to_string(), &["texture", "address", "mem_latency", "ops", "conv"], "");

    let (texture, shape) = match obj.get("texture") {
        None => {
            e.push(err("texture", "(missing)", "an object {format, levels}"));
            (None, Shape { levels: None, format: None })
        }
        Some(t) => parse_texture(&mut e, t, p),
    };

    let modes_allowed = "a list [x mode, y mode], each clamp, repeat or mirror";
    let address = match obj.get("address") {
        None => Some([AddressMode::Clamp, AddressMode::Clamp]),
        Some(a) => match a.as_array() {
            Some(l) if l.len() == 2 => {
                let m: Vec<Option<AddressMode>> = l
                    .iter()
                    .enumerate()
                    .map(|(k, x)| {
                        e.take(x.as_str().and_then(AddressMode::from_name).ok_or_else(|| {
                            err(format!("address[{k}]"), shown(x), "one of clamp, repeat, mirror")
                        }))
                    })
                    .collect();
                m[0].zip(m[1]).map(|(x, y)| [x, y])
            }
            _ => {
                e.push(err("address", shown(a), modes_allowed));
                None
            }
        },
    };

    let mem_latency = e.take(uint_at(obj, "mem_latency", "mem_latency", Some(10), 1, 64, "").map(|n| n as u32));

    let mut ops = Vec::new();
    if let Some(list) = obj.get("ops") {
        match list.as_array() {
            None => e.push(err("ops", shown(list), "a list of ops")),
            Some(list) => {
                for (i, x) in list.iter().enumerate() {
                    if let Some(op) = parse_op(&mut e, i, x, p, &shape) {
                        ops.push(op);
                    }
                }
            }
        }
    }

    let conv = match obj.get("conv") {
        None => None,
        Some(c) => match c.as_object() {
            None => {
                e.push(err("conv", shown(c), "an object {level, channel, kernel}"));
                None
            }
            Some(o) => {
                refuse_unknown(&mut e, o, &|k| format!("conv.{k}"), &["level", "channel", "kernel"], "");
                let level = e.take(shape.level(p, o, "conv.level"));
                let channel = e.take(shape.channel(o, "conv.channel"));
                let kernel = parse_kernel(&mut e, o.get("kernel"), "conv.kernel", p);
                match (level, channel, kernel) {
                    (Some(level), Some(channel), Some(kernel)) => Some(ConvJob { level, channel, kernel }),
                    _ => None,
                }
            }
        },
    };

    e.finish(|| Workload {
        texture: texture.expect("a good texture when nothing was violated"),
        address: address.expect("good address modes when nothing was violated"),
        mem_latency: mem_latency.expect("a good mem_latency when nothing was violated"),
        ops,
        conv,
    })
}

/// The `texture` object: format, levels (the mip chain), texels.
fn parse_texture(e: &mut Violations, v: &Value, p: &TextureParams) -> (Option<Texture>, Shape) {
    let Some(o) = v.as_object() else {
        e.push(err("texture", shown(v), "an object {format, levels}"));
        return (None, Shape { levels: None, format: None });
    };
    refuse_unknown(e, o, &|k| format!("texture.{k}"), &["format", "levels"], "");
    let format_allowed = "one of r8, r16, rgba8";
    let format = e.take(match o.get("format") {
        None => Err(err("texture.format", "(missing)", format_allowed)),
        Some(f) => f.as_str().and_then(Format::from_name).ok_or_else(|| err("texture.format", shown(f), format_allowed)),
    });
    let max_levels = p.max_levels() as usize;
    let levels_allowed = format!("a list of 1 to {max_levels} levels");
    let list = match o.get("levels") {
        None => Err(err("texture.levels", "(missing)", levels_allowed)),
        Some(l) => match l.as_array() {
            Some(a) if (1..=max_levels).contains(&a.len()) => Ok(a),
            Some(a) => Err(err("texture.levels", format!("a list of {} levels", a.len()), levels_allowed)),
            None => Err(err("texture.levels", shown(l), levels_allowed)),
        },
    };
    let list = match list {
        Ok(l) => l,
        Err(x) => {
            e.push(x);
            return (None, Shape { levels: None, format });
        }
    };
    let mut levels = Vec::new();
    let mut good = true;
    let mut prev: (Option<u32>, Option<u32>) = (None, None);
    for (i, x) in list.iter().enumerate() {
        let (level, dims) = parse_level(e, i, x, prev, format, p);
        prev = dims;
        match level {
            Some(l) => levels.push(l),
            None => good = false,
        }
    }
    let shape = Shape { levels: Some(list.len()), format };
    if !good {
        return (None, shape);
    }
    let Some(format) = format else {
        return (None, shape);
    };
    let texture = Texture { format, levels };
    let (_, words) = layout(p, &sizes(&texture));
    if words > 1u64 << p.addr_bits {
        e.push(err(
            "texture.levels",
            format!("a layout of {words} words per bank"),
            format!("at most 2^addr_bits = {} words per bank", 1u64 << p.addr_bits),
        ));
        return (None, shape);
    }
    (Some(texture), shape)
}

/// `texture.levels[i]`, with `prev` the size of the level before it (if
/// known). Returns the level if good, and its size as far as it is known.
fn parse_level(
    e: &mut Violations,
    i: usize,
    v: &Value,
    prev: (Option<u32>, Option<u32>),
    format: Option<Format>,
    p: &TextureParams,
) -> (Option<Level>, (Option<u32>, Option<u32>)) {
    let at = |f: &str| format!("texture.levels[{i}].{f}");
    let Some(o) = v.as_object() else {
        e.push(err(format!("texture.levels[{i}]"), shown(v), "an object {width, height, texels}"));
        return (None, (None, None));
    };
    refuse_unknown(e, o, &at, &["width", "height", "texels"], "");
    // Level 0: 1..max_size; each next level max(1, size >> 1) of the one before.
    let mut dim = |key: &str, prev: Option<u32>| -> Option<u32> {
        let r = match (i, prev) {
            (0, _) => uint_at(o, key, &at(key), None, 1, p.max_size as u64, ""),
            (_, Some(before)) => {
                let want = (before >> 1).max(1) as u64;
                let why = format!(" (max(1, {before} >> 1): levels[{}].{key} halved)", i - 1);
                uint_at(o, key, &at(key), None, want, want, &why)
            }
            (_, None) => uint_at(o, key, &at(key), None, 1, p.max_size as u64, ""),
        };
        e.take(r).map(|n| n as u32)
    };
    let width = dim("width", prev.0);
    let height = dim("height", prev.1);
    let dims = (width, height);

    let path = at("texels");
    let Some(texels) = o.get("texels") else {
        e.push(err(path, "(missing)", "a list of width x height texels, row by row"));
        return (None, dims);
    };
    let Some(list) = texels.as_array() else {
        e.push(err(path, shown(texels), "a list of width x height texels, row by row"));
        return (None, dims);
    };
    let (Some(w), Some(h)) = dims else {
        return (None, dims);
    };
    let n = w as usize * h as usize;
    if list.len() != n {
        e.push(err(path, format!("a list of {} texels", list.len()), format!("a list of {n} texels (width {w} x height {h})")));
        return (None, dims);
    }
    let Some(format) = format else {
        return (None, dims);
    };
    let allowed = match format {
        Format::R8 => "an integer from 0 to 255",
        Format::R16 => "an integer from 0 to 65535",
        Format::Rgba8 => "a list [r, g, b, a] of integers from 0 to 255",
    };
    let texels = e.each(&path, list, |k, x| texel_word(format, x).ok_or_else(|| err(format!("{path}[{k}]"), shown(x), allowed)));
    (texels.map(|texels| Level { width: w, height: h, texels }), dims)
}

/// A texel of the input as its memory word, if it is one of `format`.
fn texel_word(format: Format, x: &Value) -> Option<u32> {
    match format {
        Format::R8 => x.as_u64().filter(|&n| n <= 0xff).map(|n| n as u32),
        Format::R16 => x.as_u64().filter(|&n| n <= 0xffff).map(|n| n as u32),
        Format::Rgba8 => {
            let l = x.as_array().filter(|l| l.len() == 4)?;
            let mut word = 0u32;
            for (c, ch) in l.iter().enumerate() {
                word |= (ch.as_u64().filter(|&n| n <= 0xff)? as u32) << (8 * c);
            }
            Some(word)
        }
    }
}

/// `ops[i]`.
fn parse_op(e: &mut Violations, i: usize, v: &Value, p: &TextureParams, shape: &Shape) -> Option<Op> {
    let at = |f: &str| format!("ops[{i}].{f}");
    let Some(o) = v.as_object() else {
        e.push(err(format!("ops[{i}]"), shown(v), "an object"));
        return None;
    };
    let kinds = "one of bilinear, nearest, gather4, conv_quad";
    let kind = e.take(match o.get("op") {
        None => Err(err(at("op"), "(missing)", kinds)),
        Some(k) => k.as_str().and_then(OpKind::from_name).ok_or_else(|| err(at("op"), shown(k), kinds)),
    })?;
    let keys: &[&str] = match kind {
        OpKind::Bilinear | OpKind::Nearest => &["op", "u", "v", "level"],
        OpKind::Gather4 => &["op", "u", "v", "offset", "level", "channel"],
        OpKind::ConvQuad => &["op", "x", "y", "level", "channel", "kernel"],
    };
    refuse_unknown(e, o, &at, keys, &format!("a {kind} op's "));
    let level = e.take(shape.level(p, o, &at("level")));
    let uv_max = (1u64 << p.uv_bits()) - 1;
    let xy_max = (1u64 << p.int_bits()) - 1;
    match kind {
        OpKind::Bilinear | OpKind::Nearest | OpKind::Gather4 => {
            let u = e.take(uint_at(o, "u", &at("u"), None, 0, uv_max, ""));
            let v = e.take(uint_at(o, "v", &at("v"), None, 0, uv_max, ""));
            if kind == OpKind::Gather4 {
                let offset = parse_offset(e, o.get("offset"), &at("offset"), p);
                let channel = e.take(shape.channel(o, &at("channel")));
                let ((dx, dy), channel) = (offset?, channel?);
                Some(Op::Gather4 { u: u?, v: v?, level: level?, dx, dy, channel })
            } else if kind == OpKind::Bilinear {
                Some(Op::Bilinear { u: u?, v: v?, level: level? })
            } else {
                Some(Op::Nearest { u: u?, v: v?, level: level? })
            }
        }
        OpKind::ConvQuad => {
            let x = e.take(uint_at(o, "x", &at("x"), None, 0, xy_max, ""));
            let y = e.take(uint_at(o, "y", &at("y"), None, 0, xy_max, ""));
            let channel = e.take(shape.channel(o, &at("channel")));
            let kernel = parse_kernel(e, o.get("kernel"), &at("kernel"), p);
            Some(Op::ConvQuad { x: x?, y: y?, level: level?, channel: channel?, kernel: kernel? })
        }
    }
}

/// A gather4 `offset`: `[dx, dy]` within the offset range (default [0, 0]).
fn parse_offset(e: &mut Violations, v: Option<&Value>, path: &str, p: &TextureParams) -> Option<(i64, i64)> {
    let (lo, hi) = p.offset_range();
    let Some(v) = v else {
        return Some((0, 0));
    };
    match v.as_array() {
        Some(l) if l.len() == 2 => {
            let dx = e.take(int_value(&l[0], &format!("{path}[0]"), lo, hi));
            let dy = e.take(int_value(&l[1], &format!("{path}[1]"), lo, hi));
            Some((dx?, dy?))
        }
        _ => {
            e.push(err(path, shown(v), format!("a list [dx, dy] of two integers from {lo} to {hi}")));
            None
        }
    }
}

/// A `kernel` object: width, height (1..max_kernel), weights (row-major,
/// width x height signed weight_bits integers).
fn parse_kernel(e: &mut Violations, v: Option<&Value>, path: &str, p: &TextureParams) -> Option<Kernel> {
    let allowed = "an object {width, height, weights}";
    let Some(v) = v else {
        e.push(err(path, "(missing)", allowed));
        return None;
    };
    let Some(o) = v.as_object() else {
        e.push(err(path, shown(v), allowed));
        return None;
    };
    let at = |f: &str| format!("{path}.{f}");
    refuse_unknown(e, o, &at, &["width", "height", "weights"], "");
    let mk = p.max_kernel as u64;
    let width = e.take(uint_at(o, "width", &at("width"), None, 1, mk, " (max_kernel)"));
    let height = e.take(uint_at(o, "height", &at("height"), None, 1, mk, " (max_kernel)"));
    let wpath = at("weights");
    let (lo, hi) = p.weight_range();
    let list_allowed = "a list of width x height integers, row by row";
    let weights = match o.get("weights") {
        None => {
            e.push(err(&wpath, "(missing)", list_allowed));
            None
        }
        Some(ws) => match ws.as_array() {
            None => {
                e.push(err(&wpath, shown(ws), list_allowed));
                None
            }
            Some(list) => match (width, height) {
                (Some(w), Some(h)) if list.len() as u64 != w * h => {
                    e.push(err(
                        &wpath,
                        format!("a list of {} weights", list.len()),
                        format!("a list of {} weights (width {w} x height {h})", w * h),
                    ));
                    None
                }
                _ => e.each(&wpath, list, |k, x| int_value(x, &format!("{wpath}[{k}]"), lo, hi)),
            },
        },
    };
    Some(Kernel { width: width? as u32, height: height? as u32, weights: weights?.into() })
}

// ---------------------------------------------------------------------------
// Output file
// ---------------------------------------------------------------------------

/// The output file: the results of `ops` only, `image` only with a conv
/// section, the counters and cycles of the whole script.
pub fn output_json(_p: &TextureParams, o: &Outcome) -> Value {
    let results: Vec<Value> = o.results[..o.n_ops]
        .iter()
        .map(|r| match r {
            OpResult::Texel(t) => json!({ "texel": t }),
            OpResult::Texels(t) => json!({ "texels": t }),
            OpResult::Pixels { pixels, stitch, sub_ops } => {
                json!({ "pixels": pixels, "stitch": stitch.name(), "sub_ops": sub_ops })
            }
        })
        .collect();
    let mut out = Map::new();
    out.insert("results".into(), Value::Array(results));
    if let Some(image) = &o.image {
        out.insert("image".into(), json!(image));
    }
    out.insert("texel_fetches".into(), json!(o.texel_fetches));
    out.insert("register_writes".into(), json!(o.register_writes));
    out.insert("cycles".into(), json!(o.cycles));
    Value::Object(out)
}

// ---------------------------------------------------------------------------
// Random workloads
// ---------------------------------------------------------------------------

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

/// A random workload for tests: every format, 1..4 levels (odd sizes often,
/// small so runs are quick), random address modes and latency, bilinear and
/// nearest anywhere in the u, v range, gather4 with offsets at both ends,
/// conv_quad with kernels 3x3, 7x1, 1x7, 5x5, 19x1, 1x19, 2x2 or random
/// (clipped to max_kernel), and sometimes a small conv section.
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
                let shapes = [(3, 3), (7, 1), (1, 7), (5, 5), (19, 1), (1, 19), (2, 2), (0, 0)];
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
                Op::ConvQuad { x, y, level, channel: rng.below(channels) as u32, kernel }
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
        Some(ConvJob { level, channel: rng.below(channels) as u32, kernel })
    } else {
        None
    };
    Workload { texture: Texture { format, levels }, address, mem_latency, ops, conv }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's example input.
    fn example() -> Value {
        json!({"texture": {"format": "r8", "levels": [{"width": 4, "height": 2, "texels": [1,2,3,4,5,6,7,8]}]},
               "address": ["clamp", "repeat"], "mem_latency": 10,
               "ops": [{"op": "bilinear", "u": 384, "v": 128, "level": 0},
                       {"op": "gather4", "u": 256, "v": 256, "offset": [-1, 0], "level": 0, "channel": 0},
                       {"op": "conv_quad", "x": 0, "y": 0, "level": 0, "channel": 0,
                        "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}],
               "conv": {"level": 0, "channel": 0, "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}})
    }

    /// A one-level r8 texture of `w` x `h`, texel (x, y) = 10 * y + x.
    fn ramp(w: u32, h: u32) -> Texture {
        let texels = (0..h).flat_map(|y| (0..w).map(move |x| 10 * y + x)).collect();
        Texture { format: Format::R8, levels: vec![Level { width: w, height: h, texels }] }
    }

    fn workload(texture: Texture, address: [AddressMode; 2], mem_latency: u32, ops: Vec<Op>) -> Workload {
        Workload { texture, address, mem_latency, ops, conv: None }
    }

    const CLAMP: [AddressMode; 2] = [AddressMode::Clamp, AddressMode::Clamp];

    fn k3x3() -> Kernel {
        Kernel { width: 3, height: 3, weights: vec![1, 2, 1, 2, 4, 2, 1, 2, 1].into() }
    }

    #[test]
    fn spec_example() {
        let p = TextureParams::default();
        let w = parse_input(&example(), &p).unwrap();
        let o = run(&p, &w);
        // T: row 0 = 1 2 3 4, row 1 = 5 6 7 8; x clamp, y repeat (H = 2).
        // bilinear u = 384, v = 128: u' = 256 -> x0 = 1, a = 0; v' = 0 ->
        // y0 = 0, b = 0: exactly T(1, 0) = 2.
        assert_eq!(o.results[0], OpResult::Texel(vec![2]));
        // gather4 u = v = 256: x0 = y0 = 0; offset (-1, 0): T(-1,0) T(0,0)
        // T(-1,1) T(0,1) = (clamped x) 1 1 5 5.
        assert_eq!(o.results[1], OpResult::Texels([1, 1, 5, 5]));
        // conv_quad at (0, 0), 3x3 [1 2 1; 2 4 2; 1 2 1]: rows y-1, y, y+1.
        // pixel (0,0): y = -1, 0, 1 -> rows 1, 0, 1; x = -1, 0, 1 -> 0, 0, 1:
        //   (5 + 2*5 + 6) + (2*1 + 4*1 + 2*2) + (5 + 2*5 + 6) = 21 + 10 + 21 = 52
        // pixel (1,0): x = 0, 1, 2: (5+12+7) + (2+8+6) + 24 = 64
        // pixel (0,1): y = 0, 1, 2 -> rows 0, 1, 0: (1+2+2) + (10+20+12) + 5 = 52
        // pixel (1,1): (1+4+3) + (10+24+14) + 8 = 64
        assert_eq!(o.results[2], OpResult::Pixels { pixels: [52, 64, 52, 64], stitch: Stitch::S4x4, sub_ops: 1 });
        // conv section: quads (0,0) and (2,0). pixel (2,0): x = 1, 2, 3:
        //   (6+14+8) + (4+12+8) + 28 = 80; pixel (3,0): x = 2, 3, 3 (clamp):
        //   (7+16+8) + (6+16+8) + 31 = 92; pixel (2,1): (2+6+4) + (12+28+16)
        //   + 12 = 80; pixel (3,1): (3+8+4) + (14+32+16) + 15 = 92.
        assert_eq!(o.image, Some(vec![vec![52, 64, 80, 92], vec![52, 64, 80, 92]]));
        assert_eq!(o.n_ops, 3);
        assert_eq!(o.results.len(), 5);
        // Fetches: 4 + 4 + 16 + 2 * 16; selective writes 36 per quad.
        assert_eq!(o.texel_fetches, 56);
        assert_eq!(o.register_writes, 3 * 36);
        // Cycles, derived by hand again from the spec's Timing rules with the
        // prep stages (4 banks, D = 16, L = 10, PD = 1 + ceil(15 / 4) = 5):
        // descriptor writes in 0, 1, 2. bilinear accepted 3, prep stages
        // 0..4 in 4..=8, sequencer 9 (c + PD + 1), its one pass issues 9
        // (result 9 + L + 4 = 23). gather4 accepted 4 (stage 0 holds the
        // bilinear, moving on), stage 4 in 9, enters the sequencer at 10 as
        // the bilinear's pass empties it in 9: tile (-1, 0) clamps x to 0,
        // 0: texels 0, 1 share bank 0 and 2, 3 bank 2: passes {0, 2} at 10,
        // {1, 3} at 11 (result 25). The kernel writes wait for idle (the
        // result taken in 25): 26..=35. conv_quad A (0,0) accepted 36,
        // sequencer 42: tiles (-1,-1) 2 passes (x clamps), (1,-1) 1, (-1,1)
        // 2, (1,1) 1: passes 42..=47. Quad B (0,0) accepted 37, in stage 4
        // from 42, waits there, enters the sequencer at 48 (A's last pass
        // in 47): passes 48..=53. Quad C (2,0) accepted 38, stage 3 from
        // 42 (stage 4 held by B), stage 4 at 48, sequencer 54: tiles (1,-1)
        // 1, (3,-1) 2 (x 3, 4 clamp to 3), (1,1) 1, (3,1) 2: passes
        // 54..=59; result 59 + L + 4 = 73.
        assert_eq!(o.cycles, 74);
        let out = output_json(&p, &o);
        assert_eq!(
            out,
            json!({"results": [{"texel": [2]}, {"texels": [1, 1, 5, 5]},
                               {"pixels": [52, 64, 52, 64], "stitch": "4x4", "sub_ops": 1}],
                   "image": [[52, 64, 80, 92], [52, 64, 80, 92]],
                   "texel_fetches": 56, "register_writes": 108, "cycles": 74})
        );
        // Whole broadcast: 4 per fetched conv texel.
        let whole = TextureParams { broadcast: Broadcast::Whole, ..p };
        assert_eq!(run(&whole, &w).register_writes, 3 * 64);
    }

    #[test]
    fn spec_example_script() {
        let p = TextureParams::default();
        let w = parse_input(&example(), &p).unwrap();
        let s = script(&p, &w);
        let cfg_item = |addr, data| Item::Cfg { addr, data };
        let mut want = vec![
            // r8 = 0, x clamp = 0, y repeat = 1 at [5:4], levels - 1 = 0.
            cfg_item(0x000, 0x10),
            cfg_item(0x002, 0),
            cfg_item(0x003, 0x0001_0003),
            Item::Op { kind: OpKind::Bilinear, u: 384, v: 128, level: 0, channel: 0, dx: 0, dy: 0 },
            Item::Op { kind: OpKind::Gather4, u: 256, v: 256, level: 0, channel: 0, dx: -1, dy: 0 },
            cfg_item(0x001, 0x0202),
        ];
        for (j, row) in [[1, 2, 1], [2, 4, 2], [1, 2, 1]].iter().enumerate() {
            for (i, &wt) in row.iter().enumerate() {
                want.push(cfg_item(0x400 + 32 * j as u64 + i as u64, wt));
            }
        }
        for x in [0, 0, 2] {
            want.push(Item::Op { kind: OpKind::ConvQuad, u: x, v: 0, level: 0, channel: 0, dx: 0, dy: 0 });
        }
        assert_eq!(s, want);
        // A negative weight is written as its low weight_bits bits.
        let mut w2 = w.clone();
        w2.conv = None;
        if let Op::ConvQuad { kernel, .. } = &mut w2.ops[2] {
            let mut ws = kernel.weights.to_vec();
            ws[0] = -1;
            kernel.weights = ws.into();
        }
        assert!(script(&p, &w2).contains(&cfg_item(0x400, 0xff)));
    }

    #[test]
    fn bilinear_by_hand() {
        let p = TextureParams::default();
        let w = parse_input(&example(), &p).unwrap();
        // u = 448: u' = 320, x0 = 1, a = 64; v = 256: v' = 128, y0 = 0,
        // b = 128. T(1,0) = 2, T(2,0) = 3, T(1,1) = 6, T(2,1) = 7:
        // (2*192*128 + 3*64*128 + 6*192*128 + 7*64*128 + 32768) >> 16
        // = (278528 + 32768) >> 16 = 311296 >> 16 = 4 (exact value 4.25).
        let op = Op::Bilinear { u: 448, v: 256, level: 0 };
        assert_eq!(op_result(&p, &w, &op), OpResult::Texel(vec![4]));
        // Nearest at u = 767 (texel 2.99), v = 256 (texel 1): T(2, 1) = 7.
        let op = Op::Nearest { u: 767, v: 256, level: 0 };
        assert_eq!(op_result(&p, &w, &op), OpResult::Texel(vec![7]));
        // Rounding: half way between 0 and 1 rounds up; a quarter down.
        let t = Texture { format: Format::R16, levels: vec![Level { width: 2, height: 1, texels: vec![0, 1] }] };
        let w = workload(t, CLAMP, 1, vec![]);
        // u = 256 (x0 = 0, a = 128), v = 128 (y0 = 0, b = 0): (1*128*256 + 32768) >> 16 = 1.
        assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 256, v: 128, level: 0 }), OpResult::Texel(vec![1]));
        // a = 64: (64*256 + 32768) >> 16 = 0.
        assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 192, v: 128, level: 0 }), OpResult::Texel(vec![0]));
        // rgba8: every channel; gather4 one channel.
        let t = Texture {
            format: Format::Rgba8,
            levels: vec![Level { width: 2, height: 1, texels: vec![0x4030_2010, 0x8070_6050] }],
        };
        let w = workload(t, CLAMP, 1, vec![]);
        // a = 128: the mean of the two, rounded up: 0x30, 0x40, 0x50, 0x60.
        assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 256, v: 128, level: 0 }), OpResult::Texel(vec![0x30, 0x40, 0x50, 0x60]));
        assert_eq!(
            op_result(&p, &w, &Op::Gather4 { u: 256, v: 128, level: 0, dx: 0, dy: 0, channel: 3 }),
            OpResult::Texels([0x40, 0x80, 0x40, 0x80])
        );
    }

    #[test]
    fn address_modes() {
        use AddressMode::*;
        // clamp
        assert_eq!(address(Clamp, -3, 5), 0);
        assert_eq!(address(Clamp, 7, 5), 4);
        // repeat: Euclidean
        assert_eq!(address(Repeat, -1, 5), 4);
        assert_eq!(address(Repeat, -6, 5), 4);
        assert_eq!(address(Repeat, -5, 5), 0);
        assert_eq!(address(Repeat, 12, 5), 2);
        // mirror: 0 1 2 3 4 | 4 3 2 1 0 | 0 1 ...; -1 -> m = 9 -> 0, -2 -> 1
        assert_eq!(address(Mirror, -1, 5), 0);
        assert_eq!(address(Mirror, -2, 5), 1);
        assert_eq!(address(Mirror, -10, 5), 0);
        assert_eq!(address(Mirror, -11, 5), 0);
        assert_eq!(address(Mirror, 5, 5), 4);
        assert_eq!(address(Mirror, 9, 5), 0);
        assert_eq!(address(Mirror, 10, 5), 0);
        // size 1: everything is texel 0
        for x in [-9, -2, -1, 0, 1, 2, 9] {
            for m in [Clamp, Repeat, Mirror] {
                assert_eq!(address(m, x, 1), 0, "{m} {x}");
            }
        }
        // size 2 mirror: 0 1 1 0 0 1 ...; -1 -> 0, -2 -> 1, -3 -> 1
        assert_eq!([-3, -2, -1, 0, 1, 2, 3].map(|x| address(Mirror, x, 2)), [1, 1, 0, 0, 1, 1, 0]);
        // split: u below 2^(F-1) gives x0 = -1
        assert_eq!(split(0, 8), (-1, 128));
        assert_eq!(split(127, 8), (-1, 255));
        assert_eq!(split(128, 8), (0, 0));
        assert_eq!(split(1, 1), (0, 0));
        assert_eq!(split(0, 1), (-1, 1));
    }

    #[test]
    fn gather_with_negative_offsets_repeat_and_mirror() {
        let p = TextureParams::default();
        // ramp 3 x 2: row 0 = 0 1 2, row 1 = 10 11 12.
        let w = workload(ramp(3, 2), [AddressMode::Repeat, AddressMode::Mirror], 1, vec![]);
        // u = v = 128: x0 = y0 = 0; offset (-32, -32): x = -32, -31 -> (mod 3)
        // 1, 2; y = -32, -31 -> (mod 4) 0, 1 -> rows 0, 1.
        let op = Op::Gather4 { u: 128, v: 128, level: 0, dx: -32, dy: -32, channel: 0 };
        assert_eq!(op_result(&p, &w, &op), OpResult::Texels([1, 2, 11, 12]));
        // offset (31, 31): x = 31, 32 -> 1, 2; y = 31, 32 -> (mod 4) 3 -> 0, 0 -> 0.
        let op = Op::Gather4 { u: 128, v: 128, level: 0, dx: 31, dy: 31, channel: 0 };
        assert_eq!(op_result(&p, &w, &op), OpResult::Texels([1, 2, 1, 2]));
    }

    #[test]
    fn conv_wraps_to_acc_bits() {
        let p = TextureParams { acc_bits: 8, ..TextureParams::default() };
        let t = Texture { format: Format::R8, levels: vec![Level { width: 1, height: 1, texels: vec![255] }] };
        let w = workload(t, CLAMP, 1, vec![]);
        // 1x1 kernel, weight 1: 255 mod 256 as signed = -1.
        let k = Kernel { width: 1, height: 1, weights: vec![1].into() };
        let op = Op::ConvQuad { x: 0, y: 0, level: 0, channel: 0, kernel: k };
        assert_eq!(op_result(&p, &w, &op), OpResult::Pixels { pixels: [-1; 4], stitch: Stitch::None, sub_ops: 1 });
        // 2x1, weights -128, 127: 255 * -1 = -255 -> 1.
        let k = Kernel { width: 2, height: 1, weights: vec![-128, 127].into() };
        let op = Op::ConvQuad { x: 0, y: 0, level: 0, channel: 0, kernel: k };
        assert_eq!(op_result(&p, &w, &op), OpResult::Pixels { pixels: [1; 4], stitch: Stitch::None, sub_ops: 1 });
        assert_eq!(wrap_signed(128, 8), -128);
        assert_eq!(wrap_signed(-129, 8), 127);
        assert_eq!(wrap_signed(1 << 40, 32), 0);
    }

    #[test]
    fn stitch_codes_and_sub_ops() {
        // 3x3: patch 4x4, 2x2 tiles, one sub-operation.
        assert_eq!(stitch(3, 3), (Stitch::S4x4, 1));
        assert_eq!(stitch(2, 2), (Stitch::S4x4, 1));
        // width 1, height 7: patch 2x8, 1x4 tiles.
        assert_eq!(stitch(1, 7), (Stitch::S2x8, 1));
        // width 7, height 1: patch 8x2, 4x1 tiles.
        assert_eq!(stitch(7, 1), (Stitch::S8x2, 1));
        // width 19, height 1: 10x1 tiles, 3 sub-operations, no stitch.
        assert_eq!(stitch(19, 1), (Stitch::None, 3));
        assert_eq!(stitch(1, 19), (Stitch::None, 3));
        // 5x5: 3x3 tiles, 3 sub-operations; 19x19: 10x10 tiles, 25.
        assert_eq!(stitch(5, 5), (Stitch::None, 3));
        assert_eq!(stitch(19, 19), (Stitch::None, 25));
        assert_eq!(stitch(1, 1), (Stitch::None, 1));
        assert_eq!([Stitch::None, Stitch::S4x4, Stitch::S2x8, Stitch::S8x2].map(|s| s.code()), [0, 1, 2, 3]);
    }

    #[test]
    fn counts_3x3() {
        let op = Op::ConvQuad { x: 5, y: 5, level: 0, channel: 0, kernel: k3x3() };
        assert_eq!(texel_fetches(&op), 16);
        let whole = TextureParams { broadcast: Broadcast::Whole, ..TextureParams::default() };
        let selective = TextureParams { broadcast: Broadcast::Selective, ..TextureParams::default() };
        assert_eq!(register_writes(&whole, &op), 64);
        assert_eq!(register_writes(&selective, &op), 36);
        assert_eq!(register_writes(&whole, &Op::Bilinear { u: 0, v: 0, level: 0 }), 0);
    }

    /// The counters' closed forms against the per-tile rules of "Tiles" and
    /// "Broadcast and convolution", for every kernel shape up to 9x9.
    #[test]
    fn counts_match_tile_rules() {
        let p = TextureParams { banks: 1, ..TextureParams::default() };
        let w = workload(ramp(8, 8), CLAMP, 1, vec![]);
        for kw in 1..=9u32 {
            for kh in 1..=9u32 {
                let kernel = Kernel { width: kw, height: kh, weights: vec![1; (kw * kh) as usize].into() };
                let op = Op::ConvQuad { x: 3, y: 4, level: 0, channel: 0, kernel };
                let tl = tiles(&p, &w, &op);
                let (pw, ph) = (kw + 1, kh + 1);
                let tx = pw.div_ceil(2);
                assert_eq!(tl.len() as u32, tx * ph.div_ceil(2));
                let fetched: u32 = tl.iter().map(|t| t.mask.count_ones()).sum();
                assert_eq!(fetched as u64, texel_fetches(&op));
                let mut selective = 0u64;
                for (n, t) in tl.iter().enumerate() {
                    let (i, j) = (n as u32 % tx, n as u32 / tx);
                    for k in 0..4 {
                        if t.mask & (1 << k) == 0 {
                            continue;
                        }
                        let (a, b) = ((2 * i + (k & 1)) as i64, (2 * j + (k >> 1)) as i64);
                        for (dx, dy) in QUAD {
                            if (0..kw as i64).contains(&(a - dx)) && (0..kh as i64).contains(&(b - dy)) {
                                selective += 1;
                            }
                        }
                    }
                }
                let sel = TextureParams { broadcast: Broadcast::Selective, ..p.clone() };
                let whole = TextureParams { broadcast: Broadcast::Whole, ..p.clone() };
                assert_eq!(register_writes(&sel, &op), selective, "{kw}x{kh}");
                assert_eq!(register_writes(&whole, &op), 4 * fetched as u64, "{kw}x{kh}");
            }
        }
    }

    #[test]
    fn passes() {
        let t = |bank: [usize; 4], mask: u8| Tile { bank, mask };
        // 4 banks, distinct parities: one pass.
        assert_eq!(pass(&t([0, 1, 2, 3], 0b1111), 0b1111), (0b1111, 0b1111));
        // 2 banks: {0, 1} then {2, 3}.
        assert_eq!(pass(&t([0, 1, 0, 1], 0b1111), 0b1111), (0b0011, 0b11));
        assert_eq!(pass(&t([0, 1, 0, 1], 0b1111), 0b1100), (0b1100, 0b11));
        // 1 bank: one texel at a time, in order.
        assert_eq!(pass(&t([0; 4], 0b1111), 0b1110), (0b0010, 0b1));
        // Clamped x at an edge (texels 0, 1 in bank 0; 2, 3 in bank 2).
        assert_eq!(pass(&t([0, 0, 2, 2], 0b1111), 0b1111), (0b0101, 0b0101));
        // Tiles of a clamped corner: every texel is (0, 0), bank 0.
        let p = TextureParams::default();
        let w = workload(ramp(4, 4), CLAMP, 1, vec![]);
        assert_eq!(tiles(&p, &w, &Op::Bilinear { u: 0, v: 0, level: 0 }), vec![t([0; 4], 0b1111)]);
        // Repeat with an odd size: x = 2, 3 -> 2, 0 share bank 0.
        let w = workload(ramp(3, 4), [AddressMode::Repeat, AddressMode::Clamp], 1, vec![]);
        assert_eq!(tiles(&p, &w, &Op::Bilinear { u: 2 * 256 + 128, v: 128, level: 0 }), vec![t([0, 0, 2, 2], 0b1111)]);
        // Nearest at (1, 1): one texel (the others' banks are computed but not fetched).
        assert_eq!(tiles(&p, &w, &Op::Nearest { u: 256, v: 256, level: 0 }), vec![t([3, 2, 1, 0], 0b0001)]);
        // 19x1 conv: 10 tiles in a row, the last full (PW = 20), PH = 2.
        let k = Kernel { width: 19, height: 1, weights: vec![0; 19].into() };
        let tl = tiles(&p, &workload(ramp(40, 4), CLAMP, 1, vec![]), &Op::ConvQuad { x: 20, y: 1, level: 0, channel: 0, kernel: k });
        assert_eq!(tl.len(), 10);
        assert!(tl.iter().all(|t| t.mask == 0b1111));
        // 2x2 conv: PW = PH = 3: masks 1111, 0101, 0011, 0001.
        let k = Kernel { width: 2, height: 2, weights: vec![0; 4].into() };
        let tl = tiles(&p, &workload(ramp(8, 8), CLAMP, 1, vec![]), &Op::ConvQuad { x: 4, y: 4, level: 0, channel: 0, kernel: k });
        assert_eq!(tl.iter().map(|t| t.mask).collect::<Vec<_>>(), vec![0b1111, 0b0101, 0b0011, 0b0001]);
    }

    /// An interior bilinear (its tile is one pass with 4 banks).
    fn interior() -> Op {
        Op::Bilinear { u: 2 * 256 + 128, v: 2 * 256 + 128, level: 0 }
    }

    #[test]
    fn prep_stages() {
        // PD = 1 + ceil(CW / 4), CW = max(IB, offset_bits, 6) + 2.
        // Defaults: IB = 13, CW = 15, PD = 5 (the spec's "5 at the defaults").
        let d = TextureParams::default();
        assert_eq!(prep_depth(&d), 5);
        // max_size 2: IB = 2, CW = 8, PD = 3; max_size 16, offset_bits 8:
        // CW = 10, PD = 4; max_size 256: IB = 9, CW = 11, PD = 4.
        assert_eq!(prep_depth(&TextureParams { max_size: 2, offset_bits: 2, ..d.clone() }), 3);
        assert_eq!(prep_depth(&TextureParams { max_size: 16, offset_bits: 8, ..d.clone() }), 4);
        assert_eq!(prep_depth(&TextureParams { max_size: 256, ..d.clone() }), 4);
        // CW is the params' signed texel coordinate width.
        for n in 1..=12 {
            for offset_bits in 2..=8 {
                let p = TextureParams { max_size: 1 << n, offset_bits, ..d.clone() };
                assert_eq!(prep_depth(&p), 1 + p.coord_bits().div_ceil(4) as usize);
            }
        }
    }

    #[test]
    fn timing_single_bilinear() {
        // Derived by hand again from the spec's Timing rules with the prep
        // stages (defaults: PD = 5). Script: 3 descriptor writes (cycles 0,
        // 1, 2), the op accepted in c = 3, its result in c + PD + L + 5 =
        // L + 13: cycles = L + 14.
        for l in [1, 2, 10, 64] {
            let w = workload(ramp(4, 4), CLAMP, l, vec![interior()]);
            assert_eq!(run(&TextureParams::default(), &w).cycles, l as u64 + 14, "L = {l}");
        }
        // One configuration write, then the op: write in 0, op accepted in
        // 1, prep stages 2..=6, sequencer and pass 7, request 8, collect
        // 8+L, S1 9+L, S2 10+L, result 11+L: cycles = L + 12.
        let p = TextureParams::default();
        let one_pass = Tile { bank: [0, 1, 2, 3], mask: 0b1111 };
        for l in [1, 10] {
            assert_eq!(simulate(&p, l, &[Step::Cfg, Step::Op(0)], &|_| vec![one_pass]), l + 12);
            // An op alone: accepted in 0, result in PD + L + 5 = L + 10.
            assert_eq!(simulate(&p, l, &[Step::Op(0)], &|_| vec![one_pass]), l + 11);
        }
        // A smaller unit, PD = 3 (max_size 2: CW = 8): result in L + 8.
        let small = TextureParams { max_size: 2, offset_bits: 2, ..p.clone() };
        assert_eq!(simulate(&small, 10, &[Step::Op(0)], &|_| vec![one_pass]), 19);
        assert_eq!(simulate(&p, 10, &[], &|_| vec![]), 0);
        // Writes only: one per cycle.
        assert_eq!(simulate(&p, 10, &[Step::Cfg, Step::Cfg], &|_| vec![]), 2);
    }

    #[test]
    fn timing_back_to_back_and_tag_queue() {
        // Derived by hand again from the spec's Timing rules with the prep
        // stages (defaults: PD = 5, L = 10).
        let p = TextureParams::default();
        // Two bilinears: accepted 3 and 4 (stage 0 moves on in 4), in the
        // sequencer at 9 and 10 (the first's pass issues in 9 and empties
        // it), results 9 + L + 4 = 23 and 24.
        let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(), interior()]);
        assert_eq!(run(&p, &w).cycles, 25);
        // D = 2, L = 10, four bilinears accepted 3, 4, 5, 6: passes issue
        // at 9, 10; a pass issued in i is popped at the end of i + 1 + L,
        // so the count is 2 until the start of 21. The third op waits in the
        // sequencer (from 11), the fourth in prep stage 4 (from 11): passes
        // 21, 22 (the fourth enters at 22). Result = issue + L + 4: 23, 24,
        // 35, 36.
        let d2 = TextureParams { max_outstanding: 2, ..p.clone() };
        let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(); 4]);
        assert_eq!(run(&d2, &w).cycles, 37);
        // Full rate needs D >= L + 2: 20 ops accepted 3..=22 (the chain
        // never fills), passes 9..=28, last result 42.
        let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(); 20]);
        assert_eq!(run(&TextureParams { max_outstanding: 12, ..p.clone() }, &w).cycles, 43);
        assert!(run(&TextureParams { max_outstanding: 11, ..p.clone() }, &w).cycles > 43);
    }

    #[test]
    fn timing_prep_chain_fills() {
        // Derived by hand from the spec's rule 2 (defaults: PD = 5, L = 10,
        // 1 bank: an interior bilinear is 4 passes). Op n (n = 0..8)
        // accepted a_n; the sequencer takes an op every 4 cycles.
        // Op 0: accepted 3, sequencer 9, passes 9..=12.
        // Op 1: accepted 4, stage 4 from 9, sequencer 13 (passes 13..=16).
        // Op 2: accepted 5, stage 3 from 9, stage 4 13, sequencer 17.
        // Op 3: accepted 6, stage 2 from 9, ... sequencer 21.
        // Op 4: accepted 7, stage 1 from 9, sequencer 25.
        // Op 5: accepted 8, stage 0 from 9: the chain is full; stage 0
        //   moves on in 12 (the sequencer takes op 1), so op 6 is accepted
        //   in 12 (not 9), op 7 in 16, op 8 in 20.
        // The sequencer takes op n at 9 + 4n: op 8 in 41, passes 41..=44,
        // result 44 + L + 4 = 58: cycles 59 (the 4 passes per op set the
        // pace; the later acceptances do not show in cycles).
        let p = TextureParams { banks: 1, ..TextureParams::default() };
        let one_bank_tile = Tile { bank: [0; 4], mask: 0b1111 };
        let mut steps = vec![Step::Cfg, Step::Cfg, Step::Cfg];
        steps.extend((0..9).map(Step::Op));
        let (cycles, accepted) = schedule(&p, 10, &steps, &|_| vec![one_bank_tile]);
        assert_eq!(cycles, 59);
        assert_eq!(accepted, vec![3, 4, 5, 6, 7, 8, 12, 16, 20]);
    }

    #[test]
    fn timing_passes_per_tile() {
        // Derived by hand again from the spec's Timing rules with the prep
        // stages (defaults: PD = 5): the op is accepted in 3 and enters the
        // sequencer in 3 + PD + 1 = 9.
        let l = 10u64;
        // 1 bank: 4 passes at 9..=12; result 12 + L + 4: cycles L + 17.
        let w = workload(ramp(4, 4), CLAMP, l as u32, vec![interior()]);
        assert_eq!(run(&TextureParams { banks: 1, ..TextureParams::default() }, &w).cycles, l + 17);
        // 2 banks: 2 passes at 9, 10: cycles L + 15.
        assert_eq!(run(&TextureParams { banks: 2, ..TextureParams::default() }, &w).cycles, l + 15);
        // 4 banks at a clamped corner: all four texels are (0, 0) in bank 0:
        // 4 passes, as with 1 bank; the value is T(0, 0).
        let w = workload(ramp(4, 4), CLAMP, l as u32, vec![Op::Bilinear { u: 0, v: 0, level: 0 }]);
        let o = run(&TextureParams::default(), &w);
        assert_eq!(o.cycles, l + 17);
        assert_eq!(o.results, vec![OpResult::Texel(vec![0])]);
        // Nearest: one texel, one pass: L + 14.
        let w = workload(ramp(4, 4), CLAMP, l as u32, vec![Op::Nearest { u: 0, v: 0, level: 0 }]);
        assert_eq!(run(&TextureParams::default(), &w).cycles, l + 14);
    }

    #[test]
    fn timing_conv_quad() {
        let p = TextureParams::default();
        let l = 10u64;
        // Derived by hand again from the spec's Timing rules with the prep
        // stages (defaults: PD = 5).
        // 8x8, 3x3 at (4, 4): tiles at (3,3), (5,3), (3,5), (5,5), all inside:
        // one pass each. Writes: 3 descriptor + 1 + 9 kernel = 13 (0..=12);
        // op accepted 13, sequencer 13 + PD + 1 = 19, passes 19..=22, result
        // 22 + L + 4 = L + 26.
        let conv = |k: Kernel| Op::ConvQuad { x: 4, y: 4, level: 0, channel: 0, kernel: k };
        let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3())]);
        assert_eq!(run(&p, &w).cycles, l + 27);
        // The same kernel again: no writes, accepted in 14, in prep stage 4
        // from 19, enters the sequencer at 23 (the first's last pass in 22),
        // passes 23..=26: result L + 30.
        let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3()), conv(k3x3())]);
        assert_eq!(run(&p, &w).cycles, l + 31);
        // Then a 1x1 kernel: its 2 writes wait for idle (the first result
        // taken in L + 26): L + 27, L + 28; op at L + 29, sequencer and its
        // one tile (mask 1111, patch 2x2, one pass) at L + 35, result
        // L + 35 + L + 4.
        let k1 = Kernel { width: 1, height: 1, weights: vec![3].into() };
        let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3()), conv(k1)]);
        assert_eq!(run(&p, &w).cycles, 2 * l + 40);
    }

    #[test]
    fn layout_and_banks() {
        // 4 banks, 5x3 then 2x1: pitch 3, rows 2 -> level 1 at base 6; 1 x 1.
        let p = TextureParams::default();
        let t = Texture {
            format: Format::R8,
            levels: vec![
                Level { width: 5, height: 3, texels: (0..15).collect() },
                Level { width: 2, height: 1, texels: vec![100, 101] },
            ],
        };
        assert_eq!(level_bases(&p, &t), vec![0, 6]);
        let b = bank_words(&p, &t);
        assert_eq!(b.len(), 4);
        assert!(b.iter().all(|bank| bank.len() == 7));
        // (x, y) -> bank (x&1) + 2(y&1), word (y>>1)*3 + (x>>1).
        assert_eq!(b[0], vec![0, 2, 4, 10, 12, 14, 100]);
        assert_eq!(b[1], vec![1, 3, 0, 11, 13, 0, 101]);
        assert_eq!(b[2], vec![5, 7, 9, 0, 0, 0, 0]);
        assert_eq!(b[3], vec![6, 8, 0, 0, 0, 0, 0]);
        // 1 bank: pitch = width, row by row.
        let p1 = TextureParams { banks: 1, ..p.clone() };
        assert_eq!(level_bases(&p1, &t), vec![0, 15]);
        assert_eq!(bank_words(&p1, &t)[0], (0..15).chain([100, 101]).collect::<Vec<u32>>());
        // 2 banks: by x parity, pitch 3, rows 3.
        let p2 = TextureParams { banks: 2, ..p };
        assert_eq!(level_bases(&p2, &t), vec![0, 9]);
        assert_eq!(bank_words(&p2, &t)[1], vec![1, 3, 0, 6, 8, 0, 11, 13, 0, 101]);
    }

    #[test]
    fn odd_conv_section_drops_outside_pixels() {
        let p = TextureParams::default();
        let mut w = workload(ramp(3, 3), CLAMP, 4, vec![]);
        let k = Kernel { width: 1, height: 1, weights: vec![2].into() };
        w.conv = Some(ConvJob { level: 0, channel: 0, kernel: k });
        let o = run(&p, &w);
        // Quads (0,0), (2,0), (0,2), (2,2): 1x1 weight 2 doubles each texel.
        assert_eq!(o.results.len(), 4);
        assert_eq!(o.image, Some(vec![vec![0, 2, 4], vec![20, 22, 24], vec![40, 42, 44]]));
        // Quad (2,2)'s pixel (3, 3) is clamped to (2, 2): computed, not shown.
        // (A 1x1 kernel's patch is 2x2: one tile, no stitch code.)
        assert_eq!(o.results[3], OpResult::Pixels { pixels: [44, 44, 44, 44], stitch: Stitch::None, sub_ops: 1 });
        assert_eq!(output_json(&p, &o)["results"], json!([]));
        assert_eq!(o.texel_fetches, 16);
    }

    // ---- parse_input ----

    fn perrs(v: Value, p: &TextureParams) -> Vec<String> {
        parse_input(&v, p).unwrap_err().0.iter().map(|e| e.to_string()).collect()
    }

    fn tex() -> Value {
        json!({"format": "r8", "levels": [{"width": 2, "height": 2, "texels": [1, 2, 3, 4]}]})
    }

    #[test]
    fn parse_defaults() {
        let p = TextureParams::default();
        let w = parse_input(
            &json!({"texture": tex(), "ops": [{"op": "gather4", "u": 0, "v": 0}, {"op": "nearest", "u": 1, "v": 2}]}),
            &p,
        )
        .unwrap();
        assert_eq!(w.address, CLAMP);
        assert_eq!(w.mem_latency, 10);
        assert_eq!(w.ops, vec![
            Op::Gather4 { u: 0, v: 0, level: 0, dx: 0, dy: 0, channel: 0 },
            Op::Nearest { u: 1, v: 2, level: 0 },
        ]);
        assert_eq!(w.conv, None);
        // rgba8 texels pack r in 7:0 .. a in 31:24; a mip chain.
        let v = json!({"texture": {"format": "rgba8", "levels": [
            {"width": 3, "height": 1, "texels": [[1, 2, 3, 4], [0, 0, 0, 255], [255, 0, 0, 0]]},
            {"width": 1, "height": 1, "texels": [[9, 9, 9, 9]]}]}});
        let w = parse_input(&v, &p).unwrap();
        assert_eq!(w.texture.levels[0].texels, vec![0x0403_0201, 0xff00_0000, 0xff]);
        assert_eq!(w.texture.levels[1].texels, vec![0x0909_0909]);
    }

    #[test]
    fn parse_reports_every_violation() {
        let p = TextureParams::default();
        let v = json!({
            "texture": {"format": "r16", "levels": [
                {"width": 4, "height": 3, "texels": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 65536]},
                {"width": 3, "height": 1, "texels": [0, 1, 2]}]},
            "address": ["clamp", "wrap"],
            "mem_latency": 65,
            "ops": [
                {"op": "bilinear", "u": 0, "v": 2097152, "level": 2, "channel": 0},
                {"op": "gather4", "u": 0, "v": 0, "offset": [-33, 31], "channel": 1},
                {"op": "conv_quad", "x": 8192, "y": 0,
                 "kernel": {"width": 20, "height": 1, "weights": [128, -129]}},
                {"op": "sample"}
            ],
            "conv": {"level": 0, "kernel": {"width": 1, "height": 1, "weights": [1, 2]}, "x": 1}
        });
        assert_eq!(
            perrs(v, &p),
            vec![
                "input `texture.levels[0].texels[11]` = 65536: must be an integer from 0 to 65535",
                "input `texture.levels[1].width` = 3: must be an integer from 2 to 2 (max(1, 4 >> 1): levels[0].width halved)",
                "input `address[1]` = \"wrap\": must be one of clamp, repeat, mirror",
                "input `mem_latency` = 65: must be an integer from 1 to 64",
                "input `ops[0].channel` = (given): must be absent: a bilinear op's keys are op, u, v, level",
                "input `ops[0].level` = 2: must be an integer from 0 to 1 (below the texture's 2 levels)",
                "input `ops[0].v` = 2097152: must be an integer from 0 to 2097151",
                "input `ops[1].offset[0]` = -33: must be an integer from -32 to 31",
                "input `ops[1].channel` = 1: must be an integer from 0 to 0 (below the 1 channels of r16)",
                "input `ops[2].x` = 8192: must be an integer from 0 to 8191",
                "input `ops[2].kernel.width` = 20: must be an integer from 1 to 19 (max_kernel)",
                "input `ops[2].kernel.weights[0]` = 128: must be an integer from -128 to 127",
                "input `ops[2].kernel.weights[1]` = -129: must be an integer from -128 to 127",
                "input `ops[3].op` = \"sample\": must be one of bilinear, nearest, gather4, conv_quad",
                "input `conv.x` = (given): must be absent: keys are level, channel, kernel",
                "input `conv.kernel.weights` = a list of 2 weights: must be a list of 1 weights (width 1 x height 1)",
            ]
        );
    }

    #[test]
    fn parse_messages() {
        let p = TextureParams::default();
        let with = |extra: Value| {
            let mut o = json!({"texture": tex()});
            for (k, v) in extra.as_object().unwrap() {
                o[k] = v.clone();
            }
            o
        };
        let cases: Vec<(Value, &str)> = vec![
            (json!([]), "input `(file)` = []: must be a JSON object with a `texture`"),
            (json!({}), "input `texture` = (missing): must be an object {format, levels}"),
            (with(json!({"extra": 1})), "input `extra` = (given): must be absent: keys are texture, address, mem_latency, ops, conv"),
            (json!({"texture": {"levels": []}}), "input `texture.format` = (missing): must be one of r8, r16, rgba8"),
            (
                json!({"texture": {"format": "r8", "levels": []}}),
                "input `texture.levels` = a list of 0 levels: must be a list of 1 to 13 levels",
            ),
            (
                json!({"texture": {"format": "r8", "levels": [{"width": 0, "height": 1, "texels": []}]}}),
                "input `texture.levels[0].width` = 0: must be an integer from 1 to 4096",
            ),
            (
                json!({"texture": {"format": "r8", "levels": [{"width": 4097, "height": 1, "texels": []}]}}),
                "input `texture.levels[0].width` = 4097: must be an integer from 1 to 4096",
            ),
            (
                json!({"texture": {"format": "r8", "levels": [{"width": 2, "height": 1, "texels": [1]}]}}),
                "input `texture.levels[0].texels` = a list of 1 texels: must be a list of 2 texels (width 2 x height 1)",
            ),
            (
                json!({"texture": {"format": "rgba8", "levels": [{"width": 1, "height": 1, "texels": [[1, 2, 3]]}]}}),
                "input `texture.levels[0].texels[0]` = [1,2,3]: must be a list [r, g, b, a] of integers from 0 to 255",
            ),
            (
                json!({"texture": {"format": "r8", "levels": [{"width": 1, "height": 1, "texels": [256]}]}}),
                "input `texture.levels[0].texels[0]` = 256: must be an integer from 0 to 255",
            ),
            (
                json!({"texture": {"format": "r8", "levels": [{"width": 1, "height": 1, "texels": [0]}, {"width": 1, "height": 0, "texels": []}]}}),
                "input `texture.levels[1].height` = 0: must be an integer from 1 to 1 (max(1, 1 >> 1): levels[0].height halved)",
            ),
            (with(json!({"address": "clamp"})), "input `address` = \"clamp\": must be a list [x mode, y mode], each clamp, repeat or mirror"),
            (with(json!({"mem_latency": 0})), "input `mem_latency` = 0: must be an integer from 1 to 64"),
            (with(json!({"ops": {}})), "input `ops` = {}: must be a list of ops"),
            (with(json!({"ops": [3]})), "input `ops[0]` = 3: must be an object"),
            (with(json!({"ops": [{"u": 0}]})), "input `ops[0].op` = (missing): must be one of bilinear, nearest, gather4, conv_quad"),
            (with(json!({"ops": [{"op": "nearest", "v": 0}]})), "input `ops[0].u` = (missing): must be an integer from 0 to 2097151"),
            (with(json!({"ops": [{"op": "nearest", "u": -1, "v": 0}]})), "input `ops[0].u` = -1: must be an integer from 0 to 2097151"),
            (
                with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 8192, "kernel": {"width": 1, "height": 1, "weights": [0]}}]})),
                "input `ops[0].y` = 8192: must be an integer from 0 to 8191",
            ),
            (
                with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "offset": [0]}]})),
                "input `ops[0].offset` = [0]: must be a list [dx, dy] of two integers from -32 to 31",
            ),
            (
                with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "offset": [0, 32]}]})),
                "input `ops[0].offset[1]` = 32: must be an integer from -32 to 31",
            ),
            (
                with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "x": 0}]})),
                "input `ops[0].x` = (given): must be absent: a gather4 op's keys are op, u, v, offset, level, channel",
            ),
            (
                with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0}]})),
                "input `ops[0].kernel` = (missing): must be an object {width, height, weights}",
            ),
            (
                with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "kernel": {"width": 1, "height": 0, "weights": []}}]})),
                "input `ops[0].kernel.height` = 0: must be an integer from 1 to 19 (max_kernel)",
            ),
            (
                with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "u": 0, "kernel": {"width": 1, "height": 1, "weights": [0]}}]})),
                "input `ops[0].u` = (given): must be absent: a conv_quad op's keys are op, x, y, level, channel, kernel",
            ),
            (
                with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "kernel": {"width": 1, "height": 1}}]})),
                "input `ops[0].kernel.weights` = (missing): must be a list of width x height integers, row by row",
            ),
            (with(json!({"conv": []})), "input `conv` = []: must be an object {level, channel, kernel}"),
            (with(json!({"conv": {"level": 1}})), "input `conv.level` = 1: must be an integer from 0 to 0 (below the texture's 1 levels)"),
        ];
        for (v, want) in cases {
            assert_eq!(perrs(v.clone(), &p)[0], want, "{v}");
        }
    }

    #[test]
    fn parse_layout_must_fit() {
        // 1 bank, addr_bits 8: 256 words. 16x16 = 256 fits, plus a second
        // level 8x8 (64 more) does not.
        let p = TextureParams { banks: 1, addr_bits: 8, ..TextureParams::default() };
        let lv = |n: u32| json!({"width": n, "height": n, "texels": vec![0; (n * n) as usize]});
        let fits = json!({"texture": {"format": "r8", "levels": [lv(16)]}});
        assert!(parse_input(&fits, &p).is_ok());
        let big = json!({"texture": {"format": "r8", "levels": [lv(16), lv(8)]}});
        assert_eq!(
            perrs(big, &p),
            vec!["input `texture.levels` = a layout of 320 words per bank: must be at most 2^addr_bits = 256 words per bank"]
        );
        // Too many levels for max_size 4 (3 levels at most).
        let p = TextureParams { max_size: 4, ..TextureParams::default() };
        let v = json!({"texture": {"format": "r8", "levels": [lv(4), lv(2), lv(1), lv(1)]}});
        assert_eq!(perrs(v, &p), vec!["input `texture.levels` = a list of 4 levels: must be a list of 1 to 3 levels"]);
    }

    // ---- random workloads ----

    fn param_sets() -> Vec<TextureParams> {
        let d = TextureParams::default();
        vec![
            d.clone(),
            TextureParams { banks: 1, max_outstanding: 2, ..d.clone() },
            TextureParams { banks: 2, broadcast: Broadcast::Whole, max_outstanding: 5, ..d.clone() },
            TextureParams {
                banks: 4,
                max_size: 2,
                frac_bits: 1,
                offset_bits: 2,
                max_kernel: 1,
                weight_bits: 2,
                acc_bits: 8,
                broadcast: Broadcast::Whole,
                max_outstanding: 2,
                addr_bits: 8,
            },
            TextureParams { max_size: 16, frac_bits: 10, offset_bits: 8, max_kernel: 31, weight_bits: 16, acc_bits: 48, addr_bits: 8, ..d },
        ]
    }

    #[test]
    fn random_workloads_are_valid_and_run() {
        for (n, p) in param_sets().iter().enumerate() {
            for seed in 0..40 {
                let mut rng = Rng::new(seed * 10 + n as u64);
                let w = random_workload(&mut rng, p, 12);
                // What the generator makes, the parser accepts (round trip
                // through the input format).
                let v = to_input(&w);
                assert_eq!(parse_input(&v, p).as_ref(), Ok(&w), "seed {seed}");
                let o = run(p, &w);
                assert_eq!(o.results.len(), all_ops(&w).len());
                let fetched: u64 =
                    all_ops(&w).iter().map(|op| tiles(p, &w, op).iter().map(|t| t.mask.count_ones() as u64).sum::<u64>()).sum();
                assert_eq!(fetched, o.texel_fetches);
                assert!(o.texel_fetches < 3000, "seed {seed}: {} fetches", o.texel_fetches);
                // Each op's result at least PD + L + 5 after its acceptance.
                assert!(o.cycles >= (prep_depth(p) + 6) as u64 + w.mem_latency as u64);
                for r in &o.results {
                    if let OpResult::Pixels { pixels, .. } = r {
                        let half = 1i64 << (p.acc_bits - 1);
                        assert!(pixels.iter().all(|x| (-half..half).contains(x)));
                    }
                }
            }
        }
    }

    /// A workload back as an input file.
    fn to_input(w: &Workload) -> Value {
        let texel = |t: u32| match w.texture.format {
            Format::Rgba8 => json!([t & 0xff, (t >> 8) & 0xff, (t >> 16) & 0xff, t >> 24]),
            _ => json!(t),
        };
        let kernel = |k: &Kernel| json!({"width": k.width, "height": k.height, "weights": &*k.weights});
        let levels: Vec<Value> = w
            .texture
            .levels
            .iter()
            .map(|l| json!({"width": l.width, "height": l.height, "texels": l.texels.iter().map(|&t| texel(t)).collect::<Vec<_>>()}))
            .collect();
        let ops: Vec<Value> = w
            .ops
            .iter()
            .map(|op| match op {
                Op::Bilinear { u, v, level } => json!({"op": "bilinear", "u": u, "v": v, "level": level}),
                Op::Nearest { u, v, level } => json!({"op": "nearest", "u": u, "v": v, "level": level}),
                Op::Gather4 { u, v, level, dx, dy, channel } => {
                    json!({"op": "gather4", "u": u, "v": v, "level": level, "offset": [dx, dy], "channel": channel})
                }
                Op::ConvQuad { x, y, level, channel, kernel: k } => {
                    json!({"op": "conv_quad", "x": x, "y": y, "level": level, "channel": channel, "kernel": kernel(k)})
                }
            })
            .collect();
        let mut v = json!({
            "texture": {"format": w.texture.format.name(), "levels": levels},
            "address": [w.address[0].name(), w.address[1].name()],
            "mem_latency": w.mem_latency,
            "ops": ops,
        });
        if let Some(c) = &w.conv {
            v["conv"] = json!({"level": c.level, "channel": c.channel, "kernel": kernel(&c.kernel)});
        }
        v
    }

    /// The model's timing against a second, closed-form reading of the
    /// no-stall schedule: op n leaves prep stage k (k = 0..PD-1) in cycle
    /// `m[n][k] = max(m[n][k-1] + 1, m[n-1][k+1])` (`m[n][-1]` its
    /// acceptance; it may leave as the op before it leaves stage k+1, and
    /// "leaving" stage PD is the sequencer taking the next op, in the
    /// cycle of the op's last pass); an op is accepted when the op before
    /// it leaves stage 0 at the earliest; its first pass can issue in
    /// `m[n][PD-1] + 1`; passes issue one per cycle (at most D in the tag
    /// queue, each for L + 1 cycles); an op's result comes L + 4 after its
    /// last pass, and a configuration write waits for every earlier result.
    #[test]
    fn timing_matches_closed_form() {
        for (n, p) in param_sets().iter().enumerate() {
            let pd = prep_depth(p);
            for seed in 0..40 {
                let mut rng = Rng::new(1000 + seed * 10 + n as u64);
                let w = random_workload(&mut rng, p, 10);
                let l = w.mem_latency as u64;
                let d = p.max_outstanding as usize;
                let ops = all_ops(&w);
                let mut op_i = 0;
                let mut t = 0u64; // the first cycle the next item may handshake
                let mut issues: Vec<u64> = Vec::new(); // every pass's issue cycle
                let mut last_result = 0u64;
                let mut last = None;
                // The op before's leaving cycles: prep stages 0..PD-1, then
                // the sequencer (its last pass); 0 before any op (every
                // later cycle is past them).
                let mut prev_leaves = vec![0u64; pd + 1];
                let mut accepted = Vec::new();
                for item in script(p, &w) {
                    match item {
                        Item::Cfg { .. } => {
                            let c = t.max(if op_i > 0 { last_result + 1 } else { 0 });
                            last = Some(c);
                            t = c + 1;
                        }
                        Item::Op { .. } => {
                            let c = t.max(prev_leaves[0]);
                            accepted.push(c);
                            let mut leaves = vec![0u64; pd + 1];
                            let mut at = c; // the cycle it entered the stage, minus one
                            for (k, leave) in leaves[..pd].iter_mut().enumerate() {
                                *leave = (at + 1).max(prev_leaves[k + 1]);
                                at = *leave;
                            }
                            let mut i = leaves[pd - 1] + 1;
                            for tile in tiles(p, &w, &ops[op_i]) {
                                let mut todo = tile.mask;
                                while todo != 0 {
                                    // Count < D: the pass d back must be popped (issued + L + 1 < i).
                                    if issues.len() >= d {
                                        i = i.max(issues[issues.len() - d] + l + 2);
                                    }
                                    issues.push(i);
                                    todo &= !pass(&tile, todo).0;
                                    i += 1;
                                }
                            }
                            let last_issue = i - 1;
                            // The sequencer takes the next op in the cycle of the last issue.
                            leaves[pd] = last_issue;
                            prev_leaves = leaves;
                            last_result = last_issue + l + 4;
                            last = Some(c.max(last.unwrap_or(0)));
                            t = c + 1;
                            op_i += 1;
                        }
                    }
                }
                let want = if op_i > 0 { last_result.max(last.unwrap_or(0)) + 1 } else { last.map_or(0, |c| c + 1) };
                assert_eq!(run(p, &w).cycles, want, "params {n} seed {seed}");
                let (_, sim_accepted) = schedule(p, l, &steps(&script(p, &w)), &|i| tiles(p, &w, &ops[i]));
                assert_eq!(sim_accepted, accepted, "params {n} seed {seed}");
            }
        }
    }
}
