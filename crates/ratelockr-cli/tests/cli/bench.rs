//! The load-test machinery against a real redis-server: it counts decisions and errors apart,
//! and refuses to start against a Redis that does not answer. No timing assertions.

use ratelockr::{AlgorithmKind, EmbeddedRedis, KeySpace, Limiter, LimiterOptions, Metrics};
use ratelockr::{Outcome, RedisTarget};
use ratelockr_cli::bench::{
    api::{ApiBench, LoadGenerator, Served},
    bench_rule,
    engine::EngineBench,
};
use std::sync::Arc;
use std::time::Duration;

fn short(kind: AlgorithmKind) -> EngineBench {
    EngineBench {
        rules: vec![bench_rule(kind).expect("rule")],
        concurrency: 4,
        keys: 3,
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(300),
        attack: None,
    }
}

/// A limiter on `redis` with its keys under `prefix`, a deadline no run on a busy machine
/// reaches, and metrics observing every decision.
fn observed_limiter(redis: &EmbeddedRedis, prefix: &str) -> (Limiter, Metrics) {
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let metrics = Metrics::new();
    let limiter = Limiter::new(
        &target,
        LimiterOptions {
            keys: KeySpace::new(prefix),
            deadline: Duration::from_secs(2),
            ..LimiterOptions::default()
        },
    )
    .with_observer(Arc::new(metrics.clone()));
    (limiter, metrics)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_every_decision_once_and_no_errors_against_a_healthy_redis() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let (limiter, metrics) = observed_limiter(&redis, "bench-test");
    for kind in AlgorithmKind::ALL {
        let report = short(kind).run(&limiter).await.expect("bench runs");
        assert_eq!(report.algorithm, kind.as_str());
        assert!(report.decisions > 0, "{report:?}");
        assert_eq!(report.errors, 0, "{report:?}");
        assert_eq!(report.allowed + report.denied, report.decisions);
        assert!(report.p50_us <= report.p99_us && report.p99_us <= report.max_us);
        // Only 3 keys at full speed: the rule denies some, and the metrics saw all of them
        // (warm-up and the first decision included, so at least as many).
        let seen: u64 = [Outcome::Allowed, Outcome::Denied]
            .into_iter()
            .map(|o| metrics.evaluations(kind, o))
            .sum();
        assert!(seen >= report.decisions, "{seen} < {}", report.decisions);
        assert_eq!(metrics.evaluations(kind, Outcome::FailOpen), 0);
    }
    // The same on a runtime of its own.
    let report = short(AlgorithmKind::TokenBucket)
        .run_on_own_runtime(&limiter, 1)
        .await
        .expect("bench runs");
    assert!(report.decisions > 0 && report.errors == 0, "{report:?}");
}

/// An attack mix keeps its ordinary keys under their limit, however few keys and however
/// fast: the 1,000 keys at full speed went over, and 99.6 % of decisions were
/// attack-like denials instead of the 90 % offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attack_mix_holds_and_says_what_it_achieved() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let limiter = Limiter::new(
        &target,
        LimiterOptions {
            keys: KeySpace::new("bench-attack-test"),
            deadline: Duration::from_secs(2),
            deny_cache: Some(ratelockr::DenyCacheOptions::default()),
            ..LimiterOptions::default()
        },
    );
    // The rates: requests that end as they are decided never hold a slot in flight.
    for kind in AlgorithmKind::RATES {
        let bench = EngineBench {
            rules: vec![ratelockr_cli::bench::attack_rule(kind).expect("rule")],
            keys: 2,
            attack: Some(ratelockr_cli::bench::engine::Attack {
                per_mille: 900,
                attackers: 3,
            }),
            ..short(kind)
        };
        let report = bench.run(&limiter).await.expect("bench runs");
        let mix = report.mix.expect("an attack reports its mix");
        assert_eq!(mix.attack + mix.ordinary, report.decisions + report.errors);
        assert!(mix.ordinary > 0 && mix.attack > mix.ordinary, "{mix:?}");
        assert_eq!(mix.ordinary_denied, 0, "{kind:?}: {mix:?}");
        assert!((85.0..=95.0).contains(&mix.attack_pct), "{mix:?}");
        assert!(report.denied > 0, "the attackers went over: {report:?}");
    }
}

#[tokio::test]
async fn refuses_to_measure_a_redis_that_does_not_answer() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let target = RedisTarget::parse(&format!("redis://127.0.0.1:{port}")).expect("url");
    let limiter = Limiter::new(
        &target,
        LimiterOptions {
            deadline: Duration::from_millis(200),
            ..LimiterOptions::default()
        },
    );
    let err = short(AlgorithmKind::FixedWindow)
        .run(&limiter)
        .await
        .expect_err("no Redis there");
    assert!(err.to_string().contains("does not answer"), "{err}");
}

