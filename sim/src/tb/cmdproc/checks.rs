//! What the command processor's ports show, checked against
//! docs/cmdproc.md as it happens: records, commands, indices, writes, the
//! busy line; and a run's outcome built from it.

use super::driver::{CmdprocDriver, Draw};
use super::op_of;
use crate::cosim::Sim;
use crate::mem::Memory;
use crate::models::cmdproc::{dword, pm4, Command, Outcome, Record, Status};
use crate::tb::agents::WriteBeat;
use crate::tb::mask;
use gpurtl_params::cmdproc::{reg, Cause, CmdprocParams, Opcode};

/// The index of `s` bytes at `addr` (a 16-bit one zero-extended).
fn index_at(m: &Memory, addr: u32, s: u32) -> u32 {
    let d = dword(m, addr);
    match (s, addr & 2) {
        (4, _) => d,
        (_, 0) => d & 0xFFFF,
        _ => d >> 16,
    }
}

/// A command record as the document defines it: a type-3 packet without
/// error whose fields are those in memory at its address.
pub(super) fn check_record(p: &CmdprocParams, mem: &Memory, r: &Record) -> Result<(), String> {
    let h = r.header;
    if h >> 30 != 3 {
        return Err(format!("header 0x{h:08x} is not type 3"));
    }
    let n = ((h >> 16) + 1) & 0x3FFF;
    if r.count != n {
        return Err(format!("count {} but the header 0x{h:08x} gives {n}", r.count));
    }
    let Some(op) = op_of(h) else {
        return Err(format!("header 0x{h:08x} has an unknown opcode"));
    };
    if !op.count_ok(n) {
        return Err(format!("{} with {n} payload dwords", op.name()));
    }
    if !r.addr.is_multiple_of(4) {
        return Err(format!("address 0x{:08x} is not a multiple of 4", r.addr));
    }
    let at = dword(mem, r.addr);
    if at != h {
        return Err(format!("header 0x{h:08x}, but memory at 0x{:08x} holds 0x{at:08x}", r.addr));
    }
    for k in 0..4 {
        let want = if k < n { dword(mem, r.addr.wrapping_add(4 + 4 * k)) } else { 0 };
        if r.p[k as usize] != want {
            return Err(format!("p{k} is 0x{:08x}, expected 0x{want:08x}", r.p[k as usize]));
        }
    }
    let bad = match op {
        Opcode::SetContextReg => r.p[0] as u64 + n as u64 - 1 > p.state_regs as u64,
        Opcode::IndexType => r.p[0] > 1,
        Opcode::WriteData => r.p[2] != 0 || !r.p[1].is_multiple_of(4),
        Opcode::IndirectBuffer => r.p[1] != 0 || !r.p[0].is_multiple_of(4),
        _ => false,
    };
    if bad {
        return Err(format!("a {} with a field that is an error", op.name()));
    }
    Ok(())
}


impl CmdprocDriver {
    pub(super) fn track_busy(&mut self, sim: &Sim, now: u64, busy: bool) -> Result<(), String> {
        if self.start_at == Some(now) {
            if !busy {
                return Err("busy_o is 0 in the cycle after the doorbell was taken".into());
            }
            self.start_at = None;
        } else if busy && !self.prev_busy {
            return Err("busy_o rose without a doorbell taken in the cycle before".into());
        }
        if !busy && self.prev_busy {
            // The run's last busy cycle, now - 1, began with no read in
            // flight (a run fetches only what its buffers hold: no read is
            // taken in its last cycle either), and every write answered.
            for (name, watch, lag) in &self.watches {
                let m = watch.get();
                if let (true, Some((addr, taken))) = (m.reads > 0, m.oldest) {
                    return Err(format!("busy_o fell with the {name} read of 0x{addr:08x} (taken in cycle {taken}) not answered"));
                }
                // An answer reaches the unit `lag` cycles after the memory's.
                if m.last_answer.is_some_and(|a| a + lag + 1 >= now) {
                    return Err(format!("busy_o fell after a {name} answer in the last busy cycle, so a read was in flight at its start"));
                }
                if m.writes > 0 {
                    return Err(format!("busy_o fell with {} {name} writes not answered", m.writes));
                }
            }
            self.run.ended = true;
        }
        if busy {
            self.run.busy_cycles += 1;
            // No table write can have happened yet (it needs a fetched beat).
            if now == self.run.doorbell + 2 && sim.words(self.io.state) != &self.run.init[..] {
                return Err(format!(
                    "state_o {:x?} is not STATE_INIT {:x?} two cycles after the doorbell",
                    sim.words(self.io.state),
                    self.run.init
                ));
            }
        }
        self.prev_busy = busy;
        Ok(())
    }

