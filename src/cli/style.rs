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

static ASCII: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--ascii`: plain output writes ASCII only (see [`to_ascii`]).
pub fn set_ascii(on: bool) {
    ASCII.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The text as `emit` writes it: ASCII only under `--ascii`, else unchanged.
pub fn ascii_if_asked(s: &str) -> Cow<'_, str> {
    if ASCII.load(std::sync::atomic::Ordering::Relaxed) {
        to_ascii(s)
    } else {
        Cow::Borrowed(s)
    }
}

/// Every mark outside ASCII spelled in ASCII: `±` as `+/-`, `×` as `x`, `→` as `->`, `≤` as
/// `<=`, dashes as `-`/`--`, Greek letters by name; anything else as `?`.
pub fn to_ascii(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        if c == '√' && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric()) {
            // √d → sqrt(d)
            out.push_str("sqrt(");
            while let Some(n) = chars
                .peek()
                .copied()
                .filter(|n| n.is_ascii_alphanumeric() || *n == '_')
            {
                out.push(n);
                chars.next();
            }
            out.push(')');
            continue;
        }
        out.push_str(match c {
            '±' => "+/-",
            '×' | '✕' => "x",
            '→' | '⇒' | '▸' | '›' => "->",
            '←' | '‹' => "<-",
            '↑' => "^",
            '↓' => "v",
            '≤' => "<=",
            '≥' => ">=",
            '≠' => "!=",
            '≈' | '∼' => "~",
            '—' => "--",
            '–' | '−' | '‐' | '‑' => "-",
            '·' | '•' | '∙' => "*",
            '…' => "...",
            '✗' | '✘' => "x",
            '✓' | '✔' => "ok",
            '⚠' => "!",
            '‘' | '’' | '′' => "'",
            '“' | '”' | '″' => "\"",
            '√' => "sqrt",
            '∞' => "inf",
            '²' => "^2",
            '³' => "^3",
            '½' => "1/2",
            '°' => " deg",
            'µ' | 'μ' => "u",
            'σ' => "sigma",
            'Σ' | '∑' => "sum",
            'Δ' | 'δ' => "delta",
            'λ' => "lambda",
            'β' => "beta",
            'α' => "alpha",
            'γ' => "gamma",
            'ε' => "eps",
            'η' => "eta",
            'θ' => "theta",
            'π' => "pi",
            'τ' => "tau",
            '\u{a0}' | '\u{2009}' | '\u{202f}' => " ",
            _ => "?",
        });
    }
    Cow::Owned(out)
}

pub use crate::look::numbers::tame_numbers;

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

/// Word wrap with a hanging indent: the first line starts at column 0, the rest with
/// `indent`; at most `max_lines` lines, the last cut at a word with `…`. Words (numbers
/// included) are never split; ANSI colour codes count as no width.
pub fn wrap_hanging(text: &str, width: usize, indent: &str, max_lines: usize) -> String {
    let visible = |w: &str| {
        let mut n = 0;
        let mut in_esc = false;
        for c in w.chars() {
            if c == '\x1b' {
                in_esc = true;
            } else if in_esc {
                if c == 'm' {
                    in_esc = false;
                }
            } else {
                n += 1;
            }
        }
        n
    };
    let width = width.max(20);
    let mut lines: Vec<String> = vec![String::new()];
    let mut len = 0;
    let mut cut = false;
    for word in text.split_whitespace() {
        let wl = visible(word);
        let avail = if lines.len() == 1 {
            width
        } else {
            width.saturating_sub(indent.chars().count())
        };
        if len > 0 && len + 1 + wl > avail {
            if lines.len() == max_lines.max(1) {
                cut = true;
                break;
            }
            lines.push(String::new());
            len = 0;
        }
        let line = lines.last_mut().expect("one line");
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += wl;
    }
    if cut {
        // Room for the ` …` mark: drop words from the last line until it fits.
        let n = lines.len();
        let avail = if n == 1 {
            width
        } else {
            width.saturating_sub(indent.chars().count())
        };
        let last = &mut lines[n - 1];
        while visible(last) + 2 > avail {
            match last.rfind(' ') {
                Some(i) => last.truncate(i),
                None => break,
            }
        }
    }
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str(indent);
        }
        out.push_str(l);
        if cut && i + 1 == lines.len() {
            out.push_str(" …");
        }
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
    fn ascii_spells_every_mark_and_huge_numbers_are_capped() {
        assert_eq!(
            to_ascii("ln V = 6.24 ± 0.5 — 3× ≤ 2"),
            "ln V = 6.24 +/- 0.5 -- 3x <= 2"
        );
        assert!(to_ascii("✗ 0 fail · σ → ∞ 漢").is_ascii());
        assert_eq!(to_ascii("1/√d, √(2/fan_in)"), "1/sqrt(d), sqrt(2/fan_in)");
        let big = format!("ratio {}× the median", "9".repeat(40));
        assert_eq!(tame_numbers(&big), "ratio > 1e30× the median");
        assert_eq!(tame_numbers("x 12345678901234.5× y"), "x 1.23e13× y");
        // Ordinary numbers and long ids inside words stay.
        assert_eq!(tame_numbers("step 300, 1.5e-3"), "step 300, 1.5e-3");
        assert_eq!(
            tame_numbers("run_20231125123456789"),
            "run_20231125123456789"
        );
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
