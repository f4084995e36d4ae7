//! Decisions sent straight to their slot's master (`src/slot_route.rs`) while the slot moves
//! and its master fails: ASK while the slot is migrating, MOVED once it has moved, and a
//! master killed and replaced by its replica. One rule, one client, a limit that is not
//! reached until the end: every decision must be made (none fails open, except while the
//! killed master's slot has no master at all), counted once, and the one past the limit
//! denied.

use crate::common;

use ratelockr::cluster::ClusterNode;
use ratelockr::embedded_cluster::EmbeddedCluster;
use ratelockr::{Conn, Limiter, LimiterOptions, Rule};
use std::time::{Duration, Instant};

const LIMIT: u64 = 60;

#[test]
fn decisions_follow_their_slot_through_a_migration_and_a_failover() {
    let mut cluster = EmbeddedCluster::start(3, 1).expect("a 3-master, 3-replica cluster forms");
    let url = cluster.url();
    let runtime = common::runtime();
    runtime.block_on(async {
        // Without telemetry a decision touches one key. With its per-minute counters, a call
        // sent to the importing master while a key is missing there meets TRYAGAIN (Redis's
        // rule for multi-key calls mid-migration), which the reshard bench measures.
        let options = LimiterOptions {
            telemetry: false,
            ..common::options("routing")
        };
        let limiter = common::limiter_with(&url, options);
        let rule = Rule::fixed_window("routed", LIMIT, Duration::from_secs(3600)).expect("valid");
        let mut conn = limiter.connection();
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg("{routed}")
            .query_async::<i64>(&mut conn)
            .await
            .expect("CLUSTER KEYSLOT") as u16;
        let mut admitted = 0;
        admitted += decide(&limiter, &rule, 10, "before").await;

        // ASK: the slot is migrating and its keys are already on the target.
        let masters = masters_of(&mut conn).await;
        let source = owner(&masters, slot).clone();
        let target = masters
            .iter()
            .find(|m| m.id != source.id)
            .expect("another master")
            .clone();
        node(
            target.port,
            &[
                "CLUSTER",
                "SETSLOT",
                &slot.to_string(),
                "IMPORTING",
                &source.id,
            ],
        );
        node(
            source.port,
            &[
                "CLUSTER",
                "SETSLOT",
                &slot.to_string(),
                "MIGRATING",
                &target.id,
            ],
        );
        migrate_keys(&source, &target, slot);
        admitted += decide(&limiter, &rule, 10, "while the slot migrates (ASK)").await;

        // MOVED: the slot now belongs to the target; the router's map still names the source.
        for m in &masters {
            node(
                m.port,
                &["CLUSTER", "SETSLOT", &slot.to_string(), "NODE", &target.id],
            );
        }
        admitted += decide(&limiter, &rule, 10, "after the slot moved (MOVED)").await;
        assert_eq!(
            owner(&masters_settled(&mut conn, slot, &target.id).await, slot).id,
            target.id
        );
        admitted += decide(&limiter, &rule, 10, "on the new master").await;

        // Failover: the slot's master is killed; its replica, in sync, takes over. WAIT says
        // how many replicas hold every write so far: on a loaded machine a replica's link can
        // be down for a moment (a resync), and a master killed then leaves a replica without
        // the counts, which is Redis's asynchronous replication, not the routing under test.
        let synced = Instant::now();
        while replicas_in_sync(target.port) < 1 {
            assert!(
                synced.elapsed() < Duration::from_secs(30),
                "the slot's new master has no replica in sync"
            );
        }
        assert!(cluster.kill(target.port));
        let started = Instant::now();
        loop {
            let d = limiter.check(&rule, "client").await.expect("decides");
            if !d.fail_open() {
                assert!(d.allowed, "after the failover: {d:?}");
                admitted += 1;
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no master took over the slot"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let masters = masters_of(&mut conn).await;
        assert_ne!(owner(&masters, slot).id, target.id, "a replica took over");
        while admitted < LIMIT {
            let d = limiter.check(&rule, "client").await.expect("decides");
            assert!(!d.fail_open() && d.allowed, "after the failover: {d:?}");
            admitted += 1;
        }
        // Every admission was counted once, on whichever master held the slot.
        let d = limiter.check(&rule, "client").await.expect("decides");
        assert!(!d.fail_open() && !d.allowed, "over the limit: {d:?}");
    });
}

/// `n` decisions, each made and admitted.
async fn decide(limiter: &Limiter, rule: &Rule, n: u64, what: &str) -> u64 {
    for _ in 0..n {
        let d = limiter.check(rule, "client").await.expect("decides");
        assert!(
            !d.fail_open(),
            "{what}: {d:?} {:?}",
            limiter.ledger().failures()
        );
        assert!(d.allowed, "{what}: {d:?}");
    }
    n
}

/// One command to one node by port.
/// `WAIT 1 1000` on the node at `port`: how many of its replicas acknowledged every write.
fn replicas_in_sync(port: u16) -> i64 {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("URL");
    let mut conn = client.get_connection().expect("connect to the node");
    redis::cmd("WAIT")
        .arg(1)
        .arg(1000)
        .query(&mut conn)
        .unwrap_or_else(|e| panic!("WAIT on {port}: {e}"))
}

fn node(port: u16, args: &[&str]) {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("URL");
    let mut conn = client.get_connection().expect("connect to the node");
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    let _: redis::Value = cmd
        .query(&mut conn)
        .unwrap_or_else(|e| panic!("{args:?} on {port}: {e}"));
}

async fn masters_of(conn: &mut Conn) -> Vec<ClusterNode> {
    conn.masters()
        .await
        .expect("CLUSTER NODES")
        .expect("a cluster")
}

fn owner(masters: &[ClusterNode], slot: u16) -> &ClusterNode {
    masters
        .iter()
        .find(|m| m.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
        .expect("the slot is served")
}

/// The masters, once the node the cluster connection asks agrees the slot is `owner`'s.
async fn masters_settled(conn: &mut Conn, slot: u16, owner_id: &str) -> Vec<ClusterNode> {
    let started = Instant::now();
    loop {
        let now = masters_of(conn).await;
        if owner(&now, slot).id == owner_id || started.elapsed() > Duration::from_secs(10) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// MIGRATEs every key of `slot` from `source` to `target`.
fn migrate_keys(source: &ClusterNode, target: &ClusterNode, slot: u16) {
    let client = redis::Client::open(format!("redis://127.0.0.1:{}", source.port)).expect("URL");
    let mut conn = client.get_connection().expect("connect to the source");
    let keys: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(1000)
        .query(&mut conn)
        .expect("GETKEYSINSLOT");
    assert!(!keys.is_empty(), "the rule's keys are in its slot");
    let _: () = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(target.port)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(&keys)
        .query(&mut conn)
        .expect("MIGRATE");
}
