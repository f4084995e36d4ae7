//! `FailureMode::Degraded` against a real redis-server that is killed or frozen mid-run: the
//! process admits its share of the rule, no more, and Redis decides again once it answers.

use crate::common;

use crate::common::{decide_now, limiter_with, options, signal, Thaw};
use ratelockr::{DecidedBy, FailureMode, LimiterOptions, Rule};
use std::time::Duration;

fn degraded(instances: u32, deadline_ms: u64, name: &str) -> LimiterOptions {
    LimiterOptions {
        failure_mode: FailureMode::Degraded { instances },
        deadline: Duration::from_millis(deadline_ms),
        ..options(name)
    }
}

#[tokio::test]
async fn a_killed_redis_leaves_each_key_its_local_share() {
    let server = common::redis();
    // Every call to a dead Redis waits out a reconnection attempt, up to the deadline.
    let limiter = limiter_with(&server.url(), degraded(4, 100, "killed"));
    // 40 at once, refilling so slowly (0.001/s; 0.00025/s per instance) that no token comes
    // back during the test: the local bound is exactly 40 / 4 per key.
    let rule = Rule::token_bucket("tb", 40, 0.001).expect("valid rule");
    // Connect while Redis lives (a few tries: the deadline is short for a loaded machine).
    let mut asked = false;
    for _ in 0..20 {
        if limiter.check(&rule, "warm").await.expect("valid").by != DecidedBy::Degraded {
            asked = true;
            break;
        }
    }
    assert!(asked, "Redis never answered: {}", server.log());
    drop(server);

    for key in ["a", "b"] {
        let (mut admitted, mut denied) = (0, 0);
        for _ in 0..40 {
            let d = limiter.check(&rule, key).await.expect("valid request");
            assert!(d.by == DecidedBy::Degraded, "{d:?}");
            if d.allowed {
                assert!(d.fail_open() && d.remaining_or_unknown() == -1, "{d:?}");
                admitted += 1;
            } else {
                assert!(!d.fail_open() && d.retry_after_ms > 0, "{d:?}");
                denied += 1;
            }
        }
        assert_eq!(
            admitted, 10,
            "key {key}: the local share is 40 / 4 instances"
        );
        assert_eq!(denied, 30, "key {key}");
    }
    assert_eq!(limiter.ledger().fail_open_total(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_decides_again_when_it_answers_again() {
    let server = common::redis();
    let limiter = limiter_with(&server.url(), degraded(2, 200, "frozen"));
    let rule = Rule::fixed_window("fw", 10, Duration::from_secs(600)).expect("valid rule");
    let mut warm = false;
    for _ in 0..20 {
        if limiter.check(&rule, "warm").await.expect("valid").by != DecidedBy::Degraded {
            warm = true;
            break;
        }
    }
    assert!(warm, "Redis never answered: {}", server.log());

    signal("STOP", server.pid());
    let thaw = Thaw(server.pid());
    let mut admitted = 0;
    for _ in 0..8 {
        let d = limiter.check(&rule, "c").await.expect("valid request");
        assert!(
            d.by == DecidedBy::Degraded,
            "a frozen Redis cannot decide: {d:?}"
        );
        admitted += u32::from(d.allowed);
    }
    assert_eq!(admitted, 5, "the local share is 10 / 2 instances");

    drop(thaw);
    let recovered = common::eventually(Duration::from_secs(10), || {
        let limiter = limiter.clone();
        let rule = rule.clone();
        async move { limiter.check(&rule, "after").await.expect("valid").by != DecidedBy::Degraded }
    })
    .await;
    assert!(recovered, "Redis did not decide again after SIGCONT");
    // (Key "c" is not used here: the calls that timed out were queued in the frozen server
    // and ran when it woke up.)
    let d = decide_now(&limiter, &rule, "fresh", 1).await;
    assert!(d.allowed && d.remaining == 9, "{d:?}");
}
