//! Work for the runners designers already have (docs/jobs.md): a sweep's
//! points and a regression's cosimulations as jobs of one canonical
//! manifest, its renderings for GNU parallel, Slurm, make and GitHub
//! Actions, the cosimulation a regression job runs, and `collect`, which
//! merges what the jobs wrote.
//!
//! A manifest is JSON lines, one job a line, its fields in this order:
//! `{"id", "argv", "env", "seed", "timeout_s", "cpus", "mem_mb", "outputs"}`.
//! Every job is hermetic: its argv names the block, every parameter and its
//! seeds; it writes `<dir>/<id>/result.json` (with its own argv, so that a
//! result of another manifest is never taken for it), and its other files
//! beside it. The emitting command writes the manifest to `<dir>/jobs.jsonl`
//! (what `gpurtl job` and `gpurtl collect` read) and its rendering to the
//! `--emit` file.

use crate::block::Block;
use crate::emit;
use crate::error::{Error, Result};
use crate::rtl_engine::compile_design;
use crate::synth::Target;
use gpurtl_sim::rng::Rng;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The manifest's name inside the jobs' folder.
pub const MANIFEST: &str = "jobs.jsonl";
/// The most jobs one manifest holds (so that it stays under the 16 MiB
/// every input file is limited to; a GitHub Actions rendering is then at
/// most 40 matrices).
pub const MAX_JOBS: usize = 10_000;
/// Jobs of one GitHub Actions matrix (GitHub's limit).
pub const GHA_CHUNK: usize = 256;
/// Array tasks of one `sbatch` (Slurm's default `MaxArraySize` is 1001).
pub const SLURM_CHUNK: usize = 1000;
/// The largest design a drawn regression point may be, in Verilog lines
/// (what the parameter-space test of `make test` draws).
pub const MAX_LINES: usize = 12_000;

/// One job of a manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Letters, digits, `.`, `_`, `-`: the job's folder under the manifest's folder.
    pub id: String,
    /// The command, `gpurtl` first.
    pub argv: Vec<String>,
    /// Environment variables the job sets, by name.
    pub env: Vec<(String, String)>,
    /// The first cosimulation seed of a regression job (its range is in
    /// argv); none for a sweep job.
    pub seed: Option<u64>,
    pub timeout_s: u64,
    pub cpus: u64,
    pub mem_mb: u64,
    /// What the job writes that matters: its `result.json`.
    pub outputs: Vec<String>,
}

const TIMEOUT_MAX: u64 = 30 * 24 * 3600;
const CPUS_MAX: u64 = 1024;
const MEM_MAX: u64 = 1 << 24;

impl Job {
    /// The job's manifest line (without the line break), fields in the
    /// manifest's order.
    pub fn line(&self) -> String {
        let s = |v: &str| Value::String(v.to_string()).to_string();
        let env: Map<String, Value> = self.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        format!(
            "{{\"id\":{},\"argv\":{},\"env\":{},\"seed\":{},\"timeout_s\":{},\"cpus\":{},\"mem_mb\":{},\"outputs\":{}}}",
            s(&self.id),
            json!(self.argv),
            Value::Object(env),
            self.seed.map_or("null".to_string(), |x| x.to_string()),
            self.timeout_s,
            self.cpus,
            self.mem_mb,
            json!(self.outputs)
        )
    }

    /// A manifest line read back; every problem, each naming its field.
    pub fn from_value(v: &Value) -> Result<Job, Vec<String>> {
        let Some(m) = v.as_object() else {
            return Err(vec![format!("`{}`: must be a JSON object with the fields {}", gpurtl_params::short(v), FIELDS.join(", "))]);
        };
        let mut errs = Vec::new();
        for k in m.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
            errs.push(format!("field `{k}`: unknown; the fields are {}", FIELDS.join(", ")));
        }
        for k in FIELDS.iter().filter(|k| !m.contains_key(**k)) {
            errs.push(format!("field `{k}`: missing"));
        }
        let bad = |f: &str, allowed: &str| format!("field `{f}` = {}: must be {allowed}", gpurtl_params::short(&m[f]));
        let id = match m.get("id").map(|v| (v, v.as_str())) {
            Some((_, Some(id))) if id_ok(id) => id.to_string(),
            Some(_) => {
                errs.push(bad("id", ID_RULE));
                String::new()
            }
            None => String::new(),
        };
        let strings = |f: &str, errs: &mut Vec<String>, non_empty: bool| -> Vec<String> {
            let Some(v) = m.get(f) else { return Vec::new() };
            match v.as_array().map(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()) {
                Some(Some(list)) if !(non_empty && list.is_empty()) => list,
                _ => {
                    errs.push(bad(f, if non_empty { "a non-empty list of strings" } else { "a list of strings" }));
                    Vec::new()
                }
            }
        };
        let argv = strings("argv", &mut errs, true);
        let outputs = strings("outputs", &mut errs, false);
        let mut env = Vec::new();
        if let Some(e) = m.get("env") {
            match e.as_object() {
                Some(vars) => {
                    for (k, v) in vars {
                        match v.as_str() {
                            Some(s) if env_name_ok(k) => env.push((k.clone(), s.to_string())),
                            _ => errs.push(format!(
                                "field `env`: `{k}` = {}: must be a variable name (letters, digits, `_`, not a digit first) with a string value",
                                gpurtl_params::short(v)
                            )),
                        }
                    }
                }
                None => errs.push(bad("env", "an object of variable names to strings")),
            }
        }
        let seed = match m.get("seed") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(s) => Some(s),
                None => {
                    errs.push(bad("seed", &format!("null or an integer from 0 to {}", u64::MAX)));
                    None
                }
            },
        };
        let mut int = |f: &str, max: u64| -> u64 {
            match m.get(f).map(|v| v.as_u64()) {
                Some(Some(x)) if (1..=max).contains(&x) => x,
                Some(_) => {
                    errs.push(bad(f, &format!("an integer from 1 to {max}")));
                    0
                }
                None => 0,
            }
        };
        let (timeout_s, cpus, mem_mb) = (int("timeout_s", TIMEOUT_MAX), int("cpus", CPUS_MAX), int("mem_mb", MEM_MAX));
        if errs.is_empty() {
            Ok(Job { id, argv, env, seed, timeout_s, cpus, mem_mb, outputs })
        } else {
            Err(errs)
        }
    }
}

const FIELDS: &[&str] = &["id", "argv", "env", "seed", "timeout_s", "cpus", "mem_mb", "outputs"];
const ID_RULE: &str = "1 to 100 letters, digits, `.`, `_` or `-`, not `.` or `-` first";

fn id_ok(id: &str) -> bool {
    (1..=100).contains(&id.len())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !id.starts_with(['.', '-'])
}

