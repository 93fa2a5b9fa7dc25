//! An AXI4 slave memory over the shared memory, behind a design's AXI4
//! master bundle `<prefix>awvalid`, ... (the port names of the interface
//! conventions, lower case, no direction suffix). A bundle may have only
//! its read channels (AR, R) or only its write channels (AW, W, B); the ID
//! ports and AxLOCK/AxCACHE/AxPROT/AxQOS may be absent.

use super::{agent_rng, optional, set_junk, Agent, DataHook, Fields, HoldCheck, MemState, MemWatch, SharedMemory};
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::rng::Rng;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// One W beat as the slave applied it to the memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBeat {
    /// The beat's byte address (its burst's address plus the beats before).
    pub addr: u64,
    /// The data and the byte strobes, as port words.
    pub data: Vec<u32>,
    pub strb: Vec<u32>,
    /// The cycle of its W handshake.
    pub cycle: u64,
}

impl WriteBeat {
    /// Whether byte `i` of the beat is strobed.
    pub fn strobed(&self, i: usize) -> bool {
        self.strb.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1)
    }
}

/// Every W beat a slave applied, in the order applied; shared, so a block's
/// driver can read the writes that its block made.
pub type WriteLog = Rc<RefCell<Vec<WriteBeat>>>;

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

impl AxiRandom {
    /// The same chance of a stall on AR, AW and W, and of a gap on R and B.
    pub fn even(seed: u64, latency: (u32, u32), stall: u32, gap: u32) -> AxiRandom {
        AxiRandom { seed, latency, ar_stall: stall, aw_stall: stall, w_stall: stall, r_gap: gap, b_gap: gap }
    }
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
    taken: u64,
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
    core: Core,
    read: Option<ReadSide>,
    write: Option<WriteSide>,
}

/// What both sides share.
struct Core {
    mem: SharedMemory,
    log: WriteLog,
    hook: Option<DataHook>,
    watch: MemWatch,
    last_r: Option<u64>,
    bytes: u64,
    size: u64,
    latency: u64,
    random: Option<AxiRandom>,
    rng: Rng,
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
        let core = Core {
            rng: agent_rng(0, &name),
            mem,
            log: WriteLog::default(),
            hook: None,
            watch: MemWatch::default(),
            last_r: None,
            bytes,
            size: bytes.trailing_zeros() as u64,
            latency: latency as u64,
            random: None,
            seq: 0,
            handshakes: 0,
        };
        Ok(AxiSlave { name, core, read, write })
    }

    pub fn random(mut self, r: AxiRandom) -> AxiSlave {
        self.core.rng = agent_rng(r.seed, &self.name);
        self.core.random = Some(r);
        self
    }

    /// R data passes through `hook` (the beat's byte address, its words)
    /// when the beat is first offered.
    pub fn data_hook(mut self, hook: DataHook) -> AxiSlave {
        self.core.hook = Some(hook);
        self
    }

    /// The W beats applied so far (the log goes on growing as the slave runs).
    pub fn write_log(&self) -> WriteLog {
        self.core.log.clone()
    }

    /// Read bursts and write bursts owed, the oldest read burst and the
    /// cycle of the last R beat taken, as of the last sample.
    pub fn watch(&self) -> MemWatch {
        self.core.watch.clone()
    }
}

impl Core {
    fn chance(&mut self, pct: fn(&AxiRandom) -> u32) -> bool {
        self.random.is_some_and(|r| self.rng.chance(pct(&r)))
    }
    fn latency(&mut self) -> u64 {
        match self.random {
            Some(AxiRandom { latency: (lo, hi), .. }) => lo as u64 + self.rng.below(hi.max(lo) as u64 - lo as u64 + 1),
            None => self.latency,
        }
    }

    /// Which of the bursts waiting for an answer (in AR or AW order: their
    /// IDs and whether each is due) to answer now, if any. Deterministic:
    /// the oldest, once due. Random: any due one that is the oldest of its
    /// ID, unless a gap (`gap`) is drawn.
    fn choose(&mut self, bursts: &[(u64, bool)], gap: fn(&AxiRandom) -> u32) -> Option<usize> {
        let due: Vec<usize> = if self.random.is_some() {
            (0..bursts.len()).filter(|&i| bursts[i].1 && !bursts[..i].iter().any(|b| b.0 == bursts[i].0)).collect()
        } else {
            bursts.first().filter(|b| b.1).map(|_| 0).into_iter().collect()
        };
        if due.is_empty() || self.chance(gap) {
            return None;
        }
        Some(due[if self.random.is_some() { self.rng.below(due.len() as u64) as usize } else { 0 }])
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
        let addr = b.addr + b.beats * self.bytes;
        self.mem.borrow_mut().write_beat(addr, self.bytes as usize, data, Some(strb));
        self.log.borrow_mut().push(WriteBeat { addr, data: data.to_vec(), strb: strb.to_vec(), cycle: t });
        b.beats += 1;
        if last {
            b.due = Some(b.t_aw.max(t) + self.latency());
        }
        Ok(())
    }
}

