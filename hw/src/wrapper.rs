//! Pin-limited synthesis wrapper: any block behind six pins.
//!
//! A raw block has hundreds of I/Os (a 4x4 grid: several hundred), more than
//! an FPGA package offers, and pads in the timing paths would hide the
//! block's own Fmax. The wrapper drives every block input from a serial
//! shift chain (`sin_i`, shifted while `shift_i`), captures every block
//! output into a register (`capture_i`) that shifts out on `sout_o`. All
//! block inputs and outputs are registered, so place-and-route measures the
//! block between flip-flops. Synthesis keeps the whole block because every
//! output bit is observable on `sout_o`.
//!
//! The chains do not touch the block: the input chain is copied into a
//! parallel input register on `capture_i`, and the block's outputs land in a
//! parallel output register every cycle, which the output chain loads on
//! `capture_i`. A shift chain ties each bit's flip-flop to its neighbours',
//! which would pull the block's first and last flip-flops apart; the
//! parallel registers are placed beside the block, as the registers of the
//! logic around a block would be.

use crate::rtl::{Expr, ModuleBuilder, RtlError, SigKind};
use crate::Design;

/// Pins of the wrapper, in the order the constraint files name them.
pub const PINS: &[&str] = &["clk_i", "rst_i", "sin_i", "shift_i", "capture_i", "sout_o"];

pub fn wrap(design: &Design) -> Result<Design, RtlError> {
    let top = design.top();
    let mut b = ModuleBuilder::new(&format!("{}_synth_wrap", top.name));
    b.doc(format!("Synthesis wrapper of {}: block I/O through registered serial shift chains.", top.name));
    b.doc("For place-and-route figures only: timing is measured on the block, not on the pads.");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let sin = b.input("sin_i", 1, "serial data into the input chain");
    let shift = b.input("shift_i", 1, "shift both chains by one bit");
    let capture = b.input("capture_i", 1, "capture the block outputs into the output chain");
    let sout = b.output("sout_o", 1, "serial data out of the output chain");

    let ins: Vec<_> = top.port_signals().filter(|p| p.kind == SigKind::Input && Some(p.name.as_str()) != top.clock.map(|c| top.sig(c).name.as_str()) && Some(p.name.as_str()) != top.reset.map(|r| top.sig(r).name.as_str())).cloned().collect();
    let outs: Vec<_> = top.port_signals().filter(|p| p.kind == SigKind::Output).cloned().collect();
    let in_w: u32 = ins.iter().map(|p| p.width).sum();
    let out_w: u32 = outs.iter().map(|p| p.width).sum();

    let chain = b.reg_noreset("in_chain_q", in_w);
    let next_in = if in_w == 1 { sin.clone() } else { Expr::cat(&[chain.slice(in_w - 2, 0), sin.clone()]) };
    b.next(&chain, &next_in, Some(&shift));
    let held = b.pipe("in_hold_q", &chain, &capture);

    let mut conns: Vec<(String, Expr)> = Vec::new();
    if let Some(c) = top.clock {
        conns.push((top.sig(c).name.clone(), clk.clone()));
    }
    if let Some(r) = top.reset {
        conns.push((top.sig(r).name.clone(), rst.clone()));
    }
    let mut lo = 0;
    for p in &ins {
        conns.push((p.name.clone(), held.part(lo, p.width)));
        lo += p.width;
    }
    let mut out_parts = Vec::new();
    for p in &outs {
        let w = b.wire(&format!("blk_{}", p.name), p.width);
        conns.push((p.name.clone(), w.clone()));
        out_parts.push(w);
    }
    let refs: Vec<(&str, Expr)> = conns.iter().map(|(n, e)| (n.as_str(), e.clone())).collect();
    b.instance_of(design, "u_block", &refs);

    let captured = b.pipe("out_hold_q", &Expr::cat_lanes(&out_parts), &Expr::bit(true));
    let out_chain = b.reg_noreset("out_chain_q", out_w);
    let shifted = if out_w == 1 { Expr::bit(false) } else { Expr::cat(&[Expr::bit(false), out_chain.slice(out_w - 1, 1)]) };
    b.next(&out_chain, &capture.mux(&captured, &shifted), Some(&capture.or(&shift)));
    b.assign(&sout, &out_chain.bit_at(0));
    Ok(Design::new(b.finish()?, design.origin().clone()))
}
