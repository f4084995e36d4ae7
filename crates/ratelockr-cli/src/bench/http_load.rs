//! The load generator of `bench --api`: N keep-alive HTTP/1.1 connections (requests written
//! as bytes made in advance, answers read with httparse, as wrk does),
//! each sending its next request when the last answer is read (closed loop), to
//! `POST /api/check` (one decision a request), `POST /api/check/batch` (`batch` decisions a
//! request) or a service's `GET` route with the client key in `x-api-key` (the tower layer's
//! example service, with or without the layer). `ratelockr bench --api` runs it in a process of
//! its own (the hidden `bench-http-load` subcommand), so the endpoint's process pays only for
//! the endpoint.
//!
//! Only answers Redis decided count (a non-200 answer, a failed request, an item in the error
//! shape or a fail-open decision is an error, never a decision); warm-up is excluded.

use super::client_key;
use super::load::{Phase, Step, Tally, Totals};
use ratelockr::api::{CHECK_BATCH_PATH, CHECK_PATH};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The header a service's route is keyed by ([`Ask::Get`]).
pub const KEY_HEADER: &str = "x-api-key";
/// The header the tower layer marks a fail-open admission with.
const FAIL_OPEN_HEADER: &str = "ratelimit-fail-open";

/// What to send, and for how long.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpLoad {
    pub addr: SocketAddr,
    pub ask: Ask,
    /// Distinct client keys, visited round-robin.
    pub keys: usize,
    pub connections: usize,
    pub warmup_ms: u64,
    pub duration_ms: u64,
}

/// What each request asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// The decision endpoint about the loaded rule named `rule`: `POST /api/check` when
    /// `batch` is 1, else `POST /api/check/batch` with `batch` decisions a request.
    Check { rule: String, batch: usize },
    /// A service's `GET path`, keyed by [`KEY_HEADER`]: 200 is an admission, 429 a denial, and
    /// an answer marked fail-open an error (the tower layer's example service; without the
    /// layer every answer is a 200).
    Get { path: String },
}

impl Ask {
    /// Decisions one request asks for.
    pub fn batch(&self) -> usize {
        match self {
            Ask::Check { batch, .. } => *batch,
            Ask::Get { .. } => 1,
        }
    }
}

/// What the load generator saw while measuring.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpLoadReport {
    pub seconds: f64,
    pub allowed: u64,
    pub denied: u64,
    pub errors: u64,
    /// Latency of a request (of its whole batch, for the batch form), µs.
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl HttpLoad {
    /// Drives the endpoint at `addr` and reports what it answered.
    pub async fn drive(&self) -> anyhow::Result<HttpLoadReport> {
        anyhow::ensure!(self.connections >= 1, "connections must be at least 1");
        anyhow::ensure!(self.keys >= 1, "keys must be at least 1");
        let batch = self.ask.batch();
        anyhow::ensure!(batch >= 1, "a batch holds at least 1 request");
        let requests = self.requests();
        let phase = Phase::default();
        let mut tasks = Vec::with_capacity(self.connections);
        for first in 0..self.connections {
            let run = Run {
                requests: requests.clone(),
                phase: phase.clone(),
                ask: self.ask.clone(),
                first,
                stride: self.connections,
            };
            let stream = TcpStream::connect(self.addr).await?;
            stream.set_nodelay(true)?;
            tasks.push(tokio::spawn(run.drive(stream)));
        }
        tokio::time::sleep(Duration::from_millis(self.warmup_ms)).await;
        phase.measure();
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(self.duration_ms)).await;
        phase.stop();
        let seconds = started.elapsed().as_secs_f64();
        let totals = Totals::merge(tasks).await?;
        Ok(HttpLoadReport {
            seconds,
            allowed: totals.allowed,
            denied: totals.denied,
            errors: totals.errors,
            p50_us: totals.us(0.50),
            p95_us: totals.us(0.95),
            p99_us: totals.us(0.99),
            max_us: totals.max_us(),
        })
    }
}

impl HttpLoad {
    /// Each request whole, as it goes on the wire, made before the clock starts: one per key
    /// (single), or `keys` batches of `batch` consecutive keys. The generator writes these
    /// bytes and reads each answer with httparse (as wrk does), so the CPU it takes from the
    /// endpoint on a shared machine is the least a keep-alive client needs.
    fn requests(&self) -> Arc<[Vec<u8>]> {
        let addr = self.addr;
        match &self.ask {
            Ask::Check { rule, batch } => {
                let batch = *batch;
                let path = if batch > 1 {
                    CHECK_BATCH_PATH
                } else {
                    CHECK_PATH
                };
                let one = |i: usize| serde_json::json!({"rule": rule, "key": client_key(i % self.keys), "cost": 1});
                (0..self.keys)
                    .map(|i| {
                        let body = if batch > 1 {
                            serde_json::Value::Array((0..batch).map(|j| one(i * batch + j)).collect())
                        } else {
                            one(i)
                        }
                        .to_string();
                        format!(
                            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        )
                        .into_bytes()
                    })
                    .collect()
            }
            Ask::Get { path } => (0..self.keys)
                .map(|i| {
                    format!(
                        "GET {path} HTTP/1.1\r\nhost: {addr}\r\n{KEY_HEADER}: {}\r\n\r\n",
                        client_key(i)
                    )
                    .into_bytes()
                })
                .collect(),
        }
    }
}

