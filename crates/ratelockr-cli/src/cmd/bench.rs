//! `ratelockr bench`: the engine's throughput and latency beside Redis's own ceiling.

use super::bench_api::{self, ApiBenchArgs};
use super::bench_replay::{self, ReplayBenchArgs};
use crate::console::print_json;
use crate::opts::{AlgorithmArg, Global};
use clap::Args;
use ratelockr::{AlgorithmKind, Limiter, Metrics};
use ratelockr_cli::bench::{
    self, ceiling, engine::EngineBench, lua_cost, lua_profile, stats, Conditions,
};
use serde::Serialize;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The most decisions `bench` keeps in flight in process: past a few hundred Redis's one
/// thread is the limit, and past this the tasks only cost memory.
const MAX_CONCURRENCY: usize = 65_536;
/// The most keep-alive connections `bench --api` opens to its own endpoint: each is two open
/// files of this process (the client's end and the server's), under the common limit of 1024.
const MAX_API_CONNECTIONS: usize = 400;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The algorithm to measure; repeat it, or leave it out for all five.
    #[arg(long, value_enum)]
    pub algorithm: Vec<AlgorithmArg>,
    /// Seconds measured per run, warm-up excluded.
    #[arg(long, default_value_t = 3)]
    pub duration_secs: u64,
    /// Decisions in flight at once (tasks sharing the limiter's one connection). 256 keeps
    /// Redis as busy as the ceiling's 800 pipelined calls do; fewer trade throughput for
    /// latency (docs/benchmarks.md).
    #[arg(long, default_value_t = 256)]
    pub concurrency: usize,
    /// Seconds of warm-up before each measured run.
    #[arg(long, default_value_t = 1)]
    pub warmup_secs: u64,
    /// Distinct client keys, the same for the engine and the ceiling.
    #[arg(long, default_value_t = 10_000)]
    pub keys: usize,
    /// Worker threads of the runtime that drives the engine (1: a current-thread runtime,
    /// the right shape when Redis takes the other core of a 2-core machine).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Engine and ceiling runs, alternated; medians reported.
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Skip the redis-benchmark ceiling.
    #[arg(long)]
    pub no_ceiling: bool,
    /// Also measure each script's Redis-side cost beside a plain INCR, a trivial EVALSHA and
    /// peers' scripts (redis-benchmark), and profile the pieces scripts are made of.
    #[arg(long)]
    pub lua: bool,
    /// Interleaved rounds of the Lua-cost runs (one second each per script); medians and
    /// paired ratios are taken over them.
    #[arg(long, default_value_t = 9)]
    pub lua_rounds: usize,
    /// A directory of earlier versions of the scripts (`token_bucket.lua`, ...) to measure
    /// beside the current ones in the same `--lua` rounds: before/after in one run.
    #[arg(long, requires = "lua")]
    pub lua_before: Option<std::path::PathBuf>,
    /// Also show that reading stats costs the same with a million keys in Redis (starts its
    /// own redis-server).
    #[arg(long)]
    pub stats: bool,
    /// Replay benchmarks instead (a log generated in a temporary directory): parsing on one
    /// core, the log end to end through a token bucket beside redis-benchmark running the
    /// same script, and a sweep of 25 configurations.
    #[arg(long)]
    pub replay: bool,
    /// Lines of the generated log for parsing and the end-to-end run.
    #[arg(long, default_value_t = 1_000_000, requires = "replay")]
    pub replay_lines: u64,
    /// Lines of the generated log the 25-configuration sweep replays.
    #[arg(long, default_value_t = 100_000, requires = "replay")]
    pub sweep_lines: u64,
    /// Turn the local deny cache on: what Redis has denied is denied in process until the time
    /// Redis named (docs/benchmarks.md, "Under attack").
    #[arg(long)]
    pub deny_cache: bool,
    /// An attack mix: this percentage of requests comes from --attackers keys that are soon
    /// over their limit; the rest from the ordinary --keys. Use with --deny-cache.
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=100))]
    pub attack: Option<u16>,
    /// Attacking keys in the --attack mix.
    #[arg(long, default_value_t = 100)]
    pub attackers: usize,
    /// Decisions over HTTP keep-alive instead: `serve`'s POST /api/check started in process on
    /// a loopback port, driven by --concurrency keep-alive connections, beside the engine's
    /// in-process figure (same rule, keys and concurrency) in each round. Token bucket unless
    /// --algorithm says otherwise.
    #[arg(long, conflicts_with_all = ["replay", "attack", "deny_cache", "lua", "stats"])]
    pub api: bool,
    /// With --api: decisions per request of the batch form (POST /api/check/batch), measured
    /// in the same rounds with --concurrency / --batch connections, so as many decisions are
    /// in flight as in the other two figures.
    #[arg(long, default_value_t = 32, requires = "api")]
    pub batch: usize,
    /// Measure a failover instead, on a private 3-master, 3-replica cluster it starts: the
    /// master of a rule is killed (SIGKILL) after 3 s of decisions; deciding goes on for
    /// --duration-secs (docs/cluster.md).
    #[arg(long, conflicts_with = "cluster_reshard")]
    pub cluster_failover: bool,
    /// Measure a resharding instead: --reshard-slots slots move between masters mid-run.
    #[arg(long)]
    pub cluster_reshard: bool,
    /// Measure what one client key of a sliding window log holds in Redis (MEMORY USAGE),
    /// full at limits of 10, 100, 129 and 1,000, beside the estimate the warnings give.
    #[arg(long, conflicts_with_all = ["replay", "api", "cluster_failover", "cluster_reshard"])]
    pub memory: bool,
    /// Slots moved by --cluster-reshard.
    #[arg(long, default_value_t = 2000)]
    pub reshard_slots: u16,
}

