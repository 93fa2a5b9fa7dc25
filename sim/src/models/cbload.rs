//! Golden model of the constant-buffer burst load unit, written from
//! `docs/cbload.md` only.
//!
//! Behaviour: one instruction at a time, in order. Each instruction is checked
//! for errors (view, misaligned, size, range, in that order); an instruction
//! with an error writes nothing, reads nothing and leaves the out-of-bounds
//! flag alone. Otherwise registers `dest .. dest+N-1` get, byte `i` of register
//! `dest+j` with `r = j*GB + i`:
//!
//! ```text
//! mem[(base + off + r) mod 2^addr_bits]   if r < len and off + r < size_of_view
//! 0                                       otherwise
//! ```
//!
//! Timing: the recurrence of the spec, per instruction accepted at `a`:
//!
//! ```text
//! req_0 = a + 2
//! req_k = max(req_{k-1} + 1, t_{k-O} + 1)        0 < k < R  (second term if k >= O)
//! t_{-1} = a + 1
//! t_k   = max(req_k + L, t_{k-1} + 1)            k < R      (real beat)
//! t_k   = t_{k-1} + 1                            R <= k < B (beyond the view)
//! response at t_{B-1} + 1, next accept at t_{B-1} + 2
//! error: response at a + 2, next accept at a + 3
//! ```

use super::{err, shown, InputErrors, Violations};
use gpurtl_params::cbload::CbloadParams;
use gpurtl_params::cbload::ErrorKind;
use num_bigint::BigUint;
use super::parse_hex;
use serde_json::Value;

/// `RB`: bytes per memory beat.
fn rb(p: &CbloadParams) -> u64 {
    p.read_bytes() as u64
}
/// `GB`: bytes per register.
fn gb(p: &CbloadParams) -> u64 {
    p.reg_bytes() as u64
}
/// `MAXLEN`: most bytes one burst may load.
fn maxlen(p: &CbloadParams) -> u64 {
    p.max_len() as u64
}
/// 2^addr_bits - 1.
fn addr_mask(p: &CbloadParams) -> u64 {
    (1u64 << p.addr_bits) - 1
}

/// A constant buffer view: `data` lives in memory at `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub base: u64,
    pub size: u64,
    pub data: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offset {
    Imm(u64),
    Reg(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub dest: u32,
    pub view: u32,
    pub offset: Offset,
    pub burst: bool,
    /// Bytes; only used when `burst`.
    pub size: u32,
    pub tag: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub tag: u32,
    pub error: ErrorKind,
}

/// `views[i]` is view `i`; views with an index `< cfg.views` not listed have
/// base 0 and size 0. `init_regs` are applied in order (a later entry for the
/// same register wins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub mem_latency: u32,
    pub views: Vec<View>,
    pub init_regs: Vec<(u32, BigUint)>,
    pub instrs: Vec<Instr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub regs: Vec<BigUint>,
    pub responses: Vec<Response>,
    pub oob: bool,
    pub oob_tag: Option<u32>,
    pub cycles: u64,
}

/// The byte at `addr`: from the first view (in list order) whose `data`,
/// placed at `(base + i) mod 2^addr_bits`, covers it; zero if none does.
fn mem_byte(cfg: &CbloadParams, views: &[View], addr: u64) -> u8 {
    let mask = addr_mask(cfg);
    for v in views {
        let d = addr.wrapping_sub(v.base) & mask;
        if d < v.data.len() as u64 {
            return v.data[d as usize];
        }
    }
    0
}

/// (base, size) of view `idx` (`idx < cfg.views`): missing views are (0, 0).
fn view_geometry(w: &Workload, idx: u32) -> (u64, u64) {
    match w.views.get(idx as usize) {
        Some(v) => (v.base, v.size),
        None => (0, 0),
    }
}

/// Request and beat arrival times of one instruction accepted at `a` with
/// `b` beats of which the first `r` are real, `o` reads in flight at most and
/// memory latency `l`. Returns (`req_0..req_{r-1}`, `t_0..t_{b-1}`).
fn schedule(a: u64, b: u64, r: u64, o: u64, l: u64) -> (Vec<u64>, Vec<u64>) {
    let mut req: Vec<u64> = Vec::new();
    let mut t: Vec<u64> = Vec::new();
    for k in 0..b {
        let t_prev = if k == 0 { a + 1 } else { t[k as usize - 1] };
        if k < r {
            let rq = if k == 0 {
                a + 2
            } else {
                let mut x = req[k as usize - 1] + 1;
                if k >= o {
                    x = x.max(t[(k - o) as usize] + 1);
                }
                x
            };
            req.push(rq);
            t.push((rq + l).max(t_prev + 1));
        } else {
            t.push(t_prev + 1);
        }
    }
    (req, t)
}

/// The error of an instruction with offset `off`, per the spec's order.
fn check(cfg: &CbloadParams, ins: &Instr, off: u64) -> ErrorKind {
    let len = if ins.burst { ins.size as u64 } else { gb(cfg) };
    let n = len.div_ceil(gb(cfg));
    if ins.view >= cfg.views {
        ErrorKind::View
    } else if !off.is_multiple_of(rb(cfg)) {
        ErrorKind::Misaligned
    } else if ins.burst && (ins.size == 0 || ins.size as u64 > maxlen(cfg)) {
        ErrorKind::Size
    } else if ins.dest as u64 + n > cfg.regs as u64 {
        ErrorKind::Range
    } else {
        ErrorKind::None
    }
}

