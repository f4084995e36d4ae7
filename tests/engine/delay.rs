//! Delay instead of deny (`max_delay_ms` on a policy), against a real redis-server on explicit
//! clocks:
//! - GCRA 10 per second, burst 1, max_delay 1000 ms: 20 requests at one instant give 11
//!   admissions with delays 0, 100, ..., 1000 and 9 denials, counted as allowed, delayed and
//!   denied in telemetry and metrics;
//! - a token bucket runs into debt and the next decisions pay it back;
//! - token_bucket.lua and gcra.lua take the same `max_delay_ms` (their ARGV after the stats
//!   TTL, a 5th integer in the reply), and policy.lua's stack of one answers as they do;
//! - the property (proptest): the start times (decision time + delay_ms) of admitted requests
//!   never exceed any limit in any window, for GCRA and token buckets alone and stacked (each
//!   limit charged as though the request came at its start time), random arrivals, costs and
//!   max_delay; a delay never exceeds max_delay.

use crate::common;
use crate::script_calls::{connect, evalsha, load};
use crate::served::json;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use ratelockr::policy::{parse_policies, Format};
use ratelockr::{At, Decision, Limit, Limiter, Metrics, Policy, PolicyOutcome};
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = common::T0;

fn gcra_policy(name: &str, max_delay_ms: u64) -> Policy {
    Policy::new(
        name,
        vec![Limit::gcra("per-second", 10, Duration::from_secs(1), 1).expect("valid")],
    )
    .expect("valid")
    .with_max_delay_ms(max_delay_ms)
    .expect("gcra delays")
}

async fn at(limiter: &Limiter, policy: &Policy, key: &str, cost: u64, ms: u64) -> Decision {
    limiter
        .check_policy_at(policy, key, cost, At::Millis(ms))
        .await
        .expect("a decision")
}

