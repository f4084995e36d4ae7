//! `ratelockr serve`: the decision endpoint (`POST /api/check`, `GET /api/rules`,
//! `GET /api/policies`) and the metrics endpoint, optionally fed by a demo workload. A policies
//! file is reloaded when it changes.

use crate::opts::{AlgorithmArg, Global};
use clap::Args;
use ratelockr::api::DecisionApi;
use ratelockr::metrics::MetricsServer;
use ratelockr::policy::{PolicyWatch, POLL_EVERY};
use ratelockr::{AlgorithmKind, DenyCacheOptions, FailureMode, Limiter, Metrics, Rule};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The fastest demo workload: beyond it the demo is a load test, which `bench` is for.
const MAX_DEMO_RPS: u32 = 100_000;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen. Loopback by default: the metrics name rules and reveal traffic.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub addr: SocketAddr,
    /// Decisions per second of a demo workload through this process's limiter (all five
    /// algorithms in turn, 5 client keys: some allowed, some denied), so the endpoint has something to count. 0: none;
    /// the endpoint then reports this process's decisions only, which are none. At most 100,000.
    #[arg(long, default_value_t = 0)]
    pub demo_rps: u32,
    /// The demo's algorithm; repeat it, or leave it out for all five.
    #[arg(long, value_enum)]
    pub algorithm: Vec<AlgorithmArg>,
    /// The rules `POST /api/check` knows by name: a JSON list of rules (or {"rules": [...]})
    /// or a TOML file of [[rules]], in the rules' usual form ({"name", "algorithm",
    /// parameters}). Without it, requests give their rule inline.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The policies `POST /api/check {"policy": ...}` decides: a TOML or JSON policies file
    /// (or a rules file, one limit a rule). Reloaded when it changes; a broken file keeps the
    /// policies in force, is logged and counted in ratelockr_policy_reloads_total.
    #[arg(long, value_name = "FILE")]
    pub policies: Option<PathBuf>,
    /// Deny in process what Redis has just denied, until the time Redis named.
    #[arg(long)]
    pub deny_cache: bool,
    /// While Redis cannot be asked: open (admit, marked fail_open), closed (refuse), or
    /// degraded (decide with this instance's share of the rule; see --instances).
    #[arg(long, value_enum, default_value_t = FailureArg::Open)]
    pub failure_mode: FailureArg,
    /// With --failure-mode degraded: how many instances share each rule (1 to 100,000)
    /// [default: 1].
    #[arg(long)]
    pub instances: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailureArg {
    Open,
    Closed,
    Degraded,
}

