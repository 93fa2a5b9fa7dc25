//! `gpurtl run cmdproc` files: the input (every violation reported) and
//! the output.

use super::{Outcome, Pipeline, Registers, Status, Workload};
use crate::models::{err, shown, InputError, InputErrors, Violations};
use gpurtl_params::cmdproc::CmdprocParams;
use serde_json::{json, Map, Value};

/// The keys of an input file, of its `registers`, of a memory run and of
/// `pipeline`.
const TOP_KEYS: [&str; 4] = ["registers", "memory", "mem_latency", "pipeline"];
const REGISTER_KEYS: [&str; 7] = ["cmd_base", "cmd_size", "prim_base", "prim_size", "state", "state_ptr", "irq_enable"];
const RUN_KEYS: [&str; 2] = ["addr", "dwords"];
const PIPELINE_KEYS: [&str; 2] = ["stall", "seed"];
/// With `compute = true`, `pipeline` may also hold `kerr`.
const PIPELINE_KEYS_COMPUTE: [&str; 3] = ["stall", "seed", "kerr"];

const U32_ALLOWED: &str = "an integer from 0 to 4294967295";
const ADDR_ALLOWED: &str = "a multiple of 4 from 0 to 4294967292";
const PIPELINE_ALLOWED: &str = "an object {\"stall\": p, \"seed\": s}";
const STALL_ALLOWED: &str = "a number from 0 to 1 (the probability that cmd_ready is 0 in a cycle)";
const SEED_ALLOWED: &str = "an integer from 0 to 18446744073709551615";
const PIPELINE_ALLOWED_COMPUTE: &str = "an object {\"stall\": p, \"seed\": s} (and optionally \"kerr\": [command ids])";
const KERR_ALLOWED: &str = "a list of command ids, integers from 0 to 65535 (kerr_i is 1 while a command with one of them is presented)";
const KERR_ID_ALLOWED: &str = "an integer from 0 to 65535 (a command id)";
const KERR_COMPUTE_ONLY: &str = "absent with compute = false (kerr_i is an input of compute mode only)";

/// Keys of `o` not in `keys`, each a violation named by `at(key)`.
fn refuse_unknown(e: &mut Violations, o: &Map<String, Value>, at: &dyn Fn(&str) -> String, keys: &[&str]) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: the keys are {}", keys.join(", "))));
        }
    }
}

/// A 32-bit value (`four`: a multiple of 4), named `path`.
fn word(x: &Value, path: &str, four: bool) -> Result<u32, InputError> {
    match x.as_u64() {
        Some(n) if n <= u32::MAX as u64 && (!four || n % 4 == 0) => Ok(n as u32),
        _ => Err(err(path, shown(x), if four { ADDR_ALLOWED } else { U32_ALLOWED })),
    }
}

/// `o[key]` as a 32-bit value, `default` when absent (missing if `None`).
fn word_at(o: &Map<String, Value>, key: &str, path: &str, four: bool, default: Option<u32>) -> Result<u32, InputError> {
    match o.get(key) {
        None => default.ok_or_else(|| err(path, "(missing)", if four { ADDR_ALLOWED } else { U32_ALLOWED })),
        Some(x) => word(x, path, four),
    }
}

fn parse_registers(e: &mut Violations, r: &Value, p: &CmdprocParams) -> Option<Registers> {
    let Some(o) = r.as_object() else {
        e.push(err("registers", shown(r), format!("an object with the keys {}", REGISTER_KEYS.join(", "))));
        return None;
    };
    refuse_unknown(e, o, &|k| format!("registers.{k}"), &REGISTER_KEYS);
    let cmd_base = e.take(word_at(o, "cmd_base", "registers.cmd_base", true, None));
    let cmd_size = e.take(word_at(o, "cmd_size", "registers.cmd_size", true, None));
    let prim_base = e.take(word_at(o, "prim_base", "registers.prim_base", true, Some(0)));
    let prim_size = e.take(word_at(o, "prim_size", "registers.prim_size", false, Some(0)));
    let state_allowed = format!("a list of at most {} integers from 0 to 4294967295 (state_regs)", p.state_regs);
    let state = match o.get("state") {
        None => Some(Vec::new()),
        Some(s) => match s.as_array() {
            None => {
                e.push(err("registers.state", shown(s), state_allowed));
                None
            }
            Some(l) if l.len() > p.state_regs as usize => {
                e.push(err("registers.state", format!("a list of {} values", l.len()), state_allowed));
                None
            }
            Some(l) => e.each("registers.state", l, |k, x| word(x, &format!("registers.state[{k}]"), false)),
        },
    };
    let state_ptr = e.take(word_at(o, "state_ptr", "registers.state_ptr", false, Some(0)));
    let irq_enable = e.take(word_at(o, "irq_enable", "registers.irq_enable", false, Some(3)));
    Some(Registers {
        cmd_base: cmd_base?,
        cmd_size: cmd_size?,
        prim_base: prim_base?,
        prim_size: prim_size?,
        state: state?,
        state_ptr: state_ptr?,
        irq_enable: irq_enable?,
    })
}

