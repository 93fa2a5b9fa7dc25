//! Hand-worked cases of the golden model and its input file.

use super::reference::{address, op_result, register_writes, split, stitch, texel_fetches, wrap_signed};
use super::timing::{pass, prep_depth, schedule, simulate, steps, tiles, Step, Tile};
use super::*;
use crate::rng::Rng;
use gpurtl_params::texture::Broadcast;
use serde_json::{json, Value};

/// The spec's example input.
fn example() -> Value {
    json!({"texture": {"format": "r8", "levels": [{"width": 4, "height": 2, "texels": [1,2,3,4,5,6,7,8]}]},
           "address": ["clamp", "repeat"], "mem_latency": 10,
           "ops": [{"op": "bilinear", "u": 384, "v": 128, "level": 0},
                   {"op": "gather4", "u": 256, "v": 256, "offset": [-1, 0], "level": 0, "channel": 0},
                   {"op": "conv_quad", "x": 0, "y": 0, "level": 0, "channel": 0,
                    "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}],
           "conv": {"level": 0, "channel": 0, "kernel": {"width": 3, "height": 3, "weights": [1,2,1,2,4,2,1,2,1]}}})
}

/// A one-level r8 texture of `w` x `h`, texel (x, y) = 10 * y + x.
fn ramp(w: u32, h: u32) -> Texture {
    let texels = (0..h).flat_map(|y| (0..w).map(move |x| 10 * y + x)).collect();
    Texture { format: Format::R8, levels: vec![Level { width: w, height: h, texels }] }
}

fn workload(texture: Texture, address: [AddressMode; 2], mem_latency: u32, ops: Vec<Op>) -> Workload {
    Workload { texture, address, mem_latency, ops, conv: None }
}

const CLAMP: [AddressMode; 2] = [AddressMode::Clamp, AddressMode::Clamp];

fn k3x3() -> Kernel {
    Kernel { width: 3, height: 3, weights: vec![1, 2, 1, 2, 4, 2, 1, 2, 1].into() }
}

#[test]
fn spec_example() {
    let p = TextureParams::default();
    let w = parse_input(&example(), &p).unwrap();
    let o = run(&p, &w);
    // T: row 0 = 1 2 3 4, row 1 = 5 6 7 8; x clamp, y repeat (H = 2).
    // bilinear u = 384, v = 128: u' = 256 -> x0 = 1, a = 0; v' = 0 ->
    // y0 = 0, b = 0: exactly T(1, 0) = 2.
    assert_eq!(o.results[0], OpResult::Texel(vec![2]));
    // gather4 u = v = 256: x0 = y0 = 0; offset (-1, 0): T(-1,0) T(0,0)
    // T(-1,1) T(0,1) = (clamped x) 1 1 5 5.
    assert_eq!(o.results[1], OpResult::Texels([1, 1, 5, 5]));
    // conv_quad at (0, 0), 3x3 [1 2 1; 2 4 2; 1 2 1]: rows y-1, y, y+1.
    // pixel (0,0): y = -1, 0, 1 -> rows 1, 0, 1; x = -1, 0, 1 -> 0, 0, 1:
    //   (5 + 2*5 + 6) + (2*1 + 4*1 + 2*2) + (5 + 2*5 + 6) = 21 + 10 + 21 = 52
    // pixel (1,0): x = 0, 1, 2: (5+12+7) + (2+8+6) + 24 = 64
    // pixel (0,1): y = 0, 1, 2 -> rows 0, 1, 0: (1+2+2) + (10+20+12) + 5 = 52
    // pixel (1,1): (1+4+3) + (10+24+14) + 8 = 64
    assert_eq!(o.results[2], OpResult::Pixels { pixels: vec![52, 64, 52, 64], stitch: vec![Stitch::S4x4], sub_ops: 1 });
    // conv section: quads (0,0) and (2,0). pixel (2,0): x = 1, 2, 3:
    //   (6+14+8) + (4+12+8) + 28 = 80; pixel (3,0): x = 2, 3, 3 (clamp):
    //   (7+16+8) + (6+16+8) + 31 = 92; pixel (2,1): (2+6+4) + (12+28+16)
    //   + 12 = 80; pixel (3,1): (3+8+4) + (14+32+16) + 15 = 92.
    assert_eq!(o.image, Some(Image::OneChannel(vec![vec![52, 64, 80, 92], vec![52, 64, 80, 92]])));
    assert_eq!(o.n_ops, 3);
    assert_eq!(o.results.len(), 5);
    // Fetches: 4 + 4 + 16 + 2 * 16; selective writes 36 per quad.
    assert_eq!(o.texel_fetches, 56);
    assert_eq!(o.register_writes, 3 * 36);
    // Cycles, derived by hand again from the spec's Timing rules with the
    // prep stages (4 banks, D = 16, L = 10, PD = 1 + ceil(15 / 4) = 5):
    // descriptor writes in 0, 1, 2. bilinear accepted 3, prep stages
    // 0..4 in 4..=8, sequencer 9 (c + PD + 1), its one pass issues 9
    // (result 9 + L + 4 = 23). gather4 accepted 4 (stage 0 holds the
    // bilinear, moving on), stage 4 in 9, enters the sequencer at 10 as
    // the bilinear's pass empties it in 9: tile (-1, 0) clamps x to 0,
    // 0: texels 0, 1 share bank 0 and 2, 3 bank 2: passes {0, 2} at 10,
    // {1, 3} at 11 (result 25). The kernel writes wait for idle (the
    // result taken in 25): 26..=35. conv_quad A (0,0) accepted 36,
    // sequencer 42: tiles (-1,-1) 2 passes (x clamps), (1,-1) 1, (-1,1)
    // 2, (1,1) 1: passes 42..=47. Quad B (0,0) accepted 37, in stage 4
    // from 42, waits there, enters the sequencer at 48 (A's last pass
    // in 47): passes 48..=53. Quad C (2,0) accepted 38, stage 3 from
    // 42 (stage 4 held by B), stage 4 at 48, sequencer 54: tiles (1,-1)
    // 1, (3,-1) 2 (x 3, 4 clamp to 3), (1,1) 1, (3,1) 2: passes
    // 54..=59; result 59 + L + 4 = 73.
    assert_eq!(o.cycles, 74);
    let out = output_json(&p, &o);
    assert_eq!(
        out,
        json!({"results": [{"texel": [2]}, {"texels": [1, 1, 5, 5]},
                           {"pixels": [52, 64, 52, 64], "stitch": ["4x4"], "sub_ops": 1}],
               "image": [[52, 64, 80, 92], [52, 64, 80, 92]],
               "texel_fetches": 56, "register_writes": 108, "cycles": 74})
    );
    // Whole broadcast: 4 per fetched conv texel.
    let whole = TextureParams { broadcast: Broadcast::Whole, ..p };
    assert_eq!(run(&whole, &w).register_writes, 3 * 64);
}

#[test]
fn spec_example_script() {
    let p = TextureParams::default();
    let w = parse_input(&example(), &p).unwrap();
    let s = script(&p, &w);
    let cfg_item = |addr, data| Item::Cfg { addr, data };
    let mut want = vec![
        // r8 = 0, x clamp = 0, y repeat = 1 at [5:4], levels - 1 = 0.
        cfg_item(0x000, 0x10),
        cfg_item(0x002, 0),
        cfg_item(0x003, 0x0001_0003),
        Item::Op { kind: OpKind::Bilinear, u: 384, v: 128, level: 0, channel: 0, all_channels: false, dx: 0, dy: 0 },
        Item::Op { kind: OpKind::Gather4, u: 256, v: 256, level: 0, channel: 0, all_channels: false, dx: -1, dy: 0 },
        cfg_item(0x001, 0x0202),
    ];
    for (j, row) in [[1, 2, 1], [2, 4, 2], [1, 2, 1]].iter().enumerate() {
        for (i, &wt) in row.iter().enumerate() {
            want.push(cfg_item(0x400 + 32 * j as u64 + i as u64, wt));
        }
    }
    for x in [0, 0, 2] {
        want.push(Item::Op { kind: OpKind::ConvQuad, u: x, v: 0, level: 0, channel: 0, all_channels: false, dx: 0, dy: 0 });
    }
    assert_eq!(s, want);
    // A negative weight is written as its low weight_bits bits.
    let mut w2 = w.clone();
    w2.conv = None;
    if let Op::ConvQuad { kernel, .. } = &mut w2.ops[2] {
        let mut ws = kernel.weights.to_vec();
        ws[0] = -1;
        kernel.weights = ws.into();
    }
    assert!(script(&p, &w2).contains(&cfg_item(0x400, 0xff)));
}

#[test]
fn bilinear_by_hand() {
    let p = TextureParams::default();
    let w = parse_input(&example(), &p).unwrap();
    // u = 448: u' = 320, x0 = 1, a = 64; v = 256: v' = 128, y0 = 0,
    // b = 128. T(1,0) = 2, T(2,0) = 3, T(1,1) = 6, T(2,1) = 7:
    // (2*192*128 + 3*64*128 + 6*192*128 + 7*64*128 + 32768) >> 16
    // = (278528 + 32768) >> 16 = 311296 >> 16 = 4 (exact value 4.25).
    let op = Op::Bilinear { u: 448, v: 256, level: 0 };
    assert_eq!(op_result(&p, &w, &op), OpResult::Texel(vec![4]));
    // Nearest at u = 767 (texel 2.99), v = 256 (texel 1): T(2, 1) = 7.
    let op = Op::Nearest { u: 767, v: 256, level: 0 };
    assert_eq!(op_result(&p, &w, &op), OpResult::Texel(vec![7]));
    // Rounding: half way between 0 and 1 rounds up; a quarter down.
    let t = Texture { format: Format::R16, levels: vec![Level { width: 2, height: 1, texels: vec![0, 1] }] };
    let w = workload(t, CLAMP, 1, vec![]);
    // u = 256 (x0 = 0, a = 128), v = 128 (y0 = 0, b = 0): (1*128*256 + 32768) >> 16 = 1.
    assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 256, v: 128, level: 0 }), OpResult::Texel(vec![1]));
    // a = 64: (64*256 + 32768) >> 16 = 0.
    assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 192, v: 128, level: 0 }), OpResult::Texel(vec![0]));
    // rgba8: every channel; gather4 one channel.
    let t = Texture {
        format: Format::Rgba8,
        levels: vec![Level { width: 2, height: 1, texels: vec![0x4030_2010, 0x8070_6050] }],
    };
    let w = workload(t, CLAMP, 1, vec![]);
    // a = 128: the mean of the two, rounded up: 0x30, 0x40, 0x50, 0x60.
    assert_eq!(op_result(&p, &w, &Op::Bilinear { u: 256, v: 128, level: 0 }), OpResult::Texel(vec![0x30, 0x40, 0x50, 0x60]));
    assert_eq!(
        op_result(&p, &w, &Op::Gather4 { u: 256, v: 128, level: 0, dx: 0, dy: 0, channel: 3 }),
        OpResult::Texels([0x40, 0x80, 0x40, 0x80])
    );
}