/// Results and exact cycle count per docs/cbload.md (memory latency =
/// `w.mem_latency`, no stalls).
pub fn run(cfg: &CbloadParams, w: &Workload) -> Outcome {
    let gb = gb(cfg);
    let rb = rb(cfg);
    let mask = addr_mask(cfg);
    let reg_mask = (BigUint::from(1u32) << cfg.reg_bits) - BigUint::from(1u32);
    let mut regs = vec![BigUint::default(); cfg.regs as usize];
    for (r, v) in &w.init_regs {
        if let Some(slot) = regs.get_mut(*r as usize) {
            *slot = v & &reg_mask;
        }
    }
    let mut responses = Vec::new();
    let mut oob = false;
    let mut oob_tag = None;

    let mut accept: u64 = 0; // the next instruction's accept cycle
    let mut last_response: u64 = 0;

    for ins in &w.instrs {
        let a = accept;
        if crate::budget::over(a) {
            break;
        }
        // The offset: immediate, or the low addr_bits of a register as it is
        // now (after every earlier instruction). A register index beyond the
        // register file reads as zero.
        let off = match ins.offset {
            Offset::Imm(x) => x & mask,
            Offset::Reg(r) => {
                let v = regs.get(r as usize).cloned().unwrap_or_default();
                let low = v & BigUint::from(mask);
                low.iter_u64_digits().next().unwrap_or(0)
            }
        };
        let error = check(cfg, ins, off);
        responses.push(Response { tag: ins.tag, error });
        if error != ErrorKind::None {
            last_response = a + 2;
            accept = a + 3;
            continue;
        }

        let len = if ins.burst { ins.size as u64 } else { gb };
        let n = len.div_ceil(gb);
        let (base, vsize) = view_geometry(w, ins.view);

        // Data.
        for j in 0..n {
            let mut bytes = Vec::with_capacity(gb as usize);
            for i in 0..gb {
                let r = j * gb + i;
                let byte = if r < len && off + r < vsize {
                    mem_byte(cfg, &w.views, (base + off + r) & mask)
                } else {
                    0
                };
                bytes.push(byte);
            }
            regs[(ins.dest as u64 + j) as usize] = BigUint::from_bytes_le(&bytes);
        }

        // Out of bounds.
        if off + len > vsize {
            if !oob {
                oob_tag = Some(ins.tag);
            }
            oob = true;
        }

        // Timing.
        let b = len.div_ceil(rb);
        let real = if off >= vsize { 0 } else { b.min((vsize - off).div_ceil(rb)) };
        let (_, t) = schedule(a, b, real, cfg.max_outstanding as u64, w.mem_latency as u64);
        let t_last = t[b as usize - 1];
        last_response = t_last + 1;
        accept = t_last + 2;
    }

    let cycles = if w.instrs.is_empty() { 0 } else { last_response };
    crate::budget::spend(cycles);
    Outcome { regs, responses, oob, oob_tag, cycles }
}

