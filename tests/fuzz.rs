//! Fuzz test of every input parser: random and mutated inputs, each read
//! in-process the way the command line reads it, must give either a value
//! or an error of exit status 2 whose message is a bounded number of lines;
//! never a panic, an abort or a hang.
//!
//! The parsers: each block's `gpurtl run` input (JSON; `cmdproc`'s run text
//! too), each block's parameter file and `--param` pairs, the PM4 and `cu`
//! assemblers and disassemblers, the hex dword files of `gpurtl disasm`, PNG
//! pictures (`--image`, then the texture unit's input with the picture),
//! `gpurtl prune`'s input and the job manifests.
//!
//! `GPURTL_FUZZ=N`: N inputs a parser (1,000 by default; the issue's long
//! run is 100,000). `GPURTL_FUZZ_SEED=S`: the seed (else the clock; printed).
//! `GPURTL_FUZZ_ONLY=NAME`: only the parsers whose name contains NAME.
//! `GPURTL_FUZZ_TRACE=1`: each input's parser and number on stderr before it
//! is read (an abort, which no test can catch, then names its input; rerun
//! with the same seed). Failing inputs are saved under `target/fuzz/`.

use gpurtl_gen::block::Block;
use gpurtl_gen::blocks;
use gpurtl_gen::error::Error;
use gpurtl_sim::rng::Rng;
use gpurtl_tests::repo;
use serde_json::{json, Map, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The system allocator with a ceiling on the bytes alive at once: an input
/// that makes a parser allocate past it aborts the test ("memory allocation
/// of N bytes failed") instead of taking the machine's memory.
struct Ceiling;

static LIVE: AtomicUsize = AtomicUsize::new(0);
const CEILING: usize = 3 << 30;

unsafe impl GlobalAlloc for Ceiling {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size() > CEILING {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + (new - l.size()) > CEILING {
            LIVE.fetch_sub(new - l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let q = System.realloc(p, l, new);
        if q.is_null() {
            if new > l.size() {
                LIVE.fetch_sub(new - l.size(), Ordering::Relaxed);
            }
        } else if new < l.size() {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Ceiling = Ceiling;

/// Lines an error message may have: the error lists are capped at 50
/// entries and a count line.
const MAX_LINES: usize = 60;

/// One input: its bytes (what a file would hold) and, for parameters, the
/// `--param` pairs.
#[derive(Clone, Default)]
struct Case {
    bytes: Vec<u8>,
    pairs: Vec<(String, String)>,
}

impl Case {
    /// The bytes as text, as the command line's reader gives them (it
    /// refuses a file that is not UTF-8; the fuzz test reads such bytes
    /// with the bad ones replaced instead, to reach the parser).
    fn as_text(&self) -> String {
        let s = String::from_utf8_lossy(&self.bytes).into_owned();
        s.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(s)
    }
}

/// What a parser gave that it must not: a message of exit status 1, an
/// empty message, too many lines. `Ok(true)`: the input was accepted.
fn judge(r: Result<(), Error>) -> Result<bool, String> {
    match r {
        Ok(()) => Ok(true),
        Err(Error::Failed(m)) => Err(format!("exit status 1 (must be 2 for a bad input): {m}")),
        Err(Error::Bad(m)) if m.trim().is_empty() => Err("an empty message".into()),
        Err(Error::Bad(m)) if m.lines().count() > MAX_LINES => {
            Err(format!("a message of {} lines (at most {MAX_LINES}): {}", m.lines().count(), m.lines().take(3).collect::<Vec<_>>().join(" / ")))
        }
        Err(Error::Bad(_)) => Ok(false),
        Err(Error::Usage(m)) => Err(format!("a usage error from a parser: {m}")),
    }
}

type Gen = Box<dyn Fn(&mut Rng) -> Case + Send + Sync>;
type Check = Box<dyn Fn(&Case) -> Result<bool, String> + Send + Sync>;

struct Parser {
    name: String,
    gen: Gen,
    check: Check,
}

// ---- random values ----

/// Numbers at and around the edges parsers check.
const NUMBERS: &[&str] = &[
    "0", "1", "-1", "2", "3", "4", "7", "8", "15", "16", "31", "32", "63", "64", "127", "128", "255", "256", "1023", "1024", "4095",
    "4096", "65535", "65536", "1000000", "1000000000", "2147483647", "2147483648", "4294967295", "4294967296", "9007199254740993",
    "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "-2147483648",
    "-9223372036854775808", "-9223372036854775809", "0.5", "-0.0", "1e9", "1e300", "-1e300", "1.0", "3.14", "1e-300",
    "123456789012345678901234567890",
];

/// Strings a parser may meet: names, file names, hex, junk.
const STRINGS: &[&str] = &[
    "", " ", "0x", "0x0", "0xffffffff", "0x100000000", "0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "0xg", "x", "r8", "rgba8", "r16",
    "clamp", "repeat", "mirror", "compress", "expand", "bilinear", "gather4", "conv_quad", "ld", "st", "cu", "pm4", "native", "axi4",
    "compress.s", "gemm.s", "conv.s", "copy2d.s", "/dev/null", "/dev/zero", ".", "..", "/", "nonexistent.s", "é", "\u{0}", "\u{feff}",
    "\u{10ffff}", "true", "null", "-1", "1e999", "NOP", "FILLER",
];

fn number(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => json!(rng.below(300) as i64 - 20),
        1 => json!(rng.next_u64() >> rng.below(64)),
        _ => {
            let n: &&str = rng.pick(NUMBERS);
            serde_json::from_str(n).unwrap_or(json!(0))
        }
    }
}

/// The largest generated input: the command line reads up to 16 MiB.
const MAX_CASE: usize = 4 << 20;

/// About the bytes of `v` as JSON, counted up to `cap`.
fn size_of(v: &Value, cap: usize) -> usize {
    fn go(v: &Value, n: &mut usize, cap: usize) {
        if *n > cap {
            return;
        }
        match v {
            Value::String(s) => *n += s.len() + 2,
            Value::Array(l) => {
                *n += 2;
                for x in l {
                    go(x, n, cap);
                    *n += 1;
                    if *n > cap {
                        return;
                    }
                }
            }
            Value::Object(m) => {
                *n += 2;
                for (k, x) in m {
                    *n += k.len() + 4;
                    go(x, n, cap);
                    if *n > cap {
                        return;
                    }
                }
            }
            _ => *n += 8,
        }
    }
    let mut n = 0;
    go(v, &mut n, cap);
    n
}

fn string(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 if rng.chance(10) => "a".repeat(rng.below(100_000) as usize),
        0 => "a".repeat(rng.below(100) as usize),
        1 => (0..rng.below(20)).map(|_| char::from_u32(rng.below(0x3000) as u32).unwrap_or('?')).collect(),
        _ => rng.pick(STRINGS).to_string(),
    }
}

/// A random JSON value of keys from `keys`, at most `depth` deep.
fn random_value(rng: &mut Rng, keys: &[String], depth: u32) -> Value {
    let k = if depth == 0 { rng.below(4) } else { rng.below(7) };
    match k {
        0 => number(rng),
        1 => json!(string(rng)),
        2 => [Value::Null, json!(true), json!(false)][rng.below(3) as usize].clone(),
        3 => number(rng),
        4 | 5 => {
            let n = rng.below(6);
            let mut m = Map::new();
            for _ in 0..n {
                let key = if keys.is_empty() || rng.chance(10) { string(rng) } else { rng.pick(keys).clone() };
                m.insert(key, random_value(rng, keys, depth - 1));
            }
            Value::Object(m)
        }
        _ => {
            let n = if rng.chance(5) { rng.below(3000) } else { rng.below(8) };
            let first = random_value(rng, keys, depth - 1);
            let same = rng.chance(50) || n > 8;
            let n = n.min((MAX_CASE / 4 / size_of(&first, MAX_CASE).max(1)) as u64);
            Value::Array((0..n).map(|_| if same { first.clone() } else { random_value(rng, keys, depth - 1) }).collect())
        }
    }
}

/// Every object key in `v`.
fn keys_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if !out.contains(k) {
                    out.push(k.clone());
                }
                keys_of(x, out);
            }
        }
        Value::Array(l) => l.iter().for_each(|x| keys_of(x, out)),
        _ => {}
    }
}

