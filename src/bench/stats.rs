//! Reading 30 seconds of stats costs the same whatever else is in Redis: 60 GETs in one
//! pipeline, no SCAN, no KEYS. Measured on a private redis-server, empty and then holding a
//! million unrelated keys (`DEBUG POPULATE`), so no user's Redis is ever filled.

use crate::embedded::EmbeddedRedis;
use crate::keys::KeySpace;
use crate::limiter::{Limiter, LimiterOptions};
use crate::rule::Rule;
use crate::target::RedisTarget;
use crate::telemetry;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{Duration, Instant};

/// One condition of the stats benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct StatsRun {
    /// Keys in the database while reading.
    pub keys_in_redis: u64,
    pub reads: u64,
    pub reads_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// The two conditions side by side.
#[derive(Debug, Clone, Serialize)]
pub struct StatsReport {
    pub empty: StatsRun,
    pub populated: StatsRun,
    /// populated ÷ empty p50 latency: 1.0 means the size of Redis does not matter.
    pub p50_ratio: f64,
    /// populated ÷ empty throughput.
    pub throughput_ratio: f64,
}

/// Runs the stats benchmark on its own redis-server: `reads` sequential stats reads, first
/// with only the rule's counters in Redis, then with `populate` unrelated keys added.
pub async fn run(reads: u64, populate: u64) -> anyhow::Result<StatsReport> {
    // DEBUG is disabled by default since Redis 7; this private server allows it locally.
    let server = EmbeddedRedis::start_with(&["--enable-debug-command", "local"])?;
    let target = RedisTarget::parse(&server.url())?;
    let limiter = Limiter::new(
        &target,
        LimiterOptions {
            keys: KeySpace::new("statsbench"),
            deadline: Duration::from_secs(5),
            ..LimiterOptions::default()
        },
    );
    let rule = Rule::token_bucket("stats-bench", 50, 50.0)?;
    // Fill the rule's counters so the read returns real numbers.
    for i in 0..500 {
        limiter.check(&rule, &format!("client-{}", i % 20)).await?;
    }
    let now_second = telemetry::now_ms() / 1000;
    let empty = measure(&limiter, &rule, now_second, reads).await?;
    // A million keys take a few seconds, longer than any decision deadline: a plain blocking
    // connection without a read timeout does it.
    let client = target.client();
    tokio::task::spawn_blocking(move || -> redis::RedisResult<()> {
        let mut conn = client.get_connection()?;
        redis::cmd("DEBUG")
            .arg("POPULATE")
            .arg(populate)
            .arg("unrelated")
            .query(&mut conn)
    })
    .await??;
    let populated = measure(&limiter, &rule, now_second, reads).await?;
    drop(server);
    Ok(StatsReport {
        p50_ratio: populated.p50_us / empty.p50_us,
        throughput_ratio: populated.reads_per_sec / empty.reads_per_sec,
        empty,
        populated,
    })
}

async fn measure(
    limiter: &Limiter,
    rule: &Rule,
    now_second: u64,
    reads: u64,
) -> anyhow::Result<StatsRun> {
    let mut conn = limiter.connection();
    let keys_in_redis: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await?;
    // Warm-up: a tenth of the reads, not counted.
    for _ in 0..reads / 10 {
        limiter.stats_at(rule.name(), now_second).await?;
    }
    let mut latency = Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3)?;
    let started = Instant::now();
    for _ in 0..reads {
        let t = Instant::now();
        let points = limiter.stats_at(rule.name(), now_second).await?;
        latency.saturating_record(t.elapsed().as_nanos() as u64);
        anyhow::ensure!(
            points.len() == 30,
            "a stats read returned {} points",
            points.len()
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(StatsRun {
        keys_in_redis,
        reads,
        reads_per_sec: reads as f64 / seconds,
        p50_us: latency.value_at_quantile(0.5) as f64 / 1000.0,
        p99_us: latency.value_at_quantile(0.99) as f64 / 1000.0,
    })
}
