//! Hand-worked timing, and the behaviour checked against a plain
//! packet-by-packet reading of the "Behaviour" section.

use super::packet::{payload_count, IB_SIZE_MASK};
use super::{dword, memory_image};
use crate::mem::Memory;
use super::*;
use gpurtl_params::cmdproc::{CmdprocParams, Opcode};
use crate::models::InputErrors;
use serde_json::{json, Value};

// ---- building programs from the header format ----

/// A type-3 header with `n` payload dwords (`c = n - 1 mod 2^14`).
fn hdr(op: Opcode, n: u32) -> u32 {
    0xC000_0000 | ((n.wrapping_sub(1) & 0x3FFF) << 16) | (op.code() << 8)
}
/// A `k`-dword NOP (payload `1, 2, ...`).
fn nop(k: u32) -> Vec<u32> {
    let mut v = vec![hdr(Opcode::Nop, k - 1)];
    v.extend(1..k);
    v
}
fn pkt(op: Opcode, payload: &[u32]) -> Vec<u32> {
    let mut v = vec![hdr(op, payload.len() as u32)];
    v.extend_from_slice(payload);
    v
}
fn ib(addr: u32, size: u32) -> Vec<u32> {
    pkt(Opcode::IndirectBuffer, &[addr, 0, size])
}
fn cat(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

const BASE: u32 = 0x1000;
const PRIM: u32 = 0x10000;

fn params(fetch_bits: u32) -> CmdprocParams {
    CmdprocParams { fetch_bits, ..CmdprocParams::default() }
}

/// The main buffer `cmd` at 0x1000, the primitive buffer at 0x10000
/// (1024 bytes), other memory runs `extra`.
fn wl(cmd: Vec<u32>, extra: Vec<(u32, Vec<u32>)>, lat: u32) -> Workload {
    let size = 4 * cmd.len() as u32;
    let mut memory = vec![(BASE, cmd)];
    memory.extend(extra);
    Workload {
        registers: Registers {
            cmd_base: BASE,
            cmd_size: size,
            prim_base: PRIM,
            prim_size: 1024,
            state: vec![],
            state_ptr: 0,
            irq_enable: 3,
        },
        memory,
        mem_latency: lat,
        pipeline: Pipeline::default(),
    }
}

fn ids_addrs(o: &Outcome) -> Vec<(u32, u32)> {
    o.commands.iter().map(|c| (c.record.id, c.record.addr)).collect()
}

// ---- hand-worked timing ----

#[test]
fn one_nop_f32_l1() {
    // F = 1, L = 1, one 1-dword NOP. Doorbell edge: jump, fbeats = 1.
    // c1 request (answer c2), c2 answer (visible c3), c3 NOP taken and
    // committed, c4 it leaves the queue; buffer end -> finished,
    // c5 the end holds: cycles = 5.
    let o = run(&params(32), &wl(nop(1), vec![], 1));
    assert_eq!(o.cycles, 5);
    assert_eq!(o.status, Status::Done);
    assert_eq!(o.error, None);
    assert!(o.irq);
    assert_eq!(o.commands.len(), 1);
    let r = o.commands[0].record;
    assert_eq!(r, Record { id: 0, addr: BASE, header: 0xFFFF_1000, count: 0, p: [0; 6] });
    assert_eq!(o.trace, vec!["#0 @0x00001000 NOP".to_string()]);
    assert_eq!(o.state_table, vec![0; 16]);
}

#[test]
fn one_nop_default_l20() {
    // F = 2, L = 20: request c1, answer c21, taken c22, finished c23,
    // end c24 (the spec example's 24).
    let o = run(&CmdprocParams::default(), &wl(nop(1), vec![], 20));
    assert_eq!(o.cycles, 24);
    let j = output_json(&CmdprocParams::default(), &o);
    assert_eq!(
        j,
        json!({"commands": [{"id": 0, "addr": 4096, "opcode": 16, "header": 0xFFFF_1000u32, "dwords": 0,
                             "payload": [], "prims": []}],
               "state_table": vec![0; 16], "status": "done", "error": null, "irq": true,
               "memory_writes": [], "trace": ["#0 @0x00001000 NOP"], "cycles": 24})
    );
}

#[test]
fn two_dword_nops_one_a_cycle() {
    // F = 2, L = 1, four 2-dword NOPs = 4 beats, requests c1..c4,
    // visible c3..c6; one NOP a cycle c3..c6 (rate 1 = F/k); c7
    // finished, c8 end.
    let cmd = cat(&[nop(2), nop(2), nop(2), nop(2)]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 8);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1008), (2, 0x1010), (3, 0x1018)]);
    assert_eq!(o.commands[1].record.p, [1, 0, 0, 0, 0, 0]);
}

#[test]
fn six_dword_nops_three_cycles_each() {
    // F = 2, L = 1, two 6-dword NOPs = 6 beats visible c3..c8. Each
    // takes 2 + 2 + 2 lanes: commits c5 and c8 (rate F/k = 1/3);
    // c9 finished, c10 end.
    let cmd = cat(&[nop(6), nop(6)]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 10);
    assert_eq!(o.commands[0].record.count, 5);
    assert_eq!(o.commands[0].record.p, [1, 2, 3, 4, 0, 0]);
    assert_eq!(o.trace[1], "#1 @0x00001018 NOP dwords=5");
}

#[test]
fn three_dword_nops_second_packet() {
    // F = 2, L = 1, four 3-dword NOPs = 6 beats visible c3..c8.
    // c3 [h0 p] r=1; c4 [p h1]: pkt0 ends in lane 0, h1 is the second
    // packet and takes 1 lane (r=2); c5 [p p] pkt1 ends; c6..c8 the same
    // for pkt2, pkt3: 4 commands in 6 cycles (2/3 = F/k). c9 finished,
    // c10 end.
    let cmd = cat(&[nop(3), nop(3), nop(3), nop(3)]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 10);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x100C), (2, 0x1018), (3, 0x1024)]);
    assert_eq!(o.commands[1].record.p, [1, 2, 0, 0, 0, 0]);
}

#[test]
fn two_dword_nops_f128() {
    // F = 4, L = 1, four 2-dword NOPs = 2 beats visible c3, c4. A packet
    // starting in lane 0 has no second packet: one NOP a cycle c3..c6;
    // c7 finished, c8 end.
    let cmd = cat(&[nop(2), nop(2), nop(2), nop(2)]);
    let o = run(&params(128), &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 8);
    assert_eq!(o.commands.len(), 4);
}

#[test]
fn pool_credits_limit_requests() {
    // F = 1, pool_beats = 2, L = 5, four 1-dword NOPs. c1, c2 requests
    // (answers c6, c7), credits 0. c7 NOP0 (pop: +1), c8 request (answer
    // c13) and NOP1 (pop: +1), c9 request (answer c14), c14 NOP2, c15
    // NOP3, c16 finished, c17 end.
    let p = CmdprocParams { fetch_bits: 32, pool_beats: 2, ..CmdprocParams::default() };
    let cmd = cat(&[nop(1), nop(1), nop(1), nop(1)]);
    let o = run(&p, &wl(cmd, vec![], 5));
    assert_eq!(o.cycles, 17);
    assert_eq!(o.commands.len(), 4);
}

#[test]
fn output_queue_full_stalls() {
    // out_depth = 1, F = 2, L = 1, four 2-dword NOPs visible c3..c6.
    // A commit in c fills the queue at the start of c+1: commits c3, c5,
    // c7, c9; c10 stalls (queue full comes before the buffer end), c11
    // finished, c12 end.
    let p = CmdprocParams { out_depth: 1, ..CmdprocParams::default() };
    let cmd = cat(&[nop(2), nop(2), nop(2), nop(2)]);
    let o = run(&p, &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 12);
}

#[test]
fn indirect_buffer() {
    // F = 2, L = 1. Main: IB(0x2000, 2) (4 dwords), NOP (1). IB: NOP n=1.
    // c1..c3 requests (answers c2..c4). c3 [IBh p0] r=2; c4 [p1 p2] IB
    // commits, pushes (0x1010, 1), jumps to 0x2000 (the beat answered in
    // c4 goes with the pool; drop = 0). c5 request (answer c6), c7 the
    // NOP commits; c8 buffer end: return jump to 0x1010 with left 1;
    // c9 request (answer c10), c11 the last NOP; c12 finished; c13 end.
    let cmd = cat(&[ib(0x2000, 2), nop(1)]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![(0x2000, vec![hdr(Opcode::Nop, 1), 7])], 1));
    assert_eq!(o.cycles, 13);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x2000), (2, 0x1010)]);
    assert_eq!(o.commands[0].record.p, [0x2000, 0, 2, 0, 0, 0]);
    assert_eq!(o.commands[1].record.p, [7, 0, 0, 0, 0, 0]);
    assert_eq!(o.trace[0], "#0 @0x00001000 INDIRECT_BUFFER addr=0x00002000 size=2");
}

#[test]
fn indirect_buffer_unaligned_return() {
    // F = 2, L = 1. Main: NOP (1), IB(0x2000, 1) (4), NOP (1) = 6 dwords;
    // IB: NOP. c3 NOP0; c4 [IBh p0] r=2; c5 [p1 p2] IB commits, pushes
    // (0x1014, 1), jump; c6 request, c8 NOP @0x2000; c9 return to 0x1014:
    // pos = 1, fa = 0x1010, fbeats = 1; c10 request (answer c11); c12
    // NOP @0x1014; c13 finished; c14 end.
    let cmd = cat(&[nop(1), ib(0x2000, 1), nop(1)]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![(0x2000, nop(1))], 1));
    assert_eq!(o.cycles, 14);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1004), (2, 0x2000), (3, 0x1014)]);
}

#[test]
fn empty_indirect_buffer() {
    // F = 2, L = 5. Main: IB(T, 0). Requests c1, c2 (answers c6, c7);
    // c7 [IBh p0], c8 [p1 p2] commits and jumps to (T, 0).
    // T = 0x2000: fbeats = 0; c9 buffer end, return (0x1010, 0); c10
    // finished; c11 end.
    let o = run(&CmdprocParams::default(), &wl(ib(0x2000, 0), vec![], 5));
    assert_eq!(o.cycles, 11);
    assert_eq!(o.commands.len(), 1);
    // T = 0x2004: an empty buffer fetches nothing at any address: the
    // same 11 cycles.
    let o = run(&CmdprocParams::default(), &wl(ib(0x2004, 0), vec![], 5));
    assert_eq!(o.cycles, 11);
    assert_eq!(o.status, Status::Done);
}

#[test]
fn draw_16bit_indices() {
    // F = 2 (BB = 8), L = 1. INDEX_TYPE size=16 (2 dwords), DRAW o=1, m=3
    // (5 dwords). Indices at 0x10002, 0x10004, 0x10006: 2, 3, 4.
    // c3 INDEX_TYPE; c4 [Dh max] r=3; c5 [o m] r=1; c6 [init] ends,
    // commits, job from c7; c7 finished, prim request 0x10000 (1 beat:
    // ceil((2 + 6)/8)), answer c8, indices c9, c10, c11 (job ends);
    // c12 end.
    let cmd = cat(&[pkt(Opcode::IndexType, &[0]), pkt(Opcode::DrawIndexOffset2, &[100, 1, 3, 0x12])]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![(PRIM, vec![0x0002_0001, 0x0004_0003, 0x0006_0005])], 1));
    assert_eq!(o.cycles, 12);
    assert_eq!(o.commands.len(), 2);
    assert_eq!(o.commands[0].prims, Vec::<u32>::new());
    assert_eq!(o.commands[1].prims, vec![2, 3, 4]);
    assert_eq!(o.commands[1].record.p, [100, 1, 3, 0x12, 0, 0]);
}

#[test]
fn draw_32bit_two_beats_small_pool() {
    // F = 2, prim_beats = 2, L = 4. DRAW o=1, m=4 (32-bit): b = 0x10004,
    // b mod 8 = 4, beats = ceil((4 + 16)/8) = 3: 0x10000, 0x10008,
    // 0x10010. Instruction beats: requests c1..c3, answers c5..c7,
    // visible c6..c8. c6 [Dh max], c7 [o m], c8 [init] commits, job from
    // c9 (c9: the decoder finished). Prim requests c9, c10 (pcredits
    // 2 -> 0; answers c13, c14, visible c14, c15). c14 index 0 (the last
    // of beat 0: pop, +1), c15 request 3 (answer c19) and index 1, c16
    // index 2 (pop), c17..c19 nothing, c20 index 3 (the last); c21 end.
    let p = CmdprocParams { prim_beats: 2, ..CmdprocParams::default() };
    let cmd = pkt(Opcode::DrawIndexOffset2, &[0, 1, 4, 0]);
    let o = run(&p, &wl(cmd, vec![(PRIM, (10..16).collect())], 4));
    assert_eq!(o.commands[0].prims, vec![11, 12, 13, 14]);
    assert_eq!(o.cycles, 21);
}

#[test]
fn write_data_fence() {
    // F = 2, L = 1. NOP (1), WRITE_DATA addr=0x3000 data=7,8 (6 dwords).
    // c3 NOP; c4 the WRITE_DATA header waits (the NOP is in the queue at
    // the start of c4); c5 header; c6 p0; c7 p1; c8 p2; c9 data 7; c10
    // data 8, commits; c11 finished; c12 end.
    let cmd = cat(&[nop(1), pkt(Opcode::WriteData, &[5, 0x3000, 0, 7, 8])]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![], 1));
    assert_eq!(o.cycles, 12);
    assert_eq!(o.memory_writes, vec![(0x3000, vec![7, 8])]);
    assert_eq!(o.commands[1].record, Record { id: 1, addr: 0x1004, header: hdr(Opcode::WriteData, 5), count: 5, p: [5, 0x3000, 0, 7, 0, 0] });
    assert_eq!(o.trace[1], "#1 @0x00001004 WRITE_DATA control=0x00000005 addr=0x00003000 data=7,...+1");
}

#[test]
fn write_data_waits_for_primitives() {
    // F = 2, L = 1. DRAW o=0, m=2 (5 dwords), WRITE_DATA addr=0x3000
    // data=9 (5 dwords). c3 [Dh max], c4 [o m], c5 [init WDh]: the draw
    // commits (job from c6) and WDh, its second packet, takes nothing.
    // Prim: request c6, answer c7, indices c8, c9 (job ends). c6 WDh
    // waits (draw in the queue), c7..c9 wait (job); c10 header; c11 p0;
    // c12 p1; c13 p2; c14 data, commits; c15 finished; c16 end.
    let cmd = cat(&[pkt(Opcode::DrawIndexOffset2, &[0, 0, 2, 0]), pkt(Opcode::WriteData, &[0, 0x3000, 0, 9])]);
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![(PRIM, vec![11, 22])], 1));
    assert_eq!(o.cycles, 16);
    assert_eq!(o.commands[0].prims, vec![11, 22]);
    assert_eq!(o.memory_writes, vec![(0x3000, vec![9])]);
}

/// Two 32-bit draws of one beat each: DRAW o=0 m=2, DRAW o=2 m=2
/// (10 dwords, 5 beats).
fn two_draws() -> Vec<u32> {
    cat(&[pkt(Opcode::DrawIndexOffset2, &[0, 0, 2, 0]), pkt(Opcode::DrawIndexOffset2, &[0, 2, 2, 0])])
}

