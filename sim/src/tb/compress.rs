//! Testbench for the generated compress/expand RTL: drives operations through
//! the Verilator model with valid/ready, optionally with random stalls on both
//! sides, and collects results in the golden model's format.

use super::{fail, pack, put, unpack, LoopTimer, RunStats, Staller, Stalls};
use crate::cosim::{CosimError, Compiled, PortHandle, Sim};
use crate::models::compress::{Beat, Kind, Op, OpResult, Output, Stream, StreamKind, StreamOutput, StreamResult, StreamVector};
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
    // Stimulus packed before the run, out of the per-cycle path. Ignored
    // mask bits (all of a generated mask's, those above the element count of
    // a given one) get junk: they must not matter.
    let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0x6a09_e667_f3bc_c908);
    let packed: Vec<PackedOp> = ops.iter().map(|op| PackedOp::vector(op, &mut junk, width)).collect();

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
            packed[next].drive(&mut sim, &p);
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
            match read_result(&sim, &p, width, ops[results.len()].element_bits, results.len()) {
                Ok(r) => results.push(r),
                Err(msg) => return Err(fail(&mut sim, msg)),
            }
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

/// An operation's `in` fields, packed into port words before the run.
struct PackedOp {
    op: u64,
    esize: u64,
    mask_gen: u64,
    zeroing: u64,
    mask: Vec<u32>,
    src: Vec<u32>,
    old: Vec<u32>,
}

impl PackedOp {
    /// A vector operation (ignored mask bits get junk).
    fn vector(o: &Op, junk: &mut Rng, width: u32) -> PackedOp {
        let eb = o.element_bits;
        PackedOp {
            op: (o.op == Kind::Expand) as u64,
            esize: esize_code(eb),
            mask_gen: o.mask.is_none() as u64,
            zeroing: o.zeroing as u64,
            mask: mask_words(junk, o.mask.as_ref(), width / 8),
            src: pack(&o.src, eb, width),
            old: old_words(o.old.as_ref(), eb, width),
        }
    }

    /// Put it on the `in` fields (valid is the caller's).
    fn drive(&self, sim: &mut Sim, p: &Ports) {
        sim.set(p.op, self.op);
        sim.set(p.esize, self.esize);
        sim.set(p.zeroing, self.zeroing);
        sim.set(p.mask_gen, self.mask_gen);
        sim.set_words(p.mask, &self.mask);
        sim.set_words(p.src, &self.src);
        sim.set_words(p.old, &self.old);
    }
}

/// `in_esize_i` for an element size in bits.
fn esize_code(element_bits: u32) -> u64 {
    element_bits.trailing_zeros() as u64 - 3
}

/// `in_old_i`: the given elements, or zeros.
fn old_words(old: Option<&Vec<u64>>, element_bits: u32, width: u32) -> Vec<u32> {
    old.map_or_else(|| vec![0; width.div_ceil(32) as usize], |o| pack(o, element_bits, width))
}

/// The result on `out` (result number `index`, of `element_bits`
/// elements); an error message if `out_mask_o` has bits above the elements.
fn read_result(sim: &Sim, p: &Ports, width: u32, element_bits: u32, index: usize) -> Result<OpResult, String> {
    let n = (width / element_bits) as usize;
    let dst = unpack(sim.words(p.dst), element_bits, n);
    let mask_all = unpack(sim.words(p.out_mask), 1, (width / 8) as usize);
    if mask_all[n..].iter().any(|&b| b != 0) {
        return Err(format!("result {index}: out_mask_o has bits set above element {} ({:?})", n - 1, mask_all));
    }
    let mask = mask_all[..n].iter().map(|&b| b as u8).collect();
    Ok(OpResult { dst, mask, count: sim.get(p.count) as u32 })
}

/// The `in_mask_i` words: a given mask with junk at and above its `n`
/// elements (bits the unit must ignore), or all junk for a generated mask.
fn mask_words(junk: &mut Rng, mask: Option<&Vec<u8>>, lanes: u32) -> Vec<u32> {
    let mut w = vec![0u32; lanes.div_ceil(32) as usize];
    let given = mask.map_or(0, |m| m.len());
    for e in 0..lanes as usize {
        let bit = if e < given { mask.expect("given")[e] as u64 } else { junk.next_u64() };
        put(&mut w, e as u32, 1, bit);
    }
    w
}

