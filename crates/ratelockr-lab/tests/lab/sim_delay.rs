//! The simulator under a policy that delays instead of denying (`max_delay_ms`), against a
//! real redis-server on the client clock: a delayed admission is recorded as sent at its start
//! time (decision time + delay_ms), so the records (and the CSV and charts made of them) show
//! the smoothed line: admitted starts one emission interval apart, never over the limit. The
//! replay decides such a policy as the engine does, and charts an admission at its start time.

use crate::common::{limiter, redis};
use ratelockr::policy::{parse_policies, Format};
use ratelockr_lab::sim::{self, Length, Record, SimObserver, SimSpec, Workload};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Recorder(Mutex<Vec<Record>>);

impl SimObserver for Recorder {
    fn on_record(&self, record: &Record) {
        self.0.lock().expect("not poisoned").push(record.clone());
    }
}

const SMOOTH: &str = r#"
[[policies]]
name = "smooth"
max_delay_ms = 1000
  [[policies.limits]]
  name = "per-second"
  algorithm = "gcra"
  limit = 10
  window_ms = 1000
  burst = 1
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_request_is_recorded_at_its_start_time() {
    let server = redis();
    let limiter = limiter(&server, "sim-delay");
    let policies = parse_policies(SMOOTH, Format::Toml).expect("valid");
    // One client sending as fast as Redis answers: far faster than 10 a second.
    let workload = Workload {
        rps: 0.0,
        length: Length::Requests(30),
        servers: 1,
        keys: ratelockr_lab::sim::KeyDistribution::Uniform { keys: 1 },
        ..Workload::default()
    };
    let mut spec = SimSpec::policies(policies, workload).expect("spec");
    spec.scope = Some(SimSpec::fresh_scope("delay"));
    let recorder = Recorder::default();
    let report = sim::run(&limiter, &spec, None, &recorder, CancellationToken::new())
        .await
        .expect("runs");
    let t = &report.targets[0];
    assert_eq!((t.requests, t.fail_open, t.over_admitted), (30, 0, 0));
    let records = recorder.0.into_inner().expect("not poisoned");
    let mut starts: Vec<u64> = records
        .iter()
        .filter(|r| r.allowed)
        .map(|r| r.sent_at_ms)
        .collect();
    starts.sort_unstable();
    // The burst of one passes at once; the next ten wait their turn, up to 1000 ms.
    assert!(starts.len() >= 11, "{} admitted", starts.len());
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= 100,
            "starts closer than 100 ms: {starts:?}"
        );
    }
    let sent: Vec<u64> = records.iter().map(|r| r.sent_at_ms).collect();
    let first = *sent.iter().min().expect("records");
    assert!(
        starts.last().expect("admitted") - first >= 1000,
        "the smoothed line spans the delays: {starts:?}"
    );
}

/// The replay decides a delaying policy as the engine does: of 20 logged requests at one
/// instant, 11 pass (one at once, ten delayed up to 1000 ms) and 9 are denied; the same policy
/// without max_delay_ms passes one. Its series counts each admission at its start time: ten in
/// the log's second (delays 0 to 900 ms), the one delayed 1000 ms in the next.
#[tokio::test]
async fn the_replay_admits_what_would_pass_within_the_delay() {
    let server = redis();
    let limiter = limiter(&server, "replay-delay");
    let log: String = (0..20)
        .map(|_| "{\"ts\":1700000000000,\"ip\":\"a\"}\n")
        .collect();
    let counts = |toml: &str| {
        let spec = ratelockr_lab::replay::ReplaySpec {
            policies: parse_policies(toml, Format::Toml).expect("valid"),
            ..ratelockr_lab::replay::ReplaySpec::default()
        };
        let (limiter, log) = (limiter.clone(), log.clone());
        async move {
            let (report, _) = crate::helper_replays::replay(&limiter, &log, &spec)
                .await
                .expect("replays");
            let rule = &report.rules[0];
            let series: Vec<(u64, u64, u64)> = rule
                .series
                .points
                .iter()
                .map(|p| (p.t_ms, p.allowed, p.denied))
                .collect();
            ((rule.allowed, rule.denied), series)
        }
    };
    let (smooth, series) = counts(SMOOTH).await;
    assert_eq!(smooth, (11, 9));
    assert_eq!(
        series,
        [(1_700_000_000_000, 10, 9), (1_700_000_001_000, 1, 0)]
    );
    let plain = SMOOTH.replace("name = \"smooth\"\nmax_delay_ms = 1000", "name = \"plain\"");
    assert_eq!(counts(&plain).await.0, (1, 19));
}
