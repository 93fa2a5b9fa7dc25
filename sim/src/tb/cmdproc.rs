//! Testbench for the generated command processor front end
//! (docs/cmdproc.md): an AXI4-Lite master that programs the registers and
//! rings the doorbell the way a driver does, an in-order memory with
//! per-request latency and stalls behind both read ports (the workload's
//! dword runs, zero elsewhere), sinks with back-pressure on the write,
//! pipeline and primitive ports, and a monitor that checks, cycle by cycle,
//! every promise of the document it can see from the ports. Results come
//! back in the golden model's format.

use super::{fail, hang, mask, LoopTimer, ReadPort, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::cmdproc::{pm4, Command, Outcome, Record, Registers, Status, Workload};
use crate::rng::Rng;
use gpurtl_params::cmdproc::{reg, Cause, CmdprocParams, Opcode};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// Randomized environment. Without one (what `gpurtl run` uses) the memory
/// answers a request taken in cycle `c` exactly in cycle
/// `max(c + mem_latency, previous answer + 1)`, the write, pipeline and
/// primitive ports are always ready and the AXI master drives its
/// transactions back to back: the timing the model's `cycles` describes.
/// With one, everything but `cycles` must be the same.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    /// Seeds the stalls, the delays and the order of the register writes.
    pub seed: u64,
    /// Latency of each read request, uniform in this range (inclusive; at
    /// least 1); answers stay in request order, one a cycle per port.
    pub latency: (u32, u32),
    /// Percent of cycles `imem_req_ready_i` is low.
    pub imem_req_stall: u32,
    /// Percent of cycles an instruction answer that is due is held back.
    pub imem_rsp_stall: u32,
    /// Percent of cycles `pmem_req_ready_i` is low.
    pub pmem_req_stall: u32,
    /// Percent of cycles a primitive answer that is due is held back.
    pub pmem_rsp_stall: u32,
    /// Percent of cycles `wr_ready_i` is low.
    pub wr_stall: u32,
    /// Percent of cycles `cmd_ready_i` is low.
    pub cmd_stall: u32,
    /// Percent of cycles `prim_ready_i` is low.
    pub prim_stall: u32,
    /// AXI master: the chance (percent) of each further cycle of delay
    /// before a transaction, between its address and data valids, and of
    /// `bready` / `rready` being low in a cycle.
    pub axi_stall: u32,
}

impl Env {
    fn worst_stall(&self) -> u32 {
        [
            self.imem_req_stall,
            self.imem_rsp_stall,
            self.pmem_req_stall,
            self.pmem_rsp_stall,
            self.wr_stall,
            self.cmd_stall,
            self.prim_stall,
            self.axi_stall,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }
}


/// The fields of a command record (`cmd_*` or `trace_*`).
#[derive(Clone, Copy)]
struct RecPorts {
    id: PortHandle,
    addr: PortHandle,
    header: PortHandle,
    count: PortHandle,
    p: [PortHandle; 4],
}

impl RecPorts {
    fn find(s: &Sim, name: &str) -> Result<RecPorts, CosimError> {
        let f = |field: &str| s.port(&format!("{name}_{field}_o"));
        Ok(RecPorts {
            id: f("id")?,
            addr: f("addr")?,
            header: f("header")?,
            count: f("count")?,
            p: [f("p0")?, f("p1")?, f("p2")?, f("p3")?],
        })
    }
    fn read(&self, s: &Sim) -> Record {
        Record {
            id: s.get(self.id) as u32,
            addr: s.get(self.addr) as u32,
            header: s.get(self.header) as u32,
            count: s.get(self.count) as u32,
            p: self.p.map(|h| s.get(h) as u32),
        }
    }
}

#[derive(Clone, Copy)]
struct Ports {
    rst: PortHandle,
    awvalid: PortHandle,
    awready: PortHandle,
    awaddr: PortHandle,
    wvalid: PortHandle,
    wready: PortHandle,
    wdata: PortHandle,
    wstrb: PortHandle,
    bvalid: PortHandle,
    bready: PortHandle,
    bresp: PortHandle,
    arvalid: PortHandle,
    arready: PortHandle,
    araddr: PortHandle,
    rvalid: PortHandle,
    rready: PortHandle,
    rdata: PortHandle,
    rresp: PortHandle,
    imem: ReadPort,
    pmem: ReadPort,
    wr_valid: PortHandle,
    wr_ready: PortHandle,
    wr_addr: PortHandle,
    wr_data: PortHandle,
    wr_last: PortHandle,
    cmd_valid: PortHandle,
    cmd_ready: PortHandle,
    cmd: RecPorts,
    cmd_state_ptr: PortHandle,
    prim_valid: PortHandle,
    prim_ready: PortHandle,
    prim_id: PortHandle,
    prim_index: PortHandle,
    prim_last: PortHandle,
    trace_valid: PortHandle,
    trace: RecPorts,
    state: PortHandle,
    busy: PortHandle,
    irq: PortHandle,
}

impl Ports {
    fn find(s: &Sim) -> Result<Ports, CosimError> {
        Ok(Ports {
            rst: s.port("rst_i")?,
            awvalid: s.port("s_axi_awvalid")?,
            awready: s.port("s_axi_awready")?,
            awaddr: s.port("s_axi_awaddr")?,
            wvalid: s.port("s_axi_wvalid")?,
            wready: s.port("s_axi_wready")?,
            wdata: s.port("s_axi_wdata")?,
            wstrb: s.port("s_axi_wstrb")?,
            bvalid: s.port("s_axi_bvalid")?,
            bready: s.port("s_axi_bready")?,
            bresp: s.port("s_axi_bresp")?,
            arvalid: s.port("s_axi_arvalid")?,
            arready: s.port("s_axi_arready")?,
            araddr: s.port("s_axi_araddr")?,
            rvalid: s.port("s_axi_rvalid")?,
            rready: s.port("s_axi_rready")?,
            rdata: s.port("s_axi_rdata")?,
            rresp: s.port("s_axi_rresp")?,
            imem: ReadPort::find(s, "imem")?,
            pmem: ReadPort::find(s, "pmem")?,
            wr_valid: s.port("wr_valid_o")?,
            wr_ready: s.port("wr_ready_i")?,
            wr_addr: s.port("wr_addr_o")?,
            wr_data: s.port("wr_data_o")?,
            wr_last: s.port("wr_last_o")?,
            cmd_valid: s.port("cmd_valid_o")?,
            cmd_ready: s.port("cmd_ready_i")?,
            cmd: RecPorts::find(s, "cmd")?,
            cmd_state_ptr: s.port("cmd_state_ptr_o")?,
            prim_valid: s.port("prim_valid_o")?,
            prim_ready: s.port("prim_ready_i")?,
            prim_id: s.port("prim_id_o")?,
            prim_index: s.port("prim_index_o")?,
            prim_last: s.port("prim_last_o")?,
            trace_valid: s.port("trace_valid_o")?,
            trace: RecPorts::find(s, "trace")?,
            state: s.port("state_o")?,
            busy: s.port("busy_o")?,
            irq: s.port("irq_o")?,
        })
    }

