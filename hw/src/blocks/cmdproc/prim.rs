//! The primitive unit: the draw jobs it holds, the read requests for their
//! index beats, its pool, and the indices leaving one a cycle on the
//! primitive port, tagged with the draw's id.

use super::decoder::{Decoder, RunState};
use super::first::First;
use super::regs::Regs;
use crate::rtl::{clog2, select, Expr, ModuleBuilder, Stream};
use gpurtl_params::cmdproc::CmdprocParams;

/// The count of jobs the unit holds, which the decoder reads.
pub(super) struct Jobs {
    jobs: Expr,
    /// No job (`WRITE_DATA`'s fence) and all `prim_jobs` held (a draw waits).
    pub none: Expr,
    pub full: Expr,
}

/// The primitive read port and the primitive port.
pub(super) struct Ports {
    pub req: Stream,
    pub rsp: Stream,
    pub out: Stream,
}

impl Jobs {
    pub fn declare(b: &mut ModuleBuilder, p: &CmdprocParams) -> Jobs {
        // Jobs the primitive unit holds (0..prim_jobs).
        let jw = clog2(p.prim_jobs as u64 + 1);
        let jobs = b.reg("prim_jobs_q", jw, 0);
        let jobs_none = b.let_("prim_idle", &jobs.eq_lit(0));
        let jobs_full = b.let_("prim_full", &jobs.eq_lit(p.prim_jobs as u64));
        Jobs { jobs, none: jobs_none, full: jobs_full }
    }

