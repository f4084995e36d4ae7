//! lua/policy.lua's in-flight limit (kind `cc`, issue 35), called directly (EVALSHA) as any
//! Redis client could, against a real server:
//! - a stack of one `cc` limit answers what lua/concurrency.lua answers on the same state, step
//!   by step, releases and renewals by lua/lease.lua included, and leaves the same leases;
//! - in the stack "10 in flight + 100 per second" a request the concurrency limit denies
//!   charges the bucket nothing, and a request the bucket denies takes no lease;
//! - a shadow-mode stack takes leases exactly as the enforced one (and none when it denies);
//! - random sequences of acquire, release, renew and clock moves decide as an exact model of
//!   both limits, leave the state the model says, and never hold more than `limit` live leases;
//! - `cc`'s argument errors are named like the other kinds', and the header's example holds.

use crate::common;
use crate::common::models::{Bucket, Model, MICRO};
use crate::script_calls::{connect, evalsha, source};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use std::collections::BTreeMap;

/// The three scripts, loaded once: their SHA1s.
struct Shas {
    policy: String,
    concurrency: String,
    lease: String,
}

async fn load(conn: &mut MultiplexedConnection) -> Shas {
    Shas {
        policy: crate::script_calls::load(conn, "policy.lua").await,
        concurrency: crate::script_calls::load(conn, "concurrency.lua").await,
        lease: crate::script_calls::load(conn, "lease.lua").await,
    }
}

async fn cmd<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, cmd: &redis::Cmd) -> T {
    cmd.query_async(conn)
        .await
        .unwrap_or_else(|err| panic!("{cmd:?} failed: {err}"))
}

/// A leases set: member → expiry (ms), as stored.
async fn leases(conn: &mut MultiplexedConnection, key: &str) -> BTreeMap<String, u64> {
    let pairs: Vec<(String, f64)> = cmd(
        conn,
        redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    )
    .await;
    pairs
        .into_iter()
        .map(|(member, score)| (member, score as u64))
        .collect()
}

async fn zcard(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    cmd(conn, redis::cmd("ZCARD").arg(key)).await
}

async fn bucket(conn: &mut MultiplexedConnection, key: &str) -> Option<Vec<u8>> {
    cmd(conn, redis::cmd("GET").arg(key)).await
}

fn cc(limit: u64, lease_ms: u64) -> [String; 4] {
    [
        "cc".into(),
        limit.to_string(),
        lease_ms.to_string(),
        String::new(),
    ]
}

fn tb(capacity: u64, rate: &str) -> [String; 4] {
    [
        "tb".into(),
        capacity.to_string(),
        rate.into(),
        String::new(),
    ]
}

/// policy.lua's ARGV: n, now_ms (T0 + at), cost, mode, stats TTL, member, fw clock, the limits.
fn policy_argv(
    at: u64,
    cost: u64,
    mode: &str,
    member: &str,
    limits: &[[String; 4]],
) -> Vec<String> {
    let mut argv = vec![
        limits.len().to_string(),
        (common::T0 + at).to_string(),
        cost.to_string(),
        mode.to_string(),
        "120".to_string(),
        member.to_string(),
        String::new(),
    ];
    argv.extend(limits.iter().flatten().cloned());
    argv
}

fn now(at: u64) -> String {
    (common::T0 + at).to_string()
}

// --- a stack of one cc limit is concurrency.lua ------------------------------------------------

const LIMIT: u64 = 3;
/// 10 s of the explicit clock: the key's real PEXPIRE is at least a lease too, so a short lease
/// could evict the set in wall-clock time while a slow CI box is between two steps.
const LEASE: u64 = 10_000;

