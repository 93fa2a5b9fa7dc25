//! Parameters of the systolic PE grid with zero skipping (docs/systolic.md).

use crate::{bits_for, clog2, BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

param_enum! {
    /// An element type of A or B.
    pub enum ElemType {
        I8 = "i8",
        U8 = "u8",
        I4 = "i4",
        U4 = "u4",
        I2 = "i2",
        U2 = "u2",
        /// Floating point (docs/systolic.md, "Floating point"): 1, 8, 7 bits.
        Bf16 = "bf16",
        /// IEEE binary16: 1, 5, 10 bits.
        Fp16 = "fp16",
        /// OCP FP8 E4M3: 1, 4, 3 bits, no infinities.
        Fp8e4m3 = "fp8e4m3",
        /// OCP FP8 E5M2: 1, 5, 2 bits.
        Fp8e5m2 = "fp8e5m2",
    }
}

impl ElemType {
    pub fn bits(self) -> u32 {
        match self {
            ElemType::I8 | ElemType::U8 => 8,
            ElemType::I4 | ElemType::U4 => 4,
            ElemType::I2 | ElemType::U2 => 2,
            ElemType::Bf16 | ElemType::Fp16 => 16,
            ElemType::Fp8e4m3 | ElemType::Fp8e5m2 => 8,
        }
    }
    /// A two's-complement integer type (false for unsigned and for floating point).
    pub fn signed(self) -> bool {
        matches!(self, ElemType::I8 | ElemType::I4 | ElemType::I2)
    }
    /// A floating-point type (values are held as bit patterns).
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::Bf16 | ElemType::Fp16 | ElemType::Fp8e4m3 | ElemType::Fp8e5m2)
    }
    /// Exponent and mantissa bits of a floating-point type ((0, 0) for integers).
    pub fn fp_fields(self) -> (u32, u32) {
        match self {
            ElemType::Bf16 => (8, 7),
            ElemType::Fp16 => (5, 10),
            ElemType::Fp8e4m3 => (4, 3),
            ElemType::Fp8e5m2 => (5, 2),
            _ => (0, 0),
        }
    }
    /// Whether an element (a value for integers, a bit pattern for floating
    /// point) is zero: for floating point +0 or -0.
    pub fn is_zero(self, v: i64) -> bool {
        if self.is_float() {
            v & ((1i64 << (self.bits() - 1)) - 1) == 0
        } else {
            v == 0
        }
    }
    /// The smallest value of the type (of its bit pattern, for floating point).
    pub fn min(self) -> i64 {
        if self.signed() {
            -(1i64 << (self.bits() - 1))
        } else {
            0
        }
    }
    /// The largest value of the type (of its bit pattern, for floating point).
    pub fn max(self) -> i64 {
        if self.signed() {
            (1i64 << (self.bits() - 1)) - 1
        } else {
            (1i64 << self.bits()) - 1
        }
    }
}

param_enum! {
    /// Which operand stays in the PEs.
    pub enum Dataflow {
        /// Output-stationary: PE(i,j) accumulates C[i][j].
        Os = "os",
        /// Weight-stationary: PE(i,j) holds a weight, partial sums flow down.
        Ws = "ws",
    }
}

