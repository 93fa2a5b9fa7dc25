//! Compute unit: cosimulation of the generated Verilog against the golden
//! model (docs/cu.md) over random kernels that reach every instruction and
//! every error, at several parameter points, with random memory latency and
//! back-pressure; planted bugs; lint and synthesis; the example.

use gpurtl_gen::rtl_engine::{compile_design, spec};
use gpurtl_hw::blocks::cu::build;
use gpurtl_params::cu::{CuParams, Status};
use gpurtl_params::{BlockParams, MemIf};
use gpurtl_sim::cosim::{compile, Compiled};
use gpurtl_sim::models::cu::{self as model, io, Outcome, Run};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::cu::{self as tb, Env, Planted};
use gpurtl_tests::{failure_dir, seeds};
use serde_json::Value;
use std::path::Path;

const SEEDS: u64 = 200;

fn points() -> Vec<(&'static str, CuParams)> {
    let d = CuParams::default();
    vec![
        ("default", d.clone()),
        ("small", CuParams::presets()[1].1.clone()),
        ("wide", CuParams::presets()[2].1.clone()),
        // Three slots over two banks, three reads in flight, a short store.
        // A 3 x 2 grid, K up to 32.
        (
            "odd",
            CuParams {
                slots: 3,
                regs: 32,
                imem_depth: 32,
                banks: 2,
                words: 256,
                max_outstanding: 3,
                tag_bits: 2,
                grid_rows: 3,
                grid_cols: 2,
                kmax: 32,
                tex: true,
                ..CuParams::default()
            },
        ),
        // mem_if = axi4 (docs/memory.md), at `small` (a quick Verilator
        // build; the adapters are the same at any size): the program loads
        // gathered from a 32-bit port; and split from a 128-bit one, cdl,
        // ld and st in its lanes, three reads in flight.
        ("axi32", CuParams { mem_if: MemIf::Axi4, axi_bits: 32, ..CuParams::presets()[1].1.clone() }),
        ("axi128", CuParams { mem_if: MemIf::Axi4, axi_bits: 128, max_outstanding: 3, ..CuParams::presets()[1].1.clone() }),
    ]
}

/// What must agree. At fixed latency without stalls: the whole output file
/// (memory, blocks, trace with cycles, counters, cycles). With a random
/// environment the timing, the shares the blocks land in, and the program
/// loads (which depend on them) may differ: the memory, each block's status
/// and pc, each block's instructions in order, and the operation counts.
fn view(p: &CuParams, r: &Run, o: &Outcome, timed: bool) -> Value {
    let mut v = io::output_json(p, r, o);
    if !timed {
        let per_block: Vec<Vec<(u32, u64)>> = (0..o.blocks.len())
            .map(|b| {
                // The trace entries of block b: those of its share between its
                // dispatch and its completion.
                let br = &o.blocks[b];
                o.trace
                    .iter()
                    .filter(|t| t.slot == br.share && t.cycle > br.dispatch_cycle && t.cycle <= br.complete_cycle)
                    .map(|t| (t.pc, t.insn))
                    .collect()
            })
            .collect();
        let blocks: Vec<Value> = o.blocks.iter().map(|b| serde_json::json!([b.id, b.status.name(), b.pc])).collect();
        let k = &o.counters;
        v = serde_json::json!({
            "dumps": v["dumps"], "blocks": blocks, "trace": per_block,
            "counters": [k.instructions, k.cdl, k.ld, k.st, k.act, k.cmp, k.exp, k.mma, k.wr_beats],
        });
    }
    v
}

/// The first seed of `seeds` whose RTL run differs from the model's, with what differs.
fn first_mismatch(compiled: &Compiled, p: &CuParams, seeds: &[u64], stats: &mut [usize; 8], ops: &mut [u64; 12]) -> Option<(u64, String, Run, Option<Env>)> {
    for &seed in seeds {
        let mut rng = Rng::new(seed * 7919 + p.slots as u64 * 31 + p.banks as u64);
        let plant = Planted::ALL[(seed % Planted::ALL.len() as u64) as usize];
        let blocks = 1 + rng.below(2 * p.slots as u64 + 1) as usize;
        let r = tb::random_run(&mut rng, p, blocks, plant);
        let env = (seed % 4 != 0).then(|| Env {
            seed,
            latency: (1, 1 + rng.below(24) as u32),
            req_stall: rng.below(50) as u32,
            rsp_stall: rng.below(50) as u32,
            dsp_stall: rng.below(50) as u32,
            cpl_stall: rng.below(50) as u32,
        });
        let want = match model::run(p, &r) {
            Ok(o) => o,
            Err(e) => return Some((seed, format!("the model refused the run: {e}"), r, env)),
        };
        for b in &want.blocks {
            stats[b.status as usize] += 1;
        }
        let k = &want.counters;
        // `ld ..., zmap` and `mma ..., skip` as issued (op and imm bit).
        let issued = |op: u64, bit: u32| want.trace.iter().filter(|t| t.insn & 0xFF == op && (t.insn >> (32 + bit)) & 1 == 1).count() as u64;
        let (zmaps, skips) = (issued(0x60, 8), issued(0x70, 14));
        for (o, v) in ops.iter_mut().zip([k.cdl, k.ld, k.st, k.act, k.cmp, k.exp, k.mma, k.tex, k.texel_fetches, k.wr_beats, zmaps, skips]) {
            *o += v;
        }
        match tb::run(compiled, p, &r, env, tb::budget(p, &r), None) {
            Err(e) => return Some((seed, format!("the RTL run failed: {e}"), r, env)),
            Ok((got, _)) => {
                // Behind AXI4 the four ports share one read channel: the
                // results are the model's, the cycles the RTL's own.
                let timed = env.is_none() && p.mem_if == MemIf::Native;
                let (w, g) = (view(p, &r, &want, timed), view(p, &r, &got, timed));
                if w != g {
                    let key = w.as_object().unwrap().keys().find(|k| w[k.as_str()] != g[k.as_str()]).cloned().unwrap_or_default();
                    let first = |x: &Value| x[key.as_str()].to_string().chars().take(600).collect::<String>();
                    return Some((seed, format!("`{key}` differs\n  model: {}\n  rtl:   {}", first(&w), first(&g)), r, env));
                }
            }
        }
    }
    None
}

