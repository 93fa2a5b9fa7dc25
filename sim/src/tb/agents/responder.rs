//! The slave side of a native memory port over the shared memory: requests
//! taken as the request pace allows, answered in request order after a
//! latency, each answer offered as the response pace allows and held until
//! taken.
//!
//! Timing without randomness (latency `L`), the rule the models' cycle
//! counts assume: the answer to a request taken at the edge ending cycle
//! `t` is offered from cycle `t + L`, and no earlier than the cycle after
//! the previous answer was taken (so at most one answer a cycle); a burst
//! of `len + 1` beats is `len + 1` answers, all due at `t + L`. (`L` = 0
//! behaves as 1: an answer is driven from state the edge has left.) For a
//! write port "the request taken at `t`" is the burst's last beat, and the
//! answer is its one response.

use super::{agent_rng, port_name, set_junk, Agent, DataHook, Fields, HoldCheck, MemState, MemWatch, NativePort, SharedMemory};
use crate::cosim::Sim;
use crate::rng::Rng;
use std::collections::VecDeque;

/// From the port's address to the byte address in the shared memory (e.g.
/// a bank's word address to where that word lives).
pub type AddrMap = Box<dyn Fn(u64) -> u64>;

/// Randomized memory timing.
#[derive(Clone, Copy, Debug)]
pub struct MemRandom {
    pub seed: u64,
    /// Latency of each request, uniform in this range (inclusive).
    pub latency: (u32, u32),
    /// Percent of cycles the request ready is low.
    pub req_stall: u32,
    /// Percent of cycles an answer that is due is held back.
    pub rsp_stall: u32,
}

/// The timing both responders share.
struct Timing {
    latency: u64,
    random: Option<MemRandom>,
    rng: Rng,
}

impl Timing {
    fn new(name: &str, latency: u32) -> Timing {
        Timing { latency: latency as u64, random: None, rng: agent_rng(0, name) }
    }
    fn randomize(&mut self, name: &str, r: MemRandom) {
        self.random = Some(r);
        self.rng = agent_rng(r.seed, name);
    }
    fn latency(&mut self) -> u64 {
        match self.random {
            Some(MemRandom { latency: (lo, hi), .. }) => lo as u64 + self.rng.below(hi.max(lo) as u64 - lo as u64 + 1),
            None => self.latency,
        }
    }
    fn req_stall(&mut self) -> bool {
        self.random.is_some_and(|r| self.rng.chance(r.req_stall))
    }
    fn rsp_stall(&mut self) -> bool {
        self.random.is_some_and(|r| self.rng.chance(r.rsp_stall))
    }
}

/// Answers waiting, in order, with the first cycle each may be offered; the
/// head is offered once due (and not held back), then held until taken.
struct InOrder<T> {
    queue: VecDeque<(u64, T)>,
    offered: bool,
}

impl<T> InOrder<T> {
    fn new() -> InOrder<T> {
        InOrder { queue: VecDeque::new(), offered: false }
    }
    /// Offers the head if it is due and `hold` does not hold it back; the
    /// offered head, newly offered or still.
    fn offer(&mut self, now: u64, hold: impl FnOnce() -> bool) -> Option<(&T, bool)> {
        let fresh = !self.offered && self.queue.front().is_some_and(|h| h.0 <= now) && !hold();
        self.offered |= fresh;
        self.queue.front().filter(|_| self.offered).map(|h| (&h.1, fresh))
    }
    fn take(&mut self) -> Option<T> {
        self.offered = false;
        self.queue.pop_front().map(|h| h.1)
    }
}

/// A burst being written: its first beat's request fields and the beats so far.
struct Burst {
    addr: u64,
    len: u64,
    tag: u64,
    beats: u64,
}

