//! The sequencer: one op at a time, one tile at a time, one pass at a
//! time. It keeps the current tile's columns and rows wrapped by the
//! address mode and steps them two texels per tile, the rows' word
//! addresses with them; a pass is at most one texel per bank, and issues
//! into the request registers and the tag queue when they have room.

use super::config::Config;
use super::fit;
use super::memory::Memory;
use super::prep::{row_offset, Fields};
use super::walk::{step1, step2, AxisRule, Coord};
use crate::rtl::{bits_for, Expr, ModuleBuilder, Stream};
use gpurtl_params::texture::{OpKind, TextureParams};

/// The sequencer's registers and the current tile's texels.
pub(super) struct Sequencer {
    pub valid: Expr,
    pub kind: Expr,
    /// The op's fractions (bilinear weights) and channel (with
    /// `all_channels`, bit 2: a conv_quad's all-channel flag).
    pub fa: Expr,
    pub fb: Expr,
    pub chan: Expr,
    rule_x: AxisRule,
    rule_y: AxisRule,
    base: Expr,
    row_one: Expr,
    row_step: Expr,
    row_top1: Expr,
    row_top2: Expr,
    /// The current tile's column and row among the op's tiles.
    pub ti: Expr,
    pub tj: Expr,
    tile_x: Vec<Coord>,
    first_x: Vec<Coord>,
    tile_y: Vec<Coord>,
    row_addr: Vec<Expr>,
    todo: Expr,
    pub tile_mask: Expr,
    conv: Expr,
    txm1: Expr,
    tym1: Expr,
    tiles_x_m1: Expr,
    tiles_y_m1: Expr,
    word: Vec<Expr>,
    bank: Vec<Expr>,
    in_pass: Vec<Expr>,
    pass: Expr,
}

/// This cycle's pass and what it does.
pub(super) struct Pass {
    /// Per bank: whether the pass reads it, which texel of the tile it
    /// brings (2 bits), and its word address.
    pub used: Vec<Expr>,
    pub slot: Vec<Expr>,
    pub req_addr_d: Vec<Expr>,
    pub issue: Expr,
    todo_left: Expr,
    /// The pass empties its tile; the tile is the op's last.
    pub tile_done: Expr,
    last_col: Expr,
    pub last_tile: Expr,
    op_done: Expr,
    /// The sequencer takes an op this cycle (empty, or its op is done).
    pub free: Expr,
}

