//! Valid/ready streams: a source that offers items from a queue and a sink
//! that takes them, each with its own pace.

use super::{agent_rng, Agent, Fields, HoldCheck, Pace};
use crate::cosim::{CosimError, PortHandle, Sim};
use crate::rng::Rng;

/// Drives a design's input stream: `valid` and the payload fields from a
/// queue of items. Holds back a new item as its [`Pace`] says; once an item
/// is offered it stays, unchanged, until taken. Records the cycle each item
/// is taken.
pub struct StreamSource {
    name: String,
    valid: PortHandle,
    ready: PortHandle,
    fields: Fields,
    /// (the first cycle it may be offered, the item)
    items: Vec<(u64, Vec<u32>)>,
    next: usize,
    offering: bool,
    pace: Pace,
    rng: Rng,
    junk: bool,
    taken: Vec<u64>,
    progress: u64,
    /// Items from this index on are held back ([`StreamSource::release`]).
    released: usize,
}

impl StreamSource {
    pub fn new(name: &str, valid: PortHandle, ready: PortHandle, fields: Fields) -> StreamSource {
        StreamSource {
            name: name.to_string(),
            valid,
            ready,
            fields,
            items: Vec::new(),
            next: 0,
            offering: false,
            pace: Pace::Steady,
            rng: agent_rng(0, name),
            junk: false,
            taken: Vec::new(),
            progress: 0,
            released: usize::MAX,
        }
    }

    /// The stream `<stream>` of a design that takes it: `<stream>_valid_i`,
    /// `<stream>_ready_o`, and a field `f` on `<stream>_<f>_i` (`""`:
    /// `<stream>_i`, a stream whose payload is one port).
    pub fn find(sim: &Sim, stream: &str, fields: &[&str]) -> Result<StreamSource, CosimError> {
        let (valid, ready, fields) = find(sim, stream, fields, "i", "o")?;
        Ok(StreamSource::new(stream, valid, ready, fields))
    }

    /// Seeds the agent's random stream (with its name).
    pub fn seed(mut self, seed: u64) -> StreamSource {
        self.rng = agent_rng(seed, &self.name);
        self
    }
    pub fn pace(mut self, pace: Pace) -> StreamSource {
        self.pace = pace;
        self
    }
    /// Random values on the fields while nothing is offered.
    pub fn junk_when_idle(mut self) -> StreamSource {
        self.junk = true;
        self
    }

    pub fn fields(&self) -> &Fields {
        &self.fields
    }
    pub fn push(&mut self, item: Vec<u32>) {
        self.push_at(0, item);
    }
    /// An item not offered before cycle `not_before` of the simulation.
    pub fn push_at(&mut self, not_before: u64, item: Vec<u32>) {
        debug_assert_eq!(item.len(), self.fields.words());
        self.items.push((not_before, item));
    }
    /// Holds back every item from index `n` on until [`release`] lets it go:
    /// for a stream whose items depend on what the design answers (their
    /// payload is set with [`set_field`] before they are released).
    ///
    /// [`release`]: StreamSource::release
    /// [`set_field`]: StreamSource::set_field
    pub fn hold_from(mut self, n: usize) -> StreamSource {
        self.released = n;
        self
    }
    /// Items released so far (they may be offered).
    pub fn released(&self) -> usize {
        self.released.min(self.items.len())
    }
    /// Lets the next held item go: it is offered when the stream reaches it
    /// (in this cycle, if it is the next and the drive comes after this).
    pub fn release(&mut self) {
        self.released = self.released.saturating_add(1);
    }
    /// Sets field `k` of item `i`, which must not have been released yet.
    pub fn set_field(&mut self, i: usize, k: usize, value: &[u32]) {
        assert!(i >= self.released, "item {i} of {} is released: its payload is fixed", self.name);
        self.fields.set(&mut self.items[i].1, k, value);
    }
    /// The cycle each item was taken in, in order.
    pub fn taken(&self) -> &[u64] {
        &self.taken
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl Agent for StreamSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        if !self.offering {
            if let Some((at, item)) = self.items.get(self.next).filter(|_| self.next < self.released) {
                if now < *at {
                    // Waiting for an item's time is not a hang.
                    self.progress += 1;
                } else if !self.pace.stall(&mut self.rng, now) {
                    self.offering = true;
                    self.fields.drive(sim, item);
                }
            }
            if !self.offering && self.junk {
                self.fields.junk(sim, &mut self.rng);
            }
        }
        sim.set(self.valid, self.offering as u64);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        if self.offering && sim.get(self.ready) == 1 {
            self.taken.push(sim.cycle());
            self.offering = false;
            self.next += 1;
            self.progress += 1;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.next == self.items.len()
    }

    fn waiting(&self) -> String {
        let state = if self.offering {
            "offered, not taken"
        } else if self.next >= self.released {
            "held back: its payload waits for the design"
        } else {
            "not offered yet"
        };
        format!("item {} of {} to be taken ({state})", self.next, self.items.len())
    }

    fn progress(&self) -> u64 {
        self.progress
    }
}

/// How many items a [`StreamSink`] waits for; past that, one more item is
/// an error and the sink stays ready (so a stray item shows).
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// Any number: the sink is always done.
    Any,
    Items(usize),
    /// Items up to the `count`-th whose field `last_field` is 1.
    Packets { last_field: usize, count: usize },
}

