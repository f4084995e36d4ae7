//! Prometheus metrics of this process's decisions, fed by the limiter as a [`DecisionObserver`].
//!
//! ```text
//! ratelockr_evaluations_total{algorithm, result}        counter, every series from the start
//! ratelockr_evaluation_duration_seconds{algorithm}      histogram, 25 µs .. 1 s
//! ratelockr_redis_errors_total{kind}                    counter, one series per FailureKind
//! ratelockr_active_rules                                gauge, set by whoever owns the rules
//! ratelockr_policy_decisions_total{policy, result}      counter, a policy's series from its
//!                                                       first decision
//! ratelockr_policy_reloads_total{result}                counter, ok and error from the start
//! ```
//!
//! `ratelockr_redis_errors_total` carries a `kind` label (`unavailable`, `timeout`, `noscript`,
//! `reply`, `misconfiguration`, `other`), every kind present at zero; the plain total that
//! design.md names is `sum(ratelockr_redis_errors_total)`.
//!
//! Each [`Metrics`] owns its registry (never the process-global default one), so tests and the
//! app can hold several side by side. The hot path touches pre-resolved children only: one
//! atomic add per counter, no label lookup, no allocation.

mod http;

pub use http::{serve, MetricsServer, ServeError, CONTENT_TYPE, METRICS_PATH};

use crate::decision::Settled;
use crate::decision::{Decision, Outcome, PolicyOutcome};
use crate::error::FailureKind;
use crate::lease::LeaseOp;
use crate::limiter::DecisionObserver;
use crate::rule::{AlgorithmKind, Rule};
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};
use std::sync::Arc;
use std::time::Duration;

/// Decision latency buckets, in seconds: a loopback EVALSHA takes tens of microseconds, a LAN
/// one a few hundred, and the default deadline is 250 ms; the top bucket catches the rest.
pub(crate) const DURATION_BUCKETS: [f64; 17] = [
    25e-6, 50e-6, 100e-6, 200e-6, 350e-6, 500e-6, 750e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
    100e-3, 250e-3, 500e-3, 1.0,
];

/// The process's rate-limit metrics. Cheap to clone: clones share one registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    /// `[algorithm][outcome]`, indexed like `AlgorithmKind::ALL` and `Outcome::ALL`.
    evaluations: [[IntCounter; Outcome::ALL.len()]; AlgorithmKind::ALL.len()],
    /// Indexed like `AlgorithmKind::ALL`.
    durations: [Histogram; AlgorithmKind::ALL.len()],
    /// Indexed like `FailureKind::ALL`.
    redis_errors: [IntCounter; FailureKind::ALL.len()],
    active_rules: IntGauge,
    /// By policy and result; a label lookup per decision (policy names are open-ended).
    policy_decisions: IntCounterVec,
    /// `[ok, error]`.
    policy_reloads: [IntCounter; 2],
    /// `[op][result]`: release and renew, each freed (it was live) or gone (released before,
    /// or expired).
    leases: [[IntCounter; 2]; 2],
    /// Indexed like `Settled::ALL`.
    settles: [IntCounter; Settled::ALL.len()],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("evaluations_total", &self.evaluations_total())
            .field("active_rules", &self.inner.active_rules.get())
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Rules counted in `ratelockr_active_rules` until dropped ([`Metrics::hold_active_rules`]).
#[derive(Debug)]
pub struct ActiveRules {
    gauge: IntGauge,
    n: i64,
}

impl Drop for ActiveRules {
    fn drop(&mut self) {
        self.gauge.sub(self.n);
    }
}

