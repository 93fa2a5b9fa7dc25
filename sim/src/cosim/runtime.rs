//! Loaded design libraries ([`Compiled`]) and simulation instances ([`Sim`]).

use super::{io_err, low_mask, path_to_cstring, words_bits, words_for, CosimError, DesignSpec, PortHandle, PortSpec};
use num_bigint::BigUint;
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Compiled designs
// ---------------------------------------------------------------------------

/// The version of the C entry points below; must match
/// `gpurtl_cosim_abi()` in the generated shim.
pub(crate) const SHIM_ABI: u32 = 2;

/// The C entry points of one design library (see `templates/shim.cpp`).
#[derive(Clone, Copy)]
struct Api {
    new: unsafe extern "C" fn() -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    finished: unsafe extern "C" fn(*mut c_void) -> u32,
    /// Settle: every input in from the port buffer, every output out to it.
    eval: unsafe extern "C" fn(*mut c_void, *mut u32),
    /// One clock cycle (inputs in first when the flag says they changed),
    /// outputs out to the port buffer.
    tick: unsafe extern "C" fn(*mut c_void, u32, *mut u32),
    trace_open: unsafe extern "C" fn(*mut c_void, *const c_char) -> i32,
    trace_close: unsafe extern "C" fn(*mut c_void),
}

