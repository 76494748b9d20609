//! Thin entry point: parse, run, and map errors to `mltriage: message` with exit code 2.

use clap::Parser;

fn main() {
    let cli = match mltriage::cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    match mltriage::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line: the first error in the chain carries the file and what is wrong.
            let msg = e.to_string().replace('\n', " ");
            eprintln!("mltriage: {msg}");
            std::process::exit(2);
        }
    }
}
