//! Weight histograms for the run screen: the tensor list of the newest checkpoint (plus the
//! init checkpoint's), and for one tensor its statistics and a linear histogram over a range
//! shared by "init" and "now", so a collapse to a spike at 0 or a blown-up init shows. Runs on
//! the worker thread; the UI only draws the [`TensorHist`] it gets back.

use std::collections::HashMap;
use std::path::Path;

use mltriage_probes::run::{CheckpointDir, Run};
use mltriage_probes::tensors::pass;
use mltriage_probes::tensors::{linear_histogram, tensor_stats, DType, TensorFile, TensorStats};

/// Bins of the linear histogram; the UI merges or widens them to the width it has.
pub const HIST_BINS: usize = 64;

/// One tensor of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRow {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    pub in_now: bool,
    pub in_init: bool,
}

impl TensorRow {
    pub fn numel(&self) -> u128 {
        self.shape.iter().map(|&d| d as u128).product()
    }
}

/// The tensors the run screen can show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TensorList {
    /// Step of the newest checkpoint (absent when the run has none).
    pub now_step: Option<u64>,
    /// Step of the init checkpoint, when there is one besides the newest.
    pub init_step: Option<u64>,
    pub rows: Vec<TensorRow>,
    /// Weight files that could not be opened (`path: why`).
    pub problems: Vec<String>,
}

impl TensorList {
    /// The row to show first: the largest tensor (the most telling histogram).
    pub fn default_sel(&self) -> usize {
        self.rows
            .iter()
            .enumerate()
            .max_by_key(|(i, r)| (r.numel(), std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
            .unwrap_or(0)
    }
}

/// One checkpoint's side of a histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct HistSide {
    /// `init` or `now`.
    pub label: String,
    /// `None` when nothing says which step the checkpoint is (a lone model folder).
    pub step: Option<u64>,
    pub dtype: String,
    pub shape: Vec<usize>,
    pub stats: Option<TensorStats>,
    /// Counts over [`TensorHist::lo`, `hi`] in [`HIST_BINS`] bins (empty on error).
    pub bins: Vec<u64>,
    pub error: Option<String>,
}

/// A tensor's histogram, init vs now when both exist.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorHist {
    pub tensor: String,
    /// The shared range (NaN when no side has a finite value).
    pub lo: f64,
    pub hi: f64,
    pub sides: Vec<HistSide>,
}

/// What one side's bytes are, for [`from_bytes`].
pub struct SideInput<'a> {
    pub label: &'a str,
    pub step: u64,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bytes: &'a [u8],
}

/// The range to bin over: the finite min and max of every side; a single value gets a
/// window around it so that it lands mid-chart.
pub fn shared_range<'a>(stats: impl IntoIterator<Item = &'a TensorStats>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in stats {
        if s.finite > 0 && s.min.is_finite() && s.max.is_finite() {
            lo = lo.min(s.min);
            hi = hi.max(s.max);
        }
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return (f64::NAN, f64::NAN);
    }
    if hi <= lo {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
        return (lo - pad, hi + pad);
    }
    (lo, hi)
}

