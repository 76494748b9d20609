//! Highlighted excerpts for search hits: which text of an entry to show, sentence splitting,
//! one-edit fuzzy matching of words, and truncation around the first highlight.

use crate::catalog::Entry;

use super::Snippet;

pub(super) fn snippet_sources(e: &Entry) -> Vec<String> {
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

pub(super) fn split_sentences(s: &str) -> impl Iterator<Item = &str> {
    s.split_inclusive(". ")
        .map(str::trim)
        .filter(|x| !x.is_empty())
}

pub(super) fn edit_distance_le1(a: &str, b: &str) -> bool {
    // Called for every word of every sentence of every hit on each keystroke: ASCII words
    // (nearly all) are compared as bytes, without collecting characters.
    if a.is_ascii() && b.is_ascii() {
        return within_one_edit(a.as_bytes(), b.as_bytes());
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    within_one_edit(&a, &b)
}

fn within_one_edit<T: PartialEq>(a: &[T], b: &[T]) -> bool {
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
pub(super) fn truncate_snippet(s: &mut Snippet, max: usize) {
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
}
