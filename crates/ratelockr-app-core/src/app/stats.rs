//! The live chart's data: the last 30 seconds of each rule from Redis in one pipelined read, or
//! (when Redis cannot say) the fail-open counts this process keeps.

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
    /// The last 30 seconds of every rule of `rules`: one pipelined read for all of them (the
    /// live chart asks for what it shows; nothing is left out here).
    pub async fn stats(&self, rules: &[String]) -> Vec<RuleStats> {
        let limiter = self.connection().limiter;
        let now_second = now_ms() / 1000;
        let names: Vec<&str> = rules.iter().map(String::as_str).collect();
        match limiter.stats_many_at(&names, now_second).await {
            Ok(series) => rules
                .iter()
                .zip(series)
                .map(|(rule, points)| RuleStats {
                    rule: rule.clone(),
                    points,
                    error: None,
                })
                .collect(),
            Err(err) => rules
                .iter()
                .map(|rule| RuleStats {
                    rule: rule.clone(),
                    points: limiter.ledger().fail_open_series(rule, now_second),
                    error: Some(err.to_string()),
                })
                .collect(),
        }
    }
}