#[test]
fn address_modes() {
    use AddressMode::*;
    // clamp
    assert_eq!(address(Clamp, -3, 5), 0);
    assert_eq!(address(Clamp, 7, 5), 4);
    // repeat: Euclidean
    assert_eq!(address(Repeat, -1, 5), 4);
    assert_eq!(address(Repeat, -6, 5), 4);
    assert_eq!(address(Repeat, -5, 5), 0);
    assert_eq!(address(Repeat, 12, 5), 2);
    // mirror: 0 1 2 3 4 | 4 3 2 1 0 | 0 1 ...; -1 -> m = 9 -> 0, -2 -> 1
    assert_eq!(address(Mirror, -1, 5), 0);
    assert_eq!(address(Mirror, -2, 5), 1);
    assert_eq!(address(Mirror, -10, 5), 0);
    assert_eq!(address(Mirror, -11, 5), 0);
    assert_eq!(address(Mirror, 5, 5), 4);
    assert_eq!(address(Mirror, 9, 5), 0);
    assert_eq!(address(Mirror, 10, 5), 0);
    // size 1: everything is texel 0
    for x in [-9, -2, -1, 0, 1, 2, 9] {
        for m in [Clamp, Repeat, Mirror] {
            assert_eq!(address(m, x, 1), 0, "{m} {x}");
        }
    }
    // size 2 mirror: 0 1 1 0 0 1 ...; -1 -> 0, -2 -> 1, -3 -> 1
    assert_eq!([-3, -2, -1, 0, 1, 2, 3].map(|x| address(Mirror, x, 2)), [1, 1, 0, 0, 1, 1, 0]);
    // split: u below 2^(F-1) gives x0 = -1
    assert_eq!(split(0, 8), (-1, 128));
    assert_eq!(split(127, 8), (-1, 255));
    assert_eq!(split(128, 8), (0, 0));
    assert_eq!(split(1, 1), (0, 0));
    assert_eq!(split(0, 1), (-1, 1));
}

#[test]
fn gather_with_negative_offsets_repeat_and_mirror() {
    let p = TextureParams::default();
    // ramp 3 x 2: row 0 = 0 1 2, row 1 = 10 11 12.
    let w = workload(ramp(3, 2), [AddressMode::Repeat, AddressMode::Mirror], 1, vec![]);
    // u = v = 128: x0 = y0 = 0; offset (-32, -32): x = -32, -31 -> (mod 3)
    // 1, 2; y = -32, -31 -> (mod 4) 0, 1 -> rows 0, 1.
    let op = Op::Gather4 { u: 128, v: 128, level: 0, dx: -32, dy: -32, channel: 0 };
    assert_eq!(op_result(&p, &w, &op), OpResult::Texels([1, 2, 11, 12]));
    // offset (31, 31): x = 31, 32 -> 1, 2; y = 31, 32 -> (mod 4) 3 -> 0, 0 -> 0.
    let op = Op::Gather4 { u: 128, v: 128, level: 0, dx: 31, dy: 31, channel: 0 };
    assert_eq!(op_result(&p, &w, &op), OpResult::Texels([1, 2, 1, 2]));
}

#[test]
fn conv_wraps_to_acc_bits() {
    let p = TextureParams { acc_bits: 8, ..TextureParams::default() };
    let t = Texture { format: Format::R8, levels: vec![Level { width: 1, height: 1, texels: vec![255] }] };
    let w = workload(t, CLAMP, 1, vec![]);
    // 1x1 kernel, weight 1: 255 mod 256 as signed = -1.
    let k = Kernel { width: 1, height: 1, weights: vec![1].into() };
    let op = Op::ConvQuad { x: 0, y: 0, level: 0, channel: 0, kernel: k };
    assert_eq!(op_result(&p, &w, &op), OpResult::Pixels { pixels: vec![-1; 4], stitch: vec![Stitch::None], sub_ops: 1 });
    // 2x1, weights -128, 127: 255 * -1 = -255 -> 1. (Patch 3x2: TX = 2,
    // TY = 1, one sub-operation of 2 tiles in one row: 8x2 by rule 1 of
    // e8a109f; it was `none` before, when only TX = 4, TY = 1 was 8x2.)
    let k = Kernel { width: 2, height: 1, weights: vec![-128, 127].into() };
    let op = Op::ConvQuad { x: 0, y: 0, level: 0, channel: 0, kernel: k };
    assert_eq!(op_result(&p, &w, &op), OpResult::Pixels { pixels: vec![1; 4], stitch: vec![Stitch::S8x2], sub_ops: 1 });
    assert_eq!(wrap_signed(128, 8), -128);
    assert_eq!(wrap_signed(-129, 8), 127);
    assert_eq!(wrap_signed(1 << 40, 32), 0);
}

#[test]
fn stitch_codes_and_sub_ops() {
    use Stitch::{None as N, S2x8, S4x4, S8x2};
    // Worked by hand from "Sub-operations and stitch codes": PW = KW + 1,
    // TX = ceil(PW/2), TY likewise; sub-operation s = tiles 4s .. 4s+3
    // (tile (i, j) is number j*TX + i); rules 1-4 in order.
    // 3x3: TX = TY = 2, one sub-op of k = 4 tiles in two rows, TX = 2: 4x4.
    assert_eq!(stitch(3, 3), (vec![S4x4], 1));
    // 2x2: patch 3x3, still TX = TY = 2: 4x4 (the doc's example).
    assert_eq!(stitch(2, 2), (vec![S4x4], 1));
    // 1x7: TX = 1, TY = 4: k = 4 in four rows; TX = 1: 2x8.
    assert_eq!(stitch(1, 7), (vec![S2x8], 1));
    // 7x1: TX = 4, TY = 1: k = 4 in row 0: 8x2.
    assert_eq!(stitch(7, 1), (vec![S8x2], 1));
    // 19x1: TX = 10, TY = 1: {0..3}, {4..7}, {8, 9}, every one in row 0
    // (the last of k = 2): 8x2 three times. (Before e8a109f one code for
    // the op, `none` here: the spec now gives one per sub-operation.)
    assert_eq!(stitch(19, 1), (vec![S8x2, S8x2, S8x2], 3));
    // 1x19: TX = 1, TY = 10: {0..3}, {4..7}, {8, 9}: k >= 2, not one row
    // (one tile a row), TX = 1: 2x8 three times.
    assert_eq!(stitch(1, 19), (vec![S2x8, S2x8, S2x8], 3));
    // 5x5: TX = TY = 3: {0,1,2,3} rows 0-1, {4..7} rows 1-2, {8} k = 1:
    // TX is neither 1 nor 2: none three times.
    assert_eq!(stitch(5, 5), (vec![N, N, N], 3));
    // 3x5: TX = 2, TY = 3: {0..3} k = 4, TX = 2: 4x4; {4, 5} row 2: 8x2.
    assert_eq!(stitch(3, 5), (vec![S4x4, S8x2], 2));
    // 9x3: TX = 5, TY = 2: {0..3} row 0: 8x2; {4} in row 0 and {5, 6, 7}
    // in row 1: none; {8, 9} row 1: 8x2.
    assert_eq!(stitch(9, 3), (vec![S8x2, N, S8x2], 3));
    // 1x1: one tile (k = 1): none.
    assert_eq!(stitch(1, 1), (vec![N], 1));
    // 3x1: TX = 2, TY = 1: {0, 1} in row 0: 8x2 (rule 1 before rule 3).
    assert_eq!(stitch(3, 1), (vec![S8x2], 1));
    // 1x3: TX = 1, TY = 2: k = 2, two rows, TX = 1: 2x8.
    assert_eq!(stitch(1, 3), (vec![S2x8], 1));
    // 1x9: TX = 1, TY = 5: {0..3} 2x8; {4} k = 1: none.
    assert_eq!(stitch(1, 9), (vec![S2x8, N], 2));
    // 3x9: TX = 2, TY = 5: {0..3} 4x4, {4..7} 4x4, {8, 9} row 4: 8x2.
    assert_eq!(stitch(3, 9), (vec![S4x4, S4x4, S8x2], 3));
    // 5x3: TX = 3, TY = 2: {0..3} rows 0-1: none; {4, 5} row 1: 8x2.
    assert_eq!(stitch(5, 3), (vec![N, S8x2], 2));
    // 19x19: TX = TY = 10, 100 tiles, 25 sub-ops. Rows are 10 tiles, so
    // every 20 tiles (5 sub-ops) repeat: {0..3} row 0, {4..7} row 0,
    // {8..11} rows 0-1 (none), {12..15} row 1, {16..19} row 1.
    let (codes, n) = stitch(19, 19);
    assert_eq!(n, 25);
    assert_eq!(codes, [S8x2, S8x2, N, S8x2, S8x2].repeat(5));
    assert_eq!([N, S4x4, S2x8, S8x2].map(|s| s.code()), [0, 1, 2, 3]);
}

#[test]
fn counts_3x3() {
    let op = Op::ConvQuad { x: 5, y: 5, level: 0, channel: 0, kernel: k3x3() };
    assert_eq!(texel_fetches(&op), 16);
    let whole = TextureParams { broadcast: Broadcast::Whole, ..TextureParams::default() };
    let selective = TextureParams { broadcast: Broadcast::Selective, ..TextureParams::default() };
    let shared = TextureParams { broadcast: Broadcast::Shared, ..TextureParams::default() };
    assert_eq!(register_writes(&whole, &op), 64);
    assert_eq!(register_writes(&selective, &op), 36);
    // Shared: one bank, each of the 16 patch texels written once.
    assert_eq!(register_writes(&shared, &op), 16);
    for p in [&whole, &selective, &shared] {
        assert_eq!(register_writes(p, &Op::Bilinear { u: 0, v: 0, level: 0 }), 0);
    }
}

/// The figures table's counts, worked by hand (PW = KW + 1, PH = KH + 1):
/// fetches PW*PH for one channel and for all four channels of rgba8 alike;
/// register writes whole 4*PW*PH, selective 4*KW*KH, shared PW*PH.
#[test]
fn counts_all_channel_and_shared() {
    let mut w = workload(ramp(40, 40), CLAMP, 10, vec![]);
    w.texture.format = Format::Rgba8;
    let quad = |kw: u32, kh: u32, channel: u32| {
        let kernel = Kernel { width: kw, height: kh, weights: vec![1; (kw * kh) as usize].into() };
        Op::ConvQuad { x: 20, y: 20, level: 0, channel, kernel }
    };
    let with = |b: Broadcast| TextureParams { broadcast: b, ..TextureParams::default() };
    // (kw, kh, fetches, whole, selective, shared)
    let table = [
        (3, 3, 16, 64, 36, 16),   // 4x4 patch
        (1, 7, 16, 64, 28, 16),   // 2x8
        (7, 1, 16, 64, 28, 16),   // 8x2
        (5, 5, 36, 144, 100, 36), // 6x6
        (19, 1, 40, 160, 76, 40), // 20x2
        (1, 19, 40, 160, 76, 40), // 2x20
    ];
    for (kw, kh, fetches, whole, selective, shared) in table {
        for channel in [0, 2, ALL_CHANNELS] {
            let op = quad(kw, kh, channel);
            assert_eq!(texel_fetches(&op), fetches, "{kw}x{kh} channel {channel}");
            assert_eq!(register_writes(&with(Broadcast::Whole), &op), whole);
            assert_eq!(register_writes(&with(Broadcast::Selective), &op), selective);
            assert_eq!(register_writes(&with(Broadcast::Shared), &op), shared);
        }
    }
    // Through run: one all-channel 3x3 quad fetches 16 texels (the naive
    // per-channel way would be 4 x 16 = 64) and writes 16 registers shared.
    w.ops = vec![quad(3, 3, ALL_CHANNELS)];
    let o = run(&with(Broadcast::Shared), &w);
    assert_eq!((o.texel_fetches, o.register_writes), (16, 16));
    w.ops = vec![quad(1, 7, ALL_CHANNELS)];
    let o = run(&with(Broadcast::Shared), &w);
    assert_eq!((o.texel_fetches, o.register_writes), (16, 16));
    let o = run(&with(Broadcast::Selective), &w);
    assert_eq!((o.texel_fetches, o.register_writes), (16, 28));
}

