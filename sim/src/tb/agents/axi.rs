//! An AXI4 slave memory over the shared memory, behind a design's AXI4
//! master bundle `<prefix>awvalid`, ... (the port names of the interface
//! conventions, lower case, no direction suffix). A bundle may have only
//! its read channels (AR, R) or only its write channels (AW, W, B); the ID
//! ports and AxLOCK/AxCACHE/AxPROT/AxQOS may be absent.

use super::{agent_rng, optional, set_junk, Agent, Fields, HoldCheck, SharedMemory};
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::rng::Rng;
use std::collections::VecDeque;

/// Randomized slave behaviour.
#[derive(Clone, Copy, Debug)]
pub struct AxiRandom {
    pub seed: u64,
    /// Latency of each burst, uniform in this range (inclusive).
    pub latency: (u32, u32),
    /// Percent of cycles ARREADY, AWREADY, WREADY are low.
    pub ar_stall: u32,
    pub aw_stall: u32,
    pub w_stall: u32,
    /// Percent of cycles with nothing on R (B) although a beat (response) is due.
    pub r_gap: u32,
    pub b_gap: u32,
}

/// AR or AW.
struct AddrChannel {
    valid: PortHandle,
    ready: PortHandle,
    id: Option<PortHandle>,
    addr: PortHandle,
    len: PortHandle,
    size: PortHandle,
    burst: PortHandle,
    /// AxLOCK, AxCACHE, AxPROT, AxQOS, where present: must be 0.
    zero: Vec<PortHandle>,
    fields: Fields,
    hold: HoldCheck,
}

impl AddrChannel {
    fn find(sim: &Sim, p: &str, ch: &str) -> Result<AddrChannel, CosimError> {
        let port = |f: &str| sim.port(&format!("{p}{ch}{f}"));
        let id = optional(sim, &format!("{p}{ch}id"));
        let zero: Vec<PortHandle> = ["lock", "cache", "prot", "qos"].iter().filter_map(|f| optional(sim, &format!("{p}{ch}{f}"))).collect();
        let (addr, len, size, burst) = (port("addr")?, port("len")?, port("size")?, port("burst")?);
        let fields = Fields::new(id.into_iter().chain([addr, len, size, burst]).chain(zero.iter().copied()).collect());
        Ok(AddrChannel { valid: port("valid")?, ready: port("ready")?, id, addr, len, size, burst, zero, fields, hold: HoldCheck::default() })
    }
}

/// A read burst taken on AR, answered beat by beat.
struct ReadBurst {
    seq: u64,
    id: u64,
    addr: u64,
    len: u64,
    due: u64,
    /// Beats handed over so far.
    next: u64,
}

/// A write burst taken on AW, in AW order, until its B is taken.
struct WriteBurst {
    seq: u64,
    id: u64,
    addr: u64,
    len: u64,
    t_aw: u64,
    beats: u64,
    /// Set when the last beat is in: the first cycle its B may be offered.
    due: Option<u64>,
}

/// A W beat taken before its AW.
struct EarlyBeat {
    data: Vec<u32>,
    strb: Vec<u32>,
    last: bool,
    t: u64,
}

struct ReadSide {
    ar: AddrChannel,
    r_valid: PortHandle,
    r_ready: PortHandle,
    r_id: Option<PortHandle>,
    r_data: PortHandle,
    r_resp: PortHandle,
    r_last: PortHandle,
    bursts: Vec<ReadBurst>,
    /// The burst whose beat is on R, and the beat's data.
    offer: Option<(u64, Vec<u32>)>,
    ar_ready: bool,
}

struct WriteSide {
    aw: AddrChannel,
    w_valid: PortHandle,
    w_ready: PortHandle,
    w_data: PortHandle,
    w_strb: PortHandle,
    w_last: PortHandle,
    w_fields: Fields,
    w_hold: HoldCheck,
    b_valid: PortHandle,
    b_ready: PortHandle,
    b_id: Option<PortHandle>,
    b_resp: PortHandle,
    bursts: Vec<WriteBurst>,
    early: VecDeque<EarlyBeat>,
    /// The burst whose B is offered.
    offer: Option<u64>,
    aw_ready: bool,
    w_ready_now: bool,
}