impl Sequencer {
    /// The registers, and the bank and word of each texel of the current
    /// tile with the texels of its next pass.
    pub fn build(b: &mut ModuleBuilder, p: &TextureParams, c: &Config) -> Sequencer {
        let ls = p.size_log();
        let f = p.frac_bits;
        let cw = p.coord_bits();
        let aw = p.addr_bits;
        let kb = bits_for(p.max_kernel as u64);
        let tb = p.tile_bits();
        let nb = p.banks;
        let (bx, by) = (u32::from(nb >= 2), u32::from(nb == 4));
        // Tiles of the op, minus one per axis: ceil((K + 1) / 2) - 1 = K >> 1 with K = size.
        let tiles_x_m1 = c.kw.slice(kb, 1).slice(tb - 1, 0);
        let tiles_y_m1 = c.kh.slice(kb, 1).slice(tb - 1, 0);
        let seq_valid = b.reg("seq_valid_q", 1, 0);
        let seq_kind = b.reg_noreset("seq_kind_q", 2);
        let seq_fa = b.reg_noreset("seq_frac_x_q", f);
        let seq_fb = b.reg_noreset("seq_frac_y_q", f);
        let seq_chan = b.reg_noreset("seq_channel_q", super::chan_bits(p));
        // The op's address rule on each axis, and the word addresses of its
        // edge rows: row 0 (the base) and row 1, rows S - 1 and S - 2.
        let rule_regs = |b: &mut ModuleBuilder, axis: &str, mirror: &Expr| AxisRule {
            clamp: b.reg_noreset(&format!("seq_clamp_{axis}_q"), 1),
            mirror: mirror.clone(),
            last: b.reg_noreset(&format!("seq_last_{axis}_q"), ls),
            last2: b.reg_noreset(&format!("seq_last2_{axis}_q"), cw),
        };
        let rule_x = rule_regs(b, "x", &c.mirror_x);
        let rule_y = rule_regs(b, "y", &c.mirror_y);
        let seq_base = b.reg_noreset("seq_base_q", aw);
        let seq_row_one = if by == 0 { b.reg_noreset("seq_row_one_q", aw) } else { seq_base.clone() };
        let seq_row_step = b.reg_noreset("seq_row_step_q", aw);
        let seq_row_top1 = b.reg_noreset("seq_row_top1_q", aw);
        let seq_row_top2 = b.reg_noreset("seq_row_top2_q", aw);
        let ti = b.reg_noreset("tile_i_q", tb);
        let tj = b.reg_noreset("tile_j_q", tb);
        // The current tile's columns and rows (coordinates after the address
        // mode), the first tile's columns (each tile row starts there again),
        // and the word address of each row's first texel.
        let coord_regs = |b: &mut ModuleBuilder, name: &str| Coord {
            at: b.reg_noreset(&format!("{name}_q"), ls),
            up: b.reg_noreset(&format!("{name}_up_q"), 1),
            raw: b.reg_noreset(&format!("{name}_raw_q"), cw),
        };
        let tile_x: Vec<Coord> = (0..2).map(|k| coord_regs(b, &format!("tile_x{k}"))).collect();
        let first_x: Vec<Coord> = (0..2).map(|k| coord_regs(b, &format!("first_x{k}"))).collect();
        let tile_y: Vec<Coord> = (0..2).map(|k| coord_regs(b, &format!("tile_y{k}"))).collect();
        let row_addr: Vec<Expr> = (0..2).map(|k| b.reg_noreset(&format!("row{k}_addr_q"), aw)).collect();
        let todo = b.reg_noreset("todo_q", 4);
        let tile_mask = b.reg_noreset("tile_mask_q", 4);
        let seq_conv = seq_kind.eq_lit(OpKind::ConvQuad.code());
        let seq_txm1 = seq_conv.mux(&tiles_x_m1, &Expr::zero(tb));
        let seq_tym1 = seq_conv.mux(&tiles_y_m1, &Expr::zero(tb));

        // The current tile's texels: bank and word of each, from its column
        // and row (texel k is column k & 1 of row k >> 1).
        let mut word = Vec::new();
        let mut bank = Vec::new();
        for k in 0..4 {
            let (x, r) = (&tile_x[k & 1].at, k >> 1);
            let y = &tile_y[r].at;
            let col = if ls > bx { fit(&x.slice(ls - 1, bx), aw) } else { Expr::zero(aw) };
            word.push(b.let_(&format!("word{k}"), &row_addr[r].add(&col)));
            let bk = match nb {
                1 => Expr::zero(1),
                2 => x.bit_at(0),
                _ => Expr::cat(&[y.bit_at(0), x.bit_at(0)]),
            };
            bank.push(b.let_(&format!("bank{k}"), &bk));
        }
        // The pass: per bank, the lowest-numbered texel of todo in that bank.
        let mut in_pass = Vec::new();
        for k in 0..4 {
            let mut e = todo.bit_at(k as u32);
            for j in 0..k {
                e = e.and(&todo.bit_at(j as u32).and(&bank[j].eq(&bank[k])).not());
            }
            in_pass.push(b.let_(&format!("in_pass{k}"), &e));
        }
        let pass = Expr::cat_lanes(&in_pass);
        Sequencer {
            valid: seq_valid,
            kind: seq_kind,
            fa: seq_fa,
            fb: seq_fb,
            chan: seq_chan,
            rule_x,
            rule_y,
            base: seq_base,
            row_one: seq_row_one,
            row_step: seq_row_step,
            row_top1: seq_row_top1,
            row_top2: seq_row_top2,
            ti,
            tj,
            tile_x,
            first_x,
            tile_y,
            row_addr,
            todo,
            tile_mask,
            conv: seq_conv,
            txm1: seq_txm1,
            tym1: seq_tym1,
            tiles_x_m1,
            tiles_y_m1,
            word,
            bank,
            in_pass,
            pass,
        }
    }