struct Inner {
    api: Api,
    top: String,
    ports: Vec<PortSpec>,
    by_name: HashMap<String, u32>,
    /// Each port's first word in the port buffer, and the buffer's length.
    offsets: Vec<u32>,
    buffer_words: usize,
    build_dir: PathBuf,
    design: u32,
    /// Built with Verilator's VCD tracing (`compile_traced`).
    traced: bool,
    /// What it was built from: the traced copy is built from it on demand.
    spec: DesignSpec,
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
        let mut sim = Sim {
            inst,
            api,
            cycle: 0,
            dirty: false,
            tracing: false,
            traced: self.inner.traced,
            buf: vec![0; self.inner.buffer_words],
            compiled: self.clone(),
        };
        // The outputs as the model starts (and every input zero).
        sim.eval();
        Ok(sim)
    }

    /// A new instance, tracing to a VCD at `vcd` when given (a testbench's
    /// first step). A design built without tracing ([`super::compile`])
    /// runs that instance on its traced copy, built (or taken from the
    /// cache) on first use: the same ports, handles and cycles.
    pub fn start(&self, vcd: Option<&std::path::Path>) -> Result<Sim, CosimError> {
        let Some(path) = vcd else { return self.instantiate() };
        let mut sim = if self.inner.traced {
            self.instantiate()?
        } else {
            let traced = super::compile_traced(&self.inner.spec)?;
            let mut sim = traced.instantiate()?;
            // Handles resolved on `self` stay valid: the copy has the same
            // ports at the same offsets; `traced` stays loaded (the
            // per-process memo keeps every library).
            sim.compiled = self.clone();
            sim
        };
        sim.trace_vcd(path)?;
        Ok(sim)
    }

    /// True when built with tracing: its instances can start a waveform at
    /// any cycle.
    pub fn traced(&self) -> bool {
        self.inner.traced
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
            offset: self.inner.offsets[index as usize],
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
/// handshakes), then `tick()`. The instance keeps every port's value in a
/// buffer: `set` and `get` only touch the buffer, and `eval` and `tick` cross
/// into the model once each, copying all inputs in and all outputs out, so
/// the cost of a cycle does not grow with the number of ports. `get` returns
/// the outputs as of the last `eval` or `tick` (an input: the value set).
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
    /// The library running this instance was built with tracing.
    traced: bool,
    /// Every port's value, 32-bit words, each port at its offset.
    buf: Vec<u32>,
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

    /// The port's words in the buffer.
    #[inline]
    fn slot(&mut self, p: PortHandle) -> &mut [u32] {
        self.check_handle(p);
        let o = p.offset as usize;
        &mut self.buf[o..o + p.words()]
    }

    /// Writes an input port (value masked to the port width; for ports wider
    /// than 64 bits the value is zero-extended). Writes to outputs are
    /// overwritten by the next `eval` or `tick`.
    #[inline]
    pub fn set(&mut self, p: PortHandle, v: u64) {
        debug_assert!(
            p.width >= 64 || v >> p.width == 0,
            "value {v:#x} does not fit in {}-bit port #{}",
            p.width,
            p.index
        );
        let v = v & low_mask(p.width);
        let w = self.slot(p);
        w[0] = v as u32;
        if w.len() > 1 {
            w[1] = (v >> 32) as u32;
            w[2..].fill(0);
        }
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
        let mut digits = v.iter_u32_digits();
        for w in self.slot(p).iter_mut() {
            *w = digits.next().unwrap_or(0);
        }
        self.mask_top(p);
    }

    /// Like [`Sim::set_big`], but reports a value that does not fit.
    pub fn try_set_big(&mut self, p: PortHandle, v: &BigUint) -> Result<(), CosimError> {
        self.width_check(p, v.bits())?;
        self.set_big(p, v);
        Ok(())
    }

    /// Writes an input port from little-endian 32-bit words (missing words are
    /// zero, the value is masked to the port width).
    #[inline]
    pub fn set_words(&mut self, p: PortHandle, words: &[u32]) {
        debug_assert!(
            words_bits(words) <= u64::from(p.width),
            "value needs {} bits but port #{} is {} bits wide",
            words_bits(words),
            p.index,
            p.width
        );
        let slot = self.slot(p);
        let n = words.len().min(slot.len());
        slot[..n].copy_from_slice(&words[..n]);
        slot[n..].fill(0);
        self.mask_top(p);
    }

    /// Like [`Sim::set_words`], but reports a value that does not fit.
    pub fn try_set_words(&mut self, p: PortHandle, words: &[u32]) -> Result<(), CosimError> {
        self.width_check(p, words_bits(words))?;
        self.set_words(p, words);
        Ok(())
    }

    /// Clears the bits above the port width in its top word; marks the inputs changed.
    #[inline]
    fn mask_top(&mut self, p: PortHandle) {
        let rem = p.width % 32;
        if rem != 0 {
            if let Some(top) = self.slot(p).last_mut() {
                *top &= (1u32 << rem) - 1;
            }
        }
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

    /// The port's value as little-endian 32-bit words, without a copy.
    #[inline]
    pub fn words(&self, p: PortHandle) -> &[u32] {
        self.check_handle(p);
        let o = p.offset as usize;
        &self.buf[o..o + p.words()]
    }

    /// Reads the low 64 bits of a port.
    #[inline]
    pub fn get(&self, p: PortHandle) -> u64 {
        let w = self.words(p);
        u64::from(w[0]) | w.get(1).map_or(0, |&x| u64::from(x) << 32)
    }

    /// Reads a port of any width.
    pub fn get_big(&self, p: PortHandle) -> BigUint {
        BigUint::from_slice(self.words(p))
    }

    /// Reads a port as little-endian 32-bit words; `out` is resized to
    /// exactly [`PortHandle::words`] entries.
    pub fn get_words(&self, p: PortHandle, out: &mut Vec<u32>) {
        out.clear();
        out.extend_from_slice(self.words(p));
    }

    /// Settles combinational logic after inputs changed: every input into the
    /// model, every output back, in one call.
    #[inline]
    pub fn eval(&mut self) {
        // SAFETY: live instance; the buffer holds every port at the offsets
        // the shim was generated with (checked when the library was loaded).
        unsafe { (self.api.eval)(self.inst.as_ptr(), self.buf.as_mut_ptr()) };
        self.dirty = false;
    }

    /// One full clock cycle: settle with the clock low (skipped when nothing
    /// was written since the last `eval`), rising edge, outputs back. Records
    /// VCD samples when tracing.
    #[inline]
    pub fn tick(&mut self) {
        // SAFETY: as for `eval`.
        unsafe { (self.api.tick)(self.inst.as_ptr(), u32::from(self.dirty), self.buf.as_mut_ptr()) };
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
        if !self.traced {
            return Err(CosimError::Io(format!(
                "`{}` was built without tracing: start the instance with its VCD path (`Compiled::start`) or build it with `compile_traced`",
                self.compiled.inner.top
            )));
        }
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

/// Loads a built design library and checks that it matches `spec`.
pub(crate) fn load(spec: &DesignSpec, dir: &Path, lib_path: &Path, traced: bool) -> Result<Compiled, CosimError> {
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
    // The same layout as the shim's (`cpp::validate`): ports in order, each
    // on whole words.
    let mut offsets = Vec::with_capacity(spec.ports.len());
    let mut buffer_words = 0;
    for p in &spec.ports {
        offsets.push(buffer_words as u32);
        buffer_words += words_for(p.width);
    }
    Ok(Compiled {
        inner: Arc::new(Inner {
            api,
            top: spec.top.clone(),
            ports: spec.ports.clone(),
            by_name,
            offsets,
            buffer_words,
            build_dir: dir.to_path_buf(),
            design: NEXT_DESIGN.fetch_add(1, Ordering::Relaxed),
            traced,
            spec: spec.clone(),
            _lib: lib,
        }),
    })
}

