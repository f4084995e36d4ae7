//! What `simulate --policies` and `replay --policies` print for a policy beside a rule's
//! figures: which limit denied how many, the shadow denials, and the keys of each tier.

use std::collections::BTreeMap;

/// A policy's figures, as both runs count them.
pub struct PolicyLines<'a> {
    pub name: &'a str,
    pub denied_by: &'a BTreeMap<String, u64>,
    pub shadow_denied: u64,
    pub keys_denied: u64,
    pub tier_keys: &'a BTreeMap<String, u64>,
}

impl PolicyLines<'_> {
    /// "policy api: denied by daily 3, per-second 120" and, with tiers, the keys of each.
    pub fn print(&self, indent: &str) {
        let by: Vec<String> = self
            .denied_by
            .iter()
            .map(|(limit, n)| format!("{limit} {n}"))
            .collect();
        let by = if by.is_empty() {
            "no limit denied".to_string()
        } else {
            format!("denied by {}", by.join(", "))
        };
        let shadow = if self.shadow_denied > 0 {
            format!(
                "; shadow mode: {} requests admitted that its limits denied ({} keys)",
                self.shadow_denied, self.keys_denied
            )
        } else {
            String::new()
        };
        println!("{indent}policy {}: {by}{shadow}", self.name);
        if !self.tier_keys.is_empty() {
            let tiers: Vec<String> = self
                .tier_keys
                .iter()
                .map(|(tier, keys)| match tier.as_str() {
                    "" => format!("{keys} under the policy's own limits"),
                    tier => format!("{keys} in tier {tier}"),
                })
                .collect();
            println!("{indent}  keys: {}", tiers.join(", "));
        }
    }
}

/// Every policy target of a simulation.
pub fn print_sim(report: &ratelockr_lab::sim::Report) {
    let policies = report
        .targets
        .iter()
        .filter(|t| t.algorithm == ratelockr_lab::sim::Subject::Policy);
    for t in policies {
        println!();
        PolicyLines {
            name: &t.rule,
            denied_by: &t.denied_by,
            shadow_denied: t.shadow_denied,
            keys_denied: t.keys_denied,
            tier_keys: &t.tier_keys,
        }
        .print("");
    }
}
