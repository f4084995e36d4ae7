//! The `ratelockr` command line: parses arguments and calls into the engine.

mod cmd;
mod console;
mod opts;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmd::Cli::parse();
    quiet_on_closed_pipe();
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

/// A command whose output is piped into `head` ends quietly when the pipe closes, as Unix
/// tools do (status 141, as a shell reports a process ended by SIGPIPE), instead of printing a
/// panic. Rust ignores SIGPIPE, so `println!` panics on the closed pipe with std's own message;
/// that one panic is caught here (restoring the signal would take `unsafe`, forbidden here).
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info)
    }));
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
