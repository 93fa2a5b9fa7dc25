//! PM4 packets as the decoder reads them: the payload count, the header
//! checks of the error table, and the packet being taken.

use gpurtl_params::cmdproc::{Cause, Opcode};

/// `INDIRECT_BUFFER` size field: `p2[19:0]`.
pub(super) const IB_SIZE_MASK: u32 = 0xF_FFFF;

/// The payload count of a type-3 header: `n = (c + 1) mod 2^14`.
pub(super) fn payload_count(h: u32) -> u32 {
    ((h >> 16) + 1) & 0x3FFF
}

/// The state readers (docs/cmdproc.md, "Render state in order").
pub(super) fn is_state_reader(op: Opcode) -> bool {
    matches!(op, Opcode::DrawIndexAuto | Opcode::DrawIndexOffset2 | Opcode::DispatchDirect)
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
/// `nesting` (`level` = the current buffer's level, `d` = `nesting`).
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
    /// `p0..p3` as taken (zeros beyond `n`).
    pub(super) p: [u32; 4],
    /// `WRITE_DATA`: the data dwords taken so far.
    pub(super) data: Vec<u32>,
}

impl Packet {
    pub(super) fn new(op: Opcode, header: u32, addr: u32, n: u32) -> Packet {
        Packet { op, header, addr, n, done: 0, r: 1 + n, p: [0; 4], data: Vec::new() }
    }
}
