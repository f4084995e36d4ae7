//! lua/concurrency.lua and lua/lease.lua called directly (EVAL and EVALSHA), as any Redis client
//! could, against a real server: a table of decisions on an explicit clock, the key's life, the
//! telemetry counters, every argument error, the header examples, and the property of issue 35:
//! 32 connections taking and releasing leases on random schedules never hold more than `limit`
//! leases at once, counted from their own logs, and the leases of holders that never release
//! free their slots after `lease_ms`.
//!
//! The scripts are read from lua/ (no engine path loads them yet).

use crate::common;
use crate::script_calls::{connect, evalsha, load, source};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::RedisResult;
use std::collections::HashMap;
use std::time::Duration;

/// One EVAL of a script's source.
async fn eval<T: redis::FromRedisValue>(
    conn: &mut MultiplexedConnection,
    name: &str,
    keys: &[&str],
    argv: &[&str],
) -> RedisResult<T> {
    redis::cmd("EVAL")
        .arg(source(name))
        .arg(keys.len())
        .arg(keys)
        .arg(argv)
        .query_async(conn)
        .await
}

async fn cmd<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, cmd: &redis::Cmd) -> T {
    cmd.query_async(conn)
        .await
        .unwrap_or_else(|err| panic!("{cmd:?} failed: {err}"))
}

/// The members of a leases set, earliest expiry first.
async fn members(conn: &mut MultiplexedConnection, key: &str) -> Vec<String> {
    cmd(conn, redis::cmd("ZRANGE").arg(key).arg(0).arg(-1)).await
}

async fn pttl(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    cmd(conn, redis::cmd("PTTL").arg(key)).await
}

/// The server's clock in ms, as the scripts read it.
async fn server_ms(conn: &mut MultiplexedConnection) -> u64 {
    let (secs, micros): (u64, u64) = cmd(conn, &redis::cmd("TIME")).await;
    secs * 1000 + micros / 1000
}

const LIMIT: u64 = 3;
/// 10 s of the explicit clock: the key's real PEXPIRE is at least a lease too, so a short lease
/// could evict the set in wall-clock time while a slow CI box is between two steps.
const LEASE: u64 = 10_000;

