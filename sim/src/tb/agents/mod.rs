//! Protocol agents: each drives and watches one interface of a design, and
//! a [`Bench`] runs any number of them on one simulation, so the blocks of
//! a composed design can be driven by the agents of their parts over one
//! shared [`Memory`](crate::mem::Memory).
//!
//! A cycle, for every agent at once: [`Agent::drive`] sets the agent's
//! inputs from its own state only (never from this cycle's outputs, which
//! are not settled yet); one `eval`; [`Agent::sample`] reads the outputs,
//! records the handshakes the coming edge completes and checks the
//! protocol; one `tick`. An agent that reads another interface's handshake
//! (a monitor) reads both its valid and its ready off the ports in
//! `sample`: inputs read back as driven.
//!
//! Files: `stream.rs` (valid/ready source and sink), `native.rs` (the
//! handles of a native memory port), `responder.rs` (native memory slave:
//! read and write), `master.rs` (native memory masters), `axi.rs` (AXI4
//! slave memory), `lite.rs` (AXI4-Lite master for a host's registers),
//! `monitor.rs` (a passive watcher).

mod axi;
mod lite;
mod master;
mod monitor;
mod native;
mod responder;
mod stream;

pub use axi::{AxiRandom, AxiSlave, WriteBeat, WriteLog};
pub use lite::{LiteEvents, LiteMaster, LiteOp};
pub use master::{NativeMaster, ReadRequest, WriteBurst};
pub use monitor::Monitor;
pub use native::NativePort;
pub use responder::{AddrMap, MemRandom, MemResponder};
pub use stream::{Expect, StreamSink, StreamSource};

use super::mask;
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::mem::Memory;
use crate::rng::Rng;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The memory every agent of a bench reads and writes.
pub type SharedMemory = Rc<RefCell<Memory>>;

/// A memory to share between agents.
pub fn shared(m: Memory) -> SharedMemory {
    Rc::new(RefCell::new(m))
}

/// Changes a memory agent's read data as it is first offered: (the beat's
/// byte address, its words). For junk where the memory's contents must not
/// matter (bits above a texel, words past a table's end).
pub type DataHook = Box<dyn FnMut(u64, &mut [u32])>;

/// What a memory agent has in flight, as of its last sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemState {
    /// Read beats (native) or read bursts (AXI) owed.
    pub reads: usize,
    /// Write bursts taken and not answered.
    pub writes: usize,
    /// The oldest request owed: (byte address, the cycle it was taken).
    pub oldest: Option<(u64, u64)>,
    /// The cycle of the last read answer taken (a native answer, an R beat).
    pub last_answer: Option<u64>,
}

/// A memory agent's [`MemState`], shared with another agent that checks a
/// design's promises about its memory traffic (e.g. idle only with nothing
/// in flight). Each memory agent updates its own at the end of its sample.
#[derive(Clone, Debug, Default)]
pub struct MemWatch(Rc<Cell<MemState>>);

impl MemWatch {
    pub fn get(&self) -> MemState {
        self.0.get()
    }
    fn set(&self, s: MemState) {
        self.0.set(s)
    }
}

/// One side of one interface of the design under test.
pub trait Agent {
    /// Names the agent in error messages.
    fn name(&self) -> &str;
    /// Set this cycle's inputs, from the agent's own state only.
    fn drive(&mut self, sim: &mut Sim);
    /// After the settle: record the handshakes of the coming edge and check
    /// the protocol. An error is something the RTL did wrong.
    fn sample(&mut self, sim: &Sim) -> Result<(), String>;
    /// The agent has nothing left to send or to wait for (a passive agent,
    /// such as a memory with nothing in flight, is done).
    fn done(&self) -> bool;
    /// What the agent still waits for, for a hang message.
    fn waiting(&self) -> String;
    /// A count that grows whenever the agent sees the design move (a
    /// handshake) or waits on purpose (a source holding an item back for a
    /// time); [`Bench::quiet`] watches it.
    fn progress(&self) -> u64 {
        0
    }
}

/// Runs agents on one simulation, cycle by cycle, until every one is done.
#[derive(Clone, Copy, Debug)]
pub struct Bench {
    /// Cycles the run may take at the most.
    pub budget: u64,
    /// Cycles the run may go without any agent's progress.
    pub quiet: Option<u64>,
    /// Cycles run after every agent is done, the agents still checking
    /// (a design must stay quiet once its work is over).
    pub drain: u64,
}

impl Bench {
    pub fn new(budget: u64) -> Bench {
        Bench { budget, quiet: None, drain: 0 }
    }
    pub fn quiet(self, cycles: u64) -> Bench {
        Bench { quiet: Some(cycles), ..self }
    }
    pub fn drain(self, cycles: u64) -> Bench {
        Bench { drain: cycles, ..self }
    }

