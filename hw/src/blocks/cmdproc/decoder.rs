//! The decoder: its registers (the run's state, the current packet, the
//! position in the buffer, the return stack), the mode of a cycle, the
//! header checks both packets use, and the registers' updates once the
//! cycle's packets (`first.rs`, `second.rs`) and jumps are known.

use super::first::First;
use super::jump::Jump;
use super::regs::Regs;
use super::second::Second;
use super::fetch::Fetch;
use super::{lit_t, RW, TW};
use crate::rtl::{clog2, Expr, ModuleBuilder};
use gpurtl_params::cmdproc::{sh, Cause, CmdprocParams, Opcode};

/// What the decoder reads off a header dword.
pub(super) struct Header {
    /// Type 3 (a command) and type 2 (a filler).
    pub t3: Expr,
    /// Opcode matches, in `Opcode::ALL` order.
    pub op: Vec<Expr>,
    /// Payload dwords `n` (14 bits).
    pub n: Expr,
    /// Dwords of the packet, `1 + n` for a command, 1 for a filler (15 bits).
    pub len: Expr,
    /// The header's error cause (0: none), 4 bits.
    pub cause: Expr,
}

pub(super) fn op_index(o: Opcode) -> usize {
    Opcode::ALL.iter().position(|x| *x == o).unwrap_or(0)
}

/// The run's registers.
pub(super) struct RunState {
    pub stopped: Expr,
    pub finished: Expr,
    pub fetching: Expr,
    pub r: Expr,
    pub done: Expr,
    pub cur_hdr: Expr,
    pub cur_addr: Expr,
    pub cur_n: Expr,
    pub cur_p: Vec<Expr>,
    pub cur_sc_ok: Expr,
    pub left: Expr,
    pub daddr: Expr,
    pub pos: Expr,
    pub next_id: Expr,
    pub isz32: Expr,
    pub sp: Expr,
    pub stack: Vec<(Expr, Expr)>,
}

/// What the decoder waits for outside itself: room in the output queue
/// (`qfull`), for a `WRITE_DATA` the queue and the primitive unit empty,
/// for a draw a free job in the primitive unit, the write port, and for a
/// `SET_CONTEXT_REG` no state reader in the queue (the state hold).
pub(super) struct Fences {
    pub qfull: Expr,
    pub readers: Expr,
    /// Compute mode: a dispatch leaves with `kerr_i`, the error `kernel`
    /// at its header address.
    pub kerr: Option<(Expr, Expr)>,
    pub qempty: Expr,
    pub jobs_none: Expr,
    pub jobs_full: Expr,
    pub wr_ready: Expr,
}

/// The mode of the cycle: decoding at all, in a packet, at a buffer's end,
/// taking dwords.
pub(super) struct Mode {
    pub is_cont: Expr,
    pub buf_end: Expr,
    pub take_mode: Expr,
    /// The return stack is full (an `INDIRECT_BUFFER` would nest too deep).
    pub sp_full: Expr,
}

/// What the decoder does in a cycle.
pub(super) struct Decoder {
    pub mode: Mode,
    pub first: First,
    pub second: Second,
}

/// Header decode of `h` (`name`: the wires' prefix), `left_at` dwords left
/// in the buffer from it.
pub(super) fn decode(b: &mut ModuleBuilder, p: &CmdprocParams, name: &str, h: &Expr, left_at: &Expr, sp_full: &Expr) -> Header {
    let rw = RW;
    let ty = h.slice(31, 30);
    let t3 = b.let_(&format!("{name}_t3"), &ty.eq_lit(3));
    let t01 = ty.bit_at(1).not();
    let opc = h.slice(15, 8);
    // Opcodes of compute mode are unknown (`opcode`) without it.
    let op: Vec<Expr> = Opcode::ALL
        .iter()
        .map(|o| if o.known(p) { b.let_(&format!("{name}_is_{}", o.name().to_lowercase()), &t3.and(&opc.eq_lit(o.code() as u64))) } else { Expr::bit(false) })
        .collect();
    let known = op.iter().skip(1).fold(op[0].clone(), |acc, x| acc.or(x));
    let n = b.let_(&format!("{name}_n"), &h.slice(29, 16).add(&Expr::lit(14, 1)));
    let count_ok: Vec<Expr> = Opcode::ALL
        .iter()
        .map(|o| match o {
            Opcode::Nop => Expr::bit(true),
            Opcode::SetContextReg | Opcode::SetShReg => n.gt(&Expr::lit(14, 1)),
            Opcode::IndexType => n.eq_lit(1),
            Opcode::DrawIndexAuto => n.eq_lit(2),
            Opcode::DrawIndexOffset2 | Opcode::DispatchDirect => n.eq_lit(4),
            Opcode::WriteData => n.gt(&Expr::lit(14, 3)),
            Opcode::IndirectBuffer => n.eq_lit(3),
            Opcode::ReleaseMem => n.eq_lit(6),
        })
        .collect();
    let bad_count = op.iter().zip(&count_ok).fold(Expr::bit(false), |acc, (o, ok)| acc.or(&o.and(&ok.not())));
    let len = b.let_(&format!("{name}_len"), &t3.mux(&n.zext(rw).add(&Expr::lit(rw, 1)), &Expr::lit(rw, 1)));
    let overrun = left_at.slice(31, rw).ne(&Expr::zero(32 - rw)).not().and(&left_at.slice(rw - 1, 0).lt(&len));
    let nest = op[op_index(Opcode::IndirectBuffer)].and(sp_full);
    let c = |x: Cause| Expr::lit(4, x.code() as u64);
    let cause = t01.mux(
        &c(Cause::Type),
        &t3.and(&known.not()).mux(
            &c(Cause::Opcode),
            &bad_count.mux(&c(Cause::Count), &overrun.mux(&c(Cause::Overrun), &nest.mux(&c(Cause::Nesting), &Expr::zero(4)))),
        ),
    );
    let cause = b.let_(&format!("{name}_cause"), &cause);
    Header { t3, op, n, len, cause }
}