impl Metrics {
    /// A fresh registry with every series present at zero.
    pub fn new() -> Self {
        let registry = Registry::new();
        let evaluations = IntCounterVec::new(
            Opts::new(
                "ratelockr_evaluations_total",
                "Rate-limit decisions by algorithm and result (fail_open: Redis failed and the request was let through; cache_denied: denied by the local deny cache without asking Redis).",
            ),
            &["algorithm", "result"],
        )
        .expect("static metric definition");
        let durations = HistogramVec::new(
            HistogramOpts::new(
                "ratelockr_evaluation_duration_seconds",
                "Time to decide, script round trip included (fail-open decisions: time until the failure).",
            )
            .buckets(DURATION_BUCKETS.to_vec()),
            &["algorithm"],
        )
        .expect("static metric definition");
        let redis_errors = IntCounterVec::new(
            Opts::new(
                "ratelockr_redis_errors_total",
                "Redis failures while deciding, by kind; sum() over kind for the total.",
            ),
            &["kind"],
        )
        .expect("static metric definition");
        let active_rules = IntGauge::new(
            "ratelockr_active_rules",
            "Rules currently configured in this process.",
        )
        .expect("static metric definition");
        let policy_decisions = IntCounterVec::new(
            Opts::new(
                "ratelockr_policy_decisions_total",
                "Policy decisions by policy and result (shadow_denied: admitted in shadow mode although a limit denied; delayed: admitted with a delay under the policy's max_delay_ms; fail_open: Redis failed and the request was let through).",
            ),
            &["policy", "result"],
        )
        .expect("static metric definition");
        let policy_reloads = IntCounterVec::new(
            Opts::new(
                "ratelockr_policy_reloads_total",
                "Reloads of a policies file: ok, or error (the policies in force were kept).",
            ),
            &["result"],
        )
        .expect("static metric definition");
        let leases = IntCounterVec::new(
            Opts::new(
                "ratelockr_leases_total",
                "Leases of requests in flight given back (op=release) or renewed (op=renew): result=live when the lease held its slots, gone when it had been released before or had expired.",
            ),
            &["op", "result"],
        )
        .expect("static metric definition");
        let settles = IntCounterVec::new(
            Opts::new(
                "ratelockr_settles_total",
                "Requests settled with their actual cost: result=gave_back (it cost less than charged), charged_more (it cost more), nothing (no limit changed).",
            ),
            &["result"],
        )
        .expect("static metric definition");
        for collector in [
            Box::new(evaluations.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(leases.clone()),
            Box::new(settles.clone()),
            Box::new(durations.clone()),
            Box::new(redis_errors.clone()),
            Box::new(active_rules.clone()),
            Box::new(policy_decisions.clone()),
            Box::new(policy_reloads.clone()),
        ] {
            registry
                .register(collector)
                .expect("distinct metric names in a fresh registry");
        }
        // Resolving every child now makes all series visible at zero and keeps label
        // lookups (a hash and a lock) off the hot path.
        let evaluations = AlgorithmKind::ALL.map(|kind| {
            Outcome::ALL
                .map(|outcome| evaluations.with_label_values(&[kind.as_str(), outcome.as_str()]))
        });
        let durations =
            AlgorithmKind::ALL.map(|kind| durations.with_label_values(&[kind.as_str()]));
        let redis_errors =
            FailureKind::ALL.map(|kind| redis_errors.with_label_values(&[kind.as_str()]));
        Metrics {
            inner: Arc::new(Inner {
                registry,
                evaluations,
                durations,
                redis_errors,
                active_rules,
                policy_decisions,
                policy_reloads: ["ok", "error"].map(|r| policy_reloads.with_label_values(&[r])),
                leases: [LeaseOp::Release, LeaseOp::Renew].map(|op| {
                    ["live", "gone"].map(|result| leases.with_label_values(&[op.as_str(), result]))
                }),
                settles: Settled::ALL.map(|s| settles.with_label_values(&[s.as_str()])),
            }),
        }
    }

    /// Sets `ratelockr_active_rules`.
    pub fn set_active_rules(&self, n: usize) {
        self.inner
            .active_rules
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Counts `n` more rules in `ratelockr_active_rules` for as long as the returned guard
    /// lives. For owners that share one `Metrics` (several tower layers, or a layer beside a
    /// server), each counting its own rules, where [`Metrics::set_active_rules`] would have
    /// each overwrite the others' count.
    pub fn hold_active_rules(&self, n: usize) -> ActiveRules {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        self.inner.active_rules.add(n);
        ActiveRules {
            gauge: self.inner.active_rules.clone(),
            n,
        }
    }

    /// The registry, for callers that want to add their own collectors beside ours.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Everything in Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = Vec::with_capacity(4096);
        TextEncoder::new()
            .encode(&self.inner.registry.gather(), &mut out)
            .expect("text encoding into a Vec cannot fail");
        String::from_utf8(out).expect("the text encoder writes UTF-8")
    }

    /// `ratelockr_evaluations_total{algorithm, result}` as a number.
    pub fn evaluations(&self, kind: AlgorithmKind, outcome: Outcome) -> u64 {
        self.inner.evaluations[algorithm_index(kind)][outcome_index(outcome)].get()
    }

    /// All evaluations, every algorithm and result.
    pub fn evaluations_total(&self) -> u64 {
        self.inner
            .evaluations
            .iter()
            .flatten()
            .map(IntCounter::get)
            .sum()
    }

    /// `ratelockr_policy_decisions_total{policy, result}` as a number.
    pub fn policy_decisions(&self, policy: &str, outcome: PolicyOutcome) -> u64 {
        self.inner
            .policy_decisions
            .with_label_values(&[policy, outcome.as_str()])
            .get()
    }

    /// Makes every result series of `policy` visible at zero (a loaded policy before its first
    /// decision).
    pub fn register_policy(&self, policy: &str) {
        for outcome in PolicyOutcome::ALL {
            self.inner
                .policy_decisions
                .with_label_values(&[policy, outcome.as_str()]);
        }
    }

    /// Counts a reload of a policies file (`ok`: swapped in; else refused and the policies in
    /// force kept).
    pub fn policy_reloaded(&self, ok: bool) {
        self.inner.policy_reloads[usize::from(!ok)].inc();
    }

    /// `ratelockr_policy_reloads_total{result}` as a number.
    pub fn policy_reloads(&self, ok: bool) -> u64 {
        self.inner.policy_reloads[usize::from(!ok)].get()
    }

    /// `ratelockr_redis_errors_total{kind}` as a number.
    pub fn redis_errors(&self, kind: FailureKind) -> u64 {
        self.inner.redis_errors[kind.index()].get()
    }
}

impl DecisionObserver for Metrics {
    fn decided(&self, rule: &Rule, decision: &Decision, elapsed: Duration) {
        let algorithm = algorithm_index(rule.kind());
        self.inner.evaluations[algorithm][outcome_index(decision.outcome())].inc();
        self.inner.durations[algorithm].observe(elapsed.as_secs_f64());
    }

