//! The candle side: raw little-endian bytes → `candle_core::Tensor` on any device (widening
//! the dtypes candle lacks), and tensor statistics computed with candle ops for tensors that
//! already live on a GPU. On CPU prefer the fused pass in [`super::stats`].

use std::path::Path;

use candle_core::{DType as C, Device, Tensor};

use super::dtype::{f8e5m2_to_f32, DType};
use super::stats::{LogHist, TensorStats};
use crate::error::{ReadError, Result};

/// Builds a tensor of `shape` on `device` from contiguous little-endian bytes of `dt`.
pub fn from_bytes(
    path: &Path,
    b: &[u8],
    dt: DType,
    shape: &[usize],
    device: &Device,
) -> Result<Tensor> {
    let err =
        |e: candle_core::Error| ReadError::format(path, format!("loading tensor into candle: {e}"));
    let shape = shape.to_vec();
    let t = match dt {
        DType::I8 => Tensor::from_vec(
            b.iter().map(|&x| x as i8 as i16).collect::<Vec<_>>(),
            shape,
            device,
        ),
        DType::U16 => Tensor::from_vec(
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32)
                .collect::<Vec<_>>(),
            shape,
            device,
        ),
        DType::U64 => {
            let v: Option<Vec<i64>> = b
                .chunks_exact(8)
                .map(|c| i64::try_from(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).ok())
                .collect();
            let v = v.ok_or_else(|| {
                ReadError::format(
                    path,
                    "U64 tensor has values above i64::MAX; candle cannot hold it",
                )
            })?;
            Tensor::from_vec(v, shape, device)
        }
        DType::F8E5M2 => Tensor::from_vec(
            b.iter().map(|&x| f8e5m2_to_f32(x)).collect::<Vec<_>>(),
            shape,
            device,
        ),
        DType::Bool => Tensor::from_raw_buffer(b, C::U8, &shape, device),
        _ => Tensor::from_raw_buffer(b, dt.candle(), &shape, device),
    };
    t.map_err(err)
}

/// Statistics with candle ops (for a tensor on a CUDA device; works on CPU too, slowly).
/// The log histogram is not computed on the device: only `hist.zero` is filled.
pub fn stats_on_device(t: &Tensor) -> candle_core::Result<TensorStats> {
    let x = t.flatten_all()?.to_dtype(C::F32)?;
    let count = x.elem_count() as u64;
    if count == 0 {
        return Ok(super::stats::tensor_stats(&[], DType::F32));
    }
    let sum_f64 = |m: &Tensor| -> candle_core::Result<f64> {
        m.to_dtype(C::F64)?.sum_all()?.to_scalar::<f64>()
    };
    let absx = x.abs()?;
    let fin = absx.lt(f32::INFINITY)?; // NaN compares false
    let finite = sum_f64(&fin)? as u64;
    let nan = sum_f64(&x.ne(&x)?)? as u64;
    let zeros = sum_f64(&x.eq(0f32)?)? as u64;
    let inf = count - finite - nan;
    let hist = LogHist {
        zero: zeros,
        ..LogHist::default()
    };
    if finite == 0 {
        return Ok(TensorStats {
            count,
            finite,
            mean: f64::NAN,
            std: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            absmax: f64::NAN,
            zeros,
            nan,
            inf,
            l2: 0.0,
            hist,
        });
    }
    let zero = x.zeros_like()?;
    let xf = fin.where_cond(&x, &zero)?.to_dtype(C::F64)?;
    let n = finite as f64;
    let sumsq = xf.sqr()?.sum_all()?.to_scalar::<f64>()?;
    let mean = xf.sum_all()?.to_scalar::<f64>()? / n;
    let finf = fin.to_dtype(C::F64)?;
    let m2 = xf
        .affine(1.0, -mean)?
        .mul(&finf)?
        .sqr()?
        .sum_all()?
        .to_scalar::<f64>()?;
    let pinf = Tensor::full(f32::INFINITY, x.shape(), x.device())?;
    let ninf = Tensor::full(f32::NEG_INFINITY, x.shape(), x.device())?;
    let min = fin.where_cond(&x, &pinf)?.min_all()?.to_scalar::<f32>()? as f64;
    let max = fin.where_cond(&x, &ninf)?.max_all()?.to_scalar::<f32>()? as f64;
    Ok(TensorStats {
        count,
        finite,
        mean,
        std: (m2 / n).sqrt(),
        min,
        max,
        absmax: min.abs().max(max.abs()),
        zeros,
        nan,
        inf,
        l2: sumsq.sqrt(),
        hist,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_stats_agree_with_the_fused_pass_on_cpu() {
        let v = [0.5f32, -1.5, 0.0, f32::NAN, 2.0, f32::INFINITY, 3.25];
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let t = from_bytes(Path::new("t"), &b, DType::F32, &[7], &Device::Cpu).unwrap();
        let d = stats_on_device(&t).unwrap();
        let c = super::super::stats::tensor_stats(&b, DType::F32);
        assert_eq!(
            (d.count, d.finite, d.nan, d.inf, d.zeros),
            (c.count, c.finite, c.nan, c.inf, c.zeros)
        );
        for (a, e) in [
            (d.mean, c.mean),
            (d.std, c.std),
            (d.min, c.min),
            (d.max, c.max),
            (d.l2, c.l2),
        ] {
            assert!((a - e).abs() < 1e-9, "{a} vs {e}");
        }
    }

    #[test]
    fn widened_dtypes_load() {
        let t = from_bytes(Path::new("t"), &[0xff, 0x01], DType::I8, &[2], &Device::Cpu).unwrap();
        assert_eq!(t.to_vec1::<i16>().unwrap(), vec![-1, 1]);
        let t = from_bytes(Path::new("t"), &[1, 0], DType::Bool, &[2], &Device::Cpu).unwrap();
        assert_eq!(t.dtype(), C::U8);
        assert!(from_bytes(Path::new("t"), &[0xff; 8], DType::U64, &[1], &Device::Cpu).is_err());
        assert!(from_bytes(Path::new("t"), &[0; 6], DType::F32, &[2], &Device::Cpu).is_err());
    }
}
