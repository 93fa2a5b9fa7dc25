//! Hand-worked cases of the golden model, the input errors, and random
//! workloads held to the reference.
//!
//! Cycle counts are worked out from docs/arbiter.md "Timing" in the comment
//! next to each assertion. Shorthand: a read granted at `g` is in `q` in
//! `g+1`, taken by the bridge at `g+1` (when `AR` is free and `P2` empty),
//! on `AR` in `g+2` and taken there (`ARREADY` = 1); its beats come from
//! `max(t_AR + L, e + 1)`, one a cycle, each appended to the source's queue
//! at that edge and taken by the source one edge later. A write beat granted
//! at `g` is taken by the bridge at `g+1` and on `W` (with `AW` on a piece's
//! first beat) at `g+2`; `B` at `max(t_AW, t_WLAST) + L` (after the previous
//! `B`), `done` at that edge, the source's response one edge later.

use super::reference::results;
use super::timing::{simulate, Trace};
use super::*;
use crate::rng::Rng;
use gpurtl_params::arbiter::Out;
use gpurtl_params::BlockParams;
use serde_json::{json, Value};

/// 2 read and 2 write sources, 16-bit addresses, 32-bit beats (`DB` = 4),
/// bursts of up to 4, 8 beats of buffer, 2 bursts outstanding.
fn small(out: Out) -> ArbiterParams {
    ArbiterParams { reads: 2, writes: 2, addr_bits: 16, data_bits: 32, max_burst: 4, read_buffer: 8, write_outstanding: 2, out }
}

fn rd(addr: u64, beats: u32) -> ReadRequest {
    ReadRequest { addr, beats }
}

/// A burst of `beats` beats at `addr`: beat `j` is `0x0j0j0j0j + 0x10203040`
/// (j + 1 in every byte, plus the byte index), all strobes.
fn burst(addr: u64, beats: u32) -> WriteBurst {
    let data = (0..beats as u64).map(|j| BigUint::from((j + 1) * 0x0101_0101 + 0x1020_3040)).collect();
    WriteBurst { addr, data, strb: vec![BigUint::from(0xfu8); beats as usize] }
}

fn wl(reads: Vec<Vec<ReadRequest>>, writes: Vec<Vec<WriteBurst>>) -> Workload {
    Workload { latency: 4, memory: vec![], reads, writes }
}

/// The cycle simulation, its results held to the reference.
fn sim(p: &ArbiterParams, w: &Workload) -> (Outcome, Trace) {
    let (o, t) = simulate(p, w);
    let r = results(p, w);
    assert_eq!(o.reads, r.reads, "read beats");
    assert_eq!(o.writes, r.writes, "write responses");
    assert_eq!(o.memory, r.memory, "memory after");
    assert_eq!(o.counters, r.counters, "counters");
    assert_eq!(run(p, w), o);
    (o, t)
}

fn big(x: u64) -> BigUint {
    BigUint::from(x)
}

// ---- the spec's example ----

#[test]
fn spec_example() {
    let p = ArbiterParams::default();
    let input = json!({
      "latency": 4,
      "memory": [{"addr": 4096, "bytes": "000102030405060708090a0b0c0d0e0f"}],
      "reads": [[{"addr": 4096, "beats": 2}], []],
      "writes": [[{"addr": 8192, "data": ["0x1122334455667788"], "strb": ["0xff"]}]]
    });
    let w = parse_input(&input, &p).unwrap();
    let (o, t) = sim(&p, &w);
    assert_eq!(
        output_json(&p, &o),
        json!({"reads": [["0x0706050403020100", "0x0f0e0d0c0b0a0908"], []],
               "writes": [1],
               "memory": [{"addr": 8192, "bytes": "8877665544332211"}],
               "cycles": 9,
               "counters": {"read_requests": 1, "read_beats": 2, "write_bursts": 1, "write_beats": 1, "split_bursts": 0}})
    );
    // The spec's account: both granted at 0; AR taken at 2, beats at 6 and
    // 7, given to rd0 at 7 and 8; AW and the beat taken at 2, B at 6, wr0's
    // response at 7. cycles = 8 - 0 + 1.
    assert_eq!(t.rd_grant, vec![vec![0], vec![]]);
    assert_eq!(t.wr_grant, vec![vec![vec![0]]]);
    assert_eq!(t.ar, vec![(2, 4096, 1, 0)]);
    assert_eq!(t.r, vec![(6, 0), (7, 0)]);
    assert_eq!(t.rd_beat, vec![vec![7, 8], vec![]]);
    assert_eq!(t.aw, vec![(2, 8192, 0, 0)]);
    assert_eq!(t.w, vec![(2, true)]);
    assert_eq!(t.b, vec![(6, 0)]);
    assert_eq!(t.wr_rsp, vec![vec![7]]);
}

// ---- hand-worked timing ----

#[test]
fn two_reads_contend_round_robin() {
    // rd0 and rd1 each two one-beat requests, all offered from cycle 0.
    let p = small(Out::Axi4);
    let w = wl(vec![vec![rd(0, 1), rd(16, 1)], vec![rd(32, 1), rd(48, 1)]], vec![]);
    let (o, t) = sim(&p, &w);
    // p starts at rd1, so rd0 first (edge 0); then p = 0 prefers rd1 (1),
    // then rd0 (2), rd1 (3): alternating, although rd0's second request is
    // offered from cycle 1.
    assert_eq!(t.rd_grant, vec![vec![0, 2], vec![1, 3]]);
    // Each on AR two edges after its grant; beats at t + 4 = 6, 7, 8, 9;
    // at the sources one edge later.
    assert_eq!(t.ar.iter().map(|a| (a.0, a.3)).collect::<Vec<_>>(), vec![(2, 0), (3, 1), (4, 0), (5, 1)]);
    assert_eq!(t.rd_beat, vec![vec![7, 9], vec![8, 10]]);
    // cycles = 10 - 0 + 1.
    assert_eq!(o.cycles, 11);
}