/// The counters' closed forms against the per-tile rules of "Tiles" and
/// "Broadcast and convolution", for every kernel shape up to 9x9.
#[test]
fn counts_match_tile_rules() {
    let p = TextureParams { banks: 1, ..TextureParams::default() };
    let w = workload(ramp(8, 8), CLAMP, 1, vec![]);
    for kw in 1..=9u32 {
        for kh in 1..=9u32 {
            let kernel = Kernel { width: kw, height: kh, weights: vec![1; (kw * kh) as usize].into() };
            let op = Op::ConvQuad { x: 3, y: 4, level: 0, channel: 0, kernel };
            let tl = tiles(&p, &w, &op);
            let (pw, ph) = (kw + 1, kh + 1);
            let tx = pw.div_ceil(2);
            assert_eq!(tl.len() as u32, tx * ph.div_ceil(2));
            let fetched: u32 = tl.iter().map(|t| t.mask.count_ones()).sum();
            assert_eq!(fetched as u64, texel_fetches(&op));
            let mut selective = 0u64;
            for (n, t) in tl.iter().enumerate() {
                let (i, j) = (n as u32 % tx, n as u32 / tx);
                for k in 0..4 {
                    if t.mask & (1 << k) == 0 {
                        continue;
                    }
                    let (a, b) = ((2 * i + (k & 1)) as i64, (2 * j + (k >> 1)) as i64);
                    for (dx, dy) in QUAD {
                        if (0..kw as i64).contains(&(a - dx)) && (0..kh as i64).contains(&(b - dy)) {
                            selective += 1;
                        }
                    }
                }
            }
            let sel = TextureParams { broadcast: Broadcast::Selective, ..p.clone() };
            let whole = TextureParams { broadcast: Broadcast::Whole, ..p.clone() };
            let shared = TextureParams { broadcast: Broadcast::Shared, ..p.clone() };
            assert_eq!(register_writes(&sel, &op), selective, "{kw}x{kh}");
            assert_eq!(register_writes(&whole, &op), 4 * fetched as u64, "{kw}x{kh}");
            // Shared: each fetched texel of each tile written once.
            assert_eq!(register_writes(&shared, &op), fetched as u64, "{kw}x{kh}");
        }
    }
}

#[test]
fn passes() {
    let t = |bank: [usize; 4], mask: u8| Tile { bank, mask };
    // 4 banks, distinct parities: one pass.
    assert_eq!(pass(&t([0, 1, 2, 3], 0b1111), 0b1111), (0b1111, 0b1111));
    // 2 banks: {0, 1} then {2, 3}.
    assert_eq!(pass(&t([0, 1, 0, 1], 0b1111), 0b1111), (0b0011, 0b11));
    assert_eq!(pass(&t([0, 1, 0, 1], 0b1111), 0b1100), (0b1100, 0b11));
    // 1 bank: one texel at a time, in order.
    assert_eq!(pass(&t([0; 4], 0b1111), 0b1110), (0b0010, 0b1));
    // Clamped x at an edge (texels 0, 1 in bank 0; 2, 3 in bank 2).
    assert_eq!(pass(&t([0, 0, 2, 2], 0b1111), 0b1111), (0b0101, 0b0101));
    // Tiles of a clamped corner: every texel is (0, 0), bank 0.
    let p = TextureParams::default();
    let w = workload(ramp(4, 4), CLAMP, 1, vec![]);
    assert_eq!(tiles(&p, &w, &Op::Bilinear { u: 0, v: 0, level: 0 }), vec![t([0; 4], 0b1111)]);
    // Repeat with an odd size: x = 2, 3 -> 2, 0 share bank 0.
    let w = workload(ramp(3, 4), [AddressMode::Repeat, AddressMode::Clamp], 1, vec![]);
    assert_eq!(tiles(&p, &w, &Op::Bilinear { u: 2 * 256 + 128, v: 128, level: 0 }), vec![t([0, 0, 2, 2], 0b1111)]);
    // Nearest at (1, 1): one texel (the others' banks are computed but not fetched).
    assert_eq!(tiles(&p, &w, &Op::Nearest { u: 256, v: 256, level: 0 }), vec![t([3, 2, 1, 0], 0b0001)]);
    // 19x1 conv: 10 tiles in a row, the last full (PW = 20), PH = 2.
    let k = Kernel { width: 19, height: 1, weights: vec![0; 19].into() };
    let tl = tiles(&p, &workload(ramp(40, 4), CLAMP, 1, vec![]), &Op::ConvQuad { x: 20, y: 1, level: 0, channel: 0, kernel: k });
    assert_eq!(tl.len(), 10);
    assert!(tl.iter().all(|t| t.mask == 0b1111));
    // 2x2 conv: PW = PH = 3: masks 1111, 0101, 0011, 0001.
    let k = Kernel { width: 2, height: 2, weights: vec![0; 4].into() };
    let tl = tiles(&p, &workload(ramp(8, 8), CLAMP, 1, vec![]), &Op::ConvQuad { x: 4, y: 4, level: 0, channel: 0, kernel: k });
    assert_eq!(tl.iter().map(|t| t.mask).collect::<Vec<_>>(), vec![0b1111, 0b0101, 0b0011, 0b0001]);
}

/// An interior bilinear (its tile is one pass with 4 banks).
fn interior() -> Op {
    Op::Bilinear { u: 2 * 256 + 128, v: 2 * 256 + 128, level: 0 }
}

#[test]
fn prep_stages() {
    // PD = 1 + ceil(CW / 4), CW = max(IB, offset_bits, 6) + 2.
    // Defaults: IB = 13, CW = 15, PD = 5 (the spec's "5 at the defaults").
    let d = TextureParams::default();
    assert_eq!(prep_depth(&d), 5);
    // max_size 2: IB = 2, CW = 8, PD = 3; max_size 16, offset_bits 8:
    // CW = 10, PD = 4; max_size 256: IB = 9, CW = 11, PD = 4.
    assert_eq!(prep_depth(&TextureParams { max_size: 2, offset_bits: 2, ..d.clone() }), 3);
    assert_eq!(prep_depth(&TextureParams { max_size: 16, offset_bits: 8, ..d.clone() }), 4);
    assert_eq!(prep_depth(&TextureParams { max_size: 256, ..d.clone() }), 4);
    // CW is the params' signed texel coordinate width.
    for n in 1..=12 {
        for offset_bits in 2..=8 {
            let p = TextureParams { max_size: 1 << n, offset_bits, ..d.clone() };
            assert_eq!(prep_depth(&p), 1 + p.coord_bits().div_ceil(4) as usize);
        }
    }
}

#[test]
fn timing_single_bilinear() {
    // Derived by hand again from the spec's Timing rules with the prep
    // stages (defaults: PD = 5). Script: 3 descriptor writes (cycles 0,
    // 1, 2), the op accepted in c = 3, its result in c + PD + L + 5 =
    // L + 13: cycles = L + 14.
    for l in [1, 2, 10, 64] {
        let w = workload(ramp(4, 4), CLAMP, l, vec![interior()]);
        assert_eq!(run(&TextureParams::default(), &w).cycles, l as u64 + 14, "L = {l}");
    }
    // One configuration write, then the op: write in 0, op accepted in
    // 1, prep stages 2..=6, sequencer and pass 7, request 8, collect
    // 8+L, S1 9+L, S2 10+L, result 11+L: cycles = L + 12.
    let p = TextureParams::default();
    let one_pass = Tile { bank: [0, 1, 2, 3], mask: 0b1111 };
    for l in [1, 10] {
        assert_eq!(simulate(&p, l, &[Step::Cfg, Step::Op(0)], &|_| vec![one_pass]), l + 12);
        // An op alone: accepted in 0, result in PD + L + 5 = L + 10.
        assert_eq!(simulate(&p, l, &[Step::Op(0)], &|_| vec![one_pass]), l + 11);
    }
    // A smaller unit, PD = 3 (max_size 2: CW = 8): result in L + 8.
    let small = TextureParams { max_size: 2, offset_bits: 2, ..p.clone() };
    assert_eq!(simulate(&small, 10, &[Step::Op(0)], &|_| vec![one_pass]), 19);
    assert_eq!(simulate(&p, 10, &[], &|_| vec![]), 0);
    // Writes only: one per cycle.
    assert_eq!(simulate(&p, 10, &[Step::Cfg, Step::Cfg], &|_| vec![]), 2);
}

#[test]
fn timing_back_to_back_and_tag_queue() {
    // Derived by hand again from the spec's Timing rules with the prep
    // stages (defaults: PD = 5, L = 10).
    let p = TextureParams::default();
    // Two bilinears: accepted 3 and 4 (stage 0 moves on in 4), in the
    // sequencer at 9 and 10 (the first's pass issues in 9 and empties
    // it), results 9 + L + 4 = 23 and 24.
    let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(), interior()]);
    assert_eq!(run(&p, &w).cycles, 25);
    // D = 2, L = 10, four bilinears accepted 3, 4, 5, 6: passes issue
    // at 9, 10; a pass issued in i is popped at the end of i + 1 + L,
    // so the count is 2 until the start of 21. The third op waits in the
    // sequencer (from 11), the fourth in prep stage 4 (from 11): passes
    // 21, 22 (the fourth enters at 22). Result = issue + L + 4: 23, 24,
    // 35, 36.
    let d2 = TextureParams { max_outstanding: 2, ..p.clone() };
    let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(); 4]);
    assert_eq!(run(&d2, &w).cycles, 37);
    // Full rate needs D >= L + 2: 20 ops accepted 3..=22 (the chain
    // never fills), passes 9..=28, last result 42.
    let w = workload(ramp(4, 4), CLAMP, 10, vec![interior(); 20]);
    assert_eq!(run(&TextureParams { max_outstanding: 12, ..p.clone() }, &w).cycles, 43);
    assert!(run(&TextureParams { max_outstanding: 11, ..p.clone() }, &w).cycles > 43);
}