    /// The pass's banks and addresses, whether it issues (`mem`: a tag
    /// queue entry free and each of its banks' request register free; `req`:
    /// the banks' request ports), and whether the op is done.
    pub fn pass(&self, b: &mut ModuleBuilder, p: &TextureParams, mem: &Memory, req: &[Stream]) -> Pass {
        let Sequencer { valid: seq_valid, ti, tj, todo, txm1: seq_txm1, tym1: seq_tym1, word, bank, in_pass, pass, .. } = self;
        let Memory { tag_count, req_valid } = mem;
        let nb = p.banks;
        let depth = p.max_outstanding;
        let cntw = bits_for(depth as u64);
        let mut used = Vec::new();
        let mut slot = Vec::new();
        let mut req_addr_d = Vec::new();
        let mut bank_free = Vec::new();
        for k in 0..nb {
            let hit: Vec<Expr> = (0..4).map(|t| in_pass[t].and(&bank[t].eq_lit(k as u64))).collect();
            used.push(b.let_(&format!("pass_bank{k}"), &hit.iter().cloned().reduce(|a, c| a.or(&c)).unwrap_or(Expr::bit(false))));
            let oh = Expr::cat_lanes(&hit);
            slot.push(Expr::cat(&[oh.bit_at(2).or(&oh.bit_at(3)), oh.bit_at(1).or(&oh.bit_at(3))]));
            req_addr_d.push(crate::rtl::select_onehot(&oh, word));
            bank_free.push(req_valid[k as usize].not().or(&req[k as usize].ready));
        }
        let mut can = seq_valid.and(&tag_count.lt(&Expr::lit(cntw, depth as u64)));
        for k in 0..nb as usize {
            can = can.and(&used[k].not().or(&bank_free[k]));
        }
        let issue = b.let_("issue", &can);
        let todo_left = b.let_("todo_left", &todo.and(&pass.not()));
        let tile_done = b.let_("tile_done", &todo_left.eq_lit(0));
        let last_col = ti.eq(seq_txm1);
        let last_tile = b.let_("last_tile", &last_col.and(&tj.eq(seq_tym1)));
        let op_done = b.let_("op_done", &issue.and(&tile_done).and(&last_tile));
        // Free for the next op: empty, or its op is done this cycle.
        let free = b.let_("seq_free", &seq_valid.not().or(&op_done));
        Pass { used, slot, req_addr_d, issue, todo_left, tile_done, last_col, last_tile, op_done, free }
    }

