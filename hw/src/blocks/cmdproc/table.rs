//! The render-state table: reset from STATE_INIT at the doorbell, written
//! by `SET_CONTEXT_REG` values in the lanes the cycle takes, of the first
//! packet or of the second.

use super::decoder::Decoder;
use super::fetch::Fetch;
use super::first::First;
use super::regs::Regs;
use super::second::Second;
use super::{lit_t, RW};
use crate::rtl::{Expr, ModuleBuilder};
use gpurtl_params::cmdproc::CmdprocParams;

/// The table's registers, on `state_o`.
pub(super) fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, fetch: &Fetch, dec: &Decoder, state_o: &Expr) {
    let First { f_scr, f_scr_held, f_done, tn, mp, f_sc_ok, first_err, .. } = &dec.first;
    let Second { e_is, h1_scr, t2, sec_starts, sp_k, s_p0_now, s_scr_bad, .. } = &dec.second;
    let (start, state_init, lanes, take_mode) = (&regs.start, &regs.state_init, &fetch.lanes, &dec.mode.take_mode);
    let f = p.fetch_dwords();
    let sr = p.state_regs;
    let rw = RW;
    let reg_idx_w = 7;
    let mut state_q = Vec::new();
    for s in 0..sr {
        let q = b.reg(&format!("state{s}_q"), 32, 0);
        state_q.push(q);
    }
    // Lane i writes as a value of the first packet (value k = done + i - 2 to
    // p0 + k) or of the second (value k = i - e - 2).
    let f_writes = take_mode.and(&first_err.not()).and(f_scr).and(&f_scr_held.not()).and(f_sc_ok);
    let s_writes = sec_starts.and(&first_err.not()).and(h1_scr).and(s_p0_now).and(&s_scr_bad.not());
    let mut lane_we = Vec::new();
    let mut lane_reg = Vec::new();
    for i in 0..f {
        // First packet: dword done + i >= 2 and i < tn.
        let dword = f_done.add(&Expr::lit(rw, i as u64));
        let fw = f_writes.and(&lit_t(i).lt(tn)).and(&dword.ge(&Expr::lit(rw, 2)));
        let ftarget = mp[0].slice(reg_idx_w - 1, 0).add(&dword.slice(reg_idx_w - 1, 0)).sub(&Expr::lit(reg_idx_w, 2));
        // Second packet: lane i = e + 2 + k, i < e + t2.
        let mut sw_e = Expr::bit(false);
        let mut starget = Expr::zero(reg_idx_w);
        for e in 1..f {
            if i >= e + 2 {
                let k = i - e - 2;
                let here = e_is[e as usize].and(&lit_t(i - e).lt(t2));
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
    b.assign(state_o, &Expr::cat_lanes(&state_q));
}