fn env_name_ok(k: &str) -> bool {
    !k.is_empty() && !k.starts_with(|c: char| c.is_ascii_digit()) && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The manifest's text: a line per job.
pub fn manifest_text(jobs: &[Job]) -> String {
    jobs.iter().map(|j| j.line() + "\n").collect()
}

/// Read a manifest (option or argument `option` named it). Every bad line
/// is reported (the first five, and how many more), each with its number;
/// ids must be distinct.
pub fn read_manifest(path: &Path, option: &str) -> Result<Vec<Job>> {
    let text = crate::json::read_text(path, option)?;
    let shown = path.display();
    let mut jobs: Vec<Job> = Vec::new();
    let mut line_of: Vec<usize> = Vec::new();
    let mut errs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("manifest `{shown}`: line {}", i + 1);
        match crate::json::parse(line) {
            Err(e) => errs.push(format!("{at}: not valid JSON: {e}")),
            Ok(v) => match Job::from_value(&v) {
                Err(es) => errs.extend(es.into_iter().map(|e| format!("{at}: {e}"))),
                Ok(j) => {
                    if let Some(k) = jobs.iter().position(|x| x.id == j.id) {
                        errs.push(format!("{at}: field `id` = \"{}\": is the id of line {}'s job too; ids must be distinct", j.id, line_of[k]));
                    }
                    jobs.push(j);
                    line_of.push(i + 1);
                }
            },
        }
    }
    if !errs.is_empty() {
        let more = errs.len().saturating_sub(5);
        errs.truncate(5);
        if more > 0 {
            errs.push(format!("manifest `{shown}`: {more} more problems"));
        }
        return Err(Error::Bad(errs.join("\n")));
    }
    if jobs.is_empty() {
        return Err(Error::Bad(format!("manifest `{shown}`: holds no jobs; must hold a JSON line per job")));
    }
    if jobs.len() > MAX_JOBS {
        return Err(Error::Bad(format!("manifest `{shown}`: holds {} jobs; at most {MAX_JOBS}", jobs.len())));
    }
    Ok(jobs)
}

/// The renderings of a manifest (`--emit-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Parallel,
    Slurm,
    Make,
    Gha,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format> {
        Ok(match s {
            "jsonl" => Format::Jsonl,
            "parallel" => Format::Parallel,
            "slurm" => Format::Slurm,
            "make" => Format::Make,
            "gha" => Format::Gha,
            _ => return Err(Error::Bad(format!("option `--emit-format` = `{s}`: must be jsonl, parallel, slurm, make or gha"))),
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Parallel => "parallel",
            Format::Slurm => "slurm",
            Format::Make => "make",
            Format::Gha => "gha",
        }
    }
}

/// A word as the shell reads it: bare when it is made of characters the
/// shell leaves alone, else in single quotes.
pub fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./=:,@%+-".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The job as one shell command line: `env K=V ...` when it sets
/// variables, `timeout <timeout_s>` (coreutils) and its argv, each word
/// quoted. A word with a line break cannot be one line of a job file.
pub fn command_line(job: &Job, format: Format) -> Result<String> {
    let mut words: Vec<String> = Vec::new();
    if !job.env.is_empty() {
        words.push("env".into());
        words.extend(job.env.iter().map(|(k, v)| shell_quote(&format!("{k}={v}"))));
    }
    words.push("timeout".into());
    words.push(job.timeout_s.to_string());
    words.extend(job.argv.iter().map(|a| shell_quote(a)));
    let line = words.join(" ");
    if line.contains(['\n', '\r']) {
        return Err(Error::Bad(format!(
            "job `{}`: its command holds a line break, which the `{}` rendering (one command a line) cannot carry",
            job.id,
            format.name()
        )));
    }
    Ok(line)
}

/// What a rendering needs besides the jobs: the manifest's path and the
/// jobs' folder as the jobs name them (relative to the folder `gpurtl` ran
/// in, when given so), and the emitting command.
pub struct Place<'a> {
    pub manifest: &'a Path,
    pub dir: &'a Path,
    pub command: &'a str,
}

/// A path that a Makefile target or an `#SBATCH` line holds unquoted:
/// letters, digits and `._-/+@,` only.
fn plain_path(option: &str, p: &Path, format: Format, why: &str) -> Result<String> {
    let s = p.to_string_lossy().into_owned();
    match s.chars().find(|c| !(c.is_ascii_alphanumeric() || "._-/+@,".contains(*c))) {
        None => Ok(s),
        Some(c) => Err(Error::Bad(format!(
            "option `{option}` = `{s}`: holds `{}`; the `{}` rendering needs a path of letters, digits and `._-/+@,` only ({why})",
            c.escape_default(),
            format.name()
        ))),
    }
}

/// The rendering of `jobs` in `format`.
pub fn render(format: Format, jobs: &[Job], place: &Place) -> Result<String> {
    match format {
        Format::Jsonl => Ok(manifest_text(jobs)),
        Format::Parallel => {
            let lines = jobs.iter().map(|j| command_line(j, format)).collect::<Result<Vec<_>>>()?;
            Ok(lines.iter().map(|l| format!("{l}\n")).collect())
        }
        Format::Make => render_make(jobs, place),
        Format::Slurm => render_slurm(jobs, place),
        Format::Gha => render_gha(jobs, place),
    }
}

fn render_make(jobs: &[Job], place: &Place) -> Result<String> {
    const WHY: &str = "a Makefile target cannot hold it";
    let dir = plain_path("--out", place.dir, Format::Make, WHY)?;
    let manifest = plain_path("--out", place.manifest, Format::Make, WHY)?;
    let mut s = format!(
        "# Generated by gpurtl from `{}`: {} jobs of {manifest}.\n\
         # Run from the folder gpurtl ran in: make -f <this file> -j N -k; then gpurtl collect {dir}\n\
         # A job is done when its result.json exists (a failed job's too); a new manifest reruns every job.\n\n",
        place.command.replace('\n', " "),
        jobs.len()
    );
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    s.push_str(&format!(".PHONY: all {}\nall: {}\n", ids.join(" "), ids.join(" ")));
    for j in jobs {
        let line = command_line(j, Format::Make)?.replace('$', "$$");
        let result = format!("{dir}/{}/result.json", j.id);
        s.push_str(&format!("\n{id}: {result}\n{result}: {manifest}\n\t{line}\n", id = j.id));
    }
    Ok(s)
}

