//! Building a design library: Verilator translates the Verilog and the
//! generated shim to C++, make compiles it and links the prebuilt Verilator
//! runtime; every step's output goes to the build's `build.log`.

use super::cache::{build_cached, cache_root, lock, slot, Hasher, SlotMap};
use super::cpp::{cpp_member_name, validate, NativeTemplate, ShimTemplate};
use super::runtime::{load, Compiled, SHIM_ABI};
use super::{io_err, spawn_err, write_file, CosimError, DesignSpec};
use askama::Template;
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

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
/// not fail the build. `trace`: Verilator's VCD code (`--trace`).
fn verilator_flags(trace: bool) -> Vec<&'static str> {
    let mut f = compile_flags(trace);
    f.extend(["-LDFLAGS", LDFLAGS]);
    f
}

/// The flags without the shared-library link: what the native loop of
/// `gpurtl bench harness` is built with, so that it compiles the model
/// exactly as the harness does.
///
/// A design is built without tracing: the trace code is a third of the C++
/// compile (the `gpu` at its `wide` test point: 68 s of CPU without, 100 s
/// with), and most builds never write a waveform. A waveform asks for the
/// traced build of the same design ([`compile_traced`]; `Compiled::start`
/// with a VCD path builds it on first use), cached beside the other.
fn compile_flags(trace: bool) -> Vec<&'static str> {
    let mut f = vec!["--cc"];
    if trace {
        f.push("--trace");
    }
    f.extend(["--no-timing", "-Wno-fatal", "-CFLAGS", CFLAGS]);
    f
}

/// The optimization of the model's evaluation code (Verilator's `OPT_FAST`,
/// `-Os` by default; the rest, `OPT_SLOW`, is compiled without
/// optimization). A design's build is most of what a test of it costs, and
/// `-O1` halves the C++ compile of a large one (the compress stream unit at
/// 1024 bits: 97 s of CPU at `-Os`, 49 s at `-O1`, 24 s at `-O0`) while
/// simulating as fast as `-Os` (the scheduler's and the command
/// processor's cosimulations: the same CPU time within 5%); `-O0` builds
/// quicker still but simulates two to three times slower.
const OPT_FAST: &str = "OPT_FAST=-O1";

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

/// Per-process memo of loaded designs, keyed by cache directory.
static DESIGNS: SlotMap<Compiled> = OnceLock::new();

/// Builds (or fetches from the cache) and loads a design, without tracing:
/// its instances write a waveform through [`Compiled::start`], which builds
/// the traced copy when first asked for one.
pub fn compile(spec: &DesignSpec) -> Result<Compiled, CosimError> {
    compile_as(spec, false)
}

/// Builds (or fetches from the cache) and loads a design with Verilator's
/// VCD tracing compiled in, so that any instance can start a waveform at any
/// cycle ([`Sim::trace_vcd`](super::Sim::trace_vcd)).
pub fn compile_traced(spec: &DesignSpec) -> Result<Compiled, CosimError> {
    compile_as(spec, true)
}

fn compile_as(spec: &DesignSpec, trace: bool) -> Result<Compiled, CosimError> {
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
    let runtime = runtime(&root, &version, trace)?;

    let mut h = Hasher::new("design");
    h.field(&version);
    h.field(&verilator_flags(trace).join(" "));
    h.field(OPT_FAST);
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
    let main = Main { name: "shim.cpp", text: &shim, shared: true };
    let what = if trace { format!("the traced copy of `{}` (for a waveform)", spec.top) } else { format!("`{}`", spec.top) };
    build_cached(&root, &dir, &lib_name, &what, |tmp, log| build_design(spec, &main, &runtime, &lib_name, trace, tmp, log))?;
    let compiled = load(spec, &dir, &dir.join(&lib_name), trace)?;
    *slot = Some(compiled.clone());
    Ok(compiled)
}

