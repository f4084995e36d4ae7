//! Invariants over random request sequences and clocks, against a real Redis (proptest).
//!
//! One redis-server per property; every case uses a fresh client key, so shrinking replays
//! never meet an earlier case's state. Case counts are modest to keep the suite fast.

use crate::common::{fork, world, T0};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use ratelockr::{At, Decision, Limiter, Rule};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const CASES: u32 = 48;

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    })
}

fn fresh_key() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("case{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A clock step: mostly forward, sometimes backwards.
#[derive(Debug, Clone, Copy)]
enum Tick {
    Forward(u64),
    Back(u64),
}

fn ticks(max_forward: u64, max_back: u64, len: usize) -> impl Strategy<Value = Vec<Tick>> {
    prop::collection::vec(
        prop_oneof![
            8 => (0..=max_forward).prop_map(Tick::Forward),
            1 => (1..=max_back).prop_map(Tick::Back),
        ],
        1..=len,
    )
}

/// The clock after each tick, offsets from T0, starting well above 0 so that backward steps
/// have room.
fn clocks(ticks: &[Tick]) -> Vec<u64> {
    let mut t = 100_000u64;
    ticks
        .iter()
        .map(|tick| {
            t = match *tick {
                Tick::Forward(d) => t + d,
                Tick::Back(d) => t.saturating_sub(d),
            };
            t
        })
        .collect()
}

async fn decide(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    cost: u64,
    offset: u64,
) -> Result<Decision, TestCaseError> {
    let d = limiter
        .check_at(rule, key, cost, At::Millis(T0 + offset))
        .await
        .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    prop_assert!(
        !d.fail_open() && d.remaining_or_unknown() >= 0,
        "Redis did not decide: {d:?}"
    );
    Ok(d)
}

#[test]
fn a_sliding_log_never_admits_more_than_its_limit_in_any_window() {
    let w = world("inv-sw");
    let strategy = (1..=6u64, 2_000..=20_000u64, ticks(1_500, 8_000, 40)).prop_flat_map(
        |(limit, window, ticks)| {
            let n = ticks.len();
            (
                Just(limit),
                Just(window),
                Just(ticks),
                prop::collection::vec(1..=limit, n),
            )
        },
    );
    runner()
        .run(&strategy, |(limit, window, ticks, costs)| {
            w.rt.block_on(async {
                let rule = Rule::sliding_window_log("sw", limit, Duration::from_millis(window)).expect("valid");
                let key = fresh_key();
                // The script's clock never goes earlier than its newest logged entry.
                let mut admitted: Vec<(u64, u64)> = Vec::new();
                for (at, cost) in clocks(&ticks).into_iter().zip(costs) {
                    let d = decide(&w.limiter, &rule, &key, cost, at).await?;
                    let now = admitted.last().map_or(at, |&(t, _)| t.max(at));
                    let in_window: u64 = admitted
                        .iter()
                        .filter(|&&(t, _)| t + window > now)
                        .map(|&(_, c)| c)
                        .sum();
                    if d.allowed {
                        admitted.push((now, cost));
                        prop_assert!(
                            in_window + cost <= limit,
                            "admitted cost {cost} at {now} with {in_window} already in the window: {d:?}"
                        );
                        prop_assert_eq!(d.remaining as u64, limit - in_window - cost);
                        prop_assert_eq!(d.retry_after_ms, 0);
                    } else {
                        prop_assert!(
                            in_window + cost > limit,
                            "denied cost {cost} at {now} with only {in_window} in the window"
                        );
                        prop_assert_eq!(d.remaining as u64, limit - in_window);
                        // Measured from the caller's clock, which may lag the log's newest.
                        prop_assert!(
                            d.retry_after_ms > 0 && d.retry_after_ms <= window + (now - at),
                            "{d:?}"
                        );
                    }
                }
                // Every window, not only those ending at a decision: the densest window ends
                // at an admitted entry.
                for &(end, _) in &admitted {
                    let inside: u64 = admitted
                        .iter()
                        .filter(|&&(t, _)| t <= end && t + window > end)
                        .map(|&(_, c)| c)
                        .sum();
                    prop_assert!(inside <= limit, "{inside} in the window ending {end}");
                }
                Ok(())
            })
        })
        .expect("the sliding log keeps its limit");
}

/// The script's arithmetic, in the same order, so that floats agree to the bit.
fn refilled(capacity: u64, rate: f64, tokens: f64, elapsed: u64) -> f64 {
    (tokens + elapsed as f64 * rate / 1000.0).min(capacity as f64)
}

#[test]
fn a_bucket_never_exceeds_its_capacity_nor_its_refill() {
    let w = world("inv-tb");
    // rate <= capacity / 3 per second keeps the key's TTL (twice the time to fill) >= 6 s, far
    // longer than a case takes.
    let strategy = (1..=20u64, 1..=333u64, ticks(2_000, 6_000, 40)).prop_flat_map(
        |(capacity, permille, ticks)| {
            let n = ticks.len();
            (
                Just(capacity),
                Just(capacity as f64 * permille as f64 / 1000.0),
                Just(ticks),
                prop::collection::vec(1..=capacity, n),
            )
        },
    );
    runner()
        .run(&strategy, |(capacity, rate, ticks, costs)| {
            w.rt.block_on(async {
                let rule = Rule::token_bucket("tb", capacity, rate).expect("valid");
                let key = fresh_key();
                let clocks = clocks(&ticks);
                let first = clocks[0];
                let mut latest = first;
                let mut admitted = 0u64;
                // The model: a full bucket at the first request, lazy refill, no minting on a
                // backwards clock, and only an admission stores its state.
                let (mut stored, mut last) = (capacity as f64, first);
                for (at, cost) in clocks.into_iter().zip(costs) {
                    let d = decide(&w.limiter, &rule, &key, cost, at).await?;
                    latest = latest.max(at);
                    let mut tokens = refilled(capacity, rate, stored, at.saturating_sub(last));
                    let expect_allowed = tokens >= cost as f64;
                    if expect_allowed {
                        tokens -= cost as f64;
                        (stored, last) = (tokens, last.max(at));
                    }
                    prop_assert_eq!(
                        d.allowed,
                        expect_allowed,
                        "at {} cost {}: {:?}",
                        at,
                        cost,
                        d
                    );
                    prop_assert_eq!(d.remaining_or_unknown(), tokens.floor() as i64);
                    prop_assert!(d.remaining as u64 <= capacity, "{d:?}");
                    if d.allowed {
                        admitted += cost;
                    }
                    let bound = capacity as f64 + (latest - first) as f64 * rate / 1000.0;
                    prop_assert!(
                        admitted as f64 <= bound + 1e-9,
                        "admitted {admitted} > capacity {capacity} + refill over {} ms at {rate}/s",
                        latest - first
                    );
                }
                Ok(())
            })
        })
        .expect("the bucket keeps its bounds");
}

#[derive(Debug, Clone, Copy)]
enum FixedOp {
    Request(u64),
    /// The window ends (its key expires), as it would when its time is up.
    EndWindow,
}

#[test]
fn a_fixed_window_never_admits_more_than_its_limit_in_one_window() {
    let w = world("inv-fw");
    let strategy = (1..=8u64).prop_flat_map(|limit| {
        (
            Just(limit),
            prop::collection::vec(
                prop_oneof![
                    8 => (1..=limit).prop_map(FixedOp::Request),
                    1 => Just(FixedOp::EndWindow),
                ],
                1..=40,
            ),
        )
    });
    runner()
        .run(&strategy, |(limit, ops)| {
            w.rt.block_on(async {
                let rule = Rule::fixed_window("fw", limit, Duration::from_secs(60)).expect("valid");
                let client = fresh_key();
                let key = w.limiter.keys().limiter(&rule, &client);
                let mut conn = w.limiter.connection();
                let mut count = 0u64;
                for op in ops {
                    match op {
                        FixedOp::EndWindow => {
                            let _: i64 = redis::cmd("PEXPIRE")
                                .arg(&key)
                                .arg(1)
                                .query_async(&mut conn)
                                .await
                                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                            let mut gone = false;
                            for _ in 0..2_500 {
                                tokio::time::sleep(Duration::from_millis(2)).await;
                                let n: i64 = redis::cmd("EXISTS")
                                    .arg(&key)
                                    .query_async(&mut conn)
                                    .await
                                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                                if n == 0 {
                                    gone = true;
                                    break;
                                }
                            }
                            prop_assert!(gone, "the window did not end");
                            count = 0;
                        }
                        FixedOp::Request(cost) => {
                            let d = w
                                .limiter
                                .check_cost(&rule, &client, cost)
                                .await
                                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                            prop_assert!(!d.fail_open(), "{d:?}");
                            let fits = count + cost <= limit;
                            if fits {
                                count += cost;
                            }
                            prop_assert_eq!(d.allowed, fits, "cost {} with {} used", cost, count);
                            prop_assert_eq!(d.remaining as u64, limit - count);
                            let stored: Option<u64> = redis::cmd("GET")
                                .arg(&key)
                                .query_async(&mut conn)
                                .await
                                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                            prop_assert_eq!(stored, Some(count), "the counter drifted");
                        }
                    }
                }
                Ok(())
            })
        })
        .expect("the fixed window keeps its limit");
}

/// Drives `rule` through a forward-only history, then requests `cost` at the latest time
/// until one is denied, and checks that exactly `retry_after_ms` later it passes and 1 ms
/// earlier it does not (the earlier probe runs on a copy of the state).
async fn retry_after_is_exact(
    limiter: &Limiter,
    rule: &Rule,
    history: &[(u64, u64)],
    cost: u64,
) -> Result<(), TestCaseError> {
    let key = fresh_key();
    let mut t = 100_000;
    for &(gap, c) in history {
        t += gap;
        decide(limiter, rule, &key, c, t).await?;
    }
    let mut denied = None;
    for _ in 0..=rule.algorithm().max_cost() {
        let d = decide(limiter, rule, &key, cost, t).await?;
        if !d.allowed {
            denied = Some(d);
            break;
        }
    }
    let d = denied.ok_or_else(|| TestCaseError::fail("never denied"))?;
    prop_assert!(d.retry_after_ms > 0, "{d:?}");
    let early = format!("{key}-early");
    fork(
        limiter,
        &limiter.keys().limiter(rule, &key),
        &limiter.keys().limiter(rule, &early),
    )
    .await;
    let later = decide(limiter, rule, &key, cost, t + d.retry_after_ms).await?;
    prop_assert!(later.allowed, "waited {d:?}, still denied: {later:?}");
    let sooner = decide(limiter, rule, &early, cost, t + d.retry_after_ms - 1).await?;
    prop_assert!(!sooner.allowed, "1 ms sooner already passes after {d:?}");
    Ok(())
}

#[test]
fn a_client_that_waits_retry_after_passes() {
    let w = world("inv-retry");
    let history = prop::collection::vec((0..3_000u64, 1..=3u64), 0..20);
    let strategy = (
        prop::bool::ANY,
        3..=10u64,
        1..=200u64,
        2_000..=20_000u64,
        history,
        1..=3u64,
    );
    runner()
        .run(
            &strategy,
            |(bucket, size, permille, window, history, cost)| {
                w.rt.block_on(async {
                    let rule = if bucket {
                        Rule::token_bucket("tb", size, size as f64 * permille as f64 / 1000.0)
                    } else {
                        Rule::sliding_window_log("sw", size, Duration::from_millis(window))
                    }
                    .expect("valid");
                    retry_after_is_exact(&w.limiter, &rule, &history, cost).await
                })
            },
        )
        .expect("retry_after is exact");
}
