//! The HTTP answer a decision implies: status and rate-limit headers (design.md, "HTTP: the
//! headers a decision implies"). One function, used by the app's decision inspector and meant
//! for `serve` and the tower layer, so they can never disagree.
//!
//! Seconds are whole and rounded up (a client that waits the advertised time is never early),
//! and at least 1 where a wait is meant. A fail-open decision carries no rate-limit fields
//! (nothing is known: `remaining: -1` must never reach a client) and is never a 429.

use crate::decision::{DecidedBy, Decision};
use crate::policy::{Limit, Policy};
use crate::rule::{Algorithm, Rule};
use serde::Serialize;

/// The status and headers an HTTP server would answer with.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpAnswer {
    /// 200, or 429 for a denial.
    pub status: u16,
    /// `(name, value)` in this order: `RateLimit-Policy`, `RateLimit`, `Retry-After` (denials
    /// only), `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`.
    pub headers: Vec<(&'static str, String)>,
}

impl HttpAnswer {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Whole seconds, rounded up, from milliseconds.
fn secs_up(ms: u64) -> u64 {
    ms.div_ceil(1000)
}

/// The policy's quota (requests) and window (seconds, at least 1): capacity and the time to
/// refill from empty for the bucket; burst and burst × T for GCRA; limit and window for the
/// windows and the counter; for requests in flight, the limit and a lease's life (which its
/// header item does not claim as a window: [`policy_params`]); for a calendar quota, the limit
/// and its current window's real length.
pub fn policy(algorithm: &Algorithm) -> (u64, u64) {
    match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => {
            let secs = (capacity as f64 / refill_per_sec).ceil();
            (capacity, (secs as u64).max(1))
        }
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => {
            let refill_ms = u128::from(burst) * u128::from(window_ms);
            let secs = refill_ms.div_ceil(u128::from(limit) * 1000);
            (burst, u64::try_from(secs).unwrap_or(u64::MAX).max(1))
        }
        Algorithm::SlidingWindowLog { limit, window_ms }
        | Algorithm::SlidingWindowCounter { limit, window_ms }
        | Algorithm::FixedWindow { limit, window_ms } => (limit, secs_up(window_ms).max(1)),
        Algorithm::Concurrency { limit, lease_ms } => (limit, secs_up(lease_ms).max(1)),
        // The window in force now (by this machine's clock): 23 or 25 hours on a day with a
        // daylight-saving change.
        Algorithm::Calendar { limit, .. } => {
            let (start, end) = algorithm
                .calendar()
                .map(|calendar| calendar.window_at(crate::calendar::local_now_ms()))
                .unwrap_or((0, 1000));
            (
                limit,
                secs_up(u64::try_from(end - start).unwrap_or(1000)).max(1),
            )
        }
    }
}

/// A limit's parameters in a `RateLimit-Policy` item: `q=<quota>;w=<window>`, and for
/// requests in flight `q=<limit>;qu="concurrent-requests"` (the unit the IETF draft registers;
/// no window: a slot is held until its request ends).
pub fn policy_params(algorithm: &Algorithm) -> String {
    let (quota, window) = policy(algorithm);
    match algorithm {
        Algorithm::Concurrency { .. } => format!("q={quota};qu=\"concurrent-requests\""),
        _ => format!("q={quota};w={window}"),
    }
}

