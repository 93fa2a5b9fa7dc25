//! Golden model of the compute unit (docs/cu.md), written from that document
//! alone: the instruction set ([`isa`]), a cycle-by-cycle simulation of the
//! unit under the run's dispatcher ([`run`]), and the `gpurtl run cu` files
//! ([`io`]).
//!
//! Cycles are absolute: cycle 0 is the first cycle after reset. The loop
//! below handles one cycle per iteration, and every decision in cycle `c`
//! looks only at what was settled by the end of `c - 1`: each "from cycle
//! `k`" of the spec is a timestamp compared with `c` (a slot may be picked
//! when `pick_from <= c`, a queue entry that joined at the end of `x` may go
//! when `x < c`, a slot done at the end of `x` may complete when `x < c`),
//! so the order in which the parts are visited within a cycle does not
//! matter, except for memory: reads (program beats, `cdl` beats) are made
//! before the cycle's `st` writes, i.e. a read in cycle `c` sees the writes
//! taken in cycles before `c` (the testbench responder's choice; the spec
//! leaves it open).
//!
//! The scratchpad's read ports (docs/cu.md, "The scratchpad": `rd0` for
//! `st`, `rd1` for the vector operations, `rd2`/`rd3`/`rd4` for `mma`'s `A`,
//! `B` and `C0`, `rd5` for `tex`) matter only where `mma`'s meet on a bank; the rule looks
//! at the port of the bank's last read since reset, which [`Banks`] keeps:
//! every scratchpad word read the model makes is recorded there with its
//! port.
//!
//! Per cycle the work is bounded by the number of slots: no part looks back
//! over history.

pub mod dma;
pub mod io;
pub mod isa;
pub mod mma;
#[cfg(test)]
mod tests;
pub mod tex;
pub mod vector;

use crate::mem::Memory;
pub use gpurtl_params::cu::{CuParams, Status};
use isa::Insn;
use std::collections::VecDeque;
use std::fmt;

/// The scratchpad's read ports (docs/cu.md, "The scratchpad").
pub const RD0: u8 = 0;
pub const RD1: u8 = 1;
pub const RD2: u8 = 2;
pub const RD3: u8 = 3;
pub const RD4: u8 = 4;
pub const RD5: u8 = 5;

/// The scratchpad's banks as the read arbitration sees them: per bank, the
/// read port that took the bank's last read since reset (`None`: no read
/// yet). Word `m = X/4` of scratchpad byte address `X` is in bank
/// `m mod banks` at row `m div banks`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Banks {
    banks: u32,
    last: Vec<Option<u8>>,
}

impl Banks {
    pub fn new(banks: u32) -> Banks {
        Banks { banks, last: vec![None; banks as usize] }
    }
    /// (bank, row) of scratchpad byte address `x`.
    pub fn bank_row(&self, x: u64) -> (u32, u64) {
        let m = x / 4;
        ((m % self.banks as u64) as u32, m / self.banks as u64)
    }
    /// A read of the word at scratchpad byte address `x` taken by `port`.
    pub fn took(&mut self, x: u64, port: u8) {
        let (b, _) = self.bank_row(x);
        self.last[b as usize] = Some(port);
    }
    /// The port of `bank`'s last read.
    pub fn last(&self, bank: u32) -> Option<u8> {
        self.last[bank as usize]
    }
}

/// One block of the run: its id and the kernel's user data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub id: [u16; 3],
    pub user_data: [u32; 16],
}

/// A region of memory to report after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub addr: u32,
    pub bytes: u32,
}

/// A run of `gpurtl run cu`: the kernel's address, the memory image, the
/// blocks in dispatch order, each block's share (`smem_bytes` of scratchpad,
/// `regs` registers) and the memory latency; `dump` the regions the output
/// reports (not used by [`run`]).
#[derive(Clone, Debug)]
pub struct Run {
    pub program: u32,
    pub memory: Memory,
    pub blocks: Vec<Block>,
    pub smem_bytes: u32,
    pub regs: u32,
    pub mem_latency: u32,
    pub dump: Vec<Region>,
}

/// How one block ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockResult {
    pub id: [u16; 3],
    pub status: Status,
    /// The pc of the instruction that ended it (0 for a dispatch error).
    pub pc: u32,
    /// The share (and dispatch tag) it ran with.
    pub share: u32,
    pub dispatch_cycle: u64,
    pub complete_cycle: u64,
}

