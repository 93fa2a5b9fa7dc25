//! The results without timing, from docs/arbiter.md "Behaviour" and the
//! input rules: every read beat is the initial memory at its address (no
//! written byte range meets a read's), every burst is written with its
//! strobes, one response a burst. The counters are timing-free too: requests
//! and beats are counted as given, and a request is split when it has more
//! beats than are left to its 4 KB boundary (`out = axi4` only).

use super::{beat_bytes, db, strobes, Counters, Region, Workload};
use crate::mem::Memory;
use gpurtl_params::arbiter::{ArbiterParams, Out};
use num_bigint::BigUint;

/// What the reference gives: per read source its beats, per write source
/// its responses, per burst its range after the run, the counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Results {
    pub reads: Vec<Vec<BigUint>>,
    pub writes: Vec<u64>,
    pub memory: Vec<Region>,
    pub counters: Counters,
}

pub(super) fn results(p: &ArbiterParams, w: &Workload) -> Results {
    let db = db(p);
    let mut before = Memory::new();
    for r in &w.memory {
        before.load(r.addr, &r.bytes);
    }
    let mut counters = Counters::default();
    let split = |addr: u64, beats: u64| p.out == Out::Axi4 && beats > (4096 - addr % 4096) / db;

    let mut reads = vec![Vec::new(); p.reads as usize];
    for (k, list) in w.reads.iter().enumerate() {
        for r in list {
            counters.read_requests += 1;
            counters.read_beats += r.beats as u64;
            if split(r.addr, r.beats as u64) {
                counters.split_bursts += 1;
            }
            for j in 0..r.beats as u64 {
                let bytes = before.bytes(r.addr + j * db, db as usize);
                reads[k].push(BigUint::from_bytes_le(&bytes));
            }
        }
    }

    let mut after = before.clone();
    let mut writes = vec![0u64; p.writes as usize];
    for (k, list) in w.writes.iter().enumerate() {
        for b in list {
            counters.write_bursts += 1;
            counters.write_beats += b.data.len() as u64;
            if split(b.addr, b.data.len() as u64) {
                counters.split_bursts += 1;
            }
            for (j, (d, s)) in b.data.iter().zip(&b.strb).enumerate() {
                after.write_strobed(b.addr + j as u64 * db, &beat_bytes(p, d), &strobes(p, s));
            }
            writes[k] += 1;
        }
    }
    let memory = w
        .writes
        .iter()
        .flatten()
        .map(|b| Region { addr: b.addr, bytes: after.bytes(b.addr, b.data.len() * db as usize) })
        .collect();
    Results { reads, writes, memory, counters }
}
