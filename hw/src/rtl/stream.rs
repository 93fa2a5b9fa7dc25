//! Valid/ready streams: a bundle of `valid`, `ready` and payload fields that
//! connects in one typed call.
//!
//! A block declares its stream ports with [`ModuleBuilder::stream_in`] and
//! [`ModuleBuilder::stream_out`] (`<name>_valid_i`, `<name>_ready_o`,
//! `<name>_<field>_i`, ...); the module records the bundle, so a parent that
//! instantiates it gets the same bundle back from [`Inst::stream`] and joins
//! a producer to a consumer with [`ModuleBuilder::connect`], which checks that
//! the fields match by name and width. A transfer happens on a clock edge
//! where `valid` and `ready` are both high.

use super::expr::{Expr, ExprKind, SigId};
use super::module::{Inst, ModuleBuilder, PortNames, SigKind, StreamDecl};

/// Which way a stream flows, seen from the module holding the [`Stream`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Arrives here: `valid` and the fields are read, `ready` is driven.
    Source,
    /// Leaves from here: `valid` and the fields are driven, `ready` is read.
    Sink,
}

/// A valid/ready stream as one module sees it: its own ports, or the wires
/// of an instance's ports.
#[derive(Clone, Debug)]
pub struct Stream {
    /// For messages: `in`, or `u_narrow.in` for an instance's stream.
    pub name: String,
    pub flow: Flow,
    pub valid: Expr,
    pub ready: Expr,
    /// Payload, in declaration order.
    pub fields: Vec<(String, Expr)>,
    /// The meaning of valid, ready and each field (port docs), for [`ModuleBuilder::expose`].
    docs: Vec<String>,
    /// How its ports are named (kept by [`ModuleBuilder::expose`]).
    pub naming: PortNames,
}

impl Stream {
    /// The payload field `name`. Panics on a field the stream does not
    /// have: that is a mistake in the block description.
    pub fn field(&self, name: &str) -> Expr {
        match self.fields.iter().find(|(n, _)| n == name) {
            Some((_, e)) => e.clone(),
            None => panic!("stream `{}` has no field `{name}`", self.name),
        }
    }
    /// Several payload fields at once: `let [a, b] = s.get(["a", "b"]);`.
    pub fn get<const N: usize>(&self, names: [&str; N]) -> [Expr; N] {
        names.map(|n| self.field(n))
    }
}

impl ModuleBuilder {
    /// An input stream: ports `<name>_valid_i`, `<name>_ready_o` and
    /// `<name>_<field>_i` for each `(field, width, meaning)`, in that order.
    pub fn stream_in(&mut self, name: &str, valid_doc: &str, ready_doc: &str, fields: &[(&str, u32, &str)]) -> Stream {
        self.stream_ports(name, true, PortNames::Suffixed, valid_doc, ready_doc, fields)
    }

    /// An output stream: `<name>_valid_o`, `<name>_ready_i`, `<name>_<field>_o`.
    pub fn stream_out(&mut self, name: &str, valid_doc: &str, ready_doc: &str, fields: &[(&str, u32, &str)]) -> Stream {
        self.stream_ports(name, false, PortNames::Suffixed, valid_doc, ready_doc, fields)
    }

    /// A stream's ports: `input` (it arrives here) or not, named by `naming`.
    pub(crate) fn stream_ports(
        &mut self,
        name: &str,
        input: bool,
        naming: PortNames,
        valid_doc: &str,
        ready_doc: &str,
        fields: &[(&str, u32, &str)],
    ) -> Stream {
        let (fwd, back) = if input { ("_i", "_o") } else { ("_o", "_i") };
        let port = |b: &mut ModuleBuilder, n: &str, w: u32, doc: &str, forward: bool| {
            let kind = if forward == input { SigKind::Input } else { SigKind::Output };
            let port = match naming {
                PortNames::Suffixed => format!("{name}_{n}{}", if forward { fwd } else { back }),
                PortNames::Plain => format!("{name}{n}"),
            };
            b.add(&port, w, kind, None, doc)
        };
        let valid = port(self, "valid", 1, valid_doc, true);
        let ready = port(self, "ready", 1, ready_doc, false);
        let mut docs = vec![valid_doc.to_string(), ready_doc.to_string()];
        let fields: Vec<(String, Expr)> = fields
            .iter()
            .map(|(f, w, doc)| {
                docs.push(doc.to_string());
                (f.to_string(), port(self, f, *w, doc, true))
            })
            .collect();
        self.m.streams.push(StreamDecl {
            name: name.to_string(),
            naming,
            input,
            valid: sig(&valid),
            ready: sig(&ready),
            fields: fields.iter().map(|(f, e)| (f.clone(), sig(e))).collect(),
        });
        Stream { name: name.to_string(), flow: if input { Flow::Source } else { Flow::Sink }, valid, ready, fields, docs, naming }
    }

