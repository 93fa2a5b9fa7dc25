//! The decoder in one cycle (docs/cmdproc.md, "Timing", the decoder's four
//! cases): the window, the first and second packets, table writes, jumps,
//! and a packet's commit.

use super::packet::{check_header, dispatch_check, release_check, Head, Packet, IB_SIZE_MASK};
use super::pm4;
use super::prim::Job;
use super::timing::Sim;
use super::{Command, Record};
use gpurtl_params::cmdproc::{sh, Cause, Opcode};

/// A write at the edge: to the render-state table or to the compute
/// registers.
#[derive(Clone, Copy, Debug)]
enum Write {
    /// `table[reg] = value` (`SET_CONTEXT_REG`).
    Table(u32, u32),
    /// Compute register `i` (`sh` order) `= value` (`SET_SH_REG`).
    Sh(usize, u32),
}

/// What the decoder does in one cycle of case 4 ("takes").
struct Took {
    /// Lanes taken.
    t: u32,
    /// The current packet after the edge.
    cur: Option<Packet>,
    /// The packet committed in the cycle.
    commit: Option<Packet>,
    /// Table and compute-register writes at the edge.
    writes: Vec<Write>,
    /// `WRITE_DATA`: the dword presented (and taken) on the write port.
    wr: Option<(u32, u32)>,
    /// The error raised in the cycle: cause, header byte address.
    error: Option<(Cause, u32)>,
}

impl<'a> Sim<'a> {
    /// Dword `i` of the window (from `pos` on in the pool).
    fn lane(&self, i: u32) -> u32 {
        let k = self.pos + i;
        let beat = self.pool[(k / self.f) as usize];
        let a = beat.wrapping_add(4 * (k % self.f));
        debug_assert_eq!(a, self.daddr.wrapping_add(4 * i));
        super::dword(&self.mem, a)
    }

    /// Feeds the packet its next dword `v` (taken in this cycle): `p_k`,
    /// `SET_CONTEXT_REG`'s and `SET_SH_REG`'s range check when `p0` is
    /// taken, and their values.
    fn feed(&self, pk: &mut Packet, v: u32, writes: &mut Vec<Write>) -> Result<(), Cause> {
        let d = pk.done;
        if (1..=6).contains(&d) {
            pk.p[d as usize - 1] = v;
        }
        match pk.op {
            Opcode::SetContextReg => {
                if d == 1 {
                    if v as u64 + pk.n as u64 - 1 > self.p.state_regs as u64 {
                        return Err(Cause::StateRange);
                    }
                } else if d >= 2 {
                    writes.push(Write::Table(pk.p[0] + (d - 2), v));
                }
            }
            Opcode::SetShReg => {
                // Range p0 .. p0 + n - 2 (exact) inside one run.
                if d == 1 {
                    if !sh::range_ok(v as u64, v as u64 + pk.n as u64 - 2) {
                        return Err(Cause::ShRange);
                    }
                } else if d >= 2 {
                    let i = sh::index(pk.p[0] as u64 + (d - 2) as u64).expect("SET_SH_REG range checked at p0");
                    writes.push(Write::Sh(i, v));
                }
            }
            _ => {}
        }
        pk.done += 1;
        pk.r -= 1;
        Ok(())
    }

    /// The checks of a packet that ends (`field`, `prim_range`; with
    /// `compute = true` also a dispatch's `field`, `need` from the snapshot
    /// (the compute registers now, at the start of the cycle),
    /// `RELEASE_MEM`'s `field`, and `graphics` for a draw).
    fn end_check(&self, pk: &Packet) -> Option<Cause> {
        let p = pk.p;
        match pk.op {
            Opcode::DrawIndexAuto | Opcode::DrawIndexOffset2 if self.p.compute => Some(Cause::Graphics),
            Opcode::DispatchDirect if self.p.compute => dispatch_check(self.p, &self.sh, &p),
            Opcode::ReleaseMem => release_check(&p),
            Opcode::IndexType if p[0] > 1 => Some(Cause::Field),
            Opcode::IndirectBuffer if p[1] != 0 || p[0] & 3 != 0 => Some(Cause::Field),
            Opcode::DrawIndexOffset2 => {
                let (o, m, s) = (p[1] as u64, p[2] as u64, self.index_size as u64);
                ((o + m) * s > self.regs.prim_size as u64).then_some(Cause::PrimRange)
            }
            _ => None,
        }
    }

