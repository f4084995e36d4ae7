//! Replays against a real redis-server: hand-computed decisions per algorithm, determinism
//! (byte for byte, whatever the lanes), bad input of every kind, each format's quirks end to
//! end, the private namespace, and NOSCRIPT recovery inside pipelines.

use crate::common;
use crate::helper_replays as replays;

use crate::common::{limiter, query, redis};
use ratelockr::Rule;
use ratelockr_lab::export::CsvSink;
use ratelockr_lab::replay::{
    self, LogFormat, LogSource, NoReplayObserver, ParseSpec, ReplayError, ReplayReport, ReplaySpec,
};
use replays::replay;
use tokio_util::sync::CancellationToken;

fn spec(rules: Vec<Rule>) -> ReplaySpec {
    ReplaySpec {
        rules,
        ..ReplaySpec::default()
    }
}

/// JSON lines at explicit milliseconds: no spreading, so every time is the script's `now_ms`.
fn jsonl(events: &[(&str, u64)]) -> String {
    events
        .iter()
        .map(|(key, ms)| format!("{{\"ts\":{},\"ip\":\"{key}\"}}\n", 1_700_000_000_000 + ms))
        .collect()
}

/// (rule, the log as (key, ms), the expected (key, ms, allowed))
#[tokio::test]
async fn decides_as_computed_by_hand_for_each_algorithm() {
    let server = redis();
    let limiter = limiter(&server, "replay-hand");
    let log = jsonl(&[
        ("a", 0),
        ("a", 100),
        ("b", 150),
        ("a", 200),
        ("a", 1000),
        ("a", 1001),
        ("a", 1300),
        ("a", 1400),
        ("b", 1500),
    ]);
    let cases: Vec<(Rule, [bool; 9])> = vec![
        // 2 tokens, 1 per second. a: 0 takes one (1 left); 100: 1.1 → 0.1 left; 200: 0.2,
        // denied (nothing written); 1000: 0.1 + 0.9 = 1.0 → admitted, 0 left; 1001, 1300 and
        // 1400: 0.001, 0.3, 0.4, denied. b: a full bucket both times.
        (
            Rule::token_bucket("tb", 2, 1.0).expect("valid"),
            [true, true, true, false, true, false, false, false, true],
        ),
        // 2 in any 1000 ms. a admitted at 0 and 100; 200 denied; 1000: the entry at 0 left
        // the window (score <= now - 1000): admitted; 1001: {100, 1000} full, denied; 1300:
        // {1000} after dropping 100 → admitted; 1400: {1000, 1300} full, denied.
        (
            Rule::sliding_window_log("swl", 2, std::time::Duration::from_secs(1)).expect("valid"),
            [true, true, true, false, true, false, true, false, true],
        ),
        // 2 per window opening at a's first request (0) and holding through 1000: 0 and 100
        // admitted, 200 and 1000 denied; 1001 opens a new window: 1001 and 1300 admitted,
        // 1400 denied.
        (
            Rule::fixed_window("fw", 2, std::time::Duration::from_secs(1)).expect("valid"),
            [true, true, true, false, false, true, true, false, true],
        ),
    ];
    for (rule, expected) in cases {
        let (report, records) = replay(&limiter, &log, &spec(vec![rule.clone()]))
            .await
            .expect("replays");
        let got: Vec<bool> = records.iter().map(|r| r.allowed).collect();
        assert_eq!(got, expected, "{}", rule.name());
        let sent: Vec<u64> = records
            .iter()
            .map(|r| r.sent_at_ms - 1_700_000_000_000)
            .collect();
        assert_eq!(sent, [0, 100, 150, 200, 1000, 1001, 1300, 1400, 1500]);
        let r = &report.rules[0];
        let denied = expected.iter().filter(|a| !**a).count() as u64;
        assert_eq!(
            (r.requests, r.denied, r.fail_open),
            (9, denied, 0),
            "{}",
            rule.name()
        );
        assert_eq!((r.keys, r.keys_denied), (2, 1));
        assert_eq!(r.top_keys.len(), 1);
        let a = &r.top_keys[0];
        assert_eq!((a.key.as_str(), a.requests, a.denied), ("a", 7, denied));
        assert_eq!(a.first_denied_ms, Some(1_700_000_000_200));
        assert!(r.top_keys_exact);
    }
}

