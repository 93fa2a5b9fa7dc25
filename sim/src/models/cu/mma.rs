//! `mma` (docs/cu.md, "`mma`: matrix multiply on the systolic grid" and
//! "Matrix multiply"): `C = A . B` of int8 tiles in the scratchpad on an
//! `R x C` systolic grid, simulated cycle by cycle.
//!
//! With `nr = ceil(TM/R)`, `nc = ceil(TN/C)`, tile `t = b*nc + c` covers
//! `h_t = min(R, TM - b*R)` rows and `w_t = min(C, TN - c*C)` columns;
//! `q = ceil(K/4)` groups of k-steps. Per tile:
//!
//! ```text
//! rd2 (A): for j < q, for i < h_t:  Ao + (b*R + i)*PA + 4j
//! rd3 (B): for k < K, for h < ceil(C/4):  Bo + k*PB + 4*floor(c*C/4) + 4h
//! each port offers its next read from g + 1 while its tile t < 2, or from
//!   W_{t-2} + 1; both ports on one bank: rd3 if that bank's last read
//!   (any port, since reset) was rd2's, else rd2; a read of the bank and
//!   row written in the same cycle waits; a read taken in c gives its word
//!   in c + 1
//! F_t = last read of the tile taken + 1
//! S_t = max(F_t, W_{t-1}) + 2            (W_{-1} = 0)
//! cyc = systolic::run(grid, R x K A tile, K x C B tile).cycles
//! row r transferred in S_t + cyc - R + 1 + r; rows r < h_t written on wr2,
//!   word n at Co + (b*R + r)*4*TN + 4*(c*C + n), one a cycle, each after
//!   the word before it and after its row's transfer; W_t = the later of
//!   the last one and row R-1's transfer
//! done: e = W of the last tile
//! ```
//!
//! Data: a read taken in cycle `c` sees the writes taken in cycles before
//! `c` (the only writes during the operation are its own `C` words, which
//! may overlap `A` or `B` in a kernel that asks for it); `C` is the
//! definition's sum of products, wrapped to 32 bits, of the values the
//! tile's reads returned. The grid model gives only `cyc` (its `c` is
//! the same sum).
//!
//! Nothing else touches the scratchpad while the operation is in progress
//! (the DMA queue runs one operation at a time and is the scratchpad's only
//! user), so [`run`] plays the whole operation in its start cycle `g`, as
//! the vector operations do, and returns its done cycle; the scratchpad and
//! the banks' read history end as they would cycle by cycle.
//!
//! Readings of the spec where it leaves a choice:
//! - "`F_t` is the cycle in which the last word of tile `t` (of both ports)
//!   is taken": a word is taken the cycle after its read was taken, so
//!   `F_t` = the cycle of the tile's last read + 1.
//! - "the bank takes `rd3`'s request if the last read that bank took (by
//!   any port, since reset) was `rd2`'s, else `rd2`'s" together with "A
//!   read of the row of a bank that a write takes in the same cycle waits
//!   too": as docs/scratchpad.md orders them, a read of the written row
//!   (same bank, same row) is not eligible, and the rule chooses between
//!   eligible reads only: the other port's read of that bank is taken even
//!   where the rule would have preferred the waiting one. A bank with no
//!   read since reset gives `rd2` the bank.
//! - "each in the cycle after the word before it and not before the cycle
//!   after its row's transfer": a word is written in `max(previous word +
//!   1, its row's transfer + 1)`; the operation's first word has no word
//!   before it.
//! - `align` is checked whatever the shape; only `smem` is skipped when
//!   `TM`, `TN` or `K` is 0 (as the model does for `act`, `cmp`, `exp`).
//! - With `C` overlapping `A` or `B`, `C` is the sum of products of the
//!   values the tile's reads returned (the tile buffer), which is what the
//!   grid multiplies.

use super::{Banks, CuParams, RD2, RD3};
use crate::models::systolic::{self, Gemm};
use std::collections::VecDeque;

