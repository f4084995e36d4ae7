//! The Redis the app talks to: resolved at start, tested and switched at runtime, over plain
//! TCP or TLS, a single node or a cluster ([`super::transport`] says which).

use super::error::{AppError, ErrorCode};
use super::transport::{self, Transport};
use ratelockr::{Backend, BackendKind, Limiter, LimiterOptions, Metrics, ServerInfo, TlsOptions};
use serde::Serialize;
use std::sync::{Arc, Mutex};
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
    /// Why it did not answer (a failed TLS handshake in the engine's diagnosis).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The form field `error` is about (`tls_ca`, `tls_cert`, `redis_url`), when it is one.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_field: Option<String>,
    /// Single node or cluster, plain TCP or TLS, INSECURE or verified.
    pub transport: Transport,
    /// Redis, Valkey or Dragonfly, its version and whether it runs scripts: read once per
    /// connection, when it first answers.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
    /// Decisions this app let through because Redis failed, since it started.
    #[ts(type = "number")]
    pub fail_open_total: u64,
    /// Of those, the ones in the last `RECENT_SECS` (10) seconds: with `state`, everything
    /// the fail-open banner needs, from one reading (after Redis recovers, `state` is
    /// `connected` and this says how recently decisions still failed open).
    #[ts(type = "number")]
    pub fail_open_recent: u64,
    /// `ratelockr serve`, the example service and `redis-cli` at this Redis (the app's status
    /// sets them: they name its open policies file).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<crate::copy_commands::CopyCommands>,
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
    /// The form field `error` is about (an unknown CA: `tls_ca`), when it is one.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What was tested: single node or cluster, plain TCP or TLS, INSECURE or verified.
    pub transport: Transport,
    /// The server that answered (a server without scripting answers, and is not ok).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
}

/// A live connection: the backend (owning the embedded server, if any) and its limiter.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Shared so a running simulation keeps its embedded server alive across a switch.
    pub backend: Arc<Backend>,
    pub limiter: Limiter,
    pub configured: bool,
    /// The server, once read (it does not change under a connection; a status poll every
    /// 2 s need not ask again).
    pub server: Arc<Mutex<Option<ServerInfo>>>,
}

impl Connection {
    /// Resolves `configured` as the engine's policy says (blocking: it may start a
    /// redis-server), with decisions observed by `metrics`. The TLS files are read and
    /// checked here: a missing or wrong one is an error on its field, not a failure later.
    pub fn open(
        configured: Option<&str>,
        tls: &TlsOptions,
        metrics: &Metrics,
    ) -> Result<Self, AppError> {
        Self::open_on(configured, tls, metrics, None)
    }

