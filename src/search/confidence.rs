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
    /// Each token's weight (see [`weights`]).
    pub weights: Vec<f32>,
    /// Synonym expansions: (query words that triggered the group, expansion word).
    pub expansions: Vec<(Vec<String>, String)>,
    /// Entries whose error string the query quotes (entry index, run length).
    pub quoted: Vec<(usize, usize)>,
    /// The query names an entry id.
    pub exact_id: bool,
    /// The kind of problem outside the catalog the query names.
    pub outside: Option<String>,
    /// The query asks how to do something and names no problem (see [`usage_question`]).
    pub usage: bool,
    /// Share of the query's letters in a script the catalog is not written in (CJK).
    pub foreign: f32,
    /// By token: a word that says where the trouble is (a domain cue or method: "sft",
    /// "yolo"), not what it is.
    pub context: Vec<bool>,
    /// The query holds a word of trouble (see [`troubled`]): without one it names a topic
    /// ("Fine tuning model", "GPU memory usage"), not a problem.
    pub troubled: bool,
}

/// Above this share of letters the catalog cannot read, a query of which a single content word is
/// left is a fragment of what the user said ("Lora微调灾难性遗忘" is read as "lora"): only a
/// named subject or a quoted error makes its match confident.
const MAX_FOREIGN: f32 = 0.5;

/// How a question about using a tool opens ("how do I merge …", "can I train on …"), wherever
/// a sentence or clause starts.
const USAGE_OPENINGS: &[&str] = &[
    "how to ",
    "how much ",
    "how many ",
    "how long ",
    "how do i ",
    "how do you ",
    "how do we ",
    "how can i ",
    "how can we ",
    "how should i ",
    "how would i ",
    "can i ",
    "can we ",
    "could i ",
    "is it possible ",
    "is there a way ",
    "is there any way ",
    "what is the best way ",
    "what's the best way ",
    "recommended way ",
    "any tips ",
    "tips and tricks ",
    "do you have ",
    "does it support ",
    "where can i ",
    "where do i ",
    "are there any ",
    "is there any ",
    "is there an ",
    "what is the expected ",
    "what should i ",
    "should i ",
    "when should ",
    "how does ",
    "how do ",
    "how can ",
    "integration of ",
    "please add ",
];

/// Openings of a question or request only where a sentence starts, not after a comma, where
/// they open a clause ("my losses go up each epoch, which confuses me", "I trained for 3
/// epochs, does not help"); a question after a comma opens with a person ([`USAGE_OPENINGS`]:
/// "…, how do I …", "…, can I …").
const CLAUSE_OPENINGS: &[&str] = &[
    "can multiple ",
    "can it ",
    "does it ",
    "does this ",
    // A yes/no or wh- question with no word of trouble in it ("Can LoRA adapters be loaded
    // on different GPUs", "Will MPS be supported", "Which scheduler should I use").
    "can ",
    "could ",
    "will ",
    "would ",
    "does ",
    "do ",
    "is ",
    "are ",
    "what is ",
    "what are ",
    "what's ",
    "which ",
    "where ",
    // A request for a feature, not a report ("Implement LR scheduler", "Support gradient
    // accumulation", "Add whisper finetuning support", "Integration of FSDP2").
    "implement ",
    "support ",
    "add ",
    "adding ",
    "integrate ",
    "integrating ",
    "extend ",
    "replace ",
    "need a ",
    "need an ",
    "looking for ",
    "it would be ",
    "would be nice ",
];

/// Abbreviations whose period ends no sentence.
const ABBREVIATIONS: &[&str] = &[
    "etc.", "e.g.", "i.e.", "vs.", "approx.", "fig.", "eq.", "cf.",
];

/// Asking, wherever it sits in the sentence ("I really want to know how to fine-tune
/// Whisper", "I want to ask if there is a possibility to …").
const ASKING: &[&str] = &[
    "want to know",
    "like to know",
    "want to ask",
    "like to ask",
    "may i ask",
    "i wonder",
    "wondering if",
    "wondering whether",
    "curious to know",
    "curious if",
    "curious whether",
];

