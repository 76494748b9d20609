//! `packing_positions` (L4): packed rows resetting position_ids at document boundaries.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

pub(super) const PACKING_POSITIONS: ProbeSpec = ProbeSpec {
    id: "packing_positions",
    entries: &["L4"],
    inputs: &[
        "batch:input_ids",
        "batch:position_ids",
        "fact:packing",
        "config:eos_token_id",
        "config:bos_token_id",
    ],
    params: &[],
    outcomes: &["pass", "no_reset", "skip"],
    run: packing_positions,
};

// ---------------------------------------------------------------------------------------
// L4: packed rows and position resets

pub fn packing_positions(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx).map(|c| c.1);
    let eos = eos_ids(ctx, cfg.as_ref());
    // A BOS that is also an EOS (GPT-2's <|endoftext|>) cannot mark a document start.
    let bos = bos_id(ctx, cfg.as_ref()).filter(|b| !eos.contains(b));
    let ids_known = !eos.is_empty() || bos.is_some();
    let packing = ctx.facts.bool("packing");
    over_batches(ctx, "L4", "no batch carries input_ids", |b| {
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("L4", e)),
        };
        let attn = b
            .ints(ATTN)
            .and_then(Result::ok)
            .filter(|a| a.shape == ids.shape);
        let pos = match b.ints(POSITIONS) {
            Some(Ok(p)) if p.v.len() == ids.v.len() => Some(p),
            Some(Ok(p)) => {
                return Some(Verdict::skip(
                    "L4",
                    format!(
                        "position_ids shape {:?} differs from input_ids {:?}",
                        p.shape, ids.shape
                    ),
                ))
            }
            Some(Err(e)) => return Some(Verdict::skip("L4", e)),
            None => None,
        };
        let l = ids.row_len().max(1);
        // Per row, inside its real tokens: strong document starts (an EOS immediately followed
        // by a BOS), weak ones (an EOS followed by another token — every chat turn ends with
        // one: Llama-3 <|eot_id|>, Qwen <|im_end|> — or a BOS alone), and position resets.
        let mut strong: Vec<Vec<usize>> = Vec::new();
        let mut weak: Vec<Vec<usize>> = Vec::new();
        let mut resets = 0usize;
        let mut rows_reset = 0usize;
        for (r, row) in ids.rows().enumerate() {
            let mask = attn.as_ref().map(|a| &a.v[r * l..r * l + row.len()]);
            let real = |i: usize| mask.is_none_or(|m| m[i] != 0);
            let first = (0..row.len()).find(|&i| real(i));
            let last = (0..row.len()).rev().find(|&i| real(i));
            let (mut s, mut w) = (Vec::new(), Vec::new());
            if let (Some(first), Some(last)) = (first, last) {
                for i in first + 1..=last {
                    if !real(i) {
                        continue;
                    }
                    let after_eos = real(i - 1) && eos.contains(&row[i - 1]);
                    let is_bos = Some(row[i]) == bos;
                    if after_eos && is_bos {
                        s.push(i);
                    } else if after_eos || is_bos {
                        w.push(i);
                    }
                }
                if let Some(p) = &pos {
                    let prow = &p.v[r * l..r * l + row.len()];
                    let n = (first + 1..=last)
                        .filter(|&i| real(i) && real(i - 1))
                        .filter(|&i| prow[i] == 0 || prow[i] < prow[i - 1])
                        .count();
                    resets += n;
                    rows_reset += (n > 0) as usize;
                }
            }
            strong.push(s);
            weak.push(w);
        }
        let n_strong: usize = strong.iter().map(Vec::len).sum();
        let n_weak: usize = weak.iter().map(Vec::len).sum();
        let max_docs = strong
            .iter()
            .zip(&weak)
            .map(|(s, w)| s.len() + w.len() + 1)
            .max()
            .unwrap_or(1);
        let mut ev = vec![b.ev(&ids.name)];
        if let Some(p) = &pos {
            ev.push(b.ev(&p.name));
        }
        let seen = format!(
            "{n_strong} EOS→BOS boundaries, {n_weak} other EOS/BOS inside rows{}",
            if pos.is_some() {
                format!("; {resets} position_ids resets in {rows_reset} rows")
            } else {
                "; no position_ids".into()
            }
        );
        let make = |st: Status, out: &str, measured: String| {
            let mut v = Verdict::new("L4", st, out)
                .measured(measured)
                .value("max_docs_per_row", max_docs as f64)
                .value("boundaries", n_strong as f64)
                .value("weak_boundaries", n_weak as f64)
                .value("resets", resets as f64);
            for e in &ev {
                v = v.evidence(e.clone());
            }
            v
        };
        let (packed, why) = match packing {
            Some(true) => (true, "fact packing=true".to_string()),
            Some(false) => (false, "fact packing=false".to_string()),
            None if resets > 0 => (
                true,
                format!("inferred: position_ids restart inside {rows_reset} row(s)"),
            ),
            None if n_strong > 0 => (
                true,
                format!("inferred: {n_strong} EOS→BOS document boundaries inside rows"),
            ),
            None if n_weak > 0 || !ids_known => {
                let what = if ids_known {
                    format!("{n_weak} EOS/BOS token(s) inside rows but no EOS→BOS boundary and no position reset: multi-turn chat rows (every turn ends with an EOS such as <|eot_id|> / <|im_end|>) look the same as documents packed without BOS")
                } else {
                    "no EOS/BOS id known (config.json or --fact eos_token_id) and no position reset to see document boundaries".to_string()
                };
                return Some(
                    Verdict::skip("L4", format!("cannot tell whether rows are packed: {what} — pass --fact packing=true|false"))
                        .measured(seen)
                        .evidence(ev[0].clone()),
                );
            }
            None => (false, "no EOS or BOS inside any row".to_string()),
        };
        if !packed {
            return Some(
                make(Status::Pass, "pass", format!("not packed ({why}); {seen}"))
                    .expected("position_ids reset at each document start when packing")
                    .message("rows hold one document each: nothing to reset"),
            );
        }
        let expected = "position_ids drop to 0 at every document start".to_string();
        let declared = packing == Some(true);
        let Some(p) = pos else {
            let (st, chat) = if declared {
                (Status::Fail, "")
            } else {
                (Status::Warn, " (if these are single multi-turn conversations — Llama-2-chat puts </s><s> between turns — pass --fact packing=false)")
            };
            return Some(make(st, "no_reset", format!("packed ({why}); {seen}")).expected(expected).message(format!(
                "packed rows without position_ids: positions keep counting across documents and a plain causal mask lets each document attend to its neighbours — use DataCollatorWithFlattening (position_ids restart at 0 per example) with attn_implementation=\"flash_attention_2\" (varlen), or disable packing{chat}",
            )));
        };
        let reset_at = |r: usize, s: usize| {
            let prow = &p.v[r * l..];
            s > 0 && s < ids.row_len() && (prow[s] == 0 || prow[s] < prow[s - 1])
        };
        let missing: Vec<(usize, usize)> = strong
            .iter()
            .enumerate()
            .flat_map(|(r, s)| s.iter().map(move |&s| (r, s)))
            .filter(|&(r, s)| !reset_at(r, s))
            .collect();
        if resets > 0 {
            let note = if missing.is_empty() {
                String::new()
            } else {
                format!(" ({} EOS→BOS boundaries inside one segment: turns of one example, e.g. Llama-2-chat's </s><s> — if they separate documents, those leak)", missing.len())
            };
            return Some(make(Status::Pass, "pass", format!("packed ({why}); {seen}")).expected(expected).message(format!("position_ids restart at each packed document{note} — make sure the attention kernel uses them (flash_attention_2 varlen)")).value("missing_resets", missing.len() as f64));
        }
        // Positions never restart inside a row.
        let first = missing.first().copied().or_else(|| {
            weak.iter()
                .enumerate()
                .find_map(|(r, w)| w.first().map(|&s| (r, s)))
                .filter(|_| declared)
        });
        if declared && first.is_none() && ids_known {
            return Some(make(Status::Pass, "pass", format!("packed ({why}); {seen}")).expected(expected).message("packing declared, but no row of this batch holds a document boundary: nothing to reset here"));
        }
        let at = first
            .map(|(r, s)| format!(" (first boundary at row {r}, position {s})"))
            .unwrap_or_default();
        let chat = if declared {
            ""
        } else {
            " (if each row is one multi-turn conversation — Llama-2-chat puts </s><s> between turns — pass --fact packing=false)"
        };
        Some(make(Status::Fail, "no_reset", format!("packed ({why}); {seen}")).expected(expected).message(format!(
            "position_ids never restart inside a row, so they keep counting across packed documents{at}: documents contaminate each other — emit position_ids that restart at 0 per document (DataCollatorWithFlattening) and use an attention kernel that honours them (flash_attention_2 varlen){chat}"
        )).value("missing_resets", if missing.is_empty() && declared { n_weak } else { missing.len() } as f64))
    })
}