    /// The job queue, loaded by a draw with indices that commits, and its
    /// two sides.
    pub fn unit(&self, b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, dec: &Decoder, ports: &Ports) {
        let Jobs { jobs, none: jobs_none, .. } = self;
        let Ports { req: pmem_req, rsp: pmem_rsp, out: prim } = ports;
        let First { f_d2, mp, commit, .. } = &dec.first;
        let Regs { start, d_prim_base, .. } = regs;
        let (next_id, isz32) = (&run.next_id, &run.isz32);
        let f = p.fetch_dwords();
        let fb = p.fetch_bits;
        let lf = clog2(f as u64);
        let lbb = lf + 2;
        let ppw = clog2(p.prim_beats as u64);
        let iw = p.id_bits;
        let jw = clog2(p.prim_jobs as u64 + 1);
        // A job queue of prim_jobs entries; the request side and the index side
        // each walk it in commit order. Beats go through one pool in request
        // order, so the pool's head beat always belongs to the oldest job.
        let nj = p.prim_jobs;
        let jpw = clog2(nj as u64).max(1);
        let bw32 = 32 - lbb;
        let pposw = lf + 1;
        let job_fields: [(&str, u32); 6] = [("id", iw), ("beat", bw32), ("beats", 32), ("pos", pposw), ("count", 32), ("index16", 1)];
        let job_q: Vec<Vec<Expr>> = (0..nj)
            .map(|j| job_fields.iter().map(|(n, w)| b.reg_noreset(&format!("job{j}_{n}_q"), *w)).collect())
            .collect();
        let jpush = b.reg("job_push_q", jpw, 0);
        let jfetch = b.reg("job_fetch_q", jpw, 0);
        let jout = b.reg("job_out_q", jpw, 0);
        let unfetched = b.reg("jobs_unfetched_q", jw, 0);
        let field_of = |b: &mut ModuleBuilder, name: &str, ptr: &Expr, k: usize| -> Expr {
            let items: Vec<Expr> = job_q.iter().map(|e| e[k].clone()).collect();
            b.let_(name, &select(ptr, &items))
        };
        let bump = |q: &Expr| -> Expr { q.eq_lit(nj as u64 - 1).mux(&Expr::zero(jpw), &q.add(&Expr::lit(jpw, 1))) };
        let job_start = b.let_("prim_job_push", &commit.and(f_d2).and(&mp[2].ne(&Expr::zero(32))));
        let pb_addr = b.let_(
            "prim_first_byte",
            &d_prim_base.add(&isz32.mux(&Expr::cat(&[mp[1].slice(29, 0), Expr::zero(2)]), &Expr::cat(&[mp[1].slice(30, 0), Expr::zero(1)]))),
        );
        let pb_off = pb_addr.slice(lbb - 1, 0);
        let m_bytes = isz32.mux(&Expr::cat(&[mp[2].clone(), Expr::zero(2)]), &Expr::cat(&[Expr::zero(1), mp[2].clone(), Expr::zero(1)]));
        let pj_beats = m_bytes.zext(36).add(&pb_off.zext(36)).add(&Expr::lit(36, 4 * f as u64 - 1)).slice(31 + lbb, lbb);
        let pos32 = if lf == 0 { Expr::zero(pposw) } else { pb_off.slice(lbb - 1, 2).zext(pposw) };
        let pj_pos = isz32.mux(&pos32, &pb_off.slice(lbb - 1, 1));
        let new_job = [next_id.clone(), pb_addr.slice(31, lbb), pj_beats, pj_pos, mp[2].clone(), isz32.not()];
        for (j, e) in job_q.iter().enumerate() {
            let here = job_start.and(&jpush.eq_lit(j as u64));
            for (k, q) in e.iter().enumerate() {
                b.next(q, &new_job[k], Some(&here));
            }
        }
        b.next(&jpush, &start.mux(&Expr::zero(jpw), &bump(&jpush)), Some(&start.or(&job_start)));

        // Requests: the oldest job not all requested, its next beat.
        let phw = ppw + 1;
        let pcred = b.reg("prim_credits_q", phw, 0);
        let fdone = b.reg("job_beats_asked_q", 32, 0);
        let f_beat = field_of(b, "fetch_job_beat", &jfetch, 1);
        let f_beats = field_of(b, "fetch_job_beats", &jfetch, 2);
        let preq_valid = b.let_("pmem_req", &unfetched.ne(&Expr::zero(jw)).and(&pcred.ne(&Expr::zero(phw))));
        b.assign(&pmem_req.valid, &preq_valid);
        b.assign(&pmem_req.field("addr"), &Expr::cat(&[f_beat.add(&fdone.slice(bw32 - 1, 0)), Expr::zero(lbb)]));
        let preq_fire = b.let_("pmem_req_fire", &preq_valid.and(&pmem_req.ready));
        let fetched_all = b.let_("job_all_asked", &preq_fire.and(&fdone.add(&Expr::lit(32, 1)).eq(&f_beats)));
        b.next(&fdone, &fetched_all.or(start).mux(&Expr::zero(32), &fdone.add(&Expr::lit(32, 1))), Some(&preq_fire.or(start)));
        b.next(&jfetch, &start.mux(&Expr::zero(jpw), &bump(&jfetch)), Some(&start.or(&fetched_all)));
        b.next(
            &unfetched,
            &start.mux(&Expr::zero(jw), &unfetched.add(&job_start.zext(jw)).sub(&fetched_all.zext(jw))),
            None,
        );

        // The pool and the indices of the oldest job.
        b.assign(&pmem_rsp.ready, &Expr::bit(true));
        let prsp = pmem_rsp.valid.clone();
        let pheld = b.reg("prim_held_q", phw, 0);
        let prd = b.reg("prim_rd_ptr_q", ppw, 0);
        let pwp = b.reg("prim_wr_ptr_q", ppw, 0);
        let ppool: Vec<Expr> = (0..p.prim_beats).map(|k| b.reg_noreset(&format!("prim_pool{k}_q"), fb)).collect();
        let started = b.reg("job_started_q", 1, 0);
        let ppos_q = b.reg_noreset("prim_pos_q", pposw);
        let pleft_q = b.reg_noreset("prim_left_q", 32);
        let o_id = field_of(b, "out_job_id", &jout, 0);
        let o_pos = field_of(b, "out_job_pos", &jout, 3);
        let o_count = field_of(b, "out_job_count", &jout, 4);
        let o_16 = field_of(b, "out_job_index16", &jout, 5);
        let ppos = b.let_("prim_pos", &started.mux(&ppos_q, &o_pos));
        let pleft = b.let_("prim_left", &started.mux(&pleft_q, &o_count));
        let phead = b.let_("prim_head", &select(&prd, &ppool));
        let idx16: Vec<Expr> = (0..2 * f).map(|j| phead.part(16 * j, 16).zext(32)).collect();
        let idx32: Vec<Expr> = (0..f).map(|j| phead.part(32 * j, 32)).collect();
        let pindex = o_16.mux(&select(&ppos, &idx16), &select(&ppos, &idx32));
        let pvalid = b.let_("prim_offer", &jobs_none.not().and(&pheld.ne(&Expr::zero(phw))));
        b.assign(&prim.valid, &pvalid);
        b.assign(&prim.field("id"), &o_id);
        b.assign(&prim.field("index"), &pindex);
        let plast = b.let_("prim_last", &pleft.eq_lit(1));
        b.assign(&prim.field("last"), &plast);
        let pfire = b.let_("prim_fire", &pvalid.and(&prim.ready));
        let beat_end = o_16.mux(&ppos.eq_lit(2 * f as u64 - 1), &ppos.eq_lit(f as u64 - 1));
        let ppop = b.let_("prim_pop", &pfire.and(&beat_end.or(&plast)));
        let job_end = b.let_("prim_job_end", &pfire.and(&plast));
        b.next(&started, &start.mux(&Expr::bit(false), &plast.not()), Some(&start.or(&pfire)));
        b.next(&pleft_q, &pleft.sub(&Expr::lit(32, 1)), Some(&pfire));
        b.next(&ppos_q, &beat_end.mux(&Expr::zero(pposw), &ppos.add(&Expr::lit(pposw, 1))), Some(&pfire));
        b.next(&jout, &start.mux(&Expr::zero(jpw), &bump(&jout)), Some(&start.or(&job_end)));
        b.next(jobs, &start.mux(&Expr::zero(jw), &jobs.add(&job_start.zext(jw)).sub(&job_end.zext(jw))), None);
        b.next(&pcred, &start.mux(&Expr::lit(phw, p.prim_beats as u64), &pcred.sub(&preq_fire.zext(phw)).add(&ppop.zext(phw))), None);
        b.next(&pheld, &start.mux(&Expr::zero(phw), &pheld.add(&prsp.zext(phw)).sub(&ppop.zext(phw))), None);
        b.next(&prd, &start.mux(&Expr::zero(ppw), &prd.add(&Expr::lit(ppw, 1))), Some(&start.or(&ppop)));
        b.next(&pwp, &start.mux(&Expr::zero(ppw), &pwp.add(&Expr::lit(ppw, 1))), Some(&start.or(&prsp)));
        for (k, q) in ppool.iter().enumerate() {
            b.next(q, &pmem_rsp.field("data"), Some(&prsp.and(&pwp.eq_lit(k as u64))));
        }
    }
}