    /// Runs until every agent is done (then [`Bench::drain`] cycles more).
    /// The run ends after a tick: the outputs are those of the last edge
    /// with the inputs of the last cycle still driven. A check that fails
    /// is [`CosimError::Mismatch`], a budget that runs out
    /// [`CosimError::Hang`], the run budget ([`crate::budget`], cycles
    /// since the simulation began) [`CosimError::Budget`]; each closes the
    /// waveform.
    pub fn run(&self, sim: &mut Sim, agents: &mut [&mut dyn Agent]) -> Result<(), CosimError> {
        let start = sim.cycle();
        // The run budget, read once: the cycle loop only compares.
        let run_limit = crate::budget::limit();
        let mut drain_left: Option<u64> = None;
        let mut progress: u64 = agents.iter().map(|a| a.progress()).sum();
        let mut last_progress = start;
        loop {
            match drain_left.as_mut() {
                Some(0) => break,
                Some(d) => *d -= 1,
                None if agents.iter().all(|a| a.done()) => {
                    if self.drain == 0 {
                        break;
                    }
                    drain_left = Some(self.drain - 1);
                }
                None => {}
            }
            let now = sim.cycle();
            if now >= run_limit && crate::budget::over(now) {
                sim.trace_close();
                return Err(CosimError::Budget(crate::budget::limit()));
            }
            let over = now - start >= self.budget;
            let still = self.quiet.is_some_and(|q| now - last_progress > q);
            if drain_left.is_none() && (over || still) {
                let why = if over {
                    format!("{} cycles (the budget)", self.budget)
                } else {
                    format!("{} cycles without progress", now - last_progress)
                };
                let waits: Vec<String> =
                    agents.iter().filter(|a| !a.done()).map(|a| format!("{} waits for {}", a.name(), a.waiting())).collect();
                return Err(super::hang(sim, format!("at cycle {now}, after {why}: {}", waits.join("; "))));
            }
            for a in agents.iter_mut() {
                a.drive(sim);
            }
            sim.eval();
            for a in agents.iter_mut() {
                if let Err(msg) = a.sample(sim) {
                    let msg = format!("cycle {now}: {}: {msg}", a.name());
                    return Err(super::fail(sim, msg));
                }
            }
            sim.tick();
            let p: u64 = agents.iter().map(|a| a.progress()).sum();
            if p != progress {
                progress = p;
                last_progress = sim.cycle();
            }
        }
        Ok(())
    }
}

/// When an agent holds back (a source its next item, a sink its ready, a
/// memory its answer).
pub enum Pace {
    /// Never.
    Steady,
    /// In this percent of the cycles it could go, drawn from the agent's
    /// own random stream.
    Random(u32),
    /// In the cycles (the simulation's cycle number) the function says.
    Pattern(Box<dyn FnMut(u64) -> bool>),
}

impl Pace {
    /// `Random(pct)` with stalls, `Steady` without.
    pub fn random_or_steady(pct: Option<u32>) -> Pace {
        pct.map_or(Pace::Steady, Pace::Random)
    }
    /// Whether to hold back in cycle `now`.
    pub fn stall(&mut self, rng: &mut Rng, now: u64) -> bool {
        match self {
            Pace::Steady => false,
            Pace::Random(pct) => rng.chance(*pct),
            Pace::Pattern(f) => f(now),
        }
    }
}

impl std::fmt::Debug for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pace::Steady => write!(f, "Steady"),
            Pace::Random(p) => write!(f, "Random({p})"),
            Pace::Pattern(_) => write!(f, "Pattern"),
        }
    }
}

/// An agent's own random stream: seeded by the run's seed and the agent's
/// name, so adding an agent to a bench changes no other agent's choices.
pub fn agent_rng(seed: u64, name: &str) -> Rng {
    // FNV-1a of the name.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    Rng::new(seed ^ h)
}

/// The payload ports of a channel; an item on them is the ports' words one
/// after another (each port's [`PortHandle::words`]), in port order.
#[derive(Clone, Debug)]
pub struct Fields {
    ports: Vec<PortHandle>,
    offs: Vec<usize>,
    words: usize,
}

