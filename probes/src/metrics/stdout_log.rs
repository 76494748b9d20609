//! Training stdout captured to a file (`train.log`, `nohup.out`, `slurm-<job>.out`, `*.log`):
//! a tolerant extractor of `step N … key value` lines. A line counts when it names its step
//! (`step 10`, `iter 10:`, `step=10`, `global_step: 10`, `Step 10/300`); every other
//! `key value`, `key=value` or `key: value` pair on it becomes a point of series `key`
//! (`train loss 4.1` -> `train_loss`, `lr=[0.001]` -> `lr`). Lines without a step (banners,
//! warnings, progress bars, Python dict dumps) are skipped, and so are units (`ms`, `%`).
//! The `MetricLogger` idiom of torchvision's references (copied by DETR, DeiT, MAE, DINO …) is
//! read too: `Epoch: [3]  [ 20/125]  … loss: 1.44 (1.48)` is step 3 × 125 + 20 (the windowed
//! median, not the running mean in brackets), the evaluation summaries after an epoch
//! (`Test:  Acc@1 98.8 Acc@5 100.0`, COCO's `Average Precision (AP) @[ IoU=0.50 | area= all |
//! maxDets=100 ] = 0.755`) are eval points at the epoch's last step, and `Loss is nan, stopping
//! training` is a non-finite loss right after it.
//! The log is streamed a line at a time: lines past [`crate::limits::MAX_LINE`] are skipped,
//! at most [`MAX_BYTES`] are read, and the series are kept under the budgets of
//! [`super::budget`] (long series thinned, distinct keys capped).

use std::collections::HashMap;
use std::path::Path;

use super::budget::{Keeper, Lines};
use super::{Point, Series};
use crate::error::{ReadError, Result};

/// Logs larger than this are read up to here only.
pub const MAX_BYTES: u64 = 512 * 1024 * 1024;
/// Keys longer than this many words are not metric names (`tokens per iteration will be`).
const MAX_KEY_WORDS: usize = 3;
/// Words that name the step of a line.
const STEP_WORDS: [&str; 5] = ["step", "iter", "iteration", "global_step", "steps"];

/// What the extractor made of a log.
#[derive(Debug, Default)]
pub struct LogRead {
    pub series: Vec<Series>,
    /// Lines that carried a step.
    pub step_lines: usize,
    pub lines: usize,
    /// Lines skipped for being longer than [`crate::limits::MAX_LINE`].
    pub long_lines: usize,
    /// Batches per epoch, where progress lines state it (`Train: 3 [ 10/32 …]`) and agree.
    pub steps_per_epoch: Option<u64>,
}

/// Read a captured stdout log. Not valid UTF-8 is read lossily; a log with no step lines is
/// an empty result, not an error (the caller says it was ignored and why).
pub fn read(path: &Path) -> Result<LogRead> {
    use std::io::Read;
    let f = crate::limits::open_regular(path)?;
    let r = std::io::BufReader::with_capacity(256 << 10, f.take(MAX_BYTES));
    let mut lines = Lines::new(r, crate::limits::MAX_LINE);
    let mut p = Parser::new(path);
    while let Some(raw) = lines.next_line().map_err(|e| ReadError::io(path, e))? {
        p.line(&String::from_utf8_lossy(raw));
    }
    if lines.nuls > 0 && lines.nuls * 8 > lines.bytes {
        return Err(ReadError::format(path, "binary data, not a text log"));
    }
    let mut out = p.finish();
    out.long_lines = lines.long;
    Ok(out)
}

/// Extract series from log text.
pub fn parse(text: &str, source: &Path) -> LogRead {
    let mut p = Parser::new(source);
    for raw in text.split(['\n', '\r']) {
        p.line(raw);
    }
    p.finish()
}

/// The extractor's state between lines.
struct Parser<'a> {
    source: &'a Path,
    keep: Keeper,
    out: LogRead,
    /// `None`: no progress line yet; `Some(None)`: lines disagree on the batches per epoch.
    per_epoch: Option<Option<u64>>,
    /// The step of the last line that named one.
    last_step: Option<u64>,
}

impl<'a> Parser<'a> {
    fn new(source: &'a Path) -> Self {
        Parser {
            source,
            keep: Keeper::new(),
            out: LogRead::default(),
            per_epoch: None,
            last_step: None,
        }
    }

