//! Hand-worked cases of the golden model, the input errors, and random
//! workloads held to the reference.
//!
//! Cycle counts are worked out from docs/scratchpad.md "Timing" in the
//! comment next to each assertion. Shorthand: a request taken at edge `g`
//! has its response taken at `g + 1` (`rsp_ready` is high), and the port's
//! next request can be taken at `g + 1` too; a phase's cycles are its last
//! response edge minus its first cycle, plus one.

use super::reference::results;
use super::timing::{simulate, Trace};
use super::*;
use crate::rng::Rng;
use gpurtl_params::BlockParams;
use serde_json::{json, Value};

/// `banks` banks of 16 words of 32 bits (`DB` = 4).
fn sp(banks: u32, read_ports: u32, write_ports: u32) -> ScratchpadParams {
    ScratchpadParams { banks, words: 16, data_bits: 32, read_ports, write_ports }
}

fn wr(addr: u64, data: u64) -> Write {
    Write { addr, data: BigUint::from(data), strb: 0xf }
}

fn big(x: u64) -> BigUint {
    BigUint::from(x)
}

/// The cycle simulation, its results held to the reference.
fn sim(p: &ScratchpadParams, w: &Workload) -> (Outcome, Trace) {
    let (o, t) = simulate(p, w);
    let r = results(p, w);
    let got: Vec<(Vec<Vec<BigUint>>, Vec<u64>)> = o.phases.iter().map(|ph| (ph.reads.clone(), ph.writes.clone())).collect();
    assert_eq!(got, r.phases, "results");
    assert_eq!((o.counters.reads, o.counters.writes), (r.reads, r.writes), "counters");
    assert_eq!(run(p, w), o);
    (o, t)
}

fn cycles_of(o: &Outcome) -> Vec<u64> {
    o.phases.iter().map(|ph| ph.cycles).collect()
}

// ---- the spec's example ----

#[test]
fn spec_example() {
    let p = ScratchpadParams::default();
    let input = json!({"phases": [
      {"writes": [[{"addr": 0, "data": "0x11223344"}, {"addr": 4, "data": "0x55667788"},
                   {"addr": 4, "data": "0xaabb", "strb": "0x3"}]]},
      {"reads": [[4, 0], [4]]}
    ]});
    let w = parse_input(&input, &p).unwrap();
    let (o, t) = sim(&p, &w);
    assert_eq!(
        output_json(&p, &o),
        json!({"phases": [{"reads": [[], []], "writes": [3], "cycles": 4},
                          {"reads": [["0x5566aabb", "0x11223344"], ["0x5566aabb"]], "writes": [0], "cycles": 3}],
               "cycles": 7,
               "counters": {"reads": 3, "writes": 3, "conflict_waits": 1}})
    );
    // Phase 0: writes taken at 0, 1, 2, responses at 1, 2, 3: 3 - 0 + 1.
    assert_eq!(t.phases[0].wr_grant, vec![vec![0, 1, 2]]);
    // Phase 1 from cycle 4: rd0 and rd1 both want bank 1; rd0 wins (rp_1
    // starts at rd1), rd1 waits a cycle; at 5 rd0 reads bank 0 and rd1
    // bank 1. Last response at 6: 6 - 4 + 1.
    assert_eq!(t.phases[1].start, 4);
    assert_eq!(t.phases[1].rd_grant, vec![vec![4, 5], vec![5]]);
    assert_eq!(t.phases[1].rd_rsp, vec![vec![5, 6], vec![6]]);
    assert_eq!(t.phases[1].end, Some(6));
}

// ---- hand-worked timing ----

