//! Query planning over the catalog's own words: typo correction for words the catalog lacks,
//! synonym groups and domain cues from the playbook vocabulary (matched as phrases), and entry
//! error strings recognised when a query quotes a run of them. Words are stem ids interned
//! once per index (see `analyse`); a query's stems are looked up by id.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};

use super::analyse::{EntryWords, Stems, Strings, Word, LONG};
use super::phase::{self, Phase};
use crate::catalog::{Catalog, Domain, Entry};

/// Shortest run of an error string's words, in order, that counts as quoting it.
const PHRASE_MIN: usize = 4;
/// A single word names an entry's subject only when at most this many entries use it.
const WORD_DF: usize = 6;
/// A phrase of several words does when at most this many entries use it word for word …
const PHRASE_DF: usize = 8;
/// … and one of its words is used by at most this many entries.
const COMMON_DF: usize = 40;

/// Lower-cased, stemmed words with stop words kept: "no detections" stays two words, so
/// phrases keep their meaning when matched.
pub(super) fn plain_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

fn words(an: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut ts = an.token_stream(text);
    while ts.advance() {
        out.push(ts.token().text.clone());
    }
    out
}

/// Lower-cased words as typed (split like the index tokenizer, not stemmed).
fn raw_words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

/// Separator between an entry's fields in its word sequence (no stem has this id).
const SEP: u32 = u32::MAX - 1;
/// A query word no catalog text holds (equal to no stem of a catalog phrase).
const UNKNOWN: u32 = u32::MAX - 2;

/// Per entry, its words as sorted stem ids. Indexing gives an entry's words as a set of
/// stems, made on first use and kept (the verdict and the ranking look at a few entries per
/// query; building all of them on every start cost more than the rest of the lexicon).
pub(super) struct WordSets {
    ids: Vec<Vec<u32>>,
    stems: Arc<Strings>,
    shown: Vec<OnceLock<HashSet<String>>>,
}

impl WordSets {
    fn new(ids: Vec<Vec<u32>>, stems: &Arc<Strings>) -> WordSets {
        WordSets {
            shown: (0..ids.len()).map(|_| OnceLock::new()).collect(),
            ids,
            stems: stems.clone(),
        }
    }

    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    fn contains(set: &[u32], w: u32) -> bool {
        set.binary_search(&w).is_ok()
    }
}

impl std::ops::Index<usize> for WordSets {
    type Output = HashSet<String>;

    fn index(&self, entry: usize) -> &HashSet<String> {
        self.shown[entry].get_or_init(|| {
            self.ids[entry]
                .iter()
                .map(|&w| self.stems.get(w).to_string())
                .collect()
        })
    }
}

/// Words for correction by length in characters: (characters, uses, word).
type ByLen = HashMap<usize, Vec<(Vec<char>, u32, String)>>;

/// Vocabulary built once per index. Words are stem ids (see `analyse`); a query's words are
/// looked up by their stem.
pub(super) struct Lexicon {
    /// Stems of every analysed text (catalog, vocabulary, index-only texts), interned.
    stems: Arc<Strings>,
    /// Lower-cased words as typed, interned …
    lowers: Strings,
    /// … and how often the catalog and the vocabulary use each (0: only in a text the
    /// lexicon does not read, such as a threshold).
    raw_count: Vec<u32>,
    /// The used words as characters, grouped by length, for correction (made when a query
    /// first holds a word the catalog lacks).
    by_len: OnceLock<ByLen>,
    /// By stem id: a stem of the catalog (stop words kept) or of the vocabulary.
    known: Vec<bool>,
    /// By stem id: the number of entries holding it.
    df: Vec<u32>,
    /// Each synonym phrase (stemmed words) with its group.
    phrases: Vec<(Vec<u32>, usize)>,
    /// Group -> its phrases.
    groups: Vec<Vec<Vec<u32>>>,
    /// Cue phrase -> domain.
    cues: Vec<(Vec<u32>, Domain)>,
    /// Phrases naming a kind of problem outside the catalog, with the topic's name.
    outside: Vec<(Vec<u32>, String)>,
    /// Lists of phrases naming such a topic together (one of each list), with its name.
    outside_together: Vec<(Vec<Vec<Vec<u32>>>, String)>,
    /// Names of methods a run chooses (stemmed words), with their group.
    methods: Vec<(Vec<u32>, usize)>,
    /// Per entry: the method groups its title names outside parentheses (its scope).
    pub(super) entry_methods: Vec<Vec<usize>>,
    /// Per entry: the times in the run its title places the trouble at (see [`phase`]).
    pub(super) entry_phases: Vec<Vec<Phase>>,
    /// Error strings (stemmed words) with the index of their entry.
    errors: Vec<(Vec<u32>, usize)>,
    /// Per entry: the phrases that name its subject (keywords, error strings, identifiers in
    /// its knobs), as stemmed words.
    concepts: Vec<Vec<Vec<u32>>>,
    /// Per entry: all its text as stemmed words ([`SEP`] between fields), and the same as a set.
    entry_seqs: Vec<Vec<u32>>,
    pub(super) entry_sets: WordSets,
    /// Per entry: the words of what it shows (title, symptom, keywords, errors, phrases).
    pub(super) entry_strong: WordSets,
    /// Per entry: each of its users' phrases as a sorted set of stem ids.
    pub(super) entry_phrases: Vec<Vec<Vec<u32>>>,
    /// Phrase -> number of entries holding it, filled as queries ask (the same synonym groups
    /// come back keystroke after keystroke).
    df_cache: Mutex<HashMap<Vec<u32>, usize>>,
}

