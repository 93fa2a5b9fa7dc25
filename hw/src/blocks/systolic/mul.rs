//! The PE multiplier module (`dsp = ecp5`, or `auto` at `pipeline = 2`) and
//! its hand-mapped ECP5 body.

use crate::rtl::{Expr, Module, ModuleBuilder, RtlError};
use askama::Template;
use gpurtl_params::systolic::{ElemType, SystolicParams};

/// Operand width of the ECP5 DSP multiplier.
const DSP_IN: u32 = 18;

/// The ECP5 body: a MULT18X18D holding the operand and product registers
/// (`hw/templates/systolic_mul.ecp5.v`).
#[derive(Template)]
#[template(path = "systolic_mul.ecp5.v", escape = "none")]
struct Ecp5Mul<'a> {
    name: &'a str,
    dsp_in: u32,
    wa: u32,
    wb: u32,
    wp: u32,
    a_range: &'a str,
    b_range: &'a str,
    p_range: &'a str,
}

/// Widths of the multiplier module's signed operands: an unsigned element
/// gets a zero sign bit; a floating-point element's operand is its
/// significand (the hidden bit and the mantissa), with a zero sign bit.
pub(super) fn mul_widths(p: &SystolicParams) -> (u32, u32) {
    let w = |t: ElemType| if t.is_float() { t.fp_fields().1 + 2 } else { t.bits() + u32::from(!t.signed()) };
    (w(p.a_type), w(p.b_type))
}

/// With `dsp = ecp5` (or `auto` at `pipeline = 2`; floating point: where
/// [`SystolicParams::dsp_module`] says): the multiplier module, one per PE
/// lane, for floating point the significand product's. Its generic body registers both operands and the signed
/// product at their own widths (what simulation, lint and the other flows
/// see, so a generic or ASIC flow gets the small multiplier); its ECP5 body
/// sign-extends the operands to the DSP's 18 bits and is a MULT18X18D whose
/// input and output registers are those two stages, which yosys does not
/// infer.
pub(super) fn dsp_mul(p: &SystolicParams) -> Result<Option<Module>, RtlError> {
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
    let (a_range, b_range, p_range) = (format!("[{}:0]", wa - 1), format!("[{}:0]", wb - 1), format!("[{}:0]", wp - 1));
    m.alternative("ecp5", move |name: &str| {
        let body = Ecp5Mul { name, dsp_in: DSP_IN, wa, wb, wp, a_range: &a_range, b_range: &b_range, p_range: &p_range }
            .render()
            .expect("the template renders from plain values");
        // askama drops the template's final newline.
        body + "\n"
    });
    Ok(Some(m.finish()?))
}