/// Words that make a question a problem report after all ("how to fix the NaN loss",
/// "can I avoid the OOM", "how do I stop it diverging"): failure words, negations, asking why.
const PROBLEM_WORDS: &[&str] = &[
    "fix",
    "solve",
    "avoid",
    "prevent",
    "debug",
    "resolve",
    "why",
    "error",
    "errors",
    "nan",
    "inf",
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "crash",
    "crashes",
    "crashed",
    "hang",
    "hangs",
    "hanging",
    "stuck",
    "freeze",
    "freezes",
    "wrong",
    "worse",
    "slow",
    "slower",
    "not",
    "never",
    "no",
    "nothing",
    "doesn",
    "don",
    "won",
    "can't",
    "cannot",
    "isn",
    "aren",
    "didn",
    "t",
    "zero",
    "explode",
    "exploding",
    "diverge",
    "diverges",
    "diverging",
    "spike",
    "spikes",
    "collapse",
    "collapses",
    "oom",
    "garbage",
    "gibberish",
    "repeats",
    "repeating",
    "repetition",
    "weird",
    "strange",
    "issue",
    "issues",
    "problem",
    "problems",
    "bug",
    "broken",
    "breaks",
    "drop",
    "drops",
    "degrade",
    "degrades",
    "unstable",
    "instead",
    "risk",
    "risks",
    // Movement and persistence of a metric, or asking whether it is normal.
    "degenerate",
    "negative",
    "decrease",
    "decreases",
    "decreasing",
    "decreased",
    "increase",
    "increases",
    "increasing",
    "increased",
    "always",
    "keep",
    "keeps",
    "normal",
    // A value out of its band ("High KL divergence in GRPO (due to dropout?)").
    "high",
    "higher",
    "low",
    "lower",
    "huge",
    "too",
    // Failure said another way ("Unable to run on V100", "eos token missing").
    "unable",
    "missing",
    "incorrect",
    "bad",
    "poor",
    "abnormal",
    "ineffective",
    "unexpected",
    "lost",
    "loses",
    "mistake",
    "mistakes",
    // A change told by how sudden or how large it is ("the grad_norm suddenly becomes
    // extremely large", "the performance of PPO varies greatly", "shorter and shorter").
    "sudden",
    "suddenly",
    "extremely",
    "drastically",
    "dramatically",
    "significantly",
    "greatly",
    "fluctuate",
    "fluctuates",
    "fluctuating",
    "varies",
    "dropping",
    "dropped",
    "shorter",
    // What is wrong with an output or a value, said as its defect ("generated images are
    // noisy", "fp16 generates NaNs", "memory leak").
    "nans",
    "infs",
    "noisy",
    "blurry",
    "blurred",
    "distorted",
    "corrupted",
    "corrupt",
    "garbled",
    "nonsense",
    "artifacts",
    "leak",
    "leaks",
    "leaking",
];

