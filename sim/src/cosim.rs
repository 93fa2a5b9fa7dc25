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

use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_void, CString};
use std::fmt::{self, Write as _};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use askama::Template;
use num_bigint::BigUint;
use sha2::{Digest, Sha256};

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
// Compiled designs
// ---------------------------------------------------------------------------

/// The C entry points of one design library (see `templates/shim.cpp`).
#[derive(Clone, Copy)]
struct Api {
    new: unsafe extern "C" fn() -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    finished: unsafe extern "C" fn(*mut c_void) -> u32,
    set_u64: unsafe extern "C" fn(*mut c_void, u32, u64),
    get_u64: unsafe extern "C" fn(*mut c_void, u32) -> u64,
    set_words: unsafe extern "C" fn(*mut c_void, u32, *const u32),
    get_words: unsafe extern "C" fn(*mut c_void, u32, *mut u32),
    eval: unsafe extern "C" fn(*mut c_void),
    tick: unsafe extern "C" fn(*mut c_void, u32),
    trace_open: unsafe extern "C" fn(*mut c_void, *const c_char) -> i32,
    trace_close: unsafe extern "C" fn(*mut c_void),
}

struct Inner {
    api: Api,
    top: String,
    ports: Vec<PortSpec>,
    by_name: HashMap<String, u32>,
    max_words: usize,
    build_dir: PathBuf,
    design: u32,
    /// Keeps the code behind `api` mapped. Never unloaded in practice: the
    /// per-process memo holds every library until exit (unloading Verilator
    /// code with live thread_local destructors is not worth the risk).
    _lib: libloading::Library,
}

/// A built and loaded design. Cheap to clone; shareable across threads.
#[derive(Clone)]
pub struct Compiled {
    inner: Arc<Inner>,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("top", &self.inner.top)
            .field("build_dir", &self.inner.build_dir)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Creates a fresh model instance (time 0, initial blocks run, settled).
    pub fn instantiate(&self) -> Result<Sim, CosimError> {
        let api = self.inner.api;
        // SAFETY: `new` comes from the loaded shim and takes no arguments.
        let raw = unsafe { (api.new)() };
        let inst = std::ptr::NonNull::new(raw)
            .ok_or_else(|| CosimError::Load("the model constructor returned null".into()))?;
        Ok(Sim {
            inst,
            api,
            cycle: 0,
            dirty: false,
            tracing: false,
            scratch: vec![0; self.inner.max_words],
            compiled: self.clone(),
        })
    }

    /// A new instance, tracing to a VCD at `vcd` when given (a testbench's
    /// first step).
    pub fn start(&self, vcd: Option<&std::path::Path>) -> Result<Sim, CosimError> {
        let mut sim = self.instantiate()?;
        if let Some(path) = vcd {
            sim.trace_vcd(path)?;
        }
        Ok(sim)
    }

    /// Resolves a port by its Verilog name.
    pub fn port(&self, name: &str) -> Result<PortHandle, CosimError> {
        let index = *self
            .inner
            .by_name
            .get(name)
            .ok_or_else(|| CosimError::UnknownPort(name.to_string()))?;
        let spec = &self.inner.ports[index as usize];
        Ok(PortHandle {
            index,
            width: spec.width,
            dir: spec.dir,
            design: self.inner.design,
        })
    }

    /// The cache directory holding the generated sources, `build.log` and the
    /// shared library.
    pub fn build_dir(&self) -> &Path {
        &self.inner.build_dir
    }

    /// The Verilog top module name.
    pub fn top(&self) -> &str {
        &self.inner.top
    }

    /// The port list the design was built with.
    pub fn ports(&self) -> &[PortSpec] {
        &self.inner.ports
    }
}

// ---------------------------------------------------------------------------
// Simulation instances
// ---------------------------------------------------------------------------

/// One model instance with its own `VerilatedContext`.
///
/// Typical cycle: `set` inputs, `eval()`, `get` outputs (e.g. to decide
/// handshakes), then `tick()`.
///
/// `Sim` is `Send` (it may move between threads) but not `Sync`; different
/// instances, including instances of the same design, can run concurrently.
pub struct Sim {
    inst: std::ptr::NonNull<c_void>,
    /// Copy of the design's entry points, so the hot path does not chase the Arc.
    api: Api,
    cycle: u64,
    /// Inputs were written since the last settle; `tick` must settle first.
    dirty: bool,
    tracing: bool,
    /// Staging buffer for wide ports, sized for the widest port.
    scratch: Vec<u32>,
    /// Keeps the library loaded for as long as the instance lives.
    compiled: Compiled,
}

