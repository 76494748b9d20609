//! Typed errors for every reader: each names the file and says what is wrong in one line.

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
    one_line(path.display().to_string())
}

/// Keep a message on one line: control characters that came from the file (a zip entry name
/// with a newline, a tag with a carriage return) are shown escaped.
fn one_line(msg: String) -> String {
    if !msg.chars().any(char::is_control) {
        return msg;
    }
    msg.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
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
}
