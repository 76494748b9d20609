//! Python-style JSON: `NaN`, `Infinity` and `-Infinity` literals (which `json.dumps` writes
//! and strict JSON rejects) read as floats; steps as integers.

use std::borrow::Cow;
use std::path::Path;

use crate::error::{ReadError, Result};

/// Python's `json.dumps` writes `NaN`, `Infinity` and `-Infinity`, which strict JSON rejects.
/// Outside strings only, replace them with string sentinels that [`py_number`] turns back into
/// floats. Borrows when the text has none.
pub(crate) fn sanitize_py_json(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.iter().any(|&b| b == b'N' || b == b'I') {
        return Cow::Borrowed(text);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut in_str = false;
    let mut escaped = false;
    let mut i = 0;
    let mut copied = 0;
    while let Some(&b) = text.get(i) {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        let rest = text.get(i..).unwrap_or(&[]);
        let hit: Option<(usize, &[u8])> = if rest.starts_with(b"-Infinity") {
            Some((9, SENTINEL_NEG_INF))
        } else if rest.starts_with(b"Infinity") {
            Some((8, SENTINEL_INF))
        } else if rest.starts_with(b"NaN") {
            Some((3, SENTINEL_NAN))
        } else {
            None
        };
        match hit {
            Some((n, rep)) => {
                let o = out.get_or_insert_with(|| Vec::with_capacity(text.len() + 64));
                o.extend_from_slice(text.get(copied..i).unwrap_or(&[]));
                o.extend_from_slice(rep);
                i += n;
                copied = i;
            }
            None => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.extend_from_slice(text.get(copied..).unwrap_or(&[]));
            Cow::Owned(o)
        }
    }
}

const SENTINEL_NAN: &[u8] = br#""\u0000NaN""#;
const SENTINEL_INF: &[u8] = br#""\u0000Infinity""#;
const SENTINEL_NEG_INF: &[u8] = br#""\u0000-Infinity""#;

/// A JSON value as a float: numbers, and the sentinels [`sanitize_py_json`] wrote.
pub(crate) fn py_number(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => match s.as_str() {
            "\u{0}NaN" => Some(f64::NAN),
            "\u{0}Infinity" => Some(f64::INFINITY),
            "\u{0}-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// A JSON value as a step: a non-negative whole number.
pub(crate) fn json_step(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(f64_step)),
        _ => None,
    }
}

/// A float as a step, when it is a finite non-negative whole number.
pub(crate) fn f64_step(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19).then_some(v as u64)
}

/// Parse JSON text written by Python (NaN/Infinity literals allowed outside strings).
pub(crate) fn parse_py_json(path: &Path, bytes: &[u8]) -> Result<serde_json::Value> {
    let clean = sanitize_py_json(bytes);
    serde_json::from_slice(&clean)
        .map_err(|e| ReadError::format(path, format!("invalid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_are_replaced_only_outside_strings() {
        let text =
            br#"{"a": NaN, "b": -Infinity, "c": Infinity, "s": "NaN \" Infinity", "d": [NaN]}"#;
        let v: serde_json::Value = serde_json::from_slice(&sanitize_py_json(text)).unwrap();
        assert!(py_number(&v["a"]).unwrap().is_nan());
        assert_eq!(py_number(&v["b"]), Some(f64::NEG_INFINITY));
        assert_eq!(py_number(&v["c"]), Some(f64::INFINITY));
        assert_eq!(v["s"], "NaN \" Infinity");
        assert!(py_number(&v["d"][0]).unwrap().is_nan());
        assert!(matches!(sanitize_py_json(br#"{"x": 1}"#), Cow::Borrowed(_)));
    }
}
