//! In-batch contrastive losses (sentence-transformers MNRL, InfoNCE, CLIP, NT-Xent): a
//! cross-entropy over the batch's K candidates, so chance is ln K. Reads what the run's facts,
//! model cards and configs say of the loss (name, scale or temperature, batch size, columns)
//! for `init_loss` and `loss_floor`.

use crate::probe::ProbeCtx;

/// Loss names of in-batch contrastive cross-entropies (lower case, as written in model cards,
/// configs or `--fact loss=…`), and whether each view's candidates are the other 2B − 1 views
/// (NT-Xent) rather than the B in-batch documents (per document column).
const CONTRASTIVE_LOSSES: &[(&str, bool)] = &[
    ("cachedmultiplenegativessymmetricrankingloss", false),
    ("multiplenegativessymmetricrankingloss", false),
    ("cachedmultiplenegativesrankingloss", false),
    ("multiplenegativesrankingloss", false),
    ("contrastivetensionlossinbatchnegatives", false),
    ("cachedmnrl", false),
    ("mnrl", false),
    ("infonce", false),
    ("info_nce", false),
    ("info-nce", false),
    ("cliploss", false),
    ("clip_loss", false),
    ("in-batch negatives", false),
    ("in_batch_negatives", false),
    ("ntxentloss", true),
    ("nt_xent", true),
    ("nt-xent", true),
    ("ntxent", true),
];

/// A run whose loss is an in-batch contrastive cross-entropy (sentence-transformers'
/// MultipleNegativesRankingLoss, InfoNCE, CLIP, NT-Xent …): each anchor's positive is picked
/// among K in-batch candidates, so an untrained model (or one that cannot separate them)
/// sits at ln K.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Contrastive {
    /// The loss as named.
    pub(crate) loss: String,
    /// Where it was named (a file, or `fact loss`).
    pub(crate) from: String,
    /// Per-device batch size.
    pub(crate) batch: u64,
    /// Candidates each anchor is scored against (B per document column; 2B − 1 for NT-Xent).
    pub(crate) candidates: u64,
    /// Logit scale (1 / temperature), when stated (or the framework's default).
    pub(crate) scale: Option<f64>,
    /// Similarity bounded in [−1, 1] (cosine), so the scale bounds the logits.
    pub(crate) cosine: bool,
    /// The base model a sentence-transformers card says it was fine-tuned from.
    pub(crate) base: Option<String>,
}

impl Contrastive {
    pub(crate) fn ln_k(&self) -> f64 {
        (self.candidates as f64).ln()
    }
    /// What the logits allow at best with cosine similarity: positive at s, the K − 1
    /// negatives spread as a simplex (cos = −1/(K−1)): ln(1 + (K−1)·e^(−s·K/(K−1))).
    pub(crate) fn scale_floor(&self) -> Option<f64> {
        let s = self.scale.filter(|s| *s > 0.0 && self.cosine)?;
        let k = self.candidates as f64;
        (k > 1.0).then(|| (1.0 + (k - 1.0) * (-s * k / (k - 1.0)).exp()).ln())
    }
    pub(crate) fn label(&self) -> String {
        let per = if self.candidates == self.batch {
            format!("batch {}", self.batch)
        } else {
            format!("{} candidates at batch {}", self.candidates, self.batch)
        };
        format!(
            "ln K = ln {} ({} in-batch candidates, {per})",
            self.candidates, self.loss
        )
    }
}

/// The char boundary at or before (`up` false) / after (`up` true) byte `i`, within `s`.
fn boundary(s: &str, i: usize, up: bool) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        if up {
            i += 1;
        } else {
            i -= 1;
        }
    }
    i
}

/// Whether `text[at..at + len]` is a whole word (no letter or digit on either side).
fn whole_word(text: &str, at: usize, len: usize) -> bool {
    let b = text.as_bytes();
    let before = at == 0 || !b[at - 1].is_ascii_alphanumeric();
    let after = at + len >= b.len() || !b[at + len].is_ascii_alphanumeric();
    before && after
}

/// The number after `key` (a whole word, then `"`, `'`, `:`, `=`, `` ` `` or spaces) within
/// `text`.
fn number_after(text: &str, key: &str) -> Option<f64> {
    let mut from = 0;
    while let Some(i) = text[from..].find(key).map(|i| i + from) {
        from = i + key.len();
        let pre_ok = i == 0 || !text.as_bytes()[i - 1].is_ascii_alphanumeric();
        let rest = text[from..].trim_start_matches(['"', '\'', '`', ':', '=', ' ', '\t']);
        let sep = text[from..].len() != rest.len();
        let num: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
            .collect();
        if let (true, true, Ok(v)) = (pre_ok, sep, num.parse::<f64>()) {
            if v.is_finite() {
                return Some(v);
            }
        }
    }
    None
}

