//! When Redis fails: NOSCRIPT is recovered, outages and hangs fail open within the deadline,
//! misconfiguration is told apart. Every test that flushes, freezes or kills has its own server.

use crate::common;

use crate::common::{
    dead_url, decide_at, decide_now, failures_of, limiter, limiter_with, options, query, signal,
    Thaw,
};
use ratelockr::{
    At, CheckError, Decision, FailureKind, FailureMode, Limiter, LimiterOptions, Rule,
};
use std::time::{Duration, Instant};

fn rules() -> [Rule; 5] {
    [
        Rule::token_bucket("tb", 5, 0.001).expect("valid rule"),
        Rule::gcra("gc", 5, Duration::from_secs(600), 5).expect("valid rule"),
        Rule::sliding_window_log("sw", 5, Duration::from_secs(600)).expect("valid rule"),
        Rule::sliding_window_counter("sc", 5, Duration::from_secs(600)).expect("valid rule"),
        Rule::fixed_window("fw", 5, Duration::from_secs(600)).expect("valid rule"),
    ]
}

/// Decisions per rule in the tests that try each rule twice.
const TWICE: u64 = 2 * 5;

#[tokio::test]
async fn decisions_survive_script_flush_without_failing_open() {
    let server = common::redis();
    let limiter = limiter(&server, "noscript");
    for rule in rules() {
        assert_eq!(decide_now(&limiter, &rule, "c", 1).await.remaining, 4);
    }
    for round in 0..2 {
        let _: String = query(&limiter, redis::cmd("SCRIPT").arg("FLUSH")).await;
        for rule in rules() {
            let d = decide_now(&limiter, &rule, "c", 1).await;
            // The state survived and the decision is a real one, not fail-open.
            assert_eq!(
                d.remaining,
                3 - round,
                "{} after SCRIPT FLUSH: {d:?}",
                rule.name()
            );
            assert!(d.allowed);
        }
    }
    assert_eq!(limiter.ledger().failures_total(), 0);
    assert_eq!(limiter.ledger().fail_open_total(), 0);
}

#[tokio::test]
async fn no_redis_fails_open_and_is_counted_by_kind() {
    let limiter = limiter_with(
        &dead_url(),
        LimiterOptions {
            deadline: Duration::from_millis(500),
            ..options("dead")
        },
    );
    for rule in rules() {
        for _ in 0..2 {
            let started = Instant::now();
            let d = limiter.check(&rule, "c").await.expect("valid request");
            assert_eq!(d, Decision::FAIL_OPEN);
            assert!(
                d.allowed && d.remaining_or_unknown() == -1 && d.fail_open(),
                "{}: {d:?}",
                rule.name()
            );
            assert!(started.elapsed() < Duration::from_secs(5));
        }
    }
    let ledger = limiter.ledger();
    assert_eq!(ledger.fail_open_total(), TWICE);
    assert_eq!(ledger.failures_total(), TWICE);
    let outage = failures_of(&limiter, FailureKind::Unavailable)
        + failures_of(&limiter, FailureKind::Timeout);
    assert_eq!(
        outage,
        TWICE,
        "an outage is not a misconfiguration: {:?}",
        ledger.failures()
    );
    assert_eq!(failures_of(&limiter, FailureKind::Misconfiguration), 0);
    // try_check_at names the failure rather than hiding it.
    let rule = &rules()[0];
    match limiter.try_check_at(rule, "c", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => assert!(
            matches!(
                failure.kind,
                FailureKind::Unavailable | FailureKind::Timeout
            ),
            "{failure}"
        ),
        other => panic!("expected a Redis failure, got {other:?}"),
    }
    // Fail-open decisions are counted per rule and second in process.
    let second = ratelockr::telemetry::now_ms() / 1000;
    let series = ledger.fail_open_series("tb", second);
    assert_eq!(series.len(), 30);
    let counted: u64 = series.iter().map(|p| p.fail_open).sum();
    assert_eq!(counted, 3, "{series:?}");
    // A peek without Redis gives the fallback too; it is a failure, but no decision was let
    // through, so no fail-open is counted.
    let peek = limiter.peek(rule, "c").await.expect("valid request");
    assert_eq!(peek, Decision::FAIL_OPEN);
    assert_eq!(ledger.fail_open_total(), TWICE + 1);
    assert_eq!(ledger.failures_total(), TWICE + 2);
}