#[tokio::test]
async fn twenty_at_one_instant_admit_eleven_spaced_by_the_emission_interval() {
    let server = common::redis();
    let metrics = Metrics::new();
    let limiter = common::limiter(&server, "delay-gcra").with_observer(Arc::new(metrics.clone()));
    let policy = gcra_policy("smooth", 1000);
    let mut delays = Vec::new();
    let mut denied = Vec::new();
    for _ in 0..20 {
        let d = at(&limiter, &policy, "burst", 1, T0).await;
        assert!(!d.fail_open(), "{d:?}");
        if d.allowed {
            delays.push(d.delay_ms);
        } else {
            assert_eq!(d.delay_ms, 0, "a denial has no delay: {d:?}");
            denied.push(d.retry_after_ms);
        }
    }
    assert_eq!(delays, (0..=10).map(|i| i * 100).collect::<Vec<_>>());
    // The least wait after which the request passes, delayed by 1000 ms at most: 100 ms.
    assert_eq!(denied, vec![100; 9]);
    // Denials charged nothing: at T0 + 100 the next one is delayed by exactly 1000 ms.
    let next = at(&limiter, &policy, "burst", 1, T0 + 100).await;
    assert_eq!(
        (next.allowed, next.delay_ms, next.remaining),
        (true, 1000, 0)
    );

    let json = serde_json::to_value(&next).expect("json");
    assert_eq!(json["delay_ms"], 1000, "{json}");
    let plain = serde_json::to_value(at(&limiter, &policy, "other", 1, T0).await).expect("json");
    assert!(
        plain.get("delay_ms").is_none(),
        "no delay, no field: {plain}"
    );

    let series = limiter
        .policy_stats_at(&["smooth"], T0 / 1000)
        .await
        .expect("stats");
    let now = series[0].last().expect("30 points");
    assert_eq!((now.allowed, now.delayed, now.denied), (2, 11, 9));
    assert_eq!(
        metrics.policy_decisions("smooth", PolicyOutcome::Delayed),
        11
    );
    assert_eq!(
        metrics.policy_decisions("smooth", PolicyOutcome::Allowed),
        2
    );
    assert_eq!(metrics.policy_decisions("smooth", PolicyOutcome::Denied), 9);
    assert!(
        metrics
            .render()
            .contains(r#"ratelockr_policy_decisions_total{policy="smooth",result="delayed"} 11"#),
        "{}",
        metrics.render()
    );
}

#[tokio::test]
async fn a_bucket_runs_into_debt_and_later_decisions_pay_it_back() {
    let server = common::redis();
    let limiter = common::limiter(&server, "delay-tb");
    let policy = Policy::new(
        "bucket",
        vec![Limit::token_bucket("b", 2, 10.0).expect("valid")],
    )
    .expect("valid")
    .with_max_delay_ms(500)
    .expect("a bucket delays");
    let mut delays = Vec::new();
    for _ in 0..8 {
        let d = at(&limiter, &policy, "k", 1, T0).await;
        delays.push(d.allowed.then_some(d.delay_ms));
    }
    let admitted = [0, 0, 100, 200, 300, 400, 500].map(Some);
    assert_eq!(delays[..7], admitted, "{delays:?}");
    assert_eq!(delays[7], None, "600 ms is past max_delay");
    // 250 ms later the debt is 2.5 tokens: the next starts at T0 + 600, after the last one.
    let d = at(&limiter, &policy, "k", 1, T0 + 250).await;
    assert_eq!((d.allowed, d.delay_ms), (true, 350), "{d:?}");
    // Once the debt is paid and the bucket full again, no delay.
    let d = at(&limiter, &policy, "k", 2, T0 + 600 + 200).await;
    assert_eq!((d.allowed, d.delay_ms), (true, 0), "{d:?}");
}

#[tokio::test]
async fn only_buckets_and_gcra_limits_delay() {
    let fixed = Limit::fixed_window("daily", 100, Duration::from_secs(86_400)).expect("valid");
    let err = Policy::new("p", vec![fixed])
        .expect("valid")
        .with_max_delay_ms(100)
        .expect_err("a fixed window cannot delay");
    assert_eq!(err.field(), "max_delay_ms");
    assert!(err.message.contains("\"daily\""), "{err}");
    // The script refuses it too, naming the limit.
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn, "policy.lua").await;
    let argv = [
        "1", "1000", "1", "", "", "", "", "fw", "5", "1000", "", "100",
    ];
    let err = evalsha::<redis::Value, _>(&mut conn, &sha, &["k"], &argv)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("max_delay_ms"), "{err}");
}

const SMOOTH: &str = r#"
[[policies]]
name = "smooth"
max_delay_ms = 1000

  [[policies.limits]]
  name = "per-second"
  algorithm = "gcra"
  limit = 10
  window_ms = 1000
  burst = 1
"#;

#[test]
fn a_policies_file_sets_max_delay_ms_and_refuses_it_beside_other_kinds() {
    let policies = parse_policies(SMOOTH, Format::Toml).expect("valid");
    assert_eq!(policies[0].max_delay_ms(), 1000);
    // Written back as a file, it reads the same.
    let text = ratelockr::policy::write::render(&policies, Format::Toml);
    assert!(text.contains("max_delay_ms = 1000"), "{text}");
    assert_eq!(
        parse_policies(&text, Format::Toml).expect("reads back"),
        policies
    );
    let plain =
        parse_policies(&SMOOTH.replace("max_delay_ms = 1000\n", ""), Format::Toml).expect("valid");
    assert_eq!(plain[0].max_delay_ms(), 0, "the default denies at once");
    let windowed = SMOOTH
        .replace("\"gcra\"", "\"fixed-window\"")
        .replace("  burst = 1\n", "");
    let err = parse_policies(&windowed, Format::Toml).expect_err("a window cannot delay");
    assert_eq!(
        (err.field(), err.line),
        (Some("max_delay_ms"), Some(4)),
        "{err}"
    );
    assert!(err.message.contains("\"per-second\""), "{err}");
    let err = parse_policies(
        &SMOOTH.replace("max_delay_ms = 1000", "max_delay_ms = -5"),
        Format::Toml,
    )
    .expect_err("negative");
    assert_eq!(err.field(), Some("max_delay_ms"), "{err}");
    assert!(err.message.contains(">= 0"), "{err}");
}

