//! The engine on a real Redis Cluster: 3 masters with a replica each, started once for this
//! binary (forming a cluster takes seconds), on free loopback ports, and torn down at the end.
//! The scenarios run one after the other on it, each under a unique prefix.

mod common;

use ratelockr::embedded_cluster::{query_node, EmbeddedCluster};
use ratelockr::rule::AlgorithmKind;
use ratelockr::{Conn, FailureKind, KeySpace, Limiter, Outcome, Rule};
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn the_engine_on_a_three_master_cluster() {
    let mut cluster = EmbeddedCluster::start(3, 1).expect("a 3-master, 3-replica cluster forms");
    let url = cluster.url();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        every_key_the_engine_builds_shares_its_rules_slot(&url).await;
        exactly_limit_admitted_per_key_under_16_connections(&url).await;
        noscript_is_recovered_with_a_replica_down(&url, &mut cluster).await;
    });
    cli_check_and_simulate_work_on_the_cluster(&url);
}

fn limiter(url: &str, name: &str) -> Limiter {
    common::limiter_with(url, common::options(name))
}

async fn keyslot(conn: &mut Conn, key: &str) -> i64 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(conn)
        .await
        .expect("CLUSTER KEYSLOT")
}

/// Rule names spread over the slot space: the hash tag is the rule, so keys spread by rule.
fn rule_names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("rule-{i}.v2")).collect()
}

async fn every_key_the_engine_builds_shares_its_rules_slot(url: &str) {
    // A name that could break the tag is refused before any key is built.
    for bad in ["a{b", "a}b", "{a}", ""] {
        assert!(Rule::fixed_window(bad, 1, 1000).is_err(), "{bad:?}");
    }
    let limiter = limiter(url, "slots");
    let mut conn = limiter.connection();
    let keys = limiter.keys().clone();
    let replay = KeySpace::new(format!("{}:replay:0123456789ab", keys.prefix()));
    for rule in rule_names(8) {
        let slot = keyslot(&mut conn, &format!("{{{rule}}}")).await;
        let mut built = Vec::new();
        for client in ["user:42", "we{ird}key", "}", "run-7f3a:user:42"] {
            for kind in AlgorithmKind::ALL {
                built.push(keys.limiter_for(kind, &rule, client));
                built.push(replay.limiter_for(kind, &rule, client));
            }
            built.push(keys.naive(&rule, client));
        }
        for outcome in [Outcome::Allowed, Outcome::Denied] {
            built.push(keys.stats(&rule, 1_700_000_000, outcome));
        }
        for key in &built {
            assert_eq!(
                keyslot(&mut conn, key).await,
                slot,
                "{key} leaves {rule}'s slot"
            );
        }
    }
}

async fn exactly_limit_admitted_per_key_under_16_connections(url: &str) {
    const LIMIT: u64 = 5;
    const CLIENTS: usize = 4;
    let base = limiter(url, "exact");
    let rules: Vec<Rule> = rule_names(60)
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let rule = match AlgorithmKind::ALL[i % 5] {
                AlgorithmKind::TokenBucket => Rule::token_bucket(name, LIMIT, 0.001),
                AlgorithmKind::Gcra => Rule::gcra(name, LIMIT, 3_600_000, LIMIT),
                AlgorithmKind::SlidingWindowLog => Rule::sliding_window_log(name, LIMIT, 3_600_000),
                AlgorithmKind::SlidingWindowCounter => {
                    Rule::sliding_window_counter(name, LIMIT, 3_600_000)
                }
                AlgorithmKind::FixedWindow => Rule::fixed_window(name, LIMIT, 3_600_000),
            };
            rule.expect("valid")
        })
        .collect();
    // The rules' slots reach every master.
    let mut conn = base.connection();
    let topology = conn
        .topology()
        .await
        .expect("CLUSTER NODES")
        .expect("a cluster");
    // The topology with each node's round trip: 3 masters, 3 replicas, all answering.
    let nodes = conn
        .topology_with_rtt(std::time::Duration::from_secs(5))
        .await
        .expect("topology")
        .expect("a cluster");
    assert_eq!(nodes.len(), 6);
    let masters = nodes
        .iter()
        .filter(|n| n.node.role == ratelockr::cluster::NodeRole::Master)
        .count();
    assert_eq!(masters, 3);
    for n in &nodes {
        assert!(n.rtt_us.is_ok(), "{n:?}");
    }
    let mut masters_hit = BTreeSet::new();
    for rule in &rules {
        let slot = keyslot(&mut conn, &format!("{{{}}}", rule.name())).await as u16;
        let owner = topology
            .iter()
            .find(|n| n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .expect("every slot is served");
        masters_hit.insert(owner.id.clone());
    }
    assert_eq!(masters_hit.len(), 3, "the rules spread over all masters");

    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let limiter = base.with_own_connection();
            let rules = rules.clone();
            tokio::spawn(async move {
                let mut admitted = BTreeMap::new();
                for rule in &rules {
                    for client in 0..CLIENTS {
                        let d = limiter
                            .check(rule, &format!("c{client}"))
                            .await
                            .expect("decides");
                        assert!(!d.fail_open, "{} c{client} failed open", rule.name());
                        *admitted
                            .entry((rule.name().to_string(), client))
                            .or_insert(0) += u64::from(d.allowed);
                    }
                }
                admitted
            })
        })
        .collect();
    let mut total: BTreeMap<(String, usize), u64> = BTreeMap::new();
    for task in tasks {
        for (key, n) in task.await.expect("task") {
            *total.entry(key).or_insert(0) += n;
        }
    }
    assert_eq!(total.len(), rules.len() * CLIENTS);
    for (key, admitted) in &total {
        assert_eq!(*admitted, LIMIT, "{key:?}");
    }
    assert_eq!(base.ledger().failures_total(), 0);

    // A rule's stats: one pipelined read, all its counters in one slot.
    let points = base
        .stats(rules[0].name())
        .await
        .expect("stats on a cluster");
    let allowed: u64 = points.iter().map(|p| p.allowed).sum();
    assert_eq!(allowed, LIMIT * CLIENTS as u64);

    // Every key written sits in its rule's slot, and reset finds them on every master.
    let written = conn
        .scan_match(&format!("{}:*", base.keys().prefix()))
        .await
        .expect("SCAN every master");
    assert!(written.len() >= rules.len() * CLIENTS, "{}", written.len());
    for key in &written {
        let rule = rules
            .iter()
            .find(|r| key.contains(&format!("{{{}}}", r.name())))
            .expect("every key names its rule");
        let slot = keyslot(&mut conn, &format!("{{{}}}", rule.name())).await;
        assert_eq!(keyslot(&mut conn, key).await, slot, "{key}");
    }
    let mut deleted = 0;
    for rule in &rules {
        deleted += base.reset(rule.name(), None).await.expect("reset");
    }
    assert_eq!(deleted as usize, rules.len() * CLIENTS);
    let d = base.check(&rules[0], "c0").await.expect("decides");
    assert!(d.allowed && d.remaining == LIMIT as i64 - 1, "{d:?}");
}

