//! Files of a generated design: one `.v` per module with the banner, the
//! filelist `<top>.f`, and `<top>.json` (resolved parameters and ports).
//! Everything is written to a temporary directory beside the target and
//! renamed into place, so an interrupted run leaves no half-written file.

use askama::Template;
use gpurtl_hw::rtl::SigKind;
use gpurtl_hw::Design;
use serde_json::{json, Value};
use std::path::Path;

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

/// Write `files` into `dir` (created if missing) as a set: every file is
/// written to a temporary file first, and only when all are written are they
/// renamed into place, so a failure changes nothing. Then the files that the
/// previous generation into `dir` wrote (its `<top>.json` lists them) and
/// this one does not are removed: no stale module of an earlier
/// configuration stays beside the new filelist.
pub fn write_all(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // What would stop a rename half-way (a directory where a file goes) is
    // found before anything is written.
    if let Some((name, _)) = files.iter().find(|(f, _)| dir.join(f).is_dir()) {
        return Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, format!("`{name}` is a directory")));
    }
    let previous = previous_outputs(dir, files);
    let mut staged = Vec::with_capacity(files.len());
    for (name, text) in files {
        staged.push((stage(&dir.join(name), text.as_bytes())?, dir.join(name)));
    }
    for (tmp, path) in staged {
        tmp.persist(&path).map_err(|e| e.error)?;
    }
    for old in previous {
        if !files.iter().any(|(f, _)| *f == old) {
            let _ = std::fs::remove_file(dir.join(&old));
        }
    }
    Ok(())
}

/// What an earlier generation of the same top wrote into `dir`: the Verilog
/// files its `<top>.json` lists, their hand-mapped bodies, and its filelist,
/// core and JSON.
fn previous_outputs(dir: &Path, files: &[(String, String)]) -> Vec<String> {
    let Some((json_name, _)) = files.iter().find(|(f, _)| f.ends_with(".json")) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(dir.join(json_name)) else { return Vec::new() };
    let Ok(meta) = serde_json::from_str::<Value>(&text) else { return Vec::new() };
    let mut out = Vec::new();
    for f in meta["files"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        // Only plain file names: never a path out of `dir`.
        if f.contains('/') || f.contains('\\') || !f.ends_with(".v") {
            continue;
        }
        out.push(f.to_string());
        for t in ALTERNATIVE_TARGETS {
            out.push(format!("{}.{t}.v", f.trim_end_matches(".v")));
        }
    }
    out
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

/// Write an output file. A regular file (or a new one) is replaced
/// atomically: written beside it, then renamed, so an error never leaves it
/// half-written; through a symbolic link, the file it points to is
/// replaced, not the link. Anything else (a device such as `/dev/stdout`, a
/// pipe) is written through. The directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory")),
        Ok(m) if !m.is_file() => std::fs::OpenOptions::new().write(true).open(path)?.write_all(bytes),
        Ok(_) => {
            let target = std::fs::canonicalize(path)?;
            stage(&target, bytes)?.persist(&target).map_err(|e| e.error)?;
            Ok(())
        }
        Err(_) => {
            stage(path, bytes)?.persist(path).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// Check an output file option before any work: its directory exists and
/// it is not a directory itself. The message names the option and the path.
pub fn check_output(option: &str, path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("option `{option}` = `{shown}`: is a directory; must be a file"));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(format!("option `{option}` = `{shown}`: the directory `{}` does not exist", parent.display()));
    }
    Ok(())
}

/// The same file, whatever the spelling of the two paths (for outputs that
/// must not overwrite each other).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let norm = |p: &Path| {
        let parent = p.parent().filter(|x| !x.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::canonicalize(parent).ok().map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    match (norm(a), norm(b)) {
        (Some(x), Some(y)) => x == y || std::fs::canonicalize(&x).ok() == std::fs::canonicalize(&y).ok() && x.exists(),
        _ => a == b,
    }
}