#[test]
fn two_draws_one_job() {
    // prim_jobs = 1 (the old single job), F = 2 (BB = 8), L = 1.
    // Instruction requests c1..c5, beats visible c3..c7:
    // [h0 max0] [o0 m0] [init0 h1] [max1 o1] [m1 init1].
    // c3 r=3; c4 r=1; c5 draw0 ends, 0 jobs held: commits (job0 held
    // from c6), h1 is the second packet and takes 1 lane (r=4); c6 r=2;
    // c7 draw1 ends but job0 is held: t = 0.
    // Job0 (b = 0x10000, B = 1): request c6, answer c7, indices c8, c9
    // (ends). draw1 waits c7..c9, commits c10 (job1 held from c11);
    // c11 finished, draw1 leaves the queue.
    // Job1 (b = 0x10008, B = 1): request c11, answer c12, indices c13,
    // c14 (ends). c15 end.
    let p = CmdprocParams { prim_jobs: 1, ..CmdprocParams::default() };
    let o = run(&p, &wl(two_draws(), vec![(PRIM, vec![10, 11, 12, 13])], 1));
    assert_eq!(o.cycles, 15);
    assert_eq!(o.commands[0].prims, vec![10, 11]);
    assert_eq!(o.commands[1].prims, vec![12, 13]);
    // prim_jobs = 2: c7 draw1 commits (1 job held), job1 held from c8.
    // Job0's beat is all requested (c6): job1 requests c8, answer c9.
    // Job0 sends c8, c9 (ends); job1 sends from c10: c10, c11 (ends).
    // c8 finished; draw1 leaves c8; c12 end.
    let p = CmdprocParams { prim_jobs: 2, ..CmdprocParams::default() };
    let o = run(&p, &wl(two_draws(), vec![(PRIM, vec![10, 11, 12, 13])], 1));
    assert_eq!(o.cycles, 12);
    assert_eq!(o.commands[1].prims, vec![12, 13]);
}

/// Four 32-bit draws, F = 2 (BB = 8), 20 dwords = 10 beats:
/// - draw0 o=0 m=5: b = 0x10000, B = ceil(20/8) = 3 (0x10000, 0x10008,
///   0x10010); indices 0, 1 | 2, 3 | 4;
/// - draw1 o=3 m=2: b = 0x1000C, b mod 8 = 4, B = ceil(12/8) = 2
///   (0x10008, 0x10010: fetched again, a beat holds one job's indices);
///   indices 0 | 1;
/// - draw2 o=5 m=1: b = 0x10014, B = 1 (0x10010);
/// - draw3 o=6 m=4: b = 0x10018, B = 2 (0x10018, 0x10020); 0, 1 | 2, 3.
///
/// Instruction beats at L = 10: requests c1..c10, visible c12..c21:
/// [h0 max0] [o0 m0] [init0 h1] [max1 o1] [m1 init1] [h2 max2] [o2 m2]
/// [init2 h3] [max3 o3] [m3 init3]. Without waiting: draw0 ends c14
/// (h1 second packet), draw1 c16, draw2 c19 (h3 second packet), draw3
/// c21; c22 finished.
fn four_draws() -> Workload {
    let cmd = cat(&[
        pkt(Opcode::DrawIndexOffset2, &[0, 0, 5, 0]),
        pkt(Opcode::DrawIndexOffset2, &[0, 3, 2, 0]),
        pkt(Opcode::DrawIndexOffset2, &[0, 5, 1, 0]),
        pkt(Opcode::DrawIndexOffset2, &[0, 6, 4, 0]),
    ]);
    wl(cmd, vec![(PRIM, (100..110).collect())], 10)
}

fn four_draws_prims(o: &Outcome) {
    assert_eq!(o.commands.len(), 4);
    assert_eq!(o.commands[0].prims, vec![100, 101, 102, 103, 104]);
    assert_eq!(o.commands[1].prims, vec![103, 104]);
    assert_eq!(o.commands[2].prims, vec![105]);
    assert_eq!(o.commands[3].prims, vec![106, 107, 108, 109]);
}

#[test]
fn draws_overlap_fetches() {
    // prim_jobs = 4, L = 10, prim_beats = 16 (never short here). Commits
    // c14, c16, c19, c21 (at most 3 jobs held at the start of each):
    // jobs held from c15, c17, c20, c22.
    // Requests, one a cycle, the oldest job not all requested first:
    // c15, c16, c17 job0 (answers c25, c26, c27); c18, c19 job1 (c28,
    // c29); c20 job2 (c30); c21 none (job3 not held yet); c22, c23 job3
    // (c32, c33). Visible: job0 c26..c28, job1 c29, c30, job2 c31, job3
    // c33, c34.
    // Indices: job0 c26, c27 (pop), c28, c29 (pop), c30 (last); job1
    // from c31: c31 (pop), c32 (last); job2 c33 (last); job3 c34, c35
    // (pop), c36, c37 (last). c38 end.
    let p = CmdprocParams { prim_jobs: 4, ..CmdprocParams::default() };
    let o = run(&p, &four_draws());
    assert_eq!(o.cycles, 38);
    four_draws_prims(&o);
    // More jobs change nothing: never 4 held at a draw's end.
    let p = CmdprocParams { prim_jobs: 8, ..CmdprocParams::default() };
    assert_eq!(run(&p, &four_draws()).cycles, 38);
}

#[test]
fn draws_share_pcredits() {
    // The four draws at prim_jobs = 4 with prim_beats = 2: one pcredits
    // for all jobs (2 at the doorbell). Commits and holds as in
    // draws_overlap_fetches.
    // c15 job0 b0 (2 -> 1, answer c25), c16 job0 b1 (-> 0, c26).
    // Job0: c26 idx0, c27 idx1 pops (+1), c28 job0 b2 (c38) and idx2,
    // c29 idx3 pops (+1), c30 job1 b0 (c40); idx4 waits for b2
    // (visible c39): c39 idx4, job0 ends, pops (+1). c40 job1 b1 (c50).
    // Job1: c41 idx0 pops (+1); c42 job2 b0 (c52); c51 idx1, ends,
    // pops (+1); c52 job3 b0 (c62). Job2: c53 idx0, ends, pops (+1);
    // c54 job3 b1 (c64). Job3: c63 idx0, c64 idx1 pops, c65 idx2, c66
    // idx3 ends. c67 end.
    let p = CmdprocParams { prim_jobs: 4, prim_beats: 2, ..CmdprocParams::default() };
    let o = run(&p, &four_draws());
    assert_eq!(o.cycles, 67);
    four_draws_prims(&o);
}

#[test]
fn draw_waits_for_a_job_slot() {
    // The four draws at prim_jobs = 2, L = 10.
    // draw0 commits c14 (job0 held c15), draw1 c16 (job1 held c17).
    // c17 [h2 max2], c18 [o2 m2], c19 draw2 ends with 2 jobs held:
    // t = 0 (h3 is not looked at). Requests c15..c17 job0, c18, c19
    // job1 (answers c25..c29, visible c26..c30). Job0 sends c26..c30
    // (ends). c31 draw2 commits (1 job held), h3 second packet takes 1
    // lane; job2 held c32. Job1 sends c31 (pop), c32 (ends). c32
    // [max3 o3]; c33 draw3 ends with job2 only held: commits (job3 held
    // c34); c34 finished. Job2 requests c32 (answer c42), job3 c34, c35
    // (c44, c45). Job2 sends c43 (ends); job3 c45, c46 (pop), c47, c48
    // (ends). c49 end.
    let p = CmdprocParams { prim_jobs: 2, ..CmdprocParams::default() };
    let o = run(&p, &four_draws());
    assert_eq!(o.cycles, 49);
    four_draws_prims(&o);
    // prim_jobs = 1: each draw waits for the job before it to end.
    // Job0 as above, ends c30. c15 [max1 o1], c16 draw1 ends: waits
    // c16..c30, commits c31 (no second packet: e = 2 = A); job1 held
    // c32, requests c32, c33 (answers c42, c43), sends c43 (pop), c44
    // (ends). c32 [h2 max2], c33 [o2 m2], c34 draw2 waits c34..c44,
    // commits c45 (h3 takes 1 lane); job2 held c46, request c46
    // (answer c56), sends c57 (ends). c46 [max3 o3], c47 draw3 waits
    // c47..c57, commits c58; c59 finished; job3 held c59, requests c59,
    // c60 (answers c69, c70), sends c70, c71 (pop), c72, c73 (ends).
    // c74 end.
    let p = CmdprocParams { prim_jobs: 1, ..CmdprocParams::default() };
    let o = run(&p, &four_draws());
    assert_eq!(o.cycles, 74);
    four_draws_prims(&o);
}

#[test]
fn set_context_reg() {
    // state_regs = 16: offset 14 with 2 values is the last good range.
    // c3 [h p0], c4 [v v] commits (writes at that edge), c5 finished,
    // c6 end.
    let mut w = wl(pkt(Opcode::SetContextReg, &[14, 5, 6]), vec![], 1);
    w.registers.state = vec![1, 2, 3];
    let o = run(&CmdprocParams::default(), &w);
    let mut t = vec![0; 16];
    t[..3].copy_from_slice(&[1, 2, 3]);
    t[14] = 5;
    t[15] = 6;
    assert_eq!(o.state_table, t);
    assert_eq!(o.cycles, 6);
    assert_eq!(o.trace[0], "#0 @0x00001000 SET_CONTEXT_REG offset=14 values=5,6");
}

#[test]
fn second_packet_state_range() {
    // F = 4, L = 1. NOP n=4 (5 dwords), SET_CONTEXT_REG offset=15
    // values=1,2 (4 dwords): 3 beats, answered c2..c4. c3 [h 1 2 3]
    // r=1; c4 [4 SCRh 15 1]: the NOP ends in lane 0 and commits, the
    // second packet takes its header and p0: 15 + 3 - 1 > 16, error at
    // 0x1014 in c4, nothing written. c5 the NOP leaves; c6 end.
    let cmd = cat(&[nop(5), pkt(Opcode::SetContextReg, &[15, 1, 2])]);
    let o = run(&params(128), &wl(cmd, vec![], 1));
    assert_eq!(o.error, Some((Cause::StateRange, 0x1014)));
    assert_eq!(o.commands.len(), 1);
    assert_eq!(o.state_table, vec![0; 16]);
    assert_eq!(o.cycles, 6);
    // With offset=14 the second packet writes value 1 in c4, value 2
    // in c5 (commit); c6 finished; c7 end.
    let cmd = cat(&[nop(5), pkt(Opcode::SetContextReg, &[14, 1, 2])]);
    let o = run(&params(128), &wl(cmd, vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.state_table[14..], [1, 2]);
    assert_eq!(o.cycles, 7);
}

// ---- render state in order: the state hold and pipeline stalls ----

/// `DRAW_INDEX_AUTO count=c initiator=0` (3 dwords), a state reader.
fn auto(c: u32) -> Vec<u32> {
    pkt(Opcode::DrawIndexAuto, &[c, 0])
}
/// `SET_CONTEXT_REG offset=o values=v..` (2 + values dwords).
fn scr(o: u32, v: &[u32]) -> Vec<u32> {
    let mut pl = vec![o];
    pl.extend_from_slice(v);
    pkt(Opcode::SetContextReg, &pl)
}
/// The default table (state_regs = 16) from `STATE_INIT` = 1, 2, 3 with
/// `sets` (register, value) applied.
fn table_with(sets: &[(usize, u32)]) -> Vec<u32> {
    let mut t = vec![0; 16];
    t[..3].copy_from_slice(&[1, 2, 3]);
    for &(r, v) in sets {
        t[r] = v;
    }
    t
}
fn wl_state(cmd: Vec<u32>, lat: u32) -> Workload {
    let mut w = wl(cmd, vec![], lat);
    w.registers.state = vec![1, 2, 3];
    w
}

#[test]
fn state_hold_draw_set_draw() {
    // (a) F = 2, L = 1, no stall, STATE_INIT = 1, 2, 3. DRAW_INDEX_AUTO
    // (d0..d2), SET_CONTEXT_REG offset=0 values=9 (d3..d5),
    // DRAW_INDEX_AUTO (d6..d8): 9 dwords, beats [d0 d1] [d2 d3] [d4 d5]
    // [d6 d7] [d8 -], requested c1..c5, visible c3..c7.
    // c3 [d0 d1]: draw0 starts in lane 0, 3 dwords > A = 2: takes 2, r = 1.
    // c4 [d2 d3]: draw0 ends in lane 0 and commits (a state reader that
    //   commits: the cycle is held; its state is the table now, 1, 2, 3);
    //   the SET_CONTEXT_REG header in lane 1 is the second packet: checked,
    //   takes nothing (t2 = 0). t = 1.
    // c5 [d3 d4]: draw0 is in the queue at the start: held; the
    //   SET_CONTEXT_REG starts in lane 0 (header checked), t = 0. draw0 is
    //   presented and leaves at the edge (cmd_ready).
    // c6 [d3 d4]: the queue is empty at the start: not held; header and
    //   p0 (range 0 + 2 - 1 <= 16), r = 1.
    // c7 [d5 d6]: the value is taken and written (table[0] = 9 at the
    //   edge), the SET_CONTEXT_REG commits; draw1's header in lane 1 is the
    //   second packet (no hold for a reader): t2 = 1, r = 2.
    // c8 [d7 d8]: draw1 ends and commits (held; its state 9, 2, 3); the
    //   SET_CONTEXT_REG leaves.
    // c9 buffer end, finished; draw1 leaves. c10 the end: cycles = 10.
    // (Without the hold the header would be taken in c4 and the run
    // would end in c9.)
    let cmd = cat(&[auto(3), scr(0, &[9]), auto(4)]);
    let p = CmdprocParams::default();
    let o = run(&p, &wl_state(cmd, 1));
    assert_eq!(o.cycles, 10);
    assert_eq!(o.error, None);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x100C), (2, 0x1018)]);
    assert_eq!(o.commands[0].state, Some(table_with(&[])));
    assert_eq!(o.commands[1].state, None);
    assert_eq!(o.commands[2].state, Some(table_with(&[(0, 9)])));
    assert_eq!(o.state_table, table_with(&[(0, 9)]));
    // The output: "state" on the readers only.
    let j = output_json(&p, &o);
    assert_eq!(j["commands"][0]["state"], json!(table_with(&[])));
    assert!(j["commands"][1].get("state").is_none());
    assert_eq!(j["commands"][2]["state"], json!(table_with(&[(0, 9)])));
}

#[test]
fn state_hold_second_packet_takes_nothing() {
    // (b) F = 2, L = 1. DRAW_INDEX_AUTO (d0..d2), SET_CONTEXT_REG offset=0
    // values=9 (d3..d5): beats [d0 d1] [d2 d3] [d4 d5], visible c3..c5.
    // c3 draw takes 2 (r = 1). c4 [d2 d3]: the draw commits (held), the
    // SET_CONTEXT_REG header (second packet) takes nothing. c5 [d3 d4]:
    // the draw in the queue: held, t = 0; the draw leaves. c6 [d3 d4]
    // header and p0 (r = 1). c7 [d5] the value (A = 1): commits. c8
    // finished (the SET_CONTEXT_REG leaves). c9 end: cycles = 9.
    let o = run(&CmdprocParams::default(), &wl_state(cat(&[auto(3), scr(0, &[9])]), 1));
    assert_eq!(o.cycles, 9);
    assert_eq!(o.commands[0].state, Some(table_with(&[])));
    assert_eq!(o.state_table, table_with(&[(0, 9)]));
    // The same with a 3-dword NOP first (not a state reader): c4 the NOP
    // commits and the SET_CONTEXT_REG header is taken as the second packet
    // (t2 = 1, r = 2); c5 [d4 d5] p0 and the value: commits; c6 finished;
    // c7 end: the hold costs two cycles (the spec's "two cycles without
    // back-pressure").
    let o = run(&CmdprocParams::default(), &wl_state(cat(&[nop(3), scr(0, &[9])]), 1));
    assert_eq!(o.cycles, 7);
    assert_eq!(o.commands[0].state, None);
    // A held second packet is still checked like a header: a
    // SET_CONTEXT_REG header with n = 1 (count) in lane 1 of c4 raises the
    // error in c4 at 0x100C, the draw still commits; c5 the draw leaves;
    // c6 end.
    let cmd = cat(&[auto(3), vec![hdr(Opcode::SetContextReg, 1), 0]]);
    let o = run(&CmdprocParams::default(), &wl_state(cmd, 1));
    assert_eq!(o.error, Some((Cause::Count, 0x100C)));
    assert_eq!(o.commands.len(), 1);
    assert_eq!(o.commands[0].state, Some(table_with(&[])));
    assert_eq!(o.cycles, 6);
    // ... but its p0 is not taken in a held cycle, so no state_range
    // there: offset=15 values=1,2 (15 + 3 - 1 > 16; 4 dwords d3..d6, 4
    // beats). c4 second packet, takes nothing; c5 held (the draw in the
    // queue), header checked, t = 0; c6 header and p0: state_range raised
    // in c6 at 0x100C. c7 end (the draw left in c5, the last answer was
    // in c5): cycles = 7. (With a NOP first the error is raised in c4, as
    // in second_packet_state_range.)
    let o = run(&CmdprocParams::default(), &wl_state(cat(&[auto(3), scr(15, &[1, 2])]), 1));
    assert_eq!(o.error, Some((Cause::StateRange, 0x100C)));
    assert_eq!(o.commands.len(), 1);
    assert_eq!(o.state_table, table_with(&[]));
    assert_eq!(o.cycles, 7);
}

