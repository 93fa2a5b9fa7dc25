//! Systolic PE grid with zero skipping (BLOCKS.md §1; seed 004 §318-343, §366-370).
//!
//! Output-stationary (§331-332): PE(i,j) accumulates one element of the
//! output tile; A values move right, B values move down, one hop per cycle.
//! Each PE adds a dot product of `lanes` element pairs per cycle (§326).
//! Zero skipping (§333-343):
//! 1. PE gating: a lane with a zero operand does not multiply, and the
//!    accumulator holds when every lane is gated;
//! 2. load filter: the loader holds `group` k-steps and issues the next
//!    useful one (A and B slices both non-zero) every cycle, skipping any
//!    number of zero steps in the same cycle (§339);
//! 3. row/column skip lives in the tile sequencer (docs/systolic.md).
//!
//! A tile's result moves to a result register when its last step passes,
//! so the next tile computes while rows drain. Behaviour and timing:
//! `docs/systolic.md`.

use crate::params::{BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use crate::rtl::pipe::{credit_begin, credit_end};
use crate::rtl::{bits_for, clog2, lowest_bit, popcount, select, select_onehot, split_counter, sum_tree, Expr, Module, ModuleBuilder, RtlError};
use crate::Design;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    I8,
    U8,
    I4,
    U4,
    I2,
    U2,
}

impl ElemType {
    pub const NAMES: &'static [&'static str] = &["i8", "u8", "i4", "u4", "i2", "u2"];
    pub fn bits(self) -> u32 {
        match self {
            ElemType::I8 | ElemType::U8 => 8,
            ElemType::I4 | ElemType::U4 => 4,
            ElemType::I2 | ElemType::U2 => 2,
        }
    }
    pub fn signed(self) -> bool {
        matches!(self, ElemType::I8 | ElemType::I4 | ElemType::I2)
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
    pub dataflow: String,
    pub group: u32,
    pub gating: bool,
    pub load_filter: bool,
    pub rowcol_skip: bool,
    pub pipeline: u32,
    pub dsp: String,
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
            dataflow: "os".into(),
            group: 8,
            gating: true,
            load_filter: true,
            rowcol_skip: true,
            pipeline: 2,
            dsp: "auto".into(),
        }
    }
}

impl SystolicParams {
    /// Each multiply is a `gpurtl_systolic_mul` instance (with a hand-mapped
    /// ECP5 body) rather than an inline `*`.
    pub fn dsp_module(&self) -> bool {
        self.dsp == "ecp5" || (self.dsp == "auto" && self.pipeline == 2)
    }
    /// Width of one step's useful-MAC count (at most rows x cols x lanes).
    pub fn macs_bits(&self) -> u32 {
        bits_for((self.rows * self.cols * self.lanes) as u64)
    }
    /// Width of one product: bits(a) + bits(b), one more for mixed signedness.
    pub fn product_bits(&self) -> u32 {
        self.a_type.bits() + self.b_type.bits() + (self.a_type.signed() != self.b_type.signed()) as u32
    }
    pub fn signed(&self) -> bool {
        self.a_type.signed() || self.b_type.signed()
    }
    pub fn slot_bits(&self) -> u32 {
        self.channel_bits / self.lanes
    }
    pub fn top_name(&self) -> String {
        "gpurtl_systolic".into()
    }
    pub fn row_index_bits(&self) -> u32 {
        clog2(self.rows as u64).max(1)
    }
    pub fn steps_bits(&self) -> u32 {
        bits_for(self.group as u64)
    }
}

/// Counter widths of the statistics outputs.
pub const STAT_BITS: u32 = 48;

impl BlockParams for SystolicParams {
    const BLOCK: &'static str = "systolic";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max| ParamKind::Int { min, max, rule: "" };
        vec![
            ParamInfo { name: "rows", kind: int(1, 64), doc: "grid rows" },
            ParamInfo { name: "cols", kind: int(1, 64), doc: "grid columns" },
            ParamInfo { name: "lanes", kind: int(1, 8), doc: "element pairs per PE per cycle (dot product)" },
            ParamInfo {
                name: "channel_bits",
                kind: int(8, 64),
                doc: "bits per operand channel; lanes divide it; a slot holds one element",
            },
            ParamInfo { name: "a_type", kind: ParamKind::Choice(ElemType::NAMES), doc: "A element type" },
            ParamInfo { name: "b_type", kind: ParamKind::Choice(ElemType::NAMES), doc: "B element type" },
            ParamInfo { name: "acc_bits", kind: int(8, 64), doc: "accumulator width; sums wrap" },
            ParamInfo {
                name: "dataflow",
                kind: ParamKind::Choice(&["os", "ws"]),
                doc: "os = output-stationary, ws = weight-stationary",
            },
            ParamInfo { name: "group", kind: int(1, 16), doc: "k-steps per input transfer (load filter window); os only" },
            ParamInfo { name: "gating", kind: ParamKind::Bool, doc: "PE gating of zero-operand products" },
            ParamInfo { name: "load_filter", kind: ParamKind::Bool, doc: "skip all-zero k-steps" },
            ParamInfo { name: "rowcol_skip", kind: ParamKind::Bool, doc: "sequencer skips all-zero A rows / B columns" },
            ParamInfo {
                name: "pipeline",
                kind: int(0, 3),
                doc: "extra register stages in each PE's multiply-accumulate (3 splits the multiplier, for LUT-only FPGAs)",
            },
            ParamInfo {
                name: "dsp",
                kind: ParamKind::Choice(&["auto", "infer", "ecp5"]),
                doc: "ecp5 = each multiply is a module that the ECP5 flow maps onto a MULT18X18D holding its input and output registers (needs pipeline = 2); infer = multipliers as `*`; auto = ecp5 when pipeline is 2, else infer",
            },
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
        if (8..=64).contains(&self.acc_bits) {
            c.check(
                self.acc_bits >= self.product_bits(),
                "acc_bits",
                self.acc_bits,
                format!(
                    "at least the product width {} ({} x {})",
                    self.product_bits(),
                    ElemType::NAMES[self.a_type as usize],
                    ElemType::NAMES[self.b_type as usize]
                ),
            );
        }
        c.check(
            matches!(self.dataflow.as_str(), "os" | "ws"),
            "dataflow",
            format!("`{}`", self.dataflow),
            "one of os, ws",
        );
        c.int(&t, "group", self.group as i64, true);
        c.int(&t, "pipeline", self.pipeline as i64, true);
        c.check(
            matches!(self.dsp.as_str(), "auto" | "infer" | "ecp5"),
            "dsp",
            format!("`{}`", self.dsp),
            "one of auto, infer, ecp5",
        );
        if self.dsp == "ecp5" {
            c.check(
                self.pipeline == 2,
                "dsp",
                format!("`{}`", self.dsp),
                format!("auto or infer when pipeline is {} (ecp5 uses the DSP's input and output registers as the PE's two stages: pipeline = 2)", self.pipeline),
            );
        }
        c.finish()
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
            ("infer", SystolicParams { dsp: "infer".into(), ..d.clone() }),
            ("ws", SystolicParams { dataflow: "ws".into(), ..d }),
        ]
    }
}

