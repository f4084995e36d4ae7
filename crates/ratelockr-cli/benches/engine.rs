//! `cargo bench`: the engine's own costs on this machine, with criterion's statistics.
//!
//! Every group runs against a private `redis-server` started on a free loopback port (it must
//! be on PATH: `scripts/deps.sh engine` installs it), never against a user's Redis.
//!
//! - `decision/<algorithm>`: one decision's round trip, one call at a time: the latency a
//!   caller sees on an idle connection.
//! - `batch_of_64/<algorithm>`: 64 decisions issued at once on one multiplexed connection
//!   (pipelined on the wire), waiting for all 64; criterion reports decisions per second.
//!   The wait for the slowest of each batch keeps this below `ratelockr bench`, whose 64
//!   callers never wait for each other.
//! - `stats_read/<keys in Redis>`: reading a rule's last 30 seconds from a Redis holding only
//!   that rule's counters and from one holding a million unrelated keys as well. The two
//!   estimates should agree: the read is 60 GETs in one pipeline, whatever else Redis holds.
//! - `keys/limiter_key`: formatting a limiter key, engine CPU alone.
//!
//! The end-to-end figures against Redis's own ceiling are `ratelockr bench` (`make bench`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::future::join_all;
use ratelockr::{EmbeddedRedis, KeySpace, Limiter, LimiterOptions, RedisTarget, Rule};
use ratelockr_cli::bench::stats::StatsServer;
use std::hint::black_box;
use std::time::Duration;
use tokio::runtime::Runtime;

const BATCH: usize = 64;
const CLIENT_KEYS: usize = 10_000;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn limiter(server: &EmbeddedRedis, prefix: &str) -> Limiter {
    let target = RedisTarget::parse(&server.url()).expect("the embedded server's URL");
    Limiter::new(
        &target,
        LimiterOptions {
            keys: KeySpace::new(prefix),
            deadline: Duration::from_secs(5),
            ..LimiterOptions::default()
        },
    )
}

/// One rule per algorithm, loose enough that the benchmark measures admissions and denials
/// alike: 100 per second per client key.
fn rules() -> [Rule; 3] {
    [
        Rule::token_bucket("bench", 100, 100.0).expect("valid rule"),
        Rule::sliding_window_log("bench", 100, Duration::from_secs(1)).expect("valid rule"),
        Rule::fixed_window("bench", 100, Duration::from_secs(1)).expect("valid rule"),
    ]
}

fn client_keys() -> Vec<String> {
    (0..CLIENT_KEYS).map(|i| format!("client-{i:06}")).collect()
}

/// A decision that Redis answered, or the benchmark stops: a fail-open is not a decision.
async fn decide(limiter: &Limiter, rule: &Rule, key: &str) {
    match limiter
        .try_check_at(rule, key, 1, ratelockr::At::ServerClock)
        .await
    {
        Ok(decision) => {
            black_box(decision);
        }
        Err(err) => panic!("Redis did not decide: {err}"),
    }
}

fn decisions(c: &mut Criterion) {
    let server = EmbeddedRedis::start().expect("a private redis-server (is it on PATH?)");
    let rt = runtime();
    // The limiter's connection task lives on this runtime.
    let _entered = rt.enter();
    let limiter = limiter(&server, "cbench");
    let keys = client_keys();

    let mut one = c.benchmark_group("decision");
    for rule in rules() {
        // Connected, and the script loaded, before anything is timed.
        rt.block_on(decide(&limiter, &rule, "warm"));
        let mut next = keys.iter().cycle();
        one.bench_function(rule.kind().as_str(), |b| {
            b.to_async(&rt).iter(|| {
                let key = next.next().expect("an endless cycle");
                decide(&limiter, &rule, key)
            })
        });
    }
    one.finish();

    let mut many = c.benchmark_group("batch_of_64");
    many.throughput(Throughput::Elements(BATCH as u64));
    for rule in rules() {
        let mut at = 0usize;
        many.bench_function(rule.kind().as_str(), |b| {
            b.to_async(&rt).iter(|| {
                let batch: Vec<&str> = (0..BATCH)
                    .map(|i| keys[(at + i) % keys.len()].as_str())
                    .collect();
                at = (at + BATCH) % keys.len();
                let (limiter, rule) = (&limiter, &rule);
                async move {
                    join_all(batch.into_iter().map(|key| decide(limiter, rule, key))).await;
                }
            })
        });
    }
    many.finish();
}

fn stats_reads(c: &mut Criterion) {
    const UNRELATED: u64 = 1_000_000;
    let rt = runtime();
    let _entered = rt.enter();
    let mut group = c.benchmark_group("stats_read");
    // Two servers side by side, the same counters in each; the second also holds a million
    // unrelated keys.
    let servers: Vec<(u64, StatsServer)> = [0, UNRELATED]
        .into_iter()
        .map(|populate| {
            let server = rt.block_on(StatsServer::start(populate));
            (
                populate,
                server.expect("a private redis-server (is it on PATH?)"),
            )
        })
        .collect();
    let second = ratelockr::telemetry::now_ms() / 1000;
    for (populate, server) in &servers {
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{populate} unrelated keys")),
            server,
            |b, server| {
                b.to_async(&rt).iter(|| async {
                    let points = server
                        .limiter
                        .stats_at(server.rule.name(), second)
                        .await
                        .expect("a stats read");
                    assert_eq!(points.len(), 30);
                    black_box(points);
                })
            },
        );
    }
    group.finish();
}

fn key_formatting(c: &mut Criterion) {
    let keys = KeySpace::default();
    let rule = Rule::token_bucket("api", 10, 5.0).expect("valid rule");
    c.bench_function("keys/limiter_key", |b| {
        b.iter(|| keys.limiter(black_box(&rule), black_box("user-000042")))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4));
    targets = decisions, stats_reads, key_formatting
}
criterion_main!(benches);
