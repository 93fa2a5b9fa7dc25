//! `gpurtl run texture` files: the input (every violation reported) and
//! the output.

use super::layout::{layout, sizes};
use super::{ConvJob, Image, Kernel, Level, Op, OpResult, Outcome, Texture, Workload, ALL_CHANNELS};
use crate::models::{err, shown, InputError, InputErrors, Violations};
use gpurtl_params::texture::{AddressMode, Format, OpKind, TextureParams};
use serde_json::{json, Map, Value};

/// Records `at(key)` for every key of `o` not in `keys`.
fn refuse_unknown(e: &mut Violations, o: &Map<String, Value>, at: &dyn Fn(&str) -> String, keys: &[&str], whose: &str) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: {whose}keys are {}", keys.join(", "))));
        }
    }
}

/// `o[key]` (named `path`): an integer in `lo..=hi` (`why` explains the
/// range in the message); `default` when absent, or missing if `None`.
fn uint_at(o: &Map<String, Value>, key: &str, path: &str, default: Option<u64>, lo: u64, hi: u64, why: &str) -> Result<u64, InputError> {
    let allowed = format!("an integer from {lo} to {hi}{why}");
    match o.get(key) {
        None => default.ok_or_else(|| err(path, "(missing)", allowed)),
        Some(x) => match x.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(err(path, shown(x), allowed)),
        },
    }
}

/// A signed integer in `lo..=hi`.
fn int_value(x: &Value, path: &str, lo: i64, hi: i64) -> Result<i64, InputError> {
    match x.as_i64() {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(err(path, shown(x), format!("an integer from {lo} to {hi}"))),
    }
}

/// What later checks need to know of the texture, even when it is bad.
struct Shape {
    /// Its number of levels, if its level list is good.
    levels: Option<usize>,
    format: Option<Format>,
}

impl Shape {
    /// `o.level`: below the number of levels (default 0).
    fn level(&self, p: &TextureParams, o: &Map<String, Value>, path: &str) -> Result<u32, InputError> {
        let (max, why) = match self.levels {
            Some(n) => (n as u64 - 1, format!(" (below the texture's {n} levels)")),
            None => (p.max_levels() as u64 - 1, String::new()),
        };
        uint_at(o, "level", path, Some(0), 0, max, &why).map(|n| n as u32)
    }
    /// `o.channel`: below the format's channels (default 0).
    fn channel(&self, o: &Map<String, Value>, path: &str) -> Result<u32, InputError> {
        let (max, why) = match self.format {
            Some(f) => (f.channels() as u64 - 1, format!(" (below the {} channels of {f})", f.channels())),
            None => (3, String::new()),
        };
        uint_at(o, "channel", path, Some(0), 0, max, &why).map(|n| n as u32)
    }
    /// A conv_quad's (or the conv section's) `o.channel`: as [`Self::channel`],
    /// but when absent [`ALL_CHANNELS`] on rgba8 (all-channel) and 0 on r8
    /// and r16. A unit built with `all_channels = false` has no all-channel
    /// op: absent on rgba8 is refused.
    fn conv_channel(&self, p: &TextureParams, o: &Map<String, Value>, path: &str) -> Result<u32, InputError> {
        if o.contains_key("channel") {
            self.channel(o, path)
        } else if self.format == Some(Format::Rgba8) {
            if p.all_channels {
                Ok(ALL_CHANNELS)
            } else {
                Err(err(
                    path,
                    "(missing)",
                    "0..3 on rgba8: the unit is built with all_channels = false (parameter `all_channels`), so a conv_quad convolves one channel",
                ))
            }
        } else {
            Ok(0)
        }
    }
}