#[test]
fn two_read_ports_on_one_bank() {
    // 4 banks: addresses 0 and 16 are bank 0 (rows 0 and 1), 4 is bank 1.
    let p = sp(4, 2, 1);
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![wr(0, 0xa0), wr(16, 0xa16), wr(4, 0xa4)]] },
            Phase { reads: vec![vec![0, 16], vec![16, 0]], writes: vec![] },
            Phase { reads: vec![vec![0, 4], vec![4, 0]], writes: vec![] },
        ],
    };
    let (o, t) = sim(&p, &w);
    // Phase 0: taken at 0, 1, 2; responses 1, 2, 3: 4 cycles.
    // Phase 1 from 4, every request in bank 0: rd0 (rp_0 = rd1 at first) at
    // 4, then rd1 (rp_0 = rd0) at 5, rd0 at 6, rd1 at 7; the loser waits in
    // 4, 5, 6: 3 conflict waits. Responses 5, 6, 7, 8: 8 - 4 + 1 = 5.
    assert_eq!(t.phases[1].rd_grant, vec![vec![4, 6], vec![5, 7]]);
    // Phase 2 from 9: banks 0 and 1, then 1 and 0: both ports each cycle,
    // taken at 9 and 10, responses 10 and 11: 3 cycles.
    assert_eq!(t.phases[2].rd_grant, vec![vec![9, 10], vec![9, 10]]);
    assert_eq!(cycles_of(&o), vec![4, 5, 3]);
    assert_eq!(o.cycles, 12);
    assert_eq!(o.counters.conflict_waits, 3);
    assert_eq!(o.phases[1].reads, vec![vec![big(0xa0), big(0xa16)], vec![big(0xa16), big(0xa0)]]);
    assert_eq!(o.phases[2].reads, vec![vec![big(0xa0), big(0xa4)], vec![big(0xa4), big(0xa0)]]);
}

#[test]
fn two_write_ports_on_one_bank() {
    let p = sp(4, 1, 2);
    let w = Workload { phases: vec![Phase { reads: vec![], writes: vec![vec![wr(0, 1)], vec![wr(16, 2), wr(20, 3)]] }] };
    let (o, t) = sim(&p, &w);
    // Cycle 0: both want bank 0; wr0 wins (wp_0 starts at wr1), wr1 waits.
    // Cycle 1: wr1's 16 (bank 0). Cycle 2: its 20 (bank 1). Responses 1,
    // 2, 3: 4 cycles, 1 wait.
    assert_eq!(t.phases[0].wr_grant, vec![vec![0], vec![1, 2]]);
    assert_eq!((o.cycles, o.counters.conflict_waits), (4, 1));
}

#[test]
fn read_of_the_row_being_written_waits() {
    // 2 banks, one port each; word 0 is bank 0 row 0, word 2 (addr 8) bank
    // 0 row 1.
    let p = sp(2, 1, 1);
    // Outside the input rules: phase 1 reads the word it writes. Cycle 2:
    // the write to bank 0 row 0 is granted, so the read of row 0 is not
    // eligible (one conflict wait); at 3 it reads the new word. Write
    // response at 3, read response at 4: 4 - 2 + 1 = 3 cycles.
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![wr(0, 0x1111_1111)]] },
            Phase { reads: vec![vec![0]], writes: vec![vec![wr(0, 0x2222_2222)]] },
        ],
    };
    let (o, t) = simulate(&p, &w);
    assert_eq!(t.phases[1].wr_grant, vec![vec![2]]);
    assert_eq!(t.phases[1].rd_grant, vec![vec![3]]);
    assert_eq!(cycles_of(&o), vec![2, 3]);
    assert_eq!(o.phases[1].reads, vec![vec![big(0x2222_2222)]]);
    assert_eq!((o.counters.conflict_waits, t.lost_to_write, t.lost_to_port), (1, 1, 0));
    assert_eq!(run(&p, &w), o);
    // parse_input keeps such a file out.
    let v = json!({"phases": [{"writes": [[{"addr": 0, "data": "0x11111111"}]]},
                              {"reads": [[0]], "writes": [[{"addr": 0, "data": "0x22222222"}]]}]});
    assert_eq!(
        parse_input(&v, &p).unwrap_err().to_string(),
        "input `phases[1].reads[0][0]` = 0: must be a word this phase does not write (phases[1].writes[0][0] writes it)"
    );

    // Another row of the same bank: the bank reads and writes in one cycle.
    // Phase 0 takes 0 and 1, responses 1, 2 (3 cycles); phase 1 from 3:
    // both taken at 3, responses at 4: 2 cycles.
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![wr(0, 0x1111_1111), wr(8, 0x3333_3333)]] },
            Phase { reads: vec![vec![8]], writes: vec![vec![wr(0, 0x2222_2222)]] },
        ],
    };
    let (o, t) = sim(&p, &w);
    assert_eq!((t.phases[1].rd_grant.clone(), t.phases[1].wr_grant.clone()), (vec![vec![3]], vec![vec![3]]));
    assert_eq!(cycles_of(&o), vec![3, 2]);
    assert_eq!(o.counters.conflict_waits, 0);
    assert_eq!(o.phases[1].reads, vec![vec![big(0x3333_3333)]]);
}

