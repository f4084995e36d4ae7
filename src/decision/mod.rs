//! A decision is a value, not an error: denied requests and fail-open answers are both normal.
//! How it was made (Redis, the deny cache, or a fallback while Redis could not be asked) is one
//! enum, [`DecidedBy`]; the JSON keeps the contract's shape (`remaining: -1`, `fail_open`).
//!
//! One type for every decision: a rule is a policy of one limit, and a policy's decision is
//! the same [`Decision`] carrying what the policy adds ([`PolicyVerdict`]: its name, mode, the
//! binding limit, every limit's answer). Each writes its own contract's JSON.

use crate::lease::Lease;
use serde::{Deserialize, Serialize};

mod verdict;
pub use verdict::{LimitResult, PolicyDecisionJson, PolicyVerdict};

/// How a decision was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DecidedBy {
    /// The rule's script, on Redis.
    #[default]
    Redis,
    /// The local deny cache, repeating a denial Redis made moments ago, without a round trip
    /// ([`DenyCacheOptions`](crate::DenyCacheOptions)).
    Cache,
    /// Redis could not be asked and the request was let through ([`FailureMode::Open`]).
    ///
    /// [`FailureMode::Open`]: crate::FailureMode::Open
    FailOpen,
    /// Redis could not be asked and the request was refused ([`FailureMode::Closed`]).
    ///
    /// [`FailureMode::Closed`]: crate::FailureMode::Closed
    FailClosed,
    /// Redis could not be asked and this process's share of the rule decided
    /// ([`FailureMode::Degraded`]): an admission is a fail-open one, a denial carries the
    /// local wait.
    ///
    /// [`FailureMode::Degraded`]: crate::FailureMode::Degraded
    Degraded,
}

/// The answer to "may this request pass now?", of a rule or of a policy. A policy's combines
/// its limits (the least remaining, the longest wait) and carries each one's in
/// [`policy`](Self::policy).
///
/// Serialized as the contract writes it: a rule's as [`DecisionJson`], a policy's as
/// [`PolicyDecisionJson`] (`"policy"`, `"shadow"`, `"limits"`, ...). A field of the app's that
/// always holds a policy's decision says so to ts-rs with `#[ts(as = "PolicyDecisionJson")]`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(as = "DecisionJson"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Whole requests still admissible now. Known only when Redis (or the deny cache repeating
    /// it) decided: [`remaining_or_unknown`](Self::remaining_or_unknown) is what the JSON, the
    /// CSV and the scripts' contract write, `-1` when it is not known.
    pub remaining: u64,
    /// 0 when allowed; otherwise the wait after which a request of this cost could pass.
    pub retry_after_ms: u64,
    /// The wait until the limiter is back to its full allowance.
    pub reset_after_ms: u64,
    /// 0, or the wait before an admitted request may start (a policy's `max_delay_ms`: delay
    /// instead of deny): its allowance was taken as though it came this much later, so the
    /// caller waits this long, then serves.
    pub delay_ms: u64,
    /// How the decision was made.
    pub by: DecidedBy,
    /// A policy's decision: what the policy adds. `None` for a rule's.
    pub policy: Option<Box<PolicyVerdict>>,
    /// The slot this request holds in its concurrency limits until it ends: taken when Redis
    /// admitted it under a rule or policy with one (never by a denial, a peek or a fallback).
    /// Release it when the request ends ([`Lease::release`]); dropped, it is released in the
    /// background.
    pub lease: Option<Lease>,
}

impl Decision {
    /// The answer when Redis could not be asked and the limiter fails open.
    pub const FAIL_OPEN: Decision = Decision::without_redis(true, DecidedBy::FailOpen);

    /// The answer when Redis could not be asked and the limiter was told to fail closed.
    pub const FAIL_CLOSED: Decision = Decision::without_redis(false, DecidedBy::FailClosed);

    const fn without_redis(allowed: bool, by: DecidedBy) -> Decision {
        Decision {
            allowed,
            remaining: 0,
            retry_after_ms: 0,
            reset_after_ms: 0,
            delay_ms: 0,
            by,
            policy: None,
            lease: None,
        }
    }

    /// A decision a script made on Redis.
    pub const fn by_redis(
        allowed: bool,
        remaining: u64,
        retry_after_ms: u64,
        reset_after_ms: u64,
    ) -> Decision {
        Decision {
            allowed,
            remaining,
            retry_after_ms,
            reset_after_ms,
            delay_ms: 0,
            by: DecidedBy::Redis,
            policy: None,
            lease: None,
        }
    }

    /// Keeps this decision's lease, if it took one, past this value: the caller holds it by
    /// its id elsewhere (serve's reply, `ratelockr check`) and gives it back with that id
    /// ([`Lease::keep`]).
    pub fn keep_lease(&self) {
        if let Some(lease) = &self.lease {
            lease.keep();
        }
    }

