//! The DMA engine of `ld` and `st` (docs/cu.md, "DMA"): one operation at a
//! time, simulated cycle by cycle.
//!
//! Row `r`: `a_r = a + r*stride` (mod 2^32), `S_r = smem_base + s + r*P`,
//! `da = a_r mod 4`, `ds = S_r mod 4`, `nb = ceil((da + n)/4)` memory beats,
//! `nw = ceil((ds + n)/4)` scratchpad words. The aligner: with `from`/`to`
//! lanes (memory/scratchpad for `ld`, the other way for `st`) and
//! `shift = 0` if `to >= from` else 1, output unit `j` is emitted when input
//! unit `j + shift` arrives; the row's last output unit, if still missing
//! after its last input unit (that is when `n_out - 1 + shift >= n_in`), is
//! emitted by a flush in the next cycle, in which no input unit is taken.
//!
//! Data: `ld` writes the scratchpad word by word as words are emitted,
//! `st` writes memory beat by beat as its beats are taken on `dma_wr_req`
//! (strobes: the row's bytes only). Only the DMA touches the scratchpad and
//! only `st` writes memory, one operation at a time, so `ld` may take a
//! word's bytes from memory when the word is emitted (memory cannot change
//! during an `ld`), and `st` its beats' bytes from the scratchpad.
//!
//! `ld ..., zmap` (docs/cu.md, "`ld`, `st`" and "DMA"): with `nz =
//! ceil(rows/32)` and `e0` the cycle the last data word is written, map word
//! `m` (bit `r mod 32` of word `floor(r/32)`: row `r`'s `n` bytes as read
//! from memory all zero) is written at share offset `s - 4*nz + 4m` on
//! `wr0` in `e0 + 1 + m`, all four bytes; the operation is done in `e0 +
//! nz`. The bits come from memory, which cannot change during an `ld`.
//!
//! `st`'s scratchpad reads are `rd0`'s: each is recorded in [`Banks`] in
//! the cycle the scratchpad takes it (the word's bank: docs/cu.md, "The
//! scratchpad").

use super::{Banks, RD0};
use crate::mem::Memory;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ld,
    St,
}

/// An operation as it joined the queue (register values read in its X
/// cycle), with its block's scratchpad base.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub kind: Kind,
    pub slot: usize,
    /// The X cycle: the operation may start from `joined + 1`.
    pub joined: u64,
    /// `s`: the share offset.
    pub s: u32,
    /// `a`: the memory byte address.
    pub a: u32,
    pub stride: u32,
    pub rows: u32,
    pub n: u32,
    /// `P`: `p`, or `n` when `p` is 0.
    pub pitch: u32,
    pub smem_base: u32,
    /// `ld ..., zmap`: the zero map is written after the copy.
    pub zmap: bool,
}

/// Row `r`'s geometry.
#[derive(Clone, Copy, Debug)]
struct Row {
    /// `a_r`.
    a: u32,
    /// `S_r`: the scratchpad byte address.
    sa: u64,
    da: u32,
    ds: u32,
    nb: u64,
    nw: u64,
}

impl Op {
    fn row(&self, r: u32) -> Row {
        let a = self.a.wrapping_add(r.wrapping_mul(self.stride));
        let sa = self.smem_base as u64 + self.s as u64 + r as u64 * self.pitch as u64;
        let da = a % 4;
        let ds = (sa % 4) as u32;
        Row { a, sa, da, ds, nb: (da as u64 + self.n as u64).div_ceil(4), nw: (ds as u64 + self.n as u64).div_ceil(4) }
    }
    /// (input units, output units, shift) of a row: beats then words for
    /// `ld`, words then beats for `st`.
    fn units(&self, row: &Row) -> (u64, u64, u64) {
        match self.kind {
            Kind::Ld => (row.nb, row.nw, u64::from(row.ds < row.da)),
            Kind::St => (row.nw, row.nb, u64::from(row.da < row.ds)),
        }
    }
    /// True when it copies nothing.
    pub fn empty(&self) -> bool {
        self.rows == 0 || self.n == 0
    }
    /// `nz = ceil(rows/32)`: the zero map's words (0 without `zmap`).
    pub fn nz(&self) -> u32 {
        if self.zmap && self.kind == Kind::Ld {
            self.rows.div_ceil(32)
        } else {
            0
        }
    }
    /// The zero map of an `ld ..., zmap`: word `m` has bit `r mod 32` of row
    /// `r = 32m + ..` set when the row's `n` bytes in `mem` are all zero.
    pub fn zero_map(&self, mem: &Memory) -> Vec<u32> {
        let mut map = vec![0u32; self.nz() as usize];
        for r in 0..self.rows {
            let a = self.row(r).a as u64;
            if (0..self.n as u64).all(|i| mem.byte((a + i) & 0xFFFF_FFFF) == 0) {
                map[(r / 32) as usize] |= 1 << (r % 32);
            }
        }
        map
    }
}

