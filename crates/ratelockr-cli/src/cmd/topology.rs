//! `ratelockr topology`: which Redis this is (one node or a cluster, plain TCP or TLS) and, for
//! a cluster, every node with its role, slots and round trip; and which server it is (Redis,
//! Valkey or Dragonfly, its version, whether it runs scripts): what the app's connection card
//! shows, for a terminal or a script. A server without scripting is named and the command
//! fails: no decision could be made there.

use crate::console::print_json;
use crate::opts::Global;
use anyhow::anyhow;
use clap::Args;
use ratelockr::cluster::NodeRole;
use ratelockr::topology::{self, Topology, TopologyNode};
use ratelockr::ServerInfo;
use serde::Serialize;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// How long each node's PING may take before its row says it did not answer.
    #[arg(long, default_value_t = 2000)]
    pub node_deadline_ms: u64,
}

#[derive(Serialize)]
struct Json<'a> {
    /// The Redis, password shown as `***`.
    url: &'a str,
    transport: String,
    tls: bool,
    insecure: bool,
    /// The PING round trip through the connection the engine decides on.
    rtt_ms: f64,
    #[serde(flatten)]
    topology: &'a Topology,
}

pub async fn run(global: &Global, args: &TopologyArgs) -> anyhow::Result<ExitCode> {
    if args.node_deadline_ms == 0 {
        return Err(anyhow!("invalid --node-deadline-ms: must be at least 1"));
    }
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let target = limiter.target();
    let rtt = limiter
        .ping()
        .await
        .map_err(|failure| anyhow!("Redis at {target} did not answer: {failure}"))?;
    let deadline = Duration::from_millis(args.node_deadline_ms);
    let topology = topology::read(&mut limiter.connection(), deadline)
        .await
        .map_err(|failure| anyhow!("Redis at {target} did not describe itself: {failure}"))?;
    let rtt_ms = rtt.as_secs_f64() * 1000.0;
    if global.json {
        print_json(&Json {
            url: target.redacted(),
            transport: target.transport(),
            tls: target.is_tls(),
            insecure: target.is_insecure(),
            rtt_ms,
            topology: &topology,
        })?;
        return refuse_without_scripting(target, topology.server);
    }
    let kind = if topology.cluster {
        "Redis Cluster"
    } else {
        "single node"
    };
    println!("{target}: {kind}, {}", target.transport());
    println!("server: {}", topology.server);
    println!("round trip (PING): {rtt_ms:.2} ms");
    if topology.cluster {
        print!("{}", table(&topology));
    }
    refuse_without_scripting(target, topology.server)
}

/// Success, or the error that says this server cannot decide (after it has been described).
fn refuse_without_scripting(
    target: &ratelockr::RedisTarget,
    server: ServerInfo,
) -> anyhow::Result<ExitCode> {
    server
        .require_scripting()
        .map_err(|failure| anyhow!("Redis at {target}: {failure}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The nodes as a text table, with a line that says how much of the slot space is served.
fn table(topology: &Topology) -> String {
    let masters = topology.count(NodeRole::Master);
    let replicas = topology.count(NodeRole::Replica);
    let served = topology.slots_served();
    let mut out = format!(
        "{masters} masters, {replicas} replicas; {served} of 16384 slots served{}\n",
        if served < 16384 {
            " (the cluster cannot decide every key)"
        } else {
            ""
        }
    );
    let rows: Vec<[String; 4]> = topology.nodes.iter().map(row).collect();
    let header = [
        "NODE".to_string(),
        "ROLE".into(),
        "SLOTS".into(),
        "ROUND TRIP".into(),
    ];
    let widths: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .chain(std::iter::once(&header))
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(&header).chain(&rows) {
        out.push_str(&format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
        ));
    }
    out
}

fn row(n: &TopologyNode) -> [String; 4] {
    let role = match (n.role, n.failing) {
        (NodeRole::Master, false) => "master",
        (NodeRole::Master, true) => "master (failing)",
        (NodeRole::Replica, false) => "replica",
        (NodeRole::Replica, true) => "replica (failing)",
    };
    let slots = match n.role {
        NodeRole::Master => n
            .slots
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        NodeRole::Replica => format!("of {}", n.follows.as_deref().unwrap_or("(unknown)")),
    };
    let rtt = match (&n.rtt_ms, &n.error) {
        (Some(ms), _) if n.role == NodeRole::Replica => format!("{ms:.2} ms (with connecting)"),
        (Some(ms), _) => format!("{ms:.2} ms"),
        (None, Some(err)) => format!("no answer: {err}"),
        (None, None) => "no answer".into(),
    };
    [n.address.clone(), role.into(), slots, rtt]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(
        address: &str,
        role: NodeRole,
        slots: Vec<(u16, u16)>,
        rtt: Option<f64>,
    ) -> TopologyNode {
        TopologyNode {
            address: address.into(),
            role,
            follows: (role == NodeRole::Replica).then(|| "127.0.0.1:7000".into()),
            slots,
            failing: rtt.is_none(),
            rtt_ms: rtt,
            error: rtt.is_none().then(|| "timed out".into()),
        }
    }

    #[test]
    fn the_table_names_roles_slots_and_what_is_not_served() {
        let topology = Topology {
            cluster: true,
            server: ratelockr::ServerInfo {
                kind: ratelockr::ServerKind::Redis,
                version: "7.0.15".into(),
                scripting: ratelockr::Scripting::Available,
                scripting_error: None,
            },
            nodes: vec![
                node(
                    "127.0.0.1:7000",
                    NodeRole::Master,
                    vec![(0, 8191), (9000, 9000)],
                    Some(0.25),
                ),
                node("127.0.0.1:7001", NodeRole::Replica, vec![], None),
            ],
        };
        let text = table(&topology);
        assert!(text.starts_with("1 masters, 1 replicas; 8193 of 16384 slots served (the cluster cannot decide every key)"), "{text}");
        assert!(text.contains("0-8191,9000"), "{text}");
        assert!(
            text.contains("replica (failing)  of 127.0.0.1:7000"),
            "{text}"
        );
        assert!(text.contains("no answer: timed out"), "{text}");
    }
}
