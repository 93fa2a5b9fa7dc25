//! `gpurtl run gpu` files (docs/gpu.md, "`gpurtl run gpu`"): the input
//! (unknown keys are errors, every violation reported, each naming its
//! field) and the output.

use super::{MemTiming, Outcome, QueueInput, Run};
use crate::models::cu::io::{dumps, parse_dump, parse_memory};
use crate::models::{err, shown, InputError, InputErrors, Violations};
use gpurtl_params::gpu::GpuParams;
use serde_json::{json, Map, Value};
use std::path::Path;

const TOP_KEYS: [&str; 4] = ["queues", "memory", "dump", "mem"];
const QUEUE_KEYS: [&str; 3] = ["cmd_base", "cmd_size", "priority"];
const MEM_KEYS: [&str; 3] = ["latency", "stall", "seed"];

const ADDR_ALLOWED: &str = "a multiple of 4 from 0 to 4294967292";
const PRIORITY_ALLOWED: &str = "an integer from 0 to 3";
const LATENCY_ALLOWED: &str = "an integer from 1 to 1000";
const STALL_ALLOWED: &str = "a number from 0 to 1 (the chance that a ready is low or a due response held in a cycle)";
const SEED_ALLOWED: &str = "an integer from 0 to 18446744073709551615";

/// Keys of `o` not in `keys`, each a violation named by `at(key)`.
fn refuse_unknown(e: &mut Violations, o: &Map<String, Value>, at: &dyn Fn(&str) -> String, keys: &[&str]) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: the keys are {}", keys.join(", "))));
        }
    }
}

/// A multiple of 4 below 2^32, named `path`.
fn addr(x: &Value, path: &str) -> Result<u32, InputError> {
    match x.as_u64() {
        Some(n) if n <= u32::MAX as u64 && n % 4 == 0 => Ok(n as u32),
        _ => Err(err(path, shown(x), ADDR_ALLOWED)),
    }
}

fn queues_allowed(p: &GpuParams) -> String {
    format!(
        "a list of 1 to {} queue entries {{\"cmd_base\", \"cmd_size\", \"priority\"}} (the parameter queues)",
        p.queues
    )
}

/// Entry `i` of `queues`.
fn parse_queue(e: &mut Violations, x: &Value, i: usize) -> Option<QueueInput> {
    let at = |f: &str| format!("queues[{i}].{f}");
    let Some(o) = x.as_object() else {
        e.push(err(format!("queues[{i}]"), shown(x), "an object {\"cmd_base\", \"cmd_size\", \"priority\"}"));
        return None;
    };
    refuse_unknown(e, o, &|k| at(k), &QUEUE_KEYS);
    let mut required = |key: &str| {
        let r = match o.get(key) {
            None => Err(err(at(key), "(missing)", ADDR_ALLOWED)),
            Some(v) => addr(v, &at(key)),
        };
        e.take(r)
    };
    let cmd_base = required("cmd_base");
    let cmd_size = required("cmd_size");
    let priority = e.take(match o.get("priority") {
        None => Ok(0),
        Some(v) => match v.as_u64() {
            Some(n) if n <= 3 => Ok(n as u32),
            _ => Err(err(at("priority"), shown(v), PRIORITY_ALLOWED)),
        },
    });
    Some(QueueInput { cmd_base: cmd_base?, cmd_size: cmd_size?, priority: priority? })
}

fn parse_queues(e: &mut Violations, v: &Value, p: &GpuParams) -> Option<Vec<QueueInput>> {
    let list = match v.as_array() {
        Some(l) if (1..=p.queues as usize).contains(&l.len()) => l,
        Some(l) => {
            e.push(err("queues", format!("a list of {} entries", l.len()), queues_allowed(p)));
            return None;
        }
        None => {
            e.push(err("queues", shown(v), queues_allowed(p)));
            return None;
        }
    };
    let mut out = Vec::new();
    let mut good = true;
    for (i, x) in list.iter().enumerate() {
        match parse_queue(e, x, i) {
            Some(q) => out.push(q),
            None => good = false,
        }
    }
    good.then_some(out)
}

