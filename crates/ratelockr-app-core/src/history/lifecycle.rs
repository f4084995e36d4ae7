//! An entry's life in the history: begun (running) when its simulation or replay starts,
//! ended (finished, cancelled or failed) when it stops, then the history kept within bounds.

use super::entry::{io_error, size_of, Entry, Kept};
use super::{not_a_replay, not_found, History};
use crate::error::AppError;
use crate::kept_replay::StoredReplay;
use crate::kept_run::StoredRun;
use crate::sim::SimRequest;
use crate::summary::RunStatus;
use ratelockr_lab::replay::ReplayReport;
use ratelockr_lab::sim::{Report, SimSpec};

impl History {
    /// Records a run that is starting (its records go to [`History::records_path`]).
    pub fn begin(
        &mut self,
        id: &str,
        name: String,
        request: SimRequest,
        spec: SimSpec,
    ) -> Result<(), AppError> {
        let dir = self.run_dir(id);
        std::fs::create_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let run = StoredRun {
            id: id.to_string(),
            name,
            created_ms: id
                .parse()
                .unwrap_or_else(|_| ratelockr::telemetry::now_ms()),
            status: RunStatus::Running,
            request,
            spec,
            report: None,
            error: None,
        };
        let entry = Entry {
            kept: Kept::Sim(Box::new(run)),
            bytes: 0,
        };
        entry.write(&dir)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Records a replay that is starting (its decisions go to [`History::records_path`]).
    pub fn begin_replay(&mut self, replay: StoredReplay) -> Result<(), AppError> {
        let dir = self.run_dir(&replay.id);
        std::fs::create_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let entry = Entry {
            kept: Kept::Replay(Box::new(StoredReplay {
                status: RunStatus::Running,
                report: None,
                error: None,
                ..replay
            })),
            bytes: 0,
        };
        entry.write(&dir)?;
        self.entries.push(entry);
        Ok(())
    }

    /// Records how a replay ended (cancelled when its report says so), then keeps the
    /// history within bounds. Returns what was dropped, in words.
    pub fn finish_replay(
        &mut self,
        id: &str,
        result: Result<ReplayReport, AppError>,
    ) -> Result<Vec<String>, AppError> {
        self.record_end(id, |kept| {
            let Kept::Replay(replay) = kept else {
                return Err(not_a_replay(id));
            };
            let cancelled = result.as_ref().is_ok_and(|report| report.cancelled);
            replay.status = ended(result.is_err(), cancelled);
            match result {
                Ok(report) => replay.report = Some(report),
                Err(err) => replay.error = Some(err),
            }
            Ok(())
        })
    }

    /// Records how a run ended, then keeps the history within bounds. Returns what was
    /// dropped, in words.
    pub fn finish(
        &mut self,
        id: &str,
        result: Result<Report, AppError>,
    ) -> Result<Vec<String>, AppError> {
        self.record_end(id, |kept| {
            let Kept::Sim(run) = kept else {
                return Err(not_found(id));
            };
            let cancelled = result.as_ref().is_ok_and(|report| report.cancelled);
            run.status = ended(result.is_err(), cancelled);
            match result {
                Ok(report) => run.report = Some(report),
                Err(err) => run.error = Some(err),
            }
            Ok(())
        })
    }

    /// Applies `end` to entry `id`, writes it, recounts its bytes and enforces the bounds
    /// (never dropping `id` itself).
    fn record_end(
        &mut self,
        id: &str,
        end: impl FnOnce(&mut Kept) -> Result<(), AppError>,
    ) -> Result<Vec<String>, AppError> {
        let dir = self.run_dir(id);
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.id() == id)
            .ok_or_else(|| not_found(id))?;
        end(&mut entry.kept)?;
        entry.write(&dir)?;
        entry.bytes = size_of(&dir);
        Ok(self.enforce(Some(id)))
    }
}

/// The status of an entry that ended: failed, cancelled, or finished.
fn ended(failed: bool, cancelled: bool) -> RunStatus {
    match (failed, cancelled) {
        (true, _) => RunStatus::Failed,
        (false, true) => RunStatus::Cancelled,
        (false, false) => RunStatus::Finished,
    }
}
