//! Modules, signals and the builder that checks them.
//!
//! A block description creates a [`ModuleBuilder`], declares ports, wires and
//! registers, connects them with width-checked [`Expr`]essions and calls
//! [`ModuleBuilder::finish`]. `finish` reports every problem at once: width
//! mismatches (naming both sides), undriven or doubly driven bits, registers
//! without a next-state, unread signals (which `verilator -Wall` would flag).

use super::expr::{Expr, ExprKind, SigId};
use super::namer::Namer;
use num_bigint::BigUint;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigKind {
    Input,
    Output,
    Wire,
    Reg,
}

#[derive(Clone, Debug)]
pub struct Signal {
    pub name: String,
    pub width: u32,
    pub kind: SigKind,
    /// Reset value for registers in the reset domain; `None` = not reset (datapath).
    pub reset: Option<BigUint>,
    pub doc: String,
    /// Why some bits of this signal are never read (a lint waiver is printed
    /// with this reason). Only the layer's own temporaries get one.
    pub waiver: Option<String>,
    /// Exists for the properties only: declared and driven under
    /// `` `ifdef FORMAL ``, with them.
    pub formal: bool,
}

/// `assign target[lo +: expr.width] = expr;`
#[derive(Clone, Debug)]
pub struct Assign {
    pub target: SigId,
    pub lo: u32,
    pub expr: Expr,
}

/// `if (enable) reg <= d;` on the module clock.
#[derive(Clone, Debug)]
pub struct RegNext {
    pub reg: SigId,
    pub d: Expr,
    pub enable: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropKind {
    /// Proven.
    Assert,
    /// Taken for granted (a promise of the environment about the inputs).
    Assume,
}

/// A property of the logic (stated with `formal.rs`'s
/// [`ModuleBuilder::assert_always`] / `assume_always`).
#[derive(Clone, Debug)]
pub struct Prop {
    pub kind: PropKind,
    /// The statement's label, `prop_<name>`: a failing proof names it.
    pub name: String,
    /// What it says, in words.
    pub doc: String,
    pub cond: Expr,
}

/// A memory array (see `ram.rs`): `depth` words of `width` bits with one
/// synchronous write port (optional byte enables) and one synchronous read
/// port whose data register is `rdata`.
#[derive(Clone, Debug)]
pub struct Ram {
    /// The array's name in the Verilog.
    pub name: String,
    pub doc: String,
    pub width: u32,
    pub depth: u64,
    pub we: Expr,
    pub waddr: Expr,
    pub wdata: Expr,
    /// One bit a lane of `lane` bits, lane 0 lowest; `None`: whole words.
    pub wbe: Option<(Expr, u32)>,
    pub re: Expr,
    pub raddr: Expr,
    /// The read data register (a [`SigKind::Reg`] loaded by the read).
    pub rdata: SigId,
}

/// How a stream's port names are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortNames {
    /// `<name>_<field>_i` / `_o`: gpurtl's own ports.
    Suffixed,
    /// `<name><field>`, no suffix: AXI channels (`m_axi_ar` + `valid` =
    /// `m_axi_arvalid`), the names vendor IP and cocotb read.
    Plain,
}

/// The block and parameters a design was generated from: what its modules'
/// banners print.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    pub block: String,
    /// The resolved parameters, a JSON object.
    pub params: serde_json::Value,
}

/// A valid/ready bundle among a module's ports: `valid`, `ready` and the
/// payload `fields`, each a port. `input`: the module receives the stream
/// (`valid` and the fields are inputs, `ready` an output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDecl {
    pub name: String,
    pub naming: PortNames,
    pub input: bool,
    pub valid: SigId,
    pub ready: SigId,
    pub fields: Vec<(String, SigId)>,
}

#[derive(Clone)]
pub struct Instance {
    /// The instantiated module (one shared copy per distinct module).
    pub module: Rc<Module>,
    /// The block and parameters the module was generated from, when it was
    /// instantiated as a [`Design`](super::Design); `None`: the same as the
    /// enclosing module's.
    pub origin: Option<Rc<Origin>>,
    pub name: String,
    /// (port name, connected expression) in the submodule's port order.
    /// Outputs connect to a whole signal of this module (an `Expr::Sig`).
    pub conns: Vec<(String, Expr)>,
    /// The wires of this module that the instance's outputs drive.
    pub drives: Vec<SigId>,
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance").field("module", &self.module.name).field("name", &self.name).finish_non_exhaustive()
    }
}

