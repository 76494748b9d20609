//! Tensor statistics in one fused pass over raw little-endian bytes: count, finite/NaN/inf,
//! mean/std over finite values (shifted sums merged with Chan's formula, in f64), min/max,
//! zeros, L2 and a signed log2-magnitude histogram — chunked across rayon threads, with
//! lane-parallel inner loops the compiler vectorises. Also block decoders shared by
//! [`super::compare`] and an on-demand [`linear_histogram`].

use rayon::prelude::*;

use super::dtype::{bf16_to_f32, f16_to_f32, f8e4m3_to_f32, f8e5m2_to_f32, DType};

/// Lowest / highest `floor(log2|x|)` with its own bin; values beyond fall into the end bins.
pub const HIST_MIN_EXP: i32 = -40;
pub const HIST_MAX_EXP: i32 = 40;
/// Bins per sign.
pub const HIST_BINS: usize = (HIST_MAX_EXP - HIST_MIN_EXP + 1) as usize;

/// Elements decoded at a time (fits L1 with its f32/f64 buffer).
const BLOCK: usize = 2048;
/// Elements per parallel task.
const CHUNK: usize = 64 * 1024;

/// Signed log-magnitude histogram of the finite values: `pos[i]` counts `x > 0` with
/// `floor(log2 x) == HIST_MIN_EXP + i` (clamped at both ends), `neg` the same for `x < 0`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogHist {
    pub pos: Vec<u64>,
    pub neg: Vec<u64>,
    pub zero: u64,
}

impl Default for LogHist {
    fn default() -> Self {
        LogHist {
            pos: vec![0; HIST_BINS],
            neg: vec![0; HIST_BINS],
            zero: 0,
        }
    }
}

impl LogHist {
    /// `floor(log2|x|)` of bin `i` (the end bins also hold everything beyond them).
    pub fn bin_exponent(i: usize) -> i32 {
        HIST_MIN_EXP + i as i32
    }

    /// Bin index for an exponent, clamped.
    pub fn bin_of(exp: i32) -> usize {
        (exp.clamp(HIST_MIN_EXP, HIST_MAX_EXP) - HIST_MIN_EXP) as usize
    }

    pub fn total(&self) -> u64 {
        self.pos.iter().chain(&self.neg).sum::<u64>() + self.zero
    }

    fn merge(&mut self, o: &LogHist) {
        for (a, b) in self.pos.iter_mut().zip(&o.pos) {
            *a += b;
        }
        for (a, b) in self.neg.iter_mut().zip(&o.neg) {
            *a += b;
        }
        self.zero += o.zero;
    }
}

/// Statistics of one tensor. Moments, min/max and L2 cover finite values only; `nan` and `inf`
/// are counted beside them. When nothing is finite, `mean`, `std`, `min`, `max`, `absmax` are NaN.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TensorStats {
    pub count: u64,
    pub finite: u64,
    pub mean: f64,
    /// Population standard deviation (ddof = 0, as numpy's default).
    pub std: f64,
    pub min: f64,
    pub max: f64,
    pub absmax: f64,
    pub zeros: u64,
    pub nan: u64,
    pub inf: u64,
    pub l2: f64,
    pub hist: LogHist,
}

/// What a streaming accumulator has gathered (Welford mean and M2 over the finite values).
pub(crate) struct Moments {
    pub count: u64,
    pub finite: u64,
    pub nan: u64,
    pub zeros: u64,
    pub mean: f64,
    pub m2: f64,
    pub min: f64,
    pub max: f64,
    pub hist: LogHist,
}

impl TensorStats {
    /// The statistics of gathered moments: NaN figures when no value was finite. The one
    /// finishing rule of the fused CPU pass and the device path.
    pub(crate) fn from_moments(m: Moments) -> TensorStats {
        let inf = m.count - m.finite - m.nan;
        let n = m.finite as f64;
        let m2 = m.m2.max(0.0);
        let none = m.finite == 0;
        let or_nan = |x: f64| if none { f64::NAN } else { x };
        TensorStats {
            count: m.count,
            finite: m.finite,
            mean: or_nan(m.mean),
            std: or_nan((m2 / n).sqrt()),
            min: or_nan(m.min),
            max: or_nan(m.max),
            absmax: or_nan(m.min.abs().max(m.max.abs())),
            zeros: m.zeros,
            nan: m.nan,
            inf,
            l2: if none {
                0.0
            } else {
                (m2 + n * m.mean * m.mean).sqrt()
            },
            hist: m.hist,
        }
    }
}

impl TensorStats {
    /// Fraction of all elements that are exactly zero (0 for an empty tensor).
    pub fn zero_frac(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.zeros as f64 / self.count as f64
        }
    }

    /// Non-finite elements (NaN + ±inf).
    pub fn nonfinite(&self) -> u64 {
        self.nan + self.inf
    }

    /// Root mean square of the finite values.
    pub fn rms(&self) -> f64 {
        if self.finite == 0 {
            f64::NAN
        } else {
            self.l2 / (self.finite as f64).sqrt()
        }
    }
}