#[test]
fn read_split_at_4k() {
    // rd0: 2 beats at 4092 (one beat to the boundary), then 1 beat at 0.
    let p = small(Out::Axi4);
    let mut w = wl(vec![vec![rd(4092, 2), rd(0, 1)], vec![]], vec![]);
    w.memory = vec![Region { addr: 4092, bytes: vec![1, 2, 3, 4, 5, 6, 7, 8] }, Region { addr: 0, bytes: vec![9, 9, 9, 9] }];
    let (o, t) = sim(&p, &w);
    // Granted at 0 and 1 (in cycle 1 the bridge is empty, so `q` loads).
    assert_eq!(t.rd_grant[0], vec![0, 1]);
    // The bridge takes the first at 1: AR = 4092 len 0, P2 = 4096 len 0.
    // Cycle 2: P2 full, mem_rd_req_ready low: the second request is held
    // in q (not taken at 2); at 2 AR is taken and AR = P2. Cycle 3: P2
    // empty, the bridge takes it.
    assert_eq!(t.rd_out, vec![(1, 4092, 1, 0), (3, 0, 0, 0)]);
    assert_eq!(t.ar, vec![(2, 4092, 0, 0), (3, 4096, 0, 0), (4, 0, 0, 0)]);
    // R: 2 + 4 = 6; max(3 + 4, 6 + 1) = 7; max(4 + 4, 7 + 1) = 8; at rd0
    // at 7, 8, 9: cycles = 9 - 0 + 1.
    assert_eq!(t.r, vec![(6, 0), (7, 0), (8, 0)]);
    assert_eq!(t.rd_beat[0], vec![7, 8, 9]);
    assert_eq!(o.cycles, 10);
    assert_eq!(o.counters.split_bursts, 1);
    assert_eq!(o.reads[0], vec![big(0x0403_0201), big(0x0807_0605), big(0x0909_0909)]);
}

#[test]
fn read_buffer_cap() {
    // read_buffer = max_burst = 4: a 4-beat request takes every credit.
    let p = ArbiterParams { read_buffer: 4, ..small(Out::Axi4) };
    let w = wl(vec![vec![rd(0, 4), rd(16, 1)], vec![]], vec![]);
    let (o, t) = sim(&p, &w);
    // First granted at 0 (cred 4 -> 0); AR at 2; beats at 6..9, taken by rd0
    // at 7..10, each giving a credit back. The second (1 beat) is eligible
    // once cred = 1: in cycle 8, granted at 8; AR at 10; its beat at
    // max(10 + 4, 9 + 1) = 14, at rd0 at 15. cycles = 15 - 0 + 1.
    assert_eq!(t.rd_grant[0], vec![0, 8]);
    assert_eq!(t.rd_beat[0], vec![7, 8, 9, 10, 15]);
    assert_eq!(o.cycles, 16);
    assert_eq!(t.rd_capped, 7); // cycles 1..=7
    // With 8 beats of buffer: granted at 1, AR at 3, beat at max(7, 9 + 1)
    // = 10, at rd0 at 11: cycles 12.
    let (o, t) = sim(&small(Out::Axi4), &w);
    assert_eq!(t.rd_grant[0], vec![0, 1]);
    assert_eq!(o.cycles, 12);
    assert_eq!(t.rd_capped, 0);
}

#[test]
fn write_burst_holds_the_write_side() {
    // wr0: 4 beats at 0; wr1: 1 beat at 64, offered from cycle 0 too.
    let p = small(Out::Axi4);
    let w = wl(vec![], vec![vec![burst(0, 4)], vec![burst(64, 1)]]);
    let (o, t) = sim(&p, &w);
    // wr0 first (pw starts at wr1), locked to its last beat at 3; wr1 is
    // granted at 4.
    assert_eq!(t.wr_grant, vec![vec![vec![0, 1, 2, 3]], vec![vec![4]]]);
    // W two edges after each grant: 2, 3, 4, 5 (WLAST at 5), wr1's at 6.
    assert_eq!(t.w, vec![(2, false), (3, false), (4, false), (5, true), (6, true)]);
    assert_eq!(t.aw, vec![(2, 0, 3, 0), (6, 64, 0, 1)]);
    // B: max(2, 5) + 4 = 9; max(6, 6) + 4 = 10. Responses at 10 and 11:
    // cycles = 11 - 0 + 1.
    assert_eq!(t.b, vec![(9, 0), (10, 1)]);
    assert_eq!(t.wr_rsp, vec![vec![10], vec![11]]);
    assert_eq!(o.cycles, 12);
    assert_eq!(o.writes, vec![1, 1]);
    assert_eq!(o.counters.write_beats, 5);
}

