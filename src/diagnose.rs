//! A failed connection diagnosed: when Redis cannot be asked, the port is asked directly, so
//! that what is there is named instead of a bare timeout ([`diagnose`]):
//! - nothing listening: "connection refused", not a timeout;
//! - another kind of server (HTTP, SSH, ...): "not a Redis server", with what it answered;
//! - a TLS port behind `redis://`: use `rediss://`;
//! - a plain-TCP Redis behind `rediss://`: use `redis://`.
//!
//! The words for a failed TLS handshake ([`explain`]) are given where every Redis error is
//! classified, `crate::error`, and re-exported here beside the diagnosis.

use crate::error::{FailureKind, RedisFailure};
use crate::target::RedisTarget;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use crate::error::explain;

/// How long the direct look at the port may take.
const PROBE: Duration = Duration::from_secs(1);

/// `failure` as it was, or named better after a direct look at the target's port (only for
/// failures that could be about what listens there: timeouts, unavailability, unreadable
/// replies). A cluster or Unix-socket target is returned as it was.
///
/// A plain-TCP Redis behind a `rediss://` URL often never answers the TLS handshake at all: it
/// reads the ClientHello as the start of an inline command and waits for its end. So for a TLS
/// target the same port is asked in plain TCP (`PING`); a RESP reply there means the URL should
/// have been `redis://`.
pub async fn diagnose(target: &RedisTarget, failure: RedisFailure) -> RedisFailure {
    let relevant = matches!(
        failure.kind,
        FailureKind::Timeout | FailureKind::Unavailable | FailureKind::Other | FailureKind::Reply
    ) || failure.message.starts_with(crate::error::NOT_RESP);
    if !relevant {
        return failure;
    }
    if let Some((host, port)) = target.tls_endpoint() {
        return match probe(&host, port).await {
            Probe::Refused => refused(&host, port),
            Probe::Redis => RedisFailure::new(
                FailureKind::Misconfiguration,
                format!(
                    "TLS: the server at {host}:{port} did not answer in TLS, and a plain-TCP Redis answers there: use redis:// for it, or enable TLS on the server ({failure})"
                ),
            ),
            _ => failure,
        };
    }
    let Some((host, port)) = target.tcp_endpoint() else {
        return failure;
    };
    match probe(&host, port).await {
        Probe::Refused => refused(&host, port),
        Probe::Tls => RedisFailure::new(
            FailureKind::Misconfiguration,
            format!(
                "the server at {host}:{port} speaks TLS: use a rediss:// URL for it ({failure})"
            ),
        ),
        Probe::Other(answer) => RedisFailure::new(
            FailureKind::Misconfiguration,
            format!(
                "the server at {host}:{port} is not a Redis server: it answered PING with {answer:?}"
            ),
        ),
        Probe::Redis | Probe::Silent | Probe::Unknown => failure,
    }
}

fn refused(host: &str, port: u16) -> RedisFailure {
    RedisFailure::new(
        FailureKind::Unavailable,
        format!("connection refused: nothing listens at {host}:{port} (is Redis running, on this port?)"),
    )
}

/// What a direct `PING` in plain TCP found at a port.
#[derive(Debug, PartialEq, Eq)]
enum Probe {
    /// A RESP reply (`+PONG`, `-NOAUTH …`): a Redis (or Valkey) is there.
    Redis,
    /// Nothing listens.
    Refused,
    /// A TLS alert or record: a TLS server, which a plain PING cannot speak to.
    Tls,
    /// Something else answered: its first bytes, as text.
    Other(String),
    /// Connected, but no answer in time (a hung Redis looks the same: nothing is said).
    Silent,
    /// Anything else (no route, a reset, a closed connection): nothing certain to say.
    Unknown,
}

/// A port that hangs up on `PING` without a word may be a TLS server (a TLS Redis resets the
/// connection): it is asked again with a TLS ClientHello, which a TLS server answers.
async fn probe(host: &str, port: u16) -> Probe {
    match ask(host, port, b"PING\r\n").await {
        Probe::Unknown if ask(host, port, &client_hello()).await == Probe::Tls => Probe::Tls,
        found => found,
    }
}

/// A minimal TLS 1.2 ClientHello (one ECDHE-RSA-AES128-GCM suite, no extensions): enough for a
/// TLS server to answer with its ServerHello or an alert, either of which names it.
fn client_hello() -> Vec<u8> {
    let mut body = vec![0x03, 0x03];
    body.extend([0x5a; 32]); // random
    body.push(0); // no session id
    body.extend([0x00, 0x02, 0xc0, 0x2f]); // one cipher suite
    body.extend([0x01, 0x00]); // no compression
    let mut handshake = vec![0x01, 0x00, 0x00, body.len() as u8];
    handshake.extend(body);
    let mut record = vec![0x16, 0x03, 0x01, 0x00, handshake.len() as u8];
    record.extend(handshake);
    record
}

/// Connects, sends `hello` and names the server by its first answer.
async fn ask(host: &str, port: u16, hello: &[u8]) -> Probe {
    let attempt = async {
        let mut stream = match tokio::net::TcpStream::connect((host, port)).await {
            Ok(stream) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Probe::Refused,
            Err(_) => return Probe::Unknown,
        };
        if stream.write_all(hello).await.is_err() {
            return Probe::Unknown;
        }
        let mut answer = [0u8; 64];
        match stream.read(&mut answer).await {
            Ok(0) | Err(_) => Probe::Unknown,
            Ok(n) => classify(&answer[..n]),
        }
    };
    tokio::time::timeout(PROBE, attempt)
        .await
        .unwrap_or(Probe::Silent)
}

/// The first bytes of an answer to `PING`.
fn classify(answer: &[u8]) -> Probe {
    match answer.first() {
        Some(b'+' | b'-') => Probe::Redis,
        // A TLS record: an alert (21) or a handshake (22), version 3.x.
        Some(21 | 22) if answer.get(1) == Some(&3) => Probe::Tls,
        _ => {
            let text = String::from_utf8_lossy(answer);
            let line = text.lines().next().unwrap_or("").trim();
            let shown: String = line.chars().take(48).collect();
            Probe::Other(if shown.is_empty() {
                format!("{} bytes that are not RESP", answer.len())
            } else {
                shown
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_named_by_its_first_bytes() {
        assert_eq!(classify(b"+PONG\r\n"), Probe::Redis);
        assert_eq!(
            classify(b"-NOAUTH Authentication required.\r\n"),
            Probe::Redis
        );
        assert_eq!(classify(&[21, 3, 3, 0, 2, 2, 50]), Probe::Tls);
        assert_eq!(
            classify(b"HTTP/1.0 400 Bad request\r\nServer: x\r\n"),
            Probe::Other("HTTP/1.0 400 Bad request".into())
        );
        assert_eq!(
            classify(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"),
            Probe::Other("SSH-2.0-OpenSSH_9.2p1 Debian-2".into())
        );
        assert_eq!(classify(&[0, 0]), Probe::Other("\u{0}\u{0}".into()));
    }
}
