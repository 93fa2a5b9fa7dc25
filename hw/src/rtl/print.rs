//! Verilog text of expressions. Module and file layout is printed by the
//! `gpurtl-gen` crate; expressions live here because error messages need them.

use super::expr::{Expr, ExprKind, UnOp};
use super::module::Module;
use num_bigint::BigUint;

/// Sized Verilog literal: decimal when small, hex otherwise.
pub fn literal(width: u32, v: &BigUint) -> String {
    if v.bits() <= 16 {
        format!("{width}'d{v}")
    } else {
        format!("{width}'h{}", v.to_str_radix(16))
    }
}

pub fn expr(m: &Module, e: &Expr) -> String {
    let mut s = String::new();
    write(m, e, &mut s, true);
    s
}

fn write(m: &Module, e: &Expr, s: &mut String, top: bool) {
    match e.kind() {
        ExprKind::Sig(id) => s.push_str(m.signals.get(id.0).map_or("?", |x| x.name.as_str())),
        ExprKind::Const(v) => s.push_str(&literal(e.width(), v)),
        ExprKind::Bad(msg) => s.push_str(&format!("/* {msg} */")),
        ExprKind::Slice(inner, hi, lo) => {
            write(m, inner, s, false);
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
                write(m, x, s, true);
            }
            s.push('}');
        }
        ExprKind::Repl(n, x) => {
            s.push_str(&format!("{{{n}{{"));
            write(m, x, s, true);
            s.push_str("}}");
        }
        ExprKind::Un(op, x) => {
            s.push_str(match op {
                UnOp::Not => "~",
                UnOp::ReduceOr => "|",
                UnOp::ReduceAnd => "&",
                UnOp::ReduceXor => "^",
            });
            write(m, x, s, false);
        }
        ExprKind::SMul(a, b) => {
            s.push_str("$signed(");
            write(m, a, s, true);
            s.push_str(") * $signed(");
            write(m, b, s, true);
            s.push(')');
        }
        ExprKind::Bin(op, a, b) => {
            if !top {
                s.push('(');
            }
            write(m, a, s, false);
            s.push_str(&format!(" {} ", op.verilog()));
            write(m, b, s, false);
            if !top {
                s.push(')');
            }
        }
        ExprKind::Mux(sel, t, f) => {
            if !top {
                s.push('(');
            }
            write(m, sel, s, false);
            s.push_str(" ? ");
            write(m, t, s, false);
            s.push_str(" : ");
            // A chain of muxes reads as a priority list without nesting parens.
            write(m, f, s, matches!(f.kind(), ExprKind::Mux(..)));
            if !top {
                s.push(')');
            }
        }
    }
}