/// One processing element. A, valid and last move right; B moves down.
fn pe(p: &SystolicParams, mul: Option<&Module>) -> Result<Module, RtlError> {
    let (ab, bb, l, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.lanes, p.acc_bits);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe");
    m.doc("Output-stationary processing element of gpurtl_systolic (seed 004 §331-333).");
    m.doc(format!("acc += sum over {l} lanes of a*b ({} x {}); gated lanes do not multiply.", ElemType::NAMES[p.a_type as usize], ElemType::NAMES[p.b_type as usize]));
    let clk = m.clock("clk_i");
    let _rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let valid_i = m.input("valid_i", 1, "a step is here");
    let last_i = m.input("last_i", 1, "the step ends the tile");
    let b_i = m.input("b_i", l * bb, "B lanes from above");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let valid_o = m.output("valid_o", 1, "valid to the right");
    let last_o = m.output("last_o", 1, "last to the right");
    let b_o = m.output("b_o", l * bb, "B lanes downwards");
    let res_o = m.output("res_o", acc_w, "the last finished tile's result");
    let done_o = m.output("done_o", 1, "res_o changes at the end of this cycle");
    // With gating, each lane's non-zero flag travels beside the operand, so
    // no zero test sits in front of the multiplier's input register.
    let flags = if p.gating {
        let (a_nz_i, b_nz_i) =
            (m.input("a_nz_i", l, "lane k of a_i is not zero"), m.input("b_nz_i", l, "lane k of b_i is not zero"));
        let (a_nz_o, b_nz_o) = (m.output("a_nz_o", l, "a_nz to the right"), m.output("b_nz_o", l, "b_nz downwards"));
        let a_nz_q = m.pipe("a_nz_q", &a_nz_i, &Expr::bit(true));
        let b_nz_q = m.pipe("b_nz_q", &b_nz_i, &Expr::bit(true));
        m.assign(&a_nz_o, &a_nz_q);
        m.assign(&b_nz_o, &b_nz_q);
        Some((a_nz_i, b_nz_i))
    } else {
        None
    };
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let b_q = m.pipe("b_q", &b_i, &Expr::bit(true));
    let valid_q = m.reg("valid_q", 1, 0);
    let last_q = m.reg_noreset("last_q", 1);
    m.next(&valid_q, &valid_i, None);
    m.next(&last_q, &last_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&b_o, &b_q);
    m.assign(&valid_o, &valid_q);
    m.assign(&last_o, &last_q);
    // Gating on the operands: a lane with a zero operand feeds the multiplier
    // zeros, so it does not toggle (§333, §338).
    let (mut mac_a, mut mac_b, nzs) = gate_lanes(&mut m, &a_i, &b_i, flags.as_ref().map(|(x, y)| (x, y)), p);
    let mut any_nz = if p.gating { Expr::cat_lanes(&nzs).any() } else { Expr::bit(true) };
    let (mut mac_v, mut mac_l) = (valid_i.clone(), last_i.clone());
    // pipeline >= 2: register the gated operands, so the multiplier (a DSP
    // on FPGAs) sits alone between two registers.
    let dsp = mul.is_some();
    if p.pipeline >= 2 {
        if !dsp {
            mac_a = m.pipe("mac_a_q", &mac_a, &Expr::bit(true));
            mac_b = m.pipe("mac_b_q", &mac_b, &Expr::bit(true));
        }
        any_nz = m.pipe("mac_nz_q", &any_nz, &Expr::bit(true));
        mac_v = valid_q.clone();
        mac_l = last_q.clone();
    }
    let sum = match mul {
        Some(mm) => dsp_dot(&mut m, mm, &clk, &mac_a, &mac_b, p),
        None if p.pipeline >= 3 => {
            // The half products take a stage of their own.
            let vq = m.reg("mac2_valid_q", 1, 0);
            m.next(&vq, &mac_v, None);
            mac_v = vq;
            mac_l = m.pipe("mac2_last_q", &mac_l, &Expr::bit(true));
            any_nz = m.pipe("mac2_nz_q", &any_nz, &Expr::bit(true));
            split_dot(&mut m, &mac_a, &mac_b, p)
        }
        None => dot(&mut m, &mac_a, &mac_b, p),
    };
    // Gating: the accumulator holds when no lane multiplies (unless the tile ends).
    let work = if p.gating { any_nz.or(&mac_l) } else { Expr::bit(true) };
    // pipeline >= 1: register the product sum before the accumulator.
    let (sum, work, v, last) = if p.pipeline >= 1 {
        let vq = m.reg("mac_valid_q", 1, 0);
        m.next(&vq, &mac_v, None);
        (
            if dsp { sum } else { m.pipe("sum_q", &sum, &Expr::bit(true)) },
            m.pipe("work_q", &work, &Expr::bit(true)),
            vq,
            m.pipe("mac_last_q", &mac_l, &Expr::bit(true)),
        )
    } else {
        (sum, work, mac_v, mac_l)
    };
    let acc = m.reg("acc_q", acc_w, 0);
    let total = m.let_("total", &acc.add(&sum));
    m.next(&acc, &last.mux(&Expr::zero(acc_w), &total), Some(&v.and(&work)));
    let done = m.let_("done", &v.and(&last));
    let res = m.pipe("res_q", &total, &done);
    m.assign(&res_o, &res);
    m.assign(&done_o, &done);
    m.finish()
}

