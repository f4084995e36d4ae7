//! Replays with request durations against a real redis-server: an admitted request holds its
//! concurrency lease for its logged duration on the log's clock (JSON lines, and nginx's
//! `$request_time` after a combined line), the report says each key's peak in flight and
//! suggests the limit from it, and a missing or bad duration names its line and field.

use crate::common::{limiter, redis};
use crate::helper_replays::replay;
use ratelockr::policy::{parse_policies, Format};
use ratelockr::Rule;
use ratelockr_lab::replay::{FieldNames, LogFormat, ParseSpec, ReplaySpec};
use std::time::Duration;

const T0: u64 = 1_700_000_000_000;

/// JSON lines of (key, ms after T0, duration ms).
fn jsonl(events: &[(&str, u64, u64)]) -> String {
    events
        .iter()
        .map(|(key, ms, took)| format!("{{\"ts\":{},\"ip\":\"{key}\",\"took\":{took}}}\n", T0 + ms))
        .collect()
}

fn with_durations(field: &str) -> ParseSpec {
    ParseSpec {
        fields: FieldNames {
            duration: Some(field.into()),
            ..FieldNames::default()
        },
        ..ParseSpec::default()
    }
}

/// Two in flight per key; leases long enough that only releases free a slot.
fn two_in_flight() -> Rule {
    Rule::concurrency("cc", 2, Duration::from_secs(10)).expect("valid")
}

const EVENTS: [(&str, u64, u64); 8] = [
    ("a", 0, 300),    // admitted: [0, 300)
    ("a", 100, 100),  // admitted: [100, 200), two in flight
    ("a", 150, 50),   // denied: two in flight; its release at 200 frees nothing
    ("b", 160, 5),    // another key, its own slots
    ("a", 200, 1000), // the one of 100 ended at 200: admitted, [200, 1200)
    ("a", 250, 10),   // denied: 0's and 200's in flight
    ("a", 300, 10),   // 0's ended at 300: admitted
    ("a", 400, 10),   // 300's ended at 310: admitted
];

#[tokio::test]
async fn an_admitted_request_holds_its_lease_for_its_logged_duration() {
    let server = redis();
    let limiter = limiter(&server, "replay-inflight");
    let log = jsonl(&EVENTS);
    let spec = ReplaySpec {
        parse: with_durations("took"),
        rules: vec![two_in_flight()],
        ..ReplaySpec::default()
    };
    let (report, records) = replay(&limiter, &log, &spec).await.expect("replays");
    let allowed: Vec<bool> = records.iter().map(|r| r.allowed).collect();
    assert_eq!(
        allowed,
        [true, true, false, true, true, false, true, true],
        "{records:#?}"
    );

    // Without durations the same log holds each lease its whole lease_ms.
    let plain = ReplaySpec {
        rules: vec![two_in_flight()],
        ..ReplaySpec::default()
    };
    let (_, records) = replay(&limiter, &log, &plain).await.expect("replays");
    let allowed: Vec<bool> = records.iter().map(|r| r.allowed).collect();
    assert_eq!(
        allowed,
        [true, true, false, true, false, false, false, false]
    );

    // What the log asked for: a had three under way at 150 (and again at 250), b one.
    let rule = &report.rules[0];
    let in_flight = rule.in_flight.as_ref().expect("in-flight figures");
    let top: Vec<(&str, u64)> = in_flight
        .top_keys
        .iter()
        .map(|k| (k.key.as_str(), k.peak))
        .collect();
    assert_eq!(top, [("a", 3), ("b", 1)]);
    assert_eq!((in_flight.keys, in_flight.max), (2, 3));
    assert_eq!(in_flight.capped_at_ms, Some(10_000));
    assert_eq!(in_flight.top_keys[0].denied, 2);
    // A limit of 3 would have denied nobody: the suggestion, exact from the peaks.
    let suggestion = rule.suggestion.as_ref().expect("a suggestion");
    assert_eq!(
        (suggestion.parameter.as_str(), suggestion.value),
        ("limit", 3)
    );
    let three = ReplaySpec {
        rules: vec![Rule::concurrency("cc3", 3, Duration::from_secs(10)).expect("valid")],
        ..spec.clone()
    };
    let (report, _) = replay(&limiter, &log, &three).await.expect("replays");
    assert_eq!(report.rules[0].denied, 0);

    // A rate rule reports the log's peak in flight too (uncapped), and suggests no limit.
    let rate = ReplaySpec {
        rules: vec![Rule::token_bucket("tb", 100, 100.0).expect("valid")],
        ..spec.clone()
    };
    let (report, _) = replay(&limiter, &log, &rate).await.expect("replays");
    let f = report.rules[0]
        .in_flight
        .as_ref()
        .expect("in-flight figures");
    assert_eq!((f.max, f.capped_at_ms), (3, None));
}

