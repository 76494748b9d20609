//! Loading playbook YAML (embedded or from `--playbook DIR`) into raw definitions, with
//! `file:line` positions for every entry, probe and tree so errors can point at them.

use std::path::{Path, PathBuf};

use super::id_lines::{def_lines, DefLines};
use super::model::{Domain, Entry, Origin, ProbeDef, Vocabulary};
use super::tree_def::TreeDef;

/// A shipped file's definition lines, found by build.rs: each entry, probe and tree id with
/// the line of its `id:`, in file order.
struct ShippedLines {
    entries: &'static [(&'static str, usize)],
    probes: &'static [(&'static str, usize)],
    tree: Option<(&'static str, usize)>,
}

impl ShippedLines {
    /// The lines for these definitions, when they are the ones build.rs saw (same ids in the
    /// same order; anything else is scanned for in the text).
    fn for_parsed(&self, parsed: &PlaybookFile) -> Option<DefLines> {
        let same = |table: &[(&str, usize)], ids: &mut dyn ExactSizeIterator<Item = &str>| {
            table.len() == ids.len() && table.iter().zip(ids).all(|((a, _), b)| *a == b)
        };
        let tree_same = match (&parsed.tree, self.tree) {
            (None, None) => true,
            (Some(t), Some((id, _))) => t.id == id,
            _ => false,
        };
        (tree_same
            && same(
                self.entries,
                &mut parsed.entries.iter().map(|e| e.id.as_str()),
            )
            && same(
                self.probes,
                &mut parsed.probes.iter().map(|p| p.id.as_str()),
            ))
        .then(|| DefLines {
            entries: self.entries.iter().map(|(_, l)| *l).collect(),
            probes: self.probes.iter().map(|(_, l)| *l).collect(),
            tree: self.tree.map(|(_, l)| l),
        })
    }
}

include!(concat!(env!("OUT_DIR"), "/embedded_playbook.rs"));

/// A playbook problem that stops loading: `file:line: message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct LoadError {
    pub origin: Origin,
    pub message: String,
}

impl LoadError {
    pub fn new(file: &Path, line: usize, message: impl Into<String>) -> Self {
        LoadError {
            origin: Origin {
                file: file.to_path_buf(),
                line,
            },
            message: message.into(),
        }
    }
}

/// One file's worth of definitions.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlaybookFile {
    #[serde(default)]
    entries: Vec<Entry>,
    #[serde(default)]
    probes: Vec<ProbeDef>,
    #[serde(default)]
    tree: Option<TreeDef>,
    #[serde(default)]
    synonyms: Vec<Vec<String>>,
    #[serde(default)]
    cues: std::collections::BTreeMap<Domain, Vec<String>>,
    #[serde(default)]
    outside: Vec<super::model::OutsideTopic>,
    #[serde(default)]
    methods: Vec<Vec<String>>,
    /// The metric vocabulary (`metrics.yaml`): what logged names mean.
    #[serde(default)]
    metrics: Vec<mltriage_probes::metrics::vocab::MetricRule>,
}

/// Everything read from a set of files, in file order.
#[derive(Debug, Default)]
pub struct RawPlaybook {
    pub entries: Vec<Entry>,
    pub probes: Vec<ProbeDef>,
    pub trees: Vec<TreeDef>,
    /// Synonym groups and domain cues for search.
    pub vocab: Vocabulary,
    /// Metric-name rules (`metrics.yaml`), in file order.
    pub metric_rules: Vec<mltriage_probes::metrics::vocab::MetricRule>,
    /// Files read (display names).
    pub files: Vec<PathBuf>,
}

/// Parse one file's text. `name` is what messages call the file.
pub fn parse_file(name: &Path, text: &str, into: &mut RawPlaybook) -> Result<(), LoadError> {
    if text.trim().is_empty() {
        into.files.push(name.to_path_buf());
        return Ok(());
    }
    super::yaml_budget::check(text).map_err(|(line, msg)| LoadError::new(name, line, msg))?;
    let parsed: PlaybookFile = serde_yaml_ng::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(1);
        let msg = e.to_string();
        // serde_yaml_ng appends " at line L column C"; keep the message itself.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        LoadError::new(name, line, msg)
    })?;
    absorb(name, text, parsed, None, into)
}

