//! `label_range` (O14, V5): class labels inside [0, C), the void value excluded.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

pub(super) const LABEL_RANGE: ProbeSpec = ProbeSpec {
    id: "label_range",
    entries: &["O14", "V5"],
    inputs: &["batch:labels", "fact:num_classes"],
    params: &["void_label"],
    outcomes: &["pass", "out_of_range", "void_unmasked", "skip"],
    run: label_range,
};

// ---------------------------------------------------------------------------------------
// O14, V5: class-label range and void 255

pub fn label_range(ctx: &ProbeCtx) -> Vec<Verdict> {
    let void = p!(ctx, "O14", "void_label") as i64;
    let cfg = model_config(ctx);
    let c = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    let ign = ignore_index(ctx);
    over_batches(
        ctx,
        "O14",
        "no batch carries class labels (labels beside pixel_values, or without input_ids)",
        |b| {
            let lt = class_labels(ctx, b)?;
            let seg = is_segmentation(b, lt);
            let entry = if seg { "V5" } else { "O14" };
            let labels = match b.read_ints(lt) {
                Ok(l) => l,
                Err(e) => {
                    return Some(Verdict::skip(
                        entry,
                        format!("{e} — the range check applies to integer class indices"),
                    ))
                }
            };
            let ev = b.ev(&labels.name);
            let vals: Vec<i64> = labels.v.iter().copied().filter(|&x| x != ign).collect();
            if vals.is_empty() {
                return Some(
                    Verdict::skip(entry, format!("every label is the ignore index {ign}"))
                        .evidence(ev),
                );
            }
            let void_ignored = ign == void;
            let void_n = if void_ignored {
                0
            } else {
                vals.iter().filter(|&&x| x == void).count()
            };
            let non_void = || vals.iter().copied().filter(|&x| void_ignored || x != void);
            let lo = non_void().min();
            let hi = non_void().max();
            let range = match (lo, hi) {
                (Some(a), Some(b)) => format!("[{a}, {b}]"),
                _ => "only void".into(),
            };
            let mut measured = format!("{} labels in {range}", vals.len());
            if void_n > 0 {
                measured.push_str(&format!(", {void_n} = {void}"));
            }
            let Some(c) = c else {
                return Some(
                    Verdict::skip(
                        entry,
                        "needs fact num_classes (or num_labels / id2label in config.json)",
                    )
                    .measured(measured)
                    .evidence(ev),
                );
            };
            let ci = c as i64;
            measured.push_str(&format!(" vs num_classes {c}"));
            let make = |e: &str, st: Status, out: &str| {
                Verdict::new(e, st, out)
                    .measured(measured.clone())
                    .expected(format!(
                        "0 ≤ label < {c}{}",
                        if seg {
                            format!(", void {void} ignored")
                        } else {
                            String::new()
                        }
                    ))
                    .evidence(ev.clone())
                    .value("num_classes", c as f64)
                    .value("min", lo.unwrap_or(0) as f64)
                    .value("max", hi.unwrap_or(0) as f64)
                    .value("void", void_n as f64)
            };
            // One-hot targets (N, C) of 0/1 for class-index losses.
            if !seg
                && labels.shape.len() == 2
                && labels.row_len() == c as usize
                && c > 1
                && labels
                    .rows()
                    .all(|r| r.iter().all(|&x| x == 0 || x == 1) && r.iter().sum::<i64>() == 1)
            {
                return Some(make("O14", Status::Warn, "out_of_range").message(format!(
                "labels are one-hot {:?}: CrossEntropyLoss reads a (N, C) integer target as multi-target — pass class indices labels.argmax(-1) (long, shape (N,)) or float probabilities",
                labels.shape
            )));
            }
            let neg = vals.iter().filter(|&&x| x < 0).count();
            let void_counts_as_class = void >= ci;
            let over = non_void().filter(|&x| x >= ci).count();
            if neg > 0 {
                return Some(make(entry, Status::Fail, "out_of_range").message(format!("{neg} negative label(s) other than the ignore index {ign}: CrossEntropyLoss asserts t >= 0 (a device-side assert on GPU) — map them to {ign} or a real class")).value("out_of_range", neg as f64));
            }
            if over > 0 {
                let hint = if lo.is_some_and(|l| l >= 1) && hi == Some(ci) {
                    " — labels run 1..C (1-indexed): subtract 1 so classes are 0..C-1".to_string()
                } else if hi == Some(ci) {
                    " — an off-by-one: the largest label equals num_classes".to_string()
                } else {
                    " — raw ids with gaps, or num_labels too small for the dataset: remap labels to 0..C-1 (or enlarge the head)".to_string()
                };
                let void_note = if void_n > 0 {
                    format!("; {void_n} void ({void}) labels as well")
                } else {
                    String::new()
                };
                return Some(make(entry, Status::Fail, "out_of_range").message(format!("{over} label(s) ≥ num_classes {c}{hint}; on GPU this is a device-side assert, on some paths silent corruption{void_note}")).value("out_of_range", over as f64));
            }
            if void_n > 0 && void_counts_as_class {
                return Some(make("V5", Status::Fail, "void_unmasked").message(format!(
                "{void_n} label(s) hold the void value {void}, which is ≥ num_classes {c}: unless it is excluded the loss is out of range / NaN and mIoU is corrupted — set CrossEntropyLoss(ignore_index={void}) in the loss AND mask label != {void} in the metric (or pass --fact ignore_index={void} if already done)"
            )));
            }
            Some(make(entry, Status::Pass, "pass").message(format!(
                "labels within [0, {c}){}",
                if void_ignored {
                    format!(" (void {void} is the declared ignore_index)")
                } else {
                    String::new()
                }
            )))
        },
    )
}
