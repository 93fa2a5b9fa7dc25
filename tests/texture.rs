//! Texture unit: cosimulation of the generated Verilog against the golden
//! model (docs/texture.md), lint and synthesis checks, snapshot.

use gpurtl_gen::rtl_engine::compile_design;
use gpurtl_hw::blocks::texture::build;
use gpurtl_params::texture::{AddressMode, Broadcast, Format, TextureParams};
use gpurtl_params::{BlockParams, MemIf};
use gpurtl_sim::models::texture::{self as model, Kernel, Level, Op, OpResult, Texture, Workload};
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::texture::{self as tb, TexStalls};
use gpurtl_tests::{failure_dir, seeds};

const SEEDS: u64 = 200;

fn points() -> Vec<(&'static str, TextureParams)> {
    let d = TextureParams::default();
    vec![
        ("default", d.clone()),
        ("small", TextureParams::presets()[1].1.clone()),
        ("one_bank", TextureParams::presets()[2].1.clone()),
        // Two banks, whole broadcast, a shallow tag queue, narrow accumulators
        // that wrap, 3 fraction bits, offsets -4..3.
        (
            "two_banks",
            TextureParams { banks: 2, max_size: 64, frac_bits: 3, offset_bits: 3, max_kernel: 20, weight_bits: 5, acc_bits: 12, all_channels: true, broadcast: Broadcast::Whole, max_outstanding: 3, addr_bits: 14, mem_if: gpurtl_params::MemIf::Native },
        ),
        // broadcast = shared (seed 002 §110-111): one register bank the four
        // pixels read; 4 banks, kernels up to 11 (9 sub-operations), 24-bit
        // accumulators, a tag queue shallower than L + 2 at most latencies.
        (
            "shared",
            TextureParams { max_size: 128, max_kernel: 11, weight_bits: 7, acc_bits: 24, broadcast: Broadcast::Shared, max_outstanding: 6, addr_bits: 16, ..d.clone() },
        ),
        // all_channels = false, as the compute unit builds it (one bank,
        // kernels up to 8, 4 passes in flight): no op_all_channels_i, 4
        // result lanes, every rgba8 conv_quad one channel.
        (
            "one_channel",
            TextureParams { all_channels: false, banks: 1, max_size: 512, max_kernel: 8, max_outstanding: 4, addr_bits: 16, ..d.clone() },
        ),
    ]
}

/// Counts of what the random workloads reached, so that a test that proves
/// less than it claims fails.
#[derive(Default, Debug)]
struct Reach {
    ops: [usize; 4],
    formats: [usize; 3],
    modes: [usize; 3],
    levels_above_0: usize,
    offsets_at_ends: usize,
    conv_sections: usize,
    /// rgba8 conv_quads (ops or conv-section quads) convolving all four
    /// channels, and the conv sections among them.
    all_channel_convs: usize,
    all_channel_sections: usize,
    /// rgba8 conv_quads of one channel.
    rgba8_channel_convs: usize,
    /// conv_quads per stitch code of some sub-operation (none, 4x4, 2x8, 8x2),
    /// and those whose sub-operations' codes differ.
    stitch_codes: [usize; 4],
    mixed_stitch: usize,
    fetches: u64,
}