/// `"pipeline": {"stall": p, "seed": s}` (both keys required); with
/// `compute = true` also `"kerr": [ids]` (optional; with `compute = false`
/// the key is refused, naming it).
fn parse_pipeline(e: &mut Violations, v: &Value, p: &CmdprocParams) -> Option<Pipeline> {
    let Some(o) = v.as_object() else {
        e.push(err("pipeline", shown(v), if p.compute { PIPELINE_ALLOWED_COMPUTE } else { PIPELINE_ALLOWED }));
        return None;
    };
    if p.compute {
        refuse_unknown(e, o, &|k| format!("pipeline.{k}"), &PIPELINE_KEYS_COMPUTE);
    } else {
        // "kerr" gets its own message below; other unknown keys the usual one.
        for k in o.keys().filter(|k| *k != "kerr") {
            if !PIPELINE_KEYS.contains(&k.as_str()) {
                e.push(err(format!("pipeline.{k}"), "(given)", format!("absent: the keys are {}", PIPELINE_KEYS.join(", "))));
            }
        }
    }
    let stall = e.take(match o.get("stall") {
        None => Err(err("pipeline.stall", "(missing)", STALL_ALLOWED)),
        Some(x) => match x.as_f64() {
            Some(f) if f.is_finite() && (0.0..=1.0).contains(&f) => Ok(f),
            _ => Err(err("pipeline.stall", shown(x), STALL_ALLOWED)),
        },
    });
    let seed = e.take(match o.get("seed") {
        None => Err(err("pipeline.seed", "(missing)", SEED_ALLOWED)),
        Some(x) => x.as_u64().ok_or_else(|| err("pipeline.seed", shown(x), SEED_ALLOWED)),
    });
    let kerr = match o.get("kerr") {
        None => Some(Vec::new()),
        Some(x) if !p.compute => {
            e.push(err("pipeline.kerr", shown(x), KERR_COMPUTE_ONLY));
            None
        }
        Some(x) => match x.as_array() {
            None => {
                e.push(err("pipeline.kerr", shown(x), KERR_ALLOWED));
                None
            }
            Some(l) => e.each("pipeline.kerr", l, |k, id| match id.as_u64() {
                Some(n) if n <= u16::MAX as u64 => Ok(n as u16),
                _ => Err(err(format!("pipeline.kerr[{k}]"), shown(id), KERR_ID_ALLOWED)),
            }),
        },
    };
    Some(Pipeline { stall: stall?, seed: seed?, kerr: kerr? })
}

/// The memory runs; each checked against the good runs before it
/// (`(index, addr, dwords)`) for overlap, modulo 2^32.
fn parse_memory(e: &mut Violations, m: &Value) -> Option<Vec<(u32, Vec<u32>)>> {
    let Some(list) = m.as_array() else {
        e.push(err("memory", shown(m), "a list of dword runs {\"addr\", \"dwords\"}"));
        return None;
    };
    let mut good: Vec<(usize, u32, Vec<u32>)> = Vec::new();
    let mut all_good = true;
    for (i, x) in list.iter().enumerate() {
        let at = |f: &str| format!("memory[{i}].{f}");
        let Some(o) = x.as_object() else {
            e.push(err(format!("memory[{i}]"), shown(x), "an object {\"addr\", \"dwords\"}"));
            all_good = false;
            continue;
        };
        refuse_unknown(e, o, &|k| at(k), &RUN_KEYS);
        let addr = e.take(word_at(o, "addr", &at("addr"), true, None));
        let dwords_allowed = "a list of integers from 0 to 4294967295";
        let dwords = match o.get("dwords") {
            None => {
                e.push(err(at("dwords"), "(missing)", dwords_allowed));
                None
            }
            Some(d) => match d.as_array() {
                None => {
                    e.push(err(at("dwords"), shown(d), dwords_allowed));
                    None
                }
                Some(l) => e.each(&at("dwords"), l, |k, v| word(v, &format!("{}[{k}]", at("dwords")), false)),
            },
        };
        let (Some(addr), Some(dwords)) = (addr, dwords) else {
            all_good = false;
            continue;
        };
        // Dword indices modulo 2^30 (byte addresses modulo 2^32).
        const DW: u64 = 1 << 30;
        let (a1, l1) = ((addr / 4) as u64, dwords.len() as u64);
        let bytes = |a: u32, l: u64| format!("bytes {:#x}..{:#x}", a, a as u64 + 4 * l);
        let clash = good.iter().find(|(_, a2, d2)| {
            let (a2, l2) = ((*a2 / 4) as u64, d2.len() as u64);
            l1 > 0 && l2 > 0 && ((a1 + DW - a2) % DW < l2 || (a2 + DW - a1) % DW < l1)
        });
        if let Some((j, a2, d2)) = clash {
            e.push(err(format!("memory[{i}]"), bytes(addr, l1), format!("not overlapping memory[{j}] ({})", bytes(*a2, d2.len() as u64))));
            all_good = false;
            continue;
        }
        good.push((i, addr, dwords));
    }
    all_good.then(|| good.into_iter().map(|(_, a, d)| (a, d)).collect())
}

