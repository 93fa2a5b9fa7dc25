//! Memory buses as types: native read and write ports, AXI4 and AXI4-Lite
//! (docs/memory.md). A bus is a few valid/ready streams ("channels"), each
//! flowing from the side that makes requests (the master) or back to it.
//! A block declares one in one call, like a stream
//! ([`ModuleBuilder::read_port`], [`ModuleBuilder::axi4`], ...); a parent
//! gets an instance's bus back with [`Inst::bus`] and joins the requesting
//! side to the serving side with [`ModuleBuilder::connect_bus`], which checks
//! the kinds and then every channel field by field, as `connect` does for a
//! stream.

use super::module::{Inst, ModuleBuilder, PortNames};
use super::stream::{Flow, Stream};

/// What kind of bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusKind {
    /// Native read port: `req` (addr, [len], [tag]) and `rsp` (data, [tag]).
    Read,
    /// Native write port: `req` (addr, [len], [tag], data, strb, [last]) and `rsp` ([tag]).
    Write,
    /// AXI4: `aw`, `w`, `b`, `ar`, `r`.
    Axi4,
    /// AXI4-Lite: the same five channels, fewer fields.
    AxiLite,
}

impl BusKind {
    /// The channels, each with whether it flows from the master.
    pub fn channels(self) -> &'static [(&'static str, bool)] {
        match self {
            BusKind::Read | BusKind::Write => &[("req", true), ("rsp", false)],
            BusKind::Axi4 | BusKind::AxiLite => &[("aw", true), ("w", true), ("b", false), ("ar", true), ("r", false)],
        }
    }
    fn native(self) -> bool {
        matches!(self, BusKind::Read | BusKind::Write)
    }
    /// The stream name of channel `ch` of the bus `name` (`mem_req`, `m_axi_ar`).
    fn stream_name(self, name: &str, ch: &str) -> String {
        if self.native() {
            format!("{name}_{ch}")
        } else {
            format!("{name}{ch}")
        }
    }
}

/// Which side of a bus the declaring module is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Makes the requests (a block reading memory; the AXI master).
    Master,
    /// Serves them (memory, an arbiter's source side, a scratchpad).
    Slave,
}

/// The widths of a native port; a width of 0 leaves the field out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Native {
    /// Byte address bits.
    pub addr_bits: u32,
    /// Data bits of a beat (a power of two, at least 8).
    pub data_bits: u32,
    /// `len` (beats - 1) bits; 0: one beat a request (no `len`, no `last`).
    pub len_bits: u32,
    /// `tag` bits; 0: no tag.
    pub tag_bits: u32,
}

/// The widths of an AXI4 bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axi {
    pub addr_bits: u32,
    pub data_bits: u32,
    pub id_bits: u32,
}

/// A bus as one module sees it: its own ports, or an instance's wires.
#[derive(Clone, Debug)]
pub struct Bus {
    /// The port name (`mem`, `rd0`) or prefix (`m_axi_`).
    pub name: String,
    pub kind: BusKind,
    /// The channels in [`BusKind::channels`] order.
    pub channels: Vec<Stream>,
}

impl Bus {
    /// Channel `ch` (`req`, `rsp`, `aw`, ...). Panics on a channel the kind
    /// does not have: a mistake in the block description.
    pub fn ch(&self, ch: &str) -> &Stream {
        match self.kind.channels().iter().position(|(c, _)| *c == ch) {
            Some(i) => &self.channels[i],
            None => panic!("bus `{}` ({:?}) has no channel `{ch}`", self.name, self.kind),
        }
    }
    pub fn req(&self) -> &Stream {
        self.ch("req")
    }
    pub fn rsp(&self) -> &Stream {
        self.ch("rsp")
    }
}

