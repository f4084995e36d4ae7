//! Policies on a real Redis Cluster (3 masters, no replicas: forming it takes seconds): every
//! key of a policy lies in its slot, so a stack is one script call on one master; stacks of
//! policies spread over the masters admit exactly their tightest limit under concurrent
//! connections; shadow denials are counted; many policies' telemetry is read in one call.

use crate::common;

use ratelockr::embedded_cluster::EmbeddedCluster;
use ratelockr::rule::Algorithm;
use ratelockr::{Limit, Limiter, Mode, Policy, PolicyOutcome};

fn limiter(url: &str, name: &str) -> Limiter {
    common::limiter_with(url, common::options(name))
}

fn policy(name: &str, mode: Mode) -> Policy {
    let limit = |n: &str, a| Limit::new(n, a).expect("valid");
    Policy::new(
        name,
        vec![
            limit(
                "bucket",
                Algorithm::TokenBucket {
                    capacity: 9,
                    refill_per_sec: 0.001,
                },
            ),
            limit(
                "log",
                Algorithm::SlidingWindowLog {
                    limit: 7,
                    window_ms: 3_600_000,
                },
            ),
            limit(
                "window",
                Algorithm::FixedWindow {
                    limit: 5,
                    window_ms: 3_600_000,
                },
            ),
            limit(
                "gcra",
                Algorithm::Gcra {
                    limit: 8,
                    window_ms: 3_600_000,
                    burst: 8,
                },
            ),
            limit(
                "counter",
                Algorithm::SlidingWindowCounter {
                    limit: 6,
                    window_ms: 3_600_000,
                },
            ),
        ],
    )
    .expect("valid")
    .with_mode(mode)
}

#[test]
fn policies_on_a_three_master_cluster() {
    let cluster = EmbeddedCluster::start(3, 0).expect("a 3-master cluster forms");
    let url = cluster.url();
    let runtime = common::runtime();
    runtime.block_on(async {
        let base = limiter(&url, "pol-cluster");
        let names: Vec<String> = (0..12).map(|i| format!("policy-{i}.v1")).collect();
        let policies: Vec<Policy> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                policy(
                    n,
                    if i % 3 == 0 {
                        Mode::Shadow
                    } else {
                        Mode::Enforce
                    },
                )
            })
            .collect();
        // Every key a policy builds hashes to its policy's slot.
        let mut conn = base.connection();
        for p in &policies {
            let slot: i64 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(format!("{{{}}}", p.name()))
                .query_async(&mut conn)
                .await
                .expect("KEYSLOT");
            let mut keys: Vec<String> = p
                .limits()
                .iter()
                .map(|l| {
                    base.keys()
                        .policy_limit(l.kind(), p.name(), l.name(), "c:1")
                })
                .collect();
            for outcome in PolicyOutcome::COUNTED {
                keys.push(base.keys().policy_stats(p.name(), 1_700_000_000, outcome));
            }
            for key in keys {
                let s: i64 = redis::cmd("CLUSTER")
                    .arg("KEYSLOT")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .expect("KEYSLOT");
                assert_eq!(s, slot, "{key} leaves {}'s slot", p.name());
            }
        }
        // 8 connections, each sending 4 requests for one client under every policy at once.
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let own = base.with_own_connection();
            let policies = policies.clone();
            tasks.push(tokio::spawn(async move {
                let mut decided = Vec::new();
                for _ in 0..4 {
                    for p in &policies {
                        let d = own.check_policy_cost(p, "c:1", 1).await.expect("valid");
                        assert!(!d.fail_open(), "{d:?}: {:?}", own.ledger().failures());
                        decided.push((p.name().to_string(), d));
                    }
                }
                decided
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.expect("task ran"));
        }
        for p in &policies {
            let mine: Vec<_> = all
                .iter()
                .filter(|(n, _)| n == p.name())
                .map(|(_, d)| d)
                .collect();
            assert_eq!(mine.len(), 32);
            let passed = mine.iter().filter(|d| !d.would_deny()).count();
            assert_eq!(passed, 5, "{}: exactly the fixed window's limit", p.name());
            let admitted = mine.iter().filter(|d| d.allowed).count();
            let want = if p.mode() == Mode::Shadow { 32 } else { 5 };
            assert_eq!(admitted, want, "{}", p.name());
        }
        // Every policy's last 30 seconds in one call, over every master.
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let stats = base
            .policy_stats(&refs)
            .await
            .expect("one read of many policies");
        for (p, series) in policies.iter().zip(&stats) {
            let sum = series.iter().fold((0, 0, 0), |(a, d, s), x| {
                (a + x.allowed, d + x.denied, s + x.shadow_denied)
            });
            let want = if p.mode() == Mode::Shadow {
                (5, 0, 27)
            } else {
                (5, 27, 0)
            };
            assert_eq!(sum, want, "{}", p.name());
        }
    });
}
