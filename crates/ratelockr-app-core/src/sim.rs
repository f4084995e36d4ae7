//! The simulator panel's side: a request from the form, turned into the engine's `SimSpec`
//! through the engine's own workload description (`ratelockr_lab::sim::WorkloadSpec`, the one the
//! CLI uses too: the same defaults and refusals); the run's progress and result as the UI
//! shows them, and where its events go. The run itself is [`crate::app`]'s, observed by
//! [`crate::relay`].

use crate::error::{AppError, ErrorCode};
use crate::summary::RunSummary;
use ratelockr::Rule;
use ratelockr_lab::sim::{Pattern, Retry, SimSpec, Workload, WorkloadSpec};
use ratelockr_lab::sweep::SweepAxis;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Rule names of "compare all five" start with this.
pub const COMPARE_PREFIX: &str = "compare-";

/// What to run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimTarget {
    /// One of the user's rules.
    Rule { name: String },
    /// Policies of the policy book, side by side on the same traffic (one, or a policy and
    /// an edited copy).
    Policies { names: Vec<String> },
    /// The five algorithms side by side with equal nominal limits: `limit` per `window_ms`.
    /// With `in_flight`, instead a concurrency limit of that many requests in flight per key
    /// beside the token bucket (the slow endpoint demo: give the workload a hold). With
    /// `max_delay_ms`, instead that GCRA limit twice: denying, and delaying up to
    /// `max_delay_ms` instead (the smooth a burst demo).
    Compare {
        #[ts(type = "number")]
        limit: u64,
        #[ts(type = "number")]
        window_ms: u64,
        #[ts(optional, type = "number")]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_flight: Option<u64>,
        #[ts(optional, type = "number")]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_delay_ms: Option<u64>,
    },
}

