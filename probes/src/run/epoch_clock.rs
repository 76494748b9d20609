//! Series a TensorBoard file indexes by epoch beside others it indexes by step, told apart by
//! the clock. Ignite's evaluator handlers log `validation/loss` at step = the trainer's epoch
//! (`global_step_from_engine`), a hand-written loop calls `add_scalar("val/loss", v, epoch)`,
//! while the batch loss and the LR in the same file count iterations; Tianshou logs its
//! `update/*` losses at the update count beside `training/*` at the env step. Read as steps,
//! those points sit at the run's first steps and are compared with the first iterations.
//!
//! The rule: in one source, a series indexed 1..E (or 0..E−1) whose every point was written
//! while the longest series of that source stood inside block e of k steps ((e − 1)·k to e·k,
//! e = the point's index counted from 1, k ≥ 2 the same for every point), each at the same
//! place in its block (within one logging interval of the longest series), counts blocks of k
//! steps; its points move to that place on the step axis (an epoch's evaluation to the step
//! the epoch ends). A series written at its own steps (HF's eval every 500 steps, a debug
//! metric logged for the first steps only) fits no k ≥ 2 and stays.

use crate::metrics::{Series, Unit};

/// Points the long series needs before its clock is trusted.
const MIN_CLOCK_POINTS: usize = 20;

/// Move epoch-indexed series (by the rule above) to the step their epoch ends.
pub(super) fn epochs_by_clock(series: &mut [&mut Series]) {
    let mut sources: Vec<std::path::PathBuf> = series.iter().map(|s| s.source.clone()).collect();
    sources.sort();
    sources.dedup();
    for src in sources {
        let Some(clock) = longest(series, &src) else {
            continue;
        };
        let end = clock.steps.last().copied().unwrap_or(0);
        for s in series.iter_mut().filter(|s| {
            s.source == src
                && s.unit == Unit::Step
                && s.len() >= 2
                && s.last().is_some_and(|p| p.step.saturating_mul(2) <= end)
        }) {
            if let Some((k, phase)) = steps_per_epoch(s, &clock) {
                let from_zero = s.first().is_some_and(|p| p.step == 0);
                for p in &mut s.points {
                    let e = p.step + u64::from(from_zero);
                    p.step = (e - 1).saturating_mul(k).saturating_add(phase);
                }
            }
        }
    }
}

/// The longest step series of a source with a clock: its steps, their wall times (written in
/// order: a clock that goes back is not trusted), and its median logging interval.
struct Clock {
    steps: Vec<u64>,
    times: Vec<f64>,
    interval: u64,
}

fn longest(series: &[&mut Series], src: &std::path::Path) -> Option<Clock> {
    let s = series
        .iter()
        .filter(|s| s.source == src && s.unit == Unit::Step)
        .max_by_key(|s| (s.last().map(|p| p.step), s.len()))?;
    if s.len() < MIN_CLOCK_POINTS {
        return None;
    }
    let times: Vec<f64> = s
        .points
        .iter()
        .map(|p| p.wall_time)
        .collect::<Option<_>>()?;
    if times.windows(2).any(|w| w[1] < w[0]) {
        return None;
    }
    let steps: Vec<u64> = s.points.iter().map(|p| p.step).collect();
    let interval = s.interval().unwrap_or(1);
    Some(Clock {
        steps,
        times,
        interval,
    })
}

