//! The host side of the command processor: the AXI4-Lite transactions a
//! driver makes (programming the registers, ringing the doorbell, reading
//! the results) on the generic [`LiteMaster`], the registers as written,
//! and the checks of what the register slave gives back.

use super::driver::{CmdprocDriver, RunObs};
use super::bit;
use crate::tb::agents::LiteOp;
use crate::cosim::Sim;
use gpurtl_params::cmdproc::{reg, Cause, CmdprocParams};

/// A register transaction, as the testbench plans it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Write { addr: u32, data: u32, strb: u32 },
    /// A doorbell presented only in a cycle in which `busy_o` is 1 (and so
    /// taken in that cycle); dropped once the run has ended.
    ExtraDoorbell { data: u32, strb: u32 },
    Read { addr: u32 },
}

pub(super) fn write(addr: u32, data: u32) -> Op {
    Op::Write { addr, data, strb: 0xF }
}

/// The master's transaction for `op`.
pub(super) fn lite(op: Op) -> LiteOp {
    match op {
        Op::Write { addr, data, strb } => LiteOp::Write { addr: addr as u64, data: data as u64, strb: strb as u64 },
        Op::ExtraDoorbell { data, strb } => LiteOp::GatedWrite { addr: reg::DOORBELL as u64, data: data as u64, strb: strb as u64 },
        Op::Read { addr } => LiteOp::Read { addr: addr as u64 },
    }
}

/// What a read must give, fixed in the cycle of its address handshake.
pub(super) struct ReadCtx {
    addr: u32,
    busy: bool,
    irq: bool,
    traces: u64,
    ignored: u64,
    irq_enable: u32,
    /// The value of an `rw` register, or 0 for `DOORBELL` and unmapped offsets.
    expect: Option<u32>,
}

/// The mask of an `rw` register's bits, `None` for other offsets.
fn rw_mask(p: &CmdprocParams, off: u32) -> Option<u32> {
    match off {
        reg::CMD_BASE | reg::CMD_SIZE | reg::PRIM_BASE => Some(!3),
        reg::PRIM_SIZE | reg::STATE_PTR => Some(!0),
        reg::IRQ_ENABLE => Some(3),
        o if o >= reg::STATE_INIT && o < reg::STATE_INIT + 4 * p.state_regs && o % 4 == 0 => Some(!0),
        _ => None,
    }
}

/// A word-aligned offset that no register uses (reads 0, ignores writes).
fn unmapped(p: &CmdprocParams, off: u32) -> bool {
    off.is_multiple_of(4) && !(off < 0x38 || (reg::STATE_INIT..reg::STATE_INIT + 4 * p.state_regs).contains(&off))
}

fn reg_name(off: u32) -> String {
    let name = match off {
        reg::CMD_BASE => "CMD_BASE",
        reg::CMD_SIZE => "CMD_SIZE",
        reg::PRIM_BASE => "PRIM_BASE",
        reg::PRIM_SIZE => "PRIM_SIZE",
        reg::STATE_PTR => "STATE_PTR",
        reg::DOORBELL => "DOORBELL",
        reg::STATUS => "STATUS",
        reg::ERR_CAUSE => "ERR_CAUSE",
        reg::ERR_ADDR => "ERR_ADDR",
        reg::IRQ_ENABLE => "IRQ_ENABLE",
        reg::IRQ_STATUS => "IRQ_STATUS",
        reg::CMD_COUNT => "CMD_COUNT",
        reg::BUSY_CYCLES => "BUSY_CYCLES",
        reg::IGNORED => "IGNORED",
        o if o >= reg::STATE_INIT => return format!("STATE_INIT[{}] (0x{o:02x})", (o - reg::STATE_INIT) / 4),
        o => return format!("offset 0x{o:02x}"),
    };
    name.to_string()
}


