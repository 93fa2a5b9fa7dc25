//! Golden models: naive behavioural Rust written from the brief, sharing no
//! code with the hardware descriptions.

pub mod compress;
