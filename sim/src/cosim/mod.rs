//! Verilator cosimulation harness.
//!
//! [`compile`] turns a [`DesignSpec`] (Verilog text plus its port list) into a
//! shared library: Verilator translates the Verilog to C++, a generated shim
//! (`sim/templates/shim.cpp`) exposes the model through a small C ABI, and the
//! result is linked into `lib<hash>.so` and loaded with `dlopen`. A
//! [`Compiled`] design can be instantiated any number of times; each [`Sim`]
//! owns one model with its own `VerilatedContext`.
//!
//! Builds are cached on disk by content hash under
//! `$GPURTL_COSIM_CACHE` (default `<workspace>/target/gpurtl-cosim`), and
//! loaded libraries are memoized per process, so compiling the same design
//! from many test threads builds and loads it once.
//!
//! The Verilator runtime (`verilated.cpp`, the VCD writer, ...) does not
//! depend on the design, and compiling it is most of a small design's build
//! time, so it is built once per cache into `runtime-<hash>/` and linked into
//! every design library.
//!
//! ```no_run
//! # use gpurtl_sim::cosim::*;
//! # let spec: DesignSpec = unimplemented!();
//! let design = compile(&spec)?;
//! let mut sim = design.instantiate()?;
//! let (en, count) = (sim.port("en_i")?, sim.port("count_o")?);
//! sim.set(en, 1);
//! sim.eval();
//! let _before = sim.get(count);
//! sim.tick();
//! # Ok::<(), CosimError>(())
//! ```
//!
//! Files: `runtime.rs` (loaded designs and simulation instances), `build.rs`
//! (Verilator and the C++ build), `cache.rs` (the content-hash cache and the
//! per-process memo), `cpp.rs` (the shim's port table and C++ names); here,
//! the public types.
//!
//! Layering, each file using only those before it: here (the public types
//! and small helpers); `cpp.rs`, `cache.rs` and `runtime.rs`, each using
//! this file only; `build.rs`, using all of them (it renders the shim with
//! `cpp.rs`, builds into `cache.rs`'s cache and memos, and loads the result
//! with `runtime.rs`, whose loader owns the shim's ABI version).

mod build;
mod cache;
mod cpp;
mod runtime;

pub use build::{compile, compile_traced, native_loop, verilator_version};
pub use runtime::{Compiled, Sim};

use std::ffi::CString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

/// Direction of a top-level port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortDir {
    Input,
    Output,
}

/// One top-level port of a design.
#[derive(Clone, Debug)]
pub struct PortSpec {
    pub name: String,
    pub width: u32,
    pub dir: PortDir,
}

/// Everything needed to build a design for cosimulation.
#[derive(Clone, Debug)]
pub struct DesignSpec {
    /// Verilog top module name.
    pub top: String,
    /// Full Verilog source text (may contain several modules).
    pub verilog: String,
    /// All ports of the top, in order, including the clock.
    pub ports: Vec<PortSpec>,
    /// Name of the clock input port (e.g. `clk_i`). An empty string means the
    /// design has no clock; [`Sim::tick`] then only settles and advances time.
    pub clock: String,
}

/// Errors from building, loading or driving a cosimulation model.
#[derive(Debug)]
pub enum CosimError {
    /// A required external tool (`verilator`, `make`, ...) is not installed.
    ToolMissing(String),
    /// Verilator or the C++ build failed. `message` holds the relevant part of
    /// the log; the full log is at `log_path`.
    Build { log_path: PathBuf, message: String },
    /// The built library could not be loaded.
    Load(String),
    /// A file system or process error.
    Io(String),
    /// The design has no port with this name.
    UnknownPort(String),
    /// The RTL gave something wrong: a result that is not the expected
    /// one, or a broken protocol rule (a testbench's check failed).
    Mismatch(String),
    /// The RTL stopped making progress: the testbench's cycle budget ran
    /// out with work still outstanding.
    Hang(String),
    /// The run budget ([`crate::budget`]) ran out at this many cycles.
    Budget(u64),
    /// A value does not fit in the port it was written to.
    Width {
        port: String,
        width: u32,
        value_bits: u64,
    },
}

impl fmt::Display for CosimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CosimError::ToolMissing(tool) => {
                write!(f, "{tool} not found on PATH: run `make deps` to install it")
            }
            CosimError::Build { log_path, message } => {
                write!(f, "Verilator build of the design failed")?;
                if !log_path.as_os_str().is_empty() {
                    write!(f, " (full log: {})", log_path.display())?;
                }
                write!(f, ":\n{message}")
            }
            CosimError::Load(msg) => write!(f, "could not load the Verilated model: {msg}"),
            CosimError::Io(msg) => write!(f, "cosimulation I/O error: {msg}"),
            CosimError::Mismatch(msg) => write!(f, "the RTL is wrong: {msg}"),
            CosimError::Hang(msg) => write!(f, "the RTL stopped making progress: {msg}"),
            CosimError::Budget(limit) => write!(f, "the run reached its budget of {limit} cycles before it ended"),
            CosimError::UnknownPort(name) => write!(f, "the design has no port named `{name}`"),
            CosimError::Width { port, width, value_bits } => write!(
                f,
                "value for port `{port}` needs {value_bits} bits but the port is only {width} bits wide"
            ),
        }
    }
}

impl std::error::Error for CosimError {}

/// A resolved port: index into the design's port list plus its width and
/// direction. Cheap to copy; look it up once and reuse it in the hot loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortHandle {
    index: u32,
    width: u32,
    dir: PortDir,
    /// Where the port's words start in the instance's port buffer.
    offset: u32,
    /// Identifies the loaded design, to catch handles used with the wrong
    /// design in debug builds.
    design: u32,
}

impl PortHandle {
    /// Position of the port in [`DesignSpec::ports`].
    pub fn index(&self) -> usize {
        self.index as usize
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn dir(&self) -> PortDir {
        self.dir
    }
    /// Number of 32-bit words holding a value of this port.
    pub fn words(&self) -> usize {
        words_for(self.width)
    }
}

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

pub(crate) fn words_for(width: u32) -> usize {
    width.div_ceil(32) as usize
}

#[inline]
pub(crate) fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

pub(crate) fn words_bits(words: &[u32]) -> u64 {
    words.iter().rposition(|&w| w != 0).map_or(0, |i| {
        i as u64 * 32 + u64::from(32 - words[i].leading_zeros())
    })
}

pub(crate) fn write_file(path: &Path, text: &str) -> Result<(), CosimError> {
    fs::write(path, text).map_err(|e| io_err(format!("cannot write {}", path.display()), e))
}

pub(crate) fn io_err(context: String, e: io::Error) -> CosimError {
    CosimError::Io(format!("{context}: {e}"))
}

pub(crate) fn spawn_err(program: &str, e: io::Error) -> CosimError {
    if e.kind() == io::ErrorKind::NotFound {
        CosimError::ToolMissing(program.to_string())
    } else {
        io_err(format!("cannot run `{program}`"), e)
    }
}

pub(crate) fn path_to_cstring(path: &Path) -> Result<CString, CosimError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| CosimError::Io(format!("path {} contains a NUL byte", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_counts() {
        assert_eq!(words_bits(&[]), 0);
        assert_eq!(words_bits(&[0, 0]), 0);
        assert_eq!(words_bits(&[1]), 1);
        assert_eq!(words_bits(&[0, 1, 0]), 33);
        assert_eq!(low_mask(1), 1);
        assert_eq!(low_mask(64), u64::MAX);
        assert_eq!(words_for(100), 4);
    }
}
