//! The documented commands run as written, with the real binary: every
//! `gpurtl` line of the first `sh` block of the README's "Using it" section,
//! of docs/cli.md's "Commands" and of each block page's "Using it"
//! (docs/<block>.md; not docs/cu.md, whose RTL run builds the whole compute
//! unit in Verilator) that lists, generates, runs, assembles or prunes (the
//! bench, synthesis, sweep and lint lines are measured elsewhere, and take
//! minutes). Each block of commands runs in a fresh folder holding a copy of
//! `examples/` and `docs/figures/`, and writes only under `out/`: every file
//! a command names is there afterwards, nothing else appears beside
//! `examples/` and `docs/`, and a run through the RTL writes the same file
//! as the same run through the golden model.
//!
//! And every relative link of the README and of docs/ leads to a file of the
//! repository (with a `#fragment`, to one of its headings).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Section `title` (a whole `## ` heading line) of a Markdown text, up to the
/// next `## ` heading.
fn section<'a>(text: &'a str, title: &str, what: &str) -> &'a str {
    let start = text.find(&format!("\n{title}\n")).unwrap_or_else(|| panic!("{what}: no section \"{title}\""));
    let rest = &text[start + title.len() + 2..];
    rest.find("\n## ").map_or(rest, |end| &rest[..end])
}

/// The first ```sh block of a section.
fn first_sh<'a>(section: &'a str, what: &str) -> &'a str {
    section.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).unwrap_or_else(|| panic!("{what}: no sh block"))
}

/// The `gpurtl` command lines of a block that the test runs, as arguments.
fn commands(block: &str) -> Vec<Vec<&str>> {
    block
        .lines()
        .map(|line| line.split(" #").next().unwrap().split_whitespace().collect::<Vec<&str>>())
        .filter(|args| args.first() == Some(&"gpurtl") && !matches!(args.get(1), Some(&("bench" | "synth" | "sweep" | "lint"))))
        .collect()
}

/// Options whose value is a file or folder the command writes.
const WRITES: [&str; 5] = ["-o", "--output", "--vcd", "--output-image", "--json"];

/// Runs the block's commands in a fresh folder: the folder and the number
/// of commands run.
fn run_block(what: &str, block: &str) -> (tempfile::TempDir, usize) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_dir(&repo().join("examples"), &d.join("examples"));
    copy_dir(&repo().join("docs/figures"), &d.join("docs/figures"));
    // A `run`'s output files by engine, keyed by the rest of its arguments.
    let mut runs: BTreeMap<Vec<&str>, Vec<(&str, &str)>> = BTreeMap::new();
    let cmds = commands(block);
    for args in &cmds {
        let cmd = args.join(" ");
        let o = Command::new(env!("CARGO_BIN_EXE_gpurtl")).args(&args[1..]).current_dir(d).output().unwrap();
        assert!(o.status.success(), "{what}: `{cmd}`: {}", String::from_utf8_lossy(&o.stderr));
        for w in args.windows(2).filter(|w| WRITES.contains(&w[0])) {
            assert!(w[1] == "out" || w[1].starts_with("out/"), "{what}: `{cmd}` writes {} outside out/", w[1]);
            assert!(d.join(w[1]).exists(), "{what}: `{cmd}` did not write {}", w[1]);
        }
        if args[1] == "run" {
            let value = |k: &str| args.windows(2).find(|w| w[0] == k).map(|w| w[1]);
            let mut key = Vec::new();
            let mut skip = false;
            for (i, a) in args.iter().enumerate() {
                if skip {
                    skip = false;
                } else if ["--output", "--engine", "--vcd", "--output-image"].contains(a) {
                    skip = true;
                } else if i > 0 {
                    key.push(*a);
                }
            }
            runs.entry(key).or_default().push((value("--engine").unwrap_or("model"), value("--output").unwrap()));
        }
    }
    // The same run through both engines: the same file.
    for (key, outs) in &runs {
        let model = outs.iter().find(|(e, _)| *e == "model");
        for (_, rtl) in outs.iter().filter(|(e, _)| *e == "rtl") {
            if let Some((_, m)) = model {
                assert_eq!(read(&d.join(m)), read(&d.join(rtl)), "{what}: `{}`: {m} and {rtl} differ", key.join(" "));
            }
        }
    }
    let mut top: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    top.sort();
    assert!(top.iter().all(|n| ["docs", "examples", "out"].contains(&n.as_str())), "{what}: the commands wrote {top:?}");
    (dir, cmds.len())
}

