//! `init_weight_stats` (S5.1): init weights' std against fan-in expectations, mean near 0.

use std::collections::HashMap;

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::CheckpointDir;
use crate::tensors::{pass, TensorInfo};

use crate::probes::checkpoint::model::*;
use crate::probes::util::*;

// =======================================================================================
// S5.1 — init weight statistics
// =======================================================================================

/// Expected init stds for a weight of this shape: `floor` (0.02, the transformers convention),
/// PyTorch's default kaiming_uniform(a=√5) (1/√(3·fan_in)), LeCun √(1/fan_in), Kaiming
/// √(2/fan_in), Xavier √(2/(fan_in+fan_out)) — over both fan-in conventions of a 2-D weight
/// (nn.Linear (out, in), GPT-2 Conv1D (in, out)).
/// Returns (largest expectation, largest Kaiming).
fn expected_std(shape: &[usize], floor: f64) -> Option<(f64, f64)> {
    if shape.len() < 2 {
        return None;
    }
    let fans: Vec<(f64, f64)> = if shape.len() == 2 {
        vec![
            (shape[1] as f64, shape[0] as f64),
            (shape[0] as f64, shape[1] as f64),
        ]
    } else {
        let rf: f64 = shape[2..].iter().map(|&d| d as f64).product();
        vec![(shape[1] as f64 * rf, shape[0] as f64 * rf)]
    };
    let mut best = floor;
    let mut kaiming = 0.0f64;
    for (fi, fo) in fans {
        if fi < 1.0 {
            continue;
        }
        let k = (2.0 / fi).sqrt();
        kaiming = kaiming.max(k);
        for e in [
            1.0 / (3.0 * fi).sqrt(),
            (1.0 / fi).sqrt(),
            k,
            (2.0 / (fi + fo)).sqrt(),
        ] {
            best = best.max(e);
        }
    }
    (kaiming > 0.0).then_some((best, kaiming))
}

/// An embedding-like tensor. These follow their own init conventions — 0.02 (GPT, BERT, ViT),
/// N(0,1) (nn.Embedding's default, torch.randn position/cls tokens in many ViTs), d^-0.5, fixed
/// sin-cos tables — not fan-in ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmbedKind {
    /// A token lookup table [V, d] (what a tied output head shares).
    Token,
    /// Positions, token types, cls / dist / mask / register tokens.
    Other,
}

/// Module names of output heads (never an embedding, even when shaped like one).
const HEAD_MODULES: &[&str] = &[
    "lm_head",
    "output",
    "embed_out",
    "head",
    "classifier",
    "score",
    "proj_out",
    "decoder",
];