    /// Every input but the clock.
    fn inputs(&self) -> Vec<PortHandle> {
        vec![
            self.rst,
            self.awvalid,
            self.awaddr,
            self.wvalid,
            self.wdata,
            self.wstrb,
            self.bready,
            self.arvalid,
            self.araddr,
            self.rready,
            self.imem.req_ready,
            self.imem.rsp_valid,
            self.imem.rsp_data,
            self.pmem.req_ready,
            self.pmem.rsp_valid,
            self.pmem.rsp_data,
            self.wr_ready,
            self.cmd_ready,
            self.prim_ready,
        ]
    }
}

/// The workload's memory image: dword runs, zero elsewhere.
#[derive(Default)]
struct Memory {
    /// By byte address (a multiple of 4).
    dwords: HashMap<u32, u32>,
}

impl Memory {
    fn new(w: &Workload) -> Result<Memory, String> {
        let mut dwords = HashMap::new();
        for (i, (a, ds)) in w.memory.iter().enumerate() {
            if a % 4 != 0 {
                return Err(format!("memory[{i}] starts at 0x{a:08x}, not a multiple of 4"));
            }
            for (k, d) in ds.iter().enumerate() {
                dwords.insert(a.wrapping_add(4 * k as u32), *d);
            }
        }
        Ok(Memory { dwords })
    }
    fn dword(&self, addr: u32) -> u32 {
        self.dwords.get(&(addr & !3)).copied().unwrap_or(0)
    }
    /// The `f` dwords of the beat at `addr`.
    fn beat(&self, addr: u32, f: u32, out: &mut Vec<u32>) {
        out.extend((0..f).map(|j| self.dword(addr.wrapping_add(4 * j))));
    }
    /// The index of `s` bytes at `addr` (a 16-bit one zero-extended).
    fn index(&self, addr: u32, s: u32) -> u32 {
        let d = self.dword(addr);
        match (s, addr & 2) {
            (4, _) => d,
            (_, 0) => d & 0xFFFF,
            _ => d >> 16,
        }
    }
}

/// A read taken by the memory, not yet answered.
struct Pending {
    addr: u32,
    taken: u64,
    /// The first cycle its answer may be presented.
    due: u64,
}

/// One read port's in-order memory.
#[derive(Default)]
struct MemQueue {
    pending: VecDeque<Pending>,
    last_due: u64,
    last_answer: Option<u64>,
    /// The address of a request offered and not taken last cycle: it must
    /// be offered again, unchanged (valid/ready: never withdrawn).
    offered: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Write { addr: u32, data: u32, strb: u32 },
    /// A doorbell presented only in a cycle in which `busy_o` is 1 (and so
    /// taken in that cycle); dropped once the run has ended.
    ExtraDoorbell { data: u32, strb: u32 },
    Read { addr: u32 },
}

fn write(addr: u32, data: u32) -> Op {
    Op::Write { addr, data, strb: 0xF }
}

/// The transaction on the bus: its address and data valids go up at these
/// cycles and stay up until the handshake (`sent`).
#[derive(Clone, Copy, Debug)]
struct Active {
    op: Op,
    aw_at: u64,
    w_at: u64,
    sent: bool,
}

/// What a read must give, fixed in the cycle of its address handshake.
struct ReadCtx {
    addr: u32,
    busy: bool,
    irq: bool,
    traces: u64,
    ignored: u64,
    irq_enable: u32,
    /// The value of an `rw` register, or 0 for `DOORBELL` and unmapped offsets.
    expect: Option<u32>,
}

/// The AXI4-Lite master: one transaction at a time, in queue order.
#[derive(Default)]
struct Axi {
    queue: VecDeque<Op>,
    active: Option<Active>,
    next_start: u64,
    /// A write response is owed (`bvalid` must be 1 until `bready`).
    b_owed: bool,
    r_owed: Option<ReadCtx>,
    /// Completed reads: (offset, value).
    results: Vec<(u32, u32)>,
}

impl Axi {
    fn busy(&self) -> bool {
        self.active.is_some() || !self.queue.is_empty()
    }
}

/// A draw whose indices are due on the primitive port.
struct Draw {
    /// Its trace record's position.
    k: usize,
    s: u32,
    o: u32,
    m: u32,
}

/// What one run showed on the ports, from its doorbell on.
#[derive(Default)]
struct RunObs {
    doorbell: u64,
    ended: bool,
    busy_cycles: u64,
    prim_base: u32,
    prim_size: u32,
    state_ptr: u32,
    /// `STATE_INIT` at the doorbell, as `state_o` words.
    init: Vec<u32>,
    traces: Vec<Record>,
    cmds: Vec<Record>,
    /// Per trace record, the indices taken so far.
    prims: Vec<Vec<u32>>,
    draws: VecDeque<Draw>,
    index_size: u32,
    writes: Vec<(u32, Vec<u32>)>,
    write_open: bool,
    write_cmds: usize,
}

struct Bench<'a> {
    sim: Sim,
    io: Ports,
    p: &'a CmdprocParams,
    env: Option<Env>,
    /// Stalls, delays, orders.
    rng: Rng,
    /// Junk on inputs that must not matter.
    junk: Rng,
    mem: Memory,
    latency: u64,
    imem: MemQueue,
    pmem: MemQueue,
    axi: Axi,
    /// The `rw` registers as written, by offset / 4.
    shadow: Vec<u32>,
    /// `IGNORED` as it must be.
    ignored: u64,
    prev_busy: bool,
    /// `busy_o` must rise in this cycle (the one after a doorbell).
    start_at: Option<u64>,
    runs: u64,
    run: RunObs,
    /// The workload being run (for messages).
    which: usize,
    scratch: Vec<u32>,
}

/// The mask of an `rw` register's bits, `None` for other offsets.
fn rw_mask(p: &CmdprocParams, off: u32) -> Option<u32> {
    match off {
        reg::CMD_BASE | reg::CMD_SIZE | reg::PRIM_BASE => Some(!3),
        reg::PRIM_SIZE | reg::STATE_PTR => Some(!0),
        reg::IRQ_ENABLE => Some(3),
        o if o >= reg::STATE_INIT && o < reg::STATE_INIT + 4 * p.state_regs && o % 4 == 0 => Some(!0),
        _ => None,
    }
}

/// A word-aligned offset that no register uses (reads 0, ignores writes).
fn unmapped(p: &CmdprocParams, off: u32) -> bool {
    off.is_multiple_of(4) && !(off < 0x38 || (reg::STATE_INIT..reg::STATE_INIT + 4 * p.state_regs).contains(&off))
}

fn reg_name(off: u32) -> String {
    let name = match off {
        reg::CMD_BASE => "CMD_BASE",
        reg::CMD_SIZE => "CMD_SIZE",
        reg::PRIM_BASE => "PRIM_BASE",
        reg::PRIM_SIZE => "PRIM_SIZE",
        reg::STATE_PTR => "STATE_PTR",
        reg::DOORBELL => "DOORBELL",
        reg::STATUS => "STATUS",
        reg::ERR_CAUSE => "ERR_CAUSE",
        reg::ERR_ADDR => "ERR_ADDR",
        reg::IRQ_ENABLE => "IRQ_ENABLE",
        reg::IRQ_STATUS => "IRQ_STATUS",
        reg::CMD_COUNT => "CMD_COUNT",
        reg::BUSY_CYCLES => "BUSY_CYCLES",
        reg::IGNORED => "IGNORED",
        o if o >= reg::STATE_INIT => return format!("STATE_INIT[{}] (0x{o:02x})", (o - reg::STATE_INIT) / 4),
        o => return format!("offset 0x{o:02x}"),
    };
    name.to_string()
}

fn bit(sim: &Sim, h: PortHandle) -> bool {
    sim.get(h) == 1
}

fn op_of(header: u32) -> Option<Opcode> {
    Opcode::from_code((header >> 8) & 0xFF)
}

/// A command record as the document defines it: a type-3 packet without
/// error whose fields are those in memory at its address.
fn check_record(p: &CmdprocParams, mem: &Memory, r: &Record) -> Result<(), String> {
    let h = r.header;
    if h >> 30 != 3 {
        return Err(format!("header 0x{h:08x} is not type 3"));
    }
    let n = ((h >> 16) + 1) & 0x3FFF;
    if r.count != n {
        return Err(format!("count {} but the header 0x{h:08x} gives {n}", r.count));
    }
    let Some(op) = op_of(h) else {
        return Err(format!("header 0x{h:08x} has an unknown opcode"));
    };
    if !op.count_ok(n) {
        return Err(format!("{} with {n} payload dwords", op.name()));
    }
    if !r.addr.is_multiple_of(4) {
        return Err(format!("address 0x{:08x} is not a multiple of 4", r.addr));
    }
    let at = mem.dword(r.addr);
    if at != h {
        return Err(format!("header 0x{h:08x}, but memory at 0x{:08x} holds 0x{at:08x}", r.addr));
    }
    for k in 0..4 {
        let want = if k < n { mem.dword(r.addr.wrapping_add(4 + 4 * k)) } else { 0 };
        if r.p[k as usize] != want {
            return Err(format!("p{k} is 0x{:08x}, expected 0x{want:08x}", r.p[k as usize]));
        }
    }
    let bad = match op {
        Opcode::SetContextReg => r.p[0] as u64 + n as u64 - 1 > p.state_regs as u64,
        Opcode::IndexType => r.p[0] > 1,
        Opcode::WriteData => r.p[2] != 0 || !r.p[1].is_multiple_of(4),
        Opcode::IndirectBuffer => r.p[1] != 0 || !r.p[0].is_multiple_of(4),
        _ => false,
    };
    if bad {
        return Err(format!("a {} with a field that is an error", op.name()));
    }
    Ok(())
}

