//! Giving back what an admitted request took (`lua/refund.lua`), for requests checked against
//! several rules one by one: when a later rule denies, the earlier admissions are refunded, so a
//! request that did not pass costs no rule anything.
//!
//! Rules never share a hash tag under today's key layout ([`crate::keys`]: each rule's name is
//! its own tag), so in a Redis Cluster two rules cannot be decided by one script. A refund is its
//! own script rather than a negative cost: the five decision scripts keep their contract (cost
//! >= 0), and a refund can never mint more than a full allowance nor touch a key that is gone.

use crate::error::RedisFailure;
use crate::limiter::Limiter;
use crate::rule::{Algorithm, Rule, RuleError};
use redis::Script;
use std::sync::LazyLock;

/// The refund script's source.
pub(crate) const REFUND_LUA: &str = include_str!("../lua/refund.lua");

static REFUND: LazyLock<Script> = LazyLock::new(|| Script::new(REFUND_LUA));

impl Limiter {
    /// Gives back `cost` to `client_key`'s limiter of `rule`, on behalf of a request that
    /// `rule` admitted but that did not pass in the end (a later rule denied it). Returns
    /// whether there was state to give back to (false: the key expired or was reset).
    ///
    /// Refund only what Redis admitted: a fail-open or degraded admission took nothing from
    /// Redis. Telemetry keeps counting the admission (it was one); the deny cache forgets the
    /// client's denials, which the refund may have made stale. Runs under the decision
    /// deadline; a Redis failure is returned (and counted, logged at most once a second, like
    /// a decision's) and the allowance stays spent: the safe side.
    pub async fn refund(
        &self,
        rule: &Rule,
        client_key: &str,
        cost: u64,
    ) -> Result<bool, RefundError> {
        rule.check_cost(cost)?;
        crate::rule::validate_client_key(client_key)?;
        let key = self.keys().limiter(rule, client_key);
        let mut invocation = REFUND.key(&key);
        invocation.arg(rule.kind().key_tag()).arg(cost);
        match *rule.algorithm() {
            Algorithm::TokenBucket { capacity, .. } => {
                invocation.arg(capacity);
            }
            Algorithm::Gcra {
                limit, window_ms, ..
            } => {
                invocation.arg(limit).arg(window_ms);
            }
            Algorithm::SlidingWindowLog { .. }
            | Algorithm::SlidingWindowCounter { .. }
            | Algorithm::FixedWindow { .. }
            | Algorithm::Calendar { .. } => {}
            // What a request in flight took is its lease: released, not refunded.
            Algorithm::Concurrency { .. } => {
                return Err(RuleError::InvalidParameter {
                    parameter: "algorithm",
                    reason: "a concurrency rule's admission is given back by releasing its lease (Lease::release), not refunded".into(),
                }
                .into())
            }
        }
        let mut conn = self.connection();
        let deadline = self.options().deadline;
        let refunded =
            match tokio::time::timeout(deadline, invocation.invoke_async::<i64>(&mut conn)).await {
                Ok(Ok(n)) => n == 1,
                Ok(Err(err)) => return Err(self.failed(err.into()).into()),
                Err(_) => return Err(self.failed(RedisFailure::timeout(deadline)).into()),
            };
        self.forget_denials(rule.name(), Some(client_key));
        Ok(refunded)
    }
}

/// Why a refund did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RefundError {
    /// A cost or client key the rule could never have admitted.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// Redis failed; nothing was given back.
    #[error("Redis failed a refund: {0}")]
    Redis(#[from] RedisFailure),
}
