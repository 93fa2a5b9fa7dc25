//! Testbench for the generated compress/expand RTL, built from agents: a
//! [`CompressDriver`] (the unit's streams: operations in on `in`, results
//! out of `out`, and the stream unit's dense beats in and out) made of
//! stream sources and sinks, with random stalls on every stream. Results
//! come back in the golden model's format.

use super::agents::{Agent, Bench, Expect, Fields, Pace, StreamSink, StreamSource};
use super::{fail, pack, put, unpack, LoopTimer, RunStats, Stalls};
use crate::cosim::{CosimError, Compiled, Sim};
use crate::models::compress::{Beat, Kind, Op, OpResult, Output, Stream, StreamKind, StreamOutput, StreamResult, StreamVector};
use crate::rng::Rng;
use std::path::Path;

/// The `in` fields of the vector unit, in item order.
const IN_FIELDS: [&str; 7] = ["op", "esize", "mask_gen", "mask", "zeroing", "src", "old"];
/// The stream unit's two more.
const STREAM_FIELDS: [&str; 9] = ["op", "esize", "mask_gen", "mask", "zeroing", "src", "old", "stream", "last"];
/// The `out` fields: dst, mask, count.
const OUT_FIELDS: [&str; 3] = ["dst", "mask", "count"];
/// The `dense_out` fields: data, count, esize, last.
const DENSE_OUT_FIELDS: [&str; 4] = ["data", "count", "esize", "last"];

/// Everything a compress unit needs, on the streams of a unit named
/// `<prefix>...`: the operations on `in` and the results of `out`; for a
/// stream unit, also the dense beats on `dense_in` and from `dense_out`.
pub struct CompressDriver {
    name: String,
    width: u32,
    input: StreamSource,
    output: StreamSink,
    dense_in: Option<StreamSource>,
    dense_out: Option<StreamSink>,
}

impl CompressDriver {
    /// The vector unit's streams (the stream unit's `in_stream_i` and
    /// `in_last_i` stay 0), to run `ops`.
    pub fn vector(sim: &Sim, prefix: &str, width: u32, ops: &[Op], stalls: Option<Stalls>) -> Result<CompressDriver, CosimError> {
        // Ignored mask bits (all of a generated mask's, those above the
        // element count of a given one) get junk: they must not matter.
        let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0x6a09_e667_f3bc_c908);
        let mut input = source(sim, &format!("{prefix}in"), &IN_FIELDS, stalls)?;
        for o in ops {
            let item = PackedOp::vector(o, &mut junk, width).item(input.fields(), None);
            input.push(item);
        }
        let output = sink(sim, &format!("{prefix}out"), &OUT_FIELDS, stalls)?.expect(Expect::Items(ops.len()));
        Ok(CompressDriver { name: format!("{prefix}compress"), width, input, output, dense_in: None, dense_out: None })
    }

    /// The cycles from the first operation taken to the last result or
    /// dense beat.
    fn cycles(&self) -> u64 {
        let last = |s: &StreamSink| s.cycles().last().copied().unwrap_or(0);
        let last_out = last(&self.output).max(self.dense_out.as_ref().map_or(0, last));
        self.input.taken().first().map_or(0, |f| last_out - f)
    }

    /// The vector run's output once the bench is over: every result of
    /// `ops` (the operations the driver was made with) and the cycles.
    pub fn outcome(&self, sim: &mut Sim, ops: &[Op]) -> Result<Output, CosimError> {
        let mut results = Vec::with_capacity(ops.len());
        for (i, o) in ops.iter().enumerate() {
            results.push(self.result(i, o.element_bits).map_err(|m| fail(sim, m))?);
        }
        Ok(Output { results, cycles: self.cycles() })
    }

    /// Result `index` taken from `out` (of `element_bits` elements); an
    /// error message if `out_mask_o` has bits above the elements.
    fn result(&self, index: usize, element_bits: u32) -> Result<OpResult, String> {
        let n = (self.width / element_bits) as usize;
        let dst = unpack(self.output.field(index, 0), element_bits, n);
        let mask_all = unpack(self.output.field(index, 1), 1, (self.width / 8) as usize);
        if mask_all[n..].iter().any(|&b| b != 0) {
            let c = self.output.cycles()[index];
            return Err(format!("cycle {c}: result {index}: out_mask_o has bits set above element {} ({:?})", n - 1, mask_all));
        }
        let mask = mask_all[..n].iter().map(|&b| b as u8).collect();
        Ok(OpResult { dst, mask, count: self.output.field_u64(index, 2) as u32 })
    }
}