#[derive(Clone)]
enum Step {
    At(usize),
    Key(String),
}

/// The paths to the numbers in `v`.
fn number_paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Number(_) => out.push(at.clone()),
        Value::Array(l) => {
            for (i, x) in l.iter().enumerate() {
                at.push(Step::At(i));
                number_paths(x, at, out);
                at.pop();
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                at.push(Step::Key(k.clone()));
                number_paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// A random node of `v` (the root or below), to be changed in place.
fn random_node<'a>(rng: &mut Rng, v: &'a mut Value) -> &'a mut Value {
    let go = match v {
        Value::Object(m) => !m.is_empty() && rng.chance(75),
        Value::Array(l) => !l.is_empty() && rng.chance(75),
        _ => false,
    };
    if !go {
        return v;
    }
    match v {
        Value::Object(m) => {
            let i = rng.below(m.len() as u64) as usize;
            let k = m.keys().nth(i).cloned().unwrap_or_default();
            random_node(rng, m.get_mut(&k).expect("key exists"))
        }
        Value::Array(l) => {
            let i = rng.below(l.len() as u64) as usize;
            random_node(rng, &mut l[i])
        }
        _ => unreachable!(),
    }
}

/// One change to `v`: a value replaced (a number at an edge, another type),
/// a key removed, added or renamed, a list cut, grown or emptied.
fn mutate_value(rng: &mut Rng, v: &mut Value, keys: &[String]) {
    let node = random_node(rng, v);
    match (rng.below(10), &mut *node) {
        (0..=2, Value::Object(m)) if !m.is_empty() => {
            let i = rng.below(m.len() as u64) as usize;
            let k = m.keys().nth(i).cloned().unwrap_or_default();
            let x = m.remove(&k).unwrap_or(Value::Null);
            if rng.chance(50) && !keys.is_empty() {
                m.insert(rng.pick(keys).clone(), x);
            }
        }
        (3..=4, Value::Object(m)) => {
            let k = if keys.is_empty() || rng.chance(20) { string(rng) } else { rng.pick(keys).clone() };
            m.insert(k, random_value(rng, keys, 2));
        }
        (0..=1, Value::Array(l)) if !l.is_empty() => {
            let n = rng.below(l.len() as u64) as usize;
            l.truncate(n);
        }
        (2..=3, Value::Array(l)) if !l.is_empty() => {
            let i = rng.below(l.len() as u64) as usize;
            let x = l[i].clone();
            let n = if rng.chance(10) { rng.below(20_000) } else { 1 + rng.below(4) };
            let n = n.min((MAX_CASE / 4 / size_of(&x, MAX_CASE).max(1)) as u64);
            for _ in 0..n {
                l.push(x.clone());
            }
        }
        (4, Value::Array(l)) => l.push(random_value(rng, keys, 2)),
        (0..=4, Value::Number(n)) => {
            let x = n.as_i64().unwrap_or(0);
            *node = match rng.below(5) {
                0 => json!(x.wrapping_add(1)),
                1 => json!(x.wrapping_sub(1)),
                2 => json!(x.wrapping_neg()),
                3 => json!(x.wrapping_mul(1 << rng.below(40))),
                _ => number(rng),
            };
        }
        _ => *node = random_value(rng, keys, 2),
    }
}

/// Tokens inserted into text.
const TOKENS: &[&str] = &[
    ",", ":", "]", "}", "[", "{", "\"", "1e999", "-", "null", "\\u0000", "\u{feff}", "\\", "\\ud800", "0x", "=", "#", "\n", "\r\n", "\t",
    ";", "//", " ", "\u{0}", "é", "99999999999999999999999",
];

