//! Per-row numbers of a dumped batch for the walk chart: the fraction of each row's labels
//! masked with the ignore index (the label-mask question), read from the batch file a probe
//! named in its evidence.

use std::path::Path;

use mltriage_probes::facts::Facts;
use mltriage_probes::tensors::TensorFile;

/// Most elements read (a batch dump is small; a huge one is cut, not read whole).
const CAP: usize = 1 << 24;

/// What the walk chart draws for a batch question.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRows {
    /// The file and tensor read.
    pub file: String,
    pub tensor: String,
    /// The label value counted as masked (-100 unless a fact says otherwise).
    pub ignore: i64,
    /// Per row: masked labels / row length.
    pub masked: Vec<f64>,
    /// Per row: padded positions (attention_mask == 0) / row length, when the batch has one.
    pub padded: Option<Vec<f64>>,
}

fn find<'a>(f: &'a TensorFile, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| {
        f.get(k).map(|t| t.name.as_str()).or_else(|| {
            f.tensors()
                .iter()
                .find(|t| t.name.ends_with(&format!(".{k}")))
                .map(|t| t.name.as_str())
        })
    })
}

fn per_row(v: &[i64], row: usize, hit: impl Fn(i64) -> bool) -> Vec<f64> {
    v.chunks(row.max(1))
        .map(|r| r.iter().filter(|&&x| hit(x)).count() as f64 / r.len().max(1) as f64)
        .collect()
}

/// The label-mask fraction per row of `path` (labels shaped [rows, len]).
pub fn label_mask_rows(path: &Path, facts: &Facts) -> Result<BatchRows, String> {
    let f = TensorFile::open(path).map_err(|e| e.to_string())?;
    let labels = find(&f, &["labels", "label", "targets", "target"])
        .ok_or_else(|| format!("{}: no labels tensor", path.display()))?
        .to_string();
    let info = f.get(&labels).ok_or("labels vanished")?;
    let row = info.shape.last().copied().unwrap_or(1);
    if info.shape.len() < 2 || row == 0 {
        return Err(format!(
            "{}: `{labels}` has shape {:?}, not one row of labels per example",
            path.display(),
            info.shape
        ));
    }
    let v = f.to_i64_vec(&labels, CAP).map_err(|e| e.to_string())?;
    let ignore = facts.f64("ignore_index").map(|x| x as i64).unwrap_or(-100);
    let padded = find(&f, &["attention_mask"]).and_then(|a| {
        let m = f.to_i64_vec(a, CAP).ok()?;
        (m.len() == v.len()).then(|| per_row(&m, row, |x| x == 0))
    });
    Ok(BatchRows {
        file: path.display().to_string(),
        tensor: labels,
        ignore,
        masked: per_row(&v, row, |x| x == ignore),
        padded,
    })
}
