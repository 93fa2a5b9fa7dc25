//! End-to-end tests of the Verilator cosimulation harness: every test builds
//! real hand-written Verilog with Verilator and drives it through `Sim`.
//! Each test uses its own module names so cache entries never collide.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use gpurtl_sim::cosim::{
    compile, compile_traced, verilator_version, Compiled, CosimError, DesignSpec, PortDir, PortSpec, Sim,
};
use num_bigint::BigUint;

fn input(name: &str, width: u32) -> PortSpec {
    PortSpec {
        name: name.into(),
        width,
        dir: PortDir::Input,
    }
}

fn output(name: &str, width: u32) -> PortSpec {
    PortSpec {
        name: name.into(),
        width,
        dir: PortDir::Output,
    }
}

fn spec(top: &str, verilog: &str, ports: Vec<PortSpec>) -> DesignSpec {
    DesignSpec {
        top: top.into(),
        verilog: verilog.into(),
        ports,
        clock: "clk_i".into(),
    }
}

/// 8-bit counter with enable and synchronous active-high reset.
fn counter_spec(top: &str) -> DesignSpec {
    let verilog = format!(
        "module {top} (
  input  wire       clk_i,
  input  wire       rst_i,
  input  wire       en_i,
  output reg  [7:0] count_o
);
  always @(posedge clk_i) begin
    if (rst_i) count_o <= 8'd0;
    else if (en_i) count_o <= count_o + 8'd1;
  end
endmodule
"
    );
    spec(
        top,
        &verilog,
        vec![
            input("clk_i", 1),
            input("rst_i", 1),
            input("en_i", 1),
            output("count_o", 8),
        ],
    )
}

#[test]
fn counter_counts_resets_and_holds() {
    let design = compile(&counter_spec("smoke_counter")).expect("build counter");
    let mut sim = design.instantiate().unwrap();
    let (rst, en, count) = (
        sim.port("rst_i").unwrap(),
        sim.port("en_i").unwrap(),
        sim.port("count_o").unwrap(),
    );
    assert_eq!(count.width(), 8);
    assert_eq!(count.dir(), PortDir::Output);

    // Synchronous reset: takes effect at the clock edge, not before.
    sim.set(rst, 1);
    sim.set(en, 1);
    sim.tick();
    assert_eq!(sim.get(count), 0);
    assert_eq!(sim.cycle(), 1);
    sim.set(rst, 0);
    sim.eval();
    assert_eq!(sim.get(count), 0, "no edge yet");

    for expected in 1..=5u64 {
        sim.tick();
        assert_eq!(sim.get(count), expected);
    }
    sim.set(en, 0);
    for _ in 0..3 {
        sim.tick();
        assert_eq!(sim.get(count), 5, "disabled counter must hold");
    }
    sim.set(en, 1);
    for i in 0..300u64 {
        sim.tick();
        assert_eq!(sim.get(count), (5 + i + 1) % 256, "wraps at 8 bits");
    }
    // Reset again mid-count.
    sim.set(rst, 1);
    sim.eval();
    assert_ne!(sim.get(count), 0);
    sim.tick();
    assert_eq!(sim.get(count), 0);
    assert_eq!(sim.cycle(), 1 + 5 + 3 + 300 + 1);
    assert!(!sim.finished());

    // Unknown ports are reported, not panicked on.
    match sim.port("nope") {
        Err(CosimError::UnknownPort(p)) => assert_eq!(p, "nope"),
        other => panic!("expected UnknownPort, got {other:?}"),
    }
}

