//! `gpurtl run systolic` files: the input (checked, every violation
//! reported), the output, and block pruning of test matrices (integers).
//! Floating-point elements are read as numbers or bit patterns and held as
//! patterns (docs/systolic.md, "Numbers and patterns in `gpurtl run
//! systolic`").

use super::fp::{f32_from_f64, FpType};
use super::reference::acc_range;
use super::{Gemm, Outcome};
use crate::models::{err, shown, InputErrors, Violations};
use gpurtl_params::systolic::{Dataflow, ElemType, SystolicParams};
use serde_json::Value;

/// A matrix of the input file (`src.key`), checked: `rows` (the row count,
/// or `None`: at least 1) and `cols` (the row length, or `None`: at least 1,
/// every row as long as row 0), each with the reason shown in the message;
/// `src.elem` reads one value or rejects it with `src.allowed`. Violations
/// go to `e`; `None` if there was any.
fn matrix(
    e: &mut Violations,
    src: &Source,
    v: &Value,
    rows: Option<(usize, &str)>,
    cols: Option<(usize, &str)>,
) -> Option<Vec<Vec<i64>>> {
    let (name, elem, elem_allowed, noun) = (src.key, &src.elem, src.allowed.as_str(), src.noun);
    let Some(list) = v.as_array() else {
        e.push(err(name, shown(v), format!("a list of lists of {noun}")));
        return None;
    };
    match rows {
        None if list.is_empty() => {
            e.push(err(name, "a list of 0 rows", "a list of at least 1 row"));
            return None;
        }
        Some((n, why)) if list.len() != n => {
            e.push(err(name, format!("a list of {} rows", list.len()), format!("a list of {n} rows ({why})")));
            return None;
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(list.len());
    let mut ok = true;
    let mut width: Option<(usize, String)> = cols.map(|(n, why)| (n, why.to_string()));
    // Bad values are listed up to a few per matrix, then counted.
    let mut bad_values = 0;
    for (i, row) in list.iter().enumerate() {
        let at = format!("{name}[{i}]");
        let Some(vals) = row.as_array() else {
            e.push(err(&at, shown(row), format!("a list of {noun}")));
            ok = false;
            continue;
        };
        match &width {
            None => {
                if vals.is_empty() {
                    e.push(err(&at, "a list of 0 values", "a list of at least 1 value"));
                    ok = false;
                    continue;
                }
                width = Some((vals.len(), format!("the length of {name}[0]")));
            }
            Some((n, why)) => {
                if vals.len() != *n {
                    e.push(err(&at, format!("a list of {} values", vals.len()), format!("a list of {n} values ({why})")));
                    ok = false;
                    continue;
                }
            }
        }
        let mut r = Vec::with_capacity(vals.len());
        for (j, x) in vals.iter().enumerate() {
            match elem(x) {
                Some(v) => r.push(v),
                None => {
                    bad_values += 1;
                    if bad_values <= Violations::PER_LIST {
                        e.push(err(format!("{at}[{j}]"), shown(x), elem_allowed));
                    }
                }
            }
        }
        out.push(r);
    }
    if bad_values > Violations::PER_LIST {
        let more = bad_values - Violations::PER_LIST;
        e.push(err(name, format!("{more} more values like those"), elem_allowed));
    }
    (ok && bad_values == 0).then_some(out)
}

/// The most lane vectors (one PE row's or column's `lanes` elements of one
/// step) a run's step program may hold: the sequencer expands a GEMM into
/// every tile's slices of A and B, and this bounds a run's work. (The model
/// builds one tile at a time and holds about its input and C; the RTL
/// engine's testbench packs the whole program into stimulus words first.)
pub const MAX_PROGRAM: u64 = 4_000_000;

/// Lane vectors in the step program of an M x K by K x N GEMM (at most: rows
/// and columns skipped by `rowcol_skip` are counted).
pub fn program_size(cfg: &SystolicParams, m: usize, k: usize, n: usize) -> u64 {
    let (r, c) = (cfg.rows as u64, cfg.cols as u64);
    let (m, n) = (m as u64, n as u64);
    let steps = (k as u64).div_ceil(cfg.lanes as u64);
    match cfg.dataflow {
        Dataflow::Os => m.div_ceil(r) * n.div_ceil(c) * steps * (r + c),
        // Each tile: R weight rows of C lanes, and one A vector of R lanes per row.
        Dataflow::Ws => n.div_ceil(c) * steps.div_ceil(r) * (r * c + m * r),
    }
}

/// Reads one value of a matrix (`None`: not allowed).
type ElemReader = Box<dyn Fn(&Value) -> Option<i64>>;

/// How a matrix of the input is given: the key present, its values'
/// reader, what they must be, and the noun of the list messages.
struct Source {
    key: &'static str,
    elem: ElemReader,
    allowed: String,
    noun: &'static str,
}

/// The first magnitude a number must stay below to round to a finite value
/// of the format (docs/systolic.md, "Numbers and patterns").
fn finite_limit(name: &str) -> &'static str {
    match name {
        "bf16" => "below 2^128 - 2^119, about 3.3962e38; the largest finite bf16 is about 3.3895e38",
        "fp16" => "below 65520; the largest finite fp16 is 65504",
        "fp8e4m3" => "at most 464; the largest finite fp8e4m3 is 448",
        "fp8e5m2" => "below 61440; the largest finite fp8e5m2 is 57344",
        _ => "below 2^128 - 2^103, about 3.4028236e38; the largest finite binary32 is about 3.4028235e38",
    }
}

/// A floating-point matrix given as numbers (`key`) rounded by `round`
/// (the format `name`), or as bit patterns of `bits` bits (`key_bits`).
fn fp_source(
    key: &'static str,
    numbers: bool,
    name: &'static str,
    bits: u32,
    round: impl Fn(f64) -> Result<u32, String> + 'static,
) -> Source {
    if numbers {
        Source {
            key,
            elem: Box::new(move |x: &Value| x.as_f64().and_then(|f| round(f).ok()).map(i64::from)),
            allowed: format!(
                "a number that rounds to a finite {name} value (magnitude {}); NaN and Inf only as bit patterns, in `{key}_bits`",
                finite_limit(name)
            ),
            noun: "numbers",
        }
    } else {
        let max = (1u64 << bits) - 1;
        Source {
            key: match key {
                "a" => "a_bits",
                "b" => "b_bits",
                _ => "c0_bits",
            },
            elem: Box::new(move |x: &Value| x.as_u64().filter(|&u| u <= max).map(|u| u as i64)),
            allowed: format!("an integer from 0 to {max} (a bit pattern of {name})"),
            noun: "integers",
        }
    }
}

/// Which of `key` (numbers) and `key_bits` (patterns) a floating-point
/// input gives: `Some(true)` numbers, `Some(false)` patterns, `None` with a
/// violation when both are given, or neither and `required`; `Some(true)`
/// is also returned (unused) when neither is given and not required.
fn fp_choice(e: &mut Violations, obj: &serde_json::Map<String, Value>, key: &str, what: &str, required: bool) -> Option<bool> {
    let bits = format!("{key}_bits");
    match (obj.contains_key(key), obj.contains_key(&bits)) {
        (true, true) => {
            e.push(err(
                bits.as_str(),
                "(given)",
                format!("absent when `{key}` is given: {what} is given as numbers (`{key}`) or as bit patterns (`{bits}`), not both"),
            ));
            None
        }
        (false, false) if required => {
            e.push(err(key, "(missing)", format!("a list of lists of numbers, or `{bits}`: a list of lists of bit patterns")));
            None
        }
        (_, b) => Some(!b),
    }
}

/// Parse and check an input file (docs/systolic.md "`gpurtl run systolic`"
/// and, for floating-point types, "Numbers and patterns in `gpurtl run
/// systolic`"); every violation is reported, in this order: the keys,
/// `a_type`, `b_type`, `a` (row by row: list, length, values), `b`, `c0`,
/// and the size of the step program.
///
/// Integer types take `a`, `b`, `c0` as integers. Floating-point types take
/// A and B as numbers (`a`, `b`: rounded to the element type, an error when
/// beyond its largest finite value) or bit patterns (`a_bits`, `b_bits`:
/// integers below 2^bits), C0 as numbers (`c0`, rounded to binary32) or
/// binary32 patterns (`c0_bits`, below 2^32); the [`Gemm`] holds the
/// patterns either way, in both dataflows (the output-stationary
/// floating-point grid's accumulators start at start(C0), the
/// weight-stationary one's running sums begin there). A grid built without
/// `c0_add` (an integer or floating-point output-stationary grid) takes no
/// C0: `c0` (or `c0_bits`) is an error, each key given reported.
pub fn parse_input(v: &Value, cfg: &SystolicParams) -> Result<Gemm, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with matrices `a` and `b`"))));
    };
    let float = cfg.float();
    for k in obj.keys() {
        let k = k.as_str();
        let base = k.strip_suffix("_bits").filter(|b| ["a", "b", "c0"].contains(b));
        if float {
            if !["a", "b", "c0", "a_type", "b_type"].contains(&k) && base.is_none() {
                e.push(err(k, "(given)", "absent: keys are a or a_bits, b or b_bits, c0 or c0_bits, a_type, b_type"));
            }
        } else if let Some(base) = base {
            e.push(err(
                k,
                "(given)",
                format!(
                    "absent: bit patterns are for floating-point types; integer types ({} x {}) take `{base}`",
                    cfg.a_type.name(),
                    cfg.b_type.name()
                ),
            ));
        } else if !["a", "b", "c0", "a_type", "b_type"].contains(&k) {
            e.push(err(k, "(given)", "absent: keys are a, b, c0, a_type, b_type"));
        }
    }
    for (key, want) in [("a_type", cfg.a_type), ("b_type", cfg.b_type)] {
        if let Some(x) = obj.get(key) {
            if x.as_str() != Some(want.name()) {
                e.push(err(key, shown(x), format!("\"{}\" (the block's {key} parameter)", want.name())));
            }
        }
    }
    let int_source = |key: &'static str, t: ElemType| Source {
        key,
        elem: Box::new(move |x: &Value| x.as_i64().filter(|e| (t.min()..=t.max()).contains(e))),
        allowed: format!("an integer from {} to {} ({})", t.min(), t.max(), t.name()),
        noun: "integers",
    };
    // An operand's source: `None` when it is missing or given twice (both
    // reported).
    let operand = |e: &mut Violations, key: &'static str, what: &str, t: ElemType| -> Option<Source> {
        if !float {
            if !obj.contains_key(key) {
                e.push(err(key, "(missing)", "a list of lists of integers"));
                return None;
            }
            return Some(int_source(key, t));
        }
        let numbers = fp_choice(e, obj, key, what, true)?;
        let ft = FpType::of(t).expect("a floating-point grid has floating-point element types");
        Some(fp_source(key, numbers, ft.name(), ft.bits(), move |x| ft.from_f64(x)))
    };

    let a_src = operand(&mut e, "a", "A", cfg.a_type);
    let a = a_src.as_ref().and_then(|s| matrix(&mut e, s, &obj[s.key], None, None));
    let a_key = a_src.as_ref().map_or("a", |s| s.key);
    let (m, k) = a.as_ref().map_or((None, None), |a| (Some(a.len()), Some(a[0].len())));
    let b_src = operand(&mut e, "b", "B", cfg.b_type);
    let b = b_src.as_ref().and_then(|s| {
        let rows = k.map(|k| (k, "the columns of a"));
        matrix(&mut e, s, &obj[s.key], rows, None)
    });
    let n = b.as_ref().map(|b| b[0].len());

    // C0: `Some(None)` when given but refused.
    let c0_key = if float && obj.contains_key("c0_bits") { "c0_bits" } else { "c0" };
    // Without the C0 add (output-stationary grids built so, integer or
    // floating point) any C0 is an error, as numbers or as patterns; each
    // key given is reported (an integer grid's `c0_bits` is already refused
    // with the keys). With it, a floating-point grid of either dataflow
    // reads `c0` or `c0_bits` below.
    let c0_refused = !cfg.c0_add && {
        let keys: &[&str] = if float { &["c0", "c0_bits"] } else { &["c0"] };
        let mut given = false;
        for &key in keys.iter().filter(|&&k| obj.contains_key(k)) {
            e.push(err(key, "(given)", "absent: the grid is built without the C0 add (parameter c0_add = false)"));
            given = true;
        }
        given
    };
    let c0 = match obj.get(c0_key) {
        None => None,
        Some(_) if c0_refused => None,
        Some(cv) => {
            let src = if float {
                fp_choice(&mut e, obj, "c0", "C0", false).map(|numbers| fp_source("c0", numbers, "binary32", 32, f32_from_f64))
            } else {
                let (lo, hi) = acc_range(cfg);
                Some(Source {
                    key: "c0",
                    elem: Box::new(move |x: &Value| -> Option<i64> {
                        if let Some(e) = x.as_i64() {
                            return ((e as i128) >= lo && (e as i128) <= hi).then_some(e);
                        }
                        // Above i64::MAX: only an unsigned 64-bit accumulator
                        // holds it (kept as its bit pattern).
                        x.as_u64().filter(|&u| (u as i128) <= hi).map(|u| u as i64)
                    }),
                    allowed: format!(
                        "an integer from {lo} to {hi} (the {} {}-bit accumulator)",
                        if cfg.signed() { "signed" } else { "unsigned" },
                        cfg.acc_bits
                    ),
                    noun: "integers",
                })
            };
            let rows = m.map(|m| (m, "the rows of a"));
            let cols = n.map(|n| (n, "the columns of b"));
            Some(src.and_then(|s| matrix(&mut e, &s, cv, rows, cols)))
        }
    };
    if let (Some(m), Some(k), Some(n)) = (m, k, n) {
        let size = program_size(cfg, m, k, n);
        if size > MAX_PROGRAM {
            e.push(err(
                a_key,
                format!("a {m} x {k} matrix (with b {k} x {n})"),
                format!(
                    "a GEMM whose step program on this {} x {} grid holds at most {MAX_PROGRAM} lane vectors \
                     (this one would hold {size}, in memory); run it in parts",
                    cfg.rows, cfg.cols
                ),
            ));
        }
    }
    if !e.is_empty() {
        return Err(e.stop(None));
    }
    let (Some(a), Some(b)) = (a, b) else { return Err(e.stop(None)) };
    let c0 = match c0 {
        None => None,
        Some(Some(c)) => Some(c),
        Some(None) => return Err(e.stop(None)),
    };
    Ok(Gemm { a, b, c0 })
}

