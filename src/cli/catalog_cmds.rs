//! Catalog commands: `search`, `show`, `list`, `lint` — plain text (coloured on a terminal)
//! or the JSON shapes of DESIGN.md §4.4.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::style::{wrap, Style};
use super::{ExitCode, UsageError};
use crate::catalog::lint::{lint as lint_catalog, LintOptions, Severity};
use crate::catalog::{Catalog, Domain, Entry};
use crate::search::SearchIndex;

/// Write to stdout, control characters escaped ([`terminal_safe`](super::style::terminal_safe)):
/// a closed pipe (`mltriage list | head`) ends quietly; another write error is one line, exit 2.
pub fn emit(s: &str) {
    let s = super::style::terminal_safe(s);
    write_out(&super::style::ascii_if_asked(&s));
}

/// Write already-safe text to stdout (JSON keeps its characters under `--ascii`).
fn write_out(s: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("mltriage: writing to standard output: {e}");
        std::process::exit(2);
    }
}

pub fn emit_json(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into()) + "\n";
    write_out(&super::style::terminal_safe(&text));
}

fn parse_domain(d: Option<&str>) -> anyhow::Result<Option<Domain>> {
    d.map(|s| {
        s.parse::<Domain>()
            .map_err(|e| UsageError(format!("--domain: {e}")).into())
    })
    .transpose()
}

/// `search --run RUN`: the run to check before ranking, with its facts and device.
pub struct OnRun<'a> {
    pub run: &'a Path,
    pub facts: &'a [String],
    pub device: &'a str,
    pub quiet: bool,
}

/// The run's verdict per entry (`check` on the run, every probe).
fn run_verdicts(
    cat: &Catalog,
    on: &OnRun,
) -> anyhow::Result<std::collections::HashMap<String, mltriage_probes::probe::Status>> {
    use super::run_cmds::{compute, open_run, parse_facts};
    let facts = parse_facts(on.facts)?;
    let compute = compute(on.device)?;
    let run = open_run(on.run)?;
    let report = {
        let _line = super::progress::ProgressLine::start(super::progress::wanted(false, on.quiet));
        crate::triage::check::check(cat, &run, &facts, &compute, None)
    };
    Ok(crate::app::run_verdicts(&report.findings))
}

