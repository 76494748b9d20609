//! The streaming engine of the tensor pass: tensors linked by a requested comparison form a
//! group and are read side by side; each group is cut into parts of a few MB, and every part
//! is a task on rayon's work-stealing pool — so all cores stay busy on one big tensor or on
//! many small ones. A task reads its part block by block with positioned reads (`pread`, no
//! memory map: a file truncated under us is an error, not SIGBUS), after asking the kernel to
//! fetch the part ahead (`posix_fadvise(WILLNEED)`), so disk reads overlap the arithmetic.
//! Memory: per running task one read block per member and the counting tables of the members
//! whose statistics are wanted; per group in flight one merged table per member.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use rayon::prelude::*;

use super::cache::{cache, Failure, TensorKey};
use super::progress::progress;
use crate::error::ReadError;
use crate::tensors::compare::DiffAcc;
use crate::tensors::stats::{tensor_stats, StatsAcc};
use crate::tensors::{DType, TensorFile};

/// Elements of each member read at a time, for a 2-byte dtype (scaled by element size so a
/// block of the widest member stays 64 KiB: the blocks and the counting tables share L2).
const BLOCK_BYTES: usize = 64 << 10;
/// Bytes of the widest member per task.
const PART_BYTES: usize = 8 << 20;

/// One tensor to read, and whether its own statistics are wanted (else it is only read for a
/// comparison).
pub(crate) struct Item<'a> {
    pub key: TensorKey,
    pub tf: &'a TensorFile,
    pub name: String,
    pub want_stats: bool,
}

/// Where a tensor's bytes come from.
enum Src<'a> {
    /// Contiguous, uncompressed bytes at `off` of `file`: streamed.
    File {
        file: &'a File,
        off: u64,
        path: &'a Path,
        /// Index into the pass's data files (for progress).
        fidx: usize,
    },
    /// A strided view or a compressed entry: read whole through the container, as before.
    Whole,
}

struct Member<'a> {
    item: usize,
    dtype: DType,
    file: &'a File,
    off: u64,
    path: &'a Path,
    fidx: usize,
}

struct Group<'a> {
    members: Vec<Member<'a>>,
    /// (request pair index, member a, member b).
    pairs: Vec<(usize, usize, usize)>,
    numel: usize,
    part: usize,
    state: Mutex<GroupState>,
}

#[derive(Default)]
struct GroupState {
    stats: Vec<Option<StatsAcc>>,
    diffs: Vec<Option<DiffAcc>>,
    failed: Vec<Option<Failure>>,
    parts_left: usize,
}