/// Cosimulation over `SEEDS` random workloads. Native memory: every fourth
/// seed without stalls, so cycles must match too. `mem_if = axi4`: every
/// seed through the AXI4 slave agent with random latency, AR readiness, R
/// gaps and reordering across the banks' IDs; every field but `cycles` must
/// match (the banks share the AXI read channel, one beat a cycle, so the
/// model's timing does not apply).
fn cosim(name: &str, p: &TextureParams) {
    p.validate().expect("test point is valid");
    let axi = p.mem_if == MemIf::Axi4;
    let compiled = compile_design(&build(p).unwrap()).expect("verilator build");
    let mut reach = Reach::default();
    let (lo, hi) = p.offset_range();
    for seed in seeds(SEEDS) {
        let mut rng = Rng::new(seed * 7919 + p.banks as u64 * 31 + p.max_size as u64);
        let n = 1 + rng.below(10) as usize;
        let w = model::random_workload(&mut rng, p, n);
        // Every fourth seed: no stalls, so cycles must match too (native);
        // through AXI4, no stalls on the unit's own ports then.
        let quiet = seed % 4 == 0;
        let stalls = (!quiet || axi).then(|| TexStalls {
            seed,
            in_pct: if quiet { 0 } else { rng.below(60) as u32 },
            out_pct: if quiet { 0 } else { rng.below(60) as u32 },
            mem_ready_pct: rng.below(60) as u32,
            mem_delay_max: rng.below(8) as u32,
        });
        let want = model::run(p, &w);
        reach.formats[w.texture.format.code() as usize] += 1;
        for m in w.address {
            reach.modes[m.code() as usize] += 1;
        }
        reach.conv_sections += usize::from(w.conv.is_some());
        reach.fetches += want.texel_fetches;
        let all = |c: u32| model::all_channels(w.texture.format, c);
        reach.all_channel_sections += usize::from(w.conv.as_ref().is_some_and(|j| all(j.channel)));
        for op in model::all_ops(&w) {
            reach.all_channel_convs += usize::from(matches!(op, Op::ConvQuad { channel, .. } if all(channel)));
            reach.rgba8_channel_convs += usize::from(matches!(op, Op::ConvQuad { channel, .. } if w.texture.format == Format::Rgba8 && !all(channel)));
        }
        for r in &want.results {
            if let OpResult::Pixels { stitch, .. } = r {
                for c in gpurtl_params::texture::Stitch::ALL {
                    reach.stitch_codes[c.code() as usize] += usize::from(stitch.contains(c));
                }
                reach.mixed_stitch += usize::from(stitch.windows(2).any(|x| x[0] != x[1]));
            }
        }
        for op in &w.ops {
            let (k, level) = match op {
                Op::Bilinear { level, .. } => (0, *level),
                Op::Nearest { level, .. } => (1, *level),
                Op::Gather4 { level, dx, dy, .. } => {
                    reach.offsets_at_ends += usize::from([*dx, *dy].iter().any(|d| *d == lo || *d == hi));
                    (2, *level)
                }
                Op::ConvQuad { level, .. } => (3, *level),
            };
            reach.ops[k] += 1;
            reach.levels_above_0 += usize::from(level > 0);
        }
        let got = tb::run(&compiled, p, &w, stalls, None);
        let problem = match &got {
            Err(e) => Some(format!("the RTL run failed: {e}")),
            Ok((got, _)) => {
                let mut want = want.clone();
                if stalls.is_some() {
                    want.cycles = got.cycles;
                }
                (got != &want).then(|| {
                    let first = (0..want.results.len().min(got.results.len())).find(|&i| want.results[i] != got.results[i]);
                    format!(
                        "first differing result {first:?}: model {:?} rtl {:?}\n  fetches {}/{} writes {}/{} cycles {}/{} (model/rtl), {} / {} results\n  workload: {:?}",
                        first.map(|i| &want.results[i]),
                        first.map(|i| &got.results[i]),
                        want.texel_fetches, got.texel_fetches, want.register_writes, got.register_writes, want.cycles, got.cycles,
                        want.results.len(), got.results.len(), w
                    )
                })
            }
        };
        // Through AXI4, now and then the deterministic slave too (what
        // `gpurtl run` uses): the same results.
        let problem = problem.or_else(|| {
            (axi && seed % 20 == 0).then(|| tb::run(&compiled, p, &w, None, None)).and_then(|got| match got {
                Err(e) => Some(format!("the RTL run without stalls failed: {e}")),
                Ok((got, _)) => (got.results != want.results || got.texel_fetches != want.texel_fetches || got.register_writes != want.register_writes)
                    .then(|| format!("without stalls: results, fetches or writes differ: {got:?}")),
            })
        });
        if let Some(problem) = problem {
            let vcd = failure_dir().join(format!("texture_{name}_seed{seed}.vcd"));
            let _ = tb::run(&compiled, p, &w, stalls, Some(&vcd));
            panic!(
                "texture {name} seed {seed} (stalls {stalls:?}): {problem}\n  waveform: {}\n  reproduce: GPURTL_SEED={seed} cargo test --release --test texture cosim_{name}",
                vcd.display()
            );
        }
    }
    eprintln!("texture {name}: {} seeds, all match; reached {reach:?}", seeds(SEEDS).len());
    if std::env::var("GPURTL_SEED").is_err() {
        assert!(reach.ops.iter().all(|&n| n > 20), "{reach:?}");
        assert!(reach.formats.iter().all(|&n| n > 20), "{reach:?}");
        assert!(reach.modes.iter().all(|&n| n > 20), "{reach:?}");
        assert!(reach.levels_above_0 > 20 && reach.offsets_at_ends > 10 && reach.conv_sections > 5, "{reach:?}");
        if p.all_channels {
            assert!(reach.all_channel_convs > 20 && reach.all_channel_sections > 0, "{reach:?}");
        } else {
            // Without the datapath no op is all-channel, and rgba8 conv_quads name their channel.
            assert!(reach.all_channel_convs == 0 && reach.rgba8_channel_convs > 20, "{reach:?}");
        }
        assert!(reach.stitch_codes.iter().all(|&n| n > 5) && reach.mixed_stitch > 0, "{reach:?}");
    }
}

