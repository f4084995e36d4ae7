//! The sliding window log against a real Redis, on an explicit clock.
//!
//! Windows are 10 s of the explicit clock: the key's real PEXPIRE is the window too, so a short
//! window could expire in wall-clock time while a slow CI box is between two steps.

use crate::common::{decide_at, fork, limiter, pttl, query, redis, T0};
use ratelockr::{Limiter, Rule};

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

async fn scores(limiter: &Limiter, key: &str) -> Vec<u64> {
    let pairs: Vec<(String, u64)> = query(
        limiter,
        redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    )
    .await;
    pairs.into_iter().map(|(_, score)| score - T0).collect()
}

async fn zcard(limiter: &Limiter, key: &str) -> u64 {
    query(limiter, redis::cmd("ZCARD").arg(key)).await
}

#[tokio::test]
async fn table_of_decisions() {
    let server = redis();
    let limiter = limiter(&server, "sw-table");
    let rule = Rule::sliding_window_log("sw", 3, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "fills, denies until the oldest entry leaves",
            vec![
                (0, 1, true, 2, 0, 10_000),
                (1, 1, true, 1, 0, 10_000),
                (2, 1, true, 0, 0, 10_000),
                (3, 1, false, 0, 9_997, 9_999),
                (9_999, 1, false, 0, 1, 3),
                (10_000, 1, true, 0, 0, 10_000),
                (10_001, 1, true, 0, 0, 10_000),
                (10_001, 1, false, 0, 1, 10_000),
            ],
        ),
        (
            "the window slides",
            vec![
                (0, 1, true, 2, 0, 10_000),
                (4_000, 1, true, 1, 0, 10_000),
                (8_000, 1, true, 0, 0, 10_000),
                (12_000, 1, true, 0, 0, 10_000),
                (13_999, 1, false, 0, 1, 8_001),
                (14_000, 1, true, 0, 0, 10_000),
            ],
        ),
        (
            "cost logs several entries; a denied cost waits for enough of them",
            vec![
                (0, 2, true, 1, 0, 10_000),
                (5_000, 2, false, 1, 5_000, 5_000),
                (5_000, 1, true, 0, 0, 10_000),
                (9_999, 3, false, 0, 5_001, 5_001),
                (10_000, 2, true, 0, 0, 10_000),
                (10_000, 1, false, 0, 5_000, 10_000),
            ],
        ),
    ];
    for (name, steps) in &cases {
        run_case(&limiter, name, &rule, steps).await;
    }
}