    /// As [`Connection::open`]; an embedded redis-server started here takes `embedded_port`
    /// when it is free (the port it had at the last run), else another free one.
    pub fn open_on(
        configured: Option<&str>,
        tls: &TlsOptions,
        metrics: &Metrics,
        embedded_port: Option<u16>,
    ) -> Result<Self, AppError> {
        let backend = match configured.map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => Backend::external(transport::target(url, tls)?),
            None if !tls.is_empty() => return Err(transport::without_url(tls)),
            None => match embedded_port {
                Some(port) if !default_answers() => Backend::embedded_on(port)?,
                _ => Backend::resolve(None)?,
            },
        };
        let options = LimiterOptions {
            deadline: decision_deadline().unwrap_or(ratelockr::limiter::DEFAULT_DEADLINE),
            ..LimiterOptions::default()
        };
        let limiter =
            Limiter::new(backend.target(), options).with_observer(Arc::new(metrics.clone()));
        Ok(Connection {
            backend: Arc::new(backend),
            limiter,
            configured: configured.is_some_and(|u| !u.trim().is_empty()),
            server: Arc::default(),
        })
    }

    /// Waits (up to [`TEST_DEADLINE`]) until the new connection answers a PING. Its first
    /// command connects, a TLS handshake included, which can outlast one decision's deadline on
    /// a busy machine: without this, a switch to a Redis that answers could report it
    /// unreachable and warn that decisions fail open.
    pub async fn settle(&self) {
        let started = std::time::Instant::now();
        while self.limiter.ping().await.is_err() && started.elapsed() < TEST_DEADLINE {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// The server, read on the first call after it answers and kept.
    pub async fn server(&self) -> Option<ServerInfo> {
        if let Some(known) = self
            .server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Some(known);
        }
        let read = self.limiter.server().await.ok()?;
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(read.clone());
        Some(read)
    }

    pub async fn status(&self) -> ConnectionStatus {
        let target = self.backend.target();
        let mut restart_error = None;
        let mut ping = self.limiter.ping().await;
        // The app's own redis-server died (killed, out of memory): start it again on its port,
        // where the limiter's connection finds it by itself.
        if ping.is_err() && self.backend.embedded_server().is_some() {
            // Starting a server waits for its PONG: off the runtime's workers.
            let backend = self.backend.clone();
            let restarted = tokio::task::spawn_blocking(move || {
                backend
                    .embedded_server()
                    .map_or(Ok(false), |server| server.restart_if_exited())
            })
            .await;
            match restarted {
                Ok(Ok(true)) => {
                    self.settle().await;
                    ping = self.limiter.ping().await;
                }
                Ok(Ok(false)) => {}
                Ok(Err(err)) => restart_error = Some(err.to_string()),
                Err(err) => restart_error = Some(err.to_string()),
            }
        }
        let ping = match ping {
            // Ask the port itself what is there (nothing, another server, TLS on the other
            // side): only while failing, and at most once per status poll.
            Err(failure) => Err(ratelockr::diagnose::diagnose(target, failure).await),
            other => other,
        };
        let error = ping.as_ref().err().map(|e| match &restart_error {
            Some(why) => format!(
                "the app's embedded redis-server stopped and could not be started again ({why}); click Use this Redis with the URL empty to start a new one"
            ),
            None => transport::in_form_words(&e.to_string()),
        });
        let server = match ping {
            Ok(_) => self.server().await,
            Err(_) => None,
        };
        let kind = self.backend.kind();
        let state = match (&ping, kind) {
            (Err(_), _) => LinkState::Unreachable,
            (Ok(_), BackendKind::Embedded) => LinkState::Embedded,
            (Ok(_), BackendKind::External) => LinkState::Connected,
        };
        ConnectionStatus {
            state,
            kind,
            url: target.redacted().to_string(),
            configured: self.configured,
            rtt_ms: ping.as_ref().ok().map(|d| d.as_secs_f64() * 1000.0),
            error_field: error
                .as_deref()
                .and_then(transport::failure_field)
                .map(str::to_string),
            error,
            transport: Transport::of(target),
            server,
            fail_open_total: self.limiter.ledger().fail_open_total(),
            fail_open_recent: self
                .limiter
                .ledger()
                .fail_open_since(ratelockr::telemetry::now_ms() / 1000 + 1 - RECENT_SECS),
            commands: None,
            warning: None,
        }
    }
}

/// True when a Redis answers at the default URL, which the automatic choice prefers to an
/// embedded one (blocking, 300 ms at most).
pub fn default_answers() -> bool {
    ratelockr::RedisTarget::parse(ratelockr::DEFAULT_REDIS_URL).is_ok_and(|default| {
        ratelockr::backend::answers(&default, std::time::Duration::from_millis(300))
    })
}

/// The port of the embedded redis-server a connection started, if it did.
pub fn embedded_port(conn: &Connection) -> Option<u16> {
    conn.backend.embedded_server().map(|server| server.port())
}

/// Sets how long one decision may wait for Redis before it fails open, in milliseconds (the
/// CLI's `--deadline-ms`). The default (250 ms) suits an interactive app on a local Redis; a
/// Redis far away, or a machine too loaded to answer in time (a CI runner), needs more.
pub const DEADLINE_ENV: &str = "RATELOCKR_DEADLINE_MS";

/// [`DEADLINE_ENV`] is not a whole number of milliseconds in range: a warning for the start-up
/// banner (the default deadline is used).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{DEADLINE_ENV}={value:?} is not a whole number of milliseconds from 1 to {max}; decisions use the default deadline of {default} ms", max = MAX_DEADLINE.as_millis(), default = ratelockr::limiter::DEFAULT_DEADLINE.as_millis())]
pub struct BadDeadline {
    /// The variable's value, as set.
    pub value: String,
}

/// The decision deadline [`DEADLINE_ENV`] asks for: `Ok(None)` when unset, `Err` (the default
/// is used) when it is not a whole number of ms, 1 or more.
pub fn decision_deadline_setting() -> Result<Option<std::time::Duration>, BadDeadline> {
    parse_deadline(std::env::var(DEADLINE_ENV).ok().as_deref())
}

use ratelockr::limiter_options::MAX_DEADLINE;

fn parse_deadline(value: Option<&str>) -> Result<Option<std::time::Duration>, BadDeadline> {
    let Some(text) = value else {
        return Ok(None);
    };
    match text.trim().parse::<u64>() {
        Ok(ms) if (1..=MAX_DEADLINE.as_millis() as u64).contains(&ms) => {
            Ok(Some(std::time::Duration::from_millis(ms)))
        }
        _ => Err(BadDeadline {
            value: text.to_string(),
        }),
    }
}

