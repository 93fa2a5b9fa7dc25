//! `mem_if = axi4` (docs/memory.md): blocks whose memory ports go through
//! the arbiter and its bridge to one AXI4 master `m_axi_*`.
//!
//! [`axi4_top`] wraps one or several block designs (their native form, the
//! "cores"): every port of a core that is not one of its memory ports
//! becomes a port of the top (under a prefix when several share it), the
//! memory ports become sources of one read arbiter and one write arbiter,
//! and those feed the bridge. A block with `mem_if = axi4` is one core; a
//! composed design (tests/memsys.rs) is several on one AXI port.

use crate::rtl::{self, Axi, BusKind, Expr, ModuleBuilder, Native, RtlError};
use crate::Design;

/// What a memory port of a core is.
pub enum Kind {
    /// A native read port `<port>_req` / `<port>_rsp` with one beat a
    /// request, `credits` beats of response buffer in the arbiter (at
    /// least what the core has in flight, so the arbiter never holds it back).
    Read { credits: u32 },
    /// A dword write stream `<port>` (`addr`, `data`: 32 bits, `last`; the
    /// command processor's `wr`): each dword a one-beat write with the
    /// strobes of its four bytes; up to `outstanding` in flight.
    Dwords { outstanding: u32 },
}

/// A memory port of a core.
pub struct Source {
    pub port: String,
    pub kind: Kind,
    /// The AXI byte address (the top's `addr_bits` wide) of a core address.
    pub addr: Box<dyn Fn(&Expr) -> Expr>,
}

/// One core in the top.
pub struct Part<'a> {
    pub design: &'a Design,
    /// Instance name (`u_core`).
    pub inst: &'a str,
    /// Prefix of its ports on the top ("" for a block's own top).
    pub prefix: &'a str,
    pub sources: Vec<Source>,
    /// An output of the core that says it is busy (`busy_o`): on the top it
    /// also stays high while the core's writes wait for their responses.
    pub busy: Option<&'a str>,
}

