//! `mma` (docs/cu.md, "`mma`: matrix multiply on the systolic grid",
//! "The scratchpad" and "Matrix multiply"): `C = A . B + C0` of int8 tiles
//! in the scratchpad on an `R x C` systolic grid, simulated cycle by cycle.
//!
//! With `nr = ceil(TM/R)`, `nc = ceil(TN/C)`, tile `t = b*nc + c` covers
//! `h_b = min(R, TM - b*R)` rows and `w_t = min(C, TN - c*C)` columns. The
//! used k-steps `k_0 < .. < k_{u-1}` are all `K` without `skip`, else those
//! whose bit in the k-map (`nk = ceil(K/32)` words at `Bo - 4*nk`) is 0;
//! word column `x` of `A` is needed if one of k-steps `4x .. 4x+3` is
//! used. `PA = 4*ceil(K/4) + 4*qa`, `PB = 8*ceil(TN/8) + 4*qb`.
//!
//! ```text
//! rd3 (skip only) first: for m < nk:  Bo - 4*nk + 4m, from g + 1;
//!   M = the last one taken + 1 (without skip M = g)
//! rd2 (A): per row block b, for needed x, for i < h_b:  Ao + (b*R + i)*PA + 4x
//!   offered from M + 1 while b < 2, or from E_{L_{b-2}} + 1
//!   (L_b = b*nc + nc - 1, the row block's last tile); for b >= 1, in a
//!   cycle c <= E_{b*nc-2} (or E_{b*nc-2} not known yet; never when b*nc
//!   < 2), not if rd3 offers a read (k-map or B) of the same bank (B
//!   first); from E_{b*nc-2} + 1 the arbitration alone
//! rd3 (B): per tile t, for used k, for h < ceil(C/4):
//!   Bo + k*PB + 4*floor(c*C/4) + 4h, offered from M + 1 while t < 2, or
//!   from E_{t-2} + 1; a read taken in c gives its word in c + 1
//! F_t = max(last A word of its row block taken, last B word of t taken, M)
//!   (a missing read counts as g)
//! S_t = max(F_t, E_{t-1}, W_{t-2}) + 2      (missing terms 0)
//! groups of tile t: docs/systolic.md's sequencer on R x u' by u' x C, u' =
//!   max(u, 1) (u = 0: one all-zero step), groups of 4, `last` on q - 1
//! the grid's loader (systolic::Loader, the one implementation of
//!   docs/systolic.md's loader rules) played in the unit's cycles over the
//!   stream of all tiles' groups, the output always ready:
//!   tile t's first group offered to the loader from S_t + 1 (the unit
//!     accepted it in S_t; the grid is idle from E_{t-1} + 1, so the
//!     loader takes it in S_t + 1 and holds it from S_t + 2), each later
//!     group whenever the loader is ready for one
//!   a tile-ending step waits while the previous tile is in flight
//!     (E_{t-1} + 1 ..= X_{t-1} - 1)
//!   E_t = its tile-ending step's issue cycle; row r ready from
//!     E_t + r + C + 1 + P, transferred in max(ready + 1, the previous
//!     row's transfer + 1) (the previous tile's row R-1 for r = 0);
//!     X_t = row R-1's transfer
//! cyc = systolic::run(grid, the tile alone).cycles (reported only; X_t =
//!   S_t + cyc when X_{t-1} < S_t)
//! rows r < h_b, words n < w_t, in order across rows and tiles, at
//!   Co + (b*R + r)*4*TN + 4*(c*C + n) on wr2:
//!   mode 0: written in max(previous word's write + 1, row's transfer + 1)
//!   modes 1, 2: C0 read on rd4 (mode 1: the word's own offset; mode 2:
//!     o + 4*(c*C + n)), offered from max(previous word's read taken + 1,
//!     row's transfer + 1); written (grid value + C0, wrapping) in the
//!     cycle after its read was taken
//! W_t = the tile's last write;  done: e = max(X, W) of the last tile
//! ```
//!
//! Arbitration (per bank, each cycle): of the ports among `rd2`, `rd3`,
//! `rd4` asking for the bank, leaving out a read of the row the cycle's
//! write takes, the lowest-numbered port above the port of the bank's last
//! read (any port since reset; none counts as `rd5`, `tex`'s port), else
//! the lowest-numbered asking port.
//!
//! Data: a read taken in cycle `c` sees the writes taken in cycles before
//! `c` (the only writes during the operation are its own `C` words, which
//! may overlap `A`, `B` or the bias row in a kernel that asks for it; a read
//! of the word written in its own cycle cannot be taken); the grid's value
//! is the definition's sum of products over the used k-steps, wrapped to 32
//! bits, of the values the reads returned. The grid model gives the times
//! (E_t, the row transfers) and `cyc`; its `c` would be the same sum.
//!
//! Nothing else touches the scratchpad while the operation is in progress
//! (the DMA queue runs one operation at a time and is the scratchpad's only
//! user), so [`run`] plays the whole operation in its start cycle `g`, as
//! the vector operations do, and returns its done cycle; the scratchpad and
//! the banks' read history end as they would cycle by cycle.
//!
//! Readings of the spec where it leaves a choice:
//! - "`M` is the cycle the last one's word is taken (the cycle after the
//!   scratchpad took its read)", and likewise "the cycle the last `A` (`B`)
//!   word ... is taken": the cycle of the read + 1.
//! - "`F_t` is the latest of: the cycle the last `A` word of tile `t`'s row
//!   block is taken, ...": the last of all the row block's `A` reads (every
//!   needed column, every row), which every tile of the row block shares.
//! - `rd3`'s `B` reads are offered "from `M + 1`", `M` being the cycle after
//!   the last map read was taken: so `rd3` is idle for one cycle between
//!   the map and `B` (taken literally).
//! - Both ports' `A` and `B` reads are offered from `M + 1` (docs/cu.md as
//!   of 30446b4, which made `rd2` wait for the map too). The model takes
//!   the used steps from the map's words as the scratchpad holds them at
//!   `g`: the map's reads return exactly those (no write is taken before
//!   the first tile starts, after `M`).
//! - `rd2` yields to `rd3` (docs/cu.md as of 4cf197a, narrowed in
//!   7ef95d1): "`rd2`'s read of a row block `b >= 1`, up to cycle
//!   `E_{b*nc-2}` (...; not at all when `b*nc < 2`), only if `rd3` does not
//!   offer a read of the same bank in that cycle": `rd3`'s offer as made in
//!   the cycle (its k-map or `B` read, under its own buffer rule), whether
//!   or not the scratchpad then takes it (a `B` read of the row the cycle's
//!   write takes still holds `rd2` off that bank); banks are
//!   `Banks::bank_row`'s, of the scratchpad word. Row block 0 never yields,
//!   nor does row block 1 with `nc = 1` (`b*nc < 2`). "Up to cycle
//!   `E_{b*nc-2}`": inclusive, and in every cycle before `E_{b*nc-2}` is
//!   known (the model learns `E_t` in cycle `E_t` itself, after that
//!   cycle's offers, so this is the same as `c <= E_{b*nc-2}`); from
//!   `E_{b*nc-2} + 1` on, `rd2`'s offer follows its buffer rule alone and
//!   the bank's arbitration decides. The yield is keyed on the row block of
//!   `rd2`'s next read, not on `rd3`'s tile. (The k-map's reads all come
//!   before `M + 1`, where `rd2` starts, so only `B` reads bite. With `nc
//!   = 1` the yield never bites: a row block `b >= 2` is offered only from
//!   `E_{L_{b-2}} + 1 = E_{b-2} + 1`, past its yield's end.)
//! - "the bank takes, of those, the lowest-numbered port above the port
//!   whose read it took last": "above" is the port number, not wrapping
//!   (if no asking port is above it, the lowest-numbered asking port); a
//!   bank whose last read was `rd0`'s or `rd1`'s (`st`, vector operations)
//!   gives the lowest asking `mma` port, as `rd5`'s (`tex`) and none do.
//! - Mode 0, "each word is written in the cycle after the word before it
//!   and not before the cycle after its row's transfer": in `max(previous
//!   word + 1, its row's transfer + 1)`; the operation's first word has no
//!   word before it (and likewise for the first `C0` read in modes 1, 2).
//! - `align` is checked whatever the shape; only `smem` is skipped when
//!   `TM`, `TN` or `K` is 0 (as the model does for `act`, `cmp`, `exp`).
//!   The bias offset `o` is a multiple of 4 by its encoding. `skip`'s `Bo <
//!   4*nk` is an `smem` condition, so it too only for `TM, TN, K > 0`.
//! - With `C` overlapping `A` or `B`, `C` is the sum of products of the
//!   values the reads returned (the tile buffers), which is what the grid
//!   multiplies; with `C0`'s words overlapping `C` (mode 2), a `C0` read
//!   sees the `C` words written before it. A row block's `A` words are read
//!   once (before its first tile starts), so a later tile of the row block
//!   uses them even if an earlier tile's `C` overwrote them.
//! - With `u = 0` there are no `A` or `B` reads (no needed column, no used
//!   step): `F_t = M` for every tile, and each tile still goes through the
//!   grid (one all-zero step) and writes `C = C0`.
//!
//! Readings of the spec (docs/cu.md as of 8e84419: the grid played over the
//! whole stream):
//! - The loader's cycles are the unit's: "a group offered in a cycle `c`
//!   when `in_idle_o` is high is accepted in `c`, taken by the loader in `c
//!   + 1`", so the loader may take tile `t`'s first group in a unit cycle
//!   `>= S_t + 1` (and does so in `S_t + 1`, the grid being idle from
//!   `E_{t-1} + 1 <= S_t - 1`: checked in debug builds).
//! - "each later group of the tile whenever it is ready for one": the
//!   unit's input register adds no cycle to later groups: the loader takes
//!   group `j + 1` in the cycle it is ready (the cycle group `j`'s last
//!   step issued, or a cycle it holds nothing), as in docs/systolic.md's
//!   back-to-back schedule, which "runs one cycle later than the unit's
//!   first accept" and no more.
//! - "the in-flight rule holds from tile to tile": a tile is in flight from
//!   the cycle after its tile-ending step issued through the cycle before
//!   its row `R-1`'s transfer (its last row moves into the output register
//!   then, the output always ready), so `E_t >= X_{t-1}`; and the output
//!   register orders rows across tiles: tile `t`'s row 0 goes after tile
//!   `t-1`'s row `R-1`. A tile's rows go out in consecutive cycles (its
//!   rows' ready cycles are consecutive), so row `r` is `X_t - (R-1) + r`.
//! - `E_t` for `u = 0` is the issue of the null step (the one step of zeros
//!   is not useful under the load filter). A missing `E_{t-1}` (`t = 0`)
//!   counts as 0, like the other missing terms.
//! - `cyc` ("`cycles` for the tile alone") only states a consequence of the
//!   rules; the model reports it for each tile (the grid model run on the
//!   tile alone) and does not use it for the times.

