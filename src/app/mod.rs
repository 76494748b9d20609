//! The TUI's state and its update logic: key -> [`Action`] through the [`Keymap`], then a
//! pure `update` that changes state and queues [`Effect`]s (jobs for the worker, files to
//! write) for the driver to perform. Rendering lives in `crate::ui` and only reads this.
//! This file holds the [`App`] and what every screen shares (navigation, jobs, overlays);
//! each screen's state and keys are in its own file, the `:` palette in [`palette`] and the
//! synchronous driver for tests in [`headless`].

pub mod action;
mod entry;
pub mod event;
pub mod export;
pub mod follow;
mod headless;
mod help;
mod home;
mod palette;
mod run;
mod search;
pub mod series_picker;
pub use search::MAX_QUERY_CHARS;
mod walk;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mltriage_probes::facts::Facts;

use crate::catalog::{Catalog, Entry};
use crate::look::strings as S;
use crate::look::theme::Theme;
use crate::search::SearchIndex;
use crate::triage::jobs::{JobId, JobKind, JobOutput, JobRequest};

pub use action::{Action, Keymap};
pub use entry::EntryState;
pub use event::Event;
pub use headless::Headless;
pub use home::{CatRow, HomeState};
pub use palette::palette_completions;
pub use run::RunState;
pub use search::{promote_by_run, run_verdicts, ResultRow, SearchState, PROMOTE_WITHIN};
pub use walk::{node_chart, NodeChart, WalkState};

/// Which screen is showing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    Home,
    Search,
    Entry(String),
    Walk,
    Run,
}

/// A popup over the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    None,
    /// `?`: the keys, filtered by what is typed.
    Help {
        filter: String,
    },
    /// `:`: a command line with completions.
    Palette {
        input: String,
        sel: usize,
    },
    /// The first-run hint (no run attached): any key closes it, and all but Esc then act.
    FirstRun,
}

/// Side effects `update` asks the driver to perform.
#[derive(Debug, Clone)]
pub enum Effect {
    Submit(JobRequest),
    Cancel,
    Write(export::Transcript),
}

/// The running or waiting background job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobInfo {
    pub id: JobId,
    pub kind: JobKind,
    pub progress: u8,
}

/// The tree node a finding belongs to (`tree/node` asking its entry's question, else the
/// first node asking its probe's), else its entry id.
pub fn finding_node(f: &crate::findings::Finding) -> String {
    f.nodes.first().cloned().unwrap_or_else(|| f.id.clone())
}

/// Options from the command line.
#[derive(Debug, Clone, Default)]
pub struct AppOptions {
    pub run: Option<PathBuf>,
    pub facts: Facts,
    pub theme: Theme,
    pub export_dir: Option<PathBuf>,
}

pub struct App {
    pub cat: Arc<Catalog>,
    pub index: Arc<SearchIndex>,
    pub keymap: Keymap,
    pub theme: Theme,
    pub screen: Screen,
    pub history: Vec<Screen>,
    pub overlay: Overlay,
    pub home: HomeState,
    pub search: SearchState,
    pub entry: EntryState,
    pub walk: Option<WalkState>,
    pub run: RunState,
    pub facts: Facts,
    pub jobs: Vec<JobInfo>,
    pub status: Option<(String, bool)>,
    pub effects: Vec<Effect>,
    pub should_quit: bool,
    pub export_dir: PathBuf,
    /// Frame counter for the spinner while a job runs.
    pub ticks: u64,
    /// Tensor bytes read for this app's jobs (the header's "reading tensors").
    pub pass: worker::PassMeter,
    /// Follow mode: the run re-read while it trains (`follow.rs`).
    pub follow: follow::FollowState,
    next_job: JobId,
}

impl App {
    pub fn new(
        cat: Arc<Catalog>,
        index: Arc<SearchIndex>,
        keymap: Keymap,
        opts: AppOptions,
    ) -> App {
        let mut app = App {
            cat,
            index,
            keymap,
            theme: opts.theme,
            screen: Screen::Home,
            history: Vec::new(),
            overlay: Overlay::None,
            home: HomeState::default(),
            search: SearchState::default(),
            entry: EntryState::default(),
            walk: None,
            run: RunState::default(),
            facts: opts.facts,
            jobs: Vec::new(),
            status: None,
            effects: Vec::new(),
            should_quit: false,
            export_dir: opts.export_dir.unwrap_or_else(|| PathBuf::from(".")),
            ticks: 0,
            pass: worker::PassMeter::default(),
            follow: follow::FollowState::default(),
            next_job: 1,
        };
        if let Some(p) = opts.run {
            app.run.attached = Some(p);
            app.run.loading = true;
            app.submit(JobKind::Attach);
        } else {
            app.overlay = Overlay::FirstRun;
        }
        app
    }

