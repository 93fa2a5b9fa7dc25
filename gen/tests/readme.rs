//! The README's commands run as written: every `gpurtl` line of its "Using
//! it" block that generates, runs or lists (the bench, synthesis and sweep
//! lines are measured elsewhere, and take minutes), with the real binary, in
//! a fresh folder holding a copy of `examples/`.

use std::path::Path;
use std::process::Command;

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

#[test]
fn the_readme_commands_run() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let using = readme.split("## Using it").nth(1).expect("a \"Using it\" section");
    let block = using.split("```sh").nth(1).and_then(|b| b.split("```").next()).expect("its command block");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo.join("examples"), &dir.path().join("examples"));
    let mut ran = 0;
    for line in block.lines() {
        let cmd = line.split(" #").next().unwrap().trim();
        let args: Vec<&str> = cmd.split_whitespace().collect();
        if args.first() != Some(&"gpurtl") || matches!(args.get(1), Some(&("bench" | "synth" | "sweep" | "lint"))) {
            continue;
        }
        let o = Command::new(env!("CARGO_BIN_EXE_gpurtl")).args(&args[1..]).current_dir(dir.path()).output().unwrap();
        assert!(o.status.success(), "`{cmd}`: {}", String::from_utf8_lossy(&o.stderr));
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} commands found");
    // What they wrote is what they say.
    assert!(dir.path().join("out/c512/gpurtl_compress.f").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ops-out.json")).unwrap(),
        std::fs::read_to_string(dir.path().join("ops-rtl.json")).unwrap()
    );
    assert!(std::fs::read_to_string(dir.path().join("ops.vcd")).unwrap().contains("$enddefinitions"));
}
