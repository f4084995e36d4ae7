//! The live chart's data: the last 30 seconds of each rule from Redis, or (when Redis cannot
//! say) the fail-open counts this process keeps.

use super::AppCore;
use ratelockr::telemetry::{now_ms, StatsPoint};
use serde::Serialize;
use ts_rs::TS;

/// The last 30 seconds of one rule, or why Redis could not say (the fail-open counts, which
/// live in this process, are there either way).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RuleStats {
    pub rule: String,
    pub points: Vec<StatsPoint>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl AppCore {
    /// The last 30 seconds of each rule: one pipelined read per rule.
    pub async fn stats(&self, rules: &[String]) -> Vec<RuleStats> {
        let limiter = self.connection().limiter;
        let now_second = now_ms() / 1000;
        let mut out = Vec::with_capacity(rules.len());
        for rule in rules.iter().take(16) {
            let (points, error) = match limiter.stats_at(rule, now_second).await {
                Ok(points) => (points, None),
                Err(err) => (
                    limiter.ledger().fail_open_series(rule, now_second),
                    Some(err.to_string()),
                ),
            };
            out.push(RuleStats {
                rule: rule.clone(),
                points,
                error,
            });
        }
        out
    }
}
