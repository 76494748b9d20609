//! The search screen's state and keys: the query typed live, full-text (tantivy) or fuzzy
//! id/title results, a domain filter; Enter opens the selected entry. With a run attached,
//! hits whose entry fails or warns on the run rank first and every hit carries the run's
//! verdict for its entry (`run_verdicts`, `promote_by_run`: `search --run` uses them too).

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mltriage_probes::probe::Status;

use super::{Action, App};
use crate::catalog::Domain;
use crate::findings::Finding;

/// Hits this far down the list can be lifted by the run's verdict; below it the match is too
/// weak for a failing probe to make it the answer.
pub const PROMOTE_WITHIN: usize = 20;

/// The run's verdict per entry: the worst status among its findings (fail, warn, pass); an
/// entry whose probes all skipped has none.
pub fn run_verdicts(findings: &[Finding]) -> HashMap<String, Status> {
    let mut out: HashMap<String, Status> = HashMap::new();
    for f in findings {
        if f.status == Status::Skip {
            continue;
        }
        let slot = out.entry(f.id.clone()).or_insert(f.status);
        if severity(f.status) < severity(*slot) {
            *slot = f.status;
        }
    }
    out
}

fn severity(s: Status) -> u8 {
    match s {
        Status::Fail => 0,
        Status::Warn => 1,
        Status::Pass => 2,
        Status::Skip => 3,
    }
}

/// How close to the best hit's score a hit must be for the run's verdict to lift it: the run
/// reorders answers to the question asked, it never lifts an entry the query barely touches
/// ("mAP zero" does not open on a grad-norm entry because the run warns on it).
pub const PROMOTE_MIN_SCORE: f32 = 0.5;

/// Reorder hits (best first) so that, among the first [`PROMOTE_WITHIN`] whose score is at
/// least [`PROMOTE_MIN_SCORE`] × the best, those whose entry fails on the run come first,
/// then those that warn, each group in search order.
pub fn promote_by_run<T>(
    hits: &mut [T],
    id: impl Fn(&T) -> &str,
    score: impl Fn(&T) -> f32,
    verdicts: &HashMap<String, Status>,
) {
    let best = hits.first().map(&score).unwrap_or(0.0);
    let n = hits
        .iter()
        .take(PROMOTE_WITHIN)
        .take_while(|h| best <= 0.0 || score(h) >= PROMOTE_MIN_SCORE * best)
        .count();
    let rank = |h: &T| match verdicts.get(id(h)) {
        Some(Status::Fail) => 0u8,
        Some(Status::Warn) => 1,
        _ => 2,
    };
    hits[..n].sort_by_key(rank);
}

/// One search result row.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    pub id: String,
    /// Snippet (full-text) or `id title` (fuzzy) with byte ranges to highlight.
    pub text: String,
    pub highlights: Vec<(usize, usize)>,
    /// The attached run's verdict for the entry (fail, warn, pass), if its probes judged it.
    pub mark: Option<Status>,
    /// The full-text score (0 for fuzzy rows): how relevant the row is to the query.
    pub score: f32,
}

#[derive(Debug, Default, Clone)]
pub struct SearchState {
    pub query: String,
    pub fuzzy: bool,
    pub domain: Option<Domain>,
    pub results: Vec<ResultRow>,
    pub sel: usize,
    pub error: Option<String>,
    /// Set while the TUI loop feeds a batch of queued events: edits only mark `pending`,
    /// and the batch ends with one search (a 100 kB unbracketed paste searches once).
    pub(super) defer: bool,
    pub(super) pending: bool,
    /// Searches run so far (tests check the coalescing).
    pub runs: u64,
    /// True when full-text search found hits but none is a confident match.
    pub weak: bool,
}

/// Longest query kept, in characters; typing or pasting past it is cut (with a note).
pub const MAX_QUERY_CHARS: usize = 1024;