#[test]
fn timing_prep_chain_fills() {
    // Derived by hand from the spec's rule 2 (defaults: PD = 5, L = 10,
    // 1 bank: an interior bilinear is 4 passes). Op n (n = 0..8)
    // accepted a_n; the sequencer takes an op every 4 cycles.
    // Op 0: accepted 3, sequencer 9, passes 9..=12.
    // Op 1: accepted 4, stage 4 from 9, sequencer 13 (passes 13..=16).
    // Op 2: accepted 5, stage 3 from 9, stage 4 13, sequencer 17.
    // Op 3: accepted 6, stage 2 from 9, ... sequencer 21.
    // Op 4: accepted 7, stage 1 from 9, sequencer 25.
    // Op 5: accepted 8, stage 0 from 9: the chain is full; stage 0
    //   moves on in 12 (the sequencer takes op 1), so op 6 is accepted
    //   in 12 (not 9), op 7 in 16, op 8 in 20.
    // The sequencer takes op n at 9 + 4n: op 8 in 41, passes 41..=44,
    // result 44 + L + 4 = 58: cycles 59 (the 4 passes per op set the
    // pace; the later acceptances do not show in cycles).
    let p = TextureParams { banks: 1, ..TextureParams::default() };
    let one_bank_tile = Tile { bank: [0; 4], mask: 0b1111 };
    let mut steps = vec![Step::Cfg, Step::Cfg, Step::Cfg];
    steps.extend((0..9).map(Step::Op));
    let (cycles, accepted) = schedule(&p, 10, &steps, &|_| vec![one_bank_tile]);
    assert_eq!(cycles, 59);
    assert_eq!(accepted, vec![3, 4, 5, 6, 7, 8, 12, 16, 20]);
}

#[test]
fn timing_passes_per_tile() {
    // Derived by hand again from the spec's Timing rules with the prep
    // stages (defaults: PD = 5): the op is accepted in 3 and enters the
    // sequencer in 3 + PD + 1 = 9.
    let l = 10u64;
    // 1 bank: 4 passes at 9..=12; result 12 + L + 4: cycles L + 17.
    let w = workload(ramp(4, 4), CLAMP, l as u32, vec![interior()]);
    assert_eq!(run(&TextureParams { banks: 1, ..TextureParams::default() }, &w).cycles, l + 17);
    // 2 banks: 2 passes at 9, 10: cycles L + 15.
    assert_eq!(run(&TextureParams { banks: 2, ..TextureParams::default() }, &w).cycles, l + 15);
    // 4 banks at a clamped corner: all four texels are (0, 0) in bank 0:
    // 4 passes, as with 1 bank; the value is T(0, 0).
    let w = workload(ramp(4, 4), CLAMP, l as u32, vec![Op::Bilinear { u: 0, v: 0, level: 0 }]);
    let o = run(&TextureParams::default(), &w);
    assert_eq!(o.cycles, l + 17);
    assert_eq!(o.results, vec![OpResult::Texel(vec![0])]);
    // Nearest: one texel, one pass: L + 14.
    let w = workload(ramp(4, 4), CLAMP, l as u32, vec![Op::Nearest { u: 0, v: 0, level: 0 }]);
    assert_eq!(run(&TextureParams::default(), &w).cycles, l + 14);
}

#[test]
fn timing_conv_quad() {
    let p = TextureParams::default();
    let l = 10u64;
    // Derived by hand again from the spec's Timing rules with the prep
    // stages (defaults: PD = 5).
    // 8x8, 3x3 at (4, 4): tiles at (3,3), (5,3), (3,5), (5,5), all inside:
    // one pass each. Writes: 3 descriptor + 1 + 9 kernel = 13 (0..=12);
    // op accepted 13, sequencer 13 + PD + 1 = 19, passes 19..=22, result
    // 22 + L + 4 = L + 26.
    let conv = |k: Kernel| Op::ConvQuad { x: 4, y: 4, level: 0, channel: 0, kernel: k };
    let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3())]);
    assert_eq!(run(&p, &w).cycles, l + 27);
    // The same kernel again: no writes, accepted in 14, in prep stage 4
    // from 19, enters the sequencer at 23 (the first's last pass in 22),
    // passes 23..=26: result L + 30.
    let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3()), conv(k3x3())]);
    assert_eq!(run(&p, &w).cycles, l + 31);
    // Then a 1x1 kernel: its 2 writes wait for idle (the first result
    // taken in L + 26): L + 27, L + 28; op at L + 29, sequencer and its
    // one tile (mask 1111, patch 2x2, one pass) at L + 35, result
    // L + 35 + L + 4.
    let k1 = Kernel { width: 1, height: 1, weights: vec![3].into() };
    let w = workload(ramp(8, 8), CLAMP, l as u32, vec![conv(k3x3()), conv(k1)]);
    assert_eq!(run(&p, &w).cycles, 2 * l + 40);
}

#[test]
fn layout_and_banks() {
    // 4 banks, 5x3 then 2x1: pitch 3, rows 2 -> level 1 at base 6; 1 x 1.
    let p = TextureParams::default();
    let t = Texture {
        format: Format::R8,
        levels: vec![
            Level { width: 5, height: 3, texels: (0..15).collect() },
            Level { width: 2, height: 1, texels: vec![100, 101] },
        ],
    };
    assert_eq!(level_bases(&p, &t), vec![0, 6]);
    let b = bank_words(&p, &t);
    assert_eq!(b.len(), 4);
    assert!(b.iter().all(|bank| bank.len() == 7));
    // (x, y) -> bank (x&1) + 2(y&1), word (y>>1)*3 + (x>>1).
    assert_eq!(b[0], vec![0, 2, 4, 10, 12, 14, 100]);
    assert_eq!(b[1], vec![1, 3, 0, 11, 13, 0, 101]);
    assert_eq!(b[2], vec![5, 7, 9, 0, 0, 0, 0]);
    assert_eq!(b[3], vec![6, 8, 0, 0, 0, 0, 0]);
    // 1 bank: pitch = width, row by row.
    let p1 = TextureParams { banks: 1, ..p.clone() };
    assert_eq!(level_bases(&p1, &t), vec![0, 15]);
    assert_eq!(bank_words(&p1, &t)[0], (0..15).chain([100, 101]).collect::<Vec<u32>>());
    // 2 banks: by x parity, pitch 3, rows 3.
    let p2 = TextureParams { banks: 2, ..p };
    assert_eq!(level_bases(&p2, &t), vec![0, 9]);
    assert_eq!(bank_words(&p2, &t)[1], vec![1, 3, 0, 6, 8, 0, 11, 13, 0, 101]);
    // Interleaved: bank b's word w at byte 4 * (w * banks + b).
    let m = crate::models::texture::interleaved(&p2, &t);
    assert_eq!(m.read_words(0, 16), vec![0, 1, 2, 3]);
    assert_eq!(m.read_words(4 * (9 * 2 + 1), 4), vec![101]);
    assert_eq!(m.read_words(4 * 20, 4), vec![0]);
    let m4 = crate::models::texture::interleaved(&TextureParams::default(), &t);
    assert_eq!(m4.read_words(4 * (3 * 4 + 1), 4), vec![11]);
}

#[test]
fn odd_conv_section_drops_outside_pixels() {
    let p = TextureParams::default();
    let mut w = workload(ramp(3, 3), CLAMP, 4, vec![]);
    let k = Kernel { width: 1, height: 1, weights: vec![2].into() };
    w.conv = Some(ConvJob { level: 0, channel: 0, kernel: k });
    let o = run(&p, &w);
    // Quads (0,0), (2,0), (0,2), (2,2): 1x1 weight 2 doubles each texel.
    assert_eq!(o.results.len(), 4);
    assert_eq!(o.image, Some(Image::OneChannel(vec![vec![0, 2, 4], vec![20, 22, 24], vec![40, 42, 44]])));
    // Quad (2,2)'s pixel (3, 3) is clamped to (2, 2): computed, not shown.
    // (A 1x1 kernel's patch is 2x2: one tile, no stitch code.)
    assert_eq!(o.results[3], OpResult::Pixels { pixels: vec![44, 44, 44, 44], stitch: vec![Stitch::None], sub_ops: 1 });
    assert_eq!(output_json(&p, &o)["results"], json!([]));
    assert_eq!(o.texel_fetches, 16);
}

// ---- parse_input ----

fn perrs(v: Value, p: &TextureParams) -> Vec<String> {
    parse_input(&v, p).unwrap_err().0.iter().map(|e| e.to_string()).collect()
}

fn tex() -> Value {
    json!({"format": "r8", "levels": [{"width": 2, "height": 2, "texels": [1, 2, 3, 4]}]})
}

#[test]
fn parse_defaults() {
    let p = TextureParams::default();
    let w = parse_input(
        &json!({"texture": tex(), "ops": [{"op": "gather4", "u": 0, "v": 0}, {"op": "nearest", "u": 1, "v": 2}]}),
        &p,
    )
    .unwrap();
    assert_eq!(w.address, CLAMP);
    assert_eq!(w.mem_latency, 10);
    assert_eq!(w.ops, vec![
        Op::Gather4 { u: 0, v: 0, level: 0, dx: 0, dy: 0, channel: 0 },
        Op::Nearest { u: 1, v: 2, level: 0 },
    ]);
    assert_eq!(w.conv, None);
    // rgba8 texels pack r in 7:0 .. a in 31:24; a mip chain.
    let v = json!({"texture": {"format": "rgba8", "levels": [
        {"width": 3, "height": 1, "texels": [[1, 2, 3, 4], [0, 0, 0, 255], [255, 0, 0, 0]]},
        {"width": 1, "height": 1, "texels": [[9, 9, 9, 9]]}]}});
    let w = parse_input(&v, &p).unwrap();
    assert_eq!(w.texture.levels[0].texels, vec![0x0403_0201, 0xff00_0000, 0xff]);
    assert_eq!(w.texture.levels[1].texels, vec![0x0909_0909]);
}

#[test]
fn parse_reports_every_violation() {
    let p = TextureParams::default();
    let v = json!({
        "texture": {"format": "r16", "levels": [
            {"width": 4, "height": 3, "texels": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 65536]},
            {"width": 3, "height": 1, "texels": [0, 1, 2]}]},
        "address": ["clamp", "wrap"],
        "mem_latency": 65,
        "ops": [
            {"op": "bilinear", "u": 0, "v": 2097152, "level": 2, "channel": 0},
            {"op": "gather4", "u": 0, "v": 0, "offset": [-33, 31], "channel": 1},
            {"op": "conv_quad", "x": 8192, "y": 0,
             "kernel": {"width": 20, "height": 1, "weights": [128, -129]}},
            {"op": "sample"}
        ],
        "conv": {"level": 0, "kernel": {"width": 1, "height": 1, "weights": [1, 2]}, "x": 1}
    });
    assert_eq!(
        perrs(v, &p),
        vec![
            "input `texture.levels[0].texels[11]` = 65536: must be an integer from 0 to 65535",
            "input `texture.levels[1].width` = 3: must be an integer from 2 to 2 (max(1, 4 >> 1): levels[0].width halved)",
            "input `address[1]` = \"wrap\": must be one of clamp, repeat, mirror",
            "input `mem_latency` = 65: must be an integer from 1 to 64",
            "input `ops[0].channel` = (given): must be absent: a bilinear op's keys are op, u, v, level",
            "input `ops[0].level` = 2: must be an integer from 0 to 1 (below the texture's 2 levels)",
            "input `ops[0].v` = 2097152: must be an integer from 0 to 2097151",
            "input `ops[1].offset[0]` = -33: must be an integer from -32 to 31",
            "input `ops[1].channel` = 1: must be an integer from 0 to 0 (below the 1 channels of r16)",
            "input `ops[2].x` = 8192: must be an integer from 0 to 8191",
            "input `ops[2].kernel.width` = 20: must be an integer from 1 to 19 (max_kernel)",
            "input `ops[2].kernel.weights[0]` = 128: must be an integer from -128 to 127",
            "input `ops[2].kernel.weights[1]` = -129: must be an integer from -128 to 127",
            "input `ops[3].op` = \"sample\": must be one of bilinear, nearest, gather4, conv_quad",
            "input `conv.x` = (given): must be absent: keys are level, channel, kernel",
            "input `conv.kernel.weights` = a list of 2 weights: must be a list of 1 weights (width 1 x height 1)",
        ]
    );
}

