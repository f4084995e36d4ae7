//! Tuning aids over the engine: resetting a rule's state, the HTTP answer a decision implies
//! (the decision inspector), and the shape of a workload before it runs.

use super::error::AppError;
use super::sim::SimRequest;
use super::AppCore;
use ratelockr::headers::{http_answer, HttpAnswer};
use ratelockr::sim::Length;
use ratelockr::{Decision, ResetError, Rule};
use serde::Serialize;
use ts_rs::TS;

/// What a reset did.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ResetResult {
    pub rule: String,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Redis keys deleted.
    #[ts(type = "number")]
    pub deleted: u64,
}

/// The offered traffic of a workload, binned, from the engine's own schedule.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct WorkloadPreview {
    /// The bin width (the run chart's rule for a run this long).
    #[ts(type = "number")]
    pub bin_ms: u64,
    /// Requests offered per bin (first tries; a retry storm adds retries on top).
    pub offered: Vec<u32>,
    /// Requests the schedule holds; absent for as fast as possible bounded by time.
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    /// How long the schedule lasts (the last arrival, or the duration asked for).
    #[ts(type = "number")]
    pub duration_ms: u64,
    /// The workload in words.
    pub description: String,
    /// Why there is no shape: as fast as possible has no schedule, the servers pace it.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The most bins a preview returns, whatever the run's length.
const MAX_PREVIEW_BINS: u64 = 2_000;

impl AppCore {
    /// Deletes `rule`'s limiter state: one client key's, or with `None` every key's.
    pub async fn limiter_reset(
        &self,
        rule: &str,
        key: Option<&str>,
    ) -> Result<ResetResult, AppError> {
        let limiter = self.connection().limiter;
        let deleted = limiter.reset(rule, key).await.map_err(|e| match e {
            ResetError::Rule(err) => {
                let mut err = AppError::from(err);
                if err.field.as_deref() == Some("name") {
                    err.field = Some("rule".into());
                }
                err
            }
            ResetError::Redis(failure) => AppError::from(failure),
        })?;
        Ok(ResetResult {
            rule: rule.to_string(),
            key: key.map(str::to_string),
            deleted,
        })
    }
}

/// The HTTP answer (status and headers) `decision` implies under `rule`.
pub fn decision_headers(rule: &Rule, decision: &Decision) -> HttpAnswer {
    http_answer(rule, decision)
}

/// Bins the workload's schedule. The seed defaults to 1 when the form gives none, so the
/// preview of a Poisson or Zipf workload is stable while the form is edited.
pub fn workload_preview(request: &SimRequest) -> Result<WorkloadPreview, AppError> {
    let mut request = request.clone();
    request.seed.get_or_insert(1);
    let workload = request.to_workload()?;
    let description = workload.describe();
    let planned = workload.planned_requests();
    if workload.rps == 0.0 {
        return Ok(WorkloadPreview {
            bin_ms: ratelockr::export::style::bin_ms(0),
            offered: Vec::new(),
            planned,
            duration_ms: 0,
            description,
            note: Some(
                "as fast as possible: each server sends its next request when the last one is answered, so the shape depends on Redis".into(),
            ),
        });
    }
    let offsets: Vec<u64> = workload.schedule().map(|us| us / 1000).collect();
    let last = offsets.last().copied().unwrap_or(0);
    let duration_ms = match (workload.length, &workload.pattern) {
        (Length::DurationMs(ms), _) => ms,
        (_, ratelockr::sim::Pattern::Burst { every_ms, .. }) => last + every_ms,
        _ => last + (1000.0 / workload.rps).ceil() as u64,
    };
    let bin_ms =
        ratelockr::export::style::bin_ms(duration_ms).max(duration_ms.div_ceil(MAX_PREVIEW_BINS));
    let bins = duration_ms.div_ceil(bin_ms).max(1) as usize;
    let mut offered = vec![0u32; bins];
    for t in offsets {
        let i = ((t / bin_ms) as usize).min(bins - 1);
        offered[i] = offered[i].saturating_add(1);
    }
    Ok(WorkloadPreview {
        bin_ms,
        offered,
        planned,
        duration_ms,
        description,
        note: None,
    })
}