    /// True when the request was let through because Redis could not be asked (fail-open, or
    /// a degraded-mode admission).
    pub fn fail_open(&self) -> bool {
        self.allowed && matches!(self.by, DecidedBy::FailOpen | DecidedBy::Degraded)
    }

    /// True when nothing Redis said stands behind this decision: fail-open, fail-closed, or
    /// the in-process limiter of degraded mode. (A deny-cache hit repeats Redis's own denial.)
    pub fn is_fallback(&self) -> bool {
        matches!(
            self.by,
            DecidedBy::FailOpen | DecidedBy::FailClosed | DecidedBy::Degraded
        )
    }

    /// `remaining` as the contract writes it: `-1` when it is not known (Redis was not asked,
    /// and no local limiter counted it).
    pub fn remaining_or_unknown(&self) -> i64 {
        let known = match self.by {
            DecidedBy::Redis | DecidedBy::Cache => true,
            DecidedBy::Degraded => !self.allowed,
            DecidedBy::FailOpen | DecidedBy::FailClosed => false,
        };
        if known {
            i64::try_from(self.remaining).unwrap_or(i64::MAX)
        } else {
            -1
        }
    }

    /// The outcome label used by metrics and telemetry.
    pub fn outcome(&self) -> Outcome {
        if self.fail_open() {
            Outcome::FailOpen
        } else if self.allowed {
            Outcome::Allowed
        } else if self.by == DecidedBy::Cache {
            Outcome::CacheDenied
        } else {
            Outcome::Denied
        }
    }
}

/// A decision as the contract writes it (design.md): `--json`, `/api/check`, the app's IPC.
/// `degraded` is left out when false, and `lease` when none was taken, so ordinary decisions
/// keep their shape.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionJson {
    pub allowed: bool,
    /// Whole requests still admissible now; `-1` means Redis could not be asked.
    pub remaining: i64,
    /// 0 when allowed; otherwise the wait after which a request of this cost could pass.
    pub retry_after_ms: u64,
    /// The wait until the limiter is back to its full allowance.
    pub reset_after_ms: u64,
    /// True when Redis failed and the request was let through anyway.
    pub fail_open: bool,
    /// True when Redis could not be asked and the in-process limiter of degraded mode decided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub degraded: bool,
    /// The lease this request holds in its concurrency limits: give it back when the request
    /// ends (`POST /api/release`, `ratelockr release`). Absent when none was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub lease: Option<String>,
    /// The wait before an admitted request may start (delay instead of deny): wait this long,
    /// then serve. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub delay_ms: Option<u64>,
}

/// For `skip_serializing_if`: a delay of 0 (or none) is left out of the JSON.
pub(crate) fn is_zero(delay_ms: &Option<u64>) -> bool {
    delay_ms.is_none_or(|ms| ms == 0)
}

impl From<&Decision> for DecisionJson {
    fn from(d: &Decision) -> Self {
        DecisionJson {
            allowed: d.allowed,
            remaining: d.remaining_or_unknown(),
            retry_after_ms: d.retry_after_ms,
            reset_after_ms: d.reset_after_ms,
            fail_open: d.fail_open(),
            degraded: d.by == DecidedBy::Degraded,
            lease: d.lease.as_ref().map(|l| l.id().to_string()),
            delay_ms: (d.delay_ms > 0).then_some(d.delay_ms),
        }
    }
}

impl From<DecisionJson> for Decision {
    /// The JSON does not say whether a denial came from the deny cache; it reads as Redis's.
    fn from(j: DecisionJson) -> Self {
        let by = if j.degraded {
            DecidedBy::Degraded
        } else if j.fail_open {
            DecidedBy::FailOpen
        } else if j.remaining < 0 {
            DecidedBy::FailClosed
        } else {
            DecidedBy::Redis
        };
        Decision {
            allowed: j.allowed,
            remaining: u64::try_from(j.remaining).unwrap_or(0),
            retry_after_ms: j.retry_after_ms,
            reset_after_ms: j.reset_after_ms,
            delay_ms: j.delay_ms.unwrap_or(0),
            by,
            policy: None,
            lease: j.lease.map(Lease::from_id),
        }
    }
}

/// How a decision is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Allowed,
    Denied,
    FailOpen,
    /// Denied in process by the local deny cache, without asking Redis.
    CacheDenied,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [
        Outcome::Allowed,
        Outcome::Denied,
        Outcome::FailOpen,
        Outcome::CacheDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::FailOpen => "fail_open",
            Outcome::CacheDenied => "cache_denied",
        }
    }
}

/// How a policy's decision is counted (telemetry and metrics). Unlike a rule's, a policy has
/// a third Redis-counted result: a shadow-mode request its limits would have denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyOutcome {
    Allowed,
    Denied,
    /// Admitted in shadow mode although a limit denied it.
    ShadowDenied,
    /// Admitted with a delay (`delay_ms` > 0) under a policy's `max_delay_ms`.
    Delayed,
    FailOpen,
    /// Denied in process by the local deny cache, without asking Redis.
    CacheDenied,
}