impl CmdprocDriver {
    /// The registers' programming for the workload: the values (in a
    /// random order under an environment, one register in three parts with
    /// random strobes, writes that must change nothing), `IRQ_STATUS`
    /// cleared, some read back, `IRQ_STATUS` read last.
    pub(super) fn program(&mut self) {
        let w = &self.w;
        let r = w.registers.clone();
        let sr = self.p.state_regs;
        let mut groups: Vec<Vec<Op>> = [
            (reg::CMD_BASE, r.cmd_base),
            (reg::CMD_SIZE, r.cmd_size),
            (reg::PRIM_BASE, r.prim_base),
            (reg::PRIM_SIZE, r.prim_size),
            (reg::STATE_PTR, r.state_ptr),
            (reg::IRQ_ENABLE, r.irq_enable),
        ]
        .into_iter()
        .chain((0..sr).map(|i| (reg::STATE_INIT + 4 * i, r.state.get(i as usize).copied().unwrap_or(0))))
        .map(|(a, v)| vec![write(a, v)])
        .collect();
        let mut reads = vec![reg::CMD_BASE, reg::PRIM_SIZE, reg::STATE_INIT + 4 * (sr - 1)];
        if self.env.is_some() {
            // One register written in three parts, the middle one with
            // random strobes; the read between them checks the strobes.
            let g = self.rng.below(groups.len() as u64) as usize;
            if let Op::Write { addr, data, .. } = groups[g][0] {
                let strb = self.rng.below(16) as u32;
                let j = self.junk.next_u64() as u32;
                groups[g] = vec![write(addr, j), Op::Write { addr, data, strb }, Op::Read { addr }, Op::Write { addr, data, strb: !strb & 0xF }];
            }
            // Writes that must change nothing: an unmapped offset, a
            // read-only register, a doorbell write that is not a doorbell.
            let (j, k) = (self.junk.next_u64(), self.junk.next_u64());
            let un = self.pick_unmapped();
            groups.push(vec![Op::Write { addr: un, data: j as u32, strb: (j >> 32) as u32 & 0xF }]);
            let ro = *self.rng.pick(&[reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IGNORED]);
            groups.push(vec![write(ro, k as u32)]);
            let not_bell = if self.rng.chance(50) {
                Op::Write { addr: reg::DOORBELL, data: (j as u32 & !0xFF) | 1, strb: self.rng.below(8) as u32 * 2 }
            } else {
                let low = *self.rng.pick(&[0, 2, 3, 0x11, 0x81, 0xFF]);
                write(reg::DOORBELL, ((k >> 32) as u32 & !0xFF) | low)
            };
            groups.push(vec![not_bell]);
            self.shuffle(&mut groups);
            reads.clear();
            for _ in 0..6 + sr {
                if self.rng.chance(30) {
                    let a = self.pick_rw();
                    reads.push(a);
                }
            }
            reads.extend([reg::DOORBELL, reg::STATUS, reg::CMD_COUNT, reg::IGNORED, reg::ERR_CAUSE]);
            reads.push(self.pick_unmapped());
            self.shuffle(&mut reads);
        }
        let mut ops: Vec<Op> = groups.into_iter().flatten().collect();
        ops.push(write(reg::IRQ_STATUS, reg::IRQ_DONE | reg::IRQ_ERROR));
        ops.extend(reads.iter().map(|&addr| Op::Read { addr }));
        ops.push(Op::Read { addr: reg::IRQ_STATUS });
        for op in ops {
            self.host.push(lite(op));
        }
    }

    /// The doorbell, then (maybe) more while busy and reads on the way.
    pub(super) fn ring(&mut self) {
        // The run's pipeline draws start at its first busy cycle.
        let pl = &self.w.pipeline;
        self.pipe.borrow_mut().stalls = (pl.stall > 0.0).then(|| pl.stalls());
        let extra = self.extra;
        let (data, strb) = self.doorbell();
        self.host.push(lite(Op::Write { addr: reg::DOORBELL, data, strb }));
        let mut during = Vec::new();
        if extra {
            for _ in 0..2 + self.rng.below(3) {
                let (data, strb) = self.doorbell();
                during.push(Op::ExtraDoorbell { data, strb });
            }
        }
        if self.env.is_some() {
            for _ in 0..self.rng.below(4) {
                let addr = match self.rng.below(8) {
                    0 => self.pick_rw(),
                    1 => reg::DOORBELL,
                    2 => reg::IRQ_STATUS,
                    3 => reg::IGNORED,
                    4 | 5 => reg::CMD_COUNT,
                    _ => reg::STATUS,
                };
                during.push(Op::Read { addr });
            }
            self.shuffle(&mut during);
        }
        for op in during {
            self.host.push(lite(op));
        }
    }

