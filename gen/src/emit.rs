//! Files of a generated design: one `.v` per module with the banner, the
//! filelist `<top>.f`, and `<top>.json` (resolved parameters and ports).
//! Everything is written to a temporary directory beside the target and
//! renamed into place, so an interrupted run leaves no half-written file.

use crate::verilog;
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

/// What generated a design: enough to regenerate it.
pub struct Provenance {
    pub block: String,
    /// Resolved parameters as a JSON object (every field, not only the given ones).
    pub params: Value,
}

impl Provenance {
    /// `width=128 latency=2`, in the params struct's field order.
    pub fn params_text(&self) -> String {
        match &self.params {
            Value::Object(m) => m.iter().map(|(k, v)| format!("{k}={}", plain(v))).collect::<Vec<_>>().join(" "),
            _ => String::new(),
        }
    }
    pub fn command(&self) -> String {
        format!("gpurtl gen {} {}-o <dir>", self.block, param_args(&self.params))
    }
}

/// `--param k=v ` for every parameter, in field order (ends with a space).
pub fn param_args(params: &Value) -> String {
    match params {
        Value::Object(m) => m.iter().map(|(k, v)| format!("--param {k}={} ", plain(v))).collect(),
        _ => String::new(),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// (file name, contents) of every file of the design, in a stable order.
pub fn files(design: &Design, prov: &Provenance) -> Vec<(String, String)> {
    let command = prov.command();
    let params = prov.params_text();
    let mut out = Vec::new();
    for m in &design.modules {
        let body = verilog::module(m);
        let text = ModuleFile { version: VERSION, block: &prov.block, params: &params, command: &command, body: &body }
            .render()
            .expect("templates render from plain strings");
        // askama drops the template's final newline; POSIX text files end with one.
        out.push((format!("{}.v", m.name), text.trim_end().to_string() + "\n"));
        for (target, body) in &m.alternatives {
            let text = ModuleFile { version: VERSION, block: &prov.block, params: &params, command: &command, body }
                .render()
                .expect("templates render from plain strings");
            out.push((format!("{}.{target}.v", m.name), text.trim_end().to_string() + "\n"));
        }
    }
    let names: Vec<String> = design.modules.iter().map(|m| format!("{}.v", m.name)).collect();
    let f = FileList { version: VERSION, command: &command, top: &design.top, files: names.clone() }
        .render()
        .expect("templates render from plain strings");
    out.push((format!("{}.f", design.top), f.trim_end().to_string() + "\n"));
    let top_doc = design.top_module().doc.first().cloned().unwrap_or_default();
    let core = CoreFile {
        version: VERSION,
        command: &command,
        params: &params,
        top: &design.top,
        description: top_doc.replace('"', "'"),
        files: names.clone(),
        ecp5_files: if out.iter().any(|(f, _)| f.ends_with(".ecp5.v")) { sources_for(&out, Some("ecp5")) } else { Vec::new() },
    }
    .render()
    .expect("templates render from plain strings");
    out.push((format!("{}.core", design.top), core.trim_end().to_string() + "\n"));
    let top = design.top_module();
    let ports: Vec<Value> = top
        .port_signals()
        .map(|p| {
            json!({"name": p.name, "dir": if p.kind == SigKind::Input {"input"} else {"output"}, "width": p.width, "doc": p.doc})
        })
        .collect();
    let meta = json!({
        "generator": format!("gpurtl {VERSION}"),
        "block": prov.block,
        "top": design.top,
        "params": prov.params,
        "command": command,
        "files": names,
        "ports": ports,
    });
    out.push((format!("{}.json", design.top), serde_json::to_string_pretty(&meta).unwrap_or_default() + "\n"));
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

/// Write `files` into `dir` atomically per file (temp file + rename).
pub fn write_all(dir: &Path, files: &[(String, String)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in files {
        write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    // tempfile creates 0600 files; outputs are ordinary readable files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
