//! The testbench agents against hand-written Verilog: designs of wires that
//! hand one agent's signals to another (a native master to a native memory
//! responder, a stream source to a sink, an AXI4 master written here to the
//! AXI4 slave), random traffic checked against the shared memory, the
//! documented deterministic timing, and every protocol check made to fire
//! by a scripted counterpart that breaks the rule.

use gpurtl_sim::cosim::{compile, Compiled, CosimError, DesignSpec, PortDir, PortHandle, PortSpec, Sim};
use gpurtl_sim::mem::Memory;
use gpurtl_sim::rng::Rng;
use gpurtl_sim::tb::agents::*;

/// A design of wires: each `(input, output, width)` drives the output from
/// the input.
fn wires(top: &str, links: &[(&str, &str, u32)]) -> Compiled {
    let mut ports = Vec::new();
    let mut body = String::new();
    for &(i, o, w) in links {
        ports.push(PortSpec { name: i.into(), width: w, dir: PortDir::Input });
        ports.push(PortSpec { name: o.into(), width: w, dir: PortDir::Output });
        body += &format!("  assign {o} = {i};\n");
    }
    let decl: Vec<String> = ports
        .iter()
        .map(|p| {
            let dir = if p.dir == PortDir::Input { "input" } else { "output" };
            format!("  {dir} wire [{}:0] {}", p.width - 1, p.name)
        })
        .collect();
    let verilog = format!("module {top} (\n{}\n);\n{body}endmodule\n", decl.join(",\n"));
    compile(&DesignSpec { top: top.into(), verilog, ports, clock: String::new() }).expect("verilator build")
}

/// A native read port and a native write port, slave side `s`/`ws` (driven
/// by master agents) wired to master side `m`/`wm` (answered by responders).
fn native_design() -> Compiled {
    let mut l: Vec<(String, String, u32)> = Vec::new();
    for (s, m, write) in [("s", "m", false), ("ws", "wm", true)] {
        let mut req = vec![("valid", 1), ("addr", 32), ("len", 2), ("tag", 3)];
        if write {
            req.extend([("data", 64), ("strb", 8), ("last", 1)]);
        }
        for (f, w) in req {
            l.push((format!("{s}_req_{f}_i"), format!("{m}_req_{f}_o"), w));
        }
        l.push((format!("{m}_req_ready_i"), format!("{s}_req_ready_o"), 1));
        l.push((format!("{m}_rsp_valid_i"), format!("{s}_rsp_valid_o"), 1));
        l.push((format!("{m}_rsp_tag_i"), format!("{s}_rsp_tag_o"), 3));
        if !write {
            l.push((format!("{m}_rsp_data_i"), format!("{s}_rsp_data_o"), 64));
        }
        l.push((format!("{s}_rsp_ready_i"), format!("{m}_rsp_ready_o"), 1));
    }
    let links: Vec<(&str, &str, u32)> = l.iter().map(|(a, b, w)| (a.as_str(), b.as_str(), *w)).collect();
    wires("agents_native", &links)
}

/// Sets the given inputs cycle by cycle (a counterpart that breaks a rule);
/// done once its steps are over.
struct Script {
    steps: Vec<Vec<(PortHandle, u64)>>,
    at: usize,
}

impl Script {
    fn new(steps: Vec<Vec<(PortHandle, u64)>>) -> Script {
        Script { steps, at: 0 }
    }
}

impl Agent for Script {
    fn name(&self) -> &str {
        "script"
    }
    fn drive(&mut self, sim: &mut Sim) {
        if let Some(s) = self.steps.get(self.at) {
            for &(p, v) in s {
                sim.set(p, v);
            }
        }
        self.at += 1;
    }
    fn sample(&mut self, _: &Sim) -> Result<(), String> {
        Ok(())
    }
    fn done(&self) -> bool {
        self.at >= self.steps.len()
    }
    fn waiting(&self) -> String {
        format!("step {} of {}", self.at, self.steps.len())
    }
}

fn random_memory(rng: &mut Rng, base: u64, len: usize) -> Memory {
    let mut m = Memory::new();
    let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    m.load(base, &bytes);
    m
}

/// A mismatch whose message has `want` in it.
fn expect_mismatch(r: Result<(), CosimError>, want: &str) {
    match r {
        Err(CosimError::Mismatch(m)) if m.contains(want) => eprintln!("caught: {m}"),
        other => panic!("expected a mismatch about {want:?}, got {other:?}"),
    }
}

