//! The compute unit's instruction set (docs/cu.md, "Encoding"): the
//! instruction type, decoding (with the `opcode` / `field` distinction the
//! errors need), encoding, the assembler, the disassembler and the
//! one-instruction text of traces.
//!
//! - [`assemble`]: lines to 64-bit words; every bad line is reported with its
//!   number ([`AsmError`], the same type as the PM4 assembler's).
//! - [`disassemble`]: words to lines; `assemble(disassemble(w)) == w` for any
//!   words, and `disassemble(assemble(t)) == t` for canonical text.
//! - [`text`]: one word's line, without the newline.

pub use crate::models::cmdproc::pm4::{errors_text, AsmError, SHOWN_ERRORS};
use crate::models::cmdproc::pm4::AsmErrors;
pub use gpurtl_params::texture::{AddressMode, Format};
use std::collections::HashMap;

/// The register-register and register-immediate arithmetic operations, by
/// their register-form opcode (`0x01 ..= 0x10`; the immediate form is
/// `op + 0x20`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add = 0x01,
    Sub = 0x02,
    Mul = 0x03,
    Shl = 0x04,
    Shr = 0x05,
    Sra = 0x06,
    And = 0x07,
    Or = 0x08,
    Xor = 0x09,
    Min = 0x0A,
    Max = 0x0B,
    Minu = 0x0C,
    Maxu = 0x0D,
    Slt = 0x0E,
    Sltu = 0x0F,
    Seq = 0x10,
}

impl AluOp {
    pub const ALL: [AluOp; 16] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Shl,
        AluOp::Shr,
        AluOp::Sra,
        AluOp::And,
        AluOp::Or,
        AluOp::Xor,
        AluOp::Min,
        AluOp::Max,
        AluOp::Minu,
        AluOp::Maxu,
        AluOp::Slt,
        AluOp::Sltu,
        AluOp::Seq,
    ];
    /// The register form's opcode.
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<AluOp> {
        Self::ALL.iter().copied().find(|o| o.code() == c)
    }
    /// The register form's mnemonic (the immediate form adds `i`).
    pub fn name(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Sub => "sub",
            AluOp::Mul => "mul",
            AluOp::Shl => "shl",
            AluOp::Shr => "shr",
            AluOp::Sra => "sra",
            AluOp::And => "and",
            AluOp::Or => "or",
            AluOp::Xor => "xor",
            AluOp::Min => "min",
            AluOp::Max => "max",
            AluOp::Minu => "minu",
            AluOp::Maxu => "maxu",
            AluOp::Slt => "slt",
            AluOp::Sltu => "sltu",
            AluOp::Seq => "seq",
        }
    }
    /// The result for `a`, `b` (docs/cu.md, "Scalar arithmetic").
    pub fn apply(self, a: u32, b: u32) -> u32 {
        let (sa, sb) = (a as i32, b as i32);
        match self {
            AluOp::Add => a.wrapping_add(b),
            AluOp::Sub => a.wrapping_sub(b),
            AluOp::Mul => a.wrapping_mul(b),
            AluOp::Shl => a << (b % 32),
            AluOp::Shr => a >> (b % 32),
            AluOp::Sra => (sa >> (b % 32)) as u32,
            AluOp::And => a & b,
            AluOp::Or => a | b,
            AluOp::Xor => a ^ b,
            AluOp::Min => sa.min(sb) as u32,
            AluOp::Max => sa.max(sb) as u32,
            AluOp::Minu => a.min(b),
            AluOp::Maxu => a.max(b),
            AluOp::Slt => u32::from(sa < sb),
            AluOp::Sltu => u32::from(a < b),
            AluOp::Seq => u32::from(a == b),
        }
    }
}

/// The opcodes (docs/cu.md).
pub mod op {
    pub const IMM_FORM: u8 = 0x20;
    pub const LI: u8 = 0x40;
    pub const JMP: u8 = 0x41;
    pub const BNZ: u8 = 0x42;
    pub const BZ: u8 = 0x43;
    pub const LOOP: u8 = 0x44;
    pub const CDL_UD: u8 = 0x50;
    pub const CDL_MEM: u8 = 0x51;
    pub const LD: u8 = 0x60;
    pub const ST: u8 = 0x61;
    pub const MMA: u8 = 0x70;
    pub const ACT: u8 = 0x71;
    pub const CMP: u8 = 0x72;
    pub const EXP: u8 = 0x73;
    pub const TEX: u8 = 0x74;
    pub const END: u8 = 0x7F;
}

/// `cmp`/`exp`'s element size (docs/cu.md, "`cmp`, `exp`"): codes 0, 1, 2
/// for 8, 16, 32 bits (code 3 is no instruction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemSize {
    B8 = 0,
    B16 = 1,
    B32 = 2,
}

impl ElemSize {
    pub const ALL: [ElemSize; 3] = [ElemSize::B8, ElemSize::B16, ElemSize::B32];
    /// The code in `imm` bits 15:8.
    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<ElemSize> {
        Self::ALL.iter().copied().find(|e| e.code() == c)
    }
    /// `e`: 8, 16 or 32.
    pub fn bits(self) -> u32 {
        8 << self.code()
    }
    /// `z = e/8`.
    pub fn bytes(self) -> u32 {
        self.bits() / 8
    }
    pub fn from_bits(b: u64) -> Option<ElemSize> {
        Self::ALL.iter().copied().find(|e| e.bits() as u64 == b)
    }
}

/// `mma`'s `C0` (docs/cu.md, "`mma`"): the mode in `imm` bits 9:8 and,
/// for `bias`, `o/4` in bits 31:16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum C0 {
    /// Mode 0 (no suffix): `C0` is zero, `C = A . B`.
    Zero,
    /// Mode 1 (`, acc`): `C`'s own words before the operation, `C += A . B`.
    Acc,
    /// Mode 2 (`, bias o`): the int32 row at share offset `o` (bytes: a
    /// multiple of 4, below 2^18; encoded as `o/4`) added to every row.
    Bias(u32),
}

impl C0 {
    /// The mode: 0, 1 or 2.
    pub fn mode(self) -> u32 {
        match self {
            C0::Zero => 0,
            C0::Acc => 1,
            C0::Bias(_) => 2,
        }
    }
    /// `imm` bits 9:8 and 31:16.
    fn imm_bits(self) -> u32 {
        let o4 = if let C0::Bias(o) = self { o / 4 } else { 0 };
        self.mode() << 8 | o4 << 16
    }
}

/// The sample ops of `tex` (docs/cu.md, "`tex`"): the kind codes 0, 1, 2
/// of `imm` bits 9:8 (3 is `conv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SampleOp {
    Bilinear = 0,
    Nearest = 1,
    Gather4 = 2,
}

impl SampleOp {
    pub const ALL: [SampleOp; 3] = [SampleOp::Bilinear, SampleOp::Nearest, SampleOp::Gather4];
    /// The kind code in `imm` bits 9:8.
    pub fn code(self) -> u32 {
        self as u32
    }
    pub fn name(self) -> &'static str {
        match self {
            SampleOp::Bilinear => "bilinear",
            SampleOp::Nearest => "nearest",
            SampleOp::Gather4 => "gather4",
        }
    }
    pub fn from_name(s: &str) -> Option<SampleOp> {
        Self::ALL.iter().copied().find(|o| o.name() == s)
    }
}

/// What a `tex` does: `n` samples (`n` 0..16383, 14 bits), or the
/// convolution over `QW x QH` quads (`QW`, `QH` 1..16). The conv's kernel
/// size `KW x KH` is no field of the instruction: it is in the value of
/// `rb` (bits 15:13 = `KW - 1`, 31:29 = `KH - 1`), read at execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TexKind {
    Sample { op: SampleOp, n: u16 },
    Conv { qw: u8, qh: u8 },
}

impl TexKind {
    /// The kind code in `imm` bits 9:8: 0 bilinear, 1 nearest, 2 gather4,
    /// 3 conv.
    pub fn code(self) -> u32 {
        match self {
            TexKind::Sample { op, .. } => op.code(),
            TexKind::Conv { .. } => 3,
        }
    }
    /// `imm` bits 31:18: `n`, or `QW - 1` (27:24), `QH - 1` (31:28) with
    /// bits 23:18 0; each modulo its field.
    fn high_bits(self) -> u32 {
        let m1 = |v: u8| (v as u32).wrapping_sub(1) & 15;
        match self {
            TexKind::Sample { n, .. } => (n as u32 & 0x3FFF) << 18,
            TexKind::Conv { qw, qh } => m1(qw) << 24 | m1(qh) << 28,
        }
    }
}

/// `z`: bytes a texel of a format, 1, 2 or 4.
pub fn texel_bytes(f: Format) -> u32 {
    match f {
        Format::R8 => 1,
        Format::R16 => 2,
        Format::Rgba8 => 4,
    }
}

/// One instruction, its fields as encoded (registers are indices 0..255,
/// immediates and targets 32-bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Insn {
    /// `op rd, ra, rb`.
    Alu { op: AluOp, rd: u8, ra: u8, rb: u8 },
    /// `opi rd, ra, imm`.
    AluI { op: AluOp, rd: u8, ra: u8, imm: u32 },
    Li { rd: u8, imm: u32 },
    Jmp { t: u32 },
    Bnz { ra: u8, t: u32 },
    Bz { ra: u8, t: u32 },
    Loop { rd: u8, t: u32 },
    End,
    /// `cdl rd, n, ud[i]`: `n` in 1..=16.
    CdlUd { rd: u8, n: u8, i: u32 },
    /// `cdl rd, n, [ra + i]`: `n` in 1..=16.
    CdlMem { rd: u8, ra: u8, n: u8, i: u32 },
    /// `ld rd, ra, rb, rc [, p]` (`imm` bit 8, `zmap`, clear).
    Ld { rd: u8, ra: u8, rb: u8, rc: u8, p: u16 },
    /// `ld rd, ra, rb, rc [, p], zmap` (`imm` bit 8 set): the `ld` that also
    /// writes the rows' zero map before `s`. (A variant of its own rather
    /// than a flag of [`Insn::Ld`], so that code building `Insn::Ld` stays
    /// as it was.)
    LdZmap { rd: u8, ra: u8, rb: u8, rc: u8, p: u16 },
    /// `st rd, ra, rb, rc [, p]`.
    St { rd: u8, ra: u8, rb: u8, rc: u8, p: u16 },
    /// `act rd, ra, 0 [, p]`: ReLU (`f` = 0, the only function defined).
    Act { rd: u8, ra: u8, p: u16 },
    /// `cmp rd, ra, rb, rc, e`.
    Cmp { rd: u8, ra: u8, rb: u8, rc: u8, e: ElemSize },
    /// `exp rd, ra, rb, rc, e`.
    Exp { rd: u8, ra: u8, rb: u8, rc: u8, e: ElemSize },
    /// `mma rd, ra, rb, rc [, acc | , bias o] [, pad qa, qb] [, skip]`: `C`
    /// at `rd`, `A` at `ra`, `B` at `rb`, the shape (`TM`, `TN`, `K`) in
    /// `rc`; `C0`; the row pads `qa`, `qb` (0..3, in words); `skip` (`imm`
    /// bit 14): the k-map before `Bo` skips k-steps.
    Mma { rd: u8, ra: u8, rb: u8, rc: u8, c0: C0, qa: u8, qb: u8, skip: bool },
    /// `tex rd, ra, rb, rc, bilinear n, F, MX, MY, c k` (also `nearest n`,
    /// `gather4 n`, `conv QWxQH`): the output `O` at `rd`, the texture `T`
    /// at `ra`, its size (and a conv's kernel size) in `rb`, the coordinate
    /// list `L` (or the conv's start) in `rc`; the format, the address
    /// modes of x and y and the channel `k` (below the format's channels).
    Tex { rd: u8, ra: u8, rb: u8, rc: u8, kind: TexKind, format: Format, mx: AddressMode, my: AddressMode, k: u8 },
}

/// Why a word is no instruction: the `opcode` and `field` errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Undefined opcode.
    Opcode,
    /// A field the instruction does not use is not 0, `cdl`'s `n` is not
    /// 1..16, `act`'s `f` is not 0, or `cmp`/`exp`'s size code is 3
    /// (`mma`: `imm` bits 15:14 not 0, the C0 mode 3, or bits 31:16 not 0
    /// outside mode 2; `tex`: the format or a mode code 3, the channel `k`
    /// not below the format's channels, or for `conv` `imm` bits 23:18 not
    /// 0).
    Field,
}

/// The fields of a word.
#[derive(Clone, Copy, Debug)]
struct Fields {
    op: u8,
    rd: u8,
    ra: u8,
    rb: u8,
    imm: u32,
}

fn fields(w: u64) -> Fields {
    Fields { op: w as u8, rd: (w >> 8) as u8, ra: (w >> 16) as u8, rb: (w >> 24) as u8, imm: (w >> 32) as u32 }
}