use super::isa::C0;
use super::{Banks, CuParams, RD2, RD3, RD4, RD5};
use crate::models::systolic::{self, Gemm};
use std::collections::VecDeque;

/// An `mma` as it joined the DMA queue (register values read in its X
/// cycle, the instruction's `C0` and pads), with its block's scratchpad
/// base. Offsets are share offsets, checked (`align`, `smem`) at execution.
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
    /// The C0 mode (with the bias offset `o` of mode 2).
    pub c0: C0,
    /// The row pads `qa`, `qb` (words, 0..3).
    pub qa: u32,
    pub qb: u32,
    /// `, skip`: the k-map at `Bo - 4*nk` skips the k-steps whose bit is 1.
    pub skip: bool,
}

impl Op {
    /// (`TM`, `TN`, `K`) of `rc`'s value.
    pub fn shape(rc: u32) -> (u32, u32, u32) {
        (rc & 0xFF, (rc >> 8) & 0xFF, rc >> 16)
    }
    /// The operation of an instruction's register values (`Co`, `Ao`, `Bo`,
    /// `rc`'s value), its `C0` and pads, not yet in the queue (slot, joined
    /// cycle and share base 0), without `skip` (set it with `Op { skip,
    /// ..Op::of(..) }`).
    pub fn of(co: u32, ao: u32, bo: u32, rc: u32, c0: C0, qa: u32, qb: u32) -> Op {
        let (tm, tn, k) = Op::shape(rc);
        Op { slot: 0, joined: 0, smem_base: 0, co, ao, bo, tm, tn, k, c0, qa, qb, skip: false }
    }
    /// `nk = ceil(K/32)`: the k-map's words, read with `skip` (0 without).
    pub fn nk(&self) -> u32 {
        if self.skip {
            self.k.div_ceil(32)
        } else {
            0
        }
    }
    /// The share offset of the k-map (`Bo - 4*nk`; with `skip` and `Bo >=
    /// 4*nk`, as the check makes sure).
    pub fn map_at(&self) -> u32 {
        self.bo - 4 * self.nk()
    }
    /// The used k-steps `k_0 < .. < k_{u-1}`: all `K` without `skip`, else
    /// those whose bit (`k mod 32` of map word `floor(k/32)`) is 0; `map`
    /// holds the `nk` words.
    pub fn used(&self, map: &[u32]) -> Vec<u32> {
        (0..self.k).filter(|&k| !self.skip || map[(k / 32) as usize] >> (k % 32) & 1 == 0).collect()
    }
    /// True when it does nothing (`TM`, `TN` or `K` = 0) and is done in its
    /// start cycle.
    pub fn empty(&self) -> bool {
        self.tm == 0 || self.tn == 0 || self.k == 0
    }
    /// `PA = 4*ceil(K/4) + 4*qa`: `A`'s row pitch.
    pub fn pa(&self) -> u64 {
        4 * (self.k as u64).div_ceil(4) + 4 * self.qa as u64
    }
    /// `PB = 8*ceil(TN/8) + 4*qb`: `B`'s row pitch.
    pub fn pb(&self) -> u64 {
        8 * (self.tn as u64).div_ceil(8) + 4 * self.qb as u64
    }
}

