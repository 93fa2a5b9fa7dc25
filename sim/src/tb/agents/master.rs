//! The master side of a native memory port (the design answers): a request
//! stream source and a response stream sink, plus the port's ordering
//! rules. For testing what sits between masters and a memory (an arbiter).

use super::{w64, Agent, Expect, NativePort, Pace, StreamSink, StreamSource};
use crate::cosim::Sim;

#[derive(Clone, Debug)]
pub struct ReadRequest {
    pub addr: u64,
    /// Beats - 1 (0 on a port without `len`).
    pub len: u64,
    pub tag: u64,
}

/// Issues read requests in order and collects the response beats, which
/// must come in request order, `len + 1` a request, each with its
/// request's tag.
pub struct ReadMaster {
    name: String,
    port: NativePort,
    requests: Vec<ReadRequest>,
    req: StreamSource,
    rsp: StreamSink,
    /// Beats each request has, summed: request i's beats end at `ends[i]`.
    ends: Vec<usize>,
}

impl ReadMaster {
    /// On `port` (found with [`NativePort::slave`]).
    pub fn new(port: NativePort, requests: Vec<ReadRequest>) -> ReadMaster {
        assert!(!port.is_write(), "{}: a write port", port.name);
        let name = port.name.clone();
        let mut req = StreamSource::new(&format!("{name} requests"), port.req_valid, port.req_ready, port.req_fields());
        let mut ends = Vec::with_capacity(requests.len());
        let mut beats = 0;
        for r in &requests {
            let mut v = vec![w64(r.addr)];
            v.extend(port.req_len.map(|_| w64(r.len)));
            v.extend(port.req_tag.map(|_| w64(r.tag)));
            let refs: Vec<&[u32]> = v.iter().map(|w| &w[..]).collect();
            req.push(req.fields().pack(&refs));
            beats += r.len as usize + 1;
            ends.push(beats);
        }
        let rsp = StreamSink::new(&format!("{name} responses"), port.rsp_valid, port.rsp_ready, port.rsp_fields())
            .expect(Expect::Items(beats));
        ReadMaster { name, port, requests, req, rsp, ends }
    }

    /// Random holds before each request (`req_pct`) and back-pressure on
    /// the responses (`rsp_pct`).
    pub fn random(mut self, seed: u64, req_pct: u32, rsp_pct: u32) -> ReadMaster {
        self.req = self.req.seed(seed).pace(Pace::Random(req_pct));
        self.rsp = self.rsp.seed(seed).pace(Pace::Random(rsp_pct));
        self
    }

    /// The request and response paces (e.g. patterns of given cycles).
    pub fn paces(mut self, req: Pace, rsp: Pace) -> ReadMaster {
        self.req = self.req.pace(req);
        self.rsp = self.rsp.pace(rsp);
        self
    }

    /// The cycle each response beat was taken.
    pub fn beat_cycles(&self) -> &[u64] {
        self.rsp.cycles()
    }

    /// The data beats of request `i`.
    pub fn data(&self, i: usize) -> Vec<&[u32]> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (start..self.ends[i].min(self.rsp.items().len())).map(|b| self.rsp.field(b, 0)).collect()
    }
    /// The cycle each request was taken.
    pub fn taken(&self) -> &[u64] {
        self.req.taken()
    }
}

impl Agent for ReadMaster {
    fn name(&self) -> &str {
        &self.name
    }
    fn drive(&mut self, sim: &mut Sim) {
        self.req.drive(sim);
        self.rsp.drive(sim);
    }
    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        self.req.sample(sim)?;
        let before = self.rsp.items().len();
        self.rsp.sample(sim)?;
        if self.rsp.items().len() > before {
            // The beat belongs to the first request not yet fully answered.
            let i = self.ends.partition_point(|&e| e <= before);
            if i >= self.req.taken().len() {
                return Err(format!("a response beat (beat {before}) with no request taken for it"));
            }
            if self.port.rsp_tag.is_some() {
                let tag = self.rsp.field_u64(before, 1);
                if tag != self.requests[i].tag {
                    return Err(format!("response beat {before}, of request {i}: tag {tag}, the request's is {}", self.requests[i].tag));
                }
            }
        }
        Ok(())
    }
    fn done(&self) -> bool {
        self.req.done() && self.rsp.done()
    }
    fn waiting(&self) -> String {
        format!("{}; response {}", self.req.waiting(), self.rsp.waiting())
    }
    fn progress(&self) -> u64 {
        self.req.progress() + self.rsp.progress()
    }
}

