//! Testbench for the generated compress/expand RTL: drives operations through
//! the Verilator model with valid/ready, optionally with random stalls on both
//! sides, and collects results in the golden model's format.

use crate::cosim::{CosimError, Compiled, PortHandle, Sim};
use crate::models::compress::{Kind, Op, OpResult, Output};
use crate::rng::Rng;
use std::path::Path;

/// Random back-pressure: percent of cycles the source holds back a new
/// operation, and percent of cycles the sink is not ready.
#[derive(Clone, Copy, Debug)]
pub struct Stalls {
    pub seed: u64,
    pub in_pct: u32,
    pub out_pct: u32,
}

/// What a run gives besides the results.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// Clock ticks simulated, reset included.
    pub ticks: u64,
}

struct Ports {
    rst: PortHandle,
    in_valid: PortHandle,
    in_ready: PortHandle,
    op: PortHandle,
    esize: PortHandle,
    mask_gen: PortHandle,
    mask: PortHandle,
    zeroing: PortHandle,
    src: PortHandle,
    old: PortHandle,
    out_valid: PortHandle,
    out_ready: PortHandle,
    dst: PortHandle,
    out_mask: PortHandle,
    count: PortHandle,
}

impl Ports {
    fn find(s: &Sim) -> Result<Ports, CosimError> {
        Ok(Ports {
            rst: s.port("rst_i")?,
            in_valid: s.port("in_valid_i")?,
            in_ready: s.port("in_ready_o")?,
            op: s.port("in_op_i")?,
            esize: s.port("in_esize_i")?,
            mask_gen: s.port("in_mask_gen_i")?,
            mask: s.port("in_mask_i")?,
            zeroing: s.port("in_zeroing_i")?,
            src: s.port("in_src_i")?,
            old: s.port("in_old_i")?,
            out_valid: s.port("out_valid_o")?,
            out_ready: s.port("out_ready_i")?,
            dst: s.port("out_dst_o")?,
            out_mask: s.port("out_mask_o")?,
            count: s.port("out_count_o")?,
        })
    }
}

/// Elements of `bits` each (at most 64), element 0 lowest, into 32-bit words.
fn pack(elems: &[u64], bits: u32, width: u32) -> Vec<u32> {
    let mut w = vec![0u32; width.div_ceil(32) as usize];
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    for (i, &e) in elems.iter().enumerate() {
        let pos = i as u32 * bits;
        let v = ((e & mask) as u128) << (pos % 32);
        for k in 0..3 {
            if let Some(x) = w.get_mut((pos / 32) as usize + k) {
                *x |= (v >> (32 * k)) as u32;
            }
        }
    }
    w
}

fn unpack(words: &[u32], bits: u32, count: usize) -> Vec<u64> {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (0..count)
        .map(|i| {
            let pos = i as u32 * bits;
            let v = (0..3).fold(0u128, |acc, k| {
                acc | (words.get((pos / 32) as usize + k).copied().unwrap_or(0) as u128) << (32 * k)
            });
            (v >> (pos % 32)) as u64 & mask
        })
        .collect()
}

