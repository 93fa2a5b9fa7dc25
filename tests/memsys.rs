//! A composed design on one AXI4 port: the constant-buffer load, the
//! texture unit and the command processor behind one arbiter and its bridge
//! (`memsys`, a block of this test only; docs/memory.md). Each part's
//! addresses are placed in a 4 GiB region of its own (AXI address bits
//! 33:32: 0 the command processor, 1 cbload, 2 the texture unit), so one
//! memory holds all three workloads. It is linted and elaborated, and
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
use gpurtl_sim::cosim::Compiled;
use gpurtl_sim::mem::Memory;
use gpurtl_sim::models;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::agents::{shared, Agent, AxiRandom, AxiSlave, Bench};
use gpurtl_sim::tb::{self, axi_latency};
use gpurtl_tests::{failure_dir, seeds};
use serde_json::Value;
use std::path::Path;
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

/// Verilator `-Wall` and yosys (`check -assert`, no latches) accept the
/// composed design (each part is synthesized in its own tests).
#[test]
fn composed_design_lints_and_elaborates() {
    let p = MemsysParams::default();
    p.validate().unwrap();
    let (dir, top, sources) = gpurtl_tests::generated(&build(&p).unwrap());
    gpurtl_gen::tools::verilator_lint(dir.path(), &top).unwrap_or_else(|e| panic!("memsys: {e}"));
    gpurtl_gen::tools::yosys_check(dir.path(), &top, &sources).unwrap_or_else(|e| panic!("memsys: {e}"));
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

/// Seeds of the composed cosimulation (`GPURTL_SEED=N` runs one).
const SEEDS: u64 = 200;

/// The three parts' workloads of one seed.
struct Work {
    cb: models::cbload::Workload,
    tex: models::texture::Workload,
    cp: models::cmdproc::Workload,
}

fn work(p: &MemsysParams, rng: &mut Rng) -> Work {
    let lat = 4 + rng.below(10) as u32;
    let n = 1 + rng.below(10) as usize;
    let cb = tb::cbload::random_workload(rng, &p.cbload, n, lat);
    let ops = 1 + rng.below(8) as usize;
    let mut tex = models::texture::random_workload(rng, &p.texture, ops);
    tex.mem_latency = lat;
    // The command processor's writes kept apart from everything it reads,
    // as for its own AXI4 runs: memory is shared now.
    let cp = tb::cmdproc::random_workload(rng, &CmdprocParams { mem_if: MemIf::Axi4, ..p.cmdproc.clone() }, lat);
    Work { cb, tex, cp }
}

/// Region `r`'s first byte.
fn base(r: u64) -> u64 {
    r << 32
}

/// One run of the three workloads on one simulation, the AXI memory random
/// (from `seed`) or deterministic: each part's output file.
fn run(compiled: &Compiled, p: &MemsysParams, w: &Work, seed: Option<u64>, vcd: Option<&Path>) -> Result<[Value; 3], gpurtl_sim::cosim::CosimError> {
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    let mut m = Memory::new();
    m.place(&tb::cbload::view_memory(&w.cb), base(CBLOAD_REGION));
    m.place(&tb::texture::memory_image(&p.texture, &w.tex), base(TEXTURE_REGION));
    m.place(&tb::cmdproc::memory_image(&p.cmdproc, &w.cp), base(CMDPROC_REGION));
    let mem = shared(m);
    let mut rng = Rng::new(seed.unwrap_or(0) ^ 0x5eed);
    let mut pct = |n: u64| if seed.is_some() { rng.below(n) as u32 } else { 0 };
    let (cb_env, tex_env, cp_env) = (
        seed.map(|s| tb::cbload::Env { seed: s, latency: (1, 1), in_stall: pct(50), mem_req_stall: 0, mem_rsp_stall: 0, rf_stall: pct(50), rsp_stall: pct(50) }),
        seed.map(|s| tb::texture::TexStalls { seed: s, in_pct: pct(50), out_pct: pct(50), mem_ready_pct: 0, mem_delay_max: 0 }),
        seed.map(|s| tb::cmdproc::Env {
            seed: s,
            latency: (1, 1),
            imem_req_stall: 0,
            imem_rsp_stall: 0,
            pmem_req_stall: 0,
            pmem_rsp_stall: 0,
            wr_stall: 0,
            cmd_stall: pct(50),
            prim_stall: pct(50),
            axi_stall: pct(50),
        }),
    );
    let mut cb = tb::cbload::CbloadDriver::new(&sim, "cb_", &p.cbload, &w.cb, cb_env)?;
    let mut tex = tb::texture::TextureDriver::new(&sim, "tex_", &p.texture, &w.tex, tex_env)?;
    let lat = w.cb.mem_latency;
    let mut axi = AxiSlave::new(&sim, "m_axi_", mem.clone(), axi_latency(lat))?;
    if let Some(s) = seed {
        let hi = 1 + pct(40);
        axi = axi.random(AxiRandom { seed: s, latency: (1, hi), ar_stall: pct(50), aw_stall: pct(50), w_stall: pct(50), r_gap: pct(50), b_gap: pct(50) });
    }
    let mut cp = tb::cmdproc::CmdprocDriver::new(&sim, "cp_", &p.cmdproc, &w.cp, cp_env)?.write_log(axi.write_log(), base(CMDPROC_REGION));
    sim.reset(rst, 2);
    cb.configure(&mut sim, &p.cbload, &w.cb);
    let budget = 200_000 + cp.budget();
    Bench::new(budget).run(&mut sim, &mut [&mut cb as &mut dyn Agent, &mut tex, &mut cp, &mut axi])?;
    let outs = [
        models::cbload::output_json(&p.cbload, &cb.outcome(&mut sim)?),
        models::texture::output_json(&p.texture, &tex.outcome(&mut sim)?),
        models::cmdproc::output_json(&p.cmdproc, &cp.outcome(&mut sim)?),
    ];
    sim.trace_close();
    Ok(outs)
}

/// The parts' golden models, each run alone.
fn models(p: &MemsysParams, w: &Work) -> [Value; 3] {
    [
        models::cbload::output_json(&p.cbload, &models::cbload::run(&p.cbload, &w.cb)),
        models::texture::output_json(&p.texture, &models::texture::run(&p.texture, &w.tex)),
        models::cmdproc::output_json(&p.cmdproc, &models::cmdproc::run(&p.cmdproc, &w.cp)),
    ]
}

/// What is compared: everything but the figures that depend on how the
/// three share the AXI port (`cycles`), and the texture unit's fetch count,
/// which its driver counts on memory ports under its own prefix (here the
/// one AXI port is the composed design's).
fn comparable(mut v: Value, part: usize) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("cycles");
        if part == 1 {
            o.remove("texel_fetches");
        }
    }
    v
}

