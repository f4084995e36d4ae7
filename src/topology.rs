//! Which Redis a connection is on, as a person reads it: which server it is (Redis, Valkey or
//! Dragonfly, its version, whether it runs scripts: [`crate::server`]), and for a Redis Cluster, every node with
//! its role, the master a replica follows (by address), a master's slots and the round trip of
//! a PING sent to it. `ratelockr topology` prints it and the app's connection card lists it.
//! Read on demand, never polled: it is `INFO server`, one `EVAL "return 1" 0`, one
//! `CLUSTER NODES` and one PING per node.

use crate::cluster::NodeRole;
use crate::conn::{Conn, NodeRtt};
use crate::error::RedisFailure;
use crate::server::ServerInfo;
use std::time::Duration;

/// A cluster's nodes; `cluster` false (and no nodes) on a single Redis.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Topology {
    pub cluster: bool,
    /// The server (on a cluster, the node that answered `INFO`).
    pub server: ServerInfo,
    /// Masters in slot order, each followed by its replicas; then any replica whose master the
    /// cluster no longer lists.
    pub nodes: Vec<TopologyNode>,
}

/// One node of the cluster.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TopologyNode {
    /// `host:port`.
    pub address: String,
    pub role: NodeRole,
    /// A replica's master, by address (None for a master, or when the cluster does not know
    /// that master's address).
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follows: Option<String>,
    /// The slot ranges a master serves, inclusive (empty for a replica).
    pub slots: Vec<(u16, u16)>,
    /// Marked failed, or suspected of failing, by the cluster.
    pub failing: bool,
    /// The round trip of a PING sent to this node. A replica's includes opening a connection
    /// to it: the cluster connection routes to masters only.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Why it did not answer the PING.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Topology {
    /// Slots served by the masters listed (16,384 when every slot is covered).
    pub fn slots_served(&self) -> u32 {
        self.nodes
            .iter()
            .flat_map(|n| &n.slots)
            .map(|(a, b)| u32::from(*b) - u32::from(*a) + 1)
            .sum()
    }

    /// How many nodes have `role`.
    pub fn count(&self, role: NodeRole) -> usize {
        self.nodes.iter().filter(|n| n.role == role).count()
    }
}

/// Reads the topology over `conn`, each node's PING bounded by `node_deadline`.
pub async fn read(conn: &mut Conn, node_deadline: Duration) -> Result<Topology, RedisFailure> {
    let server = crate::server::read(conn).await?;
    Ok(match conn.topology_with_rtt(node_deadline).await? {
        None => Topology {
            cluster: false,
            server,
            nodes: Vec::new(),
        },
        Some(nodes) => Topology {
            cluster: true,
            server,
            nodes: rows(nodes),
        },
    })
}

/// The nodes as rows: a replica's master named by address rather than by id, masters in slot
/// order with their replicas after each.
pub(crate) fn rows(nodes: Vec<NodeRtt>) -> Vec<TopologyNode> {
    let address_of = |id: &str| {
        nodes
            .iter()
            .find(|n| n.node.id == id)
            .map(|n| n.node.address())
    };
    let row = |n: &NodeRtt| TopologyNode {
        address: n.node.address(),
        role: n.node.role,
        follows: n.node.master_id.as_deref().and_then(address_of),
        slots: n.node.slots.clone(),
        failing: n.node.failing,
        rtt_ms: n.rtt_us.as_ref().ok().map(|us| *us as f64 / 1000.0),
        error: n.rtt_us.as_ref().err().cloned(),
    };
    let mut masters: Vec<&NodeRtt> = nodes
        .iter()
        .filter(|n| n.node.role == NodeRole::Master)
        .collect();
    masters.sort_by_key(|n| {
        (
            n.node.slots.first().map_or(u16::MAX, |s| s.0),
            n.node.address(),
        )
    });
    let mut out = Vec::with_capacity(nodes.len());
    for master in &masters {
        out.push(row(master));
        out.extend(
            nodes
                .iter()
                .filter(|n| n.node.master_id.as_deref() == Some(master.node.id.as_str()))
                .map(row),
        );
    }
    // Replicas of a master the cluster no longer lists (or with no master at all).
    out.extend(
        nodes
            .iter()
            .filter(|n| n.node.role == NodeRole::Replica)
            .filter(|n| {
                !masters
                    .iter()
                    .any(|m| n.node.master_id.as_deref() == Some(m.node.id.as_str()))
            })
            .map(row),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_follow_their_master_by_address_in_slot_order() {
        let text = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
b2b2 127.0.0.1:30002@40002 master - 0 0 2 connected 5461-10922
e7d1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 16000
9a1b 127.0.0.1:30005@40005 slave,fail ffff 0 0 5 disconnected";
        let nodes = crate::cluster::parse_nodes(text)
            .into_iter()
            .map(|node| NodeRtt {
                rtt_us: if node.failing {
                    Err("timeout".into())
                } else {
                    Ok(1500)
                },
                node,
            })
            .collect();
        let topology = Topology {
            cluster: true,
            server: crate::server::tests::valkey(),
            nodes: rows(nodes),
        };
        let order: Vec<(&str, Option<&str>)> = topology
            .nodes
            .iter()
            .map(|n| (n.address.as_str(), n.follows.as_deref()))
            .collect();
        assert_eq!(
            order,
            [
                ("127.0.0.1:30001", None),
                ("127.0.0.1:30004", Some("127.0.0.1:30001")),
                ("127.0.0.1:30002", None),
                // A master the cluster no longer lists: no address to name, and no guess.
                ("127.0.0.1:30005", None),
            ]
        );
        assert_eq!(topology.nodes[0].slots, [(0, 5460), (16000, 16000)]);
        assert_eq!(topology.nodes[0].rtt_ms, Some(1.5));
        let lost = &topology.nodes[3];
        assert!(lost.failing && lost.error.is_some() && lost.rtt_ms.is_none());
        assert_eq!(topology.slots_served(), 5461 + 1 + 5462);
        assert_eq!(
            (
                topology.count(NodeRole::Master),
                topology.count(NodeRole::Replica)
            ),
            (2, 2)
        );
    }
}
