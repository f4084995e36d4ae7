//! The limiter: one shared connection, one EVALSHA per decision, fail-open on any Redis error.

use crate::conn::{Conn, ConnOptions};
use crate::decision::{DecidedBy, Decision, PolicyOutcome};
use crate::deny_cache::{DenyCache, DenyCacheOptions, DenyCacheStats};
use crate::error::{FailureKind, RedisFailure};
use crate::keys::KeySpace;
use crate::local_limiter::{LocalDecision, LocalLimiter};
use crate::rule::{Rule, RuleError};
use crate::scripts;
use crate::target::RedisTarget;
use crate::telemetry::{self, FailureLedger, StatsPoint};
use crate::Outcome;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default decision deadline: long enough for a loaded Redis on a LAN, short enough that
/// a hung one costs callers a blink rather than a timeout.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(250);

/// What a decision is when Redis cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureMode {
    /// Let the request through (`allowed: true, remaining: -1, fail_open: true`). The default:
    /// a limiter outage should not become an application outage.
    #[default]
    Open,
    /// Refuse the request (`allowed: false, remaining: -1`), for limits that guard something
    /// more precious than availability.
    Closed,
    /// Decide in process with the same rule scaled down to this instance's share (the rule's
    /// allowance divided by `instances`, the number of app instances expected to share it;
    /// see `crate::local_limiter`). Admissions are fail-open decisions marked `degraded`;
    /// denials are ordinary denials (with the local limiter's wait) marked `degraded`. Every
    /// decision still asks Redis first, so Redis decides again as soon as it answers.
    Degraded { instances: u32 },
}

/// How a limiter behaves.
#[derive(Debug, Clone)]
pub struct LimiterOptions {
    /// Where keys live.
    pub keys: KeySpace,
    /// The longest a decision may take, connection and script reload included.
    pub deadline: Duration,
    pub failure_mode: FailureMode,
    /// Count decisions per rule and second in Redis (in the same script call).
    pub telemetry: bool,
    /// Deny in process, without a round trip, what Redis has just denied, until the time Redis
    /// named ([`crate::deny_cache`]). Off by default.
    pub deny_cache: Option<DenyCacheOptions>,
}

impl Default for LimiterOptions {
    fn default() -> Self {
        LimiterOptions {
            keys: KeySpace::default(),
            deadline: DEFAULT_DEADLINE,
            failure_mode: FailureMode::Open,
            telemetry: true,
            deny_cache: None,
        }
    }
}

/// Decides requests against rules. Cheap to clone: clones share one connection (multiplexed,
/// reconnecting in the background) and one failure ledger.
#[derive(Clone)]
pub struct Limiter {
    inner: Arc<Inner>,
}

struct Inner {
    /// Created lazily, so a limiter exists (and fails open) even while Redis is down.
    conn: Conn,
    target: RedisTarget,
    options: LimiterOptions,
    ledger: Arc<FailureLedger>,
    observer: Option<Arc<dyn DecisionObserver>>,
    /// The second in which each failure kind was last logged, so an outage under load logs
    /// once a second per kind instead of once per request.
    last_logged: [AtomicU64; FailureKind::ALL.len()],
    /// This second's telemetry key names per rule: they change once a second, and formatting
    /// them for every decision was a tenth of the engine's CPU (docs/benchmarks.md).
    stats_keys: StatsKeyCache,
    /// Present when `options.deny_cache` is.
    deny_cache: Option<DenyCache>,
    /// Present in `FailureMode::Degraded`.
    local: Option<LocalLimiter>,
}

/// Per rule: the second and its allowed and denied counter names. A std Mutex, held for a
/// lookup only. Cleared when it grows past `MAX_CACHED_RULES`, so rule names made up on the fly
/// cannot grow it without bound.
#[derive(Default)]
struct StatsKeyCache(Mutex<HashMap<String, SecondKeys>>);

/// A second and its allowed and denied counter names.
type SecondKeys = (u64, Arc<str>, Arc<str>);

const MAX_CACHED_RULES: usize = 1024;