/// What one query asks for, after correction and expansion.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// The query text with unknown words replaced by their nearest catalog word.
    pub corrected: String,
    /// Words that were replaced (typed, replacement).
    pub corrections: Vec<(String, String)>,
    /// Synonym phrases the query did not contain but means: (the query words that triggered
    /// the group, the phrase to search for).
    pub expansions: Vec<(Vec<String>, String)>,
    /// Domains the query names.
    pub domains: Vec<Domain>,
    /// Entries whose error string the query quotes, with the quoted run length.
    pub quoted: Vec<(usize, usize)>,
    /// The corrected query as stemmed words (stop words kept).
    pub words: Vec<String>,
    /// Synonym groups the query triggered, with the phrase that triggered each.
    pub groups: Vec<(usize, Vec<String>)>,
    /// The kind of problem outside the catalog the query names, if any.
    pub outside: Option<String>,
    /// The method groups the query names (see `Lexicon::entry_methods`).
    pub methods: Vec<usize>,
    /// The times in the run the query places the trouble at (see `Lexicon::entry_phases`).
    pub phases: Vec<Phase>,
    /// `words` as stem ids ([`UNKNOWN`] for a stem no analysed text holds).
    ids: Vec<u32>,
    /// `groups` as (group, index of the triggering phrase in the lexicon's phrases).
    triggers: Vec<(usize, usize)>,
}

/// Class and vocabulary counts whose ln a stuck loss sits at: two to a thousand classes and the
/// vocabularies of common tokenizers (BERT 30522, Llama-2 32000, GPT-2 50257, Llama-3 128256,
/// Qwen 151936).
const UNIFORM_COUNTS: &[f64] = &[
    2.0, 10.0, 100.0, 1000.0, 30522.0, 32000.0, 50257.0, 128256.0, 151936.0,
];

/// Is `num` (a decimal as written: "2.30", "0.6931") within 1% of ln of one of
/// [`UNIFORM_COUNTS`]? A number written with one decimal must round to it ("6.9" is ln 1000,
/// "3.0" is nothing).
fn uniform_loss(num: &str) -> bool {
    let Ok(x) = num.parse::<f64>() else {
        return false;
    };
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    UNIFORM_COUNTS.iter().any(|&n| {
        let ln = n.ln();
        (x - ln).abs() <= 0.01 * ln && (decimals >= 2 || (x - ln).abs() < 0.05)
    })
}

/// The decimal numbers of a text ("2.30", "0.693"), not parts of versions or names ("v1.5",
/// "3.10.2", "llama-3.1").
fn decimals(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '=' | ':' | '~'))
        .map(|w| w.trim_end_matches(['.', '?', '!']))
        .filter(|w| {
            let mut parts = w.split('.');
            let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
                return false;
            };
            !a.is_empty()
                && !b.is_empty()
                && a.chars().all(|c| c.is_ascii_digit())
                && b.chars().all(|c| c.is_ascii_digit())
        })
}

