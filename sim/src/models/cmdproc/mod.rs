//! Golden model of the command processor front end (docs/cmdproc.md),
//! written from that document alone: the behaviour (commands, primitives,
//! state table, writes, errors) and a cycle simulation of its timing section
//! for `cycles`.
//!
//! [`run`] simulates the "Timing" section register by register, one loop
//! iteration a clock cycle (cycle 1 is the cycle after the doorbell edge;
//! the doorbell edge does the jump to the main buffer): the instruction
//! fetcher, the decoder with its pool of beats, the output queue, the
//! primitive unit with its own pool, and the end condition. Every register
//! is updated "at the edge" from values at the start of the cycle: each unit
//! decides from the state at the start of the cycle (the pools, the queue's
//! fill, the number of jobs the primitive unit holds), and pool writes of memory
//! answers and jumps are applied after the decoder has read the pool. The
//! behaviour (commands, primitives, table, writes, error) comes out of the
//! same simulation; the tests check it against a plain packet-by-packet
//! reading of the "Behaviour" section.
//!
//! Readings of the spec:
//!
//! 1. Second packet taking nothing (`t2 = 0`: a one-dword packet, a filler, a
//!    `WRITE_DATA` header): it does not become the current packet (`r` stays
//!    0); it is met again in lane 0 with `r = 0` the next cycle, where its
//!    header is checked again (with the same result) and it is handled as a
//!    first packet starting in lane 0.
//! 2. A first packet that raises an error (`state_range` when its `p0` is
//!    taken, `field`, `prim_range`, the `WRITE_DATA` `p2` check) ends the
//!    cycle: no second packet is looked at, so the cause reported is always
//!    the first offending packet's.
//! 3. After a `WRITE_DATA`'s last data dword (the first packet ends with
//!    `e = r = 1`), the second-packet rule still applies: a header in lane 1
//!    is checked (an error in it is raised in that cycle, the `WRITE_DATA`
//!    still commits), but it takes nothing since `t <= 1`.
//! 4. A `WRITE_DATA` header in lane 0 is checked (and an error raised) in
//!    every cycle it is there, whether or not its fence (queue empty, no
//!    primitive job at the start of the cycle) holds; the fence only decides
//!    whether the header is taken.
//! 5. The window `A = min(F, held*F - pos, left)` counts `held*F - pos` as 0
//!    when it is negative (after a jump to an address that is not
//!    beat-aligned, before the first beat is in the pool).
//! 6. A jump also sets `daddr = A` and clears the current packet (`r = 0`).
//!    A memory answer arriving in the jump's own cycle (no longer in flight
//!    after the edge, so not counted in `drop`) is discarded with the emptied
//!    pool.
//! 7. (Settled in the spec: `fbeats = 0` for an empty buffer, `S = 0`, at
//!    any address; before, an unaligned empty buffer fetched a useless beat,
//!    which could still be requested after the run had ended.)
//! 8. Case 1 (queue full at the start of the cycle; in compute mode also a
//!    `DISPATCH_DIRECT` in the queue at the start of the cycle, reading 26)
//!    comes before the buffer end: a buffer end or return waits while the
//!    output queue is full (or holds a dispatch).
//! 9. Finishing (buffer end with an empty stack) does not clear `fetching`;
//!    only an error does (only the `S = 0` case of reading 7 can leave
//!    beats to request then).
//! 10. The level of the current buffer is the depth of the return stack: the
//!     header check `nesting` fails when the stack holds `D` entries.
//! 11. The second packet's `overrun` check counts the buffer's dwords from its
//!     own header on (`left - e`).
//! 12. A draw that must wait for the primitive unit (it holds `prim_jobs`
//!     jobs at the start of the cycle) takes nothing in the cycle (`t = 0`):
//!     no second packet either. A draw with `m = 0` never waits and hands no
//!     job. At most one packet commits a cycle, so the unit never holds more
//!     than `prim_jobs` jobs.
//! 13. The primitive unit: a request in a cycle uses `pcredits` at the start
//!     of the cycle (one counter for all jobs, `prim_beats` at the doorbell
//!     only); the beat popped with an index (the index whose bytes end the
//!     beat, or the job's last) gives its credit back at that edge. The
//!     request side and the index side each pick their job at the start of
//!     the cycle: a job held from cycle c may request in c while an older
//!     job sends; in the cycle after a job's last request the next held job
//!     (if any) requests; in the cycle a job sends its last index the next
//!     job sends nothing, even if its beat is in the pool. An index never
//!     straddles two beats (`b` is a multiple of `s`), so the beat holding
//!     the next index is in the pool iff the job has a beat in it.
//!     The instruction and primitive read ports are answered independently,
//!     each at `max(c + L, its previous answer + 1)`; the primitive read
//!     port's answers are shared by all jobs, in request order.
//! 14. `ERR_ADDR` is the offending packet's header byte address whichever
//!     dword the check needed (`state_range`, `field`, `prim_range` too).
//! 15. `irq` is computed with `IRQ_STATUS` 0 before the run: the run's
//!     done or error bit, and'ed with `irq_enable` (only bits [1:0] count).
//! 16. Input (the spec now says so): `cmd_base` and `cmd_size` are required;
//!     `prim_base`, `prim_size`, `state`, `state_ptr` and `irq_enable` are
//!     optional; `memory` and `mem_latency` are required. A memory run's dword `i` is at `(addr + 4i) mod 2^32`
//!     (a run may wrap), and runs overlap modulo 2^32.
//! 17. The spec's example had a `NOP` header with `n = 7` in an 8-byte
//!     buffer (an `overrun`); the spec now has a `NOP` with `n = 1`.
//! 18. Render state in order: a state reader's `state` is taken from the
//!     table when it commits (no write happens in its commit cycle, which is
//!     held, nor while it is in the output queue); the model checks, in
//!     every cycle a reader is presented, that the table still equals it.
//! 19. `"pipeline"`: both `stall` and `seed` are required in the object
//!     (the spec gives no default for either inside it); `floor(p * 2^64)`
//!     is taken of the JSON number as an f64 (exactly: a power-of-two scale),
//!     so `p = 1` gives 2^64 and `cmd_ready` is never 1. The draw of the
//!     run's last busy cycle changes nothing and is not made. `"kerr"`
//!     (compute mode) is optional: reading 28.
//! 20. The state hold's "first packet is a state reader that commits in
//!     this cycle" only matters for the second packet; a `SET_CONTEXT_REG`
//!     that is the current packet (partly taken) in a held cycle takes
//!     nothing too (it cannot happen: a reader after it commits only after
//!     it, and one before it holds it before it starts).
//! 21. Compute mode (`compute = true`, spec 3c9b374): the 23 compute
//!     registers are 0 at the doorbell; `SET_SH_REG` is timed exactly as
//!     `SET_CONTEXT_REG` (range checked when `p0` is taken, `sh_range` if
//!     any of `p0 .. p0 + n - 2` (exact) is not a compute register's
//!     offset, which for a consecutive range is "inside one run"; values
//!     written at the edge of the cycle they are taken; the state hold).
//!     A dispatch's end checks read the compute registers at the start of
//!     its ending cycle, which is its snapshot (no write at its commit's
//!     edge: the cycle is held); the model checks in every cycle a dispatch
//!     is presented that `sh_o` (the registers) still equals it.
//! 22. A draw in compute mode raises `graphics` in the cycle it ends,
//!     before the job-slot wait (which it never meets: no job is ever
//!     handed to the primitive unit); `INDEX_TYPE` still sets the index
//!     size, which no draw then uses.
//! 23. A record holds `p0..p3` with `compute = false` (`p4`, `p5` are 0 in
//!     `Record::p` even when the packet has them) and `p0..p5` with
//!     `compute = true`; `"payload"` and trace lists follow (4 or 6).
//! 24. Trace and disassembler text of `RELEASE_MEM` does not print `p3`
//!     (0 in every command; a packet with `p3 != 0` disassembles to
//!     `DWORD`s, as its line cannot give it back); `control` is `p1 &
//!     0x18FFFFFF`; `reg`'s byte offset prints in lower-case hex, like the
//!     other hex fields; the assembler takes `reg` as a name or any number
//!     (decimal or hex) from 0xB000 to 0xBFFC, a multiple of 4.
//! 25. `x`, `y`, `z` "above 2^16" is `> 65536` (65536 itself passes that
//!     check); the three per-dimension checks come before the product.
//! 26. The dispatch barrier (compute mode only, spec 54ba527): the
//!     decoder's case 1 also holds in a cycle in which the output queue
//!     holds a `DISPATCH_DIRECT` at the start of the cycle (the command
//!     leaving in that cycle counts as held). Then nothing at all: no
//!     header is checked (a `WRITE_DATA` header's included), no buffer end
//!     or return is handled, `pos`, `left`, the current packet and the
//!     registers stay; the fetcher goes on (requests while it has credits,
//!     answers into the pool). As nothing commits behind a dispatch, a
//!     dispatch in the queue is its youngest entry, and the queue is empty
//!     once it has left. A `DISPATCH_DIRECT` that commits as the first
//!     packet has no second packet: lane `e` is neither checked nor taken
//!     (`t = e`), so an error in the header after it is raised only once
//!     the dispatch has left.
//! 27. `kerr_i` (compute mode only): `kernel` is raised, with the
//!     dispatch's header address, at the edge of the cycle in which a
//!     `DISPATCH_DIRECT` leaves (`cmd_valid` and `cmd_ready`) while its id
//!     as presented on `cmd_id_o` (modulo `2^id_bits`) equals a listed
//!     `"kerr"` id; a listed id of a presented non-dispatch, or of a
//!     dispatch that does not leave in that cycle, does nothing. Like
//!     every error it stops the decoder from the next cycle on and clears
//!     `fetching` at that edge (no request is issued from the next cycle
//!     on; the end still waits for the requests in flight). The decoder
//!     raises nothing in that cycle (reading 26: it does nothing), so
//!     there is never a second error. The dispatch stays a command (it
//!     was committed, traced and counted at its commit).
//! 28. Input `"pipeline"."kerr"`: a JSON list of integers from 0 to
//!     65535, kept in input order (duplicates allowed); with `compute =
//!     false` the key is refused whatever its value (an empty list too).
//!     Text form: `kerr=I,J` on the `.pipeline` line, numbers as in other
//!     lists (decimal or `0x` hex, below 2^32; the JSON reader checks
//!     `<= 65535` and the mode); like `stall` and `seed` it is accepted in
//!     any position on the line (the spec shows it after `seed=S`).
//!
//! Files: `packet.rs` (the header checks and the current packet),
//! `timing.rs` (the unit's registers, the fetcher and the cycle loop),
//! `decoder.rs` (the decoder's cycle and a packet's commit), `prim.rs` (the
//! primitive unit's cycle), `io.rs` (input and output files), `pm4.rs` (the
//! assembler text); here, the types.

