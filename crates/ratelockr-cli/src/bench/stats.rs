//! Reading 30 seconds of stats costs the same whatever else is in Redis: 60 GETs in one
//! pipeline, no SCAN, no KEYS. Measured on two private redis-servers side by side, one holding
//! only the rule's counters and one holding a million unrelated keys as well (`DEBUG
//! POPULATE`), read in alternating rounds so that the machine's noise falls on both alike. No
//! user's Redis is ever filled.

use hdrhistogram::Histogram;
use ratelockr::embedded::EmbeddedRedis;
use ratelockr::keys::KeySpace;
use ratelockr::limiter::{Limiter, LimiterOptions};
use ratelockr::rule::Rule;
use ratelockr::telemetry;
use ratelockr::RedisTarget;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Alternating rounds per condition.
pub(crate) const ROUNDS: u64 = 5;

/// One condition of the stats benchmark, over all its rounds.
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
    /// Alternating rounds each condition was read in.
    pub rounds: u64,
}

/// A private redis-server holding one rule's telemetry counters and, optionally, a number of
/// unrelated keys: the setting of both stats benchmarks (`bench --stats` and `cargo bench`).
#[derive(Debug)]
pub struct StatsServer {
    _server: EmbeddedRedis,
    pub limiter: Limiter,
    /// The rule whose last 30 seconds are read.
    pub rule: Rule,
}

impl StatsServer {
    /// Starts the server, fills the rule's counters, then adds `populate` unrelated keys.
    pub async fn start(populate: u64) -> anyhow::Result<Self> {
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
        // A slow refill keeps the buckets' keys (TTL 200 s) for the whole run, so the empty
        // server's key count stays what the report says it is.
        let rule = Rule::token_bucket("stats-bench", 50, 0.5)?;
        // Fill the rule's counters so the read returns real numbers.
        for i in 0..500 {
            limiter.check(&rule, &format!("client-{}", i % 20)).await?;
        }
        if populate > 0 {
            // A million keys take a few seconds, longer than any decision deadline: a plain
            // blocking connection without a read timeout does it.
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
        }
        Ok(StatsServer {
            _server: server,
            limiter,
            rule,
        })
    }
}

/// One condition: its server and what its rounds measured.
struct Condition {
    server: StatsServer,
    latency: Histogram<u64>,
    reads: u64,
    busy: Duration,
}

impl Condition {
    async fn start(populate: u64) -> anyhow::Result<Self> {
        Ok(Condition {
            server: StatsServer::start(populate).await?,
            latency: Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3)?,
            reads: 0,
            busy: Duration::ZERO,
        })
    }

    async fn report(&self) -> anyhow::Result<StatsRun> {
        let mut conn = self.server.limiter.connection();
        let keys_in_redis: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await?;
        Ok(StatsRun {
            keys_in_redis,
            reads: self.reads,
            reads_per_sec: self.reads as f64 / self.busy.as_secs_f64(),
            p50_us: self.latency.value_at_quantile(0.5) as f64 / 1000.0,
            p99_us: self.latency.value_at_quantile(0.99) as f64 / 1000.0,
        })
    }
}

/// Runs the stats benchmark: `reads` sequential stats reads per condition, in `ROUNDS`
/// alternating rounds, from a server holding only the rule's counters and from one holding
/// `populate` unrelated keys as well.
pub async fn run(reads: u64, populate: u64) -> anyhow::Result<StatsReport> {
    let mut empty = Condition::start(0).await?;
    let mut populated = Condition::start(populate).await?;
    let now_second = telemetry::now_ms() / 1000;
    let per_round = (reads / ROUNDS).max(1);
    for round in 0..ROUNDS {
        // Which goes first alternates too.
        let order = match round % 2 {
            0 => [&mut empty, &mut populated],
            _ => [&mut populated, &mut empty],
        };
        for condition in order {
            measure(condition, now_second, per_round).await?;
        }
    }
    let (empty, populated) = (empty.report().await?, populated.report().await?);
    Ok(StatsReport {
        p50_ratio: populated.p50_us / empty.p50_us,
        throughput_ratio: populated.reads_per_sec / empty.reads_per_sec,
        empty,
        populated,
        rounds: ROUNDS,
    })
}

async fn measure(condition: &mut Condition, now_second: u64, reads: u64) -> anyhow::Result<()> {
    let (limiter, rule) = (&condition.server.limiter, &condition.server.rule);
    // Warm-up: a tenth of the reads, not counted.
    for _ in 0..reads / 10 {
        limiter.stats_at(rule.name(), now_second).await?;
    }
    let started = Instant::now();
    for _ in 0..reads {
        let t = Instant::now();
        let points = limiter.stats_at(rule.name(), now_second).await?;
        condition
            .latency
            .saturating_record(t.elapsed().as_nanos() as u64);
        anyhow::ensure!(
            points.len() == 30,
            "a stats read returned {} points",
            points.len()
        );
    }
    condition.busy += started.elapsed();
    condition.reads += reads;
    Ok(())
}
