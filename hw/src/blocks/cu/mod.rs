//! The compute unit (docs/cu.md): resident blocks in slots, a program store
//! per slot, one instruction picked a cycle in round-robin order and executed
//! the next (its X cycle), `cdl` on the `cbload` block's hardware, `ld`/`st`
//! on one 2-D DMA engine (`dma.rs`) over the scratchpad.
//!
//! Rooms: `mod.rs` (ports, slots, dispatch, program loads, issue, execute,
//! completion, `cdl`), `decode.rs` (fields, checks, the scalar ALU),
//! `dma.rs` (the DMA engine and its byte aligner), `vec.rs` (`act`, `cmp`,
//! `exp`), `mma.rs` (the tile sequencer on the systolic grid), `tex.rs`
//! (`tex` on the texture unit).

mod decode;
mod dma;
mod mma;
mod tex;
mod vec;

use crate::rtl::bus::{Native, Role};
use crate::rtl::pipe::shift_queue;
use crate::rtl::scratchpad::{scratchpad, Shape};
use super::memif::{axi4_top, Kind, Part, Source};
use crate::rtl::{arbiter::round_robin, bits_for, lowest_bit, select, Axi as AxiShape, BusKind, Expr, ModuleBuilder, RamRead, RamWrite, RtlError};
use gpurtl_params::MemIf;
use crate::Design;
use decode::Decoded;
use gpurtl_params::cu::{CuParams, Status};

/// Name of the top module.
pub const TOP: &str = "gpurtl_cu";

/// One-hot of `n` bits from an index.
fn onehot(idx: &Expr, n: u32) -> Vec<Expr> {
    (0..n).map(|i| idx.eq_lit(i as u64)).collect()
}

pub fn build(p: &CuParams) -> Result<Design, RtlError> {
    match p.mem_if {
        MemIf::Native => Ok(Design::of(unit(p, TOP)?, p)),
        MemIf::Axi4 => {
            let core = Design::of(unit(p, &format!("{TOP}_core"))?, p);
            let same = || -> Box<dyn Fn(&Expr) -> Expr> { Box::new(|a: &Expr| a.clone()) };
            let o = p.max_outstanding;
            let sources = vec![
                Source { port: "ifetch".into(), kind: Kind::Burst { chunk: ifetch_chunk(p, p.axi_bits) }, addr: same() },
                Source { port: "cdl".into(), kind: Kind::Read { credits: o }, addr: same() },
                Source { port: "dma_rd".into(), kind: Kind::Read { credits: o }, addr: same() },
                Source { port: "dma_wr".into(), kind: Kind::Write { outstanding: o }, addr: same() },
            ];
            let part = Part { design: &core, inst: "u_core", prefix: "", sources, busy: None };
            let doc = [
                "Compute unit (gpurtl block `cu`) with mem_if=axi4: program loads, cdl, ld and st through an arbiter and its bridge".to_string(),
                format!("to one {}-bit AXI4 master (docs/memory.md, docs/cu.md).", p.axi_bits),
            ];
            let b = axi4_top(TOP, &doc, &[part], AxiShape { addr_bits: 32, data_bits: p.axi_bits, id_bits: 1 })?;
            Ok(Design::of(b.finish()?, p))
        }
    }
}

/// The most AXI beats of one program-load burst with `mem_if = axi4`
/// (docs/memory.md, "Sources of another width").
pub const IFETCH_CHUNK: u32 = 16;

/// The AXI beats of one program-load burst on a `data_bits` port: 16, or
/// fewer when the whole program store is fewer.
pub fn ifetch_chunk(p: &CuParams, data_bits: u32) -> u32 {
    IFETCH_CHUNK.min(p.imem_depth * 64 / data_bits)
}

