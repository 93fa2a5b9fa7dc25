//! Golden model of the compress/expand unit, straight from seed 004 tables 5
//! and 6:
//!
//! ```text
//! compress: j = 0; for i in 0..n { if a[i] { b[j++] = c[i] } }
//! expand:   j = 0; for i in 0..n { if a[i] { b[i] = c[j++] } }
//! ```
//!
//! Unwritten destination elements keep `old` or become zero. Timing: one
//! operation per cycle, `latency` cycles to the result, so a run of n
//! operations without stalls takes n - 1 + latency cycles from the first
//! input transfer to the last output transfer.

use serde::{Deserialize, Serialize};
use super::{err, shown, InputErrors, Violations};
use serde_json::Value;

mod stream;
pub use stream::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Compress,
    Expand,
}

/// One operation, as in the `ops` list of `gpurtl run compress`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub op: Kind,
    pub element_bits: u32,
    pub src: Vec<u64>,
    /// `None`: the mask is generated as src != 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<Vec<u8>>,
    /// `None`: zeros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Vec<u64>>,
    #[serde(default)]
    pub zeroing: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpResult {
    pub dst: Vec<u64>,
    pub mask: Vec<u8>,
    pub count: u32,
}

/// The whole output file of `gpurtl run compress`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    pub results: Vec<OpResult>,
    pub cycles: u64,
}

pub fn apply(op: &Op) -> OpResult {
    let n = op.src.len();
    let mask: Vec<u8> = match &op.mask {
        Some(m) => m.clone(),
        None => op.src.iter().map(|&x| (x != 0) as u8).collect(),
    };
    let old = op.old.clone().unwrap_or_else(|| vec![0; n]);
    let mut dst: Vec<Option<u64>> = vec![None; n];
    let mut j = 0;
    for i in 0..n {
        if mask[i] == 1 {
            match op.op {
                Kind::Compress => dst[j] = Some(op.src[i]),
                Kind::Expand => dst[i] = Some(op.src[j]),
            }
            j += 1;
        }
    }
    let dst = dst
        .iter()
        .zip(&old)
        .map(|(d, &o)| d.unwrap_or(if op.zeroing { 0 } else { o }))
        .collect();
    OpResult { dst, mask, count: j as u32 }
}

/// Results of a run, and its cycle count when nothing stalls.
pub fn run(ops: &[Op], latency: u32) -> Output {
    let results: Vec<OpResult> = ops.iter().map(apply).collect();
    let cycles = if ops.is_empty() { 0 } else { ops.len() as u64 - 1 + latency as u64 };
    // A closed form: the run budget is checked against its length.
    crate::budget::spend(cycles);
    Output { results, cycles }
}

/// Parse and check an input file against a vector width in bits; every
/// violation is reported (docs/compress.md "`gpurtl run compress` input").
pub fn parse_input(v: &Value, width: u32) -> Result<Vec<Op>, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with an `ops` list"))));
    };
    for k in obj.keys().filter(|k| *k != "ops") {
        e.push(err(k.as_str(), "(given)", "absent: the only key is `ops`"));
    }
    let Some(ops) = obj.get("ops") else {
        return Err(e.stop(Some(err("ops", "(missing)", "a list of operations"))));
    };
    let out = parse_ops(&mut e, ops, width);
    e.finish(|| out.unwrap_or_default())
}

/// The `ops` list of an input file; its violations go to `e` (`None` when
/// it is not a list).
fn parse_ops(e: &mut Violations, ops: &Value, width: u32) -> Option<Vec<Op>> {
    let Some(ops) = ops.as_array() else {
        e.push(err("ops", shown(ops), "a list of operations"));
        return None;
    };
    let mut out = Vec::with_capacity(ops.len());
    for (i, o) in ops.iter().enumerate() {
        if let Some(op) = parse_op(e, i, o, width) {
            out.push(op);
        }
    }
    Some(out)
}

/// `element_bits` of an operation or a stream object (`path` names it).
pub(crate) fn element_bits_key(e: &mut Violations, o: &serde_json::Map<String, Value>, path: &str) -> Option<u32> {
    e.take(match o.get("element_bits") {
        None => Err(err(path, "(missing)", "8, 16, 32 or 64")),
        Some(eb) => match eb.as_u64() {
            Some(b @ (8 | 16 | 32 | 64)) => Ok(b as u32),
            _ => Err(err(path, shown(eb), "8, 16, 32 or 64")),
        },
    })
}

