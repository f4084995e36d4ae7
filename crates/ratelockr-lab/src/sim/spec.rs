//! A simulation's specification: the workload, the limiters it is offered to ([`Target`]),
//! whose clock decides, and the run's key namespace. Built for one rule, for all five
//! algorithms side by side, or for a sweep of one rule's parameters (every configuration on
//! the same traffic), and checked before a run.

use super::error::SimError;
use super::workload::Workload;
use crate::subject::Subject;
use crate::sweep::{self, SweepAxis};
use ratelockr::policy::{Limit, Policy, PolicyError};
use ratelockr::rule::{Algorithm, AlgorithmKind, Rule, RuleError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One limiter under test: a rule's script, the naive limiter, or a policy's stacked
/// decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The rule decided; for a policy, its first limit under the policy's name (what the
    /// busiest window is measured on), while `policy` decides.
    pub rule: Rule,
    /// Decide with the naive GET/SET limiter instead of the rule's script.
    pub naive: bool,
    /// A sweep's configuration: the swept parameters' values (empty outside a sweep).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, f64>,
    /// A policy, decided all or nothing over its limits (its tiers' for matching keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
}

impl Target {
    /// A rule's script.
    pub fn rule(rule: Rule) -> Self {
        Target {
            rule,
            naive: false,
            params: BTreeMap::new(),
            policy: None,
        }
    }

    /// A policy's stacked decision.
    pub fn policy(policy: Policy) -> Self {
        let first = policy.limits()[0].algorithm();
        let rule = Rule::new(policy.name(), *first)
            .expect("a policy's name and limits are valid as a rule's");
        Target {
            rule,
            naive: false,
            params: BTreeMap::new(),
            policy: Some(policy),
        }
    }

    /// The name in records: the rule's, or the policy's.
    pub fn name(&self) -> &str {
        self.rule.name()
    }

    /// What its records are of: the rule's script, the naive limiter, or a policy.
    pub fn subject(&self) -> Subject {
        if self.naive {
            Subject::NaiveGetSet
        } else if self.policy.is_some() {
            Subject::Policy
        } else {
            self.rule.kind().into()
        }
    }

