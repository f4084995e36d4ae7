//! Settling a request's actual cost (`lua/settle.lua`): a request decided with an estimate
//! (its cost) is charged what it really took once that is known, the way LLM APIs meter
//! tokens. The difference goes to every limit of its policy in one script call: a smaller
//! actual cost gives back the unused part (as a refund does), a larger one charges the rest
//! even past the limit (the key then waits longer; nothing is lost). Concurrency limits are
//! not charged by cost (a lease is one slot whatever the cost): settling leaves them alone.
//!
//! Only an admission Redis charged can be settled: a denial, a peek (cost 0) or a fail-open
//! answer charged nothing, and settling one does nothing (`Ok(false)`, no call).
//! [`Limiter::settle_decision`] checks that from the decision itself; [`Limiter::settle`] is
//! for a caller that kept only the numbers (serve's `POST /api/settle`).

use crate::decision::{DecidedBy, Decision};
use crate::error::RedisFailure;
use crate::limiter::Limiter;
use crate::policy::{Limit, Policy};
use crate::rule::{validate_client_key, Algorithm, RuleError};
use crate::scripts::{self, At};

pub use crate::decision::Settled;

/// The most an actual cost may be (the scripts' bound on integers they count exactly).
pub const MAX_ACTUAL: u64 = 1_000_000_000_000_000;

