//! A policy's decision: the combined answer, and every limit's own.

use super::{Mode, Policy};
use crate::decision::PolicyOutcome;
use crate::rule::AlgorithmKind;
use serde::{Deserialize, Serialize};

/// The answer to "may this request pass the policy now?". The first five fields mean what a
/// rule's [`crate::Decision`] fields mean, combined over the limits (design.md, "Policies").
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDecision {
    /// True when every limit admits, and in shadow mode always (see `would_deny`).
    pub allowed: bool,
    /// The least of the limits' remaining; `-1` when Redis could not be asked.
    pub remaining: i64,
    /// 0 when allowed; otherwise the greatest of the denying limits' waits: the least wait
    /// after which the same request passes every limit (nothing else admitted meanwhile).
    pub retry_after_ms: u64,
    /// The greatest of the limits' reset waits: when every limit is back to full.
    pub reset_after_ms: u64,
    /// True when Redis failed and the request was let through anyway.
    pub fail_open: bool,
    /// The policy's name.
    pub policy: String,
    /// The policy is in shadow mode: its denials are counted, not enforced.
    pub shadow: bool,
    /// Some limit denied this request: under enforcement it is denied; in shadow mode it was
    /// admitted all the same. Charged nothing either way.
    pub would_deny: bool,
    /// The limit that decided: the denying limit with the longest wait when a limit denies,
    /// otherwise the limit with the least remaining (ties: the first). `None` when Redis could
    /// not be asked.
    pub binding: Option<String>,
    /// The tier whose limits applied (an override's), `None` for the policy's own.
    pub tier: Option<String>,
    /// Every limit's own verdict and numbers, in the policy's order; empty when Redis could
    /// not be asked. A denial repeated by the deny cache carries the denying limit alone.
    pub limits: Vec<LimitResult>,
    /// Denied in process by the deny cache, repeating Redis's denial by `binding` while it
    /// holds ([`crate::deny_cache`]): Redis was not asked. Not part of the JSON, which reads
    /// as Redis's denial.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub cached: bool,
}

/// One limit's part of a policy's decision. When the policy is denied, a limit that would
/// have admitted says so (`allowed`, no wait) with its state as it is, uncharged.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitResult {
    pub name: String,
    pub algorithm: AlgorithmKind,
    pub allowed: bool,
    pub remaining: i64,
    pub retry_after_ms: u64,
    pub reset_after_ms: u64,
}

/// What a policy's decision is when Redis could not be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswer {
    /// Admitted, marked fail-open (`remaining: -1`): the default failure mode.
    FailOpen,
    /// Denied (the limiter fails closed).
    FailClosed,
}

impl PolicyDecision {
    /// The decision when Redis could not be asked: `FailOpen` admits with `remaining: -1`,
    /// `FailClosed` denies; nothing is known of the limits. The mode (shadow) and the tier are
    /// the policy's for `client_key`.
    pub fn without_redis(policy: &Policy, client_key: &str, answer: NoAnswer) -> Self {
        let open = answer == NoAnswer::FailOpen;
        PolicyDecision {
            allowed: open,
            remaining: -1,
            retry_after_ms: 0,
            reset_after_ms: 0,
            fail_open: open,
            policy: policy.name().to_string(),
            shadow: policy.mode() == Mode::Shadow,
            would_deny: false,
            binding: None,
            tier: policy.limits_for(client_key).0.map(str::to_string),
            limits: Vec::new(),
            cached: false,
        }
    }

    /// How this decision is counted.
    pub fn outcome(&self) -> PolicyOutcome {
        if self.fail_open {
            PolicyOutcome::FailOpen
        } else if self.cached {
            PolicyOutcome::CacheDenied
        } else if !self.allowed {
            PolicyOutcome::Denied
        } else if self.would_deny {
            PolicyOutcome::ShadowDenied
        } else {
            PolicyOutcome::Allowed
        }
    }

    /// The combined answer as a rule's [`crate::Decision`] says it: what the simulator and
    /// replay record and count (a shadow denial is an admission here; `would_deny` says the
    /// rest).
    pub fn as_decision(&self) -> crate::Decision {
        if self.fail_open {
            return crate::Decision::FAIL_OPEN;
        }
        if self.remaining < 0 && !self.allowed {
            return crate::Decision::FAIL_CLOSED;
        }
        crate::Decision::by_redis(
            self.allowed,
            self.remaining.max(0) as u64,
            self.retry_after_ms,
            self.reset_after_ms,
        )
    }

    /// The binding limit's result.
    pub fn binding_limit(&self) -> Option<&LimitResult> {
        let name = self.binding.as_deref()?;
        self.limits.iter().find(|l| l.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_design_md_says() {
        let d = PolicyDecision {
            allowed: false,
            remaining: 0,
            retry_after_ms: 1500,
            reset_after_ms: 86_400_000,
            fail_open: false,
            policy: "api".into(),
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
            cached: false,
        };
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
        assert_eq!(d.outcome(), PolicyOutcome::Denied);
        assert_eq!(d.binding_limit().map(|l| l.remaining), Some(0));
        let policy = crate::policy::parse_policy_json(&serde_json::json!({
            "name": "api", "mode": "shadow",
            "limits": [{"name": "daily", "algorithm": "fixed_window", "limit": 2, "window_ms": 1000}],
            "overrides": [{"tier": "premium", "keys": ["premium_*"], "limits": [
                {"name": "daily", "algorithm": "fixed_window", "limit": 20, "window_ms": 1000}]}]
        }))
        .expect("valid");
        let open = PolicyDecision::without_redis(&policy, "premium_1", NoAnswer::FailOpen);
        assert!(open.shadow && open.allowed && open.fail_open);
        let closed = PolicyDecision::without_redis(&policy, "bob", NoAnswer::FailClosed);
        assert_eq!(
            (closed.allowed, closed.fail_open, closed.tier),
            (false, false, None)
        );
        let json = serde_json::to_value(&open).expect("json");
        assert_eq!(json["remaining"], -1);
        assert_eq!(json["binding"], serde_json::Value::Null);
        assert_eq!(json["tier"], "premium");
        assert_eq!(json["limits"], serde_json::json!([]));
        assert_eq!(open.outcome(), PolicyOutcome::FailOpen);
        let shadow = PolicyDecision { allowed: true, ..d };
        assert_eq!(shadow.outcome(), PolicyOutcome::ShadowDenied);
    }
}
