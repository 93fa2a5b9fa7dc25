//! PM4 packets as the decoder reads them: the payload count, the header
//! checks of the error table, and the packet being taken.

use gpurtl_params::cmdproc::{sh, Cause, CmdprocParams, Opcode};

/// `INDIRECT_BUFFER` size field: `p2[19:0]`.
pub(super) const IB_SIZE_MASK: u32 = 0xF_FFFF;

/// The payload count of a type-3 header: `n = (c + 1) mod 2^14`.
pub(super) fn payload_count(h: u32) -> u32 {
    ((h >> 16) + 1) & 0x3FFF
}


/// A header that passed its checks.
pub(super) enum Head {
    /// A type-2 filler: one dword, not a command.
    Filler,
    /// A type-3 packet: its opcode and `n`.
    Packet(Opcode, u32),
}

/// The header checks, in the order of the error table: `type`, `opcode`,
/// `count`, `overrun` (`left` = the buffer's dwords from the header on),
/// `nesting` (`level` = the current buffer's level, `d` = `nesting`;
/// `compute`: `SET_SH_REG` and `RELEASE_MEM` are known, else `opcode`).
pub(super) fn check_header(h: u32, left: u32, level: u32, d: u32, compute: bool) -> Result<Head, Cause> {
    match h >> 30 {
        0 | 1 => Err(Cause::Type),
        2 => Ok(Head::Filler),
        _ => {
            let op = Opcode::from_code((h >> 8) & 0xFF).filter(|o| compute || !o.compute_only()).ok_or(Cause::Opcode)?;
            let n = payload_count(h);
            if !op.count_ok(n) {
                return Err(Cause::Count);
            }
            if 1 + n as u64 > left as u64 {
                return Err(Cause::Overrun);
            }
            if op == Opcode::IndirectBuffer && level >= d {
                return Err(Cause::Nesting);
            }
            Ok(Head::Packet(op, n))
        }
    }
}

/// The decoder's current packet.
#[derive(Clone, Debug)]
pub(super) struct Packet {
    pub(super) op: Opcode,
    pub(super) header: u32,
    /// Byte address of the header.
    pub(super) addr: u32,
    pub(super) n: u32,
    /// Dwords consumed (the header is dword 0, `p_k` is dword `1 + k`).
    pub(super) done: u32,
    /// Dwords not yet consumed.
    pub(super) r: u32,
    /// `p0..p5` as taken (zeros beyond `n`; the record keeps `p4`, `p5`
    /// only with `compute = true`).
    pub(super) p: [u32; 6],
    /// `WRITE_DATA`: the data dwords taken so far.
    pub(super) data: Vec<u32>,
}

impl Packet {
    pub(super) fn new(op: Opcode, header: u32, addr: u32, n: u32) -> Packet {
        Packet { op, header, addr, n, done: 0, r: 1 + n, p: [0; 6], data: Vec::new() }
    }
}

/// A `DISPATCH_DIRECT`'s checks with `compute = true` (docs/cmdproc.md,
/// "Compute mode"), when it ends: from the snapshot `regs` (the 23 compute
/// registers) and `p0..p2`; `field` first, then `need` (all exact).
pub(super) fn dispatch_check(p: &CmdprocParams, regs: &[u32], pl: &[u32; 6]) -> Option<Cause> {
    let full = |i: usize| (regs[i] & 0xFFFF) as u64;
    let t = full(sh::NUM_THREAD_X) * full(sh::NUM_THREAD_Y) * full(sh::NUM_THREAD_Z);
    let (x, y, z) = (pl[0] as u64, pl[1] as u64, pl[2] as u64);
    let blocks_max = (1u64 << p.block_bits) - 1;
    // x, y, z <= 2^16 when the product is formed: at most 2^48.
    let field = t == 0
        || x > 1 << 16
        || y > 1 << 16
        || z > 1 << 16
        || x * y * z > blocks_max
        || regs[sh::PGM_LO] >> 24 != 0
        || regs[sh::PGM_HI] & 0xFF != 0;
    if field {
        return Some(Cause::Field);
    }
    let vgprs = (regs[sh::PGM_RSRC1] & 0x3F) as u64;
    let lds = ((regs[sh::PGM_RSRC2] >> 15) & 0x1FF) as u64;
    let r = t * 4 * (vgprs + 1);
    let m = 512 * lds;
    (t > p.max_threads as u64 || r > p.max_regs as u64 || m > p.max_smem as u64).then_some(Cause::Need)
}

/// A `RELEASE_MEM`'s `field` check when it ends (`p3 != 0`, `p2[1:0] !=
/// 0`, `DATA_SEL = 2` with `p2[2] != 0`, `DATA_SEL > 2`, `INT_SEL > 3`).
pub(super) fn release_check(pl: &[u32; 6]) -> Option<Cause> {
    let data_sel = pl[1] >> 29;
    let int_sel = (pl[1] >> 24) & 7;
    let bad = pl[3] != 0 || pl[2] & 3 != 0 || (data_sel == 2 && pl[2] & 4 != 0) || data_sel > 2 || int_sel > 3;
    bad.then_some(Cause::Field)
}
