//! Run commands: `check`, `probe`, `probes` — findings as a compact table with status marks,
//! measured vs expected and the evidence, or the JSON shapes of DESIGN.md §4.4.

use std::path::Path;

use serde_json::json;

use mltriage_probes::device::{Compute, DeviceRequest};
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

use super::catalog_cmds::{emit, emit_json};
use super::progress::{self, ProgressLine};
use super::style::{escape_controls as esc, tame_numbers, wrap, wrap_hanging, Style};
use super::{ExitCode, UsageError};
use crate::catalog::Catalog;
use crate::findings::{order, Finding};
use crate::triage::check::{check, effective_facts, run_one, spec, Report};

pub fn open_run(path: &Path) -> anyhow::Result<Run> {
    // The run itself must be readable: a single file that cannot be opened (permission
    // denied, a FIFO, a device) or a folder that cannot be listed is exit 2, not a report.
    let meta =
        std::fs::metadata(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    if meta.is_dir() {
        std::fs::read_dir(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    } else {
        mltriage_probes::limits::open_regular(path).map_err(|e| UsageError(e.to_string()))?;
    }
    Run::discover(path).map_err(|e| UsageError(e.to_string()).into())
}

pub fn parse_facts(args: &[String]) -> anyhow::Result<Facts> {
    Facts::from_args(args).map_err(|e| UsageError(e.to_string()).into())
}

pub fn compute(device: &str) -> anyhow::Result<Compute> {
    let req: DeviceRequest = device
        .parse()
        .map_err(|e: mltriage_probes::device::DeviceSyntaxError| UsageError(e.to_string()))?;
    Ok(Compute::select(req))
}

pub fn mark(s: Status, st: &Style) -> String {
    match s {
        Status::Fail => st.red("FAIL"),
        Status::Warn => st.yellow("WARN"),
        Status::Pass => st.green("pass"),
        Status::Skip => st.dim("skip"),
    }
}

/// A finding's own words for the terminal: control characters escaped, numbers too large
/// to read capped ([`tame_numbers`]: `> 1e30`).
fn words(s: &str) -> String {
    tame_numbers(&esc(s)).into_owned()
}

fn render_finding(f: &Finding, st: &Style, verbose: bool) -> String {
    if let (Some(anchor), Status::Pass) = (&f.context_for, f.status) {
        // One entry, one verdict: another probe's pass on it is context, not a contradiction.
        return st.dim(&wrap(
            &format!(
                "also checked for {} [{}], fine on its own and outweighed by [{anchor}]: {}",
                f.id,
                f.probe,
                esc(&f.measured)
            ),
            st.width,
            "      ",
        ));
    }
    if !verbose && f.status == Status::Pass {
        // One line, two at most, cut at a word: never past the terminal's edge, where the
        // terminal would wrap it mid-number.
        let line = format!(
            "{} {:<5} {} — {}",
            mark(f.status, st),
            st.bold(&f.id),
            f.title,
            words(&f.measured)
        );
        return wrap_hanging(&line, st.width, "      ", 2);
    }
    let mut s = wrap_hanging(
        &format!(
            "{} {:<5} {}  {}",
            mark(f.status, st),
            st.bold(&f.id),
            f.title,
            st.dim(&format!("[{}]", f.probe))
        ),
        st.width,
        "      ",
        usize::MAX,
    );
    if !f.measured.is_empty() {
        s.push_str(&wrap(
            &format!("measured: {}", words(&f.measured)),
            st.width,
            "      ",
        ));
    }
    if !f.expected.is_empty() && f.status != Status::Skip {
        s.push_str(&wrap(
            &format!("expected: {}", words(&f.expected)),
            st.width,
            "      ",
        ));
    }
    if !f.message.is_empty() {
        s.push_str(&wrap(&words(&f.message), st.width, "      "));
    }
    if !f.explained_by.is_empty() {
        s.push_str(&st.dim(&format!(
            "      likely a consequence of: {}\n",
            f.explained_by.join(", ")
        )));
    }
    if verbose || matches!(f.status, Status::Fail | Status::Warn) {
        for e in f.evidence.iter().take(3) {
            s.push_str(&st.dim(&wrap(
                &format!("evidence: {}", words(&e.render())),
                st.width,
                "      ",
            )));
        }
    }
    s
}

/// The run profile's summary line and, dimmed, what said so (with how to correct it when
/// `hint`): the first lines of `check` and `inspect RUN`.
pub(crate) fn profile_lines(
    p: &mltriage_probes::profile::Profile,
    st: &Style,
    hint: bool,
) -> String {
    let mut s = wrap_hanging(
        &format!("{} {}", st.bold("profile"), esc(&p.summary())),
        st.width,
        "  ",
        usize::MAX,
    );
    let why = p.evidence();
    if !why.is_empty() {
        let hint = if hint {
            " (wrong? --fact phase=… / init=… / resumed_at=…)"
        } else {
            ""
        };
        s.push_str(&st.dim(&wrap(&format!("from {}{hint}", esc(&why)), st.width, "  ")));
    }
    s
}

pub fn render_report(r: &Report, st: &Style, all: bool) -> String {
    // The run's path, file names and what was read from them are the files' words: every one
    // is escaped for the terminal (`emit` escapes whatever else slips through).
    let run = esc(&r.run);
    let mut s = wrap_hanging(&format!("{} {}", st.bold("run"), run), st.width, "  ", 3);
    s.push_str(&profile_lines(&r.profile, st, true));
    // The device is context, not a finding: one dim line, its note cut to the clause that
    // says what happened (`--all` and `doctor` give the whole story).
    let note = r.device_note.as_ref().map(|n| {
        let short = n.split([':', ';']).next().unwrap_or(n).trim();
        if all {
            format!(" — {n}")
        } else {
            format!(" — {short}")
        }
    });
    s.push_str(&st.dim(&wrap_hanging(
        &format!(
            "device {} ({}){}",
            r.device,
            r.build,
            note.unwrap_or_default()
        ),
        st.width,
        "  ",
        2,
    )));
    let ck = r.artifacts.iter().filter(|a| a.kind.is_weights()).count();
    let logs = r.artifacts.iter().filter(|a| a.kind.is_metrics()).count();
    s.push_str(&format!(
        "{} {} files: {logs} metric log(s), {ck} weight file(s)\n",
        st.bold("artifacts"),
        r.artifacts.len()
    ));
    if r.artifacts.is_empty() {
        s.push_str(&st.yellow(
            "nothing to read: no metric logs, checkpoints, optimizer state, batches or configs found\n",
        ));
    }
    for p in &r.problems {
        s.push_str(&st.yellow(&format!("unreadable: {}\n", esc(&p.to_string()))));
    }
    let unused: Vec<_> = r
        .unused
        .iter()
        .filter(|u| !u.what.starts_with("unreadable"))
        .collect();
    if !unused.is_empty() {
        let names: Vec<String> = unused
            .iter()
            .take(4)
            .map(|u| {
                u.path
                    .file_name()
                    .map(|n| esc(&n.to_string_lossy()).into_owned())
                    .unwrap_or_default()
            })
            .collect();
        s.push_str(&st.dim(&wrap_hanging(
            &format!(
                "not used: {} file(s) ({}{}) — `mltriage inspect {}` says why for each",
                unused.len(),
                names.join(", "),
                if unused.len() > names.len() {
                    ", …"
                } else {
                    ""
                },
                run
            ),
            st.width,
            "  ",
            3,
        )));
    }
    if r.findings.iter().any(|f| all || f.status != Status::Skip) {
        s.push('\n');
    }
    let bad = r.count(Status::Fail) + r.count(Status::Warn);
    if bad == 0 && r.count(Status::Pass) > 0 {
        s.push_str(&st.green(&format!(
            "clean: no check failed or warned ({} passed) — what each one measured:\n",
            r.count(Status::Pass)
        )));
    }
    for f in &r.findings {
        if all || f.status != Status::Skip {
            s.push_str(&render_finding(f, st, false));
        }
    }
    let skips = r.count(Status::Skip);
    let na = r
        .findings
        .iter()
        .filter(|f| f.status == Status::Skip && f.message.starts_with("not applicable"))
        .count();
    s.push('\n');
    s.push_str(&wrap_hanging(
        &format!(
            "{} fail, {} warn, {} pass, {} skip{}{}",
            r.count(Status::Fail),
            r.count(Status::Warn),
            r.count(Status::Pass),
            skips,
            if na > 0 {
                format!(" ({na} not applicable to this run)")
            } else {
                String::new()
            },
            if skips > 0 && !all {
                " (skips hidden: --all shows them with the reason)"
            } else {
                ""
            }
        ),
        st.width,
        "  ",
        usize::MAX,
    ));
    let first = r
        .findings
        .iter()
        .find(|f| f.status == Status::Fail)
        .or_else(|| r.findings.iter().find(|f| f.status == Status::Warn));
    if let Some(f) = first {
        s.push_str(&format!("next: `mltriage show {}` for the fix\n", f.id));
    }
    s
}

#[allow(clippy::too_many_arguments)]
pub fn check_cmd(
    cat: &Catalog,
    run: &Path,
    facts: &[String],
    baseline: Option<&Path>,
    device: &str,
    json: bool,
    all: bool,
    quiet: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    let facts = parse_facts(facts)?;
    let compute = compute(device)?;
    let run = open_run(run)?;
    let base = baseline.map(open_run).transpose()?;
    let report = {
        let _line = ProgressLine::start(progress::wanted(json, quiet));
        check(cat, &run, &facts, &compute, base.as_ref())
    };
    if let Some(msg) = nothing_judged(&run, &report) {
        return Err(UsageError(msg).into());
    }
    // Evidence the skipped probes lacked, and the capture hook that writes it.
    let missing = crate::triage::evidence::missing(&report);
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["missing_evidence"] = serde_json::to_value(&missing)?;
        emit_json(&v);
    } else {
        let hints = crate::triage::evidence::hint_lines(&missing);
        let hints: String = hints
            .lines()
            .map(|l| format!("\n{}", wrap_hanging(l, st.width, "  ", 6)))
            .collect();
        emit(&format!("{}{hints}", render_report(&report, st, all)));
    }
    Ok(if report.has_fail() { 1 } else { 0 })
}

/// A single file that no check could judge (a `config.json`, `training_args.bin` …) is not
/// a run: what was given and what to give instead, for exit 2 (DESIGN §4.5: an input error,
/// since nothing at all was judged; a folder with nothing in it yet stays a report, exit 0).
fn nothing_judged(run: &Run, r: &Report) -> Option<String> {
    use mltriage_probes::run::ArtifactKind as K;
    if !run.root.is_file() || r.findings.iter().any(|f| f.status != Status::Skip) {
        return None;
    }
    let what = match r.artifacts.first().map(|a| &a.kind) {
        Some(K::ModelConfig) => "a model config",
        Some(K::GenerationConfig) => "a generation config",
        Some(K::SchedulerConfig) => "a scheduler config",
        Some(K::AdapterConfig) => "an adapter config",
        Some(K::HParams) => "a hyperparameter file",
        Some(K::TrainingArgs) => "a training-arguments file",
        Some(K::Scheduler) => "a scheduler state",
        Some(K::RngState) => "an RNG state",
        _ => "one file",
    };
    let folder = run
        .root
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| esc(&p.display().to_string()).into_owned())
        .unwrap_or_else(|| ".".into());
    Some(format!(
        "{}: {what} on its own — none of the {} checks can judge it; give the run's folder \
         instead (the output_dir holding its logs and checkpoints, e.g. `mltriage check {folder}`)",
        esc(&run.root.display().to_string()),
        r.findings.len()
    ))
}

