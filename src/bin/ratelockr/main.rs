//! The `ratelockr` command line: parses arguments and calls into the engine.

mod cmd;
mod console;
mod opts;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("ratelockr: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cmd::run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ratelockr: {}", message(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, each cause left out where the message before it already says it
/// (an engine error's text includes its source; `{:#}` would print that twice).
fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