// SAFETY: the instance is only reached through `&mut self` (or `&self` for
// read-only queries of this instance's own context), never shared. Every call
// re-binds Verilator's thread-local "current context" to this instance's
// context, so moving it to another thread is fine.
unsafe impl Send for Sim {}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("top", &self.compiled.inner.top)
            .field("cycle", &self.cycle)
            .field("tracing", &self.tracing)
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// Resolves a port by its Verilog name.
    pub fn port(&self, name: &str) -> Result<PortHandle, CosimError> {
        self.compiled.port(name)
    }

    /// The design this instance belongs to.
    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }

    #[inline]
    fn check_handle(&self, p: PortHandle) {
        debug_assert_eq!(
            p.design, self.compiled.inner.design,
            "PortHandle for port #{} belongs to a different design",
            p.index
        );
    }

    /// Writes an input port (value masked to the port width; for ports wider
    /// than 64 bits the value is zero-extended). Writes to outputs are ignored.
    #[inline]
    pub fn set(&mut self, p: PortHandle, v: u64) {
        self.check_handle(p);
        debug_assert!(
            p.width >= 64 || v >> p.width == 0,
            "value {v:#x} does not fit in {}-bit port #{}",
            p.width,
            p.index
        );
        let v = v & low_mask(p.width);
        // SAFETY: live instance; unknown indices are ignored by the shim.
        unsafe { (self.api.set_u64)(self.inst.as_ptr(), p.index, v) };
        self.dirty = true;
    }

    /// Like [`Sim::set`], but reports a value that does not fit.
    pub fn try_set(&mut self, p: PortHandle, v: u64) -> Result<(), CosimError> {
        let bits = u64::from(64 - v.leading_zeros());
        self.width_check(p, bits)?;
        self.set(p, v);
        Ok(())
    }

    /// Writes an input port of any width (masked to the port width).
    pub fn set_big(&mut self, p: PortHandle, v: &BigUint) {
        debug_assert!(
            v.bits() <= u64::from(p.width),
            "value needs {} bits but port #{} is {} bits wide",
            v.bits(),
            p.index,
            p.width
        );
        if p.width <= 64 {
            let lo = v.iter_u64_digits().next().unwrap_or(0);
            self.set(p, lo & low_mask(p.width));
            return;
        }
        let n = p.words();
        let mut digits = v.iter_u32_digits();
        for w in &mut self.scratch[..n] {
            *w = digits.next().unwrap_or(0);
        }
        self.write_scratch(p);
    }

    /// Like [`Sim::set_big`], but reports a value that does not fit.
    pub fn try_set_big(&mut self, p: PortHandle, v: &BigUint) -> Result<(), CosimError> {
        self.width_check(p, v.bits())?;
        self.set_big(p, v);
        Ok(())
    }

    /// Writes an input port from little-endian 32-bit words (missing words are
    /// zero, the value is masked to the port width).
    pub fn set_words(&mut self, p: PortHandle, words: &[u32]) {
        debug_assert!(
            words_bits(words) <= u64::from(p.width),
            "value needs {} bits but port #{} is {} bits wide",
            words_bits(words),
            p.index,
            p.width
        );
        if p.width <= 64 {
            let lo = u64::from(words.first().copied().unwrap_or(0));
            let hi = u64::from(words.get(1).copied().unwrap_or(0));
            self.set(p, (lo | hi << 32) & low_mask(p.width));
            return;
        }
        let n = p.words();
        for (i, w) in self.scratch[..n].iter_mut().enumerate() {
            *w = words.get(i).copied().unwrap_or(0);
        }
        self.write_scratch(p);
    }

    /// Like [`Sim::set_words`], but reports a value that does not fit.
    pub fn try_set_words(&mut self, p: PortHandle, words: &[u32]) -> Result<(), CosimError> {
        self.width_check(p, words_bits(words))?;
        self.set_words(p, words);
        Ok(())
    }

    /// Masks the top word of `scratch[..words]` and hands it to the model.
    fn write_scratch(&mut self, p: PortHandle) {
        self.check_handle(p);
        let n = p.words();
        let rem = p.width % 32;
        if rem != 0 {
            self.scratch[n - 1] &= (1u32 << rem) - 1;
        }
        // SAFETY: live instance; the shim reads exactly `words(port)` words
        // and scratch holds at least that many.
        unsafe { (self.api.set_words)(self.inst.as_ptr(), p.index, self.scratch.as_ptr()) };
        self.dirty = true;
    }

    fn width_check(&self, p: PortHandle, value_bits: u64) -> Result<(), CosimError> {
        if value_bits > u64::from(p.width) {
            let port = self.compiled.inner.ports[p.index()].name.clone();
            return Err(CosimError::Width {
                port,
                width: p.width,
                value_bits,
            });
        }
        Ok(())
    }

    /// Reads the low 64 bits of a port.
    #[inline]
    pub fn get(&mut self, p: PortHandle) -> u64 {
        self.check_handle(p);
        // SAFETY: live instance; unknown indices read as 0.
        unsafe { (self.api.get_u64)(self.inst.as_ptr(), p.index) }
    }

    /// Reads a port of any width.
    pub fn get_big(&mut self, p: PortHandle) -> BigUint {
        if p.width <= 64 {
            return BigUint::from(self.get(p));
        }
        self.read_scratch(p);
        BigUint::from_slice(&self.scratch[..p.words()])
    }

    /// Reads a port as little-endian 32-bit words; `out` is resized to
    /// exactly [`PortHandle::words`] entries.
    pub fn get_words(&mut self, p: PortHandle, out: &mut Vec<u32>) {
        out.clear();
        if p.width <= 64 {
            let v = self.get(p);
            out.push(v as u32);
            if p.width > 32 {
                out.push((v >> 32) as u32);
            }
            return;
        }
        self.read_scratch(p);
        out.extend_from_slice(&self.scratch[..p.words()]);
    }

    fn read_scratch(&mut self, p: PortHandle) {
        self.check_handle(p);
        // SAFETY: live instance; the shim writes exactly `words(port)` words.
        unsafe { (self.api.get_words)(self.inst.as_ptr(), p.index, self.scratch.as_mut_ptr()) };
    }

    /// Settles combinational logic after inputs changed.
    #[inline]
    pub fn eval(&mut self) {
        // SAFETY: live instance.
        unsafe { (self.api.eval)(self.inst.as_ptr()) };
        self.dirty = false;
    }

    /// One full clock cycle: settle with the clock low (skipped when nothing
    /// was written since the last `eval`), rising edge, falling edge. Records
    /// VCD samples when tracing.
    #[inline]
    pub fn tick(&mut self) {
        // SAFETY: live instance.
        unsafe { (self.api.tick)(self.inst.as_ptr(), u32::from(self.dirty)) };
        self.dirty = false;
        self.cycle += 1;
    }

    /// `cycles` clock edges with `rst` high, then `rst` low: the reset every
    /// testbench starts with (set the other inputs first).
    pub fn reset(&mut self, rst: PortHandle, cycles: u32) {
        self.set(rst, 1);
        self.eval();
        for _ in 0..cycles {
            self.tick();
        }
        self.set(rst, 0);
    }

    /// `cycles` clock edges with the inputs as they are (settling outputs
    /// such as pipelined counters), then an evaluation.
    pub fn idle(&mut self, cycles: u32) {
        for _ in 0..cycles {
            self.eval();
            self.tick();
        }
        self.eval();
    }

    /// Number of ticks so far.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// True once the design executed `$finish`, `$stop` or `$fatal`.
    pub fn finished(&self) -> bool {
        // SAFETY: live instance; reads a flag of this instance's own context.
        unsafe { (self.api.finished)(self.inst.as_ptr()) != 0 }
    }

    /// Starts dumping every signal of the design to a VCD file (closing any
    /// trace already open). Each cycle spans 10 time units: inputs as set
    /// before `tick` appear at `10*c`, the state after the rising edge at
    /// `10*c + 5`. The file is complete after [`Sim::trace_close`] or drop.
    pub fn trace_vcd(&mut self, path: &Path) -> Result<(), CosimError> {
        // Verilator's writer reports an unwritable file only by staying
        // closed; probe it here for a real error message.
        File::create(path).map_err(|e| io_err(format!("cannot create {}", path.display()), e))?;
        let c_path = path_to_cstring(path)?;
        // SAFETY: live instance; the path is NUL-terminated and outlives the call.
        let rc = unsafe { (self.api.trace_open)(self.inst.as_ptr(), c_path.as_ptr()) };
        if rc != 0 {
            return Err(CosimError::Io(format!(
                "Verilator could not open {} for VCD output",
                path.display()
            )));
        }
        self.tracing = true;
        Ok(())
    }

    /// Finishes and closes the VCD file, if one is open.
    pub fn trace_close(&mut self) {
        if self.tracing {
            // SAFETY: live instance.
            unsafe { (self.api.trace_close)(self.inst.as_ptr()) };
            self.tracing = false;
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // SAFETY: the instance is live and never used again; `free` runs the
        // final blocks, closes any trace and deletes model and context.
        unsafe { (self.api.free)(self.inst.as_ptr()) };
    }
}

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

