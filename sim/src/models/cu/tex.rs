//! `tex` (docs/cu.md, "`tex`: the texture unit on a texture in the
//! scratchpad", "The scratchpad" and "Texture operations"): bilinear,
//! nearest and gather4 samples from a coordinate list, and the 2x2-quad
//! convolution, on the `texture` block's hardware reading a packed texture
//! in the share.
//!
//! The values and the unit's timing are the texture model's
//! (`models::texture`): [`op_result`] gives each op's result from the
//! formulas of docs/texture.md, [`handshakes`] plays that document's
//! "Timing" rules with `L = 1` and every `ready` high (what docs/cu.md
//! argues holds for the ops as the unit offers them). This file builds the
//! unit's parameters ([`texture_params`]), the texture (one level, `W x H`,
//! format `F`, modes `MX`, `MY`, its texels read from the scratchpad) and
//! the ops, and lays the operation's cycles around them. `W`, `H` and a
//! conv's kernel size come from the value of `rb`: `W` = bits 12:0, `H` =
//! bits 28:16, `KW - 1` = bits 15:13, `KH - 1` = bits 31:29 (the sample
//! kinds ignore bits 15:13 and 31:29). With `g` the start cycle:
//!
//! ```text
//! cfg   g+1 0x000 (F, MX << 2, MY << 4)   g+2 0x002 (0)   g+3 0x003 (W-1, H-1 << 16)
//! samples: t_0 = g + 4, t_i = (sample i-1's last write) + 1
//!   READ u: requested on rd5 in t (word at L + 8i), taken t + 1
//!   READ v: t + 2 (L + 8i + 4), taken t + 3
//!   op offered from t + 4: taken in a = t + 4 (the unit is idle)
//!   result taken in c = a + (its result's cycle in the texture timing of
//!     the op alone); words written in c + 1 .. c + nw at O + 4*nw*i ..
//! conv: cfg g+4 0x001 (KW-1, KH-1 << 8); weight m = j*KW + i requested on
//!   rd5 in g + 5 + m (byte T - KW*KH + m), written to 0x400 + 32j + i in
//!   g + 6 + m; quads offered from B = g + 6 + KW*KH, back to back: the
//!   texture timing of the script of the QW*QH quads (no configuration
//!   items) shifted by B; result q taken in r_q, its four pixels written in
//!   r_q + 1 .. r_q + 4 (the writer never holds a result: r_q >= r_{q-1} + 4,
//!   asserted)
//! done: the cycle of the last write
//! ```
//!
//! With `PD = 5` prep stages and one bank (the defaults here: `max_size =
//! 4096` gives `IB = 13`, `CW = 15`), an op alone accepted in `a` issues its
//! passes (one texel each) in `a + 6 ..`, and its result is taken 4 + L = 5
//! cycles after its last pass: `a + 11` for `nearest`, `a + 14` for
//! `bilinear` and `gather4`.
//!
//! Data: a sample's coordinates and texels are read after the earlier
//! samples' writes (its steps begin after them), so a sample sees what an
//! earlier one wrote, coordinates and texels alike (a sample's output may
//! overlap the texture: only a conv's output may not). A conv reads the
//! weights before any write and its writes never meet the texture, so its
//! texture is the one at `g`.
//!
//! Like the vector operations and `mma`, [`run`] plays the whole operation
//! in its start cycle `g` (nothing else touches the scratchpad while it is
//! in progress) and returns its done cycle; the scratchpad and the banks'
//! read history (`rd5`) end as they would cycle by cycle.
//!
//! Readings of the spec where it leaves a choice:
//! - `bilinear` and `nearest` return every channel of the format and use no
//!   channel, but their `k` is checked all the same ("its channel is not
//!   below the format's channels" is the `field` error whatever the kind).
//! - `align` is checked before `smem` whatever `n` (and `smem` too: "checked
//!   whatever `n`").
//! - `texel_fetches` counts texel reads only (not the coordinate and weight
//!   reads that also go on `rd5`).
//! - The configuration writes and reads of an empty operation (`n = 0`) do
//!   not happen: it "does nothing" and is done in `g`.

