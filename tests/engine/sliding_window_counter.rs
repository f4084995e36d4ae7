//! The sliding window counter against a real Redis, on an explicit clock.
//!
//! Windows are 10 s of the explicit clock, aligned to multiples of 10 s since the epoch (T0 is
//! one): the key's real PEXPIRE is two windows, so a short window could expire in wall-clock
//! time while a slow CI box is between two steps.

use crate::common::{decide_at, limiter, pttl, query, redis, T0};
use ratelockr::{Limiter, Rule};
use std::collections::HashMap;

const WINDOW: u64 = 10_000;

/// (at, cost, allowed, remaining, retry_after_ms, reset_after_ms)
type Step = (u64, u64, bool, i64, u64, u64);

async fn run_case(limiter: &Limiter, name: &str, rule: &Rule, steps: &[Step]) {
    for (i, &(at, cost, allowed, remaining, retry, reset)) in steps.iter().enumerate() {
        let d = decide_at(limiter, rule, name, cost, at).await;
        let ctx = format!("case {name:?}, step {i} (at {at}, cost {cost}): got {d:?}");
        assert_eq!(
            (
                d.allowed,
                d.remaining_or_unknown(),
                d.retry_after_ms,
                d.reset_after_ms
            ),
            (allowed, remaining, retry, reset),
            "{ctx}"
        );
    }
}

async fn counters(limiter: &Limiter, key: &str) -> HashMap<String, u64> {
    query(limiter, redis::cmd("HGETALL").arg(key)).await
}

#[tokio::test]
async fn table_of_decisions() {
    assert_eq!(T0 % WINDOW, 0, "the cases assume T0 starts a window");
    let server = redis();
    let limiter = limiter(&server, "sc-table");
    let rule = Rule::sliding_window_counter("sc", 4, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "fills, then waits for the previous window's weight to fall",
            vec![
                (0, 1, true, 3, 0, 20_000),
                (1, 1, true, 2, 0, 19_999),
                (2, 1, true, 1, 0, 19_998),
                (3, 1, true, 0, 0, 19_997),
                // Next window: 4 x (10 000 - e) / 10 000 + 1 <= 4 from e = 2 500.
                (4, 1, false, 0, 12_496, 19_996),
                (12_499, 1, false, 0, 1, 7_501),
                (12_500, 1, true, 0, 0, 17_500),
            ],
        ),
        (
            "the previous count fades in proportion to the window's progress",
            vec![(0, 4, true, 0, 0, 20_000), (15_000, 1, true, 1, 0, 15_000)],
        ),
        (
            "two windows back counts for nothing",
            vec![(0, 4, true, 0, 0, 20_000), (20_000, 4, true, 0, 0, 20_000)],
        ),
        (
            "a clock that goes backwards mints nothing, and waits count from it",
            vec![
                (15_000, 4, true, 0, 0, 15_000),
                (9_000, 1, false, 0, 13_500, 21_000),
                (22_500, 1, true, 0, 0, 17_500),
            ],
        ),
        (
            "a cost waits for room for all of it",
            vec![
                (0, 3, true, 1, 0, 20_000),
                (0, 2, false, 1, 13_334, 20_000),
                (13_334, 2, true, 0, 0, 16_666),
            ],
        ),
    ];
    for (name, steps) in &cases {
        run_case(&limiter, name, &rule, steps).await;
    }
}

#[tokio::test]
async fn the_hash_holds_two_counts_and_denials_write_nothing() {
    let server = redis();
    let limiter = limiter(&server, "sc-state");
    let rule = Rule::sliding_window_counter("sc", 3, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    for at in [1_000, 2_000] {
        assert!(decide_at(&limiter, &rule, "c", 1, at).await.allowed);
    }
    assert!(decide_at(&limiter, &rule, "c", 1, 12_000).await.allowed);
    let index = T0 / WINDOW;
    let expected = HashMap::from([
        ("w".to_string(), index + 1),
        ("c".to_string(), 1),
        ("p".to_string(), 2),
        ("t".to_string(), T0 + 12_000),
    ]);
    assert_eq!(counters(&limiter, &key).await, expected);
    let ttl = pttl(&limiter, &key).await;
    assert!(
        (18_500..=20_000).contains(&ttl),
        "PEXPIRE 2 x window: {ttl}"
    );
    // 2 x 8/10 + 1 = 2.6: a cost of 1 is denied, and nothing changes.
    assert!(!decide_at(&limiter, &rule, "c", 1, 12_001).await.allowed);
    assert_eq!(counters(&limiter, &key).await, expected);
}

#[tokio::test]
async fn it_can_admit_more_than_the_exact_log_would() {
    // Its known error: the previous window's requests all came at its end, but the estimate
    // spreads them evenly, so the start of the next window finds room the exact log has not.
    let server = redis();
    let limiter = limiter(&server, "sc-error");
    let rule = Rule::sliding_window_counter("sc", 10, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    assert!(decide_at(&limiter, &rule, "c", 10, 9_999).await.allowed);
    // At 15 000: 10 x 0.5 = 5 used, 5 more pass, though all 10 are within the last 10 s.
    let d = decide_at(&limiter, &rule, "c", 5, 15_000).await;
    assert!(d.allowed && d.remaining == 0, "{d:?}");
}
