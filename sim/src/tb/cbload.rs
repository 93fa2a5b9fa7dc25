//! Testbench for the generated constant-buffer load RTL: a register file with
//! a synchronous read port and a stallable write port, an in-order memory
//! with per-request latency and stalls on both handshakes, and a response
//! sink that applies back-pressure. Results come back in the golden model's
//! format.

use super::{fail, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::cbload::{Instr, Offset, Outcome, Response, Workload};
use gpurtl_params::cbload::{CbloadParams, ErrorKind};
use crate::rng::Rng;
use num_bigint::BigUint;
use std::collections::VecDeque;
use std::path::Path;

/// Randomized environment. Without one, the memory answers each request
/// exactly `mem_latency` cycles after it is taken and everything is ready.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    pub seed: u64,
    /// Latency of each request, uniform in this range (inclusive).
    pub latency: (u32, u32),
    /// Percent of cycles each party is not ready / holds back.
    pub in_stall: u32,
    pub mem_req_stall: u32,
    pub mem_rsp_stall: u32,
    pub rf_stall: u32,
    pub rsp_stall: u32,
}


struct Ports {
    rst: PortHandle,
    in_valid: PortHandle,
    in_ready: PortHandle,
    dest: PortHandle,
    view: PortHandle,
    offset: PortHandle,
    is_reg: PortHandle,
    offset_reg: PortHandle,
    burst: PortHandle,
    size: PortHandle,
    tag: PortHandle,
    rf_re: PortHandle,
    rf_raddr: PortHandle,
    rf_rdata: PortHandle,
    rf_we: PortHandle,
    rf_wready: PortHandle,
    rf_waddr: PortHandle,
    rf_wdata: PortHandle,
    req_valid: PortHandle,
    req_ready: PortHandle,
    req_addr: PortHandle,
    mrsp_valid: PortHandle,
    mrsp_ready: PortHandle,
    mrsp_data: PortHandle,
    rsp_valid: PortHandle,
    rsp_ready: PortHandle,
    rsp_tag: PortHandle,
    rsp_error: PortHandle,
    cfg_we: PortHandle,
    cfg_addr: PortHandle,
    cfg_wdata: PortHandle,
    oob: PortHandle,
    oob_tag: PortHandle,
}

impl Ports {
    fn find(s: &Sim) -> Result<Ports, CosimError> {
        Ok(Ports {
            rst: s.port("rst_i")?,
            in_valid: s.port("in_valid_i")?,
            in_ready: s.port("in_ready_o")?,
            dest: s.port("in_dest_i")?,
            view: s.port("in_view_i")?,
            offset: s.port("in_offset_i")?,
            is_reg: s.port("in_offset_is_reg_i")?,
            offset_reg: s.port("in_offset_reg_i")?,
            burst: s.port("in_burst_i")?,
            size: s.port("in_size_i")?,
            tag: s.port("in_tag_i")?,
            rf_re: s.port("rf_re_o")?,
            rf_raddr: s.port("rf_raddr_o")?,
            rf_rdata: s.port("rf_rdata_i")?,
            rf_we: s.port("rf_we_o")?,
            rf_wready: s.port("rf_wready_i")?,
            rf_waddr: s.port("rf_waddr_o")?,
            rf_wdata: s.port("rf_wdata_o")?,
            req_valid: s.port("mem_req_valid_o")?,
            req_ready: s.port("mem_req_ready_i")?,
            req_addr: s.port("mem_req_addr_o")?,
            mrsp_valid: s.port("mem_rsp_valid_i")?,
            mrsp_ready: s.port("mem_rsp_ready_o")?,
            mrsp_data: s.port("mem_rsp_data_i")?,
            rsp_valid: s.port("rsp_valid_o")?,
            rsp_ready: s.port("rsp_ready_i")?,
            rsp_tag: s.port("rsp_tag_o")?,
            rsp_error: s.port("rsp_error_o")?,
            cfg_we: s.port("cfg_we_i")?,
            cfg_addr: s.port("cfg_addr_i")?,
            cfg_wdata: s.port("cfg_wdata_i")?,
            oob: s.port("oob_o")?,
            oob_tag: s.port("oob_tag_o")?,
        })
    }
}

/// Byte-addressed memory made of the views' data.
struct Memory<'a> {
    w: &'a Workload,
    mask: u64,
}

impl Memory<'_> {
    fn byte(&self, addr: u64) -> u8 {
        let addr = addr & self.mask;
        for v in &self.w.views {
            if addr >= v.base && addr - v.base < v.data.len() as u64 {
                return v.data[(addr - v.base) as usize];
            }
        }
        0
    }
    fn beat(&self, addr: u64, bytes: u32) -> BigUint {
        let b: Vec<u8> = (0..bytes as u64).map(|i| self.byte(addr.wrapping_add(i))).collect();
        BigUint::from_bytes_le(&b)
    }
}