pub fn build(p: &SystolicParams) -> Result<Design, RtlError> {
    if p.dataflow == "ws" {
        return build_ws(p);
    }
    let (r, c, l, g) = (p.rows, p.cols, p.lanes, p.group);
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let slot = p.slot_bits();
    let ch = p.channel_bits;
    let mul = dsp_mul(p)?;
    let pe_mod = pe(p, mul.as_ref())?;
    let mut b = grid_builder(p, "output-stationary", &format!("{acc_w}-bit accumulators; {g} k-steps per input transfer"));
    b.doc(format!(
        "PE gating {}, load filter {}. Behaviour and timing: docs/systolic.md.",
        if p.gating { "on" } else { "off" },
        if p.load_filter { "on" } else { "off" }
    ));
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let in_valid = b.input("in_valid_i", 1, "a group of k-steps is offered");
    let in_ready = b.output("in_ready_o", 1, "the group is taken");
    let in_a = b.input("in_a_i", g * r * ch, "A: step s, PE row i at channel s*rows+i; lane slots of channel_bits/lanes");
    let in_b = b.input("in_b_i", g * c * ch, "B: step s, PE column j at channel s*cols+j");
    let in_steps = b.input("in_steps_i", p.steps_bits(), "steps present in the group (1..group)");
    let in_last = b.input("in_last_i", 1, "the group ends the tile");
    let out_valid = b.output("out_valid_o", 1, "a result row is offered");
    let out_ready = b.input("out_ready_i", 1, "the row is taken");
    let out_row = b.output("out_row_o", p.row_index_bits(), "row of the tile");
    let out_c = b.output("out_c_o", c * acc_w, "the row's results (plus out_c0_i), column j at j*acc_bits");
    let out_c0 = b.input("out_c0_i", c * acc_w, "initial accumulator values for row out_row_o");
    let stat_useful = b.output("stat_useful_o", STAT_BITS, "useful multiply-accumulates since reset");
    let stat_gated = b.output("stat_gated_o", STAT_BITS, "gated products since reset");
    let stat_skipped = b.output("stat_skipped_o", STAT_BITS, "k-steps skipped by the load filter since reset");
    if slot > ab.max(bb) || slot > ab.min(bb) {
        b.waive_unused(&in_a, "slot bits above the element type are not used");
        b.waive_unused(&in_b, "slot bits above the element type are not used");
    }

    // ---- input: elements out of their slots, useful flags ----
    let elems = |x: &Expr, n: u32, eb: u32| -> Vec<Vec<Expr>> {
        // [step][pe] -> lanes packed, lane 0 low
        (0..g)
            .map(|s| {
                (0..n)
                    .map(|i| {
                        let base = (s * n + i) * ch;
                        Expr::cat_lanes(&(0..l).map(|ln| x.part(base + ln * slot, eb)).collect::<Vec<_>>())
                    })
                    .collect()
            })
            .collect()
    };
    let a_in = elems(&in_a, r, ab);
    let b_in = elems(&in_b, c, bb);
    let accept = b.let_("accept", &in_valid.and(&in_ready));

    // ---- loader: two group banks, one issuing ----
    // Timing is the one-group loader of docs/systolic.md: the active bank
    // issues; when it is done the other bank takes over the next cycle, and an
    // empty non-last group costs its one cycle. The second bank only lets a
    // group be taken early, so `in_ready_o` is a register and no same-cycle
    // path runs from the issue logic to the group registers.
    let row_w = l * ab;
    let col_w = l * bb;
    let packed_a = Expr::cat_lanes(&a_in.iter().map(|v| Expr::cat_lanes(v)).collect::<Vec<_>>());
    let packed_b = Expr::cat_lanes(&b_in.iter().map(|v| Expr::cat_lanes(v)).collect::<Vec<_>>());
    let act = b.reg("active_bank_q", 1, 0);
    let wr = b.reg("write_bank_q", 1, 0);
    let inflight = b.reg("inflight_q", 2, 0);
    let full: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_full_q"), 1, 0)).collect();
    let rem: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_rem_q"), g, 0)).collect();
    // The lowest remaining step of each bank, one-hot, kept beside `rem` so
    // that the step select starts from a register.
    let low: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_low_q"), g, 0)).collect();
    // ... and the one after it, so the step after an issue is a register too.
    let low2: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_low2_q"), g, 0)).collect();
    let need: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_need_end_q"), 1, 0)).collect();
    let wr_full = select(&wr, &full);

    // Input register: the group lands here first; its useful flags and skip
    // count are worked out from registers, off the input pins' paths.
    let inq_valid = b.reg("in_valid_q", 1, 0);
    // in_ready_o = !in_valid_q | take, kept as a register of its own (worked
    // out from the next states). It is also the input register's load
    // enable: whenever the register may take a group it samples the pins,
    // and what it samples without an accept is never used. So the wide
    // enable comes straight from a flip-flop. (A LUT of the state flip-flops
    // would do too, but yosys then shares that high-fanout LUT with the
    // loader's logic and places it among the enables.)
    let in_ready_q = b.reg("in_ready_q", 1, 1);
    let inq_a = b.pipe("in_a_q", &packed_a, &in_ready_q);
    let inq_b = b.pipe("in_b_q", &packed_b, &in_ready_q);
    let inq_last = b.pipe("in_last_q", &in_last, &in_ready_q);
    let take = b.let_("take", &inq_valid.and(&wr_full.not()));
    b.assign(&in_ready, &in_ready_q);
    let inq_valid_next = b.let_("in_valid_next", &accept.or(&inq_valid.and(&take.not())));
    b.next(&inq_valid, &inq_valid_next, None);
    // The non-zero tests are worked out as the group enters the input
    // register, so the wide tests have a cycle of their own; the step count
    // is registered as it is, and the present flags come from it.
    let steps_in = b.pipe("in_steps_q", &in_steps, &in_ready_q);
    let present_in =
        Expr::cat_lanes(&(0..g).map(|s| steps_in.gt(&Expr::lit(p.steps_bits(), s as u64))).collect::<Vec<_>>());
    let useful_in = if p.load_filter {
        // The A and B tests are registered apart: each is half as wide.
        let any_of = |x: &[Vec<Expr>]| Expr::cat_lanes(&x.iter().map(|v| Expr::cat(v).any()).collect::<Vec<_>>());
        let a_nz = b.pipe("in_a_nonzero_q", &any_of(&a_in), &in_ready_q);
        let b_nz = b.pipe("in_b_nonzero_q", &any_of(&b_in), &in_ready_q);
        b.let_("in_useful", &present_in.and(&a_nz).and(&b_nz))
    } else {
        present_in.clone()
    };
    let sw = bits_for(g as u64);
    let bits = |v: &Expr| (0..g).map(|i| v.bit_at(i)).collect::<Vec<_>>();
    let skipped_now = popcount(&bits(&present_in.and(&useful_in.not())), sw);

    let load: Vec<Expr> = (0..2).map(|k| b.let_(&format!("bank{k}_load"), &take.and(&wr.eq_lit(k)))).collect();
    // A bank that is not full is not in use: it copies the input register
    // every cycle, so its wide enable is a flip-flop (`!full`) rather than
    // the load decision.
    let ga: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_a_q"), &inq_a, &full[k].not())).collect();
    let gb: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_b_q"), &inq_b, &full[k].not())).collect();
    // Each lane's non-zero flag, [step][pe][lane] (lane 0 low), worked out
    // from the input register as a bank copies it, then carried beside the
    // operands into the grid: neither the counters nor the PEs' gating test
    // operands for zero, and the input pins' paths stay short.
    let nz_flags = |x: &Expr, n: u32, eb: u32| Expr::cat_lanes(&(0..g * n * l).map(|k| x.part(k * eb, eb).any()).collect::<Vec<_>>());
    let (a_nz_in, b_nz_in) = (nz_flags(&inq_a, r, ab), nz_flags(&inq_b, c, bb));
    let ga_nz: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_a_nz_q"), &a_nz_in, &full[k].not())).collect();
    let gb_nz: Vec<Expr> = (0..2).map(|k| b.pipe(&format!("bank{k}_b_nz_q"), &b_nz_in, &full[k].not())).collect();
    let wr_next = b.let_("write_bank_next", &take.mux(&wr.not(), &wr));
    b.next(&wr, &wr_next, None);

    // A bank that is not full has no remaining step and no end pending (both
    // are cleared as it finishes), so only the active bank's flags matter.
    // The issue decision reads one-bit registers only: whether the bank has
    // a step left (`bankN_any_q`), a second one (`bankN_any2_q`), and
    // whether no tile is in flight (`idle_q`), so it is a LUT or two deep.
    // The issued step is picked straight from registers: bankN_pick_q is the
    // lowest remaining step of bank N while N is active, else zero.
    let picks: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_pick_q"), g, 0)).collect();
    let any: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_any_q"), 1, 0)).collect();
    let any2: Vec<Expr> = (0..2).map(|k| b.reg(&format!("bank{k}_any2_q"), 1, 0)).collect();
    let idle = b.reg("idle_q", 1, 1);
    let held = b.let_("held", &select(&act, &full));
    let need_end = b.let_("cur_need_end", &select(&act, &need));
    let has_rem = b.let_("has_rem", &select(&act, &any));
    let cand = b.let_("cand", &has_rem.or(&need_end));
    let rest_any = b.let_("rest_any", &select(&act, &any2));
    let cand_end = b.let_("cand_end", &need_end.and(&rest_any.not()));
    let issue = b.let_("issue", &cand.and(&cand_end.not().or(&idle)));
    let issue_null = b.let_("issue_null", &issue.and(&has_rem.not()));
    // The active group is done: nothing to issue, or its last candidate issues now.
    let done = b.let_("group_done", &held.and(&cand.not().or(&issue.and(&rest_any.not()))));
    // A held empty bank hands over too, so the pointer never waits on it.
    let advance = b.let_("advance", &done.or(&held.not().and(&select(&act.not(), &full))));
    b.next(&act, &act.not(), Some(&advance));
    let act_next = b.let_("active_bank_next", &advance.mux(&act.not(), &act));
    // The group in the input register: its first and second useful steps.
    let in_low = b.let_("in_low", &lowest_bit(&useful_in));
    let in_low2 = b.let_("in_low2", &lowest_bit(&useful_in.and(&in_low.not())));
    let mut full_next = Vec::new();
    for k in 0..2u64 {
        let ku = k as usize;
        let is_act = act.eq_lit(k);
        let finish = is_act.and(&done);
        let fn_ = b.let_(&format!("bank{k}_full_next"), &load[ku].or(&full[ku].and(&finish.not())));
        b.next(&full[ku], &fn_, None);
        full_next.push(fn_);
        let stepped = is_act.and(&issue);
        let rem_en = load[ku].or(&stepped);
        // The bank's lowest remaining step is the one that issues.
        b.next(&rem[ku], &load[ku].mux(&useful_in, &rem[ku].and(&low[ku].not())), Some(&rem_en));
        let low_next = b.let_(
            &format!("bank{k}_low_next"),
            &load[ku].mux(&in_low, &stepped.mux(&low2[ku], &low[ku])),
        );
        b.next(&low[ku], &low_next, None);
        b.next(&picks[ku], &act_next.eq_lit(k).repl(g).and(&low_next), None);
        let after = rem[ku].and(&low[ku].not()).and(&low2[ku].not());
        b.next(&low2[ku], &load[ku].mux(&in_low2, &lowest_bit(&after)), Some(&rem_en));
        b.next(&any[ku], &load[ku].mux(&useful_in.any(), &any2[ku]), Some(&rem_en));
        b.next(&any2[ku], &load[ku].mux(&in_low2.any(), &after.any()), Some(&rem_en));
        b.next(
            &need[ku],
            &load[ku].mux(&inq_last, &Expr::bit(false)),
            Some(&load[ku].or(&stepped.and(&cand_end))),
        );
    }
    b.next(
        &in_ready_q,
        &inq_valid_next.not().or(&select(&wr_next, &full_next).not()),
        None,
    );

    // The issued step: picked operands and their lanes' non-zero flags
    // (zero for the null step). `select_pick` is both banks' pick registers.
    let sel = b.let_("select_pick", &Expr::cat_lanes(&picks));
    let a_steps: Vec<Expr> = ga.iter().flat_map(|x| (0..g).map(move |s| x.part(s * r * row_w, r * row_w))).collect();
    let b_steps: Vec<Expr> = gb.iter().flat_map(|x| (0..g).map(move |s| x.part(s * c * col_w, c * col_w))).collect();
    let step_a = b.let_("step_a", &select_onehot(&sel, &a_steps));
    let step_b = b.let_("step_b", &select_onehot(&sel, &b_steps));
    let steps_of = |banks: &[Expr], n: u32| -> Vec<Expr> {
        banks.iter().flat_map(|x| (0..g).map(move |s| x.part(s * n * l, n * l))).collect()
    };
    let step_a_nz = b.let_("step_a_nz", &select_onehot(&sel, &steps_of(&ga_nz, r)));
    let step_b_nz = b.let_("step_b_nz", &select_onehot(&sel, &steps_of(&gb_nz, c)));

    // ---- issue register and skew: row i delayed i, column j delayed j ----
    let iss_valid = b.reg("issue_valid_q", 1, 0);
    b.next(&iss_valid, &issue, None);
    let iss_last = b.pipe("issue_last_q", &cand_end, &Expr::bit(true));
    let iss_a = b.pipe("issue_a_q", &step_a, &Expr::bit(true));
    let iss_b = b.pipe("issue_b_q", &step_b, &Expr::bit(true));
    let iss_a_nz = b.pipe("issue_a_nz_q", &step_a_nz, &Expr::bit(true));
    let iss_b_nz = b.pipe("issue_b_nz_q", &step_b_nz, &Expr::bit(true));
    // ---- counters, pipelined off the issue registers (off the issue path) ----
    let cb = bits_for(c as u64);
    let iss_real = b.reg("issue_real_q", 1, 0);
    b.next(&iss_real, &issue.and(&issue_null.not()), None);
    let mut pcs = Vec::new();
    for lane in 0..l {
        let nza: Vec<Expr> = (0..r).map(|i| iss_a_nz.bit_at(i * l + lane)).collect();
        let nzb: Vec<Expr> = (0..c).map(|j| iss_b_nz.bit_at(j * l + lane)).collect();
        let pa = b.pipe(&format!("nz_rows_l{lane}_q"), &Expr::cat_lanes(&nza), &Expr::bit(true));
        let pb = b.pipe(&format!("nz_cols_l{lane}_q"), &popcount(&nzb, cb), &Expr::bit(true));
        pcs.push((pa, pb));
    }
    let stat_v1 = b.reg("stat_valid1_q", 1, 0);
    b.next(&stat_v1, &iss_real, None);
    // A lane's count is at most rows x cols.
    let pw = bits_for((r * c) as u64);
    // non-zero rows x non-zero columns, as a sum of masked column counts
    // (LUTs, not a multiplier).
    let terms: Vec<Expr> = pcs
        .iter()
        .map(|(pa, pb)| sum_tree(&(0..r).map(|i| pb.and(&pa.bit_at(i).repl(cb))).collect::<Vec<_>>(), pw).zext(p.macs_bits()))
        .collect();
    let useful_sum = b.let_("useful_sum", &terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t)));
    mac_counters(&mut b, p, &useful_sum, &stat_v1, &stat_useful, &stat_gated);
    // Registered apart from `accept`, so the loader's state stays off this path.
    let skipped_q = b.pipe("skipped_now_q", &skipped_now, &Expr::bit(true));
    let accepted_q = b.reg("accepted_q", 1, 0);
    b.next(&accepted_q, &take, None);
    let st_skipped = stat_counter(&mut b, "skipped_count", &skipped_q, &accepted_q);
    b.assign(&stat_skipped, &st_skipped);

    // With gating the lanes' non-zero flags are skewed beside the operands.
    let gating = p.gating;
    let mut west = Vec::new(); // (a, a_nz, valid, last) entering PE(i, 0)
    for i in 0..r {
        let (mut a, mut v, mut la) = (iss_a.part(i * row_w, row_w), iss_valid.clone(), iss_last.clone());
        let mut nz = iss_a_nz.part(i * l, l);
        for d in 0..i {
            a = b.pipe(&format!("skew_a{i}_{d}_q"), &a, &Expr::bit(true));
            if gating {
                nz = b.pipe(&format!("skew_a_nz{i}_{d}_q"), &nz, &Expr::bit(true));
            }
            let vq = b.reg(&format!("skew_v{i}_{d}_q"), 1, 0);
            b.next(&vq, &v, None);
            v = vq;
            la = b.pipe(&format!("skew_l{i}_{d}_q"), &la, &Expr::bit(true));
        }
        west.push((a, nz, v, la));
    }
    let mut north = Vec::new();
    for j in 0..c {
        let (mut bv, mut nz) = (iss_b.part(j * col_w, col_w), iss_b_nz.part(j * l, l));
        for d in 0..j {
            bv = b.pipe(&format!("skew_b{j}_{d}_q"), &bv, &Expr::bit(true));
            if gating {
                nz = b.pipe(&format!("skew_b_nz{j}_{d}_q"), &nz, &Expr::bit(true));
            }
        }
        north.push((bv, nz));
    }

    // ---- the grid ----
    let mut results = vec![Vec::new(); r as usize];
    let mut row_done = Vec::new();
    let mut south = north.clone();
    for i in 0..r {
        let (mut a, mut a_nz, mut v, mut la) = west[i as usize].clone();
        for j in 0..c {
            let n = format!("pe_{i}_{j}");
            let (a_o, v_o, l_o, b_o) = (
                b.wire(&format!("{n}_a"), row_w),
                b.wire(&format!("{n}_valid"), 1),
                b.wire(&format!("{n}_last"), 1),
                b.wire(&format!("{n}_b"), col_w),
            );
            let (res, done) = (b.wire(&format!("{n}_res"), acc_w), b.wire(&format!("{n}_done"), 1));
            let (b_in, b_nz) = south[j as usize].clone();
            let mut ports = vec![
                ("clk_i", clk.clone()),
                ("rst_i", rst.clone()),
                ("a_i", a.clone()),
                ("valid_i", v.clone()),
                ("last_i", la.clone()),
                ("b_i", b_in),
                ("a_o", a_o.clone()),
                ("valid_o", v_o.clone()),
                ("last_o", l_o.clone()),
                ("b_o", b_o.clone()),
                ("res_o", res.clone()),
                ("done_o", done.clone()),
            ];
            let (a_nz_o, b_nz_o) = if gating {
                let (x, y) = (b.wire(&format!("{n}_a_nz"), l), b.wire(&format!("{n}_b_nz"), l));
                ports.extend([("a_nz_i", a_nz.clone()), ("b_nz_i", b_nz), ("a_nz_o", x.clone()), ("b_nz_o", y.clone())]);
                if j + 1 == c {
                    b.waive_unused(&x, "leaves the grid at the east edge");
                }
                if i + 1 == r {
                    b.waive_unused(&y, "leaves the grid at the south edge");
                }
                (x, y)
            } else {
                (a_nz.clone(), b_nz)
            };
            b.instance(&pe_mod, &format!("u_{n}"), &ports);
            if j + 1 == c {
                for w in [&a_o, &v_o, &l_o] {
                    b.waive_unused(w, "leaves the grid at the east edge");
                }
                row_done.push(done);
            } else {
                b.waive_unused(&done, "only the east column marks a row finished");
            }
            if i + 1 == r {
                b.waive_unused(&b_o, "leaves the grid at the south edge");
            }
            results[i as usize].push(res);
            (a, a_nz, v, la) = (a_o, a_nz_o, v_o, l_o);
            south[j as usize] = (b_o, b_nz_o);
        }
    }

    // ---- output rows in order, through an output register ----
    // The row on offer sits in a register, so the port's `out_c0_i` add has
    // no row select in front of it.
    let riw = p.row_index_bits();
    let out_row_q = b.reg("out_row_q", riw, 0);
    // Rows finish in order, at most one per cycle (a tile's rows a cycle
    // apart, and a tile's first row only after the tile before has gone), so
    // the finished rows not yet taken are a count, and "the next row is
    // ready" is a register of its own.
    let rcw = bits_for(r as u64);
    let rows_ready = b.reg("rows_ready_q", rcw, 0);
    let ready_now = b.reg("row_ready_q", 1, 0);
    let oq_valid = b.reg("out_valid_q", 1, 0);
    let out_fire = b.let_("out_fire", &oq_valid.and(&out_ready));
    let take_row = b.let_("take_row", &ready_now.and(&oq_valid.not().or(&out_fire)));
    let last_row = b.let_("last_row", &out_row_q.eq_lit((r - 1) as u64));
    let row_in = Expr::cat_lanes(&row_done).any().zext(rcw);
    let rows_ready_next =
        b.let_("rows_ready_next", &rows_ready.add(&row_in).sub(&take_row.zext(rcw)));
    b.next(&rows_ready, &rows_ready_next, None);
    b.next(&ready_now, &rows_ready_next.eq_lit(0).not(), None);
    b.next(
        &out_row_q,
        &last_row.mux(&Expr::zero(riw), &out_row_q.add(&Expr::lit(riw, 1))),
        Some(&take_row),
    );
    b.next(&oq_valid, &take_row.or(&oq_valid.and(&out_fire.not())), None);
    let rows: Vec<Expr> = results.iter().map(|row| Expr::cat_lanes(row)).collect();
    let oq_data = b.pipe("out_data_q", &select(&out_row_q, &rows), &take_row);
    let oq_row = b.pipe("out_row_index_q", &out_row_q, &take_row);
    // A tile is in flight until its last row moves into the output register:
    // then its result registers are free for the next tile.
    let tile_out = take_row.and(&last_row);
    let tile_in = issue.and(&cand_end);
    let one = Expr::lit(2, 1);
    let inflight_next = b.let_(
        "inflight_next",
        &tile_in.mux(&tile_out.mux(&inflight, &inflight.add(&one)), &tile_out.mux(&inflight.sub(&one), &inflight)),
    );
    b.next(&inflight, &inflight_next, None);
    b.next(&idle, &inflight_next.eq_lit(0), None);
    let sums: Vec<Expr> =
        (0..c).map(|j| oq_data.part(j * acc_w, acc_w).add(&out_c0.part(j * acc_w, acc_w))).collect();
    b.assign(&out_c, &Expr::cat_lanes(&sums));
    b.assign(&out_valid, &oq_valid);
    b.assign(&out_row, &oq_row);

    let top = b.finish()?;
    Ok(Design { top: top.name.clone(), modules: mul.into_iter().chain([pe_mod, top]).collect() })
}