    /// A line without a step that reports on the epoch just trained: an evaluation summary
    /// (eval points at the last step) or a training loop stopping on a non-finite loss (a
    /// `loss` point one step later). True when the line was one of these.
    fn after_epoch(&mut self, raw: &str) -> bool {
        let Some(last) = self.last_step else {
            return false;
        };
        let t = raw.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(v) = lower
            .strip_prefix("loss is ")
            .and_then(|r| r.split([',', ' ']).next())
            .filter(|v| matches!(*v, "nan" | "inf" | "-inf"))
        {
            let value = if v == "nan" { f64::NAN } else { f64::INFINITY };
            self.keep.push(
                "loss",
                Point {
                    step: last + 1,
                    value,
                    wall_time: None,
                },
            );
            return true;
        }
        let mut found = false;
        for (key, value) in eval_summary(t) {
            self.keep.push(
                key,
                Point {
                    step: last,
                    value,
                    wall_time: None,
                },
            );
            found = true;
        }
        found
    }

    fn line(&mut self, raw: &str) {
        self.out.lines += 1;
        let mut pairs = pairs(raw);
        let step = pairs.iter().find_map(|(k, v)| {
            (STEP_WORDS.contains(&k.as_str()) && v.fract() == 0.0 && *v >= 0.0 && *v < 1e15)
                .then_some(*v as u64)
        });
        let (step, mut seen_step) = match step {
            Some(s) => (s, false),
            None if self.last_step.is_some() && self.after_epoch(raw) => return,
            // `Train: 3 [ 10/32 ( 34%)]` (timm): epoch 3, batch 10 of 32 — step 3 × 32 + 10.
            None => match epoch_batch(raw) {
                Some((epoch_key, step, n)) => {
                    pairs.retain(|(k, _)| *k != epoch_key);
                    self.per_epoch = match self.per_epoch {
                        None => Some(Some(n)),
                        Some(Some(m)) if m == n => Some(Some(n)),
                        _ => Some(None),
                    };
                    (step, true)
                }
                None => return,
            },
        };
        self.out.step_lines += 1;
        self.last_step = Some(step);
        for (k, v) in pairs {
            if STEP_WORDS.contains(&k.as_str()) && !seen_step {
                seen_step = true;
                continue;
            }
            self.keep.push(
                &k,
                Point {
                    step,
                    value: v,
                    wall_time: None,
                },
            );
        }
    }

    fn finish(self) -> LogRead {
        let Parser {
            source,
            keep,
            mut out,
            per_epoch,
            ..
        } = self;
        let mut series: Vec<Series> = keep
            .finish()
            .into_iter()
            .map(|(k, pts)| Series::from_points(&k, source, pts))
            .collect();
        // Two keys of one log with one canonical name (nanoGPT's per-iteration `loss` and the
        // eval-time `train loss`): the longest keeps the name, the others keep their own key,
        // so one log never looks like several runs of one metric. Grouped by name once.
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (j, s) in series.iter().enumerate() {
            let better = |i: usize| {
                let b = &series[i];
                (s.len(), s.tag == s.name) > (b.len(), b.tag == b.name)
            };
            match by_name.get(&s.name) {
                Some(&i) if !better(i) => {}
                _ => {
                    by_name.insert(s.name.clone(), j);
                }
            }
        }
        for (j, s) in series.iter_mut().enumerate() {
            if by_name.get(&s.name) != Some(&j) {
                let own = s.tag.clone();
                s.name = if own == s.name {
                    format!("{own} (second series)")
                } else {
                    own
                };
            }
        }
        out.series = series;
        out.steps_per_epoch = per_epoch.flatten();
        out
    }
}

