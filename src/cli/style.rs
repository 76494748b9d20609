//! Terminal styling for plain output: ANSI colour only when stdout is a terminal (or
//! `--color always`), never when NO_COLOR is set (unless forced), and text wrapping.

use std::borrow::Cow;
use std::io::IsTerminal;

use mltriage_probes::error::push_escaped;
pub use mltriage_probes::error::{escape_controls, shown_path};

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

/// Plain output made safe for a terminal, the last step before it is written: newlines and
/// the colour codes this module writes (SGR: `ESC [ digits ; … m`) stay; every other control
/// character (an ESC that opens a cursor move, a screen clear or an OSC title, a BEL, a
/// carriage return, C1) is escaped by [`escape_controls`]'s rule, whatever printed it.
/// Text from files is escaped where it is printed as well, so a file's own colour codes
/// show escaped; this catches what a print site missed.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && c.is_control()) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            let sgr = rest.as_bytes()[1..]
                .strip_prefix(b"[")
                .map(|t| {
                    t.iter()
                        .take_while(|b| b.is_ascii_digit() || **b == b';')
                        .count()
                })
                .filter(|&n| n <= 16 && rest.as_bytes().get(2 + n) == Some(&b'm'));
            if let Some(n) = sgr {
                out.push_str(&rest[..3 + n]);
                rest = &rest[3 + n..];
                continue;
            }
        }
        if c == '\n' {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
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

    #[test]
    fn terminal_safe_keeps_newlines_and_colour_and_escapes_the_rest() {
        let st = Style {
            color: true,
            width: 80,
        };
        let s = format!("{} a\x1b]0;T\x07b\x1b[2Jc\rd\n", st.red("FAIL"));
        let t = terminal_safe(&s);
        assert_eq!(
            t,
            "\x1b[1;31mFAIL\x1b[0m a\\u001b]0;T\\u0007b\\u001b[2Jc\\rd\n"
        );
        assert!(matches!(terminal_safe("plain\n"), Cow::Borrowed(_)));
        assert_eq!(terminal_safe("\x1b"), "\\u001b");
        assert_eq!(terminal_safe("\x1b[12"), "\\u001b[12");
    }
}