use super::isa::{AddressMode, Format, SampleOp, TexKind};
use super::{Banks, CuParams, Status, RD5};
use crate::models::texture::reference::{address, op_result, split, texel_fetches};
use crate::models::texture::timing::{handshakes, tiles, Step};
use crate::models::texture::{Kernel, Level, Op as TexOp, OpResult, Texture, Workload};
use gpurtl_params::texture::{Broadcast, TextureParams};
use gpurtl_params::MemIf;

/// The largest texture width or height (the unit's `max_size`).
pub const MAX_SIZE: u32 = 4096;

/// The `texture` block `tex` runs on (docs/cu.md, "`tex`"): one bank (the
/// scratchpad), `max_size` 4096, 8 fraction bits, 6-bit offsets, kernels up
/// to 8 x 8 of int8 weights, 32-bit sums, one channel a conv_quad (no
/// all-channel datapath), selective broadcast, 4 passes in
/// flight, `addr_bits = log2(SB)`, native memory port.
pub fn texture_params(p: &CuParams) -> TextureParams {
    TextureParams {
        banks: 1,
        max_size: MAX_SIZE,
        frac_bits: 8,
        offset_bits: 6,
        max_kernel: 8,
        weight_bits: 8,
        acc_bits: 32,
        all_channels: false,
        broadcast: Broadcast::Selective,
        max_outstanding: 4,
        addr_bits: p.smem_addr_bits(),
        mem_if: MemIf::Native,
    }
}

pub use super::isa::texel_bytes;

/// A `tex` as it joined the DMA queue (register values read in its X
/// cycle and the instruction's fields), with its block's scratchpad base.
/// Offsets are share offsets, checked (`align`, `smem`) at execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub slot: usize,
    /// The X cycle: the operation may start from `joined + 1`.
    pub joined: u64,
    pub smem_base: u32,
    /// `O`, `T`: the values of `rd`, `ra`.
    pub o: u32,
    pub t: u32,
    /// The value of `rb`: `W` = bits 12:0, `H` = bits 28:16 and, for
    /// `conv`, `KW - 1` = bits 15:13, `KH - 1` = bits 31:29 (the sample
    /// kinds ignore those bits).
    pub size: u32,
    /// The value of `rc`: `L` (samples), or `x0` = bits 15:0 and `y0` =
    /// bits 31:16 (`conv`).
    pub rc: u32,
    pub kind: TexKind,
    pub format: Format,
    pub mx: AddressMode,
    pub my: AddressMode,
    /// The channel `k`.
    pub k: u32,
}

impl Op {
    /// The operation of an instruction's register values (`O`, `T`, `rb`'s
    /// and `rc`'s values) and fields, not yet in the queue (slot, joined
    /// cycle and share base 0).
    #[allow(clippy::too_many_arguments)]
    pub fn of(o: u32, t: u32, size: u32, rc: u32, kind: TexKind, format: Format, mx: AddressMode, my: AddressMode, k: u8) -> Op {
        Op { slot: 0, joined: 0, smem_base: 0, o, t, size, rc, kind, format, mx, my, k: k as u32 }
    }
    /// `W`: bits 12:0 of `rb`'s value.
    pub fn w(&self) -> u32 {
        self.size & 0x1FFF
    }
    /// `H`: bits 28:16 of `rb`'s value.
    pub fn h(&self) -> u32 {
        (self.size >> 16) & 0x1FFF
    }
    /// `KW`, 1..8: bits 15:13 of `rb`'s value plus 1 (a `conv`'s kernel
    /// width; the sample kinds ignore it).
    pub fn kw(&self) -> u32 {
        ((self.size >> 13) & 7) + 1
    }
    /// `KH`, 1..8: bits 31:29 of `rb`'s value plus 1 (a `conv`'s kernel
    /// height; the sample kinds ignore it).
    pub fn kh(&self) -> u32 {
        (self.size >> 29) + 1
    }
    /// `z`.
    pub fn z(&self) -> u32 {
        texel_bytes(self.format)
    }
    /// `nw`: the words of one sample's result (`bilinear`, `nearest`: the
    /// format's channels; `gather4`: 4); 4 for `conv` (a quad's pixels).
    pub fn nw(&self) -> u32 {
        match self.kind {
            TexKind::Sample { op: SampleOp::Gather4, .. } | TexKind::Conv { .. } => 4,
            TexKind::Sample { .. } => self.format.channels(),
        }
    }
    /// True when it does nothing (a sample kind with `n = 0`) and is done in
    /// its start cycle.
    pub fn empty(&self) -> bool {
        matches!(self.kind, TexKind::Sample { n: 0, .. })
    }
    /// The texture's bytes `T .. end` (exclusive): `end = T + W*H*z`.
    pub fn texture_end(&self) -> u64 {
        self.t as u64 + self.w() as u64 * self.h() as u64 * self.z() as u64
    }
}

