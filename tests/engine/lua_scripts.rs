//! The Lua scripts called directly (EVAL and EVALSHA), as any Redis client could: argument
//! errors name the argument and change nothing; KEYS[1] with the documented ARGV alone works as
//! design.md describes.

use crate::common;

use crate::common::{query, redis};
use ratelockr::scripts::source;
use ratelockr::{AlgorithmKind, EmbeddedRedis, Limiter};

fn limiter_on(server: &EmbeddedRedis) -> Limiter {
    common::limiter(server, "lua")
}

async fn eval(
    limiter: &Limiter,
    kind: AlgorithmKind,
    keys: &[&str],
    argv: &[&str],
) -> redis::RedisResult<Vec<i64>> {
    redis::cmd("EVAL")
        .arg(source(kind))
        .arg(keys.len())
        .arg(keys)
        .arg(argv)
        .query_async(&mut limiter.connection())
        .await
}

async fn evalsha(
    limiter: &Limiter,
    sha: &str,
    keys: &[&str],
    argv: &[&str],
) -> redis::RedisResult<Vec<i64>> {
    redis::cmd("EVALSHA")
        .arg(sha)
        .arg(keys.len())
        .arg(keys)
        .arg(argv)
        .query_async(&mut limiter.connection())
        .await
}

async fn dbsize(limiter: &Limiter) -> i64 {
    query(limiter, &redis::cmd("DBSIZE")).await
}

