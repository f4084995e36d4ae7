//! Replay benchmarks on a log generated at bench time (never committed): parsing on one core,
//! a log end to end through one rule (wall time, decisions per second, peak memory) beside
//! redis-benchmark running the same script, and a sweep of 25 configurations.

use super::ceiling::{self, RedisBenchmark};
use ratelockr::atomic_file::{AtomicFile, Replace};
use ratelockr::limiter::Limiter;
use ratelockr::rule::Rule;
use ratelockr_lab::replay::{self, LogSource, NoReplayObserver, ParseSpec, ReplaySpec};
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Distinct clients in a generated log.
pub const CLIENTS: u64 = 10_000;
/// The rule of the end-to-end run: the README's (and the sample log's) token bucket.
pub fn bench_rule() -> Rule {
    Rule::token_bucket("replay-bench", 20, 2.0).expect("a valid rule")
}

/// Writes `lines` combined-format lines spread evenly over one hour, from [`CLIENTS`] clients
/// with a heavy head (client `floor(CLIENTS · u³)` for uniform `u`: client 0 sends 4.6 % of the
/// lines, the next few about 1 % each, so at a million lines an hour a handful of keys exceed
/// the bench rule's 2 per second), IPv4 and IPv6. Deterministic. Returns the bytes written.
pub fn write_log(path: &Path, lines: u64) -> std::io::Result<u64> {
    let file = AtomicFile::create(path, Replace::Allow)?;
    let mut out = BufWriter::with_capacity(1 << 20, file.file());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let day_start = 1_700_006_400u64; // 2023-11-15 00:00:00 UTC
    let mut bytes = 0;
    for i in 0..lines {
        let t = day_start + i * 3_600 / lines.max(1);
        let u = (next() % 1_000_000) as f64 / 1_000_000.0;
        let client = (CLIENTS as f64 * u * u * u) as u64;
        let ip = if client % 7 == 0 {
            format!("2001:db8::{client:x}")
        } else {
            format!(
                "10.{}.{}.{}",
                client >> 16,
                (client >> 8) & 255,
                client & 255
            )
        };
        let (h, m, s) = (
            (t - day_start) / 3600,
            (t - day_start) % 3600 / 60,
            (t - day_start) % 60,
        );
        let line = format!(
            "{ip} - - [15/Nov/2023:{h:02}:{m:02}:{s:02} +0000] \"GET /api/v1/items/{} HTTP/1.1\" 200 {} \"https://shop.example/items\" \"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0\"\n",
            next() % 5000,
            200 + next() % 40_000
        );
        bytes += line.len() as u64;
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    drop(out);
    file.commit()?;
    Ok(bytes)
}

/// Parsing alone on this thread: read, parse, key, sort and spread, nothing decided.
#[derive(Debug, Clone, Serialize)]
pub struct ParseFigure {
    pub lines: u64,
    pub secs: f64,
    pub lines_per_sec: f64,
    pub mib_per_sec: f64,
}

pub fn parse_only(path: &Path, bytes: u64) -> anyhow::Result<ParseFigure> {
    let compiled = ParseSpec::default().compile()?;
    let started = Instant::now();
    let mut count = 0u64;
    let progress = AtomicU64::new(0);
    let stats = replay::read::read(
        &LogSource::File(path.to_path_buf()),
        &compiled,
        u64::MAX,
        &progress,
        |_| false,
        |req| {
            count += req.cost;
            true
        },
    )?;
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        stats.malformed == 0,
        "the generated log has malformed lines"
    );
    Ok(ParseFigure {
        lines: stats.lines,
        secs,
        lines_per_sec: stats.lines as f64 / secs,
        mib_per_sec: bytes as f64 / secs / (1024.0 * 1024.0),
    })
}

/// A replay through `rules`, timed.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayFigure {
    pub lines: u64,
    pub configurations: usize,
    pub decisions: u64,
    pub denied: u64,
    pub secs: f64,
    pub decisions_per_sec: f64,
    /// This process's peak resident memory so far (VmHWM), MiB.
    pub peak_rss_mib: Option<f64>,
}

pub async fn replay_figure(
    limiter: &Limiter,
    path: &Path,
    rule: Rule,
    sweep: Vec<replay::SweepAxis>,
) -> anyhow::Result<ReplayFigure> {
    let spec = ReplaySpec {
        rules: vec![rule],
        sweep,
        ..ReplaySpec::default()
    };
    let started = Instant::now();
    let report = replay::run(
        limiter,
        &LogSource::File(path.to_path_buf()),
        &spec,
        None,
        &NoReplayObserver,
        CancellationToken::new(),
    )
    .await?;
    let secs = started.elapsed().as_secs_f64();
    let configurations = report.rules.len() + report.sweep.len();
    let decisions = report.requests * configurations as u64;
    let fail_open: u64 = report.rules.iter().map(|r| r.fail_open).sum::<u64>()
        + report.sweep.iter().map(|p| p.fail_open).sum::<u64>();
    anyhow::ensure!(fail_open == 0, "{fail_open} decisions failed open");
    Ok(ReplayFigure {
        lines: report.lines,
        configurations,
        decisions,
        denied: report.rules.iter().map(|r| r.denied).sum::<u64>()
            + report.sweep.iter().map(|p| p.denied).sum::<u64>(),
        secs,
        decisions_per_sec: decisions as f64 / secs,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// VmHWM from /proc/self/status, in MiB; `None` off Linux.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// redis-benchmark running the token bucket as a replay calls it: one key (of [`CLIENTS`]),
/// no telemetry, an explicit `now_ms` (a random 13-digit time, so that most calls find a
/// refilled bucket and admit, as most of a replay's calls do).
pub async fn ceiling_figure(
    bench: &RedisBenchmark,
    limiter: &Limiter,
    duration: Duration,
) -> anyhow::Result<ceiling::CeilingReport> {
    let rule = bench_rule();
    let kind = rule.kind();
    let key = format!(
        "{}:replay-ceiling:tb:{{bench}}:__rand_int__",
        limiter.keys().prefix()
    );
    let args = ["20", "2", "1__rand_int__", "1"].map(String::from).to_vec();
    let sha = ceiling::cache_script(
        &mut limiter.connection(),
        ratelockr::scripts::source(kind),
        std::slice::from_ref(&key),
        &args,
    )
    .await?;
    bench
        .evalsha_for(
            "token_bucket (replay's call)",
            &sha,
            &[key],
            &args,
            duration,
            CLIENTS as usize,
        )
        .await
}

/// The 5 × 5 grid of the sweep figure: capacity × refill rate around [`bench_rule`].
pub fn sweep_grid() -> Vec<replay::SweepAxis> {
    ["capacity=5,10,20,40,80", "refill_per_sec=0.5,1,2,4,8"]
        .iter()
        .map(|s| s.parse().expect("a valid axis"))
        .collect()
}
