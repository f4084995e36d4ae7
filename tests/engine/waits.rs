//! Waits that hold, in every algorithm, on random timelines with explicit clocks (proptest).
//!
//! Each property drives a script and an exact model side by side (integers; micro-tokens for
//! the token bucket, whose script uses doubles). After every decision:
//! - a denial's `retry_after_ms` is the least wait after which the same cost passes: at
//!   `now + retry_after_ms` it passes (on a copy of the state), at one ms less it does not;
//! - `reset_after_ms` is the least wait until the limiter is full: a peek at `now +
//!   reset_after_ms` sees the whole allowance, one ms less does not;
//! - both equal the model's, found by searching the model's timeline, not by a formula;
//! - `remaining` is the floor of what the model has left, never more.
//!
//! Clocks go backwards at times (a lagging app instance, a promoted replica): waits are
//! measured from the caller's own clock. Timelines are long and gaps fractional of a token, so
//! float error would accumulate where it can.
//!
//! The fixed window decides on its key's TTL, not a clock; its waits are checked as what the
//! TTL says (tests/engine/invariants.rs drives its windows).

use crate::common;

use crate::common::models::{least, Bucket, Counter, Gcra, Log, Model};
use crate::common::{fork, world, T0};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use ratelockr::{At, Decision, Limiter, Rule};
use std::sync::atomic::{AtomicU64, Ordering};

const CASES: u32 = 40;

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

/// A timeline: (clock offset from T0, cost) per request. Mostly forward in small steps,
/// sometimes backwards; the clock starts well above 0 so that backward steps have room.
fn timeline(max_cost: u64, max_gap: u64, len: usize) -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec(
        (
            prop_oneof![
                8 => (0..=max_gap).prop_map(|d| d as i64),
                1 => (1..=4 * max_gap).prop_map(|d| -(d as i64)),
            ],
            1..=max_cost,
        ),
        1..=len,
    )
    .prop_map(|steps| {
        let mut t: i64 = 1_000_000;
        steps
            .into_iter()
            .map(|(step, cost)| {
                t = (t + step).max(0);
                (t as u64, cost)
            })
            .collect()
    })
}

async fn decide(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    cost: u64,
    now: u64,
) -> Result<Decision, TestCaseError> {
    let d = limiter
        .check_at(rule, key, cost, At::Millis(T0 + now))
        .await
        .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    prop_assert!(
        !d.fail_open() && d.remaining_or_unknown() >= 0,
        "not decided: {d:?}"
    );
    Ok(d)
}

async fn peek(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    now: u64,
) -> Result<Decision, TestCaseError> {
    let d = limiter
        .peek_at(rule, key, At::Millis(T0 + now))
        .await
        .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    prop_assert!(
        !d.fail_open() && d.remaining_or_unknown() >= 0,
        "not answered: {d:?}"
    );
    Ok(d)
}

/// Plays `timeline` against the script and the model, checking every wait.
async fn waits_hold(
    limiter: &Limiter,
    rule: &Rule,
    model: &mut dyn Model,
    timeline: &[(u64, u64)],
    exact_waits: bool,
) -> Result<(), TestCaseError> {
    let client = fresh_key();
    let key = limiter.keys().limiter(rule, &client);
    let copy = format!("{client}-copy");
    for (step, &(now, cost)) in timeline.iter().enumerate() {
        let ctx = format!("step {step}, at {now}, cost {cost}");
        // The script sees T0 + now (windows are aligned to it); so does the model.
        let abs = T0 + now;
        let edge = model.on_edge(abs, cost);
        let d = decide(limiter, rule, &client, cost, now).await?;
        if edge {
            model.follow(abs, cost, d.allowed);
        } else {
            let expected = model.decide(abs, cost);
            prop_assert_eq!(d.allowed, expected, "{}: {:?}", ctx, d);
        }
        // remaining: the floor of what is left, never more (a double a hair below an exact
        // integer may floor one lower).
        let whole = (model.left(abs) / model.unit()) as i64;
        let exact_integer = model.left(abs) % model.unit() == 0;
        prop_assert!(
            d.remaining_or_unknown() == whole
                || (!exact_waits && exact_integer && d.remaining_or_unknown() == whole - 1),
            "{}: remaining {} but the model has {}/{} left",
            ctx,
            d.remaining,
            model.left(abs),
            model.unit()
        );

        if !d.allowed {
            let retry = d.retry_after_ms;
            prop_assert!(retry > 0, "{}: denied without a wait: {:?}", ctx, d);
            let want = least(1, |w| model.admits(abs + w, cost));
            prop_assert!(
                retry == want || (!exact_waits && retry == want + 1),
                "{}: retry_after {} but the model passes after {}",
                ctx,
                retry,
                want
            );
            // One ms early is still denied (a denial writes nothing, so the key is untouched).
            let early = decide(limiter, rule, &client, cost, now + retry - 1).await?;
            prop_assert!(
                !early.allowed,
                "{}: 1 ms before retry_after passes: {:?}",
                ctx,
                d
            );
            fork(limiter, &key, &limiter.keys().limiter(rule, &copy)).await;
            let later = decide(limiter, rule, &copy, cost, now + retry).await?;
            prop_assert!(
                later.allowed,
                "{}: waited {:?}, still denied: {:?}",
                ctx,
                d,
                later
            );
        } else {
            prop_assert_eq!(d.retry_after_ms, 0, "{}", ctx);
        }

        let reset = d.reset_after_ms;
        let full = model.full();
        let want = least(0, |w| {
            model.left(abs + w) >= u128::from(full) * model.unit()
        });
        prop_assert!(
            reset == want || (!exact_waits && reset == want + 1),
            "{}: reset_after {} but the model is full after {}",
            ctx,
            reset,
            want
        );
        let then = peek(limiter, rule, &client, now + reset).await?;
        prop_assert_eq!(
            then.remaining as u64,
            full,
            "{}: not full after reset_after {}",
            ctx,
            reset
        );
        if reset > 0 {
            let before = peek(limiter, rule, &client, now + reset - 1).await?;
            prop_assert!(
                (before.remaining as u64) < full,
                "{}: already full 1 ms before reset_after {}",
                ctx,
                reset
            );
        }
    }
    Ok(())
}