#[tokio::test]
async fn fail_closed_denies_without_redis() {
    let limiter = limiter_with(
        &dead_url(),
        LimiterOptions {
            deadline: Duration::from_millis(500),
            failure_mode: FailureMode::Closed,
            ..options("closed")
        },
    );
    for rule in rules() {
        let d = limiter.check(&rule, "c").await.expect("valid request");
        assert_eq!(d, Decision::FAIL_CLOSED);
        assert!(
            !d.allowed && d.remaining_or_unknown() == -1 && !d.fail_open(),
            "{d:?}"
        );
    }
    assert_eq!(limiter.ledger().failures_total(), 5);
    assert_eq!(limiter.ledger().fail_open_total(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_redis_fails_open_within_the_deadline_and_recovers() {
    let server = common::redis();
    let limiter = limiter_with(
        &server.url(),
        LimiterOptions {
            deadline: Duration::from_millis(200),
            ..options("frozen")
        },
    );
    let rule = Rule::token_bucket("tb", 1_000, 0.001).expect("valid rule");
    // Connect (and load the script) while Redis is alive, with a retry for a slow start.
    let mut warm = false;
    for _ in 0..20 {
        if !limiter
            .check(&rule, "warm")
            .await
            .expect("valid")
            .fail_open()
        {
            warm = true;
            break;
        }
    }
    assert!(warm, "Redis never answered: {}", server.log());

    signal("STOP", server.pid());
    let thaw = Thaw(server.pid());
    for _ in 0..3 {
        let started = Instant::now();
        let d = limiter.check(&rule, "c").await.expect("valid request");
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "a hung Redis held a caller {took:?}"
        );
        assert!(
            d.fail_open() && d.allowed && d.remaining_or_unknown() == -1,
            "{d:?}"
        );
    }
    assert!(
        failures_of(&limiter, FailureKind::Timeout) >= 3,
        "{:?}",
        limiter.ledger().failures()
    );

    drop(thaw);
    let recovered = common::eventually(Duration::from_secs(10), || {
        let limiter = limiter.clone();
        let rule = rule.clone();
        async move {
            !limiter
                .check(&rule, "after")
                .await
                .expect("valid")
                .fail_open()
        }
    })
    .await;
    assert!(recovered, "decisions did not recover after SIGCONT");
    let d = decide_now(&limiter, &rule, "after", 1).await;
    assert!(d.allowed && d.remaining > 0, "{d:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_shorter_than_the_deadline_is_waited_out() {
    let server = common::redis();
    let limiter = limiter_with(
        &server.url(),
        LimiterOptions {
            deadline: Duration::from_secs(10),
            ..options("stall")
        },
    );
    let rule = Rule::token_bucket("tb", 10, 0.001).expect("valid rule");
    decide_now(&limiter, &rule, "c", 1).await;
    // Redis stalls for a second (a fork, a slow command, a loaded box): well inside the
    // deadline, so the caller waits and gets a real decision rather than a fail-open one.
    signal("STOP", server.pid());
    let thaw = Thaw(server.pid());
    let waker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1_200));
        drop(thaw);
    });
    let d = limiter.check(&rule, "c").await.expect("valid request");
    waker.join().expect("the thaw thread");
    assert!(
        !d.fail_open() && d.remaining == 8,
        "a 1.2 s stall failed open under a 10 s deadline: {d:?}, {:?}",
        limiter.ledger().failures()
    );
}

