//! Many connections, and many processes, hammering one key admit exactly the limit.

use crate::common;

use crate::common::{query, redis};
use ratelockr::{Decision, Limiter, Rule};
use std::process::{Command, Stdio};

const TASKS: usize = 16;
const PER_TASK: usize = 20;

/// `TASKS` tasks, each on its own connection (like separate app servers), each sending
/// `PER_TASK` requests for the same client at once; returns (allowed, denied).
async fn hammer(limiter: &Limiter, rule: &Rule) -> (usize, usize) {
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let own = limiter.with_own_connection();
        let rule = rule.clone();
        tasks.push(tokio::spawn(async move {
            let mut decisions: Vec<Decision> = Vec::new();
            for _ in 0..PER_TASK {
                decisions.push(own.check(&rule, "hot").await.expect("valid request"));
            }
            // Keep the connection open until every task is done, so they overlap.
            (decisions, own)
        }));
    }
    let mut all = Vec::new();
    let mut owners = Vec::new();
    for task in tasks {
        let (decisions, own) = task.await.expect("task ran");
        all.extend(decisions);
        owners.push(own);
    }
    let info: String = query(limiter, redis::cmd("INFO").arg("clients")).await;
    let clients: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("connected_clients in INFO");
    assert!(
        clients > TASKS,
        "expected one connection per task, Redis saw {clients}"
    );
    assert!(
        all.iter()
            .all(|d| !d.fail_open() && d.remaining_or_unknown() >= 0),
        "some decisions failed open: {:?}",
        limiter.ledger().failures()
    );
    let allowed = all.iter().filter(|d| d.allowed).count();
    (allowed, all.len() - allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn token_bucket_admits_exactly_its_capacity() {
    let server = redis();
    let limiter = common::limiter(&server, "cc-tb");
    // 0.001 tokens a second: nothing refills while the test runs.
    let rule = Rule::token_bucket("tb", 50, 0.001).expect("valid rule");
    assert_eq!(hammer(&limiter, &rule).await, (50, TASKS * PER_TASK - 50));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fixed_window_admits_exactly_its_limit() {
    let server = redis();
    let limiter = common::limiter(&server, "cc-fw");
    let rule =
        Rule::fixed_window("fw", 50, std::time::Duration::from_secs(600)).expect("valid rule");
    assert_eq!(hammer(&limiter, &rule).await, (50, TASKS * PER_TASK - 50));
    let key = limiter.keys().limiter(&rule, "hot");
    let count: u64 = query(&limiter, redis::cmd("GET").arg(&key)).await;
    assert_eq!(count, 50, "denied requests were given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sliding_window_log_admits_exactly_its_limit() {
    let server = redis();
    let limiter = common::limiter(&server, "cc-sw");
    let rule = Rule::sliding_window_log("sw", 50, std::time::Duration::from_secs(600))
        .expect("valid rule");
    assert_eq!(hammer(&limiter, &rule).await, (50, TASKS * PER_TASK - 50));
    let key = limiter.keys().limiter(&rule, "hot");
    let logged: u64 = query(&limiter, redis::cmd("ZCARD").arg(&key)).await;
    assert_eq!(logged, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gcra_admits_exactly_its_burst() {
    let server = redis();
    let limiter = common::limiter(&server, "cc-gc");
    // 50 per 10 minutes: nothing is emitted again while the test runs.
    let rule = Rule::gcra("gc", 50, std::time::Duration::from_secs(600), 50).expect("valid rule");
    assert_eq!(hammer(&limiter, &rule).await, (50, TASKS * PER_TASK - 50));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sliding_window_counter_admits_exactly_its_limit() {
    let server = redis();
    let limiter = common::limiter(&server, "cc-sc");
    // A 10-minute window: should the test straddle a window's start, the previous count weighs
    // 50 x (1 - e / 600 000), more than 49 for the first 12 s, so nothing more passes.
    let rule = Rule::sliding_window_counter("sc", 50, std::time::Duration::from_secs(600))
        .expect("valid rule");
    assert_eq!(hammer(&limiter, &rule).await, (50, TASKS * PER_TASK - 50));
}

#[test]
fn forty_cli_processes_admit_exactly_the_capacity() {
    let server = redis();
    let prefix = common::unique("cc-cli");
    let url = server.url();
    let children: Vec<_> = (0..40)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_ratelockr"))
                .args(["check", "--redis", &url, "--prefix", &prefix])
                .args(["--algorithm", "token-bucket", "--capacity", "10"])
                .args(["--refill-per-sec", "0.001", "--key", "hot", "--json"])
                // 40 processes start at once on a small machine: no decision may fail open.
                .args(["--deadline-ms", "20000"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn the CLI")
        })
        .collect();
    let mut allowed = 0;
    for child in children {
        let out = child.wait_with_output().expect("the CLI ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "exit {}: {stderr}", out.status);
        let decision: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON decision");
        assert_eq!(decision["fail_open"], false, "{decision} {stderr}");
        if decision["allowed"] == true {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 10);
}
