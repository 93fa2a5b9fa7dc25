//! `gpurtl run cu` files (docs/cu.md, "`gpurtl run cu`"): the input (every
//! violation reported, each naming its path) and the output.

use super::{isa, Block, CuParams, Outcome, Region, Run};
use crate::mem::Memory;
use crate::models::cmdproc::pm4;
use crate::models::{err, shown, InputError, InputErrors, Violations};
use serde_json::{json, Map, Value};
use std::path::Path;

const TOP_KEYS: [&str; 7] = ["program", "memory", "blocks", "smem_bytes", "regs", "dump", "mem_latency"];
const ENTRY_KEYS: [&str; 6] = ["addr", "asm", "isa", "dwords", "bytes", "file"];
const BLOCK_KEYS: [&str; 2] = ["id", "user_data"];
const DUMP_KEYS: [&str; 2] = ["addr", "bytes"];

/// The most bytes one file (`asm` or `file`) may hold, and all of them
/// together.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The most blocks a run has.
pub const MAX_BLOCKS: usize = 4096;
/// The most bytes one dump region has.
pub const MAX_DUMP_BYTES: u64 = 1 << 20;
/// The most bytes all dump regions have together (the output file holds
/// two hex digits a byte: at most 32 MiB of them).
pub const MAX_DUMP_TOTAL: u64 = 16 << 20;

const U32_ALLOWED: &str = "an integer from 0 to 4294967295";

/// Keys of `o` not in `keys`, each a violation named by `at(key)`.
fn refuse_unknown(e: &mut Violations, o: &Map<String, Value>, at: &dyn Fn(&str) -> String, keys: &[&str]) {
    for k in o.keys() {
        if !keys.contains(&k.as_str()) {
            e.push(err(at(k), "(given)", format!("absent: the keys are {}", keys.join(", "))));
        }
    }
}

/// An integer in `lo..=hi` (and `ok`), named `path`.
fn int(x: &Value, path: &str, lo: u64, hi: u64, ok: impl Fn(u64) -> bool, allowed: &str) -> Result<u64, InputError> {
    match x.as_u64() {
        Some(n) if (lo..=hi).contains(&n) && ok(n) => Ok(n),
        _ => Err(err(path, shown(x), allowed)),
    }
}

/// `o[key]`, or the `(missing)` violation.
fn need<'a>(o: &'a Map<String, Value>, key: &str, path: &str, allowed: &str) -> Result<&'a Value, InputError> {
    o.get(key).ok_or_else(|| err(path, "(missing)", allowed))
}

/// Reads a file named by the input (relative to `base_dir`) through the
/// one size-limited reader, counting its bytes against the run's budget
/// `left`.
fn read_file(base_dir: &Path, name: &str, path: &str, left: &mut u64) -> Result<Vec<u8>, InputError> {
    use crate::files::{read_limited, ReadError};
    let full = base_dir.join(name);
    let value = shown(&Value::String(name.to_string()));
    let data = match read_limited(&full, MAX_FILE_BYTES) {
        Ok(data) => data,
        Err(ReadError::Io(x)) => return Err(err(path, &value, format!("a readable file ({x})"))),
        Err(ReadError::TooLarge { size }) => {
            let size = size.map_or(format!("more than {MAX_FILE_BYTES} bytes"), |n| format!("{n} bytes"));
            return Err(err(path, format!("{value}: {size}"), format!("a file of at most {MAX_FILE_BYTES} bytes (16 MiB)")));
        }
    };
    if data.len() as u64 > *left {
        return Err(err(
            path,
            format!("{value}: {} bytes", data.len()),
            format!("within the {MAX_FILE_BYTES} bytes (16 MiB) all files of an input may hold together ({left} left)"),
        ));
    }
    *left -= data.len() as u64;
    Ok(data)
}

