//! Hand-computed expectations from docs/cu.md: the values of the scalar
//! operations, every error code, and the exact cycles of small runs, worked
//! out from the spec's text in the comments.
//!
//! Common ground of the timing tests (unless a test says otherwise):
//! `imem_depth` D = 16, memory latency L = 5, the program at 0x100.
//! - Start: `dsp_ready` is 0 in cycles `0 .. 2*(slots+1) - 1`, so the first
//!   dispatch is taken in `d = 2*(slots+1)` (4 with one slot, 6 with two).
//! - A dispatch into a slot whose store does not hold the program joins the
//!   load queue at the end of `d`; the request is offered (and taken) in
//!   `d + 1`; beat `k` is taken in `d + 1 + L + k`; the last (k = 15) in
//!   `e = d + L + 16`; the slot may be picked from `e + 1`. With one slot
//!   and L = 5: request 5, beats 10..25, `e = 25`, first pick 26, first X
//!   cycle 27.
//! - A slot alone issues every other cycle: picked in `t`, X in `t + 1`,
//!   picked again in `t + 2`.
//! - `end` in X cycle `x`: done at the end of `x`, completion taken in
//!   `x + 1`, the slot (and share) free from `x + 2`.

use super::*;
use crate::mem::Memory;

const PROG: u32 = 0x100;

/// One slot, 16 registers, D = 16, one bank of 64 words (SB = 256), O = 2;
/// a 2 x 2 grid, `kmax` 16.
fn one_slot() -> CuParams {
    CuParams {
        slots: 1,
        regs: 16,
        imem_depth: 16,
        banks: 1,
        words: 64,
        max_outstanding: 2,
        tag_bits: 1,
        grid_rows: 2,
        grid_cols: 2,
        kmax: 16,
        tex: true,
        ..CuParams::default()
    }
}

fn two_slots() -> CuParams {
    CuParams { slots: 2, ..one_slot() }
}

fn block(x: u16) -> Block {
    Block { id: [x, 0, 0], user_data: [0; 16] }
}

/// A run of `src` (assembled at PROG) with `blocks`, shares of
/// `smem_bytes` and `regs`, latency `lat`.
fn setup(src: &str, blocks: Vec<Block>, smem_bytes: u32, regs: u32, lat: u32) -> Run {
    let words = isa::assemble(src).unwrap_or_else(|e| panic!("{}", isa::errors_text(&e)));
    let mut memory = Memory::new();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    memory.load(PROG as u64, &bytes);
    Run { program: PROG, memory, blocks, smem_bytes, regs, mem_latency: lat, dump: vec![] }
}

fn go(p: &CuParams, r: &Run) -> Full {
    run_full(p, r).unwrap_or_else(|e| panic!("{e}"))
}

/// (X cycle, slot, pc) of the trace.
fn xs(o: &Outcome) -> Vec<(u64, u32, u32)> {
    o.trace.iter().map(|t| (t.cycle, t.slot, t.pc)).collect()
}

/// The X cycles of the trace.
fn x_cycles(o: &Outcome) -> Vec<u64> {
    o.trace.iter().map(|t| t.cycle).collect()
}

// ---- values ----

#[test]
fn alu_results_from_the_table() {
    use isa::AluOp::*;
    let m = 0xFFFF_FFFEu32; // -2
    let cases: [(isa::AluOp, u32, u32, u32); 24] = [
        (Add, 0xFFFF_FFFF, 2, 1),
        (Sub, 1, 2, 0xFFFF_FFFF),
        (Mul, 0x1_0001, 0x1_0001, 0x0002_0001), // (2^16+1)^2 = 2^32 + 2^17 + 1
        (Mul, 7, m, 0xFFFF_FFF2),
        (Shl, 1, 33, 2), // b mod 32
        (Shr, 0x8000_0000, 31, 1),
        (Shr, 0x8000_0000, 63, 1),
        (Sra, 0x8000_0000, 31, 0xFFFF_FFFF),
        (Sra, 0x4000_0000, 30, 1),
        (And, 0b1100, 0b1010, 0b1000),
        (Or, 0b1100, 0b1010, 0b1110),
        (Xor, 0b1100, 0b1010, 0b0110),
        (Min, 3, m, m),
        (Max, 3, m, 3),
        (Minu, 3, m, 3),
        (Maxu, 3, m, m),
        (Slt, m, 3, 1),
        (Slt, 3, m, 0),
        (Sltu, m, 3, 0),
        (Sltu, 3, m, 1),
        (Seq, 5, 5, 1),
        (Seq, 5, 6, 0),
        (Slt, 3, 3, 0),
        (Sltu, 3, 3, 0),
    ];
    for (op, a, b, want) in cases {
        assert_eq!(op.apply(a, b), want, "{op:?} {a:#x} {b:#x}");
    }
}

#[test]
fn scalar_program_values() {
    // r0 = x = 5, r1 = y = 6, r2 = z = 7 at dispatch; the rest 0.
    let src = "li r3, -2\n\
               add r4, r0, r1\n\
               subi r5, r3, 1\n\
               mul r6, r2, r3\n\
               shli r7, r0, 33\n\
               srai r8, r3, 1\n\
               shri r9, r3, 28\n\
               sltu r10, r0, r3\n\
               slti r11, r3, 0\n\
               maxi r12, r3, -5\n\
               li r13, 3\n\
               loop r13, 11\n\
               bz r13, 15\n\
               end\n\
               end\n\
               seqi r14, r13, 0\n";
    // pc 11 loops back to itself until r13 = 0 (3 times), bz jumps to 15,
    // where seqi is at D-1 = 15: its next pc 16 >= D is the pc error, and
    // it has no effect.
    let r = setup(src, vec![Block { id: [5, 6, 7], user_data: [0; 16] }], 0, 16, 5);
    let f = go(&one_slot(), &r);
    let g = &f.regfile;
    assert_eq!(&g[0..3], &[5, 6, 7]);
    assert_eq!(g[3], 0xFFFF_FFFE);
    assert_eq!(g[4], 11);
    assert_eq!(g[5], 0xFFFF_FFFD);
    assert_eq!(g[6], 0xFFFF_FFF2);
    assert_eq!(g[7], 10);
    assert_eq!(g[8], 0xFFFF_FFFF);
    assert_eq!(g[9], 0xF);
    assert_eq!(g[10], 1);
    assert_eq!(g[11], 1);
    assert_eq!(g[12], 0xFFFF_FFFE);
    assert_eq!(g[13], 0);
    assert_eq!(g[14], 0, "the erring seqi wrote nothing");
    let b = &f.outcome.blocks[0];
    assert_eq!((b.status, b.pc), (Status::Pc, 15));
    // pcs executed: 0..=10, 11 three times, 12, 15.
    let pcs: Vec<u32> = f.outcome.trace.iter().map(|t| t.pc).collect();
    assert_eq!(pcs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 11, 11, 12, 15]);
}

// ---- errors ----

/// Status and pc of a one-block run of `src` with 4 registers a block and
/// 64 scratchpad bytes.
fn status_of(src: &str) -> (Status, u32) {
    status_on(&one_slot(), src)
}

/// `status_of` on the unit `p`.
fn status_on(p: &CuParams, src: &str) -> (Status, u32) {
    let f = go(p, &setup(src, vec![block(1)], 64, 4, 5));
    let b = f.outcome.blocks[0];
    // The erring instruction is in the trace (the last entry).
    if b.status != Status::Ok {
        assert_eq!(f.outcome.trace.last().unwrap().pc, b.pc);
    }
    (b.status, b.pc)
}

#[test]
fn every_error_code() {
    use Status::*;
    assert_eq!(status_of("end"), (Ok, 0));
    // opcode: undefined opcodes.
    assert_eq!(status_of("li r3, 1\n.word 0x75"), (Opcode, 1));
    assert_eq!(status_of(".word 0x0000000000000075"), (Opcode, 0));
    assert_eq!(status_of(".word 0"), (Opcode, 0));
    // opcode before field: an undefined opcode with fields set; 0x70, 0x72
    // and 0x74 were reserved before docs/cu.md defined mma, cmp and tex
    // (0x74 with every bit set: F = 3, the field error; with every bit
    // clear it is `tex r0, r0, r0, r0, bilinear 0, r8, clamp, clamp, c 0`,
    // and O = r0 = x = 1 is the align error).
    assert_eq!(status_of(".word 0xffffffffffffff75"), (Opcode, 0));
    assert_eq!(status_of(".word 0xffffffffffffff70"), (Field, 0));
    assert_eq!(status_of(".word 0xffffffffffffff74"), (Field, 0));
    assert_eq!(status_of(".word 0x0000000000000074"), (Align, 0));
    // field: add with imm, cdl with n = 0, end with rd, ld with imm 15:9
    // (bit 8 is `zmap`), st with imm 15:8.
    assert_eq!(status_of(".word 0x0000000100000001"), (Field, 0));
    assert_eq!(status_of(".word 0x0000000000000050"), (Field, 0));
    assert_eq!(status_of(".word 0x000000000000017f"), (Field, 0));
    assert_eq!(status_of(".word 0x0000020000000060"), (Field, 0));
    assert_eq!(status_of(".word 0x0000800000000060"), (Field, 0));
    assert_eq!(status_of(".word 0x0000010000000061"), (Field, 0));
    // ld with bit 8 (zmap) decodes: rd = r0 = x = 1 is the align error.
    assert_eq!(status_of(".word 0x0000010000000060"), (Align, 0));
    // field before reg: add r200 with imm set.
    assert_eq!(status_of(".word 0x00000001000000c8" ), (Opcode, 0)); // 0xc8 is no opcode
    assert_eq!(status_of(".word 0x00000001c8000001"), (Field, 0));
    // reg: reg_count = 4.
    assert_eq!(status_of("add r4, r0, r0"), (Reg, 0));
    assert_eq!(status_of("add r3, r0, r0\nend"), (Ok, 1));
    assert_eq!(status_of("cdl r2, 2, ud[0]\nend"), (Ok, 1));
    assert_eq!(status_of("cdl r2, 3, ud[0]"), (Reg, 0)); // rd + n - 1 = 4
    assert_eq!(status_of("cdl r0, 1, [r4]"), (Reg, 0));
    assert_eq!(status_of("ld r0, r1, r2, r4"), (Reg, 0)); // rc
    assert_eq!(status_of("bnz r9, 100"), (Reg, 0)); // reg before pc
    // pc: D = 16.
    assert_eq!(status_of("jmp 16"), (Pc, 0));
    assert_eq!(status_of("jmp 4294967295"), (Pc, 0));
    assert_eq!(status_of("bz r3, 16"), (Pc, 0)); // taken
    assert_eq!(status_of("bnz r3, 16\nend"), (Ok, 1)); // not taken: pc + 1
    assert_eq!(status_of("li r3, 1\nloop r3, 16\nend"), (Ok, 2)); // r3 becomes 0: pc + 1
    assert_eq!(status_of("li r3, 2\nloop r3, 16"), (Pc, 1)); // taken to 16
    // An instruction at D-1 other than end (pc + 1 = 16), before align.
    let pad = "li r3, 0\n".repeat(15);
    assert_eq!(status_of(&format!("{pad}cdl r3, 1, ud[2]")), (Pc, 15));
    assert_eq!(status_of(&format!("{pad}end")), (Ok, 15));
    // align: off = i for ud, a + i for memory.
    assert_eq!(status_of("cdl r3, 1, ud[2]"), (Align, 0));
    assert_eq!(status_of("cdl r3, 1, ud[64]\nend"), (Ok, 1)); // beyond the view: zeros, no error
    assert_eq!(status_of("li r3, 1\ncdl r3, 1, [r3 + 2]"), (Align, 1));
    assert_eq!(status_of("li r3, 1\ncdl r3, 1, [r3 - 1]\nend"), (Ok, 2));
    // smem: s + (rows-1)*P + n > smem_size = 64.
    assert_eq!(status_of("li r3, 0x10040\nld r1, r0, r0, r3\nend"), (Ok, 2)); // r1 = y = 0: 0 + 64
    assert_eq!(status_of("li r3, 0x10041\nst r1, r0, r0, r3"), (Smem, 1)); // 65
    assert_eq!(status_of("li r3, 0x20010\nld r1, r0, r0, r3, 48\nend"), (Ok, 2)); // 48 + 16 = 64
    assert_eq!(status_of("li r3, 0x20010\nld r1, r0, r0, r3, 49"), (Smem, 1)); // 49 + 16
    assert_eq!(status_of("li r3, 0x30010\nld r1, r0, r0, r3\nend"), (Ok, 2)); // P = n: 32 + 16
    assert_eq!(status_of("li r3, 0x00050\nld r1, r0, r0, r3\nend"), (Ok, 2)); // rows = 0: nothing
    assert_eq!(status_of("li r3, 0xffff0000\nld r1, r0, r0, r3\nend"), (Ok, 2)); // n = 0: nothing
    assert_eq!(status_of("li r2, -1\nli r3, 0x10001\nld r2, r0, r0, r3"), (Smem, 2)); // no wrap
}

#[test]
fn smem_check_with_the_block_id_as_offset() {
    // rows 1, n 33 at s = r0 = x: x = 40 gives 73 > 64, x = 31 gives 64.
    let f = go(&one_slot(), &setup("li r3, 0x10021\nld r0, r0, r0, r3\nend", vec![block(40)], 64, 4, 5));
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].pc), (Status::Smem, 1));
    let f = go(&one_slot(), &setup("li r3, 0x10021\nld r0, r0, r0, r3\nend", vec![block(31)], 64, 4, 5));
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].pc), (Status::Ok, 2));
}

#[test]
fn dispatch_error() {
    // prog not a multiple of 256. One slot: dispatches taken in 4 and 6
    // (done at the end of d, completion in d + 1, free from d + 2); no
    // instruction, no load.
    let mut r = setup("end", vec![block(0), block(1)], 0, 4, 5);
    r.program = 0x180;
    let o = go(&one_slot(), &r).outcome;
    let got: Vec<_> = o.blocks.iter().map(|b| (b.status, b.pc, b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(Status::Dispatch, 0, 4, 5), (Status::Dispatch, 0, 6, 7)]);
    assert!(o.trace.is_empty());
    assert_eq!(o.counters, Counters::default());
    assert_eq!(o.cycles, 3);
    // reg_count < 3.
    let r = setup("end", vec![block(0)], 0, 2, 5);
    assert_eq!(go(&one_slot(), &r).outcome.blocks[0].status, Status::Dispatch);
    // smem_size not a multiple of 4.
    let r = setup("end", vec![block(0)], 6, 4, 5);
    assert_eq!(go(&one_slot(), &r).outcome.blocks[0].status, Status::Dispatch);
    // Two slots: shares 0 and 1 (the tag), completions in 7 and 8; block 2
    // waits for share 0, free from 8.
    let mut r = setup("end", vec![block(0), block(1), block(2)], 0, 4, 5);
    r.program = 0x104;
    let o = go(&two_slots(), &r).outcome;
    let got: Vec<_> = o.blocks.iter().map(|b| (b.share, b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(0, 6, 7), (1, 7, 8), (0, 8, 9)]);
}

// ---- timing ----

#[test]
fn three_instructions_one_slot() {
    // d = 4; load: request 5, beats 10..25, e = 25; picks 26, 28, 30; X
    // 27 (li), 29 (addi), 31 (end); done at the end of 31, completion 32.
    let r = setup("li r3, 1\naddi r3, r3, 2\nend", vec![block(0)], 0, 4, 5);
    let f = go(&one_slot(), &r);
    let o = &f.outcome;
    assert_eq!(xs(o), [(27, 0, 0), (29, 0, 1), (31, 0, 2)]);
    assert_eq!(o.blocks[0], BlockResult { id: [0, 0, 0], status: Status::Ok, pc: 2, share: 0, dispatch_cycle: 4, complete_cycle: 32 });
    assert_eq!(o.cycles, 28);
    assert_eq!(f.regfile[3], 3);
    assert_eq!(o.counters, Counters { instructions: 3, loads: 1, rd_beats: 16, ..Counters::default() });
    // The output: trace cycles relative to the first dispatch (4).
    let v = io::output_json(&one_slot(), &r, o);
    assert_eq!(v["trace"][0], serde_json::json!({"cycle": 23, "slot": 0, "block": [0, 0, 0], "pc": 0, "insn": "li r3, 1"}));
    assert_eq!(v["trace"][2]["cycle"], 27);
    assert_eq!(v["blocks"][0], serde_json::json!({"id": [0, 0, 0], "status": "ok", "pc": 2, "cycles": 28}));
    assert_eq!(v["cycles"], 28);
}

#[test]
fn program_load_skipped_when_the_store_holds_it() {
    // Block 0 as above (completion 32, slot free from 33). Block 1 is
    // dispatched in 33 into the slot whose store holds 0x100: running, picked
    // from 34; X 35, 37, 39; completion 40. One load.
    let r = setup("li r3, 1\naddi r3, r3, 2\nend", vec![block(0), block(1)], 0, 4, 5);
    let o = go(&one_slot(), &r).outcome;
    assert_eq!(x_cycles(&o), [27, 29, 31, 35, 37, 39]);
    assert_eq!((o.blocks[1].dispatch_cycle, o.blocks[1].complete_cycle), (33, 40));
    assert_eq!(o.counters.loads, 1);
    assert_eq!(o.counters.rd_beats, 16);
    assert_eq!(o.cycles, 36);
    // Another program address: the store does not hold it, so each run
    // loads once (a new run starts from reset).
    let mut r2 = r.clone();
    r2.program = 0x200;
    r2.memory.load(0x200, &r.memory.bytes(0x100, 24));
    assert_eq!(go(&one_slot(), &r2).outcome.counters.loads, 1);
}

#[test]
fn three_instructions_two_slots_interleave() {
    // L = 1, two slots, a loop so that both slots run at once:
    //   0: li r3, 20   1: loop r3, 1   2: end
    // d0 = 6 (slot 0), d1 = 7 (slot 1). Load 0: request 7, beats 8..23,
    // e = 23, slot 0 picked from 24. Load 1 may be offered from 24: request
    // 24, beats 25..40, slot 1 picked from 41.
    // Slot 0 is picked in the even cycles 24, 26, ...: X 25 (li), loop in
    // 27, 29, .., 65 (20 times, r3 20 -> 0), end in 67; completion 68.
    // Slot 1 is picked from 41 (slot 0 is in its X cycle 41, not pickable),
    // then the two alternate: slot 1 X in 42 (li), loops 44 .. 82, end 84;
    // completion 85.
    let r = setup("li r3, 20\nloop r3, 1\nend", vec![block(0), block(1)], 0, 4, 1);
    let o = go(&two_slots(), &r).outcome;
    let mut want: Vec<(u64, u32, u32)> = vec![(25, 0, 0)];
    want.extend((0..20).map(|i| (27 + 2 * i, 0, 1)));
    want.push((67, 0, 2));
    want.push((42, 1, 0));
    want.extend((0..20).map(|i| (44 + 2 * i, 1, 1)));
    want.push((84, 1, 2));
    want.sort();
    assert_eq!(xs(&o), want);
    let got: Vec<_> = o.blocks.iter().map(|b| (b.share, b.dispatch_cycle, b.complete_cycle, b.pc)).collect();
    assert_eq!(got, [(0, 6, 68, 2), (1, 7, 85, 2)]);
    assert_eq!(o.cycles, 79);
    assert_eq!(o.counters.loads, 2);
    assert_eq!(o.counters.instructions, 44);

    // The same three-instruction program as the one-slot test, two slots,
    // L = 5: slot 1's load waits for slot 0's, so its instructions come
    // after slot 0's end: d0 = 6, load 0 request 7, beats 12..27; slot 0 X
    // 29, 31, 33, completion 34. Load 1: request 28, beats 33..48; X 50,
    // 52, 54; completion 55. Block 2 goes to slot 0 (free from 35, share 0
    // free from 35) in 35, no load: X 37, 39, 41, completion 42.
    let r = setup("li r3, 1\naddi r3, r3, 2\nend", vec![block(0), block(1), block(2)], 0, 4, 5);
    let o = go(&two_slots(), &r).outcome;
    assert_eq!(xs(&o), [(29, 0, 0), (31, 0, 1), (33, 0, 2), (37, 0, 0), (39, 0, 1), (41, 0, 2), (50, 1, 0), (52, 1, 1), (54, 1, 2)]);
    let got: Vec<_> = o.blocks.iter().map(|b| (b.share, b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(0, 6, 34), (1, 7, 55), (0, 35, 42)]);
}

#[test]
fn round_robin_picks_when_both_may_be_picked() {
    // Two slots, L = 1. Block 0 (x = 0) runs a cdl from ud then two
    // instructions; block 1 (x = 1) skips to a plain path.
    //   0: bnz r0, 3   1: cdl r3, 1, ud[0]   2: jmp 4
    //   3: li r3, 7    4: li r4, 1   5: end
    // Slot 0: load 7..23, picked 24: X 25 bnz (not taken), X 27 cdl (joins
    // at the end of 27). cdl accepted a = 28: req0 = 30, t0 = max(31, 30) =
    // 31, response (done) 32; slot 0 may be picked from 33.
    // Slot 1: load request 24, beats 25..40, picked from 41: X 42 bnz
    // (taken), 44 li, 46 li, 48 end.
    // Slot 0: picked 33, X 34 jmp, picked 35, X 36 li r4, picked 37, X 38
    // end; done at the end of 38, completion 39.
    // No cycle has both pickable here; so a second pair where they meet:
    // see below.
    let src = "bnz r0, 3\ncdl r3, 1, ud[0]\njmp 4\nli r3, 7\nli r4, 1\nend";
    let r = setup(src, vec![block(0), block(1)], 0, 8, 1);
    let o = go(&two_slots(), &r).outcome;
    assert_eq!(xs(&o), [(25, 0, 0), (27, 0, 1), (34, 0, 2), (36, 0, 4), (38, 0, 5), (42, 1, 0), (44, 1, 3), (46, 1, 4), (48, 1, 5)]);

    // Both pickable in one cycle: a 2-dword cdl.
    //   0: bz r0, 2    1: cdl r3, 2, ud[0]   2: li r4, 1  3: li r4, 2
    //   4: li r4, 3    5: end
    // Block 0 (x = 0) in slot 0: X 25 bz (taken), 27, 29, 31, 33 (end),
    // completion 34. Block 2 (x = 2) goes to slot 0 in 35 (it holds the
    // program), picked from 36: X 37 bz (not taken), X 39 cdl: a = 40,
    // req0 = 42, t0 = 43, req1 = 43, t1 = 44, done 45; picked from 46.
    // Block 1 (x = 1) in slot 1, picked from 41 (load 24..40): X 42 bz (not
    // taken), X 44 cdl; the cbload takes it in 46 (free from 45 + 1):
    // req0 = 48, t0 = 49, req1 = 49, t1 = 50, done 51; picked from 52.
    // Slot 0: picked 46, 48, 50: X 47, 49, 51 (pcs 2, 3, 4), may be picked
    // from 52. In 52 both may be picked; slot 0 was picked most recently
    // (50), so the order is 1, 0: slot 1 (X 53), then slot 0 in 53 (X 54,
    // end), slot 1 in 54, 56, 58 (X 55, 57, 59).
    let src = "bz r0, 2\ncdl r3, 2, ud[0]\nli r4, 1\nli r4, 2\nli r4, 3\nend";
    let r = setup(src, vec![block(0), block(1), block(2)], 0, 8, 1);
    let o = go(&two_slots(), &r).outcome;
    assert_eq!(
        xs(&o),
        [
            (25, 0, 0),
            (27, 0, 2),
            (29, 0, 3),
            (31, 0, 4),
            (33, 0, 5),
            (37, 0, 0),
            (39, 0, 1),
            (42, 1, 0),
            (44, 1, 1),
            (47, 0, 2),
            (49, 0, 3),
            (51, 0, 4),
            (53, 1, 2),
            (54, 0, 5),
            (55, 1, 3),
            (57, 1, 4),
            (59, 1, 5),
        ]
    );
    let got: Vec<_> = o.blocks.iter().map(|b| (b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(6, 34), (7, 60), (35, 55)]);
}

#[test]
fn cdl_from_user_data() {
    // One slot, O = 2. X 27: cdl r3, 2, ud[4] joins at the end of 27;
    // accepted a = 28. B = 2, view size 64, R = 2, L = 1:
    //   req0 = a+2 = 30, t0 = max(31, a+2 = 30) = 31,
    //   req1 = 31,       t1 = max(32, 32) = 32; response (done) 33.
    // Picked 34, X 35 end, completion 36.
    let mut b = block(0);
    b.user_data = core::array::from_fn(|i| 10 * (i as u32 + 1));
    let r = setup("cdl r3, 2, ud[4]\nend", vec![b.clone()], 0, 8, 5);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 35]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 36);
    assert_eq!(&f.regfile[3..5], &[20, 30]);
    assert_eq!(f.outcome.counters, Counters { instructions: 2, cdl: 1, loads: 1, rd_beats: 16, ..Counters::default() });

    // Past the view: off 56, n = 4: R = min(4, ceil(8/4)) = 2; beats 2, 3
    // read as zero. X 27, 29 li; X 31 cdl, a = 32: req0 = 34, t0 = 35;
    // req1 = 35, t1 = 36; t2 = 37, t3 = 38; response 39; X 41 end.
    let r = setup("li r5, 9\nli r6, 9\ncdl r3, 4, ud[56]\nend", vec![b.clone()], 0, 8, 5);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 41]);
    assert_eq!(&f.regfile[3..7], &[150, 160, 0, 0]);

    // O = 1 (a = 28): req1 = max(req0 + 1, t0 + 1) = 32, t1 = 33, response
    // 34: X end 36.
    let p1 = CuParams { max_outstanding: 1, ..one_slot() };
    let r = setup("cdl r3, 2, ud[4]\nend", vec![b], 0, 8, 5);
    let f = go(&p1, &r);
    assert_eq!(x_cycles(&f.outcome), [27, 36]);
    assert_eq!(&f.regfile[3..5], &[20, 30]);
}

#[test]
fn cdl_from_memory_at_latency() {
    // L = 5, O = 2. X 27 li r5, X 29 cdl r6, 3, [r5 + 8]: off = 0x2008,
    // joins at the end of 29, a = 30. B = R = 3:
    //   req0 = 32, t0 = max(37, 31 + 1) = 37
    //   req1 = 33, t1 = max(38, 38) = 38
    //   req2 = max(34, t0 + 1 = 38) = 38 (k = 2 >= O), t2 = max(43, 39) = 43
    // response (done) 44; picked 45, X 46 end; completion 47.
    let mut r = setup("li r5, 0x2000\ncdl r6, 3, [r5 + 8]\nend", vec![block(0)], 0, 10, 5);
    r.memory.load(0x2008, &[0x11, 0, 0, 0, 0x22, 0, 0, 0, 0x33, 0, 0, 0]);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 46]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 47);
    assert_eq!(&f.regfile[6..9], &[0x11, 0x22, 0x33]);
    assert_eq!(f.outcome.counters.rd_beats, 16 + 3);
    assert_eq!(f.outcome.counters.cdl, 1);

    // At the top of memory: off = 0xFFFF_FFF8, n = 4: R = 2, the other two
    // read as zero (no wrap). a = 30: req0 32, t0 37; req1 33, t1 38; t2 39,
    // t3 40; response 41; X end 43.
    let mut r = setup("li r5, -8\ncdl r6, 4, [r5]\nend", vec![block(0)], 0, 10, 5);
    r.memory.load(0xFFFF_FFF8, &[1, 0, 0, 0, 2, 0, 0, 0]);
    r.memory.load(0, &[3, 0, 0, 0]);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 43]);
    assert_eq!(&f.regfile[6..10], &[1, 2, 0, 0]);
    assert_eq!(f.outcome.counters.rd_beats, 16 + 2);
}

/// Memory bytes 0x3000.. hold their address's low byte; 0x4000..0x4018
/// hold 0xEE.
fn dma_memory(r: &mut Run) {
    let v: Vec<u8> = (0..64).collect();
    r.memory.load(0x3000, &v);
    r.memory.load(0x4000, &[0xEE; 0x18]);
}

#[test]
fn ld_with_misaligned_ends() {
    // ld r3, r4, r5, r6: s = 1, a = 0x3002, stride 16, rows 2, n 9, P = n.
    // Row 0: a = 0x3002 (da 2), S = 1 (ds 1): nb = ceil(11/4) = 3, nw =
    //   ceil(10/4) = 3; ds < da: word j at beat j + 1, word 2 by a flush.
    // Row 1: a = 0x3012 (da 2), S = 10 (ds 2): nb = 3, nw = ceil(11/4) = 3;
    //   ds >= da: word j at beat j, no flush.
    // X 27, 29, 31, 33 (li), X 35 ld: joins at the end of 35, g = 36. O = 2,
    // L = 5. Requests from 37, while fewer than 2 are requested and not
    // taken at the end of the previous cycle:
    //   37 req b0 (due 42)   38 req b1 (due 43)
    //   42 take b0 (no word)
    //   43 take b1: row 0 word 0; req b2 (1 in flight at the end of 42, due 48)
    //   44 req b3 (due 49)
    //   48 take b2: row 0 word 1; row 0's last beat, word 2 missing: flush 49
    //   49 flush: row 0 word 2 (b3, due, is not taken); req b4 (due 54)
    //   50 take b3: row 1 word 0
    //   51 req b5 (due 56)
    //   54 take b4: row 1 word 1
    //   56 take b5: row 1 word 2, the last: e = 56.
    // Picked 57, X 58 end, completion 59.
    let src = "li r3, 1\nli r4, 0x3002\nli r5, 16\nli r6, 0x20009\nld r3, r4, r5, r6\nend";
    let mut r = setup(src, vec![block(0)], 64, 8, 5);
    dma_memory(&mut r);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 33, 35, 58]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 59);
    // smem[1..10] = mem[0x3002..0x300b], smem[10..19] = mem[0x3012..0x301b].
    let mut want = [0u8; 20];
    for i in 0..9 {
        want[1 + i] = 2 + i as u8;
        want[10 + i] = 0x12 + i as u8;
    }
    assert_eq!(&f.smem[..20], &want[..]);
    assert_eq!(f.outcome.counters, Counters { instructions: 6, ld: 1, loads: 1, rd_beats: 16 + 6, ..Counters::default() });
}

#[test]
fn st_with_misaligned_ends() {
    // First an aligned ld fills smem[0..32] from 0x3000 (bytes 0..31):
    // X 27 li r4, X 29 li r6, X 31 ld (rows 1, n 32: 8 beats, 8 words, no
    // flush), g = 32; O = 2, L = 5: requests in pairs, each pair after the
    // previous pair's first beat:
    //   33, 34 req (due 38, 39); 38, 39 take; 39, 40 req (due 44, 45);
    //   44, 45 take; 45, 46 req; 50, 51 take; 51, 52 req; 56, 57 take: e = 57.
    // Picked 58: X 59, 61, 63, 65 (li), X 67 st r3, r4, r5, r6, 20: s = 1,
    // a = 0x4003, stride 8, rows 2, n 6, P = 20.
    // Row 0: a 0x4003 (da 3), S 1 (ds 1): nw = ceil(7/4) = 2 words in, nb =
    //   ceil(9/4) = 3 beats out; da >= ds: beat j at word j, beat 2 by a flush.
    // Row 1: a 0x400b (da 3), S 21 (ds 1): the same.
    // g = 68. Scratchpad reads from 69; O = 2 beats taken and not answered:
    //   69 read w0 (offered 70)
    //   70 take w0 -> beat 0x4000 (lane 3) (due 75); read w1
    //   71 take w1 -> beat 0x4004 (due 76); row 0 done: flush from 72; read w2
    //   72..75 flush: 2 in flight (as counted at the end of 71..74) -> wait;
    //      75: response 1 taken (counted from 76)
    //   76 flush beat 0x4008 (lane 0) taken (1 in flight at the end of 75),
    //      due 81; response 2 taken
    //   77 take w2 -> beat 0x4008 (lane 3) (due 82); read w3
    //   78..81 w3's beat waits (2 in flight); 81: response 3 taken
    //   82 take w3 -> beat 0x400c (due 87); flush from 83; response 4 taken
    //   83 flush beat 0x4010 (lane 0) (1 in flight at the end of 82), due 88
    //   87, 88 responses 5, 6: e = 88.
    // Picked 89, X 90 end, completion 91.
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r3, 1\nli r4, 0x4003\nli r5, 8\nli r6, 0x20006\nst r3, r4, r5, r6, 20\nend";
    let mut r = setup(src, vec![block(0)], 64, 8, 5);
    dma_memory(&mut r);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 59, 61, 63, 65, 67, 90]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 91);
    let e = 0xEE;
    assert_eq!(
        f.outcome.memory.bytes(0x4000, 0x18),
        [e, e, e, 1, 2, 3, 4, 5, 6, e, e, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, e, e, e, e, e, e, e]
    );
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 9, ld: 1, st: 1, loads: 1, rd_beats: 16 + 8, wr_beats: 6, ..Counters::default() }
    );
}

#[test]
fn empty_dma_is_done_at_its_start() {
    // rows = 0: X 27 li, X 29 ld joins at the end of 29, starts (and is done)
    // in g = 30: picked 31, X 32 end.
    let r = setup("li r6, 0x0005\nld r3, r4, r5, r6\nend", vec![block(0)], 64, 8, 5);
    let o = go(&one_slot(), &r).outcome;
    assert_eq!(x_cycles(&o), [27, 29, 32]);
    assert_eq!(o.counters.ld, 1);
    assert_eq!(o.counters.rd_beats, 16);
}

#[test]
fn completion_order_and_shares() {
    // L = 1, two slots. Block 0 (x = 0) loops 8 times; blocks 1, 2 end at
    // once.
    //   0: bnz r0, 4   1: li r3, 8   2: loop r3, 2   3: end   4: end
    // Load 0: request 7, beats 8..23; slot 0 picked from 24: X 25 bnz, 27 li,
    // loops 29 .. 43, end 45; completion 46.
    // Load 1: request 24, beats 25..40; slot 1 picked 41: X 42 bnz (taken),
    // X 44 end; completion 45 (before block 0's): share 1 and slot 1 free
    // from 46. Block 2 is dispatched in 46 with the lowest free share (1; 0
    // is still block 0's) to the lowest free slot (1; slot 0 is done, not
    // free): no load, picked 47: X 48 bnz, X 50 end; completion 51.
    let src = "bnz r0, 4\nli r3, 8\nloop r3, 2\nend\nend";
    let r = setup(src, vec![block(0), block(1), block(2)], 0, 4, 1);
    let o = go(&two_slots(), &r).outcome;
    let got: Vec<_> = o.blocks.iter().map(|b| (b.id[0], b.share, b.dispatch_cycle, b.complete_cycle, b.pc)).collect();
    assert_eq!(got, [(0, 0, 6, 46, 3), (1, 1, 7, 45, 4), (2, 1, 46, 51, 4)]);
    assert_eq!(o.cycles, 45);
    assert_eq!(o.counters.loads, 2);
    let slot_of_block2: Vec<u32> = o.trace.iter().filter(|t| t.block == [2, 0, 0]).map(|t| t.slot).collect();
    assert_eq!(slot_of_block2, [1, 1]);
    assert_eq!(o.trace.iter().filter(|t| t.block == [2, 0, 0]).map(|t| t.cycle).collect::<Vec<_>>(), [48, 50]);
}

#[test]
fn shares_limit_residency() {
    // R = min(slots = 2, SB / smem_bytes = 256 / 256 = 1, ...) = 1: one
    // block at a time even with two slots: block 1 waits for block 0's
    // completion (32 + ... as with one slot, but d0 = 6).
    assert_eq!(shares(&two_slots(), 256, 4), 1);
    assert_eq!(shares(&two_slots(), 0, 16), 1);
    assert_eq!(shares(&two_slots(), 0, 0), 2);
    assert_eq!(shares(&two_slots(), 0, 17), 0);
    let r = setup("end", vec![block(0), block(1)], 256, 4, 5);
    let o = go(&two_slots(), &r).outcome;
    // d0 = 6: load request 7, beats 12..27, X 29 end, completion 30; d1 = 31
    // to slot 0 (the lowest free, holding the program): X 33, completion 34.
    let got: Vec<_> = o.blocks.iter().map(|b| (b.share, b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(0, 6, 30), (0, 31, 34)]);
    assert!(o.trace.iter().all(|t| t.slot == 0));
}

#[test]
fn runs_that_cannot_end() {
    let r = setup("jmp 0", vec![block(0)], 0, 4, 5);
    let e = run(&one_slot(), &r).unwrap_err();
    assert!(matches!(e, ModelError::Cycles { completed: 0, blocks: 1, .. }), "{e}");
    assert!(e.to_string().starts_with("the run did not end within 1048580 cycles"), "{e}");
    let r = setup("end", vec![block(0)], 0, 17, 5);
    assert_eq!(run(&one_slot(), &r).unwrap_err(), ModelError::NoShare { smem_bytes: 0, regs: 17 });
}

// ---- the run files ----

