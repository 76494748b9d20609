//! Reading the embedded playbook's build-time rendering: each shipped YAML document, encoded
//! by `build.rs` in a compact self-describing form (tagged values, strings and lengths up
//! front), read here through serde exactly as the YAML is (same visitor calls: unsigned,
//! signed and float numbers, strings, sequences, mappings with string keys, null). Start-up
//! copies strings out of it instead of parsing text; every value's length is known before
//! it is read, so lists are allocated once.
//!
//! Format (all integers little-endian): u32 length of the string table, the string table (every
//! string of the document, UTF-8, one after another in the order they are read: checked once,
//! not string by string), then the value. A value is a tag byte, then
//! `NULL` | `FALSE` | `TRUE` | `U64` u64 | `I64` i64 | `F64` f64 bits | `STR` u32 length (the
//! next that many bytes of the table) | `SEQ` u32 count, values | `MAP` u32 count, (key value,
//! value) pairs. `pack_write.rs` writes it (for build.rs and the tests); a test reads every
//! shipped file both ways.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::pack_write::{F64, FALSE, I64, MAP, NULL, SEQ, STR, TRUE, U64};

/// A rendering that does not read as the type asked for (the caller reads the YAML instead).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("packed playbook: {0}")]
pub struct PackedError(String);

impl de::Error for PackedError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        PackedError(msg.to_string())
    }
}

fn err(msg: &str) -> PackedError {
    PackedError(msg.to_string())
}

/// One value of type `T` read from the whole of `bytes`.
pub fn from_bytes<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, PackedError> {
    let mut r = Reader {
        buf: bytes,
        strs: "",
    };
    let n = r.len()?;
    r.strs = std::str::from_utf8(r.take(n)?).map_err(|_| err("strings that are not UTF-8"))?;
    let v = T::deserialize(&mut r)?;
    if !r.buf.is_empty() || !r.strs.is_empty() {
        return Err(err("bytes after the value"));
    }
    Ok(v)
}

struct Reader<'de> {
    buf: &'de [u8],
    /// The string table's part not read yet.
    strs: &'de str,
}

impl<'de> Reader<'de> {
    fn take(&mut self, n: usize) -> Result<&'de [u8], PackedError> {
        if self.buf.len() < n {
            return Err(err("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn tag(&mut self) -> Result<u8, PackedError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, PackedError> {
        let b: [u8; 8] = self.take(8)?.try_into().map_err(|_| err("truncated"))?;
        Ok(u64::from_le_bytes(b))
    }

    fn len(&mut self) -> Result<usize, PackedError> {
        let b: [u8; 4] = self.take(4)?.try_into().map_err(|_| err("truncated"))?;
        Ok(u32::from_le_bytes(b) as usize)
    }

    fn str(&mut self) -> Result<&'de str, PackedError> {
        let n = self.len()?;
        let (head, rest) = self
            .strs
            .split_at_checked(n)
            .ok_or_else(|| err("a string past the table or inside a character"))?;
        self.strs = rest;
        Ok(head)
    }
}

/// The items of a sequence or the pairs of a mapping still to read.
struct Items<'a, 'de> {
    r: &'a mut Reader<'de>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = PackedError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, PackedError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.r).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> MapAccess<'de> for Items<'_, 'de> {
    type Error = PackedError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, PackedError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.r).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, PackedError> {
        seed.deserialize(&mut *self.r)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> Deserializer<'de> for &mut Reader<'de> {
    type Error = PackedError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, PackedError> {
        match self.tag()? {
            NULL => visitor.visit_unit(),
            FALSE => visitor.visit_bool(false),
            TRUE => visitor.visit_bool(true),
            U64 => visitor.visit_u64(self.u64()?),
            I64 => visitor.visit_i64(self.u64()? as i64),
            F64 => visitor.visit_f64(f64::from_bits(self.u64()?)),
            STR => visitor.visit_borrowed_str(self.str()?),
            SEQ => {
                let left = self.len()?;
                let mut items = Items { r: self, left };
                let v = visitor.visit_seq(&mut items)?;
                match items.left {
                    0 => Ok(v),
                    _ => Err(err("a sequence longer than its type")),
                }
            }
            MAP => {
                let left = self.len()?;
                let mut items = Items { r: self, left };
                let v = visitor.visit_map(&mut items)?;
                match items.left {
                    0 => Ok(v),
                    _ => Err(err("a mapping longer than its type")),
                }
            }
            _ => Err(err("unknown tag")),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, PackedError> {
        if self.buf.first() == Some(&NULL) {
            self.buf = &self.buf[1..];
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, PackedError> {
        visitor.visit_newtype_struct(self)
    }

    /// Unit variants only (the playbook's enums are words); anything else is refused.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, PackedError> {
        match self.tag()? {
            STR => visitor.visit_enum(de::value::BorrowedStrDeserializer::new(self.str()?)),
            _ => Err(err("an enum that is not a word")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A JSON value in the packed form, written as build.rs writes it (JSON is YAML).
    fn pack_json(v: &serde_json::Value, out: &mut Vec<u8>) {
        out.extend(crate::catalog::pack_write::to_packed(&v.to_string()));
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        name: String,
        #[serde(default)]
        maybe: Option<String>,
        n: u32,
        neg: i32,
        x: f64,
        flag: bool,
        list: Vec<String>,
        kind: crate::catalog::Domain,
        by: BTreeMap<String, crate::catalog::Threshold>,
    }

    #[test]
    fn reads_what_json_reads() {
        let v = serde_json::json!({
            "name": "a \"quoted\" é", "maybe": null, "n": 3, "neg": -4, "x": 0.25,
            "flag": true, "list": ["x", "y"], "kind": "rl", "by": {"lo": 1, "hi": 1.5, "w": "p"}
        });
        let mut bytes = Vec::new();
        pack_json(&v, &mut bytes);
        let a: Doc = from_bytes(&bytes).unwrap();
        let b: Doc = serde_json::from_value(v).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.maybe, None);
    }

    #[test]
    fn refuses_what_does_not_fit_without_panicking() {
        let mut bytes = Vec::new();
        pack_json(&serde_json::json!({"name": "a", "colour": 1}), &mut bytes);
        let e = from_bytes::<Doc>(&bytes).unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        // Every truncation of a good rendering is an error, never a panic.
        let mut good = Vec::new();
        pack_json(
            &serde_json::json!({"name": "a", "n": 1, "neg": -1, "x": 1.0, "flag": false,
            "list": [], "kind": "llm", "by": {}}),
            &mut good,
        );
        assert!(from_bytes::<Doc>(&good).is_ok());
        for cut in 0..good.len() {
            assert!(from_bytes::<Doc>(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = good.clone();
        long.push(NULL);
        assert!(from_bytes::<Doc>(&long).is_err());
        assert!(from_bytes::<Doc>(&[99]).is_err());
    }
}