/// Behind a design's native memory port: a read port reads the shared
/// memory (one answer a beat); a write port writes it with the strobes
/// (one answer, with no data, a burst). Checks: the request held until
/// taken, its address a beat's (after the map); on a write port every beat
/// of a burst with the burst's address, len and tag, and `last` exactly on
/// its last beat.
pub struct MemResponder {
    name: String,
    port: NativePort,
    fields: Fields,
    mem: SharedMemory,
    map: AddrMap,
    bytes: usize,
    timing: Timing,
    /// (byte address, tag, cycle the request was taken) of each answer: a
    /// read beat's, or a write burst's (address of its first beat).
    answers: InOrder<(u64, u64, u64)>,
    /// A write port's burst being taken.
    burst: Option<Burst>,
    /// The read data on the port, or a write beat's data and strobes.
    data: Vec<u32>,
    strb: Vec<u32>,
    req_ready: bool,
    hold: HoldCheck,
    handshakes: u64,
    /// Changes read data as it is first offered (junk where the memory's
    /// contents must not matter).
    hook: Option<DataHook>,
    /// The response ready must be 1 whenever an answer is offered.
    always_ready: bool,
    watch: MemWatch,
    last_answer: Option<u64>,
}

impl MemResponder {
    /// Answers port `port` (found with [`NativePort::master`]) from `mem`
    /// after `latency` cycles (see the module's timing rule); addresses are
    /// byte addresses until [`MemResponder::map`].
    pub fn new(port: NativePort, mem: SharedMemory, latency: u32) -> MemResponder {
        let name = port.name.clone();
        MemResponder {
            fields: port.req_fields(),
            bytes: port.beat_bytes(),
            timing: Timing::new(&name, latency),
            name,
            port,
            mem,
            map: Box::new(|a| a),
            answers: InOrder::new(),
            burst: None,
            data: Vec::new(),
            strb: Vec::new(),
            req_ready: false,
            hold: HoldCheck::default(),
            handshakes: 0,
            hook: None,
            always_ready: false,
            watch: MemWatch::default(),
            last_answer: None,
        }
    }
    pub fn map(mut self, map: AddrMap) -> MemResponder {
        self.map = map;
        self
    }
    pub fn random(mut self, r: MemRandom) -> MemResponder {
        self.timing.randomize(&self.name, r);
        self
    }
    /// Read data passes through `hook` (byte address, the beat's words)
    /// when first offered: to put junk where the memory's contents must
    /// not matter.
    pub fn data_hook(mut self, hook: DataHook) -> MemResponder {
        self.hook = Some(hook);
        self
    }
    /// The design promises its response ready is 1 whenever an answer is
    /// offered: a 0 then is an error.
    pub fn rsp_always_ready(mut self) -> MemResponder {
        self.always_ready = true;
        self
    }
    /// Answers owed: read beats, or write bursts taken and not answered.
    pub fn in_flight(&self) -> usize {
        self.answers.queue.len()
    }
    /// The cycle of the last answer taken.
    pub fn last_answer(&self) -> Option<u64> {
        self.last_answer
    }
    /// A handle that shows [`MemResponder::in_flight`], the oldest request
    /// owed and [`MemResponder::last_answer`] as of the last sample, for
    /// another agent's checks.
    pub fn watch(&self) -> MemWatch {
        self.watch.clone()
    }
    fn publish(&self) {
        let (reads, writes) = if self.port.is_write() { (0, self.in_flight()) } else { (self.in_flight(), 0) };
        let oldest = self.answers.queue.front().map(|&(_, (addr, _, taken))| (addr, taken));
        self.watch.set(MemState { reads, writes, oldest, last_answer: self.last_answer });
    }

    /// The port's address as a byte address, checked to be a beat's.
    fn byte_address(&self, addr: u64) -> Result<u64, String> {
        let byte = (self.map)(addr);
        if !byte.is_multiple_of(self.bytes as u64) {
            return Err(format!("request for {addr:#x} (byte {byte:#x}), not a beat ({} bytes) address", self.bytes));
        }
        Ok(byte)
    }

    /// A read request taken in cycle `now`: its beats are owed.
    fn read(&mut self, sim: &Sim, now: u64) -> Result<(), String> {
        let p = &self.port;
        let (addr, tag) = (sim.get(p.req_addr), p.req_tag.map_or(0, |t| sim.get(t)));
        let beats = p.req_len.map_or(0, |l| sim.get(l)) + 1;
        let byte = self.byte_address(addr)?;
        let due = now + self.timing.latency();
        for k in 0..beats {
            self.answers.queue.push_back((due, (byte.wrapping_add(k * self.bytes as u64), tag, now)));
        }
        Ok(())
    }

