//! `tex` on the DMA queue (docs/cu.md, "`tex`" and "Texture operations"): a
//! state machine that configures the `texture` block, gives it the
//! operation's ops, serves its one memory bank from the scratchpad's port
//! `rd5` (a texel word `w` is the texel at `T + w*z`) and writes its results
//! on `wr3`, one word a cycle.
//!
//! States: three (`conv`: four) configuration writes; `conv`'s weights (a
//! read of each weight's word, its configuration write the cycle after);
//! then either the samples, one at a time (READ `u`, READ `v`, the op, its
//! result, its words), or the conv quads offered back to back while a
//! writer empties each result in four cycles.

use crate::rtl::bus::Bus;
use crate::rtl::{select, Expr, ModuleBuilder, Stream};
use gpurtl_params::cu::CuParams;

/// The operation at the head of the DMA queue (when its kind is `tex`).
pub struct Io {
    pub start: Expr,
    /// The texture's first byte and the output's (scratchpad addresses).
    pub t: Expr,
    pub o: Expr,
    /// The value of `rc`: samples: the list's scratchpad address (in the low
    /// bits); conv: `x0 | y0 << 16`.
    pub c: Expr,
    pub w: Expr,
    pub h: Expr,
    /// The instruction's `imm` (kind, channel, format, modes, `n` or the
    /// kernel and quad counts).
    pub imm: Expr,
    pub spm_rd: Bus,
    pub spm_wr: Bus,
    /// The texture unit's streams.
    pub cfg: Stream,
    pub op: Stream,
    pub res: Stream,
    pub mreq: Stream,
    pub mrsp: Stream,
}

pub struct Engine {
    pub busy: Expr,
    pub started: Expr,
    pub done: Expr,
    /// A texel read is taken in this cycle.
    pub fetch: Expr,
}

const SB: u32 = 4;
const IDLE: u64 = 0;
const CFG0: u64 = 1;
const CFG2: u64 = 2;
const CFG3: u64 = 3;
const CFG1: u64 = 4;
const WGT: u64 = 5;
const RD_U: u64 = 6;
const RSP_U: u64 = 7;
const RD_V: u64 = 8;
const RSP_V: u64 = 9;
const OP: u64 = 10;
const RES: u64 = 11;
const WR: u64 = 12;
const CONV: u64 = 13;

