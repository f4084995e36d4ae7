//! Replaying a log through policies against a real redis-server: a stack of one decides as
//! its rule, a stack denies as the tightest of its limits and names it, tiers by key, shadow
//! decides as enforcement while admitting, and the side-by-side comparison names the keys.

use crate::helper_replays as replays;

use crate::common::{limiter, redis};
use ratelockr::policy::{parse_policies, Format};
use ratelockr::{Algorithm, AlgorithmKind, Policy, Rule};
use ratelockr_lab::replay::ReplaySpec;
use replays::replay;

/// A log of `n` requests per key, `gap_ms` apart, keys interleaved, at explicit ms.
fn log(keys: &[&str], n: u64, gap_ms: u64) -> String {
    let mut out = String::new();
    for i in 0..n {
        for key in keys {
            let ts = 1_700_000_000_000 + i * gap_ms;
            out.push_str(&format!("{{\"ts\":{ts},\"ip\":\"{key}\"}}\n"));
        }
    }
    out
}

fn policies(toml: &str) -> Vec<Policy> {
    parse_policies(toml, Format::Toml).expect("valid policies")
}

fn by_policy(spec_policies: Vec<Policy>) -> ReplaySpec {
    ReplaySpec {
        policies: spec_policies,
        ..ReplaySpec::default()
    }
}

#[tokio::test]
async fn a_stack_of_one_decides_as_its_rule_for_every_algorithm() {
    let server = redis();
    let limiter = limiter(&server, "replay-policy-one");
    let text = log(&["a", "b", "c"], 60, 37);
    for kind in AlgorithmKind::ALL {
        let algorithm = match kind {
            AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
                capacity: 5,
                refill_per_sec: 7.5,
            },
            AlgorithmKind::Gcra => Algorithm::Gcra {
                limit: 6,
                window_ms: 1000,
                burst: 3,
            },
            AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
                limit: 6,
                window_ms: 700,
            },
            AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
                limit: 6,
                window_ms: 700,
            },
            AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
                limit: 6,
                window_ms: 700,
            },
            AlgorithmKind::Concurrency => Algorithm::Concurrency {
                limit: 2,
                lease_ms: 700,
            },
            AlgorithmKind::Calendar => Algorithm::Calendar {
                limit: 6,
                period: ratelockr::Period::Hour,
                time_zone: ratelockr::TimeZoneName::UTC,
                week_start: ratelockr::WeekStart::Monday,
            },
        };
        let rule = Rule::new("one", algorithm).expect("valid");
        let as_rule = ReplaySpec {
            rules: vec![rule.clone()],
            ..ReplaySpec::default()
        };
        let (rule_report, rule_records) = replay(&limiter, &text, &as_rule).await.expect("rule");
        let spec = by_policy(vec![Policy::from_rule(&rule)]);
        let (report, records) = replay(&limiter, &text, &spec).await.expect("policy");
        assert!(
            rule_report.rules[0].denied > 0,
            "{kind:?}: the log must meet the limit"
        );
        assert_eq!(records.len(), rule_records.len());
        for (p, r) in records.iter().zip(&rule_records) {
            let same = (
                &*p.key,
                p.sent_at_ms,
                p.allowed,
                p.remaining,
                p.retry_after_ms,
                p.reset_after_ms,
            );
            let rule_side = (
                &*r.key,
                r.sent_at_ms,
                r.allowed,
                r.remaining,
                r.retry_after_ms,
                r.reset_after_ms,
            );
            assert_eq!(same, rule_side, "{kind:?}");
            assert_eq!(p.algorithm, "policy");
            assert_eq!(&*p.binding, "one");
            assert_eq!(p.would_deny, !p.allowed);
        }
        let figures = report.rules[0].policy.as_ref().expect("a policy's figures");
        assert_eq!(
            figures.denied_by.get("one"),
            Some(&rule_report.rules[0].denied)
        );
    }
}

const FILE: &str = r#"
[[policies]]
name = "api"
key = "ip"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 4
  refill_per_sec = 2
  [[policies.limits]]
  name = "hourly"
  algorithm = "fixed-window"
  limit = 6
  window_ms = 3600000
  [[policies.overrides]]
  tier = "premium"
  keys = ["vip-*"]
  limits = [ { name = "per-second", algorithm = "token-bucket", capacity = 8, refill_per_sec = 4 } ]

[[policies]]
name = "api-shadow"
key = "ip"
mode = "shadow"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 4
  refill_per_sec = 2
  [[policies.limits]]
  name = "hourly"
  algorithm = "fixed-window"
  limit = 6
  window_ms = 3600000
  [[policies.overrides]]
  tier = "premium"
  keys = ["vip-*"]
  limits = [ { name = "per-second", algorithm = "token-bucket", capacity = 8, refill_per_sec = 4 } ]

[[policies]]
name = "stricter"
key = "ip"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 2
  refill_per_sec = 1
"#;