fn pack(op: u8, rd: u8, ra: u8, rb: u8, imm: u32) -> u64 {
    op as u64 | (rd as u64) << 8 | (ra as u64) << 16 | (rb as u64) << 24 | (imm as u64) << 32
}

/// The instruction a word encodes.
pub fn decode(w: u64) -> Result<Insn, DecodeError> {
    let f = fields(w);
    // `ok` when every listed unused field is zero.
    let zero = |unused: &[u32]| if unused.iter().all(|&x| x == 0) { Ok(()) } else { Err(DecodeError::Field) };
    let (rd, ra, rb, imm) = (f.rd as u32, f.ra as u32, f.rb as u32, f.imm);
    match f.op {
        c if AluOp::from_code(c).is_some() => {
            zero(&[imm])?;
            Ok(Insn::Alu { op: AluOp::from_code(c).unwrap(), rd: f.rd, ra: f.ra, rb: f.rb })
        }
        c if c > op::IMM_FORM && AluOp::from_code(c - op::IMM_FORM).is_some() => {
            zero(&[rb])?;
            Ok(Insn::AluI { op: AluOp::from_code(c - op::IMM_FORM).unwrap(), rd: f.rd, ra: f.ra, imm })
        }
        op::LI => zero(&[ra, rb]).map(|_| Insn::Li { rd: f.rd, imm }),
        op::JMP => zero(&[rd, ra, rb]).map(|_| Insn::Jmp { t: imm }),
        op::BNZ => zero(&[rd, rb]).map(|_| Insn::Bnz { ra: f.ra, t: imm }),
        op::BZ => zero(&[rd, rb]).map(|_| Insn::Bz { ra: f.ra, t: imm }),
        op::LOOP => zero(&[ra, rb]).map(|_| Insn::Loop { rd: f.rd, t: imm }),
        op::END => zero(&[rd, ra, rb, imm]).map(|_| Insn::End),
        op::CDL_UD => {
            zero(&[ra])?;
            if !(1..=16).contains(&f.rb) {
                return Err(DecodeError::Field);
            }
            Ok(Insn::CdlUd { rd: f.rd, n: f.rb, i: imm })
        }
        op::CDL_MEM => {
            if !(1..=16).contains(&f.rb) {
                return Err(DecodeError::Field);
            }
            Ok(Insn::CdlMem { rd: f.rd, ra: f.ra, n: f.rb, i: imm })
        }
        op::LD | op::ST => {
            // ld: bit 8 = zmap, bits 15:9 unused; st: bits 15:8 unused.
            let zmap = f.op == op::LD && (imm >> 8) & 1 == 1;
            zero(&[(imm >> 8) & 0xFF & if f.op == op::LD { 0xFE } else { 0xFF }])?;
            let (rc, p) = (imm as u8, (imm >> 16) as u16);
            Ok(if f.op == op::LD && zmap {
                Insn::LdZmap { rd: f.rd, ra: f.ra, rb: f.rb, rc, p }
            } else if f.op == op::LD {
                Insn::Ld { rd: f.rd, ra: f.ra, rb: f.rb, rc, p }
            } else {
                Insn::St { rd: f.rd, ra: f.ra, rb: f.rb, rc, p }
            })
        }
        op::MMA => {
            // imm bits 7:0 = rc, 9:8 = the C0 mode, 11:10 = qa, 13:12 = qb,
            // 14 = skip, 15 unused, 31:16 = o/4 (mode 2 only; else unused).
            zero(&[(imm >> 15) & 1])?;
            let skip = (imm >> 14) & 1 == 1;
            let hi = imm >> 16;
            let c0 = match (imm >> 8) & 3 {
                0 => C0::Zero,
                1 => C0::Acc,
                2 => C0::Bias(4 * hi),
                _ => return Err(DecodeError::Field),
            };
            if c0.mode() != 2 {
                zero(&[hi])?;
            }
            let (qa, qb) = ((imm >> 10) as u8 & 3, (imm >> 12) as u8 & 3);
            Ok(Insn::Mma { rd: f.rd, ra: f.ra, rb: f.rb, rc: imm as u8, c0, qa, qb, skip })
        }
        op::ACT => {
            // rb and imm bits 15:8 unused; f (bits 7:0) must be 0 (ReLU).
            zero(&[rb, (imm >> 8) & 0xFF, imm & 0xFF])?;
            Ok(Insn::Act { rd: f.rd, ra: f.ra, p: (imm >> 16) as u16 })
        }
        op::CMP | op::EXP => {
            zero(&[imm >> 16])?;
            let e = ElemSize::from_code((imm >> 8) as u8).ok_or(DecodeError::Field)?;
            let rc = imm as u8;
            Ok(if f.op == op::CMP {
                Insn::Cmp { rd: f.rd, ra: f.ra, rb: f.rb, rc, e }
            } else {
                Insn::Exp { rd: f.rd, ra: f.ra, rb: f.rb, rc, e }
            })
        }
        op::TEX => {
            // imm bits 7:0 = rc, 9:8 = the kind, 11:10 = k, 13:12 = F,
            // 15:14 = MX, 17:16 = MY, 31:18 = n, or for conv 27:24 = QW - 1
            // and 31:28 = QH - 1 with 23:18 unused (not 0: the field
            // error); codes 3 of F, MX, MY and k past the format's channels
            // are the field error.
            let format = Format::from_code(((imm >> 12) & 3) as u64).ok_or(DecodeError::Field)?;
            let mx = AddressMode::from_code(((imm >> 14) & 3) as u64).ok_or(DecodeError::Field)?;
            let my = AddressMode::from_code(((imm >> 16) & 3) as u64).ok_or(DecodeError::Field)?;
            let k = ((imm >> 10) & 3) as u8;
            if k as u32 >= format.channels() {
                return Err(DecodeError::Field);
            }
            let kind = match (imm >> 8) & 3 {
                3 => {
                    zero(&[(imm >> 18) & 0x3F])?;
                    TexKind::Conv { qw: ((imm >> 24) & 15) as u8 + 1, qh: ((imm >> 28) & 15) as u8 + 1 }
                }
                c => TexKind::Sample { op: SampleOp::ALL[c as usize], n: (imm >> 18) as u16 },
            };
            Ok(Insn::Tex { rd: f.rd, ra: f.ra, rb: f.rb, rc: imm as u8, kind, format, mx, my, k })
        }
        _ => Err(DecodeError::Opcode),
    }
}

/// The word of an instruction (`cdl`'s `n` is encoded as given; `mma`'s
/// `qa`, `qb` modulo 4 and its bias offset `o` as `(o/4) mod 2^16`; `tex`'s
/// `k` modulo 4, `n` modulo 2^14 and `QW - 1`, `QH - 1` modulo 16).
pub fn encode(i: &Insn) -> u64 {
    match *i {
        Insn::Alu { op, rd, ra, rb } => pack(op.code(), rd, ra, rb, 0),
        Insn::AluI { op, rd, ra, imm } => pack(op.code() + op::IMM_FORM, rd, ra, 0, imm),
        Insn::Li { rd, imm } => pack(op::LI, rd, 0, 0, imm),
        Insn::Jmp { t } => pack(op::JMP, 0, 0, 0, t),
        Insn::Bnz { ra, t } => pack(op::BNZ, 0, ra, 0, t),
        Insn::Bz { ra, t } => pack(op::BZ, 0, ra, 0, t),
        Insn::Loop { rd, t } => pack(op::LOOP, rd, 0, 0, t),
        Insn::End => pack(op::END, 0, 0, 0, 0),
        Insn::CdlUd { rd, n, i } => pack(op::CDL_UD, rd, 0, n, i),
        Insn::CdlMem { rd, ra, n, i } => pack(op::CDL_MEM, rd, ra, n, i),
        Insn::Ld { rd, ra, rb, rc, p } => pack(op::LD, rd, ra, rb, rc as u32 | (p as u32) << 16),
        Insn::LdZmap { rd, ra, rb, rc, p } => pack(op::LD, rd, ra, rb, rc as u32 | 1 << 8 | (p as u32) << 16),
        Insn::St { rd, ra, rb, rc, p } => pack(op::ST, rd, ra, rb, rc as u32 | (p as u32) << 16),
        Insn::Act { rd, ra, p } => pack(op::ACT, rd, ra, 0, (p as u32) << 16),
        Insn::Cmp { rd, ra, rb, rc, e } => pack(op::CMP, rd, ra, rb, rc as u32 | (e.code() as u32) << 8),
        Insn::Exp { rd, ra, rb, rc, e } => pack(op::EXP, rd, ra, rb, rc as u32 | (e.code() as u32) << 8),
        Insn::Mma { rd, ra, rb, rc, c0, qa, qb, skip } => pack(
            op::MMA,
            rd,
            ra,
            rb,
            rc as u32 | c0.imm_bits() | (qa as u32 & 3) << 10 | (qb as u32 & 3) << 12 | (skip as u32) << 14,
        ),
        Insn::Tex { rd, ra, rb, rc, kind, format, mx, my, k } => pack(
            op::TEX,
            rd,
            ra,
            rb,
            rc as u32
                | kind.code() << 8
                | (k as u32 & 3) << 10
                | (format.code() as u32) << 12
                | (mx.code() as u32) << 14
                | (my.code() as u32) << 16
                | kind.high_bits(),
        ),
    }
}

/// `[ra]`, `[ra + i]` or `[ra - i]`, `i` read as signed.
fn mem_operand(ra: u8, i: u32) -> String {
    let s = i as i32;
    if s == 0 {
        format!("[r{ra}]")
    } else if s < 0 {
        format!("[r{ra} - {}]", (s as i64).unsigned_abs())
    } else {
        format!("[r{ra} + {s}]")
    }
}

/// The canonical line of an instruction.
pub fn insn_text(i: &Insn) -> String {
    match *i {
        Insn::Alu { op, rd, ra, rb } => format!("{} r{rd}, r{ra}, r{rb}", op.name()),
        Insn::AluI { op, rd, ra, imm } => format!("{}i r{rd}, r{ra}, {}", op.name(), imm as i32),
        Insn::Li { rd, imm } => format!("li r{rd}, {}", imm as i32),
        Insn::Jmp { t } => format!("jmp {t}"),
        Insn::Bnz { ra, t } => format!("bnz r{ra}, {t}"),
        Insn::Bz { ra, t } => format!("bz r{ra}, {t}"),
        Insn::Loop { rd, t } => format!("loop r{rd}, {t}"),
        Insn::End => "end".to_string(),
        Insn::CdlUd { rd, n, i } => format!("cdl r{rd}, {n}, ud[{i}]"),
        Insn::CdlMem { rd, ra, n, i } => format!("cdl r{rd}, {n}, {}", mem_operand(ra, i)),
        Insn::Ld { rd, ra, rb, rc, p } | Insn::LdZmap { rd, ra, rb, rc, p } | Insn::St { rd, ra, rb, rc, p } => {
            let name = if matches!(i, Insn::St { .. }) { "st" } else { "ld" };
            let mut s = format!("{name} r{rd}, r{ra}, r{rb}, r{rc}");
            if p != 0 {
                s.push_str(&format!(", {p}"));
            }
            if matches!(i, Insn::LdZmap { .. }) {
                s.push_str(", zmap");
            }
            s
        }
        Insn::Act { rd, ra, p } => {
            let mut s = format!("act r{rd}, r{ra}, 0");
            if p != 0 {
                s.push_str(&format!(", {p}"));
            }
            s
        }
        Insn::Cmp { rd, ra, rb, rc, e } => format!("cmp r{rd}, r{ra}, r{rb}, r{rc}, {}", e.bits()),
        Insn::Exp { rd, ra, rb, rc, e } => format!("exp r{rd}, r{ra}, r{rb}, r{rc}, {}", e.bits()),
        Insn::Mma { rd, ra, rb, rc, c0, qa, qb, skip } => {
            let mut s = format!("mma r{rd}, r{ra}, r{rb}, r{rc}");
            match c0 {
                C0::Zero => {}
                C0::Acc => s.push_str(", acc"),
                C0::Bias(o) => s.push_str(&format!(", bias {o}")),
            }
            if qa != 0 || qb != 0 {
                s.push_str(&format!(", pad {qa}, {qb}"));
            }
            if skip {
                s.push_str(", skip");
            }
            s
        }
        Insn::Tex { rd, ra, rb, rc, kind, format, mx, my, k } => {
            let kind = match kind {
                TexKind::Sample { op, n } => format!("{} {n}", op.name()),
                TexKind::Conv { qw, qh } => format!("conv {qw}x{qh}"),
            };
            format!("tex r{rd}, r{ra}, r{rb}, r{rc}, {kind}, {}, {}, {}, c {k}", format.name(), mx.name(), my.name())
        }
    }
}

/// One word's line (no newline): the instruction, or `.word 0x` and 16 hex
/// digits for a word that is none.
pub fn text(w: u64) -> String {
    match decode(w) {
        Ok(i) => insn_text(&i),
        Err(_) => format!(".word 0x{w:016x}"),
    }
}

