//! The native-to-AXI4 bridge (docs/arbiter.md, "The AXI4 bridge"): tagged
//! native requests become INCR bursts, one AXI ID per tag, split where they
//! would cross a 4 KB boundary; `R` beats and `B` responses go back by ID.

use super::bus::{Axi, Bus, Native, Role};
use super::stream::Stream;
use super::expr::{bits_for, clog2, select, Expr};
use super::module::{Module, ModuleBuilder, RtlError};

/// A request of `len + 1` beats at `addr`, against the 4 KB boundary:
/// (split, first piece's len, second piece's len, second piece's address).
struct Pieces {
    split: Expr,
    first_len: Expr,
    second_len: Expr,
    second_addr: Expr,
}

/// `len` is `lb` bits (at least 1); beats are `db` bytes; a request never
/// spans more than 4096 bytes, so it crosses at most one boundary.
fn pieces(b: &mut ModuleBuilder, name: &str, addr: &Expr, len: &Expr, db: u32) -> Pieces {
    let lg = clog2(db as u64);
    // Beat index within the 4 KB page, and the page's beats.
    let bb = 12 - lg;
    let aw = addr.width();
    let lb = len.width();
    let word = addr.slice(11, lg);
    let w = bb.max(lb) + 1;
    let sum = b.let_(&format!("{name}_end"), &word.zext(w).add(&len.zext(w)));
    b.waive_unused(&sum, "the last beat's index in the page: its carry and its low bits (the second piece's length) are used");
    // Crosses when the last beat's index reaches the next page.
    let split = b.let_(&format!("{name}_split"), &sum.slice(w - 1, bb).any());
    let to_end = word.not().zext(lb.max(bb));
    let first_len = b.let_(&format!("{name}_first_len"), &split.mux(&to_end.slice(lb - 1, 0), len));
    let second_len = b.let_(&format!("{name}_second_len"), &sum.slice(lb - 1, 0));
    let second_addr = if aw > 12 {
        Expr::cat(&[addr.slice(aw - 1, 12).add(&Expr::lit(aw - 12, 1)), Expr::zero(12)])
    } else {
        Expr::zero(aw)
    };
    let second_addr = b.let_(&format!("{name}_second_addr"), &second_addr);
    Pieces { split, first_len, second_len, second_addr }
}

/// The bridge: native read slave `rd` (tagged, `rd_shape`) and native write
/// slave `wr` (tagged, `wr_shape`), either absent, to the AXI4 master
/// `m_axi_*` (`axi`). `outstanding`: most write bursts one tag has without
/// its response (the depth of each ID's split flags).
pub fn bridge(name: &str, rd: Option<Native>, wr: Option<(Native, u32)>, axi: Axi) -> Result<Module, RtlError> {
    let mut b = ModuleBuilder::new(name);
    b.doc("Native-to-AXI4 bridge: INCR bursts, one AXI ID per source tag, split at 4 KB boundaries (docs/arbiter.md).");
    let _clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let rdp = rd.map(|s| b.read_port("rd", Role::Slave, s));
    let wrp = wr.map(|(s, _)| b.write_port("wr", Role::Slave, s));
    let m = b.axi4("m_axi_", Role::Master, axi);
    let err_o = b.output("axi_err_o", 1, "sticky: an R beat or B response other than OKAY was taken");
    let db = axi.data_bits / 8;
    let size = Expr::lit(3, clog2(db as u64) as u64);
    // Fixed attributes of every burst, on the address channels in use.
    for (ch, used) in [("ar", rd.is_some()), ("aw", wr.is_some())] {
        if !used {
            continue;
        }
        let c = m.ch(ch);
        b.assign(&c.field("size"), &size);
        b.assign(&c.field("burst"), &Expr::lit(2, 1));
        for (f, w) in [("lock", 1), ("cache", 4), ("prot", 3), ("qos", 4)] {
            b.assign(&c.field(f), &Expr::zero(w));
        }
    }
    let mut errs = Vec::new();

    match (&rdp, rd) {
        (Some(p), Some(s)) => read_side(&mut b, p, &m, s, axi, &rst, &mut errs),
        _ => b.tie_off(&m, &["ar", "r"], "no read sources"),
    }

    match (&wrp, wr) {
        (Some(p), Some((s, outstanding))) => write_side(&mut b, p, &m, s, outstanding, axi, &rst, &mut errs),
        _ => b.tie_off(&m, &["aw", "w", "b"], "no write sources"),
    }

    let err = b.reg("err_q", 1, 0);
    let any_err = errs.iter().fold(Expr::bit(false), |a, e| a.or(e));
    b.next(&err, &err.or(&any_err), None);
    b.assign(&err_o, &err);
    b.finish()
}

