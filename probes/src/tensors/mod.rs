//! Tensor containers and statistics: safetensors (single and sharded), torch zip checkpoints
//! (sniffed by content, under any name: `.pt/.bin/.pth/.ckpt/.pth.tar/.cleanrl_model`, SB3's
//! `policy.pth` inside its `.zip`) via a pickle VM that never executes code, pickled
//! `nn.Module` graphs ([`modgraph`]), numpy arrays in pickles ([`numpy`], [`vecnorm`]),
//! optimizer/scheduler state, the fused CPU statistics pass, two-tensor comparison, the per-run
//! tensor pass ([`pass`]: each tensor streamed once, figures cached) and the candle (GPU) path.
//!
//! A [`TensorFile`] knows its inventory from headers before any tensor byte is read; tensors
//! are then read one at a time from a memory map, so peak memory stays near one tensor.

pub mod candle_io;
pub mod compare;
pub mod dcp;
pub mod dtype;
pub mod keras;
pub mod mapguard;
pub mod memo;
pub mod modgraph;
pub mod numpy;
pub mod optim;
pub mod pass;
pub mod pickle;
pub mod safetensors;
pub mod sb3;
pub mod sniff;
pub mod stats;
pub mod torchzip;
pub mod vecnorm;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use candle_io::stats_on_device;
pub use compare::{diff_stats, DiffStats};
pub use dtype::DType;
pub use optim::{read_pickled_dict, OptimizerState, ParamGroup, ParamState};
pub use pickle::{lookup, lookup_path, TensorRef, Value};
pub use stats::{linear_histogram, tensor_stats, LogHist, TensorStats};
pub use torchzip::TorchZip;

use crate::error::{ReadError, Result};
use safetensors::SafeFile;

/// A tensor's contiguous little-endian bytes: borrowed from the map, or gathered from a
/// strided view.
pub type TensorBytes<'a> = Cow<'a, [u8]>;

/// Name, element type and shape of a stored tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Known to be a registered buffer (from a pickled module's `_buffers`), not a parameter.
    /// False when the container does not say (a state dict mixes both).
    pub buffer: bool,
}

impl TensorInfo {
    /// Number of elements (1 for a scalar). Overflow is rejected when the file is opened.
    pub fn numel(&self) -> usize {
        self.checked_numel().unwrap_or(usize::MAX)
    }

    pub fn nbytes(&self) -> usize {
        self.checked_nbytes().unwrap_or(usize::MAX)
    }

    pub fn checked_numel(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    pub fn checked_nbytes(&self) -> Option<usize> {
        self.checked_numel()?.checked_mul(self.dtype.size())
    }
}

/// Which container a [`TensorFile`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Safetensors,
    /// `*.index.json` with a `weight_map` over shard files.
    Sharded,
    TorchZip,
    /// A torch.distributed.checkpoint folder read through its `.metadata`.
    Dcp,
}

#[derive(Debug, Clone)]
enum Loc {
    Safe {
        file: usize,
        range: std::ops::Range<usize>,
    },
    Torch {
        file: usize,
        tref: TensorRef,
    },
    /// Assembled from its chunks when read.
    Dcp {
        tensor: usize,
    },
}

/// An opened tensor container (single file or sharded set).
pub struct TensorFile {
    path: PathBuf,
    kind: FileKind,
    tensors: Vec<TensorInfo>,
    index: HashMap<String, usize>,
    locs: Vec<Loc>,
    metadata: BTreeMap<String, String>,
    wrapper: Option<String>,
    safes: Vec<SafeFile>,
    torch: Vec<TorchZip>,
    /// A DCP checkpoint's parsed `.metadata` (shared), indexed by `Loc::Dcp`.
    dcp: std::sync::Arc<Vec<dcp::DcpTensor>>,
}

impl std::fmt::Debug for TensorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorFile")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

/// Keys under which checkpoints nest the model's state dict; stripped from tensor names when
/// the root holds no tensors itself.
const WRAPPERS: [&str; 4] = ["state_dict", "model_state_dict", "model", "module"];

