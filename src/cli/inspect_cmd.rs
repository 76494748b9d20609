//! `mltriage inspect PATH`: what the readers see in any artifact — a tensor table for
//! checkpoints and batches, series for metric logs, groups and per-parameter state for
//! optimizer state, a pickled dict's contents, or a run directory's inventory.

use std::path::Path;

use serde_json::{json, Value as J};

use mltriage_probes::config::ModelConfig;
use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::metrics::{read_metrics_file, Series};
use mltriage_probes::probes::util::fmt;
use mltriage_probes::run::{classify, ArtifactKind, Run};
use mltriage_probes::tensors::pass::{self, Pass};
use mltriage_probes::tensors::{read_pickled_dict, OptimizerState, TensorFile};

use super::catalog_cmds::{emit, emit_json};
use super::progress::{self, ProgressLine};
use super::style::{escape_controls as esc, shown_path, Style};
use super::{ExitCode, UsageError};

fn fail(e: impl std::fmt::Display) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

fn series_json(s: &Series) -> J {
    json!({"name": s.name, "tag": s.tag, "source": s.source.to_string_lossy(), "rank": s.rank, "len": s.len(),
        "first_step": s.first().map(|p| p.step), "last_step": s.last().map(|p| p.step),
        "first": s.first().map(|p| p.value), "last": s.last().map(|p| p.value), "min": s.min(), "max": s.max()})
}

fn series_table(series: &[&Series], st: &Style) -> String {
    let mut s = format!(
        "{}\n",
        st.bold(&format!(
            "{:<28} {:>6} {:>13} {:>11} {:>11} {:>11} {:>11}",
            "series (tag)", "points", "steps", "first", "last", "min", "max"
        ))
    );
    for x in series {
        let steps = match (x.first(), x.last()) {
            (Some(a), Some(b)) => format!("{}..{}", a.step, b.step),
            _ => "-".into(),
        };
        // Names and tags come from the files: escaped for the terminal.
        let name = if x.name == x.tag {
            esc(&x.name).into_owned()
        } else {
            format!("{} ({})", esc(&x.name), esc(&x.tag))
        };
        s.push_str(&format!(
            "{:<28} {:>6} {:>13} {:>11} {:>11} {:>11} {:>11}\n",
            name,
            x.len(),
            steps,
            x.first().map(|p| fmt(p.value)).unwrap_or("-".into()),
            x.last().map(|p| fmt(p.value)).unwrap_or("-".into()),
            x.min().map(fmt).unwrap_or("-".into()),
            x.max().map(fmt).unwrap_or("-".into())
        ));
    }
    s
}

fn inspect_tensors(
    tf: TensorFile,
    path: &Path,
    json: bool,
    quiet: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    // One pass over the file on every core (progress on stderr), then the table from its results.
    {
        let _line = ProgressLine::start(progress::wanted(json, quiet));
        let mut p = Pass::new();
        p.all_stats(&tf);
        p.run();
    }
    let mut rows = Vec::new();
    let mut text = format!(
        "{}\n",
        st.bold(&format!(
            "{:<44} {:>5} {:>14} {:>10} {:>10} {:>10} {:>10} {:>6} {:>5}",
            "tensor", "dtype", "shape", "mean", "std", "min", "max", "zero%", "nan/inf"
        ))
    );
    for t in tf.tensors() {
        let stats = pass::stats(&tf, &t.name).map_err(fail)?;
        let shape = format!("{:?}", t.shape);
        rows.push(json!({"name": t.name, "dtype": t.dtype.name(), "shape": t.shape, "count": stats.count, "mean": stats.mean, "std": stats.std,
            "min": stats.min, "max": stats.max, "absmax": stats.absmax, "zero_frac": stats.zero_frac(), "nan": stats.nan, "inf": stats.inf, "l2": stats.l2}));
        let name = esc(&t.name);
        let n = name.chars().count();
        let name = if n > 44 {
            format!("…{}", name.chars().skip(n - 43).collect::<String>())
        } else {
            name.into_owned()
        };
        let nonfinite = stats.nan + stats.inf;
        text.push_str(&format!(
            "{:<44} {:>5} {:>14} {:>10} {:>10} {:>10} {:>10} {:>6.1} {:>5}\n",
            name,
            t.dtype.name(),
            shape,
            fmt(stats.mean),
            fmt(stats.std),
            fmt(stats.min),
            fmt(stats.max),
            100.0 * stats.zero_frac(),
            if nonfinite > 0 {
                st.red(&nonfinite.to_string())
            } else {
                "0".into()
            }
        ));
    }
    if json {
        emit_json(&json!({"path": path.to_string_lossy(), "kind": "tensors", "tensors": rows}));
    } else {
        text.push_str(&st.dim(&format!(
            "{} tensors in {}\n",
            tf.tensors().len(),
            shown_path(path)
        )));
        emit(&text);
    }
    Ok(0)
}