#[test]
fn cosim_default() {
    let (n, p) = &points()[0];
    cosim(n, p)
}
#[test]
fn cosim_small() {
    let (n, p) = &points()[1];
    cosim(n, p)
}
#[test]
fn cosim_one_bank() {
    let (n, p) = &points()[2];
    cosim(n, p)
}
#[test]
fn cosim_two_banks() {
    let (n, p) = &points()[3];
    cosim(n, p)
}
#[test]
fn cosim_shared() {
    let (n, p) = &points()[4];
    cosim(n, p)
}
#[test]
fn cosim_one_channel() {
    let (n, p) = &points()[5];
    cosim(n, p)
}

/// all_channels = false (docs/texture.md, "all_channels"): no
/// op_all_channels_i, a 4-lane result port; an rgba8 conv_quad of each
/// channel through the RTL (at every broadcast) gives the model's four
/// sums, fetches and register writes.
#[test]
fn one_channel_unit_has_four_lanes_and_no_all_channel_port() {
    let cases = [(3, 3), (1, 7), (5, 5), (8, 2)];
    for broadcast in Broadcast::ALL {
        let p = TextureParams { all_channels: false, max_kernel: 8, broadcast: *broadcast, ..TextureParams::default() };
        let design = build(&p).unwrap();
        let top = design.top();
        let port = |n: &str| top.ports.iter().map(|&id| top.sig(id)).find(|s| s.name == n).map(|s| s.width);
        assert_eq!(port("op_all_channels_i"), None);
        assert_eq!(port("op_channel_i"), Some(2));
        let data = port("res_data_o").unwrap();
        assert_eq!(data, 4 * p.lane_bits());
        let compiled = compile_design(&design).unwrap();
        for (kw, kh) in cases {
            let kernel = Kernel { width: kw, height: kh, weights: (0..kw * kh).map(|i| i as i64 % 7 - 3).collect() };
            for channel in 0..4 {
                let w = Workload {
                    texture: rgba(40, 40),
                    address: [AddressMode::Mirror, AddressMode::Clamp],
                    mem_latency: 10,
                    ops: (0..4).map(|q| Op::ConvQuad { x: 2 * q, y: 20, level: 0, channel, kernel: kernel.clone() }).collect(),
                    conv: None,
                };
                let at = format!("{kw}x{kh} {broadcast} channel {channel}");
                let (got, _) = tb::run(&compiled, &p, &w, None, None).unwrap();
                assert_eq!(got, model::run(&p, &w), "{at}");
                assert_eq!(got.texel_fetches, 4 * ((kw + 1) * (kh + 1)) as u64, "{at}");
                match &got.results[0] {
                    OpResult::Pixels { pixels, .. } => assert_eq!(pixels.len(), 4, "{at}"),
                    r => panic!("{r:?}"),
                }
            }
        }
    }
}
/// The default point with `mem_if = axi4`: the banks interleaved in one
/// memory behind the AXI4 slave agent.
#[test]
fn cosim_axi4() {
    let p = TextureParams { mem_if: MemIf::Axi4, ..TextureParams::default() };
    cosim("axi4", &p)
}