/// (field, width, meaning) of each channel of a native port.
fn native_fields(kind: BusKind, s: Native) -> Vec<Vec<(&'static str, u32, String)>> {
    let opt = |name: &'static str, bits: u32, doc: &str| (bits > 0).then(|| (name, bits, doc.to_string()));
    let db = s.data_bits / 8;
    match kind {
        BusKind::Read => vec![
            [Some(("addr", s.addr_bits, "byte address of the first beat".into())), opt("len", s.len_bits, "beats - 1"), opt("tag", s.tag_bits, "tag, returned with every beat")]
                .into_iter()
                .flatten()
                .collect(),
            [Some(("data", s.data_bits, "one beat, in request order".into())), opt("tag", s.tag_bits, "the request's tag")].into_iter().flatten().collect(),
        ],
        BusKind::Write => vec![
            [
                Some(("addr", s.addr_bits, "byte address of the burst (every beat)".into())),
                opt("len", s.len_bits, "beats - 1 (every beat)"),
                opt("tag", s.tag_bits, "tag (every beat)"),
                Some(("data", s.data_bits, "the beat".into())),
                Some(("strb", db, "byte strobes".into())),
                opt("last", (s.len_bits > 0) as u32, "the burst's last beat"),
            ]
            .into_iter()
            .flatten()
            .collect(),
            opt("tag", s.tag_bits, "the tag of the burst written").into_iter().collect(),
        ],
        _ => unreachable!("native kinds only"),
    }
}

/// (field, width, meaning) of each AXI channel; `lite`: AXI4-Lite.
fn axi_fields(s: Axi, lite: bool) -> Vec<Vec<(&'static str, u32, String)>> {
    let db = s.data_bits / 8;
    if lite {
        return vec![
            vec![("addr", s.addr_bits, "write address".into())],
            vec![("data", s.data_bits, "write data".into()), ("strb", db, "write byte strobes".into())],
            vec![("resp", 2, "write response".into())],
            vec![("addr", s.addr_bits, "read address".into())],
            vec![("data", s.data_bits, "read data".into()), ("resp", 2, "read response".into())],
        ];
    }
    let addr = |what: &str| -> Vec<(&'static str, u32, String)> {
        vec![
            ("id", s.id_bits, format!("{what} ID (the source)")),
            ("addr", s.addr_bits, format!("{what} burst byte address")),
            ("len", 8, "beats - 1".into()),
            ("size", 3, "log2 bytes a beat".into()),
            ("burst", 2, "1: INCR".into()),
            ("lock", 1, "0".into()),
            ("cache", 4, "0".into()),
            ("prot", 3, "0".into()),
            ("qos", 4, "0".into()),
        ]
    };
    vec![
        addr("write"),
        vec![("data", s.data_bits, "write data".into()), ("strb", db, "write byte strobes".into()), ("last", 1, "last beat of the burst".into())],
        vec![("id", s.id_bits, "write response ID".into()), ("resp", 2, "write response".into())],
        addr("read"),
        vec![
            ("id", s.id_bits, "read data ID".into()),
            ("data", s.data_bits, "read data".into()),
            ("resp", 2, "read response".into()),
            ("last", 1, "last beat of the burst".into()),
        ],
    ]
}