/// The lanes of `a` and `b` with each lane zeroed when either operand of the
/// lane is zero (PE gating, §333), and the per-lane non-zero flags. `flags`
/// are the lanes' non-zero flags when they travel with the operands (one bit
/// per lane of `a`, of `b`); without them they are worked out here.
fn gate_lanes(
    m: &mut ModuleBuilder,
    a: &Expr,
    b: &Expr,
    flags: Option<(&Expr, &Expr)>,
    p: &SystolicParams,
) -> (Expr, Expr, Vec<Expr>) {
    let (ab, bb) = (p.a_type.bits(), p.b_type.bits());
    let (mut ga, mut gb, mut nzs) = (Vec::new(), Vec::new(), Vec::new());
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        if p.gating {
            let (xa, ya) = match flags {
                Some((fa, fb)) => (fa.bit_at(lane), fb.bit_at(lane)),
                None => (x.any(), y.any()),
            };
            let nz = m.let_(&format!("nz_l{lane}"), &xa.and(&ya));
            ga.push(x.and(&nz.repl(ab)));
            gb.push(y.and(&nz.repl(bb)));
            nzs.push(nz);
        } else {
            ga.push(x);
            gb.push(y);
        }
    }
    (Expr::cat_lanes(&ga), Expr::cat_lanes(&gb), nzs)
}