/// Why a settlement did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettleError {
    /// An unusable client key.
    #[error(transparent)]
    Key(#[from] RuleError),
    /// A `charged` or `actual` no decision of the policy could have had; `field` names it.
    #[error("invalid {field} {value}: {reason}")]
    Cost {
        field: &'static str,
        value: u64,
        reason: String,
    },
    /// Redis failed; nothing was settled.
    #[error("Redis failed a settlement: {0}")]
    Redis(#[from] RedisFailure),
}

/// The EVALSHA of `lua/settle.lua` for `limits` at `keys`, as its header documents;
/// `counter`: this second's `settled` telemetry counter (KEYS[n+1], with its TTL last).
pub(crate) fn settle_evalsha(
    limits: &[Limit],
    keys: &[String],
    counter: Option<&str>,
    charged: u64,
    actual: u64,
    at: At,
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(scripts::SETTLE.get_hash())
        .arg(keys.len() + usize::from(counter.is_some()));
    for key in keys {
        cmd.arg(key.as_str());
    }
    if let Some(counter) = counter {
        cmd.arg(counter);
    }
    cmd.arg(limits.len());
    match at.millis() {
        None => cmd.arg(""),
        Some(ms) => cmd.arg(ms),
    };
    cmd.arg(charged).arg(actual);
    let has_log = limits
        .iter()
        .any(|l| matches!(l.algorithm(), Algorithm::SlidingWindowLog { .. }));
    // A fresh member: the decision's own (member, member#2, ...) are in the log already.
    if has_log && actual > charged {
        cmd.arg(&scripts::log_member()[..]);
    } else {
        cmd.arg("");
    }
    cmd.arg(if matches!(at, At::Millis(_)) { "1" } else { "" });
    for limit in limits {
        crate::policy::script::limit_argv(&mut cmd, limit, at);
    }
    if counter.is_some() {
        cmd.arg(crate::telemetry::COUNTER_TTL_SECS);
    }
    cmd
}

impl Limiter {
    /// Settles a request that `policy` admitted for `client_key` with cost `charged`, on the
    /// Redis clock: its limits are charged `actual` in its place (see the module's note).
    /// Returns whether some limit changed (false: `actual == charged`, `charged == 0` (a peek
    /// or a denial charged nothing), the policy's limits are all concurrency limits, or the
    /// state to give back to is gone).
    pub async fn settle(
        &self,
        policy: &Policy,
        client_key: &str,
        charged: u64,
        actual: u64,
    ) -> Result<bool, SettleError> {
        self.settle_at(policy, client_key, charged, actual, At::ServerClock)
            .await
    }

    /// Settles `decision`, which `policy` made for `client_key` with cost `charged`, with its
    /// `actual` cost ([`Limiter::settle`]) on the Redis clock. A decision that charged nothing
    /// settles nothing and asks Redis nothing (`Ok(false)`): a denial, a shadow policy's
    /// would-be denial, a deny-cache hit, a fail-open or degraded answer, a peek (`charged` 0).
    pub async fn settle_decision(
        &self,
        decision: &Decision,
        policy: &Policy,
        client_key: &str,
        charged: u64,
        actual: u64,
    ) -> Result<bool, SettleError> {
        self.settle_decision_at(
            decision,
            policy,
            client_key,
            charged,
            actual,
            At::ServerClock,
        )
        .await
    }

    /// [`Limiter::settle_decision`] at an explicit time: the clock the decision was made on.
    pub async fn settle_decision_at(
        &self,
        decision: &Decision,
        policy: &Policy,
        client_key: &str,
        charged: u64,
        actual: u64,
        at: At,
    ) -> Result<bool, SettleError> {
        let charged_by_redis =
            decision.allowed && decision.by == DecidedBy::Redis && !decision.would_deny();
        if !charged_by_redis {
            validate_client_key(client_key)?;
            return Ok(false);
        }
        self.settle_at(policy, client_key, charged, actual, at)
            .await
    }

    /// [`Limiter::settle`] at an explicit time (tests, replays): the clock the decision was
    /// made on. Runs under the decision deadline; a Redis failure is counted and logged like a
    /// decision's and nothing is settled.
    pub async fn settle_at(
        &self,
        policy: &Policy,
        client_key: &str,
        charged: u64,
        actual: u64,
        at: At,
    ) -> Result<bool, SettleError> {
        validate_client_key(client_key)?;
        let (_, limits) = policy.limits_for(client_key);
        let charged_limits = || {
            limits
                .iter()
                .filter(|l| !matches!(l.algorithm(), Algorithm::Concurrency { .. }))
        };
        if let Some(most) = charged_limits().map(|l| l.algorithm().max_cost()).min() {
            if charged > most {
                return Err(SettleError::Cost {
                    field: "charged",
                    value: charged,
                    reason: format!(
                        "no decision of policy {:?} charges more than {most} (its smallest capacity, burst or limit)",
                        policy.name()
                    ),
                });
            }
        }
        if actual > MAX_ACTUAL {
            return Err(SettleError::Cost {
                field: "actual",
                value: actual,
                reason: format!("an actual cost is at most {MAX_ACTUAL}"),
            });
        }
        let counted = |settled: bool| {
            if let Some(observer) = self.observer() {
                observer.settled(match (settled, actual < charged) {
                    (false, _) => Settled::Nothing,
                    (true, true) => Settled::GaveBack,
                    (true, false) => Settled::ChargedMore,
                });
            }
            settled
        };
        if charged == 0 || actual == charged || charged_limits().next().is_none() {
            return Ok(counted(false));
        }
        let keyspace = self.keys();
        let keys: Vec<String> = limits
            .iter()
            .map(|l| keyspace.policy_limit(l.kind(), policy.name(), l.name(), client_key))
            .collect();
        // Counted in the policy's telemetry (the Watch view's series), in the same call.
        let counter = self.options().telemetry.then(|| {
            let second = at.millis().unwrap_or_else(crate::telemetry::now_ms) / 1000;
            keyspace.after_stats(policy.name(), second, crate::telemetry::SETTLED)
        });
        let evalsha = settle_evalsha(limits, &keys, counter.as_deref(), charged, actual, at);
        let settled = self
            .invoke_script(&evalsha)
            .await
            .and_then(|reply| crate::error::count_reply(&reply, "settle"))
            .map_err(|failure| self.failed(failure))?
            > 0;
        let settled = counted(settled);
        // What was given back makes a cached denial stale; a larger charge only confirms it.
        if actual < charged {
            if let Some(cache) = self.deny_cache() {
                for key in &keys {
                    cache.forget(key);
                }
            }
        }
        Ok(settled)
    }
}
