//! Block parameters: one table per block, validated with messages that name
//! the field, the value and what is allowed.
//!
//! A block's params struct is plain serde. The CLI starts from the defaults,
//! applies a JSON file and `--param K=V` pairs through [`apply`] (which checks
//! names and types against the block's [`ParamInfo`] table), then calls the
//! struct's `validate()` (which checks ranges and cross-field rules). Both
//! steps collect every violation before failing.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};
use std::fmt;

#[derive(Clone, Debug)]
pub enum ParamKind {
    /// An integer in `min..=max`; `rule` adds a constraint in words (e.g. "a power of two").
    Int { min: i64, max: i64, rule: &'static str },
    Bool,
    Choice(&'static [&'static str]),
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub kind: ParamKind,
    pub doc: &'static str,
}

impl ParamInfo {
    /// What is allowed, in words, for messages and `gpurtl list`.
    pub fn allowed(&self) -> String {
        match &self.kind {
            ParamKind::Int { min, max, rule: "" } => format!("an integer from {min} to {max}"),
            ParamKind::Int { min, max, rule } => format!("{rule} from {min} to {max}"),
            ParamKind::Bool => "true or false".into(),
            ParamKind::Choice(c) => format!("one of {}", c.join(", ")),
        }
    }
}

/// One violated rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub field: String,
    pub value: String,
    pub allowed: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "parameter `{}`: {}", self.field, self.allowed)
        } else {
            write!(f, "parameter `{}` = {}: must be {}", self.field, self.value, self.allowed)
        }
    }
}

/// Every violated rule of one parameter set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamErrors(pub Vec<ParamError>);

impl fmt::Display for ParamErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParamErrors {}

/// Collects violations; `finish` fails if there was any.
#[derive(Default)]
pub struct Checker(Vec<ParamError>);

impl Checker {
    pub fn check(&mut self, ok: bool, field: &str, value: impl fmt::Display, allowed: impl Into<String>) {
        if !ok {
            self.0.push(ParamError { field: field.into(), value: value.to_string(), allowed: allowed.into() });
        }
    }
    /// Range check against the table entry of `field`.
    pub fn int(&mut self, table: &[ParamInfo], field: &str, value: i64, extra_ok: bool) {
        let info = table.iter().find(|p| p.name == field).expect("field is in its block's table");
        if let ParamKind::Int { min, max, .. } = info.kind {
            self.check(value >= min && value <= max && extra_ok, field, value, info.allowed());
        }
    }
    pub fn finish(self) -> Result<(), ParamErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ParamErrors(self.0))
        }
    }
}

/// What every block's params struct provides.
pub trait BlockParams: Serialize + DeserializeOwned + Default + Clone {
    /// The block's name on the command line.
    const BLOCK: &'static str;
    fn table() -> Vec<ParamInfo>;
    fn validate(&self) -> Result<(), ParamErrors>;
    /// Named parameter sets, the first being the defaults.
    fn presets() -> Vec<(&'static str, Self)>;
}

/// Defaults, then the JSON object `file` (if any), then `KEY=VALUE` pairs,
/// type-checked against the table; then `validate()`.
pub fn apply<P: BlockParams>(file: Option<&Value>, pairs: &[(String, String)]) -> Result<P, ParamErrors> {
    let table = P::table();
    let mut obj = match serde_json::to_value(P::default()) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut errs = Vec::new();
    let unknown = |name: &str| ParamError {
        field: name.to_string(),
        value: String::new(),
        allowed: format!(
            "unknown for block `{}`; known: {}",
            P::BLOCK,
            table.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        ),
    };
    if let Some(file) = file {
        match file {
            Value::Object(m) => {
                for (k, v) in m {
                    match table.iter().find(|p| p.name == k) {
                        None => errs.push(unknown(k)),
                        Some(info) => match typed(info, v) {
                            Ok(v) => {
                                obj.insert(k.clone(), v);
                            }
                            Err(e) => errs.push(e),
                        },
                    }
                }
            }
            other => errs.push(ParamError {
                field: "(params file)".into(),
                value: short(other),
                allowed: "a JSON object of parameter names to values".into(),
            }),
        }
    }
    for (k, raw) in pairs {
        match table.iter().find(|p| p.name == k) {
            None => errs.push(unknown(k)),
            Some(info) => match parse_raw(info, raw) {
                Ok(v) => {
                    obj.insert(k.clone(), v);
                }
                Err(e) => errs.push(e),
            },
        }
    }
    if !errs.is_empty() {
        return Err(ParamErrors(errs));
    }
    let p: P = serde_json::from_value(Value::Object(obj)).map_err(|e| {
        ParamErrors(vec![ParamError { field: "(parameters)".into(), value: e.to_string(), allowed: "a valid set".into() }])
    })?;
    p.validate()?;
    Ok(p)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}...", &s[..40])
    } else {
        s
    }
}

fn typed(info: &ParamInfo, v: &Value) -> Result<Value, ParamError> {
    let bad = || ParamError { field: info.name.into(), value: short(v), allowed: info.allowed() };
    match &info.kind {
        ParamKind::Int { .. } => v.as_i64().map(Value::from).ok_or_else(bad),
        ParamKind::Bool => v.as_bool().map(Value::from).ok_or_else(bad),
        ParamKind::Choice(c) => match v.as_str() {
            Some(s) if c.contains(&s) => Ok(v.clone()),
            _ => Err(bad()),
        },
    }
}

fn parse_raw(info: &ParamInfo, raw: &str) -> Result<Value, ParamError> {
    let bad = || ParamError { field: info.name.into(), value: format!("`{raw}`"), allowed: info.allowed() };
    match &info.kind {
        ParamKind::Int { .. } => raw.trim().parse::<i64>().map(Value::from).map_err(|_| bad()),
        ParamKind::Bool => match raw.trim() {
            "true" | "1" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(bad()),
        },
        ParamKind::Choice(c) => {
            if c.contains(&raw.trim()) {
                Ok(Value::from(raw.trim()))
            } else {
                Err(bad())
            }
        }
    }
}