#[test]
fn native_masters_and_responders_move_the_right_bytes() {
    let c = native_design();
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let mem = shared(random_memory(&mut rng, 0, 4096));
        let mut sim = c.instantiate().unwrap();
        // Reads of the low 2 KB, writes to the high 2 KB: no order between them.
        let reads: Vec<ReadRequest> = (0..1 + rng.below(30))
            .map(|_| ReadRequest { addr: 8 * rng.below(200), len: rng.below(4), tag: rng.below(8) })
            .collect();
        let mut want = mem.borrow().clone();
        let bursts: Vec<WriteBurst> = (0..1 + rng.below(20))
            .map(|_| {
                let addr = 2048 + 8 * rng.below(200);
                let beats = (0..1 + rng.below(4))
                    .map(|_| (vec![rng.next_u64() as u32, rng.next_u64() as u32], vec![rng.below(256) as u32]))
                    .collect::<Vec<_>>();
                for (k, (d, s)) in beats.iter().enumerate() {
                    want.write_beat(addr + 8 * k as u64, 8, d, Some(s));
                }
                WriteBurst { addr, tag: rng.below(8), beats }
            })
            .collect();
        let stalls = seed % 4 != 0;
        let pct = |rng: &mut Rng| if stalls { rng.below(80) as u32 } else { 0 };
        let (a, b, cc, d) = (pct(&mut rng), pct(&mut rng), pct(&mut rng), pct(&mut rng));
        let mut rm = NativeMaster::reads(NativePort::slave(&sim, "s").unwrap(), &reads).random(seed, a, b);
        let n_bursts = bursts.len();
        let mut wm = NativeMaster::writes(NativePort::slave(&sim, "ws").unwrap(), &bursts).random(seed, cc, d);
        let rnd = MemRandom { seed, latency: (1, 1 + rng.below(10) as u32), req_stall: pct(&mut rng), rsp_stall: pct(&mut rng) };
        let mut rr = MemResponder::new(NativePort::master(&sim, "m").unwrap(), mem.clone(), 3);
        let mut wr = MemResponder::new(NativePort::master(&sim, "wm").unwrap(), mem.clone(), 2);
        if stalls {
            rr = rr.random(rnd);
            wr = wr.random(MemRandom { seed: seed + 1, ..rnd });
        }
        Bench::new(20_000).run(&mut sim, &mut [&mut rm, &mut wm, &mut rr, &mut wr]).unwrap();
        for (i, r) in reads.iter().enumerate() {
            let got = rm.data(i);
            assert_eq!(got.len() as u64, r.len + 1);
            for (k, beat) in got.iter().enumerate() {
                assert_eq!(beat.to_vec(), want.read_words(r.addr + 8 * k as u64, 8), "seed {seed} read {i} beat {k}");
            }
        }
        assert_eq!(mem.borrow().first_difference(&want, 0, 4096), None, "seed {seed}");
        assert_eq!(wm.responses().len(), n_bursts);
    }
}

/// The rule of responder.rs without randomness: an answer is offered from
/// `t + L` (t: the request's handshake) and not before the cycle after the
/// previous answer was taken; here, with the master's ready low in some
/// cycles, the cycle each beat is taken follows from it exactly.
#[test]
fn native_responder_keeps_the_documented_timing() {
    let c = native_design();
    for (latency, lens) in [(1u32, vec![0u64, 0, 0, 2, 0]), (4, vec![0, 1, 0, 0, 3, 0, 0]), (7, vec![2, 0, 0])] {
        let mut sim = c.instantiate().unwrap();
        let mem = shared(Memory::new());
        let reqs: Vec<ReadRequest> = lens.iter().enumerate().map(|(i, &len)| ReadRequest { addr: 64 * i as u64, len, tag: i as u64 % 8 }).collect();
        let low = |c: u64| c % 5 == 3 || c.is_multiple_of(7);
        let mut rm = NativeMaster::reads(NativePort::slave(&sim, "s").unwrap(), &reqs).paces(Pace::Steady, Pace::Pattern(Box::new(low)));
        let mut rr = MemResponder::new(NativePort::master(&sim, "m").unwrap(), mem, latency);
        Bench::new(1000).run(&mut sim, &mut [&mut rm, &mut rr]).unwrap();
        // Requests go one a cycle from cycle 0 (the responder is always ready).
        let t = rm.taken().to_vec();
        assert_eq!(t, (0..reqs.len() as u64).collect::<Vec<_>>());
        let mut want = Vec::new();
        let mut prev: Option<u64> = None;
        for (i, r) in reqs.iter().enumerate() {
            for _ in 0..=r.len {
                let mut c = (t[i] + latency as u64).max(prev.map_or(0, |p| p + 1));
                while low(c) {
                    c += 1;
                }
                want.push(c);
                prev = Some(c);
            }
        }
        assert_eq!(rm.responses(), &want[..], "latency {latency}");
    }
}