#[test]
fn state_hold_with_stalls() {
    // (c) F = 2, L = 1, "pipeline": {"stall": 0.5, "seed": 1272}: the
    // threshold is floor(0.5 * 2^64) = 2^63, so cmd_ready is the top bit
    // of each draw. The draws of seed 1272 give cmd_ready in busy cycles
    // 1..15: 0 0 0 0 0 0 0 1 1 1 1 1 1 1 0 (checked below against the
    // spec's formula).
    // DRAW_INDEX_AUTO (d0..d2), SET_CONTEXT_REG offset=0 values=9
    // (d3..d5), SET_CONTEXT_REG offset=1 values=8 (d6..d8),
    // DRAW_INDEX_AUTO (d9..d11): 6 beats, visible c3..c8.
    // c3 draw0 takes 2. c4 draw0 commits (state 1, 2, 3), the first
    // SET_CONTEXT_REG's header (second packet) takes nothing.
    // c5, c6, c7: draw0 presented, cmd_ready = 0: it stays; held (it is
    //   in the queue), the SET_CONTEXT_REG in lane 0 takes nothing.
    // c8: held, cmd_ready = 1: draw0 leaves at the edge (state_o is its
    //   state in c5..c8 although two SET_CONTEXT_REGs are pending).
    // c9 [d3 d4] header, p0. c10 [d5 d6] value (table[0] = 9), commits;
    //   the second SET_CONTEXT_REG's header is the second packet, not held
    //   (no reader in the queue, the first packet is not a reader): t2 = 1.
    // c11 [d7 d8] p0, value (table[1] = 8), commits; the first leaves.
    // c12 [d9 d10] draw1 takes 2; the second SET_CONTEXT_REG leaves.
    // c13 [d11] (A = 1) draw1 commits (state 9, 8, 3).
    // c14 finished; draw1 leaves (cmd_ready = 1). c15 end: cycles = 15.
    let cmd = cat(&[auto(3), scr(0, &[9]), scr(1, &[8]), auto(4)]);
    let mut w = wl_state(cmd, 1);
    w.pipeline = Pipeline { stall: 0.5, seed: 1272, kerr: vec![] };
    let ready: Vec<bool> = {
        let mut g = w.pipeline.stalls();
        (0..15).map(|_| g.ready()).collect()
    };
    let want: Vec<bool> = "000000011111110".chars().map(|c| c == '1').collect();
    assert_eq!(ready, want);
    assert_eq!(spec_ready(0.5, 1272, 15), want);
    let o = run(&CmdprocParams::default(), &w);
    assert_eq!(o.cycles, 15);
    assert_eq!(o.commands.len(), 4);
    assert_eq!(o.commands[0].state, Some(table_with(&[])));
    assert_eq!(o.commands[3].state, Some(table_with(&[(0, 9), (1, 8)])));
    assert_eq!(o.commands[1].state, None);
    assert_eq!(o.commands[2].state, None);
    // Without stalls: draw0 leaves c5, c6 header and p0, c7 value and the
    // second header, c8 p0 and value, c9 draw1 takes 2, c10 commits, c11
    // finished, c12 end. Same commands and states.
    let mut w0 = w.clone();
    w0.pipeline = Pipeline::default();
    let o0 = run(&CmdprocParams::default(), &w0);
    assert_eq!(o0.cycles, 12);
    assert_eq!(o0.commands, o.commands);
}

#[test]
fn stalls_fill_the_queue() {
    // F = 2, L = 1, out_depth = 1, stall = 1 (never ready) under a run
    // budget of 20 cycles: two 2-dword NOPs; NOP0 commits c3 and never
    // leaves; the queue is full from c4 on, so nothing more is decoded
    // and the run does not end (the run budget stops it).
    let p = CmdprocParams { out_depth: 1, ..CmdprocParams::default() };
    let mut w = wl(cat(&[nop(2), nop(2)]), vec![], 1);
    w.pipeline = Pipeline { stall: 1.0, seed: 5, kerr: vec![] };
    let (o, over) = crate::budget::within(20, || run(&p, &w));
    assert!(over);
    assert_eq!(o.commands.len(), 1);
    // stall = 0.5, seed = 1272 (ready from c8 to c14): NOP0 commits c3,
    // leaves c8; NOP1 commits c9 (the queue was full at the start of
    // c4..c8), leaves c10; c11 finished; c12 end.
    w.pipeline = Pipeline { stall: 0.5, seed: 1272, kerr: vec![] };
    let o = run(&p, &w);
    assert_eq!(o.cycles, 12);
    assert_eq!(o.commands.len(), 2);
}

/// `cmd_ready` in busy cycles 1..=n from the spec's formula, written out
/// here (not through `Rng`): `x_0 = s XOR 0x9E3779B97F4A7C15`; each draw
/// `x += 0x9E3779B97F4A7C15`, `z = x`, `z = (z XOR z >> 30) *
/// 0xBF58476D1CE4E5B9`, `z = (z XOR z >> 27) * 0x94D049BB133111EB`,
/// `d = z XOR z >> 31` (mod 2^64); ready when `d >= floor(p * 2^64)`.
fn spec_ready(p: f64, s: u64, n: usize) -> Vec<bool> {
    const M: u128 = 1 << 64;
    let t = spec_threshold(p);
    let mut x = (s ^ 0x9E37_79B9_7F4A_7C15) as u128;
    (0..n)
        .map(|_| {
            x = (x + 0x9E37_79B9_7F4A_7C15) % M;
            let mut z = x;
            z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) % M;
            z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) % M;
            let d = z ^ (z >> 31);
            d >= t
        })
        .collect()
}

/// `floor(p * 2^64)` from the bits of the f64 `p` (0 <= p <= 1): `p =
/// mant * 2^(e)`, exactly.
fn spec_threshold(p: f64) -> u128 {
    let bits = p.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32;
    let frac = (bits & ((1 << 52) - 1)) as u128;
    let (mant, e) = if exp == 0 { (frac, -1074) } else { (frac | (1 << 52), exp - 1075) };
    let sh = e + 64;
    if sh >= 0 {
        mant << sh
    } else if sh > -128 {
        mant >> -sh
    } else {
        0
    }
}

#[test]
fn pipeline_ready_generator() {
    // (d) PipelineStall against the spec's formula, written out above.
    // SplitMix64 of seed 0 (x_0 = 0x9E3779B97F4A7C15): the first draws.
    let mut g = PipelineStall::new(0.5, 0);
    let mut t = Vec::new();
    for _ in 0..3 {
        t.push(g.ready());
    }
    // d_1 = 0x6E789E6AA1B965F4 (< 2^63: not ready), d_2 =
    // 0x06C45D188009454F (not ready), d_3 = 0xF88BB8A8724C81EC (ready).
    assert_eq!(t, vec![false, false, true]);
    for p in [0.0, 0.3, 0.5, 0.7, 1.0, 1e-20, 0.999_999, 2f64.powi(-70), 1.0 - f64::EPSILON / 2.0] {
        let g = PipelineStall::new(p, 1);
        assert_eq!(g.threshold(), spec_threshold(p), "p = {p}");
        for seed in [0u64, 1, 42, 1272, u64::MAX] {
            let mut g = PipelineStall::new(p, seed);
            let got: Vec<bool> = (0..2000).map(|_| g.ready()).collect();
            assert_eq!(got, spec_ready(p, seed, 2000), "p = {p}, seed = {seed}");
        }
    }
    assert_eq!(spec_threshold(1.0), 1u128 << 64);
    assert_eq!(spec_threshold(0.5), 1u128 << 63);
    // 0.3 = 5404319552844595 * 2^-54: floor(0.3 * 2^64) = 5404319552844595 * 2^10.
    assert_eq!(spec_threshold(0.3), 5_404_319_552_844_595u128 << 10);
    // p = 1: never ready; p = 0: always.
    let mut g = PipelineStall::new(1.0, 9);
    assert!((0..10_000).all(|_| !g.ready()));
    let mut g = PipelineStall::new(0.0, 9);
    assert!((0..10_000).all(|_| g.ready()));
    // About p of the cycles stall.
    let mut g = PipelineStall::new(0.3, 7);
    let stalls = (0..100_000).filter(|_| !g.ready()).count();
    assert!((29_000..31_000).contains(&stalls), "{stalls}");
}