impl Bench<'_> {
    /// Give up: the message says which workload and cycle; the waveform is closed.
    fn bad(&mut self, msg: String) -> CosimError {
        let msg = format!("workload {}, cycle {}: {msg}", self.which, self.sim.cycle());
        fail(&mut self.sim, msg)
    }

    /// The RTL stopped making progress.
    fn stuck(&mut self, msg: String) -> CosimError {
        let msg = format!("workload {}, cycle {}: {msg}", self.which, self.sim.cycle());
        hang(&mut self.sim, msg)
    }

    fn stall(&mut self, pct: fn(&Env) -> u32) -> bool {
        match self.env {
            Some(e) => self.rng.chance(pct(&e)),
            None => false,
        }
    }

    /// A random AXI delay in cycles (0 without an environment).
    fn delay(&mut self) -> u64 {
        let Some(e) = self.env else { return 0 };
        let mut d = 0;
        while d < 12 && self.rng.chance(e.axi_stall.min(90)) {
            d += 1;
        }
        d
    }

    fn latency(&mut self) -> u64 {
        match self.env {
            Some(e) => {
                let lo = e.latency.0.max(1) as u64;
                let hi = (e.latency.1 as u64).max(lo);
                lo + self.rng.below(hi - lo + 1)
            }
            None => self.latency,
        }
    }

    fn step(&mut self) -> Result<(), CosimError> {
        match self.clock() {
            Ok(()) => Ok(()),
            Err(m) => Err(self.bad(m)),
        }
    }

    /// One clock cycle: drive every input, settle, check and record every
    /// handshake, clock edge.
    fn clock(&mut self) -> Result<(), String> {
        let io = self.io;
        let now = self.sim.cycle();
        // Both are registers: their values for this cycle are already out.
        let busy_pre = self.sim.get(io.busy) == 1;
        let bvalid_pre = self.sim.get(io.bvalid) == 1;
        self.axi_drive(now, busy_pre, bvalid_pre);
        let i_ready = !self.stall(|e| e.imem_req_stall);
        let p_ready = !self.stall(|e| e.pmem_req_stall);
        self.sim.set(io.imem.req_ready, i_ready as u64);
        self.sim.set(io.pmem.req_ready, p_ready as u64);
        let i_ans = self.drive_answer(true, now);
        let p_ans = self.drive_answer(false, now);
        let wr_ready = !self.stall(|e| e.wr_stall);
        let cmd_ready = !self.stall(|e| e.cmd_stall);
        let prim_ready = !self.stall(|e| e.prim_stall);
        self.sim.set(io.wr_ready, wr_ready as u64);
        self.sim.set(io.cmd_ready, cmd_ready as u64);
        self.sim.set(io.prim_ready, prim_ready as u64);
        self.sim.eval();

        let busy = self.sim.get(io.busy) == 1;
        self.track_busy(now, busy)?;
        let s = &self.sim;
        let (tv, cv, pv, wv) = (bit(s, io.trace_valid), bit(s, io.cmd_valid), bit(s, io.prim_valid), bit(s, io.wr_valid));
        let (iv, mv) = (bit(s, io.imem.req_valid), bit(s, io.pmem.req_valid));
        if !busy && (tv || cv || pv || wv || iv || mv) {
            return Err(format!(
                "activity while busy_o is 0: trace_valid {} cmd_valid {} prim_valid {} wr_valid {} imem_req_valid {} pmem_req_valid {}",
                tv as u8, cv as u8, pv as u8, wv as u8, iv as u8, mv as u8
            ));
        }
        if tv {
            let r = io.trace.read(&self.sim);
            self.on_trace(r)?;
        }
        if cv && cmd_ready {
            let r = io.cmd.read(&self.sim);
            let sp = self.sim.get(io.cmd_state_ptr) as u32;
            self.on_cmd(r, sp)?;
        }
        if pv && prim_ready {
            let (id, index, last) = (self.sim.get(io.prim_id) as u32, self.sim.get(io.prim_index) as u32, bit(&self.sim, io.prim_last));
            self.on_prim(id, index, last)?;
        }
        if wv && wr_ready {
            let (addr, data, last) = (self.sim.get(io.wr_addr) as u32, self.sim.get(io.wr_data) as u32, bit(&self.sim, io.wr_last));
            self.on_write(addr, data, last)?;
        }
        self.mem_observe(true, i_ready, i_ans, now)?;
        self.mem_observe(false, p_ready, p_ans, now)?;
        self.axi_observe(now, busy)?;
        self.sim.tick();
        Ok(())
    }

    /// Present the head of a read port's queue if it is due (and not held
    /// back); junk on the data otherwise. Whether it is presented.
    fn drive_answer(&mut self, inst: bool, now: u64) -> bool {
        let (q, ports) = if inst { (&self.imem, self.io.imem) } else { (&self.pmem, self.io.pmem) };
        let head = q.pending.front().filter(|h| h.due <= now).map(|h| h.addr);
        let pct: fn(&Env) -> u32 = if inst { |e| e.imem_rsp_stall } else { |e| e.pmem_rsp_stall };
        let present = head.filter(|_| !self.stall(pct));
        let f = self.p.fetch_bits / 32;
        self.scratch.clear();
        match present {
            Some(a) => self.mem.beat(a, f, &mut self.scratch),
            None => {
                for _ in 0..f {
                    self.scratch.push(self.junk.next_u64() as u32);
                }
            }
        }
        self.sim.set(ports.rsp_valid, present.is_some() as u64);
        self.sim.set_words(ports.rsp_data, &self.scratch);
        present.is_some()
    }

    fn mem_observe(&mut self, inst: bool, req_ready: bool, answered: bool, now: u64) -> Result<(), String> {
        let (name, ports) = if inst { ("imem", self.io.imem) } else { ("pmem", self.io.pmem) };
        if answered {
            if self.sim.get(ports.rsp_ready) != 1 {
                return Err(format!("{name}_rsp_ready_o is 0 with an answer on the port; it must always be 1"));
            }
            let q = if inst { &mut self.imem } else { &mut self.pmem };
            q.pending.pop_front();
            q.last_answer = Some(now);
        }
        let valid = self.sim.get(ports.req_valid) == 1;
        let addr_now = self.sim.get(ports.req_addr) as u32;
        {
            let q = if inst { &mut self.imem } else { &mut self.pmem };
            if let Some(a) = q.offered {
                if !valid || addr_now != a {
                    return Err(format!(
                        "{name} request for 0x{a:08x} withdrawn or changed before it was taken (valid {}, address 0x{addr_now:08x})",
                        valid as u8
                    ));
                }
            }
            q.offered = (valid && !req_ready).then_some(addr_now);
        }
        if req_ready && valid {
            let addr = addr_now;
            let bb = self.p.fetch_bits / 8;
            if !addr.is_multiple_of(bb) {
                return Err(format!("{name} request for 0x{addr:08x}, not a beat ({bb} bytes) address"));
            }
            let lat = self.latency();
            let q = if inst { &mut self.imem } else { &mut self.pmem };
            let due = (now + lat).max(q.last_due + 1);
            q.last_due = due;
            q.pending.push_back(Pending { addr, taken: now, due });
        }
        Ok(())
    }

    fn track_busy(&mut self, now: u64, busy: bool) -> Result<(), String> {
        if self.start_at == Some(now) {
            if !busy {
                return Err("busy_o is 0 in the cycle after the doorbell was taken".into());
            }
            self.start_at = None;
        } else if busy && !self.prev_busy {
            return Err("busy_o rose without a doorbell taken in the cycle before".into());
        }
        if !busy && self.prev_busy {
            // The run's last busy cycle, now - 1, began with no read in flight.
            for (name, q) in [("imem", &self.imem), ("pmem", &self.pmem)] {
                // (A run fetches only what its buffers hold: no read is
                // taken in its last cycle either.)
                if let Some(r) = q.pending.front() {
                    return Err(format!(
                        "busy_o fell with the {name} read of 0x{:08x} (taken in cycle {}) not answered",
                        r.addr, r.taken
                    ));
                }
                if q.last_answer == Some(now - 1) {
                    return Err(format!("busy_o fell after a {name} answer in the last busy cycle, so a read was in flight at its start"));
                }
            }
            self.run.ended = true;
        }
        if busy {
            self.run.busy_cycles += 1;
            // No table write can have happened yet (it needs a fetched beat).
            if now == self.run.doorbell + 2 && self.sim.words(self.io.state) != &self.run.init[..] {
                return Err(format!(
                    "state_o {:x?} is not STATE_INIT {:x?} two cycles after the doorbell",
                    self.sim.words(self.io.state),
                    self.run.init
                ));
            }
        }
        self.prev_busy = busy;
        Ok(())
    }

    fn on_trace(&mut self, r: Record) -> Result<(), String> {
        let k = self.run.traces.len();
        let id = (k as u64 & mask(self.p.id_bits)) as u32;
        if r.id != id {
            return Err(format!("trace record #{k} has id {}, expected {id}: {r:?}", r.id));
        }
        check_record(self.p, &self.mem, &r).map_err(|e| format!("trace record #{k} at 0x{:08x}: {e}", r.addr))?;
        match op_of(r.header) {
            Some(Opcode::IndexType) => self.run.index_size = if r.p[0] == 0 { 2 } else { 4 },
            Some(Opcode::DrawIndexOffset2) => {
                let (o, m, s) = (r.p[1], r.p[2], self.run.index_size);
                if (o as u64 + m as u64) * s as u64 > self.run.prim_size as u64 {
                    return Err(format!(
                        "draw #{k} at 0x{:08x} committed with indices {o}..{o}+{m} of {s} bytes, past PRIM_SIZE {}",
                        r.addr, self.run.prim_size
                    ));
                }
                if m > 0 {
                    self.run.draws.push_back(Draw { k, s, o, m });
                }
            }
            Some(Opcode::WriteData) => {
                self.run.write_cmds += 1;
                let n = self.run.write_cmds;
                if self.run.write_open || self.run.writes.len() != n {
                    return Err(format!(
                        "WRITE_DATA #{k} at 0x{:08x} committed, but its writes are not complete ({} write entries for {n} WRITE_DATA, one open: {})",
                        r.addr,
                        self.run.writes.len(),
                        self.run.write_open
                    ));
                }
                let (first, data) = &self.run.writes[n - 1];
                let want: Vec<u32> = (0..r.count - 3).map(|j| self.mem.dword(r.addr.wrapping_add(16 + 4 * j))).collect();
                if *first != r.p[1] || *data != want {
                    return Err(format!(
                        "WRITE_DATA #{k} at 0x{:08x} wrote {data:x?} at 0x{first:08x}; its packet says {want:x?} at 0x{:08x}",
                        r.addr, r.p[1]
                    ));
                }
            }
            _ => {}
        }
        self.run.traces.push(r);
        self.run.prims.push(Vec::new());
        Ok(())
    }

    fn on_cmd(&mut self, r: Record, state_ptr: u32) -> Result<(), String> {
        let k = self.run.cmds.len();
        match self.run.traces.get(k) {
            None => return Err(format!("command #{k} {r:?} left the pipeline port before its trace record")),
            Some(t) if *t != r => {
                return Err(format!("command #{k} on the pipeline port {r:?} differs from its trace record {t:?}"))
            }
            Some(_) => {}
        }
        if state_ptr != self.run.state_ptr {
            return Err(format!("command #{k}: cmd_state_ptr_o 0x{state_ptr:08x}, STATE_PTR is 0x{:08x}", self.run.state_ptr));
        }
        self.run.cmds.push(r);
        Ok(())
    }

    fn on_prim(&mut self, id: u32, index: u32, last: bool) -> Result<(), String> {
        let Some(&Draw { k, s, o, m }) = self.run.draws.front() else {
            return Err(format!("index {index:#x} (id {id}) on the primitive port with no draw waiting for indices"));
        };
        let rec = self.run.traces[k];
        if id != rec.id {
            return Err(format!("index of id {id} while draw #{k} (id {}) is waiting for its indices", rec.id));
        }
        let i = self.run.prims[k].len() as u64;
        let addr = (self.run.prim_base as u64 + (o as u64 + i) * s as u64) as u32;
        let want = self.mem.index(addr, s);
        if index != want {
            return Err(format!("index {i} of draw #{k} (id {id}) is {index:#x}; the {s}-byte index at 0x{addr:08x} is {want:#x}"));
        }
        let is_last = i + 1 == m as u64;
        if last != is_last {
            return Err(format!("index {i} of the {m} of draw #{k} (id {id}) has prim_last_o {}", last as u8));
        }
        self.run.prims[k].push(index);
        if last {
            self.run.draws.pop_front();
        }
        Ok(())
    }

    fn on_write(&mut self, addr: u32, data: u32, last: bool) -> Result<(), String> {
        // The fence: every earlier command and index has left.
        if self.run.cmds.len() != self.run.traces.len() {
            return Err(format!(
                "a write beat while {} committed commands have not left the pipeline port",
                self.run.traces.len() - self.run.cmds.len()
            ));
        }
        if let Some(d) = self.run.draws.front() {
            return Err(format!("a write beat while draw #{} has not sent all its indices", d.k));
        }
        if !self.run.write_open {
            if !addr.is_multiple_of(4) {
                return Err(format!("a write to 0x{addr:08x}, not a multiple of 4"));
            }
            self.run.writes.push((addr, Vec::new()));
            self.run.write_open = true;
        }
        let Some((first, ds)) = self.run.writes.last_mut() else { unreachable!("an entry is open") };
        let want = first.wrapping_add(4 * ds.len() as u32);
        if addr != want {
            return Err(format!("write beat {} of the entry at 0x{first:08x} goes to 0x{addr:08x}, not 0x{want:08x}", ds.len()));
        }
        ds.push(data);
        if last {
            self.run.write_open = false;
        }
        Ok(())
    }

    fn axi_drive(&mut self, now: u64, busy: bool, bvalid: bool) {
        let io = self.io;
        if self.axi.active.is_none() && now >= self.axi.next_start {
            if let Some(op) = self.axi.queue.pop_front() {
                let (aw_at, w_at) = (now + self.delay(), now + self.delay());
                self.axi.active = Some(Active { op, aw_at, w_at, sent: false });
            }
        }
        let (mut aw, mut w, mut ar) = (None, None, None);
        if let Some(a) = self.axi.active.filter(|a| !a.sent) {
            match a.op {
                Op::Write { addr, data, strb } => {
                    if now >= a.aw_at {
                        aw = Some(addr);
                    }
                    if now >= a.w_at {
                        w = Some((data, strb));
                    }
                }
                Op::ExtraDoorbell { data, strb } => {
                    if now >= a.aw_at.max(a.w_at) {
                        if busy && !bvalid {
                            aw = Some(reg::DOORBELL);
                            w = Some((data, strb));
                        } else {
                            self.axi.active = None;
                            self.axi.next_start = now + 1;
                        }
                    }
                }
                Op::Read { addr } => {
                    if now >= a.aw_at {
                        ar = Some(addr);
                    }
                }
            }
        }
        let am = mask(self.p.axi_addr_bits());
        let j = self.junk.next_u64();
        let (wd, ws) = w.unwrap_or((j as u32, (j >> 32) as u32 & 0xF));
        self.sim.set(io.awvalid, aw.is_some() as u64);
        self.sim.set(io.awaddr, aw.map_or(self.junk.next_u64() & am, |a| a as u64));
        self.sim.set(io.wvalid, w.is_some() as u64);
        self.sim.set(io.wdata, wd as u64);
        self.sim.set(io.wstrb, ws as u64);
        self.sim.set(io.arvalid, ar.is_some() as u64);
        self.sim.set(io.araddr, ar.map_or(self.junk.next_u64() & am, |a| a as u64));
        let bready = !self.stall(|e| e.axi_stall.min(90));
        let rready = !self.stall(|e| e.axi_stall.min(90));
        self.sim.set(io.bready, bready as u64);
        self.sim.set(io.rready, rready as u64);
    }

    fn finish_op(&mut self, now: u64) {
        self.axi.active = None;
        self.axi.next_start = now + 1 + self.delay();
    }

    fn axi_observe(&mut self, now: u64, busy: bool) -> Result<(), String> {
        let io = self.io;
        let g = |h: PortHandle| bit(&self.sim, h);
        let (awv, awr, wv, wr, bv, br) = (g(io.awvalid), g(io.awready), g(io.wvalid), g(io.wready), g(io.bvalid), g(io.bready));
        let (arv, arr, rv, rr) = (g(io.arvalid), g(io.arready), g(io.rvalid), g(io.rready));
        let want_w = awv && wv && !bv;
        if awr != want_w || wr != want_w {
            return Err(format!(
                "s_axi_awready {} s_axi_wready {}; both must be awvalid & wvalid & !bvalid = {}",
                awr as u8, wr as u8, want_w as u8
            ));
        }
        if arr == rv {
            return Err(format!("s_axi_arready {} with s_axi_rvalid {}; it must be !rvalid", arr as u8, rv as u8));
        }
        if bv != self.axi.b_owed {
            return Err(if bv { "s_axi_bvalid without a write to answer" } else { "s_axi_bvalid is 0 while a write response is owed" }.into());
        }
        if rv != self.axi.r_owed.is_some() {
            return Err(if rv { "s_axi_rvalid without a read to answer" } else { "s_axi_rvalid is 0 while read data is owed" }.into());
        }
        if bv && self.sim.get(io.bresp) != 0 {
            return Err(format!("s_axi_bresp {}, not OKAY", self.sim.get(io.bresp)));
        }
        if rv && self.sim.get(io.rresp) != 0 {
            return Err(format!("s_axi_rresp {}, not OKAY", self.sim.get(io.rresp)));
        }
        if bv && br {
            self.axi.b_owed = false;
            self.finish_op(now);
        }
        if rv && rr {
            let v = self.sim.get(io.rdata) as u32;
            let Some(ctx) = self.axi.r_owed.take() else { unreachable!("checked above") };
            self.check_read(&ctx, v)?;
            self.axi.results.push((ctx.addr, v));
            self.finish_op(now);
        }
        if awv && awr {
            let Some(a) = self.axi.active.as_mut() else { unreachable!("valid only for the active transaction") };
            a.sent = true;
            let (addr, data, strb, extra) = match a.op {
                Op::Write { addr, data, strb } => (addr, data, strb, false),
                Op::ExtraDoorbell { data, strb } => (reg::DOORBELL, data, strb, true),
                Op::Read { .. } => unreachable!("a read has no write address"),
            };
            self.axi.b_owed = true;
            self.on_reg_write(now, busy, addr, data, strb, extra)?;
        }
        if arv && arr {
            let Some(a) = self.axi.active.as_mut() else { unreachable!("valid only for the active transaction") };
            a.sent = true;
            let Op::Read { addr } = a.op else { unreachable!("only a read has a read address") };
            let expect = match rw_mask(self.p, addr) {
                Some(_) => Some(self.shadow[addr as usize / 4]),
                None if addr == reg::DOORBELL || unmapped(self.p, addr) => Some(0),
                None => None,
            };
            self.axi.r_owed = Some(ReadCtx {
                addr,
                busy,
                irq: bit(&self.sim, io.irq),
                traces: self.run.traces.len() as u64,
                ignored: self.ignored,
                irq_enable: self.shadow[reg::IRQ_ENABLE as usize / 4],
                expect,
            });
        }
        Ok(())
    }

    /// A write taken by the slave at the edge ending `now`.
    fn on_reg_write(&mut self, now: u64, busy: bool, addr: u32, data: u32, strb: u32, extra: bool) -> Result<(), String> {
        if let Some(m) = rw_mask(self.p, addr) {
            let bytes = (0..4).filter(|b| strb >> b & 1 == 1).fold(0u32, |acc, b| acc | 0xFF << (8 * b));
            let i = addr as usize / 4;
            self.shadow[i] = ((self.shadow[i] & !bytes) | (data & bytes)) & m;
        }
        if addr == reg::DOORBELL && strb & 1 == 1 && data & 0xFF == 1 {
            if busy {
                self.ignored += 1;
            } else if extra {
                return Err("an extra doorbell presented while busy_o was 1 was taken with busy_o 0".into());
            } else {
                let sr = self.p.state_regs as usize;
                let sh = &self.shadow;
                self.run = RunObs {
                    doorbell: now,
                    prim_base: sh[reg::PRIM_BASE as usize / 4],
                    prim_size: sh[reg::PRIM_SIZE as usize / 4],
                    state_ptr: sh[reg::STATE_PTR as usize / 4],
                    init: sh[reg::STATE_INIT as usize / 4..][..sr].to_vec(),
                    index_size: 4,
                    ..RunObs::default()
                };
                self.runs += 1;
                self.start_at = Some(now + 1);
            }
        }
        Ok(())
    }

    fn check_read(&self, ctx: &ReadCtx, v: u32) -> Result<(), String> {
        let name = reg_name(ctx.addr);
        if let Some(e) = ctx.expect {
            if v != e {
                return Err(format!("read of {name} gave 0x{v:08x}, expected 0x{e:08x}"));
            }
        }
        let ok = match ctx.addr {
            reg::STATUS if ctx.busy => v == reg::STATUS_BUSY,
            reg::STATUS => v == 0 || v == reg::STATUS_DONE || v == reg::STATUS_ERROR,
            reg::IRQ_STATUS => v <= 3 && ctx.irq == (v & ctx.irq_enable != 0),
            reg::CMD_COUNT => v as u64 == ctx.traces & 0xFFFF_FFFF,
            reg::IGNORED => v as u64 == ctx.ignored & 0xFFFF_FFFF,
            reg::ERR_CAUSE => v == 0 || Cause::from_code(v).is_some(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "read of {name} gave 0x{v:08x} with busy_o {}, irq_o {}, IRQ_ENABLE {}, {} commands committed, {} doorbells ignored",
                ctx.busy as u8, ctx.irq as u8, ctx.irq_enable, ctx.traces, ctx.ignored
            ));
        }
        Ok(())
    }

    /// Run the AXI queue to its end.
    fn wait_axi(&mut self, what: &str) -> Result<(), CosimError> {
        let start = self.sim.cycle();
        let limit = 500 + 200 * (self.axi.queue.len() as u64 + 1);
        while self.axi.busy() {
            if self.sim.cycle() - start > limit {
                let msg = format!("AXI: {what} did not finish in {limit} cycles; stuck at {:?}", self.axi.active.map(|a| a.op));
                return Err(self.stuck(msg));
            }
            self.step()?;
        }
        Ok(())
    }

    fn pick_rw(&mut self) -> u32 {
        let fixed = [reg::CMD_BASE, reg::CMD_SIZE, reg::PRIM_BASE, reg::PRIM_SIZE, reg::STATE_PTR, reg::IRQ_ENABLE];
        let n = fixed.len() as u64 + self.p.state_regs as u64;
        match self.rng.below(n) as usize {
            i if i < fixed.len() => fixed[i],
            i => reg::STATE_INIT + 4 * (i - fixed.len()) as u32,
        }
    }

    fn pick_unmapped(&mut self) -> u32 {
        let top = 1u64 << self.p.axi_addr_bits();
        let first = (reg::STATE_INIT + 4 * self.p.state_regs) as u64;
        if first < top && self.rng.chance(50) {
            (first + 4 * self.rng.below((top - first) / 4)) as u32
        } else {
            *self.rng.pick(&[0x38, 0x3C])
        }
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }

    /// The doorbell value: strobe 0 set and `wdata[7:0] = 1`.
    fn doorbell(&mut self) -> (u32, u32) {
        match self.env {
            Some(_) => ((self.junk.next_u64() as u32 & !0xFF) | 1, 1 | (self.rng.below(16) as u32 & 0xE)),
            None => (1, 0xF),
        }
    }

    /// One workload: program, ring, serve until the run ends, read the results.
    fn one(&mut self, w: &Workload, extra: bool) -> Result<Outcome, CosimError> {
        self.mem = Memory::new(w).map_err(|m| self.bad(m))?;
        self.latency = w.mem_latency.max(1) as u64;
        let r = &w.registers;
        let sr = self.p.state_regs;
        let mut groups: Vec<Vec<Op>> = [
            (reg::CMD_BASE, r.cmd_base),
            (reg::CMD_SIZE, r.cmd_size),
            (reg::PRIM_BASE, r.prim_base),
            (reg::PRIM_SIZE, r.prim_size),
            (reg::STATE_PTR, r.state_ptr),
            (reg::IRQ_ENABLE, r.irq_enable),
        ]
        .into_iter()
        .chain((0..sr).map(|i| (reg::STATE_INIT + 4 * i, r.state.get(i as usize).copied().unwrap_or(0))))
        .map(|(a, v)| vec![write(a, v)])
        .collect();
        let mut reads = vec![reg::CMD_BASE, reg::PRIM_SIZE, reg::STATE_INIT + 4 * (sr - 1)];
        if self.env.is_some() {
            // One register written in three parts, the middle one with
            // random strobes; the read between them checks the strobes.
            let g = self.rng.below(groups.len() as u64) as usize;
            if let Op::Write { addr, data, .. } = groups[g][0] {
                let strb = self.rng.below(16) as u32;
                let j = self.junk.next_u64() as u32;
                groups[g] = vec![write(addr, j), Op::Write { addr, data, strb }, Op::Read { addr }, Op::Write { addr, data, strb: !strb & 0xF }];
            }
            // Writes that must change nothing: an unmapped offset, a
            // read-only register, a doorbell write that is not a doorbell.
            let (j, k) = (self.junk.next_u64(), self.junk.next_u64());
            let un = self.pick_unmapped();
            groups.push(vec![Op::Write { addr: un, data: j as u32, strb: (j >> 32) as u32 & 0xF }]);
            let ro = *self.rng.pick(&[reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IGNORED]);
            groups.push(vec![write(ro, k as u32)]);
            let not_bell = if self.rng.chance(50) {
                Op::Write { addr: reg::DOORBELL, data: (j as u32 & !0xFF) | 1, strb: self.rng.below(8) as u32 * 2 }
            } else {
                let low = *self.rng.pick(&[0, 2, 3, 0x11, 0x81, 0xFF]);
                write(reg::DOORBELL, ((k >> 32) as u32 & !0xFF) | low)
            };
            groups.push(vec![not_bell]);
            self.shuffle(&mut groups);
            reads.clear();
            for _ in 0..6 + sr {
                if self.rng.chance(30) {
                    let a = self.pick_rw();
                    reads.push(a);
                }
            }
            reads.extend([reg::DOORBELL, reg::STATUS, reg::CMD_COUNT, reg::IGNORED, reg::ERR_CAUSE]);
            reads.push(self.pick_unmapped());
            self.shuffle(&mut reads);
        }
        let mut ops: Vec<Op> = groups.into_iter().flatten().collect();
        ops.push(write(reg::IRQ_STATUS, reg::IRQ_DONE | reg::IRQ_ERROR));
        ops.extend(reads.iter().map(|&addr| Op::Read { addr }));
        ops.push(Op::Read { addr: reg::IRQ_STATUS });
        self.axi.results.clear();
        self.axi.queue.extend(ops);
        self.wait_axi("programming the registers")?;
        let irq_status = self.axi.results.last().map_or(0, |r| r.1);
        if irq_status != 0 {
            return Err(self.bad(format!("IRQ_STATUS is {irq_status} after writing 1s to clear it")));
        }

        // The doorbell, then (maybe) more while busy and reads on the way.
        let limit = run_limit(self.p, w, self.env);
        let runs0 = self.runs;
        let (data, strb) = self.doorbell();
        self.axi.queue.push_back(Op::Write { addr: reg::DOORBELL, data, strb });
        let mut during = Vec::new();
        if extra {
            for _ in 0..2 + self.rng.below(3) {
                let (data, strb) = self.doorbell();
                during.push(Op::ExtraDoorbell { data, strb });
            }
        }
        if self.env.is_some() {
            for _ in 0..self.rng.below(4) {
                let addr = match self.rng.below(8) {
                    0 => self.pick_rw(),
                    1 => reg::DOORBELL,
                    2 => reg::IRQ_STATUS,
                    3 => reg::IGNORED,
                    4 | 5 => reg::CMD_COUNT,
                    _ => reg::STATUS,
                };
                during.push(Op::Read { addr });
            }
            self.shuffle(&mut during);
        }
        self.axi.queue.extend(during);
        let start = self.sim.cycle();
        while !(self.runs > runs0 && self.run.ended) {
            if self.sim.cycle() - start > limit {
                let o = &self.run;
                let msg = format!(
                    "the run did not end within {limit} cycles of the doorbell: busy_o {}, {} commands committed, {} left the pipeline port, {} draws waiting for indices, {} write entries, {} imem and {} pmem reads in flight",
                    self.prev_busy as u8,
                    o.traces.len(),
                    o.cmds.len(),
                    o.draws.len(),
                    o.writes.len(),
                    self.imem.pending.len(),
                    self.pmem.pending.len()
                );
                return Err(self.stuck(msg));
            }
            self.step()?;
        }
        self.wait_axi("the transactions during the run")?;

        // The results.
        let mut finals =
            vec![reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IRQ_STATUS, reg::IGNORED];
        if self.env.is_some() {
            self.shuffle(&mut finals);
        }
        self.axi.results.clear();
        self.axi.queue.extend(finals.iter().map(|&addr| Op::Read { addr }));
        self.wait_axi("reading the results")?;
        let results = std::mem::take(&mut self.axi.results);
        let val = |a: u32| results.iter().find(|(x, _)| *x == a).map_or(0, |r| r.1);
        self.sim.eval();
        let irq = self.sim.get(self.io.irq) == 1;
        let state_table = self.sim.words(self.io.state).to_vec();
        let regs = [reg::STATUS, reg::ERR_CAUSE, reg::ERR_ADDR, reg::CMD_COUNT, reg::BUSY_CYCLES, reg::IRQ_STATUS].map(val);
        match self.outcome(regs, irq, state_table) {
            Ok(o) => Ok(o),
            Err(m) => Err(self.bad(m)),
        }
    }

    /// The run's outcome, from the registers read after it (`STATUS`,
    /// `ERR_CAUSE`, `ERR_ADDR`, `CMD_COUNT`, `BUSY_CYCLES`, `IRQ_STATUS`)
    /// and what the ports showed.
    fn outcome(&mut self, regs: [u32; 6], irq: bool, state_table: Vec<u32>) -> Result<Outcome, String> {
        let [status_reg, cause, err_addr, count, busy_cycles, irq_status] = regs;
        let o = &self.run;
        let (status, error) = match status_reg {
            reg::STATUS_DONE => {
                if cause != 0 || err_addr != 0 {
                    return Err(format!("the run is done, but ERR_CAUSE is {cause} and ERR_ADDR 0x{err_addr:08x}"));
                }
                (Status::Done, None)
            }
            reg::STATUS_ERROR => {
                let c = Cause::from_code(cause).ok_or_else(|| format!("the run ended in an error of cause {cause}, not a cause code"))?;
                if err_addr % 4 != 0 {
                    return Err(format!("ERR_ADDR 0x{err_addr:08x} is not a header's address"));
                }
                (Status::Error, Some((c, err_addr)))
            }
            s => return Err(format!("STATUS is 0x{s:x} after the run; exactly one of done (4) and error (2) must be set, busy not")),
        };
        if count as u64 != o.cmds.len() as u64 {
            return Err(format!("CMD_COUNT is {count}, but {} commands left the pipeline port", o.cmds.len()));
        }
        if busy_cycles as u64 != o.busy_cycles {
            return Err(format!("BUSY_CYCLES is {busy_cycles}, but busy_o was 1 for {} cycles", o.busy_cycles));
        }
        let bit = if status == Status::Done { reg::IRQ_DONE } else { reg::IRQ_ERROR };
        if irq_status != bit {
            return Err(format!("IRQ_STATUS is {irq_status} after a run that ended {status:?} (cleared before the doorbell)"));
        }
        let enable = self.shadow[reg::IRQ_ENABLE as usize / 4];
        if irq != (irq_status & enable != 0) {
            return Err(format!("irq_o is {} with IRQ_STATUS {irq_status} and IRQ_ENABLE {enable}", irq as u8));
        }
        if o.cmds.len() != o.traces.len() {
            return Err(format!("{} trace records but {} commands on the pipeline port", o.traces.len(), o.cmds.len()));
        }
        if let Some(d) = o.draws.front() {
            return Err(format!("draw #{} got {} of its {} indices", d.k, o.prims[d.k].len(), d.m));
        }
        if o.write_open || o.writes.len() != o.write_cmds {
            return Err(format!("{} write entries (one open: {}) for {} WRITE_DATA commands", o.writes.len(), o.write_open, o.write_cmds));
        }
        let trace = o.traces.iter().map(pm4::trace_line).collect();
        let commands = o.cmds.iter().zip(&o.prims).map(|(&record, prims)| Command { record, prims: prims.clone() }).collect();
        Ok(Outcome {
            commands,
            state_table,
            status,
            error,
            irq,
            memory_writes: o.writes.clone(),
            trace,
            cycles: busy_cycles as u64,
        })
    }
}

