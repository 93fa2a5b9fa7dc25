//! The compute unit on the command line: run (a kernel, its memory and its
//! blocks), `asm`/`disasm --isa cu` of kernels, and a bench of issue and DMA
//! rates.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::cu::build;
use gpurtl_params::cu::CuParams;
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::cu::{self as model, io, isa, Outcome, Run};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cu as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct Cu;
pub const BLOCK: Cu = Cu;

/// A run and what it gave (the output file reports the run's `dump` regions).
pub struct Done {
    run: Run,
    outcome: Outcome,
}

impl BlockDef for Cu {
    type Params = CuParams;
    type Input = Run;
    type Output = Done;
    const SUMMARY: &'static str =
        "compute unit: resident thread blocks run a kernel (scalar ISA, cdl on the cbload, 2-D DMA over the scratchpad)";

    fn build(p: &CuParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &CuParams, input: &Value) -> Result<Run, InputErrors> {
        io::parse_input(input, Path::new(""), p)
    }
    fn parse_input_in(p: &CuParams, input: &Value, base: &Path) -> Result<Run, InputErrors> {
        io::parse_input(input, base, p)
    }
    fn model(p: &CuParams, r: &Run) -> Result<Done> {
        let outcome = model::run(p, r).map_err(|e| Error::Bad(format!("run cu: {e}")))?;
        Ok(Done { run: r.clone(), outcome })
    }
    fn rtl(p: &CuParams, compiled: &Compiled, r: &Run, vcd: Option<&Path>) -> Result<Done, CosimError> {
        let (outcome, _) = tb::run(compiled, p, r, None, tb::budget(p, r), vcd)?;
        Ok(Done { run: r.clone(), outcome })
    }
    fn output_json(p: &CuParams, d: &Done) -> Value {
        io::output_json(p, &d.run, &d.outcome)
    }
    fn random_input(p: &CuParams, rng: &mut Rng) -> Run {
        let plant = tb::Planted::ALL[rng.below(tb::Planted::ALL.len() as u64) as usize];
        let blocks = 1 + rng.below(2 * p.slots as u64 + 1) as usize;
        tb::random_run(rng, p, blocks, plant)
    }

