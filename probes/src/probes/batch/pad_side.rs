//! `pad_side` (L1): the side a batch is padded on against the phase.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

// ---------------------------------------------------------------------------------------
// L1: pad side

/// Padding layout of an attention mask.
#[derive(Default)]
struct PadLayout {
    rows: usize,
    padded: usize,
    left: usize,
    right: usize,
    both: usize,
    middle: usize,
    empty: usize,
    pad_positions: usize,
    positions: usize,
}

impl PadLayout {
    fn of(m: &Ints) -> PadLayout {
        let mut p = PadLayout::default();
        for row in m.rows() {
            p.rows += 1;
            p.positions += row.len();
            let z = row.iter().filter(|&&x| x == 0).count();
            p.pad_positions += z;
            if z == 0 || row.is_empty() {
                continue;
            }
            p.padded += 1;
            if z == row.len() {
                p.empty += 1;
                continue;
            }
            match (row[0] == 0, row[row.len() - 1] == 0) {
                (true, false) => p.left += 1,
                (false, true) => p.right += 1,
                (true, true) => p.both += 1,
                (false, false) => p.middle += 1,
            }
        }
        p
    }

    fn side(&self) -> &'static str {
        match (self.left + self.both > 0, self.right + self.both > 0) {
            (true, false) => "left",
            (false, true) => "right",
            (true, true) => "mixed",
            (false, false) if self.middle > 0 => "inside rows",
            _ => "none",
        }
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "{} of {} rows padded ({} pad positions)",
            self.padded,
            self.rows,
            pct(self.pad_positions as f64 / self.positions.max(1) as f64)
        );
        let mut parts = Vec::new();
        for (n, what) in [
            (self.left, "left"),
            (self.right, "right"),
            (self.both, "both ends"),
            (self.middle, "zeros inside the row"),
            (self.empty, "all-pad"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if !parts.is_empty() {
            s.push_str(&format!(": {}", parts.join(", ")));
        }
        s
    }
}

/// Pads found without an attention mask: runs of the pad id at the row ends.
struct InferredPads {
    /// 1 = real, 0 = pad, shaped like input_ids.
    mask: Ints,
    /// How they were found, for the evidence.
    how: String,
    /// Found as runs of an EOS id (pad = EOS or pad unknown): a real EOS can look like a pad.
    via_eos: bool,
}

/// Pad positions of rows without an attention mask: a run of the pad id at either end of a
/// row (or, when pad == EOS or the pad id is unknown, a run of an EOS id of at least
/// `min_eos_run`, keeping the first EOS of a trailing run as the real end of the text).
fn infer_pads(ids: &Ints, pad: PadId, eos: &[i64], min_eos_run: usize) -> Option<InferredPads> {
    let (cands, via_eos): (Vec<i64>, bool) = match pad.id() {
        Some(p) if !eos.contains(&p) => (vec![p], false),
        Some(p) => (vec![p], true),
        None if !eos.is_empty() => (eos.to_vec(), true),
        None => return None,
    };
    let min_run = if via_eos { min_eos_run.max(1) } else { 1 };
    let mut v = vec![1i64; ids.v.len()];
    let l = ids.row_len().max(1);
    for (r, row) in ids.rows().enumerate() {
        let n = row.len();
        if n == 0 {
            continue;
        }
        let run_of = |it: &mut dyn Iterator<Item = &i64>, first: i64| {
            it.take_while(|&&x| x == first).count()
        };
        let (a, z) = (row[0], row[n - 1]);
        if cands.contains(&a) {
            let k = run_of(&mut row.iter(), a);
            if k == n {
                v[r * l..r * l + n].iter_mut().for_each(|x| *x = 0);
                continue;
            }
            if k >= min_run {
                v[r * l..r * l + k].iter_mut().for_each(|x| *x = 0);
            }
        }
        if cands.contains(&z) {
            let k = run_of(&mut row.iter().rev(), z);
            // With EOS as the pad, the first EOS of the run ends the text.
            let pads = if via_eos { k.saturating_sub(1) } else { k };
            if k >= min_run && pads > 0 {
                v[r * l + n - pads..r * l + n]
                    .iter_mut()
                    .for_each(|x| *x = 0);
            }
        }
    }
    let ids_txt: Vec<String> = cands.iter().map(i64::to_string).collect();
    let how = if via_eos {
        format!(
            "inferred from input_ids (no attention_mask): runs of ≥ {min_run} EOS id {} at the row ends{}",
            ids_txt.join("/"),
            if pad.id().is_some() { " (pad == EOS)" } else { " (pad id unknown)" }
        )
    } else {
        format!(
            "inferred from input_ids (no attention_mask): runs of pad id {} at the row ends",
            ids_txt.join("/")
        )
    };
    Some(InferredPads {
        mask: Ints {
            name: ids.name.clone(),
            shape: ids.shape.clone(),
            v,
        },
        how,
        via_eos,
    })
}
pub(super) const PAD_SIDE: ProbeSpec = ProbeSpec {
    id: "pad_side",
    entries: &["L1"],
    inputs: &["batch:attention_mask", "batch:input_ids", "fact:phase"],
    params: &["min_eos_run"],
    outcomes: &["pass", "wrong_side", "skip"],
    run: pad_side,
};

