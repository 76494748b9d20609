//! The TUI's state and its update logic: key -> [`Action`] through the [`Keymap`], then a
//! pure `update` that changes state and queues [`Effect`]s (jobs for the worker, files to
//! write) for the driver to perform. Rendering lives in `crate::ui` and only reads this.
//! [`Headless`] drives an app synchronously for tests (television's headless mode).

pub mod action;
pub mod event;
pub mod export;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mltriage_probes::facts::Facts;

use crate::catalog::{Catalog, Domain, Entry, NodeKind};
use crate::findings::Finding;
use crate::look::strings as S;
use crate::look::theme::Theme;
use crate::search::SearchIndex;

use crate::trees::{Source, Walk};
use crate::triage::jobs::{JobId, JobKind, JobOutput, JobRequest, ProbeRunner, RunSummary};
use crate::triage::walk::propose_from_findings;
use crate::triage::weights::{TensorHist, TensorList};
pub use action::{Action, Keymap};
pub use event::Event;
use export::Format;

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
}

/// Side effects `update` asks the driver to perform.
#[derive(Debug, Clone)]
pub enum Effect {
    Submit(JobRequest),
    Cancel,
    Write {
        dir: PathBuf,
        stem: String,
        ext: String,
        content: String,
    },
}

#[derive(Debug, Default, Clone)]
pub struct HomeState {
    /// 0 trees, 1 catalog, 2 findings.
    pub pane: usize,
    pub tree_sel: usize,
    pub cat_sel: usize,
    pub finding_sel: usize,
}

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

#[derive(Debug, Default, Clone)]
pub struct EntryState {
    pub scroll: u16,
    /// Start the view at the Fix section (Enter).
    pub at_fix: bool,
    /// 0 text, 1 see-also links.
    pub pane: usize,
    pub link_sel: usize,
    /// "check this" results for an entry: (entry id, findings).
    pub checked: Option<(String, Vec<Finding>)>,
}

#[derive(Debug, Clone)]
pub struct WalkState {
    pub walk: Walk,
    pub sel: usize,
    pub override_open: bool,
    /// Typing a fact the node needs.
    pub fact_input: Option<String>,
    pub job: Option<JobId>,
}

#[derive(Debug, Default, Clone)]
pub struct RunState {
    pub attached: Option<PathBuf>,
    pub summary: Option<RunSummary>,
    pub findings: Vec<Finding>,
    pub loading: bool,
    pub error: Option<String>,
    /// 0 charts, 1 findings, 2 tensors.
    pub pane: usize,
    pub sel: usize,
    /// The checkpoint tensors (asked for when the run screen first shows).
    pub tensors: Option<TensorList>,
    pub tensors_job: Option<JobId>,
    pub tensors_error: Option<String>,
    pub tensor_sel: usize,
    /// The selected tensor's histogram; `hist_job` is the newest request (older answers
    /// are dropped).
    pub hist: Option<TensorHist>,
    pub hist_job: Option<JobId>,
    pub hist_error: Option<String>,
}

impl RunState {
    /// The name of the tensor selected in the run screen's list.
    pub fn selected_tensor(&self) -> Option<&str> {
        self.tensors
            .as_ref()
            .and_then(|l| l.rows.get(self.tensor_sel))
            .map(|r| r.name.as_str())
    }
}

/// The running or waiting background job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobInfo {
    pub id: JobId,
    pub kind: JobKind,
    pub progress: u8,
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
    next_job: JobId,
}

