//! The `ratelockr` command line: parses arguments and calls into the engine.

mod cmd;
mod console;
mod opts;

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = parse();
    quiet_on_closed_pipe();
    // `check` says why its one decision failed open in its own line; the limiter's log line
    // would say it a second time.
    let default_filter = match cli.command {
        cmd::Command::Check(_) => "warn,ratelockr::limiter=off",
        // Each reload of --policies says what it changed, or why the file was refused.
        cmd::Command::Serve(_) => "warn,ratelockr::policy::watch=info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("ratelockr: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    // Ctrl-C and SIGTERM are listened for before the command starts anything.
    let stop = {
        let _runtime = runtime.enter();
        console::stop_token()
    };
    let code = match runtime.block_on(cmd::run(cli, stop.clone())) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ratelockr: {}", message(&err));
            ExitCode::from(2)
        }
    };
    if stop.is_cancelled() {
        // Work a stopped command left on other threads (a bench round on a runtime of its
        // own) is abandoned rather than waited for.
        runtime.shutdown_background();
    }
    code
}

/// The command line, every value-taking flag accepting a leading '-': `--limit -1` is then
/// refused by the flag's own check, naming it ("invalid value '-1' for '--limit <LIMIT>'"),
/// instead of clap's "unexpected argument '-1' found", which names nothing.
fn parse() -> cmd::Cli {
    fn negatives(command: clap::Command) -> clap::Command {
        command
            .mut_args(|arg| match arg.get_action().takes_values() {
                true => arg.allow_negative_numbers(true),
                false => arg,
            })
            .mut_subcommands(negatives)
    }
    let matches = negatives(cmd::Cli::command()).get_matches();
    cmd::Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
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