/// Partial result of a chunk; merged with Chan's parallel formula.
#[derive(Clone)]
struct Acc {
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

impl Acc {
    fn empty() -> Acc {
        Acc {
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

    fn merge(mut self, o: Acc) -> Acc {
        if o.fin > 0 {
            if self.fin == 0 {
                self.mean = o.mean;
                self.m2 = o.m2;
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
        self.hist.merge(&o.hist);
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

/// Decodes up to `out.len()` f32-exact elements (F32/F16/BF16/F8/small ints/bool) from `raw`;
/// returns how many were written.
#[inline(always)]
pub(crate) fn decode_f32(raw: &[u8], dt: DType, out: &mut [f32]) -> usize {
    let n = (raw.len() / dt.size()).min(out.len());
    let out = &mut out[..n];
    match dt {
        DType::F32 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        DType::BF16 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = bf16_to_f32(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        DType::F16 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = f16_to_f32(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        DType::F8E4M3 => {
            let lut = f8_lut(f8e4m3_to_f32);
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = lut[b as usize];
            }
        }
        DType::F8E5M2 => {
            let lut = f8_lut(f8e5m2_to_f32);
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = lut[b as usize];
            }
        }
        DType::I16 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = i16::from_le_bytes([c[0], c[1]]) as f32;
            }
        }
        DType::U16 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = u16::from_le_bytes([c[0], c[1]]) as f32;
            }
        }
        DType::I8 => {
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = b as i8 as f32;
            }
        }
        DType::U8 | DType::Bool => {
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = b as f32;
            }
        }
        DType::F64 | DType::I64 | DType::I32 | DType::U32 | DType::U64 => {
            let mut tmp = [0f64; BLOCK];
            let mut done = 0;
            while done < n {
                let k = decode_f64(
                    &raw[done * dt.size()..],
                    dt,
                    &mut tmp[..(n - done).min(BLOCK)],
                );
                for (o, &x) in out[done..done + k].iter_mut().zip(&tmp[..k]) {
                    *o = x as f32;
                }
                done += k;
                if k == 0 {
                    break;
                }
            }
        }
    }
    n
}

/// Decodes up to `out.len()` elements of any dtype as f64; returns how many were written.
pub(crate) fn decode_f64(raw: &[u8], dt: DType, out: &mut [f64]) -> usize {
    let n = (raw.len() / dt.size()).min(out.len());
    let out = &mut out[..n];
    match dt {
        DType::F64 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
                *o = f64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            }
        }
        DType::I64 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
                *o = i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64;
            }
        }
        DType::U64 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
                *o = u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64;
            }
        }
        DType::I32 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64;
            }
        }
        DType::U32 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64;
            }
        }
        _ => {
            let mut tmp = [0f32; BLOCK];
            let mut done = 0;
            while done < n {
                let k = decode_f32(
                    &raw[done * dt.size()..],
                    dt,
                    &mut tmp[..(n - done).min(BLOCK)],
                );
                for (o, &x) in out[done..done + k].iter_mut().zip(&tmp[..k]) {
                    *o = x as f64;
                }
                done += k;
                if k == 0 {
                    break;
                }
            }
        }
    }
    n
}

fn f8_lut(f: fn(u8) -> f32) -> [f32; 256] {
    let mut t = [0f32; 256];
    for (i, x) in t.iter_mut().enumerate() {
        *x = f(i as u8);
    }
    t
}

/// Whether a dtype goes through the f32 lanes (exact in f32) or the f64 lanes.
pub(crate) fn uses_f32(dt: DType) -> bool {
    !matches!(
        dt,
        DType::F64 | DType::I64 | DType::I32 | DType::U32 | DType::U64
    )
}

/// Per-block lane sums; generated for f32 (16 lanes) and f64 (8 lanes).
/// Per-block lane sums; generated for f32 (16 lanes) and f64 (8 lanes). Finiteness is tested
/// on the bits (branch-free masks the compiler vectorises); min/max use `minps`-style selects
/// that skip NaN, and are recomputed for the rare block holding an infinity.
macro_rules! moments_kernel {
    ($name:ident, $t:ty, $u:ty, $lanes:expr) => {
        /// Returns (sum of x-k, sum of (x-k)^2, min, max, finite, zeros, nan) over finite x.
        #[inline(always)]
        fn $name(xs: &[$t], k: $t) -> (f64, f64, $t, $t, u64, u64, u64) {
            const L: usize = $lanes;
            const ABS: $u = <$u>::MAX >> 1;
            const INF: $u = <$t>::INFINITY.to_bits();
            let mut s = [0 as $t; L];
            let mut q = [0 as $t; L];
            let mut mn = [<$t>::INFINITY; L];
            let mut mx = [<$t>::NEG_INFINITY; L];
            let mut fin = [0 as $u; L];
            let mut zer = [0 as $u; L];
            let mut nan = [0 as $u; L];
            let mut it = xs.chunks_exact(L);
            for c in &mut it {
                for l in 0..L {
                    let v = c[l];
                    let b = v.to_bits() & ABS;
                    let m: $u = if b < INF { <$u>::MAX } else { 0 };
                    let d = <$t>::from_bits((v - k).to_bits() & m);
                    s[l] += d;
                    q[l] += d * d;
                    mn[l] = if v < mn[l] { v } else { mn[l] };
                    mx[l] = if v > mx[l] { v } else { mx[l] };
                    fin[l] = fin[l].wrapping_sub(m);
                    zer[l] += (b == 0) as $u;
                    nan[l] += (b > INF) as $u;
                }
            }
            for (l, &v) in it.remainder().iter().enumerate() {
                if v.is_finite() {
                    let d = v - k;
                    s[l] += d;
                    q[l] += d * d;
                    mn[l] = if v < mn[l] { v } else { mn[l] };
                    mx[l] = if v > mx[l] { v } else { mx[l] };
                    fin[l] += 1;
                }
                zer[l] += (v == 0 as $t) as $u;
                nan[l] += v.is_nan() as $u;
            }
            let mut out = (
                0f64,
                0f64,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                0u64,
                0u64,
                0u64,
            );
            for l in 0..L {
                out.0 += s[l] as f64;
                out.1 += q[l] as f64;
                out.2 = if mn[l] < out.2 { mn[l] } else { out.2 };
                out.3 = if mx[l] > out.3 { mx[l] } else { out.3 };
                out.4 += fin[l] as u64;
                out.5 += zer[l] as u64;
                out.6 += nan[l] as u64;
            }
            if out.2.is_infinite() || out.3.is_infinite() {
                // An infinity reached min/max: redo them over finite values only (rare).
                out.2 = <$t>::INFINITY;
                out.3 = <$t>::NEG_INFINITY;
                for &v in xs.iter().filter(|v| v.is_finite()) {
                    out.2 = if v < out.2 { v } else { out.2 };
                    out.3 = if v > out.3 { v } else { out.3 };
                }
            }
            out
        }
    };
}

