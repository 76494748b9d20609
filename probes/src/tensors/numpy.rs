//! NumPy arrays and scalars inside a pickle, decoded from the values the safe VM recorded
//! (never by calling numpy): `numpy.core.multiarray._reconstruct` + its BUILD state `(version,
//! shape, dtype, is_fortran, raw bytes)`, protocol-5 `numpy.core.numeric._frombuffer(bytes,
//! dtype, shape, order)`, and `numpy.core.multiarray.scalar(dtype, bytes)` (numpy 2 spells the
//! modules `numpy._core.*`). Only little-endian numeric dtypes are read.

use super::dtype::DType;
use super::pickle::Value;

/// Largest array decoded (elements): statistics like VecNormalize's mean/var are small.
pub const MAX_ELEMENTS: usize = 1 << 24;

/// A decoded array: contiguous little-endian bytes (C order; Fortran-ordered data is kept in
/// memory order, which only matters for 2-D and larger arrays).
#[derive(Debug, Clone, PartialEq)]
pub struct NdArray {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl NdArray {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Every element as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        let n = self.data.len() / self.dtype.size();
        let mut out = vec![0f64; n];
        let mut done = 0;
        while done < n {
            let k = super::stats::decode_f64(
                &self.data[done * self.dtype.size()..],
                self.dtype,
                &mut out[done..],
            );
            if k == 0 {
                break;
            }
            done += k;
        }
        out
    }
}

fn is_numpy(module: &str, core: &str) -> bool {
    module == format!("numpy.core.{core}") || module == format!("numpy._core.{core}")
}

/// The element type a `numpy.dtype('<f8', …)` object names; `None` for big-endian or
/// non-numeric dtypes.
pub fn dtype_of(v: &Value) -> Option<DType> {
    let Value::Object {
        class, args, state, ..
    } = v
    else {
        return None;
    };
    if class.0 != "numpy" || class.1 != "dtype" {
        return None;
    }
    let code = args.first()?.as_str()?;
    // BUILD state (3, '<', …): the byte order; '|' for one-byte types, '=' native (x86: little).
    if let Some(Value::Tuple(st)) = state.as_deref() {
        if st.get(1).and_then(Value::as_str) == Some(">") {
            return None;
        }
    }
    let code = code.trim_start_matches(['<', '=', '|']);
    Some(match code {
        "f8" | "float64" | "d" => DType::F64,
        "f4" | "float32" | "f" => DType::F32,
        "f2" | "float16" | "e" => DType::F16,
        "i8" | "int64" | "q" | "l" => DType::I64,
        "i4" | "int32" | "i" => DType::I32,
        "i2" | "int16" | "h" => DType::I16,
        "i1" | "int8" | "b" => DType::I8,
        "u8" | "uint64" | "Q" | "L" => DType::U64,
        "u4" | "uint32" | "I" => DType::U32,
        "u2" | "uint16" | "H" => DType::U16,
        "u1" | "uint8" | "B" => DType::U8,
        "b1" | "bool" | "?" => DType::Bool,
        _ => return None,
    })
}

fn shape_of(v: &Value) -> Option<Vec<usize>> {
    v.as_seq()?
        .iter()
        .map(|d| d.as_i64().and_then(|i| usize::try_from(i).ok()))
        .collect()
}

fn raw_bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Bytes(b) => Some(b),
        // Protocol 0/1 or a Python-2 pickle: raw data as a latin-1 str of ASCII only.
        Value::Str(s) if s.is_ascii() => Some(s.as_bytes()),
        _ => None,
    }
}

fn build(dtype: DType, shape: Vec<usize>, raw: &[u8]) -> Option<NdArray> {
    let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    if numel > MAX_ELEMENTS || numel.checked_mul(dtype.size())? != raw.len() {
        return None;
    }
    Some(NdArray {
        dtype,
        shape,
        data: raw.to_vec(),
    })
}

/// A numpy array recorded by the pickle VM, when `v` is one (and its bytes match its shape).
pub fn ndarray(v: &Value) -> Option<NdArray> {
    let Value::Object {
        class, args, state, ..
    } = v
    else {
        return None;
    };
    if is_numpy(&class.0, "multiarray") && class.1 == "_reconstruct" {
        let st = state.as_deref()?.as_seq()?;
        let [_, shape, dtype, _fortran, raw] = st else {
            return None;
        };
        return build(dtype_of(dtype)?, shape_of(shape)?, raw_bytes(raw)?);
    }
    if is_numpy(&class.0, "numeric") && class.1 == "_frombuffer" {
        let [raw, dtype, shape, ..] = args.as_slice() else {
            return None;
        };
        return build(dtype_of(dtype)?, shape_of(shape)?, raw_bytes(raw)?);
    }
    if is_numpy(&class.0, "multiarray") && class.1 == "scalar" {
        let [dtype, raw, ..] = args.as_slice() else {
            return None;
        };
        return build(dtype_of(dtype)?, Vec::new(), raw_bytes(raw)?);
    }
    None
}

/// A number: a Python int/float/bool, a numpy scalar, or a one-element array.
pub fn number(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| {
        let a = ndarray(v)?;
        (a.numel() == 1)
            .then(|| a.to_f64().first().copied())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dtype(code: &str) -> Value {
        Value::Object {
            class: ("numpy".into(), "dtype".into()),
            args: vec![
                Value::Str(code.into()),
                Value::Bool(false),
                Value::Bool(true),
            ],
            state: Some(Box::new(Value::Tuple(vec![
                Value::Int(3),
                Value::Str("<".into()),
            ]))),
        }
    }

    #[test]
    fn reconstruct_frombuffer_and_scalar_decode() {
        let raw: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let a = Value::Object {
            class: ("numpy.core.multiarray".into(), "_reconstruct".into()),
            args: vec![],
            state: Some(Box::new(Value::Tuple(vec![
                Value::Int(1),
                Value::Tuple(vec![Value::Int(2)]),
                dtype("f8"),
                Value::Bool(false),
                Value::Bytes(raw.clone()),
            ]))),
        };
        let n = ndarray(&a).unwrap();
        assert_eq!(
            (n.dtype, n.shape.clone(), n.to_f64()),
            (DType::F64, vec![2], vec![1.5, -2.0])
        );
        let b = Value::Object {
            class: ("numpy._core.numeric".into(), "_frombuffer".into()),
            args: vec![
                Value::Bytes(raw[..8].to_vec()),
                dtype("f8"),
                Value::Tuple(vec![Value::Int(1)]),
                Value::Str("C".into()),
            ],
            state: None,
        };
        assert_eq!(number(&b), Some(1.5));
        let s = Value::Object {
            class: ("numpy.core.multiarray".into(), "scalar".into()),
            args: vec![dtype("f4"), Value::Bytes(2.5f32.to_le_bytes().to_vec())],
            state: None,
        };
        assert_eq!(number(&s), Some(2.5));
        // Bytes that do not match the shape, or a big-endian dtype, are not an array.
        let bad = Value::Object {
            class: ("numpy._core.numeric".into(), "_frombuffer".into()),
            args: vec![
                Value::Bytes(raw.clone()),
                dtype("f8"),
                Value::Tuple(vec![Value::Int(3)]),
            ],
            state: None,
        };
        assert_eq!(ndarray(&bad), None);
        let mut be = dtype("f8");
        if let Value::Object { state, .. } = &mut be {
            *state = Some(Box::new(Value::Tuple(vec![
                Value::Int(3),
                Value::Str(">".into()),
            ])));
        }
        assert_eq!(dtype_of(&be), None);
    }
}
