//! The texture unit on the command line: run (with pictures) and bench.

use crate::bench::{generator, yosys_area};
use crate::block::{BenchOpts, BlockDef};
use crate::error::{Error, Result};
use crate::image::Image;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::texture::build;
use gpurtl_params::texture::{AddressMode, Broadcast, Format, TextureParams};
use gpurtl_sim::cosim::{Compiled, CosimError};
use gpurtl_sim::models::texture::{self as model, ConvJob, Kernel, Level, Op, Outcome, Texture, Workload};
use gpurtl_sim::models::InputErrors;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::texture as tb;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

pub struct TextureUnit;
pub const BLOCK: TextureUnit = TextureUnit;

/// The shift `--output-image` divides a conv result by: the smallest s
/// with 2^s >= the sum of the kernel's absolute weights (docs/texture.md).
pub fn image_shift(weights: &[i64]) -> u32 {
    let sum: u64 = weights.iter().map(|w| w.unsigned_abs()).sum();
    let mut s = 0;
    while (1u64 << s) < sum {
        s += 1;
    }
    s
}

impl BlockDef for TextureUnit {
    type Params = TextureParams;
    type Input = Workload;
    type Output = Outcome;
    const SUMMARY: &'static str =
        "texture unit: bilinear/nearest, gather4 bypass from any level, conv_quad collective fetch with broadcast and MAC";