/// Top-level checkpoint keys whose tensors are training state, not model weights; read them
/// with [`OptimizerState`] or [`TorchZip`].
const NOT_WEIGHTS: [&str; 9] = [
    "optimizer_states",
    "optimizer",
    "optimizer_state_dict",
    "lr_schedulers",
    "scheduler",
    "loops",
    "callbacks",
    "scaler",
    "rng_state",
];

/// Tensors at least this large are streamed by [`TensorFile::stats`] instead of mapped.
const STREAM_MIN: usize = 1 << 20;

/// Tensors at least this large have their pages dropped from our mapping after a read.
const RELEASE_BYTES: usize = 16 << 20;

impl TensorFile {
    /// Opens a `.safetensors` file, a sharded `*.index.json`, or a torch zip checkpoint,
    /// reading only headers (and `data.pkl`).
    pub fn open(path: impl AsRef<Path>) -> Result<TensorFile> {
        let path = path.as_ref();
        // A refusal is remembered where it depends on this one file alone (a sharded index's
        // may be a shard that is missing now and written later).
        if path.to_string_lossy().ends_with(".index.json") {
            return Self::open_inner(path, None);
        }
        memo::unless_refused("tensors", path, || Self::open_inner(path, None))
    }

    /// Opens one part of a torch checkpoint that holds several models: `part` is a top-level
    /// key (`ema` of an Ultralytics checkpoint, `state_dict_ema` of timm) holding a module or
    /// a state dict. An error naming the file when the key holds no tensors.
    pub fn open_part(path: impl AsRef<Path>, part: &str) -> Result<TensorFile> {
        Self::open_inner(path.as_ref(), Some(part))
    }

    fn open_inner(path: &Path, part: Option<&str>) -> Result<TensorFile> {
        if let Some(part) = part {
            let z = TorchZip::open(path)?;
            let mut tf = TensorFile::empty(path, FileKind::TorchZip);
            tf.add_torch(z, Some(part))?;
            tf.build_index(path)?;
            return Ok(tf);
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".index.json") {
            return Self::open_sharded(path);
        }
        if dcp::is_dcp_metadata(path) {
            return Self::open_dcp(path);
        }
        let mut tf = TensorFile::empty(path, FileKind::Safetensors);
        tf.add_file(path)?;
        tf.kind = if tf.torch.is_empty() {
            FileKind::Safetensors
        } else {
            FileKind::TorchZip
        };
        tf.build_index(path)?;
        Ok(tf)
    }

    fn empty(path: &Path, kind: FileKind) -> TensorFile {
        TensorFile {
            path: path.to_path_buf(),
            kind,
            tensors: Vec::new(),
            index: HashMap::new(),
            locs: Vec::new(),
            metadata: BTreeMap::new(),
            wrapper: None,
            safes: Vec::new(),
            torch: Vec::new(),
            dcp: Default::default(),
        }
    }

    /// Opens one file (format sniffed from its first bytes, then its extension) and appends its
    /// tensors.
    fn add_file(&mut self, path: &Path) -> Result<()> {
        let mut head = [0u8; 9];
        let n = {
            use std::io::Read;
            let mut f = crate::limits::open_regular(path)?;
            let mut n = 0;
            while n < head.len() {
                match f.read(&mut head[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ReadError::io(path, e)),
                }
            }
            n
        };
        if n == 0 {
            return Err(ReadError::empty(path, "empty file"));
        }
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        // safetensors: u64 header length, then '{' (checked first: the length's low byte may
        // well be 0x80, a pickle's first byte).
        let safeish = n == 9 && head[8] == b'{' && !head.starts_with(b"PK");
        let zipish = !safeish
            && (head.starts_with(b"PK") || head[0] == 0x80 || head.starts_with(&[0x8a, 0x0a]));
        if zipish
            || (!safeish && matches!(ext.as_str(), "pt" | "pth" | "bin" | "ckpt" | "pkl" | "tar"))
        {
            let z = TorchZip::open(path)?;
            self.add_torch(z, None)
        } else if safeish || ext == "safetensors" {
            let s = SafeFile::open(path)?;
            let file = self.safes.len();
            for (info, range) in &s.tensors {
                self.tensors.push(info.clone());
                self.locs.push(Loc::Safe {
                    file,
                    range: range.clone(),
                });
            }
            if self.metadata.is_empty() {
                self.metadata = s.metadata.clone();
            }
            self.safes.push(s);
            Ok(())
        } else {
            Err(ReadError::format(
                path,
                "not a recognised tensor file (expected safetensors or a torch zip checkpoint)",
            ))
        }
    }