/// The simulator form: every parameter of the CLI's `simulate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SimRequest {
    pub target: SimTarget,
    /// The arrival pattern with its own parameters. Burst sends `size` requests every
    /// `every_ms` and does not use `rps`; the others use `rps` as their base rate.
    pub pattern: Pattern,
    /// Offered requests per second; 0 = as fast as possible (constant pattern only).
    pub rps: f64,
    /// How many requests to send. Give at most one of `requests` and `duration_ms` (neither:
    /// 1000 requests, the CLI's default).
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// How long to send instead, in milliseconds.
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    pub servers: u32,
    /// Redis connections the servers share, taken in turn: a run about throughput (many
    /// servers on a few connections pipeline their calls). None: one connection per server,
    /// as separate app instances have (what the race demo shows).
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    pub keys: u32,
    /// Zipf-skewed keys (one hot client, `client-0`) instead of uniform.
    pub zipf: bool,
    /// The Zipf exponent when `zipf` is on (default 1.2; more is more skewed).
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_exponent: Option<f64>,
    /// What each request costs (default 1).
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// Seeds Poisson gaps and key choices (default: a run's from the clock, kept in the
    /// history; the preview's 1). The same seed and form give the same schedule and keys.
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Run the naive GET/SET limiter beside, to show the race the scripts remove.
    pub naive: bool,
    /// How long an admitted request is in flight, as the CLI's `--hold-ms` takes it: `80`,
    /// `uniform:20..200`, `lognormal:median=80,p99=900` (ms). A concurrency limit's lease is
    /// held that long; the run's records say how many were in flight.
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_ms: Option<String>,
    /// Decide on the rules' shared keys, continuing from whatever state earlier runs left.
    /// Default (false): the run gets its own key namespace and every limiter starts full.
    #[ts(optional, as = "Option<bool>")]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continue_state: bool,
    /// A retry storm: denied clients retry after `retry_after_ms`, up to `max_attempts`
    /// times per request (1 to 10).
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Every configuration of a grid around the rule (one or two of its parameters) on the
    /// same traffic, in one run: `[{param: "capacity", values: [10, 20, 50]}]`. A rule's run
    /// only, without the naive limiter.
    #[ts(optional, as = "Option<Vec<SweepAxis>>")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepAxis>,
    /// The run's name in the history (default: made from the workload).
    #[ts(optional)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl SimRequest {
    /// The engine's workload, validated, with the field named on refusal.
    pub fn to_workload(&self) -> Result<Workload, AppError> {
        let described = WorkloadSpec {
            rps: Some(self.rps),
            requests: self.requests,
            duration_ms: self.duration_ms,
            servers: Some(self.servers),
            keys: Some(self.keys),
            zipf: self.zipf,
            zipf_exponent: self.zipf_exponent,
            cost: self.cost,
            seed: self.seed,
            retry_attempts: self.retry.map(|r| r.max_attempts),
            hold_ms: self.hold_ms.clone(),
            ..WorkloadSpec::default()
        }
        .with_pattern(&self.pattern);
        Ok(described.workload()?)
    }

    /// The engine's spec; `lookup` finds a user's rule by name. The key namespace (fresh or
    /// shared) is the caller's to set, since a fresh one is named after the run.
    pub fn to_spec(
        &self,
        lookup: impl Fn(&str) -> Option<Rule>,
        policy: impl Fn(&str) -> Option<ratelockr::Policy>,
    ) -> Result<SimSpec, AppError> {
        let workload = self.to_workload()?;
        let spec = match &self.target {
            SimTarget::Policies { .. } if !self.sweep.is_empty() || self.naive => {
                return Err(AppError::new(
                    ErrorCode::InvalidWorkload,
                    "a policy runs on its own: no sweep and no naive limiter beside it",
                )
                .with_field("target"));
            }
            SimTarget::Policies { names } => {
                let policies = names
                    .iter()
                    .map(|name| {
                        policy(name).ok_or_else(|| {
                            AppError::new(
                                ErrorCode::PolicyNotFound,
                                format!("no policy named {name:?}"),
                            )
                            .with_field("target")
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if policies.is_empty() {
                    return Err(AppError::new(
                        ErrorCode::InvalidWorkload,
                        "choose a policy to simulate",
                    )
                    .with_field("target"));
                }
                SimSpec::policies(policies, workload)?
            }
            SimTarget::Rule { name } => {
                let rule = lookup(name).ok_or_else(|| {
                    AppError::new(ErrorCode::RuleNotFound, format!("no rule named {name:?}"))
                        .with_field("rule")
                })?;
                if self.sweep.is_empty() {
                    SimSpec::single(rule, workload, self.naive)?
                } else if self.naive {
                    return Err(AppError::new(
                        ErrorCode::InvalidWorkload,
                        "a sweep compares the rule's configurations; run the naive limiter without one",
                    )
                    .with_field("sweep"));
                } else {
                    SimSpec::sweep(&rule, self.sweep.clone(), workload)?
                }
            }
            SimTarget::Compare { .. } if !self.sweep.is_empty() => {
                return Err(AppError::new(
                    ErrorCode::InvalidWorkload,
                    "a sweep varies one rule: pick a rule, not the five algorithms",
                )
                .with_field("sweep"));
            }
            SimTarget::Compare {
                in_flight: Some(_), ..
            } if self.naive => {
                return Err(AppError::new(
                    ErrorCode::InvalidWorkload,
                    "the naive limiter races a window's count; run it without the in-flight limit",
                )
                .with_field("naive"));
            }
            SimTarget::Compare {
                in_flight: Some(_),
                max_delay_ms: Some(_),
                ..
            } => {
                return Err(AppError::new(
                    ErrorCode::InvalidWorkload,
                    "one demo at a time: the in-flight limit or the max delay, not both",
                )
                .with_field("max_delay_ms"));
            }
            SimTarget::Compare {
                max_delay_ms: Some(_),
                ..
            } if self.naive => {
                return Err(AppError::new(
                    ErrorCode::InvalidWorkload,
                    "the naive limiter races a window's count; run it without the max delay",
                )
                .with_field("naive"));
            }
            SimTarget::Compare {
                limit,
                window_ms,
                max_delay_ms: Some(delay),
                ..
            } => SimSpec::delay_beside_deny(COMPARE_PREFIX, *limit, *window_ms, *delay, workload)
                .map_err(|err| {
                AppError::new(ErrorCode::InvalidWorkload, err.to_string())
                    .with_field("max_delay_ms")
            })?,
            SimTarget::Compare {
                limit,
                window_ms,
                in_flight: Some(slots),
                ..
            } => SimSpec::in_flight_beside_rate(
                COMPARE_PREFIX,
                *slots,
                *limit,
                *window_ms,
                workload,
            )?,
            SimTarget::Compare {
                limit,
                window_ms,
                in_flight: None,
                max_delay_ms: None,
            } => SimSpec::compare(COMPARE_PREFIX, *limit, *window_ms, workload, self.naive)?,
        };
        let spec = SimSpec {
            connections: self.connections,
            ..spec
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// How far the current run is.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, TS)]
pub struct SimProgress {
    #[ts(type = "number")]
    pub sent: u64,
    #[ts(type = "number")]
    pub completed: u64,
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    #[ts(type = "number")]
    pub elapsed_ms: u64,
    /// Decisions of this run made without Redis.
    #[ts(type = "number")]
    pub fail_open: u64,
}

/// The simulator's state as the panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SimStatus {
    pub running: bool,
    /// The rules of the current (or last) run.
    pub rules: Vec<String>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<SimProgress>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<RunSummary>,
    /// Why the last run failed, if it did.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
}

/// The end of a run, as the `sim-finished` event carries it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SimFinished {
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<RunSummary>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
    /// What keeping the run cost: older runs dropped from the history to stay in bounds.
    pub warnings: Vec<String>,
}

/// Where a run's events go. The app emits them to the window; tests record them.
pub trait SimEvents: Send + Sync + 'static {
    /// The live chart's cue (design.md, "The live chart's refetch"): at once for the first
    /// decision, then at most once per `EVENT_GAP`, and always once after the last decision.
    fn refetch_stats(&self);
    fn progress(&self, progress: &SimProgress);
    fn finished(&self, finished: &SimFinished);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_endpoint(hold: &str) -> SimRequest {
        SimRequest {
            target: SimTarget::Compare {
                limit: 40,
                window_ms: 1000,
                in_flight: Some(10),
                max_delay_ms: None,
            },
            pattern: Pattern::Constant,
            rps: 40.0,
            requests: None,
            duration_ms: Some(3000),
            servers: 4,
            connections: None,
            keys: 1,
            zipf: false,
            zipf_exponent: None,
            cost: None,
            seed: Some(1),
            naive: false,
            hold_ms: Some(hold.into()),
            continue_state: false,
            retry: None,
            sweep: Vec::new(),
            name: None,
        }
    }

    #[test]
    fn an_in_flight_limit_runs_beside_the_token_bucket_on_the_workloads_hold() {
        let spec = slow_endpoint("lognormal:median=400,p99=1500")
            .to_spec(|_| None, |_| None)
            .expect("spec");
        let names: Vec<&str> = spec.targets.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["compare-token-bucket", "compare-concurrency"]);
        assert!(matches!(
            spec.targets[1].rule.algorithm(),
            ratelockr::Algorithm::Concurrency { limit: 10, .. }
        ));
        assert_eq!(
            spec.workload.hold.map(|h| h.to_string()).as_deref(),
            Some("lognormal:median=400,p99=1500")
        );
        // A bad hold is named by its field; the naive limiter has no window to race here.
        let err = slow_endpoint("slow")
            .to_spec(|_| None, |_| None)
            .expect_err("bad hold");
        assert_eq!(err.field.as_deref(), Some("hold_ms"), "{err:?}");
        assert!(err.message.contains("\"slow\""), "{}", err.message);
        let naive = SimRequest {
            naive: true,
            ..slow_endpoint("80")
        };
        let err = naive.to_spec(|_| None, |_| None).expect_err("naive");
        assert_eq!(err.field.as_deref(), Some("naive"));
    }

    #[test]
    fn a_max_delay_runs_the_gcra_limit_denying_beside_it_delaying() {
        let smooth = |max_delay_ms| SimRequest {
            target: SimTarget::Compare {
                limit: 10,
                window_ms: 1000,
                in_flight: None,
                max_delay_ms,
            },
            hold_ms: None,
            ..slow_endpoint("80")
        };
        let spec = smooth(Some(2000))
            .to_spec(|_| None, |_| None)
            .expect("spec");
        let names: Vec<&str> = spec.targets.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["compare-gcra", "compare-gcra-delayed"]);
        let delays: Vec<u64> = (spec.targets.iter())
            .map(|t| t.policy.as_ref().expect("a policy").max_delay_ms())
            .collect();
        assert_eq!(delays, [0, 2000]);
        assert!(matches!(
            spec.targets[1].policy.as_ref().expect("a policy").limits()[0].algorithm(),
            ratelockr::Algorithm::Gcra {
                limit: 10,
                window_ms: 1000,
                burst: 10
            }
        ));
        // One demo at a time, and none beside the naive limiter: each named by its field.
        let both = SimRequest {
            target: SimTarget::Compare {
                limit: 10,
                window_ms: 1000,
                in_flight: Some(2),
                max_delay_ms: Some(2000),
            },
            ..smooth(None)
        };
        let err = both.to_spec(|_| None, |_| None).expect_err("both");
        assert_eq!(err.field.as_deref(), Some("max_delay_ms"), "{err:?}");
        let naive = SimRequest {
            naive: true,
            ..smooth(Some(2000))
        };
        let err = naive.to_spec(|_| None, |_| None).expect_err("naive");
        assert_eq!(err.field.as_deref(), Some("naive"));
        let err = smooth(Some(u64::MAX))
            .to_spec(|_| None, |_| None)
            .expect_err("too long");
        assert_eq!(err.field.as_deref(), Some("max_delay_ms"), "{err:?}");
    }
}