/// The dot product of the lanes of `a` and `b`, each product extended to
/// `acc_bits`: one wire per lane, summed.
fn dot(m: &mut ModuleBuilder, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, pw, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.product_bits(), p.acc_bits);
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        // Signed operands use the signed multiply (native in FPGA DSPs); the
        // unsigned operand of a mixed pair gets a zero sign bit.
        let prod = match (p.a_type.signed(), p.b_type.signed()) {
            (true, true) => x.smul(&y),
            (true, false) => x.smul(&y.zext(bb + 1)),
            (false, true) => x.zext(ab + 1).smul(&y),
            (false, false) => x.zext(pw).mul(&y.zext(pw)),
        };
        let ext = if p.signed() { prod.sext(acc_w) } else { prod.zext(acc_w) };
        terms.push(m.let_(&format!("prod_l{lane}"), &ext));
    }
    terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t))
}

/// One weight-stationary processing element: A moves right, the partial sum
/// moves down, the weights stay. A shadow weight register is written from the
/// weight bus while the active one computes; the tile's first vector (`sw`)
/// switches to the shadow as it passes.
fn pe_ws(p: &SystolicParams, mul: Option<&Module>) -> Result<Module, RtlError> {
    let (ab, bb, l, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.lanes, p.acc_bits);
    let mut m = ModuleBuilder::new("gpurtl_systolic_pe_ws");
    m.doc("Weight-stationary processing element of gpurtl_systolic (seed 004 §331).");
    m.doc(format!(
        "psum_o = psum_i + sum over {l} lane(s) of a*w ({} x {}), {} register stage(s); gated lanes do not multiply.",
        ElemType::NAMES[p.a_type as usize],
        ElemType::NAMES[p.b_type as usize],
        p.pipeline + 1
    ));
    let clk = m.clock("clk_i");
    let _rst = m.reset("rst_i");
    let a_i = m.input("a_i", l * ab, "A lanes from the left");
    let sw_i = m.input("sw_i", 1, "the tile's first vector: use and keep the shadow weights");
    let w_i = m.input("w_i", l * bb, "weight bus (this column's lanes)");
    let w_load_i = m.input("w_load_i", 1, "write the shadow weights from the bus");
    let psum_i = m.input("psum_i", acc_w, "partial sum from above");
    let a_o = m.output("a_o", l * ab, "A lanes to the right");
    let sw_o = m.output("sw_o", 1, "sw to the right");
    let psum_o = m.output("psum_o", acc_w, "partial sum downwards");
    let shadow = m.pipe("w_shadow_q", &w_i, &w_load_i);
    let active = m.pipe("w_active_q", &shadow, &sw_i);
    let w_use = m.let_("w_use", &sw_i.mux(&shadow, &active));
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let sw_q = m.reg("sw_q", 1, 0);
    m.next(&sw_q, &sw_i, None);
    m.assign(&a_o, &a_q);
    m.assign(&sw_o, &sw_q);
    let (mut mac_a, mut mac_w, _) = gate_lanes(&mut m, &a_i, &w_use, None, p);
    // pipeline >= 2: the gated operands are registered, so the multiplier
    // sits alone between two registers.
    let sum = if let Some(mm) = mul {
        dsp_dot(&mut m, mm, &clk, &mac_a, &mac_w, p)
    } else {
        if p.pipeline >= 2 {
            mac_a = m.pipe("mac_a_q", &mac_a, &Expr::bit(true));
            mac_w = m.pipe("mac_w_q", &mac_w, &Expr::bit(true));
        }
        let sum = if p.pipeline >= 3 { split_dot(&mut m, &mac_a, &mac_w, p) } else { dot(&mut m, &mac_a, &mac_w, p) };
        if p.pipeline >= 1 {
            m.pipe("sum_q", &sum, &Expr::bit(true))
        } else {
            sum
        }
    };
    // psum_i arrives `pipeline` cycles after a_i, with the product sum.
    let psum = m.pipe("psum_q", &psum_i.add(&sum), &Expr::bit(true));
    m.assign(&psum_o, &psum);
    m.finish()
}

