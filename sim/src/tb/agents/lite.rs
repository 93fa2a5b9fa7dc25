//! An AXI4-Lite master for a design's register slave `<prefix>aw{valid,
//! ready,addr}`, `w{valid,ready,data,strb}`, `b{valid,ready,resp}`,
//! `ar{valid,ready,addr}`, `r{valid,ready,data,resp}` (e.g. `s_axi_`): the
//! host side of a block, as a driver programs it. Transactions go one at a
//! time, in queue order, each offered until taken; junk on the address and
//! data ports while nothing is offered.

use super::{agent_rng, set_junk, Agent};
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::rng::Rng;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiteOp {
    /// A register write with its byte strobes.
    Write { addr: u64, data: u64, strb: u64 },
    Read { addr: u64 },
    /// A write offered, on both channels at once, only if the gate
    /// ([`LiteMaster::gate`]) is open in the cycle it is due; dropped (never
    /// offered) if it is closed then. Once offered it stays until taken.
    GatedWrite { addr: u64, data: u64, strb: u64 },
}

/// The handshakes of one cycle, as the master saw them in its sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiteEvents {
    /// A write whose address and data are both taken (the later of the two
    /// in this cycle): address, data, strobes, and whether it was gated.
    pub write: Option<(u64, u64, u64, bool)>,
    /// A read address taken.
    pub read: Option<u64>,
    /// A read's data taken: (address, data).
    pub data: Option<(u64, u64)>,
    /// A write response taken (the write's address).
    pub response: Option<u64>,
}

/// The transaction on the bus: its address and data valids rise at these
/// cycles and stay up until their handshakes.
#[derive(Clone, Copy, Debug)]
struct Active {
    op: LiteOp,
    aw_at: u64,
    w_at: u64,
    aw_sent: bool,
    w_sent: bool,
    /// A gated write that has been offered.
    offered: bool,
}

impl Active {
    fn sent(&self) -> bool {
        match self.op {
            LiteOp::Read { .. } => self.aw_sent,
            _ => self.aw_sent && self.w_sent,
        }
    }
}

/// The master. Deterministic: a transaction's valids rise in the cycle
/// after the previous one's response is taken (the first at once), ready
/// for responses always. Random ([`LiteMaster::random`]): a delay before
/// each transaction and before each of a write's two valids (each cycle of
/// delay with the given chance, at most 12), and BREADY / RREADY low with
/// that chance. Checks: a response only for a transaction owed one, its
/// RESP OKAY.
pub struct LiteMaster {
    name: String,
    aw_valid: PortHandle,
    aw_ready: PortHandle,
    aw_addr: PortHandle,
    w_valid: PortHandle,
    w_ready: PortHandle,
    w_data: PortHandle,
    w_strb: PortHandle,
    b_valid: PortHandle,
    b_ready: PortHandle,
    b_resp: PortHandle,
    ar_valid: PortHandle,
    ar_ready: PortHandle,
    ar_addr: PortHandle,
    r_valid: PortHandle,
    r_ready: PortHandle,
    r_data: PortHandle,
    r_resp: PortHandle,
    queue: VecDeque<LiteOp>,
    active: Option<Active>,
    next_start: u64,
    /// Percent chance of each cycle of delay and of a response ready low.
    stall: Option<u32>,
    rng: Rng,
    gate: bool,
    /// Driven this cycle.
    aw_on: bool,
    w_on: bool,
    ar_on: bool,
    b_ready_now: bool,
    r_ready_now: bool,
    /// A write's address, owed a response.
    b_owed: Option<u64>,
    /// A read's address, owed data.
    r_owed: Option<u64>,
    results: Vec<(u64, u64)>,
    events: LiteEvents,
    handshakes: u64,
}

impl LiteMaster {
    pub fn new(sim: &Sim, prefix: &str) -> Result<LiteMaster, CosimError> {
        let port = |f: &str| sim.port(&format!("{prefix}{f}"));
        let name = format!("AXI4-Lite master {prefix}");
        Ok(LiteMaster {
            aw_valid: port("awvalid")?,
            aw_ready: port("awready")?,
            aw_addr: port("awaddr")?,
            w_valid: port("wvalid")?,
            w_ready: port("wready")?,
            w_data: port("wdata")?,
            w_strb: port("wstrb")?,
            b_valid: port("bvalid")?,
            b_ready: port("bready")?,
            b_resp: port("bresp")?,
            ar_valid: port("arvalid")?,
            ar_ready: port("arready")?,
            ar_addr: port("araddr")?,
            r_valid: port("rvalid")?,
            r_ready: port("rready")?,
            r_data: port("rdata")?,
            r_resp: port("rresp")?,
            queue: VecDeque::new(),
            active: None,
            next_start: 0,
            stall: None,
            rng: agent_rng(0, &name),
            name,
            gate: false,
            aw_on: false,
            w_on: false,
            ar_on: false,
            b_ready_now: false,
            r_ready_now: false,
            b_owed: None,
            r_owed: None,
            results: Vec::new(),
            events: LiteEvents::default(),
            handshakes: 0,
        })
    }

    /// Random delays and response readiness, `pct` percent (at most 90) a cycle.
    pub fn random(mut self, seed: u64, pct: u32) -> LiteMaster {
        self.rng = agent_rng(seed, &self.name);
        self.stall = Some(pct.min(90));
        self
    }

