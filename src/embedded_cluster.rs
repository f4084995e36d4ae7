//! A private Redis Cluster on loopback: `masters` masters with `replicas` replicas each, every
//! node an [`EmbeddedRedis`] (free port, stopped on drop, reaped if its owner dies). For the
//! tests and the failover and resharding measurements (`ratelockr bench --cluster-…`).
//!
//! Nodes run with `cluster-require-full-coverage no`, as a rate limiter's cluster should: while
//! one master is down, the others keep deciding their slots (with the default `yes`, the whole
//! cluster refuses every command until the failover). The node timeout is short (1 s) so a
//! failover is measured in seconds.

use crate::embedded::{find_on_path, EmbeddedError, EmbeddedRedis};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a fresh cluster may take to agree on its slots (`cluster_state:ok` everywhere).
const FORM_TIMEOUT: Duration = Duration::from_secs(30);

/// The cluster node timeout: how long a master may be silent before its replica takes over.
pub(crate) const NODE_TIMEOUT_MS: u64 = 1000;

/// A private Redis Cluster.
#[derive(Debug)]
pub struct EmbeddedCluster {
    nodes: Vec<Option<EmbeddedRedis>>,
    /// Each node's TLS port, in the order of `nodes`, for a cluster over TLS.
    tls_ports: Option<Vec<u16>>,
}

/// The PEM files of a cluster over TLS: every node serves `cert` and trusts `ca`, and the
/// nodes speak TLS to each other (bus and replication), presenting `client_cert` (the cluster
/// bus always asks for one, and a server-only certificate is refused). Clients need none.
#[derive(Debug, Clone)]
pub struct ClusterTls {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    pub ca: std::path::PathBuf,
    pub client_cert: std::path::PathBuf,
    pub client_key: std::path::PathBuf,
}

/// Why the cluster could not be formed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Node(#[from] EmbeddedError),
    #[error("redis-cli was not found on PATH; install it (`sudo apt-get install redis-tools`)")]
    NoRedisCli,
    #[error("could not form the cluster: {0}")]
    Form(String),
}

impl EmbeddedCluster {
    /// Starts `masters × (1 + replicas)` nodes, joins them with `redis-cli --cluster create`
    /// and waits until every node reports `cluster_state:ok`, every master has its replicas and
    /// every replica has finished its first sync.
    pub fn start(masters: usize, replicas: usize) -> Result<Self, ClusterError> {
        Self::start_with(masters, replicas, None)
    }

    /// As [`EmbeddedCluster::start`], every node also on a TLS port (`tls-cluster yes`, so
    /// the cluster names its TLS ports to clients); [`EmbeddedCluster::url`] is then a
    /// `rediss+cluster://` URL. Each node keeps a plain loopback port for administration.
    pub fn start_tls(
        masters: usize,
        replicas: usize,
        tls: &ClusterTls,
    ) -> Result<Self, ClusterError> {
        Self::start_with(masters, replicas, Some(tls))
    }

