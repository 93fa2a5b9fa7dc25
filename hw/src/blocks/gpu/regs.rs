//! The host's slave of the `gpu` top (docs/gpu.md, "Registers"): one
//! transaction at a time, routed by address to a queue's command processor
//! (byte `0x100 q ..`) or to the top's own registers (everything else).

use crate::rtl::{Bus, Expr, ModuleBuilder};
use gpurtl_params::gpu::reg;

/// Host address bits.
pub const ADDR_BITS: u32 = 12;

/// `PRIORITY[q]`: the queues' kernel priorities.
pub struct Prio {
    pub value: Vec<Expr>,
}

impl Prio {
    pub fn declare(b: &mut ModuleBuilder, queues: u32) -> Prio {
        Prio { value: (0..queues).map(|q| b.reg(&format!("prio{q}_q"), 2, 0)).collect() }
    }
}

/// What the registers count and show.
pub struct Top {
    pub queues: u32,
    /// Per queue: a fence of it is done (written and answered).
    pub fence: Vec<Expr>,
    /// ... and asks for the interrupt (`INT_SEL` 1 or 2).
    pub fence_irq: Vec<Expr>,
    /// Per queue: its kernel completes.
    pub kend: Vec<Expr>,
    /// Per queue: a block of it fails (this cycle), with the status.
    pub kerr: Vec<(Expr, Expr)>,
    /// Per queue: its kernel's header address.
    pub kaddr: Vec<Expr>,
    pub busy: Vec<Expr>,
    /// Per queue: its command processor's busy (a run starts where it rises).
    pub run_start: Vec<Expr>,
}

