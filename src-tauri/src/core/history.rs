//! The run history: every run kept in `<data dir>/runs/<id>/`, its spec, summaries and
//! records, bounded by count and by bytes with the oldest dropped first (and said so).
//!
//! ```text
//! runs/<id>/run.json     the request, the engine's spec, the report, name, status
//! runs/<id>/records.csv  one row per decision (the engine's CSV, written as the run goes)
//! runs-aside/            entries that could not be read, moved here and reported, never deleted
//! ```
//!
//! Ids are the creation time in milliseconds, zero-padded, so names sort by age. `run.json` is
//! replaced atomically (written beside, then renamed), so a crash leaves the old or the new
//! version, never half of one.

use super::error::{AppError, ErrorCode};
use super::sim::{RunStatus, RunSummary, SimRequest};
use ratelockr::sim::{Report, SimSpec};
use ratelockr::Rule;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use ts_rs::TS;

pub const RUNS_DIR: &str = "runs";
pub const ASIDE_DIR: &str = "runs-aside";
const META_FILE: &str = "run.json";
pub const RECORDS_FILE: &str = "records.csv";
/// The longest run name.
pub const MAX_NAME_CHARS: usize = 100;
/// Notices kept for `runs_list` (drops, corrupt entries), newest last.
const MAX_NOTICES: usize = 50;

/// How much history is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HistorySettings {
    /// The most runs kept.
    pub max_runs: u32,
    /// The most bytes the runs may take on disk, records included.
    #[ts(type = "number")]
    pub max_bytes: u64,
}

impl Default for HistorySettings {
    fn default() -> Self {
        // A 200,000-request compare run is about 70 MB of CSV; 50 runs or 1 GiB, whichever
        // comes first, keeps a working session's runs without filling a laptop's disk.
        HistorySettings {
            max_runs: 50,
            max_bytes: 1 << 30,
        }
    }
}

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

impl StoredRun {
    pub fn summary(&self) -> Option<RunSummary> {
        self.report
            .as_ref()
            .map(|r| RunSummary::new(&self.id, &self.name, self.status, r))
    }
}

/// A rule a run decided with, and whether it was the naive demo limiter.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunTarget {
    pub rule: Rule,
    pub naive: bool,
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

/// The history list.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RunHistory {
    /// Newest first.
    pub runs: Vec<RunInfo>,
    /// What the user should know: runs dropped to stay within bounds, entries that could not
    /// be read and where they were moved.
    pub warnings: Vec<String>,
    pub settings: HistorySettings,
    /// Bytes all kept runs take.
    #[ts(type = "number")]
    pub bytes: u64,
}

struct Entry {
    run: StoredRun,
    bytes: u64,
}

/// The runs on disk, oldest first.
pub struct History {
    dir: PathBuf,
    aside: PathBuf,
    settings: HistorySettings,
    entries: Vec<Entry>,
    notices: Vec<String>,
    last_id_ms: u64,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("dir", &self.dir)
            .field("runs", &self.entries.len())
            .finish_non_exhaustive()
    }
}

fn io_error(what: &str, path: &Path, err: std::io::Error) -> AppError {
    AppError::new(
        ErrorCode::History,
        format!("cannot {what} {}: {err}", path.display()),
    )
}

