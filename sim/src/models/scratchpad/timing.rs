//! The cycle simulation: docs/scratchpad.md "Timing" and "The run driver".
//!
//! Each iteration of the inner loop is one clock cycle `c`: every decision
//! of the cycle is made from the registers as they are at its start, then
//! every register takes its value at edge `c`. The banks hold rows of `DB`
//! bytes; a row never written reads as zero (the spec leaves it undefined).

use super::{db, reads_of, strobes, word_bytes, writes_of, Counters, Outcome, PhaseOutcome, Workload};
use gpurtl_params::scratchpad::ScratchpadParams;
use num_bigint::BigUint;
use std::collections::BTreeMap;

/// Edges of one phase's events, for the hand-worked tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PhaseTrace {
    /// The phase's first cycle, and the edge of its last response transfer
    /// (`None` for an empty phase).
    pub start: u64,
    pub end: Option<u64>,
    /// Per read port, per request: the edge it was taken; the edge its
    /// response was taken.
    pub rd_grant: Vec<Vec<u64>>,
    pub rd_rsp: Vec<Vec<u64>>,
    /// The same per write port.
    pub wr_grant: Vec<Vec<u64>>,
    pub wr_rsp: Vec<Vec<u64>>,
}

/// Cycles summed over ports in which a port was not granted: for a bank
/// another port won, and (read ports) for the write of its row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Trace {
    pub phases: Vec<PhaseTrace>,
    pub lost_to_port: u64,
    pub lost_to_write: u64,
}

/// Bank and row of the word at byte address `addr`.
fn place(p: &ScratchpadParams, addr: u64) -> (usize, u64) {
    let n = addr / db(p);
    ((n % p.banks as u64) as usize, n / p.banks as u64)
}

