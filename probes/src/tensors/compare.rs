//! One fused pass over two same-size tensors: norms, the norm of their difference, their dot
//! product, the largest absolute difference and a byte-identity check — for update-to-weight
//! ratios, cosine similarity and "did this tensor move at all".

use rayon::prelude::*;

use super::dtype::DType;
use super::stats::{decode_f32, decode_f64, uses_f32};

const BLOCK: usize = 2048;
const CHUNK: usize = 64 * 1024;

/// How two tensors differ. Pairs where either value is non-finite are skipped and counted.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DiffStats {
    pub count: u64,
    /// Pairs skipped because one side was NaN or infinite.
    pub nonfinite: u64,
    pub norm_a: f64,
    pub norm_b: f64,
    /// ‖a − b‖₂.
    pub norm_diff: f64,
    pub dot: f64,
    pub max_abs_diff: f64,
    /// Same dtype and byte-for-byte equal.
    pub identical_bytes: bool,
}

impl DiffStats {
    /// cos(a, b); NaN when either norm is zero.
    pub fn cosine(&self) -> f64 {
        let d = self.norm_a * self.norm_b;
        if d > 0.0 {
            self.dot / d
        } else {
            f64::NAN
        }
    }

    /// ‖a − b‖ / ‖a‖ — the update-to-weight ratio when `a` is the earlier weight.
    pub fn relative_change(&self) -> f64 {
        if self.norm_a > 0.0 {
            self.norm_diff / self.norm_a
        } else {
            f64::NAN
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Acc {
    count: u64,
    nonfinite: u64,
    aa: f64,
    bb: f64,
    dd: f64,
    ab: f64,
    maxd: f64,
}

impl Acc {
    fn merge(self, o: Acc) -> Acc {
        Acc {
            count: self.count + o.count,
            nonfinite: self.nonfinite + o.nonfinite,
            aa: self.aa + o.aa,
            bb: self.bb + o.bb,
            dd: self.dd + o.dd,
            ab: self.ab + o.ab,
            maxd: self.maxd.max(o.maxd),
        }
    }
}

/// Lane sums in f32 over one block of f32-exact values (bf16, f16, f32 …); `None` when a sum
/// left f32's range (the caller redoes the block in f64).
#[inline(always)]
fn block_f32(xa: &[f32], xb: &[f32]) -> Option<Acc> {
    // One vector register per sum with AVX2 (more lanes spill to the stack).
    const L: usize = 8;
    const ABS: u32 = 0x7fff_ffff;
    const INF: u32 = 0x7f80_0000;
    let n = xa.len().min(xb.len());
    let (xa, xb) = (&xa[..n], &xb[..n]);
    let (mut aa, mut bb, mut dd, mut ab, mut mx) =
        ([0f32; L], [0f32; L], [0f32; L], [0f32; L], [0f32; L]);
    let mut bad = [0u32; L];
    let mut one = |l: usize, x: f32, y: f32| {
        let ok = ((x.to_bits() & ABS) < INF) & ((y.to_bits() & ABS) < INF);
        let m: u32 = if ok { u32::MAX } else { 0 };
        let (x, y) = (
            f32::from_bits(x.to_bits() & m),
            f32::from_bits(y.to_bits() & m),
        );
        let d = x - y;
        aa[l] += x * x;
        bb[l] += y * y;
        dd[l] += d * d;
        ab[l] += x * y;
        let ad = d.abs();
        mx[l] = if ad > mx[l] { ad } else { mx[l] };
        bad[l] += !ok as u32;
    };
    let (mut ia, mut ib) = (xa.chunks_exact(L), xb.chunks_exact(L));
    for (pa, pb) in (&mut ia).zip(&mut ib) {
        for l in 0..L {
            one(l, pa[l], pb[l]);
        }
    }
    for (l, (&x, &y)) in ia.remainder().iter().zip(ib.remainder()).enumerate() {
        one(l, x, y);
    }
    let mut acc = Acc {
        count: n as u64,
        ..Acc::default()
    };
    for l in 0..L {
        acc.aa += aa[l] as f64;
        acc.bb += bb[l] as f64;
        acc.dd += dd[l] as f64;
        acc.ab += ab[l] as f64;
        acc.maxd = acc.maxd.max(mx[l] as f64);
        acc.nonfinite += bad[l] as u64;
    }
    (acc.aa.is_finite() && acc.bb.is_finite() && acc.dd.is_finite() && acc.ab.is_finite())
        .then_some(acc)
}

fn chunk(a: &[u8], da: DType, b: &[u8], db: DType) -> Acc {
    if uses_f32(da) && uses_f32(db) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { chunk_f32_avx2(a, da, b, db) };
        }
        return chunk_f32(a, da, b, db);
    }
    chunk_f64(a, da, b, db)
}

/// [`chunk_f32`] compiled for AVX2 (8 f32 lanes per instruction instead of SSE2's 4).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chunk_f32_avx2(a: &[u8], da: DType, b: &[u8], db: DType) -> Acc {
    chunk_f32(a, da, b, db)
}

#[inline(always)]
fn chunk_f32(a: &[u8], da: DType, b: &[u8], db: DType) -> Acc {
    {
        let mut fa = [0f32; BLOCK];
        let mut fb = [0f32; BLOCK];
        let mut acc = Acc::default();
        for (ca, cb) in a.chunks(BLOCK * da.size()).zip(b.chunks(BLOCK * db.size())) {
            let n = decode_f32(ca, da, &mut fa).min(decode_f32(cb, db, &mut fb));
            acc = acc.merge(match block_f32(&fa[..n], &fb[..n]) {
                Some(x) => x,
                None => chunk_f64(ca, da, cb, db),
            });
        }
        acc
    }
}