mod decoder;
mod io;
mod packet;
pub mod pm4;
mod prim;
mod timing;
#[cfg(test)]
mod tests;

pub use io::{output_json, parse_input};
pub use pm4::Record;
pub use timing::run;

use crate::mem::Memory;
use crate::rng::Rng;
use gpurtl_params::cmdproc::Cause;

/// The memory image of dword runs (a run's dword `i` at byte
/// `(addr + 4i) mod 2^32`, little-endian), zero elsewhere.
pub fn memory_image(runs: &[(u32, Vec<u32>)]) -> Memory {
    let mut m = Memory::new();
    for (a, d) in runs {
        for (i, v) in d.iter().enumerate() {
            m.write((a.wrapping_add((i as u32).wrapping_mul(4)) & !3) as u64, &v.to_le_bytes());
        }
    }
    m
}

/// The dword of `m` holding byte `byte`.
pub fn dword(m: &Memory, byte: u32) -> u32 {
    let mut b = [0u8; 4];
    m.read((byte & !3) as u64, &mut b);
    u32::from_le_bytes(b)
}

/// The registers a run is started with (docs/cmdproc.md, "gpurtl run cmdproc").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registers {
    pub cmd_base: u32,
    pub cmd_size: u32,
    pub prim_base: u32,
    pub prim_size: u32,
    /// `STATE_INIT[i]`; at most `state_regs` values, the rest are 0.
    pub state: Vec<u32>,
    pub state_ptr: u32,
    pub irq_enable: u32,
}

