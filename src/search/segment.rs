//! The tantivy segment over the catalog: its schema, the documents (each entry's texts as the
//! stems the index holds, made by `analyse` on every start for the lexicon anyway), and the
//! segment itself, opened from the copy prepared for the shipped playbook
//! (`assets/search-segment.bin`) when that copy's fingerprint is this start's documents', and
//! written afresh otherwise (a user's playbook, or a copy left stale by a change).
//!
//! The prepared copy is made by the test `the_prepared_segment_is_the_shipped_playbook_s`:
//! it fails when the copy is stale and rewrites it when run with `MLTRIAGE_BLESS=1`.

use std::ops::Range;
use std::path::Path;

use tantivy::directory::{Directory, RamDirectory};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, STRING};
use tantivy::tokenizer::{RawTokenizer, TextAnalyzer, TokenizerManager, WhitespaceTokenizer};
use tantivy::{Index, TantivyDocument, TantivyError};

/// The index fields' tokenizer: stems joined by spaces (see [`Docs`]).
const STEMS: &str = "mlt_stems";
/// Writer memory budget. It only sizes the segment writer's initial term table (2^12 slots
/// here; the table grows as terms come): tantivy's usual 15 MB meant a 2^19-slot table, about
/// 3 ms of page faults on every start. Measured: 0.1 to 1 MB alike, 15 MB 4 ms more CPU.
const WRITER_BUDGET: usize = 300_000;
/// What the fingerprint cannot see in the schema or the documents: how the segment is
/// written (the tokenizers). Change it when that changes.
const WRITING: &str = "stems: whitespace; id, domain: raw; one segment";

/// The segment prepared for the shipped playbook (see the module comment).
static PREPARED: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/search-segment.bin"
));
/// First bytes of a prepared segment file.
const MAGIC: &[u8; 8] = b"mltseg1\n";

/// The index's fields.
pub(super) struct Fields {
    pub id: Field,
    pub domain: Field,
    pub title: Field,
    pub keywords: Field,
    pub phrases: Field,
    pub errors: Field,
    pub symptom: Field,
    pub question: Field,
    pub cause: Field,
    pub fix: Field,
}

/// The schema: the id and domain as raw strings (the id stored), every text field with word
/// frequencies (no positions: queries are terms, snippets come from the entries' own text).
pub(super) fn schema() -> (Schema, Fields) {
    let mut sb = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(STEMS)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        id: sb.add_text_field("id", STRING | tantivy::schema::STORED),
        domain: sb.add_text_field("domain", STRING),
        title: sb.add_text_field("title", text.clone()),
        keywords: sb.add_text_field("keywords", text.clone()),
        phrases: sb.add_text_field("phrases", text.clone()),
        errors: sb.add_text_field("errors", text.clone()),
        symptom: sb.add_text_field("symptom", text.clone()),
        question: sb.add_text_field("question", text.clone()),
        cause: sb.add_text_field("cause", text.clone()),
        fix: sb.add_text_field("fix", text),
    };
    (sb.build(), fields)
}

fn tokenizers() -> TokenizerManager {
    let t = TokenizerManager::new();
    t.register(STEMS, TextAnalyzer::from(WhitespaceTokenizer::default()));
    // The id and domain fields (STRING).
    t.register("raw", RawTokenizer::default());
    t
}

/// The documents, in catalog order: each a list of (field, text) values in one buffer. A
/// field may take several values (an entry's keywords, then its knobs). A text value is its
/// words' stems joined by spaces, stop words left out as the query analyzer leaves them out,
/// split again by a whitespace tokenizer: the terms are exactly the query's analysed tokens.
#[derive(Default)]
pub(super) struct Docs {
    text: String,
    /// Per document, where its values start in `values`.
    starts: Vec<usize>,
    values: Vec<(Field, Range<usize>)>,
}

impl Docs {
    pub(super) fn with_capacity(docs: usize) -> Docs {
        Docs {
            text: String::with_capacity(docs * 1024),
            starts: Vec::with_capacity(docs),
            values: Vec::with_capacity(docs * 11),
        }
    }

    /// Begin the next document.
    pub(super) fn start(&mut self) {
        self.starts.push(self.values.len());
    }

    /// Add a value to the current document: what `write` appends to the buffer.
    pub(super) fn add(&mut self, field: Field, write: impl FnOnce(&mut String)) {
        let s = self.text.len();
        write(&mut self.text);
        self.values.push((field, s..self.text.len()));
    }

