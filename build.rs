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
#[path = "src/catalog/pack_write.rs"]
mod pack_write;

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
    println!("cargo:rerun-if-changed=src/catalog/pack_write.rs");
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
        let packed = pack_write::to_packed(&text);
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