moments_kernel!(moments_f32, f32, u32, 16);
moments_kernel!(moments_f64, f64, u64, 8);

fn fold_f32_hist(tables: &[[u32; 513]; 4], hist: &mut LogHist) {
    for key in 0..513 {
        let c: u64 = tables.iter().map(|t| t[key] as u64).sum();
        if c == 0 {
            continue;
        }
        if key == 512 {
            hist.zero += c;
            continue;
        }
        let e = (key & 0xff) as i32;
        if e == 0xff {
            continue; // inf / NaN
        }
        let bin = LogHist::bin_of(if e == 0 { -127 } else { e - 127 });
        if key & 0x100 != 0 {
            hist.neg[bin] += c;
        } else {
            hist.pos[bin] += c;
        }
    }
}

#[inline(always)]
fn f32_key(x: f32) -> usize {
    let b = x.to_bits();
    if b << 1 == 0 {
        512
    } else {
        (b >> 23) as usize
    }
}

fn chunk_f32(raw: &[u8], dt: DType) -> Acc {
    let es = dt.size();
    let mut buf = [0f32; BLOCK];
    let mut tables = [[0u32; 513]; 4];
    let mut acc = Acc::empty();
    let (mut s, mut q) = (0f64, 0f64);
    let mut shift: Option<f32> = None;
    let mut overflow = false;
    for blk in raw.chunks(BLOCK * es) {
        let n = decode_f32(blk, dt, &mut buf);
        let xs = &buf[..n];
        let k = match shift {
            Some(k) => k,
            None => match xs.iter().find(|v| v.is_finite()) {
                Some(&k) => {
                    shift = Some(k);
                    k
                }
                None => 0.0,
            },
        };
        let (bs, bq, mn, mx, fin, zer, nan) = moments_f32(xs, k);
        overflow |= !(bs.is_finite() && bq.is_finite());
        s += bs;
        q += bq;
        acc.min = acc.min.min(mn as f64);
        acc.max = acc.max.max(mx as f64);
        acc.fin += fin;
        acc.zeros += zer;
        acc.nan += nan;
        acc.count += n as u64;
        let mut it = xs.chunks_exact(4);
        for c in &mut it {
            tables[0][f32_key(c[0])] += 1;
            tables[1][f32_key(c[1])] += 1;
            tables[2][f32_key(c[2])] += 1;
            tables[3][f32_key(c[3])] += 1;
        }
        for &v in it.remainder() {
            tables[0][f32_key(v)] += 1;
        }
    }
    fold_f32_hist(&tables, &mut acc.hist);
    if overflow {
        // Squares beyond f32 range: redo the moments in f64.
        let (m, m2) = moments_exact(raw, dt);
        acc.mean = m;
        acc.m2 = m2;
    } else if acc.fin > 0 {
        let n = acc.fin as f64;
        acc.mean = shift.unwrap_or(0.0) as f64 + s / n;
        acc.m2 = (q - s * s / n).max(0.0);
    }
    acc
}

/// Mean and M2 of the finite values in f64 (slow path, for overflow).
fn moments_exact(raw: &[u8], dt: DType) -> (f64, f64) {
    let mut buf = [0f64; BLOCK];
    let (mut n, mut mean, mut m2) = (0f64, 0f64, 0f64);
    for blk in raw.chunks(BLOCK * dt.size()) {
        let k = decode_f64(blk, dt, &mut buf);
        for &x in &buf[..k] {
            if x.is_finite() {
                n += 1.0;
                let d = x - mean;
                mean += d / n;
                m2 += d * (x - mean);
            }
        }
    }
    (mean, m2)
}

fn f64_hist(x: f64, hist: &mut LogHist) {
    f64_hist_n(x, 1, hist)
}

fn f64_hist_n(x: f64, c: u64, hist: &mut LogHist) {
    let b = x.to_bits();
    if b << 1 == 0 {
        hist.zero += c;
        return;
    }
    let e = ((b >> 52) & 0x7ff) as i32;
    if e == 0x7ff {
        return;
    }
    let bin = LogHist::bin_of(if e == 0 { -1023 } else { e - 1023 });
    if b >> 63 != 0 {
        hist.neg[bin] += c;
    } else {
        hist.pos[bin] += c;
    }
}

