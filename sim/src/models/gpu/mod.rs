//! Golden model of the integrated top `gpu` (docs/gpu.md, "The golden
//! model"), composed from the blocks' models: results, not cycles.
//!
//! [`run`] does what the spec's golden model says, in two steps:
//!
//! 1. Each listed queue `q`: the `cmdproc` model ([`cmdproc::run`]) in
//!    compute mode with the top's derived parameters
//!    ([`GpuParams::cmdproc`]), registers `CMD_BASE`, `CMD_SIZE` from the
//!    queue's entry and `IRQ_ENABLE = 2` (the rest 0), on the input's
//!    memory: its commands (with each dispatch's snapshot and each
//!    `WRITE_DATA`'s dwords), trace lines, status and error.
//! 2. The queues' commands are played queue by queue, each queue's in
//!    command order, on one memory (the input's): a `WRITE_DATA` writes its
//!    dwords; a `DISPATCH_DIRECT` with `x·y·z > 0` runs its kernel through
//!    the `cu` model ([`cu::run`], the top's `cu` parameters) with the blocks
//!    `b = 0 .. x·y·z - 1` in order, block `b` with the id `(b mod x,
//!    (b div x) mod y, b div (x·y))` and the snapshot's user data, shares of
//!    `R = T·4·(VGPRS + 1)` registers and `M = 512·LDS_SIZE` scratchpad
//!    bytes, the program at `PGM_LO[23:0]·256`; blocks that end with a
//!    status other than `ok` set the queue's `KERR_*` and its kernel-error
//!    interrupt bit, and such a kernel (which has run all its blocks) ends
//!    the queue's play (reading 12); a `RELEASE_MEM` writes per
//!    `DATA_SEL`, counts a fence and, with `INT_SEL` 1 or 2, sets the
//!    queue's fence interrupt bit. Every other command has no effect of the
//!    top's.
//!
//! Readings of the spec (docs/gpu.md; where it is silent or open, the most
//! literal reading):
//!
//! 1. Every queue's `cmdproc` reads the **input's** memory, whatever an
//!    earlier queue's kernels, `WRITE_DATA`s or fences wrote ("reads its
//!    ring from the input's memory"; a `cmdproc` reads its buffers as they
//!    are at the doorbell anyway, docs/cmdproc.md). So a ring that another
//!    queue writes is read as it was before the run (the RTL's result is
//!    then not defined: "Between queues").
//! 2. The `cmdproc` model takes its memory as dword runs. It is given the
//!    4 KiB pages of the input's memory that its buffers touch: the main
//!    buffer and the buffer of every `INDIRECT_BUFFER` command of its run,
//!    found by running it again until its commands name no buffer whose
//!    pages it was not given (a run that has read every buffer it went
//!    into from the true memory is the true run). In compute mode a
//!    `cmdproc` reads nothing else (draws are errors: no index is read).
//! 3. Timing inputs do not change results and are fixed: the `cmdproc`
//!    model at memory latency 1 without pipeline stalls, the `cu` model at
//!    memory latency 1. The input's `mem` is ignored (the spec says so).
//! 4. One [`cu::run`] per kernel, with all its blocks: a fresh unit (empty
//!    program stores, a zero register file and scratchpad) each kernel.
//!    Blocks of a kernel run side by side in the unit's slots, as the spec's
//!    "one `cu` of the top's parameters" says; where they land does not
//!    change what each does as long as they write disjoint bytes (the
//!    programmer's duty, docs/gpu.md "A kernel"). The `cu` model's share
//!    `k` sits at `k·R` / `k·M`, not at the top's slot bases: docs/gpu.md
//!    says the place does not matter (docs/cu.md: a share's scratchpad is
//!    not defined before a write).
//! 5. `KERR_MASK` bit `s` is the `cu` status code `s` (docs/cu.md
//!    "Errors": 1 `opcode` .. 7 `dispatch`; bit 0, `ok`, is never set);
//!    `KERR_ADDR` is 0 and `KERR_*` all 0 unless a kernel of the queue has a
//!    failed block. A queue has at most one failing kernel (reading 12), so
//!    `KERR_ADDR` is its dispatch's address and `KERR_BLOCKS` its failed
//!    blocks.
//! 6. `irq`: each listed queue's `cmdproc` line OR `IRQ_STATUS &
//!    IRQ_ENABLE` of the top, whose `IRQ_ENABLE` has bits `2q` and `2q + 1`
//!    of every listed queue. A `cmdproc`'s line is its error bit (`IRQ_ENABLE
//!    = 2`): high when its run ended in an error, the `kernel` error of
//!    reading 12 included (the `cmdproc` model's own `irq` otherwise).
//! 7. `counters`: `commands` the sum over the queues of their command
//!    counts (`CMD_COUNT`: every command of the `cmdproc` model's run, or up
//!    to and including the failing kernel's dispatch, reading 12);
//!    `kernels` the dispatches with `x·y·z > 0` played (each completes);
//!    `blocks` the sum of their `x·y·z`; `failed_blocks`; `fences` the
//!    `RELEASE_MEM` commands played (`DATA_SEL` 0 included);
//!    `instructions` the `cu` model's executed instructions (erring ones
//!    included), summed over the kernels played.
//! 8. Addresses wrap modulo 2^32: `WRITE_DATA` dword `i` at `p1 + 4i`, a
//!    64-bit fence's high dword at `p2 + 4` (never wraps: `p2` is 8-byte
//!    aligned).
//! 9. The output's `error` is the error of the first listed queue (lowest
//!    `q`) whose run ended in an error.
//! 10. Input: `queues`, `memory` and `dump` are required (`memory` and
//!     `dump` "exactly as `gpurtl run cu` takes them", where both are
//!     required, possibly empty); `priority` is optional (0); `mem` is
//!     optional, and each of its keys (`latency` 10, `stall` 0, `seed` 1).
//!     `cmd_base`, `cmd_size`: multiples of 4 from 0 to 4294967292
//!     (`cmd_size` 0: an empty ring, done at once).
//! 11. A `cu` model error (no share fits; the model's cycle or instruction
//!     budget: a block that loops forever) ends [`run`] with
//!     [`ModelError::Cu`] naming the queue and the dispatch's address. "No
//!     share" cannot happen: the `cmdproc`'s `need` check keeps `R` and `M`
//!     within a slot's part of the unit.
//! 12. **A kernel with a failed block stops its queue** (docs/gpu.md,
//!     "Kernel errors stop their queue" and "The golden model"). The
//!     `cmdproc` model runs without `kerr` (its whole ring, as if no kernel
//!     failed); the play of queue `q` then stops after the first dispatch
//!     whose kernel has a block ending other than `ok`: that kernel still
//!     runs all its blocks (memory, counters, its kernel record), then the
//!     queue's later commands are dropped (no `WRITE_DATA`, kernel or fence
//!     of them, no record, no count), its trace is cut after the dispatch's
//!     line, its command count is the dispatch's index + 1, its status is
//!     `error` with `("kernel", dispatch address)` (`Cause::Kernel`, 12),
//!     whatever the `cmdproc` model's run ended with (`done`, or an error
//!     of a later packet, which does not happen), and its `cmdproc`'s error
//!     interrupt line is high (reading 6). This is the run the `cmdproc`
//!     would give with the dispatch's id in its `kerr`: the dispatch
//!     barrier means nothing after it was read, so the commands before it
//!     are the same. Other queues are not affected.
//!
//! Files: `io.rs` (the `gpurtl run gpu` files); `tests.rs`; here, the
//! types and [`run`].