pub fn search(
    cat: &Catalog,
    query: &str,
    limit: usize,
    domain: Option<&str>,
    json: bool,
    on_run: Option<OnRun>,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    use mltriage_probes::probe::Status;
    let domain = parse_domain(domain)?;
    let verdicts = on_run
        .as_ref()
        .map(|on| run_verdicts(cat, on))
        .transpose()?;
    let index = SearchIndex::build(cat)?;
    let (hits, confidence) = if limit == 0 {
        (Vec::new(), None)
    } else {
        // With a run, look further down the list for entries it fails or warns on.
        let want = match &verdicts {
            Some(_) => limit.max(crate::app::PROMOTE_WITHIN),
            None => limit,
        };
        let mut r = index.search_ranked(query, want, domain)?;
        if let Some(v) = &verdicts {
            crate::app::promote_by_run(&mut r.hits, |h| h.id.as_str(), |h| h.score, v);
        }
        r.hits.truncate(limit);
        (r.hits, Some(r.confidence))
    };
    // The index is not used again and the process ends after printing: freeing its thousands
    // of allocations one by one costs about 1 ms (a twentieth of the command's CPU time) that
    // the OS saves by reclaiming the memory at exit.
    std::mem::forget(index);
    let verdict = |id: &str| verdicts.as_ref().and_then(|v| v.get(id).copied());
    let confident = confidence.as_ref().is_some_and(|c| c.confident);
    if json {
        let hits: Vec<_> = hits
            .iter()
            .filter_map(|h| {
                let e = cat.entry(&h.id)?;
                let mut v = json!({"id": e.id, "title": e.title, "domain": e.domain,
                    "score": h.score, "snippet": h.snippet.text,
                    "highlights": h.snippet.highlights});
                if verdicts.is_some() {
                    // The run's verdict for the entry: fail | warn | pass, or null (unjudged).
                    v["run_status"] = json!(verdict(&h.id));
                }
                Some(v)
            })
            .collect();
        let mut v = json!({"query": query, "hits": hits, "confident": confident});
        if let Some(on) = &on_run {
            v["run"] = json!(crate::triage::check::display(on.run));
        }
        if let Some(c) = &confidence {
            v["confidence"] =
                json!({"coverage": c.coverage, "reason": c.reason, "margin": c.margin});
            if let Some(topic) = &c.outside {
                v["confidence"]["outside"] = json!(topic);
            }
        }
        if !confident {
            v["note"] = json!(NO_MATCH_NOTE);
        }
        emit_json(&v);
        return Ok(0);
    }
    if hits.is_empty() {
        let shown: String = query.chars().take(60).collect();
        let more = if shown.len() < query.len() { "…" } else { "" };
        emit(&format!(
            "no entries match {shown:?}{more}; try other words, or `mltriage list`\n"
        ));
        return Ok(0);
    }
    let (o, c) = st.hl();
    let mut s = String::new();
    if !confident {
        let shown: String = query.chars().take(60).collect();
        let more = if shown.len() < query.len() { "…" } else { "" };
        s.push_str(&format!(
            "{}\n",
            st.bold(&format!("No confident match for {shown:?}{more}."))
        ));
        if let Some(topic) = confidence.as_ref().and_then(|c| c.outside.as_ref()) {
            s.push_str(&format!(
                "This looks like a problem with {topic}, which the catalog leaves out: it \
                 covers what goes wrong inside a training run.\n"
            ));
        }
        match confidence.as_ref().map(|c| c.reason) {
            Some("vague report") => s.push_str(
                "It says that something failed, not what: search the error message itself, or \
                 what the loss, a metric or the output does.\n",
            ),
            Some("no problem stated") => s.push_str(
                "It names a topic, not a problem: say what goes wrong (the error message, or \
                 what the loss, a metric or the output does).\n",
            ),
            Some("usage question") => s.push_str(
                "It reads as a question about how to do something, not a report of a run going \
                 wrong.\n",
            ),
            _ => {}
        }
        s.push_str(&format!(
            "{}\n\n",
            st.dim("Closest entries (not a confident match):")
        ));
    }
    if let Some(on) = &on_run {
        s.push_str(&st.dim(&format!(
            "On {}: ✗ fails · ! warns · ✓ passes (failing and warning entries first)\n\n",
            crate::triage::check::display(on.run)
        )));
    }
    for h in &hits {
        let Some(e) = cat.entry(&h.id) else { continue };
        if verdicts.is_some() {
            s.push_str(&match verdict(&h.id) {
                Some(Status::Fail) => st.red("✗ "),
                Some(Status::Warn) => st.yellow("! "),
                Some(Status::Pass) => st.green("✓ "),
                _ => "  ".to_string(),
            });
        }
        s.push_str(&format!(
            "{:<6} {}  {}\n",
            st.bold(&e.id),
            e.title,
            st.dim(&format!("[{}]", e.domain))
        ));
        if !h.snippet.text.is_empty() {
            let indent = if verdicts.is_some() {
                "         "
            } else {
                "       "
            };
            s.push_str(&wrap(&h.snippet.render(o, c), st.width, indent));
        }
    }
    s.push_str(&st.dim("\n`mltriage show ID` for the fix.\n"));
    if !confident {
        s.push_str(&st.dim(&format!("{NO_MATCH_NOTE}\n")));
    }
    emit(&s);
    Ok(0)
}

/// What `search` suggests when nothing in the catalog fits.
pub const NO_MATCH_NOTE: &str = "Nothing in the catalog fits well: if this is a new problem, \
write an entry for it in a directory of your own and load it with `--playbook DIR` \
(`mltriage lint DIR` checks it).";

pub fn entry_json(cat: &Catalog, e: &Entry) -> serde_json::Value {
    let mut v = serde_json::to_value(e).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("file".into(), json!(e.origin.to_string()));
        let probes: Vec<_> = cat
            .probes_for_entry(&e.id)
            .map(|p| json!({"id": p.id, "question": p.question, "thresholds": p.thresholds}))
            .collect();
        obj.insert("probe_checks".into(), json!(probes));
    }
    v
}

