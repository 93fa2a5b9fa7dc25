//! Golden model of the banked scratchpad RAM, written from
//! `docs/scratchpad.md` only (with `docs/memory.md` for the port rules).
//!
//! Results (`reference.rs`): phase by phase, every read returns its word as
//! the earlier phases left it (the input rules keep a phase from reading a
//! word it writes, and from reading a byte no earlier phase wrote), then
//! every write of the phase writes its bytes with a strobe set, port by
//! port in order (two ports never write one word in a phase).
//!
//! Cycles and counters (`timing.rs`): the per-bank arbitration of the spec
//! played cycle by cycle with the run driver's phases (each port offers its
//! requests in order, each from the cycle after the previous one is taken;
//! every `rsp_ready` high):
//!
//! ```text
//! word n = addr / DB: bank n mod B, row n div B
//! per bank b, in cycle c:
//!   write: the first write port in wp_b+1, ... with a request for bank b
//!          and a free slot; at edge c the row is written, wp_b = k
//!   read:  the first read port in rp_b+1, ... with a request for bank b, a
//!          free slot, and a row other than the granted write's; at edge c
//!          the row is read (as the earlier edges left it), rp_b = k
//! a request taken at c: its response offered from c + 1 (taken then)
//! phase: from its first cycle to the edge of its last response transfer;
//!        the next begins in the cycle after (the same cycle if empty)
//! conflict_waits: cycles x ports offering a request, slot free, not granted
//! ```
//!
//! `run` returns the cycle simulation's results: on every workload the
//! input rules allow they equal the reference's (the tests check it), and
//! it also answers a workload outside them, where a phase reads a word it
//! writes and the arbitration decides what the read sees (what
//! [`random_workload`] makes with `hazards`, to reach the read held for a
//! write of its row).
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

use gpurtl_params::scratchpad::ScratchpadParams;
use num_bigint::BigUint;

/// One write request: the word at `addr` (a multiple of `DB`), bytes `i`
/// of `data` (little-endian, `D` bits) whose bit `i` of `strb` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub addr: u64,
    pub data: BigUint,
    pub strb: u32,
}

/// One phase: per read port (`read_ports` lists) the byte addresses it
/// reads, per write port (`write_ports` lists) its writes, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Phase {
    pub reads: Vec<Vec<u64>>,
    pub writes: Vec<Vec<Write>>,
}

/// A run: its phases, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    pub phases: Vec<Phase>,
}

/// What one phase gives: per read port the words read, in order; per write
/// port the number of responses; its cycles (0 for an empty phase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseOutcome {
    pub reads: Vec<Vec<BigUint>>,
    pub writes: Vec<u64>,
    pub cycles: u64,
}

/// Requests taken, and cycles summed over ports in which a port offered a
/// request with its slot free and was not granted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub reads: u64,
    pub writes: u64,
    pub conflict_waits: u64,
}

/// What a run gives: each phase's outcome, the sum of their cycles, the
/// counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub phases: Vec<PhaseOutcome>,
    pub cycles: u64,
    pub counters: Counters,
}

/// Bytes a word.
fn db(p: &ScratchpadParams) -> u64 {
    p.data_bytes() as u64
}

/// A word as `DB` little-endian bytes (`v` fits `D` bits).
fn word_bytes(p: &ScratchpadParams, v: &BigUint) -> Vec<u8> {
    let mut b = v.to_bytes_le();
    b.resize(db(p) as usize, 0);
    b
}

/// A word's byte strobes.
fn strobes(p: &ScratchpadParams, strb: u32) -> Vec<bool> {
    (0..db(p)).map(|i| strb >> i & 1 == 1).collect()
}

/// The read list of port `k` in `ph` (empty if not given).
fn reads_of(ph: &Phase, k: usize) -> &[u64] {
    ph.reads.get(k).map_or(&[], |v| &v[..])
}

/// The write list of port `k` in `ph` (empty if not given).
fn writes_of(ph: &Phase, k: usize) -> &[Write] {
    ph.writes.get(k).map_or(&[], |v| &v[..])
}

/// The run: results, cycles and counters from the cycle simulation of
/// docs/scratchpad.md "Timing" and its run driver. `p` must be valid and
/// every address a multiple of `DB` below `2^A`.
pub fn run(p: &ScratchpadParams, w: &Workload) -> Outcome {
    timing::simulate(p, w).0
}