#[tokio::test]
async fn stacks_tiers_shadow_and_the_comparison_on_one_log() {
    let server = redis();
    let limiter = limiter(&server, "replay-policy-stack");
    // 30 requests per key, 100 ms apart: 3 s of 10 per second.
    let text = log(&["free-1", "vip-1"], 30, 100);
    let spec = by_policy(policies(FILE));
    let (report, records) = replay(&limiter, &text, &spec).await.expect("replays");
    let rule = |name: &str| {
        report
            .rules
            .iter()
            .find(|r| &*r.rule == name)
            .expect("a report per policy")
    };
    let (api, shadow, stricter) = (rule("api"), rule("api-shadow"), rule("stricter"));
    // free-1: the bucket of 4 at 2/s would admit about 9 in these 3 s, the hour only 6; vip-1
    // is premium: no hourly limit, a bucket of 8 at 4/s.
    let admitted = |policy: &str, key: &str| {
        records
            .iter()
            .filter(|r| &*r.rule == policy && &*r.key == key && r.allowed)
            .count()
    };
    assert_eq!(admitted("api", "free-1"), 6);
    assert!(admitted("api", "vip-1") > 6, "premium has no hourly limit");
    let bindings = |key: &str| {
        let mut b: Vec<&str> = records
            .iter()
            .filter(|r| &*r.rule == "api" && &*r.key == key && !r.allowed)
            .map(|r| &*r.binding)
            .collect();
        b.dedup();
        b
    };
    // The bucket denies first (at 400 ms), then the spent hour for the rest of the log.
    assert_eq!(bindings("free-1").first(), Some(&"per-second"));
    assert_eq!(bindings("free-1").last(), Some(&"hourly"));
    assert_eq!(bindings("vip-1"), ["per-second"]);
    for r in records.iter().filter(|r| &*r.rule != "stricter") {
        assert_eq!(
            &*r.tier,
            if &*r.key == "vip-1" { "premium" } else { "" },
            "{r:?}"
        );
    }
    // Each top key says which limits denied it, summing to its denials.
    let free = api
        .top_keys
        .iter()
        .find(|k| k.key == "free-1")
        .expect("free-1 was denied");
    assert_eq!(free.denied_by.values().sum::<u64>(), free.denied);
    assert!(free.denied_by.contains_key("hourly") && free.denied_by.contains_key("per-second"));
    let vip = api
        .top_keys
        .iter()
        .find(|k| k.key == "vip-1")
        .expect("vip-1 was denied");
    assert_eq!(vip.denied_by.keys().collect::<Vec<_>>(), ["per-second"]);
    let api_figures = api.policy.as_ref().expect("figures");
    assert_eq!(api_figures.tier_keys.get("premium"), Some(&1));
    assert_eq!(api_figures.tier_keys.get(""), Some(&1));
    let denied_by: u64 = api_figures.denied_by.values().sum();
    assert_eq!(denied_by, api.denied);
    // Shadow: the same decisions, all admitted, its denials counted as shadow_denied.
    let shadow_figures = shadow.policy.as_ref().expect("figures");
    assert_eq!(shadow.denied, 0);
    assert_eq!(shadow.allowed, shadow.requests);
    assert_eq!(shadow_figures.shadow_denied, api.denied);
    assert_eq!(shadow_figures.denied_by, api_figures.denied_by);
    assert_eq!(shadow.keys_denied, api.keys_denied);
    for (a, s) in records
        .iter()
        .filter(|r| &*r.rule == "api")
        .zip(records.iter().filter(|r| &*r.rule == "api-shadow"))
    {
        assert_eq!(
            (&*a.key, a.would_deny, &a.binding),
            (&*s.key, s.would_deny, &s.binding)
        );
        assert!(s.allowed);
    }
    // The comparison, each against the first (api).
    let change = |name: &str| {
        report
            .changes
            .iter()
            .find(|c| c.rule == name)
            .expect("a change per candidate")
    };
    let same = change("api-shadow");
    assert_eq!((same.denied, same.keys_denied), (0, 0));
    assert!(same.more.is_empty() && same.fewer.is_empty());
    let strict = change("stricter");
    assert_eq!(strict.base, "api");
    assert_eq!(strict.denied, stricter.denied as i64 - api.denied as i64);
    assert!(strict.exact);
    // vip-1 had room under premium; the stricter policy has no tiers and denies it most.
    assert_eq!(strict.more.first().map(|k| &*k.key), Some("vip-1"));
    // Both policies deny both keys at some point: no key changes sides.
    assert_eq!((api.keys_denied, stricter.keys_denied), (2, 2));
    assert_eq!(
        (strict.newly_denied_keys, strict.no_longer_denied_keys),
        (0, 0)
    );
}

#[tokio::test]
async fn policies_are_refused_beside_rules_or_a_sweep_and_named_twice() {
    let server = redis();
    let limiter = limiter(&server, "replay-policy-refused");
    let text = log(&["a"], 3, 10);
    let twice = by_policy([policies(FILE), policies(FILE)].concat());
    let err = replay(&limiter, &text, &twice).await.expect_err("refused");
    assert!(
        err.to_string().contains("two policies are named \"api\""),
        "{err}"
    );
    let with_rules = ReplaySpec {
        rules: vec![Rule::fixed_window("r", 1, std::time::Duration::from_secs(1)).expect("valid")],
        ..by_policy(policies(FILE))
    };
    let err = replay(&limiter, &text, &with_rules)
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains("rules or policies, not both"),
        "{err}"
    );
}
