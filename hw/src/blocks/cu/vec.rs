//! The vector operations on the DMA queue (docs/cu.md, "`act`", "`cmp`,
//! `exp`" and "Vector operations"): a state machine over the scratchpad's
//! second read and write ports and the `compress` block's vector unit
//! (width 64, latency 1). Each state is one cycle of a step: READ (request,
//! then take the word), OP (offer the compress unit, then take its result),
//! WRITE (one word, bytes strobed).

use crate::rtl::bus::Bus;
use crate::rtl::{popcount, select, Expr, ModuleBuilder, Stream};
use gpurtl_params::cu::CuParams;

/// The operation at the head of the DMA queue (when its kind is a vector
/// one) and the ports the machine drives.
pub struct Io {
    pub start: Expr,
    /// 2 act, 3 cmp, 4 exp (3 bits).
    pub kind: Expr,
    /// act: the tile's first word; cmp/exp: `D` (scratchpad addresses).
    pub d: Expr,
    pub s: Expr,
    pub q: Expr,
    /// act: rows.
    pub rows: Expr,
    /// act: words a row; cmp/exp: `n` (16 bits).
    pub n: Expr,
    /// act: the pitch in bytes (32 bits).
    pub p: Expr,
    /// cmp/exp: the element size code (0, 1, 2).
    pub z: Expr,
    pub spm_rd: Bus,
    pub spm_wr: Bus,
    /// The compress unit's `in` and `out` streams.
    pub cin: Stream,
    pub cout: Stream,
}

pub struct Engine {
    pub busy: Expr,
    /// The head operation starts in this cycle.
    pub started: Expr,
    /// An operation is done in this cycle (an empty one: in its start cycle).
    pub done: Expr,
}

const SB: u32 = 5;
const IDLE: u64 = 0;
const ACT_RD: u64 = 1;
const ACT_RSP: u64 = 2;
const ACT_WR: u64 = 3;
const CMP_RDL: u64 = 4;
const CMP_RSPL: u64 = 5;
const CMP_RDH: u64 = 6;
const CMP_RSPH: u64 = 7;
const CMP_OP: u64 = 8;
const CMP_RES: u64 = 9;
const CMP_WD: u64 = 10;
const CMP_WM: u64 = 11;
const CMP_WDP: u64 = 12;
const CMP_WMP: u64 = 13;
const CMP_WC: u64 = 14;
const EXP_MRD: u64 = 15;
const EXP_MRSP: u64 = 16;
const EXP_DRD: u64 = 17;
const EXP_DRSP: u64 = 18;
const EXP_OP: u64 = 19;
const EXP_RES: u64 = 20;
const EXP_WLO: u64 = 21;
const EXP_WHI: u64 = 22;

fn lit(x: u64) -> Expr {
    Expr::lit(32, x)
}
fn s(x: u64) -> Expr {
    Expr::lit(SB, x)
}

/// `x << (unit * k)` for `k` in `0 .. steps`, `width` bits wide (`k` an
/// expression; larger `k` give zero).
fn shl(x: &Expr, k: &Expr, unit: u32, steps: u32, width: u32) -> Expr {
    let xs = x.zext(width);
    let opts: Vec<Expr> = (0..steps)
        .map(|i| match unit * i {
            0 => xs.clone(),
            sh if sh >= width => Expr::zero(width),
            sh => Expr::cat(&[xs.slice(width - 1 - sh, 0), Expr::zero(sh)]),
        })
        .collect();
    let sel = k.slice(5, 0);
    let inside = k.lt(&lit(steps as u64));
    inside.mux(&select(&sel, &opts), &Expr::zero(width))
}
/// `x >> (unit * k)` for `k` in `0 .. steps`.
fn shr(x: &Expr, k: &Expr, unit: u32, steps: u32) -> Expr {
    let w = x.width();
    let opts: Vec<Expr> = (0..steps)
        .map(|i| match unit * i {
            0 => x.clone(),
            sh if sh >= w => Expr::zero(w),
            sh => x.slice(w - 1, sh).zext(w),
        })
        .collect();
    let sel = k.slice(5, 0);
    k.lt(&lit(steps as u64)).mux(&select(&sel, &opts), &Expr::zero(w))
}
/// Byte strobes for the low `n` bytes of a word (`n` 32-bit, any size).
fn strobes(n: &Expr) -> Expr {
    Expr::cat_lanes(&(0..4).map(|i| lit(i).lt(n)).collect::<Vec<_>>())
}
/// `x * z` bytes for the element size code `zc` (x small).
fn times_z(x: &Expr, zc: &Expr) -> Expr {
    select(zc, &[x.clone(), Expr::cat(&[x.slice(30, 0), Expr::zero(1)]), Expr::cat(&[x.slice(29, 0), Expr::zero(2)]), x.clone()])
}