/// Optimal-string-alignment distance (a transposition counts as one edit), or None above `max`.
/// Words longer than 40 characters never match.
fn osa_within(a: &[char], b: &[char], max: usize) -> Option<usize> {
    const W: usize = 42;
    if a.len().abs_diff(b.len()) > max || a.len() >= W - 1 || b.len() >= W - 1 {
        return None;
    }
    let (n, m) = (a.len(), b.len());
    let mut prev2 = [0usize; W];
    let mut prev = [0usize; W];
    let mut cur = [0usize; W];
    for (j, v) in prev.iter_mut().enumerate().take(m + 1) {
        *v = j;
    }
    for i in 1..=n {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > max {
            return None;
        }
        prev2 = prev;
        prev = cur;
    }
    (prev[m] <= max).then_some(prev[m])
}

/// Does `hay` contain `needle` as a contiguous run?
fn contains_run<T: PartialEq>(hay: &[T], needle: &[T]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Does `hay` hold the words of `needle` in order, with at most one other word between two
/// of them ("inference is terribly slow" holds "inference is slow")? A one-word needle must
/// appear as is.
fn contains_loose_run<T: PartialEq>(hay: &[T], needle: &[T]) -> bool {
    let Some(first) = needle.first() else {
        return false;
    };
    hay.iter()
        .enumerate()
        .filter(|(_, w)| *w == first)
        .any(|(start, _)| {
            let mut at = start;
            needle[1..].iter().all(
                |n| match hay[at + 1..].iter().take(2).position(|w| w == n) {
                    Some(k) => {
                        at += 1 + k;
                        true
                    }
                    None => false,
                },
            )
        })
}

/// Longest contiguous run shared by `a` and `b`.
fn longest_common_run<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut best = 0;
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { 0 };
            best = best.max(cur[j + 1]);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    best
}

/// The lexicon's per-entry tables, filled entry by entry from words analysed once (the index
/// is written from the same words in the same walk).
pub(super) struct LexiconBuilder {
    /// By lower-cased word id: how often the catalog and the vocabulary use it.
    count: Vec<u32>,
    errors: Vec<(Vec<u32>, usize)>,
    concepts: Vec<Vec<Vec<u32>>>,
    entry_seqs: Vec<Vec<u32>>,
    entry_sets: Vec<Vec<u32>>,
    entry_strong: Vec<Vec<u32>>,
    entry_phrases: Vec<Vec<Vec<u32>>>,
    /// Stems of the catalog's own text (not users' phrases): the words known to correction.
    written: Vec<u32>,
}

impl LexiconBuilder {
    pub(super) fn new(entries: usize) -> LexiconBuilder {
        LexiconBuilder {
            count: Vec::new(),
            errors: Vec::new(),
            concepts: Vec::with_capacity(entries),
            entry_seqs: Vec::with_capacity(entries),
            entry_sets: Vec::with_capacity(entries),
            entry_strong: Vec::with_capacity(entries),
            entry_phrases: Vec::with_capacity(entries),
            written: Vec::with_capacity(1 << 16),
        }
    }

    /// Append the stems of `words` (stop words kept) to `out` and count the words as typed.
    fn read(&mut self, words: &[Word], out: &mut Vec<u32>) {
        for w in words {
            self.count[w.lower as usize] += 1;
            if w.stem != LONG {
                out.push(w.stem);
            }
        }
    }

