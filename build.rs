//! Embeds every YAML file under `playbook/` into the binary (the default playbook), each with
//! a JSON rendering of the same document prepared here, so start-up deserialises JSON (several
//! times faster than YAML) instead of parsing YAML. A file whose JSON rendering cannot be made
//! (or that the typed JSON read refuses at run time) is parsed from its YAML as before; a test
//! in `src/catalog/load.rs` holds every shipped file to the JSON path and to the same result.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

/// The document as JSON, or "" when it has no faithful JSON form (a non-string key, a tag,
/// a parse error: the run-time YAML parse reports those with their line).
fn to_json(text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    let Ok(v) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) else {
        return String::new();
    };
    if has_tag_or_odd_key(&v) {
        return String::new();
    }
    serde_json::to_string(&v).unwrap_or_default()
}

fn has_tag_or_odd_key(v: &serde_yaml_ng::Value) -> bool {
    use serde_yaml_ng::Value;
    match v {
        Value::Tagged(_) => true,
        Value::Sequence(s) => s.iter().any(has_tag_or_odd_key),
        Value::Mapping(m) => m
            .iter()
            .any(|(k, v)| !matches!(k, Value::String(_)) || has_tag_or_odd_key(v)),
        _ => false,
    }
}

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = root.join("playbook");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=playbook");
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    let mut src = String::from("/// (path relative to playbook/, content) of every embedded playbook file.\npub static EMBEDDED: &[(&str, &str)] = &[\n");
    let mut json_src = String::from("/// The same files as JSON, in the same order (\"\" where the YAML is parsed instead).\npub static EMBEDDED_JSON: &[&str] = &[\n");
    for (i, (rel, abs)) in files.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", abs.display());
        let _ = writeln!(
            src,
            "    ({rel:?}, include_str!({:?})),",
            abs.display().to_string()
        );
        let text = std::fs::read_to_string(abs).unwrap_or_default();
        let json_name = format!("playbook_{i}.json");
        std::fs::write(out_dir.join(&json_name), to_json(&text)).expect("write playbook json");
        let _ = writeln!(
            json_src,
            "    include_str!(concat!(env!(\"OUT_DIR\"), \"/{json_name}\")),"
        );
    }
    src.push_str("];\n");
    json_src.push_str("];\n");
    src.push_str(&json_src);
    std::fs::write(out_dir.join("embedded_playbook.rs"), src).expect("write embedded_playbook.rs");
}
