//! A simulation in the app: started in the background from the form (one at a time, kept in
//! the run history from its start), observed through [`crate::relay`], cancelled, and its end
//! kept.

use super::{lock, AppCore};
use crate::connection::Connection;
use crate::error::{AppError, ErrorCode};
use crate::history;
use crate::records::Columns;
use crate::relay::Relay;
use crate::sim::{SimEvents, SimFinished, SimProgress, SimRequest, SimStatus};
use ratelockr::telemetry::now_ms;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The most records (requests × rules) a run may have for its columns to be kept in memory
/// after it ends: about 40 MB.
const MAX_CACHED_RECORDS: u64 = 1_000_000;

/// A run's name when the form gives none: what ran, on what traffic (cut to fit).
fn default_run_name(spec: &ratelockr_lab::sim::SimSpec) -> String {
    spec.describe()
        .chars()
        .take(history::MAX_NAME_CHARS)
        .collect()
}

impl AppCore {
    /// Starts a run in the background (call it within a Tokio runtime); its events go to
    /// `events`. Only one run at a time. The run is kept in the history from its start.
    pub fn sim_start(
        self: &Arc<Self>,
        request: &SimRequest,
        events: Arc<dyn SimEvents>,
    ) -> Result<SimStatus, AppError> {
        let mut request = request.clone();
        // The seed actually used is kept, so the run can be repeated from the history.
        request.seed.get_or_insert_with(now_ms);
        let mut spec = request.to_spec(
            |name| lock(&self.rules).get(name).cloned(),
            |name| self.policy(name),
        )?;
        let name = match &request.name {
            Some(name) => history::valid_name(name)?,
            None => default_run_name(&spec),
        };
        let cancel = CancellationToken::new();
        let progress = Arc::new(Mutex::new(None));
        let id = {
            let mut slot = lock(&self.sim);
            if slot.cancel.is_some() {
                return Err(AppError::new(
                    ErrorCode::SimulationRunning,
                    "a simulation is already running; cancel it first",
                ));
            }
            let mut history = lock(&self.history);
            let id = history.next_id();
            if !request.continue_state {
                spec.scope = Some(ratelockr_lab::sim::SimSpec::fresh_scope(&id));
            }
            history.begin(&id, name, request.clone(), spec.clone())?;
            slot.cancel = Some(cancel.clone());
            slot.rules = spec
                .targets
                .iter()
                .map(|t| t.rule.name().to_string())
                .collect();
            slot.progress = progress.clone();
            slot.error = None;
            id
        };
        let core = self.clone();
        let conn = self.connection();
        tokio::spawn(async move {
            let result = core
                .run(&conn, &spec, &id, events.clone(), &progress, cancel)
                .await;
            let finished = core.finish_run(&id, result);
            events.finished(&finished);
        });
        Ok(self.sim_status())
    }

    /// Keeps a run's ending in the history, then frees the simulator.
    fn finish_run(
        &self,
        id: &str,
        result: Result<ratelockr_lab::sim::Report, AppError>,
    ) -> SimFinished {
        let error = result.as_ref().err().cloned();
        let (kept, summary) = {
            let mut history = lock(&self.history);
            let kept = history.finish(id, result);
            let summary = history.get(id).ok().and_then(|run| run.summary());
            (kept, summary)
        };
        let (warnings, error) = match kept {
            Ok(warnings) => (warnings, error),
            Err(err) => (Vec::new(), error.or(Some(err))),
        };
        let mut slot = lock(&self.sim);
        slot.cancel = None;
        slot.error = error.clone();
        SimFinished {
            summary,
            error,
            warnings,
        }
    }

    async fn run(
        &self,
        conn: &Connection,
        spec: &ratelockr_lab::sim::SimSpec,
        id: &str,
        events: Arc<dyn SimEvents>,
        progress: &Mutex<Option<SimProgress>>,
        cancel: CancellationToken,
    ) -> Result<ratelockr_lab::sim::Report, AppError> {
        let csv_path = lock(&self.history).records_path(id);
        let mut sink = ratelockr_lab::export::CsvSink::create(&csv_path)
            .map_err(|e| AppError::new(ErrorCode::Export, e.to_string()))?;
        let mut relay = Relay::new(
            events,
            spec.targets
                .first()
                .map(|t| t.rule.name().to_string())
                .unwrap_or_default(),
            progress,
        );
        // Runs small enough to keep in memory keep their columns for the run chart.
        let records = spec
            .workload
            .planned_requests()
            .map(|n| n.saturating_mul(spec.targets.len() as u64));
        if records.is_some_and(|n| n <= MAX_CACHED_RECORDS) && spec.workload.retry.is_none() {
            relay = relay.with_columns(Columns::new(id, spec, 0));
        }
        // The backend stays alive (an embedded server, say) for the run even if the user
        // switches Redis meanwhile.
        let _backend = conn.backend.clone();
        let report =
            ratelockr_lab::sim::run(&conn.limiter, spec, Some(&mut sink), &relay, cancel).await;
        // The last cue goes out after the last record and before `sim-finished`, so the live
        // chart's final fetch sees the whole run.
        relay.flush();
        let report = report?;
        let columns = relay
            .take_columns()
            .and_then(|c| c.finish(report.duration_ms).ok());
        *lock(&self.last_columns) = columns;
        Ok(report)
    }

    pub fn sim_cancel(&self) -> SimStatus {
        if let Some(cancel) = &lock(&self.sim).cancel {
            cancel.cancel();
        }
        self.sim_status()
    }

    pub fn sim_status(&self) -> SimStatus {
        let slot = lock(&self.sim);
        let progress = *lock(&slot.progress);
        let last = lock(&self.history).latest().and_then(|run| run.summary());
        SimStatus {
            running: slot.cancel.is_some(),
            rules: slot.rules.clone(),
            progress,
            last,
            error: slot.error.clone(),
        }
    }
}
