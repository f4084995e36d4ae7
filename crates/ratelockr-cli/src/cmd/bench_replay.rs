//! `ratelockr bench --replay`: the replay's figures for docs/benchmarks.md, on logs generated
//! in a temporary directory and deleted afterwards.

use crate::console::print_json;
use crate::opts::Global;
use ratelockr_cli::bench::ceiling::{self, RedisBenchmark};
use ratelockr_cli::bench::replay::{self, ParseFigure, ReplayFigure};
use ratelockr_cli::bench::Conditions;
use serde::Serialize;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// What `bench --replay` measures: `bench`'s flags that it reads.
#[derive(Debug)]
pub struct ReplayBenchArgs {
    /// Lines of the generated log for parsing and the end-to-end run.
    pub replay_lines: u64,
    /// Lines of the generated log the 25-configuration sweep replays.
    pub sweep_lines: u64,
    /// Seconds redis-benchmark runs the same script, for the ceiling.
    pub duration_secs: u64,
}

#[derive(Debug, Serialize)]
struct Output {
    conditions: Conditions,
    lines: u64,
    log_mib: f64,
    parse: ParseFigure,
    end_to_end: ReplayFigure,
    ceiling: Option<ceiling::CeilingReport>,
    /// End-to-end decisions per second ÷ redis-benchmark's calls per second, same script.
    replay_to_ceiling: Option<f64>,
    ceiling_note: Option<String>,
    sweep: ReplayFigure,
}

pub async fn run(global: &Global, args: &ReplayBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.replay_lines >= 1000,
        "invalid --replay-lines: at least 1000"
    );
    anyhow::ensure!(
        args.sweep_lines >= 1000,
        "invalid --sweep-lines: at least 1000"
    );
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let conditions = Conditions::probe(&mut limiter.connection()).await;
    let dir = std::env::temp_dir().join(format!("ratelockr-replay-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(&limiter, args, &dir, conditions, global.json).await;
    let _ = std::fs::remove_dir_all(&dir);
    let output = result?;
    if global.json {
        print_json(&output)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn measure(
    limiter: &ratelockr::Limiter,
    args: &ReplayBenchArgs,
    dir: &std::path::Path,
    conditions: Conditions,
    json: bool,
) -> anyhow::Result<Output> {
    let say = |s: String| {
        if !json {
            println!("{s}");
        }
    };
    let big = dir.join("big.log");
    let written = Instant::now();
    let bytes = replay::write_log(&big, args.replay_lines)?;
    say(format!(
        "generated {} lines ({:.0} MiB) in {:.1} s",
        args.replay_lines,
        bytes as f64 / 1048576.0,
        written.elapsed().as_secs_f64()
    ));

    let path = big.clone();
    let parse = tokio::task::spawn_blocking(move || replay::parse_only(&path, bytes)).await??;
    say(format!(
        "parse (one thread: read, parse, key, sort, spread): {:.0} lines/s, {:.0} MiB/s, {:.2} s",
        parse.lines_per_sec, parse.mib_per_sec, parse.secs
    ));

    let end_to_end = replay::replay_figure(limiter, &big, replay::bench_rule(), Vec::new()).await?;
    say(format!(
        "end to end through {} (capacity 20, 2/s): {} lines in {:.2} s, {:.0} decisions/s, {} denied, peak RSS {}",
        replay::bench_rule().name(),
        end_to_end.lines,
        end_to_end.secs,
        end_to_end.decisions_per_sec,
        end_to_end.denied,
        end_to_end
            .peak_rss_mib
            .map_or("?".into(), |m| format!("{m:.0} MiB"))
    ));

    let (ceiling, ceiling_note) = match RedisBenchmark::locate(limiter.target()) {
        Ok(rb) => {
            let c = replay::ceiling_figure(&rb, limiter, Duration::from_secs(args.duration_secs))
                .await?;
            say(format!(
                "ceiling: redis-benchmark, the same script and arguments: {:.0} calls/s\n  {}",
                c.calls_per_sec, c.command
            ));
            (Some(c), None)
        }
        Err(why) => {
            say(format!("no ceiling measured: {why}"));
            (None, Some(why.to_string()))
        }
    };
    let replay_to_ceiling = ceiling
        .as_ref()
        .map(|c| end_to_end.decisions_per_sec / c.calls_per_sec);
    if let Some(r) = replay_to_ceiling {
        say(format!("replay ÷ ceiling: {r:.2}"));
    }

    let small = dir.join("sweep.log");
    replay::write_log(&small, args.sweep_lines)?;
    let sweep =
        replay::replay_figure(limiter, &small, replay::bench_rule(), replay::sweep_grid()).await?;
    say(format!(
        "sweep: {} lines × {} configurations (the rule and a 5 × 5 grid of capacity × refill) = {} decisions in {:.2} s, {:.0} decisions/s, peak RSS {}",
        sweep.lines,
        sweep.configurations,
        sweep.decisions,
        sweep.secs,
        sweep.decisions_per_sec,
        sweep.peak_rss_mib.map_or("?".into(), |m| format!("{m:.0} MiB"))
    ));
    say(format!(
        "  ({} cores, {}; Redis {}; {} UTC; load average {})",
        conditions.cores,
        conditions.cpu,
        conditions.redis_version,
        conditions.date,
        conditions
            .load_average
            .map_or_else(|| "?".into(), |l| format!("{l:.2}"))
    ));
    Ok(Output {
        conditions,
        lines: args.replay_lines,
        log_mib: bytes as f64 / 1048576.0,
        parse,
        end_to_end,
        ceiling,
        replay_to_ceiling,
        ceiling_note,
        sweep,
    })
}