    /// Add the next entry (`e`, its words `ew`).
    pub(super) fn add(&mut self, e: &Entry, ew: &EntryWords, an: &mut Stems) {
        let i = self.entry_seqs.len();
        if self.count.len() < an.lowers.len() {
            self.count.resize(an.lowers.len(), 0);
        }
        let words = |r: &Range<usize>| &ew.words[r.clone()];
        // Each text feeds the sequence, the subject phrases, the quoted-error table and the
        // word sets.
        let mut seq: Vec<u32> = Vec::with_capacity(ew.words.len() + 64);
        let mut strong: Vec<u32> = Vec::with_capacity(256);
        let mut mine: Vec<Vec<u32>> = Vec::new();
        for r in [&ew.title, &ew.symptom] {
            let s = seq.len();
            self.read(words(r), &mut seq);
            strong.extend_from_slice(&seq[s..]);
            seq.push(SEP);
        }
        for (r, is_error) in ew
            .keywords
            .iter()
            .map(|r| (r, false))
            .chain(ew.errors.iter().map(|r| (r, true)))
        {
            let s = seq.len();
            self.read(words(r), &mut seq);
            if seq.len() == s {
                continue;
            }
            let w = &seq[s..];
            strong.extend_from_slice(w);
            if is_error && w.len() >= 3 {
                self.errors.push((w.to_vec(), i));
            }
            mine.push(w.to_vec());
            seq.push(SEP);
        }
        for r in [&ew.cause, &ew.fix] {
            self.read(words(r), &mut seq);
            seq.push(SEP);
        }
        for (r, knob) in ew.knobs.iter().zip(&e.knobs) {
            self.read(words(r), &mut seq);
            seq.push(SEP);
            for ident in knob
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|t| t.contains('_') && t.len() >= 6)
            {
                let mut w = Vec::new();
                an.plain_into(ident, &mut w);
                mine.push(w);
            }
        }
        if let Some(r) = &ew.question {
            self.read(words(r), &mut seq);
            seq.push(SEP);
        }
        self.written
            .extend(seq.iter().copied().filter(|&w| w != SEP));
        // How users say it: words of what the problem looks like (strong), but neither
        // phrases naming the entry's subject (they are whole sentences) nor words that count
        // as known for typo correction (users' typos are kept on purpose: "traning").
        let mut phrases = Vec::with_capacity(ew.phrases.len());
        for r in &ew.phrases {
            let s = seq.len();
            for w in words(r) {
                if w.stem != LONG {
                    seq.push(w.stem);
                }
            }
            strong.extend_from_slice(&seq[s..]);
            let mut phrase = seq[s..].to_vec();
            phrase.sort_unstable();
            phrase.dedup();
            phrases.push(phrase);
            seq.push(SEP);
        }
        self.entry_phrases.push(phrases);
        let mut set: Vec<u32> = seq.iter().copied().filter(|&w| w != SEP).collect();
        set.sort_unstable();
        set.dedup();
        strong.sort_unstable();
        strong.dedup();
        self.concepts.push(mine);
        self.entry_seqs.push(seq);
        self.entry_sets.push(set);
        self.entry_strong.push(strong);
    }

    /// Stems of a vocabulary text (stop words kept), its words counted.
    fn vocab_text(&mut self, text: &str, an: &mut Stems, buf: &mut Vec<Word>) -> Vec<u32> {
        buf.clear();
        an.words_into(text, buf);
        if self.count.len() < an.lowers.len() {
            self.count.resize(an.lowers.len(), 0);
        }
        let mut out = Vec::new();
        self.read(buf, &mut out);
        out
    }

    /// Read the vocabulary (synonyms, cues, topics outside the catalog) and finish; the
    /// lexicon keeps the interned words.
    pub(super) fn finish(mut self, cat: &Catalog, mut an: Stems) -> Lexicon {
        let mut buf = Vec::new();
        let mut phrases = Vec::new();
        let mut groups = Vec::new();
        for (g, group) in cat.vocab.synonyms.iter().enumerate() {
            let mut members = Vec::new();
            for p in group {
                let w = self.vocab_text(p, &mut an, &mut buf);
                if !w.is_empty() {
                    phrases.push((w.clone(), g));
                    members.push(w);
                }
            }
            groups.push(members);
        }
        let mut cues = Vec::new();
        for (d, list) in &cat.vocab.cues {
            for c in list {
                let w = self.vocab_text(c, &mut an, &mut buf);
                if !w.is_empty() {
                    cues.push((w, *d));
                }
            }
        }
        let mut outside = Vec::new();
        let mut outside_together = Vec::new();
        for t in &cat.vocab.outside {
            for p in &t.phrases {
                let w = self.vocab_text(p, &mut an, &mut buf);
                if !w.is_empty() {
                    outside.push((w, t.topic.clone()));
                }
            }
            if !t.together.is_empty() {
                let lists: Vec<Vec<Vec<u32>>> = t
                    .together
                    .iter()
                    .map(|list| {
                        list.iter()
                            .map(|p| self.vocab_text(p, &mut an, &mut buf))
                            .filter(|w| !w.is_empty())
                            .collect()
                    })
                    .collect();
                outside_together.push((lists, t.topic.clone()));
            }
        }
        let mut methods = Vec::new();
        for (g, group) in cat.vocab.methods.iter().enumerate() {
            for m in group {
                let w = self.vocab_text(m, &mut an, &mut buf);
                if !w.is_empty() {
                    methods.push((w, g));
                }
            }
        }
        // An entry's scope: the methods its title names, not counting a parenthesised list
        // of examples ("Converted or exported model produces garbage (GGUF, merged LoRA)").
        let entry_methods: Vec<Vec<usize>> = cat
            .entries
            .iter()
            .map(|e| {
                let mut depth = 0i32;
                let bare: String = e
                    .title
                    .chars()
                    .map(|c| {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        if depth > 0 || c == ')' {
                            ' '
                        } else {
                            c
                        }
                    })
                    .collect();
                buf.clear();
                an.words_into(&bare, &mut buf);
                let title: Vec<u32> = buf.iter().map(|w| w.stem).collect();
                let mut groups: Vec<usize> = methods
                    .iter()
                    .filter(|(m, _)| contains_run(&title, m))
                    .map(|(_, g)| *g)
                    .collect();
                groups.dedup();
                groups
            })
            .collect();
        let (stems, lowers) = an.into_strings();
        let mut count = self.count;
        count.resize(lowers.len(), 0);
        let mut known = vec![false; stems.len()];
        for &w in &self.written {
            known[w as usize] = true;
        }
        let mut df = vec![0u32; stems.len()];
        for set in &self.entry_sets {
            for &w in set {
                df[w as usize] += 1;
            }
        }
        let vocab = phrases
            .iter()
            .map(|p| &p.0)
            .chain(cues.iter().map(|c| &c.0))
            .chain(outside.iter().map(|o| &o.0))
            .chain(methods.iter().map(|m| &m.0));
        for p in vocab {
            for &w in p {
                known[w as usize] = true;
            }
        }
        let stems = Arc::new(stems);
        Lexicon {
            entry_sets: WordSets::new(self.entry_sets, &stems),
            entry_strong: WordSets::new(self.entry_strong, &stems),
            entry_phrases: self.entry_phrases,
            stems,
            lowers,
            raw_count: count,
            by_len: OnceLock::new(),
            known,
            df,
            phrases,
            groups,
            cues,
            outside,
            outside_together,
            methods,
            entry_methods,
            entry_phases: cat
                .entries
                .iter()
                .map(|e| phase::phases(&e.title))
                .collect(),
            errors: self.errors,
            concepts: self.concepts,
            entry_seqs: self.entry_seqs,
            df_cache: Mutex::new(HashMap::new()),
        }
    }
}

