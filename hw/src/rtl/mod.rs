//! The gpurtl RTL description layer: small on purpose.
//!
//! Parameters are ordinary runtime values; a block description is a Rust
//! function that builds [`Module`]s with a [`ModuleBuilder`]. Widths are checked
//! when the module is finished, and the `gpurtl-gen` crate prints the result as
//! Verilog-2005.

pub mod counter;
pub mod expr;
pub mod module;
pub mod namer;
pub mod pipe;
pub mod print;

pub use counter::split_counter;
pub use expr::{bits_for, clog2, lowest_bit, popcount, select, select_onehot, sum_tree, BinOp, Expr, ExprKind, SigId, UnOp};
pub use module::{Assign, Instance, Module, ModuleBuilder, RegNext, RtlError, SigKind, Signal};
