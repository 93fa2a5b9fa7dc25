//! Hand-computed expectations from docs/cu.md.
