//! The first packet of a cycle: the one going on (`r` dwords left), or
//! the one whose header is in lane 0. It takes up to A lanes, one for
//! `WRITE_DATA`; a draw waits for a free job in the primitive unit. Its
//! checks (the header's, `SET_CONTEXT_REG`'s range when its p0 is taken,
//! the fields and the draw's range at its end) raise the cycle's error.

use super::decoder::{decode, writer_range_bad, Fences, Header, Mode, RunState};
use super::fetch::Fetch;
use super::regs::Regs;
use super::{lit_t, RW, TW};
use crate::rtl::{Expr, ModuleBuilder};
use gpurtl_params::cmdproc::{sh, CmdprocParams, Opcode};

/// The first packet and what it does this cycle.
pub(super) struct First {
    /// The header in lane 0, read as a new packet's.
    pub h0: Header,
    /// The packet's header, whether it is `WRITE_DATA`, `SET_CONTEXT_REG`,
    /// `INDIRECT_BUFFER`, `INDEX_TYPE`, `DRAW_INDEX_OFFSET_2`, its `n`, its
    /// dwords left and done, its header's byte address.
    pub f_hdr: Expr,
    pub f_wd: Expr,
    pub f_scr: Expr,
    pub f_ib: Expr,
    pub f_it: Expr,
    pub f_d2: Expr,
    /// `SET_SH_REG` (compute mode; else 0).
    pub f_shr: Expr,
    /// A state reader (a draw or `DISPATCH_DIRECT`), and a state writer
    /// (`SET_CONTEXT_REG`, `SET_SH_REG`) held this cycle because a state
    /// reader waits in the output queue.
    pub f_reader: Expr,
    pub f_held: Expr,
    pub f_n: Expr,
    pub f_rem: Expr,
    pub f_done: Expr,
    pub f_addr: Expr,
    /// A, as wide as `r`.
    pub a_r: Expr,
    /// The lanes it may take, and its p0..p3 as taken so far.
    pub tn: Expr,
    pub mp: Vec<Expr>,
    /// A state writer's range is good (its p0 taken now or before).
    pub f_sc_ok: Expr,
    /// The errors it raises: its header's, a state writer's range, the
    /// draw's range, and any of them (with the fields' and `WRITE_DATA`'s);
    /// in compute mode a draw's `graphics` and a dispatch's `need`.
    pub start_err: Expr,
    pub first_scr_err: Expr,
    pub prim_err: Expr,
    pub graphics_err: Expr,
    pub need_err: Expr,
    pub first_err: Expr,
    /// A `WRITE_DATA` going on, and a data dword offered on the write port.
    pub wd_cont: Expr,
    pub wr_valid: Expr,
    /// The lanes it takes; it ends, were no error raised; it commits.
    pub t_first: Expr,
    pub f_fin_any: Expr,
    pub commit: Expr,
}

