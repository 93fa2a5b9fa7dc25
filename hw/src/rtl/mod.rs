//! The gpurtl RTL description layer: small on purpose.
//!
//! Parameters are ordinary runtime values; a block description is a Rust
//! function that builds [`Module`]s with a [`ModuleBuilder`]. Widths are checked
//! when the module is finished; a [`Design`] (a top module, what it
//! instantiates, the parameters it came from) elaborates into named modules
//! and their Verilog-2005 text.
//!
//! Module layering, each file using only those above it: `expr` (expressions,
//! their widths and text), `namer`; `module` (signals, the builder, its
//! checks), `formal` (properties); `print` (a module's Verilog), `stream` (valid/ready bundles),
//! `pipe`, `counter`; `design` (composition and naming).

pub mod counter;
pub mod design;
pub mod expr;
pub mod formal;
pub mod module;
pub mod namer;
pub mod pipe;
pub mod print;
pub mod stream;

pub use counter::split_counter;
pub use design::{Design, Elaborated, Unit};
pub use formal::{Prop, PropKind};
pub use expr::{bits_for, clog2, literal, lowest_bit, popcount, select, select_onehot, sum_tree, BinOp, Expr, ExprKind, SigId, UnOp};
pub use module::{Alternative, Assign, Inst, Instance, Module, ModuleBuilder, Origin, RegNext, RtlError, SigKind, Signal, StreamDecl};
pub use stream::{Flow, Stream};
