//! Settling a request's actual cost (`lua/settle.lua`, `Limiter::settle`, `POST /api/settle`)
//! against a real redis-server, on explicit clocks so the comparisons are exact:
//! - for every rate algorithm (the fixed window in both its modes), a stack charged 1,000 and
//!   settled to 640 holds exactly the state a charge of 640 leaves (the stored values, and the
//!   next decisions' answers), and one charged 640 settled to 1,000 the state a charge of 1,000
//!   leaves; random charged/actual pairs too (proptest);
//! - settled past the limit, the extra is kept: the key waits as long as the larger charge
//!   makes it; concurrency limits are left alone;
//! - a peek or a denial settles nothing; the endpoint answers and refuses bad input by field.

use crate::common::{http, limiter, query, redis, T0};
use crate::served::{assert_refusals, json};
use proptest::test_runner::{Config, TestRunner};
use ratelockr::{At, Limit, Limiter, Policy, SettleError};
use std::net::SocketAddr;
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);

/// One stack per rate algorithm (two limits of it beside a concurrency limit), and one of all
/// five; the fixed window's TTL mode is the `ttl` stack, decided on the server clock.
fn stacks() -> Vec<(Policy, bool)> {
    let cc = || Limit::concurrency("in-flight", 5, MINUTE).expect("valid");
    let tb = |n: &str, c| Limit::token_bucket(n, c, 100.0).expect("valid");
    let gc = |n: &str, b| Limit::gcra(n, 1000, Duration::from_secs(10), b).expect("valid");
    let sw = |n: &str, l| Limit::sliding_window_log(n, l, MINUTE).expect("valid");
    let sc = |n: &str, l| Limit::sliding_window_counter(n, l, MINUTE).expect("valid");
    let fw = |n: &str, l| Limit::fixed_window(n, l, MINUTE).expect("valid");
    let policy = |name: &str, limits| Policy::new(name, limits).expect("valid");
    vec![
        (policy("tb", vec![tb("a", 2000), cc(), tb("b", 3000)]), true),
        (policy("gc", vec![gc("a", 2000), cc(), gc("b", 3000)]), true),
        (policy("sw", vec![sw("a", 2000), cc(), sw("b", 3000)]), true),
        (policy("sc", vec![sc("a", 2000), cc(), sc("b", 3000)]), true),
        (policy("fw", vec![fw("a", 2000), cc(), fw("b", 3000)]), true),
        (
            policy("ttl", vec![fw("a", 2000), cc(), fw("b", 3000)]),
            false,
        ),
        (
            policy(
                "all",
                vec![
                    tb("tb", 2000),
                    gc("gc", 2000),
                    sw("sw", 2000),
                    sc("sc", 2000),
                    fw("fw", 2000),
                ],
            ),
            true,
        ),
    ]
}

/// What a key holds, written out comparably: a log's members are random ids, so only its
/// scores count; a TTL is not compared (the two keys were written at different moments).
async fn stored(limiter: &Limiter, key: &str) -> String {
    let kind: String = query(limiter, redis::cmd("TYPE").arg(key)).await;
    match kind.as_str() {
        "string" => {
            let bytes: Vec<u8> = query(limiter, redis::cmd("GET").arg(key)).await;
            format!("string {bytes:?}")
        }
        "hash" => {
            let fields: std::collections::BTreeMap<String, String> =
                query(limiter, redis::cmd("HGETALL").arg(key)).await;
            format!("hash {fields:?}")
        }
        "zset" => {
            let entries: Vec<(String, f64)> = query(
                limiter,
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES"),
            )
            .await;
            let scores: Vec<f64> = entries.into_iter().map(|(_, s)| s).collect();
            format!("zset {} {scores:?}", scores.len())
        }
        other => other.to_string(),
    }
}