/// One executed instruction (the `retire_*` ports), in its X cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retire {
    pub cycle: u64,
    pub slot: u32,
    pub block: [u16; 3],
    pub pc: u32,
    pub insn: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Instructions executed (including erring ones).
    pub instructions: u64,
    /// `cdl` operations started (accepted by the cbload).
    pub cdl: u64,
    /// `ld` / `st` operations started.
    pub ld: u64,
    pub st: u64,
    /// `act` / `cmp` / `exp` operations started.
    pub act: u64,
    pub cmp: u64,
    pub exp: u64,
    /// `mma` operations started.
    pub mma: u64,
    /// `tex` operations started (an empty one, `n = 0`, included).
    pub tex: u64,
    /// Program loads.
    pub loads: u64,
    /// Memory read beats on `ifetch`, `cdl` and `dma_rd`.
    pub rd_beats: u64,
    /// Memory write beats on `dma_wr`.
    pub wr_beats: u64,
    /// Texel reads of `tex` taken by the scratchpad (`tex_fetch_o`): 4 a
    /// `bilinear` or `gather4` sample, 1 a `nearest` one, `(KW+1)*(KH+1)` a
    /// conv quad.
    pub texel_fetches: u64,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub memory: Memory,
    /// In dispatch order.
    pub blocks: Vec<BlockResult>,
    /// In X-cycle order.
    pub trace: Vec<Retire>,
    pub counters: Counters,
    /// Last completion cycle minus first dispatch cycle.
    pub cycles: u64,
}

/// A run the model cannot finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// No share fits: `R = 0`, so no block can ever be dispatched.
    NoShare { smem_bytes: u32, regs: u32 },
    /// The run did not end within the model's budget of cycles.
    Cycles { budget: u64, completed: usize, blocks: usize },
    /// More instructions executed than the model's budget.
    Instructions { budget: u64 },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::NoShare { smem_bytes, regs } => write!(
                f,
                "no block can be dispatched: a share of {smem_bytes} scratchpad bytes and {regs} registers does not fit the unit (R = 0)"
            ),
            ModelError::Cycles { budget, completed, blocks } => write!(
                f,
                "the run did not end within {budget} cycles, the model's budget ({CYCLES_PER_BLOCK} a block, {MAX_CYCLES} at most): {completed} of {blocks} blocks completed; a block may loop forever"
            ),
            ModelError::Instructions { budget } => write!(
                f,
                "the run executed more than {budget} instructions, the model's budget (the trace would not fit in memory); a block may loop forever"
            ),
        }
    }
}

impl std::error::Error for ModelError {}

/// The model's cycle budget: this many cycles a block (after the start),
/// and never more than [`MAX_CYCLES`].
pub const CYCLES_PER_BLOCK: u64 = 1 << 20;
pub const MAX_CYCLES: u64 = 1 << 28;
/// The most instructions a run executes (one trace entry each).
pub const MAX_INSTRUCTIONS: u64 = 1 << 22;

/// The number of shares `R = min(slots, SB / smem_bytes, regs / regs)`
/// (`x / 0` unbounded).
pub fn shares(p: &CuParams, smem_bytes: u32, regs: u32) -> u32 {
    let by = |total: u64, each: u32| if each == 0 { u64::MAX } else { total / each as u64 };
    (p.slots as u64).min(by(p.smem_bytes(), smem_bytes)).min(by(p.regs as u64, regs)) as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Loading,
    Running,
    Waiting,
    Done,
}

/// A slot: what it runs and when it may next do something.
struct Slot {
    state: State,
    /// Free: from this cycle.
    free_from: u64,
    /// Running: may be picked from this cycle (`u64::MAX` between a pick and
    /// its X cycle).
    pick_from: u64,
    /// The X cycle of the instruction picked.
    x_at: Option<u64>,
    /// Done: at the end of this cycle.
    done_at: u64,
    /// The program address the store holds, and the store.
    store_prog: Option<u32>,
    store: Vec<u64>,
    /// The block (index in dispatch order), its pc and its end.
    block: usize,
    pc: u32,
    status: Status,
    share: u32,
    reg_base: u32,
    reg_count: u32,
    smem_base: u32,
    smem_size: u32,
    user_data: [u32; 16],
}

/// A program load in progress: the request was taken in `req`, beat `k` is
/// taken in `req + L + k`.
struct Load {
    slot: usize,
    prog: u32,
    req: u64,
    next: u32,
}

/// A `cdl` as it joined its queue: the view (`None`: the slot's user data,
/// `Some(())`: memory), the offset, `n`, the first register's index in the
/// register file.
#[derive(Clone, Copy)]
struct CdlOp {
    slot: usize,
    joined: u64,
    memory: bool,
    off: u32,
    n: u32,
    dest: u32,
}

