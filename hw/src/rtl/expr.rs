//! Expressions of the RTL layer.
//!
//! Every expression carries its width. Constructors never fail: an operand
//! width mismatch is recorded in the tree and reported, with both sides
//! printed, when the expression is handed to a [`ModuleBuilder`]
//! (`assign`, `next`, ...). That keeps block descriptions free of `?` on
//! every operator while still rejecting a bad design at generation time.
//!
//! [`ModuleBuilder`]: super::ModuleBuilder

use num_bigint::BigUint;
/// Width helpers, defined with the parameters that derive widths from them.
pub use gpurtl_params::{bits_for, clog2};
use std::rc::Rc;

/// Index of a signal inside its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SigId(pub(crate) usize);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    ReduceOr,
    ReduceAnd,
    ReduceXor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    And,
    Or,
    Xor,
    Add,
    Sub,
    Mul,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub fn verilog(self) -> &'static str {
        match self {
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
    fn is_compare(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Sig(SigId),
    Const(BigUint),
    /// `inner[hi:lo]`
    Slice(Expr, u32, u32),
    /// Most significant part first, as in Verilog.
    Concat(Vec<Expr>),
    Repl(u32, Expr),
    Un(UnOp, Expr),
    Bin(BinOp, Expr, Expr),
    /// `sel ? then : else`
    Mux(Expr, Expr, Expr),
    /// Full two's-complement product, `a.width + b.width` bits. Verilog's
    /// signedness rules make `$signed(a) * $signed(b)` safe only as the whole
    /// right-hand side of a wire of exactly that width, so the builder always
    /// gives it one.
    SMul(Expr, Expr),
    /// A construction error, reported when the expression is used.
    Bad(String),
}

/// A width-annotated expression. Cheap to clone (shared tree).
#[derive(Clone, Debug)]
pub struct Expr {
    pub(crate) node: Rc<ExprKind>,
    pub(crate) width: u32,
}

impl Expr {
    pub(crate) fn new(kind: ExprKind, width: u32) -> Expr {
        Expr { node: Rc::new(kind), width }
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn kind(&self) -> &ExprKind {
        &self.node
    }

    /// `width`-bit constant. A value that does not fit is reported at build.
    pub fn lit(width: u32, value: u64) -> Expr {
        Expr::new(ExprKind::Const(BigUint::from(value)), width)
    }
    pub fn lit_big(width: u32, value: BigUint) -> Expr {
        Expr::new(ExprKind::Const(value), width)
    }
    pub fn zero(width: u32) -> Expr {
        Expr::lit(width, 0)
    }
    pub fn ones(width: u32) -> Expr {
        Expr::lit_big(width, (BigUint::from(1u8) << width) - 1u8)
    }
    pub fn bit(value: bool) -> Expr {
        Expr::lit(1, value as u64)
    }

    pub fn slice(&self, hi: u32, lo: u32) -> Expr {
        if lo == 0 && hi + 1 == self.width {
            return self.clone();
        }
        Expr::new(ExprKind::Slice(self.clone(), hi, lo), hi.saturating_sub(lo) + 1)
    }
    pub fn bit_at(&self, i: u32) -> Expr {
        self.slice(i, i)
    }
    /// `width` bits starting at `lo` (a lane of a packed vector).
    pub fn part(&self, lo: u32, width: u32) -> Expr {
        self.slice(lo + width - 1, lo)
    }
    /// Concatenate, most significant first.
    pub fn cat(parts: &[Expr]) -> Expr {
        if parts.len() == 1 {
            return parts[0].clone();
        }
        let w = parts.iter().map(|p| p.width).sum();
        Expr::new(ExprKind::Concat(parts.to_vec()), w)
    }
    /// Concatenate lanes given least significant first (lane 0 in the low bits).
    pub fn cat_lanes(lanes: &[Expr]) -> Expr {
        let rev: Vec<Expr> = lanes.iter().rev().cloned().collect();
        Expr::cat(&rev)
    }
    pub fn repl(&self, n: u32) -> Expr {
        if n == 1 {
            return self.clone();
        }
        Expr::new(ExprKind::Repl(n, self.clone()), self.width * n)
    }
    /// Zero-extend to `width` (no-op when already that wide).
    pub fn zext(&self, width: u32) -> Expr {
        if width == self.width {
            self.clone()
        } else if width < self.width {
            Expr::new(
                ExprKind::Bad(format!(
                    "zero-extension of a {}-bit value to {} bits would narrow it",
                    self.width, width
                )),
                width,
            )
        } else {
            Expr::cat(&[Expr::zero(width - self.width), self.clone()])
        }
    }

    /// Bitwise NOT; `~~x` is `x` (Verilog has no `~~` token: Icarus refuses it).
    pub fn not(&self) -> Expr {
        if let ExprKind::Un(UnOp::Not, x) = self.kind() {
            return x.clone();
        }
        Expr::new(ExprKind::Un(UnOp::Not, self.clone()), self.width)
    }
    pub fn any(&self) -> Expr {
        if self.width == 1 {
            return self.clone();
        }
        Expr::new(ExprKind::Un(UnOp::ReduceOr, self.clone()), 1)
    }
    pub fn all(&self) -> Expr {
        if self.width == 1 {
            return self.clone();
        }
        Expr::new(ExprKind::Un(UnOp::ReduceAnd, self.clone()), 1)
    }
    pub fn parity(&self) -> Expr {
        Expr::new(ExprKind::Un(UnOp::ReduceXor, self.clone()), 1)
    }

    fn bin(&self, op: BinOp, rhs: &Expr) -> Expr {
        let w = if op.is_compare() { 1 } else { self.width.max(rhs.width) };
        Expr::new(ExprKind::Bin(op, self.clone(), rhs.clone()), w)
    }
    pub fn and(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::And, rhs)
    }
    pub fn or(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Or, rhs)
    }
    pub fn xor(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Xor, rhs)
    }
    /// Modular addition: both operands and the result have the same width.
    pub fn add(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Add, rhs)
    }
    pub fn sub(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Sub, rhs)
    }
    /// Modular (truncating) multiplication of equal-width operands. Extend
    /// both to the product width first for a full product; sign-extending
    /// gives the two's-complement product.
    pub fn mul(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Mul, rhs)
    }
    /// Signed full product (both operands two's complement): `self.width +
    /// rhs.width` bits. Maps onto the signed multipliers of FPGA DSP blocks.
    pub fn smul(&self, rhs: &Expr) -> Expr {
        Expr::new(ExprKind::SMul(self.clone(), rhs.clone()), self.width + rhs.width)
    }
    /// Sign-extend to `width` (replicate the top bit).
    pub fn sext(&self, width: u32) -> Expr {
        if width <= self.width {
            return self.zext(width);
        }
        let top = self.bit_at(self.width - 1);
        Expr::cat(&[top.repl(width - self.width), self.clone()])
    }
    pub fn eq(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Eq, rhs)
    }
    pub fn ne(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Ne, rhs)
    }
    /// Unsigned comparisons.
    pub fn lt(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Lt, rhs)
    }
    pub fn le(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Le, rhs)
    }
    pub fn gt(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Gt, rhs)
    }
    pub fn ge(&self, rhs: &Expr) -> Expr {
        self.bin(BinOp::Ge, rhs)
    }
    pub fn eq_lit(&self, v: u64) -> Expr {
        self.eq(&Expr::lit(self.width, v))
    }
    /// `self ? t : f` where `self` is one bit wide.
    pub fn mux(&self, t: &Expr, f: &Expr) -> Expr {
        Expr::new(ExprKind::Mux(self.clone(), t.clone(), f.clone()), t.width.max(f.width))
    }

    /// Feeds the expression's structure to `put` (for content hashes).
    pub(crate) fn digest(&self, put: &mut dyn FnMut(&[u8])) {
        put(&self.width.to_le_bytes());
        match self.kind() {
            ExprKind::Sig(id) => {
                put(b"s");
                put(&(id.0 as u64).to_le_bytes())
            }
            ExprKind::Const(v) => {
                put(b"c");
                put(&v.to_bytes_le())
            }
            ExprKind::Bad(msg) => {
                put(b"!");
                put(msg.as_bytes())
            }
            ExprKind::Slice(x, hi, lo) => {
                put(b"[");
                put(&hi.to_le_bytes());
                put(&lo.to_le_bytes());
                x.digest(put)
            }
            ExprKind::Concat(es) => {
                put(b"{");
                put(&(es.len() as u64).to_le_bytes());
                es.iter().for_each(|x| x.digest(put))
            }
            ExprKind::Repl(n, x) => {
                put(b"r");
                put(&n.to_le_bytes());
                x.digest(put)
            }
            ExprKind::Un(op, x) => {
                put(format!("u{op:?}").as_bytes());
                x.digest(put)
            }
            ExprKind::SMul(a, b) => {
                put(b"*");
                a.digest(put);
                b.digest(put)
            }
            ExprKind::Bin(op, a, b) => {
                put(format!("b{op:?}").as_bytes());
                a.digest(put);
                b.digest(put)
            }
            ExprKind::Mux(s, t, f) => {
                put(b"?");
                s.digest(put);
                t.digest(put);
                f.digest(put)
            }
        }
    }

    /// Verilog text, with each signal printed by `name`.
    pub fn verilog<'a>(&self, name: &dyn Fn(SigId) -> &'a str) -> String {
        let mut s = String::new();
        self.write_verilog(name, &mut s, true);
        s
    }

    fn write_verilog<'a>(&self, name: &dyn Fn(SigId) -> &'a str, s: &mut String, top: bool) {
        match self.kind() {
            ExprKind::Sig(id) => s.push_str(name(*id)),
            ExprKind::Const(v) => s.push_str(&literal(self.width(), v)),
            ExprKind::Bad(msg) => s.push_str(&format!("/* {msg} */")),
            ExprKind::Slice(inner, hi, lo) => {
                inner.write_verilog(name, s, false);
                if hi == lo {
                    s.push_str(&format!("[{hi}]"));
                } else {
                    s.push_str(&format!("[{hi}:{lo}]"));
                }
            }
            ExprKind::Concat(es) => {
                s.push('{');
                for (i, x) in es.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    x.write_verilog(name, s, true);
                }
                s.push('}');
            }
            ExprKind::Repl(n, x) => {
                s.push_str(&format!("{{{n}{{"));
                x.write_verilog(name, s, true);
                s.push_str("}}");
            }
            ExprKind::Un(op, x) => {
                s.push_str(match op {
                    UnOp::Not => "~",
                    UnOp::ReduceOr => "|",
                    UnOp::ReduceAnd => "&",
                    UnOp::ReduceXor => "^",
                });
                x.write_verilog(name, s, false);
            }
            ExprKind::SMul(a, b) => {
                s.push_str("$signed(");
                a.write_verilog(name, s, true);
                s.push_str(") * $signed(");
                b.write_verilog(name, s, true);
                s.push(')');
            }
            ExprKind::Bin(op, a, b) => {
                if !top {
                    s.push('(');
                }
                a.write_verilog(name, s, false);
                s.push_str(&format!(" {} ", op.verilog()));
                b.write_verilog(name, s, false);
                if !top {
                    s.push(')');
                }
            }
            ExprKind::Mux(sel, t, f) => {
                if !top {
                    s.push('(');
                }
                sel.write_verilog(name, s, false);
                s.push_str(" ? ");
                t.write_verilog(name, s, false);
                s.push_str(" : ");
                // A chain of muxes reads as a priority list without nesting parens.
                f.write_verilog(name, s, matches!(f.kind(), ExprKind::Mux(..)));
                if !top {
                    s.push(')');
                }
            }
        }
    }

    /// First width problem in the tree, as a readable sentence.
    pub(crate) fn check(&self, show: &dyn Fn(&Expr) -> String) -> Result<(), String> {
        match &*self.node {
            ExprKind::Sig(_) => Ok(()),
            ExprKind::Bad(msg) => Err(msg.clone()),
            ExprKind::Const(v) => {
                if self.width == 0 {
                    Err("a constant of width 0".into())
                } else if v.bits() > self.width as u64 {
                    Err(format!("constant {v} does not fit in {} bits", self.width))
                } else {
                    Ok(())
                }
            }
            ExprKind::Slice(e, hi, lo) => {
                e.check(show)?;
                if lo > hi || *hi >= e.width {
                    Err(format!("slice [{hi}:{lo}] out of range of `{}` ({} bits)", show(e), e.width))
                } else {
                    Ok(())
                }
            }
            ExprKind::Concat(es) => es.iter().try_for_each(|e| e.check(show)),
            ExprKind::Repl(n, e) => {
                e.check(show)?;
                if *n == 0 {
                    Err(format!("replication of `{}` zero times", show(e)))
                } else {
                    Ok(())
                }
            }
            ExprKind::Un(_, e) => e.check(show),
            ExprKind::SMul(a, b) => {
                a.check(show)?;
                b.check(show)
            }
            ExprKind::Bin(op, a, b) => {
                a.check(show)?;
                b.check(show)?;
                if a.width != b.width {
                    Err(format!(
                        "operands of `{}` differ in width: `{}` is {} bits, `{}` is {} bits",
                        op.verilog(),
                        show(a),
                        a.width,
                        show(b),
                        b.width
                    ))
                } else {
                    Ok(())
                }
            }
            ExprKind::Mux(s, t, f) => {
                s.check(show)?;
                t.check(show)?;
                f.check(show)?;
                if s.width != 1 {
                    Err(format!("mux select `{}` is {} bits, must be 1", show(s), s.width))
                } else if t.width != f.width {
                    Err(format!(
                        "mux arms differ in width: `{}` is {} bits, `{}` is {} bits",
                        show(t),
                        t.width,
                        show(f),
                        f.width
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Signals read by this expression (with repetition).
    pub(crate) fn visit_sigs(&self, f: &mut dyn FnMut(SigId, Option<(u32, u32)>)) {
        match &*self.node {
            ExprKind::Sig(s) => f(*s, None),
            ExprKind::Const(_) | ExprKind::Bad(_) => {}
            ExprKind::Slice(e, hi, lo) => {
                if let ExprKind::Sig(s) = &*e.node {
                    f(*s, Some((*hi, *lo)))
                } else {
                    e.visit_sigs(f)
                }
            }
            ExprKind::Concat(es) => es.iter().for_each(|e| e.visit_sigs(f)),
            ExprKind::Repl(_, e) | ExprKind::Un(_, e) => e.visit_sigs(f),
            ExprKind::Bin(_, a, b) | ExprKind::SMul(a, b) => {
                a.visit_sigs(f);
                b.visit_sigs(f)
            }
            ExprKind::Mux(s, t, e) => {
                s.visit_sigs(f);
                t.visit_sigs(f);
                e.visit_sigs(f)
            }
        }
    }
}

/// Sized Verilog literal: decimal when small, hex otherwise.
pub fn literal(width: u32, v: &BigUint) -> String {
    if v.bits() <= 16 {
        format!("{width}'d{v}")
    } else {
        format!("{width}'h{}", v.to_str_radix(16))
    }
}

/// `items[sel]` as a balanced tree of 2:1 muxes (one level per bit of
/// `sel`). Indices past the end of `items` give zero.
pub fn select(sel: &Expr, items: &[Expr]) -> Expr {
    let w = items.first().map_or(1, |e| e.width());
    let mut level: Vec<Expr> = items.to_vec();
    level.resize((1usize << sel.width()).max(items.len()), Expr::zero(w));
    for bit in 0..sel.width() {
        let s = sel.bit_at(bit);
        level = level.chunks(2).map(|p| if p.len() == 2 { s.mux(&p[1], &p[0]) } else { p[0].clone() }).collect();
    }
    level.swap_remove(0)
}

/// The item whose bit is set in the one-hot `onehot` (zero if none): an
/// AND-OR mux, cheaper than a binary tree when the select is one-hot.
pub fn select_onehot(onehot: &Expr, items: &[Expr]) -> Expr {
    let w = items.first().map_or(1, |e| e.width());
    items
        .iter()
        .enumerate()
        .map(|(i, e)| e.and(&onehot.bit_at(i as u32).repl(w)))
        .reduce(|a, b| a.or(&b))
        .unwrap_or_else(|| Expr::zero(w))
}

/// Number of set bits among one-bit values, as a balanced adder tree;
/// `width` bits wide.
pub fn popcount(bits: &[Expr], width: u32) -> Expr {
    sum_tree(&bits.iter().map(|b| b.zext(width)).collect::<Vec<_>>(), width)
}

/// Sum of `terms` (each at most `width` bits, zero-extended), as a balanced
/// adder tree `width` bits wide; zero when there are none.
pub fn sum_tree(terms: &[Expr], width: u32) -> Expr {
    match terms.len() {
        0 => Expr::zero(width),
        1 => terms[0].zext(width),
        n => sum_tree(&terms[..n / 2], width).add(&sum_tree(&terms[n / 2..], width)),
    }
}

/// The lowest set bit of `x`, one-hot (zero when none): a prefix OR, so it
/// maps onto LUTs rather than the carry chain of `x & -x`.
pub fn lowest_bit(x: &Expr) -> Expr {
    let mut below: Option<Expr> = None;
    let mut bits = Vec::new();
    for i in 0..x.width() {
        let xi = x.bit_at(i);
        bits.push(below.as_ref().map_or_else(|| xi.clone(), |b| xi.and(&b.not())));
        below = Some(below.map_or_else(|| xi.clone(), |b| b.or(&xi)));
    }
    Expr::cat_lanes(&bits)
}

