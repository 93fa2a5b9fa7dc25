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
    assert_eq!(r, Record { id: 0, addr: BASE, header: 0xFFFF_1000, count: 0, p: [0; 4] });
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
    assert_eq!(o.commands[1].record.p, [1, 0, 0, 0]);
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
    assert_eq!(o.commands[0].record.p, [1, 2, 3, 4]);
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
    assert_eq!(o.commands[1].record.p, [1, 2, 0, 0]);
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
    assert_eq!(o.commands[0].record.p, [0x2000, 0, 2, 0]);
    assert_eq!(o.commands[1].record.p, [7, 0, 0, 0]);
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
    assert_eq!(o.commands[1].record.p, [100, 1, 3, 0x12]);
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
    assert_eq!(o.commands[1].record, Record { id: 1, addr: 0x1004, header: hdr(Opcode::WriteData, 5), count: 5, p: [5, 0x3000, 0, 7] });
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
    w.pipeline = Pipeline { stall: 0.5, seed: 1272 };
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
    w.pipeline = Pipeline { stall: 1.0, seed: 5 };
    let (o, over) = crate::budget::within(20, || run(&p, &w));
    assert!(over);
    assert_eq!(o.commands.len(), 1);
    // stall = 0.5, seed = 1272 (ready from c8 to c14): NOP0 commits c3,
    // leaves c8; NOP1 commits c9 (the queue was full at the start of
    // c4..c8), leaves c10; c11 finished; c12 end.
    w.pipeline = Pipeline { stall: 0.5, seed: 1272 };
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
    assert_eq!(with(json!({"stall": 0.3, "seed": 7})).unwrap().pipeline, Pipeline { stall: 0.3, seed: 7 });
    assert_eq!(with(json!({"stall": 1, "seed": 0})).unwrap().pipeline, Pipeline { stall: 1.0, seed: 0 });
    assert_eq!(with(json!({"stall": 0, "seed": u64::MAX})).unwrap().pipeline, Pipeline { stall: 0.0, seed: u64::MAX });
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
    assert_eq!(parse_input(&v, &p).unwrap().pipeline, Pipeline { stall: 0.3, seed: u64::MAX });
    assert!(pm4::run_input(".registers cmd_base=0\nNOP\n").unwrap().get("pipeline").is_none());
    let v = pm4::run_input(".registers cmd_base=0\n.pipeline stall=2 seed=1\n.pipeline\n").unwrap();
    assert_eq!(msgs(parse_input(&v, &p)), vec!["input `pipeline.stall` = 2.0: must be a number from 0 to 1 (the probability that cmd_ready is 0 in a cycle)"]);
    let e = |t: &str| pm4::run_input(t).unwrap_err().iter().map(|e| e.to_string()).collect::<Vec<_>>();
    assert_eq!(
        e(".registers cmd_base=0\n.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5\n.pipeline seed=1 seed\nNOP\n.pipeline stall=0\n"),
        vec![
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: pipeline field `stall` = `.3` is not a decimal number (digits, or digits, a point and digits, such as 0.3)",
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: pipeline field `seed` = `18446744073709551616` is not a number below 2^64 = 18446744073709551616 (decimal, or 0x and hex digits)",
            "line 2: `.pipeline stall=.3 seed=18446744073709551616 x=1 stall=0.5`: unknown pipeline field `x`; known: stall, seed",
            "line 3: `.pipeline seed=1 seed`: `seed` is not a pipeline field: fields are written name=value; known: stall, seed",
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
            let Some(op) = Opcode::from_code((h >> 8) & 0xFF) else { return fail(Cause::Opcode) };
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
            let s = self.s as u64;
            let bad = match op {
                Opcode::IndexType => pl[0] > 1,
                Opcode::WriteData | Opcode::IndirectBuffer => pl[op_hi(op)] != 0 || pl[op_lo(op)] & 3 != 0,
                _ => false,
            };
            if bad {
                return fail(Cause::Field);
            }
            if op == Opcode::DrawIndexOffset2 && (pl[1] as u64 + pl[2] as u64) * s > self.w.registers.prim_size as u64 {
                return fail(Cause::PrimRange);
            }
            let mut p = [0; 4];
            for (k, v) in pl.iter().take(4).enumerate() {
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
            let state = matches!(op, Opcode::DrawIndexAuto | Opcode::DrawIndexOffset2 | Opcode::DispatchDirect).then(|| self.table.clone());
            self.cmds.push(Command { record, prims, state });
            if op == Opcode::IndirectBuffer && !self.buffer(pl[0], pl[2] & IB_SIZE_MASK, level + 1) {
                return false;
            }
            i += 1 + n;
        }
        true
    }
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

/// Commands (with primitives), state table, error, memory writes.
type Behaviour = (Vec<Command>, Vec<u32>, Option<(Cause, u32)>, Vec<(u32, Vec<u32>)>);

fn behave(p: &CmdprocParams, w: &Workload) -> Behaviour {
    let table = (0..p.state_regs as usize).map(|i| w.registers.state.get(i).copied().unwrap_or(0)).collect();
    let mut b = Beh { p, w, mem: memory_image(&w.memory), table, s: 4, id: 0, cmds: vec![], writes: vec![], error: None };
    b.buffer(w.registers.cmd_base, w.registers.cmd_size / 4, 0);
    (b.cmds, b.table, b.error, b.writes)
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
        let k = r.below(12);
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

#[test]
fn timing_machine_matches_behaviour() {
    let mut r = Rng(12345);
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
        };
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
        w.pipeline = Pipeline { stall, seed: r.next() as u64 };
        let o = run(&p, &w);
        let (cmds, table, error, writes) = behave(&p, &w);
        assert_eq!(o.commands, cmds, "case {case}");
        assert_eq!(o.state_table, table, "case {case}");
        assert_eq!(o.error, error, "case {case}");
        assert_eq!(o.memory_writes, writes, "case {case}");
        assert_eq!(o.status == Status::Error, error.is_some(), "case {case}");
        assert_eq!(o.trace.len(), o.commands.len());
        assert!(o.cycles >= 2, "case {case}");
    }
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