#[test]
fn parse_messages() {
    let p = TextureParams::default();
    let with = |extra: Value| {
        let mut o = json!({"texture": tex()});
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "input `(file)` = []: must be a JSON object with a `texture`"),
        (json!({}), "input `texture` = (missing): must be an object {format, levels}"),
        (with(json!({"extra": 1})), "input `extra` = (given): must be absent: keys are texture, address, mem_latency, ops, conv"),
        (json!({"texture": {"levels": []}}), "input `texture.format` = (missing): must be one of r8, r16, rgba8"),
        (
            json!({"texture": {"format": "r8", "levels": []}}),
            "input `texture.levels` = a list of 0 levels: must be a list of 1 to 13 levels",
        ),
        (
            json!({"texture": {"format": "r8", "levels": [{"width": 0, "height": 1, "texels": []}]}}),
            "input `texture.levels[0].width` = 0: must be an integer from 1 to 4096",
        ),
        (
            json!({"texture": {"format": "r8", "levels": [{"width": 4097, "height": 1, "texels": []}]}}),
            "input `texture.levels[0].width` = 4097: must be an integer from 1 to 4096",
        ),
        (
            json!({"texture": {"format": "r8", "levels": [{"width": 2, "height": 1, "texels": [1]}]}}),
            "input `texture.levels[0].texels` = a list of 1 texels: must be a list of 2 texels (width 2 x height 1)",
        ),
        (
            json!({"texture": {"format": "rgba8", "levels": [{"width": 1, "height": 1, "texels": [[1, 2, 3]]}]}}),
            "input `texture.levels[0].texels[0]` = [1,2,3]: must be a list [r, g, b, a] of integers from 0 to 255",
        ),
        (
            json!({"texture": {"format": "r8", "levels": [{"width": 1, "height": 1, "texels": [256]}]}}),
            "input `texture.levels[0].texels[0]` = 256: must be an integer from 0 to 255",
        ),
        (
            json!({"texture": {"format": "r8", "levels": [{"width": 1, "height": 1, "texels": [0]}, {"width": 1, "height": 0, "texels": []}]}}),
            "input `texture.levels[1].height` = 0: must be an integer from 1 to 1 (max(1, 1 >> 1): levels[0].height halved)",
        ),
        (with(json!({"address": "clamp"})), "input `address` = \"clamp\": must be a list [x mode, y mode], each clamp, repeat or mirror"),
        (with(json!({"mem_latency": 0})), "input `mem_latency` = 0: must be an integer from 1 to 64"),
        (with(json!({"ops": {}})), "input `ops` = {}: must be a list of ops"),
        (with(json!({"ops": [3]})), "input `ops[0]` = 3: must be an object"),
        (with(json!({"ops": [{"u": 0}]})), "input `ops[0].op` = (missing): must be one of bilinear, nearest, gather4, conv_quad"),
        (with(json!({"ops": [{"op": "nearest", "v": 0}]})), "input `ops[0].u` = (missing): must be an integer from 0 to 2097151"),
        (with(json!({"ops": [{"op": "nearest", "u": -1, "v": 0}]})), "input `ops[0].u` = -1: must be an integer from 0 to 2097151"),
        (
            with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 8192, "kernel": {"width": 1, "height": 1, "weights": [0]}}]})),
            "input `ops[0].y` = 8192: must be an integer from 0 to 8191",
        ),
        (
            with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "offset": [0]}]})),
            "input `ops[0].offset` = [0]: must be a list [dx, dy] of two integers from -32 to 31",
        ),
        (
            with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "offset": [0, 32]}]})),
            "input `ops[0].offset[1]` = 32: must be an integer from -32 to 31",
        ),
        (
            with(json!({"ops": [{"op": "gather4", "u": 0, "v": 0, "x": 0}]})),
            "input `ops[0].x` = (given): must be absent: a gather4 op's keys are op, u, v, offset, level, channel",
        ),
        (
            with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0}]})),
            "input `ops[0].kernel` = (missing): must be an object {width, height, weights}",
        ),
        (
            with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "kernel": {"width": 1, "height": 0, "weights": []}}]})),
            "input `ops[0].kernel.height` = 0: must be an integer from 1 to 19 (max_kernel)",
        ),
        (
            with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "u": 0, "kernel": {"width": 1, "height": 1, "weights": [0]}}]})),
            "input `ops[0].u` = (given): must be absent: a conv_quad op's keys are op, x, y, level, channel, kernel",
        ),
        (
            with(json!({"ops": [{"op": "conv_quad", "x": 0, "y": 0, "kernel": {"width": 1, "height": 1}}]})),
            "input `ops[0].kernel.weights` = (missing): must be a list of width x height integers, row by row",
        ),
        (with(json!({"conv": []})), "input `conv` = []: must be an object {level, channel, kernel}"),
        (with(json!({"conv": {"level": 1}})), "input `conv.level` = 1: must be an integer from 0 to 0 (below the texture's 1 levels)"),
    ];
    for (v, want) in cases {
        assert_eq!(perrs(v.clone(), &p)[0], want, "{v}");
    }
}

#[test]
fn parse_layout_must_fit() {
    // 1 bank, addr_bits 8: 256 words. 16x16 = 256 fits, plus a second
    // level 8x8 (64 more) does not.
    let p = TextureParams { banks: 1, addr_bits: 8, ..TextureParams::default() };
    let lv = |n: u32| json!({"width": n, "height": n, "texels": vec![0; (n * n) as usize]});
    let fits = json!({"texture": {"format": "r8", "levels": [lv(16)]}});
    assert!(parse_input(&fits, &p).is_ok());
    let big = json!({"texture": {"format": "r8", "levels": [lv(16), lv(8)]}});
    assert_eq!(
        perrs(big, &p),
        vec!["input `texture.levels` = a layout of 320 words per bank: must be at most 2^addr_bits = 256 words per bank"]
    );
    // Too many levels for max_size 4 (3 levels at most).
    let p = TextureParams { max_size: 4, ..TextureParams::default() };
    let v = json!({"texture": {"format": "r8", "levels": [lv(4), lv(2), lv(1), lv(1)]}});
    assert_eq!(perrs(v, &p), vec!["input `texture.levels` = a list of 4 levels: must be a list of 1 to 3 levels"]);
}

// ---- random workloads ----

fn param_sets() -> Vec<TextureParams> {
    let d = TextureParams::default();
    vec![
        d.clone(),
        TextureParams { banks: 1, max_outstanding: 2, ..d.clone() },
        TextureParams { banks: 2, broadcast: Broadcast::Whole, max_outstanding: 5, ..d.clone() },
        TextureParams {
            banks: 4,
            max_size: 2,
            frac_bits: 1,
            offset_bits: 2,
            max_kernel: 1,
            weight_bits: 2,
            acc_bits: 8,
            all_channels: true,
            broadcast: Broadcast::Whole,
            max_outstanding: 2,
            addr_bits: 8,
            mem_if: gpurtl_params::MemIf::Native,
        },
        TextureParams { max_size: 16, frac_bits: 10, offset_bits: 8, max_kernel: 31, weight_bits: 16, acc_bits: 48, addr_bits: 8, ..d.clone() },
        TextureParams { broadcast: Broadcast::Shared, max_outstanding: 3, ..d.clone() },
        // No all-channel datapath: the compute unit's texture, and shared.
        TextureParams { banks: 1, max_kernel: 8, all_channels: false, max_outstanding: 4, addr_bits: 16, ..d.clone() },
        TextureParams { all_channels: false, broadcast: Broadcast::Shared, ..d },
    ]
}

#[test]
fn random_workloads_are_valid_and_run() {
    for (n, p) in param_sets().iter().enumerate() {
        for seed in 0..40 {
            let mut rng = Rng::new(seed * 10 + n as u64);
            let w = random_workload(&mut rng, p, 12);
            // What the generator makes, the parser accepts (round trip
            // through the input format).
            let v = to_input(&w);
            assert_eq!(parse_input(&v, p).as_ref(), Ok(&w), "seed {seed}");
            let o = run(p, &w);
            assert_eq!(o.results.len(), all_ops(&w).len());
            let fetched: u64 =
                all_ops(&w).iter().map(|op| tiles(p, &w, op).iter().map(|t| t.mask.count_ones() as u64).sum::<u64>()).sum();
            assert_eq!(fetched, o.texel_fetches);
            assert!(o.texel_fetches < 3000, "seed {seed}: {} fetches", o.texel_fetches);
            // Each op's result at least PD + L + 5 after its acceptance.
            assert!(o.cycles >= (prep_depth(p) + 6) as u64 + w.mem_latency as u64);
            for r in &o.results {
                if let OpResult::Pixels { pixels, .. } = r {
                    let half = 1i64 << (p.acc_bits - 1);
                    assert!(pixels.iter().all(|x| (-half..half).contains(x)));
                }
            }
        }
    }
}

/// A workload back as an input file.
fn to_input(w: &Workload) -> Value {
    let texel = |t: u32| match w.texture.format {
        Format::Rgba8 => json!([t & 0xff, (t >> 8) & 0xff, (t >> 16) & 0xff, t >> 24]),
        _ => json!(t),
    };
    let kernel = |k: &Kernel| json!({"width": k.width, "height": k.height, "weights": &*k.weights});
    let levels: Vec<Value> = w
        .texture
        .levels
        .iter()
        .map(|l| json!({"width": l.width, "height": l.height, "texels": l.texels.iter().map(|&t| texel(t)).collect::<Vec<_>>()}))
        .collect();
    let ops: Vec<Value> = w
        .ops
        .iter()
        .map(|op| match op {
            Op::Bilinear { u, v, level } => json!({"op": "bilinear", "u": u, "v": v, "level": level}),
            Op::Nearest { u, v, level } => json!({"op": "nearest", "u": u, "v": v, "level": level}),
            Op::Gather4 { u, v, level, dx, dy, channel } => {
                json!({"op": "gather4", "u": u, "v": v, "level": level, "offset": [dx, dy], "channel": channel})
            }
            Op::ConvQuad { x, y, level, channel, kernel: k } if *channel == ALL_CHANNELS => {
                json!({"op": "conv_quad", "x": x, "y": y, "level": level, "kernel": kernel(k)})
            }
            Op::ConvQuad { x, y, level, channel, kernel: k } => {
                json!({"op": "conv_quad", "x": x, "y": y, "level": level, "channel": channel, "kernel": kernel(k)})
            }
        })
        .collect();
    let mut v = json!({
        "texture": {"format": w.texture.format.name(), "levels": levels},
        "address": [w.address[0].name(), w.address[1].name()],
        "mem_latency": w.mem_latency,
        "ops": ops,
    });
    if let Some(c) = &w.conv {
        v["conv"] = json!({"level": c.level, "kernel": kernel(&c.kernel)});
        if c.channel != ALL_CHANNELS {
            v["conv"]["channel"] = json!(c.channel);
        }
    }
    v
}