/// The weight-stationary grid (docs/systolic.md, "Weight-stationary").
fn build_ws(p: &SystolicParams) -> Result<Design, RtlError> {
    let (r, c, l) = (p.rows, p.cols, p.lanes);
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let (slot, ch) = (p.slot_bits(), p.channel_bits);
    let row_w = l * ab;
    let mul = dsp_mul(p)?;
    let pe_mod = pe_ws(p, mul.as_ref())?;
    let mut b = grid_builder(p, "weight-stationary", &format!("{acc_w}-bit partial sums"));
    b.doc(format!(
        "PE gating {}. A tile is {r} weight rows, then A vectors; one output row per vector. Behaviour and timing: docs/systolic.md.",
        if p.gating { "on" } else { "off" }
    ));
    let clk = b.clock("clk_i");
    let rst = b.reset("rst_i");
    let w_valid = b.input("w_valid_i", 1, "a weight row is offered");
    let w_ready = b.output("w_ready_o", 1, "the weight row is taken");
    let w_in = b.input("w_i", c * ch, "weights of the next PE row: column j at channel j; lane slots of channel_bits/lanes");
    let a_valid = b.input("a_valid_i", 1, "an A vector is offered");
    let a_ready = b.output("a_ready_o", 1, "the A vector is taken");
    let a_in = b.input("a_i", r * ch, "A vector: PE row i at channel i; lane slots of channel_bits/lanes");
    let a_last = b.input("a_last_i", 1, "the vector ends the tile");
    let out_valid = b.output("out_valid_o", 1, "a result row is offered");
    let out_ready = b.input("out_ready_i", 1, "the row is taken");
    let out_last = b.output("out_last_o", 1, "the row is the tile's last");
    let out_c = b.output("out_c_o", c * acc_w, "the row's sums plus out_c0_i, column j at j*acc_bits");
    let out_c0 = b.input("out_c0_i", c * acc_w, "accumulator values for the offered row (C0 or earlier K blocks)");
    let stat_useful = b.output("stat_useful_o", STAT_BITS, "useful multiply-accumulates since reset");
    let stat_gated = b.output("stat_gated_o", STAT_BITS, "gated products since reset");
    if slot > ab.max(bb) || slot > ab.min(bb) {
        b.waive_unused(&a_in, "slot bits above the element type are not used");
        b.waive_unused(&w_in, "slot bits above the element type are not used");
    }
    let lanes_of = |x: &Expr, n: u32, eb: u32| -> Vec<Expr> {
        (0..n)
            .map(|i| Expr::cat_lanes(&(0..l).map(|ln| x.part(i * ch + ln * slot, eb)).collect::<Vec<_>>()))
            .collect()
    };
    let w_cols = lanes_of(&w_in, c, bb);
    let a_rows = Expr::cat_lanes(&lanes_of(&a_in, r, ab));

    // ---- weights: shadow rows written in order, R + C - 1 cycles apart from a switch ----
    let wcnt = b.reg("w_count_q", bits_for(r as u64), 0);
    let wblock = b.reg("w_block_q", bits_for((r + c - 1) as u64), 0);
    b.assign(&w_ready, &wcnt.lt(&Expr::lit(wcnt.width(), r as u64)).and(&wblock.eq_lit(0)));
    let w_fire = b.let_("w_fire", &w_valid.and(&w_ready));
    let w_load: Vec<Expr> =
        (0..r).map(|i| b.let_(&format!("w_load_row{i}"), &w_fire.and(&wcnt.eq_lit(i as u64)))).collect();
    let shadow_full = b.let_("shadow_full", &wcnt.eq_lit(r as u64));

    // ---- A input register and issue (a credit pipeline to the output FIFO) ----
    let aq_valid = b.reg("a_valid_q", 1, 0);
    let open = b.reg("tile_open_q", 1, 0);
    let stages = (r + c + p.pipeline) as usize;
    let want = b.let_("issue_want", &aq_valid.and(&open.or(&shadow_full)));
    let ctl = credit_begin(&mut b, stages, &want);
    let issue = b.let_("issue", &ctl.accept);
    let switch = b.let_("issue_switch", &issue.and(&open.not()));
    b.assign(&a_ready, &aq_valid.not().or(&issue));
    let a_fire = b.let_("a_fire", &a_valid.and(&a_ready));
    let aq_a = b.pipe("a_q", &a_rows, &a_fire);
    let aq_last = b.pipe("a_last_q", &a_last, &a_fire);
    b.next(&aq_valid, &a_fire.or(&aq_valid.and(&issue.not())), None);
    b.next(&open, &aq_last.not(), Some(&issue));
    let one = Expr::lit(wcnt.width(), 1);
    b.next(&wcnt, &switch.mux(&Expr::zero(wcnt.width()), &wcnt.add(&one)), Some(&switch.or(&w_fire)));
    let bw = wblock.width();
    b.next(
        &wblock,
        &switch.mux(&Expr::lit(bw, (r + c - 1) as u64), &wblock.sub(&Expr::lit(bw, 1))),
        Some(&switch.or(&wblock.eq_lit(0).not())),
    );

    // ---- counters: non-zero weights per (PE row, lane), shadow and active ----
    let cw = bits_for(c as u64);
    let mut terms = Vec::new();
    for i in 0..r {
        for lane in 0..l {
            let nzw: Vec<Expr> = (0..c).map(|j| w_cols[j as usize].part(lane * bb, bb).any()).collect();
            let sh = b.pipe(&format!("nzw_shadow_r{i}_l{lane}_q"), &popcount(&nzw, cw), &w_load[i as usize]);
            let act = b.pipe(&format!("nzw_active_r{i}_l{lane}_q"), &sh, &switch);
            let cnt = switch.mux(&sh, &act);
            let nza = aq_a.part(i * row_w + lane * ab, ab).any();
            terms.push(b.pipe(&format!("useful_r{i}_l{lane}_q"), &cnt.and(&nza.repl(cw)), &Expr::bit(true)));
        }
    }
    let stat_v1 = b.reg("stat_valid1_q", 1, 0);
    b.next(&stat_v1, &issue, None);
    let useful_sum = b.let_("useful_sum", &sum_tree(&terms, p.macs_bits()));
    mac_counters(&mut b, p, &useful_sum, &stat_v1, &stat_useful, &stat_gated);

    // ---- issue register and skew: row i delayed i ----
    let iss_a = b.pipe("issue_a_q", &issue.repl(r * row_w).and(&aq_a), &Expr::bit(true));
    let iss_sw = b.reg("issue_switch_q", 1, 0);
    b.next(&iss_sw, &switch, None);
    let mut west = Vec::new();
    for i in 0..r {
        let (mut a, mut sw) = (iss_a.part(i * row_w, row_w), iss_sw.clone());
        for d in 0..i {
            a = b.pipe(&format!("skew_a{i}_{d}_q"), &a, &Expr::bit(true));
            let q = b.reg(&format!("skew_sw{i}_{d}_q"), 1, 0);
            b.next(&q, &sw, None);
            sw = q;
        }
        west.push((a, sw));
    }

    // ---- the grid ----
    let mut north: Vec<Expr> = (0..c).map(|_| Expr::zero(acc_w)).collect();
    for i in 0..r {
        let (mut a, mut sw) = west[i as usize].clone();
        for j in 0..c {
            let n = format!("pe_{i}_{j}");
            let (a_o, sw_o, ps_o) =
                (b.wire(&format!("{n}_a"), row_w), b.wire(&format!("{n}_sw"), 1), b.wire(&format!("{n}_psum"), acc_w));
            b.instance(
                &pe_mod,
                &format!("u_{n}"),
                &[
                    ("clk_i", clk.clone()),
                    ("rst_i", rst.clone()),
                    ("a_i", a.clone()),
                    ("sw_i", sw.clone()),
                    ("w_i", w_cols[j as usize].clone()),
                    ("w_load_i", w_load[i as usize].clone()),
                    ("psum_i", north[j as usize].clone()),
                    ("a_o", a_o.clone()),
                    ("sw_o", sw_o.clone()),
                    ("psum_o", ps_o.clone()),
                ],
            );
            if j + 1 == c {
                for w in [&a_o, &sw_o] {
                    b.waive_unused(w, "leaves the grid at the east edge");
                }
            }
            (a, sw) = (a_o, sw_o);
            north[j as usize] = ps_o;
        }
    }

    // ---- deskew (column j delayed C-1-j), the tile's last flag, output FIFO ----
    let mut row = Vec::new();
    for j in 0..c {
        let mut v = north[j as usize].clone();
        for d in 0..(c - 1 - j) {
            v = b.pipe(&format!("deskew_c{j}_{d}_q"), &v, &Expr::bit(true));
        }
        row.push(v);
    }
    let mut last = issue.and(&aq_last);
    for d in 0..stages {
        last = b.pipe(&format!("last_d{d}_q"), &last, &Expr::bit(true));
    }
    let (valid, outs) = credit_end(&mut b, &ctl, &[("c", Expr::cat_lanes(&row)), ("last", last)], &out_ready);
    let sums: Vec<Expr> =
        (0..c).map(|j| outs[0].part(j * acc_w, acc_w).add(&out_c0.part(j * acc_w, acc_w))).collect();
    b.assign(&out_c, &Expr::cat_lanes(&sums));
    b.assign(&out_last, &outs[1]);
    b.assign(&out_valid, &valid);
    let top = b.finish()?;
    Ok(Design { top: top.name.clone(), modules: mul.into_iter().chain([pe_mod, top]).collect() })
}