/// Bumped whenever the shim ABI or the build recipe changes, so stale cache
/// entries are never reused.
const HARNESS_VERSION: u32 = 2;
/// Must match `gpurtl_cosim_abi()` in the generated shim.
const SHIM_ABI: u32 = 1;

/// Everything is position independent (it ends up in a shared library) and
/// hidden: only the shim's entry points are exported, so two design libraries
/// in one process cannot bind to each other's copy of the Verilator runtime.
///
/// `VL_USER_FINISH`: the shim supplies `vl_finish`, because Verilator's
/// default calls `exit(0)` on a second `$finish`, which would silently end
/// the whole Rust test process.
const CFLAGS: &str = "-fPIC -fvisibility=hidden -DVL_USER_FINISH";
/// `-Bsymbolic` binds the library's references to its own definitions even
/// for the few symbols that stay exported (libstdc++ template instances);
/// `--no-undefined` turns a missing symbol into a link error instead of a
/// `dlopen` failure.
const LDFLAGS: &str = "-shared -Wl,-Bsymbolic -Wl,--no-undefined";

/// Flags shared by the runtime and design builds. `--no-timing`: the harness
/// owns time (ticks), so `#delays` are ignored (with a warning in build.log)
/// rather than rejected. `-Wno-fatal`: lint warnings land in build.log but do
/// not fail the build.
fn verilator_flags() -> Vec<&'static str> {
    vec![
        "--cc",
        "--trace",
        "--no-timing",
        "-Wno-fatal",
        "-CFLAGS",
        CFLAGS,
        "-LDFLAGS",
        LDFLAGS,
    ]
}

