//! ACL users (`redis://user:password@…`) against a real redis-server: a user that may run
//! EVALSHA but not SCRIPT LOAD decides through EVAL and says so; a user that may not run
//! scripts fails open with a misconfiguration that names the missing permission.

mod common;

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
    assert!(limiter.eval_fallback_note().is_none());
    let first = common::decide_now(&limiter, &rule, "k", 1).await;
    assert!(first.allowed);
    let note = limiter
        .eval_fallback_note()
        .expect("the fallback is reported");
    assert!(note.contains("SCRIPT LOAD"), "{note}");
    // The script is cached by EVAL: the next call is a plain EVALSHA. After a SCRIPT FLUSH
    // the fallback loads it again, with no SCRIPT LOAD tried.
    assert!(common::decide_now(&limiter, &rule, "k", 1).await.allowed);
    let _: String = common::query(&admin, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let third = common::decide_now(&limiter, &rule, "k", 1).await;
    assert!(!third.allowed, "the limit of 2 holds across the fallback");
    assert_eq!(limiter.ledger().failures_total(), 0);
    // Redis refused exactly one SCRIPT LOAD: the first; then the refusal is remembered. (ACL
    // LOG groups repeated refusals into one entry with a count.)
    let log: Vec<Vec<redis::Value>> = common::query(&admin, redis::cmd("ACL").arg("LOG")).await;
    assert_eq!(log.len(), 1, "{log:?}");
    let count = log[0]
        .chunks(2)
        .find(|kv| kv[0] == redis::Value::BulkString(b"count".to_vec()))
        .map(|kv| kv[1].clone());
    assert_eq!(count, Some(redis::Value::Int(1)), "{log:?}");
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
    assert!(decision.allowed && decision.fail_open && decision.remaining == -1);
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