/// The HTTP answer for `decision` under `rule`.
pub fn http_answer(rule: &Rule, decision: &Decision) -> HttpAnswer {
    if decision.is_fallback() {
        // Redis could not be asked: fail-open passes with nothing claimed; fail-closed refuses
        // with nothing claimed either (no Retry-After: no one knows when it will pass). A
        // denial by degraded mode's local limiter knows its own wait, so it says Retry-After,
        // but claims no RateLimit fields: Redis's state is unknown.
        let mut headers = Vec::new();
        if decision.by == DecidedBy::Degraded && !decision.allowed {
            let wait = secs_up(decision.retry_after_ms).max(1);
            headers.push(("Retry-After", wait.to_string()));
        }
        return HttpAnswer {
            status: if decision.allowed { 200 } else { 429 },
            headers,
        };
    }
    let (quota, _) = policy(rule.algorithm());
    let name = rule.name();
    let reset = secs_up(decision.reset_after_ms);
    let (status, t) = if decision.allowed {
        (200, reset)
    } else {
        (429, secs_up(decision.retry_after_ms).max(1))
    };
    let mut headers = vec![
        (
            "RateLimit-Policy",
            format!("\"{name}\";{}", policy_params(rule.algorithm())),
        ),
        (
            "RateLimit",
            format!("\"{name}\";r={};t={t}", decision.remaining),
        ),
    ];
    if !decision.allowed {
        headers.push(("Retry-After", t.to_string()));
    }
    headers.extend([
        ("X-RateLimit-Limit", quota.to_string()),
        ("X-RateLimit-Remaining", decision.remaining.to_string()),
        ("X-RateLimit-Reset", reset.to_string()),
    ]);
    HttpAnswer { status, headers }
}

/// The HTTP answer for a policy's `decision` under `policy` (design.md, "Policies"):
/// `RateLimit-Policy` lists every limit of the key's tier as `"<policy>.<limit>";q=..;w=..`,
/// `RateLimit` and the `X-RateLimit-*` fields speak for the binding limit, and a denial is a
/// 429 with `Retry-After` (the combined wait: the same request then passes every limit).
///
/// A policy made from a rule (one limit named as the policy) names its item `"<policy>"`
/// alone, so a rule answers the same headers whether it is checked as a rule or a policy.
/// Shadow mode changes no response: a would-be denial answers as an admission does. Fail-open
/// carries no fields and is never a 429; fail-closed is a bare 429.
pub fn policy_answer(policy: &Policy, decision: &Decision) -> HttpAnswer {
    let tier = decision.verdict().and_then(|v| v.tier.as_deref());
    let limits = tier_limits(policy, tier);
    let binding = decision.binding_limit();
    let Some(binding) = binding.filter(|_| !decision.fail_open() && !limits.is_empty()) else {
        return HttpAnswer {
            status: if decision.allowed { 200 } else { 429 },
            headers: Vec::new(),
        };
    };
    let item = |limit: &str| -> String {
        if limits.len() == 1 && limit == policy.name() {
            format!("\"{limit}\"")
        } else {
            format!("\"{}.{limit}\"", policy.name())
        }
    };
    let items: Vec<String> = limits
        .iter()
        .map(|l| format!("{};{}", item(l.name()), policy_params(l.algorithm())))
        .collect();
    let quota = limits
        .iter()
        .find(|l| l.name() == binding.name)
        .map_or(0, |l| self::policy(l.algorithm()).0);
    let remaining = binding.remaining.max(0);
    let reset = secs_up(binding.reset_after_ms);
    let (status, t) = if decision.allowed {
        (200, reset)
    } else {
        (429, secs_up(decision.retry_after_ms).max(1))
    };
    let mut headers = vec![
        ("RateLimit-Policy", items.join(", ")),
        (
            "RateLimit",
            format!("{};r={remaining};t={t}", item(&binding.name)),
        ),
    ];
    if !decision.allowed {
        headers.push(("Retry-After", t.to_string()));
    }
    headers.extend([
        ("X-RateLimit-Limit", quota.to_string()),
        ("X-RateLimit-Remaining", remaining.to_string()),
        ("X-RateLimit-Reset", reset.to_string()),
    ]);
    HttpAnswer { status, headers }
}