    fn add_torch(&mut self, z: TorchZip, part: Option<&str>) -> Result<()> {
        let root = z.root();
        let chosen = match part {
            Some(p) => {
                let v = lookup(root, p).filter(|v| modgraph::is_module(v) || has_tensor(v));
                let v = v.ok_or_else(|| {
                    ReadError::format(z.path(), format!("no model weights under key {p:?}"))
                })?;
                Some((p.to_string(), v))
            }
            None => modgraph::root_module(root),
        };
        if let Some((key, m)) = chosen {
            let mut found = Vec::new();
            if modgraph::is_module(m) {
                modgraph::walk(m, "", &mut found).map_err(|e| ReadError::format(z.path(), e))?;
            } else {
                let mut flat = Vec::new();
                flatten(m, String::new(), &mut flat);
                found.extend(flat.into_iter().map(|(name, tref)| modgraph::Found {
                    name,
                    tref,
                    buffer: false,
                }));
            }
            let found = found
                .into_iter()
                .map(|f| (f.name.replace("_orig_mod.", ""), f.tref, f.buffer))
                .collect();
            self.wrapper = Some(key).filter(|k| !k.is_empty());
            return self.push_torch(z, found);
        }
        let mut found: Vec<(String, TensorRef)> = Vec::new();
        // Strip one wrapper level (`state_dict`, `model` …) when the root holds no tensors itself.
        let mut wrapper = None;
        let mut nested = false;
        if let Value::Dict(d) = root {
            let direct = d.iter().any(|(_, v)| matches!(v, Value::Tensor(_)));
            // A wrapper dict of tensors beside a few loose scalars (nanoGPT's `best_val_loss`
            // tensor next to `model`) is still a wrapper.
            let wrapped = WRAPPERS.iter().find(|w| {
                lookup(root, w).is_some_and(|v| matches!(v, Value::Dict(_)) && has_tensor(v))
            });
            nested = !direct || wrapped.is_some();
            if nested {
                wrapper = wrapped
                    .or_else(|| {
                        WRAPPERS
                            .iter()
                            .find(|w| lookup(root, w).is_some_and(has_tensor))
                    })
                    .map(|w| w.to_string());
            }
        }
        flatten(root, String::new(), &mut found);
        if let (true, Some(w)) = (nested, &wrapper) {
            let pre = format!("{w}.");
            found.retain(|(n, _)| n.starts_with(&pre));
        }
        // torch.compile wraps the module: its state dict keys gain `_orig_mod.`.
        for (n, _) in found.iter_mut() {
            if n.contains("_orig_mod.") {
                *n = n.replace("_orig_mod.", "");
            }
        }
        // In a nested checkpoint, optimizer/scheduler/loop state saved beside the weights
        // (Lightning) is not a weight. (A flat state dict's keys are left alone.)
        if nested {
            found.retain(|(n, _)| !NOT_WEIGHTS.contains(&n.split('.').next().unwrap_or("")));
        }
        if let Some(w) = &wrapper {
            let pre = format!("{w}.");
            for (n, _) in found.iter_mut() {
                if let Some(rest) = n.strip_prefix(&pre) {
                    *n = rest.to_string();
                }
            }
        }
        self.wrapper = wrapper;
        let found = found.into_iter().map(|(n, t)| (n, t, false)).collect();
        self.push_torch(z, found)
    }

    /// Checks each tensor's view against its storage and appends it.
    fn push_torch(&mut self, z: TorchZip, found: Vec<(String, TensorRef, bool)>) -> Result<()> {
        let file = self.torch.len();
        for (name, t, buffer) in found {
            let numel = t.numel().and_then(|n| n.checked_mul(t.dtype.size()));
            if numel.is_none() {
                return Err(ReadError::format(
                    z.path(),
                    format!("tensor {name:?}: shape {:?} overflows", t.shape),
                ));
            }
            let storage = z.storage_bytes(&t.storage_key).map(|b| b.len());
            let storage = storage.map_err(|e| {
                ReadError::format(z.path(), format!("tensor {name:?}: {}", strip_path(&e)))
            })?;
            check_extent(
                z.path(),
                &format!("tensor {name:?}"),
                storage,
                t.dtype,
                t.offset,
                &t.shape,
                &t.stride,
            )?;
            self.tensors.push(TensorInfo {
                name,
                dtype: t.dtype,
                shape: t.shape.clone(),
                buffer,
            });
            self.locs.push(Loc::Torch { file, tref: t });
        }
        self.torch.push(z);
        Ok(())
    }

