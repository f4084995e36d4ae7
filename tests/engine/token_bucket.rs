//! The token bucket against a real Redis, on an explicit clock (and its TTL on the server's).

use crate::common;

use crate::common::{decide_at, fork, limiter, pttl, query, redis, T0};
use ratelockr::scripts::source;
use ratelockr::{AlgorithmKind, Limiter, Rule};
use std::time::Duration;

/// One request of a table case and what must come back.
#[derive(Debug)]
struct Step {
    at: u64,
    cost: u64,
    allowed: bool,
    remaining: i64,
    /// `None` where float refill makes the exact figure uninteresting.
    retry_after: Option<u64>,
    reset_after: Option<u64>,
}

fn ok(at: u64, cost: u64, remaining: i64, reset_after: u64) -> Step {
    Step {
        at,
        cost,
        allowed: true,
        remaining,
        retry_after: Some(0),
        reset_after: Some(reset_after),
    }
}

fn no(at: u64, cost: u64, remaining: i64, retry_after: u64, reset_after: Option<u64>) -> Step {
    Step {
        at,
        cost,
        allowed: false,
        remaining,
        retry_after: Some(retry_after),
        reset_after,
    }
}

async fn run_case(limiter: &Limiter, name: &str, rule: &Rule, steps: &[Step]) {
    for (i, step) in steps.iter().enumerate() {
        let d = decide_at(limiter, rule, name, step.cost, step.at).await;
        let ctx = format!("case {name:?}, step {i} {step:?}: got {d:?}");
        assert_eq!(d.allowed, step.allowed, "{ctx}");
        assert_eq!(d.remaining_or_unknown(), step.remaining, "{ctx}");
        if let Some(retry) = step.retry_after {
            assert_eq!(d.retry_after_ms, retry, "{ctx}");
        }
        if let Some(reset) = step.reset_after {
            assert_eq!(d.reset_after_ms, reset, "{ctx}");
        }
    }
}

#[tokio::test]
async fn table_of_decisions() {
    let server = redis();
    let limiter = limiter(&server, "tb-table");
    // Capacity 5, 2 tokens a second: one token every 500 ms.
    let rule = Rule::token_bucket("tb", 5, 2.0).expect("valid rule");
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "a new bucket starts full and empties",
            vec![
                ok(0, 1, 4, 500),
                ok(0, 1, 3, 1000),
                ok(0, 1, 2, 1500),
                ok(0, 1, 1, 2000),
                ok(0, 1, 0, 2500),
                no(0, 1, 0, 500, Some(2500)),
                no(0, 1, 0, 500, Some(2500)),
            ],
        ),
        (
            "refill is lazy and exact",
            vec![
                ok(0, 5, 0, 2500),
                no(250, 1, 0, 250, Some(2250)),
                ok(500, 1, 0, 2500),
                no(500, 1, 0, 500, Some(2500)),
                ok(1500, 2, 0, 2500),
            ],
        ),
        (
            "one millisecond short of a token",
            vec![
                ok(0, 5, 0, 2500),
                no(499, 1, 0, 1, None),
                ok(500, 1, 0, 2500),
            ],
        ),
        (
            "refill stops at capacity",
            vec![
                ok(0, 1, 4, 500),
                ok(3_600_000, 1, 4, 500),
                ok(3_600_000, 4, 0, 2500),
            ],
        ),
        (
            "a clock behind the stored state waits from its own clock",
            vec![
                ok(10_000, 5, 0, 2500),
                no(9_000, 1, 0, 1500, Some(3500)),
                ok(10_500, 1, 0, 2500),
            ],
        ),
        (
            "cost takes several tokens and a denied cost takes none",
            vec![
                ok(0, 3, 2, 1500),
                no(0, 3, 2, 500, Some(1500)),
                ok(0, 2, 0, 2500),
                ok(1000, 2, 0, 2500),
                no(1000, 5, 0, 2500, Some(2500)),
                ok(3500, 5, 0, 2500),
            ],
        ),
    ];
    for (name, steps) in &cases {
        run_case(&limiter, name, &rule, steps).await;
    }
}

/// The stored bucket: two little-endian doubles, tokens and last_refill (ms).
async fn bucket_state(limiter: &Limiter, key: &str) -> (f64, u64) {
    let state: Vec<u8> = query(limiter, redis::cmd("GET").arg(key)).await;
    let (tokens, last) = common::unpack_bucket(&state);
    (tokens, last as u64)
}

