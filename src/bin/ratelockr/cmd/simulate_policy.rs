//! `ratelockr simulate --policies`: what the summary table adds for policies — which limit
//! denied how many, the shadow denials, and the keys of each tier.

use ratelockr::sim::Report;

/// One line per policy target: its denials by limit, shadow denials, keys per tier.
pub fn print(report: &Report) {
    for t in report
        .targets
        .iter()
        .filter(|t| t.algorithm == ratelockr::sim::POLICY_LABEL)
    {
        let by: Vec<String> = t
            .denied_by
            .iter()
            .map(|(limit, n)| format!("{limit} {n}"))
            .collect();
        let by = if by.is_empty() {
            "no limit denied".to_string()
        } else {
            format!("denied by {}", by.join(", "))
        };
        let shadow = if t.shadow_denied > 0 {
            format!(
                "; shadow mode: {} requests admitted that its limits denied ({} keys)",
                t.shadow_denied, t.keys_denied
            )
        } else {
            String::new()
        };
        println!("\npolicy {}: {by}{shadow}", t.rule);
        if !t.tier_keys.is_empty() {
            let tiers: Vec<String> = t
                .tier_keys
                .iter()
                .map(|(tier, keys)| match tier.as_str() {
                    "" => format!("{keys} under the policy's own limits"),
                    tier => format!("{keys} in tier {tier}"),
                })
                .collect();
            println!("  keys: {}", tiers.join(", "));
        }
    }
}
