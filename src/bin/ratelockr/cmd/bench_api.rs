//! `ratelockr bench --api`: decisions per second over HTTP keep-alive through `serve`'s
//! `POST /api/check` (started in process on a loopback port), beside the engine's in-process
//! figure for the same rule, keys and concurrency, measured back to back in each round.

use crate::console::print_json;
use crate::opts::{AlgorithmArg, Global};
use ratelockr::bench::api::{ApiBench, ApiReport};
use ratelockr::bench::ceiling::median;
use ratelockr::bench::engine::{EngineBench, EngineReport};
use ratelockr::bench::{self, Conditions};
use ratelockr::AlgorithmKind;
use serde::Serialize;
use std::process::ExitCode;
use std::time::Duration;

/// What `bench --api` measures: `bench`'s flags that it reads, checked there.
#[derive(Debug)]
pub struct ApiBenchArgs {
    /// The algorithms to measure (none: the token bucket).
    pub algorithm: Vec<AlgorithmArg>,
    pub duration_secs: u64,
    pub warmup_secs: u64,
    /// Engine tasks, and as many keep-alive connections.
    pub concurrency: usize,
    pub keys: usize,
    pub threads: usize,
    pub rounds: usize,
}

#[derive(Debug, Serialize)]
struct Result {
    algorithm: &'static str,
    /// Medians over rounds.
    engine_decisions_per_sec: f64,
    api_decisions_per_sec: f64,
    /// The median of each round's API ÷ engine.
    api_to_engine: f64,
    api_to_engine_rounds: Vec<f64>,
    api_p50_us: f64,
    api_p99_us: f64,
    engine_p50_us: f64,
    engine_p99_us: f64,
    api_errors: u64,
    engine_errors: u64,
    concurrency: usize,
    keys: usize,
    threads: usize,
    engine_rounds: Vec<EngineReport>,
    api_rounds: Vec<ApiReport>,
}

#[derive(Debug, Serialize)]
struct Output {
    conditions: Conditions,
    results: Vec<Result>,
}

pub async fn run(global: &Global, args: &ApiBenchArgs) -> anyhow::Result<ExitCode> {
    let kinds: Vec<AlgorithmKind> = if args.algorithm.is_empty() {
        vec![AlgorithmKind::TokenBucket]
    } else {
        args.algorithm.iter().map(|&a| a.into()).collect()
    };
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let conditions = Conditions::probe(&mut limiter.connection()).await;
    let (warmup, duration) = (
        Duration::from_secs(args.warmup_secs),
        Duration::from_secs(args.duration_secs),
    );
    let mut results = Vec::new();
    for kind in kinds {
        let rule = bench::bench_rule(kind)?;
        let engine = EngineBench {
            rules: vec![rule.clone()],
            concurrency: args.concurrency,
            keys: args.keys,
            warmup,
            duration,
            attack: None,
        };
        let api = ApiBench {
            rule,
            connections: args.concurrency,
            keys: args.keys,
            warmup,
            duration,
        };
        let (mut engine_rounds, mut api_rounds) = (Vec::new(), Vec::new());
        for _ in 0..args.rounds.max(1) {
            engine_rounds.push(engine.run_on_own_runtime(&limiter, args.threads).await?);
            api_rounds.push(api.run_on_own_runtime(&limiter, args.threads).await?);
        }
        let ratios: Vec<f64> = api_rounds
            .iter()
            .zip(&engine_rounds)
            .map(|(a, e)| a.decisions_per_sec / e.decisions_per_sec)
            .collect();
        let api_med = |f: fn(&ApiReport) -> f64| median(api_rounds.iter().map(f).collect());
        let eng_med = |f: fn(&EngineReport) -> f64| median(engine_rounds.iter().map(f).collect());
        let result = Result {
            algorithm: kind.as_str(),
            engine_decisions_per_sec: eng_med(|r| r.decisions_per_sec),
            api_decisions_per_sec: api_med(|r| r.decisions_per_sec),
            api_to_engine: median(ratios.clone()),
            api_to_engine_rounds: ratios,
            api_p50_us: api_med(|r| r.p50_us),
            api_p99_us: api_med(|r| r.p99_us),
            engine_p50_us: eng_med(|r| r.p50_us),
            engine_p99_us: eng_med(|r| r.p99_us),
            api_errors: api_rounds.iter().map(|r| r.errors).sum(),
            engine_errors: engine_rounds.iter().map(|r| r.errors).sum(),
            concurrency: args.concurrency,
            keys: args.keys,
            threads: args.threads,
            engine_rounds,
            api_rounds,
        };
        if !global.json {
            let rounds: Vec<String> = result
                .api_to_engine_rounds
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect();
            println!(
                "{:<19} engine {:>8.0}/s (p50 {:.0} us, p99 {:.0} us)  HTTP keep-alive {:>8.0}/s (p50 {:.0} us, p99 {:.0} us)  HTTP/engine {:.2} (rounds {})  errors {}/{}",
                result.algorithm,
                result.engine_decisions_per_sec,
                result.engine_p50_us,
                result.engine_p99_us,
                result.api_decisions_per_sec,
                result.api_p50_us,
                result.api_p99_us,
                result.api_to_engine,
                rounds.join(" "),
                result.engine_errors,
                result.api_errors
            );
        }
        results.push(result);
    }
    if global.json {
        print_json(&Output {
            conditions,
            results,
        })?;
    } else {
        let c = &conditions;
        println!(
            "  ({} in flight: engine tasks / keep-alive connections; {} keys; {} runtime thread(s); {} cores, {}; Redis {}; {} UTC; load average {})",
            args.concurrency,
            args.keys,
            args.threads,
            c.cores,
            c.cpu,
            c.redis_version,
            c.date,
            c.load_average.map_or_else(|| "?".into(), |l| format!("{l:.2}"))
        );
    }
    Ok(ExitCode::SUCCESS)
}