/// Seconds as Slurm's `--time`: `HH:MM:SS`, or `D-HH:MM:SS` from a day on.
fn slurm_time(s: u64) -> String {
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

/// The largest of each job's resources: what every task of one array asks for.
fn largest(jobs: &[Job]) -> (u64, u64, u64) {
    jobs.iter().fold((1, 1, 1), |(c, m, t), j| (c.max(j.cpus), m.max(j.mem_mb), t.max(j.timeout_s)))
}

fn render_slurm(jobs: &[Job], place: &Place) -> Result<String> {
    let dir = plain_path("--out", place.dir, Format::Slurm, "an `#SBATCH --output` line holds it unquoted, and Slurm reads `%` as a pattern")?;
    let (cpus, mem, timeout) = largest(jobs);
    let name: String = place.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name: String = format!("gpurtl-{name}").chars().filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c)).collect();
    let first = jobs.len().min(SLURM_CHUNK);
    Ok(format!(
        "#!/bin/bash\n\
         # Generated by gpurtl from `{command}`: {n} jobs of {manifest};\n\
         # array task K runs job GPURTL_JOB_OFFSET + K (from 0) with `gpurtl job`.\n\
         # Submit from the folder gpurtl ran in (the jobs' paths are relative to it);\n\
         # then gpurtl collect {dir}\n\
         #SBATCH --job-name={name}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --cpus-per-task={cpus}\n\
         #SBATCH --mem={mem}M\n\
         #SBATCH --time={time}\n\
         #SBATCH --output={dir}/slurm-%A_%a.out\n\
         set -eu\n\
         index=$(( ${{GPURTL_JOB_OFFSET:-0}} + SLURM_ARRAY_TASK_ID ))\n\
         exec gpurtl job {manifest_q} --index \"$index\"\n",
        command = place.command.replace('\n', " "),
        n = jobs.len(),
        manifest = place.manifest.display(),
        manifest_q = shell_quote(&place.manifest.to_string_lossy()),
        last = first - 1,
        time = slurm_time(timeout),
    ))
}

/// The `sbatch` commands that submit every job: one array of at most
/// [`SLURM_CHUNK`] tasks each, the later ones with their offset.
pub fn slurm_submits(n: usize, script: &Path) -> Vec<String> {
    let s = shell_quote(&script.to_string_lossy());
    (0..n.div_ceil(SLURM_CHUNK))
        .map(|c| {
            let len = (n - c * SLURM_CHUNK).min(SLURM_CHUNK);
            if c == 0 {
                format!("sbatch {s}")
            } else {
                format!("sbatch --array=0-{} --export=ALL,GPURTL_JOB_OFFSET={} {s}", len - 1, c * SLURM_CHUNK)
            }
        })
        .collect()
}

fn render_gha(jobs: &[Job], place: &Place) -> Result<String> {
    let dir = place.dir.to_string_lossy().into_owned();
    let manifest = place.manifest.to_string_lossy().into_owned();
    let (_, _, timeout) = largest(jobs);
    // The job's own limit, the tools' installation and the build on top;
    // GitHub's hosted runners stop a job at 6 hours.
    let minutes = (timeout.div_ceil(60) + 30).min(360);
    let sweep = jobs.iter().any(|j| j.argv.get(1).is_some_and(|c| c == "sweep"));
    let setup = if sweep { "make fpga-deps build" } else { "make deps build" };
    let yaml_str = |s: &str| Value::String(s.to_string()).to_string();
    let mut entries = Vec::new();
    for j in jobs {
        let cmd = command_line(j, Format::Gha)?;
        if cmd.contains("${{") || manifest.contains("${{") || dir.contains("${{") {
            return Err(Error::Bad(format!("job `{}`: holds `${{{{`, which GitHub Actions reads as an expression", j.id)));
        }
        entries.push(format!("          - {{\"id\": {}, \"cmd\": {}}}\n", yaml_str(&j.id), yaml_str(&cmd)));
    }
    let chunks: Vec<&[String]> = entries.chunks(GHA_CHUNK).collect();
    let mut s = format!(
        "# Generated by gpurtl from `{}`: {} jobs of {manifest} in {} of at most {GHA_CHUNK} jobs\n\
         # (GitHub's limit), then `gpurtl collect {dir}`. Each job uploads its folder {dir}/<id> as the\n\
         # artifact <id>; `collect` gathers them. Put this file in .github/workflows/ and run it by hand.\n\
         name: gpurtl jobs\non:\n  workflow_dispatch:\njobs:\n",
        place.command.replace('\n', " "),
        jobs.len(),
        if chunks.len() == 1 { "1 matrix".to_string() } else { format!("{} matrices", chunks.len()) }
    );
    for (c, chunk) in chunks.iter().enumerate() {
        s.push_str(&format!(
            "  chunk-{c}:\n    runs-on: ubuntu-latest\n    timeout-minutes: {minutes}\n    strategy:\n      fail-fast: false\n      matrix:\n        include:\n"
        ));
        for e in chunk.iter() {
            s.push_str(e);
        }
        s.push_str(&format!(
            "    steps:\n      - uses: actions/checkout@v4\n      - run: {setup}\n      - run: echo \"$GITHUB_WORKSPACE/target/release\" >> \"$GITHUB_PATH\"\n      - run: ${{{{ matrix.cmd }}}}\n      - uses: actions/upload-artifact@v4\n        if: always()\n        with:\n          name: ${{{{ matrix.id }}}}\n          path: {}\n          if-no-files-found: ignore\n",
            yaml_str(&format!("{dir}/${{{{ matrix.id }}}}"))
        ));
    }
    let needs: Vec<String> = (0..chunks.len()).map(|c| format!("chunk-{c}")).collect();
    s.push_str(&format!(
        "  collect:\n    needs: [{}]\n    if: always()\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make build\n      - uses: actions/download-artifact@v4\n        with:\n          path: {}\n      - name: the manifest\n        run: |\n          mkdir -p {}\n          cat > {} <<'GPURTL_MANIFEST'\n",
        needs.join(", "),
        yaml_str(&dir),
        shell_quote(&dir),
        shell_quote(&manifest)
    ));
    for j in jobs {
        s.push_str(&format!("          {}\n", j.line()));
    }
    s.push_str(&format!(
        "          GPURTL_MANIFEST\n      - run: target/release/gpurtl collect {}\n      - uses: actions/upload-artifact@v4\n        if: always()\n        with:\n          name: collected\n          path: {}\n",
        shell_quote(&dir),
        yaml_str(&format!("{dir}/collected.*"))
    ));
    Ok(s)
}

/// What to print after emitting: how to run the rendering, then collect.
pub fn hint(format: Format, jobs: &[Job], file: &Path, dir: &Path) -> Vec<String> {
    let f = shell_quote(&file.to_string_lossy());
    let d = shell_quote(&dir.to_string_lossy());
    let (cpus, _, _) = largest(jobs);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as u64;
    let per_machine = (cores / cpus).max(1);
    let at_a_time = if matches!(format, Format::Parallel | Format::Make) { format!(", {per_machine} at a time on this machine") } else { String::new() };
    let mut lines = vec![format!("run from this folder (the jobs' paths are relative to it){at_a_time}:")];
    match format {
        Format::Jsonl => lines.push(format!(
            "  each line's argv, or: gpurtl job {} --index N (N from 0 to {})",
            shell_quote(&dir.join(MANIFEST).to_string_lossy()),
            jobs.len() - 1
        )),
        Format::Parallel => {
            lines.push(format!("  parallel --joblog {} --resume -j {per_machine} < {f}", shell_quote(&dir.join("joblog").to_string_lossy())))
        }
        Format::Make => lines.push(format!("  make -f {f} -j {per_machine} -k")),
        Format::Slurm => lines.extend(slurm_submits(jobs.len(), file).into_iter().map(|c| format!("  {c}"))),
        Format::Gha => lines.push(format!("  put {f} in .github/workflows/ and run the workflow \"gpurtl jobs\"")),
    }
    lines.push(format!("then: gpurtl collect {d}"));
    lines
}

