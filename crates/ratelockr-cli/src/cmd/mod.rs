//! The command line: the global flags ([`crate::opts`]) and one subcommand, one module each;
//! each module owns its arguments (its clap `Args`) and runs them.

pub mod bench;
pub mod bench_api;
pub mod bench_memory;
pub mod bench_replay;
pub mod check;
pub mod check_policy;
pub mod policy_lines;
pub mod policy_target;
pub mod release;
pub mod replay;
pub mod replay_changes;
pub mod reset;
pub mod serve;
pub mod settle;
pub mod simulate;
pub mod simulate_print;
pub mod simulate_sweep;
pub mod stats;
pub mod topology;

use crate::opts::Global;
use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

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
    /// Give back (or --renew) the lease a check under concurrency limits took.
    Release(release::ReleaseArgs),
    /// Charge a request decided with an estimate its actual cost, in every limit of its policy.
    Settle(settle::SettleArgs),
    /// Show the last 30 seconds of a rule's decisions.
    Stats(stats::StatsArgs),
    /// Delete a rule's limiter state (one client key, or all of them).
    Reset(reset::ResetArgs),
    /// Serve the decision endpoint (POST /api/check) and Prometheus metrics (/api/metrics), on loopback by default.
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

/// Runs the command; `stop` ([`crate::console::stop_token`]) is cancelled by Ctrl-C or
/// SIGTERM. serve, simulate and replay stop by themselves on it (serve finishes the requests in
/// flight; a run keeps what it sent). Any other command is dropped at its next await: what it
/// owns, an embedded Redis or cluster included, is stopped and removed, and it exits with 130.
pub async fn run(cli: Cli, stop: CancellationToken) -> anyhow::Result<ExitCode> {
    use std::future::Future;
    let global = &cli.global;
    let command: std::pin::Pin<Box<dyn Future<Output = anyhow::Result<ExitCode>> + Send + '_>> =
        match &cli.command {
            Command::Serve(args) => return serve::run(global, args, stop.cancelled_owned()).await,
            Command::Simulate(args) => return simulate::run(global, args, stop).await,
            Command::Replay(args) => return replay::run(global, args, stop).await,
            Command::Check(args) => Box::pin(check::run(global, args)),
            Command::Release(args) => Box::pin(release::run(global, args)),
            Command::Settle(args) => Box::pin(settle::run(global, args)),
            Command::Stats(args) => Box::pin(stats::run(global, args)),
            Command::Reset(args) => Box::pin(reset::run(global, args)),
            Command::Bench(args) => Box::pin(bench::run(global, args)),
            Command::Topology(args) => Box::pin(topology::run(global, args)),
            Command::BenchHttpLoad(args) => Box::pin(bench_api::run_load(args)),
        };
    tokio::select! {
        biased;
        () = stop.cancelled() => {
            eprintln!("ratelockr: stopped by a signal (Ctrl-C or SIGTERM)");
            Ok(ExitCode::from(130))
        }
        result = command => result,
    }
}