/// The model's timing against a second, closed-form reading of the
/// no-stall schedule: op n leaves prep stage k (k = 0..PD-1) in cycle
/// `m[n][k] = max(m[n][k-1] + 1, m[n-1][k+1])` (`m[n][-1]` its
/// acceptance; it may leave as the op before it leaves stage k+1, and
/// "leaving" stage PD is the sequencer taking the next op, in the
/// cycle of the op's last pass); an op is accepted when the op before
/// it leaves stage 0 at the earliest; its first pass can issue in
/// `m[n][PD-1] + 1`; passes issue one per cycle (at most D in the tag
/// queue, each for L + 1 cycles); an op's result comes L + 4 after its
/// last pass, and a configuration write waits for every earlier result.
#[test]
fn timing_matches_closed_form() {
    for (n, p) in param_sets().iter().enumerate() {
        let pd = prep_depth(p);
        for seed in 0..40 {
            let mut rng = Rng::new(1000 + seed * 10 + n as u64);
            let w = random_workload(&mut rng, p, 10);
            let l = w.mem_latency as u64;
            let d = p.max_outstanding as usize;
            let ops = all_ops(&w);
            let mut op_i = 0;
            let mut t = 0u64; // the first cycle the next item may handshake
            let mut issues: Vec<u64> = Vec::new(); // every pass's issue cycle
            let mut last_result = 0u64;
            let mut last = None;
            // The op before's leaving cycles: prep stages 0..PD-1, then
            // the sequencer (its last pass); 0 before any op (every
            // later cycle is past them).
            let mut prev_leaves = vec![0u64; pd + 1];
            let mut accepted = Vec::new();
            for item in script(p, &w) {
                match item {
                    Item::Cfg { .. } => {
                        let c = t.max(if op_i > 0 { last_result + 1 } else { 0 });
                        last = Some(c);
                        t = c + 1;
                    }
                    Item::Op { .. } => {
                        let c = t.max(prev_leaves[0]);
                        accepted.push(c);
                        let mut leaves = vec![0u64; pd + 1];
                        let mut at = c; // the cycle it entered the stage, minus one
                        for (k, leave) in leaves[..pd].iter_mut().enumerate() {
                            *leave = (at + 1).max(prev_leaves[k + 1]);
                            at = *leave;
                        }
                        let mut i = leaves[pd - 1] + 1;
                        for tile in tiles(p, &w, &ops[op_i]) {
                            let mut todo = tile.mask;
                            while todo != 0 {
                                // Count < D: the pass d back must be popped (issued + L + 1 < i).
                                if issues.len() >= d {
                                    i = i.max(issues[issues.len() - d] + l + 2);
                                }
                                issues.push(i);
                                todo &= !pass(&tile, todo).0;
                                i += 1;
                            }
                        }
                        let last_issue = i - 1;
                        // The sequencer takes the next op in the cycle of the last issue.
                        leaves[pd] = last_issue;
                        prev_leaves = leaves;
                        last_result = last_issue + l + 4;
                        last = Some(c.max(last.unwrap_or(0)));
                        t = c + 1;
                        op_i += 1;
                    }
                }
            }
            let want = if op_i > 0 { last_result.max(last.unwrap_or(0)) + 1 } else { last.map_or(0, |c| c + 1) };
            assert_eq!(run(p, &w).cycles, want, "params {n} seed {seed}");
            let (_, sim_accepted) = schedule(p, l, &steps(&script(p, &w)), &|i| tiles(p, &w, &ops[i]));
            assert_eq!(sim_accepted, accepted, "params {n} seed {seed}");
        }
    }
}

// ---- all-channel conv_quad (rgba8), stitch codes per sub-operation, shared broadcast ----

/// A 2x2 rgba8 texture: (0,0) = [1, 10, 100, 0], (1,0) = [2, 20, 200, 1],
/// (0,1) = [3, 30, 0, 2], (1,1) = [4, 40, 50, 255].
fn rgba_2x2() -> Texture {
    let px = |c: [u32; 4]| c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24;
    let texels = vec![px([1, 10, 100, 0]), px([2, 20, 200, 1]), px([3, 30, 0, 2]), px([4, 40, 50, 255])];
    Texture { format: Format::Rgba8, levels: vec![Level { width: 2, height: 2, texels }] }
}

/// The 2x1 kernel [1, 2]: w(0, 0) = 1, w(1, 0) = 2.
fn k2x1() -> Kernel {
    Kernel { width: 2, height: 1, weights: vec![1, 2].into() }
}

#[test]
fn all_channel_conv_by_hand() {
    let p = TextureParams::default();
    let w = workload(rgba_2x2(), CLAMP, 10, vec![]);
    // KW = 2, KH = 1: pixel (x', y') = 1 * T(x' - 1, y') + 2 * T(x', y')
    // (floor(KW/2) = 1, floor(KH/2) = 0), x clamped:
    //   p0 (0,0): T(0,0) + 2 T(0,0) = 3 [1, 10, 100, 0]     = [3, 30, 300, 0]
    //   p1 (1,0): T(0,0) + 2 T(1,0) = [1+4, 10+40, 100+400, 0+2] = [5, 50, 500, 2]
    //   p2 (0,1): 3 T(0,1) = 3 [3, 30, 0, 2]                = [9, 90, 0, 6]
    //   p3 (1,1): T(0,1) + 2 T(1,1) = [3+8, 30+80, 0+100, 2+510] = [11, 110, 100, 512]
    // Lanes 4c + p: r sums, then g, b, a.
    // Stitch: PW = 3, PH = 2, TX = 2, TY = 1: one sub-op of 2 tiles in
    // row 0: 8x2.
    let all = Op::ConvQuad { x: 0, y: 0, level: 0, channel: ALL_CHANNELS, kernel: k2x1() };
    let lanes = vec![3, 5, 9, 11, 30, 50, 90, 110, 300, 500, 0, 100, 0, 2, 6, 512];
    assert_eq!(op_result(&p, &w, &all), OpResult::Pixels { pixels: lanes, stitch: vec![Stitch::S8x2], sub_ops: 1 });
    // Each channel alone (a one-channel op of channel c) gives lanes 4c..4c+3.
    let by_channel = [[3, 5, 9, 11], [30, 50, 90, 110], [300, 500, 0, 100], [0, 2, 6, 512]];
    for (c, want) in by_channel.iter().enumerate() {
        let one = Op::ConvQuad { x: 0, y: 0, level: 0, channel: c as u32, kernel: k2x1() };
        assert_eq!(op_result(&p, &w, &one), OpResult::Pixels { pixels: want.to_vec(), stitch: vec![Stitch::S8x2], sub_ops: 1 });
    }
    // Wrapping per channel: acc_bits 8, the a sum of p3 is 512 -> 0, the b
    // sums 300 -> 44, 500 -> -12 (500 - 512); the others fit.
    let p8 = TextureParams { acc_bits: 8, ..p.clone() };
    let OpResult::Pixels { pixels, .. } = op_result(&p8, &w, &all) else { panic!() };
    assert_eq!(pixels, vec![3, 5, 9, 11, 30, 50, 90, 110, 44, -12, 0, 100, 0, 2, 6, 0]);
    // On r8 a conv_quad without channel is channel 0 (one channel, 4 sums):
    // T(x, y) = 10y + x: p0 = 0 + 0, p1 = 0 + 2, p2 = 30, p3 = 10 + 22.
    let w8 = workload(ramp(2, 2), CLAMP, 10, vec![]);
    assert_eq!(op_result(&p, &w8, &all), OpResult::Pixels { pixels: vec![0, 2, 30, 32], stitch: vec![Stitch::S8x2], sub_ops: 1 });
}

#[test]
fn all_channel_run_output_and_cycles() {
    // The run file with no `channel` on rgba8: an all-channel conv_quad
    // and an all-channel conv section (one quad, the same kernel: no
    // second kernel write).
    let v = json!({"texture": {"format": "rgba8", "levels": [{"width": 2, "height": 2,
                     "texels": [[1, 10, 100, 0], [2, 20, 200, 1], [3, 30, 0, 2], [4, 40, 50, 255]]}]},
                   "ops": [{"op": "conv_quad", "x": 0, "y": 0, "kernel": {"width": 2, "height": 1, "weights": [1, 2]}}],
                   "conv": {"kernel": {"width": 2, "height": 1, "weights": [1, 2]}}});
    for b in [Broadcast::Whole, Broadcast::Selective, Broadcast::Shared] {
        let p = TextureParams { broadcast: b, ..TextureParams::default() };
        let w = parse_input(&v, &p).unwrap();
        assert_eq!(w.ops[0], Op::ConvQuad { x: 0, y: 0, level: 0, channel: ALL_CHANNELS, kernel: k2x1() });
        assert_eq!(w.conv.as_ref().unwrap().channel, ALL_CHANNELS);
        // The driver: op_channel_i 0, op_all_channels_i 1.
        let s = script(&p, &w);
        let conv_item = Item::Op { kind: OpKind::ConvQuad, u: 0, v: 0, level: 0, channel: 0, all_channels: true, dx: 0, dy: 0 };
        assert_eq!(s.len(), 3 + 3 + 2);
        assert_eq!(&s[6..], &[conv_item.clone(), conv_item]);
        let o = run(&p, &w);
        // Fetches: patch 3x2 = 6 per quad, whatever the channels.
        assert_eq!(o.texel_fetches, 12);
        // Register writes per quad: whole 4 * 6 = 24; selective 4 * KW*KH
        // = 8; shared 6 (each fetched texel once).
        let per_quad = match b {
            Broadcast::Whole => 24,
            Broadcast::Selective => 8,
            Broadcast::Shared => 6,
        };
        assert_eq!(o.register_writes, 2 * per_quad);
        // Cycles (defaults: 4 banks, PD = 5, D = 16, L = 10): descriptor
        // writes 0, 1, 2; kernel writes 3, 4, 5; quad A accepted 6, in the
        // sequencer 12. Its patch origin is (-1, 0): tile 0 at (-1, 0),
        // mask 1111, texels (-1,0) -> (0,0) and (0,0) both bank 0, (-1,1)
        // -> (0,1) and (0,1) both bank 2: passes {0, 2} at 12, {1, 3} at
        // 13 (bank 0's and 2's request registers handshake in 13); tile 1
        // at (1, 0), mask 0101 (2 + 1 < PW = 3 fails for k = 1, 3), banks
        // 1 and 3: one pass at 14. Quad B accepted 7, prep stage 4 from 12,
        // enters the sequencer as A's last pass issues (14): at 15, passes
        // 15, 16, 17. Result = last pass + L + 4 = 31: cycles 32. The same
        // for every broadcast and for one channel.
        assert_eq!(o.cycles, 32, "{b}");
        let pixels = json!([[3, 30, 300, 0], [5, 50, 500, 2], [9, 90, 0, 6], [11, 110, 100, 512]]);
        assert_eq!(
            output_json(&p, &o),
            json!({"results": [{"pixels": pixels, "stitch": ["8x2"], "sub_ops": 1}],
                   "image": [[[3, 30, 300, 0], [5, 50, 500, 2]], [[9, 90, 0, 6], [11, 110, 100, 512]]],
                   "texel_fetches": 12, "register_writes": 2 * per_quad, "cycles": 32})
        );
        // One channel (g) instead: the same fetches, writes and cycles.
        let mut v1 = v.clone();
        v1["ops"][0]["channel"] = json!(1);
        v1["conv"]["channel"] = json!(1);
        let w1 = parse_input(&v1, &p).unwrap();
        assert!(script(&p, &w1).iter().all(|i| !matches!(i, Item::Op { all_channels: true, .. })));
        let o1 = run(&p, &w1);
        assert_eq!((o1.texel_fetches, o1.register_writes, o1.cycles), (12, 2 * per_quad, 32));
        assert_eq!(o1.image, Some(Image::OneChannel(vec![vec![30, 50], vec![90, 110]])));
        assert_eq!(output_json(&p, &o1)["results"][0]["pixels"], json!([30, 50, 90, 110]));
    }
}

