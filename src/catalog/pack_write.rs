//! Writing the packed form of a playbook file that `packed.rs` reads: its tags and the encoder
//! over a parsed YAML value. One copy serves build.rs (which includes this file with `#[path]`
//! to prepare the embedded playbook) and the reader's tests, so the two cannot drift apart.
// In the library this file is only the tags and the tests' writer.
#![cfg_attr(not(test), allow(dead_code))]

/// The document in the packed form `src/catalog/packed.rs` reads, or empty when it has no
/// faithful packed form (a non-string key, a tag, a parse error: the run-time YAML parse
/// reports those with their line).
pub fn to_packed(text: &str) -> Vec<u8> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let Ok(v) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return Vec::new();
    };
    let (mut strs, mut body) = (Vec::new(), Vec::new());
    if pack(&v, &mut strs, &mut body).is_none() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(4 + strs.len() + body.len());
    out.extend(
        u32::try_from(strs.len())
            .expect("playbook file under 4 GiB")
            .to_le_bytes(),
    );
    out.extend(strs);
    out.extend(body);
    out
}

pub const NULL: u8 = 0;
pub const FALSE: u8 = 1;
pub const TRUE: u8 = 2;
pub const U64: u8 = 3;
pub const I64: u8 = 4;
pub const F64: u8 = 5;
pub const STR: u8 = 6;
pub const SEQ: u8 = 7;
pub const MAP: u8 = 8;

/// One value into `out`, its strings' bytes onto the string table `strs`: numbers as the YAML
/// reader hands them over (unsigned, else signed, else float). `None` for a tag or a key that
/// is not a string (no faithful packed form).
fn pack(v: &serde_yaml_ng::Value, strs: &mut Vec<u8>, out: &mut Vec<u8>) -> Option<()> {
    use serde_yaml_ng::Value;
    let len = |n: usize, out: &mut Vec<u8>| {
        out.extend(
            u32::try_from(n)
                .expect("playbook value under 4 GiB")
                .to_le_bytes(),
        )
    };
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(U64);
                out.extend(u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                out.push(I64);
                out.extend(i.to_le_bytes());
            } else {
                out.push(F64);
                out.extend(n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(STR);
            len(s.len(), out);
            strs.extend(s.as_bytes());
        }
        Value::Sequence(items) => {
            out.push(SEQ);
            len(items.len(), out);
            for x in items {
                pack(x, strs, out)?;
            }
        }
        Value::Mapping(m) => {
            out.push(MAP);
            len(m.len(), out);
            for (k, x) in m {
                if !k.is_string() {
                    return None;
                }
                pack(k, strs, out)?;
                pack(x, strs, out)?;
            }
        }
        Value::Tagged(_) => return None,
    }
    Some(())
}
