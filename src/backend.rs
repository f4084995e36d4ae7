//! Which Redis to use: the configured one, or a managed embedded one.

use crate::embedded::{EmbeddedError, EmbeddedRedis};
use crate::embedded_cluster::{ClusterError, EmbeddedCluster};
use crate::target::{RedisTarget, TargetError, DEFAULT_REDIS_URL};
use serde::Serialize;
use std::time::Duration;

/// Where a backend's Redis comes from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// A Redis the user runs, named by URL.
    External,
    /// A private redis-server this process started and will stop.
    Embedded,
}

/// A Redis to talk to, owning the embedded server (if any) for as long as it lives.
#[derive(Debug)]
pub struct Backend {
    target: RedisTarget,
    embedded: Option<EmbeddedRedis>,
    cluster: Option<EmbeddedCluster>,
}

/// Why no Redis could be set up.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Embedded(#[from] EmbeddedError),
}

impl Backend {
    pub fn external(target: RedisTarget) -> Self {
        Backend {
            target,
            embedded: None,
            cluster: None,
        }
    }

    /// Starts a managed redis-server.
    pub fn embedded() -> Result<Self, BackendError> {
        let server = EmbeddedRedis::start()?;
        let target = RedisTarget::parse(&server.url())?;
        Ok(Backend {
            target,
            embedded: Some(server),
            cluster: None,
        })
    }

    /// Starts a managed redis-server on `port` when it is free, else on another free port
    /// ([`EmbeddedRedis::start_on`]).
    pub fn embedded_on(port: u16) -> Result<Self, BackendError> {
        let server = EmbeddedRedis::start_on(port)?;
        let target = RedisTarget::parse(&server.url())?;
        Ok(Backend {
            target,
            embedded: Some(server),
            cluster: None,
        })
    }

    /// Starts a managed Redis Cluster: 3 masters with a replica each, on loopback
    /// ([`EmbeddedCluster`]); blocks while it forms (seconds).
    pub fn embedded_cluster() -> Result<Self, ClusterError> {
        let cluster = EmbeddedCluster::start(3, 1)?;
        let target =
            RedisTarget::parse(&cluster.url()).map_err(|e| ClusterError::Form(e.to_string()))?;
        Ok(Backend {
            target,
            embedded: None,
            cluster: Some(cluster),
        })
    }

    /// The app's policy: a configured URL is used as it is (an unreachable one then fails
    /// open, visibly); with none configured, the default Redis is used if it answers, and a
    /// managed embedded one is started if it does not.
    pub fn resolve(configured: Option<&str>) -> Result<Self, BackendError> {
        if let Some(url) = configured.map(str::trim).filter(|u| !u.is_empty()) {
            return Ok(Backend::external(RedisTarget::parse(url)?));
        }
        let default = RedisTarget::parse(DEFAULT_REDIS_URL)?;
        if answers(&default, Duration::from_millis(300)) {
            return Ok(Backend::external(default));
        }
        tracing::info!("no Redis answers at {default}; starting an embedded redis-server");
        Backend::embedded()
    }

    pub fn target(&self) -> &RedisTarget {
        &self.target
    }

    pub fn kind(&self) -> BackendKind {
        if self.embedded.is_some() || self.cluster.is_some() {
            BackendKind::Embedded
        } else {
            BackendKind::External
        }
    }

    pub fn embedded_server(&self) -> Option<&EmbeddedRedis> {
        self.embedded.as_ref()
    }
}

/// True when a Redis at `target` answers PING within `timeout` (blocking; used at start-up).
pub fn answers(target: &RedisTarget, timeout: Duration) -> bool {
    let client = target.client();
    let Ok(mut conn) = client.get_connection_with_timeout(timeout) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(timeout));
    redis::cmd("PING").query::<String>(&mut conn).is_ok()
}

/// PINGs `target` on a fresh connection of its own, within `deadline`: the round trip, or
/// why not, classified from the first error (a refused port is `unavailable: … refused`, not a
/// timeout). Unlike the limiter's reconnecting connection, nothing retries here, so what the
/// user tests is what they get.
pub async fn probe(
    target: &RedisTarget,
    deadline: Duration,
) -> Result<Duration, crate::RedisFailure> {
    let started = std::time::Instant::now();
    let attempt = async {
        if target.is_cluster() {
            // The cluster connection connects to the seeds and reads the slot map: the
            // cluster answering at all is what this tests.
            let options = crate::conn::ConnOptions {
                connect_timeout: deadline,
                response_timeout: deadline,
                retries: 0,
                max_delay: None,
                min_delay: None,
            };
            let mut conn = crate::conn::Conn::connect(target, options).await?;
            return Ok(redis::cmd("PING").query_async::<String>(&mut conn).await?);
        }
        let mut conn = target.client().get_multiplexed_async_connection().await?;
        Ok::<_, crate::RedisFailure>(redis::cmd("PING").query_async::<String>(&mut conn).await?)
    };
    match tokio::time::timeout(deadline, attempt).await {
        Ok(Ok(pong)) if pong == "PONG" => Ok(started.elapsed()),
        Ok(Ok(other)) => Err(crate::RedisFailure::new(
            crate::FailureKind::Reply,
            format!("PING answered {other:?}"),
        )),
        Ok(Err(err)) => Err(crate::diagnose::diagnose(target, err).await),
        Err(_) => Err(crate::diagnose::diagnose(
            target,
            crate::RedisFailure::new(
                crate::FailureKind::Timeout,
                format!("no answer within {} ms", deadline.as_millis()),
            ),
        )
        .await),
    }
}