#[test]
fn phases_back_to_back_and_an_empty_phase() {
    let p = sp(4, 2, 1);
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![wr(0, 0x1234_5678)]] },
            Phase::default(),
            Phase { reads: vec![vec![0], vec![]], writes: vec![vec![]] },
        ],
    };
    let (o, t) = sim(&p, &w);
    // Phase 0: taken at 0, response at 1: 2 cycles. Phase 1 is empty: 0
    // cycles, and phase 2 begins in its (same) first cycle, 2: taken at 2,
    // response at 3: 2 cycles. The read sees phase 0's write.
    assert_eq!((t.phases[1].start, t.phases[1].end), (2, None));
    assert_eq!((t.phases[2].start, t.phases[2].end), (2, Some(3)));
    assert_eq!(cycles_of(&o), vec![2, 0, 2]);
    assert_eq!(
        output_json(&p, &o),
        json!({"phases": [{"reads": [[], []], "writes": [1], "cycles": 2},
                          {"reads": [[], []], "writes": [0], "cycles": 0},
                          {"reads": [["0x12345678"], []], "writes": [0], "cycles": 2}],
               "cycles": 4,
               "counters": {"reads": 1, "writes": 1, "conflict_waits": 0}})
    );
    // No phase at all.
    let (o, _) = sim(&p, &Workload::default());
    assert_eq!(output_json(&p, &o), json!({"phases": [], "cycles": 0, "counters": {"reads": 0, "writes": 0, "conflict_waits": 0}}));
}

#[test]
fn partial_strobes() {
    let p = sp(4, 1, 1);
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![wr(0, 0x1122_3344)]] },
            Phase { reads: vec![], writes: vec![vec![Write { addr: 0, data: big(0xaabb_ccdd), strb: 0x5 }, Write { addr: 0, data: big(0xeeee_eeee), strb: 0 }]] },
            Phase { reads: vec![vec![0]], writes: vec![] },
        ],
    };
    let (o, _) = sim(&p, &w);
    // Bytes 0 and 2 from 0xaabbccdd (dd, bb), bytes 1 and 3 kept (33, 11).
    assert_eq!(o.phases[2].reads, vec![vec![big(0x11bb_33dd)]]);
    // 2 + 3 (taken at 2, 3; responses 3, 4) + 2.
    assert_eq!(cycles_of(&o), vec![2, 3, 2]);
}

#[test]
fn widest_and_narrowest_words() {
    // 128-bit words, 8 banks of 16384: the last word of the scratchpad.
    let p = ScratchpadParams { banks: 8, words: 16384, data_bits: 128, read_ports: 4, write_ports: 4 };
    let last = (1u64 << p.addr_bits()) - 16;
    let data = (big(0x0102_0304_0506_0708) << 64u32) | big(0x090a_0b0c_0d0e_0f10);
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![], vec![], vec![], vec![Write { addr: last, data: data.clone(), strb: 0xffff }]] },
            Phase { reads: vec![vec![], vec![], vec![], vec![last]], writes: vec![] },
        ],
    };
    let (o, _) = sim(&p, &w);
    assert_eq!(o.phases[1].reads[3], vec![data]);
    assert_eq!(output_json(&p, &o)["phases"][1]["reads"][3][0], json!("0x0102030405060708090a0b0c0d0e0f10"));
    // 8-bit words, one bank: every request in bank 0.
    let p = ScratchpadParams { banks: 1, words: 16, data_bits: 8, read_ports: 2, write_ports: 2 };
    let w = Workload {
        phases: vec![
            Phase { reads: vec![], writes: vec![vec![Write { addr: 0, data: big(7), strb: 1 }], vec![Write { addr: 15, data: big(9), strb: 1 }]] },
            Phase { reads: vec![vec![15], vec![0]], writes: vec![] },
        ],
    };
    let (o, _) = sim(&p, &w);
    // Each phase: one port at 0 (or 3), the other a cycle later: 3 cycles,
    // one wait each.
    assert_eq!(cycles_of(&o), vec![3, 3]);
    assert_eq!(o.counters.conflict_waits, 2);
    assert_eq!(o.phases[1].reads, vec![vec![big(9)], vec![big(7)]]);
    assert_eq!(output_json(&p, &o)["phases"][1]["reads"], json!([["0x09"], ["0x07"]]));
}

// ---- input errors ----

/// The `small` preset: 2 banks of 16 16-bit words (64 bytes), 2 + 2 ports.
fn small() -> ScratchpadParams {
    ScratchpadParams { banks: 2, words: 16, data_bits: 16, read_ports: 2, write_ports: 2 }
}