/// The top `name`: the parts, the arbiters and the bridge (`axi`: address
/// and data width; the ID width is worked out here). `doc`: the top's
/// comment lines.
pub fn axi4_top(name: &str, doc: &[String], parts: &[Part], axi: Axi) -> Result<ModuleBuilder, RtlError> {
    let mut b = ModuleBuilder::new(name);
    for d in doc {
        b.doc(d.clone());
    }
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let src = Native { addr_bits: axi.addr_bits, data_bits: axi.data_bits, len_bits: 0, tag_bits: 0 };
    let db = axi.data_bits / 8;
    // Read sources with their buffer beats; write sources with their part.
    let mut reads: Vec<(rtl::Bus, &Source, u32)> = Vec::new();
    let mut writes: Vec<(rtl::Stream, &Source, usize)> = Vec::new();
    let mut outstanding = 1;
    let mut busy: Vec<(usize, Expr, Expr)> = Vec::new();
    for (pi, part) in parts.iter().enumerate() {
        let m = part.design.top();
        let memory: Vec<String> = part
            .sources
            .iter()
            .flat_map(|s| match s.kind {
                Kind::Read { .. } => vec![format!("{}_req", s.port), format!("{}_rsp", s.port)],
                Kind::Dwords { .. } => vec![s.port.clone()],
            })
            .collect();
        let in_stream = |id| m.streams.iter().any(|d| d.valid == id || d.ready == id || d.fields.iter().any(|f| f.1 == id));
        // Plain ports: clock and reset joined, the rest on the top.
        let mut conns: Vec<(&str, Expr)> = vec![("clk_i", clk.clone()), ("rst_i", rst.clone())];
        let mut busy_wire = None;
        for &id in &m.ports {
            let p = m.sig(id);
            if in_stream(id) || p.name == "clk_i" || p.name == "rst_i" {
                continue;
            }
            let top_name = format!("{}{}", part.prefix, p.name);
            let e = if part.busy == Some(p.name.as_str()) {
                let w = b.wire(&format!("{}_{}", part.inst, p.name.trim_end_matches("_o")), p.width);
                busy_wire = Some((b.output(&top_name, p.width, &p.doc), w.clone()));
                w
            } else if p.kind == rtl::SigKind::Input {
                b.input(&top_name, p.width, &p.doc)
            } else {
                b.output(&top_name, p.width, &p.doc)
            };
            conns.push((p.name.as_str(), e));
        }
        let u = b.instance_of(part.design, part.inst, &conns);
        if let Some((out, w)) = busy_wire {
            busy.push((pi, out, w));
        }
        for d in &m.streams {
            if !memory.contains(&d.name) {
                b.expose(&u.stream(&d.name), &format!("{}{}", part.prefix, d.name));
            }
        }
        for s in &part.sources {
            match s.kind {
                Kind::Read { credits } => reads.push((u.bus(BusKind::Read, &s.port), s, credits)),
                Kind::Dwords { outstanding: o } => {
                    outstanding = outstanding.max(o);
                    writes.push((u.stream(&s.port), s, pi))
                }
            }
        }
    }

    let id_bits = rtl::clog2(reads.len().max(writes.len()) as u64).max(1);
    let axi = Axi { id_bits, ..axi };
    let cr = [("clk_i", clk.clone()), ("rst_i", rst.clone())];
    let mut mem_rd = None;
    if !reads.is_empty() {
        let credits: Vec<u32> = reads.iter().map(|r| r.2).collect();
        let m = rtl::arbiter::read_arbiter(&format!("{name}_rd_arbiter"), src, &credits)?;
        let u = b.instance(&m, "u_rd_arbiter", &cr);
        for (k, (core, s, _)) in reads.iter().enumerate() {
            let arb = u.bus(BusKind::Read, &format!("rd{k}"));
            b.assign(&arb.req().valid, &core.req().valid);
            b.assign(&arb.req().field("addr"), &(s.addr)(&core.req().field("addr")));
            b.assign(&core.req().ready, &arb.req().ready);
            b.connect(arb.rsp(), core.rsp());
        }
        mem_rd = Some(u.bus(BusKind::Read, "mem_rd"));
    }
    let mut mem_wr = None;
    // Per part, its writes taken and not yet answered.
    let mut owing: Vec<Vec<Expr>> = vec![Vec::new(); parts.len()];
    if !writes.is_empty() {
        let m = rtl::arbiter::write_arbiter(&format!("{name}_wr_arbiter"), writes.len() as u32, src, outstanding)?;
        let u = b.instance(&m, "u_wr_arbiter", &cr);
        let lg = rtl::clog2(db as u64);
        for (k, (core, s, pi)) in writes.iter().enumerate() {
            let arb = u.bus(BusKind::Write, &format!("wr{k}"));
            let addr = (s.addr)(&core.field("addr"));
            let dword = core.field("data");
            // The beat holding the dword, its four bytes strobed.
            let (beat, strb) = if lg > 2 {
                let lane = addr.slice(lg - 1, 2);
                let lanes: Vec<Expr> = (0..db / 4).map(|j| lane.eq_lit(j as u64).repl(4)).collect();
                (Expr::cat(&[addr.slice(axi.addr_bits - 1, lg), Expr::zero(lg)]), Expr::cat_lanes(&lanes))
            } else {
                (addr.clone(), Expr::ones(db))
            };
            b.assign(&arb.req().valid, &core.valid);
            b.assign(&arb.req().field("addr"), &beat);
            b.assign(&arb.req().field("data"), &dword.repl(axi.data_bits / 32));
            b.assign(&arb.req().field("strb"), &strb);
            b.assign(&core.ready, &arb.req().ready);
            b.waive_unused(&core.field("last"), "a packet's last dword needs nothing more of memory");
            if lg > 2 {
                b.waive_unused(&addr, "the byte offset within the dword: dwords are aligned");
            }
            // Writes taken and not yet answered keep the part busy.
            b.assign(&arb.rsp().ready, &Expr::bit(true));
            let ow = rtl::bits_for(outstanding as u64);
            let owed = b.reg(&format!("wr{k}_owed_q"), ow, 0);
            let took = arb.req().valid.and(&arb.req().ready);
            b.next(&owed, &owed.add(&took.zext(ow)).sub(&arb.rsp().valid.zext(ow)), None);
            owing[*pi].push(owed.eq_lit(0).not());
        }
        mem_wr = Some(u.bus(BusKind::Write, "mem_wr"));
    }
    for (pi, out, w) in &busy {
        b.assign(out, &owing[*pi].iter().fold(w.clone(), |a, o| a.or(o)));
    }
    let rd = mem_rd.as_ref().map(|_| Native { tag_bits: rtl::clog2(reads.len() as u64).max(1), ..src });
    let wr = mem_wr.as_ref().map(|_| (Native { tag_bits: rtl::clog2(writes.len() as u64).max(1), ..src }, outstanding));
    let bridge = rtl::axi::bridge(&format!("{name}_axi_bridge"), rd, wr, axi)?;
    let err = b.output("axi_err_o", 1, "sticky: an R beat or B response other than OKAY was taken");
    let u = b.instance(&bridge, "u_axi", &[("clk_i", clk), ("rst_i", rst), ("axi_err_o", err)]);
    if let Some(r) = &mem_rd {
        b.connect_bus(r, &u.bus(BusKind::Read, "rd"));
    }
    if let Some(w) = &mem_wr {
        b.connect_bus(w, &u.bus(BusKind::Write, "wr"));
    }
    b.expose_bus(&u.bus(BusKind::Axi4, "m_axi_"), "m_axi_");
    Ok(b)
}