/// The read half of the bridge (see [`bridge`]): the AR register and the
/// pending second piece of a split request; R beats back with their ID as
/// the tag.
fn read_side(b: &mut ModuleBuilder, p: &Bus, m: &Bus, s: Native, axi: Axi, rst: &Expr, errs: &mut Vec<Expr>) {
    let db = axi.data_bits / 8;
    let iw = axi.id_bits;
    let (ar, r) = (m.ch("ar").clone(), m.ch("r").clone());
    let ar_valid = b.reg("ar_valid_q", 1, 0);
    let p2_valid = b.reg("p2_valid_q", 1, 0);
    let ar_fire = b.let_("ar_fire", &ar_valid.and(&ar.ready));
    let ready = b.let_("rd_take_ready", &ar_valid.not().or(&ar.ready).and(&p2_valid.not()));
    b.assign(&p.req().ready, &ready);
    let take = b.let_("rd_take", &p.req().valid.and(&ready));
    let (addr, tag) = (p.req().field("addr"), p.req().field("tag"));
    let ar_addr = b.reg_noreset("ar_addr_q", axi.addr_bits);
    let ar_len = b.reg_noreset("ar_len_q", 8);
    let ar_id = b.pipe("ar_id_q", &tag.zext(iw), &take);
    if s.len_bits > 0 {
        let len = p.req().field("len");
        let pc = pieces(b, "rd", &addr, &len, db);
        let p2_addr = b.pipe("p2_addr_q", &pc.second_addr, &take);
        let p2_len = b.pipe("p2_len_q", &pc.second_len, &take);
        b.assert_always("p2_on_page", &p2_valid.not().or(&p2_addr.slice(11, 0).eq_lit(0)), "a pending second piece starts a 4 KB page");
        b.next(&ar_addr, &take.mux(&addr, &p2_addr), Some(&take.or(&ar_fire)));
        b.next(&ar_len, &take.mux(&pc.first_len.zext(8), &p2_len.zext(8)), Some(&take.or(&ar_fire)));
        b.next(&p2_valid, &take.mux(&pc.split, &Expr::bit(false)), Some(&take.or(&ar_fire)));
        b.next(&ar_valid, &take.or(&p2_valid), Some(&take.or(&ar_fire)));
    } else {
        b.next(&ar_addr, &addr, Some(&take));
        b.next(&ar_len, &Expr::zero(8), Some(&take));
        b.next(&p2_valid, &Expr::bit(false), None);
        b.next(&ar_valid, &take, Some(&take.or(&ar_fire)));
    }
    b.assign(&ar.valid, &ar_valid);
    b.assign(&ar.field("addr"), &ar_addr);
    b.assign(&ar.field("len"), &ar_len);
    b.assign(&ar.field("id"), &ar_id);
    b.assert_held("ar_held", &ar_valid, &ar.ready, &[ar_addr.clone(), ar_len.clone(), ar_id.clone()], "AR: valid and payload held until ready");
    b.assert_always("ar_no_4k", &ar_valid.not().or(&no_crossing(&ar_addr, &ar_len, db)), "AR: no burst crosses a 4 KB boundary");
    // R: every beat goes back with its ID as the tag.
    b.assign(&p.rsp().valid, &r.valid);
    b.assign(&p.rsp().field("data"), &r.field("data"));
    let tw = p.rsp().field("tag").width();
    b.assign(&p.rsp().field("tag"), &r.field("id").slice(tw - 1, 0));
    b.assign(&r.ready, &p.rsp().ready);
    if iw > tw {
        b.waive_unused(&r.field("id"), "IDs above the sources' tags are never issued");
    }
    b.waive_unused(&r.field("last"), "beats are counted by the sources, not by RLAST");
    errs.push(r.valid.and(&r.ready).and(&r.field("resp").any()));
    // The slave answers only IDs with beats outstanding.
    let ow = bits_for(255 * 2 + 1) + 8;
    let outs: Vec<Expr> = (0..1u64 << tw.min(4))
        .map(|j| {
            let o = b.formal_reg(&format!("rd_out{j}"), ow);
            let add = ar_fire.and(&ar_id.eq_lit(j)).mux(&ar_len.zext(ow).add(&Expr::lit(ow, 1)), &Expr::zero(ow));
            let sub = r.valid.and(&r.ready).and(&r.field("id").eq_lit(j)).zext(ow);
            b.formal_next(&o, &rst.mux(&Expr::zero(ow), &o.add(&add).sub(&sub)));
            o
        })
        .collect();
    let cur = select(&r.field("id").slice(tw.min(4) - 1, 0), &outs);
    b.assume_always("r_outstanding", &r.valid.not().or(&cur.eq_lit(0).not()), "the slave sends R beats only for an ID with beats outstanding");
}

