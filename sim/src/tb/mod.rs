//! One testbench per block: drives the generated RTL through the harness,
//! with random back-pressure, and returns results in the model's format.
//! Every testbench is built from the protocol agents of [`agents`]: a
//! block driver (with a port prefix) plus stream and memory agents on one
//! [`agents::Bench`]. What they share is here: stall settings, run
//! statistics, the AXI path's latency, packing values into port words, and
//! giving up with the waveform closed.

use crate::cosim::{CosimError, Sim};

macro_rules! block_modules {
    ($($block:ident),* $(,)?) => { $(pub mod $block;)* };
}
gpurtl_params::for_each_block!(block_modules);

pub mod agents;

/// Random back-pressure on a block with one input and one output stream:
/// the percent of cycles the source holds back a new item, and the percent
/// of cycles the sink is not ready. `seed` seeds the stall sequence.
#[derive(Clone, Copy, Debug)]
pub struct Stalls {
    pub seed: u64,
    pub in_pct: u32,
    pub out_pct: u32,
}

/// What a run gives besides the results.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    /// Clock ticks simulated, reset included.
    pub ticks: u64,
    /// Ticks and wall-clock seconds of the cycle loop alone: from after the
    /// stimulus is prepared (sequenced, packed into port words) to the end.
    pub loop_ticks: u64,
    pub loop_seconds: f64,
}

impl RunStats {
    /// Simulated cycles per second of the cycle loop.
    pub fn rate(&self) -> f64 {
        self.loop_ticks as f64 / self.loop_seconds.max(1e-9)
    }
}

/// Times a testbench's cycle loop; start it once the stimulus is prepared.
pub struct LoopTimer {
    start: std::time::Instant,
    first_tick: u64,
}

impl LoopTimer {
    pub fn start(sim: &Sim) -> LoopTimer {
        LoopTimer { start: std::time::Instant::now(), first_tick: sim.cycle() }
    }
    pub fn stats(&self, sim: &Sim) -> RunStats {
        RunStats {
            ticks: sim.cycle(),
            loop_ticks: sim.cycle() - self.first_tick,
            loop_seconds: self.start.elapsed().as_secs_f64(),
        }
    }
}

/// The RTL gave something wrong (a result, or a broken protocol rule):
/// close the waveform so it is complete, and say why.
pub fn fail(sim: &mut Sim, msg: String) -> CosimError {
    sim.trace_close();
    CosimError::Mismatch(msg)
}

/// The RTL stopped making progress within the testbench's budget: close the
/// waveform so it is complete, and say what was still outstanding.
pub fn hang(sim: &mut Sim, msg: String) -> CosimError {
    sim.trace_close();
    CosimError::Hang(msg)
}

/// Cycles the arbiter and the AXI4 bridge of `mem_if = axi4` add to a read
/// (docs/arbiter.md: a request taken at `c` reaches AR at `c+2`; a beat
/// taken from R at `d` reaches the block at `d+1`).
pub const AXI_PATH_CYCLES: u32 = 3;

/// The deterministic AXI memory's latency for a run whose native memory
/// latency is `native`: `native - 3` (at least 1), so that a block with one
/// read port sees the latency its native runs see, and its cycles equal
/// the model's (from 4 on; below that the arbiter and bridge alone take
/// longer). Blocks whose ports share the AXI read channel (texture's banks,
/// the command processor's two fetchers) see the same latency per beat but
/// one beat a cycle between them.
pub fn axi_latency(native: u32) -> u32 {
    native.saturating_sub(AXI_PATH_CYCLES).max(1)
}

/// All ones in the low `bits` bits (`bits` <= 64).
pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Bits `lo..lo+width` of `words` ORed with the low `width` bits of `v`
/// (`width` <= 64; the bits must be clear).
pub fn put(words: &mut [u32], lo: u32, width: u32, v: u64) {
    let v = (v & mask(width)) as u128;
    let shifted = v << (lo % 32);
    for k in 0..3 {
        let word = (lo / 32) as usize + k;
        let part = (shifted >> (32 * k)) as u32;
        if part != 0 {
            words[word] |= part;
        }
    }
}

/// Bits `lo..lo+width` of `words` (`width` <= 64).
pub fn take(words: &[u32], lo: u32, width: u32) -> u64 {
    let v = (0..3).fold(0u128, |acc, k| acc | (words.get((lo / 32) as usize + k).copied().unwrap_or(0) as u128) << (32 * k));
    (v >> (lo % 32)) as u64 & mask(width)
}

/// Elements of `bits` each (at most 64), element 0 lowest, into the words
/// of a `width`-bit port.
pub fn pack(elems: &[u64], bits: u32, width: u32) -> Vec<u32> {
    let mut w = vec![0u32; width.div_ceil(32) as usize];
    for (i, &e) in elems.iter().enumerate() {
        put(&mut w, i as u32 * bits, bits, e);
    }
    w
}

/// `count` elements of `bits` each out of port words, element 0 lowest.
pub fn unpack(words: &[u32], bits: u32, count: usize) -> Vec<u64> {
    (0..count).map(|i| take(words, i as u32 * bits, bits)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trip() {
        let e = vec![0xab, 0xcd, 0xef, 0x01];
        let w = pack(&e, 16, 64);
        assert_eq!(w, vec![0x00cd_00ab, 0x0001_00ef]);
        assert_eq!(unpack(&w, 16, 4), e);
        let bits = vec![1, 0, 1, 1, 0, 0, 0, 1, 1];
        assert_eq!(pack(&bits, 1, 64), vec![0x18d, 0]);
        assert_eq!(unpack(&pack(&bits, 1, 64), 1, 9), bits);
        let bytes: Vec<u64> = (0..16).map(|i| i * 17).collect();
        assert_eq!(unpack(&pack(&bytes, 8, 128), 8, 16), bytes);
        let big = vec![u64::MAX, 1];
        assert_eq!(unpack(&pack(&big, 64, 128), 64, 2), big);
        // A field across a word boundary, and one that is not 32-aligned and 64 wide.
        let mut w = vec![0u32; 4];
        put(&mut w, 28, 8, 0xa5);
        put(&mut w, 40, 64, 0x0123_4567_89ab_cdef);
        assert_eq!(take(&w, 28, 8), 0xa5);
        assert_eq!(take(&w, 40, 64), 0x0123_4567_89ab_cdef);
        assert_eq!(w[0] >> 28, 0x5);
    }
}
