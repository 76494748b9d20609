//! Typed errors for every reader: each names the file and says what is wrong in one line.

use std::path::{Path, PathBuf};

/// A reader failure. `Display` is one line: `<file>: <what is wrong>`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but its content is not what its name or header says.
    #[error("{}: {msg}", path.display())]
    Format { path: PathBuf, msg: String },
    /// Nothing readable was found where something was expected.
    #[error("{}: {msg}", path.display())]
    Empty { path: PathBuf, msg: String },
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
            msg: msg.into(),
        }
    }
    pub fn empty(path: &Path, msg: impl Into<String>) -> Self {
        ReadError::Empty {
            path: path.to_path_buf(),
            msg: msg.into(),
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
