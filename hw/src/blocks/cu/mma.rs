//! `mma` on the DMA queue (docs/cu.md, "`mma`" and "Matrix multiply"): a tile
//! sequencer that reads the k-map first (`, skip`), then `A` from the
//! scratchpad once a row block (its needed word columns, for all its column
//! blocks) into a buffer two row blocks deep and `B` (its used k-steps) into
//! one two tiles deep, streams each tile's groups to the `systolic` grid
//! once the grid is idle after the previous tile's last step (so a tile
//! computes while the previous one's rows drain), catches the result rows in
//! a row buffer two tiles deep, and writes them to `C` (adding `C0`: `C`'s
//! own words or a bias row).
//!
//! Four walkers share the tile order (row blocks, column blocks fastest): the
//! `A` reader (port `rd2`), the `B` reader (`rd3`), the streamer (the grid's
//! `in` stream) and the writer (`wr2`, with its `C0` reads on `rd4`). Each
//! keeps its own tile position and running addresses, so no address needs a
//! multiply.

use crate::rtl::bus::Bus;
use crate::rtl::{bits_for, clog2, popcount, select, Expr, ModuleBuilder, RamRead, RamWrite, Stream};
use gpurtl_params::cu::CuParams;

/// The operation at the head of the DMA queue (when it is an `mma`) and the
/// ports the sequencer drives.
pub struct Io {
    pub start: Expr,
    /// Scratchpad addresses of `C`, `A`, `B`.
    pub co: Expr,
    pub ao: Expr,
    pub bo: Expr,
    /// `TM` (bits 7:0) and `TN` (15:8) of the shape register.
    pub mn: Expr,
    /// `K`.
    pub k: Expr,
    /// The C0 mode (0 none, 1 acc, 2 bias), the row pads `qa`, `qb`, and
    /// the bias row's scratchpad address.
    pub mode: Expr,
    pub qa: Expr,
    pub qb: Expr,
    pub bias: Expr,
    /// `, skip`: read the k-map before `Bo` and skip its k-steps.
    pub skip: Expr,
    pub rd_a: Bus,
    pub rd_b: Bus,
    pub rd_c0: Bus,
    pub wr_c: Bus,
    /// The grid's `in` and `out` streams.
    pub gin: Stream,
    pub gout: Stream,
    /// The grid holds no group (`in_idle_o`).
    pub gidle: Expr,
}

pub struct Engine {
    pub busy: Expr,
    pub started: Expr,
    /// Done in this cycle (an empty operation: in its start cycle).
    pub done: Expr,
}

/// A walker's tile position: the rows left from its row block on (`TM -
/// rb*R`, so the block's rows are `min(R, rows_left)`) and its column block.
struct Tiles {
    rows_left: Expr,
    cb: Expr,
}

impl Tiles {
    fn new(b: &mut ModuleBuilder, name: &str) -> Tiles {
        Tiles { rows_left: b.reg_noreset(&format!("mma_{name}_rows_left_q"), 8), cb: b.reg_noreset(&format!("mma_{name}_cb_q"), 8) }
    }
    /// The tile is in its row block's last column block (of `nc`).
    fn last_cb(&self, nc: &Expr) -> Expr {
        self.cb.add(&Expr::lit(8, 1)).eq(nc)
    }
    /// The tile's rows: `min(R, rows_left)`.
    fn rows(&self, r: u32) -> Expr {
        self.rows_left.lt(&Expr::lit(8, r as u64)).mux(&self.rows_left, &Expr::lit(8, r as u64))
    }
    /// The tile's columns: `min(C, TN - cb*C)` (16 bits).
    fn cols(&self, tn: &Expr, c: u32) -> Expr {
        let left = tn.zext(16).sub(&self.cb.zext(16).mul(&Expr::lit(16, c as u64)));
        left.lt(&Expr::lit(16, c as u64)).mux(&left, &Expr::lit(16, c as u64))
    }
    /// The first tile at `go` (`TM` = `tm`); the next one where `adv`.
    fn walk(&self, b: &mut ModuleBuilder, go: &Expr, tm: &Expr, adv: &Expr, nc: &Expr, r: u32) {
        let last = self.last_cb(nc);
        b.next(&self.cb, &go.or(&last).mux(&Expr::zero(8), &self.cb.add(&Expr::lit(8, 1))), Some(&go.or(adv)));
        b.next(&self.rows_left, &go.mux(tm, &self.rows_left.sub(&Expr::lit(8, r as u64))), Some(&go.or(&adv.and(&last))));
    }
}

/// The lowest index `i >= from` with `v[i]` set: (found, index), `w` bits.
fn first_from(v: &[Expr], from: &Expr, w: u32) -> (Expr, Expr) {
    let fw = from.width().max(w).max(bits_for(v.len() as u64));
    let f = from.zext(fw);
    let (mut found, mut idx) = (Expr::bit(false), Expr::zero(w));
    for i in (0..v.len()).rev() {
        let c = v[i].and(&Expr::lit(fw, i as u64).ge(&f));
        found = c.or(&found);
        idx = c.mux(&Expr::lit(w, i as u64), &idx);
    }
    (found, idx)
}