#[derive(Debug, Clone, Copy)]
enum Step {
    /// (limit, at, lease id, cost): the reply {allowed, remaining, retry_after_ms, reset_after_ms}.
    Take(u64, u64, &'static str, u64, [i64; 4]),
    /// (at, lease id): how many leases the release freed.
    Release(u64, &'static str, i64),
    /// (at, lease id, lease_ms): how many leases the renewal renewed.
    Renew(u64, &'static str, u64, i64),
}
use Step::{Release, Renew, Take};

#[tokio::test]
async fn a_stack_of_one_cc_limit_answers_what_concurrency_lua_answers() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let (solo, stacked) = ("solo", "stacked");
    let steps = [
        Take(LIMIT, 0, "a", 1, [1, 2, 0, 10_000]),
        Take(LIMIT, 100, "b", 1, [1, 1, 0, 10_000]),
        Take(LIMIT, 200, "c", 1, [1, 0, 0, 10_000]),
        // Full: the wait is until a (10_000) expires, the reset until c (10_200).
        Take(LIMIT, 300, "d", 1, [0, 0, 9_700, 9_900]),
        // A peek when full is admitted (live <= limit) and says what is left.
        Take(LIMIT, 300, "z", 0, [1, 0, 0, 9_900]),
        // a holds a live lease: admitted though full, counted once, its expiry moved to 10_400.
        Take(LIMIT, 400, "a", 1, [1, 0, 0, 10_000]),
        Release(500, "b", 1),
        // Any cost takes one lease.
        Take(LIMIT, 600, "d", 5, [1, 0, 0, 10_000]),
        Take(LIMIT, 700, "e", 1, [0, 0, 9_500, 9_900]),
        Renew(800, "c", 20_000, 1),
        Take(LIMIT, 10_300, "e", 1, [0, 0, 100, 10_500]),
        // a expires at 10_400: not live then, and pruned by the admission.
        Take(LIMIT, 10_400, "e", 1, [1, 0, 0, 10_400]),
        Release(10_500, "e", 1),
        // d's lease expired at 10_600: releasing it frees nothing.
        Release(10_600, "d", 0),
        Take(LIMIT, 30_000, "f", 0, [1, 3, 0, 0]),
        Take(LIMIT, 30_000, "f", 1, [1, 2, 0, 10_000]),
        Take(LIMIT, 30_001, "g", 1, [1, 1, 0, 10_000]),
        Take(LIMIT, 30_002, "h", 1, [1, 0, 0, 10_000]),
        // A limit lowered under held leases: f keeps its own, two others must go (g, 40_001).
        Take(1, 30_003, "f", 1, [0, 0, 9_998, 9_999]),
        Take(2, 30_003, "x", 1, [0, 0, 9_998, 9_999]),
        Take(2, 30_003, "p", 0, [0, 0, 9_997, 9_999]),
        Renew(30_004, "never-taken", 10_000, 0),
        Release(30_005, "g", 1),
        Take(LIMIT, 30_006, "x", 1_000, [1, 0, 0, 10_000]),
    ];
    for (i, step) in steps.iter().enumerate() {
        let ctx = format!("step {i} {step:?}");
        match *step {
            Take(limit, at, id, cost, expected) => {
                let argv = vec![
                    limit.to_string(),
                    LEASE.to_string(),
                    now(at),
                    id.to_string(),
                    cost.to_string(),
                ];
                let alone: Vec<i64> = evalsha(&mut conn, &sha.concurrency, &[solo], &argv)
                    .await
                    .unwrap_or_else(|err| panic!("{ctx}: concurrency.lua: {err}"));
                assert_eq!(alone, expected, "{ctx}: concurrency.lua");
                let argv = policy_argv(at, cost, "enforce", id, &[cc(limit, LEASE)]);
                let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &[stacked], &argv)
                    .await
                    .unwrap_or_else(|err| panic!("{ctx}: policy.lua: {err}"));
                assert_eq!(reply[6..], expected, "{ctx}: policy.lua's limit");
                let would_deny = 1 - expected[0];
                assert_eq!(
                    reply[..6],
                    [
                        expected[0],
                        expected[1],
                        expected[2],
                        expected[3],
                        would_deny,
                        1
                    ],
                    "{ctx}: policy.lua's decision"
                );
            }
            Release(at, id, expected) | Renew(at, id, _, expected) => {
                let mut argv = vec![String::new(), id.to_string(), now(at)];
                if let Renew(_, _, lease_ms, _) = *step {
                    argv[0] = "renew".into();
                    argv.push(lease_ms.to_string());
                } else {
                    argv[0] = "release".into();
                }
                for key in [solo, stacked] {
                    let count: i64 = evalsha(&mut conn, &sha.lease, &[key], &argv)
                        .await
                        .unwrap_or_else(|err| panic!("{ctx}: lease.lua on {key}: {err}"));
                    assert_eq!(count, expected, "{ctx}: lease.lua on {key}");
                }
            }
        }
        assert_eq!(
            leases(&mut conn, stacked).await,
            leases(&mut conn, solo).await,
            "{ctx}: the two scripts left different leases"
        );
    }
    let held: Vec<String> = leases(&mut conn, stacked).await.into_keys().collect();
    assert_eq!(held, ["f", "h", "x"]);
}

// --- in flight 10 + 100 per second ---------------------------------------------------------------

/// The stack of issue 35: 10 requests in flight (leases of 60 s) AND 100 per second.
fn in_flight_10_and_100_per_second() -> Vec<[String; 4]> {
    vec![cc(10, 60_000), tb(100, "100")]
}

#[tokio::test]
async fn neither_limit_is_charged_for_a_request_the_other_denies() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let keys = ["{api}:in-flight", "{api}:per-second"];
    let limits = in_flight_10_and_100_per_second();
    let decide = |at: u64, cost: u64, id: &str| policy_argv(at, cost, "enforce", id, &limits);
    let release = |id: &str| vec!["release".to_string(), id.to_string(), now(0)];

