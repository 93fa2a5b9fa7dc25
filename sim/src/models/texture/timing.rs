//! The eight rules of "Timing" played cycle by cycle, every `ready` high
//! and the memory answering at exactly L; per op only its tiles' masks and
//! the bank of each texel.

use super::layout::bank_of;
use super::reference::{patch, split, Sampler};
use super::{Item, Op, Workload};
use gpurtl_params::texture::TextureParams;
use std::collections::VecDeque;

/// One tile as the timing sees it: the mask of texels to fetch and the bank
/// of each texel k (from its wrapped coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) bank: [usize; 4],
    pub(crate) mask: u8,
}

/// The op's tiles ("Tiles: what is fetched"): texel k of a tile at origin
/// (tx, ty) is at unwrapped (tx + (k & 1), ty + (k >> 1)).
pub(crate) fn tiles(p: &TextureParams, w: &Workload, op: &Op) -> Vec<Tile> {
    let f = p.frac_bits;
    let level = match op {
        Op::Bilinear { level, .. } | Op::Nearest { level, .. } | Op::Gather4 { level, .. } | Op::ConvQuad { level, .. } => *level,
    };
    let s = Sampler::new(w, level);
    let tile = |tx: i64, ty: i64, mask: u8| {
        let mut bank = [0; 4];
        for (k, b) in bank.iter_mut().enumerate() {
            let (x, y) = s.wrap(tx + (k as i64 & 1), ty + (k as i64 >> 1));
            *b = bank_of(p, x, y);
        }
        Tile { bank, mask }
    };
    match op {
        Op::Bilinear { u, v, .. } => vec![tile(split(*u, f).0, split(*v, f).0, 0b1111)],
        Op::Gather4 { u, v, dx, dy, .. } => vec![tile(split(*u, f).0 + dx, split(*v, f).0 + dy, 0b1111)],
        Op::Nearest { u, v, .. } => vec![tile((u >> f) as i64, (v >> f) as i64, 0b0001)],
        Op::ConvQuad { x, y, kernel, .. } => {
            let (kw, kh) = (kernel.width, kernel.height);
            let (px, py) = (*x as i64 - (kw / 2) as i64, *y as i64 - (kh / 2) as i64);
            let (pw, ph) = (patch(kw), patch(kh));
            let mut list = Vec::new();
            for j in 0..ph.div_ceil(2) {
                for i in 0..pw.div_ceil(2) {
                    let mut mask = 0u8;
                    for k in 0..4 {
                        if 2 * i + (k & 1) < pw && 2 * j + (k >> 1) < ph {
                            mask |= 1 << k;
                        }
                    }
                    list.push(tile(px + 2 * i as i64, py + 2 * j as i64, mask));
                }
            }
            list
        }
    }
}

/// The pass of a tile with `todo` left: per bank, the lowest-numbered texel
/// of `todo` in that bank. Returns (its texels, its banks) as masks.
pub(super) fn pass(tile: &Tile, todo: u8) -> (u8, u8) {
    let (mut texels, mut banks) = (0u8, 0u8);
    for k in 0..4 {
        let b = 1 << tile.bank[k];
        if todo & (1 << k) != 0 && banks & b == 0 {
            texels |= 1 << k;
            banks |= b;
        }
    }
    (texels, banks)
}

/// A script item as the timing sees it: a configuration write, or the
/// op of that index in the op list.
pub(crate) enum Step {
    Cfg,
    Op(usize),
}

/// The script as the timing sees it: op items numbered in order.
pub(super) fn steps(items: &[Item]) -> Vec<Step> {
    let mut n = 0;
    items
        .iter()
        .map(|item| match item {
            Item::Cfg { .. } => Step::Cfg,
            Item::Op { .. } => {
                n += 1;
                Step::Op(n - 1)
            }
        })
        .collect()
}

/// A tag queue entry: one issued pass.
#[derive(Clone, Copy, Debug)]
struct Tag {
    banks: u8,
    /// The pass empties its tile: its collect loads S1.
    last_of_tile: bool,
    /// ... and that tile is its op's last.
    ends_op: bool,
}

/// `PD`, the number of prep stages: `1 + ceil(CW / 4)` with the signed
/// texel coordinate width `CW = max(IB, offset_bits, 6) + 2`,
/// `IB = log2(max_size) + 1` (5 at the defaults).
pub(crate) fn prep_depth(p: &TextureParams) -> usize {
    let ib = p.max_size.trailing_zeros() + 1;
    let cw = ib.max(p.offset_bits).max(6) + 2;
    1 + cw.div_ceil(4) as usize
}