/// Does the query hold a word of trouble: a failure word, a negation, "why", or a number (a
/// measured value: "accuracy stays at 0.5")?
pub(super) fn troubled(query: &str) -> bool {
    let lower = query.to_lowercase();
    // A number that is part of a name ("GPT-2", "LLaMa-7B", "ESC-50") is not a measured value.
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .any(|w| {
            let named_number = w.contains('-');
            w.split('-').any(|w| {
                PROBLEM_WORDS.contains(&w)
                    || w.ends_with("n't")
                    || (!named_number
                        && w.chars().next().is_some_and(|c| c.is_ascii_digit())
                        && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
            })
        })
}

/// Is the query a question about how to use something (set an option, merge an adapter,
/// train on several GPUs, deploy) rather than a report of something going wrong? Such a
/// question opens like one (at the start or after a sentence ends) and holds no word of
/// failure, negation or "why" (`troubled`: what [`troubled`] says of the query).
pub(super) fn usage_question(query: &str, troubled: bool) -> bool {
    if troubled {
        return false;
    }
    let lower = query.to_lowercase();
    // A question with no word of trouble asks about use, however it opens ("Model merging
    // scripts?", "For pretraining with LoRA, what is the expected output?").
    if lower.contains(['?', '？']) || ASKING.iter().any(|a| lower.contains(a)) {
        return true;
    }
    // A question also opens after a title's prefix ("YOLOv8 - How to calculate mAP", "[Q] how
    // do I …", "Step 3: how to …"). An abbreviation's period ends no sentence: "(running_mean,
    // running_var, etc.) are still being updated" is a report, not a question opening "are".
    let lower = ABBREVIATIONS
        .iter()
        .fold(lower, |l, a| l.replace(a, &a[..a.len() - 1]));
    // (start, opened after a comma)
    let mut starts = vec![(0usize, false)];
    starts.extend(
        lower
            .match_indices([
                '.', '?', '!', ';', '\n', ',', '？', '。', '！', ':', ']', '，',
            ])
            .map(|(i, m)| (i + m.len(), m == "," || m == "，")),
    );
    starts.extend(
        lower
            .match_indices(" - ")
            .map(|(i, m)| (i + m.len(), false)),
    );
    starts.iter().any(|&(i, after_comma)| {
        let rest = lower[i..].trim_start();
        let rest: String = rest
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '\'' || c == '_' {
                    c
                } else {
                    ' '
                }
            })
            .collect();
        let rest = format!("{} ", rest.split_whitespace().collect::<Vec<_>>().join(" "));
        USAGE_OPENINGS.iter().any(|o| rest.starts_with(o))
            || (!after_comma && CLAUSE_OPENINGS.iter().any(|o| rest.starts_with(o)))
    })
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
    /// How far the best hit's score stands above the next one's (ratio; 2 when alone).
    /// Reported, not yet part of the verdict: on the tuned set a margin cut-off flagged as
    /// many covered statements as uncovered ones.
    pub margin: f32,
    /// Why: "entry id", "quoted error", "usage question" (asks how to do something and
    /// names no problem), "outside the catalog" (the query names a kind of
    /// problem the catalog does not cover), "mostly unreadable" (most of the query is in a
    /// script the catalog is not written in), "vague report" (the query says something failed
    /// but not what: "I get the following error when I run train.py"), "no problem stated"
    /// (no word of trouble, only a topic: "Fine tuning model"), "subject named" (a
    /// keyword phrase, error string or
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
            margin: 0.0,
            reason: "no hits",
            outside: None,
        }
    }
}

/// Words that carry no part of a problem (pronouns, auxiliaries, prepositions, chatter such as
/// "get", "see", "try"): the catalog is too small for their idf to say so ("has" is in a fifth
/// of the entries and would weigh like a symptom), so they weigh nothing in how much of the
/// query an entry explains. Lower-case as typed; [`function_stems`] analyses them.
pub(super) const FUNCTION_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "mine",
    "we",
    "us",
    "our",
    "you",
    "your",
    "he",
    "she",
    "him",
    "her",
    "his",
    "they",
    "them",
    "their",
    "someone",
    "anyone",
    "has",
    "have",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "done",
    "am",
    "been",
    "being",
    "can",
    "could",
    "would",
    "should",
    "will",
    "shall",
    "may",
    "might",
    "must",
    "when",
    "whenever",
    "while",
    "during",
    "from",
    "about",
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "where",
    "how",
    "here",
    "any",
    "some",
    "also",
    "just",
    "very",
    "so",
    "get",
    "gets",
    "got",
    "getting",
    "see",
    "seem",
    "seems",
    "try",
    "tried",
    "trying",
    "want",
    "wanted",
    "need",
    "needed",
    "know",
    "think",
    "like",
    "please",
    "help",
    "thanks",
    "hi",
    "hello",
    "anybody",
    "anything",
    "something",
    "using",
    "use",
    "used",
    "uses",
    "make",
    "makes",
    "made",
    "let",
    "via",
    "within",
    "into",
    "onto",
    "upon",
    "over",
    "under",
    "between",
    "because",
    "since",
    "though",
    "although",
    "however",
    "per",
    "ve",
    "ll",
    "d",
    "m",
    "s",
    "re",
    "one",
    "two",
    "three",
    "much",
    "many",
    "more",
    "most",
    "well",
    "really",
    "quite",
    "maybe",
    "perhaps",
    "etc",
    "able",
    "way",
    "thing",
    "things",
    "question",
    "questions",
    "following",
    "follow",
    "attached",
    "attachment",
    // Verbs that report that something happened, not what ("I encountered an error").
    "encounter",
    "encountered",
    "encountering",
    "occur",
    "occurs",
    "occurred",
    "happen",
    "happens",
    "happened",
    "appear",
    "appears",
    "appeared",
    "meet",
    "met",
    "face",
    "faced",
    "facing",
];