/// What kind of embedding `name` is, from its name (`wte`, `wpe`, `embed_tokens`,
/// `word_embeddings`, `position_embeddings`, `tok_embeddings`, `embed_positions`, `shared`,
/// `pos_embed`, `cls_token`, `register_tokens` …) and shape; a 2-D `weight` with `vocab` rows
/// counts as a token table too. Projections inside embedding blocks (`patch_embed.proj`,
/// `time_emb_proj`) are weight matrices, not embeddings.
fn embedding_kind(name: &str, shape: &[usize], vocab: Option<u64>) -> Option<EmbedKind> {
    if shape.is_empty() {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('.').collect();
    let last = *parts.last()?;
    let positional = |s: &str| {
        s.contains("pos") || s == "wpe" || s.contains("token_type") || s.contains("segment")
    };
    let embed_word = |s: &str| s.contains("emb") || matches!(s, "wte" | "wpe" | "shared");
    let layer_word = |s: &str| {
        [
            "proj", "linear", "fc", "mlp", "conv", "norm", "dense", "head",
        ]
        .iter()
        .any(|w| s.contains(w))
    };
    let vocab_rows = shape.len() == 2 && vocab.is_some_and(|v| v == shape[0] as u64);
    // A parameter that is the tensor itself: `pos_embed`, `cls_token`, `register_tokens`.
    if last != "weight" && last != "bias" {
        let token_param = last.ends_with("_token") || last.ends_with("_tokens");
        if (embed_word(last) || token_param) && !layer_word(last) {
            return Some(if vocab_rows && !positional(last) {
                EmbedKind::Token
            } else {
                EmbedKind::Other
            });
        }
        return None;
    }
    if last != "weight" || shape.len() != 2 || parts.len() < 2 {
        return None;
    }
    let owner = parts[parts.len() - 2];
    if HEAD_MODULES.contains(&owner) || layer_word(owner) {
        return None;
    }
    if embed_word(owner) {
        return Some(if positional(owner) {
            EmbedKind::Other
        } else {
            EmbedKind::Token
        });
    }
    // A position table named for what it holds (`pos`, `pos_emb`, `position`): nn.Embedding's
    // own N(0, 1) init is an embedding's, not a weight matrix gone wrong.
    let position_owner = owner == "pos"
        || owner.starts_with("pos_")
        || owner.ends_with("_pos")
        || owner.contains("position");
    if position_owner {
        return Some(EmbedKind::Other);
    }
    vocab_rows.then_some(EmbedKind::Token)
}

/// The output head saved as a byte-identical copy of the token table `name` (a tied head that
/// the save kept under both names), if any.
fn tied_head_copy(m: &Model, name: &str, info: &TensorInfo) -> Option<String> {
    m.infos()
        .filter(|(n, i)| {
            *n != name
                && last_component(n) == "weight"
                && HEAD_MODULES.contains(&last_component(module_of(n)))
                && i.shape == info.shape
        })
        .find(|(hn, _)| {
            // Byte-identical tensors have identical statistics: when both are known already
            // and differ, there is nothing to compare.
            let known = |n: &str| m.file(n).and_then(|f| pass::cached_stats(f, n));
            let differ = match (known(name), known(hn)) {
                (Some(x), Some(y)) => x.count != y.count || x.hist != y.hist || x.l2 != y.l2,
                _ => false,
            };
            !differ && m.diff(name, m, hn).is_ok_and(|d| d.identical_bytes)
        })
        .map(|(hn, _)| hn.to_string())
}

/// The BatchNorm / LayerNorm gain of a module: a 1-D `weight` next to running stats, or named
/// like a norm layer.
fn is_norm_gain(name: &str, info: &TensorInfo, m: &Model) -> bool {
    if info.shape.len() != 1 || !info.dtype.is_float() {
        return false;
    }
    let last = last_component(name);
    if !(last == "weight" || last == "gamma" || last == "scale") {
        return false;
    }
    let module = module_of(name);
    let bn_sibling = m.index.contains_key(&format!("{module}.running_var"));
    bn_sibling || is_norm_name(module)
}

/// Where a fact came from, for messages: `--fact`, or the file.
fn fact_origin(ctx: &ProbeCtx, key: &str) -> String {
    match ctx.facts.fact(key).map(|f| &f.source) {
        Some(crate::facts::FactSource::Artifact(file)) => format!("from {file}"),
        _ => "--fact".to_string(),
    }
}

/// Signs outside the weights that the first checkpoint holds pretrained weights: config.json's
/// `_name_or_path` (set by from_pretrained), LoRA tensors (an adapter trains on a pretrained base).
fn pretrained_hints(ctx: &ProbeCtx, c: &CheckpointDir, m: &Model) -> Vec<String> {
    let mut out = Vec::new();
    let cfg = c
        .config
        .as_ref()
        .and_then(|p| {
            crate::config::ModelConfig::read(p)
                .ok()
                .map(|c| (p.clone(), c))
        })
        .or_else(|| ctx.run.model_config());
    if let Some((path, cfg)) = cfg {
        if let Some(n) = cfg
            .raw
            .get("_name_or_path")
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            out.push(format!(
                "{} has _name_or_path {n:?} (the model was loaded with from_pretrained)",
                file_name(&path)
            ));
        }
    }
    if m.has_lora() {
        out.push("the weights hold LoRA tensors (an adapter trains on a pretrained base)".into());
    }
    out
}
pub(super) const INIT_WEIGHT_STATS: ProbeSpec = ProbeSpec {
    id: "init_weight_stats",
    entries: &["S5.1"],
    inputs: &[
        "checkpoint:init",
        "fact:from_scratch",
        "fact:tie_word_embeddings",
        "config",
    ],
    params: &[
        "max_ratio",
        "mean_abs",
        "mean_sigmas",
        "norm_gain_tol",
        "std_floor",
        "off_center_fail_min",
        "off_center_fail_frac",
        "embed_max_std",
        "pretrained_gain_std",
        "pretrained_gain_frac",
    ],
    outcomes: &["pass", "too_large", "off_center", "skip"],
    run: init_weight_stats,
};