#[test]
fn counter_throughput() {
    // Not an assertion, just a number for `--nocapture`.
    let design = compile(&counter_spec("smoke_counter")).expect("build counter");
    let mut sim = design.instantiate().unwrap();
    let (rst, en, count) = (
        sim.port("rst_i").unwrap(),
        sim.port("en_i").unwrap(),
        sim.port("count_o").unwrap(),
    );
    sim.set(rst, 0);
    sim.set(en, 1);
    const N: u64 = 2_000_000;

    let t = Instant::now();
    for _ in 0..N {
        sim.tick();
    }
    let tick_only = N as f64 / t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut acc = 0u64;
    for i in 0..N {
        sim.set(en, i & 1);
        sim.eval();
        acc = acc.wrapping_add(sim.get(count));
        sim.tick();
    }
    let full = N as f64 / t.elapsed().as_secs_f64();
    println!(
        "counter: {:.2} M cycles/s tick-only, {:.2} M cycles/s with set+eval+get+tick (acc {acc})",
        tick_only / 1e6,
        full / 1e6
    );
}

fn wide_spec() -> DesignSpec {
    let verilog = "
module smoke_wide (
  input  wire        clk_i,
  input  wire [99:0] a_i,
  output reg  [99:0] a_o,
  input  wire [39:0] b_i,
  output wire [39:0] b_o,
  input  wire        c_i,
  output reg         c_o
);
  always @(posedge clk_i) begin
    a_o <= a_i + 100'd1;
    c_o <= c_i;
  end
  assign b_o = ~b_i;
endmodule
";
    spec(
        "smoke_wide",
        verilog,
        vec![
            input("clk_i", 1),
            input("a_i", 100),
            output("a_o", 100),
            input("b_i", 40),
            output("b_o", 40),
            input("c_i", 1),
            output("c_o", 1),
        ],
    )
}

#[test]
fn wide_ports_round_trip() {
    let design = compile(&wide_spec()).expect("build wide design");
    let mut sim = design.instantiate().unwrap();
    let a_i = sim.port("a_i").unwrap();
    let a_o = sim.port("a_o").unwrap();
    let b_i = sim.port("b_i").unwrap();
    let b_o = sim.port("b_o").unwrap();
    let c_i = sim.port("c_i").unwrap();
    let c_o = sim.port("c_o").unwrap();
    assert_eq!(a_i.words(), 4);
    assert_eq!(b_i.words(), 2);

    let one = BigUint::from(1u32);
    let modulus = &one << 100u32;
    let all_ones = &modulus - &one;
    let values = [
        BigUint::from(0u32),
        BigUint::from(1u32),
        BigUint::from(u32::MAX), // carry into word 1
        BigUint::from(u64::MAX), // carry into word 2
        &one << 64u32,           // 2^64
        (&one << 96u32) - &one,  // carry into the partial top word
        &one << 99u32,           // 2^99, top bit
        all_ones.clone(),        // wraps to 0
        BigUint::parse_bytes(b"0123456789abcdef0123456789", 16).unwrap(),
    ];
    let mut words = Vec::new();
    for v in &values {
        sim.set_big(a_i, v);
        sim.eval();
        assert_eq!(&sim.get_big(a_i), v, "input readback");
        sim.tick();
        let expected = (v + &one) % &modulus;
        assert_eq!(sim.get_big(a_o), expected, "a_o after a_i = {v:#x}");
        // Low 64 bits through `get`, and the word view.
        assert_eq!(
            sim.get(a_o),
            u64::try_from(&expected % (&one << 64u32)).unwrap()
        );
        sim.get_words(a_o, &mut words);
        assert_eq!(words.len(), 4);
        assert_eq!(BigUint::from_slice(&words), expected);
    }

    // set_words with a short slice zero-fills the upper words.
    sim.set_words(a_i, &[0xdead_beef, 0x1234_5678]);
    sim.tick();
    sim.get_words(a_o, &mut words);
    assert_eq!(words, [0xdead_bef0, 0x1234_5678, 0, 0]);
    // set() on a wide port zero-extends.
    sim.set(a_i, u64::MAX);
    sim.tick();
    assert_eq!(sim.get_big(a_o), &one << 64u32);

    // 40-bit port, combinational, across the 32-bit word boundary.
    let mask40 = (1u64 << 40) - 1;
    for v in [
        0u64,
        1,
        0xff_ffff_ffff,
        0xab_cdef_0123,
        1 << 32,
        (1 << 32) - 1,
    ] {
        sim.set(b_i, v);
        sim.eval();
        assert_eq!(sim.get(b_o), !v & mask40);
        sim.get_words(b_o, &mut words);
        assert_eq!(words, [(!v & mask40) as u32, ((!v & mask40) >> 32) as u32]);
        sim.set_big(b_i, &BigUint::from(v));
        sim.eval();
        assert_eq!(sim.get_big(b_o), BigUint::from(!v & mask40));
        sim.set_words(b_i, &[v as u32, (v >> 32) as u32]);
        sim.eval();
        assert_eq!(sim.get(b_o), !v & mask40);
    }

    // 1-bit registered port.
    for v in [1u64, 0, 1] {
        sim.set(c_i, v);
        sim.tick();
        assert_eq!(sim.get(c_o), v);
        assert_eq!(sim.get_big(c_o), BigUint::from(v));
    }

    // Too-wide values are reported by the checked setters.
    match sim.try_set(c_i, 2) {
        Err(CosimError::Width {
            port,
            width,
            value_bits,
        }) => {
            assert_eq!((port.as_str(), width, value_bits), ("c_i", 1, 2));
        }
        other => panic!("expected Width error, got {other:?}"),
    }
    match sim.try_set_big(a_i, &modulus) {
        Err(CosimError::Width {
            port,
            width,
            value_bits,
        }) => {
            assert_eq!((port.as_str(), width, value_bits), ("a_i", 100, 101));
        }
        other => panic!("expected Width error, got {other:?}"),
    }
    assert!(sim.try_set_words(b_i, &[0, 0xff]).is_ok());
    assert!(sim.try_set_words(b_i, &[0, 0x100]).is_err());
}

