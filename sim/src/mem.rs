//! One sparse byte-addressed memory, shared by the testbench agents (so a
//! composed design's blocks see one memory image) and the golden models'
//! memory images (cmdproc's dword runs, texture's interleaved banks, the
//! arbiter's and the scratchpad's reference memories).
//! Pages are allocated on first write; unwritten bytes read 0. Addresses
//! are u64 and wrap at 2^64.

use num_bigint::BigUint;
use std::collections::HashMap;

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

#[derive(Clone, Default)]
pub struct Memory {
    pages: HashMap<u64, Box<[u8; PAGE]>>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory").field("pages", &self.pages.len()).finish()
    }
}

impl Memory {
    pub fn new() -> Memory {
        Memory::default()
    }

    pub fn byte(&self, addr: u64) -> u8 {
        self.pages.get(&(addr >> PAGE_BITS)).map_or(0, |p| p[addr as usize % PAGE])
    }

    /// Fills `out` from `addr` on.
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        // Page by page: a beat is read every cycle of a run.
        let mut done = 0;
        while done < out.len() {
            let a = addr.wrapping_add(done as u64);
            let off = a as usize % PAGE;
            let n = (PAGE - off).min(out.len() - done);
            match self.pages.get(&(a >> PAGE_BITS)) {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }

    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let a = addr.wrapping_add(done as u64);
            let off = a as usize % PAGE;
            let n = (PAGE - off).min(data.len() - done);
            let page = self.pages.entry(a >> PAGE_BITS).or_insert_with(|| Box::new([0; PAGE]));
            page[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// `bytes` bytes at `addr` as the words of a port `8 * bytes` wide
    /// (little-endian: the byte at `addr` is bits 0..8 of word 0).
    pub fn read_words(&self, addr: u64, bytes: usize) -> Vec<u32> {
        let mut out = Vec::new();
        self.read_words_into(addr, bytes, &mut out);
        out
    }

    /// [`Memory::read_words`] into `out` (cleared first), without allocating
    /// in a cycle loop.
    pub fn read_words_into(&self, addr: u64, bytes: usize, out: &mut Vec<u32>) {
        let mut b = vec![0u8; bytes.next_multiple_of(4)];
        self.read(addr, &mut b[..bytes]);
        out.clear();
        out.extend(b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    }

    /// `bytes` bytes at `addr` as one little-endian number.
    pub fn read_big(&self, addr: u64, bytes: usize) -> BigUint {
        let mut b = vec![0u8; bytes];
        self.read(addr, &mut b);
        BigUint::from_bytes_le(&b)
    }

    /// Writes byte `i` of the beat (`bytes` bytes, little-endian in `words`)
    /// at `addr + i` where bit `i` of `strobes` is set; `None`: every byte.
    pub fn write_beat(&mut self, addr: u64, bytes: usize, words: &[u32], strobes: Option<&[u32]>) {
        let byte_of = |i: usize| (words.get(i / 4).copied().unwrap_or(0) >> (8 * (i % 4))) as u8;
        let on = |i: usize| strobes.is_none_or(|s| s.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1));
        // Runs of enabled bytes, so a full beat is one page copy.
        let mut i = 0;
        while i < bytes {
            if !on(i) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes && on(i) {
                i += 1;
            }
            let run: Vec<u8> = (start..i).map(byte_of).collect();
            self.write(addr.wrapping_add(start as u64), &run);
        }
    }

    /// The `n` bytes at `addr`.
    pub fn bytes(&self, addr: u64, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        self.read(addr, &mut out);
        out
    }

    /// Byte `i` of `data` to `addr + i` where `strobes[i]` is set.
    pub fn write_strobed(&mut self, addr: u64, data: &[u8], strobes: &[bool]) {
        assert_eq!(data.len(), strobes.len(), "one strobe a byte");
        for (i, (&b, &s)) in data.iter().zip(strobes).enumerate() {
            if s {
                self.write(addr.wrapping_add(i as u64), &[b]);
            }
        }
    }

    /// Loads `data` at `addr` (a region of an image).
    pub fn load(&mut self, addr: u64, data: &[u8]) {
        self.write(addr, data);
    }

    /// Copies `other` into this memory `offset` bytes up: every 4 KB page
    /// `other` has written, whole (its zeros too), so a composed design's
    /// memory can hold each block's image in a region of its own (regions
    /// apart by whole pages).
    pub fn place(&mut self, other: &Memory, offset: u64) {
        for (&page, bytes) in &other.pages {
            self.write((page << PAGE_BITS).wrapping_add(offset), &bytes[..]);
        }
    }

    /// The first address in `addr..addr + want.len()` whose byte is not the
    /// one in `want`, with the byte found there.
    pub fn compare(&self, addr: u64, want: &[u8]) -> Option<(u64, u8)> {
        let mut got = vec![0u8; want.len()];
        self.read(addr, &mut got);
        let i = got.iter().zip(want).position(|(g, w)| g != w)?;
        Some((addr.wrapping_add(i as u64), got[i]))
    }

    /// The first address in `addr..addr + len` where this memory and `other`
    /// differ.
    pub fn first_difference(&self, other: &Memory, addr: u64, len: u64) -> Option<u64> {
        let mut a = vec![0u8; PAGE];
        let mut b = vec![0u8; PAGE];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(PAGE as u64) as usize;
            let at = addr.wrapping_add(done);
            self.read(at, &mut a[..n]);
            other.read(at, &mut b[..n]);
            if let Some(i) = a[..n].iter().zip(&b[..n]).position(|(x, y)| x != y) {
                return Some(at.wrapping_add(i as u64));
            }
            done += n as u64;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_bytes_read_zero_and_writes_cross_pages() {
        let mut m = Memory::new();
        assert_eq!(m.byte(12345), 0);
        let data: Vec<u8> = (0..10).collect();
        m.write(4090, &data);
        let mut out = [0xffu8; 12];
        m.read(4089, &mut out);
        assert_eq!(out, [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
        assert_eq!(m.pages.len(), 2);
        // The top of the address space wraps to 0.
        m.write(u64::MAX - 1, &[0xaa, 0xbb, 0xcc]);
        assert_eq!((m.byte(u64::MAX), m.byte(0)), (0xbb, 0xcc));
    }

    #[test]
    fn beats_are_little_endian_port_words() {
        let mut m = Memory::new();
        m.load(0x100, &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66]);
        assert_eq!(m.read_words(0x100, 6), vec![0x4433_2211, 0x6655]);
        assert_eq!(m.read_words(0x101, 4), vec![0x5544_3322]);
        assert_eq!(m.read_big(0x100, 6), BigUint::from(0x6655_4433_2211u64));
        // A 3-byte beat leaves the top byte of its word 0.
        assert_eq!(m.read_words(0x103, 3), vec![0x0066_5544]);
    }

    #[test]
    fn strobes_pick_the_bytes_written() {
        let mut m = Memory::new();
        m.load(0, &[0xee; 8]);
        m.write_beat(0, 8, &[0x4433_2211, 0x8877_6655], Some(&[0b1010_0101]));
        assert_eq!(m.read_words(0, 8), vec![0xee33_ee11, 0x88ee_66ee]);
        m.write_beat(0, 8, &[0, 0], None);
        assert_eq!(m.read_words(0, 8), vec![0, 0]);
        m.write_strobed(2, &[1, 2, 3], &[true, false, true]);
        assert_eq!(m.bytes(1, 5), vec![0, 1, 0, 3, 0]);
        // Strobe bits past the first word of a 64-byte beat.
        m.write_beat(0x1000, 64, &[0xffff_ffff; 16], Some(&[0, 1 << 31]));
        assert_eq!(m.byte(0x1000 + 63), 0xff);
        assert!(m.compare(0x1000, &[0u8; 63]).is_none());
    }

    #[test]
    fn comparisons_name_the_first_difference() {
        let mut a = Memory::new();
        a.load(8000, &[1, 2, 3]);
        assert_eq!(a.compare(8000, &[1, 2, 3]), None);
        assert_eq!(a.compare(8000, &[1, 9, 3]), Some((8001, 2)));
        let mut b = a.clone();
        assert_eq!(a.first_difference(&b, 0, 20_000), None);
        b.write(12_000, &[7]);
        assert_eq!(a.first_difference(&b, 0, 20_000), Some(12_000));
        assert_eq!(a.first_difference(&b, 0, 12_000), None);
        // One image placed in a region of another.
        let mut c = Memory::new();
        c.load(0x10, &[9]);
        c.place(&b, 0x10_0000);
        assert_eq!((c.byte(0x10), c.byte(0x10_0000 + 8001), c.byte(0x10_0000 + 12_000)), (9, 2, 7));
    }
}