#[tokio::test]
async fn bad_arguments_are_refused_naming_the_argument() {
    use AlgorithmKind::{
        FixedWindow as Fw, Gcra as Gc, SlidingWindowCounter as Sc, SlidingWindowLog as Sw,
        TokenBucket as Tb,
    };
    let server = redis();
    let limiter = limiter_on(&server);
    let one = ["k"];
    let two = ["k", "stats-allowed"];
    let three = ["k", "a", "d"];
    let cases: Vec<(AlgorithmKind, &[&str], Vec<&str>, &str)> = vec![
        (Tb, &one, vec!["0", "1", "", "1"], "capacity"),
        (Tb, &one, vec!["-3", "1", ""], "capacity"),
        (Tb, &one, vec!["2.5", "1", ""], "capacity"),
        (Tb, &one, vec!["", "1", ""], "capacity is required"),
        (Tb, &one, vec!["5", "0", ""], "refill rate"),
        (Tb, &one, vec!["5", "-1", ""], "refill rate"),
        (Tb, &one, vec!["5", "nan", ""], "refill rate"),
        (Tb, &one, vec!["5", "inf", ""], "refill rate"),
        (Tb, &one, vec!["5", "fast", ""], "refill rate"),
        (
            Tb,
            &one,
            vec!["5", "1", "", "6"],
            "cost 6 exceeds capacity 5",
        ),
        (Tb, &one, vec!["5", "1", "", "-1"], "cost"),
        (Tb, &one, vec!["5", "1", "yesterday"], "now_ms"),
        (Tb, &one, vec!["5", "1", "-1"], "now_ms"),
        (Tb, &two, vec!["5", "1", ""], "expected 1 key"),
        (Tb, &[], vec!["5", "1", ""], "expected 1 key"),
        (Sw, &one, vec!["0", "1000", "", "m"], "limit"),
        (Sw, &one, vec!["3", "0", "", "m"], "window_ms"),
        (Sw, &one, vec!["3", "-1000", "", "m"], "window_ms"),
        (Sw, &one, vec!["3", "1000", "", ""], "member"),
        (
            Sw,
            &one,
            vec!["3", "1000", "", "m", "4"],
            "cost 4 exceeds limit 3",
        ),
        (Sw, &one, vec!["3", "1000", "soon", "m"], "now_ms"),
        (Sw, &two, vec!["3", "1000", "", "m"], "expected 1 key"),
        (Fw, &one, vec!["0", "1000"], "limit"),
        (Fw, &one, vec!["3", "0"], "window_ms"),
        (Fw, &one, vec!["3"], "window_ms is required"),
        (Fw, &one, vec!["3", "1000", "4"], "cost 4 exceeds limit 3"),
        (Fw, &one, vec!["3", "1000", "0.5"], "cost"),
        (Fw, &two, vec!["3", "1000"], "expected 1 key"),
        (Fw, &[], vec!["3", "1000"], "expected 1 key"),
        (Gc, &one, vec!["0", "1000", "1", ""], "limit"),
        (Gc, &one, vec!["10", "0", "1", ""], "period_ms"),
        (Gc, &one, vec!["10", "1000", "0", ""], "burst"),
        (Gc, &one, vec!["10", "1000", "", ""], "burst is required"),
        (Gc, &one, vec!["10", "1000", "2.5", ""], "burst"),
        (
            Gc,
            &one,
            vec!["10", "1000", "3", "", "4"],
            "cost 4 exceeds burst 3",
        ),
        (Gc, &one, vec!["10", "1000", "3", "", "-1"], "cost"),
        (Gc, &one, vec!["10", "1000", "3", "later"], "now_ms"),
        (
            Gc,
            &one,
            vec!["10", "1000000000", "100000000", ""],
            "burst x period_ms must be at most 2^52",
        ),
        (Gc, &two, vec!["10", "1000", "3", ""], "expected 1 key"),
        (Sc, &one, vec!["0", "1000", ""], "limit"),
        (Sc, &one, vec!["3", "0", ""], "window_ms"),
        (Sc, &one, vec!["3", "", ""], "window_ms is required"),
        (
            Sc,
            &one,
            vec!["3", "1000", "", "4"],
            "cost 4 exceeds limit 3",
        ),
        (Sc, &one, vec!["3", "1000", "", "nan"], "cost"),
        (Sc, &one, vec!["3", "1000", "-5"], "now_ms"),
        (
            Sc,
            &one,
            vec!["100000000", "1000000000", ""],
            "limit x window_ms must be at most 2^52",
        ),
        (Sc, &[], vec!["3", "1000", ""], "expected 1 key"),
    ];
    let mut shas = Vec::new();
    for kind in AlgorithmKind::ALL {
        let sha: String = query(&limiter, redis::cmd("SCRIPT").arg("LOAD").arg(source(kind))).await;
        shas.push((kind, sha));
    }
    for (kind, keys, argv, needle) in &cases {
        let sha = &shas.iter().find(|(k, _)| k == kind).expect("loaded").1;
        let results = [
            ("EVAL", eval(&limiter, *kind, keys, argv).await),
            ("EVALSHA", evalsha(&limiter, sha, keys, argv).await),
        ];
        for (how, result) in results {
            let ctx = format!("{how} {kind} KEYS {keys:?} ARGV {argv:?}");
            let err = result.expect_err(&ctx);
            let message = err.to_string();
            assert!(
                message.contains(needle),
                "{ctx}: {message:?} lacks {needle:?}"
            );
            assert!(
                message.contains(kind.as_str()),
                "{ctx}: {message:?} does not say which script"
            );
            assert_eq!(err.code(), Some("ratelockr"), "{ctx}: {message}");
        }
        assert_eq!(dbsize(&limiter).await, 0, "a refused call wrote a key");
    }
    // Three keys is the telemetry form: accepted.
    let ok = eval(&limiter, Tb, &three, &["5", "1", ""]).await;
    assert_eq!(ok.expect("three keys are fine"), vec![1, 4, 0, 1000]);
    let counted: (Option<u64>, Option<u64>) =
        query(&limiter, redis::cmd("MGET").arg("a").arg("d")).await;
    assert_eq!(counted, (Some(1), None), "the allowed decision is counted");
}