impl First {
    #[allow(clippy::too_many_arguments)]
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, fetch: &Fetch, mode: &Mode, fences: &Fences, sh_q: &[Expr]) -> First {
        let RunState { r, done, cur_hdr, cur_addr, cur_n, cur_p, cur_sc_ok, left, daddr, isz32, .. } = run;
        let Fetch { lanes, a, .. } = fetch;
        let Mode { is_cont, take_mode, sp_full, .. } = mode;
        let Fences { qempty, jobs_none, jobs_full, wr_ready, readers, .. } = fences;
        let d_prim_size = &regs.d_prim_size;
        let f = p.fetch_dwords();
        let (tw, rw) = (TW, RW);
        let h0 = decode(b, p, "hdr0", &lanes[0], left, sp_full);

        let opsel = |h: &Expr, o: Opcode| h.slice(15, 8).eq_lit(o.code() as u64);
        let f_hdr = b.let_("first_header", &is_cont.mux(cur_hdr, &lanes[0]));
        let f_t3 = b.let_("first_t3", &is_cont.or(&h0.t3));
        let f_is = |o: Opcode| f_t3.and(&opsel(&f_hdr, o));
        let f_wd = b.let_("first_write_data", &f_is(Opcode::WriteData));
        let f_scr = b.let_("first_set_context", &f_is(Opcode::SetContextReg));
        let f_ib = b.let_("first_indirect", &f_is(Opcode::IndirectBuffer));
        let f_it = b.let_("first_index_type", &f_is(Opcode::IndexType));
        let f_d2 = b.let_("first_draw_indexed", &f_is(Opcode::DrawIndexOffset2));
        let f_da = f_is(Opcode::DrawIndexAuto);
        let f_dd = b.let_("first_dispatch", &f_is(Opcode::DispatchDirect));
        let f_shr = if p.compute { b.let_("first_set_sh", &f_is(Opcode::SetShReg)) } else { Expr::bit(false) };
        let f_rm = if p.compute { b.let_("first_release_mem", &f_is(Opcode::ReleaseMem)) } else { Expr::bit(false) };
        let f_reader = b.let_("first_state_reader", &f_d2.or(&f_da).or(&f_dd));
        // The state hold: a state writer takes nothing while a state reader
        // waits in the output queue (its header is still checked).
        let f_writer = f_scr.or(&f_shr);
        let f_held = b.let_("first_state_held", &f_writer.and(readers));
        let f_n = b.let_("first_n", &is_cont.mux(cur_n, &h0.n));
        let f_rem = b.let_("first_left", &is_cont.mux(r, &h0.len));
        let f_done = b.let_("first_done", &is_cont.mux(done, &Expr::zero(rw)));
        let f_addr = b.let_("first_addr", &is_cont.mux(cur_addr, daddr));
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
        let cont_ends = r_small.and(&r.slice(tw - 1, 0).le(a));
        let f_ends = b.let_("first_ends", &is_cont.mux(&cont_ends, &start_ends));
        let start_err = b.let_("header_error", &take_mode.and(&is_cont.not()).and(&h0.cause.ne(&Expr::zero(4))));
        // Lanes the first packet may take: all it has left up to A (one for WRITE_DATA).
        let tn_all = f_ends.mux(&f_rem.slice(tw - 1, 0), a);
        let tn = b.let_("first_lanes", &f_wd.mux(&a.ne(&lit_t(0)).zext(tw), &tn_all));
        // Lane i holds the first packet's dword done + i; p_k is dword 1 + k.
        // Lane i is taken by the first packet iff i < tn, i.e. i < A, the
        // packet has more than i dwords left, and i = 0 for WRITE_DATA.
        let lane_in: Vec<Expr> = (0..f)
            .map(|i| {
                let one = if i == 0 { Expr::bit(true) } else { f_wd.not() };
                b.let_(&format!("lane{i}_first"), &lit_t(i).lt(a).and(&rem_gt(i)).and(&one))
            })
            .collect();
        let lane_has = |i: u32, dword: u32| -> Expr {
            if dword < i {
                Expr::bit(false)
            } else {
                f_done.eq_lit((dword - i) as u64).and(&lane_in[i as usize])
            }
        };
        let mp: Vec<Expr> = (0..super::payload_dwords(p) as u32)
            .map(|k| {
                let base = is_cont.mux(&cur_p[k as usize], &Expr::zero(32));
                let v = (0..f).rev().fold(base, |acc, i| lane_has(i, 1 + k).mux(&lanes[i as usize], &acc));
                b.let_(&format!("first_p{k}"), &v)
            })
            .collect();
        let f_p0_now = b.let_("first_p0_now", &(0..f).fold(Expr::bit(false), |acc, i| acc.or(&lane_has(i, 1))));
        let f_scr_bad = b.let_("first_range_bad", &writer_range_bad(p, &f_scr, &mp[0], &f_n));
        let f_sc_ok = b.let_("first_range_ok", &f_p0_now.mux(&f_scr_bad.not(), cur_sc_ok));
        let first_scr_err = b.let_("first_range_error", &take_mode.and(&start_err.not()).and(&f_writer).and(&f_held.not()).and(&f_p0_now).and(&f_scr_bad));
        // Checks at the end of a packet.
        let it_bad = mp[0].gt(&Expr::lit(32, 1));
        let ib_bad = mp[1].ne(&Expr::zero(32)).or(&mp[0].slice(1, 0).ne(&Expr::zero(2)));
        let om = mp[1].zext(35).add(&mp[2].zext(35));
        let span = isz32.mux(&Expr::cat(&[om.slice(32, 0), Expr::zero(2)]), &Expr::cat(&[om.slice(33, 0), Expr::zero(1)]));
        let prim_bad = b.let_("prim_range_bad", &span.gt(&d_prim_size.zext(35)));
        let ends_ok = take_mode.and(&start_err.not()).and(&f_wd.not()).and(&f_ends);
        // Compute mode: a dispatch's and a fence's fields, a dispatch's need,
        // a draw is an error.
        let (dd_field, dd_need, rm_bad) = if p.compute { compute_checks(b, p, sh_q, &mp) } else { (Expr::bit(false), Expr::bit(false), Expr::bit(false)) };
        let field_err = b.let_("first_field_error", &ends_ok.and(&f_it.and(&it_bad).or(&f_ib.and(&ib_bad)).or(&f_dd.and(&dd_field)).or(&f_rm.and(&rm_bad))));
        let need_err = b.let_("first_need_error", &ends_ok.and(&f_dd).and(&dd_field.not()).and(&dd_need));
        let graphics_err = b.let_("first_graphics_error", &ends_ok.and(&Expr::bit(p.compute)).and(&f_d2.or(&f_da)));
        let prim_err = b.let_("first_prim_error", &ends_ok.and(&Expr::bit(!p.compute)).and(&f_d2).and(&prim_bad));
        // WRITE_DATA, one dword a cycle.
        let wd_cont = f_wd.and(is_cont);
        let wd_field_err = b.let_(
            "write_field_error",
            &take_mode.and(&wd_cont).and(&done.eq_lit(3)).and(&a.ne(&lit_t(0))).and(&lanes[0].ne(&Expr::zero(32)).or(&cur_p[1].slice(1, 0).ne(&Expr::zero(2)))),
        );
        let wd_data = b.let_("write_data_dword", &wd_cont.and(&done.gt(&Expr::lit(rw, 3))));
        let wr_valid = b.let_("wr_offer", &take_mode.and(&wd_data).and(&a.ne(&lit_t(0))));
        let wd_go = b.let_("write_fence_clear", &qempty.and(jobs_none));
        let wd_take = b.let_(
            "write_take",
            &a.ne(&lit_t(0)).and(&is_cont.mux(&wd_data.mux(wr_ready, &wd_field_err.not()), &wd_go)),
        );
        let first_err = b.let_("first_error", &start_err.or(&first_scr_err).or(&field_err).or(&prim_err).or(&wd_field_err).or(&need_err).or(&graphics_err));
        // A draw with indices waits for the primitive unit.
        let draw_waits = b.let_("draw_waits", &Expr::bit(!p.compute).and(&f_d2).and(&f_ends).and(&mp[2].ne(&Expr::zero(32))).and(jobs_full));
        let blocked = draw_waits.or(&f_held);
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
            &take_mode.and(&f_wd.mux(&wd_take.and(is_cont).and(&r.eq_lit(1)), &f_ends.and(&blocked.not()))),
        );
        let f_fin = b.let_("first_finishes", &f_fin_any.and(&first_err.not()));
        let commit = b.let_("commit", &f_fin.and(&f_t3));
        First {
            h0,
            f_hdr,
            f_wd,
            f_scr,
            f_ib,
            f_it,
            f_d2,
            f_shr,
            f_reader,
            f_held,
            f_n,
            f_rem,
            f_done,
            f_addr,
            a_r,
            tn,
            mp,
            f_sc_ok,
            start_err,
            first_scr_err,
            prim_err,
            graphics_err,
            need_err,
            wd_cont,
            wr_valid,
            first_err,
            t_first,
            f_fin_any,
            commit,
        }
    }
}

