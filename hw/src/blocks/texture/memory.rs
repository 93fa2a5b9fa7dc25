//! The memory side: the per-bank request registers, the tag queue that
//! says which banks each issued pass used and where each texel goes, and
//! the collect that takes a pass's responses into the tile being
//! assembled.

use super::sequencer::{Pass, Sequencer};
use crate::rtl::{bits_for, clog2, select, Expr, ModuleBuilder, Stream};
use gpurtl_params::texture::TextureParams;

/// The registers the sequencer's issue reads: the tag queue's fill and the
/// valid of each bank's request register.
pub(super) struct Memory {
    pub tag_count: Expr,
    pub req_valid: Vec<Expr>,
}

/// The tag queue's read pointer and the fields of its head entry.
pub(super) struct Tags {
    rd: Expr,
    used: Expr,
    slots: Expr,
    pub tile_last: Expr,
    pub op_last: Expr,
    pub kind: Expr,
    pub fa: Expr,
    pub fb: Expr,
    pub chan: Expr,
    pub ti: Expr,
    pub tj: Expr,
    pub mask: Expr,
}

/// A ring pointer of the tag queue one entry on.
fn bump(p: &Expr, depth: u32) -> Expr {
    let pw = p.width();
    p.eq_lit(depth as u64 - 1).mux(&Expr::zero(pw), &p.add(&Expr::lit(pw, 1)))
}

impl Memory {
    pub fn declare(b: &mut ModuleBuilder, p: &TextureParams) -> Memory {
        let cntw = bits_for(p.max_outstanding as u64);
        let tag_count = b.reg("tag_count_q", cntw, 0);
        let req_valid: Vec<Expr> = (0..p.banks).map(|k| b.reg(&format!("req{k}_valid_q"), 1, 0)).collect();
        Memory { tag_count, req_valid }
    }

    /// Each bank's request register, loaded by an issuing pass that reads
    /// the bank, held until the memory takes it; `req`: the request ports.
    pub fn requests(&self, b: &mut ModuleBuilder, p: &TextureParams, ps: &Pass, req: &[Stream]) {
        let Pass { used, req_addr_d, issue, .. } = ps;
        let req_valid = &self.req_valid;
        let nb = p.banks;
        for k in 0..nb as usize {
            let load = issue.and(&used[k]);
            let v = req_valid[k].clone();
            b.next(&v, &load.or(&v.and(&req[k].ready.not())), None);
            let a = b.pipe(&format!("req{k}_addr_q"), &req_addr_d[k], &load);
            b.assign(&req[k].valid, &v);
            b.assign(&req[k].field("addr"), &a);
        }
    }

    /// The tag queue's entries, pushed by an issuing pass: its banks and
    /// their texels, whether it ends its tile and op, and the op and tile
    /// fields the later stages need.
    pub fn tag_queue(&self, b: &mut ModuleBuilder, p: &TextureParams, seq: &Sequencer, ps: &Pass) -> Tags {
        let Sequencer { kind: seq_kind, fa: seq_fa, fb: seq_fb, chan: seq_chan, ti, tj, tile_mask, .. } = seq;
        let Pass { used, slot, issue, tile_done, last_tile, .. } = ps;
        let f = p.frac_bits;
        let tb = p.tile_bits();
        let nb = p.banks;
        let depth = p.max_outstanding;
        let pw = clog2(depth as u64).max(1);
        let tag_fields: Vec<(&str, Expr)> = vec![
            ("used", Expr::cat_lanes(used)),
            ("slots", Expr::cat_lanes(slot)),
            ("tile_last", tile_done.clone()),
            ("op_last", last_tile.clone()),
            ("kind", seq_kind.clone()),
            ("fa", seq_fa.clone()),
            ("fb", seq_fb.clone()),
            ("chan", seq_chan.clone()),
            ("ti", ti.clone()),
            ("tj", tj.clone()),
            ("mask", tile_mask.clone()),
        ];
        let tag_w: u32 = tag_fields.iter().map(|(_, e)| e.width()).sum();
        let tag_d = Expr::cat(&tag_fields.iter().rev().map(|(_, e)| e.clone()).collect::<Vec<_>>());
        let wr = b.reg("tag_wr_q", pw, 0);
        let rd = b.reg("tag_rd_q", pw, 0);
        let entries: Vec<Expr> = (0..depth).map(|k| b.reg_noreset(&format!("tag{k}_q"), tag_w)).collect();
        for (k, e) in entries.iter().enumerate() {
            b.next(e, &tag_d, Some(&issue.and(&wr.eq_lit(k as u64))));
        }
            b.next(&wr, &bump(&wr, depth), Some(issue));
        let head = b.let_("tag_head", &select(&rd, &entries));
        let mut at = 0;
        let mut field = |w: u32| {
            let e = head.slice(at + w - 1, at);
            at += w;
            e
        };
        let h_used = field(nb);
        let h_slots = field(2 * nb);
        let h_tile_last = field(1);
        let h_op_last = field(1);
        let h_kind = field(2);
        let h_fa = field(f);
        let h_fb = field(f);
        let h_chan = field(super::chan_bits(p));
        let h_ti = field(tb);
        let h_tj = field(tb);
        let h_mask = field(4);
        Tags {
            rd,
            used: h_used,
            slots: h_slots,
            tile_last: h_tile_last,
            op_last: h_op_last,
            kind: h_kind,
            fa: h_fa,
            fb: h_fb,
            chan: h_chan,
            ti: h_ti,
            tj: h_tj,
            mask: h_mask,
        }
    }

    /// The head pass is collected when each of its banks has its response
    /// (`rsp`) and, if it ends its tile, S1 is free (`s1_free`); the
    /// responses go into the tile being assembled. Returns the collect and
    /// the tile's four texels with this pass's data.
    pub fn collect(&self, b: &mut ModuleBuilder, p: &TextureParams, tags: &Tags, issue: &Expr, rsp: &[Stream], s1_free: &Expr) -> (Expr, Vec<Expr>) {
        let tag_count = &self.tag_count;
        let nb = p.banks;
        let depth = p.max_outstanding;
        let cntw = bits_for(depth as u64);
        let nonempty = tag_count.ne(&Expr::zero(cntw));
        let mut have = nonempty.and(&tags.tile_last.not().or(s1_free));
        for k in 0..nb {
            have = have.and(&tags.used.bit_at(k).not().or(&rsp[k as usize].valid));
        }
        let collect = b.let_("collect", &have);
        for k in 0..nb {
            b.assign(&rsp[k as usize].ready, &collect.and(&tags.used.bit_at(k)));
        }
        b.next(&tags.rd, &bump(&tags.rd, depth), Some(&collect));
        b.next(tag_count, &tag_count.add(&issue.zext(cntw)).sub(&collect.zext(cntw)), None);
        // Texel t of the tile: this pass's data where one of its banks brings it.
        let mut tile = Vec::new();
        for t in 0..4u64 {
            let asm = b.reg_noreset(&format!("asm{t}_q"), 32);
            let mut v = asm.clone();
            for k in 0..nb {
                let here = tags.used.bit_at(k).and(&tags.slots.slice(2 * k + 1, 2 * k).eq_lit(t));
                v = here.mux(&rsp[k as usize].field("data"), &v);
            }
            let v = b.let_(&format!("tile_texel{t}"), &v);
            b.next(&asm, &v, Some(&collect));
            tile.push(v);
        }
        (collect, tile)
    }
}
