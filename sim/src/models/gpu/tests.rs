//! Hand-built rings (PM4 text through `gpurtl asm`'s assembler) and kernels
//! (the `cu` assembler) at the default parameters, checked against values
//! worked out in the comments or by plain loops over the spec's
//! definitions (block ids, user data, fences), not by the model's helpers.
//!
//! Default parameters: two queues; the `cu` has 2 slots, 64 registers and
//! 16 KiB of scratchpad, so a queue's `cmdproc` has `max_threads` 512,
//! `max_regs` 32, `max_smem` 8192. The kernels below use `T = 4` threads,
//! `VGPRS = 0` (R = 16 registers) and `LDS_SIZE = 1` (M = 512 bytes).

use super::*;
use crate::models::cmdproc::pm4;
use crate::models::cu::isa;
use crate::models::InputErrors;
use std::path::Path;
use serde_json::json;

const RING0: u32 = 0x1000;
const RING1: u32 = 0x2000;
const FENCE: u32 = 0x3000;
/// Programs: `PGM_LO` 0x100 and 0x200.
const PROG: u32 = 0x1_0000;
const PROG2: u32 = 0x2_0000;
const A: u32 = 0x4_0000;
const B: u32 = 0x4_1000;
const DST: u32 = 0x4_2000;
const DST2: u32 = 0x4_3000;
const TABLE: u32 = 0x5_0000;
/// What untouched test memory holds.
const SENTINEL: u32 = 0xDEAD_BEEF;

/// `out[linear] = table[a[linear] + b[linear]]`, `linear = (z·Y + y)·X + x`.
/// User data `[a, b, out, table, X, Y]`; 20 instructions, no branch.
const ADD_KERNEL: &str = "
    cdl r3, 6, ud[0]        # r3 a, r4 b, r5 out, r6 table, r7 X, r8 Y
    mul r9, r2, r8
    add r9, r9, r1
    mul r9, r9, r7
    add r9, r9, r0          # linear
    shli r9, r9, 2
    add r10, r3, r9
    cdl r11, 1, [r10]       # a[linear]
    add r10, r4, r9
    cdl r12, 1, [r10]       # b[linear]
    add r11, r11, r12
    shli r11, r11, 2
    add r11, r11, r6        # &table[sum]
    li r12, 0
    li r13, 0x10004         # one row of 4 bytes
    li r14, 0
    ld r12, r11, r14, r13
    add r10, r5, r9
    st r12, r10, r14, r13
    end
";
const ADD_KERNEL_INSNS: u64 = 20;

/// `out[linear] = table[x + 16y + 256z]` (= `x + 16y + 256z` with the
/// identity table). User data `[out, table, X, Y]`.
const ID_KERNEL: &str = "
    cdl r3, 4, ud[0]        # r3 out, r4 table, r5 X, r6 Y
    mul r9, r2, r6
    add r9, r9, r1
    mul r9, r9, r5
    add r9, r9, r0
    shli r9, r9, 2          # 4 * linear
    shli r10, r1, 4
    shli r11, r2, 8
    add r10, r10, r11
    add r10, r10, r0        # x + 16y + 256z
    shli r10, r10, 2
    add r10, r10, r4
    li r12, 0
    li r13, 0x10004
    li r14, 0
    ld r12, r10, r14, r13
    add r9, r9, r3
    st r12, r9, r14, r13
    end
";

/// Block `x` copies dword `x` of `ud[0]` to dword `x` of `ud[1]`.
const COPY_KERNEL: &str = "
    cdl r3, 2, ud[0]
    shli r5, r0, 2
    add r3, r3, r5
    add r4, r4, r5
    li r6, 0
    li r7, 0x10004
    ld r6, r3, r6, r7
    st r6, r4, r6, r7
    end
";

/// Copies the bytes `ud[7]` says (rows << 16 | n) from `ud[0]` to `ud[15]`.
const UD_KERNEL: &str = "
    cdl r3, 1, ud[0]
    cdl r4, 1, ud[60]
    cdl r5, 1, ud[28]
    li r6, 0
    ld r6, r3, r6, r5
    st r6, r4, r6, r5
    end
";

/// Blocks with an odd `x` meet an undefined opcode (status 1, `opcode`);
/// block `x = 2` an `ld` past its 512-byte share (status 6, `smem`);
/// the others end `ok`.
const FAIL_KERNEL: &str = "
    andi r3, r0, 1
    bnz r3, odd
    seqi r3, r0, 2
    bnz r3, two
    end
odd:
    .word 0x00000000000000ff
two:
    li r4, 1000
    li r5, 0x10004
    li r6, 0
    ld r4, r6, r6, r5
    end
";

fn params() -> GpuParams {
    GpuParams::default()
}