/// An instance as its parent sees it: each port's connection, by port name.
pub struct Inst {
    pub name: String,
    pub module: Rc<Module>,
    ports: Vec<(String, Expr)>,
}

impl Inst {
    /// What port `port` is connected to in the parent (its own wire unless
    /// it was connected explicitly). Panics on a port the module does not
    /// have: that is a mistake in the block description.
    pub fn port(&self, port: &str) -> Expr {
        match self.ports.iter().find(|(n, _)| n == port) {
            Some((_, e)) => e.clone(),
            None => panic!("instance `{}` of `{}` has no port `{port}`", self.name, self.module.name),
        }
    }
}

/// A hand-mapped body of a module for one FPGA family's synthesis flow: the
/// whole module in Verilog, given the module's final name (which gets a
/// suffix when a design holds two different modules of one name).
#[derive(Clone)]
pub struct Alternative {
    pub target: String,
    pub body: Rc<dyn Fn(&str) -> String>,
}

impl fmt::Debug for Alternative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Alternative").field("target", &self.target).finish_non_exhaustive()
    }
}

/// A finished, checked module.
#[derive(Clone, Debug)]
pub struct Module {
    /// The name it is built with; a design holding two different modules of
    /// one name prints each as `<name>_<key prefix>` (see [`super::Design`]).
    pub name: String,
    /// Content hash (hex) of the module's Verilog and of everything it
    /// instantiates: equal keys are the same hardware.
    pub key: String,
    /// Comment lines printed above the module (what it is, where it comes from).
    pub doc: Vec<String>,
    pub signals: Vec<Signal>,
    /// Port ids in declaration order.
    pub ports: Vec<SigId>,
    pub assigns: Vec<Assign>,
    pub regs: Vec<RegNext>,
    pub instances: Vec<Instance>,
    pub clock: Option<SigId>,
    pub reset: Option<SigId>,
    /// Hand-mapped bodies for FPGA families' flows (same name and ports).
    /// Simulation, lint and every other flow use the generic body built
    /// here; the target's synthesis flow reads the alternative instead (e.g.
    /// a vendor DSP primitive with its internal registers, which yosys does
    /// not infer).
    pub alternatives: Vec<Alternative>,
    /// Valid/ready bundles among the ports, for [`ModuleBuilder::connect`].
    pub streams: Vec<StreamDecl>,
    /// Properties of the logic (see [`super::formal`]), and the assigns of
    /// the formal-only wires they use.
    pub props: Vec<Prop>,
    pub formal_assigns: Vec<Assign>,
    /// Memory arrays (block RAM).
    pub rams: Vec<Ram>,
    /// Registers for the properties only (past values), printed with them.
    pub formal_regs: Vec<RegNext>,
    /// The formal-only flag that is set by the first reset (the properties
    /// are checked from then on), named when the first property is stated.
    pub formal_seen: Option<String>,
}

impl Module {
    pub fn sig(&self, id: SigId) -> &Signal {
        &self.signals[id.0]
    }
    pub fn port_signals(&self) -> impl Iterator<Item = &Signal> {
        self.ports.iter().map(|p| &self.signals[p.0])
    }
    pub fn find(&self, name: &str) -> Option<SigId> {
        self.signals.iter().position(|s| s.name == name).map(SigId)
    }
}

/// Errors found when a design is built. Every problem is listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtlError {
    pub module: String,
    pub problems: Vec<String>,
}

impl fmt::Display for RtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "module `{}` is not a valid design:", self.module)?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RtlError {}

pub struct ModuleBuilder {
    pub(crate) m: Module,
    pub(crate) namer: Namer,
    pub(crate) problems: Vec<String>,
    /// One shared copy of each distinct instantiated module, by key.
    subs: HashMap<String, Rc<Module>>,
    hoisted: usize,
    /// Hoisted expressions by identity, so slicing one expression many times
    /// gives one wire.
    /// The key expression is kept alive beside its wire, so an address
    /// cannot be reused by another expression while it is in the cache.
    hoist_cache: HashMap<*const ExprKind, (Expr, Expr)>,
    /// Signals and assigns made now are for the properties only.
    pub(crate) formal: bool,
}

