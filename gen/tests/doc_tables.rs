//! The tables of the docs are the code's: between a line
//! `<!-- gpurtl list ARGS -->` and the next `<!-- end -->` a page holds,
//! between two blank lines, exactly what `gpurtl list ARGS` prints (a
//! block's parameters, presets or ports); and every block's page
//! (docs/<block>.md) holds its parameter, preset and port tables so.
//! `GPURTL_BLESS=1` (or `make docs-tables`) rewrites the tables in place
//! instead of comparing; the marker lines are written by hand.
//!
//! And `gpurtl list`'s table options: each bad one is refused with exit 2
//! and a message naming the option, its value and what is allowed.

use std::path::{Path, PathBuf};

const END: &str = "<!-- end -->";
const BLESS: &str = "GPURTL_BLESS=1 cargo test --release -p gpurtl-gen --test doc_tables (or make docs-tables)";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The command line in-process: (status, stdout, stderr).
fn gpurtl(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = gpurtl_gen::cli::main_with(&args, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

/// One generated table of a page: its command's arguments (after
/// `gpurtl`) and the byte range of what lies between the marker lines.
struct Marked {
    line: usize,
    args: Vec<String>,
    body: std::ops::Range<usize>,
}

/// The marked tables of a page, or what is wrong with its markers.
fn marked(text: &str, what: &str) -> Result<Vec<Marked>, String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<String>, usize)> = None;
    let mut at = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let start = at;
        at += line.len();
        let t = line.trim();
        if let Some(cmd) = t.strip_prefix("<!-- gpurtl ").and_then(|c| c.strip_suffix("-->")) {
            if let Some((l, _, _)) = open {
                return Err(format!("{what}:{}: a table opened on line {l} has no `{END}` before the next", n + 1));
            }
            let args: Vec<String> = cmd.split_whitespace().map(String::from).collect();
            if args.first().map(String::as_str) != Some("list") {
                return Err(format!("{what}:{}: `gpurtl {}`: a table marker runs `gpurtl list ...` only", n + 1, cmd.trim()));
            }
            open = Some((n + 1, args, at));
        } else if t == END {
            let (line, args, from) = open.take().ok_or_else(|| format!("{what}:{}: `{END}` without a table marker before it", n + 1))?;
            out.push(Marked { line, args, body: from..start });
        }
    }
    match open {
        Some((l, _, _)) => Err(format!("{what}:{l}: the table has no `{END}`")),
        None => Ok(out),
    }
}

/// Compares (or with GPURTL_BLESS rewrites) the marked tables of `page`;
/// returns its tables' commands and the problems found.
fn check_page(page: &Path) -> (Vec<Vec<String>>, Vec<String>) {
    let what = page.strip_prefix(repo()).unwrap_or(page).display().to_string();
    let text = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{what}: {e}"));
    let tables = match marked(&text, &what) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let bless = std::env::var_os("GPURTL_BLESS").is_some();
    let mut problems = Vec::new();
    let mut new = String::new();
    let mut last = 0;
    for m in &tables {
        let args: Vec<&str> = m.args.iter().map(String::as_str).collect();
        let (code, out, err) = gpurtl(&args);
        let want = format!("\n{out}\n");
        let have = &text[m.body.clone()];
        new.push_str(&text[last..m.body.start]);
        last = m.body.end;
        if code != 0 {
            problems.push(format!("{what}:{}: `gpurtl {}` failed: {}", m.line, args.join(" "), err.trim_end()));
            new.push_str(have);
        } else if bless {
            new.push_str(&want);
        } else if have != want {
            let diff: Vec<String> = want
                .lines()
                .zip(have.lines().chain(std::iter::repeat("(nothing)")))
                .filter(|(w, h)| w != h)
                .take(3)
                .map(|(w, h)| format!("    code: {w}\n    page: {h}"))
                .collect();
            problems.push(format!(
                "{what}:{}: the table differs from `gpurtl {}` ({} lines, the page {}); first differences:\n{}\nrefresh with {BLESS}",
                m.line,
                args.join(" "),
                want.lines().count(),
                have.lines().count(),
                if diff.is_empty() { "    (the line count)".to_string() } else { diff.join("\n") }
            ));
            new.push_str(have);
        } else {
            new.push_str(have);
        }
    }
    new.push_str(&text[last..]);
    if bless && new != text {
        std::fs::write(page, new).unwrap();
    }
    (tables.into_iter().map(|m| m.args).collect(), problems)
}