fn grey(w: u32, h: u32) -> Texture {
    Texture { format: Format::R8, levels: vec![Level { width: w, height: h, texels: (0..w * h).map(|i| (i * 29 + 7) % 256).collect() }] }
}

/// The kernels the brief names (and a few whose sub-operations' codes
/// differ) through the RTL at all three broadcast settings: fetches at the
/// patch size, for one channel and for all four of an rgba8 texture alike;
/// register writes by the rule (shared: the patch size); each
/// sub-operation's stitch code; results exact.
#[test]
fn named_kernels_fetch_the_patch_once() {
    let stitch_of = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let cases: [(u32, u32, &[&str]); 10] = [
        (3, 3, &["4x4"]),
        (1, 7, &["2x8"]),
        (7, 1, &["8x2"]),
        (5, 5, &["none", "none", "none"]),
        (19, 1, &["8x2", "8x2", "8x2"]),
        (1, 19, &["2x8", "2x8", "2x8"]),
        (2, 2, &["4x4"]),
        (3, 5, &["4x4", "8x2"]),
        (9, 3, &["8x2", "none", "8x2"]),
        (1, 1, &["none"]),
    ];
    for broadcast in Broadcast::ALL {
        let d = TextureParams { broadcast: *broadcast, ..TextureParams::default() };
        let compiled = compile_design(&build(&d).unwrap()).unwrap();
        for (kw, kh, stitch) in cases {
            let kernel = Kernel { width: kw, height: kh, weights: (0..kw * kh).map(|i| i as i64 % 7 - 3).collect() };
            let patch = ((kw + 1) * (kh + 1)) as u64;
            let per_quad = match broadcast {
                Broadcast::Whole => 4 * patch,
                Broadcast::Selective => 4 * (kw * kh) as u64,
                Broadcast::Shared => patch,
            };
            for (texture, channel) in [(grey(40, 40), 0), (rgba(40, 40), model::ALL_CHANNELS)] {
                let w = Workload {
                    texture,
                    address: [AddressMode::Clamp, AddressMode::Clamp],
                    mem_latency: 10,
                    ops: (0..8).map(|q| Op::ConvQuad { x: 10 + 2 * q, y: 20, level: 0, channel, kernel: kernel.clone() }).collect(),
                    conv: None,
                };
                let at = format!("{kw}x{kh} {broadcast} channel {channel}");
                let (got, _) = tb::run(&compiled, &d, &w, None, None).unwrap();
                assert_eq!(got, model::run(&d, &w), "{at}");
                assert_eq!(got.texel_fetches, 8 * patch, "{at}");
                assert_eq!(got.register_writes, 8 * per_quad, "{at}");
                match &got.results[0] {
                    OpResult::Pixels { pixels, stitch: s, sub_ops: n } => {
                        assert_eq!(s.iter().map(|c| c.name().to_string()).collect::<Vec<_>>(), stitch_of(stitch), "{at}");
                        assert_eq!(*n as usize, stitch.len(), "{at}");
                        assert_eq!(pixels.len(), if channel == 0 { 4 } else { 16 }, "{at}");
                    }
                    r => panic!("{r:?}"),
                }
            }
        }
    }
}

/// An rgba8 texture whose four channels differ.
fn rgba(w: u32, h: u32) -> Texture {
    let texels = (0..w * h).map(|i| ((i * 29 + 7) % 256) | (((i * 53 + 1) % 256) << 8) | (((i * 11 + 90) % 256) << 16) | (((i * 197 + 3) % 256) << 24)).collect();
    Texture { format: Format::Rgba8, levels: vec![Level { width: w, height: h, texels }] }
}

/// 4 banks, no stalls: one bilinear sample per cycle at steady state.
#[test]
fn bilinear_runs_at_one_sample_per_cycle() {
    let d = TextureParams::default();
    let compiled = compile_design(&build(&d).unwrap()).unwrap();
    let mut rng = Rng::new(3);
    let op = |rng: &mut Rng| Op::Bilinear { u: (4 << 8) + rng.below(50 << 8), v: (4 << 8) + rng.below(50 << 8), level: 0 };
    let ops: Vec<Op> = (0..201).map(|_| op(&mut rng)).collect();
    let run = |ops: &[Op]| {
        let w = Workload { texture: grey(64, 64), address: [AddressMode::Repeat, AddressMode::Mirror], mem_latency: 10, ops: ops.to_vec(), conv: None };
        let (got, _) = tb::run(&compiled, &d, &w, None, None).unwrap();
        assert_eq!(got, model::run(&d, &w));
        got.cycles
    };
    assert_eq!(run(&ops) - run(&ops[..1]), 200);
}

