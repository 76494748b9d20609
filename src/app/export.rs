//! Walk transcripts: the path walked (each answer with its measured value and where it came
//! from), the conclusion and its fix, as Markdown ready to paste into an issue or as JSON in
//! the `walk --json` shape (DESIGN.md §4.4). Files are never overwritten: a numeric suffix is
//! added instead.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::catalog::{Catalog, NodeKind};
use crate::trees::Walk;

/// `json` or `md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
}

impl Format {
    pub fn ext(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Json => "json",
        }
    }
    pub fn parse(s: &str) -> Option<Format> {
        match s.trim().to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// The conclusion of a walk: (entry id, title, fix, note) when the walk sits on a leaf.
fn conclusion(cat: &Catalog, walk: &Walk) -> Option<(String, String, String, Option<String>)> {
    let n = walk.node()?;
    if n.kind != NodeKind::Leaf {
        return None;
    }
    let id = n.entry.clone().unwrap_or_default();
    let e = cat.entry(&id);
    Some((
        id,
        e.map(|e| e.title.clone()).unwrap_or_default(),
        e.map(|e| e.fix.clone()).unwrap_or_default(),
        n.note.clone(),
    ))
}

/// A walk's transcript as JSON (`walk --json`'s shape, DESIGN §4.4, plus `facts`: the facts
/// the user set in the session). A route step carries `via` (the branch the route takes)
/// beside what the run said; an overridden step carries `proposed` (what the probe proposed).
pub fn to_json(
    cat: &Catalog,
    walk: &Walk,
    run: Option<&str>,
    facts: &[(String, String)],
) -> serde_json::Value {
    let path: Vec<_> = walk
        .path
        .iter()
        .map(|s| {
            let mut v = json!({"id": s.id, "question": s.question, "answer": s.answer,
                   "measured": s.measured, "source": s.source.as_str()});
            if let Some(via) = &s.via {
                v["via"] = json!(via);
            }
            if let Some(p) = &s.proposed {
                v["proposed"] = json!(p);
            }
            v
        })
        .collect();
    let conclusion = conclusion(cat, walk)
        .map(|(id, title, fix, note)| json!({"id": id, "title": title, "fix": fix, "note": note}));
    let facts: serde_json::Map<String, serde_json::Value> =
        facts.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({"tree": walk.tree.id, "run": run, "path": path, "at": walk.current,
           "conclusion": conclusion, "from": walk.from, "facts": facts})
}

/// A walk's transcript as Markdown: the facts set, each step with what answered it (a skip
/// with its reason, an override with what the probe proposed, a route step with what the run
/// said and the branch the route takes), the conclusion and its fix.
pub fn to_markdown(
    cat: &Catalog,
    walk: &Walk,
    run: Option<&str>,
    facts: &[(String, String)],
) -> String {
    let mut s = format!("## mltriage walk: {}\n\n", walk.tree.title);
    if let Some(r) = run {
        s.push_str(&format!("Run: `{r}`\n\n"));
    }
    if !facts.is_empty() {
        let list: Vec<String> = facts.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
        s.push_str(&format!("Facts set: {}\n\n", list.join(", ")));
    }
    if let Some(f) = &walk.from {
        s.push_str(&format!(
            "Walked from `{}`: started at `{}`, the {} step(s) above it filled in on the way down.\n\n",
            f.id, f.start, f.above
        ));
    }
    s.push_str("| # | node | question | answer | measured | source |\n|---|---|---|---|---|---|\n");
    let cell = |x: &str| x.replace('|', "\\|").replace('\n', " ");
    for (i, st) in walk.path.iter().enumerate() {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            cell(&st.id),
            cell(&st.question),
            cell(&st.shown_answer()),
            {
                let mut m = if st.measured.is_empty() {
                    "—".to_string()
                } else {
                    cell(&st.measured)
                };
                if let Some(p) = &st.proposed {
                    m.push_str(&format!(" (overridden; the run proposed {})", cell(p)));
                }
                m
            },
            cell(&st.source.label())
        ));
    }
    match conclusion(cat, walk) {
        Some((id, title, fix, note)) => {
            s.push_str(&format!("\n**Conclusion: {id} — {title}**\n\n"));
            if let Some(n) = note {
                s.push_str(&format!("{n}\n\n"));
            }
            s.push_str(&format!("**Fix:** {fix}\n"));
        }
        None => s.push_str(&format!(
            "\n(walk stopped at `{}`, no conclusion yet)\n",
            walk.current
        )),
    }
    s
}

/// A transcript the app asks a driver to write: `dir/stem.ext`, never overwriting.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub dir: PathBuf,
    pub stem: String,
    pub ext: String,
    pub content: String,
}

impl Transcript {
    /// [`write_unique`] with the error as one line naming the folder (what the status line
    /// shows).
    pub fn write(&self) -> Result<PathBuf, String> {
        write_unique(&self.dir, &self.stem, &self.ext, &self.content)
            .map_err(|e| format!("{}: {e}", self.dir.display()))
    }
}

/// Create `dir/stem.ext`, or `stem-1.ext`, `stem-2.ext`… when taken; never overwrites.
pub fn write_unique(dir: &Path, stem: &str, ext: &str, content: &str) -> std::io::Result<PathBuf> {
    for n in 0..10_000u32 {
        let name = if n == 0 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let p = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(mut f) => {
                f.write_all(content.as_bytes())?;
                return Ok(p);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many transcripts with this name"))
}

/// Split a user-chosen path into (dir, stem, ext), defaulting the extension to the format's.
pub fn split_target(p: &Path, fmt: Format) -> (PathBuf, String, String) {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "transcript".into());
    let ext = p
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| fmt.ext().into());
    (dir, stem, ext)
}
