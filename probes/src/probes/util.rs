//! Small numeric helpers shared by probes: EMA, rolling means, medians, IQM, formatting.

use crate::metrics::{Point, Series};
use crate::probe::Evidence;

/// Exponential moving average with a span of `span` training steps (alpha = 2 / (span + 1)
/// per step), seeded with the first finite value; non-finite values are skipped (the EMA
/// holds). A point logged `d` steps after the previous one gets the weight `d` steps of
/// decay would give it (1 - (1 - alpha)^d), so the horizon is in steps, not logged points.
pub fn ema(points: &[Point], span: f64) -> Vec<(u64, f64)> {
    let keep = 1.0 - 2.0 / (span.max(1.0) + 1.0);
    let mut out = Vec::with_capacity(points.len());
    let mut cur: Option<(u64, f64)> = None;
    for p in points {
        if p.value.is_finite() {
            cur = Some(match cur {
                None => (p.step, p.value),
                Some((s, c)) => {
                    let d = p.step.saturating_sub(s).max(1) as f64;
                    let a = 1.0 - keep.powf(d);
                    (p.step, c + a * (p.value - c))
                }
            });
        }
        if let Some((_, c)) = cur {
            out.push((p.step, c));
        }
    }
    out
}

/// Value of a (step, value) curve at the last step <= `step` (or the first point).
pub fn at_step(curve: &[(u64, f64)], step: u64) -> Option<(u64, f64)> {
    let i = curve.partition_point(|(s, _)| *s <= step);
    if i == 0 {
        curve.first().copied()
    } else {
        curve.get(i - 1).copied()
    }
}

/// Rolling means over windows of `window` training steps: for each finite point, the mean of
/// the finite points whose step lies in (step - window, step]; (step, mean). Windows start
/// once the series spans a full window; a series shorter than one window gives one mean.
pub fn rolling_mean(points: &[Point], window: usize) -> Vec<(u64, f64)> {
    let w = window.max(1) as u64;
    let fin: Vec<&Point> = points.iter().filter(|p| p.value.is_finite()).collect();
    let Some(first) = fin.first().map(|p| p.step) else {
        return Vec::new();
    };
    let last = fin[fin.len() - 1].step;
    if last - first + 1 < w {
        return vec![(
            last,
            fin.iter().map(|p| p.value).sum::<f64>() / fin.len() as f64,
        )];
    }
    let mut out = Vec::new();
    let (mut lo, mut sum) = (0usize, 0.0);
    for (i, p) in fin.iter().enumerate() {
        sum += p.value;
        while fin[lo].step + w <= p.step {
            sum -= fin[lo].value;
            lo += 1;
        }
        if p.step + 1 >= first + w {
            out.push((p.step, sum / (i + 1 - lo) as f64));
        }
    }
    out
}

pub fn median(v: &[f64]) -> Option<f64> {
    let mut x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    if x.is_empty() {
        return None;
    }
    x.sort_by(|a, b| a.total_cmp(b));
    let n = x.len();
    Some(if n % 2 == 1 {
        x[n / 2]
    } else {
        0.5 * (x[n / 2 - 1] + x[n / 2])
    })
}

pub fn mean(v: &[f64]) -> Option<f64> {
    let x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    if x.is_empty() {
        None
    } else {
        Some(x.iter().sum::<f64>() / x.len() as f64)
    }
}

/// Interquartile mean: the mean of the middle 50% (all values when fewer than 4).
pub fn iqm(v: &[f64]) -> Option<f64> {
    let mut x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    if x.is_empty() {
        return None;
    }
    x.sort_by(|a, b| a.total_cmp(b));
    let n = x.len();
    if n < 4 {
        return mean(&x);
    }
    let lo = n / 4;
    let hi = n - n / 4;
    mean(&x[lo..hi])
}