/// Words to lines, one a line, each ending in a newline.
pub fn disassemble(words: &[u64]) -> String {
    let mut out = String::new();
    for &w in words {
        out.push_str(&text(w));
        out.push('\n');
    }
    out
}

// ---- the assembler ----

/// Text shown in a message, shortened past 60 characters.
fn short(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        s.chars().take(MAX - 3).collect::<String>() + "..."
    }
}

/// The operand kinds of the forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opd {
    /// `rN`, N 0..255.
    Reg,
    /// A 32-bit immediate, -2^31 .. 2^32-1.
    Imm,
    /// A target: 0 .. 2^32-1, or a label.
    Target,
    /// `cdl`'s `n`: 1..16.
    N,
    /// `ud[i]` or `[ra +- i]`.
    View,
    /// `ld`/`st`/`act`'s pitch: 0..65535 (optional, last).
    Pitch,
    /// `act`'s function: 0 (ReLU) only.
    Func,
    /// `cmp`/`exp`'s element size: 8, 16 or 32.
    Esize,
}

/// A mnemonic's operands, and the names used in messages.
fn form(mn: &str) -> Option<(&'static [Opd], &'static str)> {
    use Opd::*;
    if AluOp::ALL.iter().any(|o| o.name() == mn) {
        return Some((&[Reg, Reg, Reg], "rd, ra, rb"));
    }
    if let Some(base) = mn.strip_suffix('i') {
        if AluOp::ALL.iter().any(|o| o.name() == base) {
            return Some((&[Reg, Reg, Imm], "rd, ra, i"));
        }
    }
    Some(match mn {
        "li" => (&[Reg, Imm], "rd, i"),
        "jmp" => (&[Target], "t"),
        "bnz" | "bz" => (&[Reg, Target], "ra, t"),
        "loop" => (&[Reg, Target], "rd, t"),
        "end" => (&[], ""),
        "cdl" => (&[Reg, N, View], "rd, n, ud[i] or rd, n, [ra + i]"),
        "ld" => (&[Reg, Reg, Reg, Reg, Pitch], "rd, ra, rb, rc [, p] [, zmap]"),
        "st" => (&[Reg, Reg, Reg, Reg, Pitch], "rd, ra, rb, rc [, p]"),
        "act" => (&[Reg, Reg, Func, Pitch], "rd, ra, f [, p]"),
        "cmp" | "exp" => (&[Reg, Reg, Reg, Reg, Esize], "rd, ra, rb, rc, e"),
        _ => return None,
    })
}

fn known_mnemonics() -> String {
    let mut v: Vec<String> = AluOp::ALL.iter().map(|o| o.name().to_string()).collect();
    v.extend(AluOp::ALL.iter().map(|o| format!("{}i", o.name())));
    v.extend(["li", "jmp", "bnz", "bz", "loop", "end", "cdl", "ld", "st", "mma", "act", "cmp", "exp", "tex", ".word"].map(String::from));
    v.join(", ")
}

/// An unsigned number: decimal, or `0x` and hex digits (either case); at most
/// `max`. `Err(None)`: not a number; `Err(Some(()))`: too large.
fn unsigned(s: &str, max: u64) -> Result<u64, Option<()>> {
    let (digits, radix) = match s.strip_prefix("0x") {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(None);
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > 20 {
        return Err(Some(()));
    }
    let v = u128::from_str_radix(if digits.is_empty() { "0" } else { digits }, radix).map_err(|_| Some(()))?;
    if v > max as u128 {
        return Err(Some(()));
    }
    Ok(v as u64)
}

const NOT_A_NUMBER: &str = "is not a number (decimal or 0x hex)";

/// An unsigned operand in `min..=max`, named `what` in messages.
fn unsigned_in(what: &str, s: &str, min: u64, max: u64) -> Result<u64, String> {
    match unsigned(s, max) {
        Ok(v) if v >= min => Ok(v),
        Err(None) if s.starts_with('-') => Err(format!("{what} `{}` is out of range: must be {min} .. {max}", short(s))),
        Err(None) => Err(format!("{what} `{}` {NOT_A_NUMBER}", short(s))),
        _ => Err(format!("{what} `{}` is out of range: must be {min} .. {max}", short(s))),
    }
}

/// A 32-bit immediate: -2^31 .. 2^32-1, encoded modulo 2^32.
fn imm32(s: &str) -> Result<u32, String> {
    let range = || format!("immediate `{}` is out of range: must be -2147483648 .. 4294967295", short(s));
    match s.strip_prefix('-') {
        Some(m) => match unsigned(m, 1 << 31) {
            Ok(v) => Ok((v as u32).wrapping_neg()),
            Err(None) => Err(format!("immediate `{}` {NOT_A_NUMBER}", short(s))),
            Err(Some(())) => Err(range()),
        },
        None => match unsigned(s, u32::MAX as u64) {
            Ok(v) => Ok(v as u32),
            Err(None) => Err(format!("immediate `{}` {NOT_A_NUMBER}", short(s))),
            Err(Some(())) => Err(range()),
        },
    }
}

/// `rN`, N 0..255.
fn reg(s: &str) -> Result<u8, String> {
    let bad = || format!("`{}` is not a register: registers are r0 .. r255", short(s));
    let Some(d) = s.strip_prefix('r') else { return Err(bad()) };
    if d.is_empty() || !d.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    match d.trim_start_matches('0').parse::<u64>() {
        _ if d.trim_start_matches('0').is_empty() => Ok(0),
        Ok(n) if n <= 255 => Ok(n as u8),
        _ => Err(format!("register `{}` is above r255", short(s))),
    }
}

/// `r` and digits: a register's name (or one above r255), never a label.
fn is_register_name(s: &str) -> bool {
    s.strip_prefix('r').is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// Letters, digits and `_`, not starting with a digit.
fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_') && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A target: a number, or a label (resolved against `labels`).
fn target(s: &str, labels: &HashMap<String, u32>) -> Result<u32, String> {
    if s.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return unsigned_in("target", s, 0, u32::MAX as u64).map(|v| v as u32);
    }
    if !is_identifier(s) || is_register_name(s) {
        return Err(format!("target `{}` is neither a number nor a label name", short(s)));
    }
    labels.get(s).copied().ok_or_else(|| format!("unknown label `{}`", short(s)))
}

/// The view operand of `cdl`: `ud[i]` → (None, i); `[ra]`, `[ra + i]`,
/// `[ra - i]` → (Some(ra), i mod 2^32).
fn view(s: &str) -> Result<(Option<u8>, u32), String> {
    let bad = || format!("`{}` is not a view: `ud[i]`, `[ra]`, `[ra + i]` or `[ra - i]`", short(s));
    if let Some(rest) = s.strip_prefix("ud") {
        let inner = rest.trim_start().strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(bad)?;
        let i = unsigned_in("ud offset", inner.trim(), 0, u32::MAX as u64)?;
        return Ok((None, i as u32));
    }
    let inner = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(bad)?.trim();
    let (r, off) = match inner.find(['+', '-']) {
        None => (inner, None),
        Some(k) => (inner[..k].trim(), Some((&inner[k..k + 1], inner[k + 1..].trim()))),
    };
    let ra = reg(r)?;
    let i = match off {
        None => 0,
        Some(("+", v)) => unsigned_in("offset", v, 0, u32::MAX as u64)? as u32,
        Some((_, v)) => (unsigned_in("offset", v, 0, 1 << 31)? as u32).wrapping_neg(),
    };
    Ok((Some(ra), i))
}

/// One instruction line (label and comment removed, trimmed, not empty).
fn assemble_line(code: &str, labels: &HashMap<String, u32>) -> Result<u64, String> {
    let (mn, rest) = match code.find(char::is_whitespace) {
        Some(k) => (&code[..k], code[k..].trim()),
        None => (code, ""),
    };
    let mut ops: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split(',').map(str::trim).collect() };
    if mn == ".word" {
        return match ops.as_slice() {
            [] => Err("missing operand: `.word` takes one 64-bit value".into()),
            [v] => unsigned_in("value", v, 0, u64::MAX),
            _ => Err("extra operand: `.word` takes one 64-bit value".into()),
        };
    }
    if mn == "mma" {
        return mma_line(&ops);
    }
    if mn == "tex" {
        return tex_line(&ops);
    }
    let Some((kinds, names)) = form(mn) else {
        return Err(format!("unknown mnemonic `{}`; known: {}", short(mn), known_mnemonics()));
    };
    let required = kinds.iter().filter(|k| **k != Opd::Pitch).count();
    let usage = if names.is_empty() { format!("`{mn}` takes no operands") } else { format!("`{mn}` takes {names}") };
    // `ld`'s `zmap`: the last operand, after rc or p (docs/cu.md, "`ld`,
    // `st`"); anywhere else, with a value, or on `st` it is an error.
    let mut zmap = false;
    if mn == "ld" && ops.len() > required && ops.last() == Some(&"zmap") {
        ops.pop();
        zmap = true;
    }
    if mn == "ld" || mn == "st" {
        if ops.iter().filter(|o| keyword(o).0 != "zmap").count() < required {
            return Err(format!("missing operand: {usage}"));
        }
        if let Some(o) = ops.iter().find(|o| keyword(o).0 == "zmap") {
            return Err(if mn == "st" {
                format!("`{}`: only `ld` writes a zero map: {usage}", short(o))
            } else if *o != "zmap" {
                format!("`{}` is not `zmap`: {usage}", short(o))
            } else {
                format!("`zmap` is out of place: {usage}")
            });
        }
    }
    if ops.len() < required {
        return Err(format!("missing operand: {usage}"));
    }
    if ops.len() > kinds.len() {
        return Err(format!("extra operand: {usage}"));
    }
    if let Some(k) = ops.iter().position(|o| o.is_empty()) {
        return Err(format!("operand {} is empty: {usage}", k + 1));
    }
    let mut regs: Vec<u8> = Vec::new();
    let mut imm = 0u32;
    let mut n = 0u8;
    let mut view_op = (None, 0u32);
    let mut pitch = 0u16;
    let mut esize = ElemSize::B8;
    for (kind, o) in kinds.iter().zip(&ops) {
        match kind {
            Opd::Reg => regs.push(reg(o)?),
            Opd::Imm => imm = imm32(o)?,
            Opd::Target => imm = target(o, labels)?,
            Opd::N => n = unsigned_in("n", o, 1, 16)? as u8,
            Opd::View => view_op = view(o)?,
            Opd::Pitch => pitch = unsigned_in("p", o, 0, 65535)? as u16,
            Opd::Func => match unsigned(o, u64::MAX) {
                Ok(0) => {}
                Err(None) if !o.starts_with('-') => return Err(format!("f `{}` {NOT_A_NUMBER}", short(o))),
                _ => return Err(format!("f `{}` is out of range: must be 0 (ReLU; other functions are reserved)", short(o))),
            },
            Opd::Esize => {
                esize = match unsigned(o, u64::MAX) {
                    Ok(b) => ElemSize::from_bits(b),
                    Err(None) if !o.starts_with('-') => return Err(format!("e `{}` {NOT_A_NUMBER}", short(o))),
                    Err(_) => None,
                }
                .ok_or_else(|| format!("e `{}` is not an element size: must be 8, 16 or 32", short(o)))?
            }
        }
    }
    let r = |k: usize| regs[k];
    let insn = if let Some(op) = AluOp::ALL.iter().copied().find(|o| o.name() == mn) {
        Insn::Alu { op, rd: r(0), ra: r(1), rb: r(2) }
    } else if let Some(op) = AluOp::ALL.iter().copied().find(|o| mn.strip_suffix('i') == Some(o.name())) {
        Insn::AluI { op, rd: r(0), ra: r(1), imm }
    } else {
        match mn {
            "li" => Insn::Li { rd: r(0), imm },
            "jmp" => Insn::Jmp { t: imm },
            "bnz" => Insn::Bnz { ra: r(0), t: imm },
            "bz" => Insn::Bz { ra: r(0), t: imm },
            "loop" => Insn::Loop { rd: r(0), t: imm },
            "end" => Insn::End,
            "cdl" => match view_op {
                (None, i) => Insn::CdlUd { rd: r(0), n, i },
                (Some(ra), i) => Insn::CdlMem { rd: r(0), ra, n, i },
            },
            "ld" if zmap => Insn::LdZmap { rd: r(0), ra: r(1), rb: r(2), rc: r(3), p: pitch },
            "ld" => Insn::Ld { rd: r(0), ra: r(1), rb: r(2), rc: r(3), p: pitch },
            "st" => Insn::St { rd: r(0), ra: r(1), rb: r(2), rc: r(3), p: pitch },
            "act" => Insn::Act { rd: r(0), ra: r(1), p: pitch },
            "cmp" => Insn::Cmp { rd: r(0), ra: r(1), rb: r(2), rc: r(3), e: esize },
            "exp" => Insn::Exp { rd: r(0), ra: r(1), rb: r(2), rc: r(3), e: esize },
            _ => unreachable!("form() knows {mn}"),
        }
    };
    Ok(encode(&insn))
}

