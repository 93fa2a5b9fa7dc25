//! The AXI4-Lite register file (docs/cmdproc.md, Registers): the
//! descriptor and initial state the driver writes, the doorbell that starts
//! a run, the status and interrupt a run leaves, reads of all of them; and
//! the descriptor as latched at the doorbell.

use super::decoder::{Decoder, Fences};
use crate::rtl::{select, Expr, ModuleBuilder};
use gpurtl_params::cmdproc::{reg, Cause, CmdprocParams};

/// The AXI4-Lite slave ports.
pub(super) struct Axi {
    pub awvalid: Expr,
    pub awready: Expr,
    pub awaddr: Expr,
    pub wvalid: Expr,
    pub wready: Expr,
    pub wdata: Expr,
    pub wstrb: Expr,
    pub bvalid_o: Expr,
    pub bready: Expr,
    pub bresp: Expr,
    pub arvalid: Expr,
    pub arready: Expr,
    pub araddr: Expr,
    pub rvalid_o: Expr,
    pub rready: Expr,
    pub rdata_o: Expr,
    pub rresp: Expr,
}

/// The registers the rest of the unit reads or a run updates.
pub(super) struct Regs {
    wfire: Expr,
    wword: Expr,
    pub cmd_base: Expr,
    pub cmd_size: Expr,
    pub state_init: Vec<Expr>,
    /// A doorbell while idle: the run starts.
    pub start: Expr,
    pub busy: Expr,
    st_error: Expr,
    st_done: Expr,
    err_cause: Expr,
    err_addr: Expr,
    irq_st: Expr,
    pub cmd_count: Expr,
    /// The descriptor as latched at the doorbell.
    pub d_prim_base: Expr,
    pub d_prim_size: Expr,
    pub d_state_ptr: Expr,
}

/// The write enable of the register at byte offset `off`.
fn we_at(b: &mut ModuleBuilder, wfire: &Expr, wword: &Expr, off: u32) -> Expr {
    b.let_(&format!("axi_we_{off:02x}"), &wfire.and(&wword.eq_lit((off / 4) as u64)))
}