/// An `mma` as it joined the DMA queue (register values read in its X
/// cycle), with its block's scratchpad base. Offsets are share offsets,
/// checked (`align`, `smem`) at execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub slot: usize,
    /// The X cycle: the operation may start from `joined + 1`.
    pub joined: u64,
    pub smem_base: u32,
    /// `Co`, `Ao`, `Bo`: the values of `rd`, `ra`, `rb`.
    pub co: u32,
    pub ao: u32,
    pub bo: u32,
    /// From the value of `rc`: `TM` = bits 7:0, `TN` = bits 15:8, `K` =
    /// bits 31:16.
    pub tm: u32,
    pub tn: u32,
    pub k: u32,
}

impl Op {
    /// (`TM`, `TN`, `K`) of `rc`'s value.
    pub fn shape(rc: u32) -> (u32, u32, u32) {
        (rc & 0xFF, (rc >> 8) & 0xFF, rc >> 16)
    }
    /// True when it does nothing (`TM`, `TN` or `K` = 0) and is done in its
    /// start cycle.
    pub fn empty(&self) -> bool {
        self.tm == 0 || self.tn == 0 || self.k == 0
    }
    /// `PA = 4*ceil(K/4)`: `A`'s row pitch.
    pub fn pa(&self) -> u64 {
        4 * (self.k as u64).div_ceil(4)
    }
    /// `PB = 8*ceil(TN/8)`: `B`'s row pitch.
    pub fn pb(&self) -> u64 {
        8 * (self.tn as u64).div_ceil(8)
    }
}

/// The check of docs/cu.md "Errors" beyond `reg` and `pc`, in order: the
/// `align` error (`Co`, `Ao` or `Bo` not a multiple of 4, whatever the
/// shape), then the `smem` error (for `TM, TN, K > 0`: `K > kmax`, or
/// `Ao + TM*PA`, `Bo + K*PB` or `Co + 4*TM*TN` above `smem_size`, exact).
pub fn check(kmax: u32, smem_size: u32, co: u32, ao: u32, bo: u32, rc: u32) -> Result<(), super::Status> {
    if !co.is_multiple_of(4) || !ao.is_multiple_of(4) || !bo.is_multiple_of(4) {
        return Err(super::Status::Align);
    }
    let (tm, tn, k) = Op::shape(rc);
    let op = Op { slot: 0, joined: 0, smem_base: 0, co, ao, bo, tm, tn, k };
    if op.empty() {
        return Ok(());
    }
    let size = smem_size as u64;
    let (tm, tn, k) = (tm as u64, tn as u64, k as u64);
    if k > kmax as u64 || ao as u64 + tm * op.pa() > size || bo as u64 + k * op.pb() > size || co as u64 + 4 * tm * tn > size {
        return Err(super::Status::Smem);
    }
    Ok(())
}

/// The tiling of an operation on a grid of `r` rows and `c` columns.
#[derive(Clone, Copy, Debug)]
struct Tiling {
    r: u32,
    c: u32,
    nc: u32,
    tiles: usize,
    /// `q = ceil(K/4)` groups.
    q: u32,
    /// `ceil(C/4)` words of `B` a k-step.
    cw: u32,
}

impl Tiling {
    fn new(r: u32, c: u32, op: &Op) -> Tiling {
        let (nr, nc) = (op.tm.div_ceil(r), op.tn.div_ceil(c));
        Tiling { r, c, nc, tiles: (nr * nc) as usize, q: op.k.div_ceil(4), cw: c.div_ceil(4) }
    }
    /// (row block `b`, column block `c`, `h_t`, `w_t`) of tile `t`.
    fn tile(&self, op: &Op, t: usize) -> (u32, u32, u32, u32) {
        let (b, c) = (t as u32 / self.nc, t as u32 % self.nc);
        (b, c, self.r.min(op.tm - b * self.r), self.c.min(op.tn - c * self.c))
    }
    /// The reads of tile `t` on port `rd2` (`p = 0`) or `rd3` (`p = 1`).
    fn reads(&self, op: &Op, p: usize, t: usize) -> usize {
        let (_, _, h, _) = self.tile(op, t);
        if p == 0 {
            (self.q * h) as usize
        } else {
            (op.k * self.cw) as usize
        }
    }
    /// The share offset of read `i` of tile `t` on port `p`.
    fn read_at(&self, op: &Op, p: usize, t: usize, i: usize) -> u64 {
        let (b, c, h, _) = self.tile(op, t);
        let i = i as u64;
        if p == 0 {
            // Group j, row i.
            let (j, row) = (i / h as u64, i % h as u64);
            op.ao as u64 + (b as u64 * self.r as u64 + row) * op.pa() + 4 * j
        } else {
            // k-step k, word hh.
            let (k, hh) = (i / self.cw as u64, i % self.cw as u64);
            op.bo as u64 + k * op.pb() + 4 * (c as u64 * self.c as u64 / 4) + 4 * hh
        }
    }
}

