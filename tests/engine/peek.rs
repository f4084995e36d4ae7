//! Peek (a cost of 0) in all five scripts: it says what is left and when the allowance is full,
//! consumes nothing, writes nothing and is counted nowhere.

use crate::common;

use crate::common::{query, redis, T0};
use ratelockr::{At, Limiter, Metrics, Outcome, Rule};
use std::sync::Arc;

fn five() -> Vec<Rule> {
    vec![
        Rule::token_bucket("tb", 4, 0.01).expect("valid"),
        Rule::gcra("gc", 4, std::time::Duration::from_secs(600), 4).expect("valid"),
        Rule::sliding_window_log("sw", 4, std::time::Duration::from_secs(600)).expect("valid"),
        Rule::sliding_window_counter("sc", 4, std::time::Duration::from_secs(600)).expect("valid"),
        Rule::fixed_window("fw", 4, std::time::Duration::from_secs(600)).expect("valid"),
    ]
}

/// The fixed window has no explicit clock (its window is its key's TTL); the others decide at
/// `T0 + offset`.
fn at(rule: &Rule, offset: u64) -> At {
    match rule.kind() {
        ratelockr::AlgorithmKind::FixedWindow => At::ServerClock,
        _ => At::Millis(T0 + offset),
    }
}

async fn dump(limiter: &Limiter, key: &str) -> Option<Vec<u8>> {
    query(limiter, redis::cmd("DUMP").arg(key)).await
}

#[tokio::test]
async fn a_peek_reports_what_a_check_would_leave_and_changes_nothing() {
    let server = redis();
    let metrics = Metrics::new();
    let limiter = common::limiter(&server, "peek").with_observer(Arc::new(metrics.clone()));
    for rule in five() {
        let kind = rule.kind();
        let key = limiter.keys().limiter(&rule, "c");

        // A fresh key: the full allowance, nothing to wait for, and no key written.
        let fresh = limiter
            .peek_at(&rule, "c", at(&rule, 0))
            .await
            .expect("peek");
        assert!(fresh.allowed && !fresh.fail_open(), "{kind}: {fresh:?}");
        assert_eq!((fresh.remaining, fresh.reset_after_ms), (4, 0), "{kind}");
        assert_eq!(dump(&limiter, &key).await, None, "{kind}: a peek wrote");

        // After a request of 3, a peek at the same moment says what that decision said.
        let check = limiter
            .check_at(&rule, "c", 3, at(&rule, 0))
            .await
            .expect("check");
        assert!(check.allowed && check.remaining == 1, "{kind}: {check:?}");
        let before = dump(&limiter, &key).await;
        assert!(before.is_some(), "{kind}: the check stored nothing");
        for _ in 0..3 {
            let peek = limiter
                .peek_at(&rule, "c", at(&rule, 0))
                .await
                .expect("peek");
            assert!(peek.allowed && peek.retry_after_ms == 0, "{kind}: {peek:?}");
            assert_eq!(peek.remaining, 1, "{kind}: {peek:?}");
            // The fixed window's TTL runs on; the others answer exactly as the check did.
            if kind != ratelockr::AlgorithmKind::FixedWindow {
                assert_eq!(peek.reset_after_ms, check.reset_after_ms, "{kind}");
            } else {
                assert!(peek.reset_after_ms <= check.reset_after_ms, "{kind}");
            }
        }
        assert_eq!(dump(&limiter, &key).await, before, "{kind}: a peek wrote");
        // Nothing was consumed: the one unit left is still there.
        let last = limiter
            .check_at(&rule, "c", 1, at(&rule, 0))
            .await
            .expect("check");
        assert!(last.allowed && last.remaining == 0, "{kind}: {last:?}");

        // Telemetry and metrics counted the two checks, not the four peeks.
        let second = at(&rule, 0)
            .millis()
            .unwrap_or_else(ratelockr::telemetry::now_ms)
            / 1000;
        let counted = limiter.stats_at(rule.name(), second).await.expect("stats");
        let total: u64 = counted.iter().map(|p| p.allowed + p.denied).sum();
        assert_eq!(total, 2, "{kind}: {counted:?}");
        assert_eq!(metrics.evaluations(kind, Outcome::Allowed), 2, "{kind}");
    }
}

#[tokio::test]
async fn a_peek_at_a_limited_key_says_how_long_until_full() {
    let server = redis();
    let limiter = common::limiter(&server, "peek-full");
    // GCRA, 4 per 10 s: after 4 at once, full again in 10 s, and nothing left now.
    let rule = Rule::gcra("gc", 4, std::time::Duration::from_secs(10), 4).expect("valid");
    limiter
        .check_at(&rule, "c", 4, At::Millis(T0))
        .await
        .expect("check");
    let peek = limiter
        .peek_at(&rule, "c", At::Millis(T0 + 2_500))
        .await
        .expect("peek");
    assert_eq!(
        (peek.remaining, peek.reset_after_ms),
        (1, 7_500),
        "{peek:?}"
    );
    // The key is there, and an invalid key is refused before Redis is asked.
    assert!(limiter.peek(&rule, "").await.is_err());
}
