//! Texture unit (seed `002_bad8977c8705306b.txt` §61-84, §110-111, claims
//! 1-20; docs/texture.md).
//!
//! bilinear and nearest samples, gather4 with the filter bypassed (any mip
//! level, integer offsets), and `conv_quad`: the union patch of a 2x2 quad's
//! kernels fetched once, in 2x2 tiles, broadcast to the four pixels'
//! register banks (whole or selective) or written once into one bank they
//! share, and multiplied-accumulated: one channel, or all four of an rgba8
//! texel from the same fetches. Each sub-operation (4 tiles) reports its
//! stitch code.
//!
//! Pipeline: accept (level lookup, start coordinate, its wrap by a
//! restoring divider, two bits per step) -> sequencer (one tile at a time,
//! its columns and rows kept wrapped and stepped two texels per tile, the
//! rows' word addresses with them; a tile is one or more *passes*, each at
//! most one texel per bank) -> per-bank request registers
//! -> memory -> collect (the tag queue says which banks a pass used and where
//! each texel goes) -> S1 (a whole tile) -> S2 (filter inputs, or the pixels'
//! register banks and weights) -> result register. Timing: docs/texture.md.
//!
//! Files: `config.rs` (the configuration registers), `prep.rs` (accept and
//! the prep stages with the divider), `walk.rs` (a coordinate of the tile
//! walk, stepped by one or two texels), `sequencer.rs` (tiles, passes,
//! issue), `memory.rs` (request registers, tag queue, collect),
//! `stages.rs` (S1, S2, the result register); here, the ports and the
//! wiring of the parts, in the order their signals are declared.

mod config;
mod memory;
mod prep;
mod sequencer;
mod stages;
mod walk;

use super::memif::{axi4_top, Kind, Part, Source};
use crate::rtl::{Axi, Expr, ModuleBuilder, RtlError};
use crate::Design;
use gpurtl_params::MemIf;
use gpurtl_params::texture::{cfg, TextureParams};
use memory::Memory;
use prep::Prep;
use sequencer::Sequencer;
use stages::Stages;

/// Name of the top module.
pub const TOP: &str = "gpurtl_texture";

/// Bits of the dividend one restoring-division stage consumes (docs/texture.md, prep stages).
pub const DIV_BITS_PER_STAGE: u32 = 4;

/// Signed `a < b` for equal-width two's-complement values.
fn slt(a: &Expr, b: &Expr) -> Expr {
    let w = a.width();
    let flip = Expr::cat(&[Expr::bit(true), Expr::zero(w - 1)]);
    a.xor(&flip).lt(&b.xor(&flip))
}

/// Bits of an op's channel through the pipeline: the channel, and with
/// `all_channels` the all-channel flag above it (bit 2).
fn chan_bits(p: &TextureParams) -> u32 {
    if p.all_channels {
        3
    } else {
        2
    }
}

/// `e` cut or zero-extended to `w` bits (word arithmetic is modulo 2^addr_bits).
fn fit(e: &Expr, w: u32) -> Expr {
    if e.width() >= w {
        e.slice(w - 1, 0)
    } else {
        e.zext(w)
    }
}

/// The block: the unit itself, or with `mem_if = axi4` the unit (named
/// `<TOP>_core`) behind the arbiter and its AXI4 bridge, the banks
/// interleaved word by word in one memory (docs/memory.md).
pub fn build(p: &TextureParams) -> Result<Design, RtlError> {
    match p.mem_if {
        MemIf::Native => Ok(Design::of(unit(p, TOP)?, p)),
        MemIf::Axi4 => {
            let core = Design::of(unit(p, &format!("{TOP}_core"))?, p);
            let bank_bits = crate::rtl::clog2(p.banks as u64);
            let aw = axi_addr_bits(p);
            let sources = (0..p.banks)
                .map(|k| {
                    // Bank k's word w is the dword at byte 4*(w*banks + k).
                    let addr = move |w: &Expr| {
                        let mut parts = vec![w.clone()];
                        if bank_bits > 0 {
                            parts.push(Expr::lit(bank_bits, k as u64));
                        }
                        parts.push(Expr::zero(2));
                        let a = Expr::cat(&parts);
                        if a.width() < aw { a.zext(aw) } else { a }
                    };
                    Source { port: format!("mem{k}"), kind: Kind::Read { credits: p.max_outstanding }, addr: Box::new(addr) }
                })
                .collect();
            let part = Part { design: &core, inst: "u_core", prefix: "", sources, busy: None };
            let doc = [
                "Texture unit (gpurtl block `texture`) with mem_if=axi4: the banks' read ports through an arbiter and its bridge to one".to_string(),
                format!("AXI4 master; bank b word w at byte 4*(w*{} + b) (docs/memory.md, docs/texture.md).", p.banks),
            ];
            let b = axi4_top(TOP, &doc, &[part], Axi { addr_bits: aw, data_bits: 32, id_bits: 1 })?;
            Ok(Design::of(b.finish()?, p))
        }
    }
}

/// The AXI byte address width with `mem_if = axi4`: a bank's word address,
/// the bank and the byte in the dword; at least 12 (a 4 KB page).
pub fn axi_addr_bits(p: &TextureParams) -> u32 {
    (p.addr_bits + crate::rtl::clog2(p.banks as u64) + 2).max(12)
}