/// Takes a design's output stream: `ready` as its [`Pace`] says; records
/// each item and the cycle it was taken; checks the hold-until-taken rule.
pub struct StreamSink {
    name: String,
    valid: PortHandle,
    ready: PortHandle,
    fields: Fields,
    expect: Expect,
    pace: Pace,
    rng: Rng,
    ready_now: bool,
    hold: HoldCheck,
    items: Vec<Vec<u32>>,
    cycles: Vec<u64>,
    packets: usize,
}

impl StreamSink {
    pub fn new(name: &str, valid: PortHandle, ready: PortHandle, fields: Fields) -> StreamSink {
        StreamSink {
            name: name.to_string(),
            valid,
            ready,
            fields,
            expect: Expect::Any,
            pace: Pace::Steady,
            rng: agent_rng(0, name),
            ready_now: false,
            hold: HoldCheck::default(),
            items: Vec::new(),
            cycles: Vec::new(),
            packets: 0,
        }
    }

    /// The stream `<stream>` of a design that gives it: `<stream>_valid_o`,
    /// `<stream>_ready_i`, and a field `f` on `<stream>_<f>_o` (`""`:
    /// `<stream>_o`).
    pub fn find(sim: &Sim, stream: &str, fields: &[&str]) -> Result<StreamSink, CosimError> {
        let (valid, ready, fields) = find(sim, stream, fields, "o", "i")?;
        Ok(StreamSink::new(stream, valid, ready, fields))
    }

    pub fn seed(mut self, seed: u64) -> StreamSink {
        self.rng = agent_rng(seed, &self.name);
        self
    }
    pub fn pace(mut self, pace: Pace) -> StreamSink {
        self.pace = pace;
        self
    }
    pub fn expect(mut self, expect: Expect) -> StreamSink {
        self.expect = expect;
        self
    }

    pub fn fields(&self) -> &Fields {
        &self.fields
    }
    /// The items taken, in order.
    pub fn items(&self) -> &[Vec<u32>] {
        &self.items
    }
    /// The cycle each item was taken in.
    pub fn cycles(&self) -> &[u64] {
        &self.cycles
    }
    /// Field `k` of item `i`.
    pub fn field(&self, i: usize, k: usize) -> &[u32] {
        self.fields.get(&self.items[i], k)
    }
    pub fn field_u64(&self, i: usize, k: usize) -> u64 {
        self.fields.get_u64(&self.items[i], k)
    }

    fn complete(&self) -> bool {
        match self.expect {
            Expect::Any => false,
            Expect::Items(n) => self.items.len() >= n,
            Expect::Packets { count, .. } => self.packets >= count,
        }
    }
}

impl Agent for StreamSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        self.ready_now = self.complete() || !self.pace.stall(&mut self.rng, sim.cycle());
        sim.set(self.ready, self.ready_now as u64);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let valid = sim.get(self.valid) == 1;
        self.hold.check(sim, "", valid, self.ready_now, &self.fields)?;
        if valid && self.ready_now {
            if self.complete() {
                return Err(format!("an item after the {} expected", self.items.len()));
            }
            let mut item = Vec::with_capacity(self.fields.words());
            self.fields.read(sim, &mut item);
            if let Expect::Packets { last_field, .. } = self.expect {
                self.packets += (self.fields.get_u64(&item, last_field) & 1) as usize;
            }
            self.items.push(item);
            self.cycles.push(sim.cycle());
        }
        Ok(())
    }

    fn done(&self) -> bool {
        matches!(self.expect, Expect::Any) || self.complete()
    }

    fn waiting(&self) -> String {
        match self.expect {
            Expect::Any => "nothing".into(),
            Expect::Items(n) => format!("item {} of {}", self.items.len(), n),
            Expect::Packets { count, .. } => format!("packet {} of {} ({} items so far)", self.packets, count, self.items.len()),
        }
    }

    fn progress(&self) -> u64 {
        self.items.len() as u64
    }
}

/// A stream's valid, ready and fields: `<stream>_valid_<d>`,
/// `<stream>_ready_<r>`, `<stream>_<f>_<d>` (`<stream>_<d>` for `f` = "").
fn find(sim: &Sim, stream: &str, fields: &[&str], d: &str, r: &str) -> Result<(PortHandle, PortHandle, Fields), CosimError> {
    let name = |f: &str| if f.is_empty() { format!("{stream}_{d}") } else { format!("{stream}_{f}_{d}") };
    let ports = fields.iter().map(|f| sim.port(&name(f))).collect::<Result<Vec<_>, _>>()?;
    Ok((sim.port(&format!("{stream}_valid_{d}"))?, sim.port(&format!("{stream}_ready_{r}"))?, Fields::new(ports)))
}
