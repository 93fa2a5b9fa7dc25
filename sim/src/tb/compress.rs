//! Testbench for the generated compress/expand RTL: drives operations through
//! the Verilator model with valid/ready, optionally with random stalls on both
//! sides, and collects results in the golden model's format.

use super::{fail, pack, unpack, LoopTimer, RunStats, Staller, Stalls};
use crate::cosim::{CosimError, Compiled, PortHandle, Sim};
use crate::models::compress::{Kind, Op, OpResult, Output};
use crate::rng::Rng;
use std::path::Path;

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
    /// The unit's ports; `prefix` names its streams in a composed top
    /// (`narrow_` finds `narrow_in_valid_i`).
    fn find(s: &Sim, prefix: &str) -> Result<Ports, CosimError> {
        let port = |name: &str| s.port(&format!("{prefix}{name}"));
        Ok(Ports {
            rst: s.port("rst_i")?,
            in_valid: port("in_valid_i")?,
            in_ready: port("in_ready_o")?,
            op: port("in_op_i")?,
            esize: port("in_esize_i")?,
            mask_gen: port("in_mask_gen_i")?,
            mask: port("in_mask_i")?,
            zeroing: port("in_zeroing_i")?,
            src: port("in_src_i")?,
            old: port("in_old_i")?,
            out_valid: port("out_valid_o")?,
            out_ready: port("out_ready_i")?,
            dst: port("out_dst_o")?,
            out_mask: port("out_mask_o")?,
            count: port("out_count_o")?,
        })
    }
}

/// Run `ops` through the RTL. `vcd`: write a waveform of the whole run.
pub fn run(
    compiled: &Compiled,
    width: u32,
    ops: &[Op],
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Output, RunStats), CosimError> {
    run_at(compiled, "", width, ops, stalls, vcd)
}

/// [`run`] on a compress unit inside a composed top, its streams named
/// `<prefix>in` and `<prefix>out` (the other inputs of the top stay zero).
pub fn run_at(
    compiled: &Compiled,
    prefix: &str,
    width: u32,
    ops: &[Op],
    stalls: Option<Stalls>,
    vcd: Option<&Path>,
) -> Result<(Output, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let p = Ports::find(&sim, prefix)?;
    let mut stall = Staller::new(stalls);
    let lanes = width / 8;
    // Stimulus packed before the run, out of the per-cycle path. An op with
    // a generated mask gets junk on the ignored mask input: it must not matter.
    let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0x6a09_e667_f3bc_c908);
    let packed: Vec<[Vec<u32>; 3]> = ops
        .iter()
        .map(|op| {
            let mask = match &op.mask {
                Some(m) => pack(&m.iter().map(|&b| b as u64).collect::<Vec<_>>(), 1, lanes),
                None => pack(&[junk.next_u64()], 64.min(lanes), lanes),
            };
            let old = op.old.as_ref().map_or_else(|| vec![0; width.div_ceil(32) as usize], |o| pack(o, op.element_bits, width));
            [mask, pack(&op.src, op.element_bits, width), old]
        })
        .collect();

    sim.set(p.in_valid, 0);
    sim.set(p.out_ready, 0);
    sim.reset(p.rst, 2);

    let mut results: Vec<OpResult> = Vec::with_capacity(ops.len());
    let mut next = 0usize; // next op to offer
    let mut offering = false;
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    // Generous bound: every op can be stalled, but the RTL must not hang.
    let limit = sim.cycle() + 64 + 40 * ops.len() as u64 + 1000;
    let timer = LoopTimer::start(&sim);
    while results.len() < ops.len() {
        if sim.cycle() > limit {
            let msg = format!("the RTL stopped making progress: {} of {} results after {} cycles", results.len(), ops.len(), sim.cycle());
            return Err(fail(&mut sim, msg));
        }
        // A producer holds valid and data until the transfer.
        if !offering && next < ops.len() && !stall.hold_input() {
            offering = true;
            let op = &ops[next];
            let [mask, src, old] = &packed[next];
            sim.set(p.op, (op.op == Kind::Expand) as u64);
            sim.set(p.esize, op.element_bits.trailing_zeros() as u64 - 3);
            sim.set(p.zeroing, op.zeroing as u64);
            sim.set(p.mask_gen, op.mask.is_none() as u64);
            sim.set_words(p.mask, mask);
            sim.set_words(p.src, src);
            sim.set_words(p.old, old);
        }
        sim.set(p.in_valid, offering as u64);
        let ready_out = !stall.hold_output();
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
            let dst = unpack(sim.words(p.dst), eb, n);
            let mask_all = unpack(sim.words(p.out_mask), 1, lanes as usize);
            if mask_all[n..].iter().any(|&b| b != 0) {
                let msg =
                    format!("result {}: out_mask_o has bits set above element {} ({:?})", results.len(), n - 1, mask_all);
                return Err(fail(&mut sim, msg));
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
    Ok((Output { results, cycles }, timer.stats(&sim)))
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