#[test]
fn pipeline_input() {
    // (e) "pipeline" in the JSON input and `.pipeline` in text.
    let p = CmdprocParams::default();
    assert_eq!(parse_input(&good_input(), &p).unwrap().pipeline, Pipeline::default());
    let with = |x: Value| {
        let mut v = good_input();
        v["pipeline"] = x;
        parse_input(&v, &p)
    };
    assert_eq!(with(json!({"stall": 0.3, "seed": 7})).unwrap().pipeline, Pipeline { stall: 0.3, seed: 7, kerr: vec![] });
    assert_eq!(with(json!({"stall": 1, "seed": 0})).unwrap().pipeline, Pipeline { stall: 1.0, seed: 0, kerr: vec![] });
    assert_eq!(with(json!({"stall": 0, "seed": u64::MAX})).unwrap().pipeline, Pipeline { stall: 0.0, seed: u64::MAX, kerr: vec![] });
    let msgs = |r: Result<Workload, InputErrors>| r.unwrap_err().0.iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(msgs(with(json!(3))), vec!["input `pipeline` = 3: must be an object {\"stall\": p, \"seed\": s}"]);
    assert_eq!(
        msgs(with(json!({"stall": 1.5, "seed": -1, "x": 0}))),
        vec![
            "input `pipeline.x` = (given): must be absent: the keys are stall, seed",
            "input `pipeline.stall` = 1.5: must be a number from 0 to 1 (the probability that cmd_ready is 0 in a cycle)",
            "input `pipeline.seed` = -1: must be an integer from 0 to 18446744073709551615",
        ]
    );
    assert_eq!(
        msgs(with(json!({"stall": "0.3"}))),
        vec![
            "input `pipeline.stall` = \"0.3\": must be a number from 0 to 1 (the probability that cmd_ready is 0 in a cycle)",
            "input `pipeline.seed` = (missing): must be an integer from 0 to 18446744073709551615",
        ]
    );
    let fields = |r: Result<Workload, InputErrors>| r.unwrap_err().0.iter().map(|e| e.field.clone()).collect::<Vec<_>>();
    assert_eq!(fields(with(json!({"stall": -0.1, "seed": 1.0}))), vec!["pipeline.stall", "pipeline.seed"]);
    assert_eq!(fields(with(json!({"seed": 2}))), vec!["pipeline.stall"]);
    // 2^64 is not a u64 (serde_json reads it as a float).
    let v: Value = serde_json::from_str(r#"{"stall": 0.5, "seed": 18446744073709551616}"#).unwrap();
    assert_eq!(fields(with(v)), vec!["pipeline.seed"]);
    // Other violations are reported with it.
    let mut v = good_input();
    v["pipeline"] = json!({"stall": 2});
    v["mem_latency"] = json!(0);
    assert_eq!(fields(parse_input(&v, &p)), vec!["mem_latency", "pipeline.stall", "pipeline.seed"]);
    // Text.
    let t = ".registers cmd_base=0x1000\n.pipeline stall=0.3 seed=0xffffffffffffffff\nNOP\n";
    let v = pm4::run_input(t).unwrap();
    assert_eq!(v["pipeline"], json!({"stall": 0.3, "seed": u64::MAX}));
    assert_eq!(parse_input(&v, &p).unwrap().pipeline, Pipeline { stall: 0.3, seed: u64::MAX, kerr: vec![] });
    assert!(pm4::run_input(".registers cmd_base=0\nNOP\n").unwrap().get("pipeline").is_none());
    let v = pm4::run_input(".registers cmd_base=0\n.pipeline stall=2 seed=1\n.pipeline\n").unwrap();
    assert_eq!(msgs(parse_input(&v, &p)), vec!["input `pipeline.stall` = 2.0: must be a number from 0 to 1 (the probability that cmd_ready is 0 in a cycle)"]);
    let e = |t: &str| pm4::run_input(t).unwrap_err().iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(
        e(".registers cmd_base=0\n.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5\n.pipeline seed=1 seed\nNOP\n.pipeline stall=0\n"),
        vec![
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: pipeline field `stall` = `.3` is not a decimal number (digits, or digits, a point and digits, such as 0.3)",
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: pipeline field `seed` = `18446744073709551616` is not a number below 2^64 = 18446744073709551616 (decimal, or 0x and hex digits)",
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: unknown pipeline field `x`; known: stall, seed, kerr",
            "line 3: `.pipeline seed=1 seed`: `seed` is not a pipeline field: fields are written name=value; known: stall, seed, kerr",
            "line 5: `.pipeline stall=0`: `.pipeline` after a packet: `.registers`, `.memory` and `.pipeline` lines come before the packets",
        ]
    );
    assert_eq!(
        e(".registers cmd_base=0\n.pipeline stall=0.5 stall=0.25 seed=1e3\n"),
        vec![
            "line 2: `.pipeline stall=0.5 stall=0.25 seed=1e3`: pipeline field `stall` is given twice",
            "line 2: `.pipeline stall=0.5 stall=0.25 seed=1e3`: pipeline field `seed` = `1e3` is not a number below 2^64 = 18446744073709551616 (decimal, or 0x and hex digits)",
        ]
    );
    // `gpurtl asm` refuses it as a run file's line.
    let e = pm4::assemble(".pipeline stall=0.5 seed=1\nNOP\n").unwrap_err();
    assert_eq!(e[0].to_string(), "line 1: `.pipeline stall=0.5 seed=1`: `.pipeline`: a `.pipeline` line belongs to a run input for `gpurtl run cmdproc --input`; `gpurtl asm` takes packet lines only");
}

/// The error tests: (params, program, extra memory, cause, addr,
/// commands, cycles), F = 2 unless said, L = 1.
#[test]
fn each_error_cause() {
    let d = CmdprocParams::default();
    let nest0 = CmdprocParams { nesting: 0, ..d.clone() };
    type Case = (&'static str, CmdprocParams, Vec<u32>, Cause, u32, usize, u64);
    let cases: Vec<Case> = vec![
        // 1 dword, visible c3, error c3, end c4.
        ("type", d.clone(), vec![0x0000_0000], Cause::Type, 0x1000, 0, 4),
        ("type 1", d.clone(), vec![0x4000_0000], Cause::Type, 0x1000, 0, 4),
        ("opcode", d.clone(), vec![0xFFFF_1200], Cause::Opcode, 0x1000, 0, 4),
        // 3 dwords, 2 beats (second answered c3): error c3, end c4.
        ("count", d.clone(), vec![hdr(Opcode::IndexType, 2), 1, 1], Cause::Count, 0x1000, 0, 4),
        ("overrun", d.clone(), vec![hdr(Opcode::Nop, 3), 0], Cause::Overrun, 0x1000, 0, 4),
        ("nesting", nest0, ib(0x2000, 1), Cause::Nesting, 0x1000, 0, 4),
        // p0 taken in c3: 15 + 3 - 1 > 16.
        ("state_range", d.clone(), pkt(Opcode::SetContextReg, &[15, 1, 2]), Cause::StateRange, 0x1000, 0, 4),
        ("field index", d.clone(), pkt(Opcode::IndexType, &[2]), Cause::Field, 0x1000, 0, 4),
        // c3 header, c4 p0, c5 p1, c6 p2 = 1: field; end c7.
        ("field write hi", d.clone(), pkt(Opcode::WriteData, &[0, 0x3000, 1, 5]), Cause::Field, 0x1000, 0, 7),
        ("field write lo", d.clone(), pkt(Opcode::WriteData, &[0, 0x3002, 0, 5]), Cause::Field, 0x1000, 0, 7),
        // c3 [h p0], c4 [p1 p2] ends: field; end c5.
        ("field ib", d.clone(), ib(0x2002, 1), Cause::Field, 0x1000, 0, 5),
        // c3, c4, c5 [p3] ends: (250 + 7) * 4 > 1024; end c6.
        ("prim_range", d.clone(), pkt(Opcode::DrawIndexOffset2, &[0, 250, 7, 0]), Cause::PrimRange, 0x1000, 0, 6),
        // c3 [h p0], c4 [p1 bad]: NOP commits, second packet type error;
        // c5 the NOP leaves; c6 end.
        ("after a command", d.clone(), cat(&[nop(3), vec![0]]), Cause::Type, 0x100C, 1, 6),
    ];
    for (name, p, cmd, cause, addr, ncmd, cycles) in cases {
        let o = run(&p, &wl(cmd, vec![], 1));
        assert_eq!(o.status, Status::Error, "{name}");
        assert_eq!(o.error, Some((cause, addr)), "{name}");
        assert_eq!(o.commands.len(), ncmd, "{name}");
        assert_eq!(o.cycles, cycles, "{name}");
        assert!(o.memory_writes.is_empty() && o.state_table == vec![0; 16], "{name}");
        assert!(o.irq, "{name}");
    }
    // The boundary of prim_range: (249 + 7) * 4 = 1024 is good.
    let o = run(&d, &wl(pkt(Opcode::DrawIndexOffset2, &[0, 249, 7, 0]), vec![], 1));
    assert_eq!(o.status, Status::Done);
    assert_eq!(o.commands[0].prims.len(), 7);
    // irq follows irq_enable.
    let mut w = wl(vec![0], vec![], 1);
    w.registers.irq_enable = 1;
    assert!(!run(&d, &w).irq);
    w.registers.irq_enable = 2;
    assert!(run(&d, &w).irq);
    let mut w = wl(nop(1), vec![], 1);
    w.registers.irq_enable = 2;
    assert!(!run(&d, &w).irq);
    let o = run(&d, &wl(vec![0x4000_0000], vec![], 1));
    assert_eq!(output_json(&d, &o)["error"], json!({"cause": "type", "addr": 4096}));
    assert_eq!(output_json(&d, &o)["status"], json!("error"));
}

#[test]
fn empty_main_buffer() {
    // cmd_size 0 at 0x1000: c1 finished, c2 end. At 0x1004 the same: an
    // empty buffer fetches nothing.
    let o = run(&CmdprocParams::default(), &wl(vec![], vec![], 20));
    assert_eq!((o.cycles, o.status), (2, Status::Done));
    let mut w = wl(vec![], vec![], 20);
    w.registers.cmd_base = 0x1004;
    assert_eq!(run(&CmdprocParams::default(), &w).cycles, 2);
}

#[test]
fn ids_wrap() {
    let p = CmdprocParams { id_bits: 4, ..CmdprocParams::default() };
    let cmd: Vec<u32> = (0..20).flat_map(|_| nop(1)).collect();
    let o = run(&p, &wl(cmd, vec![], 1));
    let ids: Vec<u32> = o.commands.iter().map(|c| c.record.id).collect();
    assert_eq!(ids, (0..20).map(|i| i % 16).collect::<Vec<u32>>());
}

#[test]
fn steady_throughput() {
    // Commands per cycle over the steady part (the difference of two
    // run lengths) within 5% of min(1, F/k), default params.
    let p = CmdprocParams::default();
    let f = p.fetch_dwords() as f64;
    for k in [1u32, 2, 4, 6] {
        for lat in [1u32, 20] {
            let cycles = |count: usize| {
                let cmd: Vec<u32> = (0..count).flat_map(|_| nop(k)).collect();
                let o = run(&p, &wl(cmd, vec![], lat));
                assert_eq!(o.commands.len(), count);
                o.cycles
            };
            let (n1, n2) = (200, 2200);
            let rate = (n2 - n1) as f64 / (cycles(n2) - cycles(n1)) as f64;
            let want = (f / k as f64).min(1.0);
            assert!((rate / want - 1.0).abs() < 0.05, "k={k} L={lat}: {rate} commands/cycle, want {want}");
        }
    }
}

#[test]
fn speed() {
    // ~120k cycles (F = 2, 2-dword NOPs (1 cycle) and 6-dword NOPs (3
    // cycles) at L = 20).
    let cmd: Vec<u32> = (0..60000).flat_map(|i| nop(if i % 2 == 0 { 2 } else { 6 })).collect();
    let t = std::time::Instant::now();
    let o = run(&CmdprocParams::default(), &wl(cmd, vec![], 20));
    assert!(o.cycles > 100_000);
    assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
}

// ---- the behaviour section read packet by packet ----

struct Beh<'a> {
    p: &'a CmdprocParams,
    w: &'a Workload,
    mem: Memory,
    table: Vec<u32>,
    /// The compute registers (compute mode), in the spec's table order.
    sh: Vec<u32>,
    s: u32,
    id: u64,
    cmds: Vec<Command>,
    writes: Vec<(u32, Vec<u32>)>,
    error: Option<(Cause, u32)>,
}

impl Beh<'_> {
    /// Runs a buffer; false on an error.
    fn buffer(&mut self, a: u32, size: u32, level: u32) -> bool {
        let mut i = 0u32;
        while i < size {
            let ha = a.wrapping_add(4 * i);
            let h = dword(&self.mem, ha);
            let mut fail = |c: Cause| {
                self.error = Some((c, ha));
                false
            };
            match h >> 30 {
                0 | 1 => return fail(Cause::Type),
                2 => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let compute = self.p.compute;
            let Some(op) = Opcode::from_code((h >> 8) & 0xFF) else { return fail(Cause::Opcode) };
            if !compute && matches!(op, Opcode::SetShReg | Opcode::ReleaseMem) {
                return fail(Cause::Opcode);
            }
            let n = payload_count(h);
            if !op.count_ok(n) {
                return fail(Cause::Count);
            }
            if i as u64 + 1 + n as u64 > size as u64 {
                return fail(Cause::Overrun);
            }
            if op == Opcode::IndirectBuffer && level == self.p.nesting {
                return fail(Cause::Nesting);
            }
            let pl: Vec<u32> = (0..n).map(|k| dword(&self.mem, ha.wrapping_add(4 + 4 * k))).collect();
            let bad = match op {
                Opcode::SetContextReg => pl[0] as u64 + n as u64 - 1 > self.p.state_regs as u64,
                _ => false,
            };
            if bad {
                return fail(Cause::StateRange);
            }
            // SET_SH_REG: every offset p0 .. p0 + n - 2 a compute register
            // (the range is consecutive, so that is "inside one run").
            if op == Opcode::SetShReg && !(0..n as u64 - 1).all(|k| sh_reg(pl[0] as u64 + k).is_some()) {
                return fail(Cause::ShRange);
            }
            let s = self.s as u64;
            let bad = match op {
                Opcode::IndexType => pl[0] > 1,
                Opcode::WriteData | Opcode::IndirectBuffer => pl[op_hi(op)] != 0 || pl[op_lo(op)] & 3 != 0,
                Opcode::DispatchDirect if compute => spec_dispatch(self.p, &self.sh, &pl) == Some(Cause::Field),
                Opcode::ReleaseMem => {
                    let (ds, is) = (pl[1] >> 29, (pl[1] >> 24) & 7);
                    pl[3] != 0 || !pl[2].is_multiple_of(4) || (ds == 2 && !pl[2].is_multiple_of(8)) || ds > 2 || is > 3
                }
                _ => false,
            };
            if bad {
                return fail(Cause::Field);
            }
            let draw = op.is_draw();
            if !compute && op == Opcode::DrawIndexOffset2 && (pl[1] as u64 + pl[2] as u64) * s > self.w.registers.prim_size as u64 {
                return fail(Cause::PrimRange);
            }
            if op == Opcode::DispatchDirect && compute && spec_dispatch(self.p, &self.sh, &pl) == Some(Cause::Need) {
                return fail(Cause::Need);
            }
            if compute && draw {
                return fail(Cause::Graphics);
            }
            let mut p = [0; 6];
            for (k, v) in pl.iter().take(if compute { 6 } else { 4 }).enumerate() {
                p[k] = *v;
            }
            let mask = if self.p.id_bits >= 32 { u32::MAX as u64 } else { (1 << self.p.id_bits) - 1 };
            let record = Record { id: (self.id & mask) as u32, addr: ha, header: h, count: n, p };
            self.id += 1;
            let mut prims = Vec::new();
            match op {
                Opcode::SetContextReg => {
                    for k in 0..n - 1 {
                        self.table[(pl[0] + k) as usize] = pl[1 + k as usize];
                    }
                }
                Opcode::SetShReg => {
                    for k in 0..n - 1 {
                        self.sh[sh_reg((pl[0] + k) as u64).unwrap()] = pl[1 + k as usize];
                    }
                }
                Opcode::IndexType => self.s = if pl[0] == 0 { 2 } else { 4 },
                Opcode::WriteData => self.writes.push((pl[1], pl[3..].to_vec())),
                Opcode::DrawIndexOffset2 => {
                    for k in 0..pl[2] as u64 {
                        let at = self.w.registers.prim_base.wrapping_add(((pl[1] as u64 + k) * s) as u32);
                        let d = dword(&self.mem, at);
                        prims.push(if s == 2 { (d >> (8 * (at & 2))) & 0xFFFF } else { d });
                    }
                }
                _ => {}
            }
            // A state reader's state: the table as the SET_CONTEXT_REG
            // packets before it in packet order left it.
            let state = op.reads_state().then(|| self.table.clone());
            let sh = (compute && op == Opcode::DispatchDirect).then(|| self.sh.clone());
            let id = record.id;
            self.cmds.push(Command { record, prims, state, sh });
            // kerr_i (compute mode): a dispatch whose id (as presented) is
            // listed raises `kernel` as it leaves; nothing after it is
            // read (the barrier), so the run ends with it.
            if compute && op == Opcode::DispatchDirect && self.w.pipeline.kerr.iter().any(|&k| k as u32 == id) {
                return fail(Cause::Kernel);
            }
            if op == Opcode::IndirectBuffer && !self.buffer(pl[0], pl[2] & IB_SIZE_MASK, level + 1) {
                return false;
            }
            i += 1 + n;
        }
        true
    }
}

/// The compute register at dword offset `o` (the spec's table, written
/// out): its index in `sh_o` order.
fn sh_reg(o: u64) -> Option<usize> {
    const OFFS: [u64; 7] = [0x207, 0x208, 0x209, 0x20C, 0x20D, 0x212, 0x213];
    match OFFS.iter().position(|&x| x == o) {
        Some(i) => Some(i),
        None if (0x240..0x250).contains(&o) => Some(7 + (o - 0x240) as usize),
        None => None,
    }
}

/// A compute-mode dispatch's checks read from the spec ("`DISPATCH_DIRECT`
/// (0x15)"): `field` then `need`, from the snapshot `r` and `x, y, z`.
fn spec_dispatch(p: &CmdprocParams, r: &[u32], pl: &[u32]) -> Option<Cause> {
    use num_bigint::BigUint;
    let big = |v: u64| BigUint::from(v);
    // NUM_THREAD_FULL = bits 15:0 of X (0), Y (1), Z (2).
    let t = big((r[0] % 65536) as u64) * big((r[1] % 65536) as u64) * big((r[2] % 65536) as u64);
    let (x, y, z) = (big(pl[0] as u64), big(pl[1] as u64), big(pl[2] as u64));
    let two16 = big(65536);
    let blocks_max = (big(1) << p.block_bits as usize) - big(1);
    // PGM_LO (3) bits 31:24, PGM_HI (4) bits 7:0.
    if t == big(0) || x > two16 || y > two16 || z > two16 || &x * &y * &z > blocks_max || r[3] >= 1 << 24 || !r[4].is_multiple_of(256) {
        return Some(Cause::Field);
    }
    // VGPRS = RSRC1 (5) bits 5:0; LDS_SIZE = RSRC2 (6) bits 23:15.
    let regs = &t * big(4) * big((r[5] % 64) as u64 + 1);
    let smem = big(512) * big(((r[6] >> 15) % 512) as u64);
    if t > big(p.max_threads as u64) || regs > big(p.max_regs as u64) || smem > big(p.max_smem as u64) {
        return Some(Cause::Need);
    }
    None
}

/// Index of address hi / lo in the payload of WRITE_DATA / INDIRECT_BUFFER.
fn op_hi(op: Opcode) -> usize {
    if op == Opcode::WriteData {
        2
    } else {
        1
    }
}
fn op_lo(op: Opcode) -> usize {
    if op == Opcode::WriteData {
        1
    } else {
        0
    }
}

/// Commands (with primitives), state table, error, memory writes, the
/// compute registers at the end (compute mode).
type Behaviour = (Vec<Command>, Vec<u32>, Option<(Cause, u32)>, Vec<(u32, Vec<u32>)>, Option<Vec<u32>>);

fn behave(p: &CmdprocParams, w: &Workload) -> Behaviour {
    let table = (0..p.state_regs as usize).map(|i| w.registers.state.get(i).copied().unwrap_or(0)).collect();
    let mut b = Beh { p, w, mem: memory_image(&w.memory), table, sh: vec![0; 23], s: 4, id: 0, cmds: vec![], writes: vec![], error: None };
    b.buffer(w.registers.cmd_base, w.registers.cmd_size / 4, 0);
    let sh = p.compute.then(|| b.sh.clone());
    (b.cmds, b.table, b.error, b.writes, sh)
}

/// A small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn below(&mut self, n: u32) -> u32 {
        self.next() % n
    }
    fn chance(&mut self, pct: u32) -> bool {
        self.below(100) < pct
    }
}

