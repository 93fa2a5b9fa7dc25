//! Golden models: naive behavioural Rust written from the brief, sharing no
//! code with the hardware descriptions.

use serde_json::Value;
use std::fmt;

macro_rules! block_modules {
    ($($block:ident),* $(,)?) => { $(pub mod $block;)* };
}
gpurtl_params::for_each_block!(block_modules);

/// A malformed input file: where (a path like `ops[2].src`), what was found,
/// what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub field: String,
    pub value: String,
    pub allowed: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "input `{}` = {}: must be {}", self.field, self.value, self.allowed)
    }
}

impl std::error::Error for InputError {}

pub fn err(field: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> InputError {
    InputError { field: field.into(), value: value.to_string(), allowed: allowed.into() }
}

/// A JSON value as shown in a message, shortened.
pub fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}...", &s[..40])
    } else {
        s
    }
}
