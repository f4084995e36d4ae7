//! ACL users (`redis://user:password@…`) against a real redis-server: a user that may run
//! EVALSHA but not SCRIPT LOAD decides (NOSCRIPT is recovered by EVAL, never SCRIPT LOAD); one
//! that may not EVAL, or not run scripts at all, fails open with a misconfiguration that names
//! the missing permission.

use crate::common;
use crate::helper_cli as cli;

use ratelockr::{Algorithm, At, CheckError, FailureKind, Limiter, RedisTarget, Rule};

fn rule() -> Rule {
    Rule::new(
        "acl",
        Algorithm::FixedWindow {
            limit: 2,
            window_ms: 600_000,
        },
    )
    .expect("valid rule")
}

/// Creates `user` with `password` and `rules` through the default (all-powerful) user.
async fn set_user(admin: &Limiter, user: &str, password: &str, rules: &[&str]) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER")
        .arg(user)
        .arg("on")
        .arg(format!(">{password}"));
    for r in rules {
        cmd.arg(*r);
    }
    let ok: String = common::query(admin, &cmd).await;
    assert_eq!(ok, "OK");
}

fn as_user(server: &ratelockr::EmbeddedRedis, user: &str, password: &str, name: &str) -> Limiter {
    let url = format!("redis://{user}:{password}@127.0.0.1:{}", server.port());
    let target = RedisTarget::parse(&url).expect("valid URL");
    assert!(!format!("{target} {target:?}").contains(password));
    Limiter::new(&target, common::options(name))
}

#[tokio::test]
async fn a_user_without_script_load_decides_through_eval() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-admin");
    set_user(
        &admin,
        "noload",
        "s3cr3t-noload",
        &["~*", "+@all", "-script|load"],
    )
    .await;
    let limiter = as_user(&server, "noload", "s3cr3t-noload", "acl-noload");
    let rule = rule();
    assert!(common::decide_now(&limiter, &rule, "k", 1).await.allowed);
    // The script is cached by EVAL: the next call is a plain EVALSHA. After a SCRIPT FLUSH the
    // next decision loads it again the same way.
    assert!(common::decide_now(&limiter, &rule, "k", 1).await.allowed);
    let _: String = common::query(&admin, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let third = common::decide_now(&limiter, &rule, "k", 1).await;
    assert!(!third.allowed, "the limit of 2 holds across the flush");
    assert_eq!(limiter.ledger().failures_total(), 0);
    // Redis refused nothing: no SCRIPT LOAD was ever sent.
    let log: Vec<Vec<redis::Value>> = common::query(&admin, redis::cmd("ACL").arg("LOG")).await;
    assert!(log.is_empty(), "{log:?}");
}

#[tokio::test]
async fn a_user_without_eval_names_it_after_a_flush() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-admin3");
    set_user(
        &admin,
        "noeval",
        "s3cr3t-noeval",
        &["~*", "+@all", "-eval", "-script|load"],
    )
    .await;
    let limiter = as_user(&server, "noeval", "s3cr3t-noeval", "acl-noeval");
    // The admin loads the script; this user's EVALSHA then decides.
    assert!(
        common::decide_now(&admin, &rule(), "other", 1)
            .await
            .allowed
    );
    assert!(common::decide_now(&limiter, &rule(), "k", 1).await.allowed);
    let _: String = common::query(&admin, redis::cmd("SCRIPT").arg("FLUSH")).await;
    match limiter.try_check_at(&rule(), "k", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => {
            assert_eq!(failure.kind, FailureKind::Misconfiguration);
            assert!(failure.message.contains("+eval"), "{failure}");
            assert!(!failure.message.contains("s3cr3t"), "{failure}");
        }
        other => panic!("expected a misconfiguration, got {other:?}"),
    }
}

#[tokio::test]
async fn a_user_without_scripts_fails_open_naming_the_permission() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-admin2");
    set_user(
        &admin,
        "noscripts",
        "s3cr3t-none",
        &["~*", "+@all", "-@scripting"],
    )
    .await;
    let limiter = as_user(&server, "noscripts", "s3cr3t-none", "acl-none");
    let decision = limiter.check(&rule(), "k").await.expect("valid request");
    assert!(decision.allowed && decision.fail_open() && decision.remaining_or_unknown() == -1);
    assert_eq!(limiter.ledger().fail_open_total(), 1);
    assert_eq!(
        common::failures_of(&limiter, FailureKind::Misconfiguration),
        1
    );
    match limiter.try_check_at(&rule(), "k", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => {
            assert_eq!(failure.kind, FailureKind::Misconfiguration);
            assert!(failure.message.contains("+evalsha"), "{failure}");
            assert!(!failure.message.contains("s3cr3t"), "{failure}");
        }
        other => panic!("expected a misconfiguration, got {other:?}"),
    }
}

/// The commands the scripts call: Redis checks each against the caller's ACL too, so a user
/// with only `+evalsha +eval` fails open on every decision. README.md lists this set.
const SCRIPT_COMMANDS: [&str; 19] = [
    "+decrby",
    "+expire",
    "+get",
    "+hget",
    "+hmget",
    "+hset",
    "+incr",
    "+incrby",
    "+pexpire",
    "+pttl",
    "+set",
    "+time",
    "+type",
    "+zadd",
    "+zcount",
    "+zpopmax",
    "+zrange",
    "+zrangebyscore",
    "+zremrangebyscore",
];

