//! The X stage's decode (docs/cu.md, "Encoding", "Errors"): fields, the
//! checks in their order, the scalar ALU, the next pc, and what the
//! instruction hands to the `cdl` and DMA queues.

use crate::rtl::{select, Expr, ModuleBuilder};
use gpurtl_params::cu::{CuParams, Status};

/// What the executing instruction does (meaningful when `x_valid_q`).
pub struct Decoded {
    /// No error.
    pub ok: Expr,
    /// The error's status (0 when `ok`).
    pub status: Expr,
    /// The block stops here (`end` or an error).
    pub ends: Expr,
    /// The slot may be picked again next cycle.
    pub resumes: Expr,
    pub npc: Expr,
    /// A register write: global index and value.
    pub we: Expr,
    pub wreg: Expr,
    pub wdata: Expr,
    pub go_cdl: Expr,
    pub cdl_dest: Expr,
    pub cdl_n: Expr,
    pub cdl_mem: Expr,
    pub cdl_off: Expr,
    pub go_dma: Expr,
    /// 0 ld, 1 st, 2 act, 3 cmp, 4 exp, 5 mma, 6 tex.
    pub dma_kind: Expr,
    /// cmp/exp: the values of `ra` (S) and `rb` (Q); the element size code.
    pub vec_s: Expr,
    pub vec_q: Expr,
    pub vec_z: Expr,
    /// act: rows and words (the value of `ra`), the pitch in bytes.
    pub act_rows: Expr,
    pub act_words: Expr,
    pub act_p: Expr,
    pub dma_s: Expr,
    pub dma_a: Expr,
    pub dma_stride: Expr,
    pub dma_rows: Expr,
    pub dma_n: Expr,
    pub dma_p: Expr,
    /// mma: `imm` (the C0 mode, pads and bias offset); tex: its kind,
    /// channel, format, modes and counts.
    pub imm: Expr,
    /// tex: the value of `rc` (the list's offset, or `x0 | y0 << 16`); a
    /// sample kind.
    pub tex_c: Expr,
    pub tex_samples: Expr,
}

/// `x << k`, `x >> k` (logical or arithmetic) for a 5-bit `k`: five mux levels.
fn shift(x: &Expr, k: &Expr, left: bool, arith: bool) -> Expr {
    let fill = if arith { x.bit_at(31) } else { Expr::bit(false) };
    let mut v = x.clone();
    for i in 0..5 {
        let s = 1u32 << i;
        let moved = if left {
            Expr::cat(&[v.slice(31 - s, 0), Expr::zero(s)])
        } else {
            Expr::cat(&[fill.repl(s), v.slice(31, s)])
        };
        v = k.bit_at(i).mux(&moved, &v);
    }
    v
}