/// The check of docs/cu.md "Errors" beyond `field`, `reg` and `pc`, in
/// order: the `align` error (`Co`, `Ao` or `Bo` not a multiple of 4,
/// whatever the shape), then the `smem` error (for `TM, TN, K > 0`: `K >
/// kmax`, or `Ao + TM*PA`, `Bo + K*PB`, `Co + 4*TM*TN` or, in mode 2, `o +
/// 4*TN` above `smem_size`, exact, or with `skip` `Bo < 4*nk`).
pub fn check(kmax: u32, smem_size: u32, op: &Op) -> Result<(), super::Status> {
    if !op.co.is_multiple_of(4) || !op.ao.is_multiple_of(4) || !op.bo.is_multiple_of(4) {
        return Err(super::Status::Align);
    }
    if op.empty() {
        return Ok(());
    }
    let size = smem_size as u64;
    let (tm, tn, k) = (op.tm as u64, op.tn as u64, op.k as u64);
    let bias_end = if let C0::Bias(o) = op.c0 { o as u64 + 4 * tn } else { 0 };
    if k > kmax as u64
        || op.ao as u64 + tm * op.pa() > size
        || op.bo as u64 + k * op.pb() > size
        || op.co as u64 + 4 * tm * tn > size
        || bias_end > size
        || (op.bo as u64) < 4 * op.nk() as u64
    {
        return Err(super::Status::Smem);
    }
    Ok(())
}

