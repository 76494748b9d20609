//! Tree commands: `trees` (list) and `walk TREE [RUN]` (non-interactive: probes answer what
//! they can; a node nothing can answer stops the walk with what it needs, exit 2).

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;

use super::catalog_cmds::{emit, emit_json};
use super::run_cmds::{compute, open_run, parse_facts};
use super::style::{escape_controls as esc, wrap, Style};
use super::{ExitCode, UsageError};
use crate::catalog::Catalog;
use crate::triage::check::effective_facts;
use crate::triage::walk::{auto_walk, auto_walk_from, Inputs};

pub fn trees(cat: &Catalog, json: bool, st: &Style) -> anyhow::Result<ExitCode> {
    if json {
        let v: Vec<_> = cat
            .trees
            .iter()
            .map(|t| json!({"id": t.id, "title": t.title, "root": t.root, "nodes": t.nodes.len()}))
            .collect();
        emit_json(&json!({"trees": v}));
        return Ok(0);
    }
    let mut s = String::new();
    for t in &cat.trees {
        s.push_str(&format!(
            "{:<12} {}  {}\n",
            st.bold(&t.id),
            t.title,
            st.dim(&format!("({} nodes)", t.nodes.len()))
        ));
    }
    s.push_str(
        &st.dim("\n`mltriage walk TREE RUN` walks one with the run's artifacts answering.\n"),
    );
    emit(&s);
    Ok(0)
}