/// One connection's closed loop: its share of the requests, in turn, until the run stops.
struct Run {
    requests: Arc<[Vec<u8>]>,
    phase: Phase,
    ask: Ask,
    /// This connection's first request, and the step to its next.
    first: usize,
    stride: usize,
}

impl Run {
    async fn drive(self, stream: TcpStream) -> anyhow::Result<Tally> {
        let batch = self.ask.batch();
        let mut connection = Connection::new(stream);
        let mut tally = Tally::new();
        let mut i = self.first;
        loop {
            let request = &self.requests[i % self.requests.len()];
            i += self.stride;
            let started = Instant::now();
            let answer = connection.exchange(request).await;
            let elapsed = started.elapsed();
            match self.phase.now() {
                Step::Measuring => {}
                Step::Warming => continue,
                Step::Stopped => break,
            }
            match (&self.ask, answer) {
                (Ask::Check { .. }, Ok(answer)) if answer.status == 200 => {
                    count(answer.body, batch > 1, elapsed, &mut tally, batch)
                }
                (Ask::Get { .. }, Ok(answer)) if !answer.fail_open => match answer.status {
                    200 => tally.decided(true, elapsed),
                    429 => tally.decided(false, elapsed),
                    _ => tally.error(),
                },
                (_, Ok(_)) => tally.error(),
                // A connection that failed (closed, or an answer that is not HTTP) cannot be
                // used again.
                (_, Err(_)) => {
                    tally.error();
                    break;
                }
            }
        }
        Ok(tally)
    }
}

/// Counts one answer's decisions: one object, or an array of `batch` of them.
fn count(body: &[u8], many: bool, waited: Duration, tally: &mut Tally, batch: usize) {
    #[derive(Deserialize)]
    struct Reply {
        #[serde(default)]
        allowed: Option<bool>,
        #[serde(default)]
        remaining: i64,
        #[serde(default)]
        fail_open: bool,
        #[serde(default)]
        degraded: bool,
    }
    fn one(reply: &Reply, waited: Duration, tally: &mut Tally) {
        match reply.allowed {
            Some(allowed) if !reply.fail_open && !reply.degraded && reply.remaining >= 0 => {
                tally.decided(allowed, waited)
            }
            _ => tally.error(),
        }
    }
    if many {
        match serde_json::from_slice::<Vec<Reply>>(body) {
            Ok(replies) if replies.len() == batch => {
                replies.iter().for_each(|r| one(r, waited, tally))
            }
            _ => (0..batch).for_each(|_| tally.error()),
        }
    } else {
        match serde_json::from_slice::<Reply>(body) {
            Ok(reply) => one(&reply, waited, tally),
            Err(_) => tally.error(),
        }
    }
}

/// An answer as the generator reads it.
struct Answer<'a> {
    status: u16,
    body: &'a [u8],
    fail_open: bool,
}

/// One keep-alive HTTP/1.1 connection: a request written, its answer read, in turn.
struct Connection {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Bytes of `buf` that belong to the last answer (consumed before the next read).
    used: usize,
    /// Bytes read into `buf`.
    filled: usize,
}

impl Connection {
    fn new(stream: TcpStream) -> Self {
        Connection {
            stream,
            buf: vec![0; 16 * 1024],
            used: 0,
            filled: 0,
        }
    }

    /// Writes `request` and reads its answer: the status, the body (by Content-Length; the
    /// endpoint answers every request with one) and whether it is marked fail-open.
    async fn exchange(&mut self, request: &[u8]) -> anyhow::Result<Answer<'_>> {
        self.buf.copy_within(self.used..self.filled, 0);
        self.filled -= self.used;
        self.used = 0;
        self.stream.write_all(request).await?;
        let (status, head, length, fail_open) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = response.parse(&self.buf[..self.filled])? {
                let length = response
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                    .ok_or_else(|| anyhow::anyhow!("an answer without Content-Length"))?;
                let fail_open = response
                    .headers
                    .iter()
                    .any(|h| h.name.eq_ignore_ascii_case(FAIL_OPEN_HEADER));
                break (response.code.unwrap_or(0), head, length, fail_open);
            }
            self.read_more().await?;
        };
        while self.filled < head + length {
            self.read_more().await?;
        }
        self.used = head + length;
        Ok(Answer {
            status,
            body: &self.buf[head..head + length],
            fail_open,
        })
    }

    async fn read_more(&mut self) -> anyhow::Result<()> {
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.stream.read(&mut self.buf[self.filled..]).await?;
        anyhow::ensure!(n > 0, "the endpoint closed the connection");
        self.filled += n;
        Ok(())
    }
}