/// One change to text (a JSON file, assembler lines): a byte flipped, a
/// range deleted or doubled, a token inserted, the end cut off, deep
/// nesting, a key repeated.
fn mutate_bytes(rng: &mut Rng, b: &mut Vec<u8>, keys: &[String]) {
    let at = |rng: &mut Rng, b: &Vec<u8>| rng.below(b.len() as u64 + 1) as usize;
    match rng.below(9) {
        0 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        1 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.below(256) as u8;
        }
        2 => {
            let i = at(rng, b);
            let j = (i + 1 + rng.below(32) as usize).min(b.len());
            b.drain(i..j);
        }
        3 => {
            let i = at(rng, b);
            let j = (i + 1 + rng.below(64) as usize).min(b.len());
            let part = b[i..j].to_vec();
            b.splice(i..i, part);
        }
        4 => {
            let i = at(rng, b);
            b.truncate(i);
        }
        5 => {
            // Deep nesting around the whole, or at a point.
            let n = rng.below(400) as usize + 1;
            let (open, close) = if rng.chance(50) { ("[", "]") } else { ("{\"a\":", "}") };
            let i = at(rng, b);
            let mut out = b[..i].to_vec();
            out.extend(open.repeat(n).bytes());
            out.extend(b"1");
            out.extend(close.repeat(n).bytes());
            out.extend(&b[i..]);
            *b = out;
        }
        6 if !keys.is_empty() => {
            // A key repeated: after an object's `{`.
            let opens: Vec<usize> = b.iter().enumerate().filter(|(_, c)| **c == b'{').map(|(i, _)| i).collect();
            if !opens.is_empty() {
                let i = opens[rng.below(opens.len() as u64) as usize] + 1;
                let k = rng.pick(keys);
                let ins = format!("\"{k}\": {}, ", number(rng));
                b.splice(i..i, ins.bytes());
            }
        }
        _ => {
            let i = at(rng, b);
            let t = rng.pick(TOKENS);
            b.splice(i..i, t.bytes());
        }
    }
}

/// A JSON file: mutated from one of `examples` (a change or a few, then
/// sometimes bytes), or random from `keys`.
fn json_case(rng: &mut Rng, examples: &[Value], keys: &[String]) -> Case {
    let mut v = if examples.is_empty() || rng.chance(10) { random_value(rng, keys, 4) } else { rng.pick(examples).clone() };
    if rng.chance(40) {
        // Gently: numbers of a valid file changed, its shape kept (the
        // checks past the types: ranges, counts, sizes, overlaps).
        for _ in 0..1 + rng.below(3) {
            let mut leaves = Vec::new();
            number_paths(&v, &mut vec![], &mut leaves);
            if leaves.is_empty() {
                break;
            }
            let path = rng.pick(&leaves).clone();
            let mut node = &mut v;
            for step in &path {
                node = match (node, step) {
                    (Value::Array(l), Step::At(i)) => &mut l[*i],
                    (Value::Object(m), Step::Key(k)) => m.get_mut(k).expect("key exists"),
                    _ => unreachable!(),
                };
            }
            let x = node.as_i64().unwrap_or(0);
            *node = match rng.below(4) {
                0 => json!(x + 1),
                1 => json!(x - 1),
                _ => number(rng),
            };
        }
        return Case { bytes: serde_json::to_vec(&v).unwrap_or_default(), pairs: vec![] };
    }
    for _ in 0..1 + rng.below(4) {
        mutate_value(rng, &mut v, keys);
        if size_of(&v, MAX_CASE) > MAX_CASE {
            v = random_value(rng, keys, 2);
        }
    }
    let mut b = if rng.chance(50) { serde_json::to_vec(&v) } else { serde_json::to_vec_pretty(&v) }.unwrap_or_default();
    if rng.chance(35) {
        for _ in 0..1 + rng.below(3) {
            mutate_bytes(rng, &mut b, keys);
        }
    }
    Case { bytes: b, pairs: vec![] }
}

// ---- the parsers ----

fn read_examples(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    names.sort();
    for p in names {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        if keep(&name) {
            out.push((name, std::fs::read_to_string(&p).expect("example reads")));
        }
    }
    out
}

/// A block's parameter sets a run is read with: the defaults and presets.
fn param_sets(b: &dyn Block) -> Vec<Value> {
    let mut v = vec![b.defaults()];
    for (_, p) in b.presets() {
        if let Ok(r) = b.resolve(&[&p], &[]) {
            v.push(r);
        }
    }
    v
}

/// Read `text` as `gpurtl run BLOCK --input FILE` does: JSON, else (for a
/// block with a text form) text; then the block's input reader.
fn read_run_input(b: &dyn Block, params: &Value, text: &str, base: &Path) -> Result<(), Error> {
    let v = match gpurtl_gen::json::parse(text) {
        Ok(v) => v,
        Err(e) => {
            if text.trim_start().starts_with(['{', '[']) {
                return Err(Error::Bad(format!("not valid JSON: {e}")));
            }
            match b.text_input(params, text) {
                None => return Err(Error::Bad(format!("not valid JSON: {e}"))),
                Some(r) => r?,
            }
        }
    };
    b.check_input(params, &v, base)
}

fn run_input_parsers(out: &mut Vec<Parser>) {
    for b in blocks::all() {
        let name = b.name();
        let dir = repo().join("examples").join(name);
        // A `cu` folder holds kernels and their sidecars too: the runs are `*-run.json`.
        let files = read_examples(&dir, |f| f.ends_with(".json") && (name != "cu" || f.ends_with("-run.json")) && f != "params.json");
        let mut examples: Vec<Value> = files.iter().filter_map(|(_, t)| serde_json::from_str(t).ok()).collect();
        let texts: Vec<String> = read_examples(&dir, |f| f.ends_with(".txt")).into_iter().map(|(_, t)| t).collect();
        // The JSON of the block's page (inputs, outputs: seeds all the same).
        let page = std::fs::read_to_string(repo().join("docs").join(format!("{name}.md"))).unwrap_or_default();
        for block in page.split("```json").skip(1) {
            if let Some(Ok(v)) = block.split("```").next().map(serde_json::from_str::<Value>) {
                examples.push(v);
            }
        }
        // A text form's examples as the JSON inputs they stand for.
        examples.extend(texts.iter().filter_map(|t| b.text_input(&b.defaults(), t).and_then(|r| r.ok())));
        assert!(!examples.is_empty(), "block `{name}` has no example input under examples/{name}");
        let mut keys = Vec::new();
        examples.iter().for_each(|v| keys_of(v, &mut keys));
        let sets = param_sets(b);
        let base = dir.clone();
        let (e2, k2) = (examples.clone(), keys.clone());
        out.push(Parser {
            name: format!("run input {name} (JSON)"),
            gen: Box::new(move |rng| json_case(rng, &e2, &k2)),
            check: {
                let (sets, base) = (sets.clone(), base.clone());
                Box::new(move |c| {
                    let b = blocks::find(&blocks::all(), name).expect("block");
                    let p = &sets[c.pairs.len() % sets.len()];
                    judge(read_run_input(b, p, &c.as_text(), &base))
                })
            },
        });
        // The parameter set a run is read with: chosen by the case (its
        // pairs' count), so that a saved case reads the same.
        if let Some(last) = out.last_mut() {
            let n = sets.len();
            let gen = std::mem::replace(&mut last.gen, Box::new(|_| Case::default()));
            last.gen = Box::new(move |rng| {
                let mut c = gen(rng);
                c.pairs = vec![(String::new(), String::new()); rng.below(n as u64) as usize];
                c
            });
        }
        if !texts.is_empty() {
            let sets = sets.clone();
            out.push(Parser {
                name: format!("run input {name} (text)"),
                gen: Box::new(move |rng| pm4_case(rng, &texts, true)),
                check: Box::new(move |c| {
                    let b = blocks::find(&blocks::all(), name).expect("block");
                    judge(read_run_input(b, &sets[0], &c.as_text(), &base))
                }),
            });
        }
    }
}