/// Where the points of `s` belong on the clock, when they count blocks of k steps (see the
/// module doc): `(k, phase)`, point e (counted from 1) sitting at step (e − 1)·k + phase.
/// Each point was written while the clock stood at m, somewhere in its block: (e − 1)·k ≤ m
/// ≤ e·k, give or take one logging interval of the clock. Every point must sit at the same
/// place in its block (Ignite's evaluation right after a block's last iteration, Tianshou's
/// update right before its block's collection), within one interval.
fn steps_per_epoch(s: &Series, clock: &Clock) -> Option<(u64, u64)> {
    let from_zero = s.first().is_some_and(|p| p.step == 0);
    // Consecutive epochs 1..E (or 0..E−1): anything else indexes something else.
    if s.points.windows(2).any(|w| w[1].step != w[0].step + 1) {
        return None;
    }
    // The clock's step when `t` was written (0 before its first point).
    let reached = |t: f64| -> u64 {
        let i = clock.times.partition_point(|x| *x <= t);
        i.checked_sub(1)
            .and_then(|i| clock.steps.get(i))
            .copied()
            .unwrap_or(0)
    };
    let mapped: Vec<(u64, u64)> = s
        .points
        .iter()
        .map(|p| Some((p.step + u64::from(from_zero), reached(p.wall_time?))))
        .collect::<Option<_>>()?;
    let gap = clock.interval as f64;
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    for &(e, m) in &mapped {
        if e == 0 {
            return None;
        }
        lo = lo.max((m as f64 - gap) / e as f64);
        if e >= 2 {
            hi = hi.min((m as f64 + gap) / (e - 1) as f64);
        }
    }
    // The clock's own interval when it fits (Tianshou: one collection of 1000 env steps per
    // update), else the smallest whole k the points allow.
    let k = if (lo..=hi).contains(&gap) && clock.interval >= 2 {
        clock.interval
    } else {
        lo.max(0.0).ceil() as u64
    };
    if k < 2 || k as f64 > hi {
        return None;
    }
    let phases: Vec<i64> = mapped
        .iter()
        .map(|&(e, m)| m as i64 - ((e - 1) * k) as i64)
        .collect();
    let (min, max) = (phases.iter().min()?, phases.iter().max()?);
    if max - min > clock.interval as i64 + 1
        || *min < -(gap as i64)
        || *max > (k + clock.interval) as i64
    {
        return None;
    }
    let mut sorted = phases.clone();
    sorted.sort_unstable();
    let phase = sorted[sorted.len() / 2].clamp(0, k as i64) as u64;
    Some((k, phase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Point;
    use std::path::Path;

    fn by_clock(all: &mut [Series]) {
        let mut refs: Vec<&mut Series> = all.iter_mut().collect();
        epochs_by_clock(&mut refs);
    }

    fn series(tag: &str, pts: &[(u64, f64)]) -> Series {
        let points = pts
            .iter()
            .map(|&(step, t)| Point {
                step,
                value: 1.0,
                wall_time: Some(t),
            })
            .collect();
        Series::from_points(tag, Path::new("run/tb"), points)
    }

    /// Iterations 1..=n written one second apart, with `eval` seconds of validation after
    /// every `k` iterations.
    fn batches(n: u64, k: u64, eval: f64) -> Series {
        let pts: Vec<(u64, f64)> = (1..=n)
            .map(|i| (i, i as f64 + ((i - 1) / k) as f64 * eval))
            .collect();
        series("training/batchloss", &pts)
    }

    #[test]
    fn points_written_at_each_epochs_end_move_to_its_last_step() {
        // 12 epochs of 63 iterations; validation written just after each epoch's last batch.
        let clock = batches(756, 63, 5.0);
        let end = |e: u64| (e * 63) as f64 + (e - 1) as f64 * 5.0 + 2.0;
        let val = series(
            "validation/loss",
            &(1..=12).map(|e| (e, end(e))).collect::<Vec<_>>(),
        );
        let mut all = vec![clock, val];
        by_clock(&mut all);
        assert_eq!(all[1].steps(), (1..=12).map(|e| e * 63).collect::<Vec<_>>());
        // Counted from 0, the same epochs.
        let clock = batches(756, 63, 5.0);
        let val = series(
            "val/loss",
            &(0..12).map(|e| (e, end(e + 1))).collect::<Vec<_>>(),
        );
        let mut all = vec![clock, val];
        by_clock(&mut all);
        assert_eq!(all[1].steps(), (1..=12).map(|e| e * 63).collect::<Vec<_>>());
    }

    #[test]
    fn updates_written_before_each_collection_sit_at_its_start() {
        // Tianshou: env steps logged every 1000 (one collection), the update count 1..75
        // written just before each collection's stats.
        let clock = series(
            "training/returns",
            &(1..=75)
                .map(|i| (i * 1000, i as f64 + 0.1))
                .collect::<Vec<_>>(),
        );
        let upd = series(
            "update/loss/mean",
            &(1..=75).map(|i| (i, i as f64)).collect::<Vec<_>>(),
        );
        let mut all = vec![clock, upd];
        by_clock(&mut all);
        assert_eq!(
            all[1].steps(),
            (0..75).map(|i| i * 1000).collect::<Vec<_>>()
        );
    }

    #[test]
    fn series_written_at_their_own_steps_stay() {
        // HF-like: eval every 100 steps at step 100, 200, …; a metric logged at the first
        // five steps only; a per-epoch series written at the wrong times (not a clock match).
        let clock = batches(1000, 1000, 0.0);
        let eval = series(
            "eval/loss",
            &(1..=10)
                .map(|i| (i * 100, (i * 100) as f64 + 0.5))
                .collect::<Vec<_>>(),
        );
        let first = series(
            "debug/x",
            &(1..=5).map(|i| (i, i as f64 + 0.1)).collect::<Vec<_>>(),
        );
        let odd = series("val/acc", &[(1, 90.0), (2, 500.0), (3, 600.0)]);
        let mut all = vec![clock, eval, first, odd];
        by_clock(&mut all);
        assert_eq!(
            all[1].steps(),
            (1..=10).map(|i| i * 100).collect::<Vec<_>>()
        );
        assert_eq!(all[2].steps(), vec![1, 2, 3, 4, 5]);
        assert_eq!(all[3].steps(), vec![1, 2, 3]);
    }
}
