//! Files of a generated design: one `.v` per module with the banner, the
//! filelist `<top>.f`, and `<top>.json` (resolved parameters and ports).
//! Everything is written to a temporary file beside the target and renamed
//! into place, so an interrupted run leaves no half-written file.
//!
//! Output safety, for every command:
//! - An output file is written through symbolic links: the link stays and
//!   the file it names (which may not exist yet) is replaced ([`write_atomic`]).
//! - A folder `gen` writes into holds, beside the design, the manifest
//!   [`MANIFEST`]: every file that generation wrote with the FNV-1a 64 hash of
//!   its content. The next generation into the folder removes a file of the
//!   earlier one that it does not write again only when the manifest lists
//!   it and it still has that hash, i.e. when it provably is gpurtl's own,
//!   unchanged output (so the files of an earlier top or configuration go,
//!   and a hand-written or edited file stays, with a warning).
//! - While it writes, `gen` holds the lock [`LOCK`] in the folder (see
//!   [`lock_dir`]), so two generations into one folder take turns.

use askama::Template;
use gpurtl_hw::rtl::SigKind;
use gpurtl_hw::Design;
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Template)]
#[template(path = "module.v", escape = "none")]
struct ModuleFile<'a> {
    version: &'a str,
    block: &'a str,
    params: &'a str,
    command: &'a str,
    body: &'a str,
}

#[derive(Template)]
#[template(path = "filelist.f", escape = "none")]
struct FileList<'a> {
    version: &'a str,
    command: &'a str,
    top: &'a str,
    files: Vec<String>,
}

#[derive(Template)]
#[template(path = "core.core", escape = "none")]
struct CoreFile<'a> {
    version: &'a str,
    command: &'a str,
    params: &'a str,
    top: &'a str,
    description: String,
    files: Vec<String>,
    /// The sources of the ECP5 flow when some module has a hand-mapped ECP5
    /// body (else empty: no `rtl_ecp5` fileset, no `synth_ecp5` target).
    ecp5_files: Vec<String>,
}

/// (file name, contents) of every file of the design, in a stable order:
/// each module's `.v` (and hand-mapped `.<target>.v`), submodules first,
/// then `<top>.f`, `<top>.core` and `<top>.json`. Each module's banner names
/// the block and parameters it was generated from (a composed design's
/// submodules name their own); the regenerate command is the design's.
pub fn files(design: &Design) -> Vec<(String, String)> {
    let e = design.elaborate();
    let origin = design.origin();
    let command = origin.command();
    let mut out = Vec::new();
    for u in &e.units {
        let params = u.origin.params_text();
        let page = |body: &str| {
            let text = ModuleFile { version: VERSION, block: &u.origin.block, params: &params, command: &command, body }
                .render()
                .expect("templates render from plain strings");
            // askama drops the template's final newline; POSIX text files end with one.
            text.trim_end().to_string() + "\n"
        };
        out.push((format!("{}.v", u.name), page(&u.verilog)));
        for (target, body) in &u.alternatives {
            out.push((format!("{}.{target}.v", u.name), page(body)));
        }
    }
    let top = e.top();
    let names: Vec<String> = e.units.iter().map(|u| format!("{}.v", u.name)).collect();
    let f = FileList { version: VERSION, command: &command, top: &top.name, files: names.clone() }
        .render()
        .expect("templates render from plain strings");
    out.push((format!("{}.f", top.name), f.trim_end().to_string() + "\n"));
    let top_doc = top.module.doc.first().cloned().unwrap_or_default();
    let params = origin.params_text();
    let core = CoreFile {
        version: VERSION,
        command: &command,
        params: &params,
        top: &top.name,
        description: top_doc.replace('"', "'"),
        files: names.clone(),
        ecp5_files: if out.iter().any(|(f, _)| f.ends_with(".ecp5.v")) { sources_for(&out, Some("ecp5")) } else { Vec::new() },
    }
    .render()
    .expect("templates render from plain strings");
    out.push((format!("{}.core", top.name), core.trim_end().to_string() + "\n"));
    let ports: Vec<Value> = top
        .module
        .port_signals()
        .map(|p| {
            json!({"name": p.name, "dir": if p.kind == SigKind::Input {"input"} else {"output"}, "width": p.width, "doc": p.doc})
        })
        .collect();
    let meta = json!({
        "generator": format!("gpurtl {VERSION}"),
        "block": origin.block,
        "top": top.name,
        "params": origin.params,
        "command": command,
        "files": names,
        "ports": ports,
    });
    out.push((format!("{}.json", top.name), serde_json::to_string_pretty(&meta).unwrap_or_default() + "\n"));
    out
}