    // Ten requests in flight, ten tokens spent: all at T0, so nothing refills.
    for i in 0..10 {
        let reply: Vec<i64> = evalsha(
            &mut conn,
            &sha.policy,
            &keys,
            &decide(0, 1, &format!("r{i}")),
        )
        .await
        .expect("decide");
        assert_eq!(
            reply[6..],
            [1, 9 - i, 0, 60_000, 1, 99 - i, 0, 10 * (i + 1)],
            "r{i}"
        );
    }

    // The concurrency limit denies: the bucket is not charged, whatever the cost.
    for (id, cost) in [("r10", 1), ("r11", 5)] {
        let before = bucket(&mut conn, keys[1]).await;
        let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &decide(0, cost, id))
            .await
            .expect("decide");
        // The bucket, 10 tokens short of 100, is full again in 100 ms.
        assert_eq!(
            reply,
            [0, 0, 60_000, 60_000, 1, 1, 0, 0, 60_000, 60_000, 1, 90, 0, 100],
            "{id}"
        );
        assert_eq!(
            bucket(&mut conn, keys[1]).await,
            before,
            "{id} charged the bucket"
        );
        assert_eq!(zcard(&mut conn, keys[0]).await, 10, "{id} took a lease");
    }

    // Seven released, three held; then 90 requests that end at once empty the bucket.
    for i in 0..7 {
        let freed: i64 = evalsha(
            &mut conn,
            &sha.lease,
            &keys[..1],
            &release(&format!("r{i}")),
        )
        .await
        .expect("release");
        assert_eq!(freed, 1, "r{i}");
    }
    for i in 0..90 {
        let id = format!("s{i}");
        let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &decide(0, 1, &id))
            .await
            .expect("decide");
        assert_eq!(reply[6..12], [1, 6, 0, 60_000, 1, 89 - i], "{id}");
        let freed: i64 = evalsha(&mut conn, &sha.lease, &keys[..1], &release(&id))
            .await
            .expect("release");
        assert_eq!(freed, 1, "{id}");
    }

    // The bucket denies: no lease is taken, though seven slots are free.
    let before = bucket(&mut conn, keys[1]).await;
    assert_eq!(zcard(&mut conn, keys[0]).await, 3);
    let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &decide(0, 1, "x"))
        .await
        .expect("decide");
    assert_eq!(
        reply,
        [0, 0, 10, 60_000, 1, 2, 1, 7, 0, 60_000, 0, 0, 10, 1_000]
    );
    assert_eq!(zcard(&mut conn, keys[0]).await, 3, "x took a lease");
    let score: Option<f64> = cmd(&mut conn, redis::cmd("ZSCORE").arg(keys[0]).arg("x")).await;
    assert_eq!(score, None);
    assert_eq!(
        bucket(&mut conn, keys[1]).await,
        before,
        "the denial wrote the bucket"
    );

    // 10 ms later a token is back: admitted, x's lease taken until 60 s from then.
    let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &decide(10, 1, "x"))
        .await
        .expect("decide");
    assert_eq!(reply[..6], [1, 0, 0, 60_000, 0, 2]);
    let score: f64 = cmd(&mut conn, redis::cmd("ZSCORE").arg(keys[0]).arg("x")).await;
    assert_eq!(score as u64, common::T0 + 10 + 60_000);
}

