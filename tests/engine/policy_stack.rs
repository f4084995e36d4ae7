//! The stacked decision (`lua/policy.lua`) against a real redis-server, on random timelines
//! with explicit clocks that sometimes go backwards (proptest):
//! - a stack of one decides exactly as its algorithm's standalone script: the same replies,
//!   the same stored bytes (DUMP), the same expiry (both set within one MULTI; their absolute
//!   expiry times differ by no more than the server's clock moved between the two calls);
//! - a stack of n decides as the all-or-nothing composition of the exact models
//!   (tests/common/models.rs, those of tests/engine/waits.rs): each limit's verdict, remaining and
//!   wait, the combination (least remaining, greatest wait and reset, the binding limit), and
//!   nothing charged anywhere unless every limit admits;
//! - the combined `retry_after_ms` holds: the same request passes at `now + retry_after_ms`
//!   (on a copy of the state) and not 1 ms earlier.

use crate::common;

use crate::common::models::{least, Bucket, Counter, FixedWindowClock, Gcra, Log, Model};
use crate::common::{world, T0};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use ratelockr::policy::script::POLICY_LUA;
use ratelockr::rule::{Algorithm, AlgorithmKind};
use ratelockr::{scripts, At, Decision, Limit, Limiter, Period, Policy, TimeZoneName, WeekStart};
use std::sync::atomic::{AtomicU64, Ordering};

const CASES: u32 = 48;

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn fresh(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{name}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A timeline: (clock offset, cost) per request; mostly forward, sometimes backwards.
fn timeline(
    min_cost: u64,
    max_cost: u64,
    max_gap: u64,
    len: usize,
) -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec(
        (
            prop_oneof![
                8 => (0..=max_gap).prop_map(|d| d as i64),
                1 => (1..=4 * max_gap).prop_map(|d| -(d as i64)),
            ],
            min_cost..=max_cost,
        ),
        1..=len,
    )
    .prop_map(|steps| {
        let mut t: i64 = 10_000_000;
        steps
            .into_iter()
            .map(|(step, cost)| {
                t = (t + step).max(0);
                (t as u64, cost)
            })
            .collect()
    })
}

// --- a stack of one is the standalone script --------------------------------------------------

/// The standalone script's call, as its header documents it.
fn standalone(
    algorithm: &Algorithm,
    key: &str,
    now: u64,
    cost: u64,
    member: &str,
    clock: bool,
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(scripts::source(algorithm.kind())).arg(1).arg(key);
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => {
            cmd.arg(capacity).arg(refill_per_sec).arg(now).arg(cost);
        }
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => {
            cmd.arg(limit).arg(window_ms).arg(burst).arg(now).arg(cost);
        }
        Algorithm::SlidingWindowCounter { limit, window_ms } => {
            cmd.arg(limit).arg(window_ms).arg(now).arg(cost);
        }
        Algorithm::SlidingWindowLog { limit, window_ms } => {
            cmd.arg(limit).arg(window_ms).arg(now).arg(member).arg(cost);
        }
        Algorithm::FixedWindow { limit, window_ms } => {
            cmd.arg(limit).arg(window_ms).arg(cost).arg(120);
            if clock {
                cmd.arg(now);
            }
        }
        Algorithm::Concurrency { limit, lease_ms } => {
            cmd.arg(limit).arg(lease_ms).arg(now).arg(member).arg(cost);
        }
        Algorithm::Calendar { limit, .. } => {
            cmd.arg(limit)
                .arg(At::Millis(now).windows_arg(algorithm).as_deref())
                .arg(now)
                .arg(cost);
        }
    }
    cmd
}

/// The policy script's call for a stack of one.
fn stacked(
    algorithm: &Algorithm,
    key: &str,
    now: u64,
    cost: u64,
    member: &str,
    clock: bool,
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(POLICY_LUA)
        .arg(1)
        .arg(key)
        .arg(1)
        .arg(now)
        .arg(cost)
        .arg("enforce")
        .arg(120);
    cmd.arg(member).arg(if clock { "1" } else { "" });
    cmd.arg(algorithm.kind().key_tag());
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => cmd.arg(capacity).arg(refill_per_sec).arg(""),
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => cmd.arg(limit).arg(window_ms).arg(burst),
        Algorithm::SlidingWindowCounter { limit, window_ms }
        | Algorithm::SlidingWindowLog { limit, window_ms }
        | Algorithm::FixedWindow { limit, window_ms } => cmd.arg(limit).arg(window_ms).arg(""),
        Algorithm::Concurrency { limit, lease_ms } => cmd.arg(limit).arg(lease_ms).arg(""),
        Algorithm::Calendar { limit, .. } => cmd
            .arg(limit)
            .arg(At::Millis(now).windows_arg(algorithm).as_deref())
            .arg(""),
    };
    cmd
}