fn parse_answers(args: &[String]) -> anyhow::Result<HashMap<String, String>> {
    let mut m = HashMap::new();
    for a in args {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--answer {a:?}: expected NODE=LABEL")))?;
        m.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(m)
}

#[allow(clippy::too_many_arguments)]
pub fn walk(
    cat: &Catalog,
    tree: Option<&str>,
    from: Option<&str>,
    run: Option<&Path>,
    facts: &[String],
    answers: &[String],
    baseline: Option<&Path>,
    device: &str,
    json: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    // `walk --from ID RUN`: one positional is the run; `walk TREE --from NODE RUN` names the
    // tree the node is in.
    let (tree, run, from) = match (tree, run, from) {
        (Some(t), None, Some(f)) if cat.tree(t).is_none() => {
            (None, Some(Path::new(t)), Some(f.to_string()))
        }
        (Some(t), r, Some(f)) if !f.contains('/') && cat.entry(f).is_none() => {
            (Some(t), r, Some(format!("{t}/{f}")))
        }
        (t, r, f) => (t, r, f.map(String::from)),
    };
    let from = from.as_deref();
    let tree = match (tree, from) {
        (Some(t), _) => t,
        (None, Some(_)) => "",
        (None, None) => {
            return Err(
                UsageError("walk: name a TREE, or --from ID (see `mltriage trees`)".into()).into(),
            )
        }
    };
    if from.is_none() && cat.tree(tree).is_none() {
        let ids: Vec<&str> = cat.trees.iter().map(|t| t.id.as_str()).collect();
        return Err(UsageError(format!(
            "walk {tree:?}: no such tree (trees: {})",
            ids.join(", ")
        ))
        .into());
    }
    let user = parse_facts(facts)?;
    let answers = parse_answers(answers)?;
    let compute = compute(device)?;
    let run = run.map(open_run).transpose()?;
    let base = baseline.map(open_run).transpose()?;
    let facts = match &run {
        Some(r) => effective_facts(r, &user),
        None => user,
    };
    let inputs = Inputs {
        run: run.as_ref(),
        facts: &facts,
        compute: &compute,
        baseline: base.as_ref(),
        answers: &answers,
    };
    let res = match from {
        Some(id) => {
            auto_walk_from(cat, id, &inputs).map_err(|e| UsageError(format!("walk --from {e}")))?
        }
        None => auto_walk(cat, tree, &inputs)?,
    };
    let tree = res.tree.as_str();
    if json {
        emit_json(&serde_json::to_value(&res)?);
    } else {
        let t = cat.tree(tree).map(|t| t.title.clone()).unwrap_or_default();
        let mut s = format!("{} {}\n\n", st.bold(&res.tree), t);
        if let Some(f) = &res.from {
            s.push_str(&st.dim(&format!(
                "from {}: starting at {} ({} step(s) above it on the way down)\n\n",
                f.id, f.start, f.above
            )));
        }
        for (i, p) in res.path.iter().enumerate() {
            s.push_str(&format!("{:>2}. {}\n", i + 1, p.question));
            let m = if p.measured.is_empty() {
                String::new()
            } else {
                // What a probe measured quotes the run's files: escaped for the terminal.
                format!("{} — ", esc(&p.measured))
            };
            s.push_str(&wrap(
                &format!(
                    "→ {} {}",
                    st.bold(&p.shown_answer()),
                    st.dim(&format!("({m}{})", esc(&p.source.label())))
                ),
                st.width,
                "    ",
            ));
        }
        // A route step where the run said otherwise: the run's own answers lead elsewhere.
        if let Some(p) = res
            .path
            .iter()
            .find(|p| p.via.is_some() && !p.answer.is_empty() && p.answer != "skip")
        {
            s.push_str(&wrap(
                &format!(
                    "the run's answers lead elsewhere: at {} the run said {}, the route to the start takes {} — `mltriage walk {} RUN` follows the run from the top",
                    p.id,
                    p.answer,
                    p.via.as_deref().unwrap_or_default(),
                    res.tree
                ),
                st.width,
                "  ",
            ));
        }
        if let Some(c) = &res.conclusion {
            s.push('\n');
            if !c.id.is_empty() {
                s.push_str(&format!(
                    "{} {} {}\n",
                    st.cyan("Conclusion:"),
                    st.bold(&c.id),
                    c.title
                ));
            }
            if c.id.is_empty() && c.inconclusive.is_some() {
                s.push_str(&format!("{} {}\n", st.yellow("Conclusion:"), c.title));
            }
            if let Some(n) = &c.note {
                s.push_str(&wrap(n, st.width, "  "));
            }
            if let Some(inc) = &c.inconclusive {
                s.push_str(&format!("{}\n", st.cyan("Missing")));
                for m in &inc.missing {
                    s.push_str(&wrap(&format!("• {}", esc(m)), st.width, "    "));
                }
            }
            if !c.fix.is_empty() {
                s.push_str(&format!(
                    "{}\n{}",
                    st.cyan("Fix"),
                    wrap(&c.fix, st.width, "  ")
                ));
            }
            for k in &c.knobs {
                s.push_str(&format!("  • {}\n", st.yellow(k)));
            }
        }
        if let Some(stop) = &res.stopped {
            s.push_str(&format!(
                "\n{} at {}: {}\n",
                st.yellow("stopped"),
                stop.node,
                stop.question
            ));
            s.push_str(&wrap(
                &format!("needs {}", esc(&stop.needs)),
                st.width,
                "  ",
            ));
            if let Some(said) = &stop.run_said {
                s.push_str(&wrap(
                    &format!("the run said: {}", esc(said)),
                    st.width,
                    "  ",
                ));
            }
            if let Some(lead) = &stop.run_leads_to {
                s.push_str(&wrap(
                    &format!(
                        "the run's own findings lead to: {} — {}",
                        st.bold(&lead.option),
                        esc(&lead.because.join(", "))
                    ),
                    st.width,
                    "  ",
                ));
                s.push_str(&format!(
                    "  walk there: --answer {}={:?}\n",
                    stop.node, lead.option
                ));
            }
            if !stop.options.is_empty() {
                s.push_str(&format!(
                    "  answer with --answer {}=<{}>\n",
                    stop.node,
                    stop.options.join("|")
                ));
            }
        }
        emit(&s);
    }
    if let Some(stop) = &res.stopped {
        if !json {
            eprintln!(
                "mltriage: walk {tree}: stopped at {}: needs {}",
                stop.node, stop.needs
            );
        }
        return Ok(2);
    }
    Ok(0)
}
