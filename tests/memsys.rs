//! A composed design on one AXI4 port: the constant-buffer load, the
//! texture unit and the command processor behind one arbiter and its bridge
//! (`memsys`, a block of this test only; docs/memory.md). Each part's
//! addresses are placed in a 4 GiB region of its own (AXI address bits
//! 33:32: 0 the command processor, 1 cbload, 2 the texture unit), so one
//! memory holds all three workloads. It is linted and synthesized, and
//! cosimulated on one simulation by the parts' own agents with a random
//! AXI memory: every part's results must equal its golden model run alone.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_hw::blocks::memif::{axi4_top, Kind, Part, Source};
use gpurtl_hw::blocks::{cbload, cmdproc, texture};
use gpurtl_hw::rtl::{Axi, Expr, RtlError};
use gpurtl_hw::Design;
use gpurtl_params::cbload::CbloadParams;
use gpurtl_params::cmdproc::CmdprocParams;
use gpurtl_params::texture::TextureParams;
use gpurtl_params::{nested_table, BlockParams, Checker, MemIf, ParamErrors, ParamInfo};
use gpurtl_tests::lint_and_synth_clean;
use serde::{Deserialize, Serialize};

/// The three parts; each must be `mem_if = native` and read 32-bit beats
/// (the AXI data width the texture unit fixes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct MemsysParams {
    cbload: CbloadParams,
    texture: TextureParams,
    cmdproc: CmdprocParams,
}

impl Default for MemsysParams {
    fn default() -> Self {
        MemsysParams {
            cbload: CbloadParams { reg_bits: 64, regs: 16, read_bits: 32, max_outstanding: 4, views: 3, max_burst: 8, addr_bits: 20, ..CbloadParams::default() },
            texture: TextureParams { max_size: 64, max_kernel: 5, max_outstanding: 8, addr_bits: 16, ..TextureParams::default() },
            cmdproc: CmdprocParams { fetch_bits: 32, pool_beats: 8, prim_beats: 4, ..CmdprocParams::default() },
        }
    }
}

impl BlockParams for MemsysParams {
    const BLOCK: &'static str = "memsys";
    fn table() -> Vec<ParamInfo> {
        [nested_table("cbload", CbloadParams::table()), nested_table("texture", TextureParams::table()), nested_table("cmdproc", CmdprocParams::table())].concat()
    }
    fn validate(&self) -> Result<(), ParamErrors> {
        let mut c = Checker::default();
        c.nested("cbload", self.cbload.validate());
        c.nested("texture", self.texture.validate());
        c.nested("cmdproc", self.cmdproc.validate());
        c.check(self.cbload.read_bits == 32, "cbload.read_bits", self.cbload.read_bits, "32: the AXI data width (the texture unit's texel words)");
        c.check(self.cmdproc.fetch_bits == 32, "cmdproc.fetch_bits", self.cmdproc.fetch_bits, "32: the AXI data width (the texture unit's texel words)");
        c.check(self.cbload.addr_bits <= 32, "cbload.addr_bits", self.cbload.addr_bits, "at most 32: its region is 4 GiB");
        c.check(texture::axi_addr_bits(&self.texture) <= 32, "texture.addr_bits", self.texture.addr_bits, "at most 28 with 4 banks: its region is 4 GiB");
        for (f, m) in [("cbload.mem_if", self.cbload.mem_if), ("texture.mem_if", self.texture.mem_if), ("cmdproc.mem_if", self.cmdproc.mem_if)] {
            c.check(m == MemIf::Native, f, m, "native: the composed design puts the parts behind its own arbiter");
        }
        c.finish()
    }
    fn presets() -> Vec<(&'static str, Self)> {
        vec![("default", Self::default())]
    }
}

/// AXI address bits: a 4 GiB region a part.
const AXI_ADDR_BITS: u32 = 34;

/// Region `r`'s AXI address of a part's address `a`.
fn region(r: u64) -> Box<dyn Fn(&Expr) -> Expr> {
    Box::new(move |a: &Expr| Expr::cat(&[Expr::lit(2, r), a.zext(32)]))
}

/// Where the parts' memory lives.
const CMDPROC_REGION: u64 = 0;
const CBLOAD_REGION: u64 = 1;
const TEXTURE_REGION: u64 = 2;

