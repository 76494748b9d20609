//! Query planning over the catalog's own words: typo correction for words the catalog lacks,
//! synonym groups and domain cues from the playbook vocabulary (matched as phrases), and entry
//! error strings recognised when a query quotes a run of them.

use std::collections::{HashMap, HashSet};

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};

use crate::catalog::{Catalog, Domain};

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

/// Vocabulary built once per index.
pub(super) struct Lexicon {
    /// Lower-cased words as they appear in the catalog and the vocabulary, with counts.
    raw: HashMap<String, u32>,
    /// The same words as characters, grouped by length, for correction.
    by_len: HashMap<usize, Vec<(Vec<char>, u32, String)>>,
    /// Stemmed words of the catalog (stop words kept).
    stems: HashSet<String>,
    /// Each synonym phrase (stemmed words) with its group.
    phrases: Vec<(Vec<String>, usize)>,
    /// Group -> its phrases.
    groups: Vec<Vec<Vec<String>>>,
    /// Cue phrase -> domain.
    cues: Vec<(Vec<String>, Domain)>,
    /// Phrases naming a kind of problem outside the catalog, with the topic's name.
    outside: Vec<(Vec<String>, String)>,
    /// Error strings (stemmed words) with the index of their entry.
    errors: Vec<(Vec<String>, usize)>,
    /// Per entry: the phrases that name its subject (keywords, error strings, identifiers in
    /// its knobs), as stemmed words.
    concepts: Vec<Vec<Vec<String>>>,
    /// Per entry: all its text as stemmed words ("|" between fields), and the same as a set.
    entry_seqs: Vec<Vec<String>>,
    pub(super) entry_sets: Vec<HashSet<String>>,
    /// Per entry: the words of what it shows (title, symptom, keywords, errors).
    pub(super) entry_strong: Vec<HashSet<String>>,
    /// Phrase -> number of entries holding it, filled as queries ask (the same synonym groups
    /// come back keystroke after keystroke).
    df_cache: std::sync::Mutex<HashMap<Vec<String>, usize>>,
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
fn contains_run(hay: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Longest contiguous run shared by `a` and `b`.
fn longest_common_run(a: &[String], b: &[String]) -> usize {
    let mut best = 0;
    let mut prev = vec![0usize; b.len() + 1];
    for x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            if x == y {
                cur[j + 1] = prev[j] + 1;
                best = best.max(cur[j + 1]);
            }
        }
        prev = cur;
    }
    best
}

/// Count a word lower-cased, allocating only for a word not seen before.
fn count_word(raw: &mut HashMap<String, u32>, w: &str) {
    if w.bytes().all(|b| !b.is_ascii_uppercase()) {
        if let Some(n) = raw.get_mut(w) {
            *n += 1;
            return;
        }
    }
    *raw.entry(w.to_lowercase()).or_default() += 1;
}

impl Lexicon {
    #[cfg(test)]
    pub(super) fn build(cat: &Catalog) -> Lexicon {
        Self::build_with(cat, &mut super::analyse::Stems::new())
    }