fn cosim(name: &str, p: &CuParams) {
    p.validate().expect("test point is valid");
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let mut stats = [0usize; 8];
    let mut ops = [0u64; 12];
    let all = seeds(SEEDS);
    if let Some((seed, problem, r, env)) = first_mismatch(&compiled, p, &all, &mut stats, &mut ops) {
        let vcd = failure_dir().join(format!("cu_{name}_seed{seed}.vcd"));
        let _ = tb::run(&compiled, p, &r, env, tb::budget(p, &r), Some(&vcd));
        let program: Vec<u64> = (0..p.imem_depth as u64)
            .map(|i| u64::from_le_bytes(r.memory.bytes(r.program as u64 + 8 * i, 8).try_into().unwrap()))
            .collect();
        panic!(
            "cu {name} seed {seed} (env {env:?}): {problem}\n  program:\n{}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test cu cosim_{name}",
            model::isa::disassemble(&program),
            vcd.display()
        );
    }
    eprintln!(
        "cu {name}: {} seeds, block statuses ok/opcode/field/reg/pc/align/smem/dispatch: {stats:?}, cdl/ld/st/act/cmp/exp/mma/tex/texel fetches/write beats/ld zmap/mma skip: {ops:?}, all match",
        all.len()
    );
    if std::env::var("GPURTL_SEED").is_err() {
        // Every status but `dispatch` (which a run's dispatcher never sends:
        // see `dispatch_errors`) must come up, or the test proves less than it claims.
        for s in &Status::ALL[..7] {
            assert!(stats[*s as usize] > 0, "{name}: no block ended with `{}`: {stats:?}", s.name());
        }
        // (tex and its fetches only where the unit is built.)
        let skip = |i: usize| !p.tex && (i == 7 || i == 8);
        assert!(ops.iter().enumerate().all(|(i, &n)| skip(i) || n >= 5), "{name}: too few cdl/ld/st/act/cmp/exp/mma/tex operations, texel fetches, write beats, ld zmap or mma skip: {ops:?}");
    }
}

#[test]
fn cosim_default() {
    cosim("default", &points()[0].1)
}
#[test]
fn cosim_small() {
    cosim("small", &points()[1].1)
}
/// Four slots, eight banks, a 4 x 8 grid: `make test-full` (the largest
/// `cu` build; `odd` has several slots and banks in `make test`).
#[test]
fn cosim_wide() {
    if gpurtl_tests::full_tier("cu wide") {
        cosim("wide", &points()[2].1)
    }
}
#[test]
fn cosim_odd() {
    cosim("odd", &points()[3].1)
}
#[test]
fn cosim_axi32() {
    cosim("axi32", &points()[4].1)
}
#[test]
fn cosim_axi128() {
    cosim("axi128", &points()[5].1)
}