/// Rows of the home screen's catalog pane: a domain header or an entry index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatRow {
    Domain(Domain),
    Entry(usize),
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
            next_job: 1,
        };
        if let Some(p) = opts.run {
            app.run.attached = Some(p);
            app.run.loading = true;
            app.submit(JobKind::Attach);
        }
        app
    }

    // ---------------------------------------------------------------- queries

    pub fn entry_by_index(&self, i: usize) -> Option<&Entry> {
        self.cat.entries.get(i)
    }

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

    /// The probe job running (tensor views have their own lane and their own "computing").
    pub fn job_running(&self) -> Option<&JobInfo> {
        self.jobs.iter().find(|j| !j.kind.is_view())
    }

    fn cat_entry_count(&self) -> usize {
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
    pub fn on_event(&mut self, ev: Event) -> bool {
        match ev {
            Event::Key(k) => {
                self.on_key(k);
                true
            }
            Event::Resize(..) => true,
            Event::Tick => {
                self.ticks = self.ticks.wrapping_add(1);
                !self.jobs.is_empty()
            }
            Event::ProbeProgress(id, p) => {
                if let Some(j) = self.jobs.iter_mut().find(|j| j.id == id) {
                    j.progress = p;
                    return true;
                }
                false
            }
            Event::ProbeDone(id, out) => {
                self.on_done(id, out);
                true
            }
        }
    }

    fn on_done(&mut self, id: JobId, out: JobOutput) {
        let Some(pos) = self.jobs.iter().position(|j| j.id == id) else {
            return;
        };
        let job = self.jobs.remove(pos);
        if job.kind.is_view() {
            self.on_view_done(id, out);
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
                if let Some(w) = self.walk.as_mut().filter(|w| w.job == Some(id)) {
                    w.job = None;
                    propose_from_findings(&mut w.walk, &f);
                    w.override_open = false;
                }
            }
            (JobKind::EntryCheck { entry }, JobOutput::Findings(f)) => {
                let n = f.len();
                self.entry.checked = Some((entry.clone(), f));
                self.set_status(format!("{entry}: {n} {}", S::CHECK_DONE), false);
            }
            (_, JobOutput::Findings(_)) => {}
            (_, JobOutput::Tensors(_) | JobOutput::Histogram(_)) => {}
        }
    }

    /// A tensor list or histogram came back; answers to superseded requests are dropped.
    fn on_view_done(&mut self, id: JobId, out: JobOutput) {
        let r = &mut self.run;
        if r.tensors_job == Some(id) {
            r.tensors_job = None;
            match out {
                JobOutput::Tensors(list) => {
                    r.tensor_sel = list.default_sel();
                    r.tensors = Some(*list);
                    self.request_hist();
                }
                JobOutput::Failed(e) => r.tensors_error = Some(e),
                _ => r.tensors_error = Some(S::NO_TENSORS.into()),
            }
        } else if r.hist_job == Some(id) {
            r.hist_job = None;
            match out {
                JobOutput::Histogram(h) => r.hist = Some(*h),
                JobOutput::Failed(e) => r.hist_error = Some(e),
                _ => r.hist_error = Some(S::NO_HIST.into()),
            }
        }
    }

    /// Ask for the checkpoint tensors once a run is attached (first visit of the run screen).
    fn request_tensors(&mut self) {
        let r = &self.run;
        if r.attached.is_none() || r.tensors.is_some() || r.tensors_job.is_some() {
            return;
        }
        self.run.tensors_error = None;
        let id = self.submit(JobKind::Tensors);
        self.run.tensors_job = Some(id);
    }

    /// Ask for the selected tensor's histogram (newest request wins).
    fn request_hist(&mut self) {
        let Some(name) = self.run.selected_tensor().map(String::from) else {
            return;
        };
        if self.run.hist.as_ref().is_some_and(|h| h.tensor == name) && self.run.hist_job.is_none() {
            return;
        }
        self.run.hist_error = None;
        let id = self.submit(JobKind::Histogram { tensor: name });
        self.run.hist_job = Some(id);
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
        match &mut self.overlay {
            Overlay::Help { filter } => {
                match k.code {
                    KeyCode::Esc | KeyCode::Enter => self.overlay = Overlay::None,
                    KeyCode::Char('?') if filter.is_empty() => self.overlay = Overlay::None,
                    KeyCode::Backspace => {
                        filter.pop();
                    }
                    _ => {
                        if let Some(c) = plain_char {
                            filter.push(c);
                        }
                    }
                }
                return;
            }
            Overlay::Palette { input, sel } => {
                match k.code {
                    KeyCode::Esc => self.overlay = Overlay::None,
                    KeyCode::Enter => {
                        let line = input.clone();
                        self.overlay = Overlay::None;
                        self.run_command(&line);
                    }
                    KeyCode::Tab => {
                        if let Some(c) = palette_completions(&self.cat, input).into_iter().nth(*sel)
                        {
                            *input = c;
                            *sel = 0;
                        }
                    }
                    KeyCode::Up => *sel = sel.saturating_sub(1),
                    KeyCode::Down => *sel += 1,
                    KeyCode::Backspace => {
                        let empty = input.pop().is_none();
                        *sel = 0;
                        if empty {
                            self.overlay = Overlay::None;
                        }
                    }
                    _ => {
                        if let Some(c) = plain_char {
                            input.push(c);
                            *sel = 0;
                        }
                    }
                }
                return;
            }
            Overlay::None => {}
        }
        if let Some(w) = self.walk.as_mut().filter(|_| self.screen == Screen::Walk) {
            if let Some(buf) = w.fact_input.as_mut() {
                match k.code {
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
                return;
            }
        }
        if self.screen == Screen::Search {
            match k.code {
                KeyCode::Esc => return self.update(Action::Back),
                KeyCode::Enter => return self.update(Action::Select),
                KeyCode::Up => return self.update(Action::Up),
                KeyCode::Down => return self.update(Action::Down),
                KeyCode::PageUp => return self.update(Action::PageUp),
                KeyCode::PageDown => return self.update(Action::PageDown),
                KeyCode::Tab => return self.update(Action::ToggleFuzzy),
                KeyCode::Backspace => {
                    self.search.query.pop();
                    return self.refresh_search();
                }
                KeyCode::Char('n') | KeyCode::Char('j')
                    if k.modifiers.contains(KeyModifiers::CONTROL) =>
                {
                    return self.update(Action::Down)
                }
                KeyCode::Char('p') | KeyCode::Char('k')
                    if k.modifiers.contains(KeyModifiers::CONTROL) =>
                {
                    return self.update(Action::Up)
                }
                KeyCode::Char('d') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return self.update(Action::CycleDomain)
                }
                KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.search.query.clear();
                    return self.refresh_search();
                }
                _ => {
                    if let Some(c) = plain_char {
                        self.search.query.push(c);
                        return self.refresh_search();
                    }
                }
            }
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
        self.go(Screen::Entry(id));
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
    fn enter_node(&mut self) {
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

    fn walk_pick(&mut self, i: usize) {
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

    fn refresh_search(&mut self) {
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
                return;
            }
            Action::Home => {
                self.go(Screen::Home);
                return;
            }
            Action::RunScreen if self.screen != Screen::Search => {
                self.go(Screen::Run);
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

    fn update_home(&mut self, a: Action) {
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

    fn request_check(&mut self) {
        if self.run.attached.is_none() {
            self.set_status(S::NO_RUN, true);
        } else {
            self.submit(JobKind::Check);
            self.set_status(S::CHECKING, false);
        }
    }

    fn update_search(&mut self, a: Action) {
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

    fn update_entry(&mut self, id: &str, a: Action) {
        let links = self.see_also(id);
        match a {
            Action::Back => self.back(),
            Action::NextPane => {
                self.entry.pane = if self.entry.pane == 0 && !links.is_empty() {
                    1
                } else {
                    0
                };
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

    fn update_walk(&mut self, a: Action) {
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

    fn update_run(&mut self, a: Action) {
        match a {
            Action::Back => self.back(),
            Action::NextPane => self.run.pane = (self.run.pane + 1) % 3,
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown
                if self.run.pane == 2 =>
            {
                let n = self.run.tensors.as_ref().map_or(0, |l| l.rows.len());
                let before = self.run.tensor_sel;
                Self::move_sel(&mut self.run.tensor_sel, n, a);
                if self.run.tensor_sel != before {
                    self.request_hist();
                }
            }
            Action::Select if self.run.pane == 2 => self.request_hist(),
            Action::Select => {
                if let Some(id) = self.run.findings.get(self.run.sel).map(|f| f.id.clone()) {
                    self.open_entry(&id);
                }
            }
            Action::Check => self.request_check(),
            _ => Self::move_sel(&mut self.run.sel, self.run.findings.len(), a),
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
        self.effects.push(Effect::Write {
            dir,
            stem,
            ext,
            content,
        });
    }

    /// Execute a `:` command line.
    pub fn run_command(&mut self, line: &str) {
        let mut parts = line.split_whitespace();
        let Some(cmd) = parts.next() else { return };
        let rest: Vec<&str> = parts.collect();
        match cmd {
            "q" | "quit" | "exit" => self.should_quit = true,
            "walk" | "w" => match rest.first() {
                Some(t) => self.start_walk(t),
                None => self.set_status(S::USAGE_WALK, true),
            },
            "show" | "open" | "entry" => match rest.first() {
                Some(id) => self.open_entry(id),
                None => self.set_status(S::USAGE_SHOW, true),
            },
            "search" | "s" => {
                self.search.query = rest.join(" ");
                self.go(Screen::Search);
                self.refresh_search();
            }
            "export" | "e" => {
                let fmt = rest.first().and_then(|f| Format::parse(f));
                match fmt {
                    Some(f) => self.export(f, rest.get(1).map(PathBuf::from)),
                    None => self.set_status(S::USAGE_EXPORT, true),
                }
            }
            "fact" => match rest.first().and_then(|kv| kv.split_once('=')) {
                Some((k, v)) => {
                    self.facts.set_user(k.trim(), v.trim());
                    self.set_status(format!("{} {k}={v}", S::FACT_SET), false);
                }
                None => self.set_status(S::USAGE_FACT, true),
            },
            "check" => self.request_check(),
            "run" => self.go(Screen::Run),
            "home" => self.go(Screen::Home),
            "help" => {
                self.overlay = Overlay::Help {
                    filter: String::new(),
                }
            }
            other => self.set_status(format!("{} {other:?}", S::UNKNOWN_COMMAND), true),
        }
    }
}

/// Palette commands and their arguments, for completion and display.
pub fn palette_completions(cat: &Catalog, input: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for t in &cat.trees {
        all.push(format!("walk {}", t.id));
    }
    for c in [
        "export md",
        "export json",
        "search ",
        "show ",
        "fact key=value",
        "check",
        "run",
        "home",
        "help",
        "quit",
    ] {
        all.push(c.to_string());
    }
    let q = input.trim_start().to_ascii_lowercase();
    all.into_iter()
        .filter(|c| c.starts_with(&q) || q.is_empty())
        .collect()
}

/// Drives an [`App`] synchronously: keys in, effects performed inline with an injected
/// runner (jobs finish before the next key) — for tests and scripted use.
pub struct Headless {
    pub app: App,
    pub runner: Box<dyn ProbeRunner>,
}

impl Headless {
    pub fn new(app: App, runner: Box<dyn ProbeRunner>) -> Headless {
        let mut h = Headless { app, runner };
        h.settle();
        h
    }

    /// Perform queued effects until none remain.
    pub fn settle(&mut self) {
        loop {
            let effects = self.app.take_effects();
            if effects.is_empty() {
                return;
            }
            for e in effects {
                match e {
                    Effect::Submit(job) => {
                        for ev in worker::run_sync(self.runner.as_mut(), &job) {
                            self.app.on_event(ev);
                        }
                    }
                    Effect::Cancel => {}
                    Effect::Write {
                        dir,
                        stem,
                        ext,
                        content,
                    } => {
                        self.app
                            .on_written(export::write_reported(&dir, &stem, &ext, &content));
                    }
                }
            }
        }
    }

    pub fn key(&mut self, code: KeyCode) -> &mut Self {
        self.app
            .on_event(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        self.settle();
        self
    }

    pub fn ctrl(&mut self, c: char) -> &mut Self {
        self.app.on_event(Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::CONTROL,
        )));
        self.settle();
        self
    }

    pub fn typ(&mut self, s: &str) -> &mut Self {
        for c in s.chars() {
            self.key(KeyCode::Char(c));
        }
        self
    }
}