/// The bytes of one memory entry (`addr` checked by the caller).
fn entry_bytes(e: &mut Violations, o: &Map<String, Value>, i: usize, base_dir: &Path, left: &mut u64) -> Option<Vec<u8>> {
    let at = |f: &str| format!("memory[{i}].{f}");
    let kinds: Vec<&str> = ["asm", "dwords", "bytes", "file"].into_iter().filter(|k| o.contains_key(*k)).collect();
    let one_of = "given: exactly one of asm (with isa), dwords, bytes, file";
    if kinds.is_empty() {
        e.push(err(format!("memory[{i}]"), "an entry with no data", one_of));
        return None;
    }
    if kinds.len() > 1 {
        for k in &kinds[1..] {
            e.push(err(at(k), "(given)", format!("absent when `{}` is given: exactly one of asm, dwords, bytes, file", kinds[0])));
        }
        return None;
    }
    if kinds[0] != "asm" && o.contains_key("isa") {
        e.push(err(at("isa"), "(given)", "absent: isa goes with asm"));
    }
    let x = &o[kinds[0]];
    match kinds[0] {
        "dwords" => {
            let Some(l) = x.as_array() else {
                e.push(err(at("dwords"), shown(x), "a list of integers from 0 to 4294967295"));
                return None;
            };
            let w = e.each(&at("dwords"), l, |k, v| int(v, &format!("{}[{k}]", at("dwords")), 0, u32::MAX as u64, |_| true, U32_ALLOWED))?;
            Some(w.iter().flat_map(|d| (*d as u32).to_le_bytes()).collect())
        }
        "bytes" => {
            let Some(l) = x.as_array() else {
                e.push(err(at("bytes"), shown(x), "a list of integers from 0 to 255"));
                return None;
            };
            let b = e.each(&at("bytes"), l, |k, v| int(v, &format!("{}[{k}]", at("bytes")), 0, 255, |_| true, "an integer from 0 to 255"))?;
            Some(b.iter().map(|v| *v as u8).collect())
        }
        "file" => {
            let Some(name) = x.as_str() else {
                e.push(err(at("file"), shown(x), "a file name (a string), relative to the input file"));
                return None;
            };
            e.take(read_file(base_dir, name, &at("file"), left))
        }
        _ => {
            let isa_allowed = "\"cu\" or \"pm4\"";
            let isa = match o.get("isa") {
                None => {
                    e.push(err(at("isa"), "(missing)", isa_allowed));
                    None
                }
                Some(v) if v == "cu" || v == "pm4" => v.as_str(),
                Some(v) => {
                    e.push(err(at("isa"), shown(v), isa_allowed));
                    None
                }
            };
            let Some(name) = x.as_str() else {
                e.push(err(at("asm"), shown(x), "an assembly file name (a string), relative to the input file"));
                return None;
            };
            let data = e.take(read_file(base_dir, name, &at("asm"), left))?;
            let isa = isa?;
            let Ok(text) = String::from_utf8(data) else {
                e.push(err(at("asm"), shown(x), "an assembly file in UTF-8 text"));
                return None;
            };
            let result = match isa {
                "cu" => isa::assemble(&text).map(|w| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()),
                _ => pm4::assemble(&text).map(|w| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()),
            };
            match result {
                Ok(b) => Some(b),
                Err(errors) => {
                    let list = errors
                        .iter()
                        .map(|a| {
                            let value = if a.line == 0 {
                                shown(x)
                            } else {
                                format!("{} line {}: `{}`", shown(x), a.line, a.text)
                            };
                            err(at("asm"), value, format!("valid {isa} assembly ({})", a.message))
                        })
                        .collect();
                    e.capped(&at("asm"), list);
                    None
                }
            }
        }
    }
}

pub fn parse_memory(e: &mut Violations, m: &Value, base_dir: &Path) -> Option<Memory> {
    let Some(list) = m.as_array() else {
        e.push(err("memory", shown(m), "a list of memory entries {\"addr\", and one of \"asm\" (with \"isa\"), \"dwords\", \"bytes\", \"file\"}"));
        return None;
    };
    let mut mem = Memory::new();
    let mut good = true;
    let mut left = MAX_FILE_BYTES;
    for (i, x) in list.iter().enumerate() {
        let at = |f: &str| format!("memory[{i}].{f}");
        let Some(o) = x.as_object() else {
            e.push(err(format!("memory[{i}]"), shown(x), "an object {\"addr\", and one of asm, dwords, bytes, file}"));
            good = false;
            continue;
        };
        refuse_unknown(e, o, &|k| at(k), &ENTRY_KEYS);
        let addr = e.take(need(o, "addr", &at("addr"), U32_ALLOWED).and_then(|a| int(a, &at("addr"), 0, u32::MAX as u64, |_| true, U32_ALLOWED)));
        let bytes = entry_bytes(e, o, i, base_dir, &mut left);
        let (Some(addr), Some(bytes)) = (addr, bytes) else {
            good = false;
            continue;
        };
        let end = addr + bytes.len() as u64;
        if end > 1 << 32 {
            e.push(err(
                format!("memory[{i}]"),
                format!("bytes {addr:#x}..{end:#x}"),
                "below 2^32: the entry's last byte at most 0xffffffff",
            ));
            good = false;
            continue;
        }
        mem.load(addr, &bytes);
    }
    good.then_some(mem)
}

