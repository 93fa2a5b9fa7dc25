//! Stream mode of the compress/expand unit (docs/compress.md "Stream mode"):
//! the vector unit as an instance, and around it
//!
//! - an input queue (2 entries) in front of the vector unit, where an expand
//!   stream's operation waits for its dense source beats, and an issue
//!   register between its head and the vector unit;
//! - the dense input buffer (3 beats) and its byte position: an expand
//!   stream's source is the buffer's first two beats shifted down by the
//!   position (a log-stage byte shifter), in place of `in_src_i`;
//! - a tag queue beside the vector unit (stream, last, element size of each
//!   operation inside it), so the output knows its compress-stream results;
//! - the packer: an accumulation buffer of up to `N - 1` waiting bytes; a
//!   compress-stream result's packed bytes are shifted up by the number
//!   waiting (a log-stage byte shifter) and ORed in, and a full vector, or at
//!   the end of the stream what is left, goes to the dense output queue
//!   (3 beats; two can go in at one edge when a stream ends past a full beat).
//!
//! Everything is in bytes: `cb` = selected elements << esize.

use super::{bytes_to_elems, elems_to_bytes};
use crate::rtl::pipe::shift_queue;
use crate::rtl::{bits_for, clog2, popcount, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::compress::CompressParams;

/// Name of the stream unit's module.
pub const TOP: &str = "gpurtl_compress_stream";

pub fn build(p: &CompressParams) -> Result<Design, RtlError> {
    let w = p.width;
    let n = p.lanes();
    let s = clog2(n as u64);
    let cw = p.count_bits();
    let vector = super::build_vector(&CompressParams { stream: false, ..p.clone() })?;
    let mut b = ModuleBuilder::new(TOP);
    b.doc("Packed compress/expand unit with stream mode (gpurtl block `compress`, stream = true).");
    b.doc("Compress streams are packed into full dense vectors on dense_out; expand streams take their");
    b.doc(format!("sources from dense vectors on dense_in. {w}-bit vectors; latency {} from in to out.", p.latency + 2));
    b.doc("Spec and timing: docs/compress.md, \"Stream mode\". A compress-stream result waits on out while");
    b.doc("dense_out holds 2 or more beats: take each output as soon as it is offered.");

    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    // Stream operations: in_src_i and in_mask_gen_i do not matter for an
    // expand stream (its source is the dense input, its mask the given one).
    let inp = super::in_stream(
        &mut b,
        p,
        &[
            ("stream", 1, "1 = a stream operation (an expand stream ignores in_src_i and in_mask_gen_i)"),
            ("last", 1, "1 = the stream ends with this operation (ignored when in_stream_i = 0)"),
        ],
    );
    let dense_in = b.stream_in(
        "dense_in",
        "a dense beat of the expand stream is offered",
        "the beat is taken on this edge if dense_in_valid_i",
        &[("data", w, "dense elements, element 0 in the low bits")],
    );
    let out = super::out_stream(&mut b, p);
    let dense_out = b.stream_out(
        "dense_out",
        "a dense beat of the compress stream is offered",
        "the beat is taken on this edge if dense_out_valid_o",
        &[
            ("data", w, "packed elements, zero at and above count"),
            ("count", cw, "elements in the beat"),
            ("esize", 2, "element size of the beat, as in_esize_i"),
            ("last", 1, "the last beat of its stream"),
        ],
    );
    let vu = b.instance_of(&vector, "u_vector", &[("clk_i", clk), ("rst_i", rst)]);
    let (vin, vout) = (vu.stream("in"), vu.stream("out"));

    // ---- input queue ----
    // An expand stream's byte count goes in with the operation: the given
    // mask's ones below the element count, times the element bytes.
    let [op, esize, mask_gen, mask, zeroing, src, old, stream, last] =
        inp.get(["op", "esize", "mask_gen", "mask", "zeroing", "src", "old", "stream", "last"]);
    let in_ones: Vec<Expr> = (0..n)
        .map(|e| {
            // Element e exists up to the largest size with e < n >> size.
            let sizes = (0..4u64).filter(|&sz| (e as u64) < (n as u64) >> sz).max().expect("element 0 always exists");
            if sizes == 3 { mask.bit_at(e) } else { mask.bit_at(e).and(&esize.le(&Expr::lit(2, sizes))) }
        })
        .collect();
    let ones = b.let_("in_ones", &popcount(&in_ones, cw));
    let in_bytes = b.let_("in_bytes", &elems_to_bytes(&esize, &ones));
    let iq_fields = [
        ("op", 1),
        ("esize", 2),
        ("mask_gen", 1),
        ("mask", n),
        ("zeroing", 1),
        ("src", w),
        ("old", w),
        ("stream", 1),
        ("last", 1),
        ("bytes", cw),
    ];
    let iq_full = b.wire("iq_full", 1);
    let in_push = b.let_("in_fire", &inp.valid.and(&iq_full.not()));
    b.assign(&inp.ready, &iq_full.not());
    let issue = b.wire("issue", 1);
    let iq = shift_queue(
        &mut b,
        "iq",
        2,
        &iq_fields,
        std::slice::from_ref(&issue),
        &[(in_push, vec![op, esize, mask_gen, mask, zeroing, src, old, stream, last, in_bytes])],
    );
    b.assign(&iq_full, &iq.has[1]);
    let h = &iq.entries[0];
    let (h_op, h_esize, h_mask_gen, h_mask, h_zeroing, h_src, h_old, h_stream, h_last, h_bytes) =
        (&h[0], &h[1], &h[2], &h[3], &h[4], &h[5], &h[6], &h[7], &h[8], &h[9]);
    let h_xs = b.let_("head_expand_stream", &h_stream.and(h_op));

    // ---- dense input buffer and the issue ----
    let pos = b.reg("dense_pos_q", s, 0);
    let db_full = b.wire("db_full", 1);
    let db_push = b.let_("dense_in_fire", &dense_in.valid.and(&db_full.not()));
    b.assign(&dense_in.ready, &db_full.not());
    let pops = [b.wire("db_pop1", 1), b.wire("db_pop2", 1)];
    let db = shift_queue(&mut b, "db", 3, &[("data", w)], &pops, &[(db_push, vec![dense_in.field("data")])]);
    b.assign(&db_full, &db.has[2]);
    let reach = b.let_("dense_reach", &pos.zext(cw).add(h_bytes));
    let nlit = Expr::lit(cw, n as u64);
    let fits = reach.le(&nlit);
    let dense_ok = h_bytes.eq_lit(0).or(&db.has[0].and(&fits)).or(&db.has[1]);
    let can_go = b.let_("head_can_go", &iq.has[0].and(&h_xs.not().or(&dense_ok)));
    // The issue register: the operation as the vector unit takes it, so that
    // the byte shifter and the queues end at a register.
    let r_valid = b.reg("issue_valid_q", 1, 0);
    let r_free = b.let_("issue_free", &r_valid.not().or(&vin.ready));
    b.assign(&issue, &can_go.and(&r_free));
    b.next(&r_valid, &issue.or(&r_valid.and(&vin.ready.not())), None);
    b.assign(&vin.valid, &r_valid);
    // The source of an expand stream: the two head beats from the position on.
    let two = Expr::cat(&[db.entries[1][0].clone(), db.entries[0][0].clone()]);
    let window = shift_bytes_down(&mut b, "dense_window", &two, &pos, n);
    let issued = [
        ("op", h_op.clone()),
        ("esize", h_esize.clone()),
        ("mask_gen", h_mask_gen.and(&h_xs.not())),
        ("mask", h_mask.clone()),
        ("zeroing", h_zeroing.clone()),
        ("src", h_xs.mux(&window, h_src)),
        ("old", h_old.clone()),
    ];
    for (name, e) in &issued {
        let q = b.pipe(&format!("issue_{name}_q"), e, &issue);
        b.assign(&vin.field(name), &q);
    }
    // Beats used up: one when the position passes the beat's end, one more
    // when the stream ends inside the next.
    let xs_issue = b.let_("expand_stream_issue", &issue.and(&h_xs));
    let (past, rest) = past_a_beat(&mut b, "dense_rest", &reach, n);
    let drop_rest = h_last.and(&rest.ne(&Expr::zero(cw)));
    b.assign(&pops[0], &xs_issue.and(&past.or(&drop_rest)));
    b.assign(&pops[1], &xs_issue.and(&past).and(&drop_rest));
    b.next(&pos, &drop_rest.mux(&Expr::zero(s), &rest.slice(s - 1, 0)), Some(&xs_issue));
    b.assert_always("pos_in_a_beat", &pos.eq_lit(0).or(&db.has[0]), "a stream's position is inside a beat that is held");

    // ---- tags of the operations in the issue register and the vector unit ----
    let out_fire = b.wire("out_fire", 1);
    let tq = shift_queue(
        &mut b,
        "tag",
        p.latency + 2,
        &[("cs", 1), ("last", 1), ("esize", 2)],
        std::slice::from_ref(&out_fire),
        &[(issue.clone(), vec![h_stream.and(&h_op.not()), h_last.clone(), h_esize.clone()])],
    );
    let (t_cs, t_last, t_esize) = (&tq.entries[0][0], &tq.entries[0][1], &tq.entries[0][2]);
    // The tags are the operations in the issue register and the vector
    // unit. Its count of operations inside (taken, not yet given) is
    // counted here too, and what its credit queue guarantees at its ports
    // (`credit_bound` and `credit_out_counted` in `pipe.rs`, proven on the
    // vector unit) is assumed of that count: yosys sees no names inside an
    // instance, so the two counts cannot be equated directly.
    let inside_w = bits_for(p.latency as u64 + 2);
    let inside = b.formal_reg("vector_inside", inside_w);
    let one = Expr::lit(inside_w, 1);
    let vin_fire = r_valid.and(&vin.ready);
    let vout_fire = vout.valid.and(&vout.ready);
    b.formal_next_reset(&inside, &inside.add(&vin_fire.mux(&one, &Expr::zero(inside_w))).sub(&vout_fire.mux(&one, &Expr::zero(inside_w))), 0);
    let credits = Expr::lit(inside_w, p.latency as u64 + 1);
    b.assume_always(
        "vector_credits",
        &vin.ready.not().or(&inside.lt(&credits)).and(&vout.valid.not().or(&inside.ne(&Expr::zero(inside_w)))),
        "the vector unit takes an operation only while fewer than latency + 1 are inside, offers one only while one is inside",
    );
    let tw = bits_for(p.latency as u64 + 3);
    let tags = popcount(&tq.has, tw);
    b.assert_always(
        "tags_inside",
        &tags.eq(&r_valid.zext(tw).add(&inside.zext(tw))).and(&inside.le(&credits)),
        "a tag for each operation in the issue register and the vector unit, at most latency + 1 in the vector unit",
    );

    // ---- output fork: out, and the packer for compress-stream results ----
    let dq_has: Vec<Expr> = (0..2).map(|i| b.wire(&format!("dq_has{i}"), 1)).collect();
    let go = b.let_("out_go", &t_cs.not().or(&dq_has[1].not()));
    b.assign(&out.valid, &vout.valid.and(&go));
    b.assign(&vout.ready, &out.ready.and(&go));
    b.assign(&out_fire, &vout.valid.and(&out.ready).and(&go));
    let [dst, vmask, count] = vout.get(["dst", "mask", "count"]);
    b.assign(&out.field("dst"), &dst);
    b.assign(&out.field("mask"), &vmask);
    b.assign(&out.field("count"), &count);

    // The packer: `fill` bytes wait in `acc` (zero above them).
    let fill = b.reg("pack_fill_q", s, 0);
    let acc = b.reg("pack_acc_q", w, 0);
    let cs_fire = b.let_("pack_take", &out_fire.and(t_cs));
    let bytes = b.let_("pack_bytes", &elems_to_bytes(t_esize, &count));
    // The result moves up above the waiting bytes while the bytes it adds
    // are worked out (from `fill` up to `fill + bytes`), so the byte count
    // does not wait for the shifter or the other way round.
    let moved = shift_bytes_up(&mut b, "pack_moved", &dst, &fill, n);
    let total = b.let_("pack_total", &fill.zext(cw).add(&bytes));
    let adds: Vec<Expr> = (0..2 * n)
        .map(|m| {
            // Byte 2n - 1 is never written (fill + bytes < 2n); from byte
            // n - 1 on every byte is at or above the fill.
            let below_end = total.gt(&Expr::lit(cw, m as u64));
            let adds = if m + 1 == 2 * n {
                Expr::bit(false)
            } else if m + 1 >= n {
                below_end
            } else {
                fill.le(&Expr::lit(s, m as u64)).and(&below_end)
            };
            adds.repl(8)
        })
        .collect();
    let adds = b.let_("pack_adds", &Expr::cat_lanes(&adds));
    let both = b.let_("pack_window", &moved.and(&adds).or(&acc.zext(2 * w)));
    let (full, left) = past_a_beat(&mut b, "pack_left", &total, n);
    let left_any = left.ne(&Expr::zero(cw));
    let (lo, hi) = (both.slice(w - 1, 0), both.slice(2 * w - 1, w));
    // In elements, for the beat.
    let first_count = b.let_("pack_first_count", &bytes_to_elems(t_esize, &full.mux(&nlit, &total)));
    let rest_count = b.let_("pack_rest_count", &bytes_to_elems(t_esize, &left));
    let push0 = b.let_("dq_push0", &cs_fire.and(&full.or(t_last)));
    let push1 = b.let_("dq_push1", &cs_fire.and(&full).and(t_last).and(&left_any));
    let first_last = b.let_("pack_first_last", &t_last.and(&full.not().or(&left_any.not())));
    let dense_fire = b.let_("dense_out_fire", &dq_has[0].and(&dense_out.ready));
    let dq = shift_queue(
        &mut b,
        "dq",
        3,
        &[("data", w), ("count", cw), ("esize", 2), ("last", 1)],
        std::slice::from_ref(&dense_fire),
        &[
            (push0, vec![lo.clone(), first_count, t_esize.clone(), first_last]),
            (push1, vec![hi.clone(), rest_count, t_esize.clone(), Expr::bit(true)]),
        ],
    );
    for (wire, has) in dq_has.iter().zip(&dq.has) {
        b.assign(wire, has);
    }
    // What waits after this result: nothing at the end of the stream, else
    // the bytes past the full beat (or all of them, below a full beat).
    b.next(&fill, &t_last.mux(&Expr::zero(s), &left.slice(s - 1, 0)), Some(&cs_fire));
    b.next(&acc, &t_last.mux(&Expr::zero(w), &full.mux(&hi, &lo)), Some(&cs_fire));
    b.assign(&dense_out.valid, &dq.has[0]);
    let d = &dq.entries[0];
    b.assign(&dense_out.field("data"), &d[0]);
    b.assign(&dense_out.field("count"), &d[1]);
    b.assign(&dense_out.field("esize"), &d[2]);
    b.assign(&dense_out.field("last"), &d[3]);
    let top = b.finish()?;
    Ok(Design::of(top, p))
}

/// For a byte offset `x` below 2n: whether it reaches past the first beat
/// (`x >= n`), and the offset into the beat it ends in (`x - n` or `x`),
/// named `name`.
fn past_a_beat(b: &mut ModuleBuilder, name: &str, x: &Expr, n: u32) -> (Expr, Expr) {
    let nlit = Expr::lit(x.width(), n as u64);
    let past = x.ge(&nlit);
    let rest = b.let_(name, &past.mux(&x.sub(&nlit), x));
    (past, rest)
}

/// The `n` bytes of `x` (2n bytes) from byte `amount` (below n) on: log2(n)
/// stages of byte muxes, each as wide as the later stages still need.
fn shift_bytes_down(b: &mut ModuleBuilder, name: &str, x: &Expr, amount: &Expr, n: u32) -> Expr {
    let mut cur = x.clone();
    for k in 0..amount.width() {
        let d = 1u32 << k;
        // Later stages move by at most n - 2d more.
        let lanes: Vec<Expr> = (0..2 * n - 2 * d).map(|l| amount.bit_at(k).mux(&cur.part((l + d) * 8, 8), &cur.part(l * 8, 8))).collect();
        cur = b.let_(&format!("{name}_s{k}"), &Expr::cat_lanes(&lanes));
    }
    cur
}

/// `x` (n bytes) moved up by `amount` bytes (below n) into 2n bytes:
/// log2(n) stages of byte muxes, each as wide as the bytes can reach by then.
fn shift_bytes_up(b: &mut ModuleBuilder, name: &str, x: &Expr, amount: &Expr, n: u32) -> Expr {
    let mut cur = x.clone();
    let mut have = n;
    for k in 0..amount.width() {
        let d = 1u32 << k;
        let byte = |l: u32| if l < have { cur.part(l * 8, 8) } else { Expr::zero(8) };
        let lanes: Vec<Expr> = (0..have + d).map(|l| amount.bit_at(k).mux(&if l >= d { byte(l - d) } else { Expr::zero(8) }, &byte(l))).collect();
        cur = b.let_(&format!("{name}_s{k}"), &Expr::cat_lanes(&lanes));
        have += d;
    }
    // Byte 2n - 1 is never reached.
    cur.zext(2 * n * 8)
}
