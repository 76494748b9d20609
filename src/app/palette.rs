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
                    // And the walk's nodes that use it are asked again.
                    if self.screen == Screen::Walk {
                        self.rerun_for_fact(k.trim());
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
            other => {
                let mut msg = format!("{} {other:?}", S::UNKNOWN_COMMAND);
                if let Some(m) = did_you_mean(other, COMMANDS.iter().copied()) {
                    let tail = if rest.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", rest.join(" "))
                    };
                    msg.push_str(&format!(" — {} :{m}{tail}?", S::DID_YOU_MEAN));
                }
                self.set_status(msg, true)
            }
        }
    }
}

/// The palette's command names (aliases included), for "did you mean".
const COMMANDS: &[&str] = &[
    "walk", "show", "open", "search", "export", "fact", "check", "run", "home", "help", "quit",
];

/// The closest of `names` to `typed` when it is a likely typo: at most 1 edit for words of
/// up to 4 letters, 2 for longer ones (a swap of two neighbours counts as one edit).
pub fn did_you_mean<'a>(typed: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    let limit = if typed.chars().count() <= 4 { 1 } else { 2 };
    names
        .map(|n| (edit_distance(&typed, &n.to_lowercase()), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Edit distance with adjacent transpositions (optimal string alignment).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_of_commands_and_trees_find_their_word() {
        assert_eq!(edit_distance("wlak", "walk"), 1);
        assert_eq!(did_you_mean("wlak", COMMANDS.iter().copied()), Some("walk"));
        let trees = ["stability", "convergence", "llm", "vision"];
        assert_eq!(
            did_you_mean("stablity", trees.iter().copied()),
            Some("stability")
        );
        assert_eq!(did_you_mean("zzz", trees.iter().copied()), None);
    }
}