impl Agent for CompressDriver {
    fn name(&self) -> &str {
        &self.name
    }
    fn drive(&mut self, sim: &mut Sim) {
        self.input.drive(sim);
        self.output.drive(sim);
        if let Some(d) = &mut self.dense_in {
            d.drive(sim);
        }
        if let Some(d) = &mut self.dense_out {
            d.drive(sim);
        }
    }
    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        self.input.sample(sim)?;
        self.output.sample(sim)?;
        if let Some(d) = &mut self.dense_in {
            d.sample(sim)?;
        }
        if let Some(d) = &mut self.dense_out {
            d.sample(sim)?;
        }
        Ok(())
    }
    fn done(&self) -> bool {
        self.input.done() && self.output.done() && self.dense_in.as_ref().is_none_or(|d| d.done()) && self.dense_out.as_ref().is_none_or(|d| d.done())
    }
    fn waiting(&self) -> String {
        let mut w = vec![format!("operation {}", self.input.waiting()), format!("result {}", self.output.waiting())];
        if let Some(d) = &self.dense_in {
            w.push(format!("dense beat {}", d.waiting()));
        }
        if let Some(d) = &self.dense_out {
            w.push(format!("dense out {}", d.waiting()));
        }
        w.join(", ")
    }
    fn progress(&self) -> u64 {
        self.input.progress() + self.output.progress() + self.dense_in.as_ref().map_or(0, |d| d.progress()) + self.dense_out.as_ref().map_or(0, |d| d.progress())
    }
}

fn source(sim: &Sim, stream: &str, fields: &[&str], stalls: Option<Stalls>) -> Result<StreamSource, CosimError> {
    Ok(StreamSource::find(sim, stream, fields)?.seed(stalls.map_or(0, |s| s.seed)).pace(Pace::random_or_steady(stalls.map(|s| s.in_pct))))
}

