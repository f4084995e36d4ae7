//! Deciding a policy for a client key: the tier's limits, one script call under the limiter's
//! deadline, fail-open (or closed) on any Redis failure, telemetry counted in the same call,
//! metrics through the limiter's observer.

use super::decision::NoAnswer;
use super::script::{parse_reply, PolicyCall};
use super::{Limit, Mode, Policy};
use crate::decide::{Decided, Subject};
use crate::decision::PolicyOutcome;
use crate::decision::{DecidedBy, Decision};
use crate::decision::{LimitResult, PolicyVerdict};
use crate::deny_cache::DenyCache;
use crate::error::RedisFailure;
use crate::lease::Lease;
use crate::limiter::{DecisionObserver, FailureMode, Limiter};
use crate::rule::{validate_client_key, Algorithm, RuleError};
use crate::scripts::At;
use crate::telemetry::COUNTER_TTL_SECS;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a policy check gave no decision.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyCheckError {
    /// A cost some limit of the key's tier can never admit.
    #[error("invalid cost {cost}: must be from 1 to {max} (limit {limit:?}'s {what}); a larger request could never pass")]
    InvalidCost {
        cost: u64,
        max: u64,
        limit: String,
        what: &'static str,
    },
    /// An unusable client key.
    #[error(transparent)]
    Key(#[from] RuleError),
    /// Redis failed (only from the `try_` methods; the others decide by the failure mode).
    #[error("Redis failed: {0}")]
    Redis(#[from] RedisFailure),
}

impl Limiter {
    /// One request (a cost of 1) for `client_key` under `policy`, on the Redis clock: every
    /// limit of the key's tier decided at once, all or nothing. As [`Limiter::check`] is to
    /// [`Limiter::check_cost`].
    pub async fn check_policy(
        &self,
        policy: &Policy,
        client_key: &str,
    ) -> Result<Decision, PolicyCheckError> {
        self.check_policy_cost(policy, client_key, 1).await
    }

    /// One request of `cost` for `client_key` under `policy`, on the Redis clock.
    pub async fn check_policy_cost(
        &self,
        policy: &Policy,
        client_key: &str,
        cost: u64,
    ) -> Result<Decision, PolicyCheckError> {
        self.check_policy_at(policy, client_key, cost, At::ServerClock)
            .await
    }

    /// [`Limiter::check_policy_cost`] at an explicit time ([`At::Millis`]: every limit, the fixed
    /// windows included, decides on that clock). Errors only for a cost some limit can never admit or an
    /// unusable client key; a Redis failure becomes the failure mode's decision (fail-open:
    /// `allowed`, `remaining: -1`, no limits' results; degraded mode fails open for policies).
    pub async fn check_policy_at(
        &self,
        policy: &Policy,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decision, PolicyCheckError> {
        refuse_peek(policy, client_key, cost)?;
        Ok(self
            .decide_policy(policy, client_key, cost, at)
            .await?
            .answer())
    }

    /// One decision, or the Redis failure that prevented it (already counted and logged, and
    /// the failure mode's decision already counted as made).
    pub async fn try_check_policy_at(
        &self,
        policy: &Policy,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decision, PolicyCheckError> {
        refuse_peek(policy, client_key, cost)?;
        Ok(self
            .decide_policy(policy, client_key, cost, at)
            .await?
            .made()?)
    }

    /// What is left for `client_key` under `policy` without consuming anything (a cost of 0,
    /// which writes nothing): each limit's remaining and reset, combined. Not a decision:
    /// telemetry and metrics do not see it.
    pub async fn peek_policy_at(
        &self,
        policy: &Policy,
        client_key: &str,
        at: At,
    ) -> Result<Decision, PolicyCheckError> {
        Ok(self
            .decide_policy(policy, client_key, 0, at)
            .await?
            .answer())
    }

    /// A policy's decision (cost >= 1) or peek (cost 0) on the one decision path.
    async fn decide_policy(
        &self,
        policy: &Policy,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decided, PolicyCheckError> {
        validate_client_key(client_key)?;
        let at = at.check()?;
        let (tier, limits) = policy.limits_for(client_key);
        if let Some(ms) = at.millis() {
            if limits.iter().any(|l| l.algorithm().calendar().is_some()) {
                crate::calendar::check_time(ms).map_err(RuleError::from)?;
            }
        }
        if cost > 0 {
            check_cost(limits, cost)?;
        }
        let keys = self.keys();
        let in_flight = limits.iter().any(|l| l.kind().is_concurrency());
        let subject = PolicySubject {
            policy,
            client_key,
            tier,
            limits,
            state_keys: limits
                .iter()
                .map(|l| keys.policy_limit(l.kind(), policy.name(), l.name(), client_key))
                .collect(),
            lease_id: in_flight.then(crate::rule_check::new_lease_id),
        };
        Ok(self.decide(&subject, cost, at).await)
    }
}

/// A policy, the client key, its tier's limits and their state keys.
struct PolicySubject<'a> {
    policy: &'a Policy,
    client_key: &'a str,
    tier: Option<&'a str>,
    limits: &'a [Limit],
    state_keys: Vec<String>,
    /// The request's member when a limit is in flight: its lease id in every such limit.
    lease_id: Option<String>,
}

impl Subject for PolicySubject<'_> {
    fn name(&self) -> &str {
        self.policy.name()
    }

    /// Only an enforced policy: a limit Redis has just denied denies the stack until its wait
    /// is over. A shadow policy always asks Redis, which counts its would-be denials.
    fn cacheable(&self) -> bool {
        self.policy.mode() == Mode::Enforce
    }

    fn cached(&self, cache: &DenyCache, cost: u64, now: Instant) -> Option<Decision> {
        cached_denial(
            cache,
            self.policy,
            self.tier,
            self.limits,
            &self.state_keys,
            cost,
            now,
        )
    }

    fn remember(&self, cache: &DenyCache, decision: &Decision, cost: u64, sent: Instant) {
        remember(cache, decision, self.limits, &self.state_keys, cost, sent);
    }

    fn evalsha(&self, limiter: &Limiter, cost: u64, at: At, second: Option<u64>) -> redis::Cmd {
        let keys = limiter.keys();
        let stats = second.map(|second| {
            PolicyOutcome::COUNTED
                .map(|outcome| keys.policy_stats(self.policy.name(), second, outcome))
        });
        // A policy that delays also counts its delayed admissions (the fourth counter).
        let max_delay_ms = self.policy.max_delay_ms();
        PolicyCall {
            limits: self.limits,
            keys: &self.state_keys,
            stats_keys: stats
                .as_ref()
                .map(|[a, d, s, _]| [a.as_str(), d.as_str(), s.as_str()]),
            stats_ttl_secs: COUNTER_TTL_SECS,
            cost,
            mode: self.policy.mode(),
            at,
            member: self.lease_id.as_deref(),
        }
        .evalsha_delaying(
            max_delay_ms,
            stats
                .as_ref()
                .filter(|_| max_delay_ms > 0)
                .map(|[_, _, _, delayed]| delayed.as_str()),
        )
    }

    fn lease(&self, limiter: &Limiter) -> Option<Lease> {
        let id = self.lease_id.clone()?;
        let sets = self
            .limits
            .iter()
            .zip(&self.state_keys)
            .filter_map(|(limit, key)| match *limit.algorithm() {
                Algorithm::Concurrency { lease_ms, .. } => Some((key.clone(), lease_ms)),
                _ => None,
            })
            .collect();
        Some(Lease::held(Arc::new(limiter.clone()), id, sets, true))
    }

    fn parse(&self, reply: &redis::Value) -> Result<Decision, RedisFailure> {
        parse_reply(
            reply,
            self.policy.name(),
            self.policy.mode(),
            self.tier,
            self.limits,
        )
    }

    fn fallback(&self, limiter: &Limiter, _cost: u64, _peek: bool) -> Decision {
        let answer = match limiter.options().failure_mode {
            FailureMode::Closed => NoAnswer::FailClosed,
            // Degraded mode fails open for policies.
            FailureMode::Open | FailureMode::Degraded { .. } => NoAnswer::FailOpen,
        };
        Decision::unanswered(self.policy, self.client_key, answer)
    }

    fn observe(
        &self,
        observer: &dyn DecisionObserver,
        decision: &Decision,
        _cached: bool,
        elapsed: Duration,
    ) {
        observer.policy_decided(self.policy.name(), decision.policy_outcome(), elapsed);
    }
}

/// The denial the deny cache still holds for one of the stack's limits, as the policy's.
fn cached_denial(
    cache: &DenyCache,
    policy: &Policy,
    tier: Option<&str>,
    limits: &[Limit],
    state_keys: &[String],
    cost: u64,
    now: Instant,
) -> Option<Decision> {
    let (limit, hit) = limits
        .iter()
        .zip(state_keys)
        .find_map(|(limit, key)| Some((limit, cache.lookup(key, limit.algorithm(), cost, now)?)))?;
    let head = Decision {
        by: DecidedBy::Cache,
        ..Decision::by_redis(false, hit.remaining, hit.retry_after_ms, hit.reset_after_ms)
    };
    Some(Decision::of_policy(
        head,
        PolicyVerdict {
            name: policy.name().to_string(),
            shadow: false,
            would_deny: true,
            binding: Some(limit.name().to_string()),
            tier: tier.map(str::to_string),
            limits: vec![LimitResult {
                name: limit.name().to_string(),
                algorithm: limit.kind(),
                allowed: false,
                remaining: i64::try_from(hit.remaining).unwrap_or(i64::MAX),
                retry_after_ms: hit.retry_after_ms,
                reset_after_ms: hit.reset_after_ms,
            }],
        },
    ))
}

/// Keeps Redis's denial by the binding limit (the longest wait) while it holds; an admission
/// ends every limit's cached denial.
fn remember(
    cache: &DenyCache,
    decision: &Decision,
    limits: &[Limit],
    state_keys: &[String],
    cost: u64,
    sent: Instant,
) {
    if decision.allowed {
        for key in state_keys {
            cache.forget(key);
        }
        return;
    }
    let Some(binding) = decision.binding_limit() else {
        return;
    };
    let Some((limit, key)) = limits
        .iter()
        .zip(state_keys)
        .find(|(l, _)| l.name() == binding.name)
    else {
        return;
    };
    let denial = crate::Decision::by_redis(
        false,
        u64::try_from(binding.remaining).unwrap_or(0),
        binding.retry_after_ms,
        binding.reset_after_ms,
    );
    cache.insert(key, limit.algorithm(), cost, sent, &denial);
}

/// A check takes something: a cost of 0 is a peek ([`Limiter::peek_policy_at`]), as a rule's
/// check refuses it.
fn refuse_peek(policy: &Policy, client_key: &str, cost: u64) -> Result<(), PolicyCheckError> {
    if cost > 0 {
        return Ok(());
    }
    let (_, limits) = policy.limits_for(client_key);
    let tightest = limits
        .iter()
        .min_by_key(|l| l.algorithm().max_cost())
        .ok_or(PolicyCheckError::Key(RuleError::InvalidKey(
            "no limit applies",
        )))?;
    Err(PolicyCheckError::InvalidCost {
        cost,
        max: tightest.algorithm().max_cost(),
        limit: tightest.name().to_string(),
        what: tightest.algorithm().max_cost_name(),
    })
}

/// A cost every limit of the stack could admit some day.
fn check_cost(limits: &[Limit], cost: u64) -> Result<(), PolicyCheckError> {
    for limit in limits {
        let max = limit.algorithm().max_cost();
        if cost > max {
            return Err(PolicyCheckError::InvalidCost {
                cost,
                max,
                limit: limit.name().to_string(),
                what: limit.algorithm().max_cost_name(),
            });
        }
    }
    Ok(())
}