/// Every rate limit's stored state for `client` (the concurrency limit's is its leases).
async fn state(limiter: &Limiter, policy: &Policy, client: &str) -> Vec<String> {
    let mut out = Vec::new();
    for limit in policy.limits() {
        let key = limiter
            .keys()
            .policy_limit(limit.kind(), policy.name(), limit.name(), client);
        // Leases' scores are expiry times (the server clock's, in the TTL stack): counted only.
        if limit.kind() == ratelockr::AlgorithmKind::Concurrency {
            let n: u64 = query(limiter, redis::cmd("ZCARD").arg(&key)).await;
            out.push(format!("{}: {n} leases", limit.name()));
        } else {
            out.push(format!("{}: {}", limit.name(), stored(limiter, &key).await));
        }
    }
    out
}

fn at(clock: bool, ms: u64) -> At {
    if clock {
        At::Millis(ms)
    } else {
        At::ServerClock
    }
}

/// A decision's numbers and each limit's, what the comparison holds equal; on the server
/// clock (the TTL stack) the waits are the keys' own TTLs, written moments apart: not compared.
fn answer(d: &ratelockr::Decision, clock: bool) -> String {
    let limits = d.policy.as_ref().map(|p| {
        p.limits
            .iter()
            .map(|l| {
                let waits = clock.then_some((l.retry_after_ms, l.reset_after_ms));
                (l.allowed, l.remaining, waits)
            })
            .collect::<Vec<_>>()
    });
    let waits = clock.then_some((d.retry_after_ms, d.reset_after_ms));
    format!("{} {} {waits:?} {limits:?}", d.allowed, d.remaining)
}

/// Client `settled` is charged `charged` then settled to `actual`, client `direct` is charged
/// `actual`, at the same moments after the same history: their states and next answers match.
async fn settles_as_a_charge_would(
    limiter: &Limiter,
    policy: &Policy,
    clock: bool,
    charged: u64,
    actual: u64,
    tag: &str,
) {
    let (settled, direct) = (format!("settled-{tag}"), format!("direct-{tag}"));
    // Decisions hold their leases until dropped (released then in the background): all are
    // kept to the end, so both clients hold as many.
    let mut held = Vec::new();
    for client in [&settled, &direct] {
        let d = limiter
            .check_policy_at(policy, client, 100, at(clock, T0))
            .await
            .expect("valid");
        assert!(d.allowed, "{d:?}");
        held.push(d);
    }
    let now = at(clock, T0 + 250);
    let d = limiter
        .check_policy_at(policy, &settled, charged, now)
        .await
        .expect("valid");
    assert!(d.allowed, "{}: {d:?}", policy.name());
    held.push(d);
    let changed = limiter
        .settle_at(policy, &settled, charged, actual, now)
        .await
        .expect("settles");
    assert_eq!(changed, charged != actual, "{}", policy.name());
    let d = limiter
        .check_policy_at(policy, &direct, actual, now)
        .await
        .expect("valid");
    assert!(d.allowed, "{}: {d:?}", policy.name());
    held.push(d);
    assert_eq!(
        state(limiter, policy, &settled).await,
        state(limiter, policy, &direct).await,
        "{}: {charged} settled to {actual} against a charge of {actual}",
        policy.name()
    );
    // The next decisions answer alike (the concurrency limit: two leases each).
    for (ms, cost) in [(T0 + 400, 1), (T0 + 9_000, 900)] {
        let a = limiter
            .check_policy_at(policy, &settled, cost, at(clock, ms))
            .await
            .expect("valid");
        let b = limiter
            .check_policy_at(policy, &direct, cost, at(clock, ms))
            .await
            .expect("valid");
        assert_eq!(
            answer(&a, clock),
            answer(&b, clock),
            "{} at {ms}",
            policy.name()
        );
        held.extend([a, b]);
    }
    assert_eq!(
        state(limiter, policy, &settled).await,
        state(limiter, policy, &direct).await,
        "{}: after the next decisions",
        policy.name()
    );
    drop(held);
}