fn ms_of(time: &redis::Value) -> Result<i64, TestCaseError> {
    let [s, us]: [i64; 2] = redis::from_redis_value::<Vec<i64>>(time.clone())
        .map_err(|e| TestCaseError::fail(format!("TIME: {e}")))?
        .try_into()
        .map_err(|_| TestCaseError::fail("TIME: two numbers"))?;
    Ok(s * 1000 + us / 1000)
}

fn ints(value: &redis::Value) -> Result<Vec<i64>, TestCaseError> {
    redis::from_redis_value::<Vec<i64>>(value.clone())
        .map_err(|e| TestCaseError::fail(format!("not a reply: {value:?} ({e})")))
}

async fn identity(
    limiter: &Limiter,
    algorithm: &Algorithm,
    steps: &[(u64, u64)],
    clock: bool,
) -> Result<(), TestCaseError> {
    let client = fresh("one");
    let a = format!("{}:alone:{{x}}:{client}", limiter.keys().prefix());
    let b = format!("{}:stack:{{x}}:{client}", limiter.keys().prefix());
    let ttl_mode = algorithm.kind() == AlgorithmKind::FixedWindow && !clock;
    for (step, &(now, cost)) in steps.iter().enumerate() {
        let now = T0 + now;
        let member = format!("m{step}");
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("TIME")
            .add_command(standalone(algorithm, &a, now, cost, &member, clock))
            .add_command(stacked(algorithm, &b, now, cost, &member, clock))
            .cmd("TIME")
            .cmd("DUMP")
            .arg(&a)
            .cmd("DUMP")
            .arg(&b)
            .cmd("PEXPIRETIME")
            .arg(&a)
            .cmd("PEXPIRETIME")
            .arg(&b);
        let out: Vec<redis::Value> = pipe
            .query_async(&mut limiter.connection())
            .await
            .map_err(|e| TestCaseError::fail(format!("step {step}: {e}")))?;
        let ctx = format!("{algorithm:?} step {step}, at {now}, cost {cost}");
        let (alone, stack) = (ints(&out[1])?, ints(&out[2])?);
        prop_assert_eq!(stack.len(), 10, "{}", ctx);
        let moved = ms_of(&out[3])? - ms_of(&out[0])? + 1;
        if ttl_mode {
            // The TTL mode's waits are its key's PTTL, read a moment apart.
            prop_assert_eq!(&alone[..2], &stack[6..8], "{}", ctx);
            for i in 2..4 {
                prop_assert!(
                    (alone[i] - stack[6 + i]).abs() <= moved,
                    "{}: {:?} {:?}",
                    ctx,
                    alone,
                    stack
                );
            }
        } else {
            prop_assert_eq!(&alone[..], &stack[6..], "{}: the limit's own numbers", ctx);
            prop_assert_eq!(&alone[..], &stack[..4], "{}: the combination of one", ctx);
        }
        prop_assert_eq!(stack[4], 1 - stack[0], "{}: would_deny", ctx);
        prop_assert_eq!(stack[5], 1, "{}: binding", ctx);
        prop_assert_eq!(&out[4], &out[5], "{}: the stored state", ctx);
        let (ea, eb): (i64, i64) = (
            redis::from_redis_value(out[6].clone())
                .map_err(|e| TestCaseError::fail(e.to_string()))?,
            redis::from_redis_value(out[7].clone())
                .map_err(|e| TestCaseError::fail(e.to_string()))?,
        );
        if ea < 0 || eb < 0 {
            prop_assert_eq!(ea, eb, "{}: expiry", ctx);
        } else {
            // Each script sets its key's expiry from the server's clock as it starts; a
            // loaded machine can pause between the two scripts of one transaction, which the
            // TIME replies around them (read from the transaction's cached clock) do not
            // show: allow a pause of 250 ms on top of what they saw (a CI machine's two
            // cores shared with builds; a wrong TTL is off by a window of 10 s or more).
            prop_assert!(
                (ea - eb).abs() <= moved + 250,
                "{}: expiry {} vs {} ({} ms apart)",
                ctx,
                ea,
                eb,
                moved
            );
        }
    }
    Ok(())
}

