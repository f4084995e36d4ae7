//! Redis failures, classified so that an outage and a misconfiguration never look alike.

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

impl From<redis::RedisError> for RedisFailure {
    fn from(err: redis::RedisError) -> Self {
        let message = err.to_string();
        // A failed TLS handshake will not heal by itself: say which part failed.
        if let Some(explained) = crate::tls::explain(&message) {
            return RedisFailure::new(FailureKind::Misconfiguration, explained);
        }
        RedisFailure::new(classify(&err), message)
    }
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
