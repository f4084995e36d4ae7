//! The engine on a real Redis Cluster: 3 masters with a replica each, started once for this
//! binary (forming a cluster takes seconds), on free loopback ports, and torn down at the end.
//! The scenarios run one after the other on it, each under a unique prefix.

use crate::common;
use crate::helper_cli as cli;

use ratelockr::embedded_cluster::{query_node, EmbeddedCluster};
use ratelockr::rule::AlgorithmKind;
use ratelockr::{Conn, FailureKind, KeySpace, Limiter, Outcome, Rule};
use ratelockr_lab::replay::{self, LogSource, NoReplayObserver, ReplayReport, ReplaySpec};
use std::collections::{BTreeMap, BTreeSet};
use tokio_util::sync::CancellationToken;

#[test]
fn the_engine_on_a_three_master_cluster() {
    let mut cluster = EmbeddedCluster::start(3, 1).expect("a 3-master, 3-replica cluster forms");
    let url = cluster.url();
    let runtime = common::runtime();
    runtime.block_on(async {
        every_key_the_engine_builds_shares_its_rules_slot(&url).await;
        exactly_limit_admitted_per_key_under_16_connections(&url).await;
        a_replay_decides_as_on_a_single_node(&url, &cluster).await;
        bench_decides_and_redis_benchmark_calls_on_every_master(&url, &cluster).await;
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
        assert!(
            Rule::fixed_window(bad, 1, std::time::Duration::from_secs(1)).is_err(),
            "{bad:?}"
        );
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
            let rule = match AlgorithmKind::RATES[i % 5] {
                AlgorithmKind::TokenBucket => Rule::token_bucket(name, LIMIT, 0.001),
                AlgorithmKind::Gcra => {
                    Rule::gcra(name, LIMIT, std::time::Duration::from_secs(3600), LIMIT)
                }
                AlgorithmKind::SlidingWindowLog => {
                    Rule::sliding_window_log(name, LIMIT, std::time::Duration::from_secs(3600))
                }
                AlgorithmKind::SlidingWindowCounter => {
                    Rule::sliding_window_counter(name, LIMIT, std::time::Duration::from_secs(3600))
                }
                AlgorithmKind::FixedWindow => {
                    Rule::fixed_window(name, LIMIT, std::time::Duration::from_secs(3600))
                }
                AlgorithmKind::Concurrency | AlgorithmKind::Calendar => {
                    unreachable!("a rate algorithm")
                }
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
                        assert!(!d.fail_open(), "{} c{client} failed open", rule.name());
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
    assert!(
        d.allowed && d.remaining_or_unknown() == LIMIT as i64 - 1,
        "{d:?}"
    );
}

/// The ports of the cluster's running nodes.
fn ports(cluster: &EmbeddedCluster) -> Vec<u16> {
    cluster
        .addresses()
        .iter()
        .map(|a| {
            a.rsplit_once(':')
                .expect("host:port")
                .1
                .parse()
                .expect("a port")
        })
        .collect()
}

/// The masters serving `rules`' slots, by node id.
async fn masters_of(conn: &mut Conn, rules: &[Rule]) -> BTreeSet<String> {
    let topology = conn
        .topology()
        .await
        .expect("CLUSTER NODES")
        .expect("a cluster");
    let mut owners = BTreeSet::new();
    for rule in rules {
        let slot = keyslot(conn, &format!("{{{}}}", rule.name())).await as u16;
        let owner = topology
            .iter()
            .find(|n| n.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .expect("every slot is served");
        owners.insert(owner.id.clone());
    }
    owners
}

/// A log's requests from 60 keys, 10 ms apart (3,000 are 30 s of log time), a heavy head: the
/// first keys send several a second, the last one every few seconds. JSON lines.
fn log_lines(requests: u64) -> String {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut log = String::new();
    for i in 0..requests {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let u = (seed % 1000) as f64 / 1000.0;
        let key = (60.0 * u * u) as u64;
        log.push_str(&format!(
            "{{\"ts\":{},\"ip\":\"10.0.0.{key}\"}}\n",
            1_700_000_000_000 + i * 10
        ));
    }
    log
}

/// Requests in each replay's log: ten rules' limits of a few a second deny many of them.
const REQUESTS: u64 = 3_000;

/// A replay pipelines thousands of keys of many rules at once: on the cluster every decision
/// is made (pipelines split by slot, no CROSSSLOT) and each is the one a single Redis makes
/// for the same log; after SCRIPT FLUSH on every node, calls are recovered where they land.
async fn a_replay_decides_as_on_a_single_node(url: &str, cluster: &EmbeddedCluster) {
    // Ten rules, two per algorithm, over every master; limits the log's keys run into.
    let names = rule_names(10);
    let rules: Vec<Rule> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let rule = match AlgorithmKind::RATES[i % 5] {
                AlgorithmKind::TokenBucket => Rule::token_bucket(name, 5, 2.0),
                AlgorithmKind::Gcra => Rule::gcra(name, 4, std::time::Duration::from_secs(1), 6),
                AlgorithmKind::SlidingWindowLog => {
                    Rule::sliding_window_log(name, 5, std::time::Duration::from_secs(2))
                }
                AlgorithmKind::SlidingWindowCounter => {
                    Rule::sliding_window_counter(name, 5, std::time::Duration::from_secs(2))
                }
                AlgorithmKind::FixedWindow => {
                    Rule::fixed_window(name, 5, std::time::Duration::from_secs(2))
                }
                AlgorithmKind::Concurrency | AlgorithmKind::Calendar => {
                    unreachable!("a rate algorithm")
                }
            };
            rule.expect("valid")
        })
        .collect();
    let cluster_limiter = limiter(url, "replay");
    let mut conn = cluster_limiter.connection();
    assert_eq!(masters_of(&mut conn, &rules).await.len(), 3);

    let log = log_lines(REQUESTS);
    let spec = ReplaySpec {
        rules: rules.clone(),
        batch: 512,
        ..ReplaySpec::default()
    };
    let run = |limiter: Limiter| {
        let (log, spec) = (log.clone(), spec.clone());
        async move {
            let report = replay::run(
                &limiter,
                &LogSource::Text(log),
                &spec,
                None,
                &NoReplayObserver,
                CancellationToken::new(),
            )
            .await
            .expect("replays");
            (report, limiter)
        }
    };
    let counts = |report: &ReplayReport| -> Vec<(String, u64, u64, u64)> {
        report
            .rules
            .iter()
            .map(|r| (r.rule.clone(), r.allowed, r.denied, r.fail_open))
            .collect()
    };
    let (on_cluster, cluster_limiter) = run(cluster_limiter).await;
    assert_eq!(cluster_limiter.ledger().failures_total(), 0);
    let single = common::redis();
    let (on_single, _) = run(common::limiter(&single, "replay")).await;
    assert_eq!(on_cluster.requests, REQUESTS);
    for (rule, allowed, denied, fail_open) in counts(&on_cluster) {
        assert_eq!(fail_open, 0, "{rule}");
        assert_eq!(allowed + denied, REQUESTS, "{rule}");
        assert!(denied > 0 && allowed > 0, "{rule}: {allowed} / {denied}");
    }
    assert_eq!(counts(&on_cluster), counts(&on_single));
    // The run's private keys are gone from every master.
    let left = conn
        .scan_match(&format!("{}:replay:*", cluster_limiter.keys().prefix()))
        .await
        .expect("SCAN every master");
    assert!(left.is_empty(), "{left:?}");

    // Lanes that have sent every script meet NOSCRIPT everywhere after a flush of every node.
    let lanes = replay::decide::Lanes::start(&cluster_limiter, 1)
        .await
        .expect("lanes");
    let keys = cluster_limiter.keys().clone();
    let commands = |round: u64| -> Vec<redis::Cmd> {
        let mut commands = Vec::new();
        for i in 0..20u64 {
            for rule in &rules {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(ratelockr::scripts::script(AlgorithmKind::Gcra).get_hash())
                    .arg(1)
                    .arg(keys.limiter_for(AlgorithmKind::Gcra, rule.name(), "k"))
                    .arg(1000)
                    .arg(3_600_000)
                    .arg(1000)
                    .arg(1_700_000_000_000u64 + round * 20 + i)
                    .arg(1);
                commands.push(cmd);
            }
        }
        commands
    };
    for round in 0..2u64 {
        if round == 1 {
            for port in ports(cluster) {
                assert_eq!(query_node(port, &["SCRIPT", "FLUSH"]).expect("flush"), "OK");
            }
        }
        let outcomes = lanes
            .submit(0, commands(round))
            .await
            .await
            .expect("a reply");
        // Each rule's key took one call per request, in order: 999, 998, ... across rounds.
        for (n, outcome) in outcomes.iter().enumerate() {
            // The script's four integers: allowed, remaining, retry, reset.
            let remaining = match outcome.as_ref().expect("decided") {
                redis::Value::Array(items) => match items[1] {
                    redis::Value::Int(n) => n,
                    ref other => panic!("remaining is not an integer: {other:?}"),
                },
                other => panic!("not the script's reply: {other:?}"),
            };
            let i = (n / rules.len()) as i64 + round as i64 * 20;
            assert_eq!(remaining, 999 - i, "call {n} of round {round}");
        }
    }
}

/// `bench` on a cluster: the engine decides for a copy of a rule on each master, and
/// redis-benchmark `--cluster` runs the same script on every master, found in each one's cache
/// (put there by EVAL, never SCRIPT LOAD), with no call failing.
async fn bench_decides_and_redis_benchmark_calls_on_every_master(
    url: &str,
    cluster: &EmbeddedCluster,
) {
    use ratelockr_cli::bench::{bench_rule, ceiling, engine::EngineBench};
    let limiter = limiter(url, "bench");
    let rule = bench_rule(AlgorithmKind::TokenBucket).expect("rule");
    let mut conn = limiter.connection();
    let rules = ceiling::cluster_rules(&mut conn, &rule)
        .await
        .expect("a tag per master");
    assert_eq!(rules.len(), 3, "{rules:?}");
    assert_eq!(masters_of(&mut conn, &rules).await.len(), 3);
    let report = EngineBench {
        rules,
        concurrency: 8,
        keys: 20,
        warmup: std::time::Duration::from_millis(100),
        duration: std::time::Duration::from_millis(500),
        attack: None,
    }
    .run(&limiter)
    .await
    .expect("bench runs");
    assert!(report.decisions > 0, "{report:?}");
    assert_eq!(report.errors, 0, "{report:?}");
    assert!(report.redis_cpu_us_per_decision.is_some(), "{report:?}");

    let rb = ceiling::RedisBenchmark::locate(limiter.target()).expect("redis-benchmark");
    assert!(rb.is_cluster());
    let tag_rule = Rule::new(ceiling::CLUSTER_TAG_RULE, *rule.algorithm()).expect("valid");
    let (keys, args) = ceiling::engine_command(&tag_rule, limiter.keys(), true);
    assert!(keys.iter().all(|k| k.contains("{tag}")), "{keys:?}");
    for port in ports(cluster) {
        query_node(port, &["CONFIG", "RESETSTAT"]).expect("RESETSTAT");
    }
    let source = ratelockr::scripts::source(AlgorithmKind::TokenBucket);
    let sha = ceiling::cache_script(&mut conn, source, &keys, &args)
        .await
        .expect("cached on every master");
    let figure = rb
        .evalsha("token_bucket", &sha, &keys, &args, 3_000, 100)
        .await
        .expect("redis-benchmark --cluster runs");
    assert!(figure.calls_per_sec > 0.0, "{figure:?}");
    assert!(figure.command.contains("--cluster"), "{}", figure.command);
    for master in conn.masters().await.expect("masters").expect("a cluster") {
        let stats = query_node(master.port, &["INFO", "commandstats"]).expect("INFO");
        let evalsha = stats
            .lines()
            .find(|l| l.starts_with("cmdstat_evalsha:"))
            .unwrap_or_else(|| panic!("{} ran no EVALSHA: {stats}", master.address()));
        assert!(
            evalsha.contains("failed_calls=0"),
            "{}: {evalsha}",
            master.address()
        );
        assert!(!stats.contains("cmdstat_script|load"), "{stats}");
    }
}

/// SCRIPT FLUSH on every node, with a replica down: a SCRIPT LOAD sent to all nodes would
/// fail, so the decisions prove that NOSCRIPT is recovered on the node that answered.
async fn noscript_is_recovered_with_a_replica_down(url: &str, cluster: &mut EmbeddedCluster) {
    let limiter = limiter(url, "noscript");
    let rules: Vec<Rule> = rule_names(12)
        .into_iter()
        .map(|n| Rule::gcra(n, 100, std::time::Duration::from_secs(60), 100).expect("valid"))
        .collect();
    for rule in &rules {
        assert!(!limiter.check(rule, "k").await.expect("decides").fail_open());
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
        assert!(!d.fail_open() && d.allowed, "{} {d:?}", rule.name());
        assert_eq!(d.remaining, 98, "{}", rule.name());
    }
    assert_eq!(common::failures_of(&limiter, FailureKind::NoScript), 0);
    assert_eq!(limiter.ledger().failures_total(), 0);
}

fn cli_check_and_simulate_work_on_the_cluster(url: &str) {
    let prefix = common::unique("cli");
    let run = |args: &[&str]| {
        let global = [
            "--redis",
            url,
            "--prefix",
            &prefix,
            "--deadline-ms",
            "20000",
            "--json",
        ];
        cli::json(&cli::ratelockr(&[&global[..], args].concat()))
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
    // replay of a log with a sweep: three rules (three hash tags) in one pass.
    let dir = common::tempdir("cluster-replay");
    let log = dir.join("log.jsonl");
    std::fs::write(&log, log_lines(REQUESTS)).expect("the log is written");
    let replayed = run(&[
        "replay",
        "--log",
        log.to_str().expect("a UTF-8 path"),
        "--algorithm",
        "token-bucket",
        "--capacity",
        "20",
        "--refill-per-sec",
        "2",
        "--sweep",
        "capacity=10,40",
    ]);
    assert_eq!(replayed["requests"], REQUESTS, "{replayed}");
    assert_eq!(replayed["rules"][0]["fail_open"], 0, "{replayed}");
    assert!(
        replayed["rules"][0]["denied"].as_u64().expect("denied") > 0,
        "{replayed}"
    );
    let sweep = replayed["sweep"].as_array().expect("the sweep");
    assert_eq!(sweep.len(), 2, "{replayed}");
    for point in sweep {
        assert_eq!(point["fail_open"], 0, "{point}");
    }
    // Redis's own cost, summed over the masters: at least the run's 5 × 80 script calls.
    let calls = summary["redis_cost"]["calls"]
        .as_u64()
        .expect("Redis's cost");
    assert!(calls >= 400, "{summary}");

    // `topology`: the three masters serve every slot between them, each answers a PING, and
    // every replica names a master that is listed.
    let t = run(&["topology"]);
    assert_eq!(t["cluster"], true, "{t}");
    let nodes = t["nodes"].as_array().expect("nodes");
    let masters: Vec<&serde_json::Value> = nodes.iter().filter(|n| n["role"] == "master").collect();
    assert_eq!(masters.len(), 3, "{t}");
    let served: u64 = masters
        .iter()
        .flat_map(|m| m["slots"].as_array().expect("slots"))
        .map(|r| r[1].as_u64().expect("end") - r[0].as_u64().expect("start") + 1)
        .sum();
    assert_eq!(served, 16384, "{t}");
    assert!(masters.iter().all(|m| m["rtt_ms"].is_number()), "{t}");
    let addresses: Vec<&str> = masters
        .iter()
        .filter_map(|m| m["address"].as_str())
        .collect();
    for replica in nodes.iter().filter(|n| n["role"] == "replica") {
        let follows = replica["follows"]
            .as_str()
            .expect("a replica names its master");
        assert!(addresses.contains(&follows), "{replica} in {t}");
    }
}
