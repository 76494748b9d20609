//! Where each entry, probe and tree of a playbook file is defined: the line of its `id:`.
//! Shared word for word by `build.rs` (which finds the lines of every shipped file once, at
//! build time) and `load.rs` (a user's `--playbook DIR` files, and any shipped file read from
//! its YAML), so both give the same `file:line`. Plain std only: build.rs includes this file.

/// Every `id: <value>` (block or flow style) of a file with its line (1-based), in order,
/// found in one pass over the text.
pub struct IdLines<'a>(Vec<(usize, &'a str)>);

impl<'a> IdLines<'a> {
    pub fn new(text: &'a str) -> IdLines<'a> {
        let mut out = Vec::new();
        let (mut line, mut counted) = (1usize, 0usize);
        for (pos, _) in text.match_indices("id:") {
            line += text.as_bytes()[counted..pos]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            counted = pos;
            let before = text[..pos].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let after = &text[pos + 3..];
            let after = &after[..after.find('\n').unwrap_or(after.len())];
            let v = after.trim_start();
            let end = v.find([',', '}', '#', ' ']).unwrap_or(v.len());
            let v = v[..end].trim_end_matches('\r');
            out.push((line, v.trim_matches(|c| c == '"' || c == '\'')));
        }
        IdLines(out)
    }

    /// Line of the first `id: <id>` at or after `from_line`, or 1.
    pub fn line_of(&self, id: &str, from_line: usize) -> usize {
        self.0
            .iter()
            .find(|(l, v)| *l >= from_line && *v == id)
            .map_or(1, |(l, _)| *l)
    }
}

/// The lines of one file's definitions, in the order the file lists them.
#[derive(Debug, Default, PartialEq)]
pub struct DefLines {
    pub entries: Vec<usize>,
    pub probes: Vec<usize>,
    pub tree: Option<usize>,
}

/// The line of each entry id, each probe id (each searched from the line of the one before,
/// so a repeated id gets its own line) and the tree id, as found in `text`.
pub fn def_lines<'i>(
    text: &str,
    entries: impl IntoIterator<Item = &'i str>,
    probes: impl IntoIterator<Item = &'i str>,
    tree: Option<&str>,
) -> DefLines {
    let ids = IdLines::new(text);
    let in_order = |list: &mut dyn Iterator<Item = &'i str>| {
        let mut cursor = 1;
        list.map(|id| {
            cursor = ids.line_of(id, cursor);
            cursor
        })
        .collect()
    };
    DefLines {
        entries: in_order(&mut entries.into_iter()),
        probes: in_order(&mut probes.into_iter()),
        tree: tree.map(|id| ids.line_of(id, 1)),
    }
}