/// Two different designs with the *same* module name: they only stay apart
/// if each library binds to its own copy of every symbol.
fn pair_spec(step: &str) -> DesignSpec {
    let verilog = format!(
        "module smoke_pair (
  input  wire        clk_i,
  input  wire [15:0] load_i,
  input  wire        load_en_i,
  output reg  [15:0] value_o
);
  always @(posedge clk_i) begin
    if (load_en_i) value_o <= load_i;
    else value_o <= value_o {step};
  end
endmodule
"
    );
    spec(
        "smoke_pair",
        &verilog,
        vec![
            input("clk_i", 1),
            input("load_i", 16),
            input("load_en_i", 1),
            output("value_o", 16),
        ],
    )
}

#[test]
fn two_designs_and_parallel_instances() {
    let up = compile(&pair_spec("+ 16'd1")).expect("build up-counter");
    let down = compile(&pair_spec("- 16'd3")).expect("build down-counter");
    assert_ne!(up.build_dir(), down.build_dir());

    // Interleaved use of both libraries from one thread.
    let mut a = up.instantiate().unwrap();
    let mut b = down.instantiate().unwrap();
    for sim in [&mut a, &mut b] {
        let (load, load_en) = (sim.port("load_i").unwrap(), sim.port("load_en_i").unwrap());
        sim.set(load, 1000);
        sim.set(load_en, 1);
        sim.tick();
        sim.set(load_en, 0);
    }
    for _ in 0..10 {
        a.tick();
        b.tick();
    }
    assert_eq!(a.get(a.port("value_o").unwrap()), 1010);
    assert_eq!(b.get(b.port("value_o").unwrap()), 970);

    // Several instances of one design, created here, driven concurrently
    // from other threads (each with its own Verilator context).
    const CYCLES: u64 = 200_000;
    let start = Arc::new(Barrier::new(3));
    let mut handles = Vec::new();
    for (t, design) in [(0u64, &up), (1, &up), (2, &down)] {
        let mut sim = design.instantiate().unwrap();
        let start = start.clone();
        handles.push(std::thread::spawn(move || {
            let load = sim.port("load_i").unwrap();
            let load_en = sim.port("load_en_i").unwrap();
            let value = sim.port("value_o").unwrap();
            let seed = 100 * t;
            sim.set(load, seed);
            sim.set(load_en, 1);
            sim.tick();
            sim.set(load_en, 0);
            start.wait();
            // Re-load periodically so the threads follow different paths.
            let mut model = seed;
            for i in 0..CYCLES {
                if i % 1000 == 999 {
                    sim.set(load, i & 0xffff);
                    sim.set(load_en, 1);
                    sim.tick();
                    sim.set(load_en, 0);
                    model = i & 0xffff;
                } else {
                    sim.tick();
                    model = if t == 2 {
                        model.wrapping_sub(3)
                    } else {
                        model + 1
                    } & 0xffff;
                }
                if sim.get(value) != model {
                    return Err(format!(
                        "thread {t}: cycle {i}: got {}, want {model}",
                        sim.get(value)
                    ));
                }
            }
            Ok(sim.cycle())
        }));
    }
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(CYCLES + 1));
    }
}