impl PolicyOutcome {
    pub const ALL: [PolicyOutcome; 6] = [
        PolicyOutcome::Allowed,
        PolicyOutcome::Denied,
        PolicyOutcome::ShadowDenied,
        PolicyOutcome::Delayed,
        PolicyOutcome::FailOpen,
        PolicyOutcome::CacheDenied,
    ];

    /// The results Redis counts per policy and second, in the order of the script's KEYS
    /// (the fourth, `delayed`, is sent only for a policy with a `max_delay_ms`).
    pub const COUNTED: [PolicyOutcome; 4] = [
        PolicyOutcome::Allowed,
        PolicyOutcome::Denied,
        PolicyOutcome::ShadowDenied,
        PolicyOutcome::Delayed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyOutcome::Allowed => "allowed",
            PolicyOutcome::Denied => "denied",
            PolicyOutcome::ShadowDenied => "shadow_denied",
            PolicyOutcome::Delayed => "delayed",
            PolicyOutcome::FailOpen => "fail_open",
            PolicyOutcome::CacheDenied => "cache_denied",
        }
    }
}

/// What a settlement did, as metrics count it (`ratelockr_settles_total{result}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The actual cost was smaller: the unused part went back.
    GaveBack,
    /// The actual cost was larger: the rest was charged.
    ChargedMore,
    /// No limit changed (the same cost, a charge of 0, only concurrency limits, or the state
    /// to settle was gone).
    Nothing,
}

impl Settled {
    pub const ALL: [Settled; 3] = [Settled::GaveBack, Settled::ChargedMore, Settled::Nothing];

    pub fn as_str(self) -> &'static str {
        match self {
            Settled::GaveBack => "gave_back",
            Settled::ChargedMore => "charged_more",
            Settled::Nothing => "nothing",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(d: &Decision) -> String {
        serde_json::to_string(d).expect("serializes")
    }

    #[test]
    fn the_json_keeps_the_contracts_shape_for_every_way_of_deciding() {
        let by_redis = Decision::by_redis(false, 0, 1200, 5000);
        assert_eq!(
            json(&by_redis),
            r#"{"allowed":false,"remaining":0,"retry_after_ms":1200,"reset_after_ms":5000,"fail_open":false}"#
        );
        assert_eq!(
            json(&Decision::FAIL_OPEN),
            r#"{"allowed":true,"remaining":-1,"retry_after_ms":0,"reset_after_ms":0,"fail_open":true}"#
        );
        assert_eq!(
            json(&Decision::FAIL_CLOSED),
            r#"{"allowed":false,"remaining":-1,"retry_after_ms":0,"reset_after_ms":0,"fail_open":false}"#
        );
        let degraded_admission = Decision {
            by: DecidedBy::Degraded,
            ..Decision::FAIL_OPEN
        };
        assert_eq!(
            json(&degraded_admission),
            r#"{"allowed":true,"remaining":-1,"retry_after_ms":0,"reset_after_ms":0,"fail_open":true,"degraded":true}"#
        );
        let degraded_denial = Decision {
            by: DecidedBy::Degraded,
            ..Decision::by_redis(false, 0, 400, 900)
        };
        assert_eq!(
            json(&degraded_denial),
            r#"{"allowed":false,"remaining":0,"retry_after_ms":400,"reset_after_ms":900,"fail_open":false,"degraded":true}"#
        );
        let cached = Decision {
            by: DecidedBy::Cache,
            ..by_redis.clone()
        };
        assert_eq!(
            json(&cached),
            json(&by_redis),
            "a cache hit is Redis's denial"
        );
        for d in [
            by_redis,
            Decision::FAIL_OPEN,
            Decision::FAIL_CLOSED,
            degraded_admission,
            degraded_denial,
        ] {
            let back: Decision = serde_json::from_str(&json(&d)).expect("parses");
            assert_eq!(back, d);
        }
    }

    #[test]
    fn one_enum_says_how_it_was_decided() {
        assert!(Decision::FAIL_OPEN.fail_open() && Decision::FAIL_OPEN.is_fallback());
        assert!(!Decision::FAIL_CLOSED.fail_open() && Decision::FAIL_CLOSED.is_fallback());
        let cached = Decision {
            by: DecidedBy::Cache,
            ..Decision::by_redis(false, 0, 10, 10)
        };
        assert!(!cached.is_fallback());
        assert_eq!(cached.outcome(), Outcome::CacheDenied);
        assert_eq!(Decision::FAIL_OPEN.outcome(), Outcome::FailOpen);
        assert_eq!(Decision::FAIL_CLOSED.outcome(), Outcome::Denied);
        assert_eq!(Decision::by_redis(true, 3, 0, 9).remaining_or_unknown(), 3);
    }
}
