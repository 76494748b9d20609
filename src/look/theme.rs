//! Styles and marks. Meaning is never carried by colour alone: every status has a mark and
//! a word; with colour off (`--color never`, NO_COLOR) emphasis falls back to bold/reverse/
//! underline, and `--ascii` swaps every non-ASCII symbol for a plain one.

use mltriage_probes::probe::Status;
use ratatui::style::{Color, Modifier, Style};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub ascii: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            color: true,
            ascii: false,
        }
    }
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    pub fn title(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn heading(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    pub fn key(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    pub fn highlight(&self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }
    pub fn knob(&self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn border(&self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            self.dim()
        }
    }
    pub fn series(&self, i: usize) -> Style {
        self.fg([Color::Cyan, Color::Magenta, Color::Green][i % 3])
    }
    pub fn band(&self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Mark and word for a status: `✗ fail`, `! warn`, `✓ pass`, `· skip` (ASCII `X ! v -`).
    pub fn mark(&self, s: Status) -> (&'static str, Style) {
        let (u, a, c) = match s {
            Status::Fail => ("✗", "X", Color::Red),
            Status::Warn => ("!", "!", Color::Yellow),
            Status::Pass => ("✓", "v", Color::Green),
            Status::Skip => ("·", "-", Color::DarkGray),
        };
        let style = self.fg(c).add_modifier(if s == Status::Fail {
            Modifier::BOLD
        } else {
            Modifier::empty()
        });
        (if self.ascii { a } else { u }, style)
    }

    /// The selection pointer.
    pub fn pointer(&self) -> &'static str {
        if self.ascii {
            ">"
        } else {
            "›"
        }
    }

    pub fn sep(&self) -> &'static str {
        if self.ascii {
            " > "
        } else {
            " › "
        }
    }
}

/// ASCII replacement for a cell symbol (borders, braille dots, arrows, marks).
pub fn ascii_symbol(s: &str) -> Option<&'static str> {
    if s.is_ascii() {
        return None;
    }
    let c = s.chars().next()?;
    Some(match c {
        '─' | '━' | '═' | '╌' | '┄' => "-",
        '│' | '┃' | '║' | '╎' | '┆' => "|",
        '┌' | '┐' | '└' | '┘' | '╭' | '╮' | '╰' | '╯' | '├' | '┤' | '┬' | '┴' | '┼' | '╔' | '╗'
        | '╚' | '╝' => "+",
        '✗' => "X",
        '✓' => "v",
        '·' | '•' => "-",
        '›' | '→' | '▶' => ">",
        '←' | '‹' => "<",
        '↑' => "^",
        '↓' => "v",
        '…' => ".",
        '—' | '–' => "-",
        '×' => "x",
        '≥' => ">",
        '≤' => "<",
        '±' => "+",
        '█' | '▉' | '▊' | '▋' | '▌' | '▍' | '▎' | '▏' | '▀' | '▄' | '▅' | '▆' | '▇' => {
            "#"
        }
        '▁' | '▂' | '▃' => ".",
        '\u{2800}'..='\u{28FF}' => {
            if c == '\u{2800}' {
                " "
            } else {
                "*"
            }
        }
        _ => "?",
    })
}