/// Parse and validate an input file (docs/texture.md "`gpurtl run
/// texture`"); every violation is reported.
pub fn parse_input(v: &Value, p: &TextureParams) -> Result<Workload, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with a `texture`"))));
    };
    refuse_unknown(&mut e, obj, &|k| k.to_string(), &["texture", "address", "mem_latency", "ops", "conv"], "");

    let (texture, shape) = match obj.get("texture") {
        None => {
            e.push(err("texture", "(missing)", "an object {format, levels}"));
            (None, Shape { levels: None, format: None })
        }
        Some(t) => parse_texture(&mut e, t, p),
    };

    let modes_allowed = "a list [x mode, y mode], each clamp, repeat or mirror";
    let address = match obj.get("address") {
        None => Some([AddressMode::Clamp, AddressMode::Clamp]),
        Some(a) => match a.as_array() {
            Some(l) if l.len() == 2 => {
                let m: Vec<Option<AddressMode>> = l
                    .iter()
                    .enumerate()
                    .map(|(k, x)| {
                        e.take(x.as_str().and_then(AddressMode::from_name).ok_or_else(|| {
                            err(format!("address[{k}]"), shown(x), "one of clamp, repeat, mirror")
                        }))
                    })
                    .collect();
                m[0].zip(m[1]).map(|(x, y)| [x, y])
            }
            _ => {
                e.push(err("address", shown(a), modes_allowed));
                None
            }
        },
    };

    let mem_latency = e.take(uint_at(obj, "mem_latency", "mem_latency", Some(10), 1, 64, "").map(|n| n as u32));

    let mut ops = Vec::new();
    if let Some(list) = obj.get("ops") {
        match list.as_array() {
            None => e.push(err("ops", shown(list), "a list of ops")),
            Some(list) => {
                for (i, x) in list.iter().enumerate() {
                    if let Some(op) = parse_op(&mut e, i, x, p, &shape) {
                        ops.push(op);
                    }
                }
            }
        }
    }

    let conv = match obj.get("conv") {
        None => None,
        Some(c) => match c.as_object() {
            None => {
                e.push(err("conv", shown(c), "an object {level, channel, kernel}"));
                None
            }
            Some(o) => {
                refuse_unknown(&mut e, o, &|k| format!("conv.{k}"), &["level", "channel", "kernel"], "");
                let level = e.take(shape.level(p, o, "conv.level"));
                let channel = e.take(shape.conv_channel(p, o, "conv.channel"));
                let kernel = parse_kernel(&mut e, o.get("kernel"), "conv.kernel", p);
                match (level, channel, kernel) {
                    (Some(level), Some(channel), Some(kernel)) => Some(ConvJob { level, channel, kernel }),
                    _ => None,
                }
            }
        },
    };

    e.finish(|| Workload {
        texture: texture.expect("a good texture when nothing was violated"),
        address: address.expect("good address modes when nothing was violated"),
        mem_latency: mem_latency.expect("a good mem_latency when nothing was violated"),
        ops,
        conv,
    })
}