    /// A torch archive's tensors under names the caller chose (an optimizer's moments): the
    /// tensors whose views do not fit their storage are left out, not refused.
    pub(crate) fn from_torch_refs(z: TorchZip, refs: Vec<(String, TensorRef)>) -> TensorFile {
        let mut tf = TensorFile::empty(z.path(), FileKind::TorchZip);
        for (name, t) in refs {
            let fits = z.storage_bytes(&t.storage_key).is_ok_and(|s| {
                let what = format!("tensor {name:?}");
                check_extent(
                    z.path(),
                    &what,
                    s.len(),
                    t.dtype,
                    t.offset,
                    &t.shape,
                    &t.stride,
                )
                .is_ok()
            });
            if !fits || tf.index.contains_key(&name) {
                continue;
            }
            tf.index.insert(name.clone(), tf.tensors.len());
            tf.tensors.push(TensorInfo {
                name,
                dtype: t.dtype,
                shape: t.shape.clone(),
                buffer: false,
            });
            tf.locs.push(Loc::Torch { file: 0, tref: t });
        }
        tf.torch.push(z);
        tf
    }

    /// A DCP checkpoint: the model's tensors (keys under `model.`, or every key when none is;
    /// optimizer keys `optim.*` are training state, not weights).
    fn open_dcp(meta: &Path) -> Result<TensorFile> {
        let all = dcp::read_metadata_shared(meta)?;
        let mut tf = TensorFile::empty(meta, FileKind::Dcp);
        let wrapped = all.iter().any(|t| t.name.starts_with("model."));
        for (i, t) in all.iter().enumerate() {
            let name = if wrapped {
                match t.name.strip_prefix("model.") {
                    Some(n) => n.to_string(),
                    None => continue,
                }
            } else if NOT_WEIGHTS.contains(&t.name.split('.').next().unwrap_or(""))
                || t.name.starts_with("optim.")
            {
                continue;
            } else {
                t.name.clone()
            };
            tf.tensors.push(TensorInfo {
                name,
                dtype: t.dtype,
                shape: t.shape.clone(),
                buffer: false,
            });
            tf.locs.push(Loc::Dcp { tensor: i });
        }
        tf.dcp = all;
        if wrapped {
            tf.wrapper = Some("model".into());
        }
        tf.build_index(meta)?;
        Ok(tf)
    }

    fn open_sharded(index: &Path) -> Result<TensorFile> {
        let (shards, weight_map, metadata) = safetensors::read_index(index)?;
        let dir = index.parent().unwrap_or(Path::new("."));
        let mut tf = TensorFile::empty(index, FileKind::Sharded);
        let mut shard_of = Vec::new();
        for shard in &shards {
            let p = dir.join(shard);
            if !p.exists() {
                return Err(ReadError::format(
                    index,
                    format!("shard {shard} listed in weight_map is missing"),
                ));
            }
            let before = tf.tensors.len();
            tf.add_file(&p)
                .map_err(|e| ReadError::format(index, format!("shard {shard}: {e}")))?;
            shard_of.extend(std::iter::repeat_n(
                shard.clone(),
                tf.tensors.len() - before,
            ));
        }
        // Keep the copy the weight_map points to; check every mapped tensor exists in its shard.
        let mut keep = vec![true; tf.tensors.len()];
        for (i, t) in tf.tensors.iter().enumerate() {
            if let Some(s) = weight_map.get(&t.name) {
                keep[i] = *s == shard_of[i];
            }
        }
        for (name, shard) in &weight_map {
            let present = tf
                .tensors
                .iter()
                .zip(&shard_of)
                .any(|(t, s)| &t.name == name && s == shard);
            if !present {
                return Err(ReadError::format(
                    index,
                    format!("tensor {name:?} is not in shard {shard}"),
                ));
            }
        }
        let mut k = keep.iter();
        tf.tensors.retain(|_| *k.next().unwrap_or(&true));
        let mut k = keep.iter();
        tf.locs.retain(|_| *k.next().unwrap_or(&true));
        tf.metadata = metadata;
        tf.kind = FileKind::Sharded;
        tf.build_index(index)?;
        Ok(tf)
    }

