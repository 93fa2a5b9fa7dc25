//! `gpurtl run arbiter` files (docs/arbiter.md "input" and "output"): the
//! input, checked with every violation reported; the output; and random
//! workloads for the testbench.

use super::{db, Outcome, ReadRequest, Region, Workload, WriteBurst};
use crate::models::{err, parse_hex, shown, InputError, InputErrors, Violations};
use crate::rng::Rng;
use gpurtl_params::arbiter::ArbiterParams;
use num_bigint::BigUint;
use serde_json::{json, Value};

/// `2^A`, the address space's size in bytes.
fn space(p: &ArbiterParams) -> u128 {
    1u128 << p.addr_bits
}

/// A string of hex digits, two a byte (either case); `""` is no bytes.
// spec: an empty region (`"bytes": ""`) is allowed; it covers nothing.
fn parse_bytes(v: &Value) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// Lower-case hex, two digits a byte.
fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A byte range of the input, for the overlap rules: (path, start, end).
pub(super) type Span = (String, u128, u128);

fn overlaps(a: &Span, b: &Span) -> bool {
    a.1 < a.2 && b.1 < b.2 && a.1 < b.2 && b.1 < a.2
}

/// Parse and check an input file (docs/arbiter.md "`gpurtl run arbiter`
/// input"). Every violation is reported, in this order: the keys,
/// `latency`, `memory` (region by region), `reads`, `writes` (request by
/// request), then the overlap rules (regions, then each burst against the
/// bursts before it and every read).
pub fn parse_input(v: &Value, p: &ArbiterParams) -> Result<Workload, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with keys latency, memory, reads, writes"))));
    };
    for k in obj.keys() {
        if !["latency", "memory", "reads", "writes"].contains(&k.as_str()) {
            e.push(err(k.as_str(), "(given)", "absent: keys are latency, memory, reads, writes"));
        }
    }

    // latency
    let latency = e.take(match obj.get("latency") {
        None => Ok(4),
        Some(x) => match x.as_u64() {
            Some(l) if (1..=1000).contains(&l) => Ok(l as u32),
            _ => Err(err("latency", shown(x), "an integer from 1 to 1000")),
        },
    });

    // spec: every key is optional; a missing `reads` or `writes` is no
    // request at all (the spec says only `latency` and `memory` are).
    // memory
    let mut memory = Vec::new();
    let mut regions: Vec<Span> = Vec::new();
    if let Some(m) = obj.get("memory") {
        match m.as_array() {
            None => e.push(err("memory", shown(m), "a list of regions {\"addr\", \"bytes\"}")),
            Some(l) => {
                for (i, x) in l.iter().enumerate() {
                    let at = format!("memory[{i}]");
                    if let Some(r) = parse_region(&mut e, &at, x, p) {
                        regions.push((at, r.addr as u128, r.addr as u128 + r.bytes.len() as u128));
                        memory.push(r);
                    }
                }
            }
        }
    }

    // reads
    let mut reads: Vec<Vec<ReadRequest>> = vec![Vec::new(); p.reads as usize];
    let mut read_spans: Vec<Span> = Vec::new();
    if let Some(rv) = obj.get("reads") {
        let allowed = format!("a list of at most {} lists of read requests (one a read source)", p.reads);
        match rv.as_array() {
            None => e.push(err("reads", shown(rv), allowed)),
            Some(a) if a.len() > p.reads as usize => e.push(err("reads", format!("a list of {} lists", a.len()), allowed)),
            Some(a) => {
                for (k, lv) in a.iter().enumerate() {
                    let Some(l) = lv.as_array() else {
                        e.push(err(format!("reads[{k}]"), shown(lv), "a list of read requests {\"addr\", \"beats\"}"));
                        continue;
                    };
                    for (i, x) in l.iter().enumerate() {
                        let at = format!("reads[{k}][{i}]");
                        if let Some(r) = parse_read(&mut e, &at, x, p) {
                            let start = r.addr as u128;
                            read_spans.push((at, start, start + r.beats as u128 * db(p) as u128));
                            reads[k].push(r);
                        }
                    }
                }
            }
        }
    }

    // writes
    let mut writes: Vec<Vec<WriteBurst>> = vec![Vec::new(); p.writes as usize];
    let mut write_spans: Vec<Span> = Vec::new();
    if let Some(wv) = obj.get("writes") {
        let allowed = format!("a list of at most {} lists of write bursts (one a write source)", p.writes);
        match wv.as_array() {
            None => e.push(err("writes", shown(wv), allowed)),
            Some(a) if a.len() > p.writes as usize => e.push(err("writes", format!("a list of {} lists", a.len()), allowed)),
            Some(a) => {
                for (k, lv) in a.iter().enumerate() {
                    let Some(l) = lv.as_array() else {
                        e.push(err(format!("writes[{k}]"), shown(lv), "a list of write bursts {\"addr\", \"data\", \"strb\"}"));
                        continue;
                    };
                    for (i, x) in l.iter().enumerate() {
                        let at = format!("writes[{k}][{i}]");
                        if let Some(b) = parse_write(&mut e, &at, x, p) {
                            let start = b.addr as u128;
                            write_spans.push((at, start, start + b.data.len() as u128 * db(p) as u128));
                            writes[k].push(b);
                        }
                    }
                }
            }
        }
    }

    // spec: a burst's "written byte range" is its whole range, `addr ..
    // addr + beats*DB`, strobes or not, and two bursts of one source may
    // not overlap either (the rule says "another write's").
    // Overlaps: regions with each other; each burst with the bursts before
    // it and with every read.
    let show = |s: &Span| format!("bytes {:#x}..{:#x}", s.1, s.2);
    let report = |pairs: Vec<(&Span, &Span)>| -> Vec<InputError> {
        pairs.into_iter().map(|(r, q)| err(r.0.as_str(), show(r), format!("not overlapping {} ({})", q.0, show(q)))).collect()
    };
    let (first, total) = overlap_pairs(&regions, &[], Violations::PER_LIST);
    e.counted("memory", report(first), total);
    let (first, total) = overlap_pairs(&write_spans, &read_spans, Violations::PER_LIST);
    e.counted("writes", report(first), total);

    let latency = latency.unwrap_or(4);
    e.finish(|| Workload { latency, memory, reads, writes })
}

