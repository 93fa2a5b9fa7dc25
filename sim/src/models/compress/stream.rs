//! Golden model of the compress unit's stream mode (docs/compress.md,
//! "Stream mode"): compress streams pack their selected elements into dense
//! beats of `n` elements, expand streams take their source elements from
//! dense beats. The functional part follows "Behaviour"; the cycle count is
//! a cycle-by-cycle simulation of the registers of "Timing" (input queue,
//! issue register, dense input buffer, credit-counted vector unit, packer,
//! dense output queue), with only what decides timing: per operation its
//! kind, its `count` and `last`, and the number of dense input beats.

use super::{apply, element_bits_key, parse_ops, zeroing_key, Kind, Op, OpResult};
use crate::models::{err, shown, InputErrors, Violations};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    CompressStream,
    ExpandStream,
}

/// One vector of a stream. `src`: compress streams only (`None` for
/// expand); `mask`: `None` = generated from `src` (compress only; expand
/// requires `Some`); `old`: `None` = zeros.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamVector {
    pub src: Option<Vec<u64>>,
    pub mask: Option<Vec<u8>>,
    pub old: Option<Vec<u64>>,
}

/// One stream of the `streams` list; its last vector ends it. `dense`: an
/// expand stream's dense elements (as many as the ones in its masks); empty
/// for a compress stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stream {
    pub op: StreamKind,
    pub element_bits: u32,
    pub zeroing: bool,
    pub vectors: Vec<StreamVector>,
    pub dense: Vec<u64>,
}

/// A dense output beat: `data` has `n` elements, zero at and above `count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Beat {
    pub count: u32,
    pub data: Vec<u64>,
    pub last: bool,
}

/// One stream's output: `beats` for a compress stream (`None` for expand),
/// one result per vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamResult {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub beats: Option<Vec<Beat>>,
    pub results: Vec<OpResult>,
}

/// The whole output file of a stream run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOutput {
    pub cycles: u64,
    pub streams: Vec<StreamResult>,
}

/// The whole `gpurtl run compress` input file, either form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunInput {
    Ops(Vec<Op>),
    Streams(Vec<Stream>),
}

/// Elements per vector.
fn elements(width: u32, element_bits: u32) -> usize {
    (width / element_bits) as usize
}

/// The vector operation a stream's vector `v` performs, its source for an
/// expand stream being `src` (the next `count` dense elements).
fn vector_op(s: &Stream, v: &StreamVector, n: usize, src: Option<Vec<u64>>) -> Op {
    let (op, src) = match s.op {
        StreamKind::CompressStream => (Kind::Compress, v.src.clone().expect("a compress-stream vector has a src")),
        StreamKind::ExpandStream => (Kind::Expand, src.expect("an expand-stream source")),
    };
    assert_eq!(src.len(), n, "vector length");
    Op { op, element_bits: s.element_bits, src, mask: v.mask.clone(), old: v.old.clone(), zeroing: s.zeroing }
}

/// The mask a stream's vector uses: the given one, or (compress streams)
/// src != 0.
fn mask_used(s: &Stream, v: &StreamVector) -> Vec<u8> {
    match (&v.mask, s.op) {
        (Some(m), _) => m.clone(),
        (None, StreamKind::CompressStream) => {
            v.src.as_ref().expect("a compress-stream vector has a src").iter().map(|&x| (x != 0) as u8).collect()
        }
        (None, StreamKind::ExpandStream) => panic!("an expand-stream vector needs a mask"),
    }
}

fn ones(mask: &[u8]) -> usize {
    mask.iter().filter(|&&b| b == 1).count()
}

/// A beat of `n` elements holding `elems` (fewer than or exactly `n`).
fn beat(elems: &[u64], n: usize, last: bool) -> Beat {
    let mut data = elems.to_vec();
    data.resize(n, 0);
    Beat { count: elems.len() as u32, data, last }
}

/// One stream's results and (compress) dense beats.
fn run_stream(s: &Stream, width: u32) -> StreamResult {
    let n = elements(width, s.element_bits);
    let mut results = Vec::with_capacity(s.vectors.len());
    match s.op {
        StreamKind::CompressStream => {
            // Selected elements wait until `n` of them make a beat; the
            // stream's last vector flushes the rest (possibly none) as a
            // last beat unless it has just completed a full one.
            let mut waiting: Vec<u64> = Vec::new();
            let mut beats = Vec::new();
            for (k, v) in s.vectors.iter().enumerate() {
                let last = k + 1 == s.vectors.len();
                let r = apply(&vector_op(s, v, n, None));
                let src = v.src.as_ref().unwrap();
                waiting.extend((0..n).filter(|&i| r.mask[i] == 1).map(|i| src[i]));
                // At most one full beat per vector: fewer than n wait before it.
                let mut ended = false;
                if waiting.len() >= n {
                    let full: Vec<u64> = waiting.drain(..n).collect();
                    ended = last && waiting.is_empty();
                    beats.push(beat(&full, n, ended));
                }
                if last && !ended {
                    beats.push(beat(&waiting, n, true));
                    waiting.clear();
                }
                results.push(r);
            }
            StreamResult { beats: Some(beats), results }
        }
        StreamKind::ExpandStream => {
            // Element j of a vector's source is element p + j of the stream.
            let mut p = 0;
            for v in &s.vectors {
                let c = ones(&mask_used(s, v));
                assert!(p + c <= s.dense.len(), "an expand stream needs as many dense elements as ones in its masks");
                let mut src = s.dense[p..p + c].to_vec();
                src.resize(n, 0);
                p += c;
                results.push(apply(&vector_op(s, v, n, Some(src))));
            }
            StreamResult { beats: None, results }
        }
    }
}