impl ModuleBuilder {
    fn bus_ports(&mut self, name: &str, kind: BusKind, role: Role, fields: Vec<Vec<(&'static str, u32, String)>>, what: &str) -> Bus {
        let naming = if kind.native() { PortNames::Suffixed } else { PortNames::Plain };
        let channels = kind
            .channels()
            .iter()
            .zip(fields)
            .map(|((ch, from_master), f)| {
                // A channel arrives here when it flows toward this side.
                let input = *from_master == (role == Role::Slave);
                let f: Vec<(&str, u32, &str)> = f.iter().map(|(n, w, d)| (*n, *w, d.as_str())).collect();
                let long = match *ch {
                    "aw" => "write address",
                    "w" => "write data",
                    "b" => "write response",
                    "ar" => "read address",
                    "r" => "read data",
                    "req" => "request",
                    _ => "response",
                };
                let (v, r) = (format!("{what} {long} valid"), format!("{what} {long} ready"));
                self.stream_ports(&kind.stream_name(name, ch), input, naming, &v, &r, &f)
            })
            .collect();
        Bus { name: name.to_string(), kind, channels }
    }

    /// A native read port `name` (`<name>_req_*`, `<name>_rsp_*`).
    pub fn read_port(&mut self, name: &str, role: Role, shape: Native) -> Bus {
        self.bus_ports(name, BusKind::Read, role, native_fields(BusKind::Read, shape), &format!("{name} read"))
    }

    /// A native write port `name`.
    pub fn write_port(&mut self, name: &str, role: Role, shape: Native) -> Bus {
        self.bus_ports(name, BusKind::Write, role, native_fields(BusKind::Write, shape), &format!("{name} write"))
    }

    /// An AXI4 bus, ports `<prefix><channel><signal>` (`m_axi_arvalid`).
    pub fn axi4(&mut self, prefix: &str, role: Role, shape: Axi) -> Bus {
        self.bus_ports(prefix, BusKind::Axi4, role, axi_fields(shape, false), "AXI4")
    }

    /// An AXI4-Lite bus with 32-bit data, ports `<prefix><channel><signal>`.
    pub fn axi_lite(&mut self, prefix: &str, role: Role, addr_bits: u32) -> Bus {
        let shape = Axi { addr_bits, data_bits: 32, id_bits: 0 };
        self.bus_ports(prefix, BusKind::AxiLite, role, axi_fields(shape, true), "AXI4-Lite")
    }

    /// Join the side that makes requests (`up`) to the side that serves them
    /// (`down`): every channel that flows from the master goes from `up` to
    /// `down`, every other one back. Kinds and channels must match, and each
    /// channel's fields by name and width; every mismatch is reported when
    /// the module is finished.
    pub fn connect_bus(&mut self, up: &Bus, down: &Bus) {
        if up.kind != down.kind {
            self.problems.push(format!(
                "connect bus `{}` to `{}`: `{}` is {:?} and `{}` is {:?}",
                up.name, down.name, up.name, up.kind, down.name, down.kind
            ));
            return;
        }
        for (i, (_, from_master)) in up.kind.channels().iter().enumerate() {
            let (u, d) = (&up.channels[i], &down.channels[i]);
            if *from_master {
                self.connect(u, d)
            } else {
                self.connect(d, u)
            }
        }
    }

    /// Ports of this module for an instance's bus, connected to it: the
    /// same kind, channels, fields and meanings, under `name`.
    pub fn expose_bus(&mut self, b: &Bus, name: &str) -> Bus {
        let channels = b
            .kind
            .channels()
            .iter()
            .zip(&b.channels)
            .map(|((ch, _), s)| self.expose(s, &b.kind.stream_name(name, ch)))
            .collect();
        Bus { name: name.to_string(), kind: b.kind, channels }
    }

    /// Drive a bus's channels that leave this module from the master side as
    /// idle: no request (valid 0, fields 0) and every response taken (ready
    /// 1). For a read-only block's AXI write channels (and the like): the
    /// channels arriving here are left unread, with a waiver.
    pub fn tie_off(&mut self, b: &Bus, channels: &[&str], why: &str) {
        for ch in channels {
            let s = b.ch(ch).clone();
            match s.flow {
                Flow::Sink => {
                    self.assign(&s.valid, &super::Expr::bit(false));
                    for (_, f) in &s.fields {
                        self.assign(f, &super::Expr::zero(f.width()));
                    }
                    self.waive_unused(&s.ready, why);
                }
                Flow::Source => {
                    self.assign(&s.ready, &super::Expr::bit(true));
                    self.waive_unused(&s.valid, why);
                    for (_, f) in &s.fields {
                        self.waive_unused(f, why);
                    }
                }
            }
        }
    }
}

impl Inst {
    /// The instance's bus `name` of `kind`, as the parent sees it.
    pub fn bus(&self, kind: BusKind, name: &str) -> Bus {
        let channels = kind.channels().iter().map(|(ch, _)| self.stream(&kind.stream_name(name, ch))).collect();
        Bus { name: format!("{}.{name}", self.name), kind, channels }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtl::Expr;

    fn shape() -> Native {
        Native { addr_bits: 16, data_bits: 32, len_bits: 2, tag_bits: 0 }
    }

    /// A memory that answers nothing (enough to see the ports).
    fn dummy_slave(s: Native) -> crate::rtl::Module {
        let mut b = ModuleBuilder::new("slave");
        let p = b.read_port("mem", Role::Slave, s);
        b.assign(&p.req().ready, &Expr::bit(true));
        b.assign(&p.rsp().valid, &p.req().valid);
        b.assign(&p.rsp().field("data"), &p.req().field("addr").zext(s.data_bits));
        b.waive_unused(&p.req().field("len"), "test");
        b.waive_unused(&p.rsp().ready, "test");
        b.finish().unwrap()
    }

    #[test]
    fn native_and_axi_ports_are_named_by_convention() {
        let mut b = ModuleBuilder::new("t");
        let r = b.read_port("mem", Role::Master, shape());
        let w = b.write_port("wr", Role::Master, Native { tag_bits: 3, ..shape() });
        let a = b.axi4("m_axi_", Role::Master, Axi { addr_bits: 32, data_bits: 64, id_bits: 2 });
        let names: Vec<String> = [&r, &w, &a]
            .iter()
            .flat_map(|bus| bus.channels.iter().flat_map(|s| [s.valid.clone(), s.ready.clone()].into_iter().chain(s.fields.iter().map(|f| f.1.clone()))))
            .map(|e| crate::rtl::module::show_expr(&b.m, &e))
            .collect();
        assert_eq!(&names[..8], ["mem_req_valid_o", "mem_req_ready_i", "mem_req_addr_o", "mem_req_len_o", "mem_rsp_valid_i", "mem_rsp_ready_o", "mem_rsp_data_i", "wr_req_valid_o"]);
        assert!(names.contains(&"wr_req_last_o".to_string()) && names.contains(&"wr_rsp_tag_i".to_string()), "{names:?}");
        let axi: Vec<&str> = names.iter().map(String::as_str).filter(|n| n.starts_with("m_axi_")).collect();
        assert_eq!(axi.len(), 11 + 5 + 4 + 11 + 6);
        assert_eq!(&axi[..4], ["m_axi_awvalid", "m_axi_awready", "m_axi_awid", "m_axi_awaddr"]);
        assert_eq!(axi.last(), Some(&"m_axi_rlast"));
    }

    #[test]
    fn connect_bus_joins_channels_both_ways_and_checks_fields() {
        let slave = dummy_slave(shape());
        let mut b = ModuleBuilder::new("top");
        let u = b.instance(&slave, "u_mem", &[]);
        let mine = b.read_port("mem", Role::Master, shape());
        // This module's master port is served by ... nothing; instead expose
        // the instance's slave side and join an outer master to it.
        let _ = mine;
        let outer = b.read_port("up", Role::Slave, shape());
        b.connect_bus(&outer, &u.bus(BusKind::Read, "mem"));
        let p = b.finish().unwrap_err().problems;
        // Only the unused `mem` master port is left: the join itself is complete.
        assert!(p.iter().all(|x| x.contains("`mem_")), "{p:?}");

        let narrow = dummy_slave(Native { data_bits: 16, ..shape() });
        let mut b = ModuleBuilder::new("bad");
        let u = b.instance(&narrow, "u_mem", &[]);
        let outer = b.read_port("up", Role::Slave, shape());
        b.connect_bus(&outer, &u.bus(BusKind::Read, "mem"));
        let w = b.write_port("wr", Role::Slave, shape());
        b.connect_bus(&w, &u.bus(BusKind::Read, "mem"));
        let p = b.finish().unwrap_err().problems;
        assert!(p.contains(&"connect `u_mem.mem_rsp` to `up_rsp`: field `data` is 16 bits in `u_mem.mem_rsp` and 32 bits in `up_rsp`".to_string()), "{p:?}");
        assert!(p.contains(&"connect bus `wr` to `u_mem.mem`: `wr` is Write and `u_mem.mem` is Read".to_string()), "{p:?}");
    }
}
