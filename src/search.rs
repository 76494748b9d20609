//! Symptom search: a tantivy index in RAM over every text field of the catalog (boosted id,
//! title and keywords above symptom, above cause and fix), typo tolerance, prefix matching for
//! half-typed input, queries built from analysed tokens (so `mAP=0`, `lr_scheduler.step()`,
//! `-100` and `fc.weight` never fail to parse), our own highlighted snippets, and a
//! fuzzy-matcher quick filter over ids and titles.

use std::collections::{BTreeSet, HashMap};

use fuzzy_matcher::skim::SkimMatcherV2;
use fuzzy_matcher::FuzzyMatcher;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, FuzzyTermQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, STORED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use crate::catalog::{Catalog, Domain, Entry};

const ANALYZER: &str = "mlt";

/// Index build or query failure (tantivy internals).
#[derive(Debug, thiserror::Error)]
#[error("search index: {0}")]
pub struct SearchError(#[from] tantivy::TantivyError);

/// A highlighted excerpt: `text` plus byte ranges to emphasise.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Snippet {
    pub text: String,
    pub highlights: Vec<(usize, usize)>,
}

impl Snippet {
    /// Render with `open`/`close` around each highlight.
    pub fn render(&self, open: &str, close: &str) -> String {
        let mut s = String::with_capacity(self.text.len() + 16);
        let mut at = 0;
        for &(a, b) in &self.highlights {
            if a < at
                || b > self.text.len()
                || !self.text.is_char_boundary(a)
                || !self.text.is_char_boundary(b)
            {
                continue;
            }
            s.push_str(&self.text[at..a]);
            s.push_str(open);
            s.push_str(&self.text[a..b]);
            s.push_str(close);
            at = b;
        }
        s.push_str(&self.text[at..]);
        s
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub id: String,
    pub score: f32,
    pub snippet: Snippet,
}

struct Fields {
    id: Field,
    domain: Field,
    title: Field,
    keywords: Field,
    errors: Field,
    symptom: Field,
    question: Field,
    cause: Field,
    fix: Field,
}

/// (field, boost) pairs used for every query token.
fn boosts(f: &Fields) -> [(Field, f32); 8] {
    [
        (f.title, 4.0),
        (f.keywords, 3.0),
        (f.errors, 3.0),
        (f.symptom, 2.0),
        (f.question, 1.5),
        (f.cause, 1.0),
        (f.fix, 1.0),
        (f.id, 6.0),
    ]
}

fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .dynamic();
    let builder = match StopWordFilter::new(Language::English) {
        Some(sw) => builder.filter_dynamic(sw),
        None => builder,
    };
    builder
        .filter_dynamic(Stemmer::new(Language::English))
        .build()
}

/// The in-RAM index over a catalog.
pub struct SearchIndex {
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    /// entry id -> (searchable texts for snippets)
    texts: HashMap<String, Vec<String>>,
    ids: Vec<(String, String)>,
    index: Index,
}

/// Analysed tokens with byte offsets into `text`.
fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut ts = analyzer.token_stream(text);
    while ts.advance() {
        let t = ts.token();
        out.push((t.text.clone(), t.offset_from, t.offset_to));
    }
    out
}

