//! The scripts' calls as their headers document them, and their replies read.

use super::*;

#[test]
fn parses_only_well_formed_replies() {
    let d = parse_reply(&[1, 4, 0, 200]).expect("valid");
    assert!(d.allowed && !d.fail_open());
    assert_eq!(
        (d.remaining, d.retry_after_ms, d.reset_after_ms),
        (4, 0, 200)
    );
    for bad in [
        &[1, 2, 3][..],
        &[2, 0, 0, 0],
        &[1, -1, 0, 0],
        &[0, 0, -5, 0],
        &[],
    ] {
        assert_eq!(parse_reply(bad).expect_err("bad").kind, FailureKind::Reply);
    }
}

/// The EVALSHA as the script headers spell it: every ARGV in order, then the trailing ones
/// equal to the scripts' defaults left out.
fn expected_call(
    algorithm: &Algorithm,
    stats_keys: Option<(&str, &str)>,
    at: At,
    cost: u64,
    stats_ttl_secs: u64,
) -> redis::Cmd {
    let mut argv: Vec<String> = match *algorithm {
        Algorithm::TokenBucket {
            capacity,
            refill_per_sec,
        } => vec![capacity.to_string(), refill_per_sec.to_string()],
        Algorithm::FixedWindow { limit, window_ms }
        | Algorithm::SlidingWindowCounter { limit, window_ms } => {
            vec![limit.to_string(), window_ms.to_string()]
        }
        Algorithm::Gcra {
            limit,
            window_ms,
            burst,
        } => vec![limit.to_string(), window_ms.to_string(), burst.to_string()],
        Algorithm::Calendar { limit, .. } => vec![
            limit.to_string(),
            at.windows_arg(algorithm).unwrap_or_default().to_string(),
        ],
        Algorithm::SlidingWindowLog { .. } | Algorithm::Concurrency { .. } => unreachable!(),
    };
    let now = at.millis().map(|ms| ms.to_string()).unwrap_or_default();
    let fixed = algorithm.kind() == AlgorithmKind::FixedWindow;
    if !fixed {
        argv.push(now.clone());
    }
    argv.extend([cost.to_string(), stats_ttl_secs.to_string()]);
    // The fixed window's clock mode: now_ms after the stats TTL.
    if let (true, At::Millis(_)) = (fixed, at) {
        argv.push(now);
    }
    let defaults = ["", "1", &SCRIPT_STATS_TTL_SECS.to_string()];
    while argv.len() > 2 && defaults.contains(&argv[argv.len() - 1].as_str()) {
        argv.pop();
    }
    let mut expected = redis::cmd("EVALSHA");
    expected
        .arg(script(algorithm.kind()).get_hash())
        .arg(if stats_keys.is_some() { 3 } else { 1 })
        .arg("p:tb:{r}:k");
    if let Some((a, d)) = stats_keys {
        expected.arg(a).arg(d);
    }
    for arg in argv {
        expected.arg(arg);
    }
    expected
}