/// Statistics and histograms from raw bytes (tests, scripted runners).
pub fn from_bytes(tensor: &str, inputs: &[SideInput<'_>]) -> TensorHist {
    let stats: Vec<TensorStats> = inputs
        .iter()
        .map(|i| tensor_stats(i.bytes, i.dtype))
        .collect();
    let (lo, hi) = shared_range(&stats);
    let sides = inputs
        .iter()
        .zip(stats)
        .map(|(i, s)| HistSide {
            label: i.label.to_string(),
            step: Some(i.step),
            dtype: i.dtype.name().to_string(),
            shape: i.shape.clone(),
            stats: Some(s),
            bins: linear_histogram(i.bytes, i.dtype, lo, hi, HIST_BINS),
            error: None,
        })
        .collect();
    TensorHist {
        tensor: tensor.to_string(),
        lo,
        hi,
        sides,
    }
}

/// One checkpoint's weight files, opened (headers only), with a name index.
pub struct Weights {
    /// `None` when nothing says which step the checkpoint is (a lone model folder).
    pub step: Option<u64>,
    files: Vec<TensorFile>,
    /// Tensor name -> file holding it (the first file wins for duplicates).
    index: HashMap<String, usize>,
    /// Names in file order.
    names: Vec<String>,
    problems: Vec<String>,
}

/// `module.` / `_orig_mod.` wrappers (DDP, torch.compile) do not make a different tensor.
fn canonical(name: &str) -> &str {
    let mut n = name;
    loop {
        match n
            .strip_prefix("module.")
            .or_else(|| n.strip_prefix("_orig_mod."))
        {
            Some(r) => n = r,
            None => return n,
        }
    }
}

impl Weights {
    pub fn open(c: &CheckpointDir) -> Weights {
        let mut w = Weights {
            step: (!c.step_unknown).then_some(c.step),
            files: Vec::new(),
            index: HashMap::new(),
            names: Vec::new(),
            problems: Vec::new(),
        };
        for p in &c.weights {
            w.add(p);
        }
        w
    }

    fn add(&mut self, p: &Path) {
        match TensorFile::open(p) {
            Ok(tf) => {
                let fi = self.files.len();
                let mut fresh = false;
                for t in tf.tensors() {
                    if !self.index.contains_key(&t.name) {
                        self.index.insert(t.name.clone(), fi);
                        self.names.push(t.name.clone());
                        fresh = true;
                    }
                }
                if fresh {
                    self.files.push(tf);
                }
            }
            Err(e) => self.problems.push(e.to_string()),
        }
    }

    /// The stored name for `name`, exact or up to DDP / compile prefixes.
    fn resolve(&self, name: &str) -> Option<&str> {
        if let Some((k, _)) = self.index.get_key_value(name) {
            return Some(k.as_str());
        }
        let c = canonical(name);
        self.names
            .iter()
            .find(|n| canonical(n) == c)
            .map(String::as_str)
    }

    fn file_of(&self, name: &str) -> Option<&TensorFile> {
        self.index.get(name).and_then(|&i| self.files.get(i))
    }

    /// Statistics of one tensor, then its bytes binned over `[lo, hi]`.
    fn side(&self, label: &str, name: &str) -> HistSide {
        let mut side = HistSide {
            label: label.to_string(),
            step: self.step,
            dtype: String::new(),
            shape: Vec::new(),
            stats: None,
            bins: Vec::new(),
            error: None,
        };
        let Some(name) = self.resolve(name) else {
            side.error = Some(match self.step {
                Some(step) => format!("not in step {step}"),
                None => "not in this checkpoint".to_string(),
            });
            return side;
        };
        let Some(tf) = self.file_of(name) else {
            side.error = Some("no file".into());
            return side;
        };
        if let Some(info) = tf.get(name) {
            side.dtype = info.dtype.name().to_string();
            side.shape = info.shape.clone();
        }
        // From the tensor pass: already read by the check, or read now and kept.
        match pass::stats(tf, name) {
            Ok(s) => side.stats = Some(s),
            Err(e) => side.error = Some(e.to_string()),
        }
        side
    }

    fn bin(&self, side: &mut HistSide, name: &str, lo: f64, hi: f64) {
        if side.stats.is_none() {
            return;
        }
        let Some(name) = self.resolve(name) else {
            return;
        };
        let Some(tf) = self.file_of(name) else { return };
        let Some(dt) = tf.get(name).map(|i| i.dtype) else {
            return;
        };
        match tf.with_bytes(name, |b| linear_histogram(b, dt, lo, hi, HIST_BINS)) {
            Ok(h) => side.bins = h,
            Err(e) => side.error = Some(e.to_string()),
        }
    }
}

/// The newest checkpoint's weights and the init checkpoint's (when it is another one).
pub struct RunWeights {
    pub now: Option<Weights>,
    pub init: Option<Weights>,
}

impl RunWeights {
    pub fn open(run: &Run) -> RunWeights {
        let with_weights: Vec<&CheckpointDir> = run
            .checkpoints
            .iter()
            .filter(|c| !c.weights.is_empty())
            .collect();
        let now = with_weights.last().copied();
        let init = with_weights
            .iter()
            .copied()
            .find(|c| c.is_init)
            .filter(|c| now.is_some_and(|n| n.path != c.path));
        RunWeights {
            now: now.map(Weights::open),
            init: init.map(Weights::open),
        }
    }

    pub fn list(&self) -> TensorList {
        let mut rows: Vec<TensorRow> = Vec::new();
        let mut problems = Vec::new();
        for (w, is_init) in [(&self.now, false), (&self.init, true)] {
            let Some(w) = w else { continue };
            problems.extend(w.problems.iter().cloned());
            for name in &w.names {
                if is_init {
                    let c = canonical(name);
                    if let Some(r) = rows.iter_mut().find(|r| canonical(&r.name) == c) {
                        r.in_init = true;
                        continue;
                    }
                }
                let Some(info) = w.file_of(name).and_then(|f| f.get(name)) else {
                    continue;
                };
                rows.push(TensorRow {
                    name: name.clone(),
                    dtype: info.dtype.name().to_string(),
                    shape: info.shape.clone(),
                    in_now: !is_init,
                    in_init: is_init,
                });
            }
        }
        TensorList {
            now_step: self.now.as_ref().and_then(|w| w.step),
            init_step: self.init.as_ref().and_then(|w| w.step),
            rows,
            problems,
        }
    }

    /// Statistics of `name` in init and now, and both binned over their shared range.
    pub fn histogram(&self, name: &str) -> TensorHist {
        let mut sides: Vec<(&Weights, HistSide)> = Vec::new();
        for (w, label) in [(&self.init, "init"), (&self.now, "now")] {
            if let Some(w) = w {
                sides.push((w, w.side(label, name)));
            }
        }
        let (lo, hi) = shared_range(sides.iter().filter_map(|(_, s)| s.stats.as_ref()));
        for (w, s) in &mut sides {
            w.bin(s, name, lo, hi);
        }
        TensorHist {
            tensor: name.to_string(),
            lo,
            hi,
            sides: sides.into_iter().map(|(_, s)| s).collect(),
        }
    }
}

/// `name` in the checkpoints the run saved at `steps` (the ones a finding compared or
/// measured), binned over their shared range: two steps are `before` and `after`, one is
/// `measured`. Steps with no weights saved are left out; none found is an error.
pub fn histogram_at(run: &Run, name: &str, steps: &[u64]) -> Result<TensorHist, String> {
    let label = |i: usize| match (steps.len(), i) {
        (2, 0) => "before",
        (2, _) => "after",
        _ => "measured",
    };
    let mut sides: Vec<(Weights, HistSide)> = Vec::new();
    for (i, &step) in steps.iter().enumerate() {
        let Some(c) = run
            .checkpoints
            .iter()
            .rfind(|c| !c.weights.is_empty() && !c.step_unknown && c.step == step)
        else {
            continue;
        };
        let w = Weights::open(c);
        let side = w.side(label(i), name);
        sides.push((w, side));
    }
    if sides.is_empty() {
        let list: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
        return Err(format!("no checkpoint weights at step {}", list.join(", ")));
    }
    let (lo, hi) = shared_range(sides.iter().filter_map(|(_, s)| s.stats.as_ref()));
    for (w, s) in &mut sides {
        w.bin(s, name, lo, hi);
    }
    Ok(TensorHist {
        tensor: name.to_string(),
        lo,
        hi,
        sides: sides.into_iter().map(|(_, s)| s).collect(),
    })
}

/// Merge (or widen) `bins` to exactly `cols` columns; every count lands in one column.
pub fn resample(bins: &[u64], cols: usize) -> Vec<u64> {
    if cols == 0 || bins.is_empty() {
        return vec![0; cols];
    }
    let n = bins.len();
    let mut out = vec![0u64; cols];
    if cols >= n {
        // Each bin spans cols/n columns (the last few columns repeat the last bin).
        for (c, o) in out.iter_mut().enumerate() {
            *o = bins[(c * n / cols).min(n - 1)];
        }
    } else {
        for (i, b) in bins.iter().enumerate() {
            out[(i * cols / n).min(cols - 1)] += b;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn odd_tensors_never_panic_and_say_what_they_are() {
        let empty: Vec<u8> = Vec::new();
        let nan = f32s(&[f32::NAN; 5]);
        let ints: Vec<u8> = [1i64, 2, 2, 3]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bools = vec![0u8, 1, 1, 1];
        let constant = f32s(&[0.0; 8]);
        for (dt, bytes) in [
            (DType::F32, &empty),
            (DType::F32, &nan),
            (DType::I64, &ints),
            (DType::Bool, &bools),
            (DType::F32, &constant),
        ] {
            let h = from_bytes(
                "t",
                &[SideInput {
                    label: "now",
                    step: 1,
                    dtype: dt,
                    shape: vec![bytes.len() / dt.size()],
                    bytes,
                }],
            );
            assert_eq!(h.sides.len(), 1);
            assert_eq!(h.sides[0].bins.len(), HIST_BINS);
            let s = h.sides[0].stats.as_ref().unwrap();
            let binned: u64 = h.sides[0].bins.iter().sum();
            assert_eq!(binned, s.finite, "{dt:?}");
        }
        let h = from_bytes(
            "c",
            &[SideInput {
                label: "now",
                step: 1,
                dtype: DType::F32,
                shape: vec![8],
                bytes: &constant,
            }],
        );
        assert!(h.lo < 0.0 && h.hi > 0.0);
        // The spike sits mid-chart.
        let peak = h.sides[0].bins.iter().position(|&b| b == 8).unwrap();
        assert!((HIST_BINS / 3..2 * HIST_BINS / 3).contains(&peak), "{peak}");
    }

    #[test]
    fn init_and_now_share_one_range() {
        let init = f32s(&[-4.0, -1.0, 0.0, 1.0, 4.0]);
        let now = f32s(&[-0.01, 0.0, 0.0, 0.01, 0.02]);
        let h = from_bytes(
            "w",
            &[
                SideInput {
                    label: "init",
                    step: 0,
                    dtype: DType::F32,
                    shape: vec![5],
                    bytes: &init,
                },
                SideInput {
                    label: "now",
                    step: 9,
                    dtype: DType::F32,
                    shape: vec![5],
                    bytes: &now,
                },
            ],
        );
        assert_eq!((h.lo, h.hi), (-4.0, 4.0));
        // Everything of "now" falls in the one or two bins around 0: a spike.
        let nz = h.sides[1].bins.iter().filter(|&&b| b > 0).count();
        assert!(nz <= 2, "{:?}", h.sides[1].bins);
    }

    #[test]
    fn resample_keeps_counts_and_widths() {
        let b: Vec<u64> = (0..64).collect();
        let r = resample(&b, 10);
        assert_eq!(r.len(), 10);
        assert_eq!(r.iter().sum::<u64>(), b.iter().sum::<u64>());
        assert_eq!(resample(&b, 128).len(), 128);
        assert_eq!(resample(&b, 0).len(), 0);
        assert_eq!(resample(&[], 5), vec![0; 5]);
    }
}