/// The slave, the demux and the top's registers; returns the top's
/// interrupt (`|(IRQ_STATUS & IRQ_ENABLE)`).
pub fn build(b: &mut ModuleBuilder, host: &Bus, queues: &[Bus], prio: &Prio, t: &Top) -> Expr {
    let nq = t.queues as usize;
    let ch = |bus: &Bus, c: &str| bus.ch(c).clone();
    let (aw, w, bch, ar, r) = (ch(host, "aw"), ch(host, "w"), ch(host, "b"), ch(host, "ar"), ch(host, "r"));
    let qaw = queues[0].ch("aw").field("addr").width();
    // A queue's window: 0x100 q + an offset its registers decode.
    let target = |a: &Expr, q: usize| {
        let hi = a.slice(ADDR_BITS - 1, 8).eq_lit(q as u64);
        if qaw < 8 {
            hi.and(&a.slice(7, qaw).eq_lit(0))
        } else {
            hi
        }
    };
    let b_any = b.wire("host_b_pending", 1);
    let r_any = b.wire("host_r_pending", 1);
    let aw_q: Vec<Expr> = (0..nq).map(|q| b.let_(&format!("host_aw_q{q}"), &target(&aw.field("addr"), q))).collect();
    let ar_q: Vec<Expr> = (0..nq).map(|q| b.let_(&format!("host_ar_q{q}"), &target(&ar.field("addr"), q))).collect();
    let aw_top = aw_q.iter().fold(Expr::bit(true), |a, e| a.and(&e.not()));
    let ar_top = ar_q.iter().fold(Expr::bit(true), |a, e| a.and(&e.not()));
    let mut awready = Vec::new();
    let mut arready = Vec::new();
    let mut bvalid = Vec::new();
    let mut rvalid = Vec::new();
    let mut rdata = Vec::new();
    for (q, s) in queues.iter().enumerate() {
        let (saw, sw, sb, sar, sr) = (s.ch("aw"), s.ch("w"), s.ch("b"), s.ch("ar"), s.ch("r"));
        b.assign(&saw.valid, &aw.valid.and(&aw_q[q]).and(&b_any.not()));
        b.assign(&saw.field("addr"), &aw.field("addr").slice(qaw - 1, 0));
        b.assign(&sw.valid, &w.valid.and(&aw_q[q]).and(&b_any.not()));
        b.assign(&sw.field("data"), &w.field("data"));
        b.assign(&sw.field("strb"), &w.field("strb"));
        b.assign(&sb.ready, &bch.ready);
        b.assign(&sar.valid, &ar.valid.and(&ar_q[q]).and(&r_any.not()));
        b.assign(&sar.field("addr"), &ar.field("addr").slice(qaw - 1, 0));
        b.assign(&sr.ready, &r.ready);
        awready.push(saw.ready.clone());
        b.waive_unused(&sw.ready, "a queue's slave takes address and data together: its awready says so");
        b.waive_unused(&sb.field("resp"), "every response is OKAY");
        b.waive_unused(&sr.field("resp"), "every response is OKAY");
        arready.push(sar.ready.clone());
        bvalid.push(sb.valid.clone());
        rvalid.push(sr.valid.clone());
        rdata.push(sr.field("data").and(&sr.valid.repl(32)));
    }

    // The top's own registers: a write takes address and data together.
    let tb_valid = b.reg("top_bvalid_q", 1, 0);
    let tr_valid = b.reg("top_rvalid_q", 1, 0);
    let tr_data = b.reg_noreset("top_rdata_q", 32);
    let wtake = b.let_("top_wtake", &aw.valid.and(&w.valid).and(&aw_top).and(&b_any.not()));
    let rtake = b.let_("top_rtake", &ar.valid.and(&ar_top).and(&r_any.not()));
    b.next(&tb_valid, &wtake, Some(&wtake.or(&bch.ready)));
    b.next(&tr_valid, &rtake, Some(&rtake.or(&r.ready)));
    let waddr = aw.field("addr");
    let raddr = ar.field("addr");
    let wdata = w.field("data");
    let strb0 = w.field("strb").bit_at(0);
    b.waive_unused(&w.field("strb"), "the top's registers are written whole; byte 0's strobe enables a write");
    let wr_at = |off: u32| wtake.and(&waddr.slice(ADDR_BITS - 1, 2).eq_lit(off as u64 >> 2)).and(&strb0);
    let nb = 2 * t.queues;
    let irq_en = b.reg("irq_enable_q", nb, 0);
    b.next(&irq_en, &wdata.slice(nb - 1, 0), Some(&wr_at(reg::IRQ_ENABLE)));
    let mut read: Vec<(u32, Expr)> = Vec::new();
    let mut raise = Vec::new();
    for q in 0..nq {
        let at = |off: u32| reg::top(q, off);
        b.next(&prio.value[q], &wdata.slice(1, 0), Some(&wr_at(at(reg::PRIORITY))));
        let fences = b.reg(&format!("fences{q}_q"), 32, 0);
        b.next(&fences, &fences.add(&Expr::lit(32, 1)), Some(&t.fence[q]));
        let kernels = b.reg(&format!("kernels{q}_q"), 32, 0);
        b.next(&kernels, &kernels.add(&Expr::lit(32, 1)), Some(&t.kend[q]));
        // Kernel errors, cleared where the queue's run starts.
        let was = b.reg(&format!("run{q}_busy_q"), 1, 0);
        b.next(&was, &t.run_start[q], None);
        let start = b.let_(&format!("run{q}_start"), &t.run_start[q].and(&was.not()));
        let (fail, status) = &t.kerr[q];
        let mask = b.reg(&format!("kerr{q}_mask_q"), 16, 0);
        let onehot: Vec<Expr> = (0..16).map(|s| status.zext(4).eq_lit(s)).collect();
        let bit = Expr::cat_lanes(&onehot);
        b.next(&mask, &start.mux(&Expr::zero(16), &mask.or(&bit)), Some(&start.or(fail)));
        let kaddr = b.reg(&format!("kerr{q}_addr_q"), 32, 0);
        let first = fail.and(&mask.eq_lit(0));
        b.next(&kaddr, &start.mux(&Expr::zero(32), &t.kaddr[q]), Some(&start.or(&first)));
        let kblocks = b.reg(&format!("kerr{q}_blocks_q"), 32, 0);
        b.next(&kblocks, &start.mux(&Expr::zero(32), &kblocks.add(&Expr::lit(32, 1))), Some(&start.or(fail)));
        read.push((at(reg::PRIORITY), prio.value[q].zext(32)));
        read.push((at(reg::FENCES), fences));
        read.push((at(reg::KERNELS), kernels));
        read.push((at(reg::KERR_MASK), mask.zext(32)));
        read.push((at(reg::KERR_ADDR), kaddr));
        read.push((at(reg::KERR_BLOCKS), kblocks));
        raise.push(t.fence_irq[q].clone());
        raise.push(fail.clone());
    }
    let irq_st = b.reg("irq_status_q", nb, 0);
    let clear = wr_at(reg::IRQ_STATUS).repl(nb).and(&wdata.slice(nb - 1, 0));
    b.next(&irq_st, &irq_st.and(&clear.not()).or(&Expr::cat_lanes(&raise)), None);
    let status = Expr::cat_lanes(&t.busy);
    read.push((reg::STATUS, status.zext(32)));
    read.push((reg::IRQ_ENABLE, irq_en.zext(32)));
    read.push((reg::IRQ_STATUS, irq_st.zext(32)));
    let value = read.iter().fold(Expr::zero(32), |a, (off, v)| a.or(&raddr.slice(ADDR_BITS - 1, 2).eq_lit(*off as u64 >> 2).repl(32).and(v)));
    b.next(&tr_data, &value, Some(&rtake));
    b.waive_unused(&waddr, "registers are whole words: address bits 1:0 are ignored");
    b.waive_unused(&raddr, "registers are whole words: address bits 1:0 are ignored");
    b.waive_unused(&wdata, "the top's registers hold a few bits each");

    // The host's side: whoever answers.
    awready.push(wtake.clone());
    arready.push(rtake.clone());
    bvalid.push(tb_valid.clone());
    rvalid.push(tr_valid.clone());
    rdata.push(tr_data.and(&tr_valid.repl(32)));
    let or = |v: &[Expr]| v.iter().fold(Expr::bit(false), |a, e| a.or(e));
    b.assign(&b_any, &or(&bvalid));
    b.assign(&r_any, &or(&rvalid));
    b.assign(&aw.ready, &or(&awready));
    b.assign(&w.ready, &or(&awready));
    b.assign(&bch.valid, &b_any);
    b.assign(&bch.field("resp"), &Expr::zero(2));
    b.assign(&ar.ready, &or(&arready));
    b.assign(&r.valid, &r_any);
    b.assign(&r.field("resp"), &Expr::zero(2));
    b.assign(&r.field("data"), &rdata.iter().fold(Expr::zero(32), |a, e| a.or(e)));
    irq_st.and(&irq_en).any()
}
