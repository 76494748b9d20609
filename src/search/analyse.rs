//! The catalog's text analysed once per index: tantivy's simple tokenizer rules (runs of
//! alphanumeric characters), lower-cased and stemmed (English), with English stop words
//! marked rather than removed; tokens of 40 bytes or more get no stem (the analyzers drop
//! them) but are still counted as typed words. Each distinct word is analysed once (a catalog
//! of 400 kB holds about 60,000 words but a few thousand distinct ones) and interned: a word
//! is a pair of ids (its stem, its lower-cased form), so the index text and the query-plan
//! lexicon are built from ids instead of a `String` per word.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::Arc;

use tantivy::tokenizer::{
    Language, LowerCaser, SimpleTokenizer, StopWordFilter, TextAnalyzer, TokenStream,
};

use crate::catalog::Entry;

/// A multiply-rotate hash taking 8 bytes a step (the one rustc uses for its own tables): the
/// memo's keys are short words hashed over a hundred thousand times per start, where SipHash's
/// set-up, or a byte-at-a-time hash, costs milliseconds; nothing here is keyed by untrusted
/// input at scale (a query is capped at 2000 characters).
#[derive(Default)]
pub(super) struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

pub(super) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// The stem id of a token of 40 bytes or more (it has none).
pub(super) const LONG: u32 = u32::MAX;

/// A word of a text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Word {
    /// Index into [`Strings`] of lower-cased words (the word as typed, `str::to_lowercase`).
    pub lower: u32,
    /// Index into [`Strings`] of stems, or [`LONG`].
    pub stem: u32,
    /// An English stop word (left out of the index, kept by the query plan).
    pub stop: bool,
}

/// Interned strings: id -> string and string -> id (one allocation per distinct string).
#[derive(Default)]
pub(super) struct Strings {
    all: Vec<Arc<str>>,
    ids: FastMap<Arc<str>, u32>,
}

impl Strings {
    fn with_capacity(n: usize) -> Strings {
        Strings {
            all: Vec::with_capacity(n),
            ids: FastMap::with_capacity_and_hasher(n, Default::default()),
        }
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.all.len() as u32;
        let s: Arc<str> = Arc::from(s);
        self.ids.insert(s.clone(), id);
        self.all.push(s);
        id
    }

    /// The string behind an id.
    pub(super) fn get(&self, id: u32) -> &str {
        &self.all[id as usize]
    }

    /// The id of a string, if it was interned.
    pub(super) fn id(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    pub(super) fn len(&self) -> usize {
        self.all.len()
    }

    /// Every string with its id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.all.iter().enumerate().map(|(i, s)| (i as u32, &**s))
    }
}

/// The English stop words of tantivy's `StopWordFilter` (Lucene's list), sorted: the index
/// leaves them out. Checked here for ASCII words (a non-ASCII word goes through the filter
/// itself); a test holds the two to the same answer on every word of the catalog.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// No stem analysed yet for a lower-cased word.
const UNSEEN: (u32, bool) = (u32::MAX, false);

/// Memoised analysis of words.
pub(super) struct Stems {
    /// Token as typed -> its analysis.
    memo: FastMap<String, Word>,
    pub(super) stems: Strings,
    pub(super) lowers: Strings,
    /// By lower-cased word id: (stem, stop) of an ASCII word (for ASCII text the analysis
    /// depends on the lower-cased word alone: "Loss" and "loss" are stemmed once).
    ascii: Vec<(u32, bool)>,
    /// Lower-casing and the stop-word list only (is a non-ASCII word a stop word?).
    stop_an: TextAnalyzer,
    plain_an: TextAnalyzer,
    lower_buf: String,
}

impl Stems {
    pub(super) fn new() -> Stems {
        Stems {
            memo: FastMap::with_capacity_and_hasher(8192, Default::default()),
            stems: Strings::with_capacity(8192),
            lowers: Strings::with_capacity(8192),
            ascii: Vec::with_capacity(8192),
            stop_an: {
                let b = TextAnalyzer::builder(SimpleTokenizer::default())
                    .filter(LowerCaser)
                    .dynamic();
                match StopWordFilter::new(Language::English) {
                    Some(sw) => b.filter_dynamic(sw).build(),
                    None => b.build(),
                }
            },
            plain_an: super::plan::plain_analyzer(),
            lower_buf: String::with_capacity(64),
        }
    }

