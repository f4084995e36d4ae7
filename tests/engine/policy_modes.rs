//! Policies through the limiter against a real redis-server: shadow mode (state as under
//! enforcement, admitted, counted as shadow_denied in telemetry and metrics), tiers, a rule
//! and the policy it becomes sharing state, peeks, costs, fail-open and NOSCRIPT recovery.

use crate::common;

use crate::common::{query, T0};
use ratelockr::policy::PolicyCheckError;
use ratelockr::rule::Algorithm;
use ratelockr::{
    At, Decision, FailureMode, Limit, Limiter, LimiterOptions, Metrics, Mode, Override, Policy,
    PolicyOutcome, Rule,
};
use std::sync::Arc;
use std::time::Duration;

fn limit(name: &str, algorithm: Algorithm) -> Limit {
    Limit::new(name, algorithm).expect("a valid limit")
}

/// Three limits of different algorithms, tight enough that a short burst meets each.
fn stack() -> Vec<Limit> {
    vec![
        limit(
            "burst",
            Algorithm::TokenBucket {
                capacity: 4,
                refill_per_sec: 2.0,
            },
        ),
        limit(
            "minute",
            Algorithm::SlidingWindowLog {
                limit: 7,
                window_ms: 60_000,
            },
        ),
        limit(
            "window",
            Algorithm::FixedWindow {
                limit: 9,
                window_ms: 120_000,
            },
        ),
    ]
}

async fn at(limiter: &Limiter, policy: &Policy, key: &str, t: u64) -> Decision {
    let d = limiter
        .check_policy_at(policy, key, 1, At::Millis(T0 + t))
        .await
        .expect("a valid request");
    assert!(!d.fail_open(), "Redis should have decided: {d:?}");
    d
}

/// Each limit's stored state (the log's entry times: its members are fresh UUIDs).
async fn dump(limiter: &Limiter, policy: &Policy, key: &str) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    for l in policy.limits() {
        let name = limiter
            .keys()
            .policy_limit(l.kind(), policy.name(), l.name(), key);
        if l.kind() == ratelockr::rule::AlgorithmKind::SlidingWindowLog {
            let log: Vec<(String, u64)> = query(
                limiter,
                redis::cmd("ZRANGE")
                    .arg(name)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES"),
            )
            .await;
            let times: Vec<u64> = log.iter().map(|e| e.1).collect();
            out.push(Some(format!("{times:?}").into_bytes()));
        } else {
            out.push(query(limiter, redis::cmd("DUMP").arg(name)).await);
        }
    }
    out
}

#[tokio::test]
async fn shadow_mode_changes_state_as_enforcement_does_admits_and_counts_apart() {
    let server = common::redis();
    let metrics = Metrics::new();
    let limiter = common::limiter(&server, "pol-shadow").with_observer(Arc::new(metrics.clone()));
    let enforced = Policy::new("enforced", stack()).expect("valid");
    let shadowed = Policy::new("shadowed", stack())
        .expect("valid")
        .with_mode(Mode::Shadow);
    // 60 requests 150 ms apart: the bucket, then the log, then the window deny in turn.
    let (mut denied, mut admitted) = (0, 0);
    for i in 0..60u64 {
        let t = i * 150;
        let e = at(&limiter, &enforced, "k", t).await;
        let s = at(&limiter, &shadowed, "k", t).await;
        assert!(s.allowed && s.shadow() && !e.shadow(), "{s:?}");
        assert_eq!(s.would_deny(), !e.allowed, "{e:?} {s:?}");
        assert_eq!(e.would_deny(), !e.allowed);
        assert_eq!(
            s.limits(),
            e.limits(),
            "at {t}: the same verdicts and numbers"
        );
        assert_eq!(
            (s.remaining, s.reset_after_ms),
            (e.remaining, e.reset_after_ms)
        );
        assert_eq!(s.binding(), e.binding());
        assert_eq!(s.retry_after_ms, 0, "an admission names no wait");
        assert_eq!(
            dump(&limiter, &shadowed, "k").await,
            dump(&limiter, &enforced, "k").await,
            "at {t}: the same state"
        );
        if e.allowed {
            admitted += 1;
        } else {
            denied += 1;
            assert!(e.retry_after_ms > 0);
        }
    }
    assert!(
        denied > 10 && admitted > 5,
        "{denied} denied, {admitted} admitted"
    );
    // Telemetry: one pipeline for both policies; the seconds of the virtual clock.
    let last = (T0 + 59 * 150) / 1000;
    let series = limiter
        .policy_stats_at(&["enforced", "shadowed"], last)
        .await
        .expect("stats read");
    assert_eq!(series.len(), 2);
    assert!(series.iter().all(|s| s.len() == 30 && s[29].second == last));
    let sum = |s: &[ratelockr::policy::PolicyStatsPoint]| {
        s.iter().fold((0, 0, 0), |(a, d, sd), p| {
            (a + p.allowed, d + p.denied, sd + p.shadow_denied)
        })
    };
    assert_eq!(sum(&series[0]), (admitted, denied, 0));
    assert_eq!(sum(&series[1]), (admitted, 0, denied));
    // Metrics.
    assert_eq!(
        metrics.policy_decisions("shadowed", PolicyOutcome::ShadowDenied),
        denied
    );
    assert_eq!(
        metrics.policy_decisions("shadowed", PolicyOutcome::Allowed),
        admitted
    );
    assert_eq!(
        metrics.policy_decisions("enforced", PolicyOutcome::Denied),
        denied
    );
    assert!(metrics.render().contains(&format!(
        "ratelockr_policy_decisions_total{{policy=\"shadowed\",result=\"shadow_denied\"}} {denied}"
    )));
}