/// A random buffer of about `len` packets; an INDIRECT_BUFFER calls one
/// of `subs` (address, dwords) (or a bad or empty one).
fn random_buffer(r: &mut Rng, len: u32, subs: &[(u32, u32)], p: &CmdprocParams, bad: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for _ in 0..len {
        if p.compute && r.chance(45) {
            v.extend(random_compute_packet(r, bad));
            continue;
        }
        let k = r.below(12);
        // Draws are graphics errors in compute mode: rarely.
        if p.compute && (5..=7).contains(&k) && !r.chance(bad * 3) {
            v.extend(nop(3));
            continue;
        }
        let x = match k {
            0 | 1 => nop(1 + r.below(9)),
            2 => vec![0x8000_0000],
            3 => {
                let vals = 1 + r.below(5);
                let off = r.below(p.state_regs + 2);
                let mut x = vec![hdr(Opcode::SetContextReg, vals + 1), off];
                x.extend((0..vals).map(|_| r.next()));
                if !r.chance(bad * 5) {
                    // Keep it in range most of the time.
                    x[1] = off.min(p.state_regs.saturating_sub(vals));
                    if vals > p.state_regs {
                        x = nop(2);
                    }
                }
                x
            }
            4 => pkt(Opcode::IndexType, &[if r.chance(bad) { 2 } else { r.below(2) }]),
            5 => pkt(Opcode::DrawIndexAuto, &[r.next(), r.next()]),
            6 | 7 => {
                let (o, m) = (r.below(8), if r.chance(20) { 0 } else { 1 + r.below(12) });
                let o = if r.chance(bad) { 250 } else { o };
                pkt(Opcode::DrawIndexOffset2, &[r.next(), o, m, r.next()])
            }
            8 => pkt(Opcode::DispatchDirect, &[r.next(), r.next(), r.next(), r.next()]),
            9 => {
                let mut pl = vec![r.next(), 0x3000 + 4 * r.below(16), 0];
                if r.chance(bad) {
                    pl[2] = 1;
                }
                if r.chance(bad) {
                    pl[1] += 2;
                }
                pl.extend((0..1 + r.below(5)).map(|_| r.next()));
                pkt(Opcode::WriteData, &pl)
            }
            10 if !subs.is_empty() => {
                let (a, n) = subs[r.below(subs.len() as u32) as usize];
                let n = if r.chance(10) { 0 } else { n };
                let a = if r.chance(bad) { a + 2 } else { a };
                ib(a, n)
            }
            _ => {
                if r.chance(bad) {
                    match r.below(4) {
                        0 => vec![r.below(0x8000_0000)],
                        1 => vec![0xFFFF_1200],
                        2 => pkt(Opcode::IndexType, &[0, 0]),
                        _ => vec![hdr(Opcode::Nop, 20)],
                    }
                } else {
                    nop(2)
                }
            }
        };
        v.extend(x);
    }
    v
}

/// A compute packet: `SET_SH_REG` (mostly inside a run, with values that
/// make dispatches pass), `DISPATCH_DIRECT` (small grids) or `RELEASE_MEM`
/// (mostly good); `bad` (percent-ish) makes errors likelier.
fn random_compute_packet(r: &mut Rng, bad: u32) -> Vec<u32> {
    const RUNS: [(u32, u32); 4] = [(0x207, 3), (0x20C, 2), (0x212, 2), (0x240, 16)];
    match r.below(5) {
        0..=2 => {
            let (p0, count) = if r.chance(bad * 5) {
                (if r.chance(50) { r.below(0x410) } else { 0x200 + r.below(0x60) }, 1 + r.below(5))
            } else {
                let (o, len) = RUNS[r.below(4) as usize];
                let start = r.below(len);
                (o + start, 1 + r.below(len - start))
            };
            let mut pl = vec![p0];
            for k in 0..count {
                let val = match sh_reg(p0 as u64 + k as u64) {
                    Some(0..=2) if !r.chance(bad) => (1 + r.below(4)) | if r.chance(30) { r.next() & 0xFFFF_0000 } else { 0 },
                    Some(3) if !r.chance(bad) => r.below(1 << 24),
                    Some(4) if !r.chance(bad) => r.next() & !0xFF,
                    Some(6) if !r.chance(bad) => (r.next() & !(0x1FF << 15)) | (r.below(8) << 15),
                    _ => r.next(),
                };
                pl.push(val);
            }
            pkt(Opcode::SetShReg, &pl)
        }
        3 => {
            let d = |r: &mut Rng| if r.chance(bad) { [65536, 65537, r.next()][r.below(3) as usize] } else { r.below(5) };
            let (x, y, z) = (d(r), d(r), d(r));
            // Mostly with good thread counts just before.
            let mut v = if r.chance(80) { ssr(0x207, &[1 + r.below(4), 1 + r.below(2), 1]) } else { vec![] };
            v.extend(pkt(Opcode::DispatchDirect, &[x, y, z, r.next()]));
            v
        }
        _ => {
            let ds = r.below(3);
            let sel = (ds << 29) | (r.below(4) << 24);
            let mut pl = vec![r.next(), sel | (r.next() & 0x18FF_FFFF), 0x3000 + 8 * r.below(16), 0, r.next(), r.next()];
            if ds != 2 && r.chance(50) {
                pl[2] += 4;
            }
            if r.chance(bad * 2) {
                match r.below(5) {
                    0 => pl[3] = 1 + r.below(7),
                    1 => pl[2] += 2,
                    2 => pl[1] = (pl[1] & 0x1FFF_FFFF) | ((3 + r.below(5)) << 29),
                    3 => pl[1] |= (4 + r.below(4)) << 24,
                    _ => pl[1] = (pl[1] & 0x1FFF_FFFF) | (2 << 29),
                }
            }
            if r.chance(bad) {
                // 5 or 7 dwords: count.
                if r.chance(50) {
                    pl.pop();
                } else {
                    pl.push(0);
                }
            }
            pkt(Opcode::ReleaseMem, &pl)
        }
    }
}

#[test]
fn timing_machine_matches_behaviour() {
    let mut r = Rng(12345);
    // Compute-mode coverage: causes raised, dispatches with a snapshot,
    // RELEASE_MEM and SET_SH_REG commands.
    let mut causes = std::collections::HashSet::new();
    let (mut snaps, mut releases, mut sets) = (0, 0, 0);
    for case in 0..600 {
        let p = CmdprocParams {
            fetch_bits: [32, 64, 128][r.below(3) as usize],
            pool_beats: 1 << (1 + r.below(5)),
            prim_beats: 1 << (1 + r.below(4)),
            out_depth: 1 + r.below(4),
            state_regs: 1 + r.below(16),
            nesting: r.below(4),
            id_bits: 4 + r.below(29),
            prim_jobs: 1 + r.below(4),
            mem_if: gpurtl_params::MemIf::Native,
            compute: case % 2 == 1,
            ..CmdprocParams::default()
        };
        let mut p = p;
        if p.compute && r.chance(40) {
            // Small limits, so that `need` and the block count are met.
            p.max_threads = 1 + r.below(64);
            p.max_regs = 1 + r.below(4096);
            p.max_smem = 1 + r.below(4096);
            p.block_bits = 1 + r.below(20);
        }
        let bad = if case % 3 == 0 { 0 } else { r.below(4) };
        // Level-3, -2, -1 buffers, each calling the deeper ones.
        let mut extra: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut subs: Vec<(u32, u32)> = Vec::new();
        for lvl in 0..3u32 {
            let a = 0x8000 - 0x1000 * lvl + 4 * r.below(4);
            let len = 1 + r.below(6);
            let b = random_buffer(&mut r, len, &subs, &p, bad);
            subs.push((a, b.len() as u32));
            extra.push((a, b));
        }
        let prim: Vec<u32> = (0..300).map(|_| r.next()).collect();
        extra.push((PRIM, prim));
        let len = 1 + r.below(30);
        let cmd = random_buffer(&mut r, len, &subs, &p, bad);
        let mut w = wl(cmd, extra, 1 + r.below(30));
        w.registers.cmd_base = BASE + 4 * r.below(4);
        w.memory[0].0 = w.registers.cmd_base;
        w.registers.state = (0..r.below(p.state_regs + 1)).map(|_| r.next()).collect();
        // Back-pressure on the pipeline port changes when, not what: the
        // states too (the model checks in every cycle that the table is the
        // presented reader's state).
        let stall = [0.0, 0.0, 0.3, 0.7, 0.9][r.below(5) as usize];
        w.pipeline = Pipeline { stall, seed: r.next() as u64, kerr: vec![] };
        // Compute mode: kerr ids (some of dispatches, some of other
        // commands, some of none).
        if p.compute && r.chance(50) {
            w.pipeline.kerr = (0..1 + r.below(3)).map(|_| r.below(24) as u16).collect();
        }
        let o = run(&p, &w);
        let (cmds, table, error, writes, sh) = behave(&p, &w);
        assert_eq!(o.commands, cmds, "case {case}");
        assert_eq!(o.state_table, table, "case {case}");
        assert_eq!(o.error, error, "case {case}");
        assert_eq!(o.memory_writes, writes, "case {case}");
        assert_eq!(o.sh_table, sh, "case {case}");
        if p.compute {
            causes.extend(error.map(|e| e.0));
            for c in &o.commands {
                let op = Opcode::from_code((c.record.header >> 8) & 0xFF);
                snaps += usize::from(c.sh.is_some());
                releases += usize::from(op == Some(Opcode::ReleaseMem));
                sets += usize::from(op == Some(Opcode::SetShReg));
            }
        }
        assert_eq!(o.status == Status::Error, error.is_some(), "case {case}");
        assert_eq!(o.trace.len(), o.commands.len());
        assert!(o.cycles >= 2, "case {case}");
    }
    for c in [Cause::ShRange, Cause::Need, Cause::Graphics, Cause::Field, Cause::Count, Cause::Kernel] {
        assert!(causes.contains(&c), "compute mode never raised {c:?}: {causes:?}");
    }
    assert!(snaps > 50 && releases > 50 && sets > 100, "{snaps} dispatches, {releases} RELEASE_MEMs, {sets} SET_SH_REGs");
}

// ---- input and output files ----

fn good_input() -> Value {
    json!({"registers": {"cmd_base": 4096, "cmd_size": 8, "prim_base": 65536, "prim_size": 1024,
                         "state": [0, 1, 2], "state_ptr": 0, "irq_enable": 3},
           "memory": [{"addr": 4096, "dwords": [3221622784u32, 0]}],
           "mem_latency": 20})
}

#[test]
fn parse_good() {
    let p = CmdprocParams::default();
    let w = parse_input(&good_input(), &p).unwrap();
    assert_eq!(w.registers.cmd_base, 4096);
    assert_eq!(w.registers.state, vec![0, 1, 2]);
    assert_eq!(w.memory, vec![(4096, vec![3221622784, 0])]);
    assert_eq!(w.mem_latency, 20);
    // Defaults.
    let mut v = good_input();
    v["registers"].as_object_mut().unwrap().remove("state_ptr");
    v["registers"].as_object_mut().unwrap().remove("irq_enable");
    let w = parse_input(&v, &p).unwrap();
    assert_eq!((w.registers.state_ptr, w.registers.irq_enable), (0, 3));
    // The spec's example is an overrun (reading 17).
    let o = run(&p, &parse_input(&good_input(), &p).unwrap());
    assert_eq!(o.error, Some((Cause::Overrun, 4096)));
}

#[test]
fn parse_every_violation() {
    let p = CmdprocParams { state_regs: 2, ..CmdprocParams::default() };
    let v = json!({"registers": {"cmd_base": 4097, "cmd_size": 8, "prim_base": 4294967296u64, "prim_size": -1,
                                 "state": [0, 1, 2], "bogus": 1},
                   "memory": [{"addr": 4096, "dwords": [1, 2]},
                              {"addr": 4100, "dwords": [3]},
                              {"addr": 6, "dwords": [0, 0, 0, 0, 0, 4294967296u64], "x": 0},
                              {"dwords": []}],
                   "mem_latency": 1001, "extra": true});
    let e = parse_input(&v, &p).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|x| x.field.as_str()).collect();
    for f in [
        "extra",
        "registers.bogus",
        "registers.cmd_base",
        "registers.prim_base",
        "registers.prim_size",
        "registers.state",
        "memory[1]",
        "memory[2].x",
        "memory[2].addr",
        "memory[2].dwords[5]",
        "memory[3].addr",
        "mem_latency",
    ] {
        assert!(fields.contains(&f), "{f} not in {fields:?}");
    }
    assert_eq!(fields.len(), 12, "{e}");
    let text = e.to_string();
    assert!(text.contains("input `registers.cmd_base` = 4097: must be a multiple of 4"), "{text}");
    assert!(text.contains("input `memory[1]` = bytes 0x1004..0x1008: must be not overlapping memory[0]"), "{text}");
    assert!(text.contains("input `mem_latency` = 1001: must be an integer from 1 to 1000"), "{text}");
    assert!(text.contains("input `registers.state` = a list of 3 values: must be a list of at most 2"), "{text}");
    // Missing keys.
    let e = parse_input(&json!({"registers": {}}), &p).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|x| x.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "registers.cmd_base",
            "registers.cmd_size",
            "memory",
            "mem_latency"
        ]
    );
    assert!(parse_input(&json!([1]), &p).is_err());
    let mut v = good_input();
    v["mem_latency"] = json!(0);
    assert_eq!(parse_input(&v, &CmdprocParams::default()).unwrap_err().0[0].field, "mem_latency");
    // Runs overlap modulo 2^32.
    let mut v = good_input();
    v["memory"] = json!([{"addr": 4294967292u32, "dwords": [1, 2]}, {"addr": 0, "dwords": [3]}]);
    assert_eq!(parse_input(&v, &CmdprocParams::default()).unwrap_err().0[0].field, "memory[1]");
}

#[test]
fn output_format() {
    let p = CmdprocParams::default();
    let cmd = cat(&[
        pkt(Opcode::IndexType, &[0]),
        pkt(Opcode::DrawIndexOffset2, &[9, 0, 2, 0x11]),
        pkt(Opcode::WriteData, &[0, 0x2000, 0, 1, 2]),
        pkt(Opcode::SetContextReg, &[0, 4, 5, 6, 7, 8]),
    ]);
    let o = run(&p, &wl(cmd, vec![(PRIM, vec![0x0002_0001])], 1));
    let j = output_json(&p, &o);
    assert_eq!(
        j["commands"][0],
        json!({"id": 0, "addr": 4096, "opcode": 0x2A, "header": hdr(Opcode::IndexType, 1),
                                        "dwords": 1, "payload": [0], "prims": []})
    );
    assert_eq!(j["commands"][1]["prims"], json!([1, 2]));
    // "state" on the draw (a state reader) only: the table before the
    // SET_CONTEXT_REG after it.
    assert_eq!(j["commands"][1]["state"], json!(vec![0; 16]));
    for k in [0, 2, 3] {
        assert!(j["commands"][k].get("state").is_none(), "{k}");
    }
    assert_eq!(j["commands"][3]["payload"], json!([0, 4, 5, 6]));
    assert_eq!(j["commands"][3]["dwords"], json!(6));
    assert_eq!(j["memory_writes"], json!([{"addr": 8192, "dwords": [1, 2]}]));
    assert_eq!(j["state_table"].as_array().unwrap()[..5], [json!(4), json!(5), json!(6), json!(7), json!(8)]);
    assert_eq!(j["status"], json!("done"));
    assert_eq!(j["error"], Value::Null);
    assert_eq!(j["irq"], json!(true));
    assert_eq!(j["trace"][3], json!("#3 @0x00001034 SET_CONTEXT_REG offset=0 values=4,5,6,...+2"));
    assert_eq!(j["cycles"], json!(o.cycles));
}

// ---- compute mode (docs/cmdproc.md, "Compute mode"), hand-worked ----

/// The compute preset: F = 2 and the defaults, `compute = true`.
fn cparams() -> CmdprocParams {
    CmdprocParams { compute: true, ..CmdprocParams::default() }
}
/// `SET_SH_REG`: `p0` (a dword offset from 0xB000) and values.
fn ssr(p0: u32, v: &[u32]) -> Vec<u32> {
    let mut pl = vec![p0];
    pl.extend_from_slice(v);
    pkt(Opcode::SetShReg, &pl)
}
fn dispatch(x: u32, y: u32, z: u32) -> Vec<u32> {
    pkt(Opcode::DispatchDirect, &[x, y, z, 0])
}
/// `RELEASE_MEM` with `p1 = DATA_SEL << 29 | INT_SEL << 24`.
fn release(ds: u32, is: u32, addr: u32, hi: u32) -> Vec<u32> {
    pkt(Opcode::ReleaseMem, &[0x514, (ds << 29) | (is << 24), addr, hi, 1, 2])
}
/// The compute registers with `sets` (index, value) applied.
fn sh_with(sets: &[(usize, u32)]) -> Vec<u32> {
    let mut t = vec![0; 23];
    for &(i, v) in sets {
        t[i] = v;
    }
    t
}