    fn build_index(&mut self, path: &Path) -> Result<()> {
        for (i, t) in self.tensors.iter().enumerate() {
            if self.index.insert(t.name.clone(), i).is_some() {
                return Err(ReadError::format(
                    path,
                    format!("tensor {:?} appears twice", t.name),
                ));
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// Inventory, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn get(&self, name: &str) -> Option<&TensorInfo> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    /// safetensors `__metadata__` (or the index's `metadata`); empty for torch files.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The wrapper key stripped from torch tensor names (`state_dict`, `model` …), if any.
    pub fn wrapper(&self) -> Option<&str> {
        self.wrapper.as_deref()
    }

    /// The unpickled root of a torch file (for non-tensor entries: epoch, hyper-parameters …).
    pub fn torch_root(&self) -> Option<&Value> {
        self.torch.first().map(|z| z.root())
    }

    fn loc(&self, name: &str) -> Result<(&TensorInfo, &Loc)> {
        let i = *self
            .index
            .get(name)
            .ok_or_else(|| ReadError::format(&self.path, format!("no tensor named {name:?}")))?;
        Ok((&self.tensors[i], &self.locs[i]))
    }

    /// Calls `f` with the tensor's contiguous little-endian bytes (zero-copy unless the stored
    /// view is strided).
    pub fn with_bytes<R>(&self, name: &str, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let (_, loc) = self.loc(name)?;
        match loc {
            Loc::Safe { file, range } => {
                let s = &self.safes[*file];
                let r = f(s.bytes(range));
                if range.len() >= RELEASE_BYTES {
                    torchzip::release(s.map_ref(), range.clone());
                }
                intact(&s.path, s.map_ref().damaged())?;
                Ok(r)
            }
            Loc::Torch { file, tref } => {
                let z = &self.torch[*file];
                let b = z.tensor_bytes(tref)?;
                let len = b.len();
                let r = f(b.as_ref());
                drop(b);
                if len >= RELEASE_BYTES {
                    z.release_storage(&tref.storage_key);
                }
                intact(z.path(), z.damaged())?;
                Ok(r)
            }
            Loc::Dcp { tensor } => {
                let b = dcp::assemble(&self.path, &self.dcp[*tensor])?;
                Ok(f(&b))
            }
        }
    }

    /// Calls `f` with the tensor as a [`Window`] source: its bytes where they can be had whole
    /// (as [`TensorFile::with_bytes`]), a DCP tensor's chunks read a window at a time.
    fn with_windows<R>(&self, name: &str, f: impl FnOnce(Window<'_>) -> R) -> Result<R> {
        let (_, loc) = self.loc(name)?;
        match loc {
            Loc::Dcp { tensor } => {
                let o = dcp::Opened::open(&self.path, &self.dcp[*tensor])?;
                let r = f(Window::Dcp(&o));
                o.intact()?;
                Ok(r)
            }
            _ => self.with_bytes(name, |b| f(Window::Bytes(b))),
        }
    }

    /// Fused-pass statistics of one tensor (CPU). Large contiguous tensors are streamed with
    /// positioned reads (no page faults, a few MB resident); a DCP tensor's chunks a window at a
    /// time; others are read from the map.
    pub fn stats(&self, name: &str) -> Result<TensorStats> {
        let (info, loc) = self.loc(name)?;
        let dt = info.dtype;
        #[cfg(unix)]
        if let Some((file, off, len, path)) = self.file_range(loc) {
            if len >= STREAM_MIN {
                return stats::stream_stats(file, off, len, dt).map_err(|e| ReadError::io(path, e));
            }
        }
        if let Loc::Dcp { tensor } = loc {
            return dcp::stats(&self.path, &self.dcp[*tensor]);
        }
        self.with_bytes(name, |b| tensor_stats(b, dt))
    }

    /// Where a tensor's bytes lie in a file, when they are contiguous and uncompressed.
    fn file_range(&self, loc: &Loc) -> Option<(&std::fs::File, u64, usize, &Path)> {
        match loc {
            Loc::Safe { file, range } => {
                let s = &self.safes[*file];
                Some((&s.file, range.start as u64, range.len(), &s.path))
            }
            Loc::Torch { file, tref } => {
                let z = &self.torch[*file];
                let (f, off, len) = z.contiguous_range(tref)?;
                Some((f, off, len, z.path()))
            }
            Loc::Dcp { .. } => None,
        }
    }

    /// Loads one tensor onto `device` (on CUDA: the GPU path).
    pub fn load(&self, name: &str, device: &candle_core::Device) -> Result<candle_core::Tensor> {
        let (info, _) = self.loc(name)?;
        let (dt, shape) = (info.dtype, info.shape.clone());
        self.with_bytes(name, |b| {
            candle_io::from_bytes(&self.path, b, dt, &shape, device)
        })?
    }

    /// Every element as f64; an error when there are more than `cap`.
    pub fn to_f64_vec(&self, name: &str, cap: usize) -> Result<Vec<f64>> {
        let (info, _) = self.loc(name)?;
        let dt = info.dtype;
        self.with_bytes(name, |b| bytes_to_f64_vec(&self.path, b, dt, cap))?
    }

    /// Every element of an integer or bool tensor as i64; an error for float tensors and when
    /// there are more than `cap`.
    pub fn to_i64_vec(&self, name: &str, cap: usize) -> Result<Vec<i64>> {
        let (info, _) = self.loc(name)?;
        let dt = info.dtype;
        if dt.is_float() {
            return Err(ReadError::format(
                &self.path,
                format!("tensor {name:?} is {dt}, not an integer tensor"),
            ));
        }
        self.with_bytes(name, |b| bytes_to_i64_vec(&self.path, b, dt, cap))?
    }

    /// Compares tensor `name` here with `other_name` in `other` (same element count).
    pub fn compare(&self, name: &str, other: &TensorFile, other_name: &str) -> Result<DiffStats> {
        let (ia, _) = self.loc(name)?;
        let (ib, _) = other.loc(other_name)?;
        let (da, db) = (ia.dtype, ib.dtype);
        let dcp_side = |tf: &TensorFile, n: &str| matches!(tf.loc(n), Ok((_, Loc::Dcp { .. })));
        let r = if ia.numel() == ib.numel() && (dcp_side(self, name) || dcp_side(other, other_name))
        {
            // A DCP side is read a window at a time, the other side's same elements beside it.
            let n = ia.numel();
            self.with_windows(name, |wa| {
                other.with_windows(other_name, |wb| {
                    let (mut ba, mut bb) = (Vec::new(), Vec::new());
                    let mut acc = compare::DiffAcc::new(da, db);
                    let mut s = 0;
                    while s < n {
                        let e = (s + dcp::WINDOW_ELEMS).min(n);
                        acc.feed(wa.get(s, e, da, &mut ba), da, wb.get(s, e, db, &mut bb), db);
                        s = e;
                    }
                    Some(acc.finish())
                })
            })??
        } else {
            self.with_bytes(name, |a| {
                other.with_bytes(other_name, |b| diff_stats(a, da, b, db))
            })??
        };
        r.ok_or_else(|| {
            ReadError::format(
                &other.path,
                format!(
                    "tensor {other_name:?} has {} elements, {name:?} has {}",
                    ib.numel(),
                    ia.numel()
                ),
            )
        })
    }
}

/// A tensor read a window of elements at a time (see [`TensorFile::with_windows`]).
enum Window<'a> {
    Bytes(&'a [u8]),
    Dcp(&'a dcp::Opened<'a>),
}

impl Window<'_> {
    /// Elements `s..e` as bytes of `dt`: a slice of the whole, or filled into `buf`.
    fn get<'b>(&'b self, s: usize, e: usize, dt: DType, buf: &'b mut Vec<u8>) -> &'b [u8] {
        let es = dt.size();
        match self {
            Window::Bytes(b) => b.get(s * es..e * es).unwrap_or(&[]),
            Window::Dcp(o) => {
                buf.resize((e - s) * es, 0);
                o.fill(s, e, buf);
                buf
            }
        }
    }
}

/// The error for a file that was truncated while its map was being read (see `mapguard`).
pub(crate) fn intact(path: &Path, damaged: bool) -> Result<()> {
    if damaged {
        return Err(ReadError::format(
            path,
            "the file shrank while it was being read (truncated or rewritten); its numbers were discarded",
        ));
    }
    Ok(())
}

fn strip_path(e: &ReadError) -> String {
    let s = e.to_string();
    let p = format!("{}: ", e.path().display());
    s.strip_prefix(&p).map(str::to_string).unwrap_or(s)
}

fn has_tensor(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Tensor(_) => return true,
            Value::Dict(d) => stack.extend(d.iter().map(|(_, x)| x)),
            Value::List(l) | Value::Tuple(l) => stack.extend(l.iter()),
            _ => {}
        }
    }
    false
}

/// Flattens nested dicts (and lists) into dotted names; opaque objects contribute their state.
fn flatten(v: &Value, prefix: String, out: &mut Vec<(String, TensorRef)>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    // Only values that may hold a tensor are named (a config of a million scalars costs no
    // names).
    let may_hold = |x: &Value| {
        matches!(
            x,
            Value::Tensor(_)
                | Value::Dict(_)
                | Value::List(_)
                | Value::Tuple(_)
                | Value::Object { state: Some(_), .. }
        )
    };
    match v {
        Value::Tensor(t) => out.push((prefix, t.clone())),
        Value::Dict(d) => {
            for (k, x) in d {
                if !may_hold(x) {
                    continue;
                }
                if let Some(k) = k.key_string() {
                    flatten(x, join(&k), out);
                }
            }
        }
        Value::List(l) | Value::Tuple(l) => {
            for (i, x) in l.iter().enumerate() {
                if may_hold(x) {
                    flatten(x, join(&i.to_string()), out);
                }
            }
        }
        Value::Object { state: Some(s), .. } => flatten(s, prefix, out),
        _ => {}
    }
}

/// Checks that a view (offset, shape, stride in elements) stays inside a storage of
/// `storage_len` bytes; returns the element count.
fn check_extent(
    path: &Path,
    what: &str,
    storage_len: usize,
    dt: DType,
    offset: u64,
    shape: &[usize],
    stride: &[usize],
) -> Result<usize> {
    let bad = |m: String| ReadError::format(path, format!("{what}: {m}"));
    if shape.len() != stride.len() {
        return Err(bad(format!(
            "shape {shape:?} and stride {stride:?} differ in rank"
        )));
    }
    let numel = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
    if numel == 0 {
        return Ok(0);
    }
    let mut last = offset as u128;
    for (&d, &s) in shape.iter().zip(stride) {
        last += (d as u128 - 1) * s as u128;
    }
    let need = (last + 1) * dt.size() as u128;
    if need > storage_len as u128 {
        return Err(bad(format!("view (offset {offset}, shape {shape:?}, stride {stride:?}) of {dt} needs {need} bytes; storage has {storage_len}")));
    }
    Ok(numel)
}

/// Largest gathered copy of a strided view that may exceed its storage (broadcast views).
const MAX_GATHER: usize = 1 << 30;

/// The contiguous bytes of a view into `storage`: a slice when contiguous, else a gathered copy.
pub(crate) fn contiguous_view<'a>(
    path: &Path,
    what: &str,
    storage: &'a [u8],
    dt: DType,
    offset: u64,
    shape: &[usize],
    stride: &[usize],
) -> Result<TensorBytes<'a>> {
    let numel = check_extent(path, what, storage.len(), dt, offset, shape, stride)?;
    if numel == 0 {
        return Ok(Cow::Borrowed(&[]));
    }
    let es = dt.size();
    let start = offset as usize * es;
    let contiguous = {
        let mut expect = 1usize;
        let mut ok = true;
        for (&d, &s) in shape.iter().zip(stride).rev() {
            if d != 1 && s != expect {
                ok = false;
                break;
            }
            expect = expect.saturating_mul(d);
        }
        ok
    };
    if contiguous {
        return Ok(Cow::Borrowed(&storage[start..start + numel * es]));
    }
    let total = numel * es;
    if total > storage.len() && total > MAX_GATHER {
        return Err(ReadError::format(
            path,
            format!("{what}: strided view of {total} bytes is larger than its storage"),
        ));
    }
    let mut out = Vec::with_capacity(total);
    let rank = shape.len();
    let (inner_n, inner_s) = (shape[rank - 1], stride[rank - 1]);
    let mut idx = vec![0usize; rank - 1];
    loop {
        let base = offset as usize + idx.iter().zip(stride).map(|(&i, &s)| i * s).sum::<usize>();
        if inner_s == 1 {
            out.extend_from_slice(&storage[base * es..(base + inner_n) * es]);
        } else {
            for j in 0..inner_n {
                let p = (base + j * inner_s) * es;
                out.extend_from_slice(&storage[p..p + es]);
            }
        }
        // odometer over the outer dims
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return Ok(Cow::Owned(out));
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

pub(crate) fn bytes_to_f64_vec(path: &Path, b: &[u8], dt: DType, cap: usize) -> Result<Vec<f64>> {
    let n = b.len() / dt.size();
    if n > cap {
        return Err(ReadError::format(
            path,
            format!("tensor has {n} elements, more than the {cap} asked for"),
        ));
    }
    let mut out = vec![0f64; n];
    let mut done = 0;
    while done < n {
        let k = stats::decode_f64(&b[done * dt.size()..], dt, &mut out[done..]);
        if k == 0 {
            break;
        }
        done += k;
    }
    Ok(out)
}

pub(crate) fn bytes_to_i64_vec(path: &Path, b: &[u8], dt: DType, cap: usize) -> Result<Vec<i64>> {
    let n = b.len() / dt.size();
    if n > cap {
        return Err(ReadError::format(
            path,
            format!("tensor has {n} elements, more than the {cap} asked for"),
        ));
    }
    let es = dt.size();
    let mut out = Vec::with_capacity(n);
    for c in b.chunks_exact(es) {
        let mut a = [0u8; 8];
        a[..es].copy_from_slice(c);
        let v = match dt {
            DType::I64 => i64::from_le_bytes(a),
            DType::U64 => {
                let u = u64::from_le_bytes(a);
                i64::try_from(u).map_err(|_| {
                    ReadError::format(path, format!("value {u} does not fit in i64"))
                })?
            }
            DType::I32 => i32::from_le_bytes([a[0], a[1], a[2], a[3]]) as i64,
            DType::U32 => u32::from_le_bytes([a[0], a[1], a[2], a[3]]) as i64,
            DType::I16 => i16::from_le_bytes([a[0], a[1]]) as i64,
            DType::U16 => u16::from_le_bytes([a[0], a[1]]) as i64,
            DType::I8 => a[0] as i8 as i64,
            DType::U8 | DType::Bool => a[0] as i64,
            _ => {
                return Err(ReadError::format(
                    path,
                    format!("{dt} is not an integer type"),
                ))
            }
        };
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_view_is_gathered_and_bounds_checked() {
        // storage 0..12 as f32, view: transpose of a 3x4 → shape [4, 3] stride [1, 4]
        let st: Vec<u8> = (0..12).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let p = Path::new("x.pt");
        let b = contiguous_view(p, "t", &st, DType::F32, 0, &[4, 3], &[1, 4]).unwrap();
        let v: Vec<f32> = b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(v, vec![0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]);
        assert!(matches!(
            contiguous_view(p, "t", &st, DType::F32, 2, &[10], &[1]).unwrap(),
            Cow::Borrowed(_)
        ));
        let e = contiguous_view(p, "t", &st, DType::F32, 3, &[10], &[1]).unwrap_err();
        assert!(e.to_string().starts_with("x.pt: t: view"), "{e}");
        let e = contiguous_view(p, "t", &st, DType::F32, 0, &[usize::MAX, 4], &[0, 1]).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        // A broadcast view (stride 0) far larger than its storage is refused, not allocated.
        let e = contiguous_view(p, "t", &st, DType::F32, 0, &[1 << 40], &[0]).unwrap_err();
        assert!(e.to_string().contains("larger than its storage"), "{e}");
        assert!(
            contiguous_view(p, "t", &st, DType::F32, 0, &[0, 5], &[5, 1])
                .unwrap()
                .is_empty()
        );
    }
}
