//! The on-disk build cache, keyed by content hash, and the slots of the
//! per-process memos (of loaded libraries, of runtime archives), so many
//! test threads compiling one design build and load it once.

use super::{io_err, CosimError};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// Bumped whenever the shim ABI or the build recipe changes, so stale cache
/// entries are never reused.
const HARNESS_VERSION: u32 = 3;

pub(crate) type Slot<T> = Arc<Mutex<Option<T>>>;
pub(crate) type SlotMap<T> = OnceLock<Mutex<HashMap<PathBuf, Slot<T>>>>;

pub(crate) fn slot<T>(map: &'static SlotMap<T>, key: &Path) -> Slot<T> {
    let map = map.get_or_init(Default::default);
    lock(map).entry(key.to_path_buf()).or_default().clone()
}

/// Locks a mutex, ignoring poisoning (a panicking builder leaves `None`,
/// which simply means "not built yet").
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Temporary build directories (`.build-*`) left by builds that were killed
/// (a finished or failed build never leaves one): removed once they are an
/// hour old, which no live build is.
fn remove_abandoned_builds(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old && e.file_name().to_string_lossy().starts_with(".build-") {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Cache root: `$GPURTL_COSIM_CACHE`, else `$CARGO_TARGET_DIR/gpurtl-cosim`,
/// else `<workspace>/target/gpurtl-cosim`.
pub(crate) fn cache_root() -> Result<PathBuf, CosimError> {
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
/// cache entry is either complete or absent. Processes building the same
/// entry at once take turns on a lock file (`.locks/<name>`): one builds,
/// the others wait and then load its result. A failed build is kept as
/// `failed-<name>` so its log can be inspected.
///
/// The progress lines go straight to the process's stderr, not through
/// `eprintln!`, so that they also show under `cargo test`'s output capture:
/// a build can take minutes.
pub(crate) fn build_cached(
    root: &Path,
    final_dir: &Path,
    marker: &str,
    what: &str,
    build: impl FnOnce(&Path, &mut File) -> Result<(), CosimError>,
) -> Result<(), CosimError> {
    let report = |line: &str| {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    };
    build_cached_reporting(root, final_dir, marker, what, &report, build)
}

/// Holds the lock of one cache entry, across processes (an advisory lock
/// on `<root>/.locks/<name>`, released when dropped or when the process
/// dies). Taking it says so when another process holds it.
fn lock_entry(root: &Path, final_dir: &Path, what: &str, report: &dyn Fn(&str)) -> Result<File, CosimError> {
    let dir = root.join(".locks");
    fs::create_dir_all(&dir).map_err(|e| io_err(format!("cannot create {}", dir.display()), e))?;
    let path = dir.join(final_dir.file_name().unwrap_or_default());
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_err(format!("cannot open lock file {}", path.display()), e))?;
    let locked = |r: std::io::Result<()>| r.map_err(|e| io_err(format!("cannot lock {}", path.display()), e));
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            report(&format!("gpurtl: waiting for another process building {what} with Verilator"));
            locked(file.lock())?;
        }
        Err(fs::TryLockError::Error(e)) => locked(Err(e))?,
    }
    Ok(file)
}

/// [`build_cached`], with its progress lines going to `report`.
fn build_cached_reporting(
    root: &Path,
    final_dir: &Path,
    marker: &str,
    what: &str,
    report: &dyn Fn(&str),
    build: impl FnOnce(&Path, &mut File) -> Result<(), CosimError>,
) -> Result<(), CosimError> {
    let complete = |d: &Path| d.join(marker).is_file();
    if complete(final_dir) {
        return Ok(());
    }
    // Another process may be building it: wait for it, then look again.
    let _lock = lock_entry(root, final_dir, what, report)?;
    if complete(final_dir) {
        return Ok(());
    }
    if final_dir.exists() {
        // Left behind incomplete (e.g. files deleted by hand): start over.
        let _ = fs::remove_dir_all(final_dir);
    }
    remove_abandoned_builds(root);
    // A build takes from seconds to minutes: say so, once, on stderr.
    report(&format!("gpurtl: building {what} with Verilator (first use; cached in {})", root.display()));
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
    report(&format!("gpurtl: built {what} in {:.1} s", started.elapsed().as_secs_f64()));
    drop(log);
    match fs::rename(tmp.path(), final_dir) {
        Ok(()) => Ok(()),
        // Published meanwhile by a process that does not take the lock (an
        // older gpurtl); use theirs (the TempDir guard deletes ours).
        Err(_) if complete(final_dir) => Ok(()),
        Err(e) => Err(io_err(
            format!("cannot publish build directory {}", final_dir.display()),
            e,
        )),
    }
}

/// SHA-256 over length-prefixed fields, hex encoded (first 128 bits).
pub(crate) struct Hasher(Sha256);

impl Hasher {
    pub(crate) fn new(kind: &str) -> Self {
        let mut h = Hasher(Sha256::new());
        h.field(&format!("gpurtl-cosim {kind} v{HARNESS_VERSION}"));
        h
    }
    pub(crate) fn field(&mut self, s: &str) {
        self.0.update((s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }
    pub(crate) fn finish(self) -> String {
        self.0.finalize()[..16]
            .iter()
            .fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_build_says_so_and_abandoned_builds_are_removed() {
        let root = tempfile::tempdir().unwrap();
        // A build killed an hour and a half ago, and one in progress now.
        let old = root.path().join(".build-killed");
        let live = root.path().join(".build-live");
        fs::create_dir(&old).unwrap();
        fs::create_dir(&live).unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(5400);
        File::open(&old).unwrap().set_modified(long_ago).unwrap();
        let lines = RefCell::new(Vec::new());
        let report = |l: &str| lines.borrow_mut().push(l.to_string());
        let done = root.path().join("entry");
        build_cached_reporting(root.path(), &done, "lib.so", "`top`", &report, |tmp, _| {
            fs::write(tmp.join("lib.so"), b"").map_err(|e| io_err("write".into(), e))
        })
        .unwrap();
        assert!(done.join("lib.so").is_file());
        assert!(!old.exists() && live.exists());
        let lines = lines.into_inner();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("gpurtl: building `top` with Verilator (first use; cached in "), "{lines:?}");
        assert!(lines[1].starts_with("gpurtl: built `top` in "), "{lines:?}");
        // Cached: no build, nothing said.
        let again = RefCell::new(0);
        build_cached_reporting(root.path(), &done, "lib.so", "`top`", &|_| *again.borrow_mut() += 1, |_, _| unreachable!()).unwrap();
        assert_eq!(again.into_inner(), 0);
    }
}