    /// A write beat taken in cycle `now`: check it against its burst,
    /// write it; after the last, the burst's answer is owed.
    fn write(&mut self, sim: &Sim, now: u64) -> Result<(), String> {
        let p = &self.port;
        let (addr, tag) = (sim.get(p.req_addr), p.req_tag.map_or(0, |t| sim.get(t)));
        let len = p.req_len.map_or(0, |l| sim.get(l));
        let byte = self.byte_address(addr)?;
        let b = self.burst.get_or_insert(Burst { addr, len, tag, beats: 0 });
        if (addr, len, tag) != (b.addr, b.len, b.tag) {
            return Err(format!(
                "beat {} of the burst at {:#x}: address {addr:#x}, len {len}, tag {tag}; the burst's first beat had {:#x}, {}, {}",
                b.beats, b.addr, b.addr, b.len, b.tag
            ));
        }
        let last = b.beats == b.len;
        if let Some(l) = p.req_last {
            if (sim.get(l) == 1) != last {
                return Err(format!("beat {} of {} of the burst at {addr:#x}: {} = {}", b.beats, b.len + 1, port_name(sim, l), sim.get(l)));
            }
        }
        sim.get_words(p.req_data.expect("a write port"), &mut self.data);
        sim.get_words(p.req_strb.expect("a write port"), &mut self.strb);
        let at = byte.wrapping_add(b.beats * self.bytes as u64);
        self.mem.borrow_mut().write_beat(at, self.bytes, &self.data, Some(&self.strb));
        b.beats += 1;
        if last {
            self.burst = None;
            let due = now + self.timing.latency();
            self.answers.queue.push_back((due, (byte, tag, now)));
        }
        Ok(())
    }
}

impl Agent for MemResponder {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        self.req_ready = !self.timing.req_stall();
        sim.set(self.port.req_ready, self.req_ready as u64);
        let timing = &mut self.timing;
        let head = self.answers.offer(now, || timing.rsp_stall()).map(|(&a, fresh)| (a, fresh));
        sim.set(self.port.rsp_valid, head.is_some() as u64);
        match head {
            Some(((addr, tag, _), fresh)) => {
                if let Some(d) = self.port.rsp_data {
                    // Read when first offered, so the answer holds still.
                    if fresh {
                        self.mem.borrow().read_words_into(addr, self.bytes, &mut self.data);
                        if let Some(h) = &mut self.hook {
                            h(addr, &mut self.data);
                        }
                    }
                    sim.set_words(d, &self.data);
                }
                if let Some(t) = self.port.rsp_tag {
                    sim.set(t, tag);
                }
            }
            None => {
                for p in self.port.rsp_data.into_iter().chain(self.port.rsp_tag) {
                    set_junk(sim, p, &mut self.timing.rng);
                }
            }
        }
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        if self.answers.offered {
            if sim.get(self.port.rsp_ready) == 1 {
                self.answers.take();
                self.handshakes += 1;
                self.last_answer = Some(now);
            } else if self.always_ready {
                return Err(format!("{} is 0 with an answer on the port; it must always be 1", port_name(sim, self.port.rsp_ready)));
            }
        }
        let valid = sim.get(self.port.req_valid) == 1;
        self.hold.check(sim, "request", valid, self.req_ready, &self.fields)?;
        if valid && self.req_ready {
            if self.port.is_write() {
                self.write(sim, now)?;
            } else {
                self.read(sim, now)?;
            }
            self.handshakes += 1;
        }
        self.publish();
        Ok(())
    }

    fn done(&self) -> bool {
        self.burst.is_none() && self.answers.queue.is_empty()
    }

    fn waiting(&self) -> String {
        let mut w = Vec::new();
        if let Some(b) = &self.burst {
            w.push(format!("beat {} of {} of the burst at {:#x}", b.beats, b.len + 1, b.addr));
        }
        if let Some(&(due, (addr, _, _))) = self.answers.queue.front() {
            let state = if self.answers.offered { "offered" } else { "not offered" };
            w.push(format!("{} answers to be taken (the first: byte {addr:#x}, due cycle {due}, {state})", self.answers.queue.len()));
        }
        w.join(", ")
    }

    fn progress(&self) -> u64 {
        self.handshakes
    }
}