/// Bugs planted in the generated Verilog (at `small`), each caught: a DMA byte
/// strobe one past the row's end, a counted loop that stops one iteration
/// early, an aligner that emits its word one unit late when the two lanes
/// are equal, an `mma` writer that takes a row's words a cycle early, a
/// `tex` conv that writes each quad's pixel `(x+1, y+1)` at the wrong place,
/// an `ld ..., zmap` that writes its map a word up, over its rows' first
/// word, and an `mma` streamer that offers the next tile before the grid is
/// idle (the first, fourth and sixth in `make test`, all seven with
/// `GPURTL_FULL=1`).
#[test]
fn planted_bugs_are_caught() {
    // At `small` with `tex`: the same logic, a quicker Verilator build for
    // each bug.
    let p = CuParams { tex: true, ..points()[1].1.clone() };
    let design = build(&p).unwrap();
    let clean = spec(&design);
    // (what, the line it is on, text in that line, its replacement)
    let bugs: [(&str, &str, &str, &str); 7] = [
        ("strobe past the row", "  assign dma_strb = ", "[16:0] < {1'd0, dma_n_q}", "[16:0] <= {1'd0, dma_n_q}"),
        ("loop one short", "  assign x_taken = ", "(x_is_loop & |x_rd_dec)", "(x_is_loop & |x_rd_dec[31:1])"),
        ("aligner late on equal lanes", "  assign dma_emit = ", "(dma_p_out_row_q[1:0] >= dma_p_in_row_q[1:0])", "(dma_p_out_row_q[1:0] > dma_p_in_row_q[1:0])"),
        ("mma writes a row before it leaves the grid", "  assign mma_w_ok = ", "mma_o_rows_q} > mma_w_r_q", "mma_o_rows_q} >= mma_w_r_q"),
        ("tex conv writes a quad's fourth pixel a word before the third", "  assign u_scratchpad_wr3_req_addr = ", "(tex_pitch + ", "(tex_pitch - "),
        ("zmap writes its map a word up, over the rows' first word", "  assign dma_zm_addr = ", "{{5'd0, dma_zm_m_q}, 2'd0}", "{{5'd0, ~dma_zm_m_q}, 2'd0}"),
        ("mma offers the next tile before the grid is idle", "  assign mma_s_arm = ", "(u_grid_in_idle & (", "(1'b1 & ("),
    ];
    let all: Vec<u64> = (0..SEEDS).collect();
    // `make test` plants three (a DMA, an `mma` and a `zmap` bug), `make
    // test-full` all seven.
    for (k, (what, line, from, to)) in bugs.into_iter().enumerate() {
        if !gpurtl_tests::planted_in_tier(k, &[0, 3, 5]) {
            continue;
        }
        let s = gpurtl_tests::plant(&clean, what, line, from, to);
        let compiled = compile(&s).expect("verilator build");
        let Some((seed, diff, _, _)) = first_mismatch(&compiled, &p, &all, &mut [0; 8], &mut [0; 12]) else {
            panic!("planted bug `{what}` was not caught in {SEEDS} seeds");
        };
        eprintln!("planted bug `{what}`: caught at seed {seed}: {}", diff.lines().next().unwrap_or(""));
    }
}

/// Bugs planted in the AXI4 adapters of `mem_if = axi4` (docs/memory.md,
/// "Sources of another width"), each caught: at `axi32` a program beat
/// gathered with its halves swapped; at `axi128` a `cdl` read that takes
/// lane 0 for lane 1, and with `GPURTL_FULL=1` also a program beat split
/// high half first and a `st` beat strobed in lane 1 as well as lane 0 (a
/// Verilator build each).
#[test]
fn axi_adapter_bugs_are_caught() {
    let bugs: [(&str, &str, &str, &str, &str); 4] = [
        ("axi32", "program beat gathered with its halves swapped", "  assign u_core_ifetch_rsp_data = ", "{u_rd_arbiter_rd0_rsp_data, ifetch_part0_q}", "{ifetch_part0_q, u_rd_arbiter_rd0_rsp_data}"),
        ("axi128", "program beat split high half first", "  assign u_core_ifetch_rsp_data = ", "ifetch_part_q ? u_rd_arbiter_rd0_rsp_data[127:64]", "~ifetch_part_q ? u_rd_arbiter_rd0_rsp_data[127:64]"),
        ("axi128", "cdl takes lane 0 for lane 1", "  assign u_core_cdl_rsp_data = ", "? u_rd_arbiter_rd1_rsp_data[63:32]", "? u_rd_arbiter_rd1_rsp_data[31:0]"),
        ("axi128", "st strobes lane 1 for a lane-0 beat too", "  assign u_wr_arbiter_wr0_req_strb = ", "(u_core_dma_wr_req_addr[3:2] == 2'd1)", "(u_core_dma_wr_req_addr[3:2] <= 2'd1)"),
    ];
    let all: Vec<u64> = (0..SEEDS).collect();
    for (k, (point, what, line, from, to)) in bugs.into_iter().enumerate() {
        if !gpurtl_tests::planted_in_tier(k, &[0, 2]) {
            continue;
        }
        let p = points().into_iter().find(|(n, _)| *n == point).unwrap().1;
        let s = gpurtl_tests::plant(&spec(&build(&p).unwrap()), what, line, from, to);
        let compiled = compile(&s).expect("verilator build");
        let Some((seed, diff, _, _)) = first_mismatch(&compiled, &p, &all, &mut [0; 8], &mut [0; 12]) else {
            panic!("planted bug `{what}` ({point}) was not caught in {SEEDS} seeds");
        };
        eprintln!("planted bug `{what}` ({point}): caught at seed {seed}: {}", diff.lines().next().unwrap_or(""));
    }
}

/// The example runs the same in both engines, and copies exactly the tiles.
#[test]
fn copy2d_example_runs_the_same_in_both_engines() {
    let p = CuParams::default();
    let dir = gpurtl_tests::repo().join("examples/cu");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("copy2d-run.json")).unwrap()).unwrap();
    let r = io::parse_input(&input, &dir, &p).unwrap();
    let want = model::run(&p, &r).unwrap();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let (got, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
    assert_eq!(io::output_json(&p, &r, &want), io::output_json(&p, &r, &got));
    let src = r.memory.bytes(65537, 70);
    assert_eq!(got.memory.bytes(131075, 70), src, "dst is a copy of the 10 x 7 image");
    assert_eq!(got.memory.bytes(131072, 3), vec![0; 3], "nothing before dst");
    assert_eq!(got.memory.bytes(131075 + 70, 16), vec![0; 16], "nothing after dst");
    assert!(want.blocks.iter().all(|b| b.status == Status::Ok));
}

