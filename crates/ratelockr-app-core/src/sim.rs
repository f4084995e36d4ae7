//! The simulator panel's side: a request from the form, turned into the engine's `SimSpec`
//! through the engine's own workload description (`ratelockr::sim::WorkloadSpec`, the one the
//! CLI uses too: the same defaults and refusals); the run's progress and result as the UI
//! shows them.

use super::coalesce::{Coalesce, EVENT_GAP};
use super::error::{AppError, ErrorCode};
use super::records::Columns;
use ratelockr::sim::{self, Pattern, Record, Retry, SimObserver, SimSpec, Workload, WorkloadSpec};
use ratelockr::Rule;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

/// Rule names of "compare all five" start with this.
pub const COMPARE_PREFIX: &str = "compare-";

/// What to run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimTarget {
    /// One of the user's rules.
    Rule { name: String },
    /// The five algorithms side by side with equal nominal limits: `limit` per `window_ms`.
    Compare {
        #[ts(type = "number")]
        limit: u64,
        #[ts(type = "number")]
        window_ms: u64,
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
            ..WorkloadSpec::default()
        }
        .with_pattern(&self.pattern);
        Ok(described.workload()?)
    }

    /// The engine's spec; `lookup` finds a user's rule by name. The key namespace (fresh or
    /// shared) is the caller's to set, since a fresh one is named after the run.
    pub fn to_spec(&self, lookup: impl Fn(&str) -> Option<Rule>) -> Result<SimSpec, AppError> {
        let workload = self.to_workload()?;
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
    /// Of `requests`, the retries of denied requests (a retry storm's extra load).
    #[ts(type = "number")]
    pub retries: u64,
    /// Admissions beyond what the rule could ever allow: 0 for a correct limiter.
    #[ts(type = "number")]
    pub over_admitted: u64,
    /// The median round trip of one decision as the simulated client saw it: sending to
    /// reply, including queueing in the client and on the connection (and, for the first
    /// decisions, connecting and loading the script). Not Redis's own time: see
    /// `RunSummary.redis_cost`.
    #[ts(type = "number")]
    pub latency_p50_us: u64,
    /// The 99th percentile of the same client-observed round trip.
    #[ts(type = "number")]
    pub latency_p99_us: u64,
}

/// A finished (or cancelled) run.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunSummary {
    /// The run's id in the history.
    pub id: String,
    /// The run's name in the history.
    pub name: String,
    pub status: RunStatus,
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
    /// Redis's own time in EVALSHA over the run (INFO commandstats before and after; counts
    /// every client of that Redis). Absent when Redis could not be read.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_cost: Option<ratelockr::commandstats::RedisCost>,
}

impl RunSummary {
    pub fn new(id: &str, name: &str, status: RunStatus, report: &sim::Report) -> Self {
        RunSummary {
            id: id.to_string(),
            name: name.to_string(),
            status,
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
                    retries: t.retries,
                    over_admitted: t.over_admitted,
                    latency_p50_us: t.latency_p50_us,
                    latency_p99_us: t.latency_p99_us,
                })
                .collect(),
            rules: report.targets.iter().map(|t| t.rule.clone()).collect(),
            redis_cost: report.redis_cost,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going (or the app stopped during it: see `Failed`).
    Running,
    Finished,
    /// Cancelled by the user: the records cover the requests sent until then.
    Cancelled,
    /// Stopped by an error (or by the app ending mid-run); the records so far are kept.
    Failed,
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

/// Turns the engine's observer calls into [`SimEvents`], counting fail-open decisions and
/// coalescing the per-decision cue to one per `EVENT_GAP` ([`super::coalesce`]).
pub(crate) struct Relay<'a> {
    events: Arc<dyn SimEvents>,
    /// Every request yields one record per target; the cue counts the first target's.
    first_rule: String,
    fail_open: AtomicU64,
    latest: &'a std::sync::Mutex<Option<SimProgress>>,
    /// Emits happen under this lock, so a flush's cue is ordered after every earlier one.
    cue: Arc<Mutex<Coalesce>>,
    /// Progress goes to the window at most once per `EVENT_GAP`; the latest is always kept
    /// (`latest`), and `sim_status` after `sim-finished` shows the final one.
    progress_gate: Mutex<Coalesce>,
    ticker: CancellationToken,
    /// The run's records in columns, built as they come (see [`Relay::with_columns`]).
    columns: Option<Mutex<Columns>>,
}

impl<'a> Relay<'a> {
    /// A relay with its cue ticker running (call within a Tokio runtime).
    pub fn new(
        events: Arc<dyn SimEvents>,
        first_rule: String,
        latest: &'a std::sync::Mutex<Option<SimProgress>>,
    ) -> Self {
        let cue = Arc::new(Mutex::new(Coalesce::new(EVENT_GAP)));
        let ticker = CancellationToken::new();
        let (tick_cue, tick_events, stop) = (cue.clone(), events.clone(), ticker.clone());
        tokio::spawn(async move {
            let mut frames = tokio::time::interval(EVENT_GAP);
            frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = frames.tick() => {
                        let mut cue = tick_cue.lock().unwrap_or_else(|e| e.into_inner());
                        if cue.tick(Instant::now()) {
                            tick_events.refetch_stats();
                        }
                    }
                }
            }
        });
        Relay {
            events,
            first_rule,
            fail_open: AtomicU64::new(0),
            latest,
            cue,
            progress_gate: Mutex::new(Coalesce::new(EVENT_GAP)),
            ticker,
            columns: None,
        }
    }

    /// Also keeps the run's records in columns, so the run chart of the run that just ended
    /// needs no reading back of its CSV.
    pub fn with_columns(mut self, columns: Columns) -> Self {
        self.columns = Some(Mutex::new(columns));
        self
    }

    /// The columns kept, if any.
    pub fn take_columns(&mut self) -> Option<Columns> {
        self.columns
            .take()
            .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// Sends the owed cue, if any, and stops the ticker: call after the last record.
    pub fn flush(&self) {
        self.ticker.cancel();
        let mut cue = self.cue.lock().unwrap_or_else(|e| e.into_inner());
        if cue.flush(Instant::now()) {
            self.events.refetch_stats();
        }
    }
}

impl Drop for Relay<'_> {
    fn drop(&mut self) {
        self.ticker.cancel();
    }
}

impl SimObserver for Relay<'_> {
    fn on_start(&self, started_at_ms: u64) {
        if let Some(columns) = &self.columns {
            columns
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_start(started_at_ms);
        }
    }

    fn on_record(&self, record: &Record) {
        if let Some(columns) = &self.columns {
            columns
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&record.into());
        }
        if record.fail_open {
            self.fail_open.fetch_add(1, Ordering::Relaxed);
        }
        if record.rule == self.first_rule {
            let mut cue = self.cue.lock().unwrap_or_else(|e| e.into_inner());
            if cue.event(Instant::now()) {
                self.events.refetch_stats();
            }
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
        let mut gate = self.progress_gate.lock().unwrap_or_else(|e| e.into_inner());
        if gate.event(Instant::now()) {
            self.events.progress(&progress);
        }
    }
}