fn pm4(text: &str) -> Vec<u32> {
    pm4::assemble(text).unwrap_or_else(|e| panic!("{}", pm4::errors_text(&e)))
}

fn kernel(text: &str) -> Vec<u8> {
    let w = isa::assemble(text).unwrap_or_else(|e| panic!("{}", isa::errors_text(&e)));
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn put(m: &mut Memory, addr: u32, dwords: &[u32]) {
    let b: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
    m.load(addr as u64, &b);
}

fn get(m: &Memory, addr: u32, n: usize) -> Vec<u32> {
    m.read_words(addr as u64, 4 * n)
}

/// The `SET_SH_REG` lines of a kernel: program at `pgm_lo * 256`, `T = 4`,
/// `R = 16`, `M = 512`, user data `ud`.
fn kernel_regs(pgm_lo: u32, ud: &[u32]) -> String {
    let ud: Vec<String> = ud.iter().map(|v| v.to_string()).collect();
    format!(
        "SET_SH_REG reg=COMPUTE_PGM_LO values={pgm_lo},0\n\
         SET_SH_REG reg=COMPUTE_PGM_RSRC1 values=0,0x8000\n\
         SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=4,1,1\n\
         SET_SH_REG reg=COMPUTE_USER_DATA_0 values={}\n",
        ud.join(",")
    )
}

/// Memory with sentinels over the data pages, `prog` at PROG, and the
/// rings.
fn memory(prog: &str, rings: &[(u32, &str)]) -> Memory {
    let mut m = Memory::new();
    for page in [FENCE, A, B, DST, DST2] {
        put(&mut m, page, &[SENTINEL; 1024]);
    }
    m.load(PROG as u64, &kernel(prog));
    for (base, text) in rings {
        put(&mut m, *base, &pm4(text));
    }
    m
}

fn run_with(m: Memory, rings: &[(u32, &str)]) -> Outcome {
    let queues = rings
        .iter()
        .map(|(base, text)| QueueInput { cmd_base: *base, cmd_size: 4 * pm4(text).len() as u32, priority: 0 })
        .collect();
    let r = Run { queues, memory: m, dump: vec![], mem: MemTiming::default() };
    run(&params(), &r).unwrap_or_else(|e| panic!("{e}"))
}

/// One queue at RING0 running `ring` with `prog` at PROG.
fn one(prog: &str, ring: &str, extra: impl FnOnce(&mut Memory)) -> Outcome {
    let mut m = memory(prog, &[(RING0, ring)]);
    extra(&mut m);
    run_with(m, &[(RING0, ring)])
}

#[test]
fn a_kernel_adds_vectors_of_a_4x2x3_grid() {
    let ring = format!("{}DISPATCH_DIRECT x=4 y=2 z=3 initiator=1\n", kernel_regs(0x100, &[A, B, DST, TABLE, 4, 2]));
    let o = one(ADD_KERNEL, &ring, |m| {
        put(m, A, &(0..24).collect::<Vec<u32>>());
        put(m, B, &(0..24).map(|i| 10 * i).collect::<Vec<u32>>());
        put(m, TABLE, &(0..1024).collect::<Vec<u32>>());
    });
    // out[i] = i + 10 i for the 24 blocks; the dword after is untouched.
    let want: Vec<u32> = (0..24).map(|i| 11 * i).collect();
    assert_eq!(get(&o.memory, DST, 24), want);
    assert_eq!(get(&o.memory, DST + 96, 1), vec![SENTINEL]);
    // Four SET_SH_REGs at 0x1000 (4, 4, 5 and 8 dwords: header, p0,
    // values), the dispatch at 0x1000 + 4·(4 + 4 + 5 + 8) = 0x1054.
    assert_eq!(o.kernels, vec![KernelRecord { queue: 0, addr: 0x1054, blocks: 24, submit: None, start: None, end: None }]);
    assert_eq!(
        o.counters,
        Counters { commands: 5, kernels: 1, blocks: 24, failed_blocks: 0, fences: 0, instructions: 24 * ADD_KERNEL_INSNS }
    );
    assert_eq!(
        o.status,
        vec![QueueStatus { queue: 0, done: true, error: None, fences: 0, kernels: 1, kerr_mask: 0, kerr_addr: 0, kerr_blocks: 0 }]
    );
    assert_eq!(o.trace.len(), 1);
    let (q, lines) = &o.trace[0];
    assert_eq!((*q, lines.len()), (0, 5));
    assert!(lines[0].starts_with("#0 @0x00001000 SET_SH_REG reg=COMPUTE_PGM_LO"), "{}", lines[0]);
    assert!(lines[4].starts_with("#4 @0x00001054 DISPATCH_DIRECT x=4 y=2 z=3"), "{}", lines[4]);
    // The queue's cmdproc ended done (IRQ_ENABLE = 2: error only), no
    // fence, no failed block: the line is low.
    assert!(!o.irq);
    assert_eq!(o.cycles, None);
}

#[test]
fn every_block_gets_its_own_id() {
    let (x, y, z) = (3u32, 2u32, 2u32);
    let ring = format!("{}DISPATCH_DIRECT x={x} y={y} z={z} initiator=1\n", kernel_regs(0x100, &[DST, TABLE, x, y]));
    let o = one(ID_KERNEL, &ring, |m| put(m, TABLE, &(0..1024).collect::<Vec<u32>>()));
    // Block b's id is (b mod x, (b div x) mod y, b div (x·y)); the kernel
    // writes x + 16y + 256z at (z·Y + y)·X + x: each grid point once.
    let mut want = Vec::new();
    for b in 0..x * y * z {
        let (bx, by, bz) = (b % x, b / x % y, b / (x * y));
        assert_eq!((bz * y + by) * x + bx, b);
        want.push(bx + 16 * by + 256 * bz);
    }
    assert_eq!(want, vec![0, 1, 2, 16, 17, 18, 256, 257, 258, 272, 273, 274]);
    assert_eq!(get(&o.memory, DST, 13), [want, vec![SENTINEL]].concat());
    assert_eq!(o.counters.blocks, 12);
}

#[test]
fn user_data_comes_from_set_sh_reg() {
    // ud[0] = source, ud[7] = one row of 12 bytes, ud[15] = destination.
    let mut ud = vec![0u32; 16];
    ud[0] = A;
    ud[7] = 0x1_000C;
    ud[15] = DST + 8;
    let ring = format!("{}DISPATCH_DIRECT x=1 y=1 z=1 initiator=1\n", kernel_regs(0x100, &ud));
    let o = one(UD_KERNEL, &ring, |m| put(m, A, &[5, 6, 7, 8]));
    assert_eq!(get(&o.memory, DST, 6), vec![SENTINEL, SENTINEL, 5, 6, 7, SENTINEL]);
}

#[test]
fn a_set_sh_reg_after_a_dispatch_does_not_change_its_kernel() {
    // Kernel 1: COPY_KERNEL at PROG, 2 blocks, A -> DST. Then new user data
    // and a new program (the same kernel at PROG2) for kernel 2: 1 block,
    // B -> DST2. Had kernel 1 seen the later registers, DST would be
    // untouched and DST2 would get two dwords.
    let ring = format!(
        "{}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         SET_SH_REG reg=COMPUTE_USER_DATA_0 values={B},{DST2}\n\
         SET_SH_REG reg=COMPUTE_PGM_LO values=0x200,0\n\
         DISPATCH_DIRECT x=1 y=1 z=1 initiator=1\n",
        kernel_regs(0x100, &[A, DST])
    );
    let o = one(COPY_KERNEL, &ring, |m| {
        m.load(PROG2 as u64, &kernel(COPY_KERNEL));
        put(m, A, &[1, 2, 3]);
        put(m, B, &[7, 8, 9]);
    });
    assert_eq!(get(&o.memory, DST, 3), vec![1, 2, SENTINEL]);
    assert_eq!(get(&o.memory, DST2, 2), vec![7, SENTINEL]);
    // Dispatch 1 at 0x1000 + 4·(4 + 4 + 5 + 4) = 0x1044 (5 dwords), then
    // 4 + 4 dwords of SET_SH_REG: dispatch 2 at 0x1044 + 4·13 = 0x1078.
    assert_eq!(o.kernels.iter().map(|k| (k.addr, k.blocks)).collect::<Vec<_>>(), vec![(0x1044, 2), (0x1078, 1)]);
    assert_eq!(o.counters.instructions, 3 * 9);
}

#[test]
fn release_mem_writes_by_data_sel_and_counts() {
    let ring = "\
        RELEASE_MEM event=0x514 data_sel=0 int_sel=0 addr=0x3000 data=5,6\n\
        RELEASE_MEM event=0x514 data_sel=1 int_sel=3 addr=0x3010 data=7,8\n\
        RELEASE_MEM event=0x514 data_sel=2 int_sel=0 addr=0x3020 data=9,10\n";
    let o = one("end", ring, |_| {});
    let s = SENTINEL;
    assert_eq!(get(&o.memory, FENCE, 12), vec![s, s, s, s, 7, s, s, s, 9, 10, s, s]);
    assert_eq!((o.counters.fences, o.counters.commands, o.counters.kernels), (3, 3, 0));
    assert_eq!(o.status[0].fences, 3);
    assert!(o.kernels.is_empty());
}

#[test]
fn write_data_before_and_after_a_kernel_in_order() {
    // WRITE_DATA fills A; the kernel copies A[0..2] to DST; the second
    // WRITE_DATA then rewrites A[0] and DST[1].
    let ring = format!(
        "WRITE_DATA control=0 addr={A} data=11,12,13\n\
         {}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         WRITE_DATA control=0 addr={A} data=21\n\
         WRITE_DATA control=0 addr={} data=22\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=1,0\n",
        kernel_regs(0x100, &[A, DST]),
        DST + 4
    );
    let o = one(COPY_KERNEL, &ring, |_| {});
    assert_eq!(get(&o.memory, A, 4), vec![21, 12, 13, SENTINEL]);
    assert_eq!(get(&o.memory, DST, 3), vec![11, 22, SENTINEL]);
    assert_eq!(get(&o.memory, FENCE, 1), vec![1]);
    assert_eq!((o.counters.commands, o.counters.fences, o.counters.kernels), (9, 1, 1));
}

#[test]
fn failing_blocks_set_the_kernel_error_registers() {
    // Changed with docs/gpu.md "Kernel errors stop their queue" (commit
    // 54ba527): this test used to expect both kernels to run (kernels 2,
    // KERR_BLOCKS 6, the fence written, the queue `done`). Now the first
    // kernel fails, so the queue ends at its dispatch: the second kernel and
    // the fence are dropped and the run ends in the error `kernel`.
    //
    // Two kernels of 4 blocks: x = 1, 3 fail with opcode (1), x = 2 with
    // smem (6), x = 0 is ok.
    let ring = format!(
        "{}DISPATCH_DIRECT x=4 y=1 z=1 initiator=1\n\
         DISPATCH_DIRECT x=4 y=1 z=1 initiator=1\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=3,0\n",
        kernel_regs(0x100, &[0])
    );
    // Dispatches at 0x1000 + 4·(4 + 4 + 5 + 3) = 0x1040 and 0x1040 + 20 =
    // 0x1054.
    let o = one(FAIL_KERNEL, &ring, |_| {});
    assert_eq!(
        o.status,
        vec![QueueStatus {
            queue: 0,
            done: false,
            error: Some(("kernel".into(), 0x1040)),
            fences: 0,
            kernels: 1,
            kerr_mask: (1 << 1) | (1 << 6),
            kerr_addr: 0x1040,
            kerr_blocks: 3
        }]
    );
    // The fence is not written.
    assert_eq!(get(&o.memory, FENCE, 1), vec![SENTINEL]);
    // Commands: the four SET_SH_REGs and the first dispatch.
    // Instructions: x = 0 runs andi, bnz, seqi, bnz, end (5); x = 1, 3 run
    // andi, bnz, .word (3); x = 2 runs andi, bnz, seqi, bnz, li, li, li, ld
    // (8).
    assert_eq!(
        o.counters,
        Counters { commands: 5, kernels: 1, blocks: 4, failed_blocks: 3, fences: 0, instructions: 5 + 3 + 8 + 3 }
    );
    assert_eq!(o.kernels.iter().map(|k| (k.queue, k.addr, k.blocks)).collect::<Vec<_>>(), vec![(0, 0x1040, 4)]);
    assert!(o.irq);
}

/// FAIL_KERNEL at PROG (`PGM_LO` 0x100) and COPY_KERNEL at PROG2 (0x200).
fn fail_and_copy(rings: &[(u32, &str)], extra: impl FnOnce(&mut Memory)) -> Outcome {
    let mut m = memory(FAIL_KERNEL, rings);
    m.load(PROG2 as u64, &kernel(COPY_KERNEL));
    extra(&mut m);
    run_with(m, rings)
}

#[test]
fn a_failing_kernel_stops_its_queue() {
    // A kernel of 4 FAIL_KERNEL blocks (3 fail), then a WRITE_DATA to DST,
    // a fence at FENCE and a second kernel (COPY_KERNEL, A -> DST2, one
    // block): none of the three happens. Without the new rule the cmdproc
    // model's run ends `done` with 10 commands.
    let ring = format!(
        "{}DISPATCH_DIRECT x=4 y=1 z=1 initiator=1\n\
         WRITE_DATA control=0 addr={DST} data=1,2\n\
         RELEASE_MEM event=0x514 data_sel=2 int_sel=2 addr=0x3000 data=3,4\n\
         SET_SH_REG reg=COMPUTE_PGM_LO values=0x200,0\n\
         SET_SH_REG reg=COMPUTE_USER_DATA_0 values={A},{DST2}\n\
         DISPATCH_DIRECT x=1 y=1 z=1 initiator=1\n",
        kernel_regs(0x100, &[0])
    );
    let o = fail_and_copy(&[(RING0, ring.as_str())], |m| put(m, A, &[77]));
    // The premise: the cmdproc model's own run (no kerr) reads it all.
    let q = QueueInput { cmd_base: RING0, cmd_size: 4 * pm4(&ring).len() as u32, priority: 0 };
    let cp = queue_run(&params().cmdproc(), &q, &memory(FAIL_KERNEL, &[(RING0, ring.as_str())]));
    assert_eq!((cp.status, cp.commands.len()), (cmdproc::Status::Done, 10));
    // Memory untouched at the dropped commands' addresses.
    assert_eq!(get(&o.memory, DST, 2), vec![SENTINEL, SENTINEL]);
    assert_eq!(get(&o.memory, FENCE, 2), vec![SENTINEL, SENTINEL]);
    assert_eq!(get(&o.memory, DST2, 1), vec![SENTINEL]);
    // SET_SH_REGs of 4, 4, 5 and 3 dwords: the dispatch at 0x1040.
    let s = &o.status[0];
    assert_eq!((s.done, s.error.clone()), (false, Some(("kernel".to_string(), 0x1040))));
    assert_eq!((s.fences, s.kernels, s.kerr_mask, s.kerr_addr, s.kerr_blocks), (0, 1, 0x42, 0x1040, 3));
    assert_eq!(
        o.counters,
        Counters { commands: 5, kernels: 1, blocks: 4, failed_blocks: 3, fences: 0, instructions: 19 }
    );
    assert_eq!(o.kernels, vec![KernelRecord { queue: 0, addr: 0x1040, blocks: 4, submit: None, start: None, end: None }]);
    // The trace ends with the dispatch's line.
    let lines = &o.trace[0].1;
    assert_eq!(lines.len(), 5);
    assert!(lines[4].starts_with("#4 @0x00001040 DISPATCH_DIRECT x=4 y=1 z=1"), "{}", lines[4]);
    assert!(o.irq);
    // The output file.
    let r = Run { queues: vec![], memory: Memory::new(), dump: vec![], mem: MemTiming::default() };
    let v = output_json(&params(), &r, &o);
    assert_eq!(v["error"], json!({"queue": 0, "cause": "kernel", "addr": 0x1040}));
    assert_eq!(
        v["status"],
        json!([{"queue": 0, "status": "error", "error": {"cause": "kernel", "addr": 0x1040}, "fences": 0, "kernels": 1,
                "kerr_mask": 0x42, "kerr_addr": 0x1040, "kerr_blocks": 3}])
    );
    assert_eq!(v["counters"]["commands"], json!(5));
}

#[test]
fn a_failing_kernel_hides_a_later_packet_error() {
    // A kernel of 2 blocks (x = 1 fails with opcode), then a SET_SH_REG of
    // COMPUTE_DISPATCH_INITIATOR (0xB800): `sh_range` in the cmdproc model's
    // run, at 0x1040 + 20 = 0x1054. The queue ends at the dispatch first:
    // its error is `kernel` at 0x1040, not `sh_range`.
    let ring = format!(
        "{}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         SET_SH_REG reg=0xB800 values=1\n",
        kernel_regs(0x100, &[0])
    );
    let o = one(FAIL_KERNEL, &ring, |_| {});
    // The premise: the cmdproc model's own run (no kerr) ends in sh_range.
    let q = QueueInput { cmd_base: RING0, cmd_size: 4 * pm4(&ring).len() as u32, priority: 0 };
    let cp = queue_run(&params().cmdproc(), &q, &memory(FAIL_KERNEL, &[(RING0, ring.as_str())]));
    assert_eq!((cp.error, cp.commands.len()), (Some((Cause::ShRange, 0x1054)), 5));
    assert_eq!(
        o.status,
        vec![QueueStatus {
            queue: 0,
            done: false,
            error: Some(("kernel".into(), 0x1040)),
            fences: 0,
            kernels: 1,
            kerr_mask: 1 << 1,
            kerr_addr: 0x1040,
            kerr_blocks: 1
        }]
    );
    // x = 0: 5 instructions, x = 1: 3.
    assert_eq!(o.counters, Counters { commands: 5, kernels: 1, blocks: 2, failed_blocks: 1, fences: 0, instructions: 8 });
    assert_eq!(o.trace[0].1.len(), 5);
    assert!(o.irq);
    let r = Run { queues: vec![], memory: Memory::new(), dump: vec![], mem: MemTiming::default() };
    assert_eq!(output_json(&params(), &r, &o)["error"], json!({"queue": 0, "cause": "kernel", "addr": 0x1040}));
}

#[test]
fn a_failing_kernel_stops_only_its_own_queue() {
    // Queue 0: FAIL_KERNEL with 2 blocks (x = 1 fails), then a fence at
    // FENCE (dropped). Queue 1: a WRITE_DATA to B, COPY_KERNEL B -> DST2
    // with 2 blocks, a fence at FENCE + 16 and a WRITE_DATA to DST: all run.
    let ring0 = format!(
        "{}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=0 addr=0x3000 data=5,0\n",
        kernel_regs(0x100, &[0])
    );
    let ring1 = format!(
        "WRITE_DATA control=0 addr={B} data=41,42\n\
         {}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=0 addr=0x3010 data=6,0\n\
         WRITE_DATA control=0 addr={DST} data=9\n",
        kernel_regs(0x200, &[B, DST2])
    );
    let rings = [(RING0, ring0.as_str()), (RING1, ring1.as_str())];
    let o = fail_and_copy(&rings, |_| {});
    let s = SENTINEL;
    assert_eq!(get(&o.memory, FENCE, 5), vec![s, s, s, s, 6]);
    assert_eq!(get(&o.memory, DST2, 3), vec![41, 42, s]);
    assert_eq!(get(&o.memory, DST, 2), vec![9, s]);
    // Queue 0's dispatch at 0x1040 (as above); queue 1's at 0x2000 + 4·(6
    // + 4 + 4 + 5 + 4) = 0x205C.
    assert_eq!(o.kernels.iter().map(|k| (k.queue, k.addr, k.blocks)).collect::<Vec<_>>(), vec![(0, 0x1040, 2), (1, 0x205C, 2)]);
    assert_eq!(
        o.status,
        vec![
            QueueStatus {
                queue: 0,
                done: false,
                error: Some(("kernel".into(), 0x1040)),
                fences: 0,
                kernels: 1,
                kerr_mask: 1 << 1,
                kerr_addr: 0x1040,
                kerr_blocks: 1
            },
            QueueStatus { queue: 1, done: true, error: None, fences: 1, kernels: 1, kerr_mask: 0, kerr_addr: 0, kerr_blocks: 0 },
        ]
    );
    // Commands: queue 0 four SET_SH_REGs and the dispatch (5); queue 1 all
    // 8. Instructions: 5 + 3 for queue 0's blocks, 2·9 for queue 1's.
    assert_eq!(
        o.counters,
        Counters { commands: 5 + 8, kernels: 2, blocks: 4, failed_blocks: 1, fences: 1, instructions: 8 + 18 }
    );
    assert_eq!(o.trace.iter().map(|(q, l)| (*q, l.len())).collect::<Vec<_>>(), vec![(0, 5), (1, 8)]);
    assert!(o.irq);
    let r = Run { queues: vec![], memory: Memory::new(), dump: vec![], mem: MemTiming::default() };
    assert_eq!(output_json(&params(), &r, &o)["error"], json!({"queue": 0, "cause": "kernel", "addr": 0x1040}));
}

#[test]
fn a_draw_is_a_graphics_error() {
    let ring = "\
        WRITE_DATA control=0 addr=0x42000 data=1\n\
        DRAW_INDEX_AUTO count=3 initiator=0x00000002\n\
        WRITE_DATA control=0 addr=0x42004 data=2\n";
    let o = one("end", ring, |_| {});
    // The draw is at 0x1000 + 4·5 = 0x1014; nothing after it exists.
    assert_eq!(
        o.status,
        vec![QueueStatus {
            queue: 0,
            done: false,
            error: Some(("graphics".into(), 0x1014)),
            fences: 0,
            kernels: 0,
            kerr_mask: 0,
            kerr_addr: 0,
            kerr_blocks: 0
        }]
    );
    assert_eq!(get(&o.memory, DST, 2), vec![1, SENTINEL]);
    assert_eq!(o.counters.commands, 1);
    assert_eq!(o.trace[0].1.len(), 1);
    assert!(o.irq);
    let r = Run { queues: vec![], memory: Memory::new(), dump: vec![], mem: MemTiming::default() };
    let v = output_json(&params(), &r, &o);
    assert_eq!(v["error"], json!({"queue": 0, "cause": "graphics", "addr": 0x1014}));
    assert_eq!(v["status"][0]["status"], "error");
}

#[test]
fn two_queues_play_in_queue_order() {
    // Queue 0: a kernel A -> DST and a fence. Queue 1: a WRITE_DATA, a
    // kernel B -> DST2, then a type-0 dword (the `type` error).
    let ring0 = format!(
        "{}DISPATCH_DIRECT x=3 y=1 z=1 initiator=1\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=100,0\n",
        kernel_regs(0x100, &[A, DST])
    );
    let ring1 = format!(
        "WRITE_DATA control=0 addr={B} data=31,32\n\
         {}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         DWORD value=0\n",
        kernel_regs(0x100, &[B, DST2])
    );
    let rings = [(RING0, ring0.as_str()), (RING1, ring1.as_str())];
    let mut m = memory(COPY_KERNEL, &rings);
    put(&mut m, A, &[1, 2, 3]);
    let o = run_with(m, &rings);
    assert_eq!(get(&o.memory, DST, 4), vec![1, 2, 3, SENTINEL]);
    assert_eq!(get(&o.memory, DST2, 3), vec![31, 32, SENTINEL]);
    assert_eq!(get(&o.memory, FENCE, 1), vec![100]);
    // Queue 0's dispatch at 0x1000 + 4·(4 + 4 + 5 + 4) = 0x1044; queue 1's
    // at 0x2000 + 4·(6 + 4 + 4 + 5 + 4) = 0x205C, its bad dword after it at
    // 0x2070.
    assert_eq!(o.kernels.iter().map(|k| (k.queue, k.addr, k.blocks)).collect::<Vec<_>>(), vec![(0, 0x1044, 3), (1, 0x205C, 2)]);
    assert_eq!(o.status[0].error, None);
    assert_eq!(o.status[1].error, Some(("type".into(), 0x2070)));
    assert_eq!((o.status[0].fences, o.status[1].fences, o.status[1].kernels), (1, 0, 1));
    assert_eq!(o.counters, Counters { commands: 6 + 6, kernels: 2, blocks: 5, failed_blocks: 0, fences: 1, instructions: 5 * 9 });
    assert_eq!(o.trace.iter().map(|(q, l)| (*q, l.len())).collect::<Vec<_>>(), vec![(0, 6), (1, 6)]);
    assert!(o.trace[1].1[0].starts_with("#0 @0x00002000 WRITE_DATA"));
}

#[test]
fn an_indirect_buffer_in_another_page_is_read() {
    // The main ring calls a buffer at 0x80000 holding the user data and the
    // dispatch; the fence after it is back in the main ring.
    let ib = format!("SET_SH_REG reg=COMPUTE_USER_DATA_0 values={A},{DST}\nDISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n");
    let ib_dwords = pm4(&ib).len();
    let ring = format!(
        "SET_SH_REG reg=COMPUTE_PGM_LO values=0x100,0\n\
         SET_SH_REG reg=COMPUTE_PGM_RSRC1 values=0,0x8000\n\
         SET_SH_REG reg=COMPUTE_NUM_THREAD_X values=4,1,1\n\
         INDIRECT_BUFFER addr=0x80000 size={ib_dwords}\n\
         RELEASE_MEM event=0x514 data_sel=1 int_sel=2 addr=0x3000 data=9,0\n"
    );
    let o = one(COPY_KERNEL, &ring, |m| {
        put(m, 0x8_0000, &pm4(&ib));
        put(m, A, &[4, 5]);
    });
    assert!(o.status[0].done);
    assert_eq!(get(&o.memory, DST, 3), vec![4, 5, SENTINEL]);
    assert_eq!(get(&o.memory, FENCE, 1), vec![9]);
    assert_eq!(o.kernels.iter().map(|k| k.addr).collect::<Vec<_>>(), vec![0x8_0000 + 4 * 4]);
    assert_eq!(o.counters.commands, 7);
}

/// Every violation's field.
fn fields(e: &InputErrors) -> Vec<String> {
    e.0.iter().map(|x| x.field.clone()).collect()
}

#[test]
fn parse_input_reports_every_violation_by_field() {
    let p = params();
    let dir = Path::new(".");
    let v = json!({
        "queues": [{"cmd_base": 4096, "cmd_size": 6, "priority": 4, "x": 1}, {"cmd_size": 8}],
        "memory": [{"addr": 0, "dwords": [1], "bytes": [2]}],
        "dump": [{"addr": 0}],
        "mem": {"latency": 0, "stall": 2, "seed": -1, "foo": 1},
        "bar": 1
    });
    let e = parse_input(&v, dir, &p).unwrap_err();
    let f = fields(&e);
    for want in [
        "bar",
        "queues[0].x",
        "queues[0].cmd_size",
        "queues[0].priority",
        "queues[1].cmd_base",
        "memory[0].bytes",
        "dump[0].bytes",
        "mem.foo",
        "mem.latency",
        "mem.stall",
        "mem.seed",
    ] {
        assert!(f.iter().any(|x| x == want), "no violation of {want} in {f:?}");
    }
    assert_eq!(e.count(), 11, "{e}");
    let text = e.to_string();
    assert!(text.contains("input `queues[0].cmd_size` = 6: must be a multiple of 4 from 0 to 4294967292"), "{text}");
    assert!(text.contains("input `queues[0].priority` = 4: must be an integer from 0 to 3"), "{text}");
    assert!(text.contains("input `queues[1].cmd_base` = (missing)"), "{text}");
    assert!(text.contains("input `mem.latency` = 0: must be an integer from 1 to 1000"), "{text}");

    // Too many queues for the parameter; required keys missing.
    let q = json!({"cmd_base": 0, "cmd_size": 0});
    let e = parse_input(&json!({"queues": [q, q, q]}), dir, &p).unwrap_err();
    assert_eq!(fields(&e), vec!["queues", "memory", "dump"]);
    assert!(e.to_string().contains("a list of 3 entries: must be a list of 1 to 2 queue entries"), "{e}");
    let e = parse_input(&json!({"queues": [], "memory": [], "dump": []}), dir, &p).unwrap_err();
    assert_eq!(fields(&e), vec!["queues"]);
    let e = parse_input(&json!([1]), dir, &p).unwrap_err();
    assert_eq!(fields(&e), vec!["(file)"]);

    // A good file: defaults for priority and mem.
    let r = parse_input(&json!({"queues": [q], "memory": [{"addr": 8, "dwords": [7]}], "dump": []}), dir, &p).unwrap();
    assert_eq!(r.queues, vec![QueueInput { cmd_base: 0, cmd_size: 0, priority: 0 }]);
    assert_eq!(r.mem, MemTiming { latency: 10, stall: 0.0, seed: 1 });
    assert_eq!(get(&r.memory, 8, 1), vec![7]);
}

#[test]
fn a_run_file_with_asm_entries_and_the_output_shape() {
    let dir = tempfile::tempdir().unwrap();
    let ring = format!(
        "{}DISPATCH_DIRECT x=2 y=1 z=1 initiator=1\n\
         DISPATCH_DIRECT x=0 y=1 z=1 initiator=1\n\
         RELEASE_MEM event=0x514 data_sel=2 int_sel=2 addr=0x3000 data=1,2\n",
        kernel_regs(0x100, &[A, DST])
    );
    std::fs::write(dir.path().join("q0.pm4"), &ring).unwrap();
    std::fs::write(dir.path().join("k.s"), COPY_KERNEL).unwrap();
    let cmd_size = 4 * pm4(&ring).len();
    let v = json!({
        "queues": [{"cmd_base": RING0, "cmd_size": cmd_size, "priority": 2}],
        "memory": [{"addr": RING0, "asm": "q0.pm4", "isa": "pm4"},
                   {"addr": PROG, "asm": "k.s", "isa": "cu"},
                   {"addr": A, "dwords": [0x0403_0201, 0x0807_0605]}],
        "dump": [{"addr": DST, "bytes": 8}, {"addr": FENCE, "bytes": 8}],
        "mem": {"latency": 3, "stall": 0.25, "seed": 9}
    });
    let p = params();
    let r = parse_input(&v, dir.path(), &p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get(&r.memory, RING0, cmd_size / 4), pm4(&ring));
    assert_eq!(r.memory.bytes(PROG as u64, 16), kernel(COPY_KERNEL)[..16].to_vec());
    assert_eq!(r.mem, MemTiming { latency: 3, stall: 0.25, seed: 9 });
    assert_eq!(r.queues[0].priority, 2);
    let o = run(&p, &r).unwrap();
    let out = output_json(&p, &r, &o);
    let keys: Vec<&str> = out.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    let mut want = vec!["dumps", "kernels", "trace", "status", "error", "irq", "counters", "cycles"];
    want.sort();
    let mut got = keys.clone();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(
        out["dumps"],
        json!([{"addr": DST, "data": "0102030405060708"}, {"addr": FENCE, "data": "0100000002000000"}])
    );
    // The dispatch with x·y·z = 0 is a command but no kernel.
    assert_eq!(out["kernels"], json!([{"queue": 0, "addr": 0x1044, "blocks": 2, "submit": null, "start": null, "end": null}]));
    assert_eq!(out["trace"][0]["queue"], 0);
    assert_eq!(out["trace"][0]["lines"].as_array().unwrap().len(), 7);
    assert_eq!(
        out["status"],
        json!([{"queue": 0, "status": "done", "error": null, "fences": 1, "kernels": 1,
                "kerr_mask": 0, "kerr_addr": 0, "kerr_blocks": 0}])
    );
    assert_eq!(out["error"], json!(null));
    assert_eq!(out["irq"], json!(true));
    assert_eq!(
        out["counters"],
        json!({"commands": 7, "kernels": 1, "blocks": 2, "failed_blocks": 0, "fences": 1, "instructions": 18})
    );
    assert_eq!(out["cycles"], json!(null));
}
