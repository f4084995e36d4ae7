//! Runs as kept things, against a real redis-server: each run in its own key namespace
//! (starting full), reset of a rule or one key across every algorithm, retry storms, and
//! Redis's own script time around a run.

use crate::common;

use crate::common::{limiter, redis};
use ratelockr::{At, KeySpace, Limiter, Rule};
use ratelockr_lab::sim::{self, Length, NoObserver, Pattern, Report, Retry, SimSpec, Workload};
use tokio_util::sync::CancellationToken;

async fn run(limiter: &Limiter, spec: &SimSpec) -> Report {
    sim::run(limiter, spec, None, &NoObserver, CancellationToken::new())
        .await
        .expect("the run completes")
}

/// 30 requests on one key at once: more than any of these rules holds.
fn flood() -> Workload {
    Workload {
        rps: 0.0,
        length: Length::Requests(30),
        servers: 2,
        ..Workload::default()
    }
}

/// A bucket of 10 that barely refills during a test.
fn bucket() -> Rule {
    Rule::token_bucket("tb", 10, 0.001).expect("valid")
}

async fn keys_matching(limiter: &Limiter, pattern: &str) -> Vec<String> {
    let mut conn = limiter.connection();
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut conn)
        .await
        .expect("KEYS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_back_to_back_both_start_full_in_their_own_namespaces() {
    let server = redis();
    let limiter = limiter(&server, "runs-fresh");
    let mut first = SimSpec::single(bucket(), flood(), false).expect("valid");
    first.scope = Some(SimSpec::fresh_scope("1"));
    let mut second = first.clone();
    second.scope = Some(SimSpec::fresh_scope("2"));
    for spec in [&first, &second] {
        let report = run(&limiter, spec).await;
        assert_eq!(
            report.targets[0].allowed, 10,
            "{:?} starts full",
            spec.scope
        );
    }
    // The scoped keys stay under the rule's hash tag.
    let prefix = limiter.keys().prefix();
    let mut keys = keys_matching(&limiter, &format!("{prefix}:tb:*")).await;
    keys.sort();
    assert_eq!(
        keys,
        [
            format!("{prefix}:tb:{{tb}}:run-1:client-0"),
            format!("{prefix}:tb:{{tb}}:run-2:client-0")
        ]
    );
    // Without a scope, runs share the rule's keys: the second starts empty.
    let shared = SimSpec::single(bucket(), flood(), false).expect("valid");
    assert_eq!(run(&limiter, &shared).await.targets[0].allowed, 10);
    assert_eq!(run(&limiter, &shared).await.targets[0].allowed, 0);
    // Telemetry still counts under the rule: 4 runs of 30.
    let points = limiter.stats("tb").await.expect("stats");
    let decided: u64 = points.iter().map(|p| p.allowed + p.denied).sum();
    assert_eq!(decided, 120);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_clears_one_key_or_the_whole_rule_and_the_next_run_starts_full() {
    let server = redis();
    let limiter = limiter(&server, "runs-reset");
    let rules = [
        bucket(),
        Rule::sliding_window_log("tb", 10, std::time::Duration::from_secs(600)).expect("valid"),
        Rule::fixed_window("tb", 10, std::time::Duration::from_secs(600)).expect("valid"),
    ];
    // One rule name, every algorithm's keys, two clients, plus a run's own namespace and
    // another rule that must survive.
    for rule in &rules {
        for key in ["a", "b", "run-9:a"] {
            limiter
                .check_at(rule, key, 1, At::ServerClock)
                .await
                .expect("decides");
        }
    }
    let other =
        Rule::fixed_window("other", 10, std::time::Duration::from_secs(600)).expect("valid");
    limiter.check(&other, "a").await.expect("decides");

    assert_eq!(limiter.reset("tb", Some("a")).await.expect("reset"), 3);
    assert_eq!(limiter.reset("tb", Some("a")).await.expect("again"), 0);
    assert_eq!(limiter.reset("tb", None).await.expect("reset all"), 6);
    let prefix = limiter.keys().prefix();
    let left: Vec<String> = keys_matching(&limiter, &format!("{prefix}:*:{{tb}}:*"))
        .await
        .into_iter()
        .filter(|k| !k.starts_with(&format!("{prefix}:stats:")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        keys_matching(&limiter, &format!("{prefix}:fw:{{other}}:*"))
            .await
            .len(),
        1,
        "another rule is untouched"
    );
    let stats: u64 = limiter
        .stats("tb")
        .await
        .expect("stats")
        .iter()
        .map(|p| p.allowed)
        .sum();
    assert_eq!(stats, 9, "telemetry is history, not state: kept");

    // The naive demo's counters go too (its rule is `<rule>-naive`).
    let shared = SimSpec::single(bucket(), flood(), true).expect("valid");
    run(&limiter, &shared).await;
    assert_eq!(
        run(&limiter, &shared).await.targets[0].allowed,
        0,
        "drained"
    );
    assert_eq!(limiter.reset("tb", None).await.expect("reset"), 1);
    assert_eq!(limiter.reset("tb-naive", None).await.expect("reset"), 1);
    assert!(keys_matching(&limiter, &format!("{prefix}:naive:*"))
        .await
        .is_empty());
    assert_eq!(
        run(&limiter, &shared).await.targets[0].allowed,
        10,
        "after a reset the next run starts full"
    );

    assert!(limiter.reset("bad name", None).await.is_err());
    assert!(limiter.reset("tb", Some("")).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_escapes_glob_characters_in_the_prefix() {
    let server = redis();
    let url = server.url();
    let options = |prefix: &str| ratelockr::LimiterOptions {
        keys: KeySpace::new(prefix),
        ..common::options("glob")
    };
    let star = common::limiter_with(&url, options("p*"));
    let plain = common::limiter_with(&url, options("px"));
    star.check(&bucket(), "k").await.expect("decides");
    plain.check(&bucket(), "k").await.expect("decides");
    assert_eq!(star.reset("tb", None).await.expect("reset"), 1);
    assert_eq!(plain.reset("tb", None).await.expect("reset"), 1, "px kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_storm_retries_denials_after_retry_after_and_stops_at_the_limit() {
    let server = redis();
    let limiter = limiter(&server, "runs-retry");
    // 3 per 200 ms; 6 clients' requests at once, each retrying up to 3 times after the wait.
    let rule = Rule::fixed_window("fw", 3, std::time::Duration::from_millis(200)).expect("valid");
    let workload = Workload {
        pattern: Pattern::Burst {
            size: 6,
            every_ms: 1000,
        },
        length: Length::Requests(6),
        servers: 1,
        retry: Some(Retry { max_attempts: 3 }),
        ..Workload::default()
    };
    let mut spec = SimSpec::single(rule, workload, false).expect("valid");
    spec.scope = Some(SimSpec::fresh_scope("storm"));
    let recorder = Recorder::default();
    let report = sim::run(&limiter, &spec, None, &recorder, CancellationToken::new())
        .await
        .expect("runs");
    let records = recorder.0.into_inner().expect("records");
    let summary = &report.targets[0];
    assert_eq!(
        summary.allowed, 6,
        "every client gets through within 3 retries"
    );
    assert_eq!(summary.requests, records.len() as u64);
    assert_eq!(summary.retries, summary.requests - 6);
    assert!(summary.retries >= 3, "{summary:?}");
    for r in &records {
        assert!(r.attempt <= 3, "{r:?}");
        if r.attempt > 0 {
            // Each retry follows a denial of the same request, after its wait.
            let denied = records
                .iter()
                .find(|d| d.seq == r.seq && d.attempt == r.attempt - 1)
                .expect("the try before");
            assert!(!denied.allowed);
            assert!(
                r.sent_at_ms >= denied.sent_at_ms + denied.retry_after_ms,
                "{denied:?} then {r:?}"
            );
        }
    }
    // A rule that never refills in time: every request gives up after exactly 2 retries.
    let stingy =
        Rule::fixed_window("stingy", 1, std::time::Duration::from_secs(600)).expect("valid");
    let workload = Workload {
        rps: 0.0,
        length: Length::Requests(4),
        servers: 1,
        retry: Some(Retry { max_attempts: 2 }),
        ..Workload::default()
    };
    let spec = SimSpec::single(stingy, workload, false).expect("valid");
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    // The wait is 10 minutes: cancelling ends the waiting retries at once.
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        stop.cancel();
    });
    let report = sim::run(&limiter, &spec, None, &NoObserver, cancel)
        .await
        .expect("runs");
    assert!(report.cancelled);
    assert_eq!(report.targets[0].allowed, 1);
}

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<sim::Record>>);

impl sim::SimObserver for Recorder {
    fn on_record(&self, record: &sim::Record) {
        self.0.lock().expect("not poisoned").push(record.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reports_redis_side_script_time_from_commandstats() {
    let server = redis();
    let limiter = limiter(&server, "runs-cost");
    let spec = SimSpec::compare("c-", 10, 1000, flood(), true).expect("valid");
    let report = run(&limiter, &spec).await;
    let cost = report.redis_cost.expect("Redis answered INFO");
    // 30 requests × every scripted algorithm (the naive limiter uses GET/SET, not EVALSHA);
    // the first call of each script on each of the 2 servers' connections may be a NOSCRIPT
    // miss, which commandstats counts too.
    let scripts = ratelockr::AlgorithmKind::RATES.len() as u64;
    assert!(
        (30 * scripts..=32 * scripts).contains(&cost.calls),
        "{cost:?}"
    );
    assert!(cost.usec > 0 && cost.usec_per_call > 0.0, "{cost:?}");
    assert!(
        (cost.usec_per_call - cost.usec as f64 / cost.calls as f64).abs() < 1e-9,
        "{cost:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_chart_draws_the_runs_own_timeline_with_envelopes_as_png_and_svg() {
    use ratelockr_lab::export::{render_run_chart, TimelineBuilder};
    let server = redis();
    let limiter = limiter(&server, "runs-chart");
    // Bursts of 20 every 500 ms for 2 s: fine bins keep them bursts.
    let workload = Workload {
        pattern: Pattern::Burst {
            size: 20,
            every_ms: 500,
        },
        length: Length::DurationMs(2_000),
        servers: 1,
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 10, 1000, workload, false).expect("valid");
    let observer = TimelineBuilder::new(&spec, 0).observer();
    let report = sim::run(&limiter, &spec, None, &observer, CancellationToken::new())
        .await
        .expect("runs");
    let timeline = observer.finish(report.duration_ms);
    assert!(timeline.bin_ms <= 100, "{}", timeline.bin_ms);
    for (line, summary) in timeline.targets.iter().zip(&report.targets) {
        assert_eq!(line.offered.iter().sum::<u64>(), 80);
        assert_eq!(line.allowed.iter().sum::<u64>(), summary.allowed);
        let busy = line.offered.iter().filter(|&&n| n > 0).count();
        assert!(
            busy <= 8,
            "four bursts, not a flat line: {:?}",
            line.offered
        );
    }
    let dir = common::tempdir("run-chart");
    let svg = dir.join("run.svg");
    render_run_chart(&timeline, &report.workload, &svg).expect("svg");
    let text = std::fs::read_to_string(&svg).expect("read");
    assert!(
        text.contains("Requests per") && text.contains("envelope"),
        "titled, enveloped"
    );
    // The two windows' equal envelopes are one line naming both, not one hiding the other.
    assert!(text.contains("sliding-window-log, fixed-window envelope"));
    let png = dir.join("run.png");
    render_run_chart(&timeline, &report.workload, &png).expect("png");
    assert_eq!(&std::fs::read(&png).expect("read")[..4], b"\x89PNG");
}
