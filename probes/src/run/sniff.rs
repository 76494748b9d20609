//! Text files whose names say nothing, classified by their first bytes: JSON lines of metrics
//! (DETR's `log.txt`, a loop's `history.txt`), a CSV whose columns are training signals (Keras's `training.log`), a
//! run config in YAML. Only files with a text-like extension (or none) are opened, and only
//! their first 8 KiB are read.

use std::path::Path;

use super::ArtifactKind;

const HEAD: u64 = 8 << 10;

/// The kind a text file's content says it is, when its name did not.
pub(super) fn text_kind(path: &Path, name: &str) -> Option<ArtifactKind> {
    let n = name.to_ascii_lowercase();
    let ext = n.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if !matches!(
        ext,
        "" | "txt" | "log" | "out" | "json" | "yaml" | "yml" | "csv" | "dat"
    ) {
        return None;
    }
    let head = crate::limits::read_head(path, HEAD).ok()?;
    // A multi-byte character cut at the end of the head is not a reason to refuse the file.
    let valid = match std::str::from_utf8(&head) {
        Ok(_) => head.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => return None,
    };
    let text = std::str::from_utf8(head.get(..valid)?).ok()?;
    if json_lines_of_metrics(text) {
        return Some(ArtifactKind::Jsonl);
    }
    if csv_of_metrics(text) {
        return Some(ArtifactKind::Csv);
    }
    if matches!(ext, "yaml" | "yml") && run_config(text) {
        return Some(ArtifactKind::HParams);
    }
    None
}

/// The first complete lines are JSON objects with numbers, one of which means a training
/// signal by the metric vocabulary (a loss, a learning rate, a reward).
fn json_lines_of_metrics(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return false;
    };
    if !first.starts_with('{') {
        return false;
    }
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice::<serde_json::Value>(
        &crate::pyjson::sanitize_py_json(first.as_bytes()),
    ) else {
        return false;
    };
    obj.iter().any(|(k, v)| {
        (v.is_number() || v.is_string() && v.as_str().is_some_and(|s| s.parse::<f64>().is_ok()))
            && signal(&crate::metrics::canonical_name(k))
    })
}

/// The first line is a comma-separated header naming a training signal (Keras's
/// `CSVLogger("training.log")`: `epoch,accuracy,loss,val_accuracy,val_loss`), and the line after
/// it is a row of as many cells, each a number or empty. A CSV reader then takes it whatever its
/// name says.
fn csv_of_metrics(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let (Some(header), Some(row)) = (lines.next(), lines.next()) else {
        return false;
    };
    let names: Vec<&str> = header
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    names.len() >= 2
        && cells.len() == names.len()
        && cells
            .iter()
            .all(|c| c.is_empty() || c.parse::<f64>().is_ok())
        && names
            .iter()
            .any(|n| signal(&crate::metrics::canonical_name(n)))
}

/// A meaning a training log carries.
fn signal(meaning: &str) -> bool {
    let m = meaning.strip_prefix("eval_").unwrap_or(meaning);
    m == "loss" || m.starts_with("loss/") || m.starts_with("learning_rate") || m == "reward"
}

/// A YAML file of top-level `key: value` lines naming training hyperparameters.
fn run_config(text: &str) -> bool {
    const KEYS: &[&str] = &[
        "lr",
        "lr0",
        "learning_rate",
        "epochs",
        "max_epochs",
        "batch",
        "batch_size",
        "optimizer",
        "opt",
        "weight_decay",
        "momentum",
    ];
    let hits = text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '-', '#']))
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| KEYS.contains(&k.trim()))
        .count();
    hits >= 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_files_are_classified_by_their_content() {
        let d = tempfile::tempdir().unwrap();
        let w = |n: &str, t: &str| {
            let p = d.path().join(n);
            std::fs::write(&p, t).unwrap();
            text_kind(&p, n)
        };
        assert_eq!(
            w(
                "log.txt",
                "{\"train_loss\": 1.2, \"train_lr\": 0.0001, \"epoch\": 0}\n"
            ),
            Some(ArtifactKind::Jsonl)
        );
        assert_eq!(w("notes.txt", "{\"name\": \"x\", \"count\": 3}\n"), None);
        // Keras's CSVLogger writes where it is told, CRLF line ends.
        assert_eq!(
            w(
                "training.log",
                "epoch,accuracy,loss,val_accuracy,val_loss\r\n0,0.68,1.117,0.818,0.61\r\n"
            ),
            Some(ArtifactKind::Csv)
        );
        // A table of other things, or a log line that happens to hold commas, is not.
        assert_eq!(w("sizes.log", "name,bytes\nmodel,1200\n"), None);
        assert_eq!(w("train.log", "loss,lr\nepoch 1: loss 2.3, lr 0.1\n"), None);
        assert_eq!(w("readme.txt", "hello\n"), None);
        assert_eq!(
            w("cfg.yaml", "lr0: 0.01\nepochs: 3\nbatch: 16\nname: x\n"),
            Some(ArtifactKind::HParams)
        );
        assert_eq!(w("data.yaml", "path: x\nnc: 3\nnames: [a, b, c]\n"), None);
        assert_eq!(w("model.bin", "{\"loss\": 1}\n"), None);
    }
}
