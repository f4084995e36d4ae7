//! `lua/policy.lua` called as any Redis client would call it: the header's example holds, and
//! bad arguments are refused with a message naming the argument, writing nothing.

mod common;

use common::query;
use ratelockr::policy::script::POLICY_LUA;

fn eval(keys: &[&str], argv: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(POLICY_LUA).arg(keys.len());
    for k in keys {
        cmd.arg(*k);
    }
    for a in argv {
        cmd.arg(*a);
    }
    cmd
}

#[tokio::test]
async fn the_header_example_holds() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-lua");
    let reply: Vec<i64> = query(
        &limiter,
        &eval(
            &[
                "ratelockr:tb:{api}.per-second:user42",
                "ratelockr:fw:{api}.daily:user42",
            ],
            &[
                "2", "", "1", "enforce", "120", "", "", "tb", "10", "10", "", "fw", "2000",
                "86400000", "",
            ],
        ),
    )
    .await;
    assert_eq!(
        reply,
        [1, 9, 0, 86_400_000, 0, 1, 1, 9, 0, 100, 1, 1999, 0, 86_400_000]
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_naming_the_argument() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-lua-bad");
    let tb = ["tb", "10", "1", ""];
    let with = |head: &[&'static str], limits: &[&'static str]| -> Vec<&'static str> {
        head.iter().chain(limits).copied().collect()
    };
    let head = ["1", "1000", "1", "enforce", "120", "m", ""];
    let cases: Vec<(Vec<&str>, Vec<&str>, &str)> = vec![
        (
            vec!["k"],
            with(&["9", "1000", "1", "", "", "", ""], &tb),
            "ARGV[1] n",
        ),
        (vec!["k", "a"], with(&head, &tb), "expected 1 keys"),
        (
            vec!["k"],
            with(&["1", "1000", "-1", "", "", "", ""], &tb),
            "ARGV[3] cost",
        ),
        (
            vec!["k"],
            with(&["1", "1000", "1", "dry", "", "", ""], &tb),
            "ARGV[4] mode",
        ),
        (
            vec!["k"],
            with(&["1", "1000", "1", "", "0", "", ""], &tb),
            "ARGV[5] stats TTL",
        ),
        (
            vec!["k"],
            with(&["1", "1000", "1", "", "", "", "2"], &tb),
            "ARGV[7] fw clock",
        ),
        (
            vec!["k"],
            with(&head, &["xx", "1", "1", ""]),
            "ARGV[8] kind",
        ),
        (
            vec!["k"],
            with(&head, &["tb", "0", "1", ""]),
            "ARGV[9] capacity",
        ),
        (
            vec!["k"],
            with(&head, &["tb", "5", "-2", ""]),
            "ARGV[10] refill per second",
        ),
        (
            vec!["k"],
            with(&head, &["gc", "5", "1000", "x"]),
            "ARGV[11] burst",
        ),
        (
            vec!["k"],
            with(&head, &["gc", "5", "1000000000000000", "5"]),
            "2^52",
        ),
        (
            vec!["k"],
            with(&head, &["sc", "5", "0", ""]),
            "ARGV[10] window_ms",
        ),
        (
            vec!["k"],
            with(
                &["1", "1000", "1", "", "", "", ""],
                &["sw", "5", "1000", ""],
            ),
            "ARGV[6] member",
        ),
        (
            vec!["k"],
            with(
                &["1", "1000", "6", "", "", "", ""],
                &["fw", "5", "1000", ""],
            ),
            "cost 6 exceeds limit 1's limit 5",
        ),
        (
            vec!["k"],
            with(&["1", "-5", "1", "", "", "", ""], &tb),
            "ARGV[2] now_ms",
        ),
    ];
    for (keys, argv, words) in cases {
        let err = eval(&keys, &argv)
            .query_async::<redis::Value>(&mut limiter.connection())
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(words), "{argv:?}: {err}");
        assert!(err.code() == Some("ratelockr"), "{err}");
    }
    let keys: Vec<String> = query(&limiter, redis::cmd("KEYS").arg("*")).await;
    assert!(keys.is_empty(), "refused calls wrote {keys:?}");
    // A corrupt key fails the call in the first pass, before any limit is charged.
    let _: () = query(&limiter, redis::cmd("SET").arg("gc").arg("junk")).await;
    let err = eval(
        &["tb", "gc"],
        &[
            "2", "1000", "1", "", "", "", "", "tb", "10", "1", "", "gc", "5", "1000", "5",
        ],
    )
    .query_async::<redis::Value>(&mut limiter.connection())
    .await
    .expect_err("refused");
    assert!(err.to_string().contains("not a TAT"), "{err}");
    let tb: Option<Vec<u8>> = query(&limiter, redis::cmd("GET").arg("tb")).await;
    assert!(tb.is_none(), "the bucket was charged before the failure");
}