#[derive(Debug, Clone, Copy)]
enum Step {
    /// (at, lease id, cost): the reply {allowed, remaining, retry_after_ms, reset_after_ms}.
    Take(u64, &'static str, u64, [i64; 4]),
    /// (at, lease id): how many leases the release freed.
    Release(u64, &'static str, i64),
    /// (at, lease id, lease_ms): how many leases the renewal renewed.
    Renew(u64, &'static str, u64, i64),
    /// The members the set holds now, earliest expiry first.
    Holds(&'static [&'static str]),
}
use Step::{Holds, Release, Renew, Take};

#[tokio::test]
async fn table_of_decisions() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let take_sha = load(&mut conn, "concurrency.lua").await;
    let lease_sha = load(&mut conn, "lease.lua").await;
    let cases: Vec<(&str, Vec<Step>)> = vec![
        (
            "admits up to the limit, then denies until the earliest lease expires; a denial writes nothing",
            vec![
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Take(100, "b", 1, [1, 1, 0, 10_000]),
                Take(200, "c", 1, [1, 0, 0, 10_000]),
                Take(300, "d", 1, [0, 0, 9_700, 9_900]),
                Holds(&["a", "b", "c"]),
                Take(9_999, "d", 1, [0, 0, 1, 201]),
                // a's expiry is 10_000: not live at 10_000, and pruned by the admission.
                Take(10_000, "d", 1, [1, 0, 0, 10_000]),
                Holds(&["b", "c", "d"]),
            ],
        ),
        (
            "a release frees one slot at once; releasing twice frees nothing",
            vec![
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Take(0, "b", 1, [1, 1, 0, 10_000]),
                Take(0, "c", 1, [1, 0, 0, 10_000]),
                Take(1, "d", 1, [0, 0, 9_999, 9_999]),
                Release(2, "b", 1),
                Release(3, "b", 0),
                Holds(&["a", "c"]),
                Take(4, "d", 1, [1, 0, 0, 10_000]),
                Take(5, "e", 1, [0, 0, 9_995, 9_999]),
                Release(6, "never-taken", 0),
                Holds(&["a", "c", "d"]),
            ],
        ),
        (
            "a lease nobody releases frees itself after lease_ms; releasing it then frees nothing",
            vec![
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Take(0, "b", 1, [1, 1, 0, 10_000]),
                Take(5_000, "c", 1, [1, 0, 0, 10_000]),
                Take(9_999, "d", 1, [0, 0, 1, 5_001]),
                Take(10_000, "d", 1, [1, 1, 0, 10_000]),
                Holds(&["c", "d"]),
                // c expires at 15_000: at 15_000 it is dead, freed nothing, and is removed.
                Release(15_000, "c", 0),
                Holds(&["d"]),
                Take(15_000, "e", 1, [1, 1, 0, 10_000]),
            ],
        ),
        (
            "renew extends a live lease; an expired lease is not renewed",
            vec![
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Renew(4_000, "a", 20_000, 1),
                Take(5_000, "b", 1, [1, 1, 0, 19_000]),
                Take(12_000, "c", 1, [1, 0, 0, 12_000]),
                Take(12_000, "d", 1, [0, 0, 3_000, 12_000]),
                Renew(15_000, "b", 10_000, 0),
                Renew(15_000, "never-taken", 10_000, 0),
                Take(15_000, "d", 1, [1, 0, 0, 10_000]),
                Holds(&["c", "a", "d"]),
            ],
        ),
        (
            "a peek (cost 0) takes, prunes and counts nothing",
            vec![
                Take(0, "a", 0, [1, 3, 0, 0]),
                Holds(&[]),
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Take(20, "b", 1, [1, 1, 0, 10_000]),
                Take(30, "c", 1, [1, 0, 0, 10_000]),
                Take(40, "z", 0, [1, 0, 0, 9_990]),
                Take(10_000, "z", 0, [1, 1, 0, 30]),
                Holds(&["a", "b", "c"]),
            ],
        ),
        (
            "the same id twice holds one lease, counted once",
            vec![
                Take(0, "a", 1, [1, 2, 0, 10_000]),
                Take(100, "a", 1, [1, 2, 0, 10_000]),
                Take(200, "b", 1, [1, 1, 0, 10_000]),
                Take(300, "c", 1, [1, 0, 0, 10_000]),
                // Full, but a already holds a live lease: admitted, its expiry moves to 10_400.
                Take(400, "a", 1, [1, 0, 0, 10_000]),
                Take(400, "d", 1, [0, 0, 9_800, 10_000]),
                Holds(&["b", "c", "a"]),
                Release(500, "a", 1),
                Take(500, "d", 1, [1, 0, 0, 10_000]),
                Holds(&["b", "c", "d"]),
            ],
        ),
        (
            "any cost takes one lease",
            vec![
                Take(0, "a", 5, [1, 2, 0, 10_000]),
                Take(0, "b", 1_000, [1, 1, 0, 10_000]),
                Holds(&["a", "b"]),
            ],
        ),
    ];
    for (n, (name, steps)) in cases.iter().enumerate() {
        let key = format!("leases-{n}");
        for (i, step) in steps.iter().enumerate() {
            let ctx = format!("case {name:?}, step {i} {step:?}");
            match *step {
                Take(at, id, cost, expected) => {
                    let argv = [
                        LIMIT.to_string(),
                        LEASE.to_string(),
                        (common::T0 + at).to_string(),
                        id.to_string(),
                        cost.to_string(),
                    ];
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    let reply: Vec<i64> = evalsha(&mut conn, &take_sha, &[&key], &argv)
                        .await
                        .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                    assert_eq!(reply, expected, "{ctx}");
                }
                Release(at, id, expected) => {
                    let now = (common::T0 + at).to_string();
                    let argv = ["release", id, &now];
                    let freed: i64 = evalsha(&mut conn, &lease_sha, &[&key], &argv)
                        .await
                        .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                    assert_eq!(freed, expected, "{ctx}");
                }
                Renew(at, id, lease_ms, expected) => {
                    let now = (common::T0 + at).to_string();
                    let lease_ms = lease_ms.to_string();
                    let argv = ["renew", id, &now, &lease_ms];
                    let renewed: i64 = evalsha(&mut conn, &lease_sha, &[&key], &argv)
                        .await
                        .unwrap_or_else(|err| panic!("{ctx}: {err}"));
                    assert_eq!(renewed, expected, "{ctx}");
                }
                Holds(expected) => {
                    assert_eq!(members(&mut conn, &key).await, expected, "{ctx}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_lowered_limit_waits_for_enough_leases_to_expire() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let t = |at: u64| (common::T0 + at).to_string();
    for (at, id) in [(0, "a"), (100, "b"), (200, "c")] {
        let reply: Vec<i64> = eval(
            &mut conn,
            "concurrency.lua",
            &["k"],
            &["3", "10000", &t(at), id],
        )
        .await
        .expect("take");
        assert_eq!(reply[0], 1, "{id}: {reply:?}");
    }
    // Three live under a limit of 1: a new lease needs all three gone (c, at 10_200).
    let reply: Vec<i64> = eval(
        &mut conn,
        "concurrency.lua",
        &["k"],
        &["1", "10000", &t(300), "d"],
    )
    .await
    .expect("take");
    assert_eq!(reply, [0, 0, 9_900, 9_900]);
    // a keeps its own lease, counted once: two others must go first (b, at 10_100).
    let reply: Vec<i64> = eval(
        &mut conn,
        "concurrency.lua",
        &["k"],
        &["1", "10000", &t(300), "a"],
    )
    .await
    .expect("take");
    assert_eq!(reply, [0, 0, 9_800, 9_900]);
    // A peek under a limit of 2 fits once one lease (a, at 10_000) is gone.
    let reply: Vec<i64> = eval(
        &mut conn,
        "concurrency.lua",
        &["k"],
        &["2", "10000", &t(300), "p", "0"],
    )
    .await
    .expect("peek");
    assert_eq!(reply, [0, 0, 9_700, 9_900]);
    assert_eq!(
        members(&mut conn, "k").await,
        ["a", "b", "c"],
        "denials write nothing"
    );
}

#[tokio::test]
async fn the_key_lives_at_least_lease_ms_and_released_leases_leave_no_key() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let take_sha = load(&mut conn, "concurrency.lua").await;
    let lease_sha = load(&mut conn, "lease.lua").await;
    let reply: Vec<i64> = evalsha(&mut conn, &take_sha, &["k"], &["5", "60000", "", "a"])
        .await
        .expect("take a");
    assert_eq!(reply, [1, 4, 0, 60_000]);
    let ttl = pttl(&mut conn, "k").await;
    assert!((50_000..=60_000).contains(&ttl), "PTTL {ttl}");
    // A shorter lease never shortens the key's life: a's lease still needs it.
    let reply: Vec<i64> = evalsha(&mut conn, &take_sha, &["k"], &["5", "30000", "", "b"])
        .await
        .expect("take b");
    assert_eq!(reply[..2], [1, 3]);
    assert!(reply[3] > 50_000, "the last lease is still a's: {reply:?}");
    let ttl = pttl(&mut conn, "k").await;
    assert!(ttl > 50_000, "PTTL {ttl} was shortened");
    // A renewal longer than the key's life lengthens it.
    let renewed: i64 = evalsha(&mut conn, &lease_sha, &["k"], &["renew", "a", "", "120000"])
        .await
        .expect("renew");
    assert_eq!(renewed, 1);
    let ttl = pttl(&mut conn, "k").await;
    assert!((110_000..=120_000).contains(&ttl), "PTTL {ttl}");
    // On an explicit clock far in the past, the key still lives lease_ms of Redis's clock.
    let past = common::T0.to_string();
    let reply: Vec<i64> = evalsha(&mut conn, &take_sha, &["old"], &["5", "30000", &past, "x"])
        .await
        .expect("take x");
    assert_eq!(reply, [1, 4, 0, 30_000]);
    let ttl = pttl(&mut conn, "old").await;
    assert!((20_000..=30_000).contains(&ttl), "PTTL {ttl}");
    // Released, the set is empty and Redis drops the key.
    for id in ["a", "b"] {
        let freed: i64 = evalsha(&mut conn, &lease_sha, &["k"], &["release", id, ""])
            .await
            .expect("release");
        assert_eq!(freed, 1, "{id}");
    }
    let exists: i64 = cmd(&mut conn, redis::cmd("EXISTS").arg("k")).await;
    assert_eq!(exists, 0, "released leases left a key");
}

#[tokio::test]
async fn one_call_releases_or_renews_a_lease_in_every_limit_of_a_stack() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let keys = ["{p}:in-flight-a", "{p}:in-flight-b", "{p}:in-flight-c"];
    let t = |at: u64| (common::T0 + at).to_string();
    // The request's lease in a (limit 2, 10 s) and b (limit 5, 20 s); c never admitted it.
    for (key, limit, lease_ms) in [(keys[0], "2", "10000"), (keys[1], "5", "20000")] {
        let reply: Vec<i64> = eval(
            &mut conn,
            "concurrency.lua",
            &[key],
            &[limit, lease_ms, &t(0), "r"],
        )
        .await
        .expect("take");
        assert_eq!(reply[0], 1, "{key}");
    }
    // Renewed where it is live, with each limit's own lease_ms.
    let renewed: i64 = eval(
        &mut conn,
        "lease.lua",
        &keys,
        &["renew", "r", &t(5_000), "10000", "20000", "30000"],
    )
    .await
    .expect("renew");
    assert_eq!(renewed, 2, "live in a and b, absent from c");
    for (key, expiry) in [(keys[0], 15_000), (keys[1], 25_000)] {
        let score: f64 = cmd(&mut conn, redis::cmd("ZSCORE").arg(key).arg("r")).await;
        assert_eq!(score as u64, common::T0 + expiry, "{key}");
    }
    // At 20_000 the lease is dead in a (15_000) and live in b (25_000): one slot freed.
    let freed: i64 = eval(&mut conn, "lease.lua", &keys, &["release", "r", &t(20_000)])
        .await
        .expect("release");
    assert_eq!(freed, 1);
    for key in keys {
        assert!(
            members(&mut conn, key).await.is_empty(),
            "{key} still holds r"
        );
    }
    let freed: i64 = eval(&mut conn, "lease.lua", &keys, &["release", "r", &t(20_001)])
        .await
        .expect("release twice");
    assert_eq!(freed, 0, "a second release frees nothing");
}

#[tokio::test]
async fn telemetry_counts_allowed_and_denied_but_not_peeks() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let keys = ["k", "allowed", "denied"];
    let now = common::T0.to_string();
    let calls: [(&str, &str, i64); 4] =
        [("a", "1", 1), ("b", "1", 0), ("c", "7", 0), ("p", "0", 1)];
    for (id, cost, allowed) in calls {
        let reply: Vec<i64> = eval(
            &mut conn,
            "concurrency.lua",
            &keys,
            &["1", "10000", &now, id, cost, "77"],
        )
        .await
        .expect("take");
        assert_eq!(reply[0], allowed, "{id}: {reply:?}");
    }
    let counted: (Option<u64>, Option<u64>) =
        cmd(&mut conn, redis::cmd("MGET").arg("allowed").arg("denied")).await;
    assert_eq!(counted, (Some(1), Some(2)), "the peek is not counted");
    for counter in ["allowed", "denied"] {
        let ttl: i64 = cmd(&mut conn, redis::cmd("TTL").arg(counter)).await;
        assert!((1..=77).contains(&ttl), "{counter}: TTL {ttl}");
    }
    // The stats TTL defaults to 120 s.
    let keys = ["k2", "allowed2", "denied2"];
    let reply: Vec<i64> = eval(
        &mut conn,
        "concurrency.lua",
        &keys,
        &["1", "10000", &now, "a"],
    )
    .await
    .expect("take");
    assert_eq!(reply[0], 1);
    let ttl: i64 = cmd(&mut conn, redis::cmd("TTL").arg("allowed2")).await;
    assert!((100..=120).contains(&ttl), "TTL {ttl}");
    let denied: i64 = cmd(&mut conn, redis::cmd("EXISTS").arg("denied2")).await;
    assert_eq!(denied, 0, "nothing denied, no denied counter");
}

#[tokio::test]
async fn every_argument_error_is_named_and_writes_nothing() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let one = ["k"];
    let two = ["k", "stats-allowed"];
    let three = ["k", "k2", "k3"];
    let c = "concurrency.lua";
    let l = "lease.lua";
    let cases: Vec<(&str, &[&str], Vec<&str>, &str)> = vec![
        (
            c,
            &one,
            vec!["0", "1000", "", "id"],
            "limit must be an integer >= 1, got '0'",
        ),
        (c, &one, vec!["-1", "1000", "", "id"], "limit"),
        (c, &one, vec!["2.5", "1000", "", "id"], "limit"),
        (c, &one, vec!["many", "1000", "", "id"], "limit"),
        (c, &one, vec!["", "1000", "", "id"], "limit is required"),
        (
            c,
            &one,
            vec!["3", "0", "", "id"],
            "lease_ms must be an integer >= 1",
        ),
        (c, &one, vec!["3", "nan", "", "id"], "lease_ms"),
        (c, &one, vec!["3", "inf", "", "id"], "lease_ms"),
        (c, &one, vec!["3", "", "", "id"], "lease_ms is required"),
        (c, &one, vec!["3", "1000", "", ""], "lease id"),
        (c, &one, vec!["3", "1000", ""], "lease id"),
        (
            c,
            &one,
            vec!["3", "1000", "", "id", "-1"],
            "cost must be an integer >= 0",
        ),
        (c, &one, vec!["3", "1000", "", "id", "0.5"], "cost"),
        (c, &one, vec!["3", "1000", "", "id", "one"], "cost"),
        (c, &one, vec!["3", "1000", "", "id", "1", "0"], "stats TTL"),
        (
            c,
            &one,
            vec!["3", "1000", "soon", "id"],
            "now_ms must be an integer >= 0 or \"\"",
        ),
        (c, &one, vec!["3", "1000", "-1", "id"], "now_ms"),
        (c, &one, vec!["3", "1000", "1.5", "id"], "now_ms"),
        (
            c,
            &two,
            vec!["3", "1000", "", "id"],
            "expected 1 key (leases) or 3",
        ),
        (c, &[], vec!["3", "1000", "", "id"], "expected 1 key"),
        (l, &[], vec!["release", "id", ""], "expected at least 1 key"),
        (
            l,
            &one,
            vec!["free", "id", ""],
            "op must be 'release' or 'renew', got 'free'",
        ),
        (l, &one, vec![], "op must be"),
        (l, &one, vec!["release", "", ""], "lease id is required"),
        (l, &one, vec!["renew"], "lease id is required"),
        (
            l,
            &one,
            vec!["release", "id", "later"],
            "now_ms must be an integer >= 0",
        ),
        (l, &one, vec!["renew", "id", "-5", "1000"], "now_ms"),
        (
            l,
            &one,
            vec!["release", "id", "", "120", "x"],
            "release takes 3 ARGV (op, lease id, now_ms) and an optional stats TTL",
        ),
        // A stats TTL makes the last key the counter: a set is still needed before it.
        (
            l,
            &one,
            vec!["release", "id", "", "120"],
            "takes at least 2 keys",
        ),
        (
            l,
            &three,
            vec!["release", "id", "", "0"],
            "stats_ttl_secs (ARGV[4]) must be an integer >= 1",
        ),
        (
            l,
            &one,
            vec!["renew", "id", ""],
            "one lease_ms per key: expected 1",
        ),
        (
            l,
            &three,
            vec!["renew", "id", "", "1000", "1000"],
            "expected 3 (ARGV[4..6]), got 2",
        ),
        (
            l,
            &one,
            vec!["renew", "id", "", "0"],
            "lease_ms for key 1 (ARGV[4]) must be an integer >= 1",
        ),
        (
            l,
            &three,
            vec!["renew", "id", "", "1000", "soon", "1000"],
            "lease_ms for key 2 (ARGV[5])",
        ),
    ];
    let mut shas = HashMap::new();
    for name in [c, l] {
        shas.insert(name, load(&mut conn, name).await);
    }
    for (name, keys, argv, needle) in &cases {
        let results = [
            (
                "EVAL",
                eval::<redis::Value>(&mut conn, name, keys, argv).await,
            ),
            (
                "EVALSHA",
                evalsha::<redis::Value, _>(&mut conn, &shas[name], keys, argv).await,
            ),
        ];
        for (how, result) in results {
            let ctx = format!("{how} {name} KEYS {keys:?} ARGV {argv:?}");
            let err = result.expect_err(&ctx);
            let message = err.to_string();
            assert!(
                message.contains(needle),
                "{ctx}: {message:?} lacks {needle:?}"
            );
            // "ratelockr" is the error code; the message goes on with the script's name.
            let script = format!("{}: ", name.trim_end_matches(".lua"));
            assert!(
                message.contains(&script),
                "{ctx}: {message:?} does not say which script"
            );
            assert_eq!(err.code(), Some("ratelockr"), "{ctx}: {message}");
        }
        let dbsize: i64 = cmd(&mut conn, &redis::cmd("DBSIZE")).await;
        assert_eq!(
            dbsize, 0,
            "{name} ARGV {argv:?}: a refused call wrote a key"
        );
    }
}

#[tokio::test]
async fn the_header_examples_hold() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let key = "ratelockr:cc:{api}:user42";
    let header = |name: &str| {
        source(name)
            .split("]]")
            .next()
            .expect("a header")
            .to_string()
    };

    let take = header("concurrency.lua");
    assert!(
        take.contains(&format!("1 {key} 10 60000 \"\" lease-1")),
        "{take}"
    );
    let reply: Vec<i64> = eval(
        &mut conn,
        "concurrency.lua",
        &[key],
        &["10", "60000", "", "lease-1"],
    )
    .await
    .expect("the example runs");
    assert_eq!(reply, [1, 9, 0, 60_000]);
    for (i, n) in reply.iter().enumerate() {
        let shown = format!("{}) (integer) {n}", i + 1);
        assert!(
            take.contains(&shown),
            "concurrency.lua's header lacks {shown:?}"
        );
    }

    let release = header("lease.lua");
    assert!(
        release.contains(&format!("1 {key} release lease-1 \"\"")),
        "{release}"
    );
    let freed: i64 = eval(&mut conn, "lease.lua", &[key], &["release", "lease-1", ""])
        .await
        .expect("the example runs");
    assert_eq!(freed, 1);
    assert!(release.contains("(integer) 1"), "{release}");
}

// --- The property of issue 35: many holders on their own connections, random schedules. ---

const TASKS: usize = 32;
/// Each holder runs until it was admitted this many times (at most `MAX_ROUNDS` takes).
const ADMISSIONS: usize = 10;
const MAX_ROUNDS: usize = 5_000;
const P_LIMIT: u64 = 5;
/// Short enough that the leases of killed holders expire within the test.
const P_LEASE: u64 = 250;
const P_KEY: &str = "{prop}:leases";
/// Incremented in the same MULTI as each script call: the order Redis ran the calls in.
const P_SEQ: &str = "{prop}:seq";

/// One take, as its holder logged it.
#[derive(Debug)]
struct Taken {
    task: usize,
    seq: u64,
    /// The server's clock just before the script, in the same MULTI: at most the script's now.
    before: u64,
    /// The script's own now for an admitted take (the lease's expiry - lease_ms).
    now: Option<u64>,
    id: String,
    reply: Vec<i64>,
}

/// One release: the order it ran in, and how many leases it freed.
#[derive(Debug)]
struct Released {
    seq: u64,
    freed: i64,
}

/// A holder: takes a lease, holds it for a random time and releases it; sometimes it is
/// "killed" while holding (never releases), sometimes it holds past lease_ms. Each call is one
/// MULTI with INCR of the sequence key (and ZSCORE of the new lease, its exact expiry), so the
/// log says in which order Redis ran the calls and on which clock reading.
async fn holder(
    url: String,
    shas: (String, String),
    task: usize,
    seed: u64,
) -> (Vec<Taken>, HashMap<String, Released>) {
    let mut conn = redis::Client::open(url)
        .expect("a valid URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let mut rng =
        StdRng::seed_from_u64(seed.wrapping_add((task as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let (mut taken, mut released) = (Vec::new(), HashMap::new());
    let (mut admitted, mut killed_once) = (0, false);
    for round in 0..MAX_ROUNDS {
        if admitted == ADMISSIONS {
            break;
        }
        let id = format!("t{task}-r{round}");
        let ((secs, micros), reply, score, seq): ((u64, u64), Vec<i64>, Option<f64>, u64) =
            redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("EVALSHA")
                .arg(&shas.0)
                .arg(1)
                .arg(P_KEY)
                .arg(P_LIMIT)
                .arg(P_LEASE)
                .arg("")
                .arg(&id)
                .cmd("ZSCORE")
                .arg(P_KEY)
                .arg(&id)
                .cmd("INCR")
                .arg(P_SEQ)
                .query_async(&mut conn)
                .await
                .expect("take");
        let allowed = reply[0] == 1;
        taken.push(Taken {
            task,
            seq,
            before: secs * 1000 + micros / 1000,
            now: score.map(|expiry| expiry as u64 - P_LEASE),
            id: id.clone(),
            reply,
        });
        if !allowed {
            tokio::time::sleep(Duration::from_millis(rng.random_range(1..10))).await;
            continue;
        }
        admitted += 1;
        // Every eighth holder is killed on its first lease, any lease 1 in 30.
        if (task % 8 == 0 && !killed_once) || rng.random_bool(1.0 / 30.0) {
            killed_once = true;
            continue;
        }
        // Mostly short holds; 1 in 30 past lease_ms (its release then frees nothing).
        let hold = if rng.random_bool(1.0 / 30.0) {
            P_LEASE + rng.random_range(0..100)
        } else {
            rng.random_range(0..20)
        };
        tokio::time::sleep(Duration::from_millis(hold)).await;
        let (freed, seq): (i64, u64) = redis::pipe()
            .atomic()
            .cmd("EVALSHA")
            .arg(&shas.1)
            .arg(1)
            .arg(P_KEY)
            .arg("release")
            .arg(&id)
            .arg("")
            .cmd("INCR")
            .arg(P_SEQ)
            .query_async(&mut conn)
            .await
            .expect("release");
        released.insert(id, Released { seq, freed });
    }
    (taken, released)
}

/// An admitted lease as the logs tell it (the sweep meets them in the order they were taken):
/// live until `expiry`, unless the release that freed it (the call at `freed_at`) ran first.
struct Held {
    expiry: u64,
    freed_at: Option<u64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_holders_never_hold_more_than_the_limit_and_dead_holders_free_their_slots() {
    let server = common::redis();
    let mut conn = connect(&server).await;
    let shas = (
        load(&mut conn, "concurrency.lua").await,
        load(&mut conn, "lease.lua").await,
    );
    let seed: u64 = rand::random();
    let ctx = format!("seed {seed}, on {}", common::server());
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| tokio::spawn(holder(server.url(), shas.clone(), task, seed)))
        .collect();
    let (mut taken, mut released) = (Vec::new(), HashMap::new());
    for task in tasks {
        let (t, r) = task.await.expect("a holder panicked");
        taken.extend(t);
        released.extend(r);
    }
    taken.sort_by_key(|t| t.seq);

    let mut held: Vec<Held> = Vec::new();
    let mut clock_went_back = false;
    let mut last_now = 0;
    let (mut admitted, mut denied) = (0, 0);
    for take in &taken {
        // The leases live when this take ran, from the logs alone: taken before it, not yet
        // freed by a release that ran before it, not yet expired at its now. For a denial the
        // script's now is not known: `before` is at most it, so the count is at least the
        // script's.
        let at = take.now.unwrap_or(take.before);
        clock_went_back |= take.before < last_now;
        last_now = last_now.max(at);
        let live = held
            .iter()
            .filter(|h| h.expiry > at && h.freed_at.is_none_or(|f| f > take.seq))
            .count() as u64;
        let what = format!(
            "{ctx}: holder {}'s take {take:?} with {live} leases live",
            take.task
        );
        if let Some(now) = take.now {
            admitted += 1;
            assert_eq!(take.reply[0], 1, "{what}");
            assert!(live < P_LIMIT, "{what}: more than {P_LIMIT} held at once");
            if !clock_went_back {
                // Exact while the server's clock runs forwards (a step back would bring pruned
                // leases back to life in this count).
                assert_eq!(
                    take.reply[1] as u64,
                    P_LIMIT - live - 1,
                    "{what}: remaining"
                );
            }
            let freed_at = released
                .get(&take.id)
                .filter(|r| r.freed == 1)
                .map(|r| r.seq);
            held.push(Held {
                expiry: now + P_LEASE,
                freed_at,
            });
        } else {
            denied += 1;
            assert_eq!(take.reply[..2], [0, 0], "{what}");
            assert!(
                take.reply[2] >= 1 && take.reply[2] <= take.reply[3],
                "{what}"
            );
            if !clock_went_back {
                assert!(
                    live >= P_LIMIT,
                    "{what}: denied while a slot was free (a lease leaked)"
                );
            }
        }
    }
    assert!(
        denied > 0,
        "{ctx}: {TASKS} holders never filled {P_LIMIT} slots"
    );
    assert!(admitted > P_LIMIT as usize, "{ctx}: {admitted} admitted");
    for (id, release) in &released {
        assert!(
            taken.iter().any(|t| &t.id == id && t.now.is_some()),
            "{ctx}: released {id}, never admitted ({release:?})"
        );
    }

    // The killed holders' leases: held until their expiry, then their slots come back.
    let never_freed: Vec<&Held> = held.iter().filter(|h| h.freed_at.is_none()).collect();
    let killed = taken
        .iter()
        .filter(|t| t.now.is_some() && !released.contains_key(&t.id))
        .count();
    assert!(killed >= TASKS / 8, "{ctx}: {killed} killed holders");
    let last_expiry = never_freed
        .iter()
        .map(|h| h.expiry)
        .max()
        .expect("killed leases");
    while server_ms(&mut conn).await <= last_expiry {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let limit = P_LIMIT.to_string();
    let lease = P_LEASE.to_string();
    let peek: Vec<i64> = evalsha(
        &mut conn,
        &shas.0,
        &[P_KEY],
        &[&limit, &lease, "", "peek", "0"],
    )
    .await
    .expect("peek");
    assert_eq!(
        peek,
        [1, P_LIMIT as i64, 0, 0],
        "{ctx}: every slot came back"
    );
    for n in 0..=P_LIMIT {
        let id = format!("after-{n}");
        let reply: Vec<i64> = evalsha(&mut conn, &shas.0, &[P_KEY], &[&limit, "60000", "", &id])
            .await
            .expect("take");
        assert_eq!(reply[0], i64::from(n < P_LIMIT), "{ctx}: {id} {reply:?}");
    }
}
