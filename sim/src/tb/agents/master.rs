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

#[derive(Clone, Debug)]
pub struct WriteBurst {
    pub addr: u64,
    pub tag: u64,
    /// Each beat's data and byte strobes, as port words.
    pub beats: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Issues requests in order: on a read port, read requests, whose response
/// beats must come in request order, `len + 1` a request, each with its
/// request's tag; on a write port, write bursts (one request beat a cycle
/// at the most, the burst's address, len and tag on every beat), each
/// answered by one response, in order, after its last beat, with its tag.
pub struct NativeMaster {
    name: String,
    port: NativePort,
    /// Each request's tag.
    tags: Vec<u64>,
    req: StreamSource,
    rsp: StreamSink,
    /// Read port: response beats up to the end of request i. Write port:
    /// request beats up to the end of burst i.
    ends: Vec<usize>,
}

impl NativeMaster {
    /// Reads on `port` (found with [`NativePort::slave`]).
    pub fn reads(port: NativePort, requests: &[ReadRequest]) -> NativeMaster {
        assert!(!port.is_write(), "{}: a write port", port.name);
        let mut m = NativeMaster::on(port, requests.iter().map(|r| r.tag).collect());
        let mut beats = 0;
        for r in requests {
            let item = m.request_item(r.addr, r.len, r.tag, None);
            m.req.push(item);
            beats += r.len as usize + 1;
            m.ends.push(beats);
        }
        m.rsp = m.rsp.expect(Expect::Items(beats));
        m
    }

    /// Write bursts on `port`.
    pub fn writes(port: NativePort, bursts: &[WriteBurst]) -> NativeMaster {
        assert!(port.is_write(), "{}: a read port", port.name);
        let mut m = NativeMaster::on(port, bursts.iter().map(|b| b.tag).collect());
        let mut n = 0;
        for b in bursts {
            assert!(m.port.req_len.is_some() || b.beats.len() == 1, "{}: a burst on a port without len", m.name);
            let len = b.beats.len() as u64 - 1;
            for (k, (data, strb)) in b.beats.iter().enumerate() {
                let item = m.request_item(b.addr, len, b.tag, Some((data, strb, k as u64 == len)));
                m.req.push(item);
            }
            n += b.beats.len();
            m.ends.push(n);
        }
        m.rsp = m.rsp.expect(Expect::Items(bursts.len()));
        m
    }

    fn on(port: NativePort, tags: Vec<u64>) -> NativeMaster {
        let name = port.name.clone();
        let req = StreamSource::new(&format!("{name} requests"), port.req_valid, port.req_ready, port.req_fields());
        let rsp = StreamSink::new(&format!("{name} responses"), port.rsp_valid, port.rsp_ready, port.rsp_fields());
        NativeMaster { name, port, tags, req, rsp, ends: Vec::new() }
    }

    /// A request beat on the port's fields: address, len, tag, then a write
    /// beat's data, strobes and last, where the port has them.
    fn request_item(&self, addr: u64, len: u64, tag: u64, write: Option<(&[u32], &[u32], bool)>) -> Vec<u32> {
        let p = &self.port;
        let mut v: Vec<Vec<u32>> = vec![w64(addr).to_vec()];
        v.extend(p.req_len.map(|_| w64(len).to_vec()));
        v.extend(p.req_tag.map(|_| w64(tag).to_vec()));
        if let Some((data, strb, last)) = write {
            v.push(data.to_vec());
            v.push(strb.to_vec());
            v.extend(p.req_last.map(|_| w64(last as u64).to_vec()));
        }
        let refs: Vec<&[u32]> = v.iter().map(|w| &w[..]).collect();
        self.req.fields().pack(&refs)
    }

    /// Random holds before each request beat (`req_pct`) and back-pressure
    /// on the responses (`rsp_pct`).
    pub fn random(self, seed: u64, req_pct: u32, rsp_pct: u32) -> NativeMaster {
        NativeMaster { req: self.req.seed(seed), rsp: self.rsp.seed(seed), ..self }.paces(Pace::Random(req_pct), Pace::Random(rsp_pct))
    }

    /// The request and response paces (e.g. patterns of given cycles).
    pub fn paces(mut self, req: Pace, rsp: Pace) -> NativeMaster {
        self.req = self.req.pace(req);
        self.rsp = self.rsp.pace(rsp);
        self
    }

    /// The data beats of read request `i`.
    pub fn data(&self, i: usize) -> Vec<&[u32]> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (start..self.ends[i].min(self.rsp.items().len())).map(|b| self.rsp.field(b, 0)).collect()
    }
    /// The cycle each request beat was taken.
    pub fn taken(&self) -> &[u64] {
        self.req.taken()
    }
    /// The cycle each response (read: beat) was taken.
    pub fn responses(&self) -> &[u64] {
        self.rsp.cycles()
    }

    /// Response `k`, just taken, against the requests.
    fn check(&self, k: usize) -> Result<(), String> {
        let taken = self.req.taken().len();
        let (i, tag_field) = if self.port.is_write() {
            if taken < self.ends[k] {
                return Err(format!("the response to burst {k} before its last beat was taken"));
            }
            (k, 0)
        } else {
            // The beat belongs to the first request not yet fully answered.
            let i = self.ends.partition_point(|&e| e <= k);
            if i >= taken {
                return Err(format!("a response beat (beat {k}) with no request taken for it"));
            }
            (i, 1)
        };
        if self.port.rsp_tag.is_some() {
            let tag = self.rsp.field_u64(k, tag_field);
            if tag != self.tags[i] {
                return Err(format!("response {k}, to request {i}: tag {tag}, the request's is {}", self.tags[i]));
            }
        }
        Ok(())
    }
}

impl Agent for NativeMaster {
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
            self.check(k)?;
        }
        Ok(())
    }
    fn done(&self) -> bool {
        self.req.done() && self.rsp.done()
    }
    fn waiting(&self) -> String {
        format!("request beat {}; response {}", self.req.waiting(), self.rsp.waiting())
    }
    fn progress(&self) -> u64 {
        self.req.progress() + self.rsp.progress()
    }
}
