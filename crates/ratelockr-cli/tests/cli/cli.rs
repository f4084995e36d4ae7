//! The `ratelockr` binary: `check` and `stats` as scripts and people use them.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};

use std::collections::BTreeSet;
use std::process::{Command, Output};

fn keys_of(value: &serde_json::Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect()
}

#[test]
fn check_json_prints_exactly_the_decision() {
    let server = common::redis();
    let prefix = common::unique("cli-json");
    let url = server.url();
    let base = [
        "check", "--redis", &url, "--prefix", &prefix, "--json", "--key", "k",
    ];
    let expected: BTreeSet<String> = [
        "allowed",
        "remaining",
        "retry_after_ms",
        "reset_after_ms",
        "fail_open",
    ]
    .map(String::from)
    .into();
    for (algorithm, params) in [
        (
            "token-bucket",
            ["--capacity", "3", "--refill-per-sec", "0.001"],
        ),
        (
            "sliding-window-log",
            ["--limit", "3", "--window-ms", "600000"],
        ),
        ("fixed-window", ["--limit", "3", "--window-ms", "600000"]),
        // GCRA's burst defaults to the limit.
        ("gcra", ["--limit", "3", "--window-ms", "600000"]),
        (
            "sliding-window-counter",
            ["--limit", "3", "--window-ms", "600000"],
        ),
    ] {
        let mut remaining = Vec::new();
        for _ in 0..4 {
            let mut args = base.to_vec();
            args.extend(["--algorithm", algorithm]);
            args.extend(params);
            let d = json(&ratelockr(&args));
            assert_eq!(keys_of(&d), expected, "{algorithm}: {d}");
            assert_eq!(d["fail_open"], false, "{algorithm}: {d}");
            remaining.push((d["allowed"].as_bool(), d["remaining"].as_i64()));
        }
        let want = [(true, 2), (true, 1), (true, 0), (false, 0)]
            .map(|(a, r)| (Some(a), Some(r)))
            .to_vec();
        assert_eq!(remaining, want, "{algorithm}");
    }
    // GCRA with a burst below its limit: two at once, then a wait of one interval (1 s).
    let mut gcra = vec!["check", "--redis", &url, "--prefix", &prefix, "--json"];
    gcra.extend(["--key", "b", "--algorithm", "gcra", "--limit", "600"]);
    gcra.extend([
        "--window-ms",
        "600000",
        "--burst",
        "2",
        "--now-ms",
        "1000000",
    ]);
    let decisions: Vec<(Option<bool>, Option<i64>, Option<u64>)> = (0..3)
        .map(|_| {
            let d = json(&ratelockr(&gcra));
            (
                d["allowed"].as_bool(),
                d["remaining"].as_i64(),
                d["retry_after_ms"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            (Some(true), Some(1), Some(0)),
            (Some(true), Some(0), Some(0)),
            (Some(false), Some(0), Some(1000))
        ]
    );
    // The human form says what happened.
    let out = ratelockr(&[
        "check",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--key",
        "h",
        "--algorithm",
        "fixed-window",
    ]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).starts_with("allowed"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn invalid_parameters_exit_non_zero_naming_the_flag() {
    let dead = common::dead_url();
    let cases: [(&[&str], &str); 14] = [
        (
            &["--algorithm", "token-bucket", "--refill-per-sec", "0"],
            "refill-per-sec",
        ),
        (
            // `--refill-per-sec -1` (a space) is taken by clap for an unknown flag `-1`.
            &["--algorithm", "token-bucket", "--refill-per-sec=-1"],
            "refill-per-sec",
        ),
        (
            &["--algorithm", "token-bucket", "--refill-per-sec", "NaN"],
            "refill-per-sec",
        ),
        (
            &["--algorithm", "token-bucket", "--capacity", "0"],
            "capacity",
        ),
        (&["--algorithm", "fixed-window", "--limit", "0"], "limit"),
        (
            &["--algorithm", "sliding-window-log", "--window-ms", "0"],
            "window-ms",
        ),
        (
            &[
                "--algorithm",
                "token-bucket",
                "--capacity",
                "10",
                "--cost",
                "11",
            ],
            "cost",
        ),
        (&["--algorithm", "fixed-window", "--cost", "0"], "cost"),
        (&["--algorithm", "gcra", "--burst", "0"], "burst"),
        (
            &[
                "--algorithm",
                "gcra",
                "--limit",
                "5",
                "--burst",
                "3",
                "--cost",
                "4",
            ],
            "the rule's burst",
        ),
        (&["--algorithm", "gcra", "--window-ms", "0"], "window-ms"),
        (
            &["--algorithm", "sliding-window-counter", "--limit", "0"],
            "limit",
        ),
        (&["--algorithm", "fixed-window", "--rule", "a b"], "rule"),
        (
            &["--algorithm", "fixed-window", "--deadline-ms", "0"],
            "deadline-ms",
        ),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["check", "--redis", &dead, "--key", "k", "--json"];
        args.extend(flags);
        let out = ratelockr(&args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{flags:?} was accepted");
        assert!(
            stderr.contains(needle),
            "{flags:?}: {stderr:?} does not name {needle}"
        );
        assert!(out.stdout.is_empty(), "{flags:?} printed a decision");
    }
}

#[test]
fn fail_open_exits_zero_and_says_so_on_stderr() {
    let dead = common::dead_url();
    let out = ratelockr(&[
        "check",
        "--redis",
        &dead,
        "--algorithm",
        "token-bucket",
        "--key",
        "k",
        "--json",
    ]);
    let d = json(&out);
    assert_eq!(d["allowed"], true);
    assert_eq!(d["remaining"], -1);
    assert_eq!(d["fail_open"], true);
    assert!(
        text(&out.stderr).contains("fail-open"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_password_in_the_url_never_appears_in_clear() {
    let server = common::redis();
    let secret = "s3cr3t-pa55";
    let live = format!("redis://app:{secret}@127.0.0.1:{}", server.port());
    let dead = common::dead_url().replace("redis://", &format!("redis://:{secret}@"));
    let runs: Vec<(&str, Output)> = vec![
        (
            "wrong password on a live Redis",
            ratelockr(&[
                "check",
                "--redis",
                &live,
                "--algorithm",
                "fixed-window",
                "--key",
                "k",
            ]),
        ),
        (
            "nothing listening",
            ratelockr(&[
                "check",
                "--redis",
                &dead,
                "--algorithm",
                "fixed-window",
                "--key",
                "k",
                "--json",
            ]),
        ),
        (
            "stats, nothing listening",
            ratelockr(&["stats", "--redis", &dead, "--rule", "r", "--json"]),
        ),
        (
            "a URL the client refuses",
            ratelockr(&[
                "check",
                "--redis",
                &format!("http://app:{secret}@127.0.0.1:1"),
                "--algorithm",
                "fixed-window",
                "--key",
                "k",
            ]),
        ),
        (
            "from $REDIS_URL",
            Command::new(env!("CARGO_BIN_EXE_ratelockr"))
                .args(["check", "--algorithm", "fixed-window", "--key", "k"])
                .env("REDIS_URL", &live)
                .env("RUST_LOG", "debug")
                .output()
                .expect("run"),
        ),
    ];
    for (what, out) in runs {
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(!all.contains(secret), "{what}: the password leaked: {all}");
        assert!(!all.is_empty(), "{what}: said nothing");
    }
    // The wrong password is reported (as a fail-open decision), with the redacted URL.
    let out = ratelockr(&[
        "check",
        "--redis",
        &live,
        "--algorithm",
        "fixed-window",
        "--key",
        "k",
    ]);
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("fail-open") && stderr.contains("***"),
        "{stderr}"
    );
}

#[test]
fn stats_json_prints_30_seconds_of_counts() {
    let server = common::redis();
    let prefix = common::unique("cli-stats");
    let url = server.url();
    for _ in 0..5 {
        let out = ratelockr(&[
            "check",
            "--redis",
            &url,
            "--prefix",
            &prefix,
            "--algorithm",
            "fixed-window",
            "--limit",
            "3",
            "--window-ms",
            "600000",
            "--rule",
            "cli-rule",
            "--key",
            "k",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let before = ratelockr::telemetry::now_ms() / 1000;
    let rows = json(&ratelockr(&[
        "stats", "--redis", &url, "--prefix", &prefix, "--rule", "cli-rule", "--json",
    ]));
    let after = ratelockr::telemetry::now_ms() / 1000;
    let rows = rows.as_array().expect("a JSON array");
    assert_eq!(rows.len(), 30);
    let expected: BTreeSet<String> = ["second", "allowed", "denied"].map(String::from).into();
    let mut seconds = Vec::new();
    let (mut allowed, mut denied) = (0, 0);
    for row in rows {
        assert_eq!(keys_of(row), expected, "{row}");
        seconds.push(row["second"].as_u64().expect("a second"));
        allowed += row["allowed"].as_u64().expect("a count");
        denied += row["denied"].as_u64().expect("a count");
    }
    assert!(seconds.windows(2).all(|w| w[1] == w[0] + 1), "{seconds:?}");
    let last = *seconds.last().expect("30 rows");
    assert!((before..=after).contains(&last), "{last} not now");
    assert_eq!((allowed, denied), (3, 2));
}

#[test]
fn embedded_starts_a_private_redis() {
    let out = ratelockr(&[
        "--embedded",
        "check",
        "--algorithm",
        "sliding-window-log",
        "--limit",
        "4",
        "--key",
        "k",
        "--json",
    ]);
    let d = json(&out);
    assert_eq!(d["fail_open"], false, "{}", text(&out.stderr));
    assert_eq!(
        (d["allowed"].as_bool(), d["remaining"].as_i64()),
        (Some(true), Some(3))
    );
    let rows = json(&ratelockr(&[
        "--embedded",
        "stats",
        "--rule",
        "x",
        "--json",
    ]));
    assert_eq!(rows.as_array().map(Vec::len), Some(30));
}

#[test]
fn check_peek_shows_what_is_left_for_all_five_and_consumes_nothing() {
    let server = common::redis();
    let prefix = common::unique("cli-peek");
    let url = server.url();
    for (algorithm, params) in [
        (
            "token-bucket",
            ["--capacity", "3", "--refill-per-sec", "0.001"],
        ),
        ("gcra", ["--limit", "3", "--window-ms", "600000"]),
        (
            "sliding-window-log",
            ["--limit", "3", "--window-ms", "600000"],
        ),
        (
            "sliding-window-counter",
            ["--limit", "3", "--window-ms", "600000"],
        ),
        ("fixed-window", ["--limit", "3", "--window-ms", "600000"]),
    ] {
        let run = |extra: &[&str]| {
            let mut args = vec!["check", "--redis", &url, "--prefix", &prefix, "--json"];
            args.extend(["--key", "k", "--algorithm", algorithm]);
            args.extend(params);
            args.extend(extra);
            json(&ratelockr(&args))
        };
        let check = run(&["--cost", "2"]);
        assert_eq!(check["remaining"], 1, "{algorithm}: {check}");
        for _ in 0..2 {
            let peek = run(&["--peek"]);
            assert_eq!(
                (&peek["allowed"], &peek["remaining"], &peek["fail_open"]),
                (&true.into(), &1.into(), &false.into()),
                "{algorithm}: {peek}"
            );
            assert!(
                peek["reset_after_ms"].as_u64() > Some(0),
                "{algorithm}: {peek}"
            );
        }
        let last = run(&[]);
        assert_eq!(
            (&last["allowed"], &last["remaining"]),
            (&true.into(), &0.into()),
            "{algorithm}: the peeks consumed something: {last}"
        );
        let rows = json(&ratelockr(&[
            "stats", "--redis", &url, "--prefix", &prefix, "--rule", algorithm, "--json",
        ]));
        let counted: u64 = rows
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["allowed"].as_u64().unwrap_or(0) + r["denied"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(counted, 2, "{algorithm}: peeks were counted");
    }
    // A peek has no cost.
    let out = ratelockr(&[
        "check",
        "--redis",
        &url,
        "--key",
        "k",
        "--algorithm",
        "gcra",
        "--peek",
        "--cost",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--cost"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn reset_deletes_a_keys_or_a_rules_state_and_says_how_many() {
    let server = common::redis();
    let prefix = common::unique("cli-reset");
    let url = server.url();
    let check = |key: &str| {
        json(&ratelockr(&[
            "check",
            "--redis",
            &url,
            "--prefix",
            &prefix,
            "--algorithm",
            "fixed-window",
            "--limit",
            "1",
            "--window-ms",
            "600000",
            "--rule",
            "r",
            "--key",
            key,
            "--json",
        ]))
    };
    assert_eq!(check("a")["allowed"], true);
    assert_eq!(check("a")["allowed"], false, "the window is used up");
    check("b");
    let one = json(&ratelockr(&[
        "reset", "--redis", &url, "--prefix", &prefix, "--rule", "r", "--key", "a", "--json",
    ]));
    assert_eq!(
        one,
        serde_json::json!({"rule": "r", "key": "a", "deleted": 1})
    );
    assert_eq!(check("a")["allowed"], true, "a starts over after its reset");
    let out = ratelockr(&["reset", "--redis", &url, "--prefix", &prefix, "--rule", "r"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "reset rule \"r\": 2 keys deleted");
    let bad = ratelockr(&["reset", "--redis", &url, "--rule", "no good"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("--rule"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn simulate_refuses_a_flag_its_pattern_ignores_and_says_what_it_uses() {
    // Refused before any Redis is needed: no server.
    let out = ratelockr(&[
        "simulate",
        "--algorithm",
        "fixed-window",
        "--pattern",
        "burst",
        "--rps",
        "500",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--rps does not apply to --pattern burst")
            && err.contains("--burst-size and --burst-every-ms"),
        "{err}"
    );
    let out = ratelockr(&[
        "simulate",
        "--algorithm",
        "fixed-window",
        "--burst-size",
        "5",
    ]);
    assert!(text(&out.stderr).contains("--burst-size does not apply to --pattern constant"));
    let out = ratelockr(&[
        "simulate",
        "--algorithm",
        "fixed-window",
        "--retry-attempts",
        "11",
    ]);
    assert!(
        text(&out.stderr).contains("--retry-attempts"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_headers_prints_the_http_answer_of_the_decision() {
    let server = common::redis();
    let prefix = common::unique("cli-headers");
    let url = server.url();
    let check = |json: bool| {
        let mut args = vec![
            "check",
            "--redis",
            &url,
            "--prefix",
            &prefix,
            "--algorithm",
            "fixed-window",
            "--limit",
            "1",
            "--window-ms",
            "60000",
            "--rule",
            "h",
            "--key",
            "k",
            "--headers",
        ];
        if json {
            args.push("--json");
        }
        ratelockr(&args)
    };
    let first = check(false);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let out = text(&first.stdout);
    assert!(out.starts_with("HTTP 200\n"), "{out}");
    assert!(out.contains("RateLimit-Policy: \"h\";q=1;w=60\n"), "{out}");
    let denied = json(&check(true));
    assert_eq!(denied["status"], 429);
    let headers = denied["headers"].as_array().expect("headers");
    assert!(
        headers.iter().any(|h| h[0] == "Retry-After"
            && h[1]
                .as_str()
                .is_some_and(|s| s.parse::<u64>().is_ok_and(|n| (1..=60).contains(&n)))),
        "{denied}"
    );
}

#[test]
fn simulate_preview_prints_the_schedules_shape_without_redis() {
    // No Redis at all: a preview runs nothing.
    let preview = json(&ratelockr(&[
        "--redis",
        "redis://127.0.0.1:1",
        "simulate",
        "--algorithm",
        "fixed-window",
        "--pattern",
        "burst",
        "--burst-size",
        "20",
        "--burst-every-ms",
        "500",
        "--duration-secs",
        "2",
        "--preview",
        "--json",
    ]));
    assert_eq!(preview["bin_ms"], 10);
    let bins: Vec<u64> = preview["offered"]
        .as_array()
        .expect("bins")
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    assert_eq!(bins.iter().sum::<u64>(), 80);
    assert_eq!(bins.iter().filter(|&&n| n == 20).count(), 4, "{bins:?}");
}

#[test]
fn topology_says_single_node_and_a_dead_redis_is_an_error() {
    let server = common::redis();
    let url = server.url();
    let t = json(&ratelockr(&["--redis", &url, "--json", "topology"]));
    assert_eq!(
        (&t["cluster"], &t["tls"], &t["insecure"]),
        (
            &serde_json::json!(false),
            &serde_json::json!(false),
            &serde_json::json!(false)
        ),
        "{t}"
    );
    assert_eq!(t["nodes"], serde_json::json!([]), "{t}");
    assert!(t["rtt_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{t}");
    let human = ratelockr(&["--redis", &url, "topology"]);
    assert!(human.status.success(), "{}", text(&human.stderr));
    assert!(
        text(&human.stdout).contains("single node"),
        "{}",
        text(&human.stdout)
    );

    let dead = common::dead_url();
    let out = ratelockr(&["--redis", &dead, "--deadline-ms", "500", "topology"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("did not answer"),
        "{}",
        text(&out.stderr)
    );
    let out = ratelockr(&["--redis", &url, "topology", "--node-deadline-ms", "0"]);
    assert!(
        text(&out.stderr).contains("--node-deadline-ms"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn simulate_chart_shows_the_measure_asked_for_and_a_keys_state() {
    let dir = common::tempdir("cli-chart-view");
    let svg = dir.join("view.svg");
    let svg_arg = svg.to_str().expect("utf-8 path");
    let out = ratelockr(&[
        "--embedded",
        "simulate",
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "60000",
        "--requests",
        "12",
        "--rps",
        "0",
        "--keys",
        "1",
        "--chart",
        svg_arg,
        "--chart-measure",
        "cumulative",
        "--chart-key",
        "client-0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let drawn = std::fs::read_to_string(&svg).expect("the chart");
    assert!(drawn.contains("admitted so far"), "the cumulative panel");
    assert!(!drawn.contains("Requests per"), "and only that one");
    assert!(
        drawn.contains("client-0 on fixed-window"),
        "the key's state"
    );
    // Both panels by default, and no key panel unless asked for.
    let out = ratelockr(&[
        "--embedded",
        "simulate",
        "--algorithm",
        "fixed-window",
        "--requests",
        "5",
        "--chart",
        svg_arg,
        // The first run's chart is there: replacing it takes the user's word.
        "--force",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let drawn = std::fs::read_to_string(&svg).expect("the chart");
    assert!(drawn.contains("admitted so far") && drawn.contains("Requests per"));
    assert!(!drawn.contains("Key state"));
    // The chart flags need a chart.
    let out = ratelockr(&["simulate", "--chart-measure", "per-bin"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--chart"),
        "{}",
        text(&out.stderr)
    );
}

/// `ratelockr … | head`: the reader is gone before the output is written. The command ends
/// quietly (as a Unix tool ended by SIGPIPE: 141), without a panic on stderr.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--embedded", "stats", "--rule", "piped"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ratelockr");
    // Closed before anything is printed: starting the embedded Redis comes first.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("it ends");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// Log lines on stderr are plain text when stderr is a file or a pipe: no colour escapes.
#[test]
fn log_lines_carry_no_colour_escapes_in_a_pipe() {
    let dead = common::dead_url();
    let out = ratelockr(&["--redis", &dead, "simulate", "--compare", "--requests", "5"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("WARN"), "a warning was logged: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape sequences: {stderr:?}"
    );
}

/// A negative number is refused by the flag it was given to, named: never clap's "unexpected
/// argument '-1' found", which names nothing.
#[test]
fn negative_numbers_name_their_flag() {
    let cases: [&[&str]; 6] = [
        &[
            "check",
            "--algorithm",
            "fixed-window",
            "--limit",
            "-1",
            "--window-ms",
            "1000",
            "--key",
            "k",
        ],
        &[
            "check",
            "--algorithm",
            "token-bucket",
            "--capacity",
            "-5",
            "--key",
            "k",
        ],
        &["simulate", "--compare", "--servers", "-3"],
        &["simulate", "--compare", "--keys", "-2"],
        &[
            "replay",
            "--log",
            "x.log",
            "--algorithm",
            "fixed-window",
            "--lanes",
            "-1",
        ],
        &["bench", "--concurrency", "-10"],
    ];
    for args in cases {
        let flag = args
            .iter()
            .zip(args.iter().skip(1))
            .find(|(_, v)| v.starts_with('-') && v.len() > 1 && v.as_bytes()[1].is_ascii_digit())
            .map(|(f, _)| *f)
            .expect("a flag with a negative value");
        let out = ratelockr(args);
        assert!(!out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
}

/// `check` says why its one decision failed open once, in its own line: the limiter's log line
/// said it a second time (the TLS message printed twice).
#[test]
fn check_says_a_failure_once() {
    let dead = common::dead_url();
    let out = ratelockr(&[
        "--redis",
        &dead,
        "check",
        "--algorithm",
        "fixed-window",
        "--limit",
        "1",
        "--window-ms",
        "1000",
        "--key",
        "k",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("connection refused").count(), 1, "{stderr}");
    assert!(stderr.contains("fail-open"), "{stderr}");
}

/// `bench --concurrency` is bounded: in process by what is worth holding in flight, over HTTP
/// by the open files each connection costs (both ends live in this process).
#[test]
fn bench_concurrency_is_bounded_and_the_bound_named() {
    for (args, most) in [
        (&["bench", "--concurrency", "1000000"][..], "65536"),
        (&["bench", "--api", "--concurrency", "5000"][..], "400"),
        (&["bench", "--concurrency", "0"][..], "65536"),
    ] {
        let out = ratelockr(args);
        assert!(!out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("invalid --concurrency: must be from 1 to {most}")),
            "{args:?}: {err}"
        );
    }
}

/// `--now-ms` is the caller's clock for every algorithm, the fixed window included: the same
/// request at the same time gets the same answer, however much wall time passes between the
/// two asks (the fixed window used to decide on the Redis clock, so its `reset_after_ms` ran
/// down: 1000, then 538, then 31).
#[test]
fn check_now_ms_answers_the_same_at_the_same_time_for_every_algorithm() {
    let server = common::redis();
    let prefix = common::unique("cli-now");
    let url = server.url();
    let now = "1700000000000";
    // Windows of a minute: the state's TTL runs on the Redis clock (it only evicts), and must
    // outlive the asks however slowly a loaded machine starts each process.
    let window = ["--limit", "2", "--window-ms", "60000"];
    let algorithms = [
        (
            "token-bucket",
            &["--capacity", "2", "--refill-per-sec", "0.01"][..],
        ),
        ("gcra", &window[..]),
        ("sliding-window-log", &window[..]),
        ("sliding-window-counter", &window[..]),
        ("fixed-window", &window[..]),
    ];
    let ask = |algorithm: &str, params: &[&str], extra: &[&str]| {
        let mut args = vec!["check", "--redis", &url, "--prefix", &prefix, "--json"];
        args.extend(["--key", "k", "--algorithm", algorithm, "--now-ms", now]);
        args.extend(params);
        args.extend(extra);
        json(&ratelockr(&args))
    };
    let mut answers = Vec::new();
    for (algorithm, params) in algorithms {
        let (first, _) = (ask(algorithm, params, &[]), ask(algorithm, params, &[]));
        assert_eq!(first["allowed"], true, "{algorithm}: {first}");
        let denied = ask(algorithm, params, &[]);
        let peek = ask(algorithm, params, &["--peek"]);
        answers.push((denied, peek));
    }
    // More than a second later (one wait for all five).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for ((algorithm, params), (denied, peek)) in algorithms.into_iter().zip(answers) {
        // A denial charges nothing and a peek nothing: asked again, the same answers.
        assert_eq!(ask(algorithm, params, &[]), denied, "{algorithm}");
        assert_eq!(ask(algorithm, params, &["--peek"]), peek, "{algorithm}");
        assert_eq!(denied["allowed"], false, "{algorithm}: {denied}");
        assert_eq!(denied["fail_open"], false, "{algorithm}: {denied}");
        if algorithm == "fixed-window" {
            // The window opened at `now` and is all still ahead of it.
            assert_eq!(denied["reset_after_ms"], 60000, "{denied}");
        }
    }
}