#[test]
fn timing_all_channel_same_as_one_channel() {
    // Derived by hand from the spec's Timing rules (defaults: PD = 5,
    // 4 banks, D = 16, L = 10), as in timing_conv_quad: 8x8 rgba8, 3x3 at
    // (4, 4): tiles at (3,3), (5,3), (3,5), (5,5), all inside, one pass
    // each. Writes: 3 descriptor + 1 + 9 kernel (0..=12). Quad A (all
    // channels) accepted 13, sequencer 19, passes 19..=22. Quad B (channel
    // 1; the kernel is the same, so no writes: the channel is not part of
    // the kernel) accepted 14, prep stage 4 from 19, sequencer 23 (A's last
    // pass in 22), passes 23..=26, result 26 + L + 4 = 40: cycles 41.
    let mut t = ramp(8, 8);
    t.format = Format::Rgba8;
    for b in [Broadcast::Whole, Broadcast::Selective, Broadcast::Shared] {
        let p = TextureParams { broadcast: b, ..TextureParams::default() };
        let conv = |channel| Op::ConvQuad { x: 4, y: 4, level: 0, channel, kernel: k3x3() };
        let w = workload(t.clone(), CLAMP, 10, vec![conv(ALL_CHANNELS), conv(1)]);
        assert_eq!(run(&p, &w).cycles, 41, "{b}");
        let w = workload(t.clone(), CLAMP, 10, vec![conv(ALL_CHANNELS)]);
        assert_eq!(run(&p, &w).cycles, 37, "{b}");
    }
    // 19x1 all-channel at (20, 20) of a 40x40 rgba8 texture (shared): 10
    // tiles inside, one pass each. Writes 3 + 1 + 19 (0..=22); accepted 23,
    // sequencer 29, passes 29..=38, result 38 + 14 = 52: cycles 53.
    let mut t = ramp(40, 40);
    t.format = Format::Rgba8;
    let k = Kernel { width: 19, height: 1, weights: vec![1; 19].into() };
    let w = workload(t, CLAMP, 10, vec![Op::ConvQuad { x: 20, y: 20, level: 0, channel: ALL_CHANNELS, kernel: k }]);
    let p = TextureParams { broadcast: Broadcast::Shared, ..TextureParams::default() };
    let o = run(&p, &w);
    assert_eq!((o.cycles, o.texel_fetches, o.register_writes), (53, 40, 40));
    let OpResult::Pixels { stitch, sub_ops, .. } = &o.results[0] else { panic!() };
    assert_eq!((stitch.as_slice(), *sub_ops), ([Stitch::S8x2; 3].as_slice(), 3));
    assert_eq!(output_json(&p, &o)["results"][0]["stitch"], json!(["8x2", "8x2", "8x2"]));
}

#[test]
fn parse_conv_channel() {
    let p = TextureParams::default();
    let k = json!({"width": 1, "height": 1, "weights": [1]});
    let input = |format: &str, texel: Value, op: Value| {
        json!({"texture": {"format": format, "levels": [{"width": 1, "height": 1, "texels": [texel]}]},
               "ops": [op], "conv": {"kernel": k}})
    };
    // rgba8 without channel: all-channel (op and conv section); with it, that one.
    let w = parse_input(&input("rgba8", json!([1, 2, 3, 4]), json!({"op": "conv_quad", "x": 0, "y": 0, "kernel": k})), &p).unwrap();
    assert!(matches!(w.ops[0], Op::ConvQuad { channel: ALL_CHANNELS, .. }));
    assert_eq!(w.conv.as_ref().unwrap().channel, ALL_CHANNELS);
    let w = parse_input(&input("rgba8", json!([1, 2, 3, 4]), json!({"op": "conv_quad", "x": 0, "y": 0, "channel": 3, "kernel": k})), &p).unwrap();
    assert!(matches!(w.ops[0], Op::ConvQuad { channel: 3, .. }));
    // r8 without channel: channel 0, op_all_channels_i 0.
    let w = parse_input(&input("r8", json!(7), json!({"op": "conv_quad", "x": 0, "y": 0, "kernel": k})), &p).unwrap();
    assert!(matches!(w.ops[0], Op::ConvQuad { channel: 0, .. }));
    assert_eq!(w.conv.as_ref().unwrap().channel, 0);
    assert!(script(&p, &w).iter().all(|i| !matches!(i, Item::Op { all_channels: true, .. })));
    // 1x1 kernel, weight 1: each pixel is T(0, 0) = 7; a one-channel image.
    let o = run(&p, &w);
    assert_eq!(o.image, Some(Image::OneChannel(vec![vec![7]])));
    assert_eq!(output_json(&p, &o)["results"][0]["pixels"], json!([7, 7, 7, 7]));
    // An op built with ALL_CHANNELS on r16 reads channel 0 and is driven as
    // a one-channel op.
    let mut w16 = w.clone();
    w16.texture.format = Format::R16;
    w16.ops = vec![Op::ConvQuad { x: 0, y: 0, level: 0, channel: ALL_CHANNELS, kernel: Kernel { width: 1, height: 1, weights: vec![1].into() } }];
    w16.conv = None;
    assert_eq!(script(&p, &w16).last(), Some(&Item::Op { kind: OpKind::ConvQuad, u: 0, v: 0, level: 0, channel: 0, all_channels: false, dx: 0, dy: 0 }));
    assert_eq!(run(&p, &w16).results[0], OpResult::Pixels { pixels: vec![7; 4], stitch: vec![Stitch::None], sub_ops: 1 });
    // A channel past the format is still refused.
    let e = perrs(input("rgba8", json!([1, 2, 3, 4]), json!({"op": "conv_quad", "x": 0, "y": 0, "channel": 4, "kernel": k})), &p);
    assert_eq!(e, vec!["input `ops[0].channel` = 4: must be an integer from 0 to 3 (below the 4 channels of rgba8)"]);
}

/// The results by the rules of "Broadcast and convolution" (tiles, register
/// banks, per-pixel weights zero outside the kernel) for each broadcast,
/// against the formula of "Exact arithmetic"; and an all-channel op's sums
/// against four one-channel ops. Random rgba8 textures and kernels.
#[test]
fn register_bank_rules_match_formula() {
    let mut rng = Rng::new(26);
    for case in 0..300 {
        let (w0, h0) = (1 + rng.below(9) as u32, 1 + rng.below(9) as u32);
        let texels = (0..w0 * h0).map(|_| rng.next_u64() as u32).collect();
        let t = Texture { format: Format::Rgba8, levels: vec![Level { width: w0, height: h0, texels }] };
        let modes = [*rng.pick(AddressMode::ALL), *rng.pick(AddressMode::ALL)];
        let w = workload(t, modes, 1, vec![]);
        let (kw, kh) = (1 + rng.below(9) as u32, 1 + rng.below(9) as u32);
        let weights: Vec<i64> = (0..kw * kh).map(|_| rng.below(256) as i64 - 128).collect();
        let kernel = Kernel { width: kw, height: kh, weights: weights.clone().into() };
        let (x, y) = (rng.below(w0 as u64 + 2), rng.below(h0 as u64 + 2));
        let p = TextureParams { acc_bits: 20, ..TextureParams::default() };
        let op = Op::ConvQuad { x, y, level: 0, channel: ALL_CHANNELS, kernel: kernel.clone() };
        let OpResult::Pixels { pixels, stitch: codes, sub_ops } = op_result(&p, &w, &op) else { panic!() };
        assert_eq!(pixels.len(), 16);
        assert_eq!((codes.clone(), sub_ops), stitch(kw, kh));
        // Four one-channel ops give the same sums, lane 4c + p.
        for c in 0..4 {
            let one = Op::ConvQuad { x, y, level: 0, channel: c, kernel: kernel.clone() };
            let OpResult::Pixels { pixels: one, .. } = op_result(&p, &w, &one) else { panic!() };
            assert_eq!(one[..], pixels[4 * c as usize..4 * c as usize + 4], "case {case} channel {c}");
        }
        // The tile path: tile (i, j) at (px + 2i, py + 2j); texel k at patch
        // position (a, b) = (2i + (k&1), 2j + (k>>1)) if its mask bit is set.
        let (px, py) = (x as i64 - (kw / 2) as i64, y as i64 - (kh / 2) as i64);
        let lv = &w.texture.levels[0];
        let texel = |a: i64, b: i64| {
            let (tx, ty) = (address(modes[0], px + a, w0), address(modes[1], py + b, h0));
            lv.texels[(ty * w0 as i64 + tx) as usize]
        };
        let tl = tiles(&p, &w, &op);
        let tx_n = (kw + 1).div_ceil(2) as usize;
        for b in [Broadcast::Whole, Broadcast::Selective, Broadcast::Shared] {
            let mut acc = [[0i64; 4]; 4]; // [pixel][channel]
            let mut writes = 0u64;
            for (n, tile) in tl.iter().enumerate() {
                let (i, j) = ((n % tx_n) as i64, (n / tx_n) as i64);
                // Registers: per pixel (whole, selective) or one shared bank.
                let mut regs: [[Option<u32>; 4]; 4] = [[None; 4]; 4];
                for k in 0..4 {
                    if tile.mask & (1 << k) == 0 {
                        continue;
                    }
                    let (a, bb) = (2 * i + (k & 1) as i64, 2 * j + (k >> 1) as i64);
                    let word = texel(a, bb);
                    match b {
                        Broadcast::Shared => {
                            writes += 1;
                            for r in regs.iter_mut() {
                                r[k] = Some(word); // one register all four read
                            }
                        }
                        _ => {
                            for (pi, &(dx, dy)) in QUAD.iter().enumerate() {
                                let inside = (0..kw as i64).contains(&(a - dx)) && (0..kh as i64).contains(&(bb - dy));
                                if b == Broadcast::Whole || inside {
                                    writes += 1;
                                    regs[pi][k] = Some(word);
                                }
                            }
                        }
                    }
                }
                for (pi, &(dx, dy)) in QUAD.iter().enumerate() {
                    for (k, reg) in regs[pi].iter().enumerate() {
                        let (a, bb) = (2 * i + (k & 1) as i64 - dx, 2 * j + (k >> 1) as i64 - dy);
                        let wt = if (0..kw as i64).contains(&a) && (0..kh as i64).contains(&bb) {
                            weights[(bb * kw as i64 + a) as usize]
                        } else {
                            0
                        };
                        if let Some(word) = reg {
                            for (c, sum) in acc[pi].iter_mut().enumerate() {
                                *sum += wt * ((word >> (8 * c)) & 0xff) as i64;
                            }
                        }
                    }
                }
            }
            let bp = TextureParams { broadcast: b, ..p.clone() };
            assert_eq!(writes, register_writes(&bp, &op), "case {case} {b}");
            for (pi, sums) in acc.iter().enumerate() {
                for (c, &sum) in sums.iter().enumerate() {
                    assert_eq!(wrap_signed(sum, 20), pixels[4 * c + pi], "case {case} {b} pixel {pi} channel {c}");
                }
            }
        }
    }
}