#[tokio::test]
async fn keys1_and_the_documented_argv_alone_work_as_designed() {
    let server = redis();
    let limiter = limiter_on(&server);

    // token_bucket: capacity, refill rate, now_ms, cost (default 1).
    let tb = "tb-doc";
    let reply = eval(
        &limiter,
        AlgorithmKind::TokenBucket,
        &[tb],
        &["10", "5", ""],
    )
    .await;
    assert_eq!(reply.expect("token bucket"), vec![1, 9, 0, 200]);
    let reply = eval(
        &limiter,
        AlgorithmKind::TokenBucket,
        &[tb],
        &["10", "5", "", "3"],
    )
    .await;
    let reply = reply.expect("token bucket with cost");
    assert_eq!(&reply[..3], &[1, 6, 0]);
    let state: Vec<u8> = query(&limiter, redis::cmd("GET").arg(tb)).await;
    let (tokens, last) = common::unpack_bucket(&state);
    assert!((6.0..6.1).contains(&tokens), "{tokens}");
    assert!(
        last > 1_600_000_000_000.0 && last.fract() == 0.0,
        "last_refill is the Redis clock in ms: {last}"
    );
    let ttl: i64 = query(&limiter, redis::cmd("TTL").arg(tb)).await;
    assert_eq!(ttl, 4, "ceil(10 / 5 * 2)");
    // An explicit clock.
    let explicit = "tb-explicit";
    let argv = ["4", "2", "1000000", "4"];
    let reply = eval(&limiter, AlgorithmKind::TokenBucket, &[explicit], &argv).await;
    assert_eq!(reply.expect("explicit"), vec![1, 0, 0, 2000]);
    let argv = ["4", "2", "1000250", "1"];
    let reply = eval(&limiter, AlgorithmKind::TokenBucket, &[explicit], &argv).await;
    assert_eq!(reply.expect("explicit"), vec![0, 0, 250, 1750]);

    // sliding_window_log: limit, window_ms, now_ms, member.
    let sw = "sw-doc";
    let argv = ["5", "1000", "", "req-1"];
    let reply = eval(&limiter, AlgorithmKind::SlidingWindowLog, &[sw], &argv).await;
    assert_eq!(reply.expect("sliding log"), vec![1, 4, 0, 1000]);
    let argv = ["2", "60000", "5000", "a"];
    let reply = eval(&limiter, AlgorithmKind::SlidingWindowLog, &["sw-x"], &argv).await;
    assert_eq!(reply.expect("explicit"), vec![1, 1, 0, 60000]);
    let argv = ["2", "60000", "5000", "b"];
    let reply = eval(&limiter, AlgorithmKind::SlidingWindowLog, &["sw-x"], &argv).await;
    assert_eq!(reply.expect("explicit"), vec![1, 0, 0, 60000]);
    let argv = ["2", "60000", "6000", "c"];
    let reply = eval(&limiter, AlgorithmKind::SlidingWindowLog, &["sw-x"], &argv).await;
    assert_eq!(reply.expect("explicit"), vec![0, 0, 59000, 59000]);
    let members: Vec<String> =
        query(&limiter, redis::cmd("ZRANGE").arg("sw-x").arg(0).arg(-1)).await;
    assert_eq!(members, ["a", "b"], "the denied request c is not logged");
    let ttl: i64 = query(&limiter, redis::cmd("PTTL").arg(sw)).await;
    assert!((1..=1000).contains(&ttl), "PTTL {ttl}");

    // fixed_window: limit, window_ms, cost (default 1).
    let fw = "fw-doc";
    let reply = eval(
        &limiter,
        AlgorithmKind::FixedWindow,
        &[fw],
        &["100", "60000"],
    )
    .await;
    assert_eq!(reply.expect("fixed window"), vec![1, 99, 0, 60000]);
    let reply = eval(
        &limiter,
        AlgorithmKind::FixedWindow,
        &[fw],
        &["100", "60000", "5"],
    )
    .await;
    let reply = reply.expect("fixed window with cost");
    assert_eq!(&reply[..3], &[1, 94, 0]);
    assert!(reply[3] > 58_000 && reply[3] <= 60_000, "{reply:?}");
    let count: u64 = query(&limiter, redis::cmd("GET").arg(fw)).await;
    assert_eq!(count, 6);

    // gcra: limit, period_ms, burst, now_ms, cost (default 1).
    let argv = ["2", "1000", "2", "5000"];
    let reply = eval(&limiter, AlgorithmKind::Gcra, &["gc-doc"], &argv).await;
    assert_eq!(reply.expect("gcra"), vec![1, 1, 0, 500]);
    let argv = ["2", "1000", "2", "5000", "2"];
    let reply = eval(&limiter, AlgorithmKind::Gcra, &["gc-doc"], &argv).await;
    assert_eq!(reply.expect("gcra with cost"), vec![0, 1, 500, 500]);
    let ttl: i64 = query(&limiter, redis::cmd("PTTL").arg("gc-doc")).await;
    assert!((1..=500).contains(&ttl), "PX ceil(TAT - now): {ttl}");

    // sliding_window_counter: limit, window_ms, now_ms, cost (default 1).
    let argv = ["3", "1000", "5000"];
    let reply = eval(
        &limiter,
        AlgorithmKind::SlidingWindowCounter,
        &["sc-doc"],
        &argv,
    )
    .await;
    assert_eq!(reply.expect("counter"), vec![1, 2, 0, 2000]);
    let argv = ["3", "1000", "5500", "3"];
    let reply = eval(
        &limiter,
        AlgorithmKind::SlidingWindowCounter,
        &["sc-doc"],
        &argv,
    )
    .await;
    assert_eq!(reply.expect("counter with cost"), vec![0, 2, 1500, 1500]);
    let ttl: i64 = query(&limiter, redis::cmd("PTTL").arg("sc-doc")).await;
    assert!((1..=2000).contains(&ttl), "PEXPIRE 2 x window: {ttl}");

    // Each call touched its KEYS[1] and nothing else.
    let mut keys: Vec<String> = query(&limiter, redis::cmd("KEYS").arg("*")).await;
    keys.sort();
    assert_eq!(
        keys,
        [
            "fw-doc",
            "gc-doc",
            "sc-doc",
            "sw-doc",
            "sw-x",
            "tb-doc",
            "tb-explicit"
        ]
    );
}