/// `(key, value)` pairs of one line, keys lowercased with spaces as `_`.
fn pairs(line: &str) -> Vec<(String, f64)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'/' | b'-' | b'.'))
            {
                i += 1;
            }
            // A word ending in '.' or '-' keeps them out (`loss.` at a sentence end).
            let mut end = i;
            while end > start && matches!(b[end - 1], b'.' | b'-' | b'/') {
                end -= 1;
            }
            let word = line.get(start..end).unwrap_or("");
            let special = match word.to_ascii_lowercase().as_str() {
                "nan" => Some(f64::NAN),
                "inf" | "infinity" => Some(f64::INFINITY),
                _ => None,
            };
            match special {
                Some(v) if !words.is_empty() => {
                    if words.len() <= MAX_KEY_WORDS {
                        out.push((key_of(&words), v));
                    }
                    words.clear();
                }
                _ => words.push(word),
            }
            continue;
        }
        if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        }
        if matches!(c, b'=' | b':') {
            i += 1;
            // `key: [0.1]`, `key=[0.1]`: the value may sit in a bracket.
            continue;
        }
        if c == b'[' && !words.is_empty() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || ((c == b'-' || c == b'+' || c == b'.') && next_is_number(b, i)) {
            let (v, end) = number(b, i);
            i = end;
            // `Step 10/300`: the total after '/' is not a value of its own.
            if i < b.len() && b[i] == b'/' {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if let (Some(v), false) = (v, words.is_empty()) {
                if words.len() <= MAX_KEY_WORDS {
                    let key = key_of(&words);
                    if !key.is_empty() {
                        out.push((key, v));
                    }
                }
            }
            words.clear();
            // Units right after the number belong to it (`12.5ms`, `3%`, `1.2M`).
            while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'%') {
                i += 1;
            }
            continue;
        }
        // Any other punctuation ends a key.
        words.clear();
        i += 1;
    }
    out
}

/// A key from its words (ASCII: see [`pairs`]): lowercased, joined by `_`.
fn key_of(words: &[&str]) -> String {
    let mut k = words.join("_");
    k.make_ascii_lowercase();
    k
}

/// Evaluation summaries printed after an epoch, as (key, value): `Acc@1 98.8 Acc@5 100.0`
/// (torchvision's classification reference, DeiT) and COCO's `Average Precision (AP) @[
/// IoU=0.50:0.95 | area= all | maxDets=100 ] = 0.310` (the all-area, 100-detection rows).
fn eval_summary(line: &str) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    let num = |s: &str| -> Option<f64> {
        s.split_whitespace()
            .next()?
            .trim_end_matches(',')
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    };
    for (mark, key) in [("Acc@1", "eval_acc1"), ("Acc@5", "eval_acc5")] {
        if let Some(v) = line.split_once(mark).and_then(|(_, r)| num(r)) {
            out.push((key, v));
        }
    }
    if let Some(rest) = line.trim_start().strip_prefix("Average Precision") {
        let (spec, value) = match rest.rsplit_once('=') {
            Some(x) => x,
            None => return out,
        };
        let squash: String = spec.split_whitespace().collect();
        if squash.contains("area=all") && squash.contains("maxDets=100") {
            let key = if squash.contains("IoU=0.50:0.95") {
                Some("bbox_map")
            } else if squash.contains("IoU=0.50|") {
                Some("bbox_map_50")
            } else {
                None
            };
            if let (Some(k), Some(v)) = (key, num(value)) {
                out.push((k, v));
            }
        }
    }
    out
}

/// A progress line that states its epoch and its batch of the epoch, `Word: E [ b/N`: the
/// word (lowercased, the key it would make) and the step `E × N + b`.
fn epoch_batch(line: &str) -> Option<(String, u64, u64)> {
    let b = line.as_bytes();
    let int_before = |mut i: usize| -> Option<(u64, usize)> {
        while i > 0 && b[i - 1] == b' ' {
            i -= 1;
        }
        let end = i;
        while i > 0 && b[i - 1].is_ascii_digit() {
            i -= 1;
        }
        let v = line.get(i..end)?.parse::<u64>().ok()?;
        Some((v, i))
    };
    for (open, _) in line.match_indices('[') {
        // `Epoch: [3]  [ 20/125]` (torchvision's MetricLogger): the epoch in a bracket of its
        // own before the batch's.
        let bracketed = || -> Option<(u64, usize)> {
            let head = line.get(..open)?.trim_end();
            let inner = head.strip_suffix(']')?;
            let lb = inner.rfind('[')?;
            let v = inner.get(lb + 1..)?.trim().parse::<u64>().ok()?;
            Some((v, lb))
        };
        let Some((epoch, at)) = int_before(open).or_else(bracketed) else {
            continue;
        };
        // The word naming the epoch: `Train:`, `Epoch`.
        let head = line.get(..at)?.trim_end().trim_end_matches(':').trim_end();
        let word: String = head
            .rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or("")
            .to_string();
        if word.is_empty() || word.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let rest = line.get(open + 1..)?.trim_start();
        let (bi, tail) = rest.split_once('/')?;
        let n: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
        let (Ok(bi), Ok(n)) = (bi.trim().parse::<u64>(), n.parse::<u64>()) else {
            continue;
        };
        if n == 0 || bi > n {
            continue;
        }
        return Some((
            word.to_lowercase(),
            epoch.checked_mul(n)?.checked_add(bi)?,
            n,
        ));
    }
    None
}