    const COMMANDS: &'static [&'static str] = &["asm", "disasm"];
    /// Kernel lines (docs/cu.md, "Assembler and disassembler"): two dwords an
    /// instruction, the low one first.
    fn assemble(text: &str) -> Result<Vec<u32>> {
        let words = isa::assemble(text).map_err(|e| Error::Bad(isa::errors_text(&e)))?;
        Ok(words.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]).collect())
    }
    fn disassemble(dwords: &[u32]) -> Result<String> {
        if dwords.len() % 2 == 1 {
            return Err(Error::Bad(format!(
                "{} dwords: kernel instructions are 64 bits, two dwords each; must be an even number",
                dwords.len()
            )));
        }
        let words: Vec<u64> = dwords.chunks(2).map(|c| c[0] as u64 | (c[1] as u64) << 32).collect();
        Ok(isa::disassemble(&words))
    }

    /// Issue rate (instructions a cycle) of an arithmetic loop with one block
    /// and with `slots` blocks, DMA bytes a cycle of `ld` and `st` of 4 KiB,
    /// aligned and with both ends misaligned, at memory latency 1 and 20; and
    /// the overlap of one block's DMA with another's compute (two blocks
    /// resident together against one after the other).
    fn bench(p: &CuParams, _: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let design = build(p)?;
        let compiled = compile_design(&design)?;
        let _ = writeln!(
            out,
            "cu bench: {} slot(s), {} registers, {} instructions a slot, scratchpad {} x {} words, {} in flight",
            p.slots, p.regs, p.imem_depth, p.banks, p.words, p.max_outstanding
        );
        let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9} {:>9}", "workload", "latency", "cycles", "rate", "bound");
        let mut rows = Vec::new();
        for latency in [1u32, 20] {
            for (name, blocks) in [("arithmetic loop, 1 block", 1usize), ("arithmetic loop, all slots busy", p.slots as usize)] {
                let r = bench_loop(p, blocks, latency)?;
                let o = model_or_rtl(&compiled, p, &r)?;
                // Cycles of the loop alone: first to last instruction.
                let first = o.trace.first().map_or(0, |t| t.cycle);
                let last = o.trace.last().map_or(0, |t| t.cycle);
                let rate = o.trace.len() as f64 / (last - first + 1) as f64;
                let bound = (blocks as f64 / 2.0).min(1.0);
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9.3}", name, latency, last - first + 1, rate, bound);
                rows.push(json!({"workload": name, "mem_latency": latency, "cycles": last - first + 1, "instructions": o.trace.len(),
                                 "instructions_per_cycle": rate, "bound": bound}));
            }
            for (name, st, skew) in [("ld 4 KiB, aligned", false, 0u32), ("ld 4 KiB, misaligned", false, 1), ("st 4 KiB, aligned", true, 0), ("st 4 KiB, misaligned", true, 3)] {
                let bytes = 4096.min(p.smem_bytes() as u32 - 4);
                let ops = 1 + st as u32;
                // The operation's cycles: the block's, less the same block
                // without the operation.
                let o = model_or_rtl(&compiled, p, &bench_dma(p, skew, bytes, ops, latency)?)?;
                let base = model_or_rtl(&compiled, p, &bench_dma(p, skew, bytes, ops - 1, latency)?)?;
                let c = o.cycles - base.cycles;
                let rate = bytes as f64 / c as f64;
                let bound = 4.0 * (p.max_outstanding as f64 / latency as f64).min(1.0);
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9.3}", name, latency, c, rate, bound);
                rows.push(json!({"workload": name, "mem_latency": latency, "cycles": c, "bytes": bytes, "bytes_per_cycle": rate, "bound": bound}));
            }
        }
        // Overlap: two blocks that each load 2 KiB and then compute about as
        // long (a scalar loop), resident together (two shares) against one
        // after the other (one share).
        if p.slots >= 2 {
            for latency in [1u32, 20] {
                let together = model_or_rtl(&compiled, p, &bench_overlap(p, 2, latency)?)?;
                let alone = model_or_rtl(&compiled, p, &bench_overlap(p, 1, latency)?)?;
                let ratio = together.cycles as f64 / alone.cycles as f64;
                let name = "2 blocks (4 x (ld 1 KiB, loop)), together/apart";
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9}", name, latency, together.cycles, ratio, "0.5");
                rows.push(json!({"workload": name, "mem_latency": latency, "cycles_together": together.cycles, "cycles_apart": alone.cycles,
                                 "ratio": ratio, "bound": 0.5}));
            }
        }
        // mma: a GEMM tile whose A and B are in the scratchpad; its cycles
        // are the block's less the same block without the mma. Row pads of
        // 3 words spread the A and B reads over the banks.
        let (tm, tn, k) = mma_shape(p);
        let macs = (tm * tn * k) as f64;
        let grid = (p.grid_rows * p.grid_cols) as f64;
        let mut dense_cycles = 0u64;
        for (name, zero_pct, pad) in [("mma, dense, no pads", 0u32, 0u32), ("mma, dense", 0, 3), ("mma, 50% zero k-slices", 50, 3), ("mma, 75% zero k-slices", 75, 3)] {
            let with = model_or_rtl(&compiled, p, &bench_mma(p, zero_pct, pad, true)?)?;
            let without = model_or_rtl(&compiled, p, &bench_mma(p, zero_pct, pad, false)?)?;
            let c = with.cycles - without.cycles;
            let rate = macs / c as f64;
            if zero_pct == 0 {
                dense_cycles = c;
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9.3}", format!("{name} {tm}x{tn}x{k} (MACs/cycle)"), 1, c, rate, grid);
                rows.push(json!({"workload": name, "tm": tm, "tn": tn, "k": k, "pad": pad, "cycles": c, "macs": macs, "macs_per_cycle": rate,
                                 "bound": grid, "of_bound": rate / grid}));
            } else {
                let speedup = dense_cycles as f64 / c as f64;
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9}", format!("{name} (speedup)"), 1, c, speedup, "");
                rows.push(json!({"workload": name, "tm": tm, "tn": tn, "k": k, "pad": pad, "cycles": c, "speedup": speedup}));
            }
        }
        // The gemm example kernel end to end: 32 x 256 x 32 (four blocks),
        // loads, mma and stores on the one DMA queue.
        if p.smem_bytes() >= 5184 && p.imem_depth >= 64 && p.regs >= 32 {
            for latency in [1u32, 20] {
                let o = model_or_rtl(&compiled, p, &bench_gemm(p, latency)?)?;
                let (m, n, k) = (32u64, 32u64, 256u64);
                let rate = (m * n * k) as f64 / o.cycles as f64;
                // Bytes each block moves: its A rows, B columns, C tile.
                let bytes = (m.div_ceil(16) * n.div_ceil(16) * (16 * k + 16 * k + 4 * 256)) as f64;
                let mem_bound = 4.0 * (p.max_outstanding as f64 / latency as f64).min(1.0) * (m * n * k) as f64 / bytes;
                let bound = grid.min(mem_bound);
                let name = "gemm.s 32x256x32 (MACs/cycle)";
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9.3}", name, latency, o.cycles, rate, bound);
                rows.push(json!({"workload": name, "mem_latency": latency, "cycles": o.cycles, "macs_per_cycle": rate, "bound": bound,
                                 "memory_bound": mem_bound}));
            }
        }
        // The conv example: a 3x3 convolution of a 64 x 32 image (16 blocks
        // of 16 x 8 pixels, 8 x 4 quads each) through tex: texel fetches a
        // quad against the floor (each patch texel once: 16; 36 naive) and
        // cycles a quad (the whole run: each block loads the image, then one
        // tex, then stores its tile).
        if p.smem_bytes() >= 8192 && p.imem_depth >= 64 && p.regs >= 32 {
            for latency in [1u32, 20] {
                let (w, h) = (64u32, 32u32);
                let o = model_or_rtl(&compiled, p, &bench_conv(p, w, h, latency)?)?;
                let quads = (w / 2 * (h / 2)) as u64;
                let per_quad = o.counters.texel_fetches as f64 / quads as f64;
                let cyc = o.cycles as f64 / quads as f64;
                let name = "conv.s 3x3, 64x32: fetches/quad, cycles/quad";
                let _ = writeln!(out, "{:<40} {:>8} {:>9} {:>9.3} {:>9}", name, latency, o.cycles, per_quad, "16");
                rows.push(json!({"workload": "conv.s 3x3 64x32", "mem_latency": latency, "cycles": o.cycles, "quads": quads,
                                 "texel_fetches": o.counters.texel_fetches, "fetches_per_quad": per_quad, "floor": 16, "naive": 36,
                                 "cycles_per_quad": cyc}));
            }
        }
        let s = yosys_area(&design)?;
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops (memories as memory cells)", s.cells, s.flip_flops);
        Ok(json!({"block": "cu", "generator": generator(), "params": p, "rows": rows, "yosys_cells": s.cells, "yosys_flip_flops": s.flip_flops}))
    }
}