/// The three parts on one AXI4 port, one simulation, over 200 seeds: every
/// fourth seed the deterministic AXI memory and no stalls, the rest a
/// random memory (latency, ready, gaps, responses reordered across the
/// seven read sources) and random stalls on the parts' own ports. Each
/// part's results must equal its golden model run alone.
#[test]
fn composed_design_cosimulates_against_the_parts_models() {
    let p = MemsysParams::default();
    let compiled = compile_design(&build(&p).unwrap()).expect("verilator build");
    let (mut writes, mut results) = (0, 0);
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 48_271 + 11);
        let w = work(&p, &mut rng);
        let random = (seed % 4 != 0).then_some(seed);
        let want = models(&p, &w);
        writes += want[2]["memory_writes"].as_array().map_or(0, Vec::len);
        results += want[1]["results"].as_array().map_or(0, Vec::len) + want[0]["responses"].as_array().map_or(0, Vec::len) + want[2]["commands"].as_array().map_or(0, Vec::len);
        let problem = match run(&compiled, &p, &w, random, None) {
            Err(e) => Some(format!("the run failed: {e}")),
            Ok(got) => (0..3).find(|&k| comparable(got[k].clone(), k) != comparable(want[k].clone(), k)).map(|k| {
                let part = ["cbload", "texture", "cmdproc"][k];
                format!("{part} differs\n  model: {}\n  rtl:   {}", comparable(want[k].clone(), k), comparable(got[k].clone(), k))
            }),
        };
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("memsys_seed{seed}.vcd"));
            let _ = run(&compiled, &p, &w, random, Some(&vcd));
            panic!("memsys seed {seed} (random {random:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test memsys", vcd.display());
        }
    }
    eprintln!("memsys: {} seeds, {results} instructions, texture results and commands, {writes} WRITE_DATA writes through the shared port", seeds(SEEDS).len());
}
