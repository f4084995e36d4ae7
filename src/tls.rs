//! A failed `rediss://` connection diagnosed: a plain-TCP Redis behind a TLS URL is named
//! ([`diagnose`]). The words for a failed handshake ([`explain`]) are given where every Redis
//! error is classified, `crate::error`, and re-exported here beside the diagnosis.

use crate::error::{FailureKind, RedisFailure};
use crate::target::RedisTarget;
use std::time::Duration;

pub use crate::error::explain;

/// A plain-TCP Redis behind a `rediss://` URL often never answers the TLS handshake at all:
/// it reads the ClientHello as the start of an inline command and waits for its end. So when a
/// TLS connection fails or times out, this asks the same port in plain TCP (`PING`); a RESP
/// reply there (`+PONG`, `-NOAUTH …`) means the URL should have been `redis://`. Any other
/// failure is returned as it was.
pub async fn diagnose(target: &RedisTarget, failure: RedisFailure) -> RedisFailure {
    let relevant = matches!(
        failure.kind,
        FailureKind::Timeout | FailureKind::Unavailable | FailureKind::Other
    );
    let Some((host, port)) = target.tls_endpoint().filter(|_| relevant) else {
        return failure;
    };
    match plain_redis_answers(&host, port, Duration::from_secs(1)).await {
        true => RedisFailure::new(
            FailureKind::Misconfiguration,
            format!(
                "TLS: the server at {host}:{port} did not answer in TLS, and a plain-TCP Redis answers there: use redis:// for it, or enable TLS on the server ({failure})"
            ),
        ),
        false => failure,
    }
}

/// True when a Redis answers `PING` in plain TCP at `host:port` within `within`.
async fn plain_redis_answers(host: &str, port: u16, within: Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.write_all(b"PING\r\n").await?;
        let mut first = [0u8; 1];
        stream.read_exact(&mut first).await?;
        Ok::<_, std::io::Error>(matches!(first[0], b'+' | b'-'))
    };
    matches!(tokio::time::timeout(within, attempt).await, Ok(Ok(true)))
}