pub mod io;
#[cfg(test)]
mod tests;

pub use io::{output_json, parse_input, untimed};

use crate::mem::Memory;
use crate::models::cmdproc::{self, Registers, Workload};
use crate::models::cu::{self, Region};
use gpurtl_params::cmdproc::{sh, Cause, CmdprocParams, Opcode};
use gpurtl_params::cu::Status as CuStatus;
use gpurtl_params::gpu::GpuParams;
use std::collections::BTreeSet;
use std::fmt;

/// One queue of the input: entry `q` programs queue `q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueInput {
    pub cmd_base: u32,
    pub cmd_size: u32,
    /// `PRIORITY[q]`, 0..3 (the scheduler's; no effect on results).
    pub priority: u32,
}

/// The AXI memory's timing in the RTL run (the model ignores it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemTiming {
    pub latency: u32,
    pub stall: f64,
    pub seed: u64,
}

impl Default for MemTiming {
    fn default() -> Self {
        MemTiming { latency: 10, stall: 0.0, seed: 1 }
    }
}

/// A `gpurtl run gpu` run: the listed queues, the memory at the start, the
/// regions to report, the memory's timing.
#[derive(Clone, Debug)]
pub struct Run {
    pub queues: Vec<QueueInput>,
    pub memory: Memory,
    pub dump: Vec<Region>,
    pub mem: MemTiming,
}

