//! Deciding a rule for a client key: its standalone script on the one decision path
//! (`crate::decide`), a peek (cost 0) that writes nothing, and the `try_` forms that hand back
//! a Redis failure instead of the failure mode's decision.

use crate::decide::{Decided, Subject};
use crate::decision::{DecidedBy, Decision};
use crate::deny_cache::DenyCache;
use crate::error::RedisFailure;
use crate::lease::Lease;
use crate::limiter::{CheckError, DecisionObserver, Limiter};
use crate::rule::{validate_client_key, Algorithm, Rule, RuleError};
use crate::scripts::{self, At, Call};
use crate::telemetry::COUNTER_TTL_SECS;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Limiter {
    /// One request of cost 1 for `client_key`, on the Redis clock.
    pub async fn check(&self, rule: &Rule, client_key: &str) -> Result<Decision, RuleError> {
        self.check_at(rule, client_key, 1, At::ServerClock).await
    }

    /// One request of `cost` on the Redis clock.
    pub async fn check_cost(
        &self,
        rule: &Rule,
        client_key: &str,
        cost: u64,
    ) -> Result<Decision, RuleError> {
        self.check_at(rule, client_key, cost, At::ServerClock).await
    }

    /// One request at an explicit time. Errors only for a cost the rule can never admit or an
    /// unusable client key; every Redis failure becomes a decision of the failure mode.
    pub async fn check_at(
        &self,
        rule: &Rule,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decision, RuleError> {
        rule.check_cost(cost)?;
        Ok(self.decide_rule(rule, client_key, cost, at).await?.answer())
    }

    /// One decision, or the Redis failure that prevented it (already counted and logged, and
    /// the failure mode's decision already counted as made: in degraded mode the local share
    /// is spent).
    pub async fn try_check_at(
        &self,
        rule: &Rule,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decision, CheckError> {
        rule.check_cost(cost)?;
        Ok(self.decide_rule(rule, client_key, cost, at).await?.made()?)
    }

    /// What is left for `client_key` now, on the Redis clock, without consuming anything: the
    /// script is asked with a cost of 0, which writes nothing. `remaining` is what a request
    /// could take now, `reset_after_ms` when the allowance is full. A peek is not a decision:
    /// telemetry, metrics and the deny cache do not see it. Redis failures give the failure
    /// mode's plain decision (fail-open or fail-closed; degraded mode spends nothing on a peek).
    pub async fn peek(&self, rule: &Rule, client_key: &str) -> Result<Decision, RuleError> {
        self.peek_at(rule, client_key, At::ServerClock).await
    }

    /// [`Limiter::peek`] at an explicit time.
    pub async fn peek_at(
        &self,
        rule: &Rule,
        client_key: &str,
        at: At,
    ) -> Result<Decision, RuleError> {
        Ok(self.decide_rule(rule, client_key, 0, at).await?.answer())
    }

    /// A peek, or the Redis failure that prevented it (counted and logged as a failure).
    pub async fn try_peek_at(
        &self,
        rule: &Rule,
        client_key: &str,
        at: At,
    ) -> Result<Decision, CheckError> {
        Ok(self.decide_rule(rule, client_key, 0, at).await?.made()?)
    }

    /// A rule's decision (cost >= 1, checked by the caller) or peek (cost 0).
    async fn decide_rule(
        &self,
        rule: &Rule,
        client_key: &str,
        cost: u64,
        at: At,
    ) -> Result<Decided, RuleError> {
        validate_client_key(client_key)?;
        let at = at.check()?;
        if let (Some(_), Some(ms)) = (rule.algorithm().calendar(), at.millis()) {
            crate::calendar::check_time(ms)?;
        }
        let subject = RuleSubject {
            rule,
            limiter_key: self.keys().limiter(rule, client_key),
            lease_id: rule.kind().is_concurrency().then(new_lease_id),
        };
        Ok(self.decide(&subject, cost, at).await)
    }
}

/// A rule and the client's limiter key under it.
struct RuleSubject<'a> {
    rule: &'a Rule,
    limiter_key: String,
    /// A concurrency rule's lease id for this request.
    lease_id: Option<String>,
}

/// A fresh lease id: 16 random URL-safe characters (the log member's alphabet, 96 bits).
pub(crate) fn new_lease_id() -> String {
    String::from_utf8_lossy(&scripts::log_member()).into_owned()
}

impl Subject for RuleSubject<'_> {
    fn name(&self) -> &str {
        self.rule.name()
    }

    fn cached(&self, cache: &DenyCache, cost: u64, now: Instant) -> Option<Decision> {
        let hit = cache.lookup(&self.limiter_key, self.rule.algorithm(), cost, now)?;
        Some(Decision {
            by: DecidedBy::Cache,
            ..Decision::by_redis(false, hit.remaining, hit.retry_after_ms, hit.reset_after_ms)
        })
    }

    fn remember(&self, cache: &DenyCache, decision: &Decision, cost: u64, sent: Instant) {
        if !decision.allowed {
            cache.insert(
                &self.limiter_key,
                self.rule.algorithm(),
                cost,
                sent,
                decision,
            );
        }
    }

    fn evalsha(&self, limiter: &Limiter, cost: u64, at: At, second: Option<u64>) -> redis::Cmd {
        let stats = second.map(|second| limiter.rule_stats_keys(self.rule.name(), second));
        Call {
            algorithm: self.rule.algorithm(),
            limiter_key: &self.limiter_key,
            stats_keys: stats.as_ref().map(|(a, d)| (&**a, &**d)),
            stats_ttl_secs: COUNTER_TTL_SECS,
            cost,
            at,
            lease_id: self.lease_id.as_deref(),
        }
        .evalsha()
    }

    fn parse(&self, reply: &redis::Value) -> Result<Decision, RedisFailure> {
        scripts::parse_value(reply)
    }

    fn lease(&self, limiter: &Limiter) -> Option<Lease> {
        let Algorithm::Concurrency { lease_ms, .. } = *self.rule.algorithm() else {
            return None;
        };
        let id = self.lease_id.clone()?;
        Some(Lease::held(
            Arc::new(limiter.clone()),
            id,
            vec![(self.limiter_key.clone(), lease_ms)],
            true,
        ))
    }

    fn fallback(&self, limiter: &Limiter, cost: u64, peek: bool) -> Decision {
        // Degraded mode's local share is a rate: requests in flight fail open (or closed).
        if peek || self.rule.kind().is_concurrency() {
            limiter.plain_fallback()
        } else {
            limiter.rule_fallback(self.rule, &self.limiter_key, cost)
        }
    }

    fn observe(
        &self,
        observer: &dyn DecisionObserver,
        decision: &Decision,
        cached: bool,
        elapsed: Duration,
    ) {
        if cached {
            observer.cache_denied(self.rule, elapsed);
        } else {
            observer.decided(self.rule, decision, elapsed);
        }
    }
}
