//! gpurtl block parameters: the one definition of every block's parameter set.
//!
//! Each block has one params struct here (`compress::CompressParams`, ...):
//! its table (name, kind, allowed values, a sentence), defaults, `validate()`,
//! presets and the values derived from it (index widths, bytes per beat, ...).
//! The hardware description (`gpurtl-hw`), the golden model and testbench
//! (`gpurtl-sim`) and the command line (`gpurtl-gen`) all use that struct, so
//! the parameter set is written once. What stays apart is the arithmetic: the
//! models never import the hardware description or the RTL layer.
//!
//! Applying parameters: [`resolve`] starts from the defaults, applies JSON
//! objects (a preset, a file) and `KEY=VALUE` pairs, checking names and types
//! against the block's [`ParamInfo`] table, then calls the struct's
//! `validate()` (ranges and cross-field rules). Both steps collect every
//! violation before failing; each message names the field, the value and what
//! is allowed.
//!
//! Composed designs nest parameter sets: a field that is itself a params
//! struct appears in the table as `child.field` (`--param sched.sms=8` on the
//! command line, `{"sched": {"sms": 8}}` or `{"sched.sms": 8}` in JSON); see
//! [`nested_table`] and [`Checker::nested`].

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Every block, in the order `gpurtl list` shows them: the one list a new
/// block is added to. Each crate declares one module per name from it
/// (`params/src/<b>.rs`, `hw/src/blocks/<b>.rs`, `sim/src/models/<b>.rs`,
/// `sim/src/tb/<b>.rs`, `gen/src/blocks/<b>.rs`), and the command line
/// registers the adapter that `gen/src/blocks/<b>.rs` defines. `callback` is
/// a macro taking the names as a comma-separated list of identifiers.
#[macro_export]
macro_rules! for_each_block {
    ($callback:ident) => {
        $callback!(compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu);
    };
}

/// A parameter whose value is one of a few names: an enum that serializes
/// as its name, with the list of names for the parameter table.
macro_rules! param_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The names, in declaration order, as the parameter table lists them.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
            pub fn from_name(s: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.name() == s)
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

macro_rules! block_modules {
    ($($block:ident),* $(,)?) => { $(pub mod $block;)* };
}
for_each_block!(block_modules);

param_enum! {
    /// How a block that reads memory reaches it (docs/memory.md, `mem_if`).
    pub enum MemIf {
        /// The block's own native ports.
        Native = "native",
        /// One AXI4 master `m_axi_*` through an arbiter and its bridge.
        Axi4 = "axi4",
    }
}

/// `ceil(log2(n))`: index bits for `n` items (0 for `n <= 1`).
pub fn clog2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Bits needed to hold the value `n` (at least 1).
pub fn bits_for(n: u64) -> u32 {
    (64 - n.leading_zeros()).max(1)
}

#[derive(Clone, Debug)]
pub enum ParamKind {
    /// An integer in `min..=max`; `rule` adds a constraint in words (e.g. "a power of two").
    Int { min: i64, max: i64, rule: &'static str },
    Bool,
    Choice(&'static [&'static str]),
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    /// The name on the command line: a field, or `child.field` in a composed set.
    pub name: String,
    pub kind: ParamKind,
    pub doc: &'static str,
}

impl ParamInfo {
    pub fn new(name: &str, kind: ParamKind, doc: &'static str) -> ParamInfo {
        ParamInfo { name: name.to_string(), kind, doc }
    }

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

/// The table of a nested parameter set, each name prefixed with `prefix.`.
pub fn nested_table(prefix: &str, table: Vec<ParamInfo>) -> Vec<ParamInfo> {
    table.into_iter().map(|p| ParamInfo { name: format!("{prefix}.{}", p.name), ..p }).collect()
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

impl ParamErrors {
    /// Violations a message lists; the rest (a file of many unknown keys)
    /// are counted on a last line.
    pub const SHOWN: usize = 50;
}

impl fmt::Display for ParamErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().take(Self::SHOWN).enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        if self.0.len() > Self::SHOWN {
            write!(f, "\nparameters: {} more violations (the first {} are listed above)", self.0.len() - Self::SHOWN, Self::SHOWN)?;
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
    /// The violations of a nested parameter set, named `prefix.field`.
    pub fn nested(&mut self, prefix: &str, result: Result<(), ParamErrors>) {
        if let Err(ParamErrors(es)) = result {
            self.0.extend(es.into_iter().map(|e| ParamError { field: format!("{prefix}.{}", e.field), ..e }));
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
    /// What preset `name` is for, in a sentence (`gpurtl list BLOCK
    /// --markdown --table presets`); empty when the block says nothing.
    fn preset_doc(_name: &str) -> &'static str {
        ""
    }
}

/// The leaves of a parameter object in field order, nested objects as
/// dotted names (`{"a": {"b": 1}}` is `a.b = 1`). An object is opened only
/// where `is_group` says its name is a nested parameter set.
pub fn flatten(v: &Value, is_group: &dyn Fn(&str) -> bool) -> Vec<(String, Value)> {
    fn walk(prefix: &str, v: &Value, is_group: &dyn Fn(&str) -> bool, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    if x.is_object() && is_group(&name) {
                        walk(&name, x, is_group, out);
                    } else {
                        out.push((name, x.clone()));
                    }
                }
            }
            other => out.push((prefix.to_string(), other.clone())),
        }
    }
    let mut out = Vec::new();
    walk("", v, is_group, &mut out);
    out
}

