//! The vector operations `act`, `cmp` and `exp` (docs/cu.md, "`act`",
//! "`cmp`, `exp`" and "Vector operations"): each is a sequence of steps on
//! the scratchpad and the compress unit,
//!
//! - READ (2 cycles): one scratchpad word read,
//! - OP (2 cycles): one operation through the compress unit (width 64),
//! - WRITE (1 cycle): one scratchpad word written, bytes strobed,
//!
//! back to back from `g + 1`; the operation is done in the cycle its last
//! step ends, `g + sum of the steps' cycles`.
//!
//! [`run`] walks the step sequence of the spec literally, doing each step's
//! read or write on the scratchpad in order, and returns the steps. The model
//! does all of it in the start cycle `g`: nothing else touches the
//! scratchpad while the operation is in progress (the DMA queue runs one
//! operation at a time and the DMA is the scratchpad's only user), the
//! compress unit is the operation's own and always takes and answers in the
//! step's two cycles, so neither the data nor the duration depends on the
//! cycle a step happens in; only the done cycle is seen outside.

use super::isa::ElemSize;
use crate::models::compress;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Act,
    Cmp,
    Exp,
}

/// A vector operation as it joined the DMA queue (register values read in
/// its X cycle), with its block's scratchpad base. Offsets are share
/// offsets, checked (`align`, `smem`) at execution.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub kind: Kind,
    pub slot: usize,
    /// The X cycle: the operation may start from `joined + 1`.
    pub joined: u64,
    pub smem_base: u32,
    /// `act`: `s`; `cmp`/`exp`: `D`.
    pub d: u32,
    /// `cmp`/`exp`: `S` (0 for `act`).
    pub s: u32,
    /// `cmp`/`exp`: `Q` (0 for `act`).
    pub q: u32,
    /// `act`: `rows` (bits 31:16 of `ra`'s value), `w` (bits 15:0) and the
    /// pitch `P` (`p`, or `4w` when `p` is 0).
    pub rows: u32,
    pub w: u32,
    pub pitch: u32,
    /// `cmp`/`exp`: `n` (the low 16 bits of `rc`'s value) and the element
    /// size (B8 for `act`).
    pub n: u32,
    pub e: ElemSize,
}

impl Op {
    /// True when it does nothing and is done in its start cycle (`act`:
    /// `rows = 0` or `w = 0`; `exp`: `n = 0`; `cmp` always writes the
    /// count).
    pub fn empty(&self) -> bool {
        match self.kind {
            Kind::Act => self.rows == 0 || self.w == 0,
            Kind::Cmp => false,
            Kind::Exp => self.n == 0,
        }
    }
}

/// One step, with the share offset of the word it reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Read(u32),
    Op,
    /// The word's offset and its strobes (bit `k`: byte `k` written).
    Write(u32, u8),
}

impl Step {
    pub fn cycles(&self) -> u64 {
        match self {
            Step::Read(_) | Step::Op => 2,
            Step::Write(..) => 1,
        }
    }
}

/// The scratchpad as the steps see it, and the steps so far.
struct Engine<'a> {
    smem: &'a mut [u8],
    base: u64,
    steps: Vec<Step>,
}

impl Engine<'_> {
    fn read(&mut self, at: u32) -> u32 {
        self.steps.push(Step::Read(at));
        let a = (self.base + at as u64) as usize;
        u32::from_le_bytes(self.smem[a..a + 4].try_into().unwrap())
    }
    fn write(&mut self, at: u32, value: u32, strobe: u8) {
        self.steps.push(Step::Write(at, strobe));
        let a = (self.base + at as u64) as usize;
        for (k, b) in value.to_le_bytes().iter().enumerate() {
            if strobe >> k & 1 == 1 {
                self.smem[a + k] = *b;
            }
        }
    }
    /// One operation through the compress unit: `src` elements (8/z of
    /// them), the mask given or generated, zeroing.
    fn op(&mut self, kind: compress::Kind, e: ElemSize, src: Vec<u64>, mask: Option<Vec<u8>>) -> compress::OpResult {
        self.steps.push(Step::Op);
        compress::apply(&compress::Op { op: kind, element_bits: e.bits(), src, mask, old: None, zeroing: true })
    }
}

/// Strobes of the first `k` bytes of a word (`k` 0..4).
fn low_bytes(k: u32) -> u8 {
    ((1u32 << k.min(4)) - 1) as u8
}

/// Does `op` (not empty) on the scratchpad `smem` (all of it; the share
/// starts at `op.smem_base`) and returns its steps in order.
pub fn run(op: &Op, smem: &mut [u8]) -> Vec<Step> {
    let mut en = Engine { smem, base: op.smem_base as u64, steps: Vec::new() };
    match op.kind {
        Kind::Act => act(op, &mut en),
        Kind::Cmp => cmp(op, &mut en),
        Kind::Exp => exp(op, &mut en),
    }
    en.steps
}

/// The cycles `steps` take: the operation started in `g` is done in
/// `g + cycles(steps)`.
pub fn cycles(steps: &[Step]) -> u64 {
    steps.iter().map(Step::cycles).sum()
}

