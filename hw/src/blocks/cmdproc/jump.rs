//! Jumps: the doorbell to the command buffer, an `INDIRECT_BUFFER` to its
//! buffer (the return point pushed), a buffer's end back to the return
//! point; where each lands and how many beats it fetches.

use super::decoder::{Decoder, Mode, RunState};
use super::first::First;
use super::regs::Regs;
use super::TW;
use crate::rtl::{clog2, select, Expr, ModuleBuilder};
use gpurtl_params::cmdproc::CmdprocParams;

/// What the cycle takes in all, and the jump at its edge.
pub(super) struct Jump {
    pub t_total: Expr,
    /// An `INDIRECT_BUFFER` commits; a buffer ends with the stack not empty.
    pub ib_jump: Expr,
    pub ret: Expr,
    /// Any jump: where to (byte address, dwords, position in the beat), the
    /// beats to fetch, the first beat's address.
    pub jump: Expr,
    pub j_addr: Expr,
    pub j_size: Expr,
    pub j_pos: Expr,
    pub j_beats: Expr,
    pub j_fa: Expr,
}

impl Jump {
    /// The jump of the cycle and the return stack's update.
    pub fn build(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, dec: &Decoder) -> Jump {
        let RunState { left, daddr, sp, stack, .. } = run;
        let First { f_ib, f_rem, mp, t_first, commit, .. } = &dec.first;
        let Mode { buf_end, .. } = &dec.mode;
        let Regs { cmd_base, cmd_size, start, .. } = regs;
        let t2 = &dec.second.t2;
        let f = p.fetch_dwords();
        let lf = clog2(f as u64);
        let lbb = lf + 2;
        let depth = p.nesting;
        let tw = TW;
        let posw = lf.max(1);
        let t_total = b.let_("take", &t_first.add(t2));
        let ib_jump = b.let_("indirect_jump", &commit.and(f_ib));
        let ret = b.let_("buffer_return", &buf_end.and(&sp.ne(&Expr::zero(2))));
        let top_addr = select(&sp.sub(&Expr::lit(2, 1)), &stack.iter().map(|s| s.0.clone()).collect::<Vec<_>>());
        let top_left = select(&sp.sub(&Expr::lit(2, 1)), &stack.iter().map(|s| s.1.clone()).collect::<Vec<_>>());
        let (top_addr, top_left) = if depth == 0 { (Expr::zero(32), Expr::zero(32)) } else { (top_addr, top_left) };
        let j_addr = b.let_("jump_addr", &start.mux(cmd_base, &ib_jump.mux(&mp[0], &top_addr)));
        let j_size = b.let_(
            "jump_dwords",
            &start.mux(&Expr::cat(&[Expr::zero(2), cmd_size.slice(31, 2)]), &ib_jump.mux(&mp[2].slice(19, 0).zext(32), &top_left)),
        );
        let jump = b.let_("jump", &start.or(&ib_jump).or(&ret));
        let pos_of = |a: &Expr| if lf == 0 { Expr::zero(posw) } else { a.slice(lf + 1, 2) };
        let j_pos = b.let_("jump_pos", &pos_of(&j_addr));
        // The beats to fetch, worked out for each kind of jump side by side and
        // chosen last (the INDIRECT_BUFFER's decision comes late in the cycle).
        // An empty buffer fetches nothing (whatever its alignment).
        let beats_of = |size: &Expr, addr: &Expr| -> Expr {
            size.eq_lit(0).mux(&Expr::zero(32), &size.zext(34).add(&pos_of(addr).zext(34)).add(&Expr::lit(34, f as u64 - 1)).slice(31 + lf, lf).zext(32))
        };
        let beats_start = beats_of(&Expr::cat(&[Expr::zero(2), cmd_size.slice(31, 2)]), cmd_base);
        let beats_ib = beats_of(&mp[2].slice(19, 0).zext(32), &mp[0]);
        let beats_ret = beats_of(&top_left, &top_addr);
        let j_beats = b.let_("jump_beats", &start.mux(&beats_start, &ib_jump.mux(&beats_ib, &beats_ret)));
        let j_fa = Expr::cat(&[j_addr.slice(31, lbb), Expr::zero(lbb)]);
        if depth > 0 {
            for (l, (sa, sl)) in stack.iter().enumerate() {
                // An INDIRECT_BUFFER that commits takes all it has left (f_rem
                // <= A): the return point, from values known early.
                let push_here = ib_jump.and(&sp.eq_lit(l as u64));
                let t_ib = f_rem.slice(tw - 1, 0);
                b.next(sa, &daddr.add(&Expr::cat(&[Expr::zero(32 - tw - 2), t_ib.clone(), Expr::zero(2)])), Some(&push_here));
                b.next(sl, &left.sub(&t_ib.zext(32)), Some(&push_here));
            }
        }
        b.next(
            sp,
            &start.mux(&Expr::zero(2), &ib_jump.mux(&sp.add(&Expr::lit(2, 1)), &sp.sub(&Expr::lit(2, 1)))),
            Some(&start.or(&ib_jump).or(&ret)),
        );
        Jump { t_total, ib_jump, ret, j_addr, j_size, jump, j_pos, j_beats, j_fa }
    }
}