    pub(super) fn on_trace(&mut self, r: Record) -> Result<(), String> {
        let k = self.run.traces.len();
        let id = (k as u64 & mask(self.p.id_bits)) as u32;
        if r.id != id {
            return Err(format!("trace record #{k} has id {}, expected {id}: {r:?}", r.id));
        }
        check_record(&self.p, &self.mem, &r).map_err(|e| format!("trace record #{k} at 0x{:08x}: {e}", r.addr))?;
        match op_of(r.header) {
            Some(Opcode::IndexType) => self.run.index_size = if r.p[0] == 0 { 2 } else { 4 },
            Some(Opcode::DrawIndexOffset2) => {
                let (o, m, s) = (r.p[1], r.p[2], self.run.index_size);
                if (o as u64 + m as u64) * s as u64 > self.run.prim_size as u64 {
                    return Err(format!(
                        "draw #{k} at 0x{:08x} committed with indices {o}..{o}+{m} of {s} bytes, past PRIM_SIZE {}",
                        r.addr, self.run.prim_size
                    ));
                }
                if m > 0 {
                    self.run.draws.push_back(Draw { k, s, o, m });
                }
            }
            // Through AXI4 the writes show in the slave's log instead (the
            // outcome checks them).
            Some(Opcode::WriteData) if self.wr.is_some() => {
                self.run.write_cmds += 1;
                let n = self.run.write_cmds;
                if self.run.write_open || self.run.writes.len() != n {
                    return Err(format!(
                        "WRITE_DATA #{k} at 0x{:08x} committed, but its writes are not complete ({} write entries for {n} WRITE_DATA, one open: {})",
                        r.addr,
                        self.run.writes.len(),
                        self.run.write_open
                    ));
                }
                let (first, data) = &self.run.writes[n - 1];
                let want: Vec<u32> = (0..r.count - 3).map(|j| dword(&self.mem, r.addr.wrapping_add(16 + 4 * j))).collect();
                if *first != r.p[1] || *data != want {
                    return Err(format!(
                        "WRITE_DATA #{k} at 0x{:08x} wrote {data:x?} at 0x{first:08x}; its packet says {want:x?} at 0x{:08x}",
                        r.addr, r.p[1]
                    ));
                }
            }
            _ => {}
        }
        self.run.traces.push(r);
        self.run.prims.push(Vec::new());
        Ok(())
    }

    pub(super) fn on_cmd(&mut self, r: Record, state_ptr: u32, state: Option<Vec<u32>>, sh: Option<Vec<u32>>) -> Result<(), String> {
        let k = self.run.cmds.len();
        match self.run.traces.get(k) {
            None => return Err(format!("command #{k} {r:?} left the pipeline port before its trace record")),
            Some(t) if *t != r => {
                return Err(format!("command #{k} on the pipeline port {r:?} differs from its trace record {t:?}"))
            }
            Some(_) => {}
        }
        if state_ptr != self.run.state_ptr {
            return Err(format!("command #{k}: cmd_state_ptr_o 0x{state_ptr:08x}, STATE_PTR is 0x{:08x}", self.run.state_ptr));
        }
        self.run.cmds.push(r);
        self.run.states.push(state);
        self.run.snapshots.push(sh);
        Ok(())
    }