#[tokio::test]
async fn a_shadow_stack_takes_leases_exactly_as_an_enforced_one() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let enforced = ["{e}:in-flight", "{e}:per-second"];
    let shadow = ["{s}:in-flight", "{s}:per-second"];
    // 3 in flight AND 5 a burst at 1 a second (the bucket's key lives 10 s of real time).
    let limits = [cc(3, 60_000), tb(5, "1")];
    let (mut denied_by_cc, mut denied_by_tb) = (0, 0);
    for i in 0..30u64 {
        let at = i * 150;
        let id = format!("r{i}");
        let mut replies = Vec::new();
        for (mode, keys) in [("enforce", enforced), ("shadow", shadow)] {
            let argv = policy_argv(at, 1, mode, &id, &limits);
            let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &argv)
                .await
                .unwrap_or_else(|err| panic!("{id} ({mode}): {err}"));
            replies.push(reply);
        }
        let (e, s) = (&replies[0], &replies[1]);
        // The same verdicts and numbers; shadow admits what enforce denies, with no wait.
        let mut expected = e.clone();
        expected[0] = 1;
        expected[2] = 0;
        assert_eq!(s, &expected, "{id}: shadow {s:?}, enforce {e:?}");
        if e[4] == 1 {
            denied_by_cc += i64::from(e[6] == 0);
            denied_by_tb += i64::from(e[10] == 0);
        }
        // The first ten requests stay in flight (the concurrency limit fills and denies); at
        // the tenth they end, and from then on each ends at once (the bucket runs dry).
        let ending: Vec<u64> = match i {
            10 => (0..=10).collect(),
            11.. => vec![i],
            _ => vec![],
        };
        for ended in ending {
            for keys in [enforced, shadow] {
                let argv = vec!["release".to_string(), format!("r{ended}"), now(at)];
                let _: i64 = evalsha(&mut conn, &sha.lease, &keys[..1], &argv)
                    .await
                    .expect("release");
            }
        }
        assert_eq!(
            leases(&mut conn, shadow[0]).await,
            leases(&mut conn, enforced[0]).await,
            "{id}: the leases part"
        );
        assert_eq!(
            bucket(&mut conn, shadow[1]).await,
            bucket(&mut conn, enforced[1]).await,
            "{id}: the buckets part"
        );
    }
    assert!(
        denied_by_cc > 0 && denied_by_tb > 0,
        "the sequence had denials of both limits: {denied_by_cc} by cc, {denied_by_tb} by tb"
    );
}

// --- random sequences against an exact model -------------------------------------------------------

/// concurrency.lua's decision, exactly: a map of lease id → expiry, pruned only by an admission.
struct Leases {
    limit: u64,
    lease_ms: u64,
    held: BTreeMap<String, u64>,
}

impl Leases {
    fn live(&self, now: u64) -> u64 {
        self.held.values().filter(|&&e| e > now).count() as u64
    }

    /// (admits, the leases it needs).
    fn admits(&self, now: u64, id: &str, cost: u64) -> (bool, u64) {
        let live = self.live(now);
        let own = self.held.get(id).is_some_and(|&e| e > now);
        let need = u64::from(cost > 0 && !own);
        (live + need <= self.limit, need)
    }

