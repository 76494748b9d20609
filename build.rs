//! Embeds every YAML file under `playbook/` into the binary (the default playbook), each with
//! a packed rendering of the same document prepared here (`src/catalog/packed.rs`: tagged
//! values, lengths up front), so start-up copies values out instead of parsing YAML or JSON.
//! A file whose packed rendering cannot be made (or that the typed read refuses at run time)
//! is parsed from its YAML as before; a test in `src/catalog/load.rs` holds every shipped file
//! to the packed path and to the same result.
//! Beside each packed rendering: the line of every entry, probe and tree id in the YAML (found by
//! the same code the run-time YAML path uses, `src/catalog/id_lines.rs`), so start-up never
//! scans the YAML text.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "src/catalog/id_lines.rs"]
mod id_lines;

fn collect(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut items: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    items.sort();
    for p in items {
        if p.is_dir() {
            collect(&p, base, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            let rel = p
                .strip_prefix(base)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, p));
        }
    }
}

/// The document in the packed form `src/catalog/packed.rs` reads, or empty when it has no
/// faithful packed form (a non-string key, a tag, a parse error: the run-time YAML parse
/// reports those with their line).
fn to_packed(text: &str) -> Vec<u8> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let Ok(v) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return Vec::new();
    };
    let (mut strs, mut body) = (Vec::new(), Vec::new());
    if pack(&v, &mut strs, &mut body).is_none() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(4 + strs.len() + body.len());
    out.extend(
        u32::try_from(strs.len())
            .expect("playbook file under 4 GiB")
            .to_le_bytes(),
    );
    out.extend(strs);
    out.extend(body);
    out
}

// The packed form's tags (`src/catalog/packed.rs` documents the format).
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const U64: u8 = 3;
const I64: u8 = 4;
const F64: u8 = 5;
const STR: u8 = 6;
const SEQ: u8 = 7;
const MAP: u8 = 8;

/// One value into `out`, its strings' bytes onto the string table `strs`: numbers as the YAML
/// reader hands them over (unsigned, else signed, else float). `None` for a tag or a key that
/// is not a string (no faithful packed form).
fn pack(v: &serde_yaml_ng::Value, strs: &mut Vec<u8>, out: &mut Vec<u8>) -> Option<()> {
    use serde_yaml_ng::Value;
    let len = |n: usize, out: &mut Vec<u8>| {
        out.extend(
            u32::try_from(n)
                .expect("playbook value under 4 GiB")
                .to_le_bytes(),
        )
    };
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(U64);
                out.extend(u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                out.push(I64);
                out.extend(i.to_le_bytes());
            } else {
                out.push(F64);
                out.extend(n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(STR);
            len(s.len(), out);
            strs.extend(s.as_bytes());
        }
        Value::Sequence(items) => {
            out.push(SEQ);
            len(items.len(), out);
            for x in items {
                pack(x, strs, out)?;
            }
        }
        Value::Mapping(m) => {
            out.push(MAP);
            len(m.len(), out);
            for (k, x) in m {
                if !k.is_string() {
                    return None;
                }
                pack(k, strs, out)?;
                pack(x, strs, out)?;
            }
        }
        Value::Tagged(_) => return None,
    }
    Some(())
}

/// The id of each definition under `key` (a list of mappings), or `None` when one has no
/// string id (the run-time read refuses or scans those; no table is prepared).
fn ids_of<'v>(doc: &'v serde_yaml_ng::Value, key: &str) -> Option<Vec<&'v str>> {
    match doc.get(key) {
        None | Some(serde_yaml_ng::Value::Null) => Some(Vec::new()),
        Some(serde_yaml_ng::Value::Sequence(items)) => items
            .iter()
            .map(|it| it.get("id").and_then(|v| v.as_str()))
            .collect(),
        Some(_) => None,
    }
}

/// A Rust expression for the file's definition lines (`ShippedLines`, see load.rs): each
/// entry, probe and tree id with its line; `None` where the packed rendering is not used.
fn lines_src(text: &str, packed: &[u8]) -> String {
    if packed.is_empty() {
        return "None".into();
    }
    let Ok(doc) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return "None".into();
    };
    let (Some(entries), Some(probes)) = (ids_of(&doc, "entries"), ids_of(&doc, "probes")) else {
        return "None".into();
    };
    let tree = match doc.get("tree") {
        None | Some(serde_yaml_ng::Value::Null) => None,
        Some(t) => match t.get("id").and_then(|v| v.as_str()) {
            Some(id) => Some(id),
            None => return "None".into(),
        },
    };
    let lines = id_lines::def_lines(text, entries.iter().copied(), probes.iter().copied(), tree);
    let list = |ids: &[&str], lines: &[usize]| {
        let mut s = String::from("&[");
        for (id, line) in ids.iter().zip(lines) {
            let _ = write!(s, "({id:?}, {line}),");
        }
        s.push(']');
        s
    };
    let tree = match (tree, lines.tree) {
        (Some(id), Some(line)) => format!("Some(({id:?}, {line}))"),
        _ => "None".into(),
    };
    format!(
        "Some(ShippedLines {{ entries: {}, probes: {}, tree: {tree} }})",
        list(&entries, &lines.entries),
        list(&probes, &lines.probes)
    )
}

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = root.join("playbook");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=playbook");
    println!("cargo:rerun-if-changed=src/catalog/id_lines.rs");
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    let mut src = String::from("/// (path relative to playbook/, content) of every embedded playbook file.\npub static EMBEDDED: &[(&str, &str)] = &[\n");
    let mut packed_src = String::from("/// The same files packed (`catalog::packed`), in the same order (empty where the YAML is parsed instead).\nstatic EMBEDDED_PACKED: &[&[u8]] = &[\n");
    let mut lines_out = String::from("/// Each file's definition lines, in the same order (`None` where the YAML is parsed).\nstatic EMBEDDED_LINES: &[Option<ShippedLines>] = &[\n");
    for (i, (rel, abs)) in files.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", abs.display());
        let _ = writeln!(
            src,
            "    ({rel:?}, include_str!({:?})),",
            abs.display().to_string()
        );
        let text = std::fs::read_to_string(abs).unwrap_or_default();
        let packed_name = format!("playbook_{i}.bin");
        let packed = to_packed(&text);
        let _ = writeln!(lines_out, "    {},", lines_src(&text, &packed));
        std::fs::write(out_dir.join(&packed_name), packed).expect("write packed playbook");
        let _ = writeln!(
            packed_src,
            "    include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{packed_name}\")),"
        );
    }
    src.push_str("];\n");
    packed_src.push_str("];\n");
    lines_out.push_str("];\n");
    src.push_str(&packed_src);
    src.push_str(&lines_out);
    std::fs::write(out_dir.join("embedded_playbook.rs"), src).expect("write embedded_playbook.rs");
}
