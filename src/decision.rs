//! A decision is a value, not an error: denied requests and fail-open answers are both normal.

use serde::{Deserialize, Serialize};

/// The answer to "may this request pass now?".
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub allowed: bool,
    /// Whole requests still admissible now; `-1` means Redis could not be asked.
    pub remaining: i64,
    /// 0 when allowed; otherwise the wait after which a request of this cost could pass.
    pub retry_after_ms: u64,
    /// The wait until the limiter is back to its full allowance.
    pub reset_after_ms: u64,
    /// True when Redis failed and the request was let through anyway.
    pub fail_open: bool,
    /// True when Redis could not be asked and the in-process limiter of
    /// [`FailureMode::Degraded`](crate::FailureMode::Degraded) decided instead. Left out of
    /// JSON when false, so ordinary decisions keep their shape.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub degraded: bool,
}

impl Decision {
    /// The answer when Redis could not be asked and the limiter fails open.
    pub const FAIL_OPEN: Decision = Decision {
        allowed: true,
        remaining: -1,
        retry_after_ms: 0,
        reset_after_ms: 0,
        fail_open: true,
        degraded: false,
    };

    /// The answer when Redis could not be asked and the limiter was told to fail closed.
    pub const FAIL_CLOSED: Decision = Decision {
        allowed: false,
        remaining: -1,
        retry_after_ms: 0,
        reset_after_ms: 0,
        fail_open: false,
        degraded: false,
    };

    /// True when this decision was made without Redis (fail-open, fail-closed or by the
    /// in-process limiter of degraded mode).
    pub fn is_degraded(&self) -> bool {
        self.remaining < 0 || self.degraded
    }

    /// The outcome label used by metrics and telemetry.
    pub fn outcome(&self) -> Outcome {
        if self.fail_open {
            Outcome::FailOpen
        } else if self.allowed {
            Outcome::Allowed
        } else {
            Outcome::Denied
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
    /// Denied in process by the local deny cache, without asking Redis (metrics only: the
    /// decision itself is an ordinary denial).
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
    FailOpen,
    /// Denied in process by the local deny cache, without asking Redis.
    CacheDenied,
}

impl PolicyOutcome {
    pub const ALL: [PolicyOutcome; 5] = [
        PolicyOutcome::Allowed,
        PolicyOutcome::Denied,
        PolicyOutcome::ShadowDenied,
        PolicyOutcome::FailOpen,
        PolicyOutcome::CacheDenied,
    ];

    /// The results Redis counts per policy and second, in the order of the script's KEYS.
    pub const COUNTED: [PolicyOutcome; 3] = [
        PolicyOutcome::Allowed,
        PolicyOutcome::Denied,
        PolicyOutcome::ShadowDenied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyOutcome::Allowed => "allowed",
            PolicyOutcome::Denied => "denied",
            PolicyOutcome::ShadowDenied => "shadow_denied",
            PolicyOutcome::FailOpen => "fail_open",
            PolicyOutcome::CacheDenied => "cache_denied",
        }
    }
}