#[test]
fn stream_sink_catches_a_changed_payload_and_a_withdrawn_offer() {
    let c = wires("agents_stream", &[("in_valid_i", "out_valid_o", 1), ("in_data_i", "out_data_o", 16), ("out_ready_i", "in_ready_o", 1)]);
    let run = |steps: &[(u64, u64)]| {
        let mut sim = c.instantiate().unwrap();
        let (v, d) = (sim.port("in_valid_i").unwrap(), sim.port("in_data_i").unwrap());
        let mut script = Script::new(steps.iter().map(|&(valid, data)| vec![(v, valid), (d, data)]).collect());
        // Not ready in cycles 0..3.
        let mut sink = StreamSink::find(&sim, "out", &["data"]).unwrap().pace(Pace::Pattern(Box::new(|c| c < 3)));
        Bench::new(100).run(&mut sim, &mut [&mut script, &mut sink]).map(|_| sink.items().len())
    };
    // Held until taken in cycle 3: fine (junk on data while valid is low is fine).
    assert_eq!(run(&[(0, 9), (1, 5), (1, 5), (1, 5), (0, 77)]).unwrap(), 1);
    expect_mismatch(run(&[(1, 5), (1, 6), (1, 6), (1, 6)]).map(|_| ()), "out_data_o changed");
    expect_mismatch(run(&[(1, 5), (0, 5), (1, 5), (1, 5)]).map(|_| ()), "withdrawn");
    // An item past the expected count.
    let mut sim = c.instantiate().unwrap();
    let (v, d) = (sim.port("in_valid_i").unwrap(), sim.port("in_data_i").unwrap());
    let mut script = Script::new(vec![vec![(v, 1), (d, 1)], vec![(v, 1), (d, 2)], vec![(v, 0)]]);
    let mut sink = StreamSink::find(&sim, "out", &["data"]).unwrap().expect(Expect::Items(1));
    expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut script, &mut sink]), "an item after the 1 expected");
    // A source never withdraws: random holds, every item once, in order.
    let mut sim = c.instantiate().unwrap();
    let mut src = StreamSource::find(&sim, "in", &["data"]).unwrap().seed(3).pace(Pace::Random(50));
    for i in 0..50 {
        src.push(src.fields().pack_u64(&[i]));
    }
    let mut sink = StreamSink::find(&sim, "out", &["data"]).unwrap().seed(3).pace(Pace::Random(50)).expect(Expect::Items(50));
    Bench::new(1000).run(&mut sim, &mut [&mut src, &mut sink]).unwrap();
    assert_eq!((0..50).map(|i| sink.field_u64(i, 0)).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
    assert_eq!(src.taken(), sink.cycles());
}

#[test]
fn a_hang_names_what_each_agent_waits_for() {
    let c = wires("agents_stream", &[("in_valid_i", "out_valid_o", 1), ("in_data_i", "out_data_o", 16), ("out_ready_i", "in_ready_o", 1)]);
    let mut sim = c.instantiate().unwrap();
    let mut src = StreamSource::find(&sim, "in", &["data"]).unwrap();
    src.push(src.fields().pack_u64(&[1]));
    let mut sink = StreamSink::find(&sim, "out", &["data"]).unwrap().pace(Pace::Pattern(Box::new(|_| true)));
    match Bench::new(50).run(&mut sim, &mut [&mut src, &mut sink]) {
        Err(CosimError::Hang(m)) => assert!(m.contains("in waits for item 0 of 1 to be taken (offered, not taken)"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn native_checks_fire() {
    let c = native_design();
    let never = MemRandom { seed: 1, latency: (1, 1), req_stall: 100, rsp_stall: 0 };
    // The responder: a request changed before it was taken.
    let mut sim = c.instantiate().unwrap();
    let (v, a) = (sim.port("s_req_valid_i").unwrap(), sim.port("s_req_addr_i").unwrap());
    let mut s = Script::new(vec![vec![(v, 1), (a, 8)], vec![(v, 1), (a, 16)]]);
    let mut rr = MemResponder::new(NativePort::master(&sim, "m").unwrap(), shared(Memory::new()), 1).random(never);
    expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut rr]), "m_req_addr_o changed");
    // ... and an address that is not a beat's.
    let mut sim = c.instantiate().unwrap();
    let mut s = Script::new(vec![vec![(v, 1), (a, 12)], vec![(v, 0)]]);
    let mut rr = MemResponder::new(NativePort::master(&sim, "m").unwrap(), shared(Memory::new()), 1);
    expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut rr]), "not a beat (8 bytes) address");
    // The write responder: `last` on the wrong beat, and a beat of another address.
    for (addr2, last1, want) in [(0x40, 0, "wm_req_last_o = 0"), (0x48, 1, "the burst's first beat had")] {
        let mut sim = c.instantiate().unwrap();
        let p = |n: &str| sim.port(&format!("ws_req_{n}_i")).unwrap();
        let (v, a, l, last) = (p("valid"), p("addr"), p("len"), p("last"));
        let mut s = Script::new(vec![vec![(v, 1), (a, 0x40), (l, 1), (last, 0)], vec![(v, 1), (a, addr2), (l, 1), (last, last1)], vec![(v, 0)]]);
        let mut wr = MemResponder::new(NativePort::master(&sim, "wm").unwrap(), shared(Memory::new()), 1);
        expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut wr]), want);
    }
    // The read master: a response with another request's tag, and one with no request.
    for (lat_tag, want) in [(5u64, "response 0, to request 0: tag 5, the request's is 1"), (99, "with no request taken")] {
        let mut sim = c.instantiate().unwrap();
        let p = |n: &str| sim.port(&format!("m_rsp_{n}_i")).unwrap();
        let (v, t) = (p("valid"), p("tag"));
        let ready = sim.port("m_req_ready_i").unwrap();
        let steps = if lat_tag == 99 {
            vec![vec![(v, 1), (t, 1)]]
        } else {
            vec![vec![(ready, 1)], vec![(v, 1), (t, lat_tag)], vec![(v, 0)]]
        };
        let mut s = Script::new(steps);
        let mut rm = NativeMaster::reads(NativePort::slave(&sim, "s").unwrap(), &[ReadRequest { addr: 0, len: 0, tag: 1 }]);
        expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut rm]), want);
    }
    // The write master: a response before the burst's last beat.
    let mut sim = c.instantiate().unwrap();
    let (ready, v) = (sim.port("wm_req_ready_i").unwrap(), sim.port("wm_rsp_valid_i").unwrap());
    let mut s = Script::new(vec![vec![(ready, 1), (v, 1)]]);
    let beat = (vec![0, 0], vec![0xff]);
    let mut wmst = NativeMaster::writes(NativePort::slave(&sim, "ws").unwrap(), &[WriteBurst { addr: 0, tag: 0, beats: vec![beat.clone(), beat] }]);
    expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut wmst]), "before its last beat");
}

