//! Jobs for the runners designers already have (docs/jobs.md), with the
//! real binary and the real runners: a sweep's manifest run through GNU
//! parallel and through its `make` rendering, collected, equals the same
//! sweep run in one process; a regression run through GNU parallel and
//! through its Slurm script (a stub `sbatch` that runs the array's tasks in
//! turn) collects to the same file as the regression run here; `collect`
//! names missing, failed and stale jobs; `gpurtl job` runs a line with its
//! environment; every bad argument is an exit-2 message that writes
//! nothing. Everything runs on the cheapest design (compress at 64 bits)
//! and a few seeds.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The folder of the binary under test, first on the PATH of what the
/// runners start (their jobs run `gpurtl`).
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_gpurtl")).parent().unwrap().to_path_buf()
}

fn path_with(dirs: &[&Path]) -> String {
    let mut all: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    all.push(std::env::var("PATH").unwrap_or_default());
    all.join(":")
}

/// `program args` in `dir` (stdin from `input`), the binary's folder first
/// on PATH: (status, stdout, stderr).
fn run_in(dir: &Path, program: &str, args: &[&str], input: Option<&str>, path: &str) -> (i32, String, String) {
    let mut c = Command::new(program);
    // LC_ALL=C: make's messages in English, whatever the machine's locale;
    // and a top-level make even under `make test` (no "make[1]: Entering").
    c.args(args).current_dir(dir).env("PATH", path).env("LC_ALL", "C").stdout(Stdio::piped()).stderr(Stdio::piped());
    for v in ["MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"] {
        c.env_remove(v);
    }
    c.stdin(match input {
        Some(f) => Stdio::from(std::fs::File::open(dir.join(f)).unwrap()),
        None => Stdio::null(),
    });
    let o = c.output().unwrap_or_else(|e| panic!("{program}: {e}"));
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

fn gpurtl(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_in(dir, env!("CARGO_BIN_EXE_gpurtl"), args, None, &path_with(&[&bin_dir()]))
}

/// `gpurtl args` succeeds: its stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = gpurtl(dir, args);
    assert_eq!(code, 0, "gpurtl {}:\n{out}{err}", args.join(" "));
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json(p: &Path) -> Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// GNU parallel is there (`make deps` installs it); the tests that run it
/// say so when it is not.
fn have_parallel() -> bool {
    let there = Command::new("parallel").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !there {
        eprintln!("SKIPPED: GNU parallel is not installed (`make deps` installs Debian's `parallel`)");
    }
    there
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

const SWEEP: &[&str] = &["sweep", "compress", "--param", "width=64", "--param", "latency=1,2", "--target", "generic"];

#[test]
fn sweep_jobs_through_parallel_and_make_equal_the_sweep_run_here() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &[SWEEP, &["-o", "here"]].concat());
    let here = json(&d.join("here/sweep.json"));

    let out = ok(d, &[SWEEP, &["-o", "par", "--emit", "par.txt", "--emit-format", "parallel"]].concat());
    assert_eq!(
        out,
        format!(
            "2 jobs in par/jobs.jsonl; parallel rendering in par.txt\n\
             run from this folder (the jobs' paths are relative to it), {} at a time on this machine:\n  \
             parallel --joblog par/joblog --resume -j {} < par.txt\nthen: gpurtl collect par\n",
            cores(),
            cores()
        )
    );
    let lines = read(&d.join("par.txt"));
    assert_eq!(
        lines,
        "timeout 3600 gpurtl sweep compress --param width=64 --param latency=1,2 --target generic --clock-mhz 100 -o par --point 0\n\
         timeout 3600 gpurtl sweep compress --param width=64 --param latency=1,2 --target generic --clock-mhz 100 -o par --point 1\n"
    );
    let manifest = read(&d.join("par/jobs.jsonl"));
    assert_eq!(
        manifest.lines().next().unwrap(),
        "{\"id\":\"run00\",\"argv\":[\"gpurtl\",\"sweep\",\"compress\",\"--param\",\"width=64\",\"--param\",\"latency=1,2\",\
         \"--target\",\"generic\",\"--clock-mhz\",\"100\",\"-o\",\"par\",\"--point\",\"0\"],\"env\":{},\"seed\":null,\"timeout_s\":3600,\
         \"cpus\":1,\"mem_mb\":4096,\"outputs\":[\"par/run00/result.json\"]}"
    );
    // The GitHub Actions matrix runs the same command lines.
    ok(d, &[SWEEP, &["-o", "par", "--emit", "par.yml", "--emit-format", "gha"]].concat());
    let yml = read(&d.join("par.yml"));
    let cmds: Vec<String> = yml
        .lines()
        .filter_map(|l| l.strip_prefix("          - "))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["cmd"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(cmds, lines.lines().collect::<Vec<_>>());
    assert_eq!(read(&d.join("par/jobs.jsonl")), manifest, "the same jobs: the same manifest");

    if have_parallel() {
        let path = path_with(&[&bin_dir()]);
        let (code, _, err) = run_in(d, "parallel", &["--joblog", "par/joblog", "--resume", "-j", "2"], Some("par.txt"), &path);
        assert_eq!(code, 0, "{err}");
        let out = ok(d, &["collect", "par"]);
        assert!(out.ends_with("table: par/collected.csv  plot: par/collected.svg\ncollected: par/collected.json\n"), "{out}");
        let got = json(&d.join("par/collected.json"));
        assert_eq!(got["rows"], here["rows"]);
        assert_eq!((&got["missing"], &got["failed"], &got["kind"]), (&Value::from(Vec::<Value>::new()), &Value::from(Vec::<Value>::new()), &Value::from("sweep")));
        assert_eq!(read(&d.join("par/collected.csv")), read(&d.join("here/sweep.csv")));
        assert_eq!(read(&d.join("par/collected.svg")), read(&d.join("here/sweep.svg")));
        // Idempotent; and --resume runs nothing twice.
        let before = read(&d.join("par/collected.json"));
        ok(d, &["collect", "par"]);
        assert_eq!(read(&d.join("par/collected.json")), before);
        let (code, _, err) = run_in(d, "parallel", &["--joblog", "par/joblog", "--resume", "-j", "2"], Some("par.txt"), &path);
        assert_eq!(code, 0, "{err}");
        assert_eq!(read(&d.join("par/joblog")).lines().count(), 3, "a header and one line a job");
    }

    ok(d, &[SWEEP, &["-o", "mk", "--emit", "mk.mk", "--emit-format", "make"]].concat());
    let path = path_with(&[&bin_dir()]);
    let (code, _, err) = run_in(d, "make", &["-f", "mk.mk", "-j", "2", "-k"], None, &path);
    assert_eq!(code, 0, "{err}");
    ok(d, &["collect", "mk"]);
    assert_eq!(json(&d.join("mk/collected.json"))["rows"], here["rows"]);
    assert_eq!(read(&d.join("mk/collected.csv")), read(&d.join("here/sweep.csv")));
    // A job is done once its result is there.
    let (code, out, _) = run_in(d, "make", &["-f", "mk.mk", "-j", "2"], None, &path);
    assert_eq!((code, out.as_str()), (0, "make: Nothing to be done for 'all'.\n"));
}

const REGRESS: &[&str] = &["regress", "compress", "--param", "width=64", "--points", "2", "--seeds", "4", "--seeds-per-job", "2"];

/// A stub `sbatch`: runs every task of the script's array in turn (the
/// `--array` of its command line, else of its `#SBATCH` line), with the
/// variables of `--export=ALL,K=V`.
const SBATCH: &str = r#"#!/bin/bash
set -eu
array=""; exports=""
while [ $# -gt 1 ]; do
  case "$1" in --array=*) array="${1#--array=}";; --export=*) exports="${1#--export=}";; esac
  shift