mod files {
    use super::*;
    use serde_json::{json, Value};

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, data) in files {
            std::fs::write(d.path().join(name), data).unwrap();
        }
        d
    }

    fn errors(v: Value, d: &std::path::Path) -> Vec<String> {
        io::parse_input(&v, d, &one_slot()).unwrap_err().0.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn the_example_input_runs() {
        let d = dir_with(&[
            ("kernel.s", b"cdl r3, 2, ud[0]\nli r6, 0x10008\nld r7, r3, r0, r6\nst r7, r3, r0, r6, 0\nend\n"),
            ("data.bin", &[9, 8, 7]),
        ]);
        let v = json!({"program": 4096,
            "memory": [{"addr": 4096, "asm": "kernel.s", "isa": "cu"},
                       {"addr": 65536, "dwords": [1, 2, 3]},
                       {"addr": 131072, "bytes": [255, 0]},
                       {"addr": 262144, "file": "data.bin"}],
            "blocks": [{"id": [0, 0, 0], "user_data": [65536, 3]}],
            "smem_bytes": 64, "regs": 16,
            "dump": [{"addr": 65536, "bytes": 12}, {"addr": 262143, "bytes": 5}],
            "mem_latency": 10});
        let r = io::parse_input(&v, d.path(), &one_slot()).unwrap();
        assert_eq!(r.program, 4096);
        assert_eq!(r.mem_latency, 10);
        assert_eq!(r.blocks[0].user_data[..3], [65536, 3, 0]);
        assert_eq!(r.memory.bytes(65536, 4), [1, 0, 0, 0]);
        assert_eq!(r.memory.bytes(131072, 3), [255, 0, 0]);
        assert_eq!(r.memory.bytes(262144, 3), [9, 8, 7]);
        assert_eq!(r.memory.bytes(4096, 8), isa::assemble("cdl r3, 2, ud[0]").unwrap()[0].to_le_bytes());
        let o = run(&one_slot(), &r).unwrap();
        let out = io::output_json(&one_slot(), &r, &o);
        assert_eq!(out["dumps"][0], json!({"addr": 65536, "data": "010000000200000003000000"}));
        assert_eq!(out["dumps"][1], json!({"addr": 262143, "data": "0009080700"}));
        assert_eq!(out["blocks"][0]["status"], "ok");
        assert_eq!(out["blocks"][0]["pc"], 4);
        assert_eq!(out["trace"][0]["insn"], "cdl r3, 2, ud[0]");
        assert_eq!(out["trace"][3]["insn"], "st r7, r3, r0, r6");
        assert_eq!(out["counters"], json!({"instructions": 5, "cdl": 1, "ld": 1, "st": 1, "act": 0, "cmp": 0, "exp": 0, "mma": 0,
                                           "tex": 0, "loads": 1, "rd_beats": 16 + 2, "wr_beats": 2, "texel_fetches": 0}));
        assert_eq!(out["cycles"], out["blocks"][0]["cycles"]);
        let keys: Vec<&str> = out.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys.len(), 5);
        // Defaults: mem_latency 10, user_data zeros.
        let v = json!({"program": 0, "memory": [], "blocks": [{"id": [1, 2, 3]}], "smem_bytes": 0, "regs": 3, "dump": []});
        let r = io::parse_input(&v, d.path(), &one_slot()).unwrap();
        assert_eq!((r.mem_latency, r.blocks[0].id, r.blocks[0].user_data), (10, [1, 2, 3], [0; 16]));
        // pm4 text.
        let d = dir_with(&[("cmds.txt", b"NOP\n")]);
        let v = json!({"program": 0, "memory": [{"addr": 8, "asm": "cmds.txt", "isa": "pm4"}],
                       "blocks": [{"id": [0, 0, 0]}], "smem_bytes": 0, "regs": 3, "dump": []});
        let r = io::parse_input(&v, d.path(), &one_slot()).unwrap();
        assert_eq!(r.memory.read_words(8, 4), crate::models::cmdproc::pm4::assemble("NOP").unwrap());
    }

    #[test]
    fn every_violation_is_reported() {
        let d = dir_with(&[("bad.s", b"add r1, r2\nend\nmov r1, r2\n"), ("big.bin", &[])]);
        std::fs::File::options().write(true).open(d.path().join("big.bin")).unwrap().set_len((16 << 20) + 1).unwrap();
        let v = json!({"program": 4097, "extra": 1,
            "memory": [{"addr": 4096, "asm": "bad.s", "isa": "cu"},
                       {"addr": 4294967295u64, "dwords": [1]},
                       {"addr": 0, "bytes": [256], "dwords": []},
                       {"addr": 0, "asm": "bad.s", "isa": "x86"},
                       {"addr": 0, "file": "missing.bin"},
                       {"addr": 0, "file": "big.bin"},
                       {"addr": 0, "dwords": [1], "isa": "cu"},
                       {"dwords": [4294967296u64]}],
            "blocks": [{"id": [0, 0]}, {"id": [0, 0, 65536], "user_data": [1, -1], "x": 0}],
            "smem_bytes": 6, "regs": 2, "dump": [{"addr": 0, "bytes": 0}, {"addr": 4294967295u64, "bytes": 2}],
            "mem_latency": 0});
        let got = errors(v, d.path());
        let want = [
            "input `extra` = (given): must be absent: the keys are program, memory, blocks, smem_bytes, regs, dump, mem_latency",
            "input `program` = 4097: must be a multiple of 256 from 0 to 4294967040",
            "input `memory[0].asm` = \"bad.s\" line 1: `add r1, r2`: must be valid cu assembly (missing operand: `add` takes rd, ra, rb)",
            "input `memory[0].asm` = \"bad.s\" line 3: `mov r1, r2`: must be valid cu assembly (unknown mnemonic `mov`; known: ",
            "input `memory[1]` = bytes 0xffffffff..0x100000003: must be below 2^32: the entry's last byte at most 0xffffffff",
            "input `memory[2].bytes` = (given): must be absent when `dwords` is given: exactly one of asm, dwords, bytes, file",
            "input `memory[3].isa` = \"x86\": must be \"cu\" or \"pm4\"",
            "input `memory[4].file` = \"missing.bin\": must be a readable file (",
            "input `memory[5].file` = \"big.bin\": 16777217 bytes: must be a file of at most 16777216 bytes (16 MiB)",
            "input `memory[6].isa` = (given): must be absent: isa goes with asm",
            "input `memory[7].addr` = (missing): must be an integer from 0 to 4294967295",
            "input `memory[7].dwords[0]` = 4294967296: must be an integer from 0 to 4294967295",
            "input `blocks[0].id` = [0,0]: must be three integers from 0 to 65535",
            "input `blocks[1].x` = (given): must be absent: the keys are id, user_data",
            "input `blocks[1].id` = [0,0,65536]: must be three integers from 0 to 65535",
            "input `blocks[1].user_data[1]` = -1: must be an integer from 0 to 4294967295",
            "input `smem_bytes` = 6: must be a multiple of 4 from 0 to 256 (the scratchpad's bytes)",
            "input `regs` = 2: must be an integer from 3 to 16 (the unit's registers)",
            "input `dump[0].bytes` = 0: must be an integer from 1 to 1048576",
            "input `dump[1]` = bytes 0xffffffff..0x100000001: must be below 2^32: the region's last byte at most 0xffffffff",
            "input `mem_latency` = 0: must be an integer from 1 to 1000",
        ];
        assert_eq!(got.len(), want.len(), "{got:#?}");
        for (g, w) in got.iter().zip(want) {
            assert!(g.starts_with(w), "got  {g}\nwant {w}");
        }
        // Missing keys and a list of blocks too long.
        let blocks: Vec<Value> = (0..4097).map(|_| json!({"id": [0, 0, 0]})).collect();
        let got = errors(json!({"blocks": blocks}), d.path());
        assert_eq!(
            got,
            [
                "input `program` = (missing): must be a multiple of 256 from 0 to 4294967040",
                "input `memory` = (missing): must be a list of memory entries (possibly empty)",
                "input `blocks` = a list of 4097 blocks: must be a list of 1 to 4096 blocks {\"id\", \"user_data\"}",
                "input `smem_bytes` = (missing): must be a multiple of 4 from 0 to 256 (the scratchpad's bytes)",
                "input `regs` = (missing): must be an integer from 3 to 16 (the unit's registers)",
                "input `dump` = (missing): must be a list of regions {\"addr\", \"bytes\"} (possibly empty)",
            ]
        );
        assert_eq!(errors(json!([]), d.path())[0], "input `(file)` = []: must be a JSON object with the keys program, memory, blocks, smem_bytes, regs, dump, mem_latency");
        // Dumps of 16 MiB in all at most: 500,000 regions of 1 MiB would
        // make an output of a terabyte.
        let dump: Vec<Value> = (0..500_000).map(|_| json!({"addr": 0, "bytes": 1 << 20})).collect();
        let got = errors(json!({"program": 0, "memory": [], "blocks": [{"id": [0, 0, 0]}], "smem_bytes": 0, "regs": 3, "dump": dump}), d.path());
        assert_eq!(
            got,
            ["input `dump[16].bytes` = 1048576: must be within the 16777216 bytes (16 MiB) all dump regions may hold together (0 left)"]
        );
    }
}

// ---- act, cmp, exp ----
//
// Steps (docs/cu.md "Vector operations"): READ 2 cycles, OP 2, WRITE 1, the
// first beginning in g + 1, back to back; done in the cycle the last ends,
// i.e. e = g + (sum of the steps' cycles). Below `R(x)` is a READ of the
// word at share offset x, `O` an OP, `W(x, m)` a WRITE with strobes m.

use vector::Step::{Op as O, Read as R, Write as W};

/// The little-endian bytes of int32 words.
fn le(words: &[i32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A `cmp`/`exp` operation (the `act` fields 0) on the share at `base`.
fn vop(kind: vector::Kind, base: u32, d: u32, s: u32, q: u32, n: u32, e: isa::ElemSize) -> vector::Op {
    vector::Op { kind, slot: 0, joined: 0, smem_base: base, d, s, q, rows: 0, w: 0, pitch: 0, n, e }
}

/// A scratchpad of `bytes` bytes filled with 0xEE, `init` written at
/// `base + at`.
fn smem_with(bytes: usize, base: usize, at: usize, init: &[u8]) -> Vec<u8> {
    let mut m = vec![0xEE; bytes];
    m[base + at..base + at + init.len()].copy_from_slice(init);
    m
}

#[test]
fn act_values_with_overlapping_rows() {
    // Share at 64; words [-1, 2, -3, 4, -5] at offset 0; rows 3, w 2, P 4:
    // words 0, 4 | 4, 8 | 8, 12 in order, each READ then WRITE: 6 x 3 = 18
    // cycles. Word 16 (-5) is not touched.
    let mut m = smem_with(128, 64, 0, &le(&[-1, 2, -3, 4, -5]));
    let op = vector::Op { kind: vector::Kind::Act, rows: 3, w: 2, pitch: 4, ..vop(vector::Kind::Act, 64, 0, 0, 0, 0, isa::ElemSize::B8) };
    let steps = vector::run(&op, &mut m);
    assert_eq!(steps, [R(0), W(0, 0xF), R(4), W(4, 0xF), R(4), W(4, 0xF), R(8), W(8, 0xF), R(8), W(8, 0xF), R(12), W(12, 0xF)]);
    assert_eq!(vector::cycles(&steps), 18);
    assert_eq!(&m[64..84], &le(&[0, 2, 0, 4, -5])[..]);
    assert_eq!(&m[..64], &[0xEE; 64][..]);
    assert!(!op.empty());
    assert!(vector::Op { rows: 0, ..op }.empty());
    assert!(vector::Op { w: 0, ..op }.empty());
}

#[test]
fn cmp_exp_16_bit_partial_words() {
    // n = 7 elements of 16 bits (z = 2, 4 a vector): V = ceil(14/8) = 2;
    // element 7 (0xABCD) is past n: given as 0, not selected.
    //   S = 0: [0x1234, 0, 0xFFFF, 0x0100 | 0, 0x0001, 0x8000, (0xABCD)]
    // v0: mask 0b1101, count 3: packed 34 12 FF FF 00 01: word 0 complete
    //     (W D+0), 2 bytes pending; 4 mask bits.
    // v1: mask 0b0110 (m = min(4, 7 - 4) = 3 bits), count 2: + 01 00 00 80:
    //     word 1 = 00 01 01 00 complete (W D+4); 00 80 pending; 7 bits.
    // Then the partial packed word (2 bytes, W D+8 strobes 0x3), the partial
    // mask word (7 bits: 1 byte, mask 0b110_1101 = 0x6D, W Q+4 strobe 0x1),
    // the count 5 (W Q). Cycles: 2 x (2+2+2+1) + 1 + 1 + 1 = 17.
    let (base, d, q) = (64usize, 16u32, 32u32);
    let elems: Vec<u8> = [0x1234u16, 0, 0xFFFF, 0x0100, 0, 0x0001, 0x8000, 0xABCD].iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut m = smem_with(128, base, 0, &elems);
    let op = vop(vector::Kind::Cmp, base as u32, d, 0, q, 7, isa::ElemSize::B16);
    let steps = vector::run(&op, &mut m);
    assert_eq!(steps, [R(0), R(4), O, W(16, 0xF), R(8), R(12), O, W(20, 0xF), W(24, 0x3), W(36, 0x1), W(32, 0xF)]);
    assert_eq!(vector::cycles(&steps), 17);
    let e = 0xEE;
    assert_eq!(&m[base + 16..base + 28], &[0x34, 0x12, 0xFF, 0xFF, 0x00, 0x01, 0x01, 0x00, 0x00, 0x80, e, e]);
    assert_eq!(&m[base + 32..base + 40], &[5, 0, 0, 0, 0x6D, e, e, e]);
    assert_eq!(&m[base..base + 16], &elems[..], "the source is not written");

    // exp back to D' = 48 from S = 16, Q = 32 (mask bits past 7 are 0xEE
    // junk, never used): v0: m = 4, no bits held: R Q+4; c = 3 set bits
    // (0xD), 6 bytes: R S, R S+4 (8 held); O; W D'+0, W D'+4 (4 < 14); 2
    // bytes held. v1: m = 3, 28 bits held; bits 4..6 of 0x6D = 0b110, c = 2:
    // 4 bytes, 2 held: R S+8; O; W D'+8 (strobe F), W D'+12 (12 < 14: bytes
    // 12, 13 only, strobe 0x3). Cycles 2+2+2+2+1+1 + 2+2+1+1 = 16.
    let op = vop(vector::Kind::Exp, base as u32, 48, 16, q, 7, isa::ElemSize::B16);
    let steps = vector::run(&op, &mut m);
    assert_eq!(steps, [R(36), R(16), R(20), O, W(48, 0xF), W(52, 0xF), R(24), O, W(56, 0xF), W(60, 0x3)]);
    assert_eq!(vector::cycles(&steps), 16);
    let mut want = elems[..14].to_vec();
    want.extend([e, e]);
    assert_eq!(&m[base + 48..base + 64], &want[..]);
    assert_eq!(&m[..base], &[e; 64][..], "nothing outside the share");
}

#[test]
fn cmp_exp_32_bit_with_a_full_mask_word() {
    // n = 35 elements of 32 bits (2 a vector): V = ceil(140/8) = 18; x_i = 0
    // when i % 3 == 0, else 0xA000_0000 + i; element 35 (past n) = 0xDEAD.
    // Selected: the 35 - 12 = 23 with i % 3 != 0. Mask word 0 = bits 0..31
    // = 0xFFFF_FFFF - (2^0 + 2^3 + .. + 2^30 = 0x4924_9249) = 0xB6DB_6DB6,
    // complete after v15 (elements 30, 31): its WRITE follows v15's packed
    // write (element 31, the 21st selected: D + 80). Bits 32..34: 32 and
    // 34 set: 0b101, partial: 1 byte at Q + 8.
    // Steps: 18 x (R, R, O) = 108 cycles, 23 packed WRITEs (z = 4: one a
    // selected element, never partial), the mask word, the partial mask
    // word, the count: 108 + 23 + 3 = 134.
    let (s, d, q, d2) = (0u32, 160u32, 256u32, 288u32);
    let x = |i: u32| if i.is_multiple_of(3) { 0 } else { 0xA000_0000 + i };
    let mut src: Vec<u8> = (0..35).flat_map(|i| x(i).to_le_bytes()).collect();
    src.extend(0xDEADu32.to_le_bytes());
    let mut m = smem_with(512, 0, s as usize, &src);
    let steps = vector::run(&vop(vector::Kind::Cmp, 0, d, s, q, 35, isa::ElemSize::B32), &mut m);
    assert_eq!(vector::cycles(&steps), 134);
    assert_eq!(steps.iter().filter(|t| matches!(t, R(_))).count(), 36);
    assert_eq!(steps.iter().filter(|t| matches!(t, O)).count(), 18);
    let k = steps.iter().position(|t| *t == W(q + 4, 0xF)).unwrap();
    assert_eq!(&steps[k - 4..k + 2], &[R(120), R(124), O, W(d + 80, 0xF), W(q + 4, 0xF), R(128)]);
    assert_eq!(&steps[steps.len() - 6..], &[R(136), R(140), O, W(d + 88, 0xF), W(q + 8, 0x1), W(q, 0xF)]);
    let packed: Vec<u8> = (0..35).filter(|i| i % 3 != 0).flat_map(|i| x(i).to_le_bytes()).collect();
    assert_eq!(packed.len(), 92);
    assert_eq!(&m[d as usize..d as usize + 96], &[&packed[..], &[0xEE; 4][..]].concat()[..]);
    assert_eq!(&m[q as usize..q as usize + 12], &[23, 0, 0, 0, 0xB6, 0x6D, 0xDB, 0xB6, 0x05, 0xEE, 0xEE, 0xEE]);

    // exp to D' = 288: mask READs at v0 (Q+4) and v16 (Q+8: the 32 bits of
    // the first word used by v0..v15); v17 has m = 1 (element 34) and 30
    // bits held. One packed READ a selected element (23). Two WRITEs a
    // vector but v17's second (byte 140 is not below n*z = 140): 35.
    // Cycles: (2 + 23) x 2 + 18 x 2 + 35 = 121.
    let steps = vector::run(&vop(vector::Kind::Exp, 0, d2, d, q, 35, isa::ElemSize::B32), &mut m);
    assert_eq!(vector::cycles(&steps), 121);
    assert_eq!(&steps[..5], &[R(q + 4), R(d), O, W(d2, 0xF), W(d2 + 4, 0xF)]); // v0: x0 = 0, x1 selected
    let mask_reads: Vec<usize> = steps.iter().enumerate().filter(|(_, t)| matches!(t, R(a) if *a >= q)).map(|(i, _)| i).collect();
    assert_eq!(mask_reads.len(), 2);
    assert_eq!(steps[mask_reads[1]], R(q + 8));
    // v16 (x32 selected, x33 not): R Q+8, c = 1: the 22nd packed word
    // (21 selected below 32) R D+84; O; W D'+128, W D'+132. v17 (x34): R
    // D+88; O; W D'+136 (bytes 136..139, all below 140).
    assert_eq!(
        &steps[steps.len() - 8..],
        &[R(q + 8), R(d + 84), O, W(d2 + 128, 0xF), W(d2 + 132, 0xF), R(d + 88), O, W(d2 + 136, 0xF)]
    );
    let want: Vec<u8> = (0..35).flat_map(|i| x(i).to_le_bytes()).collect();
    assert_eq!(&m[d2 as usize..d2 as usize + 140], &want[..]);
    assert_eq!(&m[d2 as usize + 140..d2 as usize + 144], &[0xEE; 4]);
}

#[test]
fn cmp_exp_8_bit_whole_words_and_edge_cases() {
    // n = 32 bytes, all non-zero: V = 4; each vector completes 2 packed
    // words (8 bytes); v3 completes the mask word (32 bits). No partial
    // words; the count 32. Cycles 4 x (2+2+2+1+1) + 1 + 1 = 34.
    let src: Vec<u8> = (1..=32).collect();
    let mut m = smem_with(128, 0, 0, &src);
    let steps = vector::run(&vop(vector::Kind::Cmp, 0, 32, 0, 64, 32, isa::ElemSize::B8), &mut m);
    let mut want = Vec::new();
    for v in 0..4 {
        want.extend([R(8 * v), R(8 * v + 4), O, W(32 + 8 * v, 0xF), W(32 + 8 * v + 4, 0xF)]);
    }
    want.extend([W(68, 0xF), W(64, 0xF)]);
    assert_eq!(steps, want);
    assert_eq!(vector::cycles(&steps), 34);
    assert_eq!(&m[32..64], &src[..]);
    assert_eq!(&m[64..72], &[32, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);

    // cmp with n = 0: only the count's WRITE (1 cycle), nothing else.
    let mut m = smem_with(64, 0, 0, &[]);
    let op = vop(vector::Kind::Cmp, 0, 0, 0, 8, 0, isa::ElemSize::B16);
    assert!(!op.empty());
    assert_eq!(vector::run(&op, &mut m), [W(8, 0xF)]);
    assert_eq!(&m[..16], &[0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE]);
    // exp with n = 0 does nothing (done at its start).
    assert!(vop(vector::Kind::Exp, 0, 0, 0, 8, 0, isa::ElemSize::B16).empty());

    // exp with a vector of no set bits: n = 4 bytes, mask 0: R Q+4 (m = 4),
    // c = 0: no packed READ; O; W D (bytes 0..3, all below 4), and not
    // D+4. Cycles 2 + 2 + 1 = 5; the packed data is never read.
    let mut m = smem_with(64, 0, 36, &[0, 0, 0, 0]);
    let steps = vector::run(&vop(vector::Kind::Exp, 0, 0, 16, 32, 4, isa::ElemSize::B8), &mut m);
    assert_eq!(steps, [R(36), O, W(0, 0xF)]);
    assert_eq!(vector::cycles(&steps), 5);
    assert_eq!(&m[..8], &[0, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE]);

    // exp of 8-bit elements, one packed word read for two vectors: n = 16,
    // mask bits 0x0101 (elements 0 and 8): v0 R Q+4, c = 1: R S; O; W W.
    // v1: 24 bits and 3 packed bytes held, c = 1: no READ; O; W W.
    // Cycles 2+2+2+1+1 + 2+1+1 = 12.
    let mut m = smem_with(64, 0, 16, &[7, 9, 0xEE, 0xEE]);
    m[36..40].copy_from_slice(&[1, 1, 0, 0]);
    let steps = vector::run(&vop(vector::Kind::Exp, 0, 0, 16, 32, 16, isa::ElemSize::B8), &mut m);
    assert_eq!(steps, [R(36), R(16), O, W(0, 0xF), W(4, 0xF), O, W(8, 0xF), W(12, 0xF)]);
    assert_eq!(vector::cycles(&steps), 12);
    assert_eq!(&m[..16], &[7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn act_after_ld_exact_cycles() {
    // One slot, L = 5, O = 2, D = 16, share of 64 bytes at 0.
    // X 27 li r4, X 29 li r6 (rows 1, n 32), X 31 ld: g = 32, 8 aligned
    // beats, e = 57 (as in st_with_misaligned_ends). Picked 58.
    // X 59 li r7 (rows 2, w 3), X 61 act r3, r7, 0, 16: s = 0, P = 16:
    //   words 0, 4, 8, 16, 20, 24; g = 62; 6 x (READ 2 + WRITE 1) = 18
    //   cycles, 63..80: e = 80. Picked 81.
    // X 82 act r3, r7, 0: P = 4w = 12: words 0, 4, .., 20; g = 83; 18
    //   cycles, 84..101: e = 101. Picked 102, X 103 end, completion 104.
    // Values: [-5, 7, 0, -1, MIN, MAX, 0x80000001, -3]; after the first:
    // [0, 7, 0, -1, 0, MAX, 0, -3] (words 12, 28 not in the tile); the
    // second reaches word 12 (-1 -> 0) but not 24, 28.
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r7, 0x20003\nact r3, r7, 0, 16\nact r3, r7, 0\nend";
    let mut r = setup(src, vec![block(0)], 64, 8, 5);
    r.memory.load(0x3000, &le(&[-5, 7, 0, -1, i32::MIN, i32::MAX, -0x7FFF_FFFF, -3]));
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 59, 61, 82, 103]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 104);
    assert_eq!(&f.smem[..32], &le(&[0, 7, 0, 0, 0, i32::MAX, 0, -3])[..]);
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 7, ld: 1, act: 2, loads: 1, rd_beats: 16 + 8, ..Counters::default() }
    );
    let v = io::output_json(&one_slot(), &r, &f.outcome);
    assert_eq!(v["trace"][4]["insn"], "act r3, r7, 0, 16");
    assert_eq!(v["trace"][5]["insn"], "act r3, r7, 0");
}

#[test]
fn cmp_then_exp_exact_cycles() {
    // One slot, L = 5, O = 2, share of 64 bytes. Memory 0x3000: 16 bytes
    // [0, 5, 0, 0, 7, 1, 0, 9, 3, 0, 0, 4, 0, 0x55, 0x66, 0x77], then 48
    // bytes of 0xEE.
    // X 27 li r4, X 29 li r6 (rows 1, n 64), X 31 ld: g = 32, 16 beats in
    // pairs: requests 33, 34, taken 38, 39; requests 39, 40, taken 44, 45;
    // .. the 8th pair taken 80, 81: e = 81. Picked 82.
    // X 83 li r1 (D 16), X 85 li r2 (Q 32), X 87 li r7 (0xABCD000D: n = 13,
    // the upper bits ignored), X 89 cmp r1, r3, r2, r7, 8 (S = r3 = 0):
    //   V = ceil(13/8) = 2. v0: [0,5,0,0,7,1,0,9]: mask 0xB2, count 4:
    //   packed 05 07 01 09, word 0 complete (W D). v1: [3,0,0,4,0] and
    //   elements 13..15 given as 0: mask 0b1001, count 2: 03 04 pending.
    //   Then W D+4 (2 bytes), W Q+4 (13 bits: 2 bytes, 0xB2 0x09), W Q (6).
    //   Steps 2+2+2+1 + 2+2+2 + 1+1+1 = 16: g = 90, 91..106, e = 106.
    // Picked 107. X 108 li r3 (48), X 110 exp r3, r1, r2, r7, 8: D = 48,
    //   S = 16, Q = 32, n = 13. v0: m 8, R Q+4 (bytes B2 09 EE EE: bits past
    //   13 are junk); c = 4: R S; O; W D, W D+4. v1: m = 5, 24 bits held;
    //   bits 8..12 = 0b01001, c = 2: R S+4; O; W D+8 (8 < 13), W D+12
    //   (12 < 13: byte 12 only). Steps 2+2+2+1+1 + 2+2+1+1 = 14: g = 111,
    //   112..125, e = 125. Picked 126, X 127 end, completion 128.
    let src = "li r4, 0x3000\nli r6, 0x10040\nld r3, r4, r5, r6\n\
               li r1, 16\nli r2, 32\nli r7, 0xABCD000D\ncmp r1, r3, r2, r7, 8\n\
               li r3, 48\nexp r3, r1, r2, r7, 8\nend";
    let mut r = setup(src, vec![block(0)], 64, 8, 5);
    let elems = [0u8, 5, 0, 0, 7, 1, 0, 9, 3, 0, 0, 4, 0, 0x55, 0x66, 0x77];
    r.memory.load(0x3000, &elems);
    r.memory.load(0x3010, &[0xEE; 48]);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 83, 85, 87, 89, 108, 110, 127]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 128);
    let e = 0xEE;
    assert_eq!(&f.smem[..16], &elems[..]);
    assert_eq!(&f.smem[16..24], &[5, 7, 1, 9, 3, 4, e, e]);
    assert_eq!(&f.smem[32..40], &[6, 0, 0, 0, 0xB2, 0x09, e, e]);
    assert_eq!(&f.smem[48..64], &[0, 5, 0, 0, 7, 1, 0, 9, 3, 0, 0, 4, 0, e, e, e]);
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 10, ld: 1, cmp: 1, exp: 1, loads: 1, rd_beats: 16 + 16, ..Counters::default() }
    );
    let v = io::output_json(&one_slot(), &r, &f.outcome);
    assert_eq!(v["trace"][6]["insn"], "cmp r1, r3, r2, r7, 8");
    assert_eq!(v["trace"][8]["insn"], "exp r3, r1, r2, r7, 8");
    assert_eq!(
        v["counters"],
        serde_json::json!({"instructions": 10, "cdl": 0, "ld": 1, "st": 0, "act": 0, "cmp": 1, "exp": 1,
                           "mma": 0, "tex": 0, "loads": 1, "rd_beats": 32, "wr_beats": 0, "texel_fetches": 0})
    );
}

#[test]
fn empty_vector_operations() {
    // act with rows = 0 (w = 5), exp with n = 0 (upper bits of rc set): done
    // in their start cycle g = 30 (X 29 joins): picked 31, X 32 end.
    for src in ["li r6, 0x0005\nact r3, r6, 0\nend", "li r6, 0x70000\nexp r3, r4, r5, r6, 32\nend"] {
        let o = go(&one_slot(), &setup(src, vec![block(0)], 64, 8, 5)).outcome;
        assert_eq!(x_cycles(&o), [27, 29, 32], "{src}");
        assert_eq!(o.counters.act + o.counters.exp, 1, "started, though empty");
    }
    // act with w = 0.
    let o = go(&one_slot(), &setup("li r6, 0x30000\nact r3, r6, 0\nend", vec![block(0)], 64, 8, 5)).outcome;
    assert_eq!(x_cycles(&o), [27, 29, 32]);
    // cmp with n = 0 is not empty: the count's WRITE in 31, e = 31: picked
    // 32, X 33 end; the count 0 at Q = 8.
    let src = "li r3, 0x3000\nli r6, 0x10010\nld r0, r3, r0, r6\nli r5, 8\ncmp r3, r4, r5, r0, 16\nend";
    // (The ld fills smem[0..16] with 0xEE first: X 27, 29, 31; g = 32, 4
    // beats taken 38, 39, 44, 45: e = 45; X 47 li, X 49 cmp, g = 50: W in
    // 51, e = 51; X 53 end.) D = 0x3000 is not checked for n = 0.
    let mut r = setup(src, vec![block(0)], 64, 8, 5);
    r.memory.load(0x3000, &[0xEE; 16]);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 47, 49, 53]);
    assert_eq!(&f.smem[..16], &[0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE]);
    assert_eq!(f.outcome.counters.cmp, 1);
}

#[test]
fn every_vector_error() {
    use Status::*;
    // status_of: 4 registers (r0 = x = 1), 64 bytes of share, D = 16.
    // field: act f = 1, act rb, act imm 15:8; cmp/exp size code 3, imm 31:16.
    assert_eq!(status_of(".word 0x0000000100020171"), (Field, 0));
    assert_eq!(status_of(".word 0x0000000001020171"), (Field, 0));
    assert_eq!(status_of(".word 0x0000010000020171"), (Field, 0));
    assert_eq!(status_of(".word 0x0000030003020172"), (Field, 0));
    assert_eq!(status_of(".word 0x0001000003020172"), (Field, 0));
    assert_eq!(status_of(".word 0x0000030003020173"), (Field, 0));
    assert_eq!(status_of(".word 0x8000000003020173"), (Field, 0));
    // field before reg: act r200, r200 with f = 1.
    assert_eq!(status_of(".word 0x0000000100c8c871"), (Field, 0));
    // reg: act's rd, ra; cmp's rc; exp's rb.
    assert_eq!(status_of("act r4, r0, 0"), (Reg, 0));
    assert_eq!(status_of("act r0, r4, 0"), (Reg, 0));
    assert_eq!(status_of("cmp r0, r1, r2, r4, 8"), (Reg, 0));
    assert_eq!(status_of("exp r0, r1, r5, r3, 16"), (Reg, 0));
    // pc before align (act at D-1 with s = r0 = 1); reg before pc.
    let pad = "li r3, 0\n".repeat(15);
    assert_eq!(status_of(&format!("{pad}act r0, r1, 0")), (Pc, 15));
    assert_eq!(status_of(&format!("{pad}act r9, r1, 0")), (Reg, 15));
    // align: act's s (r0 = 1), even with rows = w = 0 (r1 = 0); act's P = p.
    assert_eq!(status_of("act r0, r1, 0"), (Align, 0));
    assert_eq!(status_of("li r0, 0\nact r0, r1, 0, 6"), (Align, 1));
    assert_eq!(status_of("li r0, 0\nli r1, 0x10001\nact r0, r1, 0, 2"), (Align, 2));
    assert_eq!(status_of("li r0, 0\nli r1, 0x10003\nact r0, r1, 0, 12\nend"), (Ok, 3));
    // cmp/exp: D, S, Q each; also with n = 0.
    assert_eq!(status_of("li r1, 0\nli r2, 8\nli r3, 1\ncmp r0, r1, r2, r3, 8"), (Align, 3)); // D = 1
    assert_eq!(status_of("li r0, 0\nli r1, 2\nli r2, 8\ncmp r0, r1, r2, r3, 8"), (Align, 3)); // S = 2
    assert_eq!(status_of("li r1, 0\nli r2, 0\nexp r2, r1, r0, r3, 32"), (Align, 2)); // Q = 1
    assert_eq!(status_of("li r1, 0\nli r2, 0\nli r3, 0\nexp r0, r1, r2, r3, 8"), (Align, 3)); // n = 0, D = 1
    // smem, act: s + (rows-1)*P + 4w > 64.
    assert_eq!(status_of("li r0, 48\nli r1, 0x20003\nact r0, r1, 0, 4\nend"), (Ok, 3)); // 48 + 4 + 12 = 64
    assert_eq!(status_of("li r0, 52\nli r1, 0x20003\nact r0, r1, 0, 4"), (Smem, 2)); // 68
    assert_eq!(status_of("li r0, 40\nli r1, 0x20003\nact r0, r1, 0\nend"), (Ok, 3)); // P = 12: 64
    assert_eq!(status_of("li r0, 44\nli r1, 0x20003\nact r0, r1, 0"), (Smem, 2)); // 68
    assert_eq!(status_of("li r0, 0\nli r1, 0xFFFF\nact r0, r1, 0\nend"), (Ok, 3)); // rows = 0
    assert_eq!(status_of("li r0, -4\nli r1, 0x10001\nact r0, r1, 0"), (Smem, 2)); // no wrap
    // smem, cmp with n = 0: only Q + 4 (D, S far outside).
    let cmp0 = |qv: u32| format!("li r0, 0x10000\nli r1, 0x10000\nli r2, {qv}\nli r3, 0xFFFF0000\ncmp r0, r1, r2, r3, 32\nend");
    assert_eq!(status_of(&cmp0(60)), (Ok, 5));
    assert_eq!(status_of(&cmp0(64)), (Smem, 4));
    // smem, cmp reads S .. S + 8V: n = 3 bytes, V = 1: S = 56 fits, S = 60
    // does not (68), though the 3 bytes would; exp reads S + 4*ceil(3/4) =
    // 64 there: no error.
    let three = |op: &str, sv: u32| format!("li r0, 0\nli r1, {sv}\nli r2, 8\nli r3, 3\n{op} r0, r1, r2, r3, 8\nend");
    assert_eq!(status_of(&three("cmp", 56)), (Ok, 5));
    assert_eq!(status_of(&three("cmp", 60)), (Smem, 4));
    assert_eq!(status_of(&three("exp", 60)), (Ok, 5));
    // smem, D + n*z: n = 3 words of 32 bits: D = 52 fits, 56 does not, for
    // both (exp with S = 0: 12 bytes read; cmp with S = 0: V = 2, 16).
    let words = |op: &str, dv: u32| format!("li r0, {dv}\nli r1, 0\nli r2, 16\nli r3, 3\n{op} r0, r1, r2, r3, 32\nend");
    for op in ["cmp", "exp"] {
        assert_eq!(status_of(&words(op, 52)), (Ok, 5), "{op}");
        assert_eq!(status_of(&words(op, 56)), (Smem, 4), "{op}");
    }
    // smem, the mask words: n = 33 bytes: Q + 4 + 4*2 = Q + 12: Q = 52
    // fits, Q = 56 does not (S = D = 0: cmp reads 40, exp 36, writes 33).
    let mask = |op: &str, qv: u32| format!("li r0, 0\nli r1, 0\nli r2, {qv}\nli r3, 33\n{op} r0, r1, r2, r3, 8\nend");
    for op in ["cmp", "exp"] {
        assert_eq!(status_of(&mask(op, 52)), (Ok, 5), "{op}");
        assert_eq!(status_of(&mask(op, 56)), (Smem, 4), "{op}");
    }
    // smem, exp reads S + 4*ceil(33/4) = S + 36: S = 28 fits, 32 does not.
    let exps = |sv: u32| format!("li r0, 0\nli r1, {sv}\nli r2, 0\nli r3, 33\nexp r0, r1, r2, r3, 8\nend");
    assert_eq!(status_of(&exps(28)), (Ok, 5));
    assert_eq!(status_of(&exps(32)), (Smem, 4));
    // exp with n = 0: nothing checked but alignment.
    assert_eq!(status_of("li r0, 0x1000\nli r1, 0x1000\nli r2, 0x1000\nli r3, 0\nexp r0, r1, r2, r3, 8\nend"), (Ok, 5));
    // No wrap: D = 2^32 - 4, n = 1.
    assert_eq!(status_of("li r0, -4\nli r1, 0\nli r2, 8\nli r3, 1\ncmp r0, r1, r2, r3, 8"), (Smem, 4));
}

#[test]
fn act_queued_behind_an_ld_of_another_slot() {
    // Two slots, L = 1, O = 2, 8 registers and 128 bytes a share (R = 2).
    //   0: li r6, 0x10080   1: li r4, 0x3000   2: bnz r0, 5
    //   3: ld r3, r4, r5, r6   4: end
    //   5: li r7, 0x10002   6: act r3, r7, 0   7: end
    // d0 = 6, d1 = 7. Load 0: request 7, beats 8..23; slot 0 picked from
    // 24. Load 1: request 24, beats 25..40; slot 1 picked from 41.
    // Slot 0: X 25, 27, 29 (bnz, x = 0: not taken), 31 ld: g = 32, 32
    // aligned beats at L = 1: requested 33 + k, taken 34 + k: e = 65.
    // Slot 1 (alone from 41): X 42, 44, 46 (bnz taken), 48 li, 50 act: it
    // joins at the end of 50 but the ld is in progress until 65: g = 66;
    // 2 words x 3 cycles, 67..72: e = 72; picked 73, X 74 end, completion
    // 75. Slot 0: picked 66, X 67 end, completion 68.
    // (Alone, the act would start in 51.)
    let src = "li r6, 0x10080\nli r4, 0x3000\nbnz r0, 5\nld r3, r4, r5, r6\nend\n\
               li r7, 0x10002\nact r3, r7, 0\nend";
    let r = setup(src, vec![block(0), block(1)], 128, 8, 1);
    let o = go(&two_slots(), &r).outcome;
    assert_eq!(
        xs(&o),
        [(25, 0, 0), (27, 0, 1), (29, 0, 2), (31, 0, 3), (42, 1, 0), (44, 1, 1), (46, 1, 2), (48, 1, 5), (50, 1, 6), (67, 0, 4), (74, 1, 7)]
    );
    let got: Vec<_> = o.blocks.iter().map(|b| (b.share, b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(0, 6, 68), (1, 7, 75)]);
    assert_eq!(o.cycles, 69);
    assert_eq!((o.counters.ld, o.counters.act), (1, 1));
}