/// A `cdl` on the cbload: accepted in `a`, beat `k` consumed in `t[k]`
/// (real beats `k < real`), done (response taken) in `t[n-1] + 1`.
struct CdlActive {
    op: CdlOp,
    t: Vec<u64>,
    real: u32,
    next: usize,
    values: [u32; 16],
}

/// The beat times of docs/cbload.md "Timing" for an instruction accepted in
/// `a`: `b` beats of which the first `r` are real, `o` reads in flight at
/// most, latency `l`:
///
/// ```text
/// req_0 = a + 2;  req_k = max(req_{k-1} + 1, t_{k-O} + 1)   (second term if k >= O)
/// t_{-1} = a + 1; t_k = max(req_k + L, t_{k-1} + 1) real,  t_{k-1} + 1 beyond the view
/// ```
pub fn cbload_beats(a: u64, b: u32, r: u32, o: u32, l: u64) -> Vec<u64> {
    let mut req: Vec<u64> = Vec::new();
    let mut t: Vec<u64> = Vec::new();
    for k in 0..b as usize {
        let prev = if k == 0 { a + 1 } else { t[k - 1] };
        if k < r as usize {
            let mut q = if k == 0 { a + 2 } else { req[k - 1] + 1 };
            if k >= o as usize {
                q = q.max(t[k - o as usize] + 1);
            }
            req.push(q);
            t.push((q + l).max(prev + 1));
        } else {
            t.push(prev + 1);
        }
    }
    t
}