    /// Join a producer to a consumer: `to.valid = from.valid`, each field of
    /// `to` from the field of the same name in `from`, `from.ready = to.ready`.
    /// The two must have the same field names and widths; every mismatch is
    /// reported when the module is finished.
    pub fn connect(&mut self, from: &Stream, to: &Stream) {
        let before = self.problems.len();
        if from.flow != Flow::Source {
            self.problems.push(format!("connect `{}` to `{}`: `{}` is not a source (it leaves this module)", from.name, to.name, from.name));
        }
        if to.flow != Flow::Sink {
            self.problems.push(format!("connect `{}` to `{}`: `{}` is not a sink (it arrives in this module)", from.name, to.name, to.name));
        }
        for (f, e) in &to.fields {
            match from.fields.iter().find(|(g, _)| g == f) {
                None => self.problems.push(format!("connect `{}` to `{}`: `{}` has no field `{f}`", from.name, to.name, from.name)),
                Some((_, x)) if x.width() != e.width() => self.problems.push(format!(
                    "connect `{}` to `{}`: field `{f}` is {} bits in `{}` and {} bits in `{}`",
                    from.name,
                    to.name,
                    x.width(),
                    from.name,
                    e.width(),
                    to.name
                )),
                Some(_) => {}
            }
        }
        for (f, _) in &from.fields {
            if !to.fields.iter().any(|(g, _)| g == f) {
                self.problems.push(format!("connect `{}` to `{}`: `{}` has no field `{f}`", from.name, to.name, to.name));
            }
        }
        if self.problems.len() > before {
            return;
        }
        self.assign(&to.valid, &from.valid);
        for (f, e) in &to.fields {
            self.assign(e, &from.field(f));
        }
        self.assign(&from.ready, &to.ready);
    }

    /// Ports of this module for an instance's stream, connected to it: an
    /// instance's input stream becomes an input stream `name` of this module
    /// and an output stream an output stream, with the same fields, widths
    /// and meanings. Returns the new ports.
    pub fn expose(&mut self, s: &Stream, name: &str) -> Stream {
        let fields: Vec<(&str, u32, &str)> =
            s.fields.iter().zip(&s.docs[2..]).map(|((f, e), d)| (f.as_str(), e.width(), d.as_str())).collect();
        match s.flow {
            Flow::Sink => {
                let ports = self.stream_ports(name, true, s.naming, &s.docs[0], &s.docs[1], &fields);
                self.connect(&ports, s);
                ports
            }
            Flow::Source => {
                let ports = self.stream_ports(name, false, s.naming, &s.docs[0], &s.docs[1], &fields);
                self.connect(s, &ports);
                ports
            }
        }
    }
}

impl Inst {
    /// The instance's stream `name` as the parent sees it: its input streams
    /// are sinks here (the parent drives them), its output streams sources.
    /// Panics on a stream the module does not declare: that is a mistake in
    /// the block description.
    pub fn stream(&self, name: &str) -> Stream {
        let m = &self.module;
        let Some(d) = m.streams.iter().find(|d| d.name == name) else {
            panic!("module `{}` of instance `{}` declares no stream `{name}`", m.name, self.name)
        };
        let at = |id: SigId| self.port(&m.sig(id).name);
        let doc = |id: SigId| m.sig(id).doc.clone();
        let mut docs = vec![doc(d.valid), doc(d.ready)];
        docs.extend(d.fields.iter().map(|(_, id)| doc(*id)));
        Stream {
            name: format!("{}.{name}", self.name),
            flow: if d.input { Flow::Sink } else { Flow::Source },
            valid: at(d.valid),
            ready: at(d.ready),
            fields: d.fields.iter().map(|(f, id)| (f.clone(), at(*id))).collect(),
            docs,
            naming: d.naming,
        }
    }
}

