//! The results without timing, from docs/scratchpad.md "Behaviour" and the
//! input rules: a phase's reads see the memory as the earlier phases left
//! it (the phase writes none of the words it reads), then its writes land
//! with their strobes.

use super::{db, reads_of, strobes, word_bytes, writes_of, Workload};
use crate::mem::Memory;
use gpurtl_params::scratchpad::ScratchpadParams;
use num_bigint::BigUint;

/// Per phase: per read port its words, per write port its responses; and
/// the counts of reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Results {
    pub phases: Vec<(Vec<Vec<BigUint>>, Vec<u64>)>,
    pub reads: u64,
    pub writes: u64,
}

pub(super) fn results(p: &ScratchpadParams, w: &Workload) -> Results {
    let db = db(p) as usize;
    let mut mem = Memory::new();
    let (mut nreads, mut nwrites) = (0, 0);
    let mut phases = Vec::new();
    for ph in &w.phases {
        let reads: Vec<Vec<BigUint>> = (0..p.read_ports as usize)
            .map(|k| reads_of(ph, k).iter().map(|&a| BigUint::from_bytes_le(&mem.bytes(a, db))).collect())
            .collect();
        let mut writes = vec![0u64; p.write_ports as usize];
        for (k, n) in writes.iter_mut().enumerate() {
            for x in writes_of(ph, k) {
                mem.write_strobed(x.addr, &word_bytes(p, &x.data), &strobes(p, x.strb));
                *n += 1;
            }
        }
        nreads += reads.iter().map(|l| l.len() as u64).sum::<u64>();
        nwrites += writes.iter().sum::<u64>();
        phases.push((reads, writes));
    }
    Results { phases, reads: nreads, writes: nwrites }
}
