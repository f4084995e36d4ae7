//! Every misconfiguration named as what it is within the engine's default 250 ms deadline,
//! on the first decision: a wrong password, an ACL user without the scripts' commands, an
//! unknown CA, a certificate for another host, mutual TLS without a client certificate, a
//! server that is not Redis, and a refused port. A plain-TCP server behind `rediss://` never
//! answers the handshake, and a TLS port behind `redis://` drops the connection: to a decision
//! these look like a timeout and a dropped connection; `Limiter::diagnose` (the CLI's fail-open
//! line, `ping`, the app's connection test) names them. Each decision fails open (as configured), and the failure is
//! counted under its own kind, never as a timeout while retries wait.

use crate::common;
use crate::helper_tls as tls;

use ratelockr::{At, CheckError, FailureKind, Limiter, RedisTarget, Rule};
use tls::{target, with_ca, Pki, TlsRedis, TlsServer};

fn rule() -> Rule {
    Rule::fixed_window("misconfig", 5, std::time::Duration::from_secs(60)).expect("valid")
}

/// One decision with the default deadline: it fails open, and the failure is `kind`, with a
/// message containing `names`. The failure's kind is also what the ledger counted.
async fn named_within_the_default_deadline(
    target: RedisTarget,
    kind: FailureKind,
    names: &str,
) -> Result<(), String> {
    let limiter = Limiter::new(&target, common::options_with_default_deadline("misconfig"));
    let started = std::time::Instant::now();
    let failure = match limiter.try_check_at(&rule(), "k", 1, At::ServerClock).await {
        Err(CheckError::Redis(failure)) => failure,
        other => return Err(format!("{target}: expected a failure, got {other:?}")),
    };
    let waited = started.elapsed();
    let message = failure.message.to_lowercase();
    if failure.kind != kind || !message.contains(&names.to_lowercase()) {
        return Err(format!(
            "{target}: {:?} {:?} after {waited:?}, not {kind:?} naming {names:?}",
            failure.kind, failure.message
        ));
    }
    // The same through `check`: a fail-open decision, counted under that kind.
    let decision = limiter.check(&rule(), "k").await.expect("a valid request");
    if !(decision.allowed && decision.fail_open()) {
        return Err(format!(
            "{target}: {decision:?} is not a fail-open decision"
        ));
    }
    if common::failures_of(&limiter, kind) != 2 {
        return Err(format!(
            "{target}: the ledger counted {:?}",
            limiter.ledger().failures()
        ));
    }
    Ok(())
}

#[tokio::test]
async fn tls_misconfigurations_are_named_within_the_default_deadline() {
    let pki = Pki::new("misconfig-tls");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let wrong_host = TlsRedis::start(
        &pki,
        TlsServer {
            wrong_host: true,
            ..TlsServer::default()
        },
    );
    let mutual = TlsRedis::start(
        &pki,
        TlsServer {
            mutual: true,
            ..TlsServer::default()
        },
    );
    let plain = common::redis();
    let cases = [
        (
            target(&server.url(), with_ca(&pki.other_ca)),
            FailureKind::Misconfiguration,
            "unknown CA",
        ),
        (
            target(&wrong_host.url(), with_ca(&pki.ca)),
            FailureKind::Misconfiguration,
            "hostname mismatch",
        ),
        (
            target(&mutual.url(), with_ca(&pki.ca)),
            FailureKind::Misconfiguration,
            "client certificate",
        ),
    ];
    let mut failures = Vec::new();
    for (target, kind, names) in cases {
        if let Err(problem) = named_within_the_default_deadline(target, kind, names).await {
            failures.push(problem);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A plain-TCP Redis behind rediss:// never answers the handshake: to a decision it is a
    // timeout; asked why, the limiter names it (as the CLI's fail-open line and the app do).
    let behind = target(
        &format!("rediss://127.0.0.1:{}", plain.port()),
        with_ca(&pki.ca),
    );
    let limiter = Limiter::new(&behind, common::options_with_default_deadline("misconfig"));
    let Err(CheckError::Redis(failure)) =
        limiter.try_check_at(&rule(), "k", 1, At::ServerClock).await
    else {
        panic!("a plain-TCP Redis cannot decide over TLS");
    };
    let named = limiter.diagnose(failure).await;
    assert_eq!(named.kind, FailureKind::Misconfiguration, "{named}");
    assert!(named.message.contains("plain-TCP Redis"), "{named}");
}

#[tokio::test]
async fn other_misconfigurations_are_named_within_the_default_deadline() {
    let server = common::redis();
    let admin = common::limiter(&server, "misconfig-admin");
    let mut conn = admin.connection();
    for user in [
        // The README's user, less one command the fixed window's script calls.
        vec![
            "SETUSER",
            "nopexpire",
            "on",
            ">pw",
            "~ratelockr:*",
            "+evalsha",
            "+eval",
            "+script|load",
            "+time",
            "+get",
            "+set",
            "+incr",
        ],
        vec!["SETUSER", "pwuser", "on", ">the-right-pw", "~*", "+@all"],
    ] {
        let _: () = redis::cmd("ACL")
            .arg(&user)
            .query_async(&mut conn)
            .await
            .expect("ACL SETUSER");
    }
    let port = server.port();
    let cases = [
        (
            format!("redis://pwuser:the-wrong-pw@127.0.0.1:{port}"),
            FailureKind::Misconfiguration,
            "password",
        ),
        (
            format!("redis://nopexpire:pw@127.0.0.1:{port}"),
            FailureKind::Misconfiguration,
            "may not run",
        ),
        (
            common::not_redis(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
            FailureKind::Misconfiguration,
            "not RESP",
        ),
        (
            common::dead_url(),
            FailureKind::Unavailable,
            "connection refused",
        ),
    ];
    let mut failures = Vec::new();
    for (url, kind, names) in cases {
        let target = RedisTarget::parse(&url).expect("a valid URL");
        if let Err(problem) = named_within_the_default_deadline(target, kind, names).await {
            failures.push(problem);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