fn sink(sim: &Sim, stream: &str, fields: &[&str], stalls: Option<Stalls>) -> Result<StreamSink, CosimError> {
    Ok(StreamSink::find(sim, stream, fields)?.seed(stalls.map_or(0, |s| s.seed)).pace(Pace::random_or_steady(stalls.map(|s| s.out_pct))))
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
    let rst = sim.port("rst_i")?;
    // Stimulus packed before the run, out of the per-cycle path.
    let mut d = CompressDriver::vector(&sim, prefix, width, ops, stalls)?;
    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    // Generous: every op can be stalled, but the RTL must not hang.
    Bench::new(64 + 40 * ops.len() as u64 + 1000).run(&mut sim, &mut [&mut d])?;
    let out = d.outcome(&mut sim, ops)?;
    sim.trace_close();
    Ok((out, timer.stats(&sim)))
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

    /// The item on `in` (fields [`IN_FIELDS`], or [`STREAM_FIELDS`] with
    /// `stream_last`: `in_stream_i` and `in_last_i`).
    fn item(&self, f: &Fields, stream_last: Option<(u64, u64)>) -> Vec<u32> {
        let w = |v: u64| [v as u32, (v >> 32) as u32];
        let (op, esize, mask_gen, zeroing) = (w(self.op), w(self.esize), w(self.mask_gen), w(self.zeroing));
        let mut v: Vec<&[u32]> = vec![&op, &esize, &mask_gen, &self.mask, &zeroing, &self.src, &self.old];
        let sl = stream_last.map(|(s, l)| (w(s), w(l)));
        if let Some((s, l)) = &sl {
            v.push(s);
            v.push(l);
        }
        f.pack(&v)
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
    let rst = sim.port("rst_i")?;
    let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0xbb67_ae85_84ca_a73b);
    let lanes = width / 8;
    let words = width.div_ceil(32) as usize;
    let junk_words = |junk: &mut Rng| -> Vec<u32> { (0..words).map(|_| junk.next_u64() as u32).collect() };
    let mut input = source(&sim, "in", &STREAM_FIELDS, stalls)?;
    let mut dense_in = source(&sim, "dense_in", &["data"], stalls)?;
    // Operations in order, each with its stream (None: a vector operation);
    // dense beats in order.
    let mut ops: Vec<(Option<usize>, Vec<u32>)> = Vec::new();
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
            ops.push((Some(si), fields.item(input.fields(), Some((1, last)))));
        }
        if expand {
            for chunk in st.dense.chunks(n) {
                let mut w = pack(chunk, eb, width);
                // Junk in the padding of a short last beat.
                for e in chunk.len()..n {
                    put(&mut w, e as u32 * eb, eb, junk.next_u64());
                }
                dense_in.push(w);
            }
        }
    }
    for o in vector_ops {
        let fields = PackedOp::vector(o, &mut junk, width);
        let last = junk.next_u64() & 1;
        ops.push((None, fields.item(input.fields(), Some((0, last)))));
    }
    if let Some(seed) = mix {
        let mut rng = Rng::new(seed);
        let kind = |si: &Option<usize>| si.map_or(0, |i| 1 + (streams[i].op == StreamKind::ExpandStream) as usize);
        let mut queues: [Vec<(Option<usize>, Vec<u32>)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
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
    let beats_in = dense_in.len();
    // Each result's stream (None: a vector operation's).
    let result_streams: Vec<Option<usize>> = ops.iter().map(|o| o.0).collect();
    for (_, item) in ops {
        input.push(item);
    }
    let output = sink(&sim, "out", &OUT_FIELDS, stalls)?.expect(Expect::Items(result_streams.len()));
    let dense_out = sink(&sim, "dense_out", &DENSE_OUT_FIELDS, stalls)?.expect(Expect::Packets { last_field: 3, count: compress_streams.len() });
    let mut d = CompressDriver { name: "compress".into(), width, input, output, dense_in: Some(dense_in), dense_out: Some(dense_out) };

    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    let budget = 200 + 60 * (result_streams.len() + beats_in) as u64;
    // After the last result and the last beat the unit stays quiet.
    Bench::new(budget).drain(2 * latency as u64 + 16).run(&mut sim, &mut [&mut d])?;

    let mut out: Vec<StreamResult> = streams
        .iter()
        .map(|st| StreamResult {
            beats: (st.op == StreamKind::CompressStream).then(Vec::new),
            results: Vec::with_capacity(st.vectors.len()),
        })
        .collect();
    let mut vec_results: Vec<OpResult> = Vec::with_capacity(vector_ops.len());
    for (i, si) in result_streams.iter().enumerate() {
        let eb = si.map_or_else(|| vector_ops[vec_results.len()].element_bits, |s| streams[s].element_bits);
        let r = d.result(i, eb).map_err(|m| fail(&mut sim, m))?;
        match si {
            Some(s) => out[*s].results.push(r),
            None => vec_results.push(r),
        }
    }
    let dense = d.dense_out.as_ref().expect("the stream unit's");
    let mut stream = 0usize;
    for i in 0..dense.items().len() {
        let si = compress_streams[stream];
        let eb = streams[si].element_bits;
        let esize = dense.field_u64(i, 2);
        if esize != esize_code(eb) {
            let msg = format!("cycle {}: dense beat of stream {si}: dense_out_esize_o = {esize}, the stream's elements are {eb} bits", dense.cycles()[i]);
            return Err(fail(&mut sim, msg));
        }
        let beat = Beat { count: dense.field_u64(i, 1) as u32, data: unpack(dense.field(i, 0), eb, (width / eb) as usize), last: dense.field_u64(i, 3) == 1 };
        stream += beat.last as usize;
        out[si].beats.as_mut().expect("a compress stream").push(beat);
    }
    sim.trace_close();
    Ok((StreamOutput { cycles: d.cycles(), streams: out }, vec_results, timer.stats(&sim)))
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
