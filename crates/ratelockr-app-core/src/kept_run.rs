//! A simulation as the run history keeps it (`runs/<id>/run.json`): the form as it was
//! started, what the engine ran, its report, name and status; and the run as the history list
//! shows it. A replay's counterpart is [`crate::kept_replay`].

use crate::error::AppError;
use crate::sim::SimRequest;
use crate::summary::{RunStatus, RunSummary};
use ratelockr::Rule;
use ratelockr_lab::sim::{Report, SimSpec};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One run as stored in `run.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: String,
    pub name: String,
    pub created_ms: u64,
    pub status: RunStatus,
    /// The form as it was started (with the seed actually used).
    pub request: SimRequest,
    /// What the engine ran: workload, rules, key namespace.
    pub spec: SimSpec,
    pub report: Option<Report>,
    pub error: Option<AppError>,
}

/// A rule a run decided with, and whether it was the naive demo limiter; or a policy (then
/// `rule` is its first limit under its name).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunTarget {
    pub rule: Rule,
    pub naive: bool,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<ratelockr::Policy>,
}

impl RunTarget {
    pub fn of(target: &ratelockr_lab::sim::Target) -> Self {
        RunTarget {
            rule: target.rule.clone(),
            naive: target.naive,
            policy: target.policy.clone(),
        }
    }
}

/// A run as the history list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunInfo {
    pub id: String,
    pub name: String,
    #[ts(type = "number")]
    pub created_ms: u64,
    pub status: RunStatus,
    /// The workload in words.
    pub workload: String,
    pub request: SimRequest,
    pub targets: Vec<RunTarget>,
    /// True when the run had its own key namespace (every limiter started full).
    pub fresh_state: bool,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<RunSummary>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
    /// Bytes on disk, records included.
    #[ts(type = "number")]
    pub bytes: u64,
}

impl StoredRun {
    pub fn summary(&self) -> Option<RunSummary> {
        self.report
            .as_ref()
            .map(|r| RunSummary::new(&self.id, &self.name, self.status, r, &self.spec.sweep))
    }

    /// The run as the history list shows it; `bytes` on disk, records included.
    pub fn info(&self, bytes: u64) -> RunInfo {
        RunInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            created_ms: self.created_ms,
            status: self.status,
            workload: self.spec.describe(),
            request: self.request.clone(),
            targets: self.spec.targets.iter().map(RunTarget::of).collect(),
            fresh_state: self.spec.scope.is_some(),
            summary: self.summary(),
            error: self.error.clone(),
            bytes,
        }
    }
}
