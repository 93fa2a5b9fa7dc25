//! Verilog-2005 text of a checked [`Module`].
//!
//! One module per file, named after the module (what `verilator -Wall`'s
//! DECLFILENAME expects), a ports table at the top, declarations in the order
//! they were created, continuous assigns, then one `always` block for the
//! reset domain and one per load enable for datapath registers.

use super::expr::{literal, Expr, SigId};
use super::module::{Instance, Module, PropKind, SigKind};
use std::fmt::Write;

fn expr(m: &Module, e: &Expr) -> String {
    e.verilog(&|id: SigId| m.sig(id).name.as_str())
}

fn range(width: u32) -> String {
    if width == 1 {
        String::new()
    } else {
        format!("[{}:0]", width - 1)
    }
}

/// The module text, without the file banner, named `name`; `sub` gives the
/// module name each instance refers to.
pub fn module(m: &Module, name: &str, sub: &dyn Fn(&Instance) -> String) -> String {
    let mut s = String::new();
    for line in &m.doc {
        let _ = writeln!(s, "// {line}");
    }
    if !m.doc.is_empty() {
        s.push_str("//\n");
    }
    // Ports table: name, direction, width, meaning.
    let ports: Vec<_> = m.port_signals().collect();
    let nw = ports.iter().map(|p| p.name.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(s, "// {:<nw$}  {:<6}  {:>5}  meaning", "port", "dir", "width");
    for p in &ports {
        let dir = if p.kind == SigKind::Input { "input" } else { "output" };
        let _ = writeln!(s, "// {:<nw$}  {:<6}  {:>5}  {}", p.name, dir, p.width, p.doc);
    }
    let _ = writeln!(s, "module {name} (");
    let rw = ports.iter().map(|p| range(p.width).len()).max().unwrap_or(0);
    for (i, p) in ports.iter().enumerate() {
        let dir = if p.kind == SigKind::Input { "input " } else { "output" };
        let sep = if i + 1 == ports.len() { "" } else { "," };
        match &p.waiver {
            None => {
                let _ = writeln!(s, "  {dir} wire {:<rw$} {}{sep}", range(p.width), p.name);
            }
            Some(why) => {
                let _ = writeln!(s, "  // {}: {why}", p.name);
                let _ = writeln!(s, "  /* verilator lint_off UNUSED */");
                let _ = writeln!(s, "  {dir} wire {:<rw$} {}{sep}", range(p.width), p.name);
                let _ = writeln!(s, "  /* verilator lint_on UNUSED */");
            }
        }
    }
    s.push_str(");\n");

    let internal: Vec<_> = m.signals.iter().filter(|x| matches!(x.kind, SigKind::Wire | SigKind::Reg) && !x.formal).collect();
    if !internal.is_empty() {
        s.push('\n');
        let rw = internal.iter().map(|x| range(x.width).len()).max().unwrap_or(0);
        for x in internal {
            let kw = if x.kind == SigKind::Reg { "reg " } else { "wire" };
            match &x.waiver {
                None => {
                    let _ = writeln!(s, "  {kw} {:<rw$} {};", range(x.width), x.name);
                }
                Some(why) => {
                    let _ = writeln!(s, "  // {}: {why}", x.name);
                    let _ = writeln!(s, "  /* verilator lint_off UNUSED */");
                    let _ = writeln!(s, "  {kw} {:<rw$} {};", range(x.width), x.name);
                    let _ = writeln!(s, "  /* verilator lint_on UNUSED */");
                }
            }
        }
    }

    for r in &m.rams {
        let _ = writeln!(s, "\n  // {}: {} words of {} bits{}", r.name, r.depth, r.width, if r.doc.is_empty() { String::new() } else { format!(", {}", r.doc) });
        let _ = writeln!(s, "  (* no_rw_check *)");
        let _ = writeln!(s, "  reg {} {} [0:{}];", range(r.width), r.name, r.depth - 1);
    }

    if !m.assigns.is_empty() {
        s.push('\n');
        for a in &m.assigns {
            let t = m.sig(a.target);
            let w = a.expr.width();
            let lhs = if a.lo == 0 && w == t.width {
                t.name.clone()
            } else if w == 1 {
                format!("{}[{}]", t.name, a.lo)
            } else {
                format!("{}[{}:{}]", t.name, a.lo + w - 1, a.lo)
            };
            let _ = writeln!(s, "  assign {lhs} = {};", expr(m, &a.expr));
        }
    }

    for inst in &m.instances {
        let _ = writeln!(s, "\n  {} {} (", sub(inst), inst.name);
        let pw = inst.conns.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
        for (i, (p, e)) in inst.conns.iter().enumerate() {
            let sep = if i + 1 == inst.conns.len() { "" } else { "," };
            let _ = writeln!(s, "    .{p:<pw$} ({}){sep}", expr(m, e));
        }
        s.push_str("  );\n");
    }

    if let Some(clk) = m.clock {
        let clk = &m.sig(clk).name;
        // Reset domain: control state with reset values.
        let reset_regs: Vec<_> = m.regs.iter().filter(|r| m.sig(r.reg).reset.is_some()).collect();
        if !reset_regs.is_empty() {
            let rst = m.reset.map(|r| m.sig(r).name.clone()).unwrap_or_default();
            let _ = writeln!(s, "\n  always @(posedge {clk}) begin\n    if ({rst}) begin");
            for r in &reset_regs {
                let sig = m.sig(r.reg);
                let v = sig.reset.clone().unwrap_or_default();
                let _ = writeln!(s, "      {} <= {};", sig.name, literal(sig.width, &v));
            }
            s.push_str("    end else begin\n");
            for r in &reset_regs {
                let sig = m.sig(r.reg);
                match &r.enable {
                    Some(en) => {
                        let _ = writeln!(s, "      if ({}) {} <= {};", expr(m, en), sig.name, expr(m, &r.d));
                    }
                    None => {
                        let _ = writeln!(s, "      {} <= {};", sig.name, expr(m, &r.d));
                    }
                }
            }
            s.push_str("    end\n  end\n");
        }
        // Datapath registers without reset, grouped by load enable.
        let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
        for r in m.regs.iter().filter(|r| m.sig(r.reg).reset.is_none()) {
            let en = r.enable.as_ref().map(|e| expr(m, e));
            let line = format!("{} <= {};", m.sig(r.reg).name, expr(m, &r.d));
            match groups.iter_mut().find(|g| g.0 == en) {
                Some(g) => g.1.push(line),
                None => groups.push((en, vec![line])),
            }
        }
        for r in &m.rams {
            let (arr, waddr, wdata) = (&r.name, expr(m, &r.waddr), expr(m, &r.wdata));
            let _ = writeln!(s, "\n  always @(posedge {clk}) begin\n    if ({}) begin", expr(m, &r.we));
            match &r.wbe {
                None => {
                    let _ = writeln!(s, "      {arr}[{waddr}] <= {wdata};");
                }
                Some((be, lane)) if *lane == r.width => {
                    let _ = writeln!(s, "      if ({}) {arr}[{waddr}] <= {wdata};", expr(m, be));
                }
                Some((be, lane)) => {
                    let be = expr(m, be);
                    for k in 0..r.width / lane {
                        let (hi, lo) = ((k + 1) * lane - 1, k * lane);
                        let _ = writeln!(s, "      if ({be}[{k}]) {arr}[{waddr}][{hi}:{lo}] <= {wdata}[{hi}:{lo}];");
                    }
                }
            }
            let _ = writeln!(s, "    end\n  end");
            let _ = writeln!(s, "\n  always @(posedge {clk}) begin\n    if ({}) {} <= {arr}[{}];\n  end", expr(m, &r.re), m.sig(r.rdata).name, expr(m, &r.raddr));
        }
        for (en, lines) in groups {
            let _ = writeln!(s, "\n  always @(posedge {clk}) begin");
            let ind = if en.is_some() { "      " } else { "    " };
            if let Some(en) = &en {
                let _ = writeln!(s, "    if ({en}) begin");
            }
            for l in lines {
                let _ = writeln!(s, "{ind}{l}");
            }
            if en.is_some() {
                s.push_str("    end\n");
            }
            s.push_str("  end\n");
        }
    }
    formal(m, &mut s);
    s.push_str("endmodule\n");
    wrap_long_lines(&s)
}

/// The properties, under `` `ifdef FORMAL ``: a flag set by the first reset,
/// the formal-only wires, and one `always @*` block that checks every
/// property from the first cycle after that reset on.
fn formal(m: &Module, s: &mut String) {
    let (Some(seen), Some(clk), Some(rst)) = (&m.formal_seen, m.clock, m.reset) else { return };
    let (clk, rst) = (&m.sig(clk).name, &m.sig(rst).name);
    let _ = writeln!(s, "\n`ifdef FORMAL");
    let _ = writeln!(s, "  // Properties: checked in every cycle after the first reset (yosys read_verilog -formal).");
    let _ = writeln!(s, "  reg {seen} = 1'b0;");
    for x in m.signals.iter().filter(|x| x.formal) {
        let kw = if x.kind == SigKind::Reg { "reg " } else { "wire" };
        let _ = writeln!(s, "  {kw} {} {};", range(x.width), x.name);
    }
    for a in &m.formal_assigns {
        let _ = writeln!(s, "  assign {} = {};", m.sig(a.target).name, expr(m, &a.expr));
    }
    if !m.formal_regs.is_empty() {
        let _ = writeln!(s, "  always @(posedge {clk}) begin");
        for r in &m.formal_regs {
            let _ = writeln!(s, "    {} <= {};", m.sig(r.reg).name, expr(m, &r.d));
        }
        let _ = writeln!(s, "  end");
    }
    let _ = writeln!(s, "  always @(posedge {clk}) if ({rst}) {seen} <= 1'b1;");
    // Each assertion's condition on a wire of its own, so that a
    // counterexample's trace shows which one fails (`<label>_holds` low).
    for p in m.props.iter().filter(|p| p.kind == PropKind::Assert) {
        let _ = writeln!(s, "  wire {}_holds = {};", p.name, expr(m, &p.cond));
    }
    let _ = writeln!(s, "  always @* begin\n    if ({seen} && !{rst}) begin");
    for p in &m.props {
        let _ = writeln!(s, "      // {}", p.doc);
        match p.kind {
            PropKind::Assert => {
                let _ = writeln!(s, "      {}: assert ({}_holds);", p.name, p.name);
            }
            PropKind::Assume => {
                let _ = writeln!(s, "      {}: assume ({});", p.name, expr(m, &p.cond));
            }
        }
    }
    let _ = writeln!(s, "    end\n  end\n`endif");
}

/// Statements longer than this are broken over several lines: a wide
/// concatenation would otherwise overflow the line buffers of Verilator's
/// preprocessor (40,000 tokens) and Icarus' lexer.
const MAX_LINE: usize = 1000;

/// Every line longer than [`MAX_LINE`] broken at spaces (which only ever
/// separate tokens in the printed statements) into lines of about 100
/// characters, continued with deeper indentation; a comment continues as a
/// comment.
fn wrap_long_lines(text: &str) -> String {
    if text.lines().all(|l| l.len() <= MAX_LINE) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + text.len() / 50);
    for line in text.lines() {
        let body = line.trim_start();
        if line.len() <= MAX_LINE {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = &line[..line.len() - body.len()];
        // A comment continues as a comment.
        let (cont, body) = match body.strip_prefix("// ") {
            Some(rest) => (format!("{indent}//   "), rest),
            None => (format!("{indent}    "), body),
        };
        let body = if cont.contains("//") { format!("// {body}") } else { body.to_string() };
        let mut cur = String::from(indent);
        for word in body.split(' ') {
            if cur.len() + word.len() + 1 > 100 && cur.len() > cont.len() {
                out.push_str(cur.trim_end());
                out.push('\n');
                cur = cont.clone();
            } else if !cur.trim().is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        out.push_str(&cur);
        out.push('\n');
    }
    out
}
