//! The cycle simulation: docs/arbiter.md "Timing", register by register.
//!
//! Each iteration of the loop is one clock cycle `c`: every decision of the
//! cycle is made from the registers as they are at its start (the values
//! after edge `c - 1`), then every register takes its value at edge `c`.

use super::{beat_bytes, db, strobes, Counters, Outcome, Region, Workload};
use gpurtl_params::arbiter::{ArbiterParams, Out};
use num_bigint::BigUint;
use std::collections::VecDeque;

/// Edges of the run's events, for the hand-worked tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Trace {
    /// Per read source, per request: the edge it was granted.
    pub rd_grant: Vec<Vec<u64>>,
    /// Per read source, per beat: the edge the source took it.
    pub rd_beat: Vec<Vec<u64>>,
    /// Per write source, per burst, per beat: the edge it was granted.
    pub wr_grant: Vec<Vec<Vec<u64>>>,
    /// Per write source, per burst: the edge the source took its response.
    pub wr_rsp: Vec<Vec<u64>>,
    /// Read requests leaving the arbiter (`mem_rd_req`, taken by the bridge
    /// or the native memory): (edge, addr, len, tag).
    pub rd_out: Vec<(u64, u64, u32, usize)>,
    /// Write beats leaving the arbiter (`mem_wr_req`): (edge, tag, last).
    pub wr_out: Vec<(u64, usize, bool)>,
    /// AXI transfers (`out = axi4`): AR and AW (edge, addr, len, id), W
    /// (edge, last), B (edge, id).
    pub ar: Vec<(u64, u64, u32, usize)>,
    pub aw: Vec<(u64, u64, u32, usize)>,
    pub w: Vec<(u64, bool)>,
    pub b: Vec<(u64, usize)>,
    /// Read beats taken from the memory (R or `mem_rd_rsp`): (edge, tag).
    pub r: Vec<(u64, usize)>,
    /// Cycles summed over sources in which a read source's request was held
    /// by its `read_buffer` cap, and a write source's first beat by its
    /// `write_outstanding` cap.
    pub rd_capped: u64,
    pub wr_capped: u64,
    /// Cycles in which every source (read and write) offered a request or
    /// beat.
    pub all_busy: u64,
}

/// The read arbiter's output request `q`.
#[derive(Clone, Debug)]
struct RdReq {
    addr: u64,
    len: u32,
    tag: usize,
}

/// The write arbiter's output beat `qw`.
#[derive(Clone, Debug)]
struct WrBeat {
    addr: u64,
    len: u32,
    tag: usize,
    data: Vec<u8>,
    strb: Vec<bool>,
    last: bool,
}

/// An AXI address (AR, AW, P2, a split write's second piece): len is
/// beats - 1.
#[derive(Clone, Debug)]
struct Piece {
    addr: u64,
    len: u32,
    id: usize,
}

/// The bridge's `W` register.
#[derive(Clone, Debug)]
struct WReg {
    data: Vec<u8>,
    strb: Vec<bool>,
    last: bool,
}

/// A read burst the memory has accepted: `sent` beats of it answered.
struct MemRd {
    addr: u64,
    len: u32,
    id: usize,
    t: u64,
    sent: u32,
}

/// A write burst the memory has accepted the address of: `got` beats of it
/// received.
struct MemWr {
    addr: u64,
    len: u32,
    id: usize,
    t_aw: u64,
    got: u32,
}

/// A write beat the memory has received (W, or a native beat).
struct MemW {
    data: Vec<u8>,
    strb: Vec<bool>,
    last: bool,
    t: u64,
}

/// The deterministic testbench memory (docs/arbiter.md "The testbench
/// memory"); with `out = native` its read and write request streams are
/// `mem_rd_req` and `mem_wr_req`.
struct Memory {
    l: u64,
    db: u64,
    bytes: crate::mem::Memory,
    /// Read bursts in AR order, not yet fully answered.
    rd: VecDeque<MemRd>,
    /// Write bursts in AW order whose beats have not all arrived.
    wr: VecDeque<MemWr>,
    /// Write beats not yet matched to a burst.
    w: VecDeque<MemW>,
    /// B responses in AW order: (id, first cycle it may be offered).
    b: VecDeque<(usize, u64)>,
    /// Native writes: a burst's first beat has been taken and not its last.
    native_open: bool,
}