/// `gpurtl prune`'s input (the systolic block's), and the job manifests of
/// `gpurtl job` and `collect`.
fn other_parsers(out: &mut Vec<Parser>) {
    let gemm: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("examples/systolic/gemm.json")).unwrap()).unwrap();
    let mut keys = Vec::new();
    keys_of(&gemm, &mut keys);
    let examples = vec![gemm];
    out.push(Parser {
        name: "prune (systolic)".into(),
        gen: Box::new(move |rng| {
            let mut c = json_case(rng, &examples, &keys);
            // `--block` and `--threshold`, as the command line checks them.
            let (block, bits) = (1 + rng.below(64), rng.below(40));
            c.pairs = vec![(block.to_string(), rng.below(1 << bits).to_string())];
            c
        }),
        check: Box::new(|c| {
            let b = blocks::find(&blocks::all(), "systolic").expect("systolic");
            let (block, threshold) = (c.pairs[0].0.parse().unwrap_or(1), c.pairs[0].1.parse().unwrap_or(0));
            judge(match gpurtl_gen::json::parse(&c.as_text()) {
                Ok(v) => b.prune(v, block, threshold).map(|_| ()),
                Err(e) => Err(Error::Bad(format!("not valid JSON: {e}"))),
            })
        }),
    });
    let dir = std::env::temp_dir();
    let r = gpurtl_gen::jobs::Resources::parse(None, None).unwrap();
    let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let lines: Vec<Value> = [
        gpurtl_gen::jobs::job("a-1".into(), argv("gpurtl job cosim compress --seeds 0..100"), Some(0), 1, r, &dir),
        gpurtl_gen::jobs::job("p.2_x".into(), argv("gpurtl synth systolic --target ice40 --seeds 1,2,3"), None, 2, r, &dir),
    ]
    .iter()
    .map(|j| serde_json::from_str(&j.line()).unwrap())
    .collect();
    let mut keys = Vec::new();
    lines.iter().for_each(|v| keys_of(v, &mut keys));
    out.push(Parser {
        name: "jobs manifest".into(),
        gen: Box::new(move |rng| {
            let mut b = Vec::new();
            let most = if rng.chance(3) { 3000 } else { 6 };
            for _ in 0..1 + rng.below(most) {
                let c = if rng.chance(50) { Case { bytes: serde_json::to_vec(rng.pick(&lines)).unwrap(), pairs: vec![] } } else { json_case(rng, &lines, &keys) };
                b.extend(c.bytes.iter().filter(|x| **x != b'\n'));
                b.push(b'\n');
            }
            Case { bytes: b, pairs: vec![] }
        }),
        check: Box::new(|c| {
            thread_local! {
                static DIR: tempfile::TempDir = tempfile::tempdir().expect("a temporary folder");
            }
            DIR.with(|d| {
                let p = d.path().join("jobs.jsonl");
                std::fs::write(&p, &c.bytes).map_err(|e| e.to_string())?;
                judge(gpurtl_gen::jobs::read_manifest(&p, "MANIFEST").map(|_| ()))
            })
        }),
    });
}

fn params_parsers(out: &mut Vec<Parser>) {
    for b in blocks::all() {
        let name = b.name();
        let mut examples = vec![b.defaults()];
        examples.extend(b.presets().into_iter().map(|(_, v)| v));
        let table: Vec<String> = b.table().into_iter().map(|i| i.name).collect();
        let mut keys = table.clone();
        examples.iter().for_each(|v| keys_of(v, &mut keys));
        out.push(Parser {
            name: format!("params {name}"),
            gen: Box::new(move |rng| {
                let mut c = json_case(rng, &examples, &keys);
                for _ in 0..rng.below(4) {
                    let k = if rng.chance(85) { rng.pick(&table).clone() } else { string(rng) };
                    let v = match rng.below(3) {
                        0 => rng.pick(NUMBERS).to_string(),
                        1 => rng.pick(STRINGS).to_string(),
                        _ => {
                            let bits = rng.below(20);
                            format!("{}", rng.below(1 << bits))
                        }
                    };
                    c.pairs.push((k, v));
                }
                c
            }),
            check: Box::new(move |c| {
                let b = blocks::find(&blocks::all(), name).expect("block");
                let r = match gpurtl_gen::json::parse(&c.as_text()) {
                    Ok(v) => b.resolve(&[&v], &c.pairs).map(|_| ()).map_err(Error::from),
                    Err(e) => Err(Error::Bad(format!("not valid JSON: {e}"))),
                };
                judge(r)
            }),
        });
    }
}

/// The mnemonics and fields of the PM4 assembler, from the disassembly of
/// every opcode at a few payload counts.
fn pm4_lines() -> Vec<String> {
    let cmdproc = blocks::find(&blocks::all(), "cmdproc").expect("cmdproc");
    let mut lines = Vec::new();
    for code in 0..256u32 {
        for n in [0u32, 1, 2, 3, 4, 5, 6] {
            let mut d = vec![0xC000_0000 | (n.wrapping_sub(1) & 0x3FFF) << 16 | code << 8];
            d.extend((0..n).map(|i| i * 3 + 1));
            if let Ok(t) = cmdproc.disassemble(&d) {
                lines.extend(t.lines().filter(|l| !l.starts_with("DWORD")).map(str::to_string));
            }
        }
    }
    lines.push("FILLER".into());
    lines.push("DWORD value=0x12345678".into());
    lines.sort();
    lines.dedup();
    lines
}