pub fn engine(b: &mut ModuleBuilder, p: &CuParams, io: Io) -> Engine {
    let sw = p.smem_addr_bits();
    let st = b.reg("vec_state_q", SB, IDLE);
    let is = |x: u64| st.eq_lit(x);
    let kind = b.reg_noreset("vec_kind_q", 3);
    let zc = b.reg_noreset("vec_z_q", 2);
    let busy = b.let_("vec_busy", &st.eq_lit(IDLE).not());
    let started = b.let_("vec_start", &io.start.and(&busy.not()));
    let empty = io.kind.eq_lit(2).and(&io.rows.eq_lit(0).or(&io.n.eq_lit(0))).or(&io.kind.eq_lit(4).and(&io.n.eq_lit(0)));
    let go = b.let_("vec_go", &started.and(&empty.not()));
    b.next(&kind, &io.kind, Some(&go));
    b.next(&zc, &io.z, Some(&go));
    let cmp = kind.eq_lit(3);
    let exp = kind.eq_lit(4);
    let per_vec = select(&zc, &[lit(8), lit(4), lit(2), lit(2)]);

    let r32 = |b: &mut ModuleBuilder, n: &str| b.reg_noreset(&format!("vec_{n}_q"), 32);
    let rows = r32(b, "rows");
    let words = r32(b, "words");
    let left = r32(b, "left"); // act: words left in the row; cmp/exp: elements left
    let pitch = r32(b, "pitch");
    let row = r32(b, "row"); // act: the row's first word
    let addr = r32(b, "addr"); // act: the word; cmp: S + 8v; exp: the next packed word
    let daddr = r32(b, "daddr"); // cmp: the next packed word; exp: D + 8v
    let maddr = r32(b, "maddr"); // the next mask word: Q + 4 + 4m
    let qaddr = r32(b, "qaddr");
    let total = r32(b, "total"); // exp: n*z - 8v
    let lo = r32(b, "lo");
    let hi = r32(b, "hi");
    let count = r32(b, "count");
    let accn = r32(b, "accn"); // bytes in `acc`
    let mbits = r32(b, "mbits"); // bits in `mbuf`
    let res = b.reg_noreset("vec_res_q", 64);
    let acc = b.reg_noreset("vec_acc_q", 96);
    let mbuf = b.reg_noreset("vec_mbuf_q", 40);

    // This vector: elements m_v, exp's mask bits and packed bytes.
    let m_of = |left: &Expr| left.lt(&per_vec).mux(left, &per_vec);
    let vmask_of = |mbuf: &Expr, m: &Expr| Expr::cat_lanes(&(0..8).map(|i| mbuf.bit_at(i).and(&lit(i as u64).lt(m))).collect::<Vec<_>>());
    let cbytes_of = |mbuf: &Expr, m: &Expr| times_z(&popcount(&(0..8).map(|i| vmask_of(mbuf, m).bit_at(i)).collect::<Vec<_>>(), 32), &zc);
    let m_v = b.let_("vec_m", &m_of(&left));
    let vmask = b.let_("vec_vmask", &vmask_of(&mbuf, &m_v));
    let cbytes = b.let_("vec_c_bytes", &cbytes_of(&mbuf, &m_v));

    // ---- the compress unit ----
    let m_bytes = times_z(&m_v, &zc);
    let keep: Vec<Expr> = (0..8).map(|i| lit(i).lt(&m_bytes).repl(8)).collect();
    let cmp_src = Expr::cat(&[hi.clone(), lo.clone()]).and(&Expr::cat_lanes(&keep));
    b.assign(&io.cin.valid, &is(CMP_OP).or(&is(EXP_OP)));
    b.assign(&io.cin.field("op"), &exp);
    b.assign(&io.cin.field("esize"), &zc);
    b.assign(&io.cin.field("mask_gen"), &cmp);
    b.assign(&io.cin.field("mask"), &vmask);
    b.assign(&io.cin.field("zeroing"), &Expr::bit(true));
    b.assign(&io.cin.field("src"), &cmp.mux(&cmp_src, &acc.slice(63, 0)));
    b.assign(&io.cin.field("old"), &Expr::zero(64));
    let taking = is(CMP_RES).or(&is(EXP_RES));
    b.assign(&io.cout.ready, &taking);
    let r_dst = io.cout.field("dst");
    let r_mask = io.cout.field("mask");
    let r_count = io.cout.field("count").zext(32);
    b.waive_unused(&io.cin.ready, "the unit is empty whenever it is offered an operation (one at a time)");
    b.waive_unused(&io.cout.valid, "the result is offered in the cycle after the operation (latency 1)");

    // ---- READ ----
    let rd_states = [ACT_RD, CMP_RDL, CMP_RDH, EXP_MRD, EXP_DRD];
    let rsp_states = [ACT_RSP, CMP_RSPL, CMP_RSPH, EXP_MRSP, EXP_DRSP];
    let any_of = |xs: &[u64]| xs.iter().fold(Expr::bit(false), |a, x| a.or(&is(*x)));
    let rd_addr = is(CMP_RDH).mux(&addr.add(&lit(4)), &is(EXP_MRD).mux(&maddr, &addr));
    b.assign(&io.spm_rd.req().valid, &any_of(&rd_states));
    b.assign(&io.spm_rd.req().field("addr"), &rd_addr.slice(sw - 1, 0));
    b.assign(&io.spm_rd.rsp().ready, &any_of(&rsp_states));
    let rdata = io.spm_rd.rsp().field("data");
    let rd_taken = b.let_("vec_rd_taken", &io.spm_rd.req().valid.and(&io.spm_rd.req().ready));
    let rsp_taken = b.let_("vec_rsp_taken", &io.spm_rd.rsp().ready.and(&io.spm_rd.rsp().valid));

    // ---- WRITE ----
    let wr_states = [ACT_WR, CMP_WD, CMP_WM, CMP_WDP, CMP_WMP, CMP_WC, EXP_WLO, EXP_WHI];
    let relu = lo.bit_at(31).mux(&lit(0), &lo);
    let mask_bytes = mbits.add(&lit(7)).slice(31, 3).zext(32);
    let cases = [
        (ACT_WR, addr.clone(), relu, Expr::ones(4)),
        (CMP_WD, daddr.clone(), acc.slice(31, 0), Expr::ones(4)),
        (CMP_WM, maddr.clone(), mbuf.slice(31, 0), Expr::ones(4)),
        (CMP_WDP, daddr.clone(), acc.slice(31, 0), strobes(&accn)),
        (CMP_WMP, maddr.clone(), mbuf.slice(31, 0), strobes(&mask_bytes)),
        (CMP_WC, qaddr.clone(), count.clone(), Expr::ones(4)),
        (EXP_WLO, daddr.clone(), res.slice(31, 0), strobes(&total)),
        (EXP_WHI, daddr.add(&lit(4)), res.slice(63, 32), strobes(&total.sub(&lit(4)))),
    ];
    // (state, address, data, strobes) of each WRITE; the state's own wins.
    type WriteCase = (u64, Expr, Expr, Expr);
    let pickw = |f: fn(&WriteCase) -> Expr| cases.iter().rev().fold(Expr::zero(f(&cases[0]).width()), |acc, c| is(c.0).mux(&f(c), &acc));
    b.assign(&io.spm_wr.req().valid, &any_of(&wr_states));
    b.assign(&io.spm_wr.req().field("addr"), &pickw(|c| c.1.clone()).slice(sw - 1, 0));
    b.assign(&io.spm_wr.req().field("data"), &pickw(|c| c.2.clone()));
    b.assign(&io.spm_wr.req().field("strb"), &pickw(|c| c.3.clone()));
    b.assign(&io.spm_wr.rsp().ready, &Expr::bit(true));
    b.waive_unused(&io.spm_wr.rsp().valid, "a scratchpad write is done once taken (docs/scratchpad.md)");
    let wr_taken = b.let_("vec_wr_taken", &io.spm_wr.req().valid.and(&io.spm_wr.req().ready));

    // ---- the next state ----
    // cmp after a step that may end a vector: whole packed words, the mask
    // word, the next vector, or the closing writes.
    let cmp_sel = |acc_n: &Expr, mb: &Expr, left: &Expr| -> Expr {
        let closing = acc_n.any().mux(&s(CMP_WDP), &mb.any().mux(&s(CMP_WMP), &s(CMP_WC)));
        acc_n.ge(&lit(4)).mux(&s(CMP_WD), &mb.eq_lit(32).mux(&s(CMP_WM), &left.any().mux(&s(CMP_RDL), &closing)))
    };
    // exp before a vector's OP: a mask word, packed words, or the OP.
    let exp_sel = |left: &Expr, mheld: &Expr, mbuf: &Expr, accn: &Expr| -> Expr {
        let m = m_of(left);
        let need = cbytes_of(mbuf, &m);
        left.any().not().mux(&s(IDLE), &mheld.lt(&m).mux(&s(EXP_MRD), &accn.lt(&need).mux(&s(EXP_DRD), &s(EXP_OP))))
    };
    let mbuf_read = mbuf.or(&shl(&rdata, &mbits, 1, 8, 40));
    let acc_read = acc.or(&shl(&rdata, &accn, 8, 8, 96));
    let c_res = times_z(&r_count, &zc);
    let left_res = left.sub(&m_v);
    let act_last = left.eq_lit(1).and(&rows.eq_lit(1));
    let first = io.kind.eq_lit(2).mux(&s(ACT_RD), &io.kind.eq_lit(3).mux(&io.n.eq_lit(0).mux(&s(CMP_WC), &s(CMP_RDL)), &s(EXP_MRD)));
    let exp_after_vec = exp_sel(&left, &mbits, &mbuf, &accn);
    let steps: Vec<(Expr, Expr)> = vec![
        (go.clone(), first),
        (is(ACT_RD).and(&rd_taken), s(ACT_RSP)),
        (is(ACT_RSP).and(&rsp_taken), s(ACT_WR)),
        (is(ACT_WR).and(&wr_taken), act_last.mux(&s(IDLE), &s(ACT_RD))),
        (is(CMP_RDL).and(&rd_taken), s(CMP_RSPL)),
        (is(CMP_RSPL).and(&rsp_taken), s(CMP_RDH)),
        (is(CMP_RDH).and(&rd_taken), s(CMP_RSPH)),
        (is(CMP_RSPH).and(&rsp_taken), s(CMP_OP)),
        (is(CMP_OP), s(CMP_RES)),
        (is(CMP_RES), cmp_sel(&accn.add(&c_res), &mbits.add(&m_v), &left_res)),
        (is(CMP_WD).and(&wr_taken), cmp_sel(&accn.sub(&lit(4)), &mbits, &left)),
        (is(CMP_WM).and(&wr_taken), cmp_sel(&accn, &lit(0), &left)),
        (is(CMP_WDP).and(&wr_taken), mbits.any().mux(&s(CMP_WMP), &s(CMP_WC))),
        (is(CMP_WMP).and(&wr_taken), s(CMP_WC)),
        (is(CMP_WC).and(&wr_taken), s(IDLE)),
        (is(EXP_MRD).and(&rd_taken), s(EXP_MRSP)),
        (is(EXP_MRSP).and(&rsp_taken), exp_sel(&left, &mbits.add(&lit(32)), &mbuf_read, &accn)),
        (is(EXP_DRD).and(&rd_taken), s(EXP_DRSP)),
        (is(EXP_DRSP).and(&rsp_taken), exp_sel(&left, &mbits, &mbuf, &accn.add(&lit(4)))),
        (is(EXP_OP), s(EXP_RES)),
        (is(EXP_RES), s(EXP_WLO)),
        (is(EXP_WLO).and(&wr_taken), total.gt(&lit(4)).mux(&s(EXP_WHI), &exp_after_vec)),
        (is(EXP_WHI).and(&wr_taken), exp_after_vec.clone()),
    ];
    let next = steps.iter().rev().fold(st.clone(), |acc, (c, v)| c.mux(v, &acc));
    let next = b.let_("vec_next", &next);
    b.next(&st, &next, None);
    let done = b.let_("vec_done", &started.and(&empty).or(&busy.and(&next.eq_lit(IDLE))));

    // ---- registers ----
    let upd = |b: &mut ModuleBuilder, r: &Expr, cases: Vec<(Expr, Expr)>| {
        let en = cases.iter().fold(Expr::bit(false), |a, c| a.or(&c.0));
        let d = cases.iter().rev().fold(r.clone(), |acc, (c, v)| c.mux(v, &acc));
        b.next(r, &d, Some(&en));
    };
    let n32 = io.n.zext(32);
    let d32 = io.d.zext(32);
    let s32 = io.s.zext(32);
    let q32 = io.q.zext(32);
    let is_act = io.kind.eq_lit(2);
    let is_exp = io.kind.eq_lit(4);
    let act_next_row = is(ACT_WR).and(&wr_taken).and(&left.eq_lit(1));
    let act_next_word = is(ACT_WR).and(&wr_taken).and(&left.eq_lit(1).not());
    let cmp_res = is(CMP_RES);
    let exp_res = is(EXP_RES);
    let exp_vec_end = is(EXP_WLO).and(&wr_taken).and(&total.gt(&lit(4)).not()).or(&is(EXP_WHI).and(&wr_taken));
    upd(b, &rows, vec![(go.clone(), io.rows.zext(32)), (act_next_row.clone(), rows.sub(&lit(1)))]);
    upd(b, &words, vec![(go.clone(), n32.clone())]);
    upd(b, &pitch, vec![(go.clone(), io.p.clone())]);
    upd(b, &left, vec![(go.clone(), n32.clone()), (act_next_row.clone(), words.clone()), (act_next_word.clone(), left.sub(&lit(1))), (cmp_res.or(&exp_res), left_res.clone())]);
    upd(b, &row, vec![(go.clone(), d32.clone()), (act_next_row.clone(), row.add(&pitch))]);
    upd(
        b,
        &addr,
        vec![
            (go.clone(), is_act.mux(&d32, &s32)),
            (act_next_row.clone(), row.add(&pitch)),
            (act_next_word.clone(), addr.add(&lit(4))),
            (cmp_res.clone(), addr.add(&lit(8))),
            (is(EXP_DRSP).and(&rsp_taken), addr.add(&lit(4))),
        ],
    );
    upd(b, &daddr, vec![(go.clone(), d32.clone()), (is(CMP_WD).and(&wr_taken), daddr.add(&lit(4))), (exp_vec_end.clone(), daddr.add(&lit(8)))]);
    upd(b, &maddr, vec![(go.clone(), q32.add(&lit(4))), (is(CMP_WM).and(&wr_taken), maddr.add(&lit(4))), (is(EXP_MRSP).and(&rsp_taken), maddr.add(&lit(4)))]);
    upd(b, &qaddr, vec![(go.clone(), q32.clone())]);
    let nz = times_z(&n32, &io.z);
    upd(b, &total, vec![(go.clone(), nz), (exp_vec_end.clone(), total.sub(&lit(8)))]);
    upd(b, &lo, vec![(is(ACT_RSP).or(&is(CMP_RSPL)).and(&rsp_taken), rdata.clone())]);
    upd(b, &hi, vec![(is(CMP_RSPH).and(&rsp_taken), rdata.clone())]);
    upd(b, &count, vec![(go.clone(), lit(0)), (cmp_res.clone(), count.add(&r_count))]);
    upd(b, &res, vec![(exp_res.clone(), r_dst.clone())]);
    upd(
        b,
        &accn,
        vec![
            (go.clone(), lit(0)),
            (cmp_res.clone(), accn.add(&c_res)),
            (is(CMP_WD).and(&wr_taken), accn.sub(&lit(4))),
            (is(EXP_DRSP).and(&rsp_taken), accn.add(&lit(4))),
            (exp_res.clone(), accn.sub(&cbytes)),
        ],
    );
    upd(
        b,
        &acc,
        vec![
            (go.clone(), Expr::zero(96)),
            (cmp_res.clone(), acc.or(&shl(&r_dst, &accn, 8, 4, 96))),
            (is(CMP_WD).and(&wr_taken), shr(&acc, &lit(4), 8, 5)),
            (is(EXP_DRSP).and(&rsp_taken), acc_read),
            (exp_res.clone(), shr(&acc, &cbytes, 8, 9)),
        ],
    );
    upd(b, &mbits, vec![(go.clone(), lit(0)), (cmp_res.clone(), mbits.add(&m_v)), (is(CMP_WM).and(&wr_taken), lit(0)), (is(EXP_MRSP).and(&rsp_taken), mbits.add(&lit(32))), (exp_res.clone(), mbits.sub(&m_v))]);
    upd(
        b,
        &mbuf,
        vec![
            (go.clone(), Expr::zero(40)),
            (cmp_res.clone(), mbuf.or(&shl(&r_mask, &mbits, 1, 33, 40))),
            (is(CMP_WM).and(&wr_taken), Expr::zero(40)),
            (is(EXP_MRSP).and(&rsp_taken), mbuf_read),
            (exp_res.clone(), shr(&mbuf, &m_v, 1, 9)),
        ],
    );
    let _ = is_exp;
    Engine { busy, started, done }
}
