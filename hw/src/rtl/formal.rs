//! Properties stated next to the logic.
//!
//! A block states what must hold in every cycle after the first reset
//! ([`ModuleBuilder::assert_always`]) and what it takes for granted of its
//! inputs ([`ModuleBuilder::assume_always`]). They are printed at the end of
//! the module under `` `ifdef FORMAL `` (which `read_verilog -formal`
//! defines), so that Verilator, Icarus and synthesis never see them, and are
//! proven with yosys: `sat -tempinduct` proves that the assertions hold in
//! every reachable state, given the assumptions (see `gen/src/tools.rs`,
//! `prove`). Values used only by properties are made with
//! [`ModuleBuilder::formal_let`]: they are declared with the properties.

use super::expr::Expr;
use super::module::ModuleBuilder;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropKind {
    /// Proven.
    Assert,
    /// Taken for granted (a promise of the environment about the inputs).
    Assume,
}

#[derive(Clone, Debug)]
pub struct Prop {
    pub kind: PropKind,
    /// The statement's label, `prop_<name>`: a failing proof names it.
    pub name: String,
    /// What it says, in words.
    pub doc: String,
    pub cond: Expr,
}

impl ModuleBuilder {
    /// `cond` (1 bit) holds in every cycle after the first reset.
    pub fn assert_always(&mut self, name: &str, cond: &Expr, doc: &str) {
        self.prop(PropKind::Assert, name, cond, doc);
    }

    /// The environment keeps `cond` (1 bit) true in every cycle after the
    /// first reset; the assertions are proven under it.
    pub fn assume_always(&mut self, name: &str, cond: &Expr, doc: &str) {
        self.prop(PropKind::Assume, name, cond, doc);
    }

    /// A wire for the properties only, driven by `e`: declared under
    /// `` `ifdef FORMAL ``; the logic cannot read it.
    pub fn formal_let(&mut self, name: &str, e: &Expr) -> Expr {
        self.formal = true;
        let w = self.let_(name, e);
        self.formal = false;
        w
    }

    fn prop(&mut self, kind: PropKind, name: &str, cond: &Expr, doc: &str) {
        if cond.width() != 1 {
            self.problems.push(format!("property `{name}` is {} bits, must be 1", cond.width()));
            return;
        }
        if self.m.props.iter().any(|p| p.name == format!("prop_{name}")) {
            self.problems.push(format!("property `{name}` is stated twice"));
            return;
        }
        if self.m.clock.is_none() {
            self.problems.push(format!("property `{name}`: properties are checked on the clock, and none was declared"));
            return;
        }
        if !self.checked(cond) {
            return;
        }
        if self.m.formal_seen.is_none() {
            self.m.formal_seen = Some(self.namer.claim("formal_reset_seen"));
        }
        let label = self.namer.claim(&format!("prop_{name}"));
        self.formal = true;
        let cond = self.hoist(cond, &label);
        self.formal = false;
        self.m.props.push(Prop { kind, name: label, doc: doc.to_string(), cond });
    }
}
