//! The configuration registers (docs/texture.md, Configuration): the
//! descriptor, the kernel size and weights, written only while the unit is
//! idle, and the count of ops in the unit that says when it is.

use super::DIV_BITS_PER_STAGE;
use crate::rtl::{bits_for, Expr, ModuleBuilder, Stream};
use gpurtl_params::texture::{cfg, AddressMode, Format, TextureParams};

/// The configuration as the rest of the unit reads it.
pub(super) struct Config {
    /// Ops in the unit (counted in `build`, once the op and result
    /// handshakes are known).
    pub inflight: Expr,
    pub levels_m1: Expr,
    pub kw_m1: Expr,
    pub kh_m1: Expr,
    /// Per level: base, width - 1, height - 1.
    pub bases: Vec<Expr>,
    pub wm1s: Vec<Expr>,
    pub hm1s: Vec<Expr>,
    /// Row j holds w(0..MK, j).
    pub wrows: Vec<Vec<Expr>>,
    /// Kernel width and height (1..=MK).
    pub kw: Expr,
    pub kh: Expr,
    pub is_rgba: Expr,
    pub is_r16: Expr,
    pub mirror_x: Expr,
    pub mirror_y: Expr,
    pub clamp_x: Expr,
    pub clamp_y: Expr,
}

/// The registers behind the `cfg` port (`cfg_s`, its `addr` and `data`);
/// `idle_o` is driven here.
pub(super) fn build(b: &mut ModuleBuilder, p: &TextureParams, cfg_s: &Stream, cfg_addr: &Expr, cfg_data: &Expr, idle_o: &Expr) -> Config {
    let ls = p.size_log();
    let cw = p.coord_bits();
    let lb = p.level_bits();
    let aw = p.addr_bits;
    let nl = p.max_levels();
    let mk = p.max_kernel;
    let kb = bits_for(mk as u64); // kernel sizes 1..=MK
    let wb = p.weight_bits;
    let depth = p.max_outstanding;

    // Ops in the unit: at most the PD prep stages, the sequencer, one per
    // tag queue entry, S1, S2 and the result register.
    let most_inflight = (1 + cw.div_ceil(DIV_BITS_PER_STAGE)) as u64 + depth as u64 + 4;
    let inflight = b.reg("inflight_q", bits_for(most_inflight), 0);
    let idle = b.let_("idle", &inflight.eq_lit(0));
    b.assign(&cfg_s.ready, &idle);
    b.assign(idle_o, &idle);
    let cfg_we = b.let_("cfg_we", &cfg_s.valid.and(&idle));
    let we_at = |b: &mut ModuleBuilder, a: u64| b.let_(&format!("cfg_we_{a:03x}"), &cfg_we.and(&cfg_addr.eq_lit(a)));
    // Configuration registers reset to zero.
    let cfg_reg = |b: &mut ModuleBuilder, name: &str, d: &Expr, we: &Expr| {
        let r = b.reg(name, d.width(), 0);
        b.next(&r, d, Some(we));
        r
    };
    let we_ctl = we_at(b, cfg::CONTROL);
    let fmt = cfg_reg(b, "format_q", &cfg_data.slice(1, 0), &we_ctl);
    let mode_x = cfg_reg(b, "mode_x_q", &cfg_data.slice(3, 2), &we_ctl);
    let mode_y = cfg_reg(b, "mode_y_q", &cfg_data.slice(5, 4), &we_ctl);
    let levels_m1 = cfg_reg(b, "levels_m1_q", &cfg_data.slice(8 + lb - 1, 8), &we_ctl);
    let we_k = we_at(b, cfg::KERNEL);
    let kw_m1 = cfg_reg(b, "kernel_w_m1_q", &cfg_data.slice(kb - 1, 0), &we_k);
    let kh_m1 = cfg_reg(b, "kernel_h_m1_q", &cfg_data.slice(8 + kb - 1, 8), &we_k);
    let mut bases = Vec::new();
    let mut wm1s = Vec::new();
    let mut hm1s = Vec::new();
    for l in 0..nl {
        let we_b = we_at(b, cfg::level_base(l));
        let we_s = we_at(b, cfg::level_size(l));
        bases.push(cfg_reg(b, &format!("level{l}_base_q"), &cfg_data.slice(aw - 1, 0), &we_b));
        wm1s.push(cfg_reg(b, &format!("level{l}_w_m1_q"), &cfg_data.slice(ls - 1, 0), &we_s));
        hm1s.push(cfg_reg(b, &format!("level{l}_h_m1_q"), &cfg_data.slice(16 + ls - 1, 16), &we_s));
    }
    // Weights, row by row (row j holds w(0..MK, j)).
    let mut wrows: Vec<Vec<Expr>> = Vec::new();
    for j in 0..mk {
        let mut row = Vec::new();
        for i in 0..mk {
            let we = we_at(b, cfg::weight(i, j));
            row.push(cfg_reg(b, &format!("w_{i}_{j}_q"), &cfg_data.slice(wb - 1, 0), &we));
        }
        wrows.push(row);
    }
    let kw = b.let_("kernel_w", &kw_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)));
    let kh = b.let_("kernel_h", &kh_m1.zext(kb + 1).add(&Expr::lit(kb + 1, 1)));
    Config {
        inflight,
        levels_m1,
        kw_m1,
        kh_m1,
        bases,
        wm1s,
        hm1s,
        wrows,
        kw,
        kh,
        is_rgba: fmt.bit_at(1),
        is_r16: fmt.eq_lit(Format::R16.code()),
        mirror_x: mode_x.bit_at(1),
        mirror_y: mode_y.bit_at(1),
        clamp_x: mode_x.eq_lit(AddressMode::Clamp.code()),
        clamp_y: mode_y.eq_lit(AddressMode::Clamp.code()),
    }
}