/// The slave: random AR/AW/W ready, a random latency per burst, responses
/// reordered across IDs and never within one ID, R beats of different IDs
/// interleaved, random RVALID and BVALID gaps. RRESP and BRESP are OKAY.
/// Read data is read from the memory when a beat is first offered; write
/// data is written (with WSTRB) when the beat and its AW are both in.
///
/// It checks: AxBURST = INCR (1), AxSIZE = log2(data bytes), AxLEN + 1 <=
/// 256, the address aligned to the beat, no burst crossing a 4 KB
/// boundary, AxLOCK/AxCACHE/AxPROT/AxQOS = 0, WLAST exactly on each
/// burst's last beat (W beats belong to the AWs in AW order; a W beat may
/// come before its AW), and valid and payload held until ready on AR, AW
/// and W (R and B it drives so itself).
///
/// Deterministic mode (no randomness, latency L): ARREADY = AWREADY =
/// WREADY = 1; bursts answered in AR order, the first R beat of a burst
/// whose AR handshake is at the edge ending cycle t offered in cycle
/// max(t + L, cycle after the previous burst's last beat), then one beat
/// per cycle while RREADY; B of a burst offered in cycle
/// max(t_aw, t_wlast) + L (t = the handshake cycle), in AW order, one per
/// cycle. Precisely: burst i's first beat in cycle max(t_i + L, r_{i-1} + 1),
/// r_{i-1} the cycle of the handshake of burst i-1's last beat; beat k+1 in
/// the cycle after beat k's handshake; burst i's B in cycle
/// max(max(t_aw_i, t_wlast_i) + L, b_{i-1} + 1), b_{i-1} the cycle of the
/// previous B's handshake. (L = 0 behaves as 1.)
pub struct AxiSlave {
    name: String,
    mem: SharedMemory,
    bytes: u64,
    size: u64,
    latency: u64,
    random: Option<AxiRandom>,
    rng: Rng,
    read: Option<ReadSide>,
    write: Option<WriteSide>,
    seq: u64,
    handshakes: u64,
}

impl AxiSlave {
    /// The slave behind `<prefix>*` (e.g. `m_axi_`), deterministic with
    /// latency `latency` until [`AxiSlave::random`].
    pub fn new(sim: &Sim, prefix: &str, mem: SharedMemory, latency: u32) -> Result<AxiSlave, CosimError> {
        let p = prefix;
        let port = |f: &str| sim.port(&format!("{p}{f}"));
        let read = match optional(sim, &format!("{p}arvalid")) {
            None => None,
            Some(_) => Some(ReadSide {
                ar: AddrChannel::find(sim, p, "ar")?,
                r_valid: port("rvalid")?,
                r_ready: port("rready")?,
                r_id: optional(sim, &format!("{p}rid")),
                r_data: port("rdata")?,
                r_resp: port("rresp")?,
                r_last: port("rlast")?,
                bursts: Vec::new(),
                offer: None,
                ar_ready: false,
            }),
        };
        let write = match optional(sim, &format!("{p}awvalid")) {
            None => None,
            Some(_) => {
                let (w_data, w_strb, w_last) = (port("wdata")?, port("wstrb")?, port("wlast")?);
                Some(WriteSide {
                    aw: AddrChannel::find(sim, p, "aw")?,
                    w_valid: port("wvalid")?,
                    w_ready: port("wready")?,
                    w_data,
                    w_strb,
                    w_last,
                    w_fields: Fields::new(vec![w_data, w_strb, w_last]),
                    w_hold: HoldCheck::default(),
                    b_valid: port("bvalid")?,
                    b_ready: port("bready")?,
                    b_id: optional(sim, &format!("{p}bid")),
                    b_resp: port("bresp")?,
                    bursts: Vec::new(),
                    early: VecDeque::new(),
                    offer: None,
                    aw_ready: false,
                    w_ready_now: false,
                })
            }
        };
        let data = match (&read, &write) {
            (Some(r), _) => r.r_data,
            (None, Some(w)) => w.w_data,
            (None, None) => return Err(CosimError::UnknownPort(format!("{p}arvalid or {p}awvalid"))),
        };
        if let (Some(r), Some(w)) = (&read, &write) {
            if r.r_data.width() != w.w_data.width() {
                return Err(CosimError::Width { port: format!("{p}wdata"), width: w.w_data.width(), value_bits: r.r_data.width() as u64 });
            }
        }
        let bytes = (data.width() / 8) as u64;
        let name = format!("AXI4 slave {p}");
        Ok(AxiSlave {
            rng: agent_rng(0, &name),
            name,
            mem,
            bytes,
            size: bytes.trailing_zeros() as u64,
            latency: latency as u64,
            random: None,
            read,
            write,
            seq: 0,
            handshakes: 0,
        })
    }