/// Bytes under `path` (a run's directory).
fn size_of(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl History {
    /// Reads the history under `data_dir`. Never fails: an entry that cannot be read is moved
    /// to `runs-aside/` and reported; a run the app was in the middle of when it stopped is
    /// marked failed, its records kept.
    pub fn open(data_dir: &Path, settings: HistorySettings) -> History {
        let mut history = History {
            dir: data_dir.join(RUNS_DIR),
            aside: data_dir.join(ASIDE_DIR),
            settings,
            entries: Vec::new(),
            notices: Vec::new(),
            last_id_ms: 0,
        };
        let listing = match std::fs::read_dir(&history.dir) {
            Ok(listing) => listing,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return history,
            Err(err) => {
                history.notice(format!(
                    "the run history in {} could not be read ({err}); new runs are kept but older ones are not shown",
                    history.dir.display()
                ));
                return history;
            }
        };
        let mut dirs: Vec<PathBuf> = listing
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            match read_run(&dir) {
                Ok(mut run) => {
                    if run.status == RunStatus::Running {
                        run.status = RunStatus::Failed;
                        run.error = Some(AppError::new(
                            ErrorCode::History,
                            "the app stopped during this run; the records written until then are kept",
                        ));
                        if let Err(err) = write_run(&dir, &run) {
                            history.notice(err.message);
                        }
                    }
                    history.last_id_ms = history.last_id_ms.max(run.created_ms);
                    let bytes = size_of(&dir);
                    history.entries.push(Entry { run, bytes });
                }
                Err(reason) => history.set_aside(&dir, &reason),
            }
        }
        history
    }

    fn notice(&mut self, message: String) {
        tracing::warn!("{message}");
        self.notices.push(message);
        if self.notices.len() > MAX_NOTICES {
            self.notices.remove(0);
        }
    }

    /// Moves an unreadable entry out of the way, keeping every byte of it.
    fn set_aside(&mut self, dir: &Path, reason: &str) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let secs = ratelockr::telemetry::now_ms() / 1000;
        let target = self.aside.join(format!("{name}.corrupt-{secs}"));
        let moved =
            std::fs::create_dir_all(&self.aside).and_then(|()| std::fs::rename(dir, &target));
        let message = match moved {
            Ok(()) => format!(
                "a run in the history could not be read ({reason}); it was moved to {} and nothing was deleted",
                target.display()
            ),
            Err(err) => format!(
                "a run in the history could not be read ({reason}) nor moved aside ({err}); it stays in {} untouched",
                dir.display()
            ),
        };
        self.notice(message);
    }

    pub fn settings(&self) -> HistorySettings {
        self.settings
    }

    /// New bounds; applied at once (the oldest runs dropped, and said so).
    pub fn set_settings(&mut self, settings: HistorySettings) -> Vec<String> {
        self.settings = settings;
        self.enforce(None)
    }

    /// A fresh id: the time in ms, bumped past the last one so two runs never share it.
    pub fn next_id(&mut self) -> String {
        let ms = ratelockr::telemetry::now_ms().max(self.last_id_ms + 1);
        self.last_id_ms = ms;
        format!("{ms:013}")
    }

    fn run_dir(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    pub fn records_path(&self, id: &str) -> PathBuf {
        self.run_dir(id).join(RECORDS_FILE)
    }

    /// Records a run that is starting; returns where its records go.
    pub fn begin(
        &mut self,
        id: &str,
        name: String,
        request: SimRequest,
        spec: SimSpec,
    ) -> Result<PathBuf, AppError> {
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
        write_run(&dir, &run)?;
        self.entries.push(Entry { run, bytes: 0 });
        Ok(self.records_path(id))
    }

    /// Records how a run ended, then keeps the history within bounds. Returns what was
    /// dropped, in words.
    pub fn finish(
        &mut self,
        id: &str,
        result: Result<Report, AppError>,
    ) -> Result<Vec<String>, AppError> {
        let dir = self.run_dir(id);
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.run.id == id)
            .ok_or_else(|| not_found(id))?;
        match result {
            Ok(report) => {
                entry.run.status = if report.cancelled {
                    RunStatus::Cancelled
                } else {
                    RunStatus::Finished
                };
                entry.run.report = Some(report);
            }
            Err(err) => {
                entry.run.status = RunStatus::Failed;
                entry.run.error = Some(err);
            }
        }
        write_run(&dir, &entry.run)?;
        entry.bytes = size_of(&dir);
        Ok(self.enforce(Some(id)))
    }

    /// Drops the oldest runs until the history is within bounds, never `keep` (the run that
    /// just ended) nor a running one. Returns one message per run dropped.
    fn enforce(&mut self, keep: Option<&str>) -> Vec<String> {
        let mut dropped = Vec::new();
        loop {
            let count = self.entries.len() as u64;
            let bytes: u64 = self.entries.iter().map(|e| e.bytes).sum();
            let over_count = count > u64::from(self.settings.max_runs.max(1));
            let over_bytes = bytes > self.settings.max_bytes;
            if !over_count && !over_bytes {
                break;
            }
            let Some(at) = self.entries.iter().position(|e| {
                Some(e.run.id.as_str()) != keep && e.run.status != RunStatus::Running
            }) else {
                break;
            };
            let why = if over_count {
                format!("{} runs", self.settings.max_runs)
            } else {
                format!("{:.0} MB", self.settings.max_bytes as f64 / 1e6)
            };
            let entry = self.entries.remove(at);
            let dir = self.run_dir(&entry.run.id);
            let message = match std::fs::remove_dir_all(&dir) {
                Ok(()) => format!(
                    "the oldest run, \"{}\" ({}), was dropped from the history to keep it within {why}",
                    entry.run.name, entry.run.id
                ),
                Err(err) => {
                    // Listed again so that nothing disappears from view while it is on disk.
                    self.entries.insert(at, entry);
                    let message = format!(
                        "could not drop the oldest run from the history ({}: {err}); it is kept",
                        dir.display()
                    );
                    self.notice(message.clone());
                    dropped.push(message);
                    break;
                }
            };
            self.notice(message.clone());
            dropped.push(message);
        }
        dropped
    }

    pub fn get(&self, id: &str) -> Result<&StoredRun, AppError> {
        self.entries
            .iter()
            .map(|e| &e.run)
            .find(|r| r.id == id)
            .ok_or_else(|| not_found(id))
    }

    /// The newest run that is not running.
    pub fn latest(&self) -> Option<&StoredRun> {
        self.entries
            .iter()
            .rev()
            .map(|e| &e.run)
            .find(|r| r.status != RunStatus::Running)
    }

    pub fn info(&self, id: &str) -> Result<RunInfo, AppError> {
        self.entries
            .iter()
            .find(|e| e.run.id == id)
            .map(info)
            .ok_or_else(|| not_found(id))
    }

    pub fn list(&self) -> RunHistory {
        RunHistory {
            runs: self.entries.iter().rev().map(info).collect(),
            warnings: self.notices.clone(),
            settings: self.settings,
            bytes: self.entries.iter().map(|e| e.bytes).sum(),
        }
    }

    pub fn rename(&mut self, id: &str, name: &str) -> Result<RunInfo, AppError> {
        let name = valid_name(name)?;
        let dir = self.run_dir(id);
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.run.id == id)
            .ok_or_else(|| not_found(id))?;
        let before = std::mem::replace(&mut entry.run.name, name);
        if let Err(err) = write_run(&dir, &entry.run) {
            entry.run.name = before;
            return Err(err);
        }
        Ok(info(entry))
    }

    pub fn delete(&mut self, id: &str) -> Result<(), AppError> {
        let at = self
            .entries
            .iter()
            .position(|e| e.run.id == id)
            .ok_or_else(|| not_found(id))?;
        if self.entries[at].run.status == RunStatus::Running {
            return Err(AppError::new(
                ErrorCode::SimulationRunning,
                "this run is still going; cancel it before deleting it",
            ));
        }
        let dir = self.run_dir(id);
        std::fs::remove_dir_all(&dir).map_err(|e| io_error("delete", &dir, e))?;
        self.entries.remove(at);
        Ok(())
    }
}