#[tokio::test]
async fn several_rules_side_by_side_in_a_private_namespace() {
    let server = redis();
    let limiter = limiter(&server, "replay-side");
    let log = jsonl(&[("a", 0), ("a", 10), ("a", 20)]);
    let rules = vec![
        Rule::token_bucket("loose", 3, 1.0).expect("valid"),
        Rule::fixed_window("tight", 1, std::time::Duration::from_secs(1)).expect("valid"),
    ];
    let (report, records) = replay(&limiter, &log, &spec(rules)).await.expect("replays");
    let rows: Vec<(String, bool)> = records
        .iter()
        .map(|r| (r.rule.to_string(), r.allowed))
        .collect();
    assert_eq!(
        rows,
        [
            ("loose".into(), true),
            ("tight".into(), true),
            ("loose".into(), true),
            ("tight".into(), false),
            ("loose".into(), true),
            ("tight".into(), false)
        ]
    );
    assert_eq!(report.rules[0].denied, 0);
    assert_eq!(report.rules[1].denied, 2);
    // Nothing is left behind: no limiter keys, no telemetry counters.
    let left: Vec<String> = query(&limiter, redis::cmd("KEYS").arg("*")).await;
    assert!(left.is_empty(), "{left:?}");
}

/// A combined log of 3,000 requests from 40 clients, whole seconds, a little out of order.
fn combined_log() -> String {
    let mut seed = 7u64;
    let mut rnd = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut out = String::new();
    let mut second = 0u64;
    for i in 0..3000u64 {
        second += rnd(2);
        let jitter = if i % 50 == 7 { 2 } else { 0 };
        let t = 1_700_000_000 + second - jitter.min(second);
        let client = if rnd(4) == 0 { 0 } else { 1 + rnd(39) };
        let when = chrono_like(t);
        out.push_str(&format!(
            "10.0.0.{client} - - [{when}] \"GET /api/items/{i} HTTP/1.1\" 200 512 \"-\" \"bench client\"\n"
        ));
    }
    out
}

