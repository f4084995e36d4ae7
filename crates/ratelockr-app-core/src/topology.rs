//! The cluster's nodes for the connection card: the engine's reading (`ratelockr::topology`,
//! which `ratelockr topology` prints too), bounded so a cluster that stops answering gives the
//! card an error instead of a spinner. Read on demand (a button, a connection change), never
//! polled: it is one PING per node.

use super::error::{AppError, ErrorCode};
use ratelockr::topology::{self, Topology};
use ratelockr::Limiter;
use std::time::Duration;

/// How long one node's PING may take before its row says it did not answer.
pub const NODE_DEADLINE: Duration = Duration::from_secs(2);

/// How long reading the whole topology may take: the slot map, then every node's PING.
const TOPOLOGY_DEADLINE: Duration = Duration::from_secs(15);

/// Reads the topology over the limiter's connection (the cluster connection it decides on).
pub async fn read(limiter: &Limiter) -> Result<Topology, AppError> {
    let mut conn = limiter.connection();
    Ok(
        tokio::time::timeout(TOPOLOGY_DEADLINE, topology::read(&mut conn, NODE_DEADLINE))
            .await
            .map_err(|_| {
                AppError::new(
                    ErrorCode::RedisUnavailable,
                    format!(
                        "the cluster did not describe itself within {} s",
                        TOPOLOGY_DEADLINE.as_secs()
                    ),
                )
            })??,
    )
}