impl StatsKeyCache {
    fn get(&self, keys: &KeySpace, rule: &str, second: u64) -> (Arc<str>, Arc<str>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, allowed, denied)) = map.get(rule) {
            if *s == second {
                return (allowed.clone(), denied.clone());
            }
        }
        let allowed: Arc<str> = keys.stats(rule, second, Outcome::Allowed).into();
        let denied: Arc<str> = keys.stats(rule, second, Outcome::Denied).into();
        if map.len() >= MAX_CACHED_RULES && !map.contains_key(rule) {
            map.clear();
        }
        match map.get_mut(rule) {
            Some(entry) => *entry = (second, allowed.clone(), denied.clone()),
            None => {
                map.insert(rule.to_string(), (second, allowed.clone(), denied.clone()));
            }
        }
        (allowed, denied)
    }
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("target", &self.inner.target)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// Sees every decision: how the metrics module counts without the limiter knowing Prometheus.
pub trait DecisionObserver: Send + Sync {
    fn decided(&self, rule: &Rule, decision: &Decision, elapsed: Duration);
    fn failed(&self, kind: FailureKind);
    /// A request the local deny cache denied without asking Redis (not also `decided`).
    fn cache_denied(&self, _rule: &Rule, _elapsed: Duration) {}
    /// A policy's decision (src/policy/), by the policy's name and how it is counted.
    fn policy_decided(&self, _policy: &str, _outcome: PolicyOutcome, _elapsed: Duration) {}
    /// A lease given back (`op` release) or renewed; `freed`: it was live (and is now freed,
    /// or renewed), else it had expired or been released before.
    fn lease_ended(&self, _op: crate::lease::LeaseOp, _freed: bool) {}
    /// A request settled with its actual cost ([`crate::settle`]): `outcome` says whether
    /// that gave back, charged more, or changed nothing.
    fn settled(&self, _outcome: crate::decision::Settled) {}
}

/// Why `try_check` gave no decision.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("Redis failed: {0}")]
    Redis(#[from] RedisFailure),
}

impl Limiter {
    /// A limiter for `target`, made within a Tokio runtime; options are used as given
    /// ([`Limiter::try_new`] checks them). Does not connect: the first decision does, and a
    /// Redis that is down then yields fail-open decisions rather than an error here.
    pub fn new(target: &RedisTarget, options: LimiterOptions) -> Self {
        Self::build(target, options, Arc::default(), None)
    }

    fn build(
        target: &RedisTarget,
        options: LimiterOptions,
        ledger: Arc<FailureLedger>,
        observer: Option<Arc<dyn DecisionObserver>>,
    ) -> Self {
        // The deadline is the one time limit: redis-rs's own 500 ms response timeout would
        // otherwise fail a decision open long before a longer configured deadline.
        let conn = Conn::lazy(
            target,
            ConnOptions {
                connect_timeout: options.deadline,
                response_timeout: options.deadline,
                // A connect is not retried inside a decision: one that cannot succeed (a wrong
                // password, an untrusted CA) says why within the deadline, not as a timeout;
                // the next decision connects again. A cluster's requests keep their retries
                // (MOVED, ASK and TRYAGAIN through a failover or a resharding).
                retries: if target.is_cluster() { 2 } else { 0 },
                max_delay: Some(Duration::from_millis(500)),
                min_delay: Some(
                    (options.deadline / 8)
                        .clamp(Duration::from_millis(5), Duration::from_millis(100)),
                ),
            },
        );
        let deny_cache = options.deny_cache.map(DenyCache::new);
        let local = match options.failure_mode {
            FailureMode::Degraded { instances } => Some(LocalLimiter::new(
                instances,
                crate::local_limiter::DEFAULT_MAX_ENTRIES,
            )),
            FailureMode::Open | FailureMode::Closed => None,
        };
        Limiter {
            inner: Arc::new(Inner {
                conn,
                target: target.clone(),
                options,
                ledger,
                observer,
                last_logged: Default::default(),
                stats_keys: StatsKeyCache::default(),
                deny_cache,
                local,
            }),
        }
    }

    /// The same limiter with an observer that sees every decision (metrics).
    pub fn with_observer(self, observer: Arc<dyn DecisionObserver>) -> Self {
        let inner = &self.inner;
        Self::build(
            &inner.target,
            inner.options.clone(),
            inner.ledger.clone(),
            Some(observer),
        )
    }

    /// A limiter with its own connection to the same Redis, sharing this one's ledger and
    /// observer: what a separate app instance behind a load balancer would have.
    pub fn with_own_connection(&self) -> Self {
        let inner = &self.inner;
        Self::build(
            &inner.target,
            inner.options.clone(),
            inner.ledger.clone(),
            inner.observer.clone(),
        )
    }

    pub fn target(&self) -> &RedisTarget {
        &self.inner.target
    }

    pub fn options(&self) -> &LimiterOptions {
        &self.inner.options
    }