/// The tiling of an operation on a grid of `r` rows and `c` columns, with
/// its used k-steps and needed word columns of `A`.
#[derive(Clone, Debug)]
struct Tiling {
    r: u32,
    c: u32,
    nr: u32,
    nc: u32,
    tiles: usize,
    /// The used k-steps, in order.
    used: Vec<u32>,
    /// The needed word columns `x` of `A`, in order.
    cols: Vec<u32>,
    /// `ceil(C/4)` words of `B` a k-step.
    cw: u32,
}

impl Tiling {
    fn new(r: u32, c: u32, op: &Op, map: &[u32]) -> Tiling {
        let (nr, nc) = (op.tm.div_ceil(r), op.tn.div_ceil(c));
        let used = op.used(map);
        let mut cols: Vec<u32> = used.iter().map(|k| k / 4).collect();
        cols.dedup();
        Tiling { r, c, nr, nc, tiles: (nr * nc) as usize, used, cols, cw: c.div_ceil(4) }
    }
    /// `h_b`: the rows of row block `b`.
    fn h(&self, op: &Op, b: u32) -> u32 {
        self.r.min(op.tm - b * self.r)
    }
    /// (row block `b`, column block `c`, `h_b`, `w_t`) of tile `t`.
    fn tile(&self, op: &Op, t: usize) -> (u32, u32, u32, u32) {
        let (b, c) = (t as u32 / self.nc, t as u32 % self.nc);
        (b, c, self.h(op, b), self.c.min(op.tn - c * self.c))
    }
    /// `L_b`: the last tile of row block `b`.
    fn last_tile(&self, b: u32) -> usize {
        (b * self.nc + self.nc - 1) as usize
    }
    /// The `A` reads of row block `b` (on `rd2`).
    fn a_reads(&self, op: &Op, b: u32) -> usize {
        self.cols.len() * self.h(op, b) as usize
    }
    /// The share offset of `A` read `i` of row block `b`: needed column
    /// `cols[i / h_b]`, row `i mod h_b`.
    fn a_at(&self, op: &Op, b: u32, i: usize) -> u64 {
        let h = self.h(op, b) as usize;
        let (x, row) = (self.cols[i / h] as u64, (i % h) as u64);
        op.ao as u64 + (b as u64 * self.r as u64 + row) * op.pa() + 4 * x
    }
    /// The `B` reads of a tile (on `rd3`).
    fn b_reads(&self) -> usize {
        self.used.len() * self.cw as usize
    }
    /// The share offset of `B` read `i` of tile `t`: used step
    /// `used[i / cw]`, word `i mod cw`.
    fn b_at(&self, op: &Op, t: usize, i: usize) -> u64 {
        let (_, c, _, _) = self.tile(op, t);
        let (k, hh) = (self.used[i / self.cw as usize] as u64, (i % self.cw as usize) as u64);
        op.bo as u64 + k * op.pb() + 4 * (c as u64 * self.c as u64 / 4) + 4 * hh
    }
}