/// Give up on a run after this many cycles from its doorbell: generous for
/// what its buffers hold (every dword, index and jump at the worst latency,
/// slowed by the worst stall).
fn run_limit(p: &CmdprocParams, w: &Workload, env: Option<Env>) -> u64 {
    let k = walk(p, w);
    let lat = env.map_or(w.mem_latency, |e| e.latency.0.max(e.latency.1)).max(1) as u64;
    let slow = 100 / (100 - env.map_or(0, |e| e.worst_stall()).min(95) as u64) + 1;
    let units = k.dwords + k.indices + 2 * k.packets + 4 * k.jumps + 16;
    (2_000 + 2 * units * (lat + 8)).saturating_mul(slow)
}

/// Run the workload through the RTL: [`run_many`] of one workload.
pub fn run(
    compiled: &Compiled,
    p: &CmdprocParams,
    w: &Workload,
    env: Option<Env>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let (mut o, stats) = run_many(compiled, p, std::slice::from_ref(w), env, false, vcd)?;
    Ok((o.remove(0), stats))
}

/// Run the workloads one after the other in one simulation, reset once:
/// for each, load its memory image, program the registers over AXI (in a
/// random order under an environment), clear `IRQ_STATUS`, read some back,
/// ring the doorbell and serve the ports until `busy_o` has risen and
/// fallen, then read the result registers. With `extra_doorbells`, a few
/// more doorbells are rung while `busy_o` is 1; `IGNORED` must count them.
/// Every promise of docs/cmdproc.md visible at the ports is checked; the
/// first violation ends the simulation with an error (and a complete
/// waveform in `vcd`).
pub fn run_many(
    compiled: &Compiled,
    p: &CmdprocParams,
    ws: &[Workload],
    env: Option<Env>,
    extra_doorbells: bool,
    vcd: Option<&Path>,
) -> Result<(Vec<Outcome>, RunStats), CosimError> {
    for (i, w) in ws.iter().enumerate() {
        if w.registers.state.len() > p.state_regs as usize {
            let msg = format!("workload {i}: {} STATE_INIT values for {} registers", w.registers.state.len(), p.state_regs);
            return Err(CosimError::Io(msg));
        }
        Memory::new(w).map_err(|m| CosimError::Io(format!("workload {i}: {m}")))?;
    }
    let mut sim = compiled.start(vcd)?;
    let io = Ports::find(&sim)?;
    for h in io.inputs() {
        sim.set_words(h, &[]);
    }
    sim.reset(io.rst, 2);
    let timer = LoopTimer::start(&sim);
    let seed = env.map_or(0, |e| e.seed);
    let mut b = Bench {
        sim,
        io,
        p,
        env,
        rng: Rng::new(seed),
        junk: Rng::new(seed ^ 0x6a09_e667_f3bc_c908),
        mem: Memory::default(),
        latency: 1,
        imem: MemQueue::default(),
        pmem: MemQueue::default(),
        axi: Axi::default(),
        shadow: vec![0; (reg::STATE_INIT / 4 + p.state_regs) as usize],
        ignored: 0,
        prev_busy: false,
        start_at: None,
        runs: 0,
        run: RunObs::default(),
        which: 0,
        scratch: Vec::new(),
    };
    let mut out = Vec::with_capacity(ws.len());
    for (i, w) in ws.iter().enumerate() {
        b.which = i;
        out.push(b.one(w, extra_doorbells)?);
    }
    b.sim.trace_close();
    Ok((out, timer.stats(&b.sim)))
}