    pub fn keys(&self) -> &KeySpace {
        &self.inner.options.keys
    }

    /// The observer of decisions, if any (metrics).
    /// The deny cache, when the options turned it on.
    pub(crate) fn deny_cache(&self) -> Option<&DenyCache> {
        self.inner.deny_cache.as_ref()
    }

    pub(crate) fn observer(&self) -> Option<&Arc<dyn DecisionObserver>> {
        self.inner.observer.as_ref()
    }

    /// Decisions made without Redis, and Redis failures by kind.
    pub fn ledger(&self) -> &FailureLedger {
        &self.inner.ledger
    }

    /// The deny cache's size and hits, when it is on.
    pub fn deny_cache_stats(&self) -> Option<DenyCacheStats> {
        self.inner.deny_cache.as_ref().map(DenyCache::stats)
    }

    /// Drops the cached denials of one client of `rule` (every algorithm), or of everyone
    /// when `client_key` is `None` (the cache does not index by rule, so it is emptied), so
    /// the next request asks Redis. [`Limiter::reset`] calls it.
    pub fn forget_denials(&self, rule: &str, client_key: Option<&str>) {
        let Some(cache) = &self.inner.deny_cache else {
            return;
        };
        match client_key {
            Some(client) => {
                for kind in crate::rule::AlgorithmKind::ALL {
                    cache.forget(&self.keys().limiter_for(kind, rule, client));
                }
            }
            None => cache.clear(),
        }
    }

    /// The failure mode's decision without the local limiter: what a peek gets.
    pub(crate) fn plain_fallback(&self) -> Decision {
        match self.inner.options.failure_mode {
            FailureMode::Closed => Decision::FAIL_CLOSED,
            FailureMode::Open | FailureMode::Degraded { .. } => Decision::FAIL_OPEN,
        }
    }

    /// A rule's decision when Redis cannot be asked: in degraded mode the local limiter's
    /// share, else the failure mode's.
    pub(crate) fn rule_fallback(&self, rule: &Rule, limiter_key: &str, cost: u64) -> Decision {
        // `local` is there exactly in degraded mode.
        let Some(local) = &self.inner.local else {
            return self.plain_fallback();
        };
        match local.decide(limiter_key, rule.algorithm(), cost, Instant::now()) {
            LocalDecision::Admitted { .. } => Decision {
                by: DecidedBy::Degraded,
                ..Decision::FAIL_OPEN
            },
            LocalDecision::Denied {
                retry_after_ms,
                reset_after_ms,
            } => Decision {
                by: DecidedBy::Degraded,
                ..Decision::by_redis(false, 0, retry_after_ms, reset_after_ms)
            },
            LocalDecision::Untracked => Decision::FAIL_OPEN,
        }
    }

    /// A rule's telemetry counters of `second` (allowed, denied), names kept per rule.
    pub(crate) fn rule_stats_keys(&self, rule: &str, second: u64) -> (Arc<str>, Arc<str>) {
        self.inner
            .stats_keys
            .get(&self.inner.options.keys, rule, second)
    }

    /// One script call under the decision deadline. EVALSHA built in one buffer; on NOSCRIPT
    /// (a restarted, flushed or newly promoted node) the same call goes again as EVAL to the
    /// node that answered (`scripts::invoke`).
    pub(crate) async fn invoke_script(
        &self,
        evalsha: &redis::Cmd,
    ) -> Result<redis::Value, RedisFailure> {
        let mut conn = self.inner.conn.clone();
        self.within_deadline(scripts::invoke(&mut conn, evalsha))
            .await
    }

    /// Runs one Redis call under the decision deadline; running out of time is a `Timeout`.
    async fn within_deadline<T, E: Into<RedisFailure>>(
        &self,
        call: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, RedisFailure> {
        let deadline = self.inner.options.deadline;
        match tokio::time::timeout(deadline, call).await {
            Ok(result) => result.map_err(Into::into),
            Err(_) => Err(RedisFailure::timeout(deadline)),
        }
    }

    /// Counts and logs (at most once a second per kind) a failure of a call besides a decision
    /// (a refund, [`crate::refund`]), and hands it back.
    pub(crate) fn failed(&self, failure: RedisFailure) -> RedisFailure {
        self.record_failure(&failure);
        failure
    }

    fn record_failure(&self, failure: &RedisFailure) {
        let inner = &*self.inner;
        inner.ledger.record_failure(failure.kind);
        if let Some(observer) = &inner.observer {
            observer.failed(failure.kind);
        }
        let second = telemetry::now_ms() / 1000;
        let gate = &inner.last_logged[failure.kind.index()];
        if gate.swap(second, Ordering::Relaxed) == second {
            return;
        }
        let failed_total = inner.ledger.failures_total();
        // What listens at the port (nothing, another server, TLS on the other side) is named
        // off the decision's path (a probe of up to a second), then logged as any failure.
        let diagnosable = !inner.target.is_cluster()
            && matches!(
                failure.kind,
                FailureKind::Timeout
                    | FailureKind::Unavailable
                    | FailureKind::Other
                    | FailureKind::Reply
            );
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if diagnosable => {
                let (limiter, failure) = (self.clone(), failure.clone());
                runtime.spawn(async move {
                    let failure = limiter.diagnose(failure).await;
                    limiter.log_failure(&failure, failed_total);
                });
            }
            _ => self.log_failure(failure, failed_total),
        }
    }

