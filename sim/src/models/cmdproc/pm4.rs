//! PM4 packets as text (docs/cmdproc.md, "Assembler text"): the assembler,
//! the disassembler and trace lines, shared by the golden model, the
//! testbench (which prints the RTL's trace records) and the command line.
//!
//! - [`assemble`]: packet lines to dwords; every bad line is reported.
//! - [`disassemble`]: dwords to packet lines; `assemble(disassemble(d)) == d`
//!   for any dwords, and `disassemble(assemble(t)) == t` for canonical text.
//! - [`run_input`]: a run file in text form (`.registers`, `.memory`,
//!   `.pipeline`, then packets) to the JSON input of `gpurtl run cmdproc`.
//! - [`trace_line`]: a command's trace line from its record.

use gpurtl_params::cmdproc::{sh, Opcode};
use serde_json::{json, Map, Value};
use std::fmt;

/// A command's record: what the pipeline port and the trace port carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    pub id: u32,
    /// Byte address of the header.
    pub addr: u32,
    pub header: u32,
    /// Payload dwords `n`.
    pub count: u32,
    /// The first payload dwords: `p0..p3` with `compute = false` (`p4`,
    /// `p5` are then 0), `p0..p5` with `compute = true`; zeros beyond `n`.
    pub p: [u32; 6],
}

/// Payload dwords a record holds: 4, or 6 with `compute = true`.
pub fn record_dwords(compute: bool) -> u32 {
    if compute {
        6
    } else {
        4
    }
}

/// The most payload dwords a packet has (`n = (c + 1) mod 2^14`).
pub const MAX_PAYLOAD: u32 = 0x3FFF;
/// The type-2 filler.
pub const FILLER: u32 = 0x8000_0000;
/// `INDIRECT_BUFFER` sizes are below this (the size field is `p2[19:0]`).
pub const IB_SIZE_LIMIT: u32 = 1 << 20;
/// The most dwords one program assembles to (16 MiB of dwords, as large as
/// the largest input file `gpurtl` reads), so that a short line such as
/// `NOP dwords=16383` repeated cannot exhaust memory.
pub const MAX_PROGRAM_DWORDS: usize = 1 << 22;

/// A type-3 header: opcode `op`, `n` payload dwords (`n <= MAX_PAYLOAD`),
/// shader type and predicate bits clear.
pub fn header(op: Opcode, n: u32) -> u32 {
    0xC000_0000 | ((n.wrapping_sub(1) & 0x3FFF) << 16) | (op.code() << 8)
}

/// The payload count `n` of a type-3 header.
pub fn payload_count(h: u32) -> u32 {
    ((h >> 16) + 1) & 0x3FFF
}

/// The trace line of a record of a unit with `compute = false` (the
/// record holds `p0..p3`): `#<id> @0x<addr> <text>`.
pub fn trace_line(r: &Record) -> String {
    trace_line_mode(r, false)
}

/// The trace line of a record of a unit with `compute` as given (with
/// `compute = true` the record holds `p0..p5`, so lists print up to six
/// payload dwords before `...+K`).
pub fn trace_line_mode(r: &Record, compute: bool) -> String {
    format!("#{} @0x{:08x} {}", r.id, r.addr, record_text(r, record_dwords(compute)))
}

/// A list of the values held, then `...+K` for the `more` not held.
fn held_list(vals: &[u32], more: u32) -> String {
    let mut parts: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
    if more > 0 {
        parts.push(format!("...+{more}"));
    }
    parts.join(",")
}

/// The assembler line of a command, built from its record (header, `n`,
/// the `holds` payload dwords it holds, 4 or 6): lists longer than the
/// record holds end with `...+K`.
fn record_text(r: &Record, holds: u32) -> String {
    let h = r.header;
    let n = r.count;
    let p = r.p;
    let held = n.min(holds) as usize;
    let op = if h >> 30 == 3 { Opcode::from_code((h >> 8) & 0xFF) } else { None };
    let Some(op) = op else {
        // Not a command (records are of type-3 packets of known opcodes).
        return format!("DWORD value=0x{h:08x}");
    };
    let name = op.name();
    let mut s = match op {
        Opcode::Nop if n == 0 => name.to_string(),
        Opcode::Nop => format!("{name} dwords={n}"),
        Opcode::SetContextReg => {
            let vals = p.get(1..held.max(1)).unwrap_or(&[]);
            format!("{name} offset={} values={}", p[0], held_list(vals, n.saturating_sub(1) - vals.len() as u32))
        }
        Opcode::IndexType => match p[0] {
            0 => format!("{name} size=16"),
            1 => format!("{name} size=32"),
            v => format!("{name} size=?{v}"),
        },
        Opcode::DrawIndexAuto => format!("{name} count={} initiator=0x{:08x}", p[0], p[1]),
        Opcode::DrawIndexOffset2 => {
            format!("{name} max_size={} offset={} count={} initiator=0x{:08x}", p[0], p[1], p[2], p[3])
        }
        Opcode::DispatchDirect => format!("{name} x={} y={} z={} initiator=0x{:08x}", p[0], p[1], p[2], p[3]),
        Opcode::WriteData => {
            let vals = p.get(3..held.max(3)).unwrap_or(&[]);
            format!(
                "{name} control=0x{:08x} addr=0x{:08x} data={}",
                p[0],
                p[1],
                held_list(vals, n.saturating_sub(3) - vals.len() as u32)
            )
        }
        Opcode::IndirectBuffer => format!("{name} addr=0x{:08x} size={}", p[0], p[2] & (IB_SIZE_LIMIT - 1)),
        Opcode::SetShReg => {
            let vals = p.get(1..held.max(1)).unwrap_or(&[]);
            format!("{name} reg={} values={}", sh_reg_text(p[0]), held_list(vals, n.saturating_sub(1) - vals.len() as u32))
        }
        Opcode::ReleaseMem => release_text(&p),
    };
    push_bits(&mut s, h);
    s
}

/// `SET_SH_REG`'s `reg` from `p0`: the register's name when `p0` is one
/// of the compute registers', else the byte offset `0xB000 + 4 p0` (`0x`
/// and 8 hex digits).
fn sh_reg_text(p0: u32) -> String {
    match sh::index(p0 as u64) {
        Some(i) => sh::name(i),
        None => format!("0x{:08x}", SH_BASE as u64 + 4 * p0 as u64),
    }
}

/// `RELEASE_MEM`'s fields from `p0..p5` (`p3` is not printed): `event`,
/// `data_sel`, `int_sel`, `control` (the rest of `p1`, only when not 0),
/// `addr`, `data`.
fn release_text(p: &[u32; 6]) -> String {
    let control = p[1] & !RELEASE_SEL_BITS;
    let mut s = format!("RELEASE_MEM event=0x{:08x} data_sel={} int_sel={}", p[0], p[1] >> 29, (p[1] >> 24) & 7);
    if control != 0 {
        s.push_str(&format!(" control=0x{control:08x}"));
    }
    s.push_str(&format!(" addr=0x{:08x} data={},{}", p[2], p[4], p[5]));
    s
}

/// `SET_SH_REG`: byte offset of register dword offset 0 (the SH space is
/// 0xB000..=0xBFFC).
pub const SH_BASE: u32 = 0xB000;
/// `RELEASE_MEM` `p1`'s `DATA_SEL` [31:29] and `INT_SEL` [26:24].
const RELEASE_SEL_BITS: u32 = 0xE700_0000;

/// The ` shader=1` / ` predicate=1` suffixes of header bits 1 and 0.
fn push_bits(s: &mut String, h: u32) {
    if h & 2 != 0 {
        s.push_str(" shader=1");
    }
    if h & 1 != 0 {
        s.push_str(" predicate=1");
    }
}

/// A line that does not assemble: its number (1-based; 0 for the file as a
/// whole), its text and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    pub line: usize,
    pub text: String,
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: `{}`: {}", self.line, self.text, self.message)
        }
    }
}

impl std::error::Error for AsmError {}

/// Errors as one message, a line each.
pub fn errors_text(errors: &[AsmError]) -> String {
    errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

/// Bad lines an assembler lists; the rest are counted on a last line.
pub const SHOWN_ERRORS: usize = 50;

/// The errors of an assembler as it reads: the first [`SHOWN_ERRORS`] by
/// line number kept, the others counted, so that a file of 80,000 bad lines
/// gives a short message (and a short list in memory).
#[derive(Default)]
pub(crate) struct AsmErrors {
    list: Vec<AsmError>,
    more: usize,
}

impl AsmErrors {
    /// Record an error; errors come in line order.
    pub(crate) fn push(&mut self, e: AsmError) {
        if self.list.len() < SHOWN_ERRORS {
            self.list.push(e);
        } else {
            self.more += 1;
        }
    }
    /// Record an error out of line order: before the others of its line.
    pub(crate) fn insert(&mut self, e: AsmError) {
        let at = self.list.partition_point(|x| x.line < e.line);
        self.list.insert(at, e);
        if self.list.len() > SHOWN_ERRORS {
            self.list.pop();
            self.more += 1;
        }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// The errors of several passes over the file, each in line order, as
    /// one list: sorted by line, the first [`SHOWN_ERRORS`], then a line
    /// counting the rest.
    pub(crate) fn finish(parts: impl IntoIterator<Item = AsmErrors>) -> Vec<AsmError> {
        let mut list = Vec::new();
        let mut more = 0;
        for p in parts {
            list.extend(p.list);
            more += p.more;
        }
        list.sort_by_key(|e| e.line);
        more += list.len().saturating_sub(SHOWN_ERRORS);
        list.truncate(SHOWN_ERRORS);
        if more > 0 {
            list.push(AsmError { line: 0, text: String::new(), message: format!("{more} more bad lines (the first {SHOWN_ERRORS} are listed above)") });
        }
        list
    }
}

/// Text shown in a message, shortened past 60 characters.
fn short(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        s.chars().take(MAX - 3).collect::<String>() + "..."
    }
}

/// What a line mnemonic stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mnemonic {
    Packet(Opcode),
    Filler,
    Dword,
}