/// The unit with its native bank ports, as module `name`.
fn unit(p: &TextureParams, name: &str) -> Result<crate::rtl::Module, RtlError> {
    let f = p.frac_bits;
    let ub = p.uv_bits();
    let lb = p.level_bits();
    let aw = p.addr_bits;
    let ob = p.offset_bits;
    let mk = p.max_kernel;
    let lw = p.lane_bits();
    let nb = p.banks;

    let mut b = ModuleBuilder::new(name);
    b.doc("Texture unit (gpurtl block `texture`; seed 002 §61-84, §110-111, claims 1-20).");
    b.doc("bilinear / nearest samples, gather4 bypass from any level, conv_quad collective fetch with broadcast and MAC.");
    b.doc(format!(
        "{nb} bank(s) of 32-bit texel words, levels up to {}x{}, {f} fraction bits, kernels up to {mk}x{mk}, {} broadcast.",
        p.max_size, p.max_size, p.broadcast
    ));
    b.doc("Behaviour and cycle timing: docs/texture.md.");

    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");
    let cfg_s = b.stream_in(
        "cfg",
        "a configuration write is offered",
        "the unit is idle and takes it",
        &[("addr", cfg::ADDR_BITS, "register address (docs/texture.md, Configuration)"), ("data", 32, "value")],
    );
    let [cfg_addr, cfg_data] = cfg_s.get(["addr", "data"]);
    b.waive_unused(&cfg_data, "bits outside a register's fields are ignored (docs/texture.md, Configuration)");
    // op_all_channels_i only with all_channels (docs/texture.md, "all_channels").
    let mut op_fields = vec![
        ("kind", 2, "0 bilinear, 1 nearest, 2 gather4, 3 conv_quad"),
        ("u", ub, "u (F fraction bits); conv_quad: pixel x"),
        ("v", ub, "v (F fraction bits); conv_quad: pixel y"),
        ("level", lb, "mip level (clamped to the descriptor's last)"),
        ("channel", 2, "channel of an rgba8 texture (gather4, conv_quad)"),
    ];
    if p.all_channels {
        op_fields.push(("all_channels", 1, "conv_quad on rgba8: convolve all four channels (op_channel_i ignored)"));
    }
    op_fields.extend([("dx", ob, "gather4 x offset (signed)"), ("dy", ob, "gather4 y offset (signed)")]);
    let op_s = b.stream_in("op", "an operation is offered", "the sequencer takes it", &op_fields);
    let mut req = Vec::new();
    let mut rsp = Vec::new();
    for k in 0..nb {
        req.push(b.stream_out(
            &format!("mem{k}_req"),
            &format!("bank {k} read request offered"),
            &format!("bank {k} read request taken"),
            &[("addr", aw, "word address")],
        ));
        rsp.push(b.stream_in(
            &format!("mem{k}_rsp"),
            &format!("bank {k} read data offered, in request order"),
            &format!("bank {k} read data taken"),
            &[("data", 32, "texel word")],
        ));
    }
    let data_doc = if p.all_channels {
        "16 lanes: channels, gather4 texels or conv_quad pixels (lane 4c+p: pixel p, channel c)"
    } else {
        "4 lanes: channels, gather4 texels or conv_quad pixels"
    };
    let res_s = b.stream_out(
        "res",
        "a result is offered, in op order",
        "the result is taken",
        &[
            ("kind", 2, "the op's kind"),
            ("data", p.lanes() * lw, data_doc),
            ("stitch", p.stitch_bits(), "conv_quad: 2 bits per sub-operation (s in bits 2s+1:2s): 0 none, 1 4x4, 2 2x8, 3 8x2"),
            ("subops", p.subop_bits(), "conv_quad: sub-operations"),
        ],
    );
    let idle_o = b.output("idle_o", 1, "no op in the unit (configuration writes are taken)");
    let reg_writes_o = b.output("reg_writes_o", 32, "pixel register writes so far (wraps)");

    // Each part declares its signals as it is built: this order is the
    // Verilog's.
    let config = config::build(&mut b, p, &cfg_s, &cfg_addr, &cfg_data, &idle_o);
    let stage0_in = prep::accept(&mut b, p, &config, &op_s);
    let prep = Prep::build(&mut b, p, &config, stage0_in);
    let seq = Sequencer::build(&mut b, p, &config);
    // Issue reads the tag queue's fill and the request registers' valids.
    let mem = Memory::declare(&mut b, p);
    let pass = seq.pass(&mut b, p, &mem, &req);
    let (op_take, seq_load) = prep.advance(&mut b, &pass.free, &cfg_s.valid, &op_s);
    seq.walk(&mut b, p, &config, &pass, prep.last(), &seq_load);
    mem.requests(&mut b, p, &pass, &req);
    let tags = mem.tag_queue(&mut b, p, &seq, &pass);
    let stages = Stages::handshakes(&mut b, &res_s);
    let (collect, tile) = mem.collect(&mut b, p, &tags, &pass.issue, &rsp, &stages.s1_free);
    let s1 = stages.s1(&mut b, &tags, &collect, &tile);
    let s2 = stages.s2(&mut b, p, &config, &s1, &reg_writes_o);
    stages.result(&mut b, p, &config, &s2, &res_s);

    // Ops in flight.
    let res_take = stages.res_valid.and(&res_s.ready);
    let inflight = &config.inflight;
    let iw_ = inflight.width();
    b.next(inflight, &inflight.add(&op_take.zext(iw_)).sub(&res_take.zext(iw_)), None);

    b.finish()
}