/// The error an instruction raises in its X cycle (docs/cu.md "Errors", in
/// order), or `None`; `next` is its next pc if it has one. Built without
/// `tex` (`p.tex` false), opcode 0x74 is undefined: the `opcode` error,
/// whatever its other fields (the ISA's decode, shared with the
/// disassembler, still knows it).
fn check(p: &CuParams, slot: &Slot, word: u64, regs: &[u32], d: u32) -> Result<Insn, Status> {
    if !p.tex && word as u8 == isa::op::TEX {
        return Err(Status::Opcode);
    }
    let insn = isa::decode(word).map_err(|e| match e {
        isa::DecodeError::Opcode => Status::Opcode,
        isa::DecodeError::Field => Status::Field,
    })?;
    // reg: every register index the instruction uses.
    let used: Vec<u32> = match insn {
        Insn::Alu { rd, ra, rb, .. } => vec![rd as u32, ra as u32, rb as u32],
        Insn::AluI { rd, ra, .. } => vec![rd as u32, ra as u32],
        Insn::Li { rd, .. } | Insn::Loop { rd, .. } => vec![rd as u32],
        Insn::Bnz { ra, .. } | Insn::Bz { ra, .. } => vec![ra as u32],
        Insn::Jmp { .. } | Insn::End => vec![],
        Insn::CdlUd { rd, n, .. } => vec![rd as u32 + n as u32 - 1],
        Insn::CdlMem { rd, ra, n, .. } => vec![rd as u32 + n as u32 - 1, ra as u32],
        Insn::Ld { rd, ra, rb, rc, .. }
        | Insn::LdZmap { rd, ra, rb, rc, .. }
        | Insn::St { rd, ra, rb, rc, .. }
        | Insn::Cmp { rd, ra, rb, rc, .. }
        | Insn::Exp { rd, ra, rb, rc, .. }
        | Insn::Mma { rd, ra, rb, rc, .. }
        | Insn::Tex { rd, ra, rb, rc, .. } => {
            vec![rd as u32, ra as u32, rb as u32, rc as u32]
        }
        Insn::Act { rd, ra, .. } => vec![rd as u32, ra as u32],
    };
    if used.iter().any(|&r| r >= slot.reg_count) {
        return Err(Status::Reg);
    }
    let r = |i: u8| regs[(slot.reg_base + i as u32) as usize];
    // pc: the next pc, for every instruction but end.
    let pc = slot.pc as u64;
    let next: Option<u64> = match insn {
        Insn::End => None,
        Insn::Jmp { t } => Some(t as u64),
        Insn::Bnz { ra, t } => Some(if r(ra) != 0 { t as u64 } else { pc + 1 }),
        Insn::Bz { ra, t } => Some(if r(ra) == 0 { t as u64 } else { pc + 1 }),
        Insn::Loop { rd, t } => Some(if r(rd).wrapping_sub(1) != 0 { t as u64 } else { pc + 1 }),
        _ => Some(pc + 1),
    };
    if next.is_some_and(|n| n >= d as u64) {
        return Err(Status::Pc);
    }
    match insn {
        Insn::CdlUd { i, .. } if i % 4 != 0 => return Err(Status::Align),
        Insn::CdlMem { ra, i, .. } if r(ra).wrapping_add(i) % 4 != 0 => return Err(Status::Align),
        Insn::Ld { rd, rc, p: pp, .. } | Insn::LdZmap { rd, rc, p: pp, .. } | Insn::St { rd, rc, p: pp, .. } => {
            let (s, rows, n) = (r(rd) as u64, (r(rc) >> 16) as u64, (r(rc) & 0xFFFF) as u64);
            let pitch = if pp != 0 { pp as u64 } else { n };
            let zmap = matches!(insn, Insn::LdZmap { .. });
            // align: zmap and s not a multiple of 4, whatever rows and n
            // (as mma's align is checked whatever the shape).
            if zmap && s % 4 != 0 {
                return Err(Status::Align);
            }
            // smem, for rows > 0 and n > 0 only (the zmap terms too: with
            // rows = 0 or n = 0 nothing, the map included, is written).
            let nz = rows.div_ceil(32);
            if rows > 0
                && n > 0
                && (s + (rows - 1) * pitch + n > slot.smem_size as u64 || zmap && (s < 4 * nz || rows > p.kmax as u64))
            {
                return Err(Status::Smem);
            }
        }
        Insn::Act { rd, ra, p } => {
            // align: s or P (p, or 4w) not a multiple of 4, whatever rows and w.
            let (s, rows, w) = (r(rd) as u64, (r(ra) >> 16) as u64, (r(ra) & 0xFFFF) as u64);
            let pitch = if p != 0 { p as u64 } else { 4 * w };
            if s % 4 != 0 || pitch % 4 != 0 {
                return Err(Status::Align);
            }
            if rows > 0 && w > 0 && s + (rows - 1) * pitch + 4 * w > slot.smem_size as u64 {
                return Err(Status::Smem);
            }
        }
        Insn::Cmp { rd, ra, rb, rc, e } | Insn::Exp { rd, ra, rb, rc, e } => {
            let (dd, ss, q) = (r(rd) as u64, r(ra) as u64, r(rb) as u64);
            if dd % 4 != 0 || ss % 4 != 0 || q % 4 != 0 {
                return Err(Status::Align);
            }
            let (n, z) = ((r(rc) & 0xFFFF) as u64, e.bytes() as u64);
            let mask_end = q + 4 + 4 * n.div_ceil(32);
            // The ends (exclusive) of what it reads and writes.
            let ends: Vec<u64> = match insn {
                Insn::Cmp { .. } if n == 0 => vec![q + 4],
                Insn::Cmp { .. } => vec![ss + 8 * (n * z).div_ceil(8), dd + n * z, mask_end],
                _ if n == 0 => vec![],
                _ => vec![ss + 4 * (n * z).div_ceil(4), mask_end, dd + n * z],
            };
            if ends.iter().any(|&end| end > slot.smem_size as u64) {
                return Err(Status::Smem);
            }
        }
        Insn::Mma { rd, ra, rb, rc, c0, qa, qb, skip } => {
            let op = mma::Op { skip, ..mma::Op::of(r(rd), r(ra), r(rb), r(rc), c0, qa as u32, qb as u32) };
            mma::check(p.kmax, slot.smem_size, &op)?
        }
        Insn::Tex { rd, ra, rb, rc, kind, format, mx, my, k } => {
            tex::check(slot.smem_size, &tex::Op::of(r(rd), r(ra), r(rb), r(rc), kind, format, mx, my, k))?
        }
        _ => {}
    }
    Ok(insn)
}

/// An entry of the DMA queue: a copy (`ld`/`st`), a vector operation, an
/// `mma` or a `tex`.
#[derive(Clone, Copy, Debug)]
enum DmaOp {
    Copy(dma::Op),
    Vector(vector::Op),
    Mma(mma::Op),
    Tex(tex::Op),
}

impl DmaOp {
    fn joined(&self) -> u64 {
        match self {
            DmaOp::Copy(o) => o.joined,
            DmaOp::Vector(o) => o.joined,
            DmaOp::Mma(o) => o.joined,
            DmaOp::Tex(o) => o.joined,
        }
    }
    fn slot(&self) -> usize {
        match self {
            DmaOp::Copy(o) => o.slot,
            DmaOp::Vector(o) => o.slot,
            DmaOp::Mma(o) => o.slot,
            DmaOp::Tex(o) => o.slot,
        }
    }
    fn empty(&self) -> bool {
        match self {
            DmaOp::Copy(o) => o.empty(),
            DmaOp::Vector(o) => o.empty(),
            DmaOp::Mma(o) => o.empty(),
            DmaOp::Tex(o) => o.empty(),
        }
    }
}