/// What a model card or config text says of an in-batch contrastive loss.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CardLoss {
    pub(crate) loss: String,
    /// NT-Xent: each view's candidates are the other 2B − 1 views.
    pub(crate) ntxent: bool,
    pub(crate) scale: Option<f64>,
    pub(crate) cosine: Option<bool>,
    pub(crate) batch: Option<u64>,
    /// Candidate columns (document columns after the anchor).
    pub(crate) columns: Option<u64>,
    pub(crate) base: Option<String>,
}

/// Reads what a model card or config text says of an in-batch contrastive loss: the name (and
/// whether it is NT-Xent), the scale, the similarity, the batch size, the document columns
/// and the base model. `None` when it names none.
pub(crate) fn parse_contrastive(text: &str) -> Option<CardLoss> {
    let low = text.to_ascii_lowercase();
    // Every place the first loss named is named (a card tags it, then details its parameters).
    let (hits, name, ntxent) = CONTRASTIVE_LOSSES.iter().find_map(|(n, nt)| {
        let mut hits = Vec::new();
        let mut from = 0;
        while let Some(i) = low[from..].find(n).map(|i| i + from) {
            from = i + n.len();
            // A name without "loss" in it must stand near the word loss.
            let near = |w: &str| {
                let a = boundary(&low, i.saturating_sub(40), false);
                let b = boundary(&low, i + n.len() + 40, true);
                low[a..b].contains(w)
            };
            if whole_word(&low, i, n.len()) && (n.contains("loss") || near("loss")) {
                hits.push(i);
            }
        }
        (!hits.is_empty()).then_some((hits, *n, *nt))
    })?;
    // The loss's parameters follow its name (a card's JSON block, a config's section).
    let window = |at: usize| &low[at..boundary(&low, at + 800, true)];
    let st_family = name.contains("multiplenegatives")
        || name.contains("mnrl")
        || name.contains("contrastivetension");
    let scale_in = |win: &str| {
        number_after(win, "logit_scale")
            .or_else(|| number_after(win, "scale"))
            .or_else(|| {
                number_after(win, "temperature")
                    .or_else(|| number_after(win, "tau"))
                    .filter(|t| *t > 0.0)
                    .map(|t| 1.0 / t)
            })
    };
    let (at, scale) = hits
        .iter()
        .find_map(|&i| scale_in(window(i)).map(|sc| (i, Some(sc))))
        .unwrap_or((hits[hits.len() - 1], st_family.then_some(20.0)));
    let win = window(at);
    let shown = text.get(at..at + name.len()).unwrap_or(name).to_string();
    let cosine = if win.contains("dot_score") || win.contains("dot_product") {
        Some(false)
    } else if win.contains("cos") || st_family {
        Some(true)
    } else {
        None
    };
    let batch = [
        "per_device_train_batch_size",
        "train_batch_size",
        "batch_size",
    ]
    .iter()
    .find_map(|k| number_after(&low, k))
    .filter(|b| *b >= 1.0)
    .map(|b| b as u64);
    // sentence-transformers: "* Columns: <code>anchor</code>, <code>positive</code>, and
    // <code>negative</code>": every column after the anchor is a candidate set (a label or
    // score column is not).
    let columns = low.find("columns:").and_then(|i| {
        let line = low[i..].lines().next().unwrap_or("");
        let n = line
            .split("<code>")
            .skip(1)
            .filter_map(|c| c.split("</code>").next())
            .filter(|c| !matches!(c.trim(), "label" | "labels" | "score" | "scores"))
            .count();
        (n >= 2).then_some(n as u64 - 1)
    });
    let base = text.find("finetuned from [").and_then(|i| {
        let rest = &text[i + "finetuned from [".len()..];
        let b = rest.split(']').next()?.trim();
        (!b.is_empty() && b != "None" && b != "Unknown" && b.len() < 200).then(|| b.to_string())
    });
    Some(CardLoss {
        loss: shown,
        ntxent,
        scale,
        cosine,
        batch,
        columns,
        base,
    })
}