fn parse_block(x: &Value, i: usize) -> Result<Block, Vec<InputError>> {
    let at = |f: &str| format!("blocks[{i}].{f}");
    let Some(o) = x.as_object() else {
        return Err(vec![err(format!("blocks[{i}]"), shown(x), "an object {\"id\", \"user_data\"}")]);
    };
    let mut errs = Vec::new();
    for k in o.keys() {
        if !BLOCK_KEYS.contains(&k.as_str()) {
            errs.push(err(at(k), "(given)", format!("absent: the keys are {}", BLOCK_KEYS.join(", "))));
        }
    }
    let id_allowed = "three integers from 0 to 65535";
    let mut id = [0u16; 3];
    match o.get("id") {
        None => errs.push(err(at("id"), "(missing)", id_allowed)),
        Some(v) => match v.as_array() {
            Some(l) if l.len() == 3 && l.iter().all(|c| c.as_u64().is_some_and(|n| n <= 0xFFFF)) => {
                for (k, c) in l.iter().enumerate() {
                    id[k] = c.as_u64().unwrap() as u16;
                }
            }
            _ => errs.push(err(at("id"), shown(v), id_allowed)),
        },
    }
    let ud_allowed = "a list of at most 16 integers from 0 to 4294967295";
    let mut user_data = [0u32; 16];
    if let Some(v) = o.get("user_data") {
        match v.as_array() {
            Some(l) if l.len() <= 16 => {
                for (k, d) in l.iter().enumerate() {
                    match d.as_u64() {
                        Some(n) if n <= u32::MAX as u64 => user_data[k] = n as u32,
                        _ => errs.push(err(format!("{}[{k}]", at("user_data")), shown(d), U32_ALLOWED)),
                    }
                }
            }
            _ => errs.push(err(at("user_data"), shown(v), ud_allowed)),
        }
    }
    if errs.is_empty() {
        Ok(Block { id, user_data })
    } else {
        Err(errs)
    }
}

fn parse_blocks(e: &mut Violations, b: &Value) -> Option<Vec<Block>> {
    let allowed = format!("a list of 1 to {MAX_BLOCKS} blocks {{\"id\", \"user_data\"}}");
    let list = match b.as_array() {
        Some(l) if (1..=MAX_BLOCKS).contains(&l.len()) => l,
        Some(l) => {
            e.push(err("blocks", format!("a list of {} blocks", l.len()), allowed));
            return None;
        }
        None => {
            e.push(err("blocks", shown(b), allowed));
            return None;
        }
    };
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for (i, x) in list.iter().enumerate() {
        match parse_block(x, i) {
            Ok(b) => out.push(b),
            Err(v) => errs.extend(v),
        }
    }
    let ok = errs.is_empty();
    e.capped("blocks", errs);
    ok.then_some(out)
}

pub fn parse_dump(e: &mut Violations, d: &Value) -> Option<Vec<Region>> {
    let Some(list) = d.as_array() else {
        e.push(err("dump", shown(d), "a list of regions {\"addr\", \"bytes\"}"));
        return None;
    };
    let mut out = Vec::new();
    let mut good = true;
    let mut total = 0;
    for (i, x) in list.iter().enumerate() {
        let at = |f: &str| format!("dump[{i}].{f}");
        let Some(o) = x.as_object() else {
            e.push(err(format!("dump[{i}]"), shown(x), "an object {\"addr\", \"bytes\"}"));
            good = false;
            continue;
        };
        refuse_unknown(e, o, &|k| at(k), &DUMP_KEYS);
        let addr = e.take(need(o, "addr", &at("addr"), U32_ALLOWED).and_then(|a| int(a, &at("addr"), 0, u32::MAX as u64, |_| true, U32_ALLOWED)));
        let bytes_allowed = format!("an integer from 1 to {MAX_DUMP_BYTES}");
        let bytes = e.take(need(o, "bytes", &at("bytes"), &bytes_allowed).and_then(|b| int(b, &at("bytes"), 1, MAX_DUMP_BYTES, |_| true, &bytes_allowed)));
        let (Some(addr), Some(bytes)) = (addr, bytes) else {
            good = false;
            continue;
        };
        if addr + bytes > 1 << 32 {
            e.push(err(format!("dump[{i}]"), format!("bytes {addr:#x}..{:#x}", addr + bytes), "below 2^32: the region's last byte at most 0xffffffff"));
            good = false;
            continue;
        }
        total += bytes;
        if total > MAX_DUMP_TOTAL {
            e.push(err(
                format!("dump[{i}].bytes"),
                bytes,
                format!("within the {MAX_DUMP_TOTAL} bytes (16 MiB) all dump regions may hold together ({} left)", MAX_DUMP_TOTAL - (total - bytes)),
            ));
            good = false;
            break;
        }
        out.push(Region { addr: addr as u32, bytes: bytes as u32 });
    }
    good.then_some(out)
}