impl Lexicon {
    /// Build from the catalog alone (the index builds it in the same walk as its segment).
    #[cfg(test)]
    pub(super) fn build(cat: &Catalog) -> Lexicon {
        let mut an = Stems::new();
        let mut b = LexiconBuilder::new(cat.entries.len());
        let mut ew = EntryWords::default();
        for e in &cat.entries {
            ew.read(e, &mut an);
            b.add(e, &ew, &mut an);
        }
        b.finish(cat, an)
    }

    /// Every stem some entry holds, with the number of entries holding it.
    pub(super) fn doc_freqs(&self) -> impl Iterator<Item = (&str, u32)> {
        self.stems
            .iter()
            .zip(&self.df)
            .filter(|(_, &d)| d > 0)
            .map(|((_, s), &d)| (s, d))
    }

    /// The words the catalog and the vocabulary use, by length, most used first (then
    /// alphabetical).
    fn by_len(&self) -> &ByLen {
        self.by_len.get_or_init(|| {
            let mut by_len = ByLen::new();
            for ((_, w), &f) in self.lowers.iter().zip(&self.raw_count) {
                if f == 0 {
                    continue;
                }
                let c: Vec<char> = w.chars().collect();
                if c.len() >= 3 && c.iter().all(|x| x.is_ascii_alphabetic()) {
                    by_len
                        .entry(c.len())
                        .or_default()
                        .push((c, f, w.to_string()));
                }
            }
            for v in by_len.values_mut() {
                // Deterministic order: most frequent first, then alphabetical.
                v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(&b.2)));
            }
            by_len
        })
    }

    /// The id of an analysed word, if some analysed text holds it.
    pub(super) fn stem_id(&self, stem: &str) -> Option<u32> {
        self.stems.id(stem)
    }

    /// The largest share of the query's weight that one users' phrase of entry `i` explains
    /// (`words`: each query word's weight with the stem ids that count for it, itself and the
    /// synonyms it triggered). A phrase about another quantity than the query reports (one
    /// of `subjects`, groups of stem ids) does not count: "lr remains constant" is not "loss
    /// remains constant".
    pub(super) fn phrase_share(
        &self,
        i: usize,
        words: &[(f32, Vec<u32>)],
        subjects: &[Vec<u32>],
    ) -> f32 {
        let total: f32 = words.iter().map(|w| w.0).sum();
        if total <= 0.0 {
            return 0.0;
        }
        self.entry_phrases[i]
            .iter()
            .filter(|p| {
                subjects
                    .iter()
                    .all(|g| g.iter().any(|w| p.binary_search(w).is_ok()))
            })
            .map(|p| {
                words
                    .iter()
                    .filter(|(_, ids)| ids.iter().any(|w| p.binary_search(w).is_ok()))
                    .map(|w| w.0)
                    .sum::<f32>()
                    / total
            })
            .fold(0.0, f32::max)
    }

    /// The stems behind ids.
    fn strings(&self, ids: &[u32]) -> Vec<String> {
        ids.iter().map(|&w| self.stems.get(w).to_string()).collect()
    }

    /// How many entries contain `phrase` word for word.
    fn phrase_df(&self, phrase: &[u32]) -> usize {
        if let Some(n) = self
            .df_cache
            .lock()
            .ok()
            .and_then(|c| c.get(phrase).copied())
        {
            return n;
        }
        let n = self.count_phrase(phrase);
        if let Ok(mut c) = self.df_cache.lock() {
            c.insert(phrase.to_vec(), n);
        }
        n
    }

    fn count_phrase(&self, phrase: &[u32]) -> usize {
        self.entry_sets
            .ids
            .iter()
            .zip(&self.entry_seqs)
            .filter(|(set, seq)| {
                phrase.iter().all(|&w| WordSets::contains(set, w)) && contains_run(seq, phrase)
            })
            .count()
    }

    /// A phrase names a subject when few entries use it: one word in at most `WORD_DF`
    /// entries, several words in at most `PHRASE_DF`.
    fn specific(&self, phrase: &[u32]) -> bool {
        if phrase.len() > 1 {
            // "model train" is in few entries word for word, but both words are everywhere.
            phrase.iter().any(|&w| self.word_df(w) <= COMMON_DF)
                && self.phrase_df(phrase) <= PHRASE_DF
        } else {
            self.phrase_df(phrase) <= WORD_DF
        }
    }

    fn word_df(&self, w: u32) -> usize {
        self.df.get(w as usize).map_or(0, |&d| d as usize)
    }

    /// Does the query name a subject of entry `entry`: one of its keyword phrases, error
    /// strings or knob identifiers word for word, or a synonym group with a phrase in one of
    /// them? Only specific phrases count (used by few entries; for a group both the phrase the
    /// query used and the one the entry holds, and no member of the group may be common), so
    /// "model train" or "image" alone never make a match confident.
    /// Is this analysed word one that says where the trouble is (a one-word domain cue or
    /// method name: "sft", "yolo", "lora"), not what it is?
    pub(super) fn is_context_word(&self, stem: &str) -> bool {
        let Some(id) = self.stems.id(stem) else {
            return false;
        };
        self.cues.iter().any(|(c, _)| c.as_slice() == [id])
            || self.methods.iter().any(|(m, _)| m.as_slice() == [id])
    }

    pub(super) fn names_concept(&self, plan: &Plan, entry: usize) -> bool {
        let Some(mine) = self.concepts.get(entry) else {
            return false;
        };
        if mine
            .iter()
            .any(|k| contains_run(&plan.ids, k) && self.specific(k))
        {
            return true;
        }
        plan.triggers.iter().any(|&(g, p)| {
            let members = &self.groups[g];
            self.specific(&self.phrases[p].0)
                && members.iter().all(|p| self.phrase_df(p) <= COMMON_DF)
                && members
                    .iter()
                    .any(|p| mine.iter().any(|k| contains_run(k, p)) && self.specific(p))
        })
    }

    /// The nearest catalog word to an unknown typed word (one edit up to 7 letters, two from
    /// 8) with the same first letter, most frequent first; None when the word is known,
    /// shorter than 5 letters (short words have too many neighbours), or nothing is near.
    fn correct(&self, word: &str, an: &mut TextAnalyzer) -> Option<String> {
        let n = word.chars().count();
        if n < 5
            || !word.chars().all(|c| c.is_ascii_alphabetic())
            || self
                .lowers
                .id(word)
                .is_some_and(|id| self.raw_count[id as usize] > 0)
        {
            return None;
        }
        if words(an, word)
            .iter()
            .all(|s| self.stems.id(s).is_some_and(|id| self.known[id as usize]))
        {
            return None;
        }
        let max = if n >= 8 { 2 } else { 1 };
        let a: Vec<char> = word.chars().collect();
        let mut best: Option<(usize, u32, &str)> = None;
        let by_len = self.by_len();
        for len in n.saturating_sub(max)..=n + max {
            for (b, freq, cand) in by_len.get(&len).into_iter().flatten() {
                // Typos rarely touch the first letter; checking it first keeps this cheap
                // enough to run on every keystroke.
                if b.first() != a.first() {
                    continue;
                }
                if let Some(d) = osa_within(&a, b, max) {
                    // Nearest first, then the word the catalog uses most.
                    if best.is_none_or(|(bd, bf, _)| d < bd || (d == bd && *freq > bf)) {
                        best = Some((d, *freq, cand));
                    }
                }
            }
        }
        best.map(|b| b.2.to_string())
    }

    /// Plan a query: correct, expand, find cues and quoted error strings.
    pub(super) fn plan(&self, query: &str, half_typed: bool) -> Plan {
        let mut an = plain_analyzer();
        let mut plan = Plan {
            phases: phase::phases(query),
            ..Plan::default()
        };
        let mut corrected = String::with_capacity(query.len());
        let mut at = 0;
        let lower = query.to_lowercase();
        let ws: Vec<(usize, &str)> = raw_words(&lower).collect();
        for (k, (pos, w)) in ws.iter().enumerate() {
            // The word being typed is completed by prefix matching, not corrected.
            let last = half_typed && k + 1 == ws.len();
            corrected.push_str(&lower[at..*pos]);
            match (!last).then(|| self.correct(w, &mut an)).flatten() {
                Some(c) => {
                    plan.corrections.push((w.to_string(), c.clone()));
                    corrected.push_str(&c);
                }
                None => corrected.push_str(w),
            }
            at = pos + w.len();
        }
        corrected.push_str(&lower[at..]);
        let seq = words(&mut an, &corrected);
        let ids: Vec<u32> = seq
            .iter()
            .map(|s| self.stems.id(s).unwrap_or(UNKNOWN))
            .collect();

        let mut seen_groups = HashSet::new();
        for (k, (p, g)) in self.phrases.iter().enumerate() {
            if seen_groups.contains(g) || !contains_run(&ids, p) {
                continue;
            }
            seen_groups.insert(*g);
            let trigger = self.strings(p);
            for other in &self.groups[*g] {
                if !contains_run(&ids, other) {
                    plan.expansions
                        .push((trigger.clone(), self.strings(other).join(" ")));
                }
            }
            plan.groups.push((*g, trigger));
            plan.triggers.push((*g, k));
        }
        // A loss that sits at ln C is a model predicting uniformly over C classes (ln 2 = 0.693,
        // ln 10 = 2.30, ln 1000 = 6.91, ln 32000 = 10.37): the number says "chance", so the
        // query also searches the entries that compare the loss with ln V.
        if seq.iter().any(|w| w == "loss") {
            for num in decimals(&lower) {
                if uniform_loss(num) {
                    let trigger = words(&mut an, num);
                    if !trigger.is_empty() {
                        plan.expansions.push((trigger, "uniform".to_string()));
                    }
                    break;
                }
            }
        }
        for (c, d) in &self.cues {
            // A one-word cue also matches a word it starts (yolov8n, llama3.1, sdxl-turbo).
            let hit = contains_run(&ids, c)
                || (c.len() == 1 && {
                    let c0 = self.stems.get(c[0]);
                    c0.len() >= 4 && seq.iter().any(|w| w.starts_with(c0))
                });
            if hit && !plan.domains.contains(d) {
                plan.domains.push(*d);
            }
        }
        for (err, entry) in &self.errors {
            let run = longest_common_run(&ids, err);
            if run >= PHRASE_MIN.min(err.len()) {
                match plan.quoted.iter_mut().find(|(e, _)| e == entry) {
                    Some(q) => q.1 = q.1.max(run),
                    None => plan.quoted.push((*entry, run)),
                }
            }
        }
        plan.outside = self
            .outside
            .iter()
            .find(|(p, _)| contains_loose_run(&ids, p))
            .map(|(_, t)| t.clone())
            .or_else(|| {
                self.outside_together
                    .iter()
                    .find(|(lists, _)| {
                        lists
                            .iter()
                            .all(|list| list.iter().any(|p| contains_run(&ids, p)))
                    })
                    .map(|(_, t)| t.clone())
            });
        for (m, g) in &self.methods {
            if !plan.methods.contains(g) && contains_run(&ids, m) {
                plan.methods.push(*g);
            }
        }
        plan.corrected = corrected;
        plan.words = seq;
        plan.ids = ids;
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn a_loss_at_ln_c_reads_as_uniform() {
        for n in [
            "0.693", "0.6931", "2.30", "2.3", "6.9", "6.91", "10.37", "10.82",
        ] {
            assert!(uniform_loss(n), "{n}");
        }
        for n in ["3.0", "0.9", "2.5", "6.5", "1.0", "0.75"] {
            assert!(!uniform_loss(n), "{n}");
        }
        let found: Vec<&str> =
            decimals("loss stays at 2.30, llama-3.1 v1.5 with torch 2.1.0 (lr=0.001).").collect();
        assert_eq!(found, ["2.30", "0.001"]);
        let lex = Lexicon::build(&Catalog::embedded().unwrap());
        let p = lex.plan("Loss stuck at ~6.90", false);
        assert!(
            p.expansions.iter().any(|(_, e)| e == "uniform"),
            "{:?}",
            p.expansions
        );
        let p = lex.plan("accuracy stuck at 6.90", false);
        assert!(!p.expansions.iter().any(|(_, e)| e == "uniform"));
    }

    #[test]
    fn osa_counts_a_transposition_as_one_edit() {
        assert_eq!(osa_within(&chars("bacth"), &chars("batch"), 1), Some(1));
        assert_eq!(
            osa_within(&chars("traning"), &chars("training"), 1),
            Some(1)
        );
        assert_eq!(osa_within(&chars("ouput"), &chars("output"), 1), Some(1));
        assert_eq!(osa_within(&chars("cosine"), &chars("warmup"), 2), None);
    }

    #[test]
    fn runs_are_found_in_order() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(contains_run(
            &s(&["no", "detect", "at", "all"]),
            &s(&["no", "detect"])
        ));
        assert!(!contains_run(&s(&["detect", "no"]), &s(&["no", "detect"])));
        assert_eq!(
            longest_common_run(
                &s(&["x", "address", "alreadi", "in", "use"]),
                &s(&["address", "alreadi", "in", "use"])
            ),
            4
        );
    }

    #[test]
    fn loose_runs_allow_one_word_between() {
        let hay = ["infer", "is", "terribl", "slow", "today"];
        assert!(contains_loose_run(&hay, &["infer", "is", "slow"]));
        assert!(!contains_loose_run(&hay, &["infer", "slow"]));
        assert!(contains_loose_run(&hay, &["slow"]));
        assert!(!contains_loose_run(&hay, &["slow", "infer"]));
        assert!(!contains_loose_run::<&str>(&hay, &[]));
    }

    #[test]
    fn typos_are_corrected_to_catalog_words_and_known_words_are_kept() {
        let cat = Catalog::embedded().unwrap();
        let lex = Lexicon::build(&cat);
        // "traning" is in users' phrases (kept as written), which never make a word known.
        assert!(cat
            .entries
            .iter()
            .any(|e| e.phrases.iter().any(|p| p.contains("Traning"))));
        let p = lex.plan("traning rate bacth size", false);
        assert!(p.corrected.contains("training"), "{p:?}");
        assert!(p.corrected.contains("batch"), "{p:?}");
        assert_eq!(p.corrections.len(), 2, "{p:?}");
        let p = lex.plan("learning rate warmup", false);
        assert!(p.corrections.is_empty(), "{p:?}");
    }

    #[test]
    fn synonyms_cues_and_quoted_errors_are_planned() {
        let cat = Catalog::embedded().unwrap();
        let lex = Lexicon::build(&cat);
        let p = lex.plan("loss exploding after 2k steps", false);
        assert!(p.expansions.iter().any(|e| e.1.contains("spike")), "{p:?}");
        let p = lex.plan("yolov8 returns nothing", false);
        assert!(p.domains.contains(&Domain::Vision), "{p:?}");
        let p = lex.plan("RuntimeError: Address already in use", false);
        let d5 = cat.entries.iter().position(|e| e.id == "D5").unwrap();
        assert!(p.quoted.iter().any(|(e, _)| *e == d5), "{p:?}");
    }
}