#[tokio::test]
async fn the_header_examples_hold() {
    let server = redis();
    let limiter = limiter_on(&server);
    // Each header ends its EXAMPLE with the reply it shows: a fresh key gives exactly that.
    let examples: [(AlgorithmKind, &[&str], [i64; 4]); 5] = [
        (
            AlgorithmKind::TokenBucket,
            &["10", "5", "", "1"],
            [1, 9, 0, 200],
        ),
        (
            AlgorithmKind::SlidingWindowLog,
            &["5", "1000", "", "req-1"],
            [1, 4, 0, 1000],
        ),
        (
            AlgorithmKind::FixedWindow,
            &["100", "60000"],
            [1, 99, 0, 60000],
        ),
        (
            AlgorithmKind::Gcra,
            &["10", "1000", "5", "", "1"],
            [1, 4, 0, 100],
        ),
        (
            AlgorithmKind::SlidingWindowCounter,
            &["10", "1000", "1700000000250", "1"],
            [1, 9, 0, 1750],
        ),
    ];
    for (kind, argv, expected) in examples {
        let header = source(kind).split("]]").next().expect("a header");
        let reply = eval(&limiter, kind, &[&format!("ex-{kind}")], argv).await;
        assert_eq!(reply.expect("the example runs"), expected, "{kind}");
        for (i, n) in expected.iter().enumerate() {
            let shown = format!("{}) (integer) {n}", i + 1);
            assert!(header.contains(&shown), "{kind} header lacks {shown:?}");
        }
    }
}