/// Write `<dir>/jobs.jsonl` (the folder made when missing), unless it
/// already holds exactly these jobs: its time stays that of the first
/// emission, so the `make` rendering reruns only what a new manifest
/// changes.
pub fn write_manifest(dir: &Path, jobs: &[Job]) -> Result<PathBuf> {
    if jobs.len() > MAX_JOBS {
        return Err(Error::Bad(format!(
            "the manifest would hold {} jobs; at most {MAX_JOBS}: fewer points or seeds, or more seeds a job (`--seeds-per-job`)",
            jobs.len()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    let path = dir.join(MANIFEST);
    let text = manifest_text(jobs);
    if std::fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
        emit::write_atomic(&path, text.as_bytes()).map_err(|e| Error::io("write", &path, e))?;
    }
    Ok(path)
}

/// Emit `jobs`: the manifest into their folder `dir`, the rendering into
/// `file` (which was checked before any work), and how to run it on `out`.
pub fn emit(jobs: &[Job], format: Format, file: &Path, dir: &Path, command: &str, out: &mut dyn Write) -> Result<()> {
    let manifest = dir.join(MANIFEST);
    let place = Place { manifest: &manifest, dir, command };
    // Rendered before anything is written: a job it cannot carry is an
    // error that leaves no file behind.
    let text = render(format, jobs, &place)?;
    write_manifest(dir, jobs)?;
    if !(format == Format::Jsonl && emit::same_file(file, &manifest)) {
        emit::write_atomic(file, text.as_bytes()).map_err(|e| emit::output_error("--emit", file, e))?;
    }
    // The Slurm script can be run as it is, too.
    #[cfg(unix)]
    if format == Format::Slurm && emit::replaces_a_file(file) {
        use std::os::unix::fs::PermissionsExt;
        let target = emit::resolve_links(file).unwrap_or_else(|_| file.to_path_buf());
        let _ = std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755));
    }
    let _ = writeln!(out, "{} jobs in {}; {} rendering in {}", jobs.len(), manifest.display(), format.name(), file.display());
    for l in hint(format, jobs, file, dir) {
        let _ = writeln!(out, "{l}");
    }
    Ok(())
}

/// The resources a job asks for: `--timeout-s`, `--mem-mb` (or their
/// defaults), and the cores it uses.
#[derive(Clone, Copy, Debug)]
pub struct Resources {
    pub timeout_s: u64,
    pub mem_mb: u64,
}

impl Resources {
    pub const DEFAULT: Resources = Resources { timeout_s: 3600, mem_mb: 4096 };

    /// `--timeout-s` and `--mem-mb`, checked.
    pub fn parse(timeout: Option<&str>, mem: Option<&str>) -> Result<Resources> {
        let int = |opt: &str, raw: Option<&str>, default: u64, max: u64| -> Result<u64> {
            match raw {
                None => Ok(default),
                Some(r) => r
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|x| (1..=max).contains(x))
                    .ok_or_else(|| Error::Bad(format!("option `{opt}` = `{r}`: must be an integer from 1 to {max}"))),
            }
        };
        Ok(Resources {
            timeout_s: int("--timeout-s", timeout, Self::DEFAULT.timeout_s, TIMEOUT_MAX)?,
            mem_mb: int("--mem-mb", mem, Self::DEFAULT.mem_mb, MEM_MAX)?,
        })
    }
}

/// A job writing `<dir>/<id>/result.json`.
pub fn job(id: String, argv: Vec<String>, seed: Option<u64>, cpus: u64, r: Resources, dir: &Path) -> Job {
    let outputs = vec![dir.join(&id).join("result.json").to_string_lossy().into_owned()];
    Job { id, argv, env: Vec::new(), seed, timeout_s: r.timeout_s, cpus, mem_mb: r.mem_mb, outputs }
}

// ---------------------------------------------------------------------------
// Cosimulation seeds, and the cosimulation a regression job runs.

/// Cosimulation seeds as `--seeds` gives them: `N` (seeds 0 to N-1, as the
/// tests count them) or `A..B` (seeds A to B-1, Rust's half-open range);
/// `--seed N` is the one seed N. The range `[from, to)`.
pub fn parse_seeds(seeds: Option<&str>, seed: Option<&str>, default: Option<u64>) -> Result<(u64, u64)> {
    const FORM: &str = "must be a count N (seeds 0 to N-1) or a range A..B (seeds A to B-1) with A < B";
    match (seeds, seed) {
        (Some(_), Some(_)) => Err(Error::Bad("options `--seed` and `--seeds`: give one of them, not both".into())),
        (None, Some(raw)) => match raw.trim().parse::<u64>() {
            Ok(s) if s < u64::MAX => Ok((s, s + 1)),
            _ => Err(Error::Bad(format!("option `--seed` = `{raw}`: must be an integer from 0 to {}", u64::MAX - 1))),
        },
        (None, None) => default
            .map(|n| (0, n))
            .ok_or_else(|| Error::Bad("the seeds are needed: `--seeds N` (seeds 0 to N-1), `--seeds A..B` (A to B-1) or `--seed N`".into())),
        (Some(raw), None) => {
            let bad = || Error::Bad(format!("option `--seeds` = `{raw}`: {FORM}"));
            match raw.split_once("..") {
                None => match raw.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok((0, n)),
                    _ => Err(bad()),
                },
                Some((a, b)) => match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
                    (Ok(a), Ok(b)) if a < b => Ok((a, b)),
                    _ => Err(bad()),
                },
            }
        }
    }
}

/// `k=v ...` of the parameters that differ from the block's defaults, or
/// `defaults`: how a point is named in tables and messages.
pub fn label(b: &dyn Block, params: &Value) -> String {
    let defaults = gpurtl_params::flat_params(&b.defaults());
    let changed: Vec<String> = gpurtl_params::flat_params(params)
        .into_iter()
        .filter(|(k, v)| !defaults.iter().any(|(dk, dv)| dk == k && dv == v))
        .map(|(k, v)| format!("{k}={}", plain(&v)))
        .collect();
    if changed.is_empty() {
        "defaults".into()
    } else {
        changed.join(" ")
    }
}

/// A JSON value as written on a command line: strings without quotes.
fn plain(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

/// `--param k=v` for every parameter of the block's table, in table order:
/// the point spelled out, whatever the defaults of the binary that runs it.
pub fn param_argv(b: &dyn Block, params: &Value) -> Vec<String> {
    let flat = gpurtl_params::flat_params(params);
    let mut argv = Vec::new();
    for info in b.table() {
        if let Some((_, v)) = flat.iter().find(|(k, _)| *k == info.name) {
            argv.push("--param".to_string());
            argv.push(format!("{}={}", info.name, plain(v)));
        }
    }
    argv
}

/// Where two JSON values first differ: (path, left, right).
pub fn first_difference(a: &Value, b: &Value) -> Option<(String, Value, Value)> {
    fn walk(path: &str, a: &Value, b: &Value) -> Option<(String, Value, Value)> {
        if a == b {
            return None;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, va) in x {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    match y.get(k) {
                        Some(vb) => {
                            if let Some(d) = walk(&p, va, vb) {
                                return Some(d);
                            }
                        }
                        None => return Some((p, va.clone(), Value::Null)),
                    }
                }
                let (k, vb) = y.iter().find(|(k, _)| !x.contains_key(*k))?;
                Some((if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, Value::Null, vb.clone()))
            }
            (Value::Array(x), Value::Array(y)) => {
                for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                    if let Some(d) = walk(&format!("{path}[{i}]"), va, vb) {
                        return Some(d);
                    }
                }
                Some((format!("{path}.length"), json!(x.len()), json!(y.len())))
            }
            _ => Some((if path.is_empty() { "(the output)".into() } else { path.to_string() }, a.clone(), b.clone())),
        }
    }
    walk("", a, b)
}