#[derive(Debug, Serialize)]
struct AlgorithmResult {
    algorithm: &'static str,
    decisions_per_sec: f64,
    p50_us: f64,
    p95_us: f64,
    p99_us: f64,
    max_us: f64,
    decisions: u64,
    allowed: u64,
    denied: u64,
    /// Redis failures: no decision was made (each would have failed open).
    errors: u64,
    /// Decisions the local deny cache made without Redis.
    cache_denied: u64,
    /// Decisions Redis made per second (median over rounds).
    redis_decisions_per_sec: f64,
    deny_cache: bool,
    /// The attack mix's share of requests, percent.
    attack_pct: Option<u16>,
    /// The attack mix as achieved over every round: the attack's share, and ordinary
    /// decisions denied (0 when ordinary keys stayed under their limit, as they should).
    #[serde(skip_serializing_if = "Option::is_none")]
    achieved_mix: Option<bench::engine::AchievedMix>,
    concurrency: usize,
    keys: usize,
    threads: usize,
    /// Redis running the same EVALSHA under redis-benchmark, calls per second.
    ceiling_per_sec: Option<f64>,
    /// The median over rounds of engine ÷ ceiling, each pair measured back to back.
    engine_to_ceiling: Option<f64>,
    /// Every round's engine ÷ ceiling, in round order: on a shared machine the spread says
    /// as much as the median.
    engine_to_ceiling_rounds: Vec<f64>,
    ceiling_command: Option<String>,
    /// CPU this process spent per decision (engine, runtime and benchmark loop), µs.
    client_cpu_us_per_decision: Option<f64>,
    /// CPU Redis spent per decision made through the engine, µs.
    redis_cpu_us_per_decision: Option<f64>,
    /// CPU Redis spent per call under redis-benchmark, µs.
    ceiling_redis_cpu_us_per_call: Option<f64>,
    rounds: Vec<bench::engine::EngineReport>,
    ceiling_rounds: Vec<f64>,
}

#[derive(Debug, Serialize)]
struct Output {
    conditions: Conditions,
    ceiling_note: Option<String>,
    results: Vec<AlgorithmResult>,
    lua: Option<Vec<lua_cost::LuaCost>>,
    /// Where Redis and redis-benchmark ran during the Lua costs (`--lua`).
    lua_pinning: Option<String>,
    /// Paired per-round ratios of Redis CPU per call (`--lua`).
    lua_comparisons: Option<Vec<lua_cost::PairedRatio>>,
    /// Issue 24's ratios, paired per round, on the time in the command (`--lua`).
    lua_goals: Option<Vec<lua_cost::PairedRatio>>,
    /// What each piece of a script costs inside Redis (`--lua`).
    lua_profile: Option<Vec<lua_profile::PieceCost>>,
    stats: Option<stats::StatsReport>,
}