fn perr(v: Value) -> String {
    parse_input(&v, &small()).unwrap_err().0[0].to_string()
}

#[test]
fn parse_defaults() {
    let v = json!({"phases": [{}, {"writes": [[{"addr": 62, "data": "0x0000ABcd"}], []]}, {"reads": [[62, 62]]}]});
    let w = parse_input(&v, &small()).unwrap();
    assert_eq!(
        w.phases,
        vec![
            Phase { reads: vec![vec![], vec![]], writes: vec![vec![], vec![]] },
            Phase { reads: vec![vec![], vec![]], writes: vec![vec![Write { addr: 62, data: big(0xabcd), strb: 3 }], vec![]] },
            Phase { reads: vec![vec![62, 62], vec![]], writes: vec![vec![], vec![]] },
        ]
    );
    // A word written in two halves by two phases is readable; one port may
    // write a word twice in a phase; ports may write different words of a
    // bank.
    let v = json!({"phases": [
        {"writes": [[{"addr": 4, "data": "0x1", "strb": "0x1"}, {"addr": 4, "data": "0x2", "strb": "0x1"}], [{"addr": 8, "data": "0x1"}]]},
        {"writes": [[], [{"addr": 4, "data": "0x100", "strb": "0x2"}]]},
        {"reads": [[4], [8]]}
    ]});
    assert!(parse_input(&v, &small()).is_ok());
}

#[test]
fn parse_reports_every_violation() {
    let v = json!({"x": 0, "phases": [
        {"reads": [[3]], "writes": [[{"addr": 2, "data": "0x10000"}, {"addr": 2, "data": "0x1", "strb": "0x7"}], [{"addr": 2, "data": "0x1"}]]},
        {"reads": [[2, 4]]}
    ]});
    let got: Vec<String> = parse_input(&v, &small()).unwrap_err().0.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        got,
        [
            "input `x` = (given): must be absent: the only key is phases",
            "input `phases[0].reads[0][0]` = 3: must be an integer multiple of 2 from 0 to 62",
            "input `phases[0].writes[0][0].data` = \"0x10000\": must be a hex string \"0x...\" of at most 16 bits",
            "input `phases[0].writes[0][1].strb` = \"0x7\": must be a hex string \"0x...\" of at most 2 bits",
            "input `phases[0].writes[1][0].addr` = 2: must be a word no other port writes in this phase (phases[0].writes[0][0] writes it)",
            // Word 2 counts as written in full (its strobes are unknown), 4
            // was never written.
            "input `phases[1].reads[0][1]` = 4: must be a word earlier phases wrote in full (no byte of it was written)",
        ]
    );
}