    fn build(p: &TextureParams) -> Result<gpurtl_hw::Design, gpurtl_hw::rtl::RtlError> {
        build(p)
    }
    fn parse_input(p: &TextureParams, input: &Value) -> Result<Workload, InputErrors> {
        model::parse_input(input, p)
    }
    fn unmodeled(p: &Self::Params) -> &'static [&'static str] {
        if p.mem_if == gpurtl_params::MemIf::Axi4 {
            &["cycles"]
        } else {
            &[]
        }
    }
    fn model(p: &TextureParams, w: &Workload) -> Result<Outcome> {
        Ok(model::run(p, w))
    }
    fn rtl(p: &TextureParams, compiled: &Compiled, w: &Workload, vcd: Option<&Path>) -> Result<Outcome, CosimError> {
        Ok(tb::run(compiled, p, w, None, vcd)?.0)
    }
    fn output_json(p: &TextureParams, o: &Outcome) -> Value {
        model::output_json(p, o)
    }
    fn random_input(p: &TextureParams, rng: &mut Rng) -> Workload {
        let n = 1 + rng.below(6) as usize;
        model::random_workload(rng, p, n)
    }

    /// The picture becomes the texture's one level: grey as r8, anything
    /// else as rgba8.
    fn with_image(p: &TextureParams, input: Value, img: &Image) -> Result<Value> {
        let Value::Object(mut m) = input else {
            return Err(Error::Bad("input file: must be a JSON object (with --image, the ops and conv sections)".into()));
        };
        if m.contains_key("texture") {
            return Err(Error::Bad("input `texture`: given together with `--image`; must be one or the other".into()));
        }
        if img.width > p.max_size || img.height > p.max_size {
            return Err(Error::Bad(format!(
                "option `--image`: the picture is {}x{} pixels; must be at most max_size ({}) on each side (parameter `max_size`)",
                img.width, img.height, p.max_size
            )));
        }
        let texels: Vec<Value> = (0..img.height)
            .flat_map(|y| (0..img.width).map(move |x| (x, y)))
            .map(|(x, y)| {
                let px = img.pixel(x, y);
                if img.channels == 1 {
                    json!(px[0])
                } else {
                    json!(px)
                }
            })
            .collect();
        let format = if img.channels == 1 { "r8" } else { "rgba8" };
        m.insert(
            "texture".into(),
            json!({"format": format, "levels": [{"width": img.width, "height": img.height, "texels": texels}]}),
        );
        Ok(Value::Object(m))
    }

    fn gives_image(_p: &TextureParams, input: &Value) -> Result<()> {
        if input.get("conv").is_some() {
            Ok(())
        } else {
            Err(Error::Bad("option `--output-image`: the input has no `conv` section, so the run gives no image".into()))
        }
    }

    /// The conv section's image, shifted right by [`image_shift`] of its
    /// kernel and clamped to 0..255, as a grey picture, or an RGBA one when
    /// the section was all-channel (each value an `[r, g, b, a]` list).
    fn output_image(_p: &TextureParams, input: &Value, output: &Value) -> Result<Image> {
        let rows = output["image"].as_array().ok_or_else(|| {
            Error::Bad("option `--output-image`: the input has no `conv` section, so the run gives no image".into())
        })?;
        let weights: Vec<i64> = input["conv"]["kernel"]["weights"].as_array().map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_i64).collect());
        let s = image_shift(&weights);
        let height = rows.len() as u32;
        let width = rows.first().and_then(Value::as_array).map_or(0, |r| r.len()) as u32;
        let rgba = rows.first().and_then(Value::as_array).and_then(|r| r.first()).is_some_and(Value::is_array);
        let channels = if rgba { 4 } else { 1 };
        let mut data = Vec::with_capacity((width * height * channels) as usize);
        let byte = |v: &Value| (v.as_i64().unwrap_or(0) >> s).clamp(0, 255) as u8;
        for r in rows {
            for v in r.as_array().into_iter().flatten() {
                match v.as_array() {
                    Some(px) if rgba => data.extend((0..4).map(|c| px.get(c).map_or(0, byte))),
                    _ => data.push(byte(v)),
                }
            }
        }
        Ok(Image { width, height, channels, data })
    }

    /// Texel fetches and cycles per conv quad by kernel shape, bilinear
    /// samples per cycle, a 3x3 conv of a 256x256 image, register writes
    /// whole against selective.
    fn bench(cfg: &TextureParams, bo: &BenchOpts, out: &mut dyn Write) -> Result<Value> {
        let shapes_run: Vec<(u32, u32)> =
            [(3, 3), (1, 7), (7, 1), (5, 5), (19, 1), (1, 19)].into_iter().filter(|(w, h)| *w <= cfg.max_kernel && *h <= cfg.max_kernel).collect();
        // The Verilator build, each kernel shape, bilinear, the image, the area.
        bo.steps(1 + shapes_run.len() as u64 + 3);
        bo.running("the Verilator build");
        let design = build(cfg)?;
        let compiled = compile_design(&design)?;
        bo.done("the Verilator build");
        let latency = 10;
        let side = 256.min(cfg.max_size);
        let texture = |side: u32| Texture {
            format: Format::R8,
            levels: vec![Level { width: side, height: side, texels: (0..side * side).map(|i| (i * 37 + i / side * 11) % 256).collect() }],
        };
        // The same picture in r, and three other patterns in g, b, a.
        let rgba = |side: u32| Texture {
            format: Format::Rgba8,
            levels: vec![Level {
                width: side,
                height: side,
                texels: (0..side * side).map(|i| ((i * 37 + i / side * 11) % 256) | ((i * 13 % 256) << 8) | (((i / side) * 7 % 256) << 16) | (255 << 24)).collect(),
            }],
        };
        let base = |ops: Vec<Op>, conv: Option<ConvJob>| Workload {
            texture: texture(side),
            address: [AddressMode::Clamp, AddressMode::Clamp],
            mem_latency: latency,
            ops,
            conv,
        };
        let kernel = |w: u32, h: u32| Kernel { width: w, height: h, weights: (0..w * h).map(|i| (i % 5) as i64 - 2).collect() };
        let run = |w: &Workload| -> Result<(Outcome, f64)> {
            let (o, stats) = tb::run(&compiled, cfg, w, None, None)?;
            let want = model::run(cfg, w);
            if want != o {
                return Err(Error::Failed("texture bench: the RTL and the golden model disagree".into()));
            }
            Ok((o, stats.rate()))
        };
        let other = |b: Broadcast| TextureParams { broadcast: b, ..cfg.clone() };
        let _ = writeln!(
            out,
            "texture bench: {} bank(s), memory latency {latency}, {} outstanding passes, {} broadcast",
            cfg.banks, cfg.max_outstanding, cfg.broadcast
        );
        // Per kernel shape: one quad alone (fetches), then a row of quads (cycles).
        let _ = writeln!(
            out,
            "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>14} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "kernel", "naive", "floor", "fetches", "rgba8", "sub-ops", "stitch", "cyc/quad", "fetch/bank", "writes(w)", "writes(s)", "writes(sh)"
        );
        let mut shapes = Vec::new();
        // A row of quads, away from the edges (no clamped footprints) on
        // levels of 112 texels and more; on smaller ones, a row across.
        let (x0, quads) = if side >= 112 { (24, 64) } else { (0, (side as u64 / 2).max(2)) };
        let mut rate = 0.0;
        for (kw, kh) in shapes_run {
            bo.running(&format!("{kw}x{kh} kernel quads"));
            let k = kernel(kw, kh);
            let one = base(vec![Op::ConvQuad { x: side as u64 / 2, y: side as u64 / 2, level: 0, channel: 0, kernel: k.clone() }], None);
            let (o1, _) = run(&one)?;
            // The same quad on rgba8, all four channels from one fetch
            // (none without all_channels: `-`, null in the JSON).
            let o4 = if cfg.all_channels {
                let mut one_rgba = one.clone();
                one_rgba.texture = rgba(side);
                if let Op::ConvQuad { channel, .. } = &mut one_rgba.ops[0] {
                    *channel = model::ALL_CHANNELS;
                }
                Some(run(&one_rgba)?.0)
            } else {
                None
            };
            let o4_fetches = o4.as_ref().map(|o| o.texel_fetches);
            let o4_writes = o4.as_ref().map(|o| o.register_writes);
            let row: Vec<Op> = (0..quads)
                .map(|q| Op::ConvQuad { x: (x0 + 2 * q) % (2 * side as u64), y: side as u64 / 2, level: 0, channel: 0, kernel: k.clone() })
                .collect();
            let warm = base(row[..1].to_vec(), None);
            let (ow, _) = run(&warm)?;
            let (or, r) = run(&base(row, None))?;
            rate = r;
            let per_quad = (or.cycles - ow.cycles) as f64 / (quads - 1) as f64;
            let naive = 4 * (kw * kh) as u64;
            let floor = ((kw + 1) * (kh + 1)) as u64;
            let (sub_ops, stitch) = match &o1.results[0] {
                model::OpResult::Pixels { sub_ops, stitch, .. } => (*sub_ops, stitch.iter().map(|c| c.name()).collect::<Vec<_>>()),
                _ => (0, Vec::new()),
            };
            let writes = |b: Broadcast| model::run(&other(b), &one).register_writes;
            let _ = writeln!(
                out,
                "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>14} {:>10.2} {:>10.2} {:>10} {:>10} {:>10}",
                format!("{kw}x{kh}"),
                naive,
                floor,
                o1.texel_fetches,
                o4_fetches.map_or("-".to_string(), |n| n.to_string()),
                sub_ops,
                stitch.join(" "),
                per_quad,
                o1.texel_fetches as f64 / cfg.banks as f64,
                writes(Broadcast::Whole),
                writes(Broadcast::Selective),
                writes(Broadcast::Shared)
            );
            shapes.push(json!({
                "kernel_width": kw, "kernel_height": kh, "naive_fetches": naive, "floor_fetches": floor,
                "fetches": o1.texel_fetches, "rgba8_all_channel_fetches": o4_fetches, "sub_ops": sub_ops, "stitch": stitch,
                "cycles_per_quad": per_quad,
                "fetches_per_bank": o1.texel_fetches as f64 / cfg.banks as f64,
                "register_writes_whole": writes(Broadcast::Whole), "register_writes_selective": writes(Broadcast::Selective),
                "register_writes_shared": writes(Broadcast::Shared),
                "register_writes_rtl": o1.register_writes, "register_writes_rtl_rgba8": o4_writes,
            }));
            bo.done(&format!("{kw}x{kh} kernel quads"));
        }
        // Bilinear samples per cycle: many samples against a few.
        let mut rng = Rng::new(1);
        let f = cfg.frac_bits;
        let margin = (side as u64 / 4).min(8);
        let span = (side as u64 - 2 * margin).max(1) << f;
        let sample = |rng: &mut Rng| Op::Bilinear { u: (margin << f) + rng.below(span), v: (margin << f) + rng.below(span), level: 0 };
        let n = 2000u64;
        bo.running(&format!("bilinear, {n} samples"));
        let many: Vec<Op> = (0..n).map(|_| sample(&mut rng)).collect();
        let (o_many, _) = run(&base(many.clone(), None))?;
        let (o_few, _) = run(&base(many[..1].to_vec(), None))?;
        let samples_per_cycle = (n - 1) as f64 / (o_many.cycles - o_few.cycles) as f64;
        let _ = writeln!(out, "bilinear: {n} samples, {:.3} samples/cycle at steady state", samples_per_cycle);
        bo.done(&format!("bilinear, {n} samples"));
        bo.running(&format!("3x3 conv of a {side}x{side} image"));
        // A 3x3 conv of the whole side x side image.
        let blur = Kernel { width: 3, height: 3, weights: vec![1, 2, 1, 2, 4, 2, 1, 2, 1].into() };
        let job = base(vec![], Some(ConvJob { level: 0, channel: 0, kernel: blur }));
        let (oc, r) = run(&job)?;
        rate = rate.max(r);
        let floor = oc.texel_fetches.div_ceil(cfg.banks as u64);
        let _ = writeln!(
            out,
            "3x3 conv of a {side}x{side} image: {} cycles, fetch floor {} ({} fetches / {} banks): {:.3}x; {} register writes",
            oc.cycles,
            floor,
            oc.texel_fetches,
            cfg.banks,
            oc.cycles as f64 / floor as f64,
            oc.register_writes
        );
        bo.done(&format!("3x3 conv of a {side}x{side} image"));
        let _ = writeln!(out, "cosim: {rate:.0} cycles/s");
        bo.running("yosys area");
        let s = yosys_area(&design)?;
        bo.done("yosys area");
        let _ = writeln!(out, "yosys: {} cells, {} flip-flops", s.cells, s.flip_flops);
        Ok(json!({
            "block": "texture",
            "generator": generator(),
            "params": cfg,
            "memory_latency": latency,
            "conv_quads": shapes,
            "bilinear_samples_per_cycle": samples_per_cycle,
            "conv_image": {
                "side": side, "cycles": oc.cycles, "texel_fetches": oc.texel_fetches, "fetch_floor_cycles": floor,
                "cycles_vs_floor": oc.cycles as f64 / floor as f64, "register_writes": oc.register_writes,
            },
            "cosim_cycles_per_second": rate,
            "yosys_cells": s.cells,
            "yosys_flip_flops": s.flip_flops,
        }))
    }
}
