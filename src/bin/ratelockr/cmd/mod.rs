//! One module per subcommand.

pub mod check;
pub mod stats;

use crate::opts::{Cli, Command};
use std::process::ExitCode;

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Check(args) => check::run(&cli.global, args).await,
        Command::Stats(args) => stats::run(&cli.global, args).await,
    }
}
