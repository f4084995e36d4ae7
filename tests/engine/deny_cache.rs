//! The local deny cache against a real redis-server: it repeats Redis's denials without asking
//! Redis, never admits what Redis denied, and never denies past the time Redis named.

use crate::common;

use crate::common::{fork, limiter_with, options, query};
use ratelockr::{
    AlgorithmKind, At, DenyCacheOptions, Limiter, LimiterOptions, Metrics, Outcome, Rule, RuleError,
};
use std::sync::Arc;
use std::time::Duration;

/// 100 a second in each algorithm (the benchmarks' rule).
fn bench_rule(kind: AlgorithmKind) -> Result<Rule, RuleError> {
    let name = "bench";
    match kind {
        AlgorithmKind::TokenBucket => Rule::token_bucket(name, 100, 100.0),
        AlgorithmKind::Gcra => Rule::gcra(name, 100, Duration::from_secs(1), 100),
        AlgorithmKind::SlidingWindowLog => {
            Rule::sliding_window_log(name, 100, Duration::from_secs(1))
        }
        AlgorithmKind::SlidingWindowCounter => {
            Rule::sliding_window_counter(name, 100, Duration::from_secs(1))
        }
        AlgorithmKind::FixedWindow => Rule::fixed_window(name, 100, Duration::from_secs(1)),
        AlgorithmKind::Concurrency => Rule::concurrency(name, 100, Duration::from_secs(1)),
        AlgorithmKind::Calendar => Rule::calendar(name, 100, ratelockr::Period::Hour, "UTC"),
    }
}

fn cached(url: &str, name: &str) -> (Limiter, Metrics) {
    let metrics = Metrics::new();
    let limiter = limiter_with(
        url,
        LimiterOptions {
            deny_cache: Some(DenyCacheOptions::default()),
            ..options(name)
        },
    )
    .with_observer(Arc::new(metrics.clone()));
    (limiter, metrics)
}