#[test]
fn cmp_queued_behind_an_ld_of_another_slot() {
    // Two slots, L = 1, O = 2, 8 registers and 128 bytes a share.
    //   0: li r4, 0x3000   1: li r6, 0x10008   2: bnz r0, 8
    //   3: li r6, 0x10080  4: li r2, 11   5: loop r2, 5
    //   6: ld r3, r4, r5, r6   7: end
    //   8: li r1, 16   9: li r2, 32   10: li r7, 8
    //   11: ld r3, r4, r5, r6   12: cmp r1, r3, r2, r7, 8   13: end
    // Loads as above: slot 0 picked from 24, slot 1 from 41; then they
    // alternate, slot 0 executing in odd cycles, slot 1 in even ones.
    // Slot 0: X 25, 27, 29 (bnz not taken), 31, 33, loop 35 .. 55 (11
    //   times), X 57 ld (128 bytes) joins at the end of 57.
    // Slot 1: X 42, 44, 46 (bnz taken), 48, 50, 52, 54 ld (8 bytes): g =
    //   55, requests 56, 57, beats taken 57, 58: e = 58.
    // Slot 0's ld starts in 59: 32 beats taken 61 .. 92: e = 92.
    // Slot 1 picked 59, X 60 cmp: joins at the end of 60, behind the ld:
    //   g = 93. n = 8 bytes [0, 5, 0, 0, 7, 1, 0, 9], V = 1: R, R, O, W D
    //   (05 07 01 09), W Q+4 (8 bits: 1 byte, 0xB2), W Q (4): 9 cycles,
    //   94..102: e = 102. Picked 103, X 104 end, completion 105.
    // Slot 0: picked 93, X 94 end, completion 95.
    let src = "li r4, 0x3000\nli r6, 0x10008\nbnz r0, 8\n\
               li r6, 0x10080\nli r2, 11\nloop r2, 5\nld r3, r4, r5, r6\nend\n\
               li r1, 16\nli r2, 32\nli r7, 8\nld r3, r4, r5, r6\ncmp r1, r3, r2, r7, 8\nend";
    let mut r = setup(src, vec![block(0), block(1)], 128, 8, 1);
    r.memory.load(0x3000, &[0, 5, 0, 0, 7, 1, 0, 9]);
    let f = go(&two_slots(), &r);
    let o = &f.outcome;
    let slot0: Vec<u64> = o.trace.iter().filter(|t| t.slot == 0).map(|t| t.cycle).collect();
    let slot1: Vec<(u64, u32)> = o.trace.iter().filter(|t| t.slot == 1).map(|t| (t.cycle, t.pc)).collect();
    let mut want0: Vec<u64> = (0..16).map(|i| 25 + 2 * i).collect(); // 25 .. 55
    want0.extend([57, 94]);
    assert_eq!(slot0, want0);
    assert_eq!(slot1, [(42, 0), (44, 1), (46, 2), (48, 8), (50, 9), (52, 10), (54, 11), (60, 12), (104, 13)]);
    let got: Vec<_> = o.blocks.iter().map(|b| (b.dispatch_cycle, b.complete_cycle)).collect();
    assert_eq!(got, [(6, 95), (7, 105)]);
    // Share 1 (scratchpad bytes 128..): the packed word at D = 16, the count
    // at Q = 32 and the mask byte at Q + 4.
    assert_eq!(&f.smem[128 + 16..128 + 20], &[5, 7, 1, 9]);
    assert_eq!(&f.smem[128 + 32..128 + 37], &[4, 0, 0, 0, 0xB2]);
    assert_eq!(
        o.counters,
        Counters { instructions: 27, ld: 2, cmp: 1, loads: 2, rd_beats: 32 + 32 + 2, ..Counters::default() }
    );
}

// ---- mma ----
//
// docs/cu.md, "`mma`", "The scratchpad" and "Matrix multiply". Below
// `rd2(x)` / `rd3(x)` / `rd4(x)` is a read of share offset x taken on that
// port, `wr2(x)` a write. The times of a tile (the spec's, 8e84419): F_t =
// its last A/B read + 1, S_t = max(F_t, E_{t-1}, W_{t-2}) + 2 (missing
// terms 0); the grid's loader (docs/systolic.md) played over the whole
// stream of groups in the unit's cycles: tile t's first group taken by the
// loader in S_t + 1 (held from S_t + 2), each later one whenever it is
// ready; E_t its tile-ending step's issue (not while the previous tile is
// in flight: E_{t-1} + 1 .. X_{t-1} - 1); row r ready from E_t + r + C + 1
// + P (P = 2), transferred at the earliest cycle >= ready + 1 after the row
// before it (the previous tile's row R-1 for r = 0); X_t row R-1's; W_t
// its last write; e = max(X, W) of the last tile; row block b >= 2 read
// from E_{L_{b-2}} + 1, tile t >= 2 from E_{t-2} + 1; a read of row block
// b >= 1 not offered in a cycle rd3 offers one of the same bank (4cf197a).
// For a tile of n <= 4 useful steps in one group, not stalled: steps issue
// in S + 2 .. S + 1 + n, E = S + 1 + n (a null step: E = S + 2), row r
// transferred in E + r + C + P + 2.

use isa::C0;
use mma::Access::{Read as Rd, Write as Wr};
use std::collections::HashMap;

/// `one_slot` with the grid, the banks (of 1024 words) and `kmax` given.
fn grid_params(rows: u32, cols: u32, banks: u32, kmax: u32) -> CuParams {
    CuParams { grid_rows: rows, grid_cols: cols, banks, words: 1024, kmax, ..one_slot() }
}

/// An `mma` of the share at `base` (no `C0`, no pads).
#[allow(clippy::too_many_arguments)]
fn mop(base: u32, co: u32, ao: u32, bo: u32, tm: u32, tn: u32, k: u32) -> mma::Op {
    mma::Op { slot: 0, joined: 0, smem_base: base, co, ao, bo, tm, tn, k, c0: C0::Zero, qa: 0, qb: 0, skip: false }
}

/// The pitches from the definition: `PA = 4*ceil(K/4) + 4*qa`, `PB =
/// 8*ceil(TN/8) + 4*qb`.
fn pitches(op: &mma::Op) -> (u32, u32) {
    (4 * op.k.div_ceil(4) + 4 * op.qa, 8 * op.tn.div_ceil(8) + 4 * op.qb)
}

/// The used k-steps from the definition: all of `0 .. K` without `skip`;
/// with it, those whose bit `k mod 32` of the word at `Bo - 4*nk +
/// 4*floor(k/32)` (`nk = ceil(K/32)`) of `m` (the whole scratchpad) is 0.
fn spec_used(m: &[u8], op: &mma::Op) -> Vec<u32> {
    let nk = op.k.div_ceil(32);
    let word = |at: u32| {
        let at = (op.smem_base + at) as usize;
        u32::from_le_bytes(m[at..at + 4].try_into().unwrap())
    };
    (0..op.k).filter(|&k| !op.skip || word(op.bo - 4 * nk + 4 * (k / 32)) >> (k % 32) & 1 == 0).collect()
}

/// `C = A . B + C0` from the definition, on the scratchpad `m` as it is
/// (before the operation), the sum over the used k-steps only: `A` row `i` at `Ao + i*PA`, `B` row `k` at `Bo +
/// k*PB`, int8 products; `C0` zero, `C`'s own words, or the bias row at `o`
/// for every row; wrapped to 32 bits; the little-endian bytes of `C`'s rows.
fn mma_reference(m: &[u8], op: &mma::Op) -> Vec<u8> {
    let (pa, pb) = pitches(op);
    let base = op.smem_base as usize;
    let a = |i: usize, k: usize| m[base + op.ao as usize + i * pa as usize + k] as i8 as i32;
    let b = |k: usize, n: usize| m[base + op.bo as usize + k * pb as usize + n] as i8 as i32;
    let word = |at: usize| i32::from_le_bytes(m[base + at..base + at + 4].try_into().unwrap());
    let mut out = Vec::new();
    for i in 0..op.tm as usize {
        for n in 0..op.tn as usize {
            let c0 = match op.c0 {
                C0::Zero => 0,
                C0::Acc => word(op.co as usize + 4 * (i * op.tn as usize + n)),
                C0::Bias(o) => word(o as usize + 4 * n),
            };
            let c = spec_used(m, op).iter().fold(c0, |s, &k| s.wrapping_add(a(i, k as usize).wrapping_mul(b(k as usize, n))));
            out.extend(c.to_le_bytes());
        }
    }
    out
}

/// Deterministic bytes, every value -128..127 likely.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// What a read of `rd2`/`rd3` belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// A word of the k-map (`skip`), on `rd3` first.
    Map,
    /// An `A` word of row block `b` (rd2).
    A(usize),
    /// A `B` word of tile `t` (rd3).
    B(usize),
}

/// The spec's read orders of `op` (not empty) on a grid of `r` x `c` on
/// `rd2` and `rd3` (docs/cu.md "Matrix multiply"), the used steps `used`:
/// per port, (what the read belongs to, share offset) in order. rd2: per
/// row block, per needed word column `x` (one of `4x .. 4x+3` used), per
/// row; rd3: the k-map's `nk` words (with `skip`), then per tile, per used
/// step, `ceil(C/4)` words.
fn spec_reads(op: &mma::Op, r: u32, c: u32, used: &[u32]) -> [Vec<(Part, u32)>; 2] {
    let (nr, nc) = (op.tm.div_ceil(r), op.tn.div_ceil(c));
    let (pa, pb) = pitches(op);
    let mut out = [Vec::new(), Vec::new()];
    if op.skip {
        let nk = op.k.div_ceil(32);
        for m in 0..nk {
            out[1].push((Part::Map, op.bo - 4 * nk + 4 * m));
        }
    }
    let needed: Vec<u32> = (0..op.k.div_ceil(4)).filter(|x| used.iter().any(|k| k / 4 == *x)).collect();
    for b in 0..nr {
        let h = r.min(op.tm - b * r);
        for &x in &needed {
            for i in 0..h {
                out[0].push((Part::A(b as usize), op.ao + (b * r + i) * pa + 4 * x));
            }
        }
        for cb in 0..nc {
            let t = (b * nc + cb) as usize;
            for &k in used {
                for hh in 0..c.div_ceil(4) {
                    out[1].push((Part::B(t), op.bo + k * pb + 4 * (cb * c / 4) + 4 * hh));
                }
            }
        }
    }
    out
}

/// A word of `C` in the spec's write order.
#[derive(Clone, Copy, Debug)]
struct SpecWord {
    tile: usize,
    /// Its row in the tile.
    row: u32,
    at: u32,
    /// Where its `C0` is read on `rd4` (modes 1, 2).
    c0_at: Option<u32>,
}

/// The spec's `C` words of `op` in order (rows of a tile, words of a row,
/// tiles in order).
fn spec_words(op: &mma::Op, r: u32, c: u32) -> Vec<SpecWord> {
    let (nr, nc) = (op.tm.div_ceil(r), op.tn.div_ceil(c));
    let mut out = Vec::new();
    for b in 0..nr {
        for cb in 0..nc {
            let (h, w) = (r.min(op.tm - b * r), c.min(op.tn - cb * c));
            for row in 0..h {
                for n in 0..w {
                    let at = op.co + (b * r + row) * 4 * op.tn + 4 * (cb * c + n);
                    let c0_at = match op.c0 {
                        C0::Zero => None,
                        C0::Acc => Some(at),
                        C0::Bias(o) => Some(o + 4 * (cb * c + n)),
                    };
                    out.push(SpecWord { tile: (b * nc + cb) as usize, row, at, c0_at });
                }
            }
        }
    }
    out
}

/// Runs `op` from `g` on `m` and checks what the spec says of any run
/// against the log of accesses:
/// - the read orders of rd2, rd3 (the k-map first with `skip`) and rd4 and
///   the write order;
/// - M = the k-map's last read + 1 (g without skip); the tile times: F_t =
///   max(its row block's last A read + 1, its last B read + 1, M) (a
///   missing read: g), S_t = max(F_t, E_{t-1}, W_{t-2}) + 2, E_t >= S_t +
///   2 and (in-flight rule) >= X_{t-1}, X_t = max(E_t + R - 1 + C + 1 +
///   P + 1, X_{t-1} + R) (rows one a cycle through the output register),
///   X_t = S_t + cyc when X_{t-1} < S_t, W_t, e = max(X, W) of the last
///   tile;
/// - mode 0: each write in max(previous write + 1, its row's transfer + 1);
///   modes 1, 2: each write in the cycle after its C0 read;
/// - cycle by cycle from g + 1, the reads taken are exactly those the
///   scratchpad's rule takes of the reads asking: rd3 its next k-map read;
///   after M, rd2 its next read if its row block b is < 2 or the cycle is
///   after E of row block b-2's last tile (and, for b >= 1 in a cycle up
///   to E of tile b*nc - 2, none when b*nc < 2, rd3 offers no read of the
///   same bank in the cycle), and rd3 its next B read if its
///   tile is < 2 or the cycle is after E_{t-2}; rd4 its next word's
///   C0 read from the cycle after the previous one was taken and after its
///   row's transfer; not a read of the word written in the cycle; per bank
///   the lowest port above the bank's last read's port (none: rd4), else
///   the lowest (the banks' history replayed from `banks` as given);
/// - `banks` ends with the replayed history.
fn mma_checked(p: &CuParams, op: &mma::Op, g: u64, m: &mut [u8], banks: &mut Banks) -> mma::Outcome {
    let before = banks.clone();
    let used = spec_used(m, op);
    let out = mma::run(p, op, g, m, banks, true);
    let (r, c) = (p.grid_rows, p.grid_cols);
    let reads = spec_reads(op, r, c, &used);
    let words = spec_words(op, r, c);
    let nb = p.banks as u64;
    let bank_row = |at: u32| {
        let w = (op.smem_base + at) as u64 / 4;
        ((w % nb) as u32, w / nb)
    };
    // The log: reads per port (rd2, rd3, rd4) with their cycles, writes.
    let mut got: [Vec<(u64, u32)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut writes: Vec<(u64, u32)> = Vec::new();
    let mut by_cycle: HashMap<u64, Vec<(u8, u32)>> = HashMap::new();
    let mut prev_cycle = 0;
    for a in &out.accesses {
        match *a {
            Rd { cycle, port, at } => {
                assert!((RD2..=RD4).contains(&port));
                got[(port - RD2) as usize].push((cycle, at));
                by_cycle.entry(cycle).or_default().push((port, at));
                assert!(cycle >= prev_cycle);
                prev_cycle = cycle;
            }
            Wr { cycle, at, .. } => {
                writes.push((cycle, at));
                assert!(cycle >= prev_cycle);
                prev_cycle = cycle;
            }
        }
    }
    // Orders.
    for port in 0..2 {
        let at: Vec<u32> = got[port].iter().map(|x| x.1).collect();
        let w: Vec<u32> = reads[port].iter().map(|x| x.1).collect();
        assert_eq!(at, w, "rd{} order", port + 2);
    }
    let c0_want: Vec<u32> = words.iter().filter_map(|w| w.c0_at).collect();
    assert_eq!(got[2].iter().map(|x| x.1).collect::<Vec<_>>(), c0_want, "rd4 order");
    assert_eq!(writes.iter().map(|x| x.1).collect::<Vec<_>>(), words.iter().map(|w| w.at).collect::<Vec<_>>(), "write order");
    for port in &got {
        assert!(port.windows(2).all(|x| x[0].0 < x[1].0), "one read a cycle on a port");
        assert!(port.iter().all(|x| x.0 > g));
    }
    // Tiles.
    let (nr, nc) = (op.tm.div_ceil(r), op.tn.div_ceil(c));
    let n = (nr * nc) as usize;
    assert_eq!(out.tiles.len(), n);
    // The cycle the last word of a part is taken (its read + 1), g if none.
    let taken_of = |part: Part| {
        (0..2)
            .flat_map(|port| got[port].iter().zip(&reads[port]).filter(move |(_, w)| w.0 == part).map(|(x, _)| x.0 + 1))
            .max()
            .unwrap_or(g)
    };
    let m_cycle = taken_of(Part::Map);
    assert_eq!(out.m, m_cycle, "M");
    let pipe = p.grid().pipeline as u64;
    for (t, tt) in out.tiles.iter().enumerate() {
        let f = taken_of(Part::A(t / nc as usize)).max(taken_of(Part::B(t))).max(m_cycle);
        assert_eq!(tt.f, f, "F_{t}");
        let e_prev = if t >= 1 { out.tiles[t - 1].e } else { 0 };
        let w_prev2 = if t >= 2 { out.tiles[t - 2].w } else { 0 };
        assert_eq!(tt.s, tt.f.max(e_prev).max(w_prev2) + 2, "S_{t}");
        // The loader takes the first group in S + 1 and holds it from S + 2:
        // the tile-ending step issues from S + 2, and (the in-flight rule)
        // not before the previous tile's row R-1 left. Row r is ready from
        // E + r + C + 1 + P and transferred after it and after the row
        // before it (the previous tile's row R-1 for r = 0).
        assert!(tt.e >= tt.s + 2, "E_{t}");
        let x_prev = if t >= 1 { Some(out.tiles[t - 1].x) } else { None };
        if let Some(xp) = x_prev {
            assert!(tt.e >= xp, "E_{t}: in flight");
        }
        let last_ready = tt.e + (r as u64 - 1) + c as u64 + 1 + pipe;
        assert_eq!(tt.x, (last_ready + 1).max(x_prev.map_or(0, |xp| xp + r as u64)), "X_{t}");
        // docs/cu.md: X_t = S_t + cyc when the previous tile's row R-1 left
        // before S_t.
        if x_prev.is_none_or(|xp| xp < tt.s) {
            assert_eq!(tt.x, tt.s + tt.cyc, "X_{t} alone");
        }
        let last_write = writes.iter().zip(&words).filter(|(_, w)| w.tile == t).map(|(x, _)| x.0).max().unwrap();
        assert_eq!(tt.w, last_write, "W_{t}");
    }
    let last = out.tiles[n - 1];
    assert_eq!(out.done, last.x.max(last.w), "e");
    // Writes.
    // Rows go out one a cycle (the ready cycles of a tile's rows are
    // consecutive): row r in X_t - (R-1) + r.
    let xfer = |w: &SpecWord| {
        let tt = out.tiles[w.tile];
        tt.x + 1 + w.row as u64 - r as u64
    };
    for (k, w) in words.iter().enumerate() {
        let cycle = writes[k].0;
        if op.c0 == C0::Zero {
            let earliest = if k == 0 { xfer(w) + 1 } else { (writes[k - 1].0 + 1).max(xfer(w) + 1) };
            assert_eq!(cycle, earliest, "write {k}");
        } else {
            assert_eq!(cycle, got[2][k].0 + 1, "write {k} after its C0 read");
        }
    }
    // The arbitration, cycle by cycle.
    let write_at: HashMap<u64, u32> = writes.iter().copied().collect();
    assert_eq!(write_at.len(), writes.len(), "one write a cycle");
    let mut last: Vec<Option<u8>> = (0..p.banks).map(|b| before.last(b)).collect();
    let mut ptr = [0usize; 3];
    let mut last_rd4: Option<u64> = None;
    let end = out.accesses.iter().map(|a| match *a {
        Rd { cycle, .. } | Wr { cycle, .. } => cycle,
    });
    let end = end.max().unwrap();
    for cy in g + 1..=end {
        let written = write_at.get(&cy).map(|&at| bank_row(at));
        let mut asking: Vec<(u8, u32)> = Vec::new();
        // rd3 first: its offer (map or B) decides whether rd2 (row block
        // b >= 1) offers a read of the same bank.
        for port in [1, 0] {
            if let Some(&(part, at)) = reads[port].get(ptr[port]) {
                let free = match part {
                    Part::Map => true,
                    Part::A(b) => cy > m_cycle && (b < 2 || cy > out.tiles[(b - 1) * nc as usize - 1].e),
                    Part::B(t) => cy > m_cycle && (t < 2 || cy > out.tiles[t - 2].e),
                };
                // docs/cu.md 7ef95d1: row block b yields only in cycles up
                // to E of tile b*nc - 2 (so never when b*nc < 2).
                let early = match part {
                    Part::A(b) => b * nc as usize >= 2 && cy <= out.tiles[b * nc as usize - 2].e,
                    _ => false,
                };
                let yields = early && asking.iter().any(|&(q, x)| q == RD3 && bank_row(x).0 == bank_row(at).0);
                if free && !yields {
                    asking.push((RD2 + port as u8, at));
                }
            }
        }
        asking.sort_by_key(|x| x.0);
        if op.c0 != C0::Zero {
            if let Some(w) = words.get(ptr[2]) {
                if cy > xfer(w) && last_rd4.is_none_or(|l| cy > l) {
                    asking.push((RD4, w.c0_at.unwrap()));
                }
            }
        }
        asking.retain(|&(_, at)| Some(bank_row(at)) != written);
        let mut want: Vec<(u8, u32)> = Vec::new();
        for &(port, at) in &asking {
            let bank = bank_row(at).0;
            let rivals: Vec<u8> = asking.iter().filter(|x| bank_row(x.1).0 == bank).map(|x| x.0).collect();
            let prev = last[bank as usize].unwrap_or(RD4);
            let winner = rivals.iter().copied().filter(|&q| q > prev).min().unwrap_or(*rivals.iter().min().unwrap());
            if winner == port {
                want.push((port, at));
            }
        }
        let taken = by_cycle.get(&cy).cloned().unwrap_or_default();
        assert_eq!(taken, want, "reads taken in {cy}");
        for &(port, at) in &want {
            last[bank_row(at).0 as usize] = Some(port);
            ptr[(port - RD2) as usize] += 1;
            if port == RD4 {
                last_rd4 = Some(cy);
            }
        }
    }
    assert_eq!(ptr, [reads[0].len(), reads[1].len(), c0_want.len()]);
    assert_eq!((0..p.banks).map(|b| banks.last(b)).collect::<Vec<_>>(), last, "the banks' last reads");
    out
}

#[test]
fn mma_values_against_the_definition() {
    // (grid rows, cols, banks, kmax), (TM, TN, K): K and the sizes not
    // multiples of the grid, K = 1, TM = TN = 1, K = kmax, one tile, many;
    // each with every C0 mode and with pads (qa, qb) from the case number,
    // the pad words and everything outside A, B, C and the bias row noise.
    type Case = ((u32, u32, u32, u32), (u32, u32, u32));
    let cases: [Case; 14] = [
        ((2, 2, 1, 16), (2, 2, 4)),
        ((2, 2, 1, 16), (3, 5, 7)),
        ((2, 2, 1, 16), (1, 1, 1)),
        ((2, 2, 1, 16), (5, 3, 16)),
        ((2, 2, 2, 16), (4, 9, 1)),
        ((4, 4, 4, 256), (7, 10, 13)),
        ((4, 4, 4, 256), (1, 1, 256)),
        ((3, 8, 8, 64), (5, 17, 9)),
        ((1, 1, 2, 8), (2, 3, 5)),
        ((1, 1, 4, 8), (3, 1, 8)),
        ((8, 8, 4, 64), (9, 9, 33)),
        ((8, 1, 8, 32), (17, 2, 6)),
        ((5, 2, 4, 16), (11, 3, 15)),
        ((4, 8, 8, 1024), (4, 8, 1024)),
    ];
    for (i, &((r, c, banks, kmax), (tm, tn, k))) in cases.iter().enumerate() {
        let p = grid_params(r, c, banks, kmax);
        let iu = i as u32;
        let variants = [(0u32, (0u32, 0u32)), (1, (iu % 4, 0)), (2, (0, iu % 4)), (0, (3 - iu % 4, (iu + 1) % 4)), (1, (1, 3)), (2, (2, 1))];
        for (mode, (qa, qb)) in variants {
            let base = 64 * (i as u32 % 3);
            let pa = 4 * k.div_ceil(4) + 4 * qa;
            let pb = 8 * tn.div_ceil(8) + 4 * qb;
            let (ao, bo) = (4 * (i as u32 % 2), 4 * (i as u32 % 2) + tm * pa + 8);
            let co = bo + k * pb + 4;
            let o = co + 4 * tm * tn + 4 * (i as u32 % 3);
            let c0 = [C0::Zero, C0::Acc, C0::Bias(o)][mode as usize];
            let size = p.smem_bytes() as usize;
            assert!((base + o + 4 * tn) as usize <= size, "case {i}");
            let mut m = noise(size, i as u64 + 1 + 100 * mode as u64);
            let op = mma::Op { c0, qa, qb, ..mop(base, co, ao, bo, tm, tn, k) };
            assert_eq!((op.pa(), op.pb()), (pa as u64, pb as u64));
            let rc = tm | tn << 8 | k << 16;
            assert_eq!(mma::check(kmax, size as u32 - base, &mma::Op::of(co, ao, bo, rc, c0, qa, qb)), Ok(()), "case {i}");
            let want = mma_reference(&m, &op);
            let before = m.clone();
            let mut banks = Banks::new(banks);
            let out = mma_checked(&p, &op, 1000, &mut m, &mut banks);
            let (lo, hi) = ((base + co) as usize, (base + co + 4 * tm * tn) as usize);
            assert_eq!(&m[lo..hi], &want[..], "case {i} {c0:?} pads {qa} {qb}: C");
            assert_eq!(&m[..lo], &before[..lo], "case {i}: bytes before C");
            assert_eq!(&m[hi..], &before[hi..], "case {i}: bytes after C");
            assert!(out.done > 1000);
        }
    }
}

#[test]
fn mma_values_with_zero_steps_and_extremes() {
    // -128 x -128 products, all-zero k-steps (skipped by the grid's load
    // filter: fewer grid cycles, the same reads) and all-zero tiles.
    let p = grid_params(2, 2, 1, 16);
    let (tm, tn, k) = (3u32, 3u32, 9u32);
    let op = mop(0, 200, 0, 64, tm, tn, k);
    let mut m = vec![0u8; 256];
    for i in 0..tm as usize {
        for kk in 0..k as usize {
            m[i * 12 + kk] = if kk % 3 == 1 { 0 } else { 0x80 }; // -128, or 0 in steps 1, 4, 7
        }
    }
    for kk in 0..k as usize {
        for n in 0..tn as usize {
            m[64 + kk * 8 + n] = if n == 2 { 0 } else { 0x80 }; // column 2 zero
        }
    }
    let want = mma_reference(&m, &op);
    // 6 non-zero steps of 16384 each; column 2 zero.
    assert_eq!(&want[..12], &le(&[6 * 16384, 6 * 16384, 0])[..]);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(1));
    assert_eq!(&m[200..236], &want[..]);
    // Tile 1 (rows 0, 1; column 2 only: every B slice zero) has no useful
    // step: its grid cycles are fewer than tile 0's.
    assert!(out.tiles[1].cyc < out.tiles[0].cyc, "{:?}", out.tiles);
}

#[test]
fn mma_c0_wraps_to_32_bits() {
    // 1 x 2 x 1 on a 2 x 2 grid: A = [[-128]], B = [[-128, 127]]: products
    // 16384 and -16256. acc: C = [i32::MAX, i32::MIN] before: wraps to
    // [i32::MIN + 16383, i32::MAX - 16255]. bias (row at 32): the same.
    let p = grid_params(2, 2, 1, 16);
    for c0 in [C0::Acc, C0::Bias(32)] {
        let mut m = vec![0u8; 64];
        m[0] = 0x80;
        m[8] = 0x80;
        m[9] = 127;
        let at = if c0 == C0::Acc { 16 } else { 32 };
        m[at..at + 8].copy_from_slice(&le(&[i32::MAX, i32::MIN]));
        let op = mma::Op { c0, ..mop(0, 16, 0, 8, 1, 2, 1) };
        mma_checked(&p, &op, 0, &mut m, &mut Banks::new(1));
        assert_eq!(&m[16..24], &le(&[i32::MIN + 16383, i32::MAX - 16255])[..], "{c0:?}");
    }
}

#[test]
fn mma_pads_move_the_rows() {
    // Grid 2 x 2, two banks, g = 0: TM = 2, K = 3, qa = 2: PA = 4*1 + 8 = 12
    // (A's rows at 0 and 12; bytes 3..11 of each row are padding); TN = 2,
    // qb = 1: PB = 8 + 4 = 12 (B's rows at 24, 36, 48; bytes 2..11
    // padding). rd2 reads 0, 12; rd3 reads 24, 36, 48. Padding bytes are
    // 0x7F (never used). C at 60.
    let p = grid_params(2, 2, 2, 16);
    let mut m = vec![0x7Fu8; 128];
    m[0..3].copy_from_slice(&[1, 2, 3]);
    m[12..15].copy_from_slice(&[-1i8 as u8, 0, 2]);
    m[24..26].copy_from_slice(&[1, 10]);
    m[36..38].copy_from_slice(&[2, 20]);
    m[48..50].copy_from_slice(&[3, 30]);
    let op = mma::Op { qa: 2, qb: 1, ..mop(0, 60, 0, 24, 2, 2, 3) };
    assert_eq!(
        spec_reads(&op, 2, 2, &[0, 1, 2]),
        [vec![(Part::A(0), 0), (Part::A(0), 12)], vec![(Part::B(0), 24), (Part::B(0), 36), (Part::B(0), 48)]]
    );
    mma_checked(&p, &op, 0, &mut m, &mut Banks::new(2));
    // C[0] = [1 + 4 + 9, 10 + 40 + 90], C[1] = [-1 + 0 + 6, -10 + 0 + 60].
    assert_eq!(&m[60..76], &le(&[14, 140, 5, 50])[..]);
    // The same bytes read with qa = qb = 0 would take the pads as rows.
    let mut m2 = m.clone();
    let op0 = mop(0, 60, 0, 24, 2, 2, 3);
    mma_checked(&p, &op0, 0, &mut m2, &mut Banks::new(2));
    assert_ne!(&m2[60..76], &m[60..76]);
}

#[test]
fn mma_exact_cycles_on_the_small_preset() {
    // The `small` preset: one slot, D = 16, one bank, O = 1, grid 2 x 2,
    // kmax 16; L = 5, a share of 64 bytes at 0, block (0, 0, 0).
    //   0: li r4, 0x3000     1: li r6, 0x10028 (rows 1, n 40)
    //   2: ld r3, r4, r5, r6 (s = 0, stride 0)
    //   3: li r7, 8 (Bo)     4: li r8, 40 (Co)   5: li r9, 0x40202 (K 4, TN 2, TM 2)
    //   6: mma r8, r3, r7, r9 (Ao = r3 = 0)      7: end
    // Load: request 5, beats 10..25; X 27, 29, 31 (ld): g = 32. O = 1: beat
    //   k requested in 33 + 6k (nothing in flight at the end of the previous
    //   cycle), taken (word k written, aligned) in 38 + 6k; beat 9 in 92:
    //   e = 92. Picked 93: X 94, 96, 98, X 100 mma: joins at the end of 100,
    //   g = 101.
    // mma: PA = 4*ceil(4/4) = 4, PB = 8*ceil(2/8) = 8; smem: A 0 + 2*4 = 8,
    //   B 8 + 4*8 = 40, C 40 + 4*2*2 = 56, all <= 64. nr = nc = 1: one tile,
    //   h = w = 2, q = 1 group of 4 k-steps. rd2: group 0, rows 0, 1:
    //   offsets 0, 4 (words 0, 1). rd3: k = 0..3, ceil(2/4) = 1 word each:
    //   8, 16, 24, 32. One bank: every read is in bank 0; the ld took no
    //   read, so bank 0 has taken none since reset (counts as rd5's):
    //   102 both ask; no port above rd4: the lowest, rd2(0)
    //   103 last rd2: rd3(8)
    //   104 last rd3: rd2(4) (rd4 is not asking); rd2 has no read left
    //   105 rd3(16)   106 rd3(24)   107 rd3(32): F_0 = 108.
    //   S_0 = max(108, X_{-1} = 0, W_{-2} = 0) + 2 = 110.
    // cyc (docs/systolic.md, 2 x 2, pipeline 2, group 4, one tile of one
    //   group, every step useful): the unit accepts the group in S; the
    //   loader takes it in S + 1, holds it from S + 2 and issues steps 0..3
    //   in S + 2 .. S + 5; step 3 is tile-ending (s = S + 5, no earlier tile
    //   in flight). Row r ready from s + r + C + 1 + P = S + 10 + r,
    //   transferred in S + 11 + r; cycles = (S + 12) - S = 12.
    //   In the unit's cycles (8e84419: the loader played over the stream,
    //   taking tile 0's group in S_0 + 1): E_0 = S_0 + 5 = 115, row r
    //   transferred in 121 + r: X_0 = 122 (= S_0 + cyc).
    // Writes (mode 0): row 0 words 0, 1 in 122, 123 (after its transfer in
    //   121); row 1 (transferred 122) in 124, 125: W_0 = 125; e = max(122,
    //   125) = 125.
    // Picked 126, X 127 end, completion 128.
    // (The spec revision of a627405 made S_t = max(F_t, W_{t-1}) + 2, where
    // this test had + 1: everything after F one cycle later than it had.)
    use gpurtl_params::BlockParams;
    let p = CuParams::presets().into_iter().find(|(n, _)| *n == "small").unwrap().1;
    assert_eq!((p.slots, p.banks, p.max_outstanding, p.grid_rows, p.grid_cols, p.kmax), (1, 1, 1, 2, 2, 16));
    let src = "li r4, 0x3000\nli r6, 0x10028\nld r3, r4, r5, r6\n\
               li r7, 8\nli r8, 40\nli r9, 0x40202\nmma r8, r3, r7, r9\nend";
    // A = [[1, -2, 3, -4], [5, 6, -7, 8]]; B rows [1, 2], [-3, 4], [5, -6],
    // [7, 8], each padded with 0x55 (never used).
    let a: [i8; 8] = [1, -2, 3, -4, 5, 6, -7, 8];
    let image = |a: &[i8; 8]| small_image(a);
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &image(&a));
    let f = go(&p, &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 94, 96, 98, 100, 127]);
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].complete_cycle), (Status::Ok, 128));
    // C[0] = [1 + 6 + 15 - 28, 2 - 8 - 18 - 32], C[1] = [5 - 18 - 35 + 56,
    // 10 + 24 + 42 + 64].
    assert_eq!(&f.smem[40..56], &le(&[-6, -56, 8, 140])[..]);
    assert_eq!(&f.smem[56..64], &[0; 8], "nothing after C");
    assert_eq!(f.banks.last(0), Some(RD3));
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 8, ld: 1, mma: 1, loads: 1, rd_beats: 16 + 10, ..Counters::default() }
    );
    let v = io::output_json(&p, &r, &f.outcome);
    assert_eq!(v["trace"][6]["insn"], "mma r8, r3, r7, r9");
    assert_eq!(v["counters"]["mma"], 1);

    // The same operation on the engine, every access: g = 101.
    let mut m = vec![0u8; 256];
    m[..40].copy_from_slice(&image(&a));
    let out = mma_checked(&p, &mop(0, 40, 0, 8, 2, 2, 4), 101, &mut m, &mut Banks::new(1));
    assert_eq!(out.tiles, [mma::TileTimes { f: 108, s: 110, e: 115, cyc: 12, x: 122, w: 125 }]);
    assert_eq!(out.done, 125);
    assert_eq!(
        out.accesses,
        [
            Rd { cycle: 102, port: RD2, at: 0 },
            Rd { cycle: 103, port: RD3, at: 8 },
            Rd { cycle: 104, port: RD2, at: 4 },
            Rd { cycle: 105, port: RD3, at: 16 },
            Rd { cycle: 106, port: RD3, at: 24 },
            Rd { cycle: 107, port: RD3, at: 32 },
            Wr { cycle: 122, at: 40, value: -6i32 as u32 },
            Wr { cycle: 123, at: 44, value: -56i32 as u32 },
            Wr { cycle: 124, at: 48, value: 8 },
            Wr { cycle: 125, at: 52, value: 140 },
        ]
    );

    // k-step 2 all zero in A (column 2 of both rows): the load filter skips
    // it: steps 0, 1, 3 issue in S + 2 .. S + 4 (s = S + 4), rows in
    // S + 10 + r: cyc = 11, everything after F one cycle earlier: writes
    // 121..124, X end 126, completion 127.
    let a0: [i8; 8] = [1, -2, 0, -4, 5, 6, 0, 8];
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &image(&a0));
    let f = go(&p, &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 94, 96, 98, 100, 126]);
    assert_eq!(f.outcome.blocks[0].complete_cycle, 127);
    assert_eq!(&f.smem[40..56], &le(&[-21, -38, 43, 98])[..]);
}

/// The small preset tests' A (2 x 4, PA = 4) and B (4 x 2, PB = 8: rows [1,
/// 2], [-3, 4], [5, -6], [7, 8], each padded with 0x55): 40 bytes.
fn small_image(a: &[i8; 8]) -> Vec<u8> {
    let b: [[i8; 2]; 4] = [[1, 2], [-3, 4], [5, -6], [7, 8]];
    let mut v: Vec<u8> = a.iter().map(|&x| x as u8).collect();
    for row in &b {
        v.extend([row[0] as u8, row[1] as u8, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55]);
    }
    v
}