    /// Case 4 of the decoder: the window is `lanes`; `q0` and `jobs0` are the
    /// queue's fill and the number of jobs the primitive unit holds at the
    /// start of the cycle; `reader0`: the queue holds a state reader at the
    /// start of the cycle (the state hold's first condition).
    fn take(&self, lanes: &[u32], q0: u32, jobs0: usize, reader0: bool) -> Took {
        let level = self.stack.len() as u32;
        let mut tk = Took { t: 0, cur: self.cur.clone(), commit: None, writes: Vec::new(), wr: None, error: None };
        let a = lanes.len() as u32;
        // The first packet.
        let (mut pk, fresh) = match &self.cur {
            Some(c) => (c.clone(), false),
            None => match check_header(lanes[0], self.left, level, self.p.nesting, self.p.compute) {
                Err(cause) => {
                    tk.error = Some((cause, self.daddr));
                    return tk;
                }
                Ok(Head::Filler) => {
                    tk.t = 1;
                    return tk;
                }
                Ok(Head::Packet(op, n)) => (Packet::new(op, lanes[0], self.daddr, n), true),
            },
        };
        // The state hold: in a held cycle a SET_CONTEXT_REG (SET_SH_REG) first packet
        // takes nothing (its header, when it starts here, was checked
        // above; its p0 is not taken, so no state_range check). The first
        // packet is not a state reader here, so the cycle is held only when
        // the queue holds one at the start of the cycle.
        if pk.op.writes_state() && reader0 {
            return tk;
        }
        if pk.op == Opcode::WriteData {
            // One dword a cycle, only as the first packet.
            if a == 0 {
                return tk;
            }
            let v = lanes[0];
            match pk.done {
                0 => {
                    // The header: taken when the output queue is empty and
                    // the primitive unit holds no job (the fence).
                    if q0 == 0 && jobs0 == 0 {
                        pk.done = 1;
                        pk.r -= 1;
                        tk.t = 1;
                        tk.cur = Some(pk);
                    }
                    return tk;
                }
                1 | 2 => pk.p[pk.done as usize - 1] = v,
                3 => {
                    if v != 0 || pk.p[1] & 3 != 0 {
                        tk.error = Some((Cause::Field, pk.addr));
                        return tk;
                    }
                    pk.p[2] = v;
                }
                d => {
                    let k = d - 4;
                    if d <= 6 {
                        pk.p[d as usize - 1] = v;
                    }
                    pk.data.push(v);
                    tk.wr = Some((pk.p[1].wrapping_add(4 * k), v));
                }
            }
            pk.done += 1;
            pk.r -= 1;
            tk.t = 1;
            if pk.r > 0 {
                tk.cur = Some(pk);
                return tk;
            }
            tk.cur = None;
            tk.commit = Some(pk);
            // It was the current packet and ended in lane 0: e = 1 (and
            // its second packet takes nothing in any case).
            self.second(lanes, 1, true, reader0, &mut tk);
            return tk;
        }
        let ends = pk.r <= a;
        let take = if ends { pk.r } else { a };
        let mut writes = Vec::new();
        for &v in &lanes[..take as usize] {
            if let Err(cause) = self.feed(&mut pk, v, &mut writes) {
                tk.error = Some((cause, pk.addr));
                return tk;
            }
        }
        if !ends {
            tk.t = take;
            tk.cur = Some(pk);
            tk.writes = writes;
            return tk;
        }
        if let Some(cause) = self.end_check(&pk) {
            tk.error = Some((cause, pk.addr));
            return tk;
        }
        if pk.op == Opcode::DrawIndexOffset2 && pk.p[2] > 0 && jobs0 >= self.p.prim_jobs as usize {
            // May end only when the primitive unit holds fewer than
            // `prim_jobs` jobs: t = 0.
            return tk;
        }
        tk.t = take;
        tk.cur = None;
        tk.writes = writes;
        // A second packet after a current packet that ends here, except
        // after an INDIRECT_BUFFER (it jumps) and, in compute mode, after
        // a DISPATCH_DIRECT (the dispatch barrier: lane e is not looked
        // at, whatever it holds).
        let barrier = self.p.compute && pk.op == Opcode::DispatchDirect;
        let second = !fresh && pk.op != Opcode::IndirectBuffer && !barrier;
        // Held: a reader in the queue at the start, or this first packet is
        // a state reader that commits in this cycle.
        let held = reader0 || pk.op.reads_state();
        tk.commit = Some(pk);
        if second {
            self.second(lanes, take, false, held, &mut tk);
        }
        tk
    }

    /// The second packet: a header in lane `e` after a current packet that
    /// ended in lane `e - 1` (`wd_first`: that packet was a `WRITE_DATA`,
    /// so nothing more is taken; `held`: the cycle is held, so a
    /// `SET_CONTEXT_REG` takes nothing).
    fn second(&self, lanes: &[u32], e: u32, wd_first: bool, held: bool, tk: &mut Took) {
        let a = lanes.len() as u32;
        if e >= a {
            return;
        }
        let h = lanes[e as usize];
        let addr = self.daddr.wrapping_add(4 * e);
        match check_header(h, self.left - e, self.stack.len() as u32, self.p.nesting, self.p.compute) {
            Err(cause) => tk.error = Some((cause, addr)),
            Ok(Head::Filler) => {}
            Ok(Head::Packet(op, n)) => {
                if op == Opcode::WriteData || wd_first {
                    return;
                }
                // The state hold: checked like any header, takes nothing
                // (t2 = 0: met again in lane 0 of a later cycle).
                if op.writes_state() && held {
                    return;
                }
                let t2 = n.min(a - e);
                if t2 == 0 {
                    return;
                }
                let mut pk = Packet::new(op, h, addr, n);
                let mut writes = Vec::new();
                for &v in &lanes[e as usize..(e + t2) as usize] {
                    if let Err(cause) = self.feed(&mut pk, v, &mut writes) {
                        tk.error = Some((cause, addr));
                        return;
                    }
                }
                tk.t = e + t2;
                tk.cur = Some(pk);
                tk.writes.extend(writes);
            }
        }
    }

