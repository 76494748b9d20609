//! Typed errors for every reader: each names the file and says what is wrong in one line.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// A reader failure. `Display` is one line: `<file>: <what is wrong>`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {source}", shown(path))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but its content is not what its name or header says.
    #[error("{}: {msg}", shown(path))]
    Format { path: PathBuf, msg: String },
    /// Nothing readable was found where something was expected.
    #[error("{}: {msg}", shown(path))]
    Empty { path: PathBuf, msg: String },
}

/// A path for a one-line message (control characters in a file name are escaped).
fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

/// Keep a message on one line: control characters that came from the file (a zip entry name
/// with a newline, a tag with a carriage return) are shown escaped.
fn one_line(msg: String) -> String {
    match escape_controls(&msg) {
        Cow::Borrowed(_) => msg,
        Cow::Owned(s) => s,
    }
}

/// The one escape for text that came from outside (a file name, a series tag, a value read
/// from a file, a command-line argument) before it is printed as plain text: every control
/// character (C0, DEL, C1; so ESC and BEL of a terminal's CSI/OSC sequences) is written as
/// JSON writes it (`\n`, `\t`, `\u001b`), so nothing a file names can move the cursor, clear
/// the screen or retitle the terminal. Text without control characters is returned as is.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// Appends `c`, escaped as JSON escapes it when it is a control character.
pub fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        c if c.is_control() => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => out.push(c),
    }
}

/// A path for plain-text output, its control characters escaped (see [`escape_controls`]).
pub fn shown_path(path: &Path) -> String {
    escape_controls(&path.to_string_lossy()).into_owned()
}

impl ReadError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ReadError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub fn format(path: &Path, msg: impl Into<String>) -> Self {
        ReadError::Format {
            path: path.to_path_buf(),
            msg: one_line(msg.into()),
        }
    }
    pub fn empty(path: &Path, msg: impl Into<String>) -> Self {
        ReadError::Empty {
            path: path.to_path_buf(),
            msg: one_line(msg.into()),
        }
    }
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Io { path, .. }
            | ReadError::Format { path, .. }
            | ReadError::Empty { path, .. } => path,
        }
    }
}

pub type Result<T, E = ReadError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_stay_on_one_line() {
        let e = ReadError::format(Path::new("a\nb.pt"), "entry \"x\ny\": bad header\r");
        let s = e.to_string();
        assert!(!s.contains('\n') && !s.contains('\r'), "{s:?}");
        assert!(s.contains("a\\nb.pt") && s.contains("x\\ny"), "{s}");
    }

    #[test]
    fn controls_are_escaped_as_json_escapes_them() {
        let raw = "train\u{1b}]0;T\u{7}.log\u{7f}\u{9b}2J\tx";
        let s = escape_controls(raw);
        assert_eq!(s, "train\\u001b]0;T\\u0007.log\\u007f\\u009b2J\\tx");
        let json = serde_json::to_string("a\u{1b}b").unwrap();
        assert!(json.contains(&*escape_controls("\u{1b}")), "{json}");
        assert!(matches!(escape_controls("plain ü"), Cow::Borrowed(_)));
    }
}
