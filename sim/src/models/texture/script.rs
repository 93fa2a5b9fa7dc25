//! The run driver's script (docs/texture.md "The run driver"): the
//! descriptor and kernel writes and the ops, in the order the driver
//! offers them.

use super::layout::level_bases;
use super::reference::level_index;
use super::{all_channel_op, Item, Kernel, Op, Workload, ALL_CHANNELS};
use gpurtl_params::texture::{cfg, OpKind, TextureParams};

/// The whole op list: `ops`, then the conv section's quads (raster order,
/// y outer, x inner, x and y even) over its whole level.
pub fn all_ops(w: &Workload) -> Vec<Op> {
    let mut ops = w.ops.clone();
    if let Some(job) = &w.conv {
        let lv = &w.texture.levels[level_index(&w.texture, job.level)];
        for y in (0..lv.height as u64).step_by(2) {
            for x in (0..lv.width as u64).step_by(2) {
                ops.push(Op::ConvQuad { x, y, level: job.level, channel: job.channel, kernel: job.kernel.clone() });
            }
        }
    }
    ops
}

/// The driver's script: the descriptor writes (0x000, then per level its
/// base and size), then per op the kernel writes when its kernel differs
/// from the last one written (0x001, then w(i, j), j outer, i inner; the
/// first conv_quad always writes its kernel), then the op. A conv_quad
/// given without `channel` on rgba8 drives `op_all_channels_i` = 1 and
/// `op_channel_i` = 0; every other op `op_all_channels_i` = 0 (every op
/// with `all_channels = false`, which has no such port).
pub fn script(p: &TextureParams, w: &Workload) -> Vec<Item> {
    let t = &w.texture;
    let mut items = Vec::new();
    let control = t.format.code()
        | w.address[0].code() << 2
        | w.address[1].code() << 4
        | (t.levels.len() as u64 - 1) << 8;
    items.push(Item::Cfg { addr: cfg::CONTROL, data: control });
    let addr_mask = (1u64 << p.addr_bits) - 1;
    for (l, (lv, base)) in t.levels.iter().zip(level_bases(p, t)).enumerate() {
        let l = l as u32;
        items.push(Item::Cfg { addr: cfg::level_base(l), data: base & addr_mask });
        let size = (lv.width as u64 - 1) | (lv.height as u64 - 1) << 16;
        items.push(Item::Cfg { addr: cfg::level_size(l), data: size });
    }
    let weight_mask = (1u64 << p.weight_bits) - 1;
    let mut written: Option<&Kernel> = None;
    let ops = all_ops(w);
    for op in &ops {
        let item = match op {
            Op::Bilinear { u, v, level } => {
                Item::Op { kind: OpKind::Bilinear, u: *u, v: *v, level: *level, channel: 0, all_channels: false, dx: 0, dy: 0 }
            }
            Op::Nearest { u, v, level } => {
                Item::Op { kind: OpKind::Nearest, u: *u, v: *v, level: *level, channel: 0, all_channels: false, dx: 0, dy: 0 }
            }
            Op::Gather4 { u, v, level, dx, dy, channel } => {
                let (channel, dx, dy) = (*channel, *dx, *dy);
                Item::Op { kind: OpKind::Gather4, u: *u, v: *v, level: *level, channel, all_channels: false, dx, dy }
            }
            Op::ConvQuad { x, y, level, channel, kernel } => {
                if written != Some(kernel) {
                    let size = (kernel.width as u64 - 1) | (kernel.height as u64 - 1) << 8;
                    items.push(Item::Cfg { addr: cfg::KERNEL, data: size });
                    for j in 0..kernel.height {
                        for i in 0..kernel.width {
                            let wt = kernel.weights[(j * kernel.width + i) as usize];
                            items.push(Item::Cfg { addr: cfg::weight(i, j), data: wt as u64 & weight_mask });
                        }
                    }
                    written = Some(kernel);
                }
                // Without `channel` (ALL_CHANNELS): op_channel_i = 0, and
                // op_all_channels_i = 1 exactly on rgba8 (never with
                // all_channels = false: there is no such port).
                let all = all_channel_op(p, t.format, *channel);
                let channel = if *channel == ALL_CHANNELS { 0 } else { *channel };
                Item::Op { kind: OpKind::ConvQuad, u: *x, v: *y, level: *level, channel, all_channels: all, dx: 0, dy: 0 }
            }
        };
        items.push(item);
    }
    items
}