#[test]
fn mma_acc_exact_cycles_on_the_small_preset() {
    // mma_exact_cycles_on_the_small_preset with `, acc` and C's words
    // loaded first: the ld copies 56 bytes (A, B, then C = [1000, -2000,
    // i32::MAX, -1] at 40).
    //   0: li r4, 0x3000   1: li r6, 0x10038 (rows 1, n 56)
    //   2: ld r3, r4, r5, r6   3: li r7, 8   4: li r8, 40   5: li r9, 0x40202
    //   6: mma r8, r3, r7, r9, acc   7: end
    // Load as there: X 27, 29, 31 (ld), g = 32; 14 beats, beat k taken in
    //   38 + 6k: beat 13 in 116 = e. Picked 117: X 118, 120, 122, X 124
    //   mma: g = 125.
    // smem: A 8, B 40, C 40 + 16 = 56 <= 64 (mode 1 adds no bound).
    // Reads as there, 24 cycles later (bank 0 has taken no read; rd4 asks
    //   for nothing before the rows leave the grid):
    //   126 rd2(0)   127 rd3(8)   128 rd2(4)   129 rd3(16)   130 rd3(24)
    //   131 rd3(32): F_0 = 132; S_0 = 134; cyc = 12; the loader takes the
    //   group in 135, issues steps 136..139: E_0 = 139, row r ready 139 + r
    //   + 5, transferred 145 + r; X_0 = 146.
    // C0 reads on rd4 at the words' own offsets, writes on wr2:
    //   word (0, 0) at 40: offered from 146 (row 0 transferred 145), alone
    //     on the bank: taken 146, written 147;
    //   word (0, 1) at 44: from 147 (the previous read taken 146): the write
    //     of 147 is word 10 (offset 40), this read word 11: not held; taken
    //     147, written 148;
    //   word (1, 0) at 48: from max(147 + 1, 146 + 1) = 148: taken 148,
    //     written 149;
    //   word (1, 1) at 52: taken 149, written 150 = W_0.
    //   e = max(X_0 = 146, W_0 = 150) = 150. (Mode 0 would write in 146,
    //   147, 148, 149: acc costs one cycle here.)
    // Picked 151, X 152 end, completion 153.
    // C = A . B + C: [-6 + 1000, -56 - 2000, 8 + i32::MAX (wraps), 140 - 1].
    use gpurtl_params::BlockParams;
    let p = CuParams::presets().into_iter().find(|(n, _)| *n == "small").unwrap().1;
    let src = "li r4, 0x3000\nli r6, 0x10038\nld r3, r4, r5, r6\n\
               li r7, 8\nli r8, 40\nli r9, 0x40202\nmma r8, r3, r7, r9, acc\nend";
    let a: [i8; 8] = [1, -2, 3, -4, 5, 6, -7, 8];
    let mut image = small_image(&a);
    image.extend(le(&[1000, -2000, i32::MAX, -1]));
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &image);
    let f = go(&p, &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 118, 120, 122, 124, 152]);
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].complete_cycle), (Status::Ok, 153));
    let want = le(&[994, -2056, i32::MIN + 7, 139]);
    assert_eq!(&f.smem[40..56], &want[..]);
    assert_eq!(&f.smem[..40], &image[..40]);
    assert_eq!(f.banks.last(0), Some(RD4));
    let v = io::output_json(&p, &r, &f.outcome);
    assert_eq!(v["trace"][6]["insn"], "mma r8, r3, r7, r9, acc");

    // The operation on the engine: g = 125.
    let mut m = vec![0u8; 256];
    m[..56].copy_from_slice(&image);
    let op = mma::Op { c0: C0::Acc, ..mop(0, 40, 0, 8, 2, 2, 4) };
    let out = mma_checked(&p, &op, 125, &mut m, &mut Banks::new(1));
    assert_eq!(out.tiles, [mma::TileTimes { f: 132, s: 134, e: 139, cyc: 12, x: 146, w: 150 }]);
    assert_eq!(out.done, 150);
    assert_eq!(
        out.accesses,
        [
            Rd { cycle: 126, port: RD2, at: 0 },
            Rd { cycle: 127, port: RD3, at: 8 },
            Rd { cycle: 128, port: RD2, at: 4 },
            Rd { cycle: 129, port: RD3, at: 16 },
            Rd { cycle: 130, port: RD3, at: 24 },
            Rd { cycle: 131, port: RD3, at: 32 },
            Rd { cycle: 146, port: RD4, at: 40 },
            Rd { cycle: 147, port: RD4, at: 44 },
            Wr { cycle: 147, at: 40, value: 994 },
            Rd { cycle: 148, port: RD4, at: 48 },
            Wr { cycle: 148, at: 44, value: -2056i32 as u32 },
            Rd { cycle: 149, port: RD4, at: 52 },
            Wr { cycle: 149, at: 48, value: (i32::MIN + 7) as u32 },
            Wr { cycle: 150, at: 52, value: 139 },
        ]
    );
    assert_eq!(&m[40..56], &want[..]);
}

#[test]
fn mma_bank_conflicts_follow_the_last_read_of_the_bank() {
    // Grid 2 x 2, one bank, g = 100. A = [[2], [3]] at 0 (PA = 4: words 0,
    // 1), B = [[4, 5, 6]] at 8 (PB = 8), C at 16. TM = 2, TN = 3, K = 1: one
    // row block, two tiles (columns 0, 1 and column 2): rd2 reads A once,
    // rd2(0), rd2(4); rd3 reads rd3(8) for each tile (tile 1: 8 +
    // 4*floor(2/4) = 8). No skip: M = g = 100.
    // A tile of one useful step, started in S: the loader takes its group
    //   in S + 1, issues the step (tile-ending) in S + 2 unless the tile
    //   before is in flight; row r ready E + r + C + 1 + P = E + 5 + r,
    //   transferred E + 6 + r: X = E + 7. Tile 0 is in flight E_0 + 1 ..
    //   X_0 - 1.
    // (a) bank 0's last read was rd2's:
    //   101 rd3(8) [t0: rd3 is above rd2]: B_0 taken 102   102 rd2(0) [last
    //   rd3: none above asks, the lowest]   103 rd3(8) [t1; tile 1 < 2:
    //   free]: B_1 taken 104   104 rd2(4): A taken 105
    //   F_0 = max(105, 102, M) = 105, F_1 = max(105, 104, M) = 105.
    //   S_0 = 107, E_0 = 109, X_0 = 116: rows 115, 116: writes 116, 117,
    //   118, 119 = W_0.
    //   S_1 = max(105, E_0 = 109) + 2 = 111: group taken 112, held 113; its
    //   step is tile-ending and tile 0 is in flight 110 .. 115: E_1 = 116.
    //   Rows ready 121 + r, transferred 122, 123 (after X_0): X_1 = 123;
    //   writes 123 (row 0), 124 (row 1) = W_1; e = max(123, 124) = 124.
    //   The bank's last read: rd2(4).
    // (b) its last read was none, rd0's, rd1's or rd3's (none above rd3 or
    //   rd4 asks; rd2 is above rd0, rd1): rd2 first:
    //   101 rd2(0)   102 rd3(8): B_0 103   103 rd2(4) [last rd3: the
    //   lowest]: A 104   104 rd3(8) [t1, alone]: B_1 105
    //   F_0 = max(104, 103) = 104, F_1 = max(104, 105) = 105.
    //   S_0 = 106, E_0 = 108, X_0 = 115: writes 115..118 = W_0; S_1 =
    //   max(105, 108) + 2 = 110, held 112, tile 0 in flight 109 .. 114:
    //   E_1 = 115, rows 121, 122: X_1 = 122: writes 122, 123 = W_1 = e.
    //   The last read: rd3(8).
    // (Under 8e84419's parent S_1 waited for X_0: X_1 was 127 and 126.
    // Under the revision before that S_1 waited for W_0: 1 and 2 cycles more.
    // Under the revision before A's reuse (a692cb3), tile 1 read A again:
    // rd2(0), rd2(4) in 105, 106 and F_1 = 107 in both cases, the bank's
    // last read rd2's; the other times were the same.)
    let p = grid_params(2, 2, 1, 16);
    let op = mop(0, 16, 0, 8, 2, 3, 1);
    let init = |m: &mut Vec<u8>| {
        m[0] = 2;
        m[4] = 3;
        m[8..11].copy_from_slice(&[4, 5, 6]);
    };
    let want = le(&[8, 10, 12, 12, 15, 18]);
    let mut results = Vec::new();
    for last in [Some(RD2), None, Some(RD0), Some(RD1), Some(RD3)] {
        let mut banks = Banks::new(1);
        if let Some(port) = last {
            banks.took(0, port);
        }
        let mut m = vec![0u8; 64];
        init(&mut m);
        let out = mma_checked(&p, &op, 100, &mut m, &mut banks);
        assert_eq!(&m[16..40], &want[..], "{last:?}");
        let last_read = if last == Some(RD2) { RD2 } else { RD3 };
        assert_eq!(banks.last(0), Some(last_read), "the last read: rd2(4) in (a), rd3(8) in (b)");
        let first = out.accesses[0];
        results.push((first, out.tiles.iter().map(|t| (t.f, t.s, t.e, t.x, t.w)).collect::<Vec<_>>(), out.done));
    }
    assert_eq!(results[0], (Rd { cycle: 101, port: RD3, at: 8 }, vec![(105, 107, 109, 116, 119), (105, 111, 116, 123, 124)], 124));
    for r in &results[1..] {
        assert_eq!(*r, (Rd { cycle: 101, port: RD2, at: 0 }, vec![(104, 106, 108, 115, 118), (105, 110, 115, 122, 123)], 123));
    }
}

#[test]
fn mma_tile_start_waits_for_the_writes_two_tiles_back() {
    // Grid 4 x 8, eight banks (word m: bank m mod 8, row m div 8), g = 0,
    // no read yet. TM = 4, TN = 24, K = 1: one row block, three tiles
    // (column blocks), 32 words each. A (4 x 1) at 0, PA = 4: rd2 reads
    // words 0..3 once (the row block). B (1 x 24) at 32, PB = 24: rd3 reads
    // 2 words a tile, 32 + 8c + 4h: words 8, 9 | 10, 11 | 12, 13. C at 64:
    // C[i][n] at 64 + 96i + 4n. No skip: M = g = 0.
    // A tile of one useful step: taken by the loader in S + 1, issued
    //   (tile-ending) in E = S + 2 unless the tile before is in flight (its
    //   E + 1 .. X - 1); row r ready E + r + 8 + 1 + 2, transferred E + 12
    //   + r: X = E + 15 (cyc = 17 alone).
    // Reads:
    //   1 rd2 w0 (bank 0) and rd3 w8 (bank 0): no read yet: rd2
    //   2 rd2 w1, rd3 w8 (banks 1, 0)   3 rd2 w2, rd3 w9 (tile 0's last B:
    //   taken 4)   4 rd2 w3 (A's last: taken 5), rd3 w10 (tile 1; banks 3,
    //   2)   5 rd3 w11 (tile 1's last: taken 6); then rd3 waits (tile 2).
    //   F_0 = max(5, 4) = 5, F_1 = max(5, 6) = 6.
    //   S_0 = 7, E_0 = 9, X_0 = 24, rows 21..24: writes one a cycle from 22,
    //   row r's 8 words in 22 + 8r .. 29 + 8r (each after its row): W_0 =
    //   53.
    //   S_1 = max(6, E_0 = 9) + 2 = 11: taken 12, held 13; tile 0 in flight
    //   10 .. 23: E_1 = 24; rows ready 35 + r, transferred 36..39: X_1 =
    //   39; writes after tile 0's (and each after its row), 54 .. 85 = W_1.
    //   Tile 2's B from E_0 + 1 = 10 (no write yet): 10 rd3 w12, 11 rd3
    //   w13: taken 12: F_2 = max(5, 12) = 12.
    //   S_2 = max(F_2 = 12, E_1 = 24, W_0 = 53) + 2 = 55: the row buffer
    //   still holds tile 0's rows. Taken 56, held 57 (tile 1 in flight 25
    //   .. 38): E_2 = 57, rows 69..72: X_2 = 72 (= S_2 + 17: X_1 < S_2);
    //   writes after tile 1's: 86 .. 117 = W_2; e = max(72, 117) = 117.
    // (Before A's reuse, a692cb3, tiles 1 and 2 read A again: F_1 = 9,
    // F_2 = 29; S, X, W were the same.)
    let p = grid_params(4, 8, 8, 16);
    let mut m = noise(1024, 5);
    let op = mop(0, 64, 0, 32, 4, 24, 1);
    let want = mma_reference(&m, &op);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(8));
    assert_eq!(
        out.tiles,
        [
            mma::TileTimes { f: 5, s: 7, e: 9, cyc: 17, x: 24, w: 53 },
            mma::TileTimes { f: 6, s: 11, e: 24, cyc: 17, x: 39, w: 85 },
            mma::TileTimes { f: 12, s: 55, e: 57, cyc: 17, x: 72, w: 117 },
        ]
    );
    assert_eq!(out.done, 117);
    let reads: Vec<(u64, u8, u32)> = out
        .accesses
        .iter()
        .filter_map(|a| match *a {
            Rd { cycle, port, at } => Some((cycle, port, at / 4)),
            _ => None,
        })
        .collect();
    assert_eq!(
        reads,
        [
            (1, RD2, 0),
            (2, RD2, 1),
            (2, RD3, 8),
            (3, RD2, 2),
            (3, RD3, 9),
            (4, RD2, 3),
            (4, RD3, 10),
            (5, RD3, 11),
            (10, RD3, 12),
            (11, RD3, 13),
        ]
    );
    assert_eq!(&m[64..448], &want[..]);
}

#[test]
fn mma_done_when_the_dropped_rows_leave_the_grid() {
    // Grid 3 x 1, one bank, g = 0: TM = TN = K = 1, A = [[5]] at 0, B =
    // [[7]] at 8, C at 16. 1 rd2(0) [no read yet]   2 rd3(8): F_0 = 3,
    // S_0 = 5. The loader takes the group in 6, issues its one step in 7
    // (tile-ending): E_0 = 7; row r ready 7 + r + 1 + 1 + 2, transferred
    // 12 + r: X_0 = 14 (cyc = 9 = X_0 - S_0). Row 0 (the only one
    // written) transferred in 12, written in 13 = W_0;
    // rows 1, 2 are dropped. e = max(X_0 = 14, W_0 = 13) = 14.
    let p = grid_params(3, 1, 1, 16);
    let mut m = vec![0u8; 64];
    m[0] = 5;
    m[8] = 7;
    let out = mma_checked(&p, &mop(0, 16, 0, 8, 1, 1, 1), 0, &mut m, &mut Banks::new(1));
    assert_eq!(out.tiles, [mma::TileTimes { f: 3, s: 5, e: 7, cyc: 9, x: 14, w: 13 }]);
    assert_eq!(out.done, 14);
    assert_eq!(&m[16..20], &le(&[35])[..]);
}

#[test]
fn mma_arbitration_rule() {
    // (bank, row) of the rd2, rd3 and rd4 offers, the write taken in the
    // cycle. Of the ports asking for a bank: the lowest above the port of
    // the bank's last read, else the lowest; no read yet counts as rd5
    // (tex's port, the highest: the lowest asking wins).
    let mut banks = Banks::new(4);
    let (x, y, z) = (Some((1u32, 5u64)), Some((1u32, 6u64)), Some((1u32, 7u64)));
    // Different banks: all.
    assert_eq!(mma::arbitrate([Some((0, 5)), Some((1, 5)), Some((2, 5))], None, &banks), [true, true, true]);
    // One bank, no read yet (rd5): the lowest asking.
    assert_eq!(mma::arbitrate([x, y, z], None, &banks), [true, false, false]);
    assert_eq!(mma::arbitrate([None, y, z], None, &banks), [false, true, false]);
    assert_eq!(mma::arbitrate([x, None, z], None, &banks), [true, false, false]);
    // Every last port and every set of two or three asking, by hand:
    //   last   {2,3}  {2,4}  {3,4}  {2,3,4}
    //   rd0    2      2      3      2
    //   rd1    2      2      3      2
    //   rd2    3      4      3      3
    //   rd3    2      4      4      4
    //   rd4    2      2      3      2
    //   rd5    2      2      3      2   (tex)
    let table: [(u8, [usize; 4]); 6] = [
        (RD0, [0, 0, 1, 0]),
        (RD1, [0, 0, 1, 0]),
        (RD2, [1, 2, 1, 1]),
        (RD3, [0, 2, 2, 2]),
        (RD4, [0, 0, 1, 0]),
        (RD5, [0, 0, 1, 0]),
    ];
    let sets: [[bool; 3]; 4] = [[true, true, false], [true, false, true], [false, true, true], [true, true, true]];
    for (last, winners) in table {
        banks.took(4, last); // word 1: bank 1
        // Another bank's history does not matter.
        banks.took(4 * 2, if last == RD2 { RD3 } else { RD2 });
        for (set, &w) in sets.iter().zip(&winners) {
            let offers = [0, 1, 2].map(|i| if set[i] { [x, y, z][i] } else { None });
            let mut want = [false; 3];
            want[w] = true;
            assert_eq!(mma::arbitrate(offers, None, &banks), want, "last {last} set {set:?}");
        }
        // Alone, a port always takes the bank.
        for i in 0..3 {
            let mut offers = [None; 3];
            offers[i] = [x, y, z][i];
            let mut want = [false; 3];
            want[i] = true;
            assert_eq!(mma::arbitrate(offers, None, &banks), want, "last {last} alone {i}");
        }
    }
    // A read of the row written in the cycle is not among those asking: the
    // others share the bank as if it did not ask.
    banks.took(4, RD2); // of rd3 and rd4, rd3 would win bank 1
    assert_eq!(mma::arbitrate([x, y, z], Some((1, 6)), &banks), [false, false, true]);
    assert_eq!(mma::arbitrate([x, y, z], Some((1, 5)), &banks), [false, true, false]);
    assert_eq!(mma::arbitrate([x, y, z], Some((1, 7)), &banks), [false, true, false]);
    assert_eq!(mma::arbitrate([x, None, None], Some((1, 5)), &banks), [false, false, false]);
    assert_eq!(mma::arbitrate([None, None, z], Some((1, 7)), &banks), [false, false, false]);
    banks.took(4, RD3); // rd4 would win
    assert_eq!(mma::arbitrate([x, y, z], Some((1, 7)), &banks), [true, false, false]);
    // The same row in another bank, or another row of the bank, is no
    // conflict.
    assert_eq!(mma::arbitrate([x, None, None], Some((0, 5)), &banks), [true, false, false]);
    assert_eq!(mma::arbitrate([Some((0, 5)), x, Some((2, 9))], Some((1, 4)), &banks), [true, true, true]);
    // Every read of the written row waits.
    assert_eq!(mma::arbitrate([x, x, x], Some((1, 5)), &banks), [false, false, false]);
    // Bank and row of a scratchpad byte address: word m = X/4, bank m mod
    // banks, row m div banks.
    assert_eq!(banks.bank_row(0), (0, 0));
    assert_eq!(banks.bank_row(4 * 13 + 3), (1, 3));
    assert_eq!(Banks::new(1).bank_row(4 * 13), (0, 13));
}

#[test]
fn mma_reads_see_only_the_writes_before_them() {
    // Grid 1 x 1, one bank (a word's row is its index), g = 100. A = [[-128]]
    // at 0, B = [[127, 2, 5]] at 8 (bytes 8, 9, 10), C (1 x 3) at 8: C[0][0]
    // overwrites B's row. One row block, three tiles (columns 0, 1, 2): A
    // read once, rd2(0); each tile rd3(8) (4*floor(c/4) = 0). M = g.
    // A 1 x 1 tile of one useful step: taken by the loader in S + 1, its
    //   step (tile-ending) issued in E = S + 2 unless the tile before is in
    //   flight (its E + 1 .. X - 1); the row ready E + 0 + C + 1 + P = E +
    //   4, transferred E + 5 = X (cyc = 7 alone).
    //   101 rd2(0) [no read yet: the lowest]: A taken 102   102 rd3(8) [t0]:
    //   103: F_0 = 103   103 rd3(8) [t1]: 104: F_1 = max(102, 104) = 104
    //   S_0 = 105, E_0 = 107, X_0 = 112: wr2(8) in 113 = W_0 (C[0][0] =
    //     -16256 = 0xFFFFC080)
    //   S_1 = max(104, E_0 = 107) + 2 = 109: held 111, tile 0 in flight 108
    //     .. 111: E_1 = 112, X_1 = 117: wr2(12) in 118 = W_1 (C[0][1] =
    //     -128*2, from the B read in 103, before the write)
    //   Tile 2's B may be read from E_0 + 1 = 108: rd3(8) taken in 108 (no
    //     write in 108), before the write of 113: it does not see it:
    //     B[0][2] = 5. F_2 = 109.
    //   S_2 = max(109, E_1 = 112, W_0 = 113) + 2 = 115: held 117, tile 1 in
    //     flight 113 .. 116: E_2 = 117, X_2 = 122: wr2(16) in 123 = W_2; e =
    //     123 (C[0][2] = -128 * 5 = -640: the read came before C[0][0]'s
    //     write over B's row, so the write is not seen).
    // (Before 8e84419 tile 2's half was free from X_0 + 1 = 113: its read,
    // held back by the write of 113, was taken in 114 and saw it (C[0][2] =
    // 128); tiles started after X_{t-1}. The revision before that freed it
    // at W_0 + 1 and started tiles after W_{t-1}. Before A's reuse, a692cb3,
    // each tile read rd2(0) again.)
    let p = grid_params(1, 1, 1, 8);
    let mut m = vec![0u8; 64];
    m[0] = 0x80;
    m[8..11].copy_from_slice(&[127, 2, 5]);
    let op = mop(0, 8, 0, 8, 1, 3, 1);
    let out = mma_checked(&p, &op, 100, &mut m, &mut Banks::new(1));
    assert_eq!(
        out.accesses,
        [
            Rd { cycle: 101, port: RD2, at: 0 },
            Rd { cycle: 102, port: RD3, at: 8 },
            Rd { cycle: 103, port: RD3, at: 8 },
            Rd { cycle: 108, port: RD3, at: 8 },
            Wr { cycle: 113, at: 8, value: 0xFFFF_C080 },
            Wr { cycle: 118, at: 12, value: -256i32 as u32 },
            Wr { cycle: 123, at: 16, value: -640i32 as u32 },
        ]
    );
    assert_eq!(
        out.tiles,
        [
            mma::TileTimes { f: 103, s: 105, e: 107, cyc: 7, x: 112, w: 113 },
            mma::TileTimes { f: 104, s: 109, e: 112, cyc: 7, x: 117, w: 118 },
            mma::TileTimes { f: 109, s: 115, e: 117, cyc: 7, x: 122, w: 123 },
        ]
    );
    assert_eq!(out.done, 123);
    assert_eq!(&m[8..20], &le(&[-16256, -256, -640])[..]);
}

#[test]
fn mma_row_block_a_is_read_once_before_c_overwrites_it() {
    // (Was mma_read_held_back_by_a_write_of_its_row: before A's reuse,
    // a692cb3, tile 2 read A again, and its first rd2 read was held back by
    // C[0][0]'s write; now A is read once for the row block and no read
    // meets a write here. mma_reads_see_only_the_writes_before_them and
    // mma_c0_read_waits_for_the_write_of_its_word hold reads back.)
    // Grid 1 x 1, one bank (a word's row is its index), kmax 32, g = 0:
    // TM = 1, TN = 3, K = 32, all values 1. A at 0 (PA = 32): 8 rd2 reads
    // 0, 4, .., 28, once; B at 32 (PB = 8): per tile 32 rd3 reads 32 + 8k
    // (columns 0..2 in the row's first word). C at 0: C[0][n] at 4n, over
    // A's words 0, 1, 2. M = g = 0.
    // A tile of 32 useful steps (8 groups; the loader takes each next one
    //   in the cycle its last step issues): first taken S + 1, steps issue
    //   in S + 2 .. S + 33, the last tile-ending (E = S + 33 when no tile
    //   before is in flight), the row ready from E + 0 + C + 1 + P = E + 4,
    //   transferred E + 5 = X (cyc = 38 alone).
    // Reads (bank 0 only; no read yet): rd2 wins 1, then they alternate
    //   (last rd2: rd3 is above; last rd3: none above asks, the lowest):
    //   rd2 in 1, 3, .., 15 (A taken 16); rd3 k = 0..7 in 2, 4, .., 16,
    //   then alone k = 8..31 in 9 + k (k = 31 in 40): B_0 taken 41; tile 1
    //   in 41..72: taken 73.
    //   F_0 = max(16, 41) = 41, S_0 = 43, E_0 = 76, X_0 = 81: wr2(0) in 82
    //   = W_0 (C[0][0] = 32).
    //   F_1 = max(16, 73) = 73, S_1 = max(73, E_0 = 76) + 2 = 78: steps in
    //   80 .. 111 (tile 0 in flight 77 .. 80 only): E_1 = 111, X_1 = 116:
    //   wr2(4) in 117 = W_1 (C[0][1] = 32).
    //   Tile 2's B from E_0 + 1 = 77: 77..108 (k in 77 + k; the write of 82
    //   is word 0, row 0, rd3(72) word 18: taken), taken 109: F_2 = 109.
    //   S_2 = max(109, E_1 = 111, W_0 = 82) + 2 = 113: steps 115 .. 146 (A
    //   from the buffer, all ones: 32 useful steps; tile 1 in flight 112 ..
    //   115, the tile-ending step comes later): E_2 = 146, X_2 = 151:
    //   wr2(8) in 152 = W_2 = e. C[0][2] = 32, though C[0][0] = 32
    //   overwrote A[0][0] in 82.
    let p = grid_params(1, 1, 1, 32);
    let mut m = vec![0u8; 512];
    m[..32].fill(1);
    for k in 0..32 {
        m[32 + 8 * k..32 + 8 * k + 3].fill(1);
    }
    let op = mop(0, 0, 0, 32, 1, 3, 32);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(1));
    assert_eq!(
        out.tiles,
        [
            mma::TileTimes { f: 41, s: 43, e: 76, cyc: 38, x: 81, w: 82 },
            mma::TileTimes { f: 73, s: 78, e: 111, cyc: 38, x: 116, w: 117 },
            mma::TileTimes { f: 109, s: 113, e: 146, cyc: 38, x: 151, w: 152 },
        ]
    );
    let k = out.accesses.iter().position(|a| *a == Wr { cycle: 82, at: 0, value: 32 }).unwrap();
    assert_eq!(
        &out.accesses[k - 2..k + 4],
        [
            Rd { cycle: 81, port: RD3, at: 32 + 8 * 4 },
            Rd { cycle: 82, port: RD3, at: 32 + 8 * 5 },
            Wr { cycle: 82, at: 0, value: 32 },
            Rd { cycle: 83, port: RD3, at: 32 + 8 * 6 },
            Rd { cycle: 84, port: RD3, at: 32 + 8 * 7 },
            Rd { cycle: 85, port: RD3, at: 32 + 8 * 8 },
        ]
    );
    let k2 = out.accesses.iter().position(|a| *a == Rd { cycle: 77, port: RD3, at: 32 }).unwrap();
    assert_eq!(out.accesses[k2 - 1], Rd { cycle: 72, port: RD3, at: 32 + 8 * 31 });
    assert_eq!(&out.accesses[out.accesses.len() - 4..], [
        Rd { cycle: 107, port: RD3, at: 32 + 8 * 30 },
        Rd { cycle: 108, port: RD3, at: 32 + 8 * 31 },
        Wr { cycle: 117, at: 4, value: 32 },
        Wr { cycle: 152, at: 8, value: 32 },
    ]);
    assert_eq!(&m[0..12], &le(&[32, 32, 32])[..]);
}

#[test]
fn mma_ports_share_one_bank() {
    // Grid 2 x 1, one bank (a word's row is its index), g = 100, no read
    // yet. TM = 2, TN = 3, K = 2: three tiles (columns 0, 1, 2), h = 2,
    // w = 1, q = 1. A (2 x 2) at 0, PA = 4: rd2 reads 0, 4 once (one row
    // block). B (2 x 3) at 8, PB = 8: rd3 reads 8, 16 each tile
    // (4*floor(t/4) = 0). M = g.
    // C (2 x 3) at 24: tile t's words (row 0) 24 + 4t, (row 1) 36 + 4t.
    // Mode 1: C0 read at the word's offset; mode 2 (bias at 48): at 48 + 4t
    // for both rows. Every value non-zero: both steps useful.
    // A tile (2 x 1, two steps): taken by the loader in S + 1, steps issue
    //   S + 2, S + 3 (the second tile-ending: E = S + 3 unless the tile
    //   before is in flight, its E + 1 .. X - 1), row r ready E + r + C + 1
    //   + P = E + 4 + r, transferred E + 5 + r: X = E + 6 (cyc = 9 alone),
    //   row 0 transferred X - 1, row 1 X.
    // A and B reads of tiles 0, 1 (rd2, rd3 alternate while both ask: last
    // none, rd2, rd3, ..):
    //   101 rd2(0)  102 rd3(8)  103 rd2(4): A taken 104  104 rd3(16): B_0
    //   taken 105: F_0 = 105   105 rd3(8)  106 rd3(16): B_1 taken 107: F_1 =
    //   max(104, 107) = 107 (rd3 has tile 2 next from 107: not free before
    //   E_0 + 1).
    //   S_0 = 107, E_0 = 110, X_0 = 116 (rows 115, 116).
    //   111: tile 2's B free (E_0 + 1): rd3(8) alone (no C0 read yet);
    //   112 rd3(16): B_2 taken 113: F_2 = max(104, 113) = 113.
    //   S_1 = max(107, E_0 = 110) + 2 = 112: steps 114, 115; the second is
    //     tile-ending and tile 0 is in flight 111 .. 115: E_1 = 116, rows
    //     ready 120 + r, transferred 121, 122: X_1 = 122.
    //   116: rd4 (tile 0, row 0; from 115 + 1) alone: taken; written 117.
    //   117: rd4 (row 1: from max(116 + 1, 116 + 1)): the write of 117 is
    //     another word (row): taken, written 118 = W_0.
    //   122, 123: rd4 of tile 1 (rows transferred 121, 122), written 123,
    //     124 = W_1.
    //   S_2 = max(113, E_1 = 116, W_0 = 118) + 2 = 120: steps 122, 123
    //     (tile 1 in flight 117 .. 121): E_2 = 123, rows 128, 129: X_2 =
    //     129; rd4 129, 130, written 130, 131 = W_2; e = 131.
    // (Under 8e84419's parent tile 2's B was free only from X_0 + 1 = 117,
    // so rd3 and rd4 met on the bank in 117, 118; now the B reads are over
    // before the first C0 read and the three ports never ask together here.
    // Before A's reuse, a692cb3, each tile read A again.)
    let p = grid_params(2, 1, 1, 16);
    // A = [[1, 2], [3, -4]], B = [[5, 6, 7], [-8, 9, 10]].
    let mut m0 = vec![0u8; 128];
    m0[0..2].copy_from_slice(&[1, 2]);
    m0[4..6].copy_from_slice(&[3, -4i8 as u8]);
    m0[8..11].copy_from_slice(&[5, 6, 7]);
    m0[16..19].copy_from_slice(&[-8i8 as u8, 9, 10]);
    m0[24..48].copy_from_slice(&le(&[100, 200, 300, 400, 500, 600]));
    m0[48..60].copy_from_slice(&le(&[-1000, -2000, -3000]));
    // A . B = [[-11, 24, 27], [47, -18, -19]].
    for (c0, c0_at, want) in [
        (C0::Acc, [24, 36, 28, 40, 32, 44], [89, 224, 327, 447, 482, 581]),
        (C0::Bias(48), [48, 48, 52, 52, 56, 56], [-1011, -1976, -2973, -953, -2018, -3019]),
    ] {
        let mut m = m0.clone();
        let op = mma::Op { c0, ..mop(0, 24, 0, 8, 2, 3, 2) };
        let out = mma_checked(&p, &op, 100, &mut m, &mut Banks::new(1));
        assert_eq!(
            out.tiles,
            [
                mma::TileTimes { f: 105, s: 107, e: 110, cyc: 9, x: 116, w: 118 },
                mma::TileTimes { f: 107, s: 112, e: 116, cyc: 9, x: 122, w: 124 },
                mma::TileTimes { f: 113, s: 120, e: 123, cyc: 9, x: 129, w: 131 },
            ],
            "{c0:?}"
        );
        assert_eq!(out.done, 131);
        let reads: Vec<(u64, u8, u32)> = out
            .accesses
            .iter()
            .filter_map(|a| match *a {
                Rd { cycle, port, at } => Some((cycle, port, at)),
                _ => None,
            })
            .collect();
        assert_eq!(
            reads,
            [
                (101, RD2, 0),
                (102, RD3, 8),
                (103, RD2, 4),
                (104, RD3, 16),
                (105, RD3, 8),
                (106, RD3, 16),
                (111, RD3, 8),
                (112, RD3, 16),
                (116, RD4, c0_at[0]),
                (117, RD4, c0_at[1]),
                (122, RD4, c0_at[2]),
                (123, RD4, c0_at[3]),
                (129, RD4, c0_at[4]),
                (130, RD4, c0_at[5]),
            ],
            "{c0:?}"
        );
        let writes: Vec<(u64, u32)> = out
            .accesses
            .iter()
            .filter_map(|a| match *a {
                Wr { cycle, at, .. } => Some((cycle, at)),
                _ => None,
            })
            .collect();
        assert_eq!(writes, [(117, 24), (118, 36), (123, 28), (124, 40), (130, 32), (131, 44)]);
        // C's rows (row 0 at 24, row 1 at 36).
        assert_eq!(&m[24..48], &le(&want)[..], "{c0:?}");
        assert_eq!(&m[48..60], &m0[48..60], "the bias row is not written");
    }
}

#[test]
fn mma_c0_read_waits_for_the_write_of_its_word() {
    // Grid 1 x 2, one bank, g = 100: TM = 1, TN = 2, K = 1, mode 2 with the
    // bias row at o = 16 and C at 20: C0[0] is the word at 16, C0[1] the
    // word at 20, which is C[0][0]. A = [[3]] at 0, B = [[-2, 5]] at 8.
    //   101 rd2(0) [no read yet]   102 rd3(8): F_0 = 103; S_0 = 105.
    //   The loader takes the group in 106, its step issues in 107 = E_0;
    //   row 0 ready E + 0 + C + 1 + P = 112, transferred 113 = X_0 (cyc =
    //   8 = X_0 - S_0).
    //   114 rd4(16): C[0][0] = -6 + 100 = 94, written 115.
    //   115 rd4(20) offered: the word written in 115: not asking, waits.
    //   116 rd4(20) taken: it sees 94; C[0][1] = 15 + 94 = 109 (not 15 + the
    //   1000 there before), written 117 = W_0 = e.
    let p = grid_params(1, 2, 1, 16);
    let mut m = vec![0u8; 64];
    m[0] = 3;
    m[8..10].copy_from_slice(&[-2i8 as u8, 5]);
    m[16..24].copy_from_slice(&le(&[100, 1000]));
    let op = mma::Op { c0: C0::Bias(16), ..mop(0, 20, 0, 8, 1, 2, 1) };
    assert_eq!(mma::check(16, 28, &op), Ok(()));
    let out = mma_checked(&p, &op, 100, &mut m, &mut Banks::new(1));
    assert_eq!(out.tiles, [mma::TileTimes { f: 103, s: 105, e: 107, cyc: 8, x: 113, w: 117 }]);
    assert_eq!(
        out.accesses,
        [
            Rd { cycle: 101, port: RD2, at: 0 },
            Rd { cycle: 102, port: RD3, at: 8 },
            Rd { cycle: 114, port: RD4, at: 16 },
            Wr { cycle: 115, at: 20, value: 94 },
            Rd { cycle: 116, port: RD4, at: 20 },
            Wr { cycle: 117, at: 24, value: 109 },
        ]
    );
    assert_eq!(out.done, 117);
    assert_eq!(&m[16..28], &le(&[100, 94, 109])[..]);
}

#[test]
fn reads_of_st_and_vector_operations_are_recorded_per_bank() {
    // Four banks. st of 8 bytes from offset 0 (words 0, 1: banks 0, 1 on
    // rd0), then act on the word at 8 (bank 2, rd1); bank 3 never read.
    let p = CuParams { banks: 4, ..one_slot() };
    let src = "li r6, 0x10008\nst r3, r4, r5, r6\nli r7, 0x10001\nli r3, 8\nact r3, r7, 0\nend";
    let f = go(&p, &setup(src, vec![block(0)], 64, 8, 5));
    assert_eq!(f.outcome.blocks[0].status, Status::Ok);
    assert_eq!((0..4).map(|b| f.banks.last(b)).collect::<Vec<_>>(), [Some(RD0), Some(RD0), Some(RD1), None]);
    // A misaligned st: s = 6, n = 6: bytes 6..11, words 1, 2 (banks 1, 2).
    let src = "li r3, 6\nli r6, 0x10006\nst r3, r4, r5, r6\nend";
    let f = go(&p, &setup(src, vec![block(0)], 64, 8, 5));
    assert_eq!((0..4).map(|b| f.banks.last(b)).collect::<Vec<_>>(), [None, Some(RD0), Some(RD0), None]);
    // In the second share (base 64: word 16 = bank 0): st of offset 4 ->
    // word 17, bank 1.
    let src = "bz r0, 4\nli r3, 4\nli r6, 0x10004\nst r3, r4, r5, r6\nend";
    let f = go(&CuParams { slots: 2, ..p.clone() }, &setup(src, vec![block(0), block(1)], 64, 8, 5));
    assert_eq!((0..4).map(|b| f.banks.last(b)).collect::<Vec<_>>(), [None, Some(RD0), None, None]);
}

#[test]
fn st_between_two_mma_changes_the_second_ones_arbitration() {
    // One slot (O = 2, L = 5), grid 2 x 2, one bank; the data and the
    // second mma of mma_bank_conflicts_follow_the_last_read_of_the_bank.
    //   0: li r4, 0x3000   1: li r6, 0x1000C   2: ld r3, r4, r5, r6
    //   3: li r7, 8   4: li r8, 16   5: li r9, 0x10102 (K 1, TN 1, TM 2)
    //   6: mma r8, r3, r7, r9: reads rd2(0) [no read yet], rd3(8), rd2(4):
    //      bank 0's last read is rd2's
    //   7: li r9, 0x10302 (K 1, TN 3, TM 2)   [7': st r3, r4, r5, r10 with
    //      r10 = 0x10004: a read of word 0 on rd0]
    //   8: mma r8, r3, r7, r9   9: end
    // The second mma, started in g (its X cycle + 1, the DMA idle), is
    // done in g + 24 after rd2's last read, g + 23 after st's (see
    // mma_bank_conflicts_...: e = 124 and 123 for g = 100): X end in e + 2.
    // (Before 8e84419, tile 1 waited for X_0: g + 28, g + 27; before that
    // for W_0: g + 29, g + 28.)
    let p = grid_params(2, 2, 1, 16);
    let head = "li r4, 0x3000\nli r6, 0x1000C\nld r3, r4, r5, r6\nli r7, 8\nli r8, 16\nli r9, 0x10102\nmma r8, r3, r7, r9\nli r10, 0x10004\n";
    let mut span = Vec::new();
    for mid in ["", "st r3, r4, r5, r10\n"] {
        let src = format!("{head}{mid}li r9, 0x10302\nmma r8, r3, r7, r9\nend");
        let mut r = setup(&src, vec![block(0)], 64, 16, 5);
        r.memory.load(0x3000, &[2, 0, 0, 0, 3, 0, 0, 0, 4, 5, 6, 0]);
        let f = go(&p, &r);
        let o = &f.outcome;
        assert_eq!(o.blocks[0].status, Status::Ok);
        let n = o.trace.len();
        span.push(o.trace[n - 1].cycle - o.trace[n - 2].cycle);
        assert_eq!(&f.smem[16..40], &le(&[8, 10, 12, 12, 15, 18])[..]);
        assert_eq!(o.counters.mma, 2);
    }
    assert_eq!(span, [1 + 24 + 2, 1 + 23 + 2]);
}