/// Functional results and cycles per docs/compress.md.
pub fn run_streams(streams: &[Stream], width: u32, latency: u32) -> StreamOutput {
    let cycles = stream_cycles(streams, width, latency);
    crate::budget::spend(cycles);
    StreamOutput {
        cycles,
        streams: streams.iter().map(|s| run_stream(s, width)).collect(),
    }
}

// ---------------------------------------------------------------------------
// Timing

/// What the unit does with an operation, as far as timing goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// A vector-mode operation (`stream` = 0). A `streams` file has none;
    /// the tests use them for mixed sequences.
    #[cfg_attr(not(test), allow(dead_code))]
    Vector,
    CompressStream,
    ExpandStream,
}

/// An operation as timing sees it: `n` elements per vector, `count`
/// selected, `last` ends its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timed {
    unit: Unit,
    n: u32,
    count: u32,
    last: bool,
}

/// The operations of all streams in file order, and the number of dense
/// beats offered on `dense_in` (ceil(T/n) per expand stream).
fn timed(streams: &[Stream], width: u32) -> (Vec<Timed>, u64) {
    let mut ops = Vec::new();
    let mut dense_beats = 0;
    for s in streams {
        let n = elements(width, s.element_bits) as u32;
        let unit = match s.op {
            StreamKind::CompressStream => Unit::CompressStream,
            StreamKind::ExpandStream => Unit::ExpandStream,
        };
        let mut total = 0u64;
        for (k, v) in s.vectors.iter().enumerate() {
            let count = ones(&mask_used(s, v)) as u32;
            total += count as u64;
            ops.push(Timed { unit, n, count, last: k + 1 == s.vectors.len() });
        }
        if unit == Unit::ExpandStream {
            dense_beats += total.div_ceil(n as u64);
        }
    }
    (ops, dense_beats)
}

/// Cycle count alone (used by run_streams), exposed for benches/tests.
pub fn stream_cycles(streams: &[Stream], width: u32, latency: u32) -> u64 {
    let (ops, dense_beats) = timed(streams, width);
    simulate(&ops, dense_beats, latency)
}

/// The registers of "Timing", cycle by cycle. Cycle `t` ends at edge `t`;
/// the first operation is offered in cycle 0 and, `IQ` being empty after
/// reset, transferred at edge 0, so the result is the edge of the last
/// transfer on `out` or `dense_out`. Every decision of a cycle reads the
/// registers as they are at its start; the updates all happen at its edge.
/// An operation goes `in` -> `IQ` -> (issue) `R` -> (move) vector unit ->
/// `out`: at the earliest in at `e`, issue at `e + 1`, move at `e + 2`, out
/// at `e + 2 + L`.
fn simulate(ops: &[Timed], dense_beats: u64, latency: u32) -> u64 {
    if ops.is_empty() {
        return 0;
    }
    let l = latency as u64;
    let credits = latency as usize + 1;
    let mut offered = 0; // operations transferred on `in`
    let mut iq: VecDeque<usize> = VecDeque::new(); // input queue, 2 entries
    let mut r: Option<usize> = None; // issue register, 1 entry
    let mut dense_in = 0; // beats transferred on `dense_in`
    let mut db = 0u32; // dense input buffer, 3 entries
    let mut pb = 0u32; // elements of the head dense beat already used
    let mut vu: VecDeque<(usize, u64)> = VecDeque::new(); // moved in, not yet out: (operation, edge moved in)
    let mut f = 0u32; // packer: elements waiting
    let mut dq = 0u32; // dense output queue, 3 entries
    let mut done = 0; // operations transferred on `out`
    let mut last_edge = 0;
    let bound = 16 * (ops.len() as u64 + dense_beats + l + 8);
    let mut t = 0u64;
    while done < ops.len() || dq > 0 {
        if crate::budget::over(t) {
            break;
        }
        assert!(t < bound, "stream timing model: no progress by cycle {t}");
        // Decisions, from the registers at the start of cycle t.
        let take_in = offered < ops.len() && iq.len() < 2;
        let take_dense = dense_in < dense_beats && db < 3;
        let give_dense = dq >= 1;
        let give_out = vu
            .front()
            .is_some_and(|&(k, at)| t >= at + l && (ops[k].unit != Unit::CompressStream || dq <= 1));
        // R -> vector unit: a credit counted at the start of the cycle (an
        // output transfer at this edge frees it for the next cycle only).
        let move_in = r.is_some() && vu.len() < credits;
        // IQ -> R: R empty or emptied at this edge, and the dense data.
        let issue = iq.front().is_some_and(|&k| {
            let o = ops[k];
            (r.is_none() || move_in)
                && (o.unit != Unit::ExpandStream || o.count == 0 || (db >= 1 && pb + o.count <= o.n) || db >= 2)
        });
        // Edge t.
        if move_in {
            vu.push_back((r.take().unwrap(), t));
        }
        if issue {
            let k = iq.pop_front().unwrap();
            r = Some(k);
            let o = ops[k];
            if o.unit == Unit::ExpandStream {
                let mut s = pb + o.count;
                if s >= o.n {
                    db -= 1;
                    s -= o.n;
                }
                if o.last && s > 0 {
                    db -= 1;
                    s = 0;
                }
                pb = s;
            }
        }
        if take_in {
            iq.push_back(offered);
            offered += 1;
        }
        if take_dense {
            db += 1;
            dense_in += 1;
        }
        if give_dense {
            dq -= 1;
            last_edge = t;
        }
        if give_out {
            let (k, _) = vu.pop_front().unwrap();
            done += 1;
            last_edge = t;
            let o = ops[k];
            if o.unit == Unit::CompressStream {
                let mut s = f + o.count;
                let mut ended = false;
                if s >= o.n {
                    dq += 1;
                    ended = o.last && s == o.n;
                    s -= o.n;
                }
                if o.last && !ended {
                    dq += 1;
                    s = 0;
                }
                f = s;
            }
        }
        assert!(db <= 3 && dq <= 3 && iq.len() <= 2, "stream timing model: a queue overflows at edge {t}");
        t += 1;
    }
    last_edge
}