/// Back-pressure on the pipeline port (docs/cmdproc.md, "`gpurtl run
/// cmdproc`", `"pipeline"`): `cmd_ready` is 0 in a busy cycle with
/// probability `stall`, from the draws of SplitMix64 seeded with `seed`;
/// with `compute = true`, `kerr_i` is 1 in every cycle in which the
/// presented command's id is in `kerr`. The default is no stall and no
/// `kerr` id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pipeline {
    /// `p`, from 0 to 1 (never NaN: the input refuses it).
    pub stall: f64,
    /// `s`.
    pub seed: u64,
    /// `"kerr"` (compute mode only): command ids, in input order
    /// (duplicates allowed and harmless); a `DISPATCH_DIRECT` with one of
    /// them that leaves the output queue raises `kernel`. Ignored with
    /// `compute = false` (the input refuses the key there).
    pub kerr: Vec<u16>,
}

// `stall` is never NaN (the input reader refuses it, `PipelineStall::new`
// asserts it), so equality is an equivalence.
impl Eq for Pipeline {}

impl Pipeline {
    /// The generator of `cmd_ready` for one run.
    pub fn stalls(&self) -> PipelineStall {
        PipelineStall::new(self.stall, self.seed)
    }
    /// `kerr_i` while the command with id `id` (as on `cmd_id_o`) is
    /// presented.
    pub fn kerr_i(&self, id: u32) -> bool {
        self.kerr.iter().any(|&k| k as u32 == id)
    }
}