fn chunk_f64(raw: &[u8], dt: DType) -> Acc {
    let mut buf = [0f64; BLOCK];
    let mut acc = Acc::empty();
    let (mut s, mut q) = (0f64, 0f64);
    let mut shift: Option<f64> = None;
    for blk in raw.chunks(BLOCK * dt.size()) {
        let n = decode_f64(blk, dt, &mut buf);
        let xs = &buf[..n];
        let k = match shift {
            Some(k) => k,
            None => match xs.iter().find(|v| v.is_finite()) {
                Some(&k) => {
                    shift = Some(k);
                    k
                }
                None => 0.0,
            },
        };
        let (bs, bq, mn, mx, fin, zer, nan) = moments_f64(xs, k);
        s += bs;
        q += bq;
        acc.min = acc.min.min(mn);
        acc.max = acc.max.max(mx);
        acc.fin += fin;
        acc.zeros += zer;
        acc.nan += nan;
        acc.count += n as u64;
        for &x in xs {
            f64_hist(x, &mut acc.hist);
        }
    }
    if !(s.is_finite() && q.is_finite()) {
        let (m, m2) = moments_exact(raw, dt);
        acc.mean = m;
        acc.m2 = m2;
    } else if acc.fin > 0 {
        let n = acc.fin as f64;
        acc.mean = shift.unwrap_or(0.0) + s / n;
        acc.m2 = (q - s * s / n).max(0.0);
    }
    acc
}

fn chunk(raw: &[u8], dt: DType) -> Acc {
    if uses_f32(dt) {
        chunk_f32(raw, dt)
    } else {
        chunk_f64(raw, dt)
    }
}

/// Number of distinct bit patterns of a 1- or 2-byte dtype (the table path), else `None`.
fn table_width(dt: DType) -> Option<usize> {
    match dt.size() {
        1 => Some(256),
        2 => Some(65536),
        _ => None,
    }
}

/// 2-byte tensors at least this long use the table path (below it, zeroing and scanning the
/// 64K-entry table would cost more than the lane kernel).
const TABLE_MIN: usize = 1 << 18;

fn table_value(dt: DType, key: usize) -> f64 {
    match dt {
        DType::BF16 => bf16_to_f32(key as u16) as f64,
        DType::F16 => f16_to_f32(key as u16) as f64,
        DType::I16 => key as u16 as i16 as f64,
        DType::F8E4M3 => f8e4m3_to_f32(key as u8) as f64,
        DType::F8E5M2 => f8e5m2_to_f32(key as u8) as f64,
        DType::I8 => key as u8 as i8 as f64,
        _ => key as f64,
    }
}

/// Counts every bit pattern of a 1/2-byte tensor into four interleaved tables (so runs of equal
/// values do not serialise on one counter). Each table sees at most a quarter of `raw`.
fn count_table(raw: &[u8], es: usize, width: usize) -> Vec<u32> {
    let mut t = vec![0u32; 4 * width];
    count_table_into(raw, es, width, &mut t);
    t
}

/// `t` holds four lanes of `width` counters (two suffice for 2-byte dtypes).
fn count_table_into(raw: &[u8], es: usize, width: usize, t: &mut [u32]) {
    if es == 2 {
        // Two lanes (2 × 256 KiB) rather than four: the tables and the read block then fit
        // a 1 MiB L2 together; alternating lanes still breaks the store-to-load chain when
        // neighbours hold the same value.
        let (t0, t1) = t.split_at_mut(width);
        let (t0, t1) = (&mut t0[..65536], &mut t1[..65536]);
        let mut it = raw.chunks_exact(8);
        for c in &mut it {
            t0[u16::from_le_bytes([c[0], c[1]]) as usize] += 1;
            t1[u16::from_le_bytes([c[2], c[3]]) as usize] += 1;
            t0[u16::from_le_bytes([c[4], c[5]]) as usize] += 1;
            t1[u16::from_le_bytes([c[6], c[7]]) as usize] += 1;
        }
        for c in it.remainder().chunks_exact(2) {
            t0[u16::from_le_bytes([c[0], c[1]]) as usize] += 1;
        }
    } else {
        let (t0, rest) = t.split_at_mut(width);
        let (t1, rest) = rest.split_at_mut(width);
        let (t2, t3) = rest.split_at_mut(width);
        let (t0, t1, t2, t3) = (
            &mut t0[..256],
            &mut t1[..256],
            &mut t2[..256],
            &mut t3[..256],
        );
        let mut it = raw.chunks_exact(4);
        for c in &mut it {
            t0[c[0] as usize] += 1;
            t1[c[1] as usize] += 1;
            t2[c[2] as usize] += 1;
            t3[c[3] as usize] += 1;
        }
        for &b in it.remainder() {
            t0[b as usize] += 1;
        }
    }
}

