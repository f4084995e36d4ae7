//! Decisions per second over HTTP keep-alive: `serve`'s `POST /api/check` ([`crate::api`]),
//! started in process on a loopback port, driven by N keep-alive HTTP/1.1 connections (hyper's
//! client), each sending its next request when the last answer is read (closed loop).
//!
//! Measured as [`super::engine`] measures the engine, so the two figures of one run compare:
//! the same rule, the same keys, warm-up excluded, and only answers Redis decided counted
//! (a non-200 answer, a failed request or a fail-open decision is an error, never a decision).
//! Server and clients share one runtime and this process's CPU: the figure is what the
//! endpoint costs on top of the engine, with the load generator's own cost included.

use super::client_key;
use super::load::{on_own_runtime, Phase, Step, Tally, Totals};
use crate::api::{DecisionApi, CHECK_PATH};
use crate::limiter::Limiter;
use crate::rule::Rule;
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct ApiBench {
    /// Loaded into the endpoint and asked for by name.
    pub rule: Rule,
    /// Keep-alive connections, each with one request in flight.
    pub connections: usize,
    /// Distinct client keys, visited round-robin.
    pub keys: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct ApiReport {
    pub algorithm: &'static str,
    pub connections: usize,
    pub keys: usize,
    /// The measured interval (warm-up excluded).
    pub seconds: f64,
    /// Answers with a decision Redis made (allowed or denied).
    pub decisions: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Requests that failed, answered other than 200, or were decided without Redis.
    pub errors: u64,
    pub decisions_per_sec: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// CPU this process (endpoint, engine and load generator) spent per decision, µs.
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
        limiter
            .ping()
            .await
            .map_err(|e| anyhow::anyhow!("Redis at {} does not answer: {e}", limiter.target()))?;
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let app = DecisionApi::new(limiter.clone(), vec![self.rule.clone()]).router();
        let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });

        // One request body per key, made before the clock starts.
        let rule = self.rule.name();
        let bodies: Arc<[Bytes]> = (0..self.keys)
            .map(|i| {
                let body = serde_json::json!({"rule": rule, "key": client_key(i), "cost": 1});
                Bytes::from(body.to_string())
            })
            .collect();
        let phase = Phase::default();
        let mut tasks = Vec::with_capacity(self.connections);
        for task in 0..self.connections {
            let (bodies, phase, stride) = (bodies.clone(), phase.clone(), self.connections);
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (mut sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            tasks.push(tokio::spawn(async move {
                let mut tally = Tally::new();
                let mut i = task;
                loop {
                    let body = bodies[i % bodies.len()].clone();
                    i += stride;
                    let request = hyper::Request::post(CHECK_PATH)
                        .header(hyper::header::HOST, addr.to_string())
                        .header(hyper::header::CONTENT_TYPE, "application/json")
                        .body(Full::new(body))?;
                    let started = Instant::now();
                    let answer = async {
                        sender.ready().await?;
                        let response = sender.send_request(request).await?;
                        let status = response.status();
                        let body = response.into_body().collect().await?.to_bytes();
                        anyhow::Ok((status, body))
                    }
                    .await;
                    let elapsed = started.elapsed();
                    match phase.now() {
                        Step::Measuring => {}
                        Step::Warming => continue,
                        Step::Stopped => break,
                    }
                    match answer {
                        Ok((status, body)) if status == 200 => match decided(&body) {
                            Some(allowed) => tally.decided(allowed, elapsed),
                            None => tally.error(),
                        },
                        // A connection the server closed cannot be used again: count the
                        // rest of this connection's time as lost, not as decisions.
                        Ok(_) => tally.error(),
                        Err(_) if sender.is_closed() => {
                            tally.error();
                            break;
                        }
                        Err(_) => tally.error(),
                    }
                }
                anyhow::Ok(tally)
            }));
        }

        tokio::time::sleep(self.warmup).await;
        let cpu_before = super::process_cpu_secs();
        phase.measure();
        let started = Instant::now();
        tokio::time::sleep(self.duration).await;
        phase.stop();
        let seconds = started.elapsed().as_secs_f64();
        let cpu_after = super::process_cpu_secs();

        let totals = Totals::merge(tasks).await?;
        let _ = stop_server.send(());
        server.await??;
        let decisions = totals.decisions();
        Ok(ApiReport {
            algorithm: self.rule.kind().as_str(),
            connections: self.connections,
            keys: self.keys,
            seconds,
            decisions,
            allowed: totals.allowed,
            denied: totals.denied,
            errors: totals.errors,
            decisions_per_sec: decisions as f64 / seconds,
            p50_us: totals.us(0.50),
            p95_us: totals.us(0.95),
            p99_us: totals.us(0.99),
            max_us: totals.max_us(),
            process_cpu_us_per_decision: cpu_before
                .zip(cpu_after)
                .map(|(b, a)| (a - b) * 1e6 / decisions.max(1) as f64),
        })
    }
}

/// `Some(allowed)` for a decision Redis made; `None` for a fail-open or degraded one (or an
/// answer that is not a decision).
fn decided(body: &[u8]) -> Option<bool> {
    #[derive(serde::Deserialize)]
    struct Reply {
        allowed: bool,
        remaining: i64,
        fail_open: bool,
        #[serde(default)]
        degraded: bool,
    }
    let reply: Reply = serde_json::from_slice(body).ok()?;
    (!reply.fail_open && !reply.degraded && reply.remaining >= 0).then_some(reply.allowed)
}
