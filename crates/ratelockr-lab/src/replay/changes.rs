//! Side by side, what changed: how a candidate rule (or policy) decides the log differently
//! from the first one — requests and keys denied more or less, and which keys — read from
//! the candidates' key tables at the end of the replay.

use super::keytable::KeyTable;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One key denied differently by a candidate than by the first rule.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyChange {
    pub key: String,
    pub requests: u64,
    /// Denials under the first rule (a shadow policy's: what its limits denied).
    pub base_denied: u64,
    /// Denials under the candidate.
    pub denied: u64,
}

/// How a candidate decides the log differently from the first rule (the base).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleChange {
    pub base: String,
    pub rule: String,
    /// Requests denied (shadow denials included), the candidate's less the base's.
    pub denied: i64,
    /// Keys denied at least once, the candidate's less the base's.
    pub keys_denied: i64,
    /// Keys the candidate denies and the base never did.
    pub newly_denied_keys: u64,
    /// Keys the base denied and the candidate never does.
    pub no_longer_denied_keys: u64,
    /// The keys denied more under the candidate, most added denials first (at most `top`).
    pub more: Vec<KeyChange>,
    /// The keys denied less, most removed denials first (at most `top`).
    pub fewer: Vec<KeyChange>,
    /// True when both key tables held every key, so the key counts and lists are exact.
    pub exact: bool,
}

/// What one run brings to the comparison.
pub(super) struct Side<'a> {
    pub name: &'a str,
    /// Requests denied, shadow denials included.
    pub denied: u64,
    pub keys_denied: u64,
    pub table: &'a KeyTable,
}

/// Each candidate after the first against the first.
pub(super) fn compare(sides: &[Side<'_>], top: usize) -> Vec<RuleChange> {
    let Some((base, others)) = sides.split_first() else {
        return Vec::new();
    };
    let base_denied: HashMap<&str, u64> = base
        .table
        .entries()
        .iter()
        .map(|e| (e.key.as_str(), e.denied))
        .collect();
    let base_keys = base_denied.values().filter(|&&d| d > 0).count() as u64;
    others
        .iter()
        .map(|side| {
            let (mut more, mut fewer) = (Vec::new(), Vec::new());
            let (mut newly, mut still) = (0, 0);
            for e in side.table.entries() {
                let before = base_denied.get(e.key.as_str()).copied().unwrap_or(0);
                match (before > 0, e.denied > 0) {
                    (false, true) => newly += 1,
                    (true, true) => still += 1,
                    _ => {}
                }
                let change = || KeyChange {
                    key: e.key.clone(),
                    requests: e.requests,
                    base_denied: before,
                    denied: e.denied,
                };
                if e.denied > before {
                    more.push(change());
                } else if e.denied < before {
                    fewer.push(change());
                }
            }
            // A base key the candidate never saw in its table was denied less only if the
            // table is not exact; when exact, every key of the log is in both.
            let by = |c: &KeyChange| c.denied.abs_diff(c.base_denied);
            more.sort_by(|a, b| by(b).cmp(&by(a)).then_with(|| a.key.cmp(&b.key)));
            fewer.sort_by(|a, b| by(b).cmp(&by(a)).then_with(|| a.key.cmp(&b.key)));
            more.truncate(top);
            fewer.truncate(top);
            RuleChange {
                base: base.name.to_string(),
                rule: side.name.to_string(),
                denied: side.denied as i64 - base.denied as i64,
                keys_denied: side.keys_denied as i64 - base.keys_denied as i64,
                newly_denied_keys: newly,
                no_longer_denied_keys: base_keys.saturating_sub(still),
                more,
                fewer,
                exact: base.table.is_exact() && side.table.is_exact(),
            }
        })
        .collect()
}