#[tokio::test]
async fn settling_1000_down_to_640_or_640_up_to_1000_leaves_what_that_charge_would() {
    let server = redis();
    let limiter = limiter(&server, "settle-exact");
    for (policy, clock) in stacks() {
        settles_as_a_charge_would(&limiter, &policy, clock, 1000, 640, "down").await;
        settles_as_a_charge_would(&limiter, &policy, clock, 640, 1000, "up").await;
        settles_as_a_charge_would(&limiter, &policy, clock, 700, 700, "same").await;
    }
}

#[test]
fn any_charged_and_actual_settle_as_that_charge_would() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = redis();
    let limiter = rt.block_on(async { limiter(&server, "settle-prop") });
    let stacks = stacks();
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    runner
        .run(
            &(0..stacks.len(), 1..=1900u64, 1..=1900u64),
            |(i, charged, actual)| {
                let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (policy, clock) = &stacks[i];
                rt.block_on(settles_as_a_charge_would(
                    &limiter,
                    policy,
                    *clock,
                    charged,
                    actual,
                    &format!("p{n}"),
                ));
                Ok(())
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn settled_past_the_limit_the_key_waits_as_long_as_the_larger_charge_makes_it() {
    let server = redis();
    let limiter = limiter(&server, "settle-past");
    let ten_s = Duration::from_secs(10);
    // 1,000 admitted at once, refilled at 100 per second (10 ms per unit), 1,500 used.
    let cases = [
        Limit::token_bucket("tb", 1000, 100.0).expect("valid"),
        Limit::gcra("gc", 1000, ten_s, 1000).expect("valid"),
        Limit::sliding_window_log("sw", 1000, ten_s).expect("valid"),
        Limit::sliding_window_counter("sc", 1000, ten_s).expect("valid"),
        Limit::fixed_window("fw", 1000, ten_s).expect("valid"),
    ];
    for limit in cases {
        let name = limit.name().to_string();
        let policy = Policy::new(
            format!("past-{name}"),
            vec![limit, Limit::concurrency("cc", 3, MINUTE).expect("valid")],
        )
        .expect("valid");
        let now = At::Millis(T0);
        let d = limiter
            .check_policy_at(&policy, "k", 1000, now)
            .await
            .expect("valid");
        assert!(d.allowed, "{d:?}");
        let leases = state(&limiter, &policy, "k").await[1].clone();
        assert_eq!(leases, "cc: 1 leases");
        assert!(limiter
            .settle_at(&policy, "k", 1000, 1500, now)
            .await
            .expect("settles"));
        assert_eq!(
            state(&limiter, &policy, "k").await[1],
            leases,
            "the concurrency limit is left alone"
        );
        // The extra is stored, past the limit.
        let key = limiter
            .keys()
            .policy_limit(policy.limits()[0].kind(), policy.name(), &name, "k");
        match name.as_str() {
            "sc" => {
                let c: u64 = query(&limiter, redis::cmd("HGET").arg(&key).arg("c")).await;
                assert_eq!(c, 1500);
            }
            "fw" => {
                let c: u64 = query(&limiter, redis::cmd("HGET").arg(&key).arg("count")).await;
                assert_eq!(c, 1500);
            }
            "sw" => {
                let n: u64 = query(&limiter, redis::cmd("ZCARD").arg(&key)).await;
                assert_eq!(n, 1500);
            }
            _ => {}
        }
        let next = limiter
            .check_policy_at(&policy, "k", 1, At::Millis(T0 + 1000))
            .await
            .expect("valid");
        assert!(!next.allowed, "{name}: {next:?}");
        // The token bucket and GCRA: 500 units of debt and 1 more take 501 x 10 ms from T0.
        let expected = match name.as_str() {
            "tb" | "gc" => Some(5010 - 1000),
            // The log's 1,500 entries all leave at T0 + 10 s; the fixed window ends then (its
            // wait, as fixed_window.lua's, is one ms past the window).
            "sw" => Some(10_000 - 1000),
            "fw" => Some(10_001 - 1000),
            _ => None,
        };
        if let Some(wait) = expected {
            assert_eq!(next.retry_after_ms, wait, "{name}: {next:?}");
            let at_wait = limiter
                .check_policy_at(&policy, "k", 1, At::Millis(T0 + 1000 + wait))
                .await
                .expect("valid");
            assert!(at_wait.allowed, "{name}: {at_wait:?}");
        }
    }
}

#[tokio::test]
async fn a_peek_or_a_denial_settles_nothing_and_bad_numbers_are_refused() {
    let server = redis();
    let limiter = limiter(&server, "settle-none");
    let policy = Policy::new(
        "none",
        vec![Limit::fixed_window("fw", 10, MINUTE).expect("valid")],
    )
    .expect("valid");
    let now = At::Millis(T0);
    let d = limiter
        .check_policy_at(&policy, "k", 10, now)
        .await
        .expect("valid");
    assert!(d.allowed);
    let denied = limiter
        .check_policy_at(&policy, "k", 4, now)
        .await
        .expect("valid");
    assert!(!denied.allowed);
    let before = state(&limiter, &policy, "k").await;
    // A peek or a denial charged 0: there is nothing to settle, and nothing is asked.
    assert!(!limiter
        .settle_at(&policy, "k", 0, 3, now)
        .await
        .expect("nothing to do"));
    assert_eq!(state(&limiter, &policy, "k").await, before);
    match limiter.settle_at(&policy, "k", 11, 3, now).await {
        Err(SettleError::Cost {
            field: "charged", ..
        }) => {}
        other => panic!("a charge above the limit is refused: {other:?}"),
    }
    match limiter
        .settle_at(&policy, "k", 5, 2_000_000_000_000_000, now)
        .await
    {
        Err(SettleError::Cost {
            field: "actual", ..
        }) => {}
        other => panic!("an actual above 10^15 is refused: {other:?}"),
    }
    assert!(matches!(
        limiter.settle_at(&policy, "", 5, 3, now).await,
        Err(SettleError::Key(_))
    ));
    assert_eq!(state(&limiter, &policy, "k").await, before);
    // A key whose state is gone has nothing to give back to.
    assert!(!limiter
        .settle_at(&policy, "gone", 5, 3, now)
        .await
        .expect("settles"));
}

#[tokio::test]
async fn the_script_refuses_bad_arguments_by_name() {
    let server = redis();
    let limiter = limiter(&server, "settle-args");
    let source = ratelockr::scripts::SETTLE_LUA;
    for (args, names) in [
        (vec!["9", "", "1", "2"], "ARGV[1] n"),
        (
            vec!["1", "", "x", "2", "", "", "fw", "10", "1000", ""],
            "ARGV[3] charged",
        ),
        (
            vec!["1", "", "1", "-2", "", "", "fw", "10", "1000", ""],
            "ARGV[4] actual",
        ),
        (
            vec!["1", "", "1", "2", "", "", "zz", "10", "1000", ""],
            "kind must be",
        ),
        (
            vec!["1", "", "1", "2", "", "", "tb", "10", "0", ""],
            "refill per second",
        ),
        (
            vec!["1", "", "1", "2", "", "", "sw", "10", "1000", ""],
            "ARGV[5] member",
        ),
        (
            vec!["1", "x", "1", "2", "", "", "fw", "10", "1000", ""],
            "ARGV[2] now_ms",
        ),
        (
            vec!["1", "", "1", "2", "", "2", "fw", "10", "1000", ""],
            "ARGV[6] fw clock",
        ),
    ] {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(source).arg(1).arg("ratelockr:test:{s}.k");
        for arg in &args {
            cmd.arg(*arg);
        }
        let err = cmd
            .query_async::<i64>(&mut limiter.connection())
            .await
            .expect_err("refused");
        assert!(
            err.to_string().contains("settle") && err.to_string().contains(names),
            "{args:?}: {err}"
        );
    }
    // The number of keys must be n.
    let err = redis::cmd("EVAL")
        .arg(source)
        .arg(0)
        .arg("1")
        .query_async::<i64>(&mut limiter.connection())
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("expected 1 keys"), "{err}");
}

async fn serve(limiter: Limiter, policies: &str) -> (SocketAddr, tempfile::TempDir) {
    crate::served::serve_policies(
        limiter,
        vec![ratelockr::Rule::fixed_window("daily", 5000, MINUTE).expect("valid")],
        policies,
    )
    .await
}

#[tokio::test]
async fn serve_settles_by_policy_or_rule_and_names_what_is_wrong() {
    let server = redis();
    let limiter = limiter(&server, "settle-api");
    let policies = r#"
[[policies]]
name = "llm"
  [[policies.limits]]
  name = "per-minute"
  algorithm = "fixed-window"
  limit = 5000
  window_ms = 60000
"#;
    let (addr, _dir) = serve(limiter.clone(), policies).await;
    let (status, _, body) = http(
        addr,
        "POST",
        "/api/check",
        r#"{"policy": "llm", "key": "ann", "cost": 1000}"#,
    )
    .await;
    assert_eq!(
        (status, json(&body)["remaining"].as_u64()),
        (200, Some(4000)),
        "{body}"
    );
    let settle = r#"{"policy": "llm", "key": "ann", "charged": 1000, "actual": 640}"#;
    let (status, _, body) = http(addr, "POST", "/api/settle", settle).await;
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"settled": true}))
    );
    let (_, _, body) = http(
        addr,
        "POST",
        "/api/check",
        r#"{"policy": "llm", "key": "ann", "cost": 1}"#,
    )
    .await;
    assert_eq!(json(&body)["remaining"], 5000 - 641, "{body}");
    // Nothing to change: settled false.
    let same = r#"{"policy": "llm", "key": "ann", "charged": 5, "actual": 5}"#;
    let (_, _, body) = http(addr, "POST", "/api/settle", same).await;
    assert_eq!(json(&body), serde_json::json!({"settled": false}));
    // A loaded rule, by its name.
    http(
        addr,
        "POST",
        "/api/check",
        r#"{"rule": "daily", "key": "bo", "cost": 10}"#,
    )
    .await;
    let (_, _, body) = http(
        addr,
        "POST",
        "/api/settle",
        r#"{"rule": "daily", "key": "bo", "charged": 10, "actual": 30}"#,
    )
    .await;
    assert_eq!(json(&body), serde_json::json!({"settled": true}));
    let (_, _, body) = http(
        addr,
        "POST",
        "/api/check",
        r#"{"rule": "daily", "key": "bo"}"#,
    )
    .await;
    assert_eq!(json(&body)["remaining"], 5000 - 31, "{body}");

    assert_refusals(
        addr,
        "/api/settle",
        &[
            (
                r#"{"policy": "llm", "key": "k", "actual": 3}"#,
                400,
                "missing_field",
                "charged",
            ),
            (
                r#"{"policy": "llm", "key": "k", "charged": 3}"#,
                400,
                "missing_field",
                "actual",
            ),
            (
                r#"{"policy": "llm", "charged": 3, "actual": 1}"#,
                400,
                "missing_field",
                "key",
            ),
            (
                r#"{"policy": "llm", "key": "k", "charged": -3, "actual": 1}"#,
                400,
                "invalid_cost",
                "charged",
            ),
            (
                r#"{"policy": "llm", "key": "k", "charged": 3, "actual": "x"}"#,
                400,
                "invalid_cost",
                "actual",
            ),
            (
                r#"{"policy": "llm", "key": "k", "charged": 9000, "actual": 1}"#,
                400,
                "invalid_cost",
                "charged",
            ),
            (
                r#"{"policy": "llm", "key": "", "charged": 3, "actual": 1}"#,
                400,
                "invalid_key",
                "key",
            ),
            (
                r#"{"policy": "nope", "key": "k", "charged": 3, "actual": 1}"#,
                404,
                "unknown_policy",
                "policy",
            ),
            (
                r#"{"rule": "nope", "key": "k", "charged": 3, "actual": 1}"#,
                404,
                "unknown_rule",
                "rule",
            ),
        ],
    )
    .await;
    let (got, _, reply) = http(
        addr,
        "POST",
        "/api/settle",
        r#"{"policy": "llm", "key": "k", "charged": 3, "actual": 1, "cost": 1}"#,
    )
    .await;
    assert!(
        got == 400 && reply.contains("cost"),
        "the unknown field is named: {reply}"
    );
    let (got, _, _) = http(addr, "GET", "/api/settle", "").await;
    assert_eq!(got, 405);
}

