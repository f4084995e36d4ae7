//! The simulator against a real redis-server: exact admission under contention, the naive
//! limiter's race, pacing, cancellation, fail-open, and CSV and chart exports.

use crate::common::{dead_url, limiter, limiter_with, options, redis, tempdir};
use ratelockr::{Limiter, Rule};
use ratelockr_lab::export::{self, read_records, CsvSink, ExportError};
use ratelockr_lab::sim::{
    self, Length, NoObserver, Pattern, Record, Report, SimObserver, SimSpec, Workload,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn flood(requests: u64, servers: u32) -> Workload {
    Workload {
        rps: 0.0,
        length: Length::Requests(requests),
        servers,
        ..Workload::default()
    }
}

async fn run(limiter: &Limiter, spec: &SimSpec) -> Report {
    sim::run(limiter, spec, None, &NoObserver, CancellationToken::new())
        .await
        .expect("the run completes")
}

/// Keeps every record it sees, in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<Record>>);

impl SimObserver for Recorder {
    fn on_record(&self, record: &Record) {
        self.0.lock().expect("not poisoned").push(record.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_hammering_one_key_admit_exactly_the_limit() {
    let server = redis();
    let limiter = limiter(&server, "sim-exact");
    let rules = [
        // A bucket that does not refill during the test: exactly its capacity passes.
        Rule::token_bucket("tb", 25, 0.001).expect("valid"),
        Rule::sliding_window_log("sw", 25, Duration::from_secs(600)).expect("valid"),
        Rule::fixed_window("fw", 25, Duration::from_secs(600)).expect("valid"),
    ];
    for rule in rules {
        let spec = SimSpec::single(rule.clone(), flood(600, 16), false).expect("valid");
        let report = run(&limiter, &spec).await;
        let summary = &report.targets[0];
        assert_eq!(summary.requests, 600, "{rule:?}");
        assert_eq!(summary.fail_open, 0, "{rule:?}");
        assert_eq!(
            summary.allowed, 25,
            "{rule:?} admitted {} of 25",
            summary.allowed
        );
        assert_eq!(summary.over_admitted, 0, "{rule:?}");
    }
}

/// Servers sharing a pool of connections decide exactly as servers with one each: the pool
/// changes how calls reach Redis, never what is admitted; the run's title says so, and only
/// the pool's connections are opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_sharing_two_connections_admit_exactly_the_limit() {
    let server = redis();
    let limiter = limiter(&server, "sim-pooled");
    let stats = |limiter: &Limiter| {
        let mut conn = limiter.connection();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("stats")
                .query_async(&mut conn)
                .await
                .expect("INFO");
            info.lines()
                .find_map(|l| l.strip_prefix("total_connections_received:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .expect("total_connections_received")
        }
    };
    let rule = Rule::fixed_window("pooled", 25, Duration::from_secs(600)).expect("valid");
    let mut spec = SimSpec::single(rule, flood(600, 16), false).expect("valid");
    spec.connections = Some(2);
    let before = stats(&limiter).await;
    let report = run(&limiter, &spec).await;
    let opened = stats(&limiter).await - before;
    let summary = &report.targets[0];
    assert_eq!(summary.requests, 600);
    assert_eq!(summary.fail_open, 0);
    assert_eq!(summary.allowed, 25, "admitted {} of 25", summary.allowed);
    assert!(
        report
            .workload
            .contains("16 servers, 1 key, 2 shared Redis connections"),
        "{}",
        report.workload
    );
    // The pool's two, and at most one more for the run's own reads of Redis's counters.
    assert!(opened <= 3, "{opened} connections opened for a pool of 2");
    spec.connections = Some(17);
    let err = sim::run(&limiter, &spec, None, &NoObserver, CancellationToken::new())
        .await
        .expect_err("more connections than servers");
    assert!(err.to_string().contains("connections"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_naive_limiter_over_admits_under_contention() {
    let server = redis();
    let limiter = limiter(&server, "sim-naive");
    // Raise contention until the race shows; on any machine it shows within these bounds.
    let mut seen = Vec::new();
    for servers in [8u32, 16, 32, 64, 128] {
        let rule = Rule::fixed_window(format!("race-{servers}"), 50, Duration::from_secs(600))
            .expect("valid");
        let spec = SimSpec::single(rule, flood(4000, servers), true).expect("valid");
        let report = run(&limiter, &spec).await;
        let (atomic, naive) = (&report.targets[0], &report.targets[1]);
        assert!(!atomic.naive && naive.naive);
        assert_eq!(atomic.allowed, 50, "the script admits exactly the limit");
        assert_eq!(atomic.over_admitted, 0);
        assert_eq!(naive.algorithm, "naive_get_set");
        seen.push((servers, naive.allowed, naive.over_admitted));
        if naive.over_admitted > 0 {
            assert_eq!(naive.over_admitted, naive.allowed - 50);
            return;
        }
    }
    panic!("the naive limiter never over-admitted: {seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn compare_mode_runs_all_five_on_identical_traffic_and_the_csv_reads_back() {
    let server = redis();
    let limiter = limiter(&server, "sim-csv");
    let workload = Workload {
        pattern: Pattern::Poisson,
        rps: 400.0,
        length: Length::Requests(300),
        servers: 3,
        keys: sim::KeyDistribution::Zipf {
            keys: 20,
            exponent: 1.3,
        },
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 10, 1000, workload, true).expect("valid");
    let dir = tempdir("csv");
    let path = dir.join("run.csv");
    let mut sink = CsvSink::create(&path).expect("writable");
    let recorder = Recorder::default();
    let report = sim::run(
        &limiter,
        &spec,
        Some(&mut sink),
        &recorder,
        CancellationToken::new(),
    )
    .await
    .expect("completes");
    assert_eq!(report.requests_sent, 300);
    let labels: Vec<&str> = report
        .targets
        .iter()
        .map(|t| t.algorithm.as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "token_bucket",
            "gcra",
            "sliding_window_log",
            "sliding_window_counter",
            "fixed_window",
            "naive_get_set"
        ]
    );
    for t in &report.targets {
        assert_eq!(t.requests, 300, "{}", t.algorithm);
        assert_eq!(t.allowed + t.denied + t.fail_open, 300);
    }
    for t in &report.targets[..5] {
        assert_eq!(t.over_admitted, 0, "{} over-admitted", t.algorithm);
    }
    // Equal nominal limits: GCRA with burst = limit decides exactly as the token bucket.
    assert_eq!(report.targets[1].allowed, report.targets[0].allowed);
    // Only the counter is judged against the exact log, and its verdicts are counts of it.
    for t in &report.targets {
        let judged = t.exact_log_wrongly_allowed.zip(t.exact_log_wrongly_denied);
        match judged {
            Some((over, under)) => {
                assert_eq!(t.algorithm, "sliding_window_counter");
                assert!(over <= t.allowed && under <= t.denied, "{t:?}");
            }
            None => assert_ne!(t.algorithm, "sliding_window_counter"),
        }
    }

    let header = std::fs::read_to_string(&path).expect("readable");
    // design.md's columns in its order, then the ones added after them.
    assert!(header.starts_with(
        "seq,sent_at_ms,server,rule,algorithm,key,allowed,remaining,retry_after_ms,latency_us,fail_open,reset_after_ms,attempt,offset_ms,binding,tier,would_deny,hold_ms,answered_us\n"
    ));
    let read = read_records(&path).expect("parses with the csv crate");
    let seen = recorder.0.into_inner().expect("not poisoned");
    assert_eq!(read.len(), 1800);
    assert_eq!(
        read, seen,
        "the CSV holds exactly the records the run produced, in order"
    );
    // Each row's offset is the chart's time axis: ms since the run started.
    assert!(
        read.iter()
            .all(|r| r.offset_ms == r.sent_at_ms - report.started_at_ms),
        "offsets from the run's start"
    );
    // Identical traffic: every request was offered to all six targets with the same key.
    for seq in [0u64, 150, 299] {
        let rows: Vec<&Record> = read.iter().filter(|r| r.seq == seq).collect();
        assert_eq!(rows.len(), 6);
        assert!(rows
            .iter()
            .all(|r| r.key == rows[0].key && r.sent_at_ms == rows[0].sent_at_ms));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn charts_are_valid_png_and_svg_with_one_series_per_algorithm() {
    let server = redis();
    let limiter = limiter(&server, "sim-chart");
    let workload = Workload {
        rps: 500.0,
        length: Length::Requests(600),
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 20, 500, workload, false).expect("valid");
    let report = run(&limiter, &spec).await;
    assert_eq!(report.series.len(), 5);
    assert!(report.series.iter().all(|s| !s.points.is_empty()));

    let dir = tempdir("chart");
    let png = dir.join("chart.png");
    export::render_chart(&report, &png).expect("renders a PNG");
    let bytes = std::fs::read(&png).expect("written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let (w, h) = (
        u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes")),
        u32::from_be_bytes(bytes[20..24].try_into().expect("4 bytes")),
    );
    assert_eq!((w, h), export::chart::SIZE);

    let svg = dir.join("chart.svg");
    export::render_chart(&report, &svg).expect("renders an SVG");
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.starts_with("<svg"), "{}", &text[..60.min(text.len())]);
    for label in [
        "token bucket",
        "GCRA",
        "sliding window log",
        "sliding window counter",
        "fixed window",
        "allowed / s",
        "denied / s",
    ] {
        assert!(text.contains(label), "the SVG lacks {label:?}");
    }
    // Two panels with one line per algorithm in each, plus its legend mark: three strokes of
    // each solid algorithm's colour (blue, green, orange). GCRA (purple) and the counter
    // (brown) are dashed, drawn as many short strokes each, so equal lines stay visible.
    for colour in ["#1F77B4", "#2CA02C", "#FF7F0E"] {
        let strokes = text.matches(&format!("stroke=\"{colour}\"")).count();
        assert_eq!(strokes, 3, "{colour}");
    }
    for colour in ["#9467BD", "#8C564B"] {
        let strokes = text.matches(&format!("stroke=\"{colour}\"")).count();
        assert!(strokes > 6, "{colour} is not dashed: {strokes} strokes");
    }

    let err = export::render_chart(&report, &dir.join("chart.jpeg")).expect_err("unknown format");
    assert!(matches!(err, ExportError::UnknownFormat { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pacing_sends_the_requested_count() {
    let server = redis();
    let limiter = limiter(&server, "sim-pace");
    let rule = Rule::token_bucket("pace", 1000, 1000.0).expect("valid");
    for (pattern, length, expected) in [
        (Pattern::Constant, Length::Requests(150), 150),
        (
            Pattern::Burst {
                size: 40,
                every_ms: 100,
            },
            Length::Requests(120),
            120,
        ),
        (Pattern::Constant, Length::DurationMs(500), 100),
        (Pattern::Ramp { to_rps: 600.0 }, Length::Requests(90), 90),
    ] {
        let workload = Workload {
            pattern: pattern.clone(),
            rps: 200.0,
            length,
            servers: 3,
            ..Workload::default()
        };
        assert_eq!(workload.planned_requests(), Some(expected));
        let report = run(
            &limiter,
            &SimSpec::single(rule.clone(), workload, false).expect("valid"),
        )
        .await;
        assert_eq!(report.requests_sent, expected, "{pattern:?}");
        assert_eq!(report.targets[0].requests, expected, "{pattern:?}");
        assert!(!report.cancelled);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_stops_promptly_and_leaves_a_valid_partial_csv() {
    let server = redis();
    let limiter = limiter(&server, "sim-cancel");
    // 100 s of traffic, cancelled after a moment.
    let workload = Workload {
        rps: 100.0,
        length: Length::Requests(10_000),
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 10, 1000, workload, false).expect("valid");
    let dir = tempdir("cancel");
    let path = dir.join("partial.csv");
    let mut sink = CsvSink::create(&path).expect("writable");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let report = sim::run(&limiter, &spec, Some(&mut sink), &NoObserver, cancel)
        .await
        .expect("ends cleanly");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(report.cancelled);
    assert!(
        report.requests_sent > 0 && report.requests_sent < 10_000,
        "{}",
        report.requests_sent
    );
    let rows = read_records(&path).expect("the partial CSV parses");
    assert_eq!(
        rows.len() as u64,
        report.requests_sent * 5,
        "every sent request is in the CSV"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_redis_gives_fail_open_records_not_errors() {
    let limiter = limiter_with(
        &dead_url(),
        ratelockr::LimiterOptions {
            deadline: Duration::from_millis(200),
            ..options("sim-dead")
        },
    );
    let rule = Rule::sliding_window_log("dead", 5, Duration::from_secs(1)).expect("valid");
    let workload = Workload {
        rps: 200.0,
        length: Length::Requests(20),
        servers: 2,
        ..Workload::default()
    };
    let report = run(
        &limiter,
        &SimSpec::single(rule, workload, false).expect("valid"),
    )
    .await;
    let summary = &report.targets[0];
    assert_eq!(
        (summary.fail_open, summary.allowed, summary.denied),
        (20, 0, 0)
    );
    assert!(limiter.ledger().fail_open_total() >= 20);
}

#[test]
fn unwritable_export_paths_fail_before_anything_runs() {
    let err = CsvSink::create(std::path::Path::new("/nonexistent-dir/run.csv"))
        .expect_err("no such directory");
    assert!(
        err.to_string().contains("/nonexistent-dir/run.csv"),
        "{err}"
    );

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args([
            "--redis",
            &dead_url(),
            "simulate",
            "--compare",
            "--requests",
            "10",
            "--csv",
            "/nonexistent-dir/x.csv",
        ])
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent-dir/x.csv"), "{stderr}");
    assert!(
        !stderr.contains("fail open"),
        "it stopped before connecting: {stderr}"
    );
}

#[test]
fn the_cli_prints_a_json_summary_per_algorithm_and_writes_both_exports() {
    let dir = tempdir("cli");
    let (csv, chart) = (dir.join("out.csv"), dir.join("out.svg"));
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args([
            "--embedded",
            "--json",
            "simulate",
            "--compare",
            "--naive",
            "--limit",
            "5",
            "--window-ms",
            "1000",
        ])
        .args([
            "--requests",
            "120",
            "--rps",
            "300",
            "--servers",
            "4",
            "--csv",
        ])
        .arg(&csv)
        .arg("--chart")
        .arg(&chart)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let algorithms = json["algorithms"]
        .as_array()
        .expect("a summary per algorithm");
    assert_eq!(algorithms.len(), 6);
    for a in algorithms {
        for field in ["allowed", "denied", "fail_open", "over_admitted"] {
            assert!(a[field].is_u64(), "{field} in {a}");
        }
        // Every target admitted something: each names its busiest window.
        for field in ["admitted", "limit", "window_ms", "start_ms"] {
            assert!(
                a["peak_window"][field].is_u64(),
                "peak_window.{field} in {a}"
            );
        }
    }
    assert_eq!(read_records(&csv).expect("parses").len(), 720);
    // The run chart: each rule's admissions under its envelope.
    let svg = std::fs::read_to_string(&chart).expect("written");
    assert!(svg.contains("fixed-window admitted") && svg.contains("envelope"));
}

/// `--hold-ms`: a simulated request under a concurrency limit holds its lease for its time in
/// flight, so two slots against 100 requests a second that each take 200 ms deny most of them;
/// every lease goes back afterwards.
#[test]
fn held_requests_fill_a_concurrency_limit() {
    let server = crate::common::redis();
    let url = server.url();
    let simulate = |extra: &[&str]| {
        let mut args = vec![
            "--redis",
            url.as_str(),
            "--json",
            "simulate",
            "--algorithm",
            "concurrency",
            "--limit",
            "2",
            "--lease-ms",
            "60000",
            "--rps",
            "100",
            "--requests",
            "60",
            "--servers",
            "2",
            "--continue-state",
        ];
        args.extend(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
            .args(&args)
            .output()
            .expect("runs")
    };
    let output = simulate(&["--hold-ms", "lognormal:median=200,p99=400"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let summary = &json["algorithms"][0];
    let (allowed, denied) = (summary["allowed"].as_u64(), summary["denied"].as_u64());
    assert!(allowed >= Some(2) && denied > Some(0), "{summary}");
    // Requests in flight, from the answer to the hold's end: the two slots, never more.
    assert_eq!(summary["peak_in_flight"]["count"], 2, "{summary}");
    // Every hold ends: both slots come back (the holds end within the run's own second or so).
    let free = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
            .args([
                "--redis",
                url.as_str(),
                "--json",
                "check",
                "--algorithm",
                "concurrency",
            ])
            .args([
                "--limit",
                "2",
                "--lease-ms",
                "60000",
                "--key",
                "client-0",
                "--peek",
            ])
            .output()
            .expect("runs");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON")["remaining"] == 2
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !free() {
        assert!(
            std::time::Instant::now() < deadline,
            "the held slots never came back"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The table says it in words, beside the limit; the chart draws it.
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = dir.path().join("in-flight.svg");
    let chart_arg = chart.to_string_lossy().into_owned();
    let mut args = vec![
        "--redis",
        url.as_str(),
        "simulate",
        "--algorithm",
        "concurrency",
    ];
    args.extend([
        "--limit",
        "2",
        "--rps",
        "100",
        "--requests",
        "40",
        "--servers",
        "2",
        "--hold-ms",
        "200",
        "--chart",
        &chart_arg,
    ]);
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(&args)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    assert!(
        stdout.contains("requests in flight at once") && stdout.contains("2 (limit 2)"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(&chart).expect("the chart");
    assert!(
        svg.contains("Requests in flight") && svg.contains("limit (2)"),
        "the in-flight panel"
    );
    let bad = simulate(&["--hold-ms", "lognormal:median=80"]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--hold-ms"), "{stderr}");
}