/// `SET_CONTEXT_REG`: p0 + n - 1 <= state_regs (`sr`) fails.
pub(super) fn range_bad(p0: &Expr, n: &Expr, sr: u32) -> Expr {
    p0.zext(34).add(&n.zext(34)).gt(&Expr::lit(34, sr as u64 + 1))
}

/// `SET_SH_REG`: the offsets p0 .. p0 + n - 2 are not inside one run of the
/// compute registers (n >= 2 once the count check has passed).
pub(super) fn sh_range_bad(p0: &Expr, n: &Expr) -> Expr {
    let last = p0.zext(34).add(&n.zext(34)).sub(&Expr::lit(34, 2));
    let inside = sh::RUNS.iter().fold(Expr::bit(false), |acc, &(lo, _, cnt)| {
        acc.or(&p0.ge(&Expr::lit(32, lo as u64)).and(&last.le(&Expr::lit(34, (lo as u64) + cnt as u64 - 1))))
    });
    inside.not()
}

/// A state writer's range: `SET_CONTEXT_REG`'s (`scr`) or else
/// `SET_SH_REG`'s (compute mode only).
pub(super) fn writer_range_bad(p: &CmdprocParams, scr: &Expr, p0: &Expr, n: &Expr) -> Expr {
    let ctx = range_bad(p0, n, p.state_regs);
    if p.compute {
        scr.mux(&ctx, &sh_range_bad(p0, n))
    } else {
        ctx
    }
}

impl RunState {
    pub fn declare(b: &mut ModuleBuilder, p: &CmdprocParams) -> RunState {
        let f = p.fetch_dwords();
        let lf = clog2(f as u64);
        let iw = p.id_bits;
        let depth = p.nesting;
        let rw = RW;
        let posw = lf.max(1);
        let stopped = b.reg("stopped_q", 1, 0);
        let finished = b.reg("finished_q", 1, 0);
        let fetching = b.reg("fetching_q", 1, 0);
        let r = b.reg("pkt_left_q", rw, 0);
        let done = b.reg_noreset("pkt_done_q", rw);
        let cur_hdr = b.reg_noreset("pkt_header_q", 32);
        let cur_addr = b.reg_noreset("pkt_addr_q", 32);
        let cur_n = b.reg_noreset("pkt_n_q", 14);
        let cur_p: Vec<Expr> = (0..super::payload_dwords(p)).map(|k| b.reg_noreset(&format!("pkt_p{k}_q"), 32)).collect();
        let cur_sc_ok = b.reg_noreset("pkt_range_ok_q", 1);
        let left = b.reg("left_q", 32, 0);
        let daddr = b.reg_noreset("daddr_q", 32);
        let pos = b.reg("pos_q", posw, 0);
        let next_id = b.reg("next_id_q", iw, 0);
        let isz32 = b.reg("index32_q", 1, 1);
        let sp = b.reg("sp_q", 2, 0);
        let stack: Vec<(Expr, Expr)> =
            (0..depth).map(|l| (b.reg_noreset(&format!("ret{l}_addr_q"), 32), b.reg_noreset(&format!("ret{l}_left_q"), 32))).collect();
        RunState { stopped, finished, fetching, r, done, cur_hdr, cur_addr, cur_n, cur_p, cur_sc_ok, left, daddr, pos, next_id, isz32, sp, stack }
    }