#[tokio::test]
async fn tiers_pick_the_overrides_limits_and_keep_state_by_limit_name() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-tier");
    let base = vec![limit(
        "per-window",
        Algorithm::FixedWindow {
            limit: 2,
            window_ms: 600_000,
        },
    )];
    let premium = Override::new(
        "premium",
        vec!["premium_*".into(), "alice".into()],
        vec![
            limit(
                "per-window",
                Algorithm::FixedWindow {
                    limit: 5,
                    window_ms: 600_000,
                },
            ),
            limit(
                "daily",
                Algorithm::SlidingWindowCounter {
                    limit: 100,
                    window_ms: 86_400_000,
                },
            ),
        ],
    )
    .expect("valid");
    let policy = Policy::new("api", base.clone())
        .expect("valid")
        .with_overrides(vec![premium])
        .expect("valid");
    let run = |key: &'static str| {
        let (limiter, policy) = (limiter.clone(), policy.clone());
        async move {
            let mut admitted = 0;
            let mut last = None;
            for i in 0..8 {
                let d = at(&limiter, &policy, key, i).await;
                admitted += u64::from(d.allowed);
                last = Some(d);
            }
            (admitted, last.expect("decided"))
        }
    };
    let (n, d) = run("bob").await;
    assert_eq!((n, d.tier(), d.limits().len()), (2, None, 1));
    let (n, d) = run("premium_7").await;
    assert_eq!((n, d.tier()), (5, Some("premium")));
    let names: Vec<&str> = d.limits().iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["per-window", "daily"]);
    assert_eq!(d.binding(), Some("per-window"));
    // Alice is no premium customer yet: the base limit holds her to 2 ...
    let plain = Policy::new("api", base).expect("valid");
    let mut admitted = 0;
    for i in 0..4 {
        admitted += u64::from(at(&limiter, &plain, "alice", i).await.allowed);
    }
    assert_eq!(admitted, 2);
    // ... and once she is, the limit of the same name and algorithm keeps its count: 3 more.
    let (n, d) = run("alice").await;
    assert_eq!((n, d.tier()), (3, Some("premium")));
    let json = serde_json::to_value(&d).expect("json");
    assert_eq!(json["tier"], "premium");
    assert_eq!(json["policy"], "api");
}

#[tokio::test]
async fn a_rule_and_the_policy_it_becomes_share_their_state() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-rule");
    let rule = Rule::fixed_window("login", 3, Duration::from_secs(600)).expect("valid");
    let policy = Policy::from_rule(&rule);
    let mut admitted = 0;
    for i in 0..6 {
        admitted += u64::from(if i % 2 == 0 {
            common::decide_now(&limiter, &rule, "u", 1).await.allowed
        } else {
            let d = limiter
                .check_policy_cost(&policy, "u", 1)
                .await
                .expect("valid");
            assert!(!d.fail_open());
            d.allowed
        });
    }
    assert_eq!(admitted, 3);
    assert_eq!(
        limiter
            .keys()
            .policy_limit(rule.kind(), "login", "login", "u"),
        limiter.keys().limiter(&rule, "u")
    );
}