    pub fn random(mut self, r: AxiRandom) -> AxiSlave {
        self.rng = agent_rng(r.seed, &self.name);
        self.random = Some(r);
        self
    }

    fn chance(&mut self, pct: fn(&AxiRandom) -> u32) -> bool {
        self.random.is_some_and(|r| self.rng.chance(pct(&r)))
    }
    fn latency(&mut self) -> u64 {
        match self.random {
            Some(AxiRandom { latency: (lo, hi), .. }) => lo as u64 + self.rng.below(hi.max(lo) as u64 - lo as u64 + 1),
            None => self.latency,
        }
    }

    /// Picks among the candidates: the first in deterministic mode (there is
    /// only one), any at random otherwise.
    fn pick(&mut self, n: usize) -> usize {
        if self.random.is_some() {
            self.rng.below(n as u64) as usize
        } else {
            0
        }
    }

    /// The checks of an AR or AW handshake; (id, addr, len).
    fn address(&self, sim: &Sim, ch: &AddrChannel, what: &str) -> Result<(u64, u64, u64), String> {
        let (id, addr, len) = (ch.id.map_or(0, |p| sim.get(p)), sim.get(ch.addr), sim.get(ch.len));
        let (size, burst) = (sim.get(ch.size), sim.get(ch.burst));
        let at = format!("{what} id {id} address {addr:#x} len {len}");
        if burst != 1 {
            return Err(format!("{at}: {what}BURST = {burst}, only INCR (1) is allowed"));
        }
        if size != self.size {
            return Err(format!("{at}: {what}SIZE = {size}, the data bus is {} bytes (size {})", self.bytes, self.size));
        }
        if len + 1 > 256 {
            return Err(format!("{at}: {} beats, more than 256", len + 1));
        }
        if addr % self.bytes != 0 {
            return Err(format!("{at}: not aligned to the {}-byte beat", self.bytes));
        }
        if addr % 4096 + (len + 1) * self.bytes > 4096 {
            return Err(format!("{at}: the burst crosses a 4 KB boundary"));
        }
        if let Some(&p) = ch.zero.iter().find(|&&p| sim.get(p) != 0) {
            return Err(format!("{at}: {} = {}, must be 0", super::port_name(sim, p), sim.get(p)));
        }
        Ok((id, addr, len))
    }

    fn drive_read(&mut self, sim: &mut Sim, now: u64) {
        let Some(mut rd) = self.read.take() else { return };
        rd.ar_ready = !self.chance(|r| r.ar_stall);
        sim.set(rd.ar.ready, rd.ar_ready as u64);
        if rd.offer.is_none() {
            // Deterministic: only the oldest burst; random: the oldest of each ID.
            let cands: Vec<usize> = if self.random.is_some() {
                (0..rd.bursts.len()).filter(|&i| !rd.bursts[..i].iter().any(|b| b.id == rd.bursts[i].id)).collect()
            } else {
                (0..rd.bursts.len().min(1)).collect()
            };
            let due: Vec<usize> = cands.into_iter().filter(|&i| rd.bursts[i].due <= now).collect();
            if !due.is_empty() && !self.chance(|r| r.r_gap) {
                let b = &rd.bursts[due[self.pick(due.len())]];
                let mut data = Vec::new();
                self.mem.borrow().read_words_into(b.addr + b.next * self.bytes, self.bytes as usize, &mut data);
                rd.offer = Some((b.seq, data));
            }
        }
        sim.set(rd.r_valid, rd.offer.is_some() as u64);
        match &rd.offer {
            Some((seq, data)) => {
                let b = rd.bursts.iter().find(|b| b.seq == *seq).expect("the offered burst");
                sim.set_words(rd.r_data, data);
                if let Some(p) = rd.r_id {
                    sim.set(p, b.id);
                }
                sim.set(rd.r_resp, 0);
                sim.set(rd.r_last, (b.next == b.len) as u64);
            }
            None => {
                for p in rd.r_id.into_iter().chain([rd.r_data, rd.r_resp, rd.r_last]) {
                    set_junk(sim, p, &mut self.rng);
                }
            }
        }
        self.read = Some(rd);
    }