/// The write half of the bridge (see [`bridge`]).
#[allow(clippy::too_many_arguments)]
fn write_side(b: &mut ModuleBuilder, p: &Bus, m: &Bus, s: Native, outstanding: u32, axi: Axi, rst: &Expr, errs: &mut Vec<Expr>) {
    let db = axi.data_bits / 8;
    let iw = axi.id_bits;
    let (aw, w, bch) = (m.ch("aw").clone(), m.ch("w").clone(), m.ch("b").clone());
    let tw = p.req().field("tag").width();
    let aw_valid = b.reg("aw_valid_q", 1, 0);
    let w_valid = b.reg("w_valid_q", 1, 0);
    let aw_fire = b.let_("aw_fire", &aw_valid.and(&aw.ready));
    let w_fire = b.let_("w_fire", &w_valid.and(&w.ready));
    let (addr, tag) = (p.req().field("addr"), p.req().field("tag"));
    let aw_addr = b.reg_noreset("aw_addr_q", axi.addr_bits);
    let aw_len = b.reg_noreset("aw_len_q", 8);
    let aw_id = b.reg_noreset("aw_id_q", iw);
    let w_free = w_valid.not().or(&w.ready);
    let aw_free = aw_valid.not().or(&aw.ready);
    let take;
    if s.len_bits > 0 {
        let lb = s.len_bits;
        let (len, last) = (p.req().field("len"), p.req().field("last"));
        // The burst's beat counter and, from its first beat, its pieces.
        let k = b.reg("wk_q", lb, 0);
        let f_q = b.reg_noreset("wf_q", lb);
        let split_q = b.reg("wsplit_q", 1, 0);
        let addr2_q = b.reg_noreset("waddr2_q", axi.addr_bits);
        let len2_q = b.reg_noreset("wlen2_q", lb);
        let id_q = b.reg_noreset("wid_q", tw);
        let pc = pieces(b, "wr", &addr, &len, db);
        let first = b.let_("w_first", &k.eq_lit(0));
        let start2 = b.let_("w_start2", &split_q.and(&k.eq(&f_q.add(&Expr::lit(lb, 1)))));
        let starts = b.let_("w_piece_start", &first.or(&start2));
        let ready = b.let_("wr_take_ready", &w_free.and(&starts.not().or(&aw_free)));
        b.assign(&p.req().ready, &ready);
        take = b.let_("wr_take", &p.req().valid.and(&ready));
        let piece_end = first.mux(&pc.split.and(&pc.first_len.eq_lit(0)), &split_q.and(&k.eq(&f_q)));
        let wlast = b.let_("w_piece_last", &last.or(&piece_end));
        b.next(&k, &last.mux(&Expr::zero(lb), &k.add(&Expr::lit(lb, 1))), Some(&take));
        let tf = b.let_("w_take_first", &take.and(&first));
        b.next(&f_q, &pc.first_len, Some(&tf));
        b.next(&split_q, &pc.split, Some(&tf));
        b.next(&addr2_q, &pc.second_addr, Some(&tf));
        b.next(&len2_q, &pc.second_len, Some(&tf));
        b.next(&id_q, &tag, Some(&tf));
        let load_aw = b.let_("aw_load", &take.and(&starts));
        let piece_len = first.mux(&pc.first_len, &len2_q).zext(8);
        b.next(&aw_valid, &load_aw, Some(&load_aw.or(&aw_fire)));
        b.next(&aw_addr, &first.mux(&addr, &addr2_q), Some(&load_aw));
        b.next(&aw_len, &piece_len, Some(&load_aw));
        b.next(&aw_id, &first.mux(&tag, &id_q).zext(iw), Some(&load_aw));
        let w_last = b.pipe("w_last_q", &wlast, &take);
        b.assign(&w.field("last"), &w_last);
        // WLAST on exactly the last beat of each AW burst: the beats of the
        // current piece counted against the length its AW carries.
        let inpiece = b.formal_reg("w_inpiece", 8);
        let plen = b.formal_reg("w_piece_len", 8);
        let cur_len = starts.mux(&piece_len, &plen);
        let idx = starts.mux(&Expr::zero(8), &inpiece);
        b.formal_next(&plen, &take.mux(&cur_len, &plen));
        b.formal_next(&inpiece, &rst.mux(&Expr::zero(8), &take.mux(&wlast.mux(&Expr::zero(8), &idx.add(&Expr::lit(8, 1))), &inpiece)));
        b.assume_always("wr_last_is_len", &p.req().valid.not().or(&last.eq(&k.eq(&len))), "the arbiter's `last` is high exactly on beat `len` of a burst");
        let len_q = b.formal_reg("w_burst_len", lb);
        b.formal_next(&len_q, &tf.mux(&len, &len_q));
        b.assume_always("wr_len_same", &p.req().valid.not().or(&first).or(&len.eq(&len_q)), "a burst's beats carry the same `len`");
        b.assert_always("wlast_exact", &take.not().or(&wlast.eq(&idx.eq(&cur_len))), "WLAST exactly on the last beat of each AW burst");
        // What makes it inductive: the beat counter, the pieces and the
        // formal count agree inside a burst.
        let in1 = k.le(&f_q);
        let rel = in1.mux(&k, &k.sub(&f_q).sub(&Expr::lit(lb, 1)));
        let piece_len_q = in1.mux(&f_q, &len2_q).zext(8);
        b.assert_always("w_piece_index", &inpiece.eq(&rel.zext(8)), "beats of the current piece taken, as the counter says");
        b.assert_always("w_piece_length", &inpiece.eq_lit(0).or(&plen.eq(&piece_len_q)), "inside a piece, its AW length");
        b.assert_always("w_second_on_page", &k.eq_lit(0).or(&split_q.not()).or(&addr2_q.slice(11, 0).eq_lit(0)), "a split burst's second piece starts a 4 KB page");
        b.assert_always("w_burst_shape", &k.eq_lit(0).or(&k.le(&len_q)), "the counter stays within the burst");
        b.assert_always(
            "w_pieces_sum",
            &k.eq_lit(0).or(&split_q.mux(&f_q.zext(lb + 1).add(&len2_q.zext(lb + 1)).add(&Expr::lit(lb + 1, 1)).eq(&len_q.zext(lb + 1)), &f_q.eq(&len_q))),
            "the two pieces make the burst",
        );
        b.assert_held("w_held", &w_valid, &w.ready, std::slice::from_ref(&w_last), "W: WLAST held until ready");
        // B: a split burst's first piece's response is dropped.
        split_flags(b, p, &bch, &tf, &pc.split, &tag, outstanding);
    } else {
        let ready = b.let_("wr_take_ready", &w_free.and(&aw_free));
        b.assign(&p.req().ready, &ready);
        take = b.let_("wr_take", &p.req().valid.and(&ready));
        b.next(&aw_valid, &take, Some(&take.or(&aw_fire)));
        b.next(&aw_addr, &addr, Some(&take));
        b.next(&aw_len, &Expr::zero(8), Some(&take));
        b.next(&aw_id, &tag.zext(iw), Some(&take));
        b.assign(&w.field("last"), &Expr::bit(true));
        // One piece a request: every B is a request's response.
        b.assign(&p.rsp().valid, &bch.valid);
        b.assign(&p.rsp().field("tag"), &bch.field("id").slice(tw - 1, 0));
        b.assign(&bch.ready, &p.rsp().ready);
    }
    let w_data = b.pipe("w_data_q", &p.req().field("data"), &take);
    let w_strb = b.pipe("w_strb_q", &p.req().field("strb"), &take);
    b.next(&w_valid, &take, Some(&take.or(&w_fire)));
    b.assign(&aw.valid, &aw_valid);
    b.assign(&aw.field("addr"), &aw_addr);
    b.assign(&aw.field("len"), &aw_len);
    b.assign(&aw.field("id"), &aw_id);
    b.assign(&w.valid, &w_valid);
    b.assign(&w.field("data"), &w_data);
    b.assign(&w.field("strb"), &w_strb);
    if iw > tw {
        b.waive_unused(&bch.field("id"), "IDs above the sources' tags are never issued");
    }
    errs.push(bch.valid.and(&bch.ready).and(&bch.field("resp").any()));
    b.assert_held("aw_held", &aw_valid, &aw.ready, &[aw_addr.clone(), aw_len.clone(), aw_id.clone()], "AW: valid and payload held until ready");
    b.assert_held("w_data_held", &w_valid, &w.ready, &[w_data, w_strb], "W: valid and payload held until ready");
    b.assert_always("aw_no_4k", &aw_valid.not().or(&no_crossing(&aw_addr, &aw_len, db)), "AW: no burst crosses a 4 KB boundary");
}