impl Memory {
    /// The R beat offered in cycle `c`: (id, data).
    fn r_offer(&self, c: u64) -> Option<(usize, Vec<u8>)> {
        let f = self.rd.front()?;
        // The first beat from max(t + L, e + 1): e, the previous burst's last
        // R transfer, is an earlier edge, so e + 1 <= c always holds here.
        // Later beats follow one a cycle (RREADY is always high).
        if f.sent == 0 && c < f.t + self.l {
            return None;
        }
        Some((f.id, self.bytes.bytes(f.addr + f.sent as u64 * self.db, self.db as usize)))
    }

    /// The R beat of `r_offer` is taken.
    fn r_taken(&mut self) {
        let f = self.rd.front_mut().expect("an R beat was offered");
        f.sent += 1;
        if f.sent == f.len + 1 {
            self.rd.pop_front();
        }
    }

    /// The B offered in cycle `c`: its id.
    fn b_offer(&self, c: u64) -> Option<usize> {
        // From max(t_aw, t_wlast) + L, and after the previous B's transfer
        // (an earlier edge: one B a cycle, each taken when offered).
        self.b.front().filter(|&&(_, from)| c >= from).map(|&(id, _)| id)
    }

    /// Match received write beats to their bursts in AW order: write each
    /// beat's bytes, and queue the burst's B at its last beat.
    fn settle_writes(&mut self) {
        while !self.wr.is_empty() && !self.w.is_empty() {
            let beat = self.w.pop_front().unwrap();
            let bu = self.wr.front_mut().unwrap();
            let at = bu.addr + bu.got as u64 * self.db;
            self.bytes.write_strobed(at, &beat.data, &beat.strb);
            bu.got += 1;
            let last = bu.got == bu.len + 1;
            assert_eq!(beat.last, last, "WLAST exactly on the last beat of each AW burst");
            if last {
                let from = bu.t_aw.max(beat.t) + self.l;
                let id = bu.id;
                self.wr.pop_front();
                self.b.push_back((id, from));
            }
        }
    }
}

/// The bridge's write-side state for the burst whose beats it is taking.
#[derive(Default)]
struct WBurst {
    /// Beats of the current burst already taken.
    k: u32,
    /// The first piece's len (beats - 1); the burst's len when not split.
    f: u32,
    split: bool,
    second: Option<Piece>,
}

/// `beats4k(a)`: beats from `a` to the next 4 KB boundary.
pub(super) fn beats4k(p: &ArbiterParams, a: u64) -> u64 {
    (4096 - a % 4096) / db(p)
}

/// The pieces of a request of `len + 1` beats at `addr` for tag `id`: the
/// first, and the second if it crosses a 4 KB boundary.
fn pieces(p: &ArbiterParams, addr: u64, len: u32, id: usize) -> (Piece, Option<Piece>) {
    let n = len as u64 + 1;
    let b4 = beats4k(p, addr);
    if n > b4 {
        let first = Piece { addr, len: (b4 - 1) as u32, id };
        let second = Piece { addr: addr + b4 * db(p), len: (n - b4 - 1) as u32, id };
        (first, Some(second))
    } else {
        (Piece { addr, len, id }, None)
    }
}