#[tokio::test]
async fn a_decision_settles_only_what_redis_charged() {
    let server = redis();
    let limiter = limiter(&server, "settle-decision");
    let limits = || {
        vec![
            Limit::token_bucket("tb", 100, 1.0).expect("valid"),
            Limit::fixed_window("fw", 100, MINUTE).expect("valid"),
        ]
    };
    let policy = Policy::new("decision", limits()).expect("valid");
    let now = At::Millis(T0);
    let admitted = limiter
        .check_policy_at(&policy, "k", 80, now)
        .await
        .expect("valid");
    assert!(admitted.allowed);
    let denied = limiter
        .check_policy_at(&policy, "k", 30, now)
        .await
        .expect("valid");
    assert!(!denied.allowed);
    let before = state(&limiter, &policy, "k").await;
    // A denial, a fail-open answer and a fail-closed one charged nothing: nothing is settled.
    for decision in [
        &denied,
        &ratelockr::Decision::FAIL_OPEN,
        &ratelockr::Decision::FAIL_CLOSED,
    ] {
        assert!(!limiter
            .settle_decision_at(decision, &policy, "k", 30, 1, now)
            .await
            .expect("nothing to do"));
        assert_eq!(state(&limiter, &policy, "k").await, before);
    }
    // A shadow policy's would-be denial charged nothing either.
    let shadow = Policy::new("decision", limits())
        .expect("valid")
        .with_mode(ratelockr::policy::Mode::Shadow);
    let would_deny = limiter
        .check_policy_at(&shadow, "k", 30, now)
        .await
        .expect("valid");
    assert!(
        would_deny.allowed && would_deny.would_deny(),
        "{would_deny:?}"
    );
    assert!(!limiter
        .settle_decision_at(&would_deny, &shadow, "k", 30, 1, now)
        .await
        .expect("nothing to do"));
    assert_eq!(state(&limiter, &policy, "k").await, before);
    // The admission is settled: 80 charged, 50 used; 30 more pass now.
    assert!(limiter
        .settle_decision_at(&admitted, &policy, "k", 80, 50, now)
        .await
        .expect("settles"));
    let again = limiter
        .check_policy_at(&policy, "k", 30, now)
        .await
        .expect("valid");
    assert!(again.allowed && again.remaining == 20, "{again:?}");
}