    /// Analyse one raw token (a run of alphanumeric characters) once.
    fn word(&mut self, raw: &str) -> Word {
        if let Some(&w) = self.memo.get(raw) {
            return w;
        }
        let ascii = raw.is_ascii();
        let buf = &mut self.lower_buf;
        buf.clear();
        if ascii {
            buf.push_str(raw);
            buf.make_ascii_lowercase();
        } else {
            buf.push_str(&raw.to_lowercase());
        }
        let lower = self.lowers.intern(buf);
        if self.ascii.len() < self.lowers.len() {
            self.ascii.resize(self.lowers.len(), UNSEEN);
        }
        let (stem, stop) = if raw.len() >= 40 {
            (LONG, false)
        } else if ascii && self.ascii[lower as usize] != UNSEEN {
            self.ascii[lower as usize]
        } else {
            let mut ts = self.plain_an.token_stream(raw);
            let stem = match ts.advance() {
                true => self.stems.intern(&ts.token().text),
                false => self.stems.intern(""),
            };
            let stop = if ascii {
                STOP_WORDS.binary_search(&buf.as_str()).is_ok()
            } else {
                !self.stop_an.token_stream(raw).advance()
            };
            if ascii {
                self.ascii[lower as usize] = (stem, stop);
            }
            (stem, stop)
        };
        let w = Word { lower, stem, stop };
        self.memo.insert(raw.to_string(), w);
        w
    }

    /// Append the words of a text, in order (tokens of 40 bytes or more included, with
    /// [`LONG`] for a stem).
    pub(super) fn words_into(&mut self, text: &str, out: &mut Vec<Word>) {
        let mut start = None;
        for (i, c) in text.char_indices() {
            if c.is_alphanumeric() {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                out.push(self.word(&text[s..i]));
            }
        }
        if let Some(s) = start {
            out.push(self.word(&text[s..]));
        }
    }

    /// Append the stems of a text with stop words kept (the query plan's words).
    pub(super) fn plain_into(&mut self, text: &str, out: &mut Vec<u32>) {
        let mut start = None;
        for (i, c) in text.char_indices() {
            if c.is_alphanumeric() {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                let w = self.word(&text[s..i]);
                if w.stem != LONG {
                    out.push(w.stem);
                }
            }
        }
        if let Some(s) = start {
            let w = self.word(&text[s..]);
            if w.stem != LONG {
                out.push(w.stem);
            }
        }
    }

    /// The interned stems and lower-cased words (the memo and analyzers are dropped).
    pub(super) fn into_strings(self) -> (Strings, Strings) {
        (self.stems, self.lowers)
    }
}

/// One entry's texts as words, analysed once for both the index and the lexicon: ranges into
/// `words`, one per text (a list field: one per item).
#[derive(Default)]
pub(super) struct EntryWords {
    pub words: Vec<Word>,
    pub title: Range<usize>,
    pub symptom: Range<usize>,
    pub keywords: Vec<Range<usize>>,
    pub knobs: Vec<Range<usize>>,
    pub phrases: Vec<Range<usize>>,
    pub errors: Vec<Range<usize>>,
    pub question: Option<Range<usize>>,
    /// The threshold and the leaves' `when` (searched with the question; the lexicon does not
    /// read them).
    pub question_more: Vec<Range<usize>>,
    pub cause: Range<usize>,
    pub fix: Range<usize>,
}