#[test]
fn evalsha_sends_keys_and_argv_as_documented() {
    let rules = [
        Algorithm::TokenBucket {
            capacity: 10,
            refill_per_sec: 2.5,
        },
        Algorithm::FixedWindow {
            limit: 7,
            window_ms: 1000,
        },
        Algorithm::Gcra {
            limit: 10,
            window_ms: 1000,
            burst: 4,
        },
        Algorithm::SlidingWindowCounter {
            limit: 7,
            window_ms: 1000,
        },
        Algorithm::Calendar {
            limit: 2000,
            period: crate::calendar::Period::Day,
            time_zone: crate::calendar::TimeZoneName::new("Europe/Berlin").expect("a zone"),
            week_start: crate::calendar::WeekStart::Monday,
        },
    ];
    // (cost, stats TTL): the defaults, then each spelled out.
    let tails = [(1, 120), (3, 120), (1, 60)];
    for algorithm in &rules {
        for stats_keys in [None, Some(("s:a", "s:d"))] {
            for at in [At::ServerClock, At::Millis(1_700_000_000_123)] {
                for (cost, stats_ttl_secs) in tails {
                    let call = Call {
                        algorithm,
                        limiter_key: "p:tb:{r}:k",
                        stats_keys,
                        stats_ttl_secs,
                        cost,
                        at,
                        lease_id: None,
                    };
                    assert_eq!(
                        call.evalsha().get_packed_command(),
                        expected_call(algorithm, stats_keys, at, cost, stats_ttl_secs)
                            .get_packed_command(),
                        "{algorithm:?} {stats_keys:?} {at:?} cost {cost} TTL {stats_ttl_secs}"
                    );
                }
            }
        }
    }
    // The sliding window's member is a fresh 16-character token.
    let algorithm = Algorithm::SlidingWindowLog {
        limit: 5,
        window_ms: 1000,
    };
    let call = Call {
        algorithm: &algorithm,
        limiter_key: "k",
        stats_keys: None,
        stats_ttl_secs: 120,
        cost: 1,
        at: At::ServerClock,
        lease_id: None,
    };
    let packed = String::from_utf8(call.evalsha().get_packed_command()).expect("utf-8");
    let member = packed.split("\r\n").nth(16).expect("the member argument");
    assert_eq!(member.len(), LOG_MEMBER_LEN, "{packed:?}");
    // Cost 1 and the default stats TTL are left out: the member is the last argument.
    assert_eq!(packed.trim_end().rsplit("\r\n").next(), Some(member));
    assert!(
        member
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{packed:?}"
    );
    let again = String::from_utf8(call.evalsha().get_packed_command()).expect("utf-8");
    assert_ne!(
        member,
        again.split("\r\n").nth(16).expect("the member argument")
    );
}

#[test]
fn eval_is_the_evalsha_with_the_source() {
    let algorithm = Algorithm::Gcra {
        limit: 10,
        window_ms: 1000,
        burst: 4,
    };
    let call = Call {
        algorithm: &algorithm,
        limiter_key: "p:gc:{r}:k",
        stats_keys: Some(("s:a", "s:d")),
        stats_ttl_secs: 120,
        cost: 2,
        at: At::Millis(1_700_000_000_000),
        lease_id: None,
    };
    let args = |cmd: redis::Cmd| -> Vec<Vec<u8>> {
        cmd.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => Vec::new(),
            })
            .collect()
    };
    let eval = eval_of(&call.evalsha()).expect("an EVALSHA of a script");
    let (eval, evalsha) = (args(eval), args(call.evalsha()));
    assert_eq!(eval[0], b"EVAL");
    assert_eq!(eval[1], GCRA_LUA.as_bytes());
    assert_eq!(evalsha[0], b"EVALSHA");
    assert_eq!(eval[2..], evalsha[2..]);
    // Only the five scripts' EVALSHAs have an EVAL.
    let mut other = redis::cmd("EVALSHA");
    other.arg("0123456789012345678901234567890123456789").arg(0);
    assert!(eval_of(&other).is_none());
    assert!(eval_of(redis::cmd("GET").arg("k")).is_none());
}

#[test]
fn reads_decisions_straight_from_reply_values() {
    use redis::Value;
    let ok = Value::Array(vec![
        Value::Int(0),
        Value::Int(2),
        Value::Int(150),
        Value::Int(900),
    ]);
    let d = parse_value(&ok).expect("valid");
    assert!(!d.allowed && d.remaining == 2 && d.retry_after_ms == 150);
    for bad in [
        Value::Array(vec![Value::Int(1), Value::Int(2), Value::Int(3)]),
        Value::Array(vec![
            Value::Int(1),
            Value::Nil,
            Value::Int(0),
            Value::Int(0),
        ]),
        Value::Int(1),
        Value::Nil,
    ] {
        assert_eq!(parse_value(&bad).expect_err("bad").kind, FailureKind::Reply);
    }
}

#[test]
fn every_script_documents_keys_argv_reply_and_an_example() {
    for kind in AlgorithmKind::ALL {
        let header = source(kind).split("]]").next().expect("a header comment");
        for part in ["KEYS", "ARGV", "REPLY", "EXAMPLE", "redis-cli EVAL"] {
            assert!(header.contains(part), "{kind} header lacks {part}");
        }
    }
}