/// Verilator lint and yosys's checks at every point; a full synthesis at
/// the default point (at every point with `GPURTL_FULL=1`: half a minute
/// each).
#[test]
fn verilator_lint_and_yosys_are_clean_at_every_point() {
    // The full synthesis at `one_channel` (the cu's texture unit, two thirds
    // of the default's cells; at every point with GPURTL_FULL=1).
    for (name, p) in points() {
        gpurtl_tests::lint_and_yosys_clean(name, &build(&p).unwrap(), name == "one_channel");
    }
}

#[test]
fn default_output_matches_snapshot() {
    gpurtl_tests::check_snapshot("texture", &build(&TextureParams::default()).unwrap());
}

#[test]
fn regeneration_is_byte_identical() {
    for (_, p) in TextureParams::presets() {
        gpurtl_tests::check_stable(|| build(&p).unwrap());
    }
}

/// Every corner of the parameter table builds.
#[test]
fn every_corner_of_the_parameter_table_builds() {
    let mut built = 0;
    for bits in 0..512u32 {
        let pick = |i: u32, lo: u32, hi: u32| if bits >> i & 1 == 1 { hi } else { lo };
        let p = TextureParams {
            banks: [1, 4][pick(0, 0, 1) as usize],
            max_size: pick(1, 2, 4096),
            frac_bits: pick(2, 1, 10),
            offset_bits: pick(3, 2, 8),
            max_kernel: pick(4, 1, 31),
            weight_bits: pick(5, 2, 16),
            acc_bits: pick(6, 8, 48),
            all_channels: bits % 2 == 1,
            broadcast: Broadcast::ALL[(bits % 3) as usize],
            max_outstanding: pick(7, 2, 64),
            addr_bits: pick(8, 8, 32),
            mem_if: gpurtl_params::MemIf::Native,
        };
        if p.validate().is_err() {
            continue;
        }
        if let Err(e) = build(&p) {
            panic!("{p:?}: {e}");
        }
        built += 1;
    }
    assert_eq!(built, 512);
}

/// The unit full of ops under heavy back-pressure on the results: idle (and
/// so the configuration port) must stay low until the last result is taken,
/// or the next kernel's writes would land under queued conv ops. With
/// max_outstanding 7 and PD 5 the unit holds 7 + 5 + 4 = 16 ops: a 4-bit
/// count would wrap to zero (the bug a review found).
#[test]
fn a_full_unit_is_not_idle() {
    let p = TextureParams { max_size: 1024, max_outstanding: 7, ..TextureParams::default() };
    let compiled = compile_design(&build(&p).unwrap()).unwrap();
    let k1 = Kernel { width: 3, height: 3, weights: vec![1, 2, 1, 2, 4, 2, 1, 2, 1].into() };
    let k2 = Kernel { width: 1, height: 1, weights: vec![5].into() };
    let conv = |k: &Kernel| Op::ConvQuad { x: 6, y: 4, level: 0, channel: 0, kernel: k.clone() };
    let mut ops = vec![conv(&k1)];
    ops.extend((0..15).map(|i| Op::Nearest { u: (i % 16) << 8, v: 3 << 8, level: 0 }));
    ops.extend([conv(&k1), conv(&k2)]);
    let w = Workload { texture: grey(16, 16), address: [AddressMode::Clamp, AddressMode::Clamp], mem_latency: 4, ops, conv: None };
    let want = model::run(&p, &w);
    for seed in 0..20 {
        let stalls = TexStalls { seed, in_pct: 0, out_pct: 97, mem_ready_pct: 0, mem_delay_max: 0 };
        let (mut got, _) = tb::run(&compiled, &p, &w, Some(stalls), None).unwrap();
        got.cycles = want.cycles;
        assert_eq!(got, want, "seed {seed}");
    }
}