/// Per write ID, whether each burst in flight was split (a queue of
/// `outstanding` bits, pushed at a burst's first beat) and whether its first
/// piece's `B` has been seen: the `B` of a split burst's first piece is
/// taken and dropped, the last piece's `B` is the burst's response.
#[allow(clippy::too_many_arguments)]
fn split_flags(b: &mut ModuleBuilder, p: &Bus, bch: &Stream, push: &Expr, split: &Expr, tag: &Expr, outstanding: u32) {
    let tw = tag.width();
    let ids = 1usize << tw;
    let cw = bits_for(outstanding as u64);
    let bid = bch.field("id").slice(tw - 1, 0);
    let counts: Vec<Expr> = (0..ids).map(|j| b.reg(&format!("sf{j}_count_q"), cw, 0)).collect();
    let flags: Vec<Expr> = (0..ids).map(|j| b.reg_noreset(&format!("sf{j}_q"), outstanding)).collect();
    let halves: Vec<Expr> = (0..ids).map(|j| b.reg(&format!("half{j}_q"), 1, 0)).collect();
    let head = select(&bid, &flags.iter().map(|f| f.bit_at(0)).collect::<Vec<_>>());
    let half = select(&bid, &halves);
    let fin = b.let_("b_final", &head.and(&half.not()).not());
    b.assign(&bch.ready, &fin.not().or(&p.rsp().ready));
    let fire = b.let_("b_fire", &bch.valid.and(&bch.ready));
    b.assign(&p.rsp().valid, &bch.valid.and(&fin));
    b.assign(&p.rsp().field("tag"), &bid);
    for j in 0..ids {
        let mine = fire.and(&bid.eq_lit(j as u64));
        let pop = b.let_(&format!("sf{j}_pop"), &mine.and(&fin));
        let push_j = b.let_(&format!("sf{j}_push"), &push.and(&tag.eq_lit(j as u64)));
        let (c, f) = (&counts[j], &flags[j]);
        let pos = c.sub(&pop.zext(cw));
        let bits: Vec<Expr> = (0..outstanding)
            .map(|i| {
                let shifted = if i + 1 < outstanding { pop.mux(&f.bit_at(i + 1), &f.bit_at(i)) } else { pop.mux(&Expr::bit(false), &f.bit_at(i)) };
                push_j.and(&pos.eq_lit(i as u64)).mux(split, &shifted)
            })
            .collect();
        b.next(f, &Expr::cat_lanes(&bits), None);
        b.next(c, &c.add(&push_j.zext(cw)).sub(&pop.zext(cw)), None);
        b.next(&halves[j], &pop.mux(&Expr::bit(false), &mine.or(&halves[j])), None);
        b.assume_always(
            &format!("sf{j}_room"),
            &push_j.not().or(&c.lt(&Expr::lit(cw, outstanding as u64))).or(&pop),
            &format!("ID {j}: at most `outstanding` bursts without their response (the arbiter's cap)"),
        );
        b.assume_always(
            &format!("b{j}_outstanding"),
            &bch.valid.and(&bid.eq_lit(j as u64)).not().or(&c.eq_lit(0).not()),
            &format!("the slave sends B for ID {j} only for a burst it was given"),
        );
    }
}

/// A burst of `len + 1` (8-bit `len`) beats of `db` bytes at `addr` stays
/// within its 4 KB page.
fn no_crossing(addr: &Expr, len: &Expr, db: u32) -> Expr {
    let lg = clog2(db as u64);
    let bb = 12 - lg;
    let w = bb.max(8) + 1;
    addr.slice(11, lg).zext(w).add(&len.zext(w)).lt(&Expr::lit(w, 1 << bb))
}

