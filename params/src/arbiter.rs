//! Parameters of the memory arbiter and its AXI4 bridge (docs/arbiter.md).

use crate::{clog2, BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

param_enum! {
    /// What the arbiter's sources are joined to.
    pub enum Out {
        /// One AXI4 master `m_axi_*`, through the bridge.
        Axi4 = "axi4",
        /// One tagged native read port and one tagged native write port.
        Native = "native",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArbiterParams {
    pub reads: u32,
    pub writes: u32,
    pub addr_bits: u32,
    pub data_bits: u32,
    pub max_burst: u32,
    pub read_buffer: u32,
    pub write_outstanding: u32,
    pub out: Out,
}

impl Default for ArbiterParams {
    fn default() -> Self {
        ArbiterParams {
            reads: 2,
            writes: 1,
            addr_bits: 32,
            data_bits: 64,
            max_burst: 16,
            read_buffer: 16,
            write_outstanding: 4,
            out: Out::Axi4,
        }
    }
}

/// AXI4's 4 KB boundary: no burst may cross one.
pub const AXI_BOUNDARY: u64 = 4096;

impl ArbiterParams {
    /// Bytes a beat.
    pub fn data_bytes(&self) -> u32 {
        self.data_bits / 8
    }
    /// Width of the `len` field (beats - 1); 0: the ports have none.
    pub fn len_bits(&self) -> u32 {
        clog2(self.max_burst as u64)
    }
    /// Read tag bits (`mem_rd_*_tag`).
    pub fn read_tag_bits(&self) -> u32 {
        clog2(self.reads as u64).max(1)
    }
    /// Write tag bits (`mem_wr_*_tag`).
    pub fn write_tag_bits(&self) -> u32 {
        clog2(self.writes as u64).max(1)
    }
    /// AXI ID bits: one ID per source.
    pub fn id_bits(&self) -> u32 {
        clog2(self.reads.max(self.writes) as u64).max(1)
    }
}

impl BlockParams for ArbiterParams {
    const BLOCK: &'static str = "arbiter";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        vec![
            ParamInfo::new("reads", int(0, 16, ""), "native read sources rd0.. (reads and writes are not both 0)"),
            ParamInfo::new("writes", int(0, 16, ""), "native write sources wr0.."),
            ParamInfo::new("addr_bits", int(12, 64, ""), "byte address width A"),
            ParamInfo::new("data_bits", int(8, 1024, "a power of two"), "data width D of every port and of AXI (DB = D/8 bytes a beat)"),
            ParamInfo::new("max_burst", int(1, 256, ""), "most beats a request asks for (1: no len/last fields); with out=axi4 at most 4096 bytes"),
            ParamInfo::new("read_buffer", int(1, 256, ""), "response buffer beats per read source (its most beats in flight); at least max_burst"),
            ParamInfo::new("write_outstanding", int(1, 64, ""), "write bursts per write source waiting for their response"),
            ParamInfo::new("out", ParamKind::Choice(Out::NAMES), "axi4: one AXI4 master through the bridge; native: tagged native ports"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "reads", self.reads as i64, true);
        c.int(&t, "writes", self.writes as i64, true);
        if self.reads == 0 && self.writes == 0 {
            c.check(false, "writes", self.writes, "at least 1 when reads is 0: an arbiter needs a source");
        }
        c.int(&t, "addr_bits", self.addr_bits as i64, true);
        c.int(&t, "data_bits", self.data_bits as i64, self.data_bits.is_power_of_two());
        c.int(&t, "max_burst", self.max_burst as i64, true);
        c.int(&t, "read_buffer", self.read_buffer as i64, true);
        c.int(&t, "write_outstanding", self.write_outstanding as i64, true);
        if (1..=256).contains(&self.max_burst) && (1..=256).contains(&self.read_buffer) {
            c.check(
                self.read_buffer >= self.max_burst,
                "read_buffer",
                self.read_buffer,
                format!("at least max_burst ({}): a request's beats must fit the buffer", self.max_burst),
            );
        }
        let bytes = self.max_burst as u64 * (self.data_bits as u64 / 8).max(1);
        if self.out == Out::Axi4 && self.data_bits.is_power_of_two() && (8..=1024).contains(&self.data_bits) {
            c.check(
                bytes <= AXI_BOUNDARY,
                "max_burst",
                self.max_burst,
                format!(
                    "at most {} with data_bits {} and out=axi4: a request of max_burst beats spans at most 4096 bytes",
                    AXI_BOUNDARY / (self.data_bits as u64 / 8),
                    self.data_bits
                ),
            );
        }
        if (12..=64).contains(&self.addr_bits) && self.data_bits.is_power_of_two() && (8..=1024).contains(&self.data_bits) {
            let bytes_bits = clog2(self.data_bits as u64 / 8);
            c.check(
                self.addr_bits > bytes_bits,
                "addr_bits",
                self.addr_bits,
                format!("more than the {bytes_bits} byte-offset bits of a {}-bit beat", self.data_bits),
            );
        }
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "2 read and 1 write source, 64-bit data, one AXI4 master",
            "small" => "the smallest useful point: what the properties are proven at",
            "native" => "the default with tagged native ports out instead of AXI4",
            "wide" => "wide beats and long bursts: a DMA engine's port",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            // The smallest useful point: what the properties are proven at.
            (
                "small",
                ArbiterParams {
                    reads: 2,
                    writes: 2,
                    addr_bits: 16,
                    data_bits: 32,
                    max_burst: 4,
                    read_buffer: 4,
                    write_outstanding: 2,
                    out: Out::Axi4,
                },
            ),
            ("native", ArbiterParams { out: Out::Native, ..Self::default() }),
            // Wide beats and long bursts: a DMA engine's port.
            (
                "wide",
                ArbiterParams { reads: 4, writes: 4, data_bits: 128, max_burst: 256, read_buffer: 256, write_outstanding: 8, ..Self::default() },
            ),
        ]
    }
}
