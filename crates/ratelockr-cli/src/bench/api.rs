//! Decisions per second over HTTP keep-alive: `serve`'s `POST /api/check` (or
//! `POST /api/check/batch`), started in process on a loopback port, driven by the closed-loop
//! HTTP load generator ([`super::http_load`]), either in a process of its own (what
//! `ratelockr bench --api` does: the endpoint's process pays only for the endpoint) or on
//! this process's runtime (tests, where no `ratelockr` binary is at hand).
//!
//! Measured as [`super::engine`] measures the engine, so the two figures of one run compare:
//! the same rule, the same keys, warm-up excluded, and only answers Redis decided counted.
//!
//! The same harness serves the tower layer's example route (`GET /hello`, keyed by
//! `x-api-key`) without the layer and with it ([`Served`]): the CPU per request of the two is
//! the layer's cost on top of HTTP, and HTTP's own cost on this machine.

use super::http_load::{Ask, HttpLoad, HttpLoadReport, KEY_HEADER};
use super::load::on_own_runtime;
use axum::routing::get;
use axum::Router;
use ratelockr::api::DecisionApi;
use ratelockr::limiter::Limiter;
use ratelockr::rule::Rule;
use ratelockr_tower::{KeyExtractor, RateLimitLayer};
use serde::Serialize;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where the load generator runs.
#[derive(Debug, Clone)]
pub enum LoadGenerator {
    /// On the endpoint's own runtime, sharing its CPU.
    InProcess,
    /// `<program> bench-http-load --spec <json>` (the `ratelockr` binary): a process of its
    /// own that prints its [`HttpLoadReport`] as JSON.
    External(PathBuf),
}

/// What answers the load generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Served {
    /// `serve`'s decision endpoint: `POST /api/check`, or `/api/check/batch`.
    Endpoint,
    /// The tower layer's example route, `GET /hello`, with no limit: HTTP alone.
    Route,
    /// The same route behind [`RateLimitLayer`] with the rule, keyed by `x-api-key`.
    LimitedRoute,
}

/// The example service's route ([`Served::Route`]).
const ROUTE: &str = "/hello";

/// What to run.
#[derive(Debug, Clone)]
pub struct ApiBench {
    pub served: Served,
    /// Loaded into the endpoint and asked for by name.
    pub rule: Rule,
    /// Keep-alive connections, each with one request in flight.
    pub connections: usize,
    /// Distinct client keys, visited round-robin.
    pub keys: usize,
    /// Decisions per request: 1 asks `POST /api/check`; more ask `POST /api/check/batch`.
    pub batch: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub load: LoadGenerator,
}

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct ApiReport {
    pub served: Served,
    pub algorithm: &'static str,
    pub connections: usize,
    pub keys: usize,
    /// Decisions per request (1: `POST /api/check`).
    pub batch: usize,
    /// Whether the load generator ran in a process of its own.
    pub external_load: bool,
    /// The measured interval (warm-up excluded).
    pub seconds: f64,
    /// Decisions Redis made (allowed or denied) that the endpoint answered (for
    /// [`Served::Route`], requests answered).
    pub decisions: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Requests (or batch items) that failed, answered other than 200 or in the error shape,
    /// or were decided without Redis.
    pub errors: u64,
    pub decisions_per_sec: f64,
    /// Latency of one request (of a whole batch, for the batch form).
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// CPU the endpoint's process spent per decision, µs (the load generator's too when it
    /// runs in process).
    pub process_cpu_us_per_decision: Option<f64>,
}

impl ApiBench {
    /// Runs the benchmark on a runtime of its own with `threads` workers (1: current-thread),
    /// through a fresh connection of `limiter`, like [`super::engine::EngineBench`].
    pub async fn run_on_own_runtime(
        &self,
        limiter: &Limiter,
        threads: usize,
    ) -> anyhow::Result<ApiReport> {
        let bench = self.clone();
        let limiter = limiter.with_own_connection();
        on_own_runtime(threads, move || async move { bench.run(&limiter).await }).await
    }