    fn failed(&self, kind: FailureKind) {
        self.inner.redis_errors[kind.index()].inc();
    }

    fn cache_denied(&self, rule: &Rule, elapsed: Duration) {
        let algorithm = algorithm_index(rule.kind());
        self.inner.evaluations[algorithm][outcome_index(Outcome::CacheDenied)].inc();
        self.inner.durations[algorithm].observe(elapsed.as_secs_f64());
    }

    fn policy_decided(&self, policy: &str, outcome: PolicyOutcome, _elapsed: Duration) {
        self.inner
            .policy_decisions
            .with_label_values(&[policy, outcome.as_str()])
            .inc();
    }

    fn lease_ended(&self, op: LeaseOp, freed: bool) {
        self.inner.leases[usize::from(op == LeaseOp::Renew)][usize::from(!freed)].inc();
    }

    fn settled(&self, outcome: Settled) {
        let i = Settled::ALL.iter().position(|&s| s == outcome).unwrap_or(0);
        self.inner.settles[i].inc();
    }
}

fn algorithm_index(kind: AlgorithmKind) -> usize {
    match kind {
        AlgorithmKind::TokenBucket => 0,
        AlgorithmKind::Gcra => 1,
        AlgorithmKind::SlidingWindowLog => 2,
        AlgorithmKind::SlidingWindowCounter => 3,
        AlgorithmKind::FixedWindow => 4,
        AlgorithmKind::Concurrency => 5,
        AlgorithmKind::Calendar => 6,
    }
}

fn outcome_index(outcome: Outcome) -> usize {
    match outcome {
        Outcome::Allowed => 0,
        Outcome::Denied => 1,
        Outcome::FailOpen => 2,
        Outcome::CacheDenied => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_exists_at_zero() {
        let text = Metrics::new().render();
        for kind in AlgorithmKind::ALL {
            for outcome in Outcome::ALL {
                let series = format!(
                    "ratelockr_evaluations_total{{algorithm=\"{}\",result=\"{}\"}} 0",
                    kind.as_str(),
                    outcome.as_str()
                );
                assert!(text.contains(&series), "missing {series} in\n{text}");
            }
        }
        for kind in FailureKind::ALL {
            let series = format!("ratelockr_redis_errors_total{{kind=\"{kind}\"}} 0");
            assert!(text.contains(&series), "missing {series}");
        }
        assert!(text.contains("ratelockr_active_rules 0"));
        assert!(text.contains("ratelockr_evaluation_duration_seconds_bucket{algorithm=\"token_bucket\",le=\"0.000025\"} 0"));
    }

    #[test]
    fn indexes_follow_the_all_arrays() {
        for (i, kind) in AlgorithmKind::ALL.into_iter().enumerate() {
            assert_eq!(algorithm_index(kind), i);
        }
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome_index(outcome), i);
        }
    }

