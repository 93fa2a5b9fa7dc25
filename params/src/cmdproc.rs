//! Parameters of the command processor front end (docs/cmdproc.md), and the
//! packet format's constants that the hardware, the model and the assembler
//! share: opcodes, error causes, the register map.

use crate::{bits_for, BlockParams, Checker, MemIf, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CmdprocParams {
    pub fetch_bits: u32,
    pub pool_beats: u32,
    pub prim_beats: u32,
    pub out_depth: u32,
    pub prim_jobs: u32,
    pub state_regs: u32,
    pub nesting: u32,
    pub id_bits: u32,
    pub mem_if: MemIf,
    /// Compute mode (docs/cmdproc.md, "Compute mode"): `SET_SH_REG`,
    /// `RELEASE_MEM`, checked dispatches, draws an error.
    pub compute: bool,
    /// With `compute`: the most threads, registers and scratchpad bytes a
    /// block may need, and the kernel block-count width.
    pub max_threads: u32,
    pub max_regs: u32,
    pub max_smem: u32,
    pub block_bits: u32,
}

impl Default for CmdprocParams {
    fn default() -> Self {
        CmdprocParams {
            fetch_bits: 64,
            pool_beats: 32,
            prim_beats: 16,
            out_depth: 4,
            prim_jobs: 8,
            state_regs: 16,
            nesting: 1,
            id_bits: 16,
            mem_if: MemIf::Native,
            compute: false,
            max_threads: 2048,
            max_regs: 65536,
            max_smem: 65536,
            block_bits: 16,
        }
    }
}

/// PM4 type-3 opcodes the unit knows (docs/cmdproc.md, "Packets").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    Nop,
    SetContextReg,
    IndexType,
    DrawIndexAuto,
    DrawIndexOffset2,
    DispatchDirect,
    WriteData,
    IndirectBuffer,
    /// Compute mode only (else `opcode`).
    SetShReg,
    ReleaseMem,
}

impl Opcode {
    pub const ALL: [Opcode; 10] = [
        Opcode::Nop,
        Opcode::SetContextReg,
        Opcode::IndexType,
        Opcode::DrawIndexAuto,
        Opcode::DrawIndexOffset2,
        Opcode::DispatchDirect,
        Opcode::WriteData,
        Opcode::IndirectBuffer,
        Opcode::SetShReg,
        Opcode::ReleaseMem,
    ];
    /// Known only with `compute = true`.
    pub fn compute_only(self) -> bool {
        matches!(self, Opcode::SetShReg | Opcode::ReleaseMem)
    }
    /// Known to a unit of these parameters.
    pub fn known(self, p: &CmdprocParams) -> bool {
        p.compute || !self.compute_only()
    }
    /// A state reader (docs/cmdproc.md, "Render state in order").
    pub fn reads_state(self) -> bool {
        self.is_draw() || self == Opcode::DispatchDirect
    }
    /// A state writer, which the state hold holds: `SET_CONTEXT_REG`, and
    /// `SET_SH_REG` (compute mode).
    pub fn writes_state(self) -> bool {
        matches!(self, Opcode::SetContextReg | Opcode::SetShReg)
    }
    /// A draw (in compute mode the `graphics` error).
    pub fn is_draw(self) -> bool {
        matches!(self, Opcode::DrawIndexAuto | Opcode::DrawIndexOffset2)
    }
    /// The value in header bits [15:8].
    pub fn code(self) -> u32 {
        match self {
            Opcode::Nop => 0x10,
            Opcode::SetContextReg => 0x69,
            Opcode::IndexType => 0x2A,
            Opcode::DrawIndexAuto => 0x2D,
            Opcode::DrawIndexOffset2 => 0x35,
            Opcode::DispatchDirect => 0x15,
            Opcode::WriteData => 0x37,
            Opcode::IndirectBuffer => 0x3F,
            Opcode::SetShReg => 0x76,
            Opcode::ReleaseMem => 0x49,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Nop => "NOP",
            Opcode::SetContextReg => "SET_CONTEXT_REG",
            Opcode::IndexType => "INDEX_TYPE",
            Opcode::DrawIndexAuto => "DRAW_INDEX_AUTO",
            Opcode::DrawIndexOffset2 => "DRAW_INDEX_OFFSET_2",
            Opcode::DispatchDirect => "DISPATCH_DIRECT",
            Opcode::WriteData => "WRITE_DATA",
            Opcode::IndirectBuffer => "INDIRECT_BUFFER",
            Opcode::SetShReg => "SET_SH_REG",
            Opcode::ReleaseMem => "RELEASE_MEM",
        }
    }
    pub fn from_code(c: u32) -> Option<Opcode> {
        Self::ALL.into_iter().find(|o| o.code() == c)
    }
    pub fn from_name(s: &str) -> Option<Opcode> {
        Self::ALL.into_iter().find(|o| o.name() == s)
    }
    /// Whether `n` payload dwords are allowed (else error `count`).
    pub fn count_ok(self, n: u32) -> bool {
        match self {
            Opcode::Nop => true,
            Opcode::SetContextReg | Opcode::SetShReg => n >= 2,
            Opcode::IndexType => n == 1,
            Opcode::DrawIndexAuto => n == 2,
            Opcode::DrawIndexOffset2 | Opcode::DispatchDirect => n == 4,
            Opcode::WriteData => n >= 4,
            Opcode::IndirectBuffer => n == 3,
            Opcode::ReleaseMem => n == 6,
        }
    }
}