/// The run's in-batch contrastive loss, if its facts (`--fact loss=…`) or a model card /
/// config it carries name one, with the batch size it is scored over.
pub(crate) fn contrastive(ctx: &ProbeCtx) -> Option<Contrastive> {
    use crate::run::ArtifactKind;
    let mut found = ctx.facts.get("loss").and_then(|l| {
        parse_contrastive(&format!("loss: {l}")).map(|p| (p, "fact loss".to_string()))
    });
    if found.is_none() {
        let texty = |a: &&crate::run::Artifact| {
            let name = a
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let ext_ok = [".md", ".json", ".yaml", ".yml", ".toml", ".cfg"]
                .iter()
                .any(|e| name.ends_with(e));
            let not_vocab = !(name.starts_with("tokenizer")
                || name.starts_with("vocab")
                || name.starts_with("special_tokens")
                || name.starts_with("merges")
                || name.starts_with("added_tokens"));
            matches!(a.kind, ArtifactKind::Other | ArtifactKind::HParams)
                && ext_ok
                && not_vocab
                && a.bytes <= 256 * 1024
        };
        found = ctx.run.artifacts.iter().filter(texty).find_map(|a| {
            let bytes = crate::limits::read_capped(&a.path, 256 * 1024).ok()?;
            let p = parse_contrastive(&String::from_utf8_lossy(&bytes))?;
            Some((p, a.path.display().to_string()))
        });
    }
    let (
        CardLoss {
            loss,
            ntxent,
            scale,
            cosine,
            batch: card_batch,
            columns,
            base,
        },
        from,
    ) = found?;
    let batch = [
        "train_batch_size",
        "per_device_train_batch_size",
        "batch_size",
    ]
    .iter()
    .find_map(|k| ctx.facts.u64(k))
    .filter(|b| *b >= 1)
    .or(card_batch)?;
    let scale = ctx
        .facts
        .f64("contrastive_scale")
        .or_else(|| {
            ctx.facts
                .f64("temperature")
                .filter(|t| *t > 0.0)
                .map(|t| 1.0 / t)
        })
        .or(scale);
    let candidates = if ntxent {
        (2 * batch).saturating_sub(1).max(1)
    } else {
        batch * columns.unwrap_or(1).max(1)
    };
    Some(Contrastive {
        loss,
        from,
        batch,
        candidates,
        scale,
        cosine: cosine.unwrap_or(false),
        base,
    })
}

#[cfg(test)]
mod contrastive_tests {
    use super::*;
    use crate::probe::Status;
    use crate::probes::metric::init_loss::init_loss;
    use crate::probes::metric::tests::{ask, run_with, thresholds};

    const CARD: &str = "---\ntags:\n- sentence-transformers\n- loss:MultipleNegativesRankingLoss\n---\nThis is a [sentence-transformers](https://www.SBERT.net) model trained.\n* Columns: <code>anchor</code>, <code>positive</code>, and <code>negative</code>\n* Loss: [<code>MultipleNegativesRankingLoss</code>](https://sbert.net) with these parameters:\n  ```json\n  {\n      \"scale\": 1.0,\n      \"similarity_fct\": \"cos_sim\"\n  }\n  ```\n- `per_device_train_batch_size`: 32\n";

    #[test]
    fn a_sentence_transformers_card_names_loss_scale_batch_and_columns() {
        let c = parse_contrastive(CARD).unwrap();
        assert_eq!(c.loss, "MultipleNegativesRankingLoss");
        assert_eq!(
            (c.scale, c.cosine, c.batch, c.columns, c.base.as_deref()),
            (Some(1.0), Some(true), Some(32), Some(2), None)
        );
        // The default scale when the card states none; a base model it was fine-tuned from.
        let c = parse_contrastive(
            "loss:CachedMultipleNegativesRankingLoss\nmodel finetuned from [bert-base](x)",
        )
        .unwrap();
        assert_eq!(
            (c.scale, c.base.as_deref()),
            (Some(20.0), Some("bert-base"))
        );
        // InfoNCE with a temperature; a pairwise ContrastiveLoss is not in-batch.
        let c = parse_contrastive("loss: infonce\ntemperature: 0.05").unwrap();
        assert!((c.scale.unwrap() - 20.0).abs() < 1e-9);
        assert!(parse_contrastive("loss: ContrastiveLoss (margin 0.5)").is_none());
        assert!(parse_contrastive("we use mnrl-like tricks elsewhere").is_none());
    }

    #[test]
    fn init_loss_of_a_contrastive_run_is_judged_against_ln_batch() {
        let pts = |v: f64| vec![(1u64, v), (2, v - 0.01), (3, v - 0.02)];
        let facts = [
            "loss=MultipleNegativesRankingLoss",
            "train_batch_size=32",
            "vocab_size=125",
        ];
        // At ln 32 = 3.47: an untrained contrastive model (ln 125 = 4.83 would call it low).
        let v = ask(
            init_loss,
            &run_with(&[("loss", pts(3.48))]),
            &facts,
            thresholds("init_loss"),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert!((v.values["ln_v"] - 32f64.ln()).abs() < 1e-9);
        // A user-given class count wins.
        let v = ask(
            init_loss,
            &run_with(&[("loss", pts(3.48))]),
            &[
                "loss=MultipleNegativesRankingLoss",
                "train_batch_size=32",
                "num_classes=10",
            ],
            thresholds("init_loss"),
        );
        assert!((v.values["ln_v"] - 10f64.ln()).abs() < 1e-9, "{v:?}");
        // No batch size: no chance level to compare with (and the vocabulary is the encoder's).
        let v = ask(
            init_loss,
            &run_with(&[("loss", pts(3.48))]),
            &["loss=InfoNCE"],
            thresholds("init_loss"),
        );
        assert_eq!(v.status, Status::Skip, "{v:?}");
    }
}
