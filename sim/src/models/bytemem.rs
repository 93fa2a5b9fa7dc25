//! The golden models' byte memory: sparse, byte-addressed, zero where never
//! written. A stand-in, private to the models, for the shared `Memory` of
//! `sim/src/mem.rs`: every model that needs a byte memory (`arbiter`,
//! `scratchpad`'s reference) goes through this one type, so switching to the
//! shared type is an edit here.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteMem {
    bytes: BTreeMap<u64, u8>,
}

impl ByteMem {
    pub(crate) fn new() -> ByteMem {
        ByteMem::default()
    }

    /// The `n` bytes at `addr ..` (zero where never written). The caller
    /// keeps `addr + n <= 2^64`.
    pub(crate) fn read(&self, addr: u64, n: usize) -> Vec<u8> {
        (0..n as u64).map(|i| self.bytes.get(&(addr + i)).copied().unwrap_or(0)).collect()
    }

    /// Byte `i` of `data` to `addr + i` where `strobes[i]` is set.
    pub(crate) fn write(&mut self, addr: u64, data: &[u8], strobes: &[bool]) {
        assert_eq!(data.len(), strobes.len(), "one strobe a byte");
        for (i, (&b, &s)) in data.iter().zip(strobes).enumerate() {
            if s {
                self.bytes.insert(addr + i as u64, b);
            }
        }
    }

    /// Every byte of `data` to `addr ..`.
    pub(crate) fn load(&mut self, addr: u64, data: &[u8]) {
        self.write(addr, data, &vec![true; data.len()]);
    }
}
