//! `lua/policy.lua` called as any Redis client would call it: the header's example holds, and
//! bad arguments are refused with a message naming the argument, writing nothing.

use crate::common;

use crate::common::query;
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

/// A token-bucket limit keeps its TTL as `token_bucket.lua` does: on the server's clock set by
/// the first admission of each half-TTL period and kept by the others, on a caller's clock
/// set by every admission.
#[tokio::test]
async fn a_bucket_limit_renews_its_ttl_as_the_standalone_script_does() {
    let server = common::redis();
    let limiter = common::limiter(&server, "pol-lua-ttl");
    // 10 tokens at 0.01 a second: a TTL of 2,000 s, periods of 1,000,000 ms.
    let call = |now: &str| {
        eval(
            &["b"],
            &[
                "1", now, "1", "enforce", "120", "", "", "tb", "10", "0.01", "",
            ],
        )
    };
    // Lowers the TTL to 1,500 s, admits, and reads the PTTL and last_refill, in one MULTI.
    let admit = |now: &str| {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("PEXPIRE")
            .arg("b")
            .arg(1_500_000)
            .ignore()
            .add_command(call(now))
            .ignore()
            .cmd("PTTL")
            .arg("b")
            .cmd("GET")
            .arg("b");
        pipe
    };
    let last = |state: &[u8]| f64::from_le_bytes(state[8..16].try_into().expect("16 bytes"));
    let _: Vec<i64> = query(&limiter, &call("")).await;
    let state: Vec<u8> = query(&limiter, redis::cmd("GET").arg("b")).await;
    let first = last(&state);
    let period = |ms: f64| (ms / 1_000_000.0).floor();
    let mut kept = false;
    for _ in 0..3 {
        let (ttl, state): (i64, Vec<u8>) = admit("")
            .query_async(&mut limiter.connection())
            .await
            .expect("MULTI");
        if period(last(&state)) != period(first) {
            continue; // a period boundary fell between the two admissions
        }
        assert!((1_499_990..=1_500_000).contains(&ttl), "kept: PTTL {ttl}");
        kept = true;
        break;
    }
    assert!(kept, "three admissions in a row crossed a period boundary");
    // On a caller's clock (the same ms as the bucket's last_refill, so the same period) every
    // admission sets the TTL.
    let state: Vec<u8> = query(&limiter, redis::cmd("GET").arg("b")).await;
    let at = (last(&state) as u64).to_string();
    let (ttl, _): (i64, Vec<u8>) = admit(&at)
        .query_async(&mut limiter.connection())
        .await
        .expect("MULTI");
    assert!(
        (1_999_000..=2_000_000).contains(&ttl),
        "renewed: PTTL {ttl}"
    );
}