/// One embedded file: its packed rendering prepared by build.rs when there is one (typed here
/// exactly as the YAML would be, each definition's line taken from build.rs's table), else its
/// YAML.
fn parse_embedded(
    name: &Path,
    text: &str,
    packed: &[u8],
    lines: Option<&ShippedLines>,
    into: &mut RawPlaybook,
) -> Result<(), LoadError> {
    if !packed.is_empty() {
        if let Ok(parsed) = super::packed::from_bytes::<PlaybookFile>(packed) {
            let lines = lines.and_then(|l| l.for_parsed(&parsed));
            return absorb(name, text, parsed, lines, into);
        }
    }
    parse_file(name, text, into)
}

/// File a parsed document's definitions, with each one's `file:line`: from `lines` when given
/// (a shipped file's table), else found in `text`.
fn absorb(
    name: &Path,
    text: &str,
    parsed: PlaybookFile,
    lines: Option<DefLines>,
    into: &mut RawPlaybook,
) -> Result<(), LoadError> {
    if text.trim().is_empty() {
        into.files.push(name.to_path_buf());
        return Ok(());
    }
    let lines = lines.unwrap_or_else(|| {
        def_lines(
            text,
            parsed.entries.iter().map(|e| e.id.as_str()),
            parsed.probes.iter().map(|p| p.id.as_str()),
            parsed.tree.as_ref().map(|t| t.id.as_str()),
        )
    });
    let origin = |line: usize| Origin {
        file: name.to_path_buf(),
        line,
    };
    into.entries.reserve(parsed.entries.len());
    for (mut e, line) in parsed.entries.into_iter().zip(lines.entries) {
        e.origin = origin(line);
        into.entries.push(e);
    }
    for (mut p, line) in parsed.probes.into_iter().zip(lines.probes) {
        p.origin = origin(line);
        into.probes.push(p);
    }
    if let Some(mut t) = parsed.tree {
        t.origin = origin(lines.tree.unwrap_or(1));
        into.trees.push(t);
    }
    into.vocab.extend(Vocabulary {
        synonyms: parsed.synonyms,
        cues: parsed.cues,
        outside: parsed.outside,
        methods: parsed.methods,
    });
    if !parsed.metrics.is_empty() {
        let rules = mltriage_probes::metrics::vocab::Vocabulary {
            rules: parsed.metrics,
        };
        rules
            .validate()
            .map_err(|msg| LoadError::new(name, 1, msg))?;
        into.metric_rules.extend(rules.rules);
    }
    into.files.push(name.to_path_buf());
    Ok(())
}

/// The embedded playbook, parsed. Fails only if the shipped YAML is broken (a test guards it).
pub fn embedded() -> Result<RawPlaybook, LoadError> {
    // Parsing is most of start-up: split the files between two threads (in file order, each
    // half parsed into its own playbook) and join the halves in order, so the result is the
    // same as a sequential parse.
    let parse = |files: &[(&str, &str)], packed: &[&[u8]]| -> Result<RawPlaybook, LoadError> {
        let mut raw = RawPlaybook::default();
        for (i, (rel, text)) in files.iter().enumerate() {
            let bytes = packed.get(i).copied().unwrap_or(&[]);
            let lines = if bytes.is_empty() {
                None
            } else {
                EMBEDDED_LINES.get(i).and_then(Option::as_ref)
            };
            parse_embedded(
                &Path::new("playbook").join(rel),
                text,
                bytes,
                lines,
                &mut raw,
            )?;
        }
        Ok(raw)
    };
    // The packed renderings read in well under the cost of a thread: one pass, in order.
    if EMBEDDED_PACKED.len() == EMBEDDED.len()
        && EMBEDDED
            .iter()
            .zip(EMBEDDED_PACKED)
            .all(|((_, t), b)| !b.is_empty() || t.trim().is_empty())
    {
        return parse(EMBEDDED, EMBEDDED_PACKED);
    }
    let total: usize = EMBEDDED.iter().map(|(_, t)| t.len()).sum();
    let mut acc = 0;
    let split = EMBEDDED
        .iter()
        .position(|(_, t)| {
            acc += t.len();
            acc * 2 >= total
        })
        .map_or(EMBEDDED.len(), |i| i + 1);
    let (a, b) = EMBEDDED.split_at(split);
    let (first, second) = std::thread::scope(|s| {
        let second = s.spawn(|| parse(b, &[]));
        (parse(a, &[]), second.join())
    });
    let mut raw = first?;
    let second = second.unwrap_or_else(|_| parse(b, &[]))?;
    raw.entries.extend(second.entries);
    raw.probes.extend(second.probes);
    raw.trees.extend(second.trees);
    raw.vocab.extend(second.vocab);
    raw.metric_rules.extend(second.metric_rules);
    raw.files.extend(second.files);
    Ok(raw)
}

