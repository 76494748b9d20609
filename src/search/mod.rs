//! Symptom search: a tantivy index in RAM over every text field of the catalog (title,
//! keywords and errors above symptom, above cause and fix; prepared for the shipped playbook,
//! see `segment`), a query plan (typo correction,
//! synonym groups, domain cues, quoted error strings, the time in the run the query places the
//! trouble at: see `plan` and `phase`), prefix matching for
//! half-typed input, queries built from analysed tokens (so `mAP=0`, `lr_scheduler.step()`,
//! `-100` and `fc.weight` never fail to parse), a confidence verdict for the best hit (see
//! `confidence`), our own highlighted snippets, and a fuzzy-matcher quick filter.

mod analyse;
mod confidence;
mod glossary;
mod phase;
mod plan;
mod segment;
mod snippet;

use std::collections::{BTreeSet, HashMap};

use fuzzy_matcher::skim::SkimMatcherV2;
use fuzzy_matcher::FuzzyMatcher;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, FuzzyTermQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use crate::catalog::{Catalog, Domain};

pub use confidence::Confidence;
use plan::Lexicon;
use segment::Fields;
use snippet::{edit_distance_le1, snippet_sources, split_sentences, truncate_snippet};

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

/// (field, boost) pairs used for every query token: what the user sees (title, symptom) and
/// types (keywords, errors) above why it happens and how to fix it.
fn boosts(f: &Fields) -> [(Field, f32); 8] {
    [
        (f.title, 3.0),
        (f.keywords, 3.0),
        (f.phrases, 1.0),
        (f.errors, 1.0),
        (f.symptom, 2.0),
        (f.question, 1.5),
        (f.cause, 1.0),
        (f.fix, 0.8),
    ]
}

/// Weight of a synonym expansion relative to the words the user typed.
const W_SYNONYM: f32 = 0.5;
/// Flat lift for every entry of a domain the query names (yolo, llava, ppo …).
const W_CUE: f32 = 5.0;
/// Lift per word of an entry's error string quoted in order by the query.
const W_QUOTE: f32 = 3.0;
/// The weights below and the field boosts above were set by a coordinate sweep (each weight
/// moved alone, then the best moves together) on the tuned set and the tuning half of the fresh
/// set (tests/search_fresh), scored by top-1, top-3 and the gate; the fresh set's other half
/// and the held-out set only confirmed the choice (BENCHMARKS.md, "Search").
/// The best BM25 hits re-ordered by how much of the query they explain (see `rerank`).
const RERANK_POOL: usize = 30;
/// Weight of each share of the query an entry explains (anywhere; in what it shows) against
/// its BM25 score relative to the best hit's (weight 1).
const W_EXPLAINS: f32 = 0.3;
/// Lift for an entry whose subject the query names (a keyword phrase, error string or knob
/// identifier specific to it: "EMA", "LoRA", "find_unused_parameters"), on the same scale.
const W_NAMED: f32 = 0.3;

/// Drop for an entry about a method (see `Vocabulary::methods`) when the query names no
/// method, and when it names another one, on the same scale.
const W_SCOPE_NONE: f32 = 0.05;
const W_SCOPE_OTHER: f32 = 0.2;
/// The quantities a report is about (analysed forms): an entry that shows none of the one the
/// query names (in its title, symptom, keywords, phrases or errors) drops by
/// [`W_OFF_SUBJECT`] on the same scale.
const SUBJECTS: &[&[&str]] = &[
    &["loss"],
    &["accuraci", "acc"],
    &["reward"],
    &["map", "miou"],
    &["lr"],
    &["gradient", "grad"],
    &["speed", "slow", "throughput"],
];
const W_OFF_SUBJECT: f32 = 0.2;
/// Drop for an entry whose title places the trouble at one time in the run (the first step,
/// evaluation, mid-run) when the query places it at another only ("out of memory after 15K
/// iterations" is not the first-step OOM), on the same scale.
const W_OFF_PHASE: f32 = 0.5;
/// Lift for an entry by the square of the share of the query one users' phrase of it explains
/// (`Lexicon::phrase_share`), on the same scale: words that sit together in one real statement
/// of the problem say more than the same words scattered over the entry's text, and the square
/// keeps a partial match from counting much.
const W_PHRASE: f32 = 0.6;

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
    lexicon: Lexicon,
    /// Entry id -> its sentences with analysed words (see `sentences`).
    sentence_cache: std::sync::Mutex<HashMap<String, std::sync::Arc<Sentences>>>,
    /// Inverse document frequency of each analysed word over entries.
    idf: HashMap<String, f32>,
    /// The largest of them (the rarest word's).
    max_idf: f32,
    /// Analysed function words (weigh nothing in coverage; made on first query).
    function: std::sync::OnceLock<std::collections::HashSet<String>>,
}