#[tokio::test]
async fn a_policys_leases_go_back_in_every_concurrency_limit_when_the_request_ends() {
    let server = redis();
    let limiter = limiter(&server, "replay-inflight-policy");
    let policies = parse_policies(
        r#"
[[policies]]
name = "api"
  [[policies.limits]]
  name = "in-flight"
  algorithm = "concurrency"
  limit = 1
  lease_ms = 60000
  [[policies.limits]]
  name = "in-flight-wide"
  algorithm = "concurrency"
  limit = 5
  lease_ms = 60000
  [[policies.limits]]
  name = "rate"
  algorithm = "token-bucket"
  capacity = 100
  refill_per_sec = 100
"#,
        Format::Toml,
    )
    .expect("valid policies");
    let log = jsonl(&[("a", 0, 100), ("a", 50, 10), ("a", 100, 10), ("a", 200, 0)]);
    let spec = ReplaySpec {
        parse: with_durations("took"),
        policies,
        ..ReplaySpec::default()
    };
    let (report, records) = replay(&limiter, &log, &spec).await.expect("replays");
    let allowed: Vec<bool> = records.iter().map(|r| r.allowed).collect();
    // 0 holds the one slot until 100; 50 is denied by it; 100 and 200 find it free.
    assert_eq!(allowed, [true, false, true, true]);
    let policy = report.rules[0].policy.as_ref().expect("a policy's figures");
    assert_eq!(policy.denied_by.get("in-flight"), Some(&1));
}

#[tokio::test]
async fn nginx_request_time_after_a_combined_line_is_each_requests_duration() {
    let server = redis();
    let limiter = limiter(&server, "replay-inflight-nginx");
    let line = |second: u32, took: &str, extra: &str| {
        format!(
            "10.0.0.1 - - [14/Nov/2023:22:13:{second:02} +0000] \"GET /slow HTTP/1.1\" 200 5 \"-\" \"curl/8\"{extra} {took}\n"
        )
    };
    // 1.5 s from :20, then one at :21 (in flight beside it), one at :22 (after it ended).
    let plain: String = [
        line(20, "1.500", ""),
        line(21, "0.100", ""),
        line(22, "0.200", ""),
    ]
    .concat();
    let captured: String = [
        line(20, "1.500", " \"key-1\""),
        line(21, "0.100", " \"key-1\""),
        line(22, "0.200", " \"key-1\""),
    ]
    .concat();
    let one = Rule::concurrency("one", 1, Duration::from_secs(60)).expect("valid");
    for (log, extra) in [(plain, vec![]), (captured, vec!["x-api-key".to_string()])] {
        let spec = ReplaySpec {
            parse: ParseSpec {
                format: Some(LogFormat::Combined),
                fields: FieldNames {
                    duration: Some("request_time".into()),
                    extra,
                    ..FieldNames::default()
                },
                ..ParseSpec::default()
            },
            rules: vec![one.clone()],
            ..ReplaySpec::default()
        };
        let (report, records) = replay(&limiter, &log, &spec).await.expect("replays");
        assert_eq!(report.malformed, 0, "{:?}", report.issues);
        let allowed: Vec<bool> = records.iter().map(|r| r.allowed).collect();
        assert_eq!(allowed, [true, false, true]);
        let f = report.rules[0]
            .in_flight
            .as_ref()
            .expect("in-flight figures");
        assert_eq!(f.max, 2);
    }
}

#[tokio::test]
async fn a_missing_or_bad_duration_names_its_line_and_field() {
    let server = redis();
    let limiter = limiter(&server, "replay-inflight-bad");
    let log = format!(
        "{{\"ts\":{T0},\"ip\":\"a\",\"took\":5}}\n{{\"ts\":{},\"ip\":\"a\"}}\n{{\"ts\":{},\"ip\":\"a\",\"took\":\"slow\"}}\n{{\"ts\":{},\"ip\":\"a\",\"took\":-3}}\n",
        T0 + 1,
        T0 + 2,
        T0 + 3
    );
    let spec = ReplaySpec {
        parse: with_durations("took"),
        rules: vec![two_in_flight()],
        ..ReplaySpec::default()
    };
    let (report, _) = replay(&limiter, &log, &spec).await.expect("replays");
    assert_eq!((report.requests, report.malformed), (1, 3));
    let issues: Vec<(u64, &str)> = report
        .issues
        .iter()
        .map(|i| (i.line, i.reason.as_str()))
        .collect();
    assert_eq!(issues.len(), 3, "{issues:?}");
    assert_eq!(issues[0].0, 2);
    assert!(
        issues[0].1.contains("no duration field \"took\""),
        "{issues:?}"
    );
    for (i, value) in [(1, "\"slow\""), (2, "\"-3\"")] {
        assert_eq!(issues[i].0, i as u64 + 2);
        assert!(
            issues[i].1.contains("duration field \"took\"") && issues[i].1.contains(value),
            "{issues:?}"
        );
    }
    // Every line without one: the replay refuses, naming the first line's reason.
    let none = format!("{{\"ts\":{T0},\"ip\":\"a\"}}\n");
    let err = replay(&limiter, &none, &spec)
        .await
        .expect_err("nothing to replay")
        .to_string();
    assert!(
        err.contains("line 1") && err.contains("no duration field \"took\""),
        "{err}"
    );
}