#[test]
fn write_split_at_4k() {
    // 4 beats at 4088: 2 to the boundary, 2 after.
    let p = small(Out::Axi4);
    let w = wl(vec![], vec![vec![burst(4088, 4)], vec![]]);
    let (o, t) = sim(&p, &w);
    // Beats granted at 0..3, taken by the bridge at 1..4: k = 0 (AW 4088
    // len 1, f = 1), k = 1 (WLAST: k = f), k = 2 = f + 1 (AW 4096 len 1), k =
    // 3 (WLAST: k = len). On AW/W one edge later.
    assert_eq!(t.aw, vec![(2, 4088, 1, 0), (4, 4096, 1, 0)]);
    assert_eq!(t.w, vec![(2, false), (3, true), (4, false), (5, true)]);
    // B: max(2, 3) + 4 = 7 (dropped), max(4, 5) + 4 = 9 (passed): one
    // response, at 10. cycles = 10 - 0 + 1.
    assert_eq!(t.b, vec![(7, 0), (9, 0)]);
    assert_eq!(t.wr_rsp, vec![vec![10], vec![]]);
    assert_eq!(o.writes, vec![1, 0]);
    assert_eq!(o.cycles, 11);
    assert_eq!(o.counters.split_bursts, 1);
}

#[test]
fn write_outstanding_cap() {
    let p = ArbiterParams { write_outstanding: 1, ..small(Out::Axi4) };
    let w = wl(vec![], vec![vec![burst(0, 1), burst(4, 1)], vec![]]);
    let (o, t) = sim(&p, &w);
    // First at 0: AW/W at 2, B at 6, response at 7 gives the credit back;
    // the second is granted at 8, B at 14, response at 15: cycles 16.
    assert_eq!(t.wr_grant[0], vec![vec![0], vec![8]]);
    assert_eq!(t.wr_rsp[0], vec![7, 15]);
    assert_eq!(o.cycles, 16);
    assert_eq!(t.wr_capped, 7); // cycles 1..=7
}

#[test]
fn native_is_one_cycle_nearer() {
    let rd_only = wl(vec![vec![rd(8, 1)], vec![]], vec![]);
    let wr_only = wl(vec![], vec![vec![burst(8, 1)], vec![]]);
    // axi4: granted at 0, answered at 0 + L + 3 = 7: cycles 8 (the spec's
    // "lone one-beat read / write").
    assert_eq!(sim(&small(Out::Axi4), &rd_only).0.cycles, 8);
    assert_eq!(sim(&small(Out::Axi4), &wr_only).0.cycles, 8);
    // native: q on mem_rd_req in 1, taken at 1 (ready = 1); beat at 1 + 4 =
    // 5, at rd0 at 6: cycles 7. The write: on mem_wr_req at 1 (its last
    // beat), B at 1 + 4 = 5, response at 6: cycles 7.
    let (o, t) = sim(&small(Out::Native), &rd_only);
    assert_eq!((o.cycles, t.rd_out.clone(), t.rd_beat[0].clone()), (7, vec![(1, 8, 0, 0)], vec![6]));
    assert!(t.ar.is_empty());
    assert_eq!(sim(&small(Out::Native), &wr_only).0.cycles, 7);

    // A read across 4 KB: native passes it whole (beats at 5, 6, at rd0 at
    // 6, 7: cycles 8); axi4 splits it (AR at 2 and 3, beats at 6, 7, at rd0
    // at 7, 8: cycles 9).
    let cross = wl(vec![vec![rd(4092, 2)], vec![]], vec![]);
    let (o, t) = sim(&small(Out::Native), &cross);
    assert_eq!((o.cycles, o.counters.split_bursts, t.rd_beat[0].clone()), (8, 0, vec![6, 7]));
    let (o, t) = sim(&small(Out::Axi4), &cross);
    assert_eq!((o.cycles, o.counters.split_bursts, t.rd_beat[0].clone()), (9, 1, vec![7, 8]));
    // A write across 4 KB, native: one burst, beats on mem_wr_req at 1, 2,
    // B at 2 + 4 = 6, response 7: cycles 8.
    let cross = wl(vec![], vec![vec![burst(4092, 2)], vec![]]);
    let (o, t) = sim(&small(Out::Native), &cross);
    assert_eq!((o.cycles, o.counters.split_bursts), (8, 0));
    assert_eq!(t.wr_out, vec![(1, 0, false), (2, 0, true)]);
}

#[test]
fn reads_only_and_writes_only() {
    // reads = 0: one write source.
    let p = ArbiterParams { reads: 0, writes: 1, ..small(Out::Axi4) };
    let w = wl(vec![], vec![vec![burst(0, 2)]]);
    let (o, _) = sim(&p, &w);
    // Beats granted at 0, 1; W at 2, 3; B at max(2, 3) + 4 = 7; response
    // at 8: cycles 9.
    assert_eq!(o.cycles, 9);
    assert_eq!(
        output_json(&p, &o),
        json!({"reads": [], "writes": [1],
               "memory": [{"addr": 0, "bytes": "4131211142322212"}],
               "cycles": 9,
               "counters": {"read_requests": 0, "read_beats": 0, "write_bursts": 1, "write_beats": 2, "split_bursts": 0}})
    );
    // writes = 0: one read source, one 3-beat read: AR at 2, beats at 6, 7,
    // 8, at rd0 at 7, 8, 9: cycles 10.
    let p = ArbiterParams { reads: 1, writes: 0, ..small(Out::Axi4) };
    let w = wl(vec![vec![rd(0, 3)]], vec![]);
    let (o, _) = sim(&p, &w);
    assert_eq!(o.cycles, 10);
    assert_eq!(output_json(&p, &o)["writes"], json!([]));
    assert_eq!(o.reads, vec![vec![big(0); 3]]);
    // No request at all: 0 cycles.
    let (o, _) = sim(&p, &wl(vec![vec![]], vec![]));
    assert_eq!(o.cycles, 0);
}