    fn doc(&self, i: usize) -> &[(Field, Range<usize>)] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.values.len());
        &self.values[self.starts[i]..end]
    }

    /// A 64-bit fingerprint of everything the segment is made from: tantivy's version, the
    /// schema, how it is written, and every document's values in order.
    fn fingerprint(&self, schema: &Schema) -> u64 {
        let mut h = Fingerprint::default();
        h.bytes(tantivy::version_string().as_bytes());
        h.bytes(serde_json::to_string(schema).unwrap_or_default().as_bytes());
        h.bytes(WRITING.as_bytes());
        h.word(self.starts.len() as u64);
        for i in 0..self.starts.len() {
            let doc = self.doc(i);
            h.word(doc.len() as u64);
            for (f, r) in doc {
                h.word(f.field_id() as u64);
                h.bytes(self.text[r.clone()].as_bytes());
            }
        }
        h.0
    }
}

/// A chain of bijections of the state, one per 8-byte word: two inputs that differ in one word
/// always give different fingerprints; otherwise they collide by chance (2^-64). The same on
/// every platform and toolchain (std's hashers promise neither).
#[derive(Default)]
struct Fingerprint(u64);

impl Fingerprint {
    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }

    /// Length first, so values cannot run into each other.
    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
    }
}

/// The segment over `docs`: the prepared copy when it was made from the same documents,
/// written here otherwise.
pub(super) fn index(docs: &Docs, schema: Schema) -> Result<Index, TantivyError> {
    let fp = docs.fingerprint(&schema);
    if let Some(index) = open_prepared(PREPARED, fp) {
        return Ok(index);
    }
    write(docs, schema).map(|(index, _)| index)
}

/// One segment written in this thread into an empty RAM directory: no indexing thread,
/// channel, commit or merge bookkeeping (the documented use of tantivy's single-segment
/// writer). The directory is handed back beside the index (the prepared copy is read from it).
fn write(docs: &Docs, schema: Schema) -> Result<(Index, RamDirectory), TantivyError> {
    let ram = RamDirectory::create();
    let mut writer = Index::builder()
        .schema(schema)
        .tokenizers(tokenizers())
        .single_segment_index_writer::<TantivyDocument>(ram.clone(), WRITER_BUDGET)?;
    for i in 0..docs.starts.len() {
        let mut doc = TantivyDocument::default();
        for (f, r) in docs.doc(i) {
            doc.add_text(*f, &docs.text[r.clone()]);
        }
        writer.add_document(doc)?;
    }
    Ok((writer.finalize()?, ram))
}

/// Named files.
type Files<'a> = Vec<(&'a str, &'a [u8])>;

/// The files of a prepared segment: `MAGIC`, the fingerprint, then each file as its name and
/// its bytes (lengths as little-endian u32 before each).
fn files(bytes: &[u8]) -> Option<(u64, Files<'_>)> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (fp, mut rest) = rest.split_first_chunk::<8>()?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let name = take_chunk(&mut rest)?;
        let data = take_chunk(&mut rest)?;
        out.push((std::str::from_utf8(name).ok()?, data));
    }
    Some((u64::from_le_bytes(*fp), out))
}

fn take_chunk<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (n, r) = rest.split_first_chunk::<4>()?;
    let n = u32::from_le_bytes(*n) as usize;
    let (v, r) = (r.get(..n)?, r.get(n..)?);
    *rest = r;
    Some(v)
}

/// The index in a prepared segment file, when it holds the segment for fingerprint `fp`.
fn open_prepared(bytes: &[u8], fp: u64) -> Option<Index> {
    let (have, files) = files(bytes)?;
    if have != fp {
        return None;
    }
    let ram = RamDirectory::create();
    for (name, data) in files {
        ram.atomic_write(Path::new(name), data).ok()?;
    }
    let mut index = Index::open(ram).ok()?;
    index.set_tokenizers(tokenizers());
    Some(index)
}

