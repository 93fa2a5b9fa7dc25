//! `gpurtl gen` as separate processes of the real binary: eight at once
//! into one folder take turns on its lock, and the folder ends up as one of
//! them wrote it.

use std::process::Command;

#[test]
fn concurrent_gen_processes_leave_a_consistent_folder() {
    let d = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let children: Vec<_> = (0..8)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_gpurtl"))
                .args(["gen", if i % 2 == 0 { "compress" } else { "systolic" }, "-o"])
                .arg(d.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("gpurtl.manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_object().unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want: Vec<String> = files.keys().cloned().chain(["gpurtl.manifest.json".to_string()]).collect();
    want.sort();
    assert_eq!(names, want);
    for (name, hash) in files {
        let bytes = std::fs::read(d.path().join(name)).unwrap();
        assert_eq!(format!("{:016x}", gpurtl_gen::emit::fnv1a64(&bytes)), hash.as_str().unwrap(), "{name}");
    }
    let top = manifest["top"].as_str().unwrap();
    let filelist = std::fs::read_to_string(d.path().join(format!("{top}.f"))).unwrap();
    for f in filelist.lines().filter(|l| l.ends_with(".v")).map(str::trim) {
        assert!(files.contains_key(f), "{f}");
    }
}