/// The analysed forms of [`FUNCTION_WORDS`].
pub(super) fn function_stems(an: &mut tantivy::tokenizer::TextAnalyzer) -> HashSet<String> {
    let mut out = HashSet::new();
    for w in FUNCTION_WORDS {
        let mut ts = an.token_stream(w);
        while ts.advance() {
            out.insert(ts.token().text.clone());
        }
    }
    out
}

/// Each token's weight: its idf, or a small share of the rarest word's for a word no entry
/// holds (product names, typos, chatter); nothing for a function word.
pub(super) fn weights(
    tokens: &[String],
    idf: &HashMap<String, f32>,
    max_idf: f32,
    function: &HashSet<String>,
) -> Vec<f32> {
    tokens
        .iter()
        .map(|t| {
            if function.contains(t) {
                0.0
            } else {
                idf.get(t).copied().unwrap_or(max_idf * UNKNOWN_WEIGHT)
            }
        })
        .collect()
}

/// Judge the best hit (entry index `entry`, its analysed words `words`).
pub(super) fn judge(
    q: &Query,
    entry: usize,
    concept: bool,
    margin: f32,
    words: &HashSet<String>,
    strong_words: &HashSet<String>,
) -> Confidence {
    let (_, strong, peak) = coverage(q, strong_words);
    let (coverage, matched, _) = coverage(q, words);
    let verdict = |confident: bool, reason: &'static str| Confidence {
        confident,
        coverage,
        matched,
        strong,
        peak,
        margin,
        reason,
        outside: None,
    };
    if q.exact_id {
        return verdict(true, "entry id");
    }
    if q.quoted.iter().any(|(e, _)| *e == entry) {
        return verdict(true, "quoted error");
    }
    if q.usage {
        return verdict(false, "usage question");
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
    if q.foreign > MAX_FOREIGN && q.weights.iter().filter(|w| **w > 0.0).count() <= 1 {
        return verdict(false, "mostly unreadable");
    }
    if let Some(reason) = names_no_symptom(q, strong_words) {
        return verdict(false, reason);
    }
    verdict(coverage >= MIN_COVERAGE, "coverage")
}

/// Words that report that something went wrong without saying what ("I get an error",
/// "the following issues"), as analysed.
const REPORT_WORDS: &[&str] = &[
    "error", "issu", "problem", "bug", "except", "wrong", "mistak",
];
/// Words that judge a result without saying what is wrong with it ("the results are bad",
/// "worse after fine-tuning"), as analysed. A query that says only this of a metric is a vague
/// report: which entry explains it depends on what the user left out. "low" is not one: "very low
/// validation accuracy" is as often a measured symptom as a complaint.
const BAD_RESULT_WORDS: &[&str] = &["bad", "wors", "poor", "poorli", "terribl"];
/// What such a judgement is passed on (analysed): the metric, the result, the split.
const RESULT_WORDS: &[&str] = &[
    "accuraci", "acc", "map", "result", "perform", "effect", "score", "metric", "test", "valid",
    "precis", "recal", "f1", "auc", "miou", "fid",
];
/// A word held by more than about a fifth of the entries (idf below this) says where the
/// trouble is (training, the model, the data, an epoch), not what it is.
const SPECIFIC_IDF: f32 = 1.7;

/// How a query that names no symptom the best entry shows reads, if it does: "vague report"
/// when it only reports trouble ("I get the following error when I run train.py", "SFT
/// training error in epoch 32") or only judges a result ("the results are so bad when I train
/// from scratch": the metric does not count as a symptom then), "no problem stated" when it
/// holds no word of trouble at all and names a topic ("Fine tuning model", "about the learning
/// rate"). Either way the best
/// entry shares none of the query's specific words in what it shows; words that say where (a
/// domain cue or method such as "SFT") do not count, so any entry would be a guess.
pub(super) fn names_no_symptom(q: &Query, strong_words: &HashSet<String>) -> Option<&'static str> {
    let is = |words: &[&str], t: &str| words.contains(&t);
    let vague_result = q.tokens.iter().any(|t| is(BAD_RESULT_WORDS, t));
    let reason = if vague_result || q.tokens.iter().any(|t| is(REPORT_WORDS, t)) {
        "vague report"
    } else if !q.troubled {
        "no problem stated"
    } else {
        return None;
    };
    let specific = q
        .tokens
        .iter()
        .zip(&q.weights)
        .enumerate()
        .any(|(k, (t, &w))| {
            // Words that only report or judge, and words that say where, are not symptoms.
            let says_what = !(is(REPORT_WORDS, t)
                || is(BAD_RESULT_WORDS, t)
                || (vague_result && is(RESULT_WORDS, t))
                || q.context.get(k).copied().unwrap_or(false));
            says_what && w >= SPECIFIC_IDF && explains(q, t, strong_words)
        });
    (!specific).then_some(reason)
}