/// What a workload's buffers hold, walked from the main buffer as the
/// document reads them (following `INDIRECT_BUFFER`s the nesting allows),
/// but going on past the errors that do not hide the packet structure: a
/// bound for the cycle limit, and the paths a random workload reaches.
#[derive(Debug, Default)]
struct Walk {
    dwords: u64,
    packets: u64,
    jumps: u64,
    indices: u64,
    features: Vec<&'static str>,
}

/// Stop walking after this many dwords (a bound only has to be generous).
const WALK_CAP: u64 = 1 << 24;

struct Walker<'a> {
    p: &'a CmdprocParams,
    mem: Memory,
    prim_size: u32,
    index_size: u32,
    out: Walk,
}

fn walk(p: &CmdprocParams, w: &Workload) -> Walk {
    let mut k = Walker { p, mem: Memory::new(w).unwrap_or_default(), prim_size: w.registers.prim_size, index_size: 4, out: Walk::default() };
    k.buffer(w.registers.cmd_base & !3, w.registers.cmd_size / 4, 0);
    k.out
}

impl Walker<'_> {
    fn feature(&mut self, f: &'static str) {
        if !self.out.features.contains(&f) {
            self.out.features.push(f);
        }
    }

    fn buffer(&mut self, addr: u32, size: u32, level: u32) {
        self.out.jumps += 1;
        if size == 0 {
            self.feature("empty buffer");
        }
        if !addr.is_multiple_of(self.p.fetch_bits / 8) {
            self.feature("unaligned buffer");
        }
        if level > 0 && level == self.p.nesting {
            self.feature("deepest buffer");
        }
        let mut i = 0u32;
        while i < size {
            if self.out.dwords > WALK_CAP {
                return;
            }
            let a = addr.wrapping_add(4 * i);
            let h = self.mem.dword(a);
            self.out.packets += 1;
            match h >> 30 {
                0 | 1 => {
                    self.feature("type");
                    self.out.dwords += 1;
                    return;
                }
                2 => {
                    self.feature("filler");
                    self.out.dwords += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let n = ((h >> 16) + 1) & 0x3FFF;
            if i as u64 + 1 + n as u64 > size as u64 {
                self.feature("overrun");
                self.out.dwords += (size - i) as u64;
                return;
            }
            self.out.dwords += 1 + n as u64;
            let pk: [u32; 4] = std::array::from_fn(|k| if (k as u32) < n { self.mem.dword(a.wrapping_add(4 + 4 * k as u32)) } else { 0 });
            match op_of(h) {
                None => self.feature("opcode"),
                Some(op) if !op.count_ok(n) => self.feature("count"),
                Some(op) => {
                    self.feature(op.name());
                    self.packet(op, n, pk, level);
                }
            }
            i += 1 + n;
        }
    }

    fn packet(&mut self, op: Opcode, n: u32, pk: [u32; 4], level: u32) {
        match op {
            Opcode::Nop if n == 0 => self.feature("one-dword NOP"),
            Opcode::Nop if n > 16 => self.feature("long NOP"),
            Opcode::SetContextReg if pk[0] as u64 + n as u64 - 1 > self.p.state_regs as u64 => self.feature("state_range"),
            Opcode::SetContextReg if n > 2 => self.feature("SET_CONTEXT_REG of several values"),
            Opcode::IndexType if pk[0] > 1 => self.feature("field: INDEX_TYPE"),
            Opcode::IndexType => self.index_size = if pk[0] == 0 { 2 } else { 4 },
            Opcode::DrawIndexOffset2 => {
                let (o, m, s) = (pk[1] as u64, pk[2] as u64, self.index_size as u64);
                if (o + m) * s > self.prim_size as u64 {
                    self.feature("prim_range");
                } else {
                    self.out.indices += m;
                    self.feature(match (m, s) {
                        (0, _) => "draw of no indices",
                        (_, 2) => "draw of 16-bit indices",
                        _ => "draw of 32-bit indices",
                    });
                }
            }
            Opcode::WriteData if pk[2] != 0 || !pk[1].is_multiple_of(4) => self.feature("field: WRITE_DATA"),
            Opcode::IndirectBuffer if level == self.p.nesting => self.feature("nesting"),
            Opcode::IndirectBuffer if pk[1] != 0 || !pk[0].is_multiple_of(4) => self.feature("field: INDIRECT_BUFFER"),
            Opcode::IndirectBuffer => self.buffer(pk[0], pk[2] & 0xF_FFFF, level + 1),
            _ => {}
        }
    }
}

/// Payload counts that are `count` errors, by opcode.
const BAD_COUNTS: [(Opcode, &[u32]); 7] = [
    (Opcode::SetContextReg, &[0, 1]),
    (Opcode::IndexType, &[0, 2, 3]),
    (Opcode::DrawIndexAuto, &[0, 1, 3]),
    (Opcode::DrawIndexOffset2, &[0, 3, 5]),
    (Opcode::DispatchDirect, &[0, 2, 5]),
    (Opcode::WriteData, &[0, 1, 2, 3]),
    (Opcode::IndirectBuffer, &[0, 2, 4]),
];

/// Builds a random workload's buffers in execution order (an indirect
/// buffer is built when its packet is), so the index size is known at
/// every draw and a planned error lands at a chosen packet.
struct Gen<'r> {
    rng: &'r mut Rng,
    state_regs: u32,
    nesting: u32,
    prim_size: u32,
    memory: Vec<(u32, Vec<u32>)>,
    /// Where the next buffer goes.
    cursor: u32,
    /// Dwords left for packets that are not the planned error.
    budget: i64,
    index_size: u32,
    /// The planned error, not yet placed, and the packet (counted in
    /// execution order) at which it goes.
    err: Option<Cause>,
    err_at: u32,
    packets: u32,
    /// Buffers without jumps, draws, index sizes or errors, to call again.
    plain: Vec<(u32, u32)>,
}