/// The resolved parameters as `(name, value)` pairs, nested sets flattened
/// to dotted names, in field order: what banners and commands print.
pub fn flat_params(v: &Value) -> Vec<(String, Value)> {
    flatten(v, &|_| true)
}

/// `v` with the leaf at the dotted `path` set to `x` (objects created on the way).
fn set_path(v: &mut Value, path: &str, x: Value) {
    let mut cur = v;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let m = cur.as_object_mut().expect("made an object above");
        if parts.peek().is_none() {
            m.insert(part.to_string(), x);
            return;
        }
        cur = m.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Defaults, then each JSON object of `layers` in order (a preset, a file),
/// then `KEY=VALUE` pairs, type-checked against the table; then `validate()`.
pub fn resolve<P: BlockParams>(layers: &[&Value], pairs: &[(String, String)]) -> Result<P, ParamErrors> {
    let table = P::table();
    let mut obj = serde_json::to_value(P::default()).unwrap_or_else(|_| Value::Object(Map::new()));
    let is_group = |name: &str| table.iter().any(|p| p.name.starts_with(&format!("{name}.")));
    let mut errs = Vec::new();
    let unknown = |name: &str| ParamError {
        field: short_text(name),
        value: String::new(),
        allowed: format!(
            "unknown for block `{}`; known: {}",
            P::BLOCK,
            table.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    };
    // Every value given, type-checked, in order (a later one wins).
    let mut given: Vec<(usize, Value)> = Vec::new();
    let mut give = |info: &ParamInfo, v: Value| {
        let i = table.iter().position(|p| p.name == info.name).unwrap_or(0);
        given.retain(|(j, _)| *j != i);
        given.push((i, v));
    };
    for layer in layers {
        if !layer.is_object() {
            errs.push(ParamError {
                field: "(params file)".into(),
                value: short(layer),
                allowed: "a JSON object of parameter names to values".into(),
            });
            continue;
        }
        for (k, v) in flatten(layer, &is_group) {
            match table.iter().find(|p| p.name == k) {
                None => errs.push(unknown(&k)),
                Some(info) => match typed(info, &v) {
                    Ok(v) => give(info, v),
                    Err(e) => errs.push(e),
                },
            }
        }
    }
    for (k, raw) in pairs {
        match table.iter().find(|p| p.name == *k) {
            None => errs.push(unknown(k)),
            Some(info) => match parse_raw(info, raw) {
                Ok(v) => give(info, v),
                Err(e) => errs.push(e),
            },
        }
    }
    // A value the field cannot hold at all (a negative count, one past 2^32)
    // is out of the table's range: reported as such, the default kept.
    let defaults = obj.clone();
    for (i, v) in given {
        let info = &table[i];
        let mut alone = defaults.clone();
        set_path(&mut alone, &info.name, v.clone());
        if serde_json::from_value::<P>(alone).is_ok() {
            set_path(&mut obj, &info.name, v);
        } else {
            errs.push(ParamError { field: info.name.clone(), value: short(&v), allowed: info.allowed() });
        }
    }
    let p: P = serde_json::from_value(obj).map_err(|e| {
        ParamErrors(vec![ParamError { field: "(parameters)".into(), value: e.to_string(), allowed: "a valid set".into() }])
    })?;
    // Then the block's own rules, on what could be applied; every violation
    // of both steps, in table order, one per field.
    if let Err(ParamErrors(more)) = p.validate() {
        for e in more {
            if !errs.iter().any(|x| x.field == e.field) {
                errs.push(e);
            }
        }
    }
    if errs.is_empty() {
        return Ok(p);
    }
    let rank = |f: &str| table.iter().position(|p| p.name == f).unwrap_or(0);
    errs.sort_by_key(|e| rank(&e.field));
    Err(ParamErrors(errs))
}

/// A JSON value as a message shows it: its first 40 characters and `...`
/// when longer (cut between characters, never inside one).
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s,
    }
}

/// A name as a message shows it: its first 40 characters and `...` when longer.
fn short_text(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

fn typed(info: &ParamInfo, v: &Value) -> Result<Value, ParamError> {
    let bad = || ParamError { field: info.name.clone(), value: short(v), allowed: info.allowed() };
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
    let bad = || ParamError { field: info.name.clone(), value: format!("`{raw}`"), allowed: info.allowed() };
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn widths() {
        assert_eq!((clog2(0), clog2(1), clog2(2), clog2(3), clog2(1024)), (0, 0, 1, 2, 10));
        assert_eq!((bits_for(0), bits_for(1), bits_for(2), bits_for(255), bits_for(256)), (1, 1, 2, 8, 9));
    }

    #[test]
    fn long_values_are_cut_between_characters() {
        // 30 two-byte characters: 62 bytes, 32 characters, shown whole.
        assert_eq!(short(&json!("é".repeat(30))), format!("\"{}\"", "é".repeat(30)));
        assert_eq!(short(&json!("é".repeat(50))), format!("\"{}...", "é".repeat(39)));
        assert_eq!(short(&json!(12)), "12");
    }

    #[test]
    fn nested_objects_flatten_to_dotted_names() {
        let v = json!({"a": 1, "s": {"b": true, "c": {"d": "x"}}});
        let names: Vec<String> = flat_params(&v).into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["a", "s.b", "s.c.d"]);
        let mut w = json!({"s": {"b": false}});
        set_path(&mut w, "s.c.d", json!(3));
        assert_eq!(w, json!({"s": {"b": false, "c": {"d": 3}}}));
    }
}
