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

/// `"0x"` followed by one or more hex digits (either case): a value of any
/// width (the caller checks it against its field's bits; leading zeros are
/// allowed). The models' input files write wide values this way.
pub fn parse_hex(v: &Value) -> Option<num_bigint::BigUint> {
    let s = v.as_str()?;
    let digits = s.strip_prefix("0x")?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    num_bigint::BigUint::parse_bytes(digits.as_bytes(), 16)
}

/// A JSON value as shown in a message, shortened (see [`gpurtl_params::short`]).
pub fn shown(v: &Value) -> String {
    gpurtl_params::short(v)
}

/// The violations of one input file, in file order: the first
/// [`InputErrors::SHOWN`] of them, and how many more there were (`.1`), so
/// that a file of 80,000 bad entries gives a short message, not a line each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputErrors(pub Vec<InputError>, pub usize);

impl InputErrors {
    /// Violations listed in a message; the rest are counted.
    pub const SHOWN: usize = 50;

    /// `list`, capped: the first [`InputErrors::SHOWN`], the rest counted.
    pub fn new(mut list: Vec<InputError>) -> InputErrors {
        let more = list.len().saturating_sub(Self::SHOWN);
        list.truncate(Self::SHOWN);
        InputErrors(list, more)
    }
    /// Every violation, counted ones included.
    pub fn count(&self) -> usize {
        self.0.len() + self.1
    }
}

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = self.1 + self.0.len().saturating_sub(Self::SHOWN);
        for (i, e) in self.0.iter().take(Self::SHOWN).enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        if more > 0 {
            write!(f, "\ninput: {more} more violations (the first {} are listed above)", Self::SHOWN)?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

impl From<InputError> for InputErrors {
    fn from(e: InputError) -> Self {
        InputErrors(vec![e], 0)
    }
}

/// Collects the violations of an input file as it is read, so that every
/// one is reported, not only the first. Each part of the file (a field, an
/// element) is checked on its own: a bad one is recorded and reading goes
/// on. A list reports its first few bad elements and then how many more.
#[derive(Default)]
pub struct Violations {
    list: Vec<InputError>,
    /// Violations past the first [`InputErrors::SHOWN`]: counted, not kept.
    more: usize,
}

impl Violations {
    /// Bad elements listed per list before the rest are counted.
    pub const PER_LIST: usize = 5;

    /// Record a violation (past the first [`InputErrors::SHOWN`], only counted).
    pub fn push(&mut self, e: InputError) {
        if self.list.len() < InputErrors::SHOWN {
            self.list.push(e);
        } else {
            self.more += 1;
        }
    }
    /// The value, or `None` with the violation recorded.
    pub fn take<T>(&mut self, r: Result<T, InputError>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }
    /// Each element of `items` through `f`; `Some` of them all when every
    /// one is good, else `None` with the first few violations (and the
    /// count of the others, named after `field`) recorded.
    pub fn each<X, T>(&mut self, field: &str, items: &[X], mut f: impl FnMut(usize, &X) -> Result<T, InputError>) -> Option<Vec<T>> {
        let mut out = Vec::with_capacity(items.len());
        let mut bad = 0;
        for (i, x) in items.iter().enumerate() {
            match f(i, x) {
                Ok(v) => out.push(v),
                Err(e) => {
                    bad += 1;
                    if bad <= Self::PER_LIST {
                        self.push(e);
                    }
                }
            }
        }
        if bad > Self::PER_LIST {
            let more = bad - Self::PER_LIST;
            self.push(err(field, format!("{more} more values like those"), "each as the message above says"));
        }
        (bad == 0).then_some(out)
    }
    /// Violations found apart from any one list (e.g. overlaps between
    /// requests): the first few, then how many more, named after `field`.
    pub fn capped(&mut self, field: &str, errs: Vec<InputError>) {
        let n = errs.len();
        self.counted(field, errs, n);
    }
    /// [`Violations::capped`] of `total` violations of which `first` are
    /// the first few (a rule whose violations are counted, not listed).
    pub fn counted(&mut self, field: &str, first: Vec<InputError>, total: usize) {
        for e in first.into_iter().take(Self::PER_LIST) {
            self.push(e);
        }
        if total > Self::PER_LIST {
            self.push(err(field, format!("{} more values like those", total - Self::PER_LIST), "each as the message above says"));
        }
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// `value` if nothing was violated, else every violation.
    pub fn finish<T>(self, value: impl FnOnce() -> T) -> Result<T, InputErrors> {
        if self.list.is_empty() {
            Ok(value())
        } else {
            Err(InputErrors(self.list, self.more))
        }
    }
    /// Every violation so far (and the one that stops reading, if any).
    pub fn stop(mut self, last: Option<InputError>) -> InputErrors {
        if let Some(e) = last {
            self.push(e);
        }
        InputErrors(self.list, self.more)
    }
}
