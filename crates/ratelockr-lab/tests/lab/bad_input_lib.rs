//! Bad input to the library's constructors: rules, limits, policies and tiers, Redis URLs, the
//! key prefix, limiter options, workloads and simulations, replays. Each is refused with an
//! error that names the parameter (or field path), never a panic, and no Redis is needed to
//! find out.

use ratelockr::policy::{Limit, Override, Policy};
use ratelockr::{
    Algorithm, AlgorithmKind, DenyCacheOptions, FailureMode, KeySpace, Limiter, LimiterOptions,
    RedisTarget, Rule, RuleError,
};
use ratelockr_lab::replay::{ParseSpec, ReplaySpec};
use ratelockr_lab::sim::{PatternKind, SimError, SimSpec, WorkloadSpec};
use std::time::Duration;

fn parameter_of(err: &RuleError) -> String {
    match err {
        RuleError::InvalidParameter { parameter, .. } => parameter.to_string(),
        RuleError::InvalidName(_) => "name".into(),
        RuleError::InvalidCost { .. } => "cost".into(),
        RuleError::InvalidKey(_) => "key".into(),
        RuleError::UnknownField { field, .. } => field.clone(),
        other => format!("{other:?}"),
    }
}

/// A valid algorithm of `kind`, with `parameter` set to `value`.
fn algorithm(kind: AlgorithmKind, parameter: &str, value: f64) -> Algorithm {
    let int = |p: &str, default: u64| {
        if p == parameter {
            value as u64
        } else {
            default
        }
    };
    match kind {
        AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
            capacity: int("capacity", 10),
            refill_per_sec: if parameter == "refill_per_sec" {
                value
            } else {
                1.0
            },
        },
        AlgorithmKind::Gcra => Algorithm::Gcra {
            limit: int("limit", 10),
            window_ms: int("window_ms", 1000),
            burst: int("burst", 10),
        },
        AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog {
            limit: int("limit", 10),
            window_ms: int("window_ms", 1000),
        },
        AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter {
            limit: int("limit", 10),
            window_ms: int("window_ms", 1000),
        },
        AlgorithmKind::FixedWindow => Algorithm::FixedWindow {
            limit: int("limit", 10),
            window_ms: int("window_ms", 1000),
        },
        AlgorithmKind::Concurrency => Algorithm::Concurrency {
            limit: int("limit", 10),
            lease_ms: int("lease_ms", 1000),
        },
        // Its words (period, zone, week start) are checked where they are read: Period and
        // TimeZoneName cannot hold a bad one.
        AlgorithmKind::Calendar => Algorithm::Calendar {
            limit: int("limit", 10),
            period: ratelockr::Period::Day,
            time_zone: ratelockr::TimeZoneName::UTC,
            week_start: ratelockr::WeekStart::Monday,
        },
    }
}