/// The `texture` object: format, levels (the mip chain), texels.
fn parse_texture(e: &mut Violations, v: &Value, p: &TextureParams) -> (Option<Texture>, Shape) {
    let Some(o) = v.as_object() else {
        e.push(err("texture", shown(v), "an object {format, levels}"));
        return (None, Shape { levels: None, format: None });
    };
    refuse_unknown(e, o, &|k| format!("texture.{k}"), &["format", "levels"], "");
    let format_allowed = "one of r8, r16, rgba8";
    let format = e.take(match o.get("format") {
        None => Err(err("texture.format", "(missing)", format_allowed)),
        Some(f) => f.as_str().and_then(Format::from_name).ok_or_else(|| err("texture.format", shown(f), format_allowed)),
    });
    let max_levels = p.max_levels() as usize;
    let levels_allowed = format!("a list of 1 to {max_levels} levels");
    let list = match o.get("levels") {
        None => Err(err("texture.levels", "(missing)", levels_allowed)),
        Some(l) => match l.as_array() {
            Some(a) if (1..=max_levels).contains(&a.len()) => Ok(a),
            Some(a) => Err(err("texture.levels", format!("a list of {} levels", a.len()), levels_allowed)),
            None => Err(err("texture.levels", shown(l), levels_allowed)),
        },
    };
    let list = match list {
        Ok(l) => l,
        Err(x) => {
            e.push(x);
            return (None, Shape { levels: None, format });
        }
    };
    let mut levels = Vec::new();
    let mut good = true;
    let mut prev: (Option<u32>, Option<u32>) = (None, None);
    for (i, x) in list.iter().enumerate() {
        let (level, dims) = parse_level(e, i, x, prev, format, p);
        prev = dims;
        match level {
            Some(l) => levels.push(l),
            None => good = false,
        }
    }
    let shape = Shape { levels: Some(list.len()), format };
    if !good {
        return (None, shape);
    }
    let Some(format) = format else {
        return (None, shape);
    };
    let texture = Texture { format, levels };
    let (_, words) = layout(p, &sizes(&texture));
    if words > 1u64 << p.addr_bits {
        e.push(err(
            "texture.levels",
            format!("a layout of {words} words per bank"),
            format!("at most 2^addr_bits = {} words per bank", 1u64 << p.addr_bits),
        ));
        return (None, shape);
    }
    (Some(texture), shape)
}

/// `texture.levels[i]`, with `prev` the size of the level before it (if
/// known). Returns the level if good, and its size as far as it is known.
fn parse_level(
    e: &mut Violations,
    i: usize,
    v: &Value,
    prev: (Option<u32>, Option<u32>),
    format: Option<Format>,
    p: &TextureParams,
) -> (Option<Level>, (Option<u32>, Option<u32>)) {
    let at = |f: &str| format!("texture.levels[{i}].{f}");
    let Some(o) = v.as_object() else {
        e.push(err(format!("texture.levels[{i}]"), shown(v), "an object {width, height, texels}"));
        return (None, (None, None));
    };
    refuse_unknown(e, o, &at, &["width", "height", "texels"], "");
    // Level 0: 1..max_size; each next level max(1, size >> 1) of the one before.
    let mut dim = |key: &str, prev: Option<u32>| -> Option<u32> {
        let r = match (i, prev) {
            (0, _) => uint_at(o, key, &at(key), None, 1, p.max_size as u64, ""),
            (_, Some(before)) => {
                let want = (before >> 1).max(1) as u64;
                let why = format!(" (max(1, {before} >> 1): levels[{}].{key} halved)", i - 1);
                uint_at(o, key, &at(key), None, want, want, &why)
            }
            (_, None) => uint_at(o, key, &at(key), None, 1, p.max_size as u64, ""),
        };
        e.take(r).map(|n| n as u32)
    };
    let width = dim("width", prev.0);
    let height = dim("height", prev.1);
    let dims = (width, height);

    let path = at("texels");
    let Some(texels) = o.get("texels") else {
        e.push(err(path, "(missing)", "a list of width x height texels, row by row"));
        return (None, dims);
    };
    let Some(list) = texels.as_array() else {
        e.push(err(path, shown(texels), "a list of width x height texels, row by row"));
        return (None, dims);
    };
    let (Some(w), Some(h)) = dims else {
        return (None, dims);
    };
    let n = w as usize * h as usize;
    if list.len() != n {
        e.push(err(path, format!("a list of {} texels", list.len()), format!("a list of {n} texels (width {w} x height {h})")));
        return (None, dims);
    }
    let Some(format) = format else {
        return (None, dims);
    };
    let allowed = match format {
        Format::R8 => "an integer from 0 to 255",
        Format::R16 => "an integer from 0 to 65535",
        Format::Rgba8 => "a list [r, g, b, a] of integers from 0 to 255",
    };
    let texels = e.each(&path, list, |k, x| texel_word(format, x).ok_or_else(|| err(format!("{path}[{k}]"), shown(x), allowed)));
    (texels.map(|texels| Level { width: w, height: h, texels }), dims)
}

