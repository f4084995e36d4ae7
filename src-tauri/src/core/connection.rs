//! The Redis the app talks to: resolved at start, tested and switched at runtime.

use super::error::{AppError, ErrorCode};
use ratelockr::{Backend, BackendKind, Limiter, LimiterOptions, Metrics, RedisTarget};
use serde::Serialize;
use std::sync::Arc;
use ts_rs::TS;

/// What the status light shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// A Redis the user runs answers.
    Connected,
    /// The private redis-server this app started answers.
    Embedded,
    /// Redis does not answer: decisions fail open.
    Unreachable,
}

/// The connection panel's data. The URL is always the redacted form.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ConnectionStatus {
    pub state: LinkState,
    pub kind: BackendKind,
    /// The Redis in use, password shown as `***`.
    pub url: String,
    /// True when the user configured a URL (false: automatic, default or embedded).
    pub configured: bool,
    /// The round-trip time of a PING, when it answered.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Why it did not answer.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Decisions this app let through because Redis failed, since it started.
    #[ts(type = "number")]
    pub fail_open_total: u64,
    /// Of those, the ones in the last `RECENT_SECS` (10) seconds: with `state`, everything
    /// the fail-open banner needs, from one reading (after Redis recovers, `state` is
    /// `connected` and this says how recently decisions still failed open).
    #[ts(type = "number")]
    pub fail_open_recent: u64,
    /// Set by a switch to a Redis that does not answer: it was saved anyway, and this says so.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The span of [`ConnectionStatus::fail_open_recent`].
pub const RECENT_SECS: u64 = 10;

/// The answer of the "Test" button: it never switches.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ConnectionTest {
    pub ok: bool,
    pub url: String,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A live connection: the backend (owning the embedded server, if any) and its limiter.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Shared so a running simulation keeps its embedded server alive across a switch.
    pub backend: Arc<Backend>,
    pub limiter: Limiter,
    pub configured: bool,
}

impl Connection {
    /// Resolves `configured` as the engine's policy says (blocking: it may start a
    /// redis-server), with decisions observed by `metrics`.
    pub fn open(configured: Option<&str>, metrics: &Metrics) -> Result<Self, AppError> {
        let backend = Backend::resolve(configured)?;
        let limiter = Limiter::new(backend.target(), LimiterOptions::default())
            .with_observer(Arc::new(metrics.clone()));
        Ok(Connection {
            backend: Arc::new(backend),
            limiter,
            configured: configured.is_some_and(|u| !u.trim().is_empty()),
        })
    }

    pub async fn status(&self) -> ConnectionStatus {
        let ping = self.limiter.ping().await;
        let kind = self.backend.kind();
        let state = match (&ping, kind) {
            (Err(_), _) => LinkState::Unreachable,
            (Ok(_), BackendKind::Embedded) => LinkState::Embedded,
            (Ok(_), BackendKind::External) => LinkState::Connected,
        };
        ConnectionStatus {
            state,
            kind,
            url: self.backend.target().redacted().to_string(),
            configured: self.configured,
            rtt_ms: ping.as_ref().ok().map(|d| d.as_secs_f64() * 1000.0),
            error: ping.err().map(|e| e.to_string()),
            fail_open_total: self.limiter.ledger().fail_open_total(),
            fail_open_recent: self
                .limiter
                .ledger()
                .fail_open_since(ratelockr::telemetry::now_ms() / 1000 + 1 - RECENT_SECS),
            warning: None,
        }
    }
}

/// How long the Test button waits: longer than a decision's deadline, since a person is
/// waiting for a verdict rather than a request for its answer.
pub const TEST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// PINGs `url` on a connection of its own; never switches.
pub async fn test(url: &str) -> Result<ConnectionTest, AppError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(
            AppError::new(ErrorCode::InvalidUrl, "enter a Redis URL to test")
                .with_field("redis_url"),
        );
    }
    let target = RedisTarget::parse(url)?;
    // A connection of its own, without the limiter's reconnect-and-retry loop, so a refused
    // port says "refused" instead of running out the deadline as a "timeout".
    let ping = ratelockr::backend::probe(&target, TEST_DEADLINE).await;
    Ok(ConnectionTest {
        ok: ping.is_ok(),
        url: target.redacted().to_string(),
        rtt_ms: ping.as_ref().ok().map(|d| d.as_secs_f64() * 1000.0),
        error: ping.err().map(|e| e.to_string()),
    })
}