/// The prepared segment file for `docs`: the index's files as tantivy wrote them (made by the
/// test that keeps `assets/search-segment.bin` fresh).
#[cfg(test)]
fn prepare(docs: &Docs, schema: Schema) -> Result<Vec<u8>, TantivyError> {
    let fp = docs.fingerprint(&schema);
    let (index, ram) = write(docs, schema)?;
    let mut names = vec![std::path::PathBuf::from("meta.json")];
    for meta in index.searchable_segment_metas()? {
        for c in [
            tantivy::index::SegmentComponent::Postings,
            tantivy::index::SegmentComponent::Positions,
            tantivy::index::SegmentComponent::FastFields,
            tantivy::index::SegmentComponent::FieldNorms,
            tantivy::index::SegmentComponent::Terms,
            tantivy::index::SegmentComponent::Store,
        ] {
            names.push(meta.relative_path(c));
        }
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&fp.to_le_bytes());
    for name in names {
        let Ok(file) = ram.open_read(&name) else {
            continue; // a component this schema does not make
        };
        let data = file.read_bytes()?;
        for v in [name.to_string_lossy().as_bytes(), data.as_slice()] {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn shipped_docs() -> (Docs, Schema) {
        let (schema, fields) = schema();
        let (docs, ..) = super::super::analysed(&Catalog::embedded().unwrap(), &fields);
        (docs, schema)
    }

    /// The files of a prepared segment with the segment's id (random on every write) replaced
    /// by a fixed one, for comparing two writes.
    fn normalised(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        let (_, files) = files(bytes).expect("a prepared segment file");
        let id = files
            .iter()
            .find_map(|(n, _)| n.strip_suffix(".term"))
            .expect("a term dictionary")
            .to_string();
        // meta.json writes it as a UUID, the file names as hex alone.
        let uuid = [&id[..8], &id[8..12], &id[12..16], &id[16..20], &id[20..]].join("-");
        files
            .into_iter()
            .map(|(n, d)| {
                let d = String::from_utf8(d.to_vec())
                    .map(|t| {
                        t.replace(&id, "SEGMENT")
                            .replace(&uuid, "SEGMENT")
                            .into_bytes()
                    })
                    .unwrap_or_else(|e| e.into_bytes());
                (n.replace(&id, "SEGMENT"), d)
            })
            .collect()
    }

    /// The shipped playbook's segment is prepared, and prepared from what this build analyses
    /// and writes. When it is not, run `MLTRIAGE_BLESS=1 cargo test --lib prepared_segment`
    /// to rewrite `assets/search-segment.bin`, and commit it.
    #[test]
    fn the_prepared_segment_is_the_shipped_playbook_s() {
        let (docs, schema) = shipped_docs();
        let fresh = prepare(&docs, schema.clone()).unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/search-segment.bin");
        let stale = files(PREPARED).map(|(fp, _)| fp) != Some(docs.fingerprint(&schema))
            || normalised(PREPARED) != normalised(&fresh);
        if stale && std::env::var_os("MLTRIAGE_BLESS").is_some() {
            std::fs::write(path, &fresh).unwrap();
            eprintln!("rewrote {path}: rebuild to ship it");
            return;
        }
        assert!(
            !stale,
            "{path} is stale: run `MLTRIAGE_BLESS=1 cargo test --lib prepared_segment`"
        );
        assert!(open_prepared(PREPARED, docs.fingerprint(&schema)).is_some());
    }

    #[test]
    fn other_documents_get_a_segment_written_for_them() {
        let (mut docs, schema) = shipped_docs();
        let shipped = docs.fingerprint(&schema);
        // One more document (a user's entry): a fingerprint of its own, and the segment holds it.
        let (_, fields) = super::schema();
        docs.start();
        docs.add(fields.id, |s| s.push_str("u1"));
        docs.add(fields.title, |s| s.push_str("loss spike"));
        assert_ne!(docs.fingerprint(&schema), shipped);
        let index = index(&docs, schema).unwrap();
        let n: u32 = index
            .searchable_segment_metas()
            .unwrap()
            .iter()
            .map(|m| m.max_doc())
            .sum();
        assert_eq!(n as usize, docs.starts.len());
    }

    #[test]
    fn one_changed_word_changes_the_fingerprint() {
        let (schema, fields) = schema();
        let make = |title: &str| {
            let mut d = Docs::default();
            d.start();
            d.add(fields.title, |s| s.push_str(title));
            d.fingerprint(&schema)
        };
        assert_eq!(make("loss spike"), make("loss spike"));
        assert_ne!(make("loss spike"), make("loss spikf"));
        // Values cannot run into each other.
        let mut a = Docs::default();
        a.start();
        a.add(fields.title, |s| s.push_str("abc"));
        a.add(fields.title, |s| s.push_str("de"));
        let mut b = Docs::default();
        b.start();
        b.add(fields.title, |s| s.push_str("ab"));
        b.add(fields.title, |s| s.push_str("cde"));
        assert_ne!(a.fingerprint(&schema), b.fingerprint(&schema));
    }

    #[test]
    fn a_damaged_prepared_file_is_not_opened() {
        let (docs, schema) = shipped_docs();
        let fp = docs.fingerprint(&schema);
        let good = prepare(&docs, schema).unwrap();
        assert!(open_prepared(&good, fp).is_some());
        assert!(open_prepared(&good, fp ^ 1).is_none());
        assert!(open_prepared(&good[..good.len() / 2], fp).is_none());
        assert!(open_prepared(b"", fp).is_none());
        assert!(open_prepared(&good[1..], fp).is_none());
    }
}
