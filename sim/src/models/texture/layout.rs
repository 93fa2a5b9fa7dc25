//! The texture memory layout: where each level starts and which bank and
//! word hold each texel.

use super::Texture;
use crate::mem::Memory;
use gpurtl_params::texture::TextureParams;

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
pub(super) fn layout(p: &TextureParams, sizes: &[(u32, u32)]) -> (Vec<u64>, u64) {
    let mut bases = Vec::with_capacity(sizes.len());
    let mut next = 0u64;
    for &(w, h) in sizes {
        bases.push(next);
        next += (w as u64).div_ceil(1 << bx(p)) * (h as u64).div_ceil(1 << by(p));
    }
    (bases, next)
}

pub(super) fn sizes(t: &Texture) -> Vec<(u32, u32)> {
    t.levels.iter().map(|l| (l.width, l.height)).collect()
}

/// Level bases (word addresses, the same in every bank).
pub fn level_bases(p: &TextureParams, t: &Texture) -> Vec<u64> {
    layout(p, &sizes(t)).0
}

/// The bank holding wrapped texel (x, y): `(x & bx) + 2 * (y & by)`.
pub(super) fn bank_of(p: &TextureParams, x: u32, y: u32) -> usize {
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

/// The banks in one byte-addressed memory, interleaved word by word (the
/// `mem_if = axi4` layout, docs/memory.md): word `w` of bank `b` is the
/// little-endian dword at byte `4 * (w * banks + b)`; bytes past the
/// layout read 0.
pub fn interleaved(p: &TextureParams, t: &Texture) -> Memory {
    let banks = bank_words(p, t);
    let total = banks.first().map_or(0, |b| b.len());
    let mut bytes = Vec::with_capacity(4 * total * banks.len());
    for w in 0..total {
        for bank in &banks {
            bytes.extend_from_slice(&bank[w].to_le_bytes());
        }
    }
    let mut m = Memory::new();
    m.load(0, &bytes);
    m
}
