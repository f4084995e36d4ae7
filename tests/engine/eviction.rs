//! Idle limiter keys evict themselves by their TTL; a client that comes back starts afresh.
//! Polls with a bounded loop rather than asserting on timing.

use crate::common::{decide_now, eventually, exists, limiter, pttl, redis};
use ratelockr::Rule;
use std::time::Duration;

async fn evicts(rule: Rule, ttl_ms: i64, fresh_remaining: i64) {
    let server = redis();
    let limiter = limiter(&server, "evict");
    let key = limiter.keys().limiter(&rule, "idle");
    let max_cost = rule.algorithm().max_cost();
    let d = decide_now(&limiter, &rule, "idle", max_cost).await;
    assert!(d.allowed && d.remaining == 0, "{d:?}");
    let ttl = pttl(&limiter, &key).await;
    assert!(ttl > 0 && ttl <= ttl_ms, "{}: PTTL {ttl}", rule.name());
    let evicted = eventually(Duration::from_secs(10), || async {
        !exists(&limiter, &key).await
    })
    .await;
    assert!(evicted, "{} key still there after 10 s", rule.name());
    let d = decide_now(&limiter, &rule, "idle", 1).await;
    assert_eq!(
        d.remaining_or_unknown(),
        fresh_remaining,
        "{}: {d:?}",
        rule.name()
    );
}

#[tokio::test]
async fn an_idle_bucket_expires_after_twice_its_fill_time() {
    // Capacity 1 at 2 tokens a second: ceil(1 / 2 * 2) = 1 s.
    evicts(Rule::token_bucket("tb", 1, 2.0).expect("valid"), 1_000, 0).await;
}

#[tokio::test]
async fn an_idle_log_expires_after_its_window() {
    evicts(
        Rule::sliding_window_log("sw", 3, Duration::from_millis(500)).expect("valid"),
        500,
        2,
    )
    .await;
}

#[tokio::test]
async fn an_idle_gcra_key_expires_when_its_allowance_is_full() {
    // 3 per 500 ms, bursts of 3: after a cost of 3 the TAT is 500 ms ahead; PX 500.
    evicts(
        Rule::gcra("gc", 3, Duration::from_millis(500), 3).expect("valid"),
        500,
        2,
    )
    .await;
}

#[tokio::test]
async fn idle_window_counters_expire_after_two_windows() {
    evicts(
        Rule::sliding_window_counter("sc", 3, Duration::from_millis(500)).expect("valid"),
        1_000,
        2,
    )
    .await;
}

#[tokio::test]
async fn a_fixed_window_counter_expires_with_its_window() {
    evicts(
        Rule::fixed_window("fw", 3, Duration::from_millis(500)).expect("valid"),
        500,
        2,
    )
    .await;
}
