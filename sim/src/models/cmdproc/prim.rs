//! The primitive unit in one cycle: its jobs' beat requests, the indices
//! of the oldest job, and the answers into its pool.

use super::timing::Sim;

/// A job the primitive unit holds.
pub(super) struct Job {
    /// Its place in commit order among the run's jobs (tags its answers).
    pub(super) seq: u64,
    /// Index in the command list (for the primitives).
    pub(super) cmd: usize,
    /// First byte `b`, `b mod BB`, count `m`, size `s`.
    pub(super) b: u32,
    pub(super) boff: u64,
    pub(super) m: u64,
    pub(super) s: u32,
    /// Its beats `B`, and those requested so far.
    pub(super) beats: u64,
    pub(super) requested: u64,
    /// The next index to leave.
    pub(super) next: u64,
    /// Its beats in the primitive pool.
    pub(super) held: u32,
}

impl<'a> Sim<'a> {
    /// The primitive unit in cycle `c` (the jobs it held at the start).
    pub(super) fn prim_cycle(&mut self, c: u64) {
        // Requests: the oldest held job whose beats are not all requested,
        // one beat a cycle with pcredits > 0 at the start of the cycle.
        if self.pcredits > 0 {
            if let Some(j) = self.jobs.iter_mut().find(|j| j.requested < j.beats) {
                let at = (c + self.lat).max(self.last_panswer + 1);
                self.last_panswer = at;
                self.panswers.push_back((at, j.seq));
                j.requested += 1;
                self.pcredits -= 1;
            }
        }
        // Indices: the oldest held job, one a cycle while the beat holding
        // its next index is in the pool (its beats before that one are
        // popped, so: while it has a beat in the pool at the start).
        let mut ended = false;
        if let Some(j) = self.jobs.front_mut() {
            if j.held > 0 {
                let s = j.s as u64;
                let addr = j.b.wrapping_add((j.next * s) as u32);
                let w = super::dword(&self.mem, addr);
                let v = if j.s == 2 { (w >> (16 * ((addr >> 1) & 1))) & 0xFFFF } else { w };
                self.commands[j.cmd].prims.push(v);
                j.next += 1;
                ended = j.next == j.m;
                // The oldest beat is popped with its last index of the job
                // or the job's last index: +1 at this edge.
                if ended || (j.boff + j.next * s).is_multiple_of(self.bb as u64) {
                    j.held -= 1;
                    self.pcredits += 1;
                }
            }
        }
        // Answers, in order, into the pool: visible from the next cycle.
        if self.panswers.front().map(|x| x.0) == Some(c) {
            let (_, seq) = self.panswers.pop_front().unwrap();
            let first = self.jobs.front().expect("an answer for a held job").seq;
            self.jobs[(seq - first) as usize].held += 1;
        }
        // The job ends with its last index: the next one sends from the
        // next cycle.
        if ended {
            let j = self.jobs.pop_front().unwrap();
            // Each of its B beats answered and popped once.
            assert!(j.held == 0 && j.requested == j.beats, "cmdproc model: a job ended with beats left");
        }
    }
}