impl Mnemonic {
    fn all() -> Vec<Mnemonic> {
        let mut v: Vec<Mnemonic> = Opcode::ALL.iter().map(|o| Mnemonic::Packet(*o)).collect();
        v.extend([Mnemonic::Filler, Mnemonic::Dword]);
        v
    }
    fn name(self) -> &'static str {
        match self {
            Mnemonic::Packet(o) => o.name(),
            Mnemonic::Filler => "FILLER",
            Mnemonic::Dword => "DWORD",
        }
    }
    fn from_name(s: &str) -> Option<Mnemonic> {
        Self::all().into_iter().find(|m| m.name() == s)
    }
    /// The fields, in the order they must appear.
    fn fields(self) -> Vec<Field> {
        use Kind::*;
        let req = |name, kind| Field { name, kind, required: true };
        let opt = |name, kind| Field { name, kind, required: false };
        let mut v = match self {
            Mnemonic::Filler => return vec![],
            Mnemonic::Dword => return vec![req("value", Num)],
            Mnemonic::Packet(op) => match op {
                Opcode::Nop => vec![opt("payload", List(MAX_PAYLOAD)), opt("dwords", Count(MAX_PAYLOAD))],
                Opcode::SetContextReg => vec![req("offset", Num), req("values", List(MAX_PAYLOAD - 1))],
                Opcode::IndexType => vec![req("size", IndexSize)],
                Opcode::DrawIndexAuto => vec![req("count", Num), req("initiator", Num)],
                Opcode::DrawIndexOffset2 => {
                    vec![req("max_size", Num), req("offset", Num), req("count", Num), req("initiator", Num)]
                }
                Opcode::DispatchDirect => vec![req("x", Num), req("y", Num), req("z", Num), req("initiator", Num)],
                Opcode::WriteData => vec![req("control", Num), req("addr", Num), req("data", List(MAX_PAYLOAD - 3))],
                Opcode::IndirectBuffer => vec![req("addr", Num), req("size", IbSize)],
                Opcode::SetShReg => vec![req("reg", ShReg), req("values", List(MAX_PAYLOAD - 1))],
                Opcode::ReleaseMem => vec![
                    req("event", Num),
                    req("data_sel", Sel),
                    req("int_sel", Sel),
                    opt("control", Control),
                    req("addr", Num),
                    req("data", Pair),
                ],
            },
        };
        v.extend([opt("shader", Bit), opt("predicate", Bit)]);
        v
    }
}

/// The names of every mnemonic, for messages.
fn known_mnemonics() -> String {
    Mnemonic::all().iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Any number below 2^32.
    Num,
    /// A comma list of 1 to the given number of values.
    List(u32),
    /// A count from 0 to the given number.
    Count(u32),
    /// 16 or 32.
    IndexSize,
    /// Below 2^20.
    IbSize,
    /// 0 or 1.
    Bit,
    /// A compute register's name, or a byte offset 0xB000..=0xBFFC, a
    /// multiple of 4 (`SET_SH_REG`'s `reg`); its value is the byte offset.
    ShReg,
    /// Below 8 (`DATA_SEL`, `INT_SEL`).
    Sel,
    /// `RELEASE_MEM`'s carried `p1` bits: bits 31:29 and 26:24 clear.
    Control,
    /// Exactly two values.
    Pair,
}

#[derive(Clone, Copy, Debug)]
struct Field {
    name: &'static str,
    kind: Kind,
    required: bool,
}

#[derive(Clone, Debug)]
enum Val {
    One(u32),
    Many(Vec<u32>),
}

impl Val {
    fn one(&self) -> u32 {
        match self {
            Val::One(v) => *v,
            Val::Many(v) => v.first().copied().unwrap_or(0),
        }
    }
    fn many(&self) -> &[u32] {
        match self {
            Val::One(v) => std::slice::from_ref(v),
            Val::Many(v) => v,
        }
    }
}

enum NumError {
    NotNumber,
    TooBig,
}

/// A number: decimal, or `0x` and hex digits; below 2^32.
fn number(s: &str) -> Result<u32, NumError> {
    let (digits, radix) = match s.strip_prefix("0x") {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(NumError::NotNumber);
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > 10 {
        return Err(NumError::TooBig);
    }
    let v = u64::from_str_radix(if digits.is_empty() { "0" } else { digits }, radix).map_err(|_| NumError::TooBig)?;
    u32::try_from(v).map_err(|_| NumError::TooBig)
}

const NOT_A_NUMBER: &str = "is not a number (decimal, or 0x and hex digits)";
const TOO_BIG: &str = "is too large: numbers are below 2^32 = 4294967296";

/// One number of a field (`what` names it in messages).
fn one_number(what: &str, raw: &str) -> Result<u32, String> {
    if raw.contains(',') {
        return Err(format!("{what} = `{}`: takes one number, not a list", short(raw)));
    }
    number(raw).map_err(|e| match e {
        NumError::NotNumber => format!("{what} = `{}` {NOT_A_NUMBER}", short(raw)),
        NumError::TooBig => format!("{what} = `{}` {TOO_BIG}", short(raw)),
    })
}

/// A comma list of numbers (possibly empty when `raw` is empty).
fn number_list(what: &str, raw: &str) -> Result<Vec<u32>, String> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    raw.split(',')
        .enumerate()
        .map(|(i, s)| {
            number(s).map_err(|e| {
                let why = match e {
                    NumError::NotNumber => NOT_A_NUMBER,
                    NumError::TooBig => TOO_BIG,
                };
                format!("{what} = `{}`: value {} `{}` {why}", short(raw), i + 1, short(s))
            })
        })
        .collect()
}

fn parse_value(f: &Field, raw: &str) -> Result<Val, String> {
    let what = format!("field `{}`", f.name);
    if f.kind == Kind::ShReg {
        if let Some(i) = (0..sh::REGS).find(|&i| sh::name(i) == raw) {
            return Ok(Val::One(SH_BASE + 4 * sh::offset(i)));
        }
        if !raw.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!(
                "{what} = `{}`: not a compute register (COMPUTE_NUM_THREAD_X, _Y, _Z, COMPUTE_PGM_LO, COMPUTE_PGM_HI, COMPUTE_PGM_RSRC1, COMPUTE_PGM_RSRC2, COMPUTE_USER_DATA_0 .. COMPUTE_USER_DATA_15) nor a byte offset",
                short(raw)
            ));
        }
    }
    if f.kind == Kind::Pair {
        let v = number_list(&what, raw)?;
        if v.len() != 2 {
            return Err(format!("{what} has {} values: takes exactly two (data lo, data hi)", v.len()));
        }
        return Ok(Val::Many(v));
    }
    match f.kind {
        Kind::List(max) => {
            let v = number_list(&what, raw)?;
            if v.is_empty() {
                return Err(format!("{what} is empty: needs at least one value"));
            }
            if v.len() > max as usize {
                return Err(format!(
                    "{what} has {} values; at most {max} fit (a packet's payload is at most {MAX_PAYLOAD} dwords)",
                    v.len()
                ));
            }
            Ok(Val::Many(v))
        }
        kind => {
            let v = one_number(&what, raw)?;
            let bad = |allowed: String| Err(format!("{what} = `{}`: must be {allowed}", short(raw)));
            match kind {
                Kind::Count(max) if v > max => {
                    bad(format!("at most {max} (a packet's payload is at most {MAX_PAYLOAD} dwords)"))
                }
                Kind::IndexSize if v != 16 && v != 32 => bad("16 or 32 (bits per index)".into()),
                Kind::IbSize if v >= IB_SIZE_LIMIT => bad(format!("below 2^20 = {IB_SIZE_LIMIT} (a 20-bit size in dwords)")),
                Kind::Bit if v > 1 => bad("0 or 1".into()),
                Kind::ShReg if !(SH_BASE..=0xBFFC).contains(&v) || v % 4 != 0 => {
                    bad("a compute register's name or a byte offset from 0xB000 to 0xBFFC, a multiple of 4".into())
                }
                Kind::Sel if v > 7 => bad("below 8 (3 bits)".into()),
                Kind::Control if v & RELEASE_SEL_BITS != 0 => {
                    bad("clear in bits 31:29 and 26:24 (DATA_SEL and INT_SEL are their own fields)".into())
                }
                _ => Ok(Val::One(v)),
            }
        }
    }
}