/// Names of the Verilog sources among `files`, in filelist order.
pub fn sources(files: &[(String, String)]) -> Vec<String> {
    sources_for(files, None)
}

/// FPGA families that may have hand-mapped module bodies (`<module>.<target>.v`).
pub const ALTERNATIVE_TARGETS: &[&str] = &["ecp5"];

/// The Verilog sources for a flow: the generic bodies, except that with
/// `target` a module that has a hand-mapped body for it uses that file.
pub fn sources_for(files: &[(String, String)], target: Option<&str>) -> Vec<String> {
    let is_alt = |f: &str| ALTERNATIVE_TARGETS.iter().any(|t| f.ends_with(&format!(".{t}.v")));
    let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    names
        .iter()
        .filter(|f| f.ends_with(".v") && !is_alt(f))
        .map(|f| {
            let alt = target.map(|t| format!("{}.{t}.v", f.trim_end_matches(".v")));
            match alt {
                Some(a) if names.contains(&a.as_str()) => a,
                _ => f.to_string(),
            }
        })
        .collect()
}

/// The manifest a generation leaves in its folder: `{"generator", "top",
/// "hash": "fnv1a64", "files": {name: 16 hex digits}}`. It is written last,
/// after the design's files are in place and the earlier generation's are
/// removed. Not a Verilog identifier, so never the name of a design file.
pub const MANIFEST: &str = "gpurtl.manifest.json";

/// The lock file a generation holds in its folder while it writes.
pub const LOCK: &str = "gpurtl.lock";

/// How long a generation waits for another one writing into the same folder
/// (a generation holds the lock only while it writes its files, well under
/// a second) before it gives up with an error naming the lock file.
pub const LOCK_WAIT: Duration = Duration::from_secs(20);

/// FNV-1a, 64 bits: the content hash of the manifest (stable across
/// platforms and versions; it tells gpurtl's own unchanged output from an
/// edited or hand-written file, not an attacker's).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// An exclusive lock on a folder: the file [`LOCK`] in it, held with the
/// operating system's advisory lock (`flock` on Unix) rather than by its
/// mere existence. Released (and the file removed) when dropped.
///
/// Stale locks: the operating system drops the lock of a process that dies,
/// however it dies, so a lock file left behind by a killed run is taken over
/// at once by the next one and blocks nothing. A lock that a live run holds
/// is waited for, up to the `wait` given to [`lock_dir`].
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    _file: std::fs::File,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Removed while still held: a waiter that opened this file finds,
        // once it holds it, that the path no longer names it, and retries.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Take the lock of `dir` (which must exist), waiting up to `wait` for a