// ---------------------------------------------------------------------------
// AXI4
// ---------------------------------------------------------------------------

const AW: &[(&str, u32)] = &[("id", 4), ("addr", 32), ("len", 8), ("size", 3), ("burst", 2), ("lock", 1), ("cache", 4), ("prot", 3), ("qos", 4)];

/// `t_*` (driven by the master written below) wired to `m_axi_*` (the
/// slave agent's): 64-bit data.
fn axi_design() -> Compiled {
    let mut l: Vec<(String, String, u32)> = Vec::new();
    let mut fwd = |n: &str, w: u32| l.push((format!("t_{n}"), format!("m_axi_{n}"), w));
    for ch in ["aw", "ar"] {
        fwd(&format!("{ch}valid"), 1);
        for (f, w) in AW {
            fwd(&format!("{ch}{f}"), *w);
        }
    }
    for (n, w) in [("wvalid", 1), ("wdata", 64), ("wstrb", 8), ("wlast", 1), ("bready", 1), ("rready", 1)] {
        fwd(n, w);
    }
    for (n, w) in [("awready", 1), ("wready", 1), ("arready", 1), ("bvalid", 1), ("bid", 4), ("bresp", 2)]
        .into_iter()
        .chain([("rvalid", 1), ("rid", 4), ("rdata", 64), ("rresp", 2), ("rlast", 1)])
    {
        l.push((format!("m_axi_{n}"), format!("t_{n}"), w));
    }
    let links: Vec<(&str, &str, u32)> = l.iter().map(|(a, b, w)| (a.as_str(), b.as_str(), *w)).collect();
    wires("agents_axi", &links)
}

#[derive(Clone, Debug)]
struct AxBurst {
    id: u64,
    addr: u64,
    len: u64,
}

/// An AXI4 master for the tests: ARs, AWs and W beats each from a queue
/// with random holds (W beats in AW order, free to run ahead of their AW),
/// random RREADY/BREADY; checks what a master sees: R and B held until
/// taken, RID/BID of a burst outstanding, RLAST on each burst's last beat,
/// one ID's bursts answered in order. Records each R beat's data and cycle.
struct AxiMaster {
    ar: StreamSource,
    aw: StreamSource,
    w: StreamSource,
    r: StreamSink,
    b: StreamSink,
    reads: Vec<AxBurst>,
    writes: Vec<AxBurst>,
    /// Per read burst: its beats' data and cycles.
    r_data: Vec<Vec<(Vec<u32>, u64)>>,
    b_cycle: Vec<Option<u64>>,
    w_beats_before: Vec<usize>,
}

