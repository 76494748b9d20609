//! The run screen's state and keys: the attached run's summary and findings, the metric
//! charts, and the checkpoint tensors with the selected tensor's histogram (asked for on
//! the tensor-view lane; answers to superseded requests are dropped).

use std::path::PathBuf;

use super::series_picker::{Scale, SeriesPicker};
use super::{Action, App};
use crate::findings::Finding;
use crate::look::strings as S;
use crate::triage::jobs::{JobId, JobKind, JobOutput, RunSummary};
use crate::triage::weights::{TensorHist, TensorList};

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
    /// The series picker, while open (`s`).
    pub picker: Option<SeriesPicker>,
    /// The series chosen in the picker (its canonical name): drawn first.
    pub picked: Option<String>,
    /// The charts' y scale (`L` cycles auto → log → linear).
    pub scale: Scale,
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

impl App {
    /// A tensor list or histogram came back; answers to superseded requests are dropped.
    pub(super) fn on_view_done(&mut self, id: JobId, out: JobOutput) {
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
    pub(super) fn request_tensors(&mut self) {
        let r = &self.run;
        if r.attached.is_none() || r.tensors.is_some() || r.tensors_job.is_some() {
            return;
        }
        self.run.tensors_error = None;
        let id = self.submit(JobKind::Tensors);
        self.run.tensors_job = Some(id);
    }

    /// Ask for the selected tensor's histogram (newest request wins).
    pub(super) fn request_hist(&mut self) {
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

    pub(super) fn update_run(&mut self, a: Action) {
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
            Action::Series => self.open_series_picker(),
            Action::LogScale => self.run.scale = self.run.scale.next(),
            _ => Self::move_sel(&mut self.run.sel, self.run.findings.len(), a),
        }
    }
}