#[test]
fn vcd_trace_has_header_and_signals() {
    let design = compile_traced(&counter_spec("smoke_traced")).expect("build traced counter");
    assert!(design.traced());
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.vcd");
    let second = dir.path().join("second.vcd");

    let mut sim = design.instantiate().unwrap();
    let (rst, en) = (sim.port("rst_i").unwrap(), sim.port("en_i").unwrap());
    sim.set(rst, 1);
    sim.tick();
    sim.set(rst, 0);
    sim.set(en, 1);
    sim.trace_vcd(&first).unwrap();
    for _ in 0..20 {
        sim.tick();
    }
    sim.trace_close();
    let text = std::fs::read_to_string(&first).unwrap();
    assert!(
        text.contains("$enddefinitions"),
        "VCD header missing:\n{text}"
    );
    for name in ["clk_i", "rst_i", "en_i", "count_o"] {
        assert!(
            text.contains(name),
            "signal {name} missing from VCD:\n{text}"
        );
    }
    // Cycle 1 is the first traced tick: samples at 10 and 15, up to cycle 20.
    assert!(
        text.contains("\n#10\n") && text.contains("\n#15\n"),
        "{text}"
    );
    assert!(
        text.contains("\n#205\n") && text.contains("\n#210\n"),
        "{text}"
    );

    // A second trace on the same instance, closed by dropping the Sim.
    sim.trace_vcd(&second).unwrap();
    sim.tick();
    drop(sim);
    let text = std::fs::read_to_string(&second).unwrap();
    assert!(
        text.contains("$enddefinitions") && text.contains("count_o"),
        "{text}"
    );
    assert!(text.contains("\n#215\n"), "{text}");

    // An unwritable path is an error, not a crash.
    let mut sim = design.instantiate().unwrap();
    let bad = dir.path().join("no/such/dir/x.vcd");
    assert!(matches!(sim.trace_vcd(&bad), Err(CosimError::Io(_))));
}

/// A design built without tracing (`compile`, the default) cannot start a
/// waveform on a running instance, with a message saying how; `start` with a
/// VCD path runs that instance on the traced copy: the same handles, the
/// same values, and the waveform written.
#[test]
fn untraced_build_writes_a_waveform_through_its_traced_copy() {
    let design = compile(&counter_spec("smoke_untraced")).expect("build counter");
    assert!(!design.traced());
    let dir = tempfile::tempdir().unwrap();
    let vcd = dir.path().join("w.vcd");
    let mut plain = design.instantiate().unwrap();
    match plain.trace_vcd(&vcd) {
        Err(CosimError::Io(m)) => assert!(m.contains("was built without tracing") && m.contains("Compiled::start"), "{m}"),
        other => panic!("expected an error, got {other:?}"),
    }
    let mut traced = design.start(Some(&vcd)).unwrap();
    let (rst, en, count) = (design.port("rst_i").unwrap(), design.port("en_i").unwrap(), design.port("count_o").unwrap());
    for sim in [&mut plain, &mut traced] {
        sim.set(rst, 1);
        sim.tick();
        sim.set(rst, 0);
        sim.set(en, 1);
        for _ in 0..7 {
            sim.tick();
        }
    }
    assert_eq!(plain.get(count), traced.get(count));
    assert_eq!(traced.get(count), 7);
    drop(traced);
    let text = std::fs::read_to_string(&vcd).unwrap();
    assert!(text.contains("$enddefinitions") && text.contains("count_o") && text.contains("\n#75\n"), "{text}");
}

