//! The `:` command palette: editing the line with completions, and the interpreter that runs
//! it (`walk`, `show`, `search`, `export`, `fact`, `check`, `run`, `home`, `help`, `quit`).

use crate::triage::jobs::JobKind;
use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::export::Format;
use super::{App, Overlay, Screen};
use crate::catalog::Catalog;
use crate::look::strings as S;

impl App {
    /// A key while the `:` palette is open: edit the line, Tab completes, Enter runs it.
    pub(super) fn palette_key(&mut self, code: KeyCode, plain_char: Option<char>) {
        let Overlay::Palette { input, sel } = &mut self.overlay else {
            return;
        };
        match code {
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Enter => {
                let line = input.clone();
                self.overlay = Overlay::None;
                self.run_command(&line);
            }
            KeyCode::Tab => {
                if let Some(c) = palette_completions(&self.cat, input).into_iter().nth(*sel) {
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
                    // A fact can change what kind of run this is: re-read and re-judge it.
                    if self.run.attached.is_some() {
                        self.submit(JobKind::Attach);
                    }
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