/// Runtime objects always put into the prebuilt runtime archive, on top of
/// whatever Verilator lists as global classes for a trivial design.
const EXTRA_RUNTIME_OBJECTS: &[&str] = &["verilated_dpi"];

/// Returns the output of `verilator --version` (cached for the process).
pub fn verilator_version() -> Result<String, CosimError> {
    static VERSION: Mutex<Option<String>> = Mutex::new(None);
    let mut cached = lock(&VERSION);
    if let Some(v) = cached.as_ref() {
        return Ok(v.clone());
    }
    let out = Command::new("verilator")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_err("verilator", e))?;
    if !out.status.success() {
        return Err(CosimError::Io(format!(
            "`verilator --version` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    *cached = Some(v.clone());
    Ok(v)
}

/// Builds (or fetches from the cache) and loads a design.
pub fn compile(spec: &DesignSpec) -> Result<Compiled, CosimError> {
    let shim_ports = validate(spec)?;
    let shim = ShimTemplate {
        abi: SHIM_ABI,
        top: &spec.top,
        clock: if spec.clock.is_empty() {
            None
        } else {
            Some(cpp_member_name(&spec.clock))
        },
        ports: shim_ports,
    }
    .render()
    .map_err(|e| CosimError::Io(format!("rendering the C++ shim failed: {e}")))?;

    let version = verilator_version()?;
    let root = cache_root()?;
    let runtime = runtime(&root, &version)?;

    let mut h = Hasher::new("design");
    h.field(&version);
    h.field(&verilator_flags().join(" "));
    h.field(&runtime.hash);
    h.field(&spec.top);
    h.field(&spec.verilog);
    h.field(&shim);
    let hash = h.finish();
    let dir = root.join(&hash);

    // One build per hash per process: concurrent callers wait on the slot.
    let slot = slot(&DESIGNS, &dir);
    let mut slot = lock(&slot);
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let lib_name = format!("lib{hash}.so");
    build_cached(&root, &dir, &lib_name, |tmp, log| {
        build_design(spec, &shim, &runtime, &lib_name, tmp, log)
    })?;
    let compiled = load(spec, &dir, &dir.join(&lib_name))?;
    *slot = Some(compiled.clone());
    Ok(compiled)
}

/// Per-process memo of loaded designs, keyed by cache directory.
static DESIGNS: SlotMap<Compiled> = OnceLock::new();
/// Per-process memo of runtime archives, keyed by cache directory.
static RUNTIMES: SlotMap<Runtime> = OnceLock::new();

type Slot<T> = Arc<Mutex<Option<T>>>;
type SlotMap<T> = OnceLock<Mutex<HashMap<PathBuf, Slot<T>>>>;

fn slot<T>(map: &'static SlotMap<T>, key: &Path) -> Slot<T> {
    let map = map.get_or_init(Default::default);
    lock(map).entry(key.to_path_buf()).or_default().clone()
}

/// Locks a mutex, ignoring poisoning (a panicking builder leaves `None`,
/// which simply means "not built yet").
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Template)]
#[template(path = "shim.cpp", escape = "none")]
struct ShimTemplate<'a> {
    abi: u32,
    top: &'a str,
    clock: Option<String>,
    ports: Vec<ShimPort>,
}

struct ShimPort {
    index: usize,
    /// Verilog name.
    name: String,
    /// Member name in the Verilated C++ class.
    cname: String,
    width: u32,
    words: usize,
    ctype: String,
    input: bool,
}