impl Gen<'_> {
    fn rand(&mut self) -> u32 {
        self.rng.next_u64() as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.rng.below(n as u64) as u32
    }
    fn rands(&mut self, n: u32, dw: &mut Vec<u32>) {
        for _ in 0..n {
            let v = self.rand();
            dw.push(v);
        }
    }
    /// A type-3 header of `n` payload dwords; sometimes with the ignored
    /// and carried low bits set.
    fn header(&mut self, code: u32, n: u32) -> u32 {
        let low = if self.rng.chance(20) { self.below(256) } else { 0 };
        3 << 30 | (n.wrapping_sub(1) & 0x3FFF) << 16 | (code & 0xFF) << 8 | low
    }
    fn op(&mut self, op: Opcode, n: u32) -> u32 {
        self.header(op.code(), n)
    }

    fn place(&mut self, dw: Vec<u32>) -> u32 {
        let gap = if self.rng.chance(30) { 0 } else { self.below(9) };
        let a = self.cursor + 4 * gap;
        self.cursor = a + 4 * dw.len() as u32;
        if !dw.is_empty() {
            self.memory.push((a, dw));
        }
        a
    }

    /// A buffer at `level`: its address and size in dwords. `force`: the
    /// pending error must land in it (or deeper).
    fn buffer(&mut self, level: u32, force: bool) -> (u32, u32) {
        let want = match self.rng.below(8) {
            0 => 0,
            1 => 1,
            _ => 2 + self.below(if level == 0 { 24 } else { 8 }),
        };
        let mut dw = Vec::new();
        let mut plain = true;
        let mut cut = None;
        let mut k = 0;
        loop {
            let pending = self.err.is_some();
            if pending && self.packets >= self.err_at {
                plain = false;
                cut = self.error_packet(level, &mut dw);
                if cut.is_some() {
                    break;
                }
            } else if k < want && self.budget > 0 {
                k += 1;
                plain &= self.packet(level, &mut dw);
            } else if pending && (force || level == 0) {
                self.err_at = self.packets;
            } else {
                break;
            }
        }
        let size = cut.unwrap_or(dw.len() as u32);
        let addr = self.place(dw);
        if plain && level > 0 && size > 0 {
            self.plain.push((addr, size));
        }
        (addr, size)
    }

    /// A packet without error; whether the buffer stays plain.
    fn packet(&mut self, level: u32, dw: &mut Vec<u32>) -> bool {
        self.packets += 1;
        let start = dw.len();
        let plain = match self.below(100) {
            0..=7 => {
                let low = if self.rng.chance(30) { self.rand() & 0x3FFF_FFFF } else { 0 };
                dw.push(0x8000_0000 | low);
                true
            }
            8..=19 => {
                let n = match self.below(6) {
                    0 | 1 => 0,
                    2 => 1 + self.below(4),
                    3 => 5 + self.below(12),
                    4 => 17 + self.below(48),
                    _ if self.budget > 150 => 64 + self.below(100),
                    _ => self.below(8),
                };
                let h = self.op(Opcode::Nop, n);
                dw.push(h);
                self.rands(n, dw);
                true
            }
            20..=33 => {
                let sr = self.state_regs;
                let k = if self.rng.chance(10) { sr.min(40) } else { 1 + self.below(sr.min(12)) };
                let p0 = if self.rng.chance(25) { sr - k } else { self.below(sr - k + 1) };
                let h = self.op(Opcode::SetContextReg, 1 + k);
                dw.extend([h, p0]);
                self.rands(k, dw);
                true
            }
            34..=40 => {
                let v = self.below(2);
                self.index_size = if v == 0 { 2 } else { 4 };
                let h = self.op(Opcode::IndexType, 1);
                dw.extend([h, v]);
                false
            }
            41..=47 => {
                let h = self.op(Opcode::DrawIndexAuto, 2);
                dw.push(h);
                self.rands(2, dw);
                true
            }
            48..=63 => {
                let units = self.prim_size / self.index_size;
                let m = (if self.rng.chance(15) { 0 } else { 1 + self.below(40) }).min(units);
                let o = if self.rng.chance(25) { units - m } else { self.below(units - m + 1) };
                let max_size = if self.rng.chance(50) { m } else { self.rand() };
                let (h, init) = (self.op(Opcode::DrawIndexOffset2, 4), self.rand());
                dw.extend([h, max_size, o, m, init]);
                false
            }
            64..=69 => {
                let h = self.op(Opcode::DispatchDirect, 4);
                dw.push(h);
                self.rands(4, dw);
                true
            }
            70..=79 => {
                let d = 1 + self.below(8);
                let (h, control, addr) = (self.op(Opcode::WriteData, 3 + d), self.rand(), self.rand() & !3);
                dw.extend([h, control, addr, 0]);
                self.rands(d, dw);
                true
            }
            _ if level < self.nesting => {
                let (a, s) = match self.below(10) {
                    0 => (self.rand() & !3, 0),
                    1 | 2 if !self.plain.is_empty() => *self.rng.pick(&self.plain),
                    _ => self.buffer(level + 1, false),
                };
                let hi = if self.rng.chance(20) { self.rand() << 20 } else { 0 };
                let h = self.op(Opcode::IndirectBuffer, 3);
                dw.extend([h, a, 0, s | hi]);
                false
            }
            _ => {
                dw.push(self.op(Opcode::Nop, 0));
                true
            }
        };
        self.budget -= (dw.len() - start) as i64;
        plain
    }

    /// The planned error's packet. For `overrun`, the buffer's size: it
    /// ends inside the packet.
    fn error_packet(&mut self, level: u32, dw: &mut Vec<u32>) -> Option<u32> {
        let cause = self.err?;
        self.packets += 1;
        if cause == Cause::Nesting && level < self.nesting {
            // Go one level deeper; the error lands there (or deeper).
            self.err_at = self.packets + self.below(3);
            let (a, s) = self.buffer(level + 1, true);
            let h = self.op(Opcode::IndirectBuffer, 3);
            dw.extend([h, a, 0, s]);
            return None;
        }
        self.err = None;
        match cause {
            Cause::Type => {
                let v = self.rand() & 0x7FFF_FFFF;
                dw.push(v);
            }
            Cause::Opcode => {
                let code = loop {
                    let c = self.below(256);
                    if Opcode::from_code(c).is_none() {
                        break c;
                    }
                };
                let n = self.below(6);
                let h = self.header(code, n);
                dw.push(h);
                self.rands(n, dw);
            }
            Cause::Count => {
                let (op, counts) = *self.rng.pick(&BAD_COUNTS);
                let n = *self.rng.pick(counts);
                let h = self.op(op, n);
                dw.push(h);
                self.rands(n, dw);
            }
            Cause::Overrun => {
                let (op, n) = match self.below(8) {
                    0 => (Opcode::Nop, 0x3FFF),
                    1 => (Opcode::SetContextReg, 2 + self.below(5)),
                    2 => (Opcode::IndexType, 1),
                    3 => (Opcode::DrawIndexOffset2, 4),
                    4 => (Opcode::WriteData, 4 + self.below(5)),
                    5 => (Opcode::IndirectBuffer, 3),
                    _ => (Opcode::Nop, 1 + self.below(12)),
                };
                let start = dw.len() as u32;
                let h = self.op(op, n);
                dw.push(h);
                let held = n.min(16);
                self.rands(held, dw);
                return Some(start + 1 + self.below(held));
            }
            Cause::Nesting => {
                let (h, a, s) = (self.op(Opcode::IndirectBuffer, 3), self.rand() & !3, self.below(16));
                dw.extend([h, a, 0, s]);
            }
            Cause::StateRange => {
                let (sr, k) = (self.state_regs, 1 + self.below(8));
                let min_bad = (sr + 1).saturating_sub(k);
                let p0 = match self.below(3) {
                    0 => min_bad,
                    1 => min_bad + self.below(8),
                    _ => u32::MAX - self.below(k),
                };
                let h = self.op(Opcode::SetContextReg, 1 + k);
                dw.extend([h, p0]);
                self.rands(k, dw);
            }
            Cause::Field => {
                let hi_bad = |g: &mut Self| g.rand() | 1 << g.below(32);
                let lo_bad = |g: &mut Self| (g.rand() & !3) | (1 + g.below(3));
                match self.below(if level < self.nesting { 3 } else { 2 }) {
                    0 => {
                        let v = match self.below(3) {
                            0 => 2,
                            1 => 2 + self.below(1000),
                            _ => self.rand() | 2,
                        };
                        let h = self.op(Opcode::IndexType, 1);
                        dw.extend([h, v]);
                    }
                    1 => {
                        let d = 1 + self.below(4);
                        let (a, hi) = if self.rng.chance(50) { (self.rand() & !3, hi_bad(self)) } else { (lo_bad(self), 0) };
                        let (h, control) = (self.op(Opcode::WriteData, 3 + d), self.rand());
                        dw.extend([h, control, a, hi]);
                        self.rands(d, dw);
                    }
                    _ => {
                        let (a, hi) = if self.rng.chance(50) { (self.rand() & !3, hi_bad(self)) } else { (lo_bad(self), 0) };
                        let (h, s) = (self.op(Opcode::IndirectBuffer, 3), self.below(16));
                        dw.extend([h, a, hi, s]);
                    }
                }
            }
            Cause::PrimRange => {
                let s = self.index_size;
                let units = self.prim_size / s;
                let (o, m) = match self.below(4) {
                    0 => {
                        let m = 1 + self.below(40);
                        ((units + 1).saturating_sub(m) + self.below(3), m)
                    }
                    1 => (units + 1 + self.below(4), 0),
                    // (o + m) * s is 2^32 or just above: small in 32 bits.
                    2 => {
                        let m = 1 + self.below(40);
                        (((1u64 << 32) / s as u64) as u32 - m + self.below(2), m)
                    }
                    _ => (0, 0x8000_0000 | self.rand()),
                };
                let (h, max_size, init) = (self.op(Opcode::DrawIndexOffset2, 4), self.rand(), self.rand());
                dw.extend([h, max_size, o, m, init]);
            }
        }
        None
    }
}

