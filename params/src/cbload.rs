//! Parameters of the constant-buffer burst load unit (docs/cbload.md).

use crate::{bits_for, clog2, BlockParams, Checker, MemIf, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CbloadParams {
    pub reg_bits: u32,
    pub regs: u32,
    pub read_bits: u32,
    pub max_outstanding: u32,
    pub views: u32,
    pub max_burst: u32,
    pub addr_bits: u32,
    pub tag_bits: u32,
    pub mem_if: MemIf,
}

impl Default for CbloadParams {
    fn default() -> Self {
        CbloadParams {
            reg_bits: 256,
            regs: 64,
            read_bits: 64,
            max_outstanding: 16,
            views: 8,
            max_burst: 64,
            addr_bits: 32,
            tag_bits: 8,
            mem_if: MemIf::Native,
        }
    }
}

/// Response error codes (`rsp_error_o`), in the order they are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    None,
    View,
    Misaligned,
    Size,
    Range,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 5] = [ErrorKind::None, ErrorKind::View, ErrorKind::Misaligned, ErrorKind::Size, ErrorKind::Range];

    /// The value on `rsp_error_o`.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// The name in `gpurtl run cbload` output files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::None => "none",
            ErrorKind::View => "view",
            ErrorKind::Misaligned => "misaligned",
            ErrorKind::Size => "size",
            ErrorKind::Range => "range",
        }
    }

    pub fn from_code(c: u64) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|e| e.code() == c)
    }
}

impl CbloadParams {
    /// Bytes per memory beat.
    pub fn read_bytes(&self) -> u32 {
        self.read_bits / 8
    }
    /// Bytes per register.
    pub fn reg_bytes(&self) -> u32 {
        self.reg_bits / 8
    }
    /// Most bytes one burst may load.
    pub fn max_len(&self) -> u32 {
        self.max_burst * self.reg_bytes()
    }
    pub fn reg_index_bits(&self) -> u32 {
        clog2(self.regs as u64).max(1)
    }
    pub fn view_index_bits(&self) -> u32 {
        clog2(self.views as u64).max(1)
    }
    pub fn size_bits(&self) -> u32 {
        bits_for(self.max_len() as u64)
    }
    /// Configuration addresses: view v base at 2v, size at 2v+1; 2*views clears the flag.
    pub fn cfg_addr_bits(&self) -> u32 {
        bits_for(2 * self.views as u64)
    }
}

impl BlockParams for CbloadParams {
    const BLOCK: &'static str = "cbload";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("reg_bits", int(32, 1024, "a power of two"), "register width in bits"),
            ParamInfo::new("regs", int(2, 256, ""), "registers in the register file"),
            ParamInfo::new("read_bits", int(32, 512, "a power of two"), "memory read width in bits (one beat); at most reg_bits"),
            ParamInfo::new("max_outstanding", int(1, 64, ""), "memory reads in flight"),
            ParamInfo::new("views", int(1, 16, ""), "constant buffer views"),
            ParamInfo::new("max_burst", int(1, 256, ""), "most registers one burst fills; at most regs"),
            ParamInfo::new("addr_bits", int(16, 48, ""), "byte address and offset width"),
            ParamInfo::new("tag_bits", int(1, 16, ""), "instruction tag width"),
            ParamInfo::new("mem_if", ParamKind::Choice(MemIf::NAMES), "native: the block's own memory ports; axi4: one AXI4 master m_axi_* (and axi_err_o) through an arbiter and its bridge in their place (docs/memory.md, \"mem_if\")"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "reg_bits", self.reg_bits as i64, self.reg_bits.is_power_of_two());
        c.int(&t, "regs", self.regs as i64, true);
        c.int(&t, "read_bits", self.read_bits as i64, self.read_bits.is_power_of_two());
        if self.read_bits.is_power_of_two() && self.reg_bits.is_power_of_two() {
            c.check(
                self.read_bits <= self.reg_bits,
                "read_bits",
                self.read_bits,
                format!("at most reg_bits ({}): a beat fills part of one register", self.reg_bits),
            );
        }
        c.int(&t, "max_outstanding", self.max_outstanding as i64, true);
        c.int(&t, "views", self.views as i64, true);
        c.int(&t, "max_burst", self.max_burst as i64, true);
        if (1..=256).contains(&self.max_burst) {
            c.check(self.max_burst <= self.regs, "max_burst", self.max_burst, format!("at most regs ({})", self.regs));
        }
        c.int(&t, "addr_bits", self.addr_bits as i64, true);
        c.int(&t, "tag_bits", self.tag_bits as i64, true);
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "a SIMD register file's loads: 64 registers of 256 bits, fed by 64-bit beats",
            "small" => "the smallest unit",
            "simd32" => "a 32-lane SIMD register file: 128 registers of 1024 bits, 256-bit reads",
            "ice40" => "the default with a 64 KiB address space (an iCE40's memories), for 100 MHz on the iCE40-HX8K (docs/cbload.md, \"On FPGAs\")",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            (
                "small",
                CbloadParams {
                    reg_bits: 32,
                    regs: 8,
                    read_bits: 32,
                    max_outstanding: 2,
                    views: 3,
                    max_burst: 8,
                    addr_bits: 16,
                    tag_bits: 4,
                    mem_if: MemIf::Native,
                },
            ),
            ("simd32", CbloadParams { reg_bits: 1024, read_bits: 256, regs: 128, max_burst: 32, ..Self::default() }),
            // The default's unit with a 64 KiB address space (an iCE40's
            // memories), for 100 MHz on the iCE40-HX8K (docs/cbload.md, "Using
            // it").
            ("ice40", CbloadParams { addr_bits: 16, ..Self::default() }),
        ]
    }
}

