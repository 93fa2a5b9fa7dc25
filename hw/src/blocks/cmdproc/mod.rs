//! Command processor front end (seed `001_8bf7a3f3cd91287c.txt`, items 2-38;
//! docs/cmdproc.md).
//!
//! A driver programs registers over AXI4-Lite and rings a doorbell; the unit
//! resets its render-state table, latches the descriptor and jumps to the
//! command buffer. The instruction fetcher reads beats into the instruction
//! pool (credits: a request only when its beat has room); the decoder takes
//! up to F dwords a cycle from a window at the pool's head, ending at most one
//! packet a cycle and starting the next one in the lanes left; a committed
//! command goes into the serialized output queue (the pipeline port) and its
//! record onto the trace port; a draw's indices are fetched by the primitive
//! unit into its own pool and leave one a cycle on the primitive port, tagged
//! with the command's id. Errors stop decoding; the run ends once everything
//! before the error has left. Behaviour and cycle timing: docs/cmdproc.md.
//!
//! Files: `regs.rs` (the AXI4-Lite register file, the descriptor, status),
//! `fetch.rs` (the instruction fetcher and pool, the decoder's window),
//! `decoder.rs` (the run's registers, the mode of a cycle, header decode,
//! the position and packet updates), `first.rs` and `second.rs` (the two
//! packets a cycle may take), `table.rs` (the render-state table),
//! `output.rs` (the output queue, trace and write ports), `jump.rs` (jumps
//! and the return stack), `prim.rs` (the primitive unit); here, the ports
//! and the wiring of the parts, in the order their signals are declared.

mod decoder;
mod fetch;
mod first;
mod jump;
mod output;
mod prim;
mod regs;
mod second;
mod table;

use super::memif::{axi4_top, Kind, Part, Source};
use crate::rtl::{Axi as AxiShape, Expr, ModuleBuilder, Native, Role, RtlError};
use crate::Design;
use gpurtl_params::MemIf;
use decoder::{Decoder, Fences, RunState};
use fetch::Fetch;
use gpurtl_params::cmdproc::{sh, CmdprocParams};
use jump::Jump;
use prim::Jobs;
use regs::{Axi, Regs};

/// Name of the top module.
pub const TOP: &str = "gpurtl_cmdproc";

/// Widths: t and A count 0..F lanes; r, done and packet lengths 0..2^14.
const TW: u32 = 3;
const RW: u32 = 15;

/// Payload dwords a record holds: 4, or 6 in compute mode (`RELEASE_MEM`).
fn payload_dwords(p: &CmdprocParams) -> usize {
    if p.compute {
        6
    } else {
        4
    }
}

/// A lane count as a `TW`-bit literal.
fn lit_t(v: u32) -> Expr {
    Expr::lit(TW, v as u64)
}

/// The block: the unit itself, or with `mem_if = axi4` the unit (named
/// `<TOP>_core`) behind the arbiter and its AXI4 bridge; `busy_o` then also
/// waits for the run's writes to be answered (docs/memory.md).
pub fn build(p: &CmdprocParams) -> Result<Design, RtlError> {
    match p.mem_if {
        MemIf::Native => Ok(Design::of(unit(p, TOP)?, p)),
        MemIf::Axi4 => {
            let core = Design::of(unit(p, &format!("{TOP}_core"))?, p);
            let same = || -> Box<dyn Fn(&Expr) -> Expr> { Box::new(|a: &Expr| a.clone()) };
            let sources = vec![
                Source { port: "imem".into(), kind: Kind::Read { credits: p.pool_beats }, addr: same() },
                Source { port: "pmem".into(), kind: Kind::Read { credits: p.prim_beats }, addr: same() },
                Source { port: "wr".into(), kind: Kind::Dwords { outstanding: WRITES_IN_FLIGHT }, addr: same() },
            ];
            let part = Part { design: &core, inst: "u_core", prefix: "", sources, busy: Some("busy_o") };
            let doc = [
                "Command processor front end (gpurtl block `cmdproc`) with mem_if=axi4: instruction and primitive reads and WRITE_DATA".to_string(),
                "writes through an arbiter and its bridge to one AXI4 master (docs/memory.md, docs/cmdproc.md).".to_string(),
            ];
            let b = axi4_top(TOP, &doc, &[part], AxiShape { addr_bits: 32, data_bits: p.fetch_bits, id_bits: 1 })?;
            Ok(Design::of(b.finish()?, p))
        }
    }
}