#[test]
fn syntax_error_is_a_build_error_with_verilator_text() {
    let verilog =
        "module smoke_broken(input wire clk_i, output wire x_o);\n  assign x_o = ;\nendmodule\n";
    let spec = spec(
        "smoke_broken",
        verilog,
        vec![input("clk_i", 1), output("x_o", 1)],
    );
    match compile(&spec) {
        Err(e @ CosimError::Build { .. }) => {
            let CosimError::Build { log_path, message } = &e else {
                unreachable!()
            };
            assert!(message.contains("%Error"), "{message}");
            assert!(message.contains("syntax error"), "{message}");
            assert!(log_path.is_file(), "log {} missing", log_path.display());
            let log = std::fs::read_to_string(log_path).unwrap();
            assert!(log.contains("syntax error"));
            let shown = e.to_string();
            assert!(
                shown.contains(&log_path.display().to_string()) && shown.contains("syntax error")
            );
        }
        Err(other) => panic!("expected a build error, got {other}"),
        Ok(_) => panic!("broken Verilog compiled"),
    }
}

#[test]
fn port_list_mismatches_are_reported() {
    let verilog = "module smoke_mismatch(input wire clk_i, input wire [15:0] d_i, output wire [15:0] q_o);\n  assign q_o = d_i;\nendmodule\n";
    // Width in the wrong storage class: caught when compiling the shim.
    let wrong_width = spec(
        "smoke_mismatch",
        verilog,
        vec![input("clk_i", 1), input("d_i", 8), output("q_o", 16)],
    );
    match compile(&wrong_width) {
        Err(CosimError::Build { message, .. }) => {
            assert!(
                message.contains("`d_i` is declared 8 bits wide"),
                "{message}"
            )
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    // Clock missing from the port list.
    let mut no_clock = spec(
        "smoke_mismatch",
        verilog,
        vec![input("d_i", 16), output("q_o", 16)],
    );
    no_clock.clock = "clk_i".into();
    assert!(matches!(compile(&no_clock), Err(CosimError::UnknownPort(p)) if p == "clk_i"));
}

#[test]
fn finish_and_stop_only_flag_the_instance() {
    // Verilator's stock handlers exit(0) on a second $finish and abort() on
    // $stop; the harness must survive both and report them per instance.
    let verilog = "
module smoke_finish (
  input  wire       clk_i,
  input  wire       stop_i,
  output reg  [3:0] cnt_o
);
  initial cnt_o = 4'd0;
  always @(posedge clk_i) begin
    cnt_o <= cnt_o + 4'd1;
    if (cnt_o >= 4'd2) begin
      if (stop_i) $stop;
      else $finish;
    end
  end
endmodule
";
    let spec = spec(
        "smoke_finish",
        verilog,
        vec![input("clk_i", 1), input("stop_i", 1), output("cnt_o", 4)],
    );
    let design = compile(&spec).expect("build finish design");
    for stop in [0, 1] {
        let mut sim = design.instantiate().unwrap();
        let mut other = design.instantiate().unwrap();
        sim.set(sim.port("stop_i").unwrap(), stop);
        for i in 0..10 {
            sim.tick();
            assert_eq!(sim.finished(), i >= 2, "stop={stop} tick {i}");
        }
        other.tick();
        assert!(
            !other.finished(),
            "another instance must not see the $finish"
        );
        // The model keeps running; it is up to the caller to stop.
        assert_eq!(sim.get(sim.port("cnt_o").unwrap()), 10);
    }
}

#[test]
fn error_messages_are_readable() {
    let e = CosimError::ToolMissing("verilator".into());
    assert_eq!(
        e.to_string(),
        "verilator not found on PATH: run `make deps` to install it"
    );
    let e = CosimError::Width {
        port: "a_i".into(),
        width: 4,
        value_bits: 7,
    };
    assert!(e.to_string().contains("`a_i`"));
    assert!(verilator_version().unwrap().starts_with("Verilator"));

    // Compiled designs are shared between threads, instances move to them.
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Compiled>();
    send::<Sim>();
    send_sync::<CosimError>();
}

const CHILD_ENV: &str = "GPURTL_COSIM_SMOKE_CHILD";

fn cache_spec() -> DesignSpec {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("race") => counter_spec("smoke_raced"),
        _ => counter_spec("smoke_cached"),
    }
}

/// Helper for `cache_is_reused_across_processes`: does nothing unless
/// spawned by it.
#[test]
fn cache_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let design = compile(&cache_spec()).expect("child build");
    let mut sim = design.instantiate().unwrap();
    let en = sim.port("en_i").unwrap();
    sim.set(en, 1);
    sim.tick();
    sim.tick();
    assert_eq!(sim.get(sim.port("count_o").unwrap()), 2);
    println!("BUILD_DIR={}", design.build_dir().display());
}

fn spawn_child(cache: &std::path::Path, which: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["cache_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, which)
        .env("GPURTL_COSIM_CACHE", cache)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The child's build directory and its stderr.
fn child_result(child: std::process::Child) -> (PathBuf, String) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("BUILD_DIR=").map(|(_, dir)| dir))
        .unwrap_or_else(|| panic!("no BUILD_DIR in child output:\n{stdout}"));
    (PathBuf::from(line), stderr)
}

fn run_child(cache: &std::path::Path) -> PathBuf {
    child_result(spawn_child(cache, "1")).0
}

#[test]
fn cache_is_reused_across_processes() {
    // A private cache root, used only by the child processes.
    let cache = tempfile::tempdir().unwrap();
    let dir1 = run_child(cache.path());
    assert!(
        dir1.starts_with(cache.path().canonicalize().unwrap()),
        "{}",
        dir1.display()
    );
    let log = dir1.join("build.log");
    let lib = std::fs::read_dir(&dir1)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "so"))
        .expect("shared library in build dir");
    let log_mtime = std::fs::metadata(&log).unwrap().modified().unwrap();
    let lib_mtime = std::fs::metadata(&lib).unwrap().modified().unwrap();

    let dir2 = run_child(cache.path());
    assert_eq!(dir1, dir2);
    assert_eq!(
        std::fs::metadata(&log).unwrap().modified().unwrap(),
        log_mtime,
        "rebuilt"
    );
    assert_eq!(
        std::fs::metadata(&lib).unwrap().modified().unwrap(),
        lib_mtime,
        "relinked"
    );
    // Only the runtime and this one design were ever built there (beside
    // the folder of lock files).
    let entries = || -> Vec<String> {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|e| e != ".locks")
            .collect()
    };
    assert_eq!(entries().len(), 2, "{:?}", entries());
    assert!(
        entries().iter().any(|e| e.starts_with("runtime-")),
        "{:?}",
        entries()
    );

    // Two processes wanting a new design at the same time: one builds it,
    // the other waits for that build instead of building it too.
    let (a, b) = (spawn_child(cache.path(), "race"), spawn_child(cache.path(), "race"));
    let ((dir_a, err_a), (dir_b, err_b)) = (child_result(a), child_result(b));
    assert_eq!(dir_a, dir_b);
    let builds = |err: &str| err.lines().filter(|l| l.starts_with("gpurtl: building `smoke_raced`")).count();
    assert_eq!(builds(&err_a) + builds(&err_b), 1, "{err_a}\n{err_b}");
    assert_eq!(entries().len(), 3, "{:?}", entries());

    // In-process: the second compile returns the memoized library.
    let a = compile(&cache_spec()).unwrap();
    let b = compile(&cache_spec()).unwrap();
    assert_eq!(a.build_dir(), b.build_dir());
}