/// The RTL's outcome, checked against the golden model's (a bench measures
/// the hardware; a mismatch is an error, not a figure).
fn model_or_rtl(compiled: &Compiled, p: &CuParams, r: &Run) -> Result<Outcome> {
    let want = model::run(p, r).map_err(|e| Error::Bad(format!("bench cu: {e}")))?;
    let (got, _) = tb::run(compiled, p, r, None, tb::budget(p, r), None)?;
    if io::output_json(p, r, &want) != io::output_json(p, r, &got) {
        return Err(Error::Bad("bench cu: the RTL and the golden model disagree on a bench run".into()));
    }
    Ok(got)
}

fn assembled(p: &CuParams, text: &str, blocks: usize, smem: u32, latency: u32) -> Result<Run> {
    let words = isa::assemble(text).map_err(|e| Error::Bad(isa::errors_text(&e)))?;
    let mut memory = gpurtl_sim::mem::Memory::new();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    memory.write(0x1000, &bytes);
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    memory.write(0x10000, &data);
    let blocks = (0..blocks).map(|b| model::Block { id: [b as u16, 0, 0], user_data: [0; 16] }).collect();
    let regs = (p.regs / p.slots).min(16);
    Ok(Run { program: 0x1000, memory, blocks, smem_bytes: smem, regs, mem_latency: latency, dump: vec![] })
}