/// `zeroing` of an operation or a stream object: absent is false.
pub(crate) fn zeroing_key(e: &mut Violations, o: &serde_json::Map<String, Value>, path: &str) -> Option<bool> {
    e.take(match o.get("zeroing") {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(x) => Err(err(path, shown(x), "true or false")),
    })
}

/// One operation, `ops[i]`; its violations go to `e`.
fn parse_op(e: &mut Violations, i: usize, o: &Value, width: u32) -> Option<Op> {
    let at = |f: &str| format!("ops[{i}].{f}");
    let Some(o) = o.as_object() else {
        e.push(err(format!("ops[{i}]"), shown(o), "an object"));
        return None;
    };
    for k in o.keys() {
        if !["op", "element_bits", "src", "mask", "old", "zeroing"].contains(&k.as_str()) {
            e.push(err(at(k), "(given)", "absent: keys are op, element_bits, src, mask, old, zeroing"));
        }
    }
    let kind = e.take(match o.get("op").map(|x| x.as_str()) {
        Some(Some("compress")) => Ok(Kind::Compress),
        Some(Some("expand")) => Ok(Kind::Expand),
        Some(_) => Err(err(at("op"), shown(&o["op"]), "\"compress\" or \"expand\"")),
        None => Err(err(at("op"), "(missing)", "\"compress\" or \"expand\"")),
    });
    let element_bits = element_bits_key(e, o, &at("element_bits"));
    let zeroing = zeroing_key(e, o, &at("zeroing"));
    // The lists' lengths and ranges follow from the element size.
    let element_bits = element_bits?;
    let n = (width / element_bits) as usize;
    let max = if element_bits == 64 { u64::MAX } else { (1u64 << element_bits) - 1 };
    let list = |e: &mut Violations, f: &str, max: u64, what: &str| -> Option<Vec<u64>> {
        let v = &o[f];
        let Some(a) = v.as_array() else {
            e.push(err(at(f), shown(v), format!("a list of {n} {what}")));
            return None;
        };
        if a.len() != n {
            e.push(err(at(f), format!("a list of {} values", a.len()), format!("a list of {n} values (width {width} / element_bits {element_bits})")));
            return None;
        }
        e.each(&at(f), a, |k, x| match x.as_u64() {
            Some(u) if u <= max => Ok(u),
            _ => Err(err(format!("{}[{k}]", at(f)), shown(x), format!("{what} from 0 to {max}"))),
        })
    };
    let src = match o.get("src") {
        Some(_) => list(e, "src", max, "unsigned integers"),
        None => {
            e.push(err(at("src"), "(missing)", format!("a list of {n} unsigned integers")));
            None
        }
    };
    let mask = match o.get("mask") {
        Some(_) => list(e, "mask", 1, "bits").map(|m| Some(m.into_iter().map(|b| b as u8).collect())),
        None => Some(None),
    };
    let old = match o.get("old") {
        Some(_) => list(e, "old", max, "unsigned integers").map(Some),
        None => Some(None),
    };
    Some(Op { op: kind?, element_bits, src: src?, mask: mask?, old: old?, zeroing: zeroing? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_5_and_6_examples() {
        // Figure 35a: elements a..h, control selects b, e, f, h.
        let src = vec![1, 2, 3, 4, 5, 6, 7, 8];
        let mask = vec![0, 1, 0, 0, 1, 1, 0, 1];
        let c = apply(&Op {
            op: Kind::Compress,
            element_bits: 16,
            src: src.clone(),
            mask: Some(mask.clone()),
            old: Some(vec![9; 8]),
            zeroing: false,
        });
        assert_eq!(c.dst, vec![2, 5, 6, 8, 9, 9, 9, 9]);
        assert_eq!(c.count, 4);
        let e = apply(&Op { op: Kind::Expand, element_bits: 16, src, mask: Some(mask), old: None, zeroing: true });
        assert_eq!(e.dst, vec![0, 1, 0, 0, 2, 3, 0, 4]);
    }

    #[test]
    fn generated_mask_is_nonzero_compare() {
        let r = apply(&Op { op: Kind::Compress, element_bits: 8, src: vec![0, 7, 0, 3], mask: None, old: None, zeroing: false });
        assert_eq!(r.mask, vec![0, 1, 0, 1]);
        assert_eq!(r.dst, vec![7, 3, 0, 0]);
    }
}