fn short_api() -> ApiBench {
    ApiBench {
        served: Served::Endpoint,
        rule: bench_rule(AlgorithmKind::TokenBucket).expect("rule"),
        connections: 4,
        keys: 3,
        batch: 1,
        warmup: Duration::from_millis(100),
        duration: Duration::from_millis(300),
        load: LoadGenerator::InProcess,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_load_generator_counts_answers_redis_decided() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let (limiter, metrics) = observed_limiter(&redis, "bench-api-test");
    let report = short_api()
        .run_on_own_runtime(&limiter, 1)
        .await
        .expect("bench runs");
    assert!(report.decisions > 0, "{report:?}");
    assert_eq!(report.errors, 0, "{report:?}");
    assert_eq!(report.allowed + report.denied, report.decisions);
    assert!(report.p50_us <= report.p99_us && report.p99_us <= report.max_us);
    // Every counted answer was a decision the engine made behind the endpoint.
    let kind = AlgorithmKind::TokenBucket;
    let seen: u64 = [Outcome::Allowed, Outcome::Denied]
        .into_iter()
        .map(|o| metrics.evaluations(kind, o))
        .sum();
    assert!(seen >= report.decisions, "{seen} < {}", report.decisions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_form_counts_every_item_redis_decided() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let (limiter, _) = observed_limiter(&redis, "bench-api-batch-test");
    let report = ApiBench {
        batch: 8,
        connections: 2,
        ..short_api()
    }
    .run_on_own_runtime(&limiter, 1)
    .await
    .expect("bench runs");
    assert!(report.decisions > 0, "{report:?}");
    assert_eq!(report.errors, 0, "{report:?}");
    assert_eq!(report.batch, 8);
    // Whole batches only: every request answered all of its items.
    assert_eq!(report.decisions % 8, 0, "{report:?}");
}

/// The tower layer's example route, alone and behind the layer: alone, every answer is a 200
/// and nothing is decided by Redis; behind a tight layer, its 429s count as denials and each
/// counted answer is a decision the engine made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_route_is_measured_alone_and_behind_the_layer() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let (limiter, metrics) = observed_limiter(&redis, "bench-layer-test");
    let alone = ApiBench {
        served: Served::Route,
        ..short_api()
    }
    .run_on_own_runtime(&limiter, 1)
    .await
    .expect("bench runs");
    assert!(alone.decisions > 0, "{alone:?}");
    assert_eq!((alone.denied, alone.errors), (0, 0), "{alone:?}");
    let kind = AlgorithmKind::TokenBucket;
    let decided = |metrics: &Metrics| -> u64 {
        [Outcome::Allowed, Outcome::Denied]
            .into_iter()
            .map(|o| metrics.evaluations(kind, o))
            .sum()
    };
    assert_eq!(decided(&metrics), 0, "the route alone asks Redis nothing");

    // 20 requests per key per second, asked for far faster: most are 429s.
    let tight = ratelockr::Rule::token_bucket("tight", 2, 20.0).expect("rule");
    let limited = ApiBench {
        served: Served::LimitedRoute,
        rule: tight,
        ..short_api()
    }
    .run_on_own_runtime(&limiter, 1)
    .await
    .expect("bench runs");
    assert_eq!(limited.errors, 0, "{limited:?}");
    assert!(
        limited.allowed > 0 && limited.denied > limited.allowed,
        "{limited:?}"
    );
    assert!(decided(&metrics) >= limited.decisions, "{limited:?}");
}

#[tokio::test]
async fn the_http_load_generator_refuses_a_redis_that_does_not_answer() {
    let limiter = Limiter::new(
        &RedisTarget::parse("redis://127.0.0.1:1").expect("url"),
        LimiterOptions {
            deadline: Duration::from_millis(200),
            ..LimiterOptions::default()
        },
    );
    let err = short_api().run(&limiter).await.expect_err("no Redis there");
    assert!(err.to_string().contains("does not answer"), "{err}");
}

/// `bench --lua`'s profile: every piece it names is a loop `bench/profile_loop.lua` runs (an
/// unknown one is an error), and its scratch keys are gone afterwards.
#[tokio::test]
async fn the_lua_profile_runs_every_piece_it_names() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let limiter = Limiter::new(&target, LimiterOptions::default());
    let mut conn = limiter.connection();
    let pieces = ratelockr_cli::bench::lua_profile::lua_profile(&mut conn, limiter.keys(), 10, 1)
        .await
        .expect("every piece runs");
    let names: Vec<&str> = pieces.iter().map(|p| p.piece.as_str()).collect();
    for expected in ["empty", "SET EX", "SET KEEPTTL", "math.floor", "TIME"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(pieces.iter().all(|p| p.rounds.len() == 1), "{pieces:?}");
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    assert!(left.is_empty(), "scratch keys left: {left:?}");
}