/// Compute mode's checks at a packet's end (docs/cmdproc.md, "Compute
/// mode"): a `DISPATCH_DIRECT`'s `field` and `need` from the compute
/// registers at the start of the cycle (its snapshot, thanks to the state
/// hold) and x, y, z (`mp[0..3]`); a `RELEASE_MEM`'s `field`.
fn compute_checks(b: &mut ModuleBuilder, p: &CmdprocParams, sh_q: &[Expr], mp: &[Expr]) -> (Expr, Expr, Expr) {
    let thr = |i: usize| sh_q[i].slice(15, 0);
    let (tx, ty, tz) = (thr(sh::NUM_THREAD_X), thr(sh::NUM_THREAD_Y), thr(sh::NUM_THREAD_Z));
    let t_zero = tx.eq_lit(0).or(&ty.eq_lit(0)).or(&tz.eq_lit(0));
    // x, y, z above 2^16; else their product (51 bits) against 2^block_bits.
    let dim_big = mp[..3].iter().fold(Expr::bit(false), |acc, d| acc.or(&d.gt(&Expr::lit(32, 1 << 16))));
    let prod = mp[0].slice(16, 0).zext(51).mul(&mp[1].slice(16, 0).zext(51)).mul(&mp[2].slice(16, 0).zext(51));
    let blocks_big = prod.slice(50, p.block_bits).ne(&Expr::zero(51 - p.block_bits));
    let pgm_high = sh_q[sh::PGM_LO].slice(31, 24).ne(&Expr::zero(8)).or(&sh_q[sh::PGM_HI].slice(7, 0).ne(&Expr::zero(8)));
    let field = b.let_("dispatch_field_bad", &t_zero.or(&dim_big).or(&blocks_big).or(&pgm_high));
    // T = X Y Z (48 bits), R = 4 T (VGPRS + 1) (57 bits), M = 512 LDS_SIZE.
    let t = b.let_("dispatch_threads", &tx.zext(48).mul(&ty.zext(48)).mul(&tz.zext(48)));
    let vg = sh_q[sh::PGM_RSRC1].slice(5, 0).zext(7).add(&Expr::lit(7, 1));
    let r = Expr::cat(&[t.zext(55).mul(&vg.zext(55)), Expr::zero(2)]);
    // M is below 2^18; max_smem may be 2^18 (19 bits for the compare).
    let m = Expr::cat(&[Expr::zero(1), sh_q[sh::PGM_RSRC2].slice(23, 15), Expr::zero(9)]);
    let need = t.gt(&Expr::lit(48, p.max_threads as u64)).or(&r.gt(&Expr::lit(57, p.max_regs as u64))).or(&m.gt(&Expr::lit(19, p.max_smem as u64)));
    let need = b.let_("dispatch_need_bad", &need);
    // RELEASE_MEM: DATA_SEL p1[31:29], INT_SEL p1[26:24], address p2, p3.
    let ds = mp[1].slice(31, 29);
    let is = mp[1].slice(26, 24);
    let rm = mp[3]
        .ne(&Expr::zero(32))
        .or(&mp[2].slice(1, 0).ne(&Expr::zero(2)))
        .or(&ds.eq_lit(2).and(&mp[2].bit_at(2)))
        .or(&ds.gt(&Expr::lit(3, 2)))
        .or(&is.gt(&Expr::lit(3, 3)));
    let rm = b.let_("release_field_bad", &rm);
    (field, need, rm)
}