#[tokio::test]
async fn serve_returns_delay_ms_for_its_caller_to_wait() {
    let server = common::redis();
    let limiter = common::limiter(&server, "delay-serve");
    let (addr, _dir) = crate::served::serve_policies(limiter, Vec::new(), SMOOTH).await;
    let check = r#"{"policy": "smooth", "key": "ann"}"#;
    let (status, _, first) = common::http(addr, "POST", "/api/check", check).await;
    assert_eq!(status, 200, "{first}");
    assert!(json(&first).get("delay_ms").is_none(), "{first}");
    let (status, headers, second) = common::http(addr, "POST", "/api/check", check).await;
    let second = json(&second);
    assert_eq!(
        (status, &second["allowed"]),
        (200, &serde_json::json!(true))
    );
    let delay = second["delay_ms"].as_u64().expect("a delay");
    assert!(delay > 0 && delay <= 100, "{second}");
    assert!(
        !headers.contains_key("retry-after"),
        "an admission: {headers:?}"
    );
}

/// One call of a standalone script and of policy.lua's stack of one on a twin key: the same
/// numbers (the stack's head and delay), the same stored state.
#[tokio::test]
async fn the_standalone_scripts_delay_as_a_stack_of_one() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let policy = load(&mut conn, "policy.lua").await;
    for (script, kind, params) in [
        ("token_bucket.lua", "tb", ["3", "7.5", ""]),
        ("gcra.lua", "gc", ["7", "1000", "3"]),
    ] {
        let sha = load(&mut conn, script).await;
        let (a, b) = (format!("solo:{kind}"), format!("stack:{kind}"));
        let without: Vec<i64> = match kind {
            "tb" => evalsha(&mut conn, &sha, &["x:tb"], &["3", "7.5", "1000", "1"]).await,
            _ => evalsha(&mut conn, &sha, &["x:gc"], &["7", "1000", "3", "1000", "1"]).await,
        }
        .expect("a reply");
        assert_eq!(without.len(), 4, "no max_delay, the four integers");
        let mut t = T0;
        for step in 0..30u64 {
            let (cost, max_delay) = (1 + step % 2, [0, 250, 900][(step % 3) as usize]);
            let now = t.to_string();
            let (cost_s, delay_s) = (cost.to_string(), max_delay.to_string());
            let solo_argv: Vec<&str> = match kind {
                "tb" => vec![params[0], params[1], &now, &cost_s, "120", &delay_s],
                _ => vec![
                    params[0], params[1], params[2], &now, &cost_s, "120", &delay_s,
                ],
            };
            let solo: Vec<i64> = evalsha(&mut conn, &sha, &[&a], &solo_argv)
                .await
                .expect("solo");
            let stack_argv = [
                "1", &now, &cost_s, "enforce", "120", "", "1", kind, params[0], params[1],
                params[2], &delay_s,
            ];
            let stack: Vec<i64> = evalsha(&mut conn, &policy, &[&b], &stack_argv)
                .await
                .expect("stack");
            assert_eq!(solo.len(), 5, "{script}: max_delay given, a 5th integer");
            assert_eq!(stack.len(), 11);
            assert_eq!(solo[..4], stack[..4], "{script} step {step}");
            assert_eq!(solo[4], stack[10], "{script} step {step}: delay_ms");
            let (x, y): (Option<Vec<u8>>, Option<Vec<u8>>) = redis::pipe()
                .get(&a)
                .get(&b)
                .query_async(&mut conn)
                .await
                .expect("GET");
            assert_eq!(x, y, "{script} step {step}: the stored state");
            t += [0, 0, 40, 130][(step % 4) as usize];
        }
    }
}

// --- the property ------------------------------------------------------------------------------