/// A block's page: its tables are current, and it has the three.
fn block_page(block: &str) {
    let what = format!("docs/{block}.md");
    let (cmds, mut problems) = check_page(&repo().join(&what));
    let has = |table: &str| {
        cmds.iter().any(|a| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            a.starts_with(&["list", block, "--markdown", "--table", table]) || (table != "ports" && a == ["list", block, "--markdown"])
        })
    };
    for table in ["params", "presets", "ports"] {
        if !has(table) {
            problems.push(format!(
                "{what}: no `{table}` table: put the lines `<!-- gpurtl list {block} --markdown --table {table} -->` and `{END}` where it goes, then run {BLESS}"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

macro_rules! block_pages {
    ($($block:ident),* $(,)?) => {
        $(
            #[test]
            fn $block() {
                block_page(stringify!($block));
            }
        )*
    };
}
gpurtl_params::for_each_block!(block_pages);

/// Every block is covered: the registry and the macro above agree.
#[test]
fn every_block_has_a_page_test() {
    let mut names = Vec::new();
    macro_rules! collect {
        ($($block:ident),* $(,)?) => { $(names.push(stringify!($block));)* };
    }
    gpurtl_params::for_each_block!(collect);
    let registry: Vec<&str> = gpurtl_gen::blocks::all().iter().map(|b| b.name()).collect();
    assert_eq!(names, registry);
}

/// The other pages' marked tables (the README, docs/ pages of no block).
#[test]
fn other_pages_tables_are_current() {
    let blocks: Vec<String> = gpurtl_gen::blocks::all().iter().map(|b| format!("{}.md", b.name())).collect();
    let mut pages = vec![repo().join("README.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".md") && !blocks.contains(&name) {
            pages.push(p);
        }
    }
    let problems: Vec<String> = pages.iter().flat_map(|p| check_page(p).1).collect();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn markers_are_read_strictly() {
    let t = "a\n<!-- gpurtl list x --markdown -->\n\n| t |\n\n<!-- end -->\nb\n";
    let m = marked(t, "p").unwrap();
    assert_eq!((m.len(), m[0].line, m[0].args.join(" ")), (1, 2, "list x --markdown".to_string()));
    assert_eq!(&t[m[0].body.clone()], "\n| t |\n\n");
    assert_eq!(marked("<!-- gpurtl list x -->\n", "p").err().unwrap(), "p:1: the table has no `<!-- end -->`");
    assert_eq!(marked("<!-- end -->\n", "p").err().unwrap(), "p:1: `<!-- end -->` without a table marker before it");
    assert_eq!(
        marked("<!-- gpurtl gen x -o y -->\n<!-- end -->\n", "p").err().unwrap(),
        "p:1: `gpurtl gen x -o y`: a table marker runs `gpurtl list ...` only"
    );
}

/// What the tables show: the code's values.
#[test]
fn the_tables_are_the_codes() {
    let (code, out, err) = gpurtl(&["list", "systolic", "--markdown", "--table", "params"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("| name | default | allowed | meaning |\n| --- | --- | --- | --- |\n| `rows` | 4 | an integer from 1 to 64 |"), "{out}");
    let (_, out, _) = gpurtl(&["list", "systolic", "--markdown", "--table", "presets"]);
    assert!(out.contains("\n| `grid8` | `rows=8` `cols=8` | "), "{out}");
    let (_, out, _) = gpurtl(&["list", "compress", "--markdown", "--table", "ports", "--param", "width=256"]);
    assert!(out.starts_with("Module `gpurtl_compress`, at the parameters `width=256`:\n\n| port | dir | width | meaning |\n"), "{out}");
    assert!(out.contains("\n| `in_src_i` | in | 256 | "), "{out}");
    // `--markdown` alone: the parameters, a blank line, the presets.
    let (_, all, _) = gpurtl(&["list", "compress", "--markdown"]);
    let (_, p, _) = gpurtl(&["list", "compress", "--markdown", "--table", "params"]);
    let (_, s, _) = gpurtl(&["list", "compress", "--markdown", "--table", "presets"]);
    assert_eq!(all, format!("{p}\n{s}"));
    // Plain text without `--markdown`.
    let (code, out, err) = gpurtl(&["list", "compress", "--table", "ports", "--preset", "small"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("gpurtl_compress, at the preset `small`:\n  port "), "{out}");
    let src = out.lines().find(|l| l.starts_with("  in_src_i ")).unwrap_or_default();
    assert_eq!(src.split_whitespace().take(3).collect::<Vec<_>>(), ["in_src_i", "in", "64"], "{out}");
}

fn bad(args: &[&str], message: &str) {
    let (code, out, err) = gpurtl(args);
    assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
    assert_eq!(err, message, "{args:?}");
}

#[test]
fn bad_table_options_are_refused() {
    bad(&["list", "compress", "--table", "wires"], "error: option `--table` = `wires`: must be one of params, presets, ports\n");
    bad(&["list", "compress", "--markdown", "--table", ""], "error: option `--table` = ``: must be one of params, presets, ports\n");
    bad(&["list", "compress", "--table"], "error: option `--table` needs a value\n");
    bad(
        &["list", "--markdown"],
        "error: option `--markdown` needs a block: `gpurtl list BLOCK --markdown`; blocks: compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu\n",
    );
    bad(
        &["list", "--table", "ports"],
        "error: option `--table` needs a block: `gpurtl list BLOCK --table`; blocks: compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu\n",
    );
    bad(
        &["list", "nosuch", "--markdown"],
        "error: unknown block `nosuch`; blocks: compress, cbload, systolic, scheduler, texture, cmdproc, arbiter, scratchpad, cu, gpu\n",
    );
    bad(
        &["list", "compress", "--names", "--markdown"],
        "error: options `--names` and `--markdown`: give one of them (`--names` lists the blocks, `--markdown` one block's tables)\n",
    );
    bad(&["list", "compress", "--markdown", "--markdown"], "error: option `--markdown` is given twice; give it once\n");
    bad(
        &["list", "compress", "--markdown", "--param", "width=256"],
        "error: option `--param` is used by `list` with `--table ports` only (the ports' widths at those parameters); the other tables show every value\n",
    );
    bad(
        &["list", "compress", "--table", "params", "--preset", "small"],
        "error: option `--preset` is used by `list` with `--table ports` only (the ports' widths at those parameters); the other tables show every value\n",
    );
    bad(
        &["list", "compress", "--table", "ports", "--param", "width=100"],
        "error: parameter `width` = 100: must be a power of two from 64 to 1024\n",
    );
    bad(
        &["list", "compress", "--table", "ports", "--preset", "huge"],
        "error: preset `huge` of block `compress`: must be one of default, small, wide, max, fpga, stream\n",
    );
    bad(&["list", "compress", "--markdown", "-o", "x"], "error: option `--out` is not used by `list`; see `gpurtl list --help`\n");
    // As before: `--param` without the ports table.
    bad(&["list", "--param", "width=1"], "error: option `--param` is not used by `list`; see `gpurtl list --help`\n");
}