#[test]
fn a_stack_of_one_is_the_standalone_script() {
    let w = world("pol-one");
    // Every algorithm, parameters as in tests/engine/waits.rs (wall-clock TTLs far above a case's run).
    let algorithm = prop_oneof![
        (1..=8u64)
            .prop_flat_map(|c| (Just(c), 1..=c * 333))
            .prop_map(|(capacity, permille)| {
                Algorithm::TokenBucket {
                    capacity,
                    refill_per_sec: permille as f64 / 1000.0,
                }
            }),
        (1..=7u64, 100_000..=400_000u64, 1..=7u64).prop_map(|(limit, window_ms, burst)| {
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            }
        }),
        (1..=7u64, 10_000..=40_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::SlidingWindowCounter { limit, window_ms }),
        (1..=7u64, 20_000..=60_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::SlidingWindowLog { limit, window_ms }),
        (1..=7u64, 20_000..=60_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::FixedWindow { limit, window_ms }),
        (1..=7u64, 20_000..=60_000u64)
            .prop_map(|(limit, lease_ms)| Algorithm::Concurrency { limit, lease_ms }),
        (
            1..=7u64,
            prop::sample::select(Period::ALL.to_vec()),
            prop::sample::select(vec!["UTC", "Europe/Berlin", "Australia/Lord_Howe"]),
        )
            .prop_map(|(limit, period, zone)| Algorithm::Calendar {
                limit,
                period,
                time_zone: TimeZoneName::new(zone).expect("a zone"),
                week_start: WeekStart::Monday,
            }),
    ];
    let strategy = (
        algorithm,
        any::<bool>(),
        prop::sample::select(vec![300u64, 3_000, 20_000]),
    )
        .prop_flat_map(|(algorithm, clock, gap)| {
            (
                Just(algorithm),
                Just(clock),
                timeline(0, algorithm.max_cost(), gap, 40),
            )
        });
    runner(5 * CASES)
        .run(&strategy, |(algorithm, clock, steps)| {
            w.rt.block_on(identity(&w.limiter, &algorithm, &steps, clock))
        })
        .expect("a stack of one is the standalone script");
}

// --- a stack of n is the all-or-nothing composition of the models -----------------------------

/// A limit and its model, fresh.
fn model(algorithm: &Algorithm) -> Box<dyn Model> {
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => Box::new(Bucket {
            capacity: u128::from(capacity),
            permille: (refill_per_sec * 1000.0).round() as u128,
            state: None,
        }),
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => Box::new(Gcra {
            limit: u128::from(limit),
            period: u128::from(window_ms),
            burst: u128::from(burst),
            tat: 0,
        }),
        Algorithm::SlidingWindowCounter { limit, window_ms } => Box::new(Counter {
            limit: u128::from(limit),
            window: window_ms,
            state: None,
        }),
        Algorithm::SlidingWindowLog { limit, window_ms } => Box::new(Log {
            limit,
            window: window_ms,
            entries: Vec::new(),
        }),
        Algorithm::FixedWindow { limit, window_ms } => Box::new(FixedWindowClock {
            limit,
            window: window_ms,
            state: None,
        }),
        Algorithm::Concurrency { .. } => unreachable!("in flight: tests/engine/policy_inflight.rs"),
        Algorithm::Calendar { .. } => unreachable!("calendar quotas: tests/engine/calendar.rs"),
    }
}

fn any_algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        (2..=8u64)
            .prop_flat_map(|c| (Just(c), 1..=c * 333))
            .prop_map(|(capacity, permille)| {
                Algorithm::TokenBucket {
                    capacity,
                    refill_per_sec: permille as f64 / 1000.0,
                }
            }),
        (2..=7u64, 100_000..=400_000u64, 2..=7u64).prop_map(|(limit, window_ms, burst)| {
            Algorithm::Gcra {
                limit,
                window_ms,
                burst,
            }
        }),
        (2..=7u64, 10_000..=40_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::SlidingWindowCounter { limit, window_ms }),
        (2..=7u64, 20_000..=60_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::SlidingWindowLog { limit, window_ms }),
        (2..=7u64, 20_000..=60_000u64)
            .prop_map(|(limit, window_ms)| Algorithm::FixedWindow { limit, window_ms }),
    ]
}

