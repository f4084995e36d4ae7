//! Tuning aids over the engine: resetting a rule's state, the HTTP answer a decision implies
//! (the decision inspector), and the shape of a workload before it runs.

use super::AppCore;
use crate::error::AppError;
use crate::sim::SimRequest;
use ratelockr::headers::{http_answer, HttpAnswer};
use ratelockr::{Decision, ResetError, Rule};
use ratelockr_lab::sim::Preview;
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

/// Bins the workload's schedule. The seed defaults to 1 when the form gives none (the
/// engine's default), so the preview of a Poisson or Zipf workload is stable while the form is
/// edited.
pub fn workload_preview(request: &SimRequest) -> Result<WorkloadPreview, AppError> {
    let workload = request.to_workload()?;
    let description = workload.describe();
    let planned = workload.planned_requests();
    let Some(Preview {
        bin_ms,
        offered,
        duration_ms,
    }) = Preview::of(&workload)
    else {
        return Ok(WorkloadPreview {
            bin_ms: ratelockr_lab::export::style::bin_ms(0),
            offered: Vec::new(),
            planned,
            duration_ms: 0,
            description,
            note: Some(
                "as fast as possible: each server sends its next request when the last one is answered, so the shape depends on Redis".into(),
            ),
        });
    };
    Ok(WorkloadPreview {
        bin_ms,
        offered,
        planned,
        duration_ms,
        description,
        note: None,
    })
}
