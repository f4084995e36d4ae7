//! One connection type for every front: a single Redis or a Redis Cluster.
//!
//! A single Redis is redis-rs's `ConnectionManager` (multiplexed, reconnecting in the
//! background), as before. On a cluster, script calls (every decision) go straight to their
//! slot's master on a connection of its own (`crate::slot_route`); everything else, and every
//! call that meets a redirection or a lost connection, goes through redis-rs's cluster
//! connection: it routes each command by its key's slot, follows MOVED and ASK, retries
//! TRYAGAIN and refreshes its slot map when a node fails or a slot moves. Both implement
//! `ConnectionLike`, so scripts, pipelines and plain commands are sent the same way; what
//! differs (SCAN must visit every master, the topology) has its own method here.

use crate::cluster::{self, ClusterNode};
use crate::error::{FailureKind, RedisFailure};
use crate::slot_route::SlotRouter;
use crate::target::RedisTarget;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo, Slot};
use redis::{Cmd, RedisFuture, Value};
use std::sync::Arc;
use std::time::Duration;

/// Timeouts and retries of a connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnOptions {
    pub connect_timeout: Duration,
    /// The longest one command (a cluster's redirections and retries included) may take.
    pub response_timeout: Duration,
    /// Reconnection (single Redis) or request (cluster) retries.
    pub retries: usize,
    /// The longest wait between retries (None: the client's default).
    pub max_delay: Option<Duration>,
    /// The first wait before a retry, doubling after (None: the client's default, 100 ms).
    /// Kept well under a decision's deadline, so that a connect that fails for good (a wrong
    /// password, a TLS certificate the client refuses) is reported as what it is within the
    /// deadline instead of as a timeout while its retries wait.
    pub min_delay: Option<Duration>,
}

/// A connection to a single Redis or to a Redis Cluster. Cheap to clone: clones share it.
#[derive(Clone)]
pub enum Conn {
    Single(ConnectionManager),
    Cluster(LazyCluster),
}

/// A cluster connection made on first use, so that a limiter exists (and fails open) while the
/// cluster is down, as a lazy `ConnectionManager` does; a failed connect is tried again by the
/// next command.
#[derive(Clone)]
pub struct LazyCluster {
    client: Arc<redis::cluster::ClusterClient>,
    /// A seed URL (with its credentials), for reaching a node the cluster connection does not
    /// route to (a replica) on a connection of its own.
    seed: Arc<str>,
    /// The TLS settings of a `rediss+cluster://` target, for those connections too.
    tls: Option<redis::TlsCertificates>,
    conn: Arc<tokio::sync::OnceCell<ClusterConnection>>,
    /// Script calls straight to their slot's master (`crate::slot_route`).
    router: Arc<SlotRouter>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::Single(_) => "Conn::Single",
            Conn::Cluster(_) => "Conn::Cluster",
        })
    }
}

impl std::fmt::Debug for LazyCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyCluster")
            .field("connected", &self.conn.initialized())
            .finish_non_exhaustive()
    }
}

impl LazyCluster {
    async fn get(&self) -> redis::RedisResult<ClusterConnection> {
        self.get_ref().await.cloned()
    }

    /// The cluster connection, made (and the slot map read) on first use.
    async fn get_ref(&self) -> redis::RedisResult<&ClusterConnection> {
        self.conn
            .get_or_try_init(|| async {
                let mut conn = self.client.get_async_connection().await?;
                // A map not read now is read on the first call that needs it.
                let _ = self.router.refresh(&mut conn).await;
                Ok(conn)
            })
            .await
    }
}

impl Conn {
    /// A connection to `target` that connects on first use.
    pub(crate) fn lazy(target: &RedisTarget, options: ConnOptions) -> Conn {
        if target.is_cluster() {
            return Conn::Cluster(LazyCluster {
                client: Arc::new(cluster_client(target, options)),
                seed: target.cluster_seeds()[0].as_str().into(),
                tls: target.tls_certificates(),
                conn: Arc::default(),
                router: Arc::new(SlotRouter::new(
                    target,
                    (options.connect_timeout, options.response_timeout),
                )),
            });
        }
        let manager = ConnectionManager::new_lazy_with_config(target.client(), single(options))
            .expect("a lazy connection manager without push settings cannot fail");
        Conn::Single(manager)
    }