async fn decide(
    limiter: &Limiter,
    policy: &Policy,
    client: &str,
    cost: u64,
    now: u64,
) -> Result<Decision, TestCaseError> {
    let d = limiter
        .check_policy_at(policy, client, cost, At::Millis(T0 + now))
        .await
        .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
    prop_assert!(
        !d.fail_open() && d.remaining_or_unknown() >= 0,
        "not decided: {d:?}"
    );
    Ok(d)
}

/// Copies every limit's state of `from` to `to`, to probe "what if" without disturbing it.
async fn fork(limiter: &Limiter, policy: &Policy, from: &str, to: &str) {
    for limit in policy.limits() {
        let key = |client| {
            limiter
                .keys()
                .policy_limit(limit.kind(), policy.name(), limit.name(), client)
        };
        let _: () = common::query(limiter, redis::cmd("DEL").arg(key(to))).await;
        let _: i64 = common::query(limiter, redis::cmd("COPY").arg(key(from)).arg(key(to))).await;
    }
}

async fn composition(
    limiter: &Limiter,
    algorithms: &[Algorithm],
    steps: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    let limits: Vec<Limit> = algorithms
        .iter()
        .enumerate()
        .map(|(i, a)| Limit::new(format!("l{i}"), *a).expect("valid"))
        .collect();
    let policy = Policy::new("stack", limits).expect("valid");
    let mut models: Vec<Box<dyn Model>> = algorithms.iter().map(model).collect();
    let client = fresh("n");
    let copy = format!("{client}-copy");
    for (step, &(now, cost)) in steps.iter().enumerate() {
        let abs = T0 + now;
        let ctx = format!("step {step}, at {now}, cost {cost}");
        let edges: Vec<bool> = models.iter().map(|m| m.on_edge(abs, cost)).collect();
        let d = decide(limiter, &policy, &client, cost, now).await?;
        prop_assert_eq!(d.limits().len(), models.len());
        for (i, (m, r)) in models.iter().zip(d.limits()).enumerate() {
            if !edges[i] {
                prop_assert_eq!(
                    r.allowed,
                    m.admits(abs, cost),
                    "{}: limit {} {:?}",
                    ctx,
                    i,
                    d
                );
            }
        }
        let all = d.limits().iter().all(|r| r.allowed);
        prop_assert_eq!(d.allowed, all, "{}: all or nothing {:?}", ctx, d);
        prop_assert_eq!(d.would_deny(), !all, "{}", ctx);
        for m in models.iter_mut() {
            m.follow(abs, cost, all);
        }
        for (i, (m, r)) in models.iter().zip(d.limits()).enumerate() {
            let exact = m.left(abs) % m.unit() == 0;
            let whole = (m.left(abs) / m.unit()) as i64;
            let float = algorithms[i].kind() == AlgorithmKind::TokenBucket;
            prop_assert!(
                r.remaining == whole || (float && exact && r.remaining == whole - 1),
                "{}: limit {} remaining {} but its model has {}/{} {:?}",
                ctx,
                i,
                r.remaining,
                m.left(abs),
                m.unit(),
                d
            );
            if r.allowed {
                prop_assert_eq!(r.retry_after_ms, 0, "{}", ctx);
            } else {
                let want = least(1, |w| m.admits(abs + w, cost));
                prop_assert!(
                    r.retry_after_ms == want || (float && r.retry_after_ms == want + 1),
                    "{}: limit {} retry {} but its model passes after {}",
                    ctx,
                    i,
                    r.retry_after_ms,
                    want
                );
            }
        }
        // The combination.
        let least_remaining = d.limits().iter().map(|r| r.remaining).min().unwrap_or(0);
        prop_assert_eq!(d.remaining_or_unknown(), least_remaining, "{}", ctx);
        let reset = d
            .limits()
            .iter()
            .map(|r| r.reset_after_ms)
            .max()
            .unwrap_or(0);
        prop_assert_eq!(d.reset_after_ms, reset, "{}", ctx);
        let binding = if all {
            d.limits().iter().find(|r| r.remaining == least_remaining)
        } else {
            let wait = d
                .limits()
                .iter()
                .filter(|r| !r.allowed)
                .map(|r| r.retry_after_ms)
                .max();
            d.limits()
                .iter()
                .find(|r| !r.allowed && Some(r.retry_after_ms) == wait)
        };
        prop_assert_eq!(d.binding(), binding.map(|r| r.name.as_str()), "{}", ctx);
        if all {
            prop_assert_eq!(d.retry_after_ms, 0, "{}", ctx);
            continue;
        }
        let retry = d.retry_after_ms;
        prop_assert_eq!(Some(retry), binding.map(|r| r.retry_after_ms), "{}", ctx);
        // The combined wait holds: 1 ms early is still denied (a denial charges nothing)...
        let early = decide(limiter, &policy, &client, cost, now + retry - 1).await?;
        prop_assert!(
            !early.allowed,
            "{}: 1 ms before retry_after {} passes: {:?}",
            ctx,
            retry,
            early
        );
        // ... and at retry_after the same request passes every limit.
        fork(limiter, &policy, &client, &copy).await;
        let later = decide(limiter, &policy, &copy, cost, now + retry).await?;
        prop_assert!(
            later.allowed,
            "{}: waited {}, still denied: {:?}",
            ctx,
            retry,
            later
        );
        for (m, r) in models.iter().zip(later.limits()) {
            prop_assert!(m.admits(abs + retry, cost) || r.allowed, "{}", ctx);
        }
    }
    Ok(())
}