/// `mma`'s usage, for messages.
const MMA_USAGE: &str = "`mma` takes rd, ra, rb, rc [, acc | , bias o] [, pad qa, qb] [, skip]";

/// An `mma` line's operands (split at commas, trimmed): four registers,
/// then optionally `acc` or `bias o`, then optionally `pad qa, qb`, then
/// optionally `skip`.
fn mma_line(ops: &[&str]) -> Result<u64, String> {
    if ops.len() < 4 {
        return Err(format!("missing operand: {MMA_USAGE}"));
    }
    if let Some(k) = ops.iter().position(|o| o.is_empty()) {
        return Err(format!("operand {} is empty: {MMA_USAGE}", k + 1));
    }
    let mut regs = [0u8; 4];
    for (r, o) in regs.iter_mut().zip(ops) {
        *r = reg(o)?;
    }
    // An option's keyword and the rest of the operand after it.
    let split = |o: &str| -> (String, String) {
        match o.find(char::is_whitespace) {
            Some(k) => (o[..k].to_string(), o[k..].trim().to_string()),
            None => (o.to_string(), String::new()),
        }
    };
    let mut c0 = C0::Zero;
    let (mut qa, mut qb) = (0u8, 0u8);
    let mut i = 4;
    if let Some(o) = ops.get(i) {
        match split(o) {
            (kw, arg) if kw == "acc" && arg.is_empty() => {
                c0 = C0::Acc;
                i += 1;
            }
            (kw, arg) if kw == "bias" => {
                if arg.is_empty() {
                    return Err(format!("missing operand: {MMA_USAGE}"));
                }
                let o = unsigned_in("o", &arg, 0, (1 << 18) - 4)?;
                if o % 4 != 0 {
                    return Err(format!("o `{}` is not a multiple of 4", short(&arg)));
                }
                c0 = C0::Bias(o as u32);
                i += 1;
            }
            (kw, _) if kw == "acc" => {
                return Err(format!("`{}` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {MMA_USAGE}", short(o)));
            }
            _ => {}
        }
    }
    let mut padded = false;
    if let Some(o) = ops.get(i) {
        let (kw, arg) = split(o);
        if kw == "pad" {
            if arg.is_empty() {
                return Err(format!("missing operand: {MMA_USAGE}"));
            }
            qa = unsigned_in("qa", &arg, 0, 3)? as u8;
            let Some(b) = ops.get(i + 1) else {
                return Err(format!("missing operand: {MMA_USAGE}"));
            };
            qb = unsigned_in("qb", b, 0, 3)? as u8;
            i += 2;
            padded = true;
        }
    }
    let mut skip = false;
    if ops.get(i) == Some(&"skip") {
        skip = true;
        i += 1;
    }
    // Anything left: an option out of order or repeated, an unknown one, or
    // an operand after `pad qa, qb` or `skip`.
    if let Some(o) = ops.get(i) {
        let (kw, _) = split(o);
        return Err(if ["acc", "bias", "pad"].contains(&kw.as_str()) || *o == "skip" {
            format!("`{}` is out of place: {MMA_USAGE}", short(o))
        } else if padded || skip {
            format!("extra operand: {MMA_USAGE}")
        } else {
            format!("`{}` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {MMA_USAGE}", short(o))
        });
    }
    Ok(encode(&Insn::Mma { rd: regs[0], ra: regs[1], rb: regs[2], rc: regs[3], c0, qa, qb, skip }))
}

/// `tex`'s usage, for messages.
const TEX_USAGE: &str =
    "`tex` takes rd, ra, rb, rc, bilinear n (or nearest n, gather4 n, conv QWxQH), F, MX, MY, c k";

/// A keyword and the rest of an operand after it (trimmed).
fn keyword(o: &str) -> (&str, &str) {
    match o.find(char::is_whitespace) {
        Some(k) => (&o[..k], o[k..].trim()),
        None => (o, ""),
    }
}

/// `AxB`: two unsigned numbers (each decimal or 0x hex) joined by `x`,
/// named `what` (`QWxQH`) in messages, `a` in `1..=amax` and `b` in
/// `1..=bmax`. The `x` is the first one with a number on each side.
fn size_pair(what: &str, names: (&str, &str), s: &str, amax: u64, bmax: u64) -> Result<(u8, u8), String> {
    let number = |t: &str| !matches!(unsigned(t, u64::MAX), Err(None));
    let at = s.char_indices().filter(|&(_, c)| c == 'x').map(|(i, _)| i).find(|&i| number(&s[..i]) && number(&s[i + 1..]));
    let Some(i) = at else {
        return Err(format!("`{}` is not {what}", short(s)));
    };
    let a = unsigned_in(names.0, &s[..i], 1, amax)?;
    let b = unsigned_in(names.1, &s[i + 1..], 1, bmax)?;
    Ok((a as u8, b as u8))
}

/// A `tex` line's operands (split at commas, trimmed): four registers,
/// the kind (`bilinear n`, `nearest n`, `gather4 n` or `conv QWxQH`), the
/// format, the two address modes and `c k`.
fn tex_line(ops: &[&str]) -> Result<u64, String> {
    if ops.len() < 9 {
        return Err(format!("missing operand: {TEX_USAGE}"));
    }
    if ops.len() > 9 {
        return Err(format!("extra operand: {TEX_USAGE}"));
    }
    if let Some(k) = ops.iter().position(|o| o.is_empty()) {
        return Err(format!("operand {} is empty: {TEX_USAGE}", k + 1));
    }
    let mut regs = [0u8; 4];
    for (r, o) in regs.iter_mut().zip(ops) {
        *r = reg(o)?;
    }
    let not_kind = || format!("`{}` is not `bilinear n`, `nearest n`, `gather4 n` or `conv QWxQH`: {TEX_USAGE}", short(ops[4]));
    let kind = match keyword(ops[4]) {
        (kw, "") if kw == "conv" || SampleOp::from_name(kw).is_some() => return Err(format!("missing operand: {TEX_USAGE}")),
        ("conv", arg) => {
            if arg.contains(char::is_whitespace) {
                return Err(format!("extra operand: {TEX_USAGE}"));
            }
            let (qw, qh) = size_pair("QWxQH (the quads across and down, 1 .. 16 each)", ("QW", "QH"), arg, 16, 16)?;
            TexKind::Conv { qw, qh }
        }
        (kw, arg) => {
            let op = SampleOp::from_name(kw).ok_or_else(not_kind)?;
            if arg.contains(char::is_whitespace) {
                return Err(format!("extra operand: {TEX_USAGE}"));
            }
            TexKind::Sample { op, n: unsigned_in("n", arg, 0, 16383)? as u16 }
        }
    };
    let format = Format::from_name(ops[5]).ok_or_else(|| format!("F `{}` is not a texel format: must be r8, r16 or rgba8", short(ops[5])))?;
    let mode = |what: &str, o: &str| {
        AddressMode::from_name(o).ok_or_else(|| format!("{what} `{}` is not an address mode: must be clamp, repeat or mirror", short(o)))
    };
    let mx = mode("MX", ops[6])?;
    let my = mode("MY", ops[7])?;
    let k = match keyword(ops[8]) {
        ("c", "") => return Err(format!("missing operand: {TEX_USAGE}")),
        ("c", arg) => {
            let top = format.channels() as u64 - 1;
            match unsigned_in("k", arg, 0, top) {
                Ok(k) => k as u8,
                Err(m) if top == 0 && m.contains("out of range") => {
                    return Err(format!("k `{}` is out of range: must be 0 ({} has one channel)", short(arg), format.name()))
                }
                Err(m) => return Err(m),
            }
        }
        _ => return Err(format!("`{}` is not `c k`: {TEX_USAGE}", short(ops[8]))),
    };
    Ok(encode(&Insn::Tex { rd: regs[0], ra: regs[1], rb: regs[2], rc: regs[3], kind, format, mx, my, k }))
}

/// A line taken apart: its labels (each checked) and its code.
struct Line<'a> {
    number: usize,
    text: &'a str,
    labels: Vec<&'a str>,
    code: &'a str,
}

/// Splits the labels (`name:`) off the front of a line's code (comment
/// removed, trimmed).
fn split_labels(code: &str) -> (Vec<&str>, &str) {
    let mut labels = Vec::new();
    let mut rest = code;
    while let Some(k) = rest.find(':') {
        let name = rest[..k].trim();
        // A colon after anything but one word is not a label's.
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains(',') {
            break;
        }
        labels.push(name);
        rest = rest[k + 1..].trim();
    }
    (labels, rest)
}

fn asm_error(line: usize, text: &str, message: String) -> AsmError {
    AsmError { line, text: short(text), message }
}