    /// The four numbers, after charging when `charge`.
    fn decide(&mut self, now: u64, id: &str, cost: u64, charge: bool) -> [i64; 4] {
        let (yes, need) = self.admits(now, id, cost);
        if charge {
            self.held.retain(|_, e| *e > now);
            self.held.insert(id.to_string(), now + self.lease_ms);
        }
        let live = self.live(now);
        let remaining = self.limit.saturating_sub(live) as i64;
        let reset = if live > 0 {
            (*self.held.values().max().expect("a lease") - now) as i64
        } else {
            0
        };
        let retry = if yes {
            0
        } else {
            let mut expiries: Vec<u64> = self.held.values().copied().filter(|&e| e > now).collect();
            expiries.sort_unstable();
            (expiries[(live + need - self.limit - 1) as usize] - now) as i64
        };
        [i64::from(yes), remaining, retry, reset]
    }

    /// lease.lua's count: the id removed, 1 when its lease was live.
    fn release(&mut self, now: u64, id: &str) -> i64 {
        self.held.remove(id).map_or(0, |e| i64::from(e > now))
    }

    /// lease.lua's count: a live lease moved to now + lease_ms.
    fn renew(&mut self, now: u64, id: &str) -> i64 {
        match self.held.get_mut(id) {
            Some(e) if *e > now => {
                *e = now + self.lease_ms;
                1
            }
            _ => 0,
        }
    }
}