/// Names of the embedded files (relative to `playbook/`).
pub fn embedded_files() -> impl Iterator<Item = &'static str> {
    EMBEDDED.iter().map(|(n, _)| *n)
}

/// The embedded files' names and texts (for tests).
#[cfg(test)]
pub(crate) fn embedded_texts() -> impl Iterator<Item = (&'static str, &'static str)> {
    EMBEDDED.iter().copied()
}

/// Most directory entries looked at under `--playbook DIR`.
pub const MAX_WALK_ENTRIES: usize = 10_000;
/// Deepest folder level searched under `--playbook DIR`.
pub const MAX_WALK_DEPTH: usize = 8;

/// Every `*.yaml`/`*.yml` under `dir` (recursively, sorted), parsed. Stops at the first
/// broken file (`file:line: message`). Symlinked folders are not followed, the walk is bounded
/// ([`MAX_WALK_ENTRIES`], [`MAX_WALK_DEPTH`]) and only regular files are read.
pub fn from_dir(dir: &Path) -> Result<RawPlaybook, LoadError> {
    let meta = std::fs::metadata(dir).map_err(|e| LoadError::new(dir, 0, e.to_string()))?;
    if !meta.is_dir() {
        return Err(LoadError::new(dir, 0, "not a directory"));
    }
    let mut files = Vec::new();
    let mut seen = 0usize;
    collect_yaml(dir, &mut files, 0, &mut seen)?;
    files.sort();
    let mut raw = RawPlaybook::default();
    for f in files {
        let max = super::yaml_budget::MAX_YAML_BYTES as u64;
        let len = mltriage_probes::limits::open_regular_io(&f)
            .and_then(|h| h.metadata())
            .map_err(|e| LoadError::new(&f, 0, e.to_string()))?
            .len();
        if len > max {
            return Err(LoadError::new(
                &f,
                0,
                format!("{len} bytes is over the {} KiB YAML size budget", max >> 10),
            ));
        }
        let bytes =
            mltriage_probes::limits::read_capped_io(&f, super::yaml_budget::MAX_YAML_BYTES as u64)
                .map_err(|e| LoadError::new(&f, 0, e.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|e| LoadError::new(&f, 0, format!("not UTF-8 text ({e})")))?;
        parse_file(&f, &text, &mut raw)?;
    }
    Ok(raw)
}

fn collect_yaml(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    depth: usize,
    seen: &mut usize,
) -> Result<(), LoadError> {
    if depth > MAX_WALK_DEPTH {
        return Ok(());
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        *seen += 1;
        if *seen > MAX_WALK_ENTRIES {
            return Err(LoadError::new(
                dir,
                0,
                format!(
                    "more than {MAX_WALK_ENTRIES} entries under the playbook folder (walk budget)"
                ),
            ));
        }
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        // The entry's own type: a symlink to a folder is not followed (no loops, no escape).
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            collect_yaml(&p, out, depth + 1, seen)?;
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
    Ok(())
}

/// Fuzz entry: arbitrary bytes as a playbook file, then lint what parsed. Never panics.
pub fn fuzz_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut raw = RawPlaybook::default();
    if parse_file(Path::new("fuzz.yaml"), text, &mut raw).is_ok() {
        let cat = super::Catalog::from_raw(raw);
        let _ = super::lint::lint(
            &cat,
            &super::lint::LintOptions {
                implemented: &[],
                complete: false,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_error_names_file_and_line() {
        let mut raw = RawPlaybook::default();
        let text = "entries:\n  - id: A1\n    domain: llm\n    title: [unclosed\n";
        let e = parse_file(Path::new("x.yaml"), text, &mut raw).unwrap_err();
        assert_eq!(e.origin.file, Path::new("x.yaml"));
        assert!(e.origin.line >= 4, "{e}");
    }

    #[test]
    fn unknown_field_is_rejected_with_its_line() {
        let mut raw = RawPlaybook::default();
        let text = "entries:\n  - id: A1\n    domain: llm\n    title: t\n    symptom: s\n    cause: c\n    fix: f\n    colour: red\n";
        let e = parse_file(Path::new("x.yaml"), text, &mut raw).unwrap_err();
        assert!(e.message.contains("colour"), "{e}");
    }

    #[test]
    fn every_shipped_file_reads_from_its_packed_form_exactly_as_from_its_yaml() {
        assert_eq!(EMBEDDED_PACKED.len(), EMBEDDED.len());
        assert_eq!(EMBEDDED_LINES.len(), EMBEDDED.len());
        for (((rel, text), packed), lines) in
            EMBEDDED.iter().zip(EMBEDDED_PACKED).zip(EMBEDDED_LINES)
        {
            if text.trim().is_empty() {
                continue;
            }
            let name = Path::new("playbook").join(rel);
            let parsed = crate::catalog::packed::from_bytes::<PlaybookFile>(packed);
            assert!(
                parsed.is_ok(),
                "{rel}: no packed rendering the typed read accepts: {:?}",
                parsed.as_ref().err()
            );
            let table = lines.as_ref().and_then(|l| l.for_parsed(&parsed.unwrap()));
            assert!(
                table.is_some(),
                "{rel}: no line table from build.rs for its definitions"
            );
            let (mut a, mut b) = (RawPlaybook::default(), RawPlaybook::default());
            parse_file(&name, text, &mut a).unwrap();
            parse_embedded(&name, text, packed, lines.as_ref(), &mut b).unwrap();
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{rel}");
        }
    }

    #[test]
    fn a_line_table_for_other_definitions_is_not_used() {
        let text = "entries:\n  - id: A1\n    domain: llm\n    title: t\n    symptom: s\n    cause: c\n    fix: f\n";
        let parsed: PlaybookFile = serde_yaml_ng::from_str(text).unwrap();
        let table = ShippedLines {
            entries: &[("A1", 7)],
            probes: &[],
            tree: None,
        };
        assert_eq!(table.for_parsed(&parsed).unwrap().entries, vec![7]);
        for other in [
            ShippedLines {
                entries: &[("A2", 7)],
                probes: &[],
                tree: None,
            },
            ShippedLines {
                entries: &[("A1", 7), ("A2", 9)],
                probes: &[],
                tree: None,
            },
            ShippedLines {
                entries: &[("A1", 7)],
                probes: &[],
                tree: Some(("t", 1)),
            },
        ] {
            assert!(other.for_parsed(&parsed).is_none());
        }
        // A table that does not match is ignored: the line is found in the text.
        let packed = crate::catalog::pack_write::to_packed(text);
        let mut raw = RawPlaybook::default();
        let wrong = ShippedLines {
            entries: &[("A2", 7)],
            probes: &[],
            tree: None,
        };
        parse_embedded(Path::new("x.yaml"), text, &packed, Some(&wrong), &mut raw).unwrap();
        assert_eq!(raw.entries[0].origin.line, 2);
        let mut raw = RawPlaybook::default();
        parse_embedded(Path::new("x.yaml"), text, &packed, Some(&table), &mut raw).unwrap();
        assert_eq!(raw.entries[0].origin.line, 7, "a matching table is used");
    }

    #[test]
    fn ids_are_found_in_block_and_flow_style_on_their_line() {
        let text = "a:\n  - id: A1\n  - {id: \"B2\", x: 1}\nentry_id: C3\n  - id: A1\r\n";
        let ids = crate::catalog::id_lines::IdLines::new(text);
        assert_eq!(ids.line_of("A1", 1), 2);
        assert_eq!(ids.line_of("B2", 1), 3);
        assert_eq!(ids.line_of("C3", 1), 1, "entry_id: is not an id");
        assert_eq!(ids.line_of("A1", 3), 5);
        assert_eq!(ids.line_of("Z9", 1), 1);
    }

    #[test]
    fn entries_get_their_line() {
        let mut raw = RawPlaybook::default();
        let text = "entries:\n  - id: A1\n    domain: llm\n    title: t\n    symptom: s\n    cause: c\n    fix: f\n  - id: A2\n    domain: rl\n    title: t\n    symptom: s\n    cause: c\n    fix: f\n";
        parse_file(Path::new("x.yaml"), text, &mut raw).unwrap();
        assert_eq!(raw.entries[0].origin.line, 2);
        assert_eq!(raw.entries[1].origin.line, 8);
    }
}
