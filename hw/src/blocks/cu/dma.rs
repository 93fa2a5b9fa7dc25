//! The 2-D DMA engine (docs/cu.md, "`ld`, `st`: 2-D DMA" and "DMA"): one
//! operation at a time, rows in order, the input side's aligned units
//! (memory dwords for `ld`, scratchpad words for `st`) requested ahead, and
//! an aligner that turns each arriving unit into at most one output unit,
//! with a flush cycle when a row's last output unit is still missing.
//!
//! Both directions share the datapath: "in" is where the bytes come from
//! (memory for `ld`, the scratchpad for `st`), "out" where they go.

use crate::rtl::bus::Bus;
use crate::rtl::{bits_for, select, Expr, ModuleBuilder};
use gpurtl_params::cu::CuParams;

/// The operation at the head of the DMA queue and the ports the engine drives.
pub struct Io {
    /// The queue holds an operation.
    pub start: Expr,
    pub st: Expr,
    /// The share's first byte plus `s`: the scratchpad address of row 0.
    pub s: Expr,
    pub a: Expr,
    pub stride: Expr,
    pub rows: Expr,
    pub n: Expr,
    /// The scratchpad pitch (already `n` when the instruction gave 0).
    pub p: Expr,
    /// `ld ..., zmap`: write the rows' zero map before `s` after the copy.
    pub zmap: Expr,
    pub mem_rd: Bus,
    pub mem_wr: Bus,
    pub spm_rd: Bus,
    pub spm_wr: Bus,
}

pub struct Engine {
    /// An operation is in progress.
    pub busy: Expr,
    /// The head operation starts in this cycle (and leaves the queue).
    pub started: Expr,
    /// ... and it copies nothing: it is done in this same cycle.
    pub done_now: Expr,
    /// An operation is done in this cycle (`done_now` included).
    pub done: Expr,
}

/// Aligned units a row touches: ceil((lane + n) / 4), 16 bits.
fn units(lane: &Expr, n: &Expr) -> Expr {
    lane.zext(18).add(&n.zext(18)).add(&Expr::lit(18, 3)).slice(17, 2)
}

fn aligned(x: &Expr) -> Expr {
    Expr::cat(&[x.slice(31, 2), Expr::zero(2)])
}

