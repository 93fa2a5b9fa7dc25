//! The tables of `gpurtl list BLOCK --table params|presets|ports`: a block's
//! parameters (its [`gpurtl_params::ParamInfo`] table), its presets (with
//! [`gpurtl_params::BlockParams::preset_doc`]) and the ports of its top
//! module (the port list the RTL layer prints in the module's header), as
//! plain text or, with `--markdown`, as the Markdown tables that the block
//! pages hold between `<!-- gpurtl list ... -->` and `<!-- end -->`
//! (gen/tests/doc_tables.rs compares them).

use crate::block::Block;
use crate::error::{Error, Result};
use gpurtl_hw::rtl::SigKind;
use serde_json::Value;
use std::fmt::Write;

/// Which table `--table` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Params,
    Presets,
    Ports,
}

impl Table {
    pub const NAMES: [&'static str; 3] = ["params", "presets", "ports"];

    pub fn parse(raw: &str) -> Result<Table> {
        match raw {
            "params" => Ok(Table::Params),
            "presets" => Ok(Table::Presets),
            "ports" => Ok(Table::Ports),
            _ => Err(Error::Bad(format!("option `--table` = `{raw}`: must be one of {}", Table::NAMES.join(", ")))),
        }
    }
}

/// A JSON value as a table shows it: a string without its quotes.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Text made safe for one Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Rows as a Markdown table under `head`.
fn markdown(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), " --- |".repeat(head.len()));
    for r in rows {
        let _ = writeln!(s, "| {} |", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    }
    s
}

/// The parameters: name, default, what is allowed, what it means.
pub fn params(b: &dyn Block, md: bool) -> String {
    let d = gpurtl_params::flat_params(&b.defaults());
    let value = |name: &str| d.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if !md {
        // As `gpurtl list` has always shown them: strings in quotes.
        let mut s = String::new();
        for p in b.table() {
            let default = value(&p.name).map_or(String::new(), Value::to_string);
            let _ = writeln!(s, "  {:<10} default {:<6} {}; {}", p.name, default, p.allowed(), p.doc);
        }
        return s;
    }
    let default = |name: &str| value(name).map_or(String::new(), show);
    let rows: Vec<Vec<String>> =
        b.table().iter().map(|p| vec![format!("`{}`", p.name), default(&p.name), p.allowed(), p.doc.to_string()]).collect();
    markdown(&["name", "default", "allowed", "meaning"], &rows)
}

/// A preset's parameters that differ from the defaults, as `key=value`, in
/// the table's order.
fn preset_changes(b: &dyn Block, defaults: &Value, preset: &Value) -> Vec<String> {
    let (d, p) = (gpurtl_params::flat_params(defaults), gpurtl_params::flat_params(preset));
    let get = |list: &[(String, Value)], k: &str| list.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
    b.table()
        .iter()
        .filter_map(|info| match (get(&d, &info.name), get(&p, &info.name)) {
            (dv, Some(pv)) if dv.as_ref() != Some(&pv) => Some(format!("{}={}", info.name, show(&pv))),
            _ => None,
        })
        .collect()
}

/// The presets: name, the parameters that differ from the defaults, what it
/// is for.
pub fn presets(b: &dyn Block, md: bool) -> String {
    let defaults = b.defaults();
    let list: Vec<(&str, Vec<String>, &str)> =
        b.presets().iter().map(|(n, v)| (*n, preset_changes(b, &defaults, v), b.preset_doc(n))).collect();
    if !md {
        let w = list.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
        let mut s = String::new();
        for (n, changes, doc) in &list {
            let set = if changes.is_empty() { "the defaults".to_string() } else { changes.join(" ") };
            let doc = if doc.is_empty() { String::new() } else { format!("; {doc}") };
            let _ = writeln!(s, "  {n:<w$}  {set}{doc}");
        }
        return s;
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|(n, changes, doc)| {
            let set = if changes.is_empty() {
                "the defaults".to_string()
            } else {
                changes.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(" ")
            };
            vec![format!("`{n}`"), set, doc.to_string()]
        })
        .collect();
    markdown(&["preset", "parameters", "meaning"], &rows)
}

/// The ports of the block's top module at `params` (`at`: those
/// parameters in words, e.g. "the default parameters"): name, direction,
/// width, meaning (the port's doc string).
pub fn ports(b: &dyn Block, params: &Value, at: &str, md: bool) -> Result<String> {
    let design = b.design(params)?;
    let e = design.elaborate();
    let top = e.top();
    let rows: Vec<[String; 4]> = top
        .module
        .port_signals()
        .map(|p| {
            let dir = if p.kind == SigKind::Input { "in" } else { "out" };
            [p.name.clone(), dir.to_string(), p.width.to_string(), p.doc.clone()]
        })
        .collect();
    if !md {
        let nw = rows.iter().map(|r| r[0].len()).max().unwrap_or(4).max(4);
        let mut s = format!("{}, at {at}:\n  {:<nw$}  dir  width  meaning\n", top.name, "port");
        for [n, d, w, m] in &rows {
            let _ = writeln!(s, "  {n:<nw$}  {d:<3}  {w:>5}  {m}");
        }
        return Ok(s);
    }
    let rows: Vec<Vec<String>> = rows.into_iter().map(|[n, d, w, m]| vec![format!("`{n}`"), d, w, m]).collect();
    Ok(format!("Module `{}`, at {at}:\n\n{}", top.name, markdown(&["port", "dir", "width", "meaning"], &rows)))
}