    /// The next tile and the walk: the first tile from the last prep
    /// stage's registers (`pl`) when the sequencer loads (`seq_load`), else
    /// the next tile of the op in raster order after a pass that ends its
    /// tile.
    pub fn walk(&self, b: &mut ModuleBuilder, p: &TextureParams, c: &Config, ps: &Pass, pl: &Fields, seq_load: &Expr) {
        let Sequencer {
            valid: seq_valid,
            kind: seq_kind,
            fa: seq_fa,
            fb: seq_fb,
            chan: seq_chan,
            rule_x,
            rule_y,
            base: seq_base,
            row_one: seq_row_one,
            row_step: seq_row_step,
            row_top1: seq_row_top1,
            row_top2: seq_row_top2,
            ti,
            tj,
            tile_x,
            first_x,
            tile_y,
            row_addr,
            todo,
            tile_mask,
            conv: seq_conv,
            txm1: seq_txm1,
            tym1: seq_tym1,
            tiles_x_m1,
            tiles_y_m1,
            ..
        } = self;
        let Pass { issue, todo_left, tile_done, last_col, last_tile, op_done, .. } = ps;
        let aw = p.addr_bits;
        let tb = p.tile_bits();
        let by = u32::from(p.banks == 4);
        let pk = pl.get("kind");
        let kw_even = c.kw.bit_at(0).not();
        let kh_even = c.kh.bit_at(0).not();

        // The mask of tile (i, j) of an op: conv patches with an even kernel
        // size leave the last tile column / row half empty.
        let mask_of = |kind_conv: &Expr, kind_near: &Expr, i_last: &Expr, j_last: &Expr| -> Expr {
            let col1 = kind_conv.not().or(&kw_even.and(i_last).not());
            let row1 = kind_conv.not().or(&kh_even.and(j_last).not());
            let full = Expr::cat(&[col1.and(&row1), row1.clone(), col1, Expr::bit(true)]);
            kind_near.mux(&Expr::lit(4, 1), &full)
        };
        // Next tile (raster order).
        let ti_n = last_col.mux(&Expr::zero(tb), &ti.add(&Expr::lit(tb, 1)));
        let tj_n = last_col.mux(&tj.add(&Expr::lit(tb, 1)), tj);
        let seq_near = seq_kind.eq_lit(OpKind::Nearest.code());
        let todo_n = mask_of(seq_conv, &seq_near, &ti_n.eq(seq_txm1), &tj_n.eq(seq_tym1));
        let p_conv = pk.eq_lit(OpKind::ConvQuad.code());
        let p_near = pk.eq_lit(OpKind::Nearest.code());
        let todo_in = mask_of(&p_conv, &p_near, &tiles_x_m1.eq_lit(0), &tiles_y_m1.eq_lit(0));
        let next_tile = b.let_("next_tile", &issue.and(tile_done).and(&last_tile.not()));
        b.next(seq_valid, &seq_load.or(&seq_valid.and(&op_done.not())), None);
        let pitch = fit(&pl.get("pitch"), aw);
        let row_step = if by == 1 { pitch } else { pitch.add(&pitch) };
        let mut loads = vec![
            (seq_kind.clone(), pk.clone()),
            (seq_fa.clone(), pl.get("frac_x")),
            (seq_fb.clone(), pl.get("frac_y")),
            (seq_chan.clone(), pl.get("channel")),
            (seq_base.clone(), pl.get("base")),
            (seq_row_step.clone(), row_step),
            (seq_row_top1.clone(), pl.get("row_top1")),
            (seq_row_top2.clone(), pl.get("row_top2")),
        ];
        if by == 0 {
            loads.push((seq_row_one.clone(), pl.get("base_up")));
        }
        for (rule, axis) in [(&rule_x, "x"), (&rule_y, "y")] {
            loads.push((rule.clamp.clone(), pl.get(&format!("clamp_{axis}"))));
            loads.push((rule.last.clone(), pl.get(&format!("last_{axis}"))));
            loads.push((rule.last2.clone(), pl.get(&format!("last2_{axis}"))));
        }
        for (r, d) in &loads {
            b.next(r, d, Some(seq_load));
        }
        let tile_en = seq_load.or(&next_tile);
        b.next(ti, &seq_load.mux(&Expr::zero(tb), &ti_n), Some(&tile_en));
        b.next(tj, &seq_load.mux(&Expr::zero(tb), &tj_n), Some(&tile_en));

        // The first tile, from the last prep stage: column and row 0 as it
        // wrapped them, column and row 1 one texel on; row 0's word address by
        // the multiplier, row 1's the same, one row pair on or back.
        let prep_rule = |axis: &str, mirror: &Expr| AxisRule {
            clamp: pl.get(&format!("clamp_{axis}")),
            mirror: mirror.clone(),
            last: pl.get(&format!("last_{axis}")),
            last2: pl.get(&format!("last2_{axis}")),
        };
        let first = |axis: &str| Coord { at: pl.get(&format!("first_{axis}")), up: pl.get(&format!("first_up_{axis}")), raw: pl.get(&format!("start_{axis}")) };
        let x_in0 = first("x");
        let (x_in1, _) = step1(b, "load_x1", &x_in0, &prep_rule("x", &c.mirror_x));
        let y_in0 = first("y");
        let (y_in1, y_move) = step1(b, "load_y1", &y_in0, &prep_rule("y", &c.mirror_y));
        let base = pl.get("base");
        let row0_offset = b.let_("load_row0_offset", &row_offset(&y_in0.at, &pl.get("pitch"), by, aw));
        // (y + 1) >> by and (y - 1) >> by leave y's row pair when by = 0, or y's parity says so.
        let (pair_up, pair_down) = if by == 1 { (y_in0.at.bit_at(0), y_in0.at.bit_at(0).not()) } else { (Expr::bit(true), Expr::bit(true)) };
        let row1_base = y_move.up.and(&pair_up).mux(&pl.get("base_up"), &y_move.down.and(&pair_down).mux(&pl.get("base_down"), &base));
        let row_in = [base.add(&row0_offset), y_move.wrap.mux(&base, &row0_offset.add(&row1_base))];

        // The walk: the columns step two texels per tile and start again at
        // the first tile's after a row; the rows step two texels per tile row,
        // their word addresses one row pair on or back, or an edge row's.
        let x_in = [x_in0, x_in1];
        for k in 0..2 {
            let (stepped, _) = step2(b, &format!("tile_x{k}_next"), &tile_x[k], rule_x);
            let walked = Coord::mux(last_col, &first_x[k], &stepped);
            tile_x[k].load(b, &Coord::mux(seq_load, &x_in[k], &walked), &tile_en);
            first_x[k].load(b, &x_in[k], seq_load);
        }
        let row_en = seq_load.or(&next_tile.and(last_col));
        let y_in = [y_in0, y_in1];
        for k in 0..2 {
            let (stepped, moved) = step2(b, &format!("tile_y{k}_next"), &tile_y[k], rule_y);
            tile_y[k].load(b, &Coord::mux(seq_load, &y_in[k], &stepped), &row_en);
            let edge = moved.top.mux(&moved.bit.mux(seq_row_top1, seq_row_top2), &moved.bit.mux(seq_row_one, seq_base));
            let walked = moved.inc.mux(&row_addr[k].add(seq_row_step), &moved.dec.mux(&row_addr[k].sub(seq_row_step), &edge));
            let walked = b.let_(&format!("row{k}_addr_next"), &walked);
            b.next(&row_addr[k], &seq_load.mux(&row_in[k], &walked), Some(&row_en));
        }
        let todo_d = seq_load.mux(&todo_in, &next_tile.mux(&todo_n, todo_left));
        b.next(todo, &todo_d, Some(&seq_load.or(issue)));
        b.next(tile_mask, &seq_load.mux(&todo_in, &todo_n), Some(&tile_en));
    }
}