#[tokio::test]
async fn a_killed_redis_fails_open() {
    let server = common::redis();
    let limiter = limiter_with(
        &server.url(),
        LimiterOptions {
            deadline: Duration::from_millis(500),
            ..options("killed")
        },
    );
    let rule = Rule::fixed_window("fw", 3, Duration::from_secs(600)).expect("valid rule");
    decide_now(&limiter, &rule, "c", 1).await;
    drop(server);
    for _ in 0..3 {
        let started = Instant::now();
        let d = limiter.check(&rule, "c").await.expect("valid request");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(d, Decision::FAIL_OPEN);
    }
    assert_eq!(failures_of(&limiter, FailureKind::Misconfiguration), 0);
    assert_eq!(limiter.ledger().fail_open_total(), 3);
}

async fn plant_wrong_type(limiter: &Limiter, rule: &Rule, client: &str) {
    let key = limiter.keys().limiter(rule, client);
    // A hash where the fixed window wants an integer and the token bucket its string (a
    // hash is also what a bucket from before the string format looks like); a string for the
    // sliding log's sorted set.
    let cmd = match rule.kind() {
        ratelockr::AlgorithmKind::FixedWindow
        | ratelockr::AlgorithmKind::TokenBucket
        | ratelockr::AlgorithmKind::Gcra => {
            let mut c = redis::cmd("HSET");
            c.arg(&key).arg("not").arg("a counter");
            c
        }
        _ => {
            let mut c = redis::cmd("SET");
            c.arg(&key).arg("not a limiter");
            c
        }
    };
    let _: redis::Value = query(limiter, &cmd).await;
}

#[tokio::test]
async fn a_wrong_type_at_the_key_is_a_misconfiguration_and_fails_open() {
    let server = common::redis();
    let limiter = limiter(&server, "wrongtype");
    for rule in rules() {
        plant_wrong_type(&limiter, &rule, "c").await;
        match limiter.try_check_at(&rule, "c", 1, At::ServerClock).await {
            Err(CheckError::Redis(failure)) => {
                assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
                assert!(failure.message.contains("WRONGTYPE"), "{failure}");
            }
            other => panic!(
                "{}: expected a misconfiguration, got {other:?}",
                rule.name()
            ),
        }
        // On the caller's clock the fixed window keeps a hash (its clock mode), which the
        // planted one is: its wrong type there is the server clock's.
        let at = match rule.kind() {
            ratelockr::AlgorithmKind::FixedWindow => At::ServerClock,
            _ => At::Millis(common::T0),
        };
        let d = limiter
            .check_at(&rule, "c", 1, at)
            .await
            .expect("valid request");
        assert_eq!(d, Decision::FAIL_OPEN, "{}", rule.name());
        // The same rule still decides for other clients.
        let ok = decide_at(&limiter, &rule, "other", 1, 0).await;
        assert!(ok.allowed && ok.remaining == 4, "{ok:?}");
    }
    assert_eq!(failures_of(&limiter, FailureKind::Misconfiguration), TWICE);
    assert_eq!(limiter.ledger().failures_total(), TWICE);
    assert_eq!(limiter.ledger().fail_open_total(), TWICE);
}

#[tokio::test]
async fn a_corrupt_bucket_is_a_misconfiguration_named_with_its_key_not_a_fresh_bucket() {
    let server = common::redis();
    let limiter = limiter(&server, "corrupt");
    let rule = Rule::token_bucket("tb", 5, 1.0).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    let nan_tokens: Vec<u8> = [f64::NAN.to_le_bytes(), 1e12f64.to_le_bytes()].concat();
    let fractional_ms: Vec<u8> = [1.0f64.to_le_bytes(), 1.5f64.to_le_bytes()].concat();
    let corrupt: [&[u8]; 4] = [
        b"garbage",
        b"2.5 1764680000000",
        &nan_tokens,
        &fractional_ms,
    ];
    for value in corrupt {
        let _: () = query(&limiter, redis::cmd("SET").arg(&key).arg(value)).await;
        match limiter.try_check_at(&rule, "c", 1, At::ServerClock).await {
            Err(CheckError::Redis(failure)) => {
                assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
                assert!(failure.message.contains(&key), "{failure}");
                assert!(failure.message.contains("not a bucket"), "{failure}");
            }
            other => panic!("{value:?}: expected a misconfiguration, got {other:?}"),
        }
        // Nothing was written over it.
        let stored: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&key)).await;
        assert_eq!(stored, value);
    }
}

