//! Designs: a top module, everything it instantiates, and where it comes from.
//!
//! A block's `build` returns a [`Design`]; a design can instantiate another
//! design ([`ModuleBuilder::instance_of`]), so composed tops (a command
//! processor feeding a scheduler, two compress units of different widths,
//! the synthesis wrapper around any block) are designs too.
//!
//! [`Design::elaborate`] lists the distinct modules, submodules first, and
//! names them. Identical modules (equal [`Module::key`], a hash of their
//! content) are emitted once, however often and from wherever they are
//! instantiated. A module keeps the name it was built with unless the design
//! holds two different modules of that name (two compress units of different
//! widths are both `gpurtl_compress`): then each of them is named
//! `<name>_<h>`, `<h>` being the first six hex digits of its key (more if two
//! would collide). The names are stable: the same modules get the same names
//! in every run, whatever order they are instantiated in.

use super::module::{Inst, Module, ModuleBuilder, Origin};
use super::print;
use std::collections::HashMap;
use std::rc::Rc;

/// A generated design: its top module (which holds everything it
/// instantiates) and the block and parameters it was generated from.
#[derive(Clone, Debug)]
pub struct Design {
    top: Rc<Module>,
    origin: Rc<Origin>,
}

/// One distinct module of an elaborated design.
#[derive(Clone, Debug)]
pub struct Unit {
    /// The module's final name: what its file and its instances are called.
    pub name: String,
    pub module: Rc<Module>,
    /// The block and parameters it was generated from (the design's, or those
    /// of the design it was instantiated from).
    pub origin: Rc<Origin>,
    /// The module's Verilog-2005 text (no file banner).
    pub verilog: String,
    /// Hand-mapped bodies under the final name: (target, Verilog).
    pub alternatives: Vec<(String, String)>,
}

/// The distinct modules of a design, submodules first, the top last.
#[derive(Clone, Debug)]
pub struct Elaborated {
    pub units: Vec<Unit>,
}

impl Elaborated {
    pub fn top(&self) -> &Unit {
        self.units.last().expect("a design has a top module")
    }
    /// The top module's final name.
    pub fn top_name(&self) -> &str {
        &self.top().name
    }
    /// Every module's Verilog in one text, submodules first.
    pub fn verilog(&self) -> String {
        self.units.iter().map(|u| u.verilog.as_str()).collect::<Vec<_>>().join("\n")
    }
}

impl Design {
    pub fn new(top: Module, origin: Origin) -> Design {
        Design { top: Rc::new(top), origin: Rc::new(origin) }
    }

    /// A block's design: `top` generated from the parameters `p`.
    pub fn of<P: gpurtl_params::BlockParams>(top: Module, p: &P) -> Design {
        let params = serde_json::to_value(p).unwrap_or(serde_json::Value::Null);
        Design::new(top, Origin { block: P::BLOCK.to_string(), params })
    }