    pub(super) fn on_prim(&mut self, id: u32, index: u32, last: bool) -> Result<(), String> {
        let Some(&Draw { k, s, o, m }) = self.run.draws.front() else {
            return Err(format!("index {index:#x} (id {id}) on the primitive port with no draw waiting for indices"));
        };
        let rec = self.run.traces[k];
        if id != rec.id {
            return Err(format!("index of id {id} while draw #{k} (id {}) is waiting for its indices", rec.id));
        }
        let i = self.run.prims[k].len() as u64;
        let addr = (self.run.prim_base as u64 + (o as u64 + i) * s as u64) as u32;
        let want = index_at(&self.mem, addr, s);
        if index != want {
            return Err(format!("index {i} of draw #{k} (id {id}) is {index:#x}; the {s}-byte index at 0x{addr:08x} is {want:#x}"));
        }
        let is_last = i + 1 == m as u64;
        if last != is_last {
            return Err(format!("index {i} of the {m} of draw #{k} (id {id}) has prim_last_o {}", last as u8));
        }
        self.run.prims[k].push(index);
        if last {
            self.run.draws.pop_front();
        }
        Ok(())
    }

    pub(super) fn on_write(&mut self, addr: u32, data: u32, last: bool) -> Result<(), String> {
        // The fence: every earlier command and index has left.
        if self.run.cmds.len() != self.run.traces.len() {
            return Err(format!(
                "a write beat while {} committed commands have not left the pipeline port",
                self.run.traces.len() - self.run.cmds.len()
            ));
        }
        if let Some(d) = self.run.draws.front() {
            return Err(format!("a write beat while draw #{} has not sent all its indices", d.k));
        }
        if !self.run.write_open {
            if !addr.is_multiple_of(4) {
                return Err(format!("a write to 0x{addr:08x}, not a multiple of 4"));
            }
            self.run.writes.push((addr, Vec::new()));
            self.run.write_open = true;
        }
        let Some((first, ds)) = self.run.writes.last_mut() else { unreachable!("an entry is open") };
        let want = first.wrapping_add(4 * ds.len() as u32);
        if addr != want {
            return Err(format!("write beat {} of the entry at 0x{first:08x} goes to 0x{addr:08x}, not 0x{want:08x}", ds.len()));
        }
        ds.push(data);
        if last {
            self.run.write_open = false;
        }
        Ok(())
    }

    /// The dwords the run wrote through AXI4 (the slave's log from the
    /// doorbell on, addresses less `base`), one entry per committed
    /// `WRITE_DATA` as the model gives them: each beat must strobe exactly
    /// one aligned dword, and the dwords of each `WRITE_DATA`, in order, go
    /// to consecutive addresses from its `p1` with its packet's data.
    fn logged_writes(&self, beats: &[WriteBeat], base: u64) -> Result<Vec<(u32, Vec<u32>)>, String> {
        let mut dwords = Vec::with_capacity(beats.len());
        for b in beats {
            let bytes = 4 * b.data.len();
            let on: Vec<usize> = (0..bytes).filter(|&i| b.strobed(i)).collect();
            let j = on.first().map_or(0, |&i| i / 4);
            if on.len() != 4 || !on[0].is_multiple_of(4) || on[3] != on[0] + 3 {
                return Err(format!("an AXI write beat at {:#x} (cycle {}) strobes bytes {on:?}; each must strobe one dword", b.addr, b.cycle));
            }
            dwords.push((b.addr.wrapping_sub(base).wrapping_add(4 * j as u64) as u32, b.data[j], b.cycle));
        }
        let mut left = dwords.into_iter();
        let mut out = Vec::new();
        for r in self.run.traces.iter().filter(|r| op_of(r.header) == Some(Opcode::WriteData)) {
            let want: Vec<u32> = (0..r.count - 3).map(|j| dword(&self.mem, r.addr.wrapping_add(16 + 4 * j))).collect();
            let mut data = Vec::with_capacity(want.len());
            for j in 0..want.len() as u32 {
                let at = r.p[1].wrapping_add(4 * j);
                match left.next() {
                    None => return Err(format!("WRITE_DATA at 0x{:08x} wrote {j} of its {} dwords", r.addr, want.len())),
                    Some((a, _, c)) if a != at => {
                        return Err(format!("dword {j} of the WRITE_DATA at 0x{:08x} went to 0x{a:08x} (cycle {c}), not 0x{at:08x}", r.addr))
                    }
                    Some((_, d, _)) => data.push(d),
                }
            }
            if data != want {
                return Err(format!("WRITE_DATA at 0x{:08x} wrote {data:x?} at 0x{:08x}; its packet says {want:x?}", r.addr, r.p[1]));
            }
            out.push((r.p[1], data));
        }
        if let Some((a, d, c)) = left.next() {
            return Err(format!("a write of 0x{d:08x} at 0x{a:08x} (cycle {c}) that no committed WRITE_DATA made"));
        }
        Ok(out)
    }