    fn log_failure(&self, failure: &RedisFailure, failed_total: u64) {
        let inner = &*self.inner;
        if failure.kind == FailureKind::Misconfiguration {
            tracing::error!(
                redis = %inner.target, kind = %failure.kind, failed_total,
                "Redis refused a rate-limit decision; this will not heal by itself: {}",
                failure.message
            );
        } else {
            tracing::warn!(
                redis = %inner.target, kind = %failure.kind, failed_total,
                mode = ?inner.options.failure_mode,
                "Redis failed a rate-limit decision: {}", failure.message
            );
        }
    }

    /// A failure as a user should read it, after a look at the port itself: nothing listening,
    /// another kind of server, TLS on the other side ([`crate::diagnose::diagnose`]). The
    /// one path every front reports through: the failures it logs, [`Limiter::ping`], and
    /// the CLI's `check`.
    pub async fn diagnose(&self, failure: RedisFailure) -> RedisFailure {
        crate::diagnose::diagnose(&self.inner.target, failure).await
    }

    /// The last 30 seconds of `rule`, oldest first, the current second last, with this
    /// process's fail-open counts filled in.
    pub async fn stats(&self, rule: &str) -> Result<Vec<StatsPoint>, RedisFailure> {
        self.stats_at(rule, telemetry::now_ms() / 1000).await
    }

    /// The 30 seconds ending with `now_second`.
    pub async fn stats_at(
        &self,
        rule: &str,
        now_second: u64,
    ) -> Result<Vec<StatsPoint>, RedisFailure> {
        let mut one = self.stats_many_at(&[rule], now_second).await?;
        Ok(one.pop().unwrap_or_default())
    }

    /// The last 30 seconds of each of `rules`, in order, with this process's fail-open counts
    /// filled in: one round trip for all of them (on a cluster, where each rule is its own
    /// slot, one pipeline per rule, all in flight at once).
    pub async fn stats_many_at(
        &self,
        rules: &[&str],
        now_second: u64,
    ) -> Result<Vec<Vec<StatsPoint>>, RedisFailure> {
        let conn = self.inner.conn.clone();
        let keys = self.keys();
        let read = async {
            if conn.is_cluster() {
                let reads = rules.iter().map(|rule| {
                    let mut conn = conn.clone();
                    async move { telemetry::read_window(&mut conn, keys, rule, now_second).await }
                });
                futures::future::try_join_all(reads).await
            } else {
                telemetry::read_windows(&mut conn.clone(), keys, rules, now_second).await
            }
        };
        let mut series = self.within_deadline(read).await?;
        for (rule, points) in rules.iter().zip(&mut series) {
            self.inner.ledger.fill(rule, points);
        }
        Ok(series)
    }

    /// A PING through the shared connection: the round-trip time, or why it failed
    /// ([diagnosed](Limiter::diagnose)).
    pub async fn ping(&self) -> Result<Duration, RedisFailure> {
        let mut conn = self.inner.conn.clone();
        let started = Instant::now();
        let pong = self
            .within_deadline(redis::cmd("PING").query_async::<String>(&mut conn))
            .await;
        let pong = match pong {
            Ok(pong) => pong,
            Err(failure) => return Err(self.diagnose(failure).await),
        };
        if pong != "PONG" {
            return Err(RedisFailure::new(
                FailureKind::Reply,
                format!("PING answered {pong:?}"),
            ));
        }
        Ok(started.elapsed())
    }

    /// A clone of the shared connection, for callers that need plain Redis commands.
    pub fn connection(&self) -> Conn {
        self.inner.conn.clone()
    }
}
