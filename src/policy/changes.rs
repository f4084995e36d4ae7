//! What a reload changed, in words for a log line: `api: mode shadow -> enforce; login added;
//! old removed`. serve and the tower layer log it with every reload of a policies file, so an
//! operator reading the log sees a switch to enforcement (or a mistake) take effect.

use super::Policy;

/// The differences between the policies in force before and after a reload, by name, in the
/// new file's order (removed ones last); `no policy changed` when the file changed but its
/// policies did not (a comment, the order).
pub fn describe(before: &[Policy], after: &[Policy]) -> String {
    let old = |name: &str| before.iter().find(|p| p.name() == name);
    let mut parts: Vec<String> = Vec::new();
    for policy in after {
        match old(policy.name()) {
            None => parts.push(format!("{} added", policy.name())),
            Some(was) if was == policy => {}
            Some(was) => parts.push(format!("{}: {}", policy.name(), what_changed(was, policy))),
        }
    }
    for policy in before {
        if !after.iter().any(|p| p.name() == policy.name()) {
            parts.push(format!("{} removed", policy.name()));
        }
    }
    if parts.is_empty() {
        "no policy changed".to_string()
    } else {
        parts.join("; ")
    }
}

fn what_changed(was: &Policy, now: &Policy) -> String {
    let mut what = Vec::new();
    if was.mode() != now.mode() {
        what.push(format!(
            "mode {} -> {}",
            was.mode().as_str(),
            now.mode().as_str()
        ));
    }
    if was.key() != now.key() {
        what.push(format!(
            "key {} -> {}",
            was.key().unwrap_or("(none)"),
            now.key().unwrap_or("(none)")
        ));
    }
    let names = |p: &Policy| {
        p.limits()
            .iter()
            .map(|l| l.name().to_string())
            .collect::<Vec<_>>()
    };
    if was.limits() != now.limits() {
        if names(was) == names(now) {
            let changed: Vec<&str> = was
                .limits()
                .iter()
                .zip(now.limits())
                .filter(|(a, b)| a != b)
                .map(|(_, b)| b.name())
                .collect();
            what.push(format!("limit {} changed", changed.join(", ")));
        } else {
            what.push(format!(
                "limits {} -> {}",
                names(was).join(", "),
                names(now).join(", ")
            ));
        }
    }
    if was.overrides() != now.overrides() {
        what.push("tiers changed".to_string());
    }
    what.join(", ")
}

/// `1 policy`, `3 policies`.
pub fn count(n: usize) -> String {
    if n == 1 {
        "1 policy".to_string()
    } else {
        format!("{n} policies")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{parse_policy_json, Mode};
    use serde_json::json;

    fn policy(name: &str, capacity: u64) -> Policy {
        parse_policy_json(&json!({"name": name, "key": "ip", "limits": [
            {"name": "per-second", "algorithm": "token_bucket", "capacity": capacity, "refill_per_sec": 10},
            {"name": "daily", "algorithm": "fixed_window", "limit": 2000, "window_ms": 86_400_000}
        ]}))
        .expect("valid")
    }

    #[test]
    fn a_reload_is_described_by_what_it_changed() {
        let before = [policy("api", 10), policy("old", 10)];
        let after = [
            policy("api", 10).with_mode(Mode::Shadow),
            policy("login", 5),
        ];
        assert_eq!(
            describe(&before, &after),
            "api: mode enforce -> shadow; login added; old removed"
        );
        assert_eq!(
            describe(&[policy("api", 10)], &[policy("api", 20)]),
            "api: limit per-second changed"
        );
        assert_eq!(describe(&before, &before), "no policy changed");
        assert_eq!(
            (count(1), count(0), count(3)),
            ("1 policy".into(), "0 policies".into(), "3 policies".into())
        );
    }
}