/// run that holds it. A lock held past `wait` is an error (exit 2) naming
/// the lock file.
pub fn lock_dir(dir: &Path, wait: Duration) -> Result<DirLock> {
    let path = dir.join(LOCK);
    let start = Instant::now();
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error(&format!("cannot create the lock file `{}`", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => {
                if still_named(&file, &path) {
                    use std::io::Write;
                    // For whoever looks: the holder's process id.
                    let _ = file.set_len(0);
                    let _ = writeln!(&file, "{}", std::process::id());
                    return Ok(DirLock { path, _file: file });
                }
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                if start.elapsed() >= wait {
                    return Err(Error::Bad(format!(
                        "another gpurtl is writing into this folder: its lock file `{}` has been held for {} s; \
                         run one generation into a folder at a time (a lock file that no running gpurtl holds is \
                         taken over, never waited for)",
                        path.display(),
                        wait.as_secs()
                    )));
                }
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(io_error(&format!("cannot lock `{}`", path.display()), e));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `path` still names the open `file` (its holder removes the lock
/// file before it lets go, so a lock taken on a removed file is no lock).
fn still_named(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// An I/O error as a command error: a problem of the path the user gave (it
/// is missing, not a folder, not writable, in the way) is exit 2, any other
/// failure of the file system exit 1. `what` says what failed.
pub fn io_error(what: &str, e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let message = format!("{what}: {e}");
    match e.kind() {
        K::NotFound
        | K::PermissionDenied
        | K::AlreadyExists
        | K::NotADirectory
        | K::IsADirectory
        | K::ReadOnlyFilesystem
        | K::InvalidInput
        | K::InvalidFilename => Error::Bad(message),
        _ => Error::Failed(message),
    }
}

/// A failure to write the output file `path` of option `option`.
pub fn output_error(option: &str, path: &Path, e: std::io::Error) -> Error {
    io_error(&format!("option `{option}` = `{}`: cannot write it", path.display()), e)
}

/// Write `files` into `dir` (created if missing) as a set, holding the
/// folder's lock (waiting up to [`LOCK_WAIT`]): every file is written to a
/// temporary file first, and only when all are written are they renamed
/// into place, so a failure changes nothing. Then the files of the previous
/// generation into `dir` that this one does not write are removed when the
/// manifest proves them gpurtl's own (see the module's documentation), and
/// the new manifest is written. Returns warnings, one a line, about earlier
/// files left in place. Error messages do not name `dir`: the caller does.
pub fn write_all(dir: &Path, files: &[(String, String)]) -> Result<Vec<String>> {
    write_all_waiting(dir, files, LOCK_WAIT)
}

/// [`write_all`], waiting up to `wait` for the folder's lock.
pub fn write_all_waiting(dir: &Path, files: &[(String, String)], wait: Duration) -> Result<Vec<String>> {
    if let Some((name, _)) = files.iter().find(|(f, _)| f == MANIFEST || f == LOCK || !plain_name(f)) {
        return Err(Error::Failed(format!("the design has a file named `{name}`, which gpurtl does not write")));
    }
    let dir = &resolve_links(dir).map_err(|e| io_error("cannot follow its symbolic links", e))?;
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Bad("is a file; must be a folder (made when missing)".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error("cannot make the folder", e))?;
    let _lock = lock_dir(dir, wait)?;
    // What would stop a rename half-way (a directory where a file goes) is
    // found before anything is written.
    if let Some((name, _)) = files.iter().find(|(f, _)| dir.join(f).is_dir()) {
        return Err(Error::Bad(format!("`{name}` is a directory; gpurtl writes a file of that name there")));
    }
    let (previous, mut warnings) = read_manifest(dir);
    let mut staged = Vec::with_capacity(files.len() + 1);
    for (name, text) in files {
        let tmp = stage(&dir.join(name), text.as_bytes()).map_err(|e| io_error(&format!("cannot write `{name}`"), e))?;
        staged.push((tmp, dir.join(name)));
    }
    let hashes: Map<String, Value> =
        files.iter().map(|(f, t)| (f.clone(), Value::String(format!("{:016x}", fnv1a64(t.as_bytes()))))).collect();
    let top = files.iter().find_map(|(f, _)| f.strip_suffix(".json"));
    let manifest = json!({
        "about": "the files `gpurtl gen` wrote into this folder with the FNV-1a 64 hash of each; \
                  the next generation here removes a listed file that it does not write again only while the file still has this hash",
        "generator": format!("gpurtl {VERSION}"),
        "top": top,
        "hash": "fnv1a64",
        "files": hashes,
    });
    let manifest = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    let manifest = stage(&dir.join(MANIFEST), manifest.as_bytes()).map_err(|e| io_error(&format!("cannot write `{MANIFEST}`"), e))?;
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| io_error(&format!("cannot write `{}`", path.display()), e.error))?;
    }
    for (name, hash) in previous {
        if files.iter().any(|(f, _)| *f == name) {
            continue;
        }
        if let Some(w) = remove_if_ours(dir, &name, hash) {
            warnings.push(w);
        }
    }
    manifest.persist(dir.join(MANIFEST)).map_err(|e| io_error(&format!("cannot write `{MANIFEST}`"), e.error))?;
    Ok(warnings)
}

/// A file name with no folder in it.
fn plain_name(f: &str) -> bool {
    !f.is_empty() && f != "." && f != ".." && !f.contains(['/', '\\'])
}

/// The files the manifest in `dir` lists, each with its hash if it has a
/// well-formed one; and warnings about a manifest that cannot be read.
fn read_manifest(dir: &Path) -> (Vec<(String, Option<u64>)>, Vec<String>) {
    let path = dir.join(MANIFEST);
    let shown = path.display();
    let bytes = match gpurtl_sim::files::read_limited(&path, crate::json::MAX_INPUT_BYTES) {
        Ok(b) => b,
        Err(gpurtl_sim::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            let why = e.reason(crate::json::MAX_INPUT_BYTES);
            return (Vec::new(), vec![format!("the manifest `{shown}` {why}; no file of an earlier generation is removed")]);
        }
    };
    let files = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut m)) => match m.remove("files") {
            Some(Value::Object(files)) => files,
            _ => Map::new(),
        },
        _ => {
            return (Vec::new(), vec![format!("the manifest `{shown}` is not a gpurtl manifest (a JSON object); no file of an earlier generation is removed")]);
        }
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (name, hash) in files {
        if !plain_name(&name) || name == MANIFEST || name == LOCK {
            warnings.push(format!("the manifest `{shown}` lists `{name}`, which is not a file gpurtl writes in this folder; ignored"));
            continue;
        }
        let hash = hash.as_str().filter(|h| h.len() == 16).and_then(|h| u64::from_str_radix(h, 16).ok());
        out.push((name, hash));
    }
    (out, warnings)
}

/// Remove `dir/name` when it is a regular file whose content has `hash`
/// (gpurtl's own output, unchanged); otherwise leave it and say why.
fn remove_if_ours(dir: &Path, name: &str, hash: Option<u64>) -> Option<String> {
    let path = dir.join(name);
    let shown = path.display();
    let left = "left in place";
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(_) => return None, // already gone
    };
    if !meta.is_file() {
        return Some(format!("`{shown}`: an earlier generation wrote a file here, now it is not a regular file; {left}"));
    }
    let Some(hash) = hash else {
        return Some(format!("`{shown}`: listed by `{MANIFEST}` without a content hash, so not provably gpurtl's; {left}"));
    };
    match gpurtl_sim::files::read_limited(&path, crate::json::MAX_INPUT_BYTES) {
        Ok(bytes) if fnv1a64(&bytes) == hash => match std::fs::remove_file(&path) {
            Ok(()) => None,
            Err(e) => Some(format!("`{shown}`: a file of an earlier generation, cannot be removed: {e}; {left}")),
        },
        Ok(_) | Err(gpurtl_sim::files::ReadError::TooLarge { .. }) => {
            Some(format!("`{shown}`: changed since an earlier generation wrote it (its content hash is not the one in `{MANIFEST}`); {left}"))
        }
        Err(e) => Some(format!("`{shown}`: a file of an earlier generation, {}; {left}", e.reason(crate::json::MAX_INPUT_BYTES))),
    }
}

/// `bytes` in a temporary file beside `path`, readable like any output.
fn stage(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    // tempfile creates 0600 files; outputs are ordinary readable files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// `path` with its symbolic links followed: the file (or folder) it names,
/// which may not exist (the target of a dangling link). Only the last
/// component is followed; the folders above it are taken as they are.
pub fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Write an output file. A regular file (or a new one) is replaced
/// atomically: written beside it, then renamed, so an error never leaves it
/// half-written. Through a symbolic link (even a dangling one), the file it
/// points to is written, and the link stays. Anything else (a device such
/// as `/dev/stdout`, a pipe) is written through. The directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let target = resolve_links(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory")),
        Ok(m) if !m.is_file() => std::fs::OpenOptions::new().write(true).open(&target)?.write_all(bytes),
        _ => {
            stage(&target, bytes)?.persist(&target).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// A temporary path beside the file `path` names (its links followed), for
/// an output another program writes (Verilator's waveform): `persist` it
/// onto the returned target when the output is complete; dropped, it is
/// removed. `None` when the target is not a regular file (a device, a
/// pipe): that is written through.
pub fn stage_path(path: &Path) -> std::io::Result<Option<(tempfile::TempPath, PathBuf)>> {
    let target = resolve_links(path)?;
    if std::fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
        return Ok(None);
    }
    let tmp = stage(&target, b"")?;
    Ok(Some((tmp.into_temp_path(), target)))
}

/// Check an output file option before any work: it is not empty, its
/// directory exists and it is not a directory itself; through a symbolic
/// link, the same of the file the link names. The message names the option
/// and the path.
pub fn check_output(option: &str, path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(format!("option `{option}` = ``: is empty; must be a file path"));
    }
    let target = resolve_links(path).map_err(|e| format!("option `{option}` = `{shown}`: {e}"))?;
    let via = if target != path { format!(" (a symbolic link to `{}`)", target.display()) } else { String::new() };
    if target.is_dir() {
        return Err(format!("option `{option}` = `{shown}`{via}: is a directory; must be a file"));
    }
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(format!("option `{option}` = `{shown}`{via}: the directory `{}` does not exist", parent.display()));
    }
    Ok(())
}

