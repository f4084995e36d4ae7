//! How a run ended and what it came to: the status the run history keeps for simulations and
//! replays alike, and a simulation's summary table. Below both the simulator's and the
//! history's modules, which share it.

use ratelockr_lab::sim;
use ratelockr_lab::sweep::{Bound, SweepAxis, SweepChoice, SweepPoint};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One row of the summary table.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SummaryRow {
    pub rule: String,
    // Written as its label (`token_bucket`, ..., `naive_get_set`, `policy`): a string to the UI.
    #[ts(type = "string")]
    pub algorithm: sim::Subject,
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
    /// A policy: its denials (a shadow policy's would-be denials) by the limit that decided.
    #[ts(optional, type = "Record<string, number>")]
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub denied_by: std::collections::BTreeMap<String, u64>,
    /// A shadow policy: requests admitted that its limits denied.
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shadow_denied: u64,
    /// The most admitted for one client key in any window of the rule's length, against the
    /// rule's limit, and where: a boundary burst as a number. Absent when nothing passed.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_window: Option<sim::PeakWindow>,
    /// A run with holds: the most requests one client key had in flight at once.
    #[ts(optional, type = "number")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_flight: Option<u64>,
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
    /// A sweep's configurations (one per row, in grid order) with what each denied; absent
    /// outside a sweep.
    #[ts(optional, as = "Option<Vec<SweepPoint>>")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepPoint>,
    /// The smallest configuration that denies at most [`SWEEP_MAX_DENIED_PCT`] of requests
    /// (or the one that denies the fewest), with the sentence the run card shows.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_choice: Option<SweepChoice>,
}

/// The bound of a sweep's suggestion in the app: at most 1 % of requests denied, as the CLI's
/// default.
pub const SWEEP_MAX_DENIED_PCT: f64 = 1.0;

impl RunSummary {
    /// `axes`: the run's sweep (empty outside one), whose order ranks configurations.
    pub fn new(
        id: &str,
        name: &str,
        status: RunStatus,
        report: &sim::Report,
        axes: &[SweepAxis],
    ) -> Self {
        RunSummary {
            sweep: report.sweep.clone(),
            sweep_choice: SweepChoice::choose(
                &report.sweep,
                axes,
                Bound::Requests,
                SWEEP_MAX_DENIED_PCT,
            ),
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
                    algorithm: t.algorithm,
                    naive: t.naive,
                    requests: t.requests,
                    allowed: t.allowed,
                    denied: t.denied,
                    fail_open: t.fail_open,
                    retries: t.retries,
                    over_admitted: t.over_admitted,
                    denied_by: t.denied_by.clone(),
                    shadow_denied: t.shadow_denied,
                    peak_window: t.peak_window.clone(),
                    peak_in_flight: t.peak_in_flight.as_ref().map(|p| p.count),
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}