/// A line with its operands changed: numbers to edge values, fields
/// dropped, repeated or renamed, lists lengthened.
fn mutate_line(rng: &mut Rng, line: &str, names: &[String]) -> String {
    let mut toks: Vec<String> = line.split(' ').map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        if toks.is_empty() {
            toks.push(rng.pick(names).clone());
        }
        let i = rng.below(toks.len() as u64) as usize;
        match rng.below(8) {
            0 => {
                toks.remove(i);
            }
            1 => {
                let t = toks[i].clone();
                toks.push(t);
            }
            2 => toks[i] = rng.pick(names).clone(),
            3 => {
                let (k, _) = toks[i].split_once('=').map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or((toks[i].clone(), String::new()));
                let n = if rng.chance(10) { rng.below(20_000) } else { rng.below(8) };
                let list: Vec<String> = (0..n).map(|_| rng.pick(NUMBERS).to_string()).collect();
                toks[i] = format!("{k}={}", list.join(","));
            }
            4 => toks.insert(i, rng.pick(TOKENS).to_string()),
            _ => {
                // A number in the token to an edge value.
                let t = &toks[i];
                let start = t.find(|c: char| c.is_ascii_digit() || c == '-');
                let v = match rng.below(3) {
                    0 => format!("0x{:x}", rng.next_u64() >> rng.below(64)),
                    1 => (rng.below(600) as i64 - 50).to_string(),
                    _ => rng.pick(NUMBERS).to_string(),
                };
                toks[i] = match start {
                    Some(s) => {
                        let end = t[s..].find([',', ' ', ']', ')']).map_or(t.len(), |e| s + e);
                        format!("{}{v}{}", &t[..s], &t[end..])
                    }
                    None => format!("{t}{v}"),
                };
            }
        }
    }
    toks.join(if rng.chance(90) { " " } else { "  \t" })
}

/// PM4 text: packet lines (and, for a run file, `.registers` and
/// `.memory` lines), many of them mutated; or an example mutated.
fn pm4_case(rng: &mut Rng, examples: &[String], run: bool) -> Case {
    thread_local! {
        /// The lines, and their words.
        static LINES: (Vec<String>, Vec<String>) = {
            let lines = pm4_lines();
            let mut names: Vec<String> = lines
                .iter()
                .flat_map(|l| l.split(' ').map(str::to_string))
                .chain(["shader=1", "predicate=1", ".registers", ".memory", "cmd_base=0x1000", "mem_latency=3", "state=1,2", "#"].map(String::from))
                .collect();
            names.sort();
            names.dedup();
            (lines, names)
        };
    }
    LINES.with(|(lines, names)| {
        let names = &names[..];
        let mut text = String::new();
        if !examples.is_empty() && rng.chance(40) {
            text = rng.pick(examples).clone();
        } else {
            if run && rng.chance(80) {
                let regs = ["cmd_base", "cmd_size", "prim_base", "prim_size", "state", "state_ptr", "irq_enable", "mem_latency", "bogus"];
                let mut l = ".registers".to_string();
                for _ in 0..rng.below(6) {
                    l += &format!(" {}={}", rng.pick(&regs), rng.pick(NUMBERS));
                }
                text += &l;
                text.push('\n');
                for _ in 0..rng.below(3) {
                    text += &format!(".memory {} {},{}\n", rng.pick(NUMBERS), rng.pick(NUMBERS), rng.pick(NUMBERS));
                }
            }
            let n = if rng.chance(3) { rng.below(5000) } else { rng.below(12) };
            for _ in 0..n {
                let l = rng.pick(lines).clone();
                text += &if rng.chance(30) { mutate_line(rng, &l, names) } else { l };
                text.push('\n');
            }
        }
        let mut b = text.into_bytes();
        let mutate_lines = rng.chance(50);
        let mut t = String::from_utf8_lossy(&b).into_owned();
        if mutate_lines {
            let ls: Vec<String> = t.lines().map(|l| if rng.chance(20) { mutate_line(rng, l, names) } else { l.to_string() }).collect();
            t = ls.join("\n");
        }
        b = t.into_bytes();
        if rng.chance(25) {
            mutate_bytes(rng, &mut b, &[]);
        }
        Case { bytes: b, pairs: vec![] }
    })
}

/// `cu` kernels: lines of the examples and of disassembled random words,
/// mutated.
fn cu_case(rng: &mut Rng, lines: &[String], names: &[String], examples: &[String]) -> Case {
    let mut text = String::new();
    if rng.chance(30) {
        text = rng.pick(examples).clone();
    } else {
        let n = if rng.chance(3) { rng.below(5000) } else { rng.below(16) };
        for _ in 0..n {
            let l = rng.pick(lines).clone();
            let l = if rng.chance(35) { mutate_line(rng, &l, names) } else { l };
            if rng.chance(10) {
                text += &format!("{}: ", rng.pick(&["top", "a", "loop", "r3", "1x", "tile", "x y"]));
            }
            text += &l;
            text.push('\n');
        }
    }
    let ls: Vec<String> = text.lines().map(|l| if rng.chance(10) { mutate_line(rng, l, names) } else { l.to_string() }).collect();
    let mut b = ls.join("\n").into_bytes();
    if rng.chance(25) {
        mutate_bytes(rng, &mut b, &[]);
    }
    Case { bytes: b, pairs: vec![] }
}

fn dwords_of(c: &Case) -> Vec<u32> {
    c.bytes.chunks(4).map(|q| q.iter().rev().fold(0u32, |a, b| a << 8 | *b as u32)).collect()
}

fn case_of_dwords(d: &[u32]) -> Case {
    Case { bytes: d.iter().flat_map(|x| x.to_le_bytes()).collect(), pairs: vec![] }
}

