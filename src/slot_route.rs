//! A Redis Cluster's script calls sent straight to the master that owns their slot.
//!
//! Every key of a rule (and of a policy) carries one hash tag, so a decision's EVALSHA has one
//! slot. The slot map is learnt once (`CLUSTER NODES`, through the cluster connection) and each
//! master gets one multiplexed connection of its own, so a call goes from the caller's task to
//! that master's socket with no routing task and no queue in between.
//!
//! Recovery stays where it was: anything the direct path cannot settle itself — a redirection
//! (MOVED, ASK), TRYAGAIN, READONLY, CLUSTERDOWN, MASTERDOWN, a lost or refused connection, a
//! slot the map does not know — is handed to redis-rs's cluster connection, which follows the
//! redirection (ASK: ASKING and the retry on the named node), retries and refreshes its own
//! map, exactly as every call went before. Each of those also marks the map stale, and one
//! background task reads `CLUSTER NODES` again. Redirections and TRYAGAIN are refused before the
//! script runs, so handing the call on never runs it twice. After a lost connection the call
//! may have run; sending it again can only count it twice (deny more), never admit more. A
//! call that times out is not sent again: its deadline has passed, and it fails open as before.
//! NOSCRIPT is returned as it is, so `scripts::invoke` sends the EVAL by the same path, to the
//! same master.

use crate::cluster::{self, NodeRole};
use crate::target::RedisTarget;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisResult, ServerErrorKind, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

const SLOTS: usize = 16384;
const UNKNOWN: u16 = u16::MAX;
/// The least time between two reads of the slot map, so that a burst of redirections while a
/// slot moves or a master fails costs one `CLUSTER NODES`, not one per call.
const REFRESH_GAP: Duration = Duration::from_millis(100);

/// The slot map and a connection per master.
pub(crate) struct SlotRouter {
    /// A seed URL (credentials included) whose host and port are swapped for each master's.
    seed: url::Url,
    tls: Option<redis::TlsCertificates>,
    /// A connection's connect and response timeouts.
    timeouts: (Duration, Duration),
    map: RwLock<Arc<SlotMap>>,
    refreshing: AtomicBool,
}

#[derive(Default)]
struct SlotMap {
    /// Each slot's master, an index into `masters` (UNKNOWN: no master known).
    owner: Vec<u16>,
    masters: Vec<Arc<Master>>,
}

struct Master {
    host: String,
    port: u16,
    conn: tokio::sync::OnceCell<MultiplexedConnection>,
    /// Its connection failed: calls go through the cluster connection until the map is read
    /// again, which opens a new one.
    broken: AtomicBool,
}

impl SlotRouter {
    pub(crate) fn new(target: &RedisTarget, timeouts: (Duration, Duration)) -> SlotRouter {
        let mut seed =
            url::Url::parse(&target.cluster_seeds()[0]).expect("validated in RedisTarget::parse");
        if target.is_insecure() {
            seed.set_fragment(Some("insecure"));
        }
        SlotRouter {
            seed,
            tls: target.tls_certificates(),
            timeouts,
            map: RwLock::default(),
            refreshing: AtomicBool::new(false),
        }
    }

    /// Reads the slot map from the cluster (`CLUSTER NODES`): the masters that serve slots and
    /// are not failing. A master already known keeps its connection unless that failed.
    pub(crate) async fn refresh(&self, cluster: &mut ClusterConnection) -> RedisResult<()> {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query_async(cluster)
            .await?;
        let old = self.current();
        let mut owner = vec![UNKNOWN; SLOTS];
        let mut masters: Vec<Arc<Master>> = Vec::new();
        for node in cluster::parse_nodes(&text) {
            if node.role != NodeRole::Master || node.failing || node.slots.is_empty() {
                continue;
            }
            let known = old.masters.iter().find(|m| {
                m.host == node.host && m.port == node.port && !m.broken.load(Ordering::Relaxed)
            });
            let master = match known {
                Some(master) => master.clone(),
                None => Arc::new(Master {
                    host: node.host.clone(),
                    port: node.port,
                    conn: Default::default(),
                    broken: AtomicBool::new(false),
                }),
            };
            let index = masters.len() as u16;
            masters.push(master);
            for (first, last) in node.slots {
                for slot in first..=last.min(SLOTS as u16 - 1) {
                    owner[slot as usize] = index;
                }
            }
        }
        *self.map.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(SlotMap { owner, masters });
        Ok(())
    }

