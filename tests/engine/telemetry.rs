//! Telemetry: per-second counters written by the scripts, read back as exactly 60 GETs.

use crate::common::{limiter, limiter_with, options, query, redis};
use ratelockr::{At, LimiterOptions, Outcome, Rule, StatsPoint};

fn this_second() -> u64 {
    ratelockr::telemetry::now_ms() / 1000
}

#[tokio::test]
async fn stats_are_30_zero_padded_points_oldest_first() {
    let server = redis();
    let limiter = limiter(&server, "stats");
    let rule =
        Rule::fixed_window("api", 2, std::time::Duration::from_secs(600)).expect("valid rule");
    let now = this_second();
    // (seconds ago, requests): each second uses a fresh client, so 2 pass and the rest are denied.
    let traffic = [(0, 5), (3, 1), (29, 4), (30, 7), (45, 2)];
    for (ago, requests) in traffic {
        for _ in 0..requests {
            let at = At::Millis((now - ago) * 1000 + 500);
            let d = limiter
                .check_at(&rule, &format!("client-{ago}"), 1, at)
                .await
                .expect("valid request");
            assert!(!d.fail_open());
        }
    }
    let points = limiter.stats_at("api", now).await.expect("stats");
    assert_eq!(points.len(), 30);
    let seconds: Vec<u64> = points.iter().map(|p| p.second).collect();
    let expected: Vec<u64> = (now - 29..=now).collect();
    assert_eq!(seconds, expected, "oldest first, the current second last");
    for p in &points {
        let ago = now - p.second;
        let (allowed, denied) = match ago {
            0 => (2, 3),
            3 => (1, 0),
            29 => (2, 2),
            _ => (0, 0),
        };
        let want = StatsPoint {
            second: p.second,
            allowed,
            denied,
            fail_open: 0,
        };
        assert_eq!(*p, want, "{ago} s ago");
    }
    // Another rule's series is all zeros, not an error.
    let empty = limiter.stats_at("nobody", now).await.expect("stats");
    assert_eq!(empty.len(), 30);
    assert!(empty
        .iter()
        .all(|p| p.allowed + p.denied + p.fail_open == 0));
}

#[tokio::test]
async fn reading_stats_is_exactly_60_gets_and_no_scan() {
    let server = redis();
    let limiter = limiter(&server, "stats-cost");
    let rule = Rule::token_bucket("api", 3, 0.001).expect("valid rule");
    for _ in 0..5 {
        limiter.check(&rule, "c").await.expect("valid request");
    }
    let _: String = query(&limiter, redis::cmd("CONFIG").arg("RESETSTAT")).await;
    let points = limiter.stats("api").await.expect("stats");
    let info: String = query(&limiter, redis::cmd("INFO").arg("commandstats")).await;
    let calls = |command: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(calls("get"), 60, "{info}");
    assert_eq!(calls("mget"), 0, "{info}");
    assert_eq!(calls("scan"), 0, "{info}");
    assert_eq!(calls("keys"), 0, "{info}");
    let (allowed, denied) = points
        .iter()
        .fold((0, 0), |(a, d), p| (a + p.allowed, d + p.denied));
    assert_eq!((allowed, denied), (3, 2), "{points:?}");
}

#[tokio::test]
async fn counters_live_under_the_rule_hash_tag_for_120_seconds() {
    let server = redis();
    let limiter = limiter(&server, "stats-keys");
    let rule = Rule::sliding_window_log("api", 1, std::time::Duration::from_secs(600))
        .expect("valid rule");
    let second = this_second();
    let at = At::Millis(second * 1000);
    for _ in 0..3 {
        limiter
            .check_at(&rule, "c", 1, at)
            .await
            .expect("valid request");
    }
    let prefix = limiter.keys().prefix().to_string();
    let allowed_key = format!("{prefix}:stats:{{api}}:{second}:allowed");
    let denied_key = format!("{prefix}:stats:{{api}}:{second}:denied");
    assert_eq!(
        limiter.keys().stats("api", second, Outcome::Denied),
        denied_key
    );
    let counts: (Option<u64>, Option<u64>) = query(
        &limiter,
        redis::cmd("MGET").arg(&allowed_key).arg(&denied_key),
    )
    .await;
    assert_eq!(counts, (Some(1), Some(2)));
    for key in [&allowed_key, &denied_key] {
        let ttl: i64 = query(&limiter, redis::cmd("TTL").arg(key)).await;
        assert!((100..=120).contains(&ttl), "{key}: TTL {ttl}");
    }
}