/// EVALSHA calls Redis has served so far (INFO commandstats).
async fn evalsha_calls(limiter: &Limiter) -> u64 {
    let info: String = query(limiter, redis::cmd("INFO").arg("commandstats")).await;
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_denied_key_is_denied_in_process_until_the_time_redis_named() {
    let server = common::redis();
    let (limiter, metrics) = cached(&server.url(), "deny");
    let rule = Rule::fixed_window("fw", 2, Duration::from_millis(1_500)).expect("valid rule");
    for _ in 0..2 {
        assert!(
            limiter
                .check(&rule, "attacker")
                .await
                .expect("valid")
                .allowed
        );
    }
    let first = limiter.check(&rule, "attacker").await.expect("valid");
    assert!(!first.allowed && first.retry_after_ms > 0, "{first:?}");
    let calls = evalsha_calls(&limiter).await;

    for _ in 0..50 {
        let d = limiter.check(&rule, "attacker").await.expect("valid");
        assert!(!d.allowed && !d.fail_open(), "{d:?}");
        assert!(d.retry_after_ms >= 1, "{d:?}");
        assert!(
            d.retry_after_ms <= first.retry_after_ms,
            "the cache never makes a client wait longer than Redis said: {d:?} vs {first:?}"
        );
    }
    assert_eq!(
        evalsha_calls(&limiter).await,
        calls,
        "cached denials make no round trip"
    );
    assert_eq!(
        metrics.evaluations(AlgorithmKind::FixedWindow, Outcome::CacheDenied),
        50
    );
    assert_eq!(
        metrics.evaluations(AlgorithmKind::FixedWindow, Outcome::Denied),
        1
    );
    assert!(metrics.render().contains(
        r#"ratelockr_evaluations_total{algorithm="fixed_window",result="cache_denied"} 50"#
    ));
    let stats = limiter.deny_cache_stats().expect("the cache is on");
    assert_eq!((stats.entries, stats.hits), (1, 50));

    // Another key is still decided by Redis.
    assert!(
        limiter
            .check(&rule, "ordinary")
            .await
            .expect("valid")
            .allowed
    );
    assert_eq!(evalsha_calls(&limiter).await, calls + 1);

    // Once Redis's wait is over, Redis decides again (and its window has ended: it admits).
    tokio::time::sleep(Duration::from_millis(first.retry_after_ms)).await;
    let after = limiter.check(&rule, "attacker").await.expect("valid");
    assert_eq!(evalsha_calls(&limiter).await, calls + 2, "Redis was asked");
    assert!(after.allowed && !after.fail_open(), "{after:?}");
}

#[tokio::test]
async fn every_cached_denial_is_one_redis_would_make() {
    let server = common::redis();
    let (limiter, metrics) = cached(&server.url(), "agree");
    // The same limiter's keys, asked without the cache: the referee.
    let referee = limiter_with(
        &server.url(),
        LimiterOptions {
            keys: limiter.keys().clone(),
            ..options("agree-referee")
        },
    );
    // The rate algorithms: a concurrency limit's denial is never cached (tests/engine/lease.rs).
    for kind in AlgorithmKind::RATES {
        let rule = bench_rule(kind).expect("valid rule");
        let cost = rule.algorithm().max_cost();
        assert!(
            limiter
                .check_cost(&rule, "k", cost)
                .await
                .expect("valid")
                .allowed
        );
        let denied = limiter.check_cost(&rule, "k", cost).await.expect("valid");
        assert!(!denied.allowed, "{kind}: {denied:?}");
        for probe in 0..5 {
            let cached = limiter.check_cost(&rule, "k", cost).await.expect("valid");
            assert!(!cached.allowed, "{kind}: {cached:?}");
            // Redis, asked later on a copy of the state, denies too: a limiter's state only
            // improves with time, so it would have denied at the cache's moment.
            let copy = format!("probe-{probe}");
            let keys = limiter.keys();
            fork(
                &limiter,
                &keys.limiter(&rule, "k"),
                &keys.limiter(&rule, &copy),
            )
            .await;
            let redis = referee.check_cost(&rule, &copy, cost).await.expect("valid");
            assert!(!redis.allowed && !redis.fail_open(), "{kind}: {redis:?}");
        }
        assert_eq!(metrics.evaluations(kind, Outcome::CacheDenied), 5, "{kind}");
    }
}

#[tokio::test]
async fn a_cheaper_request_and_an_explicit_clock_ask_redis() {
    let server = common::redis();
    let (limiter, metrics) = cached(&server.url(), "cost");
    let rule = Rule::token_bucket("tb", 10, 0.01).expect("valid rule");
    assert!(
        limiter
            .check_cost(&rule, "k", 8)
            .await
            .expect("valid")
            .allowed
    );
    assert!(
        !limiter
            .check_cost(&rule, "k", 5)
            .await
            .expect("valid")
            .allowed
    );
    let calls = evalsha_calls(&limiter).await;
    assert!(
        !limiter
            .check_cost(&rule, "k", 6)
            .await
            .expect("valid")
            .allowed
    );
    assert_eq!(
        evalsha_calls(&limiter).await,
        calls,
        "a dearer request is denied in process"
    );
    let cheap = limiter.check_cost(&rule, "k", 2).await.expect("valid");
    assert!(
        cheap.allowed,
        "a request Redis can admit is asked of Redis: {cheap:?}"
    );
    assert_eq!(evalsha_calls(&limiter).await, calls + 1);
    let explicit = limiter
        .check_at(&rule, "k", 5, At::Millis(ratelockr::telemetry::now_ms()))
        .await
        .expect("valid");
    assert!(!explicit.allowed);
    assert_eq!(
        evalsha_calls(&limiter).await,
        calls + 2,
        "explicit time asks Redis"
    );
    assert_eq!(
        metrics.evaluations(AlgorithmKind::TokenBucket, Outcome::CacheDenied),
        1
    );
}

#[tokio::test]
async fn a_reset_key_is_asked_of_redis_again() {
    let server = common::redis();
    let (limiter, _) = cached(&server.url(), "reset");
    let rule = Rule::fixed_window("fw", 1, Duration::from_secs(600)).expect("valid rule");
    assert!(limiter.check(&rule, "k").await.expect("valid").allowed);
    assert!(!limiter.check(&rule, "k").await.expect("valid").allowed);
    assert_eq!(limiter.deny_cache_stats().map(|s| s.entries), Some(1));
    limiter.reset("fw", Some("k")).await.expect("reset");
    let after = limiter.check(&rule, "k").await.expect("valid");
    assert!(
        after.allowed,
        "the reset state admits, the stale denial is gone: {after:?}"
    );
}

#[tokio::test]
async fn an_enforced_policy_repeats_its_binding_limits_denial_and_a_shadow_one_always_asks() {
    use ratelockr::policy::{parse_policies, Format};
    let server = common::redis();
    let (limiter, metrics) = cached(&server.url(), "deny-policy");
    let file = r#"
[[policies]]
name = "api"
  [[policies.limits]]
  name = "burst"
  algorithm = "token-bucket"
  capacity = 5
  refill_per_sec = 0.001
  [[policies.limits]]
  name = "hourly"
  algorithm = "fixed-window"
  limit = 2
  window_ms = 3600000
[[policies]]
name = "trial"
mode = "shadow"
  [[policies.limits]]
  name = "hourly"
  algorithm = "fixed-window"
  limit = 1
  window_ms = 3600000
"#;
    let policies = parse_policies(file, Format::Toml).expect("valid");
    let (api, trial) = (&policies[0], &policies[1]);
    for _ in 0..2 {
        let d = limiter
            .check_policy_cost(api, "attacker", 1)
            .await
            .expect("valid");
        assert!(d.allowed, "{d:?}");
    }
    let first = limiter
        .check_policy_cost(api, "attacker", 1)
        .await
        .expect("valid");
    assert!(!first.allowed, "{first:?}");
    assert_eq!(first.binding(), Some("hourly"));
    let calls = evalsha_calls(&limiter).await;
    for _ in 0..20 {
        let d = limiter
            .check_policy_cost(api, "attacker", 1)
            .await
            .expect("valid");
        assert!(!d.allowed && d.would_deny() && !d.fail_open(), "{d:?}");
        assert_eq!(d.binding(), Some("hourly"));
        assert!(
            d.retry_after_ms >= 1 && d.retry_after_ms <= first.retry_after_ms,
            "{d:?}"
        );
    }
    // INFO itself is not an EVALSHA: nothing reached Redis's scripts meanwhile.
    assert_eq!(evalsha_calls(&limiter).await, calls);
    assert!(metrics
        .render()
        .contains("ratelockr_policy_decisions_total{policy=\"api\",result=\"cache_denied\"} 20"));
    // Another key is not denied by the attacker's entry.
    assert!(
        limiter
            .check_policy_cost(api, "bystander", 1)
            .await
            .expect("valid")
            .allowed
    );
    // A shadow policy's would-be denials are counted in Redis: each asks.
    for _ in 0..3 {
        let d = limiter
            .check_policy_cost(trial, "attacker", 1)
            .await
            .expect("valid");
        assert!(d.allowed, "{d:?}");
    }
    let before = evalsha_calls(&limiter).await;
    let d = limiter
        .check_policy_cost(trial, "attacker", 1)
        .await
        .expect("valid");
    assert!(d.allowed && d.would_deny(), "{d:?}");
    assert_eq!(evalsha_calls(&limiter).await, before + 1);
}