#[test]
fn empty_mma_is_done_at_its_start() {
    // TM, TN or K = 0 (with the other fields anything, K > kmax and the
    // offsets far outside the share): X 27, 29, 31 (li), X 33 mma joins,
    // g = 34 done: picked 35, X 36 end. Counted as started.
    // The same with acc, bias (o far outside the share) and pads: no C0
    // read either.
    for rc in ["0xFFFFFF00", "0xFFFF00FF", "0x0000FFFF"] {
        for suffix in ["", ", acc", ", bias 262140", ", acc, pad 3, 3"] {
            let src = format!("li r3, {rc}\nli r4, 0x10000\nli r5, 0x10000\nmma r4, r5, r4, r3{suffix}\nend");
            let f = go(&one_slot(), &setup(&src, vec![block(0)], 64, 8, 5));
            assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 33, 36], "{rc}{suffix}");
            assert_eq!(f.outcome.blocks[0].status, Status::Ok);
            assert_eq!(f.outcome.counters.mma, 1);
            assert_eq!(f.banks.last(0), None);
        }
    }
}

#[test]
fn every_mma_error() {
    use Status::*;
    // status_of: 4 registers (r0 = x = 1), 64 bytes of share, D = 16, kmax
    // 16, grid 2 x 2. Co, Ao, Bo, rc in r0, r1, r2, r3; `suffix` after rc.
    let mma_s = |co: i64, ao: i64, bo: i64, rc: u32, suffix: &str| {
        status_of(&format!("li r0, {co}\nli r1, {ao}\nli r2, {bo}\nli r3, {rc:#x}\nmma r0, r1, r2, r3{suffix}\nend"))
    };
    let mma = |co: i64, ao: i64, bo: i64, rc: u32| mma_s(co, ao, bo, rc, "");
    let shape = |tm: u32, tn: u32, k: u32| tm | tn << 8 | k << 16;
    // field (`mma r1, r2, r3, r3` with imm bits): imm bit 15 in any mode;
    // mode 3; bits 31:16 outside mode 2 (bit 16, bit 31). Bit 14 is `skip`
    // (r1 = y = 0, r2 = z = 0, r3 = 0: an empty shape; then the word 0).
    assert_eq!(status_of(".word 0x0000400303020170"), (Opcode, 1)); // bit 14: skip
    assert_eq!(status_of(".word 0x0000800303020170"), (Field, 0)); // bit 15
    assert_eq!(status_of(".word 0x0000c20303020170"), (Field, 0)); // bits 15:14, mode 2
    assert_eq!(status_of(".word 0x0000430303020170"), (Field, 0)); // bit 14, mode 3
    assert_eq!(status_of(".word 0x0000030303020170"), (Field, 0)); // mode 3
    assert_eq!(status_of(".word 0x00003f0303020170"), (Field, 0)); // mode 3, pads
    assert_eq!(status_of(".word 0x0001000303020170"), (Field, 0)); // o bits, mode 0
    assert_eq!(status_of(".word 0x8000000303020170"), (Field, 0));
    assert_eq!(status_of(".word 0x0001010303020170"), (Field, 0)); // o bits, mode 1
    assert_eq!(status_of(".word 0xffff010303020170"), (Field, 0));
    // field before reg (r200).
    assert_eq!(status_of(".word 0x00000300c8c8c870"), (Field, 0));
    assert_eq!(status_of(".word 0x00008000c8c8c870"), (Field, 0));
    assert_eq!(status_of(".word 0x00004000c8c8c870"), (Reg, 0)); // skip
    assert_eq!(status_of(".word 0x00010000c8c8c870"), (Field, 0));
    // Not errors of decoding: mode 1, mode 2 with o, pads (then the shape
    // of r3 = 0 does nothing; the next word, 0, is undefined).
    assert_eq!(status_of(".word 0x0000010003020170"), (Opcode, 1));
    assert_eq!(status_of(".word 0xffff3e0003020170"), (Opcode, 1));
    // reg: each of rd, ra, rb, rc, whatever the suffix.
    for suffix in ["", ", acc", ", bias 4", ", pad 1, 1"] {
        assert_eq!(status_of(&format!("mma r4, r1, r2, r3{suffix}")), (Reg, 0));
        assert_eq!(status_of(&format!("mma r0, r4, r2, r3{suffix}")), (Reg, 0));
        assert_eq!(status_of(&format!("mma r0, r1, r255, r3{suffix}")), (Reg, 0));
        assert_eq!(status_of(&format!("mma r0, r1, r2, r4{suffix}")), (Reg, 0));
    }
    // pc at D-1, before align (Co = r0 = 1); reg before pc.
    let pad = "li r3, 0\n".repeat(15);
    assert_eq!(status_of(&format!("{pad}mma r0, r1, r2, r3")), (Pc, 15));
    assert_eq!(status_of(&format!("{pad}mma r0, r1, r2, r3, bias 4")), (Pc, 15));
    assert_eq!(status_of(&format!("{pad}mma r0, r1, r2, r9")), (Reg, 15));
    // align: Co, Ao, Bo each, even when the shape is empty; before smem.
    assert_eq!(status_of("mma r0, r1, r2, r3"), (Align, 0)); // Co = 1, empty
    assert_eq!(status_of("mma r0, r1, r2, r3, acc"), (Align, 0));
    assert_eq!(mma(0, 2, 0, 0), (Align, 4));
    assert_eq!(mma(0, 0, 0x1000_0001, 0), (Align, 4));
    assert_eq!(mma(4, 8, 12, shape(1, 1, 1)), (Ok, 5));
    assert_eq!(mma(-2, 0, 0, shape(200, 200, 200)), (Align, 4)); // also smem
    assert_eq!(mma_s(2, 0, 0, shape(1, 1, 1), ", bias 262140"), (Align, 4)); // also smem
    // smem, TM = 2, TN = 3, K = 5: PA = 8, PB = 8: A Ao + 16, B Bo + 40, C
    // Co + 24, each at most 64.
    let s = shape(2, 3, 5);
    assert_eq!(mma(40, 48, 24, s), (Ok, 5));
    assert_eq!(mma(44, 0, 0, s), (Smem, 4));
    assert_eq!(mma(0, 52, 0, s), (Smem, 4));
    assert_eq!(mma(0, 0, 28, s), (Smem, 4));
    // Mode 1 adds no bound: C at the share's end.
    assert_eq!(mma_s(40, 48, 24, s, ", acc"), (Ok, 5));
    assert_eq!(mma_s(44, 0, 0, s, ", acc"), (Smem, 4));
    // PB = 8*ceil(TN/8), PA = 4*ceil(K/4): TN = 9, K = 1: PB = 16, PA =
    // 4, C 36 bytes; TN = 8: PB = 8; K = 3: PA = 4, K = 5: 8.
    assert_eq!(mma(28, 60, 48, shape(1, 9, 1)), (Ok, 5)); // C 64, A 64, B 64
    assert_eq!(mma(28, 60, 52, shape(1, 9, 1)), (Smem, 4)); // B 68
    assert_eq!(mma(32, 60, 48, shape(1, 9, 1)), (Smem, 4)); // C 68
    assert_eq!(mma(0, 0, 56, shape(1, 8, 1)), (Ok, 5)); // B 64
    assert_eq!(mma(0, 0, 56, shape(1, 9, 1)), (Smem, 4)); // B 72
    assert_eq!(mma(0, 56, 0, shape(2, 1, 3)), (Ok, 5)); // A 56 + 2*4
    assert_eq!(mma(0, 56, 0, shape(2, 1, 5)), (Smem, 4)); // A 56 + 2*8
    // Pads: PA = 4*ceil(K/4) + 4*qa, PB = 8*ceil(TN/8) + 4*qb. TM = 4, K =
    // 1, qa = 3: PA = 16, A Ao + 64; TN = 1, K = 5, qb = 1: PB = 12, B Bo
    // + 60; qb = 2: 16, B Bo + 80.
    assert_eq!(mma_s(0, 0, 0, shape(4, 1, 1), ", pad 3, 0"), (Ok, 5));
    assert_eq!(mma_s(0, 4, 0, shape(4, 1, 1), ", pad 3, 0"), (Smem, 4));
    assert_eq!(mma_s(0, 4, 0, shape(4, 1, 1), ", pad 2, 0"), (Ok, 5)); // A 4 + 4*12
    assert_eq!(mma_s(0, 0, 4, shape(1, 1, 5), ", pad 0, 1"), (Ok, 5));
    assert_eq!(mma_s(0, 0, 8, shape(1, 1, 5), ", pad 0, 1"), (Smem, 4));
    assert_eq!(mma_s(0, 0, 0, shape(1, 1, 5), ", pad 0, 2"), (Smem, 4)); // B 80
    assert_eq!(mma_s(0, 0, 4, shape(1, 1, 5), ", acc, pad 3, 1"), (Ok, 5)); // A 20, B 64
    // The bias row: o + 4*TN at most 64 (TN = 2: C 8, A 4, B 8; TN = 9:
    // C 36, A 4, B 16).
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 56"), (Ok, 5));
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 60"), (Smem, 4));
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 64"), (Smem, 4));
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 262140"), (Smem, 4));
    assert_eq!(mma_s(0, 36, 40, shape(1, 9, 1), ", bias 28"), (Ok, 5));
    assert_eq!(mma_s(0, 36, 40, shape(1, 9, 1), ", bias 32"), (Smem, 4));
    assert_eq!(mma_s(0, 36, 40, shape(1, 9, 1), ", bias 32, pad 0, 0"), (Smem, 4));
    // The bias row may overlap A, B or C.
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 0"), (Ok, 5));
    assert_eq!(mma_s(0, 8, 16, shape(1, 2, 1), ", bias 16"), (Ok, 5));
    // K > kmax (16) even when everything fits (K = 17 needs B 17*8 = 136
    // bytes: see below with a larger share); K = 16 fits.
    assert_eq!(mma(0, 0, 0, shape(1, 1, 17)), (Smem, 4));
    // No wrap.
    assert_eq!(mma(-4, 0, 0, shape(1, 1, 1)), (Smem, 4));
    assert_eq!(mma(0, 0, -8, shape(1, 1, 1)), (Smem, 4));
    // Empty shapes: no smem check (offsets past the share, K > kmax, the
    // bias row past the share).
    assert_eq!(mma(0x1000, 0x1000, 0x1000, shape(0, 9, 300)), (Ok, 5));
    assert_eq!(mma(0x1000, 0x1000, 0x1000, shape(9, 0, 300)), (Ok, 5));
    assert_eq!(mma(0x1000, 0x1000, 0x1000, shape(9, 9, 0)), (Ok, 5));
    assert_eq!(mma_s(0, 0, 0, shape(9, 0, 1), ", bias 262140, pad 3, 3"), (Ok, 5));

    // K > kmax with a share that holds it: kmax 16, share 256: K = 16 fits
    // (A 16, B 128, C 4), K = 17 (A 20, B 136) does not, by kmax alone.
    let p = CuParams { kmax: 16, ..one_slot() };
    let run_k = |k: u32| {
        let src = format!("li r0, 200\nli r1, 0\nli r2, 32\nli r3, {:#x}\nmma r0, r1, r2, r3\nend", shape(1, 1, k));
        let b = go(&p, &setup(&src, vec![block(1)], 256, 4, 5)).outcome.blocks[0];
        (b.status, b.pc)
    };
    assert_eq!(run_k(16), (Ok, 5));
    assert_eq!(run_k(17), (Smem, 4));
    // The check alone.
    let op = |co: u32, ao: u32, bo: u32, rc: u32, c0: C0| mma::Op::of(co, ao, bo, rc, c0, 0, 0);
    assert_eq!(mma::check(16, 1 << 20, &op(0, 0, 4096, shape(1, 1, 16), C0::Zero)), Result::Ok(()));
    assert_eq!(mma::check(16, 1 << 20, &op(0, 0, 4096, shape(1, 1, 17), C0::Zero)), Err(Smem));
    assert_eq!(mma::check(1024, 1 << 20, &op(0, 0, 4096, shape(1, 1, 1024), C0::Zero)), Result::Ok(()));
    assert_eq!(mma::check(1024, 1 << 20, &op(0, 0, 4096, shape(1, 1, 1025), C0::Zero)), Err(Smem));
    assert_eq!(mma::check(16, 0, &op(0, 0, 0, shape(0, 1, 17), C0::Zero)), Result::Ok(()));
    assert_eq!(mma::check(16, 0, &op(1, 0, 0, shape(0, 1, 17), C0::Zero)), Err(Align));
    assert_eq!(mma::check(16, 100, &op(0, 0, 0, shape(1, 3, 1), C0::Bias(88))), Result::Ok(()));
    assert_eq!(mma::check(16, 100, &op(0, 0, 0, shape(1, 3, 1), C0::Bias(92))), Err(Smem));
    assert_eq!(mma::check(16, 0, &op(0, 0, 0, shape(1, 0, 1), C0::Bias(92))), Result::Ok(()));
    assert_eq!(mma::check(16, 100, &op(0, 0, 0, shape(1, 3, 1), C0::Acc)), Result::Ok(()));
    assert_eq!(mma::check(16, 100, &mma::Op::of(0, 36, 0, shape(4, 1, 1), C0::Zero, 3, 0)), Result::Ok(()));
    assert_eq!(mma::check(16, 100, &mma::Op::of(0, 40, 0, shape(4, 1, 1), C0::Zero, 3, 0)), Err(Smem));
    assert_eq!(mma::check(16, 100, &mma::Op::of(0, 0, 40, shape(1, 9, 3), C0::Zero, 0, 1)), Result::Ok(()));
    assert_eq!(mma::check(16, 100, &mma::Op::of(0, 0, 44, shape(1, 9, 3), C0::Zero, 0, 1)), Err(Smem));
}

#[test]
fn mma_in_a_kernel_on_two_shares() {
    // Two slots, four banks of 64 words, shares of 256 bytes (bases 0 and
    // 256), grid 2 x 2: each block loads A (5 x 7, PA = 8: 40 bytes) and B
    // (7 x 6, PB = 8: 56 bytes) from memory, then C = A . B (5 x 6) at 96.
    let p = CuParams { slots: 2, banks: 4, regs: 32, ..one_slot() };
    let src = "li r4, 0x3000\nli r6, 0x10060\nld r3, r4, r5, r6\n\
               li r7, 40\nli r8, 96\nli r9, 0x70605\nmma r8, r3, r7, r9\nend";
    let mut r = setup(src, vec![block(0), block(1)], 256, 16, 3);
    r.memory.load(0x3000, &noise(96, 42));
    let f = go(&p, &r);
    assert!(f.outcome.blocks.iter().all(|b| b.status == Status::Ok));
    assert_eq!(f.outcome.blocks.iter().map(|b| b.share).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(f.outcome.counters.mma, 2);
    for base in [0u32, 256] {
        let op = mop(base, 96, 0, 40, 5, 6, 7);
        let b = base as usize;
        assert_eq!(&f.smem[b..b + 96], &noise(96, 42)[..]);
        assert_eq!(&f.smem[b + 96..b + 216], &mma_reference(&f.smem, &op)[..], "share at {base}");
        assert_eq!(&f.smem[b + 216..b + 256], &[0; 40][..], "nothing after C");
    }
}

#[test]
fn mma_acc_and_bias_in_a_kernel_on_two_shares() {
    // mma_in_a_kernel_on_two_shares with 240 bytes loaded (A at 0, B at 40,
    // C at 96, a bias row of 6 words at 216) and each C0 mode.
    let p = CuParams { slots: 2, banks: 4, regs: 32, ..one_slot() };
    let image = noise(240, 7);
    for (suffix, c0) in [("", C0::Zero), (", acc", C0::Acc), (", bias 216", C0::Bias(216))] {
        let src = format!(
            "li r4, 0x3000\nli r6, 0x100F0\nld r3, r4, r5, r6\n\
             li r7, 40\nli r8, 96\nli r9, 0x70605\nmma r8, r3, r7, r9{suffix}\nend"
        );
        let mut r = setup(&src, vec![block(0), block(1)], 256, 16, 3);
        r.memory.load(0x3000, &image);
        let f = go(&p, &r);
        assert!(f.outcome.blocks.iter().all(|b| b.status == Status::Ok), "{suffix}");
        assert_eq!(f.outcome.counters.mma, 2);
        let mut before = vec![0u8; 512];
        before[..240].copy_from_slice(&image);
        before[256..496].copy_from_slice(&image);
        for base in [0u32, 256] {
            let op = mma::Op { c0, ..mop(base, 96, 0, 40, 5, 6, 7) };
            let b = base as usize;
            assert_eq!(&f.smem[b..b + 96], &image[..96]);
            assert_eq!(&f.smem[b + 96..b + 216], &mma_reference(&before, &op)[..], "share at {base}{suffix}");
            assert_eq!(&f.smem[b + 216..b + 240], &image[216..240], "the bias row");
        }
        if c0 != C0::Zero {
            // C0 is really added.
            let op = mop(0, 96, 0, 40, 5, 6, 7);
            assert_ne!(&f.smem[96..216], &mma_reference(&before, &op)[..]);
        }
    }
}

// ---- tex ----
//
// From docs/cu.md ("`tex`", "Texture operations") and docs/texture.md
// ("Exact arithmetic", "Tiles", "Timing"). The unit here: one bank, PD = 1 +
// ceil(CW/4) = 5 prep stages (max_size 4096: IB = 13, CW = max(13, 6, 6) +
// 2 = 15), D = 4 passes in flight, L = 1. With one bank a pass is one texel
// and, as a pass is counted from its issue to its collect (L + 1 = 2
// cycles) and D = 4 >= L + 2, a pass issues every cycle. An op taken in `a`
// by the idle unit: in the sequencer from a + PD + 1 = a + 6, its passes
// issue in a + 6, a + 7, ..; each request is taken (a texel fetch) the
// cycle after its pass issues; the last pass, issued in i, is collected in
// i + 1 + L = i + 2 (S1 loaded), S1 -> S2 in i + 3, S2 -> result in i + 4,
// the result valid and taken in i + 5. So:
//   nearest (1 texel):            passes a + 6,           result a + 11
//   bilinear, gather4 (4 texels): passes a + 6 .. a + 9,  result a + 14
//   conv quad, P = (KW+1)(KH+1) texels, back to back from B = g + 6 +
//   KW*KH: quad q's passes B + 6 + qP .. B + 5 + (q+1)P, result
//   B + 10 + (q+1)P (the next quad waits in the last prep stage)

use gpurtl_params::texture::{AddressMode as Am, Format as Fm};
use isa::{SampleOp, TexKind};

/// A kind, with the bits of `rb`'s value it adds to `W | H << 16`: a
/// conv's kernel size (`KW - 1` at 15:13, `KH - 1` at 31:29), none for a
/// sample.
type Kind = (TexKind, u32);

/// `rb`'s value: `W` = bits 12:0, `KW - 1` = 15:13, `H` = 28:16, `KH - 1`
/// = 31:29.
fn rb(w: u32, h: u32, kw: u32, kh: u32) -> u32 {
    w | (kw - 1) << 13 | h << 16 | (kh - 1) << 29
}

/// A `tex` of the share at `base`, `rb`'s value `W | H << 16` and the
/// kind's bits.
#[allow(clippy::too_many_arguments)]
fn top(base: u32, o: u32, t: u32, w: u32, h: u32, rc: u32, kind: Kind, format: Fm, mx: Am, my: Am, k: u8) -> tex::Op {
    tex::Op { smem_base: base, ..tex::Op::of(o, t, w | h << 16 | kind.1, rc, kind.0, format, mx, my, k) }
}

fn sample(op: SampleOp, n: u16) -> Kind {
    (TexKind::Sample { op, n }, 0)
}

/// A `KW x KH` conv over `QW x QH` quads.
fn conv(kw: u8, kh: u8, qw: u8, qh: u8) -> Kind {
    (TexKind::Conv { qw, qh }, rb(0, 0, kw as u32, kh as u32))
}

/// `tex::run` on `m` (checked first), started in `g`, with its log.
fn tex_run(op: &tex::Op, g: u64, m: &mut [u8]) -> tex::Outcome {
    assert_eq!(tex::check(m.len() as u32 - op.smem_base, op), Ok(()));
    tex::run(&one_slot(), op, g, m, &mut Banks::new(1), true)
}

/// The int32 words at share offsets `at ..`.
fn words_at(m: &[u8], at: usize, n: usize) -> Vec<i32> {
    (0..n).map(|i| i32::from_le_bytes(m[at + 4 * i..at + 4 * i + 4].try_into().unwrap())).collect()
}

fn u32s(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn tex_parameters_from_the_spec() {
    let p = one_slot();
    let tp = tex::texture_params(&p);
    use gpurtl_params::texture::Broadcast;
    assert_eq!((tp.banks, tp.max_size, tp.frac_bits, tp.offset_bits, tp.max_kernel), (1, 4096, 8, 6, 8));
    assert_eq!((tp.weight_bits, tp.acc_bits, tp.broadcast, tp.max_outstanding), (8, 32, Broadcast::Selective, 4));
    // addr_bits = log2(SB): 256 bytes here, 4 x 1024 x 4 by default.
    assert_eq!(tp.addr_bits, 8);
    assert_eq!(tex::texture_params(&CuParams::default()).addr_bits, 14);
    assert_eq!(crate::models::texture::timing::prep_depth(&tp), 5);
}

/// The 3 x 2 r8 texture [10, 20, 30; 40, 50, 60] at share offset 16, the
/// 3x3 kernel [1, 0, 0; 0, 2, 0; 0, 0, -1] just before it (bytes 7..15),
/// 0xEE elsewhere: 32 bytes. So pixel(x, y) = T(x-1, y-1) + 2 T(x, y) -
/// T(x+1, y+1).
fn conv_image() -> Vec<u8> {
    let mut v = vec![0xEE; 32];
    v[7..16].copy_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0, 0xFF]);
    v[16..22].copy_from_slice(&[10, 20, 30, 40, 50, 60]);
    v
}

#[test]
fn tex_conv_values_with_each_address_mode() {
    // The quad at (2, 1): pixels (2, 1), (3, 1), (2, 2), (3, 2), using
    // x in 1..4, y in 0..3 (T(x, y) = 10 (1 + x + 3y) inside):
    //   (2,1) = T(1,0) + 2 T(2,1) - T(3,2)   (3,1) = T(2,0) + 2 T(3,1) - T(4,2)
    //   (2,2) = T(1,1) + 2 T(2,2) - T(3,3)   (3,2) = T(2,1) + 2 T(3,2) - T(4,3)
    // clamp (x <= 2, y <= 1): 20 + 120 - 60, 30 + 120 - 60, 50 + 120 - 60,
    //   60 + 120 - 60 = 80, 90, 110, 120.
    // repeat (x mod 3, y mod 2): 20 + 2*60 - T(0,0) = 130; 30 + 2 T(0,1) -
    //   T(1,0) = 30 + 80 - 20 = 90; 50 + 2 T(2,0) - T(0,1) = 50 + 60 - 40 =
    //   70; 60 + 2 T(0,0) - T(1,1) = 60 + 20 - 50 = 30.
    // mirror (W = 3: x mod 6, 3 -> 2, 4 -> 1; H = 2: y mod 4, 2 -> 1, 3 ->
    //   0): 20 + 120 - T(2,1) = 80; 30 + 2 T(2,1) - T(1,1) = 30 + 120 - 50 =
    //   100; 50 + 2 T(2,1) - T(2,0) = 50 + 120 - 30 = 140; 60 + 2 T(2,1) -
    //   T(1,0) = 60 + 120 - 20 = 160.
    for (mode, want) in [(Am::Clamp, [80, 90, 110, 120]), (Am::Repeat, [130, 90, 70, 30]), (Am::Mirror, [80, 100, 140, 160])] {
        let mut m = conv_image();
        m.resize(64, 0xEE);
        let op = top(0, 32, 16, 3, 2, 2 | 1 << 16, conv(3, 3, 1, 1), Fm::R8, mode, mode, 0);
        let out = tex_run(&op, 0, &mut m);
        assert_eq!(words_at(&m, 32, 4), want, "{mode:?}");
        assert_eq!(&m[48..64], &[0xEE; 16], "nothing after the output");
        assert_eq!(&m[..32], &conv_image()[..], "nothing before it");
        // 16 fetches: the 4 x 4 patch, each texel once (clamped or wrapped
        // duplicates counted).
        assert_eq!(out.fetches, 16);
    }
    // Mixed modes: x repeat, y mirror. (2,1): 20 + 120 - T(0, 1) = 100;
    // (3,1): 30 + 2 T(0,1) - T(1,1) = 30 + 80 - 50 = 60; (2,2): 50 + 2 T(2,1)
    // - T(0,0) = 50 + 120 - 10 = 160; (3,2): 60 + 2 T(0,1) - T(1,0) = 60 +
    // 80 - 20 = 120.
    let mut m = conv_image();
    m.resize(64, 0xEE);
    let op = top(0, 32, 16, 3, 2, 2 | 1 << 16, conv(3, 3, 1, 1), Fm::R8, Am::Repeat, Am::Mirror, 0);
    tex_run(&op, 0, &mut m);
    assert_eq!(words_at(&m, 32, 4), [100, 60, 160, 120]);
}

#[test]
fn tex_conv_channels_and_the_extreme_sum() {
    // rgba8, 2 x 1, texels [1, 2, 3, 4], [5, 6, 7, 8] (bytes r, g, b, a), a
    // 1x2 kernel [-128; 127] (KW = 1, KH = 2: floor(KH/2) = 1: pixel (x, y)
    // = -128 T(x, y-1) + 127 T(x, y)), clamp, channel 2 (b): T(0, .) = 3,
    // T(1, .) = 7 (one row: every y clamps to 0): pixel = -128 t + 127 t =
    // -t: (0,0) -3, (1,0) -7, (0,1) -3, (1,1) -7.
    let mut m = vec![0xEE; 64];
    m[14..16].copy_from_slice(&[0x80, 0x7F]);
    m[16..24].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let op = top(0, 32, 16, 2, 1, 0, conv(1, 2, 1, 1), Fm::Rgba8, Am::Clamp, Am::Clamp, 2);
    let out = tex_run(&op, 0, &mut m);
    assert_eq!(words_at(&m, 32, 4), [-3, -7, -3, -7]);
    assert_eq!(out.fetches, 2 * 3);
    // Channel 3 (a): -4, -8. r16 (2 bytes a texel, little-endian) with
    // channel 0: texels 0x0201, 0x0403: -513, -1027.
    let mut m2 = m.clone();
    tex_run(&tex::Op { k: 3, ..op }, 0, &mut m2);
    assert_eq!(words_at(&m2, 32, 4), [-4, -8, -4, -8]);
    let mut m3 = m.clone();
    tex_run(&tex::Op { format: Fm::R16, k: 0, ..op }, 0, &mut m3);
    assert_eq!(words_at(&m3, 32, 4), [-0x201, -0x403, -0x201, -0x403]);
    // The extreme sum: an 8 x 8 kernel of -128 on r16 texels 0xFFFF (a 1 x 1
    // texture: every coordinate clamps to it): 64 * -128 * 65535 =
    // -536862720. No sum reaches 2^31, so the 32-bit wrap never shows.
    let mut m4 = vec![0u8; 256];
    m4[..64].fill(0x80); // 64 weights of -128 at T - 64 = 0
    m4[64..66].copy_from_slice(&[0xFF, 0xFF]);
    let op = top(0, 128, 64, 1, 1, 0, conv(8, 8, 1, 1), Fm::R16, Am::Clamp, Am::Clamp, 0);
    let out = tex_run(&op, 0, &mut m4);
    assert_eq!(words_at(&m4, 128, 4), [-536862720; 4]);
    assert_eq!(out.fetches, 81);
}

#[test]
fn tex_sample_values() {
    // r8 3 x 2 [10, 20, 30; 40, 50, 60] at 16 (conv_image), coordinates at
    // L = 32, output at 48.
    let coords = |m: &mut Vec<u8>, pairs: &[(u32, u32)]| {
        let w: Vec<u32> = pairs.iter().flat_map(|&(u, v)| [u, v]).collect();
        m[32..32 + 8 * pairs.len()].copy_from_slice(&u32s(&w));
    };
    let mut base = conv_image();
    base.resize(128, 0xEE);
    // nearest: (floor(u/256), floor(v/256)): u = 0x2FF, v = 0x100 -> T(2,1)
    // = 60; u = 0x400 (x = 4): clamp T(2, 0) = 30, repeat T(1, 0) = 20,
    // mirror (4 mod 6 = 4 >= 3: 6 - 1 - 4 = 1) T(1, 0) = 20; bits 31:21
    // ignored.
    for (mode, want) in [(Am::Clamp, [60, 30]), (Am::Repeat, [60, 20]), (Am::Mirror, [60, 20])] {
        let mut m = base.clone();
        coords(&mut m, &[(0xFFE0_02FF, 0x100), (0x400, 0x8000_0000)]);
        let out = tex_run(&top(0, 48, 16, 3, 2, 32, sample(SampleOp::Nearest, 2), Fm::R8, mode, Am::Clamp, 0), 0, &mut m);
        assert_eq!(words_at(&m, 48, 2), want, "{mode:?}");
        assert_eq!(&m[56..64], &[0xEE; 8]);
        assert_eq!(out.fetches, 2);
    }
    // bilinear r8: u' = u - 128, x0 = floor(u'/256), a = u' mod 256 (the
    // same for v): u = 384, v = 128: x0 = 1, a = 0, y0 = 0, b = 0: T(1,0) =
    // 20. u = 256, v = 256: x0 = y0 = 0, a = b = 128: (10 + 20 + 40 + 50) *
    // 128 * 128 + 2^15 >> 16 = 30 (30.5 floored). u = 0, v = 0: x0 = y0 =
    // -1, a = b = 128, clamp: all four T(0,0) = 10: (40 * 16384 + 32768) >>
    // 16 = 10.
    let mut m = base.clone();
    coords(&mut m, &[(384, 128), (256, 256), (0, 0)]);
    let out = tex_run(&top(0, 64, 16, 3, 2, 32, sample(SampleOp::Bilinear, 3), Fm::R8, Am::Clamp, Am::Clamp, 0), 0, &mut m);
    assert_eq!(words_at(&m, 64, 3), [20, 30, 10]);
    assert_eq!(out.fetches, 12);
    // gather4 r8: texels (x0+dx, y0+dy), (x0+1+dx, ..), (.., y0+1+dy), ..;
    // dx, dy = bits 31:26 (signed), 25:21 ignored. u = v = 256: x0 = y0 =
    // 0: [10, 20, 40, 50]. dx = -1 (0b111111), dy = 1, x repeat, y clamp:
    // x -1 -> 2, 0; y 1, 2 -> 1: T(2,1), T(0,1), T(2,1), T(0,1) = [60, 40,
    // 60, 40].
    let mut m = base.clone();
    coords(&mut m, &[(256, 256), (0xFFE0_0100, 0x0400_0100)]);
    let out = tex_run(&top(0, 64, 16, 3, 2, 32, sample(SampleOp::Gather4, 2), Fm::R8, Am::Repeat, Am::Clamp, 0), 0, &mut m);
    assert_eq!(words_at(&m, 64, 8), [10, 20, 40, 50, 60, 40, 60, 40]);
    assert_eq!(out.fetches, 8);
}

#[test]
fn tex_rgba8_and_r16_byte_order() {
    // rgba8 2 x 2 at 0: texel (x, y) = bytes [t, t+1, t+2, t+3] with t =
    // 0x10 (1 + x + 2y): r = byte 0 .. a = byte 3.
    let mut m = vec![0xEE; 128];
    for (i, t) in [0x10u8, 0x20, 0x30, 0x40].iter().enumerate() {
        m[4 * i..4 * i + 4].copy_from_slice(&[*t, t + 1, t + 2, t + 3]);
    }
    // bilinear u = 256, v = 128: x0 = 0, a = 128, y0 = 0, b = 0: per
    // channel (T00 + T10) * 128 * 256 + 2^15 >> 16: (0x10 + c + 0x20 + c)/2
    // + 1/2, floored: 24, 25, 26, 27 (r, g, b, a: nw = 4).
    m[32..40].copy_from_slice(&u32s(&[256, 128]));
    // gather4 channel 2 (b) at u = v = 256: [0x12, 0x22, 0x32, 0x42].
    m[40..48].copy_from_slice(&u32s(&[256, 256]));
    let mut m1 = m.clone();
    tex_run(&top(0, 64, 0, 2, 2, 32, sample(SampleOp::Bilinear, 1), Fm::Rgba8, Am::Clamp, Am::Clamp, 0), 0, &mut m1);
    assert_eq!(words_at(&m1, 64, 4), [24, 25, 26, 27]);
    assert_eq!(&m1[80..96], &[0xEE; 16]);
    // nearest: every channel of T(1, 1) = [0x40, 0x41, 0x42, 0x43].
    let mut m2 = m.clone();
    m2[32..40].copy_from_slice(&u32s(&[0x1FF, 0x100]));
    tex_run(&top(0, 64, 0, 2, 2, 32, sample(SampleOp::Nearest, 1), Fm::Rgba8, Am::Clamp, Am::Clamp, 3), 0, &mut m2);
    assert_eq!(words_at(&m2, 64, 4), [0x40, 0x41, 0x42, 0x43]);
    let mut m3 = m.clone();
    tex_run(&top(0, 64, 0, 2, 2, 40, sample(SampleOp::Gather4, 1), Fm::Rgba8, Am::Clamp, Am::Clamp, 2), 0, &mut m3);
    assert_eq!(words_at(&m3, 64, 4), [0x12, 0x22, 0x32, 0x42]);
    // r16, the same bytes as a 4 x 2 texture of 2-byte texels: T(x, 0) =
    // 0x1110, 0x1312, 0x2120, 0x2322; T(x, 1) = 0x3130, ...: nearest at (1,
    // 0) and (3, 1): 0x1312, 0x4342.
    let mut m4 = m.clone();
    m4[32..48].copy_from_slice(&u32s(&[0x100, 0, 0x3FF, 0x1FF]));
    tex_run(&top(0, 64, 0, 4, 2, 32, sample(SampleOp::Nearest, 2), Fm::R16, Am::Clamp, Am::Clamp, 0), 0, &mut m4);
    assert_eq!(words_at(&m4, 64, 2), [0x1312, 0x4342]);
}

#[test]
fn tex_sample_exact_cycles_and_accesses() {
    // Two nearest samples, r8 3 x 2 at 16, L = 32, O = 48, g = 100.
    // Configuration 101 (0x000: r8 | clamp << 2 | mirror << 4 = 0x20), 102
    // (0x002, 0), 103 (0x003: W - 1 = 2, H - 1 = 1 << 16).
    // Sample 0: t = 104: READ u 104 (word 32), READ v 106 (36); op taken
    //   108; pass 114, fetch 115 (texel (2, 1): 16 + 5 = 21); result 119;
    //   write 120 (48).
    // Sample 1: t = 121: READs 121 (40), 123 (44); op 125; fetch 132 (u =
    //   0x100, v = 0x280: (1, 2), mirror y: 4 - 1 - 2 = 1: texel (1, 1) at
    //   20); result 136; write 137 (52). Done 137.
    let mut m = conv_image();
    m.resize(64, 0xEE);
    m[32..48].copy_from_slice(&u32s(&[0x2FF, 0x100, 0x100, 0x280]));
    let op = top(0, 48, 16, 3, 2, 32, sample(SampleOp::Nearest, 2), Fm::R8, Am::Clamp, Am::Mirror, 0);
    let out = tex_run(&op, 100, &mut m);
    use tex::Access as A;
    assert_eq!(
        out.accesses,
        [
            A::Cfg { cycle: 101, addr: 0x000, data: 0x20 },
            A::Cfg { cycle: 102, addr: 0x002, data: 0 },
            A::Cfg { cycle: 103, addr: 0x003, data: 0x1_0002 },
            A::Read { cycle: 104, at: 32 },
            A::Read { cycle: 106, at: 36 },
            A::Op { cycle: 108 },
            A::Fetch { cycle: 115, at: 21 },
            A::Result { cycle: 119 },
            A::Write { cycle: 120, at: 48, value: 60 },
            A::Read { cycle: 121, at: 40 },
            A::Read { cycle: 123, at: 44 },
            A::Op { cycle: 125 },
            A::Fetch { cycle: 132, at: 20 },
            A::Result { cycle: 136 },
            A::Write { cycle: 137, at: 52, value: 50 },
        ]
    );
    assert_eq!((out.done, out.fetches), (137, 2));

    // Two bilinear samples of rgba8 (nw = 4), 1 x 1 texture at 0 (every
    // footprint texel is (0, 0): clamp), g = 0: sample 0 op 8, passes 14 ..
    // 17, fetches 15 .. 18 (all at 0), result 22, writes 23 .. 26; sample 1
    // t = 27, op 31, fetches 38 .. 41, result 45, writes 46 .. 49: done 49.
    let mut m = vec![0u8; 64];
    m[..4].copy_from_slice(&[1, 2, 3, 4]);
    m[8..24].copy_from_slice(&u32s(&[77, 1000, 0x1F_FFFF, 0]));
    let op = top(0, 24, 0, 1, 1, 8, sample(SampleOp::Bilinear, 2), Fm::Rgba8, Am::Clamp, Am::Clamp, 0);
    let out = tex_run(&op, 0, &mut m);
    let fetches: Vec<u64> = out.accesses.iter().filter_map(|a| if let A::Fetch { cycle, at: 0 } = a { Some(*cycle) } else { None }).collect();
    assert_eq!(fetches, [15, 16, 17, 18, 38, 39, 40, 41]);
    let writes: Vec<(u64, u32, u32)> =
        out.accesses.iter().filter_map(|a| if let A::Write { cycle, at, value } = a { Some((*cycle, *at, *value)) } else { None }).collect();
    let want: Vec<(u64, u32, u32)> = (0..8).map(|i| (if i < 4 { 23 + i } else { 42 + i } as u64, 24 + 4 * i as u32, 1 + (i % 4) as u32)).collect();
    assert_eq!(writes, want);
    assert_eq!(out.done, 49);
    // gather4 takes as long as bilinear; nearest 3 cycles less a sample.
    let g4 = tex_run(&tex::Op { kind: sample(SampleOp::Gather4, 2).0, ..op }, 0, &mut m.clone());
    assert_eq!(g4.done, 49);
    let near = tex_run(&tex::Op { kind: sample(SampleOp::Nearest, 2).0, ..op }, 0, &mut m.clone());
    assert_eq!(near.done, 49 - 6);
}