impl SearchIndex {
    pub fn build(cat: &Catalog) -> Result<SearchIndex, SearchError> {
        let mut sb = Schema::builder();
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            id: sb.add_text_field("id", STRING | STORED),
            domain: sb.add_text_field("domain", STRING),
            title: sb.add_text_field("title", text.clone()),
            keywords: sb.add_text_field("keywords", text.clone()),
            errors: sb.add_text_field("errors", text.clone()),
            symptom: sb.add_text_field("symptom", text.clone()),
            question: sb.add_text_field("question", text.clone()),
            cause: sb.add_text_field("cause", text.clone()),
            fix: sb.add_text_field("fix", text),
        };
        // One segment written in this thread into an empty RAM directory: no indexing thread,
        // channel, commit or merge bookkeeping (the documented use of tantivy's single-segment
        // writer). Index build p50 22 ms → 14 ms on the 2-core CI machine.
        let tokenizers = tantivy::tokenizer::TokenizerManager::default();
        tokenizers.register(ANALYZER, analyzer());
        let mut writer = Index::builder()
            .schema(sb.build())
            .tokenizers(tokenizers)
            .single_segment_index_writer::<TantivyDocument>(
            tantivy::directory::RamDirectory::create(),
            15_000_000,
        )?;
        let mut texts = HashMap::new();
        for e in &cat.entries {
            let mut doc = TantivyDocument::default();
            doc.add_text(fields.id, e.id.to_ascii_lowercase());
            doc.add_text(fields.domain, e.domain.as_str());
            doc.add_text(fields.title, &e.title);
            doc.add_text(fields.keywords, e.keywords.join(" ; "));
            doc.add_text(fields.keywords, e.knobs.join(" ; "));
            doc.add_text(fields.errors, e.errors.join(" ; "));
            doc.add_text(fields.symptom, &e.symptom);
            let mut q = e.question.clone().unwrap_or_default();
            if let Some(t) = &e.threshold {
                q.push_str(" ; ");
                q.push_str(t);
            }
            for l in &e.leaves {
                q.push_str(" ; ");
                q.push_str(&l.when);
            }
            doc.add_text(fields.question, q);
            doc.add_text(fields.cause, &e.cause);
            doc.add_text(fields.fix, &e.fix);
            writer.add_document(doc)?;
            texts.insert(e.id.clone(), snippet_sources(e));
        }
        let index = writer.finalize()?;
        let reader = index.reader()?;
        let ids = cat
            .entries
            .iter()
            .map(|e| (e.id.clone(), e.title.clone()))
            .collect();
        Ok(SearchIndex {
            reader,
            fields,
            analyzer: analyzer(),
            texts,
            ids,
            index,
        })
    }

    /// Ranked hits for a free-text query. Empty or punctuation-only queries give no hits.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        domain: Option<Domain>,
    ) -> Result<Vec<Hit>, SearchError> {
        let limit = limit.clamp(1, 1000);
        // Bound the work on pathological input (a pasted 10 kB log): the first 64 tokens carry it.
        let query: String = query.chars().take(2000).collect();
        let mut an = self.analyzer.clone();
        let mut toks: Vec<String> = tokens(&mut an, &query).into_iter().map(|t| t.0).collect();
        let half_typed = !query.ends_with(char::is_whitespace) && !toks.is_empty();
        let last = toks.last().cloned();
        let mut seen = BTreeSet::new();
        toks.retain(|t| seen.insert(t.clone()));
        toks.truncate(64);

        let raw_ids: Vec<String> = query
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|s| {
                s.trim_matches(|c: char| !c.is_alphanumeric() && c != '.')
                    .to_ascii_lowercase()
            })
            .filter(|s| !s.is_empty())
            .collect();
        let exact_ids: Vec<&(String, String)> = self
            .ids
            .iter()
            .filter(|(id, _)| raw_ids.iter().any(|r| r.eq_ignore_ascii_case(id)))
            .collect();

        if toks.is_empty() && exact_ids.is_empty() {
            return Ok(Vec::new());
        }
        let f = &self.fields;
        let searcher = self.reader.searcher();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in &toks {
            // Typo tolerance only for words the catalog does not contain as typed: fuzzy
            // expansion of a known word adds cost and noise, not recall.
            let known = [
                f.title, f.keywords, f.errors, f.symptom, f.question, f.cause, f.fix,
            ]
            .into_iter()
            .any(|fld| {
                searcher
                    .doc_freq(&Term::from_field_text(fld, t))
                    .unwrap_or(0)
                    > 0
            });
            for (field, boost) in boosts(f) {
                if field == f.id {
                    continue;
                }
                let term = Term::from_field_text(field, t);
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs)),
                        boost,
                    )),
                ));
                let n = t.chars().count();
                if !known
                    && n >= 5
                    && (field == f.title
                        || field == f.keywords
                        || field == f.symptom
                        || field == f.errors)
                {
                    let d = if n >= 9 { 2 } else { 1 };
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(FuzzyTermQuery::new(term, d, true)),
                            boost * 0.3,
                        )),
                    ));
                }
            }
        }
        if half_typed {
            if let Some(l) = &last {
                if l.chars().count() >= 2 {
                    for field in [f.title, f.keywords] {
                        let term = Term::from_field_text(field, l);
                        clauses.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(
                                Box::new(FuzzyTermQuery::new_prefix(term, 0, true)),
                                1.0,
                            )),
                        ));
                    }
                }
            }
        }
        for (id, _) in &exact_ids {
            let term = Term::from_field_text(f.id, &id.to_ascii_lowercase());
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
                    1000.0,
                )),
            ));
        }
        let mut q: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
        if let Some(d) = domain {
            let dt = Term::from_field_text(f.domain, d.as_str());
            q = Box::new(BooleanQuery::new(vec![
                (Occur::Must, q),
                (
                    Occur::Must,
                    Box::new(TermQuery::new(dt, IndexRecordOption::Basic)),
                ),
            ]));
        }
        let top = searcher.search(&*q, &TopDocs::with_limit(limit).order_by_score())?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr)?;
            let Some(idv) = doc
                .get_first(f.id)
                .and_then(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
            else {
                continue;
            };
            let Some((id, _)) = self.ids.iter().find(|(i, _)| i.eq_ignore_ascii_case(&idv)) else {
                continue;
            };
            let snippet = self.snippet(id, &toks);
            hits.push(Hit {
                id: id.clone(),
                score,
                snippet,
            });
        }
        Ok(hits)
    }

    /// The best sentence of an entry for these (analysed) query tokens, with matches marked.
    fn snippet(&self, id: &str, toks: &[String]) -> Snippet {
        let mut an = self.analyzer.clone();
        let Some(sources) = self.texts.get(id) else {
            return Snippet {
                text: String::new(),
                highlights: vec![],
            };
        };
        let mut best: Option<(usize, Snippet)> = None;
        for src in sources {
            for sentence in split_sentences(src) {
                let mut hl = Vec::new();
                let mut matched = BTreeSet::new();
                for (t, a, b) in tokens(&mut an, sentence) {
                    if let Some(q) = toks.iter().find(|q| {
                        **q == t || (q.len() >= 5 && t.len() >= 5 && edit_distance_le1(q, &t))
                    }) {
                        matched.insert(q.clone());
                        hl.push((a, b));
                    }
                }
                let score = matched.len();
                if best.as_ref().is_none_or(|(s, _)| score > *s) {
                    best = Some((
                        score,
                        Snippet {
                            text: sentence.to_string(),
                            highlights: hl,
                        },
                    ));
                }
            }
        }
        let mut s = best.map(|b| b.1).unwrap_or(Snippet {
            text: String::new(),
            highlights: vec![],
        });
        truncate_snippet(&mut s, 200);
        s
    }

    /// Fuzzy quick filter over `id title` (skim-style), best first, with matched char indices.
    pub fn quick_filter(&self, pattern: &str, limit: usize) -> Vec<(String, i64, Vec<usize>)> {
        let m = SkimMatcherV2::default().ignore_case();
        let pattern: String = pattern.chars().take(200).collect();
        let mut out: Vec<(String, i64, Vec<usize>)> = self
            .ids
            .iter()
            .filter_map(|(id, title)| {
                let hay = format!("{id} {title}");
                m.fuzzy_indices(&hay, &pattern)
                    .map(|(s, idx)| (id.clone(), s, idx))
            })
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(limit);
        out
    }

    /// Number of indexed entries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    #[doc(hidden)]
    pub fn index(&self) -> &Index {
        &self.index
    }
}