#[tokio::test]
async fn a_backwards_clock_mints_nothing_and_last_refill_never_moves_back() {
    let server = redis();
    let limiter = limiter(&server, "tb-backwards");
    let rule = Rule::token_bucket("tb", 5, 2.0).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");

    assert!(decide_at(&limiter, &rule, "c", 5, 10_000).await.allowed);
    assert_eq!(bucket_state(&limiter, &key).await, (0.0, T0 + 10_000));

    // The clock jumps 6 s back: that call mints nothing...
    let d = decide_at(&limiter, &rule, "c", 1, 4_000).await;
    assert!(!d.allowed, "the backwards call minted a token: {d:?}");
    assert_eq!(bucket_state(&limiter, &key).await, (0.0, T0 + 10_000));
    // ...and neither does the next one, back at the original time (had last_refill moved back
    // to 4 000, this call would see 6 s of refill).
    let d = decide_at(&limiter, &rule, "c", 1, 10_000).await;
    assert!(!d.allowed, "the call after the backwards one minted: {d:?}");
    assert_eq!(bucket_state(&limiter, &key).await, (0.0, T0 + 10_000));

    let d = decide_at(&limiter, &rule, "c", 1, 10_499).await;
    assert!(!d.allowed, "{d:?}");
    assert!(decide_at(&limiter, &rule, "c", 1, 10_500).await.allowed);

    // last_refill is monotonic over a ragged clock.
    let mut high = 0;
    for offset in [9_000, 12_000, 11_000, 0, 12_000, 12_001, 5] {
        decide_at(&limiter, &rule, "c", 1, offset).await;
        let (tokens, last) = bucket_state(&limiter, &key).await;
        assert!(last >= high, "last_refill moved back from {high} to {last}");
        assert!((0.0..=5.0).contains(&tokens), "tokens {tokens}");
        high = last;
    }
    // 12 000 is the latest admission's clock: the denials at 12 000 and 12 001 (the bucket
    // emptied at 0) write nothing.
    assert_eq!(high, T0 + 12_000);
}

#[tokio::test]
async fn ttl_is_twice_the_time_to_fill_and_renewed_on_every_admission() {
    let server = redis();
    let limiter = limiter(&server, "tb-ttl");
    // (capacity, rate, ceil(capacity / rate * 2) seconds)
    let cases = [
        (10, 3.0, 7),
        (5, 2.0, 5),
        (1, 1000.0, 1),
        (1, 0.3, 7),
        (3, 0.001, 6000),
    ];
    for (i, (capacity, rate, secs)) in cases.into_iter().enumerate() {
        let rule = Rule::token_bucket(format!("ttl{i}"), capacity, rate).expect("valid rule");
        let key = limiter.keys().limiter(&rule, "c");
        let full = secs * 1000;
        // PTTL -1 (no TTL) must not pass for the 1 s bucket.
        let low = (full - 1500).max(1);
        decide_at(&limiter, &rule, "c", 1, 0).await;
        let ttl = pttl(&limiter, &key).await;
        assert!(
            (low..=full).contains(&ttl),
            "capacity {capacity} rate {rate}: PTTL {ttl}, expected about {full}"
        );
        // A denial writes nothing, not even the TTL...
        let _: i64 = query(&limiter, redis::cmd("PERSIST").arg(&key)).await;
        let denied = decide_at(&limiter, &rule, "c", capacity, 0).await;
        assert!(!denied.allowed, "{denied:?}");
        assert_eq!(pttl(&limiter, &key).await, -1);
        // ...and an admission renews it.
        let admitted = decide_at(&limiter, &rule, "c", 1, full as u64).await;
        assert!(admitted.allowed, "{admitted:?}");
        let ttl = pttl(&limiter, &key).await;
        assert!((low..=full).contains(&ttl), "not renewed: PTTL {ttl}");
    }
}

#[tokio::test]
async fn a_denied_request_debits_nothing() {
    let server = redis();
    let limiter = limiter(&server, "tb-denied");
    let rule = Rule::token_bucket("tb", 3, 1.0).expect("valid rule");
    let key = limiter.keys().limiter(&rule, "c");
    assert!(decide_at(&limiter, &rule, "c", 3, 0).await.allowed);
    for cost in [1, 2, 3, 1] {
        let d = decide_at(&limiter, &rule, "c", cost, 500).await;
        assert!(!d.allowed, "{d:?}");
        assert_eq!(d.retry_after_ms, cost * 1000 - 500, "{d:?}");
        // A denial writes nothing: the stored state still says empty at 0 ms.
        assert_eq!(bucket_state(&limiter, &key).await, (0.0, T0));
    }
    // Half a token more makes exactly one: nothing was taken by the denials.
    let d = decide_at(&limiter, &rule, "c", 1, 1_000).await;
    assert!(d.allowed, "{d:?}");
    assert_eq!(bucket_state(&limiter, &key).await, (0.0, T0 + 1_000));
}

