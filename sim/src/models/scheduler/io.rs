//! `gpurtl run scheduler` files: the input (every violation reported) and
//! the output, computed from the trace alone.

use super::state::Res;
use super::{BlockEvent, Kernel, Trace, Workload, MAX_BLOCKS, MAX_DURATION, MAX_SUBMIT};
use crate::models::{err, shown, InputError, InputErrors, Violations};
use gpurtl_params::scheduler::{SchedulerParams, StreamOrder};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};

const KERNEL_KEYS: [&str; 9] = ["id", "stream", "blocks", "threads", "regs", "smem", "duration", "priority", "submit"];

/// Parse and check a `gpurtl run scheduler` input: every violation, as the
/// spec says (distinct ids, stream < streams, blocks 1..2^block_bits-1, needs
/// within their port widths, duration 1..1,000,000, priority <
/// 2^prio_bits, submit 0..1,000,000,000, unknown keys, at most 100,000
/// blocks in all).
pub fn parse_input(v: &Value, p: &SchedulerParams) -> Result<Workload, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with a `kernels` list"))));
    };
    for k in obj.keys().filter(|k| *k != "kernels") {
        e.push(err(k.as_str(), "(given)", "absent: the only key is `kernels`"));
    }
    let list = match obj.get("kernels") {
        None => return Err(e.stop(Some(err("kernels", "(missing)", "a list of kernels")))),
        Some(l) => match l.as_array() {
            Some(a) => a,
            None => return Err(e.stop(Some(err("kernels", shown(l), "a list of kernels")))),
        },
    };
    let mut kernels = Vec::with_capacity(list.len());
    let mut first_with_id: HashMap<u64, usize> = HashMap::new();
    let mut total_blocks: u64 = 0;
    for (i, x) in list.iter().enumerate() {
        if let Some(k) = parse_kernel(&mut e, p, i, x, &mut first_with_id, &mut total_blocks) {
            kernels.push(k);
        }
    }
    if total_blocks > MAX_BLOCKS {
        e.push(err("kernels", format!("{total_blocks} blocks in all"), format!("at most {MAX_BLOCKS} blocks in all")));
    }
    e.finish(|| Workload { kernels })
}

/// One kernel, `kernels[i]`; its violations go to `e`. `ids` maps each id
/// seen so far to its first kernel; `total` sums the well-formed `blocks`.
fn parse_kernel(
    e: &mut Violations,
    p: &SchedulerParams,
    i: usize,
    x: &Value,
    ids: &mut HashMap<u64, usize>,
    total: &mut u64,
) -> Option<Kernel> {
    let at = |f: &str| format!("kernels[{i}].{f}");
    let Some(o) = x.as_object() else {
        e.push(err(format!("kernels[{i}]"), shown(x), "an object"));
        return None;
    };
    for k in o.keys() {
        if !KERNEL_KEYS.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: keys are {}", KERNEL_KEYS.join(", "))));
        }
    }
    let max = |bits: u32| (1u64 << bits) - 1;
    // A field: an integer in lo..=hi; `default` when absent (None: required).
    let field = |f: &str, lo: u64, hi: u64, default: Option<u64>| -> Result<u64, InputError> {
        let allowed = format!("an integer from {lo} to {hi}");
        match o.get(f) {
            None => default.ok_or_else(|| err(at(f), "(missing)", allowed)),
            Some(v) => match v.as_u64() {
                Some(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(err(at(f), shown(v), allowed)),
            },
        }
    };
    let id = e.take(field("id", 0, max(p.id_bits), None));
    let id = match id {
        Some(n) => match ids.get(&n) {
            Some(&j) => {
                e.push(err(at("id"), n, format!("distinct: kernels[{j}].id is {n} too")));
                None
            }
            None => {
                ids.insert(n, i);
                Some(n)
            }
        },
        None => None,
    };
    let stream = e.take(field("stream", 0, p.streams as u64 - 1, None));
    let blocks = e.take(field("blocks", 1, max(p.block_bits), None));
    let threads = e.take(field("threads", 0, max(p.thread_bits()), None));
    let regs = e.take(field("regs", 0, max(p.reg_bits()), None));
    let smem = e.take(field("smem", 0, max(p.smem_bits()), None));
    let duration = e.take(field("duration", 1, MAX_DURATION, None));
    let priority = e.take(field("priority", 0, max(p.prio_bits), Some(0)));
    let submit = e.take(field("submit", 0, MAX_SUBMIT, Some(0)));
    if let Some(b) = blocks {
        *total += b;
    }
    Some(Kernel {
        id: id?,
        stream: stream? as u32,
        blocks: blocks? as u32,
        threads: threads? as u32,
        regs: regs? as u32,
        smem: smem? as u32,
        duration: duration?,
        priority: priority? as u32,
        submit: submit?,
    })
}

