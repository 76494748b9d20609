//! [`Headless`] drives an [`App`] synchronously (television's headless mode): keys in,
//! effects performed inline with an injected runner, so jobs finish before the next key —
//! for tests and scripted use.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{worker, App, Effect, Event};
use crate::triage::jobs::ProbeRunner;

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
                    Effect::Write(t) => self.app.on_written(t.write()),
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
