//! `gpurtl run systolic` files: the input (checked, first violation
//! reported), the output, and block pruning of test matrices.

use super::reference::acc_range;
use super::{Gemm, Outcome};
use crate::models::{err, shown, InputError};
use gpurtl_params::systolic::{ElemType, SystolicParams};
use serde_json::Value;

/// A matrix of the input file, checked: `rows` (the row count, or `None`:
/// at least 1) and `cols` (the row length, or `None`: at least 1, every row
/// as long as row 0), each with the reason shown in the message; `elem`
/// reads one value or rejects it with `elem_allowed`.
fn matrix(
    name: &str,
    v: &Value,
    rows: Option<(usize, &str)>,
    cols: Option<(usize, &str)>,
    elem: &dyn Fn(&Value) -> Option<i64>,
    elem_allowed: &str,
) -> Result<Vec<Vec<i64>>, InputError> {
    let list = v.as_array().ok_or_else(|| err(name, shown(v), "a list of lists of integers"))?;
    match rows {
        None if list.is_empty() => return Err(err(name, "a list of 0 rows", "a list of at least 1 row")),
        Some((n, why)) if list.len() != n => {
            return Err(err(name, format!("a list of {} rows", list.len()), format!("a list of {n} rows ({why})")))
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(list.len());
    let mut width: Option<(usize, String)> = cols.map(|(n, why)| (n, why.to_string()));
    for (i, row) in list.iter().enumerate() {
        let at = format!("{name}[{i}]");
        let vals = row.as_array().ok_or_else(|| err(&at, shown(row), "a list of integers"))?;
        match &width {
            None => {
                if vals.is_empty() {
                    return Err(err(&at, "a list of 0 values", "a list of at least 1 value"));
                }
                width = Some((vals.len(), format!("the length of {name}[0]")));
            }
            Some((n, why)) => {
                if vals.len() != *n {
                    return Err(err(&at, format!("a list of {} values", vals.len()), format!("a list of {n} values ({why})")));
                }
            }
        }
        let mut r = Vec::with_capacity(vals.len());
        for (j, x) in vals.iter().enumerate() {
            match elem(x) {
                Some(e) => r.push(e),
                None => return Err(err(format!("{at}[{j}]"), shown(x), elem_allowed)),
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// Parse and check an input file (docs/systolic.md "`gpurtl run systolic`"),
/// first violation reported. Order: the object, its keys, `a_type`, `b_type`,
/// `a` (row by row: list, length, values), `b`, `c0`.
pub fn parse_input(v: &Value, cfg: &SystolicParams) -> Result<Gemm, InputError> {
    let obj = v.as_object().ok_or_else(|| err("(file)", shown(v), "a JSON object with matrices `a` and `b`"))?;
    for k in obj.keys() {
        if !["a", "b", "c0", "a_type", "b_type"].contains(&k.as_str()) {
            return Err(err(k.as_str(), "(given)", "absent: keys are a, b, c0, a_type, b_type"));
        }
    }
    for (key, want) in [("a_type", cfg.a_type), ("b_type", cfg.b_type)] {
        if let Some(x) = obj.get(key) {
            if x.as_str() != Some(want.name()) {
                return Err(err(key, shown(x), format!("\"{}\" (the block's {key} parameter)", want.name())));
            }
        }
    }
    let elem_of = |t: ElemType| {
        move |x: &Value| x.as_i64().filter(|e| (t.min()..=t.max()).contains(e))
    };
    let type_allowed = |t: ElemType| format!("an integer from {} to {} ({})", t.min(), t.max(), t.name());

    let av = obj.get("a").ok_or_else(|| err("a", "(missing)", "a list of lists of integers"))?;
    let a = matrix("a", av, None, None, &elem_of(cfg.a_type), &type_allowed(cfg.a_type))?;
    let (m, k) = (a.len(), a[0].len());

    let bv = obj.get("b").ok_or_else(|| err("b", "(missing)", "a list of lists of integers"))?;
    let b = matrix("b", bv, Some((k, "the columns of a")), None, &elem_of(cfg.b_type), &type_allowed(cfg.b_type))?;
    let n = b[0].len();

    let c0 = match obj.get("c0") {
        None => None,
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
            Some(matrix("c0", cv, Some((m, "the rows of a")), Some((n, "the columns of b")), &acc, &allowed)?)
        }
    };
    Ok(Gemm { a, b, c0 })
}

/// The output file: `c` (unsigned 64-bit accumulator values written as
/// unsigned), the counters, `cycles` and `utilization`.
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
    serde_json::json!({
        "c": c,
        "cycles": o.cycles,
        "useful_macs": o.useful_macs,
        "gated_products": o.gated_products,
        "skipped_ksteps": o.skipped_ksteps,
        "utilization": o.utilization(cfg),
    })
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

