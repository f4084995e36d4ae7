//! The fixed window's explicit-clock mode (`At::Millis`, the script's ARGV[5]), which replays
//! use: a table of decisions on a virtual clock, and the proof that it decides as the TTL mode
//! does on the same timeline.

use crate::common;

use crate::common::{limiter, query, redis, T0};
use ratelockr::{At, Decision, Limiter, Rule};
use std::time::{Duration, Instant};

async fn at(limiter: &Limiter, rule: &Rule, key: &str, cost: u64, t: u64) -> Decision {
    let d = if cost == 0 {
        limiter.peek_at(rule, key, At::Millis(t)).await
    } else {
        limiter.check_at(rule, key, cost, At::Millis(t)).await
    }
    .expect("a valid request");
    assert!(!d.fail_open(), "Redis should have decided: {d:?}");
    d
}

/// (ms after T0, cost, allowed, remaining, retry_after_ms, reset_after_ms)
type Step = (u64, u64, bool, i64, u64, u64);

#[tokio::test]
async fn decides_on_the_clock_it_is_given() {
    let server = redis();
    let limiter = limiter(&server, "fwc-table");
    let rule = Rule::fixed_window("fw", 3, Duration::from_secs(1)).expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "a window opens at the first request and holds through start + window_ms",
            vec![
                (0, 1, true, 2, 0, 1000),
                (400, 1, true, 1, 0, 600),
                (999, 1, true, 0, 0, 1),
                (1000, 1, false, 0, 1, 0),
                (1001, 1, true, 2, 0, 1000),
                (1500, 2, true, 0, 0, 501),
                (2001, 1, false, 0, 1, 0),
                (2002, 1, true, 2, 0, 1000),
            ],
        ),
        (
            "a denied cost is not counted",
            vec![
                (0, 2, true, 1, 0, 1000),
                (10, 2, false, 1, 991, 990),
                (20, 3, false, 1, 981, 980),
                (30, 1, true, 0, 0, 970),
            ],
        ),
        (
            "a clock that goes backwards stays in the open window",
            vec![
                (5000, 3, true, 0, 0, 1000),
                (4000, 1, false, 0, 2001, 2000),
                (6000, 1, false, 0, 1, 0),
                (6001, 1, true, 2, 0, 1000),
            ],
        ),
        (
            "a peek (cost 0) says what is left of the window and changes nothing",
            vec![
                (0, 2, true, 1, 0, 1000),
                (500, 0, true, 1, 0, 500),
                (500, 1, true, 0, 0, 500),
                (1001, 0, true, 3, 0, 0),
                (1001, 1, true, 2, 0, 1000),
            ],
        ),
        (
            "a quiet gap of many windows opens a fresh one",
            vec![(0, 3, true, 0, 0, 1000), (86_400_000, 1, true, 2, 0, 1000)],
        ),
    ];
    for (client, steps) in &cases {
        for (i, &(t, cost, allowed, remaining, retry, reset)) in steps.iter().enumerate() {
            let d = at(&limiter, &rule, client, cost, T0 + t).await;
            assert_eq!(
                (
                    d.allowed,
                    d.remaining_or_unknown(),
                    d.retry_after_ms,
                    d.reset_after_ms
                ),
                (allowed, remaining, retry, reset),
                "case {client:?}, step {i} at +{t} ms"
            );
        }
    }
    // The state is the window's start beside its count, and its TTL only evicts.
    let key = limiter
        .keys()
        .limiter(&rule, "a denied cost is not counted");
    let state: Vec<Option<u64>> = query(
        &limiter,
        redis::cmd("HMGET").arg(&key).arg("start").arg("count"),
    )
    .await;
    assert_eq!(state, [Some(T0), Some(3)]);
    let ttl = common::pttl(&limiter, &key).await;
    assert!(ttl > 0 && ttl <= 1000, "PTTL {ttl}");
}

#[tokio::test]
async fn refuses_a_bad_clock_naming_it() {
    let server = redis();
    let limiter = limiter(&server, "fwc-bad");
    let rule = Rule::fixed_window("fw", 3, Duration::from_secs(1)).expect("valid rule");
    let sha = ratelockr::scripts::script(rule.kind())
        .get_hash()
        .to_string();
    let _: String = query(
        &limiter,
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(ratelockr::scripts::FIXED_WINDOW_LUA),
    )
    .await;
    let err = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg("k")
        .arg(3)
        .arg(1000)
        .arg(1)
        .arg(120)
        .arg("soon")
        .query_async::<redis::Value>(&mut limiter.connection())
        .await
        .expect_err("a bad now_ms is an error");
    assert!(err.to_string().contains("now_ms"), "{err}");
}

