//! Wide counters shared by the blocks.

use super::{Expr, ModuleBuilder};

/// A `width`-bit counter that adds `inc` (at most half as wide) when `en`, in
/// two halves: the lower half adds and registers its carry, and the upper
/// half adds that carry the next cycle, so no carry chain runs the whole
/// width in one cycle. The value is exact one cycle after the last add.
/// Registers `<name>_lo_q`, `<name>_carry_q`, `<name>_hi_q`; the property
/// `prop_<name>_counts` (under `` `ifdef FORMAL ``) states what it counts.
pub fn split_counter(b: &mut ModuleBuilder, name: &str, width: u32, inc: &Expr, en: &Expr) -> Expr {
    let h = width / 2;
    let lo = b.reg(&format!("{name}_lo_q"), h, 0);
    let carry = b.reg(&format!("{name}_carry_q"), 1, 0);
    let hi = b.reg(&format!("{name}_hi_q"), width - h, 0);
    let sum = b.let_(&format!("{name}_lo_sum"), &lo.zext(h + 1).add(&inc.zext(h + 1)));
    b.next(&lo, &sum.part(0, h), Some(en));
    b.next(&carry, &en.and(&sum.bit_at(h)), None);
    b.next(&hi, &hi.add(&carry.zext(width - h)), Some(&carry));
    // What it counts: a reference count of the adds since the reset (a
    // register for the properties only) is the value plus the carry not yet
    // added to the upper half, so the value is exact once the carry is in.
    let total = b.formal_reg(&format!("{name}_ref"), width);
    b.formal_next_reset(&total, &en.mux(&total.add(&inc.zext(width)), &total), 0);
    let value = Expr::cat(&[hi.clone(), lo.clone()]);
    let pending = Expr::cat(&[carry.zext(width - h), Expr::zero(h)]);
    b.assert_always(
        &format!("{name}_counts"),
        &value.add(&pending).eq(&total),
        &format!("{name}: the value plus the pending carry is the sum of the adds since the reset"),
    );
    Expr::cat(&[hi, lo])
}