/// Read a `gpurtl run cu` input file (JSON); files it names are read
/// relative to `base_dir`. Every violation is reported, each naming its
/// path.
pub fn parse_input(v: &Value, base_dir: &Path, p: &CuParams) -> Result<Run, InputErrors> {
    let mut e = Violations::default();
    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), format!("a JSON object with the keys {}", TOP_KEYS.join(", "))))));
    };
    refuse_unknown(&mut e, obj, &|k| k.to_string(), &TOP_KEYS);
    let sb = p.smem_bytes();

    let prog_allowed = "a multiple of 256 from 0 to 4294967040";
    let program = e.take(need(obj, "program", "program", prog_allowed).and_then(|x| int(x, "program", 0, u32::MAX as u64, |n| n % 256 == 0, prog_allowed)));
    let memory = match obj.get("memory") {
        None => {
            e.push(err("memory", "(missing)", "a list of memory entries (possibly empty)"));
            None
        }
        Some(m) => parse_memory(&mut e, m, base_dir),
    };
    let blocks = match obj.get("blocks") {
        None => {
            e.push(err("blocks", "(missing)", format!("a list of 1 to {MAX_BLOCKS} blocks {{\"id\", \"user_data\"}}")));
            None
        }
        Some(b) => parse_blocks(&mut e, b),
    };
    let smem_allowed = format!("a multiple of 4 from 0 to {sb} (the scratchpad's bytes)");
    let smem_bytes = e.take(need(obj, "smem_bytes", "smem_bytes", &smem_allowed).and_then(|x| int(x, "smem_bytes", 0, sb, |n| n % 4 == 0, &smem_allowed)));
    let regs_allowed = format!("an integer from 3 to {} (the unit's registers)", p.regs);
    let regs = e.take(need(obj, "regs", "regs", &regs_allowed).and_then(|x| int(x, "regs", 3, p.regs as u64, |_| true, &regs_allowed)));
    let dump = match obj.get("dump") {
        None => {
            e.push(err("dump", "(missing)", "a list of regions {\"addr\", \"bytes\"} (possibly empty)"));
            None
        }
        Some(d) => parse_dump(&mut e, d),
    };
    let lat_allowed = "an integer from 1 to 1000";
    let mem_latency = e.take(match obj.get("mem_latency") {
        None => Ok(10),
        Some(x) => int(x, "mem_latency", 1, 1000, |_| true, lat_allowed),
    });
    match (program, memory, blocks, smem_bytes, regs, dump, mem_latency) {
        (Some(program), Some(memory), Some(blocks), Some(smem_bytes), Some(regs), Some(dump), Some(mem_latency)) if e.is_empty() => Ok(Run {
            program: program as u32,
            memory,
            blocks,
            smem_bytes: smem_bytes as u32,
            regs: regs as u32,
            mem_latency: mem_latency as u32,
            dump,
        }),
        _ => Err(e.stop(None)),
    }
}

/// The dumped regions: `{"addr", "data"}`, data lower-case hex, the byte at
/// `addr` first.
pub fn dumps(memory: &Memory, regions: &[Region]) -> Vec<Value> {
    regions
        .iter()
        .map(|r| {
            let data: String = memory.bytes(r.addr as u64, r.bytes as usize).iter().map(|b| format!("{b:02x}")).collect();
            json!({"addr": r.addr, "data": data})
        })
        .collect()
}

/// The `gpurtl run cu` output file.
pub fn output_json(p: &CuParams, r: &Run, o: &Outcome) -> Value {
    let _ = p;
    let first = o.blocks.iter().map(|b| b.dispatch_cycle).min().unwrap_or(0);
    let blocks: Vec<Value> = o
        .blocks
        .iter()
        .map(|b| json!({"id": b.id, "status": b.status.name(), "pc": b.pc, "cycles": b.complete_cycle - b.dispatch_cycle}))
        .collect();
    let trace: Vec<Value> = o
        .trace
        .iter()
        .map(|t| json!({"cycle": t.cycle - first, "slot": t.slot, "block": t.block, "pc": t.pc, "insn": isa::text(t.insn)}))
        .collect();
    let k = &o.counters;
    json!({
        "dumps": dumps(&o.memory, &r.dump),
        "blocks": blocks,
        "trace": trace,
        "counters": {"instructions": k.instructions, "cdl": k.cdl, "ld": k.ld, "st": k.st,
                     "act": k.act, "cmp": k.cmp, "exp": k.exp, "mma": k.mma, "tex": k.tex, "loads": k.loads,
                     "rd_beats": k.rd_beats, "wr_beats": k.wr_beats, "texel_fetches": k.texel_fetches},
        "cycles": o.cycles,
    })
}
