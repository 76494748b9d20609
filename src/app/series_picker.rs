//! The run screen's series picker (`s`): a list of every series the run logs (its tag as
//! logged and its canonical name), filtered by what is typed; Enter draws the chosen series
//! at the top of the run screen's charts, Esc closes. Also the charts' y scale (`L`):
//! automatic (log when the positive values span more than two decades), log, or linear.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Screen};
use crate::triage::jobs::SeriesView;

/// The picker's filter and selection.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeriesPicker {
    pub filter: String,
    pub sel: usize,
}

/// The y scale of the charts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Log when the positive values span more than two decades (a spike must not flatten
    /// the rest), else linear.
    #[default]
    Auto,
    Log,
    Linear,
}

impl Scale {
    /// Auto → log → linear → auto.
    pub fn next(self) -> Scale {
        match self {
            Scale::Auto => Scale::Log,
            Scale::Log => Scale::Linear,
            Scale::Linear => Scale::Auto,
        }
    }
}

/// Whether a series matches a filter: every word of it is in the tag or the canonical name
/// (case-insensitive).
pub fn matches(s: &SeriesView, filter: &str) -> bool {
    let hay = format!("{} {}", s.tag, s.name).to_lowercase();
    filter
        .to_lowercase()
        .split_whitespace()
        .all(|w| hay.contains(w))
}

impl App {
    /// The run's series the picker lists under its filter, in the run's order.
    pub fn picker_rows(&self) -> Vec<&SeriesView> {
        let filter = self
            .run
            .picker
            .as_ref()
            .map(|p| p.filter.as_str())
            .unwrap_or("");
        self.run
            .summary
            .as_ref()
            .map(|s| {
                s.series
                    .iter()
                    .filter(|x| !x.points.is_empty() && matches(x, filter))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Open the picker (run screen).
    pub(super) fn open_series_picker(&mut self) {
        self.run.picker = Some(SeriesPicker::default());
    }

    /// A key while the picker is open. Returns whether it was taken.
    pub(super) fn series_picker_key(&mut self, k: &KeyEvent) -> bool {
        if self.screen != Screen::Run || self.run.picker.is_none() {
            return false;
        }
        let n = self.picker_rows().len();
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let Some(p) = self.run.picker.as_mut() else {
            return false;
        };
        match k.code {
            KeyCode::Esc => self.run.picker = None,
            KeyCode::Enter => {
                let sel = p.sel;
                let name = self.picker_rows().get(sel).map(|s| s.name.clone());
                if let Some(name) = name {
                    self.run.picked = Some(name);
                    self.run.picker = None;
                }
            }
            KeyCode::Up => p.sel = p.sel.saturating_sub(1),
            KeyCode::Down => p.sel = (p.sel + 1).min(n.saturating_sub(1)),
            KeyCode::PageUp => p.sel = p.sel.saturating_sub(10),
            KeyCode::PageDown => p.sel = (p.sel + 10).min(n.saturating_sub(1)),
            KeyCode::Backspace => {
                p.filter.pop();
                p.sel = 0;
            }
            KeyCode::Char('u') if ctrl => {
                p.filter.clear();
                p.sel = 0;
            }
            KeyCode::Char(c) if !ctrl && !k.modifiers.contains(KeyModifiers::ALT) => {
                p.filter.push(c);
                p.sel = 0;
            }
            _ => {}
        }
        true
    }
}