impl Fields {
    pub fn new(ports: Vec<PortHandle>) -> Fields {
        let mut offs = Vec::with_capacity(ports.len());
        let mut words = 0;
        for p in &ports {
            offs.push(words);
            words += p.words();
        }
        Fields { ports, offs, words }
    }
    pub fn len(&self) -> usize {
        self.ports.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
    pub fn port(&self, k: usize) -> PortHandle {
        self.ports[k]
    }
    /// Words of an item.
    pub fn words(&self) -> usize {
        self.words
    }

    /// An item from one value per field, each as words (missing words are
    /// 0; bits above the field's width are dropped).
    pub fn pack(&self, values: &[&[u32]]) -> Vec<u32> {
        assert_eq!(values.len(), self.ports.len(), "one value per field");
        let mut item = vec![0u32; self.words];
        for (k, v) in values.iter().enumerate() {
            let (p, o) = (self.ports[k], self.offs[k]);
            let n = v.len().min(p.words());
            item[o..o + n].copy_from_slice(&v[..n]);
            let rem = p.width() % 32;
            if rem != 0 {
                item[o + p.words() - 1] &= (1u32 << rem) - 1;
            }
        }
        item
    }

    /// An item from one value of at most 64 bits per field.
    pub fn pack_u64(&self, values: &[u64]) -> Vec<u32> {
        let words: Vec<[u32; 2]> = values.iter().map(|&v| w64(v)).collect();
        let refs: Vec<&[u32]> = words.iter().map(|w| &w[..]).collect();
        self.pack(&refs)
    }

    /// Sets field `k` of `item` to `value` (missing words are 0; bits above
    /// the field's width are dropped).
    pub fn set(&self, item: &mut [u32], k: usize, value: &[u32]) {
        let (p, o) = (self.ports[k], self.offs[k]);
        let field = &mut item[o..o + p.words()];
        field.fill(0);
        let n = value.len().min(p.words());
        field[..n].copy_from_slice(&value[..n]);
        let rem = p.width() % 32;
        if rem != 0 {
            field[p.words() - 1] &= (1u32 << rem) - 1;
        }
    }

    /// Field `k` of `item`.
    pub fn get<'a>(&self, item: &'a [u32], k: usize) -> &'a [u32] {
        &item[self.offs[k]..self.offs[k] + self.ports[k].words()]
    }
    /// The low 64 bits of field `k` of `item`.
    pub fn get_u64(&self, item: &[u32], k: usize) -> u64 {
        let w = self.get(item, k);
        w[0] as u64 | w.get(1).map_or(0, |&x| (x as u64) << 32)
    }

    pub fn drive(&self, sim: &mut Sim, item: &[u32]) {
        for (k, &p) in self.ports.iter().enumerate() {
            sim.set_words(p, self.get(item, k));
        }
    }
    /// Random values on every field (inputs that must not matter).
    pub fn junk(&self, sim: &mut Sim, rng: &mut Rng) {
        for &p in &self.ports {
            set_junk(sim, p, rng);
        }
    }
    /// The fields' values in the simulation into `out`.
    pub fn read(&self, sim: &Sim, out: &mut Vec<u32>) {
        out.clear();
        for &p in &self.ports {
            out.extend_from_slice(sim.words(p));
        }
    }
    /// The first field whose value in the simulation is not the one in `item`.
    pub fn differs(&self, sim: &Sim, item: &[u32]) -> Option<usize> {
        (0..self.ports.len()).find(|&k| sim.words(self.ports[k]) != self.get(item, k))
    }
}

/// A value of at most 64 bits as port words.
pub fn w64(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

/// Random bits on an input port.
pub fn set_junk(sim: &mut Sim, p: PortHandle, rng: &mut Rng) {
    if p.words() <= 2 {
        sim.set(p, rng.next_u64() & mask(p.width()));
    } else {
        let w: Vec<u32> = (0..p.words()).map(|_| rng.next_u64() as u32).collect();
        sim.set_words(p, &w);
    }
}

/// Port words as one hexadecimal number.
pub fn hex(words: &[u32]) -> String {
    let top = words.iter().rposition(|&w| w != 0).unwrap_or(0);
    let mut s = format!("{:#x}", words.get(top).copied().unwrap_or(0));
    for w in words[..top].iter().rev() {
        s += &format!("_{w:08x}");
    }
    s
}

/// The port's name in the design.
pub fn port_name(sim: &Sim, p: PortHandle) -> String {
    sim.compiled().ports()[p.index()].name.clone()
}

/// The valid/ready rule seen from the receiving side: once valid is high,
/// valid and every payload field stay as they are until the transfer.
#[derive(Debug, Default)]
pub struct HoldCheck {
    /// The payload offered and not taken last cycle.
    held: Option<Vec<u32>>,
}

impl HoldCheck {
    /// This cycle's `valid`, and whether the receiver is ready; `what`
    /// names the channel in a message (or is empty).
    pub fn check(&mut self, sim: &Sim, what: &str, valid: bool, ready: bool, fields: &Fields) -> Result<(), String> {
        if let Some(h) = &self.held {
            let what = if what.is_empty() { String::new() } else { format!("{what}: ") };
            if !valid {
                return Err(format!("{what}valid fell before the transfer (an offer was withdrawn)"));
            }
            if let Some(k) = fields.differs(sim, h) {
                let p = fields.port(k);
                return Err(format!(
                    "{what}{} changed from {} to {} while offered and not taken",
                    port_name(sim, p),
                    hex(fields.get(h, k)),
                    hex(sim.words(p))
                ));
            }
        }
        if valid && !ready {
            let mut h = self.held.take().unwrap_or_default();
            fields.read(sim, &mut h);
            self.held = Some(h);
        } else {
            self.held = None;
        }
        Ok(())
    }
}

/// A port that may be absent (optional fields of an interface).
pub(crate) fn optional(sim: &Sim, name: &str) -> Option<PortHandle> {
    sim.port(name).ok()
}