#[test]
fn every_rule_parameter_out_of_range_is_refused_by_name() {
    let mut failures = Vec::new();
    for kind in AlgorithmKind::ALL {
        // The numeric parameters (a calendar's period, zone and week start are words).
        let numeric = kind.parameters().iter().filter(|p| {
            ratelockr::rule::PARAMETER_RANGES
                .iter()
                .any(|(name, ..)| name == *p)
        });
        for parameter in numeric {
            let bad: &[f64] = if *parameter == "refill_per_sec" {
                &[0.0, -1.0, f64::NAN, f64::INFINITY, 1e12]
            } else {
                &[0.0, 1e19]
            };
            for &value in bad {
                let got = Rule::new("r", algorithm(kind, parameter, value));
                let named = got.as_ref().err().map(parameter_of);
                if named.as_deref() != Some(*parameter) {
                    failures.push(format!("{kind:?} {parameter}={value}: {got:?}"));
                }
                // A limit of a policy is the same parameters, the error at its field path.
                let limit = Limit::new("l", algorithm(kind, parameter, value));
                if limit.as_ref().map_err(|e| e.at.as_str()).err() != Some(*parameter) {
                    failures.push(format!("limit {kind:?} {parameter}={value}: {limit:?}"));
                }
            }
        }
        let valid = algorithm(kind, "", 0.0);
        for name in ["", "a b", "x{y}", &"n".repeat(65)] {
            let got = Rule::new(name, valid);
            if !matches!(got, Err(RuleError::InvalidName(_))) {
                failures.push(format!("{kind:?} name {name:?}: {got:?}"));
            }
        }
        let rule = Rule::new("r", valid).expect("valid");
        for cost in [0, rule.algorithm().max_cost() + 1] {
            let got = rule.check_cost(cost);
            if !matches!(got, Err(RuleError::InvalidCost { .. })) {
                failures.push(format!("{kind:?} cost {cost}: {got:?}"));
            }
        }
    }
    // GCRA: a burst above the limit is allowed; one above what the script holds is not.
    assert!(Rule::gcra("g", 5, Duration::from_secs(1), 50).is_ok());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_rule_from_json_or_toml_names_a_field_its_algorithm_does_not_take() {
    for (text, field) in [
        (
            r#"{"name":"x","algorithm":"fixed_window","limit":5,"window_ms":10,"capacity":3}"#,
            "capacity",
        ),
        (
            r#"{"name":"x","algorithm":"token_bucket","capacity":5,"refill_per_sec":1,"limt":3}"#,
            "limt",
        ),
        (
            r#"{"name":"x","algorithm":"gcra","limit":5,"window_ms":10,"burst":2,"refill_per_sec":1}"#,
            "refill_per_sec",
        ),
    ] {
        let err = serde_json::from_str::<Rule>(text).expect_err(text);
        assert!(
            err.to_string()
                .contains(&format!("unknown field \"{field}\"")),
            "{text}: {err}"
        );
    }
    let toml_rule =
        "name = \"x\"\nalgorithm = \"sliding_window_log\"\nlimit = 5\nwindow_ms = 10\nburst = 3\n";
    let err = toml::from_str::<Rule>(toml_rule).expect_err("burst is GCRA's");
    assert!(err.to_string().contains("unknown field \"burst\""), "{err}");
}

#[test]
fn policies_and_tiers_name_the_field_at_fault() {
    let limit = |name: &str| {
        Limit::new(
            name,
            Algorithm::FixedWindow {
                limit: 5,
                window_ms: 1000,
            },
        )
        .expect("a valid limit")
    };
    let cases: Vec<(Result<Policy, ratelockr::policy::PolicyError>, &str)> = vec![
        (Policy::new("", vec![limit("a")]), "name"),
        (Policy::new("p q", vec![limit("a")]), "name"),
        (Policy::new("p", vec![]), "limits"),
        (
            Policy::new("p", vec![limit("a"), limit("a")]),
            "limits[1].name",
        ),
        (
            Policy::new("p", (0..9).map(|i| limit(&format!("l{i}"))).collect()),
            "limits",
        ),
        (
            Policy::new("p", vec![limit("a")]).and_then(|p| p.with_key("")),
            "key",
        ),
    ];
    for (got, at) in cases {
        let err = got.expect_err(at);
        assert!(err.at.starts_with(at), "{at}: {err:?}");
        assert!(!err.message.is_empty());
    }
    let tiers: Vec<(Result<Override, ratelockr::policy::PolicyError>, &str)> = vec![
        (
            Override::new("", vec!["k".into()], vec![limit("a")]),
            "tier",
        ),
        (Override::new("gold", vec![], vec![limit("a")]), "keys"),
        (
            Override::new("gold", vec!["".into()], vec![limit("a")]),
            "keys[0]",
        ),
        (Override::new("gold", vec!["k".into()], vec![]), "limits"),
    ];
    for (got, at) in tiers {
        let err = got.expect_err(at);
        assert!(err.at.starts_with(at), "{at}: {err:?}");
    }
    let one = Policy::new("p", vec![limit("a")]).expect("valid");
    let twice = vec![
        Override::new("gold", vec!["k".into()], vec![limit("a")]).expect("valid"),
        Override::new("gold", vec!["j".into()], vec![limit("a")]).expect("valid"),
    ];
    let err = one.with_overrides(twice).expect_err("a tier named twice");
    assert!(err.at.starts_with("overrides[1]"), "{err:?}");
}

#[test]
fn a_bad_redis_url_names_what_is_wrong_and_never_the_password() {
    for (url, names) in [
        ("", "expected redis://"),
        ("http://127.0.0.1:6379", "http"),
        ("redis://", "host"),
        ("redis://127.0.0.1:99999", "port"),
        ("redis://:s3cret@127.0.0.1:6379/abc", "database"),
        ("redis+cluster://", "host"),
        ("redis+cluster://:s3cret@a:1,b:99999", "port"),
        ("rediss://127.0.0.1:6379#bogus", "bogus"),
    ] {
        let err = RedisTarget::parse(url).expect_err(url);
        let text = err.to_string();
        assert!(
            text.to_lowercase().contains(names),
            "{url}: {text} does not name {names}"
        );
        assert!(!text.contains("s3cret"), "{url}: {text}");
    }
    let plain = RedisTarget::parse("redis://127.0.0.1:6379").expect("valid");
    let tls = ratelockr::TlsOptions {
        ca: Some("/nonexistent/ca.pem".into()),
        ..Default::default()
    };
    let err = plain.with_tls(tls).expect_err("TLS settings on redis://");
    assert!(err.to_string().contains("rediss://"), "{err}");
}

/// A limiter is made inside a Tokio runtime (it owns a reconnecting connection task).
#[tokio::test]
async fn a_bad_prefix_and_bad_limiter_options_are_refused_by_name() {
    for prefix in ["", "a{b", "a}b"] {
        let err = KeySpace::checked(prefix).expect_err(prefix);
        assert!(err.to_string().contains("prefix"), "{prefix:?}: {err}");
    }
    let target = RedisTarget::parse("redis://127.0.0.1:1").expect("valid");
    let cases = [
        (
            LimiterOptions {
                deadline: Duration::ZERO,
                ..Default::default()
            },
            "deadline",
        ),
        (
            LimiterOptions {
                deadline: Duration::from_secs(61),
                ..Default::default()
            },
            "deadline",
        ),
        (
            LimiterOptions {
                failure_mode: FailureMode::Degraded { instances: 0 },
                ..Default::default()
            },
            "failure_mode.instances",
        ),
        (
            LimiterOptions {
                deny_cache: Some(DenyCacheOptions {
                    max_entries: 0,
                    ..Default::default()
                }),
                ..Default::default()
            },
            "deny_cache.max_entries",
        ),
        (
            LimiterOptions {
                deny_cache: Some(DenyCacheOptions {
                    max_bytes: 0,
                    ..Default::default()
                }),
                ..Default::default()
            },
            "deny_cache.max_bytes",
        ),
    ];
    for (options, option) in cases {
        let err = Limiter::try_new(&target, options).expect_err(option);
        assert_eq!(err.option, option, "{err}");
        assert!(err.to_string().contains(option), "{err}");
    }
    assert!(Limiter::try_new(&target, LimiterOptions::default()).is_ok());
}

fn workload_parameter(spec: WorkloadSpec) -> Option<String> {
    match spec.workload() {
        Err(SimError::InvalidWorkload { parameter, .. }) => Some(parameter.to_string()),
        Err(other) => Some(format!("{other}")),
        Ok(_) => None,
    }
}

#[test]
fn every_workload_field_out_of_range_is_refused_by_name() {
    let base = WorkloadSpec::default;
    let burst = || WorkloadSpec {
        pattern: PatternKind::Burst,
        ..base()
    };
    let spike = || WorkloadSpec {
        pattern: PatternKind::Spike,
        ..base()
    };
    let cases: Vec<(WorkloadSpec, &str)> = vec![
        (
            WorkloadSpec {
                rps: Some(f64::NAN),
                ..base()
            },
            "rps",
        ),
        (
            WorkloadSpec {
                rps: Some(-1.0),
                ..base()
            },
            "rps",
        ),
        (
            WorkloadSpec {
                rps: Some(1e12),
                ..base()
            },
            "rps",
        ),
        (
            WorkloadSpec {
                pattern: PatternKind::Poisson,
                rps: Some(0.0),
                ..base()
            },
            "rps",
        ),
        (
            WorkloadSpec {
                burst_size: Some(0),
                ..burst()
            },
            "burst_size",
        ),
        (
            WorkloadSpec {
                burst_every_ms: Some(0),
                ..burst()
            },
            "burst_every_ms",
        ),
        (
            WorkloadSpec {
                pattern: PatternKind::Ramp,
                to_rps: Some(f64::NAN),
                ..base()
            },
            "to_rps",
        ),
        (
            WorkloadSpec {
                spike_multiplier: Some(0.0),
                ..spike()
            },
            "spike_multiplier",
        ),
        (
            WorkloadSpec {
                spike_length_ms: Some(0),
                ..spike()
            },
            "spike_length_ms",
        ),
        (
            WorkloadSpec {
                requests: Some(0),
                ..base()
            },
            "requests",
        ),
        (
            WorkloadSpec {
                requests: Some(u64::MAX),
                ..base()
            },
            "requests",
        ),
        (
            WorkloadSpec {
                requests: Some(10),
                duration_ms: Some(10),
                ..base()
            },
            "requests",
        ),
        (
            WorkloadSpec {
                duration_ms: Some(0),
                ..base()
            },
            "duration_ms",
        ),
        (
            WorkloadSpec {
                servers: Some(0),
                ..base()
            },
            "servers",
        ),
        (
            WorkloadSpec {
                servers: Some(100_000),
                ..base()
            },
            "servers",
        ),
        (
            WorkloadSpec {
                keys: Some(0),
                ..base()
            },
            "keys",
        ),
        (
            WorkloadSpec {
                keys: Some(u32::MAX),
                ..base()
            },
            "keys",
        ),
        (
            WorkloadSpec {
                zipf: true,
                zipf_exponent: Some(f64::NAN),
                ..base()
            },
            "zipf_exponent",
        ),
        (
            WorkloadSpec {
                cost: Some(0),
                ..base()
            },
            "cost",
        ),
        (
            WorkloadSpec {
                retry_attempts: Some(0),
                ..base()
            },
            "retry_attempts",
        ),
        (
            WorkloadSpec {
                retry_attempts: Some(1000),
                ..base()
            },
            "retry_attempts",
        ),
    ];
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(spec, field)| {
            let got = workload_parameter(spec.clone());
            (got.as_deref() != Some(field)).then(|| format!("{field}: {got:?} for {spec:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_simulation_refuses_a_cost_no_target_admits_and_a_bad_scope() {
    let rule = Rule::fixed_window("w", 5, Duration::from_secs(1)).expect("valid");
    let workload = WorkloadSpec {
        cost: Some(6),
        ..Default::default()
    }
    .workload()
    .expect("a valid workload");
    let err = SimSpec::single(rule.clone(), workload, false)
        .map_err(SimError::from)
        .and_then(|spec| spec.validate())
        .expect_err("cost 6 over a limit of 5");
    assert!(err.to_string().contains("cost"), "{err}");
    let workload = WorkloadSpec::default().workload().expect("valid");
    let mut spec = SimSpec::single(rule, workload, false).expect("valid");
    spec.scope = Some("a{b}".into());
    let err = spec.validate().expect_err("braces in the scope");
    assert!(
        matches!(
            err,
            SimError::InvalidWorkload {
                parameter: "scope",
                ..
            }
        ),
        "{err}"
    );
    spec.scope = None;
    spec.targets.clear();
    let err = spec.validate().expect_err("no target");
    assert!(
        matches!(
            err,
            SimError::InvalidWorkload {
                parameter: "targets",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_replay_spec_out_of_range_is_refused_by_name() {
    let base = ReplaySpec::default;
    let sizes: Vec<(ReplaySpec, &str)> = vec![
        (ReplaySpec { lanes: 0, ..base() }, "lanes"),
        (
            ReplaySpec {
                lanes: 65,
                ..base()
            },
            "lanes",
        ),
        (
            ReplaySpec {
                top: 1_000_000,
                ..base()
            },
            "top",
        ),
        (
            ReplaySpec {
                key_capacity: 0,
                ..base()
            },
            "key-capacity",
        ),
        (
            ReplaySpec {
                key_capacity: usize::MAX,
                ..base()
            },
            "key-capacity",
        ),
        (ReplaySpec { batch: 0, ..base() }, "batch"),
        (
            ReplaySpec {
                suggest_max_keys_pct: f64::NAN,
                ..base()
            },
            "suggest-max-keys-pct",
        ),
        (
            ReplaySpec {
                suggest_max_keys_pct: 101.0,
                ..base()
            },
            "suggest-max-keys-pct",
        ),
    ];
    for (spec, parameter) in sizes {
        let err = spec.check_sizes().expect_err(parameter);
        assert!(err.to_string().contains(parameter), "{parameter}: {err}");
    }
    let parse = ParseSpec::default;
    let fields = |f: fn(&mut ParseSpec)| {
        let mut spec = parse();
        f(&mut spec);
        spec
    };
    let specs: Vec<(ParseSpec, &str)> = vec![
        (
            ParseSpec {
                key: "".into(),
                ..parse()
            },
            "key",
        ),
        (
            ParseSpec {
                key: "bogus:x".into(),
                ..parse()
            },
            "key",
        ),
        (
            ParseSpec {
                key: "field:".into(),
                ..parse()
            },
            "key",
        ),
        (
            ParseSpec {
                path: Some("(".into()),
                ..parse()
            },
            "path",
        ),
        (
            ParseSpec {
                path: Some("".into()),
                ..parse()
            },
            "path",
        ),
        (
            ParseSpec {
                methods: vec!["".into()],
                ..parse()
            },
            "method",
        ),
        (
            ParseSpec {
                lookahead_ms: u64::MAX,
                ..parse()
            },
            "lookahead",
        ),
        (fields(|s| s.fields.time = Some("".into())), "time-field"),
        (fields(|s| s.fields.cost = Some(" ".into())), "cost-field"),
        (
            fields(|s| s.fields.extra = vec!["ua".into(), "".into()]),
            "extra-fields",
        ),
    ];
    for (spec, parameter) in specs {
        let err = spec.compile().expect_err(parameter);
        assert!(err.to_string().contains(parameter), "{parameter}: {err}");
    }
    let err = ratelockr_lab::replay::preview(
        &ratelockr_lab::replay::LogSource::Text("x".into()),
        &ParseSpec::default(),
        0,
    )
    .expect_err("a preview of no lines");
    assert!(err.to_string().contains("preview"), "{err}");
}
