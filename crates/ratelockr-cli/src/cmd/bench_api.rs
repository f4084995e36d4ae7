//! `ratelockr bench --api`: decisions per second over HTTP keep-alive through `serve`'s
//! `POST /api/check` (started in process on a loopback port), beside the engine's in-process
//! figure for the same rule, keys and concurrency, measured back to back in each round; and the
//! batch form (`POST /api/check/batch`) with as many decisions in flight. The HTTP load
//! generator runs in a process of its own (this binary's hidden `bench-http-load`).
//!
//! Each figure's CPU per decision comes from the OS for the process that made it (the engine's
//! and the endpoint's: this process, in turn; the load generator's is its own), so their ratio
//! holds on any machine where throughput ratios measure how two cores are shared. The tower
//! layer's example route is measured the same way without and with the layer: the difference
//! is the layer's cost per request, the route alone HTTP's.

use crate::console::{print_json, rounds_text};
use crate::opts::{AlgorithmArg, Global};
use ratelockr::AlgorithmKind;
use ratelockr_cli::bench::api::{ApiBench, ApiReport, LoadGenerator, Served};
use ratelockr_cli::bench::ceiling::median;
use ratelockr_cli::bench::engine::{EngineBench, EngineReport};
use ratelockr_cli::bench::http_load::HttpLoad;
use ratelockr_cli::bench::{self, Conditions};
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
    /// Decisions per request of the batch form.
    pub batch: usize,
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
    /// The batch form: decisions per request, connections, decisions per second (median)
    /// and the median of each round's batch ÷ engine.
    batch: usize,
    batch_connections: usize,
    batch_decisions_per_sec: f64,
    batch_to_engine: f64,
    batch_to_engine_rounds: Vec<f64>,
    batch_p50_us: f64,
    batch_p99_us: f64,
    batch_errors: u64,
    /// CPU per decision of each, medians over rounds.
    cpu: CpuPerDecision,
    concurrency: usize,
    keys: usize,
    threads: usize,
    engine_rounds: Vec<EngineReport>,
    api_rounds: Vec<ApiReport>,
    batch_rounds: Vec<ApiReport>,
    /// `GET /hello` alone, then behind the layer.
    route_rounds: Vec<ApiReport>,
    limited_route_rounds: Vec<ApiReport>,
}

/// CPU per decision, µs, each the median over rounds (none where the OS did not say).
#[derive(Debug, Serialize)]
struct CpuPerDecision {
    /// The engine in process (`client_cpu_us_per_decision`).
    engine_us: Option<f64>,
    /// The endpoint's process per `POST /api/check`.
    serve_us: Option<f64>,
    /// The median of each round's serve ÷ engine.
    serve_to_engine: Option<f64>,
    serve_to_engine_rounds: Vec<f64>,
    /// The endpoint's process per decision of `POST /api/check/batch`.
    batch_us: Option<f64>,
    batch_to_engine: Option<f64>,
    /// The example route per request with no limit: HTTP's own cost on this machine.
    route_us: Option<f64>,
    /// The same route behind the layer.
    limited_route_us: Option<f64>,
    /// The layer's cost per request: the median of each round's limited − alone.
    layer_us: Option<f64>,
    layer_us_rounds: Vec<f64>,
    /// What the decision endpoint costs on top of HTTP's own cost: the median of each
    /// round's serve − the route alone.
    serve_over_http_us: Option<f64>,
}

impl CpuPerDecision {
    fn of(
        engine: &[EngineReport],
        api: &[ApiReport],
        batch: &[ApiReport],
        route: &[ApiReport],
        limited: &[ApiReport],
    ) -> Self {
        let med = |v: Vec<f64>| (!v.is_empty()).then(|| median(v));
        let cpu = |r: &[ApiReport]| {
            med(r
                .iter()
                .filter_map(|r| r.process_cpu_us_per_decision)
                .collect())
        };
        let engine_cpu = |i: usize| engine[i].client_cpu_us_per_decision;
        let to_engine = |r: &[ApiReport]| -> Vec<f64> {
            r.iter()
                .enumerate()
                .filter_map(|(i, r)| Some(r.process_cpu_us_per_decision? / engine_cpu(i)?))
                .collect()
        };
        let serve_to_engine_rounds = to_engine(api);
        let minus = |a: &[ApiReport], b: &[ApiReport]| -> Vec<f64> {
            a.iter()
                .zip(b)
                .filter_map(|(a, b)| {
                    Some(a.process_cpu_us_per_decision? - b.process_cpu_us_per_decision?)
                })
                .collect()
        };
        let layer_us_rounds = minus(limited, route);
        CpuPerDecision {
            engine_us: med(engine
                .iter()
                .filter_map(|r| r.client_cpu_us_per_decision)
                .collect()),
            serve_us: cpu(api),
            serve_to_engine: med(serve_to_engine_rounds.clone()),
            serve_to_engine_rounds,
            batch_us: cpu(batch),
            batch_to_engine: med(to_engine(batch)),
            route_us: cpu(route),
            limited_route_us: cpu(limited),
            layer_us: med(layer_us_rounds.clone()),
            layer_us_rounds,
            serve_over_http_us: med(minus(api, route)),
        }
    }