/// A non-negative JSON integer, if it is one.
fn uint(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// Parse and validate an input file (docs/cbload.md "input"), every rule
/// there; every violation is reported.
pub fn parse_input(v: &Value, cfg: &CbloadParams) -> Result<Workload, InputErrors> {
    let rb = rb(cfg);
    let maxlen = maxlen(cfg);
    let addr_max = addr_mask(cfg);
    let base_max = addr_max + 1 - rb;
    let tag_max = (1u64 << cfg.tag_bits) - 1;
    let reg_max = cfg.regs as u64 - 1;
    let view_max = cfg.views as u64 - 1;
    let mut e = Violations::default();

    let Some(obj) = v.as_object() else {
        return Err(e.stop(Some(err("(file)", shown(v), "a JSON object with an `instructions` list"))));
    };
    for k in obj.keys() {
        if !["mem_latency", "views", "regs", "instructions"].contains(&k.as_str()) {
            e.push(err(k.as_str(), "(given)", "absent: keys are mem_latency, views, regs, instructions"));
        }
    }
    // A non-negative integer in `range`, or the violation.
    let int = |f: &str, x: &Value, ok: &dyn Fn(u64) -> bool, allowed: &str| match uint(x) {
        Some(n) if ok(n) => Ok(n),
        _ => Err(err(f, shown(x), allowed)),
    };

    // mem_latency
    let mem_latency = e.take(match obj.get("mem_latency") {
        None => Ok(10),
        Some(x) => int("mem_latency", x, &|l| (1..=1000).contains(&l), "an integer from 1 to 1000").map(|l| l as u32),
    });

    // views
    let mut views: Vec<View> = Vec::new();
    if let Some(vs) = obj.get("views") {
        let list_of = format!("a list of at most {} views", cfg.views);
        match vs.as_array() {
            None => e.push(err("views", shown(vs), list_of)),
            Some(a) if a.len() as u64 > cfg.views as u64 => e.push(err("views", format!("a list of {} views", a.len()), list_of)),
            Some(a) => {
                for (i, x) in a.iter().enumerate() {
                    if let Some(view) = parse_view(&mut e, i, x, &views, rb, base_max, addr_max) {
                        views.push(view);
                    }
                }
            }
        }
    }

    // regs
    let mut init_regs = Vec::new();
    if let Some(rs) = obj.get("regs") {
        match rs.as_array() {
            None => e.push(err("regs", shown(rs), "a list of {\"reg\", \"value\"} objects")),
            Some(a) => {
                for (i, x) in a.iter().enumerate() {
                    let at = |f: &str| format!("regs[{i}].{f}");
                    let Some(o) = x.as_object() else {
                        e.push(err(format!("regs[{i}]"), shown(x), "an object"));
                        continue;
                    };
                    for k in o.keys() {
                        if !["reg", "value"].contains(&k.as_str()) {
                            e.push(err(at(k), "(given)", "absent: keys are reg, value"));
                        }
                    }
                    let reg_allowed = format!("an integer from 0 to {reg_max}");
                    let reg = e.take(match o.get("reg") {
                        None => Err(err(at("reg"), "(missing)", reg_allowed)),
                        Some(r) => int(&at("reg"), r, &|n| n <= reg_max, &reg_allowed).map(|n| n as u32),
                    });
                    let value_allowed = format!("a hex string \"0x...\" of at most {} bits", cfg.reg_bits);
                    let value = e.take(match o.get("value") {
                        None => Err(err(at("value"), "(missing)", value_allowed)),
                        Some(s) => match parse_hex(s) {
                            Some(n) if n.bits() <= cfg.reg_bits as u64 => Ok(n),
                            _ => Err(err(at("value"), shown(s), value_allowed)),
                        },
                    });
                    if let (Some(reg), Some(value)) = (reg, value) {
                        init_regs.push((reg, value));
                    }
                }
            }
        }
    }

    // instructions
    let mut instrs = Vec::new();
    match obj.get("instructions") {
        None => e.push(err("instructions", "(missing)", "a list of instructions")),
        Some(is) => match is.as_array() {
            None => e.push(err("instructions", shown(is), "a list of instructions")),
            Some(is) => {
                for (i, x) in is.iter().enumerate() {
                    let at = |f: &str| format!("instructions[{i}].{f}");
                    let Some(o) = x.as_object() else {
                        e.push(err(format!("instructions[{i}]"), shown(x), "an object"));
                        continue;
                    };
                    for k in o.keys() {
                        if !["dest", "view", "offset", "offset_reg", "burst", "size", "tag"].contains(&k.as_str()) {
                            e.push(err(at(k), "(given)", "absent: keys are dest, view, offset, offset_reg, burst, size, tag"));
                        }
                    }
                    let dest_allowed = format!("an integer from 0 to {reg_max}");
                    let dest = e.take(match o.get("dest") {
                        None => Err(err(at("dest"), "(missing)", dest_allowed)),
                        Some(d) => int(&at("dest"), d, &|n| n <= reg_max, &dest_allowed).map(|n| n as u32),
                    });
                    let view_allowed = format!("an integer from 0 to {view_max}");
                    let view = e.take(match o.get("view") {
                        None => Err(err(at("view"), "(missing)", view_allowed)),
                        Some(d) => int(&at("view"), d, &|n| n <= view_max, &view_allowed).map(|n| n as u32),
                    });
                    let offset = e.take(match (o.get("offset"), o.get("offset_reg")) {
                        (Some(_), Some(_)) => {
                            Err(err(at("offset_reg"), "(given)", "absent when `offset` is given: exactly one of offset, offset_reg"))
                        }
                        (None, None) => Err(err(at("offset"), "(missing)", "given: exactly one of offset, offset_reg")),
                        (Some(d), None) => {
                            let allowed = format!("an integer multiple of {rb} from 0 to {base_max}");
                            int(&at("offset"), d, &|n| n <= addr_max && n.is_multiple_of(rb), &allowed).map(Offset::Imm)
                        }
                        (None, Some(d)) => {
                            let allowed = format!("an integer from 0 to {reg_max}");
                            int(&at("offset_reg"), d, &|n| n <= reg_max, &allowed).map(|n| Offset::Reg(n as u32))
                        }
                    });
                    let burst = e.take(match o.get("burst") {
                        None => Ok(false),
                        Some(Value::Bool(b)) => Ok(*b),
                        Some(b) => Err(err(at("burst"), shown(b), "true or false")),
                    });
                    let size_allowed = format!("an integer from 1 to {maxlen} (given with burst)");
                    let size = e.take(match (burst, o.get("size")) {
                        (Some(true), None) => Err(err(at("size"), "(missing)", size_allowed)),
                        (Some(true), Some(s)) => int(&at("size"), s, &|n| (1..=maxlen).contains(&n), &size_allowed).map(|n| n as u32),
                        (Some(false), Some(s)) => Err(err(at("size"), shown(s), "absent without burst")),
                        (_, _) => Ok(0),
                    });
                    let tag_allowed = format!("an integer from 0 to {tag_max}");
                    let tag = e.take(match o.get("tag") {
                        None => Ok(0),
                        Some(t) => int(&at("tag"), t, &|n| n <= tag_max, &tag_allowed).map(|n| n as u32),
                    });
                    if let (Some(dest), Some(view), Some(offset), Some(burst), Some(size), Some(tag)) = (dest, view, offset, burst, size, tag) {
                        instrs.push(Instr { dest, view, offset, burst, size, tag });
                    }
                }
            }
        },
    }
    let mem_latency = mem_latency.unwrap_or(10);
    e.finish(|| Workload { mem_latency, views, init_regs, instrs })
}

/// One view, `views[i]`, checked against the views before it (`earlier`);
/// its violations go to `e`.
fn parse_view(e: &mut Violations, i: usize, x: &Value, earlier: &[View], rb: u64, base_max: u64, addr_max: u64) -> Option<View> {
    let at = |f: &str| format!("views[{i}].{f}");
    let Some(o) = x.as_object() else {
        e.push(err(format!("views[{i}]"), shown(x), "an object"));
        return None;
    };
    for k in o.keys() {
        if !["base", "size", "data"].contains(&k.as_str()) {
            e.push(err(at(k), "(given)", "absent: keys are base, size, data"));
        }
    }
    let base_allowed = format!("an integer multiple of {rb} from 0 to {base_max}");
    let base = e.take(match o.get("base") {
        None => Err(err(at("base"), "(missing)", base_allowed)),
        Some(b) => match uint(b) {
            Some(n) if n <= base_max && n.is_multiple_of(rb) => Ok(n),
            _ => Err(err(at("base"), shown(b), base_allowed)),
        },
    });
    let size_allowed = format!("an integer from 0 to {addr_max}");
    let size = e.take(match o.get("size") {
        None => Err(err(at("size"), "(missing)", size_allowed)),
        Some(s) => match uint(s) {
            Some(n) if n <= addr_max => Ok(n),
            _ => Err(err(at("size"), shown(s), size_allowed)),
        },
    });
    let (base, size) = (base?, size?);
    let mut data = Vec::new();
    if let Some(d) = o.get("data") {
        let data_allowed = format!("a list of at most {size} bytes (the view's size)");
        let Some(l) = d.as_array() else {
            e.push(err(at("data"), shown(d), data_allowed));
            return None;
        };
        if l.len() as u64 > size {
            e.push(err(at("data"), format!("a list of {} bytes", l.len()), data_allowed));
            return None;
        }
        data = e.each(&at("data"), l, |k, b| match uint(b) {
            Some(n) if n <= 255 => Ok(n as u8),
            _ => Err(err(format!("{}[{k}]", at("data")), shown(b), "an integer from 0 to 255")),
        })?;
    }
    // Byte ranges [base, base + len(data)) (addresses modulo 2^addr_bits)
    // must not overlap an earlier view's.
    let m = addr_max;
    for (p, q) in earlier.iter().enumerate() {
        let (l1, l2) = (q.data.len() as u64, data.len() as u64);
        if l1 == 0 || l2 == 0 {
            continue;
        }
        let overlap = (base.wrapping_sub(q.base) & m) < l1 || (q.base.wrapping_sub(base) & m) < l2;
        if overlap {
            e.push(err(
                at("data"),
                format!("bytes {:#x}..{:#x}", base, base + l2),
                format!("not overlapping views[{p}].data (bytes {:#x}..{:#x})", q.base, q.base + l1),
            ));
            return None;
        }
    }
    Some(View { base, size, data })
}

/// The output file as JSON, per docs/cbload.md "output".
pub fn output_json(cfg: &CbloadParams, o: &Outcome) -> Value {
    let digits = (cfg.reg_bits / 4) as usize;
    let regs: Vec<Value> = o
        .regs
        .iter()
        .map(|r| Value::String(format!("0x{:0>digits$}", r.to_str_radix(16))))
        .collect();
    let responses: Vec<Value> = o
        .responses
        .iter()
        .map(|r| serde_json::json!({"tag": r.tag, "error": r.error.name()}))
        .collect();
    serde_json::json!({
        "regs": regs,
        "responses": responses,
        "oob": o.oob,
        "oob_tag": o.oob_tag,
        "cycles": o.cycles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Small config: GB = 8, RB = 4 (P = 2), O = 2, MAXLEN = 32, 8 registers
    /// (3-bit fields), 3 views (2-bit index, so index 3 is a view error).
    fn small() -> CbloadParams {
        CbloadParams {
            reg_bits: 64,
            regs: 8,
            read_bits: 32,
            max_outstanding: 2,
            views: 3,
            max_burst: 4,
            addr_bits: 16,
            tag_bits: 4,
            mem_if: gpurtl_params::MemIf::Native,
        }
    }

    fn imm(dest: u32, view: u32, off: u64, tag: u32) -> Instr {
        Instr { dest, view, offset: Offset::Imm(off), burst: false, size: 0, tag }
    }

    fn burst(dest: u32, view: u32, off: u64, size: u32, tag: u32) -> Instr {
        Instr { dest, view, offset: Offset::Imm(off), burst: true, size, tag }
    }

    fn big(x: u64) -> BigUint {
        BigUint::from(x)
    }

    /// View 0 at 0x100, 64 bytes, byte i = i + 1.
    fn view0() -> View {
        View { base: 0x100, size: 64, data: (1..=64).collect() }
    }

    fn wl(l: u32, views: Vec<View>, init_regs: Vec<(u32, BigUint)>, instrs: Vec<Instr>) -> Workload {
        Workload { mem_latency: l, views, init_regs, instrs }
    }

    #[test]
    fn error_codes() {
        for (c, k, n) in [
            (0, ErrorKind::None, "none"),
            (1, ErrorKind::View, "view"),
            (2, ErrorKind::Misaligned, "misaligned"),
            (3, ErrorKind::Size, "size"),
            (4, ErrorKind::Range, "range"),
        ] {
            assert_eq!(k.code(), c);
            assert_eq!(k.name(), n);
            assert_eq!(ErrorKind::from_code(c), Some(k));
        }
        assert_eq!(ErrorKind::from_code(5), None);
    }

    #[test]
    fn single_load() {
        // off 4, len 8: bytes 5..=12. B = 2, R = min(2, ceil(60/4)) = 2.
        // req = [2, 3], t = [max(2+3, 1), max(3+3, 6)] = [5, 6]; response at 7.
        let o = run(&small(), &wl(3, vec![view0()], vec![], vec![imm(2, 0, 4, 5)]));
        assert_eq!(o.regs[2], big(0x0c0b_0a09_0807_0605));
        for (r, v) in o.regs.iter().enumerate() {
            if r != 2 {
                assert_eq!(*v, big(0));
            }
        }
        assert_eq!(o.responses, vec![Response { tag: 5, error: ErrorKind::None }]);
        assert!(!o.oob);
        assert_eq!(o.oob_tag, None);
        assert_eq!(o.cycles, 7);
    }

    #[test]
    fn burst_three_registers_partial_last() {
        // off 8, size 20 -> N = 3; r 0..20 read bytes 9..=28, r 20..24 zero.
        let w = wl(5, vec![view0()], vec![(3, big(u64::MAX))], vec![burst(1, 0, 8, 20, 3)]);
        let o = run(&small(), &w);
        assert_eq!(o.regs[1], big(0x100f_0e0d_0c0b_0a09));
        assert_eq!(o.regs[2], big(0x1817_1615_1413_1211));
        assert_eq!(o.regs[3], big(0x1c1b_1a19));
        assert_eq!(o.regs[4], big(0));
        assert!(!o.oob);
        // B = 5, R = 5, O = 2, L = 5:
        // req0 = 2, t0 = 7; req1 = 3, t1 = 8; req2 = max(4, t0+1) = 8, t2 = 13;
        // req3 = max(9, t1+1) = 9, t3 = 14; req4 = max(10, t2+1) = 14, t4 = 19.
        assert_eq!(o.cycles, 20);
        let (req, t) = schedule(0, 5, 5, 2, 5);
        assert_eq!(req, vec![2, 3, 8, 9, 14]);
        assert_eq!(t, vec![7, 8, 13, 14, 19]);
    }

    #[test]
    fn burst_crossing_view_end_and_sticky_oob() {
        let v1 = View { base: 0x200, size: 10, data: (0xa0..0xaa).collect() };
        let w = wl(
            5,
            vec![view0(), v1],
            vec![(5, big(0x1234))],
            vec![burst(4, 1, 4, 12, 7), imm(6, 1, 8, 9)],
        );
        let o = run(&small(), &w);
        // r < 6 in view (4 + r < 10): a4..a9, the rest zero.
        assert_eq!(o.regs[4], big(0x0000_a9a8_a7a6_a5a4));
        assert_eq!(o.regs[5], big(0));
        // second: off 8, r < 2: a8, a9.
        assert_eq!(o.regs[6], big(0xa9a8));
        assert!(o.oob);
        assert_eq!(o.oob_tag, Some(7));
        assert_eq!(
            o.responses,
            vec![Response { tag: 7, error: ErrorKind::None }, Response { tag: 9, error: ErrorKind::None }]
        );
        // First: B = 3, R = min(3, ceil(6/4)) = 2: t = [7, 8, 9], response 10,
        // next accept 11. Second: B = 2, R = 1: req0 = 13, t = [18, 19],
        // response 20.
        assert_eq!(o.cycles, 20);
    }

    #[test]
    fn missing_view_reads_zero_and_is_oob() {
        // View 2 is not listed: base 0, size 0.
        let w = wl(5, vec![view0()], vec![(0, big(77))], vec![imm(0, 2, 0, 4)]);
        let o = run(&small(), &w);
        assert_eq!(o.regs[0], big(0));
        assert!(o.oob);
        assert_eq!(o.oob_tag, Some(4));
        // R = 0, B = 2: t = [2, 3], response at 4.
        assert_eq!(o.cycles, 4);
    }

    #[test]
    fn error_priority() {
        let cfg = small();
        let cases = [
            // view 3 >= 3, and misaligned, size 0, range: view wins.
            (burst(7, 3, 2, 0, 1), ErrorKind::View),
            // misaligned and size 0 and range: misaligned.
            (burst(7, 0, 2, 0, 1), ErrorKind::Misaligned),
            // size 0 and range: size.
            (burst(7, 0, 4, 0, 1), ErrorKind::Size),
            // size 33 > MAXLEN 32.
            (burst(0, 0, 0, 33, 1), ErrorKind::Size),
            // dest 7 + N 2 > 8.
            (burst(7, 0, 0, 9, 1), ErrorKind::Range),
            // dest 7 + N 1 fits; size ignored without burst.
            (Instr { size: 0, ..imm(7, 0, 0, 1) }, ErrorKind::None),
            (Instr { size: 1000, ..imm(7, 0, 0, 1) }, ErrorKind::None),
            // size exactly MAXLEN fits from dest 4.
            (burst(4, 0, 0, 32, 1), ErrorKind::None),
        ];
        for (ins, e) in cases {
            let o = run(&cfg, &wl(5, vec![view0()], vec![], vec![ins.clone()]));
            assert_eq!(o.responses[0].error, e, "{ins:?}");
        }
    }

    #[test]
    fn errors_write_nothing_and_leave_oob() {
        // All would be out of bounds (view 1 has size 0) but each has an error.
        let cfg = small();
        let w = wl(
            5,
            vec![view0(), View { base: 0x300, size: 0, data: vec![] }],
            vec![(7, big(99))],
            vec![
                Instr { offset: Offset::Reg(0), ..imm(7, 3, 0, 1) },
                imm(7, 1, 2, 2),
                burst(7, 1, 0, 0, 3),
                burst(7, 1, 0, 16, 4),
            ],
        );
        let o = run(&cfg, &w);
        let errs: Vec<ErrorKind> = o.responses.iter().map(|r| r.error).collect();
        assert_eq!(errs, vec![ErrorKind::View, ErrorKind::Misaligned, ErrorKind::Size, ErrorKind::Range]);
        assert_eq!(o.regs[7], big(99));
        assert!(!o.oob);
        assert_eq!(o.oob_tag, None);
        // Responses at 2, 5, 8, 11.
        assert_eq!(o.cycles, 11);
    }

    #[test]
    fn offset_from_register() {
        // reg 6 = 0x1_0000_0008: its low 16 bits give offset 8.
        // Then reg 5 is loaded with 12 (view 1 byte 0), and used as an offset.
        let v1 = View { base: 0x400, size: 8, data: vec![12, 0, 0, 0] };
        let w = wl(
            3,
            vec![view0(), v1],
            vec![(6, big(0x1_0000_0008))],
            vec![
                Instr { offset: Offset::Reg(6), ..imm(0, 0, 0, 1) },
                imm(5, 1, 0, 2),
                Instr { offset: Offset::Reg(5), ..imm(1, 0, 0, 3) },
            ],
        );
        let o = run(&small(), &w);
        assert_eq!(o.regs[0], big(0x100f_0e0d_0c0b_0a09));
        assert_eq!(o.regs[5], big(12));
        assert_eq!(o.regs[1], big(0x1413_1211_100f_0e0d));
        assert!(o.responses.iter().all(|r| r.error == ErrorKind::None));

        // A register offset that is misaligned.
        let w = wl(3, vec![view0()], vec![(6, big(0x10_0002))], vec![Instr { offset: Offset::Reg(6), ..imm(0, 0, 0, 1) }]);
        let o = run(&small(), &w);
        assert_eq!(o.responses[0].error, ErrorKind::Misaligned);
        assert_eq!(o.cycles, 2);
    }

    #[test]
    fn address_wraps_modulo_addr_bits() {
        // base 0xfff8 with 16 bytes of data: bytes 8.. live at 0x0000...
        let cfg = small();
        let v = View { base: 0xfff8, size: 16, data: (0..16).collect() };
        let o = run(&cfg, &wl(1, vec![v], vec![], vec![imm(0, 0, 4, 0), imm(1, 0, 8, 0)]));
        assert_eq!(o.regs[0], big(0x0b0a_0908_0706_0504));
        assert_eq!(o.regs[1], big(0x0f0e_0d0c_0b0a_0908));
    }

    #[test]
    fn timing_single_load_default_config() {
        // B = 4, L = 10: req = a+2..a+5, t = a+12..a+15, response a+16.
        let cfg = CbloadParams::default();
        let v = View { base: 0, size: 1024, data: vec![] };
        let o = run(&cfg, &wl(10, vec![v.clone()], vec![], vec![imm(0, 0, 0, 1)]));
        assert_eq!(o.cycles, 16);
        let (req, t) = schedule(0, 4, 4, 16, 10);
        assert_eq!(req, vec![2, 3, 4, 5]);
        assert_eq!(t, vec![12, 13, 14, 15]);

        // Two back-to-back: second accepted at 17, response at 33.
        let o = run(&cfg, &wl(10, vec![v.clone()], vec![], vec![imm(0, 0, 0, 1), imm(1, 0, 32, 2)]));
        assert_eq!(o.cycles, 33);

        // An error alone: 2 cycles. Error then load: load accepted at 3.
        let o = run(&cfg, &wl(10, vec![v.clone()], vec![], vec![imm(0, 0, 4, 1)]));
        assert_eq!(o.cycles, 2);
        let o = run(&cfg, &wl(10, vec![v.clone()], vec![], vec![imm(0, 0, 4, 1), imm(0, 0, 0, 1)]));
        assert_eq!(o.cycles, 19);

        // No instructions.
        let o = run(&cfg, &wl(10, vec![v], vec![], vec![]));
        assert_eq!(o.cycles, 0);
        assert_eq!(o.regs.len(), 64);
    }

    #[test]
    fn timing_burst_entirely_beyond_view() {
        // off 0x20 >= size 0x10: R = 0, B = 4: t_k = a+2+k, response a+6.
        let cfg = CbloadParams::default();
        let v = View { base: 0, size: 0x10, data: vec![1; 16] };
        let o = run(&cfg, &wl(10, vec![v], vec![], vec![imm(0, 0, 0x20, 1)]));
        assert_eq!(o.cycles, 6);
        assert_eq!(o.regs[0], big(0));
        let (req, t) = schedule(0, 4, 0, 16, 10);
        assert!(req.is_empty());
        assert_eq!(t, vec![2, 3, 4, 5]);
    }

    #[test]
    fn timing_max_outstanding_limits_requests() {
        // Default-like with O = 2, L = 5, a burst of 2 registers: B = 8.
        let cfg = CbloadParams { max_outstanding: 2, ..CbloadParams::default() };
        let v = View { base: 0, size: 1024, data: vec![] };
        let o = run(&cfg, &wl(5, vec![v], vec![], vec![burst(0, 0, 0, 64, 1)]));
        // req: 2, 3, 8, 9, 14, 15, 20, 21; t: 7, 8, 13, 14, 19, 20, 25, 26.
        let (req, t) = schedule(0, 8, 8, 2, 5);
        assert_eq!(req, vec![2, 3, 8, 9, 14, 15, 20, 21]);
        assert_eq!(t, vec![7, 8, 13, 14, 19, 20, 25, 26]);
        assert_eq!(o.cycles, 27);
        // With O = 16 the requests stream: t = 7..=14, response 15.
        let o = run(&CbloadParams::default(), &wl(5, vec![View { base: 0, size: 1024, data: vec![] }], vec![], vec![burst(0, 0, 0, 64, 1)]));
        assert_eq!(o.cycles, 15);
        // L = 1: beats arrive one per cycle from a+3 (req0 + 1), not earlier
        // than t_{-1} + 1.
        let (_, t) = schedule(10, 3, 3, 16, 1);
        assert_eq!(t, vec![13, 14, 15]);
    }

    #[test]
    fn output_format() {
        let cfg = CbloadParams { regs: 2, ..small() };
        let o = Outcome {
            regs: vec![big(0xAB), big(0)],
            responses: vec![Response { tag: 3, error: ErrorKind::Misaligned }],
            oob: true,
            oob_tag: Some(3),
            cycles: 42,
        };
        assert_eq!(
            output_json(&cfg, &o),
            json!({"regs": ["0x00000000000000ab", "0x0000000000000000"],
                   "responses": [{"tag": 3, "error": "misaligned"}],
                   "oob": true, "oob_tag": 3, "cycles": 42})
        );
        let o = Outcome { oob: false, oob_tag: None, ..o };
        assert_eq!(output_json(&cfg, &o)["oob_tag"], Value::Null);
    }

    // ---- parse_input ----

    fn perr(v: Value) -> String {
        parse_input(&v, &small()).unwrap_err().0[0].to_string()
    }

    #[test]
    fn parse_example() {
        let v = json!({
            "mem_latency": 10,
            "views": [{"base": 4096, "size": 100, "data": [1, 2, 3]}],
            "regs": [{"reg": 3, "value": "0x40"}],
            "instructions": [
                {"dest": 0, "view": 0, "offset": 0, "burst": true, "size": 64, "tag": 1},
                {"dest": 8, "view": 0, "offset_reg": 3, "tag": 2}
            ]
        });
        let w = parse_input(&v, &CbloadParams::default()).unwrap();
        assert_eq!(w.mem_latency, 10);
        assert_eq!(w.views, vec![View { base: 4096, size: 100, data: vec![1, 2, 3] }]);
        assert_eq!(w.init_regs, vec![(3, big(0x40))]);
        assert_eq!(
            w.instrs,
            vec![
                Instr { dest: 0, view: 0, offset: Offset::Imm(0), burst: true, size: 64, tag: 1 },
                Instr { dest: 8, view: 0, offset: Offset::Reg(3), burst: false, size: 0, tag: 2 },
            ]
        );
        // Defaults.
        let w = parse_input(&json!({"instructions": [{"dest": 1, "view": 2, "offset": 8}]}), &small()).unwrap();
        assert_eq!(w.mem_latency, 10);
        assert!(w.views.is_empty() && w.init_regs.is_empty());
        assert_eq!(w.instrs, vec![imm(1, 2, 8, 0)]);
    }

    #[test]
    fn parse_reports_every_violation() {
        let v = json!({"views": [{"base": 3, "size": 8, "data": [256, 1]}],
                       "instructions": [{"dest": 99, "view": 0, "offset": 1}, {"dest": 0}]});
        let got: Vec<String> = parse_input(&v, &small()).unwrap_err().0.iter().map(|x| x.to_string()).collect();
        assert_eq!(
            got,
            [
                "input `views[0].base` = 3: must be an integer multiple of 4 from 0 to 65532",
                "input `instructions[0].dest` = 99: must be an integer from 0 to 7",
                "input `instructions[0].offset` = 1: must be an integer multiple of 4 from 0 to 65532",
                "input `instructions[1].view` = (missing): must be an integer from 0 to 2",
                "input `instructions[1].offset` = (missing): must be given: exactly one of offset, offset_reg",
            ]
        );
    }

    #[test]
    fn parse_messages() {
        let ins = |extra: Value| {
            let mut o = json!({"dest": 0, "view": 0, "offset": 0});
            for (k, v) in extra.as_object().unwrap() {
                o[k] = v.clone();
            }
            json!({"instructions": [o]})
        };
        let cases: Vec<(Value, &str)> = vec![
            (json!([]), "input `(file)` = []: must be a JSON object with an `instructions` list"),
            (json!({}), "input `instructions` = (missing): must be a list of instructions"),
            (json!({"instructions": 3}), "input `instructions` = 3: must be a list of instructions"),
            (
                json!({"instructions": [], "extra": 1}),
                "input `extra` = (given): must be absent: keys are mem_latency, views, regs, instructions",
            ),
            (json!({"mem_latency": 0, "instructions": []}), "input `mem_latency` = 0: must be an integer from 1 to 1000"),
            (json!({"mem_latency": 1001, "instructions": []}), "input `mem_latency` = 1001: must be an integer from 1 to 1000"),
            (ins(json!({"view": 3})), "input `instructions[0].view` = 3: must be an integer from 0 to 2"),
            (
                ins(json!({"offset": 2})),
                "input `instructions[0].offset` = 2: must be an integer multiple of 4 from 0 to 65532",
            ),
            (
                ins(json!({"offset": 65536})),
                "input `instructions[0].offset` = 65536: must be an integer multiple of 4 from 0 to 65532",
            ),
            (
                ins(json!({"burst": true, "size": 0})),
                "input `instructions[0].size` = 0: must be an integer from 1 to 32 (given with burst)",
            ),
            (
                ins(json!({"burst": true, "size": 33})),
                "input `instructions[0].size` = 33: must be an integer from 1 to 32 (given with burst)",
            ),
            (
                ins(json!({"burst": true})),
                "input `instructions[0].size` = (missing): must be an integer from 1 to 32 (given with burst)",
            ),
            (ins(json!({"size": 8})), "input `instructions[0].size` = 8: must be absent without burst"),
            (ins(json!({"burst": false, "size": 8})), "input `instructions[0].size` = 8: must be absent without burst"),
            (ins(json!({"burst": 1})), "input `instructions[0].burst` = 1: must be true or false"),
            (
                ins(json!({"offset_reg": 1})),
                "input `instructions[0].offset_reg` = (given): must be absent when `offset` is given: exactly one of offset, offset_reg",
            ),
            (
                json!({"instructions": [{"dest": 0, "view": 0}]}),
                "input `instructions[0].offset` = (missing): must be given: exactly one of offset, offset_reg",
            ),
            (
                json!({"instructions": [{"dest": 0, "view": 0, "offset_reg": 8}]}),
                "input `instructions[0].offset_reg` = 8: must be an integer from 0 to 7",
            ),
            (ins(json!({"dest": 8})), "input `instructions[0].dest` = 8: must be an integer from 0 to 7"),
            (
                json!({"instructions": [{"view": 0, "offset": 0}]}),
                "input `instructions[0].dest` = (missing): must be an integer from 0 to 7",
            ),
            (ins(json!({"tag": 16})), "input `instructions[0].tag` = 16: must be an integer from 0 to 15"),
            (
                ins(json!({"mode": 1})),
                "input `instructions[0].mode` = (given): must be absent: keys are dest, view, offset, offset_reg, burst, size, tag",
            ),
            (json!({"instructions": [1]}), "input `instructions[0]` = 1: must be an object"),
            (
                json!({"regs": [{"reg": 1, "value": "0xzz"}], "instructions": []}),
                "input `regs[0].value` = \"0xzz\": must be a hex string \"0x...\" of at most 64 bits",
            ),
            (
                json!({"regs": [{"reg": 1, "value": "40"}], "instructions": []}),
                "input `regs[0].value` = \"40\": must be a hex string \"0x...\" of at most 64 bits",
            ),
            (
                json!({"regs": [{"reg": 1, "value": "0x1ffffffffffffffff"}], "instructions": []}),
                "input `regs[0].value` = \"0x1ffffffffffffffff\": must be a hex string \"0x...\" of at most 64 bits",
            ),
            (
                json!({"regs": [{"reg": 1}], "instructions": []}),
                "input `regs[0].value` = (missing): must be a hex string \"0x...\" of at most 64 bits",
            ),
            (
                json!({"regs": [{"reg": 8, "value": "0x1"}], "instructions": []}),
                "input `regs[0].reg` = 8: must be an integer from 0 to 7",
            ),
            (
                json!({"regs": [{"reg": 1, "value": "0x1", "x": 0}], "instructions": []}),
                "input `regs[0].x` = (given): must be absent: keys are reg, value",
            ),
            (
                json!({"views": [{"base": 0, "size": 8}, {"base": 8, "size": 8}, {"base": 16, "size": 8}, {"base": 24, "size": 8}], "instructions": []}),
                "input `views` = a list of 4 views: must be a list of at most 3 views",
            ),
            (
                json!({"views": [{"base": 2, "size": 8}], "instructions": []}),
                "input `views[0].base` = 2: must be an integer multiple of 4 from 0 to 65532",
            ),
            (
                json!({"views": [{"size": 8}], "instructions": []}),
                "input `views[0].base` = (missing): must be an integer multiple of 4 from 0 to 65532",
            ),
            (
                json!({"views": [{"base": 0, "size": 65536}], "instructions": []}),
                "input `views[0].size` = 65536: must be an integer from 0 to 65535",
            ),
            (
                json!({"views": [{"base": 0, "size": 2, "data": [1, 2, 3]}], "instructions": []}),
                "input `views[0].data` = a list of 3 bytes: must be a list of at most 2 bytes (the view's size)",
            ),
            (
                json!({"views": [{"base": 0, "size": 2, "data": [1, 256]}], "instructions": []}),
                "input `views[0].data[1]` = 256: must be an integer from 0 to 255",
            ),
            (
                json!({"views": [{"base": 0, "size": 8, "data": [1, 2, 3, 4, 5]}, {"base": 4, "size": 8, "data": [1]}], "instructions": []}),
                "input `views[1].data` = bytes 0x4..0x5: must be not overlapping views[0].data (bytes 0x0..0x5)",
            ),
            (
                json!({"views": [{"base": 0, "size": 8, "data": [1]}, {"base": 65532, "size": 8, "data": [1, 2, 3, 4, 5]}], "instructions": []}),
                "input `views[1].data` = bytes 0xfffc..0x10001: must be not overlapping views[0].data (bytes 0x0..0x1)",
            ),
            (
                json!({"views": [{"base": 0, "size": 8, "tag": 1}], "instructions": []}),
                "input `views[0].tag` = (given): must be absent: keys are base, size, data",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(perr(v.clone()), want, "{v}");
        }
    }

    #[test]
    fn parse_accepts_edges() {
        // Adjacent (not overlapping) data, empty data at the same base, view
        // data exactly `size` long, 64-bit register value with leading zeros.
        let v = json!({
            "mem_latency": 1000,
            "views": [
                {"base": 0, "size": 4, "data": [1, 2, 3, 4]},
                {"base": 4, "size": 4, "data": [5]},
                {"base": 4, "size": 0, "data": []}
            ],
            "regs": [{"reg": 7, "value": "0x00000000FFFFFFFFFFFF0000"}],
            "instructions": [{"dest": 7, "view": 2, "offset_reg": 7, "burst": true, "size": 32, "tag": 15}]
        });
        let w = parse_input(&v, &small()).unwrap();
        assert_eq!(w.init_regs, vec![(7, big(0xffff_ffff_ffff_0000))]);
        assert_eq!(w.instrs[0].size, 32);
        // And dest + N > regs is not an input error: it is a `range` response.
        let o = run(&small(), &w);
        assert_eq!(o.responses[0].error, ErrorKind::Range);
    }
}