/// A kernel submitted (a `DISPATCH_DIRECT` with `x·y·z > 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelRecord {
    pub queue: u32,
    /// The `DISPATCH_DIRECT` header's byte address.
    pub addr: u32,
    /// `x·y·z`.
    pub blocks: u64,
    /// Cycles of the submission, the first block's dispatch, the
    /// completion (the RTL's; `None` in the model).
    pub submit: Option<u64>,
    pub start: Option<u64>,
    pub end: Option<u64>,
}

/// A listed queue after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    pub queue: u32,
    /// `true`: its `cmdproc` run ended `done`; `false`: in an error (a
    /// failing kernel's `kernel` error included).
    pub done: bool,
    /// The cause's name (as `gpurtl run cmdproc` prints it) and the
    /// offending packet's header address (`"kernel"` and the failing
    /// kernel's dispatch address when a kernel had a failed block).
    pub error: Option<(String, u32)>,
    /// `FENCES[q]`, `KERNELS[q]`, `KERR_MASK[q]`, `KERR_ADDR[q]`,
    /// `KERR_BLOCKS[q]`.
    pub fences: u32,
    pub kernels: u32,
    pub kerr_mask: u32,
    pub kerr_addr: u32,
    pub kerr_blocks: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub commands: u64,
    pub kernels: u64,
    pub blocks: u64,
    pub failed_blocks: u64,
    pub fences: u64,
    pub instructions: u64,
}

/// What a run gives.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The memory after the run.
    pub memory: Memory,
    /// Per queue in command order, queues in order.
    pub kernels: Vec<KernelRecord>,
    /// Per listed queue: its command trace lines (up to a failing
    /// kernel's dispatch).
    pub trace: Vec<(u32, Vec<String>)>,
    /// Per listed queue.
    pub status: Vec<QueueStatus>,
    /// `irq_o` after the run.
    pub irq: bool,
    pub counters: Counters,
    /// From the first doorbell's handshake to the end (the RTL's; `None` in
    /// the model).
    pub cycles: Option<u64>,
}

/// A run the model cannot finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The `cu` model could not run the kernel of queue `queue` whose
    /// `DISPATCH_DIRECT` header is at `addr`.
    Cu { queue: u32, addr: u32, error: cu::ModelError },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Cu { queue, addr, error } => {
                write!(f, "queue {queue}, the kernel of the DISPATCH_DIRECT at {addr:#010x}: {error}")
            }
        }
    }
}

impl std::error::Error for ModelError {}

/// The `cu` model's memory latency (no effect on results: reading 3).
const CU_LATENCY: u32 = 1;
/// The `cmdproc` model's memory latency (likewise).
const CMDPROC_LATENCY: u32 = 1;
/// Bytes of a page given to the `cmdproc` model (reading 2).
const PAGE: u64 = 4096;