#[tokio::test]
async fn a_key_holding_something_else_fails_the_call_with_nothing_settled() {
    let server = redis();
    let limiter = limiter(&server, "settle-corrupt");
    let policy = Policy::new(
        "corrupt",
        vec![
            Limit::fixed_window("fw", 100, MINUTE).expect("valid"),
            Limit::token_bucket("tb", 100, 1.0).expect("valid"),
        ],
    )
    .expect("valid");
    let key = |i: usize| {
        let limit = &policy.limits()[i];
        limiter
            .keys()
            .policy_limit(limit.kind(), policy.name(), limit.name(), "k")
    };
    let _: () = query(&limiter, redis::cmd("SET").arg(key(0)).arg(5)).await;
    let _: () = query(&limiter, redis::cmd("SET").arg(key(1)).arg("not a bucket")).await;
    for actual in [1, 9] {
        match limiter.settle(&policy, "k", 5, actual).await {
            Err(SettleError::Redis(failure)) => assert!(
                failure
                    .to_string()
                    .contains("not hold the state of a token bucket"),
                "{failure}"
            ),
            other => panic!("a corrupt bucket fails the call: {other:?}"),
        }
        let count: u64 = query(&limiter, redis::cmd("GET").arg(key(0))).await;
        assert_eq!(count, 5, "the fixed window before it is left as it was");
    }
}
