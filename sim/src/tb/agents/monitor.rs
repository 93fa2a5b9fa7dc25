//! A passive agent that watches ports every cycle (after the settle) and
//! counts or checks what it sees: handshakes on a channel no other agent
//! owns, conditions a figure needs (a port waiting on a bank conflict).

use super::Agent;
use crate::cosim::Sim;

/// What a monitor does in each cycle's sample; an error is a mismatch.
type Watch = Box<dyn FnMut(&Sim) -> Result<(), String>>;

/// Calls `watch` in every cycle's sample; never drives, always done.
pub struct Monitor {
    name: String,
    watch: Watch,
}

impl Monitor {
    pub fn new(name: &str, watch: impl FnMut(&Sim) -> Result<(), String> + 'static) -> Monitor {
        Monitor { name: name.to_string(), watch: Box::new(watch) }
    }
}

impl Agent for Monitor {
    fn name(&self) -> &str {
        &self.name
    }
    fn drive(&mut self, _sim: &mut Sim) {}
    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        (self.watch)(sim)
    }
    fn done(&self) -> bool {
        true
    }
    fn waiting(&self) -> String {
        "nothing".into()
    }
}