/// Play the run; returns its outcome and the edges of its events.
pub(super) fn simulate(p: &ScratchpadParams, w: &Workload) -> (Outcome, Trace) {
    let (nb, nr, nw) = (p.banks as usize, p.read_ports as usize, p.write_ports as usize);
    let dbu = db(p) as usize;
    // Bank b's rows.
    let mut banks: Vec<BTreeMap<u64, Vec<u8>>> = vec![BTreeMap::new(); nb];
    let mut wp = vec![nw - 1; nb];
    let mut rp = vec![nr - 1; nb];
    // Response slots: a read port's holds the word read.
    let mut rslot: Vec<Option<Vec<u8>>> = vec![None; nr];
    let mut wslot = vec![false; nw];
    // The run driver takes every response as it is offered.
    let rsp_ready = true;

    let mut counters = Counters::default();
    let mut tr = Trace::default();
    let mut phases = Vec::new();
    let mut c: u64 = 0;
    for ph in &w.phases {
        if crate::budget::over(c) {
            break;
        }
        let reads: Vec<&[u64]> = (0..nr).map(|k| reads_of(ph, k)).collect();
        let writes: Vec<&[super::Write]> = (0..nw).map(|k| writes_of(ph, k)).collect();
        let total = reads.iter().map(|l| l.len()).sum::<usize>() + writes.iter().map(|l| l.len()).sum::<usize>();
        let mut po = PhaseOutcome { reads: vec![Vec::new(); nr], writes: vec![0; nw], cycles: 0 };
        let mut pt = PhaseTrace {
            start: c,
            end: None,
            rd_grant: vec![Vec::new(); nr],
            rd_rsp: vec![Vec::new(); nr],
            wr_grant: vec![Vec::new(); nw],
            wr_rsp: vec![Vec::new(); nw],
        };
        if total == 0 {
            // Empty: 0 cycles, the next phase begins in this same cycle.
            phases.push(po);
            tr.phases.push(pt);
            continue;
        }
        let start = c;
        let mut rn = vec![0usize; nr];
        let mut wn = vec![0usize; nw];
        loop {
            if crate::budget::over(c) {
                break;
            }
            // Every request alone, one at a time, takes two cycles.
            assert!(c - start <= 2 * total as u64 + 2, "scratchpad model: no progress by cycle {c}");

            // ---- the cycle's decisions ----
            let rfree: Vec<bool> = rslot.iter().map(|s| s.is_none() || rsp_ready).collect();
            let wfree: Vec<bool> = wslot.iter().map(|&s| !s || rsp_ready).collect();
            let mut rgrant = vec![false; nr];
            let mut wgrant = vec![false; nw];
            let mut held_by_write = vec![false; nr];
            for b in 0..nb {
                // Writes.
                let mut wrow: Option<u64> = None;
                for i in 1..=nw {
                    let k = (wp[b] + i) % nw;
                    if let Some(x) = writes[k].get(wn[k]) {
                        let (bank, row) = place(p, x.addr);
                        if bank == b && wfree[k] {
                            wgrant[k] = true;
                            wrow = Some(row);
                            break;
                        }
                    }
                }
                for k in 0..nr {
                    if let Some(&a) = reads[k].get(rn[k]) {
                        held_by_write[k] |= wrow.is_some_and(|r| place(p, a) == (b, r));
                    }
                }
                // Reads.
                for i in 1..=nr {
                    let k = (rp[b] + i) % nr;
                    if let Some(&a) = reads[k].get(rn[k]) {
                        let (bank, row) = place(p, a);
                        if bank == b && rfree[k] && wrow != Some(row) {
                            rgrant[k] = true;
                            break;
                        }
                    }
                }
            }
            for k in 0..nr {
                if rn[k] < reads[k].len() && rfree[k] && !rgrant[k] {
                    counters.conflict_waits += 1;
                    if held_by_write[k] {
                        tr.lost_to_write += 1;
                    } else {
                        tr.lost_to_port += 1;
                    }
                }
            }
            // spec: "summed over ports" is read as over read and write ports.
            for k in 0..nw {
                if wn[k] < writes[k].len() && wfree[k] && !wgrant[k] {
                    counters.conflict_waits += 1;
                    tr.lost_to_port += 1;
                }
            }

            // ---- edge c ----
            // Responses taken.
            for (k, slot) in rslot.iter_mut().enumerate() {
                if rsp_ready {
                    if let Some(d) = slot.take() {
                        po.reads[k].push(BigUint::from_bytes_le(&d));
                        pt.rd_rsp[k].push(c);
                    }
                }
            }
            for (k, slot) in wslot.iter_mut().enumerate() {
                if rsp_ready && *slot {
                    *slot = false;
                    po.writes[k] += 1;
                    pt.wr_rsp[k].push(c);
                }
            }
            // Reads: the row as the earlier edges left it.
            for k in 0..nr {
                if rgrant[k] {
                    let (b, row) = place(p, reads[k][rn[k]]);
                    // spec: a row never written is undefined; the model
                    // reads zero (no valid input reads one).
                    let word = banks[b].get(&row).cloned().unwrap_or_else(|| vec![0; dbu]);
                    rslot[k] = Some(word);
                    rp[b] = k;
                    rn[k] += 1;
                    counters.reads += 1;
                    pt.rd_grant[k].push(c);
                }
            }
            // Writes.
            for k in 0..nw {
                if wgrant[k] {
                    let x = &writes[k][wn[k]];
                    let (b, row) = place(p, x.addr);
                    let word = banks[b].entry(row).or_insert_with(|| vec![0; dbu]);
                    for (i, (&byte, &s)) in word_bytes(p, &x.data).iter().zip(&strobes(p, x.strb)).enumerate() {
                        if s {
                            word[i] = byte;
                        }
                    }
                    wslot[k] = true;
                    wp[b] = k;
                    wn[k] += 1;
                    counters.writes += 1;
                    pt.wr_grant[k].push(c);
                }
            }

            let all_taken = (0..nr).all(|k| rn[k] == reads[k].len()) && (0..nw).all(|k| wn[k] == writes[k].len());
            let all_answered = rslot.iter().all(|s| s.is_none()) && wslot.iter().all(|&s| !s);
            c += 1;
            if all_taken && all_answered {
                // This edge took the phase's last response.
                po.cycles = c - start;
                pt.end = Some(c - 1);
                break;
            }
        }
        phases.push(po);
        tr.phases.push(pt);
    }
    let cycles = phases.iter().map(|ph| ph.cycles).sum();
    crate::budget::spend(cycles);
    (Outcome { phases, cycles, counters }, tr)
}