    /// The position in the buffer: moved on by what the cycle takes, or set
    /// by a jump (`jmp`). Returns whether the window's head beat is popped.
    pub fn advance(&self, b: &mut ModuleBuilder, p: &CmdprocParams, dec: &Decoder, jmp: &Jump) -> Expr {
        let RunState { left, daddr, pos, .. } = self;
        let Jump { t_total, jump, j_pos, j_size, j_addr, .. } = jmp;
        let take_mode = &dec.mode.take_mode;
        let f = p.fetch_dwords();
        let lf = clog2(f as u64);
        let tw = TW;
        let posw = lf.max(1);
        let pos_sum = pos.zext(tw).add(t_total);
        let pop = b.let_("pool_pop", &take_mode.and(&pos_sum.ge(&lit_t(f))));
        let pos_adv = if lf == 0 { Expr::zero(posw) } else { pos_sum.slice(lf - 1, 0) };
        let advance = take_mode.clone();
        b.next(pos, &jump.mux(j_pos, &pos_adv), Some(&jump.or(&advance)));
        b.next(left, &jump.mux(j_size, &left.sub(&t_total.zext(32))), Some(&jump.or(&advance)));
        b.next(daddr, &jump.mux(j_addr, &daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), t_total.clone(), Expr::zero(2)]))), Some(&jump.or(&advance)));
        pop
    }

    /// The current packet's registers: the first packet going on, or the
    /// second one that starts (none after a doorbell).
    pub fn update_packet(&self, b: &mut ModuleBuilder, regs: &Regs, dec: &Decoder) {
        let RunState { r, done, cur_hdr, cur_addr, cur_n, cur_p, cur_sc_ok, .. } = self;
        let First { f_hdr, f_n, f_rem, f_done, f_addr, mp, f_sc_ok, t_first, f_fin_any, .. } = &dec.first;
        let Second { sec_hdr, h1, t2, sec_starts, sp_k, s_scr_bad, sec_addr, .. } = &dec.second;
        let (start, take_mode) = (&regs.start, &dec.mode.take_mode);
        let rw = RW;
        let upd = take_mode.and(&t_first.ne(&lit_t(0)));
        let rem_first = f_rem.sub(&t_first.zext(rw));
        let r_next = f_fin_any.mux(&sec_starts.mux(&h1.len.sub(&t2.zext(rw)), &Expr::zero(rw)), &rem_first);
        b.next(r, &start.mux(&Expr::zero(rw), &r_next), Some(&start.or(&upd)));
        b.next(done, &f_fin_any.mux(&t2.zext(rw), &f_done.add(&t_first.zext(rw))), Some(&upd));
        b.next(cur_hdr, &f_fin_any.mux(sec_hdr, f_hdr), Some(&upd));
        b.next(cur_addr, &f_fin_any.mux(sec_addr, f_addr), Some(&upd));
        b.next(cur_n, &f_fin_any.mux(&h1.n, f_n), Some(&upd));
        for k in 0..cur_p.len() {
            b.next(&cur_p[k], &f_fin_any.mux(&sp_k[k], &mp[k]), Some(&upd));
        }
        b.next(cur_sc_ok, &f_fin_any.mux(&s_scr_bad.not(), f_sc_ok), Some(&upd));
    }

    /// An error stops the decoder; the buffer's end with an empty stack
    /// finishes the run; a doorbell clears both. Returns the error raised.
    pub fn stop(&self, b: &mut ModuleBuilder, regs: &Regs, dec: &Decoder, jmp: &Jump, fences: &Fences) -> Expr {
        let RunState { stopped, finished, fetching, sp, .. } = self;
        let Mode { take_mode, buf_end, .. } = &dec.mode;
        let dec_err = &dec.second.dec_err;
        let start = &regs.start;
        let Jump { ib_jump, ret, .. } = jmp;
        let decode_raise = take_mode.and(dec_err);
        let raise = b.let_("raise_error", &fences.kerr.as_ref().map_or(decode_raise.clone(), |(k, _)| decode_raise.or(k)));
        b.next(stopped, &start.mux(&Expr::bit(false), &stopped.or(&raise)), None);
        b.next(finished, &start.mux(&Expr::bit(false), &finished.or(&buf_end.and(&sp.eq_lit(0)))), None);
        b.next(fetching, &start.or(ib_jump).or(ret).or(&fetching.and(&raise.not())), None);
        raise
    }
}

impl Decoder {
    /// The cycle's mode and packets, from the run's registers, the
    /// window (`fetch`) and the `fences`.
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, fetch: &Fetch, fences: &Fences, sh_q: &[Expr]) -> Decoder {
        let mode = Mode::build(b, p, regs, run, fetch, fences);
        let first = First::build(b, p, regs, run, fetch, &mode, fences, sh_q);
        let second = Second::build(b, p, run, fetch, &mode, &first, &fences.readers);
        Decoder { mode, first, second }
    }
}

impl Mode {
    fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, fetch: &Fetch, fences: &Fences) -> Mode {
        let RunState { stopped, finished, r, left, sp, .. } = run;
        let (busy, qfull, a) = (&regs.busy, &fences.qfull, &fetch.a);
        let rw = RW;
        // Compute mode's dispatch barrier: nothing while the output queue
        // holds a dispatch (the only state reader that commits there).
        let mut go = busy.and(&stopped.not()).and(&finished.not()).and(&qfull.not());
        if p.compute {
            go = go.and(&fences.readers.not());
        }
        let active = b.let_("decoding", &go);
        let is_cont = b.let_("in_packet", &r.ne(&Expr::zero(rw)));
        let buf_end = b.let_("buffer_end", &active.and(&is_cont.not()).and(&left.eq_lit(0)));
        let take_mode = b.let_("take_mode", &active.and(&is_cont.or(&left.ne(&Expr::zero(32)).and(&a.ne(&lit_t(0))))));
        let sp_full = sp.eq_lit(p.nesting as u64);
        Mode { is_cont, buf_end, take_mode, sp_full }
    }
}
