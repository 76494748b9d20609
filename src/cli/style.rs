//! Terminal styling for plain output: ANSI colour only when stdout is a terminal (or
//! `--color always`), never when NO_COLOR is set (unless forced), and text wrapping.

use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether the TUI draws in colour: `--color always|never`, else on unless NO_COLOR is
    /// set (the TUI owns the terminal, so no is-a-terminal test).
    pub fn tui_enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub width: usize,
}

impl Style {
    pub fn detect(choice: ColorChoice) -> Style {
        let tty = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && !no_color,
        };
        let width = if tty {
            crossterm::terminal::size()
                .map(|(w, _)| w as usize)
                .unwrap_or(80)
        } else {
            100
        };
        Style {
            color,
            width: width.clamp(40, 120),
        }
    }

    pub fn plain() -> Style {
        Style {
            color: false,
            width: 100,
        }
    }

    fn wrap_code(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap_code("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.wrap_code("2", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.wrap_code("1;31", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.wrap_code("33", s)
    }
    pub fn green(&self, s: &str) -> String {
        self.wrap_code("32", s)
    }
    pub fn cyan(&self, s: &str) -> String {
        self.wrap_code("36", s)
    }
    /// Highlight markers for search snippets.
    pub fn hl(&self) -> (&'static str, &'static str) {
        if self.color {
            ("\x1b[1;33m", "\x1b[0m")
        } else {
            ("*", "*")
        }
    }
}

/// Greedy word wrap to `width` columns, each line prefixed with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let avail = width.saturating_sub(indent.chars().count()).max(20);
    let mut out = String::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for word in para.split_whitespace() {
            let wl = word.chars().count();
            if len > 0 && len + 1 + wl > avail {
                out.push_str(indent);
                out.push_str(&line);
                out.push('\n');
                line.clear();
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            line.push_str(word);
            len += wl;
        }
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_width_with_indent() {
        let w = wrap("aaa bbb ccc ddd eee fff ggg hhh iii jjj kkk lll", 24, "  ");
        assert!(w.lines().all(|l| l.chars().count() <= 24), "{w}");
        assert!(w.lines().all(|l| l.starts_with("  ")));
    }
}