/// The stream unit's ports beyond the vector unit's.
struct StreamPorts {
    stream: PortHandle,
    last: PortHandle,
    din_valid: PortHandle,
    din_ready: PortHandle,
    din_data: PortHandle,
    dout_valid: PortHandle,
    dout_ready: PortHandle,
    dout_data: PortHandle,
    dout_count: PortHandle,
    dout_esize: PortHandle,
    dout_last: PortHandle,
}

/// A stream unit's operation: the `in` fields, `in_stream_i` and `in_last_i`.
struct StreamOp {
    fields: PackedOp,
    stream: u64,
    last: u64,
}

/// What [`run_streams`] sends.
#[derive(Clone, Copy)]
pub struct StreamRun<'a> {
    pub streams: &'a [Stream],
    /// Vector operations (`in_stream_i` = 0): after the streams, or mixed
    /// in with `mix`.
    pub vector_ops: &'a [Op],
    pub stalls: Option<Stalls>,
    /// Instead of stream after stream, the compress streams' operations, the
    /// expand streams' operations and the vector operations go in a random
    /// merge (each in file order; they are independent), so the results are
    /// the same but the cycle count is not the documented one.
    pub mix: Option<u64>,
}

impl<'a> StreamRun<'a> {
    /// The streams back-to-back, as `gpurtl run` sends them.
    pub fn plain(streams: &'a [Stream]) -> StreamRun<'a> {
        StreamRun { streams, vector_ops: &[], stalls: None, mix: None }
    }
}

/// Run streams (and vector operations) through the stream unit (`stream` =
/// true): the operations back-to-back on `in`, the dense beats of all
/// expand streams back-to-back on `dense_in`, random stalls on all four
/// streams with `stalls`. Inputs that must not matter get junk: `in_src_i`
/// and `in_mask_gen_i` of expand streams, the mask of generated masks, mask
/// bits at and above the element count, `in_last_i` of vector operations,
/// the padding of a stream's last dense beat. Every dense beat offered must
/// be taken, and after the last result the unit must stay quiet for a
/// while. Returns the streams' output and the vector operations' results.
pub fn run_streams(
    compiled: &Compiled,
    width: u32,
    latency: u32,
    run: &StreamRun,
    vcd: Option<&Path>,
) -> Result<(StreamOutput, Vec<OpResult>, RunStats), CosimError> {
    let StreamRun { streams, vector_ops, stalls, mix } = *run;
    let mut sim = compiled.start(vcd)?;
    let p = Ports::find(&sim, "")?;
    let sp = StreamPorts {
        stream: sim.port("in_stream_i")?,
        last: sim.port("in_last_i")?,
        din_valid: sim.port("dense_in_valid_i")?,
        din_ready: sim.port("dense_in_ready_o")?,
        din_data: sim.port("dense_in_data_i")?,
        dout_valid: sim.port("dense_out_valid_o")?,
        dout_ready: sim.port("dense_out_ready_i")?,
        dout_data: sim.port("dense_out_data_o")?,
        dout_count: sim.port("dense_out_count_o")?,
        dout_esize: sim.port("dense_out_esize_o")?,
        dout_last: sim.port("dense_out_last_o")?,
    };
    let mut stall = Staller::new(stalls);
    let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0xbb67_ae85_84ca_a73b);
    let lanes = width / 8;
    let words = width.div_ceil(32) as usize;
    let junk_words = |junk: &mut Rng| -> Vec<u32> { (0..words).map(|_| junk.next_u64() as u32).collect() };
    // Operations in order, each with its stream (None: a vector operation);
    // dense beats in order.
    let mut ops: Vec<(Option<usize>, StreamOp)> = Vec::new();
    let mut beats_in: Vec<Vec<u32>> = Vec::new();
    for (si, st) in streams.iter().enumerate() {
        let eb = st.element_bits;
        let n = (width / eb) as usize;
        let expand = st.op == StreamKind::ExpandStream;
        for (vi, v) in st.vectors.iter().enumerate() {
            let mask = mask_words(&mut junk, v.mask.as_ref(), lanes);
            let src = match &v.src {
                Some(s) if !expand => pack(s, eb, width),
                _ => junk_words(&mut junk),
            };
            let old = old_words(v.old.as_ref(), eb, width);
            let mask_gen = if expand { junk.next_u64() & 1 } else { v.mask.is_none() as u64 };
            let last = (vi + 1 == st.vectors.len()) as u64;
            let fields = PackedOp { op: expand as u64, esize: esize_code(eb), mask_gen, zeroing: st.zeroing as u64, mask, src, old };
            ops.push((Some(si), StreamOp { fields, stream: 1, last }));
        }
        if expand {
            for chunk in st.dense.chunks(n) {
                let mut w = pack(chunk, eb, width);
                // Junk in the padding of a short last beat.
                for e in chunk.len()..n {
                    put(&mut w, e as u32 * eb, eb, junk.next_u64());
                }
                beats_in.push(w);
            }
        }
    }
    for o in vector_ops {
        let fields = PackedOp::vector(o, &mut junk, width);
        ops.push((None, StreamOp { fields, stream: 0, last: junk.next_u64() & 1 }));
    }
    if let Some(seed) = mix {
        let mut rng = Rng::new(seed);
        let kind = |si: &Option<usize>| si.map_or(0, |i| 1 + (streams[i].op == StreamKind::ExpandStream) as usize);
        let mut queues: [Vec<(Option<usize>, StreamOp)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for o in ops.into_iter().rev() {
            queues[kind(&o.0)].push(o);
        }
        ops = Vec::new();
        while queues.iter().any(|q| !q.is_empty()) {
            let k = rng.below(3) as usize;
            if let Some(o) = queues[k].pop() {
                ops.push(o);
            }
        }
    }
    let compress_streams: Vec<usize> = (0..streams.len()).filter(|&i| streams[i].op == StreamKind::CompressStream).collect();

    for port in [p.in_valid, sp.din_valid, p.out_ready, sp.dout_ready] {
        sim.set(port, 0);
    }
    sim.reset(p.rst, 2);

    let mut out: Vec<StreamResult> = streams
        .iter()
        .map(|st| StreamResult {
            beats: (st.op == StreamKind::CompressStream).then(Vec::new),
            results: Vec::with_capacity(st.vectors.len()),
        })
        .collect();
    let mut vec_results: Vec<OpResult> = Vec::with_capacity(vector_ops.len());
    let (mut next, mut next_beat, mut results, mut beat_streams) = (0usize, 0usize, 0usize, 0usize);
    let (mut offering, mut offering_beat) = (false, false);
    let mut first_in: Option<u64> = None;
    let mut last_out = 0u64;
    let limit = sim.cycle() + 200 + 60 * (ops.len() + beats_in.len()) as u64;
    // Cycles to stay quiet after the last result and the last beat.
    let mut quiet_left = 2 * latency as u64 + 16;
    let timer = LoopTimer::start(&sim);
    loop {
        let done = results == ops.len() && beat_streams == compress_streams.len();
        if done {
            if quiet_left == 0 {
                break;
            }
            quiet_left -= 1;
        }
        if sim.cycle() > limit {
            let msg = format!(
                "the RTL stopped making progress: {results} of {} results, {beat_streams} of {} dense streams out, after {} cycles",
                ops.len(),
                compress_streams.len(),
                sim.cycle()
            );
            return Err(fail(&mut sim, msg));
        }
        if !offering && next < ops.len() && !stall.hold_input() {
            offering = true;
            let o = &ops[next].1;
            o.fields.drive(&mut sim, &p);
            sim.set(sp.stream, o.stream);
            sim.set(sp.last, o.last);
        }
        if !offering_beat && next_beat < beats_in.len() && !stall.hold_input() {
            offering_beat = true;
            sim.set_words(sp.din_data, &beats_in[next_beat]);
        }
        sim.set(p.in_valid, offering as u64);
        sim.set(sp.din_valid, offering_beat as u64);
        let ready_out = done || !stall.hold_output();
        let ready_dense = done || !stall.hold_output();
        sim.set(p.out_ready, ready_out as u64);
        sim.set(sp.dout_ready, ready_dense as u64);
        sim.eval();
        let now = sim.cycle();
        if offering && sim.get(p.in_ready) == 1 {
            first_in.get_or_insert(now);
            offering = false;
            next += 1;
        }
        if offering_beat && sim.get(sp.din_ready) == 1 {
            offering_beat = false;
            next_beat += 1;
        }
        if ready_out && sim.get(p.out_valid) == 1 {
            if results == ops.len() {
                return Err(fail(&mut sim, format!("a result on out after all {} were taken", ops.len())));
            }
            let si = ops[results].0;
            let eb = si.map_or_else(|| vector_ops[vec_results.len()].element_bits, |i| streams[i].element_bits);
            let r = match read_result(&sim, &p, width, eb, results) {
                Ok(r) => r,
                Err(msg) => return Err(fail(&mut sim, msg)),
            };
            match si {
                Some(i) => out[i].results.push(r),
                None => vec_results.push(r),
            }
            results += 1;
            last_out = now;
        }
        if ready_dense && sim.get(sp.dout_valid) == 1 {
            let Some(&si) = compress_streams.get(beat_streams) else {
                return Err(fail(&mut sim, format!("a dense beat after all {} compress streams ended", compress_streams.len())));
            };
            let eb = streams[si].element_bits;
            let esize = sim.get(sp.dout_esize);
            if esize != esize_code(eb) {
                let msg = format!("dense beat of stream {si}: dense_out_esize_o = {esize}, the stream's elements are {eb} bits");
                return Err(fail(&mut sim, msg));
            }
            let n = (width / eb) as usize;
            let beat = Beat {
                count: sim.get(sp.dout_count) as u32,
                data: unpack(sim.words(sp.dout_data), eb, n),
                last: sim.get(sp.dout_last) == 1,
            };
            if beat.last {
                beat_streams += 1;
            }
            out[si].beats.as_mut().expect("a compress stream").push(beat);
            last_out = now;
        }
        sim.tick();
    }
    if next_beat < beats_in.len() {
        let msg = format!("the unit took {next_beat} of the {} dense beats offered", beats_in.len());
        return Err(fail(&mut sim, msg));
    }
    sim.trace_close();
    let cycles = first_in.map_or(0, |f| last_out - f);
    Ok((StreamOutput { cycles, streams: out }, vec_results, timer.stats(&sim)))
}

/// Random streams for cosimulation and benches: both kinds, all element
/// sizes (or one), 1 to `max_len` vectors each, masks from empty to full
/// (given or, for compress, generated), merge and zeroing.
pub fn random_streams(rng: &mut Rng, width: u32, count: usize, max_len: usize, element_bits: Option<u32>) -> Vec<Stream> {
    (0..count)
        .map(|_| {
            let eb = element_bits.unwrap_or(*rng.pick(&[8, 16, 32, 64]));
            let expand = rng.chance(50);
            let len = 1 + rng.below(max_len as u64) as usize;
            let ops = random_ops(rng, width, len, Some(eb));
            let density = rng.below(101) as u32;
            let mut dense = Vec::new();
            let vectors = ops
                .into_iter()
                .map(|o| {
                    let mask = if expand || o.mask.is_some() {
                        // Streams of one density, with empty and full masks among them.
                        let pct = match rng.below(8) {
                            0 => 0,
                            1 => 100,
                            _ => density,
                        };
                        Some(o.src.iter().map(|_| rng.chance(pct) as u8).collect::<Vec<u8>>())
                    } else {
                        None
                    };
                    if expand {
                        let ones = mask.as_ref().map_or(0, |m| m.iter().filter(|&&b| b == 1).count());
                        dense.extend(o.src.iter().take(ones).copied());
                        // Not every stream's sources come from one vector.
                        StreamVector { src: None, mask, old: o.old }
                    } else {
                        StreamVector { src: Some(o.src), mask, old: o.old }
                    }
                })
                .collect();
            Stream {
                op: if expand { StreamKind::ExpandStream } else { StreamKind::CompressStream },
                element_bits: eb,
                zeroing: rng.chance(50),
                vectors,
                dense,
            }
        })
        .collect()
}