impl EntryWords {
    /// Analyse an entry's texts, reusing this value's buffers.
    pub(super) fn read(&mut self, e: &Entry, an: &mut Stems) {
        let w = &mut self.words;
        w.clear();
        let mut one = |w: &mut Vec<Word>, text: &str| {
            let s = w.len();
            an.words_into(text, w);
            s..w.len()
        };
        self.title = one(w, &e.title);
        self.symptom = one(w, &e.symptom);
        for (out, list) in [
            (&mut self.keywords, &e.keywords),
            (&mut self.knobs, &e.knobs),
            (&mut self.phrases, &e.phrases),
            (&mut self.errors, &e.errors),
        ] {
            out.clear();
            out.extend(list.iter().map(|t| one(w, t)));
        }
        self.question = e.question.as_deref().map(|q| one(w, q));
        self.question_more.clear();
        if let Some(t) = &e.threshold {
            self.question_more.push(one(w, t));
        }
        for l in &e.leaves {
            self.question_more.push(one(w, &l.when));
        }
        self.cause = one(w, &e.cause);
        self.fix = one(w, &e.fix);
    }

    /// Append the words of `ranges` as the index's whitespace tokenizer reads them: stems
    /// joined by spaces, stop words and long tokens left out (as the query analyzer leaves
    /// them out).
    pub(super) fn index_text(
        &self,
        ranges: &mut dyn Iterator<Item = &Range<usize>>,
        an: &Stems,
        out: &mut String,
    ) {
        for r in ranges {
            for w in &self.words[r.clone()] {
                if !w.stop && w.stem != LONG {
                    out.push_str(an.stems.get(w.stem));
                    out.push(' ');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memoised analysis gives exactly what the two analyzers give.
    #[test]
    fn memoised_words_match_the_analyzers() {
        let text = "The LOSS is NaN after lr_scheduler.step(); loss Loss, exploding gradients, \
                    yolov8n mAP=0 — ünïcode wörds ΣΑΣ and a veryveryveryveryveryveryveryverylongword1";
        let mut st = Stems::new();
        let mut an = super::super::plan::plain_analyzer();
        let mut expect = Vec::new();
        let mut ts = an.token_stream(text);
        while ts.advance() {
            expect.push(ts.token().text.clone());
        }
        let mut ids = Vec::new();
        st.plain_into(text, &mut ids);
        let got: Vec<&str> = ids.iter().map(|&i| st.stems.get(i)).collect();
        assert_eq!(got, expect);
        let mut an = super::super::analyzer();
        let mut expect = String::new();
        let mut ts = an.token_stream(text);
        while ts.advance() {
            expect.push_str(&ts.token().text);
            expect.push(' ');
        }
        let mut ew = EntryWords::default();
        st.words_into(text, &mut ew.words);
        let mut got = String::new();
        ew.index_text(&mut std::iter::once(&(0..ew.words.len())), &st, &mut got);
        assert_eq!(got, expect);
        assert!(!got.contains("the "), "{got}");
        // Every token is a word with its lower-cased form, long ones too (no stem).
        let mut words = Vec::new();
        st.words_into(text, &mut words);
        let lowers: Vec<&str> = words.iter().map(|w| st.lowers.get(w.lower)).collect();
        let raw: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        assert_eq!(lowers, raw);
        assert_eq!(words.last().map(|w| w.stem), Some(LONG));
        assert_eq!(st.lowers.id("loss"), Some(words[1].lower));
    }

    /// The stop-word list and the per-lower-cased-word stems agree with the analyzers on every
    /// word of the catalog.
    #[test]
    fn shortcuts_agree_with_the_analyzers_on_the_catalog() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        let cat = crate::catalog::Catalog::embedded().unwrap();
        let mut st = Stems::new();
        let mut ew = EntryWords::default();
        for e in &cat.entries {
            ew.read(e, &mut st);
        }
        for s in STOP_WORDS {
            assert!(!st.stop_an.token_stream(s).advance(), "{s}");
        }
        let mut plain = super::super::plan::plain_analyzer();
        assert!(st.memo.len() > 1000);
        for (raw, w) in &st.memo {
            if raw.len() >= 40 {
                assert_eq!(w.stem, LONG);
                continue;
            }
            let stop = !st.stop_an.token_stream(raw).advance();
            assert_eq!(w.stop, stop, "{raw}");
            let mut ts = plain.token_stream(raw);
            assert!(ts.advance());
            assert_eq!(st.stems.get(w.stem), ts.token().text, "{raw}");
            // The index joins stems with spaces: an empty stem would be a lost token.
            assert!(!ts.token().text.is_empty(), "{raw}");
        }
    }
}