#[test]
fn the_readme_quick_start_runs() {
    let readme = read(&repo().join("README.md"));
    let block = first_sh(section(&readme, "## Using it", "README.md"), "README.md");
    let (dir, ran) = run_block("README.md", block);
    assert!(ran >= 4, "README.md: only {ran} commands found");
    // What they wrote is what they say.
    let d = dir.path();
    assert!(d.join("out/c512/gpurtl_compress.f").is_file());
    assert_eq!(read(&d.join("out/ops-out.json")), read(&d.join("out/ops-rtl.json")));
    assert!(read(&d.join("out/ops.vcd")).contains("$enddefinitions"));
}

#[test]
fn the_cli_page_commands_run() {
    let page = read(&repo().join("docs/cli.md"));
    let (dir, ran) = run_block("docs/cli.md", first_sh(section(&page, "## Commands", "docs/cli.md"), "docs/cli.md"));
    assert!(ran >= 7, "docs/cli.md: only {ran} commands found");
    let d = dir.path();
    for f in ["out/c512/gpurtl_compress.f", "out/c256/gpurtl_compress.json", "out/s8/gpurtl_systolic_mul.ecp5.v", "out/cu/gpurtl_cu.core"] {
        assert!(d.join(f).is_file(), "docs/cli.md: {f}");
    }
}

/// Every block has a page whose "Using it" starts by generating the block
/// under out/.
#[test]
fn every_block_page_starts_with_using_it() {
    for b in gpurtl_gen::blocks::all() {
        let what = format!("docs/{}.md", b.name());
        let page = read(&repo().join(&what));
        let cmds = commands(first_sh(section(&page, "## Using it", &what), &what));
        let first = cmds.first().map(|c| c.join(" ")).unwrap_or_default();
        assert!(first.starts_with(&format!("gpurtl gen {} ", b.name())) && first.contains(" -o out/"), "{what}: its first command is `{first}`");
        let spec = page.find("\n## Parameters\n").unwrap_or_else(|| panic!("{what}: no Parameters section"));
        assert!(page.find("\n## Using it\n").unwrap() < spec, "{what}: \"Using it\" comes before the specification");
    }
}

fn page_runs(block: &str) {
    let what = format!("docs/{block}.md");
    let page = read(&repo().join(&what));
    let (_dir, ran) = run_block(&what, first_sh(section(&page, "## Using it", &what), &what));
    assert!(ran >= 2, "{what}: only {ran} commands found");
}

#[test]
fn compress_page_runs() {
    page_runs("compress");
}
#[test]
fn systolic_page_runs() {
    page_runs("systolic");
}
#[test]
fn cbload_page_runs() {
    page_runs("cbload");
}
#[test]
fn texture_page_runs() {
    page_runs("texture");
}
#[test]
fn scheduler_page_runs() {
    page_runs("scheduler");
}
#[test]
fn cmdproc_page_runs() {
    page_runs("cmdproc");
}
#[test]
fn arbiter_page_runs() {
    page_runs("arbiter");
}
#[test]
fn scratchpad_page_runs() {
    page_runs("scratchpad");
}

/// The link targets of a Markdown text outside code, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut plain = String::new();
        let mut code = false;
        for c in line.chars() {
            if c == '`' {
                code = !code;
            } else if !code {
                plain.push(c);
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(j) = after.find(')') else { break };
            out.push((n + 1, after[..j].to_string()));
            rest = &after[j..];
        }
    }
    out
}

/// The anchors of a Markdown file's headings, as GitHub makes them.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let title = line.trim_start_matches('#').trim().to_lowercase();
            out.push(title.chars().filter_map(|c| if c == ' ' { Some('-') } else if c.is_alphanumeric() || c == '-' || c == '_' { Some(c) } else { None }).collect());
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_of_the_repository() {
    let root = repo().canonicalize().unwrap();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> =
        std::fs::read_dir(root.join("docs")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "md")).collect();
    docs.sort();
    pages.extend(docs);
    let mut bad = Vec::new();
    let mut seen = 0;
    for page in &pages {
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for (line, target) in links(&read(page)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            seen += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            match file.canonicalize() {
                Ok(f) if !f.starts_with(&root) => bad.push(format!("{name}:{line}: {target} is outside the repository")),
                Ok(f) => {
                    if let Some(fragment) = fragment {
                        if !anchors(&read(&f)).iter().any(|a| a == fragment) {
                            bad.push(format!("{name}:{line}: {target}: no heading #{fragment}"));
                        }
                    }
                }
                Err(_) => bad.push(format!("{name}:{line}: {target}: no such file")),
            }
        }
    }
    assert!(seen >= 20, "only {seen} links found");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}