#[derive(Clone, Debug)]
pub struct WriteBurst {
    pub addr: u64,
    pub tag: u64,
    /// Each beat's data and byte strobes, as port words.
    pub beats: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Issues write bursts in order (one request beat a cycle at the most,
/// the burst's address, len and tag on every beat) and collects one
/// response a burst, in order, each after its burst's last beat.
pub struct WriteMaster {
    name: String,
    port: NativePort,
    bursts: Vec<WriteBurst>,
    req: StreamSource,
    rsp: StreamSink,
    /// Beats up to the end of burst i.
    ends: Vec<usize>,
}

impl WriteMaster {
    pub fn new(port: NativePort, bursts: Vec<WriteBurst>) -> WriteMaster {
        assert!(port.is_write(), "{}: a read port", port.name);
        let name = port.name.clone();
        let mut req = StreamSource::new(&format!("{name} requests"), port.req_valid, port.req_ready, port.req_fields());
        let mut ends = Vec::with_capacity(bursts.len());
        let mut n = 0;
        for b in &bursts {
            assert!(port.req_len.is_some() || b.beats.len() == 1, "{name}: a burst on a port without len");
            let len = b.beats.len() as u64 - 1;
            for (k, (data, strb)) in b.beats.iter().enumerate() {
                let mut v: Vec<Vec<u32>> = vec![w64(b.addr).to_vec()];
                v.extend(port.req_len.map(|_| w64(len).to_vec()));
                v.extend(port.req_tag.map(|_| w64(b.tag).to_vec()));
                v.push(data.clone());
                v.push(strb.clone());
                v.extend(port.req_last.map(|_| w64((k as u64 == len) as u64).to_vec()));
                let refs: Vec<&[u32]> = v.iter().map(|w| &w[..]).collect();
                req.push(req.fields().pack(&refs));
            }
            n += b.beats.len();
            ends.push(n);
        }
        let rsp = StreamSink::new(&format!("{name} responses"), port.rsp_valid, port.rsp_ready, port.rsp_fields())
            .expect(Expect::Items(bursts.len()));
        WriteMaster { name, port, bursts, req, rsp, ends }
    }

    pub fn random(mut self, seed: u64, req_pct: u32, rsp_pct: u32) -> WriteMaster {
        self.req = self.req.seed(seed).pace(Pace::Random(req_pct));
        self.rsp = self.rsp.seed(seed).pace(Pace::Random(rsp_pct));
        self
    }
    /// The cycle each burst's response was taken.
    pub fn responses(&self) -> &[u64] {
        self.rsp.cycles()
    }
}

impl Agent for WriteMaster {
    fn name(&self) -> &str {
        &self.name
    }
    fn drive(&mut self, sim: &mut Sim) {
        self.req.drive(sim);
        self.rsp.drive(sim);
    }
    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        self.req.sample(sim)?;
        let k = self.rsp.items().len();
        self.rsp.sample(sim)?;
        if self.rsp.items().len() > k {
            if self.req.taken().len() < self.ends[k] {
                return Err(format!("the response to burst {k} before its last beat was taken"));
            }
            if self.port.rsp_tag.is_some() {
                let tag = self.rsp.field_u64(k, 0);
                if tag != self.bursts[k].tag {
                    return Err(format!("response {k}: tag {tag}, the burst's is {}", self.bursts[k].tag));
                }
            }
        }
        Ok(())
    }
    fn done(&self) -> bool {
        self.req.done() && self.rsp.done()
    }
    fn waiting(&self) -> String {
        format!("{}; response {}", self.req.waiting(), self.rsp.waiting())
    }
    fn progress(&self) -> u64 {
        self.req.progress() + self.rsp.progress()
    }
}