fn chunk_f64(a: &[u8], da: DType, b: &[u8], db: DType) -> Acc {
    let mut xa = [0f64; BLOCK];
    let mut xb = [0f64; BLOCK];
    let mut acc = Acc::default();
    for (ca, cb) in a.chunks(BLOCK * da.size()).zip(b.chunks(BLOCK * db.size())) {
        let n = decode_f64(ca, da, &mut xa).min(decode_f64(cb, db, &mut xb));
        const L: usize = 4;
        let (mut aa, mut bb, mut dd, mut ab, mut mx) =
            ([0f64; L], [0f64; L], [0f64; L], [0f64; L], [0f64; L]);
        let mut bad = [0u64; L];
        for (pa, pb) in xa[..n].chunks(L).zip(xb[..n].chunks(L)) {
            for l in 0..pa.len() {
                let (x, y) = (pa[l], pb[l]);
                let ok = x.is_finite() && y.is_finite();
                let (x, y) = if ok { (x, y) } else { (0.0, 0.0) };
                let d = x - y;
                aa[l] += x * x;
                bb[l] += y * y;
                dd[l] += d * d;
                ab[l] += x * y;
                mx[l] = if d.abs() > mx[l] { d.abs() } else { mx[l] };
                bad[l] += !ok as u64;
            }
        }
        acc.count += n as u64;
        for l in 0..L {
            acc.aa += aa[l];
            acc.bb += bb[l];
            acc.dd += dd[l];
            acc.ab += ab[l];
            acc.maxd = acc.maxd.max(mx[l]);
            acc.nonfinite += bad[l];
        }
    }
    acc
}

/// Compares two tensors element by element (each given as contiguous little-endian bytes of
/// its dtype; dtypes may differ). `None` when their element counts differ.
pub fn diff_stats(a: &[u8], da: DType, b: &[u8], db: DType) -> Option<DiffStats> {
    let (na, nb) = (a.len() / da.size(), b.len() / db.size());
    if na != nb {
        return None;
    }
    let (a, b) = (&a[..na * da.size()], &b[..nb * db.size()]);
    let acc = a
        .par_chunks(CHUNK * da.size())
        .zip(b.par_chunks(CHUNK * db.size()))
        .map(|(x, y)| chunk(x, da, y, db))
        .reduce(Acc::default, Acc::merge);
    Some(
        DiffAcc {
            acc,
            identical: da == db && a == b,
        }
        .finish(),
    )
}

/// Two tensors compared piece by piece (the same element range of each side per `feed`, in
/// any order, merged across threads): the figures of [`diff_stats`] of the whole.
#[derive(Clone, Copy)]
pub(crate) struct DiffAcc {
    acc: Acc,
    identical: bool,
}

impl DiffAcc {
    pub(crate) fn new(da: DType, db: DType) -> DiffAcc {
        DiffAcc {
            acc: Acc::default(),
            identical: da == db,
        }
    }

    pub(crate) fn feed(&mut self, a: &[u8], da: DType, b: &[u8], db: DType) {
        if self.identical && a != b {
            self.identical = false;
        }
        self.acc = self.acc.merge(chunk(a, da, b, db));
    }

    pub(crate) fn merge(&mut self, o: DiffAcc) {
        self.acc = self.acc.merge(o.acc);
        self.identical &= o.identical;
    }

    pub(crate) fn finish(self) -> DiffStats {
        let acc = self.acc;
        DiffStats {
            count: acc.count,
            nonfinite: acc.nonfinite,
            norm_a: acc.aa.sqrt(),
            norm_b: acc.bb.sqrt(),
            norm_diff: acc.dd.sqrt(),
            dot: acc.ab,
            max_abs_diff: acc.maxd,
            identical_bytes: self.identical,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn diff_of_known_vectors() {
        let a = f32_bytes(&[3.0, 4.0, 0.0]);
        let b = f32_bytes(&[3.0, 0.0, 4.0]);
        let d = diff_stats(&a, DType::F32, &b, DType::F32).unwrap();
        assert_eq!(
            (d.norm_a, d.norm_b, d.dot, d.max_abs_diff),
            (5.0, 5.0, 9.0, 4.0)
        );
        assert!((d.norm_diff - 32f64.sqrt()).abs() < 1e-12);
        assert!((d.cosine() - 0.36).abs() < 1e-12);
        assert!(!d.identical_bytes);
        assert!(
            diff_stats(&a, DType::F32, &a, DType::F32)
                .unwrap()
                .identical_bytes
        );
    }

    #[test]
    fn mixed_dtypes_and_mismatched_sizes() {
        let a = f32_bytes(&[1.0, 2.0]);
        let b: Vec<u8> = [1.0f32, 2.0]
            .iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect();
        let d = diff_stats(&a, DType::F32, &b, DType::BF16).unwrap();
        assert_eq!((d.norm_diff, d.identical_bytes), (0.0, false));
        assert!(diff_stats(&a, DType::F32, &b[..2], DType::BF16).is_none());
        let n = f32_bytes(&[f32::NAN, 1.0]);
        let d = diff_stats(&n, DType::F32, &a, DType::F32).unwrap();
        assert_eq!((d.nonfinite, d.max_abs_diff), (1, 1.0));
    }
}