#[allow(clippy::too_many_arguments)]
pub fn probe_cmd(
    cat: &Catalog,
    id: &str,
    run: &Path,
    facts: &[String],
    baseline: Option<&Path>,
    device: &str,
    json: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    if spec(id).is_none() {
        let known: Vec<&str> = mltriage_probes::probes::all()
            .iter()
            .map(|s| s.id)
            .collect();
        return Err(UsageError(format!(
            "probe {id:?}: no such probe (known: {})",
            known.join(", ")
        ))
        .into());
    }
    if cat.probe(id).is_none() {
        return Err(UsageError(format!(
            "probe {id:?}: the playbook defines no thresholds for it"
        ))
        .into());
    }
    let user = parse_facts(facts)?;
    let compute = compute(device)?;
    let run = open_run(run)?;
    let base = baseline.map(open_run).transpose()?;
    let facts = effective_facts(&run, &user);
    let profile = mltriage_probes::profile::Profile::of(&run, &facts);
    let mut findings =
        run_one(cat, id, &run, &facts, &profile, &compute, base.as_ref()).unwrap_or_default();
    order(cat, &mut findings);
    if json {
        emit_json(
            &json!({"run": run.root.to_string_lossy(), "device": compute.label, "probe": id, "findings": findings}),
        );
    } else {
        let mut s = String::new();
        for f in &findings {
            s.push_str(&render_finding(f, st, true));
        }
        emit(&s);
    }
    Ok(if findings.iter().any(|f| f.status == Status::Fail) {
        1
    } else {
        0
    })
}

