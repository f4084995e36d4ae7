//! The fixed window against a real Redis. Its window is the counter key's lifetime, so it runs
//! on the Redis clock; windows are a minute long except where a test waits for one to end.

use crate::common::{decide_now, limiter, pttl, query, redis};
use ratelockr::{Limiter, Rule};
use std::time::Duration;

const MINUTE: u64 = 60_000;

/// (cost, allowed, remaining, the counter afterwards)
type Step = (u64, bool, i64, u64);

async fn counter(limiter: &Limiter, key: &str) -> Option<u64> {
    query(limiter, redis::cmd("GET").arg(key)).await
}

#[tokio::test]
async fn table_of_decisions() {
    let server = redis();
    let limiter = limiter(&server, "fw-table");
    let rule = Rule::fixed_window("fw", 5, Duration::from_millis(MINUTE)).expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "fills and denies",
            vec![
                (1, true, 4, 1),
                (1, true, 3, 2),
                (1, true, 2, 3),
                (1, true, 1, 4),
                (1, true, 0, 5),
                (1, false, 0, 5),
                (1, false, 0, 5),
            ],
        ),
        (
            "cost",
            vec![
                (3, true, 2, 3),
                (3, false, 2, 3),
                (5, false, 2, 3),
                (2, true, 0, 5),
                (1, false, 0, 5),
            ],
        ),
        ("one request of the whole limit", vec![(5, true, 0, 5)]),
    ];
    for (client, steps) in &cases {
        let key = limiter.keys().limiter(&rule, client);
        for (i, &(cost, allowed, remaining, count)) in steps.iter().enumerate() {
            let d = decide_now(&limiter, &rule, client, cost).await;
            let ctx = format!("case {client:?}, step {i}: {d:?}");
            assert_eq!(
                (d.allowed, d.remaining_or_unknown()),
                (allowed, remaining),
                "{ctx}"
            );
            assert_eq!(counter(&limiter, &key).await, Some(count), "{ctx}");
            // Both waits are what is left of the window.
            assert!(d.reset_after_ms > 0 && d.reset_after_ms <= MINUTE, "{ctx}");
            if allowed {
                assert_eq!(d.retry_after_ms, 0, "{ctx}");
            } else {
                // The key is gone one millisecond after its PTTL reaches 0.
                assert_eq!(d.retry_after_ms, d.reset_after_ms + 1, "{ctx}");
            }
        }
    }
}

#[tokio::test]
async fn a_rejected_burst_does_not_inflate_the_counter() {
    let server = redis();
    let limiter = limiter(&server, "fw-burst");
    let rule = Rule::fixed_window("fw", 10, Duration::from_millis(MINUTE)).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    assert!(decide_now(&limiter, &rule, "c", 6).await.allowed);
    for _ in 0..25 {
        let d = decide_now(&limiter, &rule, "c", 6).await;
        assert!(!d.allowed);
        assert_eq!(d.remaining, 4);
    }
    assert_eq!(counter(&limiter, &key).await, Some(6));
    // The four units the burst never took are still there.
    let d = decide_now(&limiter, &rule, "c", 4).await;
    assert!(d.allowed && d.remaining == 0, "{d:?}");
    for _ in 0..25 {
        assert!(!decide_now(&limiter, &rule, "c", 1).await.allowed);
    }
    assert_eq!(counter(&limiter, &key).await, Some(10));
}

#[tokio::test]
async fn the_first_increment_sets_the_window_and_later_ones_keep_it() {
    let server = redis();
    let limiter = limiter(&server, "fw-ttl");
    let rule = Rule::fixed_window("fw", 100, Duration::from_millis(MINUTE)).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    let d = decide_now(&limiter, &rule, "c", 1).await;
    assert_eq!(d.reset_after_ms, MINUTE, "a new window is a whole window");
    let ttl = pttl(&limiter, &key).await;
    assert!((58_500..=60_000).contains(&ttl), "PTTL {ttl}");
    // Pretend 30 s went by: later requests must not stretch the window.
    let _: i64 = query(&limiter, redis::cmd("PEXPIRE").arg(&key).arg(30_000)).await;
    for _ in 0..5 {
        let d = decide_now(&limiter, &rule, "c", 1).await;
        assert!(d.allowed && d.reset_after_ms <= 30_000, "{d:?}");
        assert!(pttl(&limiter, &key).await <= 30_000);
    }
    // A counter that lost its TTL (someone's PERSIST) gets the window back.
    let _: i64 = query(&limiter, redis::cmd("PERSIST").arg(&key)).await;
    decide_now(&limiter, &rule, "c", 1).await;
    let ttl = pttl(&limiter, &key).await;
    assert!((58_500..=60_000).contains(&ttl), "PTTL {ttl}");
}

#[tokio::test]
async fn waiting_retry_after_passes_into_a_fresh_window() {
    let server = redis();
    let limiter = limiter(&server, "fw-retry");
    let rule = Rule::fixed_window("fw", 2, Duration::from_millis(40)).expect("valid rule");
    let mut rounds = 0;
    for round in 0..100 {
        let client = format!("c{round}");
        assert!(decide_now(&limiter, &rule, &client, 2).await.allowed);
        let d = decide_now(&limiter, &rule, &client, 1).await;
        if d.allowed {
            // A slow machine let the 40 ms window end between the two calls: no denial to
            // wait out this round.
            continue;
        }
        // Never "denied, retry after 0 ms", not even in the window's last millisecond.
        assert!(d.retry_after_ms > 0, "round {round}: {d:?}");
        tokio::time::sleep(Duration::from_millis(d.retry_after_ms)).await;
        let after = decide_now(&limiter, &rule, &client, 1).await;
        assert!(
            after.allowed && after.remaining == 1,
            "round {round}: waited retry_after {} ms, got {after:?}",
            d.retry_after_ms
        );
        rounds += 1;
        if rounds == 15 {
            break;
        }
    }
    assert_eq!(rounds, 15, "too few rounds saw a denial");
}

#[tokio::test]
async fn never_more_than_the_limit_in_one_window() {
    let server = redis();
    let limiter = limiter(&server, "fw-boundary");
    let rule = Rule::fixed_window("fw", 7, Duration::from_millis(MINUTE)).expect("valid rule");
    let mut admitted = 0;
    for cost in (1..=7).cycle().take(60) {
        if decide_now(&limiter, &rule, "c", cost).await.allowed {
            admitted += cost;
        }
    }
    assert_eq!(admitted, 7);
}
