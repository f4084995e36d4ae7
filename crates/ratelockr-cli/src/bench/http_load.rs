//! The load generator of `bench --api`: N keep-alive HTTP/1.1 connections (requests written
//! as bytes made in advance, answers read with httparse, as wrk does),
//! each sending its next request when the last answer is read (closed loop), to
//! `POST /api/check` (one decision a request) or `POST /api/check/batch` (`batch` decisions a
//! request). `ratelockr bench --api` runs it in a process of its own (the hidden
//! `bench-http-load` subcommand), so the endpoint's process pays only for the endpoint.
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

/// What to send, and for how long.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpLoad {
    pub addr: SocketAddr,
    /// The loaded rule asked for by name.
    pub rule: String,
    /// Distinct client keys, visited round-robin.
    pub keys: usize,
    /// Decisions per request: 1 asks `POST /api/check`, more ask `POST /api/check/batch`.
    pub batch: usize,
    pub connections: usize,
    pub warmup_ms: u64,
    pub duration_ms: u64,
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
        anyhow::ensure!(self.batch >= 1, "a batch holds at least 1 request");
        let batch = self.batch;
        let path = if batch > 1 {
            CHECK_BATCH_PATH
        } else {
            CHECK_PATH
        };
        let addr = self.addr;
        // Each request whole, as it goes on the wire, made before the clock starts: one per
        // key (single), or `keys` batches of `batch` consecutive keys. The generator writes
        // these bytes and reads each answer with httparse (as wrk does), so the CPU it takes
        // from the endpoint on a shared machine is the least a keep-alive client needs.
        let one = |i: usize| serde_json::json!({"rule": self.rule, "key": client_key(i % self.keys), "cost": 1});
        let requests: Arc<[Vec<u8>]> = (0..self.keys)
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
            .collect();
        let phase = Phase::default();
        let mut tasks = Vec::with_capacity(self.connections);
        for task in 0..self.connections {
            let (requests, phase, stride) = (requests.clone(), phase.clone(), self.connections);
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            tasks.push(tokio::spawn(async move {
                let mut connection = Connection::new(stream);
                let mut tally = Tally::new();
                let mut i = task;
                loop {
                    let request = &requests[i % requests.len()];
                    i += stride;
                    let started = Instant::now();
                    let answer = connection.exchange(request).await;
                    let elapsed = started.elapsed();
                    match phase.now() {
                        Step::Measuring => {}
                        Step::Warming => continue,
                        Step::Stopped => break,
                    }
                    match answer {
                        Ok((200, body)) => count(body, batch > 1, elapsed, &mut tally, batch),
                        Ok(_) => tally.error(),
                        // A connection that failed (closed, or an answer that is not HTTP)
                        // cannot be used again.
                        Err(_) => {
                            tally.error();
                            break;
                        }
                    }
                }
                anyhow::Ok(tally)
            }));
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

    /// Writes `request` and reads its answer: the status and the body (by Content-Length;
    /// the endpoint answers every request with one).
    async fn exchange(&mut self, request: &[u8]) -> anyhow::Result<(u16, &[u8])> {
        self.buf.copy_within(self.used..self.filled, 0);
        self.filled -= self.used;
        self.used = 0;
        self.stream.write_all(request).await?;
        let (status, head, length) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = response.parse(&self.buf[..self.filled])? {
                let length = response
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                    .ok_or_else(|| anyhow::anyhow!("an answer without Content-Length"))?;
                break (response.code.unwrap_or(0), head, length);
            }
            self.read_more().await?;
        };
        while self.filled < head + length {
            self.read_more().await?;
        }
        self.used = head + length;
        Ok((status, &self.buf[head..head + length]))
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
