//! The command line: the global flags ([`crate::opts`]) and one subcommand, one module each;
//! each module owns its arguments (its clap `Args`) and runs them.

pub mod bench;
pub mod bench_api;
pub mod bench_memory;
pub mod bench_replay;
pub mod check;
pub mod check_policy;
pub mod policy_lines;
pub mod replay;
pub mod replay_changes;
pub mod reset;
pub mod serve;
pub mod simulate;
pub mod simulate_print;
pub mod simulate_sweep;
pub mod stats;
pub mod topology;

use crate::opts::Global;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "ratelockr",
    version,
    about = "See, tune and prove distributed rate limits on Redis"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make one rate-limit decision.
    Check(check::CheckArgs),
    /// Show the last 30 seconds of a rule's decisions.
    Stats(stats::StatsArgs),
    /// Delete a rule's limiter state (one client key, or all of them).
    Reset(reset::ResetArgs),
    /// Serve Prometheus metrics at /api/metrics (loopback by default).
    Serve(serve::ServeArgs),
    /// Decisions per second and latency through the engine, beside Redis's own ceiling.
    Bench(bench::BenchArgs),
    /// Offer a workload to one rule, or to all five algorithms side by side.
    Simulate(simulate::SimulateArgs),
    /// Decide a real log's requests on its own clock: whom would these limits have denied?
    Replay(replay::ReplayArgs),
    /// Which Redis this is: one node or a cluster (its nodes, slots and round trips), and TLS.
    Topology(topology::TopologyArgs),
    /// The HTTP load generator `bench --api` runs in a process of its own.
    #[command(hide = true)]
    BenchHttpLoad(bench_api::HttpLoadArgs),
}

/// Set when a signal stopped the command ([`run`]).
static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal stopped the command: work it left on other threads (a bench round on a
/// runtime of its own) is then abandoned rather than waited for.
pub fn stopped_by_signal() -> bool {
    STOPPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs the command. serve, simulate and replay stop by themselves on Ctrl-C or SIGTERM
/// (serve finishes the requests in flight; a run keeps what it sent). Any other command is
/// dropped at its next await on either signal: what it owns, an embedded Redis or cluster
/// included, is stopped and removed, and it exits with 130.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let stops_itself = matches!(
        cli.command,
        Command::Serve(_) | Command::Simulate(_) | Command::Replay(_) | Command::BenchHttpLoad(_)
    );
    if stops_itself {
        return dispatch(&cli).await;
    }
    let stop = crate::console::stop_signal();
    tokio::select! {
        biased;
        () = stop => {
            STOPPED.store(true, std::sync::atomic::Ordering::Relaxed);
            eprintln!("ratelockr: stopped by a signal (Ctrl-C or SIGTERM)");
            Ok(ExitCode::from(130))
        }
        result = dispatch(&cli) => result,
    }
}

async fn dispatch(cli: &Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Check(args) => check::run(&cli.global, args).await,
        Command::Stats(args) => stats::run(&cli.global, args).await,
        Command::Reset(args) => reset::run(&cli.global, args).await,
        Command::Serve(args) => serve::run(&cli.global, args).await,
        Command::Bench(args) => bench::run(&cli.global, args).await,
        Command::Simulate(args) => simulate::run(&cli.global, args).await,
        Command::Replay(args) => replay::run(&cli.global, args).await,
        Command::Topology(args) => topology::run(&cli.global, args).await,
        Command::BenchHttpLoad(args) => bench_api::run_load(args).await,
    }
}