fn next_is_number(b: &[u8], i: usize) -> bool {
    let rest = b.get(i + 1..).unwrap_or(&[]);
    match rest.first() {
        Some(d) if d.is_ascii_digit() => true,
        Some(b'.') => rest.get(1).is_some_and(u8::is_ascii_digit),
        _ => false,
    }
}

/// A decimal number at `i` (sign, digits, fraction, exponent); its value and the index past it.
fn number(b: &[u8], mut i: usize) -> (Option<f64>, usize) {
    let start = i;
    if i < b.len() && matches!(b[i], b'-' | b'+') {
        i += 1;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < b.len() && matches!(b[j], b'-' | b'+') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let v = std::str::from_utf8(b.get(start..i).unwrap_or(&[]))
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    (v, i)
}

/// Whether a file name is a captured stdout log by convention.
pub fn is_stdout_log_name(name: &str) -> bool {
    let n = name.to_lowercase();
    n == "nohup.out"
        || n.ends_with(".log")
        || n.ends_with(".out")
            && (n.starts_with("slurm") || n.starts_with("train") || n.starts_with("job"))
        || n.ends_with(".err") && n.starts_with("slurm")
        || n == "output.log"
        || n == "stdout"
        || n == "stdout.txt"
        || n == "train.txt"
        || n == "log.txt"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(r: &'a LogRead, tag: &str) -> Option<&'a Series> {
        r.series.iter().find(|s| s.tag == tag)
    }

    #[test]
    fn timm_progress_lines_give_the_step_from_epoch_and_batch() {
        let text = "2026-11-25 17:59:28,074 -                train: [    INFO] - Train: 0 [   0/32 (  3%)]  Loss: 2.28 (2.28)  Time: 0.037s, 1713.90/s  (0.037s, 1713.90/s)  LR: 1.000e-05  Data: 0.001 (0.001)\n\
            2026-11-25 17:59:28,166 -                train: [    INFO] - Train: 1 [   5/32 ( 19%)]  Loss: 2.32 (2.31)  Time: 0.018s, 3468.79/s  (0.022s, 2968.01/s)  LR: 7.821e-03  Data: 0.001 (0.001)\n\
            2026-11-25 17:59:28,691 -                train: [    INFO] - Test: [   7/7]  Loss:   1.197 ( 1.150)  Acc@1:  46.875 ( 44.141)\n";
        let r = parse(text, Path::new("train.log"));
        let loss = get(&r, "loss").unwrap();
        assert_eq!(loss.steps(), vec![0, 37]);
        assert_eq!(loss.values(), vec![2.28, 2.32]);
        assert_eq!(get(&r, "lr").unwrap().values(), vec![1e-5, 7.821e-3]);
        assert!(get(&r, "train").is_none());
        assert_eq!(r.step_lines, 2);
        assert_eq!(r.steps_per_epoch, Some(32));
    }

    #[test]
    fn metric_logger_lines_give_steps_evals_and_the_nan_stop() {
        let text = "Epoch: [0]  [  0/125]  eta: 0:00:12  lr: 0.000181  loss: 2.3597 (2.3597)  loss_classifier: 1.4408 (1.4408)  time: 0.1032  data: 0.0021\n\
            Epoch: [0]  [124/125]  eta: 0:00:00  lr: 0.020000  loss: 1.2 (1.9)  loss_classifier: 0.6 (1.0)  time: 0.08  data: 0.001\n\
            Epoch: [0] Total time: 0:00:11 (0.0888 s / it)\n\
            Test:  [ 0/50]  eta: 0:00:00  model_time: 0.0071 (0.0071)  time: 0.0081  data: 0.0009\n\
            \x20Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.310\n\
            \x20Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 0.755\n\
            \x20Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = -1.000\n\
            Test:  Acc@1 34.961 Acc@5 85.742\n\
            Epoch: [1]  [ 20/125]  eta: 0:00:05  lr: 1.6  loss: 1.43 (1.48)  time: 0.08  data: 0.001\n\
            Loss is nan, stopping training\n\
            {'loss_classifier': tensor(nan, grad_fn=<NllLossBackward0>)}\n";
        let r = parse(text, Path::new("train.log"));
        let loss = get(&r, "loss").unwrap();
        assert_eq!(loss.steps(), vec![0, 124, 145, 146]);
        assert_eq!(
            loss.values()[1],
            1.2,
            "the windowed median, not the running mean"
        );
        assert!(loss.values()[3].is_nan());
        assert_eq!(r.steps_per_epoch, Some(125));
        let map = get(&r, "bbox_map").unwrap();
        assert_eq!((map.steps(), map.values()), (vec![124], vec![0.310]));
        assert_eq!(get(&r, "bbox_map_50").unwrap().values(), vec![0.755]);
        assert_eq!(get(&r, "eval_acc1").unwrap().values(), vec![34.961]);
        assert_eq!(get(&r, "lr").unwrap().steps(), vec![0, 124, 145]);
    }

    #[test]
    fn nanogpt_lines() {
        let text = "tokens per iteration will be: 8,192\n\
            step 0: train loss 4.1461, val loss 4.1463\n\
            iter 0: loss 4.1374, time 1768.45ms, mfu -100.00%\n\
            iter 1: loss 4.1536, time 255.73ms, mfu -100.00%\n\
            saving checkpoint to out\n\
            step 100: train loss 2.9572, val loss 2.9706\n";
        let r = parse(text, Path::new("train.log"));
        assert_eq!(r.step_lines, 4);
        let loss = get(&r, "loss").unwrap();
        assert_eq!(loss.points.len(), 2);
        assert_eq!(loss.points[1].step, 1);
        assert!((loss.points[1].value - 4.1536).abs() < 1e-9);
        assert_eq!(get(&r, "train_loss").unwrap().name, "train_loss");
        let val = get(&r, "val_loss").unwrap();
        assert_eq!(val.name, "eval_loss");
        assert_eq!(val.steps(), vec![0, 100]);
        assert_eq!(get(&r, "mfu").unwrap().points[0].value, -100.0);
        assert!(get(&r, "tokens_per_iteration_will_be").is_none());
    }

    #[test]
    fn key_value_forms() {
        let text = "step 10: loss=4.1379 lr=0.002031 grad_norm=2.9611\n\
            step 20 | loss 3.4455 | lr 2.100e-03 | grad_norm 2.6500\n\
            [2026-11-23 21:17:29,913] [INFO] step=30, skipped=0, lr=[0.0011], mom=[(0.9, 0.999)]\n\
            Step 40/300 - loss: 2.5 - learning_rate: 1e-3\n\
            {'loss': '4.166', 'grad_norm': '0.8931'}\n";
        let r = parse(text, Path::new("slurm-1.out"));
        assert_eq!(r.step_lines, 4);
        let lr = get(&r, "lr").unwrap();
        assert_eq!(lr.name, "learning_rate");
        assert_eq!(lr.steps(), vec![10, 20, 30]);
        assert!((lr.points[1].value - 2.1e-3).abs() < 1e-12);
        assert_eq!(get(&r, "loss").unwrap().steps(), vec![10, 20, 40]);
        assert_eq!(get(&r, "grad_norm").unwrap().points.len(), 2);
        assert_eq!(get(&r, "learning_rate").unwrap().steps(), vec![40]);
    }

    #[test]
    fn no_step_lines_means_nothing() {
        let r = parse("hello 1\nloss 2.0\n", Path::new("x.log"));
        let n = parse("step 3: loss nan\n", Path::new("x.log"));
        assert!(get(&n, "loss").unwrap().points[0].value.is_nan());
        assert!(r.series.is_empty());
        assert_eq!(r.step_lines, 0);
    }

    #[test]
    fn names() {
        for n in [
            "train.log",
            "nohup.out",
            "slurm-4242.out",
            "slurm-1.err",
            "output.log",
        ] {
            assert!(is_stdout_log_name(n), "{n}");
        }
        for n in ["model.out", "debug.txt", "metrics.csv"] {
            assert!(!is_stdout_log_name(n), "{n}");
        }
    }
}