#[test]
fn max_burst_one_and_strobes() {
    // max_burst = 1: every beat is a burst; partial strobes keep what was
    // there.
    let p = ArbiterParams { max_burst: 1, read_buffer: 1, ..small(Out::Axi4) };
    let mut w = wl(vec![], vec![vec![burst(0, 1), burst(4, 1)], vec![burst(8, 1)]]);
    w.writes[0][0].strb = vec![big(0b0101)];
    w.writes[0][1].strb = vec![big(0)];
    w.memory = vec![Region { addr: 0, bytes: vec![0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7] }];
    let (o, t) = sim(&p, &w);
    // Grants: wr0 (0), wr1 (1), wr0 (2): no lock with one-beat bursts.
    assert_eq!(t.wr_grant, vec![vec![vec![0], vec![2]], vec![vec![1]]]);
    // W at 2, 3, 4; B at 6, 7, 8; responses at 7, 8, 9: cycles 10.
    assert_eq!(o.cycles, 10);
    assert_eq!(
        o.memory,
        vec![
            Region { addr: 0, bytes: vec![0x41, 0xa1, 0x21, 0xa3] },
            Region { addr: 4, bytes: vec![0xa4, 0xa5, 0xa6, 0xa7] },
            Region { addr: 8, bytes: vec![0x41, 0x31, 0x21, 0x11] },
        ]
    );
}

#[test]
fn wide_beats_at_the_top_of_a_64_bit_space() {
    // 1024-bit beats, 64-bit addresses: the last 4 beats of the space.
    let p = ArbiterParams { reads: 1, writes: 1, addr_bits: 64, data_bits: 1024, max_burst: 32, read_buffer: 32, write_outstanding: 1, out: Out::Axi4 };
    let top = u64::MAX - 4 * 128 + 1;
    let mut bytes = vec![0u8; 256];
    bytes[0] = 0x5a;
    bytes[255] = 0xa5;
    let w = Workload {
        latency: 1,
        memory: vec![Region { addr: top, bytes }],
        reads: vec![vec![rd(top, 2)]],
        writes: vec![vec![WriteBurst { addr: top + 256, data: vec![big(1), big(2)], strb: vec![big(1), big(3) << 126u32] }]],
    };
    let (o, _) = sim(&p, &w);
    assert_eq!(o.reads[0], vec![big(0x5a), big(0xa5) << 1016u32]);
    assert_eq!(o.memory[0].bytes.len(), 256);
    assert_eq!(o.memory[0].bytes[0], 1);
    // Beat 1's strobes are bytes 126 and 127 only: its data 2 is in byte 0,
    // so nothing of it shows.
    assert!(o.memory[0].bytes[1..].iter().all(|&b| b == 0));
    // L = 1: the read's AR at 2, beats at 3, 4, at rd0 at 4, 5: cycles 6.
    assert_eq!(o.cycles, 6);
    // 256 hex digits a beat.
    let out = output_json(&p, &o);
    assert_eq!(out["reads"][0][0], json!(format!("0x{}5a", "0".repeat(254))));
    assert_eq!(out["reads"][0][1], json!(format!("0xa5{}", "0".repeat(254))));
    assert_eq!(out["memory"][0]["addr"], json!(top + 256));
}

// ---- input errors ----

fn perr(v: Value) -> String {
    let p = small(Out::Axi4);
    parse_input(&v, &p).unwrap_err().0[0].to_string()
}

#[test]
fn parse_defaults() {
    let p = small(Out::Axi4);
    let w = parse_input(&json!({}), &p).unwrap();
    assert_eq!(w, Workload { latency: 4, memory: vec![], reads: vec![vec![], vec![]], writes: vec![vec![], vec![]] });
    let w = parse_input(
        &json!({"reads": [[{"addr": 8}, {"addr": 8, "beats": 4}]], "writes": [[], [{"addr": 32, "data": ["0x1", "0xffffffff"]}]]}),
        &p,
    )
    .unwrap();
    assert_eq!(w.reads, vec![vec![rd(8, 1), rd(8, 4)], vec![]]);
    assert_eq!(w.writes[1], vec![WriteBurst { addr: 32, data: vec![big(1), big(0xffff_ffff)], strb: vec![big(0xf), big(0xf)] }]);
    // Reads may overlap each other; bursts may touch without overlapping;
    // regions may be empty, upper case, and end at the top.
    let v = json!({
        "latency": 1000,
        "memory": [{"addr": 0, "bytes": "AbCd"}, {"addr": 65535, "bytes": "ff"}, {"addr": 1, "bytes": ""}],
        "reads": [[{"addr": 0, "beats": 2}], [{"addr": 4, "beats": 2}]],
        "writes": [[{"addr": 16, "data": ["0x0"], "strb": ["0x0"]}], [{"addr": 65532, "data": ["0x00000000000001"]}]]
    });
    let w = parse_input(&v, &p).unwrap();
    assert_eq!(w.memory[0].bytes, vec![0xab, 0xcd]);
    assert_eq!(w.writes[1][0].data, vec![big(1)]);
}

