//! `rediss://` against a real TLS-only redis-server: decisions over TLS with a CA file and with
//! mutual TLS, the insecure opt-out, and an error that says exactly what failed for an unknown
//! CA, a certificate for another host, a missing client certificate, and a plain-TCP server.

use crate::common;
use crate::helper_tls as tls;

use ratelockr::{
    backend, Algorithm, FailureKind, Limiter, RedisFailure, RedisTarget, Rule, TlsOptions,
};
use std::time::Duration;
use tls::{target, with_ca, Pki, TlsRedis, TlsServer};

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
    // A short deadline: a plain server never answers the handshake, so it runs out (the
    // failure's words come from the probe above; any of these decisions fails open).
    let options = ratelockr::LimiterOptions {
        deadline: Duration::from_millis(500),
        ..common::options(name)
    };
    let limiter = Limiter::new(target, options);
    let decision = limiter.check(&rule(), "k").await.expect("valid request");
    assert!(decision.allowed && decision.fail_open() && decision.remaining_or_unknown() == -1);
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

/// `rediss+cluster://`: a 3-master cluster whose nodes speak only TLS to clients (and to each
/// other), decided on every master with the CA file; refused by a client that trusts another
/// CA (an unknown CA, said so, failing open); and every node's round trip over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_over_tls() {
    use ratelockr::embedded_cluster::EmbeddedCluster;
    let pki = Pki::new("tls-cluster");
    let files = pki.cluster_files();
    let cluster = tokio::task::block_in_place(|| EmbeddedCluster::start_tls(3, 0, &files))
        .expect("a TLS cluster forms");
    let url = cluster.url();
    assert!(url.starts_with("rediss+cluster://"), "{url}");
    let t = target(&url, with_ca(&pki.ca));
    assert!(t.is_cluster() && t.is_tls() && !t.is_insecure());
    assert_decides(&t, "tls-cluster").await;
    // Rules whose hash tags land on every master, each decided by Redis.
    let limiter = Limiter::new(&t, common::options("tls-cluster-rules"));
    let mut conn = limiter.connection();
    let masters = conn.masters().await.expect("masters").expect("a cluster");
    let mut served = std::collections::BTreeSet::new();
    for i in 0..12 {
        let rule = Rule::new(format!("tls.{i}"), *rule().algorithm()).expect("valid");
        common::decide_now(&limiter, &rule, "k", 1).await;
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{{}}}", rule.name()))
            .query_async(&mut conn)
            .await
            .expect("KEYSLOT");
        let owner = masters
            .iter()
            .find(|m| m.slots.iter().any(|&(a, b)| (a..=b).contains(&slot)))
            .expect("served");
        served.insert(owner.port);
    }
    assert_eq!(served.len(), 3, "the rules reach every master");
    let nodes = conn
        .topology_with_rtt(Duration::from_secs(5))
        .await
        .expect("topology")
        .expect("a cluster");
    assert_eq!(nodes.len(), 3);
    for node in &nodes {
        assert!(node.rtt_us.is_ok(), "{node:?}");
    }

    let failure = assert_fails(&target(&url, with_ca(&pki.other_ca)), "tls-cluster-ca").await;
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(failure.message.contains("unknown CA"), "{failure}");

    // The insecure opt-out, in the URL, decides too and is marked.
    let insecure = RedisTarget::parse(&format!("{url}#insecure")).expect("valid");
    assert!(insecure.is_insecure() && insecure.to_string().contains("INSECURE"));
    assert_decides(&insecure, "tls-cluster-insecure").await;
}
