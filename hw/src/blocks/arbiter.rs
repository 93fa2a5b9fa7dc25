//! The memory arbiter and its AXI4 bridge as a block (docs/arbiter.md):
//! `reads` native read sources and `writes` native write sources, round
//! robin with per-source caps, onto one AXI4 master (`out = axi4`) or one
//! tagged native read and write port (`out = native`). The parts are the RTL
//! layer's (`rtl::arbiter`, `rtl::axi`), which the `mem_if = axi4` form of
//! the blocks that read memory instantiates too.

use crate::rtl::{self, Axi, BusKind, ModuleBuilder, Native, RtlError};
use crate::Design;
use gpurtl_params::arbiter::{ArbiterParams, Out};

/// Name of the top module.
pub const TOP: &str = "gpurtl_arbiter";

/// The shape of a source port.
pub fn source_shape(p: &ArbiterParams) -> Native {
    Native { addr_bits: p.addr_bits, data_bits: p.data_bits, len_bits: p.len_bits(), tag_bits: 0 }
}

pub fn build(p: &ArbiterParams) -> Result<Design, RtlError> {
    let mut b = ModuleBuilder::new(TOP);
    b.doc("Memory arbiter (gpurtl block `arbiter`): native sources, round robin, per-source caps, responses by source.");
    b.doc(format!(
        "{} read and {} write sources, {}-bit data, bursts up to {} beats, {} response beats per read source, {} bursts per write source; to {}.",
        p.reads, p.writes, p.data_bits, p.max_burst, p.read_buffer, p.write_outstanding,
        if p.out == Out::Axi4 { "one AXI4 master" } else { "tagged native ports" }
    ));
    b.doc("Behaviour and cycle timing: docs/arbiter.md; port rules: docs/memory.md.");
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let src = source_shape(p);
    let cr = [("clk_i", clk.clone()), ("rst_i", rst.clone())];
    let mut mem_rd = None;
    let mut mem_wr = None;
    if p.reads > 0 {
        let m = rtl::arbiter::read_arbiter("gpurtl_arbiter_rd", src, &vec![p.read_buffer; p.reads as usize])?;
        let u = b.instance(&m, "u_rd", &cr);
        for k in 0..p.reads {
            b.expose_bus(&u.bus(BusKind::Read, &format!("rd{k}")), &format!("rd{k}"));
        }
        mem_rd = Some(u.bus(BusKind::Read, "mem_rd"));
    }
    if p.writes > 0 {
        let m = rtl::arbiter::write_arbiter("gpurtl_arbiter_wr", p.writes, src, p.write_outstanding)?;
        let u = b.instance(&m, "u_wr", &cr);
        for k in 0..p.writes {
            b.expose_bus(&u.bus(BusKind::Write, &format!("wr{k}")), &format!("wr{k}"));
        }
        mem_wr = Some(u.bus(BusKind::Write, "mem_wr"));
    }
    match p.out {
        Out::Native => {
            for bus in mem_rd.iter().chain(&mem_wr) {
                let name = if bus.kind == BusKind::Read { "mem_rd" } else { "mem_wr" };
                b.expose_bus(bus, name);
            }
        }
        Out::Axi4 => {
            let axi = Axi { addr_bits: p.addr_bits, data_bits: p.data_bits, id_bits: p.id_bits() };
            let rd = (p.reads > 0).then(|| Native { tag_bits: p.read_tag_bits(), ..src });
            let wr = (p.writes > 0).then(|| (Native { tag_bits: p.write_tag_bits(), ..src }, p.write_outstanding));
            let m = rtl::axi::bridge("gpurtl_axi_bridge", rd, wr, axi)?;
            let err = b.output("axi_err_o", 1, "sticky: an R beat or B response other than OKAY was taken");
            let u = b.instance(&m, "u_axi", &[("clk_i", clk), ("rst_i", rst), ("axi_err_o", err)]);
            if let Some(r) = &mem_rd {
                b.connect_bus(r, &u.bus(BusKind::Read, "rd"));
            }
            if let Some(w) = &mem_wr {
                b.connect_bus(w, &u.bus(BusKind::Write, "wr"));
            }
            b.expose_bus(&u.bus(BusKind::Axi4, "m_axi_"), "m_axi_");
        }
    }
    Ok(Design::of(b.finish()?, p))
}