    /// Build with the index's memoised analysis (each distinct word stemmed once).
    pub(super) fn build_with(cat: &Catalog, an: &mut super::analyse::Stems) -> Lexicon {
        let mut raw: HashMap<String, u32> = HashMap::new();
        let mut stems = HashSet::new();
        let mut count_raw = |text: &str| {
            for (_, w) in raw_words(text) {
                count_word(&mut raw, w);
            }
        };
        let mut errors = Vec::new();
        let mut concepts = Vec::with_capacity(cat.entries.len());
        let mut entry_seqs = Vec::with_capacity(cat.entries.len());
        let mut entry_strong = Vec::with_capacity(cat.entries.len());
        for (i, e) in cat.entries.iter().enumerate() {
            // Each text is analysed once; the pieces feed the sequence, the subject phrases,
            // the quoted-error table and the word sets.
            let mut seq = Vec::new();
            let mut strong = HashSet::new();
            let mut mine: Vec<Vec<String>> = Vec::new();
            for t in [&e.title, &e.symptom] {
                count_raw(t);
                let w = an.plain(t);
                strong.extend(w.iter().cloned());
                seq.extend(w);
                seq.push("|".to_string());
            }
            for (k, is_error) in e
                .keywords
                .iter()
                .map(|k| (k, false))
                .chain(e.errors.iter().map(|k| (k, true)))
            {
                count_raw(k);
                let w = an.plain(k);
                if w.is_empty() {
                    continue;
                }
                strong.extend(w.iter().cloned());
                seq.extend(w.iter().cloned());
                seq.push("|".to_string());
                if is_error && w.len() >= 3 {
                    errors.push((w.clone(), i));
                }
                mine.push(w);
            }
            for t in [&e.cause, &e.fix] {
                count_raw(t);
                seq.extend(an.plain(t));
                seq.push("|".to_string());
            }
            for knob in &e.knobs {
                count_raw(knob);
                seq.extend(an.plain(knob));
                seq.push("|".to_string());
                for ident in knob
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|t| t.contains('_') && t.len() >= 6)
                {
                    mine.push(an.plain(ident));
                }
            }
            if let Some(q) = &e.question {
                count_raw(q);
                seq.extend(an.plain(q));
            }
            stems.extend(seq.iter().filter(|w| *w != "|").cloned());
            concepts.push(mine);
            entry_seqs.push(seq);
            entry_strong.push(strong);
        }
        let mut add_text = |text: &str, an: &mut super::analyse::Stems| {
            for (_, w) in raw_words(text) {
                count_word(&mut raw, w);
            }
            let w = an.plain(text);
            stems.extend(w.iter().cloned());
            w
        };
        let mut phrases = Vec::new();
        let mut groups = Vec::new();
        for (g, group) in cat.vocab.synonyms.iter().enumerate() {
            let mut members = Vec::new();
            for p in group {
                let w = add_text(p, an);
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
                let w = add_text(c, an);
                if !w.is_empty() {
                    cues.push((w, *d));
                }
            }
        }
        let mut outside = Vec::new();
        for t in &cat.vocab.outside {
            for p in &t.phrases {
                let w = add_text(p, an);
                if !w.is_empty() {
                    outside.push((w, t.topic.clone()));
                }
            }
        }
        let mut by_len: HashMap<usize, Vec<(Vec<char>, u32, String)>> = HashMap::new();
        for (w, &f) in &raw {
            let c: Vec<char> = w.chars().collect();
            if c.len() >= 3 && c.iter().all(|x| x.is_ascii_alphabetic()) {
                by_len.entry(c.len()).or_default().push((c, f, w.clone()));
            }
        }
        for v in by_len.values_mut() {
            // Deterministic order: most frequent first, then alphabetical.
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(&b.2)));
        }
        let entry_sets = entry_seqs
            .iter()
            .map(|s| s.iter().filter(|w| *w != "|").cloned().collect())
            .collect();
        Lexicon {
            raw,
            by_len,
            stems,
            phrases,
            groups,
            cues,
            outside,
            errors,
            concepts,
            entry_seqs,
            entry_sets,
            entry_strong,
            df_cache: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// How many entries contain `phrase` word for word.
    fn phrase_df(&self, phrase: &[String]) -> usize {
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

    fn count_phrase(&self, phrase: &[String]) -> usize {
        self.entry_sets
            .iter()
            .zip(&self.entry_seqs)
            .filter(|(set, seq)| {
                phrase.iter().all(|w| set.contains(w)) && contains_run(seq, phrase)
            })
            .count()
    }

    /// A phrase names a subject when few entries use it: one word in at most `WORD_DF`
    /// entries, several words in at most `PHRASE_DF`.
    fn specific(&self, phrase: &[String]) -> bool {
        if phrase.len() > 1 {
            // "model train" is in few entries word for word, but both words are everywhere.
            phrase.iter().any(|w| self.word_df(w) <= COMMON_DF)
                && self.phrase_df(phrase) <= PHRASE_DF
        } else {
            self.phrase_df(phrase) <= WORD_DF
        }
    }

    fn word_df(&self, w: &String) -> usize {
        self.entry_sets.iter().filter(|s| s.contains(w)).count()
    }

    /// Does the query name a subject of entry `entry`: one of its keyword phrases, error
    /// strings or knob identifiers word for word, or a synonym group with a phrase in one of
    /// them? Only specific phrases count (used by few entries; for a group both the phrase the
    /// query used and the one the entry holds, and no member of the group may be common), so
    /// "model train" or "image" alone never make a match confident.
    pub(super) fn names_concept(&self, plan: &Plan, entry: usize) -> bool {
        let Some(mine) = self.concepts.get(entry) else {
            return false;
        };
        if mine
            .iter()
            .any(|k| contains_run(&plan.words, k) && self.specific(k))
        {
            return true;
        }
        plan.groups.iter().any(|(g, trigger)| {
            let members = &self.groups[*g];
            self.specific(trigger)
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
        if n < 5 || !word.chars().all(|c| c.is_ascii_alphabetic()) || self.raw.contains_key(word) {
            return None;
        }
        if words(an, word).iter().all(|s| self.stems.contains(s)) {
            return None;
        }
        let max = if n >= 8 { 2 } else { 1 };
        let a: Vec<char> = word.chars().collect();
        let mut best: Option<(usize, u32, &str)> = None;
        for len in n.saturating_sub(max)..=n + max {
            for (b, freq, cand) in self.by_len.get(&len).into_iter().flatten() {
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
        let mut plan = Plan::default();
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

        let mut seen_groups = HashSet::new();
        for (p, g) in &self.phrases {
            if seen_groups.contains(g) || !contains_run(&seq, p) {
                continue;
            }
            seen_groups.insert(*g);
            plan.groups.push((*g, p.clone()));
            for other in &self.groups[*g] {
                if !contains_run(&seq, other) {
                    plan.expansions.push((p.clone(), other.join(" ")));
                }
            }
        }
        for (c, d) in &self.cues {
            // A one-word cue also matches a word it starts (yolov8n, llama3.1, sdxl-turbo).
            let hit = contains_run(&seq, c)
                || (c.len() == 1
                    && c[0].len() >= 4
                    && seq.iter().any(|w| w.starts_with(c[0].as_str())));
            if hit && !plan.domains.contains(d) {
                plan.domains.push(*d);
            }
        }
        for (err, entry) in &self.errors {
            let run = longest_common_run(&seq, err);
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
            .find(|(p, _)| contains_run(&seq, p))
            .map(|(_, t)| t.clone());
        plan.corrected = corrected;
        plan.words = seq;
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
    fn typos_are_corrected_to_catalog_words_and_known_words_are_kept() {
        let cat = Catalog::embedded().unwrap();
        let lex = Lexicon::build(&cat);
        let p = lex.plan("traning loss bacth size", false);
        assert!(p.corrected.contains("training"), "{p:?}");
        assert!(p.corrected.contains("batch"), "{p:?}");
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