/// The golden model of the top (docs/gpu.md, "The golden model").
pub fn run(p: &GpuParams, r: &Run) -> Result<Outcome, ModelError> {
    let cp = p.cmdproc();
    let runs: Vec<cmdproc::Outcome> = r.queues.iter().map(|q| queue_run(&cp, q, &r.memory)).collect();

    let mut memory = r.memory.clone();
    let mut kernels = Vec::new();
    let mut status = Vec::new();
    let mut counters = Counters::default();
    let mut irq_status = 0u32;
    let mut irq_enable = 0u32;
    let mut trace = Vec::new();
    let mut cmdproc_irq = false;
    for (qi, o) in runs.into_iter().enumerate() {
        let q = qi as u32;
        irq_enable |= 3 << (2 * q);
        let mut st = QueueStatus {
            queue: q,
            done: o.status == cmdproc::Status::Done,
            error: o.error.map(|(c, a)| (c.name().to_string(), a)),
            fences: 0,
            kernels: 0,
            kerr_mask: 0,
            kerr_addr: 0,
            kerr_blocks: 0,
        };
        let mut irq_line = o.irq;
        // The queue's commands played: all of them, or those up to a
        // dispatch whose kernel failed (reading 12).
        let mut played = o.commands.len();
        // One memory_writes entry per WRITE_DATA command, in command order.
        let mut writes = o.memory_writes.iter();
        for (ci, c) in o.commands.iter().enumerate() {
            let rec = &c.record;
            let Some(op) = Opcode::from_code((rec.header >> 8) & 0xFF) else { continue };
            match op {
                Opcode::WriteData => {
                    let (addr, data) = writes.next().expect("gpu model: a WRITE_DATA command without its writes");
                    for (i, v) in data.iter().enumerate() {
                        write_dword(&mut memory, addr.wrapping_add(4 * i as u32), *v);
                    }
                }
                Opcode::DispatchDirect => {
                    let (x, y, z) = (rec.p[0] as u64, rec.p[1] as u64, rec.p[2] as u64);
                    let n = x * y * z;
                    if n == 0 {
                        continue;
                    }
                    let snap = c.sh.as_ref().expect("gpu model: a compute-mode dispatch without its snapshot");
                    let kr = cu_run(p, snap, x, y, n, std::mem::take(&mut memory))
                        .map_err(|error| ModelError::Cu { queue: q, addr: rec.addr, error })?;
                    memory = kr.memory;
                    let mut failed = 0u32;
                    for b in &kr.blocks {
                        if b.status != CuStatus::Ok {
                            failed += 1;
                            st.kerr_mask |= 1 << b.status.code();
                        }
                    }
                    st.kernels += 1;
                    counters.kernels += 1;
                    counters.blocks += n;
                    counters.failed_blocks += failed as u64;
                    counters.instructions += kr.counters.instructions;
                    kernels.push(KernelRecord { queue: q, addr: rec.addr, blocks: n, submit: None, start: None, end: None });
                    if failed > 0 {
                        // The kernel has completed; its dispatch is taken
                        // with kerr_i = 1: the queue's run ends here, in the
                        // error `kernel` at the dispatch (reading 12).
                        st.kerr_addr = rec.addr;
                        st.kerr_blocks = failed;
                        irq_status |= 2 << (2 * q);
                        st.done = false;
                        st.error = Some((Cause::Kernel.name().to_string(), rec.addr));
                        irq_line = true;
                        played = ci + 1;
                        break;
                    }
                }
                Opcode::ReleaseMem => {
                    let data_sel = rec.p[1] >> 29;
                    let int_sel = (rec.p[1] >> 24) & 7;
                    if data_sel >= 1 {
                        write_dword(&mut memory, rec.p[2], rec.p[4]);
                    }
                    if data_sel == 2 {
                        write_dword(&mut memory, rec.p[2].wrapping_add(4), rec.p[5]);
                    }
                    st.fences += 1;
                    counters.fences += 1;
                    if int_sel == 1 || int_sel == 2 {
                        irq_status |= 1 << (2 * q);
                    }
                }
                _ => {}
            }
        }
        counters.commands += played as u64;
        cmdproc_irq |= irq_line;
        let mut lines = o.trace;
        lines.truncate(played);
        trace.push((q, lines));
        status.push(st);
    }
    let irq = cmdproc_irq || irq_status & irq_enable != 0;
    Ok(Outcome { memory, kernels, trace, status, irq, counters, cycles: None })
}