impl AxiMaster {
    fn new(sim: &Sim, reads: Vec<AxBurst>, writes: Vec<(AxBurst, Vec<(u64, u64)>)>) -> AxiMaster {
        let t = |n: &str| sim.port(&format!("t_{n}")).unwrap();
        let ch = |c: &str| Fields::new(AW.iter().map(|(f, _)| t(&format!("{c}{f}"))).collect());
        let mut ar = StreamSource::new("AR", t("arvalid"), t("arready"), ch("ar"));
        let mut aw = StreamSource::new("AW", t("awvalid"), t("awready"), ch("aw"));
        let mut w = StreamSource::new("W", t("wvalid"), t("wready"), Fields::new(vec![t("wdata"), t("wstrb"), t("wlast")]));
        for b in &reads {
            ar.push(ar.fields().pack_u64(&[b.id, b.addr, b.len, 3, 1, 0, 0, 0, 0]));
        }
        let mut w_beats_before = Vec::new();
        let mut n = 0;
        for (b, beats) in &writes {
            aw.push(aw.fields().pack_u64(&[b.id, b.addr, b.len, 3, 1, 0, 0, 0, 0]));
            for (k, &(d, s)) in beats.iter().enumerate() {
                w.push(w.fields().pack_u64(&[d, s, (k as u64 == b.len) as u64]));
            }
            n += beats.len();
            w_beats_before.push(n);
        }
        let r = StreamSink::new("R", t("rvalid"), t("rready"), Fields::new(vec![t("rid"), t("rdata"), t("rresp"), t("rlast")]))
            .expect(Expect::Items(reads.iter().map(|b| b.len as usize + 1).sum()));
        let b = StreamSink::new("B", t("bvalid"), t("bready"), Fields::new(vec![t("bid"), t("bresp")])).expect(Expect::Items(writes.len()));
        AxiMaster {
            ar,
            aw,
            w,
            r,
            b,
            r_data: vec![Vec::new(); reads.len()],
            b_cycle: vec![None; writes.len()],
            reads,
            writes: writes.into_iter().map(|x| x.0).collect(),
            w_beats_before,
        }
    }

    fn random(mut self, seed: u64, pct: [u32; 5]) -> AxiMaster {
        self.ar = self.ar.seed(seed).pace(Pace::Random(pct[0]));
        self.aw = self.aw.seed(seed).pace(Pace::Random(pct[1]));
        self.w = self.w.seed(seed).pace(Pace::Random(pct[2]));
        self.r = self.r.seed(seed).pace(Pace::Random(pct[3]));
        self.b = self.b.seed(seed).pace(Pace::Random(pct[4]));
        self
    }
}

impl Agent for AxiMaster {
    fn name(&self) -> &str {
        "test AXI4 master"
    }
    fn drive(&mut self, sim: &mut Sim) {
        for a in [&mut self.ar as &mut dyn Agent, &mut self.aw, &mut self.w, &mut self.r, &mut self.b] {
            a.drive(sim);
        }
    }
    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        let (nr, nb) = (self.r.items().len(), self.b.items().len());
        for a in [&mut self.ar as &mut dyn Agent, &mut self.aw, &mut self.w, &mut self.r, &mut self.b] {
            a.sample(sim)?;
        }
        if self.r.items().len() > nr {
            let (id, last) = (self.r.field_u64(nr, 0), self.r.field_u64(nr, 3) == 1);
            if self.r.field_u64(nr, 2) != 0 {
                return Err("RRESP is not OKAY".into());
            }
            // The oldest burst of this ID taken on AR and not yet complete.
            let taken = self.ar.taken().len();
            let Some(i) = (0..taken).find(|&i| self.reads[i].id == id && self.r_data[i].len() as u64 <= self.reads[i].len) else {
                return Err(format!("an R beat with RID {id}, no burst of that ID outstanding"));
            };
            self.r_data[i].push((self.r.field(nr, 1).to_vec(), now));
            if last != (self.r_data[i].len() as u64 == self.reads[i].len + 1) {
                return Err(format!("read burst {i}: RLAST = {} on beat {}", last as u8, self.r_data[i].len() - 1));
            }
        }
        if self.b.items().len() > nb {
            let id = self.b.field_u64(nb, 0);
            let (aws, ws) = (self.aw.taken().len(), self.w.taken().len());
            let Some(i) = (0..aws).find(|&i| self.writes[i].id == id && self.b_cycle[i].is_none()) else {
                return Err(format!("a B with BID {id}, no burst of that ID outstanding"));
            };
            if ws < self.w_beats_before[i] {
                return Err(format!("the B of write burst {i} before its last W beat"));
            }
            self.b_cycle[i] = Some(now);
        }
        Ok(())
    }
    fn done(&self) -> bool {
        self.r.done() && self.b.done() && self.ar.done() && self.aw.done() && self.w.done()
    }
    fn waiting(&self) -> String {
        format!("R {}, B {}", self.r.waiting(), self.b.waiting())
    }
    fn progress(&self) -> u64 {
        self.r.progress() + self.b.progress() + self.ar.progress() + self.aw.progress() + self.w.progress()
    }
}