/// `cmd_ready` busy cycle by busy cycle: call [`PipelineStall::ready`] once
/// per busy cycle, the first call for busy cycle 1 (the cycle after the
/// doorbell's handshake), whether or not a command is presented. Draw `k`
/// is the `k`-th SplitMix64 draw `d_k` from `seed` ([`Rng`]); `cmd_ready`
/// is 0 when `d_k < floor(stall * 2^64)`. `stall = 1` is never ready.
#[derive(Clone, Debug)]
pub struct PipelineStall {
    rng: Rng,
    /// `floor(stall * 2^64)`, 0 ..= 2^64.
    threshold: u128,
}

impl PipelineStall {
    /// `stall` from 0 to 1 (panics otherwise: input files are checked
    /// before).
    pub fn new(stall: f64, seed: u64) -> PipelineStall {
        assert!((0.0..=1.0).contains(&stall), "PipelineStall: stall {stall} is not from 0 to 1");
        // Scaling by 2^64 is exact in f64; `as` truncates toward zero,
        // which is the floor of a value >= 0.
        let threshold = (stall * 18_446_744_073_709_551_616.0).floor() as u128;
        PipelineStall { rng: Rng::new(seed), threshold }
    }
    /// `floor(stall * 2^64)`.
    pub fn threshold(&self) -> u128 {
        self.threshold
    }
    /// `cmd_ready` in the next busy cycle (one draw).
    pub fn ready(&mut self) -> bool {
        (self.rng.next_u64() as u128) >= self.threshold
    }
}

/// One run: registers, memory contents (dword runs at byte addresses,
/// multiples of 4, not overlapping; the rest reads as zero), memory latency,
/// the pipeline port's back-pressure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub registers: Registers,
    pub memory: Vec<(u32, Vec<u32>)>,
    pub mem_latency: u32,
    /// `"pipeline"` (default: no stalls).
    pub pipeline: Pipeline,
}

/// A command as it left the pipeline port, with its primitives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub record: Record,
    pub prims: Vec<u32>,
    /// A state reader's state (`DRAW_INDEX_AUTO`, `DRAW_INDEX_OFFSET_2`,
    /// `DISPATCH_DIRECT`): the whole table, `state_regs` values, as the
    /// `SET_CONTEXT_REG` packets before it left it; `None` for other
    /// commands.
    pub state: Option<Vec<u32>>,
    /// With `compute = true`, a `DISPATCH_DIRECT`'s snapshot: the 23
    /// compute registers (`params::cmdproc::sh` order) as the `SET_SH_REG`
    /// packets before it left them (`sh_o` while it is presented); `None`
    /// for other commands and with `compute = false`.
    pub sh: Option<Vec<u32>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Done,
    Error,
}

/// What a run gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub commands: Vec<Command>,
    /// `state_regs` values after the run.
    pub state_table: Vec<u32>,
    /// With `compute = true`, the 23 compute registers after the run;
    /// `None` with `compute = false`.
    pub sh_table: Option<Vec<u32>>,
    pub status: Status,
    /// The cause and the offending packet's header byte address.
    pub error: Option<(Cause, u32)>,
    /// The interrupt line after the run.
    pub irq: bool,
    /// One entry per `WRITE_DATA`: the first byte address and the dwords.
    pub memory_writes: Vec<(u32, Vec<u32>)>,
    /// One line per command (`pm4::trace_line`).
    pub trace: Vec<String>,
    /// `BUSY_CYCLES` at the end of the run.
    pub cycles: u64,
}