/// The times of one tile (absolute cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileTimes {
    /// `F_t`: the cycle the tile's last word is taken.
    pub f: u64,
    /// `S_t`: its first group offered to the grid.
    pub s: u64,
    /// `cyc`: the grid's `cycles` for the tile.
    pub cyc: u64,
    /// `W_t`: its last write.
    pub w: u64,
}

/// One scratchpad access of the operation: a read taken on `rd2`/`rd3`
/// (port 2 or 3), or a write on `wr2` (port 2), at its share offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read { cycle: u64, port: u8, at: u32 },
    Write { cycle: u64, at: u32, value: u32 },
}

/// What [`run`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The done cycle `e`.
    pub done: u64,
    pub tiles: Vec<TileTimes>,
    /// Every access in cycle order (reads of a cycle before its write),
    /// when asked for.
    pub accesses: Vec<Access>,
}

/// Which of the two offered reads (`rd2`, `rd3`; their bank and row) a
/// cycle takes, given the write taken in the cycle (its bank and row) and
/// the port of each bank's last read (docs/cu.md, "The scratchpad", and
/// docs/scratchpad.md: a read of the written row is not eligible; of two
/// eligible reads of one bank, `rd3` wins if the bank's last read was
/// `rd2`'s, else `rd2`).
pub fn arbitrate(offers: [Option<(u32, u64)>; 2], write: Option<(u32, u64)>, banks: &Banks) -> [bool; 2] {
    let eligible = offers.map(|o| o.filter(|br| Some(*br) != write));
    match eligible {
        [Some((b2, _)), Some((b3, _))] if b2 == b3 => {
            if banks.last(b2) == Some(RD2) {
                [false, true]
            } else {
                [true, false]
            }
        }
        _ => eligible.map(|e| e.is_some()),
    }
}

fn read_word(smem: &[u8], a: u64) -> u32 {
    let a = a as usize;
    u32::from_le_bytes(smem[a..a + 4].try_into().unwrap())
}

