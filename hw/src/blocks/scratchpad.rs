//! The banked scratchpad as a block (docs/scratchpad.md): the RTL layer's
//! scratchpad (`rtl::scratchpad`) at the block's parameters.

use crate::rtl::scratchpad::{scratchpad, Shape};
use crate::rtl::RtlError;
use crate::Design;
use gpurtl_params::scratchpad::ScratchpadParams;

/// Name of the top module.
pub const TOP: &str = "gpurtl_scratchpad";

pub fn shape(p: &ScratchpadParams) -> Shape {
    Shape { banks: p.banks, words: p.words, data_bits: p.data_bits, read_ports: p.read_ports, write_ports: p.write_ports }
}

pub fn build(p: &ScratchpadParams) -> Result<Design, RtlError> {
    Ok(Design::of(scratchpad(TOP, shape(p))?, p))
}