    fn start_with(
        masters: usize,
        replicas: usize,
        tls: Option<&ClusterTls>,
    ) -> Result<Self, ClusterError> {
        let cli = find_on_path("redis-cli").ok_or(ClusterError::NoRedisCli)?;
        let port = || free_port().map_err(|e| ClusterError::Form(e.to_string()));
        let mut nodes = Vec::new();
        let mut tls_ports = Vec::new();
        for _ in 0..masters * (1 + replicas) {
            // The bus port is chosen too: the default (port + 10000) may not exist.
            let bus = port()?.to_string();
            let timeout = NODE_TIMEOUT_MS.to_string();
            let mut args: Vec<String> = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                &timeout,
                "--cluster-port",
                &bus,
                "--cluster-require-full-coverage",
                "no",
                // A replica's first sync starts at once: the default diskless sync waits 5 s
                // for more replicas to share the transfer, and formation waits for the sync.
                "--repl-diskless-sync-delay",
                "0",
            ]
            .map(String::from)
            .to_vec();
            if let Some(tls) = tls {
                let tls_port = port()?;
                tls_ports.push(tls_port);
                args.extend(["--tls-port".into(), tls_port.to_string()]);
                for (flag, path) in [
                    ("--tls-cert-file", &tls.cert),
                    ("--tls-key-file", &tls.key),
                    ("--tls-ca-cert-file", &tls.ca),
                    ("--tls-client-cert-file", &tls.client_cert),
                    ("--tls-client-key-file", &tls.client_key),
                ] {
                    args.extend([flag.into(), path.display().to_string()]);
                }
                for flag in ["--tls-cluster", "--tls-replication"] {
                    args.extend([flag.into(), "yes".into()]);
                }
                args.extend(["--tls-auth-clients".into(), "no".into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            nodes.push(Some(EmbeddedRedis::start_with(&args)?));
        }
        let cluster = EmbeddedCluster {
            nodes,
            tls_ports: tls.map(|_| tls_ports),
        };
        let mut create = Command::new(cli);
        if let Some(tls) = tls {
            create.arg("--tls").arg("--cacert").arg(&tls.ca);
        }
        let out = create
            .args(["--cluster", "create"])
            .args(cluster.client_addresses())
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .map_err(|e| ClusterError::Form(format!("redis-cli: {e}")))?;
        if !out.status.success() {
            return Err(ClusterError::Form(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        cluster.wait_formed(masters, replicas)?;
        Ok(cluster)
    }

    fn wait_formed(&self, masters: usize, replicas: usize) -> Result<(), ClusterError> {
        let started = Instant::now();
        loop {
            if self.is_formed(masters, replicas) {
                return Ok(());
            }
            if started.elapsed() > FORM_TIMEOUT {
                return Err(ClusterError::Form(format!(
                    "not cluster_state:ok with {masters} masters and {replicas} replicas each \
                     within {} s",
                    FORM_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn is_formed(&self, masters: usize, replicas: usize) -> bool {
        self.ports().all(|port| {
            let Ok(info) = query_node(port, &["CLUSTER", "INFO"]) else {
                return false;
            };
            let Ok(nodes) = query_node(port, &["CLUSTER", "NODES"]) else {
                return false;
            };
            let nodes = crate::cluster::parse_nodes(&nodes);
            // A replica whose first sync has not finished cannot be promoted (its data counts
            // as too old), so a failover measured before that would be a failure of the setup.
            let synced = query_node(port, &["INFO", "replication"])
                .is_ok_and(|r| r.contains("role:master") || r.contains("master_link_status:up"));
            synced
                && info.contains("cluster_state:ok")
                && nodes
                    .iter()
                    .filter(|n| n.role == crate::cluster::NodeRole::Master)
                    .count()
                    == masters
                && nodes.len() == masters * (1 + replicas)
        })
    }

    /// `127.0.0.1:<port>` of every node that runs.
    pub fn addresses(&self) -> Vec<String> {
        self.ports().map(|p| format!("127.0.0.1:{p}")).collect()
    }

    fn ports(&self) -> impl Iterator<Item = u16> + '_ {
        self.nodes.iter().flatten().map(EmbeddedRedis::port)
    }

    /// `redis+cluster://` with every running node as a seed (`rediss+cluster://` and the TLS
    /// ports for a cluster over TLS).
    pub fn url(&self) -> String {
        let scheme = match self.tls_ports {
            Some(_) => crate::target::TLS_SCHEME,
            None => crate::target::SCHEME,
        };
        format!("{scheme}{}", self.client_addresses().join(","))
    }

    /// The addresses clients use: the TLS ports of a cluster over TLS, else [`Self::addresses`].
    fn client_addresses(&self) -> Vec<String> {
        let Some(tls_ports) = &self.tls_ports else {
            return self.addresses();
        };
        self.nodes
            .iter()
            .zip(tls_ports)
            .filter(|(node, _)| node.is_some())
            .map(|(_, port)| format!("127.0.0.1:{port}"))
            .collect()
    }

    /// The node on `port`, if it runs.
    pub fn node(&self, port: u16) -> Option<&EmbeddedRedis> {
        self.nodes.iter().flatten().find(|n| n.port() == port)
    }

    /// Kills the node on `port` with SIGKILL (no shutdown, no last writes): a crashed master.
    pub fn kill(&mut self, port: u16) -> bool {
        let Some(slot) = self
            .nodes
            .iter_mut()
            .find(|n| n.as_ref().is_some_and(|n| n.port() == port))
        else {
            return false;
        };
        let node = slot.take().expect("found above");
        let _ = Command::new("kill")
            .args(["-9", &node.pid().to_string()])
            .status();
        // Dropping it reaps the process and removes its directory.
        drop(node);
        true
    }
}

/// One command to one node on a fresh connection, its reply as text.
pub fn query_node(port: u16, args: &[&str]) -> redis::RedisResult<String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(&mut conn)
}

fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
