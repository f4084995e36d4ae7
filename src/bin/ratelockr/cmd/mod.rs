//! One module per subcommand.

pub mod bench;
pub mod bench_api;
pub mod bench_replay;
pub mod check;
pub mod replay;
pub mod reset;
pub mod serve;
pub mod simulate;
pub mod stats;
pub mod topology;

use crate::opts::{Cli, Command};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Check(args) => check::run(&cli.global, args).await,
        Command::Stats(args) => stats::run(&cli.global, args).await,
        Command::Reset(args) => reset::run(&cli.global, args).await,
        Command::Serve(args) => serve::run(&cli.global, args).await,
        Command::Bench(args) => bench::run(&cli.global, args).await,
        Command::Simulate(args) => simulate::run(&cli.global, args).await,
        Command::Replay(args) => replay::run(&cli.global, args).await,
        Command::Topology(args) => topology::run(&cli.global, args).await,
    }
}

/// Warns on stderr when the limiter's Redis does not answer a PING, saying why as every front
/// does ([`ratelockr::Limiter::diagnose`]: a plain-TCP Redis behind `rediss://` is named), so
/// that the decisions to come are known to fail open.
pub async fn warn_unless_redis_answers(limiter: &ratelockr::Limiter, command: &str) {
    if let Err(failure) = limiter.ping().await {
        eprintln!(
            "ratelockr {command}: warning: Redis at {} does not answer ({failure}); decisions will fail open. Use --embedded for a private Redis.",
            limiter.target()
        );
    }
}

/// A progress bar of `len` drawn with `template` on a terminal, hidden otherwise (stderr piped).
pub fn progress_bar(len: u64, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// A token that Ctrl-C cancels: a long run stops and keeps what it has.
pub fn cancel_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    cancel
}