thread_local! {
    static BUFS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Runs a planned pass: every result (or the reason it could not be had) goes to the cache.
pub(crate) fn run(items: &[Item<'_>], pairs: &[(usize, usize)]) {
    let mut srcs: Vec<Result<(DType, usize, Src<'_>), Failure>> = items
        .iter()
        .map(|it| {
            let (info, loc) = it.tf.loc(&it.name).map_err(|e| Failure::new(&e))?;
            let src = match it.tf.file_range(loc) {
                Some((file, off, _, path)) => Src::File {
                    file,
                    off,
                    path,
                    fidx: 0,
                },
                None => Src::Whole,
            };
            Ok((info.dtype, info.numel(), src))
        })
        .collect();
    let sizes: Vec<u64> = srcs
        .iter()
        .map(|s| s.as_ref().map_or(0, |(dt, n, _)| (dt.size() * n) as u64))
        .collect();
    let nbytes = |i: usize| sizes[i];
    // Comparisons: streamed side by side (`linked`), or settled apart — an unreadable side,
    // different element counts (errors), a side that must be read whole.
    let mut linked: Vec<(usize, usize, usize)> = Vec::new();
    let mut settled: Vec<(usize, Option<Failure>)> = Vec::new();
    for (p, &(a, b)) in pairs.iter().enumerate() {
        let (ia, ib) = (&items[a], &items[b]);
        match (&srcs[a], &srcs[b]) {
            (Err(f), _) | (_, Err(f)) => settled.push((p, Some(f.clone()))),
            (Ok((_, na, _)), Ok((_, nb, _))) if na != nb => settled.push((
                p,
                Some(Failure::new(&ReadError::format(
                    ib.tf.path(),
                    format!(
                        "tensor {:?} has {nb} elements, {:?} has {na}",
                        ib.name, ia.name
                    ),
                ))),
            )),
            (Ok((_, _, Src::Whole)), _) | (_, Ok((_, _, Src::Whole))) => settled.push((p, None)),
            _ => linked.push((p, a, b)),
        }
    }
    // What is streamed, from which files; what is read whole.
    let mut streamed = vec![false; items.len()];
    for &(_, a, b) in &linked {
        streamed[a] = true;
        streamed[b] = true;
    }
    let mut files: HashMap<&Path, usize> = HashMap::new();
    let mut file_bytes: Vec<u64> = Vec::new();
    let mut total = 0u64;
    for (i, it) in items.iter().enumerate() {
        let n = nbytes(i);
        if let Ok((_, _, Src::File { path, fidx, .. })) = &mut srcs[i] {
            if it.want_stats || streamed[i] {
                streamed[i] = true;
                let next = files.len();
                *fidx = *files.entry(*path).or_insert(next);
                if *fidx == file_bytes.len() {
                    file_bytes.push(0);
                }
                file_bytes[*fidx] += n;
                total += n;
            }
        } else if it.want_stats {
            total += n;
        }
    }
    for &(p, ref f) in &settled {
        if f.is_none() {
            total += nbytes(pairs[p].0) + nbytes(pairs[p].1);
        }
    }
    let prog = progress();
    prog.begin(file_bytes.len() as u64, total);
    for &b in &file_bytes {
        if b == 0 {
            prog.file_done();
        }
    }
    let file_left: Vec<AtomicU64> = file_bytes.iter().map(|&b| AtomicU64::new(b)).collect();

    for (p, f) in settled {
        let (a, b) = pairs[p];
        let (ia, ib) = (&items[a], &items[b]);
        let r = match f {
            Some(f) => Err(f),
            None => {
                let r = ia.tf.compare(&ia.name, ib.tf, &ib.name);
                prog.bytes(nbytes(a) + nbytes(b));
                r.map_err(|e| Failure::new(&e))
            }
        };
        cache().diffs.insert((ia.key.clone(), ib.key.clone()), r);
    }
    // Statistics of tensors read whole, or not found.
    for (i, it) in items.iter().enumerate() {
        if !it.want_stats || streamed[i] {
            continue;
        }
        let r = match &srcs[i] {
            Err(f) => Err(f.clone()),
            Ok(_) => {
                // Through the container: a DCP tensor's chunks stream, never assembled.
                let r = it.tf.stats(&it.name);
                prog.bytes(nbytes(i));
                r.map_err(|e| Failure::new(&e))
            }
        };
        cache().stats.insert(it.key.clone(), r);
    }

    // Groups: streamed items joined by their comparisons (union-find).
    let mut parent: Vec<usize> = (0..items.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &(_, a, b) in &linked {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut member_of: Vec<(usize, usize)> = vec![(usize::MAX, 0); items.len()];
    for i in 0..items.len() {
        let Ok((
            dtype,
            numel,
            Src::File {
                file,
                off,
                path,
                fidx,
            },
        )) = &srcs[i]
        else {
            continue;
        };
        if !streamed[i] {
            continue;
        }
        let r = root(&mut parent, i);
        let g = *group_of.entry(r).or_insert_with(|| {
            groups.push(Group {
                members: Vec::new(),
                pairs: Vec::new(),
                numel: *numel,
                part: 0,
                state: Mutex::new(GroupState::default()),
            });
            groups.len() - 1
        });
        member_of[i] = (g, groups[g].members.len());
        groups[g].members.push(Member {
            item: i,
            dtype: *dtype,
            file,
            off: *off,
            path,
            fidx: *fidx,
        });
    }
    for &(p, a, b) in &linked {
        let (g, ma) = member_of[a];
        let (_, mb) = member_of[b];
        groups[g].pairs.push((p, ma, mb));
    }
    let mut tasks: Vec<(usize, usize, usize)> = Vec::new();
    for (gi, g) in groups.iter_mut().enumerate() {
        let es = g.members.iter().map(|m| m.dtype.size()).max().unwrap_or(1);
        let block = BLOCK_BYTES / es;
        g.part = (PART_BYTES / es).div_ceil(block) * block;
        let parts = g.numel.div_ceil(g.part).max(1);
        let st = g.state.get_mut().unwrap_or_else(|e| e.into_inner());
        st.parts_left = parts;
        st.stats = g.members.iter().map(|_| None).collect();
        st.diffs = g.pairs.iter().map(|_| None).collect();
        st.failed = vec![None; g.members.len()];
        for p in 0..parts {
            let lo = p * g.part;
            tasks.push((gi, lo, (lo + g.part).min(g.numel)));
        }
    }
    let ctx = Ctx {
        items,
        groups: &groups,
        file_left: &file_left,
    };
    tasks
        .par_iter()
        .with_max_len(1)
        .for_each(|&(g, lo, hi)| ctx.task(g, lo, hi));
    prog.end(total);
}

struct Ctx<'s, 'a> {
    items: &'s [Item<'a>],
    groups: &'s [Group<'a>],
    file_left: &'s [AtomicU64],
}

impl Ctx<'_, '_> {
    fn advance(&self, fidx: usize, n: u64) {
        progress().bytes(n);
        if self.file_left[fidx].fetch_sub(n, Relaxed) == n {
            progress().file_done();
        }
    }

    /// Streams elements `[lo, hi)` of every member of group `gi` and merges what it found.
    fn task(&self, gi: usize, lo: usize, hi: usize) {
        let g = &self.groups[gi];
        let items = self.items;
        let mut stats: Vec<Option<StatsAcc>> = g
            .members
            .iter()
            .map(|m| {
                items[m.item]
                    .want_stats
                    .then(|| StatsAcc::new(m.dtype, g.numel))
            })
            .collect();
        let mut diffs: Vec<DiffAcc> = g
            .pairs
            .iter()
            .map(|&(_, a, b)| DiffAcc::new(g.members[a].dtype, g.members[b].dtype))
            .collect();
        let mut failed: Vec<Option<Failure>> = vec![None; g.members.len()];
        for m in &g.members {
            let es = m.dtype.size() as u64;
            advise(m.file, m.off + lo as u64 * es, (hi - lo) as u64 * es);
        }
        let es_max = g.members.iter().map(|m| m.dtype.size()).max().unwrap_or(1);
        let block = BLOCK_BYTES / es_max;
        BUFS.with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            if bufs.len() < g.members.len() {
                bufs.resize_with(g.members.len(), Vec::new);
            }
            let mut at = lo;
            while at < hi {
                let k = block.min(hi - at);
                for (i, m) in g.members.iter().enumerate() {
                    let es = m.dtype.size();
                    let buf = &mut bufs[i];
                    if buf.len() < block * es {
                        buf.resize(block * es, 0);
                    }
                    if failed[i].is_some() {
                        continue;
                    }
                    // A failed member's unread bytes count as handled (progress reaches the end).
                    let n = match read_at(m.file, &mut buf[..k * es], m.off + (at * es) as u64) {
                        Ok(()) => (k * es) as u64,
                        Err(e) => {
                            failed[i] = Some(Failure::new(&ReadError::io(m.path, e)));
                            ((hi - at) * es) as u64
                        }
                    };
                    self.advance(m.fidx, n);
                }
                for (i, s) in stats.iter_mut().enumerate() {
                    if let (Some(s), None) = (s, &failed[i]) {
                        s.feed(&bufs[i][..k * g.members[i].dtype.size()]);
                    }
                }
                for (d, &(_, a, b)) in diffs.iter_mut().zip(&g.pairs) {
                    if failed[a].is_some() || failed[b].is_some() {
                        continue;
                    }
                    let (da, db) = (g.members[a].dtype, g.members[b].dtype);
                    d.feed(&bufs[a][..k * da.size()], da, &bufs[b][..k * db.size()], db);
                }
                at += k;
            }
        });
        let done = {
            let mut st = g.state.lock().unwrap_or_else(|e| e.into_inner());
            for (i, s) in stats.into_iter().enumerate() {
                if let Some(s) = s {
                    match &mut st.stats[i] {
                        Some(acc) => acc.merge(s),
                        slot => *slot = Some(s),
                    }
                }
            }
            for (i, d) in diffs.into_iter().enumerate() {
                match &mut st.diffs[i] {
                    Some(acc) => acc.merge(d),
                    slot => *slot = Some(d),
                }
            }
            for (i, f) in failed.into_iter().enumerate() {
                if st.failed[i].is_none() {
                    st.failed[i] = f;
                }
            }
            st.parts_left -= 1;
            (st.parts_left == 0).then(|| std::mem::take(&mut *st))
        };
        if let Some(st) = done {
            self.finish(g, st);
        }
    }

    fn finish(&self, g: &Group<'_>, st: GroupState) {
        let mut c = cache();
        for (i, s) in st.stats.into_iter().enumerate() {
            let key = self.items[g.members[i].item].key.clone();
            let r = match &st.failed[i] {
                Some(f) => Err(f.clone()),
                None => Ok(s
                    .map(StatsAcc::finish)
                    .unwrap_or_else(|| tensor_stats(&[], g.members[i].dtype))),
            };
            if self.items[g.members[i].item].want_stats {
                c.stats.insert(key, r);
            }
        }
        for (d, &(_, a, b)) in st.diffs.into_iter().zip(&g.pairs) {
            let (ia, ib) = (
                &self.items[g.members[a].item],
                &self.items[g.members[b].item],
            );
            let r = match (&st.failed[a], &st.failed[b]) {
                (Some(f), _) | (_, Some(f)) => Err(f.clone()),
                _ => Ok(d
                    .unwrap_or_else(|| DiffAcc::new(g.members[a].dtype, g.members[b].dtype))
                    .finish()),
            };
            c.diffs.insert((ia.key.clone(), ib.key.clone()), r);
        }
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, off)
}

#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(off))?;
    f.read_exact(buf)
}

/// Asks the kernel to start reading a range we are about to stream (a hint; errors ignored).
#[cfg(target_os = "linux")]
fn advise(file: &File, off: u64, len: u64) {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return;
    }
    // SAFETY: a valid open descriptor; posix_fadvise only reads its arguments.
    unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            off as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_WILLNEED,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_file: &File, _off: u64, _len: u64) {}
