//! The Redis in use, as the Connection card sees it: its status, a test that never switches,
//! a switch without a restart (remembered), and a cluster's topology.

use super::{lock, AppCore};
use crate::connection::{self, Connection, ConnectionStatus, ConnectionTest, LinkState};
use crate::error::{AppError, ErrorCode};
use crate::{topology, transport};

impl AppCore {
    pub async fn connection_status(&self) -> ConnectionStatus {
        self.connection().status().await
    }

    pub async fn connection_test(
        &self,
        url: &str,
        tls: Option<ratelockr::TlsOptions>,
    ) -> Result<ConnectionTest, AppError> {
        connection::test(url, &transport::normalized(tls)).await
    }

    /// Switches to `url` (None or empty: automatic) with the TLS files `tls` without a
    /// restart, and remembers both. A running simulation keeps its own connection until it
    /// ends.
    pub async fn connection_switch(
        &self,
        url: Option<String>,
        tls: Option<ratelockr::TlsOptions>,
    ) -> Result<ConnectionStatus, AppError> {
        let url = url.filter(|u| !u.trim().is_empty());
        let tls = transport::normalized(tls);
        let metrics = self.metrics.clone();
        let (wanted, wanted_tls) = (url.clone(), tls.clone());
        let conn = tokio::task::spawn_blocking(move || {
            Connection::open(wanted.as_deref(), &wanted_tls, &metrics)
        })
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))??;
        conn.settle().await;
        // A server that answers but cannot run scripts could not decide anything: refused here,
        // saying so, rather than switched to and failing every decision open.
        if let Some(server) = conn.server().await {
            server.require_scripting().map_err(|failure| {
                AppError::new(ErrorCode::RedisUnavailable, failure.message).with_field("redis_url")
            })?;
        }
        *self.conn.write().unwrap_or_else(|e| e.into_inner()) = conn;
        *lock(&self.redis_url) = url;
        *lock(&self.redis_tls) = tls;
        self.save()?;
        let mut status = self.connection_status().await;
        if status.state == LinkState::Unreachable {
            status.warning = Some(format!(
                "saved, but nothing answers at {} ({}); decisions fail open until it does",
                status.url,
                status.error.as_deref().unwrap_or("no reply")
            ));
        }
        Ok(status)
    }

    /// The cluster's nodes with their round trips (no nodes on a single Redis).
    pub async fn connection_topology(&self) -> Result<ratelockr::topology::Topology, AppError> {
        topology::read(&self.connection().limiter).await
    }
}
