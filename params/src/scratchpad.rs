//! Parameters of the banked scratchpad RAM (docs/scratchpad.md).

use crate::{clog2, BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScratchpadParams {
    pub banks: u32,
    pub words: u32,
    pub data_bits: u32,
    pub read_ports: u32,
    pub write_ports: u32,
}

impl Default for ScratchpadParams {
    fn default() -> Self {
        ScratchpadParams { banks: 4, words: 512, data_bits: 32, read_ports: 2, write_ports: 1 }
    }
}

impl ScratchpadParams {
    /// Bytes a word.
    pub fn data_bytes(&self) -> u32 {
        self.data_bits / 8
    }
    /// Byte address bits: the scratchpad holds `2^addr_bits` bytes.
    pub fn addr_bits(&self) -> u32 {
        clog2(self.banks as u64 * self.words as u64 * self.data_bytes() as u64)
    }
    /// Bank index bits (0 with one bank).
    pub fn bank_bits(&self) -> u32 {
        clog2(self.banks as u64)
    }
    /// Row (word within a bank) bits.
    pub fn row_bits(&self) -> u32 {
        clog2(self.words as u64)
    }
}

impl BlockParams for ScratchpadParams {
    const BLOCK: &'static str = "scratchpad";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("banks", int(1, 8, "a power of two"), "banks B; word n is in bank n mod B"),
            ParamInfo::new("words", int(16, 16384, "a power of two"), "words per bank W"),
            ParamInfo::new("data_bits", int(8, 128, "a power of two"), "word width D in bits (DB = D/8 bytes)"),
            ParamInfo::new("read_ports", int(1, 4, ""), "native read ports rd0.."),
            ParamInfo::new("write_ports", int(1, 4, ""), "native write ports wr0.."),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "banks", self.banks as i64, self.banks.is_power_of_two());
        c.int(&t, "words", self.words as i64, self.words.is_power_of_two());
        c.int(&t, "data_bits", self.data_bits as i64, self.data_bits.is_power_of_two());
        c.int(&t, "read_ports", self.read_ports as i64, true);
        c.int(&t, "write_ports", self.write_ports as i64, true);
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "4 banks x 512 words of 32 bits, 2 read and 1 write port",
            "cu" => "a compute unit's 64 KiB: 8 banks of 2048 x 32 bits (one DP16KD, or four SB_RAM40_4K, a bank per 512 words)",
            "small" => "small enough for formal proofs and quick tests",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            // A compute unit's 64 KiB: 8 banks of 2048 x 32 bits (one DP16KD
            // or four SB_RAM40_4K a bank per 512 words).
            ("cu", ScratchpadParams { banks: 8, words: 2048, data_bits: 32, read_ports: 2, write_ports: 2 }),
            // Small enough for formal and quick tests.
            ("small", ScratchpadParams { banks: 2, words: 16, data_bits: 16, read_ports: 2, write_ports: 2 }),
        ]
    }
}