/// WRITE_DATA dwords in flight to AXI memory with `mem_if = axi4`.
pub const WRITES_IN_FLIGHT: u32 = 8;

/// The unit with its native memory ports, as module `name`.
fn unit(p: &CmdprocParams, name: &str) -> Result<crate::rtl::Module, RtlError> {
    let fb = p.fetch_bits;
    let aw = p.axi_addr_bits();
    let iw = p.id_bits;
    let sr = p.state_regs;
    let depth = p.nesting;

    let mut b = ModuleBuilder::new(name);
    b.doc("Command processor front end (gpurtl block `cmdproc`; seed 001, items 2-38).");
    b.doc("AXI4-Lite registers and doorbell, PM4 fetch and decode, primitive pool, serialized output, trace, errors.");
    b.doc(format!(
        "{}-bit fetch, {}-beat instruction pool, {}-beat primitive pool, {}-command output queue, {} state registers, nesting {}.",
        fb, p.pool_beats, p.prim_beats, p.out_depth, sr, depth
    ));
    b.doc("Behaviour and cycle timing: docs/cmdproc.md.");

    let _clk = b.clock("clk_i");
    let _rst = b.reset("rst_i");

    // The host's registers (docs/cmdproc.md, "AXI4-Lite slave") and the two
    // memory read ports, declared as the RTL layer's bus types.
    let s_axi = b.axi_lite("s_axi_", Role::Slave, aw);
    let field = |ch: &str, f: &str| s_axi.ch(ch).field(f);
    let (awvalid, awready, awaddr) = (s_axi.ch("aw").valid.clone(), s_axi.ch("aw").ready.clone(), field("aw", "addr"));
    let (wvalid, wready, wdata, wstrb) = (s_axi.ch("w").valid.clone(), s_axi.ch("w").ready.clone(), field("w", "data"), field("w", "strb"));
    let (bvalid_o, bready, bresp) = (s_axi.ch("b").valid.clone(), s_axi.ch("b").ready.clone(), field("b", "resp"));
    let (arvalid, arready, araddr) = (s_axi.ch("ar").valid.clone(), s_axi.ch("ar").ready.clone(), field("ar", "addr"));
    let (rvalid_o, rready, rdata_o, rresp) = (s_axi.ch("r").valid.clone(), s_axi.ch("r").ready.clone(), field("r", "data"), field("r", "resp"));
    let read_port = Native { addr_bits: 32, data_bits: fb, len_bits: 0, tag_bits: 0 };
    let imem = b.read_port("imem", Role::Master, read_port);
    let pmem = b.read_port("pmem", Role::Master, read_port);
    let (imem_req, imem_rsp) = (imem.req().clone(), imem.rsp().clone());
    let (pmem_req, pmem_rsp) = (pmem.req().clone(), pmem.rsp().clone());
    let wr = b.stream_out(
        "wr",
        "a WRITE_DATA dword offered",
        "dword written",
        &[("addr", 32, "byte address"), ("data", 32, "the dword"), ("last", 1, "the packet's last data dword")],
    );
    let mut rec_fields: Vec<(&str, u32, &str)> = vec![
        ("id", iw, "command id (counts from 0 at each doorbell)"),
        ("addr", 32, "byte address of the header"),
        ("header", 32, "the header dword"),
        ("count", 14, "payload dwords n"),
        ("p0", 32, "payload dword 0 (0 beyond n)"),
        ("p1", 32, "payload dword 1"),
        ("p2", 32, "payload dword 2"),
        ("p3", 32, "payload dword 3"),
    ];
    if p.compute {
        rec_fields.push(("p4", 32, "payload dword 4 (compute mode)"));
        rec_fields.push(("p5", 32, "payload dword 5 (compute mode)"));
    }
    let mut cmd_fields = rec_fields.clone();
    cmd_fields.push(("state_ptr", 32, "the descriptor's render-state table pointer"));
    let cmd = b.stream_out("cmd", "a command offered to the pipeline", "the pipeline takes it", &cmd_fields);
    let kerr_i = p.compute.then(|| b.input("kerr_i", 1, "with cmd_ready: the dispatch taken ran a kernel that failed (error `kernel`)"));
    let prim = b.stream_out(
        "prim",
        "an index offered",
        "index taken",
        &[("id", iw, "the draw's command id"), ("index", 32, "the index (16-bit ones zero-extended)"), ("last", 1, "the draw's last index")],
    );
    let trace_valid = b.output("trace_valid_o", 1, "a trace record (the cycle after the command is decoded)");
    let trace_ports: Vec<Expr> = rec_fields.iter().map(|(n, w, d)| b.output(&format!("trace_{n}_o"), *w, d)).collect();
    let state_o = b.output("state_o", 32 * sr, "render-state table, register i in bits 32i+31:32i; a presented draw's or dispatch's own state");
    let sh_o = p.compute.then(|| b.output("sh_o", 32 * sh::REGS as u32, "compute registers in docs/cmdproc.md's order; a presented dispatch's own snapshot"));
    let busy_o = b.output("busy_o", 1, "STATUS.busy");
    let irq_o = b.output("irq_o", 1, "interrupt line: |(IRQ_STATUS & IRQ_ENABLE)");

    // Each part declares its signals as it is built: this order is the
    // Verilog's.
    let axi = Axi { awvalid, awready, awaddr, wvalid, wready, wdata, wstrb, bvalid_o, bready, bresp, arvalid, arready, araddr, rvalid_o, rready, rdata_o, rresp };
    let regs = Regs::build(&mut b, p, &axi, &busy_o, &irq_o);
    let run = RunState::declare(&mut b, p);
    let fetch = Fetch::build(&mut b, p, &run, &imem_req, &imem_rsp);
    let (qfull, qempty, readers, kerr) = output::flags(&mut b, p.compute);
    let jobs = Jobs::declare(&mut b, p);
    let fences = Fences { qfull, qempty, readers, kerr, jobs_none: jobs.none.clone(), jobs_full: jobs.full.clone(), wr_ready: wr.ready.clone() };
    let sh_q = table::declare_sh(&mut b, p);
    let dec = Decoder::build(&mut b, p, &regs, &run, &fetch, &fences, &sh_q);
    table::build(&mut b, p, &regs, &fetch, &dec, &state_o);
    if let Some(sh_o) = &sh_o {
        table::build_sh(&mut b, p, &regs, &fetch, &dec, &sh_q, sh_o);
    }
    let out = output::Ports { cmd, trace_valid, trace: trace_ports, fields: rec_fields.iter().map(|(n, w, _)| (*n, *w)).collect(), kerr_i };
    output::queue(&mut b, p, &regs, &run, &dec, &fences, &out);
    output::write_port(&mut b, &run, &fetch, &dec, &wr);
    let jmp = Jump::build(&mut b, p, &regs, &run, &dec);
    let pop = run.advance(&mut b, p, &dec, &jmp);
    fetch.update(&mut b, p, &imem_rsp, &jmp, &pop);
    run.update_packet(&mut b, &regs, &dec);
    jobs.unit(&mut b, p, &regs, &run, &dec, &prim::Ports { req: pmem_req, rsp: pmem_rsp, out: prim });

    // Errors, the end of a run, status.
    let raise = run.stop(&mut b, &regs, &dec, &jmp, &fences);
    regs.record_error(&mut b, &raise, &dec, &fences);
    let run_end = b.let_(
        "run_end",
        &regs.busy.and(&run.stopped.or(&run.finished)).and(&fences.qempty).and(&jobs.none).and(&fetch.inflight.eq_lit(0)),
    );
    regs.end_run(&mut b, &axi, &run_end, &run.stopped);

    b.finish()
}
