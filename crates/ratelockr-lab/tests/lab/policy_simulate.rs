//! Simulating policies against a real redis-server: every decision all or nothing with the
//! binding limit in its record, tiers by client key (in the run's own key namespace too),
//! shadow mode deciding exactly as enforcement while admitting, and the CSV carrying it all.

use crate::common::{limiter, redis, tempdir};
use ratelockr::policy::{parse_policies, Format};
use ratelockr::Policy;
use ratelockr_lab::export::{read_records, CsvSink};
use ratelockr_lab::sim::{self, Length, NoObserver, Record, SimObserver, SimSpec, Workload};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Keeps every record it sees.
#[derive(Default)]
struct Recorder(Mutex<Vec<Record>>);

impl SimObserver for Recorder {
    fn on_record(&self, record: &Record) {
        self.0.lock().expect("not poisoned").push(record.clone());
    }
}

fn policies(toml: &str) -> Vec<Policy> {
    parse_policies(toml, Format::Toml).expect("valid policies")
}

/// One server sending as fast as Redis answers: every key's requests are decided one after
/// the other, in order.
fn sequential(requests: u64, keys: u32) -> Workload {
    Workload {
        rps: 0.0,
        length: Length::Requests(requests),
        servers: 1,
        keys: ratelockr_lab::sim::KeyDistribution::Uniform { keys },
        ..Workload::default()
    }
}

const STACK: &str = r#"
[[policies]]
name = "api"
  [[policies.limits]]
  name = "burst"
  algorithm = "fixed-window"
  limit = 6
  window_ms = 600000
  [[policies.limits]]
  name = "long"
  algorithm = "sliding-window-log"
  limit = 4
  window_ms = 600000
  [[policies.overrides]]
  tier = "premium"
  keys = ["client-1"]
  limits = [ { name = "burst", algorithm = "fixed-window", limit = 9, window_ms = 600000 } ]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_admits_the_tightest_limit_and_names_it_per_tier() {
    let server = redis();
    let limiter = limiter(&server, "sim-policy-stack");
    let mut spec = SimSpec::policies(policies(STACK), sequential(40, 2)).expect("spec");
    spec.scope = Some(SimSpec::fresh_scope("stack"));
    let recorder = Recorder::default();
    let report = sim::run(&limiter, &spec, None, &recorder, CancellationToken::new())
        .await
        .expect("runs");
    let records = recorder.0.into_inner().expect("not poisoned");
    let t = &report.targets[0];
    assert_eq!((t.requests, t.fail_open, t.over_admitted), (40, 0, 0));
    assert_eq!(t.algorithm, sim::Subject::Policy);
    // client-0 holds the policy's own limits: the tighter (4) binds; client-1 is premium: 9.
    let admitted = |key: &str| {
        records
            .iter()
            .filter(|r| &*r.key == key && r.allowed)
            .count()
    };
    assert_eq!(admitted("client-0"), 4);
    assert_eq!(admitted("client-1"), 9);
    for r in &records {
        let tier = if &*r.key == "client-1" { "premium" } else { "" };
        assert_eq!(&*r.tier, tier, "{r:?}");
        assert_eq!(r.would_deny, !r.allowed, "{r:?}");
        if !r.allowed {
            let binding = if &*r.key == "client-1" {
                "burst"
            } else {
                "long"
            };
            assert_eq!(&*r.binding, binding, "{r:?}");
        }
    }
    let sent = |key: &str| records.iter().filter(|r| &*r.key == key).count() as u64;
    // The seeded schedule sends each key more than either allowance.
    assert!(sent("client-0") > 4 && sent("client-1") > 9);
    assert_eq!(t.allowed, 13);
    assert_eq!(t.denied, 27);
    assert_eq!(t.denied_by.get("long"), Some(&(sent("client-0") - 4)));
    assert_eq!(t.denied_by.get("burst"), Some(&(sent("client-1") - 9)));
    assert_eq!(t.tier_keys.get(""), Some(&1));
    assert_eq!(t.tier_keys.get("premium"), Some(&1));
    assert_eq!(t.shadow_denied, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_decides_as_enforcement_on_the_same_traffic_and_admits() {
    let server = redis();
    let limiter = limiter(&server, "sim-policy-shadow");
    let file = r#"
[[policies]]
name = "enforced"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 3
  refill_per_sec = 2
  [[policies.limits]]
  name = "window"
  algorithm = "fixed-window"
  limit = 30
  window_ms = 60000
[[policies]]
name = "shadowed"
mode = "shadow"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 3
  refill_per_sec = 2
  [[policies.limits]]
  name = "window"
  algorithm = "fixed-window"
  limit = 30
  window_ms = 60000
"#;
    let mut spec = SimSpec::policies(policies(file), sequential(300, 3)).expect("spec");
    spec.scope = Some(SimSpec::fresh_scope("shadow"));
    let dir = tempdir("sim-policy-shadow");
    let path = dir.join("records.csv");
    let mut csv = CsvSink::create(&path).expect("csv");
    let report = sim::run(
        &limiter,
        &spec,
        Some(&mut csv),
        &NoObserver,
        CancellationToken::new(),
    )
    .await
    .expect("runs");
    let (enforced, shadowed) = (&report.targets[0], &report.targets[1]);
    assert!(enforced.denied > 0, "the traffic must meet the limits");
    // Both decide each request at the same time, so the same state decides the same way.
    assert_eq!(shadowed.denied, 0);
    assert_eq!(shadowed.allowed, 300);
    assert_eq!(shadowed.shadow_denied, enforced.denied);
    assert_eq!(shadowed.denied_by, enforced.denied_by);
    assert_eq!(shadowed.keys_denied, enforced.keys_denied);
    assert_eq!(shadowed.over_admitted, 0);
    let rows = read_records(&path).expect("the CSV reads back");
    assert_eq!(rows.len(), 600);
    for (e, s) in rows
        .iter()
        .filter(|r| &*r.rule == "enforced")
        .zip(rows.iter().filter(|r| &*r.rule == "shadowed"))
    {
        assert_eq!((e.seq, &e.key), (s.seq, &s.key));
        assert_eq!(e.would_deny, s.would_deny, "{e:?} {s:?}");
        assert_eq!(e.binding, s.binding, "{e:?} {s:?}");
        assert!(s.allowed);
        assert_eq!(e.allowed, !e.would_deny);
    }
}

#[test]
fn policies_side_by_side_need_names_of_their_own_and_costs_every_tier_admits() {
    let twice = [policies(STACK), policies(STACK)].concat();
    let err = SimSpec::policies(twice, sequential(1, 1)).expect_err("refused");
    assert!(err.to_string().contains("\"api\" is named twice"), "{err}");
    let workload = Workload {
        cost: 7,
        ..sequential(1, 1)
    };
    let spec = SimSpec::policies(policies(STACK), workload).expect("spec");
    let err = spec
        .validate()
        .expect_err("a cost of 7 never passes limit burst (6)");
    assert!(
        err.to_string()
            .contains("from 1 to 6 (policy \"api\", limit \"burst\"'s limit)"),
        "{err}"
    );
}