/// Per accepted kernel, from the trace: (submitted, first and last
/// dispatch, finish); `None` for what the trace does not hold.
struct KernelTimes {
    submitted: Option<u64>,
    first: Option<u64>,
    last: Option<u64>,
    finish: Option<u64>,
}

fn kernel_times(w: &Workload, t: &Trace) -> HashMap<u64, KernelTimes> {
    let mut m: HashMap<u64, KernelTimes> = w
        .kernels
        .iter()
        .map(|k| (k.id, KernelTimes { submitted: None, first: None, last: None, finish: None }))
        .collect();
    for &(c, id) in &t.submissions {
        if let Some(x) = m.get_mut(&id) {
            x.submitted.get_or_insert(c);
        }
    }
    for d in &t.dispatches {
        if let Some(x) = m.get_mut(&d.kernel) {
            x.first = Some(x.first.map_or(d.cycle, |f| f.min(d.cycle)));
            x.last = Some(x.last.map_or(d.cycle, |l| l.max(d.cycle)));
        }
    }
    for d in &t.completions {
        if let Some(x) = m.get_mut(&d.kernel) {
            x.finish = Some(x.finish.map_or(d.cycle, |l| l.max(d.cycle)));
        }
    }
    m
}

fn events_json(list: &[BlockEvent]) -> Value {
    Value::Array(list.iter().map(|e| json!({"cycle": e.cycle, "kernel": e.kernel, "block": e.block, "sm": e.sm})).collect())
}

/// The output file of the spec, computed from the trace alone (so both
/// engines give the same file).
pub fn output_json(p: &SchedulerParams, w: &Workload, t: &Trace) -> Value {
    let rejected: HashSet<u64> = t.rejections.iter().map(|&(_, id)| id).collect();
    let times = kernel_times(w, t);

    // kernels: per accepted kernel in input order; ready = the later of its
    // submission and what its stream predecessor allows.
    let mut kernels = Vec::new();
    let mut worst_wait: u64 = 0;
    let mut prev_in_stream: HashMap<u32, u64> = HashMap::new();
    for k in w.kernels.iter().filter(|k| !rejected.contains(&k.id)) {
        let x = &times[&k.id];
        let allowed = prev_in_stream.get(&k.stream).and_then(|pid| {
            let px = &times[pid];
            match p.stream_order {
                StreamOrder::Dispatch => px.last,
                StreamOrder::Complete => px.finish,
            }
        });
        let ready = match (x.submitted, allowed) {
            (Some(s), Some(a)) => Some(s.max(a)),
            (s, None) => s,
            (None, a) => a,
        };
        let wait = match (x.first, ready) {
            (Some(f), Some(r)) => Some(f.saturating_sub(r)),
            _ => None,
        };
        if let Some(wt) = wait {
            worst_wait = worst_wait.max(wt);
        }
        let mut o = Map::new();
        o.insert("id".into(), json!(k.id));
        o.insert("submitted".into(), json!(x.submitted));
        o.insert("first_dispatch".into(), json!(x.first));
        o.insert("last_dispatch".into(), json!(x.last));
        o.insert("finish".into(), json!(x.finish));
        o.insert("wait".into(), json!(wait));
        kernels.push(Value::Object(o));
        prev_in_stream.insert(k.stream, k.id);
    }

    let makespan = match (t.completions.iter().map(|e| e.cycle).max(), t.submissions.iter().map(|s| s.0).min()) {
        (Some(last), Some(first)) => last.saturating_sub(first),
        _ => 0,
    };

    // utilization: sum of need * (completion - dispatch) over blocks.
    let need: HashMap<u64, Res> = w.kernels.iter().map(|k| (k.id, Res::need(k))).collect();
    let dispatched: HashMap<(u64, u32), u64> = t.dispatches.iter().map(|d| ((d.kernel, d.block), d.cycle)).collect();
    let mut busy = [0f64; 4];
    for c in &t.completions {
        let (Some(d), Some(n)) = (dispatched.get(&(c.kernel, c.block)), need.get(&c.kernel)) else { continue };
        let run = c.cycle.saturating_sub(*d) as f64;
        busy[0] += n.thr as f64 * run;
        busy[1] += n.reg as f64 * run;
        busy[2] += n.mem as f64 * run;
        busy[3] += n.slot as f64 * run;
    }
    let caps = [p.sm_threads, p.sm_regs, p.sm_smem, p.sm_slots];
    let util: Vec<f64> = (0..4)
        .map(|r| if makespan == 0 { 0.0 } else { busy[r] / (p.sms as f64 * caps[r] as f64 * makespan as f64) })
        .collect();

    json!({
        "dispatches": events_json(&t.dispatches),
        "completions": events_json(&t.completions),
        "kernels": kernels,
        "rejected": t.rejections.iter().map(|&(_, id)| id).collect::<Vec<u64>>(),
        "makespan": makespan,
        "utilization": {"threads": util[0], "regs": util[1], "smem": util[2], "slots": util[3]},
        "worst_wait": worst_wait,
    })
}