pub async fn run(global: &Global, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    if args.replay {
        let replay = ReplayBenchArgs {
            replay_lines: args.replay_lines,
            sweep_lines: args.sweep_lines,
            duration_secs: args.duration_secs,
        };
        return bench_replay::run(global, &replay).await;
    }
    if args.memory {
        return super::bench_memory::run(global).await;
    }
    if args.cluster_failover || args.cluster_reshard {
        return cluster(global, args).await;
    }
    anyhow::ensure!(
        args.duration_secs >= 1,
        "invalid --duration-secs: must be at least 1"
    );
    // In process, each decision in flight is a task and a queued command on the one
    // connection; over HTTP each is a keep-alive connection, and the server's end of it a
    // second file descriptor in this same process.
    let most = if args.api {
        MAX_API_CONNECTIONS
    } else {
        MAX_CONCURRENCY
    };
    anyhow::ensure!(
        (1..=most).contains(&args.concurrency),
        "invalid --concurrency: must be from 1 to {most}{}, got {}",
        if args.api {
            " with --api (each is a connection, and its server end a second open file of this process)"
        } else {
            ""
        },
        args.concurrency
    );
    anyhow::ensure!(args.keys >= 1, "invalid --keys: must be at least 1");
    if args.api {
        let api = ApiBenchArgs {
            algorithm: args.algorithm.clone(),
            duration_secs: args.duration_secs,
            warmup_secs: args.warmup_secs,
            concurrency: args.concurrency,
            keys: args.keys,
            threads: args.threads,
            rounds: args.rounds,
            batch: args.batch,
        };
        return bench_api::run(global, &api).await;
    }
    anyhow::ensure!(
        args.attackers >= 1,
        "invalid --attackers: must be at least 1"
    );
    let kinds: Vec<AlgorithmKind> = if args.algorithm.is_empty() {
        AlgorithmKind::RATES.to_vec()
    } else {
        args.algorithm.iter().map(|&a| a.into()).collect()
    };
    let backend = global.backend()?;
    let metrics = Metrics::new();
    let mut options = global.limiter_options()?;
    if args.deny_cache {
        options.deny_cache = Some(ratelockr::DenyCacheOptions::default());
    }
    let limiter: Limiter =
        Limiter::new(backend.target(), options).with_observer(Arc::new(metrics.clone()));
    let cluster = limiter.target().is_cluster();
    anyhow::ensure!(
        !(cluster && (args.lua || args.stats || args.replay)),
        "--lua, --stats and --replay measure one Redis; against a cluster, bench measures decisions beside redis-benchmark --cluster"
    );
    let conditions = Conditions::probe(&mut limiter.connection()).await;
    let redis_benchmark = match args.no_ceiling {
        true => Err(ceiling::NoCeiling::Disabled),
        false => ceiling::RedisBenchmark::locate(limiter.target()),
    };
    let note = redis_benchmark.as_ref().err().map(ToString::to_string);
    if let Some(why) = &note {
        eprintln!("ratelockr bench: no ceiling measured: {why}");
    }

    let mut results = Vec::new();
    for kind in kinds {
        let rule = match args.attack {
            Some(_) => bench::attack_rule(kind)?,
            None => bench::bench_rule(kind)?,
        };
        // On a cluster: a copy of the rule on every master, and the ceiling's keys in the
        // `{tag}` redis-benchmark --cluster rewrites per call to a slot of its connection's master.
        let (rules, ceiling_rule) = match cluster {
            true => (
                ceiling::cluster_rules(&mut limiter.connection(), &rule).await?,
                ratelockr::Rule::new(ceiling::CLUSTER_TAG_RULE, *rule.algorithm())?,
            ),
            false => (vec![rule.clone()], rule.clone()),
        };
        let run = EngineBench {
            rules,
            concurrency: args.concurrency,
            keys: args.keys,
            warmup: Duration::from_secs(args.warmup_secs),
            duration: Duration::from_secs(args.duration_secs),
            attack: args.attack.map(|pct| bench::engine::Attack {
                per_mille: pct * 10,
                attackers: args.attackers,
            }),
        };
        let (script_keys, script_args) =
            ceiling::engine_command(&ceiling_rule, limiter.keys(), true);
        let sha = match &redis_benchmark {
            Ok(_) => {
                let source = ratelockr::scripts::source(kind);
                ceiling::cache_script(
                    &mut limiter.connection(),
                    source,
                    &script_keys,
                    &script_args,
                )
                .await?
            }
            Err(_) => String::new(),
        };
        let mut rounds = Vec::new();
        let mut ceilings = Vec::new();
        let mut command = None;
        let mut ceiling_cpu = Vec::new();
        let mut conn = limiter.connection();
        for _ in 0..args.rounds.max(1) {
            rounds.push(run.run_on_own_runtime(&limiter, args.threads).await?);
            if let Ok(rb) = &redis_benchmark {
                // A short run warms Redis up and sizes the measured one to the duration.
                let (label, k, a) = (kind.as_str(), &script_keys, &script_args);
                let probe = rb.evalsha(label, &sha, k, a, 20_000, args.keys).await?;
                let requests =
                    (probe.calls_per_sec * args.duration_secs as f64).max(20_000.0) as u64;
                let before = bench::redis_cpu_secs(&mut conn).await;
                let c = rb.evalsha(label, &sha, k, a, requests, args.keys).await?;
                let after = bench::redis_cpu_secs(&mut conn).await;
                if let (Some(b), Some(a)) = (before, after) {
                    ceiling_cpu.push((a - b) * 1e6 / requests as f64);
                }
                ceilings.push(c.calls_per_sec);
                command = Some(c.command);
            }
        }
        let med = |f: fn(&bench::engine::EngineReport) -> f64| {
            ceiling::median(rounds.iter().map(f).collect())
        };
        let decisions_per_sec = med(|r| r.decisions_per_sec);
        let ceiling_per_sec = (!ceilings.is_empty()).then(|| ceiling::median(ceilings.clone()));
        // Each round's engine run is paired with the ceiling run right after it, so a noisy
        // neighbour weighs on both; the median of the paired ratios is reported.
        let paired: Vec<f64> = rounds
            .iter()
            .zip(&ceilings)
            .map(|(e, c)| e.decisions_per_sec / c)
            .collect();
        results.push(AlgorithmResult {
            algorithm: kind.as_str(),
            decisions_per_sec,
            p50_us: med(|r| r.p50_us),
            p95_us: med(|r| r.p95_us),
            p99_us: med(|r| r.p99_us),
            max_us: med(|r| r.max_us),
            decisions: rounds.iter().map(|r| r.decisions).sum(),
            allowed: rounds.iter().map(|r| r.allowed).sum(),
            denied: rounds.iter().map(|r| r.denied).sum(),
            errors: rounds.iter().map(|r| r.errors).sum(),
            cache_denied: rounds.iter().map(|r| r.cache_denied).sum(),
            redis_decisions_per_sec: med(|r| r.redis_decisions_per_sec),
            deny_cache: args.deny_cache,
            attack_pct: args.attack,
            achieved_mix: args.attack.map(|_| {
                let mixes: Vec<_> = rounds.iter().filter_map(|r| r.mix).collect();
                let attack: u64 = mixes.iter().map(|m| m.attack).sum();
                let ordinary: u64 = mixes.iter().map(|m| m.ordinary).sum();
                bench::engine::AchievedMix {
                    attack,
                    ordinary,
                    ordinary_denied: mixes.iter().map(|m| m.ordinary_denied).sum(),
                    attack_pct: 100.0 * attack as f64 / (attack + ordinary).max(1) as f64,
                }
            }),
            concurrency: args.concurrency,
            keys: args.keys,
            threads: args.threads,
            ceiling_per_sec,
            engine_to_ceiling: (!paired.is_empty()).then(|| ceiling::median(paired.clone())),
            engine_to_ceiling_rounds: paired,
            ceiling_command: command,
            client_cpu_us_per_decision: opt_median(
                rounds.iter().map(|r| r.client_cpu_us_per_decision),
            ),
            redis_cpu_us_per_decision: opt_median(
                rounds.iter().map(|r| r.redis_cpu_us_per_decision),
            ),
            ceiling_redis_cpu_us_per_call: opt_median(ceiling_cpu.iter().map(|&c| Some(c))),
            rounds,
            ceiling_rounds: ceilings,
        });
        if !global.json {
            print_result(results.last().expect("just pushed"));
        }
    }

    // The Lua-cost readings and the profile's loops go through a connection of their own with a
    // patient timeout: on a loaded machine one INFO or one 20,000-iteration loop can take
    // longer than a decision's deadline, and that is no reason to lose the run.
    let mut lua_options = global.limiter_options()?;
    lua_options.deadline = Duration::from_secs(30);
    let lua_conn = || Limiter::new(backend.target(), lua_options.clone()).connection();
    // A Redis this process started is pinned to a core of its own for the Lua costs, and
    // redis-benchmark to another: the rounds agree far better (bench::pin).
    let pinning = match args.lua {
        true => backend
            .embedded_server()
            .and_then(|server| bench::pin::Pinning::redis(server.pid())),
        false => None,
    };
    let lua_pinning = args.lua.then(|| match &pinning {
        Some(p) => p.describe(),
        None => "not pinned (only an --embedded Redis on two or more cores is)".to_string(),
    });
    let lua = match (&redis_benchmark, args.lua) {
        (Ok(rb), true) => Some(
            lua_cost::lua_costs(
                &match &pinning {
                    Some(p) => rb.pinned(p),
                    None => rb.clone(),
                },
                &mut lua_conn(),
                limiter.keys(),
                args.keys,
                Duration::from_secs(1),
                args.lua_rounds.max(1),
                args.lua_before.as_deref(),
            )
            .await?,
        ),
        _ => None,
    };
    let profile = match args.lua {
        true => Some(
            lua_profile::lua_profile(
                &mut lua_conn(),
                limiter.keys(),
                20_000,
                args.lua_rounds.max(1),
            )
            .await?,
        ),
        false => None,
    };
    drop(pinning);
    let stats = match args.stats {
        true => Some(stats::run(2_000, 1_000_000).await?),
        false => None,
    };

    let output = Output {
        conditions,
        ceiling_note: note,
        results,
        lua_comparisons: lua.as_deref().map(lua_cost::lua_comparisons),
        lua_goals: lua.as_deref().map(lua_cost::goal_ratios),
        lua,
        lua_pinning,
        lua_profile: profile,
        stats,
    };
    if global.json {
        if output.results.len() == 1 && output.lua.is_none() && output.stats.is_none() {
            // One algorithm: its figures at the top level, as design.md promises.
            let mut value = serde_json::to_value(&output.results[0])?;
            value["conditions"] = serde_json::to_value(&output.conditions)?;
            print_json(&value)?;
        } else {
            print_json(&output)?;
        }
    } else {
        print_tail(&output);
    }
    Ok(ExitCode::SUCCESS)
}