#[test]
fn compute_off_new_opcodes_are_opcode_errors() {
    // compute = false: a good SET_SH_REG / RELEASE_MEM header is `opcode`
    // (c3, end c4: 2 beats, answered c2, c3); a dispatch with T = 0 is a
    // command; a draw is not `graphics`; no "sh", no "sh_table".
    let d = CmdprocParams::default();
    for cmd in [ssr(0x207, &[1]), release(1, 0, 0x3000, 0)] {
        let o = run(&d, &wl(cat(std::slice::from_ref(&cmd)), vec![], 1));
        assert_eq!(o.error, Some((Cause::Opcode, 0x1000)));
        assert!(o.commands.is_empty());
    }
    let o = run(&d, &wl(cat(&[dispatch(0x10_0000, 1, 1), auto(2)]), vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.commands.len(), 2);
    assert_eq!(o.commands[0].sh, None);
    assert_eq!(o.sh_table, None);
    let j = output_json(&d, &o);
    assert!(j.get("sh_table").is_none());
    assert!(j["commands"][0].get("sh").is_none());
    assert!(j["commands"][0].get("state").is_some());
}

#[test]
fn compute_sh_range() {
    // F = 2, L = 1, one SET_SH_REG at 0x1000: p0 is taken in c3 (beat
    // [h p0]): sh_range raised in c3, nothing written. A 3- or 4-dword
    // packet is 2 beats (answered c2, c3): end c4; a 5- or 6-dword one is
    // 3 beats (the third requested c3, answered c4): end c5.
    let p = cparams();
    let cases: Vec<(&str, Vec<u32>, u64)> = vec![
        // 0x209..0x20C: the end of X..Z, the gap 0x20A, 0x20B, PGM_LO.
        ("across two runs", ssr(0x209, &[1, 2, 3, 4]), 5),
        // COMPUTE_DISPATCH_INITIATOR (0xB800) and COMPUTE_START_X (0xB810).
        ("0xB800", ssr(0x200, &[1]), 4),
        ("0xB810", ssr(0x204, &[1]), 4),
        // USER_DATA_15 and one past the run.
        ("past a run's end", ssr(0x24F, &[1, 2]), 4),
        ("before a run", ssr(0x206, &[1, 2]), 4),
        ("PGM_HI then the gap", ssr(0x20D, &[1, 2]), 4),
        ("RSRC2 then the gap", ssr(0x213, &[1, 2]), 4),
        // 0x607 is NUM_THREAD_X's offset + 0x400: no wrap to the SH space.
        ("p0 >= 0x400", ssr(0x607, &[1]), 4),
        // Exact arithmetic: 0xFFFFFFFF + 1 is not 0.
        ("p0 + k past 2^32", ssr(0xFFFF_FFFF, &[1, 2]), 4),
        ("0x400 + USER_DATA_0", ssr(0x640, &[1]), 4),
    ];
    for (name, cmd, cycles) in cases {
        let o = run(&p, &wl(cmd, vec![], 1));
        assert_eq!(o.error, Some((Cause::ShRange, 0x1000)), "{name}");
        assert!(o.commands.is_empty(), "{name}");
        assert_eq!(o.sh_table, Some(vec![0; 23]), "{name}");
        assert_eq!(o.cycles, cycles, "{name}");
        assert_eq!(output_json(&p, &o)["error"], json!({"cause": "sh_range", "addr": 4096}), "{name}");
    }
    // The whole runs, exactly, are good (each register written once).
    let cmd = cat(&[
        ssr(0x207, &[1, 2, 3]),
        ssr(0x20C, &[4, 5]),
        ssr(0x212, &[6, 7]),
        ssr(0x240, &(8..24).collect::<Vec<u32>>()),
    ]);
    let o = run(&p, &wl(cmd, vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.sh_table, Some((1..24).collect::<Vec<u32>>()));
    assert_eq!(o.commands.len(), 4);
    // One past the USER_DATA run (17 values) and one before it.
    let o = run(&p, &wl(ssr(0x240, &[9; 17]), vec![], 1));
    assert_eq!(o.error, Some((Cause::ShRange, 0x1000)));
    let o = run(&p, &wl(ssr(0x23F, &[9; 16]), vec![], 1));
    assert_eq!(o.error, Some((Cause::ShRange, 0x1000)));
    // A single register inside a run, and the last one of a run.
    let o = run(&p, &wl(cat(&[ssr(0x208, &[5]), ssr(0x24F, &[6]), ssr(0x213, &[7])]), vec![], 1));
    assert_eq!(o.sh_table, Some(sh_with(&[(1, 5), (22, 6), (6, 7)])));
    // As a second packet: NOP (3 dwords), SET_SH_REG 0x200 (3 dwords):
    // c3 [h p] r = 1; c4 [p h1]: the NOP commits, h1 is the second
    // packet (not held: no reader) and takes its header (A - e = 1); c5
    // [p0 v]: p0 taken, sh_range at 0x100C; the NOP leaves in c5; c6 the
    // end (3 beats, the last answered c4).
    let o = run(&p, &wl(cat(&[nop(3), ssr(0x200, &[1])]), vec![], 1));
    assert_eq!(o.error, Some((Cause::ShRange, 0x100C)));
    assert_eq!(o.commands.len(), 1);
    assert_eq!(o.cycles, 6);
}

#[test]
fn compute_snapshot_under_stalls() {
    // F = 2, L = 1. SET_SH_REG X..Z = 4,1,1 (d0..d4), DISPATCH_DIRECT
    // 2,1,1 (d5..d9), SET_SH_REG X = 8 (d10..d12), DISPATCH_DIRECT 1,1,1
    // (d13..d17): 9 beats, visible c3..c11.
    // Without stalls:
    // c3 [d0 d1] h, p0 (0x207..0x209 good); c4 [d2 d3] X = 4, Y = 1;
    // c5 [d4 d5] Z = 1, the SET_SH_REG commits (#0), the dispatch header
    //   is the second packet (t2 = 1);
    // c6 [d6 d7] x, y; #0 leaves;
    // c7 [d8 d9] z, init: ends, checks from the registers at the start of
    //   c7 (T = 4, R = 16: good), commits #1 (snapshot 4,1,1);
    // c8: the dispatch barrier (#1 in the queue at the start of the
    //   cycle): the decoder does nothing (before the barrier the cycle was
    //   held and the SET_SH_REG header in lane 0 was checked and took
    //   nothing: the same cycle count); #1 leaves;
    // c9 [d10 d11] h, p0; c10 [d12 d13] X = 8, commits #2, dispatch
    //   header (t2 = 1); c11 x, y; #2 leaves; c12 z, init: commits #3
    //   (snapshot 8,1,1);
    // c13: the barrier (#3 in the queue): nothing, the buffer end waits;
    //   #3 leaves; c14 the buffer end: finished; c15 the end.
    // (Before the dispatch barrier (spec 54ba527) the buffer end was
    // handled in c13 while #3 left, and the end was c14: the barrier adds
    // the one cycle of the last dispatch.)
    let cmd = cat(&[ssr(0x207, &[4, 1, 1]), dispatch(2, 1, 1), ssr(0x207, &[8]), dispatch(1, 1, 1)]);
    let p = cparams();
    let mut w = wl(cmd, vec![], 1);
    let o0 = run(&p, &w);
    assert_eq!(o0.error, None);
    assert_eq!(o0.cycles, 15);
    assert_eq!(o0.commands[1].sh, Some(sh_with(&[(0, 4), (1, 1), (2, 1)])));
    assert_eq!(o0.commands[3].sh, Some(sh_with(&[(0, 8), (1, 1), (2, 1)])));
    assert_eq!(o0.commands[0].sh, None);
    assert_eq!(o0.commands[2].sh, None);
    assert_eq!(o0.commands[1].state, Some(vec![0; 16]));
    assert_eq!(o0.sh_table, Some(sh_with(&[(0, 8), (1, 1), (2, 1)])));
    // With "pipeline": {"stall": 0.5, "seed": 1272}: cmd_ready in busy
    // cycles 1..16 is 0 0 0 0 0 0 0 1 1 1 1 1 1 1 0 0.
    // c3, c4 as above; c5 #0 commits, dispatch header; c6 x, y (#0 stays:
    // not ready); c7 z, init: commits #1 (snapshot 4,1,1; #0 still in the
    // queue);
    // c8: the barrier (#1 in the queue): nothing (the SET_SH_REG is not
    //   even checked); #0 leaves (ready);
    // c9: the barrier: nothing; #1 is presented (sh_o = 4,1,1 although X =
    //   8 is pending) and leaves;
    // c10 h, p0; c11 X = 8, commits #2, dispatch header; c12 x, y, #2
    //   leaves; c13 z, init: commits #3 (snapshot 8,1,1); c14 the
    //   barrier: nothing; #3 leaves (ready); c15 finished; c16 the end.
    // (Before the barrier: c14 finished while #3 left, c15 the end; one
    // cycle more now, as without stalls.)
    w.pipeline = Pipeline { stall: 0.5, seed: 1272, kerr: vec![] };
    assert_eq!(spec_ready(0.5, 1272, 16), "0000000111111100".chars().map(|c| c == '1').collect::<Vec<_>>());
    let o = run(&p, &w);
    assert_eq!(o.cycles, 16);
    assert_eq!(o.commands, o0.commands);
    assert_eq!(o.sh_table, o0.sh_table);
    let j = output_json(&p, &o);
    assert_eq!(j["commands"][1]["sh"], json!(sh_with(&[(0, 4), (1, 1), (2, 1)])));
    assert!(j["commands"][0].get("sh").is_none());
    assert_eq!(j["sh_table"], json!(sh_with(&[(0, 8), (1, 1), (2, 1)])));
}

/// SET_SH_REG X..Z, PGM_LO, PGM_HI, RSRC1, RSRC2, then DISPATCH_DIRECT
/// x, y, z (at 0x1000 + 4 * 13 = 0x1034: 5 + 4 + 4 dwords before).
fn kernel(threads: [u32; 3], pgm: [u32; 2], rsrc: [u32; 2], grid: [u32; 3]) -> Vec<u32> {
    cat(&[ssr(0x207, &threads), ssr(0x20C, &pgm), ssr(0x212, &rsrc), dispatch(grid[0], grid[1], grid[2])])
}
const KERNEL_DISPATCH: u32 = 0x1034;

#[test]
fn compute_dispatch_checks() {
    let c = cparams();
    let small = |bb: u32| CmdprocParams { block_bits: bb, ..cparams() };
    let lim = |t: u32, r: u32, m: u32| CmdprocParams { max_threads: t, max_regs: r, max_smem: m, ..cparams() };
    type Case = (&'static str, CmdprocParams, Vec<u32>, Option<Cause>);
    let lds = |n: u32| n << 15;
    let cases: Vec<Case> = vec![
        ("good", c.clone(), kernel([4, 1, 1], [0x100, 0], [0, lds(2)], [8, 2, 1]), None),
        // field: T = 0.
        ("T = 0", c.clone(), kernel([0, 1, 1], [0, 0], [0, 0], [1, 1, 1]), Some(Cause::Field)),
        // NUM_THREAD_FULL is bits 15:0: 0x10000 is 0 threads (PARTIAL 1).
        ("T = 0 (PARTIAL only)", c.clone(), kernel([0x1_0000, 1, 1], [0, 0], [0, 0], [1, 1, 1]), Some(Cause::Field)),
        ("PARTIAL carried", c.clone(), kernel([0xFFFF_0001, 0xFFFF_0001, 0xFFFF_0001], [0, 0], [0, 0], [1, 1, 1]), None),
        // x, y, z above 2^16 (2^16 itself is good with 20 block bits).
        ("x = 2^16 + 1", small(20), kernel([1, 1, 1], [0, 0], [0, 0], [65537, 1, 1]), Some(Cause::Field)),
        ("y = 2^16 + 1", small(20), kernel([1, 1, 1], [0, 0], [0, 0], [1, 65537, 1]), Some(Cause::Field)),
        ("z = 2^32 - 1", small(20), kernel([1, 1, 1], [0, 0], [0, 0], [1, 1, u32::MAX]), Some(Cause::Field)),
        ("x = 2^16", small(20), kernel([1, 1, 1], [0, 0], [0, 0], [65536, 1, 1]), None),
        // x*y*z above 2^block_bits - 1: 15 is good, 16 is not (4 bits).
        ("blocks 15", small(4), kernel([1, 1, 1], [0, 0], [0, 0], [3, 5, 1]), None),
        ("blocks 16", small(4), kernel([1, 1, 1], [0, 0], [0, 0], [4, 2, 2]), Some(Cause::Field)),
        ("x = 2^16, 16 bits", c.clone(), kernel([1, 1, 1], [0, 0], [0, 0], [65536, 1, 1]), Some(Cause::Field)),
        // 2^16 * 2^16 * 2^16 = 2^48 (exact) > 2^20 - 1.
        ("2^48 blocks", small(20), kernel([1, 1, 1], [0, 0], [0, 0], [65536, 65536, 65536]), Some(Cause::Field)),
        // x*y*z = 0 passes.
        ("no blocks", small(1), kernel([1, 1, 1], [0, 0], [0, 0], [0, 65536, 65536]), None),
        // The program above 2^32.
        ("PGM_HI[7:0] = 1", c.clone(), kernel([1, 1, 1], [0, 1], [0, 0], [1, 1, 1]), Some(Cause::Field)),
        ("PGM_HI[31:8] carried", c.clone(), kernel([1, 1, 1], [0, 0xFFFF_FF00], [0, 0], [1, 1, 1]), None),
        ("PGM_LO[31:24] = 1", c.clone(), kernel([1, 1, 1], [0x0100_0000, 0], [0, 0], [1, 1, 1]), Some(Cause::Field)),
        ("PGM_LO = 2^24 - 1", c.clone(), kernel([1, 1, 1], [0x00FF_FFFF, 0], [0, 0], [1, 1, 1]), None),
        // need: T = 16 against 16 is good, 15 exceeds by one.
        ("T = max", lim(16, 1 << 18, 1 << 18), kernel([4, 2, 2], [0, 0], [0, 0], [1, 1, 1]), None),
        ("T = max + 1", lim(15, 1 << 18, 1 << 18), kernel([4, 2, 2], [0, 0], [0, 0], [1, 1, 1]), Some(Cause::Need)),
        // R = T * 4 * (VGPRS + 1) = 4 * 4 * 8 = 128 (VGPRS = 7; RSRC1's
        // bits above 5:0 carried).
        ("R = max", lim(16, 128, 1 << 18), kernel([4, 1, 1], [0, 0], [0xFFFF_FFC7, 0], [1, 1, 1]), None),
        ("R = max + 1", lim(16, 127, 1 << 18), kernel([4, 1, 1], [0, 0], [0xFFFF_FFC7, 0], [1, 1, 1]), Some(Cause::Need)),
        // M = 512 * LDS_SIZE = 512 * 4 = 2048 (RSRC2's other bits carried).
        ("M = max", lim(16, 1 << 18, 2048), kernel([1, 1, 1], [0, 0], [0, 0xFF00_7FFF | lds(4)], [1, 1, 1]), None),
        ("M = max + 1", lim(16, 1 << 18, 2047), kernel([1, 1, 1], [0, 0], [0, 0xFF00_7FFF | lds(4)], [1, 1, 1]), Some(Cause::Need)),
        // LDS_SIZE 511 (M = 261632) against the default 65536.
        ("M, 9 bits", c.clone(), kernel([1, 1, 1], [0, 0], [0, lds(511)], [1, 1, 1]), Some(Cause::Need)),
        // field before need: T too large and x too large.
        ("field first", lim(1, 1, 1), kernel([4, 1, 1], [0, 0], [0, 0], [65537, 1, 1]), Some(Cause::Field)),
    ];
    for (name, p, cmd, cause) in cases {
        let o = run(&p, &wl(cmd, vec![], 1));
        match cause {
            None => {
                assert_eq!(o.error, None, "{name}");
                assert_eq!(o.commands.len(), 4, "{name}");
                assert_eq!(o.commands[3].record.addr, KERNEL_DISPATCH, "{name}");
                assert_eq!(o.commands[3].sh, o.sh_table, "{name}");
            }
            Some(c) => {
                assert_eq!(o.error, Some((c, KERNEL_DISPATCH)), "{name}");
                assert_eq!(o.commands.len(), 3, "{name}");
            }
        }
    }
    // Timing of a dispatch error (the snapshot's T = 0 from the doorbell's
    // reset): DISPATCH_DIRECT 1,1,1 alone, 5 dwords = 3 beats visible
    // c3..c5: c3 h, x; c4 y, z; c5 [init] ends: field in c5; c6 the end.
    let o = run(&c, &wl(dispatch(1, 1, 1), vec![], 1));
    assert_eq!((o.error, o.cycles), (Some((Cause::Field, 0x1000)), 6));
    assert_eq!(output_json(&c, &o)["error"], json!({"cause": "field", "addr": 4096}));
    let o = run(&lim(15, 1 << 18, 1 << 18), &wl(kernel([4, 2, 2], [0, 0], [0, 0], [1, 1, 1]), vec![], 1));
    assert_eq!(output_json(&c, &o)["error"], json!({"cause": "need", "addr": KERNEL_DISPATCH}));
}

#[test]
fn compute_release_mem_checks() {
    // RELEASE_MEM alone: 7 dwords, 4 beats visible c3..c6: c3 h, p0; c4
    // p1, p2; c5 p3, p4; c6 [p5] (A = 1) ends: checked; an error is
    // raised in c6 and the run ends in c7; a good one commits in c6,
    // leaves in c7 (c7 finished), c8 the end.
    let p = cparams();
    type Case = (&'static str, Vec<u32>, Option<Cause>, u64);
    let cases: Vec<Case> = vec![
        ("32-bit at 0x3004", release(1, 2, 0x3004, 0), None, 8),
        ("64-bit at 0x3008", release(2, 1, 0x3008, 0), None, 8),
        ("64-bit at 0x3004", release(2, 1, 0x3004, 0), Some(Cause::Field), 7),
        ("no write", release(0, 0, 0x3004, 0), None, 8),
        ("addr lo not a multiple of 4", release(0, 0, 0x3002, 0), Some(Cause::Field), 7),
        ("addr hi", release(1, 0, 0x3000, 1), Some(Cause::Field), 7),
        ("DATA_SEL 3", release(3, 0, 0x3000, 0), Some(Cause::Field), 7),
        ("DATA_SEL 7", release(7, 0, 0x3000, 0), Some(Cause::Field), 7),
        ("INT_SEL 3", release(1, 3, 0x3000, 0), None, 8),
        ("INT_SEL 4", release(1, 4, 0x3000, 0), Some(Cause::Field), 7),
        // Other p1 bits are carried.
        ("carried p1 bits", pkt(Opcode::ReleaseMem, &[0, 0x18FF_FFFF | (1 << 29), 0x3000, 0, 1, 2]), None, 8),
        // 7 payload dwords (GFX9's): count, at the header in c3; 8 dwords
        // = 4 beats, the third requested in c3 and answered c4: end c5.
        ("7 dwords", pkt(Opcode::ReleaseMem, &[0x514, 1 << 29, 0x3000, 0, 1, 2, 0]), Some(Cause::Count), 5),
        // 6 dwords = 3 beats (the third answered c4): end c5.
        ("5 dwords", pkt(Opcode::ReleaseMem, &[0x514, 1 << 29, 0x3000, 0, 1]), Some(Cause::Count), 5),
    ];
    for (name, cmd, cause, cycles) in cases {
        let o = run(&p, &wl(cmd, vec![], 1));
        assert_eq!(o.error, cause.map(|c| (c, 0x1000)), "{name}");
        assert_eq!(o.commands.len(), usize::from(cause.is_none()), "{name}");
        assert_eq!(o.cycles, cycles, "{name}");
        assert!(o.memory_writes.is_empty(), "{name}");
    }
    // A good one is a command with its six payload dwords (record,
    // "payload", trace).
    let o = run(&p, &wl(release(2, 2, 0x3008, 0), vec![], 1));
    let r = o.commands[0].record;
    assert_eq!(r.p, [0x514, 0x4200_0000, 0x3008, 0, 1, 2]);
    assert_eq!(o.commands[0].state, None);
    assert_eq!(o.commands[0].sh, None);
    assert_eq!(output_json(&p, &o)["commands"][0]["payload"], json!([0x514, 0x4200_0000u32, 0x3008, 0, 1, 2]));
    assert_eq!(o.trace, vec!["#0 @0x00001000 RELEASE_MEM event=0x00000514 data_sel=2 int_sel=2 addr=0x00003008 data=1,2"]);
}

#[test]
fn compute_draws_are_graphics() {
    // DRAW_INDEX_AUTO (3 dwords, 2 beats): c3 h, p0; c4 [p1] ends:
    // graphics in c4; c5 the end.
    let p = cparams();
    let o = run(&p, &wl(auto(3), vec![], 1));
    assert_eq!((o.error, o.cycles), (Some((Cause::Graphics, 0x1000)), 5));
    assert!(o.commands.is_empty());
    assert_eq!(output_json(&p, &o)["error"], json!({"cause": "graphics", "addr": 4096}));
    // A DRAW_INDEX_OFFSET_2 whose indices are outside the buffer is
    // graphics, not prim_range (5 dwords: c3, c4, c5 [p3] ends; c6 end);
    // after a command, the command still leaves.
    let o = run(&p, &wl(pkt(Opcode::DrawIndexOffset2, &[0, 250, 7, 0]), vec![], 1));
    assert_eq!((o.error, o.cycles), (Some((Cause::Graphics, 0x1000)), 6));
    let o = run(&p, &wl(cat(&[nop(1), pkt(Opcode::DrawIndexOffset2, &[0, 0, 2, 0])]), vec![], 1));
    assert_eq!(o.error, Some((Cause::Graphics, 0x1004)));
    assert_eq!(o.commands.len(), 1);
    assert!(o.commands[0].prims.is_empty());
    // A bad draw header is still the header's error.
    let o = run(&p, &wl(vec![hdr(Opcode::DrawIndexAuto, 3), 0, 0, 0], vec![], 1));
    assert_eq!(o.error, Some((Cause::Count, 0x1000)));
}

/// The spec's example (docs/cmdproc.md, "Compute mode", "Assembler text").
const SPEC_KERNEL: &str = "\
SET_SH_REG reg=COMPUTE_PGM_LO values=0x100,0
SET_SH_REG reg=COMPUTE_PGM_RSRC1 values=0,0x10000
SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=4,1,1
SET_SH_REG reg=COMPUTE_USER_DATA_0 values=0x20000,100
DISPATCH_DIRECT x=8 y=2 z=1 initiator=1 shader=1
RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=1,0
";

#[test]
fn compute_spec_kernel_cycles() {
    // 29 dwords: A = d0..d3 (PGM_LO, PGM_HI), B = d4..d7 (RSRC1, RSRC2),
    // C = d8..d12 (X..Z), D = d13..d16 (USER_DATA_0, _1), E = d17..d21
    // (dispatch), F = d22..d28 (RELEASE_MEM); F = 2, L = 1: 15 beats
    // requested c1..c15, visible c3..c17.
    // c3 A h, p0; c4 A values, commits #0;
    // c5 B h, p0 (#0, not a reader, leaves); c6 B values, commits #1;
    // c7 C h, p0; c8 4, 1; c9 [d12 d13] 1: commits #2, D's header is the
    //   second packet (t2 = 1);
    // c10 D p0, 0x20000; c11 [d16 d17] 100: commits #3, E's header (t2 =
    //   1);
    // c12 x, y; c13 [d20 d21] z, init: ends in lane 1; snapshot X..Z =
    //   4,1,1, PGM_LO 0x100, RSRC2 LDS_SIZE 2: T = 4, R = 16, M = 1024,
    //   16 blocks: good, commits #4;
    // c14: the dispatch barrier (#4 in the queue at the start of the
    //   cycle): the decoder does nothing; #4 leaves;
    // c15 [d22 d23] F h, p0; c16 p1, p2; c17 p3, p4; c18 [d28] (A = 1)
    //   p5: ends, good, commits #5; c19 finished, #5 leaves; c20 the end.
    // (Before the dispatch barrier (spec 54ba527) F's header was taken in
    // c14 while #4 left, and the end was c19: the RELEASE_MEM now starts
    // only after the dispatch has left, one cycle later.)
    let d = pm4::assemble(SPEC_KERNEL).unwrap();
    assert_eq!(
        d,
        vec![
            0xC002_7600, 0x20C, 0x100, 0,
            0xC002_7600, 0x212, 0, 0x10000,
            0xC003_7600, 0x207, 4, 1, 1,
            0xC002_7600, 0x240, 0x20000, 100,
            0xC003_1502, 8, 2, 1, 1,
            0xC005_4900, 0x514, 0x2200_0000, 0x3000, 0, 1, 0,
        ]
    );
    let p = cparams();
    let o = run(&p, &wl(d, vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.cycles, 20);
    let snap = sh_with(&[(0, 4), (1, 1), (2, 1), (3, 0x100), (6, 0x10000), (7, 0x20000), (8, 100)]);
    assert_eq!(o.commands[4].sh, Some(snap.clone()));
    assert_eq!(o.sh_table, Some(snap.clone()));
    assert_eq!(
        o.trace,
        vec![
            "#0 @0x00001000 SET_SH_REG reg=COMPUTE_PGM_LO values=256,0",
            "#1 @0x00001010 SET_SH_REG reg=COMPUTE_PGM_RSRC1 values=0,65536",
            "#2 @0x00001020 SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=4,1,1",
            "#3 @0x00001034 SET_SH_REG reg=COMPUTE_USER_DATA_0 values=131072,100",
            "#4 @0x00001044 DISPATCH_DIRECT x=8 y=2 z=1 initiator=0x00000001 shader=1",
            "#5 @0x00001058 RELEASE_MEM event=0x00000514 data_sel=1 int_sel=2 addr=0x00003000 data=1,0",
        ]
    );
    let j = output_json(&p, &o);
    assert_eq!(j["commands"][4]["sh"], json!(snap));
    assert_eq!(j["commands"][4]["state"], json!(vec![0; 16]));
    assert_eq!(j["commands"][5]["payload"], json!([0x514, 0x2200_0000u32, 0x3000, 0, 1, 0]));
    assert_eq!(j["commands"][2]["payload"], json!([0x207, 4, 1, 1]));
    assert_eq!(j["sh_table"], json!(snap));
    // The same program in standalone mode stops at the first SET_SH_REG.
    let o = run(&CmdprocParams::default(), &wl(pm4::assemble(SPEC_KERNEL).unwrap(), vec![], 1));
    assert_eq!(o.error, Some((Cause::Opcode, 0x1000)));
}

#[test]
fn compute_records_hold_six_dwords() {
    // With compute = true a record holds p0..p5: "payload" is min(n, 6)
    // dwords and lists print up to six payload dwords before ...+K; with
    // compute = false, p4 and p5 are 0 and "payload" is min(n, 4).
    let cmd = cat(&[
        nop(9),
        scr(0, &[1, 2, 3, 4, 5, 6, 7]),
        pkt(Opcode::WriteData, &[0, 0x3000, 0, 1, 2, 3, 4, 5]),
        ssr(0x240, &(1..=16).collect::<Vec<u32>>()),
        ssr(0x207, &[1, 2]),
    ]);
    let o = run(&cparams(), &wl(cmd.clone(), vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(
        o.trace,
        vec![
            "#0 @0x00001000 NOP dwords=8",
            "#1 @0x00001024 SET_CONTEXT_REG offset=0 values=1,2,3,4,5,...+2",
            "#2 @0x00001048 WRITE_DATA control=0x00000000 addr=0x00003000 data=1,2,3,...+2",
            "#3 @0x0000106c SET_SH_REG reg=COMPUTE_USER_DATA_0 values=1,2,3,4,5,...+11",
            "#4 @0x000010b4 SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=1,2",
        ]
    );
    assert_eq!(o.commands[0].record.p, [1, 2, 3, 4, 5, 6]);
    assert_eq!(o.commands[2].record.p, [0, 0x3000, 0, 1, 2, 3]);
    let j = output_json(&cparams(), &o);
    assert_eq!(j["commands"][0]["payload"], json!([1, 2, 3, 4, 5, 6]));
    assert_eq!(j["commands"][4]["payload"], json!([0x207, 1, 2]));
    assert_eq!(o.memory_writes, vec![(0x3000, vec![1, 2, 3, 4, 5])]);
    // Standalone: the same without the SET_SH_REGs.
    let o = run(&CmdprocParams::default(), &wl(cmd[..27].to_vec(), vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.commands[0].record.p, [1, 2, 3, 4, 0, 0]);
    assert_eq!(o.commands[2].record.p, [0, 0x3000, 0, 1, 0, 0]);
    assert_eq!(o.trace[1], "#1 @0x00001024 SET_CONTEXT_REG offset=0 values=1,2,3,...+4");
    assert_eq!(o.trace[2], "#2 @0x00001048 WRITE_DATA control=0x00000000 addr=0x00003000 data=1,...+4");
    assert_eq!(output_json(&CmdprocParams::default(), &o)["commands"][0]["payload"], json!([1, 2, 3, 4]));
}

// ---- the dispatch barrier and kerr_i (docs/cmdproc.md, "Compute mode",
// "`DISPATCH_DIRECT` (0x15)", spec 54ba527), hand-worked ----

/// SET_SH_REG X..Z = 1,1,1 (d0..d4 at 0x1000..0x1010: T = 1), then
/// DISPATCH_DIRECT 1,1,1 (d5..d9 at 0x1014), then two 1-dword NOPs (d10 at
/// 0x1028, d11 at 0x102C): 12 dwords, 6 beats at F = 2, requested c1..c6
/// and answered c2..c7 at L = 1 (visible c3..c8).
fn dispatch_then_nops() -> Vec<u32> {
    cat(&[ssr(0x207, &[1, 1, 1]), dispatch(1, 1, 1), nop(1), nop(1)])
}
/// `"pipeline"` with `stall` 0.5, `seed` and `kerr` ids.
fn pipe(seed: u64, kerr: &[u16]) -> Pipeline {
    Pipeline { stall: 0.5, seed, kerr: kerr.to_vec() }
}

#[test]
fn dispatch_barrier_holds_the_decoder() {
    // (a) dispatch_then_nops(), F = 2, L = 1, compute mode, no stalls:
    // c3 [d0 d1] SET_SH_REG h, p0 (range good); c4 [d2 d3] X, Y;
    // c5 [d4 d5] Z: #0 commits, the dispatch header is the second packet
    //   (t2 = 1);
    // c6 [d6 d7] x, y (#0, not a dispatch, in the queue: no barrier); #0
    //   leaves;
    // c7 [d8 d9] z, init: the dispatch ends (T = 1, 1 block: good),
    //   commits #1;
    // c8: #1 is in the queue at the start of the cycle: the decoder does
    //   nothing (the NOP in lane 0 is not taken); #1 leaves;
    // c9 [d10 d11]: NOP #2 commits (the cycle after the dispatch left;
    //   it starts in lane 0: no second packet); c10 [d11] NOP #3 commits,
    //   #2 leaves; c11 buffer end: finished, #3 leaves; c12 the end.
    // (Without the barrier the NOPs would commit in c8 and c9 and the
    // end would be c11.)
    let p = cparams();
    let w = wl(dispatch_then_nops(), vec![], 1);
    let o = run(&p, &w);
    assert_eq!(o.error, None);
    assert_eq!(o.cycles, 12);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1014), (2, 0x1028), (3, 0x102C)]);
    assert_eq!(o.commands[1].sh, Some(sh_with(&[(0, 1), (1, 1), (2, 1)])));
    // The dispatch waits in the queue: "pipeline": {"stall": 0.5, "seed":
    // 1272}, cmd_ready in busy cycles 1..13 is 0 0 0 0 0 0 0 1 1 1 1 1 1.
    // c3..c7 as above, but #0 stays (not ready in c6, c7): the queue is
    //   [#0, #1] after c7;
    // c8: the barrier (#1 in the queue): nothing; #0 leaves (ready);
    // c9: the barrier: nothing; #1 leaves (ready);
    // c10 [d10 d11]: NOP #2 commits, the cycle after the dispatch left;
    // c11 [d11] NOP #3 commits, #2 leaves; c12 finished, #3 leaves; c13
    //   the end.
    // (Without the barrier: NOPs in c8, c9, finished c10, #3 leaves c11,
    // end c12.)
    let mut ws = w.clone();
    ws.pipeline = pipe(1272, &[]);
    assert_eq!(spec_ready(0.5, 1272, 13), "0000000111111".chars().map(|c| c == '1').collect::<Vec<_>>());
    let os = run(&p, &ws);
    assert_eq!(os.cycles, 13);
    assert_eq!(os.commands, o.commands);
    // compute = false: no barrier (and no SET_SH_REG: it is `opcode`);
    // a DISPATCH_DIRECT at 0x1000 followed by two NOPs, no stalls:
    // c3 [h x]; c4 [y z]; c5 [init NOP]: #0 commits, the NOP header is the
    // second packet (one dword: takes nothing); c6 [NOP NOP]: NOP #1
    // commits (no barrier: #0 leaves in the same cycle); c7 [NOP] #2
    // commits; c8 finished; c9 the end.
    let d = CmdprocParams::default();
    let o = run(&d, &wl(cat(&[dispatch(1, 1, 1), nop(1), nop(1)]), vec![], 1));
    assert_eq!((o.error, o.cycles, o.commands.len()), (None, 9, 3));
    // In compute mode the same stream (T = 0 makes the dispatch `field`)
    // with the thread counts set in the main buffer is dispatch_then_nops.
}

#[test]
fn dispatch_barrier_no_second_packet() {
    // (b) SET_SH_REG X..Z = 1,1,1 (d0..d4), NOP (d5 at 0x1014),
    // DISPATCH_DIRECT 1,1,1 (d6..d10 at 0x1018), then d11 at 0x102C: 12
    // dwords, 6 beats visible c3..c8 (F = 2, L = 1):
    // c3 [d0 d1] h, p0; c4 [d2 d3] X, Y; c5 [d4 d5] Z: #0 commits; the NOP
    //   header is the second packet: one dword, takes nothing;
    // c6 [d5 d6]: NOP #1 commits (it starts in lane 0: no second packet);
    //   #0 leaves;
    // c7 [d6 d7] the dispatch's h, x; #1 leaves; c8 [d8 d9] y, z;
    // c9 [d10 d11]: init in lane 0, the dispatch ends (good) and commits
    //   #2 as the first packet with e = 1 < A = 2: lane 1 holds the next
    //   header, but a committing dispatch has no second packet: d11 is not
    //   looked at;
    // c10: the barrier (#2 in the queue): nothing; #2 leaves.
    let p = cparams();
    let head = cat(&[ssr(0x207, &[1, 1, 1]), nop(1), dispatch(1, 1, 1)]);
    // d11 a type-0 dword: checked first in c11 [d11] (A = 1), `type` at
    // 0x102C; c12 the end. (Were it checked as a second packet in c9, the
    // error would be raised there and the end would be c11.)
    let bad = cat(&[head.clone(), vec![0]]);
    let o = run(&p, &wl(bad.clone(), vec![], 1));
    assert_eq!(o.error, Some((Cause::Type, 0x102C)));
    assert_eq!(o.cycles, 12);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1014), (2, 0x1018)]);
    // With kerr on the dispatch (#2): it leaves in c10 with kerr_i = 1:
    // `kernel` at 0x1018 at that edge; the bad dword was never looked at
    // (no `type`); c11 the end (every request answered by c7).
    let mut w = wl(bad, vec![], 1);
    w.pipeline = Pipeline { stall: 0.0, seed: 0, kerr: vec![2] };
    let o = run(&p, &w);
    assert_eq!(o.error, Some((Cause::Kernel, 0x1018)));
    assert_eq!(o.cycles, 11);
    assert_eq!(o.commands.len(), 3);
    // d11..d13 a 3-dword NOP (14 dwords, 7 beats visible c3..c9): c11
    // [d11 d12] NOP h, p0 (fresh in lane 0); c12 [d13] (A = 1) it ends,
    // #3 commits; c13 finished, #3 leaves; c14 the end. (Taken as a second
    // packet in c9 its header would have made it end in c11 and the run
    // in c13.)
    let o = run(&p, &wl(cat(&[head, nop(3)]), vec![], 1));
    assert_eq!(o.error, None);
    assert_eq!(o.cycles, 14);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1014), (2, 0x1018), (3, 0x102C)]);
}