    fn sample_read(&mut self, sim: &Sim, now: u64) -> Result<(), String> {
        let Some(mut rd) = self.read.take() else { return Ok(()) };
        let r = self.sample_read_side(sim, now, &mut rd);
        self.read = Some(rd);
        r
    }

    fn sample_read_side(&mut self, sim: &Sim, now: u64, rd: &mut ReadSide) -> Result<(), String> {
        if rd.offer.is_some() && sim.get(rd.r_ready) == 1 {
            let (seq, _) = rd.offer.take().expect("offered");
            let i = rd.bursts.iter().position(|b| b.seq == seq).expect("the offered burst");
            rd.bursts[i].next += 1;
            if rd.bursts[i].next > rd.bursts[i].len {
                rd.bursts.remove(i);
            }
            self.handshakes += 1;
        }
        let valid = sim.get(rd.ar.valid) == 1;
        rd.ar.hold.check(sim, "AR", valid, rd.ar_ready, &rd.ar.fields)?;
        if valid && rd.ar_ready {
            let (id, addr, len) = self.address(sim, &rd.ar, "AR")?;
            let due = now + self.latency();
            self.seq += 1;
            rd.bursts.push(ReadBurst { seq: self.seq, id, addr, len, due, next: 0 });
            self.handshakes += 1;
        }
        Ok(())
    }

    fn drive_write(&mut self, sim: &mut Sim, now: u64) {
        let Some(mut wr) = self.write.take() else { return };
        wr.aw_ready = !self.chance(|r| r.aw_stall);
        wr.w_ready_now = !self.chance(|r| r.w_stall);
        sim.set(wr.aw.ready, wr.aw_ready as u64);
        sim.set(wr.w_ready, wr.w_ready_now as u64);
        if wr.offer.is_none() {
            let cands: Vec<usize> = if self.random.is_some() {
                (0..wr.bursts.len()).filter(|&i| !wr.bursts[..i].iter().any(|b| b.id == wr.bursts[i].id)).collect()
            } else {
                (0..wr.bursts.len().min(1)).collect()
            };
            let due: Vec<usize> = cands.into_iter().filter(|&i| wr.bursts[i].due.is_some_and(|d| d <= now)).collect();
            if !due.is_empty() && !self.chance(|r| r.b_gap) {
                wr.offer = Some(wr.bursts[due[self.pick(due.len())]].seq);
            }
        }
        sim.set(wr.b_valid, wr.offer.is_some() as u64);
        match wr.offer {
            Some(seq) => {
                let b = wr.bursts.iter().find(|b| b.seq == seq).expect("the offered burst");
                if let Some(p) = wr.b_id {
                    sim.set(p, b.id);
                }
                sim.set(wr.b_resp, 0);
            }
            None => {
                for p in wr.b_id.into_iter().chain([wr.b_resp]) {
                    set_junk(sim, p, &mut self.rng);
                }
            }
        }
        self.write = Some(wr);
    }

    fn sample_write(&mut self, sim: &Sim, now: u64) -> Result<(), String> {
        let Some(mut wr) = self.write.take() else { return Ok(()) };
        let r = self.sample_write_side(sim, now, &mut wr);
        self.write = Some(wr);
        r
    }