pub fn probes_cmd(cat: &Catalog, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    let specs = mltriage_probes::probes::all();
    let rows: Vec<_> = cat
        .probes
        .iter()
        .map(|p| {
            let sp = specs.iter().find(|s| s.id == p.id);
            (p, sp)
        })
        .collect();
    if json {
        let v: Vec<_> = rows
            .iter()
            .map(|(p, sp)| {
                json!({"id": p.id, "question": p.question, "entries": p.entries, "implemented": sp.is_some(),
                    "inputs": sp.map(|s| s.inputs.to_vec()).unwrap_or_default(), "outcomes": sp.map(|s| s.outcomes.to_vec()).unwrap_or_default(),
                    "thresholds": p.thresholds, "priority": p.priority})
            })
            .collect();
        emit_json(&json!({"probes": v}));
        return Ok(0);
    }
    let mut s = String::new();
    for (p, sp) in rows {
        let state = if sp.is_some() {
            String::new()
        } else {
            st.dim(" (not implemented yet)")
        };
        s.push_str(&format!(
            "{:<20} {}{}\n",
            st.bold(&p.id),
            p.entries.join(", "),
            state
        ));
        s.push_str(&wrap(&p.question, st.width, "    "));
        if let Some(sp) = sp {
            s.push_str(&st.dim(&wrap(
                &format!("reads: {}", sp.inputs.join(", ")),
                st.width,
                "    ",
            )));
        }
    }
    emit(&s);
    Ok(0)
}