#[tokio::test]
async fn random_sequences_decide_as_the_models_and_never_hold_more_than_the_limit() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let mut denied_by_tb = 0;
    for seed in 0..16u64 {
        let mut rng = StdRng::seed_from_u64(0x0035_1ea5 ^ seed);
        let keys_owned = [
            format!("{{p{seed}}}:in-flight"),
            format!("{{p{seed}}}:per-second"),
        ];
        let keys = [keys_owned[0].as_str(), keys_owned[1].as_str()];
        let limit = rng.random_range(1..=6u64);
        let lease_ms = [10_000, 20_000, 30_000][rng.random_range(0..3)];
        let capacity = rng.random_range(5..=20u64);
        // Tokens per second, and so micro-tokens per ms; the clock moves by 125 ms, so every
        // refill is a multiple of 1/16 token, exact in the script's doubles: no edge to follow.
        // The bucket's key lives capacity / rate x 2 >= 10 s of real time.
        let (rate, permille) = [("0.5", 500), ("1", 1_000)][rng.random_range(0..2)];
        let mode = if rng.random_bool(0.25) {
            "shadow"
        } else {
            "enforce"
        };
        let limits = [cc(limit, lease_ms), tb(capacity, rate)];
        let mut model = Leases {
            limit,
            lease_ms,
            held: BTreeMap::new(),
        };
        let mut tokens = Bucket {
            capacity: u128::from(capacity),
            permille,
            state: None,
        };
        let mut ids: Vec<String> = Vec::new();
        let mut at = 0u64;
        let (mut by_cc, mut by_tb, mut admitted) = (0, 0, 0);
        for step in 0..250 {
            let ctx = format!(
                "seed {seed} (cc {limit}/{lease_ms} ms, tb {capacity} at {rate}/s, {mode}), step {step} at {at}"
            );
            let roll = rng.random_range(0..100);
            if roll < 50 || ids.is_empty() {
                let id = if ids.is_empty() || rng.random_bool(0.85) {
                    ids.push(format!("q{step}"));
                    ids.last().expect("an id").clone()
                } else {
                    ids[rng.random_range(0..ids.len())].clone()
                };
                let cost = if rng.random_bool(0.1) {
                    0
                } else {
                    rng.random_range(1..=3u64)
                };
                let t = common::T0 + at;
                let cc_yes = model.admits(t, &id, cost).0;
                let tb_yes = tokens.admits(t, cost);
                let admit = cc_yes && tb_yes;
                let charge = admit && cost > 0;
                let expected_cc = model.decide(t, &id, cost, charge);
                if charge {
                    tokens.follow(t, cost, true);
                }
                let tb_remaining = (tokens.tokens(t) / MICRO) as i64;
                let argv = policy_argv(at, cost, mode, &id, &limits);
                let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &argv)
                    .await
                    .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                let ctx = format!("{ctx}: {id} cost {cost} -> {reply:?}");
                assert_eq!(reply[6..10], expected_cc, "{ctx}: the cc limit");
                assert_eq!(reply[10], i64::from(tb_yes), "{ctx}: the bucket's verdict");
                assert_eq!(reply[11], tb_remaining, "{ctx}: the bucket's remaining");
                assert_eq!(reply[0], i64::from(admit || mode == "shadow"), "{ctx}");
                assert_eq!(reply[4], i64::from(!admit), "{ctx}: would_deny");
                assert_eq!(reply[1], expected_cc[1].min(tb_remaining), "{ctx}");
                by_cc += i64::from(!cc_yes);
                by_tb += i64::from(!tb_yes);
                admitted += i64::from(charge);
            } else if roll < 80 {
                let id = ids[rng.random_range(0..ids.len())].clone();
                let argv = vec!["release".to_string(), id.clone(), now(at)];
                let freed: i64 = evalsha(&mut conn, &sha.lease, &keys[..1], &argv)
                    .await
                    .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                assert_eq!(
                    freed,
                    model.release(common::T0 + at, &id),
                    "{ctx}: release {id}"
                );
            } else if roll < 85 {
                let id = ids[rng.random_range(0..ids.len())].clone();
                let argv = vec![
                    "renew".to_string(),
                    id.clone(),
                    now(at),
                    lease_ms.to_string(),
                ];
                let renewed: i64 = evalsha(&mut conn, &sha.lease, &keys[..1], &argv)
                    .await
                    .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                assert_eq!(
                    renewed,
                    model.renew(common::T0 + at, &id),
                    "{ctx}: renew {id}"
                );
            } else if rng.random_bool(0.8) {
                at += 125 * rng.random_range(1..=8u64);
            } else {
                at += 125 * rng.random_range(40..=200u64);
            }
            let held = leases(&mut conn, keys[0]).await;
            assert_eq!(held, model.held, "{ctx}: the leases");
            let live = held.values().filter(|&&e| e > common::T0 + at).count() as u64;
            assert!(
                live <= limit,
                "{ctx}: {live} live leases over the limit {limit}"
            );
            let state = bucket(&mut conn, keys[1]).await;
            match (tokens.state, state) {
                (None, None) => {}
                (Some((micro, last)), Some(state)) => {
                    let (t, l) = common::unpack_bucket(&state);
                    assert_eq!(
                        (t * MICRO as f64) as u128,
                        micro,
                        "{ctx}: the bucket's tokens"
                    );
                    assert_eq!(l as u64, last, "{ctx}: the bucket's last refill");
                }
                (model, server) => panic!("{ctx}: the bucket is {server:?}, the model's {model:?}"),
            }
        }
        assert!(
            by_cc > 0 && admitted > 0,
            "seed {seed}: {by_cc} denied by cc, {by_tb} by tb, {admitted} admitted"
        );
        denied_by_tb += by_tb;
    }
    assert!(denied_by_tb > 0, "no sequence ran the bucket dry");
}

// --- arguments and the header ---------------------------------------------------------------------