#[test]
fn parse_messages() {
    let ph = |x: Value| json!({"phases": [x]});
    let w1 = |x: Value| json!({"phases": [{"writes": [[x]]}]});
    let cases: Vec<(Value, &str)> = vec![
        (json!([]), "input `(file)` = []: must be a JSON object with a `phases` list"),
        (json!({}), "input `phases` = (missing): must be a list of phases"),
        (json!({"phases": {}}), "input `phases` = {}: must be a list of phases"),
        (json!({"phases": [], "reads": []}), "input `reads` = (given): must be absent: the only key is phases"),
        (json!({"phases": [1]}), "input `phases[0]` = 1: must be an object with optional `reads` and `writes` lists"),
        (ph(json!({"read": []})), "input `phases[0].read` = (given): must be absent: keys are reads, writes"),
        (ph(json!({"reads": 1})), "input `phases[0].reads` = 1: must be a list of at most 2 lists of byte addresses (one a read port)"),
        (ph(json!({"reads": [[], [], []]})), "input `phases[0].reads` = a list of 3 lists: must be a list of at most 2 lists of byte addresses (one a read port)"),
        (ph(json!({"reads": [5]})), "input `phases[0].reads[0]` = 5: must be a list of byte addresses"),
        (ph(json!({"reads": [[], [1]]})), "input `phases[0].reads[1][0]` = 1: must be an integer multiple of 2 from 0 to 62"),
        (ph(json!({"reads": [[64]]})), "input `phases[0].reads[0][0]` = 64: must be an integer multiple of 2 from 0 to 62"),
        (ph(json!({"reads": [["0"]]})), "input `phases[0].reads[0][0]` = \"0\": must be an integer multiple of 2 from 0 to 62"),
        (ph(json!({"writes": "x"})), "input `phases[0].writes` = \"x\": must be a list of at most 2 lists of writes (one a write port)"),
        (ph(json!({"writes": [[], [], []]})), "input `phases[0].writes` = a list of 3 lists: must be a list of at most 2 lists of writes (one a write port)"),
        (ph(json!({"writes": [1]})), "input `phases[0].writes[0]` = 1: must be a list of writes {\"addr\", \"data\", \"strb\"}"),
        (w1(json!(1)), "input `phases[0].writes[0][0]` = 1: must be an object"),
        (w1(json!({"addr": 0, "data": "0x1", "mask": 1})), "input `phases[0].writes[0][0].mask` = (given): must be absent: keys are addr, data, strb"),
        (w1(json!({"data": "0x1"})), "input `phases[0].writes[0][0].addr` = (missing): must be an integer multiple of 2 from 0 to 62"),
        (w1(json!({"addr": 3, "data": "0x1"})), "input `phases[0].writes[0][0].addr` = 3: must be an integer multiple of 2 from 0 to 62"),
        (w1(json!({"addr": 0})), "input `phases[0].writes[0][0].data` = (missing): must be a hex string \"0x...\" of at most 16 bits"),
        (w1(json!({"addr": 0, "data": "0x10000"})), "input `phases[0].writes[0][0].data` = \"0x10000\": must be a hex string \"0x...\" of at most 16 bits"),
        (w1(json!({"addr": 0, "data": 5})), "input `phases[0].writes[0][0].data` = 5: must be a hex string \"0x...\" of at most 16 bits"),
        (w1(json!({"addr": 0, "data": "0x1", "strb": "0x4"})), "input `phases[0].writes[0][0].strb` = \"0x4\": must be a hex string \"0x...\" of at most 2 bits"),
        (w1(json!({"addr": 0, "data": "0x1", "strb": 3})), "input `phases[0].writes[0][0].strb` = 3: must be a hex string \"0x...\" of at most 2 bits"),
        // The phase's rules.
        (
            ph(json!({"writes": [[{"addr": 6, "data": "0x1"}], [{"addr": 8, "data": "0x1"}, {"addr": 6, "data": "0x2"}]]})),
            "input `phases[0].writes[1][1].addr` = 6: must be a word no other port writes in this phase (phases[0].writes[0][0] writes it)",
        ),
        (
            json!({"phases": [{"writes": [[{"addr": 4, "data": "0x1"}]]}, {"reads": [[], [4]], "writes": [[], [{"addr": 4, "data": "0x1"}]]}]}),
            "input `phases[1].reads[1][0]` = 4: must be a word this phase does not write (phases[1].writes[1][0] writes it)",
        ),
        (ph(json!({"reads": [[4]]})), "input `phases[0].reads[0][0]` = 4: must be a word earlier phases wrote in full (no byte of it was written)"),
        (
            json!({"phases": [{"writes": [[{"addr": 4, "data": "0x1", "strb": "0x1"}]]}, {"reads": [[4]]}]}),
            "input `phases[1].reads[0][0]` = 4: must be a word earlier phases wrote in full (its byte 1 was not written)",
        ),
    ];
    for (v, want) in cases {
        assert_eq!(perr(v.clone()), want, "{v}");
    }
    // A read in the phase that writes its word, never written before: both.
    let v = ph(json!({"reads": [[4]], "writes": [[{"addr": 4, "data": "0x1"}]]}));
    let got: Vec<String> = parse_input(&v, &small()).unwrap_err().0.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        got,
        [
            "input `phases[0].reads[0][0]` = 4: must be a word this phase does not write (phases[0].writes[0][0] writes it)",
            "input `phases[0].reads[0][0]` = 4: must be a word earlier phases wrote in full (no byte of it was written)",
        ]
    );
    // 32-bit words: the bytes not written are listed.
    let v = json!({"phases": [{"writes": [[{"addr": 0, "data": "0x1", "strb": "0x5"}]]}, {"reads": [[0]]}]});
    assert_eq!(
        parse_input(&v, &ScratchpadParams::default()).unwrap_err().to_string(),
        "input `phases[1].reads[0][0]` = 0: must be a word earlier phases wrote in full (its bytes 1, 3 were not written)"
    );
}