/// `probes --coverage`: every entry × the probes that can name it × what they read.
pub fn coverage_cmd(
    cat: &Catalog,
    json: bool,
    markdown: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    use crate::catalog::coverage::{self, CoverageState};
    let cov = coverage::coverage(cat, mltriage_probes::probes::all());
    if json {
        emit_json(&serde_json::to_value(&cov)?);
        return Ok(0);
    }
    if markdown {
        emit(&coverage::markdown(&cov));
        return Ok(0);
    }
    let mut s = String::new();
    for r in &cov.rows {
        let head = format!("{:<6}", r.id);
        match r.state {
            CoverageState::Probed => {
                let probes: Vec<String> = r
                    .probes
                    .iter()
                    .filter(|p| p.implemented)
                    .map(|p| p.id.clone())
                    .collect();
                let reads: Vec<&str> = r.reads.iter().map(|a| a.as_str()).collect();
                s.push_str(&format!(
                    "{} {}  {}\n",
                    st.bold(&head),
                    probes.join(", "),
                    st.dim(&format!("reads {}", reads.join(", ")))
                ));
            }
            CoverageState::NoProbe => {
                let arts: Vec<&str> = r.artifacts.iter().map(|a| a.as_str()).collect();
                s.push_str(&format!(
                    "{} {}  {}\n",
                    st.bold(&head),
                    st.dim("no probe yet"),
                    st.dim(&format!("({})", arts.join(", ")))
                ));
                s.push_str(&wrap(&r.shows, st.width, "       "));
            }
            CoverageState::NoSignal => {
                s.push_str(&format!("{} {}\n", st.bold(&head), st.dim("none")));
                s.push_str(&wrap(&r.shows, st.width, "       "));
            }
            CoverageState::Unsigned => {
                s.push_str(&format!(
                    "{} {}\n",
                    st.bold(&head),
                    "no signature (lint error)"
                ));
            }
        }
    }
    s.push_str(&format!(
        "\n{} entries: {} named by a probe, {} with an artifact signature but no probe yet, {} that no artifact shows{}\n",
        cov.entries,
        cov.probed,
        cov.no_probe,
        cov.none,
        if cov.unsigned > 0 {
            format!(", {} without a signature", cov.unsigned)
        } else {
            String::new()
        }
    ));
    emit(&s);
    Ok(0)
}