    pub fn push(&mut self, op: LiteOp) {
        self.queue.push_back(op);
    }
    /// Opens or closes the gate of [`LiteOp::GatedWrite`]s for this cycle
    /// (set it before the master drives).
    pub fn gate(&mut self, open: bool) {
        self.gate = open;
    }
    /// Nothing queued or on the bus.
    pub fn idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }
    /// The transaction on the bus, if any.
    pub fn active(&self) -> Option<LiteOp> {
        self.active.map(|a| a.op)
    }
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
    /// A write's response is owed (its address and data are taken, its
    /// response is not), as of the last sample.
    pub fn b_owed(&self) -> bool {
        self.b_owed.is_some()
    }
    /// A read's data is owed, as of the last sample.
    pub fn r_owed(&self) -> bool {
        self.r_owed.is_some()
    }
    /// What the last sample saw.
    pub fn events(&self) -> LiteEvents {
        self.events
    }
    /// The reads completed since the last call: (address, data).
    pub fn take_results(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.results)
    }

    fn delay(&mut self) -> u64 {
        let Some(pct) = self.stall else { return 0 };
        let mut d = 0;
        while d < 12 && self.rng.chance(pct) {
            d += 1;
        }
        d
    }

    fn finish(&mut self, now: u64) {
        self.active = None;
        self.next_start = now + 1 + self.delay();
    }
}

impl Agent for LiteMaster {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        if self.active.is_none() && now >= self.next_start {
            if let Some(op) = self.queue.pop_front() {
                let (aw_at, w_at) = (now + self.delay(), now + self.delay());
                self.active = Some(Active { op, aw_at, w_at, aw_sent: false, w_sent: false, offered: false });
            }
        }
        let (mut aw, mut w, mut ar) = (None, None, None);
        if let Some(a) = self.active.filter(|a| !a.sent()) {
            match a.op {
                LiteOp::Write { addr, data, strb } => {
                    aw = (now >= a.aw_at && !a.aw_sent).then_some(addr);
                    w = (now >= a.w_at && !a.w_sent).then_some((data, strb));
                }
                LiteOp::GatedWrite { addr, data, strb } => {
                    if a.offered || now >= a.aw_at.max(a.w_at) {
                        if a.offered || self.gate {
                            aw = (!a.aw_sent).then_some(addr);
                            w = (!a.w_sent).then_some((data, strb));
                            self.active = Some(Active { offered: true, ..a });
                        } else {
                            self.active = None;
                            self.next_start = now + 1;
                        }
                    }
                }
                LiteOp::Read { addr } => ar = (now >= a.aw_at).then_some(addr),
            }
        }
        self.aw_on = aw.is_some();
        self.w_on = w.is_some();
        self.ar_on = ar.is_some();
        sim.set(self.aw_valid, self.aw_on as u64);
        sim.set(self.w_valid, self.w_on as u64);
        sim.set(self.ar_valid, self.ar_on as u64);
        match aw {
            Some(a) => sim.set(self.aw_addr, a),
            None => set_junk(sim, self.aw_addr, &mut self.rng),
        }
        match w {
            Some((d, s)) => {
                sim.set(self.w_data, d);
                sim.set(self.w_strb, s);
            }
            None => {
                set_junk(sim, self.w_data, &mut self.rng);
                set_junk(sim, self.w_strb, &mut self.rng);
            }
        }
        match ar {
            Some(a) => sim.set(self.ar_addr, a),
            None => set_junk(sim, self.ar_addr, &mut self.rng),
        }
        let stall = self.stall.unwrap_or(0);
        self.b_ready_now = self.stall.is_none() || !self.rng.chance(stall);
        self.r_ready_now = self.stall.is_none() || !self.rng.chance(stall);
        sim.set(self.b_ready, self.b_ready_now as u64);
        sim.set(self.r_ready, self.r_ready_now as u64);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        self.events = LiteEvents::default();
        let bv = sim.get(self.b_valid) == 1;
        let rv = sim.get(self.r_valid) == 1;
        if bv && self.b_owed.is_none() {
            return Err("BVALID without a write to answer".into());
        }
        if rv && self.r_owed.is_none() {
            return Err("RVALID without a read to answer".into());
        }
        if bv && sim.get(self.b_resp) != 0 {
            return Err(format!("BRESP {}, not OKAY", sim.get(self.b_resp)));
        }
        if rv && sim.get(self.r_resp) != 0 {
            return Err(format!("RRESP {}, not OKAY", sim.get(self.r_resp)));
        }
        if bv && self.b_ready_now {
            self.events.response = self.b_owed.take();
            self.handshakes += 1;
            self.finish(now);
        }
        if rv && self.r_ready_now {
            let addr = self.r_owed.take().expect("checked above");
            let v = sim.get(self.r_data);
            self.events.data = Some((addr, v));
            self.results.push((addr, v));
            self.handshakes += 1;
            self.finish(now);
        }
        let aw_taken = self.aw_on && sim.get(self.aw_ready) == 1;
        let w_taken = self.w_on && sim.get(self.w_ready) == 1;
        let ar_taken = self.ar_on && sim.get(self.ar_ready) == 1;
        if let Some(a) = self.active.as_mut() {
            a.aw_sent |= aw_taken || (ar_taken && matches!(a.op, LiteOp::Read { .. }));
            a.w_sent |= w_taken;
            if aw_taken || w_taken || ar_taken {
                self.handshakes += 1;
                match a.op {
                    LiteOp::Read { addr } => {
                        self.r_owed = Some(addr);
                        self.events.read = Some(addr);
                    }
                    LiteOp::Write { addr, data, strb } | LiteOp::GatedWrite { addr, data, strb } if a.sent() => {
                        self.b_owed = Some(addr);
                        self.events.write = Some((addr, data, strb, matches!(a.op, LiteOp::GatedWrite { .. })));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.idle()
    }

    fn waiting(&self) -> String {
        format!("{:?} on the bus, {} more queued", self.active.map(|a| a.op), self.queue.len())
    }

    fn progress(&self) -> u64 {
        self.handshakes
    }
}
