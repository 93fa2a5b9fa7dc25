//! Random workloads for the command processor, and the walk of a
//! workload's buffers that bounds a run and tells which paths it reaches.

use super::op_of;
use crate::mem::Memory;
use crate::models::cmdproc::{dword, memory_image, Registers, Workload};
use crate::rng::Rng;
use gpurtl_params::cmdproc::{sh, Cause, CmdprocParams, Opcode};
use gpurtl_params::MemIf;

/// What a workload's buffers hold, walked from the main buffer as the
/// document reads them (following `INDIRECT_BUFFER`s the nesting allows),
/// but going on past the errors that do not hide the packet structure: a
/// bound for the cycle limit, and the paths a random workload reaches.
#[derive(Debug, Default)]
pub(super) struct Walk {
    pub(super) dwords: u64,
    pub(super) packets: u64,
    pub(super) jumps: u64,
    pub(super) indices: u64,
    pub(super) features: Vec<&'static str>,
}

/// Stop walking after this many dwords (a bound only has to be generous).
const WALK_CAP: u64 = 1 << 24;

struct Walker<'a> {
    p: &'a CmdprocParams,
    mem: Memory,
    prim_size: u32,
    index_size: u32,
    out: Walk,
}

pub(super) fn walk(p: &CmdprocParams, w: &Workload) -> Walk {
    let mut k = Walker { p, mem: memory_image(&w.memory), prim_size: w.registers.prim_size, index_size: 4, out: Walk::default() };
    k.buffer(w.registers.cmd_base & !3, w.registers.cmd_size / 4, 0);
    k.out
}

impl Walker<'_> {
    fn feature(&mut self, f: &'static str) {
        if !self.out.features.contains(&f) {
            self.out.features.push(f);
        }
    }

    fn buffer(&mut self, addr: u32, size: u32, level: u32) {
        self.out.jumps += 1;
        if size == 0 {
            self.feature("empty buffer");
        }
        if !addr.is_multiple_of(self.p.fetch_bits / 8) {
            self.feature("unaligned buffer");
        }
        if level > 0 && level == self.p.nesting {
            self.feature("deepest buffer");
        }
        let mut i = 0u32;
        while i < size {
            if self.out.dwords > WALK_CAP {
                return;
            }
            let a = addr.wrapping_add(4 * i);
            let h = dword(&self.mem, a);
            self.out.packets += 1;
            match h >> 30 {
                0 | 1 => {
                    self.feature("type");
                    self.out.dwords += 1;
                    return;
                }
                2 => {
                    self.feature("filler");
                    self.out.dwords += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let n = ((h >> 16) + 1) & 0x3FFF;
            if i as u64 + 1 + n as u64 > size as u64 {
                self.feature("overrun");
                self.out.dwords += (size - i) as u64;
                return;
            }
            self.out.dwords += 1 + n as u64;
            let pk: [u32; 4] = std::array::from_fn(|k| if (k as u32) < n { dword(&self.mem, a.wrapping_add(4 + 4 * k as u32)) } else { 0 });
            match op_of(h) {
                Some(op) if !op.known(self.p) => self.feature("opcode"),
                None => self.feature("opcode"),
                Some(op) if !op.count_ok(n) => self.feature("count"),
                Some(op) => {
                    self.feature(op.name());
                    self.packet(op, n, pk, level);
                }
            }
            i += 1 + n;
        }
    }

    fn packet(&mut self, op: Opcode, n: u32, pk: [u32; 4], level: u32) {
        match op {
            Opcode::Nop if n == 0 => self.feature("one-dword NOP"),
            Opcode::Nop if n > 16 => self.feature("long NOP"),
            Opcode::SetContextReg if pk[0] as u64 + n as u64 - 1 > self.p.state_regs as u64 => self.feature("state_range"),
            Opcode::SetContextReg if n > 2 => self.feature("SET_CONTEXT_REG of several values"),
            Opcode::IndexType if pk[0] > 1 => self.feature("field: INDEX_TYPE"),
            Opcode::IndexType => self.index_size = if pk[0] == 0 { 2 } else { 4 },
            Opcode::DrawIndexOffset2 => {
                let (o, m, s) = (pk[1] as u64, pk[2] as u64, self.index_size as u64);
                if (o + m) * s > self.prim_size as u64 {
                    self.feature("prim_range");
                } else {
                    self.out.indices += m;
                    self.feature(match (m, s) {
                        (0, _) => "draw of no indices",
                        (_, 2) => "draw of 16-bit indices",
                        _ => "draw of 32-bit indices",
                    });
                }
            }
            Opcode::WriteData if pk[2] != 0 || !pk[1].is_multiple_of(4) => self.feature("field: WRITE_DATA"),
            Opcode::IndirectBuffer if level == self.p.nesting => self.feature("nesting"),
            Opcode::IndirectBuffer if pk[1] != 0 || !pk[0].is_multiple_of(4) => self.feature("field: INDIRECT_BUFFER"),
            Opcode::IndirectBuffer => self.buffer(pk[0], pk[2] & 0xF_FFFF, level + 1),
            _ => {}
        }
    }
}

/// Payload counts that are `count` errors, by opcode (the last two in
/// compute mode only).
const BAD_COUNTS: [(Opcode, &[u32]); 9] = [
    (Opcode::SetContextReg, &[0, 1]),
    (Opcode::IndexType, &[0, 2, 3]),
    (Opcode::DrawIndexAuto, &[0, 1, 3]),
    (Opcode::DrawIndexOffset2, &[0, 3, 5]),
    (Opcode::DispatchDirect, &[0, 2, 5]),
    (Opcode::WriteData, &[0, 1, 2, 3]),
    (Opcode::IndirectBuffer, &[0, 2, 4]),
    (Opcode::SetShReg, &[0, 1]),
    (Opcode::ReleaseMem, &[0, 5, 7]),
];

/// Builds a random workload's buffers in execution order (an indirect
/// buffer is built when its packet is), so the index size is known at
/// every draw and a planned error lands at a chosen packet.
struct Gen<'r> {
    rng: &'r mut Rng,
    /// The parameters (compute mode and its capacities).
    p: CmdprocParams,
    state_regs: u32,
    nesting: u32,
    prim_size: u32,
    memory: Vec<(u32, Vec<u32>)>,
    /// Where the next buffer goes.
    cursor: u32,
    /// Dwords left for packets that are not the planned error.
    budget: i64,
    index_size: u32,
    /// The planned error, not yet placed, and the packet (counted in
    /// execution order) at which it goes.
    err: Option<Cause>,
    err_at: u32,
    packets: u32,
    /// Buffers without jumps, draws, index sizes or errors, to call again.
    plain: Vec<(u32, u32)>,
    /// `WRITE_DATA` targets only in [`WRITES`] (apart from all that is read).
    writes_apart: bool,
}