/// The checks of docs/cu.md "Errors" beyond `field`, `reg` and `pc`, in
/// order: `align` (`O` or `T` not a multiple of 4, or for samples `L`),
/// then `smem`, whatever `n`: `W` or `H` (13 bits each) 0 or above 4096,
/// or `T + W*H*z`
/// above `smem_size`; samples: `L + 8n` or `O + 4*nw*n` above it; `conv`:
/// `x0 >= W`, `y0 >= H`, `T < KW*KH`, `O + 16*QW*QH` above `smem_size`, or
/// the output's bytes meeting the texture's (all exact, no wrap).
pub fn check(smem_size: u32, op: &Op) -> Result<(), Status> {
    let sample = matches!(op.kind, TexKind::Sample { .. });
    if !op.o.is_multiple_of(4) || !op.t.is_multiple_of(4) || (sample && !op.rc.is_multiple_of(4)) {
        return Err(Status::Align);
    }
    let size = smem_size as u64;
    let (w, h) = (op.w(), op.h());
    if w == 0 || h == 0 || w > MAX_SIZE || h > MAX_SIZE || op.texture_end() > size {
        return Err(Status::Smem);
    }
    let bad = match op.kind {
        TexKind::Sample { n, .. } => {
            let n = n as u64;
            op.rc as u64 + 8 * n > size || op.o as u64 + 4 * op.nw() as u64 * n > size
        }
        TexKind::Conv { qw, qh } => {
            let out_end = op.o as u64 + 16 * qw as u64 * qh as u64;
            op.rc & 0xFFFF >= w
                || op.rc >> 16 >= h
                || (op.t as u64) < op.kw() as u64 * op.kh() as u64
                || out_end > size
                || (op.o as u64) < op.texture_end() && (op.t as u64) < out_end
        }
    };
    if bad {
        return Err(Status::Smem);
    }
    Ok(())
}

/// One event of the operation, for the tests: a configuration write on the
/// unit's `cfg` port, a read on `rd5` (a coordinate or weight word; `at`
/// the share offset of its word or byte), a texel read taken by the
/// scratchpad (`tex_fetch_o`; `at` the texel's share offset), an op's
/// handshake on `op`, a result's on `res`, or a word written on `wr3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Cfg { cycle: u64, addr: u32, data: u32 },
    Read { cycle: u64, at: u32 },
    Fetch { cycle: u64, at: u32 },
    Op { cycle: u64 },
    Result { cycle: u64 },
    Write { cycle: u64, at: u32, value: u32 },
}

impl Access {
    pub fn cycle(&self) -> u64 {
        match *self {
            Access::Cfg { cycle, .. }
            | Access::Read { cycle, .. }
            | Access::Fetch { cycle, .. }
            | Access::Op { cycle }
            | Access::Result { cycle }
            | Access::Write { cycle, .. } => cycle,
        }
    }
}

/// What [`run`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The done cycle: the cycle of the last write.
    pub done: u64,
    /// Texel reads (the `texel_fetches` counter): 4 a `bilinear` or
    /// `gather4` sample, 1 a `nearest` one, `(KW+1)*(KH+1)` a conv quad.
    pub fetches: u64,
    /// Every event, in cycle order, when asked for.
    pub accesses: Vec<Access>,
}

