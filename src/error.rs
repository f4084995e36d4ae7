//! Redis failures, classified so that an outage and a misconfiguration never look alike, and
//! explained: a failed TLS handshake is said in words a user can act on ([`explain`]).

use serde::Serialize;
use std::fmt;

/// What went wrong when Redis was asked for a decision.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Refused, dropped, unreachable, loading, read-only: Redis is not there to answer.
    Unavailable,
    /// No answer before the decision's deadline (a hung or overloaded Redis).
    Timeout,
    /// The script was missing and loading it again did not help.
    NoScript,
    /// Redis answered something that is not a decision.
    Reply,
    /// Redis refused the call for a reason that will not go away by itself: a wrong type at a
    /// key, no permission, wrong credentials, a script error. Logged as an error, not a warning.
    Misconfiguration,
    /// Anything else.
    Other,
}

impl FailureKind {
    pub const ALL: [FailureKind; 6] = [
        FailureKind::Unavailable,
        FailureKind::Timeout,
        FailureKind::NoScript,
        FailureKind::Reply,
        FailureKind::Misconfiguration,
        FailureKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Unavailable => "unavailable",
            FailureKind::Timeout => "timeout",
            FailureKind::NoScript => "noscript",
            FailureKind::Reply => "reply",
            FailureKind::Misconfiguration => "misconfiguration",
            FailureKind::Other => "other",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed Redis call. The message comes from Redis or the client library and never holds
/// the connection URL, so it is safe to log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct RedisFailure {
    pub kind: FailureKind,
    pub message: String,
}

impl RedisFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        RedisFailure {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn timeout(deadline: std::time::Duration) -> Self {
        RedisFailure::new(
            FailureKind::Timeout,
            format!("no answer within the {} ms deadline", deadline.as_millis()),
        )
    }
}

/// How a failure whose answer was not RESP begins ([`crate::diagnose`] then asks what answers).
pub(crate) const NOT_RESP: &str = "the server's answer is not RESP";

impl From<redis::RedisError> for RedisFailure {
    fn from(err: redis::RedisError) -> Self {
        let message = err.to_string();
        // A failed TLS handshake will not heal by itself: say which part failed.
        if let Some(explained) = explain(&message) {
            return RedisFailure::new(FailureKind::Misconfiguration, explained);
        }
        // Bytes that are not RESP: what answers is not Redis (a web server, say). A Redis's
        // own replies always parse, so this will not heal by itself either.
        if err.kind() == redis::ErrorKind::Parse && message.contains("Parse error") {
            return RedisFailure::new(
                FailureKind::Misconfiguration,
                format!("{NOT_RESP}: it is not a Redis server, or something between rewrites the stream ({message})"),
            );
        }
        RedisFailure::new(classify(&err), message)
    }
}

/// A TLS failure in words a user can act on, or `None` when `message` (a redis-rs error's
/// text) is not about TLS. rustls reports through io errors whose text is all that survives
/// redis-rs's wrapping, so the text is what is matched.
pub fn explain(message: &str) -> Option<String> {
    let what = if message.contains("UnknownIssuer") || message.contains("unknown issuer") {
        "the server's certificate is signed by a CA this client does not trust (unknown CA): give the CA's PEM file with --tls-ca"
    } else if message.contains("NotValidForName") || message.contains("not valid for name") {
        "the server's certificate is not valid for the host name in the URL (hostname mismatch): connect by a name the certificate lists, or use a certificate issued for this one"
    } else if message.contains("CertificateRequired")
        || message.contains("certificate required")
        || message.contains("received fatal alert: HandshakeFailure") && message.contains("client")
    {
        "the server requires a client certificate (mutual TLS): give --tls-cert and --tls-key"
    } else if message.contains("BadCertificate")
        || message.contains("UnknownCA")
        || message.contains("DecryptError")
    {
        "the server refused this client's certificate: check --tls-cert and --tls-key against the server's --tls-ca-cert-file"
    } else if message.contains("Expired") {
        "the server's certificate has expired (or is not yet valid)"
    } else if message.contains("InvalidContentType")
        || message.contains("corrupt message")
        || message.contains("InvalidMessage")
        || message.contains("tls handshake eof")
    {
        "the server did not answer in TLS: is it a plain-TCP Redis behind a rediss:// URL? (use redis:// for it)"
    } else if message.contains("peer certificate")
        || message.contains("fatal alert")
        || message.contains("tls handshake")
    {
        "the TLS handshake failed"
    } else {
        return None;
    };
    Some(format!("TLS: {what} ({message})"))
}

fn classify(err: &redis::RedisError) -> FailureKind {
    use redis::{ErrorKind, ServerErrorKind};
    if err.is_timeout() {
        return FailureKind::Timeout;
    }
    if err.is_io_error() || err.is_connection_refusal() || err.is_connection_dropped() {
        return FailureKind::Unavailable;
    }
    match err.code() {
        Some("WRONGTYPE" | "NOPERM" | "NOAUTH" | "WRONGPASS") => {
            return FailureKind::Misconfiguration
        }
        Some(code) if code.starts_with("ratelockr") => return FailureKind::Misconfiguration,
        _ => {}
    }
    match err.kind() {
        ErrorKind::Server(ServerErrorKind::NoScript) => FailureKind::NoScript,
        ErrorKind::Server(
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly,
        ) => FailureKind::Unavailable,
        ErrorKind::Server(ServerErrorKind::NoPerm) | ErrorKind::AuthenticationFailed => {
            FailureKind::Misconfiguration
        }
        ErrorKind::Server(ServerErrorKind::ResponseError) | ErrorKind::Extension
            if err.to_string().contains("script") =>
        {
            FailureKind::Misconfiguration
        }
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType => FailureKind::Reply,
        ErrorKind::Io => FailureKind::Unavailable,
        _ => FailureKind::Other,
    }
}

/// The reply of a script that answers a count (lease.lua, settle.lua): a whole number >= 0,
/// anything else a failure of the reply naming `script`.
pub(crate) fn count_reply(reply: &redis::Value, script: &str) -> Result<u64, RedisFailure> {
    match *reply {
        redis::Value::Int(n) if n >= 0 => Ok(n as u64),
        ref other => Err(RedisFailure::new(
            FailureKind::Reply,
            format!("expected an integer from the {script} script, got {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explains_only_tls_failures() {
        assert!(explain("Connection refused (os error 111)").is_none());
        let unknown = explain("invalid peer certificate: UnknownIssuer").expect("tls");
        assert!(unknown.contains("unknown CA"), "{unknown}");
    }
}
