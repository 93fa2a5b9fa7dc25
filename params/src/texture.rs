//! Parameters of the texture unit (docs/texture.md).

use crate::{bits_for, clog2, BlockParams, Checker, MemIf, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

param_enum! {
    /// What a `conv_quad` writes into the four pixels' register banks.
    pub enum Broadcast {
        /// Every fetched texel of a tile into every pixel's bank.
        Whole = "whole",
        /// Each pixel's bank gets only the texels inside its own kernel.
        Selective = "selective",
        /// No broadcast: one bank the four pixels read, each texel written
        /// once (seed 002 §110-111).
        Shared = "shared",
    }
}

param_enum! {
    /// Texel formats (the descriptor's `format` field, in code order).
    pub enum Format {
        R8 = "r8",
        R16 = "r16",
        Rgba8 = "rgba8",
    }
}

param_enum! {
    /// Address modes (the descriptor's per-axis field, in code order).
    pub enum AddressMode {
        Clamp = "clamp",
        Repeat = "repeat",
        Mirror = "mirror",
    }
}

param_enum! {
    /// Operation kinds (`op_kind_i`, `res_kind_o`, in code order).
    pub enum OpKind {
        Bilinear = "bilinear",
        Nearest = "nearest",
        Gather4 = "gather4",
        ConvQuad = "conv_quad",
    }
}

param_enum! {
    /// The stitch code sent with a `conv_quad`'s patch (`res_stitch_o`, in code order).
    pub enum Stitch {
        None = "none",
        S4x4 = "4x4",
        S2x8 = "2x8",
        S8x2 = "8x2",
    }
}

macro_rules! codes {
    ($($t:ty),*) => {$(
        impl $t {
            /// The value on the wire.
            pub fn code(self) -> u64 {
                Self::ALL.iter().position(|x| *x == self).unwrap_or(0) as u64
            }
            pub fn from_code(c: u64) -> Option<Self> {
                Self::ALL.get(c as usize).copied()
            }
        }
    )*};
}
codes!(Format, AddressMode, OpKind, Stitch);

impl Format {
    /// Channels per texel.
    pub fn channels(self) -> u32 {
        match self {
            Format::Rgba8 => 4,
            _ => 1,
        }
    }
    /// Bits per channel.
    pub fn channel_bits(self) -> u32 {
        match self {
            Format::R16 => 16,
            _ => 8,
        }
    }
}

/// Configuration port addresses (docs/texture.md, "Configuration").
pub mod cfg {
    /// format [1:0], x mode [3:2], y mode [5:4], levels - 1 [11:8].
    pub const CONTROL: u64 = 0x000;
    /// kernel width - 1 [4:0], kernel height - 1 [12:8].
    pub const KERNEL: u64 = 0x001;
    /// Level `l`'s base word address.
    pub fn level_base(l: u32) -> u64 {
        0x002 + 2 * l as u64
    }
    /// Level `l`'s width - 1 [15:0] and height - 1 [31:16].
    pub fn level_size(l: u32) -> u64 {
        0x003 + 2 * l as u64
    }
    /// Weight `(i, j)` (column i, row j of the kernel).
    pub fn weight(i: u32, j: u32) -> u64 {
        0x400 + 32 * j as u64 + i as u64
    }
    /// Configuration address width.
    pub const ADDR_BITS: u32 = 11;
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TextureParams {
    pub banks: u32,
    pub max_size: u32,
    pub frac_bits: u32,
    pub offset_bits: u32,
    pub max_kernel: u32,
    pub weight_bits: u32,
    pub acc_bits: u32,
    /// The all-channel rgba8 conv_quad is built (`op_all_channels_i`, 16
    /// result lanes); false: one channel a conv_quad, 4 lanes.
    pub all_channels: bool,
    pub broadcast: Broadcast,
    pub max_outstanding: u32,
    pub addr_bits: u32,
    pub mem_if: MemIf,
}

impl Default for TextureParams {
    fn default() -> Self {
        TextureParams {
            banks: 4,
            max_size: 4096,
            frac_bits: 8,
            offset_bits: 6,
            max_kernel: 19,
            weight_bits: 8,
            acc_bits: 32,
            all_channels: true,
            broadcast: Broadcast::Selective,
            max_outstanding: 16,
            addr_bits: 24,
            mem_if: MemIf::Native,
        }
    }
}

impl TextureParams {
    /// log2(max_size).
    pub fn size_log(&self) -> u32 {
        clog2(self.max_size as u64)
    }
    /// Mip levels a descriptor can hold: a max_size texture's whole chain.
    pub fn max_levels(&self) -> u32 {
        self.size_log() + 1
    }
    /// Bits of `op_level_i`.
    pub fn level_bits(&self) -> u32 {
        bits_for(self.max_levels() as u64 - 1)
    }
    /// Bits of a level's width or height (1..=max_size).
    pub fn dim_bits(&self) -> u32 {
        self.size_log() + 1
    }
    /// Integer bits of u and v: coordinates below 2 * max_size.
    pub fn int_bits(&self) -> u32 {
        self.size_log() + 1
    }
    /// Width of `op_u_i` / `op_v_i`: fixed point, frac_bits fraction bits.
    pub fn uv_bits(&self) -> u32 {
        self.int_bits() + self.frac_bits
    }
    /// Signed texel coordinate width: holds every x0 + offset + patch position.
    pub fn coord_bits(&self) -> u32 {
        self.int_bits().max(self.offset_bits).max(6) + 2
    }
    /// Smallest and largest gather offset.
    pub fn offset_range(&self) -> (i64, i64) {
        (-(1i64 << (self.offset_bits - 1)), (1i64 << (self.offset_bits - 1)) - 1)
    }
    /// Smallest and largest weight.
    pub fn weight_range(&self) -> (i64, i64) {
        (-(1i64 << (self.weight_bits - 1)), (1i64 << (self.weight_bits - 1)) - 1)
    }
    /// Width of one result lane.
    pub fn lane_bits(&self) -> u32 {
        self.acc_bits.max(16)
    }
    /// Tiles (2x2 gathers) across a patch for a kernel of width `k`: ceil((k + 1) / 2).
    pub fn tiles_for(k: u32) -> u32 {
        (k + 2) / 2
    }
    /// Most sub-operations of a conv_quad: ceil(tiles / 4) for the largest kernel.
    pub fn max_subops(&self) -> u32 {
        let t = Self::tiles_for(self.max_kernel);
        (t * t).div_ceil(4)
    }
    /// Bits of `res_subops_o`: holds [`Self::max_subops`].
    pub fn subop_bits(&self) -> u32 {
        bits_for(self.max_subops() as u64)
    }
    /// Bits of `res_stitch_o`: a 2-bit code per sub-operation.
    pub fn stitch_bits(&self) -> u32 {
        2 * self.max_subops()
    }
    /// Lanes of `res_data_o` (`NL`): 4 pixels (or texels, channels) by 4
    /// channels with `all_channels`, else 4.
    pub fn lanes(&self) -> u32 {
        if self.all_channels {
            16
        } else {
            4
        }
    }
    /// Bits of a tile index along one axis.
    pub fn tile_bits(&self) -> u32 {
        bits_for(Self::tiles_for(self.max_kernel) as u64 - 1)
    }
}

impl BlockParams for TextureParams {
    const BLOCK: &'static str = "texture";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("banks", int(1, 4, "1, 2 or 4"), "texel read ports; with 4 any 2x2 footprint reads each bank once"),
            ParamInfo::new("max_size", int(2, 4096, "a power of two"), "largest level width or height, in texels"),
            ParamInfo::new("frac_bits", int(1, 10, ""), "F: fraction bits of u and v"),
            ParamInfo::new("offset_bits", int(2, 8, ""), "gather4 offset width, signed (-32..31 at 6)"),
            ParamInfo::new("max_kernel", int(1, 31, ""), "MK: largest conv kernel width or height"),
            ParamInfo::new("weight_bits", int(2, 16, ""), "conv weight width (signed)"),
            ParamInfo::new("acc_bits", int(8, 48, ""), "conv accumulator width; results wrap"),
            ParamInfo::new(
                "all_channels",
                ParamKind::Bool,
                "an rgba8 conv_quad can convolve all four channels from one fetch (op_all_channels_i, 16 result lanes); false: one channel only, no op_all_channels_i, 4 result lanes",
            ),
            ParamInfo::new(
                "broadcast",
                ParamKind::Choice(Broadcast::NAMES),
                "conv patch into the pixels' register banks: whole, or only each pixel's own texels; shared: one bank the four pixels read, each texel written once",
            ),
            ParamInfo::new("max_outstanding", int(2, 64, ""), "D: bank read passes in flight (tag queue depth)"),
            ParamInfo::new("addr_bits", int(8, 32, ""), "word address width of each bank"),
            ParamInfo::new("mem_if", ParamKind::Choice(MemIf::NAMES), "native: the block's own memory ports; axi4: one AXI4 master m_axi_* (and axi_err_o) through an arbiter and its bridge in their place (docs/memory.md, \"mem_if\")"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "banks", self.banks as i64, matches!(self.banks, 1 | 2 | 4));
        c.int(&t, "max_size", self.max_size as i64, self.max_size.is_power_of_two());
        c.int(&t, "frac_bits", self.frac_bits as i64, true);
        c.int(&t, "offset_bits", self.offset_bits as i64, true);
        c.int(&t, "max_kernel", self.max_kernel as i64, true);
        c.int(&t, "weight_bits", self.weight_bits as i64, true);
        c.int(&t, "acc_bits", self.acc_bits as i64, true);
        c.int(&t, "max_outstanding", self.max_outstanding as i64, true);
        c.int(&t, "addr_bits", self.addr_bits as i64, true);
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "4 banks (any 2x2 footprint in one pass), levels up to 4096 texels, kernels up to 19x19",
            "small" => "256x256 textures, 5x5 kernels, whole broadcast; still too big for the iCE40-HX8K (its 16 multipliers alone are most of it)",
            "one_bank" => "one read port (a 2x2 footprint in 4 passes), 1024x1024 textures, 7x7 kernels",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            // A small unit: 256x256 textures, 5x5 kernels, whole broadcast
            // (it does not fit the iCE40-HX8K: its 16 multipliers alone are
            // most of the device; docs/texture.md, "Using it").
            (
                "small",
                TextureParams {
                    banks: 4,
                    max_size: 256,
                    frac_bits: 4,
                    offset_bits: 4,
                    max_kernel: 5,
                    weight_bits: 6,
                    acc_bits: 20,
                    all_channels: true,
                    broadcast: Broadcast::Whole,
                    max_outstanding: 8,
                    addr_bits: 16,
                    mem_if: MemIf::Native,
                },
            ),
            ("one_bank", TextureParams { banks: 1, max_size: 1024, max_kernel: 7, ..Self::default() }),
        ]
    }
}
