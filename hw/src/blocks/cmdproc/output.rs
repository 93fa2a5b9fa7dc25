//! What the decoder hands on: the serialized output queue (the pipeline
//! port), the trace record the cycle after each commit, the id and count
//! of commands, and `WRITE_DATA`'s dwords on the write port.

use super::decoder::{Decoder, Fences, RunState};
use super::fetch::Fetch;
use super::first::First;
use super::regs::Regs;
use super::lit_t;
use crate::rtl::pipe::shift_queue;
use crate::rtl::{clog2, Expr, ModuleBuilder, Stream};
use gpurtl_params::cmdproc::{CmdprocParams, Opcode};

/// The command port and the trace ports, with the record's fields (name,
/// width) in port order.
pub(super) struct Ports {
    pub cmd: Stream,
    pub trace_valid: Expr,
    pub trace: Vec<Expr>,
    pub fields: Vec<(&'static str, u32)>,
    /// `kerr_i` (compute mode).
    pub kerr_i: Option<Expr>,
}

/// The queue's full and empty flags, whether it holds a state reader, and
/// in compute mode the `kernel` error of a dispatch leaving with `kerr_i`
/// (its header address beside it), which the decoder reads before the
/// queue is built.
pub(super) fn flags(b: &mut ModuleBuilder, compute: bool) -> (Expr, Expr, Expr, Option<(Expr, Expr)>) {
    let qfull = b.wire("out_full", 1);
    let qempty = b.wire("out_empty", 1);
    let readers = b.wire("out_has_reader", 1);
    let kerr = compute.then(|| (b.wire("kernel_error", 1), b.wire("kernel_error_addr", 32)));
    (qfull, qempty, readers, kerr)
}

/// The output queue from the first packet's commit, the trace record, and
/// the counters a commit moves.
pub(super) fn queue(b: &mut ModuleBuilder, p: &CmdprocParams, regs: &Regs, run: &RunState, dec: &Decoder, fences: &Fences, ports: &Ports) {
    let Ports { cmd, trace_valid, trace: trace_ports, fields, kerr_i } = ports;
    let First { f_hdr, f_it, f_reader, f_n, f_addr, mp, commit, .. } = &dec.first;
    let Regs { start, cmd_count, d_state_ptr, .. } = regs;
    let (next_id, isz32) = (&run.next_id, &run.isz32);
    let (qfull, qempty) = (&fences.qfull, &fences.qempty);
    let iw = p.id_bits;
    let cmd_fire = b.let_("cmd_fire", &cmd.valid.clone().and(&cmd.ready));
    let mut rec_vals = vec![next_id.clone(), f_addr.clone(), f_hdr.clone(), f_n.clone()];
    rec_vals.extend(mp.iter().cloned());
    let oq = shift_queue(b, "outq", p.out_depth, fields, std::slice::from_ref(&cmd_fire), &[(commit.clone(), rec_vals.clone())]);
    b.assign(qfull, &oq.has[p.out_depth as usize - 1]);
    b.assign(qempty, &oq.has[0].not());
    // State readers in the queue (the state hold): one in at a reader's
    // commit, one out when a reader at the head leaves.
    let rw_ = clog2(p.out_depth as u64 + 1);
    let readers = b.reg("out_readers_q", rw_, 0);
    let head_op = oq.entries[0][2].slice(15, 8);
    let head_reader = Opcode::ALL.iter().filter(|o| o.reads_state()).fold(Expr::bit(false), |acc, o| acc.or(&head_op.eq_lit(o.code() as u64)));
    let r_in = commit.and(f_reader);
    let r_out = b.let_("out_reader_leaves", &cmd_fire.and(&head_reader));
    let one = Expr::lit(rw_, 1);
    b.next(&readers, &r_in.mux(&r_out.mux(&readers, &readers.add(&one)), &readers.sub(&one)), Some(&r_in.xor(&r_out)));
    b.assign(&fences.readers, &readers.ne(&Expr::zero(rw_)));
    // Compute mode: a dispatch leaving with kerr_i raises `kernel` (the
    // only state reader that commits in compute mode is a dispatch).
    if let (Some(k), Some((kerr, kerr_addr))) = (kerr_i, &fences.kerr) {
        b.assign(kerr, &r_out.and(k));
        b.assign(kerr_addr, &oq.entries[0][1]);
    }
    b.assign(&cmd.valid, &oq.has[0]);
    for (k, (n, _)) in fields.iter().enumerate() {
        b.assign(&cmd.field(n), &oq.entries[0][k]);
    }
    b.assign(&cmd.field("state_ptr"), d_state_ptr);
    // Trace: the record, the cycle after the commit.
    let tv = b.reg("trace_valid_q", 1, 0);
    b.next(&tv, commit, None);
    b.assign(trace_valid, &tv);
    for (k, port) in trace_ports.iter().enumerate() {
        let q = b.pipe(&format!("trace_{}_q", fields[k].0), &rec_vals[k], commit);
        b.assign(port, &q);
    }
    b.next(next_id, &start.mux(&Expr::zero(iw), &next_id.add(&Expr::lit(iw, 1))), Some(&start.or(commit)));
    b.next(cmd_count, &start.mux(&Expr::zero(32), &cmd_count.add(&Expr::lit(32, 1))), Some(&start.or(commit)));
    b.next(isz32, &start.mux(&Expr::bit(true), &mp[0].bit_at(0)), Some(&start.or(&commit.and(f_it))));
}

/// The write port: a `WRITE_DATA`'s data dwords, from its address (p1) on.
pub(super) fn write_port(b: &mut ModuleBuilder, run: &RunState, fetch: &Fetch, dec: &Decoder, wr: &Stream) {
    let RunState { r, done, cur_p, .. } = run;
    let First { wd_cont, wr_valid, t_first, .. } = &dec.first;
    let (lanes, take_mode) = (&fetch.lanes, &dec.mode.take_mode);
    let wa = b.reg_noreset("write_addr_q", 32);
    b.assign(&wr.valid, wr_valid);
    b.assign(&wr.field("addr"), &wa);
    b.assign(&wr.field("data"), &lanes[0]);
    b.assign(&wr.field("last"), &r.eq_lit(1));
    let wd_p2_take = take_mode.and(wd_cont).and(&done.eq_lit(3)).and(&t_first.ne(&lit_t(0)));
    let wr_fire = wr_valid.and(&wr.ready);
    b.next(&wa, &wd_p2_take.mux(&cur_p[1], &wa.add(&Expr::lit(32, 4))), Some(&wd_p2_take.or(&wr_fire)));
}
