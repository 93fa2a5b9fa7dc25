//! Constant-buffer burst load unit (seed `000_f519ac2bd3e52f4a.txt` §21-28, claims
//! 1-13; docs/cbload.md).
//!
//! `CDL dest, offset, cbv[idx]`: load constant data from view `idx` at byte
//! `offset` into register `dest`; with the burst flag (the seed's mode
//! identifier) and a size, fill N = ceil(size / register bytes) consecutive
//! registers from one instruction. Behaviour and timing: `docs/cbload.md`.
//!
//! One instruction at a time: IDLE -> CHECK (offset known, view looked up,
//! errors decided) -> RUN (requests stream out, up to `max_outstanding` in
//! flight; beats are masked, packed into the register being filled and
//! written when it is complete) -> RESP (tag and error code out) -> IDLE.
//! Beats past the end of the view are never requested: they are the tail of
//! the burst, so they are supplied as zeros after the last real beat.

use crate::rtl::{bits_for, clog2, select, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::cbload::{CbloadParams, ErrorKind};

/// Name of the top module.
pub const TOP: &str = "gpurtl_cbload";

const IDLE: u64 = 0;
const CHECK: u64 = 1;
const RUN: u64 = 2;
const RESP: u64 = 3;

pub fn build(p: &CbloadParams) -> Result<Design, RtlError> {
    let aw = p.addr_bits;
    let dw = p.reg_index_bits();
    let vw = p.view_index_bits();
    let sw = p.size_bits();
    let tw = p.tag_bits;
    let rb = p.read_bytes();
    let gb = p.reg_bytes();
    let lrb = clog2(rb as u64);
    let lgb = clog2(gb as u64);
    let beats_per_reg = p.reg_bits / p.read_bits;
    let lp = clog2(beats_per_reg as u64);
    // Beat counts: ceil(len / RB) for len < 2^sw.
    let bw = sw + 1 - lrb;
    let ow = bits_for(p.max_outstanding as u64);

    let mut b = ModuleBuilder::new(TOP);
    b.doc("Constant-buffer burst load unit (gpurtl block `cbload`; seed 000 §21-28, claims 1-13).");
    b.doc("CDL dest, offset, cbv[idx]: one instruction fills N registers when the burst flag is set.");
    b.doc(format!(
        "{} x {}-bit registers, {}-bit memory beats, {} views, up to {} reads in flight, bursts up to {} registers.",
        p.regs, p.reg_bits, p.read_bits, p.views, p.max_outstanding, p.max_burst
    ));
    b.doc("Behaviour and cycle timing: docs/cbload.md.");

    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let in_s = b.stream_in(
        "in",
        "an instruction is offered",
        "the unit is idle and takes it",
        &[
            ("dest", dw, "first destination register"),
            ("view", vw, "constant buffer view index"),
            ("offset", aw, "immediate byte offset (when not in_offset_is_reg_i)"),
            ("offset_is_reg", 1, "1 = the offset is register in_offset_reg_i"),
            ("offset_reg", dw, "register holding the offset"),
            ("burst", 1, "mode flag: load in_size_i bytes into N registers"),
            ("size", sw, "burst size in bytes (1..max_burst*reg_bytes)"),
            ("tag", tw, "returned with the response"),
        ],
    );
    let (in_valid, in_ready) = (in_s.valid.clone(), in_s.ready.clone());
    let [in_dest, in_view, in_offset, in_is_reg, in_offset_reg, in_burst, in_size, in_tag] =
        in_s.get(["dest", "view", "offset", "offset_is_reg", "offset_reg", "burst", "size", "tag"]);
    let rf_re = b.output("rf_re_o", 1, "register read (offset register); data next cycle");
    let rf_raddr = b.output("rf_raddr_o", dw, "register read address");
    let rf_rdata = b.input("rf_rdata_i", aw, "low addr_bits bits of the register read last cycle");
    let rf_we = b.output("rf_we_o", 1, "register write offered");
    let rf_wready = b.input("rf_wready_i", 1, "register write taken");
    let rf_waddr = b.output("rf_waddr_o", dw, "register write address");
    let rf_wdata = b.output("rf_wdata_o", p.reg_bits, "register write data");
    let mem_req_s = b.stream_out(
        "mem_req",
        "memory read request offered",
        "memory read request taken",
        &[
            ("addr", aw, "byte address, a multiple of read_bits/8"),
        ],
    );
    let (mem_req_valid, mem_req_ready) = (mem_req_s.valid.clone(), mem_req_s.ready.clone());
    let mem_req_addr = mem_req_s.field("addr");
    let mem_rsp_s = b.stream_in(
        "mem_rsp",
        "read data offered (in request order)",
        "read data taken",
        &[
            ("data", p.read_bits, "read data"),
        ],
    );
    let (mem_rsp_valid, mem_rsp_ready) = (mem_rsp_s.valid.clone(), mem_rsp_s.ready.clone());
    let mem_rsp_data = mem_rsp_s.field("data");
    let rsp_s = b.stream_out(
        "rsp",
        "instruction done",
        "response taken",
        &[
            ("tag", tw, "tag of the instruction"),
            ("error", 3, "0 none, 1 view, 2 misaligned, 3 size, 4 range"),
        ],
    );
    let (rsp_valid, rsp_ready) = (rsp_s.valid.clone(), rsp_s.ready.clone());
    let [rsp_tag, rsp_error] = rsp_s.get(["tag", "error"]);
    let cfg_we = b.input("cfg_we_i", 1, "configuration write");
    let cfg_addr = b.input("cfg_addr_i", p.cfg_addr_bits(), "2v: view v base, 2v+1: view v size, 2*views: clear oob");
    let cfg_wdata = b.input("cfg_wdata_i", aw, "configuration data");
    let oob = b.output("oob_o", 1, "sticky: an instruction read past its view");
    let oob_tag = b.output("oob_tag_o", tw, "tag of the first such instruction");

    // ---- view table ----
    let mut bases = Vec::new();
    let mut sizes = Vec::new();
    for v in 0..p.views {
        let base = b.reg(&format!("view{v}_base_q"), aw, 0);
        let size = b.reg(&format!("view{v}_size_q"), aw, 0);
        b.next(&base, &cfg_wdata, Some(&cfg_we.and(&cfg_addr.eq_lit(2 * v as u64))));
        b.next(&size, &cfg_wdata, Some(&cfg_we.and(&cfg_addr.eq_lit(2 * v as u64 + 1))));
        bases.push(base);
        sizes.push(size);
    }
    let cfg_clear = b.let_("cfg_clear", &cfg_we.and(&cfg_addr.eq_lit(2 * p.views as u64)));

    // ---- state and the instruction ----
    let state = b.reg("state_q", 2, IDLE);
    let in_state = |s: u64| state.eq_lit(s);
    let accept = b.let_("accept", &in_valid.and(&in_state(IDLE)));
    b.assign(&in_ready, &in_state(IDLE));
    b.assign(&rf_re, &accept.and(&in_is_reg));
    b.assign(&rf_raddr, &in_offset_reg);
    let imm_q = b.pipe("imm_q", &in_offset, &accept);
    let is_reg_q = b.pipe("is_reg_q", &in_is_reg, &accept);
    let burst_q = b.pipe("burst_q", &in_burst, &accept);
    let size_q = b.pipe("size_q", &in_size, &accept);
    let tag_q = b.pipe("tag_q", &in_tag, &accept);

    // ---- CHECK: offset, view, length, errors, beat counts ----
    let checking = b.let_("checking", &in_state(CHECK));
    let off = b.let_("off", &is_reg_q.mux(&rf_rdata, &imm_q));
    // The view is looked up as the instruction is accepted (its index is an
    // input then), so CHECK starts from registers.
    let base = b.pipe("base_q", &select(&in_view, &bases), &accept);
    let vsize = b.pipe("vsize_q", &select(&in_view, &sizes), &accept);
    let len = b.let_("len", &burst_q.mux(&size_q, &Expr::lit(sw, gb as u64)));
    let err_view = if p.views < (1 << vw) {
        b.pipe("view_err_q", &in_view.ge(&Expr::lit(vw, p.views as u64)), &accept)
    } else {
        Expr::bit(false)
    };
    let err_mis = if lrb > 0 { off.slice(lrb - 1, 0).ne(&Expr::zero(lrb)) } else { Expr::bit(false) };
    let err_size = burst_q.and(&size_q.eq_lit(0).or(&size_q.gt(&Expr::lit(sw, p.max_len() as u64))));
    // N = ceil(len / GB); range: dest + N > regs.
    let nw = sw + 1 - lgb;
    let n_regs = b.let_("n_regs", &len.zext(sw + 1).add(&Expr::lit(sw + 1, gb as u64 - 1)).slice(sw, lgb));
    let rw = dw.max(nw) + 1;
    let wreg = b.reg_noreset("wreg_q", dw);
    let err_range =
        wreg.zext(rw).add(&n_regs.zext(rw)).gt(&Expr::lit(rw, p.regs as u64));
    debug_assert!(nw <= rw);
    let err_code = err_view.mux(
        &Expr::lit(3, ErrorKind::View.code()),
        &err_mis.mux(&Expr::lit(3, ErrorKind::Misaligned.code()), &err_size.mux(&Expr::lit(3, ErrorKind::Size.code()), &err_range.mux(&Expr::lit(3, ErrorKind::Range.code()), &Expr::lit(3, ErrorKind::None.code())))),
    );
    let err_code = b.let_("err_code", &err_code);
    let any_err = err_code.ne(&Expr::lit(3, ErrorKind::None.code()));
    let n_beats = b.let_("n_beats", &len.zext(sw + 1).add(&Expr::lit(sw + 1, rb as u64 - 1)).slice(sw, lrb));
    // Real beats: none if off >= vsize, else min(B, ceil((vsize - off) / RB)).
    let past_end = b.let_("past_end", &off.ge(&vsize));
    let room = b.let_("room", &vsize.sub(&off));
    let room_beats = room.zext(aw + 1).add(&Expr::lit(aw + 1, rb as u64 - 1)).slice(aw, lrb);
    let cw = (aw + 1 - lrb).max(bw);
    let room_beats = b.let_("room_beats", &room_beats.zext(cw));
    let real_beats = past_end.mux(
        &Expr::zero(bw),
        &room_beats.lt(&n_beats.zext(cw)).mux(&room_beats.slice(bw - 1, 0), &n_beats),
    );
    // Bytes that come from memory: min(len, vsize - off), or none.
    let lw = aw.max(sw);
    let valid_bytes = past_end.mux(
        &Expr::zero(sw),
        &room.zext(lw).lt(&len.zext(lw)).mux(&room.zext(lw).slice(sw - 1, 0), &len),
    );
    let out_of_bounds = off.zext(aw + 1).add(&len.zext(aw + 1)).gt(&vsize.zext(aw + 1));

    // Sticky out-of-bounds flag with the first offender's tag.
    let oob_q = b.reg("oob_q", 1, 0);
    let oob_tag_q = b.reg("oob_tag_q", tw, 0);
    let set_oob = b.let_("set_oob", &checking.and(&any_err.not()).and(&out_of_bounds));
    b.next(&oob_q, &set_oob.or(&oob_q.and(&cfg_clear.not())), None);
    b.next(&oob_tag_q, &tag_q, Some(&set_oob.and(&oob_q.and(&cfg_clear.not()).not())));
    b.assign(&oob, &oob_q);
    b.assign(&oob_tag, &oob_tag_q);

    // ---- RUN: requests ----
    let running = b.let_("running", &in_state(RUN));
    let issued = b.reg_noreset("issued_q", bw);
    let real_q = b.pipe("real_beats_q", &real_beats, &checking);
    let beats_q = b.pipe("n_beats_q", &n_beats, &checking);
    let valid_bytes_q = b.pipe("valid_bytes_q", &valid_bytes, &checking);
    let outstanding = b.reg("outstanding_q", ow, 0);
    let addr = b.reg_noreset("addr_q", aw);
    let req = b.let_(
        "req",
        &running.and(&issued.lt(&real_q)).and(&outstanding.lt(&Expr::lit(ow, p.max_outstanding as u64))),
    );
    b.assign(&mem_req_valid, &req);
    b.assign(&mem_req_addr, &addr);
    let req_fire = b.let_("req_fire", &req.and(&mem_req_ready));
    b.next(&addr, &checking.mux(&base.add(&off), &addr.add(&Expr::lit(aw, rb as u64))), Some(&checking.or(&req_fire)));
    b.next(&issued, &checking.mux(&Expr::zero(bw), &issued.add(&Expr::lit(bw, 1))), Some(&checking.or(&req_fire)));

    // ---- RUN: beats in, registers out ----
    let got = b.reg_noreset("got_q", bw);
    let is_real = b.let_("beat_is_real", &got.lt(&real_q));
    let beat_avail = b.let_("beat_avail", &running.and(&is_real.mux(&mem_rsp_valid, &got.lt(&beats_q))));
    let last_beat = b.let_("last_beat", &got.add(&Expr::lit(bw, 1)).eq(&beats_q));
    let completes = if lp == 0 {
        Expr::bit(true)
    } else {
        got.slice(lp - 1, 0).eq(&Expr::ones(lp)).or(&last_beat)
    };
    let completes = b.let_("reg_complete", &completes);
    let beat_fire = b.let_("beat_fire", &beat_avail.and(&completes.not().or(&rf_wready)));
    b.assign(&mem_rsp_ready, &running.and(&is_real).and(&completes.not().or(&rf_wready)));
    // Byte i of this beat is real data iff got*RB + i < valid_bytes.
    let pw = (bw + lrb).max(sw) + 1;
    let pos = Expr::cat(&[got.clone(), Expr::zero(lrb)]).zext(pw);
    let pos = b.let_("beat_pos", &pos);
    let data = is_real.mux(&mem_rsp_data, &Expr::zero(p.read_bits));
    let lanes: Vec<Expr> = (0..rb)
        .map(|i| {
            let keep = pos.add(&Expr::lit(pw, i as u64)).lt(&valid_bytes_q.zext(pw));
            keep.mux(&data.part(8 * i, 8), &Expr::zero(8))
        })
        .collect();
    let beat = b.let_("beat_data", &Expr::cat_lanes(&lanes));
    let wdata = if lp == 0 {
        beat.clone()
    } else {
        let acc = b.reg_noreset("acc_q", p.reg_bits);
        let slot = got.slice(lp - 1, 0);
        let chunks: Vec<Expr> = (0..beats_per_reg)
            .map(|s| slot.eq_lit(s as u64).mux(&beat, &acc.part(s * p.read_bits, p.read_bits)))
            .collect();
        let wdata = b.let_("reg_data", &Expr::cat_lanes(&chunks));
        b.next(&acc, &completes.mux(&Expr::zero(p.reg_bits), &wdata), Some(&beat_fire));
        wdata
    };
    b.assign(&rf_we, &beat_avail.and(&completes));
    b.assign(&rf_waddr, &wreg);
    b.assign(&rf_wdata, &wdata);
    b.next(&got, &checking.mux(&Expr::zero(bw), &got.add(&Expr::lit(bw, 1))), Some(&checking.or(&beat_fire)));
    b.next(
        &wreg,
        &accept.mux(&in_dest, &wreg.add(&Expr::lit(dw, 1))),
        Some(&accept.or(&beat_fire.and(&completes))),
    );
    let real_fire = beat_fire.and(&is_real);
    let one = Expr::lit(ow, 1);
    b.next(
        &outstanding,
        &req_fire.mux(&real_fire.mux(&outstanding, &outstanding.add(&one)), &real_fire.mux(&outstanding.sub(&one), &outstanding)),
        None,
    );

    // ---- RESP ----
    let err_q = b.pipe("err_q", &err_code, &checking);
    b.assign(&rsp_valid, &in_state(RESP));
    b.assign(&rsp_tag, &tag_q);
    b.assign(&rsp_error, &err_q);
    let next_state = select(
        &state,
        &[
            accept.mux(&Expr::lit(2, CHECK), &Expr::lit(2, IDLE)),
            any_err.mux(&Expr::lit(2, RESP), &Expr::lit(2, RUN)),
            beat_fire.and(&last_beat).mux(&Expr::lit(2, RESP), &Expr::lit(2, RUN)),
            rsp_ready.mux(&Expr::lit(2, IDLE), &Expr::lit(2, RESP)),
        ],
    );
    b.next(&state, &next_state, None);

    let top = b.finish()?;
    Ok(Design::of(top, p))
}