/// The overlapping pairs of spans: each span of `list` with the spans
/// before it in `list`, then with every span of `others`. The first `keep`
/// pairs in that order, and how many there are in all, in O(n log n) (an
/// input of 500,000 requests is read in a second, not an hour).
pub(super) fn overlap_pairs<'a>(list: &'a [Span], others: &'a [Span], keep: usize) -> (Vec<(&'a Span, &'a Span)>, usize) {
    let nonempty = |l: &'a [Span]| -> Vec<&'a Span> { l.iter().filter(|s| s.1 < s.2).collect() };
    let (a, b) = (nonempty(list), nonempty(others));
    // Pairs (x, y), x of `xs`, y of `ys`, that overlap: all pairs less
    // those with x before y or y before x (for non-empty spans, never both).
    let cross = |xs: &[&Span], ys: &[&Span]| -> usize {
        let mut ends: Vec<u128> = xs.iter().map(|s| s.2).collect();
        ends.sort_unstable();
        let mut starts: Vec<u128> = xs.iter().map(|s| s.1).collect();
        starts.sort_unstable();
        let apart: usize = ys.iter().map(|y| ends.partition_point(|e| *e <= y.1) + (starts.len() - starts.partition_point(|s| *s < y.2))).sum();
        xs.len() * ys.len() - apart
    };
    let total = (cross(&a, &a) - a.len()) / 2 + cross(&a, &b);
    let mut first = Vec::new();
    if total == 0 || keep == 0 {
        return (first, total);
    }
    // Which spans of `list` overlap an earlier one or one of `others`: the
    // spans before, by start, in a Fenwick tree of their largest end.
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by_key(|&i| list[i].1);
    let starts: Vec<u128> = order.iter().map(|&i| list[i].1).collect();
    let mut rank = vec![0; list.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    let mut tree = vec![0u128; list.len() + 1];
    let mut o: Vec<&Span> = b.clone();
    o.sort_by_key(|s| s.1);
    let mut o_max = Vec::with_capacity(o.len());
    for s in &o {
        o_max.push(o_max.last().copied().unwrap_or(0).max(s.2));
    }
    for (i, s) in list.iter().enumerate() {
        if s.1 >= s.2 {
            continue;
        }
        // Spans starting before this one ends, ending after it starts.
        let mut k = starts.partition_point(|x| *x < s.2);
        let mut end = 0;
        while k > 0 {
            end = end.max(tree[k]);
            k &= k - 1;
        }
        let k = o.partition_point(|x| x.1 < s.2);
        if end > s.1 || (k > 0 && o_max[k - 1] > s.1) {
            for q in list[..i].iter().chain(others) {
                if overlaps(s, q) {
                    first.push((s, q));
                    if first.len() == keep {
                        return (first, total);
                    }
                }
            }
        }
        let mut k = rank[i] + 1;
        while k < tree.len() {
            tree[k] = tree[k].max(s.2);
            k += k & k.wrapping_neg();
        }
    }
    (first, total)
}

