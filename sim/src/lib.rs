//! gpurtl simulation: golden models, the Verilator cosimulation harness, and
//! one testbench per block that drives its generated RTL through the harness.

pub mod budget;
pub mod cosim;
pub mod files;
pub mod mem;
pub mod models;
pub mod rng;
pub mod tb;