/// An empty ARGV[5] is the TTL mode (as documented), which gives a denied cost back.
#[tokio::test]
async fn an_empty_clock_is_the_ttl_mode_and_gives_a_denied_cost_back() {
    let server = redis();
    let limiter = limiter(&server, "fwc-empty");
    let _: String = query(
        &limiter,
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(ratelockr::scripts::FIXED_WINDOW_LUA),
    )
    .await;
    let sha = ratelockr::scripts::script(ratelockr::AlgorithmKind::FixedWindow).get_hash();
    let mut replies = Vec::new();
    for _ in 0..3 {
        let reply: Vec<i64> = query(
            &limiter,
            redis::cmd("EVALSHA")
                .arg(sha)
                .arg(1)
                .arg("k")
                .arg(2)
                .arg(60_000)
                .arg(1)
                .arg(120)
                .arg(""),
        )
        .await;
        replies.push(reply[0]);
    }
    assert_eq!(replies, [1, 1, 0]);
    let count: u64 = query(&limiter, redis::cmd("GET").arg("k")).await;
    assert_eq!(count, 2, "the denied request's cost must be given back");
}

/// The TTL mode runs on the Redis clock, which a test cannot set. So it runs first, in real
/// time, with sleeps that carry requests across window ends; its own replies then give its
/// timeline exactly: a request inside a window happened `reset_after_ms` before the window's
/// end (reset_after is the key's PTTL), and a request that opened a window (admitted, a whole
/// window left, the count at its own cost) happened after the previous window's end, where the
/// local clock's gap places it. The clock mode, fed that timeline, must give the same four
/// numbers for every request.
#[tokio::test]
async fn decides_as_the_ttl_mode_on_the_same_timeline() {
    let server = redis();
    let limiter = limiter(&server, "fwc-same");
    const LIMIT: u64 = 4;
    const WINDOW: u64 = 150;
    let ttl_rule =
        Rule::fixed_window("ttl", LIMIT, Duration::from_millis(WINDOW)).expect("valid rule");
    let clock_rule =
        Rule::fixed_window("clock", LIMIT, Duration::from_millis(WINDOW)).expect("valid rule");
    // A fixed pseudo-random schedule: mostly short gaps, a few that outlast a window.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let schedule: Vec<(u64, u64)> = (0..48)
        .map(|i| {
            let gap = if i % 9 == 8 {
                WINDOW + next(120)
            } else {
                next(45)
            };
            (gap, 1 + next(3))
        })
        .collect();

    let mut ttl_decisions = Vec::new();
    let mut real_ms = Vec::new();
    let started = Instant::now();
    for &(gap, cost) in &schedule {
        tokio::time::sleep(Duration::from_millis(gap)).await;
        real_ms.push(started.elapsed().as_millis() as u64);
        let d = limiter
            .check_at(&ttl_rule, "c", cost, At::ServerClock)
            .await
            .expect("a valid request");
        assert!(!d.fail_open(), "{d:?}");
        ttl_decisions.push(d);
    }

    // The TTL mode's timeline, from its replies.
    let mut times: Vec<u64> = Vec::new();
    let mut window_end: Option<u64> = None;
    let mut windows = 0;
    for (i, (d, &(_, cost))) in ttl_decisions.iter().zip(&schedule).enumerate() {
        let opened = d.allowed
            && d.reset_after_ms == WINDOW
            && d.remaining_or_unknown() == (LIMIT - cost) as i64;
        let t = match window_end {
            Some(end) if !opened => end - d.reset_after_ms,
            Some(end) => {
                let by_clock = times[i - 1] + (real_ms[i] - real_ms[i - 1]);
                by_clock.max(end + 1)
            }
            None => T0,
        };
        if opened || window_end.is_none() {
            assert!(opened, "request {i} opened the first window: {d:?}");
            window_end = Some(t + WINDOW);
            windows += 1;
        }
        if let Some(&prev) = times.last() {
            assert!(t >= prev, "request {i}: the timeline must not go back");
        }
        times.push(t);
    }
    assert!(
        windows >= 4,
        "the schedule should cross several windows, saw {windows}"
    );
    assert!(
        ttl_decisions.iter().any(|d| !d.allowed),
        "the schedule should see denials"
    );

    for (i, ((&t, &(_, cost)), ttl)) in times.iter().zip(&schedule).zip(&ttl_decisions).enumerate()
    {
        let clock = at(&limiter, &clock_rule, "c", cost, t).await;
        assert_eq!(clock, *ttl, "request {i} at +{} ms, cost {cost}", t - T0);
    }
}