    /// The run's outcome, from the registers read after it (`STATUS`,
    /// `ERR_CAUSE`, `ERR_ADDR`, `CMD_COUNT`, `BUSY_CYCLES`, `IRQ_STATUS`)
    /// and what the ports showed.
    pub(super) fn outcome_of(&self, regs: [u32; 6], irq: bool, state_table: Vec<u32>, sh_table: Option<Vec<u32>>) -> Result<Outcome, String> {
        let [status_reg, cause, err_addr, count, busy_cycles, irq_status] = regs;
        let o = &self.run;
        let (status, error) = match status_reg {
            reg::STATUS_DONE => {
                if cause != 0 || err_addr != 0 {
                    return Err(format!("the run is done, but ERR_CAUSE is {cause} and ERR_ADDR 0x{err_addr:08x}"));
                }
                (Status::Done, None)
            }
            reg::STATUS_ERROR => {
                let c = Cause::from_code(cause).ok_or_else(|| format!("the run ended in an error of cause {cause}, not a cause code"))?;
                if err_addr % 4 != 0 {
                    return Err(format!("ERR_ADDR 0x{err_addr:08x} is not a header's address"));
                }
                (Status::Error, Some((c, err_addr)))
            }
            s => return Err(format!("STATUS is 0x{s:x} after the run; exactly one of done (4) and error (2) must be set, busy not")),
        };
        if count as u64 != o.cmds.len() as u64 {
            return Err(format!("CMD_COUNT is {count}, but {} commands left the pipeline port", o.cmds.len()));
        }
        // Through AXI4, busy_o stays 1 until the writes are answered;
        // BUSY_CYCLES counts the unit's own busy cycles.
        if busy_cycles as u64 != o.busy_cycles && (self.wr.is_some() || busy_cycles as u64 > o.busy_cycles) {
            return Err(format!("BUSY_CYCLES is {busy_cycles}, but busy_o was 1 for {} cycles", o.busy_cycles));
        }
        let bit = if status == Status::Done { reg::IRQ_DONE } else { reg::IRQ_ERROR };
        if irq_status != bit {
            return Err(format!("IRQ_STATUS is {irq_status} after a run that ended {status:?} (cleared before the doorbell)"));
        }
        let enable = self.shadow[reg::IRQ_ENABLE as usize / 4];
        if irq != (irq_status & enable != 0) {
            return Err(format!("irq_o is {} with IRQ_STATUS {irq_status} and IRQ_ENABLE {enable}", irq as u8));
        }
        if o.cmds.len() != o.traces.len() {
            return Err(format!("{} trace records but {} commands on the pipeline port", o.traces.len(), o.cmds.len()));
        }
        if let Some(d) = o.draws.front() {
            return Err(format!("draw #{} got {} of its {} indices", d.k, o.prims[d.k].len(), d.m));
        }
        if self.wr.is_some() && (o.write_open || o.writes.len() != o.write_cmds) {
            return Err(format!("{} write entries (one open: {}) for {} WRITE_DATA commands", o.writes.len(), o.write_open, o.write_cmds));
        }
        let memory_writes = match &self.log {
            None => o.writes.clone(),
            Some((log, base)) => self.logged_writes(&log.borrow()[self.log_at..], *base)?,
        };
        let trace = o.traces.iter().map(|r| pm4::trace_line_mode(r, self.p.compute)).collect();
        let commands = o
            .cmds
            .iter()
            .zip(&o.prims)
            .zip(o.states.iter().zip(&o.snapshots))
            .map(|((&record, prims), (state, sh))| Command { state: state.clone(), sh: sh.clone(), record, prims: prims.clone() })
            .collect();
        Ok(Outcome {
            commands,
            state_table,
            sh_table,
            status,
            error,
            irq,
            memory_writes,
            trace,
            cycles: busy_cycles as u64,
        })
    }
}
