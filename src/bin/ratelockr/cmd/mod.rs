//! One module per subcommand.

pub mod bench;
pub mod bench_replay;
pub mod check;
pub mod replay;
pub mod reset;
pub mod serve;
pub mod simulate;
pub mod stats;

use crate::opts::{Cli, Command};
use std::process::ExitCode;

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Check(args) => check::run(&cli.global, args).await,
        Command::Stats(args) => stats::run(&cli.global, args).await,
        Command::Reset(args) => reset::run(&cli.global, args).await,
        Command::Serve(args) => serve::run(&cli.global, args).await,
        Command::Bench(args) => bench::run(&cli.global, args).await,
        Command::Simulate(args) => simulate::run(&cli.global, args).await,
        Command::Replay(args) => replay::run(&cli.global, args).await,
    }
}