#[tokio::test]
async fn fail_open_decisions_are_reported_beside_the_series() {
    let server = redis();
    let limiter = limiter(&server, "stats-fail-open");
    let rule = Rule::token_bucket("api", 5, 1.0).expect("valid rule");
    let second = this_second();
    let at = At::Millis(second * 1000);
    // One client's key holds the wrong type: its decisions fail open and cannot be counted in
    // Redis; the ledger counts them.
    let broken = limiter.keys().limiter(&rule, "broken");
    let _: () = query(&limiter, redis::cmd("SET").arg(&broken).arg("oops")).await;
    for _ in 0..4 {
        let d = limiter
            .check_at(&rule, "broken", 1, at)
            .await
            .expect("valid");
        assert!(d.fail_open());
    }
    limiter.check_at(&rule, "fine", 1, at).await.expect("valid");
    let points = limiter.stats_at("api", second).await.expect("stats");
    let last = points.last().expect("30 points");
    assert_eq!(
        (last.second, last.allowed, last.denied, last.fail_open),
        (second, 1, 0, 4)
    );
}

#[tokio::test]
async fn telemetry_off_writes_only_the_limiter_key() {
    let server = redis();
    let limiter = limiter_with(
        &server.url(),
        LimiterOptions {
            telemetry: false,
            ..options("stats-off")
        },
    );
    for rule in [
        Rule::token_bucket("api", 5, 1.0).expect("valid rule"),
        Rule::sliding_window_log("api", 5, std::time::Duration::from_secs(60)).expect("valid rule"),
        Rule::fixed_window("api", 5, std::time::Duration::from_secs(60)).expect("valid rule"),
    ] {
        let d = limiter.check(&rule, "c").await.expect("valid request");
        assert!(d.allowed && !d.fail_open(), "{d:?}");
    }
    let keys: Vec<String> = query(&limiter, redis::cmd("KEYS").arg("*")).await;
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| !k.contains(":stats:")), "{keys:?}");
}

/// The live chart's read: every rule's 30 seconds in one call, each as `stats` reads it alone,
/// 60 GETs a rule and nothing else.
#[tokio::test]
async fn many_rules_read_together_match_each_read_alone() {
    let server = redis();
    let limiter = limiter(&server, "stats-many");
    let rules: Vec<Rule> = (1..=3u64)
        .map(|n| {
            Rule::fixed_window(format!("r{n}"), n, std::time::Duration::from_secs(60))
                .expect("valid rule")
        })
        .collect();
    for rule in &rules {
        for _ in 0..4 {
            limiter.check(rule, "c").await.expect("valid request");
        }
    }
    let now = this_second();
    let names = ["r1", "r2", "r3", "nothing-here"];
    let _: String = query(&limiter, redis::cmd("CONFIG").arg("RESETSTAT")).await;
    let together = limiter.stats_many_at(&names, now).await.expect("stats");
    let info: String = query(&limiter, redis::cmd("INFO").arg("commandstats")).await;
    assert!(info.contains("cmdstat_get:calls=240,"), "{info}");
    assert_eq!(together.len(), 4);
    for (name, series) in names.iter().zip(&together) {
        assert_eq!(
            series,
            &limiter.stats_at(name, now).await.expect("stats"),
            "{name}"
        );
    }
    let sums: Vec<(u64, u64)> = together
        .iter()
        .map(|s| {
            s.iter()
                .fold((0, 0), |(a, d), p| (a + p.allowed, d + p.denied))
        })
        .collect();
    assert_eq!(sums, [(1, 3), (2, 2), (3, 1), (0, 0)]);
}