/// A binary32 pattern as an output number: its value (the f32's exact
/// value as a JSON number), NaN as "nan", infinities as "inf" / "-inf".
fn f32_json(bits: u32) -> Value {
    let f = f32::from_bits(bits);
    if f.is_nan() {
        Value::from("nan")
    } else if f.is_infinite() {
        Value::from(if f > 0.0 { "inf" } else { "-inf" })
    } else {
        Value::from(f as f64)
    }
}

/// The output file: `c` (unsigned 64-bit accumulator values written as
/// unsigned; for floating-point types the binary32 values as numbers, NaN
/// as "nan", Inf as "inf" / "-inf", and `c_bits`, their patterns),
/// `cycles`, and when the grid has counters, the counts and `utilization`.
pub fn output_json(cfg: &SystolicParams, o: &Outcome) -> Value {
    let unsigned = !cfg.signed();
    let float = cfg.float();
    let rows = |f: &dyn Fn(i64) -> Value| -> Vec<Value> {
        o.c.iter().map(|row| Value::Array(row.iter().map(|&x| f(x)).collect())).collect()
    };
    let c = if float {
        rows(&|x| f32_json(x as u32))
    } else {
        rows(&|x| if unsigned { Value::from(x as u64) } else { Value::from(x) })
    };
    let mut v = serde_json::json!({
        "c": c,
        "cycles": o.cycles,
        "useful_macs": o.useful_macs,
        "gated_products": o.gated_products,
        "skipped_ksteps": o.skipped_ksteps,
        "utilization": o.utilization(cfg),
    });
    if float {
        if let Some(m) = v.as_object_mut() {
            m.insert("c_bits".to_string(), Value::Array(rows(&|x| Value::from(x as u32))));
        }
    }
    // A grid built without counters (stats = false) reports none, nor the
    // utilization, which is the useful count over the cycles.
    if !cfg.stats {
        if let Some(m) = v.as_object_mut() {
            for k in ["useful_macs", "gated_products", "skipped_ksteps", "utilization"] {
                m.remove(k);
            }
        }
    }
    v
}

/// Block pruning (seed §369): split `m` into `block` x `block` tiles (edge
/// tiles smaller); zero every tile whose |sum of its elements| < threshold.
pub fn prune(m: &[Vec<i64>], block: usize, threshold: i64) -> Vec<Vec<i64>> {
    assert!(block >= 1, "prune: block must be at least 1");
    let mut out = m.to_vec();
    let rows = m.len();
    let cols = m.first().map_or(0, |r| r.len());
    for r0 in (0..rows).step_by(block) {
        for c0 in (0..cols).step_by(block) {
            let (r1, c1) = ((r0 + block).min(rows), (c0 + block).min(cols));
            let sum: i128 = (r0..r1).flat_map(|i| (c0..c1).map(move |j| (i, j))).map(|(i, j)| m[i][j] as i128).sum();
            if sum.abs() < threshold as i128 {
                for row in out.iter_mut().take(r1).skip(r0) {
                    for x in row.iter_mut().take(c1).skip(c0) {
                        *x = 0;
                    }
                }
            }
        }
    }
    out
}