/// Run `ops` through the RTL. `vcd`: write a waveform of the whole run.
pub fn run(
    compiled: &Compiled,
    width: u32,
    ops: &[Op],
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Output, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let p = Ports::find(&sim)?;
    let mut rng = stalls.map(|s| Rng::new(s.seed));
    let lanes = width / 8;

    sim.set(p.in_valid, 0);
    sim.set(p.out_ready, 0);
    sim.reset(p.rst, 2);

    let mut results: Vec<OpResult> = Vec::with_capacity(ops.len());
    let mut next = 0usize; // next op to offer
    let mut offering = false;
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    let mut words = Vec::new();
    // Generous bound: every op can be stalled, but the RTL must not hang.
    let limit = sim.cycle() + 64 + 40 * ops.len() as u64 + 1000;
    while results.len() < ops.len() {
        if sim.cycle() > limit {
            sim.trace_close();
            return Err(CosimError::Io(format!(
                "the RTL stopped making progress: {} of {} results after {} cycles",
                results.len(),
                ops.len(),
                sim.cycle()
            )));
        }
        // A producer holds valid and data until the transfer.
        if !offering && next < ops.len() {
            let hold = match (&mut rng, stalls) {
                (Some(r), Some(s)) => r.chance(s.in_pct),
                _ => false,
            };
            if !hold {
                offering = true;
                let op = &ops[next];
                let eb = op.element_bits;
                sim.set(p.op, (op.op == Kind::Expand) as u64);
                sim.set(p.esize, eb.trailing_zeros() as u64 - 3);
                sim.set(p.zeroing, op.zeroing as u64);
                match &op.mask {
                    Some(m) => {
                        let bits: Vec<u64> = m.iter().map(|&b| b as u64).collect();
                        sim.set_words(p.mask, &pack(&bits, 1, lanes));
                        sim.set(p.mask_gen, 0);
                    }
                    None => {
                        // Junk on the ignored mask input must not matter.
                        let junk = rng.as_mut().map_or(0, |r| r.next_u64());
                        sim.set_words(p.mask, &pack(&[junk], 64.min(lanes), lanes));
                        sim.set(p.mask_gen, 1);
                    }
                }
                sim.set_words(p.src, &pack(&op.src, eb, width));
                let zeros = vec![0; op.src.len()];
                sim.set_words(p.old, &pack(op.old.as_ref().unwrap_or(&zeros), eb, width));
            }
        }
        sim.set(p.in_valid, offering as u64);
        let ready_out = match (&mut rng, stalls) {
            (Some(r), Some(s)) => !r.chance(s.out_pct),
            _ => true,
        };
        sim.set(p.out_ready, ready_out as u64);
        sim.eval();
        let now = sim.cycle();
        if offering && sim.get(p.in_ready) == 1 {
            first_in.get_or_insert(now);
            offering = false;
            next += 1;
        }
        if ready_out && sim.get(p.out_valid) == 1 {
            let op = &ops[results.len()];
            let eb = op.element_bits;
            let n = (width / eb) as usize;
            sim.get_words(p.dst, &mut words);
            let dst = unpack(&words, eb, n);
            sim.get_words(p.out_mask, &mut words);
            let mask_all = unpack(&words, 1, lanes as usize);
            if mask_all[n..].iter().any(|&b| b != 0) {
                sim.trace_close();
                return Err(CosimError::Io(format!(
                    "result {}: out_mask_o has bits set above element {} ({:?})",
                    results.len(),
                    n - 1,
                    mask_all
                )));
            }
            let mask = mask_all[..n].iter().map(|&b| b as u8).collect();
            let count = sim.get(p.count) as u32;
            results.push(OpResult { dst, mask, count });
            last_out = now;
        }
        sim.tick();
    }
    sim.trace_close();
    let cycles = first_in.map_or(0, |f| last_out - f);
    Ok((Output { results, cycles }, RunStats { ticks: sim.cycle() }))
}

/// Random operations for cosimulation and benches: both kinds, all element
/// sizes (or one), given or generated masks, sparsity from none to all-zero,
/// merge and zeroing.
pub fn random_ops(rng: &mut Rng, width: u32, n: usize, element_bits: Option<u32>) -> Vec<Op> {
    (0..n)
        .map(|_| {
            let eb = element_bits.unwrap_or(*rng.pick(&[8, 16, 32, 64]));
            let k = (width / eb) as usize;
            let max = if eb == 64 { u64::MAX } else { (1u64 << eb) - 1 };
            let zero_pct = *rng.pick(&[0, 10, 50, 90, 100]) as u32;
            let value = |rng: &mut Rng| match rng.below(4) {
                0 => max,
                1 => 1 + rng.below(3),
                _ => rng.next_u64() & max,
            };
            let src: Vec<u64> =
                (0..k).map(|_| if rng.chance(zero_pct) { 0 } else { value(rng).max(1) }).collect();
            let mask = if rng.chance(50) {
                let pct = rng.below(101) as u32;
                Some((0..k).map(|_| rng.chance(pct) as u8).collect())
            } else {
                None
            };
            let old = if rng.chance(80) { Some((0..k).map(|_| value(rng)).collect()) } else { None };
            Op {
                op: if rng.chance(50) { Kind::Compress } else { Kind::Expand },
                element_bits: eb,
                src,
                mask,
                old,
                zeroing: rng.chance(50),
            }
        })
        .collect()
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
    }
}