    /// The result registers, read after the run.
    pub(super) fn read_results(&mut self) {
        let mut finals =
            vec![reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IRQ_STATUS, reg::IGNORED];
        if self.env.is_some() {
            self.shuffle(&mut finals);
        }
        for addr in finals {
            self.host.push(lite(Op::Read { addr }));
        }
    }

    /// The register slave's handshake rules (docs/cmdproc.md), before the
    /// master records this cycle's handshakes: `awready` = `wready` =
    /// `awvalid & wvalid & !bvalid`, `arready` = `!rvalid`, `bvalid` and
    /// `rvalid` exactly while a response is owed.
    pub(super) fn check_slave(&self, sim: &Sim) -> Result<(), String> {
        let io = &self.io;
        let g = |h| bit(sim, h);
        let (awv, awr, wv, wr, bv) = (g(io.awvalid), g(io.awready), g(io.wvalid), g(io.wready), g(io.bvalid));
        let (arr, rv) = (g(io.arready), g(io.rvalid));
        let want_w = awv && wv && !bv;
        if awr != want_w || wr != want_w {
            return Err(format!(
                "s_axi_awready {} s_axi_wready {}; both must be awvalid & wvalid & !bvalid = {}",
                awr as u8, wr as u8, want_w as u8
            ));
        }
        if arr == rv {
            return Err(format!("s_axi_arready {} with s_axi_rvalid {}; it must be !rvalid", arr as u8, rv as u8));
        }
        if bv != self.host.b_owed() {
            return Err(if bv { "s_axi_bvalid without a write to answer" } else { "s_axi_bvalid is 0 while a write response is owed" }.into());
        }
        if rv != self.host.r_owed() {
            return Err(if rv { "s_axi_rvalid without a read to answer" } else { "s_axi_rvalid is 0 while read data is owed" }.into());
        }
        Ok(())
    }

    /// The handshakes the master saw this cycle: a read's data checked, a
    /// write applied to the registers as written, a read's expectations
    /// fixed.
    pub(super) fn host_events(&mut self, sim: &Sim, now: u64, busy: bool) -> Result<(), String> {
        let ev = self.host.events();
        if let Some((_, v)) = ev.data {
            let ctx = self.r_ctx.take().expect("a read owed");
            self.check_read(&ctx, v as u32)?;
        }
        if let Some((addr, data, strb, gated)) = ev.write {
            self.on_reg_write(now, busy, addr as u32, data as u32, strb as u32, gated)?;
        }
        if let Some(addr) = ev.read {
            let addr = addr as u32;
            let expect = match rw_mask(&self.p, addr) {
                Some(_) => Some(self.shadow[addr as usize / 4]),
                None if addr == reg::DOORBELL || unmapped(&self.p, addr) => Some(0),
                None => None,
            };
            self.r_ctx = Some(ReadCtx {
                addr,
                busy,
                irq: bit(sim, self.io.irq),
                traces: self.run.traces.len() as u64,
                ignored: self.ignored,
                irq_enable: self.shadow[reg::IRQ_ENABLE as usize / 4],
                expect,
            });
        }
        Ok(())
    }