#[test]
fn tex_conv_exact_cycles_and_accesses() {
    // A 1x1 kernel (weight 3 at T - 1 = 19), r8 2 x 2 [1, 2; 3, 4] at 20,
    // one quad at (0, 0), O = 32, g = 100:
    //   cfg 101 0x000 (0), 102 0x002 (0), 103 0x003 (1 | 1 << 16), 104
    //   0x001 (0 | 0 << 8); weight 0 requested 105 (the word at 16), written
    //   106 to 0x400 (3); B = g + 6 + 1 = 107: op taken 107; one tile of 4
    //   texels (patch 2 x 2 at (0, 0)): passes 113 .. 116, fetches 114 ..
    //   117 (texels at 20, 21, 22, 23); result 121; pixels 3 T: (0,0) 3 at
    //   32 in 122, (1,0) 6 at 36 in 123, (0,1) 9 at 40 in 124, (1,1) 12 at
    //   44 in 125. Done 125.
    let mut m = vec![0xEEu8; 64];
    m[19] = 3;
    m[20..24].copy_from_slice(&[1, 2, 3, 4]);
    let op = top(0, 32, 20, 2, 2, 0, conv(1, 1, 1, 1), Fm::R8, Am::Clamp, Am::Clamp, 0);
    let out = tex_run(&op, 100, &mut m);
    use tex::Access as A;
    assert_eq!(
        out.accesses,
        [
            A::Cfg { cycle: 101, addr: 0x000, data: 0 },
            A::Cfg { cycle: 102, addr: 0x002, data: 0 },
            A::Cfg { cycle: 103, addr: 0x003, data: 0x1_0001 },
            A::Cfg { cycle: 104, addr: 0x001, data: 0 },
            A::Read { cycle: 105, at: 16 },
            A::Cfg { cycle: 106, addr: 0x400, data: 3 },
            A::Op { cycle: 107 },
            A::Fetch { cycle: 114, at: 20 },
            A::Fetch { cycle: 115, at: 21 },
            A::Fetch { cycle: 116, at: 22 },
            A::Fetch { cycle: 117, at: 23 },
            A::Result { cycle: 121 },
            A::Write { cycle: 122, at: 32, value: 3 },
            A::Write { cycle: 123, at: 36, value: 6 },
            A::Write { cycle: 124, at: 40, value: 9 },
            A::Write { cycle: 125, at: 44, value: 12 },
        ]
    );
    assert_eq!((out.done, out.fetches), (125, 4));

    // 3x3 over 2 x 1 quads on conv_image's texture (W 3, H 2 at 16,
    // weights at 7..15), quads at (0, 0) and (2, 0), g = 0:
    //   cfg 1, 2, 3, 4 (0x001: 2 | 2 << 8); weights m = 0..8 requested 5 ..
    //   13 (bytes 7 .. 15: words 4, 8, .., 12), written 6 .. 14 to 0x400 +
    //   32 (m / 3) + m % 3; B = 6 + 9 = 15; quad 0 taken 15, quad 1 16;
    //   P = 16: quad 0's passes 21 .. 36, result 15 + 10 + 16 = 41, writes
    //   42 .. 45; quad 1's passes 37 .. 52, result 57, writes 58 .. 61: done
    //   61.
    // Values (clamp): pixel(x, y) = T(x-1, y-1) + 2 T(x, y) - T(x+1, y+1):
    //   (0,0) 10 + 20 - 50 = -20, (1,0) 10 + 40 - 60 = -10, (2,0) 20 + 60 -
    //   60 = 20, (3,0) 30 + 60 - 60 = 30, (0,1) 10 + 80 - 50 = 40, (1,1) 10
    //   + 100 - 60 = 50, (2,1) 80, (3,1) 90; rows of 2*QW = 4 words: [-20,
    //   -10, 20, 30], [40, 50, 80, 90]; quad 0 writes (0,0), (1,0), (0,1),
    //   (1,1) at 32, 36, 48, 52; quad 1 at 40, 44, 56, 60.
    let mut m = conv_image();
    m.resize(64, 0xEE);
    let op = top(0, 32, 16, 3, 2, 0, conv(3, 3, 2, 1), Fm::R8, Am::Clamp, Am::Clamp, 0);
    let out = tex_run(&op, 0, &mut m);
    assert_eq!(words_at(&m, 32, 8), [-20, -10, 20, 30, 40, 50, 80, 90]);
    let kinds = |f: &dyn Fn(&A) -> Option<u64>| out.accesses.iter().filter_map(f).collect::<Vec<u64>>();
    assert_eq!(kinds(&|a| if let A::Read { cycle, .. } = a { Some(*cycle) } else { None }), (5..14).collect::<Vec<_>>());
    let reads: Vec<u32> = out.accesses.iter().filter_map(|a| if let A::Read { at, .. } = a { Some(*at) } else { None }).collect();
    assert_eq!(reads, [4, 8, 8, 8, 8, 12, 12, 12, 12]);
    let cfgs: Vec<(u64, u32, u32)> =
        out.accesses.iter().filter_map(|a| if let A::Cfg { cycle, addr, data } = a { Some((*cycle, *addr, *data)) } else { None }).collect();
    assert_eq!(
        cfgs,
        [
            (1, 0, 0),
            (2, 2, 0),
            (3, 3, 0x1_0002),
            (4, 1, 0x202),
            (6, 0x400, 1),
            (7, 0x401, 0),
            (8, 0x402, 0),
            (9, 0x420, 0),
            (10, 0x421, 2),
            (11, 0x422, 0),
            (12, 0x440, 0),
            (13, 0x441, 0),
            (14, 0x442, 0xFF),
        ]
    );
    assert_eq!(kinds(&|a| if let A::Op { cycle } = a { Some(*cycle) } else { None }), [15, 16]);
    assert_eq!(kinds(&|a| if let A::Result { cycle } = a { Some(*cycle) } else { None }), [41, 57]);
    assert_eq!(kinds(&|a| if let A::Fetch { cycle, .. } = a { Some(*cycle) } else { None }), (22..54).collect::<Vec<_>>());
    let writes: Vec<(u64, u32)> = out.accesses.iter().filter_map(|a| if let A::Write { cycle, at, .. } = a { Some((*cycle, *at)) } else { None }).collect();
    assert_eq!(writes, [(42, 32), (43, 36), (44, 48), (45, 52), (58, 40), (59, 44), (60, 56), (61, 60)]);
    assert_eq!((out.done, out.fetches), (61, 32));
    // Quad 0's patch, 4 x 4 at (-1, -1), tiles in raster order, texels of
    // a tile in index order: tile (0,0): (-1,-1) (0,-1) (-1,0) (0,0) ->
    // clamped all (0, 0); tile (1, 0) at (1, -1): (1,0) (2,0) (1,0) (2,0);
    // tile (0, 1) at (-1, 1): (0,1) (0,1) (0,1) (0,1) [y 2 clamps to 1];
    // tile (1, 1): (1,1) (2,1) (1,1) (2,1). Offsets T + X + 3Y.
    let fetched: Vec<u32> = out.accesses.iter().filter_map(|a| if let A::Fetch { at, .. } = a { Some(*at - 16) } else { None }).collect();
    assert_eq!(&fetched[..16], &[0, 0, 0, 0, 1, 2, 1, 2, 3, 3, 3, 3, 4, 5, 4, 5]);
}

#[test]
fn tex_conv_results_never_wait_for_the_writer() {
    // Every kernel size: the results of back-to-back quads come exactly P
    // = (KW+1)(KH+1) >= 4 cycles apart (one texel a cycle on one bank), so
    // each is taken as offered; the first at B + 10 + P, B = g + 6 + KW*KH;
    // done 4 cycles after the last.
    use tex::Access as A;
    for kw in 1..=8u8 {
        for kh in 1..=8u8 {
            let kk = kw as u32 * kh as u32;
            let mut m = vec![1u8; 256];
            let op = top(0, 192, 64, 5, 3, 1 | 1 << 16, conv(kw, kh, 2, 2), Fm::R8, Am::Mirror, Am::Repeat, 0);
            let out = tex_run(&op, 0, &mut m);
            let p = (kw as u64 + 1) * (kh as u64 + 1);
            let b = 6 + kk as u64;
            let results: Vec<u64> = out.accesses.iter().filter_map(|a| if let A::Result { cycle } = a { Some(*cycle) } else { None }).collect();
            assert_eq!(results, (1..=4).map(|q| b + 10 + q * p).collect::<Vec<_>>(), "{kw}x{kh}");
            assert_eq!(out.done, b + 10 + 4 * p + 4);
            assert_eq!(out.fetches, 4 * p);
            // Every texel 1, every weight 1: each pixel is KW * KH.
            assert_eq!(words_at(&m, 192, 16), [kk as i32; 16]);
        }
    }
}

/// The share of `tex_conv_kernel_size_from_rb`: at 0 .. 63 the bytes
/// `(37b + 11) mod 256` (int8 weights: the `KW*KH` just before `T` = 64),
/// at 64 .. 78 the r8 5 x 3 texture `T(x, y) = 3 + 7x + 40y`, then 0.
fn kernel_share() -> Vec<u8> {
    let mut m: Vec<u8> = (0..64u32).map(|b| (37 * b + 11) as u8).collect();
    m.extend((0..15u32).map(|i| (3 + 7 * (i % 5) + 40 * (i / 5)) as u8));
    m.resize(128, 0);
    m
}

/// The spec's conv, written out: pixel `(x, y)` = `sum_{j < KH, i < KW}
/// w[j][i] * T(x + i - floor(KW/2), y + j - floor(KH/2))`, `w[j][i]` the
/// int8 byte at `T - KW*KH + j*KW + i`, coordinates clamped to the 5 x 3
/// texture of [`kernel_share`].
fn kernel_pixel(m: &[u8], kw: i64, kh: i64, x: i64, y: i64) -> i32 {
    let mut sum = 0i64;
    for j in 0..kh {
        for i in 0..kw {
            let w = m[(64 - kw * kh + j * kw + i) as usize] as i8 as i64;
            let (tx, ty) = ((x + i - kw / 2).clamp(0, 4), (y + j - kh / 2).clamp(0, 2));
            sum += w * m[(64 + ty * 5 + tx) as usize] as i64;
        }
    }
    sum as i32
}

#[test]
fn tex_conv_kernel_size_from_rb() {
    // Every KW, KH in 1..8, set only in rb's value (KW - 1 at bits 15:13,
    // KH - 1 at 31:29; imm bits 23:18 are 0): `tex r7, r8, r9, r10, conv
    // 2x2, r8, clamp, clamp, c 0` with O = 128, T = 64, rb = W 5 | H 3 <<
    // 16 | the kernel bits, x0 = 1, y0 = 1 (pixels x, y in 1 ..= 4: the
    // larger patches leave the texture on every side). The values are the spec's
    // formula (kernel_pixel); the kernel is not symmetric, so KW and KH
    // swapped give other values (checked for KW != KH). The unit writes KW
    // - 1, KH - 1 << 8 at cfg 0x001, reads the KW*KH weights, and fetches
    // (KW+1)(KH+1) texels a quad; the writes begin at B + 10 + P + 1 with B
    // = g + 6 + KW*KH.
    use tex::Access as A;
    let image = kernel_share();
    for kw in 1..=8u32 {
        for kh in 1..=8u32 {
            let size = rb(5, 3, kw, kh);
            let want: Vec<i32> = (0..16).map(|q| kernel_pixel(&image, kw as i64, kh as i64, 1 + q % 4, 1 + q / 4)).collect();
            if kw != kh {
                let swapped: Vec<i32> = (0..16).map(|q| kernel_pixel(&image, kh as i64, kw as i64, 1 + q % 4, 1 + q / 4)).collect();
                assert_ne!(want, swapped, "{kw}x{kh}");
            }
            let p = ((kw + 1) * (kh + 1)) as u64;
            // The unit, from the assembly.
            let src = format!(
                "li r4, 0x3000\nli r6, 0x10080\nld r3, r4, r5, r6\n\
                 li r7, 128\nli r8, 64\nli r9, {size:#x}\nli r10, 0x10001\n\
                 tex r7, r8, r9, r10, conv 2x2, r8, clamp, clamp, c 0\nend"
            );
            let mut r = setup(&src, vec![block(0)], 256, 16, 5);
            r.memory.load(0x3000, &image);
            let f = go(&one_slot(), &r);
            assert_eq!(f.outcome.blocks[0].status, Status::Ok, "{kw}x{kh}");
            assert_eq!(words_at(&f.smem, 128, 16), want, "{kw}x{kh}");
            assert_eq!(&f.smem[..128], &image[..], "{kw}x{kh}");
            assert_eq!(f.outcome.counters.texel_fetches, 4 * p, "{kw}x{kh}");
            // The engine: the configuration, the weight reads, the timing.
            let mut m = image.clone();
            m.resize(256, 0);
            let op = tex::Op::of(128, 64, size, 1 | 1 << 16, TexKind::Conv { qw: 2, qh: 2 }, Fm::R8, Am::Clamp, Am::Clamp, 0);
            let out = tex_run(&op, 0, &mut m);
            assert_eq!(words_at(&m, 128, 16), want, "{kw}x{kh}");
            let cfg1: Vec<(u64, u32)> =
                out.accesses.iter().filter_map(|a| if let A::Cfg { cycle, addr: 1, data } = a { Some((*cycle, *data)) } else { None }).collect();
            assert_eq!(cfg1, [(4, (kw - 1) | (kh - 1) << 8)], "{kw}x{kh}");
            let kk = kw * kh;
            let reads: Vec<(u64, u32)> = out.accesses.iter().filter_map(|a| if let A::Read { cycle, at } = a { Some((*cycle, *at)) } else { None }).collect();
            assert_eq!(reads, (0..kk).map(|m| (5 + m as u64, (64 - kk + m) & !3)).collect::<Vec<_>>(), "{kw}x{kh}");
            let first_write = out.accesses.iter().find_map(|a| if let A::Write { cycle, .. } = a { Some(*cycle) } else { None });
            assert_eq!(first_write, Some(6 + kk as u64 + 10 + p + 1), "{kw}x{kh}");
            assert_eq!(out.done, 6 + kk as u64 + 10 + 4 * p + 4, "{kw}x{kh}");
        }
    }
}

#[test]
fn tex_samples_ignore_rb_kernel_bits() {
    // A sample kind ignores bits 15:13 and 31:29 of rb's value: the same
    // accesses, cycles, fetches and values with any of them set, and no
    // error (W, H are bits 12:0 and 28:16 only).
    let mut base = conv_image();
    base.resize(128, 0xEE);
    base[32..56].copy_from_slice(&u32s(&[0x2FF, 0x100, 0x180, 0x80, 0xFC00_0100, 0x0400_0180]));
    for kind in [sample(SampleOp::Nearest, 3), sample(SampleOp::Bilinear, 3), sample(SampleOp::Gather4, 3)] {
        let mut m0 = base.clone();
        let clean = tex_run(&top(0, 64, 16, 3, 2, 32, kind, Fm::R8, Am::Mirror, Am::Repeat, 0), 0, &mut m0);
        for junk in [1u32 << 13, 7 << 13, 1 << 29, 7 << 29, 0xE000_E000, 0x4000_A000] {
            let mut m = base.clone();
            let op = tex::Op::of(64, 16, 3 | 2 << 16 | junk, 32, kind.0, Fm::R8, Am::Mirror, Am::Repeat, 0);
            assert_eq!((op.w(), op.h()), (3, 2));
            let out = tex_run(&op, 0, &mut m);
            assert_eq!(out, clean, "{kind:?} {junk:#x}");
            assert_eq!(m, m0, "{kind:?} {junk:#x}");
        }
    }
    // Through the unit: nearest at (2, 1) = 60 with rb = 0xE002_E003 (W 3,
    // H 2 and every kernel bit), O = 48, T = 16, L = 32.
    let mut image = conv_image();
    image.resize(48, 0);
    image[32..40].copy_from_slice(&u32s(&[0x2FF, 0x100]));
    let src = "li r4, 0x3000\nli r6, 0x10030\nld r3, r4, r5, r6\n\
               li r7, 48\nli r8, 16\nli r9, 0xE002E003\nli r10, 32\n\
               tex r7, r8, r9, r10, nearest 1, r8, clamp, clamp, c 0\nend";
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &image);
    let f = go(&one_slot(), &r);
    assert_eq!(f.outcome.blocks[0].status, Status::Ok);
    assert_eq!(words_at(&f.smem, 48, 1), [60]);
}

#[test]
fn tex_fetch_counts() {
    // 4 a bilinear or gather4 sample, 1 a nearest one, (KW+1)(KH+1) a conv
    // quad: 16 for 3x3 (instead of 36), 4 for 1x1, 81 for 8x8, 18 for 8x1.
    let mut m = vec![0u8; 256];
    for (kind, n) in [
        (sample(SampleOp::Bilinear, 5), 20),
        (sample(SampleOp::Gather4, 5), 20),
        (sample(SampleOp::Nearest, 5), 5),
        (conv(3, 3, 1, 1), 16),
        (conv(3, 3, 3, 2), 6 * 16),
        (conv(1, 1, 1, 1), 4),
        (conv(8, 8, 1, 1), 81),
        (conv(8, 1, 2, 1), 2 * 18),
    ] {
        let op = top(0, 128, 64, 4, 4, 0, kind, Fm::R8, Am::Clamp, Am::Clamp, 0);
        let out = tex_run(&op, 0, &mut m);
        assert_eq!(out.fetches, n, "{kind:?}");
        assert_eq!(out.accesses.iter().filter(|a| matches!(a, tex::Access::Fetch { .. })).count() as u64, n);
    }
}

#[test]
fn tex_samples_read_what_earlier_ones_wrote() {
    // Output O = L + 8: sample 0's result overwrites sample 1's u word, and
    // its texels may be overwritten too (samples have no overlap check).
    // r16 2 x 2 at 0: 0x0100, 0x0200, 0x0300, 0x1000 (little-endian).
    // Sample 0 (u word 0xFFE00100: bits 31:21 ignored; u = 256, v = 128):
    //   x0 = 0, a = 128, y0 = 0, b = 0: (256 + 512) * 128 * 256 + 2^15 >> 16
    //   = 384, written at L + 8.
    // Sample 1: u = 384 (not 0): x0 = 1, a = 0; v = 256: y0 = 0, b = 128:
    //   (512 + 4096) * 256 * 128 + 2^15 >> 16 = 2304 (with u = 0 it would
    //   be 512), written at L + 12.
    let mut m = vec![0u8; 64];
    m[..8].copy_from_slice(&[0, 1, 0, 2, 0, 3, 0, 0x10]);
    m[8..24].copy_from_slice(&u32s(&[0xFFE0_0100, 128, 0, 256]));
    let op = top(0, 16, 0, 2, 2, 8, sample(SampleOp::Bilinear, 2), Fm::R16, Am::Clamp, Am::Clamp, 0);
    tex_run(&op, 0, &mut m);
    assert_eq!(words_at(&m, 8, 4), [0xFFE0_0100u32 as i32, 128, 384, 2304]);
    // Output over the texture: nearest at (0, 0) twice, O = T = 0 (r8 4 x
    // 1: 1, 2, 3, 4): sample 0 reads 1 and writes the word 1 at 0 (texels
    // 1, 0, 0, 0); sample 1 reads texel 0 again: 1; sample 1 at (1, 0)
    // instead reads 0.
    for (u1, want) in [(0u32, [1, 1]), (0x100, [1, 0])] {
        let mut m = vec![0u8; 64];
        m[..4].copy_from_slice(&[1, 2, 3, 4]);
        m[16..32].copy_from_slice(&u32s(&[0, 0, u1, 0]));
        let op = top(0, 0, 0, 4, 1, 16, sample(SampleOp::Nearest, 2), Fm::R8, Am::Clamp, Am::Clamp, 0);
        tex_run(&op, 0, &mut m);
        assert_eq!(words_at(&m, 0, 2), want, "u1 {u1}");
    }
}

#[test]
fn every_tex_error() {
    use Status::*;
    // status_of: 4 registers (r0 = x = 1), 64 bytes of share, D = 16. O, T,
    // the size and rc in r0 .. r3: `tex r0, r1, r2, r3, ...` at pc 4.
    let tex_s = |o: i64, t: i64, size: u32, rc: u32, rest: &str| {
        status_of(&format!("li r0, {o}\nli r1, {t}\nli r2, {size:#x}\nli r3, {rc:#x}\ntex r0, r1, r2, r3, {rest}\nend"))
    };
    let wh = |w: u32, h: u32| w | h << 16;
    // With a 3x3 kernel (for conv).
    let wh33 = |w: u32, h: u32| rb(w, h, 3, 3);
    let r8 = "r8, clamp, clamp, c 0";
    // field (`tex r1, r2, r3, r3` with imm bits): F = 3, MX = 3, MY = 3, k
    // = 1 with r8, k = 3 with r16; rgba8 with k = 3 is no field error (then
    // O = T = L = 0, W = 0: smem).
    assert_eq!(status_of(".word 0x0000300303020174"), (Field, 0));
    assert_eq!(status_of(".word 0x0000c00303020174"), (Field, 0));
    assert_eq!(status_of(".word 0x0003000303020174"), (Field, 0));
    assert_eq!(status_of(".word 0x0000040303020174"), (Field, 0));
    assert_eq!(status_of(".word 0x00001c0303020174"), (Field, 0));
    assert_eq!(status_of(".word 0x0000330303020174"), (Field, 0)); // conv, F = 3
    assert_eq!(status_of(".word 0x00002c0303020174"), (Smem, 0));
    // conv: imm bits 23:18 not 0 (each bit, and all six); 0 is no field
    // error (O = T = 0, W = 0: smem), nor are the same bits for a sample
    // kind (n).
    for bits in [1u64, 2, 4, 8, 16, 32, 63] {
        assert_eq!(status_of(&format!(".word {:#018x}", 0x0000_0303_0302_0174u64 | bits << 50)), (Field, 0), "{bits}");
        assert_eq!(status_of(&format!(".word {:#018x}", 0x0000_0203_0302_0174u64 | bits << 50)), (Smem, 0), "{bits}");
        // field before reg.
        assert_eq!(status_of(&format!(".word {:#018x}", 0x0000_0303_0302_0474u64 | bits << 50)), (Field, 0), "{bits}");
    }
    assert_eq!(status_of(".word 0x0000030303020174"), (Smem, 0));
    // field before reg: rd = r4.
    assert_eq!(status_of(".word 0x0000300303020474"), (Field, 0));
    // reg: rd, ra, rb, rc (reg_count 4), every kind.
    for rest in ["bilinear 1, r8, clamp, clamp, c 0", "conv 1x1, rgba8, mirror, repeat, c 3"] {
        assert_eq!(status_of(&format!("tex r4, r1, r2, r3, {rest}")), (Reg, 0));
        assert_eq!(status_of(&format!("tex r0, r4, r2, r3, {rest}")), (Reg, 0));
        assert_eq!(status_of(&format!("tex r0, r1, r4, r3, {rest}")), (Reg, 0));
        assert_eq!(status_of(&format!("tex r0, r1, r2, r4, {rest}")), (Reg, 0));
    }
    // pc: at D - 1 (before align: O = r0 = 1).
    let pad = "li r3, 0\n".repeat(15);
    assert_eq!(status_of(&format!("{pad}tex r0, r1, r2, r3, nearest 1, {r8}")), (Pc, 15));
    // align: O, T, or (samples) L not a multiple of 4, whatever n; not a
    // conv's rc (x0 = 2 is fine); align before smem (W = 0).
    assert_eq!(tex_s(2, 0, 0, 0, &format!("bilinear 0, {r8}")), (Align, 4));
    assert_eq!(tex_s(0, 2, 0, 0, &format!("bilinear 1, {r8}")), (Align, 4));
    assert_eq!(tex_s(0, 0, 0, 2, &format!("gather4 0, {r8}")), (Align, 4));
    assert_eq!(tex_s(2, 12, wh33(4, 1), 0, &format!("conv 1x1, {r8}")), (Align, 4));
    assert_eq!(tex_s(48, 12, wh33(4, 1), 2, &format!("conv 1x1, {r8}")), (Ok, 5));
    // smem, the texture: W or H 0 (whatever n), T + W*H*z above 64.
    assert_eq!(tex_s(0, 0, wh(0, 1), 0, &format!("nearest 0, {r8}")), (Smem, 4));
    assert_eq!(tex_s(0, 0, wh(1, 0), 0, &format!("nearest 0, {r8}")), (Smem, 4));
    assert_eq!(tex_s(0, 48, wh(4, 4), 0, &format!("nearest 1, {r8}")), (Ok, 5));
    assert_eq!(tex_s(0, 52, wh(4, 4), 0, &format!("nearest 1, {r8}")), (Smem, 4));
    assert_eq!(tex_s(0, 48, wh(2, 2), 0, "nearest 1, rgba8, clamp, clamp, c 0"), (Ok, 5));
    assert_eq!(tex_s(0, 52, wh(2, 2), 0, "nearest 1, rgba8, clamp, clamp, c 0"), (Smem, 4));
    assert_eq!(tex_s(0, 48, wh(4, 2), 0, "nearest 1, r16, clamp, clamp, c 0"), (Ok, 5));
    assert_eq!(tex_s(0, 52, wh(3, 2), 0, "nearest 1, r16, clamp, clamp, c 0"), (Ok, 5)); // 52 + 12
    assert_eq!(tex_s(0, 52, wh(4, 2), 0, "nearest 1, r16, clamp, clamp, c 0"), (Smem, 4)); // 52 + 16
    assert_eq!(tex_s(0, -4, wh(1, 1), 0, &format!("nearest 0, {r8}")), (Smem, 4)); // no wrap
    // samples: L + 8n, O + 4*nw*n above 64 (n = 0 checked too: nothing
    // written, so O = 64 is fine).
    assert_eq!(tex_s(0, 0, wh(1, 1), 48, &format!("nearest 2, {r8}")), (Ok, 5));
    assert_eq!(tex_s(0, 0, wh(1, 1), 52, &format!("nearest 2, {r8}")), (Smem, 4));
    assert_eq!(tex_s(52, 0, wh(1, 1), 8, &format!("nearest 3, {r8}")), (Ok, 5));
    assert_eq!(tex_s(56, 0, wh(1, 1), 8, &format!("nearest 3, {r8}")), (Smem, 4));
    assert_eq!(tex_s(48, 0, wh(1, 1), 8, &format!("gather4 1, {r8}")), (Ok, 5));
    assert_eq!(tex_s(52, 0, wh(1, 1), 8, &format!("gather4 1, {r8}")), (Smem, 4));
    assert_eq!(tex_s(32, 0, wh(1, 1), 8, "bilinear 2, rgba8, clamp, clamp, c 0"), (Ok, 5));
    assert_eq!(tex_s(36, 0, wh(1, 1), 8, "bilinear 2, rgba8, clamp, clamp, c 0"), (Smem, 4));
    assert_eq!(tex_s(64, 0, wh(1, 1), 64, &format!("bilinear 0, {r8}")), (Ok, 5));
    assert_eq!(tex_s(68, 0, wh(1, 1), 64, &format!("bilinear 0, {r8}")), (Smem, 4));
    assert_eq!(tex_s(-4, 0, wh(1, 1), 8, &format!("nearest 1, {r8}")), (Smem, 4)); // no wrap
    // conv (texture 4 x 4 r8 at 32 .. 47, kernel 3x3 at 23 .. 31): x0 >= W,
    // y0 >= H, T < KW*KH, O + 16*QW*QH above 64, output meeting the
    // texture.
    let c11 = format!("conv 1x1, {r8}");
    assert_eq!(tex_s(48, 32, wh33(4, 4), wh(3, 3), &c11), (Ok, 5));
    assert_eq!(tex_s(48, 32, wh33(4, 4), wh(4, 3), &c11), (Smem, 4));
    assert_eq!(tex_s(48, 32, wh33(4, 4), wh(3, 4), &c11), (Smem, 4));
    assert_eq!(tex_s(48, 8, wh33(4, 1), 0, &c11), (Smem, 4)); // 8 < 9
    assert_eq!(tex_s(48, 12, wh33(4, 1), 0, &c11), (Ok, 5));
    assert_eq!(tex_s(52, 32, wh33(4, 4), 0, &c11), (Smem, 4)); // 52 + 16
    assert_eq!(tex_s(16, 32, wh33(4, 4), 0, &c11), (Ok, 5)); // 16 .. 31
    assert_eq!(tex_s(20, 32, wh33(4, 4), 0, &c11), (Smem, 4)); // 20 .. 35
    assert_eq!(tex_s(32, 32, wh33(4, 4), 0, &c11), (Smem, 4));
    assert_eq!(tex_s(44, 32, wh33(4, 4), 0, &c11), (Smem, 4)); // 44 .. 59
    assert_eq!(tex_s(32, 16, wh33(4, 4), 0, "conv 2x1, r8, clamp, clamp, c 0"), (Ok, 5)); // 32 .. 63
    assert_eq!(tex_s(32, 16, wh33(4, 4), 0, "conv 1x2, r8, clamp, clamp, c 0"), (Ok, 5));
    assert_eq!(tex_s(32, 16, wh33(4, 4), 0, "conv 2x2, r8, clamp, clamp, c 0"), (Smem, 4)); // 32 + 64
    // Exact: an r8 texture of 3 bytes at 32 (32 .. 34) and an output from
    // 36 does not meet it, though they share no word either way; from 28 it
    // does.
    assert_eq!(tex_s(36, 32, wh33(3, 1), 0, &c11), (Ok, 5));
    assert_eq!(tex_s(28, 32, wh33(3, 1), 0, &c11), (Smem, 4));
    // Above 4096 (a larger share, through the check itself): W and H are
    // the 13-bit fields 12:0 and 28:16 of rb's value; bits 15:13 and 31:29
    // (a conv's kernel size) are no part of them, for samples and conv
    // alike.
    let nearest0 = sample(SampleOp::Nearest, 0).0;
    let ck = |size: u32, kind: TexKind| tex::check(1 << 20, &tex::Op::of(0, 64, size, 0, kind, Fm::R8, Am::Clamp, Am::Clamp, 0));
    let conv11 = TexKind::Conv { qw: 1, qh: 1 };
    for (kw, kh) in [(1, 1), (8, 8), (3, 5)] {
        for kind in [nearest0, conv11] {
            let rb = |w: u32, h: u32| rb(w, h, kw, kh);
            assert_eq!(ck(rb(4096, 1), kind), Result::Ok(()), "{kind:?}");
            assert_eq!(ck(rb(4097, 1), kind), Err(Smem), "{kind:?}");
            assert_eq!(ck(rb(1, 4096), kind), Result::Ok(()), "{kind:?}");
            assert_eq!(ck(rb(1, 4097), kind), Err(Smem), "{kind:?}");
            assert_eq!(ck(rb(0x1FFF, 1), kind), Err(Smem), "{kind:?}");
            assert_eq!(ck(rb(1, 0x1FFF), kind), Err(Smem), "{kind:?}");
            assert_eq!(ck(rb(0, 1), kind), Err(Smem), "{kind:?}");
            assert_eq!(ck(rb(1, 0), kind), Err(Smem), "{kind:?}");
        }
    }
    // Read as 16 bits these would be 0xE001 (above 4096) and 0x2000 (not
    // 0); as 13 bits they are 1 and 0.
    for kind in [nearest0, conv11] {
        assert_eq!(ck(0xE001_E001, kind), Result::Ok(()), "{kind:?}");
        assert_eq!(ck(0x0001_2000, kind), Err(Smem), "{kind:?}");
        assert_eq!(ck(0x2000_0001, kind), Err(Smem), "{kind:?}");
        assert_eq!(ck(0xF001_0001, kind), Err(Smem), "{kind:?}"); // H = 4097
        assert_eq!(ck(0x0001_F001, kind), Err(Smem), "{kind:?}"); // W = 4097
    }
    // Through the unit: rb = 4097 | 7 << 13 | 1 << 16 (W = 4097) is smem
    // for a sample and a conv (KW = 8); with W = 1 instead it is not.
    assert_eq!(tex_s(0, 0, 0x0001_F001, 0, &format!("nearest 0, {r8}")), (Smem, 4));
    assert_eq!(tex_s(0, 0, 0x0001_E001, 0, &format!("nearest 0, {r8}")), (Ok, 5));
    assert_eq!(tex_s(48, 12, 0x0001_F001, 0, &c11), (Smem, 4));
    assert_eq!(tex_s(48, 12, rb(4, 1, 3, 3) & !0x1FFF | 4097, 0, &c11), (Smem, 4));
    assert_eq!(tex_s(48, 12, 0x0001_2004, 0, &c11), (Ok, 5)); // W 4, KW 2: T >= 2
}

#[test]
fn empty_tex_is_done_at_its_start() {
    // A sample kind with n = 0: X 27, 29, 31 (li), X 33 tex joins, g = 34
    // done: picked 35, X 36 end. Counted as started; no read, no fetch.
    for kind in ["bilinear", "nearest", "gather4"] {
        let src = format!("li r3, 0x10001\nli r4, 8\nli r5, 0\ntex r4, r5, r3, r5, {kind} 0, rgba8, mirror, mirror, c 3\nend");
        let f = go(&one_slot(), &setup(&src, vec![block(0)], 64, 8, 5));
        assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 33, 36], "{kind}");
        assert_eq!(f.outcome.blocks[0].status, Status::Ok);
        assert_eq!((f.outcome.counters.tex, f.outcome.counters.texel_fetches), (1, 0));
        assert_eq!(f.banks.last(0), None);
    }
}

#[test]
fn tex_conv_in_a_kernel_exact_cycles() {
    // One slot, L = 5, O = 2, D = 16, a share of 64 bytes at 0, block (0, 0,
    // 0). conv_image (32 bytes) at memory 0x3000.
    //   0: li r4, 0x3000   1: li r6, 0x10020 (rows 1, n 32)
    //   2: ld r3, r4, r5, r6 (s = 0)
    //   3: li r7, 32 (O)   4: li r8, 16 (T)   5: li r9, 0x40024003 (W 3,
    //      H 2, KW - 1 = KH - 1 = 2)
    //   6: tex r7, r8, r9, r10, conv 2x1, r8, clamp, clamp, c 0 (x0 = y0
    //      = r10 = 0)
    //   7: end
    // X 27, 29, 31 (ld: g = 32, e = 57, as in act_after_ld_exact_cycles);
    //   picked 58: X 59, 61, 63, X 65 tex: joins at the end of 65, g = 66.
    // tex_conv_exact_cycles_and_accesses at g = 0, shifted by 66: results
    //   107, 123, writes 108 .. 111, 124 .. 127: e = 127. Picked 128, X 129
    //   end, completion 130.
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r7, 32\nli r8, 16\nli r9, 0x40024003\n\
               tex r7, r8, r9, r10, conv 2x1, r8, clamp, clamp, c 0\nend";
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &conv_image());
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 59, 61, 63, 65, 129]);
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].complete_cycle), (Status::Ok, 130));
    assert_eq!(words_at(&f.smem, 32, 8), [-20, -10, 20, 30, 40, 50, 80, 90]);
    assert_eq!(&f.smem[..32], &conv_image()[..]);
    assert_eq!(f.banks.last(0), Some(RD5));
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 8, ld: 1, tex: 1, loads: 1, rd_beats: 16 + 8, texel_fetches: 32, ..Counters::default() }
    );
    let v = io::output_json(&one_slot(), &r, &f.outcome);
    assert_eq!(v["trace"][6]["insn"], "tex r7, r8, r9, r10, conv 2x1, r8, clamp, clamp, c 0");
    assert_eq!(
        v["counters"],
        serde_json::json!({"instructions": 8, "cdl": 0, "ld": 1, "st": 0, "act": 0, "cmp": 0, "exp": 0,
                           "mma": 0, "tex": 1, "loads": 1, "rd_beats": 24, "wr_beats": 0, "texel_fetches": 32})
    );
}

#[test]
fn tex_samples_in_a_kernel_exact_cycles() {
    // As tex_conv_in_a_kernel_exact_cycles, the 32 bytes at 0x3000: an r16
    // 2 x 2 texture at 0 (0x0100, 0x0200, 0x0300, 0x1000), the coordinates
    // at L = 8 (tex_samples_read_what_earlier_ones_wrote), the rest 0.
    //   3: li r7, 16 (O = L + 8)   4: li r9, 0x20002   5: li r10, 8 (L)
    //   6: tex r7, r8, r9, r10, bilinear 2, r16, clamp, clamp, c 0 (T = r8 =
    //      0)   7: end
    // X 65 tex, g = 66. Sample 0: READs 70, 72; op 74; passes 80 .. 83;
    //   result 88; write 89 (384 at 16). Sample 1: t = 90: READs 90 (its u:
    //   384, written in 89), 92; op 94; result 108; write 109 (2304 at 20).
    //   e = 109. Picked 110, X 111 end, completion 112.
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r7, 16\nli r9, 0x20002\nli r10, 8\n\
               tex r7, r8, r9, r10, bilinear 2, r16, clamp, clamp, c 0\nend";
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    let mut image = vec![0u8; 32];
    image[..8].copy_from_slice(&[0, 1, 0, 2, 0, 3, 0, 0x10]);
    image[8..24].copy_from_slice(&u32s(&[0xFFE0_0100, 128, 0, 256]));
    r.memory.load(0x3000, &image);
    let f = go(&one_slot(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 59, 61, 63, 65, 111]);
    assert_eq!((f.outcome.blocks[0].status, f.outcome.blocks[0].complete_cycle), (Status::Ok, 112));
    assert_eq!(words_at(&f.smem, 16, 2), [384, 2304]);
    assert_eq!(
        f.outcome.counters,
        Counters { instructions: 8, ld: 1, tex: 1, loads: 1, rd_beats: 24, texel_fetches: 8, ..Counters::default() }
    );
    // The same operation on the engine, g = 66.
    let mut m = vec![0u8; 256];
    m[..32].copy_from_slice(&image);
    let op = top(0, 16, 0, 2, 2, 8, sample(SampleOp::Bilinear, 2), Fm::R16, Am::Clamp, Am::Clamp, 0);
    let out = tex_run(&op, 66, &mut m);
    use tex::Access as A;
    let marks: Vec<A> = out.accesses.iter().copied().filter(|a| !matches!(a, A::Fetch { .. } | A::Cfg { .. })).collect();
    assert_eq!(
        marks,
        [
            A::Read { cycle: 70, at: 8 },
            A::Read { cycle: 72, at: 12 },
            A::Op { cycle: 74 },
            A::Result { cycle: 88 },
            A::Write { cycle: 89, at: 16, value: 384 },
            A::Read { cycle: 90, at: 16 },
            A::Read { cycle: 92, at: 20 },
            A::Op { cycle: 94 },
            A::Result { cycle: 108 },
            A::Write { cycle: 109, at: 20, value: 2304 },
        ]
    );
    // Sample 1 at u = 384, v = 256: x0 = 1, y0 = 0; its footprint (1, 0),
    // (2, 0), (1, 1), (2, 1) clamps x 2 to 1: texels at 2, 2, 6, 6.
    let fetched: Vec<(u64, u32)> = out.accesses.iter().filter_map(|a| if let A::Fetch { cycle, at } = a { Some((*cycle, *at)) } else { None }).collect();
    assert_eq!(fetched, [(81, 0), (82, 2), (83, 4), (84, 6), (101, 2), (102, 2), (103, 6), (104, 6)]);
}

