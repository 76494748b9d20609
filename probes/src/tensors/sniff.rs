//! What a weight-like file is from its content, not its name: a torch zip (`*/data.pkl` member)
//! under any extension, a Stable-Baselines3 model zip, a Keras v3 `.keras` zip, an HDF5 file, a
//! legacy (pre-1.6) torch pickle, an SB3 VecNormalize pickle. Reads the first 4 KiB and, for a
//! zip, only its central directory (member names; nothing is decompressed).

use std::path::Path;

use super::torchzip::{map_file, read_directory};

/// What the content says a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// A `torch.save` zip archive.
    TorchZip,
    /// A Stable-Baselines3 model archive (`policy.pth` + `data`).
    Sb3Zip,
    /// A Keras v3 `.keras` archive (`model.weights.h5` + `config.json`).
    KerasZip,
    /// An HDF5 file (Keras `.h5` weights …).
    Hdf5,
    /// A legacy (non-zip) `torch.save` pickle.
    LegacyTorch,
    /// An SB3 VecNormalize pickle.
    VecNormalize,
    /// Another pickle.
    Pickle,
    /// Another zip archive.
    Zip,
    Unknown,
}

/// The HDF5 superblock signature.
pub const HDF5_MAGIC: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
/// `torch.save`'s legacy magic number, pickled as LONG1 after PROTO 2.
const LEGACY_TORCH: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

/// Sniffs `path`; unreadable files are [`Sniffed::Unknown`] (readers report why later).
pub fn sniff(path: &Path) -> Sniffed {
    let head = match crate::limits::read_head(path, 4096) {
        Ok(h) if !h.is_empty() => h,
        _ => return Sniffed::Unknown,
    };
    if head.starts_with(b"PK\x03\x04") {
        return sniff_zip(path);
    }
    if head.starts_with(HDF5_MAGIC) || head.get(512..520) == Some(&HDF5_MAGIC[..]) {
        return Sniffed::Hdf5;
    }
    if head.starts_with(LEGACY_TORCH) {
        return Sniffed::LegacyTorch;
    }
    if head[0] == 0x80 && head.get(1).is_some_and(|p| (2..=5).contains(p)) {
        if super::vecnorm::looks_like_vecnormalize(&head) {
            return Sniffed::VecNormalize;
        }
        return Sniffed::Pickle;
    }
    Sniffed::Unknown
}

fn sniff_zip(path: &Path) -> Sniffed {
    let Ok((_f, map)) = map_file(path) else {
        return Sniffed::Unknown;
    };
    let Ok(entries) = read_directory(path, &map) else {
        return Sniffed::Unknown;
    };
    let names = || entries.keys().map(String::as_str);
    if names().any(|k| k == "data.pkl" || (k.ends_with("/data.pkl") && k.matches('/').count() == 1))
    {
        return Sniffed::TorchZip;
    }
    if super::sb3::is_sb3_members(names()) {
        return Sniffed::Sb3Zip;
    }
    if names().any(|k| k == "model.weights.h5")
        || (names().any(|k| k == "config.json") && names().any(|k| k == "metadata.json"))
    {
        return Sniffed::KerasZip;
    }
    Sniffed::Zip
}
