//! Redis Cluster: the topology a cluster reports (`CLUSTER NODES`), read for what must reach
//! every master (reset's SCAN) and for display. A cluster's URL, `redis+cluster://`, is parsed
//! with every other Redis URL in `crate::target`.

/// What a node is in its cluster.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Master,
    Replica,
}

/// One node of a cluster as `CLUSTER NODES` describes it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterNode {
    pub id: String,
    pub host: String,
    pub port: u16,
    pub role: NodeRole,
    /// A replica's master (its id); None for a master.
    pub master_id: Option<String>,
    /// The node is marked failed (`fail`) or suspected of failing (`fail?`).
    pub failing: bool,
    /// The slot ranges a master serves, inclusive.
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    /// `host:port`.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Parses `CLUSTER NODES`: one line per node, `<id> <ip:port@cport[,hostname]> <flags> <master>
/// <ping-sent> <pong-recv> <epoch> <link-state> <slot>...`. Nodes without an address (a
/// forgotten node's `:0`) and importing/migrating markers (`[slot->-id]`) are skipped.
pub fn parse_nodes(text: &str) -> Vec<ClusterNode> {
    let mut nodes = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 {
            continue;
        }
        let addr = fields[1].split(['@', ',']).next().unwrap_or("");
        let Some((host, port)) = addr.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = port.parse::<u16>() else {
            continue;
        };
        if port == 0 || host.is_empty() {
            continue;
        }
        let flags: Vec<&str> = fields[2].split(',').collect();
        let role = if flags.contains(&"master") {
            NodeRole::Master
        } else {
            NodeRole::Replica
        };
        let slots = fields[8..]
            .iter()
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => s.parse().ok().map(|n| (n, n)),
            })
            .collect();
        nodes.push(ClusterNode {
            id: fields[0].to_string(),
            host: host.trim_start_matches('[').trim_end_matches(']').into(),
            port,
            role,
            master_id: (fields[3] != "-").then(|| fields[3].to_string()),
            failing: flags.iter().any(|f| *f == "fail" || *f == "fail?"),
            slots,
        });
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cluster_nodes() {
        let text = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
e7d1 127.0.0.1:30001@40001,host1 myself,master - 0 0 1 connected 0-5460 7000 [5461->-292f]
292f 127.0.0.1:30002@40002 master,fail? - 0 1426238316232 2 connected 5461-10922
bad line
";
        let nodes = parse_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].role, NodeRole::Replica);
        assert_eq!(nodes[0].master_id.as_deref(), Some("e7d1"));
        assert_eq!(nodes[1].address(), "127.0.0.1:30001");
        assert_eq!(nodes[1].slots, [(0, 5460), (7000, 7000)]);
        assert!(nodes[2].failing && !nodes[1].failing);
    }
}