fn inspect_optimizer(path: &Path, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    let o = OptimizerState::open(path).map_err(fail)?;
    let mut groups = Vec::new();
    let mut text = String::new();
    for g in &o.groups {
        groups.push(json!({"index": g.index, "lr": g.lr, "initial_lr": g.initial_lr, "betas": g.betas, "eps": g.eps, "weight_decay": g.weight_decay,
            "params": g.params.len(), "param_names": g.param_names, "extra": g.extra}));
        text.push_str(&format!(
            "{} lr={} initial_lr={} wd={} eps={} betas={:?} params={}\n",
            st.bold(&format!("group {}", g.index)),
            g.lr.map(fmt).unwrap_or("-".into()),
            g.initial_lr.map(fmt).unwrap_or("-".into()),
            g.weight_decay.map(fmt).unwrap_or("-".into()),
            g.eps.map(fmt).unwrap_or("-".into()),
            g.betas.unwrap_or_default(),
            g.params.len()
        ));
    }
    let mut states = Vec::new();
    text.push_str(&format!(
        "{}\n",
        st.bold(&format!(
            "{:>5} {:>5} {:>16} {:>6} {:>8} {:>11} {:>11}",
            "param", "group", "shape", "dtype", "step", "||m||", "||v||"
        ))
    ));
    for (id, s) in &o.state {
        let m = s.exp_avg.as_ref().and_then(|t| o.l2_norm(t).ok());
        let v = s.exp_avg_sq.as_ref().and_then(|t| o.l2_norm(t).ok());
        let g = o.group_of(*id).map(|g| g.index);
        states.push(json!({"id": id, "group": g, "shape": s.shape, "dtype": s.dtype.map(|d| d.name()), "step": s.step, "exp_avg_l2": m, "exp_avg_sq_l2": v}));
        text.push_str(&format!(
            "{:>5} {:>5} {:>16} {:>6} {:>8} {:>11} {:>11}\n",
            id,
            g.map(|g| g.to_string()).unwrap_or("-".into()),
            format!("{:?}", s.shape),
            s.dtype.map(|d| d.name()).unwrap_or("-"),
            s.step.map(fmt).unwrap_or("-".into()),
            m.map(fmt).unwrap_or("-".into()),
            v.map(fmt).unwrap_or("-".into())
        ));
    }
    let missing = o.params_without_state();
    if json {
        emit_json(
            &json!({"path": path.to_string_lossy(), "kind": "optimizer", "groups": groups, "state": states, "params_without_state": missing}),
        );
    } else {
        if !missing.is_empty() {
            text.push_str(&st.yellow(&format!(
                "{} param(s) in groups without state: {:?}\n",
                missing.len(),
                missing
            )));
        }
        emit(&text);
    }
    Ok(0)
}

fn inspect_pickle(path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let v = read_pickled_dict(path).map_err(fail)?;
    let r = v.repr(4000);
    if json {
        emit_json(&json!({"path": path.to_string_lossy(), "kind": "pickle", "repr": r}));
    } else {
        emit(&format!("{r}\n"));
    }
    Ok(0)
}

fn inspect_metrics(path: &Path, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    let series = read_metrics_file(path).map_err(fail)?;
    if json {
        emit_json(
            &json!({"path": path.to_string_lossy(), "kind": "metrics", "series": series.iter().map(series_json).collect::<Vec<_>>()}),
        );
    } else {
        let refs: Vec<&Series> = series.iter().collect();
        emit(&series_table(&refs, st));
    }
    Ok(0)
}

