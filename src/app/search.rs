//! The search screen's state and keys: the query typed live, full-text (tantivy) or fuzzy
//! id/title results, a domain filter; Enter opens the selected entry.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, App};
use crate::catalog::Domain;

/// One search result row.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    pub id: String,
    /// Snippet (full-text) or `id title` (fuzzy) with byte ranges to highlight.
    pub text: String,
    pub highlights: Vec<(usize, usize)>,
}

#[derive(Debug, Default, Clone)]
pub struct SearchState {
    pub query: String,
    pub fuzzy: bool,
    pub domain: Option<Domain>,
    pub results: Vec<ResultRow>,
    pub sel: usize,
    pub error: Option<String>,
}

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
                self.refresh_search();
            }
            KeyCode::Char('n') | KeyCode::Char('j') if ctrl => self.update(Action::Down),
            KeyCode::Char('p') | KeyCode::Char('k') if ctrl => self.update(Action::Up),
            KeyCode::Char('d') if ctrl => self.update(Action::CycleDomain),
            KeyCode::Char('u') if ctrl => {
                self.search.query.clear();
                self.refresh_search();
            }
            _ => match plain_char {
                Some(c) => {
                    self.search.query.push(c);
                    self.refresh_search();
                }
                None => return false,
            },
        }
        true
    }

    pub(super) fn refresh_search(&mut self) {
        let q = self.search.query.trim();
        self.search.sel = 0;
        self.search.error = None;
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
                    }
                })
                .collect();
        } else {
            match self.index.search(q, 50, self.search.domain) {
                Ok(hits) => {
                    self.search.results = hits
                        .into_iter()
                        .map(|h| ResultRow {
                            id: h.id,
                            text: h.snippet.text,
                            highlights: h.snippet.highlights,
                        })
                        .collect()
                }
                Err(e) => {
                    self.search.results.clear();
                    self.search.error = Some(e.to_string());
                }
            }
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