/// A failing seed's entry in a result: at most this many are listed.
const LISTED_FAILURES: usize = 100;

/// Each seed of `[from, to)` through `check` (both engines on the seed's
/// workload: `None` when their output files agree); a failing seed's line
/// (what, the first difference, the command that reruns it) on `out`. A
/// panic in the testbench fails its seed, not the run. (passed, failed,
/// the first [`LISTED_FAILURES`] failures.)
pub fn check_seeds(
    (from, to): (u64, u64),
    check: &dyn Fn(u64) -> Result<Option<(Value, Value)>>,
    reproduce: &dyn Fn(u64) -> String,
    out: &mut dyn Write,
) -> (u64, u64, Vec<Value>) {
    let mut failures = Vec::new();
    let (mut passed, mut failed) = (0u64, 0u64);
    for seed in from..to {
        let problem = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(seed))) {
            Ok(Ok(None)) => None,
            Ok(Ok(Some((model, rtl)))) => Some(match first_difference(&model, &rtl) {
                Some((at, m, r)) => ("mismatch", format!("at `{at}`: model {}, rtl {}", gpurtl_params::short(&m), gpurtl_params::short(&r))),
                None => ("mismatch", "the output files differ".to_string()),
            }),
            Ok(Err(e)) => Some(("error", e.message().lines().next().unwrap_or("").to_string())),
            Err(p) => {
                let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                Some(("error", format!("the testbench panicked: {}", m.unwrap_or_default())))
            }
        };
        match problem {
            None => passed += 1,
            Some((what, message)) => {
                failed += 1;
                let _ = writeln!(out, "seed {seed}: {what} {message}\n  reproduce: {}", reproduce(seed));
                if failures.len() < LISTED_FAILURES {
                    failures.push(json!({"seed": seed, "what": what, "message": message, "reproduce": reproduce(seed)}));
                }
            }
        }
    }
    (passed, failed, failures)
}