/// Does the entry (its analysed `words`) hold the query word `t`, directly or through a
/// synonym the word triggered?
fn explains(q: &Query, t: &str, words: &HashSet<String>) -> bool {
    words.contains(t)
        || q.expansions
            .iter()
            .any(|(trigger, e)| trigger.iter().any(|x| x == t) && words.contains(e))
}

/// Share of the query's idf mass found in the entry (directly or via a triggered synonym),
/// and that mass.
pub(super) fn coverage(q: &Query, words: &HashSet<String>) -> (f32, f32, f32) {
    let (mut total, mut found, mut peak) = (0.0f32, 0.0f32, 0.0f32);
    for (t, &w) in q.tokens.iter().zip(&q.weights) {
        total += w;
        if explains(q, t, words) {
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

#[cfg(test)]
mod tests {
    use super::{troubled, usage_question};

    #[test]
    fn usage_questions_are_told_from_problem_reports() {
        for q in [
            "how do I resume training from a checkpoint",
            "How can I merge a LoRA adapter into the base model?",
            "Trained fine. How to deploy it behind an API",
            "can I train on two GPUs",
            "Are there any tips and tricks about reward design?",
            "Can multiple GPUs be used for training？",
            "Can Lora adapters be loaded on different GPUs",
            "Will MPS be supported on Apple Silicon chips?",
            "Which scheduler should I use for SFT",
            "Model merging scripts?",
            "For pretraining with LORA what is the expected output? A Lora adapter or merged model?",
            "How much GPU memory is required to train the network",
            // A number in a name is not a measured value; asking, wherever it sits.
            "How do I train GPT-2 from scratch",
            "I'm curious to know if we can fine-tune it on our own data",
            // Asking in the middle of a sentence, or after a title's prefix.
            "I really want to know how to fine-tune Whisper for Audioset",
            "YOLOv8 - How to calculate map on test set",
            "[Q] how do I set the warmup ratio",
            // Requests for a feature.
            "Implement LR scheduler",
            "Support gradient accumulation",
            "Integration of FSDP2",
            "need a distributed training example",
            "it would be cool to have a tab to train a dream booth model",
            // A full-width question mark asks as "?" does.
            "在哪里 merge LoRa model？",
        ] {
            assert!(usage_question(q, troubled(q)), "{q}");
        }
        for q in [
            "how to fix loss is nan after a few steps",
            "how do I stop the loss diverging",
            "can't resume from checkpoint",
            "loss goes up after resuming, how to resume properly? it doesn't work",
            "mAP is zero after training",
            "why does my model repeat itself",
            "Is it normal that the GRPO loss is zero",
            "Does the accuracy stay at 0.5 for everyone?",
            "Can 't training with fp16",
            "How to stop model keep generating",
            "High KL Divergence in GRPO with GPT2-Style Model (Due to Dropout?)",
            "mAP is 0?",
            "the accuracy stays at 0.5",
            // An identifier is one word ("add_histogram" does not open with "add "), and a
            // call's parenthesis does not end a sentence.
            "add_histogram weights gradients tensorboard",
            "I thought using nn.Param() would register the parameter and weights get updated",
        ] {
            assert!(!usage_question(q, troubled(q)), "{q}");
        }
        // After a comma a relative clause opens, not a question; a question after a comma opens
        // with a person.
        let q = "But my losses somehow go up each epoch, which confuses me";
        assert!(!usage_question(q, troubled(q)), "{q}");
        let q = "I trained the adapter for 3 epochs, can I merge it into the base model";
        assert!(usage_question(q, false), "{q}");
        // An abbreviation's period ends no sentence.
        let q = "However, the batchnorm statistics (running_mean, running_var, etc.) are still being updated.";
        assert!(!usage_question(q, troubled(q)), "{q}");
        // Multi-byte punctuation ends a sentence without splitting a character.
        let q =
            "DPO training，chosen_reward和rejected_reward都是负数，而且随着 training 越来越小。";
        assert!(!usage_question(q, false));
    }
}