/// `cycles` of the script `steps` without stalls: every ready high, the
/// memory answering at exactly `latency`; `tiles_of(i)` gives op i's tiles
/// (asked when the op enters the sequencer). Each cycle first evaluates
/// every rule from the registers at its start (and that cycle's inputs),
/// then applies the edge.
pub(super) fn simulate(p: &TextureParams, latency: u64, steps: &[Step], tiles_of: &dyn Fn(usize) -> Vec<Tile>) -> u64 {
    schedule(p, latency, steps, tiles_of).0
}

/// [`simulate`], also giving the cycle of each op's handshake, in op order.
pub(super) fn schedule(p: &TextureParams, latency: u64, steps: &[Step], tiles_of: &dyn Fn(usize) -> Vec<Tile>) -> (u64, Vec<u64>) {
    let h = handshakes(p, latency, steps, tiles_of);
    (h.cycles, h.accepted)
}

/// What [`handshakes`] records of the no-stall run of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handshakes {
    /// [`simulate`]'s `cycles`.
    pub(crate) cycles: u64,
    /// The cycle of each op's handshake on `op`, in op order.
    pub(crate) accepted: Vec<u64>,
    /// The cycle of each result's handshake on `res`, in op order (results
    /// come in op order, one per op).
    pub(crate) results: Vec<u64>,
    /// The cycle of each memory request's handshake (a fetched texel), on
    /// any bank, in cycle order (banks in order within a cycle).
    pub(crate) requests: Vec<u64>,
}

