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
//!
//! The shared pieces (the queues of `pipe.rs`, the counter of `counter.rs`)
//! state their own invariants, so every module that uses one carries them
//! (proven in `tests/formal.rs`). A property cannot name a register inside
//! an instance (yosys has no hierarchical references): a module that relies
//! on what an instance guarantees at its ports counts what it needs itself
//! (a [`ModuleBuilder::formal_reg`] from the reset) and assumes the
//! guarantee of that count, the instance's own proof being what makes the
//! assumption sound (the compress stream unit and its vector unit).

use super::expr::Expr;
use super::module::{ModuleBuilder, Prop, PropKind};

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

    /// The value `e` had in the previous cycle: a register for the
    /// properties only (`` `ifdef FORMAL ``), named `<name>`.
    pub fn formal_past(&mut self, name: &str, e: &Expr) -> Expr {
        let q = self.formal_reg(name, e.width());
        self.formal_next(&q, e);
        q
    }

    /// A register for the properties only (state a property keeps, e.g.
    /// "inside a burst"); set its next value with [`Self::formal_next`].
    pub fn formal_reg(&mut self, name: &str, width: u32) -> Expr {
        self.formal = true;
        let q = self.add(name, width, super::module::SigKind::Reg, None, "");
        self.formal = false;
        q
    }

    /// The next value of a [`Self::formal_reg`], every cycle.
    pub fn formal_next(&mut self, reg: &Expr, d: &Expr) {
        let super::expr::ExprKind::Sig(id) = reg.kind() else { unreachable!("registers are signals") };
        if reg.width() != d.width() {
            self.problems.push(format!("formal register `{}`: next value is {} bits, must be {}", self.m.signals[id.0].name, d.width(), reg.width()));
            return;
        }
        if self.checked(d) {
            self.formal = true;
            let d = self.hoist(d, "formal");
            self.formal = false;
            self.m.formal_regs.push(super::module::RegNext { reg: *id, d, enable: None });
        }
    }

    /// The next value of a [`Self::formal_reg`] that the reset sets to
    /// `value`: state a property counts from the reset (a reference count,
    /// the operations inside a submodule).
    pub fn formal_next_reset(&mut self, reg: &Expr, d: &Expr, value: u64) {
        let Some(rst) = self.m.reset else {
            self.problems.push("formal register: a reset value needs the reset".to_string());
            return;
        };
        let rst = Expr::new(super::expr::ExprKind::Sig(rst), 1);
        self.formal_next(reg, &rst.mux(&Expr::lit(d.width(), value), d));
    }

    /// The stream rule, proven: once `valid` is high without `ready`, the
    /// next cycle has `valid` high and every field of `payload` unchanged.
    /// (Checked from the second cycle after a reset, when the past values
    /// are the logic's own.)
    pub fn assert_held(&mut self, name: &str, valid: &Expr, ready: &Expr, payload: &[Expr], doc: &str) {
        let Some(rst) = self.m.reset else {
            self.problems.push(format!("property `{name}`: a held-until-ready property needs the reset"));
            return;
        };
        let rst = Expr::new(super::expr::ExprKind::Sig(rst), 1);
        let past_ok = match self.m.signals.iter().position(|s| s.formal && s.name == "formal_past_ok") {
            Some(i) => Expr::new(super::expr::ExprKind::Sig(super::expr::SigId(i)), 1),
            None => self.formal_past("formal_past_ok", &rst.not()),
        };
        let waiting = self.formal_past(&format!("{name}_waiting"), &valid.and(&ready.not()));
        let mut held = valid.clone();
        if !payload.is_empty() {
            let now = Expr::cat(payload);
            let before = self.formal_past(&format!("{name}_payload"), &now);
            held = held.and(&now.eq(&before));
        }
        self.assert_always(name, &past_ok.and(&waiting).not().or(&held), doc);
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