/// The DMA operation in progress.
enum DmaBusy {
    Copy(Box<dma::Active>),
    /// A vector operation, an `mma` or a `tex` of `slot`, done in `done`
    /// (its data already written: see [`vector`], [`mma`], [`tex`]).
    Ahead { slot: usize, done: u64 },
}

/// Runs the blocks of `r` on a unit with parameters `p` (docs/cu.md,
/// "Timing" and "`gpurtl run cu`").
pub fn run(p: &CuParams, r: &Run) -> Result<Outcome, ModelError> {
    run_full(p, r).map(|f| f.outcome)
}

/// [`run`]'s outcome with the final register file and scratchpad (which
/// the output does not show; the tests look at them).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Full {
    pub outcome: Outcome,
    pub regfile: Vec<u32>,
    pub smem: Vec<u8>,
    pub banks: Banks,
}

pub(crate) fn run_full(p: &CuParams, r: &Run) -> Result<Full, ModelError> {
    let slots_n = p.slots as usize;
    let d = p.imem_depth;
    let lat = r.mem_latency.max(1) as u64;
    let o = p.max_outstanding;
    let sb = p.smem_bytes();
    let r_shares = shares(p, r.smem_bytes, r.regs);
    if r_shares == 0 && !r.blocks.is_empty() {
        return Err(ModelError::NoShare { smem_bytes: r.smem_bytes, regs: r.regs });
    }
    let start = 2 * (p.slots as u64 + 1);
    // The model's own budget, unless a run budget is in force (it decides).
    let budget = match crate::budget::limit() {
        u64::MAX => (start + CYCLES_PER_BLOCK * r.blocks.len() as u64).min(MAX_CYCLES),
        _ => u64::MAX,
    };

    let mut mem = r.memory.clone();
    let mut smem = vec![0u8; sb as usize];
    let mut banks = Banks::new(p.banks);
    let mut regfile = vec![0u32; p.regs as usize];
    let mut slots: Vec<Slot> = (0..slots_n)
        .map(|_| Slot {
            state: State::Free,
            free_from: 0,
            pick_from: u64::MAX,
            x_at: None,
            done_at: 0,
            store_prog: None,
            store: vec![0; d as usize],
            block: 0,
            pc: 0,
            status: Status::Ok,
            share: 0,
            reg_base: 0,
            reg_count: 0,
            smem_base: 0,
            smem_size: 0,
            user_data: [0; 16],
        })
        .collect();
    // Shares: busy, and free from this cycle when not.
    let mut share_busy = vec![false; r_shares as usize];
    let mut share_free_from = vec![0u64; r_shares as usize];

    let mut results: Vec<BlockResult> = Vec::new();
    let mut trace: Vec<Retire> = Vec::new();
    let mut k = Counters::default();
    let mut next_block = 0usize;
    let mut completed = 0usize;
    let mut rr = 0usize; // one past the slot picked most recently

    let mut load_queue: VecDeque<(usize, u64)> = VecDeque::new(); // (slot, joined)
    let mut load: Option<Load> = None;
    let mut load_free_from = 0u64;

    let mut cdl_queue: VecDeque<CdlOp> = VecDeque::new();
    let mut cdl: Option<CdlActive> = None;
    let mut cdl_free_from = 0u64;

    let mut dma_queue: VecDeque<DmaOp> = VecDeque::new();
    let mut dma_active: Option<DmaBusy> = None;
    let mut dma_free_from = 0u64;

    let mut c: u64 = 0;
    while completed < r.blocks.len() {
        if crate::budget::over(c) {
            break;
        }
        if c > budget {
            return Err(ModelError::Cycles { budget, completed, blocks: r.blocks.len() });
        }

        // Completion: the lowest-numbered slot done by the end of c - 1.
        if let Some(s) = (0..slots_n).find(|&s| slots[s].state == State::Done && slots[s].done_at < c) {
            let slot = &mut slots[s];
            slot.state = State::Free;
            slot.free_from = c + 1;
            let res = &mut results[slot.block];
            res.status = slot.status;
            res.pc = slot.pc;
            res.complete_cycle = c;
            share_busy[slot.share as usize] = false;
            share_free_from[slot.share as usize] = c + 1;
            completed += 1;
        }

        // Dispatch: the next block with the lowest free share, to the
        // lowest-numbered free slot (dsp_ready from the end of the start).
        if c >= start && next_block < r.blocks.len() {
            let share = (0..r_shares as usize).find(|&k| !share_busy[k] && share_free_from[k] <= c);
            let slot = (0..slots_n).find(|&s| slots[s].state == State::Free && slots[s].free_from <= c);
            if let (Some(share), Some(s)) = (share, slot) {
                let b = &r.blocks[next_block];
                share_busy[share] = true;
                let sl = &mut slots[s];
                sl.block = next_block;
                sl.share = share as u32;
                sl.reg_base = share as u32 * r.regs;
                sl.reg_count = r.regs;
                sl.smem_base = share as u32 * r.smem_bytes;
                sl.smem_size = r.smem_bytes;
                sl.user_data = b.user_data;
                sl.pc = 0;
                sl.status = Status::Ok;
                results.push(BlockResult {
                    id: b.id,
                    status: Status::Ok,
                    pc: 0,
                    share: share as u32,
                    dispatch_cycle: c,
                    complete_cycle: 0,
                });
                next_block += 1;
                let bad = sl.reg_count < 3
                    || sl.reg_base as u64 + sl.reg_count as u64 > p.regs as u64
                    || !sl.smem_base.is_multiple_of(4)
                    || !sl.smem_size.is_multiple_of(4)
                    || sl.smem_base as u64 + sl.smem_size as u64 > sb
                    || !r.program.is_multiple_of(256);
                if bad {
                    sl.state = State::Done;
                    sl.done_at = c;
                    sl.status = Status::Dispatch;
                } else {
                    let base = sl.reg_base as usize;
                    regfile[base..base + sl.reg_count as usize].fill(0);
                    for (i, v) in b.id.iter().enumerate() {
                        regfile[base + i] = *v as u32;
                    }
                    if sl.store_prog == Some(r.program) {
                        sl.state = State::Running;
                        sl.pick_from = c + 1;
                    } else {
                        sl.state = State::Loading;
                        load_queue.push_back((s, c));
                    }
                }
            }
        }

        // Execution: the slot whose X cycle is c.
        if let Some(s) = (0..slots_n).find(|&s| slots[s].x_at == Some(c)) {
            k.instructions += 1;
            if k.instructions > MAX_INSTRUCTIONS {
                return Err(ModelError::Instructions { budget: MAX_INSTRUCTIONS });
            }
            let sl = &mut slots[s];
            sl.x_at = None;
            let word = sl.store[sl.pc as usize];
            trace.push(Retire { cycle: c, slot: s as u32, block: results[sl.block].id, pc: sl.pc, insn: word });
            match check(p, sl, word, &regfile, d) {
                Err(status) => {
                    sl.state = State::Done;
                    sl.done_at = c;
                    sl.status = status;
                }
                Ok(insn) => {
                    let base = sl.reg_base;
                    let reg = |i: u8| regfile[(base + i as u32) as usize];
                    let mut set: Option<(u8, u32)> = None;
                    let mut next = sl.pc + 1;
                    sl.state = State::Running;
                    sl.pick_from = c + 1;
                    match insn {
                        Insn::Alu { op, rd, ra, rb } => set = Some((rd, op.apply(reg(ra), reg(rb)))),
                        Insn::AluI { op, rd, ra, imm } => set = Some((rd, op.apply(reg(ra), imm))),
                        Insn::Li { rd, imm } => set = Some((rd, imm)),
                        Insn::Jmp { t } => next = t,
                        Insn::Bnz { ra, t } => {
                            if reg(ra) != 0 {
                                next = t
                            }
                        }
                        Insn::Bz { ra, t } => {
                            if reg(ra) == 0 {
                                next = t
                            }
                        }
                        Insn::Loop { rd, t } => {
                            let v = reg(rd).wrapping_sub(1);
                            set = Some((rd, v));
                            if v != 0 {
                                next = t
                            }
                        }
                        Insn::End => {
                            sl.state = State::Done;
                            sl.done_at = c;
                            next = sl.pc;
                        }
                        Insn::CdlUd { rd, n, i } => {
                            sl.state = State::Waiting;
                            cdl_queue.push_back(CdlOp { slot: s, joined: c, memory: false, off: i, n: n as u32, dest: base + rd as u32 });
                        }
                        Insn::CdlMem { rd, ra, n, i } => {
                            sl.state = State::Waiting;
                            let off = reg(ra).wrapping_add(i);
                            cdl_queue.push_back(CdlOp { slot: s, joined: c, memory: true, off, n: n as u32, dest: base + rd as u32 });
                        }
                        Insn::Ld { rd, ra, rb, rc, p } | Insn::LdZmap { rd, ra, rb, rc, p } | Insn::St { rd, ra, rb, rc, p } => {
                            sl.state = State::Waiting;
                            let (rows, n) = (reg(rc) >> 16, reg(rc) & 0xFFFF);
                            dma_queue.push_back(DmaOp::Copy(dma::Op {
                                kind: if matches!(insn, Insn::St { .. }) { dma::Kind::St } else { dma::Kind::Ld },
                                slot: s,
                                joined: c,
                                s: reg(rd),
                                a: reg(ra),
                                stride: reg(rb),
                                rows,
                                n,
                                pitch: if p != 0 { p as u32 } else { n },
                                smem_base: sl.smem_base,
                                zmap: matches!(insn, Insn::LdZmap { .. }),
                            }));
                        }
                        Insn::Act { rd, ra, p } => {
                            sl.state = State::Waiting;
                            let (rows, w) = (reg(ra) >> 16, reg(ra) & 0xFFFF);
                            dma_queue.push_back(DmaOp::Vector(vector::Op {
                                kind: vector::Kind::Act,
                                slot: s,
                                joined: c,
                                smem_base: sl.smem_base,
                                d: reg(rd),
                                s: 0,
                                q: 0,
                                rows,
                                w,
                                pitch: if p != 0 { p as u32 } else { 4 * w },
                                n: 0,
                                e: isa::ElemSize::B8,
                            }));
                        }
                        Insn::Cmp { rd, ra, rb, rc, e } | Insn::Exp { rd, ra, rb, rc, e } => {
                            sl.state = State::Waiting;
                            dma_queue.push_back(DmaOp::Vector(vector::Op {
                                kind: if matches!(insn, Insn::Cmp { .. }) { vector::Kind::Cmp } else { vector::Kind::Exp },
                                slot: s,
                                joined: c,
                                smem_base: sl.smem_base,
                                d: reg(rd),
                                s: reg(ra),
                                q: reg(rb),
                                rows: 0,
                                w: 0,
                                pitch: 0,
                                n: reg(rc) & 0xFFFF,
                                e,
                            }));
                        }
                        Insn::Mma { rd, ra, rb, rc, c0, qa, qb, skip } => {
                            sl.state = State::Waiting;
                            let op = mma::Op { skip, ..mma::Op::of(reg(rd), reg(ra), reg(rb), reg(rc), c0, qa as u32, qb as u32) };
                            dma_queue.push_back(DmaOp::Mma(mma::Op { slot: s, joined: c, smem_base: sl.smem_base, ..op }));
                        }
                        Insn::Tex { rd, ra, rb, rc, kind, format, mx, my, k } => {
                            sl.state = State::Waiting;
                            let op = tex::Op::of(reg(rd), reg(ra), reg(rb), reg(rc), kind, format, mx, my, k);
                            dma_queue.push_back(DmaOp::Tex(tex::Op { slot: s, joined: c, smem_base: sl.smem_base, ..op }));
                        }
                    }
                    if let Some((rd, v)) = set {
                        regfile[(base + rd as u32) as usize] = v;
                    }
                    sl.pc = next;
                    if sl.state != State::Running {
                        sl.pick_from = u64::MAX;
                    }
                }
            }
        }

        // Issue: the first running slot that may be picked, from rr on.
        if let Some(s) = (0..slots_n).map(|i| (rr + i) % slots_n).find(|&s| slots[s].state == State::Running && slots[s].pick_from <= c) {
            slots[s].x_at = Some(c + 1);
            slots[s].pick_from = u64::MAX;
            rr = (s + 1) % slots_n;
        }

        // Program loads: one at a time, the request taken as offered, beat
        // k taken in req + L + k (reads before this cycle's st writes).
        if load.is_none() && c >= load_free_from && load_queue.front().is_some_and(|&(_, j)| j < c) {
            let (s, _) = load_queue.pop_front().unwrap();
            slots[s].store_prog = None;
            load = Some(Load { slot: s, prog: r.program, req: c, next: 0 });
            k.loads += 1;
        }
        if let Some(l) = &mut load {
            if c == l.req + lat + l.next as u64 {
                let addr = (l.prog as u64 + 8 * l.next as u64) & 0xFFFF_FFFF;
                let lo = mem.read_words(addr, 4)[0] as u64;
                let hi = mem.read_words((addr + 4) & 0xFFFF_FFFF, 4)[0] as u64;
                slots[l.slot].store[l.next as usize] = lo | hi << 32;
                k.rd_beats += 1;
                l.next += 1;
                if l.next == d {
                    let sl = &mut slots[l.slot];
                    sl.store_prog = Some(l.prog);
                    sl.state = State::Running;
                    sl.pick_from = c + 1;
                    load_free_from = c + 1;
                    load = None;
                }
            }
        }

        // cdl: accepted when the cbload is idle and the head joined before c.
        if cdl.is_none() && c >= cdl_free_from && cdl_queue.front().is_some_and(|op| op.joined < c) {
            let op = cdl_queue.pop_front().unwrap();
            // View size: 64 bytes of user data, 2^32 of memory; real beats
            // R = 0 if off >= size, else min(B, ceil((size - off) / 4)).
            let size: u64 = if op.memory { 1 << 32 } else { 64 };
            let off = op.off as u64;
            let real = if off >= size { 0 } else { (op.n as u64).min((size - off).div_ceil(4)) as u32 };
            let l = if op.memory { lat } else { 1 };
            let t = cbload_beats(c, op.n, real, o, l);
            cdl = Some(CdlActive { op, t, real, next: 0, values: [0; 16] });
            k.cdl += 1;
        }
        if let Some(a) = &mut cdl {
            if a.next < a.op.n as usize && a.t[a.next] == c {
                let j = a.next;
                if (j as u32) < a.real {
                    let off = a.op.off as u64 + 4 * j as u64;
                    a.values[j] = if a.op.memory {
                        k.rd_beats += 1;
                        mem.read_words(off, 4)[0]
                    } else {
                        slots[a.op.slot].user_data[(off / 4) as usize]
                    };
                }
                a.next += 1;
            }
            if c == a.t[a.op.n as usize - 1] + 1 {
                for j in 0..a.op.n as usize {
                    regfile[a.op.dest as usize + j] = a.values[j];
                }
                let sl = &mut slots[a.op.slot];
                sl.state = State::Running;
                sl.pick_from = c + 1;
                cdl_free_from = c + 1;
                cdl = None;
            }
        }

        // DMA: one operation at a time, whatever its kind.
        if dma_active.is_none() && c >= dma_free_from && dma_queue.front().is_some_and(|op| op.joined() < c) {
            let op = dma_queue.pop_front().unwrap();
            match op {
                DmaOp::Copy(o) if o.kind == dma::Kind::Ld => k.ld += 1,
                DmaOp::Copy(_) => k.st += 1,
                DmaOp::Vector(v) => match v.kind {
                    vector::Kind::Act => k.act += 1,
                    vector::Kind::Cmp => k.cmp += 1,
                    vector::Kind::Exp => k.exp += 1,
                },
                DmaOp::Mma(_) => k.mma += 1,
                DmaOp::Tex(_) => k.tex += 1,
            }
            if op.empty() {
                let sl = &mut slots[op.slot()];
                sl.state = State::Running;
                sl.pick_from = c + 1;
                dma_free_from = c + 1;
            } else {
                dma_active = Some(match op {
                    DmaOp::Copy(op) => DmaBusy::Copy(Box::new(dma::Active::start(op, c, r.mem_latency.max(1), o))),
                    // Steps from g + 1, back to back: done in g + their cycles.
                    // Their READs are rd1's.
                    DmaOp::Vector(op) => {
                        let steps = vector::run(&op, &mut smem);
                        for st in &steps {
                            if let vector::Step::Read(at) = st {
                                banks.took(op.smem_base as u64 + *at as u64, RD1);
                            }
                        }
                        DmaBusy::Ahead { slot: op.slot, done: c + vector::cycles(&steps) }
                    }
                    DmaOp::Mma(op) => {
                        let done = mma::run(p, &op, c, &mut smem, &mut banks, false).done;
                        DmaBusy::Ahead { slot: op.slot, done }
                    }
                    DmaOp::Tex(op) => {
                        let out = tex::run(p, &op, c, &mut smem, &mut banks, false);
                        k.texel_fetches += out.fetches;
                        DmaBusy::Ahead { slot: op.slot, done: out.done }
                    }
                });
            }
        } else if let Some(busy) = &mut dma_active {
            let done_slot = match busy {
                DmaBusy::Copy(a) => {
                    let step = a.step(c, &mut mem, &mut smem, &mut banks);
                    k.rd_beats += step.rd_beats;
                    k.wr_beats += step.wr_beats;
                    step.done.then_some(a.op.slot)
                }
                DmaBusy::Ahead { slot, done } => (*done == c).then_some(*slot),
            };
            if let Some(s) = done_slot {
                let sl = &mut slots[s];
                sl.state = State::Running;
                sl.pick_from = c + 1;
                dma_free_from = c + 1;
                dma_active = None;
            }
        }

        c += 1;
    }

    let first = results.iter().map(|b| b.dispatch_cycle).min().unwrap_or(0);
    let last = results.iter().map(|b| b.complete_cycle).max().unwrap_or(0);
    Ok(Full { outcome: Outcome { memory: mem, blocks: results, trace, counters: k, cycles: last - first }, regfile, smem, banks })
}
