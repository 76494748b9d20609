//! Thin entry point: parse, run, and map errors to `mltriage: message` with exit code 2.

use clap::Parser;
use mltriage_probes::error::escape_controls;

fn main() {
    let cli = match mltriage::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            // One line, like every other error (no usage block).
            eprintln!("mltriage: {}", mltriage::cli::one_line_clap_error(&e));
            std::process::exit(2);
        }
        Err(e) => {
            // --help / --version: clap's own output; a closed pipe is not an error.
            let _ = e.print();
            std::process::exit(0);
        }
    };
    match mltriage::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line: the first error in the chain carries the file and what is wrong. A
            // path or argument in it is echoed with its control characters escaped.
            let msg = e.to_string().replace('\n', " ");
            eprintln!("mltriage: {}", escape_controls(&msg));
            std::process::exit(2);
        }
    }
}