/// Builds (or fetches from the cache) the native Verilator loop of a design
/// (`templates/native.cpp`): every input but the clock and `reset` random
/// every cycle, two evals per cycle. Returns the executable, which takes a
/// cycle count and prints `<cycles> <seconds>`.
pub fn native_loop(spec: &DesignSpec, reset: Option<&str>) -> Result<PathBuf, CosimError> {
    let mut ports = validate(spec)?;
    for p in &mut ports {
        p.reset = Some(p.name.as_str()) == reset;
    }
    let clock = cpp_member_name(&spec.clock);
    let text = NativeTemplate { top: &spec.top, clock, reset: reset.map(cpp_member_name), ports }
        .render()
        .map_err(|e| CosimError::Io(format!("rendering the native loop failed: {e}")))?;
    let version = verilator_version()?;
    let root = cache_root()?;
    let runtime = runtime(&root, &version, false)?;
    let mut h = Hasher::new("native");
    h.field(&version);
    h.field(&compile_flags(false).join(" "));
    h.field(OPT_FAST);
    h.field(&runtime.hash);
    h.field(&spec.verilog);
    h.field(&text);
    let dir = root.join(format!("native-{}", h.finish()));
    let main = Main { name: "native.cpp", text: &text, shared: false };
    let what = format!("the native loop of `{}`", spec.top);
    build_cached(&root, &dir, "native", &what, |tmp, log| build_design(spec, &main, &runtime, "native", false, tmp, log))?;
    Ok(dir.join("native"))
}

/// The prebuilt Verilator runtime archive.
#[derive(Clone)]
struct Runtime {
    hash: String,
    archive: PathBuf,
    /// Object names (e.g. `verilated_vcd_c`) contained in the archive.
    objects: HashSet<String>,
}

/// Per-process memo of runtime archives, keyed by cache directory.
static RUNTIMES: SlotMap<Runtime> = OnceLock::new();

const RUNTIME_ARCHIVE: &str = "libverilated_rt.a";
const RUNTIME_OBJECTS: &str = "objects.txt";

fn runtime(root: &Path, version: &str, trace: bool) -> Result<Runtime, CosimError> {
    let mut h = Hasher::new("runtime");
    h.field(version);
    h.field(&verilator_flags(trace).join(" "));
    h.field(&EXTRA_RUNTIME_OBJECTS.join(" "));
    let hash = h.finish();
    let dir = root.join(format!("runtime-{hash}"));

    let slot = slot(&RUNTIMES, &dir);
    let mut slot = lock(&slot);
    if let Some(rt) = slot.as_ref() {
        return Ok(rt.clone());
    }
    build_cached(root, &dir, RUNTIME_ARCHIVE, "the Verilator runtime", |d, log| build_runtime(d, trace, log))?;
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
fn build_runtime(dir: &Path, trace: bool, log: &mut File) -> Result<(), CosimError> {
    const TOP: &str = "gpurtl_runtime_probe";
    let src = dir.join("probe.v");
    write_file(&src, &format!("module {TOP}(input clk_i);\nendmodule\n"))?;
    let mdir = dir.join("obj");
    let mut cmd = Command::new("verilator");
    cmd.args(verilator_flags(trace))
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

/// The C++ file with the entry points, and whether the result is the
/// harness's shared library (else an executable).
struct Main<'a> {
    name: &'a str,
    text: &'a str,
    shared: bool,
}

fn build_design(
    spec: &DesignSpec,
    main: &Main,
    runtime: &Runtime,
    lib_name: &str,
    trace: bool,
    dir: &Path,
    log: &mut File,
) -> Result<(), CosimError> {
    // Sources are passed relative to the build directory (Verilator runs in
    // it), so file names in Verilator's messages and in $display/$stop output
    // read `<top>.v:12` instead of pointing into the temporary build path.
    let verilog = format!("{}.v", spec.top);
    write_file(&dir.join(&verilog), &spec.verilog)?;
    write_file(&dir.join(main.name), main.text)?;
    let prefix = format!("V{}", spec.top);

    // Step 1: Verilog -> C++ and a makefile (`-o` is relative to --Mdir).
    let mut cmd = Command::new("verilator");
    cmd.current_dir(dir)
        .args(if main.shared { verilator_flags(trace) } else { compile_flags(trace) })
        .args([
            "--exe",
            "--top-module",
            &spec.top,
            "--prefix",
            &prefix,
            "-o",
            lib_name,
        ])
        .args(["--Mdir", ".", main.name, &verilog]);
    run_logged(&mut cmd, log)?;

    // Step 2: compile and link. Link the prebuilt runtime instead of
    // recompiling it, unless the design needs runtime parts it lacks.
    let needed = global_objects(&dir.join(format!("{prefix}_classes.mk")))?;
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(dir)
        .arg("-f")
        .arg(format!("{prefix}.mk"))
        .arg(format!("-j{}", make_jobs()))
        .arg(OPT_FAST);
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

/// `make -j`: the machine's cores (at least 2, at most 8). `cargo test`
/// runs two test threads, so two builds can overlap with twice as many
/// compilers as cores; that costs little, and a build alone (most of them:
/// one test thread is usually simulating) gets every core.
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

#[cfg(test)]
mod tests {
    use super::*;

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