/// `source` wrapped so that a reply element with a fraction comes back as the text
/// `fraction:<value>` instead of being truncated by the server's Lua-to-RESP conversion (Redis
/// and Valkey truncate; a Lua 5.4 server may not): the reply then fails to parse as integers.
fn fractions_shown(source: &str) -> String {
    format!(
        "local function body()\n{source}\nend\nlocal r = body()\n\
         if type(r) == 'table' and r.err == nil then\n  for i = 1, #r do\n    \
         if type(r[i]) == 'number' and r[i] % 1 ~= 0 then r[i] = 'fraction:' .. string.format('%.17g', r[i]) end\n  \
         end\nend\nreturn r"
    )
}

#[tokio::test]
async fn every_reply_is_whole_numbers_even_when_rates_do_not_divide() {
    use AlgorithmKind::{
        FixedWindow as Fw, Gcra as Gc, SlidingWindowCounter as Sc, SlidingWindowLog as Sw,
        TokenBucket as Tb,
    };
    let server = redis();
    let limiter = limiter_on(&server);
    // Offsets from T0 that land inside, on and across windows and refills, backwards included.
    let offsets = [
        0u64, 1, 3, 333, 334, 999, 1000, 1001, 500, 2_345, 7_001, 7_000,
    ];
    let t0 = common::T0;
    // Each script with its ARGV; NOW and MEMBER are filled in per call.
    let mut cases: Vec<(AlgorithmKind, Vec<String>)> = Vec::new();
    for (capacity, rate) in [(1, "0.3"), (7, "3"), (10, "142.857142857"), (5, "1000")] {
        for cost in [1, 0, capacity] {
            cases.push((
                Tb,
                vec![
                    capacity.to_string(),
                    rate.into(),
                    "NOW".into(),
                    cost.to_string(),
                ],
            ));
        }
    }
    for (limit, period, burst) in [(3, 1000, 1), (7, 1000, 3), (3, 10, 3), (1000, 7, 9)] {
        for cost in [1, 0, burst] {
            let argv = [limit, period, burst].map(|n| n.to_string());
            let mut argv = argv.to_vec();
            argv.extend(["NOW".into(), cost.to_string()]);
            cases.push((Gc, argv));
        }
    }
    for (limit, window) in [(3, 7), (7, 1000), (2, 3)] {
        for cost in [1, 0, limit] {
            let base = [limit.to_string(), window.to_string()];
            cases.push((Sc, [&base[..], &["NOW".into(), cost.to_string()]].concat()));
            cases.push((
                Sw,
                [
                    &base[..],
                    &["NOW".into(), "MEMBER".into(), cost.to_string()],
                ]
                .concat(),
            ));
            let fw = [cost.to_string(), "120".into(), "NOW".into()];
            cases.push((Fw, [&base[..], &fw[..]].concat()));
        }
    }
    let mut calls = 0;
    for (n, (kind, argv)) in cases.iter().enumerate() {
        let script = fractions_shown(source(*kind));
        let key = format!("whole-{n}");
        for (i, offset) in offsets.iter().enumerate() {
            let argv: Vec<String> = argv
                .iter()
                .map(|a| match a.as_str() {
                    "NOW" => (t0 + offset).to_string(),
                    "MEMBER" => format!("m-{i}"),
                    _ => a.clone(),
                })
                .collect();
            let reply: redis::RedisResult<Vec<i64>> = redis::cmd("EVAL")
                .arg(&script)
                .arg(1)
                .arg(&key)
                .arg(&argv)
                .query_async(&mut limiter.connection())
                .await;
            let reply = reply.unwrap_or_else(|err| {
                panic!("{kind} ARGV {argv:?}: a reply element is not a whole number: {err}")
            });
            assert_eq!(reply.len(), 4, "{kind} ARGV {argv:?}: {reply:?}");
            calls += 1;
        }
    }
    assert!(calls > 300, "{calls} calls");
}