pub fn pad_side(ctx: &ProbeCtx) -> Vec<Verdict> {
    let min_eos_run = p!(ctx, "L1", "min_eos_run").max(1.0) as usize;
    let cfg = model_config(ctx).map(|c| c.1);
    let pad = PadId::of(ctx, cfg.as_ref());
    let eos = eos_ids(ctx, cfg.as_ref());
    over_batches(
        ctx,
        "L1",
        "no batch carries an attention_mask or input_ids (needed to see where the pads are)",
        |b| {
            let (m, inferred) = match b.ints(PAD_MASKS) {
                Some(Ok(m)) => (m, None),
                Some(Err(e)) => return Some(Verdict::skip("L1", e)),
                None => {
                    let ids = match b.ints(INPUT_IDS)? {
                        Ok(i) => i,
                        Err(e) => return Some(Verdict::skip("L1", e)),
                    };
                    match infer_pads(&ids, pad, &eos, min_eos_run) {
                        Some(inf) => (inf.mask, Some((inf.how, inf.via_eos))),
                        None => return Some(Verdict::skip("L1", "no attention_mask, and no pad or EOS id (config.json or --fact pad_token_id / eos_token_id) to find the pad runs in input_ids").evidence(b.ev(&ids.name))),
                    }
                }
            };
            let lay = PadLayout::of(&m);
            let side = lay.side();
            let mut measured = if side == "none" {
                format!("no padding ({} rows, all full length)", lay.rows)
            } else {
                format!("{side}-padded — {}", lay.describe())
            };
            if let Some((how, _)) = &inferred {
                measured.push_str(&format!(" [{how}]"));
            }
            // Pads seen only as runs of EOS may be real EOS tokens: never more than a warning.
            let via_eos = inferred.as_ref().is_some_and(|i| i.1);
            let fail_or_warn = if via_eos { Status::Warn } else { Status::Fail };
            let ev = match &inferred {
                Some((how, _)) => b.ev(&m.name).note(how.clone()),
                None => b.ev(&m.name),
            };
            let base = |st: Status, out: &str| {
                Verdict::new("L1", st, out)
                    .measured(measured.clone())
                    .evidence(ev.clone())
                    .value("rows", lay.rows as f64)
                    .value("left_rows", (lay.left + lay.both) as f64)
                    .value("right_rows", (lay.right + lay.both) as f64)
                    .value(
                        "pad_frac",
                        lay.pad_positions as f64 / lay.positions.max(1) as f64,
                    )
                    .value("pads_inferred", if inferred.is_some() { 1.0 } else { 0.0 })
            };
            if side == "none" {
                return Some(
                    base(Status::Pass, "pass")
                        .expected("right for sft/pretrain, left for generation/dpo")
                        .message("no padding in this batch: the padding side does not matter here"),
                );
            }
            let Some(ph) = phase(ctx) else {
                // A left-padded batch that carries token labels is a training batch: SFT or
                // pretraining wants right padding. Warn, asking for the phase.
                let token_labels = b.find(LABELS).is_some_and(|l| l.shape == m.shape);
                if token_labels && lay.left + lay.both > 0 {
                    return Some(
                        base(Status::Warn, "wrong_side")
                            .expected("right padding for a training batch (phase not given)")
                            .message(format!("{} of {} padded rows carry their pads at the start of a batch with labels (a training batch): SFT/pretraining collate with right padding — set tokenizer.padding_side = \"right\" (pass --fact phase=… to confirm: left is right only for generation / DPO)", lay.left + lay.both, lay.padded)),
                    );
                }
                return Some(Verdict::skip("L1", "needs fact phase (sft | pretrain | dpo | generation) to know which side is right").measured(measured).evidence(ev));
            };
            let Some(want) = wanted_side(&ph) else {
                return Some(Verdict::skip("L1", format!("phase={ph} not understood (expected sft | pretrain | dpo | generation)")).measured(measured).evidence(ev));
            };
            let wrong = if want == "right" {
                lay.left + lay.both
            } else {
                lay.right + lay.both
            };
            let expected = format!("{want} padding for phase={ph}");
            if wrong == 0 {
                let note = if lay.middle > 0 {
                    " (some rows have zeros inside: packed or custom masks)"
                } else {
                    ""
                };
                return Some(
                    base(Status::Pass, "pass")
                        .expected(expected)
                        .message(format!("padded on the {want}, as phase={ph} needs{note}")),
                );
            }
            let msg = if want == "right" {
                format!("{wrong} of {} padded rows carry their pads at the start, but phase={ph} trains a causal LM with right padding: set tokenizer.padding_side = \"right\" when collating training batches (left only for batched generation / DPO scoring)", lay.padded)
            } else {
                format!("{wrong} of {} padded rows carry their pads at the end, but phase={ph} needs left padding (each row's last real token at the same index for the next decode step): set tokenizer.padding_side = \"left\" before generation / DPO scoring", lay.padded)
            };
            let msg = if via_eos {
                format!("{msg} (pads inferred from runs of EOS at the row ends — no attention_mask in the batch; confirm by decoding one row)")
            } else {
                msg
            };
            Some(
                base(fail_or_warn, "wrong_side")
                    .expected(expected)
                    .message(msg)
                    .value("wrong_rows", wrong as f64),
            )
        },
    )
}