    fn sample_write_side(&mut self, sim: &Sim, now: u64, wr: &mut WriteSide) -> Result<(), String> {
        if let Some(seq) = wr.offer {
            if sim.get(wr.b_ready) == 1 {
                wr.offer = None;
                wr.bursts.retain(|b| b.seq != seq);
                self.handshakes += 1;
            }
        }
        let aw_valid = sim.get(wr.aw.valid) == 1;
        wr.aw.hold.check(sim, "AW", aw_valid, wr.aw_ready, &wr.aw.fields)?;
        if aw_valid && wr.aw_ready {
            let (id, addr, len) = self.address(sim, &wr.aw, "AW")?;
            self.seq += 1;
            wr.bursts.push(WriteBurst { seq: self.seq, id, addr, len, t_aw: now, beats: 0, due: None });
            self.handshakes += 1;
            // Beats that came before this AW are its first ones.
            let i = wr.bursts.len() - 1;
            while wr.bursts[i].beats <= len {
                let Some(e) = wr.early.pop_front() else { break };
                self.apply(&mut wr.bursts[i], &e.data, &e.strb, e.last, e.t)?;
            }
        }
        let w_valid = sim.get(wr.w_valid) == 1;
        wr.w_hold.check(sim, "W", w_valid, wr.w_ready_now, &wr.w_fields)?;
        if w_valid && wr.w_ready_now {
            let last = sim.get(wr.w_last) == 1;
            let mut data = Vec::new();
            let mut strb = Vec::new();
            sim.get_words(wr.w_data, &mut data);
            sim.get_words(wr.w_strb, &mut strb);
            match wr.bursts.iter_mut().find(|b| b.beats <= b.len) {
                Some(b) => self.apply(b, &data, &strb, last, now)?,
                None => wr.early.push_back(EarlyBeat { data, strb, last, t: now }),
            }
            self.handshakes += 1;
        }
        Ok(())
    }

    /// Beat `b.beats` of burst `b`, taken on W in cycle `t`.
    fn apply(&mut self, b: &mut WriteBurst, data: &[u32], strb: &[u32], last: bool, t: u64) -> Result<(), String> {
        let want = b.beats == b.len;
        if last != want {
            return Err(format!(
                "W beat {} of {} of the AW burst id {} at {:#x}: WLAST = {}",
                b.beats,
                b.len + 1,
                b.id,
                b.addr,
                last as u8
            ));
        }
        self.mem.borrow_mut().write_beat(b.addr + b.beats * self.bytes, self.bytes as usize, data, Some(strb));
        b.beats += 1;
        if last {
            b.due = Some(b.t_aw.max(t) + self.latency());
        }
        Ok(())
    }
}

impl Agent for AxiSlave {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        self.drive_read(sim, now);
        self.drive_write(sim, now);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        self.sample_read(sim, now)?;
        self.sample_write(sim, now)
    }

    fn done(&self) -> bool {
        self.read.as_ref().is_none_or(|r| r.bursts.is_empty())
            && self.write.as_ref().is_none_or(|w| w.bursts.is_empty() && w.early.is_empty())
    }

    fn waiting(&self) -> String {
        let mut w = Vec::new();
        if let Some(r) = &self.read {
            if let Some(b) = r.bursts.first() {
                w.push(format!(
                    "{} read bursts to be answered (the oldest: id {} at {:#x}, beat {} of {}, due cycle {})",
                    r.bursts.len(),
                    b.id,
                    b.addr,
                    b.next,
                    b.len + 1,
                    b.due
                ));
            }
        }
        if let Some(wr) = &self.write {
            if let Some(b) = wr.bursts.first() {
                let state = match b.due {
                    Some(d) => format!("B due cycle {d}"),
                    None => format!("W beat {} of {}", b.beats, b.len + 1),
                };
                w.push(format!("{} write bursts (the oldest: id {} at {:#x}, {state})", wr.bursts.len(), b.id, b.addr));
            }
            if !wr.early.is_empty() {
                w.push(format!("an AW for {} W beats taken before it", wr.early.len()));
            }
        }
        w.join("; ")
    }

    fn progress(&self) -> u64 {
        self.handshakes
    }
}