/// The scratchpad as the operation sees it: the share's bytes, the texture
/// built from them (kept up to date with the operation's writes), the
/// banks' read history and the log.
struct Engine<'a> {
    smem: &'a mut [u8],
    banks: &'a mut Banks,
    base: u64,
    op: Op,
    wl: Workload,
    log: Option<Vec<Access>>,
}

impl Engine<'_> {
    fn record(&mut self, a: Access) {
        if let Some(l) = &mut self.log {
            l.push(a);
        }
    }
    fn byte(&self, at: u64) -> u8 {
        self.smem[(self.base + at) as usize]
    }
    /// The word at share offset `at`, read on `rd5` in `cycle`.
    fn read(&mut self, cycle: u64, at: u64) -> u32 {
        self.banks.took(self.base + at, RD5);
        self.record(Access::Read { cycle, at: at as u32 });
        u32::from_le_bytes(std::array::from_fn(|i| self.byte(at + i as u64)))
    }
    /// Texel `m` (`= Y*W + X`) of the scratchpad: its `z` bytes at `T + m*z`,
    /// little-endian, zero-extended.
    fn texel(&self, m: u64) -> u32 {
        let (z, at) = (self.op.z() as u64, self.op.t as u64 + m * self.op.z() as u64);
        (0..z).fold(0u32, |v, i| v | (self.byte(at + i) as u32) << (8 * i))
    }
    /// A texel read taken in `cycle`: the texel at wrapped `(x, y)`.
    fn fetch(&mut self, cycle: u64, x: u32, y: u32) {
        let at = self.op.t as u64 + (y as u64 * self.op.w() as u64 + x as u64) * self.op.z() as u64;
        self.banks.took(self.base + at, RD5);
        self.record(Access::Fetch { cycle, at: at as u32 });
    }
    /// The word written on `wr3` in `cycle` at share offset `at`; the
    /// texels it overlaps are read again.
    fn write(&mut self, cycle: u64, at: u64, value: u32) {
        let a = (self.base + at) as usize;
        self.smem[a..a + 4].copy_from_slice(&value.to_le_bytes());
        self.record(Access::Write { cycle, at: at as u32, value });
        let (t, end, z) = (self.op.t as u64, self.op.texture_end(), self.op.z() as u64);
        let (lo, hi) = (at.max(t), (at + 4).min(end));
        if lo < hi {
            for m in (lo - t) / z..=(hi - 1 - t) / z {
                self.wl.texture.levels[0].texels[m as usize] = self.texel(m);
            }
        }
    }
    fn cfg(&mut self, cycle: u64, addr: u32, data: u32) {
        self.record(Access::Cfg { cycle, addr, data });
    }
}

/// The texels an op fetches, in the order the unit requests them (one
/// bank: tile after tile, "Tiles: what is fetched", and within a tile the
/// texels of its mask in index order, one a pass), as wrapped `(X, Y)`.
fn fetch_order(p: &TextureParams, wl: &Workload, op: &TexOp) -> Vec<(u32, u32)> {
    let f = p.frac_bits;
    // (origin, mask) of each tile.
    let list: Vec<((i64, i64), u8)> = match op {
        TexOp::Bilinear { u, v, .. } => vec![((split(*u, f).0, split(*v, f).0), 0b1111)],
        TexOp::Gather4 { u, v, dx, dy, .. } => vec![((split(*u, f).0 + dx, split(*v, f).0 + dy), 0b1111)],
        TexOp::Nearest { u, v, .. } => vec![(((u >> f) as i64, (v >> f) as i64), 0b0001)],
        TexOp::ConvQuad { x, y, kernel, .. } => {
            let (pw, ph) = (kernel.width as i64 + 1, kernel.height as i64 + 1);
            let (px, py) = (*x as i64 - kernel.width as i64 / 2, *y as i64 - kernel.height as i64 / 2);
            let mut list = Vec::new();
            for j in 0..(ph + 1) / 2 {
                for i in 0..(pw + 1) / 2 {
                    let mask = (0..4).filter(|k| 2 * i + (k & 1) < pw && 2 * j + (k >> 1) < ph).fold(0u8, |m, k| m | 1 << k);
                    list.push(((px + 2 * i, py + 2 * j), mask));
                }
            }
            list
        }
    };
    let lv = &wl.texture.levels[0];
    let mut out = Vec::new();
    for ((tx, ty), mask) in list {
        for k in 0..4i64 {
            if mask >> k & 1 == 1 {
                let x = address(wl.address[0], tx + (k & 1), lv.width);
                let y = address(wl.address[1], ty + (k >> 1), lv.height);
                out.push((x as u32, y as u32));
            }
        }
    }
    out
}

