//! `log_errors`: the error a captured log ends in, matched against each entry's error strings
//! (the patterns are data: one text threshold per entry id in playbook/probes.yaml). The
//! fatal error nearest the end of the log wins, because it is what stopped the run; the
//! earlier ones are listed as evidence.

use std::io::{Read, Seek, SeekFrom};

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;

pub(crate) const LOG_ERRORS: ProbeSpec = ProbeSpec {
    id: "log_errors",
    entries: &[
        "L8", "M1", "M3", "M5", "M6", "D1", "D2", "D4", "D5", "T1", "T3", "P2", "P3", "P4", "U1",
        "U2", "L10", "H1", "N1", "N2", "N3", "W1", "Q1", "V3",
    ],
    inputs: &["log"],
    // The entry keys hold each entry's error strings (data in playbook/probes.yaml).
    params: &[
        "tail_bytes",
        "min_unallocated_gib",
        "unallocated_ratio",
        "late_oom_lines",
        "warn_entries",
        "M1",
        "D1",
        "D2",
        "D4",
        "D5",
        "T1",
        "T3",
        "P2",
        "P3",
        "P4",
        "U1",
        "U2",
        "L8",
        "L10",
        "H1",
        "N1",
        "N2",
        "N3",
        "W1",
        "Q1",
        "V3",
    ],
    // The outcome is the entry whose error the log ends in (trees branch on it).
    outcomes: &[
        "pass", "L8", "M1", "M3", "M5", "M6", "D1", "D2", "D4", "D5", "T1", "T3", "P2", "P3", "P4",
        "U1", "U2", "L10", "H1", "N1", "N2", "N3", "W1", "Q1", "V3", "skip",
    ],
    run: log_errors,
};

/// One match: the entry, the pattern, the file, the 1-based line in the part read, the line.
struct Hit {
    entry: String,
    file: std::path::PathBuf,
    line_no: usize,
    line: String,
    /// Position from the end of the log (0 = last line): the nearest the end wins.
    from_end: usize,
}

