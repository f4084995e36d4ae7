//! Reset: deleting a rule's limiter state, for one client key or for all of them.
//!
//! A maintenance command, never on a hot path: clearing a whole rule walks the rule's
//! hash-tagged prefix with SCAN (one pattern per algorithm's key tag, and the naive demo's),
//! which touches every key in Redis. One client key is a single DEL of the few names it can
//! have. Telemetry counters are history, not state, and are kept.

use crate::error::RedisFailure;
use crate::limiter::Limiter;
use crate::rule::{validate_client_key, validate_rule_name, AlgorithmKind, RuleError};
use redis::AsyncCommands;

/// Keys deleted per UNLINK while clearing a rule.
const BATCH: usize = 512;
/// The key tag of the naive race demo's counters (see [`crate::keys::KeySpace::naive`]).
const NAIVE_TAG: &str = "naive";

/// Why a reset did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResetError {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("Redis failed: {0}")]
    Redis(#[from] RedisFailure),
}

impl Limiter {
    /// Deletes the limiter state of `client_key` under `rule` (every algorithm's key, in the
    /// shared namespace), or with `None` every key of `rule`: all clients, all algorithms and
    /// every simulation run's scope. Returns how many keys went. Works by name alone, so a rule
    /// that no longer exists can still be cleaned up.
    pub async fn reset(&self, rule: &str, client_key: Option<&str>) -> Result<u64, ResetError> {
        validate_rule_name(rule)?;
        // A cached denial of state about to go would outlive it.
        self.forget_denials(rule, client_key);
        let mut conn = self.connection();
        let keys = self.keys();
        if let Some(client) = client_key {
            validate_client_key(client)?;
            let mut names: Vec<String> = AlgorithmKind::ALL
                .into_iter()
                .map(|kind| keys.limiter_for(kind, rule, client))
                .collect();
            names.push(keys.naive(rule, client));
            let deleted: u64 = conn.del(names).await.map_err(RedisFailure::from)?;
            return Ok(deleted);
        }
        let tags = AlgorithmKind::ALL
            .into_iter()
            .map(AlgorithmKind::key_tag)
            .chain([NAIVE_TAG]);
        let mut deleted = 0;
        for tag in tags {
            let pattern = keys.rule_pattern(tag, rule);
            // SCAN may return a key twice; collecting first dedups nothing but keeps the scan's
            // cursor apart from the deletions (UNLINK of an already deleted key counts 0).
            let mut found: Vec<String> = Vec::new();
            {
                let mut scan_conn = conn.clone();
                let mut iter = scan_conn
                    .scan_match::<_, String>(&pattern)
                    .await
                    .map_err(RedisFailure::from)?;
                while let Some(item) = futures::StreamExt::next(&mut iter).await {
                    found.push(item.map_err(RedisFailure::from)?);
                }
            }
            found.sort_unstable();
            found.dedup();
            for batch in found.chunks(BATCH) {
                let n: u64 = redis::cmd("UNLINK")
                    .arg(batch)
                    .query_async(&mut conn)
                    .await
                    .map_err(RedisFailure::from)?;
                deleted += n;
            }
        }
        Ok(deleted)
    }
}