    // ---------------------------------------------------------------- queries

    pub fn entry_by_index(&self, i: usize) -> Option<&Entry> {
        self.cat.entries.get(i)
    }

    /// The probe job running (tensor views have their own lane and their own "computing").
    pub fn job_running(&self) -> Option<&JobInfo> {
        self.jobs.iter().find(|j| !j.kind.is_view())
    }

    /// Every fact known: the run's artifacts, overridden by the user's.
    pub fn all_facts(&self) -> Facts {
        let mut f = self
            .run
            .summary
            .as_ref()
            .map(|s| s.facts.clone())
            .unwrap_or_default();
        f.merge(&self.facts);
        f
    }

    // ---------------------------------------------------------------- effects

    fn submit(&mut self, kind: JobKind) -> JobId {
        let id = self.next_job;
        self.next_job += 1;
        // Per lane (probes, tensor views) one runs and one waits: a newer request replaces
        // the waiting one.
        let lane = kind.is_view();
        if let Some(waiting) = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.kind.is_view() == lane)
            .nth(1)
            .map(|(i, _)| i)
        {
            self.jobs.remove(waiting);
        }
        self.jobs.push(JobInfo {
            id,
            kind: kind.clone(),
            progress: 0,
        });
        self.effects.push(Effect::Submit(JobRequest {
            id,
            kind,
            facts: self.facts.clone(),
        }));
        id
    }

    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn set_status(&mut self, msg: impl Into<String>, error: bool) {
        self.status = Some((msg.into(), error));
    }

    /// The driver reports a written transcript.
    pub fn on_written(&mut self, result: Result<PathBuf, String>) {
        match result {
            Ok(p) => self.set_status(format!("{} {}", S::EXPORTED, p.display()), false),
            Err(e) => self.set_status(format!("{} {e}", S::EXPORT_FAILED), true),
        }
    }

    // ---------------------------------------------------------------- events

    /// Apply one event. Returns whether anything visible changed (redraw only then).
    /// A batch of queued events, as the TUI loop drains them: search-box edits in the batch
    /// are coalesced into one search, run before any other key acts on the results.
    pub fn on_events(&mut self, evs: impl IntoIterator<Item = Event>) -> bool {
        let mut dirty = false;
        for ev in evs {
            let edit = match &ev {
                Event::Paste(_) | Event::Tick => true,
                Event::Key(k) => {
                    matches!(k.code, KeyCode::Char(_) | KeyCode::Backspace)
                        && !k.modifiers.intersects(KeyModifiers::ALT)
                        && !(k.modifiers.contains(KeyModifiers::CONTROL)
                            && k.code != KeyCode::Char('u'))
                }
                _ => false,
            };
            if !edit && self.search.pending {
                self.refresh_search();
            }
            self.search.defer = true;
            dirty |= self.on_event(ev);
            self.search.defer = false;
        }
        if self.search.pending {
            self.refresh_search();
            dirty = true;
        }
        dirty
    }

    pub fn on_event(&mut self, ev: Event) -> bool {
        match ev {
            Event::Key(k) => {
                self.on_key(k);
                true
            }
            Event::Resize(..) => true,
            Event::Paste(text) => {
                // Like a key, a paste closes the first-run hint and then acts.
                if self.overlay == Overlay::FirstRun {
                    self.overlay = Overlay::None;
                }
                if self.overlay == Overlay::None
                    && matches!(self.screen, Screen::Search | Screen::Home)
                {
                    if self.screen == Screen::Home {
                        self.go(Screen::Search);
                    }
                    self.search_paste(&text);
                }
                true
            }
            Event::Tick => {
                self.ticks = self.ticks.wrapping_add(1);
                let snap = mltriage_probes::tensors::pass::progress().snapshot();
                let meter = self.pass.observe(snap, !self.jobs.is_empty());
                let follow = self.follow.available && self.follow_tick(std::time::Instant::now());
                meter || follow || !self.jobs.is_empty()
            }
            Event::ProbeProgress(id, p) => {
                if let Some(j) = self.jobs.iter_mut().find(|j| j.id == id) {
                    // A job's percentage never goes backwards.
                    j.progress = j.progress.max(p);
                    return true;
                }
                false
            }
            Event::ProbeDone(id, out) => {
                self.on_done(id, out);
                true
            }
            Event::Follow(up) => self.on_follow(*up, std::time::Instant::now()),
        }
    }

    fn on_done(&mut self, id: JobId, out: JobOutput) {
        let Some(pos) = self.jobs.iter().position(|j| j.id == id) else {
            return;
        };
        let job = self.jobs.remove(pos);
        if job.kind.is_view() {
            if let Err(out) = self.on_walk_view_done(id, out) {
                self.on_view_done(id, out);
            }
            return;
        }
        match (job.kind, out) {
            (_, JobOutput::Cancelled) => {
                self.set_status(S::CANCELLED, false);
                self.run.loading = false;
                if let Some(w) = self.walk.as_mut().filter(|w| w.job == Some(id)) {
                    w.job = None;
                    w.walk.propose_skip(S::CANCELLED);
                }
            }
            (kind, JobOutput::Failed(e)) => {
                self.set_status(e.clone(), true);
                if kind == JobKind::Attach {
                    self.run.loading = false;
                    self.run.error = Some(e.clone());
                }
                if let Some(w) = self.walk.as_mut().filter(|w| w.job == Some(id)) {
                    w.job = None;
                    w.walk.propose_skip(&e);
                }
            }
            (_, JobOutput::Attached(summary, findings)) => {
                self.run.loading = false;
                self.run.summary = Some(*summary);
                self.run.findings = findings;
                // Results typed before the run was read get its marks and order now.
                self.mark_results();
                // Open on the findings, the worst selected: "walk from here" is one key away.
                if self.screen == Screen::Home && !self.run.findings.is_empty() {
                    self.home.pane = 2;
                    self.home.finding_sel = 0;
                }
                // A fact node may have been waiting for the run's facts.
                if self
                    .walk
                    .as_ref()
                    .is_some_and(|w| w.walk.proposal.is_none() && w.job.is_none())
                {
                    self.enter_node();
                }
            }
            (JobKind::Check, JobOutput::Findings(f)) => self.run.findings = f,
            (JobKind::Probe { .. }, JobOutput::Findings(f)) => {
                if self.walk.as_ref().is_some_and(|w| w.job == Some(id)) {
                    self.on_walk_findings(f);
                }
            }
            (JobKind::EntryCheck { entry }, JobOutput::Findings(f)) => {
                let n = f.len();
                self.entry.checked = Some((entry.clone(), f));
                // The results sit at the top of the page with the focus on them.
                if self.screen == Screen::Entry(entry.clone()) && n > 0 {
                    self.entry.pane = 2;
                    self.entry.finding_sel = 0;
                    self.entry.scroll = 0;
                    self.entry.at_fix = false;
                }
                self.set_status(format!("{entry}: {n} {}", S::CHECK_DONE), false);
            }
            (_, JobOutput::Findings(_)) => {}
            (_, JobOutput::Tensors(_) | JobOutput::Histogram(_) | JobOutput::Rows(_)) => {}
        }
    }

    /// Translate a key into an action for the current mode and apply it.
    pub fn on_key(&mut self, k: KeyEvent) {
        if k.kind == crossterm::event::KeyEventKind::Release {
            return;
        }
        // Ctrl-C always quits, whatever has the focus.
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            self.should_quit = true;
            return;
        }
        // A key on a findings pane: the user has looked at what follow mode marked as changed.
        if (self.screen == Screen::Home && self.home.pane == 2)
            || (self.screen == Screen::Run && self.run.pane == 1)
        {
            self.follow.changed.clear();
        }
        let plain_char = match k.code {
            KeyCode::Char(c)
                if !k
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                Some(c)
            }
            _ => None,
        };
        // Text inputs take characters first.
        match self.overlay {
            Overlay::Help { .. } => return self.help_key(k.code, plain_char),
            Overlay::Palette { .. } => return self.palette_key(k.code, plain_char),
            Overlay::FirstRun => {
                self.overlay = Overlay::None;
                if k.code == KeyCode::Esc {
                    return;
                }
            }
            Overlay::None => {}
        }
        if self.series_picker_key(&k) {
            return;
        }
        if self.screen == Screen::Walk && self.walk_fact_key(k.code, plain_char) {
            return;
        }
        if self.screen == Screen::Search && self.search_key(&k, plain_char) {
            return;
        }
        if let Some(a) = self.keymap.get(&k) {
            self.update(a);
        } else if let Some(d) = plain_char.and_then(|c| c.to_digit(10)) {
            // Digits pick a branch / option directly in a walk.
            if self.screen == Screen::Walk && d >= 1 {
                self.walk_pick(d as usize - 1);
            }
        }
    }

    // ---------------------------------------------------------------- update

    fn go(&mut self, s: Screen) {
        // The first-run hint belongs to the home screen.
        if self.overlay == Overlay::FirstRun {
            self.overlay = Overlay::None;
        }
        if s == Screen::Run {
            self.request_tensors();
        }
        if self.screen != s {
            let prev = std::mem::replace(&mut self.screen, s);
            self.history.push(prev);
            if self.history.len() > 64 {
                self.history.remove(0);
            }
        }
    }

    fn move_sel(sel: &mut usize, len: usize, a: Action) {
        if len == 0 {
            *sel = 0;
            return;
        }
        *sel = match a {
            Action::Up => sel.saturating_sub(1),
            Action::Down => (*sel + 1).min(len - 1),
            Action::Top => 0,
            Action::Bottom => len - 1,
            Action::PageUp => sel.saturating_sub(10),
            Action::PageDown => (*sel + 10).min(len - 1),
            _ => *sel,
        };
    }

    /// Apply one action to the current screen.
    pub fn update(&mut self, a: Action) {
        if !matches!(a, Action::Up | Action::Down) {
            // Messages stay until the next deliberate action.
            self.status = self
                .status
                .take()
                .filter(|_| matches!(a, Action::Top | Action::Bottom));
        }
        match a {
            Action::Quit => {
                self.should_quit = true;
                return;
            }
            Action::Help => {
                self.overlay = Overlay::Help {
                    filter: String::new(),
                };
                return;
            }
            Action::Palette => {
                self.overlay = Overlay::Palette {
                    input: String::new(),
                    sel: 0,
                };
                return;
            }
            Action::Search => {
                self.go(Screen::Search);
                if !self.search.query.is_empty() {
                    self.set_status(S::SEARCH_KEPT, false);
                }
                return;
            }
            Action::Home => {
                self.go(Screen::Home);
                return;
            }
            Action::Follow => {
                self.toggle_follow();
                return;
            }
            Action::RunScreen if self.screen != Screen::Search => {
                self.go(Screen::Run);
                return;
            }
            Action::WalkFrom if self.screen != Screen::Walk => {
                match self.walk_from_target() {
                    Some(id) => self.start_walk_from(&id),
                    None => self.set_status(S::NOTHING_TO_WALK_FROM, true),
                }
                return;
            }
            _ => {}
        }
        match self.screen.clone() {
            Screen::Home => self.update_home(a),
            Screen::Search => self.update_search(a),
            Screen::Entry(id) => self.update_entry(&id, a),
            Screen::Walk => self.update_walk(a),
            Screen::Run => self.update_run(a),
        }
    }

    /// What "walk from here" starts from on the current screen: the selected finding's
    /// tree node, the selected search hit or catalog entry, the entry shown.
    pub fn walk_from_target(&self) -> Option<String> {
        let finding = |f: Option<&crate::findings::Finding>| f.map(finding_node);
        match &self.screen {
            Screen::Home => match self.home.pane {
                0 => self
                    .cat
                    .trees
                    .get(self.home.tree_sel)
                    .map(|t| format!("{}/{}", t.id, t.root)),
                1 => self.home_selected_entry().map(|e| e.id.clone()),
                _ => finding(self.run.findings.get(self.home.finding_sel)),
            },
            Screen::Search => self
                .search
                .results
                .get(self.search.sel)
                .map(|r| r.id.clone()),
            Screen::Entry(id) => match (&self.entry.checked, self.entry.pane) {
                (Some((eid, fs)), 2) if eid == id => finding(fs.get(self.entry.finding_sel)),
                _ => Some(id.clone()),
            },
            Screen::Run => finding(self.run.findings.get(self.run.sel)),
            Screen::Walk => None,
        }
    }

    fn back(&mut self) {
        match self.history.pop() {
            Some(s) => {
                if let Screen::Entry(_) = s {
                    self.entry.scroll = 0;
                    self.entry.at_fix = false;
                }
                self.screen = s;
            }
            None => self.screen = Screen::Home,
        }
    }
}