/// The times of one tile (absolute cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileTimes {
    /// `F_t`: the cycle the tile's last word is taken.
    pub f: u64,
    /// `S_t`: its first group offered to the grid.
    pub s: u64,
    /// `E_t`: its tile-ending step issues in the grid.
    pub e: u64,
    /// `cyc`: the grid's `cycles` for the tile alone, groups back-to-back
    /// (`X_t = S_t + cyc` when `X_{t-1} < S_t`); worked out only with
    /// `log` (a second grid run of the tile), else 0.
    pub cyc: u64,
    /// `X_t`: its row `R-1` leaves the grid (rows go out one a cycle: row
    /// `r` in `X_t - (R-1) + r`).
    pub x: u64,
    /// `W_t`: its last write.
    pub w: u64,
}

/// One scratchpad access of the operation: a read taken on `rd2`/`rd3`/
/// `rd4` (port 2, 3 or 4), or a write on `wr2`, at its share offset.
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
    /// `M`: the cycle the k-map's last word is taken (`g` without `skip`).
    pub m: u64,
    pub tiles: Vec<TileTimes>,
    /// Every access in cycle order (reads of a cycle, by port, before its
    /// write), when asked for.
    pub accesses: Vec<Access>,
}

/// Which of the offered reads on `rd2`, `rd3`, `rd4` (their bank and row) a
/// cycle takes, given the write taken in the cycle (its bank and row) and
/// the port of each bank's last read (docs/cu.md, "The scratchpad"): a read
/// of the written row is not among those asking; of the reads asking for a
/// bank, the lowest-numbered port above the port of the bank's last read
/// (none: `rd5`) wins, else the lowest-numbered one.
pub fn arbitrate(offers: [Option<(u32, u64)>; 3], write: Option<(u32, u64)>, banks: &Banks) -> [bool; 3] {
    const PORTS: [u8; 3] = [RD2, RD3, RD4];
    let asking = offers.map(|o| o.filter(|br| Some(*br) != write));
    let mut taken = [false; 3];
    for i in 0..3 {
        let Some((bank, _)) = asking[i] else { continue };
        let on_bank: Vec<usize> = (0..3).filter(|&j| asking[j].is_some_and(|(b, _)| b == bank)).collect();
        let last = banks.last(bank).unwrap_or(RD5);
        let winner = on_bank.iter().copied().find(|&j| PORTS[j] > last).unwrap_or(on_bank[0]);
        taken[i] = winner == i;
    }
    taken
}

fn read_word(smem: &[u8], a: u64) -> u32 {
    let a = a as usize;
    u32::from_le_bytes(smem[a..a + 4].try_into().unwrap())
}

/// A word of `C` whose `C0` is still to be read (modes 1, 2).
#[derive(Clone, Copy, Debug)]
struct Word {
    tile: usize,
    /// The cycle its row is transferred.
    xfer: u64,
    /// Scratchpad addresses of the word and of its `C0`.
    at: u64,
    c0_at: u64,
    /// The grid's value.
    value: u32,
}

/// A tile started on the grid, until it ends: (row block, column block,
/// `h_b`, `w_t`, the grid's `h_b x w_t` values).
type Started = (u32, u32, u32, u32, Vec<Vec<u32>>);

/// A write scheduled on `wr2`.
#[derive(Clone, Copy, Debug)]
struct Write {
    cycle: u64,
    at: u64,
    value: u32,
}