/// Checks the spec and prepares the per-port template data.
fn validate(spec: &DesignSpec) -> Result<Vec<ShimPort>, CosimError> {
    let bad = |message: String| CosimError::Build {
        log_path: PathBuf::new(),
        message,
    };
    if !is_identifier(&spec.top) {
        return Err(bad(format!(
            "top module name `{}` is not a plain Verilog identifier",
            spec.top
        )));
    }
    if spec.ports.len() > u32::MAX as usize {
        return Err(bad("too many ports".into()));
    }
    let mut seen = HashSet::new();
    let mut ports = Vec::with_capacity(spec.ports.len());
    for (index, p) in spec.ports.iter().enumerate() {
        if !is_identifier(&p.name) {
            return Err(bad(format!(
                "port name `{}` is not a plain Verilog identifier",
                p.name
            )));
        }
        if !seen.insert(p.name.as_str()) {
            return Err(bad(format!(
                "port `{}` is listed twice in the DesignSpec",
                p.name
            )));
        }
        if p.width == 0 {
            return Err(bad(format!("port `{}` has width 0", p.name)));
        }
        let words = words_for(p.width);
        let ctype = match p.width {
            1..=8 => "CData".to_string(),
            9..=16 => "SData".to_string(),
            17..=32 => "IData".to_string(),
            33..=64 => "QData".to_string(),
            _ => format!("VlWide<{words}>"),
        };
        ports.push(ShimPort {
            index,
            name: p.name.clone(),
            cname: cpp_member_name(&p.name),
            width: p.width,
            words,
            ctype,
            input: p.dir == PortDir::Input,
        });
    }
    if !spec.clock.is_empty() {
        match spec.ports.iter().find(|p| p.name == spec.clock) {
            None => return Err(CosimError::UnknownPort(spec.clock.clone())),
            Some(p) if p.dir != PortDir::Input || p.width != 1 => {
                return Err(bad(format!("clock `{}` must be a 1-bit input", spec.clock)))
            }
            Some(_) => {}
        }
    }
    Ok(ports)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The C++ member name Verilator gives a port: names that are C++ words get a
/// `__SYM__` prefix, and `__` is escaped as `___05F` (Verilator's
/// `AstNode::encodeName`). A mistake here shows up as a shim compile error.
fn cpp_member_name(name: &str) -> String {
    const CPP_WORDS: &[&str] = &[
        "NULL",
        "abort",
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "atomic_cancel",
        "atomic_commit",
        "atomic_noexcept",
        "auto",
        "bit_vector",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "cdecl",
        "char",
        "char16_t",
        "char32_t",
        "char8_t",
        "class",
        "compl",
        "complex",
        "concept",
        "const",
        "const_cast",
        "const_iterator",
        "consteval",
        "constexpr",
        "constinit",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "deque",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "far",
        "float",
        "for",
        "friend",
        "goto",
        "huge",
        "if",
        "import",
        "inline",
        "int",
        "interrupt",
        "iterator",
        "list",
        "long",
        "map",
        "module",
        "mutable",
        "namespace",
        "near",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "override",
        "pascal",
        "private",
        "protected",
        "public",
        "queue",
        "reference",
        "register",
        "reinterpret_cast",
        "requires",
        "restrict",
        "return",
        "sc_clock",
        "sc_in",
        "sc_inout",
        "sc_out",
        "sc_signal",
        "sensitive",
        "sensitive_neg",
        "sensitive_pos",
        "set",
        "short",
        "signed",
        "sizeof",
        "stack",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "synchronized",
        "template",
        "this",
        "thread_local",
        "throw",
        "transaction_safe",
        "transaction_safe_dynamic",
        "true",
        "try",
        "type_info",
        "typedef",
        "typeid",
        "typename",
        "uint16_t",
        "uint32_t",
        "uint8_t",
        "union",
        "unsigned",
        "using",
        "vector",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
    ];
    let mut out = String::with_capacity(name.len() + 8);
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' && bytes.get(i + 1) == Some(&b'_') {
            out.push_str("___05F");
            i += 2;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    if CPP_WORDS.contains(&name) {
        out.insert_str(0, "__SYM__");
    }
    out
}

/// Cache root: `$GPURTL_COSIM_CACHE`, else `$CARGO_TARGET_DIR/gpurtl-cosim`,
/// else `<workspace>/target/gpurtl-cosim`.
fn cache_root() -> Result<PathBuf, CosimError> {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = if let Some(p) = non_empty("GPURTL_COSIM_CACHE") {
        p
    } else if let Some(t) = non_empty("CARGO_TARGET_DIR") {
        t.join("gpurtl-cosim")
    } else {
        workspace_root().join("target").join("gpurtl-cosim")
    };
    fs::create_dir_all(&root).map_err(|e| {
        io_err(
            format!("cannot create cache directory {}", root.display()),
            e,
        )
    })?;
    // Absolute, because Verilator and make run in other directories.
    let root = root.canonicalize().map_err(|e| {
        io_err(
            format!("cannot resolve cache directory {}", root.display()),
            e,
        )
    })?;
    if root.to_string_lossy().chars().any(char::is_whitespace) {
        // Verilator's generated makefiles cannot cope with spaces in paths.
        return Err(CosimError::Io(format!(
            "cache directory {} contains whitespace; set GPURTL_COSIM_CACHE to a path without spaces",
            root.display()
        )));
    }
    Ok(root)
}

/// The nearest ancestor of this crate whose Cargo.toml declares `[workspace]`.
fn workspace_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let start = crate_dir.parent().unwrap_or(crate_dir);
    start
        .ancestors()
        .find(|d| {
            fs::read_to_string(d.join("Cargo.toml"))
                .is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
        })
        .unwrap_or(start)
        .to_path_buf()
}

