//! What a replay found: serde types, the CLI's `--json` (design.md's `replay` contract) and the
//! desktop app's payload; and [`pct`], the one rounding of its percentages.

pub use super::changes::{KeyChange, RuleChange};
use super::format::LogFormat;
pub use super::keytable::{pct, KeyInFlight, TopKey};
use crate::subject::Subject;
use ratelockr::policy::Policy;
use ratelockr::rule::Rule;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A line that was not decided, and why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineIssue {
    pub line: u64,
    pub reason: String,
}

/// One point of a rule's series: the decisions of one bucket of log time.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ReplayPoint {
    /// The bucket's start, ms since the epoch (log time).
    pub t_ms: u64,
    pub allowed: u64,
    pub denied: u64,
    pub fail_open: u64,
    /// Of `allowed`, a shadow policy's admissions that its limits denied.
    #[serde(default)]
    pub shadow_denied: u64,
}

/// A rule's decisions over log time.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ReplaySeries {
    /// Each point's length: 1 s, or coarser (10 s, 1 min, 10 min, 1 h, 1 day) so that a long
    /// log keeps at most [`super::series::MAX_POINTS`] points.
    pub bucket_ms: u64,
    pub points: Vec<ReplayPoint>,
}

/// Percentiles over keys of each key's peak: the most requests (cost units) it sent in one
/// window (a window opening at the key's first request, as the fixed window opens one).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakRates {
    pub window_ms: u64,
    pub keys: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

/// With durations in the log: how many requests each key had in flight at once (every
/// request, admitted or not: what the key sent), as percentiles over keys and the keys with
/// the most.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// Under a concurrency rule, a request is counted in flight for at most its `lease_ms`
    /// (its lease expires then); otherwise for its whole duration.
    pub capped_at_ms: Option<u64>,
    pub keys: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    /// The most in flight first (`--top` of them).
    pub top_keys: Vec<KeyInFlight>,
}

/// The smallest allowance under which at most `max_keys_denied_pct` of keys are ever denied.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    /// `capacity` (token bucket, at the rule's refill rate) or `limit` (windows, at the rule's
    /// window).
    pub parameter: String,
    pub value: u64,
    pub max_keys_denied_pct: f64,
    /// The share of keys that value would deny at least once.
    pub keys_denied_pct: f64,
    /// How it was found: `exact` (from each key's requirement, computed in one pass) or
    /// `sweep` (the smallest such value on the sweep's grid).
    pub method: String,
    /// The suggestion in words, as the CLI prints it and the app shows it: "capacity 9 is the
    /// smallest that denies at most 1 % of keys (0.33 %)". Empty in reports kept before it.
    #[serde(default)]
    pub sentence: String,
}

impl Suggestion {
    pub(crate) fn new(
        parameter: &str,
        value: u64,
        max_keys_denied_pct: f64,
        keys_denied_pct: f64,
        method: &str,
    ) -> Self {
        let sentence = format!(
            "{parameter} {value} is the smallest that denies at most {} % of keys ({} %)",
            crate::sweep::fmt_pct(max_keys_denied_pct),
            crate::sweep::fmt_pct(keys_denied_pct)
        );
        Suggestion {
            parameter: parameter.to_string(),
            value,
            max_keys_denied_pct,
            keys_denied_pct,
            method: method.to_string(),
            sentence,
        }
    }
}

/// Everything one rule did to the log.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleReport {
    pub rule: String,
    // Written as its label (`token_bucket`, ..., `policy`): a string to the UI.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub algorithm: Subject,
    pub params: Rule,
    pub requests: u64,
    pub allowed: u64,
    pub denied: u64,
    /// Decisions Redis could not make (allowed, `remaining: -1`): not a verdict of the rule.
    pub fail_open: u64,
    pub allowed_pct: f64,
    pub denied_pct: f64,
    /// Distinct client keys (see [`ReplayReport::keys_exact`]).
    pub keys: u64,
    /// Keys denied at least once.
    pub keys_denied: u64,
    pub keys_denied_pct: f64,
    pub series: ReplaySeries,
    /// Most denials first.
    pub top_keys: Vec<TopKey>,
    /// True when every key fit the per-rule key table, so `top_keys`, `peak_rates` and the
    /// suggestion are exact.
    pub top_keys_exact: bool,
    pub peak_rates: Option<PeakRates>,
    /// With durations in the log (`--duration-field`): requests in flight per key.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<InFlight>,
    pub suggestion: Option<Suggestion>,
    /// A policy's run: the policy, and what it counts besides a rule's. `params` is then its
    /// first limit under its name (what `peak_rates` and `top_keys` measure on), and for a
    /// shadow policy `keys_denied` and `top_keys` count what its limits denied, though
    /// admitted.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyFigures>,
}

/// A policy's figures in a replay.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyFigures {
    pub policy: Policy,
    /// Requests a shadow policy admitted that its limits denied.
    pub shadow_denied: u64,
    /// Denials (shadow ones too) by the limit that decided them.
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub denied_by: BTreeMap<String, u64>,
    /// With overrides: distinct client keys per tier (`""`: the policy's own limits).
    #[cfg_attr(feature = "ts", ts(type = "Record<string, number>"))]
    pub tier_keys: BTreeMap<String, u64>,
}

/// One configuration of a sweep: shared with the simulator's sweeps.
pub use crate::sweep::SweepPoint;

/// A whole replay.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub source: String,
    pub format: LogFormat,
    pub gzip: bool,
    /// The client key expression.
    pub key: String,
    /// Lines read (blank ones included).
    pub lines: u64,
    /// Lines parsed into requests (before the filters).
    pub parsed: u64,
    pub malformed: u64,
    /// Parsed requests the --method / --path filters left out.
    pub filtered: u64,
    /// Requests whose key expression found no value.
    pub no_key: u64,
    /// Requests older than one already decided, beyond the reorder lookahead: refused.
    pub out_of_order: u64,
    /// Requests that arrived out of order and were sorted.
    pub reordered: u64,
    pub lookahead_ms: u64,
    /// Requests decided (each by every rule).
    pub requests: u64,
    /// The first few lines not decided, with why.
    pub issues: Vec<LineIssue>,
    /// What ended the input early (a truncated gzip stream, a read error), if anything.
    pub input_error: Option<String>,
    /// The log's first and last request times.
    pub first_ms: Option<u64>,
    pub last_ms: Option<u64>,
    /// Distinct client keys.
    pub keys: u64,
    /// False past [`super::distinct::EXACT_LIMIT`] keys: `keys` and `keys_denied` are then
    /// HyperLogLog estimates (about 0.8 % standard error).
    pub keys_exact: bool,
    pub rules: Vec<RuleReport>,
    /// With several rules (or policies): how each after the first decides the log
    /// differently from the first, and which keys.
    #[cfg_attr(feature = "ts", ts(optional, as = "Option<Vec<RuleChange>>"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<RuleChange>,
    pub sweep: Vec<SweepPoint>,
    /// Wall-clock time of the replay.
    pub elapsed_ms: u64,
    pub decisions_per_sec: f64,
    pub cancelled: bool,
    /// How whole-second times were placed within their second.
    pub time_spread: String,
    /// What may have made decisions differ from production's (see [`super::pace`]).
    pub warnings: Vec<String>,
}
