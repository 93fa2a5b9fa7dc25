//! Wide counters shared by the blocks.

use super::{Expr, ModuleBuilder};

/// A `width`-bit counter that adds `inc` (at most half as wide) when `en`, in
/// two halves: the lower half adds and registers its carry, and the upper
/// half adds that carry the next cycle, so no carry chain runs the whole
/// width in one cycle. The value is exact one cycle after the last add.
/// Registers `<name>_lo_q`, `<name>_carry_q`, `<name>_hi_q`.
pub fn split_counter(b: &mut ModuleBuilder, name: &str, width: u32, inc: &Expr, en: &Expr) -> Expr {
    let h = width / 2;
    let lo = b.reg(&format!("{name}_lo_q"), h, 0);
    let carry = b.reg(&format!("{name}_carry_q"), 1, 0);
    let hi = b.reg(&format!("{name}_hi_q"), width - h, 0);
    let sum = b.let_(&format!("{name}_lo_sum"), &lo.zext(h + 1).add(&inc.zext(h + 1)));
    b.next(&lo, &sum.part(0, h), Some(en));
    b.next(&carry, &en.and(&sum.bit_at(h)), None);
    b.next(&hi, &hi.add(&carry.zext(width - h)), Some(&carry));
    Expr::cat(&[hi, lo])
}