pub fn engine(b: &mut ModuleBuilder, p: &CuParams, io: Io) -> Engine {
    let sw = p.smem_addr_bits();
    let (r, c) = (p.grid_rows, p.grid_cols);
    let half_groups = p.kmax / 4;
    let hb = clog2(half_groups as u64);
    let ent_bits = hb + 1;
    let cw = c.div_ceil(4); // B words a k-step
    let lit = |x: u64| Expr::lit(sw, x);

    // ---- the operation ----
    let busy = b.reg("mma_busy_q", 1, 0);
    let started = b.let_("mma_start", &io.start.and(&busy.not()));
    let tm_in = io.mn.slice(7, 0);
    let tn_in = io.mn.slice(15, 8);
    let empty = tm_in.eq_lit(0).or(&tn_in.eq_lit(0)).or(&io.k.eq_lit(0));
    let go = b.let_("mma_go", &started.and(&empty.not()));
    let cap = |b: &mut ModuleBuilder, n: &str, v: &Expr| {
        let q = b.reg_noreset(&format!("mma_{n}_q"), v.width());
        b.next(&q, v, Some(&go));
        q
    };
    let tn = cap(b, "tn", &tn_in);
    let kk = cap(b, "k", &io.k.slice(15, 0));
    let bo = cap(b, "bo", &io.bo);
    // PA = 4*ceil(K/4) + 4*qa, PB = 8*ceil(TN/8) + 4*qb, PC = 4*TN (bytes).
    let pw = sw.max(19);
    let pa_in = io.k.slice(15, 0).zext(pw).add(&Expr::lit(pw, 3)).and(&Expr::lit(pw, (1u64 << pw) - 4)).add(&Expr::cat(&[io.qa.clone(), Expr::zero(2)]).zext(pw));
    let pa = cap(b, "pa", &pa_in.slice(sw - 1, 0));
    let pb_in = tn_in.zext(pw).add(&Expr::lit(pw, 7)).and(&Expr::lit(pw, (1u64 << pw) - 8)).add(&Expr::cat(&[io.qb.clone(), Expr::zero(2)]).zext(pw));
    let pb = cap(b, "pb", &pb_in.slice(sw - 1, 0));
    let mode = cap(b, "mode", &io.mode);
    let bias = cap(b, "bias", &io.bias);
    let c0 = mode.any();
    let pc = cap(b, "pc", &Expr::cat(&[tn_in.clone(), Expr::zero(2)]).zext(sw.max(10)).slice(sw - 1, 0));
    // Tiles: nc column blocks, total nr*nc.
    let ceil_div = |x: &Expr, d: u32| -> Expr {
        // x (8 bits) / d rounded up, d a small constant: by a table-free loop.
        let w = x.width();
        let xs = x.zext(w + 4).add(&Expr::lit(w + 4, d as u64 - 1));
        if d.is_power_of_two() {
            let sh = clog2(d as u64);
            if sh == 0 {
                xs.slice(w - 1, 0)
            } else {
                xs.slice(w + 3, sh).zext(w + 4 - sh).slice(w - 1, 0)
            }
        } else {
            // d in 3..7: x < 256, quotient by comparison with multiples.
            (0..=255u64 / d as u64 + 1).map(|k| xs.ge(&Expr::lit(w + 4, (k + 1) * d as u64)).zext(w)).fold(Expr::zero(w), |a, e| a.add(&e))
        }
    };
    let nc = cap(b, "nc", &ceil_div(&tn_in, c));
    let ntiles_in = ceil_div(&tm_in, r).zext(16).mul(&ceil_div(&tn_in, c).zext(16));
    let ntiles = cap(b, "ntiles", &ntiles_in);

    // ---- the k-map (skip): rd3 reads its nk words first; `mapped` from the
    // cycle after the last one's word is taken (M + 1), without skip from
    // g + 1 (M = g) ----
    let kb = p.kmax;
    let kw = bits_for(kb as u64) + 1;
    let nkw = bits_for(kb.div_ceil(32) as u64);
    let skip = cap(b, "skip", &io.skip);
    let nk_in = io.k.slice(15, 0).zext(17).add(&Expr::lit(17, 31)).slice(16, 5);
    let m_n = cap(b, "m_n", &nk_in.slice(nkw - 1, 0));
    let m_left = b.reg("mma_m_left_q", nkw, 0);
    let m_addr = b.reg_noreset("mma_m_addr_q", sw);
    let m_got = b.reg_noreset("mma_m_got_q", nkw);
    let m_pend = b.reg("mma_m_pend_q", 1, 0);
    let mapped = b.reg("mma_mapped_q", 1, 0);
    let map = b.reg_noreset("mma_map_q", kb);
    let m_req = b.let_("mma_m_req", &m_left.any());
    let m_take = m_req.and(&io.rd_b.req().ready);
    let nk_sw = if sw - 2 >= 12 { nk_in.zext(sw - 2) } else { nk_in.slice(sw - 3, 0) };
    b.next(&m_left, &go.mux(&io.skip.mux(&nk_in.slice(nkw - 1, 0), &Expr::zero(nkw)), &m_left.sub(&Expr::lit(nkw, 1))), Some(&go.or(&m_take)));
    b.next(&m_addr, &go.mux(&io.bo.sub(&Expr::cat(&[nk_sw, Expr::zero(2)])), &m_addr.add(&Expr::lit(sw, 4))), Some(&go.or(&m_take)));
    b.next(&m_pend, &m_take, None);
    b.next(&m_got, &go.mux(&Expr::zero(nkw), &m_got.add(&Expr::lit(nkw, 1))), Some(&go.or(&m_pend)));
    let m_word = io.rd_b.rsp().field("data");
    let map_next = Expr::cat_lanes(
        &(0..kb)
            .map(|k| {
                let hit = m_pend.and(&m_got.eq_lit((k / 32) as u64));
                hit.mux(&m_word.bit_at(k % 32), &map.bit_at(k))
            })
            .collect::<Vec<_>>(),
    );
    b.next(&map, &map_next, None);
    let m_last = m_pend.and(&m_got.add(&Expr::lit(nkw, 1)).eq(&m_n));
    b.next(&mapped, &go.mux(&io.skip.not(), &mapped.or(&m_last)), Some(&go.or(&m_last)));
    // Used k-steps (k < K, and with skip their map bit 0), needed word
    // columns, and u.
    let used_bits: Vec<Expr> = (0..kb).map(|k| Expr::lit(16, k as u64).lt(&kk).and(&skip.not().or(&map.bit_at(k).not()))).collect();
    let needed: Vec<Expr> = (0..kb / 4).map(|x| used_bits[4 * x as usize..4 * x as usize + 4].iter().fold(Expr::bit(false), |a, e| a.or(e))).collect();
    let u = b.let_("mma_u", &popcount(&used_bits, kw));
    let any_used = b.let_("mma_any_used", &u.any());
    let q_groups = b.let_("mma_q", &any_used.mux(&u.zext(16).add(&Expr::lit(16, 3)).slice(15, 2).zext(16), &Expr::lit(16, 1)));


    // ---- tiles out of the grid (X_t passed) and written (W_t passed) ----
    let xdone = b.reg_noreset("mma_xdone_q", 16);
    let wdone = b.reg_noreset("mma_wdone_q", 16);
    let tw = 16;

    // ---- A reader (rd2): once a row block, for all its column blocks ----
    let a_rb = b.reg_noreset("mma_a_rb_q", tw);
    let a_before = b.reg_noreset("mma_a_before_q", tw); // rb*nc: tiles before the row block
    let a_rows_left = b.reg_noreset("mma_a_rows_left_q", 8);
    let a_from = b.reg_noreset("mma_a_from_q", kw); // the next needed column is at or after
    let a_i = b.reg_noreset("mma_a_i_q", 8);
    let a_rb_base = b.reg_noreset("mma_a_rb_base_q", sw); // Ao + rb*R*PA
    let a_ioff = b.reg_noreset("mma_a_ioff_q", sw); // i*PA
    let a_ubase = b.reg_noreset("mma_a_ubase_q", kw); // used steps before the column
    let a_more = b.reg("mma_a_more_q", 1, 0);
    let (_, a_x) = first_from(&needed, &a_from, kw);
    let a_x = b.let_("mma_a_x", &a_x);
    let (a_more_cols, _) = first_from(&needed, &a_x.add(&Expr::lit(kw, 1)), kw);
    let a_nib = b.let_("mma_a_nib", &select(&a_x, &(0..kb / 4).map(|x| Expr::cat_lanes(&used_bits[4 * x as usize..4 * x as usize + 4])).collect::<Vec<_>>()));
    let a_col = a_rb_base.add(&Expr::cat(&[a_x.zext(sw.max(kw)).slice(sw - 3, 0), Expr::zero(2)]));
    let a_addr = a_col.add(&a_ioff);
    let a_h = a_rows_left.lt(&Expr::lit(8, r as u64)).mux(&a_rows_left, &Expr::lit(8, r as u64));
    // Tiles whose ending step has issued (E_t passed): every tile sent
    // whole, once the grid is idle (a tile is offered only to an idle grid,
    // so in E_t + 1 the count is t + 1).
    let s_t = b.reg_noreset("mma_s_tile_q", tw); // tiles sent whole (the streamer's)
    let edone = b.reg_noreset("mma_edone_q", tw);
    let e_now = b.let_("mma_e_now", &go.mux(&Expr::zero(tw), &io.gidle.mux(&s_t, &edone)));
    b.next(&edone, &e_now, None);
    // Row block rb's buffer half is free once row block rb - 2's last tile
    // ((rb - 1)*nc - 1) has issued its ending step.
    let a_free = a_rb.lt(&Expr::lit(tw, 2)).or(&e_now.add(&nc.zext(tw)).ge(&a_before));
    // A row block b >= 1 yields a bank to rd3's read in the same cycle while
    // its A is early (the grid waits on B; a later row block's A has time).
    let a_yield = b.wire("mma_a_yield", 1);
    let a_req = b.let_("mma_a_req", &a_more.and(&a_free).and(&mapped).and(&any_used).and(&a_yield.not()));
    b.assign(&io.rd_a.req().valid, &a_req);
    b.assign(&io.rd_a.req().field("addr"), &a_addr);
    let a_take = b.let_("mma_a_take", &a_req.and(&io.rd_a.req().ready));
    let a_last_i = a_i.add(&Expr::lit(8, 1)).eq(&a_h);
    let a_last_j = a_more_cols.not();
    let a_last_rb = a_rows_left.le(&Expr::lit(8, r as u64));
    {
        let next_rb = a_last_i.and(&a_last_j);
        let col_done = a_take.and(&a_last_i);
        b.next(&a_i, &go.or(&a_last_i).mux(&Expr::zero(8), &a_i.add(&Expr::lit(8, 1))), Some(&go.or(&a_take)));
        b.next(&a_ioff, &go.or(&a_last_i).mux(&lit(0), &a_ioff.add(&pa)), Some(&go.or(&a_take)));
        b.next(&a_from, &go.or(&next_rb).mux(&Expr::zero(kw), &a_x.add(&Expr::lit(kw, 1))), Some(&go.or(&col_done)));
        let nib_count = popcount(&(0..4).map(|q| a_nib.bit_at(q)).collect::<Vec<_>>(), kw);
        b.next(&a_ubase, &go.or(&next_rb).mux(&Expr::zero(kw), &a_ubase.add(&nib_count)), Some(&go.or(&col_done)));
        let rb_base_next = a_rb_base.add(&pa.mul(&lit(r as u64)).slice(sw - 1, 0));
        b.next(&a_rb_base, &go.mux(&io.ao, &rb_base_next), Some(&go.or(&a_take.and(&next_rb))));
        let adv = a_take.and(&next_rb);
        b.next(&a_rows_left, &go.mux(&tm_in, &a_rows_left.sub(&Expr::lit(8, r as u64))), Some(&go.or(&adv)));
        b.next(&a_rb, &go.mux(&Expr::zero(tw), &a_rb.add(&Expr::lit(tw, 1))), Some(&go.or(&adv)));
        b.next(&a_before, &go.mux(&Expr::zero(tw), &a_before.add(&nc.zext(tw))), Some(&go.or(&adv)));
        b.next(&a_more, &go.or(&a_more.and(&adv.and(&a_last_rb).not())), None);
    }
    // The response: where it goes in the buffer.
    let a_rsp_i = b.reg_noreset("mma_a_rsp_i_q", 8);
    let a_rsp_last = b.reg("mma_a_rsp_last_q", 1, 0);
    let ent = |t: &Expr, j: &Expr| {
        if hb == 0 {
            t.bit_at(0)
        } else {
            Expr::cat(&[t.bit_at(0), j.slice(hb - 1, 0)])
        }
    };
    let a_rsp_par = b.reg_noreset("mma_a_rsp_par_q", 1);
    let a_rsp_base = b.reg_noreset("mma_a_rsp_base_q", kw);
    let a_rsp_mask = b.reg_noreset("mma_a_rsp_mask_q", 4);
    b.next(&a_rsp_par, &a_rb.bit_at(0), Some(&a_take));
    b.next(&a_rsp_base, &a_ubase, Some(&a_take));
    b.next(&a_rsp_mask, &a_nib, Some(&a_take));
    b.next(&a_rsp_i, &a_i, Some(&a_take));
    b.next(&a_rsp_last, &a_take.and(&a_last_i).and(&a_last_j), None);
    b.assign(&io.rd_a.rsp().ready, &Expr::bit(true));
    let a_rv = io.rd_a.rsp().valid.clone();
    let a_word = io.rd_a.rsp().field("data");
    // Row blocks whose A reads are all in.
    let a_fill = b.reg_noreset("mma_a_fill_q", tw);
    b.next(&a_fill, &go.mux(&Expr::zero(tw), &a_fill.add(&Expr::lit(tw, 1))), Some(&go.or(&a_rv.and(&a_rsp_last))));

    // ---- B reader (rd3) ----
    let b_t = b.reg_noreset("mma_b_tile_q", tw);
    let b_cb = b.reg_noreset("mma_b_cb_q", 8);
    let b_from = b.reg_noreset("mma_b_from_q", kw); // the next used k-step is at or after
    let b_idx = b.reg_noreset("mma_b_idx_q", kw); // its index among the used steps
    let b_h = b.reg_noreset("mma_b_h_q", 1);
    let b_coff = b.reg_noreset("mma_b_coff_q", sw); // cb*C bytes
    let (_, b_k) = first_from(&used_bits, &b_from, kw);
    let b_k = b.let_("mma_b_k", &b_k);
    let (b_more_k, _) = first_from(&used_bits, &b_k.add(&Expr::lit(kw, 1)), kw);
    let b_kaddr = b.let_("mma_b_kaddr", &bo.add(&b_k.zext(sw.max(kw)).slice(sw.min(kw) - 1, 0).zext(sw).mul(&pb).slice(sw - 1, 0)));
    let b_more = b.reg("mma_b_more_q", 1, 0);
    let b_free = b_t.lt(&e_now.add(&Expr::lit(tw, 2)));
    let b_req = b.let_("mma_b_req", &b_more.and(&b_free).and(&mapped).and(&any_used));
    let word_off = Expr::cat(&[b_coff.slice(sw - 1, 2), Expr::zero(2)]);
    let b_addr = b_kaddr.add(&word_off).add(&Expr::cat(&[b_h.zext(sw - 2), Expr::zero(2)]));
    b.assign(&io.rd_b.req().valid, &m_req.or(&b_req));
    let rd3_addr = b.let_("mma_rd3_addr", &m_req.mux(&m_addr, &b_addr));
    b.assign(&io.rd_b.req().field("addr"), &rd3_addr);
    let bank_bits = clog2(p.banks as u64); // banks is a power of two
    let same_bank = if bank_bits == 0 { Expr::bit(true) } else { a_addr.slice(bank_bits + 1, 2).eq(&rd3_addr.slice(bank_bits + 1, 2)) };
    // ... only while its row block's A is early: until tile rb*nc - 2 has
    // issued its end (e_now >= rb*nc - 1 from then on; at once for rb*nc < 2).
    let a_early = e_now.add(&Expr::lit(tw, 1)).lt(&a_before);
    b.assign(&a_yield, &a_rb.any().and(&a_early).and(&m_req.or(&b_req)).and(&same_bank));
    let b_take = b.let_("mma_b_take", &b_req.and(&io.rd_b.req().ready));
    let b_last_h = if cw == 1 { Expr::bit(true) } else { b_h.eq_lit(1) };
    let b_last_k = b_more_k.not();
    let b_last_cb = b_cb.add(&Expr::lit(8, 1)).eq(&nc);
    let b_last_tile = b_t.add(&Expr::lit(tw, 1)).eq(&ntiles);
    {
        let next_t = b_last_h.and(&b_last_k);
        if cw == 1 {
            b.next(&b_h, &Expr::zero(1), None);
        } else {
            b.next(&b_h, &go.or(&b_last_h).mux(&Expr::zero(1), &Expr::bit(true)), Some(&go.or(&b_take)));
        }
        b.next(&b_from, &go.or(&next_t).mux(&Expr::zero(kw), &b_k.add(&Expr::lit(kw, 1))), Some(&go.or(&b_take.and(&b_last_h))));
        b.next(&b_idx, &go.or(&next_t).mux(&Expr::zero(kw), &b_idx.add(&Expr::lit(kw, 1))), Some(&go.or(&b_take.and(&b_last_h))));
        b.next(&b_cb, &go.or(&b_last_cb).mux(&Expr::zero(8), &b_cb.add(&Expr::lit(8, 1))), Some(&go.or(&b_take.and(&next_t))));
        b.next(&b_coff, &go.or(&b_last_cb).mux(&lit(0), &b_coff.add(&lit(c as u64))), Some(&go.or(&b_take.and(&next_t))));
        b.next(&b_t, &go.mux(&Expr::zero(tw), &b_t.add(&Expr::lit(tw, 1))), Some(&go.or(&b_take.and(&next_t))));
        b.next(&b_more, &go.or(&b_more.and(&b_take.and(&next_t).and(&b_last_tile).not())), None);
    }
    let b_rsp_ent = b.reg_noreset("mma_b_rsp_ent_q", ent_bits);
    let b_rsp_s = b.reg_noreset("mma_b_rsp_s_q", 2);
    let b_rsp_h = b.reg_noreset("mma_b_rsp_h_q", 1);
    let b_rsp_off = b.reg_noreset("mma_b_rsp_off_q", 2);
    let b_rsp_last = b.reg("mma_b_rsp_last_q", 1, 0);
    b.next(&b_rsp_ent, &ent(&b_t, &b_idx.zext(kw.max(hb + 2)).slice(kw.max(hb + 2) - 1, 2)), Some(&b_take));
    b.next(&b_rsp_s, &b_idx.slice(1, 0), Some(&b_take));
    b.next(&b_rsp_h, &b_h, Some(&b_take));
    b.next(&b_rsp_off, &b_coff.slice(1, 0), Some(&b_take));
    b.next(&b_rsp_last, &b_take.and(&b_last_h).and(&b_last_k), None);
    b.assign(&io.rd_b.rsp().ready, &Expr::bit(true));
    let b_rv = io.rd_b.rsp().valid.and(&m_pend.not());
    let b_word = io.rd_b.rsp().field("data");
    let b_fill = b.reg_noreset("mma_b_fill_q", tw);
    b.next(&b_fill, &go.mux(&Expr::zero(tw), &b_fill.add(&Expr::lit(tw, 1))), Some(&go.or(&b_rv.and(&b_rsp_last))));

    // ---- the tile buffer: A entries [step s][row i], B entries [step s][column n] ----
    let depth = 2 * half_groups as u64;
    // The streamer's read (declared below, used here).
    let rd_en = b.wire("mma_buf_re", 1);
    let rd_addr = b.wire("mma_buf_raddr", ent_bits);
    let rd_addr_a = b.wire("mma_abuf_raddr", ent_bits);
    // A: one RAM a lane s; entry (row block mod 2, group) holds row i's byte
    // of used step 4*group + s. A word's used bytes have consecutive used
    // indexes base.., so each lane takes at most one of them: lane L the
    // t-th used byte, t = (L - base) mod 4, when t < (used bytes).
    let a_cnt = popcount(&(0..4).map(|q| a_rsp_mask.bit_at(q)).collect::<Vec<_>>(), 3);
    let a_row = Expr::cat_lanes(&(0..r).map(|i| a_rsp_i.eq_lit(i as u64)).collect::<Vec<_>>());
    let a_lanes: Vec<Expr> = (0..4u32)
        .map(|l| {
            let t = Expr::lit(2, l as u64).sub(&a_rsp_base.slice(1, 0));
            let valid = t.zext(3).lt(&a_cnt);
            // The t-th set bit of the mask: byte q when mask[q] and q's rank is t.
            let byte = (0..4u32).fold(Expr::zero(8), |acc, q| {
                let rank = popcount(&(0..q).map(|z| a_rsp_mask.bit_at(z)).collect::<Vec<_>>(), 2);
                let hit = a_rsp_mask.bit_at(q).and(&rank.eq(&t));
                acc.or(&hit.repl(8).and(&a_word.slice(8 * q + 7, 8 * q)))
            });
            let j = a_rsp_base.add(&t.zext(kw));
            let addr = ent(&a_rsp_par, &j.zext(kw.max(hb + 2)).slice(kw.max(hb + 2) - 1, 2));
            b.ram(
                &format!("mma_abuf{l}"),
                &format!("mma's tile buffer, A lane {l}: entry (row block mod 2, group) holds A[row i][used step 4*group + {l}] in byte i"),
                depth,
                r * 8,
                RamWrite { en: a_rv.and(&valid), addr, data: Expr::cat_lanes(&(0..r).map(|_| byte.clone()).collect::<Vec<_>>()), strb: Some(a_row.clone()) },
                RamRead { en: rd_en.clone(), addr: rd_addr_a.clone() },
            )
        })
        .collect();
    let a_buf = Expr::cat_lanes(&a_lanes);
    // B: lane s*C + n. C >= 4: word h fills columns 4h..4h+3; C < 4: the C
    // bytes at the column block's offset in the word.
    let (b_data, b_strb) = {
        let lanes: Vec<(u32, u32)> = (0..4).flat_map(|s| (0..c).map(move |n| (s, n))).collect();
        let data: Vec<Expr> = lanes
            .iter()
            .map(|&(_, n)| {
                if c >= 4 {
                    b_word.slice(8 * (n % 4) + 7, 8 * (n % 4))
                } else {
                    let opts: Vec<Expr> = (0..4).map(|o| b_word.slice(8 * ((o + n) % 4) + 7, 8 * ((o + n) % 4))).collect();
                    select(&b_rsp_off, &opts)
                }
            })
            .collect();
        let strb: Vec<Expr> = lanes
            .iter()
            .map(|&(s, n)| {
                let st = b_rsp_s.eq_lit(s as u64);
                if c > 4 {
                    st.and(&b_rsp_h.eq_lit((n / 4) as u64))
                } else {
                    st
                }
            })
            .collect();
        (Expr::cat_lanes(&data), Expr::cat_lanes(&strb))
    };
    if cw == 1 {
        b.waive_unused(&b_rsp_h, "one B word a k-step");
    }
    if c >= 4 {
        b.waive_unused(&b_rsp_off, "the column block starts a word");
    }
    let b_buf = b.ram(
        "mma_bbuf",
        "mma's tile buffer, B: entry (tile mod 2, group) holds lane s*C + n = B[4*group + s][column n]",
        depth,
        4 * c * 8,
        RamWrite { en: b_rv.clone(), addr: b_rsp_ent.clone(), data: b_data, strb: Some(b_strb) },
        RamRead { en: rd_en.clone(), addr: rd_addr.clone() },
    );

    // ---- the streamer ----
    let s_tl = Tiles::new(b, "s");
    let s_j = b.reg_noreset("mma_s_j_q", 16);
    let s_kleft = b.reg_noreset("mma_s_kleft_q", 16);
    let s_on = b.reg("mma_s_on_q", 1, 0); // groups offered
    let s_more = b.reg("mma_s_more_q", 1, 0); // tiles left to stream
    let s_rb = b.reg_noreset("mma_s_rb_q", tw);
    let filled = mapped.and(&any_used.not().or(&a_fill.gt(&s_rb).and(&b_fill.gt(&s_t))));
    // Tile s_t - 1 has issued its ending step (the grid is idle: the next
    // tile computes while its rows drain), tile s_t - 2's rows are written.
    let ready_t = io.gidle.and(&s_t.lt(&wdone.add(&Expr::lit(tw, 2))));
    // The buffer read of the tile's first group: the cycle before its offer.
    let arm = b.let_("mma_s_arm", &s_more.and(&s_on.not()).and(&filled).and(&ready_t));
    let g_take = b.let_("mma_g_take", &io.gin.valid.and(&io.gin.ready));
    let s_last_j = s_j.add(&Expr::lit(16, 1)).eq(&q_groups);
    let tile_sent = g_take.and(&s_last_j);
    b.next(&s_on, &arm.or(&s_on.and(&tile_sent.not())), None);
    b.assign(&rd_en, &arm.or(&g_take));
    let next_j = g_take.mux(&s_j.add(&Expr::lit(16, 1)), &s_j);
    b.assign(&rd_addr, &ent(&s_t, &arm.mux(&Expr::zero(16), &next_j)));
    b.assign(&rd_addr_a, &ent(&s_rb, &arm.mux(&Expr::zero(16), &next_j)));
    b.next(&s_j, &arm.or(&tile_sent).mux(&Expr::zero(16), &next_j), Some(&arm.or(&g_take)));
    b.next(&s_kleft, &arm.mux(&any_used.mux(&u.zext(16), &Expr::lit(16, 1)), &s_kleft.sub(&Expr::lit(16, 4))), Some(&arm.or(&g_take)));
    b.next(&s_rb, &go.mux(&Expr::zero(tw), &s_rb.add(&Expr::lit(tw, 1))), Some(&go.or(&tile_sent.and(&s_tl.last_cb(&nc)))));
    s_tl.walk(b, &go, &tm_in, &tile_sent, &nc, r);
    b.next(&s_t, &go.mux(&Expr::zero(tw), &s_t.add(&Expr::lit(tw, 1))), Some(&go.or(&tile_sent)));
    let s_last_tile = s_t.add(&Expr::lit(tw, 1)).eq(&ntiles);
    b.next(&s_more, &go.or(&s_more.and(&tile_sent.and(&s_last_tile).not())), None);
    // Columns of the tile: w = min(C, TN - cb*C).
    let s_w = b.let_("mma_s_w", &s_tl.cols(&tn, c));
    let s_h = b.let_("mma_s_h", &s_tl.rows(r));
    let a_keep = Expr::cat_lanes(&(0..4).flat_map(|_| (0..r).map(|i| Expr::lit(8, i as u64).lt(&s_h).repl(8))).collect::<Vec<_>>());
    let b_keep = Expr::cat_lanes(&(0..4).flat_map(|_| (0..c).map(|n| Expr::lit(16, n as u64).lt(&s_w).repl(8))).collect::<Vec<_>>());
    b.assign(&io.gin.valid, &s_on);
    let live = any_used.repl(a_keep.width());
    b.assign(&io.gin.field("a"), &a_buf.and(&a_keep).and(&live));
    b.assign(&io.gin.field("b"), &b_buf.and(&b_keep).and(&any_used.repl(b_keep.width())));
    let steps = s_kleft.gt(&Expr::lit(16, 4)).mux(&Expr::lit(16, 4), &s_kleft);
    let stw = io.gin.field("steps").width();
    b.assign(&io.gin.field("steps"), &steps.slice(stw - 1, 0));
    b.assign(&io.gin.field("last"), &s_last_j);

    // ---- rows out of the grid, into a row buffer two tiles deep ----
    b.assign(&io.gout.ready, &Expr::bit(true));
    let o_take = io.gout.valid.clone();
    let o_row = io.gout.field("row");
    let o_c = io.gout.field("c");
    let rb_bits = bits_for(r as u64);
    // Rows of tile `xdone` captured so far.
    let o_rows = b.reg_noreset("mma_o_rows_q", rb_bits);
    let rowbuf: Vec<Vec<Expr>> = (0..2u64)
        .map(|h| {
            (0..r)
                .map(|i| {
                    let q = b.reg_noreset(&format!("mma_row{h}_{i}_q"), 32 * c);
                    b.next(&q, &o_c, Some(&o_take.and(&o_row.eq_lit(i as u64)).and(&xdone.bit_at(0).eq_lit(h))));
                    q
                })
                .collect()
        })
        .collect();
    let x_inc = b.let_("mma_x_inc", &o_take.and(&o_row.eq_lit(r as u64 - 1)));
    b.next(&o_rows, &go.or(&x_inc).mux(&Expr::zero(rb_bits), &o_rows.add(&Expr::lit(rb_bits, 1))), Some(&go.or(&o_take)));
    b.next(&xdone, &go.mux(&Expr::zero(tw), &xdone.add(&Expr::lit(tw, 1))), Some(&go.or(&x_inc)));

    // ---- the writer: a word pointer across rows and tiles; with C0 each
    // word is read on rd4, then written the cycle after ----
    let w_t = b.reg_noreset("mma_w_tile_q", tw);
    let w_tl = Tiles::new(b, "w");
    let w_r = b.reg_noreset("mma_w_r_q", 8);
    let w_n = b.reg_noreset("mma_w_n_q", 8);
    let w_more = b.reg("mma_w_more_q", 1, 0);
    let w_rb_base = b.reg_noreset("mma_w_rb_base_q", sw); // Co + rb*R*PC
    let w_cbase = b.reg_noreset("mma_w_cbase_q", sw); // 4*cb*C
    let w_row = b.reg_noreset("mma_w_row_q", sw); // Co + (rb*R + r)*PC + 4*cb*C
    let w_addr = b.reg_noreset("mma_w_addr_q", sw); // + 4n
    let w_baddr = b.reg_noreset("mma_w_baddr_q", sw); // bias + 4*cb*C + 4n
    let w_h = w_tl.rows(r);
    let w_w = w_tl.cols(&tn, c);
    // Row w_r of tile w_t has left the grid.
    let w_here = w_t.lt(&xdone).or(&w_t.eq(&xdone).and(&o_rows.zext(8).gt(&w_r)));
    let w_ok = b.let_("mma_w_ok", &busy.and(&w_more).and(&w_here));
    let half_rows: Vec<Expr> = (0..r as usize).map(|i| w_t.bit_at(0).mux(&rowbuf[1][i], &rowbuf[0][i])).collect();
    let value = b.let_("mma_w_value", &select(&w_n, &(0..c).map(|n| select(&w_r, &half_rows).slice(32 * n + 31, 32 * n)).collect::<Vec<_>>()));
    b.assign(&io.rd_c0.req().valid, &w_ok.and(&c0));
    b.assign(&io.rd_c0.req().field("addr"), &mode.eq_lit(1).mux(&w_addr, &w_baddr));
    b.assign(&io.rd_c0.rsp().ready, &Expr::bit(true));
    let issue = b.let_("mma_w_issue", &w_ok.and(&c0.not().or(&io.rd_c0.req().ready)));
    let w_last_n = w_n.zext(16).add(&Expr::lit(16, 1)).eq(&w_w);
    let w_last_r = w_r.add(&Expr::lit(8, 1)).eq(&w_h);
    let w_last_t = w_t.add(&Expr::lit(tw, 1)).eq(&ntiles);
    let tile_end = issue.and(&w_last_n).and(&w_last_r);
    let w_last_cb = w_tl.last_cb(&nc);
    {
        let wr_ = issue.and(&w_last_n);
        b.next(&w_n, &go.or(&wr_).mux(&Expr::zero(8), &w_n.add(&Expr::lit(8, 1))), Some(&go.or(&issue)));
        b.next(&w_r, &go.or(&tile_end).mux(&Expr::zero(8), &w_r.add(&Expr::lit(8, 1))), Some(&go.or(&wr_)));
        let new_rb = tile_end.and(&w_last_cb);
        let rb_next = w_rb_base.add(&pc.mul(&lit(r as u64)).slice(sw - 1, 0));
        b.next(&w_rb_base, &go.mux(&io.co, &rb_next), Some(&go.or(&new_rb)));
        let cbase_next = w_last_cb.mux(&lit(0), &w_cbase.add(&lit(4 * c as u64)));
        b.next(&w_cbase, &go.mux(&lit(0), &cbase_next), Some(&go.or(&tile_end)));
        let row_next_tile = new_rb.mux(&rb_next, &w_rb_base.add(&cbase_next));
        let row_next = tile_end.mux(&row_next_tile, &w_row.add(&pc));
        b.next(&w_row, &go.mux(&io.co, &row_next), Some(&go.or(&wr_)));
        b.next(&w_addr, &go.mux(&io.co, &wr_.mux(&row_next, &w_addr.add(&lit(4))))  , Some(&go.or(&issue)));
        let bias_row = bias.add(&tile_end.mux(&cbase_next, &w_cbase));
        b.next(&w_baddr, &go.mux(&io.bias, &wr_.mux(&bias_row, &w_baddr.add(&lit(4)))), Some(&go.or(&issue)));
        w_tl.walk(b, &go, &tm_in, &tile_end, &nc, r);
        b.next(&w_t, &go.mux(&Expr::zero(tw), &w_t.add(&Expr::lit(tw, 1))), Some(&go.or(&tile_end)));
        b.next(&w_more, &go.or(&w_more.and(&tile_end.and(&w_last_t).not())), None);
    }
    // The write: at issue (no C0), or the cycle after the C0 read.
    let p_valid = b.reg("mma_p_valid_q", 1, 0);
    let p_last = b.reg("mma_p_last_q", 1, 0);
    let p_addr = b.reg_noreset("mma_p_addr_q", sw);
    let p_val = b.reg_noreset("mma_p_value_q", 32);
    let c0_issue = issue.and(&c0);
    b.next(&p_valid, &c0_issue, None);
    b.next(&p_last, &c0_issue.and(&tile_end), None);
    b.next(&p_addr, &w_addr, Some(&c0_issue));
    b.next(&p_val, &value, Some(&c0_issue));
    let c0_word = io.rd_c0.rsp().field("data");
    b.waive_unused(&io.rd_c0.rsp().valid, "the C0 word is offered the cycle after its read is taken");
    // (Without C0 the write is the issue itself: `w_ok`, so that no path runs
    // from the scratchpad's read grant to its write request.)
    b.assign(&io.wr_c.req().valid, &c0.mux(&p_valid, &w_ok));
    b.assign(&io.wr_c.req().field("addr"), &c0.mux(&p_addr, &w_addr));
    b.assign(&io.wr_c.req().field("data"), &c0.mux(&p_val.add(&c0_word), &value));
    b.assign(&io.wr_c.req().field("strb"), &Expr::ones(4));
    b.assign(&io.wr_c.rsp().ready, &Expr::bit(true));
    b.waive_unused(&io.wr_c.rsp().valid, "writes are taken as offered; the response is never waited for");
    b.waive_unused(&io.wr_c.req().ready, "the only writer while an mma runs: taken as offered");
    let w_inc = b.let_("mma_w_inc", &c0.mux(&p_valid.and(&p_last), &tile_end));
    b.next(&wdone, &go.mux(&Expr::zero(tw), &wdone.add(&Expr::lit(tw, 1))), Some(&go.or(&w_inc)));
    // Done when every tile has left the grid and is written.
    let x_all = xdone.add(&x_inc.zext(tw)).eq(&ntiles);
    let w_all = wdone.add(&w_inc.zext(tw)).eq(&ntiles);
    let last_done = b.let_("mma_last_done", &busy.and(&x_all).and(&w_all));
    b.next(&busy, &go.or(&busy.and(&last_done.not())), None);
    let done = b.let_("mma_done", &last_done.or(&started.and(&empty)));
    Engine { busy, started, done }
}