fn unit(p: &CuParams, name: &str) -> Result<crate::rtl::Module, RtlError> {
    let ns = p.slots;
    let sb = p.slot_bits();
    let rbw = p.reg_bits();
    let rcw = rbw + 1;
    let pw = p.pc_bits();
    let sw = p.smem_addr_bits();
    let sfw = p.smem_field_bits();
    let depth = p.imem_depth;
    let cbp = p.cbload();

    let mut b = ModuleBuilder::new(name);
    b.doc("Compute unit (gpurtl block `cu`): resident thread blocks run a kernel's 64-bit instructions, interleaved.");
    b.doc(format!(
        "{} slot(s), {} x 32-bit registers, {} instructions a slot, scratchpad {} bank(s) x {} x 32 bits, {} reads in flight.",
        ns, p.regs, depth, p.banks, p.words, p.max_outstanding
    ));
    b.doc("Instruction set, errors and cycle timing: docs/cu.md.");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");

    // ---------------- ports ----------------
    let dsp = b.stream_in(
        "dsp",
        "a block is dispatched",
        "a slot is free and takes it",
        &[
            ("prog", 32, "the program's byte address (a multiple of 256)"),
            ("x", 16, "block id x"),
            ("y", 16, "block id y"),
            ("z", 16, "block id z"),
            ("user", 512, "user data: dword i in bits 32i+31..32i"),
            ("smem_base", sfw, "the block's scratchpad share: first byte"),
            ("smem_size", sfw, "the block's scratchpad share: bytes"),
            ("reg_base", rcw, "the block's first register in the register file"),
            ("reg_count", rcw, "the block's registers"),
            ("tag", p.tag_bits, "returned with the completion"),
        ],
    );
    let cpl = b.stream_out(
        "cpl",
        "a block is complete",
        "the completion is taken (the slot is free from the next cycle)",
        &[
            ("tag", p.tag_bits, "the block's dispatch tag"),
            ("slot", sb, "the slot it ran in"),
            ("x", 16, "block id x"),
            ("y", 16, "block id y"),
            ("z", 16, "block id z"),
            ("status", 4, "0 ok, 1 opcode, 2 field, 3 reg, 4 pc, 5 align, 6 smem, 7 dispatch"),
            ("pc", pw, "the pc of the instruction that ended the block"),
        ],
    );
    let ifetch = b.read_port("ifetch", Role::Master, Native { addr_bits: 32, data_bits: 64, len_bits: pw, tag_bits: 0 });
    let cdl_port = b.read_port("cdl", Role::Master, Native { addr_bits: 32, data_bits: 32, len_bits: 0, tag_bits: 0 });
    let dma_rd = b.read_port("dma_rd", Role::Master, Native { addr_bits: 32, data_bits: 32, len_bits: 0, tag_bits: 0 });
    let dma_wr = b.write_port("dma_wr", Role::Master, Native { addr_bits: 32, data_bits: 32, len_bits: 0, tag_bits: 0 });
    let retire_valid = b.output("retire_valid_o", 1, "an instruction executes in this cycle");
    let retire_slot = b.output("retire_slot_o", sb, "its slot");
    let retire_pc = b.output("retire_pc_o", pw, "its pc");
    let retire_insn = b.output("retire_insn_o", 64, "its encoding");
    let tex_fetch_o = b.output("tex_fetch_o", 1, "a texel read of tex is taken by the scratchpad in this cycle");

    // ---------------- start: the cbload's view table ----------------
    let init_n = 2 * (ns as u64 + 1);
    let iw = bits_for(init_n);
    let init = b.reg("init_q", iw, 0);
    let init_busy = b.let_("init_busy", &init.lt(&Expr::lit(iw, init_n)));
    b.next(&init, &init.add(&Expr::lit(iw, 1)), Some(&init_busy));
    // View k < slots: slot k's user data at 2^32 + 64k, 64 bytes; view
    // `slots`: the memory, base 0, 2^32 bytes.
    let cfg_values: Vec<Expr> = (0..=ns as u64)
        .flat_map(|k| {
            if k < ns as u64 {
                [Expr::lit(33, (1u64 << 32) + 64 * k), Expr::lit(33, 64)]
            } else {
                [Expr::lit(33, 0), Expr::lit(33, 1u64 << 32)]
            }
        })
        .collect();

    // ---------------- slot state ----------------
    let busy: Vec<Expr> = (0..ns).map(|s| b.reg(&format!("s{s}_busy_q"), 1, 0)).collect();
    let run: Vec<Expr> = (0..ns).map(|s| b.reg(&format!("s{s}_run_q"), 1, 0)).collect();
    let done: Vec<Expr> = (0..ns).map(|s| b.reg(&format!("s{s}_done_q"), 1, 0)).collect();
    let progv: Vec<Expr> = (0..ns).map(|s| b.reg(&format!("s{s}_progv_q"), 1, 0)).collect();
    let regn = |b: &mut ModuleBuilder, f: &str, w: u32| -> Vec<Expr> { (0..ns).map(|s| b.reg_noreset(&format!("s{s}_{f}_q"), w)).collect() };
    let prog = regn(&mut b, "prog", 32);
    let pc = regn(&mut b, "pc", pw);
    let status = regn(&mut b, "status", 4);
    let cpc = regn(&mut b, "cpc", pw);
    let tag = regn(&mut b, "tag", p.tag_bits);
    let bx = regn(&mut b, "x", 16);
    let by = regn(&mut b, "y", 16);
    let bz = regn(&mut b, "z", 16);
    let user = regn(&mut b, "user", 512);
    let rbase = regn(&mut b, "reg_base", rcw);
    let rcount = regn(&mut b, "reg_count", rcw);
    let mbase = regn(&mut b, "smem_base", sfw);
    let msize = regn(&mut b, "smem_size", sfw);

    // ---------------- dispatch ----------------
    let free_bits = b.let_("dsp_free", &Expr::cat_lanes(&busy).not());
    let dsp_slot_oh = b.let_("dsp_slot_oh", &lowest_bit(&free_bits));
    b.assign(&dsp.ready, &init_busy.not().and(&free_bits.any()));
    let dsp_fire = b.let_("dsp_fire", &dsp.valid.and(&dsp.ready));
    let [d_prog, d_x, d_y, d_z, d_user, d_mbase, d_msize, d_rbase, d_rcount, d_tag] =
        dsp.get(["prog", "x", "y", "z", "user", "smem_base", "smem_size", "reg_base", "reg_count", "tag"]);
    let d_bad = b.let_(
        "dsp_bad",
        &d_rcount
            .lt(&Expr::lit(rcw, 3))
            .or(&d_rbase.zext(rcw + 1).add(&d_rcount.zext(rcw + 1)).gt(&Expr::lit(rcw + 1, p.regs as u64)))
            .or(&d_mbase.slice(1, 0).any())
            .or(&d_msize.slice(1, 0).any())
            .or(&d_mbase.zext(sfw + 1).add(&d_msize.zext(sfw + 1)).gt(&Expr::lit(sfw + 1, p.smem_bytes())))
            .or(&d_prog.slice(7, 0).any()),
    );
    let d_hit: Vec<Expr> = (0..ns as usize).map(|s| progv[s].and(&prog[s].eq(&d_prog))).collect();
    let d_hit_any = b.let_("dsp_hit", &crate::rtl::select_onehot(&dsp_slot_oh, &d_hit));
    let d_load = b.let_("dsp_load", &dsp_fire.and(&d_bad.not()).and(&d_hit_any.not()));
    let dsp_slot_idx = b.let_("dsp_slot", &crate::rtl::arbiter::onehot_index(&dsp_slot_oh, ns as usize, sb));

    // ---------------- program store and loads ----------------
    let lq = {
        let pop = b.wire("lq_pop", 1);
        let q = shift_queue(&mut b, "lq", ns, &[("slot", sb)], std::slice::from_ref(&pop), &[(d_load.clone(), vec![dsp_slot_idx.clone()])]);
        (q, pop)
    };
    let (lq, lq_pop) = lq;
    let ld_busy = b.reg("load_busy_q", 1, 0);
    let ld_slot = b.reg_noreset("load_slot_q", sb);
    let ld_cnt = b.reg_noreset("load_cnt_q", pw);
    let lq_head = lq.entries[0][0].clone();
    let if_req_valid = b.let_("load_req_valid", &ld_busy.not().and(&lq.has[0]));
    b.assign(&ifetch.req().valid, &if_req_valid);
    b.assign(&ifetch.req().field("addr"), &select(&lq_head, &prog));
    b.assign(&ifetch.req().field("len"), &Expr::lit(pw, depth as u64 - 1));
    let if_req_fire = b.let_("load_start", &if_req_valid.and(&ifetch.req().ready));
    b.assign(&lq_pop, &if_req_fire);
    b.next(&ld_slot, &lq_head, Some(&if_req_fire));
    b.assign(&ifetch.rsp().ready, &Expr::bit(true));
    let beat = ifetch.rsp().valid.clone();
    let last_beat = b.let_("load_last", &beat.and(&ld_cnt.eq_lit(depth as u64 - 1)));
    b.next(&ld_cnt, &if_req_fire.mux(&Expr::zero(pw), &ld_cnt.add(&Expr::lit(pw, 1))), Some(&if_req_fire.or(&beat)));
    b.next(&ld_busy, &if_req_fire.or(&ld_busy.and(&last_beat.not())), None);
    let ld_done_oh = onehot(&ld_slot, ns);

    // ---------------- issue ----------------
    let pick = round_robin(&mut b, "issue", &run, &Expr::bit(true));
    let x_valid = b.reg("x_valid_q", 1, 0);
    let x_slot = b.reg_noreset("x_slot_q", sb);
    b.next(&x_valid, &pick.any, None);
    b.next(&x_slot, &pick.index, Some(&pick.any));
    let f_pc = b.let_("f_pc", &select(&pick.index, &pc));
    let slot_pc_addr = |slot: &Expr, pcv: &Expr| if ns > 1 { Expr::cat(&[slot.slice(sb - 1, 0), pcv.clone()]) } else { pcv.clone() };
    let store_depth = ns as u64 * depth as u64;
    let insn = b.ram(
        "imem",
        "the program store: slot s's instruction i at s*imem_depth + i",
        store_depth,
        64,
        RamWrite { en: beat.clone(), addr: slot_pc_addr(&ld_slot, &ld_cnt), data: ifetch.rsp().field("data"), strb: None },
        RamRead { en: pick.any.clone(), addr: slot_pc_addr(&pick.index, &f_pc) },
    );

    // ---------------- registers ----------------
    let rf: Vec<Expr> = (0..p.regs).map(|i| b.reg_noreset(&format!("rf{i}_q"), 32)).collect();
    let xs = |v: &[Expr]| select(&x_slot, v);
    let x_rbase = b.let_("x_reg_base", &xs(&rbase));
    let x_rcount = b.let_("x_reg_count", &xs(&rcount));
    let x_pc = b.let_("x_pc", &xs(&pc));
    let read = |b: &mut ModuleBuilder, name: &str, idx: &Expr| -> Expr {
        let g = x_rbase.add(&idx.zext(rcw.max(8)).slice(rcw - 1, 0)).slice(rbw - 1, 0);
        let g = b.let_(&format!("x_{name}_gidx"), &g);
        b.let_(&format!("x_{name}_val"), &select(&g, &rf))
    };
    let x_msize = xs(&msize);
    let d = Decoded::new(&mut b, p, &insn, &x_valid, &x_rbase, &x_rcount, &x_pc, &x_msize, read);
    b.assign(&retire_valid, &x_valid);
    b.assign(&retire_slot, &x_slot);
    b.assign(&retire_pc, &x_pc);
    b.assign(&retire_insn, &insn);

    // ---------------- cdl on the cbload ----------------
    let x_oh = onehot(&x_slot, ns);
    let cq_pop = b.wire("cq_pop", 1);
    let cq = shift_queue(&mut b, "cq", ns, &[("slot", sb)], std::slice::from_ref(&cq_pop), &[(d.go_cdl.clone(), vec![x_slot.clone()])]);
    let c_dest = regn(&mut b, "cdl_dest", rbw);
    let c_n = regn(&mut b, "cdl_n", 5);
    let c_mem = regn(&mut b, "cdl_mem", 1);
    let c_off = regn(&mut b, "cdl_off", 32);
    let cbm = super::cbload::unit(&cbp, &format!("{TOP}_cbload"))?;
    let cbu = b.instance(&cbm, "u_cbload", &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
    let cb_in = cbu.stream("in");
    let ch = cq.entries[0][0].clone();
    b.assign(&cb_in.valid, &cq.has[0]);
    let vw = cbp.view_index_bits();
    let c_view = select(&ch, &c_mem).mux(&Expr::lit(vw, ns as u64), &ch.zext(vw.max(sb)).slice(vw - 1, 0));
    b.assign(&cb_in.field("dest"), &select(&ch, &c_dest));
    b.assign(&cb_in.field("view"), &c_view);
    b.assign(&cb_in.field("offset"), &select(&ch, &c_off).zext(33));
    b.assign(&cb_in.field("offset_is_reg"), &Expr::bit(false));
    b.assign(&cb_in.field("offset_reg"), &Expr::zero(cbp.reg_index_bits()));
    b.assign(&cb_in.field("burst"), &Expr::bit(true));
    b.assign(&cb_in.field("size"), &Expr::cat(&[select(&ch, &c_n), Expr::zero(2)]).zext(cbp.size_bits()));
    b.assign(&cb_in.field("tag"), &Expr::zero(1));
    let cb_fire = b.let_("cdl_start", &cb_in.valid.and(&cb_in.ready));
    b.assign(&cq_pop, &cb_fire);
    let cdl_slot = b.reg_noreset("cdl_slot_q", sb);
    b.next(&cdl_slot, &ch, Some(&cb_fire));
    let cb_rsp = cbu.stream("rsp");
    b.assign(&cb_rsp.ready, &Expr::bit(true));
    let cdl_done = cb_rsp.valid.clone();
    b.assert_always("cdl_no_error", &cdl_done.not().or(&cb_rsp.field("error").eq_lit(0)), "the unit checks every error the cbload could report before it offers the instruction");
    b.waive_unused(&cb_rsp.field("tag"), "one cdl at a time: the slot is cdl_slot_q");
    b.waive_unused(&cb_rsp.field("error"), "never an error: property cdl_no_error");
    b.assign(&cbu.port("cfg_we_i"), &init_busy);
    b.assign(&cbu.port("cfg_addr_i"), &init.zext(cbp.cfg_addr_bits().max(iw)).slice(cbp.cfg_addr_bits() - 1, 0));
    b.assign(&cbu.port("cfg_wdata_i"), &select(&init, &cfg_values));
    b.waive_unused(&cbu.port("oob_o"), "reads past a view are zero by definition (docs/cu.md)");
    b.waive_unused(&cbu.port("oob_tag_o"), "reads past a view are zero by definition (docs/cu.md)");
    b.waive_unused(&cbu.port("rf_re_o"), "cdl offsets are never registers of the cbload's");
    b.waive_unused(&cbu.port("rf_raddr_o"), "cdl offsets are never registers of the cbload's");
    b.assign(&cbu.port("rf_rdata_i"), &Expr::zero(33));
    b.assign(&cbu.port("rf_wready_i"), &Expr::bit(true));
    let cb_we = cbu.port("rf_we_o");
    let cb_waddr = cbu.port("rf_waddr_o");
    let cb_wdata = cbu.port("rf_wdata_o");
    // The cbload's memory port: bit 32 of the address selects the user-data
    // store (answered the next cycle), else the `cdl` port to memory.
    let cm = cbu.bus(BusKind::Read, "mem");
    let creq_addr = cm.req().field("addr");
    let to_ud = creq_addr.bit_at(32);
    let ud_valid = b.reg("ud_valid_q", 1, 0);
    let ud_data = b.reg_noreset("ud_data_q", 32);
    let space = b.reg("cdl_space_q", 1, 0);
    let ud_ready = ud_valid.not().or(&cm.rsp().ready);
    b.assign(&cdl_port.req().valid, &cm.req().valid.and(&to_ud.not()));
    b.assign(&cdl_port.req().field("addr"), &creq_addr.slice(31, 0));
    b.assign(&cm.req().ready, &to_ud.mux(&ud_ready, &cdl_port.req().ready));
    let ud_take = b.let_("ud_take", &cm.req().valid.and(&to_ud).and(&ud_ready));
    b.next(&space, &to_ud, Some(&cm.req().valid.and(&cm.req().ready)));
    let ud_slot = creq_addr.slice(8, 6);
    let ud_word = creq_addr.slice(5, 2);
    let ud_words: Vec<Expr> = (0..ns as usize).map(|s| select(&ud_word, &(0..16).map(|j| user[s].slice(32 * j + 31, 32 * j)).collect::<Vec<_>>())).collect();
    b.next(&ud_data, &select(&ud_slot, &ud_words), Some(&ud_take));
    b.next(&ud_valid, &ud_take.or(&ud_valid.and(&cm.rsp().ready.not())), None);
    b.assign(&cm.rsp().valid, &space.mux(&ud_valid, &cdl_port.rsp().valid));
    b.assign(&cm.rsp().field("data"), &space.mux(&ud_data, &cdl_port.rsp().field("data")));
    b.assign(&cdl_port.rsp().ready, &cm.rsp().ready.and(&space.not()));
    b.waive_unused(&creq_addr.slice(31, 9), "user-data addresses: 2^32 + 64*slot + byte");
    if rbw < 8 {
        b.waive_unused(&cb_waddr, "the register index");
    }

    // ---------------- DMA ----------------
    let dq_pop = b.wire("dq_pop", 1);
    let dq = shift_queue(&mut b, "dq", ns, &[("slot", sb)], std::slice::from_ref(&dq_pop), &[(d.go_dma.clone(), vec![x_slot.clone()])]);
    // The operation's operands, per slot. ld/st: s (the share's scratchpad
    // address), a, stride, rows, n, pitch. act: s = the tile, rows, n =
    // words, pitch. cmp/exp: s = D, a = S, stride = Q (scratchpad
    // addresses), n, z.
    let o_kind = regn(&mut b, "dma_kind", 3);
    let o_s = regn(&mut b, "dma_s", sw);
    let o_a = regn(&mut b, "dma_a", 32);
    let o_stride = regn(&mut b, "dma_stride", 32);
    let o_rows = regn(&mut b, "dma_rows", 16);
    let o_n = regn(&mut b, "dma_n", 16);
    let o_p = regn(&mut b, "dma_p", 32);
    let o_z = regn(&mut b, "dma_z", 2);
    let spm = scratchpad(
        &format!("{TOP}_scratchpad"),
        Shape { banks: p.banks, words: p.words, data_bits: 32, read_ports: 5 + p.tex as u32, write_ports: 3 + p.tex as u32 },
    )?;
    let spu = b.instance(&spm, "u_scratchpad", &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
    let dh = dq.entries[0][0].clone();
    let h_kind = b.let_("dma_head_kind", &select(&dh, &o_kind));
    let head_vec = h_kind.ge(&Expr::lit(3, 2)).and(&h_kind.le(&Expr::lit(3, 4)));
    let head_mma = h_kind.eq_lit(5);
    let head_tex = h_kind.eq_lit(6);
    let vec_busy = b.wire("vec_busy_w", 1);
    let dma_busy = b.wire("dma_busy_w", 1);
    let mma_busy = b.wire("mma_busy_w", 1);
    let tex_busy = b.wire("tex_busy_w", 1);
    let dma_io = dma::Io {
        start: dq.has[0].and(&head_vec.not()).and(&head_mma.not()).and(&head_tex.not()).and(&vec_busy.not()).and(&mma_busy.not()).and(&tex_busy.not()),
        st: h_kind.eq_lit(1),
        s: select(&dh, &o_s),
        a: select(&dh, &o_a),
        stride: select(&dh, &o_stride),
        rows: select(&dh, &o_rows),
        n: select(&dh, &o_n),
        p: select(&dh, &o_p).slice(15, 0),
        zmap: select(&dh, &o_p).bit_at(16),
        mem_rd: dma_rd,
        mem_wr: dma_wr,
        spm_rd: spu.bus(BusKind::Read, "rd0"),
        spm_wr: spu.bus(BusKind::Write, "wr0"),
    };
    let dma = dma::engine(&mut b, p, dma_io);
    b.assign(&dma_busy, &dma.busy);
    // The vector operations, on the compress block's vector unit.
    let cpp = gpurtl_params::compress::CompressParams { width: 64, latency: 1, stream: false };
    let cdesign = super::compress::build(&cpp)?;
    let cu_c = b.instance_of(&cdesign, "u_compress", &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
    let vec_io = vec::Io {
        start: dq.has[0].and(&head_vec).and(&dma_busy.not()).and(&mma_busy.not()).and(&tex_busy.not()),
        kind: h_kind.clone(),
        d: select(&dh, &o_s),
        s: select(&dh, &o_a).slice(sw - 1, 0),
        q: select(&dh, &o_stride).slice(sw - 1, 0),
        rows: select(&dh, &o_rows),
        n: select(&dh, &o_n),
        p: select(&dh, &o_p),
        z: select(&dh, &o_z),
        spm_rd: spu.bus(BusKind::Read, "rd1"),
        spm_wr: spu.bus(BusKind::Write, "wr1"),
        cin: cu_c.stream("in"),
        cout: cu_c.stream("out"),
    };
    let vece = vec::engine(&mut b, p, vec_io);
    b.assign(&vec_busy, &vece.busy);
    // mma, on the systolic grid.
    let gp = p.grid();
    let gdesign = super::systolic::build(&gp)?;
    let gu = b.instance_of(&gdesign, "u_grid", &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
    let mma_io = mma::Io {
        start: dq.has[0].and(&head_mma).and(&dma_busy.not()).and(&vec_busy.not()).and(&tex_busy.not()),
        co: select(&dh, &o_s),
        ao: select(&dh, &o_a).slice(sw - 1, 0),
        bo: select(&dh, &o_stride).slice(sw - 1, 0),
        mn: select(&dh, &o_n),
        k: select(&dh, &o_rows),
        mode: select(&dh, &o_p).slice(27, 26),
        qa: select(&dh, &o_p).slice(29, 28),
        qb: select(&dh, &o_p).slice(31, 30),
        bias: select(&dh, &o_p).slice(sw - 1, 0),
        skip: select(&dh, &o_z).bit_at(0),
        rd_a: spu.bus(BusKind::Read, "rd2"),
        rd_b: spu.bus(BusKind::Read, "rd3"),
        rd_c0: spu.bus(BusKind::Read, "rd4"),
        wr_c: spu.bus(BusKind::Write, "wr2"),
        gin: gu.stream("in"),
        gout: gu.stream("out"),
        gidle: gu.port("in_idle_o"),
    };
    let mmae = mma::engine(&mut b, p, mma_io);
    b.assign(&mma_busy, &mmae.busy);
    // tex, on the texture unit (when built).
    let (tex_started, tex_done) = if p.tex {
        let tdesign = super::texture::build(&p.texture())?;
        let tu = b.instance_of(&tdesign, "u_texture", &[("clk_i", clk.clone()), ("rst_i", rst.clone())]);
        let h_c = Expr::cat(&[select(&dh, &o_rows), select(&dh, &o_n)]);
        let h_wh = select(&dh, &o_stride);
        let tex_io = tex::Io {
            start: dq.has[0].and(&head_tex).and(&dma_busy.not()).and(&vec_busy.not()).and(&mma_busy.not()),
            t: select(&dh, &o_a).slice(sw - 1, 0),
            o: select(&dh, &o_s),
            c: h_c,
            w: h_wh.slice(15, 0),
            h: h_wh.slice(31, 16),
            imm: select(&dh, &o_p),
            spm_rd: spu.bus(BusKind::Read, "rd5"),
            spm_wr: spu.bus(BusKind::Write, "wr3"),
            cfg: tu.stream("cfg"),
            op: tu.stream("op"),
            res: tu.stream("res"),
            mreq: tu.stream("mem0_req"),
            mrsp: tu.stream("mem0_rsp"),
        };
        let texe = tex::engine(&mut b, p, tex_io);
        b.assign(&tex_busy, &texe.busy);
        b.assign(&tex_fetch_o, &texe.fetch);
        b.waive_unused(&tu.port("idle_o"), "the machine knows when the unit is idle");
        b.waive_unused(&tu.port("reg_writes_o"), "the pixel register writes are not counted");
        (texe.started, texe.done)
    } else {
        b.assign(&tex_busy, &Expr::bit(false));
        b.assign(&tex_fetch_o, &Expr::bit(false));
        (Expr::bit(false), Expr::bit(false))
    };
    let any_start = b.let_("dmaq_start", &dma.started.or(&vece.started).or(&mmae.started).or(&tex_started));
    b.assign(&dq_pop, &any_start);
    let dma_slot = b.reg_noreset("dma_slot_q", sb);
    b.next(&dma_slot, &dh, Some(&any_start));
    // An empty operation is done in its start cycle.
    let done_now = dma.done_now.or(&vece.started.and(&vece.done)).or(&mmae.started.and(&mmae.done)).or(&tex_started.and(&tex_done));
    let dma_done_slot = done_now.mux(&dh, &dma_slot);
    let dmaq_done = b.let_("dmaq_done", &dma.done.or(&vece.done).or(&mmae.done).or(&tex_done));

    // ---------------- per-slot updates ----------------
    let cpl_oh = b.let_("cpl_slot_oh", &lowest_bit(&Expr::cat_lanes(&done)));
    let cpl_idx = b.let_("cpl_slot", &crate::rtl::arbiter::onehot_index(&cpl_oh, ns as usize, sb));
    b.assign(&cpl.valid, &cpl_oh.any());
    let cpl_fire = b.let_("cpl_fire", &cpl.valid.and(&cpl.ready));
    b.assign(&cpl.field("tag"), &select(&cpl_idx, &tag));
    b.assign(&cpl.field("slot"), &cpl_idx);
    b.assign(&cpl.field("x"), &select(&cpl_idx, &bx));
    b.assign(&cpl.field("y"), &select(&cpl_idx, &by));
    b.assign(&cpl.field("z"), &select(&cpl_idx, &bz));
    b.assign(&cpl.field("status"), &select(&cpl_idx, &status));
    b.assign(&cpl.field("pc"), &select(&cpl_idx, &cpc));

    let cdl_oh = onehot(&cdl_slot, ns);
    let dma_oh = onehot(&dma_done_slot, ns);
    for s in 0..ns as usize {
        let here_d = dsp_fire.and(&dsp_slot_oh.bit_at(s as u32));
        let here_x = b.let_(&format!("s{s}_x"), &x_valid.and(&x_oh[s]));
        let picked = pick.grant[s].clone();
        let loaded = last_beat.and(&ld_done_oh[s]);
        let cdl_back = cdl_done.and(&cdl_oh[s]);
        let dma_back = dmaq_done.and(&dma_oh[s]);
        let x_end = here_x.and(&d.ends);
        let x_resume = here_x.and(&d.resumes);
        // busy: from dispatch until the completion is taken.
        let cpl_here = cpl_fire.and(&cpl_oh.bit_at(s as u32));
        b.next(&busy[s], &here_d.or(&busy[s].and(&cpl_here.not())), None);
        let dsp_run = here_d.and(&d_bad.not()).and(&d_hit[s]);
        let rise = dsp_run.or(&loaded).or(&cdl_back).or(&dma_back).or(&x_resume);
        b.next(&run[s], &rise.or(&run[s].and(&picked.not())), None);
        let dsp_err = here_d.and(&d_bad);
        b.next(&done[s], &dsp_err.or(&x_end).or(&done[s].and(&cpl_here.not())), None);
        b.next(&status[s], &dsp_err.mux(&Expr::lit(4, Status::Dispatch.code()), &d.status), Some(&dsp_err.or(&x_end)));
        b.next(&cpc[s], &dsp_err.mux(&Expr::zero(pw), &x_pc), Some(&dsp_err.or(&x_end)));
        b.next(&pc[s], &here_d.mux(&Expr::zero(pw), &d.npc), Some(&here_d.or(&here_x.and(&d.ok))));
        b.next(&prog[s], &d_prog, Some(&here_d.and(&d_bad.not())));
        b.next(&progv[s], &loaded.or(&progv[s].and(&d_load.and(&dsp_slot_oh.bit_at(s as u32)).not())), None);
        for (r, v) in [(&tag, &d_tag), (&bx, &d_x), (&by, &d_y), (&bz, &d_z), (&user, &d_user), (&rbase, &d_rbase), (&rcount, &d_rcount), (&mbase, &d_mbase), (&msize, &d_msize)] {
            b.next(&r[s], v, Some(&here_d));
        }
        let cap_c = here_x.and(&d.go_cdl);
        b.next(&c_dest[s], &d.cdl_dest, Some(&cap_c));
        b.next(&c_n[s], &d.cdl_n, Some(&cap_c));
        b.next(&c_mem[s], &d.cdl_mem, Some(&cap_c));
        b.next(&c_off[s], &d.cdl_off, Some(&cap_c));
        let cap_d = here_x.and(&d.go_dma);
        let abs = |off: &Expr| xs(&mbase).zext(33).add(&off.zext(33)).slice(sw - 1, 0);
        let k = &d.dma_kind;
        let is_ldst = k.lt(&Expr::lit(3, 2));
        let is_act = k.eq_lit(2);
        let is_tex = if p.tex { k.eq_lit(6) } else { Expr::bit(false) };
        // tex: rows:n is the value of rc, the list's scratchpad address for
        // the sample kinds; stride is W | H << 16.
        let tex_c = d.tex_samples.mux(&abs(&d.tex_c).zext(32), &d.tex_c);
        b.next(&o_kind[s], k, Some(&cap_d));
        b.next(&o_s[s], &abs(&d.dma_s), Some(&cap_d));
        b.next(&o_a[s], &is_ldst.mux(&d.dma_a, &abs(&d.vec_s).zext(32)), Some(&cap_d));
        b.next(&o_stride[s], &is_ldst.or(&is_tex).mux(&d.dma_stride, &abs(&d.vec_q).zext(32)), Some(&cap_d));
        b.next(&o_rows[s], &is_tex.mux(&tex_c.slice(31, 16), &is_act.mux(&d.act_rows, &d.dma_rows)), Some(&cap_d));
        b.next(&o_n[s], &is_tex.mux(&tex_c.slice(15, 0), &is_act.mux(&d.act_words, &d.dma_n)), Some(&cap_d));
        // mma: qb, qa, the C0 mode, the bias row's scratchpad address.
        let mma_p = Expr::cat(&[d.imm.slice(13, 12), d.imm.slice(11, 10), d.imm.slice(9, 8), Expr::zero(26 - sw), abs(&Expr::cat(&[d.imm.slice(31, 16), Expr::zero(2)]))]);
        // ld/st: the pitch, and ld's zmap flag in bit 16.
        let ldst_p = Expr::cat(&[Expr::zero(15), k.eq_lit(0).and(&d.imm.bit_at(8)), d.dma_p.clone()]);
        b.next(&o_p[s], &k.eq_lit(5).mux(&mma_p, &is_tex.mux(&d.imm, &is_act.mux(&d.act_p, &ldst_p))), Some(&cap_d));
        // mma: the skip flag in bit 0 (o_z is the vector ops' size code).
        b.next(&o_z[s], &k.eq_lit(5).mux(&Expr::cat(&[Expr::zero(1), d.imm.bit_at(14)]), &d.vec_z), Some(&cap_d));
    }

    // Register file writes: a dispatch sets its block's registers, the X
    // stage writes its result, the cbload writes cdl's dwords (never the same
    // register in one cycle: the blocks' registers do not overlap, and a
    // waiting slot executes nothing).
    let d_end = d_rbase.zext(rcw + 1).add(&d_rcount.zext(rcw + 1));
    for (i, r) in rf.iter().enumerate() {
        let il = Expr::lit(rcw + 1, i as u64);
        let in_d = dsp_fire.and(&d_bad.not()).and(&d_rbase.zext(rcw + 1).le(&il)).and(&il.lt(&d_end));
        let rel = il.sub(&d_rbase.zext(rcw + 1));
        let init_v = rel.eq_lit(0).mux(&d_x.zext(32), &rel.eq_lit(1).mux(&d_y.zext(32), &rel.eq_lit(2).mux(&d_z.zext(32), &Expr::zero(32))));
        let x_w = d.we.and(&d.wreg.eq_lit(i as u64));
        let c_w = cb_we.and(&cb_waddr.eq_lit(i as u64));
        let v = in_d.mux(&init_v, &x_w.mux(&d.wdata, &cb_wdata));
        b.next(r, &v, Some(&in_d.or(&x_w).or(&c_w)));
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpurtl_params::BlockParams;

    #[test]
    fn builds_at_every_preset() {
        for (name, p) in CuParams::presets() {
            let d = build(&p).unwrap_or_else(|e| panic!("preset {name}: {e}"));
            let v = d.elaborate().verilog();
            assert!(v.contains("module gpurtl_cu"), "preset {name}");
            if let Ok(dir) = std::env::var("GPURTL_CU_DUMP") {
                std::fs::write(format!("{dir}/cu_{name}.v"), v).unwrap();
            }
        }
    }
}
