//! A Redis Cluster's nodes as the connection card lists them: address, master or replica, the
//! master a replica follows, a master's slot ranges, and each node's round trip. Read on demand
//! (a button, a connection change), never polled: it is one PING per node.

use super::error::{AppError, ErrorCode};
use ratelockr::cluster::NodeRole;
use ratelockr::conn::NodeRtt;
use ratelockr::Limiter;
use serde::Serialize;
use std::time::Duration;
use ts_rs::TS;

/// How long one node's PING may take before its row says it did not answer.
pub const NODE_DEADLINE: Duration = Duration::from_secs(2);

/// How long reading the whole topology may take: the slot map, then every node's PING.
const TOPOLOGY_DEADLINE: Duration = Duration::from_secs(15);

/// The nodes of the cluster the app is on; `cluster` false (and no nodes) on a single Redis.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Topology {
    pub cluster: bool,
    pub nodes: Vec<TopologyNode>,
}

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TopologyNode {
    /// `host:port`.
    pub address: String,
    pub role: NodeRole,
    /// A replica's master, by address (None for a master, or when the cluster does not know
    /// that master's address).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follows: Option<String>,
    /// The slot ranges a master serves, inclusive (empty for a replica).
    pub slots: Vec<(u16, u16)>,
    /// Marked failed, or suspected of failing, by the cluster.
    pub failing: bool,
    /// The round trip of a PING sent to this node.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Why it did not answer the PING.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Reads the topology over the limiter's connection (the cluster connection it decides on).
pub async fn read(limiter: &Limiter) -> Result<Topology, AppError> {
    let mut conn = limiter.connection();
    let nodes = tokio::time::timeout(TOPOLOGY_DEADLINE, conn.topology_with_rtt(NODE_DEADLINE))
        .await
        .map_err(|_| {
            AppError::new(
                ErrorCode::RedisUnavailable,
                format!(
                    "the cluster did not describe itself within {} s",
                    TOPOLOGY_DEADLINE.as_secs()
                ),
            )
        })??;
    Ok(match nodes {
        None => Topology {
            cluster: false,
            nodes: Vec::new(),
        },
        Some(nodes) => Topology {
            cluster: true,
            nodes: rows(nodes),
        },
    })
}

/// The engine's nodes as rows, a replica's master named by address rather than by id.
fn rows(nodes: Vec<NodeRtt>) -> Vec<TopologyNode> {
    let address_of = |id: &str| {
        nodes
            .iter()
            .find(|n| n.node.id == id)
            .map(|n| n.node.address())
    };
    nodes
        .iter()
        .map(|n| TopologyNode {
            address: n.node.address(),
            role: n.node.role,
            follows: n.node.master_id.as_deref().and_then(address_of),
            slots: n.node.slots.clone(),
            failing: n.node.failing,
            rtt_ms: n.rtt_us.as_ref().ok().map(|us| *us as f64 / 1000.0),
            error: n.rtt_us.as_ref().err().cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_names_its_master_by_address() {
        let text = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
e7d1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 7000
9a1b 127.0.0.1:30005@40005 slave,fail ffff 0 0 5 disconnected";
        let nodes = ratelockr::cluster::parse_nodes(text)
            .into_iter()
            .enumerate()
            .map(|(i, node)| NodeRtt {
                node,
                rtt_us: if i == 2 {
                    Err("timeout".into())
                } else {
                    Ok(1500)
                },
            })
            .collect();
        let rows = rows(nodes);
        assert_eq!(rows[0].follows.as_deref(), Some("127.0.0.1:30001"));
        assert_eq!(rows[0].rtt_ms, Some(1.5));
        assert_eq!(rows[1].slots, [(0, 5460), (7000, 7000)]);
        assert_eq!(rows[1].follows, None);
        // A master the cluster no longer lists: no address to name, and no guess.
        assert_eq!(rows[2].follows, None);
        assert!(rows[2].failing && rows[2].error.is_some() && rows[2].rtt_ms.is_none());
    }
}