/// Assemble one packet line (comment removed, trimmed, not empty).
fn assemble_line(code: &str) -> Result<Vec<u32>, String> {
    let mut toks = code.split_whitespace();
    let mn = toks.next().unwrap_or("");
    let m = Mnemonic::from_name(mn).ok_or_else(|| format!("unknown mnemonic `{}`; known: {}", short(mn), known_mnemonics()))?;
    let spec = m.fields();
    let order = || {
        if spec.is_empty() {
            format!("`{}` takes no fields", m.name())
        } else {
            format!("the fields of `{}` are, in order: {}", m.name(), spec.iter().map(|f| f.name).collect::<Vec<_>>().join(", "))
        }
    };
    let mut vals: Vec<Option<Val>> = vec![None; spec.len()];
    let mut last: Option<usize> = None;
    for tok in toks {
        let Some((name, raw)) = tok.split_once('=') else {
            return Err(format!("`{}` is not a field: fields are written name=value; {}", short(tok), order()));
        };
        let Some(i) = spec.iter().position(|f| f.name == name) else {
            return Err(format!("unknown field `{}`; {}", short(name), order()));
        };
        if vals[i].is_some() {
            return Err(format!("field `{name}` is given twice"));
        }
        if m == Mnemonic::Packet(Opcode::Nop) && i < 2 && vals[1 - i].is_some() {
            return Err("fields `payload` and `dwords`: give one of them, not both".into());
        }
        if let Some(l) = last.filter(|l| i < *l) {
            return Err(format!("field `{name}` must come before `{}`: {}", spec[l].name, order()));
        }
        last = Some(i);
        vals[i] = Some(parse_value(&spec[i], raw)?);
    }
    let missing: Vec<String> =
        spec.iter().zip(&vals).filter(|(f, v)| f.required && v.is_none()).map(|(f, _)| format!("`{}`", f.name)).collect();
    match missing.len() {
        0 => {}
        1 => return Err(format!("missing field {}; {}", missing[0], order())),
        _ => return Err(format!("missing fields {}; {}", missing.join(", "), order())),
    }
    let get = |name: &str| spec.iter().position(|f| f.name == name).and_then(|i| vals[i].as_ref());
    let num = |name: &str| get(name).map_or(0, Val::one);
    let op = match m {
        Mnemonic::Filler => return Ok(vec![FILLER]),
        Mnemonic::Dword => return Ok(vec![num("value")]),
        Mnemonic::Packet(op) => op,
    };
    let payload: Vec<u32> = match op {
        Opcode::Nop => match (get("payload"), get("dwords")) {
            (Some(p), _) => p.many().to_vec(),
            (None, Some(n)) => vec![0; n.one() as usize],
            (None, None) => vec![],
        },
        Opcode::SetContextReg => {
            let mut v = vec![num("offset")];
            v.extend_from_slice(get("values").map_or(&[][..], Val::many));
            v
        }
        Opcode::IndexType => vec![u32::from(num("size") == 32)],
        Opcode::DrawIndexAuto => vec![num("count"), num("initiator")],
        Opcode::DrawIndexOffset2 => vec![num("max_size"), num("offset"), num("count"), num("initiator")],
        Opcode::DispatchDirect => vec![num("x"), num("y"), num("z"), num("initiator")],
        Opcode::WriteData => {
            let mut v = vec![num("control"), num("addr"), 0];
            v.extend_from_slice(get("data").map_or(&[][..], Val::many));
            v
        }
        Opcode::IndirectBuffer => vec![num("addr"), 0, num("size")],
        Opcode::SetShReg => {
            let mut v = vec![(num("reg") - SH_BASE) / 4];
            v.extend_from_slice(get("values").map_or(&[][..], Val::many));
            v
        }
        Opcode::ReleaseMem => {
            let data = get("data").map_or(&[0, 0][..], Val::many);
            vec![num("event"), (num("data_sel") << 29) | (num("int_sel") << 24) | num("control"), num("addr"), 0, data[0], data[1]]
        }
    };
    let mut out = Vec::with_capacity(1 + payload.len());
    out.push(header(op, payload.len() as u32) | (num("shader") << 1) | num("predicate"));
    out.extend(payload);
    Ok(out)
}

/// The lines that hold something: (1-based number, the line trimmed, the
/// code: the line without its comment, trimmed).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let code = line.split('#').next().unwrap_or("").trim();
        (!code.is_empty()).then_some((i + 1, line.trim(), code))
    })
}

fn asm_error(line: usize, text: &str, message: String) -> AsmError {
    AsmError { line, text: short(text), message }
}

/// Appends a line's dwords to a program, or an error when the program
/// would pass [`MAX_PROGRAM_DWORDS`] (reported once).
fn push_packet(out: &mut Vec<u32>, dwords: Vec<u32>, line: usize, text: &str, errors: &mut AsmErrors, full: &mut bool) {
    if *full {
        return;
    }
    if out.len() + dwords.len() > MAX_PROGRAM_DWORDS {
        *full = true;
        errors.push(asm_error(
            line,
            text,
            format!("the program passes {MAX_PROGRAM_DWORDS} dwords (16 MiB), the most gpurtl assembles; split it"),
        ));
        return;
    }
    out.extend(dwords);
}

const RUN_FILE: &str =
    "a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only";