    /// Serves the endpoint over `limiter` on a free loopback port and drives it.
    pub async fn run(&self, limiter: &Limiter) -> anyhow::Result<ApiReport> {
        anyhow::ensure!(self.connections >= 1, "connections must be at least 1");
        anyhow::ensure!(self.keys >= 1, "keys must be at least 1");
        anyhow::ensure!(
            (1..=ratelockr::api::MAX_BATCH).contains(&self.batch),
            "a batch holds 1 to {} requests",
            ratelockr::api::MAX_BATCH
        );
        anyhow::ensure!(
            self.batch == 1 || self.served == Served::Endpoint,
            "only the decision endpoint takes a batch"
        );
        limiter
            .ping()
            .await
            .map_err(|e| anyhow::anyhow!("Redis at {} does not answer: {e}", limiter.target()))?;
        let (app, ask) = self.app(limiter)?;
        let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async {
            let _ = stopped.await;
        };
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(
            axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .into_future(),
        );
        let load = HttpLoad {
            addr,
            ask,
            keys: self.keys,
            connections: self.connections,
            warmup_ms: self.warmup.as_millis() as u64,
            duration_ms: self.duration.as_millis() as u64,
        };
        // This process's CPU over the measured interval (the generator measures the same
        // interval from its own start, a few ms apart at most).
        let cpu = async {
            tokio::time::sleep(self.warmup).await;
            let before = super::process_cpu_secs();
            tokio::time::sleep(self.duration).await;
            before.zip(super::process_cpu_secs())
        };
        let (report, cpu) = match &self.load {
            LoadGenerator::InProcess => tokio::join!(load.drive(), cpu),
            LoadGenerator::External(program) => tokio::join!(external(program, &load), cpu),
        };
        let _ = stop_server.send(());
        server.await??;
        let report = report?;
        let decisions = report.allowed + report.denied;
        Ok(ApiReport {
            served: self.served,
            algorithm: self.rule.kind().as_str(),
            connections: self.connections,
            keys: self.keys,
            batch: self.batch,
            external_load: matches!(self.load, LoadGenerator::External(_)),
            seconds: report.seconds,
            decisions,
            allowed: report.allowed,
            denied: report.denied,
            errors: report.errors,
            decisions_per_sec: decisions as f64 / report.seconds,
            p50_us: report.p50_us,
            p95_us: report.p95_us,
            p99_us: report.p99_us,
            max_us: report.max_us,
            process_cpu_us_per_decision: cpu.map(|(b, a)| (a - b) * 1e6 / decisions.max(1) as f64),
        })
    }

    /// The service to measure over `limiter`, and what to ask it.
    fn app(&self, limiter: &Limiter) -> anyhow::Result<(Router, Ask)> {
        let get_route = || Ask::Get {
            path: ROUTE.to_string(),
        };
        Ok(match self.served {
            Served::Endpoint => (
                DecisionApi::new(limiter.clone(), vec![self.rule.clone()]).router(),
                Ask::Check {
                    rule: self.rule.name().to_string(),
                    batch: self.batch,
                },
            ),
            Served::Route => (Router::new().route(ROUTE, get(hello)), get_route()),
            Served::LimitedRoute => {
                // As the example service builds it, less the deny cache: each request is one
                // decision, as each of the engine's is.
                let layer = RateLimitLayer::builder(KeyExtractor::header(KEY_HEADER.parse()?))
                    .limiter(limiter.clone())
                    .rule(self.rule.clone())
                    .headers_on_admitted(true)
                    .fail_open_header(true)
                    .build()?;
                (
                    Router::new().route(ROUTE, get(hello)).layer(layer),
                    get_route(),
                )
            }
        })
    }
}

/// The example service's `GET /hello`, less the key in its answer.
async fn hello() -> &'static str {
    "hello\n"
}

/// Runs the load generator as `<program> bench-http-load --spec <json>`.
async fn external(program: &PathBuf, load: &HttpLoad) -> anyhow::Result<HttpLoadReport> {
    let output = tokio::process::Command::new(program)
        .arg("bench-http-load")
        .arg("--spec")
        .arg(serde_json::to_string(load)?)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "the load generator {} did not start: {e}",
                program.display()
            )
        })?;
    anyhow::ensure!(
        output.status.success(),
        "the load generator failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}
