//! The candle side: raw little-endian bytes → `candle_core::Tensor` on any device (widening
//! the dtypes candle lacks), and tensor statistics computed with candle ops for tensors that
//! already live on a GPU. On CPU prefer the fused pass in [`super::stats`].

use std::path::Path;

use candle_core::{DType as C, Device, Tensor};

use super::dtype::{f8e5m2_to_f32, DType};
use super::stats::{LogHist, Moments, TensorStats, HIST_BINS};
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

/// Elements per device chunk: bounds the temporaries (a few f64 copies and a
/// `[CHUNK/ROW, KEYS]` count table, ~0.7 GB at this size) whatever the tensor's size.
const DEVICE_CHUNK: usize = 1 << 24;
/// Elements counted serially by one `scatter_add` row (rows run in parallel).
const ROW: usize = 256;
/// Histogram keys: `HIST_BINS` positive bins, `HIST_BINS` negative ones, one discard key
/// (zero or non-finite elements).
const KEYS: usize = 2 * HIST_BINS + 1;

/// Statistics with candle ops on the tensor's own device (the GPU path; it runs on
/// `Device::Cpu` too, slowly, which is how the tests pin it to the fused pass). It computes what
/// [`super::stats::tensor_stats`] computes — counts, min/max, moments and the signed
/// log2 histogram with the same bins — in chunks of [`DEVICE_CHUNK`] elements merged with
/// Chan's formula. Floats of 16 bits or fewer are worked in f32, wider types in f64, sums
/// always in f64.
pub fn stats_on_device(t: &Tensor) -> candle_core::Result<TensorStats> {
    stats_in_chunks(t, DEVICE_CHUNK)
}

fn stats_in_chunks(t: &Tensor, chunk: usize) -> candle_core::Result<TensorStats> {
    let work = match t.dtype() {
        C::F64 | C::I64 | C::I32 | C::U32 => C::F64,
        _ => C::F32,
    };
    let x = t.flatten_all()?;
    let n = x.elem_count();
    let tables = BinEdges::new(work, x.device())?;
    let mut acc = Part::empty();
    let mut off = 0;
    while off < n {
        let len = chunk.min(n - off);
        let c = x.narrow(0, off, len)?.to_dtype(work)?;
        acc = acc.merge(chunk_stats(&c, &tables)?);
        off += len;
    }
    Ok(acc.finish())
}

/// Partial statistics of a chunk (the device-side twin of the fused pass's accumulator).
struct Part {
    count: u64,
    fin: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    zeros: u64,
    nan: u64,
    hist: LogHist,
}

impl Part {
    fn empty() -> Part {
        Part {
            count: 0,
            fin: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            zeros: 0,
            nan: 0,
            hist: LogHist::default(),
        }
    }

    fn merge(mut self, o: Part) -> Part {
        if o.fin > 0 {
            if self.fin == 0 {
                (self.mean, self.m2) = (o.mean, o.m2);
            } else {
                let n = (self.fin + o.fin) as f64;
                let d = o.mean - self.mean;
                self.mean += d * (o.fin as f64 / n);
                self.m2 += o.m2 + d * d * (self.fin as f64) * (o.fin as f64) / n;
            }
        }
        self.count += o.count;
        self.fin += o.fin;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.zeros += o.zeros;
        self.nan += o.nan;
        for (a, b) in self.hist.pos.iter_mut().zip(&o.hist.pos) {
            *a += b;
        }
        for (a, b) in self.hist.neg.iter_mut().zip(&o.hist.neg) {
            *a += b;
        }
        self.hist.zero += o.hist.zero;
        self
    }

    fn finish(self) -> TensorStats {
        TensorStats::from_moments(Moments {
            count: self.count,
            finite: self.fin,
            nan: self.nan,
            zeros: self.zeros,
            mean: self.mean,
            m2: self.m2,
            min: self.min,
            max: self.max,
            hist: self.hist,
        })
    }
}

