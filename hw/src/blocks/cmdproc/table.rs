//! The state tables: the render-state table, reset from STATE_INIT at the
//! doorbell, written by `SET_CONTEXT_REG` values, and in compute mode the
//! compute registers, reset to 0 and written by `SET_SH_REG` values; each
//! in the lanes the cycle takes, of the first packet or of the second.

use super::decoder::Decoder;
use super::fetch::Fetch;
use super::first::First;
use super::regs::Regs;
use super::second::Second;
use super::{lit_t, RW};
use crate::rtl::{Expr, ModuleBuilder};
use gpurtl_params::cmdproc::{sh, CmdprocParams};

/// Per lane, whether it writes a value of a state writer of the kind
/// `first_is` / `second_is` (the packets' opcode matches) and the register
/// it writes, `p0 + k` in `w` bits.
fn lane_writes(b: &mut ModuleBuilder, p: &CmdprocParams, dec: &Decoder, name: &str, first_is: &Expr, second_is: &Expr, w: u32) -> Vec<(Expr, Expr)> {
    let First { f_held, f_done, tn, mp, f_sc_ok, first_err, .. } = &dec.first;
    let Second { e_is, t2, sec_starts, sp_k, s_p0_now, s_scr_bad, .. } = &dec.second;
    let take_mode = &dec.mode.take_mode;
    let f = p.fetch_dwords();
    let rw = RW;
    // Lane i writes as a value of the first packet (value k = done + i - 2 to
    // p0 + k) or of the second (value k = i - e - 2).
    let f_writes = take_mode.and(&first_err.not()).and(first_is).and(&f_held.not()).and(f_sc_ok);
    let s_writes = sec_starts.and(&first_err.not()).and(second_is).and(s_p0_now).and(&s_scr_bad.not());
    (0..f)
        .map(|i| {
            // First packet: dword done + i >= 2 and i < tn.
            let dword = f_done.add(&Expr::lit(rw, i as u64));
            let fw = f_writes.and(&lit_t(i).lt(tn)).and(&dword.ge(&Expr::lit(rw, 2)));
            let ftarget = mp[0].slice(w - 1, 0).add(&dword.slice(w - 1, 0)).sub(&Expr::lit(w, 2));
            // Second packet: lane i = e + 2 + k, i < e + t2.
            let mut sw_e = Expr::bit(false);
            let mut starget = Expr::zero(w);
            for e in 1..f {
                if i >= e + 2 {
                    let k = i - e - 2;
                    let here = e_is[e as usize].and(&lit_t(i - e).lt(t2));
                    sw_e = sw_e.or(&here);
                    starget = e_is[e as usize].mux(&sp_k[0].slice(w - 1, 0).add(&Expr::lit(w, k as u64)), &starget);
                }
            }
            let swr = s_writes.and(&sw_e);
            let we = b.let_(&format!("lane{i}_{name}_we"), &fw.or(&swr));
            let target = b.let_(&format!("lane{i}_{name}_reg"), &fw.mux(&ftarget, &starget));
            (we, target)
        })
        .collect()
}

/// Register `q`'s next value: the last lane whose write hits `key`, or
/// `reset` at a doorbell.
fn write_reg(b: &mut ModuleBuilder, q: &Expr, lanes: &[Expr], writes: &[(Expr, Expr)], key: u64, start: &Expr, reset: &Expr) {
    let mut d = q.clone();
    let mut any = Expr::bit(false);
    for (i, (we, target)) in writes.iter().enumerate() {
        let hit = we.and(&target.eq_lit(key));
        d = hit.mux(&lanes[i], &d);
        any = any.or(&hit);
    }
    let d = start.mux(reset, &d);
    b.next(q, &d, Some(&start.or(&any)));
}

/// The render-state table's registers, on `state_o`.
pub(super) fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, fetch: &Fetch, dec: &Decoder, state_o: &Expr) {
    let (start, state_init, lanes) = (&regs.start, &regs.state_init, &fetch.lanes);
    let state_q: Vec<Expr> = (0..p.state_regs).map(|s| b.reg(&format!("state{s}_q"), 32, 0)).collect();
    let writes = lane_writes(b, p, dec, "state", &dec.first.f_scr, &dec.second.h1_scr, 7);
    for (s, q) in state_q.iter().enumerate() {
        write_reg(b, q, lanes, &writes, s as u64, start, &state_init[s]);
    }
    b.assign(state_o, &Expr::cat_lanes(&state_q));
}

/// Compute mode: the compute registers (declared before the decoder, which
/// checks dispatches against them), in `sh_o` order.
pub(super) fn declare_sh(b: &mut ModuleBuilder, p: &CmdprocParams) -> Vec<Expr> {
    if !p.compute {
        return Vec::new();
    }
    (0..sh::REGS).map(|i| b.reg(&format!("sh_{}_q", sh::name(i).trim_start_matches("COMPUTE_").to_lowercase()), 32, 0)).collect()
}

/// Compute mode: the compute registers' writes, on `sh_o`.
pub(super) fn build_sh(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, fetch: &Fetch, dec: &Decoder, sh_q: &[Expr], sh_o: &Expr) {
    let writes = lane_writes(b, p, dec, "sh", &dec.first.f_shr, &dec.second.h1_shr, 10);
    for (i, q) in sh_q.iter().enumerate() {
        write_reg(b, q, &fetch.lanes, &writes, sh::offset(i) as u64, &regs.start, &Expr::zero(32));
    }
    b.assign(sh_o, &Expr::cat_lanes(sh_q));
}
