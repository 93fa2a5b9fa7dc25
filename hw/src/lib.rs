//! gpurtl hardware descriptions: the RTL layer and one module per block.

pub mod blocks;
pub mod rtl;
pub mod wrapper;

pub use rtl::{Design, Elaborated, Origin, Unit};