/// Builds `final_dir` unless it already exists. The build runs in a fresh
/// temporary directory next to it, which is then renamed into place, so a
/// cache entry is either complete or absent, and concurrent processes
/// building the same entry simply race: the loser discards its copy. A
/// failed build is kept as `failed-<name>` so its log can be inspected.
fn build_cached(
    root: &Path,
    final_dir: &Path,
    marker: &str,
    build: impl FnOnce(&Path, &mut File) -> Result<(), CosimError>,
) -> Result<(), CosimError> {
    let complete = |d: &Path| d.join(marker).is_file();
    if complete(final_dir) {
        return Ok(());
    }
    if final_dir.exists() {
        // Left behind incomplete (e.g. files deleted by hand): start over.
        let _ = fs::remove_dir_all(final_dir);
    }
    let tmp = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(root)
        .map_err(|e| {
            io_err(
                format!("cannot create a build directory in {}", root.display()),
                e,
            )
        })?;
    let log_path = tmp.path().join("build.log");
    let mut log = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&log_path)
        .map_err(|e| io_err(format!("cannot create {}", log_path.display()), e))?;
    let started = Instant::now();
    match build(tmp.path(), &mut log) {
        Ok(()) => {}
        Err(CosimError::Build { message, .. }) => {
            let _ = writeln!(
                log,
                "# build FAILED after {:.1}s",
                started.elapsed().as_secs_f64()
            );
            drop(log);
            let name = final_dir.file_name().unwrap_or_default().to_string_lossy();
            let failed = root.join(format!("failed-{name}"));
            let _ = fs::remove_dir_all(&failed);
            let tmp_str = tmp.path().to_string_lossy().into_owned();
            let (dir, message) = match fs::rename(tmp.path(), &failed) {
                // Point file names in the messages at where the files are now.
                Ok(()) => (
                    failed.clone(),
                    message.replace(&tmp_str, &failed.to_string_lossy()),
                ),
                // Keep the temporary directory instead.
                Err(_) => (tmp.keep(), message),
            };
            return Err(CosimError::Build {
                log_path: dir.join("build.log"),
                message,
            });
        }
        Err(e) => return Err(e),
    }
    let _ = writeln!(
        log,
        "# build finished in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    drop(log);
    match fs::rename(tmp.path(), final_dir) {
        Ok(()) => Ok(()),
        // Another process published the same entry first; use theirs (the
        // TempDir guard deletes ours).
        Err(_) if complete(final_dir) => Ok(()),
        Err(e) => Err(io_err(
            format!("cannot publish build directory {}", final_dir.display()),
            e,
        )),
    }
}

/// The prebuilt Verilator runtime archive.
#[derive(Clone)]
struct Runtime {
    hash: String,
    archive: PathBuf,
    /// Object names (e.g. `verilated_vcd_c`) contained in the archive.
    objects: HashSet<String>,
}

const RUNTIME_ARCHIVE: &str = "libverilated_rt.a";
const RUNTIME_OBJECTS: &str = "objects.txt";

fn runtime(root: &Path, version: &str) -> Result<Runtime, CosimError> {
    let mut h = Hasher::new("runtime");
    h.field(version);
    h.field(&verilator_flags().join(" "));
    h.field(&EXTRA_RUNTIME_OBJECTS.join(" "));
    let hash = h.finish();
    let dir = root.join(format!("runtime-{hash}"));

    let slot = slot(&RUNTIMES, &dir);
    let mut slot = lock(&slot);
    if let Some(rt) = slot.as_ref() {
        return Ok(rt.clone());
    }
    build_cached(root, &dir, RUNTIME_ARCHIVE, build_runtime)?;
    let list = dir.join(RUNTIME_OBJECTS);
    let objects = fs::read_to_string(&list)
        .map_err(|e| io_err(format!("cannot read {}", list.display()), e))?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let rt = Runtime {
        hash,
        archive: dir.join(RUNTIME_ARCHIVE),
        objects,
    };
    *slot = Some(rt.clone());
    Ok(rt)
}

/// Compiles the Verilator runtime with exactly the flags design builds use,
/// by letting Verilator's own makefile build it for a trivial design.
fn build_runtime(dir: &Path, log: &mut File) -> Result<(), CosimError> {
    const TOP: &str = "gpurtl_runtime_probe";
    let src = dir.join("probe.v");
    write_file(&src, &format!("module {TOP}(input clk_i);\nendmodule\n"))?;
    let mdir = dir.join("obj");
    let mut cmd = Command::new("verilator");
    cmd.args(verilator_flags())
        .args([
            "--top-module",
            TOP,
            "--prefix",
            &format!("V{TOP}"),
            "--Mdir",
        ])
        .arg(&mdir)
        .arg(&src);
    run_logged(&mut cmd, log)?;

    let mut objects = global_objects(&mdir.join(format!("V{TOP}_classes.mk")))?;
    for extra in EXTRA_RUNTIME_OBJECTS {
        if !objects.iter().any(|o| o == extra) {
            objects.push(extra.to_string());
        }
    }
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(&mdir)
        .arg("-f")
        .arg(format!("V{TOP}.mk"))
        .arg(format!("-j{}", make_jobs()))
        .args(objects.iter().map(|o| format!("{o}.o")));
    run_logged(&mut cmd, log)?;

    let mut cmd = Command::new("ar");
    cmd.arg("rcs").arg(dir.join(RUNTIME_ARCHIVE));
    cmd.args(objects.iter().map(|o| mdir.join(format!("{o}.o"))));
    run_logged(&mut cmd, log)?;
    write_file(&dir.join(RUNTIME_OBJECTS), &(objects.join("\n") + "\n"))?;
    let _ = fs::remove_dir_all(&mdir);
    Ok(())
}