/// `mem`: every key optional.
fn parse_mem(e: &mut Violations, v: &Value) -> Option<MemTiming> {
    let Some(o) = v.as_object() else {
        e.push(err("mem", shown(v), "an object {\"latency\", \"stall\", \"seed\"} (each optional)"));
        return None;
    };
    refuse_unknown(e, o, &|k| format!("mem.{k}"), &MEM_KEYS);
    let d = MemTiming::default();
    let latency = e.take(match o.get("latency") {
        None => Ok(d.latency),
        Some(x) => match x.as_u64() {
            Some(n) if (1..=1000).contains(&n) => Ok(n as u32),
            _ => Err(err("mem.latency", shown(x), LATENCY_ALLOWED)),
        },
    });
    let stall = e.take(match o.get("stall") {
        None => Ok(d.stall),
        Some(x) => match x.as_f64() {
            Some(f) if f.is_finite() && (0.0..=1.0).contains(&f) => Ok(f),
            _ => Err(err("mem.stall", shown(x), STALL_ALLOWED)),
        },
    });
    let seed = e.take(match o.get("seed") {
        None => Ok(d.seed),
        Some(x) => x.as_u64().ok_or_else(|| err("mem.seed", shown(x), SEED_ALLOWED)),
    });
    Some(MemTiming { latency: latency?, stall: stall?, seed: seed? })
}

/// Read a `gpurtl run gpu` input file (JSON); files it names are read
/// relative to `base_dir`. Every violation is reported, each naming its
/// field.
pub fn parse_input(v: &Value, base_dir: &Path, p: &GpuParams) -> Result<Run, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err(
            "(file)",
            shown(v),
            "a JSON object with the keys queues, memory, dump (and optionally mem)",
        ))));
    };
    refuse_unknown(&mut e, obj, &|k| k.to_string(), &TOP_KEYS);
    let queues = match obj.get("queues") {
        None => {
            e.push(err("queues", "(missing)", queues_allowed(p)));
            None
        }
        Some(q) => parse_queues(&mut e, q, p),
    };
    let memory = match obj.get("memory") {
        None => {
            e.push(err("memory", "(missing)", "a list of memory entries (possibly empty)"));
            None
        }
        Some(m) => parse_memory(&mut e, m, base_dir),
    };
    let dump = match obj.get("dump") {
        None => {
            e.push(err("dump", "(missing)", "a list of regions {\"addr\", \"bytes\"} (possibly empty)"));
            None
        }
        Some(d) => parse_dump(&mut e, d),
    };
    let mem = match obj.get("mem") {
        None => Some(MemTiming::default()),
        Some(m) => parse_mem(&mut e, m),
    };
    match (queues, memory, dump, mem) {
        (Some(queues), Some(memory), Some(dump), Some(mem)) if e.is_empty() => Ok(Run { queues, memory, dump, mem }),
        _ => Err(e.stop(None)),
    }
}

/// An output without its cycles (`cycles`, each kernel's `submit`, `start`,
/// `end`): what both engines must agree on (docs/gpu.md).
pub fn untimed(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("cycles");
        if let Some(ks) = m.get_mut("kernels").and_then(Value::as_array_mut) {
            for k in ks.iter_mut().filter_map(Value::as_object_mut) {
                for f in ["submit", "start", "end"] {
                    k.remove(f);
                }
            }
        }
    }
    v
}

/// The `gpurtl run gpu` output file (docs/gpu.md): `null` for the timing
/// fields the model leaves `None`. A queue whose kernel failed has the
/// status `error` and the error `{"cause": "kernel", "addr": A}` (its
/// dispatch's address), and is the top-level `error` when it is the first
/// listed queue with an error.
pub fn output_json(p: &GpuParams, r: &Run, o: &Outcome) -> Value {
    let _ = p;
    let kernels: Vec<Value> = o
        .kernels
        .iter()
        .map(|k| json!({"queue": k.queue, "addr": k.addr, "blocks": k.blocks, "submit": k.submit, "start": k.start, "end": k.end}))
        .collect();
    let trace: Vec<Value> = o.trace.iter().map(|(q, lines)| json!({"queue": q, "lines": lines})).collect();
    let status: Vec<Value> = o
        .status
        .iter()
        .map(|s| {
            json!({
                "queue": s.queue,
                "status": if s.done { "done" } else { "error" },
                "error": s.error.as_ref().map(|(c, a)| json!({"cause": c, "addr": a})),
                "fences": s.fences,
                "kernels": s.kernels,
                "kerr_mask": s.kerr_mask,
                "kerr_addr": s.kerr_addr,
                "kerr_blocks": s.kerr_blocks,
            })
        })
        .collect();
    // The first listed queue whose run ended in an error.
    let error = o
        .status
        .iter()
        .find_map(|s| s.error.as_ref().map(|(c, a)| json!({"queue": s.queue, "cause": c, "addr": a})));
    let k = &o.counters;
    json!({
        "dumps": dumps(&o.memory, &r.dump),
        "kernels": kernels,
        "trace": trace,
        "status": status,
        "error": error,
        "irq": o.irq,
        "counters": {"commands": k.commands, "kernels": k.kernels, "blocks": k.blocks,
                     "failed_blocks": k.failed_blocks, "fences": k.fences, "instructions": k.instructions},
        "cycles": o.cycles,
    })
}