pub fn render_entry(cat: &Catalog, e: &Entry, st: &Style) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{}  {}  {}\n\n",
        st.bold(&e.id),
        st.bold(&e.title),
        st.dim(&format!("[{}]", e.domain.label()))
    ));
    if let Some(q) = &e.question {
        s.push_str(&format!(
            "{}\n{}",
            st.cyan("Question"),
            wrap(q, st.width, "  ")
        ));
    }
    if let Some(t) = &e.threshold {
        s.push_str(&format!(
            "{}\n{}",
            st.cyan("Threshold"),
            wrap(t, st.width, "  ")
        ));
    }
    for (h, body) in [
        ("Symptom", &e.symptom),
        ("Cause", &e.cause),
        ("Fix", &e.fix),
    ] {
        s.push_str(&format!("{}\n{}", st.cyan(h), wrap(body, st.width, "  ")));
    }
    if !e.leaves.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("Branches")));
        for l in &e.leaves {
            s.push_str(&wrap(
                &format!("• if {} → {}", l.when, l.then),
                st.width,
                "  ",
            ));
        }
    }
    if !e.knobs.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("Knobs")));
        for k in &e.knobs {
            s.push_str(&format!("  • {}\n", st.yellow(k)));
        }
    }
    if !e.errors.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("Messages you may see")));
        for k in &e.errors {
            s.push_str(&format!("  • {k}\n"));
        }
    }
    if let Some(sig) = &e.signature {
        s.push_str(&format!("{}\n", st.cyan("What the run shows")));
        match &sig.none {
            Some(why) => s.push_str(&wrap(
                &format!("nothing in the artifacts: {why}"),
                st.width,
                "  ",
            )),
            None => {
                let arts: Vec<&str> = sig.artifacts.iter().map(|a| a.as_str()).collect();
                s.push_str(&wrap(
                    &format!(
                        "[{}] {}",
                        arts.join(", "),
                        sig.shows.as_deref().unwrap_or("")
                    ),
                    st.width,
                    "  ",
                ));
            }
        }
    }
    let checks: Vec<_> = cat.probes_for_entry(&e.id).collect();
    if !checks.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("Checks mltriage runs")));
        for p in checks {
            let th = p.thresholds_text();
            s.push_str(&format!(
                "  • {} — {}{}\n",
                st.bold(&p.id),
                p.question,
                if th.is_empty() {
                    String::new()
                } else {
                    st.dim(&format!(" ({})", th))
                }
            ));
        }
    }
    if !e.see_also.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("See also")));
        for id in &e.see_also {
            let t = cat.entry(id).map(|x| x.title.as_str()).unwrap_or("?");
            s.push_str(&format!("  • {} {}\n", st.bold(id), t));
        }
    }
    if let Some(src) = &e.source {
        s.push_str(&format!(
            "{}\n  {} — {}\n  {}\n",
            st.cyan("Source"),
            src.author,
            src.title,
            st.dim(&src.url)
        ));
    }
    if !e.refs.is_empty() {
        s.push_str(&format!("{}\n", st.cyan("References")));
        for r in &e.refs {
            s.push_str(&format!("  • {} {}\n", r.title, st.dim(&r.url)));
        }
    }
    s
}

