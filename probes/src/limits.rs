//! Budgets for reading untrusted files, and the one way to open them: regular files only
//! (a FIFO, device or socket is refused without blocking), text formats read under a size
//! cap, lines under a length cap. The caps are documented in the README ("Budgets").

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::error::{ReadError, Result};

/// Default cap on a whole-document text file (trainer_state.json, config.json, an index,
/// a YAML file): 16 MiB. `MLTRIAGE_READ_CAP_MB` overrides it.
pub const DEFAULT_TEXT_CAP: u64 = 16 << 20;
/// Longest line of a line-oriented log (JSON lines, CSV): 1 MiB.
pub const MAX_LINE: usize = 1 << 20;
/// The environment variable that raises or lowers [`DEFAULT_TEXT_CAP`] (in MiB).
pub const CAP_ENV: &str = "MLTRIAGE_READ_CAP_MB";

/// The per-file cap for whole-document text formats, in bytes.
pub fn text_cap() -> u64 {
    std::env::var(CAP_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
        .map(|m| m.saturating_mul(1 << 20))
        .unwrap_or(DEFAULT_TEXT_CAP)
}

/// What a non-regular file is, for an error message; `None` for a regular file.
pub fn non_regular_kind(ft: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Opens a file for reading only if it is a regular file. The open itself never blocks
/// (`O_NONBLOCK`: a FIFO with no writer would otherwise hang), and the type is checked on the
/// opened descriptor, so a swap between check and open cannot slip a device in.
pub fn open_regular_io(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let ft = f.metadata()?.file_type();
    if let Some(kind) = non_regular_kind(ft) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is {kind}, not a regular file; refused"),
        ));
    }
    Ok(f)
}

/// [`open_regular_io`] with the reader error type.
pub fn open_regular(path: &Path) -> Result<File> {
    open_regular_io(path).map_err(|e| ReadError::io(path, e))
}

/// Reads a whole regular file of at most `cap` bytes; a larger (or growing) file is refused
/// with a message naming the cap and how to raise it.
pub fn read_capped_io(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let f = open_regular_io(path)?;
    let len = f.metadata()?.len();
    if len > cap {
        return Err(over_cap(len, cap));
    }
    let mut out = Vec::with_capacity(len as usize);
    f.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(over_cap(out.len() as u64, cap));
    }
    Ok(out)
}

fn over_cap(len: u64, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{} is over the {} read cap for text files (raise it with {CAP_ENV}=<MiB>)",
            human(len),
            human(cap)
        ),
    )
}

/// The first `n` bytes of a regular file (fewer when it is shorter): what content sniffing
/// reads, through the same gate as every reader.
pub fn read_head(path: &Path, n: u64) -> Result<Vec<u8>> {
    let f = open_regular(path)?;
    let mut head = Vec::with_capacity(n.min(1 << 16) as usize);
    f.take(n)
        .read_to_end(&mut head)
        .map_err(|e| ReadError::io(path, e))?;
    Ok(head)
}

/// [`read_capped_io`] with the reader error type.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
    read_capped_io(path, cap).map_err(|e| ReadError::io(path, e))
}

/// [`read_capped`] at the text cap.
pub fn read_text_file(path: &Path) -> Result<Vec<u8>> {
    read_capped(path, text_cap())
}

fn human(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{n} bytes")
    }
}

/// A reader that fails (instead of buffering without end) once a line runs past `max` bytes.
pub struct LineCapped<R> {
    inner: R,
    run: usize,
    max: usize,
}

impl<R> LineCapped<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineCapped { inner, run: 0, max }
    }
}

impl<R: Read> Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in buf.get(..n).unwrap_or(&[]) {
            if b == b'\n' {
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > self.max {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "a line is longer than the {} line cap; not a log this tool reads",
                            human(self.max as u64)
                        ),
                    ));
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_devices_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo(3) call on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&p).unwrap_err().to_string();
        assert!(e.contains("FIFO") && e.contains("fifo"), "{e}");
        let e = read_text_file(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("character device"), "{e}");
        let e = open_regular(d.path()).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
    }

    #[test]
    fn text_cap_and_line_cap_hold() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        std::fs::write(&p, vec![b'0'; 2048]).unwrap();
        let e = read_capped(&p, 1024).unwrap_err().to_string();
        assert!(e.contains("read cap") && e.contains(CAP_ENV), "{e}");
        assert_eq!(read_capped(&p, 4096).unwrap().len(), 2048);
        let mut r = LineCapped::new(&[b'x'; 100][..], 10);
        let mut s = Vec::new();
        assert!(r.read_to_end(&mut s).is_err());
        let mut r = LineCapped::new(&b"aaaa\nbbbb\ncccc\n"[..], 5);
        assert!(r.read_to_end(&mut s).is_ok());
    }
}