/// A texel of the input as its memory word, if it is one of `format`.
fn texel_word(format: Format, x: &Value) -> Option<u32> {
    match format {
        Format::R8 => x.as_u64().filter(|&n| n <= 0xff).map(|n| n as u32),
        Format::R16 => x.as_u64().filter(|&n| n <= 0xffff).map(|n| n as u32),
        Format::Rgba8 => {
            let l = x.as_array().filter(|l| l.len() == 4)?;
            let mut word = 0u32;
            for (c, ch) in l.iter().enumerate() {
                word |= (ch.as_u64().filter(|&n| n <= 0xff)? as u32) << (8 * c);
            }
            Some(word)
        }
    }
}

/// `ops[i]`.
fn parse_op(e: &mut Violations, i: usize, v: &Value, p: &TextureParams, shape: &Shape) -> Option<Op> {
    let at = |f: &str| format!("ops[{i}].{f}");
    let Some(o) = v.as_object() else {
        e.push(err(format!("ops[{i}]"), shown(v), "an object"));
        return None;
    };
    let kinds = "one of bilinear, nearest, gather4, conv_quad";
    let kind = e.take(match o.get("op") {
        None => Err(err(at("op"), "(missing)", kinds)),
        Some(k) => k.as_str().and_then(OpKind::from_name).ok_or_else(|| err(at("op"), shown(k), kinds)),
    })?;
    let keys: &[&str] = match kind {
        OpKind::Bilinear | OpKind::Nearest => &["op", "u", "v", "level"],
        OpKind::Gather4 => &["op", "u", "v", "offset", "level", "channel"],
        OpKind::ConvQuad => &["op", "x", "y", "level", "channel", "kernel"],
    };
    refuse_unknown(e, o, &at, keys, &format!("a {kind} op's "));
    let level = e.take(shape.level(p, o, &at("level")));
    let uv_max = (1u64 << p.uv_bits()) - 1;
    let xy_max = (1u64 << p.int_bits()) - 1;
    match kind {
        OpKind::Bilinear | OpKind::Nearest | OpKind::Gather4 => {
            let u = e.take(uint_at(o, "u", &at("u"), None, 0, uv_max, ""));
            let v = e.take(uint_at(o, "v", &at("v"), None, 0, uv_max, ""));
            if kind == OpKind::Gather4 {
                let offset = parse_offset(e, o.get("offset"), &at("offset"), p);
                let channel = e.take(shape.channel(o, &at("channel")));
                let ((dx, dy), channel) = (offset?, channel?);
                Some(Op::Gather4 { u: u?, v: v?, level: level?, dx, dy, channel })
            } else if kind == OpKind::Bilinear {
                Some(Op::Bilinear { u: u?, v: v?, level: level? })
            } else {
                Some(Op::Nearest { u: u?, v: v?, level: level? })
            }
        }
        OpKind::ConvQuad => {
            let x = e.take(uint_at(o, "x", &at("x"), None, 0, xy_max, ""));
            let y = e.take(uint_at(o, "y", &at("y"), None, 0, xy_max, ""));
            let channel = e.take(shape.conv_channel(p, o, &at("channel")));
            let kernel = parse_kernel(e, o.get("kernel"), &at("kernel"), p);
            Some(Op::ConvQuad { x: x?, y: y?, level: level?, channel: channel?, kernel: kernel? })
        }
    }
}

/// A gather4 `offset`: `[dx, dy]` within the offset range (default [0, 0]).
fn parse_offset(e: &mut Violations, v: Option<&Value>, path: &str, p: &TextureParams) -> Option<(i64, i64)> {
    let (lo, hi) = p.offset_range();
    let Some(v) = v else {
        return Some((0, 0));
    };
    match v.as_array() {
        Some(l) if l.len() == 2 => {
            let dx = e.take(int_value(&l[0], &format!("{path}[0]"), lo, hi));
            let dy = e.take(int_value(&l[1], &format!("{path}[1]"), lo, hi));
            Some((dx?, dy?))
        }
        _ => {
            e.push(err(path, shown(v), format!("a list [dx, dy] of two integers from {lo} to {hi}")));
            None
        }
    }
}