#[test]
fn tex_in_two_shares() {
    // Two slots, a share of 128 bytes each (bases 0 and 128), four banks of
    // 64 words: each block loads conv_image and runs the 3x3 conv at (x0,
    // y0) = (x, 0) with its block id x: block 0 as above, block 1 the quads
    // at (1, 0), (3, 0): pixels (1..4, 0..1) = (1,0) -10, (2,0) 20, (3,0)
    // 30, (4,0) T(3,-1) + 2 T(4,0) - T(5,1) = 30 + 60 - 60 = 30, (1,1) 50,
    // (2,1) 80, (3,1) 90, (4,1) T(3,0) + 2 T(4,1) - T(5,2) = 30 + 120 - 60 =
    // 90.
    let p = CuParams { slots: 2, banks: 4, regs: 32, ..one_slot() };
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r7, 32\nli r8, 16\nli r9, 0x40024003\n\
               tex r7, r8, r9, r0, conv 2x1, r8, clamp, clamp, c 0\nend";
    let mut r = setup(src, vec![block(0), block(1)], 128, 16, 3);
    r.memory.load(0x3000, &conv_image());
    let f = go(&p, &r);
    assert!(f.outcome.blocks.iter().all(|b| b.status == Status::Ok));
    assert_eq!(words_at(&f.smem, 32, 8), [-20, -10, 20, 30, 40, 50, 80, 90]);
    assert_eq!(words_at(&f.smem, 128 + 32, 8), [-10, 20, 30, 30, 50, 80, 90, 90]);
    assert_eq!(&f.smem[64..128], &[0; 64][..]);
    assert_eq!(f.outcome.blocks.iter().map(|b| b.share).collect::<Vec<_>>(), [0, 1]);
    assert_eq!((f.outcome.counters.tex, f.outcome.counters.texel_fetches), (2, 64));
}

// ---- the parameter tex ----
//
// docs/cu.md, "Parameters": with `tex = false` opcode 0x74 is undefined (the
// `opcode` error); "`tex`": "Every opcode not listed above is undefined, and
// so is 0x74 when the unit is built without `tex`". The `opcode` check is
// the first of "Errors", so it comes before whatever else the word would
// raise. Nothing else depends on the parameter: the assembler and the
// disassembler are the ISA's (the trace still shows the word as `tex`).

/// `one_slot` built without `tex`.
fn no_tex() -> CuParams {
    CuParams { tex: false, ..one_slot() }
}

#[test]
fn tex_is_undefined_without_tex() {
    use Status::*;
    // status_of's unit: 4 registers (r0 = x = 1), 64 bytes of share, D =
    // 16; `tex r0, r1, r2, r3, ...` at pc 4 with O, T, rb, rc in r0 .. r3.
    let tex_s = |o: i64, t: i64, size: u32, rc: u32, rest: &str| {
        format!("li r0, {o}\nli r1, {t}\nli r2, {size:#x}\nli r3, {rc:#x}\ntex r0, r1, r2, r3, {rest}\nend")
    };
    let r8 = "r8, clamp, clamp, c 0";
    let pad = "li r3, 0\n".repeat(15);
    // (program, its status with tex): without tex each is the opcode error
    // at the tex's pc, whatever the tex would have done or raised.
    let cases: Vec<(String, (Status, u32))> = vec![
        // every other bit clear: tex r0, r0, r0, r0, bilinear 0 with O = 1.
        (".word 0x0000000000000074".into(), (Align, 0)),
        // every other bit set: F = 3.
        (".word 0xffffffffffffff74".into(), (Field, 0)),
        // conv with imm bit 18 set.
        (".word 0x0004030303020174".into(), (Field, 0)),
        // rd = r4 >= reg_count.
        (format!("tex r4, r1, r2, r3, bilinear 1, {r8}"), (Reg, 0)),
        (format!("tex r0, r1, r2, r4, conv 1x1, {r8}"), (Reg, 0)),
        // at D - 1.
        (format!("{pad}tex r0, r1, r2, r3, nearest 1, {r8}"), (Pc, 15)),
        (tex_s(2, 0, 0, 0, &format!("bilinear 0, {r8}")), (Align, 4)),
        (tex_s(0, 52, 4 | 4 << 16, 0, &format!("nearest 1, {r8}")), (Smem, 4)),
        (tex_s(48, 32, rb(4, 4, 3, 3), 3 | 4 << 16, &format!("conv 1x1, {r8}")), (Smem, 4)),
        // runs: a sample kind with n = 0 (done at its start), a sample, a conv.
        (tex_s(0, 0, 1 | 1 << 16, 0, &format!("nearest 0, {r8}")), (Ok, 5)),
        (tex_s(0, 48, 4 | 4 << 16, 0, &format!("nearest 1, {r8}")), (Ok, 5)),
        (tex_s(48, 32, rb(4, 4, 3, 3), 3 | 2 << 16, &format!("conv 1x1, {r8}")), (Ok, 5)),
    ];
    for (src, with) in &cases {
        assert_eq!(status_on(&one_slot(), src), *with, "{src}");
        let pc = if with.0 == Ok { with.1 - 1 } else { with.1 };
        assert_eq!(status_on(&no_tex(), src), (Opcode, pc), "{src}");
    }
    // Every other opcode is as it was: the word alone, with every other bit
    // clear but imm = 15 (no branch back to 0) and with every other bit set.
    for op in (0..=255u64).filter(|&op| op != isa::op::TEX as u64) {
        for fill in [0x0000_000F_0000_0000u64, 0xFFFF_FFFF_FFFF_FF00] {
            let src = format!(".word {:#018x}", fill | op);
            assert_eq!(status_on(&no_tex(), &src), status_on(&one_slot(), &src), "{src}");
        }
    }
    assert_eq!(status_on(&no_tex(), ".word 0x75"), (Opcode, 0));
    assert_eq!(status_on(&no_tex(), ".word 0x0000000000000073"), status_of(".word 0x0000000000000073"));
}

#[test]
fn tex_kernel_without_tex_stops_at_the_tex() {
    // tex_conv_in_a_kernel_exact_cycles's kernel: with tex it runs the conv
    // (X 65) and ends (X 129, completion 130); without, X 65 is the opcode
    // error at pc 6: the slot is done at the end of 65, its completion is
    // offered and taken in 66. The error has no effect: the share holds what
    // the ld wrote and nothing at 32 .., the tex is not counted (nor any
    // texel fetch), and no scratchpad read was made.
    let src = "li r4, 0x3000\nli r6, 0x10020\nld r3, r4, r5, r6\n\
               li r7, 32\nli r8, 16\nli r9, 0x40024003\n\
               tex r7, r8, r9, r10, conv 2x1, r8, clamp, clamp, c 0\nend";
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &conv_image());
    let with = go(&one_slot(), &r);
    assert_eq!(x_cycles(&with.outcome), [27, 29, 31, 59, 61, 63, 65, 129]);
    assert_eq!((with.outcome.blocks[0].status, with.outcome.blocks[0].pc), (Status::Ok, 7));
    assert_eq!((with.outcome.counters.tex, with.outcome.counters.texel_fetches), (1, 32));
    let f = go(&no_tex(), &r);
    assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 59, 61, 63, 65]);
    let b = f.outcome.blocks[0];
    assert_eq!((b.status, b.pc, b.complete_cycle), (Status::Opcode, 6, 66));
    assert_eq!(&f.smem[..32], &conv_image()[..]);
    assert_eq!(&f.smem[32..64], &[0; 32][..]);
    assert_eq!(f.banks.last(0), None);
    assert_eq!(f.outcome.counters, Counters { instructions: 7, ld: 1, loads: 1, rd_beats: 16 + 8, ..Counters::default() });
    // Up to the tex, the same run.
    assert_eq!(xs(&f.outcome), xs(&with.outcome)[..7]);
    // The output file: the same fields; the trace shows the word as tex.
    let v = io::output_json(&no_tex(), &r, &f.outcome);
    assert_eq!(v["trace"][6]["insn"], "tex r7, r8, r9, r10, conv 2x1, r8, clamp, clamp, c 0");
    assert_eq!(v["blocks"][0]["status"], "opcode");
    assert_eq!(v["blocks"][0]["pc"], 6);
    assert_eq!(
        v["counters"],
        serde_json::json!({"instructions": 7, "cdl": 0, "ld": 1, "st": 0, "act": 0, "cmp": 0, "exp": 0,
                           "mma": 0, "tex": 0, "loads": 1, "rd_beats": 24, "wr_beats": 0, "texel_fetches": 0})
    );
    let w = io::output_json(&one_slot(), &r, &with.outcome);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&v), keys(&w));
}

#[test]
fn kernels_without_tex_run_as_with_it() {
    // Kernels with no tex run the same with and without the parameter:
    // outcome (the output file, a memory dump included), share, registers
    // and each bank's last read. mma_in_a_kernel_on_two_shares' kernel on
    // its unit, with an st of C back to memory; the small preset (built
    // without tex) and the same with tex, on
    // mma_exact_cycles_on_the_small_preset's kernel.
    let same = |p: &CuParams, r: &Run, banks: u32| {
        let q = CuParams { tex: !p.tex, ..p.clone() };
        let (a, b) = (go(p, r), go(&q, r));
        assert_eq!(io::output_json(p, r, &a.outcome), io::output_json(&q, r, &b.outcome));
        assert_eq!((&a.smem, &a.regfile), (&b.smem, &b.regfile));
        for k in 0..banks {
            assert_eq!(a.banks.last(k), b.banks.last(k), "bank {k}");
        }
        assert!(a.outcome.blocks.iter().all(|b| b.status == Status::Ok));
    };
    let p = CuParams { slots: 2, banks: 4, regs: 32, ..one_slot() };
    let src = "li r4, 0x3000\nli r6, 0x10060\nld r3, r4, r5, r6\n\
               li r7, 40\nli r8, 96\nli r9, 0x70605\nmma r8, r3, r7, r9\n\
               li r4, 0x4000\nli r6, 0x10078\nst r8, r4, r5, r6\nend";
    let mut r = setup(src, vec![block(0), block(1)], 256, 16, 3);
    r.memory.load(0x3000, &noise(96, 42));
    r.dump = vec![Region { addr: 0x4000, bytes: 120 }];
    same(&p, &r, 4);
    use gpurtl_params::BlockParams;
    let small = CuParams::presets().into_iter().find(|(n, _)| *n == "small").unwrap().1;
    assert!(!small.tex);
    let src = "li r4, 0x3000\nli r6, 0x10028\nld r3, r4, r5, r6\n\
               li r7, 8\nli r8, 40\nli r9, 0x40202\nmma r8, r3, r7, r9\nend";
    let mut r = setup(src, vec![block(0)], 64, 16, 5);
    r.memory.load(0x3000, &small_image(&[1, -2, 3, -4, 5, 6, -7, 8]));
    same(&small, &r, 1);
}

#[test]
fn conv_x0_y0_are_16_bits_each() {
    // docs/cu.md, "`tex`": x0 = bits 15:0 and y0 = bits 31:16 of rc's value,
    // 16 bits each, checked against W and H (at most 4096): x0 = 0x2000 (0
    // if it were 13 bits), 0x8000 (0 if it were 15) or 0xFFFF is past a
    // 4096-wide texture, and so is each such y0; bits 31:16 are y0, no part
    // of x0. Through the check, with a share large enough for a 4096 x 4096
    // r8 texture.
    use Status::*;
    let ck = |rc: u32| {
        tex::check(1 << 25, &tex::Op::of(0, 64, rb(4096, 4096, 1, 1), rc, TexKind::Conv { qw: 1, qh: 1 }, Fm::R8, Am::Clamp, Am::Clamp, 0))
    };
    assert_eq!(ck(0x0FFF_0FFF), Result::Ok(()));
    for rc in [0x0000_1000, 0x0000_2000, 0x0000_8000, 0x0000_FFFF, 0x1000_0000, 0x2000_0000, 0x8000_0000, 0xFFFF_0000] {
        assert_eq!(ck(rc), Err(Smem), "{rc:#x}");
    }
    // y0 = 1 (bits 31:16), x0 = 0: fine on a 1-wide texture of 2 rows; x0 = 1 is not.
    let ck1 = |rc: u32| {
        tex::check(1 << 12, &tex::Op::of(0, 64, rb(1, 2, 1, 1), rc, TexKind::Conv { qw: 1, qh: 1 }, Fm::R8, Am::Clamp, Am::Clamp, 0))
    };
    assert_eq!(ck1(0x0001_0000), Result::Ok(()));
    assert_eq!(ck1(0x0000_0001), Err(Smem));
    assert_eq!(ck1(0x0002_0000), Err(Smem));
}

// ---- ld ..., zmap and mma ..., skip (docs/cu.md a692cb3) ----

#[test]
fn zmap_and_skip_encodings_and_round_trips() {
    let one = |line: &str| {
        let w = isa::assemble(line).unwrap_or_else(|e| panic!("{line}: {}", isa::errors_text(&e)));
        assert_eq!(w.len(), 1);
        w[0]
    };
    // ld: imm bit 8 = zmap; mma: imm bit 14 = skip.
    assert_eq!(one("ld r1, r2, r3, r4, zmap"), 0x0000_0104_0302_0160);
    assert_eq!(one("ld r1, r2, r3, r4, 16, zmap"), 0x0010_0104_0302_0160);
    assert_eq!(one("ld r1, r2, r3, r4, 0, zmap"), one("ld r1, r2, r3, r4, zmap"));
    assert_eq!(one("ld r1,r2,r3,r4,zmap"), one("ld r1, r2, r3, r4, zmap"));
    assert_eq!(one("mma r1, r2, r3, r4, skip"), 0x0000_4004_0302_0170);
    assert_eq!(one("mma r1, r2, r3, r4, bias 64, pad 1, 2, skip"), 0x0010_6604_0302_0170);
    assert_eq!(one("mma r1, r2, r3, r4, pad 0, 0, skip"), one("mma r1, r2, r3, r4, skip"));
    assert_eq!(isa::decode(0x0000_0104_0302_0160), Ok(Insn::LdZmap { rd: 1, ra: 2, rb: 3, rc: 4, p: 0 }));
    assert_eq!(isa::decode(0x0000_0004_0302_0160), Ok(Insn::Ld { rd: 1, ra: 2, rb: 3, rc: 4, p: 0 }));
    assert_eq!(
        isa::decode(0x0000_4104_0302_0170),
        Ok(Insn::Mma { rd: 1, ra: 2, rb: 3, rc: 4, c0: C0::Acc, qa: 0, qb: 0, skip: true })
    );
    // Bits that stay unused: ld 15:9, st 15:8, mma 15.
    for bit in 9..16 {
        assert_eq!(isa::decode(0x0000_0004_0302_0160 | 1 << (32 + bit)), Err(isa::DecodeError::Field), "ld bit {bit}");
    }
    for bit in 8..16 {
        assert_eq!(isa::decode(0x0000_0004_0302_0161 | 1 << (32 + bit)), Err(isa::DecodeError::Field), "st bit {bit}");
    }
    assert_eq!(isa::decode(0x0000_C004_0302_0170), Err(isa::DecodeError::Field));
    // The disassembler: `, zmap` after p (or rc), `, skip` last.
    let text = "ld r1, r2, r3, r4, zmap\n\
                ld r1, r2, r3, r4, 65535, zmap\n\
                ld r1, r2, r3, r4, 7\n\
                st r1, r2, r3, r4, 7\n\
                mma r1, r2, r3, r4, skip\n\
                mma r1, r2, r3, r4, acc, skip\n\
                mma r1, r2, r3, r4, bias 262140, skip\n\
                mma r1, r2, r3, r4, pad 3, 0, skip\n\
                mma r1, r2, r3, r4, acc, pad 1, 1, skip\n\
                .word 0x0000020004030260\n\
                .word 0x0000010004030261\n\
                .word 0x0000c00004030270\n";
    let w = isa::assemble(text).unwrap();
    assert_eq!(isa::disassemble(&w), text);
    // Any word of these opcodes: its line assembles back to it.
    let mut x = 0x1234_5678_9ABC_DEF0u64;
    for i in 0..3000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let op = [0x60u64, 0x61, 0x70][(i % 3) as usize];
        let w = (x & !0xFF) | op;
        let line = isa::text(w);
        assert_eq!(one(&line), w, "{line}");
    }
}

#[test]
fn zmap_and_skip_bad_lines() {
    let bad = |t: &str| isa::assemble(t).unwrap_err().iter().map(|e| e.to_string()).collect::<Vec<_>>();
    let ld = "`ld` takes rd, ra, rb, rc [, p] [, zmap]";
    let st = "`st` takes rd, ra, rb, rc [, p]";
    let mma = "`mma` takes rd, ra, rb, rc [, acc | , bias o] [, pad qa, qb] [, skip]";
    let src = "ld r1, r2, r3, r4, zmap, 4\n\
               ld r1, r2, r3, r4, zmap, zmap\n\
               ld r1, r2, r3, r4, zmap 1\n\
               st r1, r2, r3, r4, zmap\n\
               ld r1, r2, r3, zmap\n\
               ld r1, r2, r3, r4, 4, 5, zmap\n\
               ld r1, r2, r3, r4, ZMAP\n\
               mma r1, r2, r3, r4, skip, acc\n\
               mma r1, r2, r3, r4, skip, skip\n\
               mma r1, r2, r3, r4, skip 1\n\
               mma r1, r2, r3, r4, skip, 1\n\
               mma r1, r2, r3, r4, skip, pad 1, 1\n\
               mma r1, r2, r3, r4, pad 1, 1, skip, x\n\
               mma r1, r2, r3, r4, zmap\n";
    let want = [
        format!("line 1: `ld r1, r2, r3, r4, zmap, 4`: `zmap` is out of place: {ld}"),
        format!("line 2: `ld r1, r2, r3, r4, zmap, zmap`: `zmap` is out of place: {ld}"),
        format!("line 3: `ld r1, r2, r3, r4, zmap 1`: `zmap 1` is not `zmap`: {ld}"),
        format!("line 4: `st r1, r2, r3, r4, zmap`: `zmap`: only `ld` writes a zero map: {st}"),
        format!("line 5: `ld r1, r2, r3, zmap`: missing operand: {ld}"),
        format!("line 6: `ld r1, r2, r3, r4, 4, 5, zmap`: extra operand: {ld}"),
        "line 7: `ld r1, r2, r3, r4, ZMAP`: p `ZMAP` is not a number (decimal or 0x hex)".to_string(),
        format!("line 8: `mma r1, r2, r3, r4, skip, acc`: `acc` is out of place: {mma}"),
        format!("line 9: `mma r1, r2, r3, r4, skip, skip`: `skip` is out of place: {mma}"),
        format!("line 10: `mma r1, r2, r3, r4, skip 1`: `skip 1` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {mma}"),
        format!("line 11: `mma r1, r2, r3, r4, skip, 1`: extra operand: {mma}"),
        format!("line 12: `mma r1, r2, r3, r4, skip, pad 1, 1`: `pad 1` is out of place: {mma}"),
        format!("line 13: `mma r1, r2, r3, r4, pad 1, 1, skip, x`: extra operand: {mma}"),
        format!("line 14: `mma r1, r2, r3, r4, zmap`: `zmap` is not `acc`, `bias o`, `pad qa, qb` or `skip`: {mma}"),
    ];
    assert_eq!(bad(src), want);
}

/// Runs the DMA engine alone on `op` from `g` (latency 3, O = 2) until
/// done: (the done cycle, the scratchpad after each cycle from g + 1).
fn dma_alone(op: dma::Op, g: u64, mem: &mut Memory, smem: &mut [u8]) -> (u64, Vec<Vec<u8>>) {
    let mut a = dma::Active::start(op, g, 3, 2);
    let mut banks = Banks::new(1);
    let mut after = Vec::new();
    for c in g + 1..g + 10_000 {
        let s = a.step(c, mem, smem, &mut banks);
        after.push(smem.to_vec());
        if s.done {
            return (c, after);
        }
    }
    panic!("not done");
}

/// An `ld` of `rows` x `n` from `a` (stride `stride`) to share offset `s`
/// (pitch `pitch`) of a share at 0.
fn ld_op(s: u32, a: u32, stride: u32, rows: u32, n: u32, pitch: u32, zmap: bool) -> dma::Op {
    dma::Op { kind: dma::Kind::Ld, slot: 0, joined: 0, s, a, stride, rows, n, pitch, smem_base: 0, zmap }
}

/// The zero map from the definition: bit `r mod 32` of word `floor(r/32)`
/// is 1 if memory bytes `a + r*stride .. + n - 1` are all zero.
fn zero_map_reference(mem: &Memory, a: u32, stride: u32, rows: u32, n: u32) -> Vec<u32> {
    let mut w = vec![0u32; rows.div_ceil(32) as usize];
    for r in 0..rows {
        let ar = a.wrapping_add(r.wrapping_mul(stride)) as u64;
        if (0..n as u64).all(|i| mem.byte((ar + i) & 0xFFFF_FFFF) == 0) {
            w[r as usize / 32] |= 1 << (r % 32);
        }
    }
    w
}

#[test]
fn zmap_bits_rows_zero_and_not_and_overlapping() {
    // Memory at 0x5000: row r (stride 3, n = 3) is zero for r in ZERO,
    // else its last byte is r + 1 (so a row with two zero bytes is not
    // zero). 40 rows: nz = 2, the bits of rows 40..63 are 0.
    const ZERO: [u32; 8] = [0, 1, 5, 31, 32, 33, 37, 39];
    let mut mem = Memory::new();
    for r in 0..40u32 {
        let v = if ZERO.contains(&r) { 0 } else { r as u8 + 1 };
        mem.load(0x5000 + 3 * r as u64, &[0, 0, v]);
    }
    let want: u32 = ZERO.iter().filter(|&&r| r < 32).map(|r| 1u32 << r).sum();
    let want1: u32 = ZERO.iter().filter(|&&r| r >= 32).map(|r| 1u32 << (r - 32)).sum();
    assert_eq!(zero_map_reference(&mem, 0x5000, 3, 40, 3), [want, want1]);
    // P = 2 < n = 3: the rows overlap in the scratchpad (the later row's
    // bytes win), the map is of the bytes as read from memory. s = 16: the
    // map at 8, 12; everything else stays 0xA5.
    let mut smem = vec![0xA5u8; 256];
    let (_, _) = dma_alone(ld_op(16, 0x5000, 3, 40, 3, 2, true), 10, &mut mem, &mut smem);
    assert_eq!(&smem[8..16], &[want.to_le_bytes(), want1.to_le_bytes()].concat()[..]);
    assert_eq!(want1 >> 8, 0, "bits for r >= rows are 0");
    assert_eq!(&smem[..8], &[0xA5; 8]);
    let mut data = vec![0xA5u8; 256];
    for r in 0..40usize {
        data[16 + 2 * r..16 + 2 * r + 3].copy_from_slice(&mem.bytes(0x5000 + 3 * r as u64, 3));
    }
    assert_eq!(&smem[16..], &data[16..]);
    // Rows overlapping in memory (stride 1, n = 4): row r is zero when
    // bytes r .. r + 3 are; rows 0..=31 exactly: nz = 1.
    let mut mem = Memory::new();
    mem.load(0x6000, &[1, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
    // Zero rows: 1, 2 (bytes 1..4, 2..5; row 3 has byte 6 = 7), 7..=29
    // (bytes 7..32 are zero; row 30 has byte 33 = 9).
    let want: u32 = (1 << 1) | (1 << 2) | (7..=29).map(|r| 1u32 << r).sum::<u32>();
    assert_eq!(zero_map_reference(&mem, 0x6000, 1, 32, 4), [want]);
    let mut smem = vec![0xA5u8; 256];
    dma_alone(ld_op(100, 0x6000, 1, 32, 4, 4, true), 0, &mut mem, &mut smem);
    assert_eq!(&smem[96..100], &want.to_le_bytes());
    // Every row zero, 64 rows, n = 1 (memory at 0x7000 never written):
    // two all-ones words; and none zero.
    let mut smem = vec![0u8; 256];
    dma_alone(ld_op(8, 0x7000, 1, 64, 1, 1, true), 0, &mut Memory::new(), &mut smem);
    assert_eq!(&smem[0..8], &[0xFF; 8]);
    let mut mem = Memory::new();
    mem.load(0x7000, &[0x80; 64]);
    let mut smem = vec![0xFFu8; 256];
    dma_alone(ld_op(8, 0x7000, 1, 33, 1, 1, true), 0, &mut mem, &mut smem);
    assert_eq!(&smem[0..8], &[0; 8]);
}

#[test]
fn zmap_words_written_after_the_copy() {
    // Against the same ld without zmap (done in e0, its last data word's
    // cycle): with zmap map word m is written in e0 + 1 + m (all four
    // bytes, the scratchpad unchanged in that cycle otherwise), the
    // operation done in e0 + nz; the data the same. 70 rows: nz = 3; rows
    // 3k zero; misaligned source and pitch 5 (flush cycles).
    let mut mem = Memory::new();
    for r in 0..70u32 {
        let v = if r % 3 == 0 { [0u8; 5] } else { [r as u8; 5] };
        mem.load(0x8001 + 7 * r as u64, &v);
    }
    let want = zero_map_reference(&mem, 0x8001, 7, 70, 5);
    assert_eq!(want.len(), 3);
    let mut plain = vec![0x5Au8; 512];
    let (e0, _) = dma_alone(ld_op(12, 0x8001, 7, 70, 5, 5, false), 20, &mut mem, &mut plain);
    let mut smem = vec![0x5Au8; 512];
    let (e, after) = dma_alone(ld_op(12, 0x8001, 7, 70, 5, 5, true), 20, &mut mem, &mut smem);
    assert_eq!(e, e0 + 3);
    let at_cycle = |c: u64| &after[(c - 21) as usize];
    // Up to e0: the data as the plain ld, the map words untouched.
    assert_eq!(&at_cycle(e0)[12..], &plain[12..]);
    assert_eq!(&at_cycle(e0)[..12], &[0x5A; 12]);
    for m in 0..3usize {
        let c = e0 + 1 + m as u64;
        let mut expect = at_cycle(c - 1).clone();
        expect[4 * m..4 * m + 4].copy_from_slice(&want[m].to_le_bytes());
        assert_eq!(at_cycle(c), &expect, "map word {m} in e0 + 1 + {m}");
    }
    assert_eq!(&smem[12..], &plain[12..]);
}

#[test]
fn ld_zmap_exact_cycles_in_a_kernel() {
    // ld_with_misaligned_ends with s = 8 and zmap: ld r3, r4, r5, r6, zmap:
    // s = 8, a = 0x3002, stride 16, rows 2, n 9, P = 9. O = 2, L = 5.
    // Row 0: a = 0x3002 (da 2), S = 8 (ds 0): nb = 3, nw = 3; ds < da: word
    //   j at beat j + 1, word 2 by a flush.
    // Row 1: a = 0x3012 (da 2), S = 17 (ds 1): nb = 3, nw = ceil(10/4) = 3;
    //   ds < da: the same.
    // X 27, 29, 31, 33 (li), X 35 ld: g = 36.
    //   37 req b0 (due 42)   38 req b1 (due 43)   42 take b0 (no word)
    //   43 take b1: row 0 word 0; req b2 (due 48)   44 req b3 (due 49)
    //   48 take b2: row 0 word 1; flush owed in 49
    //   49 flush: row 0 word 2; req b4 (due 54)   50 take b3 (no word)
    //   51 req b5 (due 56)   54 take b4: row 1 word 0
    //   56 take b5: row 1 word 1; flush owed in 57   57 flush: row 1 word
    //   2: e0 = 57.
    //   zmap: nz = 1: map word 0 (at s - 4 = 4) in 58: e = 58.
    // Picked 59, X 60 end, completion 61 (without zmap: 59, 60).
    // Memory 0x3002..0x300a zero (row 0: bit 0), 0x3012.. not (bit 1 = 0).
    let src = |suffix: &str| format!("li r3, 8\nli r4, 0x3002\nli r5, 16\nli r6, 0x20009\nld r3, r4, r5, r6{suffix}\nend");
    for (suffix, end_x, done) in [("", 59, 60), (", zmap", 60, 61)] {
        let mut r = setup(&src(suffix), vec![block(0)], 64, 8, 5);
        dma_memory(&mut r);
        r.memory.load(0x3002, &[0; 9]);
        let f = go(&one_slot(), &r);
        assert_eq!(x_cycles(&f.outcome), [27, 29, 31, 33, 35, end_x], "{suffix}");
        assert_eq!(f.outcome.blocks[0].complete_cycle, done);
        let mut want = [0u8; 26];
        for i in 0..9 {
            want[17 + i] = 0x12 + i as u8;
        }
        if suffix.is_empty() {
            assert_eq!(&f.smem[8..26], &want[8..]);
        } else {
            want[4] = 1;
            assert_eq!(&f.smem[..26], &want[..]);
        }
        assert_eq!(f.outcome.counters.rd_beats, 16 + 6);
    }
}

#[test]
fn every_zmap_error() {
    use Status::*;
    // status_of: 4 registers (r0 = x = 1, r1 = r2 = 0), a 64-byte share,
    // kmax 16. s in r2, rc in r3.
    let ld = |s: i64, rc: u32, tail: &str| status_of(&format!("li r2, {s}\nli r3, {rc:#x}\nld r2, r0, r0, r3{tail}\nend"));
    // align: s not a multiple of 4 with zmap, whatever rows and n; before
    // smem; not without zmap.
    assert_eq!(status_of("ld r0, r0, r0, r3, zmap"), (Align, 0)); // s = 1, rows = n = 0
    assert_eq!(ld(6, 0x10001, ", zmap"), (Align, 2));
    assert_eq!(ld(6, 0x10001, ""), (Ok, 3));
    assert_eq!(ld(2, 0x10100, ", zmap"), (Align, 2)); // also smem
    // smem: s < 4*nz (rows 1..32: nz 1; 33..: 2).
    assert_eq!(ld(0, 0x10001, ", zmap"), (Smem, 2));
    assert_eq!(ld(0, 0x10001, ""), (Ok, 3));
    assert_eq!(ld(4, 0x10001, ", zmap"), (Ok, 3));
    assert_eq!(ld(4, 0x100001, ", 1, zmap"), (Ok, 3)); // rows 16 = kmax: 4 + 15 + 1
    // rows > kmax (16), though the rows fit.
    assert_eq!(ld(4, 0x110001, ", 1, zmap"), (Smem, 2));
    assert_eq!(ld(4, 0x110001, ", 1"), (Ok, 3));
    // The rows' own bound still: 4 + 61 > 64.
    assert_eq!(ld(4, 0x1003d, ", zmap"), (Smem, 2));
    assert_eq!(ld(4, 0x1003c, ", zmap"), (Ok, 3));
    // rows = 0 or n = 0: nothing, no smem error (s = 0 < 4*nz, rows >
    // kmax), but align still.
    assert_eq!(ld(0, 0x10000, ", zmap"), (Ok, 3));
    assert_eq!(ld(0, 0x00005, ", zmap"), (Ok, 3));
    assert_eq!(ld(0, 0xFFFF_0000, ", zmap"), (Ok, 3));
    // nz = 2 from 33 rows, with kmax 64: s = 4 is not enough, 8 is.
    let p = CuParams { kmax: 64, ..one_slot() };
    let ld64 = |s: i64| status_on(&p, &format!("li r2, {s}\nli r3, 0x210001\nld r2, r0, r0, r3, 1, zmap\nend"));
    assert_eq!(ld64(4), (Smem, 2));
    assert_eq!(ld64(8), (Ok, 3));
    // Nothing copied on the error: an ld that would write byte 4.. and its
    // map at 0.
    let src = "li r2, 4\nli r3, 0x110001\nld r2, r0, r0, r3, 1, zmap\nend";
    let mut r = setup(src, vec![block(1)], 64, 4, 5);
    r.memory.load(0, &[9; 32]);
    let f = go(&one_slot(), &r);
    assert_eq!(f.outcome.blocks[0].status, Smem);
    assert!(f.smem[..64].iter().all(|&b| b == 0));
}

/// (cycle, port, share offset) of the reads of an `mma` outcome.
fn mma_reads(out: &mma::Outcome) -> Vec<(u64, u8, u32)> {
    out.accesses
        .iter()
        .filter_map(|a| match *a {
            Rd { cycle, port, at } => Some((cycle, port, at)),
            _ => None,
        })
        .collect()
}

/// A hand-timed test's operands: `A[i][k] = av(i, k)` (`tm x k`, row `i`
/// at share offset `ao + i*pa`) and `B[k][n] = bv(k, n)` (`k x tn`, row `k`
/// at `bo + k*pb`).
fn put_ab(m: &mut [u8], (ao, pa, tm): (usize, usize, usize), (bo, pb, tn): (usize, usize, usize), k: usize, av: impl Fn(usize, usize) -> i8, bv: impl Fn(usize, usize) -> i8) {
    for i in 0..tm {
        for kk in 0..k {
            m[ao + pa * i + kk] = av(i, kk) as u8;
        }
    }
    for kk in 0..k {
        for n in 0..tn {
            m[bo + pb * kk + n] = bv(kk, n) as u8;
        }
    }
}

/// `C` (`tm x tn`, little-endian int32) over the k-steps `used`, computed
/// directly from the operands' values.
fn c_direct(tm: usize, tn: usize, used: &[usize], av: impl Fn(usize, usize) -> i8, bv: impl Fn(usize, usize) -> i8) -> Vec<u8> {
    let c: Vec<i32> = (0..tm * tn).map(|x| used.iter().map(|&k| av(x / tn, k) as i32 * bv(k, x % tn) as i32).sum()).collect();
    le(&c)
}

#[test]
fn mma_a_reuse_exact_cycles_two_row_blocks_two_column_blocks() {
    // Grid 2 x 2, one bank (a word's row is its index), g = 0, no read yet.
    // TM = TN = K = 4: nr = nc = 2, tiles t = 2b + c, each h = w = 2. A
    // (4 x 4) at 0, PA = 4: row i is word i. B (4 x 4) at 16, PB = 8: row k
    // at 16 + 8k (bytes 4..7 padding, 0x55). C (4 x 4) at 48: C[i][n] at
    // 48 + 16i + 4n. Every A and B value non-zero. No skip: M = g = 0.
    // Reads: rd2 A once a row block, one needed word column: row block 0
    //   offsets 0, 4; row block 1: 8, 12 (b < 2: free from g + 1). rd3 per
    //   tile k = 0..3, one word (ceil(2/4) = 1, 4*floor(2c/4) = 0): 16, 24,
    //   32, 40; tiles 0, 1 free, tile 2 from E_0 + 1, tile 3 from E_1 + 1.
    //   One bank: both asking alternate (last rd2: rd3 is above; last rd3:
    //   none above asks, the lowest: rd2); no read yet counts as rd5's.
    //   And (docs/cu.md 4cf197a, narrowed in 7ef95d1) rd2 offers row block
    //   1's A (b >= 1), in cycles up to E_{b*nc-2} = E_0 (= 14, below), only
    //   in a cycle rd3 offers no read of the same bank: with one bank, only
    //   when rd3 offers nothing. Row block 1's reads all fall before E_0, so
    //   the narrowing changes nothing here.
    //   1 rd2(0)  2 rd3(16)  3 rd2(4): A of row block 0 taken 4
    //   4..6 rd3 24, 32, 40 (rd2 yields): B_0 taken 7
    //   7..10 rd3 16, 24, 32, 40 [tile 1] (rd2 yields): B_1 taken 11
    //   11 rd2(8)  12 rd2(12) (tile 2 waits for E_0 + 1 = 15, below: rd3
    //   offers nothing): row block 1 taken 13.
    //   (Before 4cf197a rd2 took 8, 12 in 5, 7, between B_0's reads, and
    //   B_0 was taken 9: here the grid's first tile starts two cycles
    //   earlier and row block 1's A, needed only by tile 2, later.)
    // A tile (one group of 4 useful steps): taken by the loader in S + 1,
    //   steps issue S + 2 .. S + 5, the last tile-ending (E = S + 5 unless
    //   the tile before is in flight, its E + 1 .. X - 1); row r ready E +
    //   r + C + 1 + P = E + 5 + r, transferred E + 6 + r: X = E + 7 (cyc =
    //   12 alone, the small preset test).
    // F_0 = max(4, 7, 0) = 7, S_0 = 9, E_0 = 14, X_0 = 21: rows 20, 21;
    //   writes 21, 22 (row 0), 23, 24 (row 1): W_0 = 24.
    // Tile 2's B from E_0 + 1 = 15: 15..18 (rd2 is done; no write yet):
    //   taken 19. F_2 = max(13, 19) = 19.
    // F_1 = max(4, 11) = 11, S_1 = max(11, E_0 = 14) + 2 = 16: steps 18 ..
    //   21, tile 0 in flight 15 .. 20: E_1 = 21 (not held back), X_1 = 28:
    //   rows 27, 28; writes 28, 29, 30, 31 = W_1.
    // Tile 3's B from E_1 + 1 = 22: 22..25 (the writes of 22..24 are C's
    //   words 13, 16, 17: other rows than B's words 4, 6, 8, 10): taken 26.
    //   F_3 = max(13, 26) = 26.
    // S_2 = max(19, E_1 = 21, W_0 = 24) + 2 = 26: steps 28 .. 31 (tile 1
    //   in flight 22 .. 27): E_2 = 31, X_2 = 38: rows 37, 38; writes 38,
    //   39, 40, 41 = W_2.
    // S_3 = max(26, E_2 = 31, W_1 = 31) + 2 = 33: steps 35 .. 38 (tile 2 in
    //   flight 32 .. 37): E_3 = 38, X_3 = 45: rows 44, 45; writes 45..48 =
    //   W_3; e = 48.
    let p = grid_params(2, 2, 1, 16);
    let mut m = vec![0x55u8; 128];
    let av = |i: usize, k: usize| (i * 4 + k + 1) as i8;
    let bv = |k: usize, n: usize| -((k * 4 + n + 3) as i8);
    put_ab(&mut m, (0, 4, 4), (16, 8, 4), 4, av, bv);
    let op = mop(0, 48, 0, 16, 4, 4, 4);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(1));
    let tt = |f, s, e, x, w| mma::TileTimes { f, s, e, cyc: 12, x, w };
    assert_eq!(out.m, 0);
    assert_eq!(out.tiles, [tt(7, 9, 14, 21, 24), tt(11, 16, 21, 28, 31), tt(19, 26, 31, 38, 41), tt(26, 33, 38, 45, 48)]);
    assert_eq!(out.done, 48);
    let mut want = vec![(1, RD2, 0), (2, RD3, 16), (3, RD2, 4), (4, RD3, 24), (5, RD3, 32), (6, RD3, 40)];
    want.extend((0..4).map(|k| (7 + k as u64, RD3, 16 + 8 * k)));
    want.extend([(11, RD2, 8), (12, RD2, 12)]);
    for from in [15, 22] {
        want.extend((0..4).map(|k| (from + k as u64, RD3, 16 + 8 * k)));
    }
    assert_eq!(mma_reads(&out), want);
    // C from the definition, computed here directly.
    assert_eq!(&m[48..112], &c_direct(4, 4, &[0, 1, 2, 3], av, bv)[..]);
}

#[test]
fn mma_skip_exact_cycles_three_row_blocks() {
    // Grid 2 x 2, one bank, g = 0, no read yet. TM = 6, TN = 2, K = 8,
    // skip: nr = 3, nc = 1 (tile t = row block t, h = w = 2). A (6 x 8) at
    // 0, PA = 8. The k-map at Bo - 4*nk = 48 (nk = 1): 0xFFFF_FFF2: steps 1
    // and 4..7 skipped (bits 8..31, past K, ignored): used 0, 2, 3 (u = 3,
    // q = 1 group of 3). Needed word columns: x = 0 only (k 4..7 all
    // skipped). B (8 x 2) at 52, PB = 8: used rows at 52, 68, 76. C (6 x 2)
    // at 116. Every A and B value non-zero, the skipped B rows and A's
    // column 1 too (so summing them would show).
    // Reads: rd3 first the map, from g + 1; A and B from M + 1 (docs/cu.md
    //   30446b4: both ports wait for the map). rd2: row block b offsets
    //   16b, 16b + 8 (rows 2b, 2b + 1, column 0); row block 2 from E_{L_0}
    //   + 1 = E_0 + 1. rd3 per tile: 52, 68, 76; tile 2 from E_0 + 1.
    //   The yield (docs/cu.md 4cf197a, narrowed in 7ef95d1): rd2 holds
    //   back a read of row block b >= 1 for rd3's read of the same bank only
    //   in cycles up to E_{b*nc-2}, never when b*nc < 2. Here nc = 1: row
    //   block 1 never yields (1*1 < 2), and row block 2 only up to E_0,
    //   while its buffer half is free only from E_{L_0} + 1 = E_0 + 1: so
    //   nothing ever yields, and the one bank's arbitration alone decides
    //   (the lowest port above the bank's last read's, else the lowest;
    //   with rd2 and rd3 both asking they alternate).
    //   1 rd3(48) alone: M = 2   2 nothing (A, B from M + 1 = 3)
    //   3 rd2(0) [last rd3: none above asks, the lowest]   4 rd3(52)
    //   [above rd2]   5 rd2(8): row block 0 taken 6   6 rd3(68)
    //   7 rd2(16) [row block 1: no yield]   8 rd3(76): B_0 taken 9
    //   9 rd2(24): row block 1 taken 10 (rd3 asks for t1's 52 too)
    //   10..12 rd3 52, 68, 76 [t1] (rd2 at row block 2, not free until
    //   E_0 + 1 = 16, below): B_1 taken 13.
    //   (Before 7ef95d1 row block 1 yielded to B: 6..10 were all rd3's,
    //   B_0 taken 8, B_1 11, and row block 1 read in 11, 12.)
    // A tile (one group of 3 useful steps): taken by the loader in S + 1,
    //   steps issue S + 2 .. S + 4, the last tile-ending (E = S + 4 unless
    //   the tile before is in flight, its E + 1 .. X - 1), row r ready E +
    //   r + C + 1 + P = E + 5 + r, transferred E + 6 + r: X = E + 7 (cyc =
    //   11 alone).
    // F_0 = max(6, 9, M = 2) = 9, S_0 = 11, steps 13, 14, 15: E_0 = 15,
    //   X_0 = 22: rows 21, 22; writes 22, 23 (row 0), 24, 25 = W_0.
    // From E_0 + 1 = 16, row block 2's A and tile 2's B (no write in 16 ..
    //   21; the first is 22), both on the one bank, and past E_0 row block
    //   2 no longer yields: the arbitration decides. The bank's last read
    //   is rd3's (12):
    //   16 rd2(32) [none above rd3 asks: the lowest]   17 rd3(52) [above
    //   rd2]   18 rd2(40): row block 2 taken 19   19 rd3(68)   20 rd3(76):
    //   B_2 taken 21.
    //   (Before 7ef95d1 rd2 yielded: B_2's reads first, then A.)
    // F_1 = max(10, 13, 2) = 13, S_1 = max(13, E_0 = 15) + 2 = 17: steps
    //   19, 20, 21; the third is tile-ending and tile 0 is in flight 16 ..
    //   21: E_1 = 22; rows ready 27 + r, transferred 28, 29: X_1 = 29;
    //   writes 29, 30, 31, 32 = W_1.
    // F_2 = max(19, 21, 2) = 21, S_2 = max(21, E_1 = 22, W_0 = 25) + 2 =
    //   27: steps 29, 30, 31 (tile 1 in flight 23 .. 28): E_2 = 31, rows
    //   ready 36, 37, transferred 37, 38: X_2 = 38; writes 38..41 = W_2;
    //   e = 41.
    let p = grid_params(2, 2, 1, 16);
    let mut m = vec![0u8; 256];
    let av = |i: usize, k: usize| (i * 8 + k + 1) as i8;
    let bv = |k: usize, n: usize| -((k * 2 + n + 1) as i8);
    put_ab(&mut m, (0, 8, 6), (52, 8, 2), 8, av, bv);
    m[48..52].copy_from_slice(&0xFFFF_FFF2u32.to_le_bytes());
    let op = mma::Op { skip: true, ..mop(0, 116, 0, 52, 6, 2, 8) };
    assert_eq!(mma::check(16, 256, &op), Ok(()));
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(1));
    let tt = |f, s, e, x, w| mma::TileTimes { f, s, e, cyc: 11, x, w };
    assert_eq!(out.m, 2);
    assert_eq!(out.tiles, [tt(9, 11, 15, 22, 25), tt(13, 17, 22, 29, 32), tt(21, 27, 31, 38, 41)]);
    assert_eq!(out.done, 41);
    assert_eq!(
        mma_reads(&out),
        [
            (1, RD3, 48),
            (3, RD2, 0),
            (4, RD3, 52),
            (5, RD2, 8),
            (6, RD3, 68),
            (7, RD2, 16),
            (8, RD3, 76),
            (9, RD2, 24),
            (10, RD3, 52),
            (11, RD3, 68),
            (12, RD3, 76),
            (16, RD2, 32),
            (17, RD3, 52),
            (18, RD2, 40),
            (19, RD3, 68),
            (20, RD3, 76),
        ]
    );
    // C over the used steps 0, 2, 3 only, computed here directly.
    assert_eq!(&m[116..164], &c_direct(6, 2, &[0, 2, 3], av, bv)[..]);
}