/// Exact powers of two bounding each histogram bin, on the device: `lo[i]` is the smallest
/// magnitude in bin `i`, `hi[i]` the smallest in bin `i + 1` (0 and +inf at the clamped ends).
struct BinEdges {
    lo: Tensor,
    hi: Tensor,
}

impl BinEdges {
    fn new(work: C, dev: &Device) -> candle_core::Result<BinEdges> {
        let last = HIST_BINS - 1;
        let lo: Vec<f64> = (0..HIST_BINS)
            .map(|i| match i {
                0 => 0.0,
                _ => 2f64.powi(LogHist::bin_exponent(i)),
            })
            .collect();
        let hi: Vec<f64> = (0..HIST_BINS)
            .map(|i| match i {
                i if i == last => f64::INFINITY,
                _ => 2f64.powi(LogHist::bin_exponent(i) + 1),
            })
            .collect();
        Ok(BinEdges {
            lo: Tensor::new(lo, dev)?.to_dtype(work)?,
            hi: Tensor::new(hi, dev)?.to_dtype(work)?,
        })
    }
}

/// `v` in `like`'s dtype, broadcast to its shape on its device (nothing materialised).
fn splat(v: f64, like: &Tensor) -> candle_core::Result<Tensor> {
    Tensor::new(v, like.device())?
        .to_dtype(like.dtype())?
        .broadcast_as(like.shape())
}

fn count(mask: &Tensor) -> candle_core::Result<u64> {
    Ok(mask.to_dtype(C::F64)?.sum_all()?.to_scalar::<f64>()? as u64)
}

fn scalar(t: &Tensor) -> candle_core::Result<f64> {
    t.to_dtype(C::F64)?.to_scalar::<f64>()
}

/// Statistics of one 1-D chunk already in the work dtype.
fn chunk_stats(x: &Tensor, edges: &BinEdges) -> candle_core::Result<Part> {
    let mut p = Part::empty();
    p.count = x.elem_count() as u64;
    if p.count == 0 {
        return Ok(p);
    }
    let a = x.abs()?;
    let fin = a.lt(f64::INFINITY)?; // NaN compares false
    let zero = x.eq(0f64)?;
    p.fin = count(&fin)?;
    p.nan = count(&x.ne(x)?)?;
    p.zeros = count(&zero)?;
    p.hist.zero = p.zeros;
    if p.fin == 0 {
        return Ok(p);
    }
    // Moments over finite values: non-finite ones become 0 and are masked out of the
    // centred sum.
    let xf = fin.where_cond(x, &splat(0.0, x)?)?.to_dtype(C::F64)?;
    let finf = fin.to_dtype(C::F64)?;
    let n = p.fin as f64;
    p.mean = xf.sum_all()?.to_scalar::<f64>()? / n;
    p.m2 = xf
        .affine(1.0, -p.mean)?
        .mul(&finf)?
        .sqr()?
        .sum_all()?
        .to_scalar::<f64>()?;
    let (pinf, ninf) = (splat(f64::INFINITY, x)?, splat(f64::NEG_INFINITY, x)?);
    p.min = scalar(&fin.where_cond(x, &pinf)?.min_all()?)?;
    p.max = scalar(&fin.where_cond(x, &ninf)?.max_all()?)?;
    log_hist(x, &a, &fin, &zero, edges, &mut p.hist)?;
    Ok(p)
}