#[test]
fn parse_reports_every_violation() {
    let v = json!({
        "latency": 0,
        "memory": [{"addr": 0, "bytes": "0001"}, {"addr": 1, "bytes": "02"}],
        "reads": [[{"addr": 2}, {"addr": 8, "beats": 2}]],
        "writes": [[{"addr": 12, "data": ["0x1"], "strb": ["0x10"]}, {"addr": 16, "data": ["0x1"]}], [{"addr": 16, "data": ["0x2"]}]]
    });
    let got: Vec<String> = parse_input(&v, &small(Out::Axi4)).unwrap_err().0.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        got,
        [
            "input `latency` = 0: must be an integer from 1 to 1000",
            "input `reads[0][0].addr` = 2: must be an integer multiple of 4 from 0 to 65532",
            "input `writes[0][0].strb[0]` = \"0x10\": must be a hex string \"0x...\" of at most 4 bits",
            "input `memory[1]` = bytes 0x1..0x2: must be not overlapping memory[0] (bytes 0x0..0x2)",
            "input `writes[1][0]` = bytes 0x10..0x14: must be not overlapping writes[0][1] (bytes 0x10..0x14)",
        ]
    );
}

#[test]
fn parse_messages() {
    let wr = |b: Value| json!({"writes": [[b]]});
    let rq = |r: Value| json!({"reads": [[r]]});
    let rg = |r: Value| json!({"memory": [r]});
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "input `(file)` = []: must be a JSON object with keys latency, memory, reads, writes"),
        (json!({"read": []}), "input `read` = (given): must be absent: keys are latency, memory, reads, writes"),
        (json!({"latency": 0}), "input `latency` = 0: must be an integer from 1 to 1000"),
        (json!({"latency": 1001}), "input `latency` = 1001: must be an integer from 1 to 1000"),
        (json!({"latency": "4"}), "input `latency` = \"4\": must be an integer from 1 to 1000"),
        // memory
        (json!({"memory": 3}), "input `memory` = 3: must be a list of regions {\"addr\", \"bytes\"}"),
        (rg(json!(1)), "input `memory[0]` = 1: must be an object"),
        (rg(json!({"addr": 0, "bytes": "", "data": 1})), "input `memory[0].data` = (given): must be absent: keys are addr, bytes"),
        (rg(json!({"bytes": "00"})), "input `memory[0].addr` = (missing): must be an integer from 0 to 65535"),
        (rg(json!({"addr": 65536, "bytes": "00"})), "input `memory[0].addr` = 65536: must be an integer from 0 to 65535"),
        (rg(json!({"addr": -1, "bytes": "00"})), "input `memory[0].addr` = -1: must be an integer from 0 to 65535"),
        (rg(json!({"addr": 0})), "input `memory[0].bytes` = (missing): must be a string of hex digits, two a byte, in address order"),
        (rg(json!({"addr": 0, "bytes": "0"})), "input `memory[0].bytes` = \"0\": must be a string of hex digits, two a byte, in address order"),
        (rg(json!({"addr": 0, "bytes": "0x00"})), "input `memory[0].bytes` = \"0x00\": must be a string of hex digits, two a byte, in address order"),
        (rg(json!({"addr": 0, "bytes": [0]})), "input `memory[0].bytes` = [0]: must be a string of hex digits, two a byte, in address order"),
        (
            rg(json!({"addr": 65535, "bytes": "0000"})),
            "input `memory[0].bytes` = 2 bytes: must be at most 1 bytes at addr 0xffff (a region ends within the 16-bit address space)",
        ),
        (
            json!({"memory": [{"addr": 0, "bytes": "0001"}, {"addr": 1, "bytes": "02"}]}),
            "input `memory[1]` = bytes 0x1..0x2: must be not overlapping memory[0] (bytes 0x0..0x2)",
        ),
        // reads
        (json!({"reads": 1}), "input `reads` = 1: must be a list of at most 2 lists of read requests (one a read source)"),
        (json!({"reads": [[], [], []]}), "input `reads` = a list of 3 lists: must be a list of at most 2 lists of read requests (one a read source)"),
        (json!({"reads": [{}]}), "input `reads[0]` = {}: must be a list of read requests {\"addr\", \"beats\"}"),
        (rq(json!(8)), "input `reads[0][0]` = 8: must be an object"),
        (rq(json!({"addr": 0, "len": 0})), "input `reads[0][0].len` = (given): must be absent: keys are addr, beats"),
        (rq(json!({"beats": 1})), "input `reads[0][0].addr` = (missing): must be an integer multiple of 4 from 0 to 65532"),
        (rq(json!({"addr": 2})), "input `reads[0][0].addr` = 2: must be an integer multiple of 4 from 0 to 65532"),
        (rq(json!({"addr": 65536})), "input `reads[0][0].addr` = 65536: must be an integer multiple of 4 from 0 to 65532"),
        (rq(json!({"addr": 0, "beats": 0})), "input `reads[0][0].beats` = 0: must be an integer from 1 to 4"),
        (rq(json!({"addr": 0, "beats": 5})), "input `reads[0][0].beats` = 5: must be an integer from 1 to 4"),
        (
            rq(json!({"addr": 65528, "beats": 3})),
            "input `reads[0][0].beats` = 3: must be at most 2 at addr 0xfff8 (a request ends within the 16-bit address space)",
        ),
        // writes
        (json!({"writes": "x"}), "input `writes` = \"x\": must be a list of at most 2 lists of write bursts (one a write source)"),
        (json!({"writes": [[], [], []]}), "input `writes` = a list of 3 lists: must be a list of at most 2 lists of write bursts (one a write source)"),
        (json!({"writes": [1]}), "input `writes[0]` = 1: must be a list of write bursts {\"addr\", \"data\", \"strb\"}"),
        (wr(json!([])), "input `writes[0][0]` = []: must be an object"),
        (wr(json!({"addr": 0, "data": ["0x1"], "len": 0})), "input `writes[0][0].len` = (given): must be absent: keys are addr, data, strb"),
        (wr(json!({"data": ["0x1"]})), "input `writes[0][0].addr` = (missing): must be an integer multiple of 4 from 0 to 65532"),
        (wr(json!({"addr": 6, "data": ["0x1"]})), "input `writes[0][0].addr` = 6: must be an integer multiple of 4 from 0 to 65532"),
        (wr(json!({"addr": 0})), "input `writes[0][0].data` = (missing): must be a list of 1 to 4 hex strings \"0x...\" of at most 32 bits"),
        (wr(json!({"addr": 0, "data": "0x1"})), "input `writes[0][0].data` = \"0x1\": must be a list of 1 to 4 hex strings \"0x...\" of at most 32 bits"),
        (wr(json!({"addr": 0, "data": []})), "input `writes[0][0].data` = a list of 0 values: must be a list of 1 to 4 hex strings \"0x...\" of at most 32 bits"),
        (
            wr(json!({"addr": 0, "data": ["0x1", "0x1", "0x1", "0x1", "0x1"]})),
            "input `writes[0][0].data` = a list of 5 values: must be a list of 1 to 4 hex strings \"0x...\" of at most 32 bits",
        ),
        (wr(json!({"addr": 0, "data": ["0x100000000"]})), "input `writes[0][0].data[0]` = \"0x100000000\": must be a hex string \"0x...\" of at most 32 bits"),
        (wr(json!({"addr": 0, "data": ["0x1", "12"]})), "input `writes[0][0].data[1]` = \"12\": must be a hex string \"0x...\" of at most 32 bits"),
        (wr(json!({"addr": 0, "data": ["0x"]})), "input `writes[0][0].data[0]` = \"0x\": must be a hex string \"0x...\" of at most 32 bits"),
        (wr(json!({"addr": 0, "data": [1]})), "input `writes[0][0].data[0]` = 1: must be a hex string \"0x...\" of at most 32 bits"),
        (
            wr(json!({"addr": 0, "data": ["0x1"], "strb": "0xf"})),
            "input `writes[0][0].strb` = \"0xf\": must be a list of 1 hex strings \"0x...\" of at most 4 bits, one a beat of data",
        ),
        (
            wr(json!({"addr": 0, "data": ["0x1"], "strb": ["0xf", "0xf"]})),
            "input `writes[0][0].strb` = a list of 2 values: must be a list of 1 hex strings \"0x...\" of at most 4 bits, one a beat of data",
        ),
        (
            wr(json!({"addr": 0, "data": "x", "strb": 1})),
            "input `writes[0][0].data` = \"x\": must be a list of 1 to 4 hex strings \"0x...\" of at most 32 bits",
        ),
        (wr(json!({"addr": 0, "data": ["0x1"], "strb": ["0x1f"]})), "input `writes[0][0].strb[0]` = \"0x1f\": must be a hex string \"0x...\" of at most 4 bits"),
        (
            wr(json!({"addr": 65528, "data": ["0x1", "0x1", "0x1"]})),
            "input `writes[0][0].data` = a list of 3 beats: must be a list of at most 2 beats at addr 0xfff8 (a burst ends within the 16-bit address space)",
        ),
        // overlaps
        (
            json!({"writes": [[{"addr": 0, "data": ["0x1", "0x2"]}], [{"addr": 4, "data": ["0x3"]}]]}),
            "input `writes[1][0]` = bytes 0x4..0x8: must be not overlapping writes[0][0] (bytes 0x0..0x8)",
        ),
        (
            json!({"writes": [[{"addr": 0, "data": ["0x1"]}, {"addr": 0, "data": ["0x2"]}]]}),
            "input `writes[0][1]` = bytes 0x0..0x4: must be not overlapping writes[0][0] (bytes 0x0..0x4)",
        ),
        (
            json!({"reads": [[], [{"addr": 8, "beats": 2}]], "writes": [[{"addr": 12, "data": ["0x1"]}]]}),
            "input `writes[0][0]` = bytes 0xc..0x10: must be not overlapping reads[1][0] (bytes 0x8..0x10)",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(perr(v.clone()), want, "{v}");
    }
    // The second violation of a bad strb list (a list of the wrong length
    // is one violation; its elements are not read).
    let all = parse_input(&wr(json!({"addr": 0, "data": ["0x1"], "strb": ["0xf", "0xff"]})), &small(Out::Axi4)).unwrap_err();
    assert_eq!(all.0.len(), 1);
}