#[test]
fn a_stack_of_n_is_the_all_or_nothing_composition_of_its_models() {
    let w = world("pol-n");
    let strategy = (
        prop::collection::vec(any_algorithm(), 2..=4),
        prop::sample::select(vec![500u64, 5_000, 20_000]),
    )
        .prop_flat_map(|(algorithms, gap)| {
            let most = algorithms
                .iter()
                .map(Algorithm::max_cost)
                .min()
                .unwrap_or(1);
            (Just(algorithms), timeline(1, most, gap, 40))
        });
    runner(CASES)
        .run(&strategy, |(algorithms, steps)| {
            w.rt.block_on(composition(&w.limiter, &algorithms, &steps))
        })
        .expect("a stack decides as the composition of its limits");
}

/// The tightest stack possible: every limit denies at once, with different waits; the
/// combined wait is the longest, and passing then charges every limit.
#[test]
fn every_limit_denying_waits_for_the_longest() {
    let w = world("pol-all");
    w.rt.block_on(async {
        let policy = Policy::new(
            "all",
            vec![
                Limit::new(
                    "log",
                    Algorithm::SlidingWindowLog {
                        limit: 2,
                        window_ms: 20_000,
                    },
                )
                .expect("valid"),
                Limit::new(
                    "window",
                    Algorithm::FixedWindow {
                        limit: 2,
                        window_ms: 30_000,
                    },
                )
                .expect("valid"),
                Limit::new(
                    "gcra",
                    Algorithm::Gcra {
                        limit: 2,
                        window_ms: 100_000,
                        burst: 2,
                    },
                )
                .expect("valid"),
            ],
        )
        .expect("valid");
        for t in [0, 1] {
            let d = w
                .limiter
                .check_policy_at(&policy, "k", 1, At::Millis(T0 + t))
                .await
                .expect("valid");
            assert!(d.allowed, "{d:?}");
        }
        let d = w
            .limiter
            .check_policy_at(&policy, "k", 1, At::Millis(T0 + 2))
            .await
            .expect("valid");
        assert!(!d.allowed && d.would_deny(), "{d:?}");
        let waits: Vec<u64> = d.limits().iter().map(|l| l.retry_after_ms).collect();
        // The log's oldest entry leaves at 20 000; the window (opened at 0) ends after 30 000;
        // the TAT is at 100 000 (two intervals of 50 000), and room for one more is 50 000
        // before it.
        assert_eq!(waits, [19_998, 29_999, 49_998]);
        assert_eq!((d.retry_after_ms, d.binding()), (49_998, Some("gcra")));
        assert!(d.limits().iter().all(|l| !l.allowed));
        let later = w
            .limiter
            .check_policy_at(&policy, "k", 1, At::Millis(T0 + 2 + 49_998))
            .await
            .expect("valid");
        assert!(later.allowed, "{later:?}");
    });
}
