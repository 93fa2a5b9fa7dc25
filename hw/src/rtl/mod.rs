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
//! checks, and the property and RAM types), `formal` (properties), `ram`
//! (memory arrays); `print` (a module's Verilog), `stream` (valid/ready
//! bundles), `bus` (native memory ports and AXI bundles of streams), `pipe`,
//! `counter`, `arbiter`, `axi` (the memory components); `design`
//! (composition and naming).

pub mod arbiter;
pub mod axi;
pub mod bus;
pub mod counter;
pub mod design;
pub mod expr;
pub mod formal;
pub mod module;
pub mod namer;
pub mod pipe;
pub mod print;
pub mod ram;
pub mod scratchpad;
pub mod stream;

pub use bus::{Axi, Bus, BusKind, Native, Role};
pub use counter::split_counter;
pub use design::{Design, Elaborated, Unit};

pub use expr::{bits_for, clog2, literal, lowest_bit, popcount, select, select_onehot, sum_tree, BinOp, Expr, ExprKind, SigId, UnOp};
pub use module::{
    Alternative, Assign, Inst, Instance, Module, ModuleBuilder, Origin, PortNames, Prop, PropKind, Ram, RegNext, RtlError, SigKind,
    Signal, StreamDecl,
};
pub use ram::{RamRead, RamWrite};
pub use stream::{Flow, Stream};
