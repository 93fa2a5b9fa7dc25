//! One testbench per block: drives the generated RTL through the harness,
//! with random back-pressure, and returns results in the model's format.

pub mod cbload;
pub mod compress;

/// Width of an index field over `n` items, as the blocks declare it.
pub fn index_bits(n: u32) -> u32 {
    (32 - (n.max(2) - 1).leading_zeros()).max(1)
}
pub mod systolic;