/// Hits for a query plus whether the best one is a confident match.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ranked {
    pub hits: Vec<Hit>,
    pub confidence: Confidence,
}

/// Sentences of an entry with their analysed words and byte offsets.
type Sentences = Vec<(String, Vec<(String, usize, usize)>)>;

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

/// The query-plan lexicon (its entries added) and the inverse document frequency of each
/// analysed word.
fn lexicon_and_idf(
    cat: &Catalog,
    b: plan::LexiconBuilder,
    an: analyse::Stems,
) -> (Lexicon, HashMap<String, f32>) {
    let lexicon = b.finish(cat, an);
    let n = lexicon.entry_sets.len() as f32;
    let idf = lexicon
        .doc_freqs()
        .map(|(w, d)| {
            (
                w.to_string(),
                (1.0 + (n - d as f32 + 0.5) / (d as f32 + 0.5)).ln(),
            )
        })
        .collect();
    (lexicon, idf)
}

/// The query with the characters of scripts the catalog is not written in (CJK ideographs,
/// kana, hangul) turned into spaces: "GRPO训练reward不涨" is searched as "GRPO reward", the
/// words it shares with the catalog, instead of one unmatched token; a query of those
/// scripts alone finds nothing and says so.
fn words_the_catalog_can_hold(chars: impl Iterator<Item = char>) -> String {
    chars.map(|c| if is_cjk(c) { ' ' } else { c }).collect()
}

/// Share of the query's letters written in a script the catalog is not (see `is_cjk`): when
/// most of a query is such text, the words left say too little to be sure of a match.
fn foreign_share(chars: impl Iterator<Item = char>) -> f32 {
    let (mut all, mut foreign) = (0usize, 0usize);
    for c in chars.filter(|c| c.is_alphanumeric()) {
        all += 1;
        foreign += is_cjk(c) as usize;
    }
    if all == 0 {
        0.0
    } else {
        foreign as f32 / all as f32
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x2E80..=0x2FDF    // CJK radicals
        | 0x3000..=0x30FF    // CJK punctuation, Hiragana, Katakana
        | 0x3100..=0x31FF    // Bopomofo, Hangul compatibility Jamo, Katakana extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF00..=0xFFEF    // full-width forms
        | 0x20000..=0x2FA1F) // CJK extensions B-F
}

/// Every entry's texts analysed once (`analyse`: each distinct word once), feeding the
/// segment's documents, the query-plan lexicon and the snippets' sources.
fn analysed(
    cat: &Catalog,
    fields: &Fields,
) -> (
    segment::Docs,
    plan::LexiconBuilder,
    analyse::Stems,
    HashMap<String, Vec<String>>,
) {
    use std::iter::once;
    use std::ops::Range;
    let mut an = analyse::Stems::new();
    let mut lex = plan::LexiconBuilder::new(cat.entries.len());
    let mut ew = analyse::EntryWords::default();
    let mut texts = HashMap::with_capacity(cat.entries.len());
    let mut docs = segment::Docs::with_capacity(cat.entries.len());
    for e in &cat.entries {
        ew.read(e, &mut an);
        docs.start();
        docs.add(fields.id, |s| {
            s.extend(e.id.chars().map(|c| c.to_ascii_lowercase()))
        });
        docs.add(fields.domain, |s| s.push_str(e.domain.as_str()));
        let mut add = |field: Field, ranges: &mut dyn Iterator<Item = &Range<usize>>| {
            docs.add(field, |s| ew.index_text(ranges, &an, s));
        };
        add(fields.title, &mut once(&ew.title));
        add(fields.keywords, &mut ew.keywords.iter());
        add(fields.keywords, &mut ew.knobs.iter());
        add(fields.phrases, &mut ew.phrases.iter());
        add(fields.errors, &mut ew.errors.iter());
        add(fields.symptom, &mut once(&ew.symptom));
        add(
            fields.question,
            &mut ew.question.iter().chain(&ew.question_more),
        );
        add(fields.cause, &mut once(&ew.cause));
        add(fields.fix, &mut once(&ew.fix));
        lex.add(e, &ew, &mut an);
        texts.insert(e.id.clone(), snippet_sources(e));
    }
    (docs, lex, an, texts)
}

