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

/// Read a JSON file named by the user. `what` names it in messages
/// ("input file", "params file").
pub fn read(path: &Path, what: &str) -> Result<Value> {
    let text = read_text(path, what)?;
    parse(&text).map_err(|e| not_json(path, what, &e))
}

/// The message of a file that is not valid JSON.
pub fn not_json(path: &Path, what: &str, e: &serde_json::Error) -> Error {
    Error::Bad(format!("{what} `{}`: not valid JSON: {e}", path.display()))
}

/// Read a text file named by the user, size-limited as [`read`] is.
pub fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = read_bytes(path, what)?;
    String::from_utf8(bytes).map_err(|e| {
        Error::Bad(format!("{what} `{}`: cannot be read: not UTF-8 text (byte {})", path.display(), e.utf8_error().valid_up_to()))
    })
}

/// Read a file named by the user, at most [`MAX_INPUT_BYTES`] long.
pub fn read_bytes(path: &Path, what: &str) -> Result<Vec<u8>> {
    let shown = path.display();
    let bad = |why: String| Error::Bad(format!("{what} `{shown}`: {why}"));
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    if meta.is_file() && meta.len() > MAX_INPUT_BYTES {
        return Err(bad(format!(
            "{} bytes is larger than the limit of {} bytes (16 MiB); split the workload into several runs",
            meta.len(),
            MAX_INPUT_BYTES
        )));
    }
    std::fs::read(path).map_err(|e| bad(format!("cannot be read: {e}")))
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
    fn repeated_keys_are_errors_anywhere() {
        assert_eq!(parse(r#"{"a": [1, {"b": 2}], "c": null}"#).unwrap(), serde_json::json!({"a": [1, {"b": 2}], "c": null}));
        let e = parse(r#"{"ops": [{"op": "x", "op": "y"}]}"#).unwrap_err().to_string();
        assert!(e.starts_with("key `op` appears twice in one object at line 1"), "{e}");
        assert!(parse("{} {}").is_err());
    }
}
