//! The home screen's state and keys: three panes (trees, the catalog grouped by domain, the
//! run's findings), Enter opens what is selected, `c` checks the attached run.

use super::{Action, App};
use crate::catalog::{Domain, Entry};
use crate::look::strings as S;
use crate::triage::jobs::JobKind;

#[derive(Debug, Default, Clone)]
pub struct HomeState {
    /// 0 trees, 1 catalog, 2 findings.
    pub pane: usize,
    pub tree_sel: usize,
    pub cat_sel: usize,
    pub finding_sel: usize,
}

/// Rows of the home screen's catalog pane: a domain header or an entry index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatRow {
    Domain(Domain),
    Entry(usize),
}

impl App {
    /// The home catalog pane rows, grouped by domain.
    pub fn cat_rows(&self) -> Vec<CatRow> {
        let mut rows = Vec::new();
        for d in Domain::ALL {
            let idx: Vec<usize> = self
                .cat
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.domain == d)
                .map(|(i, _)| i)
                .collect();
            if idx.is_empty() {
                continue;
            }
            rows.push(CatRow::Domain(d));
            rows.extend(idx.into_iter().map(CatRow::Entry));
        }
        rows
    }

    pub(super) fn cat_entry_count(&self) -> usize {
        self.cat.entries.len()
    }

    /// The catalog entry selected in the home catalog pane (selection counts entries only).
    pub fn home_selected_entry(&self) -> Option<&Entry> {
        let rows = self.cat_rows();
        rows.iter()
            .filter_map(|r| match r {
                CatRow::Entry(i) => Some(*i),
                _ => None,
            })
            .nth(self.home.cat_sel)
            .and_then(|i| self.cat.entries.get(i))
    }

    pub(super) fn update_home(&mut self, a: Action) {
        let has_findings = !self.run.findings.is_empty();
        let panes = if has_findings { 3 } else { 2 };
        match a {
            Action::NextPane => self.home.pane = (self.home.pane + 1) % panes,
            Action::Back => {}
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown => match self.home.pane {
                0 => Self::move_sel(&mut self.home.tree_sel, self.cat.trees.len(), a),
                1 => {
                    let n = self.cat_entry_count();
                    Self::move_sel(&mut self.home.cat_sel, n, a)
                }
                _ => Self::move_sel(&mut self.home.finding_sel, self.run.findings.len(), a),
            },
            Action::Select => match self.home.pane {
                0 => {
                    if let Some(t) = self.cat.trees.get(self.home.tree_sel) {
                        let id = t.id.clone();
                        self.start_walk(&id);
                    }
                }
                1 => {
                    if let Some(id) = self.home_selected_entry().map(|e| e.id.clone()) {
                        self.open_entry(&id);
                    }
                }
                _ => {
                    if let Some(id) = self
                        .run
                        .findings
                        .get(self.home.finding_sel)
                        .map(|f| f.id.clone())
                    {
                        self.open_entry(&id);
                    }
                }
            },
            Action::Check => self.request_check(),
            _ => {}
        }
    }

    pub(super) fn request_check(&mut self) {
        if self.run.attached.is_none() {
            self.set_status(S::NO_RUN, true);
        } else {
            self.submit(JobKind::Check);
            self.set_status(S::CHECKING, false);
        }
    }
}