impl ModuleBuilder {
    pub fn new(name: &str) -> ModuleBuilder {
        ModuleBuilder {
            m: Module {
                name: super::namer::legalize(name),
                key: String::new(),
                doc: Vec::new(),
                signals: Vec::new(),
                ports: Vec::new(),
                assigns: Vec::new(),
                regs: Vec::new(),
                instances: Vec::new(),
                clock: None,
                reset: None,
                alternatives: Vec::new(),
                streams: Vec::new(),
                props: Vec::new(),
                formal_assigns: Vec::new(),
                rams: Vec::new(),
                formal_regs: Vec::new(),
                formal_seen: None,
            },
            namer: Namer::default(),
            problems: Vec::new(),
            subs: HashMap::new(),
            hoisted: 0,
            hoist_cache: HashMap::new(),
            formal: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.m.name
    }

    pub fn doc(&mut self, line: impl Into<String>) {
        self.m.doc.push(line.into());
    }

    /// A hand-mapped body of this module for `target`'s synthesis flow (see
    /// [`Module::alternatives`]): `body` gives the whole module, with the
    /// same ports, under the name it is given.
    pub fn alternative(&mut self, target: &str, body: impl Fn(&str) -> String + 'static) {
        self.m.alternatives.push(Alternative { target: target.to_string(), body: Rc::new(body) });
    }

    pub(crate) fn add(&mut self, name: &str, width: u32, kind: SigKind, reset: Option<BigUint>, doc: &str) -> Expr {
        if width == 0 {
            self.problems.push(format!("signal `{name}` has width 0"));
        }
        let name = self.namer.claim(name);
        let id = SigId(self.m.signals.len());
        let formal = self.formal;
        self.m.signals.push(Signal { name, width: width.max(1), kind, reset, doc: doc.to_string(), waiver: None, formal });
        if matches!(kind, SigKind::Input | SigKind::Output) {
            self.m.ports.push(id);
        }
        Expr::new(ExprKind::Sig(id), width.max(1))
    }

    /// The clock input (`clk_i`); registers are clocked on its rising edge.
    pub fn clock(&mut self, name: &str) -> Expr {
        let e = self.add(name, 1, SigKind::Input, None, "clock, rising edge");
        self.m.clock = Some(sig_of(&e));
        e
    }
    /// Synchronous active-high reset input (`rst_i`).
    pub fn reset(&mut self, name: &str) -> Expr {
        let e = self.add(name, 1, SigKind::Input, None, "synchronous reset, active high");
        self.m.reset = Some(sig_of(&e));
        e
    }
    pub fn input(&mut self, name: &str, width: u32, doc: &str) -> Expr {
        self.add(name, width, SigKind::Input, None, doc)
    }
    pub fn output(&mut self, name: &str, width: u32, doc: &str) -> Expr {
        self.add(name, width, SigKind::Output, None, doc)
    }
    pub fn wire(&mut self, name: &str, width: u32) -> Expr {
        self.add(name, width, SigKind::Wire, None, "")
    }
    /// A wire driven by `e` in one assign: the usual way to name a value.
    pub fn let_(&mut self, name: &str, e: &Expr) -> Expr {
        let w = self.wire(name, e.width());
        self.assign(&w, e);
        w
    }
    /// A register in the reset domain.
    pub fn reg(&mut self, name: &str, width: u32, reset: u64) -> Expr {
        self.add(name, width, SigKind::Reg, Some(BigUint::from(reset)), "")
    }
    /// A datapath register without reset.
    pub fn reg_noreset(&mut self, name: &str, width: u32) -> Expr {
        self.add(name, width, SigKind::Reg, None, "")
    }

    /// Declare that some bits of `sig` are deliberately not used, and why; a
    /// lint waiver with the reason is printed beside its declaration.
    pub fn waive_unused(&mut self, sig: &Expr, why: &str) {
        if let ExprKind::Sig(s) = sig.kind() {
            self.m.signals[s.0].waiver = Some(why.to_string());
        }
    }

    /// `assign target = e;`
    pub fn assign(&mut self, target: &Expr, e: &Expr) {
        self.drive(target, 0, e, true)
    }

    /// `assign target[lo +: e.width] = e;` (a lane of a packed wire).
    pub fn assign_part(&mut self, target: &Expr, lo: u32, e: &Expr) {
        self.drive(target, lo, e, false)
    }

    fn drive(&mut self, target: &Expr, lo: u32, e: &Expr, whole: bool) {
        let Some(t) = self.target(target, "assign to") else { return };
        let sig = self.m.signals[t.0].clone();
        if matches!(sig.kind, SigKind::Input | SigKind::Reg) {
            self.problems.push(format!("`{}` is an input or register and cannot be assigned", sig.name));
            return;
        }
        if whole && e.width() != sig.width {
            self.problems.push(format!(
                "assign to `{}` ({} bits) from `{}` ({} bits)",
                sig.name,
                sig.width,
                self.show(e),
                e.width()
            ));
            return;
        }
        if lo + e.width() > sig.width {
            self.problems.push(format!(
                "assign to `{}[{}:{}]` is outside its {} bits",
                sig.name,
                lo + e.width() - 1,
                lo,
                sig.width
            ));
            return;
        }
        if self.checked(e) {
            let e = self.hoist(e, &sig.name);
            self.push_assign(Assign { target: t, lo, expr: e });
        }
    }

    /// `always @(posedge clk) if (enable) reg <= d;` (reset handled from the reg's reset value).
    pub fn next(&mut self, reg: &Expr, d: &Expr, enable: Option<&Expr>) {
        let Some(r) = self.target(reg, "set the next state of") else { return };
        let sig = self.m.signals[r.0].clone();
        if sig.kind != SigKind::Reg {
            self.problems.push(format!("`{}` is not a register", sig.name));
            return;
        }
        if d.width() != sig.width {
            self.problems.push(format!(
                "next state of `{}` ({} bits) from `{}` ({} bits)",
                sig.name,
                sig.width,
                self.show(d),
                d.width()
            ));
            return;
        }
        if let Some(en) = enable {
            if en.width() != 1 {
                self.problems.push(format!("enable of `{}` is {} bits, must be 1", sig.name, en.width()));
                return;
            }
        }
        let ok_d = self.checked(d);
        let ok_en = enable.is_none_or(|e| self.checked(e));
        if ok_d && ok_en {
            let name = sig.name;
            let d = self.hoist(d, &name);
            let enable = enable.map(|e| self.hoist(e, &name));
            self.m.regs.push(RegNext { reg: r, d, enable });
        }
    }

    /// A register loaded from `d` when `enable` is high: the pipeline-stage idiom.
    pub fn pipe(&mut self, name: &str, d: &Expr, enable: &Expr) -> Expr {
        let q = self.reg_noreset(name, d.width());
        // An always-true enable is no enable: plain `q <= d`.
        let always = matches!(enable.kind(), ExprKind::Const(v) if enable.width() == 1 && *v == BigUint::from(1u8));
        self.next(&q, d, if always { None } else { Some(enable) });
        q
    }

    /// Instantiate `sub` as `name`. `conns` connects ports by name; outputs
    /// must connect to whole wires or outputs of this module. Every port not
    /// in `conns` gets a wire of its own, `<name>_<port>` without the
    /// `_i`/`_o` suffix, which the returned [`Inst`] hands out: assign the
    /// inputs' wires and read the outputs' (or connect whole streams with
    /// [`ModuleBuilder::connect`]). A port left alone is an undriven or
    /// unread wire, which `finish` reports.
    pub fn instance(&mut self, sub: &Module, name: &str, conns: &[(&str, Expr)]) -> Inst {
        self.instance_with(sub, None, name, conns)
    }

    pub(crate) fn instance_with(&mut self, sub: &Module, origin: Option<Rc<Origin>>, name: &str, conns: &[(&str, Expr)]) -> Inst {
        let name = self.namer.claim(name);
        let module = self.subs.entry(sub.key.clone()).or_insert_with(|| Rc::new(sub.clone())).clone();
        let mut out = Vec::new();
        let mut drives = Vec::new();
        let mut ports = Vec::new();
        for p in sub.port_signals() {
            let e = match conns.iter().find(|(n, _)| *n == p.name) {
                Some((_, e)) => e.clone(),
                None => {
                    let base = p.name.strip_suffix("_i").or_else(|| p.name.strip_suffix("_o")).unwrap_or(&p.name);
                    self.wire(&format!("{name}_{base}"), p.width)
                }
            };
            ports.push((p.name.clone(), e.clone()));
            if e.width() != p.width {
                self.problems.push(format!(
                    "instance `{name}` of `{}`: port `{}` is {} bits, connected to `{}` ({} bits)",
                    sub.name,
                    p.name,
                    p.width,
                    self.show(&e),
                    e.width()
                ));
                continue;
            }
            if p.kind == SigKind::Output {
                match e.kind() {
                    ExprKind::Sig(s) if matches!(self.m.signals[s.0].kind, SigKind::Wire | SigKind::Output) => {
                        drives.push(*s)
                    }
                    _ => {
                        self.problems.push(format!(
                            "instance `{name}` of `{}`: output `{}` must connect to a whole wire or output",
                            sub.name, p.name
                        ));
                        continue;
                    }
                }
            }
            if !self.checked(&e) {
                continue;
            }
            let e = self.hoist(&e, &format!("{name}_{}", p.name));
            out.push((p.name.clone(), e));
        }
        for (n, _) in conns {
            if !sub.port_signals().any(|p| p.name == *n) {
                self.problems.push(format!("instance `{name}` of `{}`: it has no port `{n}`", sub.name));
            }
        }
        self.m.instances.push(Instance { module: module.clone(), origin, name: name.clone(), conns: out, drives });
        Inst { name, module, ports }
    }

    fn target(&mut self, e: &Expr, what: &str) -> Option<SigId> {
        match e.kind() {
            ExprKind::Sig(s) => Some(*s),
            _ => {
                let shown = self.show(e);
                self.problems.push(format!("cannot {what} `{shown}`: not a signal"));
                None
            }
        }
    }

    pub(crate) fn checked(&mut self, e: &Expr) -> bool {
        let m = &self.m;
        match e.check(&|x| show_expr(m, x)) {
            Ok(()) => true,
            Err(p) => {
                self.problems.push(p);
                false
            }
        }
    }

    /// An assign of the logic, or of a formal-only wire.
    fn push_assign(&mut self, a: Assign) {
        if self.formal {
            self.m.formal_assigns.push(a);
        } else {
            self.m.assigns.push(a);
        }
    }

    /// Remember a hoisted wire; formal-only ones are not reused by the logic.
    fn cache(&mut self, key: *const ExprKind, v: (Expr, Expr)) {
        if !self.formal {
            self.hoist_cache.insert(key, v);
        }
    }

    /// Verilog-2005 cannot slice an expression: give such operands a wire.
    pub(crate) fn hoist(&mut self, e: &Expr, base: &str) -> Expr {
        match e.kind() {
            ExprKind::Sig(_) | ExprKind::Const(_) | ExprKind::Bad(_) => e.clone(),
            ExprKind::Slice(inner, hi, lo) => {
                let inner = if matches!(inner.kind(), ExprKind::Sig(_)) {
                    inner.clone()
                } else if let Some((_, w)) = self.hoist_cache.get(&Rc::as_ptr(&inner.node)) {
                    w.clone()
                } else {
                    let key = Rc::as_ptr(&inner.node);
                    let expr = self.hoist(inner, base);
                    self.hoisted += 1;
                    let w = self.wire(&format!("{base}_t{}", self.hoisted), expr.width());
                    let t = sig_of(&w);
                    // A slice of a result (e.g. the high bits of a sum) leaves
                    // the other bits unread on purpose.
                    self.m.signals[t.0].waiver = Some("holds an expression of which only a slice is used".into());
                    self.push_assign(Assign { target: t, lo: 0, expr });
                    self.cache(key, (inner.clone(), w.clone()));
                    w
                };
                Expr::new(ExprKind::Slice(inner, *hi, *lo), e.width())
            }
            ExprKind::Concat(es) => {
                let es: Vec<Expr> = es.iter().map(|x| self.hoist(x, base)).collect();
                Expr::new(ExprKind::Concat(es), e.width())
            }
            ExprKind::Repl(n, x) => Expr::new(ExprKind::Repl(*n, self.hoist(x, base)), e.width()),
            ExprKind::Un(op, x) => Expr::new(ExprKind::Un(*op, self.hoist(x, base)), e.width()),
            ExprKind::SMul(a, b) => {
                // Always a wire of its own, of exactly the product width.
                if let Some((_, w)) = self.hoist_cache.get(&Rc::as_ptr(&e.node)) {
                    return w.clone();
                }
                let (ha, hb) = (self.hoist(a, base), self.hoist(b, base));
                self.hoisted += 1;
                let w = self.wire(&format!("{base}_mul{}", self.hoisted), e.width());
                let t = sig_of(&w);
                self.push_assign(Assign { target: t, lo: 0, expr: Expr::new(ExprKind::SMul(ha, hb), e.width()) });
                self.cache(Rc::as_ptr(&e.node), (e.clone(), w.clone()));
                w
            }
            ExprKind::Bin(op, a, b) => {
                let (a, b) = (self.hoist(a, base), self.hoist(b, base));
                Expr::new(ExprKind::Bin(*op, a, b), e.width())
            }
            ExprKind::Mux(s, t, f) => {
                let (s, t, f) = (self.hoist(s, base), self.hoist(t, base), self.hoist(f, base));
                Expr::new(ExprKind::Mux(s, t, f), e.width())
            }
        }
    }

    fn show(&self, e: &Expr) -> String {
        show_expr(&self.m, e)
    }

    /// Check drivers and readers, and hand out the module.
    pub fn finish(mut self) -> Result<Module, RtlError> {
        let n = self.m.signals.len();
        // Driven bits per signal.
        let mut driven: Vec<Vec<u8>> = self.m.signals.iter().map(|s| vec![0u8; s.width as usize]).collect();
        for a in self.m.assigns.iter().chain(&self.m.formal_assigns) {
            for b in a.lo..a.lo + a.expr.width() {
                driven[a.target.0][b as usize] += 1;
            }
        }
        let mut read: Vec<Vec<bool>> = self.m.signals.iter().map(|s| vec![false; s.width as usize]).collect();
        let mut mark = |s: SigId, r: Option<(u32, u32)>| {
            let v = &mut read[s.0];
            let (hi, lo) = r.unwrap_or((v.len() as u32 - 1, 0));
            for b in lo..=hi.min(v.len() as u32 - 1) {
                v[b as usize] = true;
            }
        };
        for a in &self.m.assigns {
            a.expr.visit_sigs(&mut mark);
        }
        let mut reg_nexts = vec![0usize; n];
        for r in &self.m.regs {
            reg_nexts[r.reg.0] += 1;
            r.d.visit_sigs(&mut mark);
            if let Some(e) = &r.enable {
                e.visit_sigs(&mut mark);
            }
        }
        for r in &self.m.formal_regs {
            reg_nexts[r.reg.0] += 1;
        }
        for r in &self.m.rams {
            reg_nexts[r.rdata.0] += 1;
            for e in [&r.we, &r.waddr, &r.wdata, &r.re, &r.raddr] {
                e.visit_sigs(&mut mark);
            }
            if let Some((be, _)) = &r.wbe {
                be.visit_sigs(&mut mark);
            }
        }
        if !self.m.regs.is_empty() || !self.m.rams.is_empty() {
            if let Some(c) = self.m.clock {
                mark(c, None);
            }
            if self.m.signals.iter().any(|s| s.kind == SigKind::Reg && s.reset.is_some()) {
                if let Some(r) = self.m.reset {
                    mark(r, None);
                }
            }
        }
        // Instance inputs read their signals; outputs drive their wires.
        for inst in &self.m.instances {
            for (_, e) in &inst.conns {
                match e.kind() {
                    ExprKind::Sig(s) if inst.drives.contains(s) => driven[s.0].iter_mut().for_each(|d| *d += 1),
                    _ => e.visit_sigs(&mut mark),
                }
            }
        }
        if (!self.m.regs.is_empty() || !self.m.rams.is_empty()) && self.m.clock.is_none() {
            self.problems.push("registers are used but no clock was declared".into());
        }
        let mut waived = Vec::new();
        // The properties and formal-only wires read only formal-only wires
        // or the logic's signals; the logic reads no formal-only wire.
        for a in &self.m.assigns {
            a.expr.visit_sigs(&mut |s, _| {
                if self.m.signals[s.0].formal {
                    self.problems.push(format!("`{}` is formal-only but the logic reads it", self.m.signals[s.0].name));
                }
            });
        }
        for (i, s) in self.m.signals.iter().enumerate() {
            if s.formal {
                if s.kind == SigKind::Wire && driven[i].iter().any(|&d| d != 1) {
                    self.problems.push(format!("formal-only `{}` must be driven exactly once", s.name));
                }
                continue;
            }
            match s.kind {
                SigKind::Output | SigKind::Wire => {
                    let undriven = ranges(&driven[i], |d| d == 0);
                    if !undriven.is_empty() {
                        self.problems.push(format!("`{}` bits {} are not driven", s.name, undriven));
                    }
                    let multi = ranges(&driven[i], |d| d > 1);
                    if !multi.is_empty() {
                        self.problems.push(format!("`{}` bits {} have more than one driver", s.name, multi));
                    }
                }
                SigKind::Reg => {
                    if reg_nexts[i] != 1 {
                        self.problems.push(format!(
                            "register `{}` has {} next-state assignments, must have exactly 1",
                            s.name, reg_nexts[i]
                        ));
                    }
                    if s.reset.is_some() && self.m.reset.is_none() {
                        self.problems.push(format!("register `{}` has a reset value but no reset was declared", s.name));
                    }
                    if let Some(v) = &s.reset {
                        if v.bits() > s.width as u64 {
                            self.problems.push(format!("reset value {v} of `{}` does not fit in {} bits", s.name, s.width));
                        }
                    }
                }
                SigKind::Input => {}
            }
            if s.kind != SigKind::Output {
                let unread = ranges(&read[i].iter().map(|&r| r as u8).collect::<Vec<_>>(), |r| r == 0);
                if !unread.is_empty() {
                    match &s.waiver {
                        Some(why) => waived.push((i, format!("bits {unread} unused: {why}"))),
                        None => self.problems.push(format!("`{}` bits {} are never read", s.name, unread)),
                    }
                }
            }
        }
        // Keep a waiver only where bits really are unread.
        for s in self.m.signals.iter_mut() {
            s.waiver = None;
        }
        for (i, why) in waived {
            self.m.signals[i].waiver = Some(why);
        }
        if self.problems.is_empty() {
            self.m.key = content_key(&self.m);
            Ok(self.m)
        } else {
            Err(RtlError { module: self.m.name, problems: self.problems })
        }
    }
}

/// The content hash of a finished module: everything that makes up its
/// Verilog (name, docs, signals, logic, instances by their modules' keys),
/// its hand-mapped bodies and its stream bundles. 128 bits, hex.
fn content_key(m: &Module) -> String {
    let mut h = Sha256::new();
    let mut put = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    put(m.name.as_bytes());
    for d in &m.doc {
        put(d.as_bytes());
    }
    for s in &m.signals {
        let reset = s.reset.as_ref().map(|r| r.to_bytes_le());
        put(format!("{}|{}|{:?}|{:?}|{}|{:?}|{}", s.name, s.width, s.kind, reset, s.doc, s.waiver, s.formal).as_bytes());
    }
    put(format!("{:?}|{:?}|{:?}", m.ports, m.clock, m.reset).as_bytes());
    for a in &m.assigns {
        put(format!("assign {}|{}", a.target.0, a.lo).as_bytes());
        a.expr.digest(&mut put);
    }
    for r in &m.regs {
        put(format!("reg {}", r.reg.0).as_bytes());
        r.d.digest(&mut put);
        if let Some(e) = &r.enable {
            e.digest(&mut put);
        }
    }
    for i in &m.instances {
        put(format!("inst {}|{}", i.module.key, i.name).as_bytes());
        for (p, e) in &i.conns {
            put(p.as_bytes());
            e.digest(&mut put);
        }
    }
    for a in &m.alternatives {
        put(a.target.as_bytes());
        put((a.body)(&m.name).as_bytes());
    }
    for s in &m.streams {
        // Written as before port naming existed, so that the keys (and the
        // names they disambiguate) of existing designs do not move.
        let naming = if s.naming == PortNames::Plain { "plain " } else { "" };
        put(format!(
            "{naming}StreamDecl {{ name: {:?}, input: {:?}, valid: {:?}, ready: {:?}, fields: {:?} }}",
            s.name, s.input, s.valid, s.ready, s.fields
        )
        .as_bytes());
    }
    for a in &m.formal_assigns {
        put(format!("formal assign {}|{}", a.target.0, a.lo).as_bytes());
        a.expr.digest(&mut put);
    }
    for p in &m.props {
        put(format!("prop {:?}|{}|{}", p.kind, p.name, p.doc).as_bytes());
        p.cond.digest(&mut put);
    }
    for r in &m.formal_regs {
        put(format!("formal reg {}", r.reg.0).as_bytes());
        r.d.digest(&mut put);
    }
    for r in &m.rams {
        put(format!("ram {}|{}|{}|{}|{}", r.name, r.doc, r.width, r.depth, r.rdata.0).as_bytes());
        for e in [&r.we, &r.waddr, &r.wdata, &r.re, &r.raddr] {
            e.digest(&mut put);
        }
        if let Some((be, lane)) = &r.wbe {
            put(format!("be {lane}").as_bytes());
            be.digest(&mut put);
        }
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn sig_of(e: &Expr) -> SigId {
    match e.kind() {
        ExprKind::Sig(s) => *s,
        _ => unreachable!("declared signals are always Sig expressions"),
    }
}

/// `[7:4], [1]` style list of the bit ranges where `pred` holds.
fn ranges(v: &[u8], pred: impl Fn(u8) -> bool) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        if pred(v[i]) {
            let lo = i;
            while i + 1 < v.len() && pred(v[i + 1]) {
                i += 1;
            }
            out.push(if lo == i { format!("[{i}]") } else { format!("[{i}:{lo}]") });
        }
        i += 1;
    }
    out.reverse();
    // A long list (a wide port with every other lane unused) is summarized.
    if out.len() > 8 {
        let n = out.len();
        return format!("{}, ... ({n} ranges in all), {}", out[..4].join(", "), out[n - 2..].join(", "));
    }
    out.join(", ")
}

/// Verilog text of an expression, for error messages.
pub fn show_expr(m: &Module, e: &Expr) -> String {
    e.verilog(&|id: SigId| m.signals.get(id.0).map_or("?", |x| x.name.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(b: ModuleBuilder) -> Vec<String> {
        b.finish().expect_err("design is invalid").problems
    }

    #[test]
    fn width_mismatch_names_both_sides() {
        let mut b = ModuleBuilder::new("t");
        let a = b.input("a_i", 8, "");
        let c = b.input("c_i", 4, "");
        let y = b.output("y_o", 8, "");
        b.assign(&y, &a.add(&c));
        let p = problems(b);
        assert_eq!(p[0], "operands of `+` differ in width: `a_i` is 8 bits, `c_i` is 4 bits");
    }

    #[test]
    fn assign_width_and_coverage_are_checked() {
        let mut b = ModuleBuilder::new("t");
        let a = b.input("a_i", 8, "");
        let y = b.output("y_o", 8, "");
        let z = b.output("z_o", 8, "");
        b.assign(&y, &a.slice(3, 0));
        b.assign_part(&z, 0, &a.slice(3, 0));
        b.assign_part(&z, 2, &a.slice(7, 4));
        let p = problems(b);
        assert_eq!(
            p,
            vec![
                "assign to `y_o` (8 bits) from `a_i[3:0]` (4 bits)".to_string(),
                "`y_o` bits [7:0] are not driven".to_string(),
                "`z_o` bits [7:6] are not driven".to_string(),
                "`z_o` bits [3:2] have more than one driver".to_string(),
            ]
        );
    }

    #[test]
    fn unread_bits_and_missing_next_state_are_reported() {
        let mut b = ModuleBuilder::new("t");
        let _clk = b.clock("clk_i");
        let _rst = b.reset("rst_i");
        let a = b.input("a_i", 8, "");
        let y = b.output("y_o", 4, "");
        let r = b.reg("count_q", 4, 0);
        b.assign(&y, &a.slice(3, 0).and(&r));
        let p = problems(b);
        assert!(p.contains(&"register `count_q` has 0 next-state assignments, must have exactly 1".to_string()), "{p:?}");
        assert!(p.contains(&"`a_i` bits [7:4] are never read".to_string()), "{p:?}");
    }

    #[test]
    fn instance_outputs_drive_and_inputs_read() {
        let mut s = ModuleBuilder::new("inv");
        let a = s.input("a_i", 4, "");
        let y = s.output("y_o", 4, "");
        s.assign(&y, &a.not());
        let sub = s.finish().unwrap();

        let mut b = ModuleBuilder::new("top");
        let x = b.input("x_i", 4, "");
        let y = b.output("y_o", 4, "");
        let floating = b.wire("floating", 4);
        let w = b.wire("w", 4);
        b.instance(&sub, "u_ok", &[("a_i", x.clone()), ("y_o", w.clone())]);
        b.assign(&y, &w);
        // An input fed by an undriven wire, and an output fighting an assign.
        b.instance(&sub, "u_bad", &[("a_i", floating), ("y_o", w.clone())]);
        let p = problems(b);
        assert_eq!(
            p,
            vec!["`floating` bits [3:0] are not driven".to_string(), "`w` bits [3:0] have more than one driver".to_string()]
        );
    }

    #[test]
    fn keywords_and_duplicates_are_renamed_stably() {
        let mut b = ModuleBuilder::new("t");
        let a = b.input("reg", 1, "");
        let y = b.output("out", 1, "");
        let w = b.let_("out", &a.not());
        b.assign(&y, &w);
        let m = b.finish().unwrap();
        let names: Vec<_> = m.signals.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["reg_", "out", "out_1"]);
    }

    #[test]
    fn expression_slices_are_hoisted_to_wires() {
        let mut b = ModuleBuilder::new("t");
        let a = b.input("a_i", 8, "");
        let c = b.input("c_i", 8, "");
        let y = b.output("y_o", 4, "");
        let z = b.output("z_o", 2, "");
        let x = a.xor(&c);
        b.assign(&y, &x.slice(3, 0));
        b.assign(&z, &x.slice(5, 4));
        let m = b.finish().unwrap();
        // One wire for the xor, sliced twice; its unread top bits carry a waiver.
        let temps: Vec<_> = m.signals.iter().filter(|s| s.name.contains("_t")).collect();
        assert_eq!(temps.len(), 1, "{temps:?}");
        assert_eq!(temps[0].name, "y_o_t1");
        assert_eq!(
            temps[0].waiver.as_deref(),
            Some("bits [7:6] unused: holds an expression of which only a slice is used")
        );
    }
}