pub fn engine(b: &mut ModuleBuilder, p: &CuParams, io: Io) -> Engine {
    let sw = p.smem_addr_bits();
    let ow = bits_for(p.max_outstanding as u64);
    let busy = b.reg("dma_busy_q", 1, 0);
    let st = b.reg_noreset("dma_st_q", 1);
    let n = b.reg_noreset("dma_n_q", 16);
    let pitch = b.reg_noreset("dma_p_q", 16);
    let stride = b.reg_noreset("dma_stride_q", 32);
    let started = b.let_("dma_start", &io.start.and(&busy.not()));
    let empty = io.rows.eq_lit(0).or(&io.n.eq_lit(0));
    let done_now = b.let_("dma_done_now", &started.and(&empty));
    let go = b.let_("dma_go", &started.and(&empty.not()));
    b.next(&st, &io.st, Some(&go));
    b.next(&n, &io.n, Some(&go));
    b.next(&pitch, &io.p, Some(&go));
    b.next(&stride, &io.stride, Some(&go));
    let s32 = io.s.zext(32);
    let in0 = io.st.mux(&s32, &io.a);
    let out0 = io.st.mux(&io.a, &s32);
    let in_step = st.mux(&pitch.zext(32), &stride);
    let out_step = st.mux(&stride, &pitch.zext(32));
    let ld = busy.and(&st.not());
    let stm = busy.and(&st);
    let inflight = b.reg("dma_inflight_q", ow, 0);
    let credit = b.let_("dma_credit", &inflight.lt(&Expr::lit(ow, p.max_outstanding as u64)));

    // ---- the input side's requests ----
    let q_rows = b.reg("dma_q_rows_q", 16, 0);
    let q_row = b.reg_noreset("dma_q_row_q", 32);
    let q_addr = b.reg_noreset("dma_q_addr_q", 32);
    let q_left = b.reg_noreset("dma_q_left_q", 16);
    let has_req = busy.and(&q_rows.any());
    b.assign(&io.mem_rd.req().valid, &has_req.and(&st.not()).and(&credit));
    b.assign(&io.mem_rd.req().field("addr"), &q_addr);
    b.assign(&io.spm_rd.req().valid, &has_req.and(&st));
    b.assign(&io.spm_rd.req().field("addr"), &q_addr.slice(sw - 1, 0));
    let rd_fire = b.let_("dma_rd_fire", &io.mem_rd.req().valid.and(&io.mem_rd.req().ready));
    let q_fire = b.let_("dma_q_fire", &rd_fire.or(&io.spm_rd.req().valid.and(&io.spm_rd.req().ready)));
    let q_next_row = b.let_("dma_q_next_row", &q_row.add(&in_step));
    let q_row_end = q_left.eq_lit(1);
    b.next(&q_rows, &go.mux(&io.rows, &q_rows.sub(&Expr::lit(16, 1))), Some(&go.or(&q_fire.and(&q_row_end))));
    b.next(&q_row, &go.mux(&in0, &q_next_row), Some(&go.or(&q_fire.and(&q_row_end))));
    let q_addr_d = go.mux(&aligned(&in0), &q_row_end.mux(&aligned(&q_next_row), &q_addr.add(&Expr::lit(32, 4))));
    b.next(&q_addr, &q_addr_d, Some(&go.or(&q_fire)));
    let q_left_d = go.mux(
        &units(&in0.slice(1, 0), &io.n),
        &q_row_end.mux(&units(&q_next_row.slice(1, 0), &n), &q_left.sub(&Expr::lit(16, 1))),
    );
    b.next(&q_left, &q_left_d, Some(&go.or(&q_fire)));

    // ---- the aligner ----
    let p_rows = b.reg("dma_p_rows_q", 16, 0);
    let p_in_row = b.reg_noreset("dma_p_in_row_q", 32);
    let p_out_row = b.reg_noreset("dma_p_out_row_q", 32);
    let p_out_addr = b.reg_noreset("dma_p_out_addr_q", 32);
    let pos = b.reg_noreset("dma_p_pos_q", 18);
    let p_left = b.reg_noreset("dma_p_left_q", 16);
    let first = b.reg_noreset("dma_p_first_q", 1);
    let prev = b.reg_noreset("dma_p_prev_q", 32);
    let flush = b.reg("dma_flush_q", 1, 0);
    let in_lane = p_in_row.slice(1, 0);
    let out_lane = p_out_row.slice(1, 0);
    let emit = b.let_("dma_emit", &out_lane.ge(&in_lane).or(&first.not()));
    let in_valid = st.mux(&io.spm_rd.rsp().valid, &io.mem_rd.rsp().valid);
    let in_data = st.mux(&io.spm_rd.rsp().field("data"), &io.mem_rd.rsp().field("data"));
    let cur = flush.mux(&Expr::zero(32), &in_data);
    let both = Expr::cat(&[cur, prev.clone()]);
    let sh = out_lane.sub(&in_lane);
    let word = select(&sh, &[both.slice(63, 32), both.slice(55, 24), both.slice(47, 16), both.slice(39, 8)]);
    let word = b.let_("dma_word", &word);
    let nn = n.zext(17);
    let lanes: Vec<Expr> = (0..4u64)
        .map(|l| {
            let v = pos.add(&Expr::lit(18, l));
            v.bit_at(17).not().and(&v.slice(16, 0).lt(&nn))
        })
        .collect();
    let strb = b.let_("dma_strb", &Expr::cat_lanes(&lanes));
    // Output: the scratchpad's write port (ld) or memory's (st, under the count).
    let out_gate = st.not().or(&credit);
    let out_ready = st.mux(&io.mem_wr.req().ready, &io.spm_wr.req().ready);
    let out_valid = b.let_("dma_out_valid", &busy.and(&out_gate).and(&flush.or(&in_valid.and(&emit))));
    // ld ..., zmap: after the copy the map's words go out on the same port,
    // one a cycle (declared here, driven below).
    let zw = b.reg("dma_zw_q", 1, 0);
    let zm_addr = b.wire("dma_zm_addr", sw);
    let zm_word = b.wire("dma_zm_word", 32);
    b.assign(&io.spm_wr.req().valid, &out_valid.and(&st.not()).or(&zw));
    b.assign(&io.spm_wr.req().field("addr"), &zw.mux(&zm_addr, &p_out_addr.slice(sw - 1, 0)));
    b.assign(&io.spm_wr.req().field("data"), &zw.mux(&zm_word, &word));
    b.assign(&io.spm_wr.req().field("strb"), &zw.mux(&Expr::ones(4), &strb));
    b.assign(&io.spm_wr.rsp().ready, &Expr::bit(true));
    b.waive_unused(&io.spm_wr.rsp().valid, "a scratchpad write is done once taken: a later read of it waits for it (docs/scratchpad.md)");
    b.assign(&io.mem_wr.req().valid, &out_valid.and(&st));
    b.assign(&io.mem_wr.req().field("addr"), &p_out_addr);
    b.assign(&io.mem_wr.req().field("data"), &word);
    b.assign(&io.mem_wr.req().field("strb"), &strb);
    b.assign(&io.mem_wr.rsp().ready, &Expr::bit(true));
    let out_fire = b.let_("dma_out_fire", &out_valid.and(&out_ready));
    // Input: taken when what it emits (if anything) goes out in this cycle.
    let take = b.let_("dma_take", &busy.and(&flush.not()).and(&emit.not().or(&out_gate.and(&out_ready))));
    b.assign(&io.mem_rd.rsp().ready, &take.and(&st.not()));
    b.assign(&io.spm_rd.rsp().ready, &take.and(&st));
    let in_fire = b.let_("dma_in_fire", &in_valid.and(&take));
    let moved = in_fire.and(&emit);
    let pos_after = moved.mux(&pos.add(&Expr::lit(18, 4)), &pos);
    let row_last = in_fire.and(&p_left.eq_lit(1));
    // A unit remains if the next output unit still holds bytes of the row.
    let remains = pos_after.bit_at(17).or(&pos_after.slice(16, 0).lt(&nn));
    let to_flush = b.let_("dma_to_flush", &row_last.and(&remains));
    let flushed = flush.and(&out_fire);
    let advance = b.let_("dma_row_done", &row_last.and(&remains.not()).or(&flushed));
    b.next(&flush, &to_flush.or(&flush.and(&out_fire.not())), None);
    b.next(&prev, &in_data, Some(&in_fire));
    let n_in = p_in_row.add(&in_step);
    let n_out = p_out_row.add(&out_step);
    let neg = |lane: &Expr| Expr::zero(18).sub(&lane.zext(18));
    b.next(&p_rows, &go.mux(&io.rows, &p_rows.sub(&Expr::lit(16, 1))), Some(&go.or(&advance)));
    b.next(&p_in_row, &go.mux(&in0, &n_in), Some(&go.or(&advance)));
    b.next(&p_out_row, &go.mux(&out0, &n_out), Some(&go.or(&advance)));
    let out_addr_d = go.mux(&aligned(&out0), &advance.mux(&aligned(&n_out), &p_out_addr.add(&Expr::lit(32, 4))));
    b.next(&p_out_addr, &out_addr_d, Some(&go.or(&advance).or(&moved)));
    let pos_d = go.mux(&neg(&out0.slice(1, 0)), &advance.mux(&neg(&n_out.slice(1, 0)), &pos_after));
    b.next(&pos, &pos_d, Some(&go.or(&advance).or(&moved)));
    let left_d = go.mux(&units(&in0.slice(1, 0), &io.n), &advance.mux(&units(&n_in.slice(1, 0), &n), &p_left.sub(&Expr::lit(16, 1))));
    b.next(&p_left, &left_d, Some(&go.or(&advance).or(&in_fire)));
    b.next(&first, &go.or(&advance).or(&first.and(&in_fire.not())), None);

    // ---- counts and the end ----
    let mem_wr_fire = io.mem_wr.req().valid.and(&io.mem_wr.req().ready);
    let inc = st.mux(&mem_wr_fire, &rd_fire);
    let dec = st.mux(&io.mem_wr.rsp().valid, &in_fire);
    b.next(&inflight, &inflight.add(&inc.zext(ow)).sub(&dec.zext(ow)), None);
    let last_row = p_rows.eq_lit(1);
    let done_ld = ld.and(&advance).and(&last_row);

    // ---- ld ..., zmap: a row's bit is 1 when every byte written for it is
    // zero; the map (kmax bits) is written in the nz cycles after the last
    // data word, word m at s - 4*nz + 4m ----
    let kmax = p.kmax;
    let zm = b.reg_noreset("dma_zm_q", 1);
    b.next(&zm, &io.zmap.and(&io.st.not()), Some(&go));
    let zrow = b.reg_noreset("dma_zrow_q", 16);
    b.next(&zrow, &go.mux(&Expr::zero(16), &zrow.add(&Expr::lit(16, 1))), Some(&go.or(&advance)));
    let row_nz = b.reg_noreset("dma_row_nz_q", 1);
    let byte_mask = Expr::cat(&(0..4).rev().map(|l| strb.bit_at(l).repl(8)).collect::<Vec<_>>());
    let cur_nz = out_fire.and(&st.not()).and(&word.and(&byte_mask).any());
    let nz_now = b.let_("dma_row_nz", &row_nz.or(&cur_nz));
    b.next(&row_nz, &go.or(&advance).mux(&Expr::bit(false), &nz_now), Some(&go.or(&advance).or(&cur_nz)));
    let map = b.reg_noreset("dma_zmap_q", kmax);
    let onehot = Expr::cat_lanes(&(0..kmax as u64).map(|r| zrow.eq_lit(r)).collect::<Vec<_>>());
    let set = advance.and(&nz_now.not()).repl(kmax).and(&onehot);
    b.next(&map, &go.mux(&Expr::zero(kmax), &map.or(&set)), Some(&go.or(&advance)));
    let mw = bits_for(kmax.div_ceil(32) as u64);
    let zm_n = b.reg_noreset("dma_zm_n_q", mw);
    let zm_m = b.reg_noreset("dma_zm_m_q", mw);
    let zm_base = b.reg_noreset("dma_zm_base_q", sw);
    let nz_in = io.rows.zext(17).add(&Expr::lit(17, 31)).slice(16, 5);
    b.next(&zm_n, &nz_in.slice(mw - 1, 0), Some(&go));
    let nz_sw = if sw - 2 >= 12 { nz_in.zext(sw - 2) } else { nz_in.slice(sw - 3, 0) };
    b.next(&zm_base, &io.s.sub(&Expr::cat(&[nz_sw, Expr::zero(2)])), Some(&go));
    let start_map = done_ld.and(&zm);
    let zm_last = zm_m.add(&Expr::lit(mw, 1)).eq(&zm_n);
    b.next(&zw, &start_map.or(&zw.and(&zm_last.not())), None);
    b.next(&zm_m, &start_map.mux(&Expr::zero(mw), &zm_m.add(&Expr::lit(mw, 1))), Some(&start_map.or(&zw)));
    b.assign(&zm_addr, &zm_base.add(&Expr::cat(&[zm_m.zext(sw - 2), Expr::zero(2)])));
    let words: Vec<Expr> = (0..kmax.div_ceil(32)).map(|m| map.slice((32 * m + 31).min(kmax - 1), 32 * m).zext(32)).collect();
    b.assign(&zm_word, &select(&zm_m, &words));
    let done_ld = done_ld.and(&zm.not()).or(&zw.and(&zm_last));
    let done_st = stm.and(&p_rows.eq_lit(0)).and(&io.mem_wr.rsp().valid).and(&inflight.eq_lit(1));
    let finish = b.let_("dma_finish", &done_ld.or(&done_st));
    b.next(&busy, &go.or(&busy.and(&finish.not())), None);
    let done = b.let_("dma_done", &done_now.or(&finish));
    Engine { busy, started, done_now, done }
}