/// A `kernel` object: width, height (1..max_kernel), weights (row-major,
/// width x height signed weight_bits integers).
fn parse_kernel(e: &mut Violations, v: Option<&Value>, path: &str, p: &TextureParams) -> Option<Kernel> {
    let allowed = "an object {width, height, weights}";
    let Some(v) = v else {
        e.push(err(path, "(missing)", allowed));
        return None;
    };
    let Some(o) = v.as_object() else {
        e.push(err(path, shown(v), allowed));
        return None;
    };
    let at = |f: &str| format!("{path}.{f}");
    refuse_unknown(e, o, &at, &["width", "height", "weights"], "");
    let mk = p.max_kernel as u64;
    let width = e.take(uint_at(o, "width", &at("width"), None, 1, mk, " (max_kernel)"));
    let height = e.take(uint_at(o, "height", &at("height"), None, 1, mk, " (max_kernel)"));
    let wpath = at("weights");
    let (lo, hi) = p.weight_range();
    let list_allowed = "a list of width x height integers, row by row";
    let weights = match o.get("weights") {
        None => {
            e.push(err(&wpath, "(missing)", list_allowed));
            None
        }
        Some(ws) => match ws.as_array() {
            None => {
                e.push(err(&wpath, shown(ws), list_allowed));
                None
            }
            Some(list) => match (width, height) {
                (Some(w), Some(h)) if list.len() as u64 != w * h => {
                    e.push(err(
                        &wpath,
                        format!("a list of {} weights", list.len()),
                        format!("a list of {} weights (width {w} x height {h})", w * h),
                    ));
                    None
                }
                _ => e.each(&wpath, list, |k, x| int_value(x, &format!("{wpath}[{k}]"), lo, hi)),
            },
        },
    };
    Some(Kernel { width: width? as u32, height: height? as u32, weights: weights?.into() })
}

/// The output file: the results of `ops` only, `image` only with a conv
/// section, the counters and cycles of the whole script. A conv_quad's
/// `stitch` is the list of its sub-operations' codes; an all-channel one's
/// `pixels` are four `[r, g, b, a]` lists (its 16 sums are in lane order,
/// channel c of pixel p at 4c + p).
pub fn output_json(_p: &TextureParams, o: &Outcome) -> Value {
    let results: Vec<Value> = o.results[..o.n_ops]
        .iter()
        .map(|r| match r {
            OpResult::Texel(t) => json!({ "texel": t }),
            OpResult::Texels(t) => json!({ "texels": t }),
            OpResult::Pixels { pixels, stitch, sub_ops } => {
                let pixels = if pixels.len() == 16 {
                    json!((0..4).map(|p| (0..4).map(|c| pixels[4 * c + p]).collect::<Vec<i64>>()).collect::<Vec<_>>())
                } else {
                    json!(pixels)
                };
                let stitch: Vec<&str> = stitch.iter().map(|s| s.name()).collect();
                json!({ "pixels": pixels, "stitch": stitch, "sub_ops": sub_ops })
            }
        })
        .collect();
    let mut out = Map::new();
    out.insert("results".into(), Value::Array(results));
    match &o.image {
        Some(Image::OneChannel(rows)) => {
            out.insert("image".into(), json!(rows));
        }
        Some(Image::AllChannels(rows)) => {
            out.insert("image".into(), json!(rows));
        }
        None => {}
    }
    out.insert("texel_fetches".into(), json!(o.texel_fetches));
    out.insert("register_writes".into(), json!(o.register_writes));
    out.insert("cycles".into(), json!(o.cycles));
    Value::Object(out)
}