#[tokio::test]
async fn a_peek_writes_nothing_and_costs_are_checked_against_every_limit() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-peek");
    let policy = Policy::new("p", stack()).expect("valid");
    let d = limiter
        .peek_policy_at(&policy, "k", At::Millis(T0))
        .await
        .expect("valid");
    assert!(d.allowed && !d.would_deny(), "{d:?}");
    assert_eq!(d.remaining, 4, "the tightest: the bucket");
    assert_eq!(d.binding(), Some("burst"));
    let keys: Vec<String> = query(&limiter, redis::cmd("KEYS").arg("*")).await;
    assert!(keys.is_empty(), "a peek wrote {keys:?}");
    at(&limiter, &policy, "k", 0).await;
    let d = limiter
        .peek_policy_at(&policy, "k", At::Millis(T0))
        .await
        .expect("valid");
    let remaining: Vec<i64> = d.limits().iter().map(|l| l.remaining).collect();
    assert_eq!(remaining, [3, 6, 8]);
    match limiter.check_policy_cost(&policy, "k", 5).await {
        Err(PolicyCheckError::InvalidCost { max: 4, limit, .. }) => assert_eq!(limit, "burst"),
        other => panic!("cost 5 exceeds the bucket: {other:?}"),
    }
    assert!(limiter.check_policy_cost(&policy, "", 1).await.is_err());
    assert!(
        matches!(
            limiter.check_policy_cost(&policy, "k", 0).await,
            Err(PolicyCheckError::InvalidCost { cost: 0, .. })
        ),
        "a check of cost 0 is refused: that is a peek"
    );
    // The server's clock: a decision of its own, the fixed window on its TTL.
    let d = limiter
        .check_policy_cost(&policy, "now", 1)
        .await
        .expect("valid");
    assert!(d.allowed && d.limits()[2].reset_after_ms > 0, "{d:?}");
}

#[tokio::test]
async fn a_flushed_script_cache_is_recovered() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-noscript");
    let policy = Policy::new("p", stack()).expect("valid");
    assert!(at(&limiter, &policy, "k", 0).await.allowed);
    let _: () = query(&limiter, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let d = at(&limiter, &policy, "k", 1).await;
    assert!(d.allowed && d.limits()[0].remaining == 2, "{d:?}");
}

#[tokio::test]
async fn without_redis_a_policy_fails_open_or_closed() {
    let url = common::dead_url();
    let options = |mode| LimiterOptions {
        deadline: Duration::from_millis(300),
        failure_mode: mode,
        ..common::options("pol-down")
    };
    let metrics = Metrics::new();
    let open = common::limiter_with(&url, options(FailureMode::Open))
        .with_observer(Arc::new(metrics.clone()));
    let policy = Policy::new("api", stack())
        .expect("valid")
        .with_overrides(vec![
            Override::new("vip", vec!["v*".into()], stack()).expect("valid")
        ])
        .expect("valid");
    let d = open
        .check_policy_cost(&policy, "v1", 1)
        .await
        .expect("a decision");
    assert!(d.allowed && d.fail_open() && !d.would_deny(), "{d:?}");
    assert_eq!(
        (d.remaining_or_unknown(), d.binding(), d.tier()),
        (-1, None, Some("vip"))
    );
    assert!(d.limits().is_empty());
    assert_eq!(serde_json::to_value(&d).expect("json")["remaining"], -1);
    assert_eq!(open.ledger().fail_open_total(), 1);
    assert_eq!(metrics.policy_decisions("api", PolicyOutcome::FailOpen), 1);
    let err = open
        .try_check_policy_at(&policy, "k", 1, At::ServerClock)
        .await;
    assert!(matches!(err, Err(PolicyCheckError::Redis(_))), "{err:?}");
    let closed = common::limiter_with(&url, options(FailureMode::Closed));
    let d = closed
        .check_policy_cost(&policy, "k", 1)
        .await
        .expect("a decision");
    assert!(
        !d.allowed && !d.fail_open() && d.remaining_or_unknown() == -1,
        "{d:?}"
    );
}