/// A limit as (name for messages, the Limit, the envelope: in any closed window of `w` ms at
/// most `burst + w x per / per_ms` units start).
#[derive(Debug, Clone)]
struct Envelope {
    limit: Limit,
    burst: u64,
    per: u64,
    per_ms: u64,
}

fn limit() -> impl Strategy<Value = Envelope> {
    prop_oneof![
        (1..=5u64, 1..=20u64).prop_map(|(capacity, rate)| Envelope {
            limit: Limit::token_bucket("l", capacity, rate as f64).expect("valid"),
            burst: capacity,
            per: rate,
            per_ms: 1000,
        }),
        (
            1..=12u64,
            prop::sample::select(vec![700u64, 1000, 3000]),
            1..=4u64
        )
            .prop_map(|(limit, period, burst)| Envelope {
                limit: Limit::gcra("l", limit, Duration::from_millis(period), burst)
                    .expect("valid"),
                burst,
                per: limit,
                per_ms: period,
            }),
    ]
}

/// Arrivals: nondecreasing offsets from T0 (bursts at one instant, and gaps), each with a cost.
fn arrivals() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec(
        (
            prop_oneof![3 => Just(0u64), 2 => 1..=60u64, 1 => 100..=900u64],
            1..=2u64,
        ),
        1..=60,
    )
    .prop_map(|steps| {
        let mut t = 0;
        steps
            .into_iter()
            .map(|(gap, cost)| {
                t += gap;
                (t, cost)
            })
            .collect()
    })
}

async fn holds(
    limiter: &Limiter,
    envelopes: &[Envelope],
    max_delay: u64,
    steps: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = format!(
        "p{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    // A stack: each limit named apart, every one held to its own envelope.
    let limits = envelopes
        .iter()
        .enumerate()
        .map(|(i, e)| Limit::new(format!("l{i}"), *e.limit.algorithm()).expect("valid"))
        .collect();
    let policy = Policy::new(name, limits)
        .expect("valid")
        .with_max_delay_ms(max_delay)
        .expect("delays");
    let cost_max = envelopes.iter().map(|e| e.burst).min().unwrap_or(1);
    let mut started: Vec<(u64, u64)> = Vec::new();
    for &(offset, cost) in steps {
        let cost = cost.min(cost_max);
        let d = at(limiter, &policy, "k", cost, T0 + offset).await;
        prop_assert!(!d.fail_open(), "{:?}", d);
        if d.allowed {
            prop_assert!(
                d.delay_ms <= max_delay,
                "delay {} > {}",
                d.delay_ms,
                max_delay
            );
            started.push((offset + d.delay_ms, cost));
        } else {
            prop_assert!(d.retry_after_ms > 0 && d.delay_ms == 0, "{:?}", d);
        }
    }
    started.sort_unstable();
    // Every window [s_i, s_j]: the units started in it within burst + (s_j - s_i) x rate.
    for envelope in envelopes {
        for i in 0..started.len() {
            let mut units = 0;
            for j in i..started.len() {
                units += started[j].1;
                let span = started[j].0 - started[i].0;
                prop_assert!(
                    (units as u128).saturating_sub(envelope.burst as u128)
                        * envelope.per_ms as u128
                        <= span as u128 * envelope.per as u128,
                    "{} units start within {} ms: over {:?} (max_delay {}): {:?}",
                    units,
                    span,
                    envelope,
                    max_delay,
                    started
                );
            }
        }
    }
    Ok(())
}

#[test]
fn start_times_never_exceed_the_limit_in_any_window() {
    let w = common::world("delay-property");
    let strategy = (
        prop::collection::vec(limit(), 1..=2),
        prop_oneof![Just(0u64), 1..=2_000u64],
        arrivals(),
    );
    TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    })
    .run(&strategy, |(envelopes, max_delay, steps)| {
        w.rt.block_on(holds(&w.limiter, &envelopes, max_delay, &steps))
    })
    .expect("start times keep to the limit");
}