/// Read a `gpurtl run cmdproc` input file (JSON); every violation, each naming its field.
pub fn parse_input(v: &Value, p: &CmdprocParams) -> Result<Workload, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with the keys registers, memory, mem_latency (and optionally pipeline)"))));
    };
    refuse_unknown(&mut e, obj, &|k| k.to_string(), &TOP_KEYS);
    let registers = match obj.get("registers") {
        None => {
            e.push(err("registers", "(missing)", format!("an object with the keys {}", REGISTER_KEYS.join(", "))));
            None
        }
        Some(r) => parse_registers(&mut e, r, p),
    };
    let memory = match obj.get("memory") {
        None => {
            e.push(err("memory", "(missing)", "a list of dword runs {\"addr\", \"dwords\"}"));
            None
        }
        Some(m) => parse_memory(&mut e, m),
    };
    let lat_allowed = "an integer from 1 to 1000";
    let mem_latency = e.take(match obj.get("mem_latency") {
        None => Err(err("mem_latency", "(missing)", lat_allowed)),
        Some(x) => match x.as_u64() {
            Some(n) if (1..=1000).contains(&n) => Ok(n as u32),
            _ => Err(err("mem_latency", shown(x), lat_allowed)),
        },
    });
    let pipeline = match obj.get("pipeline") {
        None => Some(Pipeline::default()),
        Some(x) => parse_pipeline(&mut e, x, p),
    };
    match (registers, memory, mem_latency, pipeline) {
        (Some(registers), Some(memory), Some(mem_latency), Some(pipeline)) if e.is_empty() => {
            Ok(Workload { registers, memory, mem_latency, pipeline })
        }
        _ => Err(e.stop(None)),
    }
}

/// The `gpurtl run cmdproc` output file.
pub fn output_json(p: &CmdprocParams, o: &Outcome) -> Value {
    // A record holds min(n, 4) payload dwords, min(n, 6) in compute mode.
    let held = if p.compute { 6 } else { 4 };
    let commands: Vec<Value> = o
        .commands
        .iter()
        .map(|c| {
            let r = &c.record;
            let mut v = json!({
                "id": r.id,
                "addr": r.addr,
                "opcode": (r.header >> 8) & 0xFF,
                "header": r.header,
                "dwords": r.count,
                "payload": r.p[..r.count.min(held) as usize].to_vec(),
                "prims": c.prims,
            });
            // A state reader's state, after `prims`; no other record has it.
            if let Some(st) = &c.state {
                v.as_object_mut().unwrap().insert("state".into(), json!(st));
            }
            // A dispatch's snapshot (compute mode), after `state`.
            if let Some(snap) = &c.sh {
                v.as_object_mut().unwrap().insert("sh".into(), json!(snap));
            }
            v
        })
        .collect();
    let writes: Vec<Value> = o.memory_writes.iter().map(|(a, d)| json!({"addr": a, "dwords": d})).collect();
    let mut out = Map::new();
    out.insert("commands".into(), json!(commands));
    out.insert("state_table".into(), json!(o.state_table));
    // The compute registers at the end, in compute mode only.
    if let Some(t) = &o.sh_table {
        out.insert("sh_table".into(), json!(t));
    }
    out.insert("status".into(), json!(match o.status { Status::Done => "done", Status::Error => "error" }));
    out.insert("error".into(), json!(o.error.map(|(c, a)| json!({"cause": c.name(), "addr": a}))));
    out.insert("irq".into(), json!(o.irq));
    out.insert("memory_writes".into(), json!(writes));
    out.insert("trace".into(), json!(o.trace));
    out.insert("cycles".into(), json!(o.cycles));
    Value::Object(out)
}