pub fn init_weight_stats(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S5.1";
    let (max_ratio, mean_abs, mean_sigmas, gain_tol) = (
        p!(ctx, E, "max_ratio"),
        p!(ctx, E, "mean_abs"),
        p!(ctx, E, "mean_sigmas"),
        p!(ctx, E, "norm_gain_tol"),
    );
    let (floor, embed_max, off_min, off_frac, pre_std, pre_frac) = (
        p!(ctx, E, "std_floor"),
        p!(ctx, E, "embed_max_std"),
        p!(ctx, E, "off_center_fail_min"),
        p!(ctx, E, "off_center_fail_frac"),
        p!(ctx, E, "pretrained_gain_std"),
        p!(ctx, E, "pretrained_gain_frac"),
    );
    let scratch = ctx.facts.bool("from_scratch");
    if scratch == Some(false) {
        return vec![Verdict::skip(
            E,
            format!(
                "from_scratch=false ({}): the first weights are pretrained, not an init",
                fact_origin(ctx, "from_scratch")
            ),
        )];
    }
    let cks = weight_ckpts(ctx.run);
    let Some(c) = cks
        .iter()
        .find(|c| is_init_ckpt(c))
        .or(cks.first())
        .copied()
    else {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    };
    let true_init = is_init_ckpt(c);
    let m = match Model::open(c) {
        Ok(m) => m,
        Err(e) => {
            return vec![Verdict::skip(
                E,
                format!("cannot read {}: {e}", c.path.display()),
            )]
        }
    };
    let which = if true_init {
        format!("step-{} weights", m.step)
    } else if m.step_known {
        format!("earliest weights (step {}; no step-0 checkpoint)", m.step)
    } else {
        "weights (a model folder with no step and no init checkpoint)".to_string()
    };
    let mut errors = Vec::new();
    // Norm gains first (small): a fresh init sets every gain to one constant (1, or 0 for
    // zero-initialised residual gains); gains that vary were trained — pretrained weights.
    let mut gains: Vec<String> = Vec::new();
    let (mut gain_total, mut gain_varied) = (0usize, 0usize);
    for (name, info) in m.infos() {
        if !is_trainable(name, info) || !is_norm_gain(name, info, &m) {
            continue;
        }
        match m.stats(name, ctx.compute) {
            Ok(s) if s.finite > 0 => {
                gain_total += 1;
                if s.std > pre_std {
                    gain_varied += 1;
                }
                if (s.mean - 1.0).abs() > gain_tol {
                    gains.push(format!("{name} mean {}", fmt(s.mean)));
                }
            }
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    if scratch != Some(true) {
        let hints = pretrained_hints(ctx, c, &m);
        let hint_text = if hints.is_empty() {
            String::new()
        } else {
            format!("; also {}", hints.join("; "))
        };
        if gain_varied > 0 && gain_varied as f64 >= pre_frac * gain_total as f64 {
            return vec![Verdict::skip(
                E,
                format!(
                    "the {which} look trained, not initialised: {gain_varied} of {gain_total} norm gains vary (std > {pre_std}) where a fresh init sets each gain to a constant{hint_text} — init statistics only apply to a from-scratch init (pass --fact from_scratch=true to judge them anyway)"
                ),
            )];
        }
        if gain_total == 0 && !hints.is_empty() {
            return vec![Verdict::skip(
                E,
                format!(
                    "the {which} are probably pretrained, not an init: {} (no norm gains to confirm from the weights) — pass --fact from_scratch=true to judge them as an init",
                    hints.join("; ")
                ),
            )];
        }
    }
    struct Big {
        name: String,
        std: f64,
        ratio: f64,
        /// (Kaiming expectation) for a weight matrix; None for an embedding.
        kaiming: Option<f64>,
    }
    let mut big: Vec<Big> = Vec::new();
    let mut off: Vec<String> = Vec::new();
    // N(0,1)-like embeddings: tied to the output head (warn), or not (noted).
    let mut unit_tied: Vec<String> = Vec::new();
    let mut unit_free: Vec<String> = Vec::new();
    let mut sincos: Vec<String> = Vec::new();
    let mut checked = 0usize;
    let mut embeds = 0usize;
    let mut worst_ratio = 0.0f64;
    let vocab = ctx.facts.u64("vocab_size");
    // Token tables tied to the output head: the config fact, else a head saved as a
    // byte-identical copy (judged once, as the embedding).
    let tie_fact = ctx.facts.bool("tie_word_embeddings");
    let mut head_copies: HashMap<String, String> = HashMap::new();
    for (name, info) in m.infos() {
        if tie_fact != Some(false)
            && is_trainable(name, info)
            && embedding_kind(name, &info.shape, vocab) == Some(EmbedKind::Token)
        {
            if let Some(h) = tied_head_copy(&m, name, info) {
                head_copies.insert(h, name.to_string());
            }
        }
    }
    let tied = |name: &str| tie_fact.unwrap_or_else(|| head_copies.values().any(|e| e == name));
    for (name, info) in m.infos() {
        if !is_trainable(name, info) || is_lora_b(name) || head_copies.contains_key(name) {
            continue;
        }
        let embed = embedding_kind(name, &info.shape, vocab);
        let weight_like = info.shape.len() >= 2 && !is_norm_name(module_of(name));
        if embed.is_none() && !weight_like {
            continue;
        }
        let s = match m.stats(name, ctx.compute) {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if s.finite == 0 {
            continue;
        }
        if let Some(kind) = embed {
            embeds += 1;
            let d = info.shape.last().copied().unwrap_or(1).max(1) as f64;
            let exp = floor.max(1.0 / d.sqrt());
            // Within the usual conventions: go on to the centring check.
            if s.std > max_ratio * exp {
                if s.absmax <= 1.0 + 1e-6 {
                    // Bounded by 1 with a large spread: a fixed sin-cos table (std ≈ 0.7).
                    sincos.push(format!("{name} std {}", fmt(s.std)));
                } else if s.std <= embed_max {
                    let item = format!("{name} std {}", fmt(s.std));
                    if kind == EmbedKind::Token && tied(name) {
                        unit_tied.push(item);
                    } else {
                        unit_free.push(item);
                    }
                } else {
                    big.push(Big {
                        name: name.to_string(),
                        std: s.std,
                        ratio: s.std / exp,
                        kaiming: None,
                    });
                }
                continue;
            }
        } else {
            let Some((exp_max, kaiming)) = expected_std(&info.shape, floor) else {
                continue;
            };
            checked += 1;
            let ratio = s.std / exp_max;
            worst_ratio = worst_ratio.max(ratio);
            if s.std > max_ratio * exp_max {
                big.push(Big {
                    name: name.to_string(),
                    std: s.std,
                    ratio,
                    kaiming: Some(kaiming),
                });
            }
        }
        let se = s.std / (s.finite as f64).sqrt();
        if s.mean.abs() > mean_abs && s.mean.abs() > mean_sigmas * se {
            off.push(format!(
                "{name} mean {} ({:.1} s.e.)",
                fmt(s.mean),
                s.mean.abs() / se.max(f64::MIN_POSITIVE)
            ));
        }
    }
    if checked == 0 && embeds == 0 && gains.is_empty() {
        let why = if errors.is_empty() {
            "no weight matrix (≥ 2-D float tensor) in the checkpoint".to_string()
        } else {
            format!("unreadable tensors: {}", list_some(&errors, 2))
        };
        return vec![Verdict::skip(E, why)];
    }
    big.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let where_ = if true_init {
        format!("init weights (step {})", c.step)
    } else if m.step_known {
        format!(
            "earliest checkpoint (step {}) — no step-0 checkpoint",
            c.step
        )
    } else {
        "model folder at an unknown step — no init checkpoint".to_string()
    };
    // Notes on embeddings that are not findings by themselves.
    let mut notes = Vec::new();
    if !unit_free.is_empty() && big.is_empty() {
        notes.push(format!("N(0,1)-scale embeddings (nn.Embedding's / torch.randn's default; harmless unless tied to the output head): {}", list_some(&unit_free, 2)));
    }
    if !sincos.is_empty() {
        notes.push(format!(
            "fixed sin-cos tables (bounded by 1): {}",
            list_some(&sincos, 2)
        ));
    }
    let mut v;
    if !big.is_empty() {
        let st = if true_init {
            Status::Fail
        } else {
            Status::Warn
        };
        let worst: Vec<String> = big
            .iter()
            .map(|b| match b.kaiming {
                Some(k) => format!(
                    "{} std {} = {:.1}× Kaiming √(2/fan_in) {}, {:.0}× {floor}",
                    b.name,
                    fmt(b.std),
                    b.std / k,
                    fmt(k),
                    b.std / floor
                ),
                None => format!(
                    "{} std {} (embedding: above {embed_max}, past even an N(0,1) init)",
                    b.name,
                    fmt(b.std)
                ),
            })
            .collect();
        let matrices = big.iter().filter(|b| b.kaiming.is_some()).count();
        let mut msg = if matrices > 0 {
            format!(
                "{matrices} of {checked} weight matrices are initialised far too large: {}",
                list_some(&worst, 3)
            )
        } else {
            format!(
                "embeddings are initialised far too large: {}",
                list_some(&worst, 3)
            )
        };
        msg.push_str(&format!(". Expect std ≈ {floor} (transformers) or ≈ √(1/fan_in)…√(2/fan_in); a std near 1 on a weight matrix is an N(0,1) init (torch.randn) — apply the model's init (e.g. post_init / _init_weights) before training"));
        // The run's own knob, when its config states one: `initializer_range` (HF configs),
        // `init_std` / `initializer_factor`.
        if let Some((path, cfg)) = ctx.run.model_config() {
            for key in ["initializer_range", "init_std", "initializer_factor"] {
                if let Some(x) = cfg.raw.get(key).and_then(serde_json::Value::as_f64) {
                    let usual = if key == "initializer_factor" {
                        "1.0"
                    } else {
                        "0.02"
                    };
                    msg.push_str(&format!(
                        "; {} sets {key} {} here (the usual value is {usual})",
                        path.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                        fmt(x)
                    ));
                    break;
                }
            }
        }
        let mut emb: Vec<String> = unit_tied.clone();
        emb.extend(unit_free.iter().cloned());
        if matrices > 0 && !emb.is_empty() {
            msg.push_str(&format!("; embeddings too: {}", list_some(&emb, 2)));
        }
        if !true_init {
            msg.push_str(&format!(
                " (measured at {}, not at init: training may have grown them)",
                m.at()
            ));
        }
        v = Verdict::new(E, st, "too_large")
            .message(msg)
            .measured(format!(
                "worst std {} = {:.1}× the largest expectation ({where_})",
                fmt(big[0].std),
                big[0].ratio
            ));
        for b in big.iter().take(3) {
            v = v.evidence(m.ev().tensor(&b.name).note(format!("std {}", fmt(b.std))));
        }
        v = v
            .value("too_large", big.len() as f64)
            .value("worst_std", big[0].std);
    } else if !off.is_empty() {
        let many = off.len() as f64 >= off_min && off.len() as f64 >= off_frac * checked as f64;
        let st = if many && true_init {
            Status::Fail
        } else {
            Status::Warn
        };
        v = Verdict::new(E, st, "off_center")
            .measured(format!("{} of {checked} weight matrices have a non-zero mean ({where_})", off.len()))
            .message(format!("weights should start centred on 0: {} — a uniform(0, a) init or a constant offset biases every unit the same way", list_some(&off, 3)));
        v = v.evidence(m.ev()).value("off_center", off.len() as f64);
    } else if !unit_tied.is_empty() {
        v = Verdict::new(E, Status::Warn, "too_large")
            .measured(format!("{} token embedding(s) at N(0,1) scale, tied to the output head ({where_})", unit_tied.len()))
            .message(format!("{} — nn.Embedding's default N(0,1) init is a known PyTorch default and fine for an input table, but tied to the output head it makes the first logits ~√d× too large (init loss far above ln V); init it with std {floor} (as transformers' _init_weights does) or untie the head", list_some(&unit_tied, 2)))
            .evidence(m.ev());
    } else if !gains.is_empty() {
        v = Verdict::new(E, Status::Warn, "off_center")
            .measured(format!("{} norm gain(s) away from 1 ({where_})", gains.len()))
            .message(format!("LayerNorm/BatchNorm gains start at 1: {} (zero-initialised residual gains are a deliberate exception)", list_some(&gains, 3)))
            .evidence(m.ev());
    } else {
        v = Verdict::new(E, Status::Pass, "pass")
            .measured(format!("{checked} weight matrices and {embeds} embedding tensor(s), largest std/expectation {:.2} ({where_})", worst_ratio))
            .message(format!("init scales match the {floor} / Kaiming / Xavier expectations for their fan-in and are centred"))
            .evidence(m.ev());
    }
    if !notes.is_empty() {
        v.message.push_str(&format!(" [{}]", notes.join("; ")));
    }
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [unreadable: {}]", list_some(&errors, 2)));
    }
    vec![v
        .expected(format!("weight matrices: std ≤ {max_ratio}× max({floor}, 1/√(3·fan_in), √(1/fan_in), √(2/fan_in), √(2/(fan_in+fan_out))), |mean| ≤ {mean_abs} or ≤ {mean_sigmas} s.e.; embeddings: std ≤ {max_ratio}× max({floor}, 1/√d), N(0,1) scale (≤ {embed_max}) tolerated unless tied to the head; norm gains 1 ± {gain_tol}"))
        .value("checked", checked as f64)
        .value("embeddings", embeds as f64)
        .value("worst_ratio", worst_ratio)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedding_names_are_read_generally() {
        use EmbedKind::{Other, Token};
        for (name, shape, kind) in [
            ("transformer.wte.weight", &[512, 64][..], Some(Token)),
            ("transformer.wpe.weight", &[128, 64], Some(Other)),
            ("model.embed_tokens.weight", &[32000, 4096], Some(Token)),
            (
                "bert.embeddings.word_embeddings.weight",
                &[30522, 768],
                Some(Token),
            ),
            (
                "bert.embeddings.position_embeddings.weight",
                &[512, 768],
                Some(Other),
            ),
            (
                "bert.embeddings.token_type_embeddings.weight",
                &[2, 768],
                Some(Other),
            ),
            ("tok_embeddings.weight", &[32000, 4096], Some(Token)),
            (
                "model.decoder.embed_positions.weight",
                &[2050, 768],
                Some(Other),
            ),
            ("shared.weight", &[32128, 512], Some(Token)),
            ("pos_embed", &[1, 197, 768], Some(Other)),
            ("cls_token", &[1, 1, 768], Some(Other)),
            ("register_tokens", &[4, 768], Some(Other)),
            (
                "vision_model.embeddings.class_embedding",
                &[768],
                Some(Other),
            ),
            // Layers inside embedding blocks are weight matrices; heads are heads.
            ("patch_embed.proj.weight", &[768, 3, 16, 16], None),
            (
                "vit.embeddings.patch_embeddings.projection.weight",
                &[768, 3, 16, 16],
                None,
            ),
            ("down.0.resnets.0.time_emb_proj.weight", &[320, 1280], None),
            ("time_embed.0.weight", &[1280, 320], None),
            ("lm_head.weight", &[512, 64], None),
            ("h.0.attn.c_attn.weight", &[64, 192], None),
            ("model.embed_tokens.bias", &[4096], None),
        ] {
            assert_eq!(embedding_kind(name, shape, None), kind, "{name}");
        }
        // Any 2-D table with vocab_size rows is a token table.
        assert_eq!(
            embedding_kind("pos.weight", &[32, 64], Some(29)),
            Some(EmbedKind::Other)
        );
        assert_eq!(
            embedding_kind("tok.weight", &[512, 64], Some(512)),
            Some(Token)
        );
        assert_eq!(
            embedding_kind("lm_head.weight", &[512, 64], Some(512)),
            None
        );
    }
}