    fn current(&self) -> Arc<SlotMap> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn master_of(&self, slot: u16) -> Option<Arc<Master>> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let index = *map.owner.get(slot as usize)?;
        let master = map.masters.get(index as usize)?;
        (!master.broken.load(Ordering::Relaxed)).then(|| master.clone())
    }

    /// Marks the map stale: one background task reads it again (at most one per REFRESH_GAP).
    fn stale(self: &Arc<Self>, cluster: &ClusterConnection) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let router = self.clone();
        let mut cluster = cluster.clone();
        tokio::spawn(async move {
            let _ = router.refresh(&mut cluster).await;
            tokio::time::sleep(REFRESH_GAP).await;
            router.refreshing.store(false, Ordering::Release);
        });
    }

    async fn connection(&self, master: &Master) -> RedisResult<MultiplexedConnection> {
        let made = master.conn.get_or_try_init(|| async {
            let client = crate::target::node_client(
                &self.seed,
                self.tls.as_ref(),
                &master.host,
                master.port,
            )?;
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(self.timeouts.0))
                .set_response_timeout(Some(self.timeouts.1));
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await
        });
        Ok(made.await?.clone())
    }

    /// Sends a script call straight to its slot's master. None: hand it to the cluster
    /// connection (not a script call, or what the direct path does not settle itself).
    pub(crate) async fn send(
        self: &Arc<Self>,
        cmd: &Cmd,
        cluster: &ClusterConnection,
    ) -> Option<RedisResult<Value>> {
        let master = self.master_for(script_slot(cmd)?, cluster)?;
        let sent = match self.connection(&master).await {
            Ok(mut conn) => conn.req_packed_command(cmd).await,
            Err(err) => Err(err),
        };
        match sent {
            Ok(Value::ServerError(err)) if err.kind().is_some_and(hand_on) => {
                self.stale(cluster);
                None
            }
            Err(err) => self.failed(err, &master, cluster),
            reply => Some(reply),
        }
    }

    /// Sends a pipeline of script calls of one slot straight to its master; None as in
    /// [`Self::send`]. A call in it that meets a redirection keeps its error reply (the caller
    /// sends it again alone, through [`Self::send`]) and marks the map stale.
    pub(crate) async fn send_pipeline(
        self: &Arc<Self>,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
        cluster: &ClusterConnection,
    ) -> Option<RedisResult<Vec<Value>>> {
        let mut slots = pipeline.cmd_iter().map(script_slot);
        let slot = slots.next()??;
        if !slots.all(|s| s == Some(slot)) {
            return None;
        }
        let master = self.master_for(slot, cluster)?;
        let sent = match self.connection(&master).await {
            Ok(mut conn) => conn.req_packed_commands(pipeline, offset, count).await,
            Err(err) => Err(err),
        };
        match sent {
            Ok(replies) => {
                let redirected = replies.iter().any(|reply| {
                    matches!(reply, Value::ServerError(err) if err.kind().is_some_and(hand_on))
                });
                if redirected {
                    self.stale(cluster);
                }
                Some(Ok(replies))
            }
            Err(err) => self.failed(err, &master, cluster),
        }
    }

    fn master_for(self: &Arc<Self>, slot: u16, cluster: &ClusterConnection) -> Option<Arc<Master>> {
        let master = self.master_of(slot);
        if master.is_none() {
            self.stale(cluster);
        }
        master
    }

    /// A failed send: a redirection or a lost connection is handed on (the map marked stale,
    /// the connection dropped); any other error, a timeout included, is the caller's.
    fn failed<T>(
        self: &Arc<Self>,
        err: redis::RedisError,
        master: &Master,
        cluster: &ClusterConnection,
    ) -> Option<RedisResult<T>> {
        if err.is_timeout() {
            // The master is slow, not gone: the deadline has passed anyway, and sending the
            // call again would only add to its backlog. Returned as the cluster connection
            // would return it.
            return Some(Err(err));
        }
        match err.kind() {
            ErrorKind::Server(kind) if hand_on(kind) => {}
            ErrorKind::Io | ErrorKind::Parse | ErrorKind::AuthenticationFailed => {
                master.broken.store(true, Ordering::Relaxed);
            }
            _ if err.is_connection_dropped() || err.is_io_error() => {
                master.broken.store(true, Ordering::Relaxed);
            }
            _ => return Some(Err(err)),
        }
        self.stale(cluster);
        None
    }
}

/// The errors the cluster connection recovers from (a slot that moved or is moving, a master
/// that is failing over): refused before the script runs.
fn hand_on(kind: ServerErrorKind) -> bool {
    matches!(
        kind,
        ServerErrorKind::Moved
            | ServerErrorKind::Ask
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
    )
}

/// The slot of an EVALSHA's or EVAL's first key (None for any other command, or one without
/// keys).
fn script_slot(cmd: &Cmd) -> Option<u16> {
    let mut args = cmd.args_iter();
    let redis::Arg::Simple(name) = args.next()? else {
        return None;
    };
    if !name.eq_ignore_ascii_case(b"EVALSHA") && !name.eq_ignore_ascii_case(b"EVAL") {
        return None;
    }
    let (Some(_), Some(redis::Arg::Simple(numkeys)), Some(redis::Arg::Simple(key))) =
        (args.next(), args.next(), args.next())
    else {
        return None;
    };
    if numkeys == b"0" {
        return None;
    }
    Some(slot_of(key))
}

/// A key's slot: CRC16 (XMODEM) of its hash tag (the first non-empty `{…}`), or of the whole key.
pub fn slot_of(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tagged.unwrap_or(key)) % SLOTS as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // CLUSTER KEYSLOT foo is 12182; CRC16/XMODEM of "123456789" is 0x31C3.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"123456789"), 0x31C3);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        for key in ["a", "rl:{api}:x", "foo{}{bar}", "{a}{b}", "x{y"] {
            let ours = slot_of(key.as_bytes());
            let redis_rs = redis::cluster_routing::Slot::for_key(key);
            assert_eq!(
                redis::cluster_routing::Slot::new(ours),
                Some(redis_rs),
                "{key}"
            );
        }
    }

    #[test]
    fn only_script_calls_with_keys_are_routed() {
        let mut call = redis::cmd("EVALSHA");
        call.arg("0123").arg(2).arg("rl:{api}:k").arg("rl:{api}:t");
        assert_eq!(script_slot(&call), Some(slot_of(b"api")));
        let mut none = redis::cmd("EVAL");
        none.arg("return 1").arg(0);
        assert_eq!(script_slot(&none), None);
        assert_eq!(script_slot(redis::cmd("GET").arg("rl:{api}:k")), None);
    }
}