struct Pending {
    addr: u64,
    ready_at: u64,
}


/// Run the workload through the RTL.
pub fn run(
    compiled: &Compiled,
    cfg: &CbloadParams,
    w: &Workload,
    env: Option<Env>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let p = Ports::find(&sim)?;
    let mut rng = Rng::new(env.map_or(0, |e| e.seed));
    let stall = |pct: fn(&Env) -> u32, rng: &mut Rng| env.is_some_and(|e| rng.chance(pct(&e)));
    let amask = if cfg.addr_bits >= 64 { u64::MAX } else { (1u64 << cfg.addr_bits) - 1 };
    let mem = Memory { w, mask: amask };
    let read_bytes = cfg.read_bits / 8;

    sim.reset(p.rst, 2);
    let timer = LoopTimer::start(&sim);
    // Program the view table, one write per cycle.
    for v in 0..cfg.views {
        let (base, size) = w.views.get(v as usize).map_or((0, 0), |x| (x.base, x.size));
        for (k, val) in [(2 * v, base), (2 * v + 1, size)] {
            sim.set(p.cfg_we, 1);
            sim.set(p.cfg_addr, k as u64);
            sim.set(p.cfg_wdata, val);
            sim.eval();
            sim.tick();
        }
    }
    sim.set(p.cfg_we, 0);

    let mut regs: Vec<BigUint> = vec![BigUint::default(); cfg.regs as usize];
    for (r, v) in &w.init_regs {
        regs[*r as usize] = v.clone();
    }
    let mut responses: Vec<Response> = Vec::new();
    let mut next = 0usize;
    let mut offering = false;
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut presenting = false;
    let mut rdata = 0u64;
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    let total_beats: u64 = w.instrs.iter().map(|i| (if i.burst { i.size as u64 } else { cfg.reg_bits as u64 / 8 }) / read_bytes as u64 + 2).sum();
    let max_lat = env.map_or(w.mem_latency, |e| e.latency.1) as u64;
    let limit = sim.cycle() + 1000 + (total_beats + w.instrs.len() as u64) * (max_lat + 20);

    while responses.len() < w.instrs.len() {
        if sim.cycle() > limit {
            return Err(fail(
                &mut sim,
                format!("the RTL stopped making progress: {} of {} responses", responses.len(), w.instrs.len()),
            ));
        }
        let now = sim.cycle();
        if !offering && next < w.instrs.len() && !stall(|e| e.in_stall, &mut rng) {
            offering = true;
            let i: &Instr = &w.instrs[next];
            sim.set(p.dest, i.dest as u64);
            sim.set(p.view, i.view as u64);
            match i.offset {
                Offset::Imm(o) => {
                    sim.set(p.offset, o);
                    sim.set(p.is_reg, 0);
                    sim.set(p.offset_reg, rng.next_u64());
                }
                Offset::Reg(r) => {
                    sim.set(p.offset, rng.next_u64());
                    sim.set(p.is_reg, 1);
                    sim.set(p.offset_reg, r as u64);
                }
            }
            sim.set(p.burst, i.burst as u64);
            sim.set(p.size, i.size as u64);
            sim.set(p.tag, i.tag as u64);
        }
        sim.set(p.in_valid, offering as u64);
        sim.set(p.rf_rdata, rdata);
        let rf_ready = !stall(|e| e.rf_stall, &mut rng);
        sim.set(p.rf_wready, rf_ready as u64);
        let req_ready = !stall(|e| e.mem_req_stall, &mut rng);
        sim.set(p.req_ready, req_ready as u64);
        // In-order memory: the head answers once its latency has passed; a
        // presented answer is held until taken.
        let head_ready = pending.front().is_some_and(|h| h.ready_at <= now);
        if head_ready && !presenting && !stall(|e| e.mem_rsp_stall, &mut rng) {
            presenting = true;
        }
        sim.set(p.mrsp_valid, presenting as u64);
        if presenting {
            let a = pending.front().map_or(0, |h| h.addr);
            sim.set_big(p.mrsp_data, &mem.beat(a, read_bytes));
        } else {
            let junk = BigUint::from(rng.next_u64()) << 3u32;
            sim.set_big(p.mrsp_data, &junk);
        }
        let rsp_ready = !stall(|e| e.rsp_stall, &mut rng);
        sim.set(p.rsp_ready, rsp_ready as u64);
        sim.eval();

        if offering && sim.get(p.in_ready) == 1 {
            first_in.get_or_insert(now);
            offering = false;
            next += 1;
        }
        let read_reg = (sim.get(p.rf_re) == 1).then(|| sim.get(p.rf_raddr) as usize);
        if sim.get(p.rf_we) == 1 && rf_ready {
            let r = sim.get(p.rf_waddr) as usize;
            if r >= regs.len() {
                return Err(fail(&mut sim, format!("register write to {r}, past the {} registers", regs.len())));
            }
            regs[r] = sim.get_big(p.rf_wdata);
        }
        if sim.get(p.req_valid) == 1 && req_ready {
            let lat = match env {
                Some(e) => e.latency.0 as u64 + rng.below((e.latency.1 - e.latency.0) as u64 + 1),
                None => w.mem_latency as u64,
            };
            let prev = pending.back().map_or(0, |h| h.ready_at);
            pending.push_back(Pending { addr: sim.get(p.req_addr), ready_at: (now + lat).max(prev) });
        }
        if presenting && sim.get(p.mrsp_ready) == 1 {
            pending.pop_front();
            presenting = false;
        }
        if sim.get(p.rsp_valid) == 1 && rsp_ready {
            let code = sim.get(p.rsp_error);
            let Some(error) = ErrorKind::from_code(code) else {
                return Err(fail(&mut sim, format!("response error code {code} is not defined")));
            };
            responses.push(Response { tag: sim.get(p.rsp_tag) as u32, error });
            last_out = now;
        }
        sim.tick();
        if let Some(r) = read_reg {
            let v = regs.get(r).cloned().unwrap_or_default();
            rdata = (v & BigUint::from(amask)).iter_u64_digits().next().unwrap_or(0);
        }
    }
    sim.eval();
    let oob = sim.get(p.oob) == 1;
    let oob_tag = oob.then(|| sim.get(p.oob_tag) as u32);
    if !pending.is_empty() {
        return Err(fail(&mut sim, format!("{} memory reads were never consumed", pending.len())));
    }
    sim.trace_close();
    let cycles = first_in.map_or(0, |f| last_out - f);
    Ok((Outcome { regs, responses, oob, oob_tag, cycles }, timer.stats(&sim)))
}