#[test]
fn token_bucket_waits_hold() {
    let w = world("waits-tb");
    // rate <= capacity / 3 per second keeps the key's TTL (twice the time to fill) >= 6 s.
    let strategy = (1..=8u64).prop_flat_map(|capacity| {
        (
            Just(capacity),
            1..=capacity * 333,
            timeline(capacity, 700, 60),
        )
    });
    runner()
        .run(&strategy, |(capacity, permille, timeline)| {
            w.rt.block_on(async {
                let rate = permille as f64 / 1000.0;
                let rule = Rule::token_bucket("tb", capacity, rate).expect("valid");
                let mut model = Bucket {
                    capacity: u128::from(capacity),
                    permille: u128::from(permille),
                    state: None,
                };
                waits_hold(&w.limiter, &rule, &mut model, &timeline, false).await
            })
        })
        .expect("the token bucket's waits hold");
}

#[test]
fn token_bucket_waits_hold_after_long_fractional_refills() {
    let w = world("waits-tb-long");
    // Hundreds of requests a few ms apart at odd rates: every refill is a fraction of a token
    // that a double cannot hold exactly, and the errors have time to add up.
    let strategy = (2..=8u64).prop_flat_map(|capacity| {
        (
            Just(capacity),
            1..=capacity * 333,
            timeline(capacity, 40, 300),
        )
    });
    TestRunner::new(Config {
        cases: CASES / 4,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&strategy, |(capacity, permille, timeline)| {
        w.rt.block_on(async {
            let rule = Rule::token_bucket("tb", capacity, permille as f64 / 1000.0).expect("valid");
            let mut model = Bucket {
                capacity: u128::from(capacity),
                permille: u128::from(permille),
                state: None,
            };
            waits_hold(&w.limiter, &rule, &mut model, &timeline, false).await
        })
    })
    .expect("the token bucket's waits hold after long refills");
}

#[test]
fn gcra_waits_hold() {
    let w = world("waits-gc");
    // Periods of 100 s and more keep the key's real PX (the wait until full, at least one
    // interval of 14 s and more) long enough that it never expires in wall-clock time while a
    // case runs on a loaded machine.
    let strategy =
        (1..=7u64, 100_000..=400_000u64, 1..=7u64).prop_flat_map(|(limit, period, burst)| {
            (
                Just(limit),
                Just(period),
                Just(burst),
                timeline(burst, period / limit, 60),
            )
        });
    runner()
        .run(&strategy, |(limit, period, burst, timeline)| {
            w.rt.block_on(async {
                let rule = Rule::gcra("gc", limit, std::time::Duration::from_millis(period), burst)
                    .expect("valid");
                let mut model = Gcra {
                    limit: u128::from(limit),
                    period: u128::from(period),
                    burst: u128::from(burst),
                    tat: 0,
                };
                waits_hold(&w.limiter, &rule, &mut model, &timeline, true).await
            })
        })
        .expect("GCRA's waits hold");
}

/// GCRA with burst = limit decides as the token bucket of capacity `limit` refilling `limit`
/// per period (design.md), on clocks that only go forward: a backwards clock finds GCRA's TAT
/// further ahead, while the bucket only stops refilling, so there GCRA is the stricter. The
/// bucket's doubles may tip an exact boundary either way; the comparison ends at the first
/// boundary where they part.
#[test]
fn gcra_with_burst_limit_decides_as_the_token_bucket() {
    let w = world("waits-gc-tb");
    let strategy = (1..=6u64, 100_000..=400_000u64).prop_flat_map(|(limit, period)| {
        (
            Just(limit),
            Just(period),
            prop::collection::vec((0..=period / limit, 1..=limit), 1..=60),
        )
    });
    runner()
        .run(&strategy, |(limit, period, steps)| {
            w.rt.block_on(async {
                let gcra = Rule::gcra("gc", limit, std::time::Duration::from_millis(period), limit)
                    .expect("valid");
                let rate = limit as f64 * 1000.0 / period as f64;
                let bucket = Rule::token_bucket("tb", limit, rate).expect("valid");
                let mut model = Gcra {
                    limit: u128::from(limit),
                    period: u128::from(period),
                    burst: u128::from(limit),
                    tat: 0,
                };
                let client = fresh_key();
                let mut now = 1_000_000;
                for (gap, cost) in steps {
                    now += gap;
                    let abs = T0 + now;
                    let edge = model.diff(abs) + u128::from(cost) * model.period
                        == model.burst * model.period;
                    let g = decide(&w.limiter, &gcra, &client, cost, now).await?;
                    let b = decide(&w.limiter, &bucket, &client, cost, now).await?;
                    if edge && g.allowed != b.allowed {
                        return Ok(());
                    }
                    prop_assert_eq!(
                        g.allowed,
                        b.allowed,
                        "at {}, cost {}: {:?} {:?}",
                        now,
                        cost,
                        g,
                        b
                    );
                    model.follow(abs, cost, g.allowed);
                }
                Ok(())
            })
        })
        .expect("GCRA with burst = limit is the token bucket");
}

#[test]
fn sliding_window_counter_waits_hold() {
    let w = world("waits-sc");
    let strategy = (1..=7u64, 10_000..=40_000u64).prop_flat_map(|(limit, window)| {
        (
            Just(limit),
            Just(window),
            timeline(limit, window / limit, 60),
        )
    });
    runner()
        .run(&strategy, |(limit, window, timeline)| {
            w.rt.block_on(async {
                let rule = Rule::sliding_window_counter(
                    "sc",
                    limit,
                    std::time::Duration::from_millis(window),
                )
                .expect("valid");
                let mut model = Counter {
                    limit: u128::from(limit),
                    window,
                    state: None,
                };
                waits_hold(&w.limiter, &rule, &mut model, &timeline, true).await
            })
        })
        .expect("the counter's waits hold");
}

#[test]
fn sliding_window_log_waits_hold() {
    let w = world("waits-sw");
    // Windows of 20 s and more: the key's real PEXPIRE is the window.
    let strategy = (1..=7u64, 20_000..=60_000u64).prop_flat_map(|(limit, window)| {
        (
            Just(limit),
            Just(window),
            timeline(limit, window / limit, 60),
        )
    });
    runner()
        .run(&strategy, |(limit, window, timeline)| {
            w.rt.block_on(async {
                let rule =
                    Rule::sliding_window_log("sw", limit, std::time::Duration::from_millis(window))
                        .expect("valid");
                let mut model = Log {
                    limit,
                    window,
                    entries: Vec::new(),
                };
                waits_hold(&w.limiter, &rule, &mut model, &timeline, true).await
            })
        })
        .expect("the log's waits hold");
}

// --- fixed window: the TTL is the clock --------------------------------------------------------

#[test]
fn fixed_window_waits_are_what_its_ttl_says() {
    let w = world("waits-fw");
    let strategy =
        (1..=6u64).prop_flat_map(|limit| (Just(limit), prop::collection::vec(1..=limit, 1..=30)));
    runner()
        .run(&strategy, |(limit, costs)| {
            w.rt.block_on(async {
                let window = 600_000;
                let rule =
                    Rule::fixed_window("fw", limit, std::time::Duration::from_millis(window))
                        .expect("valid");
                let client = fresh_key();
                let key = w.limiter.keys().limiter(&rule, &client);
                let mut used = 0;
                for cost in costs {
                    let d = w
                        .limiter
                        .check_cost(&rule, &client, cost)
                        .await
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert!(!d.fail_open(), "{d:?}");
                    let ttl = common::pttl(&w.limiter, &key).await;
                    // The script read its TTL before this PTTL: reset_after is at least it.
                    prop_assert!(
                        d.reset_after_ms as i64 >= ttl && d.reset_after_ms <= window,
                        "reset_after {} with PTTL {ttl}",
                        d.reset_after_ms
                    );
                    if used + cost <= limit {
                        used += cost;
                        prop_assert!(d.allowed && d.retry_after_ms == 0, "{d:?}");
                    } else {
                        // Redis expires a key once its last millisecond has passed.
                        prop_assert!(!d.allowed, "{d:?}");
                        prop_assert_eq!(d.retry_after_ms, d.reset_after_ms + 1);
                    }
                    prop_assert_eq!(d.remaining as u64, limit - used);
                }
                Ok(())
            })
        })
        .expect("the fixed window's waits follow its TTL");
}