/// Random dwords: PM4 headers of every opcode and payload count (some past
/// the end), fillers, random words.
fn pm4_dwords(rng: &mut Rng) -> Case {
    let n = if rng.chance(3) { rng.below(20_000) } else { rng.below(40) };
    let mut d = Vec::new();
    while (d.len() as u64) < n {
        match rng.below(5) {
            0 => d.push(rng.next_u64() as u32),
            1 => d.push(0x8000_0000),
            _ => {
                let code = [0x10u32, 0x69, 0x2A, 0x2D, 0x35, 0x15, 0x37, 0x3F][rng.below(8) as usize];
                let code = if rng.chance(10) { rng.below(256) as u32 } else { code };
                let k = if rng.chance(10) { rng.below(0x4000) as u32 } else { rng.below(8) as u32 };
                d.push(0xC000_0000 | (k.wrapping_sub(1) & 0x3FFF) << 16 | code << 8 | rng.below(4) as u32 | (rng.chance(5) as u32) << 2);
                for _ in 0..k.min(64) {
                    d.push(if rng.chance(50) { rng.below(8) as u32 } else { rng.next_u64() as u32 });
                }
            }
        }
    }
    case_of_dwords(&d)
}

/// Random 64-bit `cu` words as dword pairs: assembled lines with bits
/// flipped, random words; sometimes an odd count.
fn cu_dwords(rng: &mut Rng, words: &[u64]) -> Case {
    let n = if rng.chance(3) { rng.below(10_000) } else { rng.below(40) };
    let mut d = Vec::new();
    for _ in 0..n {
        let w = match rng.below(3) {
            0 => rng.next_u64(),
            _ => rng.pick(words) ^ if rng.chance(70) { 1 << rng.below(64) } else { 0 },
        };
        d.push(w as u32);
        d.push((w >> 32) as u32);
    }
    if rng.chance(5) {
        d.push(rng.next_u64() as u32);
    }
    case_of_dwords(&d)
}

fn asm_parsers(out: &mut Vec<Parser>) {
    let all = blocks::all();
    let cmdproc_dir = repo().join("examples/cmdproc");
    let pm4_examples: Vec<String> = read_examples(&cmdproc_dir, |f| f.ends_with(".txt")).into_iter().map(|(_, t)| t).collect();
    out.push(Parser {
        name: "asm (PM4)".into(),
        gen: Box::new(move |rng| pm4_case(rng, &pm4_examples, false)),
        check: Box::new(|c| {
            let b = blocks::find(&blocks::all(), "cmdproc").expect("cmdproc");
            judge(b.assemble(&c.as_text()).map(|_| ()))
        }),
    });
    out.push(Parser {
        name: "disasm (PM4)".into(),
        gen: Box::new(pm4_dwords),
        check: Box::new(|c| {
            let b = blocks::find(&blocks::all(), "cmdproc").expect("cmdproc");
            let d = dwords_of(c);
            let text = b.disassemble(&d).map_err(|e| format!("disasm refused dwords: {e}"))?;
            // The disassembly assembles back to the same dwords.
            match b.assemble(&text) {
                Ok(back) if back == d => Ok(true),
                Ok(_) => Err("the disassembly assembles to other dwords".into()),
                Err(e) => Err(format!("the disassembly does not assemble: {}", e.message().lines().next().unwrap_or(""))),
            }
        }),
    });
    // The cu's kernels: its examples' lines, and the disassembly of words.
    let cu = blocks::find(&all, "cu").expect("cu");
    let cu_examples: Vec<String> = read_examples(&repo().join("examples/cu"), |f| f.ends_with(".s")).into_iter().map(|(_, t)| t).collect();
    let mut lines: Vec<String> = cu_examples
        .iter()
        .flat_map(|t| t.lines().map(|l| l.split('#').next().unwrap_or("").trim().to_string()))
        .filter(|l| !l.is_empty() && !l.ends_with(':'))
        .collect();
    let mut rng = Rng::new(1);
    let mut words: Vec<u64> = Vec::new();
    for t in &cu_examples {
        if let Ok(d) = cu.assemble(t) {
            words.extend(d.chunks(2).map(|c| c[0] as u64 | (c[1] as u64) << 32));
        }
    }
    for _ in 0..4000 {
        let w = rng.pick(&words) ^ 1 << rng.below(64);
        let d = [w as u32, (w >> 32) as u32];
        if let Ok(t) = cu.disassemble(&d) {
            lines.extend(t.lines().filter(|l| !l.starts_with(".word")).map(str::to_string));
        }
    }
    lines.sort();
    lines.dedup();
    let mut names: Vec<String> = lines
        .iter()
        .flat_map(|l| l.split([' ', ',']).filter(|t| !t.is_empty()).map(str::to_string))
        .chain(["r0", "r31", "r32", "r255", "r-1", "top:", "top", "ud[0]", "ud[16]", "ud[-1]", "end", ":", "a:b:", "1abc:", "r3:", "pad"].map(String::from))
        .collect();
    names.sort();
    names.dedup();
    let ex = cu_examples.clone();
    out.push(Parser {
        name: "asm (cu)".into(),
        gen: Box::new(move |rng| cu_case(rng, &lines, &names, &ex)),
        check: Box::new(|c| {
            let b = blocks::find(&blocks::all(), "cu").expect("cu");
            judge(b.assemble(&c.as_text()).map(|_| ()))
        }),
    });
    out.push(Parser {
        name: "disasm (cu)".into(),
        gen: Box::new(move |rng| cu_dwords(rng, &words)),
        check: Box::new(|c| {
            let b = blocks::find(&blocks::all(), "cu").expect("cu");
            let d = dwords_of(c);
            match b.disassemble(&d) {
                Ok(text) => match b.assemble(&text) {
                    Ok(back) if back == d => Ok(true),
                    Ok(_) => Err("the disassembly assembles to other dwords".into()),
                    Err(e) => Err(format!("the disassembly does not assemble: {}", e.message().lines().next().unwrap_or(""))),
                },
                Err(e) => judge(Err(e)),
            }
        }),
    });
    // The hex files of `gpurtl disasm`.
    out.push(Parser {
        name: "disasm hex file".into(),
        gen: Box::new(|rng| {
            let n = if rng.chance(3) { rng.below(5000) } else { rng.below(20) };
            let mut t = String::new();
            for _ in 0..n {
                match rng.below(6) {
                    0 => t += &format!("{:x}", rng.next_u64() >> rng.below(64)),
                    1 => t += &format!("{:08X} // c", rng.next_u64() as u32),
                    2 => t += &format!("@{:x}", rng.below(1000)),
                    3 => t += *rng.pick(TOKENS),
                    _ => t += &format!("{:08x}", rng.next_u64() as u32),
                }
                t.push('\n');
            }
            let mut b = t.into_bytes();
            for _ in 0..rng.below(3) {
                mutate_bytes(rng, &mut b, &[]);
            }
            Case { bytes: b, pairs: vec![] }
        }),
        check: Box::new(|c| judge(gpurtl_gen::cli::hex_dwords(Path::new("in.hex"), &c.bytes).map(|_| ()))),
    });
}