/// SCRIPT FLUSH on every node, with a replica down: a SCRIPT LOAD sent to all nodes would
/// fail, so the decisions prove that NOSCRIPT is recovered on the node that answered.
async fn noscript_is_recovered_with_a_replica_down(url: &str, cluster: &mut EmbeddedCluster) {
    let limiter = limiter(url, "noscript");
    let rules: Vec<Rule> = rule_names(12)
        .into_iter()
        .map(|n| Rule::gcra(n, 100, 60_000, 100).expect("valid"))
        .collect();
    for rule in &rules {
        assert!(!limiter.check(rule, "k").await.expect("decides").fail_open);
    }
    let topology = limiter
        .connection()
        .topology()
        .await
        .expect("CLUSTER NODES")
        .expect("a cluster");
    let replica = topology
        .iter()
        .find(|n| n.role == ratelockr::cluster::NodeRole::Replica)
        .expect("a replica");
    assert!(cluster.kill(replica.port));
    // Every node forgets every script; nothing loads them back beforehand.
    for address in cluster.addresses() {
        let port: u16 = address
            .rsplit_once(':')
            .expect("host:port")
            .1
            .parse()
            .expect("a port");
        assert_eq!(
            query_node(port, &["SCRIPT", "FLUSH"]).expect("SCRIPT FLUSH"),
            "OK"
        );
    }
    for rule in &rules {
        let d = limiter.check(rule, "k").await.expect("decides");
        assert!(!d.fail_open && d.allowed, "{} {d:?}", rule.name());
        assert_eq!(d.remaining, 98, "{}", rule.name());
    }
    assert_eq!(common::failures_of(&limiter, FailureKind::NoScript), 0);
    assert_eq!(limiter.ledger().failures_total(), 0);
}

fn cli_check_and_simulate_work_on_the_cluster(url: &str) {
    let prefix = common::unique("cli");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
            .args([
                "--redis",
                url,
                "--prefix",
                &prefix,
                "--deadline-ms",
                "20000",
                "--json",
            ])
            .args(args)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON on stdout")
    };
    for expected_remaining in [1, 0] {
        let d = run(&[
            "check",
            "--key",
            "k",
            "--algorithm",
            "fixed-window",
            "--limit",
            "2",
            "--window-ms",
            "60000",
        ]);
        assert_eq!(d["fail_open"], false, "{d}");
        assert_eq!(d["remaining"], expected_remaining, "{d}");
    }
    let summary = run(&[
        "simulate",
        "--compare",
        "--limit",
        "5",
        "--window-ms",
        "60000",
        "--requests",
        "80",
        "--rps",
        "0",
        "--servers",
        "4",
    ]);
    let algorithms = summary["algorithms"].as_array().expect("a summary each");
    assert_eq!(algorithms.len(), 5, "{summary}");
    for a in algorithms {
        assert_eq!(a["fail_open"], 0, "{a}");
        assert_eq!(a["over_admitted"], 0, "{a}");
    }
    // Redis's own cost, summed over the masters: at least the run's 5 × 80 script calls.
    let calls = summary["redis_cost"]["calls"]
        .as_u64()
        .expect("Redis's cost");
    assert!(calls >= 400, "{summary}");
}