impl Decoded {
    #[allow(clippy::too_many_arguments)]
    pub fn new<F>(b: &mut ModuleBuilder, p: &CuParams, insn: &Expr, valid: &Expr, rbase: &Expr, rcount: &Expr, pc: &Expr, msize: &Expr, mut read: F) -> Decoded
    where
        F: FnMut(&mut ModuleBuilder, &str, &Expr) -> Expr,
    {
        let pw = p.pc_bits();
        let rbw = p.reg_bits();
        let op = b.let_("x_op", &insn.slice(7, 0));
        let rd = b.let_("x_rd", &insn.slice(15, 8));
        let ra = b.let_("x_ra", &insn.slice(23, 16));
        let rb = b.let_("x_rb", &insn.slice(31, 24));
        let imm = b.let_("x_imm", &insn.slice(63, 32));
        let rc = imm.slice(7, 0);
        let is = |b: &mut ModuleBuilder, name: &str, v: u64| b.let_(&format!("x_is_{name}"), &op.eq_lit(v));
        let in_range = |lo: u64, hi: u64| op.ge(&Expr::lit(8, lo)).and(&op.le(&Expr::lit(8, hi)));
        let alu_r = b.let_("x_is_alu_r", &in_range(0x01, 0x10));
        let alu_i = b.let_("x_is_alu_i", &in_range(0x21, 0x30));
        let li = is(b, "li", 0x40);
        let jmp = is(b, "jmp", 0x41);
        let bnz = is(b, "bnz", 0x42);
        let bz = is(b, "bz", 0x43);
        let lp = is(b, "loop", 0x44);
        let cdl_u = is(b, "cdl_ud", 0x50);
        let cdl_m = is(b, "cdl_mem", 0x51);
        let ld = is(b, "ld", 0x60);
        let st = is(b, "st", 0x61);
        let end = is(b, "end", 0x7F);
        let act = is(b, "act", 0x71);
        let vcmp = is(b, "cmp", 0x72);
        let vexp = is(b, "exp", 0x73);
        let mma = is(b, "mma", 0x70);
        // Without the texture unit (`tex = false`) 0x74 is undefined.
        let tex = if p.tex { is(b, "tex", 0x74) } else { Expr::bit(false) };
        let vec2 = vcmp.or(&vexp);
        let alu = alu_r.or(&alu_i);
        let cdl = cdl_u.or(&cdl_m);
        let dma = ld.or(&st);
        let defined = [&alu, &li, &jmp, &bnz, &bz, &lp, &cdl, &dma, &end, &act, &vec2, &mma, &tex].iter().fold(Expr::bit(false), |a, e| a.or(e));

        // Operands.
        let a = read(b, "ra", &ra);
        let bval = read(b, "rb", &rb);
        let dval = read(b, "rd", &rd);
        let cval = read(b, "rc", &rc);

        // field: unused fields not 0, cdl's n not 1..16.
        let nz = |e: &Expr| e.any();
        let n_bad = rb.eq_lit(0).or(&rb.gt(&Expr::lit(8, 16)));
        let field = b.let_(
            "x_bad_field",
            &alu_r
                .and(&nz(&imm))
                .or(&alu_i.and(&nz(&rb)))
                .or(&li.and(&nz(&ra).or(&nz(&rb))))
                .or(&jmp.and(&nz(&rd).or(&nz(&ra)).or(&nz(&rb))))
                .or(&bnz.or(&bz).and(&nz(&rd).or(&nz(&rb))))
                .or(&lp.and(&nz(&ra).or(&nz(&rb))))
                .or(&cdl_u.and(&nz(&ra)))
                .or(&cdl.and(&n_bad))
                .or(&ld.and(&nz(&imm.slice(15, 9))))
                .or(&st.and(&nz(&imm.slice(15, 8))))
                .or(&act.and(&nz(&rb).or(&nz(&imm.slice(15, 0)))))
                .or(&vec2.and(&nz(&imm.slice(31, 16)).or(&imm.slice(15, 8).gt(&Expr::lit(8, 2)))))
                .or(&mma.and(&imm.slice(9, 8).eq_lit(3).or(&imm.bit_at(15)).or(&imm.slice(9, 8).eq_lit(2).not().and(&nz(&imm.slice(31, 16))))))
                .or(&tex.and(&imm.slice(13, 12).eq_lit(3).or(&imm.slice(15, 14).eq_lit(3)).or(&imm.slice(17, 16).eq_lit(3)).or(&imm.slice(13, 12).eq_lit(2).not().and(&nz(&imm.slice(11, 10))))
                    .or(&imm.slice(9, 8).eq_lit(3).and(&nz(&imm.slice(23, 18))))))
                .or(&end.and(&nz(&rd).or(&nz(&ra)).or(&nz(&rb)).or(&nz(&imm)))),
        );
        // reg: an index the instruction uses is past the block's registers.
        let cw = 10;
        let cnt = rcount.zext(cw);
        let inr = |r: &Expr| r.zext(cw).lt(&cnt);
        let uses_rd = alu.or(&li).or(&lp).or(&dma).or(&act).or(&vec2).or(&mma).or(&tex);
        let uses_ra = alu.or(&bnz).or(&bz).or(&cdl_m).or(&dma).or(&act).or(&vec2).or(&mma).or(&tex);
        let four = dma.or(&vec2).or(&mma).or(&tex);
        let cdl_top_ok = rd.zext(cw).add(&rb.zext(cw)).le(&cnt);
        let regbad = b.let_(
            "x_bad_reg",
            &uses_rd
                .and(&inr(&rd).not())
                .or(&uses_ra.and(&inr(&ra).not()))
                .or(&alu_r.or(&four).and(&inr(&rb).not()))
                .or(&four.and(&inr(&rc).not()))
                .or(&cdl.and(&cdl_top_ok.not())),
        );
        // pc: the next pc past the program store.
        let dec = b.let_("x_rd_dec", &dval.sub(&Expr::lit(32, 1)));
        let taken = b.let_(
            "x_taken",
            &jmp.or(&bnz.and(&a.any())).or(&bz.and(&a.any().not())).or(&lp.and(&dec.any())),
        );
        let target_far = if pw < 32 { imm.slice(31, pw).any() } else { Expr::bit(false) };
        let pcbad = b.let_(
            "x_bad_pc",
            &end.not().and(&taken.mux(&target_far, &pc.eq_lit(p.imem_depth as u64 - 1))),
        );
        let npc = b.let_("x_npc", &taken.mux(&imm.slice(pw - 1, 0), &pc.add(&Expr::lit(pw, 1))));
        // align: cdl's offset.
        let cdl_off = b.let_("x_cdl_off", &cdl_m.mux(&a.add(&imm), &imm));
        let low2 = |e: &Expr| e.slice(1, 0).any();
        let act_pp = imm.slice(31, 16);
        let alignbad = b.let_(
            "x_bad_align",
            &cdl.and(&low2(&cdl_off))
                .or(&ld.and(&imm.bit_at(8)).and(&low2(&dval)))
                .or(&act.and(&low2(&dval).or(&low2(&act_pp))))
                .or(&vec2.or(&mma).and(&low2(&dval).or(&low2(&a)).or(&low2(&bval))))
                .or(&tex.and(&low2(&dval).or(&low2(&a)).or(&imm.slice(9, 8).eq_lit(3).not().and(&low2(&cval))))),
        );
        // smem: the DMA rows outside the share.
        let rows = cval.slice(31, 16);
        let n = cval.slice(15, 0);
        let pitch = b.let_("x_dma_p", &imm.slice(31, 16).any().mux(&imm.slice(31, 16), &n));
        let span = rows.sub(&Expr::lit(16, 1)).zext(32).mul(&pitch.zext(32));
        let end_off = dval.zext(34).add(&span.zext(34)).add(&n.zext(34));
        let nonempty = rows.any().and(&n.any());
        // act: rows x words of int32 at the pitch; cmp/exp: their regions.
        let w40 = |e: &Expr| e.zext(40);
        let size40 = w40(msize);
        // ld ..., zmap: the map's ceil(rows/32) words before s, rows <= kmax.
        let zm_words = rows.zext(17).add(&Expr::lit(17, 31)).slice(16, 5);
        let zmap_bad = ld.and(&imm.bit_at(8)).and(&nonempty).and(
            &w40(&dval).lt(&w40(&zm_words).mul(&Expr::lit(40, 4))).or(&rows.zext(17).gt(&Expr::lit(17, p.kmax as u64))),
        );
        let a_rows = a.slice(31, 16);
        let a_words = a.slice(15, 0);
        let a_p = b.let_("x_act_p", &act_pp.any().mux(&act_pp.zext(32), &Expr::cat(&[a_words.zext(30), Expr::zero(2)])));
        let act_end = w40(&dval).add(&w40(&a_rows.sub(&Expr::lit(16, 1)).zext(32)).mul(&w40(&a_p))).add(&w40(&a_words).mul(&Expr::lit(40, 4)));
        let act_bad = act.and(&a_rows.any()).and(&a_words.any()).and(&act_end.gt(&size40));
        let vn = cval.slice(15, 0);
        let vz = imm.slice(9, 8);
        let nz = b.let_("x_vec_nz", &select(&vz, &[w40(&vn), w40(&vn).mul(&Expr::lit(40, 2)), w40(&vn).mul(&Expr::lit(40, 4)), w40(&vn).mul(&Expr::lit(40, 4))]));
        let round = |e: &Expr, k: u64| e.add(&Expr::lit(40, k - 1)).and(&Expr::lit(40, (1u64 << 40) - k));
        let mask_end = w40(&bval).add(&Expr::lit(40, 4)).add(&round(&w40(&vn), 32).slice(39, 5).zext(40).mul(&Expr::lit(40, 4)));
        let past = |e: &Expr| e.gt(&size40);
        let cmp_bad = vn.any().mux(
            &past(&w40(&a).add(&round(&nz, 8))).or(&past(&w40(&dval).add(&nz))).or(&past(&mask_end)),
            &past(&w40(&bval).add(&Expr::lit(40, 4))),
        );
        let exp_bad = vn.any().and(&past(&w40(&a).add(&round(&nz, 4))).or(&past(&mask_end)).or(&past(&w40(&dval).add(&nz))));
        // mma: TM x PA, K x PB, TM x TN x 4 bytes; K at most kmax.
        let (m_tm, m_tn, m_k) = (cval.slice(7, 0), cval.slice(15, 8), cval.slice(31, 16));
        let m_pa = w40(&m_k).add(&Expr::lit(40, 3)).and(&Expr::lit(40, (1u64 << 40) - 4)).add(&w40(&imm.slice(11, 10)).mul(&Expr::lit(40, 4)));
        let m_pb = w40(&m_tn).add(&Expr::lit(40, 7)).and(&Expr::lit(40, (1u64 << 40) - 8)).add(&w40(&imm.slice(13, 12)).mul(&Expr::lit(40, 4)));
        let m_bias = imm.slice(9, 8).eq_lit(2).and(&past(&w40(&imm.slice(31, 16)).mul(&Expr::lit(40, 4)).add(&w40(&m_tn).mul(&Expr::lit(40, 4)))));
        let m_nonempty = m_tm.any().and(&m_tn.any()).and(&m_k.any());
        let mma_bad = m_nonempty.and(
            &w40(&m_k)
                .gt(&Expr::lit(40, p.kmax as u64))
                .or(&past(&w40(&a).add(&w40(&m_tm).mul(&m_pa))))
                .or(&past(&w40(&bval).add(&w40(&m_k).mul(&m_pb))))
                .or(&past(&w40(&dval).add(&w40(&m_tm).mul(&w40(&m_tn)).mul(&Expr::lit(40, 4)))))
                .or(&m_bias)
                .or(&imm.bit_at(14).and(&w40(&bval).lt(&w40(&m_k.zext(17).add(&Expr::lit(17, 31)).slice(16, 5)).mul(&Expr::lit(40, 4))))),
        );
        // tex: the texture W x H x z at T (ra); samples: the list (rc) and
        // the results; conv: its start, the kernel before T, the output and
        // its overlap with the texture.
        let (tex_bad, t_samples) = if p.tex {
            let (t_w, t_h) = (bval.slice(12, 0).zext(16), bval.slice(28, 16).zext(16));
            let t_fmt = imm.slice(13, 12);
            let t_wh = w40(&t_w).mul(&w40(&t_h));
            let t_bytes = b.let_("x_tex_bytes", &select(&t_fmt, &[t_wh.clone(), t_wh.mul(&Expr::lit(40, 2)), t_wh.mul(&Expr::lit(40, 4)), t_wh.mul(&Expr::lit(40, 4))]));
            let t_end = w40(&a).add(&t_bytes);
            let big = |e: &Expr| e.eq_lit(0).or(&e.gt(&Expr::lit(16, 4096)));
            let t_n = w40(&imm.slice(31, 18));
            let t_nw4 = imm.slice(9, 8).eq_lit(2).or(&t_fmt.eq_lit(2));
            let t_out_s = w40(&dval).add(&t_n.mul(&t_nw4.mux(&Expr::lit(40, 16), &Expr::lit(40, 4))));
            let t_samples = b.let_("x_tex_samples", &imm.slice(9, 8).eq_lit(3).not());
            let samp_bad = past(&w40(&cval).add(&t_n.mul(&Expr::lit(40, 8)))).or(&past(&t_out_s));
            let one = |e: Expr| e.zext(40).add(&Expr::lit(40, 1));
            let t_kk = one(bval.slice(15, 13)).mul(&one(bval.slice(31, 29)));
            let t_out_c = w40(&dval).add(&one(imm.slice(27, 24)).mul(&one(imm.slice(31, 28))).mul(&Expr::lit(40, 16)));
            let conv_bad = cval
                .slice(15, 0)
                .ge(&t_w)
                .or(&cval.slice(31, 16).ge(&t_h))
                .or(&w40(&a).lt(&t_kk))
                .or(&past(&t_out_c))
                .or(&w40(&dval).lt(&t_end).and(&w40(&a).lt(&t_out_c)));
            let tex_bad = big(&t_w).or(&big(&t_h)).or(&past(&t_end)).or(&t_samples.mux(&samp_bad, &conv_bad));
            (tex_bad, t_samples)
        } else {
            (Expr::bit(false), Expr::bit(false))
        };
        let smembad = b.let_(
            "x_bad_smem",
            &dma.and(&nonempty)
                .and(&end_off.gt(&msize.zext(34)))
                .or(&zmap_bad)
                .or(&act_bad)
                .or(&vcmp.and(&cmp_bad))
                .or(&vexp.and(&exp_bad))
                .or(&mma.and(&mma_bad))
                .or(&tex.and(&tex_bad)),
        );

        let code = |s: Status| Expr::lit(4, s.code());
        let status = defined.not().mux(
            &code(Status::Opcode),
            &field.mux(
                &code(Status::Field),
                &regbad.mux(
                    &code(Status::Reg),
                    &pcbad.mux(&code(Status::Pc), &alignbad.mux(&code(Status::Align), &smembad.mux(&code(Status::Smem), &code(Status::Ok)))),
                ),
            ),
        );
        let status = b.let_("x_status", &status);
        let ok = b.let_("x_ok", &status.eq_lit(0));

        // The ALU: results by op mod 32 (1..16).
        let bo = alu_i.mux(&imm, &bval);
        let flip = Expr::lit(32, 0x8000_0000);
        let slt = a.xor(&flip).lt(&bo.xor(&flip));
        let sltu = a.lt(&bo);
        let k = bo.slice(4, 0);
        let results = vec![
            Expr::zero(32),
            a.add(&bo),
            a.sub(&bo),
            a.mul(&bo),
            shift(&a, &k, true, false),
            shift(&a, &k, false, false),
            shift(&a, &k, false, true),
            a.and(&bo),
            a.or(&bo),
            a.xor(&bo),
            slt.mux(&a, &bo),
            slt.mux(&bo, &a),
            sltu.mux(&a, &bo),
            sltu.mux(&bo, &a),
            slt.zext(32),
            sltu.zext(32),
            a.eq(&bo).zext(32),
        ];
        let alu_out = b.let_("x_alu", &select(&op.slice(4, 0), &results));
        let wdata = b.let_("x_wdata", &alu.mux(&alu_out, &li.mux(&imm, &dec)));
        let gidx = |r: &Expr| rbase.add(&r.zext(rbase.width().max(8)).slice(rbase.width() - 1, 0)).slice(rbw - 1, 0);
        let good = valid.and(&ok);
        Decoded {
            ok: ok.clone(),
            status,
            ends: valid.and(&ok.not().or(&end)),
            resumes: good.and(&end.or(&cdl).or(&dma).or(&act).or(&vec2).or(&mma).or(&tex).not()),
            npc,
            we: b.let_("x_we", &good.and(&alu.or(&li).or(&lp))),
            wreg: b.let_("x_wreg", &gidx(&rd)),
            wdata,
            go_cdl: b.let_("x_go_cdl", &good.and(&cdl)),
            cdl_dest: gidx(&rd),
            cdl_n: rb.slice(4, 0),
            cdl_mem: cdl_m,
            cdl_off,
            go_dma: b.let_("x_go_dma", &good.and(&dma.or(&act).or(&vec2).or(&mma).or(&tex))),
            dma_kind: b.let_(
                "x_dma_kind",
                &st.mux(
                    &Expr::lit(3, 1),
                    &act.mux(&Expr::lit(3, 2), &vcmp.mux(&Expr::lit(3, 3), &vexp.mux(&Expr::lit(3, 4), &mma.mux(&Expr::lit(3, 5), &tex.mux(&Expr::lit(3, 6), &Expr::lit(3, 0)))))),
                ),
            ),
            vec_s: a.clone(),
            vec_q: bval.clone(),
            vec_z: vz,
            act_rows: a_rows,
            act_words: a_words,
            act_p: a_p,
            dma_s: dval,
            dma_a: a,
            dma_stride: bval,
            dma_rows: rows,
            dma_n: n,
            dma_p: pitch,
            imm,
            tex_c: cval,
            tex_samples: t_samples,
        }
    }
}
