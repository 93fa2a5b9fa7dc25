//! Legal, stable Verilog identifiers.
//!
//! A user name is kept as written when it is a legal identifier, not a
//! Verilog/SystemVerilog keyword and not taken; otherwise it is changed in a
//! predictable way (illegal characters to `_`, a keyword gets a trailing `_`,
//! a repeat gets `_1`, `_2`, ...), so the same description always yields the
//! same names.

use std::collections::HashSet;

/// Verilog-2005 and SystemVerilog-2017 reserved words: a name that is a
/// keyword in either breaks some tool in the flow.
const KEYWORDS: &[&str] = &[
    "accept_on", "alias", "always", "always_comb", "always_ff", "always_latch", "and", "assert", "assign",
    "assume", "automatic", "before", "begin", "bind", "bins", "binsof", "bit", "break", "buf", "bufif0",
    "bufif1", "byte", "case", "casex", "casez", "cell", "chandle", "checker", "class", "clocking", "cmos",
    "config", "const", "constraint", "context", "continue", "cover", "covergroup", "coverpoint", "cross",
    "deassign", "default", "defparam", "design", "disable", "dist", "do", "edge", "else", "end", "endcase",
    "endchecker", "endclass", "endclocking", "endconfig", "endfunction", "endgenerate", "endgroup",
    "endinterface", "endmodule", "endpackage", "endprimitive", "endprogram", "endproperty", "endspecify",
    "endsequence", "endtable", "endtask", "enum", "event", "eventually", "expect", "export", "extends",
    "extern", "final", "first_match", "for", "force", "foreach", "forever", "fork", "forkjoin", "function",
    "generate", "genvar", "global", "highz0", "highz1", "if", "iff", "ifnone", "ignore_bins",
    "illegal_bins", "implements", "implies", "import", "incdir", "include", "initial", "inout", "input",
    "inside", "instance", "int", "integer", "interconnect", "interface", "intersect", "join", "join_any",
    "join_none", "large", "let", "liblist", "library", "local", "localparam", "logic", "longint",
    "macromodule", "matches", "medium", "modport", "module", "nand", "negedge", "nettype", "new",
    "nexttime", "nmos", "nor", "noshowcancelled", "not", "notif0", "notif1", "null", "or", "output",
    "package", "packed", "parameter", "pmos", "posedge", "primitive", "priority", "program", "property",
    "protected", "pull0", "pull1", "pulldown", "pullup", "pulsestyle_ondetect", "pulsestyle_onevent",
    "pure", "rand", "randc", "randcase", "randsequence", "rcmos", "real", "realtime", "ref", "reg",
    "reject_on", "release", "repeat", "restrict", "return", "rnmos", "rpmos", "rtran", "rtranif0",
    "rtranif1", "s_always", "s_eventually", "s_nexttime", "s_until", "s_until_with", "scalared",
    "sequence", "shortint", "shortreal", "showcancelled", "signed", "small", "soft", "solve", "specify",
    "specparam", "static", "string", "strong", "strong0", "strong1", "struct", "super", "supply0",
    "supply1", "sync_accept_on", "sync_reject_on", "table", "tagged", "task", "this", "throughout", "time",
    "timeprecision", "timeunit", "tran", "tranif0", "tranif1", "tri", "tri0", "tri1", "triand", "trior",
    "trireg", "type", "typedef", "union", "unique", "unique0", "unsigned", "until", "until_with",
    "untyped", "use", "uwire", "var", "vectored", "virtual", "void", "wait", "wait_order", "wand", "weak",
    "weak0", "weak1", "while", "wildcard", "wire", "with", "within", "wor", "xnor", "xor",
];

pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

/// The legal identifier closest to `name`.
pub fn legalize(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if is_keyword(&s) {
        s.push('_');
    }
    s
}

#[derive(Default)]
pub struct Namer {
    taken: HashSet<String>,
}

impl Namer {
    /// A unique legal name, as close to `name` as possible.
    pub fn claim(&mut self, name: &str) -> String {
        let base = legalize(name);
        let mut cand = base.clone();
        let mut n = 0;
        while !self.taken.insert(cand.clone()) {
            n += 1;
            cand = format!("{base}_{n}");
        }
        cand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_table_has_no_repeats() {
        let set: HashSet<_> = KEYWORDS.iter().collect();
        assert_eq!(set.len(), KEYWORDS.len());
    }

    #[test]
    fn names_are_legal_unique_and_stable() {
        let mut n = Namer::default();
        assert_eq!(n.claim("data_q"), "data_q");
        assert_eq!(n.claim("data_q"), "data_q_1");
        assert_eq!(n.claim("reg"), "reg_");
        assert_eq!(n.claim("always_ff"), "always_ff_");
        assert_eq!(n.claim("3rd lane"), "_3rd_lane");
    }
}
