//! Per-second telemetry: allowed and denied counters in Redis, fail-open counts in process.
//!
//! The scripts increment this second's counter in the same call that decides, so telemetry adds
//! no round trip. Reading a rule's last 30 seconds is 60 GETs in one pipeline: no SCAN, no KEYS,
//! and the cost does not grow with the number of keys in Redis.

use crate::decision::Outcome;
use crate::error::{FailureKind, RedisFailure};
use crate::keys::KeySpace;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// How many seconds a stats read returns.
pub(crate) const WINDOW_SECS: u64 = 30;
/// The TTL of a per-second counter; longer than the window so a read never races expiry.
pub const COUNTER_TTL_SECS: u64 = 120;

/// The suffix of a rule's or policy's per-second count of leases given back (freed while live).
pub const RELEASED: &str = "released";
/// The suffix of a rule's or policy's per-second count of requests settled (some limit changed).
pub const SETTLED: &str = "settled";

/// One second of one rule.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct StatsPoint {
    pub second: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Decisions let through because Redis failed, counted in this process only.
    pub fail_open: u64,
}

/// Milliseconds since the epoch by this machine's clock.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Reads the 30 seconds ending with `now_second` (inclusive), oldest first, zero-padded.
pub(crate) async fn read_window<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &KeySpace,
    rule: &str,
    now_second: u64,
) -> Result<Vec<StatsPoint>, RedisFailure> {
    let mut one = read_windows(conn, keys, &[rule], now_second).await?;
    Ok(one.pop().unwrap_or_default())
}

/// [`read_window`] for every rule of `rules` in one pipeline (60 GETs a rule), in order. On a
/// Redis Cluster the rules must share a slot: give one rule at a time there.
pub(crate) async fn read_windows<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &KeySpace,
    rules: &[&str],
    now_second: u64,
) -> Result<Vec<Vec<StatsPoint>>, RedisFailure> {
    let first = now_second.saturating_sub(WINDOW_SECS - 1);
    let seconds = first..=now_second;
    let mut pipe = redis::pipe();
    for rule in rules {
        for second in seconds.clone() {
            pipe.get(keys.stats(rule, second, Outcome::Allowed));
            pipe.get(keys.stats(rule, second, Outcome::Denied));
        }
    }
    let counts: Vec<Option<u64>> = pipe.query_async(conn).await?;
    let per_rule = 2 * WINDOW_SECS as usize;
    if counts.len() != per_rule * rules.len() {
        return Err(RedisFailure::new(
            FailureKind::Reply,
            format!(
                "expected {} replies, got {}",
                per_rule * rules.len(),
                counts.len()
            ),
        ));
    }
    Ok(counts
        .chunks_exact(per_rule)
        .map(|rule| {
            seconds
                .clone()
                .zip(rule.chunks_exact(2))
                .map(|(second, pair)| StatsPoint {
                    second,
                    allowed: pair[0].unwrap_or(0),
                    denied: pair[1].unwrap_or(0),
                    fail_open: 0,
                })
                .collect()
        })
        .collect())
}

/// What a process knows that Redis cannot: decisions made without it.
#[derive(Debug, Default)]
pub struct FailureLedger {
    /// Fail-open decisions per rule and second, pruned to the counters' TTL. A std Mutex: it is
    /// held for a map update only, never across an await.
    per_second: Mutex<HashMap<String, BTreeMap<u64, u64>>>,
    by_kind: [AtomicU64; FailureKind::ALL.len()],
    fail_open_total: AtomicU64,
}

impl FailureLedger {
    pub fn record_failure(&self, kind: FailureKind) {
        self.by_kind[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_fail_open(&self, rule: &str, second: u64) {
        self.fail_open_total.fetch_add(1, Ordering::Relaxed);
        let mut map = self.per_second.lock().unwrap_or_else(|p| p.into_inner());
        let seconds = map.entry(rule.to_string()).or_default();
        *seconds.entry(second).or_default() += 1;
        let horizon = second.saturating_sub(COUNTER_TTL_SECS);
        while seconds.first_key_value().is_some_and(|(s, _)| *s < horizon) {
            seconds.pop_first();
        }
    }

    /// Redis failures by kind since the process started.
    pub fn failures(&self) -> Vec<(FailureKind, u64)> {
        FailureKind::ALL
            .into_iter()
            .map(|k| (k, self.by_kind[k.index()].load(Ordering::Relaxed)))
            .collect()
    }

    pub fn failures_total(&self) -> u64 {
        self.by_kind.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    pub fn fail_open_total(&self) -> u64 {
        self.fail_open_total.load(Ordering::Relaxed)
    }

    /// Fail-open decisions of every rule from `second` on (within the kept 120 seconds).
    pub fn fail_open_since(&self, second: u64) -> u64 {
        let map = self.per_second.lock().unwrap_or_else(|p| p.into_inner());
        map.values()
            .map(|seconds| seconds.range(second..).map(|(_, n)| n).sum::<u64>())
            .sum()
    }

    /// Adds this process's fail-open counts to a series read from Redis.
    pub fn fill(&self, rule: &str, points: &mut [StatsPoint]) {
        let map = self.per_second.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(seconds) = map.get(rule) {
            for p in points {
                p.fail_open = seconds.get(&p.second).copied().unwrap_or(0);
            }
        }
    }

    /// A zero-padded series of fail-open counts alone, for when Redis cannot be read at all.
    pub fn fail_open_series(&self, rule: &str, now_second: u64) -> Vec<StatsPoint> {
        let first = now_second.saturating_sub(WINDOW_SECS - 1);
        let mut points: Vec<StatsPoint> = (first..=now_second)
            .map(|second| StatsPoint {
                second,
                ..StatsPoint::default()
            })
            .collect();
        self.fill(rule, &mut points);
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_fail_opens_are_counted_across_rules_from_a_second_on() {
        let ledger = FailureLedger::default();
        ledger.record_fail_open("a", 100);
        ledger.record_fail_open("a", 105);
        ledger.record_fail_open("b", 109);
        ledger.record_fail_open("b", 110);
        assert_eq!(ledger.fail_open_since(101), 3);
        assert_eq!(ledger.fail_open_since(110), 1);
        assert_eq!(ledger.fail_open_since(111), 0, "recovered: nothing recent");
        assert_eq!(ledger.fail_open_total(), 4);
    }
}
