//! The simulator panel's side: a request from the form, turned into the engine's `SimSpec`;
//! the run's progress and result as the UI shows them.

use super::error::{AppError, ErrorCode};
use ratelockr::sim::{
    self, KeyDistribution, Length, Pattern, Record, SimObserver, SimSpec, Workload,
};
use ratelockr::Rule;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use ts_rs::TS;

/// Rule names of "compare all three" start with this.
pub const COMPARE_PREFIX: &str = "compare-";

/// What to run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimTarget {
    /// One of the user's rules.
    Rule { name: String },
    /// The three algorithms side by side with equal nominal limits: `limit` per `window_ms`.
    Compare {
        #[ts(type = "number")]
        limit: u64,
        #[ts(type = "number")]
        window_ms: u64,
    },
}

/// How arrivals are spaced (the engine's patterns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimPattern {
    Constant,
    Poisson,
    Burst {
        size: u32,
        #[ts(type = "number")]
        every_ms: u64,
    },
    Ramp {
        to_rps: f64,
    },
    Spike {
        multiplier: f64,
        #[ts(type = "number")]
        start_ms: u64,
        #[ts(type = "number")]
        length_ms: u64,
    },
}

/// The simulator form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SimRequest {
    pub target: SimTarget,
    pub pattern: SimPattern,
    /// Offered requests per second; 0 = as fast as possible.
    pub rps: f64,
    #[ts(type = "number")]
    pub requests: u64,
    pub servers: u32,
    pub keys: u32,
    /// Zipf-skewed keys (one hot client) instead of uniform.
    pub zipf: bool,
    /// Run the naive GET/SET limiter beside, to show the race the scripts remove.
    pub naive: bool,
}

impl SimRequest {
    /// The engine's spec; `lookup` finds a user's rule by name.
    pub fn to_spec(&self, lookup: impl Fn(&str) -> Option<Rule>) -> Result<SimSpec, AppError> {
        let pattern = match self.pattern.clone() {
            SimPattern::Constant => Pattern::Constant,
            SimPattern::Poisson => Pattern::Poisson,
            SimPattern::Burst { size, every_ms } => Pattern::Burst { size, every_ms },
            SimPattern::Ramp { to_rps } => Pattern::Ramp { to_rps },
            SimPattern::Spike {
                multiplier,
                start_ms,
                length_ms,
            } => Pattern::Spike {
                multiplier,
                start_ms,
                length_ms,
            },
        };
        let keys = if self.zipf {
            KeyDistribution::Zipf {
                keys: self.keys,
                exponent: 1.2,
            }
        } else {
            KeyDistribution::Uniform { keys: self.keys }
        };
        let workload = Workload {
            pattern,
            rps: self.rps,
            length: Length::Requests(self.requests),
            servers: self.servers,
            keys,
            cost: 1,
            seed: ratelockr::telemetry::now_ms(),
            retry: None,
        };
        let spec = match &self.target {
            SimTarget::Rule { name } => {
                let rule = lookup(name).ok_or_else(|| {
                    AppError::new(ErrorCode::RuleNotFound, format!("no rule named {name:?}"))
                        .with_field("rule")
                })?;
                SimSpec::single(rule, workload, self.naive)?
            }
            SimTarget::Compare { limit, window_ms } => {
                SimSpec::compare(COMPARE_PREFIX, *limit, *window_ms, workload, self.naive)?
            }
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

/// One row of the summary table.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SummaryRow {
    pub rule: String,
    pub algorithm: String,
    pub naive: bool,
    #[ts(type = "number")]
    pub requests: u64,
    #[ts(type = "number")]
    pub allowed: u64,
    #[ts(type = "number")]
    pub denied: u64,
    #[ts(type = "number")]
    pub fail_open: u64,
    /// Admissions beyond what the rule could ever allow: 0 for a correct limiter.
    #[ts(type = "number")]
    pub over_admitted: u64,
    #[ts(type = "number")]
    pub latency_p50_us: u64,
    #[ts(type = "number")]
    pub latency_p99_us: u64,
}

/// A finished (or cancelled) run.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunSummary {
    pub workload: String,
    #[ts(type = "number")]
    pub duration_ms: u64,
    pub cancelled: bool,
    #[ts(type = "number")]
    pub requests_sent: u64,
    pub achieved_rps: f64,
    pub rows: Vec<SummaryRow>,
    /// The rules the run decided with, for the live chart.
    pub rules: Vec<String>,
}

impl RunSummary {
    pub fn from_report(report: &sim::Report) -> Self {
        RunSummary {
            workload: report.workload.clone(),
            duration_ms: report.duration_ms,
            cancelled: report.cancelled,
            requests_sent: report.requests_sent,
            achieved_rps: report.achieved_rps,
            rows: report
                .targets
                .iter()
                .map(|t| SummaryRow {
                    rule: t.rule.clone(),
                    algorithm: t.algorithm.clone(),
                    naive: t.naive,
                    requests: t.requests,
                    allowed: t.allowed,
                    denied: t.denied,
                    fail_open: t.fail_open,
                    over_admitted: t.over_admitted,
                    latency_p50_us: t.latency_p50_us,
                    latency_p99_us: t.latency_p99_us,
                })
                .collect(),
            rules: report.targets.iter().map(|t| t.rule.clone()).collect(),
        }
    }
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
}

/// Where a run's events go. The app emits them to the window; tests record them.
pub trait SimEvents: Send + Sync + 'static {
    /// Once per decided request: the live chart's cue (design.md, "The live chart's refetch").
    fn refetch_stats(&self);
    fn progress(&self, progress: &SimProgress);
    fn finished(&self, finished: &SimFinished);
}

/// Turns the engine's observer calls into [`SimEvents`], counting fail-open decisions.
pub(crate) struct Relay<'a> {
    pub events: &'a dyn SimEvents,
    /// Every request yields one record per target; the cue goes out once per request, on the
    /// first target's record.
    pub first_rule: String,
    pub fail_open: AtomicU64,
    pub latest: &'a std::sync::Mutex<Option<SimProgress>>,
}

impl SimObserver for Relay<'_> {
    fn on_record(&self, record: &Record) {
        if record.fail_open {
            self.fail_open.fetch_add(1, Ordering::Relaxed);
        }
        if record.rule == self.first_rule {
            self.events.refetch_stats();
        }
    }

    fn on_progress(&self, p: &sim::Progress) {
        let progress = SimProgress {
            sent: p.sent,
            completed: p.completed,
            planned: p.planned,
            elapsed_ms: p.elapsed_ms,
            fail_open: self.fail_open.load(Ordering::Relaxed),
        };
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
        self.events.progress(&progress);
    }
}
