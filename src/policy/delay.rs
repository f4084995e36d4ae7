//! Delay instead of deny (`max_delay_ms` on a policy): a request that every limit would admit
//! within `max_delay_ms` is admitted now with `delay_ms`, its allowance taken as though it came
//! that much later, and the caller waits before serving; one that would wait longer is denied.
//! The scripts decide it in the same call (lua/policy.lua's ARGV after the limits); only token
//! buckets and GCRA limits can take a request "as though later" (a window's count or a lease
//! has no such notion), so a policy with any other kind refuses it, naming the limit.

use super::{Policy, PolicyError};
use crate::rule::AlgorithmKind;

/// For `skip_serializing_if`: a policy without a delay writes no `max_delay_ms`.
pub(super) fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

impl Policy {
    /// The longest wait a request may be given instead of a denial; 0 (the default) denies at
    /// once.
    pub fn max_delay_ms(&self) -> u64 {
        self.max_delay_ms
    }

    /// Sets `max_delay_ms`. Refused (naming the field and the limit) when a limit of the policy
    /// or of a tier is not a token bucket or GCRA.
    pub fn with_max_delay_ms(mut self, max_delay_ms: u64) -> Result<Self, PolicyError> {
        // Integer >= 0 as the scripts take it: below 2^53, an exact Lua number.
        if max_delay_ms > 1_000_000_000_000_000 {
            return Err(PolicyError::at(
                "max_delay_ms",
                format!("invalid max_delay_ms {max_delay_ms}: at most 10^15 ms"),
            ));
        }
        self.max_delay_ms = max_delay_ms;
        self.check_delay()?;
        Ok(self)
    }

    /// Only token buckets and GCRA limits delay: any other kind with a `max_delay_ms` is named.
    pub(super) fn check_delay(&self) -> Result<(), PolicyError> {
        if self.max_delay_ms == 0 {
            return Ok(());
        }
        let own = self
            .limits
            .iter()
            .enumerate()
            .map(|(i, l)| (format!("limits[{i}]"), l));
        let tiers = self.overrides.iter().enumerate().flat_map(|(t, o)| {
            (o.limits.iter().enumerate())
                .map(move |(i, l)| (format!("overrides[{t}].limits[{i}]"), l))
        });
        for (at, limit) in own.chain(tiers) {
            if !matches!(
                limit.kind(),
                AlgorithmKind::TokenBucket | AlgorithmKind::Gcra
            ) {
                return Err(PolicyError::at(
                    "max_delay_ms",
                    format!(
                        "max_delay_ms works with token-bucket and gcra limits only; limit {:?} ({at}) is {}",
                        limit.name(),
                        limit.kind().cli_name()
                    ),
                ));
            }
        }
        Ok(())
    }
}
