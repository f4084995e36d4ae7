//! The Redis in use, as the Connection card sees it: its status, a test that never switches,
//! a switch without a restart (remembered), and a cluster's topology.

use super::{lock, AppCore};
use crate::connection::{self, Connection, ConnectionStatus, ConnectionTest, LinkState};
use crate::copy_commands::{self, CopyCommands};
use crate::error::{AppError, ErrorCode};
use crate::{topology, transport};

impl AppCore {
    pub async fn connection_status(&self) -> ConnectionStatus {
        let conn = self.connection();
        let mut status = conn.status().await;
        status.commands = Some(self.copy_commands(conn.backend.target()));
        status
    }

    /// serve, the example service and redis-cli at `target`, with the open policies file and
    /// its first policy (read as last looked at: the Policies view's poll does the looking).
    fn copy_commands(&self, target: &ratelockr::RedisTarget) -> CopyCommands {
        let slot = lock(&self.policy_file);
        let file = slot.as_ref();
        copy_commands::for_target(
            target,
            file.map(|f| f.path()),
            file.and_then(|f| f.policies().first()).map(|p| p.name()),
        )
    }

    /// The embedded redis-server's port as remembered now.
    pub fn embedded_port(&self) -> Option<u16> {
        *lock(&self.embedded_port)
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
        let port = self.embedded_port();
        let current = self.connection();
        let conn = tokio::task::spawn_blocking(move || {
            // The automatic choice while this app's embedded server runs: that server, on its
            // port, rather than a second one on another (unless a default Redis now answers).
            let automatic = wanted.is_none() && wanted_tls.is_empty();
            let running = current
                .backend
                .embedded_server()
                .is_some_and(|s| !s.exited());
            if automatic && running && !connection::default_answers() {
                return Ok(current);
            }
            Connection::open_on(wanted.as_deref(), &wanted_tls, &metrics, port)
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
        let mut moved = Vec::new();
        let (port, _) = remember_port(port, &self.connection(), &mut moved);
        *lock(&self.embedded_port) = port;
        self.save()?;
        let mut status = self.connection_status().await;
        status.warning = moved.pop();
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

/// The port to remember after `conn` was opened with `remembered` in mind, and whether it
/// changed. An embedded server that could not have its port (busy) is named in `warnings`.
pub(super) fn remember_port(
    remembered: Option<u16>,
    conn: &Connection,
    warnings: &mut Vec<String>,
) -> (Option<u16>, bool) {
    match (connection::embedded_port(conn), remembered) {
        (None, _) => (remembered, false),
        (Some(port), Some(old)) if port == old => (remembered, false),
        (Some(port), old) => {
            if let Some(old) = old {
                warnings.push(format!(
                    "The embedded Redis's port {old} was busy, so it runs on port {port} now (kept for the next start): point serve, the example service and redis-cli at redis://127.0.0.1:{port} (the commands under the connection pill say so)"
                ));
            }
            (Some(port), true)
        }
    }
}

#[cfg(test)]
#[path = "port_tests.rs"]
mod tests;
