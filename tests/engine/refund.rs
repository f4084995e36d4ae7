//! `Limiter::refund` (lua/refund.lua) against a real redis-server: a refunded admission is as
//! if it had never been made, a refund never mints more than a full allowance, and a key that
//! is gone is left alone.

use crate::common;

use crate::common::{decide_now, limiter, redis};
use ratelockr::{Limiter, Rule};

fn rules() -> Vec<Rule> {
    vec![
        Rule::token_bucket("tb", 3, 0.001).expect("valid"),
        Rule::gcra("gc", 3, std::time::Duration::from_secs(3600), 3).expect("valid"),
        Rule::sliding_window_log("sw", 3, std::time::Duration::from_secs(3600)).expect("valid"),
        Rule::sliding_window_counter("sc", 3, std::time::Duration::from_secs(3600)).expect("valid"),
        Rule::fixed_window("fw", 3, std::time::Duration::from_secs(3600)).expect("valid"),
    ]
}

/// Admits until denied; how many passed.
async fn drain(limiter: &Limiter, rule: &Rule, key: &str) -> u64 {
    let mut admitted = 0;
    while decide_now(limiter, rule, key, 1).await.allowed {
        admitted += 1;
        assert!(admitted <= 10, "{} never denied", rule.name());
    }
    admitted
}

#[tokio::test]
async fn a_refunded_admission_is_given_back_exactly_for_every_algorithm() {
    let server = redis();
    let limiter = limiter(&server, "refund");
    for rule in rules() {
        let name = rule.name();
        assert_eq!(drain(&limiter, &rule, "k").await, 3, "{name}");
        // Give two back: exactly two more pass, then the rule denies again.
        assert!(
            limiter.refund(&rule, "k", 2).await.expect("refund"),
            "{name}"
        );
        assert!(decide_now(&limiter, &rule, "k", 2).await.allowed, "{name}");
        assert!(!decide_now(&limiter, &rule, "k", 1).await.allowed, "{name}");
    }
}

#[tokio::test]
async fn a_refund_never_mints_more_than_a_full_allowance() {
    let server = redis();
    let limiter = limiter(&server, "refund-cap");
    for rule in rules() {
        let name = rule.name();
        assert!(decide_now(&limiter, &rule, "k", 1).await.allowed, "{name}");
        // One was taken; three are refunded (a caller's mistake): still only a full allowance.
        limiter.refund(&rule, "k", 3).await.expect("refund");
        assert_eq!(drain(&limiter, &rule, "k").await, 3, "{name}");
    }
}

#[tokio::test]
async fn a_refund_to_a_key_that_is_gone_does_nothing() {
    let server = redis();
    let limiter = limiter(&server, "refund-gone");
    for rule in rules() {
        let refunded = limiter.refund(&rule, "nobody", 1).await.expect("refund");
        assert!(!refunded, "{}", rule.name());
        let key = limiter.keys().limiter(&rule, "nobody");
        assert!(!common::exists(&limiter, &key).await, "{}", rule.name());
    }
    let rule = &rules()[0];
    let err = limiter
        .refund(rule, "k", 4)
        .await
        .expect_err("over capacity");
    assert!(err.to_string().contains("cost"), "{err}");
}

#[tokio::test]
async fn a_refund_with_redis_down_is_an_error_counted_as_a_failure() {
    let limiter = common::limiter_with(&common::dead_url(), common::options("refund-dead"));
    let rule = &rules()[4];
    let err = limiter.refund(rule, "k", 1).await.expect_err("no Redis");
    assert!(matches!(err, ratelockr::RefundError::Redis(_)), "{err}");
    assert_eq!(limiter.ledger().failures_total(), 1);
}

#[tokio::test]
async fn a_refund_gives_back_to_the_fixed_windows_explicit_clock_state() {
    use ratelockr::At;
    let server = redis();
    let limiter = limiter(&server, "refund-fw-clock");
    let rule = Rule::fixed_window("fw", 3, std::time::Duration::from_secs(1)).expect("valid");
    let at = |t: u64| At::Millis(common::T0 + t);
    let check = |cost: u64, t: u64| {
        let (limiter, rule) = (&limiter, &rule);
        async move {
            let d = limiter
                .check_at(rule, "k", cost, at(t))
                .await
                .expect("a valid request");
            assert!(!d.fail_open(), "Redis should have decided: {d:?}");
            d.allowed
        }
    };
    assert!(check(3, 0).await);
    assert!(!check(1, 10).await);
    // The hash's count comes down by the refund: two more pass in the same window, then no more.
    assert!(limiter.refund(&rule, "k", 2).await.expect("refund"));
    assert!(check(2, 20).await);
    assert!(!check(1, 30).await);
    // Floored at zero: refunding more than was used leaves a full allowance, not more.
    limiter.refund(&rule, "k", 3).await.expect("refund");
    limiter.refund(&rule, "k", 3).await.expect("refund");
    assert!(check(3, 40).await);
    assert!(!check(1, 50).await);
}