#[tokio::test]
async fn denied_requests_are_not_logged_and_old_entries_are_pruned() {
    let server = redis();
    let limiter = limiter(&server, "sw-log");
    let rule = Rule::sliding_window_log("sw", 3, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    for at in 0..3 {
        assert!(decide_at(&limiter, &rule, "c", 1, at).await.allowed);
    }
    for at in 3..20 {
        assert!(!decide_at(&limiter, &rule, "c", 1, at).await.allowed);
        assert_eq!(
            zcard(&limiter, &key).await,
            3,
            "a denied request was logged"
        );
    }
    assert!(!decide_at(&limiter, &rule, "c", 2, 30).await.allowed);
    assert_eq!(zcard(&limiter, &key).await, 3);
    // Long after the window, one request: the three old entries are gone, one new is there.
    assert!(decide_at(&limiter, &rule, "c", 1, 50_000).await.allowed);
    assert_eq!(scores(&limiter, &key).await, vec![50_000]);
    // Entries exactly one window old are out (score <= now - window).
    assert!(decide_at(&limiter, &rule, "c", 2, 59_999).await.allowed);
    assert_eq!(zcard(&limiter, &key).await, 3);
    assert!(decide_at(&limiter, &rule, "c", 1, 60_000).await.allowed);
    assert_eq!(scores(&limiter, &key).await, vec![59_999, 59_999, 60_000]);
}

#[tokio::test]
async fn ttl_is_the_window() {
    let server = redis();
    let limiter = limiter(&server, "sw-ttl");
    let rule =
        Rule::sliding_window_log("sw", 2, std::time::Duration::from_secs(60)).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    decide_at(&limiter, &rule, "c", 1, 0).await;
    let ttl = pttl(&limiter, &key).await;
    assert!((58_500..=60_000).contains(&ttl), "PTTL {ttl}");
    let _: i64 = query(&limiter, redis::cmd("PEXPIRE").arg(&key).arg(5_000)).await;
    decide_at(&limiter, &rule, "c", 1, 10).await;
    let ttl = pttl(&limiter, &key).await;
    assert!(
        (58_500..=60_000).contains(&ttl),
        "not renewed by a logged request: PTTL {ttl}"
    );
}

#[tokio::test]
async fn a_backwards_clock_mints_nothing() {
    let server = redis();
    let limiter = limiter(&server, "sw-backwards");
    let rule = Rule::sliding_window_log("sw", 3, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    for _ in 0..3 {
        assert!(decide_at(&limiter, &rule, "c", 1, 20_000).await.allowed);
    }
    // Earlier clocks see the log as of its newest entry: still full. The wait is measured
    // from the caller's own clock: it passes at 30 000 on it.
    for at in [5_000, 0, 19_999, 29_999] {
        let d = decide_at(&limiter, &rule, "c", 1, at).await;
        assert!(!d.allowed, "at {at}: {d:?}");
        assert_eq!(d.retry_after_ms, 30_000 - at, "at {at}");
        assert_eq!(d.reset_after_ms, 30_000 - at, "at {at}");
    }
    assert!(decide_at(&limiter, &rule, "c", 1, 30_000).await.allowed);
    // A request stamped in the past is logged at the newest time, never before it.
    assert!(decide_at(&limiter, &rule, "c", 1, 1_000).await.allowed);
    assert_eq!(scores(&limiter, &key).await, vec![30_000, 30_000]);
}

#[tokio::test]
async fn a_backwards_clock_after_a_denied_request_mints_nothing() {
    let server = redis();
    let limiter = limiter(&server, "sw-backwards-denied");
    let rule = Rule::sliding_window_log("sw", 2, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    assert!(decide_at(&limiter, &rule, "c", 1, 0).await.allowed);
    assert!(decide_at(&limiter, &rule, "c", 1, 5_000).await.allowed);
    // At 12 000 the entry at 0 is out of the window, yet a cost of 2 does not fit: denied.
    let d = decide_at(&limiter, &rule, "c", 2, 12_000).await;
    assert!(!d.allowed, "{d:?}");
    // Back at 6 000 both entries (0 and 5 000) are inside the window (-4 000, 6 000].
    let d = decide_at(&limiter, &rule, "c", 1, 6_000).await;
    assert!(
        !d.allowed,
        "a later clock's denied request made room for an earlier clock: {d:?}"
    );
}

#[tokio::test]
async fn waiting_retry_after_passes_and_one_ms_less_does_not() {
    let server = redis();
    let limiter = limiter(&server, "sw-retry");
    // (limit, admitted at these offsets with cost 1, probe at, probe cost)
    let cases: Vec<(u64, Vec<u64>, u64, u64)> = vec![
        (3, vec![0, 1, 2], 3, 1),
        (3, vec![0, 100, 200], 300, 2),
        (3, vec![0, 100, 200], 300, 3),
        (1, vec![7_777], 9_000, 1),
        (4, vec![0, 0, 0, 9_999], 9_999, 4),
        (5, vec![10, 20, 20, 20, 30], 40, 3),
    ];
    for (i, (limit, admitted, probe, cost)) in cases.into_iter().enumerate() {
        let rule = Rule::sliding_window_log(
            format!("r{i}"),
            limit,
            std::time::Duration::from_millis(WINDOW),
        )
        .expect("valid rule");
        for &at in &admitted {
            assert!(decide_at(&limiter, &rule, "c", 1, at).await.allowed);
        }
        let d = decide_at(&limiter, &rule, "c", cost, probe).await;
        let ctx = format!("case {i}: {d:?}");
        assert!(!d.allowed && d.retry_after_ms > 0, "{ctx}");
        let key = limiter.keys().limiter(&rule, "c");
        fork(&limiter, &key, &limiter.keys().limiter(&rule, "early")).await;
        let retry = d.retry_after_ms;
        assert!(
            decide_at(&limiter, &rule, "c", cost, probe + retry)
                .await
                .allowed,
            "waiting retry_after did not pass: {ctx}"
        );
        assert!(
            !decide_at(&limiter, &rule, "early", cost, probe + retry - 1)
                .await
                .allowed,
            "1 ms less already passes: {ctx}"
        );
    }
}

#[tokio::test]
async fn never_more_than_the_limit_in_any_window() {
    let server = redis();
    let limiter = limiter(&server, "sw-boundary");
    let rule = Rule::sliding_window_log("sw", 4, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    // Offered every 250 ms for four windows, bursts of three at each whole second.
    let mut admitted = Vec::new();
    for step in 0..160u64 {
        let at = step * 250;
        let burst = if at % 1_000 == 0 { 3 } else { 1 };
        for _ in 0..burst {
            if decide_at(&limiter, &rule, "c", 1, at).await.allowed {
                admitted.push(at);
            }
        }
    }
    for &end in &admitted {
        let inside = admitted
            .iter()
            .filter(|&&t| t + WINDOW > end && t <= end)
            .count();
        assert!(inside <= 4, "{inside} admitted in the window ending {end}");
    }
    // And the limiter is not starving: four windows, four each.
    assert_eq!(admitted.len(), 16, "{admitted:?}");
}

/// A log written by an older engine, with 36-character UUID members, is counted and expired as
/// it stands beside the 16-character members sent now.
#[tokio::test]
async fn uuid_members_already_in_redis_still_count_and_expire() {
    let server = redis();
    let limiter = limiter(&server, "sw-uuid");
    let rule = Rule::sliding_window_log("sw", 3, std::time::Duration::from_millis(WINDOW))
        .expect("valid rule");
    let key = limiter.keys().limiter(&rule, "old");
    let _: () = query(
        &limiter,
        redis::cmd("ZADD")
            .arg(&key)
            .arg(T0)
            .arg("0b0e6f0a-2f43-4c1e-9a52-6d1f3c2b8e11")
            .arg(T0 + 1)
            .arg("7c9d2a4e-1b3f-4d5a-8e6c-0f1a2b3c4d5e"),
    )
    .await;
    // Two old entries and one new: full.
    let d = decide_at(&limiter, &rule, "old", 1, 2).await;
    assert!(d.allowed && d.remaining == 0, "{d:?}");
    let d = decide_at(&limiter, &rule, "old", 1, 3).await;
    assert!(!d.allowed && d.retry_after_ms == WINDOW - 3, "{d:?}");
    // Past the first old entry's window it leaves, and is pruned when the next entry is logged.
    let d = decide_at(&limiter, &rule, "old", 1, WINDOW).await;
    assert!(d.allowed, "{d:?}");
    let members: Vec<String> = query(&limiter, redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1)).await;
    assert_eq!(members.len(), 3, "{members:?}");
    assert_eq!(members[0], "7c9d2a4e-1b3f-4d5a-8e6c-0f1a2b3c4d5e");
    assert!(members[1..].iter().all(|m| m.len() == 16), "{members:?}");
}
