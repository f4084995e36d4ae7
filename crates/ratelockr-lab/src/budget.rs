//! Whether a front's connections fit the Redis it is about to open them on: a simulation opens
//! one per simulated server, a replay one per lane. On a shared Redis, running out of
//! `maxclients` would lock the live limiters out, so a front that would come within
//! [`HEADROOM`] of it refuses before opening any, naming the flag.

use ratelockr::Limiter;

/// Connections left free for everyone else on the server.
pub(crate) const HEADROOM: u64 = 16;

/// A front's connections would crowd the Redis out of connections for everyone else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("would open {planned} Redis connections, and Redis at {target} has {connected} of its maxclients {max} in use: at most {room} more leave {HEADROOM} for everyone else")]
pub(crate) struct NoRoom {
    planned: u64,
    /// The Redis, as its target displays.
    target: String,
    connected: u64,
    max: u64,
    room: u64,
}

/// Room on the limiter's Redis for `planned` more connections, or why not (for the flag's
/// message). A Redis that does not say (an ACL without CONFIG or INFO, a cluster, no answer
/// within the deadline) is let be: the check is a guard, not a gate.
pub(crate) async fn connections_fit(limiter: &Limiter, planned: u64) -> Result<(), NoRoom> {
    if limiter.target().is_cluster() {
        return Ok(());
    }
    let mut conn = limiter.connection();
    let read = async {
        let max: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("maxclients")
            .query_async(&mut conn)
            .await
            .ok()?;
        let max: u64 = max.get(1)?.parse().ok()?;
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut conn)
            .await
            .ok()?;
        let connected: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("connected_clients:"))?
            .trim()
            .parse()
            .ok()?;
        Some((max, connected))
    };
    let Ok(Some((max, connected))) = tokio::time::timeout(limiter.options().deadline, read).await
    else {
        return Ok(());
    };
    let room = max.saturating_sub(connected).saturating_sub(HEADROOM);
    if planned <= room {
        return Ok(());
    }
    Err(NoRoom {
        planned,
        target: limiter.target().to_string(),
        connected,
        max,
        room,
    })
}
