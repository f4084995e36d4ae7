//! Policies' per-second telemetry: the allowed, denied, shadow_denied and delayed counters the
//! policy script increments, and the released and settled counters the lease and settle
//! scripts increment after decisions, read for the last 30 seconds as 180 GETs per policy, every policy in one
//! pipeline (one round trip however many are watched; on a Redis Cluster, where a pipeline may
//! not cross slots, one pipeline per policy, all in flight at once), with this process's
//! fail-open counts.

use crate::decision::PolicyOutcome;
use crate::error::{FailureKind, RedisFailure};
use crate::keys::KeySpace;
use crate::limiter::Limiter;
use crate::telemetry::{self, StatsPoint, WINDOW_SECS};
use serde::Serialize;

/// One second of one policy.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct PolicyStatsPoint {
    pub second: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Admitted in shadow mode although a limit denied them.
    pub shadow_denied: u64,
    /// Admitted with a delay (the policy's `max_delay_ms`): not counted in `allowed`.
    pub delayed: u64,
    /// Leases given back while live (`lua/lease.lua`): requests in flight that ended.
    pub released: u64,
    /// Requests settled with their actual cost, some limit changed (`lua/settle.lua`).
    pub settled: u64,
    /// Let through because Redis failed, counted in this process only.
    pub fail_open: u64,
}

/// Reads the 30 seconds ending with `now_second` of each policy, oldest first, zero-padded:
/// one series per policy, in the order given. One pipeline of 180 GETs per policy.
pub async fn read_windows<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &KeySpace,
    policies: &[&str],
    now_second: u64,
) -> Result<Vec<Vec<PolicyStatsPoint>>, RedisFailure> {
    let first = now_second.saturating_sub(WINDOW_SECS - 1);
    let seconds = first..=now_second;
    let counted = PolicyOutcome::COUNTED.len();
    // Each second's decisions, then what followed them: released, settled.
    let per_second = counted + 2;
    let per_policy = per_second * seconds.clone().count();
    if policies.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for policy in policies {
        for second in seconds.clone() {
            for outcome in PolicyOutcome::COUNTED {
                pipe.get(keys.policy_stats(policy, second, outcome));
            }
            pipe.get(keys.after_stats(policy, second, telemetry::RELEASED));
            pipe.get(keys.after_stats(policy, second, telemetry::SETTLED));
        }
    }
    let counts: Vec<Option<u64>> = pipe.query_async(conn).await?;
    if counts.len() != per_policy * policies.len() {
        return Err(RedisFailure::new(
            FailureKind::Reply,
            format!(
                "expected {} replies, got {}",
                per_policy * policies.len(),
                counts.len()
            ),
        ));
    }
    Ok(counts
        .chunks_exact(per_policy)
        .map(|series| {
            seconds
                .clone()
                .zip(series.chunks_exact(per_second))
                .map(|(second, c)| PolicyStatsPoint {
                    second,
                    allowed: c[0].unwrap_or(0),
                    denied: c[1].unwrap_or(0),
                    shadow_denied: c[2].unwrap_or(0),
                    delayed: c[3].unwrap_or(0),
                    released: c[counted].unwrap_or(0),
                    settled: c[counted + 1].unwrap_or(0),
                    fail_open: 0,
                })
                .collect()
        })
        .collect())
}

impl Limiter {
    /// The last 30 seconds of each policy, oldest first, the current second last, with this
    /// process's fail-open counts filled in; one round trip for all of them (on a cluster, one
    /// per policy, concurrently).
    pub async fn policy_stats(
        &self,
        policies: &[&str],
    ) -> Result<Vec<Vec<PolicyStatsPoint>>, RedisFailure> {
        self.policy_stats_at(policies, telemetry::now_ms() / 1000)
            .await
    }

    /// The 30 seconds ending with `now_second`.
    pub async fn policy_stats_at(
        &self,
        policies: &[&str],
        now_second: u64,
    ) -> Result<Vec<Vec<PolicyStatsPoint>>, RedisFailure> {
        let conn = self.connection();
        let deadline = self.options().deadline;
        let keys = self.keys();
        let read = async {
            if conn.is_cluster() {
                // A cluster pipeline may not cross slots, and each policy is its own slot: one
                // pipeline per policy, all in flight at once (one round trip of waiting).
                let reads = policies.iter().map(|policy| {
                    let mut conn = conn.clone();
                    async move {
                        let mut one = read_windows(&mut conn, keys, &[*policy], now_second).await?;
                        Ok::<_, RedisFailure>(one.pop().unwrap_or_default())
                    }
                });
                futures::future::try_join_all(reads).await
            } else {
                read_windows(&mut conn.clone(), keys, policies, now_second).await
            }
        };
        let mut series = match tokio::time::timeout(deadline, read).await {
            Ok(series) => series?,
            Err(_) => return Err(RedisFailure::timeout(deadline)),
        };
        for (policy, points) in policies.iter().zip(&mut series) {
            // The ledger counts fail-opens per name, rules' and policies' alike.
            let mut plain: Vec<StatsPoint> = points
                .iter()
                .map(|p| StatsPoint {
                    second: p.second,
                    ..StatsPoint::default()
                })
                .collect();
            self.ledger().fill(policy, &mut plain);
            for (point, filled) in points.iter_mut().zip(plain) {
                point.fail_open = filled.fail_open;
            }
        }
        Ok(series)
    }
}