pub fn log_errors(ctx: &ProbeCtx) -> Vec<Verdict> {
    let tail = p!(ctx, "M1", "tail_bytes").max(4096.0) as u64;
    let (min_unalloc, unalloc_ratio, late_lines) = (
        p!(ctx, "M1", "min_unallocated_gib"),
        p!(ctx, "M1", "unallocated_ratio"),
        p!(ctx, "M1", "late_oom_lines") as usize,
    );
    let warn_entries: Vec<String> = ctx
        .params
        .text("warn_entries")
        .map(|t| t.split(['|', ',']).map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    // Patterns: every text threshold whose key is an entry id: "pattern | pattern | …".
    let patterns: Vec<(String, Vec<String>)> = ctx
        .params
        .iter()
        .filter(|(k, _)| LOG_ERRORS.entries.contains(k))
        .filter_map(|(k, v)| match v {
            crate::probe::ParamValue::Text(t) => Some((
                k.to_string(),
                t.split('|')
                    .map(|p| p.trim().to_lowercase())
                    .filter(|p| !p.is_empty())
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    let logs: Vec<_> = ctx
        .run
        .of_kind(ArtifactKind::StdoutLog)
        .into_iter()
        .map(|a| a.path.clone())
        .collect();
    if logs.is_empty() {
        return vec![Verdict::skip(
            "M1",
            "no captured log in the run (save the job's stdout/stderr as train.log, nohup.out or slurm-*.out)",
        )];
    }
    let mut hits = Vec::new();
    let mut read = Vec::new();
    for path in &logs {
        let Ok(text) = read_tail(path, tail) else {
            continue;
        };
        read.push(path.display().to_string());
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        // Progress lines before the current one and the last evaluation frame, kept as the
        // scan goes (a re-scan per hit is quadratic in OOM lines).
        let mut progress_before = 0usize;
        let mut last_eval: Option<usize> = None;
        for (i, line) in lines.iter().enumerate() {
            let lower = line.to_lowercase();
            for (entry, pats) in &patterns {
                if pats.iter().any(|p| lower.contains(p.as_str())) {
                    let entry = if entry == "M1" {
                        let late = progress_before >= late_lines;
                        let in_eval = last_eval.is_some_and(|j| i - j <= EVAL_WINDOW);
                        refine_oom(&lines, i, min_unalloc, unalloc_ratio, in_eval, late)
                    } else {
                        entry.clone()
                    };
                    hits.push(Hit {
                        entry,
                        file: path.clone(),
                        line_no: i + 1,
                        line: line.chars().take(200).collect(),
                        from_end: n - 1 - i,
                    });
                }
            }
            progress_before += usize::from(is_progress(line));
            if EVAL_FRAMES.iter().any(|f| lower.contains(f)) {
                last_eval = Some(i);
            }
        }
    }
    if read.is_empty() {
        return vec![Verdict::skip("M1", "the run's logs could not be read")];
    }
    let Some(last) = hits.iter().min_by_key(|h| h.from_end) else {
        return vec![Verdict::new("M1", Status::Pass, "pass")
            .measured(format!("{} log(s) scanned: no known error", read.len()))
            .expected("no error string of a catalog entry")
            .message("the captured logs hold none of the catalog's error strings")];
    };
    let status = if warn_entries.contains(&last.entry) {
        Status::Warn
    } else {
        Status::Fail
    };
    let mut v = Verdict::new(&last.entry, status, &last.entry)
        .measured(format!("{}:{}: {}", last.file.display(), last.line_no, last.line.trim()))
        .expected("a log that does not end in a known error")
        .message(format!(
            "the log ends in {}'s error: the run stopped on it — see `mltriage show {}` for the fix",
            last.entry, last.entry
        ))
        .evidence(Evidence::file(&last.file).note(format!("line {} of the part read", last.line_no)));
    // Other entries' errors earlier in the log: evidence, not findings of their own.
    let mut others: Vec<&Hit> = hits.iter().filter(|h| h.entry != last.entry).collect();
    others.sort_by_key(|h| h.from_end);
    others.dedup_by(|a, b| a.entry == b.entry);
    for h in others.iter().take(3) {
        v = v.evidence(Evidence::file(&h.file).note(format!(
            "earlier: {} at line {}: {}",
            h.entry,
            h.line_no,
            h.line.trim()
        )));
    }
    vec![v.value("matches", hits.len() as f64)]
}

/// A line that reports a training step: HF's `{'loss': …}`, `loss=` / `loss:` with a number,
/// or a tqdm bar's `it/s` / `s/it`.
fn is_progress(line: &str) -> bool {
    let l = line.to_lowercase();
    l.contains("'loss': ")
        || l.contains("it/s]")
        || l.contains("s/it]")
        || ["loss=", "loss: ", "loss "].iter().any(|k| {
            l.find(k).is_some_and(|at| {
                l[at + k.len()..]
                    .trim_start()
                    .starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
            })
        })
}

/// Traceback frames of an evaluation loop.
const EVAL_FRAMES: [&str; 6] = [
    "in evaluation_loop",
    "in evaluate",
    "in prediction_step",
    "in validation_step",
    "in _run_evaluate",
    "in eval_step",
];
/// How many lines before an OOM an evaluation frame is looked for.
const EVAL_WINDOW: usize = 80;

/// An out-of-memory error, refined by what surrounds it: raised inside the evaluation loop
/// (`in_eval`: an [`EVAL_FRAMES`] line among the [`EVAL_WINDOW`] before it, M6), with far more memory reserved-but-unallocated than the request (fragmentation, M3),
/// after the run had logged many training steps (`late`: at least `late_oom_lines` progress
/// lines before it — a late OOM: the longest batch, M5 — or a leak, M2, when logged memory
/// climbs); else M1.
fn refine_oom(
    lines: &[&str],
    i: usize,
    min_unalloc_gib: f64,
    ratio: f64,
    in_eval: bool,
    late: bool,
) -> String {
    let msg: String = lines[i..(i + 4).min(lines.len())].join(" ");
    let tried = gib_after(&msg, "tried to allocate ");
    let unalloc = gib_before(&msg, " is reserved by pytorch but unallocated");
    if let (Some(t), Some(u)) = (tried, unalloc) {
        if u >= min_unalloc_gib && u >= ratio * t {
            return "M3".into();
        }
    }
    if in_eval {
        "M6".into()
    } else if late {
        "M5".into()
    } else {
        "M1".into()
    }
}

/// A size in GiB written right after `key` ("Tried to allocate 2.00 GiB").
fn gib_after(text: &str, key: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    let rest = &lower[lower.find(key)? + key.len()..];
    parse_size(
        rest.split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .as_slice(),
    )
}

/// A size in GiB written right before `key` ("10.50 GiB is reserved by PyTorch but unallocated").
fn gib_before(text: &str, key: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    let head = &lower[..lower.find(key)?];
    let words: Vec<&str> = head.split_whitespace().collect();
    let n = words.len();
    (n >= 2).then(|| parse_size(&words[n - 2..])).flatten()
}

fn parse_size(w: &[&str]) -> Option<f64> {
    let v: f64 = w
        .first()?
        .trim_matches(|c: char| !c.is_ascii_digit() && c != '.')
        .parse()
        .ok()?;
    let unit = w.get(1)?.trim_matches(|c: char| !c.is_ascii_alphabetic());
    Some(match unit {
        "gib" | "gb" => v,
        "mib" | "mb" => v / 1024.0,
        "kib" | "kb" => v / (1024.0 * 1024.0),
        "tib" | "tb" => v * 1024.0,
        _ => return None,
    })
}

/// The last `cap` bytes of a log, as text (lossy UTF-8; a first partial line is dropped).
fn read_tail(path: &std::path::Path, cap: u64) -> std::io::Result<String> {
    let mut f = crate::limits::open_regular_io(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(cap);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.take(cap).read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    Ok(if start > 0 {
        text.split_once('\n')
            .map(|x| x.1.to_string())
            .unwrap_or_default()
    } else {
        text
    })
}