fn sig(e: &Expr) -> SigId {
    match e.kind() {
        ExprKind::Sig(s) => *s,
        _ => unreachable!("ports are signals"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register slice of `w`-bit data: `in` to `out`, one cycle, no back-pressure handling.
    fn stage(w: u32) -> crate::rtl::Module {
        let mut b = ModuleBuilder::new("stage");
        let _clk = b.clock("clk_i");
        let i = b.stream_in("in", "offered", "taken", &[("data", w, "payload")]);
        let o = b.stream_out("out", "offered", "taken", &[("data", w, "payload")]);
        b.assign(&i.ready, &o.ready);
        let v = b.pipe("valid_q", &i.valid, &Expr::bit(true));
        let d = b.pipe("data_q", &i.field("data"), &Expr::bit(true));
        b.assign(&o.valid, &v);
        b.assign(&o.field("data"), &d);
        b.finish().unwrap()
    }

    #[test]
    fn stream_ports_follow_the_naming_convention() {
        let m = stage(8);
        let names: Vec<&str> = m.port_signals().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["clk_i", "in_valid_i", "in_ready_o", "in_data_i", "out_valid_o", "out_ready_i", "out_data_o"]);
        assert_eq!(m.streams.len(), 2);
        assert!(m.streams[0].input && !m.streams[1].input);
    }

    #[test]
    fn instances_chain_by_stream_in_one_call() {
        let s = stage(8);
        let mut b = ModuleBuilder::new("chain");
        let clk = b.clock("clk_i");
        let u0 = b.instance(&s, "u0", &[("clk_i", clk.clone())]);
        let u1 = b.instance(&s, "u1", &[("clk_i", clk)]);
        b.expose(&u0.stream("in"), "in");
        b.connect(&u0.stream("out"), &u1.stream("in"));
        b.expose(&u1.stream("out"), "out");
        let m = b.finish().unwrap();
        let text = crate::rtl::print::module(&m, &m.name, &|i| i.module.name.clone());
        assert!(text.contains("assign u1_in_data = u0_out_data;"), "{text}");
        assert!(text.contains("assign u0_out_ready = u1_in_ready;"), "{text}");
        assert!(text.contains("assign out_data_o = u1_out_data;"), "{text}");
        // One shared copy of the instantiated module.
        assert!(std::rc::Rc::ptr_eq(&m.instances[0].module, &m.instances[1].module));
    }

    #[test]
    fn connect_reports_every_mismatch() {
        let (narrow, wide) = (stage(8), stage(16));
        let mut b = ModuleBuilder::new("bad");
        let clk = b.clock("clk_i");
        let u0 = b.instance(&narrow, "u0", &[("clk_i", clk.clone())]);
        let u1 = b.instance(&wide, "u1", &[("clk_i", clk)]);
        b.connect(&u0.stream("out"), &u1.stream("in"));
        b.connect(&u1.stream("in"), &u0.stream("out"));
        let p = b.finish().unwrap_err().problems;
        assert!(p.contains(&"connect `u0.out` to `u1.in`: field `data` is 8 bits in `u0.out` and 16 bits in `u1.in`".to_string()), "{p:?}");
        assert!(p.contains(&"connect `u1.in` to `u0.out`: `u1.in` is not a source (it leaves this module)".to_string()), "{p:?}");
        assert!(p.contains(&"connect `u1.in` to `u0.out`: `u0.out` is not a sink (it arrives in this module)".to_string()), "{p:?}");
        // The streams left unconnected are undriven and unread wires.
        assert!(p.iter().any(|x| x.starts_with("`u1_in_data` bits [15:0] are not driven")), "{p:?}");
    }
}