// ---- PNG ----

fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for b in data {
        c ^= *b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
    }
    !c
}

fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend(data);
    out.extend(&body);
    out.extend(crc32(&body).to_be_bytes());
}

/// A PNG of `w` x `h` with colour type `color` and `depth`-bit samples,
/// its pixel bytes stored (deflate without compression).
fn png_bytes(rng: &mut Rng, w: u32, h: u32, color: u8, depth: u8) -> Vec<u8> {
    let channels = match color {
        0 | 3 => 1,
        2 => 3,
        4 => 2,
        _ => 4,
    };
    let row = (w as usize * channels * depth as usize).div_ceil(8);
    let mut raw = Vec::new();
    for _ in 0..h {
        raw.push(rng.below(5) as u8);
        raw.extend((0..row).map(|_| rng.below(256) as u8));
    }
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if raw.is_empty() { vec![&[][..]] } else { raw.chunks(65535).collect() };
    for (i, b) in blocks.iter().enumerate() {
        z.push((i + 1 == blocks.len()) as u8);
        z.extend((b.len() as u16).to_le_bytes());
        z.extend((!(b.len() as u16)).to_le_bytes());
        z.extend(*b);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for x in &raw {
        a = (a + *x as u32) % 65521;
        b = (b + a) % 65521;
    }
    z.extend((b << 16 | a).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([depth, color, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    if color == 3 {
        let n = 1usize << depth.min(8);
        chunk(&mut out, b"PLTE", &(0..3 * n).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
        if rng.chance(50) {
            chunk(&mut out, b"tRNS", &(0..n).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
        }
    }
    chunk(&mut out, b"IDAT", &z);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// The chunks of a PNG (after its signature): (start, length) of each.
fn chunks_of(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 8;
    while i + 12 <= b.len() {
        let n = u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
        if i + 12 + n > b.len() {
            break;
        }
        out.push((i, n));
        i += 12 + n;
    }
    out
}

/// A PNG, valid at first, mutated: bytes changed (the chunk's CRC mostly
/// made right again, so the decoder reads on), IHDR fields at edge values,
/// chunks dropped, repeated or added, the end cut off.
fn png_case(rng: &mut Rng) -> Case {
    let colors = [(0u8, &[1u8, 2, 4, 8, 16][..]), (2, &[8, 16]), (3, &[1, 2, 4, 8]), (4, &[8, 16]), (6, &[8, 16])];
    let (color, depths) = colors[rng.below(colors.len() as u64) as usize];
    let depth = depths[rng.below(depths.len() as u64) as usize];
    let (w, h) = (1 + rng.below(24) as u32, 1 + rng.below(24) as u32);
    let mut b = png_bytes(rng, w, h, color, depth);
    for _ in 0..rng.below(4) {
        let cs = chunks_of(&b);
        match rng.below(7) {
            0 if b.len() >= 29 => {
                // IHDR's width, height, depth, colour type, interlace.
                let f = [(16usize, 4usize), (20, 4), (24, 1), (25, 1), (26, 1), (27, 1), (28, 1)][rng.below(7) as usize];
                let v = match rng.below(3) {
                    0 => 0,
                    1 => rng.next_u64(),
                    _ => [1u64, 2, 3, 4, 5, 6, 7, 8, 16, 4096, 4097, 65535, 1 << 31, (1 << 32) - 1][rng.below(14) as usize],
                };
                let bytes = v.to_be_bytes();
                b[f.0..f.0 + f.1].copy_from_slice(&bytes[8 - f.1..]);
            }
            1 if !cs.is_empty() => {
                let (s, n) = cs[rng.below(cs.len() as u64) as usize];
                b.drain(s..s + 12 + n);
            }
            2 if !cs.is_empty() => {
                let (s, n) = cs[rng.below(cs.len() as u64) as usize];
                let part = b[s..s + 12 + n].to_vec();
                b.splice(s..s, part);
            }
            3 if !cs.is_empty() => {
                let (s, _) = cs[rng.below(cs.len() as u64) as usize];
                let kinds: [&[u8]; 10] = [b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND", b"acTL", b"fcTL", b"fdAT", b"gAMA", b"zzzz"];
                let kind = kinds[rng.below(kinds.len() as u64) as usize];
                let data: Vec<u8> = (0..rng.below(40)).map(|_| rng.below(256) as u8).collect();
                let mut c = Vec::new();
                chunk(&mut c, kind, &data);
                b.splice(s..s, c);
            }
            4 => {
                let i = rng.below(b.len() as u64 + 1) as usize;
                b.truncate(i);
            }
            _ if b.len() > 8 => {
                let i = 8 + rng.below(b.len() as u64 - 8) as usize;
                b[i] ^= 1 << rng.below(8);
            }
            _ => {}
        }
    }
    // Most CRCs made right again.
    if rng.chance(75) {
        for (s, n) in chunks_of(&b) {
            let crc = crc32(&b[s + 4..s + 8 + n]);
            b[s + 8 + n..s + 12 + n].copy_from_slice(&crc.to_be_bytes());
        }
    }
    Case { bytes: b, pairs: vec![] }
}

fn png_parser(out: &mut Vec<Parser>) {
    let sample: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("examples/texture/sample.json")).unwrap()).unwrap();
    let mut without = sample.clone();
    without.as_object_mut().unwrap().remove("texture");
    out.push(Parser {
        name: "PNG (--image)".into(),
        gen: Box::new(png_case),
        check: Box::new(move |c| {
            let b = blocks::find(&blocks::all(), "texture").expect("texture");
            let r = gpurtl_gen::image::decode_png("option `--image` = `in.png`", c.bytes.clone()).and_then(|img| {
                let p = b.defaults();
                let input = b.with_image(&p, without.clone(), &img)?;
                b.check_input(&p, &input, Path::new("."))
            });
            judge(r)
        }),
    });
}

// ---- the run ----

thread_local! {
    /// Set while a case is read: its panics are kept, not printed.
    static IN_CASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A panic's message, kept by the hook for the case that raised it (any
/// other panic is printed as usual).
fn panic_message() -> Arc<Mutex<String>> {
    static LAST: std::sync::OnceLock<Arc<Mutex<String>>> = std::sync::OnceLock::new();
    LAST.get_or_init(|| {
        let last = Arc::new(Mutex::new(String::new()));
        let l = last.clone();
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.with(|c| c.get()) {
                if let Ok(mut m) = l.lock() {
                    *m = info.to_string();
                }
            } else {
                default(info);
            }
        }));
        last
    })
    .clone()
}

/// A case's own generator: from the seed, the parser and the case's number.
fn case_rng(seed: u64, parser: usize, i: u64) -> Rng {
    Rng::new(seed ^ (parser as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_mul(0xBF58_476D_1CE4_E5B9))
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| s.replace(['_', ','], "").parse().unwrap_or_else(|_| panic!("{name}={s}: must be an integer")))
}

/// What the watchdog sees: the parser and case under way, since when.
struct Now {
    parser: String,
    case: u64,
    bytes: Vec<u8>,
    since: Instant,
    done: bool,
}

fn save(dir: &Path, parser: &str, i: u64, c: &Case, why: &str, seed: u64) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let stem: String = parser.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let p = dir.join(format!("{stem}-{i}.in"));
    let _ = std::fs::write(&p, &c.bytes);
    let pairs: Vec<String> = c.pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = std::fs::write(
        p.with_extension("txt"),
        format!("parser: {parser}\ncase: {i}\nseed: GPURTL_FUZZ_SEED={seed}\npairs: {pairs:?}\n{why}\n"),
    );
    p
}

#[test]
fn every_parser_survives_random_and_mutated_inputs() {
    let per = env_u64("GPURTL_FUZZ").unwrap_or(1000);
    let seed = env_u64("GPURTL_FUZZ_SEED")
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1));
    let only = std::env::var("GPURTL_FUZZ_ONLY").ok();
    let trace = std::env::var("GPURTL_FUZZ_TRACE").is_ok();
    eprintln!("fuzz: {per} inputs a parser, GPURTL_FUZZ_SEED={seed}");
    let dir = repo().join("target/fuzz");
    let now = Arc::new(Mutex::new(Now { parser: String::new(), case: 0, bytes: vec![], since: Instant::now(), done: false }));
    let last_panic = panic_message();
    let worker = {
        let now = now.clone();
        let dir = dir.clone();
        // The command line's main thread has 8 MiB of stack; so has this.
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || {
                let mut parsers = Vec::new();
                run_input_parsers(&mut parsers);
                params_parsers(&mut parsers);
                asm_parsers(&mut parsers);
                other_parsers(&mut parsers);
                png_parser(&mut parsers);
                let mut failures = Vec::new();
                let mut report = Vec::new();
                for (k, p) in parsers.iter().enumerate() {
                    if only.as_ref().is_some_and(|o| !p.name.contains(o.as_str())) {
                        continue;
                    }
                    let start = Instant::now();
                    let (mut errs, mut accepted, mut slowest) = (0u64, 0u64, (Duration::ZERO, 0u64));
                    let mut bad = 0;
                    for i in 0..per {
                        let c = (p.gen)(&mut case_rng(seed, k, i));
                        if trace {
                            eprintln!("fuzz: {} case {i}", p.name);
                        }
                        {
                            let mut n = now.lock().unwrap();
                            n.parser = p.name.clone();
                            n.case = i;
                            n.bytes = c.bytes.clone();
                            n.since = Instant::now();
                        }
                        let t = Instant::now();
                        IN_CASE.with(|f| f.set(true));
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (p.check)(&c)));
                        IN_CASE.with(|f| f.set(false));
                        let dt = t.elapsed();
                        if dt > slowest.0 {
                            slowest = (dt, i);
                        }
                        let why = match r {
                            Ok(Ok(ok)) => {
                                accepted += ok as u64;
                                None
                            }
                            Ok(Err(m)) => Some(m),
                            Err(_) => Some(format!("panic: {}", last_panic.lock().unwrap())),
                        };
                        if let Some(why) = why {
                            errs += 1;
                            bad += 1;
                            if bad <= 3 {
                                let path = save(&dir, &p.name, i, &c, &why, seed);
                                failures.push(format!("{} case {i} ({}): {why}", p.name, path.display()));
                            }
                        }
                    }
                    report.push(format!(
                        "fuzz: {:<28} {per} inputs ({accepted} accepted) in {:.1} s, {errs} failing, slowest {:.3} s (case {})",
                        p.name,
                        start.elapsed().as_secs_f64(),
                        slowest.0.as_secs_f64(),
                        slowest.1
                    ));
                    eprintln!("{}", report.last().unwrap());
                }
                now.lock().unwrap().done = true;
                failures
            })
            .expect("fuzz thread starts")
    };
    // The watchdog: a case that takes a minute is a hang.
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let n = now.lock().unwrap();
        if n.done || worker.is_finished() {
            break;
        }
        if n.since.elapsed() > Duration::from_secs(60) {
            let c = Case { bytes: n.bytes.clone(), pairs: vec![] };
            let path = save(&dir, &n.parser, n.case, &c, "hang: over 60 s", seed);
            panic!("fuzz: {} case {} hangs (over 60 s); the input: {}; GPURTL_FUZZ_SEED={seed}", n.parser, n.case, path.display());
        }
    }
    let failures = worker.join().unwrap_or_else(|_| panic!("the fuzz thread panicked outside a case; GPURTL_FUZZ_SEED={seed}"));
    assert!(
        failures.is_empty(),
        "{} failing inputs (the first 3 a parser, saved under target/fuzz/; GPURTL_FUZZ_SEED={seed} reproduces):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
