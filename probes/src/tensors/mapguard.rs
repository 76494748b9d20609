//! Memory maps that survive their file being truncated underneath them. Reading a page of a
//! mapping past the file's new end raises SIGBUS, which would kill the process. Every map we
//! make is registered here; a SIGBUS inside a registered map replaces the faulting page with
//! zeros (an anonymous page mapped over it), marks the map as damaged and lets the read go on.
//! Readers then check [`GuardedMap::damaged`] and report "changed while being read" instead of
//! returning numbers computed from zeros. A SIGBUS anywhere else goes to the previous handler.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

use memmap2::Mmap;

const SLOTS: usize = 512;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    damaged: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    damaged: AtomicBool::new(false),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static mut PREVIOUS: Option<libc::sigaction> = None;

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: called by the kernel with a valid siginfo for SIGBUS; only async-signal-safe
    // calls (mmap, sigaction) and atomics are used.
    unsafe {
        let addr = if info.is_null() {
            0
        } else {
            (*info).si_addr() as usize
        };
        if addr != 0 {
            for s in TABLE.iter() {
                let len = s.len.load(Ordering::Acquire);
                let start = s.start.load(Ordering::Acquire);
                if len > 0 && addr >= start && addr - start < len {
                    let page = PAGE.load(Ordering::Relaxed);
                    let base = addr & !(page - 1);
                    let p = libc::mmap(
                        base as *mut libc::c_void,
                        page,
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    );
                    if p != libc::MAP_FAILED {
                        s.damaged.store(true, Ordering::Release);
                        return;
                    }
                }
            }
        }
        // Not ours: put the previous handler back; the faulting access repeats and reaches it.
        let prev = std::ptr::addr_of!(PREVIOUS).read();
        match prev {
            Some(old) => {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: plain sysconf/sigaction calls; PREVIOUS is written once, before the handler
        // that reads it is installed.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut act.sa_mask);
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0 {
                *std::ptr::addr_of_mut!(PREVIOUS) = Some(old);
            }
            libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
        }
    });
}

/// A read-only file map registered with the SIGBUS guard (derefs to the [`Mmap`]).
pub struct GuardedMap {
    map: Mmap,
    slot: Option<usize>,
}

impl GuardedMap {
    /// Maps `file` read-only and registers the map.
    pub fn map(file: &File) -> std::io::Result<GuardedMap> {
        install();
        // SAFETY: a private read-only map that is never written through; truncation while it
        // is open is caught by the SIGBUS guard above instead of killing the process.
        let map = unsafe { Mmap::map(file) }?;
        let (start, len) = (map.as_ptr() as usize, map.len());
        let mut slot = None;
        if len > 0 {
            for (i, s) in TABLE.iter().enumerate() {
                if s.start
                    .compare_exchange(0, start, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    // Claimed: the slot matches nothing until its length is set.
                    s.damaged.store(false, Ordering::Release);
                    s.len.store(len, Ordering::Release);
                    slot = Some(i);
                    break;
                }
            }
        }
        Ok(GuardedMap { map, slot })
    }

    /// Whether a read hit a page past the end of the (since truncated) file.
    pub fn damaged(&self) -> bool {
        self.slot
            .is_some_and(|i| TABLE[i].damaged.load(Ordering::Acquire))
    }
}

impl std::ops::Deref for GuardedMap {
    type Target = Mmap;
    fn deref(&self) -> &Mmap {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            // Unregister before the map (a field) is unmapped.
            TABLE[i].len.store(0, Ordering::Release);
            TABLE[i].start.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reading_a_truncated_map_gives_zeros_and_a_damage_flag_not_sigbus() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.bin");
        std::fs::File::create(&p)
            .unwrap()
            .write_all(&vec![7u8; 64 << 10])
            .unwrap();
        let f = File::open(&p).unwrap();
        let m = GuardedMap::map(&f).unwrap();
        assert!(!m.damaged());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
        let sum: u64 = m.iter().map(|&b| b as u64).sum();
        assert_eq!(sum, 0);
        assert!(m.damaged());
    }
}