#[test]
fn parse_counts_violations_beyond_a_few() {
    let bad: Vec<Value> = (0..7).map(|_| json!(1)).collect();
    let got = parse_input(&json!({"phases": [{"reads": [bad]}]}), &small()).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), "input `phases[0].reads[0]` = 2 more values like those: must be each as the message above says");
    let unwritten: Vec<Value> = (0..7).map(|i| json!(2 * i)).collect();
    let got = parse_input(&json!({"phases": [{"reads": [unwritten]}]}), &small()).unwrap_err().0;
    assert_eq!(got.len(), 6);
    assert_eq!(got[5].to_string(), "input `phases[0]` = 2 more values like those: must be each as the message above says");
}

// ---- random workloads ----

/// The input file of a workload (the inverse of `parse_input`).
fn to_input(w: &Workload) -> Value {
    let phases: Vec<Value> = w
        .phases
        .iter()
        .map(|ph| {
            let writes: Vec<Vec<Value>> = ph
                .writes
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|x| json!({"addr": x.addr, "data": format!("0x{}", x.data.to_str_radix(16)), "strb": format!("{:#x}", x.strb)}))
                        .collect()
                })
                .collect();
            json!({"reads": ph.reads, "writes": writes})
        })
        .collect();
    json!({ "phases": phases })
}

fn points() -> Vec<ScratchpadParams> {
    let mut v: Vec<ScratchpadParams> = ScratchpadParams::presets().into_iter().map(|(_, p)| p).collect();
    v.push(ScratchpadParams { banks: 1, words: 16, data_bits: 8, read_ports: 4, write_ports: 4 });
    v.push(ScratchpadParams { banks: 8, words: 16, data_bits: 128, read_ports: 1, write_ports: 1 });
    v.push(ScratchpadParams { banks: 2, words: 16384, data_bits: 64, read_ports: 3, write_ports: 2 });
    for p in &v {
        p.validate().unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
    v
}

#[test]
fn random_workloads_agree_with_the_reference() {
    for (i, p) in points().iter().enumerate() {
        for seed in 0..60u64 {
            let mut rng = Rng::new(seed * 1000 + i as u64);
            let w = random_workload(&mut rng, p, 6, 6, false);
            let back = parse_input(&to_input(&w), p).unwrap_or_else(|e| panic!("{p:?} seed {seed}: {e}"));
            assert_eq!(back, w, "{p:?} seed {seed}");
            sim(p, &w);
        }
    }
}

#[test]
fn random_workloads_reach_the_corners() {
    #[derive(Default, Debug)]
    struct Seen {
        lost_to_port: bool,
        lost_to_write: bool,
        read_after_write: bool,
        empty_phase: bool,
        partial_strb: bool,
        twice: bool,
        last_word: bool,
        hazard_rejected: bool,
    }
    for p in points() {
        let mut s = Seen::default();
        let db = p.data_bytes() as u64;
        let full = ((1u64 << db) - 1) as u32;
        let last = (1u64 << p.addr_bits()) - db;
        for seed in 0..60u64 {
            let hazards = seed % 2 == 1;
            let w = random_workload(&mut Rng::new(seed), &p, 6, 6, hazards);
            let (_, t) = simulate(&p, &w);
            s.lost_to_port |= t.lost_to_port > 0;
            s.lost_to_write |= t.lost_to_write > 0;
            for (i, ph) in w.phases.iter().enumerate() {
                let written = |a: u64| ph.writes.iter().flatten().any(|x| x.addr == a);
                s.empty_phase |= ph.reads.iter().all(|l| l.is_empty()) && ph.writes.iter().all(|l| l.is_empty());
                s.partial_strb |= ph.writes.iter().flatten().any(|x| x.strb != full);
                s.twice |= ph.writes.iter().any(|l| l.iter().enumerate().any(|(j, x)| l[..j].iter().any(|y| y.addr == x.addr)));
                s.last_word |= ph.writes.iter().flatten().any(|x| x.addr == last);
                if i > 0 {
                    let prev = &w.phases[i - 1];
                    s.read_after_write |= ph.reads.iter().flatten().any(|&a| prev.writes.iter().flatten().any(|x| x.addr == a) && !written(a));
                }
            }
            if hazards {
                s.hazard_rejected |= parse_input(&to_input(&w), &p).is_err();
            } else {
                sim(&p, &w);
            }
        }
        assert!(s.lost_to_write && s.read_after_write && s.empty_phase, "{p:?}: {s:?}");
        // One port of each kind: a port can only lose to the write of its row.
        assert!(s.lost_to_port || p.read_ports + p.write_ports == 2, "{p:?}: {s:?}");
        assert!(s.partial_strb && s.twice && s.last_word && s.hazard_rejected, "{p:?}: {s:?}");
    }
}