#[tokio::test]
async fn waiting_retry_after_passes_and_one_ms_less_does_not() {
    let server = redis();
    let limiter = limiter(&server, "tb-retry");
    // (capacity, rate, cost drained at 0, gap before the denied probe, probe cost)
    let cases = [
        (5, 2.0, 5, 499, 1),
        (5, 2.0, 5, 0, 1),
        (10, 3.0, 10, 100, 1),
        (10, 3.0, 8, 0, 4),
        (7, 0.3, 7, 1_234, 2),
        (1000, 1000.0, 1000, 1, 1000),
        (3, 0.001, 3, 0, 1),
        (4, 7.0, 4, 13, 3),
        (9, 0.7, 9, 2_999, 9),
        (1, 1e9, 1, 0, 1),
    ];
    for (i, (capacity, rate, drain, gap, cost)) in cases.into_iter().enumerate() {
        let rule = Rule::token_bucket(format!("r{i}"), capacity, rate).expect("valid rule");
        assert!(decide_at(&limiter, &rule, "c", drain, 0).await.allowed);
        let d = decide_at(&limiter, &rule, "c", cost, gap).await;
        let ctx = format!("case {i}: capacity {capacity} rate {rate} cost {cost}: {d:?}");
        assert!(!d.allowed && d.retry_after_ms > 0, "{ctx}");
        let retry = d.retry_after_ms;
        let key = limiter.keys().limiter(&rule, "c");
        fork(&limiter, &key, &limiter.keys().limiter(&rule, "early")).await;
        let later = decide_at(&limiter, &rule, "c", cost, gap + retry).await;
        assert!(later.allowed, "waiting retry_after did not pass: {ctx}");
        let early = decide_at(&limiter, &rule, "early", cost, gap + retry - 1).await;
        assert!(
            !early.allowed,
            "1 ms before retry_after already passes, so retry_after is too long: {ctx}"
        );
    }
}

/// One admission on the server's clock and what it left, in one MULTI so that no time passes
/// between them: the decision's allowed flag, the key's PTTL, and the stored last_refill (ms).
async fn admit_and_read(
    limiter: &Limiter,
    key: &str,
    argv: &[&str],
    set_pttl: Option<i64>,
) -> (i64, i64, f64) {
    let mut pipe = redis::pipe();
    pipe.atomic();
    if let Some(ms) = set_pttl {
        pipe.cmd("PEXPIRE").arg(key).arg(ms).ignore();
    }
    pipe.cmd("EVAL")
        .arg(source(AlgorithmKind::TokenBucket))
        .arg(1)
        .arg(key)
        .arg(argv)
        .cmd("PTTL")
        .arg(key)
        .cmd("GET")
        .arg(key);
    let (reply, ttl, state): (Vec<i64>, i64, Vec<u8>) = pipe
        .query_async(&mut limiter.connection())
        .await
        .expect("EVAL, PTTL, GET");
    let last = f64::from_le_bytes(state[8..16].try_into().expect("16 bytes"));
    (reply[0], ttl, last)
}

#[tokio::test]
async fn on_the_server_clock_the_ttl_is_set_once_per_half_ttl_and_never_below_half() {
    let server = redis();
    let limiter = limiter(&server, "tb-ttl-server");
    // Capacity 10 at 0.01 a second: 1,000 s to fill, a TTL of 2,000 s, renewed by the first
    // admission of each 1,000,000 ms period of the server's clock.
    let argv = ["10", "0.01"];
    let (allowed, ttl, first) = admit_and_read(&limiter, "slow", &argv, None).await;
    assert_eq!(allowed, 1);
    assert!(
        (1_999_000..=2_000_000).contains(&ttl),
        "a new bucket's TTL: {ttl}"
    );
    // The same period (the next admission comes milliseconds later; a period boundary in
    // between is detected and the case tried again): the TTL is kept, not renewed. Lowered
    // by hand to 1,500 s (still more than the 1,000 s to fill) so that a renewal would show.
    let mut kept = false;
    for _ in 0..3 {
        let (allowed, ttl, last) = admit_and_read(&limiter, "slow", &argv, Some(1_500_000)).await;
        assert_eq!(allowed, 1);
        let period = |ms: f64| (ms / 1_000_000.0).floor();
        if period(last) != period(first) {
            continue;
        }
        assert!(
            (1_499_990..=1_500_000).contains(&ttl),
            "an admission in the same half-TTL period keeps the TTL: PTTL {ttl}"
        );
        kept = true;
        break;
    }
    assert!(kept, "three admissions in a row crossed a period boundary");

    // A 1 s TTL, the shortest (whole seconds; capacity 500 at 1,000 a second, 0.5 s to fill),
    // admissions for 1.25 s (two and a half periods): after every one of them at least half
    // the TTL is left (the bucket's time to fill, so the key outlives its refill and an absent
    // key is exactly a full bucket), and some kept the TTL rather than renewing it.
    let argv = ["500", "1000"];
    let (mut renewed, mut kept) = (0, 0);
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(1_250) {
        let (allowed, ttl, _) = admit_and_read(&limiter, "fast", &argv, None).await;
        assert_eq!(allowed, 1);
        assert!(
            ttl >= 500,
            "PTTL {ttl} after an admission: less than half the TTL"
        );
        // A kept TTL is at least one 20 ms sleep older than a new one.
        if ttl >= 990 {
            renewed += 1
        } else {
            kept += 1
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(renewed >= 2 && kept >= 1, "renewed {renewed}, kept {kept}");
}