// ---------------------------------------------------------------------------
// Input

/// Most vectors in one stream.
const MAX_VECTORS: usize = 4096;

/// Parse and check a `gpurtl run compress` input file, either form
/// (docs/compress.md "`gpurtl run compress` input" and "stream input");
/// every violation is reported. `stream_enabled`: the `stream` parameter.
pub fn parse_run_input(v: &Value, width: u32, stream_enabled: bool) -> Result<RunInput, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        let what = if stream_enabled { "a JSON object with an `ops` or a `streams` list" } else { "a JSON object with an `ops` list" };
        return Err(e.stop(Some(err("(file)", shown(v), what))));
    };
    for k in obj.keys() {
        match (k.as_str(), stream_enabled) {
            ("ops", _) | ("streams", true) => {}
            ("streams", false) => e.push(err("streams", "(given)", "absent: stream mode needs --param stream=true")),
            (_, false) => e.push(err(k.as_str(), "(given)", "absent: the only key is `ops`")),
            (_, true) => e.push(err(k.as_str(), "(given)", "absent: the only key is `ops` or `streams`")),
        }
    }
    match (obj.get("ops"), obj.get("streams"), stream_enabled) {
        (Some(ops), _, false) | (Some(ops), None, true) => {
            let ops = parse_ops(&mut e, ops, width);
            e.finish(|| RunInput::Ops(ops.unwrap_or_default()))
        }
        // Reported above: nothing more to check.
        (None, Some(_), false) => Err(e.stop(None)),
        (None, None, false) => Err(e.stop(Some(err("ops", "(missing)", "a list of operations")))),
        (None, None, true) => {
            Err(e.stop(Some(err("ops", "(missing)", "a list of operations, or `streams` a list of streams"))))
        }
        (Some(_), Some(_), true) => Err(e.stop(Some(err(
            "streams",
            "(given)",
            "absent when `ops` is given: the file has one of `ops` and `streams`",
        )))),
        (None, Some(streams), true) => {
            let streams = parse_streams(&mut e, streams, width);
            e.finish(|| RunInput::Streams(streams.unwrap_or_default()))
        }
    }
}

fn parse_streams(e: &mut Violations, v: &Value, width: u32) -> Option<Vec<Stream>> {
    let Some(list) = v.as_array() else {
        e.push(err("streams", shown(v), "a list of streams"));
        return None;
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        if let Some(s) = parse_stream(e, i, s, width) {
            out.push(s);
        }
    }
    Some(out)
}

/// A list of `width / eb` integers from 0 to `max`, at `path`, checked as the vector
/// mode's lists are (type, length, then elements).
fn int_list(e: &mut Violations, path: &str, v: &Value, max: u64, what: &str, width: u32, eb: u32) -> Option<Vec<u64>> {
    let n = elements(width, eb);
    let Some(a) = v.as_array() else {
        e.push(err(path, shown(v), format!("a list of {n} {what}")));
        return None;
    };
    if a.len() != n {
        e.push(err(path, format!("a list of {} values", a.len()), format!("a list of {n} values (width {width} / element_bits {eb})")));
        return None;
    }
    elems(e, path, a, max, what)
}

/// The elements of a list: integers from 0 to `max`.
fn elems(e: &mut Violations, path: &str, a: &[Value], max: u64, what: &str) -> Option<Vec<u64>> {
    e.each(path, a, |k, x| match x.as_u64() {
        Some(u) if u <= max => Ok(u),
        _ => Err(err(format!("{path}[{k}]"), shown(x), format!("{what} from 0 to {max}"))),
    })
}