pub async fn run(
    global: &Global,
    args: &ServeArgs,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<ExitCode> {
    if !args.addr.ip().is_loopback() {
        eprintln!(
            "ratelockr serve: warning: {} is reachable from other machines; the metrics and the decision endpoint are open to them",
            args.addr
        );
    }
    anyhow::ensure!(
        args.instances.is_none() || args.failure_mode == FailureArg::Degraded,
        "--instances applies only with --failure-mode degraded (the share of a rule each instance keeps while Redis is away)"
    );
    anyhow::ensure!(
        args.algorithm.is_empty() || args.demo_rps > 0,
        "--algorithm picks the demo's algorithms: give --demo-rps as well"
    );
    anyhow::ensure!(
        args.demo_rps <= MAX_DEMO_RPS,
        "invalid --demo-rps: must be from 0 to {MAX_DEMO_RPS}, got {}",
        args.demo_rps
    );
    let rules: Vec<Rule> = match &args.rules {
        Some(path) => ratelockr::rules_file::load_rules_file(path)?,
        None => Vec::new(),
    };
    let metrics = Metrics::new();
    let watch = match &args.policies {
        Some(path) => Some(
            PolicyWatch::load_with(path, Some(metrics.clone()), None)
                .map_err(|err| anyhow::anyhow!("--policies: {err}"))?,
        ),
        None => None,
    };
    let server = MetricsServer::bind(metrics.clone(), args.addr).await?;
    let addr = server.local_addr()?;
    // Keeps an embedded Redis alive while serving.
    let backend = global.backend()?;
    let mut options = global.limiter_options()?;
    options.failure_mode = match args.failure_mode {
        FailureArg::Open => FailureMode::Open,
        FailureArg::Closed => FailureMode::Closed,
        FailureArg::Degraded => FailureMode::Degraded {
            instances: args.instances.unwrap_or(1),
        },
    };
    if args.deny_cache {
        options.deny_cache = Some(DenyCacheOptions::default());
    }
    crate::opts::check_options(&options)?;
    let limiter = Limiter::new(backend.target(), options).with_observer(Arc::new(metrics.clone()));
    crate::console::warn_unless_redis_answers(&limiter, "serve").await;
    crate::opts::refuse_without_scripting(&limiter).await?;
    metrics.set_active_rules(rules.len());
    let mut api = DecisionApi::new(limiter.clone(), rules.clone());
    if let Some(watch) = &watch {
        for policy in &watch.current().policies {
            metrics.register_policy(policy.name());
        }
        // Ends with the process: the endpoint holds a clone of the watch.
        watch.spawn(POLL_EVERY);
        api = api.with_policies(watch.clone());
        eprintln!(
            "ratelockr serve: {} from {} at POST http://{addr}{} {{\"policy\": ...}} (GET {} lists them; the file is reloaded when it changes)",
            ratelockr::policy::changes::count(watch.current().policies.len()),
            watch.path().display(),
            ratelockr::api::CHECK_PATH,
            ratelockr::api::POLICIES_PATH,
        );
    }
    if args.demo_rps > 0 {
        let kinds: Vec<AlgorithmKind> = if args.algorithm.is_empty() {
            AlgorithmKind::RATES.to_vec()
        } else {
            args.algorithm.iter().map(|&a| a.into()).collect()
        };
        let demo_rules = kinds
            .into_iter()
            .map(|kind| {
                let rule = ratelockr_cli::bench::bench_rule(kind)?;
                // Tight enough that the demo shows denials too.
                let algorithm = match *rule.algorithm() {
                    ratelockr::Algorithm::TokenBucket { .. } => ratelockr::Algorithm::TokenBucket {
                        capacity: 10,
                        refill_per_sec: 2.0,
                    },
                    ratelockr::Algorithm::SlidingWindowLog { .. } => {
                        ratelockr::Algorithm::SlidingWindowLog {
                            limit: 10,
                            window_ms: 5_000,
                        }
                    }
                    ratelockr::Algorithm::FixedWindow { .. } => ratelockr::Algorithm::FixedWindow {
                        limit: 10,
                        window_ms: 5_000,
                    },
                    ratelockr::Algorithm::Gcra { .. } => ratelockr::Algorithm::Gcra {
                        limit: 10,
                        window_ms: 5_000,
                        burst: 10,
                    },
                    ratelockr::Algorithm::SlidingWindowCounter { .. } => {
                        ratelockr::Algorithm::SlidingWindowCounter {
                            limit: 10,
                            window_ms: 5_000,
                        }
                    }
                    // The demo's requests end as they are decided: each lease is given back.
                    ratelockr::Algorithm::Concurrency { .. } => ratelockr::Algorithm::Concurrency {
                        limit: 10,
                        lease_ms: 5_000,
                    },
                    // Ten an hour: the demo shows the quota used up, then denials to the hour.
                    ratelockr::Algorithm::Calendar { .. } => ratelockr::Algorithm::Calendar {
                        limit: 10,
                        period: ratelockr::Period::Hour,
                        time_zone: ratelockr::TimeZoneName::UTC,
                        week_start: ratelockr::WeekStart::Monday,
                    },
                };
                Ok(Rule::new(format!("demo-{}", kind.cli_name()), algorithm)?)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        metrics.set_active_rules(rules.len() + demo_rules.len());
        tokio::spawn(demo(limiter, demo_rules, args.demo_rps));
        eprintln!(
            "ratelockr serve: demo workload of {} decisions/s against {}",
            args.demo_rps,
            backend.target()
        );
    }
    eprintln!(
        "ratelockr serve: decisions at POST http://{addr}{} ({} rule(s) by name; GET {} lists them) against {}",
        ratelockr::api::CHECK_PATH,
        rules.len(),
        ratelockr::api::RULES_PATH,
        backend.target()
    );
    eprintln!(
        "ratelockr serve: Redis connection: {}",
        backend.target().transport()
    );
    eprintln!(
        "ratelockr serve: metrics of this process's decisions at http://{addr}{} (Ctrl-C or SIGTERM stops)",
        ratelockr::metrics::METRICS_PATH
    );
    server.run_with(api.router(), stop).await?;
    Ok(ExitCode::SUCCESS)
}

/// Paced decisions over a few client keys, round-robin across `rules`.
async fn demo(limiter: Limiter, rules: Vec<ratelockr::Rule>, rps: u32) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rps)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let keys: Vec<String> = (0..5).map(|i| format!("demo-client-{i}")).collect();
    for n in 0usize.. {
        tick.tick().await;
        let rule = &rules[n % rules.len()];
        let key = &keys[(n / rules.len()) % keys.len()];
        // Redis failures fail open and are counted by the metrics; nothing to do here.
        let _ = limiter.check(rule, key).await;
    }
}