/// A texel op's result as the words `tex` writes (int32): each channel,
/// each gathered texel, or each pixel's sum (wrapped to 32 bits).
fn result_words(r: OpResult) -> Vec<u32> {
    match r {
        OpResult::Texel(v) => v.iter().map(|&x| x as u32).collect(),
        OpResult::Texels(v) => v.iter().map(|&x| x as u32).collect(),
        OpResult::Pixels { pixels, .. } => pixels.iter().map(|&x| x as u32).collect(),
    }
}

/// `bits` 31:26 of a word as a signed 6-bit offset.
fn offset6(word: u32) -> i64 {
    let v = (word >> 26) as i64;
    if v >= 32 {
        v - 64
    } else {
        v
    }
}

/// Does `op` (not empty, checked), started in cycle `g`, on the scratchpad
/// `smem` (all of it) of a unit with parameters `p`, recording its `rd5`
/// reads in `banks`; `log` asks for [`Outcome::accesses`].
pub fn run(p: &CuParams, op: &Op, g: u64, smem: &mut [u8], banks: &mut Banks, log: bool) -> Outcome {
    assert!(!op.empty());
    let tp = texture_params(p);
    let (w, h) = (op.w(), op.h());
    let texture = Texture { format: op.format, levels: vec![Level { width: w, height: h, texels: Vec::new() }] };
    let wl = Workload { texture, address: [op.mx, op.my], mem_latency: 1, ops: Vec::new(), conv: None };
    let mut en = Engine { smem, banks, base: op.smem_base as u64, op: *op, wl, log: log.then(Vec::new) };
    let texels: Vec<u32> = (0..w as u64 * h as u64).map(|m| en.texel(m)).collect();
    en.wl.texture.levels[0].texels = texels;

    // Configuration: one level at word 0 (levels - 1 = 0).
    let control = op.format.code() as u32 | (op.mx.code() as u32) << 2 | (op.my.code() as u32) << 4;
    en.cfg(g + 1, 0x000, control);
    en.cfg(g + 2, 0x002, 0);
    en.cfg(g + 3, 0x003, (w - 1) | (h - 1) << 16);

    let mut fetches = 0u64;
    let done = match op.kind {
        TexKind::Sample { op: sop, n } => {
            let nw = op.nw() as u64;
            let mut t = g + 4;
            let mut done = 0;
            for i in 0..n as u64 {
                let l = op.rc as u64 + 8 * i;
                let uw = en.read(t, l);
                let vw = en.read(t + 2, l + 4);
                let (u, v) = ((uw & 0x1F_FFFF) as u64, (vw & 0x1F_FFFF) as u64);
                let top = match sop {
                    SampleOp::Bilinear => TexOp::Bilinear { u, v, level: 0 },
                    SampleOp::Nearest => TexOp::Nearest { u, v, level: 0 },
                    SampleOp::Gather4 => TexOp::Gather4 { u, v, level: 0, dx: offset6(uw), dy: offset6(vw), channel: op.k },
                };
                // The op alone in the idle unit, offered (and taken) in a.
                let a = t + 4;
                let hs = handshakes(&tp, 1, &[Step::Op(0)], &|_| tiles(&tp, &en.wl, &top));
                debug_assert_eq!(hs.accepted, [0], "an op offered to the idle unit is taken at once");
                let c = a + hs.results[0];
                let order = fetch_order(&tp, &en.wl, &top);
                debug_assert_eq!(order.len() as u64, texel_fetches(&top));
                debug_assert_eq!(order.len(), hs.requests.len());
                for (&(x, y), &r) in order.iter().zip(&hs.requests) {
                    en.fetch(a + r, x, y);
                }
                fetches += texel_fetches(&top);
                en.record(Access::Op { cycle: a });
                en.record(Access::Result { cycle: c });
                let words = result_words(op_result(&tp, &en.wl, &top));
                debug_assert_eq!(words.len() as u64, nw);
                for (j, &word) in words.iter().enumerate() {
                    let j = j as u64;
                    en.write(c + 1 + j, op.o as u64 + 4 * nw * i + 4 * j, word);
                }
                done = c + nw;
                t = done + 1;
            }
            done
        }
        TexKind::Conv { qw, qh } => {
            let (kw, kh, qw, qh) = (op.kw(), op.kh(), qw as u32, qh as u32);
            en.cfg(g + 4, 0x001, (kw - 1) | (kh - 1) << 8);
            // The weights: the int8 bytes at T - KW*KH + m, m = j*KW + i.
            let first = op.t as u64 - (kw * kh) as u64;
            let mut weights = Vec::with_capacity((kw * kh) as usize);
            for m in 0..kw * kh {
                let at = first + m as u64;
                let word = en.read(g + 5 + m as u64, at & !3);
                let byte = (word >> (8 * (at % 4))) as u8;
                weights.push(byte as i8 as i64);
                en.cfg(g + 6 + m as u64, 0x400 + 32 * (m / kw) + m % kw, byte as u32);
            }
            let kernel = Kernel { width: kw, height: kh, weights: weights.into() };
            let (x0, y0) = ((op.rc & 0xFFFF) as u64, (op.rc >> 16) as u64);
            let mut quads = Vec::with_capacity((qw * qh) as usize);
            for j in 0..qh as u64 {
                for i in 0..qw as u64 {
                    quads.push(TexOp::ConvQuad { x: x0 + 2 * i, y: y0 + 2 * j, level: 0, channel: op.k, kernel: kernel.clone() });
                }
            }
            let b0 = g + 6 + (kw * kh) as u64;
            let steps: Vec<Step> = (0..quads.len()).map(Step::Op).collect();
            let hs = handshakes(&tp, 1, &steps, &|q| tiles(&tp, &en.wl, &quads[q]));
            let mut requests = hs.requests.iter();
            let mut last: Option<u64> = None;
            for (q, quad) in quads.iter().enumerate() {
                let (a, r) = (b0 + hs.accepted[q], b0 + hs.results[q]);
                // The writer rule: taken when no word of an earlier result
                // is left to write, or only its last, written in r.
                debug_assert!(last.is_none_or(|l| r >= l + 4), "conv result {q} in {r} waits for the writer (previous in {last:?})");
                for (x, y) in fetch_order(&tp, &en.wl, quad) {
                    let c = *requests.next().expect("a request per fetched texel");
                    en.fetch(b0 + c, x, y);
                }
                fetches += texel_fetches(quad);
                en.record(Access::Op { cycle: a });
                en.record(Access::Result { cycle: r });
                let (i, j) = (q as u64 % qw as u64, q as u64 / qw as u64);
                let words = result_words(op_result(&tp, &en.wl, quad));
                // Pixels (x, y), (x + 1, y), (x, y + 1), (x + 1, y + 1): a =
                // 2i + dx, b = 2j + dy, at O + 4*(b*2*QW + a).
                for (n, &word) in words.iter().enumerate() {
                    let (dx, dy) = (n as u64 & 1, n as u64 >> 1);
                    let at = op.o as u64 + 4 * ((2 * j + dy) * 2 * qw as u64 + 2 * i + dx);
                    en.write(r + 1 + n as u64, at, word);
                }
                last = Some(r);
            }
            debug_assert!(requests.next().is_none());
            last.unwrap() + 4
        }
    };
    let mut accesses = en.log.take().unwrap_or_default();
    accesses.sort_by_key(Access::cycle);
    Outcome { done, fetches, accesses }
}