/// An operation in progress.
pub struct Active {
    pub op: Op,
    /// Its start cycle `g`.
    g: u64,
    latency: u64,
    max_out: u64,
    /// Total memory beats and scratchpad words over the rows.
    beats: u64,
    words: u64,
    // Input side of the aligner: the row whose input units arrive, its
    // geometry, its input units arrived and output units emitted.
    in_row: u32,
    geo: Row,
    in_k: u64,
    out_j: u64,
    /// A row whose last output unit is owed by a flush, from this cycle.
    flush: Option<(Row, u64)>,
    // ld: beats requested on dma_rd_req, taken on dma_rd_rsp, the due
    // cycles of those requested and not taken, words written.
    requested: u64,
    taken: u64,
    due: VecDeque<u64>,
    written: u64,
    /// `ld ..., zmap`: `e0` (the last data word's cycle) once known, and
    /// the map's words.
    e0: Option<u64>,
    map: Vec<u32>,
    // st: scratchpad words requested, the word in the scratchpad's response
    // slot (offered), beats taken on dma_wr_req, write responses due and
    // taken.
    sp_requested: u64,
    /// The next word to read: its row and index in the row.
    sp_row: u32,
    sp_j: u64,
    sp_slot: bool,
    wr_taken: u64,
    wr_due: VecDeque<u64>,
    wr_answered: u64,
}

/// What one cycle of the engine did.
#[derive(Default)]
pub struct Step {
    /// Memory read beats taken (ld) in the cycle.
    pub rd_beats: u64,
    /// Memory write beats taken (st) in the cycle.
    pub wr_beats: u64,
    /// The operation is done in this cycle.
    pub done: bool,
}

impl Active {
    /// Starts `op` (not empty) in cycle `g`.
    pub fn start(op: Op, g: u64, latency: u32, max_outstanding: u32) -> Active {
        let (mut beats, mut words) = (0, 0);
        for r in 0..op.rows {
            let row = op.row(r);
            beats += row.nb;
            words += row.nw;
        }
        Active {
            g,
            latency: latency as u64,
            max_out: max_outstanding as u64,
            beats,
            words,
            in_row: 0,
            geo: op.row(0),
            in_k: 0,
            out_j: 0,
            flush: None,
            requested: 0,
            taken: 0,
            due: VecDeque::new(),
            written: 0,
            e0: None,
            map: Vec::new(),
            sp_requested: 0,
            sp_row: 0,
            sp_j: 0,
            sp_slot: false,
            wr_taken: 0,
            wr_due: VecDeque::new(),
            wr_answered: 0,
            op,
        }
    }

    /// An input unit arrived: the output unit it emits (if any), and the
    /// flush it leaves owed if it was its row's last. `c` is the cycle.
    fn arrive(&mut self, c: u64) -> Option<(Row, u64)> {
        let row = self.geo;
        let (n_in, n_out, shift) = self.op.units(&row);
        let k = self.in_k;
        self.in_k += 1;
        let emitted = (k >= shift && k - shift < n_out).then(|| {
            self.out_j = k - shift + 1;
            (row, k - shift)
        });
        if self.in_k == n_in {
            if self.out_j < n_out {
                self.flush = Some((row, c + 1));
            }
            self.in_row += 1;
            if self.in_row < self.op.rows {
                self.geo = self.op.row(self.in_row);
            }
            self.in_k = 0;
            self.out_j = 0;
        }
        emitted
    }

    /// `ld`: scratchpad word `j` of `row` written from memory.
    fn write_word(&self, row: &Row, j: u64, mem: &Memory, smem: &mut [u8]) {
        for b in 0..4u64 {
            let i = (4 * j + b) as i64 - row.ds as i64;
            if (0..self.op.n as i64).contains(&i) {
                let src = (row.a as u64 + i as u64) & 0xFFFF_FFFF;
                smem[(row.sa + i as u64) as usize] = mem.byte(src);
            }
        }
    }

    /// `st`: memory beat `j` of `row` written from the scratchpad, the
    /// row's bytes only.
    fn write_beat(&self, row: &Row, j: u64, mem: &mut Memory, smem: &[u8]) {
        let base = (row.a - row.da) as u64 + 4 * j;
        for b in 0..4u64 {
            let i = (4 * j + b) as i64 - row.da as i64;
            if (0..self.op.n as i64).contains(&i) {
                let dst = (base + b) & 0xFFFF_FFFF;
                mem.write(dst, &[smem[(row.sa + i as u64) as usize]]);
            }
        }
    }