/// Where a workload for `mem_if = axi4` writes: `0xC000_0000 ..
/// 0xF000_0000`, above the buffers (placed from `0x8000_0000 ..
/// 0xB000_0000` on, a few KB at the most) and the primitive buffer (`0x1_0000
/// .. 0x3001_0000` and at most 1 KB more); the indirect buffers at random
/// addresses are empty or errors, never read.
pub const WRITES: (u32, u32) = (0xC000_0000, 0xF000_0000);

impl Gen<'_> {
    fn rand(&mut self) -> u32 {
        self.rng.next_u64() as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.rng.below(n as u64) as u32
    }
    fn rands(&mut self, n: u32, dw: &mut Vec<u32>) {
        for _ in 0..n {
            let v = self.rand();
            dw.push(v);
        }
    }
    /// A type-3 header of `n` payload dwords; sometimes with the ignored
    /// and carried low bits set.
    fn header(&mut self, code: u32, n: u32) -> u32 {
        let low = if self.rng.chance(20) { self.below(256) } else { 0 };
        3 << 30 | (n.wrapping_sub(1) & 0x3FFF) << 16 | (code & 0xFF) << 8 | low
    }
    fn op(&mut self, op: Opcode, n: u32) -> u32 {
        self.header(op.code(), n)
    }
    /// `SET_SH_REG` of `values` from compute register `first` on.
    fn set_sh(&mut self, dw: &mut Vec<u32>, first: usize, values: &[u32]) {
        let h = self.op(Opcode::SetShReg, 1 + values.len() as u32);
        dw.extend([h, sh::offset(first)]);
        dw.extend(values);
    }
    /// The registers of a kernel that fits the capacities: threads,
    /// registers and scratchpad, a program below 2^32 (some of them only,
    /// at random: the others stay as earlier packets left them).
    fn good_kernel(&mut self, dw: &mut Vec<u32>) {
        let p = self.p.clone();
        let t_max = (p.max_threads as u64).min(p.max_regs as u64 / 4).max(1);
        let t = 1 + self.rng.below(t_max.min(64));
        let tx = [t, 1, 1];
        let vg_max = (p.max_regs as u64 / (4 * t)).clamp(1, 64) - 1;
        let vg = self.rng.below(vg_max + 1);
        let lds = self.rng.below((p.max_smem as u64 / 512).min(511) + 1);
        let hi_junk = |g: &mut Self| if g.rng.chance(30) { g.rand() & 0xFFFF_0000 } else { 0 };
        if self.rng.chance(80) {
            let v: Vec<u32> = tx.iter().map(|&x| x as u32 | hi_junk(self)).collect();
            self.set_sh(dw, sh::NUM_THREAD_X, &v);
        }
        if self.rng.chance(80) {
            let r1 = vg as u32 | (self.rand() & !0x3F);
            let r2 = (lds as u32) << 15 | (self.rand() & !(0x1FF << 15));
            self.set_sh(dw, sh::PGM_RSRC1, &[r1, r2]);
        }
        if self.rng.chance(60) {
            let (lo, hi) = (self.below(1 << 24), self.rand() & !0xFF);
            self.set_sh(dw, sh::PGM_LO, &[lo, hi]);
        }
        if self.rng.chance(60) {
            let k = 1 + self.below(16);
            let i0 = self.below(17 - k) as usize;
            let v: Vec<u32> = (0..k).map(|_| self.rand()).collect();
            self.set_sh(dw, sh::USER_DATA_0 + i0, &v);
        }
    }
    /// Compute mode: a kernel (its registers, then a dispatch that passes
    /// its checks), a fence, or registers alone.
    fn compute_packet(&mut self, dw: &mut Vec<u32>) {
        match self.below(10) {
            0..=5 => {
                // Registers that pass, then x y z within the block count.
                self.good_kernel(dw);
                // Some earlier writes may have left a bad kernel: rewrite the
                // checked fields in full.
                if self.rng.chance(70) {
                    let p = self.p.clone();
                    let t = 1 + self.rng.below((p.max_threads as u64).min(p.max_regs as u64 / 4).clamp(1, 64)) as u32;
                    self.set_sh(dw, sh::NUM_THREAD_X, &[t, 1, 1]);
                    self.set_sh(dw, sh::PGM_RSRC1, &[0, 0]);
                    let lo = self.below(1 << 24);
                    self.set_sh(dw, sh::PGM_LO, &[lo, 0]);
                }
                let bmax = ((1u64 << self.p.block_bits) - 1).min(1 << 12);
                let x = match self.below(4) {
                    0 => 0,
                    _ => self.rng.below(bmax + 1) as u32,
                };
                let y = if x > 0 && (x as u64) * 2 <= bmax && self.rng.chance(30) { 2 } else { 1 };
                let init = self.rand();
                let h = self.op(Opcode::DispatchDirect, 4);
                dw.extend([h, x, y, 1, init]);
            }
            6..=8 => {
                let ds = self.below(3);
                let addr = if ds == 2 { self.rand() & !7 } else { self.rand() & !3 };
                let c = ds << 29 | self.below(4) << 24 | (self.rand() & 0x18FF_FFFF);
                let h = self.op(Opcode::ReleaseMem, 6);
                let (ev, d0, d1) = (self.rand(), self.rand(), self.rand());
                dw.extend([h, ev, c, addr, 0, d0, d1]);
            }
            _ => self.good_kernel(dw),
        }
    }
    /// A `WRITE_DATA` address: anywhere, or in [`WRITES`].
    fn write_target(&mut self) -> u32 {
        let r = self.rand();
        if self.writes_apart {
            (WRITES.0 + r % (WRITES.1 - WRITES.0)) & !3
        } else {
            r & !3
        }
    }

    fn place(&mut self, dw: Vec<u32>) -> u32 {
        let gap = if self.rng.chance(30) { 0 } else { self.below(9) };
        let a = self.cursor + 4 * gap;
        self.cursor = a + 4 * dw.len() as u32;
        if !dw.is_empty() {
            self.memory.push((a, dw));
        }
        a
    }

    /// A buffer at `level`: its address and size in dwords. `force`: the
    /// pending error must land in it (or deeper).
    fn buffer(&mut self, level: u32, force: bool) -> (u32, u32) {
        let want = match self.rng.below(8) {
            0 => 0,
            1 => 1,
            _ => 2 + self.below(if level == 0 { 24 } else { 8 }),
        };
        let mut dw = Vec::new();
        let mut plain = true;
        let mut cut = None;
        let mut k = 0;
        loop {
            let pending = self.err.is_some();
            if pending && self.packets >= self.err_at {
                plain = false;
                cut = self.error_packet(level, &mut dw);
                if cut.is_some() {
                    break;
                }
            } else if k < want && self.budget > 0 {
                k += 1;
                plain &= self.packet(level, &mut dw);
            } else if pending && (force || level == 0) {
                self.err_at = self.packets;
            } else {
                break;
            }
        }
        let size = cut.unwrap_or(dw.len() as u32);
        let addr = self.place(dw);
        if plain && level > 0 && size > 0 {
            self.plain.push((addr, size));
        }
        (addr, size)
    }

    /// A packet without error; whether the buffer stays plain.
    fn packet(&mut self, level: u32, dw: &mut Vec<u32>) -> bool {
        self.packets += 1;
        let start = dw.len();
        let plain = match self.below(100) {
            0..=7 => {
                let low = if self.rng.chance(30) { self.rand() & 0x3FFF_FFFF } else { 0 };
                dw.push(0x8000_0000 | low);
                true
            }
            8..=19 => {
                let n = match self.below(6) {
                    0 | 1 => 0,
                    2 => 1 + self.below(4),
                    3 => 5 + self.below(12),
                    4 => 17 + self.below(48),
                    _ if self.budget > 150 => 64 + self.below(100),
                    _ => self.below(8),
                };
                let h = self.op(Opcode::Nop, n);
                dw.push(h);
                self.rands(n, dw);
                true
            }
            20..=33 => {
                let sr = self.state_regs;
                let k = if self.rng.chance(10) { sr.min(40) } else { 1 + self.below(sr.min(12)) };
                let p0 = if self.rng.chance(25) { sr - k } else { self.below(sr - k + 1) };
                let h = self.op(Opcode::SetContextReg, 1 + k);
                dw.extend([h, p0]);
                self.rands(k, dw);
                true
            }
            34..=40 => {
                let v = self.below(2);
                self.index_size = if v == 0 { 2 } else { 4 };
                let h = self.op(Opcode::IndexType, 1);
                dw.extend([h, v]);
                false
            }
            41..=63 if self.p.compute => {
                self.compute_packet(dw);
                true
            }
            41..=47 => {
                let h = self.op(Opcode::DrawIndexAuto, 2);
                dw.push(h);
                self.rands(2, dw);
                true
            }
            48..=63 => {
                let units = self.prim_size / self.index_size;
                let m = (if self.rng.chance(15) { 0 } else { 1 + self.below(40) }).min(units);
                let o = if self.rng.chance(25) { units - m } else { self.below(units - m + 1) };
                let max_size = if self.rng.chance(50) { m } else { self.rand() };
                let (h, init) = (self.op(Opcode::DrawIndexOffset2, 4), self.rand());
                dw.extend([h, max_size, o, m, init]);
                false
            }
            64..=69 => {
                let h = self.op(Opcode::DispatchDirect, 4);
                dw.push(h);
                self.rands(4, dw);
                true
            }
            70..=79 => {
                let d = 1 + self.below(8);
                let (h, control) = (self.op(Opcode::WriteData, 3 + d), self.rand());
                let addr = self.write_target();
                dw.extend([h, control, addr, 0]);
                self.rands(d, dw);
                true
            }
            _ if level < self.nesting => {
                let (a, s) = match self.below(10) {
                    0 => (self.rand() & !3, 0),
                    1 | 2 if !self.plain.is_empty() => *self.rng.pick(&self.plain),
                    _ => self.buffer(level + 1, false),
                };
                let hi = if self.rng.chance(20) { self.rand() << 20 } else { 0 };
                let h = self.op(Opcode::IndirectBuffer, 3);
                dw.extend([h, a, 0, s | hi]);
                false
            }
            _ => {
                dw.push(self.op(Opcode::Nop, 0));
                true
            }
        };
        self.budget -= (dw.len() - start) as i64;
        plain
    }

    /// The planned error's packet. For `overrun`, the buffer's size: it
    /// ends inside the packet.
    fn error_packet(&mut self, level: u32, dw: &mut Vec<u32>) -> Option<u32> {
        let cause = self.err?;
        self.packets += 1;
        if cause == Cause::Nesting && level < self.nesting {
            // Go one level deeper; the error lands there (or deeper).
            self.err_at = self.packets + self.below(3);
            let (a, s) = self.buffer(level + 1, true);
            let h = self.op(Opcode::IndirectBuffer, 3);
            dw.extend([h, a, 0, s]);
            return None;
        }
        self.err = None;
        match cause {
            Cause::Type => {
                let v = self.rand() & 0x7FFF_FFFF;
                dw.push(v);
            }
            Cause::Opcode => {
                let known = |c: u32, p: &CmdprocParams| Opcode::from_code(c).is_some_and(|o| o.known(p));
                let code = loop {
                    let c = if !self.p.compute && self.rng.chance(30) { *self.rng.pick(&[0x76, 0x49]) } else { self.below(256) };
                    if !known(c, &self.p) {
                        break c;
                    }
                };
                let n = self.below(6);
                let h = self.header(code, n);
                dw.push(h);
                self.rands(n, dw);
            }
            Cause::Count => {
                let n_ops = if self.p.compute { BAD_COUNTS.len() } else { BAD_COUNTS.len() - 2 };
                let (op, counts) = BAD_COUNTS[self.below(n_ops as u32) as usize];
                let n = *self.rng.pick(counts);
                let h = self.op(op, n);
                dw.push(h);
                self.rands(n, dw);
            }
            Cause::Overrun => {
                let (op, n) = match self.below(8) {
                    0 => (Opcode::Nop, 0x3FFF),
                    1 => (Opcode::SetContextReg, 2 + self.below(5)),
                    2 => (Opcode::IndexType, 1),
                    3 => (Opcode::DrawIndexOffset2, 4),
                    4 => (Opcode::WriteData, 4 + self.below(5)),
                    5 => (Opcode::IndirectBuffer, 3),
                    _ => (Opcode::Nop, 1 + self.below(12)),
                };
                let start = dw.len() as u32;
                let h = self.op(op, n);
                dw.push(h);
                let held = n.min(16);
                self.rands(held, dw);
                return Some(start + 1 + self.below(held));
            }
            Cause::Nesting => {
                let (h, a, s) = (self.op(Opcode::IndirectBuffer, 3), self.rand() & !3, self.below(16));
                dw.extend([h, a, 0, s]);
            }
            Cause::StateRange => {
                let (sr, k) = (self.state_regs, 1 + self.below(8));
                let min_bad = (sr + 1).saturating_sub(k);
                let p0 = match self.below(3) {
                    0 => min_bad,
                    1 => min_bad + self.below(8),
                    _ => u32::MAX - self.below(k),
                };
                let h = self.op(Opcode::SetContextReg, 1 + k);
                dw.extend([h, p0]);
                self.rands(k, dw);
            }
            Cause::Field if self.p.compute && self.rng.chance(50) => {
                if self.rng.chance(50) {
                    // A dispatch: no threads, a dimension above 2^16, too
                    // many blocks, or a program above 2^32.
                    self.good_kernel(dw);
                    let bb = self.p.block_bits;
                    let (mut x, mut y, mut z) = (1u32, 1u32, 1u32);
                    match self.below(4) {
                        0 => {
                            let which = self.below(3) as usize;
                            let mut t = [1u32, 1, 1];
                            t[which] = self.rand() & 0xFFFF_0000;
                            self.set_sh(dw, sh::NUM_THREAD_X, &t);
                        }
                        1 => {
                            let d = (1 << 16) + 1 + self.below(8);
                            match self.below(3) {
                                0 => x = d,
                                1 => y = d,
                                _ => z = self.rand() | 1 << 20,
                            }
                        }
                        2 => {
                            // x y z = 2^bb exactly, or just above.
                            x = 1 << bb.min(16);
                            y = 1 << (bb - bb.min(16));
                            z = 1 + self.below(2);
                        }
                        _ => {
                            if self.rng.chance(50) {
                                let lo = self.rand() | 1 << (24 + self.below(8));
                                self.set_sh(dw, sh::PGM_LO, &[lo, 0]);
                            } else {
                                let hi = 1 + self.below(255);
                                self.set_sh(dw, sh::PGM_HI, &[hi]);
                            }
                        }
                    }
                    let h = self.op(Opcode::DispatchDirect, 4);
                    let init = self.rand();
                    dw.extend([h, x, y, z, init]);
                } else {
                    // A fence: address hi, alignment, DATA_SEL, INT_SEL.
                    let (mut ds, mut is, mut addr, mut hi) = (self.below(3), self.below(4), self.rand() & !7, 0u32);
                    match self.below(5) {
                        0 => hi = 1 + self.rand() % 0xFFFF_FFFF,
                        1 => addr |= 1 + self.below(3),
                        2 => {
                            ds = 2;
                            addr |= 4;
                        }
                        3 => ds = 3 + self.below(5),
                        _ => is = 4 + self.below(4),
                    }
                    let h = self.op(Opcode::ReleaseMem, 6);
                    let (ev, d0, d1) = (self.rand(), self.rand(), self.rand());
                    dw.extend([h, ev, ds << 29 | is << 24 | (self.rand() & 0x18FF_FFFF), addr, hi, d0, d1]);
                }
            }
            Cause::Field => {
                let hi_bad = |g: &mut Self| g.rand() | 1 << g.below(32);
                let lo_bad = |g: &mut Self| (g.rand() & !3) | (1 + g.below(3));
                match self.below(if level < self.nesting { 3 } else { 2 }) {
                    0 => {
                        let v = match self.below(3) {
                            0 => 2,
                            1 => 2 + self.below(1000),
                            _ => self.rand() | 2,
                        };
                        let h = self.op(Opcode::IndexType, 1);
                        dw.extend([h, v]);
                    }
                    1 => {
                        let d = 1 + self.below(4);
                        let (a, hi) = if self.rng.chance(50) { (self.rand() & !3, hi_bad(self)) } else { (lo_bad(self), 0) };
                        let (h, control) = (self.op(Opcode::WriteData, 3 + d), self.rand());
                        dw.extend([h, control, a, hi]);
                        self.rands(d, dw);
                    }
                    _ => {
                        let (a, hi) = if self.rng.chance(50) { (self.rand() & !3, hi_bad(self)) } else { (lo_bad(self), 0) };
                        let (h, s) = (self.op(Opcode::IndirectBuffer, 3), self.below(16));
                        dw.extend([h, a, hi, s]);
                    }
                }
            }
            Cause::ShRange => {
                // Across two runs, an offset of no register, past the SH
                // space, or one past a run's end.
                let (p0, k) = match self.below(5) {
                    0 => (0x209, 2),
                    1 => (0x20D, 2 + self.below(4)),
                    2 => (*self.rng.pick(&[0x200u32, 0x204, 0x20A, 0x20E, 0x211, 0x214, 0x23F, 0x250, 0x3FF]), 1 + self.below(3)),
                    3 => (0x240 + self.below(16), 17),
                    _ => (0x400 + self.below(0x1000), 1),
                };
                let h = self.op(Opcode::SetShReg, 1 + k);
                dw.extend([h, p0]);
                self.rands(k, dw);
            }
            Cause::Need => {
                // Threads, registers or scratchpad one past (or far past) the
                // capacity, with good fields.
                let p = self.p.clone();
                let (mut t, mut vg, mut lds) = (1u64, 0u64, 0u64);
                match self.below(3) {
                    0 => t = (p.max_threads as u64 + 1 + self.below(3) as u64).min(65535),
                    1 => {
                        vg = self.below(64) as u64;
                        t = (p.max_regs as u64 / (4 * (vg + 1)) + 1).min(65535);
                    }
                    _ => lds = (p.max_smem as u64 / 512 + 1).min(511),
                }
                let t_ok = t <= p.max_threads as u64 && 4 * t * (vg + 1) <= p.max_regs as u64 && 512 * lds <= p.max_smem as u64;
                if t_ok {
                    // The capacity is beyond what the fields can ask (e.g.
                    // max_smem above 511 x 512): a draw instead.
                    let h = self.op(Opcode::DrawIndexAuto, 2);
                    dw.extend([h, 3, 2]);
                } else {
                    self.set_sh(dw, sh::NUM_THREAD_X, &[t as u32, 1, 1]);
                    self.set_sh(dw, sh::PGM_RSRC1, &[vg as u32, (lds as u32) << 15]);
                    let lo = self.below(1 << 24);
                    self.set_sh(dw, sh::PGM_LO, &[lo, 0]);
                    let h = self.op(Opcode::DispatchDirect, 4);
                    let init = self.rand();
                    dw.extend([h, 1, 1, 1, init]);
                }
            }
            Cause::Graphics => {
                if self.rng.chance(50) {
                    let h = self.op(Opcode::DrawIndexAuto, 2);
                    dw.push(h);
                    self.rands(2, dw);
                } else {
                    let (h, init) = (self.op(Opcode::DrawIndexOffset2, 4), self.rand());
                    let (o, m) = (self.rand(), self.rand());
                    dw.extend([h, 0, o, m, init]);
                }
            }
            // Raised by the pipeline port (`kerr`), never planned as a packet.
            Cause::Kernel => unreachable!("kernel is not a packet error"),
            Cause::PrimRange => {
                let s = self.index_size;
                let units = self.prim_size / s;
                let (o, m) = match self.below(4) {
                    0 => {
                        let m = 1 + self.below(40);
                        ((units + 1).saturating_sub(m) + self.below(3), m)
                    }
                    1 => (units + 1 + self.below(4), 0),
                    // (o + m) * s is 2^32 or just above: small in 32 bits.
                    2 => {
                        let m = 1 + self.below(40);
                        (((1u64 << 32) / s as u64) as u32 - m + self.below(2), m)
                    }
                    _ => (0, 0x8000_0000 | self.rand()),
                };
                let (h, max_size, init) = (self.op(Opcode::DrawIndexOffset2, 4), self.rand(), self.rand());
                dw.extend([h, max_size, o, m, init]);
            }
        }
        None
    }
}