/// `streams[i]`; its violations go to `e`.
fn parse_stream(e: &mut Violations, i: usize, s: &Value, width: u32) -> Option<Stream> {
    let at = |f: &str| format!("streams[{i}].{f}");
    let Some(o) = s.as_object() else {
        e.push(err(format!("streams[{i}]"), shown(s), "an object"));
        return None;
    };
    for k in o.keys() {
        if !["op", "element_bits", "zeroing", "vectors", "dense"].contains(&k.as_str()) {
            e.push(err(at(k), "(given)", "absent: keys are op, element_bits, zeroing, vectors, dense"));
        }
    }
    let kind = e.take(match o.get("op").map(|x| x.as_str()) {
        Some(Some("compress_stream")) => Ok(StreamKind::CompressStream),
        Some(Some("expand_stream")) => Ok(StreamKind::ExpandStream),
        Some(_) => Err(err(at("op"), shown(&o["op"]), "\"compress_stream\" or \"expand_stream\"")),
        None => Err(err(at("op"), "(missing)", "\"compress_stream\" or \"expand_stream\"")),
    });
    let element_bits = element_bits_key(e, o, &at("element_bits"));
    let zeroing = zeroing_key(e, o, &at("zeroing"));
    const VECTORS: &str = "a list of 1 to 4096 vector objects";
    let vectors = match o.get("vectors") {
        None => {
            e.push(err(at("vectors"), "(missing)", VECTORS));
            None
        }
        Some(vs) => match vs.as_array() {
            None => {
                e.push(err(at("vectors"), shown(vs), VECTORS));
                None
            }
            Some(a) if a.is_empty() || a.len() > MAX_VECTORS => {
                e.push(err(at("vectors"), format!("a list of {} values", a.len()), VECTORS));
                None
            }
            Some(a) => {
                let mut out = Some(Vec::with_capacity(a.len()));
                for (k, v) in a.iter().enumerate() {
                    let parsed = parse_vector(e, &format!("streams[{i}].vectors[{k}]"), v, kind, element_bits, width);
                    match (parsed, &mut out) {
                        (Some(v), Some(out)) => out.push(v),
                        _ => out = None,
                    }
                }
                out
            }
        },
    };
    // `dense`: expand streams only; its length is the ones of all the masks,
    // known when every vector (so every mask) is good.
    let dense = match (kind, element_bits) {
        (Some(StreamKind::CompressStream), _) => match o.get("dense") {
            Some(_) => {
                e.push(err(at("dense"), "(given)", "absent: only an expand stream has `dense`"));
                None
            }
            None => Some(Vec::new()),
        },
        (Some(StreamKind::ExpandStream), Some(eb)) => {
            let total = vectors.as_ref().map(|vs: &Vec<StreamVector>| {
                vs.iter().map(|v| ones(v.mask.as_deref().unwrap_or_default())).sum::<usize>()
            });
            let what = match total {
                Some(t) => format!("a list of {t} unsigned integers"),
                None => "a list of unsigned integers".to_string(),
            };
            match o.get("dense") {
                None => {
                    e.push(err(at("dense"), "(missing)", what));
                    None
                }
                Some(d) => match d.as_array() {
                    None => {
                        e.push(err(at("dense"), shown(d), what));
                        None
                    }
                    Some(a) => match total {
                        Some(t) if a.len() != t => {
                            e.push(err(
                                at("dense"),
                                format!("a list of {} values", a.len()),
                                format!("a list of {t} values (the ones of the vectors' masks)"),
                            ));
                            None
                        }
                        _ => elems(e, &at("dense"), a, max_of(eb), "unsigned integers"),
                    },
                },
            }
        }
        // The kind or the element size is not known: nothing to check against.
        _ => None,
    };
    Some(Stream { op: kind?, element_bits: element_bits?, zeroing: zeroing?, vectors: vectors?, dense: dense? })
}

fn max_of(element_bits: u32) -> u64 {
    if element_bits == 64 {
        u64::MAX
    } else {
        (1u64 << element_bits) - 1
    }
}