impl App {
    /// A key on the search screen: characters edit the query, a few keys move or switch
    /// mode. Returns whether it was taken (the rest go through the key map).
    pub(super) fn search_key(&mut self, k: &KeyEvent, plain_char: Option<char>) -> bool {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => self.update(Action::Back),
            KeyCode::Enter => self.update(Action::Select),
            KeyCode::Up => self.update(Action::Up),
            KeyCode::Down => self.update(Action::Down),
            KeyCode::PageUp => self.update(Action::PageUp),
            KeyCode::PageDown => self.update(Action::PageDown),
            KeyCode::Tab => self.update(Action::ToggleFuzzy),
            KeyCode::Backspace => {
                self.search.query.pop();
                self.refresh_search_soon();
            }
            KeyCode::Char('n') | KeyCode::Char('j') if ctrl => self.update(Action::Down),
            KeyCode::Char('p') | KeyCode::Char('k') if ctrl => self.update(Action::Up),
            KeyCode::Char('d') if ctrl => self.update(Action::CycleDomain),
            KeyCode::Char('w') if ctrl => self.update(Action::WalkFrom),
            KeyCode::Char('u') if ctrl => {
                self.search.query.clear();
                self.refresh_search_soon();
            }
            _ => match plain_char {
                Some(c) => {
                    self.search_paste(&c.to_string());
                }
                None => return false,
            },
        }
        true
    }

    /// Appends pasted (or typed) text to the query: control characters (newlines of a
    /// pasted traceback) become spaces, and the query stops at [`MAX_QUERY_CHARS`].
    pub(super) fn search_paste(&mut self, text: &str) {
        let have = self.search.query.chars().count();
        let room = MAX_QUERY_CHARS.saturating_sub(have);
        for (n, c) in text.chars().enumerate() {
            if n == room {
                self.set_status(
                    format!("search query cut at {MAX_QUERY_CHARS} characters"),
                    false,
                );
                break;
            }
            self.search.query.push(if c.is_control() { ' ' } else { c });
        }
        self.refresh_search_soon();
    }

    /// Search now, or at the end of the current batch of queued events.
    pub(super) fn refresh_search_soon(&mut self) {
        if self.search.defer {
            self.search.pending = true;
        } else {
            self.refresh_search();
        }
    }

    pub(super) fn refresh_search(&mut self) {
        self.search.pending = false;
        self.search.runs += 1;
        let q = self.search.query.trim();
        self.search.sel = 0;
        self.search.error = None;
        self.search.weak = false;
        if q.is_empty() {
            self.search.results.clear();
            return;
        }
        if self.search.fuzzy {
            self.search.results = self
                .index
                .quick_filter(q, 50)
                .into_iter()
                .filter(|(id, _, _)| {
                    self.search.domain.is_none()
                        || self.cat.entry(id).map(|e| e.domain) == self.search.domain
                })
                .map(|(id, _, idx)| {
                    let title = self
                        .cat
                        .entry(&id)
                        .map(|e| e.title.clone())
                        .unwrap_or_default();
                    let text = format!("{id} {title}");
                    // char indices -> byte ranges
                    let offs: Vec<(usize, usize)> = text
                        .char_indices()
                        .map(|(b, c)| (b, b + c.len_utf8()))
                        .collect();
                    let highlights = idx
                        .into_iter()
                        .filter_map(|i| offs.get(i).copied())
                        .collect();
                    ResultRow {
                        id,
                        text,
                        highlights,
                        mark: None,
                        score: 0.0,
                    }
                })
                .collect();
        } else {
            match self.index.search_ranked(q, 50, self.search.domain) {
                Ok(ranked) => {
                    self.search.weak = !ranked.hits.is_empty() && !ranked.confidence.confident;
                    self.search.results = ranked
                        .hits
                        .into_iter()
                        .map(|h| ResultRow {
                            id: h.id,
                            text: h.snippet.text,
                            highlights: h.snippet.highlights,
                            mark: None,
                            score: h.score,
                        })
                        .collect()
                }
                Err(e) => {
                    self.search.results.clear();
                    self.search.error = Some(e.to_string());
                }
            }
        }
        self.mark_results();
    }

    /// Put the attached run's verdicts on the results and, for full-text hits, lift the
    /// entries that fail or warn on it to the top (called again when the run's findings
    /// arrive).
    pub(super) fn mark_results(&mut self) {
        if self.run.findings.is_empty() {
            return;
        }
        let verdicts = run_verdicts(&self.run.findings);
        for r in &mut self.search.results {
            r.mark = verdicts.get(&r.id).copied();
        }
        if !self.search.fuzzy {
            promote_by_run(
                &mut self.search.results,
                |r| r.id.as_str(),
                |r| r.score,
                &verdicts,
            );
        }
    }

    pub(super) fn update_search(&mut self, a: Action) {
        let n = self.search.results.len();
        match a {
            Action::Back => self.back(),
            Action::Select => {
                if let Some(id) = self
                    .search
                    .results
                    .get(self.search.sel)
                    .map(|r| r.id.clone())
                {
                    self.open_entry(&id);
                }
            }
            Action::ToggleFuzzy => {
                self.search.fuzzy = !self.search.fuzzy;
                self.refresh_search();
            }
            Action::CycleDomain => {
                let all = Domain::ALL;
                self.search.domain = match self.search.domain {
                    None => Some(all[0]),
                    Some(d) => all
                        .iter()
                        .position(|x| *x == d)
                        .and_then(|i| all.get(i + 1))
                        .copied(),
                };
                self.refresh_search();
            }
            _ => Self::move_sel(&mut self.search.sel, n, a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_lifts_only_hits_close_to_the_best() {
        // (id, score): the run warns on S1.2, which matched one word of the query.
        let mut hits = vec![("V3", 10.0f32), ("O4", 7.0), ("S3.1", 6.0), ("S1.2", 3.0)];
        let verdicts: HashMap<String, Status> = [
            ("S1.2".to_string(), Status::Warn),
            ("S3.1".to_string(), Status::Fail),
        ]
        .into_iter()
        .collect();
        promote_by_run(&mut hits, |h| h.0, |h| h.1, &verdicts);
        let ids: Vec<&str> = hits.iter().map(|h| h.0).collect();
        // S3.1 (0.6 × the best) is lifted; S1.2 (0.3 × the best) stays where the query put it.
        assert_eq!(ids, ["S3.1", "V3", "O4", "S1.2"]);
    }
}
