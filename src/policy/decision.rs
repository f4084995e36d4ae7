//! A policy's decision when Redis could not be asked. The decision itself is the one
//! [`Decision`] of every check; what a policy adds to it is [`crate::decision::PolicyVerdict`].

use super::{Mode, Policy};
use crate::decision::{Decision, PolicyVerdict};

/// What a policy's decision is when Redis could not be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// Admitted, marked fail-open (`remaining: -1`): the default failure mode.
    FailOpen,
    /// Denied (the limiter fails closed).
    FailClosed,
}

impl Decision {
    /// A policy's decision when Redis could not be asked: `FailOpen` admits with
    /// `remaining: -1`, `FailClosed` denies; nothing is known of the limits. The mode (shadow)
    /// and the tier are the policy's for `client_key`.
    pub fn unanswered(policy: &Policy, client_key: &str, answer: NoAnswer) -> Decision {
        let head = match answer {
            NoAnswer::FailOpen => Decision::FAIL_OPEN,
            NoAnswer::FailClosed => Decision::FAIL_CLOSED,
        };
        Decision::of_policy(
            head,
            PolicyVerdict {
                name: policy.name().to_string(),
                shadow: policy.mode() == Mode::Shadow,
                would_deny: false,
                binding: None,
                tier: policy.limits_for(client_key).0.map(str::to_string),
                limits: Vec::new(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{LimitResult, PolicyOutcome};
    use crate::rule::AlgorithmKind;

    #[test]
    fn serializes_as_design_md_says() {
        let d = Decision::of_policy(
            Decision::by_redis(false, 0, 1500, 86_400_000),
            PolicyVerdict {
                name: "api".into(),
                shadow: false,
                would_deny: true,
                binding: Some("daily".into()),
                tier: None,
                limits: vec![LimitResult {
                    name: "daily".into(),
                    algorithm: AlgorithmKind::FixedWindow,
                    allowed: false,
                    remaining: 0,
                    retry_after_ms: 1500,
                    reset_after_ms: 86_400_000,
                }],
            },
        );
        let json = serde_json::to_value(&d).expect("json");
        assert_eq!(
            json,
            serde_json::json!({
                "allowed": false, "remaining": 0, "retry_after_ms": 1500,
                "reset_after_ms": 86_400_000, "fail_open": false, "policy": "api",
                "shadow": false, "would_deny": true, "binding": "daily", "tier": null,
                "limits": [{"name": "daily", "algorithm": "fixed_window", "allowed": false,
                            "remaining": 0, "retry_after_ms": 1500, "reset_after_ms": 86_400_000}]
            })
        );
        assert_eq!(d.policy_outcome(), PolicyOutcome::Denied);
        let back: Decision = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, d, "a policy's JSON reads as a policy's decision");
        assert_eq!(d.binding_limit().map(|l| l.remaining), Some(0));
        let policy = crate::policy::parse_policy_json(&serde_json::json!({
            "name": "api", "mode": "shadow",
            "limits": [{"name": "daily", "algorithm": "fixed_window", "limit": 2, "window_ms": 1000}],
            "overrides": [{"tier": "premium", "keys": ["premium_*"], "limits": [
                {"name": "daily", "algorithm": "fixed_window", "limit": 20, "window_ms": 1000}]}]
        }))
        .expect("valid");
        let open = Decision::unanswered(&policy, "premium_1", NoAnswer::FailOpen);
        assert!(open.shadow() && open.allowed && open.fail_open());
        let closed = Decision::unanswered(&policy, "bob", NoAnswer::FailClosed);
        assert_eq!(
            (closed.allowed, closed.fail_open(), closed.tier()),
            (false, false, None)
        );
        let json = serde_json::to_value(&open).expect("json");
        assert_eq!(json["remaining"], -1);
        assert_eq!(json["binding"], serde_json::Value::Null);
        assert_eq!(json["tier"], "premium");
        assert_eq!(json["limits"], serde_json::json!([]));
        assert_eq!(open.policy_outcome(), PolicyOutcome::FailOpen);
        let back: Decision = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, open);
        let shadow = Decision { allowed: true, ..d };
        assert_eq!(shadow.policy_outcome(), PolicyOutcome::ShadowDenied);
        let rule = Decision::by_redis(true, 3, 0, 10);
        let back: Decision =
            serde_json::from_value(serde_json::to_value(&rule).expect("json")).expect("reads");
        assert_eq!(back, rule, "a rule's JSON reads as a rule's decision");
    }
}