fn inspect_run(path: &Path, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    let run = Run::discover(path).map_err(fail)?;
    let facts = facts_from_artifacts(&run);
    let profile = mltriage_probes::profile::Profile::of(&run, &facts);
    let metrics = run.metrics();
    let problems = run.problems();
    let uses = mltriage_probes::run::explain(&run);
    if json {
        emit_json(
            &json!({"path": path.to_string_lossy(), "kind": "run", "profile": profile, "artifacts": run.artifacts, "files": uses, "set_aside": run.set_aside, "checkpoints": run.checkpoints,
            "series": metrics.series.iter().map(series_json).collect::<Vec<_>>(), "facts": facts, "problems": problems}),
        );
        return Ok(0);
    }
    let mut s = format!("{} {}\n", st.bold("run"), shown_path(path));
    s.push_str(&super::run_cmds::profile_lines(&profile, st, false));
    if run.artifacts.is_empty() {
        s.push_str("  no artifacts found (logs, checkpoints, batches or configs)\n");
    }
    for u in &uses {
        let rel = u.path.strip_prefix(&run.root).unwrap_or(&u.path);
        let line = format!("  {}  {}\n", shown_path(rel), esc(&u.what));
        s.push_str(&if u.used { line } else { st.dim(&line) });
    }
    if !run.checkpoints.is_empty() {
        s.push_str(&format!("{}\n", st.bold("checkpoints")));
        for c in &run.checkpoints {
            let mut parts = vec![format!("{} weight file(s)", c.weights.len())];
            for (n, p) in [
                ("optimizer", &c.optimizer),
                ("scheduler", &c.scheduler),
                ("trainer_state", &c.trainer_state),
                ("config", &c.config),
            ] {
                if p.is_some() {
                    parts.push(n.into());
                }
            }
            let step = if c.step_unknown {
                "step ?".to_string()
            } else {
                c.index_label()
            };
            s.push_str(&format!(
                "  {:<13} {}{}\n",
                step,
                parts.join(", "),
                if c.is_init {
                    st.dim(" (init)")
                } else if c.is_final {
                    st.dim(" (final)")
                } else {
                    String::new()
                }
            ));
        }
    }
    if !metrics.series.is_empty() {
        s.push_str(&format!("{}\n", st.bold("metric series")));
        let refs: Vec<&Series> = metrics.series.iter().collect();
        s.push_str(&series_table(&refs, st));
    }
    let fs: Vec<_> = facts.iter().collect();
    if !fs.is_empty() {
        s.push_str(&format!("{}\n", st.bold("facts from artifacts")));
        for (k, f) in fs {
            s.push_str(&format!("  {} = {}\n", esc(k), esc(&f.value.to_string())));
        }
    }
    for p in problems {
        s.push_str(&st.yellow(&format!("unreadable: {}\n", esc(&p.to_string()))));
    }
    emit(&s);
    Ok(0)
}

pub fn inspect(path: &Path, json: bool, quiet: bool, st: &Style) -> anyhow::Result<ExitCode> {
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if meta.is_dir() {
        return inspect_run(path, json, st);
    }
    if mltriage_probes::metrics::mlflow::metric_key(path).is_some() {
        return inspect_metrics(path, json, st);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match classify(&name) {
        ArtifactKind::TrainerState
        | ArtifactKind::TfEvents
        | ArtifactKind::MetricsCsv
        | ArtifactKind::Csv
        | ArtifactKind::Jsonl
        | ArtifactKind::StdoutLog
        | ArtifactKind::WandbRecord => inspect_metrics(path, json, st),
        ArtifactKind::Optimizer => inspect_optimizer(path, json, st),
        ArtifactKind::VecNormalize => {
            let v = mltriage_probes::tensors::vecnorm::read(path).map_err(fail)?;
            if json {
                emit_json(
                    &json!({"path": path.to_string_lossy(), "kind": "vec_normalize", "summary": v.summary()}),
                );
            } else {
                emit(&format!(
                    "{}: Stable-Baselines3 VecNormalize statistics\n{}\n",
                    shown_path(path),
                    v.summary()
                ));
            }
            Ok(0)
        }
        ArtifactKind::Scheduler | ArtifactKind::TrainingArgs | ArtifactKind::RngState => {
            inspect_pickle(path, json)
        }
        ArtifactKind::ModelConfig => {
            let c = ModelConfig::read(path).map_err(fail)?;
            if json {
                emit_json(
                    &json!({"path": path.to_string_lossy(), "kind": "config", "config": c.raw}),
                );
            } else {
                emit(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&c.raw).unwrap_or_default()
                ));
            }
            Ok(0)
        }
        _ => {
            // Unknown names: sniff — tensors first, then metrics.
            match TensorFile::open(path) {
                Ok(tf) => inspect_tensors(tf, path, json, quiet, st),
                // A sharded index that does not open is an error, never a "metric log".
                Err(e) if name.ends_with(".index.json") => Err(fail(e)),
                Err(e) => {
                    if let Ok(series) = read_metrics_file(path) {
                        if !series.is_empty() {
                            return inspect_metrics(path, json, st);
                        }
                    }
                    Err(fail(e))
                }
            }
        }
    }
}