#[test]
fn parse_counts_overlaps_beyond_a_few() {
    // Seven one-beat bursts on the same word: each meets every burst before
    // it: 21 overlaps, 5 listed.
    let bursts: Vec<Value> = (0..7).map(|_| json!({"addr": 0, "data": ["0x1"]})).collect();
    let got = parse_input(&json!({"writes": [bursts]}), &small(Out::Axi4)).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), "input `writes` = 16 more values like those: must be each as the message above says");
    // Overlapping regions likewise: four regions on byte 0 make 6 overlaps
    // (5 listed, 1 counted), five make 10.
    let regions: Vec<Value> = (0..4).map(|_| json!({"addr": 0, "bytes": "00"})).collect();
    let got = parse_input(&json!({"memory": regions}), &small(Out::Axi4)).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[0].to_string(), "input `memory[1]` = bytes 0x0..0x1: must be not overlapping memory[0] (bytes 0x0..0x1)");
    let five: Vec<Value> = (0..5).map(|_| json!({"addr": 0, "bytes": "00"})).collect();
    let got = parse_input(&json!({"memory": five}), &small(Out::Axi4)).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), "input `memory` = 5 more values like those: must be each as the message above says");
    // Bad data beats beyond five in one burst are counted too.
    let p = ArbiterParams { max_burst: 8, read_buffer: 8, ..small(Out::Axi4) };
    let beats: Vec<Value> = (0..7).map(|_| json!("0xzz")).collect();
    let got = parse_input(&json!({"writes": [[{"addr": 0, "data": beats}]]}), &p).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), "input `writes[0][0].data` = 2 more values like those: must be each as the message above says");
    // And bad strobes.
    let data: Vec<Value> = (0..7).map(|_| json!("0x1")).collect();
    let strb: Vec<Value> = (0..7).map(|_| json!("0x10")).collect();
    let got = parse_input(&json!({"writes": [[{"addr": 0, "data": data, "strb": strb}]]}), &p).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[4].to_string(), "input `writes[0][0].strb[4]` = \"0x10\": must be a hex string \"0x...\" of at most 4 bits");
    assert_eq!(got[5].to_string(), "input `writes[0][0].strb` = 2 more values like those: must be each as the message above says");
}