/// Check an output folder option (`-o DIR`) before any work: not empty, and
/// not an existing file (through symbolic links). A missing folder is made
/// when written.
pub fn check_out_dir(option: &str, dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.as_os_str().is_empty() {
        return Err(format!("option `{option}` = ``: is empty; must be a folder path"));
    }
    let target = resolve_links(dir).map_err(|e| format!("option `{option}` = `{shown}`: {e}"))?;
    if target.exists() && !target.is_dir() {
        return Err(format!("option `{option}` = `{shown}`: is a file; must be a folder (made when missing)"));
    }
    Ok(())
}

/// What a path names, to compare files by: its canonical path when it
/// exists; for a file not made yet (or a dangling link's target), its
/// folder's canonical path and its name.
fn identity(p: &Path) -> Option<PathBuf> {
    let t = resolve_links(p).ok()?;
    if let Ok(c) = std::fs::canonicalize(&t) {
        return Some(c);
    }
    let parent = t.parent().filter(|x| !x.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some(std::fs::canonicalize(parent).ok()?.join(t.file_name()?))
}

/// The same file, whatever the spelling of the two paths, symbolic links
/// and hard links (for outputs that must not overwrite inputs or each
/// other).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) if x == y => true,
        (Some(_), Some(_)) => same_inode(a, b),
        _ => a == b,
    }
}