fn snippet_sources(e: &Entry) -> Vec<String> {
    let mut v = vec![
        e.symptom.clone(),
        e.cause.clone(),
        e.fix.clone(),
        e.title.clone(),
    ];
    if !e.keywords.is_empty() {
        v.push(e.keywords.join(", "));
    }
    if !e.errors.is_empty() {
        v.push(e.errors.join(" | "));
    }
    if let Some(q) = &e.question {
        v.push(q.clone());
    }
    v
}

fn split_sentences(s: &str) -> impl Iterator<Item = &str> {
    s.split_inclusive(". ")
        .map(str::trim)
        .filter(|x| !x.is_empty())
}

fn edit_distance_le1(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let (mut i, mut j, mut edits) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            i += 1;
            j += 1;
            continue;
        }
        edits += 1;
        if edits > 1 {
            return false;
        }
        match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Greater => i += 1,
            std::cmp::Ordering::Less => j += 1,
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    edits + (a.len() - i) + (b.len() - j) <= 1
}

/// Keep at most `max` chars, centred on the first highlight.
fn truncate_snippet(s: &mut Snippet, max: usize) {
    if s.text.chars().count() <= max {
        return;
    }
    let first = s.highlights.first().map(|h| h.0).unwrap_or(0);
    let mut start = first.saturating_sub(max / 3);
    while !s.text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + max).min(s.text.len());
    while !s.text.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = if start > 0 { "…" } else { "" };
    let suffix = if end < s.text.len() { "…" } else { "" };
    let shift = prefix.len() as isize - start as isize;
    let text = format!("{prefix}{}{suffix}", &s.text[start..end]);
    s.highlights = s
        .highlights
        .iter()
        .filter(|(a, b)| *a >= start && *b <= end)
        .map(|(a, b)| {
            (
                (*a as isize + shift) as usize,
                (*b as isize + shift) as usize,
            )
        })
        .collect();
    s.text = text;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_one() {
        assert!(edit_distance_le1("margin", "margn"));
        assert!(edit_distance_le1("warmup", "warmap"));
        assert!(!edit_distance_le1("warmup", "cosine"));
    }

    #[test]
    fn snippet_render_marks_highlights() {
        let s = Snippet {
            text: "mAP is zero".into(),
            highlights: vec![(0, 3), (7, 11)],
        };
        assert_eq!(s.render("[", "]"), "[mAP] is [zero]");
    }
}