/// Assemble lines (docs/cu.md, "Assembler and disassembler") into words;
/// every bad line is reported, in line order (a line with several faults is
/// reported once, for its first).
pub fn assemble(text: &str) -> Result<Vec<u64>, Vec<AsmError>> {
    // The label errors (pass 1) and the instructions' (pass 2), each in line order.
    let mut errors = AsmErrors::default();
    let mut insn_errors = AsmErrors::default();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let code = raw.split(['#', ';']).next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        let (labels, code) = split_labels(code);
        lines.push(Line { number: i + 1, text: raw.trim(), labels, code });
    }
    // Pass 1: labels, each the index of the next instruction.
    let mut labels: HashMap<String, u32> = HashMap::new();
    let mut defined_at: HashMap<String, usize> = HashMap::new();
    let mut pc: u64 = 0;
    let mut bad_label_line = std::collections::HashSet::new();
    for l in &lines {
        for &name in &l.labels {
            let msg = if !is_identifier(name) {
                Some(format!(
                    "label `{}` is not a name: letters, digits and `_`, not starting with a digit",
                    short(name)
                ))
            } else if is_register_name(name) {
                Some(format!("label `{}` is a register's name", short(name)))
            } else if let Some(first) = defined_at.get(name) {
                Some(format!("label `{}` is defined twice (first on line {first})", short(name)))
            } else {
                defined_at.insert(name.to_string(), l.number);
                labels.insert(name.to_string(), pc.min(u32::MAX as u64) as u32);
                None
            };
            if let Some(m) = msg {
                if bad_label_line.insert(l.number) {
                    errors.push(asm_error(l.number, l.text, m));
                }
            }
        }
        if !l.code.is_empty() {
            pc += 1;
        }
    }
    // Pass 2: the instructions.
    let mut out = Vec::new();
    for l in &lines {
        if l.code.is_empty() {
            continue;
        }
        match assemble_line(l.code, &labels) {
            Ok(w) => out.push(w),
            Err(m) if !bad_label_line.contains(&l.number) => insn_errors.push(asm_error(l.number, l.text, m)),
            Err(_) => {}
        }
    }
    if errors.is_empty() && insn_errors.is_empty() {
        Ok(out)
    } else {
        Err(AsmErrors::finish([errors, insn_errors]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the round trips.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let x = self.0;
            (x ^ (x >> 29)).wrapping_mul(0xbf58476d1ce4e5b9) ^ (x >> 32)
        }
    }

    fn one(line: &str) -> u64 {
        let w = assemble(line).unwrap_or_else(|e| panic!("{line}: {}", errors_text(&e)));
        assert_eq!(w.len(), 1);
        w[0]
    }

    fn bad(text: &str) -> Vec<String> {
        assemble(text).unwrap_err().iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn encodings_from_the_table() {
        // op 7:0, rd 15:8, ra 23:16, rb 31:24, imm 63:32.
        assert_eq!(one("add r1, r2, r3"), 0x0302_0101);
        assert_eq!(one("seq r255, r0, r7"), 0x0700_FF10);
        assert_eq!(one("addi r1, r2, -4"), 0xFFFF_FFFC_0002_0121);
        assert_eq!(one("seqi r1, r2, 0x10"), 0x10_0002_0130);
        assert_eq!(one("li r5, 4294967295"), 0xFFFF_FFFF_0000_0540);
        assert_eq!(one("li r5, -2147483648"), 0x8000_0000_0000_0540);
        assert_eq!(one("jmp 7"), 0x7_0000_0041);
        assert_eq!(one("bnz r4, 2"), 0x2_0004_0042);
        assert_eq!(one("bz r4, 2"), 0x2_0004_0043);
        assert_eq!(one("loop r6, 1"), 0x1_0000_0644);
        assert_eq!(one("end"), 0x7F);
        assert_eq!(one("cdl r3, 2, ud[8]"), 0x8_0200_0350);
        assert_eq!(one("cdl r3, 16, [r4 + 12]"), 0xC_1004_0351);
        assert_eq!(one("cdl r3, 1, [r4]"), 0x0_0104_0351);
        assert_eq!(one("cdl r3, 1, [r4 - 4]"), 0xFFFF_FFFC_0104_0351);
        assert_eq!(one("ld r1, r2, r3, r4"), 0x4_0302_0160);
        assert_eq!(one("st r1, r2, r3, r4, 65535"), 0xFFFF_0004_0302_0161);
    }

    #[test]
    fn decode_errors() {
        // Undefined opcodes; 0x70..0x74 are mma, act, cmp, exp, tex since
        // docs/cu.md defined them.
        for op in [0x00u64, 0x11, 0x20, 0x31, 0x45, 0x52, 0x62, 0x75, 0x7E, 0x80, 0xFF] {
            assert_eq!(decode(op), Err(DecodeError::Opcode), "{op:#x}");
        }
        // Unused fields.
        assert_eq!(decode(0x1_0302_0101), Err(DecodeError::Field)); // add with imm
        assert_eq!(decode(0x0100_0121), Err(DecodeError::Field)); // addi with rb
        assert_eq!(decode(0x0001_0540), Err(DecodeError::Field)); // li with ra
        assert_eq!(decode(0x0000_0141), Err(DecodeError::Field)); // jmp with rd
        assert_eq!(decode(0x0100_0042), Err(DecodeError::Field)); // bnz with rb
        assert_eq!(decode(0x0001_0044), Err(DecodeError::Field)); // loop with ra
        assert_eq!(decode(0x1_0000_007F), Err(DecodeError::Field)); // end with imm
        assert_eq!(decode(0x0101_0050), Err(DecodeError::Field)); // cdl ud with ra
        assert_eq!(decode(0x0000_0050), Err(DecodeError::Field)); // cdl n = 0
        assert_eq!(decode(0x1100_0051), Err(DecodeError::Field)); // cdl n = 17
        assert_eq!(decode(0x200_0000_0060), Err(DecodeError::Field)); // ld imm bits 15:9
        assert_eq!(decode(0x8000_0000_0060), Err(DecodeError::Field)); // ld imm bit 15
        assert_eq!(decode(0x100_0000_0060), Ok(Insn::LdZmap { rd: 0, ra: 0, rb: 0, rc: 0, p: 0 })); // ld bit 8: zmap
        assert_eq!(decode(0x100_0000_0061), Err(DecodeError::Field)); // st imm bits 15:8
        assert_eq!(decode(0x0100_0000_0000_0061), Ok(Insn::St { rd: 0, ra: 0, rb: 0, rc: 0, p: 256 }));
    }

    #[test]
    fn disassembly_is_canonical() {
        let text = "add r1, r2, r3\n\
                    subi r0, r1, -4\n\
                    srai r0, r1, 31\n\
                    li r9, -1\n\
                    li r9, 2147483647\n\
                    jmp 4294967295\n\
                    bnz r1, 0\n\
                    loop r2, 3\n\
                    end\n\
                    cdl r3, 2, ud[4294967295]\n\
                    cdl r3, 2, [r1]\n\
                    cdl r3, 2, [r1 + 2147483647]\n\
                    cdl r3, 2, [r1 - 2147483648]\n\
                    ld r1, r2, r3, r4\n\
                    st r1, r2, r3, r4, 1\n\
                    .word 0x0000000000000000\n\
                    .word 0x00000000ffffffff\n";
        let w = assemble(text).unwrap();
        assert_eq!(disassemble(&w), text);
        assert_eq!(text_of(&w, 3), "li r9, -1");
        // Non-canonical spellings assemble to the same words.
        assert_eq!(one("addi r1, r2, 0xFFFFFFFC"), one("addi r1, r2, -4"));
        assert_eq!(one("cdl r1, 1, [r2 + 0]"), one("cdl r1, 1, [r2]"));
        assert_eq!(one("cdl r1, 1, [r2 + 4294967292]"), one("cdl r1, 1, [r2 - 4]"));
        assert_eq!(one("cdl r1,1,[r2-4]"), one("cdl r1, 1, [r2 - 4]"));
        assert_eq!(one("ld r1, r2, r3, r4, 0"), one("ld r1, r2, r3, r4"));
        assert_eq!(one(".word 127"), one("end"));
        assert_eq!(super::text(0x7F), "end");
        assert_eq!(super::text(0x75), ".word 0x0000000000000075");
        assert_eq!(super::text(0x74), "tex r0, r0, r0, r0, bilinear 0, r8, clamp, clamp, c 0");
    }

    fn text_of(w: &[u64], i: usize) -> String {
        text(w[i])
    }

    #[test]
    fn round_trip_any_words() {
        let mut g = Lcg(1);
        let mut words = Vec::new();
        for k in 0..20000u64 {
            let w = g.next();
            // Bias towards defined opcodes and zero fields, so most are
            // instructions.
            let op = [0x01, 0x10, 0x21, 0x30, 0x40, 0x41, 0x42, 0x43, 0x44, 0x50, 0x51, 0x60, 0x61, 0x7F][k as usize % 14];
            let masked = match k % 4 {
                0 => w,
                1 => (w & !0xFF) | op,
                2 => (w & 0xFFFF_FFFF_00FF_FF00) | op,
                // Register fields only, zero immediate; cdl's n 1..16.
                _ => (w & 0x0F0F_FF00) | op | if op == 0x50 { 0x0100_0000 } else { 0 },
            };
            words.push(masked);
        }
        let text = disassemble(&words);
        assert_eq!(assemble(&text).unwrap(), words);
        // And the text is canonical: a second round is the same text.
        assert_eq!(disassemble(&assemble(&text).unwrap()), text);
        // Most of them decoded.
        let decoded = text.lines().filter(|l| !l.starts_with(".word")).count();
        assert!(decoded > 2000, "{decoded}");
    }

    #[test]
    fn labels_and_comments() {
        let src = "# a kernel\n\
                   start: li r3, 4   ; four times\n\
                   again:\n\
                   addi r4, r4, 1\n\
                   loop r3, again # back\n\
                   bz r4, done\n\
                   jmp start\n\
                   done: end\n";
        let w = assemble(src).unwrap();
        assert_eq!(
            disassemble(&w),
            "li r3, 4\naddi r4, r4, 1\nloop r3, 1\nbz r4, 5\njmp 0\nend\n"
        );
        // A label at the end is the index past the last instruction; two
        // labels on one line.
        let w = assemble("a: b: jmp c\nc:").unwrap();
        assert_eq!(disassemble(&w), "jmp 1\n");
        // Labels may shadow mnemonics but not registers.
        assert_eq!(assemble("end: jmp end").unwrap(), vec![one("jmp 0")]);
    }

    #[test]
    fn a_file_of_bad_lines_gives_the_first_fifty_and_a_count() {
        // Bad instructions and bad labels, two passes: still in line order.
        let text = "bogus r1, r2\n1x: add r1, r2, r3\n".repeat(40_000);
        let e = assemble(&text).unwrap_err();
        assert_eq!(e.len(), SHOWN_ERRORS + 1);
        assert_eq!(e[0].line, 1);
        assert_eq!(e[1].line, 2);
        assert_eq!(e[SHOWN_ERRORS - 1].line, SHOWN_ERRORS);
        assert_eq!(e[SHOWN_ERRORS].to_string(), "79950 more bad lines (the first 50 are listed above)");
    }

    #[test]
    fn every_bad_line_kind_is_reported_with_its_line() {
        let src = "add r1, r2, r256\n\
                   addi r1, r2, 4294967296\n\
                   addi r1, r2, -2147483649\n\
                   cdl r1, 0, ud[0]\n\
                   cdl r1, 17, ud[0]\n\
                   ld r1, r2, r3, r4, 65536\n\
                   add r1, r2\n\
                   add r1, r2, r3, r4\n\
                   mov r1, r2\n\
                   jmp nowhere\n\
                   x: end\n\
                   x: end\n\
                   r3: end\n\
                   jmp -1\n\
                   li r1, 12abc\n\
                   cdl r1, 1, ud[-4]\n\
                   ADD r1, r2, r3\n\
                   add R1, r2, r3\n\
                   end r1\n\
                   cdl r1, 1, [r2 - 2147483649]\n\
                   1x: end\n\
                   add r1,, r2\n\
                   .word 0x10000000000000000\n";
        let got = bad(src);
        let want = [
            "line 1: `add r1, r2, r256`: register `r256` is above r255",
            "line 2: `addi r1, r2, 4294967296`: immediate `4294967296` is out of range: must be -2147483648 .. 4294967295",
            "line 3: `addi r1, r2, -2147483649`: immediate `-2147483649` is out of range: must be -2147483648 .. 4294967295",
            "line 4: `cdl r1, 0, ud[0]`: n `0` is out of range: must be 1 .. 16",
            "line 5: `cdl r1, 17, ud[0]`: n `17` is out of range: must be 1 .. 16",
            "line 6: `ld r1, r2, r3, r4, 65536`: p `65536` is out of range: must be 0 .. 65535",
            "line 7: `add r1, r2`: missing operand: `add` takes rd, ra, rb",
            "line 8: `add r1, r2, r3, r4`: extra operand: `add` takes rd, ra, rb",
            "line 9: `mov r1, r2`: unknown mnemonic `mov`; known: ",
            "line 10: `jmp nowhere`: unknown label `nowhere`",
            "line 12: `x: end`: label `x` is defined twice (first on line 11)",
            "line 13: `r3: end`: label `r3` is a register's name",
            "line 14: `jmp -1`: target `-1` is out of range: must be 0 .. 4294967295",
            "line 15: `li r1, 12abc`: immediate `12abc` is not a number (decimal or 0x hex)",
            "line 16: `cdl r1, 1, ud[-4]`: ud offset `-4` is out of range: must be 0 .. 4294967295",
            "line 17: `ADD r1, r2, r3`: unknown mnemonic `ADD`; known: ",
            "line 18: `add R1, r2, r3`: `R1` is not a register: registers are r0 .. r255",
            "line 19: `end r1`: extra operand: `end` takes no operands",
            "line 20: `cdl r1, 1, [r2 - 2147483649]`: offset `2147483649` is out of range: must be 0 .. 2147483648",
            "line 21: `1x: end`: label `1x` is not a name: letters, digits and `_`, not starting with a digit",
            "line 22: `add r1,, r2`: operand 2 is empty: `add` takes rd, ra, rb",
            "line 23: `.word 0x10000000000000000`: value `0x10000000000000000` is out of range: must be 0 .. 18446744073709551615",
        ];
        assert_eq!(got.len(), want.len(), "{got:#?}");
        for (g, w) in got.iter().zip(want) {
            assert!(g.starts_with(w), "got  {g}\nwant {w}");
        }
        assert!(errors_text(&assemble("add\nsub").unwrap_err()).contains("line 2: `sub`"));
    }

    // ---- act, cmp, exp ----

    #[test]
    fn vector_encodings_from_the_table() {
        // act: rd, ra; imm 7:0 = f (0), 31:16 = p.
        assert_eq!(one("act r1, r2, 0"), 0x0002_0171);
        assert_eq!(one("act r1, r2, 0, 16"), 0x0010_0000_0002_0171);
        assert_eq!(one("act r255, r254, 0, 65535"), 0xFFFF_0000_00FE_FF71);
        // cmp/exp: rd, ra, rb; imm 7:0 = rc, 15:8 = size code (8: 0, 16: 1, 32: 2).
        assert_eq!(one("cmp r1, r2, r3, r4, 8"), 0x0000_0004_0302_0172);
        assert_eq!(one("cmp r1, r2, r3, r4, 16"), 0x0000_0104_0302_0172);
        assert_eq!(one("exp r1, r2, r3, r4, 32"), 0x0000_0204_0302_0173);
        assert_eq!(one("exp r9, r8, r7, r255, 0x10"), 0x0000_01FF_0708_0973);
        assert_eq!(decode(0x0010_0000_0002_0171), Ok(Insn::Act { rd: 1, ra: 2, p: 16 }));
        assert_eq!(decode(0x0000_0204_0302_0173), Ok(Insn::Exp { rd: 1, ra: 2, rb: 3, rc: 4, e: ElemSize::B32 }));
        for e in ElemSize::ALL {
            assert_eq!(ElemSize::from_code(e.code()), Some(e));
            assert_eq!(ElemSize::from_bits(e.bits() as u64), Some(e));
            assert_eq!(e.bytes() * 8, e.bits());
        }
        assert_eq!(ElemSize::from_code(3), None);
        assert_eq!(ElemSize::from_bits(64), None);
    }

    #[test]
    fn vector_decode_errors() {
        // act: rb, imm bits 15:8, f != 0.
        assert_eq!(decode(0x0100_0071), Err(DecodeError::Field));
        assert_eq!(decode(0x0000_0100_0000_0071), Err(DecodeError::Field));
        assert_eq!(decode(0x0000_8000_0000_0071), Err(DecodeError::Field));
        assert_eq!(decode(0x0000_0001_0000_0071), Err(DecodeError::Field)); // f = 1
        assert_eq!(decode(0x0000_00FF_0000_0071), Err(DecodeError::Field)); // f = 255
        assert_eq!(decode(0xFFFF_0000_00FF_FF71), Ok(Insn::Act { rd: 255, ra: 255, p: 65535 }));
        // cmp/exp: size code 3, imm bits 31:16.
        for op in [0x72u64, 0x73] {
            assert_eq!(decode(0x0000_0300_0000_0000 | op), Err(DecodeError::Field), "{op:#x}");
            assert_eq!(decode(0x0001_0000_0000_0000 | op), Err(DecodeError::Field), "{op:#x}");
            assert_eq!(decode(0x8000_0200_0000_0000 | op), Err(DecodeError::Field), "{op:#x}");
            assert!(decode(0x0000_02FF_FFFF_FF00 | op).is_ok(), "{op:#x}");
        }
        assert_eq!(decode(0x75), Err(DecodeError::Opcode));
    }

    #[test]
    fn vector_disassembly_is_canonical() {
        let text = "act r1, r2, 0\n\
                    act r3, r4, 0, 65535\n\
                    cmp r1, r2, r3, r4, 8\n\
                    cmp r0, r0, r0, r0, 16\n\
                    exp r255, r1, r2, r3, 32\n\
                    .word 0x0000000100020171\n\
                    .word 0x0000030400030272\n\
                    .word 0x0001000000000073\n";
        let w = assemble(text).unwrap();
        assert_eq!(disassemble(&w), text);
        assert_eq!(one("act r1, r2, 0, 0"), one("act r1, r2, 0"));
        assert_eq!(one("act r1,r2,0x0,0x10"), one("act r1, r2, 0, 16"));
        assert_eq!(one("cmp r1,r2,r3,r4,0x20"), one("cmp r1, r2, r3, r4, 32"));
        assert_eq!(super::text(0x0000_0100_0003_0272), "cmp r2, r3, r0, r0, 16");
        assert_eq!(super::text(0x0000_0300_0003_0272), ".word 0x0000030000030272");
    }

    #[test]
    fn vector_round_trip_any_words() {
        let mut g = Lcg(7);
        let mut words = Vec::new();
        for k in 0..20000u64 {
            let w = g.next();
            let op = [0x71u64, 0x72, 0x73][k as usize % 3];
            let masked = match k % 4 {
                0 => (w & !0xFF) | op,
                // Register fields, f or rc, size code, p or zero.
                1 => (w & 0xFFFF_03FF_FFFF_FF00) | op,
                2 => (w & 0x0000_03FF_FFFF_FF00) | op,
                _ => (w & 0xFFFF_0000_00FF_FF00) | op,
            };
            words.push(masked);
        }
        let text = disassemble(&words);
        assert_eq!(assemble(&text).unwrap(), words);
        assert_eq!(disassemble(&assemble(&text).unwrap()), text);
        for m in ["act ", "cmp ", "exp ", ".word"] {
            assert!(text.lines().filter(|l| l.starts_with(m)).count() > 1000, "{m}");
        }
    }

    #[test]
    fn vector_bad_lines() {
        let src = "act r1, r2, 1\n\
                   act r1, r2\n\
                   act r1, r2, 0, 65536\n\
                   act r1, r2, 0, 4, 5\n\
                   act r1, r2, relu\n\
                   act r1, r2, -1\n\
                   cmp r1, r2, r3, r4, 64\n\
                   cmp r1, r2, r3, r4\n\
                   exp r1, r2, r3, r4, 8, 1\n\
                   cmp r1, r2, r3, r256, 8\n\
                   exp r1, r2, r3, r4, -8\n\
                   exp r1, r2, r3, r4, byte\n\
                   cmp r1, r2, r3, 4, 8\n\
                   act r1, r2, 0, -4\n\
                   cmp r1, r2, r3, r4, 0\n";
        let got = bad(src);
        let want = [
            "line 1: `act r1, r2, 1`: f `1` is out of range: must be 0 (ReLU; other functions are reserved)",
            "line 2: `act r1, r2`: missing operand: `act` takes rd, ra, f [, p]",
            "line 3: `act r1, r2, 0, 65536`: p `65536` is out of range: must be 0 .. 65535",
            "line 4: `act r1, r2, 0, 4, 5`: extra operand: `act` takes rd, ra, f [, p]",
            "line 5: `act r1, r2, relu`: f `relu` is not a number (decimal or 0x hex)",
            "line 6: `act r1, r2, -1`: f `-1` is out of range: must be 0 (ReLU; other functions are reserved)",
            "line 7: `cmp r1, r2, r3, r4, 64`: e `64` is not an element size: must be 8, 16 or 32",
            "line 8: `cmp r1, r2, r3, r4`: missing operand: `cmp` takes rd, ra, rb, rc, e",
            "line 9: `exp r1, r2, r3, r4, 8, 1`: extra operand: `exp` takes rd, ra, rb, rc, e",
            "line 10: `cmp r1, r2, r3, r256, 8`: register `r256` is above r255",
            "line 11: `exp r1, r2, r3, r4, -8`: e `-8` is not an element size: must be 8, 16 or 32",
            "line 12: `exp r1, r2, r3, r4, byte`: e `byte` is not a number (decimal or 0x hex)",
            "line 13: `cmp r1, r2, r3, 4, 8`: `4` is not a register: registers are r0 .. r255",
            "line 14: `act r1, r2, 0, -4`: p `-4` is out of range: must be 0 .. 65535",
            "line 15: `cmp r1, r2, r3, r4, 0`: e `0` is not an element size: must be 8, 16 or 32",
        ];
        assert_eq!(got, want);
        assert!(bad("act r1, r2, 0\nfoo").last().unwrap().contains("known: add, "));
        assert!(bad("foo").last().unwrap().contains("act, cmp, exp, tex, .word"));
    }

    // ---- mma ----

    /// `mma`'s `imm`: rc 7:0, C0 mode 9:8, qa 11:10, qb 13:12, o/4 31:16.
    fn mma_imm(rc: u32, mode: u32, qa: u32, qb: u32, o4: u32) -> u64 {
        (rc | mode << 8 | qa << 10 | qb << 12 | o4 << 16) as u64
    }

    #[test]
    fn mma_encoding_from_the_table() {
        // op 0x70; rd, ra, rb; imm bits 7:0 = rc, 9:8 = C0 mode, 11:10 = qa,
        // 13:12 = qb, 31:16 = o/4 (mode 2 only), 15:14 must be 0.
        let w = |imm: u64| 0x0302_0170u64 | imm << 32;
        assert_eq!(one("mma r1, r2, r3, r4"), 0x0000_0004_0302_0170);
        assert_eq!(one("mma r255, r254, r253, r252"), 0x0000_00FC_FDFE_FF70);
        assert_eq!(one("mma r0, r0, r0, r0"), 0x70);
        assert_eq!(one("mma r1, r2, r3, r4, acc"), 0x0000_0104_0302_0170);
        assert_eq!(one("mma r1, r2, r3, r4, bias 64"), 0x0010_0204_0302_0170);
        assert_eq!(one("mma r1, r2, r3, r4, bias 0"), 0x0000_0204_0302_0170);
        assert_eq!(one("mma r1, r2, r3, r4, pad 1, 2"), 0x0000_2404_0302_0170);
        assert_eq!(one("mma r1, r2, r3, r4, acc, pad 3, 0"), w(mma_imm(4, 1, 3, 0, 0)));
        assert_eq!(one("mma r1, r2, r3, r4, bias 262140, pad 3, 3"), 0xFFFF_3E04_0302_0170);
        assert_eq!(decode(0x0000_0004_0302_0170), Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Zero, qa: 0, qb: 0, skip: false }));
        assert_eq!(decode(0x0000_0104_0302_0170), Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Acc, qa: 0, qb: 0, skip: false }));
        assert_eq!(decode(0xFFFF_3E04_0302_0170), Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Bias(262140), qa: 3, qb: 3, skip: false }));
        assert_eq!(decode(0x0000_2404_0302_0170), Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Zero, qa: 1, qb: 2, skip: false }));
        assert_eq!(encode(&Insn::Mma { rd: 9, ra: 8, rb: 7, rc: 6, c0: C0::Zero, qa: 0, qb: 0, skip: false }), 0x0000_0006_0708_0970);
        assert_eq!(encode(&Insn::Mma { rd: 9, ra: 8, rb: 7, rc: 6, c0: C0::Bias(8), qa: 2, qb: 1, skip: false }), 0x0002_1A06_0708_0970);
        for (c0, mode) in [(C0::Zero, 0), (C0::Acc, 1), (C0::Bias(4), 2)] {
            assert_eq!(c0.mode(), mode);
        }
        // The field error (no instruction, `.word`): bit 15 in any mode;
        // mode 3; any of bits 31:16 outside mode 2.
        for mode in 0..3 {
            let x = w(mma_imm(4, mode, 1, 1, 0)) | 1u64 << (32 + 15);
            assert_eq!(decode(x), Err(DecodeError::Field), "mode {mode} bit 15");
            assert!(super::text(x).starts_with(".word 0x"));
            // Bit 14 is `skip`.
            let x = w(mma_imm(4, mode, 1, 1, 0)) | 1u64 << (32 + 14);
            assert!(matches!(decode(x), Ok(Insn::Mma { skip: true, qa: 1, qb: 1, .. })), "mode {mode} bit 14");
        }
        for qa in 0..4 {
            assert_eq!(decode(w(mma_imm(4, 3, qa, 0, 0))), Err(DecodeError::Field), "mode 3");
        }
        for bit in 16..32 {
            for mode in [0, 1] {
                let x = w(mma_imm(4, mode, 0, 0, 0)) | 1u64 << (32 + bit);
                assert_eq!(decode(x), Err(DecodeError::Field), "mode {mode} bit {bit}");
                assert!(super::text(x).starts_with(".word 0x"), "bit {bit}");
            }
            let x = w(mma_imm(4, 2, 0, 0, 0)) | 1u64 << (32 + bit);
            assert_eq!(decode(x), Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Bias(1 << (bit - 14)), qa: 0, qb: 0, skip: false }));
        }
        assert_eq!(super::text(0x0000_8000_0000_0070), ".word 0x0000800000000070");
        assert_eq!(super::text(0x0000_4000_0000_0070), "mma r0, r0, r0, r0, skip");
        assert_eq!(super::text(0x0000_0300_0000_0070), ".word 0x0000030000000070");
        assert_eq!(super::text(0x0001_0100_0000_0070), ".word 0x0001010000000070");
        assert_eq!(super::text(0x0001_0000_0000_0070), ".word 0x0001000000000070");
        assert_eq!(super::text(0x0001_0200_0000_0070), "mma r0, r0, r0, r0, bias 4");
        assert_eq!(super::text(0x0000_00FF_0000_0070), "mma r0, r0, r0, r255");
        assert_eq!(super::text(0x0000_3000_0000_0070), "mma r0, r0, r0, r0, pad 0, 3");
    }

    #[test]
    fn mma_disassembly_is_canonical() {
        let text = "mma r1, r2, r3, r4\n\
                    mma r0, r0, r0, r0\n\
                    mma r255, r255, r255, r255\n\
                    mma r1, r2, r3, r4, acc\n\
                    mma r1, r2, r3, r4, bias 0\n\
                    mma r1, r2, r3, r4, bias 262140\n\
                    mma r1, r2, r3, r4, pad 0, 1\n\
                    mma r1, r2, r3, r4, pad 3, 0\n\
                    mma r1, r2, r3, r4, acc, pad 2, 2\n\
                    mma r1, r2, r3, r4, bias 4096, pad 1, 3\n\
                    .word 0x0000030004030270\n\
                    .word 0x0000800004030270\n\
                    .word 0x0004010004030270\n\
                    .word 0x8000000000000070\n";
        let w = assemble(text).unwrap();
        assert_eq!(disassemble(&w), text);
        assert_eq!(one("mma r1,r2,r3,r4"), one("mma r1, r2, r3, r4"));
        assert_eq!(one("mma r01, r2, r3, r4 # C = A . B"), one("mma r1, r2, r3, r4"));
        // Non-canonical spellings.
        assert_eq!(one("mma r1,r2,r3,r4,acc,pad 0,0"), one("mma r1, r2, r3, r4, acc"));
        assert_eq!(one("mma r1, r2, r3, r4, pad 0, 0"), one("mma r1, r2, r3, r4"));
        assert_eq!(one("mma r1, r2, r3, r4, bias 0x40, pad 0x1, 02"), one("mma r1, r2, r3, r4, bias 64, pad 1, 2"));
        assert_eq!(one("mma r1, r2, r3, r4,  bias\t  8 ,pad   1 , 0"), one("mma r1, r2, r3, r4, bias 8, pad 1, 0"));
        assert_eq!(super::text(one("mma r1, r2, r3, r4, bias 0x40, pad 0, 0")), "mma r1, r2, r3, r4, bias 64");
    }

    #[test]
    fn mma_round_trip_any_words() {
        let mut g = Lcg(11);
        let mut words = Vec::new();
        for k in 0..20000u64 {
            let w = g.next();
            let masked = match k % 4 {
                0 => (w & !0xFF) | 0x70,
                // Register fields, rc, mode, qa, qb, o/4: bits 15:14 zero
                // (mode 3, or o in modes 0, 1, still errors).
                1 => (w & 0xFFFF_3FFF_FFFF_FF00) | 0x70,
                // Modes 0..2 without o, and mode 2 with it.
                2 => (w & 0x0000_3CFF_FFFF_FF00) | 0x70 | ((w >> 40) % 3) << 40,
                _ => (w & 0xFFFF_3CFF_FFFF_FF00) | 0x70 | 2 << 40,
            };
            words.push(masked);
        }
        let text = disassemble(&words);
        assert_eq!(assemble(&text).unwrap(), words);
        assert_eq!(disassemble(&assemble(&text).unwrap()), text);
        for m in ["mma ", ".word", ", acc", ", bias ", ", pad "] {
            assert!(text.lines().filter(|l| l.contains(m)).count() > 1000, "{m}");
        }
    }

    #[test]
    fn mma_bad_lines() {
        let src = "mma r1, r2, r3\n\
                   mma r1, r2, r3, r4, 0\n\
                   mma r1, r2, r3, 4\n\
                   mma r1, r2, r3, r256\n\
                   mma r1, r2, r3, r4, bias 6\n\
                   mma r1, r2, r3, r4, bias 262144\n\
                   mma r1, r2, r3, r4, bias -4\n\
                   mma r1, r2, r3, r4, bias\n\
                   mma r1, r2, r3, r4, bias x\n\
                   mma r1, r2, r3, r4, pad 4, 0\n\
                   mma r1, r2, r3, r4, pad 0, 4\n\
                   mma r1, r2, r3, r4, pad -1, 0\n\
                   mma r1, r2, r3, r4, pad 1\n\
                   mma r1, r2, r3, r4, pad\n\
                   mma r1, r2, r3, r4, pad 1, 2, 3\n\
                   mma r1, r2, r3, r4, pad 1, 2, acc\n\
                   mma r1, r2, r3, r4, acc, bias 4\n\
                   mma r1, r2, r3, r4, acc, acc\n\
                   mma r1, r2, r3, r4, acc 1\n\
                   mma r1, r2, r3, r4, ACC\n\
                   mma r1, r2, r3, r4, acc, 1\n\
                   mma r1, r2, r3, r4, , acc\n\
                   mma r1, r2, r3, r4, bias 8, pad 1, x\n";
        let got = bad(src);
        let usage = "`mma` takes rd, ra, rb, rc [, acc | , bias o] [, pad qa, qb] [, skip]";
        let want = [
            format!("line 1: `mma r1, r2, r3`: missing operand: {usage}"),
            format!("line 2: `mma r1, r2, r3, r4, 0`: `0` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {usage}"),
            "line 3: `mma r1, r2, r3, 4`: `4` is not a register: registers are r0 .. r255".to_string(),
            "line 4: `mma r1, r2, r3, r256`: register `r256` is above r255".to_string(),
            "line 5: `mma r1, r2, r3, r4, bias 6`: o `6` is not a multiple of 4".to_string(),
            "line 6: `mma r1, r2, r3, r4, bias 262144`: o `262144` is out of range: must be 0 .. 262140".to_string(),
            "line 7: `mma r1, r2, r3, r4, bias -4`: o `-4` is out of range: must be 0 .. 262140".to_string(),
            format!("line 8: `mma r1, r2, r3, r4, bias`: missing operand: {usage}"),
            "line 9: `mma r1, r2, r3, r4, bias x`: o `x` is not a number (decimal or 0x hex)".to_string(),
            "line 10: `mma r1, r2, r3, r4, pad 4, 0`: qa `4` is out of range: must be 0 .. 3".to_string(),
            "line 11: `mma r1, r2, r3, r4, pad 0, 4`: qb `4` is out of range: must be 0 .. 3".to_string(),
            "line 12: `mma r1, r2, r3, r4, pad -1, 0`: qa `-1` is out of range: must be 0 .. 3".to_string(),
            format!("line 13: `mma r1, r2, r3, r4, pad 1`: missing operand: {usage}"),
            format!("line 14: `mma r1, r2, r3, r4, pad`: missing operand: {usage}"),
            format!("line 15: `mma r1, r2, r3, r4, pad 1, 2, 3`: extra operand: {usage}"),
            format!("line 16: `mma r1, r2, r3, r4, pad 1, 2, acc`: `acc` is out of place: {usage}"),
            format!("line 17: `mma r1, r2, r3, r4, acc, bias 4`: `bias 4` is out of place: {usage}"),
            format!("line 18: `mma r1, r2, r3, r4, acc, acc`: `acc` is out of place: {usage}"),
            format!("line 19: `mma r1, r2, r3, r4, acc 1`: `acc 1` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {usage}"),
            format!("line 20: `mma r1, r2, r3, r4, ACC`: `ACC` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {usage}"),
            format!("line 21: `mma r1, r2, r3, r4, acc, 1`: `1` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {usage}"),
            format!("line 22: `mma r1, r2, r3, r4, , acc`: operand 5 is empty: {usage}"),
            "line 23: `mma r1, r2, r3, r4, bias 8, pad 1, x`: qb `x` is not a number (decimal or 0x hex)".to_string(),
        ];
        assert_eq!(got, want);
        assert!(bad("foo").last().unwrap().contains("ld, st, mma, act, cmp, exp, tex, .word"));
    }

    // ---- tex ----

    /// `tex`'s `imm`: rc 7:0, kind 9:8, k 11:10, F 13:12, MX 15:14, MY
    /// 17:16, bits 31:18 as given.
    fn tex_imm(rc: u64, kind: u64, k: u64, f: u64, mx: u64, my: u64, hi: u64) -> u64 {
        rc | kind << 8 | k << 10 | f << 12 | mx << 14 | my << 16 | hi << 18
    }

    #[test]
    fn tex_encoding_from_the_table() {
        // The spec's two lines, by hand: op 0x74, rd 15:8, ra 23:16, rb
        // 31:24; conv: imm = 7 | 3 << 8 | (8-1) << 24 | (4-1) << 28 =
        // 0x37000307 (bits 23:18 0; the kernel's size is in rb's value).
        let conv = "tex r4, r5, r6, r7, conv 8x4, r8, clamp, clamp, c 0";
        assert_eq!(one(conv), 0x3700_0307_0605_0474);
        // gather4: 4 | 2 << 8 | 2 << 10 (c 2) | 2 << 12 (rgba8) | 1 << 14
        // (repeat) | 2 << 16 (mirror) | 12 << 18 = 0x00326A04.
        let g4 = "tex r1, r2, r3, r4, gather4 12, rgba8, repeat, mirror, c 2";
        assert_eq!(one(g4), 0x0032_6A04_0302_0174);
        assert_eq!(super::text(0x3700_0307_0605_0474), conv);
        assert_eq!(super::text(0x0032_6A04_0302_0174), g4);
        assert_eq!(one("tex r0, r0, r0, r0, bilinear 0, r8, clamp, clamp, c 0"), 0x74);
        assert_eq!(one("tex r0, r0, r0, r0, nearest 16383, r16, clamp, clamp, c 0"), 0xFFFC_1100_0000_0074);
        assert_eq!(one("tex r255, r255, r255, r255, conv 16x16, rgba8, mirror, mirror, c 3"), 0xFF02_AFFF_FFFF_FF74);
        assert_eq!(one("tex r1, r2, r3, r4, conv 1x1, r16, repeat, clamp, c 0"), 0x0000_5304_0302_0174);
        assert_eq!(
            decode(0x3700_0307_0605_0474),
            Ok(Insn::Tex {
                rd: 4,
                ra: 5,
                rb: 6,
                rc: 7,
                kind: TexKind::Conv { qw: 8, qh: 4 },
                format: Format::R8,
                mx: AddressMode::Clamp,
                my: AddressMode::Clamp,
                k: 0
            })
        );
        let g = Insn::Tex {
            rd: 1,
            ra: 2,
            rb: 3,
            rc: 4,
            kind: TexKind::Sample { op: SampleOp::Gather4, n: 12 },
            format: Format::Rgba8,
            mx: AddressMode::Repeat,
            my: AddressMode::Mirror,
            k: 2,
        };
        assert_eq!(decode(0x0032_6A04_0302_0174), Ok(g));
        assert_eq!(encode(&g), 0x0032_6A04_0302_0174);
        // Every kind, format, mode and channel, each field where the table
        // puts it.
        let w = |imm: u64| 0x0302_0174u64 | imm << 32;
        for (kind, op) in SampleOp::ALL.iter().enumerate() {
            assert_eq!(op.code(), kind as u32);
            for n in [0u64, 1, 5000, 16383] {
                let text = format!("tex r1, r2, r3, r4, {} {n}, r16, mirror, repeat, c 0", op.name());
                assert_eq!(one(&text), w(tex_imm(4, kind as u64, 0, 1, 2, 1, n)), "{text}");
                assert_eq!(super::text(w(tex_imm(4, kind as u64, 0, 1, 2, 1, n))), text);
            }
        }
        for (qw, qh) in [(1u64, 1u64), (1, 16), (16, 1), (3, 11), (16, 16)] {
            let text = format!("tex r1, r2, r3, r4, conv {qw}x{qh}, rgba8, clamp, mirror, c 3");
            let hi = (qw - 1) << 6 | (qh - 1) << 10;
            assert_eq!(one(&text), w(tex_imm(4, 3, 3, 2, 0, 2, hi)), "{text}");
            assert_eq!(super::text(w(tex_imm(4, 3, 3, 2, 0, 2, hi))), text);
        }
        for (f, name) in [(0u64, "r8"), (1, "r16"), (2, "rgba8")] {
            for (m, mode) in [(0u64, "clamp"), (1, "repeat"), (2, "mirror")] {
                let text = format!("tex r1, r2, r3, r4, bilinear 3, {name}, {mode}, clamp, c 0");
                assert_eq!(one(&text), w(tex_imm(4, 0, 0, f, m, 0, 3)), "{text}");
                let text = format!("tex r1, r2, r3, r4, bilinear 3, {name}, clamp, {mode}, c 0");
                assert_eq!(one(&text), w(tex_imm(4, 0, 0, f, 0, m, 3)), "{text}");
            }
        }
        for k in 0..4u64 {
            let text = format!("tex r1, r2, r3, r4, conv 1x1, rgba8, clamp, clamp, c {k}");
            assert_eq!(one(&text), w(tex_imm(4, 3, k, 2, 0, 0, 0)), "{text}");
        }
        assert_eq!(texel_bytes(Format::R8), 1);
        assert_eq!(texel_bytes(Format::R16), 2);
        assert_eq!(texel_bytes(Format::Rgba8), 4);
    }

    #[test]
    fn tex_decode_errors() {
        // field: the format code 3, a mode code 3, the channel not below
        // the format's channels (r8, r16: 1; rgba8: 4), whatever the kind
        // (bilinear and nearest use no channel, but it is checked).
        let w = |imm: u64| 0x0302_0174u64 | imm << 32;
        for kind in 0..4 {
            let hi = if kind == 3 { 0x3FC0 } else { 77 };
            for (f, m1, m2, k) in [(3, 0, 0, 0), (0, 3, 0, 0), (0, 0, 3, 0), (2, 3, 3, 0), (0, 0, 0, 1), (0, 0, 0, 3), (1, 0, 0, 1), (1, 2, 2, 2)] {
                let x = w(tex_imm(4, kind, k, f, m1, m2, hi));
                assert_eq!(decode(x), Err(DecodeError::Field), "kind {kind} F {f} MX {m1} MY {m2} k {k}");
                assert_eq!(super::text(x), format!(".word 0x{x:016x}"));
            }
            for (f, k) in [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (2, 3)] {
                assert!(decode(w(tex_imm(4, kind, k, f, 2, 1, hi))).is_ok(), "kind {kind} F {f} k {k}");
            }
        }
        // Every bit of imm is used by the sample kinds: no field error for
        // any of them.
        for bit in 0..32 {
            let x = w(1 << bit);
            let ok = !(10..12).contains(&bit); // k = 1, 2 with r8
            assert_eq!(decode(x).is_ok(), ok, "bit {bit}");
        }
        // conv: bits 23:18 must be 0, each alone and every value of them.
        for bit in (0..32).filter(|b| !(8..10).contains(b)) {
            let x = w(3 << 8 | 1 << bit);
            let ok = !(10..12).contains(&bit) && !(18..24).contains(&bit);
            assert_eq!(decode(x).is_ok(), ok, "conv, bit {bit}");
            assert_eq!(decode(x).is_ok(), !super::text(x).starts_with(".word"));
        }
        for v in 0..64u64 {
            for kind in 0..4 {
                let x = w(tex_imm(4, kind, 3, 2, 2, 2, v | 0xFF << 6));
                if kind == 3 && v != 0 {
                    assert_eq!(decode(x), Err(DecodeError::Field), "conv, bits 23:18 {v:#x}");
                } else {
                    assert!(decode(x).is_ok(), "kind {kind}, bits 23:18 {v:#x}");
                }
            }
        }
        assert_eq!(decode(0xFFFF_FFFF_FFFF_FF74), Err(DecodeError::Field));
        assert_eq!(decode(0xFFFE_AFFF_FFFF_FF74), Err(DecodeError::Field)); // conv, bits 23:18 set
        assert!(decode(0xFF02_AFFF_FFFF_FF74).is_ok());
        assert!(decode(0xFFFE_AEFF_FFFF_FF74).is_ok()); // the same bits, gather4
    }

    #[test]
    fn tex_disassembly_is_canonical() {
        let text = "tex r4, r5, r6, r7, conv 8x4, r8, clamp, clamp, c 0\n\
                    tex r1, r2, r3, r4, gather4 12, rgba8, repeat, mirror, c 2\n\
                    tex r0, r0, r0, r0, bilinear 0, r8, clamp, clamp, c 0\n\
                    tex r9, r10, r11, r12, nearest 16383, r16, mirror, repeat, c 0\n\
                    tex r255, r255, r255, r255, conv 16x16, rgba8, mirror, mirror, c 3\n\
                    tex r1, r2, r3, r4, bilinear 100, rgba8, clamp, repeat, c 1\n\
                    .word 0x0000300000000074\n\
                    .word 0x0000040000000074\n\
                    .word 0x000315ff00000074\n\
                    .word 0x0004030000000074\n\
                    .word 0x3780030700000074\n";
        let w = assemble(text).unwrap();
        assert_eq!(disassemble(&w), text);
        // Non-canonical spellings.
        let canon = one("tex r1, r2, r3, r4, conv 8x4, r8, clamp, clamp, c 0");
        assert_eq!(one("tex r1,r2,r3,r4,conv 8x4,r8,clamp,clamp,c 0"), canon);
        assert_eq!(one("tex r01, r2, r3, r4,  conv\t  8x4 , r8 , clamp, clamp, c   0 # conv"), canon);
        assert_eq!(one("tex r1, r2, r3, r4, conv 0x8x4, r8, clamp, clamp, c 0x0"), canon);
        assert_eq!(one("tex r1, r2, r3, r4, conv 0x8x0x4, r8, clamp, clamp, c 0x0"), canon);
        assert_eq!(one("tex r1, r2, r3, r4, conv 08x04, r8, clamp, clamp, c 00"), canon);
        assert_eq!(
            one("tex r1, r2, r3, r4, bilinear 0x10, rgba8, clamp, clamp, c 0x3"),
            one("tex r1, r2, r3, r4, bilinear 16, rgba8, clamp, clamp, c 3")
        );
        assert_eq!(
            super::text(one("tex r1, r2, r3, r4, gather4 0x3FFF, r16, repeat, repeat, c 0")),
            "tex r1, r2, r3, r4, gather4 16383, r16, repeat, repeat, c 0"
        );
    }

    #[test]
    fn tex_round_trip_any_words() {
        let mut g = Lcg(13);
        let mut words = Vec::new();
        for k in 0..20000u64 {
            let w = g.next();
            let masked = match k % 3 {
                0 => (w & !0xFF) | 0x74,
                // Codes 0..2 for F, MX, MY and k = 0 (any format's channel).
                1 => (w & 0xFFFC_03FF_FFFF_FF00) | 0x74 | ((w >> 40) % 3) << 44 | ((w >> 50) % 3) << 46 | ((w >> 56) % 3) << 48,
                // rgba8, any channel, modes 0..2.
                _ => (w & 0xFFFC_0FFF_FFFF_FF00) | 0x74 | 2 << 44 | ((w >> 50) % 3) << 46 | ((w >> 56) % 3) << 48,
            };
            // conv: bits 23:18 of imm (word bits 55:50) 0 but in 1 of 8
            // (the field error).
            let conv = (masked >> 40) & 3 == 3;
            let masked = if conv && !k.is_multiple_of(3) && (w >> 13) & 7 != 0 { masked & !(0x3F << 50) } else { masked };
            words.push(masked);
        }
        let text = disassemble(&words);
        assert_eq!(assemble(&text).unwrap(), words);
        assert_eq!(disassemble(&assemble(&text).unwrap()), text);
        for m in ["tex ", ".word", "bilinear ", "nearest ", "gather4 ", "conv ", ", r8,", ", r16,", ", rgba8,", "mirror", "c 3"] {
            assert!(text.lines().filter(|l| l.contains(m)).count() > 500, "{m}");
        }
        // conv words with bits 23:18 not 0 are .word lines.
        let conv_field = words.iter().filter(|&&x| (x >> 40) & 3 == 3 && (x >> 50) & 0x3F != 0).count();
        assert!(conv_field > 500);
        for (x, l) in words.iter().zip(text.lines()) {
            if (x >> 40) & 3 == 3 && (x >> 50) & 0x3F != 0 {
                assert!(l.starts_with(".word"), "{l}");
            }
        }
    }

    #[test]
    fn tex_bad_lines() {
        let tail = "r8, clamp, clamp, c 0";
        let src = [
            "tex r1, r2, r3, r4, bilinear 1, r8, clamp, clamp".to_string(),
            format!("tex r1, r2, r3, r4, bilinear 1, {tail}, 1"),
            format!("tex r1, r2, r3, r4, bilinear 16384, {tail}"),
            format!("tex r1, r2, r3, r4, bilinear, {tail}"),
            format!("tex r1, r2, r3, r4, trilinear 1, {tail}"),
            // The earlier form, with the kernel's size: no longer an operand.
            format!("tex r1, r2, r3, r4, conv 3x3 1x1, {tail}"),
            format!("tex r1, r2, r3, r4, conv 17x1, {tail}"),
            format!("tex r1, r2, r3, r4, conv 0x1, {tail}"),
            format!("tex r1, r2, r3, r4, conv 1x17, {tail}"),
            format!("tex r1, r2, r3, r4, conv 1x0, {tail}"),
            format!("tex r1, r2, r3, r4, conv 33, {tail}"),
            format!("tex r1, r2, r3, r4, conv 1x1 2, {tail}"),
            "tex r1, r2, r3, r4, nearest 1, rgb8, clamp, clamp, c 0".to_string(),
            "tex r1, r2, r3, r4, nearest 1, r8, wrap, clamp, c 0".to_string(),
            "tex r1, r2, r3, r4, nearest 1, r8, clamp, CLAMP, c 0".to_string(),
            "tex r1, r2, r3, r4, gather4 1, r8, clamp, clamp, c 1".to_string(),
            "tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, c 4".to_string(),
            "tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, k 0".to_string(),
            "tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, c".to_string(),
            format!("tex r1, r2, r3, 4, nearest 1, {tail}"),
            format!("tex r1, r2, r3, r256, nearest 1, {tail}"),
            format!("tex r1, r2, r3, r4, , {tail}"),
            format!("tex r1, r2, r3, r4, bilinear 1 2, {tail}"),
            "tex r1, r2, r3, r4, conv 1x1, r16, clamp, clamp, c x".to_string(),
            "tex r1, r2, r3, r4, conv 1x1, r16, clamp, clamp, c -1".to_string(),
            format!("tex r1, r2, r3, r4, nearest -1, {tail}"),
            format!("tex r1, r2, r3, r4, conv 1x1x1, {tail}"),
            format!("tex r1, r2, r3, r4, conv, {tail}"),
            "tex r1, r2, r3, r4".to_string(),
            format!("tex r1, r2, r3, r4, conv 3x3, 1x1, {tail}"),
            format!("tex r1, r2, r3, r4, conv x, {tail}"),
            format!("tex r1, r2, r3, r4, conv 2x, {tail}"),
            format!("tex r1, r2, r3, r4, conv 4x-1, {tail}"),
        ]
        .join("\n");
        let got = bad(&src);
        let usage = "`tex` takes rd, ra, rb, rc, bilinear n (or nearest n, gather4 n, conv QWxQH), F, MX, MY, c k";
        let not_kind = "is not `bilinear n`, `nearest n`, `gather4 n` or `conv QWxQH`";
        let not_q = "is not QWxQH (the quads across and down, 1 .. 16 each)";
        let want = [
            format!("line 1: `tex r1, r2, r3, r4, bilinear 1, r8, clamp, clamp`: missing operand: {usage}"),
            format!("line 2: `tex r1, r2, r3, r4, bilinear 1, r8, clamp, clamp, c 0, 1`: extra operand: {usage}"),
            "line 3: `tex r1, r2, r3, r4, bilinear 16384, r8, clamp, clamp, c 0`: n `16384` is out of range: must be 0 .. 16383".to_string(),
            format!("line 4: `tex r1, r2, r3, r4, bilinear, r8, clamp, clamp, c 0`: missing operand: {usage}"),
            format!("line 5: `tex r1, r2, r3, r4, trilinear 1, r8, clamp, clamp, c 0`: `trilinear 1` {not_kind}: {usage}"),
            format!("line 6: `tex r1, r2, r3, r4, conv 3x3 1x1, r8, clamp, clamp, c 0`: extra operand: {usage}"),
            "line 7: `tex r1, r2, r3, r4, conv 17x1, r8, clamp, clamp, c 0`: QW `17` is out of range: must be 1 .. 16".to_string(),
            "line 8: `tex r1, r2, r3, r4, conv 0x1, r8, clamp, clamp, c 0`: QW `0` is out of range: must be 1 .. 16".to_string(),
            "line 9: `tex r1, r2, r3, r4, conv 1x17, r8, clamp, clamp, c 0`: QH `17` is out of range: must be 1 .. 16".to_string(),
            "line 10: `tex r1, r2, r3, r4, conv 1x0, r8, clamp, clamp, c 0`: QH `0` is out of range: must be 1 .. 16".to_string(),
            format!("line 11: `tex r1, r2, r3, r4, conv 33, r8, clamp, clamp, c 0`: `33` {not_q}"),
            format!("line 12: `tex r1, r2, r3, r4, conv 1x1 2, r8, clamp, clamp, c 0`: extra operand: {usage}"),
            "line 13: `tex r1, r2, r3, r4, nearest 1, rgb8, clamp, clamp, c 0`: F `rgb8` is not a texel format: must be r8, r16 or rgba8".to_string(),
            "line 14: `tex r1, r2, r3, r4, nearest 1, r8, wrap, clamp, c 0`: MX `wrap` is not an address mode: must be clamp, repeat or mirror".to_string(),
            "line 15: `tex r1, r2, r3, r4, nearest 1, r8, clamp, CLAMP, c 0`: MY `CLAMP` is not an address mode: must be clamp, repeat or mirror".to_string(),
            "line 16: `tex r1, r2, r3, r4, gather4 1, r8, clamp, clamp, c 1`: k `1` is out of range: must be 0 (r8 has one channel)".to_string(),
            "line 17: `tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, c 4`: k `4` is out of range: must be 0 .. 3".to_string(),
            format!("line 18: `tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, k 0`: `k 0` is not `c k`: {usage}"),
            format!("line 19: `tex r1, r2, r3, r4, gather4 1, rgba8, clamp, clamp, c`: missing operand: {usage}"),
            "line 20: `tex r1, r2, r3, 4, nearest 1, r8, clamp, clamp, c 0`: `4` is not a register: registers are r0 .. r255".to_string(),
            "line 21: `tex r1, r2, r3, r256, nearest 1, r8, clamp, clamp, c 0`: register `r256` is above r255".to_string(),
            format!("line 22: `tex r1, r2, r3, r4, , r8, clamp, clamp, c 0`: operand 5 is empty: {usage}"),
            format!("line 23: `tex r1, r2, r3, r4, bilinear 1 2, r8, clamp, clamp, c 0`: extra operand: {usage}"),
            "line 24: `tex r1, r2, r3, r4, conv 1x1, r16, clamp, clamp, c x`: k `x` is not a number (decimal or 0x hex)".to_string(),
            "line 25: `tex r1, r2, r3, r4, conv 1x1, r16, clamp, clamp, c -1`: k `-1` is out of range: must be 0 (r16 has one channel)".to_string(),
            "line 26: `tex r1, r2, r3, r4, nearest -1, r8, clamp, clamp, c 0`: n `-1` is out of range: must be 0 .. 16383".to_string(),
            format!("line 27: `tex r1, r2, r3, r4, conv 1x1x1, r8, clamp, clamp, c 0`: `1x1x1` {not_q}"),
            format!("line 28: `tex r1, r2, r3, r4, conv, r8, clamp, clamp, c 0`: missing operand: {usage}"),
            format!("line 29: `tex r1, r2, r3, r4`: missing operand: {usage}"),
            format!("line 30: `tex r1, r2, r3, r4, conv 3x3, 1x1, r8, clamp, clamp, c 0`: extra operand: {usage}"),
            format!("line 31: `tex r1, r2, r3, r4, conv x, r8, clamp, clamp, c 0`: `x` {not_q}"),
            format!("line 32: `tex r1, r2, r3, r4, conv 2x, r8, clamp, clamp, c 0`: `2x` {not_q}"),
            format!("line 33: `tex r1, r2, r3, r4, conv 4x-1, r8, clamp, clamp, c 0`: `4x-1` {not_q}"),
        ];
        assert_eq!(got.len(), want.len(), "{got:#?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w);
        }
    }
}