/// `show TREE/NODE`: a tree node's question, how it is answered, and where each answer leads.
fn show_node(
    cat: &Catalog,
    tree: &str,
    node: &str,
    json: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    let t = cat
        .tree(tree)
        .ok_or_else(|| UsageError(format!("show {tree}/{node}: no such tree")))?;
    let n =
        t.nodes.iter().find(|n| n.id == node).ok_or_else(|| {
            UsageError(format!("show {tree}/{node}: no such node in tree {}", t.id))
        })?;
    let probe = n.probe.as_deref().and_then(|p| cat.probe(p));
    let question = n
        .question
        .clone()
        .or_else(|| {
            n.entry
                .as_deref()
                .and_then(|e| cat.entry(e))
                .map(|e| e.question.clone().unwrap_or_else(|| e.title.clone()))
        })
        .unwrap_or_default();
    if json {
        emit_json(&json!({"tree": t.id, "node": n, "question": question, "probe": probe}));
        return Ok(0);
    }
    let mut s = format!(
        "{} {}/{}  {}\n",
        st.bold("node"),
        t.id,
        n.id,
        st.dim(&format!("[{:?}]", n.kind).to_lowercase())
    );
    if !question.is_empty() {
        s.push_str(&wrap(&question, st.width, "  "));
    }
    if let Some(e) = n.entry.as_deref().and_then(|e| cat.entry(e)) {
        s.push_str(&format!("  entry: {} {}\n", st.bold(&e.id), e.title));
    }
    if let Some(p) = probe {
        s.push_str(&format!(
            "  probe: {} ({})\n",
            st.bold(&p.id),
            p.thresholds_text()
        ));
    }
    if let Some(f) = &n.fact {
        s.push_str(&format!("  fact: {f}\n"));
    }
    for (label, next) in &n.branches {
        s.push_str(&format!("  {label} → {next}\n"));
    }
    for (i, o) in n.options.iter().enumerate() {
        s.push_str(&format!("  {}. {} → {}\n", i + 1, o.label, o.next));
    }
    if let Some(note) = &n.note {
        s.push_str(&wrap(note, st.width, "  "));
    }
    emit(&s);
    Ok(0)
}

pub fn show(cat: &Catalog, id: &str, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    if let Some((tree, node)) = id.trim().split_once('/') {
        return show_node(cat, tree, node, json, st);
    }
    let Some(e) = cat.entry(id.trim()) else {
        let index = SearchIndex::build(cat)?;
        let near: Vec<String> = index.quick_filter(id, 3).into_iter().map(|x| x.0).collect();
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", near.join(", "))
        };
        return Err(UsageError(format!("show {id:?}: no such entry{hint}")).into());
    };
    if json {
        emit_json(&entry_json(cat, e));
    } else {
        emit(&render_entry(cat, e, st));
    }
    Ok(0)
}

pub fn list(
    cat: &Catalog,
    domain: Option<&str>,
    json: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    let domain = parse_domain(domain)?;
    let entries: Vec<&Entry> = cat
        .entries
        .iter()
        .filter(|e| domain.is_none_or(|d| e.domain == d))
        .collect();
    if json {
        let v: Vec<_> = entries
            .iter()
            .map(|e| json!({"id": e.id, "title": e.title, "domain": e.domain}))
            .collect();
        emit_json(&json!({"entries": v}));
        return Ok(0);
    }
    let mut s = String::new();
    for d in Domain::ALL {
        let of: Vec<&&Entry> = entries.iter().filter(|e| e.domain == d).collect();
        if of.is_empty() {
            continue;
        }
        s.push_str(&format!("{}\n", st.cyan(d.label())));
        for e in of {
            s.push_str(&format!("  {:<6} {}\n", st.bold(&e.id), e.title));
        }
    }
    emit(&s);
    Ok(0)
}

pub fn lint(dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let implemented = mltriage_probes::probes::all();
    let (cat, complete) = match dir {
        None => (
            Catalog::embedded().map_err(|e| UsageError(e.to_string()))?,
            true,
        ),
        // The overlay as `--playbook DIR` loads it: on top of the embedded playbook.
        Some(d) => (
            Catalog::load_merged(Some(d)).map_err(|e| UsageError(e.to_string()))?,
            false,
        ),
    };
    let problems = lint_catalog(
        &cat,
        &LintOptions {
            implemented,
            complete,
        },
    );
    let errors = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    let mut err = std::io::stderr().lock();
    for p in &problems {
        let _ = writeln!(err, "{}", super::style::escape_controls(&p.to_string()));
    }
    let warnings = problems.len() - errors;
    emit(&format!(
        "{} entries, {} probes, {} trees: {errors} error(s), {warnings} warning(s)\n",
        cat.entries.len(),
        cat.probes.len(),
        cat.trees.len()
    ));
    Ok(if errors > 0 { 2 } else { 0 })
}