/// Two blocks, each loading four tiles of 1 KiB into its share and
/// computing on each (a scalar loop of about the load's cycles) before it
/// loads the next: balanced DMA and compute. `shares` of them resident at
/// once.
fn bench_overlap(p: &CuParams, shares: u32, latency: u32) -> Result<Run> {
    let bytes = 1024.min(p.smem_bytes() as u32 / 2) & !3;
    // A load's cycles: a beat a cycle, or O beats a round trip.
    let per_beat = ((latency as f64 + 1.0) / p.max_outstanding as f64).max(1.0);
    let iters = ((bytes / 4) as f64 * per_beat / 4.0).round() as u32;
    let text = format!(
        "li r3, 0\nli r4, 65536\nli r5, {}\nli r8, 4\ntile: ld r3, r4, r5, r5\nli r6, {iters}\ntop: addi r7, r7, 1\nloop r6, top\naddi r4, r4, {bytes}\nloop r8, tile\nend\n",
        1 << 16 | bytes
    );
    let mut r = assembled(p, &text, 2, bytes, latency)?;
    r.smem_bytes = (p.smem_bytes() as u32 / shares) & !3;
    Ok(r)
}

fn bench_loop(p: &CuParams, blocks: usize, latency: u32) -> Result<Run> {
    let text = "li r3, 200\ntop: addi r4, r4, 3\nxor r5, r5, r4\nloop r3, top\nend\n";
    assembled(p, text, blocks, 0, latency)
}

/// A block that loads `bytes` into its share (scratchpad offset `skew`,
/// memory `0x10000 + 2*skew`), then with `st` stores them back to
/// `0x20000 + 3*skew`; `ops` = 0 leaves out both, 1 the store.
fn bench_dma(p: &CuParams, skew: u32, bytes: u32, ops: u32, latency: u32) -> Result<Run> {
    let shape = 1 << 16 | bytes;
    let mut text = format!("li r3, {skew}\nli r4, {}\nli r5, {bytes}\nli r6, {shape}\nli r7, {}\n", 0x10000 + 2 * skew, 0x20000 + 3 * skew);
    if ops >= 1 {
        text += "ld r3, r4, r5, r6\n";
    }
    if ops >= 2 {
        text += "st r3, r7, r5, r6\n";
    }
    text += "end\n";
    assembled(p, &text, 1, (p.smem_bytes() as u32).min(8192), latency)
}

/// The bench's mma tile: 16 x 16 x min(256, kmax), smaller where the
/// scratchpad is.
fn mma_shape(p: &CuParams) -> (u32, u32, u32) {
    let k = p.kmax.min(256);
    for t in [16u32, 8, 4, 2, 1] {
        let (pa, pb) = (4 * k.div_ceil(4), 8 * t.div_ceil(8));
        if t * pa + k * pb + 4 * t * t <= p.smem_bytes() as u32 {
            return (t, t, k);
        }
    }
    (1, 1, 1)
}