    /// The decoder in one cycle; returns the jump to make at the edge (after
    /// the fetcher's answer of the cycle). `q0`, `jobs0`, `reader0`: the
    /// queue's fill, the primitive unit's jobs and whether the queue holds a
    /// state reader, at the start of the cycle; `dispatch0`: compute mode
    /// and the queue holds a `DISPATCH_DIRECT` at the start of the cycle
    /// (the dispatch barrier).
    pub(super) fn decode(&mut self, q0: u32, jobs0: usize, reader0: bool, dispatch0: bool) -> Option<(u32, u32)> {
        // 1. Nothing: the run has stopped or finished, the queue was full,
        // or (compute mode) it held a dispatch: no packet is taken or
        // checked, no buffer end is handled.
        if self.stopped || self.finished || q0 >= self.p.out_depth || dispatch0 {
            return None;
        }
        // 2. Buffer end.
        if self.cur.is_none() && self.left == 0 {
            return match self.stack.pop() {
                None => {
                    self.finished = true;
                    None
                }
                Some(ret) => Some(ret),
            };
        }
        let held = self.pool.len() as u64 * self.f as u64;
        let a = (self.f as u64).min(held.saturating_sub(self.pos as u64)).min(self.left as u64) as u32;
        // 3. Waiting for data.
        if self.cur.is_none() && a == 0 {
            return None;
        }
        // 4. Takes.
        let mut buf = [0u32; 4];
        for i in 0..a {
            buf[i as usize] = self.lane(i);
        }
        let tk = self.take(&buf[..a as usize], q0, jobs0, reader0);
        let mut jump = None;
        for w in &tk.writes {
            match *w {
                Write::Table(reg, v) => self.table[reg as usize] = v,
                Write::Sh(i, v) => self.sh[i] = v,
            }
        }
        let t = tk.t;
        if let Some(pk) = tk.commit {
            if pk.op == Opcode::IndirectBuffer {
                self.stack.push((self.daddr.wrapping_add(4 * t), self.left - t));
                jump = Some((pk.p[0], pk.p[2] & IB_SIZE_MASK));
            }
            self.commit(pk);
        }
        if let Some((cause, addr)) = tk.error {
            self.error = Some((cause, addr));
            self.stopped = true;
            self.fetching = false;
        }
        let _ = tk.wr; // the write port is always ready: the dword is taken
        self.cur = tk.cur;
        self.pos += t;
        if self.pos >= self.f {
            self.pos -= self.f;
            self.pool.pop_front();
            self.credits += 1;
        }
        self.left -= t;
        self.daddr = self.daddr.wrapping_add(4 * t);
        jump
    }

    /// A packet commits: its id, the output queue, the trace, its effects.
    fn commit(&mut self, pk: Packet) {
        let mask = if self.p.id_bits >= 32 { u32::MAX as u64 } else { (1u64 << self.p.id_bits) - 1 };
        // A record holds min(n, 4) payload dwords, min(n, 6) with compute.
        let mut p = pk.p;
        if !self.p.compute {
            p[4..].fill(0);
        }
        let record = Record { id: (self.next_id & mask) as u32, addr: pk.addr, header: pk.header, count: pk.n, p };
        self.next_id += 1;
        self.trace.push(pm4::trace_line_mode(&record, self.p.compute));
        // A state reader's state: the table now (the SET_CONTEXT_REG packets
        // before it have all been taken; this cycle is held, so none writes
        // at its edge).
        let state = pk.op.reads_state().then(|| self.table.clone());
        // A dispatch's snapshot (compute mode): the compute registers now
        // (held likewise).
        let sh = (self.p.compute && pk.op == Opcode::DispatchDirect).then(|| self.sh.clone());
        self.commands.push(Command { record, prims: Vec::new(), state, sh });
        self.queue.push_back(self.commands.len() - 1);
        match pk.op {
            Opcode::IndexType => self.index_size = if pk.p[0] == 0 { 2 } else { 4 },
            Opcode::WriteData => self.memory_writes.push((pk.p[1], pk.data)),
            Opcode::DrawIndexOffset2 if pk.p[2] > 0 => {
                let (o, m, s) = (pk.p[1] as u64, pk.p[2] as u64, self.index_size);
                let b = self.regs.prim_base.wrapping_add((o * s as u64) as u32);
                let boff = (b % self.bb) as u64;
                // Held from the next cycle: `prim_cycle` of this cycle has
                // already run.
                self.jobs.push_back(Job {
                    seq: self.next_seq,
                    cmd: self.commands.len() - 1,
                    b,
                    boff,
                    m,
                    s,
                    beats: (boff + m * s as u64).div_ceil(self.bb as u64),
                    requested: 0,
                    next: 0,
                    held: 0,
                });
                self.next_seq += 1;
            }
            _ => {}
        }
    }
}