/// `"an integer multiple of DB from 0 to 2^A - DB"`: a beat address.
fn addr_allowed(p: &ArbiterParams) -> String {
    format!("an integer multiple of {} from 0 to {}", db(p), space(p) - db(p) as u128)
}

/// A beat address, or the violation.
fn beat_addr(p: &ArbiterParams, field: String, x: Option<&Value>) -> Result<u64, InputError> {
    match x {
        None => Err(err(field, "(missing)", addr_allowed(p))),
        Some(a) => match a.as_u64() {
            Some(n) if (n as u128) < space(p) && n.is_multiple_of(db(p)) => Ok(n),
            _ => Err(err(field, shown(a), addr_allowed(p))),
        },
    }
}

/// Keys of an object outside `keys`, each a violation.
fn unknown_keys(e: &mut Violations, at: &str, o: &serde_json::Map<String, Value>, keys: &[&str]) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(format!("{at}.{k}"), "(given)", format!("absent: keys are {}", keys.join(", "))));
        }
    }
}

/// One memory region `{addr, bytes}`.
fn parse_region(e: &mut Violations, at: &str, x: &Value, p: &ArbiterParams) -> Option<Region> {
    let Some(o) = x.as_object() else {
        e.push(err(at, shown(x), "an object"));
        return None;
    };
    unknown_keys(e, at, o, &["addr", "bytes"]);
    let addr_allowed = format!("an integer from 0 to {}", space(p) - 1);
    let addr = e.take(match o.get("addr") {
        None => Err(err(format!("{at}.addr"), "(missing)", addr_allowed)),
        Some(a) => match a.as_u64() {
            Some(n) if (n as u128) < space(p) => Ok(n),
            _ => Err(err(format!("{at}.addr"), shown(a), addr_allowed)),
        },
    });
    let bytes_allowed = "a string of hex digits, two a byte, in address order";
    let bytes = e.take(match o.get("bytes") {
        None => Err(err(format!("{at}.bytes"), "(missing)", bytes_allowed)),
        Some(b) => parse_bytes(b).ok_or_else(|| err(format!("{at}.bytes"), shown(b), bytes_allowed)),
    });
    let (addr, bytes) = (addr?, bytes?);
    let room = space(p) - addr as u128;
    if bytes.len() as u128 > room {
        e.push(err(
            format!("{at}.bytes"),
            format!("{} bytes", bytes.len()),
            format!("at most {room} bytes at addr {addr:#x} (a region ends within the {}-bit address space)", p.addr_bits),
        ));
        return None;
    }
    Some(Region { addr, bytes })
}