fn info(entry: &Entry) -> RunInfo {
    let run = &entry.run;
    RunInfo {
        id: run.id.clone(),
        name: run.name.clone(),
        created_ms: run.created_ms,
        status: run.status,
        workload: run.spec.describe(),
        request: run.request.clone(),
        targets: run
            .spec
            .targets
            .iter()
            .map(|t| RunTarget {
                rule: t.rule.clone(),
                naive: t.naive,
            })
            .collect(),
        fresh_state: run.spec.scope.is_some(),
        summary: run.summary(),
        error: run.error.clone(),
        bytes: entry.bytes,
    }
}

fn not_found(id: &str) -> AppError {
    AppError::new(
        ErrorCode::RunNotFound,
        format!("no run {id:?} in the history (it may have been dropped or deleted)"),
    )
}

/// A run name: trimmed, 1 to 100 characters.
pub fn valid_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(AppError::new(
            ErrorCode::InvalidRunName,
            format!("a run name must be 1 to {MAX_NAME_CHARS} characters, got {chars}"),
        )
        .with_field("name"));
    }
    Ok(name.to_string())
}

fn read_run(dir: &Path) -> Result<StoredRun, String> {
    let path = dir.join(META_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let run: StoredRun =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    if run.id != name {
        return Err(format!(
            "{} names run {:?} but lies in {name:?}",
            path.display(),
            run.id
        ));
    }
    Ok(run)
}

fn write_run(dir: &Path, run: &StoredRun) -> Result<(), AppError> {
    let path = dir.join(META_FILE);
    let tmp = dir.join(format!("{META_FILE}.tmp"));
    let json = serde_json::to_vec_pretty(run)
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
    std::fs::write(&tmp, json).map_err(|e| io_error("write", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_error("write", &path, e))
}
