//! The commands over the run history: list, rename, delete, a run's records, and exports of
//! any kept run (not only the last).

use super::{lock, AppCore};
use crate::error::{AppError, ErrorCode};
use crate::export_path::{check_extension, copy_export, file_name_for, ChartFormat, Exported};
use crate::history::{HistorySettings, RunHistory};
use crate::kept_run::{RunInfo, StoredRun};
use crate::records::RunRecords;
use crate::summary::RunStatus;
use ratelockr_lab::export::ChartView;
use std::path::{Path, PathBuf};

impl AppCore {
    pub fn runs_list(&self) -> RunHistory {
        lock(&self.history).list()
    }

    pub fn run_rename(&self, id: &str, name: &str) -> Result<RunInfo, AppError> {
        lock(&self.history).rename(id, name)
    }

    pub fn run_delete(&self, id: &str) -> Result<RunHistory, AppError> {
        let mut history = lock(&self.history);
        history.delete(id)?;
        Ok(history.list())
    }

    /// New history bounds, applied at once and remembered.
    pub fn history_configure(&self, settings: HistorySettings) -> Result<RunHistory, AppError> {
        if settings.max_runs == 0 || settings.max_bytes == 0 {
            let field = if settings.max_runs == 0 {
                "max_runs"
            } else {
                "max_bytes"
            };
            return Err(AppError::new(
                ErrorCode::InvalidSettings,
                format!("invalid {field}: the history must keep at least one run"),
            )
            .with_field(field));
        }
        lock(&self.history).set_settings(settings);
        self.save()?;
        Ok(self.runs_list())
    }

    /// A run and its records file; `id` None: the newest finished run. Refuses the running run.
    fn kept_run(&self, id: Option<&str>) -> Result<(StoredRun, PathBuf), AppError> {
        let running = lock(&self.sim).cancel.is_some();
        let history = lock(&self.history);
        let run = match id {
            Some(id) => history.get(id)?.clone(),
            None => history.latest().cloned().ok_or_else(|| {
                AppError::new(
                    ErrorCode::NoRun,
                    "run a simulation first: there is nothing to export yet",
                )
            })?,
        };
        if running && run.status == RunStatus::Running {
            return Err(AppError::new(
                ErrorCode::SimulationRunning,
                "wait for the run to finish (or cancel it) before exporting",
            ));
        }
        let csv = history.records_path(&run.id);
        Ok((run, csv))
    }

    /// Every record of a kept run, in columns.
    pub fn run_records(&self, id: &str) -> Result<RunRecords, AppError> {
        let (run, csv) = self.kept_run(Some(id))?;
        if let Some(columns) = lock(&self.last_columns).as_ref().filter(|c| c.id == id) {
            return Ok(columns.clone());
        }
        RunRecords::read(&run, &csv)
    }

    /// The file name the save dialog offers for a kept run's export: the run's own name
    /// ([`file_name_for`]); `ratelockr-run…` when the run cannot be found.
    pub fn run_export_name(&self, id: Option<&str>, suffix: &str, extension: &str) -> String {
        let history = lock(&self.history);
        let run = match id {
            Some(id) => history.get(id).ok(),
            None => history.latest(),
        };
        let name = run.map_or("", |r| r.name.as_str());
        file_name_for(name, "ratelockr-run", suffix, extension)
    }

    /// Copies a kept run's CSV to `dest`, whole or not at all ([`copy_export`]).
    pub fn export_csv(&self, dest: &Path, id: Option<&str>) -> Result<Exported, AppError> {
        let (_, csv) = self.kept_run(id)?;
        copy_export(&csv, dest)
    }

    /// Draws a kept run's chart to exactly `dest`, which must end in `format`'s extension:
    /// the path the user confirmed is the only one ever written. With `view` (what the screen
    /// shows: measure, overlays, envelope, a key's state, the zoom), that view is drawn;
    /// without, the CLI's default view of the run.
    pub fn export_chart(
        &self,
        dest: &Path,
        format: ChartFormat,
        id: Option<&str>,
        view: Option<&ChartView>,
    ) -> Result<Exported, AppError> {
        check_extension(dest, format)?;
        let (run, csv) = self.kept_run(id)?;
        if let Some(view) = view {
            ratelockr_lab::export::render_view(view, dest)?;
            return Ok(Exported {
                path: dest.display().to_string(),
            });
        }
        let report = run.report.as_ref().ok_or_else(|| {
            AppError::new(
                ErrorCode::NoRun,
                "this run ended before it had a summary; export its CSV instead",
            )
        })?;
        let timeline = ratelockr_lab::export::timeline_from_csv(report, &run.spec, &csv)?;
        let title = format!("{}: {}", run.name, run.spec.describe());
        ratelockr_lab::export::render_run_chart(&timeline, &title, dest)?;
        Ok(Exported {
            path: dest.display().to_string(),
        })
    }
}