fn build_design(
    spec: &DesignSpec,
    shim: &str,
    runtime: &Runtime,
    lib_name: &str,
    dir: &Path,
    log: &mut File,
) -> Result<(), CosimError> {
    // Sources are passed relative to the build directory (Verilator runs in
    // it), so file names in Verilator's messages and in $display/$stop output
    // read `<top>.v:12` instead of pointing into the temporary build path.
    let verilog = format!("{}.v", spec.top);
    write_file(&dir.join(&verilog), &spec.verilog)?;
    write_file(&dir.join("shim.cpp"), shim)?;
    let prefix = format!("V{}", spec.top);

    // Step 1: Verilog -> C++ and a makefile (`-o` is relative to --Mdir).
    let mut cmd = Command::new("verilator");
    cmd.current_dir(dir)
        .args(verilator_flags())
        .args([
            "--exe",
            "--top-module",
            &spec.top,
            "--prefix",
            &prefix,
            "-o",
            lib_name,
        ])
        .args(["--Mdir", ".", "shim.cpp", &verilog]);
    run_logged(&mut cmd, log)?;

    // Step 2: compile and link. Link the prebuilt runtime instead of
    // recompiling it, unless the design needs runtime parts it lacks.
    let needed = global_objects(&dir.join(format!("{prefix}_classes.mk")))?;
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(dir)
        .arg("-f")
        .arg(format!("{prefix}.mk"))
        .arg(format!("-j{}", make_jobs()));
    if needed.iter().all(|o| runtime.objects.contains(o)) {
        cmd.arg("VM_GLOBAL_FAST=")
            .arg("VM_GLOBAL_SLOW=")
            .arg(format!("USER_LDLIBS={}", runtime.archive.display()));
    } else {
        let _ = writeln!(
            log,
            "# design needs runtime objects {needed:?}; compiling the runtime locally"
        );
    }
    run_logged(&mut cmd, log)?;

    if !dir.join(lib_name).is_file() {
        return Err(CosimError::Build {
            log_path: PathBuf::new(),
            message: format!("the build finished but produced no {lib_name}"),
        });
    }
    // Objects and archives are only needed for the link; keep sources and logs.
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("o" | "a" | "d")
            ) {
                let _ = fs::remove_file(p);
            }
        }
    }
    Ok(())
}

/// Names listed under `VM_GLOBAL_FAST` / `VM_GLOBAL_SLOW` in a Verilator
/// `*_classes.mk` (the runtime files to link once per executable).
fn global_objects(classes_mk: &Path) -> Result<Vec<String>, CosimError> {
    let text = fs::read_to_string(classes_mk)
        .map_err(|e| io_err(format!("cannot read {}", classes_mk.display()), e))?;
    let mut out = Vec::new();
    let mut in_list = false;
    for line in text.lines() {
        if line.starts_with("VM_GLOBAL_FAST") || line.starts_with("VM_GLOBAL_SLOW") {
            in_list = true;
        } else if in_list && line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
            let name = line.trim().trim_end_matches('\\').trim();
            if !name.is_empty() {
                out.push(name.to_string());
            }
        } else {
            in_list = false;
        }
    }
    Ok(out)
}

fn make_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// Runs a build step with stdout and stderr appended to the build log.
/// A failing step becomes [`CosimError::Build`] with the interesting part of
/// the log (the log path is filled in by [`build_cached`]).
fn run_logged(cmd: &mut Command, log: &mut File) -> Result<(), CosimError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let line = std::iter::once(program.clone())
        .chain(cmd.get_args().map(|a| shell_quote(&a.to_string_lossy())))
        .collect::<Vec<_>>()
        .join(" ");
    let io = |e| io_err("cannot write build.log".to_string(), e);
    writeln!(log, "$ {line}").map_err(io)?;
    log.flush().map_err(io)?;
    let start = log.stream_position().map_err(io)?;
    let out = log.try_clone().map_err(io)?;
    let err = log.try_clone().map_err(io)?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| spawn_err(&program, e))?;
    log.seek(SeekFrom::End(0)).map_err(io)?;
    if status.success() {
        return Ok(());
    }
    let mut text = String::new();
    log.seek(SeekFrom::Start(start)).map_err(io)?;
    let _ = log.read_to_string(&mut text);
    log.seek(SeekFrom::End(0)).map_err(io)?;
    Err(CosimError::Build {
        log_path: PathBuf::new(),
        message: format!("`{program}` failed ({status}):\n{}", summarize_log(&text)),
    })
}

