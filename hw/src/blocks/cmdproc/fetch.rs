//! The instruction fetcher and pool: beat requests on credit (a request
//! only when its beat has room in the pool), answers into the pool or
//! dropped after a jump, and the decoder's window of F dwords at the
//! pool's head.

use super::jump::Jump;
use super::decoder::RunState;
use super::{lit_t, TW};
use crate::rtl::{clog2, select, Expr, ModuleBuilder, Stream};
use gpurtl_params::cmdproc::CmdprocParams;

/// The fetcher's and the pool's registers, and the window.
pub(super) struct Fetch {
    held: Expr,
    rd: Option<Expr>,
    wp: Option<Expr>,
    credits: Expr,
    /// Requests issued, not yet answered.
    pub inflight: Expr,
    drop: Expr,
    fa: Expr,
    fbeats: Expr,
    pool: Vec<Expr>,
    ireq_fire: Expr,
    irsp: Expr,
    dropping: Expr,
    pool_we: Expr,
    inflight_next: Expr,
    head: Expr,
    next_beat: Expr,
    /// The window: dword i of the buffer from the decoder's position.
    pub lanes: Vec<Expr>,
    /// Dwords in the window, `A` (0..F).
    pub a: Expr,
}

impl Fetch {
    /// The registers, the request port `imem_req` (while `run` is fetching)
    /// and the answers on `imem_rsp`; the window from `run`'s position.
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, run: &RunState, imem_req: &Stream, imem_rsp: &Stream) -> Fetch {
        let RunState { fetching, pos, left, .. } = run;
        let f = p.fetch_dwords();
        let fb = p.fetch_bits;
        let lf = clog2(f as u64);
        let pw = clog2(p.pool_beats as u64);
        let tw = TW;
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
        let pool_avail = held
            .eq_lit(0)
            .mux(&lit_t(0), &held.eq_lit(1).mux(&lit_t(f).sub(&pos.zext(tw)), &lit_t(f)));
        let left_small = left.slice(31, tw).eq_lit(0);
        let a = b.let_("avail", &left_small.and(&left.slice(tw - 1, 0).lt(&pool_avail)).mux(&left.slice(tw - 1, 0), &pool_avail));
        Fetch { held, rd, wp, credits, inflight, drop, fa, fbeats, pool, ireq_fire, irsp, dropping, pool_we, inflight_next, head, next_beat, lanes, a }
    }

    /// The registers' next values: a jump (`jmp`) empties the pool and
    /// restarts the fetcher; else beats arrive and the window's head beat
    /// is popped (`pop`).
    pub fn update(&self, b: &mut ModuleBuilder, p: &CmdprocParams, imem_rsp: &Stream, jmp: &Jump, pop: &Expr) {
        let Fetch { held, rd, wp, credits, drop, fa, fbeats, pool, ireq_fire, irsp, dropping, pool_we, inflight_next, head, next_beat, .. } = self;
        let Jump { jump, j_fa, j_beats, .. } = jmp;
        let f = p.fetch_dwords();
        let fb = p.fetch_bits;
        let pw = clog2(p.pool_beats as u64);
        let iw2 = pw + 2;
        let one_p = |w: u32| Expr::lit(w, 1);
        let hw_ = pw + 1;
        b.next(
            held,
            &jump.mux(&Expr::zero(hw_), &held.add(&pool_we.zext(hw_)).sub(&pop.zext(hw_))),
            None,
        );
        if let (Some(rd), Some(wp)) = (&rd, &wp) {
            b.next(rd, &jump.mux(&Expr::zero(pw), &rd.add(&one_p(pw))), Some(&jump.or(pop)));
            b.next(wp, &jump.mux(&Expr::zero(pw), &wp.add(&one_p(pw))), Some(&jump.or(pool_we)));
            for (k, q) in pool.iter().enumerate() {
                b.next(q, &imem_rsp.field("data"), Some(&pool_we.and(&wp.eq_lit(k as u64))));
            }
        }
        // The beats in order: head, next, the third (from the array), then the
        // beat arriving now (at position `held`).
        let third = rd.as_ref().map_or(Expr::zero(fb), |rd| select(&rd.add(&Expr::lit(pw, 2)), pool));
        let stored = [head.clone(), next_beat.clone(), third];
        let seq = |i: usize| held.gt(&Expr::lit(hw_, i as u64)).mux(&stored[i], &imem_rsp.field("data"));
        b.next(head, &pop.mux(&seq(1), &seq(0)), None);
        b.next(next_beat, &pop.mux(&seq(2), &seq(1)), None);
        b.next(
            credits,
            &jump.mux(&Expr::lit(hw_, p.pool_beats as u64), &credits.sub(&ireq_fire.zext(hw_)).add(&pop.zext(hw_))),
            None,
        );
        b.next(drop, &jump.mux(inflight_next, &drop.sub(&irsp.and(dropping).zext(iw2))), None);
        b.next(fa, &jump.mux(j_fa, &fa.add(&Expr::lit(32, 4 * f as u64))), Some(&jump.or(ireq_fire)));
        b.next(fbeats, &jump.mux(j_beats, &fbeats.sub(&Expr::lit(32, 1))), Some(&jump.or(ireq_fire)));
    }
}