/// One read request `{addr, beats}`.
fn parse_read(e: &mut Violations, at: &str, x: &Value, p: &ArbiterParams) -> Option<ReadRequest> {
    let Some(o) = x.as_object() else {
        e.push(err(at, shown(x), "an object"));
        return None;
    };
    unknown_keys(e, at, o, &["addr", "beats"]);
    let addr = e.take(beat_addr(p, format!("{at}.addr"), o.get("addr")));
    let beats_allowed = format!("an integer from 1 to {}", p.max_burst);
    let beats = e.take(match o.get("beats") {
        None => Ok(1),
        Some(b) => match b.as_u64() {
            Some(n) if (1..=p.max_burst as u64).contains(&n) => Ok(n as u32),
            _ => Err(err(format!("{at}.beats"), shown(b), beats_allowed)),
        },
    });
    let (addr, beats) = (addr?, beats?);
    let room = (space(p) - addr as u128) / db(p) as u128;
    if beats as u128 > room {
        e.push(err(
            format!("{at}.beats"),
            beats,
            format!("at most {room} at addr {addr:#x} (a request ends within the {}-bit address space)", p.addr_bits),
        ));
        return None;
    }
    Some(ReadRequest { addr, beats })
}

/// One write burst `{addr, data, strb}`.
fn parse_write(e: &mut Violations, at: &str, x: &Value, p: &ArbiterParams) -> Option<WriteBurst> {
    let Some(o) = x.as_object() else {
        e.push(err(at, shown(x), "an object"));
        return None;
    };
    unknown_keys(e, at, o, &["addr", "data", "strb"]);
    let addr = e.take(beat_addr(p, format!("{at}.addr"), o.get("addr")));

    let data_at = format!("{at}.data");
    let data_allowed = format!("a list of 1 to {} hex strings \"0x...\" of at most {} bits", p.max_burst, p.data_bits);
    let beat_allowed = format!("a hex string \"0x...\" of at most {} bits", p.data_bits);
    // The beat count, when `data` is a list (its elements may be bad).
    let mut n: Option<usize> = None;
    let data = match o.get("data") {
        None => {
            e.push(err(&data_at, "(missing)", data_allowed));
            None
        }
        Some(d) => match d.as_array() {
            None => {
                e.push(err(&data_at, shown(d), data_allowed));
                None
            }
            Some(l) if l.is_empty() || l.len() > p.max_burst as usize => {
                e.push(err(&data_at, format!("a list of {} values", l.len()), data_allowed));
                None
            }
            Some(l) => {
                n = Some(l.len());
                e.each(&data_at, l, |j, x| match parse_hex(x) {
                    Some(v) if v.bits() <= p.data_bits as u64 => Ok(v),
                    _ => Err(err(format!("{data_at}[{j}]"), shown(x), beat_allowed.as_str())),
                })
            }
        },
    };

    let strb_at = format!("{at}.strb");
    let strb_allowed = match n {
        Some(n) => format!("a list of {n} hex strings \"0x...\" of at most {} bits, one a beat of data", db(p)),
        None => format!("a list of hex strings \"0x...\" of at most {} bits, one a beat of data", db(p)),
    };
    let one_allowed = format!("a hex string \"0x...\" of at most {} bits", db(p));
    let strb = match o.get("strb") {
        None => n.map(|n| vec![(BigUint::from(1u8) << db(p)) - 1u8; n]),
        Some(s) => match s.as_array() {
            None => {
                e.push(err(&strb_at, shown(s), strb_allowed));
                None
            }
            Some(l) if n.is_some_and(|n| n != l.len()) => {
                e.push(err(&strb_at, format!("a list of {} values", l.len()), strb_allowed));
                None
            }
            Some(l) => e.each(&strb_at, l, |j, x| match parse_hex(x) {
                Some(v) if v.bits() <= db(p) => Ok(v),
                _ => Err(err(format!("{strb_at}[{j}]"), shown(x), one_allowed.as_str())),
            }),
        },
    };

    let (addr, data, strb) = (addr?, data?, strb?);
    let room = (space(p) - addr as u128) / db(p) as u128;
    if data.len() as u128 > room {
        e.push(err(
            data_at,
            format!("a list of {} beats", data.len()),
            format!("a list of at most {room} beats at addr {addr:#x} (a burst ends within the {}-bit address space)", p.addr_bits),
        ));
        return None;
    }
    Some(WriteBurst { addr, data, strb })
}

