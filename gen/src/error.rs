//! The generator's one error type, and so the command line's exit status.

use std::fmt;

/// Why a command failed. `Bad`: the user's arguments, parameters or input
/// (exit 2; the message names the field, the value and what is allowed).
/// `Failed`: a tool, the file system or the design (exit 1).
#[derive(Debug)]
pub enum Error {
    Bad(String),
    Failed(String),
    /// A usage error shown as it is (the help of a bare `gpurtl`), exit 2.
    Usage(String),
}

impl Error {
    pub fn code(&self) -> i32 {
        match self {
            Error::Bad(_) | Error::Usage(_) => 2,
            Error::Failed(_) => 1,
        }
    }
    pub fn message(&self) -> &str {
        let (Error::Bad(m) | Error::Failed(m) | Error::Usage(m)) = self;
        m
    }
    /// A file system failure on `path`.
    pub fn io(what: &str, path: &std::path::Path, e: impl fmt::Display) -> Error {
        Error::Failed(format!("cannot {what} `{}`: {e}", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<gpurtl_params::ParamErrors> for Error {
    fn from(e: gpurtl_params::ParamErrors) -> Self {
        Error::Bad(e.to_string())
    }
}

impl From<gpurtl_sim::models::InputErrors> for Error {
    fn from(e: gpurtl_sim::models::InputErrors) -> Self {
        Error::Bad(e.to_string())
    }
}

impl From<gpurtl_hw::rtl::RtlError> for Error {
    fn from(e: gpurtl_hw::rtl::RtlError) -> Self {
        Error::Failed(e.to_string())
    }
}

impl From<gpurtl_sim::cosim::CosimError> for Error {
    fn from(e: gpurtl_sim::cosim::CosimError) -> Self {
        Error::Failed(e.to_string())
    }
}

impl From<crate::tools::ToolError> for Error {
    fn from(e: crate::tools::ToolError) -> Self {
        Error::Failed(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Failed(format!("JSON: {e}"))
    }
}