/// A random workload that reaches every path of docs/cmdproc.md: all eight
/// opcodes, fillers, one-dword and long NOPs, context register writes of
/// one to many values (up to the table's end), both index sizes, draws of
/// 0..40 indices anywhere in the primitive buffer (up to its end), writes
/// of 1..8 dwords, indirect buffers nested up to `p.nesting` (called again,
/// empty, anywhere), buffers at any dword address and of any size, empty
/// main buffers; and in about one run in three an error of a random cause
/// (every cause: type, opcode, count, overrun, nesting, state_range, field,
/// prim_range, including values that wrap in 32 bits). Tens to a few
/// hundred dwords.
///
/// With `p.mem_if = axi4` the memory is one, and the run's writes change
/// it while the model reads it as at the doorbell: every `WRITE_DATA` that
/// writes then targets [`WRITES`], a region that holds none of the
/// workload's memory runs and no beat the run reads (the same workloads
/// otherwise: one random draw either way).
pub fn random_workload(rng: &mut Rng, p: &CmdprocParams, mem_latency: u32) -> Workload {
    let prim_base = (0x0001_0000 + rng.below(0x3000_0000)) as u32 & !3;
    let prim_size = match rng.below(8) {
        0 => 0,
        1 => rng.below(8),
        2 => 4 * rng.below(64),
        _ => 1 + rng.below(256),
    } as u32;
    let prim_len = prim_size.div_ceil(4) + rng.below(3) as u32;
    let mut memory = Vec::new();
    if prim_len > 0 {
        memory.push((prim_base, (0..prim_len).map(|_| rng.next_u64() as u32).collect()));
    }
    // Every cause of the mode (`prim_range` is none in compute mode: a draw
    // is `graphics` first); `field` (three packets have fields) twice as often.
    let causes: Vec<Cause> = [Cause::ALL.as_slice(), &[Cause::Field]]
        .concat()
        .into_iter()
        .filter(|c| *c != Cause::Kernel && if p.compute { *c != Cause::PrimRange } else { !c.compute_only() })
        .collect();
    let err = if rng.chance(35) { Some(*rng.pick(&causes)) } else { None };
    let err_at = rng.below(25) as u32;
    let cursor = (0x8000_0000 + rng.below(0x3000_0000)) as u32 & !3;
    let budget = 40 + rng.below(300) as i64;
    let mut g = Gen {
        rng,
        p: p.clone(),
        state_regs: p.state_regs,
        nesting: p.nesting,
        prim_size,
        memory,
        cursor,
        budget,
        index_size: 4,
        err,
        err_at,
        packets: 0,
        plain: Vec::new(),
        writes_apart: p.mem_if == MemIf::Axi4,
    };
    let (cmd_base, size) = g.buffer(0, true);
    let sr = p.state_regs as u64;
    let values = if g.rng.chance(20) { sr } else { g.rng.below(sr + 1) };
    let state = (0..values).map(|_| g.rand()).collect();
    let registers = Registers {
        cmd_base,
        cmd_size: 4 * size,
        prim_base,
        prim_size,
        state,
        state_ptr: g.rand(),
        irq_enable: g.below(4),
    };
    Workload { pipeline: Default::default(), registers, memory: g.memory, mem_latency }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpurtl_params::BlockParams;
    use std::collections::BTreeSet;

    /// With `mem_if = axi4`, no dword the model writes lies in a beat that
    /// holds any of the workload's memory (everything a run can read), and
    /// the writes are there to be kept apart.
    #[test]
    fn axi4_workloads_write_apart_from_what_they_read() {
        for (_, p) in CmdprocParams::presets() {
            let p = CmdprocParams { mem_if: MemIf::Axi4, ..p };
            let bb = (p.fetch_bits / 8) as u64;
            let mut writes = 0;
            for seed in 0..SEEDS {
                let w = random_workload(&mut Rng::new(seed), &p, 3);
                let spans: Vec<(u64, u64)> = w.memory.iter().map(|(a, d)| (*a as u64 / bb * bb, (*a as u64 + 4 * d.len() as u64).div_ceil(bb) * bb)).collect();
                for (a, d) in crate::models::cmdproc::run(&p, &w).memory_writes {
                    for k in 0..d.len() as u64 {
                        let at = a as u64 + 4 * k;
                        assert!((WRITES.0 as u64..WRITES.1 as u64 + 64).contains(&at), "seed {seed}: a write at {at:#x}");
                        assert!(!spans.iter().any(|s| (s.0..s.1).contains(&at)), "seed {seed}: a write at {at:#x} in a beat read");
                        writes += 1;
                    }
                }
            }
            assert!(writes > SEEDS, "{writes} dwords written");
        }
    }

    const SEEDS: u64 = 300;

    /// Over a few hundred seeds, at each preset (and one with the deepest
    /// nesting and a one-register table), the random workloads are well
    /// formed, short, and reach every opcode, every error cause and the
    /// other paths `random_workload` promises.
    #[test]
    fn random_workloads_reach_every_path() {
        let mut points: Vec<CmdprocParams> = CmdprocParams::presets().into_iter().map(|(_, p)| p).collect();
        points.push(CmdprocParams { nesting: 3, state_regs: 1, id_bits: 4, ..CmdprocParams::default() });
        for p in &points {
            let mut seen = BTreeSet::new();
            let mut errors = 0;
            for seed in 0..SEEDS {
                let mut rng = Rng::new(seed);
                let w = random_workload(&mut rng, p, 1 + (seed % 7) as u32);
                // Well formed: aligned runs that do not overlap, registers that fit.
                let mut runs: Vec<(u64, u64)> = w.memory.iter().map(|(a, d)| (*a as u64, *a as u64 + 4 * d.len() as u64)).collect();
                runs.sort();
                assert!(runs.iter().all(|r| r.0 % 4 == 0 && r.1 <= 1 << 32), "seed {seed}: runs {runs:x?}");
                assert!(runs.windows(2).all(|x| x[0].1 <= x[1].0), "seed {seed}: overlapping runs {runs:x?}");
                let r = &w.registers;
                assert!(r.cmd_base.is_multiple_of(4) && r.cmd_size.is_multiple_of(4) && r.prim_base.is_multiple_of(4) && r.irq_enable < 4);
                assert!(r.state.len() <= p.state_regs as usize);
                let k = walk(p, &w);
                assert!(k.dwords < 3000, "seed {seed}: {} dwords", k.dwords);
                let err = ["type", "opcode", "count", "overrun", "nesting", "state_range", "prim_range"];
                if k.features.iter().any(|f| err.contains(f) || f.starts_with("field")) {
                    errors += 1;
                }
                seen.extend(k.features);
            }
            // Every opcode the mode knows (in compute mode a draw is the
            // `graphics` error, seen by the cosimulation's causes).
            let mut want: Vec<&str> = Opcode::ALL.iter().filter(|o| o.known(p) && !(p.compute && o.is_draw())).map(|o| o.name()).collect();
            want.extend(["filler", "one-dword NOP", "long NOP", "empty buffer", "type", "opcode", "count", "overrun", "nesting", "state_range", "field: INDEX_TYPE", "field: WRITE_DATA"]);
            if !p.compute {
                want.extend(["draw of no indices", "draw of 16-bit indices", "draw of 32-bit indices", "prim_range"]);
            }
            if p.state_regs > 1 {
                want.push("SET_CONTEXT_REG of several values");
            }
            if p.fetch_bits > 32 {
                want.push("unaligned buffer");
            }
            if p.nesting > 0 {
                want.extend(["field: INDIRECT_BUFFER", "deepest buffer"]);
            }
            for f in want {
                assert!(seen.contains(f), "{p:?}: no workload of {SEEDS} has {f:?}; seen {seen:?}");
            }
            assert!((SEEDS / 5..=SEEDS / 2).contains(&errors), "{p:?}: {errors} of {SEEDS} workloads have an error");
        }
    }
}
