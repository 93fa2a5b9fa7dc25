//! Reading the JSON files a user gives (run inputs, parameter files):
//! size-limited, and strict about repeated keys, which plain JSON parsing
//! would silently resolve to the last one.

use crate::error::{Error, Result};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::path::Path;

/// The largest input file `gpurtl` reads: 16 MiB. A run's memory grows
/// with its input (the golden model expands a GEMM into its step program),
/// so an input past this is refused with a message rather than read.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Read a JSON file named by the user with the option `option` (`--input`,
/// `--params`; a command's own argument by its name, `IN`). A UTF-8 byte
/// order mark before the JSON is skipped.
pub fn read(path: &Path, option: &str) -> Result<Value> {
    let text = read_text(path, option)?;
    parse(&text).map_err(|e| not_json(path, what(option), &e))
}

/// What the file named by `option` is, in messages about its content.
pub fn what(option: &str) -> &'static str {
    match option {
        "--params" => "params file",
        _ => "input file",
    }
}

/// How messages name the option (or argument) that named a file.
fn named(option: &str, path: &Path) -> String {
    let kind = if option.starts_with('-') { "option" } else { "argument" };
    format!("{kind} `{option}` = `{}`", path.display())
}

/// The message of a file that is not valid JSON.
pub fn not_json(path: &Path, what: &str, e: &serde_json::Error) -> Error {
    Error::Bad(format!("{what} `{}`: not valid JSON: {e}", path.display()))
}

/// Read a text file named by the user, size-limited as [`read_bytes`]; a
/// UTF-8 byte order mark at its start is dropped (editors on Windows write
/// one; it is no part of the text).
pub fn read_text(path: &Path, option: &str) -> Result<String> {
    let bytes = read_bytes(path, option)?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        Error::Bad(format!("{}: cannot be read: not UTF-8 text (byte {})", named(option, path), e.utf8_error().valid_up_to()))
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Read a file named by the user, at most [`MAX_INPUT_BYTES`] long, through
/// the one size-limited reader ([`gpurtl_sim::files::read_limited`]) that
/// every input file goes through, whatever its kind (a device or a pipe is
/// cut off past the limit too).
pub fn read_bytes(path: &Path, option: &str) -> Result<Vec<u8>> {
    gpurtl_sim::files::read_limited(path, MAX_INPUT_BYTES).map_err(|e| {
        let too_large = matches!(e, gpurtl_sim::files::ReadError::TooLarge { .. });
        let split = if too_large && option == "--input" { "; split the workload into several runs" } else { "" };
        Error::Bad(format!("{}: {}{split}", named(option, path), e.reason(MAX_INPUT_BYTES)))
    })
}

/// Parse JSON text; a key repeated within one object is an error.
pub fn parse(text: &str) -> serde_json::Result<Value> {
    let mut d = serde_json::Deserializer::from_str(text);
    let v = Strict::deserialize(&mut d)?.0;
    d.end()?;
    Ok(v)
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        while let Some(Strict(x)) = seq.next_element()? {
            out.push(x);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("key `{k}` appears twice in one object")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_skipped_and_endless_files_are_cut_off() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.json");
        std::fs::write(&p, b"\xef\xbb\xbf{\"a\": 1}").unwrap();
        assert_eq!(read(&p, "--params").unwrap(), serde_json::json!({"a": 1}));
        // Only at the start: elsewhere it is a character like any other.
        std::fs::write(&p, b"{\"a\": 1}\xef\xbb\xbf").unwrap();
        assert!(read(&p, "--params").unwrap_err().message().starts_with(&format!("params file `{}`: not valid JSON", p.display())));
        #[cfg(unix)]
        {
            let e = read(Path::new("/dev/zero"), "--params").unwrap_err();
            assert_eq!(e.code(), 2);
            assert_eq!(
                e.message(),
                "option `--params` = `/dev/zero`: more than 16777216 bytes arrived (it is not a regular file); \
                 the limit is 16777216 bytes (16 MiB)"
            );
        }
    }

    #[test]
    fn repeated_keys_are_errors_anywhere() {
        assert_eq!(parse(r#"{"a": [1, {"b": 2}], "c": null}"#).unwrap(), serde_json::json!({"a": [1, {"b": 2}], "c": null}));
        let e = parse(r#"{"ops": [{"op": "x", "op": "y"}]}"#).unwrap_err().to_string();
        assert!(e.starts_with("key `op` appears twice in one object at line 1"), "{e}");
        assert!(parse("{} {}").is_err());
    }
}