/// Exact statistics from a table of counts per bit pattern.
fn acc_from_table(counts: &[u64], dt: DType) -> Acc {
    let mut acc = Acc::empty();
    let mut sum = 0f64;
    for (key, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let v = table_value(dt, key);
        acc.count += c;
        if v.is_nan() {
            acc.nan += c;
            continue;
        }
        if v.is_infinite() {
            continue;
        }
        acc.fin += c;
        sum += c as f64 * v;
        acc.min = acc.min.min(v);
        acc.max = acc.max.max(v);
        if v == 0.0 {
            acc.zeros += c;
        }
        f64_hist_n(v, c, &mut acc.hist);
    }
    if acc.fin > 0 {
        acc.mean = sum / acc.fin as f64;
        for (key, &c) in counts.iter().enumerate() {
            let v = table_value(dt, key);
            if c > 0 && v.is_finite() {
                acc.m2 += c as f64 * (v - acc.mean) * (v - acc.mean);
            }
        }
    }
    acc
}

fn table_stats(bytes: &[u8], dt: DType, width: usize) -> Acc {
    let es = dt.size();
    let n = bytes.len() / es;
    let threads = rayon::current_num_threads().max(1);
    // Enough parts to keep every thread busy, and each table's counts below 2^32.
    let parts = if n < (1 << 16) {
        1
    } else {
        (2 * threads).max(n / (1 << 32) + 1)
    };
    let per = n.div_ceil(parts).max(1) * es;
    let merged = bytes
        .par_chunks(per)
        .map(|part| count_table(part, es, width))
        .fold(
            || vec![0u64; width],
            |mut acc, t| {
                for (i, a) in acc.iter_mut().enumerate() {
                    *a += t[i] as u64
                        + t[width + i] as u64
                        + t[2 * width + i] as u64
                        + t[3 * width + i] as u64;
                }
                acc
            },
        )
        .reduce(
            || vec![0u64; width],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    acc_from_table(&merged, dt)
}

/// Statistics of a tensor given as contiguous little-endian bytes of `dtype` (a trailing
/// partial element is ignored). Large tensors are split across rayon's threads. Tensors of
/// 1- and 2-byte dtypes (bf16, f16, f8, int8 …) are counted per bit pattern — one scatter per
/// element — and their statistics derived exactly from the table.
pub fn tensor_stats(bytes: &[u8], dtype: DType) -> TensorStats {
    let es = dtype.size();
    let bytes = &bytes[..bytes.len() - bytes.len() % es];
    if let Some(width) = table_width(dtype) {
        if es == 1 || bytes.len() / es >= TABLE_MIN {
            return table_stats(bytes, dtype, width).finish();
        }
    }
    let step = CHUNK * es;
    let acc = if bytes.len() <= 2 * step {
        bytes
            .chunks(step)
            .map(|c| chunk(c, dtype))
            .fold(Acc::empty(), Acc::merge)
    } else {
        bytes
            .par_chunks(step)
            .map(|c| chunk(c, dtype))
            .reduce(Acc::empty, Acc::merge)
    };
    acc.finish()
}

/// Statistics of one tensor fed piece by piece (element-aligned pieces, in any order, merged
/// across threads): the same figures as [`tensor_stats`] of the whole. 1- and 2-byte dtypes
/// (and 2-byte tensors of at least `TABLE_MIN` elements) are counted per bit pattern, so their
/// result does not depend on how the tensor was cut; others merge lane sums with Chan's formula.
pub(crate) struct StatsAcc {
    dtype: DType,
    kind: AccKind,
}

enum AccKind {
    Table {
        width: usize,
        /// Interleaved u32 counters (allocated on the first `feed`).
        lanes: Vec<u32>,
        /// Elements counted into `lanes` since they were last folded.
        since: usize,
        wide: Vec<u64>,
    },
    Lanes(Box<Acc>),
}

impl StatsAcc {
    /// An empty accumulator for a tensor of `numel` elements of `dtype`.
    pub(crate) fn new(dtype: DType, numel: usize) -> StatsAcc {
        let kind = match table_width(dtype).filter(|_| dtype.size() == 1 || numel >= TABLE_MIN) {
            Some(width) => AccKind::Table {
                width,
                lanes: Vec::new(),
                since: 0,
                wide: Vec::new(),
            },
            None => AccKind::Lanes(Box::new(Acc::empty())),
        };
        StatsAcc { dtype, kind }
    }

    /// Adds whole elements (a trailing partial element is ignored).
    pub(crate) fn feed(&mut self, raw: &[u8]) {
        let es = self.dtype.size();
        let raw = &raw[..raw.len() - raw.len() % es];
        match &mut self.kind {
            AccKind::Table {
                width,
                lanes,
                since,
                wide,
            } => {
                if lanes.is_empty() {
                    lanes.resize(if es == 2 { 2 } else { 4 } * *width, 0);
                }
                // Each lane sees at most half the elements: fold before any could pass 2^32.
                for part in raw.chunks(1 << 30) {
                    if *since + part.len() / es >= 1 << 31 {
                        fold_lanes(lanes, wide, *width);
                        lanes.iter_mut().for_each(|x| *x = 0);
                        *since = 0;
                    }
                    count_table_into(part, es, *width, lanes);
                    *since += part.len() / es;
                }
            }
            AccKind::Lanes(acc) => {
                for c in raw.chunks(CHUNK * es) {
                    let a = std::mem::replace(acc.as_mut(), Acc::empty());
                    **acc = a.merge(chunk(c, self.dtype));
                }
            }
        }
    }

    /// Adds another accumulator of the same tensor.
    pub(crate) fn merge(&mut self, other: StatsAcc) {
        match (&mut self.kind, other.kind) {
            (
                AccKind::Table {
                    width, lanes, wide, ..
                },
                AccKind::Table {
                    lanes: ol,
                    wide: mut ow,
                    ..
                },
            ) => {
                fold_lanes(&ol, &mut ow, *width);
                if wide.is_empty() && lanes.is_empty() {
                    *wide = ow;
                } else {
                    if wide.is_empty() {
                        wide.resize(*width, 0);
                    }
                    for (a, b) in wide.iter_mut().zip(&ow) {
                        *a += b;
                    }
                }
            }
            (AccKind::Lanes(a), AccKind::Lanes(b)) => {
                let x = std::mem::replace(a.as_mut(), Acc::empty());
                **a = x.merge(*b);
            }
            // Both sides are made by `new` with the same dtype and count.
            _ => {}
        }
    }

    pub(crate) fn finish(self) -> TensorStats {
        match self.kind {
            AccKind::Table {
                width,
                lanes,
                mut wide,
                ..
            } => {
                fold_lanes(&lanes, &mut wide, width);
                acc_from_table(&wide, self.dtype).finish()
            }
            AccKind::Lanes(a) => a.finish(),
        }
    }
}

/// Adds lanes of `width` u32 counters into `wide` (sized on first use); the lanes are left as
/// they are, so callers fold a lane set once and then drop or clear it.
fn fold_lanes(lanes: &[u32], wide: &mut Vec<u64>, width: usize) {
    if lanes.is_empty() {
        return;
    }
    if wide.is_empty() {
        wide.resize(width, 0);
    }
    for lane in lanes.chunks_exact(width) {
        for (w, &c) in wide.iter_mut().zip(lane) {
            *w += c as u64;
        }
    }
}

/// Counts finite values in `bins` equal-width bins over `[lo, hi]` (values outside, and
/// non-finite ones, are not counted; `hi` itself goes into the last bin). A second pass,
/// on demand — e.g. with `lo`/`hi` from [`tensor_stats`].
pub fn linear_histogram(bytes: &[u8], dtype: DType, lo: f64, hi: f64, bins: usize) -> Vec<u64> {
    if bins == 0 || !lo.is_finite() || !hi.is_finite() || hi < lo {
        return vec![0; bins];
    }
    let es = dtype.size();
    let width = hi - lo;
    let scale = if width > 0.0 {
        bins as f64 / width
    } else {
        0.0
    };
    let one = |raw: &[u8]| {
        let mut h = vec![0u64; bins];
        let mut buf = [0f64; BLOCK];
        for blk in raw.chunks(BLOCK * es) {
            let n = decode_f64(blk, dtype, &mut buf);
            for &x in &buf[..n] {
                if x >= lo && x <= hi {
                    let b = (((x - lo) * scale) as usize).min(bins - 1);
                    h[b] += 1;
                }
            }
        }
        h
    };
    bytes.par_chunks(CHUNK * es).map(one).reduce(
        || vec![0u64; bins],
        |mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
            a
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn naive(v: &[f64]) -> (f64, f64, f64, f64) {
        let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let n = f.len() as f64;
        let mean = f.iter().sum::<f64>() / n;
        let var = f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let l2 = f.iter().map(|x| x * x).sum::<f64>().sqrt();
        (
            mean,
            var.sqrt(),
            l2,
            f.iter().fold(0f64, |a, x| a.max(x.abs())),
        )
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-30)
    }

    #[test]
    fn f32_stats_match_naive_across_chunk_boundaries() {
        let n = 3 * CHUNK + 1234;
        let mut seed = 12345u64;
        let v: Vec<f32> = (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                1.0 + 0.01 * ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) as f32
            })
            .collect();
        let st = tensor_stats(&f32_bytes(&v), DType::F32);
        let (mean, std, l2, absmax) = naive(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
        assert_eq!(st.count, n as u64);
        assert!(close(st.mean, mean, 1e-9), "{} {}", st.mean, mean);
        assert!(close(st.std, std, 1e-5), "{} {}", st.std, std);
        assert!(close(st.l2, l2, 1e-9));
        assert_eq!(st.absmax, absmax);
        assert_eq!(st.hist.total(), n as u64);
        assert_eq!(
            st.hist.pos[LogHist::bin_of(0)] + st.hist.pos[LogHist::bin_of(-1)],
            n as u64
        );
    }

    #[test]
    fn nonfinite_values_are_counted_beside_the_moments() {
        let v = [
            1.0f32,
            f32::NAN,
            f32::INFINITY,
            -3.0,
            0.0,
            f32::NEG_INFINITY,
            -0.0,
        ];
        let st = tensor_stats(&f32_bytes(&v), DType::F32);
        assert_eq!(
            (st.count, st.finite, st.nan, st.inf, st.zeros),
            (7, 4, 1, 2, 2)
        );
        assert_eq!((st.min, st.max, st.absmax), (-3.0, 1.0, 3.0));
        assert!(close(st.mean, -0.5, 1e-12));
        assert_eq!(st.hist.zero, 2);
        assert_eq!(st.hist.neg[LogHist::bin_of(1)], 1);
        assert_eq!(st.hist.pos[LogHist::bin_of(0)], 1);
    }

    #[test]
    fn all_nan_and_empty_tensors_are_reported_not_fatal() {
        let st = tensor_stats(&f32_bytes(&[f32::NAN; 5]), DType::F32);
        assert_eq!((st.count, st.finite, st.nan), (5, 0, 5));
        assert!(st.mean.is_nan() && st.std.is_nan());
        let e = tensor_stats(&[], DType::BF16);
        assert_eq!((e.count, e.zero_frac()), (0, 0.0));
    }

    #[test]
    fn huge_finite_values_fall_back_to_f64_moments() {
        let v = [1e30f32, -1e30, 1e30, -1e30];
        let st = tensor_stats(&f32_bytes(&v), DType::F32);
        assert!(close(st.std, 1e30, 1e-6), "{}", st.std);
        assert!(close(st.l2, 2e30, 1e-6));
    }

    #[test]
    fn bf16_f16_and_int_dtypes_decode() {
        let bf: Vec<u8> = [1.5f32, -2.0, 0.25]
            .iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect();
        let st = tensor_stats(&bf, DType::BF16);
        assert_eq!((st.min, st.max), (-2.0, 1.5));
        let h: Vec<u8> = [half::f16::from_f32(3.0), half::f16::from_f32(-1.0)]
            .iter()
            .flat_map(|x| x.to_bits().to_le_bytes())
            .collect();
        assert!(close(tensor_stats(&h, DType::F16).mean, 1.0, 1e-12));
        let i: Vec<u8> = [5i64, -7, 0, 1 << 40]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let st = tensor_stats(&i, DType::I64);
        assert_eq!((st.min, st.max, st.zeros), (-7.0, (1u64 << 40) as f64, 1));
        assert_eq!(st.hist.pos[LogHist::bin_of(40)], 1);
        let st = tensor_stats(&[0, 1, 1, 0], DType::Bool);
        assert_eq!((st.mean, st.zeros), (0.5, 2));
    }

    #[test]
    fn table_path_matches_lane_path_for_bf16() {
        let n = TABLE_MIN + 1234;
        let mut seed = 99u64;
        let mut bits: Vec<u16> = (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let x = ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.3) * 0.1;
                (x.to_bits() >> 16) as u16
            })
            .collect();
        bits[7] = 0x7fc0; // NaN
        bits[99] = 0xff80; // -inf
        bits[1000] = 0x8000; // -0.0
        bits[5000] = 0;
        let raw: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let table = tensor_stats(&raw, DType::BF16);
        let lanes = raw
            .chunks(CHUNK * 2)
            .map(|c| chunk_f32(c, DType::BF16))
            .fold(Acc::empty(), Acc::merge)
            .finish();
        assert_eq!(
            (table.count, table.finite, table.nan, table.inf, table.zeros),
            (lanes.count, lanes.finite, lanes.nan, lanes.inf, lanes.zeros)
        );
        assert_eq!(
            (table.min, table.max, table.absmax),
            (lanes.min, lanes.max, lanes.absmax)
        );
        assert!(
            close(table.mean, lanes.mean, 1e-6),
            "{} {}",
            table.mean,
            lanes.mean
        );
        assert!(
            close(table.std, lanes.std, 1e-6),
            "{} {}",
            table.std,
            lanes.std
        );
        assert!(close(table.l2, lanes.l2, 1e-6));
        assert_eq!(table.hist, lanes.hist);
        assert_eq!((table.nan, table.inf), (1, 1));
    }

    #[test]
    fn infinities_inside_lanes_do_not_reach_min_max() {
        let mut v = vec![0.5f32; 40];
        v[3] = f32::INFINITY;
        v[17] = f32::NEG_INFINITY;
        v[20] = f32::NAN;
        v[30] = -2.0;
        let st = tensor_stats(&f32_bytes(&v), DType::F32);
        assert_eq!(
            (st.min, st.max, st.inf, st.nan, st.finite),
            (-2.0, 0.5, 2, 1, 37)
        );
        let i8s: Vec<u8> = [-128i8, 127, 0, -1].iter().map(|&x| x as u8).collect();
        let st = tensor_stats(&i8s, DType::I8);
        assert_eq!((st.min, st.max, st.zeros), (-128.0, 127.0, 1));
    }

    #[test]
    fn linear_histogram_counts_in_range() {
        let v = [0.0f32, 0.1, 0.5, 0.99, 1.0, 2.0, f32::NAN];
        let h = linear_histogram(&f32_bytes(&v), DType::F32, 0.0, 1.0, 4);
        assert_eq!(h, vec![2, 0, 1, 2]);
        assert_eq!(
            linear_histogram(&f32_bytes(&v), DType::F32, 1.0, 0.0, 3),
            vec![0, 0, 0]
        );
    }
}