/// A random workload that reaches every path of docs/cmdproc.md: all eight
/// opcodes, fillers, one-dword and long NOPs, context register writes of
/// one to many values (up to the table's end), both index sizes, draws of
/// 0..40 indices anywhere in the primitive buffer (up to its end), writes
/// of 1..8 dwords, indirect buffers nested up to `p.nesting` (called again,
/// empty, anywhere), buffers at any dword address and of any size, empty
/// main buffers; and in about one run in three an error of a random cause
/// (every cause: type, opcode, count, overrun, nesting, state_range, field,
/// prim_range, including values that wrap in 32 bits). Tens to a few
/// hundred dwords.
pub fn random_workload(rng: &mut Rng, p: &CmdprocParams, mem_latency: u32) -> Workload {
    let prim_base = (0x0001_0000 + rng.below(0x3000_0000)) as u32 & !3;
    let prim_size = match rng.below(8) {
        0 => 0,
        1 => rng.below(8),
        2 => 4 * rng.below(64),
        _ => 1 + rng.below(256),
    } as u32;
    let prim_len = prim_size.div_ceil(4) + rng.below(3) as u32;
    let mut memory = Vec::new();
    if prim_len > 0 {
        memory.push((prim_base, (0..prim_len).map(|_| rng.next_u64() as u32).collect()));
    }
    // Every cause; `field` (three packets have fields) twice as often.
    let causes = [Cause::ALL.as_slice(), &[Cause::Field]].concat();
    let err = if rng.chance(35) { Some(*rng.pick(&causes)) } else { None };
    let err_at = rng.below(25) as u32;
    let cursor = (0x8000_0000 + rng.below(0x3000_0000)) as u32 & !3;
    let budget = 40 + rng.below(300) as i64;
    let mut g = Gen {
        rng,
        state_regs: p.state_regs,
        nesting: p.nesting,
        prim_size,
        memory,
        cursor,
        budget,
        index_size: 4,
        err,
        err_at,
        packets: 0,
        plain: Vec::new(),
    };
    let (cmd_base, size) = g.buffer(0, true);
    let sr = p.state_regs as u64;
    let values = if g.rng.chance(20) { sr } else { g.rng.below(sr + 1) };
    let state = (0..values).map(|_| g.rand()).collect();
    let registers = Registers {
        cmd_base,
        cmd_size: 4 * size,
        prim_base,
        prim_size,
        state,
        state_ptr: g.rand(),
        irq_enable: g.below(4),
    };
    Workload { registers, memory: g.memory, mem_latency }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpurtl_params::BlockParams;
    use std::collections::BTreeSet;

    const SEEDS: u64 = 300;

    /// Over a few hundred seeds, at each preset (and one with the deepest
    /// nesting and a one-register table), the random workloads are well
    /// formed, short, and reach every opcode, every error cause and the
    /// other paths `random_workload` promises.
    #[test]
    fn random_workloads_reach_every_path() {
        let mut points: Vec<CmdprocParams> = CmdprocParams::presets().into_iter().map(|(_, p)| p).collect();
        points.push(CmdprocParams { nesting: 3, state_regs: 1, id_bits: 4, ..CmdprocParams::default() });
        for p in &points {
            let mut seen = BTreeSet::new();
            let mut errors = 0;
            for seed in 0..SEEDS {
                let mut rng = Rng::new(seed);
                let w = random_workload(&mut rng, p, 1 + (seed % 7) as u32);
                // Well formed: aligned runs that do not overlap, registers that fit.
                let mut runs: Vec<(u64, u64)> = w.memory.iter().map(|(a, d)| (*a as u64, *a as u64 + 4 * d.len() as u64)).collect();
                runs.sort();
                assert!(runs.iter().all(|r| r.0 % 4 == 0 && r.1 <= 1 << 32), "seed {seed}: runs {runs:x?}");
                assert!(runs.windows(2).all(|x| x[0].1 <= x[1].0), "seed {seed}: overlapping runs {runs:x?}");
                let r = &w.registers;
                assert!(r.cmd_base.is_multiple_of(4) && r.cmd_size.is_multiple_of(4) && r.prim_base.is_multiple_of(4) && r.irq_enable < 4);
                assert!(r.state.len() <= p.state_regs as usize);
                let k = walk(p, &w);
                assert!(k.dwords < 3000, "seed {seed}: {} dwords", k.dwords);
                let err = ["type", "opcode", "count", "overrun", "nesting", "state_range", "prim_range"];
                if k.features.iter().any(|f| err.contains(f) || f.starts_with("field")) {
                    errors += 1;
                }
                seen.extend(k.features);
            }
            let mut want: Vec<&str> = Opcode::ALL.iter().map(|o| o.name()).collect();
            want.extend([
                "filler",
                "one-dword NOP",
                "long NOP",
                "draw of no indices",
                "draw of 16-bit indices",
                "draw of 32-bit indices",
                "empty buffer",
                "type",
                "opcode",
                "count",
                "overrun",
                "nesting",
                "state_range",
                "field: INDEX_TYPE",
                "field: WRITE_DATA",
                "prim_range",
            ]);
            if p.state_regs > 1 {
                want.push("SET_CONTEXT_REG of several values");
            }
            if p.fetch_bits > 32 {
                want.push("unaligned buffer");
            }
            if p.nesting > 0 {
                want.extend(["field: INDIRECT_BUFFER", "deepest buffer"]);
            }
            for f in want {
                assert!(seen.contains(f), "{p:?}: no workload of {SEEDS} has {f:?}; seen {seen:?}");
            }
            assert!((SEEDS / 5..=SEEDS / 2).contains(&errors), "{p:?}: {errors} of {SEEDS} workloads have an error");
        }
    }
}
