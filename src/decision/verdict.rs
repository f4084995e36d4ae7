//! What a policy adds to a [`Decision`]: its name and mode, the limit that decided, the tier,
//! and every limit's own answer ([`PolicyVerdict`]); and the contract's JSON of a policy's
//! decision ([`PolicyDecisionJson`]). A rule's decision is the same [`Decision`] without them.

use super::{DecidedBy, Decision, DecisionJson, PolicyOutcome};
use crate::lease::Lease;
use crate::rule::AlgorithmKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A policy's part of a [`Decision`] (design.md, "Policies").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict {
    /// The policy's name.
    pub name: String,
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

impl Decision {
    /// A policy's decision: the combined answer (`head`, as a rule's) with the policy's part.
    pub fn of_policy(head: Decision, verdict: PolicyVerdict) -> Decision {
        Decision {
            policy: Some(Box::new(verdict)),
            ..head
        }
    }

    /// The policy's part, `None` for a rule's decision.
    pub fn verdict(&self) -> Option<&PolicyVerdict> {
        self.policy.as_deref()
    }

    /// Some limit of the policy denied (admitted all the same in shadow mode); a rule's
    /// decision: it was denied.
    pub fn would_deny(&self) -> bool {
        self.verdict()
            .map_or(!self.allowed && !self.is_fallback(), |v| v.would_deny)
    }

    /// The policy's name, `None` for a rule's decision.
    pub fn policy_name(&self) -> Option<&str> {
        self.verdict().map(|v| v.name.as_str())
    }

    /// The policy was in shadow mode.
    pub fn shadow(&self) -> bool {
        self.verdict().is_some_and(|v| v.shadow)
    }

    /// The limit that decided, by name (`None` for a rule's decision, or when Redis was not
    /// asked).
    pub fn binding(&self) -> Option<&str> {
        self.verdict().and_then(|v| v.binding.as_deref())
    }

    /// The tier whose limits applied, `None` for the policy's own (and for a rule's).
    pub fn tier(&self) -> Option<&str> {
        self.verdict().and_then(|v| v.tier.as_deref())
    }

    /// The deny cache repeated Redis's denial; Redis was not asked.
    pub fn cached(&self) -> bool {
        self.by == DecidedBy::Cache
    }

    /// Every limit's own answer (empty for a rule's decision, or when Redis was not asked).
    pub fn limits(&self) -> &[LimitResult] {
        self.verdict().map_or(&[], |v| &v.limits)
    }

    /// The binding limit's result.
    pub fn binding_limit(&self) -> Option<&LimitResult> {
        let verdict = self.verdict()?;
        let name = verdict.binding.as_deref()?;
        verdict.limits.iter().find(|l| l.name == name)
    }

    /// How this decision is counted per policy (a shadow denial is its own result).
    pub fn policy_outcome(&self) -> PolicyOutcome {
        if self.fail_open() {
            PolicyOutcome::FailOpen
        } else if self.by == DecidedBy::Cache {
            PolicyOutcome::CacheDenied
        } else if !self.allowed {
            PolicyOutcome::Denied
        } else if self.would_deny() {
            PolicyOutcome::ShadowDenied
        } else if self.delay_ms > 0 {
            PolicyOutcome::Delayed
        } else {
            PolicyOutcome::Allowed
        }
    }

    /// The combined answer alone, as a rule's decision says it: what the simulator and
    /// replay record and count (a shadow denial is an admission here; `would_deny` says the
    /// rest).
    pub fn combined(&self) -> Decision {
        Decision {
            allowed: self.allowed,
            remaining: self.remaining,
            retry_after_ms: self.retry_after_ms,
            reset_after_ms: self.reset_after_ms,
            delay_ms: self.delay_ms,
            // As Redis's: the simulator and replay count a repeated denial as a denial.
            by: match self.by {
                DecidedBy::Cache => DecidedBy::Redis,
                by => by,
            },
            policy: None,
            lease: None,
        }
    }
}

/// A policy's decision as the contract writes it (design.md, "Policies"): `--json`,
/// `/api/check` with a policy, the app's IPC. The first five fields are a rule's.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "PolicyDecision"))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDecisionJson {
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
    /// The lease this request holds in the policy's concurrency limits: give it back when the
    /// request ends (`POST /api/release`). Absent when none was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub lease: Option<String>,
    /// The wait before the admitted request may start (the policy's `max_delay_ms`: delay
    /// instead of deny): wait this long, then serve. Absent when 0.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub delay_ms: Option<u64>,
}

/// The same, borrowed: what a decision serializes through without copying its strings.
#[derive(Serialize)]
struct PolicyDecisionView<'a> {
    allowed: bool,
    remaining: i64,
    retry_after_ms: u64,
    reset_after_ms: u64,
    fail_open: bool,
    policy: &'a str,
    shadow: bool,
    would_deny: bool,
    binding: Option<&'a str>,
    tier: Option<&'a str>,
    limits: &'a [LimitResult],
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<&'a str>,
    #[serde(skip_serializing_if = "super::is_zero")]
    delay_ms: Option<u64>,
}

impl<'a> PolicyDecisionView<'a> {
    fn of(d: &'a Decision, v: &'a PolicyVerdict) -> Self {
        PolicyDecisionView {
            allowed: d.allowed,
            remaining: d.remaining_or_unknown(),
            retry_after_ms: d.retry_after_ms,
            reset_after_ms: d.reset_after_ms,
            fail_open: d.fail_open(),
            policy: &v.name,
            shadow: v.shadow,
            would_deny: v.would_deny,
            binding: v.binding.as_deref(),
            tier: v.tier.as_deref(),
            limits: &v.limits,
            lease: d.lease.as_ref().map(Lease::id),
            delay_ms: (d.delay_ms > 0).then_some(d.delay_ms),
        }
    }
}

impl From<PolicyDecisionJson> for Decision {
    /// The JSON does not say whether a denial came from the deny cache; it reads as Redis's.
    fn from(j: PolicyDecisionJson) -> Self {
        let by = if j.fail_open {
            DecidedBy::FailOpen
        } else if j.remaining < 0 {
            DecidedBy::FailClosed
        } else {
            DecidedBy::Redis
        };
        let head = Decision {
            allowed: j.allowed,
            remaining: u64::try_from(j.remaining).unwrap_or(0),
            retry_after_ms: j.retry_after_ms,
            reset_after_ms: j.reset_after_ms,
            delay_ms: j.delay_ms.unwrap_or(0),
            by,
            policy: None,
            lease: j.lease.map(Lease::from_id),
        };
        Decision::of_policy(
            head,
            PolicyVerdict {
                name: j.policy,
                shadow: j.shadow,
                would_deny: j.would_deny,
                binding: j.binding,
                tier: j.tier,
                limits: j.limits,
            },
        )
    }
}

/// A rule's decision writes [`DecisionJson`], a policy's [`PolicyDecisionJson`].
impl Serialize for Decision {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.verdict() {
            None => DecisionJson::from(self).serialize(serializer),
            Some(verdict) => PolicyDecisionView::of(self, verdict).serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Decision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// A policy's JSON names its policy; anything else is a rule's.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Policy(PolicyDecisionJson),
            Rule(DecisionJson),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Policy(json) => json.into(),
            Either::Rule(json) => json.into(),
        })
    }
}
