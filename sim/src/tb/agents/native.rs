//! The handles of a native memory port (docs: the interface conventions).
//! A read port `<p>` on the block that issues requests: `<p>_req_valid_o`,
//! `_ready_i`, `_addr_o`, optional `_len_o` (beats - 1) and `_tag_o`;
//! `<p>_rsp_valid_i`, `_ready_o`, `_data_i`, optional `_tag_i`. A write
//! port adds `<p>_req_data_o`, `_strb_o` and, with `len`, `_last_o`, and
//! its response has no data. On the block that answers, the suffixes swap.

use super::{optional, Fields};
use crate::cosim::{CosimError, PortHandle, Sim};

#[derive(Clone, Debug)]
pub struct NativePort {
    pub name: String,
    pub req_valid: PortHandle,
    pub req_ready: PortHandle,
    pub req_addr: PortHandle,
    pub req_len: Option<PortHandle>,
    pub req_tag: Option<PortHandle>,
    /// A write port's.
    pub req_data: Option<PortHandle>,
    pub req_strb: Option<PortHandle>,
    pub req_last: Option<PortHandle>,
    pub rsp_valid: PortHandle,
    pub rsp_ready: PortHandle,
    /// A read port's.
    pub rsp_data: Option<PortHandle>,
    pub rsp_tag: Option<PortHandle>,
}

impl NativePort {
    /// Port `<name>` of a design that issues the requests (a master).
    pub fn master(sim: &Sim, name: &str) -> Result<NativePort, CosimError> {
        NativePort::find(sim, name, "o", "i")
    }
    /// Port `<name>` of a design that answers them (a slave).
    pub fn slave(sim: &Sim, name: &str) -> Result<NativePort, CosimError> {
        NativePort::find(sim, name, "i", "o")
    }

    fn find(sim: &Sim, name: &str, req: &str, rsp: &str) -> Result<NativePort, CosimError> {
        let req_name = |f: &str, d: &str| format!("{name}_req_{f}_{d}");
        let rsp_name = |f: &str, d: &str| format!("{name}_rsp_{f}_{d}");
        let p = NativePort {
            name: name.to_string(),
            req_valid: sim.port(&req_name("valid", req))?,
            req_ready: sim.port(&req_name("ready", rsp))?,
            req_addr: sim.port(&req_name("addr", req))?,
            req_len: optional(sim, &req_name("len", req)),
            req_tag: optional(sim, &req_name("tag", req)),
            req_data: optional(sim, &req_name("data", req)),
            req_strb: optional(sim, &req_name("strb", req)),
            req_last: optional(sim, &req_name("last", req)),
            rsp_valid: sim.port(&rsp_name("valid", rsp))?,
            rsp_ready: sim.port(&rsp_name("ready", req))?,
            rsp_data: optional(sim, &rsp_name("data", rsp)),
            rsp_tag: optional(sim, &rsp_name("tag", rsp)),
        };
        let missing = |what: &str| CosimError::UnknownPort(format!("{name}: {what}"));
        match (p.req_data.is_some(), p.rsp_data.is_some()) {
            (false, false) => return Err(missing(&format!("{} or {}", req_name("data", req), rsp_name("data", rsp)))),
            (true, true) => return Err(missing("a port with both request and response data is neither read nor write")),
            (true, false) if p.req_strb.is_none() => return Err(missing(&req_name("strb", req))),
            _ => {}
        }
        if p.req_data.is_some() && p.req_len.is_some() && p.req_last.is_none() {
            return Err(missing(&req_name("last", req)));
        }
        Ok(p)
    }

    pub fn is_write(&self) -> bool {
        self.req_data.is_some()
    }

    /// Data bytes of a beat.
    pub fn beat_bytes(&self) -> usize {
        let data = self.req_data.or(self.rsp_data).expect("a read or a write port");
        (data.width() / 8) as usize
    }

    /// The request's fields: address, then len, tag, data, strobes, last
    /// where the port has them.
    pub fn req_fields(&self) -> Fields {
        let opt = [self.req_len, self.req_tag, self.req_data, self.req_strb, self.req_last];
        Fields::new(std::iter::once(self.req_addr).chain(opt.into_iter().flatten()).collect())
    }
    /// The response's fields: data, then tag where the port has them.
    pub fn rsp_fields(&self) -> Fields {
        Fields::new([self.rsp_data, self.rsp_tag].into_iter().flatten().collect())
    }
}
