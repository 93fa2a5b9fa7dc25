//! gpurtl generation: Verilog printing, output files, external tools,
//! benchmarks and the `gpurtl` command line.

pub mod bench;
pub mod blocks;
pub mod cli;
pub mod emit;
pub mod rtl_engine;
pub mod runners;
pub mod sweep;
pub mod synth;
pub mod tools;
pub mod verilog;