/// [`schedule`], also giving the cycles of the results' and the memory
/// requests' handshakes (the same run: these are only recorded).
pub(crate) fn handshakes(p: &TextureParams, latency: u64, steps: &[Step], tiles_of: &dyn Fn(usize) -> Vec<Tile>) -> Handshakes {
    let nb = p.banks as usize;
    let depth = p.max_outstanding as usize;
    let in_pass = |banks: u8, b: usize| banks & (1 << b) != 0;

    // The driver: the first item not yet handshaken.
    let mut next = 0usize;
    // The prep stages: the index of the op each holds, stage 0 first.
    let mut prep: Vec<Option<usize>> = vec![None; prep_depth(p)];
    // The sequencer: (its op's tiles, tile index, todo mask), or free.
    let mut seq: Option<(Vec<Tile>, usize, u8)> = None;
    // Request registers: valid, per bank.
    let mut req = vec![false; nb];
    // The memory, per bank: the earliest cycle of each requested response,
    // in order; and the first cycle the head may show (after a handshake the
    // next response shows from the next cycle: one per cycle, each held).
    let mut mem: Vec<VecDeque<u64>> = vec![VecDeque::new(); nb];
    let mut mem_from = vec![0u64; nb];
    // The tag queue; its length is the registered count.
    let mut tags: VecDeque<Tag> = VecDeque::new();
    // S1, S2: Some(the tile ends its op).
    let mut s1: Option<bool> = None;
    let mut s2: Option<bool> = None;
    // The result register (valid).
    let mut res = false;
    // Ops accepted minus results taken.
    let mut in_flight = 0u64;

    let mut accepted = Vec::new();
    let mut results = Vec::new();
    let mut requests = Vec::new();
    let mut last_handshake: Option<u64> = None;
    let mut last_activity = 0u64;
    let mut t = 0u64;
    while next < steps.len() || in_flight > 0 {
        if crate::budget::over(t) {
            break;
        }
        assert!(t <= last_activity + latency + 8, "texture timing model: no progress since cycle {last_activity}");

        // ---- the cycle: everything from the registers at its start ----
        let cfg_valid = matches!(steps.get(next), Some(Step::Cfg));
        let op_valid = matches!(steps.get(next), Some(Step::Op(_)));
        // 8. cfg_ready = idle = (in-flight count is 0).
        let cfg_hs = cfg_valid && in_flight == 0;
        // 7. res_ready is high: a valid result is taken.
        let res_hs = res;
        // 6. S2 moves on unless it ends an op and the result register is
        //    full and not emptying.
        let s2_moves = s2.is_some_and(|ends| !ends || !res || res_hs);
        // 5. S1 moves on when S2 is empty or moves on.
        let s1_moves = s1.is_some() && (s2.is_none() || s2_moves);
        // 3. A bank's response is valid from its earliest cycle.
        let rsp_valid: Vec<bool> = (0..nb).map(|b| mem[b].front().is_some_and(|&at| at.max(mem_from[b]) <= t)).collect();
        // 4. Collect the head pass: every bank of it valid, and a tile's
        //    last pass needs S1 empty or moving on.
        let collect = tags.front().copied().filter(|tag| {
            (0..nb).all(|b| !in_pass(tag.banks, b) || rsp_valid[b]) && (!tag.last_of_tile || s1.is_none() || s1_moves)
        });
        // Request handshakes: ready is high.
        let req_hs = req.clone();
        // 1. The sequencer's pass issues when the tag count is below D and
        //    each of its banks' request register is empty or handshaking.
        let mut issue: Option<(u8, u8, Tag)> = None; // (texels, banks, tag)
        if let Some((tl, ti, todo)) = &seq {
            let (ti, todo) = (*ti, *todo);
            let (texels, banks) = pass(&tl[ti], todo);
            let free = (0..nb).all(|b| !in_pass(banks, b) || !req[b] || req_hs[b]);
            if tags.len() < depth && free {
                let last_of_tile = todo & !texels == 0;
                let ends_op = last_of_tile && ti + 1 == tl.len();
                issue = Some((texels, banks, Tag { banks, last_of_tile, ends_op }));
            }
        }
        // 2. The sequencer takes an op when it is free or its pass issues
        //    and empties its op's last tile. The last prep stage moves into
        //    it when it holds an op and the sequencer takes one; stage
        //    k < PD-1 moves on when it holds an op and stage k+1 is empty or
        //    moves on. op_ready: no cfg offered, and stage 0 empty or moving.
        let seq_takes = seq.is_none() || issue.is_some_and(|(_, _, tag)| tag.ends_op);
        let mut moves = vec![false; prep.len()];
        for k in (0..prep.len()).rev() {
            let room = match prep.get(k + 1) {
                None => seq_takes,
                Some(next) => next.is_none() || moves[k + 1],
            };
            moves[k] = prep[k].is_some() && room;
        }
        let op_ready = !cfg_valid && (prep[0].is_none() || moves[0]);
        let op_hs = op_valid && op_ready;

        // ---- the edge ----
        let active = cfg_hs
            || op_hs
            || res_hs
            || s1_moves
            || s2_moves
            || collect.is_some()
            || issue.is_some()
            || moves.iter().any(|&m| m);
        if active || req_hs.iter().any(|&h| h) {
            last_activity = t;
        }
        // Request registers: a handshake hands the request to the memory;
        // an issuing pass loads its banks.
        for b in 0..nb {
            if req_hs[b] {
                req[b] = false;
                mem[b].push_back(t + latency);
                requests.push(t);
            }
        }
        if let Some((_, banks, _)) = issue {
            for (b, r) in req.iter_mut().enumerate() {
                if in_pass(banks, b) {
                    *r = true;
                }
            }
        }
        // Collect: the pass's responses are taken, the head is popped, a
        // tile's last pass loads S1 (which is empty or moving on).
        let s1_before = s1;
        if s1_moves {
            s1 = None;
        }
        if let Some(tag) = collect {
            for b in 0..nb {
                if in_pass(tag.banks, b) {
                    mem[b].pop_front();
                    mem_from[b] = t + 1;
                }
            }
            tags.pop_front();
            if tag.last_of_tile {
                s1 = Some(tag.ends_op);
            }
        }
        if let Some((_, _, tag)) = issue {
            tags.push_back(tag);
        }
        // S2 and the result register.
        let s2_before = s2;
        if s2_moves {
            s2 = None;
        }
        if s1_moves {
            s2 = s1_before;
        }
        if res_hs {
            res = false;
        }
        if s2_moves && s2_before == Some(true) {
            res = true;
        }
        // The sequencer: the pass leaves todo; an empty todo moves to the
        // next tile or frees it; the last prep stage's op enters it when it
        // moves on.
        if let Some((texels, _, _)) = issue {
            let (tl, ti, todo) = seq.take().expect("a pass issues from a busy sequencer");
            let left = todo & !texels;
            seq = if left != 0 {
                Some((tl, ti, left))
            } else if ti + 1 < tl.len() {
                let mask = tl[ti + 1].mask;
                Some((tl, ti + 1, mask))
            } else {
                None
            };
        }
        let last = prep.len() - 1;
        if moves[last] {
            let i = prep[last].take().expect("a moving prep stage holds an op");
            let tl = tiles_of(i);
            let mask = tl[0].mask;
            seq = Some((tl, 0, mask));
        }
        // The prep stages, from the last: a moving stage's op goes to the
        // next one (emptied or moving on itself); an accepted op enters
        // stage 0 (empty or moving on).
        for k in (0..last).rev() {
            if moves[k] {
                prep[k + 1] = prep[k].take();
            }
        }
        if op_hs {
            let Some(&Step::Op(i)) = steps.get(next) else {
                unreachable!("an op handshake takes an op");
            };
            prep[0] = Some(i);
            in_flight += 1;
            accepted.push(t);
        }
        if res_hs {
            in_flight -= 1;
            results.push(t);
        }
        if cfg_hs || op_hs {
            next += 1;
        }
        if cfg_hs || op_hs || res_hs {
            last_handshake = Some(t);
        }
        t += 1;
    }
    Handshakes { cycles: last_handshake.map_or(0, |c| c + 1), accepted, results, requests }
}
