//! The second packet of a cycle: a header in lane e = r, right after a
//! first packet that went on and ended in lane e - 1. It takes what is
//! left of the window (nothing after a `WRITE_DATA`, only its header is
//! checked then); and the cycle's error, the first packet's or its own.

use super::decoder::{decode, op_index, writer_range_bad, Header, Mode, RunState};
use super::fetch::Fetch;
use super::first::First;
use super::{lit_t, TW};
use crate::rtl::{Expr, ModuleBuilder};
use gpurtl_params::cmdproc::{Cause, CmdprocParams, Opcode};

/// The second packet and the cycle's error.
pub(super) struct Second {
    /// `e_is[e]`: the second header is in lane e (e >= 1).
    pub e_is: Vec<Expr>,
    /// Its header, read, and whether it is `SET_CONTEXT_REG`, `SET_SH_REG`.
    pub sec_hdr: Expr,
    pub h1: Header,
    pub h1_scr: Expr,
    pub h1_shr: Expr,
    /// The lanes it takes (0: it does not start), and its p0..p3.
    pub t2: Expr,
    pub sec_starts: Expr,
    pub sp_k: Vec<Expr>,
    /// Its p0 is taken now, and its range is bad.
    pub s_p0_now: Expr,
    pub s_scr_bad: Expr,
    /// Its header's byte address.
    pub sec_addr: Expr,
    /// The cycle's error (of either packet), its cause and address.
    pub dec_err: Expr,
    pub cause_now: Expr,
    pub addr_now: Expr,
}

impl Second {
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, run: &RunState, fetch: &Fetch, mode: &Mode, first: &First, readers: &Expr) -> Second {
        let RunState { r, left, daddr, .. } = run;
        let Fetch { lanes, a, .. } = fetch;
        let Mode { is_cont, sp_full, .. } = mode;
        let First { h0, f_wd, f_ib, f_scr, f_reader, f_addr, a_r, start_err, first_scr_err, prim_err, graphics_err, need_err, first_err, f_fin_any, .. } = first;
        let f = p.fetch_dwords();
        let tw = TW;
        // Compute mode: a dispatch that ends has no second packet (the
        // dispatch barrier; a draw that ends there is an error anyway).
        let no_second = if p.compute { f_ib.or(f_reader) } else { f_ib.clone() };
        let sec_pre = b.let_("second_possible", &f_fin_any.and(is_cont).and(&no_second.not()).and(&r.lt(a_r)));
        let e_is: Vec<Expr> = (0..f).map(|e| if e == 0 { Expr::bit(false) } else { r.eq_lit(e as u64) }).collect();
        let by_e = |b: &mut ModuleBuilder, name: &str, vals: &dyn Fn(u32) -> Expr, w: u32| -> Expr {
            let v = (1..f).fold(Expr::zero(w), |acc, e| e_is[e as usize].mux(&vals(e), &acc));
            b.let_(name, &v)
        };
        let sec_hdr = by_e(b, "second_header", &|e| lanes[e as usize].clone(), 32);
        let e_t = by_e(b, "second_lane", &|e| lit_t(e), tw);
        let sec_left = left.sub(&e_t.zext(32));
        let h1 = decode(b, p, "hdr1", &sec_hdr, &sec_left, sp_full);
        let sec_hdr_err = b.let_("second_header_error", &sec_pre.and(&h1.cause.ne(&Expr::zero(4))));
        let h1_wd = h1.op[op_index(Opcode::WriteData)].clone();
        let h1_scr = h1.op[op_index(Opcode::SetContextReg)].clone();
        let h1_shr = h1.op[op_index(Opcode::SetShReg)].clone();
        let h1_writer = h1_scr.or(&h1_shr);
        let room2 = a.sub(&e_t);
        let n2_small = h1.n.slice(13, tw).eq_lit(0).and(&h1.n.slice(tw - 1, 0).lt(&room2));
        let t2_max = n2_small.mux(&h1.n.slice(tw - 1, 0), &room2);
        // After a WRITE_DATA (one dword a cycle) the second header is only checked.
        // The state hold: a SET_CONTEXT_REG takes nothing while a state reader
        // waits in the output queue or the first packet is one that ends.
        let held = b.let_("state_held", &readers.or(&f_reader.and(f_fin_any)));
        let sec_go = sec_pre.and(&sec_hdr_err.not()).and(&h1.t3).and(&h1_wd.not()).and(&f_wd.not()).and(&h1_writer.and(&held).not());
        let t2 = b.let_("second_take", &sec_go.mux(&t2_max, &lit_t(0)));
        let sec_starts = b.let_("second_starts", &t2.ne(&lit_t(0)));
        // The second packet's p_k: lane e + 1 + k when k + 1 < t2.
        let sp_k: Vec<Expr> = (0..super::payload_dwords(p) as u32)
            .map(|k| {
                by_e(
                    b,
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
        let s_scr_bad = b.let_("second_range_bad", &writer_range_bad(p, &h1_scr, &sp_k[0], &h1.n));
        let sec_scr_err = b.let_("second_range_error", &s_p0_now.and(&h1_writer).and(&s_scr_bad));
        let dec_err = b.let_("decode_error", &first_err.or(&sec_hdr_err).or(&sec_scr_err));
        let c4 = |x: Cause| Expr::lit(4, x.code() as u64);
        let first_cause = start_err.mux(
            &h0.cause,
            &first_scr_err.mux(
                &f_scr.mux(&c4(Cause::StateRange), &c4(Cause::ShRange)),
                &prim_err.mux(&c4(Cause::PrimRange), &graphics_err.mux(&c4(Cause::Graphics), &need_err.mux(&c4(Cause::Need), &c4(Cause::Field)))),
            ),
        );
        let sec_addr = daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), e_t.clone(), Expr::zero(2)]));
        let cause_now = first_err.mux(&first_cause, &sec_hdr_err.mux(&h1.cause, &h1_scr.mux(&c4(Cause::StateRange), &c4(Cause::ShRange))));
        let addr_now = first_err.mux(f_addr, &sec_addr);
        Second { e_is, sec_hdr, h1, h1_scr, h1_shr, t2, sec_starts, sp_k, s_p0_now, s_scr_bad, dec_err, sec_addr, cause_now, addr_now }
    }
}