    /// A connection to `target`, connected now (within `options.connect_timeout`).
    pub async fn connect(target: &RedisTarget, options: ConnOptions) -> Result<Conn, RedisFailure> {
        let timeout = options.connect_timeout;
        let connecting = async {
            let conn = Conn::lazy(target, options);
            match &conn {
                Conn::Single(_) => {
                    let manager =
                        ConnectionManager::new_with_config(target.client(), single(options))
                            .await?;
                    Ok::<_, RedisFailure>(Conn::Single(manager))
                }
                Conn::Cluster(lazy) => {
                    lazy.get().await?;
                    Ok(conn)
                }
            }
        };
        tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| RedisFailure::new(FailureKind::Timeout, "could not connect in time"))?
    }

    pub fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }

    /// Every key matching `pattern` (SCAN's MATCH), on every master of a cluster. SCAN may name
    /// a key twice; the list is sorted and deduplicated. A maintenance walk, never a hot path.
    pub async fn scan_match(&mut self, pattern: &str) -> Result<Vec<String>, RedisFailure> {
        let mut found = Vec::new();
        match self {
            Conn::Single(manager) => scan_node(manager, pattern, None, &mut found).await?,
            Conn::Cluster(lazy) => {
                let mut conn = lazy.get().await?;
                for node in masters(&mut conn).await? {
                    scan_node(&mut conn, pattern, Some(&node), &mut found).await?;
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// UNLINKs `keys`: in batches, and on a cluster one batch per slot (a command's keys must
    /// share a slot). Returns how many existed.
    pub async fn unlink(&mut self, keys: &[String]) -> Result<u64, RedisFailure> {
        const BATCH: usize = 512;
        let mut groups: Vec<Vec<&String>> = Vec::new();
        if self.is_cluster() {
            let mut by_slot: std::collections::HashMap<Slot, Vec<&String>> = Default::default();
            for key in keys {
                by_slot.entry(Slot::for_key(key)).or_default().push(key);
            }
            groups.extend(by_slot.into_values());
        } else {
            groups.push(keys.iter().collect());
        }
        let mut deleted = 0;
        for group in &groups {
            for batch in group.chunks(BATCH) {
                let n: u64 = redis::cmd("UNLINK").arg(batch).query_async(self).await?;
                deleted += n;
            }
        }
        Ok(deleted)
    }

    /// The cluster's nodes as `CLUSTER NODES` tells them (None for a single Redis).
    pub async fn topology(&mut self) -> Result<Option<Vec<ClusterNode>>, RedisFailure> {
        match self {
            Conn::Single(_) => Ok(None),
            Conn::Cluster(lazy) => {
                let mut conn = lazy.get().await?;
                let text: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async(&mut conn)
                    .await?;
                Ok(Some(cluster::parse_nodes(&text)))
            }
        }
    }

    /// Every node of the cluster with its round trip (a PING sent to it by address), or why
    /// it did not answer within `deadline`: what the app's connection panel shows. None for a
    /// single Redis.
    pub async fn topology_with_rtt(
        &mut self,
        deadline: Duration,
    ) -> Result<Option<Vec<NodeRtt>>, RedisFailure> {
        let Some(nodes) = self.topology().await? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(nodes.len());
        let ping = redis::cmd("PING");
        for node in nodes {
            let started = std::time::Instant::now();
            let attempt = async {
                match (&node.role, &*self) {
                    // The cluster connection routes to masters only; a replica gets a
                    // connection of its own, with the seed's credentials.
                    (cluster::NodeRole::Replica, Conn::Cluster(lazy)) => {
                        let seed = url::Url::parse(&lazy.seed).map_err(|_| {
                            RedisFailure::new(FailureKind::Other, "unusable seed URL")
                        })?;
                        let client = crate::target::node_client(
                            &seed,
                            lazy.tls.as_ref(),
                            &node.host,
                            node.port,
                        )?;
                        let mut conn = client.get_multiplexed_async_connection().await?;
                        Ok(ping.query_async::<String>(&mut conn).await?)
                    }
                    _ => self.on_node::<String>(&ping, &node).await,
                }
            };
            let rtt = match tokio::time::timeout(deadline, attempt).await {
                Ok(Ok(_)) => Ok(started.elapsed().as_micros() as u64),
                Ok(Err(failure)) => Err(failure.to_string()),
                Err(_) => Err(RedisFailure::timeout(deadline).to_string()),
            };
            out.push(NodeRtt { node, rtt_us: rtt });
        }
        Ok(Some(out))
    }

    /// The cluster's masters that serve slots and are not failing (None for a single Redis).
    pub async fn masters(&mut self) -> Result<Option<Vec<ClusterNode>>, RedisFailure> {
        match self {
            Conn::Single(_) => Ok(None),
            Conn::Cluster(lazy) => Ok(Some(masters(&mut lazy.get().await?).await?)),
        }
    }

    /// `cmd` sent to one node of the cluster by address (to the one Redis when single).
    pub async fn on_node<T: redis::FromRedisValue>(
        &mut self,
        cmd: &Cmd,
        node: &ClusterNode,
    ) -> Result<T, RedisFailure> {
        let value = match self {
            Conn::Single(manager) => cmd.query_async::<Value>(manager).await?,
            Conn::Cluster(lazy) => {
                let mut conn = lazy.get().await?;
                conn.route_command(cmd.clone(), by_address(node)).await?
            }
        };
        Ok(redis::from_redis_value(value).map_err(redis::RedisError::from)?)
    }
}

/// A node and its round trip in microseconds, or why it did not answer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeRtt {
    pub node: ClusterNode,
    pub rtt_us: Result<u64, String>,
}

/// The masters that serve slots and are not failing.
async fn masters(conn: &mut ClusterConnection) -> Result<Vec<ClusterNode>, RedisFailure> {
    let text: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
    Ok(cluster::parse_nodes(&text)
        .into_iter()
        .filter(|n| n.role == cluster::NodeRole::Master && !n.failing && !n.slots.is_empty())
        .collect())
}

fn by_address(node: &ClusterNode) -> RoutingInfo {
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
        host: node.host.clone(),
        port: node.port,
    })
}

