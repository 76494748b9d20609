//! The command line: parse arguments (clap), load the catalog, dispatch to a command, and
//! map failures to exit codes (0 ok, 1 a check/probe found a fail, 2 usage or input error).

pub mod catalog_cmds;
pub mod doctor_cmd;
pub mod inspect_cmd;
pub mod progress;
pub mod run_cmds;
pub mod style;
pub mod tree_cmds;
pub mod watch_cmd;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::catalog::Catalog;
pub use style::{ColorChoice, Style};

#[derive(Debug, Parser)]
#[command(name = "mltriage", version, about = "Triage a misbehaving ML training run: search symptoms, walk decision trees, probe the run's artifacts.", long_about = None)]
pub struct Cli {
    /// Add or override playbook entries, probes and trees from this directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub playbook: Option<PathBuf>,
    /// Colour in plain output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A run to attach in the TUI (directory or file).
    pub run: Option<PathBuf>,
    /// TUI: draw with ASCII only (no box drawing, braille or marks outside ASCII).
    #[arg(long, global = true)]
    pub ascii: bool,
    /// Print where mltriage reads its configuration (the TUI key map) and exit.
    #[arg(long)]
    pub show_paths: bool,
    /// TUI: a fact the artifacts may not say, e.g. --fact vocab_size=50257 (repeatable).
    /// Subcommands take their own --fact after their name.
    #[arg(long = "fact", value_name = "KEY=VALUE")]
    pub facts: Vec<String>,
    /// TUI: where the probes compute: auto | cpu | cuda | cuda:N.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// No progress line on stderr while tensors are read (also: MLTRIAGE_QUIET=1).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Threads that read and reduce tensors (default: one per core; also RAYON_NUM_THREADS).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Search the catalog for a symptom or a pasted error message.
    Search {
        /// Free text: a symptom ("mAP is zero") or an error string.
        query: Vec<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Only this domain (llm, vision, diffusion, rl, vlm, convergence, stability, folklore).
        #[arg(long)]
        domain: Option<String>,
        #[arg(long)]
        json: bool,
        /// A run to check first: hits whose entry fails or warns on it rank first, and every
        /// hit carries the run's verdict for its entry.
        #[arg(long, value_parser = path_arg, value_name = "RUN")]
        run: Option<PathBuf>,
        /// With --run: a fact the artifacts may not say (repeatable).
        #[arg(long = "fact", value_name = "KEY=VALUE", requires = "run")]
        facts: Vec<String>,
        /// With --run: auto | cpu | cuda | cuda:N
        #[arg(long, default_value = "auto")]
        device: String,
    },
    /// Show one entry (e.g. O9, S1.1) or one tree node (e.g. stability/q1_1).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// List entries, optionally of one domain.
    List {
        #[arg(long)]
        domain: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Run every probe on a run and report what is wrong, most likely cause first.
    Check {
        #[arg(value_parser = path_arg)]
        run: PathBuf,
        /// A fact the artifacts may not say, e.g. --fact schedule=warmup_cosine (repeatable).
        #[arg(long = "fact", value_name = "KEY=VALUE")]
        facts: Vec<String>,
        /// A comparable run (same config without the suspected change), for ratio checks.
        #[arg(long, value_parser = path_arg)]
        baseline: Option<PathBuf>,
        /// auto | cpu | cuda | cuda:N
        #[arg(long, default_value = "auto")]
        device: String,
        /// Also show skipped probes with their reasons.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run one probe on a run.
    Probe {
        id: String,
        #[arg(value_parser = path_arg)]
        run: PathBuf,
        #[arg(long = "fact", value_name = "KEY=VALUE")]
        facts: Vec<String>,
        #[arg(long, value_parser = path_arg)]
        baseline: Option<PathBuf>,
        #[arg(long, default_value = "auto")]
        device: String,
        #[arg(long)]
        json: bool,
    },
    /// List the probes: question, entries it answers, inputs.
    Probes {
        #[arg(long)]
        json: bool,
        /// Instead: every entry, the probes that can name it and the artifacts they read;
        /// entries without one and why.
        #[arg(long)]
        coverage: bool,
        /// With --coverage: the table as Markdown (the README's copy).
        #[arg(long, requires = "coverage", conflicts_with = "json")]
        markdown: bool,
    },
    /// List the symptom trees.
    Trees {
        #[arg(long)]
        json: bool,
    },
    /// Walk a tree non-interactively: probes answer what the run can tell.
    /// `walk --from ID RUN` starts at the symptom ID (an entry id, TREE/NODE or a node id)
    /// with the route above it filled in.
    Walk {
        /// The tree to walk (with --from: optional; then the first argument is the RUN).
        tree: Option<String>,
        #[arg(value_parser = path_arg)]
        run: Option<PathBuf>,
        /// Start at this symptom: an entry id (e.g. S3.2), TREE/NODE, or a node id.
        #[arg(long, value_name = "ID")]
        from: Option<String>,
        #[arg(long = "fact", value_name = "KEY=VALUE")]
        facts: Vec<String>,
        /// Answer (or override) a node: --answer NODE=LABEL (repeatable).
        #[arg(long = "answer", value_name = "NODE=LABEL")]
        answers: Vec<String>,
        #[arg(long, value_parser = path_arg)]
        baseline: Option<PathBuf>,
        #[arg(long, default_value = "auto")]
        device: String,
        #[arg(long)]
        json: bool,
    },
    /// Show what mltriage reads from any artifact: tensors, metric series, optimizer state, a run.
    Inspect {
        #[arg(value_parser = path_arg)]
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// What this build and machine offer: features, CUDA devices (or why none), the device
    /// chosen and why, the playbook source, configuration paths.
    Doctor {
        /// The request to explain: auto | cpu | cuda | cuda:N.
        #[arg(long, default_value = "auto")]
        device: String,
        #[arg(long)]
        json: bool,
    },
    /// Follow a run while it trains: one line per finding that appears, changes or clears;
    /// exit 1 at the first finding at the --until level, 0 when the run ends cleanly.
    Watch {
        #[arg(value_parser = path_arg)]
        run: PathBuf,
        /// Stop (exit 1) at the first finding at this level.
        #[arg(long, value_enum, default_value = "fail")]
        until: watch_cmd::Until,
        /// Seconds between two looks at the run's files.
        #[arg(long, default_value_t = 1.0, value_name = "S")]
        interval: f64,
        /// The run has ended (exit 0) after this many seconds without a write.
        #[arg(long, default_value_t = 300.0, value_name = "S")]
        quiet_after: f64,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Run `sh -c CMD` per event, with MLTRIAGE_ID, MLTRIAGE_STATUS, MLTRIAGE_STEP,
        /// MLTRIAGE_MESSAGE, MLTRIAGE_RUN (and MLTRIAGE_EVENT, MLTRIAGE_PROBE) set.
        #[arg(long, value_name = "CMD")]
        exec: Option<String>,
        #[arg(long = "fact", value_name = "KEY=VALUE")]
        facts: Vec<String>,
        #[arg(long, default_value = "auto")]
        device: String,
    },
    /// Validate a playbook directory (default: the embedded playbook).
    Lint { dir: Option<PathBuf> },
    /// Print shell completions.
    Completions { shell: clap_complete::Shell },
}

/// Writes `bytes` to stdout. A reader that closed the pipe ends the program quietly (exit 0,
/// as `head` expects); any other write error (`/dev/full`) is a one-line error.
pub fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(UsageError(format!("writing to standard output: {e}")).into()),
    }
}

/// A path argument: an empty string names no file (clap would call it "not supplied").
pub fn path_arg(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() {
        Err("an empty path names no file or folder".into())
    } else {
        Ok(PathBuf::from(s))
    }
}

/// clap's error as one line: its first paragraph, without the usage block or tips, an echoed
/// argument's control characters escaped.
pub fn one_line_clap_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let para: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = para.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    format!(
        "{} (see `mltriage --help`)",
        mltriage_probes::error::escape_controls(msg)
    )
}

