//! The one decision path: from a request to Redis and back, the same for a rule (its
//! standalone script) and a policy (`lua/policy.lua`): the deny cache, the telemetry keys of
//! the second, one script call under the deadline, the failure mode's answer when Redis fails
//! (counted, logged, and in the fail-open ledger), and the observer (metrics). What differs is
//! a [`Subject`]: which script it calls and how its answer reads.
//!
//! A peek (cost 0) takes the same path without the deny cache, the telemetry keys, the
//! observer and the ledger: nothing was decided. An admission Redis made under concurrency
//! limits carries the lease it took ([`Subject::lease`]).

use crate::decision::Decision;
use crate::deny_cache::DenyCache;
use crate::error::RedisFailure;
use crate::lease::Lease;
use crate::limiter::{DecisionObserver, Limiter};
use crate::scripts::At;
use crate::telemetry;
use std::time::{Duration, Instant};

/// How a decision was reached.
#[derive(Debug)]
pub(crate) enum Decided {
    /// Redis decided, or the deny cache repeated its denial.
    Made(Decision),
    /// Redis failed; the answer is the failure mode's (the failure already counted and logged).
    Fallback(Decision, RedisFailure),
}

impl Decided {
    /// The answer, whoever gave it.
    pub(crate) fn answer(self) -> Decision {
        match self {
            Decided::Made(a) | Decided::Fallback(a, _) => a,
        }
    }

    /// The answer Redis (or the deny cache) gave, or the failure that prevented it.
    pub(crate) fn made(self) -> Result<Decision, RedisFailure> {
        match self {
            Decided::Made(a) => Ok(a),
            Decided::Fallback(_, failure) => Err(failure),
        }
    }
}

/// What one decision is about, validated by its maker: a rule and its limiter key, or a
/// policy's tier and its limits' keys.
pub(crate) trait Subject {
    /// Its name in telemetry and the fail-open ledger.
    fn name(&self) -> &str;

    /// Whether the deny cache may answer for it (besides: a check, on the Redis clock).
    fn cacheable(&self) -> bool {
        true
    }

    /// The deny cache's denial still in force, as an answer.
    fn cached(&self, cache: &DenyCache, cost: u64, now: Instant) -> Option<Decision>;

    /// Keeps (or ends) a denial in the deny cache after Redis answered.
    fn remember(&self, cache: &DenyCache, answer: &Decision, cost: u64, sent: Instant);

    /// The EVALSHA of its script, with the telemetry counters of `second` when it is counted.
    fn evalsha(&self, limiter: &Limiter, cost: u64, at: At, second: Option<u64>) -> redis::Cmd;

    /// The script's reply as an answer; anything else is a failure of the reply.
    fn parse(&self, reply: &redis::Value) -> Result<Decision, RedisFailure>;

    /// The lease an admission took in its concurrency limits, if it has any: its id (the one
    /// [`Subject::evalsha`] sent) and the sets it is held in. Asked only when Redis admitted a
    /// request that charged something (not a peek, not a shadow denial).
    fn lease(&self, _limiter: &Limiter) -> Option<Lease> {
        None
    }

    /// The failure mode's answer when Redis could not be asked (for a peek: spending nothing).
    fn fallback(&self, limiter: &Limiter, cost: u64, peek: bool) -> Decision;

    /// Tells the observer (metrics) of a decision; `cached`: the deny cache's.
    fn observe(
        &self,
        observer: &dyn DecisionObserver,
        answer: &Decision,
        cached: bool,
        elapsed: Duration,
    );
}

impl Limiter {
    /// The one path: see the module's note.
    pub(crate) async fn decide<S: Subject>(&self, subject: &S, cost: u64, at: At) -> Decided {
        let peek = cost == 0;
        // The deny cache keeps time on this process's clock: only decisions on the Redis
        // clock (now) may use it; an explicit time always asks Redis.
        let cache = self
            .deny_cache()
            .filter(|_| !peek && matches!(at, At::ServerClock) && subject.cacheable());
        let started = Instant::now();
        if let Some(cache) = cache {
            if let Some(hit) = subject.cached(cache, cost, started) {
                // No await point on this path otherwise: a caller looping over cache hits
                // must still let its runtime's other tasks run.
                tokio::task::consume_budget().await;
                if let Some(observer) = self.observer() {
                    subject.observe(&**observer, &hit, true, started.elapsed());
                }
                return Decided::Made(hit);
            }
        }
        let second = at.millis().unwrap_or_else(telemetry::now_ms) / 1000;
        let counted = (self.options().telemetry && !peek).then_some(second);
        let evalsha = subject.evalsha(self, cost, at, counted);
        let result = self
            .invoke_script(&evalsha)
            .await
            .and_then(|reply| subject.parse(&reply));
        let elapsed = started.elapsed();
        let observer = self.observer().filter(|_| !peek);
        match result {
            Ok(mut answer) => {
                if !peek && answer.allowed && !answer.would_deny() {
                    answer.lease = subject.lease(self);
                }
                if let Some(cache) = cache {
                    subject.remember(cache, &answer, cost, started);
                }
                if let Some(observer) = observer {
                    subject.observe(&**observer, &answer, false, elapsed);
                }
                Decided::Made(answer)
            }
            Err(failure) => {
                let failure = self.failed(failure);
                let answer = subject.fallback(self, cost, peek);
                if !peek {
                    if answer.fail_open() {
                        self.ledger().record_fail_open(subject.name(), second);
                    }
                    if let Some(observer) = observer {
                        subject.observe(&**observer, &answer, false, elapsed);
                    }
                }
                Decided::Fallback(answer, failure)
            }
        }
    }
}