fn decision_deadline() -> Option<std::time::Duration> {
    decision_deadline_setting().ok().flatten()
}

/// How long the Test button waits: longer than a decision's deadline, since a person is
/// waiting for a verdict rather than a request for its answer.
pub const TEST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// PINGs `url` (with the form's TLS files, read and checked now) on a connection of its own;
/// never switches.
pub async fn test(url: &str, tls: &TlsOptions) -> Result<ConnectionTest, AppError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(
            AppError::new(ErrorCode::InvalidUrl, "enter a Redis URL to test")
                .with_field("redis_url"),
        );
    }
    let target = transport::target(url, tls)?;
    // A connection of its own, without the limiter's reconnect-and-retry loop, so a refused
    // port says "refused" instead of running out the deadline as a "timeout". A failed TLS
    // handshake comes back diagnosed (unknown CA, hostname mismatch, plain TCP...).
    let ping = ratelockr::backend::probe(&target, TEST_DEADLINE).await;
    let server = match ping {
        Ok(_) => {
            let options = LimiterOptions {
                deadline: TEST_DEADLINE,
                ..LimiterOptions::default()
            };
            Limiter::new(&target, options).server().await.ok()
        }
        Err(_) => None,
    };
    let refused = server
        .clone()
        .and_then(|s| s.require_scripting().err())
        .map(|failure| failure.message);
    let error = ping
        .as_ref()
        .err()
        .map(|e| transport::in_form_words(&e.to_string()))
        .or(refused);
    Ok(ConnectionTest {
        ok: error.is_none(),
        server,
        url: target.redacted().to_string(),
        rtt_ms: ping.as_ref().ok().map(|d| d.as_secs_f64() * 1000.0),
        field: error
            .as_deref()
            .and_then(transport::failure_field)
            .map(str::to_string),
        error,
        transport: Transport::of(&target),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The app's own redis-server killed outright: the next status poll starts it again on its
    /// port, and decisions are Redis's again, without a click.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_killed_embedded_redis_is_started_again() {
        let backend = Backend::embedded().expect("redis-server on PATH");
        let limiter = Limiter::new(backend.target(), LimiterOptions::default());
        let connection = Connection {
            backend: Arc::new(backend),
            limiter,
            configured: false,
            server: Arc::default(),
        };
        assert_eq!(connection.status().await.state, LinkState::Embedded);
        let server = connection.backend.embedded_server().expect("embedded");
        let (port, pid) = (server.port(), server.pid());
        let killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        while !server.exited() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = connection.status().await;
        assert_eq!(status.state, LinkState::Embedded, "{status:?}");
        assert_eq!(
            server.port(),
            port,
            "the same port: the connection finds it"
        );
        assert_ne!(server.pid(), pid, "a new process");
        let rule =
            ratelockr::Rule::fixed_window("after-restart", 5, std::time::Duration::from_secs(60))
                .expect("valid");
        let decision = connection.limiter.check(&rule, "k").await.expect("valid");
        assert!(!decision.fail_open(), "Redis decides again: {decision:?}");
    }

    /// The card's Server row and the Test button name the server; the status reads it once.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_status_and_the_test_name_the_server() {
        let backend = Backend::embedded().expect("redis-server on PATH");
        let url = backend.target().to_string();
        let limiter = Limiter::new(backend.target(), LimiterOptions::default());
        let connection = Connection {
            backend: Arc::new(backend),
            limiter,
            configured: false,
            server: Arc::default(),
        };
        let status = connection.status().await;
        let server = status.server.expect("the server is named");
        assert_eq!(
            server.scripting,
            ratelockr::Scripting::Available,
            "{server:?}"
        );
        assert!(!server.version.is_empty(), "{server:?}");
        assert_eq!(connection.status().await.server, Some(server.clone()));
        let tested = test(&url, &TlsOptions::default())
            .await
            .expect("a valid URL");
        assert!(tested.ok, "{tested:?}");
        assert_eq!(tested.server, Some(server));
    }

    #[test]
    fn the_deadline_setting_is_whole_milliseconds_or_a_warning() {
        assert_eq!(parse_deadline(None), Ok(None));
        assert_eq!(
            parse_deadline(Some(" 2000 ")),
            Ok(Some(Duration::from_secs(2)))
        );
        for bad in ["0", "-5", "1.5", "abc", "", "60001"] {
            let err = parse_deadline(Some(bad)).expect_err(bad).to_string();
            assert!(
                err.contains(DEADLINE_ENV) && err.contains("250 ms"),
                "{err}"
            );
        }
    }
}