/// The README's user decides with every algorithm and a stacked policy, and reads stats;
/// without the scripts' own commands the same user fails open, named a misconfiguration.
#[tokio::test]
async fn the_readmes_acl_user_decides_with_all_five_and_a_policy() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-readme-admin");
    let prefix = common::unique("aclr");
    let keys = format!("~{prefix}:*");
    let mut rules = vec![keys.as_str(), "+evalsha", "+eval", "+ping"];
    rules.extend(SCRIPT_COMMANDS);
    set_user(&admin, "limiter", "s3cret-pw", &rules).await;
    let url = format!("redis://limiter:s3cret-pw@127.0.0.1:{}", server.port());
    let options = ratelockr::LimiterOptions {
        keys: ratelockr::KeySpace::new(prefix.clone()),
        deadline: common::GENEROUS_DEADLINE,
        ..ratelockr::LimiterOptions::default()
    };
    let limiter = Limiter::new(&RedisTarget::parse(&url).expect("url"), options.clone());
    for kind in ratelockr::AlgorithmKind::ALL {
        let rule = ratelockr_cli::bench::bench_rule(kind).expect("a rule");
        let decision = limiter
            .try_check_at(&rule, "k", 1, At::ServerClock)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} decides with the README's user: {e}"));
        assert!(decision.allowed, "{kind:?}: {decision:?}");
    }
    let policy = ratelockr::Policy::from_rule(
        &Rule::fixed_window("acl-policy", 5, std::time::Duration::from_secs(60)).expect("valid"),
    );
    let decided = limiter
        .check_policy_cost(&policy, "k", 1)
        .await
        .expect("valid");
    assert!(!decided.fail_open(), "{decided:?}");
    limiter
        .stats("acl-policy")
        .await
        .expect("stats read with +get");

    // The set the README gave before: scripts may run, their commands may not.
    set_user(
        &admin,
        "narrow",
        "s3cret-pw",
        &[keys.as_str(), "+evalsha", "+eval"],
    )
    .await;
    let url = format!("redis://narrow:s3cret-pw@127.0.0.1:{}", server.port());
    let narrow = Limiter::new(&RedisTarget::parse(&url).expect("url"), options);
    match narrow.try_check_at(&rule(), "k", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => {
            assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
            // Redis says only "can't run this command … on @user_script:N": the engine names
            // the command from the script's own line.
            assert!(
                failure.message.contains("may not run INCR")
                    || failure.message.contains("may not run HMGET")
                    || failure.message.contains("may not run DECRBY")
                    || failure.message.contains("may not run GET"),
                "{failure}"
            );
            assert!(failure.message.contains("fixed_window script"), "{failure}");
        }
        other => panic!("the scripts' own commands are checked too: {other:?}"),
    }
}

/// A replay's pipelined calls name a command refused inside a script as a single decision
/// does, not as a refusal of the script itself; the password is never printed.
#[tokio::test]
async fn a_replay_names_the_command_a_script_may_not_run() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-replay-admin");
    set_user(
        &admin,
        "pipes",
        "s3cret-pipes",
        &[
            "~*", "+evalsha", "+eval", "+ping", "+info", "+client", "+config",
        ],
    )
    .await;
    let dir = common::tempdir("acl-replay");
    let log = dir.join("log.jsonl");
    let lines: String = (0..20)
        .map(|i| {
            format!(
                "{{\"ts\":{},\"ip\":\"k{}\"}}\n",
                1_700_000_000_000u64 + i * 10,
                i % 3
            )
        })
        .collect();
    std::fs::write(&log, lines).expect("write the log");
    let url = format!("redis://pipes:s3cret-pipes@127.0.0.1:{}", server.port());
    let out = cli::ratelockr(&[
        "--redis",
        &url,
        "replay",
        "--log",
        &log.display().to_string(),
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
    ]);
    let err = cli::text(&out.stderr);
    assert!(
        err.contains("the Redis user may not run")
            && err.contains("which the fixed_window script calls"),
        "{err}"
    );
    assert!(!err.contains("may not run this decision's script"), "{err}");
    assert!(!err.contains("s3cret-pipes"), "{err}");
}

/// A wrong password is named as a misconfiguration within the default 250 ms deadline, not
/// reported as a timeout while the connection's retries wait; the password is never printed.
#[tokio::test]
async fn a_wrong_password_is_named_within_the_default_deadline() {
    let server = common::redis();
    let admin = common::limiter(&server, "acl-pw-admin");
    set_user(&admin, "pwuser", "the-right-pw", &["~*", "+@all"]).await;
    let url = format!("redis://pwuser:the-wrong-pw@127.0.0.1:{}", server.port());
    let limiter = Limiter::new(
        &RedisTarget::parse(&url).expect("url"),
        common::options_with_default_deadline("acl-pw"),
    );
    match limiter.try_check_at(&rule(), "k", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => {
            assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
            assert!(!failure.message.contains("the-wrong-pw"), "{failure}");
        }
        other => panic!("expected a misconfiguration, got {other:?}"),
    }
}