/// A random workload that reaches every path: bursts and single loads,
/// immediate and register offsets, partial last registers, reads past a
/// view's end, missing views, and every error kind.
pub fn random_workload(rng: &mut Rng, cfg: &CbloadParams, n: usize, mem_latency: u32) -> Workload {
    use crate::models::cbload::View;
    let rb = cfg.read_bits as u64 / 8;
    let gb = cfg.reg_bits as u64 / 8;
    let max_len = cfg.max_burst as u64 * gb;
    let amax = (1u64 << cfg.addr_bits) - 1;
    // Views live in disjoint regions of the address space.
    let region = (1u64 << (cfg.addr_bits - 4)) & !(rb - 1);
    let n_views = rng.below(cfg.views as u64 + 1) as usize;
    let views: Vec<View> = (0..n_views)
        .map(|v| {
            let size = match rng.below(4) {
                0 => rng.below(4 * rb),
                1 => rng.below(2 * max_len + 1),
                _ => rng.below(region.min(4 * max_len) + 1),
            }
            .min(region);
            let len = rng.below(size + 1) as usize;
            View { base: v as u64 * region, size, data: (0..len).map(|_| rng.below(256) as u8).collect() }
        })
        .collect();
    let reg_mask = (BigUint::from(1u8) << cfg.reg_bits) - 1u8;
    let init_regs = (0..rng.below(cfg.regs as u64 + 1))
        .map(|_| {
            let r = rng.below(cfg.regs as u64) as u32;
            let low = match rng.below(4) {
                0 => rng.next_u64() & amax,
                1 => rng.below(4 * max_len) | 1,
                _ => rng.below(4 * max_len) & !(rb - 1),
            };
            let high = BigUint::from(rng.next_u64()) << cfg.addr_bits;
            (r, (high | BigUint::from(low)) & &reg_mask)
        })
        .collect();
    let dest_lim = 1u64 << cfg.reg_index_bits();
    let view_lim = 1u64 << cfg.view_index_bits();
    let size_lim = 1u64 << (64 - max_len.leading_zeros());
    let instrs = (0..n)
        .map(|_| {
            let burst = rng.chance(60);
            let offset = if rng.chance(30) {
                Offset::Reg(rng.below(dest_lim) as u32)
            } else {
                Offset::Imm(match rng.below(10) {
                    0 => rng.next_u64() & amax,
                    1 => rng.below(4 * max_len) | 1,
                    _ => rng.below(2 * max_len) & !(rb - 1),
                })
            };
            Instr {
                dest: if rng.chance(20) { rng.below(dest_lim) } else { rng.below(cfg.regs as u64 / 2 + 1) } as u32,
                view: if rng.chance(10) { rng.below(view_lim) } else { rng.below(cfg.views as u64) } as u32,
                offset,
                burst,
                size: match rng.below(10) {
                    0 => 0,
                    1 => rng.below(size_lim),
                    2 => max_len,
                    _ => 1 + rng.below(max_len.min(8 * gb)),
                } as u32,
                tag: rng.below(1 << cfg.tag_bits) as u32,
            }
        })
        .collect();
    Workload { mem_latency, views, init_regs, instrs }
}