/// The median of the figures that exist, if any does.
fn opt_median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let values: Vec<f64> = values.flatten().collect();
    (!values.is_empty()).then(|| ceiling::median(values))
}

fn print_result(r: &AlgorithmResult) {
    let ceiling = match (r.ceiling_per_sec, r.engine_to_ceiling) {
        (Some(c), Some(ratio)) => format!(
            "  ceiling {c:>9.0}/s  engine/ceiling {ratio:.2} (rounds {})",
            crate::console::rounds_text(&r.engine_to_ceiling_rounds)
        ),
        _ => String::new(),
    };
    println!(
        "{:<19} {:>9.0} decisions/s  p50 {:>6.0} us  p95 {:>6.0} us  p99 {:>6.0} us  errors {}{ceiling}",
        r.algorithm, r.decisions_per_sec, r.p50_us, r.p95_us, r.p99_us, r.errors
    );
    if r.deny_cache || r.attack_pct.is_some() {
        println!(
            "{:<19} attack {}% of requests from a few keys; deny cache {}: {} decisions made in process, Redis decided {:.0}/s",
            "",
            r.attack_pct.unwrap_or(0),
            if r.deny_cache { "on" } else { "off" },
            r.cache_denied,
            r.redis_decisions_per_sec
        );
    }
    if let Some(mix) = &r.achieved_mix {
        println!(
            "{:<19} achieved mix: {:.1}% attack ({} attack, {} ordinary decisions); ordinary denied {}",
            "", mix.attack_pct, mix.attack, mix.ordinary, mix.ordinary_denied
        );
    }
    let cpu = |v: Option<f64>| v.map_or_else(|| "?".to_string(), |v| format!("{v:.1}"));
    println!(
        "{:<19} CPU per decision: this process {} us, Redis {} us (Redis under redis-benchmark: {} us)",
        "",
        cpu(r.client_cpu_us_per_decision),
        cpu(r.redis_cpu_us_per_decision),
        cpu(r.ceiling_redis_cpu_us_per_call)
    );
}