/// Error causes, by `ERR_CAUSE` code (0 is none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    Type = 1,
    Opcode = 2,
    Count = 3,
    Overrun = 4,
    Nesting = 5,
    StateRange = 6,
    Field = 7,
    PrimRange = 8,
    /// Compute mode only.
    ShRange = 9,
    Need = 10,
    Graphics = 11,
    /// `kerr_i` as a dispatch leaves: the top's kernel failed.
    Kernel = 12,
}

impl Cause {
    pub const ALL: [Cause; 12] = [
        Cause::Type,
        Cause::Opcode,
        Cause::Count,
        Cause::Overrun,
        Cause::Nesting,
        Cause::StateRange,
        Cause::Field,
        Cause::PrimRange,
        Cause::ShRange,
        Cause::Need,
        Cause::Graphics,
        Cause::Kernel,
    ];
    /// Raised only with `compute = true`.
    pub fn compute_only(self) -> bool {
        matches!(self, Cause::ShRange | Cause::Need | Cause::Graphics | Cause::Kernel)
    }
    pub fn code(self) -> u32 {
        self as u32
    }
    pub fn name(self) -> &'static str {
        match self {
            Cause::Type => "type",
            Cause::Opcode => "opcode",
            Cause::Count => "count",
            Cause::Overrun => "overrun",
            Cause::Nesting => "nesting",
            Cause::StateRange => "state_range",
            Cause::Field => "field",
            Cause::PrimRange => "prim_range",
            Cause::ShRange => "sh_range",
            Cause::Need => "need",
            Cause::Graphics => "graphics",
            Cause::Kernel => "kernel",
        }
    }
    pub fn from_code(c: u32) -> Option<Cause> {
        Self::ALL.into_iter().find(|x| x.code() == c)
    }
    pub fn from_name(s: &str) -> Option<Cause> {
        Self::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// The compute registers of compute mode (docs/cmdproc.md, "The compute
/// registers"): `sh_o` order, dword offsets from 0xB000.
pub mod sh {
    /// The four runs of consecutive dword offsets: (first offset, the
    /// register index of its first, count).
    pub const RUNS: [(u32, usize, usize); 4] = [(0x207, 0, 3), (0x20C, 3, 2), (0x212, 5, 2), (0x240, 7, 16)];
    /// Registers in `sh_o`.
    pub const REGS: usize = 23;
    pub const NUM_THREAD_X: usize = 0;
    pub const NUM_THREAD_Y: usize = 1;
    pub const NUM_THREAD_Z: usize = 2;
    pub const PGM_LO: usize = 3;
    pub const PGM_HI: usize = 4;
    pub const PGM_RSRC1: usize = 5;
    pub const PGM_RSRC2: usize = 6;
    pub const USER_DATA_0: usize = 7;
    /// The register at dword offset `o`, if any.
    pub fn index(o: u64) -> Option<usize> {
        RUNS.iter().find(|r| o >= r.0 as u64 && o < r.0 as u64 + r.2 as u64).map(|r| r.1 + (o - r.0 as u64) as usize)
    }
    /// Whether offsets `p0 ..= last` lie inside one run.
    pub fn range_ok(p0: u64, last: u64) -> bool {
        RUNS.iter().any(|r| p0 >= r.0 as u64 && last < r.0 as u64 + r.2 as u64 && p0 <= last)
    }
    /// The register's name (`COMPUTE_...`).
    pub fn name(i: usize) -> String {
        match i {
            0 => "COMPUTE_NUM_THREAD_X".into(),
            1 => "COMPUTE_NUM_THREAD_Y".into(),
            2 => "COMPUTE_NUM_THREAD_Z".into(),
            3 => "COMPUTE_PGM_LO".into(),
            4 => "COMPUTE_PGM_HI".into(),
            5 => "COMPUTE_PGM_RSRC1".into(),
            6 => "COMPUTE_PGM_RSRC2".into(),
            _ => format!("COMPUTE_USER_DATA_{}", i - USER_DATA_0),
        }
    }
    /// The dword offset of register `i`.
    pub fn offset(i: usize) -> u32 {
        let r = RUNS.iter().rev().find(|r| i >= r.1).unwrap_or(&RUNS[0]);
        r.0 + (i - r.1) as u32
    }
}

/// The AXI4-Lite register map (byte offsets; docs/cmdproc.md, "Registers").
pub mod reg {
    pub const CMD_BASE: u32 = 0x00;
    pub const CMD_SIZE: u32 = 0x04;
    pub const PRIM_BASE: u32 = 0x08;
    pub const PRIM_SIZE: u32 = 0x0C;
    pub const STATE_PTR: u32 = 0x10;
    pub const DOORBELL: u32 = 0x14;
    pub const STATUS: u32 = 0x18;
    pub const ERR_CAUSE: u32 = 0x1C;
    pub const ERR_ADDR: u32 = 0x20;
    pub const IRQ_ENABLE: u32 = 0x24;
    pub const IRQ_STATUS: u32 = 0x28;
    pub const CMD_COUNT: u32 = 0x2C;
    pub const BUSY_CYCLES: u32 = 0x30;
    pub const IGNORED: u32 = 0x34;
    /// `STATE_INIT[i]` is at `STATE_INIT + 4i`.
    pub const STATE_INIT: u32 = 0x40;
    /// `STATUS` bits.
    pub const STATUS_BUSY: u32 = 1;
    pub const STATUS_ERROR: u32 = 2;
    pub const STATUS_DONE: u32 = 4;
    /// `IRQ_ENABLE` / `IRQ_STATUS` bits.
    pub const IRQ_DONE: u32 = 1;
    pub const IRQ_ERROR: u32 = 2;
}

impl CmdprocParams {
    /// Dwords per beat (F).
    pub fn fetch_dwords(&self) -> u32 {
        self.fetch_bits / 32
    }
    /// AXI4-Lite address width: bits for the last byte of the register map.
    pub fn axi_addr_bits(&self) -> u32 {
        bits_for((reg::STATE_INIT + 4 * self.state_regs - 1) as u64)
    }
}

impl BlockParams for CmdprocParams {
    const BLOCK: &'static str = "cmdproc";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("fetch_bits", int(32, 128, "32, 64 or 128"), "memory read width in bits (one beat) of both read ports"),
            ParamInfo::new("pool_beats", int(2, 64, "a power of two"), "instruction pool depth in beats"),
            ParamInfo::new("prim_beats", int(2, 64, "a power of two"), "primitive pool depth in beats"),
            ParamInfo::new("out_depth", int(1, 16, ""), "serialized output queue depth in commands"),
            ParamInfo::new("prim_jobs", int(1, 32, ""), "draws whose indices the primitive unit holds (fetching or sending)"),
            ParamInfo::new("state_regs", int(1, 64, ""), "render-state table registers (32 bits each)"),
            ParamInfo::new("nesting", int(0, 3, ""), "indirect buffer nesting depth"),
            ParamInfo::new("id_bits", int(4, 32, ""), "command id width (ids count modulo 2^id_bits)"),
            ParamInfo::new("mem_if", ParamKind::Choice(MemIf::NAMES), "native: the block's own memory ports; axi4: one AXI4 master m_axi_* (and axi_err_o) through an arbiter and its bridge in their place (docs/memory.md, \"mem_if\")"),
            ParamInfo::new("compute", ParamKind::Bool, "compute mode, the gpu top's queue front end: SET_SH_REG, RELEASE_MEM, checked dispatches, draws an error (docs/cmdproc.md, \"Compute mode\")"),
            ParamInfo::new("max_threads", int(1, 4096, ""), "with compute: the most threads a block may need (a compute unit's)"),
            ParamInfo::new("max_regs", int(1, 262144, ""), "with compute: the most registers a block may need"),
            ParamInfo::new("max_smem", int(1, 262144, ""), "with compute: the most scratchpad bytes a block may need"),
            ParamInfo::new("block_bits", int(1, 20, ""), "with compute: a kernel has at most 2^block_bits - 1 blocks"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "fetch_bits", self.fetch_bits as i64, matches!(self.fetch_bits, 32 | 64 | 128));
        c.int(&t, "pool_beats", self.pool_beats as i64, self.pool_beats.is_power_of_two());
        c.int(&t, "prim_beats", self.prim_beats as i64, self.prim_beats.is_power_of_two());
        c.int(&t, "out_depth", self.out_depth as i64, true);
        c.int(&t, "prim_jobs", self.prim_jobs as i64, true);
        c.int(&t, "state_regs", self.state_regs as i64, true);
        c.int(&t, "nesting", self.nesting as i64, true);
        c.int(&t, "id_bits", self.id_bits as i64, true);
        c.int(&t, "max_threads", self.max_threads as i64, true);
        c.int(&t, "max_regs", self.max_regs as i64, true);
        c.int(&t, "max_smem", self.max_smem as i64, true);
        c.int(&t, "block_bits", self.block_bits as i64, true);
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "64-bit fetch, one level of indirect buffers",
            "small" => "the smallest unit: 32-bit fetch, an 8-beat pool, no indirect buffers",
            "wide" => "128-bit fetch, 16 draws in the primitive unit, two levels of indirect buffers",
            "compute" => "the default in compute mode (the gpu top's queue front end): SET_SH_REG, RELEASE_MEM, checked dispatches",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            (
                "small",
                CmdprocParams { fetch_bits: 32, pool_beats: 8, prim_beats: 4, out_depth: 2, prim_jobs: 2, state_regs: 8, nesting: 0, id_bits: 8, ..Self::default() },
            ),
            (
                "wide",
                CmdprocParams { fetch_bits: 128, pool_beats: 32, prim_beats: 16, out_depth: 4, prim_jobs: 16, state_regs: 32, nesting: 2, id_bits: 16, ..Self::default() },
            ),
            ("compute", CmdprocParams { compute: true, ..Self::default() }),
        ]
    }
}