#[test]
fn overlaps_are_counted_fast_and_agree_with_every_pair() {
    // 20,000 copies of one region: C(20000, 2) overlaps, 5 listed, at once
    // (every pair's message was built before: 2.4 GB, an abort).
    let regions: Vec<Value> = (0..20_000).map(|_| json!({"addr": 0, "bytes": "00"})).collect();
    let t = std::time::Instant::now();
    let got = parse_input(&json!({"memory": regions}), &small(Out::Axi4)).unwrap_err().0;
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), format!("input `memory` = {} more values like those: must be each as the message above says", 20_000 * 19_999 / 2 - 5));
    // Against every pair, on random spans (empty ones included).
    let mut rng = Rng::new(5);
    for _ in 0..300 {
        let mut spans = |n: u64| -> Vec<super::io::Span> {
            (0..rng.below(n))
                .map(|i| {
                    let s = rng.below(40) as u128;
                    (format!("s{i}"), s, s + rng.below(6) as u128)
                })
                .collect()
        };
        let (list, others) = (spans(30), spans(10));
        let meet = |a: &super::io::Span, b: &super::io::Span| a.1 < a.2 && b.1 < b.2 && a.1 < b.2 && b.1 < a.2;
        let mut want = Vec::new();
        for (i, s) in list.iter().enumerate() {
            for q in list[..i].iter().chain(&others) {
                if meet(s, q) {
                    want.push((s.0.clone(), q.0.clone()));
                }
            }
        }
        let (first, total) = super::io::overlap_pairs(&list, &others, 5);
        assert_eq!(total, want.len());
        let first: Vec<(String, String)> = first.iter().map(|(a, b)| (a.0.clone(), b.0.clone())).collect();
        assert_eq!(first, want[..want.len().min(5)]);
    }
}

#[test]
fn parse_limits_follow_the_parameters() {
    // reads = 0: no read list at all may be given; 64-bit addresses.
    let p = ArbiterParams { reads: 0, writes: 1, addr_bits: 64, ..ArbiterParams::default() };
    assert_eq!(
        parse_input(&json!({"reads": [[]]}), &p).unwrap_err().0[0].to_string(),
        "input `reads` = a list of 1 lists: must be a list of at most 0 lists of read requests (one a read source)"
    );
    let top = u64::MAX - 7;
    let w = parse_input(&json!({"writes": [[{"addr": top, "data": ["0x1"]}]], "memory": [{"addr": u64::MAX, "bytes": "01"}]}), &p).unwrap();
    assert_eq!(w.writes[0][0].addr, top);
    assert_eq!(
        parse_input(&json!({"writes": [[{"addr": top, "data": ["0x1", "0x2"]}]]}), &p).unwrap_err().0[0].to_string(),
        "input `writes[0][0].data` = a list of 2 beats: must be a list of at most 1 beats at addr 0xfffffffffffffff8 (a burst ends within the 64-bit address space)"
    );
    // max_burst = 1: beats is 1 only.
    let p = ArbiterParams { max_burst: 1, ..small(Out::Native) };
    assert_eq!(
        parse_input(&json!({"reads": [[{"addr": 0, "beats": 2}]]}), &p).unwrap_err().0[0].to_string(),
        "input `reads[0][0].beats` = 2: must be an integer from 1 to 1"
    );
}

// ---- random workloads ----