/// The random workloads reach what issue 26 added: all-channel conv_quads
/// and conv sections on rgba8, and kernels whose sub-operations have
/// differing stitch codes.
#[test]
fn random_workloads_reach_all_channel_and_mixed_stitch() {
    let p = TextureParams::default();
    let (mut all_ops_seen, mut all_sections, mut mixed) = (0, 0, 0);
    for seed in 0..200 {
        let w = random_workload(&mut Rng::new(seed), &p, 12);
        for op in &w.ops {
            if let Op::ConvQuad { channel, kernel, .. } = op {
                all_ops_seen += all_channels(w.texture.format, *channel) as u32;
                let codes = stitch(kernel.width, kernel.height).0;
                mixed += codes.iter().any(|c| *c != codes[0]) as u32;
            }
        }
        all_sections += w.conv.as_ref().is_some_and(|c| all_channels(w.texture.format, c.channel)) as u32;
    }
    assert!(all_ops_seen > 20 && all_sections > 3 && mixed > 20, "{all_ops_seen} {all_sections} {mixed}");
}

// ---- all_channels = false ----

/// The spec's refusal of a conv_quad (or conv section) without `channel` on
/// rgba8 when the unit is built with `all_channels = false`.
fn no_all_channel_message(field: &str) -> String {
    format!(
        "input `{field}` = (missing): must be 0..3 on rgba8: the unit is built with all_channels = false \
         (parameter `all_channels`), so a conv_quad convolves one channel"
    )
}

#[test]
fn parse_all_channels_false_refuses_missing_channel_on_rgba8() {
    let off = TextureParams { all_channels: false, ..TextureParams::default() };
    let on = TextureParams::default();
    let k = json!({"width": 1, "height": 1, "weights": [1]});
    let rgba = json!({"format": "rgba8", "levels": [{"width": 2, "height": 2,
                      "texels": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]}]});
    let quad = json!({"op": "conv_quad", "x": 0, "y": 0, "kernel": k});
    let bilinear = json!({"op": "bilinear", "u": 0, "v": 0});

    // A conv_quad (the second op: its index is named).
    let v = json!({"texture": rgba, "ops": [bilinear, quad]});
    assert_eq!(perrs(v.clone(), &off), vec![no_all_channel_message("ops[1].channel")]);
    let w = parse_input(&v, &on).unwrap();
    assert!(matches!(w.ops[1], Op::ConvQuad { channel: ALL_CHANNELS, .. }));

    // A conv section.
    let v = json!({"texture": rgba, "conv": {"kernel": k}});
    assert_eq!(perrs(v.clone(), &off), vec![no_all_channel_message("conv.channel")]);
    assert_eq!(parse_input(&v, &on).unwrap().conv.unwrap().channel, ALL_CHANNELS);

    // Both, and another violation: every one reported, in file order.
    let v = json!({"texture": rgba, "mem_latency": 0, "ops": [quad], "conv": {"kernel": k}});
    assert_eq!(
        perrs(v.clone(), &off),
        vec![
            "input `mem_latency` = 0: must be an integer from 1 to 64".to_string(),
            no_all_channel_message("ops[0].channel"),
            no_all_channel_message("conv.channel"),
        ]
    );
    assert_eq!(perrs(v, &on), vec!["input `mem_latency` = 0: must be an integer from 1 to 64"]);

    // With `channel` on rgba8: accepted, that channel.
    let mut q = quad.clone();
    q["channel"] = json!(2);
    let v = json!({"texture": rgba, "ops": [q], "conv": {"channel": 3, "kernel": k}});
    let w = parse_input(&v, &off).unwrap();
    assert!(matches!(w.ops[0], Op::ConvQuad { channel: 2, .. }));
    assert_eq!(w.conv.as_ref().unwrap().channel, 3);
    assert_eq!(parse_input(&v, &on).unwrap(), w);
    // A channel past the format is refused as before.
    let mut q4 = quad.clone();
    q4["channel"] = json!(4);
    assert_eq!(
        perrs(json!({"texture": rgba, "ops": [q4]}), &off),
        vec!["input `ops[0].channel` = 4: must be an integer from 0 to 3 (below the 4 channels of rgba8)"]
    );

    // r8 and r16 without channel: channel 0, as with all_channels = true.
    for (format, texels) in [("r8", json!([1, 2, 3, 4])), ("r16", json!([1, 2, 3, 40000]))] {
        let v = json!({"texture": {"format": format, "levels": [{"width": 2, "height": 2, "texels": texels}]},
                       "ops": [quad], "conv": {"kernel": k}});
        let w = parse_input(&v, &off).unwrap();
        assert!(matches!(w.ops[0], Op::ConvQuad { channel: 0, .. }), "{format}");
        assert_eq!(w.conv.as_ref().unwrap().channel, 0);
        assert_eq!(parse_input(&v, &on).unwrap(), w);
    }

    // Gather4's `channel` still defaults to 0 on rgba8.
    let v = json!({"texture": rgba, "ops": [{"op": "gather4", "u": 0, "v": 0}]});
    assert!(matches!(parse_input(&v, &off).unwrap().ops[0], Op::Gather4 { channel: 0, .. }));
}

/// With `all_channels = false` every op is as on a unit built with
/// `all_channels = true` that is not all-channel: the same results, script
/// (`op_all_channels_i` never 1), counters and cycles. An op built with
/// ALL_CHANNELS on rgba8 anyway is a one-channel conv_quad of channel 0.
#[test]
fn all_channels_false_runs_as_one_channel() {
    let mut t = ramp(8, 8);
    t.format = Format::Rgba8;
    t.levels[0].texels = (0..64u32).map(|i| i | (i + 100) << 8 | (200 - i) << 16 | (i * 3) << 24).collect();
    for b in [Broadcast::Whole, Broadcast::Selective, Broadcast::Shared] {
        let on = TextureParams { broadcast: b, ..TextureParams::default() };
        let off = TextureParams { all_channels: false, ..on.clone() };
        let conv = |channel| Op::ConvQuad { x: 4, y: 4, level: 0, channel, kernel: k3x3() };
        let one = workload(t.clone(), CLAMP, 10, vec![conv(0), conv(1), Op::Nearest { u: 300, v: 300, level: 0 }, conv(3)]);
        assert_eq!(run(&off, &one), run(&on, &one), "{b}");
        assert_eq!(script(&off, &one), script(&on, &one));

        // ALL_CHANNELS on rgba8: at true 16 sums and op_all_channels_i 1;
        // at false channel 0's 4 sums, op_channel_i 0, op_all_channels_i 0.
        let all = workload(t.clone(), CLAMP, 10, vec![conv(ALL_CHANNELS)]);
        let ch0 = workload(t.clone(), CLAMP, 10, vec![conv(0)]);
        let (o_on, o_off) = (run(&on, &all), run(&off, &all));
        let OpResult::Pixels { pixels, .. } = &o_on.results[0] else { panic!() };
        assert_eq!(pixels.len(), 16);
        assert_eq!(o_off, run(&off, &ch0));
        let OpResult::Pixels { pixels: p_off, .. } = &o_off.results[0] else { panic!() };
        assert_eq!(p_off.as_slice(), &pixels[..4]);
        assert_eq!((o_off.texel_fetches, o_off.register_writes, o_off.cycles), (o_on.texel_fetches, o_on.register_writes, o_on.cycles));
        assert!(matches!(script(&on, &all).last(), Some(Item::Op { all_channels: true, channel: 0, .. })));
        assert_eq!(script(&off, &all), script(&off, &ch0));
        assert!(script(&off, &all).iter().all(|i| !matches!(i, Item::Op { all_channels: true, .. })));

        // A conv section built with ALL_CHANNELS: a one-channel image at false.
        let mut sec = workload(t.clone(), CLAMP, 10, vec![]);
        sec.conv = Some(ConvJob { level: 0, channel: ALL_CHANNELS, kernel: k3x3() });
        let o = run(&off, &sec);
        assert!(matches!(o.image, Some(Image::OneChannel(_))));
        sec.conv.as_mut().unwrap().channel = 0;
        assert_eq!(run(&off, &sec).image, o.image);
        assert!(matches!(output_json(&off, &o)["image"][0][0], Value::Number(_)));
        sec.conv.as_mut().unwrap().channel = ALL_CHANNELS;
        assert!(matches!(run(&on, &sec).image, Some(Image::AllChannels(_))));
    }
}

/// Random workloads at `all_channels = false` have no all-channel op (every
/// rgba8 conv_quad and conv section names its channel), yet have rgba8
/// conv_quads and conv sections, and parse back at false.
#[test]
fn random_workloads_without_all_channels() {
    for p in [
        TextureParams { all_channels: false, ..TextureParams::default() },
        TextureParams { banks: 1, max_kernel: 8, all_channels: false, max_outstanding: 4, addr_bits: 16, ..TextureParams::default() },
    ] {
        let (mut rgba_quads, mut rgba_sections) = (0, 0);
        for seed in 0..200 {
            let w = random_workload(&mut Rng::new(seed), &p, 12);
            let rgba = w.texture.format == Format::Rgba8;
            for op in all_ops(&w) {
                if let Op::ConvQuad { channel, .. } = op {
                    assert!(channel < w.texture.format.channels(), "seed {seed}: channel {channel}");
                    assert!(!all_channels(w.texture.format, channel) && !all_channel_op(&p, w.texture.format, channel));
                    rgba_quads += rgba as u32;
                }
            }
            rgba_sections += (rgba && w.conv.is_some()) as u32;
            assert!(script(&p, &w).iter().all(|i| !matches!(i, Item::Op { all_channels: true, .. })), "seed {seed}");
            let o = run(&p, &w);
            for r in &o.results {
                if let OpResult::Pixels { pixels, .. } = r {
                    assert_eq!(pixels.len(), 4, "seed {seed}");
                }
            }
            assert!(!matches!(o.image, Some(Image::AllChannels(_))));
            assert_eq!(parse_input(&to_input(&w), &p).as_ref(), Ok(&w), "seed {seed}");
        }
        assert!(rgba_quads > 50 && rgba_sections > 3, "{rgba_quads} {rgba_sections}");
    }
}