#[tokio::test]
async fn corrupt_gcra_and_counter_state_is_a_misconfiguration_named_with_its_key() {
    let server = common::redis();
    let limiter = limiter(&server, "corrupt-new");
    let gcra = Rule::gcra("gc", 5, Duration::from_secs(1), 5).expect("valid rule");
    let counter =
        Rule::sliding_window_counter("sc", 5, Duration::from_secs(1)).expect("valid rule");
    // A TAT whose fraction is not below its limit, and one of the wrong length.
    let bad_frac: Vec<u8> = [1e12f64, 7.0, 5.0]
        .iter()
        .flat_map(|d| d.to_le_bytes())
        .collect();
    for value in [b"12345".to_vec(), bad_frac] {
        let key = limiter.keys().limiter(&gcra, "c");
        let _: () = query(&limiter, redis::cmd("SET").arg(&key).arg(&value)).await;
        match limiter.try_check_at(&gcra, "c", 1, At::ServerClock).await {
            Err(CheckError::Redis(failure)) => {
                assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
                assert!(failure.message.contains(&key), "{failure}");
                assert!(failure.message.contains("not a TAT"), "{failure}");
            }
            other => panic!("{value:?}: expected a misconfiguration, got {other:?}"),
        }
        let stored: Vec<u8> = query(&limiter, redis::cmd("GET").arg(&key)).await;
        assert_eq!(stored, value, "nothing was written over it");
    }
    let key = limiter.keys().limiter(&counter, "c");
    let _: () = query(
        &limiter,
        redis::cmd("HSET")
            .arg(&key)
            .arg("w")
            .arg("x")
            .arg("c")
            .arg(1),
    )
    .await;
    match limiter
        .try_check_at(&counter, "c", 1, At::ServerClock)
        .await
    {
        Err(CheckError::Redis(failure)) => {
            assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
            assert!(failure.message.contains(&key), "{failure}");
            assert!(failure.message.contains("not a counter hash"), "{failure}");
        }
        other => panic!("expected a misconfiguration, got {other:?}"),
    }
}

/// The caller's own bad input is an error naming it, never a Redis failure that fails open:
/// a time past 2^53 ms once reached the scripts, which refused it, and the refusal was counted
/// as a misconfiguration and admitted (issue 21).
#[tokio::test]
async fn a_time_the_scripts_refuse_is_an_error_not_an_admission() {
    let server = common::redis();
    let limiter = limiter(&server, "bad-now");
    let too_late = (1u64 << 53) + 1;
    for rule in rules() {
        for at in [At::Millis(too_late), At::Millis(u64::MAX)] {
            let err = limiter
                .check_at(&rule, "c", 1, at)
                .await
                .expect_err("refused before Redis");
            assert!(err.to_string().contains("now_ms"), "{}: {err}", rule.name());
        }
        // The latest time the scripts take is still decided.
        let d = limiter
            .check_at(&rule, "c", 1, At::Millis(1u64 << 53))
            .await
            .expect("a valid time");
        assert!(d.allowed && !d.fail_open(), "{}: {d:?}", rule.name());
    }
    assert_eq!(
        limiter.ledger().failures_total(),
        0,
        "Redis was never blamed"
    );
    assert_eq!(
        limiter.ledger().fail_open_total(),
        0,
        "nothing was let through"
    );
}
