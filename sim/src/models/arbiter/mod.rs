//! Golden model of the memory arbiter and its AXI4 bridge, written from
//! `docs/arbiter.md` only (with `docs/memory.md` for the port rules).
//!
//! Results (`reference.rs`): every read beat is the bytes at its address in
//! the initial memory (the input rules keep every written byte range apart
//! from every read's, so no read can see a write); the memory after the run
//! is the initial memory with every burst written, beat `k` at `addr +
//! k*DB`, bytes with their strobe set; each write source gets one response a
//! burst.
//!
//! Cycles and counters (`timing.rs`): the read arbiter, the write arbiter,
//! the bridge (`out = axi4`) and the deterministic testbench memory of the
//! spec played register by register, one loop iteration a clock cycle, with
//! the run driver's sources (each request offered from the cycle after the
//! previous one is taken, every `rsp_ready` high):
//!
//! ```text
//! read arbiter   load = !q.valid || mem_rd_req_ready; grant the first source
//!                in p+1, p+2, ... with valid && len+1 <= cred_k
//! write arbiter  loadw = !qw.valid || mem_wr_req_ready; a locked source
//!                passes its beats; else grant the first in pw+1, ... with
//!                valid && wcred_k > 0, lock until its last beat
//! bridge         mem_rd_req_ready = (!AR || arready) && !P2; a request of n
//!                beats at a with n > beats4k(a) = (4096 - a mod 4096)/DB is
//!                two AR pieces; a write beat is taken when W (and, on a
//!                piece's first beat, AW) is free; the B of a split burst's
//!                first piece is dropped
//! memory         ARREADY = AWREADY = WREADY = 1; R of a burst from
//!                max(t_AR + L, e + 1), one beat a cycle; B from
//!                max(t_AW, t_WLAST) + L, in AW order, one a cycle
//! cycles         last response transfer - first request transfer + 1
//! ```
//!
//! `run` returns the cycle simulation's results (what the exact-cycle
//! testbench compares); the tests check that they equal the reference's on
//! every workload the input rules allow.
//!
//! Files: `reference.rs` (results without timing), `timing.rs` (the cycle
//! loop), `io.rs` (input and output files, random workloads); here, the
//! types and `run`.

mod io;
// The oracle the tests hold the cycle simulation's results to.
#[cfg(test)]
mod reference;
mod timing;
#[cfg(test)]
mod tests;

pub use io::{output_json, parse_input, random_workload};

use gpurtl_params::arbiter::ArbiterParams;
use num_bigint::BigUint;

/// A span of memory: `bytes[i]` at `addr + i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub addr: u64,
    pub bytes: Vec<u8>,
}

/// One request of a read source: `beats` beats (1..=max_burst) from `addr`
/// (a multiple of `DB`); on the port, `len = beats - 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    pub addr: u64,
    pub beats: u32,
}

/// One burst of a write source: beat `k` is `data[k]` (little-endian, `D`
/// bits) with byte strobes `strb[k]` (bit `i` writes byte `i`), written at
/// `addr + k*DB`. `data` and `strb` have the same length, 1..=max_burst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBurst {
    pub addr: u64,
    pub data: Vec<BigUint>,
    pub strb: Vec<BigUint>,
}

impl WriteBurst {
    pub fn beats(&self) -> u32 {
        self.data.len() as u32
    }
}

/// A run: the testbench memory's latency `L` and initial content (bytes not
/// covered read as zero), and each source's requests in order. `reads` has
/// one list per read source (`p.reads` lists), `writes` one per write source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub latency: u32,
    pub memory: Vec<Region>,
    pub reads: Vec<Vec<ReadRequest>>,
    pub writes: Vec<Vec<WriteBurst>>,
}

/// Requests and beats taken from the sources, and requests (read requests
/// and write bursts) the bridge split at a 4 KB boundary.
// spec: "how many requests the bridge split" is read as read requests and
// write bursts together; `read_beats` counts the beats of the requests
// taken (all of which are answered by the end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub read_requests: u64,
    pub read_beats: u64,
    pub write_bursts: u64,
    pub write_beats: u64,
    pub split_bursts: u64,
}

// spec: the output has one `reads` list and one `writes` count per source
// of the parameters (the example: `reads` = 2 gives two lists, one empty).
/// What a run gives: per read source every response beat in order, per
/// write source the number of write responses, per write burst (sources in
/// order, bursts in order) its whole byte range after the run, the cycles
/// and the counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub reads: Vec<Vec<BigUint>>,
    pub writes: Vec<u64>,
    pub memory: Vec<Region>,
    pub cycles: u64,
    pub counters: Counters,
}

/// Bytes a beat.
fn db(p: &ArbiterParams) -> u64 {
    p.data_bytes() as u64
}

/// A beat as `DB` little-endian bytes (`v` fits `D` bits).
fn beat_bytes(p: &ArbiterParams, v: &BigUint) -> Vec<u8> {
    let mut b = v.to_bytes_le();
    b.resize(db(p) as usize, 0);
    b
}

/// A beat's byte strobes.
fn strobes(p: &ArbiterParams, strb: &BigUint) -> Vec<bool> {
    (0..db(p)).map(|i| strb.bit(i)).collect()
}

/// The run: results, cycles and counters from the cycle simulation of
/// docs/arbiter.md "Timing" with its testbench memory and run driver. `p`
/// must be valid and `w` as [`parse_input`] or [`random_workload`] give it.
pub fn run(p: &ArbiterParams, w: &Workload) -> Outcome {
    timing::simulate(p, w).0
}