    /// Cycle `c` (> `g`) of the operation; `banks` records `st`'s reads.
    pub fn step(&mut self, c: u64, mem: &mut Memory, smem: &mut [u8], banks: &mut Banks) -> Step {
        match self.op.kind {
            Kind::Ld => self.step_ld(c, mem, smem),
            Kind::St => self.step_st(c, mem, smem, banks),
        }
    }

    fn step_ld(&mut self, c: u64, mem: &Memory, smem: &mut [u8]) -> Step {
        let mut s = Step::default();
        if let Some(e0) = self.e0 {
            // The zero map: word m in e0 + 1 + m; done in e0 + nz.
            let m = (c - e0 - 1) as usize;
            let at = (self.op.smem_base as u64 + self.op.s as u64 - 4 * self.map.len() as u64 + 4 * m as u64) as usize;
            smem[at..at + 4].copy_from_slice(&self.map[m].to_le_bytes());
            s.done = m + 1 == self.map.len();
            return s;
        }
        // Requested and not taken, as counted at the end of c - 1.
        let in_flight = self.requested - self.taken;
        match self.flush {
            Some((row, at)) if at == c => {
                // A flush cycle: the row's last word; no beat is taken.
                self.write_word(&row, row.nw - 1, mem, smem);
                self.written += 1;
                self.flush = None;
            }
            _ => {
                // The head answer is offered from its due cycle (and never
                // in the cycle its predecessor was taken: one a cycle).
                if self.due.front().is_some_and(|&d| d <= c) {
                    self.due.pop_front();
                    self.taken += 1;
                    s.rd_beats = 1;
                    if let Some((row, j)) = self.arrive(c) {
                        self.write_word(&row, j, mem, smem);
                        self.written += 1;
                    }
                }
            }
        }
        if c > self.g && self.requested < self.beats && in_flight < self.max_out {
            self.requested += 1;
            self.due.push_back(c + self.latency);
        }
        s.done = self.written == self.words;
        if s.done && self.op.nz() > 0 {
            self.e0 = Some(c);
            self.map = self.op.zero_map(mem);
            s.done = false;
        }
        s
    }

    fn step_st(&mut self, c: u64, mem: &mut Memory, smem: &mut [u8], banks: &mut Banks) -> Step {
        let mut s = Step::default();
        // Beats taken and not answered, as counted at the end of c - 1; the
        // scratchpad's response slot as it was at the start of c.
        let in_flight = self.wr_taken - self.wr_answered;
        let slot_full = self.sp_slot;
        let mut word_taken = false;
        let mut beat: Option<(Row, u64)> = None;
        match self.flush {
            Some((row, from)) if from <= c => {
                // Flush cycles: the row's last beat, under the count, until
                // taken; no word is taken (nor in a cycle the count holds the
                // beat back).
                #[allow(clippy::collapsible_match)]
                if in_flight < self.max_out {
                    beat = Some((row, row.nb - 1));
                    self.flush = None;
                }
            }
            _ if slot_full => {
                // The offered word: does it emit a beat, and may that beat go?
                let row = self.geo;
                let (_, n_out, shift) = self.op.units(&row);
                let k = self.in_k;
                let emits = k >= shift && k - shift < n_out;
                if !emits || in_flight < self.max_out {
                    word_taken = true;
                    self.sp_slot = false;
                    beat = self.arrive(c);
                }
            }
            _ => {}
        }
        if let Some((row, j)) = beat {
            self.write_beat(&row, j, mem, smem);
            self.wr_taken += 1;
            self.wr_due.push_back(c + self.latency);
            s.wr_beats = 1;
        }
        // The next word's read, taken when the slot is empty or its word is
        // taken in this cycle; offered from c + 1.
        if c > self.g && self.sp_requested < self.words && (!slot_full || word_taken) {
            let row = self.op.row(self.sp_row);
            banks.took(row.sa - row.ds as u64 + 4 * self.sp_j, RD0);
            self.sp_j += 1;
            if self.sp_j == row.nw {
                self.sp_row += 1;
                self.sp_j = 0;
            }
            self.sp_requested += 1;
            self.sp_slot = true;
        }
        // Write responses, taken as offered.
        if self.wr_due.front().is_some_and(|&d| d <= c) {
            self.wr_due.pop_front();
            self.wr_answered += 1;
        }
        s.done = self.wr_answered == self.beats;
        s
    }
}
