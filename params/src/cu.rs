//! Parameters of the compute unit (docs/cu.md).

use crate::cbload::CbloadParams;
use crate::systolic::{Dataflow, Dsp, ElemType, SystolicParams};
use crate::texture::{Broadcast, TextureParams};
use crate::{clog2, BlockParams, Checker, MemIf, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CuParams {
    pub slots: u32,
    pub regs: u32,
    pub imem_depth: u32,
    pub banks: u32,
    pub words: u32,
    pub max_outstanding: u32,
    pub tag_bits: u32,
    pub grid_rows: u32,
    pub grid_cols: u32,
    pub kmax: u32,
    /// `tex` and its `texture` unit are built (else 0x74 is undefined).
    pub tex: bool,
    /// Native memory ports, or one AXI4 master (docs/memory.md, `mem_if`).
    pub mem_if: MemIf,
    /// The AXI4 master's data width with `mem_if = axi4`.
    pub axi_bits: u32,
}

impl Default for CuParams {
    fn default() -> Self {
        CuParams { slots: 2, regs: 64, imem_depth: 64, banks: 4, words: 1024, max_outstanding: 8, tag_bits: 4, grid_rows: 4, grid_cols: 4, kmax: 256, tex: true, mem_if: MemIf::Native, axi_bits: 64 }
    }
}

/// Completion status codes (`cpl_status_o`, docs/cu.md "Errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Ok = 0,
    Opcode = 1,
    Field = 2,
    Reg = 3,
    Pc = 4,
    Align = 5,
    Smem = 6,
    Dispatch = 7,
}

impl Status {
    pub const ALL: [Status; 8] =
        [Status::Ok, Status::Opcode, Status::Field, Status::Reg, Status::Pc, Status::Align, Status::Smem, Status::Dispatch];
    pub fn code(self) -> u64 {
        self as u64
    }
    pub fn from_code(c: u64) -> Option<Status> {
        Self::ALL.get(c as usize).copied()
    }
    /// The name in `gpurtl run cu` output.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Opcode => "opcode",
            Status::Field => "field",
            Status::Reg => "reg",
            Status::Pc => "pc",
            Status::Align => "align",
            Status::Smem => "smem",
            Status::Dispatch => "dispatch",
        }
    }
}

impl CuParams {
    /// Scratchpad bytes `SB`.
    pub fn smem_bytes(&self) -> u64 {
        self.banks as u64 * self.words as u64 * 4
    }
    /// Scratchpad byte address bits.
    pub fn smem_addr_bits(&self) -> u32 {
        clog2(self.smem_bytes())
    }
    /// Width of the dispatch's scratchpad base and size (`log2(SB) + 1`).
    pub fn smem_field_bits(&self) -> u32 {
        self.smem_addr_bits() + 1
    }
    /// Register index bits (`log2(regs)`).
    pub fn reg_bits(&self) -> u32 {
        clog2(self.regs as u64)
    }
    /// Slot index bits (1 at least).
    pub fn slot_bits(&self) -> u32 {
        clog2(self.slots as u64).max(1)
    }
    /// pc bits (`log2(imem_depth)`).
    pub fn pc_bits(&self) -> u32 {
        clog2(self.imem_depth as u64)
    }
    /// The `systolic` grid `mma` runs on (docs/cu.md, "`mma`").
    pub fn grid(&self) -> SystolicParams {
        SystolicParams {
            rows: self.grid_rows,
            cols: self.grid_cols,
            lanes: 1,
            channel_bits: 8,
            a_type: ElemType::I8,
            b_type: ElemType::I8,
            acc_bits: 32,
            dataflow: Dataflow::Os,
            group: 4,
            pipeline: 2,
            dsp: Dsp::Auto,
            gating: true,
            load_filter: true,
            rowcol_skip: false,
            stats: false,
            c0_add: false,
            fp_stages: 0,
        }
    }
    /// The `cbload` the unit's `cdl` runs on (docs/cu.md, "`cdl`"): views
    /// `0 .. slots-1` the slots' user data, view `slots` the memory, a 33-bit
    /// address (bit 32 selects the user-data store).
    /// The `texture` unit of `tex` (docs/cu.md, "`tex`"): one bank (the
    /// scratchpad), textures up to 4096 a side, kernels up to 8 x 8, no
    /// all-channel conv_quad (`tex` convolves one channel).
    pub fn texture(&self) -> TextureParams {
        TextureParams {
            banks: 1,
            max_size: 4096,
            frac_bits: 8,
            offset_bits: 6,
            max_kernel: 8,
            weight_bits: 8,
            acc_bits: 32,
            all_channels: false,
            broadcast: Broadcast::Selective,
            max_outstanding: 4,
            addr_bits: self.smem_addr_bits(),
            mem_if: MemIf::Native,
        }
    }
    pub fn cbload(&self) -> CbloadParams {
        CbloadParams {
            reg_bits: 32,
            regs: self.regs,
            read_bits: 32,
            max_outstanding: self.max_outstanding,
            views: self.slots + 1,
            max_burst: 16,
            addr_bits: 33,
            tag_bits: 1,
            mem_if: MemIf::Native,
        }
    }
}

