//! A banked scratchpad behind native ports (docs/scratchpad.md): `banks`
//! banks of the RAM primitive, words interleaved across them, read and write
//! ports arbitrated per bank in round-robin order, one response slot a port.

use super::arbiter::round_robin;
use super::bus::{Native, Role};
use super::expr::{clog2, select, select_onehot, Expr};
use super::module::{Module, ModuleBuilder, RtlError};
use super::ram::{RamRead, RamWrite};

/// The scratchpad's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub banks: u32,
    pub words: u32,
    pub data_bits: u32,
    pub read_ports: u32,
    pub write_ports: u32,
}

/// The scratchpad module `name` (ports `rd<k>`, `wr<k>`: docs/scratchpad.md).
pub fn scratchpad(name: &str, s: Shape) -> Result<Module, RtlError> {
    let db = s.data_bits / 8;
    let lg = clog2(db as u64);
    let bb = clog2(s.banks as u64);
    let rb = clog2(s.words as u64);
    let aw = lg + bb + rb;
    let shape = Native { addr_bits: aw, data_bits: s.data_bits, len_bits: 0, tag_bits: 0 };
    let mut b = ModuleBuilder::new(name);
    b.doc(format!(
        "Scratchpad: {} bank(s) of {} x {}-bit block RAM, {} read and {} write port(s), round robin per bank (docs/scratchpad.md).",
        s.banks, s.words, s.data_bits, s.read_ports, s.write_ports
    ));
    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let rd: Vec<_> = (0..s.read_ports).map(|k| b.read_port(&format!("rd{k}"), Role::Slave, shape)).collect();
    let wr: Vec<_> = (0..s.write_ports).map(|k| b.write_port(&format!("wr{k}"), Role::Slave, shape)).collect();
    // Word n of the scratchpad is in bank n mod banks, at row n div banks.
    let bank_of = |a: &Expr| if bb == 0 { Expr::zero(1) } else { a.slice(lg + bb - 1, lg) };
    let row_of = |a: &Expr| a.slice(aw - 1, lg + bb);
    if lg > 0 {
        for p in rd.iter().chain(&wr) {
            b.waive_unused(&p.req().field("addr"), "the byte offset within a word: addresses are word aligned");
        }
    }

    // Response slots: a port's next request may be taken when its slot is
    // empty or its response is taken in this cycle.
    let rv: Vec<Expr> = (0..s.read_ports).map(|k| b.reg(&format!("rd{k}_valid_q"), 1, 0)).collect();
    let wv: Vec<Expr> = (0..s.write_ports).map(|k| b.reg(&format!("wr{k}_valid_q"), 1, 0)).collect();
    let rfree: Vec<Expr> = (0..rd.len()).map(|k| b.let_(&format!("rd{k}_free"), &rv[k].not().or(&rd[k].rsp().ready))).collect();
    let wfree: Vec<Expr> = (0..wr.len()).map(|k| b.let_(&format!("wr{k}_free"), &wv[k].not().or(&wr[k].rsp().ready))).collect();

    let mut rgrant: Vec<Vec<Expr>> = vec![Vec::new(); rd.len()];
    let mut wgrant: Vec<Vec<Expr>> = vec![Vec::new(); wr.len()];
    let mut dout = Vec::new();
    for bank in 0..s.banks as u64 {
        let here = |a: &Expr| if bb == 0 { Expr::bit(true) } else { bank_of(a).eq_lit(bank) };
        // Writes first; then reads, except of the row being written.
        let wreq: Vec<Expr> = (0..wr.len())
            .map(|k| b.let_(&format!("b{bank}_wreq{k}"), &wr[k].req().valid.and(&here(&wr[k].req().field("addr"))).and(&wfree[k])))
            .collect();
        let wrr = round_robin(&mut b, &format!("b{bank}_w"), &wreq, &Expr::bit(true));
        let wsel = Expr::cat_lanes(&wrr.grant);
        let pick = |f: &str, ports: &[super::bus::Bus], sel: &Expr| select_onehot(sel, &ports.iter().map(|p| p.req().field(f)).collect::<Vec<_>>());
        let waddr = b.let_(&format!("b{bank}_wrow"), &row_of(&pick("addr", &wr, &wsel)));
        let we = wrr.any.clone();
        let rreq: Vec<Expr> = (0..rd.len())
            .map(|k| {
                let a = rd[k].req().field("addr");
                let clash = we.and(&row_of(&a).eq(&waddr));
                b.let_(&format!("b{bank}_rreq{k}"), &rd[k].req().valid.and(&here(&a)).and(&rfree[k]).and(&clash.not()))
            })
            .collect();
        let rrr = round_robin(&mut b, &format!("b{bank}_r"), &rreq, &Expr::bit(true));
        let rsel = Expr::cat_lanes(&rrr.grant);
        let raddr = b.let_(&format!("b{bank}_rrow"), &row_of(&pick("addr", &rd, &rsel)));
        let q = b.ram(
            &format!("bank{bank}"),
            &format!("bank {bank}: words n with n mod {} = {bank}", s.banks),
            s.words as u64,
            s.data_bits,
            RamWrite { en: we, addr: waddr, data: pick("data", &wr, &wsel), strb: Some(pick("strb", &wr, &wsel)) },
            RamRead { en: rrr.any.clone(), addr: raddr },
        );
        dout.push(q);
        for (k, g) in wrr.grant.into_iter().enumerate() {
            wgrant[k].push(g);
        }
        for (k, g) in rrr.grant.into_iter().enumerate() {
            rgrant[k].push(g);
        }
    }

    for (k, p) in rd.iter().enumerate() {
        let taken = b.let_(&format!("rd{k}_taken"), &rgrant[k].iter().fold(Expr::bit(false), |a, g| a.or(g)));
        b.assign(&p.req().ready, &taken);
        // The bank the response comes from, and a copy of its word once the
        // response waits a cycle (the bank may be read again meanwhile).
        let bank = b.reg_noreset(&format!("rd{k}_bank_q"), bb.max(1));
        b.next(&bank, &bank_of(&p.req().field("addr")), Some(&taken));
        let held = b.reg(&format!("rd{k}_held_q"), 1, 0);
        let fresh = select(&bank, &dout);
        let keep = rv[k].and(&p.rsp().ready.not()).and(&held.not());
        let hold = b.pipe(&format!("rd{k}_hold_q"), &fresh, &keep);
        b.next(&held, &taken.not().and(&rv[k]).and(&p.rsp().ready.not()), None);
        b.next(&rv[k], &taken.or(&rv[k].and(&p.rsp().ready.not())), None);
        let data = b.let_(&format!("rd{k}_data"), &held.mux(&hold, &fresh));
        b.assign(&p.rsp().valid, &rv[k]);
        b.assign(&p.rsp().field("data"), &data);
        b.assert_held(&format!("rd{k}_rsp_held"), &rv[k], &p.rsp().ready, &[data], &format!("read port {k}: the word is held until taken"));
    }
    for (k, p) in wr.iter().enumerate() {
        let taken = b.let_(&format!("wr{k}_taken"), &wgrant[k].iter().fold(Expr::bit(false), |a, g| a.or(g)));
        b.assign(&p.req().ready, &taken);
        b.next(&wv[k], &taken.or(&wv[k].and(&p.rsp().ready.not())), None);
        b.assign(&p.rsp().valid, &wv[k]);
    }
    b.finish()
}