/// `act`: for each word in order (rows, then words), READ, WRITE of
/// `max(v, 0)`.
fn act(op: &Op, en: &mut Engine) {
    for r in 0..op.rows {
        for j in 0..op.w {
            let at = op.d + r * op.pitch + 4 * j;
            let v = en.read(at) as i32;
            en.write(at, v.max(0) as u32, 0xF);
        }
    }
}

/// `cmp`: per vector of 8 bytes, READ, READ, OP (compress, mask generated,
/// elements `>= n` given as 0); a WRITE per packed word completed, a WRITE
/// of the mask word if completed. Then the partial packed word, the partial
/// mask word, the count.
fn cmp(op: &Op, en: &mut Engine) {
    let (z, n) = (op.e.bytes(), op.n);
    let per = 8 / z; // elements a vector
    let bits = 8 * z;
    let vectors = (n * z).div_ceil(8);
    let mut packed: Vec<u8> = Vec::new(); // packed bytes not yet written
    let mut packed_words = 0u32; // packed words written
    let mut mask = 0u32; // the mask word being filled
    let mut mask_bits = 0u32; // mask bits so far (all vectors)
    let mut count = 0u32;
    for v in 0..vectors {
        let lo = en.read(op.s + 8 * v) as u64;
        let hi = en.read(op.s + 8 * v + 4) as u64;
        let vector = lo | hi << 32;
        let src: Vec<u64> = (0..per)
            .map(|k| if v * per + k < n { vector >> (k * bits) & ((1u64 << bits) - 1) } else { 0 })
            .collect();
        let res = en.op(compress::Kind::Compress, op.e, src, None);
        for x in &res.dst[..res.count as usize] {
            packed.extend_from_slice(&x.to_le_bytes()[..z as usize]);
        }
        count += res.count;
        while packed.len() >= 4 {
            let word = u32::from_le_bytes(packed[..4].try_into().unwrap());
            packed.drain(..4);
            en.write(op.d + 4 * packed_words, word, 0xF);
            packed_words += 1;
        }
        let m = per.min(n - v * per);
        for k in 0..m {
            mask |= (res.mask[k as usize] as u32) << (mask_bits % 32);
            mask_bits += 1;
            if mask_bits.is_multiple_of(32) {
                en.write(op.q + 4 + 4 * (mask_bits / 32 - 1), mask, 0xF);
                mask = 0;
            }
        }
    }
    if !packed.is_empty() {
        let mut b = [0u8; 4];
        b[..packed.len()].copy_from_slice(&packed);
        en.write(op.d + 4 * packed_words, u32::from_le_bytes(b), low_bytes(packed.len() as u32));
    }
    if !mask_bits.is_multiple_of(32) {
        en.write(op.q + 4 + 4 * (mask_bits / 32), mask, low_bytes((mask_bits % 32).div_ceil(8)));
    }
    en.write(op.q, count, 0xF);
}

/// `exp`: per vector, a READ of the next mask word if fewer than `m_v` mask
/// bits are held, READs of the next packed words while fewer than `c_v * z`
/// packed bytes are held, OP (expand, zeroing), WRITEs of the vector's two
/// words while they hold bytes below `D + n*z`.
fn exp(op: &Op, en: &mut Engine) {
    let (z, n) = (op.e.bytes(), op.n);
    let per = 8 / z;
    let bits = 8 * z;
    let vectors = (n * z).div_ceil(8);
    let mut held_mask: Vec<u8> = Vec::new(); // mask bits held, in order
    let mut mask_words = 0u32; // mask words read
    let mut held: Vec<u8> = Vec::new(); // packed bytes held, in order
    let mut packed_words = 0u32; // packed words read
    for v in 0..vectors {
        let m = per.min(n - v * per);
        if (held_mask.len() as u32) < m {
            let word = en.read(op.q + 4 + 4 * mask_words);
            mask_words += 1;
            held_mask.extend((0..32).map(|k| (word >> k & 1) as u8));
        }
        let mut mask: Vec<u8> = held_mask.drain(..m as usize).collect();
        let c = mask.iter().filter(|&&b| b == 1).count() as u32;
        while (held.len() as u32) < c * z {
            let word = en.read(op.s + 4 * packed_words);
            packed_words += 1;
            held.extend_from_slice(&word.to_le_bytes());
        }
        let taken: Vec<u8> = held.drain(..(c * z) as usize).collect();
        let src: Vec<u64> = (0..per)
            .map(|k| {
                if k < c {
                    let mut b = [0u8; 8];
                    b[..z as usize].copy_from_slice(&taken[(k * z) as usize..((k + 1) * z) as usize]);
                    u64::from_le_bytes(b)
                } else {
                    0
                }
            })
            .collect();
        mask.resize(per as usize, 0);
        let res = en.op(compress::Kind::Expand, op.e, src, Some(mask));
        let vector = res.dst.iter().enumerate().fold(0u64, |acc, (k, &x)| acc | x << (k as u32 * bits));
        for half in 0..2u32 {
            let first = 8 * v + 4 * half; // the word's first byte, from D
            if first < n * z {
                en.write(op.d + first, (vector >> (32 * half)) as u32, low_bytes(n * z - first));
            }
        }
    }
}
