//! Element types of tensor files: the safetensors names, the torch storage class names, sizes,
//! and the mapping onto candle's `DType` (widening the ones candle lacks).

use std::fmt;

/// The element type of a stored tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl DType {
    /// All element types, in declaration order.
    pub const ALL: [DType; 15] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// The safetensors spelling (`"F32"`, `"BF16"`, `"F8_E4M3"` …).
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "F64",
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F8E4M3 => "F8_E4M3",
            DType::F8E5M2 => "F8_E5M2",
            DType::I64 => "I64",
            DType::I32 => "I32",
            DType::I16 => "I16",
            DType::I8 => "I8",
            DType::U8 => "U8",
            DType::U16 => "U16",
            DType::U32 => "U32",
            DType::U64 => "U64",
            DType::Bool => "BOOL",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F64 | DType::F32 | DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2
        )
    }

    /// Integer types (not `Bool`).
    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    /// Parses a safetensors dtype name (case-insensitive; `F8E4M3` and `F8_E4M3` both work).
    pub fn from_safetensors(s: &str) -> Option<DType> {
        let up = s.to_ascii_uppercase().replace('_', "");
        Some(match up.as_str() {
            "F64" => DType::F64,
            "F32" => DType::F32,
            "F16" => DType::F16,
            "BF16" => DType::BF16,
            "F8E4M3" | "F8E4M3FN" => DType::F8E4M3,
            "F8E5M2" => DType::F8E5M2,
            "I64" => DType::I64,
            "I32" => DType::I32,
            "I16" => DType::I16,
            "I8" => DType::I8,
            "U8" => DType::U8,
            "U16" => DType::U16,
            "U32" => DType::U32,
            "U64" => DType::U64,
            "BOOL" => DType::Bool,
            _ => return None,
        })
    }

    /// Maps a torch storage class name (`FloatStorage`, `BFloat16Storage` …) to its element type.
    /// `UntypedStorage` holds raw bytes and maps to `U8`.
    pub fn from_torch_storage(name: &str) -> Option<DType> {
        Some(match name {
            "DoubleStorage" => DType::F64,
            "FloatStorage" => DType::F32,
            "HalfStorage" => DType::F16,
            "BFloat16Storage" => DType::BF16,
            "Float8_e4m3fnStorage" | "Float8_e4m3fnuzStorage" => DType::F8E4M3,
            "Float8_e5m2Storage" | "Float8_e5m2fnuzStorage" => DType::F8E5M2,
            "LongStorage" => DType::I64,
            "IntStorage" => DType::I32,
            "ShortStorage" => DType::I16,
            "CharStorage" => DType::I8,
            "ByteStorage" | "UntypedStorage" => DType::U8,
            "UInt16Storage" => DType::U16,
            "UInt32Storage" => DType::U32,
            "UInt64Storage" => DType::U64,
            "BoolStorage" => DType::Bool,
            _ => return None,
        })
    }

    /// Maps a torch dtype attribute name (`float32`, `bfloat16`, `long` …) to its element type.
    pub fn from_torch_dtype(name: &str) -> Option<DType> {
        Some(match name {
            "float64" | "double" => DType::F64,
            "float32" | "float" => DType::F32,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float8_e4m3fn" | "float8_e4m3fnuz" => DType::F8E4M3,
            "float8_e5m2" | "float8_e5m2fnuz" => DType::F8E5M2,
            "int64" | "long" => DType::I64,
            "int32" | "int" => DType::I32,
            "int16" | "short" => DType::I16,
            "int8" => DType::I8,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "bool" => DType::Bool,
            _ => return None,
        })
    }

    /// The candle dtype a tensor of this type is loaded as. Types candle lacks are widened:
    /// `I8`→`I16`, `U16`→`U32`, `U64`→`I64` (values above `i64::MAX` are an error), `Bool`→`U8`,
    /// `F8E5M2`→`F32`.
    pub fn candle(self) -> candle_core::DType {
        use candle_core::DType as C;
        match self {
            DType::F64 => C::F64,
            DType::F32 | DType::F8E5M2 => C::F32,
            DType::F16 => C::F16,
            DType::BF16 => C::BF16,
            DType::F8E4M3 => C::F8E4M3,
            DType::I64 | DType::U64 => C::I64,
            DType::I32 => C::I32,
            DType::I16 | DType::I8 => C::I16,
            DType::U8 | DType::Bool => C::U8,
            DType::U16 | DType::U32 => C::U32,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// f16 bits → f32 with bit operations only (exact; handles subnormals, inf and NaN).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    // Re-bias by scaling: exact for normals and subnormals.
    let scaled = f32::from_bits(em << 13) * f32::from_bits(0x7780_0000); // 2^112
    let special = f32::from_bits((em << 13) | 0x7f80_0000);
    let mag = if em >= 0x7c00 { special } else { scaled };
    f32::from_bits(mag.to_bits() | sign)
}

/// bf16 bits → f32 (exact).
#[inline(always)]
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// float8 e4m3fn → f32 (no infinities; `S.1111.111` is NaN).
pub fn f8e4m3_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = ((b >> 3) & 0x0f) as i32;
    let m = (b & 0x07) as f32;
    if e == 0x0f && b & 0x07 == 0x07 {
        return f32::NAN;
    }
    let v = if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    };
    sign * v
}

/// float8 e5m2 → f32 (IEEE-like: exponent 31 is inf/NaN).
pub fn f8e5m2_to_f32(b: u8) -> f32 {
    f16_to_f32((b as u16) << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_matches_half_for_every_bit_pattern() {
        for h in 0..=u16::MAX {
            let ours = f16_to_f32(h);
            let theirs = half::f16::from_bits(h).to_f32();
            assert!(
                ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                "{h:#x}: {ours} vs {theirs}"
            );
        }
    }

    #[test]
    fn f8_conversions_cover_known_values() {
        assert_eq!(f8e4m3_to_f32(0x38), 1.0);
        assert_eq!(f8e4m3_to_f32(0x7e), 448.0);
        assert!(f8e4m3_to_f32(0x7f).is_nan());
        assert_eq!(f8e4m3_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(f8e5m2_to_f32(0x3c), 1.0);
        assert_eq!(f8e5m2_to_f32(0x7c), f32::INFINITY);
        assert_eq!(f8e5m2_to_f32(0xc0), -2.0);
    }

    #[test]
    fn names_round_trip_and_torch_storages_map() {
        for d in DType::ALL {
            assert_eq!(DType::from_safetensors(d.name()), Some(d));
        }
        assert_eq!(
            DType::from_torch_storage("BFloat16Storage"),
            Some(DType::BF16)
        );
        assert_eq!(DType::from_torch_storage("LongStorage"), Some(DType::I64));
        assert_eq!(
            DType::from_torch_storage("Float8_e4m3fnStorage"),
            Some(DType::F8E4M3)
        );
        assert_eq!(DType::from_torch_storage("os.system"), None);
        assert_eq!(DType::from_safetensors("F4"), None);
    }
}
