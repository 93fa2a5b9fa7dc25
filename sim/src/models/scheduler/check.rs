//! Trace checks independent of the scheduling rules: what any scheduler
//! obeying the spec's ports, table and environment must show.

use super::state::Res;
use super::timing::source_start;
use super::{is_bad, BlockEvent, Env, Trace, Workload};
use gpurtl_params::scheduler::{SchedulerParams, StreamOrder};
use std::collections::{BTreeMap, HashMap};

/// Checks a trace (of the model or of the hardware) against facts that any
/// scheduler obeying the spec's ports, table and environment must show,
/// without the scheduling rules (which kernel goes when). `Err` describes the
/// first problem found. In order:
///
/// 1. **Submissions**: every kernel exactly once, in input order, each at or
///    after the cycle the source offers it (from `submit`, the previous
///    transfer and the stall draws), at least 2 cycles after the previous
///    one (`sub_ready_o` is low while `sub_q` holds the previous one).
/// 2. **Rejections**: exactly the bad kernels ([`is_bad`]), in input order,
///    each at least 2 cycles after its submission (via `sub_q`, `rej_q`), in
///    a cycle where `rej_ready_i` is high, cycles strictly increasing.
/// 3. **Dispatch port**: cycles non-decreasing; the blocks of one cycle are
///    one record: one accepted kernel, at most W lanes, blocks `b, b+1, ..`,
///    distinct SMs below `sms`, in a cycle where `dsp_ready_i` is high; each
///    block of each accepted kernel dispatched exactly once, after the
///    kernel's submission, a kernel's blocks in index order; no block of a
///    rejected kernel.
/// 4. **Completions**: exactly the SM stand-in's: recomputed from the
///    dispatches and the environment (due = dispatch + duration + extra,
///    first W by due, dispatch cycle, lane), which implies each block
///    completes once, on its SM, at or after its due cycle.
/// 5. **Occupancy**: on every SM, at every cycle `k`, the needs (threads,
///    regs, smem, 1 slot) of the blocks with `dispatch <= k <= completion`
///    sum to at most the capacity. This is sound: a block decided in cycle
///    `t` is transferred at `d >= t + 1` and its completion at `c` frees the
///    table from `c + 1`, so the table at the start of `k` subtracts every
///    block with `t < k <= c`, a superset of those with `d <= k <= c`, and
///    the table never goes below zero (a block is only decided where it
///    fits). It is stricter than `[d, c)`: a block whose completion at `c`
///    freed its SM can be followed there by a block transferred at `c + 2`
///    at the earliest. Over-subscription shows as an SM over capacity.
/// 6. **Stream order**: with `dispatch`, an accepted kernel's first dispatch
///    is not before its stream predecessor's (previous accepted kernel of
///    the stream) last dispatch; with `complete`, it is after the
///    predecessor's last completion.
pub fn check_trace(p: &SchedulerParams, w: &Workload, env: &Env, t: &Trace) -> Result<(), String> {
    let ks = &w.kernels;
    let wl = p.dispatch_width as usize;
    let mut index: HashMap<u64, usize> = HashMap::new();
    for (i, k) in ks.iter().enumerate() {
        if index.insert(k.id, i).is_some() {
            return Err(format!("workload: kernel id {} is not distinct", k.id));
        }
    }
    let bad: Vec<bool> = ks.iter().map(|k| is_bad(p, k)).collect();

    // ---- 1. Submissions ----
    if t.submissions.len() != ks.len() {
        return Err(format!("{} submissions for {} kernels", t.submissions.len(), ks.len()));
    }
    let mut prev: Option<u64> = None;
    for (i, (&(c, id), k)) in t.submissions.iter().zip(ks).enumerate() {
        if id != k.id {
            return Err(format!("submission {i} at cycle {c} is kernel {id}; the source offers kernels[{i}] (id {}) then", k.id));
        }
        let from = source_start(w, env, i, prev);
        if c < from {
            return Err(format!("kernel {id} submitted at cycle {c}, before the source offers it (cycle {from})"));
        }
        if let Some(pc) = prev {
            if c < pc + 2 {
                return Err(format!("kernel {id} submitted at cycle {c}, within 2 cycles of the previous submission ({pc})"));
            }
        }
        prev = Some(c);
    }
    let submitted: Vec<u64> = t.submissions.iter().map(|s| s.0).collect();

    // ---- 2. Rejections ----
    let want: Vec<u64> = ks.iter().zip(&bad).filter(|(_, &b)| b).map(|(k, _)| k.id).collect();
    let got: Vec<u64> = t.rejections.iter().map(|r| r.1).collect();
    if got != want {
        return Err(format!("rejected kernels {got:?}; the bad ones are {want:?}"));
    }
    let mut prev: Option<u64> = None;
    for &(c, id) in &t.rejections {
        let s = submitted[index[&id]];
        if c < s + 2 {
            return Err(format!("kernel {id} rejected at cycle {c}, less than 2 cycles after its submission ({s})"));
        }
        if !env.rej_ready(c) {
            return Err(format!("kernel {id} rejected at cycle {c}, where rej_ready_i is low"));
        }
        if prev.is_some_and(|pc| c <= pc) {
            return Err(format!("kernel {id} rejected at cycle {c}, not after the previous rejection"));
        }
        prev = Some(c);
    }

    // ---- 3. Dispatch port ----
    let mut disp: HashMap<(u64, u32), (u64, u32)> = HashMap::new(); // (id, block) -> (cycle, sm)
    let mut next_block: Vec<u32> = vec![0; ks.len()];
    let mut first_dispatch: Vec<Option<u64>> = vec![None; ks.len()];
    let mut last_dispatch: Vec<Option<u64>> = vec![None; ks.len()];
    let mut lane_of: Vec<u32> = Vec::with_capacity(t.dispatches.len());
    let mut i = 0;
    while i < t.dispatches.len() {
        let c = t.dispatches[i].cycle;
        if i > 0 && c < t.dispatches[i - 1].cycle {
            return Err(format!("dispatch at cycle {c} listed after one at cycle {}", t.dispatches[i - 1].cycle));
        }
        let rec: Vec<&BlockEvent> = t.dispatches[i..].iter().take_while(|d| d.cycle == c).collect();
        let d0 = rec[0];
        if rec.len() > wl {
            return Err(format!("{} blocks dispatched at cycle {c}: at most dispatch_width {wl}", rec.len()));
        }
        if !env.dsp_ready(c) {
            return Err(format!("dispatch at cycle {c}, where dsp_ready_i is low"));
        }
        for (lane, d) in rec.iter().enumerate() {
            let what = format!("kernel {} block {} dispatched at cycle {c} on SM {}", d.kernel, d.block, d.sm);
            if d.kernel != d0.kernel || d.block != d0.block + lane as u32 {
                return Err(format!("{what}: lane {lane} of a record of kernel {} from block {}", d0.kernel, d0.block));
            }
            if d.sm >= p.sms {
                return Err(format!("{what}: there are {} SMs", p.sms));
            }
            if rec[..lane].iter().any(|e| e.sm == d.sm) {
                return Err(format!("{what}: a second block on that SM in the same record"));
            }
            let Some(&k) = index.get(&d.kernel) else { return Err(format!("{what}: no such kernel")) };
            if bad[k] {
                return Err(format!("{what}: the kernel is rejected"));
            }
            if d.block >= ks[k].blocks {
                return Err(format!("{what}: the kernel has {} blocks", ks[k].blocks));
            }
            if disp.contains_key(&(d.kernel, d.block)) {
                return Err(format!("{what}: dispatched twice"));
            }
            if d.block != next_block[k] {
                return Err(format!("{what}: its block {} is not dispatched yet (blocks go in index order)", next_block[k]));
            }
            if c <= submitted[k] {
                return Err(format!("{what}: not after its submission (cycle {})", submitted[k]));
            }
            next_block[k] += 1;
            disp.insert((d.kernel, d.block), (c, d.sm));
            first_dispatch[k].get_or_insert(c);
            last_dispatch[k] = Some(c);
            lane_of.push(lane as u32);
        }
        i += rec.len();
    }
    for (k, kern) in ks.iter().enumerate() {
        if !bad[k] && next_block[k] != kern.blocks {
            return Err(format!("kernel {}: {} of its {} blocks dispatched", kern.id, next_block[k], kern.blocks));
        }
    }

    // ---- 4. Completions: the stand-in's, recomputed ----
    let mut running: BTreeMap<(u64, u64, u32), BlockEvent> = BTreeMap::new();
    for (d, &lane) in t.dispatches.iter().zip(&lane_of) {
        let k = index[&d.kernel];
        let due = d.cycle + ks[k].duration + env.extra(k, d.block);
        running.insert((due, d.cycle, lane), *d);
    }
    let mut want: Vec<BlockEvent> = Vec::with_capacity(running.len());
    let mut c = 0;
    while let Some((&(due, _, _), _)) = running.iter().next() {
        c = c.max(due);
        let now: Vec<(u64, u64, u32)> = running.keys().take_while(|k| k.0 <= c).take(wl).copied().collect();
        for key in now {
            let d = running.remove(&key).expect("present");
            want.push(BlockEvent { cycle: c, ..d });
        }
        c += 1;
    }
    for (j, w_ev) in want.iter().enumerate() {
        match t.completions.get(j) {
            Some(g) if g == w_ev => {}
            Some(g) => {
                return Err(format!(
                    "completion {j} is kernel {} block {} on SM {} at cycle {}; the SM stand-in completes kernel {} block {} on SM {} at cycle {}",
                    g.kernel, g.block, g.sm, g.cycle, w_ev.kernel, w_ev.block, w_ev.sm, w_ev.cycle
                ))
            }
            None => return Err(format!("{} completions; the dispatched blocks give {}", t.completions.len(), want.len())),
        }
    }
    if t.completions.len() != want.len() {
        return Err(format!("{} completions; the dispatched blocks give {}", t.completions.len(), want.len()));
    }

    // ---- 5. Occupancy over [dispatch, completion] ----
    // Per SM: (cycle, +1 start / -1 end after, need); ends apply at c + 1.
    let mut deltas: Vec<Vec<(u64, i8, Res)>> = vec![Vec::new(); p.sms as usize];
    for cpl in &t.completions {
        let (d, sm) = disp[&(cpl.kernel, cpl.block)];
        let need = Res::need(&ks[index[&cpl.kernel]]);
        deltas[sm as usize].push((d, 1, need));
        deltas[sm as usize].push((cpl.cycle + 1, -1, need));
    }
    let cap = [p.sm_threads as u64, p.sm_regs as u64, p.sm_smem as u64, p.sm_slots as u64];
    let names = ["threads", "regs", "smem", "slots"];
    for (m, list) in deltas.iter_mut().enumerate() {
        // Ends before starts at the same cycle; then check after each cycle's starts.
        list.sort_by_key(|&(c, s, _)| (c, s));
        let mut used = [0u64; 4];
        for j in 0..list.len() {
            let (c, s, n) = list[j];
            let v = [n.thr as u64, n.reg as u64, n.mem as u64, n.slot as u64];
            for r in 0..4 {
                if s > 0 {
                    used[r] += v[r];
                } else {
                    used[r] -= v[r];
                }
            }
            let last_of_cycle = j + 1 == list.len() || list[j + 1].0 != c;
            if last_of_cycle {
                for r in 0..4 {
                    if used[r] > cap[r] {
                        return Err(format!("SM {m} at cycle {c}: {} {} in use by running blocks, capacity {}", used[r], names[r], cap[r]));
                    }
                }
            }
        }
    }

    // ---- 6. Stream order ----
    let mut finish: Vec<Option<u64>> = vec![None; ks.len()];
    for cpl in &t.completions {
        let k = index[&cpl.kernel];
        finish[k] = Some(finish[k].map_or(cpl.cycle, |f| f.max(cpl.cycle)));
    }
    let mut pred: HashMap<u32, usize> = HashMap::new();
    for (k, kern) in ks.iter().enumerate() {
        if bad[k] {
            continue;
        }
        if let Some(&j) = pred.get(&kern.stream) {
            let first = first_dispatch[k].expect("every accepted kernel is dispatched");
            match p.stream_order {
                StreamOrder::Dispatch => {
                    let last = last_dispatch[j].expect("dispatched");
                    if first < last {
                        return Err(format!(
                            "kernel {} first dispatched at cycle {first}, before its stream predecessor {} was fully dispatched (cycle {last})",
                            kern.id, ks[j].id
                        ));
                    }
                }
                StreamOrder::Complete => {
                    let fin = finish[j].expect("completed");
                    if first <= fin {
                        return Err(format!(
                            "kernel {} first dispatched at cycle {first}, not after its stream predecessor {} completed (cycle {fin})",
                            kern.id, ks[j].id
                        ));
                    }
                }
            }
        }
        pred.insert(kern.stream, k);
    }
    Ok(())
}