#[test]
fn kerr_stops_the_queue_at_the_dispatch() {
    // (c) dispatch_then_nops() with "kerr": [1] (the dispatch's id), no
    // stalls: c3..c7 as in (a), #1 commits in c7; c8 the barrier, #1
    // leaves with kerr_i = 1: `kernel` at 0x1014 at the edge of c8, the
    // decoder stops, fetching = 0; c9: stopped, the queue empty, no job,
    // every request answered (c2..c7): the end, cycles = 9. The commands
    // are #0 and the dispatch #1 (a command all the same: traced,
    // counted); the NOPs after it were never read.
    let p = cparams();
    let mut w = wl(dispatch_then_nops(), vec![], 1);
    w.pipeline = Pipeline { stall: 0.0, seed: 0, kerr: vec![1] };
    let o = run(&p, &w);
    assert_eq!(o.status, Status::Error);
    assert_eq!(o.error, Some((Cause::Kernel, 0x1014)));
    assert_eq!(o.cycles, 9);
    assert!(o.irq);
    assert_eq!(ids_addrs(&o), vec![(0, 0x1000), (1, 0x1014)]);
    assert_eq!(o.trace.len(), 2);
    assert_eq!(o.trace[1], "#1 @0x00001014 DISPATCH_DIRECT x=1 y=1 z=1 initiator=0x00000000");
    assert_eq!(o.commands[1].sh, Some(sh_with(&[(0, 1), (1, 1), (2, 1)])));
    let j = output_json(&p, &o);
    assert_eq!(j["error"], json!({"cause": "kernel", "addr": 0x1014}));
    assert_eq!(j["status"], json!("error"));
    assert_eq!(j["commands"].as_array().unwrap().len(), 2);
    // Duplicates are harmless.
    w.pipeline.kerr = vec![1, 1];
    assert_eq!(run(&p, &w), o);

    // The dispatch waits with kerr_i = 1: "pipeline": {"stall": 0.5,
    // "seed": 80, "kerr": [1]}, cmd_ready in busy cycles 1..14 is
    // 1 1 0 0 0 1 1 0 0 0 0 0 1 0.
    // c3..c7 as in (a): #0 commits c5, leaves c6 (ready); #1 commits c7;
    // c8..c12: #1 presented (kerr_i = 1) but not ready: no error, the
    //   barrier holds the decoder;
    // c13: ready, #1 leaves: `kernel` at that edge; c14 the end.
    w.pipeline = pipe(80, &[1]);
    assert_eq!(spec_ready(0.5, 80, 14), "11000110000010".chars().map(|c| c == '1').collect::<Vec<_>>());
    let o = run(&p, &w);
    assert_eq!(o.error, Some((Cause::Kernel, 0x1014)));
    assert_eq!(o.cycles, 14);
    assert_eq!(o.commands.len(), 2);
    // kerr ids of other commands (#0, the SET_SH_REG, leaves c6 with
    // kerr_i = 1; the NOPs #2, #3) or of no command (99) have no effect:
    // seed 80 without kerr, cmd_ready in busy cycles 14..18 is 0 0 1 1 0:
    // c13 #1 leaves; c14 [d10 d11] NOP #2 commits; c15 [d11] NOP #3
    // commits (#2 stays: not ready); c16 finished (the queue holds two
    // NOPs, not a dispatch), #2 leaves; c17 #3 leaves; c18 the end.
    assert_eq!(spec_ready(0.5, 80, 18)[13..], [false, false, true, true, false]);
    for kerr in [vec![], vec![0, 2, 3, 99]] {
        w.pipeline = pipe(80, &kerr);
        let o = run(&p, &w);
        assert_eq!(o.error, None, "{kerr:?}");
        assert_eq!(o.cycles, 18, "{kerr:?}");
        assert_eq!(o.commands.len(), 4, "{kerr:?}");
    }
    // With compute = false kerr_i does not exist: a Pipeline with kerr
    // ids changes nothing (the input reader refuses the key there).
    let d = CmdprocParams::default();
    let mut w = wl(cat(&[dispatch(1, 1, 1), nop(1), nop(1)]), vec![], 1);
    w.pipeline.kerr = vec![0];
    let o = run(&d, &w);
    assert_eq!((o.error, o.cycles, o.commands.len()), (None, 9, 3));
}