    /// One line: each figure, or `?` where the OS did not say.
    fn text(&self) -> String {
        let us = |v: Option<f64>| v.map_or_else(|| "?".into(), |v| format!("{v:.1} us"));
        let x = |v: Option<f64>| v.map_or_else(|| "?".into(), |v| format!("{v:.2} x"));
        let plus = |v: Option<f64>| v.map_or_else(|| "?".into(), |v| format!("{v:+.1} us"));
        format!(
            "CPU per decision: engine {}, serve {} ({} the engine; rounds {}; {} over HTTP alone), batch {} ({}); GET /hello alone {}, behind the layer {} (the layer {})",
            us(self.engine_us),
            us(self.serve_us),
            x(self.serve_to_engine),
            rounds_text(&self.serve_to_engine_rounds),
            plus(self.serve_over_http_us),
            us(self.batch_us),
            x(self.batch_to_engine),
            us(self.route_us),
            us(self.limited_route_us),
            plus(self.layer_us),
        )
    }
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
    anyhow::ensure!(
        (1..=ratelockr::api::MAX_BATCH).contains(&args.batch),
        "invalid --batch: must be from 1 to {}, got {}",
        ratelockr::api::MAX_BATCH,
        args.batch
    );
    let program = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program to run the load generator: {e}"))?;
    let batch_connections = (args.concurrency / args.batch).max(1);
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
            served: Served::Endpoint,
            rule,
            connections: args.concurrency,
            keys: args.keys,
            batch: 1,
            warmup,
            duration,
            load: LoadGenerator::External(program.clone()),
        };
        let batch = ApiBench {
            connections: batch_connections,
            batch: args.batch,
            ..api.clone()
        };
        let route = ApiBench {
            served: Served::Route,
            ..api.clone()
        };
        let limited_route = ApiBench {
            served: Served::LimitedRoute,
            ..api.clone()
        };
        let (mut engine_rounds, mut api_rounds, mut batch_rounds) =
            (Vec::new(), Vec::new(), Vec::new());
        let (mut route_rounds, mut limited_route_rounds) = (Vec::new(), Vec::new());
        for _ in 0..args.rounds.max(1) {
            engine_rounds.push(engine.run_on_own_runtime(&limiter, args.threads).await?);
            api_rounds.push(api.run_on_own_runtime(&limiter, args.threads).await?);
            batch_rounds.push(batch.run_on_own_runtime(&limiter, args.threads).await?);
            route_rounds.push(route.run_on_own_runtime(&limiter, args.threads).await?);
            limited_route_rounds.push(
                limited_route
                    .run_on_own_runtime(&limiter, args.threads)
                    .await?,
            );
        }
        let to_engine = |rounds: &[ApiReport]| -> Vec<f64> {
            rounds
                .iter()
                .zip(&engine_rounds)
                .map(|(a, e)| a.decisions_per_sec / e.decisions_per_sec)
                .collect()
        };
        let ratios = to_engine(&api_rounds);
        let batch_ratios = to_engine(&batch_rounds);
        let batch_med = |f: fn(&ApiReport) -> f64| median(batch_rounds.iter().map(f).collect());
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
            batch: args.batch,
            batch_connections,
            batch_decisions_per_sec: batch_med(|r| r.decisions_per_sec),
            batch_to_engine: median(batch_ratios.clone()),
            batch_to_engine_rounds: batch_ratios,
            batch_p50_us: batch_med(|r| r.p50_us),
            batch_p99_us: batch_med(|r| r.p99_us),
            batch_errors: batch_rounds.iter().map(|r| r.errors).sum(),
            cpu: CpuPerDecision::of(
                &engine_rounds,
                &api_rounds,
                &batch_rounds,
                &route_rounds,
                &limited_route_rounds,
            ),
            concurrency: args.concurrency,
            keys: args.keys,
            threads: args.threads,
            engine_rounds,
            api_rounds,
            batch_rounds,
            route_rounds,
            limited_route_rounds,
        };
        if !global.json {
            let rounds = rounds_text(&result.api_to_engine_rounds);
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
                rounds,
                result.engine_errors,
                result.api_errors
            );
            println!(
                "{:<19} batch of {} over {} connection(s) {:>8.0}/s (p50 {:.0} us, p99 {:.0} us per request)  batch/engine {:.2} (rounds {})  errors {}",
                "",
                result.batch,
                result.batch_connections,
                result.batch_decisions_per_sec,
                result.batch_p50_us,
                result.batch_p99_us,
                result.batch_to_engine,
                rounds_text(&result.batch_to_engine_rounds),
                result.batch_errors
            );
            println!("{:<19} {}", "", result.cpu.text());
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

/// The hidden `bench-http-load` subcommand: the load generator `bench --api` starts in a
/// process of its own. Prints its report as JSON.
#[derive(Debug, clap::Args)]
pub struct HttpLoadArgs {
    /// The run, as JSON (ratelockr_cli::bench::http_load::HttpLoad).
    #[arg(long)]
    pub spec: String,
}

pub async fn run_load(args: &HttpLoadArgs) -> anyhow::Result<ExitCode> {
    let load: HttpLoad =
        serde_json::from_str(&args.spec).map_err(|e| anyhow::anyhow!("invalid --spec: {e}"))?;
    print_json(&load.drive().await?)?;
    Ok(ExitCode::SUCCESS)
}