/// The output file (docs/arbiter.md "`gpurtl run arbiter` output").
pub fn output_json(p: &ArbiterParams, o: &Outcome) -> Value {
    let digits = (p.data_bits / 4) as usize;
    let reads: Vec<Value> = o
        .reads
        .iter()
        .map(|l| l.iter().map(|b| Value::String(format!("0x{:0>digits$}", b.to_str_radix(16)))).collect())
        .collect();
    let memory: Vec<Value> = o.memory.iter().map(|r| json!({"addr": r.addr, "bytes": hex_bytes(&r.bytes)})).collect();
    let c = &o.counters;
    json!({
        "reads": reads,
        "writes": o.writes,
        "memory": memory,
        "cycles": o.cycles,
        "counters": {
            "read_requests": c.read_requests,
            "read_beats": c.read_beats,
            "write_bursts": c.write_bursts,
            "write_beats": c.write_beats,
            "split_bursts": c.split_bursts,
        },
    })
}

/// A random workload within the input rules, with at most `requests`
/// requests (or bursts) a source, aimed at the corners: bursts across a 4 KB
/// boundary (met by `out = native` too, where they are not split) and at the
/// top of the address space; sources of one-beat bursts, of `max_burst`
/// bursts, or of both; every source busy at once (most runs), or one read
/// and one write source alone, so that `read_buffer` and `write_outstanding`
/// are reached; partial and empty strobes; memory regions under most reads
/// and bursts (strobed-off bytes show them); latency from 1 to 40.
pub fn random_workload(rng: &mut Rng, p: &ArbiterParams, requests: usize) -> Workload {
    let db = db(p) as u128;
    let space = space(p);
    let page = 4096 / db; // beats in 4 KB (DB <= 128)
    let mb = p.max_burst as u128;
    let (nr, nw) = (p.reads as usize, p.writes as usize);

    let latency = match rng.below(4) {
        0 => 1,
        1 => 4,
        2 => 1 + rng.below(12) as u32,
        _ => 1 + rng.below(40) as u32,
    };
    // A window of the address space, in beats: dense enough that requests
    // meet 4 KB boundaries and each other's neighbourhood.
    let want = ((nr + nw).max(1) as u128 * requests.max(1) as u128 * mb * 2).max(3 * page);
    let span = want.min(space / db);
    let base = match rng.below(4) {
        0 if space / db > span => space / db - span, // the top of the space
        1 if space / db > span * 4 => (rng.below(((space / db - span) / page).min(1 << 40) as u64) as u128) * page,
        _ => 0,
    };

    // Most runs keep every source busy; some give all the requests to one
    // read and one write source (which then meets its caps alone); the
    // rest are any mix.
    let mode = rng.below(10);
    let (solo_r, solo_w) = (rng.below(nr.max(1) as u64) as usize, rng.below(nw.max(1) as u64) as usize);
    let count = |rng: &mut Rng, solo: bool| -> usize {
        match mode {
            _ if requests == 0 => 0,
            0..=5 => requests.div_ceil(2) + rng.below((requests / 2 + 1) as u64) as usize,
            6 | 7 => usize::from(solo) * requests,
            _ => rng.below(requests as u64 + 1) as usize,
        }
    };
    // Each source's style: bursts of any length, one-beat bursts only (many
    // in flight: the write cap), `max_burst` only (the read cap).
    let style = |rng: &mut Rng| rng.below(4);
    let beats = |rng: &mut Rng, style: u64| -> u128 {
        match (style, rng.below(4)) {
            (1, _) | (0, 0) => 1,
            (2, _) | (0, 1) => mb,
            _ => 1 + rng.below(mb as u64) as u128,
        }
    };
    // A start beat for `n` beats in the window: across a 4 KB boundary, at
    // the window's end, or anywhere.
    let start = |rng: &mut Rng, n: u128| -> Option<u128> {
        if n > span {
            return None;
        }
        let s = match rng.below(5) {
            0 | 1 if n >= 2 => {
                let pages = (base + span) / page - base.div_ceil(page);
                let b = (base.div_ceil(page) + rng.below(pages.min(1 << 40) as u64 + 1) as u128) * page;
                b.checked_sub(1 + rng.below((n - 1) as u64) as u128)?
            }
            2 => base + span - n,
            _ => base + rng.below((span - n + 1).min(1 << 62) as u64) as u128,
        };
        (s >= base && s + n <= base + span).then_some(s)
    };

    // Bursts first (apart from each other), then reads (apart from the
    // bursts); a request that finds no room in a few tries is left out.
    let mut taken: Vec<(u128, u128)> = Vec::new(); // written beat ranges
    let free = |taken: &[(u128, u128)], s: u128, n: u128| taken.iter().all(|&(a, b)| s + n <= a || b <= s);
    let mut writes: Vec<Vec<WriteBurst>> = vec![Vec::new(); nw];
    for (k, list) in writes.iter_mut().enumerate() {
        let st = style(rng);
        for _ in 0..count(rng, k == solo_w) {
            let n = beats(rng, st);
            for _ in 0..8 {
                let Some(s) = start(rng, n) else { continue };
                if !free(&taken, s, n) {
                    continue;
                }
                taken.push((s, s + n));
                let data = (0..n).map(|_| random_beat(rng, p.data_bits)).collect();
                let strb = (0..n).map(|_| random_strobes(rng, db as u32)).collect();
                list.push(WriteBurst { addr: (s * db) as u64, data, strb });
                break;
            }
        }
    }
    let mut reads: Vec<Vec<ReadRequest>> = vec![Vec::new(); nr];
    let mut read_ranges: Vec<(u128, u128)> = Vec::new();
    for (k, list) in reads.iter_mut().enumerate() {
        let st = style(rng);
        for _ in 0..count(rng, k == solo_r) {
            let n = beats(rng, st);
            for _ in 0..8 {
                let Some(s) = start(rng, n) else { continue };
                if !free(&taken, s, n) {
                    continue;
                }
                read_ranges.push((s, s + n));
                list.push(ReadRequest { addr: (s * db) as u64, beats: n as u32 });
                break;
            }
        }
    }

    // Memory: regions over most reads and bursts (a little wider at times),
    // apart from each other.
    let mut memory: Vec<Region> = Vec::new();
    let mut regions: Vec<(u128, u128)> = Vec::new(); // byte ranges
    for &(s, t) in taken.iter().chain(&read_ranges) {
        if !rng.chance(75) {
            continue;
        }
        let (mut a, mut b) = (s * db, t * db);
        if rng.chance(30) {
            a = a.saturating_sub(rng.below(2 * db as u64) as u128);
            b = (b + rng.below(2 * db as u64) as u128).min(space);
        }
        if regions.iter().all(|&(x, y)| b <= x || y <= a) {
            regions.push((a, b));
            let bytes = (a..b).map(|_| rng.below(256) as u8).collect();
            memory.push(Region { addr: a as u64, bytes });
        }
    }
    Workload { latency, memory, reads, writes }
}

/// A random `bits`-bit beat.
fn random_beat(rng: &mut Rng, bits: u32) -> BigUint {
    let bytes: Vec<u8> = (0..bits / 8).map(|_| rng.below(256) as u8).collect();
    BigUint::from_bytes_le(&bytes)
}

/// Random byte strobes of a `n`-byte beat: all, none, one byte or any.
fn random_strobes(rng: &mut Rng, n: u32) -> BigUint {
    let one = BigUint::from(1u8);
    match rng.below(10) {
        0..=4 => (one << n) - 1u8,
        5 => BigUint::default(),
        6 => one << rng.below(n as u64),
        _ => random_beat(rng, n.max(8)) & ((BigUint::from(1u8) << n) - 1u8),
    }
}
