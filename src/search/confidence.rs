//! Is the best hit a confident match? BM25 scores are not comparable across queries, so the
//! verdict rests on how much of the query the best entry accounts for: the share of the
//! query's words (weighted by how rare they are in the catalog) that the entry contains,
//! directly or through a synonym the query triggered. A quoted error string or an entry id
//! is always confident; a query naming a kind of problem the catalog leaves out (installing
//! packages, GPU drivers, loading datasets: `outside:` in playbook/synonyms.yaml) never is.
//! Words no entry holds weigh little (product names, typos, chatter). The cut-off is calibrated on tests/search_queries/real_phrasings.yaml
//! (covered vs uncovered problems; see BENCHMARKS.md).

use std::collections::{HashMap, HashSet};

/// Share of the query's weight the best entry must account for when the query names none of
/// its subjects.
pub const MIN_COVERAGE: f32 = 0.3;
/// Weight of a word no entry contains, as a share of the rarest catalog word's weight.
const UNKNOWN_WEIGHT: f32 = 0.15;

/// What the verdict looks at, gathered while the query is planned.
#[derive(Debug, Clone, Default)]
pub(super) struct Query {
    /// Analysed query words (stop words removed, typos corrected).
    pub tokens: Vec<String>,
    /// Synonym expansions: (query words that triggered the group, expansion word).
    pub expansions: Vec<(Vec<String>, String)>,
    /// Entries whose error string the query quotes (entry index, run length).
    pub quoted: Vec<(usize, usize)>,
    /// The query names an entry id.
    pub exact_id: bool,
    /// The kind of problem outside the catalog the query names.
    pub outside: Option<String>,
}

/// The verdict on the best hit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Confidence {
    /// True when the best hit is a confident match.
    pub confident: bool,
    /// Share of the query's weight the best hit accounts for (0..1).
    pub coverage: f32,
    /// The weight it accounts for (sum of the matched words' idf).
    pub matched: f32,
    /// The weight matched in what the entry shows (title, keywords, errors, symptom).
    pub strong: f32,
    /// The rarest word matched there (its idf).
    pub peak: f32,
    /// Why: "entry id", "quoted error", "outside the catalog" (the query names a kind of
    /// problem the catalog does not cover), "subject named" (a keyword phrase, error string or
    /// knob of the entry, or a synonym of one), "coverage", or "no hits". A domain cue alone
    /// ("llava", "yolo") is not a subject: it only steers the ranking.
    pub reason: &'static str,
    /// The kind of problem outside the catalog the query names ("installing a package").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
}

impl Confidence {
    pub(super) fn none() -> Confidence {
        Confidence {
            confident: false,
            coverage: 0.0,
            matched: 0.0,
            strong: 0.0,
            peak: 0.0,
            reason: "no hits",
            outside: None,
        }
    }
}

/// Judge the best hit (entry index `entry`, its analysed words `words`).
pub(super) fn judge(
    q: &Query,
    entry: usize,
    concept: bool,
    words: &HashSet<String>,
    strong_words: &HashSet<String>,
    idf: &HashMap<String, f32>,
) -> Confidence {
    let (_, strong, peak) = coverage(q, strong_words, idf);
    let (coverage, matched, _) = coverage(q, words, idf);
    let verdict = |confident: bool, reason: &'static str| Confidence {
        confident,
        coverage,
        matched,
        strong,
        peak,
        reason,
        outside: None,
    };
    if q.exact_id {
        return verdict(true, "entry id");
    }
    if q.quoted.iter().any(|(e, _)| *e == entry) {
        return verdict(true, "quoted error");
    }
    if let Some(topic) = &q.outside {
        return Confidence {
            outside: Some(topic.clone()),
            ..verdict(false, "outside the catalog")
        };
    }
    if concept {
        return verdict(true, "subject named");
    }
    verdict(coverage >= MIN_COVERAGE, "coverage")
}

/// Share of the query's idf mass found in the entry (directly or via a triggered synonym),
/// and that mass.
pub(super) fn coverage(
    q: &Query,
    words: &HashSet<String>,
    idf: &HashMap<String, f32>,
) -> (f32, f32, f32) {
    let max_idf = idf.values().copied().fold(0.0f32, f32::max);
    let (mut total, mut found, mut peak) = (0.0f32, 0.0f32, 0.0f32);
    for t in &q.tokens {
        let w = idf.get(t).copied().unwrap_or(max_idf * UNKNOWN_WEIGHT);
        total += w;
        let hit = words.contains(t)
            || q.expansions
                .iter()
                .any(|(trigger, e)| trigger.contains(t) && words.contains(e));
        if hit {
            found += w;
            peak = peak.max(w);
        }
    }
    if total <= 0.0 {
        (0.0, 0.0, 0.0)
    } else {
        (found / total, found, peak)
    }
}
