//! Many connections hammering one key of a stack admit exactly the tightest limit, and every
//! limit is charged exactly the admitted requests: a denial anywhere charges nothing anywhere.

use crate::common;

use crate::common::query;
use ratelockr::rule::Algorithm;
use ratelockr::{At, Decision, Limit, Limiter, Policy};

const TASKS: usize = 16;
const PER_TASK: usize = 20;

/// `TASKS` tasks, each on its own connection (like separate app servers), each sending
/// `PER_TASK` requests for the same client at once.
async fn hammer(limiter: &Limiter, policy: &Policy) -> Vec<Decision> {
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let own = limiter.with_own_connection();
        let policy = policy.clone();
        tasks.push(tokio::spawn(async move {
            let mut decisions = Vec::new();
            for _ in 0..PER_TASK {
                decisions.push(
                    own.check_policy_cost(&policy, "hot", 1)
                        .await
                        .expect("valid request"),
                );
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
    assert!(
        all.iter()
            .all(|d| !d.fail_open() && d.remaining_or_unknown() >= 0),
        "some decisions failed open: {:?}",
        limiter.ledger().failures()
    );
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stack_admits_exactly_its_tightest_limit() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-cc");
    let limit = |name: &str, algorithm| Limit::new(name, algorithm).expect("valid");
    // Nothing refills or rolls over while the test runs; the fixed window is the tightest.
    let policy = Policy::new(
        "api",
        vec![
            limit(
                "bucket",
                Algorithm::TokenBucket {
                    capacity: 50,
                    refill_per_sec: 0.001,
                },
            ),
            limit(
                "log",
                Algorithm::SlidingWindowLog {
                    limit: 40,
                    window_ms: 600_000,
                },
            ),
            limit(
                "window",
                Algorithm::FixedWindow {
                    limit: 30,
                    window_ms: 600_000,
                },
            ),
            limit(
                "gcra",
                Algorithm::Gcra {
                    limit: 45,
                    window_ms: 86_400_000,
                    burst: 45,
                },
            ),
            limit(
                "counter",
                Algorithm::SlidingWindowCounter {
                    limit: 35,
                    window_ms: 86_400_000,
                },
            ),
        ],
    )
    .expect("valid");
    let all = hammer(&limiter, &policy).await;
    let admitted: Vec<&Decision> = all.iter().filter(|d| d.allowed).collect();
    assert_eq!(admitted.len(), 30, "exactly the fixed window's limit");
    let denied: Vec<&Decision> = all.iter().filter(|d| !d.allowed).collect();
    assert!(denied.iter().all(|d| d.binding() == Some("window")));
    // Every limit was charged exactly the 30 admissions.
    let peek = limiter
        .peek_policy_at(&policy, "hot", At::ServerClock)
        .await
        .expect("valid");
    let remaining: Vec<i64> = peek.limits().iter().map(|l| l.remaining).collect();
    assert_eq!(remaining, [20, 10, 0, 15, 5]);
    let log = limiter.keys().policy_limit(
        ratelockr::rule::AlgorithmKind::SlidingWindowLog,
        "api",
        "log",
        "hot",
    );
    assert_eq!(
        query::<u64>(&limiter, redis::cmd("ZCARD").arg(log)).await,
        30
    );
    // Telemetry saw every decision.
    let stats = limiter.policy_stats(&["api"]).await.expect("stats");
    let (allowed, denied_count): (u64, u64) = stats[0]
        .iter()
        .fold((0, 0), |(a, d), p| (a + p.allowed, d + p.denied));
    assert_eq!(
        (allowed, denied_count),
        (30, (TASKS * PER_TASK - 30) as u64)
    );
}
