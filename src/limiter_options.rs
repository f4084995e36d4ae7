//! [`LimiterOptions`] checked: a deadline of zero, or a degraded mode shared by no instance,
//! would turn every decision into a fail-open one without a word. The fronts (CLI, `serve`,
//! the tower layer, the app) refuse such options at start, naming the option.

use crate::deny_cache::DenyCacheOptions;
use crate::limiter::{FailureMode, Limiter, LimiterOptions};
use crate::target::RedisTarget;
use std::time::Duration;

/// The longest deadline: a decision held longer than a minute is an outage of its own.
pub const MAX_DEADLINE: Duration = Duration::from_secs(60);
/// The most instances a degraded mode divides a rule among.
pub const MAX_INSTANCES: u32 = 100_000;

/// Why [`LimiterOptions`] cannot be used, naming the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {option}: {reason}")]
pub struct OptionsError {
    /// The option, as the library names it (`deadline`, `failure_mode.instances`,
    /// `deny_cache.max_entries`, `deny_cache.max_bytes`).
    pub option: &'static str,
    pub reason: String,
}

impl LimiterOptions {
    /// Every option in range, or the first that is not, named.
    pub fn check(&self) -> Result<(), OptionsError> {
        let fail = |option, reason: String| Err(OptionsError { option, reason });
        if self.deadline.is_zero() || self.deadline > MAX_DEADLINE {
            return fail(
                "deadline",
                format!(
                    "must be from 1 ms to {} s, got {} ms",
                    MAX_DEADLINE.as_secs(),
                    self.deadline.as_millis()
                ),
            );
        }
        if let FailureMode::Degraded { instances } = self.failure_mode {
            if !(1..=MAX_INSTANCES).contains(&instances) {
                return fail(
                    "failure_mode.instances",
                    format!("must be from 1 to {MAX_INSTANCES}, got {instances}"),
                );
            }
        }
        if let Some(DenyCacheOptions {
            max_entries,
            max_bytes,
        }) = self.deny_cache
        {
            if max_entries == 0 {
                return fail(
                    "deny_cache.max_entries",
                    "must be at least 1 (or no deny cache)".into(),
                );
            }
            if max_bytes == 0 {
                return fail(
                    "deny_cache.max_bytes",
                    "must be at least 1 (or no deny cache)".into(),
                );
            }
        }
        Ok(())
    }
}

impl Limiter {
    /// [`Limiter::new`] with its options checked first ([`LimiterOptions::check`]).
    pub fn try_new(target: &RedisTarget, options: LimiterOptions) -> Result<Self, OptionsError> {
        options.check()?;
        Ok(Limiter::new(target, options))
    }
}