/// Assemble packet lines (docs/cmdproc.md, "Assembler text") into dwords;
/// every bad line is reported, in line order.
pub fn assemble(text: &str) -> Result<Vec<u32>, Vec<AsmError>> {
    let mut out = Vec::new();
    let mut errors = AsmErrors::default();
    let mut full = false;
    for (n, line, code) in code_lines(text) {
        if code.starts_with('.') {
            let d = code.split_whitespace().next().unwrap_or("");
            let msg = match d {
                ".registers" | ".memory" => format!("`{d}`: {RUN_FILE}"),
                ".pipeline" => "`.pipeline`: a `.pipeline` line belongs to a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only".to_string(),
                _ => format!("unknown directive `{}`: {RUN_FILE}", short(d)),
            };
            errors.push(asm_error(n, line, msg));
            continue;
        }
        match assemble_line(code) {
            Ok(d) => push_packet(&mut out, d, n, line, &mut errors, &mut full),
            Err(m) => errors.push(asm_error(n, line, m)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(AsmErrors::finish([errors]))
    }
}

fn join(v: &[u32]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

/// A packet's line in mnemonic form, if it has one (checked by the caller).
fn packet_text(pkt: &[u32]) -> Option<String> {
    let h = pkt[0];
    if h == FILLER {
        return Some("FILLER".into());
    }
    if h >> 30 != 3 || h & 0xFC != 0 {
        return None;
    }
    let op = Opcode::from_code((h >> 8) & 0xFF)?;
    let p = &pkt[1..];
    if !op.count_ok(p.len() as u32) {
        return None;
    }
    let name = op.name();
    let mut s = match op {
        Opcode::Nop if p.is_empty() => name.to_string(),
        Opcode::Nop => format!("{name} payload={}", join(p)),
        Opcode::SetContextReg => format!("{name} offset={} values={}", p[0], join(&p[1..])),
        Opcode::IndexType if p[0] <= 1 => format!("{name} size={}", if p[0] == 0 { 16 } else { 32 }),
        Opcode::IndexType => return None,
        Opcode::DrawIndexAuto => format!("{name} count={} initiator=0x{:08x}", p[0], p[1]),
        Opcode::DrawIndexOffset2 => {
            format!("{name} max_size={} offset={} count={} initiator=0x{:08x}", p[0], p[1], p[2], p[3])
        }
        Opcode::DispatchDirect => format!("{name} x={} y={} z={} initiator=0x{:08x}", p[0], p[1], p[2], p[3]),
        Opcode::WriteData => format!("{name} control=0x{:08x} addr=0x{:08x} data={}", p[0], p[1], join(&p[3..])),
        Opcode::IndirectBuffer => format!("{name} addr=0x{:08x} size={}", p[0], p[2]),
        Opcode::SetShReg if p[0] >= 0x400 => return None,
        Opcode::SetShReg => format!("{name} reg={} values={}", sh_reg_text(p[0]), join(&p[1..])),
        Opcode::ReleaseMem if p[3] != 0 => return None,
        Opcode::ReleaseMem => release_text(&[p[0], p[1], p[2], p[3], p[4], p[5]]),
    };
    push_bits(&mut s, h);
    Some(s)
}

fn dword_line(out: &mut String, v: u32) {
    out.push_str(&format!("DWORD value=0x{v:08x}\n"));
}

/// Dwords to packet lines, one a line: a packet in mnemonic form when
/// assembling that line gives back its dwords, else each of its dwords as
/// `DWORD`; a packet that runs past the end is printed as `DWORD`s.
pub fn disassemble(dwords: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < dwords.len() {
        let h = dwords[i];
        let len = if h >> 30 == 3 { 1 + payload_count(h) as usize } else { 1 };
        let Some(pkt) = dwords.get(i..i + len) else {
            for v in &dwords[i..] {
                dword_line(&mut out, *v);
            }
            break;
        };
        match packet_text(pkt) {
            Some(line) if assemble_line(&line).is_ok_and(|d| d == pkt) => {
                out.push_str(&line);
                out.push('\n');
            }
            _ => {
                for v in pkt {
                    dword_line(&mut out, *v);
                }
            }
        }
        i += len;
    }
    out
}

/// The keys of a `.registers` line; `mem_latency` goes to the input's top level.
pub const REGISTER_KEYS: [&str; 8] =
    ["cmd_base", "cmd_size", "prim_base", "prim_size", "state", "state_ptr", "irq_enable", "mem_latency"];

/// The keys of a `.pipeline` line (the input's `"pipeline"` object;
/// `kerr` is for compute mode, which the JSON reader checks).
pub const PIPELINE_KEYS: [&str; 3] = ["stall", "seed", "kerr"];

/// `mem_latency` when the run file gives none.
pub const DEFAULT_MEM_LATENCY: u32 = 20;

/// A run file in text form (docs/cmdproc.md, "Assembler text"): `.registers`,
/// `.memory` and `.pipeline` lines, then packet lines, to the JSON input of
/// `gpurtl run cmdproc`. The packets are placed at `cmd_base` (first in
/// `memory`); `cmd_size` is 4 x their dwords unless given; `mem_latency` is
/// 20 unless given; `"pipeline"` is there when a `.pipeline` line is. Only
/// syntax and numbers (< 2^32; a seed < 2^64, a stall a decimal number) are
/// checked here; the JSON reader checks the rest.
pub fn run_input(text: &str) -> Result<Value, Vec<AsmError>> {
    let mut errors = AsmErrors::default();
    let mut packets = Vec::new();
    let mut full = false;
    let mut seen_packet = false;
    let mut regs: Vec<(&'static str, Value)> = Vec::new();
    let mut first_registers: Option<(usize, &str)> = None;
    let mut memory: Vec<Value> = Vec::new();
    let mut pipeline: Option<Vec<(&'static str, Value)>> = None;
    for (n, line, code) in code_lines(text) {
        if !code.starts_with('.') {
            seen_packet = true;
            match assemble_line(code) {
                Ok(d) => push_packet(&mut packets, d, n, line, &mut errors, &mut full),
                Err(m) => errors.push(asm_error(n, line, m)),
            }
            continue;
        }
        let mut toks = code.split_whitespace();
        let d = toks.next().unwrap_or("");
        let r = if !matches!(d, ".registers" | ".memory" | ".pipeline") {
            Err(vec![format!("unknown directive `{}`; known: .registers, .memory, .pipeline", short(d))])
        } else if seen_packet {
            Err(vec![format!("`{d}` after a packet: `.registers`, `.memory` and `.pipeline` lines come before the packets")])
        } else if d == ".registers" {
            first_registers.get_or_insert((n, line));
            registers_line(toks, &mut regs)
        } else if d == ".pipeline" {
            pipeline_line(toks, pipeline.get_or_insert_with(Vec::new))
        } else {
            memory_line(toks).map(|m| memory.push(m)).map_err(|m| vec![m])
        };
        for m in r.err().into_iter().flatten() {
            errors.push(asm_error(n, line, m));
        }
    }
    let get = |k: &str| regs.iter().find(|(x, _)| *x == k).map(|(_, v)| v.clone());
    if get("cmd_base").is_none() {
        let msg = "missing register `cmd_base`: the packets are placed there".to_string();
        match first_registers {
            Some((n, line)) => errors.insert(asm_error(n, line, msg)),
            None => errors.insert(
                asm_error(0, "", "a run file needs a `.registers cmd_base=ADDR ...` line before its packets (the packets are placed at cmd_base)".into()),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(AsmErrors::finish([errors]));
    }
    let mut registers = Map::new();
    for k in REGISTER_KEYS.iter().filter(|k| **k != "mem_latency") {
        let v = match (*k, get(k)) {
            (_, Some(v)) => v,
            ("cmd_size", None) => json!(4 * packets.len() as u64),
            _ => continue,
        };
        registers.insert(k.to_string(), v);
    }
    let cmd_base = get("cmd_base").unwrap_or(json!(0));
    let mut mem = Vec::new();
    if !packets.is_empty() {
        mem.push(json!({"addr": cmd_base, "dwords": packets}));
    }
    mem.extend(memory);
    let mut input = json!({
        "registers": registers,
        "memory": mem,
        "mem_latency": get("mem_latency").unwrap_or(json!(DEFAULT_MEM_LATENCY)),
    });
    if let Some(pipe) = pipeline {
        let o: Map<String, Value> = pipe.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        input["pipeline"] = Value::Object(o);
    }
    Ok(input)
}

/// The `name=value` fields of a `.registers` or `.pipeline` line into
/// `out` (over all such lines, each key at most once), each value read by
/// `value`; every bad field is reported (the good ones are kept). `noun`
/// names one field in messages, `plural` them all.
fn keyed_line<'a>(
    toks: impl Iterator<Item = &'a str>,
    keys: &[&'static str],
    (noun, plural): (&str, &str),
    out: &mut Vec<(&'static str, Value)>,
    value: impl Fn(&'static str, &str) -> Result<Value, String>,
) -> Result<(), Vec<String>> {
    let known = || keys.join(", ");
    let mut errs = Vec::new();
    for tok in toks {
        let Some((name, raw)) = tok.split_once('=') else {
            errs.push(format!("`{}` is not a {noun}: {plural} are written name=value; known: {}", short(tok), known()));
            continue;
        };
        let Some(key) = keys.iter().copied().find(|k| *k == name) else {
            errs.push(format!("unknown {noun} `{}`; known: {}", short(name), known()));
            continue;
        };
        if out.iter().any(|(k, _)| *k == key) {
            errs.push(format!("{noun} `{key}` is given twice"));
            continue;
        }
        match value(key, raw) {
            Ok(v) => out.push((key, v)),
            Err(m) => errs.push(m),
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// The fields of a `.pipeline stall=P seed=S [kerr=I,J]` line into `pipe`.
/// `P` is a decimal number (digits, optionally a point and digits), `S` a
/// number below 2^64 (decimal, or `0x` and hex digits), `kerr` a comma
/// list of numbers (as `state=`); the JSON reader checks `P <= 1`, that
/// `stall` and `seed` are given, the ids `<= 65535` and that `kerr` comes
/// with `compute = true`.
fn pipeline_line<'a>(toks: impl Iterator<Item = &'a str>, pipe: &mut Vec<(&'static str, Value)>) -> Result<(), Vec<String>> {
    keyed_line(toks, &PIPELINE_KEYS, ("pipeline field", "fields"), pipe, |key, raw| {
        if key == "kerr" {
            number_list("pipeline field `kerr`", raw).map(|l| json!(l))
        } else if key == "stall" {
            decimal(raw).map(|f| json!(f)).ok_or_else(|| {
                format!("pipeline field `stall` = `{}` is not a decimal number (digits, or digits, a point and digits, such as 0.3)", short(raw))
            })
        } else {
            seed_number(raw).map(|s| json!(s)).ok_or_else(|| {
                format!("pipeline field `seed` = `{}` is not a number below 2^64 = 18446744073709551616 (decimal, or 0x and hex digits)", short(raw))
            })
        }
    })
}

/// A decimal number `D+` or `D+.D+` as an f64 (correctly rounded).
fn decimal(s: &str) -> Option<f64> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    (digits(int) && frac.is_none_or(digits)).then(|| s.parse::<f64>().ok()).flatten()
}

/// A number below 2^64: decimal, or `0x` and hex digits.
fn seed_number(s: &str) -> Option<u64> {
    let (digits, radix) = match s.strip_prefix("0x") {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The registers of a `.registers` line into `regs`; every bad field is
/// reported (the good ones are kept).
fn registers_line<'a>(toks: impl Iterator<Item = &'a str>, regs: &mut Vec<(&'static str, Value)>) -> Result<(), Vec<String>> {
    keyed_line(toks, &REGISTER_KEYS, ("register", "registers"), regs, |key, raw| {
        let what = format!("register `{key}`");
        if key == "state" {
            number_list(&what, raw).map(|l| json!(l))
        } else {
            one_number(&what, raw).map(|n| json!(n))
        }
    })
}

fn memory_line<'a>(mut toks: impl Iterator<Item = &'a str>) -> Result<Value, String> {
    const FORM: &str = "`.memory ADDR D1,D2,...` (a byte address and a comma list of dwords)";
    let (Some(addr), Some(list), None) = (toks.next(), toks.next(), toks.next()) else {
        return Err(format!("must be {FORM}"));
    };
    let addr = one_number("the address", addr)?;
    let dwords = number_list("the dwords", list)?;
    Ok(json!({"addr": addr, "dwords": dwords}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn rec(header: u32, count: u32, p: [u32; 4]) -> Record {
        Record { id: 7, addr: 0x1000, header, count, p: [p[0], p[1], p[2], p[3], 0, 0] }
    }
    fn rec6(header: u32, count: u32, p: [u32; 6]) -> Record {
        Record { id: 7, addr: 0x1000, header, count, p }
    }

    #[test]
    fn pm4_trace_lines() {
        let h = |op, n| header(op, n);
        assert_eq!(trace_line(&rec(h(Opcode::Nop, 0), 0, [0; 4])), "#7 @0x00001000 NOP");
        assert_eq!(trace_line(&rec(h(Opcode::Nop, 9), 9, [1, 2, 3, 4])), "#7 @0x00001000 NOP dwords=9");
        assert_eq!(
            trace_line(&rec(h(Opcode::SetContextReg, 8), 8, [2, 5, 6, 7])),
            "#7 @0x00001000 SET_CONTEXT_REG offset=2 values=5,6,7,...+4"
        );
        assert_eq!(trace_line(&rec(h(Opcode::SetContextReg, 4), 4, [2, 5, 6, 7])), "#7 @0x00001000 SET_CONTEXT_REG offset=2 values=5,6,7");
        assert_eq!(trace_line(&rec(h(Opcode::SetContextReg, 2), 2, [2, 5, 0, 0])), "#7 @0x00001000 SET_CONTEXT_REG offset=2 values=5");
        assert_eq!(
            trace_line(&rec(h(Opcode::WriteData, 4) | 3, 4, [1, 0x2000, 0, 9])),
            "#7 @0x00001000 WRITE_DATA control=0x00000001 addr=0x00002000 data=9 shader=1 predicate=1"
        );
        assert_eq!(
            trace_line(&rec(h(Opcode::WriteData, 10), 10, [0, 0x2000, 0, 9])),
            "#7 @0x00001000 WRITE_DATA control=0x00000000 addr=0x00002000 data=9,...+6"
        );
        assert_eq!(trace_line(&rec(h(Opcode::IndexType, 1), 1, [0, 0, 0, 0])), "#7 @0x00001000 INDEX_TYPE size=16");
        assert_eq!(trace_line(&rec(h(Opcode::IndexType, 1) | 2, 1, [1, 0, 0, 0])), "#7 @0x00001000 INDEX_TYPE size=32 shader=1");
        assert_eq!(
            trace_line(&rec(h(Opcode::DrawIndexAuto, 2) | 1, 2, [3, 0x22, 0, 0])),
            "#7 @0x00001000 DRAW_INDEX_AUTO count=3 initiator=0x00000022 predicate=1"
        );
        assert_eq!(
            trace_line(&rec(h(Opcode::DrawIndexOffset2, 4), 4, [10, 2, 3, 0x22])),
            "#7 @0x00001000 DRAW_INDEX_OFFSET_2 max_size=10 offset=2 count=3 initiator=0x00000022"
        );
        assert_eq!(
            trace_line(&rec(h(Opcode::DispatchDirect, 4), 4, [1, 2, 3, 4])),
            "#7 @0x00001000 DISPATCH_DIRECT x=1 y=2 z=3 initiator=0x00000004"
        );
        assert_eq!(
            trace_line(&Record { id: 65535, addr: 0xFFFF_FFFC, header: h(Opcode::IndirectBuffer, 3), count: 3, p: [0x4000, 0, 0xFFF0_0010, 0, 0, 0] }),
            "#65535 @0xfffffffc INDIRECT_BUFFER addr=0x00004000 size=16"
        );
        // Trace lines are comments to the assembler.
        assert_eq!(assemble("#0 @0x00001000 NOP\nNOP\n"), Ok(vec![h(Opcode::Nop, 0)]));
    }

    #[test]
    fn pm4_headers() {
        assert_eq!(header(Opcode::Nop, 0), 0xFFFF_1000);
        assert_eq!(header(Opcode::Nop, 1), 0xC000_1000);
        assert_eq!(header(Opcode::SetContextReg, 3), 0xC002_6900);
        assert_eq!(header(Opcode::Nop, MAX_PAYLOAD), 0xFFFE_1000);
        for n in [0, 1, 2, 100, MAX_PAYLOAD] {
            assert_eq!(payload_count(header(Opcode::WriteData, n)), n);
        }
    }

    const EVERY: &str = "\
NOP
NOP payload=1,2,3
SET_CONTEXT_REG offset=2 values=5,6,7,8,9
INDEX_TYPE size=16
INDEX_TYPE size=32 shader=1
DRAW_INDEX_AUTO count=3 initiator=0x00000002
DRAW_INDEX_OFFSET_2 max_size=100 offset=4 count=6 initiator=0x00000000 predicate=1
DISPATCH_DIRECT x=1 y=2 z=3 initiator=0x00000001 shader=1 predicate=1
WRITE_DATA control=0x00000500 addr=0x00002002 data=1,2,3
INDIRECT_BUFFER addr=0x00004000 size=1048575
FILLER
DWORD value=0x00000000
DWORD value=0x40001234
DWORD value=0x80000001
";

    #[test]
    fn pm4_assembles_every_mnemonic() {
        let d = assemble(EVERY).unwrap();
        assert_eq!(
            d,
            vec![
                0xFFFF_1000,
                0xC002_1000,
                1,
                2,
                3,
                0xC005_6900,
                2,
                5,
                6,
                7,
                8,
                9,
                0xC000_2A00,
                0,
                0xC000_2A02,
                1,
                0xC001_2D00,
                3,
                2,
                0xC003_3501,
                100,
                4,
                6,
                0,
                0xC003_1503,
                1,
                2,
                3,
                1,
                0xC005_3700,
                0x500,
                0x2002,
                0,
                1,
                2,
                3,
                0xC002_3F00,
                0x4000,
                0,
                0xFFFFF,
                0x8000_0000,
                0,
                0x4000_1234,
                0x8000_0001,
            ]
        );
        assert_eq!(disassemble(&d), EVERY);
        // Comments, blank lines, spacing, hex and `dwords=`.
        let t = "  # a program\n\nNOP   dwords=2 # two zeros\n\tDWORD value=0XFF # no: 0X\nDWORD value=0xfF\nNOP dwords=0\n";
        let e = assemble(t).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].line, 4);
        assert_eq!(assemble("NOP dwords=2\nDWORD value=0xfF\nNOP dwords=0 shader=0").unwrap(), vec![0xC001_1000, 0, 0, 255, 0xFFFF_1000]);
        assert_eq!(disassemble(&[0xC001_1000, 0, 0]), "NOP payload=0,0\n");
        assert_eq!(assemble("").unwrap(), Vec::<u32>::new());
        assert_eq!(disassemble(&[]), "");
        assert_eq!(assemble(&format!("NOP dwords={MAX_PAYLOAD}")).unwrap().len(), 1 + MAX_PAYLOAD as usize);
    }

    fn errs(text: &str) -> Vec<String> {
        assemble(text).unwrap_err().iter().map(|e| e.to_string()).collect()
    }

    fn one_err(text: &str, want: &str) {
        assert_eq!(errs(text), vec![want.to_string()], "{text}");
    }

    #[test]
    fn pm4_errors_name_the_line_and_what_is_wrong() {
        one_err(
            "NOP\n\nFOO x=1",
            "line 3: `FOO x=1`: unknown mnemonic `FOO`; known: NOP, SET_CONTEXT_REG, INDEX_TYPE, DRAW_INDEX_AUTO, DRAW_INDEX_OFFSET_2, DISPATCH_DIRECT, WRITE_DATA, INDIRECT_BUFFER, SET_SH_REG, RELEASE_MEM, FILLER, DWORD",
        );
        one_err(
            "INDEX_TYPE bits=16",
            "line 1: `INDEX_TYPE bits=16`: unknown field `bits`; the fields of `INDEX_TYPE` are, in order: size, shader, predicate",
        );
        one_err("FILLER shader=1", "line 1: `FILLER shader=1`: unknown field `shader`; `FILLER` takes no fields");
        one_err(
            "DRAW_INDEX_AUTO count=3",
            "line 1: `DRAW_INDEX_AUTO count=3`: missing field `initiator`; the fields of `DRAW_INDEX_AUTO` are, in order: count, initiator, shader, predicate",
        );
        one_err(
            "DISPATCH_DIRECT x=1",
            "line 1: `DISPATCH_DIRECT x=1`: missing fields `y`, `z`, `initiator`; the fields of `DISPATCH_DIRECT` are, in order: x, y, z, initiator, shader, predicate",
        );
        one_err("DWORD value=1 value=2", "line 1: `DWORD value=1 value=2`: field `value` is given twice");
        one_err(
            "DRAW_INDEX_AUTO initiator=0 count=3",
            "line 1: `DRAW_INDEX_AUTO initiator=0 count=3`: field `count` must come before `initiator`: the fields of `DRAW_INDEX_AUTO` are, in order: count, initiator, shader, predicate",
        );
        one_err(
            "NOP predicate=1 shader=1",
            "line 1: `NOP predicate=1 shader=1`: field `shader` must come before `predicate`: the fields of `NOP` are, in order: payload, dwords, shader, predicate",
        );
        one_err("NOP payload=1 dwords=1", "line 1: `NOP payload=1 dwords=1`: fields `payload` and `dwords`: give one of them, not both");
        one_err(
            "SET_CONTEXT_REG offset=1 values=",
            "line 1: `SET_CONTEXT_REG offset=1 values=`: field `values` is empty: needs at least one value",
        );
        one_err(
            "SET_CONTEXT_REG offset=1",
            "line 1: `SET_CONTEXT_REG offset=1`: missing field `values`; the fields of `SET_CONTEXT_REG` are, in order: offset, values, shader, predicate",
        );
        one_err("WRITE_DATA control=0 addr=0 data=", "line 1: `WRITE_DATA control=0 addr=0 data=`: field `data` is empty: needs at least one value");
        one_err("DWORD value=4294967296", "line 1: `DWORD value=4294967296`: field `value` = `4294967296` is too large: numbers are below 2^32 = 4294967296");
        one_err("DWORD value=0x100000000", "line 1: `DWORD value=0x100000000`: field `value` = `0x100000000` is too large: numbers are below 2^32 = 4294967296");
        one_err(
            "DWORD value=99999999999999999999999",
            "line 1: `DWORD value=99999999999999999999999`: field `value` = `99999999999999999999999` is too large: numbers are below 2^32 = 4294967296",
        );
        one_err("DWORD value=12a", "line 1: `DWORD value=12a`: field `value` = `12a` is not a number (decimal, or 0x and hex digits)");
        one_err("DWORD value=-1", "line 1: `DWORD value=-1`: field `value` = `-1` is not a number (decimal, or 0x and hex digits)");
        one_err("DWORD value=0x", "line 1: `DWORD value=0x`: field `value` = `0x` is not a number (decimal, or 0x and hex digits)");
        one_err("DWORD value=1,2", "line 1: `DWORD value=1,2`: field `value` = `1,2`: takes one number, not a list");
        one_err("DWORD 5", "line 1: `DWORD 5`: `5` is not a field: fields are written name=value; the fields of `DWORD` are, in order: value");
        one_err(
            "NOP payload=1,x,3",
            "line 1: `NOP payload=1,x,3`: field `payload` = `1,x,3`: value 2 `x` is not a number (decimal, or 0x and hex digits)",
        );
        one_err(
            "NOP payload=1,,3",
            "line 1: `NOP payload=1,,3`: field `payload` = `1,,3`: value 2 `` is not a number (decimal, or 0x and hex digits)",
        );
        one_err("INDEX_TYPE size=8", "line 1: `INDEX_TYPE size=8`: field `size` = `8`: must be 16 or 32 (bits per index)");
        one_err(
            "INDIRECT_BUFFER addr=0x1000 size=0x100000",
            "line 1: `INDIRECT_BUFFER addr=0x1000 size=0x100000`: field `size` = `0x100000`: must be below 2^20 = 1048576 (a 20-bit size in dwords)",
        );
        one_err("NOP shader=2", "line 1: `NOP shader=2`: field `shader` = `2`: must be 0 or 1");
        one_err(
            "NOP dwords=16384",
            "line 1: `NOP dwords=16384`: field `dwords` = `16384`: must be at most 16383 (a packet's payload is at most 16383 dwords)",
        );
        let long = format!("SET_CONTEXT_REG offset=0 values={}", vec!["1"; 16383].join(","));
        let e = errs(&long);
        assert_eq!(e.len(), 1);
        assert!(
            e[0].ends_with("field `values` has 16383 values; at most 16382 fit (a packet's payload is at most 16383 dwords)"),
            "{}",
            e[0]
        );
        assert!(e[0].starts_with("line 1: `SET_CONTEXT_REG offset=0 values=1,1,1,1,1,1,1,1,1,1,1,1,1...`: field `values` has"), "{}", e[0]);
        assert_eq!(assemble(&format!("SET_CONTEXT_REG offset=0 values={}", vec!["1"; 16382].join(","))).unwrap().len(), 16384);
        let long = format!("WRITE_DATA control=0 addr=0 data={}", vec!["1"; 16381].join(","));
        assert!(errs(&long)[0].contains("field `data` has 16381 values; at most 16380 fit"));
        // Addresses that the unit refuses still assemble (buffers that must fail).
        assert_eq!(assemble("WRITE_DATA control=0 addr=0x1001 data=1").unwrap(), vec![0xC003_3700, 0, 0x1001, 0, 1]);
        assert_eq!(assemble("INDIRECT_BUFFER addr=0x1003 size=0").unwrap(), vec![0xC002_3F00, 0x1003, 0, 0]);
        // Every bad line is reported, in order; the comment is kept out of the code but in the text.
        let e = errs("NOP\nBAD\nNOP x=1 # why\nINDEX_TYPE size=16\nDWORD value=z\n");
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].starts_with("line 2: `BAD`: unknown mnemonic `BAD`"));
        assert!(e[1].starts_with("line 3: `NOP x=1 # why`: unknown field `x`"));
        assert!(e[2].starts_with("line 5: `DWORD value=z`: field `value` = `z` is not"));
        // Run-file lines are refused by the assembler.
        let e = errs(".registers cmd_base=0\n.memory 0 1\n.foo\nNOP");
        assert_eq!(e, vec![
            "line 1: `.registers cmd_base=0`: `.registers`: a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only",
            "line 2: `.memory 0 1`: `.memory`: a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only",
            "line 3: `.foo`: unknown directive `.foo`: a file with `.registers` or `.memory` lines is a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only",
        ]);
        // Lower case is not a mnemonic.
        assert!(errs("nop")[0].starts_with("line 1: `nop`: unknown mnemonic `nop`; known: NOP,"));
    }

    #[test]
    fn pm4_program_size_is_bounded() {
        let line = format!("NOP dwords={MAX_PAYLOAD}\n");
        let fits = MAX_PROGRAM_DWORDS / (1 + MAX_PAYLOAD as usize);
        assert!(assemble(&line.repeat(fits)).is_ok());
        let e = errs(&line.repeat(fits + 3));
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with(&format!("line {}: `NOP dwords=16383`: the program passes 4194304 dwords", fits + 1)), "{}", e[0]);
    }

    #[test]
    fn pm4_disassembles_what_has_no_mnemonic_as_dwords() {
        let nop = header(Opcode::Nop, 0);
        let dw = |v: &[u32]| v.iter().map(|x| format!("DWORD value=0x{x:08x}\n")).collect::<String>();
        // A packet that runs past the end.
        let d = [nop, header(Opcode::Nop, 3), 1, 2];
        assert_eq!(disassemble(&d), format!("NOP\n{}", dw(&d[1..])));
        // Wrong counts, unknown opcodes, a bad INDEX_TYPE, fields that are not 0, bits [7:2].
        for pkt in [
            vec![header(Opcode::IndexType, 2), 0, 0],
            vec![header(Opcode::IndexType, 1), 2],
            vec![header(Opcode::SetContextReg, 1), 0],
            vec![header(Opcode::WriteData, 3), 0, 0, 0],
            vec![header(Opcode::WriteData, 4), 0, 0, 1, 5],
            vec![header(Opcode::IndirectBuffer, 3), 0, 1, 0],
            vec![header(Opcode::IndirectBuffer, 3), 0, 0, 0x0010_0000],
            vec![header(Opcode::Nop, 0) | 4],
            vec![0xC000_9900, 1],
            vec![0x0000_0000],
            vec![0x4000_0000],
            vec![0x8000_0001],
        ] {
            let mut d = pkt.clone();
            d.push(nop);
            assert_eq!(disassemble(&d), format!("{}NOP\n", dw(&pkt)), "{pkt:x?}");
            assert_eq!(assemble(&disassemble(&d)).unwrap(), d);
        }
    }

    /// A random packet line in canonical form.
    fn random_line(rng: &mut Rng) -> String {
        fn val(rng: &mut Rng) -> u32 {
            match rng.below(4) {
                0 => rng.below(4) as u32,
                1 => u32::MAX - rng.below(2) as u32,
                _ => rng.next_u64() as u32,
            }
        }
        let list = |rng: &mut Rng, len: u64| (0..len).map(|_| (rng.next_u64() as u32 >> rng.below(32)).to_string()).collect::<Vec<_>>().join(",");
        let mut s = match rng.below(12) {
            0 => "NOP".to_string(),
            1 => {
                let n = 1 + rng.below(6);
                format!("NOP payload={}", list(rng, n))
            }
            2 => {
                let (o, n) = (val(rng), 1 + rng.below(6));
                format!("SET_CONTEXT_REG offset={o} values={}", list(rng, n))
            }
            3 => format!("INDEX_TYPE size={}", if rng.chance(50) { 16 } else { 32 }),
            4 => format!("DRAW_INDEX_AUTO count={} initiator=0x{:08x}", val(rng), val(rng)),
            5 => format!("DRAW_INDEX_OFFSET_2 max_size={} offset={} count={} initiator=0x{:08x}", val(rng), val(rng), val(rng), val(rng)),
            6 => format!("DISPATCH_DIRECT x={} y={} z={} initiator=0x{:08x}", val(rng), val(rng), val(rng), val(rng)),
            7 => {
                let (c, a, n) = (val(rng), val(rng), 1 + rng.below(6));
                format!("WRITE_DATA control=0x{c:08x} addr=0x{a:08x} data={}", list(rng, n))
            }
            8 => format!("INDIRECT_BUFFER addr=0x{:08x} size={}", val(rng), rng.below(1 << 20)),
            9 if rng.chance(50) => {
                // A register name, or a byte offset that is not one.
                let n = 1 + rng.below(6);
                let reg = if rng.chance(70) {
                    sh::name(rng.below(sh::REGS as u64) as usize)
                } else {
                    let mut o = rng.below(0x400) as u32;
                    while sh::index(o as u64).is_some() {
                        o = rng.below(0x400) as u32;
                    }
                    format!("0x{:08x}", SH_BASE + 4 * o)
                };
                format!("SET_SH_REG reg={reg} values={}", list(rng, n))
            }
            9 if rng.chance(50) => {
                let control = if rng.chance(50) { val(rng) & !RELEASE_SEL_BITS } else { 0 };
                let control = if control == 0 { String::new() } else { format!(" control=0x{control:08x}") };
                format!(
                    "RELEASE_MEM event=0x{:08x} data_sel={} int_sel={}{control} addr=0x{:08x} data={},{}",
                    val(rng),
                    rng.below(8),
                    rng.below(8),
                    val(rng),
                    val(rng),
                    val(rng)
                )
            }
            9 => return "FILLER".into(),
            // Raw dwords that are packets of their own: types 0, 1 and 2.
            10 => return format!("DWORD value=0x{:08x}", (val(rng) & 0xBFFF_FFFF) | 0x8000_0001),
            _ => return format!("DWORD value=0x{:08x}", val(rng) & 0x7FFF_FFFF),
        };
        if rng.chance(20) {
            s.push_str(" shader=1");
        }
        if rng.chance(20) {
            s.push_str(" predicate=1");
        }
        s
    }

    /// The compute-mode lines (docs/cmdproc.md, "Compute mode", "Assembler
    /// text").
    #[test]
    fn pm4_compute_lines() {
        let a = |t: &str| assemble(t).unwrap_or_else(|e| panic!("{t}: {}", errors_text(&e)));
        // R names the first register written: p0 = (R - 0xB000) / 4.
        assert_eq!(a("SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=64,1,1"), vec![0xC003_7600, 0x207, 64, 1, 1]);
        assert_eq!(a("SET_SH_REG reg=0xB81C values=64,1,1"), vec![0xC003_7600, 0x207, 64, 1, 1]);
        assert_eq!(a("SET_SH_REG reg=COMPUTE_PGM_HI values=0"), vec![0xC001_7600, 0x20D, 0]);
        assert_eq!(a("SET_SH_REG reg=COMPUTE_PGM_RSRC2 values=0"), vec![0xC001_7600, 0x213, 0]);
        assert_eq!(a("SET_SH_REG reg=COMPUTE_USER_DATA_15 values=7 shader=1"), vec![0xC001_7602, 0x24F, 7]);
        // A byte offset that is no register (to write sh_range buffers).
        assert_eq!(a("SET_SH_REG reg=0xB800 values=1"), vec![0xC001_7600, 0x200, 1]);
        assert_eq!(a("SET_SH_REG reg=0xBFFC values=1"), vec![0xC001_7600, 0x3FF, 1]);
        assert_eq!(a("SET_SH_REG reg=45056 values=1"), vec![0xC001_7600, 0, 1]);
        // RELEASE_MEM: p1 = D << 29 | I << 24 | C, p3 = 0.
        assert_eq!(
            a("RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=1,0"),
            vec![0xC005_4900, 0x514, 0x2200_0000, 0x3000, 0, 1, 0]
        );
        assert_eq!(
            a("RELEASE_MEM event=0 data_sel=7 int_sel=7 control=0x18ffffff addr=0 data=0,4294967295 predicate=1"),
            vec![0xC005_4901, 0, 0xFFFF_FFFF, 0, 0, 0, u32::MAX]
        );
        // The disassembler: `reg` as the name or the byte offset, values in
        // decimal; `event`, `control` (when not 0) and `addr` in hex.
        let canon = "SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=64,1,1
SET_SH_REG reg=0x0000b800 values=1
SET_SH_REG reg=0x0000bffc values=1,2
SET_SH_REG reg=COMPUTE_USER_DATA_3 values=4294967295 shader=1
RELEASE_MEM event=0x00000514 data_sel=1 int_sel=2 addr=0x00003000 data=1,0
RELEASE_MEM event=0x00000000 data_sel=7 int_sel=7 control=0x18ffffff addr=0x00000002 data=0,4294967295 shader=1 predicate=1
";
        let d = a(canon);
        assert_eq!(d[..5], [0xC003_7600, 0x207, 64, 1, 1]);
        assert_eq!(disassemble(&d), canon);
        assert_eq!(
            disassemble(&a("SET_SH_REG reg=0xB900 values=0x20000,100
SET_SH_REG reg=COMPUTE_PGM_LO values=0x100,0")),
            "SET_SH_REG reg=COMPUTE_USER_DATA_0 values=131072,100
SET_SH_REG reg=COMPUTE_PGM_LO values=256,0
"
        );
        // p0 >= 0x400, a RELEASE_MEM with p3 != 0 or a count other than 6:
        // DWORDs.
        let dw = |v: &[u32]| v.iter().map(|x| format!("DWORD value=0x{x:08x}
")).collect::<String>();
        for pkt in [
            vec![0xC001_7600, 0x400, 1],
            vec![0xC001_7600, 0x607, 1],
            vec![0xC001_7600, u32::MAX, 1],
            vec![0xC000_7600, 0x207],
            vec![0xC005_4900, 0, 0, 0x3000, 1, 1, 0],
            vec![0xC006_4900, 0, 0, 0x3000, 0, 1, 0, 0],
            vec![0xC004_4900, 0, 0, 0x3000, 0, 1],
        ] {
            assert_eq!(disassemble(&pkt), dw(&pkt), "{pkt:x?}");
            assert_eq!(a(&disassemble(&pkt)), pkt);
        }
        // Errors.
        one_err(
            "SET_SH_REG reg=COMPUTE_FOO values=1",
            "line 1: `SET_SH_REG reg=COMPUTE_FOO values=1`: field `reg` = `COMPUTE_FOO`: not a compute register (COMPUTE_NUM_THREAD_X, _Y, _Z, COMPUTE_PGM_LO, COMPUTE_PGM_HI, COMPUTE_PGM_RSRC1, COMPUTE_PGM_RSRC2, COMPUTE_USER_DATA_0 .. COMPUTE_USER_DATA_15) nor a byte offset",
        );
        for bad in ["0xC000", "0xB002", "0xAFFC", "0x207"] {
            one_err(
                &format!("SET_SH_REG reg={bad} values=1"),
                &format!("line 1: `SET_SH_REG reg={bad} values=1`: field `reg` = `{bad}`: must be a compute register's name or a byte offset from 0xB000 to 0xBFFC, a multiple of 4"),
            );
        }
        one_err("SET_SH_REG reg=0xB81C values=", "line 1: `SET_SH_REG reg=0xB81C values=`: field `values` is empty: needs at least one value");
        one_err(
            "RELEASE_MEM event=0 data_sel=8 int_sel=0 addr=0 data=0,0",
            "line 1: `RELEASE_MEM event=0 data_sel=8 int_sel=0 addr=0 data=0,0`: field `data_sel` = `8`: must be below 8 (3 bits)",
        );
        assert_eq!(
            errs("RELEASE_MEM event=0 data_sel=0 int_sel=0 control=0x01000000 addr=0 data=0,0"),
            vec!["line 1: `RELEASE_MEM event=0 data_sel=0 int_sel=0 control=0x010000...`: field `control` = `0x01000000`: must be clear in bits 31:29 and 26:24 (DATA_SEL and INT_SEL are their own fields)"]
        );
        one_err(
            "RELEASE_MEM event=0 data_sel=0 int_sel=0 addr=0 data=1,2,3",
            "line 1: `RELEASE_MEM event=0 data_sel=0 int_sel=0 addr=0 data=1,2,3`: field `data` has 3 values: takes exactly two (data lo, data hi)",
        );
        one_err(
            "RELEASE_MEM event=0 data_sel=0 int_sel=0 addr=0 data=1",
            "line 1: `RELEASE_MEM event=0 data_sel=0 int_sel=0 addr=0 data=1`: field `data` has 1 values: takes exactly two (data lo, data hi)",
        );
        one_err(
            "RELEASE_MEM event=0 data_sel=0 addr=0 data=1,2",
            "line 1: `RELEASE_MEM event=0 data_sel=0 addr=0 data=1,2`: missing field `int_sel`; the fields of `RELEASE_MEM` are, in order: event, data_sel, int_sel, control, addr, data, shader, predicate",
        );
        // Trace lines from records: with compute = true p0..p5 are held.
        let h = header;
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::SetShReg, 17), 17, [0x240, 1, 2, 3, 4, 5]), true),
            "#7 @0x00001000 SET_SH_REG reg=COMPUTE_USER_DATA_0 values=1,2,3,4,5,...+11"
        );
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::SetShReg, 3) | 2, 3, [0x20C, 0x100, 0, 0, 0, 0]), true),
            "#7 @0x00001000 SET_SH_REG reg=COMPUTE_PGM_LO values=256,0 shader=1"
        );
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::ReleaseMem, 6), 6, [0x514, 0x2200_0000, 0x3000, 0, 1, 0]), true),
            "#7 @0x00001000 RELEASE_MEM event=0x00000514 data_sel=1 int_sel=2 addr=0x00003000 data=1,0"
        );
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::ReleaseMem, 6), 6, [0, 0x5A00_0001, 0x3008, 0, 9, 8]), true),
            "#7 @0x00001000 RELEASE_MEM event=0x00000000 data_sel=2 int_sel=2 control=0x18000001 addr=0x00003008 data=9,8"
        );
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::SetContextReg, 9), 9, [2, 5, 6, 7, 8, 9]), true),
            "#7 @0x00001000 SET_CONTEXT_REG offset=2 values=5,6,7,8,9,...+3"
        );
        assert_eq!(
            trace_line_mode(&rec6(h(Opcode::WriteData, 6), 6, [0, 0x2000, 0, 1, 2, 3]), true),
            "#7 @0x00001000 WRITE_DATA control=0x00000000 addr=0x00002000 data=1,2,3"
        );
        assert_eq!(trace_line(&rec(h(Opcode::SetContextReg, 9), 9, [2, 5, 6, 7])), "#7 @0x00001000 SET_CONTEXT_REG offset=2 values=5,6,7,...+5");
        assert_eq!(record_dwords(false), 4);
        assert_eq!(record_dwords(true), 6);
    }

    #[test]
    fn pm4_random_programs_round_trip() {
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let n = rng.below(20);
            let text: String = (0..n).map(|_| random_line(&mut rng) + "\n").collect();
            let d = assemble(&text).unwrap_or_else(|e| panic!("seed {seed}: {}\n{text}", errors_text(&e)));
            assert_eq!(disassemble(&d), text, "seed {seed}");
        }
    }

    #[test]
    fn pm4_random_dwords_round_trip() {
        for seed in 0..500 {
            let mut rng = Rng::new(seed);
            let n = rng.below(40) as usize;
            // Mostly type-3 headers of known opcodes with short counts, so that
            // packets are found, with random dwords among them.
            let d: Vec<u32> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => rng.next_u64() as u32,
                    1 => rng.below(3) as u32,
                    _ => {
                        let op = *rng.pick(&Opcode::ALL);
                        let c = (rng.below(7) as u32 + 0x3FFF) & 0x3FFF;
                        0xC000_0000 | (c << 16) | (op.code() << 8) | rng.below(4) as u32 | if rng.chance(10) { 0x10 } else { 0 }
                    }
                })
                .collect();
            let t = disassemble(&d);
            assert_eq!(assemble(&t).unwrap_or_else(|e| panic!("seed {seed}: {}\n{t}", errors_text(&e))), d, "seed {seed}\n{t}");
            // Canonical text is a fixed point.
            assert_eq!(disassemble(&assemble(&t).unwrap()), t);
        }
    }

    #[test]
    fn pm4_run_input() {
        let t = "\
# a run
.registers cmd_base=0x1000 prim_base=0x10000 prim_size=1024 state=0,1,2 mem_latency=7
.registers irq_enable=1
.memory 0x10000 1,2,3,4
.memory 0x20000 0xffffffff
NOP
INDEX_TYPE size=16
";
        assert_eq!(
            run_input(t).unwrap(),
            json!({
                "registers": {"cmd_base": 4096, "cmd_size": 12, "prim_base": 65536, "prim_size": 1024, "state": [0, 1, 2], "irq_enable": 1},
                "memory": [
                    {"addr": 4096, "dwords": [header(Opcode::Nop, 0), 0xC000_2A00u32, 0]},
                    {"addr": 65536, "dwords": [1, 2, 3, 4]},
                    {"addr": 131072, "dwords": [0xFFFF_FFFFu32]},
                ],
                "mem_latency": 7,
            })
        );
        assert_eq!(
            run_input(".registers cmd_base=8 cmd_size=4 state= state_ptr=9\n").unwrap(),
            json!({"registers": {"cmd_base": 8, "cmd_size": 4, "state": [], "state_ptr": 9}, "memory": [], "mem_latency": 20})
        );
        let e = |t: &str| run_input(t).unwrap_err().iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert_eq!(
            e("NOP\n"),
            vec!["a run file needs a `.registers cmd_base=ADDR ...` line before its packets (the packets are placed at cmd_base)"]
        );
        assert_eq!(
            e(".registers prim_base=0 foo=1\n.registers cmd_base=1 cmd_base=2\n.registers state=1,x\n.memory 0x10\n.memory x 1\n.memory 0 1,,2\n.bogus\nNOP\n.memory 0 1\nBAD\n"),
            vec![
                "line 1: `.registers prim_base=0 foo=1`: unknown register `foo`; known: cmd_base, cmd_size, prim_base, prim_size, state, state_ptr, irq_enable, mem_latency",
                "line 2: `.registers cmd_base=1 cmd_base=2`: register `cmd_base` is given twice",
                "line 3: `.registers state=1,x`: register `state` = `1,x`: value 2 `x` is not a number (decimal, or 0x and hex digits)",
                "line 4: `.memory 0x10`: must be `.memory ADDR D1,D2,...` (a byte address and a comma list of dwords)",
                "line 5: `.memory x 1`: the address = `x` is not a number (decimal, or 0x and hex digits)",
                "line 6: `.memory 0 1,,2`: the dwords = `1,,2`: value 2 `` is not a number (decimal, or 0x and hex digits)",
                "line 7: `.bogus`: unknown directive `.bogus`; known: .registers, .memory, .pipeline",
                "line 9: `.memory 0 1`: `.memory` after a packet: `.registers`, `.memory` and `.pipeline` lines come before the packets",
                "line 10: `BAD`: unknown mnemonic `BAD`; known: NOP, SET_CONTEXT_REG, INDEX_TYPE, DRAW_INDEX_AUTO, DRAW_INDEX_OFFSET_2, DISPATCH_DIRECT, WRITE_DATA, INDIRECT_BUFFER, SET_SH_REG, RELEASE_MEM, FILLER, DWORD",
            ]
        );
        assert_eq!(
            e(".registers prim_base=0\n.registers cmd_size=0x100000000 x\nNOP"),
            vec![
                "line 1: `.registers prim_base=0`: missing register `cmd_base`: the packets are placed there",
                "line 2: `.registers cmd_size=0x100000000 x`: register `cmd_size` = `0x100000000` is too large: numbers are below 2^32 = 4294967296",
                "line 2: `.registers cmd_size=0x100000000 x`: `x` is not a register: registers are written name=value; known: cmd_base, cmd_size, prim_base, prim_size, state, state_ptr, irq_enable, mem_latency",
            ]
        );
        // Every bad field of a `.registers` line is reported, not only the first.
        assert_eq!(
            e(".registers cmd_base=0x1000 prim_base=y foo=1 state=1,z irq_enable=3 irq_enable=4\nNOP\n"),
            vec![
                "line 1: `.registers cmd_base=0x1000 prim_base=y foo=1 state=1,z ir...`: register `prim_base` = `y` is not a number (decimal, or 0x and hex digits)",
                "line 1: `.registers cmd_base=0x1000 prim_base=y foo=1 state=1,z ir...`: unknown register `foo`; known: cmd_base, cmd_size, prim_base, prim_size, state, state_ptr, irq_enable, mem_latency",
                "line 1: `.registers cmd_base=0x1000 prim_base=y foo=1 state=1,z ir...`: register `state` = `1,z`: value 2 `z` is not a number (decimal, or 0x and hex digits)",
                "line 1: `.registers cmd_base=0x1000 prim_base=y foo=1 state=1,z ir...`: register `irq_enable` is given twice",
            ]
        );
        // 80,000 bad lines: the first 50, then a count.
        let many = e(&format!(".registers cmd_base=0\n{}", "BAD\n".repeat(80_000)));
        assert_eq!(many.len(), SHOWN_ERRORS + 1);
        assert_eq!(many[0], "line 2: `BAD`: unknown mnemonic `BAD`; known: NOP, SET_CONTEXT_REG, INDEX_TYPE, DRAW_INDEX_AUTO, DRAW_INDEX_OFFSET_2, DISPATCH_DIRECT, WRITE_DATA, INDIRECT_BUFFER, SET_SH_REG, RELEASE_MEM, FILLER, DWORD");
        assert_eq!(many[SHOWN_ERRORS], "79950 more bad lines (the first 50 are listed above)");
        let many = assemble(&"BAD\n".repeat(80_000)).unwrap_err();
        assert_eq!(many.len(), SHOWN_ERRORS + 1);
        assert_eq!(many[SHOWN_ERRORS].to_string(), "79950 more bad lines (the first 50 are listed above)");
        assert_eq!(
            e(".registers cmd_base=0 x\n"),
            vec!["line 1: `.registers cmd_base=0 x`: `x` is not a register: registers are written name=value; known: cmd_base, cmd_size, prim_base, prim_size, state, state_ptr, irq_enable, mem_latency"]
        );
    }
}