impl BlockParams for CuParams {
    const BLOCK: &'static str = "cu";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("slots", int(1, 8, ""), "blocks resident at once"),
            ParamInfo::new("regs", int(16, 256, "a power of two"), "32-bit registers in the register file, shared by the slots"),
            ParamInfo::new("imem_depth", int(16, 256, "a power of two"), "instructions in each slot's program store `D`"),
            ParamInfo::new("banks", int(1, 8, "a power of two"), "scratchpad banks"),
            ParamInfo::new("words", int(64, 16384, "a power of two"), "32-bit words a scratchpad bank"),
            ParamInfo::new("max_outstanding", int(1, 64, ""), "memory reads (and, for `st`, writes) in flight, `O`"),
            ParamInfo::new("tag_bits", int(1, 8, ""), "the dispatch tag's width"),
            ParamInfo::new("grid_rows", int(1, 8, ""), "rows `R` of the `mma` grid"),
            ParamInfo::new("grid_cols", int(1, 8, "1, 2, 4 or 8"), "columns `C` of the `mma` grid"),
            ParamInfo::new("kmax", int(8, 1024, "a power of two"), "the largest `K` of one `mma` and the most rows of one `ld ..., zmap` (its tile buffers hold two row blocks of `A` and two tiles of `B` of `kmax` k-steps)"),
            ParamInfo::new("tex", ParamKind::Bool, "`tex` and its `texture` unit are built; with `false` opcode 0x74 is undefined (the `opcode` error), the scratchpad has no `rd5`/`wr3` and `tex_fetch_o` is 0"),
            ParamInfo::new("mem_if", ParamKind::Choice(MemIf::NAMES), "native: the unit's own memory ports; axi4: one AXI4 master m_axi_* (and axi_err_o) through an arbiter and its bridge in their place (docs/memory.md, \"mem_if\")"),
            ParamInfo::new("axi_bits", int(32, 128, "32, 64 or 128"), "the AXI4 master's data width with mem_if=axi4 (sources of other widths are adapted: docs/memory.md)"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "slots", self.slots as i64, true);
        c.int(&t, "regs", self.regs as i64, self.regs.is_power_of_two());
        c.int(&t, "imem_depth", self.imem_depth as i64, self.imem_depth.is_power_of_two());
        c.int(&t, "banks", self.banks as i64, self.banks.is_power_of_two());
        c.int(&t, "words", self.words as i64, self.words.is_power_of_two());
        c.int(&t, "max_outstanding", self.max_outstanding as i64, true);
        c.int(&t, "tag_bits", self.tag_bits as i64, true);
        c.int(&t, "grid_rows", self.grid_rows as i64, true);
        c.int(&t, "grid_cols", self.grid_cols as i64, self.grid_cols.is_power_of_two());
        c.int(&t, "kmax", self.kmax as i64, self.kmax.is_power_of_two());
        c.int(&t, "axi_bits", self.axi_bits as i64, matches!(self.axi_bits, 32 | 64 | 128));
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "two slots, 64 registers, a 16 KiB scratchpad in four banks, a 4x4 `mma` grid, `tex`",
            "small" => "one slot, 16 registers, a 256-byte scratchpad in one bank, a 2x2 grid with `kmax` 16, no `tex`: fits an ECP5-25F",
            "wide" => "four slots over eight banks of 8 KiB, a 4x8 grid",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            // Small enough for quick cosimulation of every corner.
            ("small", CuParams {
                slots: 1,
                regs: 16,
                imem_depth: 16,
                banks: 1,
                words: 64,
                max_outstanding: 1,
                tag_bits: 1,
                grid_rows: 2,
                grid_cols: 2,
                kmax: 16,
                // Without the texture unit, so that it fits an ECP5-25F
                // (with `tex = true` it takes 54 of the 28 MULT18X18D:
                // docs/cu.md, "Synthesis"; the texture is built with
                // `all_channels = false`, as it was when measured).
                tex: false,
                ..Self::default()
            }),
            // Four resident blocks over eight banks of 64 KiB.
            ("wide", CuParams {
                slots: 4,
                regs: 128,
                imem_depth: 128,
                banks: 8,
                words: 2048,
                max_outstanding: 16,
                tag_bits: 4,
                grid_rows: 4,
                grid_cols: 8,
                kmax: 128,
                tex: true,
                ..Self::default()
            }),
        ]
    }
}
