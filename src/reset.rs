//! Reset: deleting a rule's limiter state, for one client key or for all of them.
//!
//! A maintenance command, never on a hot path: clearing a whole rule walks the rule's
//! hash-tagged prefix with SCAN (one pattern per algorithm's key tag, and the naive demo's),
//! which touches every key in Redis (every master's, on a cluster). One client key is a single DEL of the few names it can
//! have. Telemetry counters are history, not state, and are kept.

use crate::error::RedisFailure;
use crate::limiter::Limiter;
use crate::rule::{validate_client_key, validate_rule_name, AlgorithmKind, RuleError};
use redis::AsyncCommands;

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
            // Collected first (deduplicated: SCAN may name a key twice), so the scan's cursor
            // stays apart from the deletions. On a cluster every master is scanned.
            let found = conn.scan_match(&pattern).await?;
            deleted += conn.unlink(&found).await?;
        }
        Ok(deleted)
    }
}
