//! The walk screen's state and keys: a [`Walk`] (the engine in `crate::trees`) with the
//! probe job answering the current node, the override list, a fact typed in; confirm, pick,
//! back, and exporting the transcript.

use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::export::{self, Format};
use super::{Action, App, Effect, Screen};
use crate::catalog::NodeKind;
use crate::look::strings as S;
use crate::trees::{Source, Walk};
use crate::triage::jobs::{JobId, JobKind};

#[derive(Debug, Clone)]
pub struct WalkState {
    pub walk: Walk,
    pub sel: usize,
    pub override_open: bool,
    /// Typing a fact the node needs.
    pub fact_input: Option<String>,
    pub job: Option<JobId>,
}

impl App {
    /// A key while a fact node waits for its value to be typed. Returns whether it was taken.
    pub(super) fn walk_fact_key(&mut self, code: KeyCode, plain_char: Option<char>) -> bool {
        let Some(w) = self.walk.as_mut() else {
            return false;
        };
        let Some(buf) = w.fact_input.as_mut() else {
            return false;
        };
        match code {
            KeyCode::Esc => w.fact_input = None,
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Enter => {
                let v = buf.trim().to_string();
                if !v.is_empty() {
                    w.fact_input = None;
                    if let Some(key) = w.walk.node().and_then(|n| n.fact.clone()) {
                        self.facts.set_user(&key, &v);
                    }
                    if let Some(w) = self.walk.as_mut() {
                        w.walk.propose_fact(&v, Source::User);
                    }
                }
            }
            _ => {
                if let Some(c) = plain_char {
                    buf.push(c);
                }
            }
        }
        true
    }

    pub fn start_walk(&mut self, tree: &str) {
        let Some(t) = self.cat.tree(tree) else {
            self.set_status(format!("{} {tree}", S::NO_SUCH_TREE), true);
            return;
        };
        self.walk = Some(WalkState {
            walk: Walk::new(t),
            sel: 0,
            override_open: false,
            fact_input: None,
            job: None,
        });
        self.go(Screen::Walk);
        self.enter_node();
    }

    /// Arrive at the walk's current node: ask its probe, read its fact, or wait for a pick.
    pub(super) fn enter_node(&mut self) {
        let attached = self.run.attached.is_some();
        let facts = self.all_facts();
        let Some(w) = self.walk.as_mut() else { return };
        w.sel = 0;
        w.override_open = false;
        w.fact_input = None;
        let Some(n) = w.walk.node().cloned() else {
            return;
        };
        match n.kind {
            NodeKind::Numeric => match n.probe.clone() {
                Some(p) if attached => {
                    let id = self.submit(JobKind::Probe { probe: p });
                    if let Some(w) = self.walk.as_mut() {
                        w.job = Some(id);
                    }
                }
                Some(_) => w.walk.propose_skip(S::NO_RUN_FOR_PROBE),
                None => w.walk.propose_skip(S::NO_PROBE),
            },
            NodeKind::Fact => {
                let key = n.fact.clone().unwrap_or_default();
                match facts.fact(&key) {
                    Some(f) => {
                        let src = match f.source {
                            mltriage_probes::facts::FactSource::User => Source::User,
                            _ => Source::Fact(key.clone()),
                        };
                        w.walk.propose_fact(&f.value.clone(), src)
                    }
                    None if self.run.loading => {}
                    None => w.fact_input = Some(String::new()),
                }
            }
            NodeKind::Choice | NodeKind::Leaf => {}
        }
    }

    pub(super) fn walk_pick(&mut self, i: usize) {
        let cat = self.cat.clone();
        let Some(w) = self.walk.as_mut() else { return };
        if let Some(j) = w.job.take() {
            self.jobs.retain(|x| x.id != j);
            self.effects.push(Effect::Cancel);
        }
        let Some(w) = self.walk.as_mut() else { return };
        if w.walk.pick(&cat, i) {
            self.enter_node();
        }
    }

    pub(super) fn update_walk(&mut self, a: Action) {
        let cat = self.cat.clone();
        let Some(w) = self.walk.as_mut() else {
            self.back();
            return;
        };
        let is_choice = w.walk.node().is_some_and(|n| n.kind == NodeKind::Choice);
        let n_choices = w.walk.choices().len();
        match a {
            Action::Back => {
                if let Some(j) = w.job.take() {
                    // Esc cancels a running probe; the user can then pick a branch.
                    self.jobs.retain(|x| x.id != j);
                    self.effects.push(Effect::Cancel);
                    w.walk.propose_skip(S::CANCELLED);
                    self.set_status(S::CANCELLED, false);
                } else if w.override_open {
                    w.override_open = false;
                } else {
                    self.back();
                }
            }
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown => Self::move_sel(&mut w.sel, n_choices, a),
            Action::Override if !w.walk.is_leaf() => {
                w.override_open = !w.override_open;
                // Start the override list at the proposed branch.
                if let Some(p) = &w.walk.proposal {
                    w.sel = w
                        .walk
                        .choices()
                        .iter()
                        .position(|(l, _)| *l == p.answer)
                        .unwrap_or(0);
                }
            }
            Action::Select => {
                if w.walk.is_leaf() {
                    if let Some(e) = w.walk.node().and_then(|n| n.entry.clone()) {
                        self.open_entry(&e);
                    }
                } else if is_choice || w.override_open {
                    let i = w.sel;
                    self.walk_pick(i);
                } else if w.job.is_some() {
                    self.set_status(S::WAIT_PROBE, false);
                } else if w.walk.confirm(&cat) {
                    self.enter_node();
                } else if w.walk.proposal.is_some() {
                    w.override_open = true;
                    self.set_status(S::BRANCH_MISSING, true);
                }
            }
            Action::WalkBack => {
                if let Some(j) = w.job.take() {
                    self.jobs.retain(|x| x.id != j);
                    self.effects.push(Effect::Cancel);
                }
                let Some(w) = self.walk.as_mut() else { return };
                if w.walk.back() {
                    self.enter_node();
                } else {
                    self.set_status(S::AT_ROOT, false);
                }
            }
            Action::ExportMd => self.export(Format::Markdown, None),
            Action::ExportJson => self.export(Format::Json, None),
            // Re-ask the probe of this node.
            Action::Check if w.job.is_none() => self.enter_node(),
            _ => {}
        }
    }

    /// Queue a transcript of the current walk for writing.
    pub fn export(&mut self, fmt: Format, target: Option<PathBuf>) {
        let Some(w) = &self.walk else {
            self.set_status(S::NOTHING_TO_EXPORT, true);
            return;
        };
        let run = self.run.attached.as_ref().map(|p| p.display().to_string());
        let content = match fmt {
            Format::Markdown => export::to_markdown(&self.cat, &w.walk, run.as_deref()),
            Format::Json => {
                serde_json::to_string_pretty(&export::to_json(&self.cat, &w.walk, run.as_deref()))
                    .unwrap_or_default()
                    + "\n"
            }
        };
        let (dir, stem, ext) = match target {
            Some(p) => {
                let p = if p.is_relative() {
                    self.export_dir.join(p)
                } else {
                    p
                };
                export::split_target(&p, fmt)
            }
            None => (
                self.export_dir.clone(),
                format!("mltriage-walk-{}", w.walk.tree.id),
                fmt.ext().to_string(),
            ),
        };
        self.effects.push(Effect::Write(export::Transcript {
            dir,
            stem,
            ext,
            content,
        }));
    }
}