/// `dd/Mon/yyyy:HH:MM:SS +0000` for 2023-11-14 and the following days.
fn chrono_like(epoch: u64) -> String {
    let day_start = 1_699_920_000; // 2023-11-14 00:00:00 UTC
    let offset = epoch - day_start;
    let (day, rest) = (14 + offset / 86_400, offset % 86_400);
    format!(
        "{day:02}/Nov/2023:{:02}:{:02}:{:02} +0000",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[tokio::test]
async fn the_same_log_gives_the_same_csv_byte_for_byte() {
    let server = redis();
    let limiter = limiter(&server, "replay-determinism");
    let log = combined_log();
    let rules = vec![
        Rule::token_bucket("tb", 5, 0.5).expect("valid"),
        Rule::sliding_window_log("swl", 4, std::time::Duration::from_secs(3)).expect("valid"),
        Rule::fixed_window("fw", 4, std::time::Duration::from_secs(3)).expect("valid"),
    ];
    let dir = common::tempdir("replay");
    let mut files = Vec::new();
    for lanes in [4, 4, 1] {
        let path = dir.join(format!("run-{lanes}-{}.csv", files.len()));
        let mut sink = CsvSink::create(&path).expect("csv");
        let spec = ReplaySpec {
            lanes,
            batch: 100,
            ..spec(rules.clone())
        };
        let report = replay::run(
            &limiter,
            &LogSource::Text(log.clone()),
            &spec,
            Some(&mut sink),
            &NoReplayObserver,
            CancellationToken::new(),
        )
        .await
        .expect("replays");
        assert_eq!(report.requests, 3000);
        assert!(report.reordered > 0, "the log is a little out of order");
        assert!(report
            .rules
            .iter()
            .all(|r| r.denied > 0 && r.fail_open == 0));
        files.push(std::fs::read(&path).expect("read the CSV"));
    }
    assert_eq!(files[0], files[1], "two runs differ");
    assert_eq!(files[0], files[2], "one lane and four lanes differ");
    let text = String::from_utf8(files[0].clone()).expect("utf-8");
    assert!(text.starts_with(
        "seq,sent_at_ms,server,rule,algorithm,key,allowed,remaining,retry_after_ms,latency_us,fail_open,reset_after_ms,attempt,offset_ms,binding,tier,would_deny,hold_ms,answered_us\n"
    ));
    assert_eq!(text.lines().count(), 1 + 3000 * 3);
}

#[tokio::test]
async fn whole_seconds_are_spread_evenly_by_arrival() {
    let server = redis();
    let limiter = limiter(&server, "replay-spread");
    let line = |ip: &str| {
        format!("{ip} - - [14/Nov/2023:22:13:20 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"ua\"\n")
    };
    let log: String = ["a", "b", "a", "c"].iter().map(|ip| line(ip)).collect();
    let rule = Rule::fixed_window("fw", 10, std::time::Duration::from_secs(1)).expect("valid");
    let (_, records) = replay(&limiter, &log, &spec(vec![rule]))
        .await
        .expect("replays");
    let times: Vec<u64> = records
        .iter()
        .map(|r| r.sent_at_ms - 1_700_000_000_000)
        .collect();
    assert_eq!(times, [0, 250, 500, 750]);
}

#[tokio::test]
async fn bad_input_is_counted_skipped_and_named() {
    let server = redis();
    let limiter = limiter(&server, "replay-bad");
    let ok = |t: &str, ip: &str| {
        format!("{ip} - - [14/Nov/2023:22:{t} +0000] \"GET /x HTTP/1.1\" 200 1 \"-\" \"ua\"\n")
    };
    let mut log = String::new();
    log.push_str(&ok("13:20", "1.1.1.1")); // 1
    log.push_str("garbage that is no log line\n"); // 2
    log.push_str(&format!("{}\n", "x".repeat(10 * 1024 * 1024))); // 3: a 10 MB line
    log.push_str(&ok("13:25", "1.1.1.1")); // 4
    log.push_str(&ok("13:22", "2.2.2.2")); // 5: 3 s late, within the lookahead: sorted
    log.push_str(&ok("13:50", "1.1.1.1")); // 6: releases everything up to 13:40
    log.push_str(&ok("13:21", "3.3.3.3")); // 7: 29 s late: refused
    log.push_str("1.1.1.1 - - [14/Nov/2023:22:14:00 +0000] \"GET /x HTTP/1.1\" 200\n"); // 8
    log.push('\n'); // 9: blank, ignored
    let spec = ReplaySpec {
        parse: ParseSpec {
            format: Some(LogFormat::Combined),
            ..ParseSpec::default()
        },
        ..spec(vec![Rule::token_bucket("tb", 10, 1.0).expect("valid")])
    };
    let (report, records) = replay(&limiter, &log, &spec).await.expect("replays");
    assert_eq!(records.len(), 4);
    let keys: Vec<&str> = records.iter().map(|r| &*r.key).collect();
    assert_eq!(keys, ["1.1.1.1", "2.2.2.2", "1.1.1.1", "1.1.1.1"]);
    assert_eq!(
        (
            report.lines,
            report.parsed,
            report.malformed,
            report.out_of_order,
            report.reordered
        ),
        (9, 5, 3, 1, 1)
    );
    let lines: Vec<u64> = report.issues.iter().map(|i| i.line).collect();
    assert_eq!(lines, [2, 3, 7, 8]);
    assert!(
        report.issues[1].reason.contains("bytes long"),
        "{:?}",
        report.issues
    );
    assert!(
        report.issues[2].reason.contains("out of order"),
        "{:?}",
        report.issues
    );
    assert!(
        report.issues[3].reason.contains("byte count"),
        "{:?}",
        report.issues
    );
}

#[tokio::test]
async fn binary_compressed_and_truncated_input() {
    let server = redis();
    let limiter = limiter(&server, "replay-binary");
    let rule = Rule::token_bucket("tb", 10, 1.0).expect("valid");
    // A binary file: every line is refused, and zero parsed lines is an error naming the format.
    let dir = common::tempdir("replay-binary");
    let binary = dir.join("binary.log");
    let bytes: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&binary, &bytes).expect("write");
    let spec_combined = ReplaySpec {
        parse: ParseSpec {
            format: Some(LogFormat::Combined),
            ..ParseSpec::default()
        },
        ..spec(vec![rule.clone()])
    };
    let err = replay::run(
        &limiter,
        &LogSource::File(binary),
        &spec_combined,
        None,
        &NoReplayObserver,
        CancellationToken::new(),
    )
    .await
    .expect_err("nothing parses");
    let msg = err.to_string();
    assert!(matches!(err, ReplayError::NothingParsed { .. }), "{msg}");
    assert!(msg.contains("as combined"), "{msg}");

    // gzip, whole and cut in half.
    let log = combined_log();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, log.as_bytes()).expect("compress");
    let gz = gz.finish().expect("finish");
    let whole = dir.join("whole.log.gz");
    std::fs::write(&whole, &gz).expect("write");
    let cut = dir.join("cut.log.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).expect("write");
    let mut reports = Vec::new();
    for path in [whole, cut] {
        reports.push(
            replay::run(
                &limiter,
                &LogSource::File(path),
                &spec(vec![rule.clone()]),
                None,
                &NoReplayObserver,
                CancellationToken::new(),
            )
            .await
            .expect("replays"),
        );
    }
    assert!(reports[0].gzip && reports[0].input_error.is_none());
    assert_eq!(reports[0].requests, 3000);
    assert_eq!(reports[0].format, LogFormat::Combined);
    assert!(reports[1].requests > 0 && reports[1].requests < 3000);
    let err = reports[1]
        .input_error
        .as_deref()
        .expect("the cut is reported");
    assert!(err.contains("ended early"), "{err}");
}

#[tokio::test]
async fn jsonl_and_csv_quirks_end_to_end() {
    let server = redis();
    let limiter = limiter(&server, "replay-formats");
    let rule = Rule::fixed_window("fw", 1, std::time::Duration::from_secs(60)).expect("valid");
    // JSON lines: RFC 3339 in two zones for the same instant, nested header, '-' and missing
    // keys, IPv6.
    let log = concat!(
        r#"{"time":"2023-11-14T22:13:20Z","client":{"ip":"2001:db8::1"},"req":{"h":{"x-api-key":"k 1"}}}"#,
        "\n",
        r#"{"time":"2023-11-15T03:43:20.5+05:30","client":{"ip":"2001:db8::2"},"req":{"h":{"x-api-key":"k 1"}}}"#,
        "\n",
        r#"{"time":"2023-11-14T22:13:21Z","client":{"ip":"2001:db8::3"},"req":{"h":{"x-api-key":"-"}}}"#,
        "\n",
        r#"{"time":"2023-11-14T22:13:22Z","client":{"ip":"2001:db8::4"}}"#,
        "\n",
    );
    let spec_json = ReplaySpec {
        parse: ParseSpec {
            key: "field:req.h.x-api-key".into(),
            ..ParseSpec::default()
        },
        ..spec(vec![rule.clone()])
    };
    let (report, records) = replay(&limiter, log, &spec_json).await.expect("replays");
    assert_eq!(report.format, LogFormat::Jsonl);
    assert_eq!(report.no_key, 2);
    let got: Vec<(u64, bool)> = records
        .iter()
        .map(|r| (r.sent_at_ms - 1_700_000_000_000, r.allowed))
        .collect();
    assert_eq!(got, [(0, true), (500, false)], "one key across two zones");

    // CSV: a header, quoted fields with commas and spaces, the key as address + first path
    // segment, a method filter.
    let log = concat!(
        "timestamp,remote_addr,method,path,user agent\n",
        "1700000000,::1,GET,/api/v1/x,\"Mozilla 5, \"\"quoted\"\"\"\n",
        "1700000000,::1,GET,/static/app.js,curl\n",
        "1700000001,::1,POST,/api/v2/y,curl\n",
        "1700000002,::1,GET,\"/api/v1/z,w\",curl\n",
    );
    let spec_csv = ReplaySpec {
        parse: ParseSpec {
            key: "ip+path[1]".into(),
            methods: vec!["get".into()],
            ..ParseSpec::default()
        },
        ..spec(vec![rule])
    };
    let (report, records) = replay(&limiter, log, &spec_csv).await.expect("replays");
    assert_eq!((report.format, report.filtered), (LogFormat::Csv, 1));
    let got: Vec<(&str, bool)> = records.iter().map(|r| (&*r.key, r.allowed)).collect();
    assert_eq!(
        got,
        [("::1|api", true), ("::1|static", true), ("::1|api", false)]
    );

    // A quoted field holding line breaks (a blank line too) is one record, numbered from its
    // first line; a quote still open at the end is one malformed record, not a crash.
    let log = concat!(
        "time,ip,note\n",
        "1700000000,10.0.0.1,\"two\n\nlines, \"\"quoted\"\"\"\n",
        "1700000001,10.0.0.1,plain\n",
        "1700000002,10.0.0.2,\"never closed\n",
        "1700000003,10.0.0.2,swallowed\n",
    );
    let spec_lines = ReplaySpec {
        parse: ParseSpec {
            key: "ip".into(),
            ..ParseSpec::default()
        },
        ..spec(vec![Rule::fixed_window(
            "fw",
            1,
            std::time::Duration::from_secs(60),
        )
        .expect("valid")])
    };
    let (report, records) = replay(&limiter, log, &spec_lines).await.expect("replays");
    let got: Vec<(&str, u64, bool)> = records
        .iter()
        .map(|r| (&*r.key, r.sent_at_ms - 1_700_000_000_000, r.allowed))
        .collect();
    assert_eq!(got, [("10.0.0.1", 0, true), ("10.0.0.1", 1000, false)]);
    let offsets: Vec<u64> = records.iter().map(|r| r.offset_ms).collect();
    assert_eq!(offsets, [0, 1000], "ms since the log's first request");
    assert_eq!(report.malformed, 1, "{:?}", report.issues);
    assert_eq!(report.issues[0].line, 6, "{:?}", report.issues);
    assert!(report.issues[0].reason.contains("unterminated"));

    // The preview sees the same records, with the same line numbers.
    let preview = replay::preview(&LogSource::Text(log.to_string()), &spec_lines.parse, 10)
        .expect("previews");
    let seen: Vec<(u64, Option<&str>, bool)> = preview
        .lines
        .iter()
        .map(|l| (l.line, l.key.as_deref(), l.issue.is_some()))
        .collect();
    assert_eq!(
        seen,
        [
            (2, Some("10.0.0.1"), false),
            (5, Some("10.0.0.1"), false),
            (6, None, true)
        ],
        "{:?}",
        preview.lines
    );
    assert!(preview.lines[2]
        .issue
        .as_deref()
        .is_some_and(|i| i.contains("unterminated")));
}

/// Nothing is loaded beforehand: a lane's first call of a script goes as EVAL. After SCRIPT
/// FLUSH every call of a pipeline meets NOSCRIPT and is decided again, in order, through the
/// engine's recovery (EVALSHA, then EVAL); nothing ever sends SCRIPT LOAD.
#[tokio::test]
async fn recovers_from_a_script_flush_inside_pipelines() {
    let server = redis();
    let limiter = limiter(&server, "replay-noscript");
    let rule = Rule::token_bucket("tb", 1000, 1.0).expect("valid");
    let lanes = replay::decide::Lanes::start(&limiter, 1)
        .await
        .expect("lanes");
    let _: String = query(&limiter, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let commands = |from: u64| -> Vec<redis::Cmd> {
        (from..from + 50)
            .map(|i| {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(ratelockr::scripts::script(rule.kind()).get_hash())
                    .arg(1)
                    .arg(format!("{}:tb:k", limiter.keys().prefix()))
                    .arg(1000)
                    .arg(1.0)
                    .arg(1_700_000_000_000u64 + i)
                    .arg(1);
                cmd
            })
            .collect()
    };
    // Each reply is the script's four integers: allowed, remaining, retry, reset.
    let remaining = |outcomes: Vec<replay::decide::ReplyResult>| -> Vec<u64> {
        outcomes
            .iter()
            .map(|o| match o.as_ref().expect("decided") {
                redis::Value::Array(items) => match items[1] {
                    redis::Value::Int(n) => n as u64,
                    ref other => panic!("remaining is not an integer: {other:?}"),
                },
                other => panic!("not the script's reply: {other:?}"),
            })
            .collect()
    };
    // An empty cache: the first call goes as EVAL and caches the script for the rest.
    let first = lanes.submit(0, commands(0)).await.await.expect("a reply");
    assert_eq!(
        remaining(first),
        (0..50).map(|i| 999 - i).collect::<Vec<_>>()
    );
    // The lane believes the script cached; the flush makes every call meet NOSCRIPT.
    let _: String = query(&limiter, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let second = lanes.submit(0, commands(50)).await.await.expect("a reply");
    assert_eq!(
        remaining(second),
        (50..100).map(|i| 999 - i).collect::<Vec<_>>()
    );
    let stats: String = query(&limiter, redis::cmd("INFO").arg("commandstats")).await;
    assert!(stats.contains("cmdstat_evalsha:"), "{stats}");
    assert!(!stats.contains("cmdstat_script|load"), "{stats}");
}

#[tokio::test]
async fn refuses_bad_specs_naming_the_parameter() {
    let server = redis();
    let limiter = limiter(&server, "replay-spec");
    let rule = Rule::token_bucket("tb", 10, 1.0).expect("valid");
    let cases: Vec<(ReplaySpec, &str)> = vec![
        (
            ReplaySpec {
                parse: ParseSpec {
                    key: "cookie".into(),
                    ..ParseSpec::default()
                },
                ..spec(vec![rule.clone()])
            },
            "key",
        ),
        (
            ReplaySpec {
                parse: ParseSpec {
                    path: Some("(".into()),
                    ..ParseSpec::default()
                },
                ..spec(vec![rule.clone()])
            },
            "path",
        ),
        (spec(vec![]), "rules"),
        (
            ReplaySpec {
                sweep: vec!["limit=3".parse().expect("axis")],
                ..spec(vec![rule.clone()])
            },
            "sweep",
        ),
    ];
    for (spec, parameter) in cases {
        match replay(&limiter, "{}", &spec).await {
            Err(ReplayError::InvalidSpec { parameter: p, .. }) => assert_eq!(p, parameter),
            other => panic!("{parameter}: {:?}", other.map(|r| r.0.requests)),
        }
    }
}

#[tokio::test]
async fn a_sweep_decides_every_configuration_in_one_pass() {
    let server = redis();
    let limiter = limiter(&server, "replay-sweep");
    // One key sends 10 requests 100 ms apart; another sends 2.
    let mut events: Vec<(&str, u64)> = (0..10).map(|i| ("busy", i * 100)).collect();
    events.extend([("calm", 50), ("calm", 5000)]);
    events.sort_by_key(|e| e.1);
    let log = jsonl(&events);
    let spec = ReplaySpec {
        sweep: vec!["limit=2,5,10".parse().expect("axis")],
        suggest_max_keys_pct: 0.0,
        ..spec(vec![Rule::sliding_window_log(
            "swl",
            5,
            std::time::Duration::from_secs(1),
        )
        .expect("valid")])
    };
    let (report, _) = replay(&limiter, &log, &spec).await.expect("replays");
    let denied: Vec<(f64, u64, u64)> = report
        .sweep
        .iter()
        .map(|p| (p.params["limit"], p.denied, p.keys_denied))
        .collect();
    assert_eq!(denied, [(2.0, 8, 1), (5.0, 5, 1), (10.0, 0, 0)]);
    let s = report.rules[0].suggestion.as_ref().expect("from the sweep");
    assert_eq!(
        (s.parameter.as_str(), s.value, s.method.as_str()),
        ("limit", 10, "sweep")
    );
    assert!(
        s.sentence
            .starts_with("limit 10 is the smallest that denies at most "),
        "{}",
        s.sentence
    );
}

/// The suggestion says: at this value at most X % of keys are ever denied, and it is the
/// smallest such value. Replaying at the value and at one less checks both halves.
#[tokio::test]
async fn the_suggestion_is_exact_for_the_token_bucket_and_the_fixed_window() {
    let server = redis();
    let limiter = limiter(&server, "replay-suggest");
    let log = combined_log();
    let target = 10.0;
    let keys_denied = |report: &ReplayReport| report.rules[0].keys_denied_pct;
    let with = |rule: Rule| ReplaySpec {
        suggest_max_keys_pct: target,
        ..spec(vec![rule])
    };
    type Make = fn(u64) -> Rule;
    let cases: [(Make, &str); 2] = [
        (
            |c| Rule::token_bucket("tb", c, 0.5).expect("valid"),
            "capacity",
        ),
        (
            |l| Rule::fixed_window("fw", l, std::time::Duration::from_secs(3)).expect("valid"),
            "limit",
        ),
    ];
    for (make, parameter) in cases {
        let (report, _) = replay(&limiter, &log, &with(make(1)))
            .await
            .expect("replays");
        let s = report.rules[0].suggestion.clone().expect("a suggestion");
        assert_eq!(
            (s.parameter.as_str(), s.method.as_str()),
            (parameter, "exact")
        );
        assert!(s.value > 1, "{s:?}");
        assert_eq!(
            s.sentence,
            format!(
                "{parameter} {} is the smallest that denies at most 10 % of keys ({} %)",
                s.value,
                // Two decimals at most, as the sentence writes it.
                format!("{:.2}", s.keys_denied_pct)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            )
        );
        let (at, _) = replay(&limiter, &log, &with(make(s.value)))
            .await
            .expect("replays");
        assert!(
            keys_denied(&at) <= target,
            "{parameter} {}: {}",
            s.value,
            keys_denied(&at)
        );
        assert_eq!(keys_denied(&at), s.keys_denied_pct);
        let (below, _) = replay(&limiter, &log, &with(make(s.value - 1)))
            .await
            .expect("replays");
        assert!(
            keys_denied(&below) > target,
            "{parameter} {}: {}",
            s.value - 1,
            keys_denied(&below)
        );
    }
}

/// The preview names what a client key can be built from in this log: the combined format's
/// fields and named extras, a JSON line's fields (nested ones dotted), a CSV header's columns.
#[test]
fn the_preview_offers_the_fields_a_key_can_use() {
    let fields = |log: &str, extra: &[&str]| {
        let mut parse = replay::ParseSpec::default();
        parse.fields.extra = extra.iter().map(|s| s.to_string()).collect();
        replay::preview(&LogSource::Text(log.to_string()), &parse, 10)
            .expect("previews")
            .fields
    };
    let combined = r#"10.0.0.1 - alice [14/Nov/2023:22:13:20 +0000] "GET /api/v1 HTTP/1.1" 200 12 "-" "curl/8" "k-123""#;
    let names = fields(combined, &["x-api-key"]);
    for name in ["host", "user", "status", "path", "user_agent", "x-api-key"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let json = "{\"ts\": 1700000000, \"ip\": \"10.0.0.1\", \"auth\": {\"user\": \"bob\"}}\n\
                {\"ts\": 1700000001, \"ip\": \"10.0.0.2\", \"tenant\": \"acme\"}";
    // A line's fields in name order (serde_json's map), lines in the order seen.
    assert_eq!(fields(json, &[]), ["auth.user", "ip", "ts", "tenant"]);
    let csv = "time,client,path\n1700000000,10.0.0.1,/a\n";
    assert_eq!(fields(csv, &[]), ["time", "client", "path"]);
}