/// The signed log2 histogram of the finite non-zero values: `floor(log2|x|)` estimated with
/// `log`, clamped to the bins, then corrected by one bin either way against the exact
/// power-of-two edges (so values at a power of two land where the fused pass puts them);
/// counted with `scatter_add` over rows of [`ROW`] keys.
fn log_hist(
    x: &Tensor,
    a: &Tensor,
    fin: &Tensor,
    zero: &Tensor,
    edges: &BinEdges,
    hist: &mut LogHist,
) -> candle_core::Result<()> {
    // Elements that are counted: finite and non-zero (`fin - zero` is 0 or 1 as zero ⇒ finite).
    let keep = fin
        .to_dtype(C::F32)?
        .sub(&zero.to_dtype(C::F32)?)?
        .ne(0f32)?;
    let mag = keep.where_cond(a, &splat(1.0, a)?)?;
    let lo_bin = LogHist::bin_exponent(0) as f64;
    let hi_bin = LogHist::bin_exponent(HIST_BINS - 1) as f64;
    let est = mag
        .log()?
        .affine(std::f64::consts::LOG2_E, 0.0)?
        .floor()?
        .clamp(lo_bin, hi_bin)?
        .affine(1.0, -lo_bin)?;
    let idx = est.to_dtype(C::U32)?;
    let up = mag.ge(&edges.hi.index_select(&idx, 0)?)?;
    let down = mag.lt(&edges.lo.index_select(&idx, 0)?)?;
    let sign = x
        .lt(0f64)?
        .to_dtype(C::F32)?
        .affine(HIST_BINS as f64, 0.0)?;
    let key = est
        .to_dtype(C::F32)?
        .add(&up.to_dtype(C::F32)?)?
        .sub(&down.to_dtype(C::F32)?)?
        .add(&sign)?;
    let key = keep.where_cond(&key, &splat((KEYS - 1) as f64, &key)?)?;
    // Pad to whole rows with discard keys, then count each row in parallel.
    let n = key.elem_count();
    let rows = n.div_ceil(ROW);
    let key = if rows * ROW > n {
        let pad = Tensor::full((KEYS - 1) as f32, rows * ROW - n, key.device())?;
        Tensor::cat(&[&key, &pad], 0)?
    } else {
        key
    };
    let key = key.to_dtype(C::U32)?.reshape((rows, ROW))?;
    let src = Tensor::ones((rows, ROW), C::F32, key.device())?;
    let counts = Tensor::zeros((rows, KEYS), C::F32, key.device())?
        .scatter_add(&key, &src, 1)?
        .to_dtype(C::F64)?
        .sum(0)?
        .to_vec1::<f64>()?;
    for i in 0..HIST_BINS {
        hist.pos[i] += counts[i] as u64;
        hist.neg[i] += counts[HIST_BINS + i] as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Chunk merging; agreement with the fused pass is tested in `tests/candle_path.rs`.
    use super::*;

    #[test]
    fn chunked_statistics_merge_to_the_whole() {
        let v: Vec<f32> = (0..10_007)
            .map(|i| match i % 97 {
                0 => f32::NAN,
                1 => f32::NEG_INFINITY,
                2 => 0.0,
                _ => ((i * 7919) % 1000) as f32 * 0.37 - 150.0,
            })
            .collect();
        let t = Tensor::new(v.as_slice(), &Device::Cpu).unwrap();
        let whole = stats_in_chunks(&t, usize::MAX).unwrap();
        for chunk in [3, 1000, 4096, 10_006] {
            let c = stats_in_chunks(&t, chunk).unwrap();
            assert_eq!(
                (c.count, c.finite, c.nan, c.inf, c.zeros, c.min, c.max),
                (
                    whole.count,
                    whole.finite,
                    whole.nan,
                    whole.inf,
                    whole.zeros,
                    whole.min,
                    whole.max
                ),
                "chunk {chunk}"
            );
            assert_eq!(c.hist, whole.hist, "chunk {chunk}");
            for (a, e) in [(c.mean, whole.mean), (c.std, whole.std), (c.l2, whole.l2)] {
                assert!(
                    (a - e).abs() <= 1e-9 * e.abs().max(1.0),
                    "chunk {chunk}: {a} vs {e}"
                );
            }
        }
        assert_eq!(whole.count, 10_007);
        assert_eq!(whole.nan, 104);
    }
}