impl SearchIndex {
    pub fn build(cat: &Catalog) -> Result<SearchIndex, SearchError> {
        let (schema, fields) = segment::schema();
        let (docs, lex, an, texts) = analysed(cat, &fields);
        let index = segment::index(&docs, schema)?;
        let ids = cat
            .entries
            .iter()
            .map(|e| (e.id.clone(), e.title.clone()))
            .collect();
        let (lexicon, idf) = lexicon_and_idf(cat, lex, an);
        let reader = index
            .reader_builder()
            .reload_policy(tantivy::ReloadPolicy::Manual)
            .try_into()?;
        Ok(SearchIndex {
            reader,
            fields,
            analyzer: analyzer(),
            texts,
            ids,
            index,
            lexicon,
            sentence_cache: std::sync::Mutex::new(HashMap::new()),
            max_idf: idf.values().copied().fold(0.0f32, f32::max),
            idf,
            function: std::sync::OnceLock::new(),
        })
    }

    /// Ranked hits for a free-text query. Empty or punctuation-only queries give no hits.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        domain: Option<Domain>,
    ) -> Result<Vec<Hit>, SearchError> {
        Ok(self.run(query, limit, domain)?.0)
    }

    /// Ranked hits plus a verdict on whether the best one is a confident match (or whether
    /// nothing in the catalog fits the query).
    pub fn search_ranked(
        &self,
        query: &str,
        limit: usize,
        domain: Option<Domain>,
    ) -> Result<Ranked, SearchError> {
        let (hits, q, plan) = self.run(query, limit, domain)?;
        let confidence = match hits.first() {
            None => Confidence::none(),
            Some(top) => {
                let i = self
                    .ids
                    .iter()
                    .position(|(id, _)| id == &top.id)
                    .unwrap_or(0);
                let concept = self.lexicon.names_concept(&plan, i);
                // How far the best hit stands above the next (score ratio; alone: a wide gap).
                let margin = match hits.get(1) {
                    Some(next) if next.score > 0.0 => top.score / next.score,
                    _ => 2.0,
                };
                confidence::judge(
                    &q,
                    i,
                    concept,
                    margin,
                    &self.lexicon.entry_sets[i],
                    &self.lexicon.entry_strong[i],
                )
            }
        };
        Ok(Ranked { hits, confidence })
    }

    fn run(
        &self,
        query: &str,
        limit: usize,
        domain: Option<Domain>,
    ) -> Result<(Vec<Hit>, confidence::Query, plan::Plan), SearchError> {
        let limit = limit.clamp(1, 1000);
        // Bound the work on pathological input (a pasted 10 kB log): the first 64 tokens carry it.
        let query = glossary::translate(query);
        let foreign = foreign_share(query.chars().take(2000));
        // Read as the user wrote it (after the glossary), before the script the catalog cannot
        // hold is blanked: a full-width "？" asks a question as much as "?".
        let troubled = confidence::troubled(&query);
        let usage = confidence::usage_question(&query, troubled);
        let query: String = words_the_catalog_can_hold(query.chars().take(2000));
        let mut an = self.analyzer.clone();
        let half_typed = !query.ends_with(char::is_whitespace)
            && query.chars().last().is_some_and(char::is_alphanumeric);
        let plan = self.lexicon.plan(&query, false);
        let mut toks: Vec<String> = tokens(&mut an, &plan.corrected)
            .into_iter()
            .map(|t| t.0)
            .collect();
        let last = if half_typed {
            tokens(&mut an, &query).pop().map(|t| t.0)
        } else {
            None
        };
        let mut seen = BTreeSet::new();
        toks.retain(|t| seen.insert(t.clone()));
        toks.truncate(64);
        let mut expansions: Vec<(Vec<String>, String)> = Vec::new();
        for (trigger, text) in &plan.expansions {
            for (t, _, _) in tokens(&mut an, text) {
                if !seen.contains(&t) && !expansions.iter().any(|e| e.1 == t) {
                    expansions.push((trigger.clone(), t));
                }
            }
        }
        // Bound the extra clauses: a few groups can expand to dozens of words.
        expansions.truncate(40);

        // The words as typed. An id counts in a short query ("V2", "show o5"), in any case: in
        // a sentence, "v2" is a version ("About v2 training") and "L1" a distance ("the L1
        // distance was better than in the paper"), even written as the catalog writes ids.
        let typed: Vec<&str> = query
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|s| s.trim_matches(|c: char| !c.is_alphanumeric() && c != '.'))
            .filter(|s| !s.is_empty())
            .collect();
        let short = typed.len() <= 2;
        let exact_ids: Vec<&(String, String)> = self
            .ids
            .iter()
            .filter(|(id, _)| short && typed.iter().any(|t| t.eq_ignore_ascii_case(id)))
            .collect();

        let q = confidence::Query {
            weights: confidence::weights(
                &toks,
                &self.idf,
                self.max_idf,
                self.function
                    .get_or_init(|| confidence::function_stems(&mut self.analyzer.clone())),
            ),
            tokens: toks.clone(),
            expansions: expansions.clone(),
            quoted: plan.quoted.clone(),
            exact_id: !exact_ids.is_empty(),
            outside: plan.outside.clone(),
            usage,
            troubled,
            foreign,
            context: toks
                .iter()
                .map(|t| self.lexicon.is_context_word(t))
                .collect(),
        };
        if toks.is_empty() && exact_ids.is_empty() {
            return Ok((Vec::new(), q, plan));
        }
        let f = &self.fields;
        let searcher = self.reader.searcher();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let term = |field: Field, t: &str, boost: f32| -> (Occur, Box<dyn Query>) {
            (
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(field, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    boost,
                )),
            )
        };
        for t in &toks {
            // Typo tolerance for words the catalog does not contain as typed (the plan has
            // already replaced those with a near catalog word where one exists).
            let known = boosts(f).into_iter().any(|(fld, _)| {
                searcher
                    .doc_freq(&Term::from_field_text(fld, t))
                    .unwrap_or(0)
                    > 0
            });
            for (field, boost) in boosts(f) {
                clauses.push(term(field, t, boost));
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
                            Box::new(FuzzyTermQuery::new(
                                Term::from_field_text(field, t),
                                d,
                                true,
                            )),
                            boost * 0.3,
                        )),
                    ));
                }
            }
        }
        for (_, t) in &expansions {
            for (field, boost) in boosts(f) {
                if field == f.title || field == f.keywords || field == f.symptom {
                    clauses.push(term(field, t, boost * W_SYNONYM));
                }
            }
        }
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
        for d in &plan.domains {
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(f.domain, d.as_str()),
                        IndexRecordOption::Basic,
                    )),
                    W_CUE,
                )),
            ));
        }
        for (entry, run) in &plan.quoted {
            if let Some((id, _)) = self.ids.get(*entry) {
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(
                            Term::from_field_text(f.id, &id.to_ascii_lowercase()),
                            IndexRecordOption::Basic,
                        )),
                        W_QUOTE * (*run).min(10) as f32,
                    )),
                ));
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
        let mut q_all: Box<dyn Query> = Box::new(BooleanQuery::new(clauses));
        if let Some(d) = domain {
            let dt = Term::from_field_text(f.domain, d.as_str());
            q_all = Box::new(BooleanQuery::new(vec![
                (Occur::Must, q_all),
                (
                    Occur::Must,
                    Box::new(TermQuery::new(dt, IndexRecordOption::Basic)),
                ),
            ]));
        }
        let pool = limit.max(RERANK_POOL);
        let mut top = searcher.search(&*q_all, &TopDocs::with_limit(pool).order_by_score())?;
        if exact_ids.is_empty() {
            self.rerank(&q, &plan, &searcher, &mut top);
        }
        top.truncate(limit);
        let mut hits = Vec::with_capacity(top.len());
        let exp: Vec<String> = expansions.iter().map(|e| e.1.clone()).collect();
        for (score, addr) in top {
            let Some((id, _)) = self.entry_of(&searcher, addr).and_then(|i| self.ids.get(i)) else {
                continue;
            };
            let snippet = self.snippet(id, &toks, &exp);
            hits.push(Hit {
                id: id.clone(),
                score,
                snippet,
            });
        }
        Ok((hits, q, plan))
    }

    /// Re-orders the BM25 pool by how much of the query each entry explains: a sum of
    /// per-word scores lets one rare word pull an entry up ("segmentation fault" -> the
    /// segmentation metric), so the final score adds the share of the query's weight the
    /// entry holds anywhere and in what it shows (title, symptom, keywords, phrases, errors).
    fn rerank(
        &self,
        q: &confidence::Query,
        plan: &plan::Plan,
        searcher: &tantivy::Searcher,
        top: &mut [(f32, tantivy::DocAddress)],
    ) {
        let Some(best) = top.first().map(|t| t.0).filter(|b| *b > 0.0) else {
            return;
        };
        let scale = 1.0 + 2.0 * W_EXPLAINS + W_NAMED + W_PHRASE;
        let words = self.word_ids(q);
        // The quantities the query reports, found once for the whole pool.
        let named_subjects: Vec<&[&str]> = SUBJECTS
            .iter()
            .copied()
            .filter(|g| g.iter().any(|w| q.tokens.iter().any(|t| t == w)))
            .collect();
        let subject_ids: Vec<Vec<u32>> = named_subjects
            .iter()
            .map(|g| g.iter().filter_map(|w| self.lexicon.stem_id(w)).collect())
            .collect();
        for (rank, t) in top.iter_mut().enumerate() {
            // Below the pool, hits keep their order, scored as explaining nothing more.
            let i = match self.entry_of(searcher, t.1) {
                Some(i) if rank < RERANK_POOL => i,
                _ => {
                    t.0 /= scale;
                    continue;
                }
            };
            let (all, _, _) = confidence::coverage(q, &self.lexicon.entry_sets[i]);
            let (strong, _, _) = confidence::coverage(q, &self.lexicon.entry_strong[i]);
            let named = if self.lexicon.names_concept(plan, i) {
                1.0
            } else {
                0.0
            };
            // An entry about one method (its title names DPO, GRPO, LoRA ...) explains a
            // query that names none of them less surely, and one naming another not at all.
            let scope = &self.lexicon.entry_methods[i];
            let off_scope = if scope.is_empty() || scope.iter().any(|g| plan.methods.contains(g)) {
                0.0
            } else if plan.methods.is_empty() {
                W_SCOPE_NONE
            } else {
                W_SCOPE_OTHER
            };
            // An entry that does not show the quantity the query reports ("loss is not
            // changing" is not the LR-schedule entry, however well "constant" matches).
            let off_subject = if named_subjects
                .iter()
                .any(|g| !g.iter().any(|w| self.lexicon.entry_strong[i].contains(*w)))
            {
                W_OFF_SUBJECT
            } else {
                0.0
            };
            let when = &self.lexicon.entry_phases[i];
            let off_phase = if !when.is_empty()
                && !plan.phases.is_empty()
                && !when.iter().any(|p| plan.phases.contains(p))
            {
                W_OFF_PHASE
            } else {
                0.0
            };
            let phrase = self.lexicon.phrase_share(i, &words, &subject_ids);
            t.0 = best
                * (t.0 / best
                    + W_EXPLAINS * (all + strong)
                    + W_NAMED * named
                    + W_PHRASE * phrase * phrase
                    - off_scope
                    - off_subject
                    - off_phase)
                / scale;
        }
        top.sort_by(|a, b| b.0.total_cmp(&a.0));
    }

    /// The query's words as stem ids, each with the synonyms it triggered, and their weights
    /// (what [`plan::Lexicon::phrase_share`] reads).
    fn word_ids(&self, q: &confidence::Query) -> Vec<(f32, Vec<u32>)> {
        q.tokens
            .iter()
            .zip(&q.weights)
            .map(|(t, &w)| {
                let mut ids: Vec<u32> = self.lexicon.stem_id(t).into_iter().collect();
                for (trigger, e) in &q.expansions {
                    if trigger.iter().any(|x| x == t) {
                        ids.extend(self.lexicon.stem_id(e));
                    }
                }
                (w, ids)
            })
            .collect()
    }

    /// The catalog index of a hit. The index is one segment written in catalog order, so a
    /// document's id is its entry's position; the stored id is read only if that ever stops
    /// holding (a hit list is rebuilt on every keystroke, and the store is compressed).
    fn entry_of(&self, searcher: &tantivy::Searcher, addr: tantivy::DocAddress) -> Option<usize> {
        let i = addr.doc_id as usize;
        if addr.segment_ord == 0 && searcher.segment_readers().len() == 1 && i < self.ids.len() {
            return Some(i);
        }
        let doc: TantivyDocument = searcher.doc(addr).ok()?;
        let idv = doc
            .get_first(self.fields.id)
            .and_then(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))?;
        self.ids
            .iter()
            .position(|(i, _)| i.eq_ignore_ascii_case(&idv))
    }

    /// An entry's sentences with their analysed words, computed on first use and kept (a hit
    /// list is re-snippeted on every keystroke).
    fn sentences(&self, id: &str) -> Option<std::sync::Arc<Sentences>> {
        if let Some(v) = self.sentence_cache.lock().ok()?.get(id) {
            return Some(v.clone());
        }
        let sources = self.texts.get(id)?;
        let mut an = self.analyzer.clone();
        let mut v = Vec::new();
        for src in sources {
            for sentence in split_sentences(src) {
                v.push((sentence.to_string(), tokens(&mut an, sentence)));
            }
        }
        let v = std::sync::Arc::new(v);
        if let Ok(mut c) = self.sentence_cache.lock() {
            c.insert(id.to_string(), v.clone());
        }
        Some(v)
    }

    /// The best sentence of an entry for these (analysed) query tokens and synonym expansions,
    /// with matches marked (typed words also match at one edit).
    fn snippet(&self, id: &str, toks: &[String], exp: &[String]) -> Snippet {
        let Some(sentences) = self.sentences(id) else {
            return Snippet {
                text: String::new(),
                highlights: vec![],
            };
        };
        let mut best: Option<(usize, Snippet)> = None;
        for (sentence, words) in sentences.iter() {
            let mut hl = Vec::new();
            let mut matched = BTreeSet::new();
            for (t, a, b) in words {
                if let Some(q) = toks.iter().chain(exp).find(|q| *q == t).or_else(|| {
                    (t.len() >= 5).then(|| {
                        toks.iter()
                            .find(|q| q.len() >= 5 && edit_distance_le1(q, t))
                    })?
                }) {
                    matched.insert(q.clone());
                    hl.push((*a, *b));
                }
            }
            let score = matched.len();
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((
                    score,
                    Snippet {
                        text: sentence.clone(),
                        highlights: hl,
                    },
                ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_sentences_are_versions_cjk_fragments_are_not_confident() {
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        // "v2" in a sentence is a version; typed alone, or as the catalog writes it, an id.
        let r = idx
            .search_ranked(
                "About v2 training: segmentation fault (core dumped)",
                3,
                None,
            )
            .unwrap();
        assert_ne!(r.confidence.reason, "entry id", "{r:?}");
        assert_eq!(r.hits[0].id, "N2", "{r:?}");
        for q in ["v2", "show V2"] {
            let r = idx.search_ranked(q, 3, None).unwrap();
            assert_eq!(r.hits[0].id, "V2", "{q}: {r:?}");
            assert_eq!(r.confidence.reason, "entry id", "{q}: {r:?}");
        }
        for q in [
            "random augmentation V2 in eval",
            "I found the L1 distance was better than the L1 distance in the paper",
        ] {
            let r = idx.search_ranked(q, 3, None).unwrap();
            assert_ne!(r.confidence.reason, "entry id", "{q}: {r:?}");
        }
        // Chinese training terms are read through the glossary …
        let r = idx.search_ranked("Lora微调灾难性遗忘", 3, None).unwrap();
        assert_eq!(r.hits[0].id, "L11", "{r:?}");
        // … and of a mostly-Chinese query the glossary cannot read, one word is too little.
        let r = idx.search_ranked("请问大佬这个lora咋整", 3, None).unwrap();
        assert!(!r.confidence.confident, "{r:?}");
        assert_eq!(r.confidence.reason, "mostly unreadable");
        // With "怎么" read as "how", a question that names no problem says so.
        let r = idx.search_ranked("请问这个怎么弄lora", 3, None).unwrap();
        assert!(!r.confidence.confident, "{r:?}");
        assert_eq!(r.confidence.reason, "no problem stated");
        // Two readable words and a quoted subject still count.
        let r = idx
            .search_ranked("为什么我在使用GRPO微调时，我的reward始终为0", 3, None)
            .unwrap();
        assert!(r.confidence.reason != "mostly unreadable", "{r:?}");
        // Outside phrases match with one word between ("inference is slow").
        let r = idx
            .search_ranked("inference is terribly slow after fine-tuning", 3, None)
            .unwrap();
        assert_eq!(r.confidence.reason, "outside the catalog", "{r:?}");
    }

    #[test]
    fn the_query_s_subject_outranks_one_strong_word() {
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        for (q, want) in [
            ("CUDA out of memory error during validation", "M6"),
            ("segmentation fault during training", "N2"),
            ("CUDA error: illegal memory access", "N1"),
            ("SFT Trainer packing makes loss weird", "L4"),
        ] {
            let r = idx.search_ranked(q, 3, None).unwrap();
            assert_eq!(r.hits[0].id, want, "{q}: {r:?}");
        }
        // The quantity the report is about: "constant" and "changing" are the LR-schedule
        // entry's words, but the loss is what does not change.
        let r = idx
            .search_ranked("Loss is not changing. Its remaining constant", 3, None)
            .unwrap();
        assert_ne!(r.hits[0].id, "S2.1", "{r:?}");
        assert!(
            r.hits
                .iter()
                .any(|h| ["S4.1", "O1", "O7"].contains(&h.id.as_str())),
            "{r:?}"
        );
        // A Chinese question reads as one after the glossary ("where do I merge the LoRA model?").
        let r = idx.search_ranked("在哪里合并LoRa模型？", 3, None).unwrap();
        assert_eq!(r.confidence.reason, "usage question", "{r:?}");
    }

    /// `names_no_symptom`: a report that says something failed but not what, and a topic with
    /// no word of trouble, are not confident (the nearest entries are still listed); a symptom
    /// the entry shows is, with or without a word of trouble.
    #[test]
    fn statements_that_name_no_symptom_are_not_confident() {
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        for (q, reason) in [
            (
                "When I run train.py, I always get an error in epoch 32.",
                "vague report",
            ),
            (
                "I'm trying to run the toy example, but I get the following error",
                "vague report",
            ),
            // "SFT" says where, not what; the glossary reads 训练报错 as "training error".
            ("Qwen3.5 SFT 训练报错", "vague report"),
            ("Fine tuning model", "no problem stated"),
            ("Training a Model", "no problem stated"),
            ("fine-tuning llama", "no problem stated"),
            // A result judged bad, and nothing said of what is wrong with it.
            (
                "why the b0 results is so bad at cityscapes, when I train from scratch",
                "vague report",
            ),
            ("The effect is worse after fine-tuning", "vague report"),
        ] {
            let r = idx.search_ranked(q, 3, None).unwrap();
            assert!(!r.confidence.confident, "{q}: {r:?}");
            assert_eq!(r.confidence.reason, reason, "{q}: {r:?}");
            assert!(
                !r.hits.is_empty(),
                "{q}: the nearest entries are still listed"
            );
        }
        // An error that says what it is, a symptom beside "error", or a symptom with no word
        // of trouble at all, is judged as before.
        for (q, id) in [
            ("error: CUDA out of memory at the first step", "M1"),
            (
                "training error: loss is nan after a few steps in fp16",
                "P1",
            ),
            ("catastrophic forgetting after fine-tuning", "L11"),
            ("Lora generates noise only", "DF1"),
            (
                "training on 4 GPUs gives worse accuracy than on one GPU",
                "D7",
            ),
        ] {
            let r = idx.search_ranked(q, 3, None).unwrap();
            assert!(r.confidence.confident, "{q}: {r:?}");
            assert_eq!(r.hits[0].id, id, "{q}: {r:?}");
        }
    }

    #[test]
    fn entries_about_one_method_yield_to_queries_naming_another() {
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        let scope = |id: &str| {
            let i = idx.ids.iter().position(|(e, _)| e == id).unwrap();
            idx.lexicon.entry_methods[i].len()
        };
        // Titles that name a method are scoped to it; a parenthesised list of examples is not.
        assert_eq!(scope("L9"), 1);
        assert_eq!(scope("H3"), 1);
        assert_eq!(
            scope("G3"),
            0,
            "(GGUF, merged LoRA, quantised) is a list of examples"
        );
        assert_eq!(scope("V6"), 0);
        // A PPO run that does not learn is not the GRPO entry's business.
        let r = idx
            .search_ranked(
                "PPO model does not learn, average reward never increases",
                5,
                None,
            )
            .unwrap();
        assert!(!r.hits[0].id.starts_with('H'), "{r:?}");
        assert!(r.hits.iter().take(3).any(|h| h.id == "R3"), "{r:?}");
        // And the other way round: a GRPO run is not the PPO entries' business.
        let r = idx
            .search_ranked(
                "GRPO policy does not learn, reward never increases",
                5,
                None,
            )
            .unwrap();
        assert!(r.hits[0].id.starts_with('H'), "{r:?}");
    }

    #[test]
    fn entries_bound_to_one_time_in_the_run_yield_to_queries_placing_the_trouble_at_another() {
        use super::phase::Phase;
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        let when = |id: &str| {
            let i = idx.ids.iter().position(|(e, _)| e == id).unwrap();
            idx.lexicon.entry_phases[i].clone()
        };
        // Read from the titles: the first step, evaluation, mid-run; most entries name no time.
        assert_eq!(when("M1"), [Phase::Start]);
        assert_eq!(when("M6"), [Phase::Eval]);
        assert_eq!(when("R1"), [Phase::Later]);
        assert_eq!(when("M2"), []);
        assert_eq!(
            when("S4.1"),
            [],
            "'the first 200 steps' is a window, not the start"
        );
        let first = |q: &str| idx.search_ranked(q, 3, None).unwrap().hits[0].id.clone();
        // An OOM placed later in the run is not the first-step OOM, whatever error it quotes.
        assert_eq!(
            first("cuda runtime error: out of memory after 15K iteration of 4 GPUs training"),
            "M2"
        );
        assert_ne!(
            first("after 4800 batches it threw an error about out of memory"),
            "M1"
        );
        assert_eq!(
            first("During the first evaluation after training, an OOM error occurs"),
            "M6"
        );
        // Placed where the entry is, or nowhere, the entry keeps its rank.
        assert_eq!(first("CUDA out of memory at the first step"), "M1");
        assert_eq!(
            first("CUDA out of memory. Tried to allocate 4.00 GiB"),
            "M1"
        );
    }

    /// `Lexicon::phrase_share`: the words of one users' statement together, not scattered over
    /// an entry, and never a statement about another quantity than the query's.
    #[test]
    fn one_users_statement_explaining_the_query_lifts_its_entry() {
        let yaml = r#"
entries:
  - id: A1
    domain: convergence
    title: Warmup too short for the batch size
    symptom: The run diverges early.
    cause: Adam moments are noisy at the start.
    fix: Lengthen the warmup.
    phrases:
      - "validation loss explodes right after the warmup ends"
      - "lr stays constant after the warmup"
  - id: B1
    domain: convergence
    title: Validation split leaks into training
    symptom: The loss on held-out data explodes late in the run.
    cause: The validation set shares examples after the warmup ends.
    fix: Deduplicate the splits.
"#;
        let mut raw = crate::catalog::load::RawPlaybook::default();
        crate::catalog::load::parse_file(std::path::Path::new("t.yaml"), yaml, &mut raw).unwrap();
        let idx = SearchIndex::build(&Catalog::from_raw(raw)).unwrap();
        let share = |q: &str, entry: usize, subjects: &[&str]| {
            let (_, q, _) = idx.run(q, 5, None).unwrap();
            let words = idx.word_ids(&q);
            let subjects: Vec<Vec<u32>> = subjects
                .iter()
                .map(|s| idx.lexicon.stem_id(s).into_iter().collect())
                .collect();
            idx.lexicon.phrase_share(entry, &words, &subjects)
        };
        let q = "validation loss explodes after the warmup ends";
        assert!(share(q, 0, &[]) > 0.99, "{}", share(q, 0, &[]));
        // B1 holds the same words, but no statement of it does.
        assert_eq!(share(q, 1, &[]), 0.0);
        let r = idx.search_ranked(q, 2, None).unwrap();
        assert_eq!(r.hits[0].id, "A1", "{r:?}");
        // "lr stays constant" explains most of "loss stays constant", but not the loss: only
        // the other statement ("after the warmup") counts then.
        let q = "loss stays constant after the warmup";
        assert!(share(q, 0, &[]) > 0.6, "{}", share(q, 0, &[]));
        assert!(share(q, 0, &["loss"]) < 0.4, "{}", share(q, 0, &["loss"]));
    }

    #[test]
    fn documents_sit_in_catalog_order() {
        let cat = Catalog::embedded().unwrap();
        let idx = SearchIndex::build(&cat).unwrap();
        let searcher = idx.reader.searcher();
        assert_eq!(searcher.segment_readers().len(), 1);
        for (i, (id, _)) in idx.ids.iter().enumerate() {
            let addr = tantivy::DocAddress::new(0, i as u32);
            let doc: TantivyDocument = searcher.doc(addr).unwrap();
            let stored = doc
                .get_first(idx.fields.id)
                .and_then(|v| tantivy::schema::Value::as_str(&v).map(str::to_string))
                .unwrap();
            assert_eq!(stored, id.to_ascii_lowercase());
            assert_eq!(idx.entry_of(&searcher, addr), Some(i));
        }
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