/// `gpurtl cosim`: the block's RTL against its golden model at `params`, on
/// the random workload of each seed of `[from, to)` (the block's
/// `random_input`, what the parameter-space test cosimulates), the two
/// output files compared. With `dir`, `<dir>/result.json` records every
/// failing seed (first difference, the command that reruns it). Any
/// failing seed is an error (exit 1) once the file is written.
pub fn cosim(b: &dyn Block, params: &Value, seeds: (u64, u64), argv: &[String], dir: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let (from, to) = seeds;
    let name = format!("{} {}", b.name(), label(b, params));
    let reproduce = |s: u64| {
        let mut words = vec!["gpurtl".to_string(), "cosim".into(), b.name().into()];
        words.extend(param_argv(b, params));
        words.push("--seed".into());
        words.push(s.to_string());
        words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
    };
    // Jobs on one machine that need one new design take turns to build it
    // (the cosim cache's lock: docs/cosim.md).
    let setup = b.design(params).and_then(|d| compile_design(&d).map_err(Error::from));
    let (passed, failed, failures) = match &setup {
        Err(_) => (0, 0, Vec::new()),
        Ok(compiled) => check_seeds(seeds, &|seed| b.self_check(params, compiled, seed), &reproduce, out),
    };
    let status = match &setup {
        Err(e) => format!("failed: {}", e.message().lines().next().unwrap_or("")),
        Ok(_) if failed == 0 => "ok".to_string(),
        Ok(_) => format!("failed: {failed} of {} seeds (first: seed {})", to - from, failures[0]["seed"]),
    };
    let result = json!({
        "argv": argv, "block": b.name(), "params": params, "seeds": [from, to],
        "passed": passed, "failed": failed, "status": status, "failures": failures,
    });
    let written = match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| Error::io("create", d, e))?;
            let path = d.join("result.json");
            let text = serde_json::to_string_pretty(&result)? + "\n";
            emit::write_atomic(&path, text.as_bytes()).map_err(|e| Error::io("write", &path, e))?;
            format!("; result: {}", path.display())
        }
        None => String::new(),
    };
    if let Err(e) = setup {
        return Err(Error::Failed(format!("cosim {name}: {}{written}", e.message())));
    }
    let _ = writeln!(out, "cosim {name}: seeds {from}..{to}: {passed} ok, {failed} failed{written}");
    if failed > 0 {
        return Err(Error::Failed(format!("cosim {name}: {status}")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Regression points and jobs.

fn powers_of_two(min: i64, max: i64) -> Vec<i64> {
    (0..63).map(|e| 1i64 << e).filter(|v| (min..=max).contains(v)).collect()
}

/// A value of `info` drawn uniformly (over the powers of two where its rule
/// asks for one).
fn random_value(info: &gpurtl_params::ParamInfo, rng: &mut Rng) -> String {
    use gpurtl_params::ParamKind;
    match &info.kind {
        ParamKind::Int { min, max, rule } if rule.contains("power of two") => rng.pick(&powers_of_two(*min, *max)).to_string(),
        ParamKind::Int { min, max, .. } => (min + rng.below((max - min + 1) as u64) as i64).to_string(),
        ParamKind::Bool => (rng.below(2) == 1).to_string(),
        ParamKind::Choice(c) => rng.pick(c).to_string(),
    }
}

/// Point `k`'s first draw of `info`: a choice's `(k + offset) mod n`-th
/// value, a boolean's alternately, an integer's smallest, largest or a
/// random value in turn, so that a few points reach both ends of every
/// range (as the parameter-space test draws them).
fn scheduled_value(info: &gpurtl_params::ParamInfo, k: u64, offset: u64, rng: &mut Rng) -> String {
    use gpurtl_params::ParamKind;
    let slot = k + offset;
    match &info.kind {
        ParamKind::Int { min, max, rule } => {
            let ends = if rule.contains("power of two") { powers_of_two(*min, *max) } else { vec![*min, *max] };
            match slot % 3 {
                0 => ends[0].to_string(),
                1 => ends[ends.len() - 1].to_string(),
                _ => random_value(info, rng),
            }
        }
        ParamKind::Bool => (slot % 2 == 1).to_string(),
        ParamKind::Choice(c) => c[(slot % c.len() as u64) as usize].to_string(),
    }
}

/// Verilog lines of the design at `params`.
fn lines(b: &dyn Block, params: &Value) -> Option<usize> {
    let d = b.design(params).ok()?;
    Some(d.elaborate().units.iter().map(|u| u.verilog.lines().count()).sum())
}

/// A regression's `n` points of `b`: `base` (the resolved `--preset`,
/// `--params` and `--param`s) first, then points drawn from the block's
/// parameter table from `seed`, each distinct, valid, at most `max_lines`
/// lines of Verilog, with the `pinned` parameters (the `--param`s) as given.
pub fn draw_points(b: &dyn Block, base: Value, pinned: &[(String, String)], n: usize, seed: u64, max_lines: usize) -> Result<Vec<Value>> {
    const ATTEMPTS: usize = 400;
    let table = b.table();
    let free: Vec<bool> = table.iter().map(|p| !pinned.iter().any(|(k, _)| *k == p.name)).collect();
    let mut rng = Rng::new(seed ^ b.name().bytes().fold(0u64, |h, c| h.wrapping_mul(131).wrapping_add(c as u64)));
    let offsets: Vec<u64> = table.iter().map(|_| rng.below(1 << 16)).collect();
    let mut out = vec![base];
    let mut k = 1u64;
    let mut misses = 0;
    while out.len() < n {
        let mut values: Vec<String> = table.iter().zip(&offsets).map(|(info, off)| scheduled_value(info, k, *off, &mut rng)).collect();
        k += 1;
        let mut found = false;
        for attempt in 0..ATTEMPTS {
            let pairs: Vec<(String, String)> = table
                .iter()
                .zip(&values)
                .zip(&free)
                .filter(|(_, f)| **f)
                .map(|((p, v), _)| (p.name.clone(), v.clone()))
                .chain(pinned.iter().cloned())
                .collect();
            match b.resolve(&[], &pairs) {
                Err(errs) => {
                    // Draw again what the messages name (all, now and then).
                    for (i, info) in table.iter().enumerate() {
                        if free[i] && (errs.0.iter().any(|e| e.field == info.name) || attempt % 25 == 24) {
                            values[i] = random_value(info, &mut rng);
                        }
                    }
                }
                Ok(params) => {
                    // A point drawn before costs no design to find out.
                    let too_big = !out.contains(&params) && lines(b, &params).is_none_or(|l| l > max_lines);
                    if too_big || out.contains(&params) {
                        for (i, info) in table.iter().enumerate() {
                            let int = matches!(info.kind, gpurtl_params::ParamKind::Int { .. });
                            if free[i] && (!too_big || int) && rng.chance(50) {
                                values[i] = random_value(info, &mut rng);
                            }
                        }
                    } else {
                        out.push(params);
                        found = true;
                        break;
                    }
                }
            }
        }
        if !found {
            misses += 1;
            if misses >= 5 {
                let pins: Vec<String> = pinned.iter().map(|(k, v)| format!("--param {k}={v}")).collect();
                return Err(Error::Bad(format!(
                    "option `--points` = `{n}`: only {} distinct valid points of block `{}`{} of at most {max_lines} lines of Verilog were found in {} draws; ask for fewer",
                    out.len(),
                    b.name(),
                    if pins.is_empty() { String::new() } else { format!(" with {}", pins.join(" ")) },
                    misses * ATTEMPTS
                )));
            }
        }
    }
    Ok(out)
}

/// The digits of `n` in decimal.
fn digits(n: u64) -> usize {
    n.to_string().len()
}

/// A regression's jobs: at each point, the seeds `[from, to)` in ranges of
/// `per_job`; job `<block>-p<k>-s<first seed>` runs
/// `gpurtl cosim <block> --param ... --seeds A..B -o <dir>/<id>`.
pub fn regress_jobs(b: &dyn Block, points: &[Value], seeds: (u64, u64), per_job: u64, r: Resources, dir: &Path) -> Vec<Job> {
    let (from, to) = seeds;
    let (pw, sw) = (digits(points.len().saturating_sub(1) as u64).max(2), digits(to - 1));
    let mut jobs = Vec::new();
    for (k, params) in points.iter().enumerate() {
        let mut a = from;
        while a < to {
            let z = a.saturating_add(per_job).min(to);
            let id = format!("{}-p{k:0pw$}-s{a:0sw$}", b.name());
            let mut argv = vec!["gpurtl".to_string(), "cosim".into(), b.name().into()];
            argv.extend(param_argv(b, params));
            argv.extend(["--seeds".into(), format!("{a}..{z}"), "-o".into(), dir.join(&id).to_string_lossy().into_owned()]);
            jobs.push(job(id, argv, Some(a), 1, r, dir));
            a = z;
        }
    }
    jobs
}

// ---------------------------------------------------------------------------
// Collecting results.

/// What a job of a manifest is, read from its argv (by the command line).
pub enum Kind {
    /// `gpurtl sweep ... --point I`.
    SweepPoint { block: String, target: Target, clock_mhz: f64, keys: Vec<String>, point: Vec<(String, String)> },
    /// `gpurtl cosim`: the resolved parameters, their label, the seeds.
    Cosim { block: String, params: Value, label: String, seeds: (u64, u64) },
}

/// A job's result: `Ok` the file (written by this job), `Err` why there is none.
fn read_result(dir: &Path, job: &Job) -> std::result::Result<Value, String> {
    let path = dir.join(&job.id).join("result.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("missing: no result.json".into()),
        Err(e) => return Err(format!("missing: cannot read `{}`: {e}", path.display())),
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("missing: `{}` is not JSON: {e}", path.display()))?;
    if v["argv"] != json!(job.argv) {
        return Err(format!("missing: `{}` was written by another command (an earlier manifest's job); rerun the job", path.display()));
    }
    Ok(v)
}

/// Ids as a message lists them: the first five, and how many more.
fn some_ids(ids: &[String]) -> String {
    let mut s = ids.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 5 {
        s.push_str(&format!(" and {} more", ids.len() - 5));
    }
    s
}

/// `gpurtl collect DIR`: every job of `<dir>/jobs.jsonl` and its result in
/// `<dir>/<id>/result.json`, merged into `<dir>/collected.json` (`rows`, a
/// row per job in manifest order; `missing` and `failed`, lists of ids) and
/// `<dir>/collected.csv`, and for a sweep its plot `<dir>/collected.svg`:
/// a sweep's rows are the rows of `gpurtl sweep`'s `sweep.json`. The files
/// depend only on the manifest and the results. Missing or failed jobs are
/// an error (exit 1) once the files are written.
pub fn collect(dir: &Path, describe: &dyn Fn(&[String]) -> Result<Kind>, out: &mut dyn Write) -> Result<()> {
    let shown = dir.display();
    if !dir.is_dir() {
        let what = if dir.exists() { "is not a folder" } else { "does not exist" };
        return Err(Error::Bad(format!(
            "argument `DIR` = `{shown}`: {what}; must be the `-o` folder of `gpurtl sweep ... --emit` or `gpurtl regress`"
        )));
    }
    let manifest = dir.join(MANIFEST);
    if !manifest.is_file() {
        return Err(Error::Bad(format!(
            "argument `DIR` = `{shown}`: holds no `{MANIFEST}`; must be the `-o` folder of `gpurtl sweep ... --emit` or `gpurtl regress`"
        )));
    }
    let jobs = read_manifest(&manifest, "DIR")?;
    let kinds = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| describe(&j.argv).map_err(|e| Error::Bad(format!("manifest `{}`: job {i} (`{}`): {}", manifest.display(), j.id, e.message()))))
        .collect::<Result<Vec<Kind>>>()?;
    let (mut missing, mut failed) = (Vec::new(), Vec::new());
    let mut rows = Vec::new();
    let results: Vec<std::result::Result<Value, String>> = jobs.iter().map(|j| read_result(dir, j)).collect();
    for (j, r) in jobs.iter().zip(&results) {
        match r {
            Err(_) => missing.push(j.id.clone()),
            Ok(v) if v["status"] != "ok" => failed.push(j.id.clone()),
            Ok(_) => {}
        }
    }
    let extra = |rows_kind: &str| -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("kind".into(), json!(rows_kind));
        m.insert("missing".into(), json!(missing));
        m.insert("failed".into(), json!(failed));
        m
    };
    match &kinds[0] {
        Kind::SweepPoint { block, target, clock_mhz, keys, .. } => {
            for (i, (k, r)) in kinds.iter().zip(&results).enumerate() {
                let Kind::SweepPoint { block: b2, target: t2, clock_mhz: c2, keys: k2, point } = k else {
                    return Err(Error::Bad(format!("manifest `{}`: job {i} (`{}`) is not a sweep point, as job 0 is; a manifest is one sweep or one regression", manifest.display(), jobs[i].id)));
                };
                if (b2, t2, c2, k2) != (block, target, clock_mhz, keys) {
                    return Err(Error::Bad(format!("manifest `{}`: job {i} (`{}`) is a point of another sweep than job 0's", manifest.display(), jobs[i].id)));
                }
                let pt: Map<String, Value> = point.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                rows.push(match r {
                    Ok(v) => json!({"point": pt, "status": v["status"], "report": v["report"]}),
                    Err(why) => json!({"point": pt, "status": why, "report": null}),
                });
            }
            let t = crate::sweep::Tables { dir, stem: "collected", extra: Some(extra("sweep")) };
            crate::sweep::write_tables(block, *target, *clock_mhz, keys, &rows, &t, out)?;
        }
        Kind::Cosim { .. } => {
            let mut csv = String::from("id,block,point,seeds,passed,failed,status\n");
            for (i, (k, r)) in kinds.iter().zip(&results).enumerate() {
                let Kind::Cosim { block, params, label, seeds } = k else {
                    return Err(Error::Bad(format!("manifest `{}`: job {i} (`{}`) is not a cosimulation, as job 0 is; a manifest is one sweep or one regression", manifest.display(), jobs[i].id)));
                };
                let id = &jobs[i].id;
                let row = match r {
                    Ok(v) => json!({"id": id, "block": block, "point": label, "params": params, "seeds": [seeds.0, seeds.1],
                                    "passed": v["passed"], "failed": v["failed"], "status": v["status"], "failures": v["failures"]}),
                    Err(why) => json!({"id": id, "block": block, "point": label, "params": params, "seeds": [seeds.0, seeds.1],
                                       "passed": null, "failed": null, "status": why, "failures": []}),
                };
                let n = |f: &str| row[f].as_u64().map_or(String::new(), |x| x.to_string());
                csv.push_str(&format!(
                    "{id},{block},\"{label}\",{}..{},{},{},\"{}\"\n",
                    seeds.0,
                    seeds.1,
                    n("passed"),
                    n("failed"),
                    row["status"].as_str().unwrap_or("").replace('"', "'")
                ));
                rows.push(row);
            }
            let seeds_run: u64 = rows.iter().filter_map(|r| r["passed"].as_u64().zip(r["failed"].as_u64()).map(|(p, f)| p + f)).sum();
            let seeds_failed: u64 = rows.iter().filter_map(|r| r["failed"].as_u64()).sum();
            let mut doc = extra("regress");
            doc.insert("seeds_run".into(), json!(seeds_run));
            doc.insert("seeds_failed".into(), json!(seeds_failed));
            doc.insert("rows".into(), json!(rows));
            let write = |name: &str, text: &str| {
                let p = dir.join(name);
                emit::write_atomic(&p, text.as_bytes()).map_err(|e| Error::io("write", &p, e))
            };
            write("collected.csv", &csv)?;
            write("collected.json", &(serde_json::to_string_pretty(&Value::Object(doc))? + "\n"))?;
            let _ = write!(out, "{csv}");
            let _ = writeln!(out, "{seeds_run} seeds run, {seeds_failed} failed; table: {}", dir.join("collected.csv").display());
        }
    }
    let _ = writeln!(out, "collected: {}", dir.join("collected.json").display());
    if missing.is_empty() && failed.is_empty() {
        return Ok(());
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("{} missing ({})", missing.len(), some_ids(&missing)));
    }
    if !failed.is_empty() {
        parts.push(format!("{} failed ({})", failed.len(), some_ids(&failed)));
    }
    Err(Error::Failed(format!("of {} jobs: {}; see {}", jobs.len(), parts.join(", "), dir.join("collected.json").display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_job(id: &str) -> Job {
        Job {
            id: id.into(),
            argv: vec!["gpurtl".into(), "cosim".into(), "compress".into(), "--seeds".into(), "0..2".into(), "-o".into(), format!("out/r/{id}")],
            env: vec![("GPURTL_X".into(), "a b".into())],
            seed: Some(0),
            timeout_s: 90,
            cpus: 1,
            mem_mb: 512,
            outputs: vec![format!("out/r/{id}/result.json")],
        }
    }

    #[test]
    fn a_manifest_line_keeps_its_field_order_and_reads_back() {
        let j = a_job("c-p00-s0");
        assert_eq!(
            j.line(),
            "{\"id\":\"c-p00-s0\",\"argv\":[\"gpurtl\",\"cosim\",\"compress\",\"--seeds\",\"0..2\",\"-o\",\"out/r/c-p00-s0\"],\
             \"env\":{\"GPURTL_X\":\"a b\"},\"seed\":0,\"timeout_s\":90,\"cpus\":1,\"mem_mb\":512,\"outputs\":[\"out/r/c-p00-s0/result.json\"]}"
        );
        assert_eq!(Job::from_value(&crate::json::parse(&j.line()).unwrap()).unwrap(), j);
        let bad = json!({"id": "../x", "argv": [], "env": {"1A": "x"}, "seed": -1, "timeout_s": 0, "cpus": 2, "mem_mb": 1, "outputs": [], "extra": 1});
        assert_eq!(
            Job::from_value(&bad).unwrap_err(),
            vec![
                "field `extra`: unknown; the fields are id, argv, env, seed, timeout_s, cpus, mem_mb, outputs".to_string(),
                "field `id` = \"../x\": must be 1 to 100 letters, digits, `.`, `_` or `-`, not `.` or `-` first".into(),
                "field `argv` = []: must be a non-empty list of strings".into(),
                "field `env`: `1A` = \"x\": must be a variable name (letters, digits, `_`, not a digit first) with a string value".into(),
                "field `seed` = -1: must be null or an integer from 0 to 18446744073709551615".into(),
                "field `timeout_s` = 0: must be an integer from 1 to 2592000".into(),
            ]
        );
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("a/b-1.json"), "a/b-1.json");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(command_line(&a_job("x"), Format::Parallel).unwrap(), "env 'GPURTL_X=a b' timeout 90 gpurtl cosim compress --seeds 0..2 -o out/r/x");
        let mut j = a_job("x");
        j.argv.push("two\nlines".into());
        assert_eq!(
            command_line(&j, Format::Parallel).unwrap_err().message(),
            "job `x`: its command holds a line break, which the `parallel` rendering (one command a line) cannot carry"
        );
    }

    #[test]
    fn seeds_are_a_count_or_a_half_open_range() {
        assert_eq!(parse_seeds(Some("4"), None, None).unwrap(), (0, 4));
        assert_eq!(parse_seeds(Some("10..12"), None, None).unwrap(), (10, 12));
        assert_eq!(parse_seeds(None, Some("7"), None).unwrap(), (7, 8));
        assert_eq!(parse_seeds(None, None, Some(200)).unwrap(), (0, 200));
        for bad in ["0", "5..5", "6..2", "a..b", "1..", "-1"] {
            assert_eq!(
                parse_seeds(Some(bad), None, None).unwrap_err().message(),
                format!("option `--seeds` = `{bad}`: must be a count N (seeds 0 to N-1) or a range A..B (seeds A to B-1) with A < B")
            );
        }
    }

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = json!({"cycles": 10, "results": [{"data": [1, 2]}, {"data": [3]}]});
        let b = json!({"cycles": 10, "results": [{"data": [1, 2]}, {"data": [4]}]});
        assert_eq!(first_difference(&a, &b), Some(("results[1].data[0]".into(), json!(3), json!(4))));
        let c = json!({"cycles": 10, "results": [{"data": [1, 2]}]});
        assert_eq!(first_difference(&a, &c), Some(("results.length".into(), json!(2), json!(1))));
        assert_eq!(first_difference(&a, &a), None);
    }

    /// A mismatch names the seed, the first difference and the command
    /// that reruns it; a failing model and a panicking testbench fail their
    /// seed only.
    #[test]
    fn failing_seeds_are_reported_and_the_others_run() {
        let check = |seed: u64| -> Result<Option<(Value, Value)>> {
            match seed {
                3 => Ok(Some((json!({"cycles": 9, "results": [1, 2]}), json!({"cycles": 9, "results": [1, 5]})))),
                4 => Err(Error::Bad("the model ran past its budget".into())),
                5 => panic!("port `x` is missing"),
                _ => Ok(None),
            }
        };
        let mut out = Vec::new();
        let (passed, failed, failures) = check_seeds((2, 7), &check, &|s| format!("gpurtl cosim b --seed {s}"), &mut out);
        assert_eq!((passed, failed), (2, 3));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "seed 3: mismatch at `results[1]`: model 2, rtl 5\n  reproduce: gpurtl cosim b --seed 3\n\
             seed 4: error the model ran past its budget\n  reproduce: gpurtl cosim b --seed 4\n\
             seed 5: error the testbench panicked: port `x` is missing\n  reproduce: gpurtl cosim b --seed 5\n"
        );
        assert_eq!(
            failures[0],
            json!({"seed": 3, "what": "mismatch", "message": "at `results[1]`: model 2, rtl 5", "reproduce": "gpurtl cosim b --seed 3"})
        );
    }

    #[test]
    fn slurm_times_and_submissions() {
        assert_eq!(slurm_time(3600), "01:00:00");
        assert_eq!(slurm_time(90_061), "1-01:01:01");
        assert_eq!(slurm_submits(3, Path::new("j.sh")), vec!["sbatch j.sh"]);
        assert_eq!(
            slurm_submits(2500, Path::new("j.sh")),
            vec![
                "sbatch j.sh".to_string(),
                "sbatch --array=0-999 --export=ALL,GPURTL_JOB_OFFSET=1000 j.sh".into(),
                "sbatch --array=0-499 --export=ALL,GPURTL_JOB_OFFSET=2000 j.sh".into(),
            ]
        );
    }

    #[test]
    fn the_make_rendering_has_a_target_per_job_and_escapes_dollars() {
        let mut j = a_job("c-p00-s0");
        j.argv.push("$x".into());
        let place = Place { manifest: Path::new("out/r/jobs.jsonl"), dir: Path::new("out/r"), command: "gpurtl regress compress" };
        let m = render(Format::Make, &[j, a_job("c-p00-s2")], &place).unwrap();
        assert!(m.contains(".PHONY: all c-p00-s0 c-p00-s2\nall: c-p00-s0 c-p00-s2\n"), "{m}");
        assert!(
            m.contains("\nc-p00-s0: out/r/c-p00-s0/result.json\nout/r/c-p00-s0/result.json: out/r/jobs.jsonl\n\tenv 'GPURTL_X=a b' timeout 90 gpurtl cosim compress --seeds 0..2 -o out/r/c-p00-s0 '$$x'\n"),
            "{m}"
        );
        let place = Place { manifest: Path::new("my out/jobs.jsonl"), dir: Path::new("my out"), command: "" };
        assert_eq!(
            render(Format::Make, &[a_job("x")], &place).unwrap_err().message(),
            "option `--out` = `my out`: holds ` `; the `make` rendering needs a path of letters, digits and `._-/+@,` only (a Makefile target cannot hold it)"
        );
    }

    #[test]
    fn the_gha_rendering_has_matrices_of_at_most_256() {
        let jobs: Vec<Job> = (0..600).map(|i| a_job(&format!("j{i:03}"))).collect();
        let place = Place { manifest: Path::new("out/r/jobs.jsonl"), dir: Path::new("out/r"), command: "gpurtl regress" };
        let y = render(Format::Gha, &jobs, &place).unwrap();
        assert_eq!(y.matches("\n  chunk-").count(), 3);
        assert!(y.contains("    needs: [chunk-0, chunk-1, chunk-2]\n"), "{y}");
        let entries: Vec<Value> = y.lines().filter_map(|l| l.strip_prefix("          - ")).map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(entries.len(), 600);
        assert_eq!(entries[256], json!({"id": "j256", "cmd": "env 'GPURTL_X=a b' timeout 90 gpurtl cosim compress --seeds 0..2 -o out/r/j256"}));
        let embedded: Vec<&str> = y.lines().filter(|l| l.starts_with("          {\"id\":")).map(str::trim).collect();
        assert_eq!(embedded, jobs.iter().map(Job::line).collect::<Vec<_>>());
        let mut j = a_job("x");
        j.argv.push("${{ secrets.T }}".into());
        assert_eq!(
            render(Format::Gha, &[j], &place).unwrap_err().message(),
            "job `x`: holds `${{`, which GitHub Actions reads as an expression"
        );
    }
}
