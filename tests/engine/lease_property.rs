//! Issue 35's property, through the engine (`Limiter::check`, `Lease::release`): 32 holders,
//! each on a connection of its own, acquire and release a concurrency rule's slots on random
//! schedules; counted from their own logs, never more than `limit` leases are held at once;
//! the holders that die (keep their lease and stop) free their slots `lease_ms` later; on one
//! Redis and on a 3-master, 3-replica cluster.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ratelockr::embedded_cluster::EmbeddedCluster;
use ratelockr::{Limiter, Rule};
use std::time::{Duration, Instant};

const HOLDERS: usize = 32;
/// Each holder stops after this many admissions (or when it dies).
const ADMISSIONS: usize = 8;
const LIMIT: u64 = 4;
/// Long beside a hold (0..30 ms), short enough for the dead holders' slots to come back soon.
const LEASE: Duration = Duration::from_millis(1_500);

/// A slot a holder surely had from `from` to `to` (local clock): from the admission's answer
/// to the release's sending, or, for a dead holder, to its lease's expiry at the earliest.
struct Held {
    from: Instant,
    to: Instant,
}

/// One holder: its own connection; takes, holds a little, releases; every eighth holder dies
/// holding its third lease.
async fn holder(limiter: Limiter, rule: Rule, index: usize, seed: u64) -> (Vec<Held>, usize) {
    let mut rng = StdRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let (mut held, mut denied) = (Vec::new(), 0);
    while held.len() < ADMISSIONS {
        let sent = Instant::now();
        let decision = limiter.check(&rule, "k").await.expect("valid");
        let from = Instant::now();
        assert!(!decision.fail_open(), "Redis decided: {decision:?}");
        let Some(lease) = decision.lease.clone().filter(|_| decision.allowed) else {
            denied += 1;
            tokio::time::sleep(Duration::from_millis(rng.random_range(1..5))).await;
            continue;
        };
        if index % 8 == 0 && held.len() == 2 {
            // Dies holding it: never released, live until its expiry (at least lease_ms after
            // the call was sent, on the machine's one clock; a little less, to be sure).
            lease.keep();
            held.push(Held {
                from,
                to: sent + LEASE - Duration::from_millis(20),
            });
            break;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..30))).await;
        let to = Instant::now();
        assert!(
            lease.release().await.expect("Redis"),
            "a live lease is freed"
        );
        held.push(Held { from, to });
    }
    (held, denied)
}

/// The most slots held at one instant, from every holder's log.
fn most_held_at_once(held: &[Held]) -> usize {
    let mut edges: Vec<(Instant, i32)> = held
        .iter()
        .filter(|h| h.to > h.from)
        .flat_map(|h| [(h.from, 1), (h.to, -1)])
        .collect();
    // An end before a start at the same instant: touching intervals do not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

async fn run(url: &str, name: &str) {
    let base = common::limiter_with(url, common::options(name));
    let rule = Rule::concurrency("prop-cc", LIMIT, LEASE).expect("valid");
    let seed: u64 = rand::random();
    let tasks: Vec<_> = (0..HOLDERS)
        .map(|i| tokio::spawn(holder(base.with_own_connection(), rule.clone(), i, seed)))
        .collect();
    let (mut held, mut denied) = (Vec::new(), 0);
    for task in tasks {
        let (h, d) = task.await.expect("a holder panicked");
        held.extend(h);
        denied += d;
    }
    let ctx = format!("seed {seed} on {url}");
    assert!(
        denied > 0,
        "{ctx}: {HOLDERS} holders never filled {LIMIT} slots"
    );
    let most = most_held_at_once(&held);
    assert!(
        most <= LIMIT as usize,
        "{ctx}: {most} slots held at once, limit {LIMIT}"
    );
    assert!(most >= 2, "{ctx}: the holders overlapped ({most} at most)");
    // The dead holders' slots come back by themselves after lease_ms.
    let back = common::eventually(Duration::from_secs(10), || async {
        base.peek(&rule, "k").await.expect("valid").remaining == LIMIT
    })
    .await;
    assert!(back, "{ctx}: every slot came back");
    let mut taken = Vec::new();
    for n in 0..=LIMIT {
        let d = base.check(&rule, "k").await.expect("valid");
        assert_eq!(d.allowed, n < LIMIT, "{ctx}: take {n}: {d:?}");
        taken.push(d);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_on_random_schedules_never_hold_more_than_the_limit() {
    let server = common::redis();
    run(&server.url(), "lease-prop").await;
}

#[test]
fn holders_on_random_schedules_never_hold_more_than_the_limit_on_a_cluster() {
    let cluster = EmbeddedCluster::start(3, 1).expect("a 3+3 cluster forms");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(&cluster.url(), "lease-prop-cluster"));
}