#[test]
fn kerr_stops_fetching() {
    // SET_SH_REG, DISPATCH_DIRECT, then 20 one-dword NOPs: 30 dwords, 15
    // beats; the fetcher is not held by the barrier (32 credits):
    // requests c1..c15 without an error. "kerr": [1], no stalls, L = 1:
    // #1 commits c7, leaves c8 with kerr_i = 1: `kernel` at 0x1014 at the
    // edge of c8, fetching = 0 there, so the requests are those of
    // c1..c8; the one of c8 is answered in c9 (inflight 1 at the start of
    // c9); c10 the end.
    let p = cparams();
    let nops: Vec<Vec<u32>> = (0..20).map(|_| nop(1)).collect();
    let cmd = cat(&[ssr(0x207, &[1, 1, 1]), dispatch(1, 1, 1), cat(&nops)]);
    let mut w = wl(cmd, vec![], 1);
    w.pipeline = Pipeline { stall: 0.0, seed: 0, kerr: vec![1] };
    let o = run(&p, &w);
    assert_eq!(o.error, Some((Cause::Kernel, 0x1014)));
    assert_eq!(o.cycles, 10);
    assert_eq!(o.commands.len(), 2);
    // Without kerr: c8 the barrier; NOPs from c9, one a cycle (F = 2,
    // one-dword packets starting in lane 0): #2..#21 commit c9..c28 (the
    // last beat is visible from c17); c29 finished, #21 leaves; c30 the
    // end.
    w.pipeline = Pipeline::default();
    let o = run(&p, &w);
    assert_eq!((o.error, o.cycles, o.commands.len()), (None, 30, 22));
}

#[test]
fn kerr_input() {
    // (d) "pipeline"."kerr": compute mode only, command ids 0..65535.
    let c = cparams();
    let d = CmdprocParams::default();
    let with = |x: Value, p: &CmdprocParams| {
        let mut v = good_input();
        v["pipeline"] = x;
        parse_input(&v, p)
    };
    let msgs = |r: Result<Workload, InputErrors>| r.unwrap_err().0.iter().map(|e| e.to_string()).collect::<Vec<_>>();
    let fields = |r: Result<Workload, InputErrors>| r.unwrap_err().0.iter().map(|e| e.field.clone()).collect::<Vec<_>>();
    // Good: in input order, duplicates kept; absent is none.
    assert_eq!(with(json!({"stall": 0, "seed": 1, "kerr": [3, 0, 65535, 3]}), &c).unwrap().pipeline.kerr, vec![3, 0, 65535, 3]);
    assert_eq!(with(json!({"stall": 0, "seed": 1, "kerr": []}), &c).unwrap().pipeline.kerr, Vec::<u16>::new());
    assert_eq!(with(json!({"stall": 0.25, "seed": 1}), &c).unwrap().pipeline, Pipeline { stall: 0.25, seed: 1, kerr: vec![] });
    // compute = false: the key is an input error naming it, whatever it
    // holds.
    assert_eq!(
        msgs(with(json!({"stall": 0, "seed": 1, "kerr": [1]}), &d)),
        vec!["input `pipeline.kerr` = [1]: must be absent with compute = false (kerr_i is an input of compute mode only)"]
    );
    assert_eq!(fields(with(json!({"stall": 0, "seed": 1, "kerr": []}), &d)), vec!["pipeline.kerr"]);
    assert_eq!(fields(with(json!({"stall": 0, "seed": 1, "kerr": "x"}), &d)), vec!["pipeline.kerr"]);
    // Ids: integers from 0 to 65535.
    assert_eq!(
        msgs(with(json!({"stall": 0, "seed": 1, "kerr": [1, 65536, -1, 1.5, "2"]}), &c)),
        vec![
            "input `pipeline.kerr[1]` = 65536: must be an integer from 0 to 65535 (a command id)",
            "input `pipeline.kerr[2]` = -1: must be an integer from 0 to 65535 (a command id)",
            "input `pipeline.kerr[3]` = 1.5: must be an integer from 0 to 65535 (a command id)",
            "input `pipeline.kerr[4]` = \"2\": must be an integer from 0 to 65535 (a command id)",
        ]
    );
    assert_eq!(
        msgs(with(json!({"stall": 0, "seed": 1, "kerr": 7}), &c)),
        vec!["input `pipeline.kerr` = 7: must be a list of command ids, integers from 0 to 65535 (kerr_i is 1 while a command with one of them is presented)"]
    );
    // stall and seed stay required; other keys are still refused.
    assert_eq!(fields(with(json!({"kerr": [1]}), &c)), vec!["pipeline.stall", "pipeline.seed"]);
    assert_eq!(
        msgs(with(json!({"stall": 0, "seed": 1, "x": 1}), &c)),
        vec!["input `pipeline.x` = (given): must be absent: the keys are stall, seed, kerr"]
    );
    assert_eq!(
        msgs(with(json!(3), &c)),
        vec!["input `pipeline` = 3: must be an object {\"stall\": p, \"seed\": s} (and optionally \"kerr\": [command ids])"]
    );
    // Text: `kerr=I,J` after `seed=S` on the `.pipeline` line.
    let t = ".registers cmd_base=0x1000\n.pipeline stall=0.5 seed=3 kerr=1,0x10\nNOP\n";
    let v = pm4::run_input(t).unwrap();
    assert_eq!(v["pipeline"], json!({"stall": 0.5, "seed": 3, "kerr": [1, 16]}));
    assert_eq!(parse_input(&v, &c).unwrap().pipeline, Pipeline { stall: 0.5, seed: 3, kerr: vec![1, 16] });
    assert_eq!(fields(parse_input(&v, &d)), vec!["pipeline.kerr"]);
    // Out of range in text: the JSON reader names it.
    let v = pm4::run_input(".registers cmd_base=0\n.pipeline stall=0 seed=0 kerr=70000\nNOP\n").unwrap();
    assert_eq!(msgs(parse_input(&v, &c)), vec!["input `pipeline.kerr[0]` = 70000: must be an integer from 0 to 65535 (a command id)"]);
    let e = |t: &str| pm4::run_input(t).unwrap_err().iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(
        e(".registers cmd_base=0\n.pipeline stall=0 seed=0 kerr=1,x kerr=2\nNOP\n"),
        vec![
            "line 2: `.pipeline stall=0 seed=0 kerr=1,x kerr=2`: pipeline field `kerr` = `1,x`: value 2 `x` is not a number (decimal, or 0x and hex digits)",
        ]
    );
    assert_eq!(
        e(".registers cmd_base=0\n.pipeline stall=0 seed=0 kerr=4294967296\n"),
        vec!["line 2: `.pipeline stall=0 seed=0 kerr=4294967296`: pipeline field `kerr` = `4294967296`: value 1 `4294967296` is too large: numbers are below 2^32 = 4294967296"]
    );
}