/// The useful-MAC and gated-product counters, from the issued item's useful
/// MAC count (`useful`, `macs_bits` wide, valid when `valid`). Each stage is
/// registered: the count, then the useful counter and the gated increment
/// (all lanes minus the useful ones), then the gated counter; and each
/// counter's upper half follows a cycle after its lower half (see
/// [`stat_counter`]). So the useful counter is final three cycles after
/// `valid`, the gated counter four.
fn mac_counters(b: &mut ModuleBuilder, p: &SystolicParams, useful: &Expr, valid: &Expr, useful_port: &Expr, gated_port: &Expr) {
    let useful_now = b.pipe("useful_now_q", useful, &Expr::bit(true));
    let v2 = b.reg("stat_valid2_q", 1, 0);
    b.next(&v2, valid, None);
    let st_useful = stat_counter(b, "useful_count", &useful_now, &v2);
    b.assign(useful_port, &st_useful);
    if p.gating {
        let all = Expr::lit(p.macs_bits(), (p.rows * p.cols * p.lanes) as u64);
        let gated_now = b.pipe("gated_now_q", &all.sub(&useful_now), &Expr::bit(true));
        let v3 = b.reg("stat_valid3_q", 1, 0);
        b.next(&v3, &v2, None);
        let st_gated = stat_counter(b, "gated_count", &gated_now, &v3);
        b.assign(gated_port, &st_gated);
    } else {
        b.assign(gated_port, &Expr::zero(STAT_BITS));
    }
}

/// A `STAT_BITS` statistics counter in two halves with a registered carry
/// ([`split_counter`]): exact one cycle after the last add.
pub fn stat_counter(b: &mut ModuleBuilder, name: &str, inc: &Expr, en: &Expr) -> Expr {
    split_counter(b, name, STAT_BITS, inc, en)
}

/// Operand width of the ECP5 DSP multiplier.
const DSP_IN: u32 = 18;

/// Widths of the multiplier module's signed operands: an unsigned element
/// gets a zero sign bit.
fn mul_widths(p: &SystolicParams) -> (u32, u32) {
    let w = |t: ElemType| t.bits() + u32::from(!t.signed());
    (w(p.a_type), w(p.b_type))
}