pub fn engine(b: &mut ModuleBuilder, p: &CuParams, io: Io) -> Engine {
    let sw = p.smem_addr_bits();
    let lit = |w: u32, v: u64| Expr::lit(w, v);
    let st = b.reg("tex_state_q", SB, IDLE);
    let is = |x: u64| st.eq_lit(x);
    let busy = b.let_("tex_busy", &is(IDLE).not());
    let started = b.let_("tex_start", &io.start.and(&busy.not()));
    let kind_in = io.imm.slice(9, 8);
    let conv_in = kind_in.eq_lit(3);
    let empty = conv_in.not().and(&io.imm.slice(31, 18).eq_lit(0));
    let go = b.let_("tex_go", &started.and(&empty.not()));

    // ---- the operation, captured at its start ----
    let cap = |b: &mut ModuleBuilder, n: &str, v: &Expr| {
        let q = b.reg_noreset(&format!("tex_{n}_q"), v.width());
        b.next(&q, v, Some(&go));
        q
    };
    let t = cap(b, "t", &io.t);
    let w = cap(b, "w", &io.w);
    let h = cap(b, "h", &io.h);
    let imm = cap(b, "imm", &io.imm.slice(17, 8));
    let quads = cap(b, "quads", &io.imm.slice(31, 24));
    let x0 = cap(b, "x0", &io.c.slice(15, 0));
    let y0 = cap(b, "y0", &io.c.slice(31, 16));
    // imm bits 17:8 (kind, channel, format, modes) and 31:24 (QW - 1, QH - 1).
    let kind = imm.slice(1, 0);
    let conv = kind.eq_lit(3);
    let channel = imm.slice(3, 2);
    let fmt = imm.slice(5, 4);
    let kw1 = w.slice(15, 13);
    let kh1 = h.slice(15, 13);
    let qw1 = quads.slice(3, 0);
    let qh1 = quads.slice(7, 4);
    let nwt = b.let_("tex_nwt", &kw1.zext(7).add(&lit(7, 1)).mul(&kh1.zext(7).add(&lit(7, 1))));
    // Words a sample's result: gather4 and rgba8 four, else one.
    let nw4 = kind.eq_lit(2).or(&fmt.eq_lit(2));

    // ---- the scratchpad's rd5: this machine's reads or the texture's ----
    let own_req = b.wire("tex_own_req", 1);
    let own_addr = b.wire("tex_own_addr", sw);
    let own_rsp_ready = b.wire("tex_own_rsp_ready", 1);
    let tx_pend = b.reg("tex_texel_pend_q", 1, 0);
    let tx_lane = b.reg_noreset("tex_texel_lane_q", 2);
    let w_byte = select(&fmt, &[io.mreq.field("addr").zext(sw), Expr::cat(&[io.mreq.field("addr"), Expr::zero(1)]).zext(sw + 1).slice(sw - 1, 0), Expr::cat(&[io.mreq.field("addr"), Expr::zero(2)]).zext(sw + 2).slice(sw - 1, 0), io.mreq.field("addr").zext(sw)]);
    let texel_addr = b.let_("tex_texel_addr", &t.add(&w_byte.slice(sw - 1, 0)));
    let rd = io.spm_rd.clone();
    b.assign(&rd.req().valid, &own_req.or(&io.mreq.valid));
    b.assign(&rd.req().field("addr"), &own_req.mux(&own_addr, &texel_addr));
    b.assign(&io.mreq.ready, &rd.req().ready.and(&own_req.not()));
    let fetch = b.let_("tex_fetch", &io.mreq.valid.and(&io.mreq.ready));
    let rdata = rd.rsp().field("data");
    let lane_byte = |lane: &Expr| select(lane, &[rdata.slice(7, 0), rdata.slice(15, 8), rdata.slice(23, 16), rdata.slice(31, 24)]);
    let texel = select(&fmt, &[lane_byte(&tx_lane).zext(32), tx_lane.bit_at(1).mux(&rdata.slice(31, 16), &rdata.slice(15, 0)).zext(32), rdata.clone(), rdata.clone()]);
    b.assign(&io.mrsp.valid, &rd.rsp().valid.and(&tx_pend));
    b.assign(&io.mrsp.field("data"), &texel);
    b.assign(&rd.rsp().ready, &tx_pend.mux(&io.mrsp.ready, &own_rsp_ready));
    let tx_rsp = io.mrsp.valid.and(&io.mrsp.ready);
    b.next(&tx_pend, &fetch.or(&tx_pend.and(&tx_rsp.not())), None);
    b.next(&tx_lane, &texel_addr.slice(1, 0), Some(&fetch));
    let own_take = b.let_("tex_own_take", &own_req.and(&rd.req().ready));
    let own_rsp = b.let_("tex_own_rsp", &own_rsp_ready.and(&rd.rsp().valid).and(&tx_pend.not()));

    // ---- weights: read each weight's word, write it the cycle after ----
    let m_req = b.reg_noreset("tex_wreq_q", 7);
    let wl = b.reg_noreset("tex_wlane_q", 2);
    let wi = b.reg_noreset("tex_wi_q", 3);
    let wj = b.reg_noreset("tex_wj_q", 3);
    let wbase = b.reg_noreset("tex_wbase_q", sw); // T - KW*KH + m
    let w_more = m_req.lt(&nwt);

    // ---- samples: the list pointer, the words read, the output pointer ----
    let lptr = b.reg_noreset("tex_list_q", sw);
    let uq = b.reg_noreset("tex_u_q", 32);
    let vq = b.reg_noreset("tex_v_q", 32);
    let n_left = b.reg_noreset("tex_n_q", 14);
    let optr = b.reg_noreset("tex_out_q", sw);

    // ---- results: the lanes to write, words left, the next word's index ----
    let lanes = b.reg_noreset("tex_lanes_q", 128);
    let left = b.reg("tex_left_q", 3, 0);
    let widx = b.reg_noreset("tex_widx_q", 2);
    // conv: quads offered (qi, qj), results taken (ri), the output's row
    // pitch 8*QW, the next result's first pixel, results left.
    let qi = b.reg_noreset("tex_qi_q", 4);
    let qj = b.reg_noreset("tex_qj_q", 4);
    let q_more = b.reg("tex_q_more_q", 1, 0);
    let ri = b.reg_noreset("tex_ri_q", 4);
    let rbase = b.reg_noreset("tex_rbase_q", sw);
    let wbase_px = b.reg_noreset("tex_wpx_q", sw); // the result being written
    let r_left = b.reg_noreset("tex_r_left_q", 9);
    let pitch = b.let_("tex_pitch", &Expr::cat(&[qw1.zext(sw - 3).add(&lit(sw - 3, 1)), Expr::zero(3)]));

    // ---- configuration writes ----
    let cfg_addr = select(
        &st.slice(2, 0),
        &[
            lit(11, 0),
            lit(11, 0x000),
            lit(11, 0x002),
            lit(11, 0x003),
            lit(11, 0x001),
            Expr::cat(&[lit(3, 0b100), wj.clone(), Expr::zero(2), wi.clone()]),
            lit(11, 0),
            lit(11, 0),
        ],
    );
    let wbyte = select(&wl, &[rdata.slice(7, 0), rdata.slice(15, 8), rdata.slice(23, 16), rdata.slice(31, 24)]);
    let cfg_data = select(
        &st.slice(2, 0),
        &[
            Expr::zero(32),
            imm.slice(9, 4).zext(32),
            Expr::zero(32),
            Expr::cat(&[h.slice(12, 0).zext(16).sub(&lit(16, 1)), w.slice(12, 0).zext(16).sub(&lit(16, 1))]),
            Expr::cat(&[Expr::zero(21), kh1.clone(), Expr::zero(5), kw1.clone()]),
            wbyte.sext(32),
            Expr::zero(32),
            Expr::zero(32),
        ],
    );
    let in_wgt = is(WGT);
    let wgt_write = b.let_("tex_wgt_write", &in_wgt.and(&rd.rsp().valid).and(&tx_pend.not()));
    let cfg_valid = is(CFG0).or(&is(CFG2)).or(&is(CFG3)).or(&is(CFG1)).or(&wgt_write);
    b.assign(&io.cfg.valid, &cfg_valid);
    b.assign(&io.cfg.field("addr"), &cfg_addr);
    b.assign(&io.cfg.field("data"), &cfg_data);
    let wgt_last = wgt_write.and(&io.cfg.ready).and(&wi.eq(&kw1)).and(&wj.eq(&kh1));

    // ---- own reads: weights, u, v ----
    let wgt_req = in_wgt.and(&w_more);
    b.assign(&own_req, &wgt_req.or(&is(RD_U)).or(&is(RD_V)));
    b.assign(&own_addr, &Expr::cat(&[is(RD_U).or(&is(RD_V)).mux(&lptr.add(&is(RD_V).mux(&lit(sw, 4), &lit(sw, 0))), &wbase).slice(sw - 1, 2), Expr::zero(2)]));
    b.assign(&own_rsp_ready, &is(RSP_U).or(&is(RSP_V)).or(&in_wgt.and(&io.cfg.ready)));
    let wgt_take = wgt_req.and(&own_take);
    b.next(&m_req, &go.mux(&lit(7, 0), &m_req.add(&lit(7, 1))), Some(&go.or(&wgt_take)));
    b.next(&wbase, &go.mux(&io.t.sub(&io.w.slice(15, 13).zext(sw).add(&lit(sw, 1)).mul(&io.h.slice(15, 13).zext(sw).add(&lit(sw, 1)))), &wbase.add(&lit(sw, 1))), Some(&go.or(&wgt_take)));
    b.next(&wl, &wbase.slice(1, 0), Some(&wgt_take));
    let wgt_adv = wgt_write.and(&io.cfg.ready);
    let w_row_end = wi.eq(&kw1);
    b.next(&wi, &go.or(&w_row_end).mux(&lit(3, 0), &wi.add(&lit(3, 1))), Some(&go.or(&wgt_adv)));
    b.next(&wj, &go.mux(&lit(3, 0), &wj.add(&lit(3, 1))), Some(&go.or(&wgt_adv.and(&w_row_end))));
    b.next(&uq, &rdata, Some(&is(RSP_U).and(&own_rsp)));
    b.next(&vq, &rdata, Some(&is(RSP_V).and(&own_rsp)));

    // ---- the texture's op port ----
    let samp_op = is(OP);
    let conv_op = is(CONV).and(&q_more);
    let op_valid = samp_op.or(&conv_op);
    b.assign(&io.op.valid, &op_valid);
    let ub = io.op.field("u").width();
    let qx = x0.add(&Expr::cat(&[qi.clone(), Expr::zero(1)]).zext(16));
    let qy = y0.add(&Expr::cat(&[qj.clone(), Expr::zero(1)]).zext(16));
    b.assign(&io.op.field("kind"), &kind);
    b.assign(&io.op.field("u"), &conv.mux(&qx.zext(ub.max(16)).slice(ub - 1, 0), &uq.slice(ub - 1, 0)));
    b.assign(&io.op.field("v"), &conv.mux(&qy.zext(ub.max(16)).slice(ub - 1, 0), &vq.slice(ub - 1, 0)));
    b.assign(&io.op.field("level"), &Expr::zero(io.op.field("level").width()));
    // One channel per conv_quad (docs/cu.md): the unit is built with
    // all_channels = false, so it has no op_all_channels_i.
    b.assign(&io.op.field("channel"), &channel);
    let ob = io.op.field("dx").width();
    b.assign(&io.op.field("dx"), &uq.slice(31, 32 - ob));
    b.assign(&io.op.field("dy"), &vq.slice(31, 32 - ob));
    let op_take = b.let_("tex_op_take", &op_valid.and(&io.op.ready));
    let q_row_end = qi.eq(&qw1);
    let conv_take = op_take.and(&conv);
    b.next(&qi, &go.or(&q_row_end).mux(&lit(4, 0), &qi.add(&lit(4, 1))), Some(&go.or(&conv_take)));
    b.next(&qj, &go.mux(&lit(4, 0), &qj.add(&lit(4, 1))), Some(&go.or(&conv_take.and(&q_row_end))));
    b.next(&q_more, &go.or(&q_more.and(&conv_take.and(&q_row_end).and(&qj.eq(&qh1)).not())), None);

    // ---- results and the writer (wr3) ----
    let writing = left.any();
    let last_word = left.eq_lit(1);
    let res_ready = is(RES).or(&is(CONV).and(&writing.not().or(&last_word)));
    b.assign(&io.res.ready, &res_ready);
    let res_take = b.let_("tex_res_take", &io.res.valid.and(&res_ready));
    let nw = conv.or(&nw4).mux(&lit(3, 4), &lit(3, 1));
    let wr = io.spm_wr.clone();
    let lane_word = select(&widx, &[lanes.slice(31, 0), lanes.slice(63, 32), lanes.slice(95, 64), lanes.slice(127, 96)]);
    // conv: pixels (x, y), (x+1, y), (x, y+1), (x+1, y+1) of the quad.
    let conv_off = select(&widx, &[lit(sw, 0), lit(sw, 4), pitch.clone(), pitch.add(&lit(sw, 4))]);
    let waddr = conv.mux(&wbase_px.add(&conv_off), &optr);
    b.assign(&wr.req().valid, &writing);
    b.assign(&wr.req().field("addr"), &waddr);
    b.assign(&wr.req().field("data"), &lane_word);
    b.assign(&wr.req().field("strb"), &Expr::ones(4));
    b.assign(&wr.rsp().ready, &Expr::bit(true));
    b.waive_unused(&wr.rsp().valid, "a scratchpad write is done once taken (docs/scratchpad.md)");
    b.waive_unused(&wr.req().ready, "the only writer while a tex runs: taken as offered");
    // The unit's four lanes (all_channels = false).
    b.next(&lanes, &io.res.field("data"), Some(&res_take));
    b.next(&left, &res_take.mux(&nw, &left.sub(&writing.zext(3))), Some(&go.or(&res_take).or(&writing)));
    b.next(&widx, &res_take.mux(&lit(2, 0), &widx.add(&lit(2, 1))), Some(&res_take.or(&writing)));
    b.next(&optr, &go.mux(&io.o, &optr.add(&lit(sw, 4))), Some(&go.or(&writing.and(&conv.not()))));
    let r_row_end = ri.eq(&qw1);
    b.next(&ri, &go.or(&r_row_end).mux(&lit(4, 0), &ri.add(&lit(4, 1))), Some(&go.or(&res_take.and(&conv))));
    let step = r_row_end.mux(&pitch.add(&lit(sw, 8)), &lit(sw, 8));
    b.next(&rbase, &go.mux(&io.o, &rbase.add(&step)), Some(&go.or(&res_take.and(&conv))));
    b.next(&wbase_px, &rbase, Some(&res_take.and(&conv)));
    let nres_in = io.imm.slice(27, 24).zext(9).add(&lit(9, 1)).mul(&io.imm.slice(31, 28).zext(9).add(&lit(9, 1)));
    b.next(&r_left, &go.mux(&nres_in, &r_left.sub(&lit(9, 1))), Some(&go.or(&res_take.and(&conv))));
    // samples
    b.next(&lptr, &go.mux(&io.c.zext(sw.max(32)).slice(sw - 1, 0), &lptr.add(&lit(sw, 8))), Some(&go.or(&is(RSP_V).and(&own_rsp))));
    b.next(&n_left, &go.mux(&io.imm.slice(31, 18), &n_left.sub(&lit(14, 1))), Some(&go.or(&res_take.and(&conv.not()))));

    // ---- the states ----
    let wr_done = writing.and(&last_word);
    let samples_done = is(WR).and(&wr_done).and(&n_left.eq_lit(0));
    let conv_done = is(CONV).and(&wr_done).and(&r_left.eq_lit(0)).and(&res_take.not());
    let next = select(
        &st,
        &[
            go.mux(&lit(SB, CFG0), &lit(SB, IDLE)),
            lit(SB, CFG2),
            lit(SB, CFG3),
            conv.mux(&lit(SB, CFG1), &lit(SB, RD_U)),
            lit(SB, WGT),
            wgt_last.mux(&lit(SB, CONV), &lit(SB, WGT)),
            own_take.mux(&lit(SB, RSP_U), &lit(SB, RD_U)),
            own_rsp.mux(&lit(SB, RD_V), &lit(SB, RSP_U)),
            own_take.mux(&lit(SB, RSP_V), &lit(SB, RD_V)),
            own_rsp.mux(&lit(SB, OP), &lit(SB, RSP_V)),
            op_take.mux(&lit(SB, RES), &lit(SB, OP)),
            res_take.mux(&lit(SB, WR), &lit(SB, RES)),
            wr_done.mux(&n_left.eq_lit(0).mux(&lit(SB, IDLE), &lit(SB, RD_U)), &lit(SB, WR)),
            conv_done.mux(&lit(SB, IDLE), &lit(SB, CONV)),
            lit(SB, IDLE),
            lit(SB, IDLE),
        ],
    );
    b.next(&st, &next, None);
    let done = b.let_("tex_done", &samples_done.or(&conv_done).or(&started.and(&empty)));
    b.waive_unused(&uq, "bits 25:21 of a sample's u word are ignored (docs/cu.md)");
    b.waive_unused(&vq, "bits 25:21 of a sample's v word are ignored (docs/cu.md)");
    b.waive_unused(&io.res.field("kind"), "the machine knows the kind of the op it offered");
    b.waive_unused(&io.res.field("stitch"), "the stitch code is not written");
    b.waive_unused(&io.res.field("subops"), "the sub-operation count is not written");
    Engine { busy, started, done, fetch }
}