/// Sample standard deviation of the finite values (None for fewer than two).
pub fn std_dev(v: &[f64]) -> Option<f64> {
    let x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    if x.len() < 2 {
        return None;
    }
    let m = x.iter().sum::<f64>() / x.len() as f64;
    Some((x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt())
}

/// Relative spread `(max - min) / max|x|` of the finite values (None when empty or all zero).
pub fn rel_spread(v: &[f64]) -> Option<f64> {
    let x: Vec<f64> = v.iter().copied().filter(|a| a.is_finite()).collect();
    let hi = x.iter().copied().reduce(f64::max)?;
    let lo = x.iter().copied().reduce(f64::min)?;
    let scale = hi.abs().max(lo.abs());
    (scale > 0.0).then(|| (hi - lo) / scale)
}

/// The most events inside any window of `width` consecutive steps, and the step the densest
/// window starts at. `steps` must be sorted ascending.
pub fn max_in_window(steps: &[u64], width: u64) -> (usize, Option<u64>) {
    let width = width.max(1);
    let (mut best, mut at, mut i) = (0usize, None, 0usize);
    for (j, &s) in steps.iter().enumerate() {
        while steps.get(i).is_some_and(|&a| s - a >= width) {
            i += 1;
        }
        if j + 1 - i > best {
            best = j + 1 - i;
            at = steps.get(i).copied();
        }
    }
    (best, at)
}

/// A series' finite points as (step, value), in step order.
pub fn finite_points(s: &Series) -> Vec<(u64, f64)> {
    s.points
        .iter()
        .filter(|p| p.value.is_finite())
        .map(|p| (p.step, p.value))
        .collect()
}

/// A series' finite values, in step order.
pub fn finite_values(s: &Series) -> Vec<f64> {
    s.points
        .iter()
        .map(|p| p.value)
        .filter(|x| x.is_finite())
        .collect()
}

/// Mean of the last (`from_end`) or first `frac` of a series' finite values (≥ 1 point).
fn part_mean(s: &Series, frac: f64, from_end: bool) -> Option<f64> {
    let v = finite_values(s);
    if v.is_empty() {
        return None;
    }
    let k = ((v.len() as f64 * frac.clamp(0.0, 1.0)).ceil() as usize).clamp(1, v.len());
    mean(if from_end { &v[v.len() - k..] } else { &v[..k] })
}

/// Mean of the last `frac` of a series' finite values (at least one point).
pub fn tail_mean(s: &Series, frac: f64) -> Option<f64> {
    part_mean(s, frac, true)
}

/// Mean of the first `frac` of a series' finite values (at least one point).
pub fn head_mean(s: &Series, frac: f64) -> Option<f64> {
    part_mean(s, frac, false)
}

/// This process's peak resident memory in MB (Linux `VmHWM`; 0 elsewhere), for benchmarks.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// The entry a loss or weights gone non-finite mid-run points to: L6 (the softmax normaliser's
/// drift, z-loss) for a language model's run or one of unknown kind; F22 (look at the steps that
/// led up to it) for a classifier, detector, segmenter, diffusion model or an RL agent, where
/// an LM's logit drift is not the story.
pub fn nonfinite_entry(profile: &crate::profile::Profile) -> &'static str {
    use crate::profile::Phase as P;
    match profile.phase.value {
        P::Classification | P::Detection | P::Segmentation | P::Diffusion | P::Rl => "F22",
        _ => "L6",
    }
}

/// Evidence pointing at a series and a step range.
pub fn series_evidence(s: &Series, a: u64, b: u64) -> Evidence {
    Evidence::file(s.source.clone())
        .steps(a, b)
        .note(format!("tag {}", s.tag))
}

/// Evidence pointing at a whole series, its first logged step to its last.
pub fn whole_series_evidence(s: &Series) -> Evidence {
    let step = |p: Option<&Point>| p.map_or(0, |p| p.step);
    series_evidence(s, step(s.points.first()), step(s.points.last()))
}

/// Compact number formatting: 3 significant digits, scientific when tiny or huge.
pub fn fmt(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{x:.2e}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// The same number squeezed for a chart axis label: at most ~8 characters
/// (`0`, `1.18`, `-1.9e-3`, `NaN`). The one other formatting rule; both live here.
pub fn fmt_label(v: f64) -> String {
    if !v.is_finite() {
        format!("{v}")
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e4 || v.abs() < 1e-2 {
        format!("{v:.1e}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[f64]) -> Vec<Point> {
        v.iter()
            .enumerate()
            .map(|(i, &value)| Point {
                step: i as u64 + 1,
                value,
                wall_time: None,
            })
            .collect()
    }

    #[test]
    fn ema_of_constant_is_constant_and_skips_nan() {
        let e = ema(&pts(&[2.0, f64::NAN, 2.0, 2.0]), 50.0);
        assert!(e.iter().all(|(_, v)| (*v - 2.0).abs() < 1e-12));
        assert_eq!(e.len(), 4);
    }

    #[test]
    fn rolling_mean_windows() {
        let r = rolling_mean(&pts(&[1.0, 2.0, 3.0, 4.0]), 2);
        assert_eq!(r, vec![(2, 1.5), (3, 2.5), (4, 3.5)]);
        assert_eq!(rolling_mean(&pts(&[1.0]), 20), vec![(1, 1.0)]);
        assert!(rolling_mean(&[], 3).is_empty());
    }

    #[test]
    fn iqm_drops_the_outer_quartiles() {
        assert_eq!(iqm(&[1.0, 2.0, 3.0, 100.0]), Some(2.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(iqm(&[]), None);
    }

    #[test]
    fn spread_helpers() {
        assert_eq!(std_dev(&[1.0]), None);
        assert!((std_dev(&[1.0, 3.0]).unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(rel_spread(&[2.0, 1.0, f64::NAN]), Some(0.5));
        assert_eq!(rel_spread(&[0.0, 0.0]), None);
        // Sliding window: 4 events in 200 steps around step 500, even though the run is long.
        let s = [10, 500, 550, 600, 650, 5000];
        assert_eq!(max_in_window(&s, 200), (4, Some(500)));
        assert_eq!(max_in_window(&s, 1), (1, Some(10)));
        assert_eq!(max_in_window(&[], 200), (0, None));
    }

    #[test]
    fn formats_numbers_compactly() {
        assert_eq!(fmt(6.2383), "6.2383");
        assert_eq!(fmt(3.3e-5), "3.30e-5");
        assert_eq!(fmt(28.6959), "28.6959");
        assert_eq!(fmt(0.0), "0");
    }
}