    /// Refuses a cost this target could never admit (a policy's: any limit of any tier).
    fn check_cost(&self, cost: u64) -> Result<(), SimError> {
        let Some(policy) = &self.policy else {
            return Ok(self.rule.check_cost(cost)?);
        };
        for limit in policy.all_limits() {
            let max = limit.algorithm().max_cost();
            if cost > max {
                return Err(SimError::InvalidWorkload {
                    parameter: "cost",
                    reason: format!(
                        "must be from 1 to {max} (policy {:?}, limit {:?}'s {}); a larger request could never pass",
                        policy.name(),
                        limit.name(),
                        limit.algorithm().max_cost_name()
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Whose clock decisions use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimClock {
    /// Each decision carries its send time (`now_ms`), so the records' times are the times the
    /// scripts decided at and the summaries' bounds are exact. The default.
    #[default]
    Client,
    /// The Redis server's clock, as in production.
    Server,
}

/// A simulation: a workload and the limiters it is offered to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimSpec {
    pub workload: Workload,
    pub targets: Vec<Target>,
    #[serde(default)]
    pub clock: SimClock,
    /// The run's own key namespace: clients are decided as `<scope>:<client key>` under each
    /// rule's tag, so the run starts from fresh limiter state whatever ran before, while its
    /// telemetry still counts under the rule. None: the rules' shared keys, continuing from
    /// whatever state they hold (what `check` and `serve` decide on).
    #[serde(default)]
    pub scope: Option<String>,
    /// The axes of a sweep (empty otherwise): the targets are its configurations, in grid
    /// order, and the report rates each ([`super::Report::sweep`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepAxis>,
    /// Redis connections the simulated servers share, for a run about throughput rather than
    /// the race: servers take them in turn and their calls pipeline on each. None: one
    /// connection per server, as separate app instances have (what the race demo needs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
}

impl SimSpec {
    /// `targets` on `workload`, on the simulated clock, in a fresh scope, no sweep, a
    /// connection per server.
    fn of(workload: Workload, targets: Vec<Target>) -> Self {
        SimSpec {
            workload,
            targets,
            clock: SimClock::default(),
            scope: None,
            sweep: Vec::new(),
            connections: None,
        }
    }

    /// One rule; with `naive`, the naive limiter runs beside it on the same traffic, under the
    /// rule's name with `-naive` appended.
    pub fn single(rule: Rule, workload: Workload, naive: bool) -> Result<Self, RuleError> {
        let mut targets = vec![Target::rule(rule.clone())];
        if naive {
            let naive_rule = Rule::new(format!("{}-naive", rule.name()), *rule.algorithm())?;
            targets.push(Target {
                naive: true,
                ..Target::rule(naive_rule)
            });
        }
        Ok(SimSpec::of(workload, targets))
    }

    /// All five algorithms with equal nominal limits: `limit` per `window_ms`. The windows and
    /// the counter take them as they are; the token bucket holds `limit` tokens and refills
    /// `limit` per window (`limit * 1000 / window_ms` per second); GCRA has burst `limit` and
    /// period `window_ms`. So all five admit the same long-run rate and the same burst. Rules
    /// are named `<prefix>` and the algorithm's CLI name (`token-bucket`, `gcra`,
    /// `sliding-window-log`, `sliding-window-counter`, `fixed-window`), and `<prefix>naive`
    /// with `naive`.
    pub fn compare(
        prefix: &str,
        limit: u64,
        window_ms: u64,
        workload: Workload,
        naive: bool,
    ) -> Result<Self, RuleError> {
        let name = |n: &str| format!("{prefix}{n}");
        let mut targets = Vec::new();
        for kind in AlgorithmKind::RATES {
            let algorithm = equal_limit(kind, limit, window_ms);
            targets.push(Target::rule(Rule::new(name(kind.cli_name()), algorithm)?));
        }
        if naive {
            targets.push(Target {
                naive: true,
                ..Target::rule(Rule::fixed_window(
                    name("naive"),
                    limit,
                    std::time::Duration::from_millis(window_ms),
                )?)
            });
        }
        Ok(SimSpec::of(workload, targets))
    }

    /// A concurrency limit of `slots` requests in flight per key beside a token bucket of
    /// `limit` per `window_ms` (as [`SimSpec::compare`] makes it), on the same traffic: with
    /// slow requests (a workload's hold) the rate limit lets requests pile up in flight while
    /// the concurrency limit holds them at `slots`. Rules are named `<prefix>token-bucket` and
    /// `<prefix>concurrency`; the leases live the kind's default unless released.
    pub fn in_flight_beside_rate(
        prefix: &str,
        slots: u64,
        limit: u64,
        window_ms: u64,
        workload: Workload,
    ) -> Result<Self, RuleError> {
        let slots = Algorithm::Concurrency {
            limit: slots,
            lease_ms: ratelockr::rule::DEFAULT_LEASE_MS,
        };
        let name = |kind: AlgorithmKind| format!("{prefix}{}", kind.cli_name());
        let rate = AlgorithmKind::TokenBucket;
        let targets = vec![
            Target::rule(Rule::new(name(rate), equal_limit(rate, limit, window_ms))?),
            Target::rule(Rule::new(name(AlgorithmKind::Concurrency), slots)?),
        ];
        Ok(SimSpec::of(workload, targets))
    }

    /// The same GCRA limit twice on the same traffic (the smooth a burst demo): `<prefix>gcra`
    /// denies what it cannot admit now, `<prefix>gcra-delayed` admits what would pass within
    /// `max_delay_ms` (a policy's delay instead of deny), recorded at its start time, so a
    /// spike's denials become admissions spread at the limit's pace. `limit` per `window_ms`
    /// with burst `limit`, as [`SimSpec::compare`] makes its GCRA; each a policy of that one
    /// limit, named `rate`.
    pub fn delay_beside_deny(
        prefix: &str,
        limit: u64,
        window_ms: u64,
        max_delay_ms: u64,
        workload: Workload,
    ) -> Result<Self, PolicyError> {
        let gcra = equal_limit(AlgorithmKind::Gcra, limit, window_ms);
        let policy = |suffix: &str| {
            let name = format!("{prefix}{}{suffix}", AlgorithmKind::Gcra.cli_name());
            Policy::new(name, vec![Limit::new("rate", gcra)?])
        };
        let targets = vec![
            Target::policy(policy("")?),
            Target::policy(policy("-delayed")?.with_max_delay_ms(max_delay_ms)?),
        ];
        Ok(SimSpec::of(workload, targets))
    }

    /// Every configuration of `axes` (one or two of `base`'s parameters, at most
    /// [`sweep::MAX_POINTS`]) on the same traffic: one target each, named
    /// `<rule>.<param>-<value>…`.
    pub fn sweep(base: &Rule, axes: Vec<SweepAxis>, workload: Workload) -> Result<Self, SimError> {
        let grid = sweep::grid(base, &axes).map_err(|err| SimError::InvalidWorkload {
            parameter: "sweep",
            reason: err.to_string(),
        })?;
        let targets = grid
            .into_iter()
            .map(|point| Target {
                params: point.params,
                ..Target::rule(point.rule)
            })
            .collect();
        Ok(SimSpec {
            sweep: axes,
            ..SimSpec::of(workload, targets)
        })
    }

    /// Policies side by side on the same traffic (a policy and an edited copy of it, say):
    /// each decided all or nothing over its limits, every key under its tier's. Names must
    /// differ.
    pub fn policies(policies: Vec<Policy>, workload: Workload) -> Result<Self, SimError> {
        let mut names = std::collections::BTreeSet::new();
        for policy in &policies {
            if !names.insert(policy.name()) {
                return Err(SimError::InvalidWorkload {
                    parameter: "policy",
                    reason: format!(
                        "{:?} is named twice: side by side, policies need names of their own",
                        policy.name()
                    ),
                });
            }
        }
        let targets = policies.into_iter().map(Target::policy).collect();
        Ok(SimSpec::of(workload, targets))
    }

    /// Checks the workload and that every target can admit the workload's cost.
    pub fn validate(&self) -> Result<(), SimError> {
        self.workload.validate()?;
        if self.targets.is_empty() {
            return Err(SimError::InvalidWorkload {
                parameter: "targets",
                reason: "name at least one rule".into(),
            });
        }
        for target in &self.targets {
            target.check_cost(self.workload.cost)?;
        }
        if let Some(n) = self.connections {
            if !(1..=self.workload.servers).contains(&n) {
                return Err(SimError::InvalidWorkload {
                    parameter: "connections",
                    reason: format!(
                        "must be from 1 to the {} servers they are shared by, got {n}",
                        self.workload.servers
                    ),
                });
            }
        }
        if let Some(scope) = &self.scope {
            if scope.is_empty() || scope.len() > 64 || scope.contains(['{', '}', '*', '?']) {
                return Err(SimError::InvalidWorkload {
                    parameter: "scope",
                    reason: format!(
                        "must be 1 to 64 characters without braces, * or ?, got {scope:?}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// A fresh key namespace for one run, from its id: `run-<id>`.
    pub fn fresh_scope(run_id: &str) -> String {
        format!("run-{run_id}")
    }

    /// The name the limiter decides `client` as in a run with `scope`: `<scope>:<client>`, or
    /// the client's own key in the shared namespace.
    pub fn decided_as(scope: Option<&str>, client: &str) -> String {
        match scope {
            Some(scope) => format!("{scope}:{client}"),
            None => client.to_string(),
        }
    }

    /// The title of charts and summaries.
    pub fn describe(&self) -> String {
        if !self.sweep.is_empty() {
            let params: Vec<&str> = self.sweep.iter().map(|a| a.param.as_str()).collect();
            return format!(
                "{} swept over {} ({} configurations): {}",
                self.targets.first().map_or("", |t| t.subject().as_str()),
                params.join(" × "),
                self.targets.len(),
                self.workload.describe()
            );
        }
        let policies: Vec<&str> = self
            .targets
            .iter()
            .filter_map(|t| t.policy.as_ref().map(Policy::name))
            .collect();
        let what = match self.targets.iter().filter(|t| !t.naive).count() {
            _ if !policies.is_empty() => format!("policy {}", policies.join(" beside ")),
            1 => format!(
                "{} ({})",
                self.targets[0].rule.name(),
                self.targets[0].subject()
            ),
            n => format!("{n} algorithms compared"),
        };
        let shared = match self.connections {
            Some(1) => ", 1 shared Redis connection".to_string(),
            Some(n) => format!(", {n} shared Redis connections"),
            None => String::new(),
        };
        format!("{what}: {}{shared}", self.workload.describe())
    }
}

/// `kind` at `limit` per `window_ms`, as [`SimSpec::compare`] sets all five side by side: the
/// windows and the counter take them as they are; the token bucket holds `limit` tokens and
/// refills `limit` per window; GCRA has burst `limit` and period `window_ms`.
fn equal_limit(kind: AlgorithmKind, limit: u64, window_ms: u64) -> Algorithm {
    match kind {
        AlgorithmKind::TokenBucket => Algorithm::TokenBucket {
            capacity: limit,
            refill_per_sec: limit as f64 * 1000.0 / window_ms.max(1) as f64,
        },
        AlgorithmKind::Gcra => Algorithm::Gcra {
            limit,
            window_ms,
            burst: limit,
        },
        AlgorithmKind::SlidingWindowLog => Algorithm::SlidingWindowLog { limit, window_ms },
        AlgorithmKind::SlidingWindowCounter => Algorithm::SlidingWindowCounter { limit, window_ms },
        AlgorithmKind::FixedWindow => Algorithm::FixedWindow { limit, window_ms },
        AlgorithmKind::Concurrency | AlgorithmKind::Calendar => {
            unreachable!("not a rate algorithm")
        }
    }
}