    pub fn top(&self) -> &Module {
        &self.top
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    pub(crate) fn origin_rc(&self) -> Rc<Origin> {
        self.origin.clone()
    }

    /// The distinct modules, submodules first (in the order they are first
    /// instantiated), each under its final name, with its Verilog.
    pub fn elaborate(&self) -> Elaborated {
        // Post-order walk: a module's submodules before it, each module once.
        let mut order: Vec<(Rc<Module>, Rc<Origin>)> = Vec::new();
        let mut seen: HashMap<String, ()> = HashMap::new();
        fn walk(
            m: &Rc<Module>,
            origin: &Rc<Origin>,
            order: &mut Vec<(Rc<Module>, Rc<Origin>)>,
            seen: &mut HashMap<String, ()>,
        ) {
            if seen.contains_key(&m.key) {
                return;
            }
            for inst in &m.instances {
                let o = inst.origin.as_ref().unwrap_or(origin);
                walk(&inst.module, o, order, seen);
            }
            seen.insert(m.key.clone(), ());
            order.push((m.clone(), origin.clone()));
        }
        walk(&self.top, &self.origin, &mut order, &mut seen);

        // Final names: plain, or `<name>_<key prefix>` where a name is shared.
        let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
        for (m, _) in &order {
            by_name.entry(m.name.as_str()).or_default().push(m.key.as_str());
        }
        let mut names: HashMap<String, String> = HashMap::new();
        for (base, keys) in &by_name {
            if keys.len() == 1 {
                names.insert(keys[0].to_string(), base.to_string());
                continue;
            }
            let mut len = 6;
            while len < keys[0].len() && {
                let mut p: Vec<&str> = keys.iter().map(|k| &k[..len]).collect();
                p.sort_unstable();
                p.windows(2).any(|w| w[0] == w[1])
            } {
                len += 2;
            }
            for k in keys {
                names.insert(k.to_string(), format!("{base}_{}", &k[..len]));
            }
        }

        let units = order
            .into_iter()
            .map(|(m, origin)| {
                let name = names[&m.key].clone();
                let verilog = print::module(&m, &name, &|i| names[&i.module.key].clone());
                let alternatives = m.alternatives.iter().map(|a| (a.target.clone(), (a.body)(&name))).collect();
                Unit { name, module: m, origin, verilog, alternatives }
            })
            .collect();
        Elaborated { units }
    }
}

impl ModuleBuilder {
    /// [`ModuleBuilder::instance`] of a design's top module: the design's
    /// modules keep its block and parameters in their banners.
    pub fn instance_of(&mut self, design: &Design, name: &str, conns: &[(&str, super::Expr)]) -> Inst {
        self.instance_with(design.top(), Some(design.origin_rc()), name, conns)
    }
}

impl Origin {
    /// The resolved parameters as `key=value` text, nested sets as dotted
    /// names, in key order (`latency=2 width=128`).
    pub fn params_text(&self) -> String {
        gpurtl_params::flat_params(&self.params)
            .into_iter()
            .map(|(k, v)| format!("{k}={}", plain(&v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
    /// `--param k=v ` for every parameter, in key order (ends with a space).
    pub fn param_args(&self) -> String {
        gpurtl_params::flat_params(&self.params).into_iter().map(|(k, v)| format!("--param {k}={} ", plain(&v))).collect()
    }
    /// The command that regenerates the design.
    pub fn command(&self) -> String {
        format!("gpurtl gen {} {}-o <dir>", self.block, self.param_args())
    }
}

/// A JSON value as written on a command line: strings without quotes.
fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtl::Expr;
    use serde_json::json;

    /// A `w`-bit inverter named `inv`: different widths are different modules of one name.
    fn inv(w: u32) -> Design {
        let mut b = ModuleBuilder::new("inv");
        let a = b.input("a_i", w, "");
        let y = b.output("y_o", w, "");
        b.assign(&y, &a.not());
        Design::new(b.finish().unwrap(), Origin { block: "inv".into(), params: json!({ "width": w }) })
    }

    fn top(parts: &[&Design]) -> Design {
        let mut b = ModuleBuilder::new("top");
        let mut outs = Vec::new();
        for (k, d) in parts.iter().enumerate() {
            let w = d.top().port_signals().next().unwrap().width;
            let a = b.input(&format!("a{k}_i"), w, "");
            let u = b.instance_of(d, &format!("u{k}"), &[("a_i", a)]);
            outs.push(u.port("y_o"));
        }
        let y = b.output("y_o", outs.iter().map(Expr::width).sum(), "");
        b.assign(&y, &Expr::cat(&outs));
        Design::new(b.finish().unwrap(), Origin { block: "top".into(), params: json!({}) })
    }

    fn names(d: &Design) -> Vec<String> {
        d.elaborate().units.iter().map(|u| u.name.clone()).collect()
    }

    #[test]
    fn identical_modules_are_emitted_once_under_their_name() {
        let (a, b) = (inv(4), inv(4));
        assert_eq!(names(&top(&[&a, &b, &a])), ["inv", "top"]);
    }

    #[test]
    fn different_modules_of_one_name_get_stable_distinct_names() {
        let (a, b) = (inv(4), inv(8));
        let n = names(&top(&[&a, &b]));
        assert_eq!(n.len(), 3);
        assert!(n[0].starts_with("inv_") && n[1].starts_with("inv_") && n[0] != n[1], "{n:?}");
        assert_eq!(n[0], format!("inv_{}", &a.top().key[..6]));
        // The same modules get the same names whatever the order.
        let r = names(&top(&[&b, &a]));
        assert_eq!((r[0].as_str(), r[1].as_str()), (n[1].as_str(), n[0].as_str()));
        // The parent's text instantiates each under its final name; each keeps its origin.
        let e = top(&[&a, &b]).elaborate();
        assert!(e.top().verilog.contains(&format!("  {} u0 (", n[0])), "{}", e.top().verilog);
        assert_eq!(e.units[1].origin.params, json!({"width": 8}));
        assert_eq!(e.units[1].origin.params_text(), "width=8");
    }
}