/// With `dsp = ecp5` (or `auto` at `pipeline = 2`): the multiplier module,
/// one per PE lane. Its generic body registers both operands and the signed
/// product at their own widths (what simulation, lint and the other flows
/// see, so a generic or ASIC flow gets the small multiplier); its ECP5 body
/// sign-extends the operands to the DSP's 18 bits and is a MULT18X18D whose
/// input and output registers are those two stages, which yosys does not
/// infer.
fn dsp_mul(p: &SystolicParams) -> Result<Option<Module>, RtlError> {
    if !p.dsp_module() {
        return Ok(None);
    }
    let (wa, wb) = mul_widths(p);
    let wp = wa + wb;
    let name = "gpurtl_systolic_mul";
    let mut m = ModuleBuilder::new(name);
    m.doc(format!("Signed {wa} x {wb} multiplier with registered operands and product (two cycles)."));
    m.doc(format!("`gpurtl synth --target ecp5` reads {name}.ecp5.v instead: a MULT18X18D with those registers inside."));
    let _clk = m.clock("clk_i");
    let a_i = m.input("a_i", wa, "operand A, signed");
    let b_i = m.input("b_i", wb, "operand B, signed");
    let p_o = m.output("p_o", wp, "A x B of two cycles before, signed");
    let a_q = m.pipe("a_q", &a_i, &Expr::bit(true));
    let b_q = m.pipe("b_q", &b_i, &Expr::bit(true));
    let prod = m.let_("prod", &a_q.smul(&b_q));
    let p_q = m.pipe("p_q", &prod, &Expr::bit(true));
    m.assign(&p_o, &p_q);
    let pins = |pin: &str, sig: &str, n: u32| -> String {
        (0..n).map(|i| format!(".{pin}{i}({sig}[{i}])")).collect::<Vec<_>>().join(", ")
    };
    let ecp5 = format!(
        "// ECP5 body of {name}: one MULT18X18D with its operand registers\n\
         // (REG_INPUTA_CLK, REG_INPUTB_CLK) and product register (REG_OUTPUT_CLK)\n\
         // on CLK0, so both stages sit inside the DSP. Same ports and timing as\n\
         // {name}.v, which is what simulation uses (there is no open MULT18X18D\n\
         // simulation model); this file is checked by synthesis only.\n\
         `default_nettype none\n\
         module {name} (\n  input  wire {:7} clk_i,\n  input  wire {:7} a_i,\n  input  wire {:7} b_i,\n  output wire {:7} p_o\n);\n\
         \x20 // The operands, sign-extended to the DSP's 18 bits.\n\
         \x20 wire [17:0] a18 = {{{{{ea}{{a_i[{ha}]}}}}, a_i}};\n\
         \x20 wire [17:0] b18 = {{{{{eb}{{b_i[{hb}]}}}}, b_i}};\n\
         \x20 wire [35:0] p36;\n\
         \x20 assign p_o = p36[{hp}:0];\n\
         \x20 MULT18X18D #(\n    .REG_INPUTA_CLK(\"CLK0\"),\n    .REG_INPUTB_CLK(\"CLK0\"),\n    .REG_OUTPUT_CLK(\"CLK0\"),\n    .GSR(\"DISABLED\")\n  ) u_mult18 (\n\
         \x20   {},\n    {},\n    .SIGNEDA(1'b1), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),\n\
         \x20   .CLK0(clk_i), .CE0(1'b1), .RST0(1'b0),\n    {}\n  );\nendmodule\n`default_nettype wire\n",
        "",
        format!("[{}:0]", wa - 1),
        format!("[{}:0]", wb - 1),
        format!("[{}:0]", wp - 1),
        pins("A", "a18", DSP_IN),
        pins("B", "b18", DSP_IN),
        pins("P", "p36", 2 * DSP_IN),
        ha = wa - 1,
        hb = wb - 1,
        hp = wp - 1,
        ea = DSP_IN - wa,
        eb = DSP_IN - wb,
    );
    m.alternative("ecp5", ecp5);
    Ok(Some(m.finish()?))
}

/// The dot product of the gated lanes through one [`dsp_mul`] per lane: the
/// product, extended to `acc_bits`, comes out two cycles after the operands.
fn dsp_dot(m: &mut ModuleBuilder, mul: &Module, clk: &Expr, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, pw, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.product_bits(), p.acc_bits);
    let (wa, wb) = mul_widths(p);
    let ext = |e: Expr, signed: bool, w: u32| if signed { e.sext(w) } else { e.zext(w) };
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let x = ext(a.part(lane * ab, ab), p.a_type.signed(), wa);
        let y = ext(b.part(lane * bb, bb), p.b_type.signed(), wb);
        let prod = m.wire(&format!("dsp_p_l{lane}"), wa + wb);
        m.instance(mul, &format!("u_mul_l{lane}"), &[("clk_i", clk.clone()), ("a_i", x), ("b_i", y), ("p_o", prod.clone())]);
        let v = if wa + wb > pw {
            m.waive_unused(&prod, "the top bits of the product of the sign-extended operands repeat its sign");
            prod.part(0, pw)
        } else {
            prod
        };
        terms.push(if p.signed() { v.sext(acc_w) } else { v.zext(acc_w) });
    }
    let sum = terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t));
    m.let_("prod_sum", &sum)
}

/// The dot product with each multiply split in two (`pipeline = 3`, for
/// FPGAs without multipliers): A times the low and the high half of B, each
/// half product registered, then `hi << half + lo` summed over the lanes.
fn split_dot(m: &mut ModuleBuilder, a: &Expr, b: &Expr, p: &SystolicParams) -> Expr {
    let (ab, bb, acc_w) = (p.a_type.bits(), p.b_type.bits(), p.acc_bits);
    let (a_s, b_s) = (p.a_type.signed(), p.b_type.signed());
    let h = bb / 2;
    // x (signed if `xs`) times y (signed if `ys`), extended to acc_bits.
    let product = |x: &Expr, xs: bool, y: &Expr, ys: bool| -> (Expr, bool) {
        let (xw, yw) = (x.width(), y.width());
        match (xs, ys) {
            (true, true) => (x.smul(y), true),
            (true, false) => (x.smul(&y.zext(yw + 1)), true),
            (false, true) => (x.zext(xw + 1).smul(y), true),
            (false, false) => (x.zext(xw + yw).mul(&y.zext(xw + yw)), false),
        }
    };
    let mut terms = Vec::new();
    for lane in 0..p.lanes {
        let (x, y) = (a.part(lane * ab, ab), b.part(lane * bb, bb));
        let (lo, lo_s) = product(&x, a_s, &y.part(0, h), false);
        let (hi, hi_s) = product(&x, a_s, &y.part(h, bb - h), b_s);
        let lo = m.pipe(&format!("pp_lo_l{lane}_q"), &lo, &Expr::bit(true));
        let hi = m.pipe(&format!("pp_hi_l{lane}_q"), &hi, &Expr::bit(true));
        let ext = |e: &Expr, signed: bool| if signed { e.sext(acc_w) } else { e.zext(acc_w) };
        let hi_shifted = Expr::cat_lanes(&[Expr::zero(h), ext(&hi, hi_s).part(0, acc_w - h)]);
        terms.push(m.let_(&format!("prod_l{lane}"), &hi_shifted.add(&ext(&lo, lo_s))));
    }
    terms.iter().skip(1).fold(terms[0].clone(), |s, t| s.add(t))
}

/// The top module's builder with its first two doc lines: what the block is,
/// and the grid (`dataflow` PEs, lanes, types, then `tail`).
fn grid_builder(p: &SystolicParams, dataflow: &str, tail: &str) -> ModuleBuilder {
    let mut b = ModuleBuilder::new(&p.top_name());
    b.doc("Systolic PE grid with zero skipping (gpurtl block `systolic`; seed 004 §318-343).");
    b.doc(format!(
        "{} x {} {dataflow} PEs, {} lane(s), {} x {}, {tail}.",
        p.rows,
        p.cols,
        p.lanes,
        ElemType::NAMES[p.a_type as usize],
        ElemType::NAMES[p.b_type as usize]
    ));
    b
}
