//! Parameters of the packed compress/expand unit (docs/compress.md).

use crate::{clog2, BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressParams {
    /// Vector width in bits.
    pub width: u32,
    /// Register stages from input to output.
    pub latency: u32,
    /// Stream mode: dense streams in and out around the vector unit.
    pub stream: bool,
}

impl Default for CompressParams {
    fn default() -> Self {
        CompressParams { width: 128, latency: 2, stream: false }
    }
}

impl CompressParams {
    /// Byte lanes.
    pub fn lanes(&self) -> u32 {
        self.width / 8
    }
    /// Combinational layers the `latency` registers are spread over.
    pub fn layers(&self) -> u32 {
        2 * clog2(self.lanes() as u64) + 3
    }
    /// Width of the count output: counts 0..=width/8.
    pub fn count_bits(&self) -> u32 {
        clog2(self.lanes() as u64) + 1
    }
}

impl BlockParams for CompressParams {
    const BLOCK: &'static str = "compress";

    fn table() -> Vec<ParamInfo> {
        vec![
            ParamInfo::new(
                "width",
                ParamKind::Int { min: 64, max: 1024, rule: "a power of two" },
                "vector width in bits (element sizes 8, 16, 32, 64 are chosen per operation)",
            ),
            // The upper end is the largest width's: 2*log2(1024/8)+3 = 17.
            ParamInfo::new(
                "latency",
                ParamKind::Int { min: 1, max: 17, rule: "" },
                "register stages from input to output; at most 2*log2(width/8)+3 (9 at width 64 .. 17 at 1024)",
            ),
            ParamInfo::new(
                "stream",
                ParamKind::Bool,
                "stream mode: dense compress/expand streams around the vector unit (top gpurtl_compress_stream)",
            ),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "width", self.width as i64, self.width.is_power_of_two());
        let w_ok = self.width.is_power_of_two() && (64..=1024).contains(&self.width);
        if w_ok {
            let max = self.layers();
            c.check(
                (1..=max).contains(&self.latency),
                "latency",
                self.latency,
                format!("an integer from 1 to {max} (2*log2(width/8)+3 layers at width {})", self.width),
            );
        } else {
            c.int(&t, "latency", self.latency as i64, true);
        }
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "the unit of the README's figures: a vector a cycle",
            "small" => "the smallest unit",
            "wide" => "512-bit vectors, as AVX-512's compress and expand",
            "max" => "the widest vectors",
            "fpga" => "the default's function pipelined for FPGA clocks: at least 150 MHz on ECP5 and 100 MHz on iCE40-HX8K (`gpurtl synth compress --preset fpga --target ecp5|ice40`)",
            "stream" => "stream mode around the default vector unit (top gpurtl_compress_stream)",
            _ => "",
        }
    }
    fn presets() -> Vec<(&'static str, Self)> {
        vec![
            ("default", Self::default()),
            ("small", CompressParams { width: 64, latency: 1, stream: false }),
            ("wide", CompressParams { width: 512, latency: 3, stream: false }),
            ("max", CompressParams { width: 1024, latency: 4, stream: false }),
            // FPGA timing: 150 MHz on ECP5, 100 MHz on iCE40-HX8K (docs/compress.md).
            ("fpga", CompressParams { width: 128, latency: 6, stream: false }),
            ("stream", CompressParams { width: 128, latency: 2, stream: true }),
        ]
    }
}