/// The last ~40 lines of a failed step, preceded by any error lines that
/// scrolled out of that window (Verilator errors can be followed by a lot of
/// make noise).
fn summarize_log(text: &str) -> String {
    const TAIL: usize = 40;
    let lines: Vec<&str> = text.lines().collect();
    let tail_start = lines.len().saturating_sub(TAIL);
    let mut out = String::new();
    let early_errors: Vec<&str> = lines[..tail_start]
        .iter()
        .copied()
        .filter(|l| l.starts_with("%Error") || l.contains("error:"))
        .take(10)
        .collect();
    if !early_errors.is_empty() {
        for l in early_errors {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("...\n");
    }
    for l in &lines[tail_start..] {
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=+,:".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn load(spec: &DesignSpec, dir: &Path, lib_path: &Path) -> Result<Compiled, CosimError> {
    // RTLD_LOCAL (libloading's default, spelled out here): every design
    // library carries its own copy of the Verilator runtime and its own
    // `gpurtl_cosim_*` entry points, so none of its symbols may become
    // visible to libraries loaded later. RTLD_NOW reports problems here
    // rather than at the first call.
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the library's static constructors (Verilator
    // runtime globals), which have no preconditions.
    let lib: libloading::Library = unsafe { Library::open(Some(lib_path), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| CosimError::Load(format!("{}: {e}", lib_path.display())))?
        .into();

    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the generated shim defines this symbol with exactly the
            // signature of the corresponding `Api` field.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| CosimError::Load(format!("{}: {e}", lib_path.display())))?
        };
    }
    let abi: unsafe extern "C" fn() -> u32 = sym!("gpurtl_cosim_abi");
    let nports: unsafe extern "C" fn() -> u32 = sym!("gpurtl_cosim_nports");
    // SAFETY: argument-less getters from the shim.
    let (abi, nports) = unsafe { (abi(), nports()) };
    if abi != SHIM_ABI || nports as usize != spec.ports.len() {
        return Err(CosimError::Load(format!(
            "{} does not match this harness (abi {abi}, {nports} ports); delete the cache directory {}",
            lib_path.display(),
            dir.display()
        )));
    }
    let api = Api {
        new: sym!("gpurtl_cosim_new"),
        free: sym!("gpurtl_cosim_free"),
        finished: sym!("gpurtl_cosim_finished"),
        set_u64: sym!("gpurtl_cosim_set_u64"),
        get_u64: sym!("gpurtl_cosim_get_u64"),
        set_words: sym!("gpurtl_cosim_set_words"),
        get_words: sym!("gpurtl_cosim_get_words"),
        eval: sym!("gpurtl_cosim_eval"),
        tick: sym!("gpurtl_cosim_tick"),
        trace_open: sym!("gpurtl_cosim_trace_open"),
        trace_close: sym!("gpurtl_cosim_trace_close"),
    };

    static NEXT_DESIGN: AtomicU32 = AtomicU32::new(1);
    let by_name = spec
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i as u32))
        .collect();
    let max_words = spec
        .ports
        .iter()
        .map(|p| words_for(p.width))
        .max()
        .unwrap_or(0);
    Ok(Compiled {
        inner: Arc::new(Inner {
            api,
            top: spec.top.clone(),
            ports: spec.ports.clone(),
            by_name,
            max_words,
            build_dir: dir.to_path_buf(),
            design: NEXT_DESIGN.fetch_add(1, Ordering::Relaxed),
            _lib: lib,
        }),
    })
}

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

/// SHA-256 over length-prefixed fields, hex encoded (first 128 bits).
struct Hasher(Sha256);

impl Hasher {
    fn new(kind: &str) -> Self {
        let mut h = Hasher(Sha256::new());
        h.field(&format!("gpurtl-cosim {kind} v{HARNESS_VERSION}"));
        h
    }
    fn field(&mut self, s: &str) {
        self.0.update((s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }
    fn finish(self) -> String {
        self.0.finalize()[..16]
            .iter()
            .fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }
}

fn words_for(width: u32) -> usize {
    width.div_ceil(32) as usize
}

#[inline]
fn low_mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

fn words_bits(words: &[u32]) -> u64 {
    words.iter().rposition(|&w| w != 0).map_or(0, |i| {
        i as u64 * 32 + u64::from(32 - words[i].leading_zeros())
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), CosimError> {
    fs::write(path, text).map_err(|e| io_err(format!("cannot write {}", path.display()), e))
}

fn io_err(context: String, e: io::Error) -> CosimError {
    CosimError::Io(format!("{context}: {e}"))
}

fn spawn_err(program: &str, e: io::Error) -> CosimError {
    if e.kind() == io::ErrorKind::NotFound {
        CosimError::ToolMissing(program.to_string())
    } else {
        io_err(format!("cannot run `{program}`"), e)
    }
}

fn path_to_cstring(path: &Path) -> Result<CString, CosimError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| CosimError::Io(format!("path {} contains a NUL byte", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_follow_verilator_mangling() {
        assert_eq!(cpp_member_name("in_valid_i"), "in_valid_i");
        assert_eq!(cpp_member_name("in__x"), "in___05Fx");
        assert_eq!(cpp_member_name("a___b"), "a___05F_b");
        assert_eq!(cpp_member_name("goto"), "__SYM__goto");
        assert_eq!(cpp_member_name("_u"), "_u");
    }

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

    #[test]
    fn parses_global_classes() {
        let dir = tempfile::tempdir().unwrap();
        let mk = dir.path().join("V_classes.mk");
        fs::write(
            &mk,
            "VM_SUPPORT_SLOW += \\\n\tVx__Syms \\\n\n\
             VM_GLOBAL_FAST += \\\n\tverilated \\\n\tverilated_vcd_c \\\n\n\
             VM_GLOBAL_SLOW += \\\n\n\n",
        )
        .unwrap();
        assert_eq!(
            global_objects(&mk).unwrap(),
            ["verilated", "verilated_vcd_c"]
        );
    }
}
