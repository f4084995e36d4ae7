//! A kept run's client key, read live: the engine's [`Limiter::peek`](ratelockr::Limiter::peek)
//! (cost 0, design.md: a peek consumes and writes nothing) on the key as that run decided it,
//! under the rule as that run ran it, with the HTTP answer a client would see from the engine's
//! one header mapping.

use super::{lock, AppCore};
use crate::error::{AppError, ErrorCode};
use ratelockr::headers::{http_answer, HttpAnswer};
use ratelockr::{Decision, Rule};
use serde::Serialize;
use ts_rs::TS;

/// What a peek saw.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct KeyPeek {
    /// The rule as the run ran it (it may have been edited since).
    pub rule: Rule,
    /// The client key, as the run's records name it.
    pub key: String,
    /// The name the limiter was asked about: `run-<id>:<key>` in a run's own namespace, the key
    /// itself for a run that continued the shared state.
    pub decided_as: String,
    /// The state now: `remaining` (whole tokens for the bucket), `reset_after_ms`; fail-open
    /// (`remaining: -1`) when Redis did not answer.
    pub decision: Decision,
    /// What an HTTP client asking now would receive (a peek passes: never a 429).
    pub answer: HttpAnswer,
    /// When it was read, ms since the epoch (this machine's clock).
    #[ts(type = "number")]
    pub at_ms: u64,
}

impl AppCore {
    /// Reads `key`'s live state for target `target` of kept run `run`, without spending.
    pub async fn limiter_peek(
        &self,
        run: &str,
        target: usize,
        key: &str,
    ) -> Result<KeyPeek, AppError> {
        let (rule, decided_as) = {
            let history = lock(&self.history);
            let stored = history.get(run)?;
            let t = stored.spec.targets.get(target).ok_or_else(|| {
                AppError::new(
                    ErrorCode::InvalidRule,
                    format!(
                        "run {run} has {} rule(s); target {target} is not one of them",
                        stored.spec.targets.len()
                    ),
                )
                .with_field("target")
            })?;
            if t.naive {
                return Err(AppError::new(
                    ErrorCode::InvalidRule,
                    "the naive GET/SET limiter keeps no script state to peek; pick one of the run's real rules",
                )
                .with_field("target"));
            }
            if key.is_empty() {
                return Err(
                    AppError::new(ErrorCode::InvalidRule, "pick a client key to peek")
                        .with_field("key"),
                );
            }
            let decided_as =
                ratelockr_lab::sim::SimSpec::decided_as(stored.spec.scope.as_deref(), key);
            (t.rule.clone(), decided_as)
        };
        let limiter = self.connection().limiter;
        let decision = limiter.peek(&rule, &decided_as).await?;
        Ok(KeyPeek {
            answer: http_answer(&rule, &decision),
            rule,
            key: key.to_string(),
            decided_as,
            decision,
            at_ms: ratelockr::telemetry::now_ms(),
        })
    }
}
