//! The integrated top `gpu` (docs/gpu.md): `queues` command processors in
//! compute mode, the scheduler, `units` compute units and the dispatcher
//! between them (`gpurtl_gpu_core`, native memory ports), behind the
//! arbiters and the AXI4 bridge of `mem_if = axi4` (`gpurtl_gpu`).
//!
//! The dispatcher runs each queue in order, one kernel at a time: a
//! dispatch is submitted from the pipeline port with its snapshot and taken
//! once its kernel has completed; a fence is written once the queue's
//! writes before it are answered, and taken once its own are.

mod regs;

use super::memif::{axi4_top, Kind, Part, Source};
use super::{cmdproc, cu, scheduler};
use crate::rtl::arbiter::round_robin;
use crate::rtl::bus::{Native, Role};
use crate::rtl::{bits_for, clog2, select, Axi as AxiShape, BusKind, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::cmdproc::{sh, Opcode};
use gpurtl_params::gpu::GpuParams;

pub const TOP: &str = "gpurtl_gpu";

/// WRITE_DATA dwords and fence writes of one queue in flight.
const WRITES_IN_FLIGHT: u32 = 8;

pub fn build(p: &GpuParams) -> Result<Design, RtlError> {
    let core = Design::of(core(p)?, p);
    let same = || -> Box<dyn Fn(&Expr) -> Expr> { Box::new(|a: &Expr| a.clone()) };
    let mut sources = Vec::new();
    let cp = p.cmdproc();
    for q in 0..p.queues {
        sources.push(Source { port: format!("q{q}_imem"), kind: Kind::Read { credits: cp.pool_beats }, addr: same() });
    }
    let o = p.cu.max_outstanding;
    for u in 0..p.units {
        sources.push(Source { port: format!("u{u}_ifetch"), kind: Kind::Burst { chunk: cu::ifetch_chunk(&p.cu, p.data_bits) }, addr: same() });
        sources.push(Source { port: format!("u{u}_cdl"), kind: Kind::Read { credits: o }, addr: same() });
        sources.push(Source { port: format!("u{u}_dma_rd"), kind: Kind::Read { credits: o }, addr: same() });
    }
    for q in 0..p.queues {
        sources.push(Source { port: format!("q{q}_wr"), kind: Kind::Write { outstanding: WRITES_IN_FLIGHT }, addr: same() });
    }
    sources.push(Source { port: "fence_wr".into(), kind: Kind::Write { outstanding: 2 }, addr: same() });
    for u in 0..p.units {
        sources.push(Source { port: format!("u{u}_dma_wr"), kind: Kind::Write { outstanding: o }, addr: same() });
    }
    let part = Part { design: &core, inst: "u_core", prefix: "", sources, busy: None };
    let doc = [
        format!("GPU top (gpurtl block `gpu`): {} PM4 queue(s), the resource-table scheduler, {} compute unit(s),", p.queues, p.units),
        format!("one {}-bit AXI4 master and an AXI4-Lite slave for the host (docs/gpu.md).", p.data_bits),
    ];
    let b = axi4_top(TOP, &doc, &[part], AxiShape { addr_bits: 32, data_bits: p.data_bits, id_bits: 1 })?;
    Ok(Design::of(b.finish()?, p))
}

/// A queue's command processor as the dispatcher sees it.
struct Queue {
    cmd_valid: Expr,
    cmd_ready: Expr,
    /// The queue's `cmdproc`'s `kerr_i`.
    kerr: Expr,
    opcode: Expr,
    addr: Expr,
    p: Vec<Expr>,
    sh: Vec<Expr>,
    busy: Expr,
    irq: Expr,
    /// Its WRITE_DATA dwords without a response.
    wr_owed: Expr,
}

/// The core: everything above the arbiters, with native memory ports.
fn core(p: &GpuParams) -> Result<crate::rtl::Module, RtlError> {
    let nq = p.queues as usize;
    let nu = p.units as usize;
    let cp = p.cmdproc();
    let sp = p.scheduler();
    let slots = p.cu.slots;
    let (qb, sb, tb) = (p.queue_bits(), p.share_bits(), sp.tag_bits());
    let bb = p.block_bits;
    let mut b = ModuleBuilder::new(&format!("{TOP}_core"));
    b.doc("GPU top's core (gpurtl block `gpu`): queues, scheduler, compute units and the dispatcher, native memory ports.");
    b.doc("Behaviour: docs/gpu.md.");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let cr = || vec![("clk_i", clk.clone()), ("rst_i", rst.clone())];

    // ---------------- the host's slave and the outputs ----------------
    let host = b.axi_lite("s_axi_", Role::Slave, regs::ADDR_BITS);
    let busy_o = b.output("busy_o", 1, "some queue is busy");
    let irq_o = b.output("irq_o", 1, "interrupt: any queue's command processor, or the top's IRQ_STATUS & IRQ_ENABLE");
    let ksub_o = b.output("ksub_o", p.queues, "bit q: a kernel of queue q is submitted (one cycle)");
    let kstart_o = b.output("kstart_o", p.queues, "bit q: the first block of queue q's kernel is dispatched (one cycle)");
    let kend_o = b.output("kend_o", p.queues, "bit q: queue q's kernel completes (one cycle)");
    let retire_o = b.output("retire_o", p.units, "bit u: compute unit u executes an instruction");
    let cpl_o = b.output("cpl_o", p.units, "bit u: a block completes on compute unit u");
    // The per-unit timeline (a bar per block: unit, share, queue), for the
    // testbench's Gantt chart: at most one dispatch and one completion a cycle.
    let dsp_o = b.output("dsp_o", p.units, "bit u: a block is dispatched to compute unit u (one cycle)");
    let dsp_queue_o = b.output("dsp_queue_o", p.queue_bits(), "with dsp_o: the block's queue");
    let dsp_share_o = b.output("dsp_share_o", p.share_bits(), "with dsp_o: the unit's share (slot) it runs in");
    let cpl_share_o = b.output("cpl_share_o", p.share_bits(), "with cpl_o: the share of the block that completes");

    // ---------------- the queues ----------------
    let cmdproc_design = cmdproc::build(&cp)?;
    let wr_port = Native { addr_bits: 32, data_bits: 32, len_bits: 0, tag_bits: 0 };
    let mut queues: Vec<Queue> = Vec::new();
    let mut q_slaves = Vec::new();
    for q in 0..nq {
        let u = b.instance_of(&cmdproc_design, &format!("u_q{q}"), &cr());
        // Instruction fetches to the core's port; primitives tied off (draws are errors).
        b.expose_bus(&u.bus(BusKind::Read, "imem"), &format!("q{q}_imem"));
        let pm = u.bus(BusKind::Read, "pmem");
        b.assign(&pm.req().ready, &Expr::bit(false));
        b.assign(&pm.rsp().valid, &Expr::bit(false));
        b.assign(&pm.rsp().field("data"), &Expr::zero(cp.fetch_bits));
        b.waive_unused(&pm.req().valid, "primitives are read only for draws, which are errors in compute mode");
        b.waive_unused(&pm.req().field("addr"), "primitives are read only for draws");
        b.waive_unused(&pm.rsp().ready, "primitives are read only for draws");
        let prim = u.stream("prim");
        b.assign(&prim.ready, &Expr::bit(true));
        for f in ["id", "index", "last"] {
            b.waive_unused(&prim.field(f), "no draws in compute mode");
        }
        b.waive_unused(&prim.valid, "no draws in compute mode");
        b.waive_unused(&u.port("state_o"), "the render-state table: no graphics pipeline behind a compute queue");
        // WRITE_DATA dwords as a native write port, answered.
        let wr = u.stream("wr");
        let port = b.write_port(&format!("q{q}_wr"), Role::Master, wr_port);
        b.assign(&port.req().valid, &wr.valid);
        b.assign(&wr.ready, &port.req().ready);
        b.assign(&port.req().field("addr"), &wr.field("addr"));
        b.assign(&port.req().field("data"), &wr.field("data"));
        b.assign(&port.req().field("strb"), &Expr::ones(4));
        b.assign(&port.rsp().ready, &Expr::bit(true));
        b.waive_unused(&wr.field("last"), "a packet's last dword needs nothing more of memory");
        let ow = bits_for(WRITES_IN_FLIGHT as u64);
        let owed = b.reg(&format!("q{q}_wr_owed_q"), ow, 0);
        let took = wr.valid.and(&port.req().ready);
        b.next(&owed, &owed.add(&took.zext(ow)).sub(&port.rsp().valid.zext(ow)), None);
        // The trace ports on the top.
        let m = cmdproc_design.top();
        for &id in &m.ports {
            let s = m.sig(id);
            if s.name.starts_with("trace_") {
                let o = b.output(&format!("q{q}_{}", s.name), s.width, &s.doc);
                b.assign(&o, &u.port(&s.name));
            }
        }
        let cmd = u.stream("cmd");
        let header = cmd.field("header");
        let ps: Vec<Expr> = (0..6).map(|k| cmd.field(&format!("p{k}"))).collect();
        for f in ["id", "count", "state_ptr"] {
            b.waive_unused(&cmd.field(f), "the dispatcher needs the opcode, the address and the payload");
        }
        b.waive_unused(&header, "the dispatcher reads the opcode");
        let sh_o = u.port("sh_o");
        b.waive_unused(&sh_o, "the fields the top does not use (PGM_HI, the carried bits) are 0 or carried (the command processor's checks)");
        let shv: Vec<Expr> = (0..sh::REGS).map(|i| sh_o.part(32 * i as u32, 32)).collect();
        queues.push(Queue {
            cmd_valid: cmd.valid.clone(),
            cmd_ready: cmd.ready.clone(),
            kerr: u.port("kerr_i"),
            opcode: header.slice(15, 8),
            addr: cmd.field("addr"),
            p: ps,
            sh: shv,
            busy: u.port("busy_o"),
            irq: u.port("irq_o"),
            wr_owed: owed,
        });
        q_slaves.push(u.bus(BusKind::AxiLite, "s_axi_"));
    }

    // ---------------- the scheduler ----------------
    let sched = scheduler::build(&sp)?;
    let su = b.instance_of(&sched, "u_sched", &cr());
    let (sub, dsp, cpl, rej) = (su.stream("sub"), su.stream("dsp"), su.stream("cpl"), su.stream("rej"));
    b.assign(&rej.ready, &Expr::bit(true));
    b.waive_unused(&rej.valid, "the command processors' need checks leave nothing for the scheduler to reject");
    b.waive_unused(&rej.field("id"), "nothing is rejected");
    b.waive_unused(&dsp.field("count"), "one block a dispatch (dispatch_width 1)");

    // ---------------- the compute units ----------------
    let cu_design = cu::build(&p.cu)?;
    let mut units = Vec::new();
    for u in 0..nu {
        let inst = b.instance_of(&cu_design, &format!("u_cu{u}"), &cr());
        for port in ["ifetch", "cdl", "dma_rd"] {
            b.expose_bus(&inst.bus(BusKind::Read, port), &format!("u{u}_{port}"));
        }
        b.expose_bus(&inst.bus(BusKind::Write, "dma_wr"), &format!("u{u}_dma_wr"));
        for port in ["retire_slot_o", "retire_pc_o", "retire_insn_o", "tex_fetch_o"] {
            b.waive_unused(&inst.port(port), "the retire port's valid alone is counted (retire_o)");
        }
        units.push(inst);
    }

    // ---------------- submissions ----------------
    // Per queue: the kernel entry, loaded when its dispatch is submitted.
    let is = |q: &Queue, op: Opcode| q.opcode.eq_lit(op.code() as u64);
    let sfw = p.cu.smem_field_bits();
    let rcw = p.cu.reg_bits() + 1;
    let sub_v = b.reg("sub_valid_q", 1, 0);
    let sub_q = b.reg_noreset("sub_queue_q", qb);
    let live: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("k{q}_live_q"), 1, 0)).collect();
    let want: Vec<Expr> = queues
        .iter()
        .enumerate()
        .map(|(q, qu)| {
            let nonzero = qu.p[0].any().and(&qu.p[1].any()).and(&qu.p[2].any());
            b.let_(&format!("k{q}_want"), &qu.cmd_valid.and(&is(qu, Opcode::DispatchDirect)).and(&nonzero).and(&live[q].not()).and(&qu.wr_owed.eq_lit(0)))
        })
        .collect();
    let load = b.let_("sub_load", &sub_v.not());
    let rr = round_robin(&mut b, "sub_rr", &want, &load);
    let grant_q = rr.index.slice(qb.max(1) - 1, 0);
    let taken = b.let_("sub_taken", &sub_v.and(&sub.ready));
    b.next(&sub_v, &load.mux(&rr.any, &taken.not()), None);
    b.next(&sub_q, &grant_q.zext(qb), Some(&load.and(&rr.any)));
    let fw = bits_for((cp.max_threads) as u64);
    let mut kx = Vec::new();
    let mut ky = Vec::new();
    let mut kprog = Vec::new();
    let mut kuser = Vec::new();
    let mut kr = Vec::new();
    let mut km = Vec::new();
    let mut kt = Vec::new();
    let mut kblocks = Vec::new();
    let mut kaddr = Vec::new();
    for (q, qu) in queues.iter().enumerate() {
        let ld = b.let_(&format!("k{q}_load"), &load.and(&rr.grant[q]));
        let sh = &qu.sh;
        // T, R and M fit their fields when the command processor's need
        // check passed (docs/cmdproc.md): each factor fits fw bits, and
        // R, M are exact modulo their widths.
        let f = |i: usize| sh[i].slice(fw - 1, 0).zext(3 * fw);
        let t = f(sh::NUM_THREAD_X).mul(&f(sh::NUM_THREAD_Y)).mul(&f(sh::NUM_THREAD_Z));
        let tw = sp_need_widths(&sp).0;
        let t_ = b.let_(&format!("k{q}_threads"), &fit(&t, tw));
        let vg = sh[sh::PGM_RSRC1].slice(5, 0).zext(rcw + 7).add(&Expr::lit(rcw + 7, 1));
        let r = fit(&t, rcw).zext(rcw + 7).mul(&vg);
        let r = Expr::cat(&[r.slice(rcw - 3, 0), Expr::zero(2)]);
        let lds = sh[sh::PGM_RSRC2].slice(23, 15);
        let m = if sfw > 9 { Expr::cat(&[fit(&lds, sfw - 9), Expr::zero(9)]) } else { Expr::zero(sfw) };
        let dim = |e: &Expr| e.slice(bb.min(17) - 1, 0).zext(bb);
        let blocks = dim(&qu.p[0]).mul(&dim(&qu.p[1])).slice(bb - 1, 0).mul(&dim(&qu.p[2])).slice(bb - 1, 0);
        kt.push(b.pipe(&format!("k{q}_threads_q"), &t_, &ld));
        kr.push(b.pipe(&format!("k{q}_regs_q"), &r, &ld));
        km.push(b.pipe(&format!("k{q}_smem_q"), &m, &ld));
        kblocks.push(b.pipe(&format!("k{q}_blocks_q"), &blocks, &ld));
        kprog.push(b.pipe(&format!("k{q}_prog_q"), &Expr::cat(&[sh[sh::PGM_LO].slice(23, 0), Expr::zero(8)]), &ld));
        kuser.push(b.pipe(&format!("k{q}_user_q"), &Expr::cat_lanes(&sh[sh::USER_DATA_0..sh::USER_DATA_0 + 16]), &ld));
        kx.push(b.pipe(&format!("k{q}_x_q"), &qu.p[0].slice(16, 0), &ld));
        ky.push(b.pipe(&format!("k{q}_y_q"), &qu.p[1].slice(16, 0), &ld));
        kaddr.push(b.pipe(&format!("k{q}_addr_q"), &qu.addr, &ld));
    }
    let (tw, rw, mw) = sp_need_widths(&sp);
    let qsel = |v: &[Expr]| select(&sub_q, v);
    b.assign(&sub.valid, &sub_v);
    b.assign(&sub.field("id"), &sub_q.zext(sp.id_bits).slice(sp.id_bits - 1, 0));
    b.assign(&sub.field("stream"), &sub_q.zext(sub.field("stream").width()).slice(sub.field("stream").width() - 1, 0));
    b.assign(&sub.field("blocks"), &qsel(&kblocks));
    b.assign(&sub.field("threads"), &qsel(&kt).zext(tw));
    b.assign(&sub.field("regs"), &fit(&qsel(&kr), rw));
    b.assign(&sub.field("smem"), &fit(&qsel(&km), mw));
    let prio_regs = regs::Prio::declare(&mut b, p.queues);
    b.assign(&sub.field("prio"), &select(&sub_q, &prio_regs.value));
    let ksub: Vec<Expr> = (0..nq).map(|q| taken.and(&sub_q.eq_lit(q as u64))).collect();
    b.assign(&ksub_o, &Expr::cat_lanes(&ksub));

    // ---------------- dispatch to the units ----------------
    let kid = dsp.field("id").slice(qb - 1, 0);
    let sm = dsp.field("sm");
    let mb = sm.width();
    let share_busy: Vec<Expr> = (0..nu).map(|u| b.reg(&format!("u{u}_shares_q"), slots, 0)).collect();
    let mut cu_ready = Vec::new();
    let mut dsp_fire_u = Vec::new();
    let mut share_of = Vec::new();
    // Block ids per queue, advanced at each dispatch of its kernel.
    let bx: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("k{q}_bx_q"), 16, 0)).collect();
    let by: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("k{q}_by_q"), 16, 0)).collect();
    let bz: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("k{q}_bz_q"), 16, 0)).collect();
    let started: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("k{q}_started_q"), 1, 0)).collect();
    for (u, inst) in units.iter().enumerate() {
        let d = inst.stream("dsp");
        let mine = b.let_(&format!("u{u}_dsp"), &dsp.valid.and(&sm.slice(mb - 1, 0).eq_lit(u as u64)));
        // The lowest free share.
        let free = share_busy[u].not();
        let share = crate::rtl::arbiter::onehot_index(&crate::rtl::lowest_bit(&free), slots as usize, sb);
        let share = b.let_(&format!("u{u}_share"), &share);
        b.assign(&d.valid, &mine);
        b.assign(&d.field("prog"), &select(&kid, &kprog));
        b.assign(&d.field("x"), &select(&kid, &bx));
        b.assign(&d.field("y"), &select(&kid, &by));
        b.assign(&d.field("z"), &select(&kid, &bz));
        b.assign(&d.field("user"), &select(&kid, &kuser));
        let sbytes = p.smem_bytes() / slots;
        let rper = p.cu.regs / slots;
        b.assign(&d.field("smem_base"), &share.zext(sfw).mul(&Expr::lit(sfw, sbytes as u64)).slice(sfw - 1, 0));
        b.assign(&d.field("smem_size"), &select(&kid, &km));
        b.assign(&d.field("reg_base"), &share.zext(rcw).mul(&Expr::lit(rcw, rper as u64)).slice(rcw - 1, 0));
        b.assign(&d.field("reg_count"), &select(&kid, &kr));
        let tag = Expr::cat(&[kid.clone(), dsp.field("tag"), share.clone()]);
        b.assign(&d.field("tag"), &tag.zext(p.cu.tag_bits));
        cu_ready.push(mine.and(&d.ready));
        let fire = b.let_(&format!("u{u}_dsp_fire"), &mine.and(&d.ready));
        dsp_fire_u.push(fire);
        share_of.push(share);
    }
    b.assign(&dsp.ready, &cu_ready.iter().fold(Expr::bit(false), |a, e| a.or(e)));
    let dsp_fire = b.let_("dsp_fire", &dsp.valid.and(&dsp.ready));
    b.assign(&dsp_o, &Expr::cat_lanes(&dsp_fire_u));
    b.assign(&dsp_queue_o, &kid);
    b.assign(&dsp_share_o, &select(&sm.slice(mb - 1, 0), &share_of));
    b.waive_unused(&dsp.field("block"), "blocks of a kernel come in index order: the id counters follow them");
    for q in 0..nq {
        let go = b.let_(&format!("k{q}_dsp"), &dsp_fire.and(&kid.eq_lit(q as u64)));
        let x_end = bx[q].zext(17).add(&Expr::lit(17, 1)).eq(&kx[q]);
        let y_end = by[q].zext(17).add(&Expr::lit(17, 1)).eq(&ky[q]);
        let new = taken.and(&sub_q.eq_lit(q as u64));
        b.next(&bx[q], &new.mux(&Expr::zero(16), &x_end.mux(&Expr::zero(16), &bx[q].add(&Expr::lit(16, 1)))), Some(&new.or(&go)));
        b.next(&by[q], &new.mux(&Expr::zero(16), &x_end.mux(&y_end.mux(&Expr::zero(16), &by[q].add(&Expr::lit(16, 1))), &by[q])), Some(&new.or(&go)));
        b.next(&bz[q], &new.mux(&Expr::zero(16), &bz[q].add(&Expr::lit(16, 1))), Some(&new.or(&go.and(&x_end).and(&y_end))));
        b.next(&started[q], &new.not(), Some(&new.or(&go)));
    }
    let kstart: Vec<Expr> = (0..nq).map(|q| dsp_fire.and(&kid.eq_lit(q as u64)).and(&started[q].not())).collect();
    b.assign(&kstart_o, &Expr::cat_lanes(&kstart));

    // ---------------- completions ----------------
    let cvalid: Vec<Expr> = units.iter().map(|u| u.stream("cpl").valid.clone()).collect();
    let crr = round_robin(&mut b, "cpl_rr", &cvalid, &Expr::bit(true));
    let mut cpl_tags = Vec::new();
    let mut cpl_status = Vec::new();
    for (u, inst) in units.iter().enumerate() {
        let c = inst.stream("cpl");
        b.assign(&c.ready, &crr.grant[u]);
        cpl_tags.push(c.field("tag"));
        cpl_status.push(c.field("status"));
        for f in ["slot", "x", "y", "z", "pc"] {
            b.waive_unused(&c.field(f), "the top needs a completion's tag and status");
        }
    }
    let cu_idx = crr.index.slice(clog2(nu as u64).max(1) - 1, 0);
    let ctag = b.let_("cpl_tag", &select(&cu_idx, &cpl_tags));
    let cstatus = b.let_("cpl_status", &select(&cu_idx, &cpl_status));
    let cfire = crr.any.clone();
    b.assign(&cpl.valid, &cfire);
    b.assign(&cpl.field("count"), &Expr::lit(cpl.field("count").width(), 1));
    b.assign(&cpl.field("tag"), &ctag.slice(sb + tb - 1, sb));
    b.assign(&cpl.field("sm"), &cu_idx.zext(mb.max(cu_idx.width())).slice(mb - 1, 0));
    b.waive_unused(&cpl.ready, "the scheduler takes every completion");
    if p.cu.tag_bits > qb + tb + sb {
        b.waive_unused(&ctag, "the tag's high bits are 0");
    }
    let c_share = ctag.slice(sb - 1, 0);
    let c_q = ctag.slice(sb + tb + qb - 1, sb + tb);
    b.assign(&cpl_share_o, &c_share);
    for u in 0..nu {
        let clear = (0..slots).map(|s| crr.grant[u].and(&c_share.eq_lit(s as u64))).collect::<Vec<_>>();
        let set = (0..slots).map(|s| dsp_fire_u[u].and(&share_of[u].eq_lit(s as u64))).collect::<Vec<_>>();
        b.next(&share_busy[u], &share_busy[u].and(&Expr::cat_lanes(&clear).not()).or(&Expr::cat_lanes(&set)), None);
    }
    let retire: Vec<Expr> = units.iter().map(|u| u.port("retire_valid_o")).collect();
    b.assign(&retire_o, &Expr::cat_lanes(&retire));
    b.assign(&cpl_o, &Expr::cat_lanes(&crr.grant));

    // Per queue: blocks completed, the kernel's end, errors.
    let failed = b.let_("cpl_failed", &cstatus.any());
    let mut kdone = Vec::new();
    let mut kend = Vec::new();
    let mut kerr = Vec::new();
    let mut kfailed = Vec::new();
    for q in 0..nq {
        let mine = b.let_(&format!("k{q}_cpl"), &cfire.and(&c_q.eq_lit(q as u64)));
        let done = b.reg(&format!("k{q}_done_q"), bb, 0);
        let last = mine.and(&done.add(&Expr::lit(bb, 1)).eq(&kblocks[q]));
        let new = taken.and(&sub_q.eq_lit(q as u64));
        b.next(&done, &new.mux(&Expr::zero(bb), &done.add(&Expr::lit(bb, 1))), Some(&new.or(&mine)));
        let finished = b.reg(&format!("k{q}_finished_q"), 1, 0);
        let take = queues[q].cmd_valid.and(&queues[q].cmd_ready);
        b.next(&finished, &last, Some(&last.or(&take)));
        kdone.push(finished);
        kend.push(last.clone());
        kerr.push((mine.and(&failed), cstatus.clone()));
        // The kernel in flight has a failed block: its dispatch is taken
        // with kerr_i, which stops the queue (docs/gpu.md, "Kernel errors").
        let kf = b.reg(&format!("k{q}_failed_q"), 1, 0);
        b.next(&kf, &new.not(), Some(&new.or(&mine.and(&failed))));
        kfailed.push(kf);
    }
    b.assign(&kend_o, &Expr::cat_lanes(&kend));

    // ---------------- fences ----------------
    let fence_port = b.write_port("fence_wr", Role::Master, wr_port);
    let f_busy = b.reg("fence_busy_q", 1, 0);
    let f_q = b.reg_noreset("fence_queue_q", qb);
    let f_left = b.reg("fence_left_q", 2, 0);
    let f_owed = b.reg("fence_owed_q", 2, 0);
    let f_addr = b.reg_noreset("fence_addr_q", 32);
    let f_hi = b.reg_noreset("fence_hi_q", 32);
    let f_lo = b.reg_noreset("fence_lo_q", 32);
    let fdone: Vec<Expr> = (0..nq).map(|q| b.reg(&format!("f{q}_done_q"), 1, 0)).collect();
    let fwant: Vec<Expr> = queues
        .iter()
        .enumerate()
        .map(|(q, qu)| b.let_(&format!("f{q}_want"), &qu.cmd_valid.and(&is(qu, Opcode::ReleaseMem)).and(&qu.wr_owed.eq_lit(0)).and(&fdone[q].not())))
        .collect();
    let fstart = b.let_("fence_start", &f_busy.not());
    let frr = round_robin(&mut b, "fence_rr", &fwant, &fstart);
    let fg = frr.index.slice(qb - 1, 0);

    let fgo = b.let_("fence_go", &fstart.and(&frr.grant.iter().fold(Expr::bit(false), |a, g| a.or(g))));
    b.waive_unused(&frr.any, "the grant says the same");
    let sel_p = |k: usize| select(&fg, &queues.iter().map(|q| q.p[k].clone()).collect::<Vec<_>>());
    let data_sel = sel_p(1).slice(31, 29);
    let words = data_sel.eq_lit(1).mux(&Expr::lit(2, 1), &data_sel.eq_lit(2).mux(&Expr::lit(2, 2), &Expr::zero(2)));
    let wfire = b.let_("fence_wr_fire", &fence_port.req().valid.and(&fence_port.req().ready));
    b.next(&f_q, &fg.zext(qb), Some(&fgo));
    b.next(&f_addr, &fgo.mux(&sel_p(2), &f_addr.add(&Expr::lit(32, 4))), Some(&fgo.or(&wfire)));
    b.next(&f_lo, &fgo.mux(&sel_p(4), &f_hi), Some(&fgo.or(&wfire)));
    b.next(&f_hi, &sel_p(5), Some(&fgo));
    b.next(&f_left, &fgo.mux(&words, &f_left.sub(&Expr::lit(2, 1))), Some(&fgo.or(&wfire)));
    let f_resp = fence_port.rsp().valid.clone();
    b.assign(&fence_port.rsp().ready, &Expr::bit(true));
    b.next(&f_owed, &f_owed.add(&wfire.zext(2)).sub(&f_resp.zext(2)), None);
    b.assign(&fence_port.req().valid, &f_busy.and(&f_left.eq_lit(0).not()));
    b.assign(&fence_port.req().field("addr"), &f_addr);
    b.assign(&fence_port.req().field("data"), &f_lo);
    b.assign(&fence_port.req().field("strb"), &Expr::ones(4));
    // Done once every word is written and answered.
    let f_end = b.let_("fence_end", &f_busy.and(&f_left.eq_lit(0)).and(&f_owed.eq_lit(0)));
    b.next(&f_busy, &fgo, Some(&fgo.or(&f_end)));
    let mut fence_irq = Vec::new();
    let mut fence_end = Vec::new();
    let f_int: Vec<Expr> = (0..nq).map(|q| b.reg_noreset(&format!("f{q}_int_q"), 1)).collect();
    for q in 0..nq {
        let end = f_end.and(&f_q.eq_lit(q as u64));
        let take = queues[q].cmd_valid.and(&queues[q].cmd_ready);
        b.next(&fdone[q], &end, Some(&end.or(&take)));
        let is_sel = queues[q].p[1].slice(26, 24);
        b.next(&f_int[q], &is_sel.eq_lit(1).or(&is_sel.eq_lit(2)), Some(&fgo.and(&fg.eq_lit(q as u64))));
        fence_irq.push(end.and(&f_int[q]));
        fence_end.push(end);
    }

    // ---------------- taking commands ----------------
    for (q, qu) in queues.iter().enumerate() {
        let dispatch = is(qu, Opcode::DispatchDirect);
        let fence = is(qu, Opcode::ReleaseMem);
        let empty = qu.p[0].any().not().or(&qu.p[1].any().not()).or(&qu.p[2].any().not());
        let ready = dispatch.mux(&empty.or(&kdone[q]), &fence.mux(&fdone[q], &Expr::bit(true)));
        b.assign(&qu.cmd_ready, &ready);
        let take = qu.cmd_valid.and(&ready);
        b.assign(&qu.kerr, &dispatch.and(&empty.not()).and(&kfailed[q]));
        let ld = load.and(&rr.grant[q]);
        b.next(&live[q], &ld, Some(&ld.or(&take.and(&dispatch))));
        for (k, e) in qu.p.iter().enumerate().skip(3) {
            if k != 4 && k != 5 {
                b.waive_unused(e, "not read by the dispatcher");
            }
        }
    }

    // ---------------- registers, status, interrupt ----------------
    let qbusy: Vec<Expr> = (0..nq)
        .map(|q| {
            let f_pending = f_busy.and(&f_q.eq_lit(q as u64)).or(&fdone[q]);
            b.let_(
                &format!("q{q}_busy"),
                &queues[q].busy.or(&live[q]).or(&f_pending).or(&queues[q].wr_owed.eq_lit(0).not()),
            )
        })
        .collect();
    b.assign(&busy_o, &qbusy.iter().fold(Expr::bit(false), |a, e| a.or(e)));
    let top = regs::Top { queues: p.queues, fence: fence_end, fence_irq, kend: kend.clone(), kerr, kaddr, busy: qbusy, run_start: queues.iter().map(|q| q.busy.clone()).collect() };
    let top_irq = regs::build(&mut b, &host, &q_slaves, &prio_regs, &top);
    let any_q_irq = queues.iter().fold(Expr::bit(false), |a, q| a.or(&q.irq));
    b.assign(&irq_o, &any_q_irq.or(&top_irq));
    b.finish()
}

/// The scheduler's need widths (threads, registers, scratchpad bytes).
fn sp_need_widths(sp: &gpurtl_params::scheduler::SchedulerParams) -> (u32, u32, u32) {
    (bits_for(sp.sm_threads as u64), bits_for(sp.sm_regs as u64), bits_for(sp.sm_smem as u64))
}

/// `e` zero-extended or cut to `w` bits (a value that fits both).
fn fit(e: &Expr, w: u32) -> Expr {
    if e.width() >= w {
        e.slice(w - 1, 0)
    } else {
        e.zext(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpurtl_params::BlockParams;

    /// Every preset builds (the RTL layer's checks: widths, drivers, readers).
    #[test]
    fn presets_build() {
        for (name, p) in GpuParams::presets() {
            p.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Err(e) = build(&p) {
                panic!("{name}: {e}");
            }
        }
    }
}
