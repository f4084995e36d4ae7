//! `rediss://` against a real TLS-only redis-server: decisions over TLS with a CA file and with
//! mutual TLS, the insecure opt-out, and an error that says exactly what failed for an unknown
//! CA, a certificate for another host, a missing client certificate, and a plain-TCP server.

mod common;
#[path = "common/tls.rs"]
mod tls;

use ratelockr::{
    backend, Algorithm, FailureKind, Limiter, RedisFailure, RedisTarget, Rule, TlsOptions,
};
use std::time::Duration;
use tls::{Pki, TlsRedis, TlsServer};

fn target(url: &str, options: TlsOptions) -> RedisTarget {
    RedisTarget::parse(url)
        .expect("a valid URL")
        .with_tls(options)
        .expect("usable TLS options")
}

fn with_ca(ca: &std::path::Path) -> TlsOptions {
    TlsOptions {
        ca: Some(ca.to_path_buf()),
        ..TlsOptions::default()
    }
}

fn rule() -> Rule {
    Rule::new(
        "tls",
        Algorithm::FixedWindow {
            limit: 2,
            window_ms: 600_000,
        },
    )
    .expect("valid rule")
}

/// Two admitted, the third denied: Redis decided every one, over TLS.
async fn assert_decides(target: &RedisTarget, name: &str) {
    let limiter = Limiter::new(target, common::options(name));
    let rule = rule();
    let allowed: Vec<bool> = [
        common::decide_now(&limiter, &rule, "k", 1).await,
        common::decide_now(&limiter, &rule, "k", 1).await,
        common::decide_now(&limiter, &rule, "k", 1).await,
    ]
    .iter()
    .map(|d| d.allowed)
    .collect();
    assert_eq!(allowed, [true, true, false]);
}

/// The first connection's failure, and a decision that failed open and was counted.
async fn assert_fails(target: &RedisTarget, name: &str) -> RedisFailure {
    let failure = backend::probe(target, Duration::from_secs(10))
        .await
        .expect_err("the handshake must fail");
    // A short deadline: a plain server never answers the handshake, so it runs out.
    let options = ratelockr::LimiterOptions {
        deadline: Duration::from_secs(2),
        ..common::options(name)
    };
    let limiter = Limiter::new(target, options);
    let decision = limiter.check(&rule(), "k").await.expect("valid request");
    assert!(decision.allowed && decision.fail_open && decision.remaining == -1);
    assert_eq!(limiter.ledger().fail_open_total(), 1);
    failure
}

#[tokio::test]
async fn decides_over_tls_with_the_ca_file() {
    let pki = Pki::new("tls-ca");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let t = target(&server.url(), with_ca(&pki.ca));
    assert!(t.is_tls() && !t.is_insecure());
    assert!(t.transport().contains("ca.pem"), "{}", t.transport());
    assert_decides(&t, "tls-ca").await;
    // By host name too: the certificate names localhost.
    let by_name = format!("rediss://localhost:{}", server.port);
    assert_decides(&target(&by_name, with_ca(&pki.ca)), "tls-ca-name").await;
}

#[tokio::test]
async fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new("tls-mutual");
    let server = TlsRedis::start(
        &pki,
        TlsServer {
            mutual: true,
            ..TlsServer::default()
        },
    );
    let failure = assert_fails(&target(&server.url(), with_ca(&pki.ca)), "tls-no-cert").await;
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(
        failure.message.contains("requires a client certificate"),
        "{failure}"
    );
    let with_cert = TlsOptions {
        cert: Some(pki.client_cert.clone()),
        key: Some(pki.client_key.clone()),
        ..with_ca(&pki.ca)
    };
    let t = target(&server.url(), with_cert);
    assert!(t.transport().contains("client.pem"), "{}", t.transport());
    assert_decides(&t, "tls-mutual").await;
}

#[tokio::test]
async fn an_unknown_ca_is_named() {
    let pki = Pki::new("tls-unknown-ca");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let failure = assert_fails(
        &target(&server.url(), with_ca(&pki.other_ca)),
        "tls-unknown",
    )
    .await;
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(failure.message.contains("unknown CA"), "{failure}");
    assert!(failure.message.contains("--tls-ca"), "{failure}");
}

#[tokio::test]
async fn a_certificate_for_another_host_is_a_hostname_mismatch() {
    let pki = Pki::new("tls-wrong-host");
    let server = TlsRedis::start(
        &pki,
        TlsServer {
            wrong_host: true,
            ..TlsServer::default()
        },
    );
    let failure = assert_fails(&target(&server.url(), with_ca(&pki.ca)), "tls-host").await;
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(failure.message.contains("hostname mismatch"), "{failure}");
}

#[tokio::test]
async fn a_plain_tcp_server_behind_rediss_is_named() {
    let plain = common::redis();
    let url = format!("rediss://127.0.0.1:{}", plain.port());
    let pki = Pki::new("tls-plain");
    let failure = assert_fails(&target(&url, with_ca(&pki.ca)), "tls-plain").await;
    assert!(failure.message.contains("plain-TCP Redis"), "{failure}");
}

#[tokio::test]
async fn insecure_skips_verification_and_says_so() {
    let pki = Pki::new("tls-insecure");
    // A certificate for another host, from a CA this client does not know: only the insecure
    // opt-out connects, and the target shows that it is insecure.
    let server = TlsRedis::start(
        &pki,
        TlsServer {
            wrong_host: true,
            ..TlsServer::default()
        },
    );
    let t = target(
        &server.url(),
        TlsOptions {
            insecure: true,
            ..with_ca(&pki.other_ca)
        },
    );
    assert!(t.is_insecure());
    assert!(t.to_string().contains("INSECURE"), "{t}");
    assert_decides(&t, "tls-insecure").await;
    let from_url = target(
        &format!("{}/#insecure", server.url()),
        TlsOptions::default(),
    );
    assert!(from_url.is_insecure());
    assert_decides(&from_url, "tls-insecure-url").await;
}