    #[test]
    fn registries_are_independent() {
        let a = Metrics::new();
        let b = Metrics::new();
        let rule = Rule::fixed_window("r", 1, Duration::from_secs(1)).expect("valid");
        a.decided(&rule, &Decision::FAIL_OPEN, Duration::from_micros(40));
        a.failed(FailureKind::Timeout);
        a.set_active_rules(3);
        assert_eq!(
            a.evaluations(AlgorithmKind::FixedWindow, Outcome::FailOpen),
            1
        );
        assert_eq!(a.redis_errors(FailureKind::Timeout), 1);
        assert_eq!(b.evaluations_total(), 0);
        assert!(a.render().contains("ratelockr_active_rules 3"));
    }

    #[test]
    fn policies_are_counted_by_name_and_result() {
        let m = Metrics::new();
        assert!(m
            .render()
            .contains("ratelockr_policy_reloads_total{result=\"error\"} 0"));
        m.register_policy("api");
        assert!(m.render().contains(
            "ratelockr_policy_decisions_total{policy=\"api\",result=\"shadow_denied\"} 0"
        ));
        m.policy_decided(
            "api",
            PolicyOutcome::ShadowDenied,
            Duration::from_micros(50),
        );
        m.policy_decided("api", PolicyOutcome::Allowed, Duration::from_micros(50));
        m.policy_reloaded(false);
        assert_eq!(m.policy_decisions("api", PolicyOutcome::ShadowDenied), 1);
        assert_eq!(m.policy_decisions("api", PolicyOutcome::Denied), 0);
        assert_eq!((m.policy_reloads(true), m.policy_reloads(false)), (0, 1));
        assert!(m
            .render()
            .contains("ratelockr_policy_decisions_total{policy=\"api\",result=\"allowed\"} 1"));
    }

    #[test]
    fn held_rules_add_up_and_leave_with_their_owner() {
        let m = Metrics::new();
        let first = m.hold_active_rules(2);
        let second = m.hold_active_rules(3);
        assert!(m.render().contains("ratelockr_active_rules 5"));
        drop(first);
        assert!(m.render().contains("ratelockr_active_rules 3"));
        drop(second);
        assert!(m.render().contains("ratelockr_active_rules 0"));
    }
}