/// Bursts within 4 KB pages, `region` bytes from `base`.
fn ax_bursts(rng: &mut Rng, n: u64, base: u64, region: u64) -> Vec<AxBurst> {
    (0..n)
        .map(|_| {
            let len = if rng.chance(20) { rng.below(256) } else { rng.below(8) };
            let page = base + 4096 * rng.below(region / 4096);
            let room = 512 - (len + 1);
            AxBurst { id: rng.below(4), addr: page + 8 * rng.below(room + 1), len }
        })
        .collect()
}

#[test]
fn axi_slave_serves_a_random_master() {
    let c = axi_design();
    for seed in 0..30u64 {
        let mut rng = Rng::new(seed + 1000);
        let mem = shared(random_memory(&mut rng, 0, 16384));
        let mut want = mem.borrow().clone();
        let (nr, nw) = (1 + rng.below(12), 1 + rng.below(12));
        let reads = ax_bursts(&mut rng, nr, 0, 8192);
        let writes: Vec<(AxBurst, Vec<(u64, u64)>)> = ax_bursts(&mut rng, nw, 8192, 8192)
            .into_iter()
            .map(|b| {
                let beats: Vec<(u64, u64)> = (0..=b.len).map(|_| (rng.next_u64(), rng.below(256))).collect();
                for (k, &(d, s)) in beats.iter().enumerate() {
                    want.write_beat(b.addr + 8 * k as u64, 8, &[d as u32, (d >> 32) as u32], Some(&[s as u32]));
                }
                (b, beats)
            })
            .collect();
        let mut sim = c.instantiate().unwrap();
        let pct = |rng: &mut Rng| rng.below(70) as u32;
        let mut m = AxiMaster::new(&sim, reads.clone(), writes.clone()).random(seed, [0; 5].map(|_| pct(&mut rng)));
        let r = AxiRandom {
            seed,
            latency: (0, 1 + rng.below(30) as u32),
            ar_stall: pct(&mut rng),
            aw_stall: pct(&mut rng),
            w_stall: pct(&mut rng),
            r_gap: pct(&mut rng),
            b_gap: pct(&mut rng),
        };
        let mut s = AxiSlave::new(&sim, "m_axi_", mem.clone(), 0).unwrap().random(r);
        Bench::new(100_000).run(&mut sim, &mut [&mut m, &mut s]).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // Overlapping writes land in AW order (W beats are in AW order).
        assert_eq!(mem.borrow().first_difference(&want, 0, 16384), None, "seed {seed}");
        for (i, b) in reads.iter().enumerate() {
            for (k, (d, _)) in m.r_data[i].iter().enumerate() {
                assert_eq!(d, &want.read_words(b.addr + 8 * k as u64, 8), "seed {seed} read {i} beat {k}");
            }
        }
    }
}

/// Reads and writes of several IDs with long latencies and bursts: the
/// slave interleaves R beats of different IDs and answers out of AR order
/// (both are what the random mode is for), never within an ID (the
/// master's checks).
#[test]
fn axi_slave_reorders_and_interleaves_across_ids() {
    let c = axi_design();
    let (mut interleaved, mut reordered) = (false, false);
    for seed in 0..10u64 {
        let mut rng = Rng::new(seed);
        let reads: Vec<AxBurst> = (0..12).map(|i| AxBurst { id: i % 4, addr: 4096 * (i % 3) + 512 * (i / 3), len: 3 + rng.below(8) }).collect();
        let mut sim = c.instantiate().unwrap();
        let mut m = AxiMaster::new(&sim, reads.clone(), Vec::new());
        let r = AxiRandom { seed, latency: (1, 40), ar_stall: 0, aw_stall: 0, w_stall: 0, r_gap: 30, b_gap: 0 };
        let mut s = AxiSlave::new(&sim, "m_axi_", shared(Memory::new()), 0).unwrap().random(r);
        Bench::new(100_000).run(&mut sim, &mut [&mut m, &mut s]).unwrap();
        let first: Vec<u64> = m.r_data.iter().map(|b| b[0].1).collect();
        let last: Vec<u64> = m.r_data.iter().map(|b| b.last().unwrap().1).collect();
        reordered |= first.windows(2).any(|w| w[1] < w[0]);
        interleaved |= (0..12).any(|i| (0..12).any(|j| i != j && first[i] < first[j] && first[j] < last[i]));
    }
    assert!(interleaved && reordered, "interleaved {interleaved} reordered {reordered}");
}