/// Does `op` (not empty), started in cycle `g`, on the scratchpad `smem`
/// (all of it) with the grid of `p`, recording its reads in `banks`;
/// `log` asks for [`Outcome::accesses`] and each tile's `cyc`.
pub fn run(p: &CuParams, op: &Op, g: u64, smem: &mut [u8], banks: &mut Banks, log: bool) -> Outcome {
    assert!(!op.empty());
    let grid = p.grid();
    let base = op.smem_base as u64;
    // The k-map as the scratchpad holds it at g (what its reads return: no
    // write is taken before M).
    let nk = op.nk() as usize;
    let map_at = base + op.map_at() as u64;
    let map: Vec<u32> = (0..nk).map(|m| read_word(smem, map_at + 4 * m as u64)).collect();
    let tl = Tiling::new(p.grid_rows, p.grid_cols, op, &map);
    let n = tl.tiles;
    let nr = tl.nr as usize;
    let (r_rows, c_cols) = (tl.r as usize, tl.c as usize);
    let u = tl.used.len();
    // rd2: the next A read (row block, index); the words read per row block;
    // the cycle each row block's last word was taken (g with no reads).
    let mut a_next = (0usize, 0usize);
    let mut a_words: Vec<Vec<u32>> = vec![Vec::new(); nr];
    let mut a_last: Vec<Option<u64>> = vec![None; nr];
    // rd3: the k-map reads taken, M once known; then the next B read (tile,
    // index), the words per tile, the cycle each tile's last word was taken.
    let mut map_taken = 0usize;
    let mut m_done: Option<u64> = if nk == 0 { Some(g) } else { None };
    let mut b_next = (0usize, 0usize);
    let mut b_words: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut b_last: Vec<Option<u64>> = vec![None; n];
    if tl.cols.is_empty() {
        a_next.0 = nr;
        a_last.iter_mut().for_each(|x| *x = Some(g));
    }
    if tl.b_reads() == 0 {
        b_next.0 = n;
        b_last.iter_mut().for_each(|x| *x = Some(g));
    }
    // The tiles started on the grid (S_t known; E_t and X_t once the tile
    // ended), their E_t and W_t once known.
    let mut times: Vec<TileTimes> = Vec::with_capacity(n);
    let mut e_of: Vec<Option<u64>> = vec![None; n];
    let mut w_of: Vec<Option<u64>> = vec![None; n];
    // The grid: its loader played in the unit's cycles (a group the unit
    // accepts in c is taken by the loader in c + 1: the loader's cycle c is
    // the unit's), the groups of the started tiles not yet offered (tile,
    // its first group?, group), the group on offer, and the started tiles'
    // values (row block, column block, h, w, the grid's h x w sums) until
    // they end.
    let mut loader: systolic::Loader<systolic::Group> = systolic::Loader::new(&grid, g + 1);
    let mut queue: VecDeque<(usize, bool, systolic::Group)> = VecDeque::new();
    let mut offer: Option<systolic::Group> = None;
    let mut started: VecDeque<Started> = VecDeque::new();
    let mut ended = 0usize;
    // Modes 1, 2: the words whose C0 read is not taken yet, in order, and
    // the cycle the last C0 read was taken. Mode 0: the cycle of the last
    // write scheduled.
    let mut pending: VecDeque<Word> = VecDeque::new();
    let mut last_c0_read: Option<u64> = None;
    let mut last_write: Option<u64> = None;
    // The writes scheduled, in cycle order.
    let mut writes: VecDeque<Write> = VecDeque::new();
    let mut accesses = Vec::new();

    let mut c = g + 1;
    while ended < n || !pending.is_empty() || !writes.is_empty() {
        let write = writes.front().filter(|w| w.cycle == c).map(|w| banks.bank_row(w.at));
        // Offers: rd3 the next map read; from M + 1, rd3 its next B read if
        // its tile's buffer half is free and rd2 its next A read if its row
        // block's buffer half is free and, for a row block b >= 1 in a cycle
        // up to E_{b*nc-2} (none when b*nc < 2), rd3 offers no read (map or
        // B) of the same bank; rd4 the next word's
        // C0 read from the cycle after the previous one was taken and after
        // its row's transfer.
        let mut offers: [Option<u64>; 3] = [None; 3];
        if map_taken < nk {
            offers[1] = Some(map_at + 4 * map_taken as u64);
        } else {
            let (t, i) = b_next;
            if t < n && m_done.is_some_and(|m| c > m) && (t < 2 || e_of[t - 2].is_some_and(|e| c > e)) {
                offers[1] = Some(base + tl.b_at(op, t, i));
            }
        }
        let (b, i) = a_next;
        if b < nr && m_done.is_some_and(|m| c > m) && (b < 2 || e_of[tl.last_tile(b as u32 - 2)].is_some_and(|e| c > e)) {
            let a = base + tl.a_at(op, b as u32, i);
            // The yield (docs/cu.md 7ef95d1): row block b >= 1 up to cycle
            // E_{b*nc-2} inclusive (also while it is not known yet), never
            // when b*nc < 2.
            let early = (b * tl.nc as usize).checked_sub(2).is_some_and(|t| e_of[t].is_none_or(|e| c <= e));
            let yields = b >= 1 && early && offers[1].is_some_and(|x| banks.bank_row(x).0 == banks.bank_row(a).0);
            if !yields {
                offers[0] = Some(a);
            }
        }
        if let Some(wd) = pending.front() {
            if c > wd.xfer && last_c0_read.is_none_or(|l| c > l) {
                offers[2] = Some(wd.c0_at);
            }
        }
        let taken = arbitrate(offers.map(|o| o.map(|a| banks.bank_row(a))), write, banks);
        for port in 0..3 {
            let Some(a) = offers[port].filter(|_| taken[port]) else { continue };
            let v = read_word(smem, a);
            let rd = [RD2, RD3, RD4][port];
            banks.took(a, rd);
            if log {
                accesses.push(Access::Read { cycle: c, port: rd, at: (a - base) as u32 });
            }
            match port {
                0 => {
                    let (b, i) = a_next;
                    a_words[b].push(v);
                    a_next = if i + 1 == tl.a_reads(op, b as u32) {
                        a_last[b] = Some(c + 1);
                        (b + 1, 0)
                    } else {
                        (b, i + 1)
                    };
                }
                1 if map_taken < nk => {
                    debug_assert_eq!(v, map[map_taken], "no write before M");
                    map_taken += 1;
                    if map_taken == nk {
                        m_done = Some(c + 1);
                    }
                }
                1 => {
                    let (t, i) = b_next;
                    b_words[t].push(v);
                    b_next = if i + 1 == tl.b_reads() {
                        b_last[t] = Some(c + 1);
                        (t + 1, 0)
                    } else {
                        (t, i + 1)
                    };
                }
                _ => {
                    // The C word: written in c + 1.
                    let wd = pending.pop_front().unwrap();
                    last_c0_read = Some(c);
                    writes.push_back(Write { cycle: c + 1, at: wd.at, value: wd.value.wrapping_add(v) });
                    if pending.front().is_none_or(|nx| nx.tile != wd.tile) {
                        w_of[wd.tile] = Some(c + 1);
                    }
                }
            }
        }
        // The write taken in c.
        if writes.front().is_some_and(|w| w.cycle == c) {
            let w = writes.pop_front().unwrap();
            smem[w.at as usize..w.at as usize + 4].copy_from_slice(&w.value.to_le_bytes());
            if log {
                accesses.push(Access::Write { cycle: c, at: (w.at - base) as u32, value: w.value });
            }
        }
        debug_assert!(writes.front().is_none_or(|w| w.cycle > c));
        // The grid in c: the next group of the stream is offered, a tile's
        // first from S_t + 1, each later one as soon as the one before it
        // was taken; the loader takes it if it is ready for one.
        let mut first_offered = false;
        if offer.is_none() {
            if let Some(&(t, first, _)) = queue.front() {
                if !first || c > times[t].s {
                    offer = queue.pop_front().map(|x| x.2);
                    first_offered = first;
                }
            }
        }
        debug_assert_eq!(loader.cycle(), c);
        let end = loader.step(&mut offer);
        // The grid is idle from E_{t-1} + 1: a tile's first group is taken
        // in S_t + 1.
        debug_assert!(!first_offered || offer.is_none());
        if let Some(end) = end {
            // Tile `ended` ended: E_t, its rows' transfers, X_t (row R-1).
            let t = ended;
            ended += 1;
            let (b, cb, h, w, vals) = started.pop_front().unwrap();
            // E_t is learnt in cycle E_t (after that cycle's offers): the
            // yield's "E_{b*nc-2} not known yet" is c <= E_{b*nc-2}.
            debug_assert_eq!(end.issue, c);
            e_of[t] = Some(end.issue);
            times[t].e = end.issue;
            times[t].x = end.rows[r_rows - 1];
            for (r, row) in vals.iter().enumerate().take(h as usize) {
                let xfer = end.rows[r];
                for (nn, &value) in row.iter().enumerate().take(w as usize) {
                    let col = cb as u64 * tl.c as u64 + nn as u64;
                    let at = base + op.co as u64 + (b as u64 * tl.r as u64 + r as u64) * 4 * op.tn as u64 + 4 * col;
                    match op.c0 {
                        C0::Zero => {
                            let cycle = last_write.map_or(xfer + 1, |l| (l + 1).max(xfer + 1));
                            writes.push_back(Write { cycle, at, value });
                            last_write = Some(cycle);
                        }
                        C0::Acc => pending.push_back(Word { tile: t, xfer, at, c0_at: at, value }),
                        C0::Bias(o) => pending.push_back(Word { tile: t, xfer, at, c0_at: base + o as u64 + 4 * col, value }),
                    }
                }
            }
            if op.c0 == C0::Zero {
                w_of[t] = last_write;
            }
        }
        // Tiles that can start: F_t (its row block's A, its B and M),
        // E_{t-1} and W_{t-2} known (each is at most c + 1, so S_t > c).
        while times.len() < n {
            let t = times.len();
            let (b, cb, h, w) = tl.tile(op, t);
            let (Some(fa), Some(fb), Some(m)) = (a_last[b as usize], b_last[t], m_done) else { break };
            let e_prev = match t.checked_sub(1) {
                None => 0,
                Some(v) => match e_of[v] {
                    Some(e) => e,
                    None => break,
                },
            };
            let w_prev2 = match t.checked_sub(2) {
                None => 0,
                Some(v) => match w_of[v] {
                    Some(w) => w,
                    None => break,
                },
            };
            let f = fa.max(fb).max(m);
            let s = f.max(e_prev).max(w_prev2) + 2;
            debug_assert!(s > c);
            // The tile's A (R x u', rows >= h zero) and B (u' x C, columns
            // >= w zero) over the used steps, as read: A[i][k_j] is byte
            // k_j mod 4 of the row block's read (column index of k_j/4)*h +
            // i, B[k_j][n] byte (c*C + n) - 4*floor(c*C/4) of step j's
            // words. u = 0: one step, all zero.
            let uu = u.max(1);
            let lead = (cb * tl.c - 4 * (cb * tl.c / 4)) as usize;
            let mut a = vec![vec![0i64; uu]; r_rows];
            let mut bm = vec![vec![0i64; c_cols]; uu];
            for (j, &k) in tl.used.iter().enumerate() {
                let ci = tl.cols.binary_search(&(k / 4)).unwrap();
                for (i, row) in a.iter_mut().enumerate().take(h as usize) {
                    row[j] = (a_words[b as usize][ci * h as usize + i] >> (8 * (k % 4))) as u8 as i8 as i64;
                }
                for (nn, x) in bm[j].iter_mut().enumerate().take(w as usize) {
                    let byte = lead + nn;
                    *x = (b_words[t][j * tl.cw as usize + byte / 4] >> (8 * (byte % 4))) as u8 as i8 as i64;
                }
            }
            let gemm = Gemm { a, b: bm, c0: None };
            // The grid's value of each written word: the sum of products
            // over the used steps, wrapped to 32 bits.
            let vals: Vec<Vec<u32>> = (0..h as usize)
                .map(|r| {
                    (0..w as usize)
                        .map(|nn| (0..uu).fold(0i32, |acc, j| acc.wrapping_add((gemm.a[r][j] * gemm.b[j][nn]) as i32)) as u32)
                        .collect()
                })
                .collect();
            // Its groups (the sequencer of docs/systolic.md on this one
            // tile: R x u' by u' x C, no row/column skip, groups of 4).
            let tile = systolic::os_tiles(&grid, &gemm).next().unwrap();
            let q = tile.groups.len();
            queue.extend(tile.groups.into_iter().enumerate().map(|(j, grp)| (t, j == 0, grp)));
            debug_assert_eq!(q, u.div_ceil(4).max(1));
            // Reported only (the tests check X_t = S_t + cyc where it
            // holds): no second grid run for a plain run.
            let cyc = if log { systolic::run(&grid, &gemm).cycles } else { 0 };
            started.push_back((b, cb, h, w, vals));
            times.push(TileTimes { f, s, e: 0, cyc, x: 0, w: 0 });
        }
        c += 1;
    }
    for (tt, w) in times.iter_mut().zip(&w_of) {
        tt.w = w.unwrap();
    }
    let last = times.last().unwrap();
    Outcome { done: last.x.max(last.w), m: m_done.unwrap(), tiles: times, accesses }
}