fn build(p: &MemsysParams) -> Result<Design, RtlError> {
    let (cb, tex, cp) = (cbload::build(&p.cbload)?, texture::build(&p.texture)?, cmdproc::build(&p.cmdproc)?);
    let bank_bits = gpurtl_hw::rtl::clog2(p.texture.banks as u64);
    let tex_sources = (0..p.texture.banks)
        .map(|k| {
            let addr = move |w: &Expr| {
                let mut parts = vec![Expr::lit(2, TEXTURE_REGION), w.zext(30 - bank_bits)];
                if bank_bits > 0 {
                    parts.push(Expr::lit(bank_bits, k as u64));
                }
                parts.push(Expr::zero(2));
                Expr::cat(&parts)
            };
            Source { port: format!("mem{k}"), kind: Kind::Read { credits: p.texture.max_outstanding }, addr: Box::new(addr) }
        })
        .collect();
    let parts = [
        Part {
            design: &cb,
            inst: "u_cbload",
            prefix: "cb_",
            sources: vec![Source { port: "mem".into(), kind: Kind::Read { credits: p.cbload.max_outstanding }, addr: region(CBLOAD_REGION) }],
            busy: None,
        },
        Part { design: &tex, inst: "u_texture", prefix: "tex_", sources: tex_sources, busy: None },
        Part {
            design: &cp,
            inst: "u_cmdproc",
            prefix: "cp_",
            sources: vec![
                Source { port: "imem".into(), kind: Kind::Read { credits: p.cmdproc.pool_beats }, addr: region(CMDPROC_REGION) },
                Source { port: "pmem".into(), kind: Kind::Read { credits: p.cmdproc.prim_beats }, addr: region(CMDPROC_REGION) },
                Source { port: "wr".into(), kind: Kind::Dwords { outstanding: cmdproc::WRITES_IN_FLIGHT }, addr: region(CMDPROC_REGION) },
            ],
            busy: Some("busy_o"),
        },
    ];
    let doc = ["cbload, texture and cmdproc on one AXI4 port (a composed design of the tests).".to_string()];
    let b = axi4_top("memsys", &doc, &parts, Axi { addr_bits: AXI_ADDR_BITS, data_bits: 32, id_bits: 1 })?;
    Ok(Design::of(b.finish()?, p))
}

#[test]
fn composed_design_lints_and_synthesizes() {
    let p = MemsysParams::default();
    p.validate().unwrap();
    lint_and_synth_clean("memsys", &build(&p).unwrap());
}

/// Each block with `mem_if = axi4` at its defaults and presets: Verilator
/// `-Wall`, Icarus and yosys (`check -assert`, no latches) accept it, and
/// its memory ports are one AXI4 master with the names vendor tools read.
#[test]
fn mem_if_axi4_lints_and_elaborates() {
    use gpurtl_gen::tools;
    let mut designs: Vec<(String, Design)> = Vec::new();
    for (n, p) in CbloadParams::presets() {
        designs.push((format!("cbload {n}"), cbload::build(&CbloadParams { mem_if: MemIf::Axi4, ..p }).unwrap()));
    }
    for (n, p) in TextureParams::presets() {
        designs.push((format!("texture {n}"), texture::build(&TextureParams { mem_if: MemIf::Axi4, ..p }).unwrap()));
    }
    for (n, p) in CmdprocParams::presets() {
        designs.push((format!("cmdproc {n}"), cmdproc::build(&CmdprocParams { mem_if: MemIf::Axi4, ..p }).unwrap()));
    }
    for (what, d) in designs {
        let ports: Vec<&str> = d.top().port_signals().map(|s| s.name.as_str()).collect();
        for want in ["m_axi_arvalid", "m_axi_araddr", "m_axi_rdata", "m_axi_rlast", "m_axi_awvalid", "m_axi_wstrb", "m_axi_bresp", "axi_err_o"] {
            assert!(ports.contains(&want), "{what}: no port {want}");
        }
        assert!(!ports.iter().any(|p| p.starts_with("mem_req") || p.starts_with("imem_") || p.starts_with("mem0_")), "{what}: native memory ports left");
        let (dir, top, sources) = gpurtl_tests::generated(&d);
        tools::verilator_lint(dir.path(), &top).unwrap_or_else(|e| panic!("{what}: {e}"));
        tools::iverilog(dir.path(), &top, &sources).unwrap_or_else(|e| panic!("{what}: {e}"));
        tools::yosys_check(dir.path(), &top, &sources).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}