#[test]
fn mma_row_block_1_a_with_one_column_block_does_not_yield() {
    // docs/cu.md 4cf197a made rd2's read of a row block b >= 1 wait while
    // rd3 offers a read of the same bank; 7ef95d1 narrowed that to cycles up
    // to E_{b*nc-2}, and not at all when b*nc < 2. Here nc = 1 and b = 1:
    // 1*1 < 2, so row block 1 never yields and the bank's arbitration alone
    // decides. (This test was `mma_row_block_1_a_yields_its_bank_to_b`: the
    // same operation, where row block 1 used to wait for all of B_0 and B_1.)
    // Grid 2 x 2, two banks (word w in bank w mod 2), g = 0, no read yet.
    // TM = 4, TN = 2, K = 4, no skip (M = 0): nr = 2, nc = 1, tile t = row
    // block t, h = w = 2, u = 4 (one group of 4). A (4 x 4) at Ao = 4, PA
    // = 4: row i is word 1 + i; row block 0 reads words 1 (bank 1), 2
    // (bank 0); row block 1 words 3 (bank 1), 4 (bank 0). B (4 x 2) at Bo
    // = 24, PB = 8, cw = 1: step k's word is 6 + 2k, all in bank 0; tiles 0
    // and 1 (both < 2: free from M + 1 = 1) each read 24, 32, 40, 48. C (4 x
    // 2) at 56.
    //   1 rd2(4) [bank 1] and rd3(24) [bank 0]: both taken
    //   2 rd2(8) and rd3(32) both bank 0: bank 0's last read rd3's, none
    //     above asks: the lowest, rd2 (rd3 waits): row block 0 taken 3
    //   3 rd2(12) [row block 1, bank 1] and rd3(32) [bank 0]: both taken
    //   4 rd2(16) [row block 1, bank 0; no yield] and rd3(40) [bank 0]:
    //     bank 0's last read rd3's, none above asks: rd2 (rd3 waits): row
    //     block 1 taken 5. (Before 7ef95d1 rd2 did not offer, rd3 took 40
    //     and rd2 waited to 10.)
    //   5 rd3(40)  6 rd3(48): B_0 taken 7
    //   7..10 rd3 24, 32, 40, 48 [tile 1]: B_1 taken 11.
    // A tile (one group of 4 useful steps): taken by the loader in S + 1,
    //   steps S + 2 .. S + 5, E = S + 5 unless the previous tile is in
    //   flight (its E + 1 .. X - 1); row r ready E + r + C + 1 + P = E + 5
    //   + r, transferred E + 6 + r (not before the previous tile's row 1):
    //   X = E + 7 (cyc = 12 alone, as on the small preset).
    // F_0 = max(3, 7, 0) = 7, S_0 = 9, steps 11..14: E_0 = 14, X_0 = 21:
    //   rows 20, 21; writes (mode 0) 21, 22 (row 0), 23, 24 (row 1): W_0 =
    //   24.
    // F_1 = max(5, 11, 0) = 11, S_1 = max(11, E_0 = 14) + 2 = 16: steps 18
    //   .. 21, tile 0 in flight 15 .. 20: E_1 = 21, rows 27, 28: X_1 = 28;
    //   writes 28, 29, 30, 31 = W_1; e = max(28, 31) = 31.
    //   (B_0, not row block 1's A, decides F_0: taking A earlier gives back
    //   the cycle the yield had saved, S_0 = 9 against 8 before.)
    let p = grid_params(2, 2, 2, 16);
    let mut m = vec![0u8; 128];
    let av = |i: usize, k: usize| (i * 4 + k + 1) as i8;
    let bv = |k: usize, n: usize| -((k * 2 + n + 1) as i8);
    put_ab(&mut m, (4, 4, 4), (24, 8, 2), 4, av, bv);
    let op = mop(0, 56, 4, 24, 4, 2, 4);
    assert_eq!(mma::check(16, 128, &op), Ok(()));
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(2));
    let tt = |f, s, e, x, w| mma::TileTimes { f, s, e, cyc: 12, x, w };
    assert_eq!(out.tiles, [tt(7, 9, 14, 21, 24), tt(11, 16, 21, 28, 31)]);
    assert_eq!(out.done, 31);
    let mut want = vec![(1, RD2, 4), (1, RD3, 24), (2, RD2, 8), (3, RD2, 12), (3, RD3, 32), (4, RD2, 16), (5, RD3, 40), (6, RD3, 48)];
    want.extend((0..4).map(|k| (7 + k as u64, RD3, 24 + 8 * k)));
    assert_eq!(mma_reads(&out), want);
    // C from the definition, computed here directly.
    assert_eq!(&m[56..88], &c_direct(4, 2, &[0, 1, 2, 3], av, bv)[..]);
}

#[test]
fn mma_row_block_2_a_meets_b_after_e0_by_arbitration() {
    // docs/cu.md 7ef95d1: rd2's read of a row block b >= 1 yields its bank
    // to rd3 only in cycles up to E_{b*nc-2}; from E_{b*nc-2} + 1 the
    // scratchpad's arbitration alone decides. Here nc = 1 and row block 2
    // (E_{2*1-2} = E_0): its buffer half is free from E_{L_0} + 1 = E_0 + 1,
    // the cycle tile 2's B reads may start too, both on bank 0.
    // Grid 2 x 2, two banks (word w in bank w mod 2), g = 0, no read yet.
    // TM = 6, TN = 2, K = 4, no skip (M = 0): nr = 3, nc = 1, tile t = row
    // block t, h = w = 2, u = 4 (one group of 4). A (6 x 4) at Ao = 0, PA =
    // 4: row i is word i; row block b reads words 2b (bank 0), 2b + 1 (bank
    // 1): offsets 8b, 8b + 4. B (4 x 2) at Bo = 24, PB = 8, cw = 1: step k's
    // word is 6 + 2k, all bank 0; every tile reads 24, 32, 40, 48 (tiles
    // 0, 1 free from M + 1 = 1, tile 2 from E_0 + 1). C (6 x 2) at 56:
    // words 14 .. 25, first written in 21 (below).
    // Reads (the bank's last read: the lowest asking port above its port,
    // else the lowest; none yet counts as rd5):
    //   1 rd2(0) and rd3(24) on bank 0: none above rd5, the lowest: rd2
    //   2 rd2(4) [bank 1] and rd3(24) [bank 0]: both; row block 0 taken 3
    //   3 rd2(8) [row block 1, bank 0: 1*1 < 2, no yield] and rd3(32)
    //     [bank 0]: bank 0's last rd3, none above asks: rd2
    //   4 rd2(12) [bank 1] and rd3(32) [bank 0]: both; row block 1 taken 5
    //   5 rd3(40)  6 rd3(48): B_0 taken 7 (rd2's row block 2 not free
    //     before E_0 + 1)
    //   7..10 rd3 24, 32, 40, 48 [tile 1]: B_1 taken 11.
    // A tile (one group of 4 useful steps): taken by the loader in S + 1,
    //   steps S + 2 .. S + 5, E = S + 5 unless the previous tile is in
    //   flight (its E + 1 .. X - 1); row r ready E + r + C + 1 + P = E + 5
    //   + r, transferred E + 6 + r (not before the previous tile's row 1):
    //   X = E + 7 (cyc = 12 alone).
    // F_0 = max(3, 7, 0) = 7, S_0 = 9, steps 11..14: E_0 = 14, X_0 = 21:
    //   rows 20, 21; writes 21, 22, 23, 24 = W_0.
    // From E_0 + 1 = 15: row block 2 (past E_0: no yield) and tile 2's B
    //   (no write in 15 .. 20):
    //   15 rd2(16) [word 4, bank 0] and rd3(24) [bank 0]: bank 0's last
    //     read rd3's (10), none above asks: the lowest, rd2 (rd3 waits).
    //     (Before 7ef95d1 rd2 did not offer: rd3 took 24.)
    //   16 rd2(20) [bank 1] and rd3(24) [bank 0]: both; row block 2 taken
    //     17
    //   17 rd3(32)  18 rd3(40)  19 rd3(48): B_2 taken 20.
    // F_1 = max(5, 11, 0) = 11, S_1 = max(11, E_0 = 14) + 2 = 16: steps 18
    //   .. 21, tile 0 in flight 15 .. 20: E_1 = 21, rows 27, 28: X_1 = 28;
    //   writes 28 .. 31 = W_1.
    // F_2 = max(17, 20, 0) = 20, S_2 = max(20, E_1 = 21, W_0 = 24) + 2 =
    //   26: steps 28 .. 31 (tile 1 in flight 22 .. 27): E_2 = 31, rows 37,
    //   38: X_2 = 38; writes 38 .. 41 = W_2; e = max(38, 41) = 41.
    let p = grid_params(2, 2, 2, 16);
    let mut m = vec![0u8; 128];
    let av = |i: usize, k: usize| (i * 4 + k + 1) as i8;
    let bv = |k: usize, n: usize| -((k * 2 + n + 1) as i8);
    put_ab(&mut m, (0, 4, 6), (24, 8, 2), 4, av, bv);
    let op = mop(0, 56, 0, 24, 6, 2, 4);
    assert_eq!(mma::check(16, 128, &op), Ok(()));
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(2));
    let tt = |f, s, e, x, w| mma::TileTimes { f, s, e, cyc: 12, x, w };
    assert_eq!(out.tiles, [tt(7, 9, 14, 21, 24), tt(11, 16, 21, 28, 31), tt(20, 26, 31, 38, 41)]);
    assert_eq!(out.done, 41);
    let mut want = vec![(1, RD2, 0), (2, RD2, 4), (2, RD3, 24), (3, RD2, 8), (4, RD2, 12), (4, RD3, 32), (5, RD3, 40), (6, RD3, 48)];
    want.extend((0..4).map(|k| (7 + k as u64, RD3, 24 + 8 * k)));
    want.extend([(15, RD2, 16), (16, RD2, 20), (16, RD3, 24), (17, RD3, 32), (18, RD3, 40), (19, RD3, 48)]);
    assert_eq!(mma_reads(&out), want);
    // C from the definition, computed here directly.
    assert_eq!(&m[56..104], &c_direct(6, 2, &[0, 1, 2, 3], av, bv)[..]);
}

#[test]
fn mma_skip_values_against_the_definition() {
    // Random k-maps (bits past K set at random too: ignored), every C0
    // mode, pads, shapes across word columns and map words; each run
    // checked against the spec's orders and times (mma_checked) and C
    // against the definition over the used steps.
    let cases = [
        ((2, 2, 1, 16), (3u32, 5u32, 9u32)),
        ((3, 2, 2, 64), (7, 4, 40)),
        ((4, 8, 8, 64), (9, 17, 33)),
        ((1, 1, 1, 64), (2, 3, 64)),
        ((2, 4, 4, 16), (5, 9, 16)),
        ((4, 4, 2, 128), (6, 6, 100)),
    ];
    let mut used_total = 0;
    for (case, ((r, c, banks, kmax), (tm, tn, k))) in cases.into_iter().enumerate() {
        let p = grid_params(r, c, banks, kmax);
        for (mode, density) in [(0u32, 0.5f64), (1, 0.2), (2, 0.8), (0, 0.0), (1, 1.0)] {
            let (qa, qb) = (case as u32 % 4, (case as u32 + mode) % 4);
            let c0 = match mode {
                0 => C0::Zero,
                1 => C0::Acc,
                _ => C0::Bias(8),
            };
            let nk = k.div_ceil(32);
            let base = 64 * (case as u32 % 3);
            let mut op = mma::Op { c0, qa, qb, skip: true, ..mop(base, 0, 0, 0, tm, tn, k) };
            let (pa, pb) = pitches(&op);
            // Layout: bias row at 8, A, the map, B, C.
            op.ao = (8 + 4 * tn).next_multiple_of(4) + 4;
            let map_at = op.ao + tm * pa + 4;
            op.bo = map_at + 4 * nk;
            op.co = op.bo + k * pb + 8;
            let size = op.co + 4 * tm * tn + 12;
            assert_eq!(mma::check(kmax, size, &op), Ok(()));
            let mut m = noise((base + size) as usize + 64, 7 * case as u64 + mode as u64);
            let coin = noise(32 * nk as usize, 99 + case as u64);
            for w in 0..nk {
                let mut word = 0u32;
                for b in 0..32 {
                    if (coin[(32 * w + b) as usize] as f64) < density * 256.0 {
                        word |= 1 << b;
                    }
                }
                let at = (base + map_at + 4 * w) as usize;
                m[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            let used = spec_used(&m, &op);
            used_total += used.len();
            let want = mma_reference(&m, &op);
            let before = m.clone();
            mma_checked(&p, &op, 10, &mut m, &mut Banks::new(banks));
            let (cs, ce) = ((base + op.co) as usize, (base + op.co + 4 * tm * tn) as usize);
            assert_eq!(&m[cs..ce], &want[..], "case {case} mode {mode}");
            // Nothing but C written.
            assert_eq!(&m[..cs], &before[..cs]);
            assert_eq!(&m[ce..], &before[ce..]);
        }
    }
    assert!(used_total > 0);
}

#[test]
fn mma_skip_with_no_used_step_gives_c0() {
    // u = 0 (every k-step's bit 1): C = C0 in each mode; no A or B read,
    // only the map; each tile through the grid with one all-zero step.
    // Grid 2 x 2, two banks, TM = TN = 3 (four tiles), K = 40 (nk = 2).
    let p = grid_params(2, 2, 2, 64);
    for c0 in [C0::Zero, C0::Acc, C0::Bias(0)] {
        let op = mma::Op { c0, skip: true, ..mop(0, 400, 16, 84, 3, 3, 40) };
        let mut m = noise(512, 3);
        m[76..84].copy_from_slice(&[0xFF; 8]);
        let before = m.clone();
        let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(2));
        let reads = mma_reads(&out);
        assert_eq!(reads.iter().filter(|r| r.1 != RD4).map(|r| (r.1, r.2)).collect::<Vec<_>>(), [(RD3, 76), (RD3, 80)]);
        // M: the map's reads in 1, 2 (nothing else asks): M = 3; F_t = M.
        assert_eq!(out.m, 3);
        assert!(out.tiles.iter().all(|t| t.f == 3));
        let zero = crate::models::systolic::run(&p.grid(), &crate::models::systolic::Gemm { a: vec![vec![0]; 2], b: vec![vec![0; 2]], c0: None }).cycles;
        assert!(out.tiles.iter().all(|t| t.cyc == zero));
        // By hand (docs/systolic.md): the one step is not useful, so the
        // last group's candidate is the null step, tile-ending: the loader
        // takes the group in S + 1 and issues it in E = S + 2 unless the
        // tile before is in flight (its E + 1 .. X - 1): rows ready E + 5 +
        // r, transferred E + 6 + r, X = E + 7 (cyc = 9 alone). Mode 0:
        // S_0 = M + 2 = 5, E_0 = 7, X_0 = 14, rows 13, 14: writes 14..17 =
        // W_0. Tile 1 (h 2, w 1): S_1 = E_0 + 2 = 9, held 11, tile 0 in
        // flight 8 .. 13: E_1 = 14, rows 20, 21: X_1 = 21, writes 21, 22 =
        // W_1. Tile 2 (h 1, w 2): S_2 = max(E_1, W_0) + 2 = 19, held 21 (tile
        // 1 in flight 15 .. 20): E_2 = 21, X_2 = 28 (rows 27, 28), writes 28,
        // 29. Tile 3 (h 1, w 1): S_3 = max(E_2, W_1) + 2 = 24, held 26, tile
        // 2 in flight 22 .. 27: E_3 = 28, X_3 = 35 (rows 34, 35), write 35 =
        // e.
        assert_eq!(zero, 9);
        if c0 == C0::Zero {
            let got: Vec<_> = out.tiles.iter().map(|t| (t.s, t.e, t.x, t.w)).collect();
            assert_eq!(got, [(5, 7, 14, 17), (9, 14, 21, 22), (19, 21, 28, 29), (24, 28, 35, 35)]);
            assert_eq!(out.done, 35);
        }
        let word = |m: &[u8], at: usize| i32::from_le_bytes(m[at..at + 4].try_into().unwrap());
        for i in 0..3 {
            for n in 0..3 {
                let at = 400 + 4 * (3 * i + n);
                let want = match c0 {
                    C0::Zero => 0,
                    C0::Acc => word(&before, at),
                    C0::Bias(o) => word(&before, o as usize + 4 * n),
                };
                assert_eq!(word(&m, at), want, "{c0:?} C[{i}][{n}]");
            }
        }
    }
}

#[test]
fn every_skip_error() {
    use Status::*;
    let shape = |tm: u32, tn: u32, k: u32| tm | tn << 8 | k << 16;
    let op = |bo: u32, rc: u32| mma::Op { skip: true, ..mma::Op::of(0, 0, bo, rc, C0::Zero, 0, 0) };
    // Bo < 4*nk (nk = ceil(K/32)); without skip no such bound.
    assert_eq!(mma::check(64, 1 << 20, &op(0, shape(1, 1, 1))), Err(Smem));
    assert_eq!(mma::check(64, 1 << 20, &op(4, shape(1, 1, 1))), Result::Ok(()));
    assert_eq!(mma::check(64, 1 << 20, &op(4, shape(1, 1, 32))), Result::Ok(()));
    assert_eq!(mma::check(64, 1 << 20, &op(4, shape(1, 1, 33))), Err(Smem));
    assert_eq!(mma::check(64, 1 << 20, &op(8, shape(1, 1, 33))), Result::Ok(()));
    assert_eq!(mma::check(64, 1 << 20, &mma::Op::of(0, 0, 0, shape(1, 1, 33), C0::Zero, 0, 0)), Result::Ok(()));
    // Empty shapes: no smem check; align first.
    assert_eq!(mma::check(64, 1 << 20, &op(0, shape(0, 1, 1))), Result::Ok(()));
    assert_eq!(mma::check(64, 1 << 20, &op(2, shape(1, 1, 1))), Err(Align));
    // In a kernel (status_of: r0 = x = 1, 64-byte share, kmax 16): mma r1,
    // r2, r3, r0 with Co = Ao = 0 (r1, r2), Bo in r3, rc in r0.
    let k = |bo: u32, rc: u32| status_of(&format!("li r3, {bo}\nli r0, {rc:#x}\nmma r1, r2, r3, r0, skip\nend"));
    assert_eq!(k(0, shape(1, 1, 1)), (Smem, 2));
    assert_eq!(k(4, shape(1, 1, 1)), (Ok, 3));
    assert_eq!(k(0, shape(0, 1, 1)), (Ok, 3));
    assert_eq!(k(2, shape(1, 1, 1)), (Align, 2));
}

#[test]
fn ld_zmap_then_mma_skip_in_a_kernel() {
    // B (8 x 4, rows 1, 2, 5 zero) loaded with ld ..., zmap at Bo = 40 (its
    // map at 36), A (2 x 8) at 0; mma ..., skip gives the dense product
    // (the skipped rows are zero).
    let src = "li r4, 0x3000\nli r5, 8\nli r11, 0x20008\nld r1, r4, r5, r11\n\
               li r6, 40\nli r4, 0x3100\nli r7, 4\nli r8, 0x80004\nld r6, r4, r7, r8, 8, zmap\n\
               li r9, 112\nli r10, 0x80402\nmma r9, r1, r6, r10, skip\nend";
    let a: Vec<u8> = (0..16).map(|i| (i as i8 - 5) as u8).collect();
    let mut b = vec![0u8; 32];
    for k in [0, 3, 4, 6, 7] {
        for n in 0..4 {
            b[4 * k + n] = (k * 4 + n + 1) as u8;
        }
    }
    let mut r = setup(src, vec![block(0)], 256, 16, 3);
    r.memory.load(0x3000, &a);
    r.memory.load(0x3100, &b);
    let f = go(&CuParams { regs: 16, words: 64, ..one_slot() }, &r);
    assert_eq!(f.outcome.blocks[0].status, Status::Ok);
    assert_eq!(&f.smem[36..40], &0b0010_0110u32.to_le_bytes());
    let c: Vec<i32> =
        (0..8).map(|x| (0..8).map(|k| a[8 * (x / 4) + k] as i8 as i32 * b[4 * k + x % 4] as i8 as i32).sum()).collect();
    assert_eq!(&f.smem[112..144], &le(&c)[..]);
}

#[test]
fn mma_next_tile_computes_while_the_previous_rows_drain() {
    // docs/cu.md (8e84419): S_t waits for E_{t-1}, not X_{t-1}. Grid 2 x 2,
    // eight banks (word m: bank m mod 8), g = 0, no read yet. TM = 2, TN =
    // 4, K = 8: one row block, two tiles (column blocks 0, 1), h = w = 2, u
    // = 8: two groups of 4. A (2 x 8) at 0, PA = 8: needed word columns 0,
    // 1: rd2 reads 0, 8, 4, 12 (words 0, 2, 1, 3: banks 0, 2, 1, 3). B (8 x
    // 4) at 16, PB = 8: one word a step (ceil(2/4) = 1), for both tiles at
    // 16 + 8k (4*floor(2c/4) = 0): words 4 + 2k, banks 4, 6, 0, 2, 4, 6,
    // 0, 2. C (2 x 4) at 80. Every A and B value non-zero: every step
    // useful. No skip: M = 0.
    // Reads (never two on one bank in a cycle, no write before 27):
    //   1 rd2 w0, rd3 w4   2 rd2 w2, rd3 w6   3 rd2 w1, rd3 w8   4 rd2 w3
    //   (A taken 5), rd3 w10   5..8 rd3 w12..w18: B_0 taken 9   9..16 tile
    //   1's: B_1 taken 17.
    // Tile 0: F_0 = max(5, 9) = 9, S_0 = 11. The loader takes group 0 in
    //   12, holds it from 13, issues steps 13..16; in 16 (its last step
    //   issued, nothing left) it takes group 1, held from 17: steps 17..20,
    //   the last tile-ending (no tile before): E_0 = 20. Row r ready E_0 +
    //   r + C + 1 + P = 25 + r, transferred 26 + r: rows 26, 27: X_0 = 27.
    //   Writes 27, 28 (row 0), 29, 30 (row 1): W_0 = 30.
    // Tile 1: S_1 = max(F_1 = 17, E_0 = 20, W_{-1} = 0) + 2 = 22 (the old
    //   rule waited for X_0: 29). Group 0 taken 23, steps 24..27, group 1
    //   taken 27, steps 28..31: it computes while tile 0's rows leave (26,
    //   27); its tile-ending step in 31, after tile 0's flight (21 .. 26):
    //   E_1 = 31. Rows ready 36 + r, transferred 37, 38: X_1 = 38 (= S_1 +
    //   cyc, cyc = 16: the same as alone). Writes 38..41 = W_1 = e.
    let p = grid_params(2, 2, 8, 16);
    let mut m = vec![0x55u8; 256];
    for i in 0..2 {
        for k in 0..8 {
            m[8 * i + k] = (i * 8 + k + 1) as u8;
        }
    }
    for k in 0..8 {
        for n in 0..4 {
            m[16 + 8 * k + n] = (-((k * 4 + n + 1) as i8)) as u8;
        }
    }
    let op = mop(0, 80, 0, 16, 2, 4, 8);
    assert_eq!(mma::check(16, 256, &op), Ok(()));
    let want = mma_reference(&m, &op);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(8));
    assert_eq!(
        out.tiles,
        [
            mma::TileTimes { f: 9, s: 11, e: 20, cyc: 16, x: 27, w: 30 },
            mma::TileTimes { f: 17, s: 22, e: 31, cyc: 16, x: 38, w: 41 },
        ]
    );
    assert_eq!(out.done, 41);
    let mut reads = vec![(1, RD2, 0), (1, RD3, 16), (2, RD2, 8), (2, RD3, 24), (3, RD2, 4), (3, RD3, 32), (4, RD2, 12), (4, RD3, 40)];
    reads.extend((4..8).map(|k| (1 + k as u64, RD3, 16 + 8 * k)));
    reads.extend((0..8).map(|k| (9 + k as u64, RD3, 16 + 8 * k)));
    assert_eq!(mma_reads(&out), reads);
    assert_eq!(&m[80..112], &want[..]);
}

#[test]
fn mma_in_flight_rule_holds_back_the_next_tile_ending_step() {
    // One used k-step a tile: the next tile's only step is tile-ending and
    // waits while the previous tile is in flight. Grid 2 x 2, two banks
    // (word m: bank m mod 2, row m div 2), g = 0, no read yet. TM = 2, TN
    // = 6, K = 8, skip: three tiles (column blocks 0, 1, 2), h = w = 2. A
    // (2 x 8) at 0, PA = 8. The k-map (nk = 1) at Bo - 4 = 16: 0xFFFF_FFDF:
    // only k-step 5 used (u = 1, q = 1 group of one step). Needed word
    // column: x = 1 only: rd2 reads 4, 12 (words 1, 3, both bank 1). B (8 x
    // 6) at 20, PB = 8: used row 5 at 60: tiles 0, 1 read 60 (word 15, bank
    // 1; 4*floor(2c/4) = 0), tile 2 reads 64 (word 16, bank 0). C (2 x 6)
    // at 84. Every A and B value non-zero.
    // Reads: 1 rd3(16) the map, alone: M = 2   2 nothing (A, B from M + 1)
    //   3 rd2(4), rd3(60) on bank 1, no read of it yet (counts as rd5's):
    //   the lowest, rd2   4 rd2(12), rd3(60): last rd2: rd3 is above: rd3
    //   (B_0 taken 5)   5 rd2(12), rd3(60) [t1]: last rd3: none above asks:
    //   rd2 (A taken 6)   6 rd3(60): B_1 taken 7. Tile 2's B waits for E_0.
    // A tile of one step: taken by the loader in S + 1, held from S + 2,
    //   its step tile-ending: E = S + 2 unless the tile before is in flight
    //   (its E + 1 .. X - 1); row r ready E + r + C + 1 + P = E + 5 + r,
    //   transferred E + 6 + r: X = E + 7.
    // Tile 0: F_0 = max(6, 5, 2) = 6, S_0 = 8, E_0 = 10, rows 16, 17: X_0 =
    //   17; writes 17, 18, 19, 20 = W_0.
    // 11: tile 2's B free (E_0 + 1): rd3(64) alone, no write: B_2 taken 12:
    //   F_2 = max(6, 12, 2) = 12.
    // Tile 1: F_1 = max(6, 7, 2) = 7, S_1 = max(7, E_0 = 10) + 2 = 12: the
    //   loader takes the group in 13, holds it from 14; tile 0 is in flight
    //   11 .. 16, so the step waits in 14, 15, 16 and issues in 17 = E_1
    //   (S_1 + 2 = 14 without the rule). Rows ready 22 + r, transferred 23,
    //   24: X_1 = 24 (alone it would be S_1 + cyc = 12 + 9 = 21); writes
    //   after W_0 and each after its row: 24, 25, 26, 27 = W_1.
    // Tile 2: S_2 = max(F_2 = 12, E_1 = 17, W_0 = 20) + 2 = 22, taken 23,
    //   held 24; tile 1 in flight 18 .. 23: E_2 = 24. Rows 30, 31: X_2 =
    //   31; writes 31..34 = W_2; e = 34.
    // C = A[., 5] x B[5][.] (the definition over the used step only).
    let p = grid_params(2, 2, 2, 16);
    let mut m = vec![0u8; 256];
    for i in 0..2 {
        for k in 0..8 {
            m[8 * i + k] = (i * 8 + k + 1) as u8;
        }
    }
    for k in 0..8 {
        for n in 0..6 {
            m[20 + 8 * k + n] = (-((k * 6 + n + 1) as i8)) as u8;
        }
    }
    m[16..20].copy_from_slice(&0xFFFF_FFDFu32.to_le_bytes());
    let op = mma::Op { skip: true, ..mop(0, 84, 0, 20, 2, 6, 8) };
    assert_eq!(mma::check(16, 256, &op), Ok(()));
    assert_eq!(spec_used(&m, &op), [5]);
    let want = mma_reference(&m, &op);
    let out = mma_checked(&p, &op, 0, &mut m, &mut Banks::new(2));
    assert_eq!(out.m, 2);
    assert_eq!(
        out.tiles,
        [
            mma::TileTimes { f: 6, s: 8, e: 10, cyc: 9, x: 17, w: 20 },
            mma::TileTimes { f: 7, s: 12, e: 17, cyc: 9, x: 24, w: 27 },
            mma::TileTimes { f: 12, s: 22, e: 24, cyc: 9, x: 31, w: 34 },
        ]
    );
    assert_eq!(out.done, 34);
    assert_eq!(mma_reads(&out), [(1, RD3, 16), (3, RD2, 4), (4, RD3, 60), (5, RD2, 12), (6, RD3, 60), (11, RD3, 64)]);
    // C from the definition, computed here directly: k-step 5 only.
    let c: Vec<i32> = (0..12).map(|x: i32| (x / 6 * 8 + 5 + 1) * -(5 * 6 + x % 6 + 1)).collect();
    assert_eq!(want, le(&c));
    assert_eq!(&m[84..132], &le(&c)[..]);
}

#[test]
fn mma_skip_multi_tile_small_u_values_against_the_definition() {
    // Skipped multi-tile mmas with few used steps (u = 0, 1, 2, 5), tiles
    // overlapping in the grid, every C0 mode: C is the definition's sum
    // over the used steps (mma_checked: the spec's orders and times).
    let p = grid_params(2, 2, 2, 64);
    for (map, u) in [(0xFFFF_FFFFu32, 0usize), (!(1u32 << 9), 1), (!(1u32 << 3 | 1 << 30), 2), (!0b1011_0001_0000u32, 4), (!0x8000_0107u32, 5)] {
        for c0 in [C0::Zero, C0::Acc, C0::Bias(0)] {
            // TM = 5, TN = 5 (nine tiles), K = 32: A at 16 (PA = 32), the map at
            // 176, B at 180 (PB = 8), C at 440.
            let op = mma::Op { c0, skip: true, ..mop(0, 440, 16, 180, 5, 5, 32) };
            assert_eq!(mma::check(64, 1024, &op), Ok(()));
            let mut m = noise(1024, 11 + u as u64);
            m[176..180].copy_from_slice(&map.to_le_bytes());
            assert_eq!(spec_used(&m, &op).len(), u);
            let want = mma_reference(&m, &op);
            let out = mma_checked(&p, &op, 3, &mut m, &mut Banks::new(2));
            assert_eq!(out.tiles.len(), 9);
            assert_eq!(&m[440..540], &want[..], "u {u} {c0:?}");
        }
    }
}