fn print_tail(output: &Output) {
    let c = &output.conditions;
    println!(
        "  (concurrency {}, {} keys, {} runtime thread(s); {} cores, {}; Redis {}; {} UTC; load average {})",
        output.results.first().map_or(0, |r| r.concurrency),
        output.results.first().map_or(0, |r| r.keys),
        output.results.first().map_or(0, |r| r.threads),
        c.cores,
        c.cpu,
        c.redis_version,
        c.date,
        c.load_average.map_or_else(|| "?".into(), |l| format!("{l:.2}"))
    );
    if let Some(costs) = &output.lua {
        println!(
            "\nLua cost (redis-benchmark, medians; × = against a plain INCR in the same rounds; {}):",
            output.lua_pinning.as_deref().unwrap_or("not pinned")
        );
        let us = |v: Option<f64>, x: Option<f64>| match (v, x) {
            (Some(v), Some(x)) => format!("{v:>6.2} us = {x:>5.2}x"),
            _ => format!("{:>17}", "?"),
        };
        println!(
            "  {:<50} {:>9}  {:>17}  {:>17}",
            "script", "calls/s", "in the command", "Redis CPU"
        );
        for cost in costs {
            println!(
                "  {:<50} {:>9.0}  {}  {}",
                cost.script,
                cost.calls_per_sec,
                us(cost.usec_per_call, cost.relative_usec),
                us(cost.redis_cpu_us_per_call, cost.relative_cpu)
            );
        }
    }
    let pairs = output.lua_goals.iter().chain(&output.lua_comparisons);
    for pair in pairs.flatten() {
        println!(
            "  {} ({}, paired by round): median {:.2} (range {:.2}–{:.2}; at most 1.00 in {} of {} rounds; difference {:+.2} us)",
            pair.label,
            pair.measure,
            pair.median,
            pair.min,
            pair.max,
            pair.rounds_at_most_one,
            pair.rounds,
            pair.median_difference_us
        );
    }
    if let Some(pieces) = &output.lua_profile {
        println!("\nInside Redis, per piece (a loop in one script, the empty loop subtracted; medians, us):");
        for piece in pieces {
            println!("  {:<45} {:>6.3}", piece.piece, piece.us);
        }
    }
    if let Some(s) = &output.stats {
        println!(
            "\nStats read (30 s = 60 GETs in one pipeline), two private redis-servers, {} alternating rounds:",
            s.rounds
        );
        for run in [&s.empty, &s.populated] {
            println!(
                "  {:>8} keys in Redis  {:>7.0} reads/s  p50 {:>5.0} us  p99 {:>5.0} us",
                run.keys_in_redis, run.reads_per_sec, run.p50_us, run.p99_us
            );
        }
        println!(
            "  with a million keys ÷ empty: p50 {:.2}, throughput {:.2}",
            s.p50_ratio, s.throughput_ratio
        );
    }
}

/// `--cluster-failover` / `--cluster-reshard`: a disruption mid-run on a private cluster.
async fn cluster(global: &Global, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.duration_secs >= 1,
        "invalid --duration-secs: must be at least 1"
    );
    let disruption = match args.cluster_failover {
        true => bench::cluster::Disruption::Failover,
        false => bench::cluster::Disruption::Reshard {
            slots: args.reshard_slots,
        },
    };
    let run = bench::cluster::ClusterBench {
        disruption,
        tasks: args.concurrency.clamp(1, 64),
        rules: 30,
        keys: 10,
        // Clients are midway through their allowance when the master dies, and past it by
        // the end: writes lost with the master show up as admissions beyond the limit.
        limit: 40,
        before: Duration::from_secs(3),
        after: Duration::from_secs(args.duration_secs),
        deadline: Duration::from_millis(global.deadline_ms),
    };
    let report = run.run().await?;
    if global.json {
        print_json(&report)?;
    } else {
        println!("{report:#?}");
    }
    Ok(ExitCode::SUCCESS)
}
