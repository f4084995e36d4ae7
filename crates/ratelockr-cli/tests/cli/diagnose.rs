//! A Redis URL that points at the wrong thing is named for what is there, not reported as a
//! bare timeout: nothing listening, another kind of server, a TLS port behind `redis://`.
//! Through the library's `ping` and the CLI's fail-open message, against real sockets and a
//! real TLS redis-server.

use crate::common;
use crate::helper_cli as cli;
use crate::helper_tls as tls;

use ratelockr::FailureKind;
use tls::{Pki, TlsRedis, TlsServer};

use crate::common::not_redis;

#[tokio::test]
async fn a_web_server_is_named_not_a_redis_server() {
    let url = not_redis(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    let limiter = common::limiter_with(&url, common::options("diag-http"));
    let failure = limiter.ping().await.expect_err("no Redis there");
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(
        failure.message.contains("is not a Redis server")
            && failure.message.contains("HTTP/1.1 400 Bad Request"),
        "{failure}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_refused_connection_not_a_timeout() {
    let url = common::dead_url();
    let limiter = common::limiter_with(&url, common::options("diag-refused"));
    let failure = limiter.ping().await.expect_err("no Redis there");
    assert_eq!(failure.kind, FailureKind::Unavailable, "{failure}");
    assert!(failure.message.contains("connection refused"), "{failure}");
}

#[tokio::test]
async fn a_tls_port_behind_redis_url_asks_for_rediss() {
    let pki = Pki::new("diag-tls");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let url = format!("redis://127.0.0.1:{}", server.port);
    let limiter = common::limiter_with(&url, common::options("diag-tls"));
    let failure = limiter.ping().await.expect_err("TLS only");
    assert_eq!(failure.kind, FailureKind::Misconfiguration, "{failure}");
    assert!(failure.message.contains("rediss://"), "{failure}");
}

#[test]
fn the_cli_fails_open_naming_what_answered() {
    let url = not_redis(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
    let out = cli::ratelockr(&[
        "--redis",
        &url,
        "--json",
        "check",
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
        "--key",
        "a",
    ]);
    let stderr = cli::text(&out.stderr);
    assert!(stderr.contains("not a Redis server"), "{stderr}");
    assert!(stderr.contains("SSH-2.0-OpenSSH_9.2p1"), "{stderr}");
    let decision = cli::json(&out);
    assert_eq!(
        (&decision["allowed"], &decision["remaining"]),
        (&true.into(), &(-1).into())
    );
}

#[tokio::test]
async fn a_refused_tls_port_is_refused_too() {
    let url = common::dead_url().replace("redis://", "rediss://");
    let limiter = common::limiter_with(&url, common::options("diag-refused-tls"));
    let failure = limiter.ping().await.expect_err("no Redis there");
    assert_eq!(failure.kind, FailureKind::Unavailable, "{failure}");
    assert!(failure.message.contains("connection refused"), "{failure}");
}
