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
    // A view's size is kept in beats as well, ceil(size / RB), worked out as
    // it is configured: the CHECK stage then compares beats with beats.
    let cw = aw + 1 - lrb;
    let cfg_beats = b.let_("cfg_size_beats", &cfg_wdata.zext(aw + 1).add(&Expr::lit(aw + 1, rb as u64 - 1)).slice(aw, lrb));
    let mut view_beats = Vec::new();
    for v in 0..p.views {
        let base = b.reg(&format!("view{v}_base_q"), aw, 0);
        let size = b.reg(&format!("view{v}_size_q"), aw, 0);
        let beats = b.reg(&format!("view{v}_beats_q"), cw, 0);
        let we_size = cfg_we.and(&cfg_addr.eq_lit(2 * v as u64 + 1));
        b.next(&base, &cfg_wdata, Some(&cfg_we.and(&cfg_addr.eq_lit(2 * v as u64))));
        b.next(&size, &cfg_wdata, Some(&we_size));
        b.next(&beats, &cfg_beats, Some(&we_size));
        bases.push(base);
        sizes.push(size);
        view_beats.push(beats);
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
    let tag_q = b.pipe("tag_q", &in_tag, &accept);

    // ---- at accept: everything that does not need the offset ----
    // The offset may come from the register file, whose data arrive in
    // CHECK; what depends only on the instruction and the view is worked out
    // here, from the inputs, so that CHECK is one carry chain deep.
    let len_in = b.let_("len_in", &in_burst.mux(&in_size, &Expr::lit(sw, gb as u64)));
    let len_q = b.pipe("len_q", &len_in, &accept);
    let n_beats_in = b.let_("n_beats_in", &len_in.zext(sw + 1).add(&Expr::lit(sw + 1, rb as u64 - 1)).slice(sw, lrb));
    let beats_q = b.pipe("n_beats_q", &n_beats_in, &accept);
    let vsize_in = b.let_("vsize_in", &select(&in_view, &sizes));
    let vbeats_in = b.let_("vbeats_in", &select(&in_view, &view_beats));
    let base = b.pipe("base_q", &select(&in_view, &bases), &accept);
    let vsize = b.pipe("vsize_q", &vsize_in, &accept);
    let vbeats = b.pipe("vbeats_q", &vbeats_in, &accept);
    // The burst is cut short by the view (fewer real beats than B) iff
    // off/RB > vbeats - B: always when vbeats < B.
    let tw_ = cw.max(bw) + 1;
    // One carry chain: vbeats - B = vbeats + ~(len / RB) + (no partial
    // beat), B being len / RB plus one for a partial beat; its sign is
    // "always".
    let len_beats = len_in.slice(sw - 1, lrb).zext(tw_);
    let whole = len_in.slice(lrb - 1, 0).eq_lit(0).zext(tw_);
    let trunc_lim = b.let_("trunc_lim", &vbeats_in.zext(tw_).add(&len_beats.not()).add(&whole));
    let trunc_always_q = b.pipe("trunc_always_q", &trunc_lim.bit_at(tw_ - 1), &accept);
    let trunc_lim_q = b.pipe("trunc_lim_q", &trunc_lim.slice(cw - 1, 0), &accept);
    // Out of bounds (off + len > vsize) iff off > vsize - len: always when
    // vsize < len.
    let lw = aw.max(sw) + 1;
    let oob_lim = b.let_("oob_lim", &vsize_in.zext(lw).sub(&len_in.zext(lw)));
    let oob_always_q = b.pipe("oob_always_q", &oob_lim.bit_at(lw - 1), &accept);
    let oob_lim_q = b.pipe("oob_lim_q", &oob_lim.slice(aw - 1, 0), &accept);
    let err_view = if p.views < (1 << vw) {
        b.pipe("view_err_q", &in_view.ge(&Expr::lit(vw, p.views as u64)), &accept)
    } else {
        Expr::bit(false)
    };
    let err_size_in = in_burst.and(&in_size.eq_lit(0).or(&in_size.gt(&Expr::lit(sw, p.max_len() as u64))));
    let err_size = b.pipe("size_err_q", &err_size_in, &accept);
    // Range: dest + ceil(len / GB) > regs, i.e. dest >= regs or
    // len > (regs - dest) * GB.
    let rw = dw + 1;
    let regs_left = Expr::lit(rw, p.regs as u64).sub(&in_dest.zext(rw));
    let kw = (rw + lgb).max(sw);
    let room_bytes = Expr::cat(&[regs_left.slice(rw - 1, 0), Expr::zero(lgb)]).zext(kw);
    let too_long = len_in.zext(kw).gt(&room_bytes);
    let err_range_in =
        if p.regs < (1 << dw) { in_dest.zext(rw).ge(&Expr::lit(rw, p.regs as u64)).or(&too_long) } else { too_long };
    let err_range = b.pipe("range_err_q", &err_range_in, &accept);

    // ---- CHECK: the offset against the view, errors ----
    let checking = b.let_("checking", &in_state(CHECK));
    let off = b.let_("off", &is_reg_q.mux(&rf_rdata, &imm_q));
    let off_beats = b.let_("off_beats", &off.slice(aw - 1, lrb).zext(cw));
    let err_mis = if lrb > 0 { off.slice(lrb - 1, 0).ne(&Expr::zero(lrb)) } else { Expr::bit(false) };
    let err_code = err_view.mux(
        &Expr::lit(3, ErrorKind::View.code()),
        &err_mis.mux(&Expr::lit(3, ErrorKind::Misaligned.code()), &err_size.mux(&Expr::lit(3, ErrorKind::Size.code()), &err_range.mux(&Expr::lit(3, ErrorKind::Range.code()), &Expr::lit(3, ErrorKind::None.code())))),
    );
    let err_code = b.let_("err_code", &err_code);
    let any_err = err_code.ne(&Expr::lit(3, ErrorKind::None.code()));
    // With an aligned offset (a misaligned one is an error): off >= vsize
    // iff off/RB >= ceil(vsize/RB), and the real beats left in the view are
    // ceil(vsize/RB) - off/RB.
    let past_end = b.let_("past_end", &off_beats.ge(&vbeats));
    let truncated = b.let_("truncated", &trunc_always_q.or(&off_beats.gt(&trunc_lim_q)));
    let view_beats_left = vbeats.sub(&off_beats).slice(bw - 1, 0);
    let real_beats = past_end.mux(&Expr::zero(bw), &truncated.mux(&view_beats_left, &beats_q));
    let out_of_bounds = b.let_("out_of_bounds", &oob_always_q.or(&off.gt(&oob_lim_q)));
    let room = vsize.sub(&off).slice(sw - 1, 0);
    // Bytes that come from memory: min(len, vsize - off). (Past the view's
    // end no beat is real and every beat is zero, so the value then does
    // not matter.)
    let valid_bytes = b.pipe("valid_bytes_q", &out_of_bounds.mux(&room, &len_q), &checking);
    let wreg = b.reg_noreset("wreg_q", dw);

    // Sticky out-of-bounds flag with the first offender's tag.
    let oob_q = b.reg("oob_q", 1, 0);
    let oob_tag_q = b.reg("oob_tag_q", tw, 0);
    // Decided in CHECK, applied one cycle later (the flag is read when the
    // unit is idle; this keeps the offset's carry chain off its enable).
    let set_oob = b.reg("oob_hit_q", 1, 0);
    b.next(&set_oob, &checking.and(&any_err.not()).and(&out_of_bounds), None);
    b.next(&oob_q, &set_oob.or(&oob_q.and(&cfg_clear.not())), None);
    b.next(&oob_tag_q, &tag_q, Some(&set_oob.and(&oob_q.and(&cfg_clear.not()).not())));
    b.assign(&oob, &oob_q);
    b.assign(&oob_tag, &oob_tag_q);

    // ---- RUN: requests ----
    let running = b.let_("running", &in_state(RUN));
    let issued = b.reg_noreset("issued_q", bw);
    let real_q = b.pipe("real_beats_q", &real_beats, &checking);
    let outstanding = b.reg("outstanding_q", ow, 0);
    let addr = b.reg_noreset("addr_q", aw);
    // "A request is left" (issued < real beats) and "a read may be added in
    // flight" (outstanding < max_outstanding) are registers, worked out for
    // the next cycle, so the request valid is one gate.
    let req_left = b.reg("req_left_q", 1, 0);
    let req_room = b.reg("req_room_q", 1, 1);
    let req = b.let_("req", &running.and(&req_left).and(&req_room));
    b.assign(&mem_req_valid, &req);
    b.assign(&mem_req_addr, &addr);
    let req_fire = b.let_("req_fire", &req.and(&mem_req_ready));
    b.next(&addr, &checking.mux(&base.add(&off), &addr.add(&Expr::lit(aw, rb as u64))), Some(&checking.or(&req_fire)));
    b.next(&issued, &checking.mux(&Expr::zero(bw), &issued.add(&Expr::lit(bw, 1))), Some(&checking.or(&req_fire)));
    // A non-error instruction has real beats iff it starts inside its view.
    b.next(
        &req_left,
        &checking.mux(&past_end.not(), &issued.add(&Expr::lit(bw, 1)).lt(&real_q)),
        Some(&checking.or(&req_fire)),
    );

    // ---- RUN: beats in, registers out ----
    let got = b.reg_noreset("got_q", bw);
    // got < real beats is a register for the next beat, and the beats left
    // after this one count down (B - 1 at CHECK), so "last beat" is a zero
    // test. In RUN got < B always (the last beat ends RUN), so a beat beyond
    // the view is always available.
    let got_next = b.let_("got_next", &got.add(&Expr::lit(bw, 1)));
    let is_real = b.reg("beat_is_real_q", 1, 0);
    let beats_left = b.reg_noreset("beats_left_q", bw);
    let last_beat = b.let_("last_beat", &beats_left.eq_lit(0));
    let beat_avail = b.let_("beat_avail", &running.and(&is_real.mux(&mem_rsp_valid, &Expr::bit(true))));
    let completes = if lp == 0 {
        Expr::bit(true)
    } else {
        got.slice(lp - 1, 0).eq(&Expr::ones(lp)).or(&last_beat)
    };
    let completes = b.let_("reg_complete", &completes);
    let beat_fire = b.let_("beat_fire", &beat_avail.and(&completes.not().or(&rf_wready)));
    b.assign(&mem_rsp_ready, &running.and(&is_real).and(&completes.not().or(&rf_wready)));
    // Byte i of this beat is real data iff got*RB + i < valid_bytes: the
    // beat is below the last partial one, or it is that one and i is below
    // the bytes it keeps. The full beats still to come count down from
    // valid_bytes / RB; at zero this beat is the partial one, after it every
    // beat is past the data.
    let full_left = b.reg_noreset("full_beats_left_q", bw);
    let past_part = b.reg_noreset("past_part_q", 1);
    // Loaded in RUN's first cycle, from registers: a real beat arrives a
    // cycle after its request at the earliest, so no real beat is taken in
    // that cycle (a beat beyond the view is zero whatever these say).
    let run_first = b.reg("run_first_q", 1, 0);
    b.next(&run_first, &checking, None);
    let part_bytes = valid_bytes.slice(lrb - 1, 0);
    let beat_full = b.let_("beat_full", &full_left.eq_lit(0).not());
    let beat_part = b.let_("beat_part", &full_left.eq_lit(0).and(&past_part.not()));
    let data = b.let_("beat_in", &is_real.mux(&mem_rsp_data, &Expr::zero(p.read_bits)));
    let lanes: Vec<Expr> = (0..rb)
        .map(|i| {
            // The last byte of a beat is never in a partial beat.
            let keep = if i + 1 == rb {
                beat_full.clone()
            } else {
                beat_full.or(&beat_part.and(&part_bytes.gt(&Expr::lit(lrb, i as u64))))
            };
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
    b.next(&got, &checking.mux(&Expr::zero(bw), &got_next), Some(&checking.or(&beat_fire)));
    b.next(&is_real, &checking.mux(&past_end.not(), &got_next.lt(&real_q)), Some(&checking.or(&beat_fire)));
    let one_b = Expr::lit(bw, 1);
    b.next(&beats_left, &checking.mux(&beats_q.sub(&one_b), &beats_left.sub(&one_b)), Some(&checking.or(&beat_fire)));
    b.next(
        &full_left,
        &run_first.mux(&valid_bytes.slice(sw - 1, lrb).zext(bw), &full_left.sub(&one_b)),
        Some(&run_first.or(&beat_fire.and(&beat_full))),
    );
    b.next(&past_part, &run_first.not(), Some(&run_first.or(&beat_fire.and(&beat_part))));
    b.next(
        &wreg,
        &accept.mux(&in_dest, &wreg.add(&Expr::lit(dw, 1))),
        Some(&accept.or(&beat_fire.and(&completes))),
    );
    let real_fire = beat_fire.and(&is_real);
    let one = Expr::lit(ow, 1);
    let outstanding_next = b.let_(
        "outstanding_next",
        &req_fire.mux(&real_fire.mux(&outstanding, &outstanding.add(&one)), &real_fire.mux(&outstanding.sub(&one), &outstanding)),
    );
    b.next(&outstanding, &outstanding_next, None);
    b.next(&req_room, &outstanding_next.lt(&Expr::lit(ow, p.max_outstanding as u64)), None);

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