/// Does `op` (not empty), started in cycle `g`, on the scratchpad `smem`
/// (all of it) with the grid of `p`, recording its reads in `banks`;
/// `log` asks for [`Outcome::accesses`].
pub fn run(p: &CuParams, op: &Op, g: u64, smem: &mut [u8], banks: &mut Banks, log: bool) -> Outcome {
    assert!(!op.empty());
    let grid = p.grid();
    let tl = Tiling::new(p.grid_rows, p.grid_cols, op);
    let n = tl.tiles;
    let base = op.smem_base as u64;
    let (r_rows, c_cols) = (tl.r as usize, tl.c as usize);
    // Per port (rd2, rd3): the next read (tile, index), and the words read
    // for the tiles whose reads are not all taken, in read order.
    let mut next = [(0usize, 0usize); 2];
    let mut words: [VecDeque<Vec<u32>>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut times: Vec<TileTimes> = Vec::with_capacity(n);
    // The writes scheduled, in cycle order: (cycle, scratchpad address, value).
    let mut writes: VecDeque<(u64, u64, u32)> = VecDeque::new();
    let mut accesses = Vec::new();

    let mut c = g + 1;
    while times.len() < n {
        let write = writes.front().filter(|w| w.0 == c).map(|w| banks.bank_row(w.1));
        // Offers: the next read, if its tile's buffer half is free.
        let mut offers: [Option<u64>; 2] = [None, None];
        for (port, o) in offers.iter_mut().enumerate() {
            let (t, i) = next[port];
            if t < n && (t < 2 || times.get(t - 2).is_some_and(|tt| c > tt.w)) {
                *o = Some(base + tl.read_at(op, port, t, i));
            }
        }
        let taken = arbitrate(offers.map(|o| o.map(|a| banks.bank_row(a))), write, banks);
        for port in 0..2 {
            let Some(a) = offers[port].filter(|_| taken[port]) else { continue };
            let (t, i) = next[port];
            let v = read_word(smem, a);
            let rd = if port == 0 { RD2 } else { RD3 };
            banks.took(a, rd);
            if log {
                accesses.push(Access::Read { cycle: c, port: rd, at: (a - base) as u32 });
            }
            if i == 0 {
                words[port].push_back(Vec::with_capacity(tl.reads(op, port, t)));
            }
            words[port].back_mut().unwrap().push(v);
            next[port] = if i + 1 == tl.reads(op, port, t) { (t + 1, 0) } else { (t, i + 1) };
        }
        // Tiles whose last word (of both ports) is taken in c + 1.
        while times.len() < n && next[0].0 > times.len() && next[1].0 > times.len() {
            let t = times.len();
            let a_words = words[0].pop_front().unwrap();
            let b_words = words[1].pop_front().unwrap();
            let (b, cb, h, w) = tl.tile(op, t);
            // The tile's A (R x K, rows >= h zero) and B (K x C, columns >= w
            // zero) as read: A[i][k] is byte k mod 4 of read (k/4)*h + i,
            // B[k][n] byte (c*C + n) - 4*floor(c*C/4) of the k-step's words.
            let kk = op.k as usize;
            let lead = (cb * tl.c - 4 * (cb * tl.c / 4)) as usize;
            let mut a = vec![vec![0i64; kk]; r_rows];
            for (i, row) in a.iter_mut().enumerate().take(h as usize) {
                for (k, x) in row.iter_mut().enumerate() {
                    *x = (a_words[(k / 4) * h as usize + i] >> (8 * (k % 4))) as u8 as i8 as i64;
                }
            }
            let mut bm = vec![vec![0i64; c_cols]; kk];
            for (k, row) in bm.iter_mut().enumerate() {
                for (nn, x) in row.iter_mut().enumerate().take(w as usize) {
                    let byte = lead + nn;
                    *x = (b_words[k * tl.cw as usize + byte / 4] >> (8 * (byte % 4))) as u8 as i8 as i64;
                }
            }
            let f = c + 1;
            let prev_w = t.checked_sub(1).map(|u| times[u].w);
            let s = f.max(prev_w.unwrap_or(0)) + 2;
            let gemm = Gemm { a, b: bm, c0: None };
            let cyc = systolic::run(&grid, &gemm).cycles;
            let mut last = prev_w;
            for r in 0..h as usize {
                let xfer = s + cyc + 1 + r as u64 - tl.r as u64;
                for nn in 0..w as usize {
                    let at = last.map_or(xfer + 1, |l| (l + 1).max(xfer + 1));
                    let sum = (0..kk).fold(0i32, |acc, k| acc.wrapping_add((gemm.a[r][k] * gemm.b[k][nn]) as i32));
                    let off = op.co as u64 + (b as u64 * tl.r as u64 + r as u64) * 4 * op.tn as u64 + 4 * (cb as u64 * tl.c as u64 + nn as u64);
                    writes.push_back((at, base + off, sum as u32));
                    last = Some(at);
                }
            }
            // W_t: the later of the last word and row R-1's transfer.
            times.push(TileTimes { f, s, cyc, w: last.unwrap().max(s + cyc) });
        }
        // The write taken in c.
        if writes.front().is_some_and(|w| w.0 == c) {
            let (_, a, v) = writes.pop_front().unwrap();
            smem[a as usize..a as usize + 4].copy_from_slice(&v.to_le_bytes());
            if log {
                accesses.push(Access::Write { cycle: c, at: (a - base) as u32, value: v });
            }
        }
        debug_assert!(writes.front().is_none_or(|w| w.0 > c));
        c += 1;
    }
    // No read remains: the rest of the writes.
    for (cycle, a, v) in writes {
        smem[a as usize..a as usize + 4].copy_from_slice(&v.to_le_bytes());
        if log {
            accesses.push(Access::Write { cycle, at: (a - base) as u32, value: v });
        }
    }
    Outcome { done: times.last().unwrap().w, tiles: times, accesses }
}