/// The limits the decision was made under: the tier's, or the policy's own.
fn tier_limits<'a>(policy: &'a Policy, tier: Option<&str>) -> &'a [Limit] {
    tier.and_then(|t| policy.overrides().iter().find(|o| o.tier() == t))
        .map_or(policy.limits(), |o| o.limits())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(allowed: bool, remaining: u64, retry_ms: u64, reset_ms: u64) -> Decision {
        Decision::by_redis(allowed, remaining, retry_ms, reset_ms)
    }

    #[test]
    fn an_allowed_request_carries_policy_remaining_and_reset() {
        let rule = Rule::token_bucket("api", 20, 10.0).expect("valid");
        let answer = http_answer(&rule, &decision(true, 7, 0, 1_301));
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.headers,
            [
                ("RateLimit-Policy", "\"api\";q=20;w=2"),
                ("RateLimit", "\"api\";r=7;t=2"),
                ("X-RateLimit-Limit", "20"),
                ("X-RateLimit-Remaining", "7"),
                ("X-RateLimit-Reset", "2"),
            ]
            .map(|(n, v)| (n, v.to_string()))
        );
        assert_eq!(answer.header("retry-after"), None);
    }

    #[test]
    fn a_denial_is_429_with_the_wait_rounded_up_never_down() {
        let rule =
            Rule::fixed_window("login", 5, std::time::Duration::from_secs(60)).expect("valid");
        for (retry_ms, secs) in [(1, "1"), (999, "1"), (1_000, "1"), (1_001, "2"), (0, "1")] {
            let answer = http_answer(&rule, &decision(false, 0, retry_ms, 59_000));
            assert_eq!(answer.status, 429);
            assert_eq!(answer.header("Retry-After"), Some(secs), "{retry_ms} ms");
            assert_eq!(
                answer.header("RateLimit"),
                Some(format!("\"login\";r=0;t={secs}").as_str())
            );
            assert_eq!(answer.header("X-RateLimit-Reset"), Some("59"));
        }
        assert_eq!(
            http_answer(&rule, &decision(true, 4, 0, 0)).header("RateLimit-Policy"),
            Some("\"login\";q=5;w=60")
        );
    }

    #[test]
    fn a_concurrency_limit_quotes_its_slots_as_concurrent_requests_without_a_window() {
        let rule =
            Rule::concurrency("uploads", 10, std::time::Duration::from_secs(60)).expect("valid");
        let answer = http_answer(&rule, &decision(true, 9, 0, 60_000));
        assert_eq!(
            answer.header("RateLimit-Policy"),
            Some("\"uploads\";q=10;qu=\"concurrent-requests\"")
        );
        assert_eq!(answer.header("RateLimit"), Some("\"uploads\";r=9;t=60"));
        let denied = http_answer(&rule, &decision(false, 0, 1_500, 60_000));
        assert_eq!(
            (denied.status, denied.header("Retry-After")),
            (429, Some("2"))
        );
    }

    #[test]
    fn gcra_quotes_its_burst_and_the_counter_its_window() {
        // 10 per 1000 ms, burst 25: T = 100 ms, burst x T = 2.5 s, rounded up to 3.
        let gcra = Rule::gcra("g", 10, std::time::Duration::from_secs(1), 25).expect("valid");
        assert_eq!(policy(gcra.algorithm()), (25, 3));
        let counter = Rule::sliding_window_counter("c", 40, std::time::Duration::from_secs(2))
            .expect("valid");
        assert_eq!(policy(counter.algorithm()), (40, 2));
        let answer = http_answer(&gcra, &decision(true, 24, 0, 100));
        assert_eq!(answer.header("RateLimit-Policy"), Some("\"g\";q=25;w=3"));
    }

    #[test]
    fn fail_open_carries_nothing_and_is_never_429() {
        let rule =
            Rule::sliding_window_log("api", 10, std::time::Duration::from_secs(1)).expect("valid");
        let answer = http_answer(&rule, &Decision::FAIL_OPEN);
        assert_eq!(answer.status, 200);
        assert!(answer.headers.is_empty(), "{answer:?}");
        assert!(!format!("{answer:?}").contains("-1"));
        let closed = http_answer(&rule, &Decision::FAIL_CLOSED);
        assert_eq!((closed.status, closed.headers.len()), (429, 0));
    }

    #[test]
    fn degraded_decisions_claim_only_the_local_wait() {
        let rule = Rule::fixed_window("api", 10, std::time::Duration::from_secs(1)).expect("valid");
        let admitted = Decision {
            by: DecidedBy::Degraded,
            ..Decision::FAIL_OPEN
        };
        let answer = http_answer(&rule, &admitted);
        assert_eq!((answer.status, answer.headers.len()), (200, 0));
        let denied = Decision {
            by: DecidedBy::Degraded,
            ..Decision::by_redis(false, 0, 1_200, 5_000)
        };
        let answer = http_answer(&rule, &denied);
        assert_eq!(answer.status, 429);
        assert_eq!(
            answer.headers,
            [("Retry-After", "2".to_string())],
            "rounded up; no RateLimit fields without Redis"
        );
    }

    #[test]
    fn windows_longer_than_a_day_and_sub_second_ones_stay_whole_seconds() {
        let month = Rule::fixed_window(
            "monthly",
            1_000_000,
            std::time::Duration::from_millis(30 * 24 * 3600 * 1000),
        )
        .expect("ok");
        let answer = http_answer(&month, &decision(false, 0, 2_000_000_001, 2_000_000_001));
        assert_eq!(
            answer.header("RateLimit-Policy"),
            Some("\"monthly\";q=1000000;w=2592000")
        );
        assert_eq!(answer.header("Retry-After"), Some("2000001"));
        let fast = Rule::sliding_window_log("burst", 3, std::time::Duration::from_millis(250))
            .expect("valid");
        assert_eq!(policy(fast.algorithm()), (3, 1));
        let slow = Rule::token_bucket("slow", 10, 0.001).expect("valid");
        assert_eq!(policy(slow.algorithm()), (10, 10_000));
        let odd = Rule::token_bucket("odd", 10, 3.0).expect("valid");
        assert_eq!(policy(odd.algorithm()), (10, 4), "3.33 s rounds up to 4");
    }

    mod policies {
        use super::super::*;
        use crate::policy::{LimitResult, Mode, NoAnswer, Override, PolicyVerdict};

        fn api() -> Policy {
            let per_second = Limit::new(
                "per-second",
                Algorithm::TokenBucket {
                    capacity: 10,
                    refill_per_sec: 10.0,
                },
            )
            .expect("valid");
            let daily = Limit::new(
                "daily",
                Algorithm::FixedWindow {
                    limit: 2000,
                    window_ms: 86_400_000,
                },
            )
            .expect("valid");
            let premium = Override::new(
                "premium",
                vec!["premium_*".into()],
                vec![Limit::new(
                    "per-second",
                    Algorithm::TokenBucket {
                        capacity: 100,
                        refill_per_sec: 100.0,
                    },
                )
                .expect("valid")],
            )
            .expect("valid");
            Policy::new("api", vec![per_second, daily])
                .expect("valid")
                .with_overrides(vec![premium])
                .expect("valid")
        }

        fn limit(name: &str, allowed: bool, remaining: i64, retry: u64, reset: u64) -> LimitResult {
            LimitResult {
                name: name.into(),
                algorithm: crate::rule::AlgorithmKind::FixedWindow,
                allowed,
                remaining,
                retry_after_ms: retry,
                reset_after_ms: reset,
            }
        }

        fn decision(
            allowed: bool,
            would_deny: bool,
            binding: &str,
            limits: Vec<LimitResult>,
        ) -> Decision {
            let head = Decision::by_redis(
                allowed,
                limits
                    .iter()
                    .map(|l| l.remaining.max(0) as u64)
                    .min()
                    .unwrap_or(0),
                limits
                    .iter()
                    .filter(|l| !l.allowed)
                    .map(|l| l.retry_after_ms)
                    .max()
                    .unwrap_or(0),
                limits.iter().map(|l| l.reset_after_ms).max().unwrap_or(0),
            );
            Decision::of_policy(
                head,
                PolicyVerdict {
                    name: "api".into(),
                    shadow: false,
                    would_deny,
                    binding: Some(binding.into()),
                    tier: None,
                    limits,
                },
            )
        }

        /// The decision with its policy's part changed.
        fn with(mut d: Decision, change: impl FnOnce(&mut PolicyVerdict)) -> Decision {
            change(d.policy.as_mut().expect("a policy's decision"));
            d
        }

        #[test]
        fn every_limit_is_listed_and_the_binding_one_answers() {
            let d = decision(
                true,
                false,
                "per-second",
                vec![
                    limit("per-second", true, 3, 0, 700),
                    limit("daily", true, 1500, 0, 3_600_000),
                ],
            );
            let answer = policy_answer(&api(), &d);
            assert_eq!(answer.status, 200);
            assert_eq!(
                answer.headers,
                [
                    (
                        "RateLimit-Policy",
                        "\"api.per-second\";q=10;w=1, \"api.daily\";q=2000;w=86400"
                    ),
                    ("RateLimit", "\"api.per-second\";r=3;t=1"),
                    ("X-RateLimit-Limit", "10"),
                    ("X-RateLimit-Remaining", "3"),
                    ("X-RateLimit-Reset", "1"),
                ]
                .map(|(n, v)| (n, v.to_string()))
            );
        }

        #[test]
        fn a_denial_names_the_denying_limit_and_waits_for_all() {
            let d = decision(
                false,
                true,
                "daily",
                vec![
                    limit("per-second", true, 9, 0, 100),
                    limit("daily", false, 0, 3_599_001, 3_599_001),
                ],
            );
            let answer = policy_answer(&api(), &d);
            assert_eq!(answer.status, 429);
            assert_eq!(answer.header("RateLimit"), Some("\"api.daily\";r=0;t=3600"));
            assert_eq!(answer.header("Retry-After"), Some("3600"));
            assert_eq!(answer.header("X-RateLimit-Limit"), Some("2000"));
        }

        #[test]
        fn shadow_answers_a_would_be_denial_as_an_admission() {
            let policy = api().with_mode(Mode::Shadow);
            let d = with(
                decision(
                    true,
                    true,
                    "daily",
                    vec![
                        limit("per-second", true, 9, 0, 100),
                        limit("daily", false, 0, 5_000, 5_000),
                    ],
                ),
                |v| v.shadow = true,
            );
            let answer = policy_answer(&policy, &d);
            assert_eq!(answer.status, 200);
            assert_eq!(answer.header("Retry-After"), None);
            assert_eq!(
                answer.header("RateLimit"),
                Some("\"api.daily\";r=0;t=5"),
                "t is the reset, as an admission's"
            );
        }

        #[test]
        fn a_tier_lists_its_own_limits() {
            let d = with(
                decision(
                    true,
                    false,
                    "per-second",
                    vec![limit("per-second", true, 99, 0, 10)],
                ),
                |v| v.tier = Some("premium".into()),
            );
            let answer = policy_answer(&api(), &d);
            assert_eq!(
                answer.header("RateLimit-Policy"),
                Some("\"api.per-second\";q=100;w=1")
            );
        }

        #[test]
        fn a_rule_as_a_policy_answers_as_the_rule_does() {
            let rule =
                Rule::fixed_window("login", 5, std::time::Duration::from_secs(60)).expect("valid");
            let policy = Policy::from_rule(&rule);
            let d = with(
                decision(
                    false,
                    true,
                    "login",
                    vec![limit("login", false, 0, 1_001, 59_000)],
                ),
                |v| v.name = "login".into(),
            );
            let as_policy = policy_answer(&policy, &d);
            let as_rule = http_answer(&rule, &Decision::by_redis(false, 0, 1_001, 59_000));
            assert_eq!(as_policy, as_rule);
        }

        #[test]
        fn fail_open_carries_nothing_and_fail_closed_is_a_bare_429() {
            let open = Decision::unanswered(&api(), "k", NoAnswer::FailOpen);
            assert_eq!(
                policy_answer(&api(), &open),
                HttpAnswer {
                    status: 200,
                    headers: vec![]
                }
            );
            let shadow_open =
                Decision::unanswered(&api().with_mode(Mode::Shadow), "k", NoAnswer::FailOpen);
            assert_eq!(policy_answer(&api(), &shadow_open).status, 200);
            let closed = Decision::unanswered(&api(), "k", NoAnswer::FailClosed);
            assert_eq!(
                policy_answer(&api(), &closed),
                HttpAnswer {
                    status: 429,
                    headers: vec![]
                }
            );
        }
    }
}