#[tokio::test]
async fn cc_argument_errors_are_named_like_the_other_kinds() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let limit = |kind: &str, a: &str, b: &str| -> [String; 4] {
        [kind.into(), a.into(), b.into(), String::new()]
    };
    let cases: Vec<(Vec<&str>, Vec<String>, &str)> = vec![
        (
            vec!["k"],
            policy_argv(0, 1, "", "m", &[limit("cc", "0", "1000")]),
            "limit 1 (concurrency): ARGV[9] limit must be an integer >= 1, got '0'",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "m", &[limit("cc", "2.5", "1000")]),
            "limit 1 (concurrency): ARGV[9] limit must be an integer >= 1, got '2.5'",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "m", &[limit("cc", "3", "x")]),
            "limit 1 (concurrency): ARGV[10] lease_ms must be an integer >= 1, got 'x'",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "m", &[limit("cc", "3", "0")]),
            "limit 1 (concurrency): ARGV[10] lease_ms must be an integer >= 1, got '0'",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "", &[limit("cc", "3", "1000")]),
            "ARGV[6] member (a unique request id) is required by limit 1 (concurrency)",
        ),
        (
            vec!["t", "k"],
            policy_argv(0, 1, "", "", &[tb(10, "1"), limit("cc", "3", "1000")]),
            "ARGV[6] member (a unique request id) is required by limit 2 (concurrency)",
        ),
        (
            vec!["t", "k"],
            policy_argv(0, 1, "", "m", &[tb(10, "1"), limit("cc", "3", "")]),
            "limit 2 (concurrency): ARGV[14] lease_ms must be an integer >= 1, got ''",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "m", &[limit("cx", "3", "1000")]),
            "limit 1: ARGV[8] kind must be tb, gc, sw, sc, fw, cc or cal, got 'cx'",
        ),
        (
            vec!["k"],
            policy_argv(0, 1, "", "", &[limit("sw", "3", "1000")]),
            "ARGV[6] member (a unique request id) is required by limit 1 (sliding window log)",
        ),
    ];
    for (keys, argv, words) in cases {
        let err = evalsha::<redis::Value, _>(&mut conn, &sha.policy, &keys, &argv)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(words), "{argv:?}: {err}");
        assert_eq!(err.code(), Some("ratelockr"), "{err}");
    }
    let keys: Vec<String> = cmd(&mut conn, redis::cmd("KEYS").arg("*")).await;
    assert!(keys.is_empty(), "refused calls wrote {keys:?}");

    // No cost is too great for a cc limit: any takes one lease (a token bucket's cap still holds).
    let reply: Vec<i64> = evalsha(
        &mut conn,
        &sha.policy,
        &["k"],
        &policy_argv(0, 1_000_000, "", "m", &[cc(3, 10_000)]),
    )
    .await
    .expect("admitted");
    assert_eq!(reply, [1, 2, 0, 10_000, 0, 1, 1, 2, 0, 10_000]);
    let err = evalsha::<redis::Value, _>(
        &mut conn,
        &sha.policy,
        &["k", "t"],
        &policy_argv(0, 11, "", "m", &[cc(3, 10_000), tb(10, "1")]),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string()
            .contains("cost 11 exceeds limit 2's capacity 10"),
        "{err}"
    );
}

#[tokio::test]
async fn the_header_example_of_a_stack_with_an_in_flight_limit_holds() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let sha = load(&mut conn).await;
    let header = source("policy.lua")
        .split("]]")
        .next()
        .expect("a header")
        .to_string();
    let keys = [
        "ratelockr:cc:{api}.in-flight:user42",
        "ratelockr:tb:{api}.per-second:user42",
    ];
    let argv = "2 \"\" 1 enforce 120 req-1 \"\" cc 10 60000 \"\" tb 100 100 \"\"";
    assert!(
        header.contains(keys[0]) && header.contains(argv),
        "{header}"
    );
    let argv: Vec<String> = argv
        .split(' ')
        .map(|a| {
            if a == "\"\"" {
                String::new()
            } else {
                a.to_string()
            }
        })
        .collect();
    let reply: Vec<i64> = evalsha(&mut conn, &sha.policy, &keys, &argv)
        .await
        .expect("the example runs");
    assert_eq!(
        reply,
        [1, 9, 0, 60_000, 0, 1, 1, 9, 0, 60_000, 1, 99, 0, 10]
    );
    for (i, n) in reply.iter().enumerate() {
        let shown = format!("{}) (integer) {n}", i + 1);
        assert!(
            header.contains(&shown),
            "policy.lua's header lacks {shown:?}"
        );
    }
    let release = vec!["release".to_string(), "req-1".to_string(), String::new()];
    let freed: i64 = evalsha(&mut conn, &sha.lease, &keys[..1], &release)
        .await
        .expect("release");
    assert_eq!(freed, 1);
    assert!(
        header.contains(&format!("1 {} release req-1 \"\"", keys[0])),
        "{header}"
    );
}