/// The deterministic rule in the AxiSlave doc comment, cycle for cycle,
/// with RREADY and BREADY low in some cycles and W beats before, with and
/// after their AW.
#[test]
fn axi_slave_deterministic_timing_is_the_documented_rule() {
    let c = axi_design();
    for latency in [1u32, 3, 10] {
        let mut sim = c.instantiate().unwrap();
        let reads: Vec<AxBurst> = [0u64, 3, 0, 1, 7].iter().enumerate().map(|(i, &len)| AxBurst { id: (i % 2) as u64, addr: 256 * i as u64, len }).collect();
        let writes: Vec<(AxBurst, Vec<(u64, u64)>)> = [1u64, 0, 2]
            .iter()
            .enumerate()
            .map(|(i, &len)| (AxBurst { id: 0, addr: 8192 + 256 * i as u64, len }, vec![(i as u64, 0xff); len as usize + 1]))
            .collect();
        let mut m = AxiMaster::new(&sim, reads.clone(), writes.clone());
        let r_low = |c: u64| c % 4 == 2;
        let b_low = |c: u64| c % 3 == 1;
        m.r = m.r.pace(Pace::Pattern(Box::new(r_low)));
        m.b = m.b.pace(Pace::Pattern(Box::new(b_low)));
        // AWs wait: the first W beats go before their AW.
        m.aw = m.aw.pace(Pace::Pattern(Box::new(|c| c < 4)));
        let mut s = AxiSlave::new(&sim, "m_axi_", shared(Memory::new()), latency).unwrap();
        Bench::new(10_000).run(&mut sim, &mut [&mut m, &mut s]).unwrap();
        let l = latency as u64;
        let first_ready = |mut c: u64, low: &dyn Fn(u64) -> bool| {
            while low(c) {
                c += 1;
            }
            c
        };
        let t_ar = m.ar.taken().to_vec();
        let mut prev: Option<u64> = None;
        for (i, b) in reads.iter().enumerate() {
            let mut offer = (t_ar[i] + l).max(prev.map_or(0, |p| p + 1));
            for k in 0..=b.len as usize {
                let take = first_ready(offer, &r_low);
                assert_eq!(m.r_data[i][k].1, take, "latency {latency} read {i} beat {k}");
                offer = take + 1;
                prev = Some(take);
            }
        }
        let (t_aw, t_w) = (m.aw.taken().to_vec(), m.w.taken().to_vec());
        assert!(t_w[0] < t_aw[0], "a W beat before its AW");
        let mut prev: Option<u64> = None;
        for i in 0..writes.len() {
            let t_wlast = t_w[m.w_beats_before[i] - 1];
            let offer = (t_aw[i].max(t_wlast) + l).max(prev.map_or(0, |p| p + 1));
            let take = first_ready(offer, &b_low);
            assert_eq!(m.b_cycle[i], Some(take), "latency {latency} write {i}");
            prev = Some(take);
        }
    }
}

#[test]
fn axi_slave_checks_fire() {
    let c = axi_design();
    // One AR or AW with fields broken; `want` in the mismatch.
    type Case<'a> = (&'a str, &'a [(&'a str, u64)], &'a str);
    let cases: &[Case] = &[
        ("ar", &[("burst", 2)], "ARBURST = 2"),
        ("ar", &[("size", 2)], "ARSIZE = 2"),
        ("ar", &[("addr", 4)], "not aligned"),
        ("ar", &[("addr", 4096 - 64), ("len", 8)], "crosses a 4 KB boundary"),
        ("ar", &[("lock", 1)], "m_axi_arlock = 1"),
        ("aw", &[("cache", 2)], "m_axi_awcache = 2"),
        ("aw", &[("qos", 1)], "m_axi_awqos = 1"),
        ("aw", &[("prot", 1)], "m_axi_awprot = 1"),
        ("aw", &[("addr", 8192 - 8), ("len", 1)], "crosses a 4 KB boundary"),
    ];
    for &(ch, set, want) in cases {
        let mut sim = c.instantiate().unwrap();
        let t = |n: &str| sim.port(&format!("t_{n}")).unwrap();
        let mut step = vec![(t(&format!("{ch}valid")), 1), (t(&format!("{ch}size")), 3), (t(&format!("{ch}burst")), 1)];
        step.extend(set.iter().map(|&(f, v)| (t(&format!("{ch}{f}")), v)));
        let mut s = Script::new(vec![step, vec![(t(&format!("{ch}valid")), 0)]]);
        let mut slave = AxiSlave::new(&sim, "m_axi_", shared(Memory::new()), 1).unwrap();
        expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut slave]), want);
    }
    // WLAST: early on a two-beat burst (W after AW, and W before AW), and missing on the last.
    for (w_first, lasts, want) in [(false, [1, 0], "beat 0 of 2"), (true, [1, 0], "beat 0 of 2"), (false, [0, 0], "beat 1 of 2")] {
        let mut sim = c.instantiate().unwrap();
        let t = |n: &str| sim.port(&format!("t_{n}")).unwrap();
        let aw = vec![(t("awvalid"), 1), (t("awsize"), 3), (t("awburst"), 1), (t("awlen"), 1)];
        let w = |last: u64| vec![(t("wvalid"), 1), (t("wlast"), last), (t("awvalid"), 0)];
        let steps = if w_first {
            vec![w(lasts[0]), w(lasts[1]), aw, vec![(t("awvalid"), 0), (t("wvalid"), 0)]]
        } else {
            vec![aw, w(lasts[0]), w(lasts[1]), vec![(t("wvalid"), 0)]]
        };
        let mut s = Script::new(steps);
        let mut slave = AxiSlave::new(&sim, "m_axi_", shared(Memory::new()), 1).unwrap();
        expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut slave]), want);
    }
    // Valid and payload held until ready, on AR, AW and W.
    let stall = AxiRandom { seed: 0, latency: (1, 1), ar_stall: 100, aw_stall: 100, w_stall: 100, r_gap: 0, b_gap: 0 };
    for (ch, field, v2, want) in [
        ("ar", "addr", 64, "AR: m_axi_araddr changed"),
        ("aw", "id", 3, "AW: m_axi_awid changed"),
        ("w", "data", 5, "W: m_axi_wdata changed"),
        ("w", "valid", 0, "W: valid fell"),
    ] {
        let mut sim = c.instantiate().unwrap();
        let t = |n: &str| sim.port(&format!("t_{n}")).unwrap();
        let f = t(&format!("{ch}{field}"));
        let mut s = Script::new(vec![vec![(t(&format!("{ch}valid")), 1)], vec![(f, v2)]]);
        let mut slave = AxiSlave::new(&sim, "m_axi_", shared(Memory::new()), 1).unwrap().random(stall);
        expect_mismatch(Bench::new(100).run(&mut sim, &mut [&mut s, &mut slave]), want);
    }
}

