//! The generated C++ shim's inputs: the checked port table, and the C++
//! names Verilator gives the ports.

use super::{words_for, CosimError, DesignSpec, PortDir};
use askama::Template;
use std::collections::HashSet;
use std::path::PathBuf;

#[derive(Template)]
#[template(path = "shim.cpp", escape = "none")]
pub(crate) struct ShimTemplate<'a> {
    pub(crate) abi: u32,
    pub(crate) top: &'a str,
    pub(crate) clock: Option<String>,
    pub(crate) ports: Vec<ShimPort>,
}

/// The native loop of `gpurtl bench harness` (`templates/native.cpp`).
#[derive(Template)]
#[template(path = "native.cpp", escape = "none")]
pub(crate) struct NativeTemplate<'a> {
    pub(crate) top: &'a str,
    pub(crate) clock: String,
    pub(crate) reset: Option<String>,
    pub(crate) ports: Vec<ShimPort>,
}

pub(crate) struct ShimPort {
    /// Verilog name.
    pub(crate) name: String,
    /// Member name in the Verilated C++ class.
    cname: String,
    width: u32,
    /// 32-bit words of the value, and where they start in the port buffer.
    words: usize,
    offset: usize,
    ctype: String,
    input: bool,
    /// The clock: driven by the shim itself, never from the buffer.
    clock: bool,
    /// The reset (for the native loop, which holds it rather than randomizing it).
    pub(crate) reset: bool,
    /// The value mask of a port of at most 64 bits, and of the top word of a wider one.
    mask: String,
    top_mask: String,
}

/// Checks the spec and prepares the per-port template data.
pub(crate) fn validate(spec: &DesignSpec) -> Result<Vec<ShimPort>, CosimError> {
    let bad = |message: String| CosimError::Build {
        log_path: PathBuf::new(),
        message,
    };
    if !is_identifier(&spec.top) {
        return Err(bad(format!(
            "top module name `{}` is not a plain Verilog identifier",
            spec.top
        )));
    }
    if spec.ports.len() > u32::MAX as usize {
        return Err(bad("too many ports".into()));
    }
    let mut seen = HashSet::new();
    let mut ports = Vec::with_capacity(spec.ports.len());
    let mut offset = 0;
    for p in &spec.ports {
        if !is_identifier(&p.name) {
            return Err(bad(format!(
                "port name `{}` is not a plain Verilog identifier",
                p.name
            )));
        }
        if !seen.insert(p.name.as_str()) {
            return Err(bad(format!(
                "port `{}` is listed twice in the DesignSpec",
                p.name
            )));
        }
        if p.width == 0 {
            return Err(bad(format!("port `{}` has width 0", p.name)));
        }
        let words = words_for(p.width);
        let ctype = match p.width {
            1..=8 => "CData".to_string(),
            9..=16 => "SData".to_string(),
            17..=32 => "IData".to_string(),
            33..=64 => "QData".to_string(),
            _ => format!("VlWide<{words}>"),
        };
        ports.push(ShimPort {
            name: p.name.clone(),
            cname: cpp_member_name(&p.name),
            width: p.width,
            words,
            offset,
            ctype,
            input: p.dir == PortDir::Input,
            clock: p.name == spec.clock,
            reset: false,
            mask: format!("{:#x}", if p.width >= 64 { u64::MAX } else { (1u64 << p.width) - 1 }),
            top_mask: format!("{:#x}", if p.width % 32 == 0 { u32::MAX } else { (1u32 << (p.width % 32)) - 1 }),
        });
        offset += words;
    }
    if !spec.clock.is_empty() {
        match spec.ports.iter().find(|p| p.name == spec.clock) {
            None => return Err(CosimError::UnknownPort(spec.clock.clone())),
            Some(p) if p.dir != PortDir::Input || p.width != 1 => {
                return Err(bad(format!("clock `{}` must be a 1-bit input", spec.clock)))
            }
            Some(_) => {}
        }
    }
    Ok(ports)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The C++ member name Verilator gives a port: names that are C++ words get a
/// `__SYM__` prefix, and `__` is escaped as `___05F` (Verilator's
/// `AstNode::encodeName`). A mistake here shows up as a shim compile error.
pub(crate) fn cpp_member_name(name: &str) -> String {
    const CPP_WORDS: &[&str] = &[
        "NULL",
        "abort",
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "atomic_cancel",
        "atomic_commit",
        "atomic_noexcept",
        "auto",
        "bit_vector",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "cdecl",
        "char",
        "char16_t",
        "char32_t",
        "char8_t",
        "class",
        "compl",
        "complex",
        "concept",
        "const",
        "const_cast",
        "const_iterator",
        "consteval",
        "constexpr",
        "constinit",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "deque",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "far",
        "float",
        "for",
        "friend",
        "goto",
        "huge",
        "if",
        "import",
        "inline",
        "int",
        "interrupt",
        "iterator",
        "list",
        "long",
        "map",
        "module",
        "mutable",
        "namespace",
        "near",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "override",
        "pascal",
        "private",
        "protected",
        "public",
        "queue",
        "reference",
        "register",
        "reinterpret_cast",
        "requires",
        "restrict",
        "return",
        "sc_clock",
        "sc_in",
        "sc_inout",
        "sc_out",
        "sc_signal",
        "sensitive",
        "sensitive_neg",
        "sensitive_pos",
        "set",
        "short",
        "signed",
        "sizeof",
        "stack",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "synchronized",
        "template",
        "this",
        "thread_local",
        "throw",
        "transaction_safe",
        "transaction_safe_dynamic",
        "true",
        "try",
        "type_info",
        "typedef",
        "typeid",
        "typename",
        "uint16_t",
        "uint32_t",
        "uint8_t",
        "union",
        "unsigned",
        "using",
        "vector",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
    ];
    let mut out = String::with_capacity(name.len() + 8);
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' && bytes.get(i + 1) == Some(&b'_') {
            out.push_str("___05F");
            i += 2;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    if CPP_WORDS.contains(&name) {
        out.insert_str(0, "__SYM__");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_follow_verilator_mangling() {
        assert_eq!(cpp_member_name("in_valid_i"), "in_valid_i");
        assert_eq!(cpp_member_name("in__x"), "in___05Fx");
        assert_eq!(cpp_member_name("a___b"), "a___05F_b");
        assert_eq!(cpp_member_name("goto"), "__SYM__goto");
        assert_eq!(cpp_member_name("_u"), "_u");
    }
}
