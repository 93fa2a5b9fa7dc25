//! gpurtl generation: output files, external tools, benchmarks, the block
//! registry and the `gpurtl` command line.
//!
//! Module layering, each using only those above it: `error`, `progress`, `tools`,
//! `timing`, `json`, `emit`, `image`, `rtl_engine`; `block` (the `Block` trait); `bench`, `synth`,
//! `sweep` (flows that take resolved parameters); `tables` (the parameter,
//! preset and port tables of `gpurtl list`); `jobs` (manifests of
//! sweep and cosimulation jobs, their renderings, `collect`); `blocks` (one
//! adapter per block); `cli` (argument parsing and dispatch).

pub mod args;
pub mod bench;
pub mod block;
pub mod blocks;
pub mod cli;
pub mod emit;
pub mod error;
pub mod gantt;
pub mod image;
pub mod jobs;
pub mod json;
pub mod progress;
pub mod rtl_engine;
pub mod sweep;
pub mod synth;
pub mod tables;
pub mod timing;
pub mod tools;
