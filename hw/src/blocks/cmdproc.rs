//! Command processor front end (seed `001_8bf7a3f3cd91287c.txt`, items 2-38;
//! docs/cmdproc.md).
//!
//! A driver programs registers over AXI4-Lite and rings a doorbell; the unit
//! resets its render-state table, latches the descriptor and jumps to the
//! command buffer. The instruction fetcher reads beats into the instruction
//! pool (credits: a request only when its beat has room); the decoder takes
//! up to F dwords a cycle from a window at the pool's head, ending at most one
//! packet a cycle and starting the next one in the lanes left; a committed
//! command goes into the serialized output queue (the pipeline port) and its
//! record onto the trace port; a draw's indices are fetched by the primitive
//! unit into its own pool and leave one a cycle on the primitive port, tagged
//! with the command's id. Errors stop decoding; the run ends once everything
//! before the error has left. Behaviour and cycle timing: docs/cmdproc.md.

use crate::rtl::pipe::shift_queue;
use crate::rtl::{clog2, select, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::cmdproc::{reg, Cause, CmdprocParams, Opcode};

/// Name of the top module.
pub const TOP: &str = "gpurtl_cmdproc";

/// What the decoder reads off a header dword.
struct Header {
    /// Type 3 (a command) and type 2 (a filler).
    t3: Expr,
    /// Opcode matches, in `Opcode::ALL` order.
    op: Vec<Expr>,
    /// Payload dwords `n` (14 bits).
    n: Expr,
    /// Dwords of the packet, `1 + n` for a command, 1 for a filler (15 bits).
    len: Expr,
    /// The header's error cause (0: none), 4 bits.
    cause: Expr,
}

fn op_index(o: Opcode) -> usize {
    Opcode::ALL.iter().position(|x| *x == o).unwrap_or(0)
}

pub fn build(p: &CmdprocParams) -> Result<Design, RtlError> {
    let f = p.fetch_dwords();
    let fb = p.fetch_bits;
    let lf = clog2(f as u64);
    let lbb = lf + 2;
    let pw = clog2(p.pool_beats as u64);
    let ppw = clog2(p.prim_beats as u64);
    let aw = p.axi_addr_bits();
    let iw = p.id_bits;
    let sr = p.state_regs;
    let depth = p.nesting;
    // Widths: t and A count 0..F lanes; r, done and packet lengths 0..2^14.
    let tw = 3;
    let rw = 15;
    let posw = lf.max(1);

    let mut b = ModuleBuilder::new(TOP);
    b.doc("Command processor front end (gpurtl block `cmdproc`; seed 001, items 2-38).");
    b.doc("AXI4-Lite registers and doorbell, PM4 fetch and decode, primitive pool, serialized output, trace, errors.");
    b.doc(format!(
        "{}-bit fetch, {}-beat instruction pool, {}-beat primitive pool, {}-command output queue, {} state registers, nesting {}.",
        fb, p.pool_beats, p.prim_beats, p.out_depth, sr, depth
    ));
    b.doc("Behaviour and cycle timing: docs/cmdproc.md.");

    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");

    // ---- ports ----
    let awvalid = b.input("s_axi_awvalid", 1, "AXI4-Lite write address valid");
    let awready = b.output("s_axi_awready", 1, "write address taken (with the data)");
    let awaddr = b.input("s_axi_awaddr", aw, "register byte offset");
    let wvalid = b.input("s_axi_wvalid", 1, "AXI4-Lite write data valid");
    let wready = b.output("s_axi_wready", 1, "write data taken (with the address)");
    let wdata = b.input("s_axi_wdata", 32, "write data");
    let wstrb = b.input("s_axi_wstrb", 4, "write byte strobes");
    let bvalid_o = b.output("s_axi_bvalid", 1, "write response valid");
    let bready = b.input("s_axi_bready", 1, "write response taken");
    let bresp = b.output("s_axi_bresp", 2, "write response: always OKAY");
    let arvalid = b.input("s_axi_arvalid", 1, "AXI4-Lite read address valid");
    let arready = b.output("s_axi_arready", 1, "read address taken");
    let araddr = b.input("s_axi_araddr", aw, "register byte offset");
    let rvalid_o = b.output("s_axi_rvalid", 1, "read data valid");
    let rready = b.input("s_axi_rready", 1, "read data taken");
    let rdata_o = b.output("s_axi_rdata", 32, "read data");
    let rresp = b.output("s_axi_rresp", 2, "read response: always OKAY");

    let imem_req = b.stream_out("imem_req", "instruction read request offered", "request taken", &[("addr", 32, "beat-aligned byte address")]);
    let imem_rsp = b.stream_in("imem_rsp", "read data (in request order)", "always 1", &[("data", fb, "the beat")]);
    let pmem_req = b.stream_out("pmem_req", "primitive read request offered", "request taken", &[("addr", 32, "beat-aligned byte address")]);
    let pmem_rsp = b.stream_in("pmem_rsp", "read data (in request order)", "always 1", &[("data", fb, "the beat")]);
    let wr = b.stream_out(
        "wr",
        "a WRITE_DATA dword offered",
        "dword written",
        &[("addr", 32, "byte address"), ("data", 32, "the dword"), ("last", 1, "the packet's last data dword")],
    );
    let rec_fields: Vec<(&str, u32, &str)> = vec![
        ("id", iw, "command id (counts from 0 at each doorbell)"),
        ("addr", 32, "byte address of the header"),
        ("header", 32, "the header dword"),
        ("count", 14, "payload dwords n"),
        ("p0", 32, "payload dword 0 (0 beyond n)"),
        ("p1", 32, "payload dword 1"),
        ("p2", 32, "payload dword 2"),
        ("p3", 32, "payload dword 3"),
    ];
    let mut cmd_fields = rec_fields.clone();
    cmd_fields.push(("state_ptr", 32, "the descriptor's render-state table pointer"));
    let cmd = b.stream_out("cmd", "a command offered to the pipeline", "the pipeline takes it", &cmd_fields);
    let prim = b.stream_out(
        "prim",
        "an index offered",
        "index taken",
        &[("id", iw, "the draw's command id"), ("index", 32, "the index (16-bit ones zero-extended)"), ("last", 1, "the draw's last index")],
    );
    let trace_valid = b.output("trace_valid_o", 1, "a trace record (the cycle after the command is decoded)");
    let trace_ports: Vec<Expr> = rec_fields.iter().map(|(n, w, d)| b.output(&format!("trace_{n}_o"), *w, d)).collect();
    let state_o = b.output("state_o", 32 * sr, "render-state table, register i in bits 32i+31:32i");
    let busy_o = b.output("busy_o", 1, "STATUS.busy");
    let irq_o = b.output("irq_o", 1, "interrupt line: |(IRQ_STATUS & IRQ_ENABLE)");

    // ---- AXI4-Lite registers ----
    let word = |a: &Expr| a.slice(aw - 1, 2);
    b.waive_unused(&awaddr, "bits [1:0]: registers are whole 32-bit words (the strobes select bytes)");
    b.waive_unused(&araddr, "bits [1:0]: registers are whole 32-bit words");
    let ww = aw - 2;
    let bvalid = b.reg("bvalid_q", 1, 0);
    let wfire = b.let_("axi_wfire", &awvalid.and(&wvalid).and(&bvalid.not()));
    b.assign(&awready, &wfire);
    b.assign(&wready, &wfire);
    b.next(&bvalid, &wfire.or(&bvalid.and(&bready.not())), None);
    b.assign(&bvalid_o, &bvalid);
    b.assign(&bresp, &Expr::zero(2));
    let wword = b.let_("axi_wword", &word(&awaddr));
    let write_to = |b: &mut ModuleBuilder, off: u32| -> Expr { b.let_(&format!("axi_we_{off:02x}"), &wfire.and(&wword.eq_lit((off / 4) as u64))) };
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
    let cmd_base = rw_reg(&mut b, "cmd_base_q", reg::CMD_BASE, !3);
    let cmd_size = rw_reg(&mut b, "cmd_size_q", reg::CMD_SIZE, !3);
    let prim_base = rw_reg(&mut b, "prim_base_q", reg::PRIM_BASE, !3);
    let prim_size = rw_reg(&mut b, "prim_size_q", reg::PRIM_SIZE, !0);
    let state_ptr = rw_reg(&mut b, "state_ptr_q", reg::STATE_PTR, !0);
    let irq_en = rw_reg(&mut b, "irq_enable_q", reg::IRQ_ENABLE, 3);
    let state_init: Vec<Expr> = (0..sr).map(|i| rw_reg(&mut b, &format!("state_init{i}_q"), reg::STATE_INIT + 4 * i, !0)).collect();
    let we_bell = write_to(&mut b, reg::DOORBELL);
    let doorbell = b.let_("doorbell", &we_bell.and(&wstrb.bit_at(0)).and(&wdata.slice(7, 0).eq_lit(1)));
    let busy = b.reg("busy_q", 1, 0);
    let start = b.let_("start", &doorbell.and(&busy.not()));
    b.assign(&busy_o, &busy);

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
    b.assign(&irq_o, &irq_st.and(&irq_en.slice(1, 0)).any());

    // Reads: the register's value at the handshake cycle.
    let rvalid = b.reg("rvalid_q", 1, 0);
    let rdata = b.reg("rdata_q", 32, 0);
    let arfire = b.let_("axi_arfire", &arvalid.and(&rvalid.not()));
    b.assign(&arready, &rvalid.not());
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
    let rsel = select(&word(&araddr), &rmap);
    b.next(&rdata, &rsel, Some(&arfire));
    b.assign(&rvalid_o, &rvalid);
    b.assign(&rdata_o, &rdata);
    b.assign(&rresp, &Expr::zero(2));

    // ---- descriptor (latched at the doorbell) ----
    let d_prim_base = b.pipe("desc_prim_base_q", &prim_base, &start);
    let d_prim_size = b.pipe("desc_prim_size_q", &prim_size, &start);
    let d_state_ptr = b.pipe("desc_state_ptr_q", &state_ptr, &start);

    // ---- run state ----
    let stopped = b.reg("stopped_q", 1, 0);
    let finished = b.reg("finished_q", 1, 0);
    let fetching = b.reg("fetching_q", 1, 0);
    let r = b.reg("pkt_left_q", rw, 0);
    let done = b.reg_noreset("pkt_done_q", rw);
    let cur_hdr = b.reg_noreset("pkt_header_q", 32);
    let cur_addr = b.reg_noreset("pkt_addr_q", 32);
    let cur_n = b.reg_noreset("pkt_n_q", 14);
    let cur_p: Vec<Expr> = (0..4).map(|k| b.reg_noreset(&format!("pkt_p{k}_q"), 32)).collect();
    let cur_sc_ok = b.reg_noreset("pkt_range_ok_q", 1);
    let left = b.reg("left_q", 32, 0);
    let daddr = b.reg_noreset("daddr_q", 32);
    let pos = b.reg("pos_q", posw, 0);
    let next_id = b.reg("next_id_q", iw, 0);
    let isz32 = b.reg("index32_q", 1, 1);
    let sp = b.reg("sp_q", 2, 0);
    let stack: Vec<(Expr, Expr)> =
        (0..depth).map(|l| (b.reg_noreset(&format!("ret{l}_addr_q"), 32), b.reg_noreset(&format!("ret{l}_left_q"), 32))).collect();

    // ---- instruction pool and fetcher ----
    let held = b.reg("held_q", pw + 1, 0);
    // Beats past the oldest two are read from the pool array; with two
    // beats there is no array (the two registers below are the pool).
    let array = p.pool_beats > 2;
    let rd = array.then(|| b.reg("rd_ptr_q", pw, 0));
    let wp = array.then(|| b.reg("wr_ptr_q", pw, 0));
    let credits = b.reg("credits_q", pw + 1, 0);
    let iw2 = pw + 2;
    let inflight = b.reg("inflight_q", iw2, 0);
    let drop = b.reg("drop_q", iw2, 0);
    let fa = b.reg_noreset("fetch_addr_q", 32);
    let fbeats = b.reg("fetch_beats_q", 32, 0);
    let pool: Vec<Expr> = if array { (0..p.pool_beats).map(|k| b.reg_noreset(&format!("pool{k}_q"), fb)).collect() } else { Vec::new() };
    // A request is issued (counted in flight, its credit taken) in the
    // cycle it is first offered; one not taken at once is held on the port,
    // address and all, until it is (a jump or an error does not withdraw it:
    // its answer is dropped like any other in flight).
    let rq_held = b.reg("imem_req_held_q", 1, 0);
    let rq_addr = b.reg_noreset("imem_req_addr_q", 32);
    let ireq_fire = b.let_(
        "imem_req_issue",
        &fetching.and(&fbeats.ne(&Expr::zero(32))).and(&credits.ne(&Expr::zero(pw + 1))).and(&rq_held.not()),
    );
    b.assign(&imem_req.valid, &rq_held.or(&ireq_fire));
    b.assign(&imem_req.field("addr"), &rq_held.mux(&rq_addr, &fa));
    b.next(&rq_held, &rq_held.or(&ireq_fire).and(&imem_req.ready.not()), None);
    b.next(&rq_addr, &fa, Some(&ireq_fire));
    b.assign(&imem_rsp.ready, &Expr::bit(true));
    let irsp = imem_rsp.valid.clone();
    let dropping = drop.ne(&Expr::zero(iw2));
    let pool_we = b.let_("pool_we", &irsp.and(&dropping.not()));
    let inflight_next = b.let_(
        "inflight_next",
        &inflight.add(&ireq_fire.zext(iw2)).sub(&irsp.zext(iw2)),
    );
    b.next(&inflight, &inflight_next, None);

    // The window: F dwords from `pos` in the head beat and the next one.
    // The oldest two beats are also kept in registers of their own (loaded
    // as beats arrive and move up as the oldest is popped), so the window
    // does not start behind a pool_beats-way read multiplexer.
    let head = b.reg_noreset("pool_head_q", fb);
    let next_beat = b.reg_noreset("pool_next_q", fb);
    // Lane F-1 at pos F-1 reads the next beat's dword F-2 at most.
    let nxt = (f > 1).then(|| next_beat.slice(32 * (f - 1) - 1, 0));
    let wdw: Vec<Expr> = (0..2 * f - 1)
        .map(|j| if j < f { head.part(32 * j, 32) } else { nxt.as_ref().map_or(Expr::zero(32), |n| n.part(32 * (j - f), 32)) })
        .collect();
    let lanes: Vec<Expr> = (0..f)
        .map(|i| {
            let opts: Vec<Expr> = (0..f).map(|s| wdw[(i + s) as usize].clone()).collect();
            let e = if f == 1 { opts[0].clone() } else { select(&pos.slice(lf - 1, 0), &opts) };
            b.let_(&format!("lane{i}"), &e)
        })
        .collect();
    let lit_t = |v: u32| Expr::lit(tw, v as u64);
    let pool_avail = held
        .eq_lit(0)
        .mux(&lit_t(0), &held.eq_lit(1).mux(&lit_t(f).sub(&pos.zext(tw)), &lit_t(f)));
    let left_small = left.slice(31, tw).eq_lit(0);
    let a = b.let_("avail", &left_small.and(&left.slice(tw - 1, 0).lt(&pool_avail)).mux(&left.slice(tw - 1, 0), &pool_avail));

    // ---- the run's state machine ----
    let qfull = b.wire("out_full", 1);
    let qempty = b.wire("out_empty", 1);
    // Jobs the primitive unit holds (0..prim_jobs).
    let jw = clog2(p.prim_jobs as u64 + 1);
    let jobs = b.reg("prim_jobs_q", jw, 0);
    let jobs_none = b.let_("prim_idle", &jobs.eq_lit(0));
    let jobs_full = b.let_("prim_full", &jobs.eq_lit(p.prim_jobs as u64));
    let active = b.let_("decoding", &busy.and(&stopped.not()).and(&finished.not()).and(&qfull.not()));
    let is_cont = b.let_("in_packet", &r.ne(&Expr::zero(rw)));
    let buf_end = b.let_("buffer_end", &active.and(&is_cont.not()).and(&left.eq_lit(0)));
    let take_mode = b.let_("take_mode", &active.and(&is_cont.or(&left.ne(&Expr::zero(32)).and(&a.ne(&lit_t(0))))));

    // Header decode.
    let sp_full = sp.eq_lit(depth as u64);
    let decode = |b: &mut ModuleBuilder, name: &str, h: &Expr, left_at: &Expr| -> Header {
        let ty = h.slice(31, 30);
        let t3 = b.let_(&format!("{name}_t3"), &ty.eq_lit(3));
        let t01 = ty.bit_at(1).not();
        let opc = h.slice(15, 8);
        let op: Vec<Expr> = Opcode::ALL.iter().map(|o| b.let_(&format!("{name}_is_{}", o.name().to_lowercase()), &t3.and(&opc.eq_lit(o.code() as u64)))).collect();
        let known = op.iter().skip(1).fold(op[0].clone(), |acc, x| acc.or(x));
        let n = b.let_(&format!("{name}_n"), &h.slice(29, 16).add(&Expr::lit(14, 1)));
        let count_ok: Vec<Expr> = Opcode::ALL
            .iter()
            .map(|o| match o {
                Opcode::Nop => Expr::bit(true),
                Opcode::SetContextReg => n.gt(&Expr::lit(14, 1)),
                Opcode::IndexType => n.eq_lit(1),
                Opcode::DrawIndexAuto => n.eq_lit(2),
                Opcode::DrawIndexOffset2 | Opcode::DispatchDirect => n.eq_lit(4),
                Opcode::WriteData => n.gt(&Expr::lit(14, 3)),
                Opcode::IndirectBuffer => n.eq_lit(3),
            })
            .collect();
        let bad_count = op.iter().zip(&count_ok).fold(Expr::bit(false), |acc, (o, ok)| acc.or(&o.and(&ok.not())));
        let len = b.let_(&format!("{name}_len"), &t3.mux(&n.zext(rw).add(&Expr::lit(rw, 1)), &Expr::lit(rw, 1)));
        let overrun = left_at.slice(31, rw).ne(&Expr::zero(32 - rw)).not().and(&left_at.slice(rw - 1, 0).lt(&len));
        let nest = op[op_index(Opcode::IndirectBuffer)].and(&sp_full);
        let c = |x: Cause| Expr::lit(4, x.code() as u64);
        let cause = t01.mux(
            &c(Cause::Type),
            &t3.and(&known.not()).mux(
                &c(Cause::Opcode),
                &bad_count.mux(&c(Cause::Count), &overrun.mux(&c(Cause::Overrun), &nest.mux(&c(Cause::Nesting), &Expr::zero(4)))),
            ),
        );
        let cause = b.let_(&format!("{name}_cause"), &cause);
        Header { t3, op, n, len, cause }
    };
    let h0 = decode(&mut b, "hdr0", &lanes[0], &left);

    // ---- the first packet ----
    let opsel = |h: &Expr, o: Opcode| h.slice(15, 8).eq_lit(o.code() as u64);
    let f_hdr = b.let_("first_header", &is_cont.mux(&cur_hdr, &lanes[0]));
    let f_t3 = b.let_("first_t3", &is_cont.or(&h0.t3));
    let f_is = |o: Opcode| f_t3.and(&opsel(&f_hdr, o));
    let f_wd = b.let_("first_write_data", &f_is(Opcode::WriteData));
    let f_scr = b.let_("first_set_context", &f_is(Opcode::SetContextReg));
    let f_ib = b.let_("first_indirect", &f_is(Opcode::IndirectBuffer));
    let f_it = b.let_("first_index_type", &f_is(Opcode::IndexType));
    let f_d2 = b.let_("first_draw_indexed", &f_is(Opcode::DrawIndexOffset2));
    let f_n = b.let_("first_n", &is_cont.mux(&cur_n, &h0.n));
    let f_rem = b.let_("first_left", &is_cont.mux(&r, &h0.len));
    let f_done = b.let_("first_done", &is_cont.mux(&done, &Expr::zero(rw)));
    let f_addr = b.let_("first_addr", &is_cont.mux(&cur_addr, &daddr));
    let a_r = a.zext(rw);
    // "More than i dwords left" for i < F, and "ends within A", without the
    // header's adders: a starting packet's length is c + 2 (c = h[29:16])
    // for a command (1 for c = 0x3FFF) and 1 for a filler.
    let c0 = lanes[0].slice(29, 16);
    let c_one = c0.eq_lit(0x3FFF);
    let c_small = c0.slice(13, tw).eq_lit(0);
    let start_len_gt = |i: u32| -> Expr {
        // c + 2 > i, i <= 4: always for i <= 1; else c >= i - 1.
        let cmd = if i <= 1 { Expr::bit(true) } else { c_small.not().or(&c0.slice(tw - 1, 0).ge(&lit_t(i - 1))) };
        h0.t3.and(&c_one.not()).and(&cmd).or(&Expr::bit(i == 0))
    };
    let r_small = r.slice(rw - 1, tw).eq_lit(0);
    let rem_gt = |i: u32| -> Expr { is_cont.mux(&r_small.not().or(&r.slice(tw - 1, 0).gt(&lit_t(i))), &start_len_gt(i)) };
    // Ends: not more than A dwords left.
    let start_ends = h0.t3.not().or(&c_one).or(&c_small.and(&c0.slice(tw - 1, 0).zext(tw + 1).add(&Expr::lit(tw + 1, 2)).le(&a.zext(tw + 1))));
    let cont_ends = r_small.and(&r.slice(tw - 1, 0).le(&a));
    let f_ends = b.let_("first_ends", &is_cont.mux(&cont_ends, &start_ends));
    let start_err = b.let_("header_error", &take_mode.and(&is_cont.not()).and(&h0.cause.ne(&Expr::zero(4))));
    // Lanes the first packet may take: all it has left up to A (one for WRITE_DATA).
    let tn_all = f_ends.mux(&f_rem.slice(tw - 1, 0), &a);
    let tn = b.let_("first_lanes", &f_wd.mux(&a.ne(&lit_t(0)).zext(tw), &tn_all));
    // Lane i holds the first packet's dword done + i; p_k is dword 1 + k.
    // Lane i is taken by the first packet iff i < tn, i.e. i < A, the
    // packet has more than i dwords left, and i = 0 for WRITE_DATA.
    let lane_in: Vec<Expr> = (0..f)
        .map(|i| {
            let one = if i == 0 { Expr::bit(true) } else { f_wd.not() };
            b.let_(&format!("lane{i}_first"), &lit_t(i).lt(&a).and(&rem_gt(i)).and(&one))
        })
        .collect();
    let lane_has = |i: u32, dword: u32| -> Expr {
        if dword < i {
            Expr::bit(false)
        } else {
            f_done.eq_lit((dword - i) as u64).and(&lane_in[i as usize])
        }
    };
    let mp: Vec<Expr> = (0..4u32)
        .map(|k| {
            let base = is_cont.mux(&cur_p[k as usize], &Expr::zero(32));
            let v = (0..f).rev().fold(base, |acc, i| lane_has(i, 1 + k).mux(&lanes[i as usize], &acc));
            b.let_(&format!("first_p{k}"), &v)
        })
        .collect();
    // SET_CONTEXT_REG: p0 + n - 1 <= state_regs.
    let range_bad = |p0: &Expr, n: &Expr| p0.zext(34).add(&n.zext(34)).gt(&Expr::lit(34, sr as u64 + 1));
    let f_p0_now = b.let_("first_p0_now", &(0..f).fold(Expr::bit(false), |acc, i| acc.or(&lane_has(i, 1))));
    let f_scr_bad = b.let_("first_range_bad", &range_bad(&mp[0], &f_n));
    let f_sc_ok = b.let_("first_range_ok", &f_p0_now.mux(&f_scr_bad.not(), &cur_sc_ok));
    let first_scr_err = b.let_("first_range_error", &take_mode.and(&start_err.not()).and(&f_scr).and(&f_p0_now).and(&f_scr_bad));
    // Checks at the end of a packet.
    let it_bad = mp[0].gt(&Expr::lit(32, 1));
    let ib_bad = mp[1].ne(&Expr::zero(32)).or(&mp[0].slice(1, 0).ne(&Expr::zero(2)));
    let om = mp[1].zext(35).add(&mp[2].zext(35));
    let span = isz32.mux(&Expr::cat(&[om.slice(32, 0), Expr::zero(2)]), &Expr::cat(&[om.slice(33, 0), Expr::zero(1)]));
    let prim_bad = b.let_("prim_range_bad", &span.gt(&d_prim_size.zext(35)));
    let ends_ok = take_mode.and(&start_err.not()).and(&f_wd.not()).and(&f_ends);
    let field_err = b.let_("first_field_error", &ends_ok.and(&f_it.and(&it_bad).or(&f_ib.and(&ib_bad))));
    let prim_err = b.let_("first_prim_error", &ends_ok.and(&f_d2).and(&prim_bad));
    // WRITE_DATA, one dword a cycle.
    let wd_cont = f_wd.and(&is_cont);
    let wd_field_err = b.let_(
        "write_field_error",
        &take_mode.and(&wd_cont).and(&done.eq_lit(3)).and(&a.ne(&lit_t(0))).and(&lanes[0].ne(&Expr::zero(32)).or(&cur_p[1].slice(1, 0).ne(&Expr::zero(2)))),
    );
    let wd_data = b.let_("write_data_dword", &wd_cont.and(&done.gt(&Expr::lit(rw, 3))));
    let wr_valid = b.let_("wr_offer", &take_mode.and(&wd_data).and(&a.ne(&lit_t(0))));
    let wd_go = b.let_("write_fence_clear", &qempty.and(&jobs_none));
    let wd_take = b.let_(
        "write_take",
        &a.ne(&lit_t(0)).and(&is_cont.mux(&wd_data.mux(&wr.ready, &wd_field_err.not()), &wd_go)),
    );
    let first_err = b.let_("first_error", &start_err.or(&first_scr_err).or(&field_err).or(&prim_err).or(&wd_field_err));
    // A draw with indices waits for the primitive unit.
    let blocked = b.let_("draw_waits", &f_d2.and(&f_ends).and(&mp[2].ne(&Expr::zero(32))).and(&jobs_full));
    // What the cycle takes and where the packets end are worked out as if no
    // error were raised: after an error the decoder stops, so positions,
    // counts and the current packet no longer matter (the next doorbell sets
    // them), and the error checks (the draw's range: an add and a compare
    // on payload dwords) stay off those paths. Commits, table writes and
    // jobs do wait for them.
    let t_first = b.let_(
        "first_take",
        &take_mode.mux(&f_wd.mux(&wd_take.zext(tw), &blocked.mux(&lit_t(0), &tn)), &lit_t(0)),
    );
    let f_fin_any = b.let_(
        "first_finishes_if_no_error",
        &take_mode.and(&f_wd.mux(&wd_take.and(&is_cont).and(&r.eq_lit(1)), &f_ends.and(&blocked.not()))),
    );
    let f_fin = b.let_("first_finishes", &f_fin_any.and(&first_err.not()));
    let commit = b.let_("commit", &f_fin.and(&f_t3));

    // ---- the second packet: a header in lane e = r, after the first ended ----
    let sec_pre = b.let_("second_possible", &f_fin_any.and(&is_cont).and(&f_ib.not()).and(&r.lt(&a_r)));
    let e_is: Vec<Expr> = (0..f).map(|e| if e == 0 { Expr::bit(false) } else { r.eq_lit(e as u64) }).collect();
    let by_e = |b: &mut ModuleBuilder, name: &str, vals: &dyn Fn(u32) -> Expr, w: u32| -> Expr {
        let v = (1..f).fold(Expr::zero(w), |acc, e| e_is[e as usize].mux(&vals(e), &acc));
        b.let_(name, &v)
    };
    let sec_hdr = by_e(&mut b, "second_header", &|e| lanes[e as usize].clone(), 32);
    let e_t = by_e(&mut b, "second_lane", &|e| lit_t(e), tw);
    let sec_left = left.sub(&e_t.zext(32));
    let h1 = decode(&mut b, "hdr1", &sec_hdr, &sec_left);
    let sec_hdr_err = b.let_("second_header_error", &sec_pre.and(&h1.cause.ne(&Expr::zero(4))));
    let h1_wd = h1.op[op_index(Opcode::WriteData)].clone();
    let h1_scr = h1.op[op_index(Opcode::SetContextReg)].clone();
    let room2 = a.sub(&e_t);
    let n2_small = h1.n.slice(13, tw).eq_lit(0).and(&h1.n.slice(tw - 1, 0).lt(&room2));
    let t2_max = n2_small.mux(&h1.n.slice(tw - 1, 0), &room2);
    // After a WRITE_DATA (one dword a cycle) the second header is only checked.
    let sec_go = sec_pre.and(&sec_hdr_err.not()).and(&h1.t3).and(&h1_wd.not()).and(&f_wd.not());
    let t2 = b.let_("second_take", &sec_go.mux(&t2_max, &lit_t(0)));
    let sec_starts = b.let_("second_starts", &t2.ne(&lit_t(0)));
    // The second packet's p_k: lane e + 1 + k when k + 1 < t2.
    let sp_k: Vec<Expr> = (0..4u32)
        .map(|k| {
            by_e(
                &mut b,
                &format!("second_p{k}"),
                &|e| {
                    let lane = e + 1 + k;
                    if lane < f {
                        lit_t(k + 1).lt(&t2).mux(&lanes[lane as usize], &Expr::zero(32))
                    } else {
                        Expr::zero(32)
                    }
                },
                32,
            )
        })
        .collect();
    let s_p0_now = b.let_("second_p0_now", &sec_starts.and(&t2.gt(&lit_t(1))));
    let s_scr_bad = b.let_("second_range_bad", &range_bad(&sp_k[0], &h1.n));
    let sec_scr_err = b.let_("second_range_error", &s_p0_now.and(&h1_scr).and(&s_scr_bad));
    let dec_err = b.let_("decode_error", &first_err.or(&sec_hdr_err).or(&sec_scr_err));
    let c4 = |x: Cause| Expr::lit(4, x.code() as u64);
    let first_cause = start_err.mux(
        &h0.cause,
        &first_scr_err.mux(&c4(Cause::StateRange), &prim_err.mux(&c4(Cause::PrimRange), &c4(Cause::Field))),
    );
    let sec_addr = daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), e_t.clone(), Expr::zero(2)]));
    let cause_now = first_err.mux(&first_cause, &sec_hdr_err.mux(&h1.cause, &c4(Cause::StateRange)));
    let addr_now = first_err.mux(&f_addr, &sec_addr);

    // ---- state table ----
    let reg_idx_w = 7;
    let mut state_q = Vec::new();
    for s in 0..sr {
        let q = b.reg(&format!("state{s}_q"), 32, 0);
        state_q.push(q);
    }
    // Lane i writes as a value of the first packet (value k = done + i - 2 to
    // p0 + k) or of the second (value k = i - e - 2).
    let f_writes = take_mode.and(&first_err.not()).and(&f_scr).and(&f_sc_ok);
    let s_writes = sec_starts.and(&first_err.not()).and(&h1_scr).and(&s_p0_now).and(&s_scr_bad.not());
    let mut lane_we = Vec::new();
    let mut lane_reg = Vec::new();
    for i in 0..f {
        // First packet: dword done + i >= 2 and i < tn.
        let dword = f_done.add(&Expr::lit(rw, i as u64));
        let fw = f_writes.and(&lit_t(i).lt(&tn)).and(&dword.ge(&Expr::lit(rw, 2)));
        let ftarget = mp[0].slice(reg_idx_w - 1, 0).add(&dword.slice(reg_idx_w - 1, 0)).sub(&Expr::lit(reg_idx_w, 2));
        // Second packet: lane i = e + 2 + k, i < e + t2.
        let mut sw_e = Expr::bit(false);
        let mut starget = Expr::zero(reg_idx_w);
        for e in 1..f {
            if i >= e + 2 {
                let k = i - e - 2;
                let here = e_is[e as usize].and(&lit_t(i - e).lt(&t2));
                sw_e = sw_e.or(&here);
                starget = e_is[e as usize].mux(&sp_k[0].slice(reg_idx_w - 1, 0).add(&Expr::lit(reg_idx_w, k as u64)), &starget);
            }
        }
        let swr = s_writes.and(&sw_e);
        let we = b.let_(&format!("lane{i}_state_we"), &fw.or(&swr));
        let target = b.let_(&format!("lane{i}_state_reg"), &fw.mux(&ftarget, &starget));
        lane_we.push(we);
        lane_reg.push(target);
    }
    for (s, q) in state_q.iter().enumerate() {
        let mut d = q.clone();
        let mut any = Expr::bit(false);
        for i in 0..f as usize {
            let hit = lane_we[i].and(&lane_reg[i].eq_lit(s as u64));
            d = hit.mux(&lanes[i], &d);
            any = any.or(&hit);
        }
        let d = start.mux(&state_init[s], &d);
        b.next(q, &d, Some(&start.or(&any)));
    }
    b.assign(&state_o, &Expr::cat_lanes(&state_q));

    // ---- output queue ----
    let cmd_fire = b.let_("cmd_fire", &cmd.valid.clone().and(&cmd.ready));
    let rec_vals = [next_id.clone(), f_addr.clone(), f_hdr.clone(), f_n.clone(), mp[0].clone(), mp[1].clone(), mp[2].clone(), mp[3].clone()];
    let qfields: Vec<(&str, u32)> = rec_fields.iter().map(|(n, w, _)| (*n, *w)).collect();
    let oq = shift_queue(&mut b, "outq", p.out_depth, &qfields, std::slice::from_ref(&cmd_fire), &[(commit.clone(), rec_vals.to_vec())]);
    b.assign(&qfull, &oq.has[p.out_depth as usize - 1]);
    b.assign(&qempty, &oq.has[0].not());
    b.assign(&cmd.valid, &oq.has[0]);
    for (k, (n, _, _)) in rec_fields.iter().enumerate() {
        b.assign(&cmd.field(n), &oq.entries[0][k]);
    }
    b.assign(&cmd.field("state_ptr"), &d_state_ptr);
    // Trace: the record, the cycle after the commit.
    let tv = b.reg("trace_valid_q", 1, 0);
    b.next(&tv, &commit, None);
    b.assign(&trace_valid, &tv);
    for (k, port) in trace_ports.iter().enumerate() {
        let q = b.pipe(&format!("trace_{}_q", rec_fields[k].0), &rec_vals[k], &commit);
        b.assign(port, &q);
    }
    b.next(&next_id, &start.mux(&Expr::zero(iw), &next_id.add(&Expr::lit(iw, 1))), Some(&start.or(&commit)));
    b.next(&cmd_count, &start.mux(&Expr::zero(32), &cmd_count.add(&Expr::lit(32, 1))), Some(&start.or(&commit)));
    b.next(&isz32, &start.mux(&Expr::bit(true), &mp[0].bit_at(0)), Some(&start.or(&commit.and(&f_it))));

    // ---- write port ----
    let wa = b.reg_noreset("write_addr_q", 32);
    b.assign(&wr.valid, &wr_valid);
    b.assign(&wr.field("addr"), &wa);
    b.assign(&wr.field("data"), &lanes[0]);
    b.assign(&wr.field("last"), &r.eq_lit(1));
    let wd_p2_take = take_mode.and(&wd_cont).and(&done.eq_lit(3)).and(&t_first.ne(&lit_t(0)));
    let wr_fire = wr_valid.and(&wr.ready);
    b.next(&wa, &wd_p2_take.mux(&cur_p[1], &wa.add(&Expr::lit(32, 4))), Some(&wd_p2_take.or(&wr_fire)));

    // ---- jumps: doorbell, INDIRECT_BUFFER, return ----
    let t_total = b.let_("take", &t_first.add(&t2));
    let ib_jump = b.let_("indirect_jump", &commit.and(&f_ib));
    let ret = b.let_("buffer_return", &buf_end.and(&sp.ne(&Expr::zero(2))));
    let top_addr = select(&sp.sub(&Expr::lit(2, 1)), &stack.iter().map(|s| s.0.clone()).collect::<Vec<_>>());
    let top_left = select(&sp.sub(&Expr::lit(2, 1)), &stack.iter().map(|s| s.1.clone()).collect::<Vec<_>>());
    let (top_addr, top_left) = if depth == 0 { (Expr::zero(32), Expr::zero(32)) } else { (top_addr, top_left) };
    let j_addr = b.let_("jump_addr", &start.mux(&cmd_base, &ib_jump.mux(&mp[0], &top_addr)));
    let j_size = b.let_(
        "jump_dwords",
        &start.mux(&Expr::cat(&[Expr::zero(2), cmd_size.slice(31, 2)]), &ib_jump.mux(&mp[2].slice(19, 0).zext(32), &top_left)),
    );
    let jump = b.let_("jump", &start.or(&ib_jump).or(&ret));
    let pos_of = |a: &Expr| if lf == 0 { Expr::zero(posw) } else { a.slice(lf + 1, 2) };
    let j_pos = b.let_("jump_pos", &pos_of(&j_addr));
    // The beats to fetch, worked out for each kind of jump side by side and
    // chosen last (the INDIRECT_BUFFER's decision comes late in the cycle).
    // An empty buffer fetches nothing (whatever its alignment).
    let beats_of = |size: &Expr, addr: &Expr| -> Expr {
        size.eq_lit(0).mux(&Expr::zero(32), &size.zext(34).add(&pos_of(addr).zext(34)).add(&Expr::lit(34, f as u64 - 1)).slice(31 + lf, lf).zext(32))
    };
    let beats_start = beats_of(&Expr::cat(&[Expr::zero(2), cmd_size.slice(31, 2)]), &cmd_base);
    let beats_ib = beats_of(&mp[2].slice(19, 0).zext(32), &mp[0]);
    let beats_ret = beats_of(&top_left, &top_addr);
    let j_beats = b.let_("jump_beats", &start.mux(&beats_start, &ib_jump.mux(&beats_ib, &beats_ret)));
    let j_fa = Expr::cat(&[j_addr.slice(31, lbb), Expr::zero(lbb)]);
    if depth > 0 {
        for (l, (sa, sl)) in stack.iter().enumerate() {
            // An INDIRECT_BUFFER that commits takes all it has left (f_rem
            // <= A): the return point, from values known early.
            let push_here = ib_jump.and(&sp.eq_lit(l as u64));
            let t_ib = f_rem.slice(tw - 1, 0);
            b.next(sa, &daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), t_ib.clone(), Expr::zero(2)])), Some(&push_here));
            b.next(sl, &left.sub(&t_ib.zext(32)), Some(&push_here));
        }
    }
    b.next(
        &sp,
        &start.mux(&Expr::zero(2), &ib_jump.mux(&sp.add(&Expr::lit(2, 1)), &sp.sub(&Expr::lit(2, 1)))),
        Some(&start.or(&ib_jump).or(&ret)),
    );

    // ---- pool, fetcher and decoder position updates ----
    let pos_sum = pos.zext(tw).add(&t_total);
    let pop = b.let_("pool_pop", &take_mode.and(&pos_sum.ge(&lit_t(f))));
    let pos_adv = if lf == 0 { Expr::zero(posw) } else { pos_sum.slice(lf - 1, 0) };
    let advance = take_mode.clone();
    b.next(&pos, &jump.mux(&j_pos, &pos_adv), Some(&jump.or(&advance)));
    b.next(&left, &jump.mux(&j_size, &left.sub(&t_total.zext(32))), Some(&jump.or(&advance)));
    b.next(&daddr, &jump.mux(&j_addr, &daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), t_total.clone(), Expr::zero(2)]))), Some(&jump.or(&advance)));
    let one_p = |w: u32| Expr::lit(w, 1);
    let hw_ = pw + 1;
    b.next(
        &held,
        &jump.mux(&Expr::zero(hw_), &held.add(&pool_we.zext(hw_)).sub(&pop.zext(hw_))),
        None,
    );
    if let (Some(rd), Some(wp)) = (&rd, &wp) {
        b.next(rd, &jump.mux(&Expr::zero(pw), &rd.add(&one_p(pw))), Some(&jump.or(&pop)));
        b.next(wp, &jump.mux(&Expr::zero(pw), &wp.add(&one_p(pw))), Some(&jump.or(&pool_we)));
        for (k, q) in pool.iter().enumerate() {
            b.next(q, &imem_rsp.field("data"), Some(&pool_we.and(&wp.eq_lit(k as u64))));
        }
    }
    // The beats in order: head, next, the third (from the array), then the
    // beat arriving now (at position `held`).
    let third = rd.as_ref().map_or(Expr::zero(fb), |rd| select(&rd.add(&Expr::lit(pw, 2)), &pool));
    let stored = [head.clone(), next_beat.clone(), third];
    let seq = |i: usize| held.gt(&Expr::lit(hw_, i as u64)).mux(&stored[i], &imem_rsp.field("data"));
    b.next(&head, &pop.mux(&seq(1), &seq(0)), None);
    b.next(&next_beat, &pop.mux(&seq(2), &seq(1)), None);
    b.next(
        &credits,
        &jump.mux(&Expr::lit(hw_, p.pool_beats as u64), &credits.sub(&ireq_fire.zext(hw_)).add(&pop.zext(hw_))),
        None,
    );
    b.next(&drop, &jump.mux(&inflight_next, &drop.sub(&irsp.and(&dropping).zext(iw2))), None);
    b.next(&fa, &jump.mux(&j_fa, &fa.add(&Expr::lit(32, 4 * f as u64))), Some(&jump.or(&ireq_fire)));
    b.next(&fbeats, &jump.mux(&j_beats, &fbeats.sub(&Expr::lit(32, 1))), Some(&jump.or(&ireq_fire)));

    // ---- current packet registers ----
    let upd = take_mode.and(&t_first.ne(&lit_t(0)));
    let rem_first = f_rem.sub(&t_first.zext(rw));
    let r_next = f_fin_any.mux(&sec_starts.mux(&h1.len.sub(&t2.zext(rw)), &Expr::zero(rw)), &rem_first);
    b.next(&r, &start.mux(&Expr::zero(rw), &r_next), Some(&start.or(&upd)));
    b.next(&done, &f_fin_any.mux(&t2.zext(rw), &f_done.add(&t_first.zext(rw))), Some(&upd));
    b.next(&cur_hdr, &f_fin_any.mux(&sec_hdr, &f_hdr), Some(&upd));
    b.next(&cur_addr, &f_fin_any.mux(&sec_addr, &f_addr), Some(&upd));
    b.next(&cur_n, &f_fin_any.mux(&h1.n, &f_n), Some(&upd));
    for k in 0..4 {
        b.next(&cur_p[k], &f_fin_any.mux(&sp_k[k], &mp[k]), Some(&upd));
    }
    b.next(&cur_sc_ok, &f_fin_any.mux(&s_scr_bad.not(), &f_sc_ok), Some(&upd));

    // ---- the primitive unit ----
    // A job queue of prim_jobs entries; the request side and the index side
    // each walk it in commit order. Beats go through one pool in request
    // order, so the pool's head beat always belongs to the oldest job.
    let nj = p.prim_jobs;
    let jpw = clog2(nj as u64).max(1);
    let bw32 = 32 - lbb;
    let pposw = lf + 1;
    let job_fields: [(&str, u32); 6] = [("id", iw), ("beat", bw32), ("beats", 32), ("pos", pposw), ("count", 32), ("index16", 1)];
    let job_q: Vec<Vec<Expr>> = (0..nj)
        .map(|j| job_fields.iter().map(|(n, w)| b.reg_noreset(&format!("job{j}_{n}_q"), *w)).collect())
        .collect();
    let jpush = b.reg("job_push_q", jpw, 0);
    let jfetch = b.reg("job_fetch_q", jpw, 0);
    let jout = b.reg("job_out_q", jpw, 0);
    let unfetched = b.reg("jobs_unfetched_q", jw, 0);
    let field_of = |b: &mut ModuleBuilder, name: &str, ptr: &Expr, k: usize| -> Expr {
        let items: Vec<Expr> = job_q.iter().map(|e| e[k].clone()).collect();
        b.let_(name, &select(ptr, &items))
    };
    let bump = |q: &Expr| -> Expr { q.eq_lit(nj as u64 - 1).mux(&Expr::zero(jpw), &q.add(&Expr::lit(jpw, 1))) };
    let job_start = b.let_("prim_job_push", &commit.and(&f_d2).and(&mp[2].ne(&Expr::zero(32))));
    let pb_addr = b.let_(
        "prim_first_byte",
        &d_prim_base.add(&isz32.mux(&Expr::cat(&[mp[1].slice(29, 0), Expr::zero(2)]), &Expr::cat(&[mp[1].slice(30, 0), Expr::zero(1)]))),
    );
    let pb_off = pb_addr.slice(lbb - 1, 0);
    let m_bytes = isz32.mux(&Expr::cat(&[mp[2].clone(), Expr::zero(2)]), &Expr::cat(&[Expr::zero(1), mp[2].clone(), Expr::zero(1)]));
    let pj_beats = m_bytes.zext(36).add(&pb_off.zext(36)).add(&Expr::lit(36, 4 * f as u64 - 1)).slice(31 + lbb, lbb);
    let pos32 = if lf == 0 { Expr::zero(pposw) } else { pb_off.slice(lbb - 1, 2).zext(pposw) };
    let pj_pos = isz32.mux(&pos32, &pb_off.slice(lbb - 1, 1));
    let new_job = [next_id.clone(), pb_addr.slice(31, lbb), pj_beats, pj_pos, mp[2].clone(), isz32.not()];
    for (j, e) in job_q.iter().enumerate() {
        let here = job_start.and(&jpush.eq_lit(j as u64));
        for (k, q) in e.iter().enumerate() {
            b.next(q, &new_job[k], Some(&here));
        }
    }
    b.next(&jpush, &start.mux(&Expr::zero(jpw), &bump(&jpush)), Some(&start.or(&job_start)));

    // Requests: the oldest job not all requested, its next beat.
    let phw = ppw + 1;
    let pcred = b.reg("prim_credits_q", phw, 0);
    let fdone = b.reg("job_beats_asked_q", 32, 0);
    let f_beat = field_of(&mut b, "fetch_job_beat", &jfetch, 1);
    let f_beats = field_of(&mut b, "fetch_job_beats", &jfetch, 2);
    let preq_valid = b.let_("pmem_req", &unfetched.ne(&Expr::zero(jw)).and(&pcred.ne(&Expr::zero(phw))));
    b.assign(&pmem_req.valid, &preq_valid);
    b.assign(&pmem_req.field("addr"), &Expr::cat(&[f_beat.add(&fdone.slice(bw32 - 1, 0)), Expr::zero(lbb)]));
    let preq_fire = b.let_("pmem_req_fire", &preq_valid.and(&pmem_req.ready));
    let fetched_all = b.let_("job_all_asked", &preq_fire.and(&fdone.add(&Expr::lit(32, 1)).eq(&f_beats)));
    b.next(&fdone, &fetched_all.or(&start).mux(&Expr::zero(32), &fdone.add(&Expr::lit(32, 1))), Some(&preq_fire.or(&start)));
    b.next(&jfetch, &start.mux(&Expr::zero(jpw), &bump(&jfetch)), Some(&start.or(&fetched_all)));
    b.next(
        &unfetched,
        &start.mux(&Expr::zero(jw), &unfetched.add(&job_start.zext(jw)).sub(&fetched_all.zext(jw))),
        None,
    );

    // The pool and the indices of the oldest job.
    b.assign(&pmem_rsp.ready, &Expr::bit(true));
    let prsp = pmem_rsp.valid.clone();
    let pheld = b.reg("prim_held_q", phw, 0);
    let prd = b.reg("prim_rd_ptr_q", ppw, 0);
    let pwp = b.reg("prim_wr_ptr_q", ppw, 0);
    let ppool: Vec<Expr> = (0..p.prim_beats).map(|k| b.reg_noreset(&format!("prim_pool{k}_q"), fb)).collect();
    let started = b.reg("job_started_q", 1, 0);
    let ppos_q = b.reg_noreset("prim_pos_q", pposw);
    let pleft_q = b.reg_noreset("prim_left_q", 32);
    let o_id = field_of(&mut b, "out_job_id", &jout, 0);
    let o_pos = field_of(&mut b, "out_job_pos", &jout, 3);
    let o_count = field_of(&mut b, "out_job_count", &jout, 4);
    let o_16 = field_of(&mut b, "out_job_index16", &jout, 5);
    let ppos = b.let_("prim_pos", &started.mux(&ppos_q, &o_pos));
    let pleft = b.let_("prim_left", &started.mux(&pleft_q, &o_count));
    let phead = b.let_("prim_head", &select(&prd, &ppool));
    let idx16: Vec<Expr> = (0..2 * f).map(|j| phead.part(16 * j, 16).zext(32)).collect();
    let idx32: Vec<Expr> = (0..f).map(|j| phead.part(32 * j, 32)).collect();
    let pindex = o_16.mux(&select(&ppos, &idx16), &select(&ppos, &idx32));
    let pvalid = b.let_("prim_offer", &jobs_none.not().and(&pheld.ne(&Expr::zero(phw))));
    b.assign(&prim.valid, &pvalid);
    b.assign(&prim.field("id"), &o_id);
    b.assign(&prim.field("index"), &pindex);
    let plast = b.let_("prim_last", &pleft.eq_lit(1));
    b.assign(&prim.field("last"), &plast);
    let pfire = b.let_("prim_fire", &pvalid.and(&prim.ready));
    let beat_end = o_16.mux(&ppos.eq_lit(2 * f as u64 - 1), &ppos.eq_lit(f as u64 - 1));
    let ppop = b.let_("prim_pop", &pfire.and(&beat_end.or(&plast)));
    let job_end = b.let_("prim_job_end", &pfire.and(&plast));
    b.next(&started, &start.mux(&Expr::bit(false), &plast.not()), Some(&start.or(&pfire)));
    b.next(&pleft_q, &pleft.sub(&Expr::lit(32, 1)), Some(&pfire));
    b.next(&ppos_q, &beat_end.mux(&Expr::zero(pposw), &ppos.add(&Expr::lit(pposw, 1))), Some(&pfire));
    b.next(&jout, &start.mux(&Expr::zero(jpw), &bump(&jout)), Some(&start.or(&job_end)));
    b.next(&jobs, &start.mux(&Expr::zero(jw), &jobs.add(&job_start.zext(jw)).sub(&job_end.zext(jw))), None);
    b.next(&pcred, &start.mux(&Expr::lit(phw, p.prim_beats as u64), &pcred.sub(&preq_fire.zext(phw)).add(&ppop.zext(phw))), None);
    b.next(&pheld, &start.mux(&Expr::zero(phw), &pheld.add(&prsp.zext(phw)).sub(&ppop.zext(phw))), None);
    b.next(&prd, &start.mux(&Expr::zero(ppw), &prd.add(&Expr::lit(ppw, 1))), Some(&start.or(&ppop)));
    b.next(&pwp, &start.mux(&Expr::zero(ppw), &pwp.add(&Expr::lit(ppw, 1))), Some(&start.or(&prsp)));
    for (k, q) in ppool.iter().enumerate() {
        b.next(q, &pmem_rsp.field("data"), Some(&prsp.and(&pwp.eq_lit(k as u64))));
    }

    // ---- errors, the end of a run, status ----
    let raise = b.let_("raise_error", &take_mode.and(&dec_err));
    b.next(&stopped, &start.mux(&Expr::bit(false), &stopped.or(&raise)), None);
    b.next(&finished, &start.mux(&Expr::bit(false), &finished.or(&buf_end.and(&sp.eq_lit(0)))), None);
    b.next(&fetching, &start.or(&ib_jump).or(&ret).or(&fetching.and(&raise.not())), None);
    b.next(&err_cause, &start.mux(&Expr::zero(4), &cause_now), Some(&start.or(&raise)));
    b.next(&err_addr, &start.mux(&Expr::zero(32), &addr_now), Some(&start.or(&raise)));
    let run_end = b.let_(
        "run_end",
        &busy.and(&stopped.or(&finished)).and(&qempty).and(&jobs_none).and(&inflight.eq_lit(0)),
    );
    b.next(&busy, &start.or(&busy.and(&run_end.not())), None);
    b.next(&st_error, &start.mux(&Expr::bit(false), &stopped), Some(&start.or(&run_end)));
    b.next(&st_done, &start.mux(&Expr::bit(false), &stopped.not()), Some(&start.or(&run_end)));
    let we_irq = write_to(&mut b, reg::IRQ_STATUS);
    let clear = we_irq.and(&wstrb.bit_at(0)).mux(&wdata.slice(1, 0), &Expr::zero(2));
    let set = run_end.mux(&stopped.mux(&Expr::lit(2, reg::IRQ_ERROR as u64), &Expr::lit(2, reg::IRQ_DONE as u64)), &Expr::zero(2));
    b.next(&irq_st, &irq_st.and(&clear.not()).or(&set), None);

    let top = b.finish()?;
    Ok(Design::of(top, p))
}