/// Verilator's lint and yosys's checks (no latches, no loops, nothing
/// undriven) at every point; with `GPURTL_FULL=1` also a full yosys
/// synthesis at `small` (half a minute; the larger points take minutes:
/// `gpurtl synth cu` reports their area).
#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    for (name, p) in points() {
        let (dir, top, sources) = gpurtl_tests::generated(&build(&p).unwrap());
        if let Err(e) = gpurtl_gen::tools::verilator_lint(dir.path(), &top) {
            panic!("{name}: {e}");
        }
        if let Err(e) = gpurtl_gen::tools::yosys_check(dir.path(), &top, &sources) {
            panic!("{name}: {e}");
        }
    }
    if std::env::var_os("GPURTL_FULL").is_some() {
        gpurtl_tests::lint_and_synth_clean("small", &build(&points()[1].1).unwrap());
    }
}

#[test]
fn default_output_matches_snapshot() {
    gpurtl_tests::check_snapshot("cu", &build(&CuParams::default()).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in CuParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// `gpurtl asm/disasm --isa cu`: a kernel round trips, every bad line is
/// named, and bad options and files get exit 2.
#[test]
fn assembler_on_the_command_line() {
    use gpurtl_tests::gpurtl;
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let src = gpurtl_tests::repo().join("examples/cu/copy2d.s").to_string_lossy().into_owned();
    let (code, _, err) = gpurtl(&["asm", "--isa", "cu", &src, "--output", &d("k.bin")]);
    assert_eq!(code, 0, "{err}");
    let bin = std::fs::read(d("k.bin")).unwrap();
    assert_eq!(bin.len(), 17 * 8, "17 instructions of 8 bytes");
    let (code, text, err) = gpurtl(&["disasm", "--isa", "cu", &d("k.bin")]);
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("cdl r3, 6, ud[0]\nmul r9, r0, r7\n"), "{text}");
    std::fs::write(d("k2.s"), &text).unwrap();
    let (code, _, err) = gpurtl(&["asm", "--isa", "cu", &d("k2.s"), "--output", &d("k2.bin")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(d("k2.bin")).unwrap(), bin, "disassembly reassembles to the same words");

    std::fs::write(d("bad.s"), "add r1, r2\nfrob r1\ncdl r3, 17, ud[0]\nend\n").unwrap();
    let (code, _, err) = gpurtl(&["asm", "--isa", "cu", &d("bad.s"), "--output", &d("bad.bin")]);
    assert_eq!(code, 2);
    for line in ["line 1", "line 2", "line 3"] {
        assert!(err.contains(line), "{line} is named: {err}");
    }
    assert!(!Path::new(&d("bad.bin")).exists(), "nothing is written");
    std::fs::write(d("odd.bin"), [0u8; 12]).unwrap();
    let (code, _, err) = gpurtl(&["disasm", "--isa", "cu", &d("odd.bin")]);
    assert_eq!(code, 2);
    assert!(err.contains("3 dwords") && err.contains("even"), "{err}");
    let (code, _, err) = gpurtl(&["asm", "--isa", "x86", &src, "--output", &d("x.bin")]);
    assert_eq!((code, err.as_str()), (2, "error: option `--isa` = `x86`: must be pm4 or cu\n"));
}

/// `gpurtl run cu`: bad input files, parameters and a kernel that never
/// ends are exit 2 with the field or the budget named, and nothing written.
#[test]
fn run_errors_on_the_command_line() {
    use gpurtl_tests::gpurtl;
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    std::fs::write(d("bad.json"), r#"{"program": 5, "memory": [{"addr": 0, "file": "missing.bin"}], "blocks": [{"id": [0, 70000, 0]}], "smem_bytes": 3, "regs": 1, "dump": []}"#).unwrap();
    let (code, _, err) = gpurtl(&["run", "cu", "--input", &d("bad.json"), "--output", &d("out.json")]);
    assert_eq!(code, 2, "{err}");
    for field in ["`program` = 5", "memory[0].file", "blocks[0].id", "`smem_bytes` = 3", "`regs` = 1"] {
        assert!(err.contains(field), "{field} is named: {err}");
    }
    assert!(!Path::new(&d("out.json")).exists());
    std::fs::write(d("spin.s"), "top: jmp top\n").unwrap();
    std::fs::write(
        d("spin.json"),
        r#"{"program": 4096, "memory": [{"addr": 4096, "asm": "spin.s", "isa": "cu"}], "blocks": [{"id": [0, 0, 0]}], "smem_bytes": 0, "regs": 4, "dump": []}"#,
    )
    .unwrap();
    let (code, _, err) = gpurtl(&["run", "cu", "--input", &d("spin.json"), "--output", &d("out.json")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("budget"), "{err}");
    assert!(!Path::new(&d("out.json")).exists());
    let (code, _, err) = gpurtl(&["gen", "cu", "--param", "slots=9", "--param", "regs=48", "-o", &d("g")]);
    assert_eq!(code, 2);
    assert!(err.contains("`slots` = 9") && err.contains("`regs` = 48"), "{err}");
}

/// The example kernel's sidecar (`examples/cu/<name>.json`).
fn sidecar(name: &str) -> Value {
    let path = gpurtl_tests::repo().join(format!("examples/cu/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `examples/cu/compress.s` at random sizes (n not a multiple of the block
/// tile, every element size, random zeros) and memory latencies, in both
/// engines, against the definition: per block, the selected elements
/// packed, the mask bits, the count; nothing else in memory changes.
#[test]
fn compress_example_at_random_sizes() {
    use gpurtl_sim::mem::Memory;
    let p = CuParams::default();
    let car = sidecar("compress");
    assert_eq!(car["args"], serde_json::json!(["src", "n", "dense", "masks", "counts", "element_bits"]));
    let e = car["block_tile"][0].as_u64().unwrap() as usize;
    let (smem, regs) = (car["smem_bytes"].as_u64().unwrap() as u32, car["regs"].as_u64().unwrap() as u32);
    let text = std::fs::read_to_string(gpurtl_tests::repo().join("examples/cu/compress.s")).unwrap();
    let words = model::isa::assemble(&text).unwrap();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let seeds = seeds(if std::env::var("GPURTL_SEED").is_ok() { 1 } else { 24 });
    for seed in seeds {
        let mut rng = Rng::new(seed * 31 + 5);
        let bits = [8u32, 16, 32][rng.below(3) as usize];
        let s = bits as usize / 8;
        let n = 1 + rng.below(5 * e as u64) as usize;
        let zeros = rng.below(101);
        let vals: Vec<u64> = (0..n).map(|_| if rng.chance(zeros as u32) { 0 } else { 1 + rng.below((1u64 << bits) - 1) }).collect();
        let (src, dense, masks, counts) = (0x1_0003u32 & !(s as u32 - 1), 0x4_0000u32, 0x6_0001u32, 0x7_0000u32);
        let mut memory = Memory::new();
        memory.write(0x1000, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()[..s].to_vec()).collect();
        memory.write(src as u64, &bytes);
        let blocks = n.div_ceil(e);
        let mut user = [0u32; 16];
        user[..6].copy_from_slice(&[src, n as u32, dense, masks, counts, bits]);
        let r = Run {
            program: 0x1000,
            memory: memory.clone(),
            blocks: (0..blocks).map(|b| model::Block { id: [b as u16, 0, 0], user_data: user }).collect(),
            smem_bytes: smem,
            regs,
            mem_latency: 1 + rng.below(30) as u32,
            dump: vec![],
        };
        // The definition.
        let mut want = memory.clone();
        for b in 0..blocks {
            let el = &vals[b * e..n.min((b + 1) * e)];
            let sel: Vec<u64> = el.iter().copied().filter(|v| *v != 0).collect();
            let packed: Vec<u8> = sel.iter().flat_map(|v| v.to_le_bytes()[..s].to_vec()).collect();
            want.write((dense as usize + b * e * s) as u64, &packed);
            let mut m = vec![0u8; el.len().div_ceil(8)];
            for (i, v) in el.iter().enumerate() {
                if *v != 0 {
                    m[i / 8] |= 1 << (i % 8);
                }
            }
            want.write((masks as usize + b * e / 8) as u64, &m);
            want.write(counts as u64 + 4 * b as u64, &(sel.len() as u32).to_le_bytes());
        }
        let got_model = model::run(&p, &r).unwrap();
        let (got_rtl, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
        assert_eq!(io::output_json(&p, &r, &got_model), io::output_json(&p, &r, &got_rtl), "seed {seed}: engines");
        for (what, o) in [("model", &got_model), ("rtl", &got_rtl)] {
            assert!(o.blocks.iter().all(|b| b.status == Status::Ok), "seed {seed} {what}: {:?}", o.blocks);
            for region in [(src as u64, n * s + 8), (dense as u64, blocks * e * s + 8), (masks as u64, blocks * e / 8 + 8), (counts as u64, 4 * blocks + 8)] {
                let (a, len) = (region.0.saturating_sub(8), region.1 + 8);
                assert_eq!(o.memory.bytes(a, len), want.bytes(a, len), "seed {seed} {what}: n {n}, {bits}-bit, region at {:#x}", region.0);
            }
        }
    }
}

/// A bad dispatch (too few registers, a program not 256-byte aligned, a
/// share past the scratchpad) completes with `dispatch`, pc 0, in both
/// engines and at the same cycles; a run's own dispatcher never sends one,
/// so the cosimulation above does not reach it.
#[test]
fn dispatch_errors() {
    let p = CuParams::default();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let mut rng = Rng::new(9);
    let base = tb::random_run(&mut rng, &p, 3, Planted::None);
    let cases = [
        Run { regs: 2, ..base.clone() },
        Run { program: base.program + 4, ..base.clone() },
        Run { smem_bytes: 6, ..base.clone() },
    ];
    for (i, r) in cases.iter().enumerate() {
        let want = model::run(&p, r).unwrap();
        let (got, _) = tb::run(&compiled, &p, r, None, tb::budget(&p, r), None).unwrap();
        assert_eq!(io::output_json(&p, r, &want), io::output_json(&p, r, &got), "case {i}");
        assert!(got.blocks.iter().all(|b| b.status == Status::Dispatch && b.pc == 0), "case {i}: {:?}", got.blocks);
        assert!(got.trace.is_empty(), "case {i}: nothing runs");
    }
}

/// `mma` against its definition (C = A.B + C0, int8 in, int32 wrapping out,
/// C0 none, C itself or a bias row) at random shapes, pads, edges and zero
/// densities, in both engines: one block loads A and B (and C0) with `ld`,
/// multiplies, stores C.
#[test]
fn mma_matches_its_definition() {
    use gpurtl_sim::mem::Memory;
    let word = |op: u8, rd: u8, ra: u8, rb: u8, imm: u32| op as u64 | (rd as u64) << 8 | (ra as u64) << 16 | (rb as u64) << 24 | (imm as u64) << 32;
    let li = |rd: u8, v: u32| word(0x40, rd, 0, 0, v);
    let odd = points().into_iter().find(|(n, _)| *n == "odd").unwrap().1;
    // Six shapes a point in `make test`, twelve with GPURTL_FULL.
    let per_point = if std::env::var_os("GPURTL_FULL").is_some() { 12u64 } else { 6 };
    for (name, p, cases, max_mn) in [("default", CuParams::default(), per_point, 16u32), ("odd", odd, per_point, 9)] {
        let compiled = compile_design(&build(&p).unwrap()).unwrap();
        let cases = if std::env::var("GPURTL_SEED").is_ok() { 1 } else { cases };
        for seed in seeds(cases) {
            let mut rng = Rng::new(seed * 131 + p.grid_rows as u64);
            let tm = 1 + rng.below(max_mn as u64) as u32;
            let tn = 1 + rng.below(max_mn as u64) as u32;
            let k = if seed % 3 == 0 { p.kmax } else { 1 + rng.below(p.kmax as u64) as u32 };
            let mode = (seed % 3) as u32;
            let (qa, qb) = (rng.below(4) as u32, rng.below(4) as u32);
            let zeros = [0u32, 30, 60][rng.below(3) as usize];
            let val = |rng: &mut Rng| if rng.chance(zeros) { 0u8 } else { rng.below(256) as u8 };
            let a: Vec<Vec<u8>> = (0..tm).map(|_| (0..k).map(|_| val(&mut rng)).collect()).collect();
            let mut b: Vec<Vec<u8>> = (0..k).map(|_| (0..tn).map(|_| val(&mut rng)).collect()).collect();
            // Some all-zero k-steps.
            for row in b.iter_mut() {
                if rng.chance(zeros / 2) {
                    row.iter_mut().for_each(|x| *x = 0);
                }
            }
            let c0: Vec<Vec<i32>> = (0..tm).map(|_| (0..tn).map(|_| rng.next_u64() as i32).collect()).collect();
            let bias: Vec<i32> = (0..tn).map(|_| rng.next_u64() as i32).collect();
            let (pa, pb) = (4 * k.div_ceil(4) + 4 * qa, 8 * tn.div_ceil(8) + 4 * qb);
            let (ao, bo) = (0u32, tm * pa);
            let co = bo + k * pb;
            let bi = co + 4 * tm * tn;
            let (amem, bmem, cmem, bimem) = (0x1_0000u32 + 4 * rng.below(4) as u32 + rng.below(4) as u32, 0x2_0001u32, 0x4_0000u32, 0x6_0000u32);
            let mut prog = vec![li(3, amem), li(4, k), li(5, ao), li(6, tm << 16 | k), word(0x60, 5, 3, 4, 6 | pa << 16)];
            prog.extend([li(3, bmem), li(4, tn), li(5, bo), li(6, k << 16 | tn), word(0x60, 5, 3, 4, 6 | pb << 16)]);
            match mode {
                1 => prog.extend([li(3, cmem), li(4, 4 * tn), li(5, co), li(6, tm << 16 | (4 * tn)), word(0x60, 5, 3, 4, 6)]),
                2 => prog.extend([li(3, bimem), li(4, 4 * tn), li(5, bi), li(6, 1 << 16 | (4 * tn)), word(0x60, 5, 3, 4, 6)]),
                _ => {}
            }
            prog.extend([li(5, co), li(7, ao), li(8, bo), li(6, tm | tn << 8 | k << 16)]);
            let bias_field = if mode == 2 { bi / 4 } else { 0 };
            prog.push(word(0x70, 5, 7, 8, 6 | mode << 8 | qa << 10 | qb << 12 | bias_field << 16));
            prog.extend([li(3, cmem), li(4, 4 * tn), li(6, tm << 16 | (4 * tn)), word(0x61, 5, 3, 4, 6), word(0x7F, 0, 0, 0, 0)]);
            assert!(prog.len() <= p.imem_depth as usize);
            let mut memory = Memory::new();
            memory.write(0x1000, &prog.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
            memory.write(amem as u64, &a.concat());
            memory.write(bmem as u64, &b.concat());
            if mode == 1 {
                memory.write(cmem as u64, &c0.iter().flatten().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
            }
            memory.write(bimem as u64, &bias.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
            let r = Run {
                program: 0x1000,
                memory: memory.clone(),
                blocks: vec![model::Block { id: [0, 0, 0], user_data: [0; 16] }],
                smem_bytes: p.smem_bytes() as u32,
                regs: 16,
                mem_latency: 1 + rng.below(10) as u32,
                dump: vec![model::Region { addr: cmem - 8, bytes: 4 * tm * tn + 16 }],
            };
            let want: Vec<u8> = (0..tm as usize)
                .flat_map(|i| {
                    let (a, b, c0, bias) = (&a, &b, &c0, &bias);
                    (0..tn as usize).flat_map(move |n| {
                        let init = match mode {
                            1 => c0[i][n],
                            2 => bias[n],
                            _ => 0,
                        };
                        let s = (0..k as usize).fold(init, |acc, kk| acc.wrapping_add(a[i][kk] as i8 as i32 * b[kk][n] as i8 as i32));
                        s.to_le_bytes()
                    })
                })
                .collect();
            let shape = format!("{name} seed {seed}: {tm} x {k} x {tn}, C0 mode {mode}, pads {qa} {qb}, {zeros}% zeros");
            let (got_rtl, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
            let got_model = model::run(&p, &r).unwrap();
            for (what, o) in [("rtl", &got_rtl), ("model", &got_model)] {
                assert!(o.blocks.iter().all(|b| b.status == Status::Ok), "{shape} {what}: {:?}", o.blocks);
                assert_eq!(o.memory.bytes(cmem as u64, want.len()), want, "{shape} {what}: C");
                assert_eq!(o.memory.bytes(cmem as u64 - 8, 8), vec![0; 8], "{shape} {what}: before C");
                assert_eq!(o.memory.bytes(cmem as u64 + want.len() as u64, 8), vec![0; 8], "{shape} {what}: after C");
            }
            assert_eq!(io::output_json(&p, &r, &got_model), io::output_json(&p, &r, &got_rtl), "{shape}: engines");
        }
    }
}

/// `examples/cu/gemm.s` at random sizes (M, N, K not multiples of the tile
/// or of the K chunk, with and without bias and ReLU), in both engines,
/// against the definition; every byte of C written, nothing around it.
#[test]
fn gemm_example_at_random_sizes() {
    use gpurtl_sim::mem::Memory;
    let p = CuParams::default();
    let car = sidecar("gemm");
    assert_eq!(car["args"], serde_json::json!(["a", "b", "c", "bias", "m", "n", "k", "flags"]));
    let (tm, tn) = (car["block_tile"][0].as_u64().unwrap() as usize, car["block_tile"][1].as_u64().unwrap() as usize);
    let (smem, regs) = (car["smem_bytes"].as_u64().unwrap() as u32, car["regs"].as_u64().unwrap() as u32);
    let text = std::fs::read_to_string(gpurtl_tests::repo().join("examples/cu/gemm.s")).unwrap();
    let words = model::isa::assemble(&text).unwrap();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let full = std::env::var_os("GPURTL_FULL").is_some();
    let cases = if std::env::var("GPURTL_SEED").is_ok() { 1 } else if full { 8 } else { 4 };
    for seed in seeds(cases) {
        let mut rng = Rng::new(seed * 977 + 3);
        let m = 1 + rng.below(40) as usize;
        let n = 1 + rng.below(40) as usize;
        let k = 1 + rng.below(if seed % 2 == 0 { 300 } else { 40 }) as usize;
        let with_bias = rng.chance(50);
        let relu = rng.chance(50);
        let zeros = rng.below(60) as u32;
        let v8 = |rng: &mut Rng| if rng.chance(zeros) { 0i8 } else { rng.below(256) as u8 as i8 };
        let a: Vec<i8> = (0..m * k).map(|_| v8(&mut rng)).collect();
        let b: Vec<i8> = (0..k * n).map(|_| v8(&mut rng)).collect();
        let bias: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32 >> 8).collect();
        let (am, bm, cm, biasm) = (0x10_0001u32, 0x20_0002u32, 0x40_0000u32, 0x60_0000u32);
        let mut memory = Memory::new();
        memory.write(0x1000, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
        memory.write(am as u64, &a.iter().map(|&x| x as u8).collect::<Vec<u8>>());
        memory.write(bm as u64, &b.iter().map(|&x| x as u8).collect::<Vec<u8>>());
        memory.write(biasm as u64, &bias.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        let mut user = [0u32; 16];
        user[..8].copy_from_slice(&[am, bm, cm, if with_bias { biasm } else { 0 }, m as u32, n as u32, k as u32, relu as u32]);
        let blocks: Vec<model::Block> =
            (0..m.div_ceil(tm)).flat_map(|y| (0..n.div_ceil(tn)).map(move |x| model::Block { id: [x as u16, y as u16, 0], user_data: user })).collect();
        let r = Run { program: 0x1000, memory, blocks, smem_bytes: smem, regs, mem_latency: 1 + rng.below(20) as u32, dump: vec![] };
        let want: Vec<u8> = (0..m)
            .flat_map(|i| {
                let (a, b, bias) = (&a, &b, &bias);
                (0..n).flat_map(move |j| {
                    let init = if with_bias { bias[j] } else { 0 };
                    let s = (0..k).fold(init, |acc, kk| acc.wrapping_add(a[i * k + kk] as i32 * b[kk * n + j] as i32));
                    (if relu { s.max(0) } else { s }).to_le_bytes()
                })
            })
            .collect();
        let shape = format!("seed {seed}: {m} x {k} x {n}, bias {with_bias}, relu {relu}, {zeros}% zeros");
        let got_model = model::run(&p, &r).unwrap();
        let (got_rtl, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
        assert_eq!(io::output_json(&p, &r, &got_model), io::output_json(&p, &r, &got_rtl), "{shape}: engines");
        for (what, o) in [("model", &got_model), ("rtl", &got_rtl)] {
            assert!(o.blocks.iter().all(|b| b.status == Status::Ok), "{shape} {what}: {:?}", o.blocks);
            assert_eq!(o.memory.bytes(cm as u64, want.len()), want, "{shape} {what}: C");
            assert_eq!(o.memory.bytes(cm as u64 - 16, 16), vec![0; 16], "{shape} {what}: before C");
            assert_eq!(o.memory.bytes(cm as u64 + want.len() as u64, 16), vec![0; 16], "{shape} {what}: after C");
        }
    }
}

/// `examples/cu/conv.s` at random sizes (W, H not multiples of the tile,
/// kernels 1..8 on each side, every address mode), in both engines, against
/// the definition; every byte of `out` written, nothing around it; and
/// every conv_quad at its fetch floor, `(KW+1)*(KH+1)` texels.
#[test]
fn conv_example_at_random_sizes() {
    use gpurtl_sim::mem::Memory;
    let p = CuParams::default();
    let car = sidecar("conv");
    assert_eq!(car["args"], serde_json::json!(["image", "out", "w", "h", "weights", "kw", "kh", "mode"]));
    let (tw, th) = (car["block_tile"][0].as_u64().unwrap() as usize, car["block_tile"][1].as_u64().unwrap() as usize);
    let (smem, regs) = (car["smem_bytes"].as_u64().unwrap() as u32, car["regs"].as_u64().unwrap() as u32);
    let text = std::fs::read_to_string(gpurtl_tests::repo().join("examples/cu/conv.s")).unwrap();
    let words = model::isa::assemble(&text).unwrap();
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let full = std::env::var_os("GPURTL_FULL").is_some();
    let cases = if std::env::var("GPURTL_SEED").is_ok() { 1 } else if full { 8 } else { 4 };
    for seed in seeds(cases) {
        let mut rng = Rng::new(seed * 1013 + 7);
        let w = 1 + rng.below(if seed % 2 == 0 { 40 } else { 12 }) as usize;
        let h = 1 + rng.below(if seed % 2 == 0 { 30 } else { 12 }) as usize;
        let (kw, kh) = (1 + rng.below(8) as usize, 1 + rng.below(8) as usize);
        let mode = (seed % 3) as u32;
        let img: Vec<u8> = (0..w * h).map(|_| rng.below(256) as u8).collect();
        let wts: Vec<i8> = (0..kw * kh).map(|_| rng.below(256) as u8 as i8).collect();
        let (im, om, wm) = (0x10_0003u32, 0x40_0000u32, 0x60_0001u32);
        let mut memory = Memory::new();
        memory.write(0x1000, &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
        memory.write(im as u64, &img);
        memory.write(wm as u64, &wts.iter().map(|&x| x as u8).collect::<Vec<u8>>());
        let mut user = [0u32; 16];
        user[..8].copy_from_slice(&[im, om, w as u32, h as u32, wm, kw as u32, kh as u32, mode]);
        let blocks: Vec<model::Block> =
            (0..h.div_ceil(th)).flat_map(|y| (0..w.div_ceil(tw)).map(move |x| model::Block { id: [x as u16, y as u16, 0], user_data: user })).collect();
        let quads = blocks.len() as u64 * (tw as u64 / 2) * (th as u64 / 2);
        let r = Run { program: 0x1000, memory, blocks, smem_bytes: smem, regs, mem_latency: 1 + rng.below(20) as u32, dump: vec![] };
        // The address mode on a coordinate (docs/texture.md).
        let wrap = |x: i64, s: usize| -> usize {
            let s = s as i64;
            (match mode {
                0 => x.clamp(0, s - 1),
                1 => x.rem_euclid(s),
                _ => {
                    let m = x.rem_euclid(2 * s);
                    if m < s { m } else { 2 * s - 1 - m }
                }
            }) as usize
        };
        let want: Vec<u8> = (0..h)
            .flat_map(|y| {
                let (img, wts) = (&img, &wts);
                (0..w).flat_map(move |x| {
                    let mut s = 0i32;
                    for j in 0..kh {
                        for i in 0..kw {
                            let (sx, sy) = (wrap(x as i64 + i as i64 - (kw / 2) as i64, w), wrap(y as i64 + j as i64 - (kh / 2) as i64, h));
                            s = s.wrapping_add(wts[j * kw + i] as i32 * img[sy * w + sx] as i32);
                        }
                    }
                    s.to_le_bytes()
                })
            })
            .collect();
        let shape = format!("seed {seed}: {w} x {h}, kernel {kw} x {kh}, mode {mode}");
        let got_model = model::run(&p, &r).unwrap();
        let (got_rtl, _) = tb::run(&compiled, &p, &r, None, tb::budget(&p, &r), None).unwrap();
        assert_eq!(io::output_json(&p, &r, &got_model), io::output_json(&p, &r, &got_rtl), "{shape}: engines");
        for (what, o) in [("model", &got_model), ("rtl", &got_rtl)] {
            assert!(o.blocks.iter().all(|b| b.status == Status::Ok), "{shape} {what}: {:?}", o.blocks);
            assert_eq!(o.memory.bytes(om as u64, want.len()), want, "{shape} {what}: out");
            assert_eq!(o.memory.bytes(om as u64 - 16, 16), vec![0; 16], "{shape} {what}: before out");
            assert_eq!(o.memory.bytes(om as u64 + want.len() as u64, 16), vec![0; 16], "{shape} {what}: after out");
            assert_eq!(o.counters.texel_fetches, quads * ((kw + 1) * (kh + 1)) as u64, "{shape} {what}: fetches");
        }
    }
}
