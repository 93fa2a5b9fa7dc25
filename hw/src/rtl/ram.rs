//! Memory arrays that synthesis maps to block RAM.
//!
//! [`ModuleBuilder::ram`] declares `depth` words of `width` bits with one
//! synchronous write port (optional byte-lane enables) and one synchronous
//! read port whose data register loads the addressed word at the edge where
//! the read enable is high, and holds it otherwise: the shape of one
//! `DP16KD` (ECP5) or `SB_RAM40_4K` (iCE40) in simple dual-port mode, which
//! is what yosys infers from the printed array.
//!
//! Block RAM does not define what a read of the word being written in the
//! same cycle returns (the two FPGA families differ), and without a rule yosys
//! wraps every RAM in bypass registers to emulate one. The array is printed
//! with `(* no_rw_check *)` instead, and the builder states the rule as a
//! property the design must keep: the caller never reads the word it writes
//! in the same cycle (`prop_<name>_no_collision`).

use super::expr::{clog2, Expr, ExprKind};
use super::module::{ModuleBuilder, Ram, SigKind};

/// The write port of a [`ModuleBuilder::ram`]: at a clock edge where `en` is
/// high, the lanes of `data` whose `strb` bit is set (every lane without
/// strobes) are written at `addr`.
pub struct RamWrite {
    pub en: Expr,
    pub addr: Expr,
    pub data: Expr,
    /// Byte (lane) enables, one bit a lane of `width / strb.width()` bits.
    pub strb: Option<Expr>,
}

/// The read port: at an edge where `en` is high the data register loads the
/// word at `addr`.
pub struct RamRead {
    pub en: Expr,
    pub addr: Expr,
}

impl ModuleBuilder {
    /// A memory array `name` of `depth` words of `width` bits (see the module
    /// doc). Returns the read data register (`<name>_rdata_q`). Address
    /// ports are `clog2(depth)` bits (1 for a one-word array).
    pub fn ram(&mut self, name: &str, doc: &str, depth: u64, width: u32, w: RamWrite, r: RamRead) -> Expr {
        let aw = clog2(depth).max(1);
        let mut ok = true;
        let need = |ok: &mut bool, what: &str, e: &Expr, bits: u32, problems: &mut Vec<String>| {
            if e.width() != bits {
                problems.push(format!("ram `{name}`: {what} is {} bits, must be {bits}", e.width()));
                *ok = false;
            }
        };
        let mut problems = Vec::new();
        need(&mut ok, "write enable", &w.en, 1, &mut problems);
        need(&mut ok, "write address", &w.addr, aw, &mut problems);
        need(&mut ok, "write data", &w.data, width, &mut problems);
        need(&mut ok, "read enable", &r.en, 1, &mut problems);
        need(&mut ok, "read address", &r.addr, aw, &mut problems);
        let mut wbe = None;
        if let Some(s) = &w.strb {
            if s.width() == 0 || !width.is_multiple_of(s.width()) {
                problems.push(format!("ram `{name}`: {} strobes do not split {width} bits into equal lanes", s.width()));
                ok = false;
            } else {
                wbe = Some((s.clone(), width / s.width()));
            }
        }
        if depth == 0 {
            problems.push(format!("ram `{name}` has no words"));
            ok = false;
        }
        self.problems.extend(problems);
        let array = self.namer.claim(name);
        let rdata = self.reg_noreset(&format!("{name}_rdata_q"), width);
        if !ok {
            return rdata;
        }
        for e in [&w.en, &w.addr, &w.data, &r.en, &r.addr].into_iter().chain(w.strb.as_ref()) {
            if !self.checked(e) {
                return rdata;
            }
        }
        // Each port a signal of its own (a lane of `wdata` is sliced, which
        // Verilog allows of a signal only), named after the array.
        let named = |b: &mut ModuleBuilder, e: &Expr, what: &str| match e.kind() {
            ExprKind::Sig(_) => e.clone(),
            _ => b.let_(&format!("{array}_{what}"), e),
        };
        let (we, waddr, wdata) = (named(self, &w.en, "we"), named(self, &w.addr, "waddr"), named(self, &w.data, "wdata"));
        let (re, raddr) = (named(self, &r.en, "re"), named(self, &r.addr, "raddr"));
        let wbe = wbe.map(|(s, lane)| (named(self, &s, "wstrb"), lane));
        let ExprKind::Sig(rd) = rdata.kind() else { unreachable!("registers are signals") };
        debug_assert_eq!(self.m.signals[rd.0].kind, SigKind::Reg);
        let collide = w.en.and(&r.en).and(&w.addr.eq(&r.addr));
        self.m.rams.push(Ram { name: array.clone(), doc: doc.to_string(), width, depth, we, waddr, wdata, wbe, re, raddr, rdata: *rd });
        if self.m.clock.is_some() {
            self.assert_always(
                &format!("{array}_no_collision"),
                &collide.not(),
                &format!("{array}: a word is never read in the cycle it is written (block RAM leaves that undefined)"),
            );
        }
        rdata
    }
}