/// SCANs one node (the only one, or `node` of a cluster) to the end.
async fn scan_node<C: RouteTo>(
    conn: &mut C,
    pattern: &str,
    node: Option<&ClusterNode>,
    found: &mut Vec<String>,
) -> Result<(), RedisFailure> {
    let mut cursor: u64 = 0;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000);
        let (next, keys): (u64, Vec<String>) = conn.route_to(cmd, node).await?;
        found.extend(keys);
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// Sends a command to one node: by address on a cluster, plainly on a single Redis.
trait RouteTo {
    async fn route_to<T: redis::FromRedisValue>(
        &mut self,
        cmd: Cmd,
        node: Option<&ClusterNode>,
    ) -> redis::RedisResult<T>;
}

impl RouteTo for ConnectionManager {
    async fn route_to<T: redis::FromRedisValue>(
        &mut self,
        cmd: Cmd,
        _node: Option<&ClusterNode>,
    ) -> redis::RedisResult<T> {
        cmd.query_async(self).await
    }
}

impl RouteTo for ClusterConnection {
    async fn route_to<T: redis::FromRedisValue>(
        &mut self,
        cmd: Cmd,
        node: Option<&ClusterNode>,
    ) -> redis::RedisResult<T> {
        match node {
            Some(node) => Ok(redis::from_redis_value(
                self.route_command(cmd, by_address(node)).await?,
            )?),
            None => cmd.query_async(self).await,
        }
    }
}

fn single(options: ConnOptions) -> ConnectionManagerConfig {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(Some(options.response_timeout))
        .set_number_of_retries(options.retries);
    let config = match options.min_delay {
        Some(delay) => config.set_min_delay(delay),
        None => config,
    };
    match options.max_delay {
        Some(delay) => config.set_max_delay(delay),
        None => config,
    }
}

fn cluster_client(target: &RedisTarget, options: ConnOptions) -> redis::cluster::ClusterClient {
    let mut builder =
        redis::cluster::ClusterClient::builder(target.cluster_seeds().iter().map(String::as_str))
            .connection_timeout(options.connect_timeout)
            .response_timeout(options.response_timeout)
            .retries(options.retries as u32);
    if let Some(delay) = options.max_delay {
        builder = builder.max_retry_wait(delay.as_millis() as u64);
    }
    if let Some(certificates) = target.tls_certificates() {
        // rediss+cluster://: every node over TLS, verified against the target's CA (or not at
        // all when it is marked insecure), with its client certificate for mutual TLS.
        crate::target::install_crypto_provider();
        let mode = match target.is_insecure() {
            true => redis::TlsMode::Insecure,
            false => redis::TlsMode::Secure,
        };
        builder = builder.tls(mode).certs(certificates);
    }
    builder
        .build()
        .expect("seed URLs validated in RedisTarget::parse")
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(manager) => manager.req_packed_command(cmd),
            Conn::Cluster(lazy) => Box::pin(async move {
                let cluster = lazy.get_ref().await?;
                if let Some(reply) = lazy.router.send(cmd, cluster).await {
                    return reply;
                }
                cluster.clone().req_packed_command(cmd).await
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(manager) => manager.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(lazy) => Box::pin(async move {
                let cluster = lazy.get_ref().await?;
                let direct = lazy.router.send_pipeline(pipeline, offset, count, cluster);
                if let Some(replies) = direct.await {
                    return replies;
                }
                cluster
                    .clone()
                    .req_packed_commands(pipeline, offset, count)
                    .await
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(manager) => manager.get_db(),
            Conn::Cluster(_) => 0,
        }
    }
}