/// cbload's memory side is pluggable: on a design with `m_axi_arvalid` it is
/// the AXI4 slave over the views' memory (a wire design stands in for the
/// cbload RTL, whose AXI4 form tests/cbload.rs runs); the native responder on
/// `mem_req_*` is what tests/cbload.rs runs.
#[test]
fn cbload_memory_agent_follows_the_design_ports() {
    use gpurtl_sim::models::cbload::{View, Workload};
    use gpurtl_sim::tb::cbload::{memory_agent, view_memory};
    let c = axi_design();
    let data: Vec<u8> = (0..=255).collect();
    let w = Workload { mem_latency: 4, views: vec![View { base: 0x1000, size: 256, data }], init_regs: Vec::new(), instrs: Vec::new() };
    let mut sim = c.instantiate().unwrap();
    let mut mem = memory_agent(&sim, "", shared(view_memory(&w)), w.mem_latency, None).unwrap();
    assert_eq!(mem.name(), "AXI4 slave m_axi_");
    let reads = vec![AxBurst { id: 1, addr: 0x1000, len: 3 }, AxBurst { id: 2, addr: 0x10f8, len: 1 }];
    let mut m = AxiMaster::new(&sim, reads, Vec::new());
    Bench::new(1000).run(&mut sim, &mut [&mut m, &mut *mem]).unwrap();
    let beat = |a: u64| {
        let b: Vec<u8> = (0..8).map(|i| if (0x1000..0x1100).contains(&(a + i)) { (a + i - 0x1000) as u8 } else { 0 }).collect();
        vec![u32::from_le_bytes([b[0], b[1], b[2], b[3]]), u32::from_le_bytes([b[4], b[5], b[6], b[7]])]
    };
    assert_eq!(m.r_data[0].iter().map(|x| x.0.clone()).collect::<Vec<_>>(), (0..4).map(|k| beat(0x1000 + 8 * k)).collect::<Vec<_>>());
    // The second burst reads past the view's end: zeros.
    assert_eq!(m.r_data[1].iter().map(|x| x.0.clone()).collect::<Vec<_>>(), vec![beat(0x10f8), vec![0, 0]]);
    // The first beat at t + 1 (AR taken at cycle 0): the AXI memory's
    // latency is the native one less the arbiter and bridge's 3 cycles.
    assert_eq!(m.r_data[0][0].1, gpurtl_sim::tb::axi_latency(4) as u64);
    assert_eq!(gpurtl_sim::tb::axi_latency(4), 1);
    // Neither `m_axi_arvalid` nor `mem_req_valid_o`: an unknown port.
    let sim = native_design().instantiate().unwrap();
    assert!(matches!(memory_agent(&sim, "", shared(Memory::new()), 1, None), Err(CosimError::UnknownPort(p)) if p == "mem_req_valid_o"));
}