param_enum! {
    /// How each PE multiply is built.
    pub enum Dsp {
        /// `ecp5` when `pipeline` is 2 (floating point: also weight-stationary
        /// with `fp_stages` >= 2), else `infer`.
        Auto = "auto",
        /// An inline `*` between the PE's registers.
        Infer = "infer",
        /// A multiplier module with a hand-mapped ECP5 body (a MULT18X18D
        /// holding both pipeline registers).
        Ecp5 = "ecp5",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SystolicParams {
    pub rows: u32,
    pub cols: u32,
    pub lanes: u32,
    pub channel_bits: u32,
    pub a_type: ElemType,
    pub b_type: ElemType,
    pub acc_bits: u32,
    pub dataflow: Dataflow,
    pub group: u32,
    pub gating: bool,
    pub load_filter: bool,
    pub rowcol_skip: bool,
    /// Extra PE register stages: rows are ready `pipeline` cycles later.
    pub pipeline: u32,
    pub dsp: Dsp,
    /// The statistics counters and their `stat_*_o` ports.
    pub stats: bool,
    /// The `out_c0_i` port and its add on the result rows (os only: the
    /// weight-stationary grid adds K blocks through it).
    pub c0_add: bool,
    /// Registers inside each binary32 add of the floating-point
    /// weight-stationary PE: an add takes `fp_stages + 1` cycles.
    pub fp_stages: u32,
}

impl Default for SystolicParams {
    fn default() -> Self {
        SystolicParams {
            rows: 4,
            cols: 4,
            lanes: 1,
            channel_bits: 8,
            a_type: ElemType::I8,
            b_type: ElemType::I8,
            acc_bits: 32,
            dataflow: Dataflow::Os,
            group: 8,
            gating: true,
            load_filter: true,
            rowcol_skip: true,
            pipeline: 2,
            dsp: Dsp::Auto,
            stats: true,
            c0_add: true,
            fp_stages: 0,
        }
    }
}

/// Counter widths of the statistics outputs.
pub const STAT_BITS: u32 = 48;

impl SystolicParams {
    /// Each multiply is a `gpurtl_systolic_mul` instance (with a hand-mapped
    /// ECP5 body) rather than an inline `*`.
    /// Floating point: the significand products, where the grid has both
    /// registers around them (weight-stationary, `fp_stages` >= 2).
    pub fn dsp_module(&self) -> bool {
        let fits = !self.float() || (self.dataflow == Dataflow::Ws && self.fp_stages >= 2);
        fits && (self.dsp == Dsp::Ecp5 || (self.dsp == Dsp::Auto && self.pipeline == 2))
    }
    /// Width of one step's useful-MAC count (at most rows x cols x lanes).
    pub fn macs_bits(&self) -> u32 {
        bits_for((self.rows * self.cols * self.lanes) as u64)
    }
    /// Floating-point elements (both types; validation refuses a mixed pair):
    /// binary32 accumulation; the output-stationary grid without C0.
    pub fn float(&self) -> bool {
        self.a_type.is_float()
    }
    /// Cycles from a PE's A lanes to its partial sum add: `pipeline`, plus
    /// for floating point `fp_stages` (inside the products) and H =
    /// [`hop`](Self::hop) per level of the lane tree (docs/systolic.md, "The
    /// floating-point grid").
    pub fn depth(&self) -> u32 {
        if self.float() {
            self.pipeline + self.fp_stages + clog2(self.lanes as u64) * self.hop()
        } else {
            self.pipeline
        }
    }
    /// Cycles of one binary32 add, H = `fp_stages` + 1: a partial sum's hop
    /// from one PE row to the next in the weight-stationary grid (1 for
    /// integers).
    pub fn hop(&self) -> u32 {
        self.fp_stages + 1
    }
    /// Width of one product: bits(a) + bits(b), one more for mixed signedness.
    pub fn product_bits(&self) -> u32 {
        self.a_type.bits() + self.b_type.bits() + (self.a_type.signed() != self.b_type.signed()) as u32
    }
    /// The accumulator (and C) is read as signed when either type is signed.
    pub fn signed(&self) -> bool {
        self.a_type.signed() || self.b_type.signed()
    }
    /// Bits of one lane's slot in a channel.
    pub fn slot_bits(&self) -> u32 {
        self.channel_bits / self.lanes
    }
    pub fn row_index_bits(&self) -> u32 {
        clog2(self.rows as u64).max(1)
    }
    pub fn steps_bits(&self) -> u32 {
        bits_for(self.group as u64)
    }
}

impl BlockParams for SystolicParams {
    const BLOCK: &'static str = "systolic";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max| ParamKind::Int { min, max, rule: "" };
        vec![
            ParamInfo::new("rows", int(1, 64), "grid rows R"),
            ParamInfo::new("cols", int(1, 64), "grid columns C"),
            ParamInfo::new("lanes", int(1, 8), "element pairs per PE per cycle L (a dot product of L pairs)"),
            ParamInfo::new(
                "channel_bits",
                int(8, 64),
                "bits per operand channel; lanes must divide it, and each lane's slot (channel_bits/lanes bits) must hold the element type",
            ),
            ParamInfo::new("a_type", ParamKind::Choice(ElemType::NAMES), "A element type: integer (mixed pairs with b_type allowed) or floating point bf16, fp16, fp8e4m3, fp8e5m2 (paired with a floating-point b_type; binary32 accumulation)"),
            ParamInfo::new("b_type", ParamKind::Choice(ElemType::NAMES), "B element type"),
            ParamInfo::new(
                "acc_bits",
                int(8, 64),
                "accumulator width, at least the product width (bits(a) + bits(b), one more when exactly one type is signed); sums wrap modulo 2^acc_bits; 32 (binary32) with floating-point types",
            ),
            ParamInfo::new(
                "dataflow",
                ParamKind::Choice(Dataflow::NAMES),
                "os = output-stationary, ws = weight-stationary (docs/systolic.md, \"Weight-stationary\")",
            ),
            ParamInfo::new("group", int(1, 16), "k-steps per input transfer (the load filter's window); os only, not used by ws"),
            ParamInfo::new("gating", ParamKind::Bool, "PE gating: products with a zero operand are not computed, and counted"),
            ParamInfo::new("load_filter", ParamKind::Bool, "skip k-steps whose A or B slice is all zero"),
            ParamInfo::new("rowcol_skip", ParamKind::Bool, "the sequencer does not stream all-zero A rows / B columns"),
            ParamInfo::new(
                "pipeline",
                int(0, 3),
                "extra register stages in each PE's multiply-accumulate (2: the multiplier sits alone between registers; 3: it is split into two half-width products with a register between, for FPGAs without multipliers)",
            ),
            ParamInfo::new(
                "dsp",
                ParamKind::Choice(Dsp::NAMES),
                "ecp5 = each multiply (floating point: each significand product) is a gpurtl_systolic_mul instance whose ECP5 body (gpurtl_systolic_mul.ecp5.v, read by `gpurtl synth --target ecp5` only) is a MULT18X18D holding the two pipeline registers (needs pipeline = 2; floating point also ws and fp_stages >= 2); infer = an inline `*` between the PE's own registers; auto = ecp5 where ecp5 is allowed and pipeline is 2, else infer. Behaviour and timing are the same for all three",
            ),
            ParamInfo::new(
                "stats",
                ParamKind::Bool,
                "the statistics counters (useful, gated, skipped) and their stat_*_o ports; without them the ports are absent and `gpurtl run` reports no counts and no utilization",
            ),
            ParamInfo::new(
                "c0_add",
                ParamKind::Bool,
                "the C0 input: integers, the out_c0_i port and its add on each result row; floating point, where each sum starts (ws: a_c0_i, os: the in_c0_i field); without it (os only: ws needs it) the sums start at 0 and an input with c0 is an error",
            ),
            ParamInfo::new(
                "fp_stages",
                int(0, 5),
                "registers inside each binary32 add of the floating-point weight-stationary PE (its lane tree and its partial sum), and as many inside each product's rounding: an add takes fp_stages + 1 cycles (docs/systolic.md, \"The floating-point grid\"); 0 for integers and for os",
            ),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "rows", self.rows as i64, true);
        c.int(&t, "cols", self.cols as i64, true);
        c.int(&t, "lanes", self.lanes as i64, true);
        c.int(&t, "channel_bits", self.channel_bits as i64, true);
        if (1..=8).contains(&self.lanes) && (8..=64).contains(&self.channel_bits) {
            if !self.channel_bits.is_multiple_of(self.lanes) {
                c.check(false, "lanes", self.lanes, format!("a divisor of channel_bits ({})", self.channel_bits));
            } else {
                let need = self.a_type.bits().max(self.b_type.bits());
                c.check(
                    self.slot_bits() >= need,
                    "channel_bits",
                    self.channel_bits,
                    format!("at least lanes x {need} = {} (each lane's slot holds one element)", self.lanes * need),
                );
            }
        }
        c.int(&t, "acc_bits", self.acc_bits as i64, true);
        let (fa, fb) = (self.a_type.is_float(), self.b_type.is_float());
        if fa != fb {
            let (name, value, other, other_value) = if fa {
                ("b_type", self.b_type, "a_type", self.a_type)
            } else {
                ("a_type", self.a_type, "b_type", self.b_type)
            };
            c.check(
                false,
                name,
                format!("`{value}`"),
                format!("a floating-point type (bf16, fp16, fp8e4m3, fp8e5m2) when {other} is `{other_value}`: floating-point types pair only with floating-point types"),
            );
        } else if fa {
            c.check(
                self.acc_bits == 32,
                "acc_bits",
                self.acc_bits,
                format!("32 with floating-point types ({} x {}): the accumulator is binary32", self.a_type, self.b_type),
            );
            c.check(
                self.dsp != Dsp::Ecp5 || (self.dataflow == Dataflow::Ws && self.fp_stages >= 2),
                "dsp",
                "`ecp5`",
                format!(
                    "auto or infer with floating-point types ({} x {}) unless the grid is weight-stationary with fp_stages >= 2 (here {} with fp_stages = {}): only there does the significand product have the DSP's two registers around it",
                    self.a_type, self.b_type, self.dataflow, self.fp_stages
                ),
            );
        } else if (8..=64).contains(&self.acc_bits) {
            c.check(
                self.acc_bits >= self.product_bits(),
                "acc_bits",
                self.acc_bits,
                format!("at least the product width {} ({} x {})", self.product_bits(), self.a_type, self.b_type),
            );
        }
        c.int(&t, "group", self.group as i64, true);
        c.int(&t, "fp_stages", self.fp_stages as i64, true);
        if self.fp_stages > 0 && self.fp_stages <= 5 {
            c.check(
                self.float() && self.dataflow == Dataflow::Ws,
                "fp_stages",
                self.fp_stages,
                format!(
                    "0 {}: only the floating-point weight-stationary grid pipelines its adds (the output-stationary accumulator is a one-cycle loop)",
                    if self.float() { "when dataflow is os" } else { "with integer types" }
                ),
            );
        }
        c.int(&t, "pipeline", self.pipeline as i64, true);
        if self.dsp == Dsp::Ecp5 {
            c.check(
                self.pipeline == 2,
                "dsp",
                format!("`{}`", self.dsp),
                format!("auto or infer when pipeline is {} (ecp5 uses the DSP's input and output registers as the PE's two stages: pipeline = 2)", self.pipeline),
            );
        }
        if !self.c0_add {
            c.check(
                self.dataflow == Dataflow::Os,
                "c0_add",
                "false",
                "true when dataflow is ws (the weight-stationary grid adds K blocks through out_c0_i)".to_string(),
            );
        }
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "a 4x4 int8 output-stationary grid with every level of zero skipping",
            "grid8" => "the 8x8 grid of the figures (`gpurtl bench systolic --preset grid8`)",
            "int4x4" => "int4 operands, four pairs a PE a cycle in 16-bit channels",
            "dense" => "no load filter and no row/column skip: every k-step, row and column is streamed",
            "hx8k" => "the 4x4 grid for an iCE40-HX8K at 100 MHz: a load-filter window of 2, the multiplier split for LUTs, 24-bit accumulators (exact for K <= 256 int8 products)",
            "infer" => "the inline `*` multipliers, to compare with the hand-mapped ECP5 ones",
            "ws" => "weight-stationary",
            "bf16" => "a 4x4 weight-stationary bf16 grid, two lanes in 32-bit channels, binary32 accumulation, each add over six cycles for FPGAs (docs/systolic.md, \"Floating point\")",
            "minimal" => "the smallest 4x4 int8 grid with valid/ready: no gating, skipping, counters or C0 add, a one-step input transfer, 24-bit accumulators (exact for K <= 256)",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        let d = Self::default();
        vec![
            ("default", d.clone()),
            ("grid8", SystolicParams { rows: 8, cols: 8, ..d.clone() }),
            (
                "int4x4",
                SystolicParams {
                    lanes: 4,
                    channel_bits: 16,
                    a_type: ElemType::I4,
                    b_type: ElemType::I4,
                    acc_bits: 24,
                    ..d.clone()
                },
            ),
            ("dense", SystolicParams { load_filter: false, rowcol_skip: false, ..d.clone() }),
            // A 4x4 grid for an iCE40-HX8K at 100 MHz: a load-filter window of 2,
            // the multiplier split for LUTs and 24-bit accumulators (exact for
            // K <= 256 int8 products), so that it fits with room to route.
            ("hx8k", SystolicParams { group: 2, pipeline: 3, acc_bits: 24, ..d.clone() }),
            // The inline `*` multipliers, as before `dsp = auto`.
            ("infer", SystolicParams { dsp: Dsp::Infer, ..d.clone() }),
            ("ws", SystolicParams { dataflow: Dataflow::Ws, ..d.clone() }),
            (
                "bf16",
                SystolicParams {
                    dataflow: Dataflow::Ws,
                    a_type: ElemType::Bf16,
                    b_type: ElemType::Bf16,
                    lanes: 2,
                    channel_bits: 32,
                    fp_stages: 5,
                    ..d.clone()
                },
            ),
            // The smallest 4x4 int8 output-stationary grid with valid/ready:
            // no skipping, no gating, no counters, no C0 add, a one-step input
            // transfer and 24-bit accumulators (exact for K <= 256).
            (
                "minimal",
                SystolicParams {
                    acc_bits: 24,
                    group: 1,
                    gating: false,
                    load_filter: false,
                    rowcol_skip: false,
                    stats: false,
                    c0_add: false,
                    ..d
                },
            ),
        ]
    }
}