done
script="$1"
[ -n "$array" ] || array=$(sed -n 's/^#SBATCH --array=//p' "$script")
IFS=, read -ra vars <<< "$exports"
for v in "${vars[@]}"; do [ "$v" = ALL ] || export "$v"; done
echo "Submitted batch job 1"
status=0
for ((i = ${array%-*}; i <= ${array#*-}; i++)); do
  SLURM_ARRAY_JOB_ID=1 SLURM_ARRAY_TASK_ID=$i bash "$script" || status=1
done
exit $status
"#;

#[test]
fn a_regression_through_parallel_and_a_stub_sbatch_equals_the_one_run_here() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let out = ok(d, &[REGRESS, &["-o", "here"]].concat());
    assert!(out.ends_with("8 seeds run, 0 failed; table: here/collected.csv\ncollected: here/collected.json\n"), "{out}");
    let manifest = read(&d.join("here/jobs.jsonl"));
    let ids: Vec<String> = manifest.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["compress-p00-s0", "compress-p00-s2", "compress-p01-s0", "compress-p01-s2"]);
    // Each job names every parameter (hermetic), and its result records its argv.
    let first: Value = serde_json::from_str(manifest.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["argv"],
        serde_json::json!(["gpurtl", "cosim", "compress", "--param", "width=64", "--param", "latency=2", "--param", "stream=false",
                           "--seeds", "0..2", "-o", "here/compress-p00-s0"])
    );
    assert_eq!((&first["seed"], &first["cpus"]), (&Value::from(0), &Value::from(1)));
    for l in manifest.lines() {
        let j: Value = serde_json::from_str(l).unwrap();
        let r = json(&d.join("here").join(j["id"].as_str().unwrap()).join("result.json"));
        assert_eq!((&r["argv"], &r["status"], &r["passed"]), (&j["argv"], &Value::from("ok"), &Value::from(2)));
    }
    let want = read(&d.join("here/collected.json"));
    let rows = json(&d.join("here/collected.json"))["rows"].clone();
    assert_eq!(rows[2]["point"], "latency=1 width=64", "the second point is drawn from the table, width kept");

    if have_parallel() {
        ok(d, &[REGRESS, &["-o", "par", "--emit", "par.txt", "--emit-format", "parallel"]].concat());
        let (code, _, err) = run_in(d, "parallel", &["--joblog", "par/joblog", "--resume", "-j", "2"], Some("par.txt"), &path_with(&[&bin_dir()]));
        assert_eq!(code, 0, "{err}");
        ok(d, &["collect", "par"]);
        assert_eq!(read(&d.join("par/collected.json")), want);
    }

    let out = ok(d, &[REGRESS, &["-o", "sl", "--emit", "sl.sh", "--emit-format", "slurm"]].concat());
    assert_eq!(
        out,
        "4 jobs in sl/jobs.jsonl; slurm rendering in sl.sh\nrun from this folder (the jobs' paths are relative to it):\n  sbatch sl.sh\nthen: gpurtl collect sl\n"
    );
    let script = read(&d.join("sl.sh"));
    let directives: Vec<&str> = script.lines().filter(|l| l.starts_with("#SBATCH")).collect();
    assert_eq!(
        directives,
        [
            "#SBATCH --job-name=gpurtl-sl",
            "#SBATCH --array=0-3",
            "#SBATCH --cpus-per-task=1",
            "#SBATCH --mem=4096M",
            "#SBATCH --time=01:00:00",
            "#SBATCH --output=sl/slurm-%A_%a.out"
        ]
    );
    assert!(script.ends_with("exec gpurtl job sl/jobs.jsonl --index \"$index\"\n"), "{script}");
    let stub = d.join("stub");
    std::fs::create_dir(&stub).unwrap();
    std::fs::write(stub.join("sbatch"), SBATCH).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(stub.join("sbatch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, out, err) = run_in(d, "sbatch", &["sl.sh"], None, &path_with(&[&stub, &bin_dir()]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("job 3 (compress-p01-s2): gpurtl cosim compress --param width=64 --param latency=1"), "{err}");
    ok(d, &["collect", "sl"]);
    assert_eq!(read(&d.join("sl/collected.json")), want);
}

/// A failed job (its result says so), a missing one and one whose result
/// another manifest's job wrote: listed, the files written all the same,
/// exit 1; collecting again writes the same files.
#[test]
fn collect_names_missing_failed_and_stale_jobs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let args = ["regress", "compress", "--param", "width=64", "--seeds", "4", "--seeds-per-job", "1", "-o", "r", "--emit", "r.jsonl"];
    ok(d, &args);
    for i in ["0", "1", "2"] {
        let (code, _, err) = gpurtl(d, &["job", "r/jobs.jsonl", "--index", i]);
        assert_eq!(code, 0, "{err}");
    }
    // Job 1 failed; job 2's result is another command's; job 3 never ran.
    let r1 = d.join("r/compress-p00-s1/result.json");
    let mut v = json(&r1);
    v["status"] = "failed: 1 of 1 seeds (first: seed 1)".into();
    std::fs::write(&r1, v.to_string()).unwrap();
    let r2 = d.join("r/compress-p00-s2/result.json");
    let mut v = json(&r2);
    v["argv"][7] = "9..10".into();
    std::fs::write(&r2, v.to_string()).unwrap();
    let (code, out, err) = gpurtl(d, &["collect", "r"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err, "error: of 4 jobs: 2 missing (compress-p00-s2, compress-p00-s3), 1 failed (compress-p00-s1); see r/collected.json\n");
    assert_eq!(
        read(&d.join("r/collected.csv")),
        "id,block,point,seeds,passed,failed,status\n\
         compress-p00-s0,compress,\"width=64\",0..1,1,0,\"ok\"\n\
         compress-p00-s1,compress,\"width=64\",1..2,1,0,\"failed: 1 of 1 seeds (first: seed 1)\"\n\
         compress-p00-s2,compress,\"width=64\",2..3,,,\"missing: `r/compress-p00-s2/result.json` was written by another command (an earlier manifest's job); rerun the job\"\n\
         compress-p00-s3,compress,\"width=64\",3..4,,,\"missing: no result.json\"\n"
    );
    let c = json(&d.join("r/collected.json"));
    assert_eq!(c["missing"], serde_json::json!(["compress-p00-s2", "compress-p00-s3"]));
    assert_eq!(c["failed"], serde_json::json!(["compress-p00-s1"]));
    assert_eq!((&c["seeds_run"], &c["rows"].as_array().unwrap().len()), (&Value::from(2), &4));
    let before = read(&d.join("r/collected.json"));
    assert_eq!(gpurtl(d, &["collect", "r"]).0, 1);
    assert_eq!(read(&d.join("r/collected.json")), before);
}

/// `gpurtl job` sets the line's environment: a sweep point whose PATH
/// holds no yosys fails, and its result says why.
#[test]
fn a_job_runs_with_its_environment() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let line = r#"{"id":"run00","argv":["gpurtl","sweep","compress","--param","width=64","--target","generic","--clock-mhz","100","-o","s","--point","0"],"env":{"GPURTL_VENV":"/nonexistent","PATH":"/nonexistent"},"seed":null,"timeout_s":60,"cpus":1,"mem_mb":512,"outputs":["s/run00/result.json"]}"#;
    std::fs::write(d.join("m.jsonl"), format!("{line}\n")).unwrap();
    let (code, out, err) = gpurtl(d, &["job", "m.jsonl", "--index", "0"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.starts_with(
        "job 0 (run00): gpurtl sweep compress --param width=64 --target generic --clock-mhz 100 -o s --point 0\n"
    ), "{err}");
    let r = json(&d.join("s/run00/result.json"));
    assert_eq!(r["status"], "failed: yosys not found on PATH or in .venv: run `make deps` to install it");
    assert_eq!(r["point"], serde_json::json!({"width": "64"}));
}

/// Every bad argument: exit 2, a message naming the option, the value and
/// what is allowed, and nothing written.
#[test]
fn bad_arguments_are_usage_errors_that_write_nothing() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("f.txt"), "x").unwrap();
    let good = r#"{"id":"a","argv":["python3","x.py"],"env":{},"seed":null,"timeout_s":5,"cpus":1,"mem_mb":1,"outputs":[]}"#;
    std::fs::write(d.join("m.jsonl"), format!("{good}\n")).unwrap();
    let bad = [
        r#"{"id":"a","argv":["gpurtl"],"env":{},"seed":null,"timeout_s":0,"cpus":1,"mem_mb":1,"outputs":[]}"#,
        "not json",
        r#"{"id":"b","argv":["gpurtl"],"env":{},"seed":1,"timeout_s":5,"cpus":1,"mem_mb":1,"outputs":[]}"#,
        r#"{"id":"b","argv":["gpurtl"],"env":{},"seed":2,"timeout_s":5,"cpus":1,"mem_mb":1}"#,
        r#"{"id":"b","argv":["gpurtl"],"env":{},"seed":2,"timeout_s":5,"cpus":1,"mem_mb":1,"outputs":[]}"#,
    ];
    std::fs::write(d.join("bad.jsonl"), bad.join("\n")).unwrap();
    const SEEDS: &str = "must be a count N (seeds 0 to N-1) or a range A..B (seeds A to B-1) with A < B";
    let sw = ["sweep", "compress", "--param", "width=64,128", "--target", "generic"];
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["regress", "compress", "--emit", "x.txt", "--emit-format", "yaml"], "option `--emit-format` = `yaml`: must be jsonl, parallel, slurm, make or gha".into()),
        (vec!["regress", "compress", "--points", "0"], "option `--points` = `0`: must be an integer from 1 to 1000".into()),
        (vec!["regress", "compress", "--seeds", "5..5"], format!("option `--seeds` = `5..5`: {SEEDS}")),
        (vec!["regress", "compress", "--seeds", "7..3"], format!("option `--seeds` = `7..3`: {SEEDS}")),
        (vec!["regress", "compress", "--seeds", "0"], format!("option `--seeds` = `0`: {SEEDS}")),
        (vec!["regress", "compress", "--seeds-per-job", "0"], "option `--seeds-per-job` = `0`: must be an integer from 1 to 1000000000".into()),
        (vec!["regress", "compress", "--emit-format", "make"], "option `--emit-format` needs `--emit FILE`".into()),
        (vec!["regress", "compress", "--timeout-s", "0"], "option `--timeout-s` = `0`: must be an integer from 1 to 2592000".into()),
        (vec!["regress", "compress", "--mem-mb", "lots"], "option `--mem-mb` = `lots`: must be an integer from 1 to 16777216".into()),
        (vec!["regress", "compress", "--points-seed", "-1"], "option `--points-seed` = `-1`: must be an integer from 0 to 18446744073709551615".into()),
        (
            vec!["regress", "compress", "--seeds", "1000000", "--seeds-per-job", "1"],
            "`regress` would emit 1000000 jobs (1 point(s) x 1000000 seeds in ranges of 1); at most 10000: fewer points or seeds, or more seeds a job (`--seeds-per-job`)".into(),
        ),
        (vec!["regress", "--all", "compress"], "`regress --all` draws the points of every block and takes no block or parameters".into()),
        (
            vec!["regress", "compress", "--points", "50", "--param", "width=64", "--param", "latency=1", "-o", "r"],
            "option `--points` = `50`: only 2 distinct valid points of block `compress` with --param width=64 --param latency=1 of at most 12000 lines of Verilog were found in 2000 draws; ask for fewer".into(),
        ),
        (vec!["regress", "compress", "--emit", "no/such/x.txt"], "option `--emit` = `no/such/x.txt`: the directory `no/such` does not exist".into()),
        (vec!["regress", "compress", "-o", "f.txt"], "option `--out` = `f.txt`: is a file; must be a folder (made when missing)".into()),
        (vec!["regress", "compress", "--seed", "3"], "option `--seed` is not used by `regress`; see `gpurtl regress --help`".into()),
        (vec!["cosim", "compress"], "the seeds are needed: `--seeds N` (seeds 0 to N-1), `--seeds A..B` (A to B-1) or `--seed N`".into()),
        (vec!["cosim", "compress", "--seeds", "3", "--seed", "1"], "options `--seed` and `--seeds`: give one of them, not both".into()),
        (vec!["cosim", "compress", "--seeds", "9..2", "-o", "c"], format!("option `--seeds` = `9..2`: {SEEDS}")),
        (vec!["cosim", "compress", "--seed", "x"], "option `--seed` = `x`: must be an integer from 0 to 18446744073709551614".into()),
        (vec!["collect"], "`collect` needs the jobs' folder: `gpurtl collect DIR`".into()),
        (vec!["collect", "nowhere"], "argument `DIR` = `nowhere`: does not exist; must be the `-o` folder of `gpurtl sweep ... --emit` or `gpurtl regress`".into()),
        (vec!["collect", "f.txt"], "argument `DIR` = `f.txt`: is not a folder; must be the `-o` folder of `gpurtl sweep ... --emit` or `gpurtl regress`".into()),
        (vec!["collect", "."], "argument `DIR` = `.`: holds no `jobs.jsonl`; must be the `-o` folder of `gpurtl sweep ... --emit` or `gpurtl regress`".into()),
        (vec!["collect", "--param", "a=1", "."], "option `--param` is not used by `collect`; see `gpurtl collect --help`".into()),
        (vec!["job"], "`job` needs a manifest: `gpurtl job MANIFEST --index N`".into()),
        (vec!["job", "m.jsonl"], "`job` needs `--index N`: `gpurtl job MANIFEST --index N`".into()),
        (vec!["job", "m.jsonl", "--index", "1"], "option `--index` = `1`: the manifest `m.jsonl` holds 1 jobs; must be an integer from 0 to 0".into()),
        (
            vec!["job", "m.jsonl", "--index", "0"],
            "manifest `m.jsonl`: job 0 (`a`): argv[0] = `python3`: must be `gpurtl`; `gpurtl job` runs gpurtl commands".into(),
        ),
        (
            vec!["job", "bad.jsonl", "--index", "0"],
            "manifest `bad.jsonl`: line 1: field `timeout_s` = 0: must be an integer from 1 to 2592000\n\
             error: manifest `bad.jsonl`: line 2: not valid JSON: expected ident at line 1 column 2\n\
             error: manifest `bad.jsonl`: line 4: field `outputs`: missing\n\
             error: manifest `bad.jsonl`: line 5: field `id` = \"b\": is the id of line 3's job too; ids must be distinct"
                .into(),
        ),
        (vec!["job", "nothing.jsonl", "--index", "0"], "argument `MANIFEST` = `nothing.jsonl`: cannot be read: No such file or directory (os error 2)".into()),
        ([&sw[..], &["--point", "0", "--emit", "a.txt"]].concat(), "options `--point` and `--emit`: give one of them (`--emit` writes the jobs, `--point` runs one)".into()),
        ([&sw[..], &["--point", "2", "-o", "s"]].concat(), "option `--point` = `2`: the sweep has 2 points; must be from 0 to 1".into()),
        ([&sw[..], &["--point", "x"]].concat(), "option `--point` = `x`: must be the index of a point of the sweep, from 0".into()),
        ([&sw[..], &["--timeout-s", "9"]].concat(), "option `--timeout-s` is a job's resource: it needs `--emit FILE`".into()),
        (
            [&sw[..], &["--emit", "a.mk", "--emit-format", "make", "-o", "my dir"]].concat(),
            "option `--out` = `my dir`: holds ` `; the `make` rendering needs a path of letters, digits and `._-/+@,` only (a Makefile target cannot hold it)".into(),
        ),
        (
            [&sw[..], &["--emit", "a.sh", "--emit-format", "slurm", "-o", "a%b"]].concat(),
            "option `--out` = `a%b`: holds `%`; the `slurm` rendering needs a path of letters, digits and `._-/+@,` only (an `#SBATCH --output` line holds it unquoted, and Slurm reads `%` as a pattern)".into(),
        ),
        (
            [&sw[..], &["--emit", "s/jobs.jsonl", "--emit-format", "parallel", "-o", "s"]].concat(),
            "option `--emit` = `s/jobs.jsonl`: is the manifest `s/jobs.jsonl` this command writes; must be another file for the `parallel` rendering".into(),
        ),
    ];
    for (args, want) in &cases {
        let (code, out, err) = gpurtl(d, args);
        assert_eq!((code, err.as_str(), out.as_str()), (2, format!("error: {want}\n").as_str(), ""), "gpurtl {}", args.join(" "));
    }
    let mut left: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["bad.jsonl", "f.txt", "m.jsonl"], "an error writes nothing");
}

/// The `--emit` file may be in the jobs' folder, which the command makes,
/// and may be the manifest itself in its own format, never in another.
#[test]
fn the_emitted_file_is_not_the_manifest_in_another_format() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["regress", "compress", "--seeds", "2", "-o", "r", "--emit", "r/jobs.jsonl"]);
    let manifest = read(&d.join("r/jobs.jsonl"));
    assert_eq!(manifest.lines().count(), 1);
    let (code, _, err) = gpurtl(d, &["regress", "compress", "--seeds", "2", "-o", "r", "--emit", "r/jobs.jsonl", "--emit-format", "make"]);
    assert_eq!(
        (code, err.as_str()),
        (2, "error: option `--emit` = `r/jobs.jsonl`: is the manifest `r/jobs.jsonl` this command writes; must be another file for the `make` rendering\n")
    );
    assert_eq!(read(&d.join("r/jobs.jsonl")), manifest);
}