/// The input file of a workload (the inverse of `parse_input`).
fn to_input(w: &Workload) -> Value {
    let hex = |b: &BigUint| format!("0x{}", b.to_str_radix(16));
    json!({
        "latency": w.latency,
        "memory": w.memory.iter().map(|r| json!({"addr": r.addr, "bytes": r.bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()})).collect::<Vec<_>>(),
        "reads": w.reads.iter().map(|l| l.iter().map(|r| json!({"addr": r.addr, "beats": r.beats})).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "writes": w.writes.iter().map(|l| l.iter().map(|b| json!({
            "addr": b.addr,
            "data": b.data.iter().map(hex).collect::<Vec<_>>(),
            "strb": b.strb.iter().map(hex).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()).collect::<Vec<_>>(),
    })
}

/// The parameter points the random workloads run at.
fn points() -> Vec<ArbiterParams> {
    let mut v: Vec<ArbiterParams> = ArbiterParams::presets().into_iter().map(|(_, p)| p).collect();
    v.push(small(Out::Axi4));
    v.push(small(Out::Native));
    v.push(ArbiterParams { read_buffer: 4, write_outstanding: 1, ..small(Out::Axi4) });
    v.push(ArbiterParams { reads: 3, writes: 0, data_bits: 8, max_burst: 16, read_buffer: 20, ..small(Out::Axi4) });
    v.push(ArbiterParams { reads: 0, writes: 3, data_bits: 8, max_burst: 16, read_buffer: 16, ..small(Out::Axi4) });
    v.push(ArbiterParams { max_burst: 1, read_buffer: 1, write_outstanding: 1, ..small(Out::Axi4) });
    v.push(ArbiterParams { reads: 1, writes: 1, addr_bits: 12, data_bits: 1024, max_burst: 4, read_buffer: 8, write_outstanding: 3, out: Out::Axi4 });
    v.push(ArbiterParams { reads: 2, writes: 2, addr_bits: 13, data_bits: 128, max_burst: 32, read_buffer: 32, write_outstanding: 1, out: Out::Axi4 });
    v.push(ArbiterParams { reads: 2, writes: 2, addr_bits: 64, data_bits: 64, max_burst: 8, read_buffer: 9, write_outstanding: 2, out: Out::Native });
    v.push(ArbiterParams { reads: 5, writes: 5, addr_bits: 20, data_bits: 16, max_burst: 64, read_buffer: 64, write_outstanding: 4, out: Out::Axi4 });
    for p in &v {
        p.validate().unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
    v
}

#[test]
fn random_workloads_agree_with_the_reference() {
    for (i, p) in points().iter().enumerate() {
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed * 1000 + i as u64);
            let w = random_workload(&mut rng, p, 8);
            // Within the input rules: the input file reads back as the same
            // workload.
            let back = parse_input(&to_input(&w), p).unwrap_or_else(|e| panic!("{p:?} seed {seed}: {e}"));
            assert_eq!(back, w, "{p:?} seed {seed}");
            sim(p, &w);
        }
    }
}

#[test]
fn random_workloads_reach_the_corners() {
    // Over a few seeds at each point where a corner exists.
    #[derive(Default, Debug)]
    struct Seen {
        split_read: bool,
        split_write: bool,
        top_of_space: bool,
        rd_capped: bool,
        wr_capped: bool,
        all_busy: bool,
        partial_strb: bool,
        zero_strb: bool,
        one_read: bool,
        long_read: bool,
        one_write: bool,
        long_write: bool,
        region_under_write: bool,
    }
    for p in points() {
        let mut s = Seen::default();
        let db = p.data_bytes() as u64;
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed);
            let w = random_workload(&mut rng, &p, 8);
            let (_, t) = simulate(&p, &w);
            let split = |a: u64, n: u64| n > (4096 - a % 4096) / db;
            s.split_read |= w.reads.iter().flatten().any(|r| split(r.addr, r.beats as u64));
            s.split_write |= w.writes.iter().flatten().any(|b| split(b.addr, b.beats() as u64));
            let end = |a: u64, n: u64| a as u128 + (n * db) as u128 == 1u128 << p.addr_bits;
            s.top_of_space |= w.reads.iter().flatten().any(|r| end(r.addr, r.beats as u64))
                || w.writes.iter().flatten().any(|b| end(b.addr, b.beats() as u64));
            s.rd_capped |= t.rd_capped > 0;
            s.wr_capped |= t.wr_capped > 0;
            s.all_busy |= t.all_busy > 0;
            let full = (BigUint::from(1u8) << db) - 1u8;
            let strbs: Vec<&BigUint> = w.writes.iter().flatten().flat_map(|b| &b.strb).collect();
            s.partial_strb |= strbs.iter().any(|x| **x != full && **x != big(0));
            s.zero_strb |= strbs.iter().any(|x| **x == big(0));
            s.one_read |= w.reads.iter().flatten().any(|r| r.beats == 1);
            s.long_read |= w.reads.iter().flatten().any(|r| r.beats == p.max_burst);
            s.one_write |= w.writes.iter().flatten().any(|b| b.beats() == 1);
            s.long_write |= w.writes.iter().flatten().any(|b| b.beats() == p.max_burst);
            s.region_under_write |= w.writes.iter().flatten().any(|b| w.memory.iter().any(|r| r.addr <= b.addr && b.addr < r.addr.saturating_add(r.bytes.len() as u64)));
        }
        let (r, wr) = (p.reads > 0, p.writes > 0);
        // A 4 KB boundary is reachable when a burst can span two pages.
        let crossable = p.max_burst > 1 && p.addr_bits > 12;
        if r {
            assert!(s.rd_capped && s.one_read && s.long_read, "{p:?}: {s:?}");
            assert!(s.split_read || !crossable, "{p:?}: {s:?}");
        }
        if wr {
            assert!(s.one_write && s.long_write && s.zero_strb && s.region_under_write, "{p:?}: {s:?}");
            // A one-byte beat has no partial strobes.
            assert!(s.partial_strb || p.data_bits == 8, "{p:?}: {s:?}");
            // A source has at most 8 bursts.
            assert!(s.wr_capped || p.write_outstanding >= 8, "{p:?}: {s:?}");
            assert!(s.split_write || !crossable, "{p:?}: {s:?}");
        }
        if p.reads + p.writes > 1 {
            assert!(s.all_busy, "{p:?}: {s:?}");
        }
        assert!(s.top_of_space, "{p:?}: {s:?}");
    }
}
