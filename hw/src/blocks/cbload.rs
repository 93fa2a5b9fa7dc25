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

use super::memif::{axi4_top, Kind, Part, Source};
use crate::rtl::{bits_for, clog2, select, Axi, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::cbload::{CbloadParams, ErrorKind};
use gpurtl_params::MemIf;

/// Name of the top module.
pub const TOP: &str = "gpurtl_cbload";

/// The block: the unit itself, or with `mem_if = axi4` the unit (named
/// `<TOP>_core`) behind the arbiter and its AXI4 bridge (docs/memory.md).
pub fn build(p: &CbloadParams) -> Result<Design, RtlError> {
    match p.mem_if {
        MemIf::Native => Ok(Design::of(unit(p, TOP)?, p)),
        MemIf::Axi4 => {
            let core = Design::of(unit(p, &format!("{TOP}_core"))?, p);
            let mem = Source { port: "mem".into(), kind: Kind::Read { credits: p.max_outstanding }, addr: Box::new(|a| a.clone()) };
            let part = Part { design: &core, inst: "u_core", prefix: "", sources: vec![mem], busy: None };
            let doc = [
                "Constant-buffer burst load unit (gpurtl block `cbload`) with mem_if=axi4: the unit's memory port through an arbiter and".to_string(),
                "its bridge to one AXI4 master (docs/memory.md, docs/cbload.md).".to_string(),
            ];
            let b = axi4_top(TOP, &doc, &[part], Axi { addr_bits: p.addr_bits, data_bits: p.read_bits, id_bits: 1 })?;
            Ok(Design::of(b.finish()?, p))
        }
    }
}

/// The unit with its native memory port, as module `name`.
pub fn unit(p: &CbloadParams, name: &str) -> Result<crate::rtl::Module, RtlError> {
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

    let mut b = ModuleBuilder::new(name);
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

    // ---- state (one-hot) and the instruction ----
    // One flip-flop per state, so that "in state X" is a register and not a
    // compare: the enables of RUN's counters are then a few gates deep.
    let idle = b.reg("idle_q", 1, 1);
    let checking = b.reg("check_q", 1, 0);
    let running = b.reg("run_q", 1, 0);
    let responding = b.reg("resp_q", 1, 0);
    let accept = b.let_("accept", &in_valid.and(&idle));
    b.assign(&in_ready, &idle);
    b.assign(&rf_re, &accept.and(&in_is_reg));
    b.assign(&rf_raddr, &in_offset_reg);
    let imm_q = b.pipe("imm_q", &in_offset, &accept);
    let is_reg_q = b.pipe("is_reg_q", &in_is_reg, &accept);
    let tag_q = b.pipe("tag_q", &in_tag, &accept);

    // ---- at accept: the instruction and its view ----
    // The offset may come from the register file, whose data arrive in
    // CHECK. Accept only selects the view and decodes the instruction (no
    // wide arithmetic behind the view multiplexer); CHECK subtracts the
    // offset from the view's size and end, one carry chain each, and the
    // compares of those differences with the length are made from
    // registers in RUN's first cycle, before any beat needs them.
    let len_in = b.let_("len_in", &in_burst.mux(&in_size, &Expr::lit(sw, gb as u64)));
    let len_q = b.pipe("len_q", &len_in, &accept);
    let n_beats_in = b.let_("n_beats_in", &len_in.zext(sw + 1).add(&Expr::lit(sw + 1, rb as u64 - 1)).slice(sw, lrb));
    let beats_q = b.pipe("n_beats_q", &n_beats_in, &accept);
    let base = b.pipe("base_q", &select(&in_view, &bases), &accept);
    let vsize = b.pipe("vsize_q", &select(&in_view, &sizes), &accept);
    let vbeats = b.pipe("vbeats_q", &select(&in_view, &view_beats), &accept);
    let err_view = if p.views < (1 << vw) { in_view.ge(&Expr::lit(vw, p.views as u64)) } else { Expr::bit(false) };
    let err_view_q = b.pipe("view_err_q", &err_view, &accept);
    let err_size_in = in_burst.and(&in_size.eq_lit(0).or(&in_size.gt(&Expr::lit(sw, p.max_len() as u64))));
    let err_size = b.pipe("size_err_q", &err_size_in, &accept);
    // Range: dest + ceil(len / GB) > regs, i.e. dest >= regs or
    // len > (regs - dest) * GB. The registers left are counted at accept,
    // the compare with the length is made in CHECK from registers.
    let rw = dw + 1;
    let regs_left = b.pipe("regs_left_q", &Expr::lit(rw, p.regs as u64).sub(&in_dest.zext(rw)), &accept);
    let kw = (rw + lgb).max(sw);
    let room_bytes = Expr::cat(&[regs_left.slice(rw - 1, 0), Expr::zero(lgb)]).zext(kw);
    let too_long = len_q.zext(kw).gt(&room_bytes);
    let err_range = if p.regs < (1 << dw) {
        let dest_bad = b.pipe("dest_err_q", &in_dest.zext(rw).ge(&Expr::lit(rw, p.regs as u64)), &accept);
        dest_bad.or(&too_long)
    } else {
        too_long
    };
    let err_range = b.let_("range_err", &err_range);
    // The errors known at accept, and whether the immediate offset is
    // misaligned: CHECK then only looks at the low bits of a register offset.
    let early_err = b.pipe("early_err_q", &err_view.or(&err_size_in), &accept);
    let imm_mis = if lrb > 0 { in_offset.slice(lrb - 1, 0).ne(&Expr::zero(lrb)) } else { Expr::bit(false) };
    let imm_mis_q = b.pipe("imm_mis_q", &imm_mis, &accept);

    // ---- CHECK: the offset against the view, errors ----
    let off = b.let_("off", &is_reg_q.mux(&rf_rdata, &imm_q));
    let off_beats = b.let_("off_beats", &off.slice(aw - 1, lrb).zext(cw));
    let reg_mis = if lrb > 0 { rf_rdata.slice(lrb - 1, 0).ne(&Expr::zero(lrb)) } else { Expr::bit(false) };
    let err_mis = b.let_("misaligned", &is_reg_q.mux(&reg_mis, &imm_mis_q));
    let err_code = err_view_q.mux(
        &Expr::lit(3, ErrorKind::View.code()),
        &err_mis.mux(&Expr::lit(3, ErrorKind::Misaligned.code()), &err_size.mux(&Expr::lit(3, ErrorKind::Size.code()), &err_range.mux(&Expr::lit(3, ErrorKind::Range.code()), &Expr::lit(3, ErrorKind::None.code())))),
    );
    let err_code = b.let_("err_code", &err_code);
    let any_err = b.let_("any_err", &early_err.or(&err_range).or(&err_mis));
    // With an aligned offset (a misaligned one is an error): off >= vsize
    // iff off/RB >= ceil(vsize/RB), and the beats left in the view are
    // ceil(vsize/RB) - off/RB.
    // "Past the end" decides the first request and beat, so it is compared
    // for both offsets straight from their registers and chosen after the
    // carry chains, not before.
    let beats_of = |o: &Expr| o.slice(aw - 1, lrb).zext(cw);
    let past_end_reg = beats_of(&rf_rdata).ge(&vbeats);
    let past_end_imm = beats_of(&imm_q).ge(&vbeats);
    let past_end = b.let_("past_end", &is_reg_q.mux(&past_end_reg, &past_end_imm));
    let view_beats_left = b.pipe("view_beats_left_q", &vbeats.sub(&off_beats), &checking);
    // The bytes left in the view, vsize - off, with a sign bit (negative
    // past the end).
    let view_bytes_left = b.pipe("view_bytes_left_q", &vsize.zext(aw + 1).sub(&off.zext(aw + 1)), &checking);
    let wreg = b.reg_noreset("wreg_q", dw);

    // ---- RUN's first cycle: the view's limits against the length ----
    let run_first = b.reg("run_first_q", 1, 0);
    b.next(&run_first, &checking.and(&any_err.not()), None);
    // "k < y": for a y wider than k, y's bits above k's are only tested for
    // zero, beside a compare as wide as k (with 16-bit addresses and long
    // bursts y can also be the narrower one).
    let below = |k: &Expr, y: &Expr| {
        let w = k.width();
        if y.width() <= w {
            return k.lt(&y.zext(w));
        }
        let low = k.lt(&y.slice(w - 1, 0));
        y.slice(y.width() - 1, w).ne(&Expr::zero(y.width() - w)).or(&low)
    };
    // Beat k is real iff k < min(B, beats left in the view) (none past the
    // view's end, when no request is made and every beat is zero).
    let below_real = |k: &Expr| k.lt(&beats_q).and(&below(k, &view_beats_left));
    // Out of bounds: off + len > vsize, i.e. the bytes left in the view are
    // negative or fewer than len.
    let vbl_neg = view_bytes_left.bit_at(aw);
    let vbl_short = if aw > sw {
        view_bytes_left.slice(aw - 1, sw).eq_lit(0).and(&view_bytes_left.slice(sw - 1, 0).lt(&len_q))
    } else {
        view_bytes_left.slice(aw - 1, 0).lt(&len_q.zext(aw))
    };
    let out_of_bounds = b.let_("out_of_bounds", &vbl_neg.or(&vbl_short));
    // Bytes that come from memory: min(len, vsize - off) (past the view's
    // end every beat is zero and the value does not matter). Its full beats
    // are min(len, vsize - off) / RB, beat k is full iff k is below both,
    // and the bytes of the partial beat are the low bits of the smaller.
    let vbl_beats = view_bytes_left.slice(aw - 1, lrb);
    let len_full = len_q.slice(sw - 1, lrb).zext(bw);
    let below_full = |k: &Expr| k.lt(&len_full).and(&below(k, &vbl_beats));
    let part_bytes = b.pipe(
        "part_bytes_q",
        &out_of_bounds.mux(&view_bytes_left.slice(lrb - 1, 0), &len_q.slice(lrb - 1, 0)),
        &run_first,
    );

    // Sticky out-of-bounds flag with the first offender's tag, set at the
    // end of RUN's first cycle (only instructions without an error get
    // there).
    let oob_q = b.reg("oob_q", 1, 0);
    let oob_tag_q = b.reg("oob_tag_q", tw, 0);
    let set_oob = b.let_("set_oob", &run_first.and(&out_of_bounds));
    b.next(&oob_q, &set_oob.or(&oob_q.and(&cfg_clear.not())), None);
    b.next(&oob_tag_q, &tag_q, Some(&set_oob.and(&oob_q.and(&cfg_clear.not()).not())));
    b.assign(&oob, &oob_q);
    b.assign(&oob_tag, &oob_tag_q);

    // ---- RUN: requests ----
    // Requests made plus one: the count once the offered request is taken,
    // compared with the real beats for the next cycle's "a request is
    // left" straight from a register.
    let issued_next = b.reg_noreset("issued_next_q", bw);
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
    b.next(&issued_next, &checking.mux(&Expr::lit(bw, 1), &issued_next.add(&Expr::lit(bw, 1))), Some(&checking.or(&req_fire)));
    // A non-error instruction has real beats iff it starts inside its view.
    b.next(
        &req_left,
        &checking.mux(&past_end.not(), &below_real(&issued_next)),
        Some(&checking.or(&req_fire)),
    );

    // ---- RUN: beats in, registers out ----
    // Beats taken plus one (the index of the beat after the current one),
    // and the current beat's slot in the register being filled.
    let got_next = b.reg_noreset("got_next_q", bw);
    let slot = (lp > 0).then(|| b.reg_noreset("slot_q", lp));
    // "The next beat is real" is a register, and so are "this beat is the
    // last" and "this beat completes a register": the beats left after
    // this one count down (B - 1 at CHECK) and the flags are their
    // compares with 1, worked out a cycle ahead. In RUN the beats taken are
    // fewer than B always (the last beat ends RUN), so a beat beyond the
    // view is always available.
    let is_real = b.reg("beat_is_real_q", 1, 0);
    let beats_left = b.reg_noreset("beats_left_q", bw);
    let last_beat = b.reg_noreset("last_beat_q", 1);
    let beat_avail = b.let_("beat_avail", &running.and(&is_real.mux(&mem_rsp_valid, &Expr::bit(true))));
    let one_beat = beats_q.eq_lit(1);
    let next_is_last = beats_left.eq_lit(1);
    let complete_q = (lp > 0).then(|| b.reg_noreset("reg_complete_q", 1));
    let completes = complete_q.clone().unwrap_or(Expr::bit(true));
    let beat_fire = b.let_("beat_fire", &beat_avail.and(&completes.not().or(&rf_wready)));
    let beat_step = checking.or(&beat_fire);
    if let Some(complete_q) = &complete_q {
        // The next beat's slot is the last one.
        let slot_full = got_next.slice(lp - 1, 0).eq(&Expr::ones(lp));
        b.next(complete_q, &checking.mux(&one_beat, &slot_full.or(&next_is_last)), Some(&beat_step));
    }
    b.next(&last_beat, &checking.mux(&one_beat, &next_is_last), Some(&beat_step));
    b.assign(&mem_rsp_ready, &running.and(&is_real).and(&completes.not().or(&rf_wready)));
    // Byte i of this beat is real data iff got*RB + i < valid_bytes: the
    // beat is full (below valid_bytes / RB), or it is the partial one after
    // the last full beat and i is below the bytes it keeps. Both are
    // registers, worked out for the next beat; the first beat's are loaded
    // in RUN's first cycle: a real beat arrives a cycle after its request at
    // the earliest, so no real beat is taken in that cycle (a beat beyond
    // the view is zero whatever these say).
    let beat_full = b.reg_noreset("beat_full_q", 1);
    let beat_part = b.reg_noreset("beat_part_q", 1);
    let zero_b = Expr::zero(bw);
    let first_full = below_full(&zero_b);
    let next_full = below_full(&got_next);
    b.next(&beat_full, &run_first.mux(&first_full, &next_full), Some(&run_first.or(&beat_fire)));
    b.next(
        &beat_part,
        &run_first.mux(&first_full.not(), &beat_full.and(&next_full.not())),
        Some(&run_first.or(&beat_fire)),
    );
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
        // Slot s of the register being filled holds beat s. A slot is
        // loaded in every cycle the beat count points at it (what it takes
        // while the beat waits is overwritten when the beat is taken), so
        // its enable is a decode of the count, not the handshake; slots
        // above the current beat are not yet filled and read as zero.
        let slot = slot.clone().expect("a slot register when a register takes several beats");
        // The last slot is always the beat being taken: no register.
        let held: Vec<Expr> = (0..beats_per_reg - 1)
            .map(|s| b.pipe(&format!("acc{s}_q"), &beat, &slot.eq_lit(s as u64)))
            .collect();
        let chunks: Vec<Expr> = (0..beats_per_reg)
            .map(|s| {
                let sv = Expr::lit(lp, s as u64);
                let before = if s + 1 == beats_per_reg {
                    Expr::zero(p.read_bits)
                } else {
                    slot.gt(&sv).mux(&held[s as usize], &Expr::zero(p.read_bits))
                };
                slot.eq(&sv).mux(&beat, &before)
            })
            .collect();
        b.let_("reg_data", &Expr::cat_lanes(&chunks))
    };
    b.assign(&rf_we, &beat_avail.and(&completes));
    b.assign(&rf_waddr, &wreg);
    b.assign(&rf_wdata, &wdata);
    b.next(&got_next, &checking.mux(&Expr::lit(bw, 1), &got_next.add(&Expr::lit(bw, 1))), Some(&beat_step));
    if let Some(slot) = &slot {
        b.next(slot, &checking.mux(&Expr::zero(lp), &slot.add(&Expr::lit(lp, 1))), Some(&beat_step));
    }
    // Real beats come first: once a beat is beyond the view, so are the
    // rest (and past the view's end the first is).
    b.next(&is_real, &checking.mux(&past_end.not(), &is_real.and(&below_real(&got_next))), Some(&beat_step));
    let one_b = Expr::lit(bw, 1);
    b.next(&beats_left, &checking.mux(&beats_q.sub(&one_b), &beats_left.sub(&one_b)), Some(&beat_step));
    b.next(
        &wreg,
        &accept.mux(&in_dest, &wreg.add(&Expr::lit(dw, 1))),
        Some(&accept.or(&beat_fire.and(&completes))),
    );
    // Reads in flight: +1 for a request, -1 for a real beat taken. "Room
    // for one more" is a register worked out from the count's compares
    // with max_outstanding - 1 (one more request fills it) and the two
    // handshakes, so it needs no compare after the count's adder.
    let real_fire = b.let_("real_fire", &beat_fire.and(&is_real));
    let one = Expr::lit(ow, 1);
    let max_o = p.max_outstanding as u64;
    let outstanding_next = b.let_(
        "outstanding_next",
        &req_fire.mux(&real_fire.mux(&outstanding, &outstanding.add(&one)), &real_fire.mux(&outstanding.sub(&one), &outstanding)),
    );
    b.next(&outstanding, &outstanding_next, None);
    let one_short = outstanding.eq_lit(max_o - 1);
    b.next(
        &req_room,
        &req_fire.mux(&real_fire.or(&one_short.not()), &real_fire.or(&req_room)),
        None,
    );

    // ---- RESP ----
    let err_q = b.pipe("err_q", &err_code, &checking);
    b.assign(&rsp_valid, &responding);
    b.assign(&rsp_tag, &tag_q);
    b.assign(&rsp_error, &err_q);
    let done = b.let_("run_done", &beat_fire.and(&last_beat));
    b.next(&idle, &idle.and(&in_valid.not()).or(&responding.and(&rsp_ready)), None);
    b.next(&checking, &accept, None);
    b.next(&running, &checking.and(&any_err.not()).or(&running.and(&done.not())), None);
    b.next(
        &responding,
        &checking.and(&any_err).or(&running.and(&done)).or(&responding.and(&rsp_ready.not())),
        None,
    );

    b.finish()
}