/// One block: `ld` A and B (exactly `zero_pct` per cent of B's k-slices
/// zero, a fixed pattern; rows padded by `pad` words), then `mma` if
/// `with_mma`.
fn bench_mma(p: &CuParams, zero_pct: u32, pad: u32, with_mma: bool) -> Result<Run> {
    let (tm, tn, k) = mma_shape(p);
    let (pa, pb) = (4 * k.div_ceil(4) + 4 * pad, 8 * tn.div_ceil(8) + 4 * pad);
    // With zero k-slices B is loaded with its zero map (`ld ..., zmap`, the
    // map's words just before B) and the mma skips them (`, skip`).
    let skip = zero_pct > 0;
    let map = if skip { 4 * k.div_ceil(32) } else { 0 };
    let (pa, pb, pad) = if tm * pa + map + k * pb + 4 * tm * tn <= p.smem_bytes() as u32 { (pa, pb, pad) } else { (pa - 4 * pad, pb - 4 * pad, 0) };
    let (ao, bo) = (0, tm * pa + map);
    let co = bo + k * pb;
    let (zmap, skip) = if skip { (", zmap", ", skip") } else { ("", "") };
    let mut text = format!(
        "li r3, {}\nli r4, {k}\nli r5, {ao}\nli r6, {}\nld r5, r3, r4, r6, {pa}\nli r3, {}\nli r4, {tn}\nli r5, {bo}\nli r6, {}\nld r5, r3, r4, r6, {pb}{zmap}\n",
        0x10000,
        tm << 16 | k,
        0x20000,
        k << 16 | tn
    );
    if with_mma {
        text += &format!("li r5, {co}\nli r7, {ao}\nli r8, {bo}\nli r6, {}\nmma r5, r7, r8, r6, pad {pad}, {pad}{skip}\n", tm | tn << 8 | k << 16);
    }
    text += "end\n";
    let mut r = assembled(p, &text, 1, p.smem_bytes() as u32, 1)?;
    let mut rng = Rng::new(7);
    let a: Vec<u8> = (0..tm * k).map(|_| 1 + rng.below(255) as u8).collect();
    // Exactly zero_pct per cent of the k-slices zero, at places drawn at
    // random (a shuffle), as the grid's own bench has them.
    let mut order: Vec<u32> = (0..k).collect();
    rng.shuffle(&mut order);
    let zeros: std::collections::HashSet<u32> = order[..(k * zero_pct / 100) as usize].iter().copied().collect();
    let b: Vec<u8> = (0..k)
        .flat_map(|kk| {
            let zero = zeros.contains(&kk);
            (0..tn).map(|_| if zero { 0 } else { 1 + rng.below(255) as u8 }).collect::<Vec<_>>()
        })
        .collect();
    r.memory.write(0x10000, &a);
    r.memory.write(0x20000, &b);
    Ok(r)
}

/// `examples/cu/gemm.s` on a 32 x 256 x 32 GEMM with a bias: four blocks.
/// `examples/cu/conv.s` on a `w x h` R8 image with a 3x3 kernel, clamped.
fn bench_conv(p: &CuParams, w: u32, h: u32, latency: u32) -> Result<Run> {
    let text = include_str!("../../../examples/cu/conv.s");
    let mut r = assembled(p, text, 0, 8192, latency)?;
    let mut rng = Rng::new(13);
    let (im, om, wm) = (0x10_0000u32, 0x40_0000u32, 0x60_0000u32);
    r.memory.write(im as u64, &(0..w * h).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
    r.memory.write(wm as u64, &[1, 2, 1, 2, 4, 2, 1, 2, 1]);
    let mut user = [0u32; 16];
    user[..8].copy_from_slice(&[im, om, w, h, wm, 3, 3, 0]);
    r.blocks = (0..h.div_ceil(8)).flat_map(|y| (0..w.div_ceil(16)).map(move |x| model::Block { id: [x as u16, y as u16, 0], user_data: user })).collect();
    r.regs = 32;
    Ok(r)
}

fn bench_gemm(p: &CuParams, latency: u32) -> Result<Run> {
    let text = include_str!("../../../examples/cu/gemm.s");
    let (m, n, k) = (32u32, 32u32, 256u32);
    let mut r = assembled(p, text, 0, 5184, latency)?;
    let mut rng = Rng::new(11);
    let (am, bm, cm, bim) = (0x10_0000u32, 0x20_0000u32, 0x40_0000u32, 0x60_0000u32);
    r.memory.write(am as u64, &(0..m * k).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
    r.memory.write(bm as u64, &(0..k * n).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
    r.memory.write(bim as u64, &(0..4 * n).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
    let mut user = [0u32; 16];
    user[..8].copy_from_slice(&[am, bm, cm, bim, m, n, k, 0]);
    r.blocks = (0..m.div_ceil(16)).flat_map(|y| (0..n.div_ceil(16)).map(move |x| model::Block { id: [x as u16, y as u16, 0], user_data: user })).collect();
    r.regs = 32;
    Ok(r)
}
