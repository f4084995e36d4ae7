//! The rule's unit tests: parameters, names, costs and serde.
use super::*;

#[test]
fn rejects_bad_parameters_naming_them() {
    let cases: Vec<(Algorithm, &str)> = vec![
        (
            Algorithm::TokenBucket {
                capacity: 0,
                refill_per_sec: 1.0,
            },
            "capacity",
        ),
        (
            Algorithm::TokenBucket {
                capacity: MAX_LIMIT + 1,
                refill_per_sec: 1.0,
            },
            "capacity",
        ),
        (
            Algorithm::TokenBucket {
                capacity: 5,
                refill_per_sec: 0.0,
            },
            "refill_per_sec",
        ),
        (
            Algorithm::TokenBucket {
                capacity: 5,
                refill_per_sec: -1.0,
            },
            "refill_per_sec",
        ),
        (
            Algorithm::TokenBucket {
                capacity: 5,
                refill_per_sec: f64::NAN,
            },
            "refill_per_sec",
        ),
        (
            Algorithm::TokenBucket {
                capacity: 5,
                refill_per_sec: f64::INFINITY,
            },
            "refill_per_sec",
        ),
        (
            Algorithm::SlidingWindowLog {
                limit: 0,
                window_ms: 10,
            },
            "limit",
        ),
        (
            Algorithm::SlidingWindowLog {
                limit: 3,
                window_ms: 0,
            },
            "window_ms",
        ),
        (
            Algorithm::FixedWindow {
                limit: 3,
                window_ms: MAX_WINDOW_MS + 1,
            },
            "window_ms",
        ),
        (
            Algorithm::Gcra {
                limit: 0,
                window_ms: 1000,
                burst: 1,
            },
            "limit",
        ),
        (
            Algorithm::Gcra {
                limit: 10,
                window_ms: 0,
                burst: 10,
            },
            "window_ms",
        ),
        (
            Algorithm::Gcra {
                limit: 10,
                window_ms: 1000,
                burst: 0,
            },
            "burst",
        ),
        (
            Algorithm::Gcra {
                limit: 10,
                window_ms: MAX_WINDOW_MS,
                burst: MAX_LIMIT,
            },
            "burst",
        ),
        (
            Algorithm::SlidingWindowCounter {
                limit: 0,
                window_ms: 1000,
            },
            "limit",
        ),
        (
            Algorithm::SlidingWindowCounter {
                limit: MAX_LIMIT,
                window_ms: MAX_WINDOW_MS,
            },
            "limit",
        ),
    ];
    for (algorithm, parameter) in cases {
        match Rule::new("r", algorithm) {
            Err(RuleError::InvalidParameter { parameter: p, .. }) => {
                assert_eq!(p, parameter, "{algorithm:?}")
            }
            other => panic!("{algorithm:?} gave {other:?}"),
        }
    }
}

#[test]
fn rejects_bad_names_and_costs() {
    assert!(Rule::token_bucket("", 1, 1.0).is_err());
    assert!(Rule::token_bucket("a{b}", 1, 1.0).is_err());
    assert!(Rule::token_bucket("a:b", 1, 1.0).is_err());
    assert!(Rule::token_bucket("x".repeat(65), 1, 1.0).is_err());
    let rule = Rule::fixed_window("api", 10, std::time::Duration::from_secs(1)).expect("valid");
    assert!(rule.check_cost(10).is_ok());
    assert!(matches!(
        rule.check_cost(11),
        Err(RuleError::InvalidCost { max: 10, .. })
    ));
    assert!(rule.check_cost(0).is_err());
    let gcra = Rule::gcra("g", 10, std::time::Duration::from_secs(1), 4).expect("valid");
    assert!(gcra.check_cost(4).is_ok());
    assert!(matches!(
        gcra.check_cost(5),
        Err(RuleError::InvalidCost {
            max: 4,
            what: "burst",
            ..
        })
    ));
}

#[test]
fn the_exactness_bound_admits_every_realistic_rule() {
    // A million per day, and a thousand per 30 days, are fine; the bound names its field.
    assert!(
        Rule::sliding_window_counter("c", 1_000_000, std::time::Duration::from_secs(86_400))
            .is_ok()
    );
    assert!(Rule::gcra(
        "g",
        1000,
        std::time::Duration::from_millis(MAX_WINDOW_MS),
        1000
    )
    .is_ok());
    let err = Rule::gcra(
        "g",
        10,
        std::time::Duration::from_secs(1),
        MAX_EXACT_SPAN / 1000 + 1,
    )
    .expect_err("too big");
    assert!(err.to_string().contains("burst"), "{err}");
}

#[test]
fn serde_round_trip_validates() {
    let rule = Rule::token_bucket("api", 10, 2.5).expect("valid");
    let json = serde_json::to_string(&rule).expect("serializes");
    assert_eq!(
        json,
        r#"{"name":"api","algorithm":"token_bucket","capacity":10,"refill_per_sec":2.5}"#
    );
    assert_eq!(serde_json::from_str::<Rule>(&json).expect("parses"), rule);
    let gcra = Rule::gcra("g", 10, std::time::Duration::from_secs(1), 5).expect("valid");
    let json = serde_json::to_string(&gcra).expect("serializes");
    assert_eq!(
        json,
        r#"{"name":"g","algorithm":"gcra","limit":10,"window_ms":1000,"burst":5}"#
    );
    assert_eq!(serde_json::from_str::<Rule>(&json).expect("parses"), gcra);
    let bad = r#"{"name":"api","algorithm":"fixed_window","limit":0,"window_ms":10}"#;
    let err = serde_json::from_str::<Rule>(bad).expect_err("limit 0 is refused");
    let typo = r#"{"name":"x","algorithm":"fixed_window","limit":5,"window_ms":10,"capacity":3}"#;
    let unknown = serde_json::from_str::<Rule>(typo).expect_err("capacity is not a window's");
    assert!(
        unknown
            .to_string()
            .contains("unknown field \"capacity\" of a fixed_window rule"),
        "{unknown}"
    );
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn algorithm_names_parse_both_spellings() {
    for kind in AlgorithmKind::ALL {
        assert_eq!(kind.as_str().parse::<AlgorithmKind>(), Ok(kind));
        assert_eq!(kind.cli_name().parse::<AlgorithmKind>(), Ok(kind));
    }
    assert!("leaky".parse::<AlgorithmKind>().is_err());
}

#[test]
fn windows_are_durations_in_whole_milliseconds() {
    use std::time::Duration;
    let rule = Rule::fixed_window("daily", 2_000, Duration::from_secs(86_400)).expect("valid");
    assert_eq!(
        rule.algorithm(),
        &Algorithm::FixedWindow {
            limit: 2_000,
            window_ms: 86_400_000
        }
    );
    let err = Rule::gcra("g", 10, Duration::from_micros(1_500), 1).expect_err("a fraction");
    assert_eq!(
        err.to_string(),
        "invalid window_ms: must be whole milliseconds, got 1.5ms"
    );
    let err = Rule::sliding_window_log("s", 1, Duration::ZERO).expect_err("no window");
    assert!(err.to_string().contains("must be from 1 to"), "{err}");
    let err = crate::Limit::sliding_window_counter("c", 5, Duration::from_nanos(1))
        .expect_err("a fraction");
    assert_eq!(err.at, "window_ms");
}