    /// A write taken by the slave at the edge ending `now`.
    pub(super) fn on_reg_write(&mut self, now: u64, busy: bool, addr: u32, data: u32, strb: u32, extra: bool) -> Result<(), String> {
        if let Some(m) = rw_mask(&self.p, addr) {
            let bytes = (0..4).filter(|b| strb >> b & 1 == 1).fold(0u32, |acc, b| acc | 0xFF << (8 * b));
            let i = addr as usize / 4;
            self.shadow[i] = ((self.shadow[i] & !bytes) | (data & bytes)) & m;
        }
        if addr == reg::DOORBELL && strb & 1 == 1 && data & 0xFF == 1 {
            if busy {
                self.ignored += 1;
            } else if extra {
                return Err("an extra doorbell presented while busy_o was 1 was taken with busy_o 0".into());
            } else {
                let sr = self.p.state_regs as usize;
                let sh = &self.shadow;
                self.log_at = self.log.as_ref().map_or(0, |(l, _)| l.borrow().len());
                self.run = RunObs {
                    doorbell: now,
                    prim_base: sh[reg::PRIM_BASE as usize / 4],
                    prim_size: sh[reg::PRIM_SIZE as usize / 4],
                    state_ptr: sh[reg::STATE_PTR as usize / 4],
                    init: sh[reg::STATE_INIT as usize / 4..][..sr].to_vec(),
                    index_size: 4,
                    ..RunObs::default()
                };
                self.runs += 1;
                self.start_at = Some(now + 1);
            }
        }
        Ok(())
    }

    pub(super) fn check_read(&self, ctx: &ReadCtx, v: u32) -> Result<(), String> {
        let name = reg_name(ctx.addr);
        if let Some(e) = ctx.expect {
            if v != e {
                return Err(format!("read of {name} gave 0x{v:08x}, expected 0x{e:08x}"));
            }
        }
        let ok = match ctx.addr {
            reg::STATUS if ctx.busy && self.wr.is_some() => v == reg::STATUS_BUSY,
            // Through AXI4 busy_o also waits for the writes' responses.
            reg::STATUS if ctx.busy => v == reg::STATUS_BUSY || v == reg::STATUS_DONE || v == reg::STATUS_ERROR,
            reg::STATUS => v == 0 || v == reg::STATUS_DONE || v == reg::STATUS_ERROR,
            reg::IRQ_STATUS => v <= 3 && ctx.irq == (v & ctx.irq_enable != 0),
            reg::CMD_COUNT => v as u64 == ctx.traces & 0xFFFF_FFFF,
            reg::IGNORED => v as u64 == ctx.ignored & 0xFFFF_FFFF,
            reg::ERR_CAUSE => v == 0 || Cause::from_code(v).is_some(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "read of {name} gave 0x{v:08x} with busy_o {}, irq_o {}, IRQ_ENABLE {}, {} commands committed, {} doorbells ignored",
                ctx.busy as u8, ctx.irq as u8, ctx.irq_enable, ctx.traces, ctx.ignored
            ));
        }
        Ok(())
    }

    pub(super) fn pick_rw(&mut self) -> u32 {
        let fixed = [reg::CMD_BASE, reg::CMD_SIZE, reg::PRIM_BASE, reg::PRIM_SIZE, reg::STATE_PTR, reg::IRQ_ENABLE];
        let n = fixed.len() as u64 + self.p.state_regs as u64;
        match self.rng.below(n) as usize {
            i if i < fixed.len() => fixed[i],
            i => reg::STATE_INIT + 4 * (i - fixed.len()) as u32,
        }
    }

    pub(super) fn pick_unmapped(&mut self) -> u32 {
        let top = 1u64 << self.p.axi_addr_bits();
        let first = (reg::STATE_INIT + 4 * self.p.state_regs) as u64;
        if first < top && self.rng.chance(50) {
            (first + 4 * self.rng.below((top - first) / 4)) as u32
        } else {
            *self.rng.pick(&[0x38, 0x3C])
        }
    }

    pub(super) fn shuffle<T>(&mut self, v: &mut [T]) {
        self.rng.shuffle(v);
    }

    /// The doorbell value: strobe 0 set and `wdata[7:0] = 1`.
    pub(super) fn doorbell(&mut self) -> (u32, u32) {
        match self.env {
            Some(_) => ((self.junk.next_u64() as u32 & !0xFF) | 1, 1 | (self.rng.below(16) as u32 & 0xE)),
            None => (1, 0xF),
        }
    }

}