impl Regs {
    /// The registers behind `axi`; `busy_o` and `irq_o` are driven here.
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, axi: &Axi, busy_o: &Expr, irq_o: &Expr) -> Regs {
        let Axi { awvalid, awready, awaddr, wvalid, wready, wdata, wstrb, bvalid_o, bready, bresp, arvalid, arready, araddr, rvalid_o, rready, rdata_o, rresp } = axi;
        let aw = p.axi_addr_bits();
        let sr = p.state_regs;
        let word = |a: &Expr| a.slice(aw - 1, 2);
        b.waive_unused(awaddr, "bits [1:0]: registers are whole 32-bit words (the strobes select bytes)");
        b.waive_unused(araddr, "bits [1:0]: registers are whole 32-bit words");
        let ww = aw - 2;
        let bvalid = b.reg("bvalid_q", 1, 0);
        let wfire = b.let_("axi_wfire", &awvalid.and(wvalid).and(&bvalid.not()));
        b.assign(awready, &wfire);
        b.assign(wready, &wfire);
        b.next(&bvalid, &wfire.or(&bvalid.and(&bready.not())), None);
        b.assign(bvalid_o, &bvalid);
        b.assign(bresp, &Expr::zero(2));
        let wword = b.let_("axi_wword", &word(awaddr));
        let write_to = |b: &mut ModuleBuilder, off: u32| -> Expr { we_at(b, &wfire, &wword, off) };
        let strobed = |old: &Expr, keep_mask: u32| -> Expr {
            let lanes: Vec<Expr> = (0..4).map(|k| wstrb.bit_at(k).mux(&wdata.part(8 * k, 8), &old.part(8 * k, 8))).collect();
            Expr::cat_lanes(&lanes).and(&Expr::lit(32, keep_mask as u64))
        };
        let rw_reg = |b: &mut ModuleBuilder, name: &str, off: u32, keep: u32| -> Expr {
            let q = b.reg(name, 32, 0);
            let we = write_to(b, off);
            b.next(&q, &strobed(&q, keep), Some(&we));
            q
        };
        let cmd_base = rw_reg(b, "cmd_base_q", reg::CMD_BASE, !3);
        let cmd_size = rw_reg(b, "cmd_size_q", reg::CMD_SIZE, !3);
        let prim_base = rw_reg(b, "prim_base_q", reg::PRIM_BASE, !3);
        let prim_size = rw_reg(b, "prim_size_q", reg::PRIM_SIZE, !0);
        let state_ptr = rw_reg(b, "state_ptr_q", reg::STATE_PTR, !0);
        let irq_en = rw_reg(b, "irq_enable_q", reg::IRQ_ENABLE, 3);
        let state_init: Vec<Expr> = (0..sr).map(|i| rw_reg(b, &format!("state_init{i}_q"), reg::STATE_INIT + 4 * i, !0)).collect();
        let we_bell = write_to(b, reg::DOORBELL);
        let doorbell = b.let_("doorbell", &we_bell.and(&wstrb.bit_at(0)).and(&wdata.slice(7, 0).eq_lit(1)));
        let busy = b.reg("busy_q", 1, 0);
        let start = b.let_("start", &doorbell.and(&busy.not()));
        b.assign(busy_o, &busy);

        // Status registers, written by the run (below).
        let st_error = b.reg("status_error_q", 1, 0);
        let st_done = b.reg("status_done_q", 1, 0);
        let err_cause = b.reg("err_cause_q", 4, 0);
        let err_addr = b.reg("err_addr_q", 32, 0);
        let irq_st = b.reg("irq_status_q", 2, 0);
        let cmd_count = b.reg("cmd_count_q", 32, 0);
        let busy_cycles = b.reg("busy_cycles_q", 32, 0);
        let ignored = b.reg("ignored_q", 32, 0);
        b.next(&ignored, &ignored.add(&Expr::lit(32, 1)), Some(&doorbell.and(&busy)));
        b.next(&busy_cycles, &start.mux(&Expr::zero(32), &busy_cycles.add(&Expr::lit(32, 1))), Some(&start.or(&busy)));
        b.assign(irq_o, &irq_st.and(&irq_en.slice(1, 0)).any());

        // Reads: the register's value at the handshake cycle.
        let rvalid = b.reg("rvalid_q", 1, 0);
        let rdata = b.reg("rdata_q", 32, 0);
        let arfire = b.let_("axi_arfire", &arvalid.and(&rvalid.not()));
        b.assign(arready, &rvalid.not());
        b.next(&rvalid, &arfire.or(&rvalid.and(&rready.not())), None);
        let mut rmap: Vec<Expr> = vec![Expr::zero(32); 1usize << ww];
        let z = |e: &Expr| e.zext(32);
        rmap[(reg::CMD_BASE / 4) as usize] = cmd_base.clone();
        rmap[(reg::CMD_SIZE / 4) as usize] = cmd_size.clone();
        rmap[(reg::PRIM_BASE / 4) as usize] = prim_base.clone();
        rmap[(reg::PRIM_SIZE / 4) as usize] = prim_size.clone();
        rmap[(reg::STATE_PTR / 4) as usize] = state_ptr.clone();
        rmap[(reg::STATUS / 4) as usize] = z(&Expr::cat(&[st_done.clone(), st_error.clone(), busy.clone()]));
        rmap[(reg::ERR_CAUSE / 4) as usize] = z(&err_cause);
        rmap[(reg::ERR_ADDR / 4) as usize] = err_addr.clone();
        rmap[(reg::IRQ_ENABLE / 4) as usize] = irq_en.clone();
        rmap[(reg::IRQ_STATUS / 4) as usize] = z(&irq_st);
        rmap[(reg::CMD_COUNT / 4) as usize] = cmd_count.clone();
        rmap[(reg::BUSY_CYCLES / 4) as usize] = busy_cycles.clone();
        rmap[(reg::IGNORED / 4) as usize] = ignored.clone();
        for (i, s) in state_init.iter().enumerate() {
            rmap[(reg::STATE_INIT / 4) as usize + i] = s.clone();
        }
        let rsel = select(&word(araddr), &rmap);
        b.next(&rdata, &rsel, Some(&arfire));
        b.assign(rvalid_o, &rvalid);
        b.assign(rdata_o, &rdata);
        b.assign(rresp, &Expr::zero(2));

        // The descriptor, latched at the doorbell.
        let d_prim_base = b.pipe("desc_prim_base_q", &prim_base, &start);
        let d_prim_size = b.pipe("desc_prim_size_q", &prim_size, &start);
        let d_state_ptr = b.pipe("desc_state_ptr_q", &state_ptr, &start);
        Regs {
            wfire,
            wword,
            cmd_base,
            cmd_size,
            state_init,
            start,
            busy,
            st_error,
            st_done,
            err_cause,
            err_addr,
            irq_st,
            cmd_count,
            d_prim_base,
            d_prim_size,
            d_state_ptr,
        }
    }

    /// The error raised this cycle (`raise`): its cause and header address.
    /// A dispatch leaving with `kerr_i` (`fences.kerr`) is never in the
    /// cycle of a decode error: the decoder is barred while it waits.
    pub fn record_error(&self, b: &mut ModuleBuilder, raise: &Expr, dec: &Decoder, fences: &Fences) {
        let Regs { start, err_cause, err_addr, .. } = self;
        let (mut cause_now, mut addr_now) = (dec.second.cause_now.clone(), dec.second.addr_now.clone());
        if let Some((kerr, kerr_addr)) = &fences.kerr {
            cause_now = kerr.mux(&Expr::lit(4, Cause::Kernel.code() as u64), &cause_now);
            addr_now = kerr.mux(kerr_addr, &addr_now);
        }
        b.next(err_cause, &start.mux(&Expr::zero(4), &cause_now), Some(&start.or(raise)));
        b.next(err_addr, &start.mux(&Expr::zero(32), &addr_now), Some(&start.or(raise)));
    }

    /// The end of a run (`run_end`): not busy, done or error (`stopped`),
    /// the interrupt; a write to IRQ_STATUS clears its bits.
    pub fn end_run(&self, b: &mut ModuleBuilder, axi: &Axi, run_end: &Expr, stopped: &Expr) {
        let Regs { wfire, wword, start, busy, st_error, st_done, irq_st, .. } = self;
        let Axi { wdata, wstrb, .. } = axi;
            b.next(busy, &start.or(&busy.and(&run_end.not())), None);
            b.next(st_error, &start.mux(&Expr::bit(false), stopped), Some(&start.or(run_end)));
            b.next(st_done, &start.mux(&Expr::bit(false), &stopped.not()), Some(&start.or(run_end)));
            let we_irq = we_at(b, wfire, wword, reg::IRQ_STATUS);
            let clear = we_irq.and(&wstrb.bit_at(0)).mux(&wdata.slice(1, 0), &Expr::zero(2));
            let set = run_end.mux(&stopped.mux(&Expr::lit(2, reg::IRQ_ERROR as u64), &Expr::lit(2, reg::IRQ_DONE as u64)), &Expr::zero(2));
            b.next(irq_st, &irq_st.and(&clear.not()).or(&set), None);
    }
}