/// A window one mode left is read by the other as its own (the count and the window's end
/// kept), and a check rewrites it in its own form: a simulation on the caller's clock, then a
/// peek or a check on the server's, decides instead of failing open on WRONGTYPE. A peek
/// writes nothing; a key holding anything else is still refused.
#[tokio::test]
async fn a_window_left_by_the_other_mode_is_read_and_kept() {
    let server = redis();
    let limiter = limiter(&server, "fwc-modes");
    let rule = Rule::fixed_window("fw", 5, Duration::from_secs(600)).expect("valid rule");
    let policy = ratelockr::Policy::new(
        "fwp",
        vec![ratelockr::Limit::fixed_window("daily", 5, Duration::from_secs(600)).expect("valid")],
    )
    .expect("valid");
    let now = ratelockr::telemetry::now_ms();
    let key_type = |key: String| {
        let limiter = limiter.clone();
        async move {
            let t: String = query(&limiter, redis::cmd("TYPE").arg(key)).await;
            t
        }
    };

    // Caller's clock first (a hash), then the server's (an integer count).
    let state = limiter.keys().limiter(&rule, "a");
    for _ in 0..2 {
        at(&limiter, &rule, "a", 1, now).await;
    }
    let peek = limiter.peek(&rule, "a").await.expect("valid");
    assert_eq!((peek.fail_open(), peek.remaining), (false, 3), "{peek:?}");
    assert_eq!(
        key_type(state.clone()).await,
        "hash",
        "a peek writes nothing"
    );
    let d = limiter.check(&rule, "a").await.expect("valid");
    assert_eq!(
        (d.fail_open(), d.allowed, d.remaining),
        (false, true, 2),
        "{d:?}"
    );
    assert!(
        d.reset_after_ms <= 600_000 && d.reset_after_ms > 500_000,
        "{d:?}"
    );
    assert_eq!(key_type(state.clone()).await, "string");

    // And back: the server's count read on the caller's clock.
    let peek = at(&limiter, &rule, "a", 0, now + 10).await;
    assert_eq!(peek.remaining, 2, "{peek:?}");
    let d = at(&limiter, &rule, "a", 2, now + 10).await;
    assert_eq!((d.allowed, d.remaining), (true, 0), "{d:?}");
    assert_eq!(key_type(state.clone()).await, "hash");
    let d = limiter.check(&rule, "a").await.expect("valid");
    assert_eq!(
        (d.fail_open(), d.allowed),
        (false, false),
        "the count of 5 held: {d:?}"
    );

    // The policy script reads across the modes as the standalone one does.
    let p = limiter
        .check_policy_at(&policy, "b", 1, At::Millis(now))
        .await
        .expect("valid");
    assert!(p.allowed && !p.fail_open(), "{p:?}");
    let p = limiter.check_policy(&policy, "b").await.expect("valid");
    assert_eq!(
        (p.allowed, p.fail_open(), p.remaining),
        (true, false, 3),
        "{p:?}"
    );
    let p = limiter
        .peek_policy_at(&policy, "b", At::Millis(now + 5))
        .await
        .expect("valid");
    assert_eq!((p.fail_open(), p.remaining), (false, 3), "{p:?}");

    // Anything else at the key is still a misconfiguration, named.
    let other = limiter.keys().limiter(&rule, "c");
    let _: i64 = query(&limiter, redis::cmd("RPUSH").arg(&other).arg("x")).await;
    for t in [At::ServerClock, At::Millis(now)] {
        let failed = limiter.try_check_at(&rule, "c", 1, t).await;
        assert!(
            matches!(&failed, Err(ratelockr::CheckError::Redis(f)) if f.message.contains("WRONGTYPE")),
            "{t:?}: {failed:?}"
        );
    }
}
