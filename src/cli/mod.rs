//! The command line: parse arguments (clap), load the catalog, dispatch to a command, and
//! map failures to exit codes (0 ok, 1 a check/probe found a fail, 2 usage or input error).

pub mod catalog_cmds;
pub mod style;

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
    },
    /// Show one entry (e.g. O9, S1.1).
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
    /// Validate a playbook directory (default: the embedded playbook).
    Lint { dir: Option<PathBuf> },
    /// Print shell completions.
    Completions { shell: clap_complete::Shell },
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

/// Run the parsed command line. Errors are printed by `main` as one line, exit 2.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let style = Style::detect(cli.color);
    match &cli.command {
        Some(Command::Lint { dir }) => catalog_cmds::lint(dir.as_deref()),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "mltriage",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
        Some(Command::Search {
            query,
            limit,
            domain,
            json,
        }) => {
            let cat = load_catalog(&cli)?;
            catalog_cmds::search(
                &cat,
                &query.join(" "),
                *limit,
                domain.as_deref(),
                *json,
                &style,
            )
        }
        Some(Command::Show { id, json }) => {
            let cat = load_catalog(&cli)?;
            catalog_cmds::show(&cat, id, *json, &style)
        }
        Some(Command::List { domain, json }) => {
            let cat = load_catalog(&cli)?;
            catalog_cmds::list(&cat, domain.as_deref(), *json, &style)
        }
        None => {
            let cat = load_catalog(&cli)?;
            catalog_cmds::list(&cat, None, false, &style)
        }
    }
}