/// One vector object at `path` of a stream of `kind` (`None`: not known, so
/// no key is required or refused) and `element_bits` (`None`: not known, so
/// the lists are not checked); its violations go to `e`.
fn parse_vector(
    e: &mut Violations,
    path: &str,
    v: &Value,
    kind: Option<StreamKind>,
    element_bits: Option<u32>,
    width: u32,
) -> Option<StreamVector> {
    let at = |f: &str| format!("{path}.{f}");
    let Some(o) = v.as_object() else {
        e.push(err(path, shown(v), "an object"));
        return None;
    };
    for k in o.keys() {
        if !["src", "mask", "old"].contains(&k.as_str()) {
            e.push(err(at(k), "(given)", "absent: keys are src, mask, old"));
        }
    }
    // The lists' lengths and ranges follow from the element size.
    let eb = element_bits?;
    let n = elements(width, eb);
    let max = max_of(eb);
    let src = match (o.get("src"), kind) {
        (Some(_), Some(StreamKind::ExpandStream)) => {
            e.push(err(at("src"), "(given)", "absent: an expand stream takes its source from `dense`"));
            None
        }
        (Some(x), _) => int_list(e, &at("src"), x, max, "unsigned integers", width, eb).map(Some),
        (None, Some(StreamKind::CompressStream)) => {
            e.push(err(at("src"), "(missing)", format!("a list of {n} unsigned integers")));
            None
        }
        (None, _) => Some(None),
    };
    let mask = match (o.get("mask"), kind) {
        (Some(x), _) => int_list(e, &at("mask"), x, 1, "bits", width, eb).map(|m| Some(m.into_iter().map(|b| b as u8).collect())),
        (None, Some(StreamKind::ExpandStream)) => {
            e.push(err(at("mask"), "(missing)", format!("a list of {n} bits")));
            None
        }
        (None, _) => Some(None),
    };
    let old = match o.get("old") {
        Some(x) => int_list(e, &at("old"), x, max, "unsigned integers", width, eb).map(Some),
        None => Some(None),
    };
    Some(StreamVector { src: src?, mask: mask?, old: old? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cv(src: &[u64], mask: Option<&[u8]>) -> StreamVector {
        StreamVector { src: Some(src.to_vec()), mask: mask.map(|m| m.to_vec()), old: None }
    }
    fn ev(mask: &[u8]) -> StreamVector {
        StreamVector { src: None, mask: Some(mask.to_vec()), old: None }
    }
    fn compress(eb: u32, vectors: Vec<StreamVector>) -> Stream {
        Stream { op: StreamKind::CompressStream, element_bits: eb, zeroing: false, vectors, dense: vec![] }
    }
    fn expand(eb: u32, vectors: Vec<StreamVector>, dense: Vec<u64>) -> Stream {
        Stream { op: StreamKind::ExpandStream, element_bits: eb, zeroing: true, vectors, dense }
    }
    fn t(unit: Unit, n: u32, count: u32, last: bool) -> Timed {
        Timed { unit, n, count, last }
    }
    fn messages(r: Result<RunInput, InputErrors>) -> Vec<String> {
        r.unwrap_err().0.iter().map(|e| e.to_string()).collect()
    }

    /// docs/compress.md "stream input" and "stream output", whole.
    #[test]
    fn doc_example() {
        let input = json!({"streams":[
          {"op":"compress_stream","element_bits":16,"zeroing":false,
           "vectors":[{"src":[1,0,3,0,5,0,7,0]},{"src":[1,2,3,4,5,6,7,8],"mask":[1,1,0,0,0,0,0,1],"old":[9,9,9,9,9,9,9,9]}]},
          {"op":"expand_stream","element_bits":16,"zeroing":true,
           "dense":[1,3,5,7,1,2,8],
           "vectors":[{"mask":[1,0,1,0,1,0,1,0]},{"mask":[1,1,0,0,0,0,0,1]}]}]});
        let RunInput::Streams(streams) = parse_run_input(&input, 128, true).unwrap() else { panic!("streams") };
        let out = run_streams(&streams, 128, 2);
        let expected = json!({"cycles":7,"streams":[
          {"beats":[{"count":7,"data":[1,3,5,7,1,2,8,0],"last":true}],
           "results":[{"count":4,"dst":[1,3,5,7,0,0,0,0],"mask":[1,0,1,0,1,0,1,0]},
                      {"count":3,"dst":[1,2,8,9,9,9,9,9],"mask":[1,1,0,0,0,0,0,1]}]},
          {"results":[{"count":4,"dst":[1,0,3,0,5,0,7,0],"mask":[1,0,1,0,1,0,1,0]},
                      {"count":3,"dst":[1,2,0,0,0,0,0,8],"mask":[1,1,0,0,0,0,0,1]}]}]});
        assert_eq!(serde_json::to_value(&out).unwrap(), expected);
        // By hand (edge: event; "issue" = IQ -> R, "move" = R -> vector
        // unit, L 2, 3 credits): 0: op0 in, dense beat in; 1: op0 issues,
        // op1 in; 2: op0 moves, op1 issues, op2 in; 3: op1 moves, op2
        // issues (DB 1, 0 + 4 <= 8: pb 4), op3 in; 4: op0 out (f 4), op2
        // moves, op3 issues (4 + 3 <= 8, last: beat dropped, pb 0); 5: op1
        // out (f 7, last: a beat of 7 into DQ), op3 moves; 6: the beat out,
        // op2 out; 7: op3 out.
        assert_eq!(out.cycles, 7);
    }

    /// docs/compress.md vector-mode example through the stream unit's input
    /// parser: the `ops` form still works with stream on or off.
    #[test]
    fn ops_form_is_the_vector_mode() {
        let input = json!({"ops":[{"op":"compress","element_bits":16,"src":[1,2,3,4,5,6,7,8],
                 "mask":[0,1,0,0,1,1,0,1],"old":[9,9,9,9,9,9,9,9],"zeroing":false}]});
        for on in [false, true] {
            let RunInput::Ops(ops) = parse_run_input(&input, 128, on).unwrap() else { panic!("ops") };
            assert_eq!(ops, super::super::parse_input(&input, 128).unwrap());
            assert_eq!(apply(&ops[0]).dst, vec![2, 5, 6, 8, 9, 9, 9, 9]);
        }
    }

    #[test]
    fn empty_run_takes_no_cycles() {
        assert_eq!(stream_cycles(&[], 128, 2), 0);
        let out = run_streams(&[], 64, 1);
        assert_eq!(out, StreamOutput { cycles: 0, streams: vec![] });
        let RunInput::Streams(s) = parse_run_input(&json!({"streams": []}), 128, true).unwrap() else { panic!() };
        assert!(s.is_empty());
    }

    /// One vector at latency L: in at 0, issue (into R) at 1, into the
    /// vector unit at 2, out at L + 2.
    #[test]
    fn one_vector_takes_latency_plus_two() {
        for l in 1..=5 {
            let s = compress(16, vec![cv(&[1, 2, 3, 4, 5, 6, 7, 8], Some(&[1, 1, 1, 1, 1, 1, 1, 1]))]);
            // The full beat enters DQ at L + 2 and leaves at L + 3.
            assert_eq!(stream_cycles(std::slice::from_ref(&s), 128, l), l as u64 + 3);
            let s = expand(16, vec![ev(&[0; 8])], vec![]);
            assert_eq!(stream_cycles(&[s], 128, l), l as u64 + 2);
        }
    }

    /// A stream whose masks are all empty: one beat, count 0, last.
    #[test]
    fn all_empty_masks_make_one_empty_beat() {
        let z = [0u8; 8];
        let s = compress(16, vec![cv(&[5; 8], Some(&z)), cv(&[0; 8], None), cv(&[7; 8], Some(&z))]);
        let out = run_streams(&[s], 128, 2);
        assert_eq!(out.streams[0].beats, Some(vec![Beat { count: 0, data: vec![0; 8], last: true }]));
        assert!(out.streams[0].results.iter().all(|r| r.count == 0));
        // Ops issue at 1, 2, 3, move at 2, 3, 4, out at 4, 5, 6; the last
        // one's beat enters DQ at 6 and leaves at 7.
        assert_eq!(out.cycles, 7);
    }

    /// Beats at width 64, 16-bit elements (n 4): counts 3, 3 (f = 6 -> one
    /// full beat, 2 left), 2 last (f = 4: a full last beat, nothing after).
    #[test]
    fn compress_beats_split_across_vectors() {
        let s = compress(
            16,
            vec![cv(&[1, 0, 2, 3], None), cv(&[4, 5, 0, 6], None), cv(&[7, 0, 8, 0], None)],
        );
        let out = run_streams(&[s], 64, 1);
        assert_eq!(
            out.streams[0].beats,
            Some(vec![
                Beat { count: 4, data: vec![1, 2, 3, 4], last: false },
                Beat { count: 4, data: vec![5, 6, 7, 8], last: true },
            ])
        );
        // L 1 (2 credits): issue 1, 2, 3, move 2, 3, 4 (each finds one op
        // in the vector unit), out 3, 4, 5 (f 3, then 6: beat A, f 2; then
        // 4: full last beat B; DQ holds 1 at the start of 5, so op2 is not
        // held); A into DQ at 4, out at 5; B into DQ at 5, out at 6.
        assert_eq!(out.cycles, 6);
    }

    /// A stream whose total is a multiple of n before its last vector, which
    /// selects nothing: the packer has already sent the full beat (not last)
    /// and ends the stream with a beat of count 0 (docs/compress.md, Behaviour: `max(ceil(T/n), floor(T0/n) + 1)` beats).
    #[test]
    fn last_vector_selecting_nothing_after_a_full_beat() {
        let s = compress(32, vec![cv(&[1, 2, 3, 4], None), cv(&[0; 4], None)]);
        let out = run_streams(&[s], 128, 2);
        assert_eq!(
            out.streams[0].beats,
            Some(vec![
                Beat { count: 4, data: vec![1, 2, 3, 4], last: false },
                Beat { count: 0, data: vec![0; 4], last: true },
            ])
        );
    }

    /// A compress stream whose last vector overflows: f = 3, c = 4 at n 4,
    /// so DQ takes a full beat and the last beat (count 3) at one edge; the
    /// next compress-stream result then waits a cycle for DQ to hold at most
    /// one beat. Width 128, 32-bit elements, latency 2.
    #[test]
    fn two_beats_at_one_edge_hold_the_next_result() {
        let all = [1u8; 4];
        let three = [1u8, 1, 1, 0];
        let a = compress(32, vec![cv(&[1, 2, 3, 0], Some(&three)), cv(&[4, 5, 6, 7], Some(&all))]);
        let b = compress(32, vec![cv(&[8, 9, 10, 11], Some(&all))]);
        let out = run_streams(&[a, b], 128, 2);
        assert_eq!(
            out.streams[0].beats,
            Some(vec![
                Beat { count: 4, data: vec![1, 2, 3, 4], last: false },
                Beat { count: 3, data: vec![5, 6, 7, 0], last: true },
            ])
        );
        assert_eq!(out.streams[1].beats, Some(vec![Beat { count: 4, data: vec![8, 9, 10, 11], last: true }]));
        // In at 0, 1, 2; issue at 1, 2, 3; move at 2, 3, 4; op0 out at 4
        // (f 3); op1 out at 5, beats A and B into DQ (2). Op2 is ready from
        // cycle 6, but cycle 6 starts with DQ 2 > 1: it waits; A leaves at
        // 6 (DQ 1). Op2 out at 7, its full last beat C into DQ while B
        // leaves (DQ 1); C out at 8.
        assert_eq!(out.cycles, 8);
        // The same with op2 a vector-mode operation, not held: op2 out at
        // 6, beats out at 6, 7.
        let ops = [
            t(Unit::CompressStream, 4, 3, false),
            t(Unit::CompressStream, 4, 4, true),
            t(Unit::Vector, 4, 4, false),
        ];
        assert_eq!(simulate(&ops, 0, 2), 7);
        // A vector-mode operation behind the held one waits with it (results
        // leave in order): moved at 5 (the vector unit holds op1 and op2
        // then), ready at 7, out at 8 behind op2; C out at 8 too.
        let ops = [
            t(Unit::CompressStream, 4, 3, false),
            t(Unit::CompressStream, 4, 4, true),
            t(Unit::CompressStream, 4, 4, true),
            t(Unit::Vector, 4, 0, false),
        ];
        assert_eq!(simulate(&ops, 0, 2), 8);
        // At latency 1 (2 credits): issues at 1, 2, 3, 4, moves at 2, 3, 4,
        // 5 (each finds one op in the vector unit); op0 out at 3, op1 at 4
        // (DQ 2); op2 held in cycle 5 while A leaves, out at 6 (C in, B out:
        // DQ 1); op3 out at 7, and C at 7.
        assert_eq!(simulate(&ops, 0, 1), 7);
    }

    /// The vector unit full (L + 1 ops inside while a compress-stream result
    /// is held): R keeps its operation, nothing issues, and IQ fills.
    /// Latency 1 (2 credits), n 4.
    #[test]
    fn a_full_vector_unit_holds_r_and_iq() {
        let mut ops = vec![
            t(Unit::CompressStream, 4, 3, false),
            t(Unit::CompressStream, 4, 4, true),
            t(Unit::CompressStream, 4, 4, true),
        ];
        ops.extend([t(Unit::Vector, 4, 1, false); 5]);
        // op0..op6 in at 0..6, issue at 1..5, move at 2..5. Op0 out at 3
        // (f 3), op1 at 4 (beats A, B: DQ 2). Cycle 5: op2 held, A out,
        // op3 moves (the vector unit: op2, op3 = 2, full). Cycle 6: no
        // credit, so op4 stays in R and op5 does not issue; op2 out (C in,
        // B out); op6 in (IQ: op5, op6 = 2). Cycle 7: in_ready low (op7
        // waits); op3 out, C out; op4 moves, op5 issues. 8: op7 in, op4
        // out, op5 moves, op6 issues. 9: op5 out, op6 moves, op7 issues.
        // 10: op6 out, op7 moves. 11: op7 out.
        assert_eq!(simulate(&ops, 0, 1), 11);
    }

    /// An expand stream where pb + c > n: the vector takes two dense beats.
    /// Width 64, 16-bit elements (n 4), latency 1.
    #[test]
    fn expand_across_two_beats() {
        let s = expand(16, vec![ev(&[1, 1, 1, 0]), ev(&[1, 1, 1, 0]), ev(&[0, 1, 0, 1])], vec![1, 2, 3, 4, 5, 6, 7, 8]);
        let out = run_streams(&[s], 64, 1);
        let dst: Vec<_> = out.streams[0].results.iter().map(|r| r.dst.clone()).collect();
        assert_eq!(dst, vec![vec![1, 2, 3, 0], vec![4, 5, 6, 0], vec![0, 7, 0, 8]]);
        assert_eq!(out.streams[0].beats, None);
        // Beats in at 0, 1. Op0 in at 0, issues at 1 (DB 1, pb 0 -> 3). Op1
        // at cycle 2: 3 + 3 > 4 with DB 2, and R empties (op0 moves at 2):
        // issues at 2 (head dropped, pb 2, DB 1). Op2 issues at 3 (2 + 2 <=
        // 4: head dropped, pb 0, DB 0). Moves at 2, 3, 4; out at 3, 4, 5.
        assert_eq!(out.cycles, 5);
        // The same trace through the timing alone.
        let ops = [
            t(Unit::ExpandStream, 4, 3, false),
            t(Unit::ExpandStream, 4, 3, false),
            t(Unit::ExpandStream, 4, 2, true),
        ];
        assert_eq!(simulate(&ops, 2, 1), 5);
    }

    /// The rest of a partly used beat is dropped at `last`: the next expand
    /// stream starts at the next beat, and straddles it.
    #[test]
    fn expand_stream_starts_at_the_next_beat() {
        let a = expand(16, vec![ev(&[1, 1, 1, 0])], vec![1, 2, 3]);
        let b = expand(16, vec![ev(&[1, 1, 1, 0]), ev(&[1, 1, 0, 0])], vec![5, 6, 7, 8, 9]);
        let out = run_streams(&[a, b], 64, 1);
        let dst: Vec<_> = out.streams.iter().flat_map(|s| s.results.iter().map(|r| r.dst.clone())).collect();
        assert_eq!(dst, vec![vec![1, 2, 3, 0], vec![5, 6, 7, 0], vec![8, 9, 0, 0]]);
        // Beats (1 for a, 2 for b) in at 0, 1, 2. A0 issues at 1 (last:
        // beat 0 dropped, pb 0; beat 1 in: DB 1), B0 at 2 (pb 3; beat 2 in:
        // DB 2 from cycle 3), B1 at 3 (3 + 2 > 4, DB 2: both dropped).
        // Moves at 2, 3, 4; out at 3, 4, 5.
        assert_eq!(out.cycles, 5);
    }

    /// A vector-mode operation between stream operations takes its credit
    /// and its place in order but neither DB nor DQ.
    #[test]
    fn vector_op_between_stream_ops() {
        let ops = [
            t(Unit::ExpandStream, 8, 5, false),
            t(Unit::Vector, 8, 8, false),
            t(Unit::CompressStream, 8, 8, true),
            t(Unit::Vector, 8, 3, false),
            t(Unit::ExpandStream, 8, 3, true),
        ];
        // Latency 2, one dense beat: in at 0..4, issue at 1..5 (op4: 5 + 3
        // <= 8 on the beat still in DB), move at 2..6 (the vector unit
        // holds 2 ops at each), out at 4..8; op2's full last beat enters DQ
        // at 6 and leaves at 7.
        assert_eq!(simulate(&ops, 1, 2), 8);
        // Op4 taking 4 (5 + 4 > 8) needs the second beat, in since edge 1.
        let mut ops2 = ops;
        ops2[4].count = 4;
        assert_eq!(simulate(&ops2, 2, 2), 8);
        // Latency 1: move at 2..6 (1 op inside at each), out at 3..7, the
        // beat at 6.
        assert_eq!(simulate(&ops, 1, 1), 7);
        // Op2's beat is not last if op2 is not, and a last op with nothing
        // waiting still sends an empty last beat: two beats, out at 7 and 8
        // (latency 2: op2 out at 6, op3 (now compress-stream, last, c 0)
        // out at 7 with DQ 1 at the start of the cycle, its beat at 8, as
        // op4).
        let mut ops3 = ops;
        ops3[2].last = false;
        ops3[3] = t(Unit::CompressStream, 8, 0, true);
        assert_eq!(simulate(&ops3, 1, 2), 8);
    }

    /// Vector-mode operations alone on the stream unit: two more cycles
    /// than in vector mode (the input queue and the issue register), so
    /// n_ops + latency + 1: in at 0..4, issue 1..5, move 2..6, out at
    /// L + 2 .. L + 6.
    #[test]
    fn vector_ops_alone() {
        let ops = [t(Unit::Vector, 8, 1, false); 5];
        for l in 1..=4 {
            assert_eq!(simulate(&ops, 0, l), 5 + l as u64 + 1);
        }
    }

    /// Back-to-back compress-stream vectors that each fill a beat: DQ
    /// takes one and gives one per edge, nothing waits.
    #[test]
    fn full_beats_stream_without_stalls() {
        let v = cv(&[1; 8], None);
        let s = compress(16, vec![v; 10]);
        // Issue 1..10, move 2..11, out 4..13, beats 5..14.
        assert_eq!(stream_cycles(&[s], 128, 2), 14);
    }

    #[test]
    fn parse_errors() {
        // `streams` with stream mode off: the one documented message.
        assert_eq!(
            messages(parse_run_input(&json!({"streams": []}), 128, false)),
            vec!["input `streams` = (given): must be absent: stream mode needs --param stream=true"]
        );
        // The vector-mode messages are unchanged with stream mode off.
        assert_eq!(messages(parse_run_input(&json!([]), 128, false)), vec!["input `(file)` = []: must be a JSON object with an `ops` list"]);
        assert_eq!(messages(parse_run_input(&json!({}), 128, false)), vec!["input `ops` = (missing): must be a list of operations"]);
        assert_eq!(
            messages(parse_run_input(&json!({"ops": [], "extra": 1}), 128, false)),
            vec!["input `extra` = (given): must be absent: the only key is `ops`"]
        );
        // Both forms, neither, unknown key (stream on).
        assert_eq!(
            messages(parse_run_input(&json!({"ops": [], "streams": [], "x": 0}), 128, true)),
            vec![
                "input `x` = (given): must be absent: the only key is `ops` or `streams`",
                "input `streams` = (given): must be absent when `ops` is given: the file has one of `ops` and `streams`",
            ]
        );
        assert_eq!(
            messages(parse_run_input(&json!({}), 128, true)),
            vec!["input `ops` = (missing): must be a list of operations, or `streams` a list of streams"]
        );
        assert_eq!(messages(parse_run_input(&json!({"streams": 3}), 128, true)), vec!["input `streams` = 3: must be a list of streams"]);
        // Every violation, in the documented order.
        let input = json!({"streams": [
            7,
            {"op": "squash", "element_bits": 12, "zeroing": 1, "vectors": [], "y": 0},
            {"op": "expand_stream", "element_bits": 64,
             "vectors": [{"src": [1, 2], "mask": [1, 2], "z": 0}, {"old": [1]}, 5],
             "dense": "x"},
            {"op": "compress_stream", "element_bits": 64, "vectors": [{"mask": [1, 1]}, {"src": [-1, 0, 0]}], "dense": []},
            {"op": "expand_stream", "element_bits": 8, "dense": [1, 256, 3],
             "vectors": [{"mask": [1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1]}]},
            {"element_bits": 32, "vectors": {}},
        ]});
        assert_eq!(
            messages(parse_run_input(&input, 128, true)),
            vec![
                "input `streams[0]` = 7: must be an object",
                "input `streams[1].y` = (given): must be absent: keys are op, element_bits, zeroing, vectors, dense",
                "input `streams[1].op` = \"squash\": must be \"compress_stream\" or \"expand_stream\"",
                "input `streams[1].element_bits` = 12: must be 8, 16, 32 or 64",
                "input `streams[1].zeroing` = 1: must be true or false",
                "input `streams[1].vectors` = a list of 0 values: must be a list of 1 to 4096 vector objects",
                "input `streams[2].vectors[0].z` = (given): must be absent: keys are src, mask, old",
                "input `streams[2].vectors[0].src` = (given): must be absent: an expand stream takes its source from `dense`",
                "input `streams[2].vectors[0].mask[1]` = 2: must be bits from 0 to 1",
                "input `streams[2].vectors[1].mask` = (missing): must be a list of 2 bits",
                "input `streams[2].vectors[1].old` = a list of 1 values: must be a list of 2 values (width 128 / element_bits 64)",
                "input `streams[2].vectors[2]` = 5: must be an object",
                "input `streams[2].dense` = \"x\": must be a list of unsigned integers",
                "input `streams[3].vectors[0].src` = (missing): must be a list of 2 unsigned integers",
                "input `streams[3].vectors[1].src` = a list of 3 values: must be a list of 2 values (width 128 / element_bits 64)",
                "input `streams[3].dense` = (given): must be absent: only an expand stream has `dense`",
                "input `streams[4].dense[1]` = 256: must be unsigned integers from 0 to 255",
                "input `streams[5].op` = (missing): must be \"compress_stream\" or \"expand_stream\"",
                "input `streams[5].vectors` = {}: must be a list of 1 to 4096 vector objects",
            ]
        );
        // `dense` length, known when every mask is good; missing `dense`.
        let input = json!({"streams": [
            {"op": "expand_stream", "element_bits": 64, "vectors": [{"mask": [1, 1]}, {"mask": [0, 1]}], "dense": [1, 2]},
            {"op": "expand_stream", "element_bits": 64, "vectors": [{"mask": [1, 0]}]},
            {"op": "compress_stream", "element_bits": 64, "vectors": vec![json!({"src": [0, 0]}); 4097]},
        ]});
        assert_eq!(
            messages(parse_run_input(&input, 128, true)),
            vec![
                "input `streams[0].dense` = a list of 2 values: must be a list of 3 values (the ones of the vectors' masks)",
                "input `streams[1].dense` = (missing): must be a list of 1 unsigned integers",
                "input `streams[2].vectors` = a list of 4097 values: must be a list of 1 to 4096 vector objects",
            ]
        );
        // A good file parses to the structs.
        let input = json!({"streams": [{"op": "compress_stream", "element_bits": 32, "zeroing": true,
            "vectors": [{"src": [1, 0, 2, 0], "old": [5, 5, 5, 5]}]}]});
        let RunInput::Streams(s) = parse_run_input(&input, 128, true).unwrap() else { panic!() };
        assert_eq!(
            s,
            vec![Stream {
                op: StreamKind::CompressStream,
                element_bits: 32,
                zeroing: true,
                vectors: vec![StreamVector { src: Some(vec![1, 0, 2, 0]), mask: None, old: Some(vec![5; 4]) }],
                dense: vec![],
            }]
        );
    }
}
