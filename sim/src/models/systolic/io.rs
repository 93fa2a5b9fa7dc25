//! `gpurtl run systolic` files: the input (checked, first violation
//! reported), the output, and block pruning of test matrices.

use super::reference::acc_range;
use super::{Gemm, Outcome};
use crate::models::{err, shown, InputErrors, Violations};
use gpurtl_params::systolic::{Dataflow, ElemType, SystolicParams};
use serde_json::Value;

/// A matrix of the input file, checked: `rows` (the row count, or `None`:
/// at least 1) and `cols` (the row length, or `None`: at least 1, every row
/// as long as row 0), each with the reason shown in the message; `elem`
/// reads one value or rejects it with `elem_allowed`. Violations go to `e`;
/// `None` if there was any.
fn matrix(
    e: &mut Violations,
    name: &str,
    v: &Value,
    rows: Option<(usize, &str)>,
    cols: Option<(usize, &str)>,
    elem: &dyn Fn(&Value) -> Option<i64>,
    elem_allowed: &str,
) -> Option<Vec<Vec<i64>>> {
    let Some(list) = v.as_array() else {
        e.push(err(name, shown(v), "a list of lists of integers"));
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
            e.push(err(&at, shown(row), "a list of integers"));
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

/// Parse and check an input file (docs/systolic.md "`gpurtl run systolic`");
/// every violation is reported, in this order: the keys, `a_type`,
/// `b_type`, `a` (row by row: list, length, values), `b`, `c0`, and the size
/// of the step program.
pub fn parse_input(v: &Value, cfg: &SystolicParams) -> Result<Gemm, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with matrices `a` and `b`"))));
    };
    for k in obj.keys() {
        if !["a", "b", "c0", "a_type", "b_type"].contains(&k.as_str()) {
            e.push(err(k.as_str(), "(given)", "absent: keys are a, b, c0, a_type, b_type"));
        }
    }
    for (key, want) in [("a_type", cfg.a_type), ("b_type", cfg.b_type)] {
        if let Some(x) = obj.get(key) {
            if x.as_str() != Some(want.name()) {
                e.push(err(key, shown(x), format!("\"{}\" (the block's {key} parameter)", want.name())));
            }
        }
    }
    let elem_of = |t: ElemType| {
        move |x: &Value| x.as_i64().filter(|e| (t.min()..=t.max()).contains(e))
    };
    let type_allowed = |t: ElemType| format!("an integer from {} to {} ({})", t.min(), t.max(), t.name());
    let missing = |e: &mut Violations, key: &str| e.push(err(key, "(missing)", "a list of lists of integers"));

    let a = match obj.get("a") {
        None => {
            missing(&mut e, "a");
            None
        }
        Some(av) => matrix(&mut e, "a", av, None, None, &elem_of(cfg.a_type), &type_allowed(cfg.a_type)),
    };
    let (m, k) = a.as_ref().map_or((None, None), |a| (Some(a.len()), Some(a[0].len())));
    let b = match obj.get("b") {
        None => {
            missing(&mut e, "b");
            None
        }
        Some(bv) => {
            let rows = k.map(|k| (k, "the columns of a"));
            matrix(&mut e, "b", bv, rows, None, &elem_of(cfg.b_type), &type_allowed(cfg.b_type))
        }
    };
    let n = b.as_ref().map(|b| b[0].len());

    let c0 = match obj.get("c0") {
        None => None,
        Some(_) if !cfg.c0_add => {
            e.push(err("c0", "(given)", "absent: the grid is built without the C0 add (parameter c0_add = false)"));
            None
        }
        Some(cv) => {
            let (lo, hi) = acc_range(cfg);
            let acc = |x: &Value| -> Option<i64> {
                if let Some(e) = x.as_i64() {
                    return ((e as i128) >= lo && (e as i128) <= hi).then_some(e);
                }
                // Above i64::MAX: only an unsigned 64-bit accumulator holds it
                // (kept as its bit pattern).
                x.as_u64().filter(|&u| (u as i128) <= hi).map(|u| u as i64)
            };
            let allowed = format!(
                "an integer from {lo} to {hi} (the {} {}-bit accumulator)",
                if cfg.signed() { "signed" } else { "unsigned" },
                cfg.acc_bits
            );
            let rows = m.map(|m| (m, "the rows of a"));
            let cols = n.map(|n| (n, "the columns of b"));
            Some(matrix(&mut e, "c0", cv, rows, cols, &acc, &allowed))
        }
    };
    if let (Some(m), Some(k), Some(n)) = (m, k, n) {
        let size = program_size(cfg, m, k, n);
        if size > MAX_PROGRAM {
            e.push(err(
                "a",
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

/// The output file: `c` (unsigned 64-bit accumulator values written as
/// unsigned), `cycles`, and when the grid has counters, the counts and
/// `utilization`.
pub fn output_json(cfg: &SystolicParams, o: &Outcome) -> Value {
    let unsigned = !cfg.signed();
    let c: Vec<Value> = o
        .c
        .iter()
        .map(|row| {
            Value::Array(
                row.iter()
                    .map(|&x| if unsigned { Value::from(x as u64) } else { Value::from(x) })
                    .collect(),
            )
        })
        .collect();
    let mut v = serde_json::json!({
        "c": c,
        "cycles": o.cycles,
        "useful_macs": o.useful_macs,
        "gated_products": o.gated_products,
        "skipped_ksteps": o.skipped_ksteps,
        "utilization": o.utilization(cfg),
    });
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