/// A failure that ends the program with exit code 2: one line on stderr.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// What a command asks `main` to exit with.
pub type ExitCode = i32;

pub fn load_catalog(cli: &Cli) -> anyhow::Result<Catalog> {
    Catalog::load(cli.playbook.as_deref()).map_err(|e| UsageError(e.to_string()).into())
}

/// A user playbook's `metrics.yaml` (what its frameworks' logged names mean), read before any
/// run is: every reader consults it before the shipped vocabulary.
fn install_metric_names(dir: &std::path::Path) -> anyhow::Result<()> {
    let path = dir.join("metrics.yaml");
    if !path.is_file() {
        return Ok(());
    }
    let bytes = mltriage_probes::limits::read_capped_io(
        &path,
        crate::catalog::yaml_budget::MAX_YAML_BYTES as u64,
    )
    .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| UsageError(format!("{}: not UTF-8 text ({e})", path.display())))?;
    crate::catalog::yaml_budget::check(&text)
        .map_err(|(line, msg)| UsageError(format!("{}:{line}: {msg}", path.display())))?;
    let v = mltriage_probes::metrics::vocab::Vocabulary::from_yaml(&text)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    mltriage_probes::metrics::vocab::install_user_rules(v.rules);
    Ok(())
}

/// Run the parsed command line. Errors are printed by `main` as one line, exit 2.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let style = Style::detect(cli.color);
    style::set_ascii(cli.ascii);
    if let Some(n) = cli.threads {
        mltriage_probes::tensors::pass::set_threads(n)
            .map_err(|e| UsageError(format!("--threads {n}: {e}")))?;
    } else if let Ok(v) = std::env::var("RAYON_NUM_THREADS") {
        // rayon reads it when the first pass starts all of its threads: refuse a typo here.
        let max = mltriage_probes::tensors::pass::MAX_THREADS;
        if v.trim().parse::<u64>().is_ok_and(|n| n > max as u64) {
            return Err(UsageError(format!(
                "RAYON_NUM_THREADS={}: expected at most {max}",
                v.trim()
            ))
            .into());
        }
    }
    if cli.command.is_some() && (!cli.facts.is_empty() || cli.device.is_some()) {
        let which = if cli.facts.is_empty() {
            "--device"
        } else {
            "--fact"
        };
        return Err(UsageError(format!(
            "{which} before a subcommand applies to the interactive UI only; put it after the subcommand (e.g. `mltriage check RUN {which} …`)"
        ))
        .into());
    }
    if let Some(dir) = &cli.playbook {
        install_metric_names(dir)?;
    }
    match &cli.command {
        Some(Command::Lint { dir }) => catalog_cmds::lint(dir.as_deref()),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            // Generated into memory, then written once: a closed pipe or a full disk is an
            // error to report (or, for a reader that went away, a quiet end), never a panic.
            let mut buf = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "mltriage", &mut buf);
            write_stdout(&buf)?;
            Ok(0)
        }
        Some(Command::Search {
            query,
            limit,
            domain,
            json,
            run,
            facts,
            device,
        }) => {
            let cat = load_catalog(&cli)?;
            let on_run = run.as_deref().map(|r| catalog_cmds::OnRun {
                run: r,
                facts,
                device,
                quiet: cli.quiet || *json,
            });
            let code = catalog_cmds::search(
                &cat,
                &query.join(" "),
                *limit,
                domain.as_deref(),
                *json,
                on_run,
                &style,
            );
            // As for the index (catalog_cmds::search): the process ends next.
            std::mem::forget(cat);
            code
        }
        Some(Command::Show { id, json }) => {
            let cat = load_catalog(&cli)?;
            let code = catalog_cmds::show(&cat, id, *json, &style);
            // The process ends next: freeing the catalog string by string is only cost.
            std::mem::forget(cat);
            code
        }
        Some(Command::List { domain, json }) => {
            let cat = load_catalog(&cli)?;
            catalog_cmds::list(&cat, domain.as_deref(), *json, &style)
        }
        Some(Command::Check {
            run,
            facts,
            baseline,
            device,
            all,
            json,
        }) => {
            let cat = load_catalog(&cli)?;
            run_cmds::check_cmd(
                &cat,
                run,
                facts,
                baseline.as_deref(),
                device,
                *json,
                *all,
                cli.quiet,
                &style,
            )
        }
        Some(Command::Probe {
            id,
            run,
            facts,
            baseline,
            device,
            json,
        }) => {
            let cat = load_catalog(&cli)?;
            run_cmds::probe_cmd(
                &cat,
                id,
                run,
                facts,
                baseline.as_deref(),
                device,
                *json,
                &style,
            )
        }
        Some(Command::Probes {
            json,
            coverage,
            markdown,
        }) => {
            let cat = load_catalog(&cli)?;
            if *coverage {
                run_cmds::coverage_cmd(&cat, *json, *markdown, &style)
            } else {
                run_cmds::probes_cmd(&cat, *json, &style)
            }
        }
        Some(Command::Trees { json }) => {
            let cat = load_catalog(&cli)?;
            tree_cmds::trees(&cat, *json, &style)
        }
        Some(Command::Walk {
            tree,
            run,
            from,
            facts,
            answers,
            baseline,
            device,
            json,
        }) => {
            let cat = load_catalog(&cli)?;
            tree_cmds::walk(
                &cat,
                tree.as_deref(),
                from.as_deref(),
                run.as_deref(),
                facts,
                answers,
                baseline.as_deref(),
                device,
                *json,
                &style,
            )
        }
        Some(Command::Watch {
            run,
            until,
            interval,
            quiet_after,
            json,
            exec,
            facts,
            device,
        }) => {
            let cat = load_catalog(&cli)?;
            let args = watch_cmd::WatchArgs {
                run,
                until: *until,
                interval: *interval,
                quiet_after: *quiet_after,
                json: *json,
                exec: exec.as_deref(),
                facts,
                device,
                quiet: cli.quiet,
            };
            watch_cmd::watch_cmd(&cat, &args, &style)
        }
        Some(Command::Inspect { path, json }) => {
            inspect_cmd::inspect(path, *json, cli.quiet, &style)
        }
        Some(Command::Doctor { device, json }) => {
            let cat = load_catalog(&cli)?;
            doctor_cmd::doctor(&cat, device, cli.playbook.as_deref(), *json, &style)
        }
        None if cli.show_paths => {
            let keys = crate::app::action::keys_config_path()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "(no $XDG_CONFIG_HOME or $HOME)".into());
            catalog_cmds::emit(&format!("keys: {keys}\n"));
            Ok(0)
        }
        None => {
            let started = std::time::Instant::now();
            // Checked before the terminal is touched, so a typo is one line on stderr.
            let facts = run_cmds::parse_facts(&cli.facts)?;
            let device = match cli.device.as_deref() {
                Some(d) => d
                    .parse()
                    .map_err(|e: mltriage_probes::device::DeviceSyntaxError| {
                        UsageError(e.to_string())
                    })?,
                None => mltriage_probes::device::DeviceRequest::Auto,
            };
            // A run that is not there is an input error whatever stdout is (DESIGN §4.5),
            // never the catalog listing a pipe would otherwise get.
            if let Some(r) = &cli.run {
                if !r.exists() {
                    return Err(
                        UsageError(format!("{}: no such file or directory", r.display())).into(),
                    );
                }
            }
            let cat = load_catalog(&cli)?;
            use std::io::IsTerminal;
            if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
                let opts = crate::tui::TuiOptions {
                    run: cli.run.clone(),
                    facts,
                    device,
                    color: cli.color.tui_enabled(),
                    ascii: cli.ascii,
                    started,
                };
                return crate::tui::run(cat, opts);
            }
            if let Some(r) = &cli.run {
                // A run but no terminal to show it on (a pipe, a script): say what works.
                return Err(UsageError(format!(
                    "{}: the interactive UI needs a terminal; for plain output use `mltriage check {}`",
                    r.display(),
                    r.display()
                ))
                .into());
            }
            catalog_cmds::list(&cat, None, false, &style)
        }
    }
}
