//! The entry screen's state and keys: scrolling the text, jumping to the fix, following
//! see-also links, and "check this" (the probes answering the entry, on the attached run).

use super::{Action, App, Screen};
use crate::findings::Finding;
use crate::look::strings as S;
use crate::triage::jobs::JobKind;

#[derive(Debug, Default, Clone)]
pub struct EntryState {
    pub scroll: u16,
    /// Start the view at the Fix section (Enter).
    pub at_fix: bool,
    /// 0 text, 1 see-also links, 2 "check this" findings.
    pub pane: usize,
    pub link_sel: usize,
    pub finding_sel: usize,
    /// "check this" results for an entry: (entry id, findings).
    pub checked: Option<(String, Vec<Finding>)>,
}

impl App {
    pub fn see_also(&self, id: &str) -> Vec<String> {
        self.cat
            .entry(id)
            .map(|e| {
                e.see_also
                    .iter()
                    .filter(|s| self.cat.entry(s).is_some())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn open_entry(&mut self, id: &str) {
        let Some(e) = self.cat.entry(id) else {
            self.set_status(format!("{} {id}", S::NO_SUCH_ENTRY), true);
            return;
        };
        let id = e.id.clone();
        self.entry.scroll = 0;
        self.entry.at_fix = false;
        self.entry.pane = 0;
        self.entry.link_sel = 0;
        self.entry.finding_sel = 0;
        // With a run attached, its verdict for this entry is on the page at once (`c` runs
        // the entry's probes again).
        let on_run: Vec<Finding> = self
            .run
            .findings
            .iter()
            .filter(|f| f.id == id)
            .cloned()
            .collect();
        if !on_run.is_empty() {
            self.entry.checked = Some((id.clone(), on_run));
        }
        self.go(Screen::Entry(id));
    }

    pub(super) fn update_entry(&mut self, id: &str, a: Action) {
        let links = self.see_also(id);
        let findings: Vec<_> = match &self.entry.checked {
            Some((e, f)) if e == id => f.clone(),
            _ => Vec::new(),
        };
        match a {
            Action::Back => self.back(),
            Action::NextPane => {
                // text → links → findings (those present) → text
                let has = |p: usize| match p {
                    1 => !links.is_empty(),
                    2 => !findings.is_empty(),
                    _ => true,
                };
                let mut p = (self.entry.pane + 1) % 3;
                while !has(p) {
                    p = (p + 1) % 3;
                }
                self.entry.pane = p;
            }
            Action::Select if self.entry.pane == 2 => {
                if let Some(f) = findings.get(self.entry.finding_sel) {
                    self.start_walk_from(&super::finding_node(f));
                }
            }
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown
                if self.entry.pane == 2 =>
            {
                Self::move_sel(&mut self.entry.finding_sel, findings.len(), a)
            }
            Action::Select => {
                if self.entry.pane == 1 {
                    if let Some(l) = links.get(self.entry.link_sel).cloned() {
                        self.open_entry(&l);
                    }
                } else {
                    self.entry.at_fix = true;
                    self.entry.scroll = 0;
                }
            }
            Action::Check => {
                if self.run.attached.is_none() {
                    self.set_status(S::NO_RUN, true);
                } else if self.cat.probes_for_entry(id).next().is_none() {
                    self.set_status(format!("{} {id}", S::NO_PROBE_FOR), true);
                } else {
                    self.entry.checked = None;
                    self.submit(JobKind::EntryCheck {
                        entry: id.to_string(),
                    });
                    self.set_status(format!("{} {id}…", S::CHECKING), false);
                }
            }
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown => {
                if self.entry.pane == 1 {
                    Self::move_sel(&mut self.entry.link_sel, links.len(), a);
                } else {
                    let s = &mut self.entry.scroll;
                    match a {
                        Action::Up if *s == 0 => self.entry.at_fix = false,
                        Action::Up => *s -= 1,
                        Action::Down => *s = s.saturating_add(1).min(500),
                        Action::PageDown => *s = s.saturating_add(10).min(500),
                        Action::PageUp => *s = s.saturating_sub(10),
                        Action::Top => {
                            *s = 0;
                            self.entry.at_fix = false;
                        }
                        Action::Bottom => {
                            self.entry.at_fix = true;
                            *s = 0;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}
