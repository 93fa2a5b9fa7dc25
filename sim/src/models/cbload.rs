//! placeholder: written from docs/cbload.md