#[cfg(unix)]
fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(_: &Path, _: &Path) -> bool {
    false
}

/// Whether writing the output `path` replaces a file: it is (or through
/// its links names) a regular file or nothing yet. A device or a pipe is
/// written through, and replaces nothing.
pub fn replaces_a_file(path: &Path) -> bool {
    match resolve_links(path).and_then(std::fs::metadata) {
        Ok(m) => m.is_file(),
        Err(_) => true,
    }
}

/// Whether the file `file` is inside the folder `dir` (at any depth).
pub fn is_inside(file: &Path, dir: &Path) -> bool {
    match (identity(file), resolve_links(dir).and_then(std::fs::canonicalize)) {
        (Some(f), Ok(d)) => f.starts_with(d),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_is_the_published_function() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// A lock held past the wait is an error (exit 2) naming the lock file,
    /// and nothing is written.
    #[test]
    fn a_held_lock_is_an_error_after_the_wait() {
        let d = tempfile::tempdir().unwrap();
        let held = lock_dir(d.path(), Duration::ZERO).unwrap();
        let t = Instant::now();
        let e = write_all_waiting(d.path(), &[("a.v".into(), "x\n".into())], Duration::from_millis(200)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(200));
        assert_eq!(e.code(), 2);
        let lock = d.path().join(LOCK);
        assert_eq!(
            e.message(),
            format!(
                "another gpurtl is writing into this folder: its lock file `{}` has been held for 0 s; run one generation into a \
                 folder at a time (a lock file that no running gpurtl holds is taken over, never waited for)",
                lock.display()
            )
        );
        assert!(!d.path().join("a.v").exists());
        drop(held);
        assert!(!lock.exists(), "the lock file is removed with the lock");
        assert_eq!(write_all(d.path(), &[("a.v".into(), "x\n".into())]).unwrap(), Vec::<String>::new());
        assert!(d.path().join("a.v").exists() && !lock.exists());
    }
}