impl ReadSide {
    fn drive(&mut self, sim: &mut Sim, now: u64, core: &mut Core) {
        self.ar_ready = !core.chance(|r| r.ar_stall);
        sim.set(self.ar.ready, self.ar_ready as u64);
        if self.offer.is_none() {
            let waiting: Vec<(u64, bool)> = self.bursts.iter().map(|b| (b.id, b.due <= now)).collect();
            if let Some(i) = core.choose(&waiting, |r| r.r_gap) {
                let b = &self.bursts[i];
                let mut data = Vec::new();
                let addr = b.addr + b.next * core.bytes;
                core.mem.borrow().read_words_into(addr, core.bytes as usize, &mut data);
                if let Some(h) = &mut core.hook {
                    h(addr, &mut data);
                }
                self.offer = Some((b.seq, data));
            }
        }
        sim.set(self.r_valid, self.offer.is_some() as u64);
        match &self.offer {
            Some((seq, data)) => {
                let b = self.bursts.iter().find(|b| b.seq == *seq).expect("the offered burst");
                sim.set_words(self.r_data, data);
                if let Some(p) = self.r_id {
                    sim.set(p, b.id);
                }
                sim.set(self.r_resp, 0);
                sim.set(self.r_last, (b.next == b.len) as u64);
            }
            None => {
                for p in self.r_id.into_iter().chain([self.r_data, self.r_resp, self.r_last]) {
                    set_junk(sim, p, &mut core.rng);
                }
            }
        }
    }

    fn sample(&mut self, sim: &Sim, now: u64, core: &mut Core) -> Result<(), String> {
        if self.offer.is_some() && sim.get(self.r_ready) == 1 {
            let (seq, _) = self.offer.take().expect("offered");
            let i = self.bursts.iter().position(|b| b.seq == seq).expect("the offered burst");
            self.bursts[i].next += 1;
            if self.bursts[i].next > self.bursts[i].len {
                self.bursts.remove(i);
            }
            core.handshakes += 1;
            core.last_r = Some(now);
        }
        let valid = sim.get(self.ar.valid) == 1;
        self.ar.hold.check(sim, "AR", valid, self.ar_ready, &self.ar.fields)?;
        if valid && self.ar_ready {
            let (id, addr, len) = core.address(sim, &self.ar, "AR")?;
            let due = now + core.latency();
            core.seq += 1;
            self.bursts.push(ReadBurst { seq: core.seq, id, addr, len, taken: now, due, next: 0 });
            core.handshakes += 1;
        }
        Ok(())
    }
}

impl WriteSide {
    fn drive(&mut self, sim: &mut Sim, now: u64, core: &mut Core) {
        self.aw_ready = !core.chance(|r| r.aw_stall);
        self.w_ready_now = !core.chance(|r| r.w_stall);
        sim.set(self.aw.ready, self.aw_ready as u64);
        sim.set(self.w_ready, self.w_ready_now as u64);
        if self.offer.is_none() {
            let waiting: Vec<(u64, bool)> = self.bursts.iter().map(|b| (b.id, b.due.is_some_and(|d| d <= now))).collect();
            self.offer = core.choose(&waiting, |r| r.b_gap).map(|i| self.bursts[i].seq);
        }
        sim.set(self.b_valid, self.offer.is_some() as u64);
        match self.offer {
            Some(seq) => {
                let b = self.bursts.iter().find(|b| b.seq == seq).expect("the offered burst");
                if let Some(p) = self.b_id {
                    sim.set(p, b.id);
                }
                sim.set(self.b_resp, 0);
            }
            None => {
                for p in self.b_id.into_iter().chain([self.b_resp]) {
                    set_junk(sim, p, &mut core.rng);
                }
            }
        }
    }

    fn sample(&mut self, sim: &Sim, now: u64, core: &mut Core) -> Result<(), String> {
        if let Some(seq) = self.offer {
            if sim.get(self.b_ready) == 1 {
                self.offer = None;
                self.bursts.retain(|b| b.seq != seq);
                core.handshakes += 1;
            }
        }
        let aw_valid = sim.get(self.aw.valid) == 1;
        self.aw.hold.check(sim, "AW", aw_valid, self.aw_ready, &self.aw.fields)?;
        if aw_valid && self.aw_ready {
            let (id, addr, len) = core.address(sim, &self.aw, "AW")?;
            core.seq += 1;
            self.bursts.push(WriteBurst { seq: core.seq, id, addr, len, t_aw: now, beats: 0, due: None });
            core.handshakes += 1;
            // Beats that came before this AW are its first ones.
            let i = self.bursts.len() - 1;
            while self.bursts[i].beats <= len {
                let Some(e) = self.early.pop_front() else { break };
                core.apply(&mut self.bursts[i], &e.data, &e.strb, e.last, e.t)?;
            }
        }
        let w_valid = sim.get(self.w_valid) == 1;
        self.w_hold.check(sim, "W", w_valid, self.w_ready_now, &self.w_fields)?;
        if w_valid && self.w_ready_now {
            let last = sim.get(self.w_last) == 1;
            let mut data = Vec::new();
            let mut strb = Vec::new();
            sim.get_words(self.w_data, &mut data);
            sim.get_words(self.w_strb, &mut strb);
            match self.bursts.iter_mut().find(|b| b.beats <= b.len) {
                Some(b) => core.apply(b, &data, &strb, last, now)?,
                None => self.early.push_back(EarlyBeat { data, strb, last, t: now }),
            }
            core.handshakes += 1;
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
        if let Some(r) = &mut self.read {
            r.drive(sim, now, &mut self.core);
        }
        if let Some(w) = &mut self.write {
            w.drive(sim, now, &mut self.core);
        }
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        if let Some(r) = &mut self.read {
            r.sample(sim, now, &mut self.core)?;
        }
        if let Some(w) = &mut self.write {
            w.sample(sim, now, &mut self.core)?;
        }
        let reads = self.read.as_ref().map_or(0, |r| r.bursts.len());
        let writes = self.write.as_ref().map_or(0, |w| w.bursts.len());
        let oldest = self.read.as_ref().and_then(|r| r.bursts.first()).map(|b| (b.addr, b.taken));
        self.core.watch.set(MemState { reads, writes, oldest, last_answer: self.core.last_r });
        Ok(())
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
        self.core.handshakes
    }
}