/// Play the run; returns its outcome and the edges of its events.
pub(super) fn simulate(p: &ArbiterParams, w: &Workload) -> (Outcome, Trace) {
    let axi = p.out == Out::Axi4;
    let nr = p.reads as usize;
    let nw = p.writes as usize;
    let dbu = db(p) as usize;
    assert!(w.reads.len() <= nr && w.writes.len() <= nw, "one request list per source at most");
    let reads: Vec<&[super::ReadRequest]> = (0..nr).map(|k| w.reads.get(k).map_or(&[][..], |v| &v[..])).collect();
    let writes: Vec<&[super::WriteBurst]> = (0..nw).map(|k| w.writes.get(k).map_or(&[][..], |v| &v[..])).collect();

    let mut mem = Memory {
        l: w.latency as u64,
        db: db(p),
        bytes: crate::mem::Memory::new(),
        rd: VecDeque::new(),
        wr: VecDeque::new(),
        w: VecDeque::new(),
        b: VecDeque::new(),
        native_open: false,
    };
    for r in &w.memory {
        mem.bytes.load(r.addr, &r.bytes);
    }
    // The memory's ready signals (the deterministic agent).
    let (arready, awready, wready) = (true, true, true);
    // The bridge always takes R and B; the arbiter always takes responses.
    let (rready, bready) = (true, true);

    // Sources (the run driver): the next request / burst and beat to offer.
    let mut rd_next = vec![0usize; nr];
    let mut wr_next = vec![0usize; nw];
    let mut wr_beat = vec![0usize; nw];
    // Read arbiter.
    let mut q: Option<RdReq> = None;
    let mut ptr = nr.saturating_sub(1);
    let mut cred = vec![p.read_buffer; nr];
    let mut fifo: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); nr];
    // Write arbiter.
    let mut qw: Option<WrBeat> = None;
    let mut pw = nw.saturating_sub(1);
    let mut lock: Option<usize> = None;
    let mut wcred = vec![p.write_outstanding; nw];
    let mut done = vec![0u32; nw];
    // Bridge.
    let mut ar: Option<Piece> = None;
    let mut p2: Option<Piece> = None;
    let mut aw: Option<Piece> = None;
    let mut wreg: Option<WReg> = None;
    let mut wb = WBurst::default();
    // Per ID, each burst whose first beat the bridge took: (split, the first
    // piece's B seen).
    let ids = nr.max(nw).max(1);
    let mut bsplit: Vec<VecDeque<(bool, bool)>> = vec![VecDeque::new(); ids];

    let mut out_reads: Vec<Vec<BigUint>> = vec![Vec::new(); nr];
    let mut out_writes = vec![0u64; nw];
    let mut counters = Counters::default();
    let mut tr = Trace {
        rd_grant: vec![Vec::new(); nr],
        rd_beat: vec![Vec::new(); nr],
        wr_grant: writes.iter().map(|l| vec![Vec::new(); l.len()]).collect(),
        wr_rsp: vec![Vec::new(); nw],
        ..Trace::default()
    };

    let beats_wanted: Vec<u64> = reads.iter().map(|l| l.iter().map(|r| r.beats as u64).sum()).collect();
    let total: u64 = beats_wanted.iter().sum::<u64>()
        + reads.iter().map(|l| l.len() as u64).sum::<u64>()
        + writes.iter().flat_map(|l| l.iter()).map(|b| b.beats() as u64 + 1).sum::<u64>();
    // Far more than any run needs: each request or beat alone through the
    // whole path.
    let limit = 100 + total * (w.latency as u64 + 10);

    let mut first_req: Option<u64> = None;
    let mut last_rsp: Option<u64> = None;
    let finished = |rd_next: &[usize], wr_next: &[usize], out_reads: &[Vec<BigUint>], out_writes: &[u64]| {
        (0..nr).all(|k| rd_next[k] == reads[k].len() && out_reads[k].len() as u64 == beats_wanted[k])
            && (0..nw).all(|k| wr_next[k] == writes[k].len() && out_writes[k] == writes[k].len() as u64)
    };

    let mut c: u64 = 0;
    while !finished(&rd_next, &wr_next, &out_reads, &out_writes) {
        if crate::budget::over(c) {
            break;
        }
        assert!(c < limit, "arbiter model: no progress by cycle {c}");

        // ---- the cycle's decisions, from the registers at its start ----

        // Memory outputs.
        let r_beat = mem.r_offer(c).filter(|_| rready);
        let b_id = mem.b_offer(c).filter(|_| bready);

        // Bridge (axi4) or the native memory: the arbiter's output ready.
        // spec: with `out = native` the memory's ready signals are high as
        // the agent's ARREADY and AWREADY/WREADY are ("the same rules with
        // mem_rd_req in place of AR").
        let rd_ready = if axi { (ar.is_none() || arready) && p2.is_none() } else { true };
        let wr_first_of_piece = |wb: &WBurst| wb.k == 0 || (wb.split && wb.k == wb.f + 1);
        let wr_ready = if axi {
            let first = qw.is_some() && wr_first_of_piece(&wb);
            (wreg.is_none() || wready) && (!first || aw.is_none() || awready)
        } else {
            true
        };

        // Read arbiter: the grant.
        let load = q.is_none() || rd_ready;
        let mut rd_grant: Option<usize> = None;
        if load {
            for i in 1..=nr {
                let k = (ptr + i) % nr;
                if let Some(r) = reads[k].get(rd_next[k]) {
                    if r.beats <= cred[k] {
                        rd_grant = Some(k);
                        break;
                    }
                }
            }
        }
        // Read sources: a beat is offered (and taken: rsp_ready is high).
        let rd_rsp: Vec<bool> = fifo.iter().map(|f| !f.is_empty()).collect();

        // Write arbiter: the beat taken, if any.
        let loadw = qw.is_none() || wr_ready;
        let wr_valid = |k: usize| wr_next[k] < writes[k].len();
        let mut wr_take: Option<usize> = None;
        match lock {
            Some(o) => {
                if loadw && wr_valid(o) {
                    wr_take = Some(o);
                }
            }
            None => {
                if loadw {
                    for i in 1..=nw {
                        let k = (pw + i) % nw;
                        if wr_valid(k) && wcred[k] > 0 {
                            wr_take = Some(k);
                            break;
                        }
                    }
                }
            }
        }
        let wr_rsp: Vec<bool> = done.iter().map(|&d| d > 0).collect();
        // For the coverage of random workloads.
        tr.rd_capped += (0..nr).filter(|&k| reads[k].get(rd_next[k]).is_some_and(|r| r.beats > cred[k])).count() as u64;
        tr.wr_capped += (0..nw).filter(|&k| lock != Some(k) && wr_valid(k) && wcred[k] == 0).count() as u64;
        if nr + nw > 1 && (0..nr).all(|k| rd_next[k] < reads[k].len()) && (0..nw).all(wr_valid) {
            tr.all_busy += 1;
        }

        // ---- edge c ----

        // Memory: requests in.
        if axi {
            if let Some(a) = ar.as_ref().filter(|_| arready) {
                mem.rd.push_back(MemRd { addr: a.addr, len: a.len, id: a.id, t: c, sent: 0 });
                tr.ar.push((c, a.addr, a.len, a.id));
            }
            if let Some(a) = aw.as_ref().filter(|_| awready) {
                mem.wr.push_back(MemWr { addr: a.addr, len: a.len, id: a.id, t_aw: c, got: 0 });
                tr.aw.push((c, a.addr, a.len, a.id));
            }
            if let Some(x) = wreg.as_ref().filter(|_| wready) {
                mem.w.push_back(MemW { data: x.data.clone(), strb: x.strb.clone(), last: x.last, t: c });
                tr.w.push((c, x.last));
            }
        } else {
            if let Some(x) = q.as_ref().filter(|_| rd_ready) {
                mem.rd.push_back(MemRd { addr: x.addr, len: x.len, id: x.tag, t: c, sent: 0 });
            }
            if let Some(x) = qw.as_ref().filter(|_| wr_ready) {
                if !mem.native_open {
                    // mem_wr_req's last beat stands for both t_aw and
                    // t_wlast: max(t_first, t_last) is t_last.
                    mem.wr.push_back(MemWr { addr: x.addr, len: x.len, id: x.tag, t_aw: c, got: 0 });
                }
                mem.native_open = !x.last;
                mem.w.push_back(MemW { data: x.data.clone(), strb: x.strb.clone(), last: x.last, t: c });
            }
        }
        mem.settle_writes();
        // Arbiter outputs taken.
        if let Some(x) = q.as_ref().filter(|_| rd_ready) {
            tr.rd_out.push((c, x.addr, x.len, x.tag));
        }
        if let Some(x) = qw.as_ref().filter(|_| wr_ready) {
            tr.wr_out.push((c, x.tag, x.last));
        }

        // Memory: responses out. A read beat goes to its source's queue; a B
        // to the bridge, which passes it on unless it is a split burst's
        // first piece.
        let mut rsp_beat: Option<(usize, Vec<u8>)> = None;
        if let Some((id, data)) = r_beat {
            mem.r_taken();
            tr.r.push((c, id));
            rsp_beat = Some((id, data));
        }
        let mut wr_done: Option<usize> = None;
        if let Some(id) = b_id {
            mem.b.pop_front();
            tr.b.push((c, id));
            if axi {
                let front = bsplit[id].front_mut().expect("a B for a burst the bridge took");
                if front.0 && !front.1 {
                    front.1 = true;
                } else {
                    bsplit[id].pop_front();
                    wr_done = Some(id);
                }
            } else {
                wr_done = Some(id);
            }
        }

        // Bridge registers.
        if axi {
            // Read.
            let ar_taken = ar.is_some() && arready;
            if let Some(x) = q.as_ref().filter(|_| rd_ready) {
                let (first, second) = pieces(p, x.addr, x.len, x.tag);
                if second.is_some() {
                    counters.split_bursts += 1;
                }
                ar = Some(first);
                p2 = second;
            } else if ar_taken && p2.is_some() {
                ar = p2.take();
            } else if ar_taken {
                ar = None;
            }
            // Write.
            let aw_taken = aw.is_some() && awready;
            let w_taken = wreg.is_some() && wready;
            let mut aw_load: Option<Piece> = None;
            let mut w_load: Option<WReg> = None;
            if let Some(x) = qw.as_ref().filter(|_| wr_ready) {
                if wb.k == 0 {
                    let (first, second) = pieces(p, x.addr, x.len, x.tag);
                    wb.split = second.is_some();
                    // spec: "its first piece's length f" is the piece's len
                    // (beats - 1): WLAST at k = f and the second piece at
                    // k = f + 1 need it so.
                    wb.f = first.len;
                    wb.second = second;
                    bsplit[x.tag].push_back((wb.split, false));
                    if wb.split {
                        counters.split_bursts += 1;
                    }
                    aw_load = Some(first);
                } else if wb.split && wb.k == wb.f + 1 {
                    aw_load = wb.second.clone();
                }
                let wlast = wb.k == wb.f || wb.k == x.len;
                w_load = Some(WReg { data: x.data.clone(), strb: x.strb.clone(), last: wlast });
                wb.k = if wb.k == x.len { 0 } else { wb.k + 1 };
            }
            if aw_load.is_some() {
                aw = aw_load;
            } else if aw_taken {
                aw = None;
            }
            if w_load.is_some() {
                wreg = w_load;
            } else if w_taken {
                wreg = None;
            }
        }

        // Read arbiter registers.
        if load {
            q = None;
            if let Some(k) = rd_grant {
                let r = &reads[k][rd_next[k]];
                q = Some(RdReq { addr: r.addr, len: r.beats - 1, tag: k });
                ptr = k;
                cred[k] -= r.beats;
                counters.read_requests += 1;
                counters.read_beats += r.beats as u64;
                tr.rd_grant[k].push(c);
                first_req.get_or_insert(c);
                rd_next[k] += 1;
            }
        }
        for k in 0..nr {
            if rd_rsp[k] {
                let data = fifo[k].pop_front().unwrap();
                cred[k] += 1;
                out_reads[k].push(BigUint::from_bytes_le(&data));
                tr.rd_beat[k].push(c);
                last_rsp = Some(c);
            }
        }
        if let Some((id, data)) = rsp_beat {
            assert!(id < nr, "a read beat for source {id}, which does not exist");
            fifo[id].push_back(data);
            assert!(fifo[id].len() <= p.read_buffer as usize, "response queue of rd{id} overflows");
        }

        // Write arbiter registers.
        if loadw {
            qw = None;
            if let Some(k) = wr_take {
                let bu = &writes[k][wr_next[k]];
                let j = wr_beat[k];
                let last = j + 1 == bu.data.len();
                qw = Some(WrBeat {
                    addr: bu.addr,
                    len: bu.beats() - 1,
                    tag: k,
                    data: beat_bytes(p, &bu.data[j]),
                    strb: strobes(p, &bu.strb[j]),
                    last,
                });
                if lock.is_none() {
                    // A burst's first beat.
                    pw = k;
                    wcred[k] -= 1;
                    counters.write_bursts += 1;
                }
                lock = if last { None } else { Some(k) };
                counters.write_beats += 1;
                tr.wr_grant[k][wr_next[k]].push(c);
                first_req.get_or_insert(c);
                if last {
                    wr_next[k] += 1;
                    wr_beat[k] = 0;
                } else {
                    wr_beat[k] += 1;
                }
            }
        }
        for k in 0..nw {
            if wr_rsp[k] {
                done[k] -= 1;
                wcred[k] += 1;
                out_writes[k] += 1;
                tr.wr_rsp[k].push(c);
                last_rsp = Some(c);
            }
        }
        if let Some(id) = wr_done {
            assert!(id < nw, "a write response for source {id}, which does not exist");
            done[id] += 1;
        }

        c += 1;
    }

    let memory = writes
        .iter()
        .flat_map(|l| l.iter())
        .map(|bu| Region { addr: bu.addr, bytes: mem.bytes.bytes(bu.addr, bu.data.len() * dbu) })
        .collect();
    let cycles = match (first_req, last_rsp) {
        (Some(f), Some(l)) => l - f + 1,
        _ => 0,
    };
    (Outcome { reads: out_reads, writes: out_writes, memory, cycles, counters }, tr)
}