/// Bytes read at a time when streaming from a file (stays in L2 between the read and the scan).
const STREAM_BLOCK: usize = 128 << 10;

thread_local! {
    static STREAM_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads `[start, end)` of `file` block by block into this thread's reusable buffer.
#[cfg(unix)]
fn for_each_block(
    file: &std::fs::File,
    start: u64,
    end: u64,
    mut f: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    STREAM_BUF.with(|b| {
        let mut buf = b.borrow_mut();
        if buf.len() < STREAM_BLOCK {
            buf.resize(STREAM_BLOCK, 0);
        }
        let mut pos = start;
        while pos < end {
            let n = STREAM_BLOCK.min((end - pos) as usize);
            file.read_exact_at(&mut buf[..n], pos)?;
            f(&buf[..n]);
            pos += n as u64;
        }
        Ok(())
    })
}

/// Statistics of `len` contiguous bytes at `offset` of `file`, read with positioned reads into
/// small per-thread buffers, one contiguous part per task — no memory map, so no page faults,
/// and resident memory of a few hundred KB whatever the tensor's size. Same results as
/// [`tensor_stats`].
#[cfg(unix)]
pub fn stream_stats(
    file: &std::fs::File,
    offset: u64,
    len: usize,
    dtype: DType,
) -> std::io::Result<TensorStats> {
    let es = dtype.size();
    let n = len / es;
    let threads = rayon::current_num_threads().max(1);
    let parts = (2 * threads).min(n.div_ceil(CHUNK)).max(1);
    let per = n.div_ceil(parts) * es;
    let ranges: Vec<(u64, u64)> = (0..parts)
        .map(|p| {
            let a = (p * per).min(n * es) as u64;
            let b = ((p + 1) * per).min(n * es) as u64;
            (offset + a, offset + b)
        })
        .collect();
    let table = table_width(dtype).filter(|_| es == 1 || n >= TABLE_MIN);
    if let Some(width) = table {
        let tables = ranges
            .par_iter()
            .map(|&(a, b)| {
                let mut t = vec![0u32; 4 * width];
                let mut wide = vec![0u64; width];
                let mut since = 0usize;
                for_each_block(file, a, b, |blk| {
                    count_table_into(blk, es, width, &mut t);
                    since += blk.len() / es;
                    if since >= 1 << 31 {
                        fold_tables(&mut t, &mut wide, width);
                        since = 0;
                    }
                })?;
                fold_tables(&mut t, &mut wide, width);
                Ok(wide)
            })
            .collect::<std::io::Result<Vec<Vec<u64>>>>()?;
        let mut merged = vec![0u64; width];
        for t in tables {
            for (a, b) in merged.iter_mut().zip(t) {
                *a += b;
            }
        }
        return Ok(acc_from_table(&merged, dtype).finish());
    }
    let accs = ranges
        .par_iter()
        .map(|&(a, b)| {
            let mut acc = Acc::empty();
            for_each_block(file, a, b, |blk| {
                for c in blk.chunks(CHUNK * es) {
                    acc = std::mem::replace(&mut acc, Acc::empty()).merge(chunk(c, dtype));
                }
            })?;
            Ok(acc)
        })
        .collect::<std::io::Result<Vec<Acc>>>()?;
    Ok(accs.into_iter().fold(Acc::empty(), Acc::merge).finish())
}

/// Adds four interleaved u32 tables into a u64 table and clears them.
fn fold_tables(t: &mut [u32], wide: &mut [u64], width: usize) {
    for i in 0..width {
        wide[i] +=
            t[i] as u64 + t[width + i] as u64 + t[2 * width + i] as u64 + t[3 * width + i] as u64;
    }
    t.iter_mut().for_each(|x| *x = 0);
}

#[cfg(all(test, unix))]
mod stream_tests {
    use super::*;
    use std::io::Write;

    fn xorshift(seed: &mut u64) -> f32 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        ((*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
    }

    /// Streams a tensor spanning many read blocks and parallel parts, at an unaligned offset,
    /// and checks it against the in-memory pass and against plain f64 arithmetic.
    #[test]
    fn streamed_stats_match_the_mapped_pass_and_plain_arithmetic() {
        let n = 3_000_017usize; // odd: parts and blocks end mid-way
        let mut seed = 7u64;
        let mut vals: Vec<f32> = (0..n).map(|_| xorshift(&mut seed)).collect();
        vals[5] = f32::NAN;
        vals[n / 2] = f32::INFINITY;
        vals[n - 1] = 0.0;
        for (dtype, bytes) in [
            (
                DType::BF16,
                vals.iter()
                    .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
            (
                DType::F32,
                vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
        ] {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&[0u8; 3]).unwrap(); // unaligned offset
            f.write_all(&bytes).unwrap();
            let streamed = stream_stats(&f, 3, bytes.len(), dtype).unwrap();
            let mapped = tensor_stats(&bytes, dtype);
            assert_eq!(streamed.count, n as u64);
            assert_eq!(
                (streamed.nan, streamed.inf, streamed.finite, streamed.zeros),
                (mapped.nan, mapped.inf, mapped.finite, mapped.zeros)
            );
            assert_eq!((streamed.min, streamed.max), (mapped.min, mapped.max));
            assert!((streamed.mean - mapped.mean).abs() < 1e-9, "{dtype:?}");
            assert!((streamed.std - mapped.std).abs() < 1e-9, "{dtype:?}");
            assert_eq!(streamed.hist, mapped.hist);
            // Plain arithmetic over the decoded values.
            let dec: Vec<f64> = bytes
                .chunks_exact(dtype.size())
                .map(|c| match dtype {
                    DType::BF16 => bf16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64,
                    _ => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                })
                .filter(|x| x.is_finite())
                .collect();
            let mean = dec.iter().sum::<f64>() / dec.len() as f64;
            let var = dec.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / dec.len() as f64;
            assert_eq!(streamed.finite, dec.len() as u64);
            assert!((streamed.mean - mean).abs() < 1e-9, "{dtype:?}");
            assert!((streamed.std - var.sqrt()).abs() < 1e-9, "{dtype:?}");
            assert_eq!(streamed.nan, 1);
            assert_eq!(streamed.inf, 1);
        }
    }
}
