//! The catalog's text analysed once per index: tantivy's simple tokenizer rules (runs of
//! alphanumeric characters; tokens of 40 bytes or more dropped), lower-cased and stemmed
//! (English), with English stop words marked rather than removed. Each distinct word is
//! stemmed once (a catalog of 400 kB holds about 60,000 words but a few thousand distinct
//! ones), and the same words feed the tantivy index (pre-tokenized, stop words left out) and
//! the query-plan lexicon (stop words kept), which used to analyse every text twice.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use tantivy::tokenizer::{
    Language, LowerCaser, SimpleTokenizer, StopWordFilter, TextAnalyzer, TokenStream,
};

/// FNV-1a: the memo's keys are short words hashed tens of thousands of times per start, where
/// SipHash's set-up dominates; nothing here is keyed by untrusted input at scale (a query is
/// capped at 2000 characters).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

use tantivy::tokenizer::{PreTokenizedString, Token};

/// A word of a text: its stem, byte range and whether it is a stop word.
#[derive(Debug, Clone, Copy)]
pub(super) struct Word {
    /// Index into [`Stems::stem`].
    pub id: u32,
    pub from: usize,
    pub to: usize,
    pub stop: bool,
}

/// Memoised analysis of words.
pub(super) struct Stems {
    memo: FastMap<String, (u32, bool)>,
    stems: Vec<String>,
    stem_ids: FastMap<String, u32>,
    /// Lower-casing and the stop-word list only (is a word a stop word?).
    stop_an: TextAnalyzer,
    plain_an: TextAnalyzer,
}

impl Stems {
    pub(super) fn new() -> Stems {
        Stems {
            memo: FastMap::with_capacity_and_hasher(8192, Default::default()),
            stems: Vec::with_capacity(8192),
            stem_ids: FastMap::with_capacity_and_hasher(8192, Default::default()),
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
        }
    }

    /// The stem behind an id.
    pub(super) fn stem(&self, id: u32) -> &str {
        &self.stems[id as usize]
    }

    /// Analyse one raw token (alphanumeric, under 40 bytes) once.
    fn word(&mut self, raw: &str) -> (u32, bool) {
        if let Some(&w) = self.memo.get(raw) {
            return w;
        }
        let mut stem = String::new();
        let mut ts = self.plain_an.token_stream(raw);
        if ts.advance() {
            stem.push_str(&ts.token().text);
        }
        let mut ts = self.stop_an.token_stream(raw);
        let stop = !ts.advance();
        let id = match self.stem_ids.get(&stem) {
            Some(&id) => id,
            None => {
                let id = self.stems.len() as u32;
                self.stem_ids.insert(stem.clone(), id);
                self.stems.push(stem);
                id
            }
        };
        self.memo.insert(raw.to_string(), (id, stop));
        (id, stop)
    }

    /// The words of a text, in order.
    pub(super) fn words(&mut self, text: &str) -> Vec<Word> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            if c.is_alphanumeric() && i < text.len() {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                if i - s < 40 {
                    let (id, stop) = self.word(&text[s..i]);
                    out.push(Word {
                        id,
                        from: s,
                        to: i,
                        stop,
                    });
                }
            }
        }
        out
    }

    /// Stems of a text with stop words kept (the query plan's words).
    pub(super) fn plain(&mut self, text: &str) -> Vec<String> {
        let w = self.words(text);
        w.iter().map(|w| self.stem(w.id).to_string()).collect()
    }

    /// A text pre-tokenized for a tantivy field (stop words left out, as the index analyzer
    /// does).
    pub(super) fn pre_tokenized(&mut self, text: String) -> PreTokenizedString {
        let words = self.words(&text);
        let tokens = words
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.stop)
            .map(|(position, w)| Token {
                offset_from: w.from,
                offset_to: w.to,
                position,
                text: self.stem(w.id).to_string(),
                position_length: 1,
            })
            .collect();
        PreTokenizedString { text, tokens }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memoised analysis gives exactly what the two analyzers give.
    #[test]
    fn memoised_words_match_the_analyzers() {
        let text = "The LOSS is NaN after lr_scheduler.step(); exploding gradients, \
                    yolov8n mAP=0 — ünïcode wörds and a veryveryveryveryveryveryveryverylongword1";
        let mut st = Stems::new();
        let mut an = super::super::plan::plain_analyzer();
        let mut expect = Vec::new();
        let mut ts = an.token_stream(text);
        while ts.advance() {
            expect.push(ts.token().text.clone());
        }
        assert_eq!(st.plain(text), expect);
        let mut an = super::super::analyzer();
        let mut expect = Vec::new();
        let mut ts = an.token_stream(text);
        while ts.advance() {
            let t = ts.token();
            expect.push((t.text.clone(), t.offset_from, t.offset_to));
        }
        let got: Vec<_> = st
            .pre_tokenized(text.to_string())
            .tokens
            .into_iter()
            .map(|t| (t.text, t.offset_from, t.offset_to))
            .collect();
        assert_eq!(got, expect);
    }
}
