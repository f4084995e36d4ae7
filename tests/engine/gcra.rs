//! GCRA against a real Redis, on an explicit clock.
//!
//! Emission intervals are 25 s and more of the explicit clock: the key's real PX is the time
//! until the allowance is full again, at least one interval after an admission, so a short one
//! could expire in wall-clock time while a slow CI box is between two steps.

use crate::common::{decide_at, limiter, pttl, query, redis, T0};
use ratelockr::{Limiter, Rule};

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

/// The stored TAT: three little-endian doubles, tat_ms, frac (in 1/limit ms) and limit.
async fn tat(limiter: &Limiter, key: &str) -> (f64, f64, f64) {
    let state: Vec<u8> = query(limiter, redis::cmd("GET").arg(key)).await;
    assert_eq!(state.len(), 24, "a TAT is 24 bytes: {state:?}");
    let double = |i: usize| f64::from_le_bytes(state[i * 8..i * 8 + 8].try_into().expect("8"));
    (double(0), double(1), double(2))
}

#[tokio::test]
async fn table_of_decisions() {
    let server = redis();
    let limiter = limiter(&server, "gc-table");
    // 4 per 100 s, bursts of 4: one emission interval T is 25 s.
    let even = Rule::gcra("even", 4, std::time::Duration::from_secs(100), 4).expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "a new key is a full allowance, and drains one T per request",
            vec![
                (0, 1, true, 3, 0, 25_000),
                (0, 1, true, 2, 0, 50_000),
                (0, 1, true, 1, 0, 75_000),
                (0, 1, true, 0, 0, 100_000),
                (0, 1, false, 0, 25_000, 100_000),
                (24_999, 1, false, 0, 1, 75_001),
                (25_000, 1, true, 0, 0, 100_000),
            ],
        ),
        (
            "a cost takes several intervals; a denied cost pushes nothing",
            vec![
                (0, 3, true, 1, 0, 75_000),
                (0, 2, false, 1, 25_000, 75_000),
                (0, 1, true, 0, 0, 100_000),
                (50_000, 2, true, 0, 0, 100_000),
            ],
        ),
        (
            "idle time refills, never beyond the burst",
            vec![
                (0, 4, true, 0, 0, 100_000),
                (1_000_000, 1, true, 3, 0, 25_000),
            ],
        ),
        (
            "a clock that goes backwards mints nothing, and waits count from it",
            vec![
                (100_000, 4, true, 0, 0, 100_000),
                (50_000, 1, false, 0, 75_000, 150_000),
                (125_000, 1, true, 0, 0, 100_000),
            ],
        ),
    ];
    for (name, steps) in &cases {
        run_case(&limiter, name, &even, steps).await;
    }

    // 3 per 100 s, bursts of 2: T = 33 333.33... ms, exact in thirds of a millisecond.
    let thirds =
        Rule::gcra("thirds", 3, std::time::Duration::from_secs(100), 2).expect("valid rule");
    let steps: Vec<Step> = vec![
        (0, 1, true, 1, 0, 33_334),
        (0, 1, true, 0, 0, 66_667),
        (0, 1, false, 0, 33_334, 66_667),
        (33_333, 1, false, 0, 1, 33_334),
        (33_334, 1, true, 0, 0, 66_666),
    ];
    run_case(&limiter, "fractional intervals stay exact", &thirds, &steps).await;
    let key = limiter
        .keys()
        .limiter(&thirds, "fractional intervals stay exact");
    // Three intervals of 33 333 + 1/3 ms from 0: the TAT is 100 000 ms exactly, no drift.
    assert_eq!(tat(&limiter, &key).await, ((T0 + 100_000) as f64, 0.0, 3.0));
    // One interval more, at 66 667: TAT = 133 333 + 1/3 ms.
    decide_at(
        &limiter,
        &thirds,
        "fractional intervals stay exact",
        1,
        66_667,
    )
    .await;
    assert_eq!(tat(&limiter, &key).await, ((T0 + 133_333) as f64, 1.0, 3.0));
}

#[tokio::test]
async fn only_admissions_write_and_the_key_lives_until_full() {
    let server = redis();
    let limiter = limiter(&server, "gc-state");
    let rule = Rule::gcra("g", 2, std::time::Duration::from_secs(60), 2).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    let d = decide_at(&limiter, &rule, "c", 2, 0).await;
    assert!(d.allowed && d.reset_after_ms == 60_000, "{d:?}");
    assert_eq!(tat(&limiter, &key).await, ((T0 + 60_000) as f64, 0.0, 2.0));
    let ttl = pttl(&limiter, &key).await;
    assert!(
        (58_500..=60_000).contains(&ttl),
        "PX is ceil(TAT - now): {ttl}"
    );
    let before: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&key)).await;
    for at in [1, 1_000, 29_999] {
        assert!(!decide_at(&limiter, &rule, "c", 1, at).await.allowed);
    }
    let after: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&key)).await;
    assert_eq!(before, after, "a denied request wrote");
}

#[tokio::test]
async fn a_tat_stored_under_another_limit_is_rounded_up() {
    let server = redis();
    let limiter = limiter(&server, "gc-relimit");
    // 3 per 10 s: TAT = 3 333 + 1/3 ms after one request.
    let three = Rule::gcra("g", 3, std::time::Duration::from_secs(10), 3).expect("valid rule");
    decide_at(&limiter, &three, "c", 1, 0).await;
    // The same key under a limit of 4: the TAT becomes 3 334 ms, never earlier.
    let four = Rule::gcra("g", 4, std::time::Duration::from_secs(10), 4).expect("valid rule");
    let d = decide_at(&limiter, &four, "c", 1, 0).await;
    assert_eq!(d.reset_after_ms, 3_334 + 2_500, "{d:?}");
    let key = limiter.keys().limiter(&four, "c");
    assert_eq!(tat(&limiter, &key).await, ((T0 + 5_834) as f64, 0.0, 4.0));
}