/// The dword `v` at byte address `addr` (a multiple of 4), little-endian.
fn write_dword(m: &mut Memory, addr: u32, v: u32) {
    m.write(addr as u64, &v.to_le_bytes());
}

/// One kernel of `n = x·y·z` blocks with snapshot `snap` through the `cu`
/// model, on `memory`.
fn cu_run(p: &GpuParams, snap: &[u32], x: u64, y: u64, n: u64, memory: Memory) -> Result<cu::Outcome, cu::ModelError> {
    let full = |i: usize| (snap[i] & 0xFFFF) as u64;
    let t = full(sh::NUM_THREAD_X) * full(sh::NUM_THREAD_Y) * full(sh::NUM_THREAD_Z);
    let regs = t * 4 * ((snap[sh::PGM_RSRC1] & 0x3F) as u64 + 1);
    let smem = 512 * ((snap[sh::PGM_RSRC2] >> 15) & 0x1FF) as u64;
    let program = (snap[sh::PGM_LO] & 0xFF_FFFF) * 256;
    let mut user_data = [0u32; 16];
    user_data.copy_from_slice(&snap[sh::USER_DATA_0..sh::USER_DATA_0 + 16]);
    let blocks = (0..n)
        .map(|b| cu::Block { id: [(b % x) as u16, (b / x % y) as u16, (b / (x * y)) as u16], user_data })
        .collect();
    let run = cu::Run {
        program,
        memory,
        blocks,
        // The cmdproc's need check keeps both within a slot's part of the
        // unit (far below 2^32).
        smem_bytes: u32::try_from(smem).unwrap_or(u32::MAX),
        regs: u32::try_from(regs).unwrap_or(u32::MAX),
        mem_latency: CU_LATENCY,
        dump: Vec::new(),
    };
    cu::run(&p.cu, &run)
}

/// Queue `q`'s `cmdproc` run on `mem` (readings 1 and 2).
fn queue_run(cp: &CmdprocParams, q: &QueueInput, mem: &Memory) -> cmdproc::Outcome {
    let registers = Registers {
        cmd_base: q.cmd_base,
        cmd_size: q.cmd_size,
        prim_base: 0,
        prim_size: 0,
        state: Vec::new(),
        state_ptr: 0,
        irq_enable: 2,
    };
    let mut pages = BTreeSet::new();
    add_pages(&mut pages, q.cmd_base, q.cmd_size as u64 / 4);
    loop {
        let w = Workload {
            registers: registers.clone(),
            memory: page_runs(mem, &pages),
            mem_latency: CMDPROC_LATENCY,
            pipeline: cmdproc::Pipeline::default(),
        };
        let o = cmdproc::run(cp, &w);
        let before = pages.len();
        for c in &o.commands {
            let rec = &c.record;
            if (rec.header >> 8) & 0xFF == Opcode::IndirectBuffer.code() {
                add_pages(&mut pages, rec.p[0], (rec.p[2] & (cmdproc::pm4::IB_SIZE_LIMIT - 1)) as u64);
            }
        }
        if pages.len() == before {
            return o;
        }
    }
}

/// The pages (byte address / [`PAGE`]) of the `dwords` dwords at `addr`
/// (addresses modulo 2^32).
fn add_pages(pages: &mut BTreeSet<u32>, addr: u32, dwords: u64) {
    if dwords == 0 {
        return;
    }
    let count = 1u64 << 32;
    let first = addr as u64 / PAGE;
    let last = (addr as u64 + 4 * dwords - 1) / PAGE;
    for pg in first..=last {
        pages.insert((pg % (count / PAGE)) as u32);
    }
}

/// The pages of `mem` as dword runs, those holding only zeros left out.
fn page_runs(mem: &Memory, pages: &BTreeSet<u32>) -> Vec<(u32, Vec<u32>)> {
    pages
        .iter()
        .filter_map(|&pg| {
            let addr = pg as u64 * PAGE;
            let words = mem.read_words(addr, PAGE as usize);
            words.iter().any(|&w| w != 0).then_some((addr as u32, words))
        })
        .collect()
}
