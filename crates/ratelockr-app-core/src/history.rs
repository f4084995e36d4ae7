//! The run history: every run kept in `<data dir>/runs/<id>/`, its spec, summaries and
//! records, bounded by count and by bytes with the oldest dropped first (and said so).
//!
//! ```text
//! runs/<id>/run.json     a simulation: the request, the engine's spec, the report, name, status
//! runs/<id>/replay.json  or a replay: the log (name, size, SHA-256), request, rules, report
//! runs/<id>/records.csv  one row per decision (the engine's CSV, written as the run goes)
//! runs-aside/            entries that could not be read, moved here and reported, never deleted
//! ```
//!
//! Ids are the creation time in milliseconds, zero-padded, so names sort by age. `run.json` is
//! replaced atomically (written beside, then renamed), so a crash leaves the old or the new
//! version, never half of one. Both kinds share the ids, the bounds, rename and delete; the
//! simulation lookups (`get`, `latest`) see simulations only, the replay ones replays only.

use super::error::{AppError, ErrorCode};
use super::kept_replay::{ReplayRunInfo, StoredReplay};
use super::sim::{RunStatus, RunSummary, SimRequest};
use ratelockr::replay::ReplayReport;
use ratelockr::sim::{Report, SimSpec};
use ratelockr::Rule;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use ts_rs::TS;

pub const RUNS_DIR: &str = "runs";
pub const ASIDE_DIR: &str = "runs-aside";
const META_FILE: &str = "run.json";
const REPLAY_FILE: &str = "replay.json";
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
    /// Simulations, newest first.
    pub runs: Vec<RunInfo>,
    /// Replays, newest first (counted in the same bounds).
    pub replays: Vec<ReplayRunInfo>,
    /// What the user should know: runs dropped to stay within bounds, entries that could not
    /// be read and where they were moved.
    pub warnings: Vec<String>,
    pub settings: HistorySettings,
    /// Bytes all kept runs take.
    #[ts(type = "number")]
    pub bytes: u64,
}

/// What one history entry holds.
enum Kept {
    // Both boxed: entries are moved and sorted, and each variant is hundreds of bytes.
    Sim(Box<StoredRun>),
    Replay(Box<StoredReplay>),
}

struct Entry {
    kept: Kept,
    bytes: u64,
}

impl Entry {
    fn id(&self) -> &str {
        match &self.kept {
            Kept::Sim(run) => &run.id,
            Kept::Replay(replay) => &replay.id,
        }
    }

    fn name(&self) -> &str {
        match &self.kept {
            Kept::Sim(run) => &run.name,
            Kept::Replay(replay) => &replay.name,
        }
    }

    fn status(&self) -> RunStatus {
        match &self.kept {
            Kept::Sim(run) => run.status,
            Kept::Replay(replay) => replay.status,
        }
    }

    fn sim(&self) -> Option<&StoredRun> {
        match &self.kept {
            Kept::Sim(run) => Some(run),
            Kept::Replay(_) => None,
        }
    }

    fn replay(&self) -> Option<&StoredReplay> {
        match &self.kept {
            Kept::Replay(replay) => Some(replay),
            Kept::Sim(_) => None,
        }
    }

    fn write(&self, dir: &Path) -> Result<(), AppError> {
        match &self.kept {
            Kept::Sim(run) => write_json(dir, META_FILE, run),
            Kept::Replay(replay) => write_json(dir, REPLAY_FILE, replay),
        }
    }
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
            match read_entry(&dir) {
                Ok(mut entry) => {
                    if entry.status() == RunStatus::Running {
                        let stopped = Some(AppError::new(
                            ErrorCode::History,
                            "the app stopped during this run; the records written until then are kept",
                        ));
                        match &mut entry.kept {
                            Kept::Sim(run) => {
                                (run.status, run.error) = (RunStatus::Failed, stopped)
                            }
                            Kept::Replay(replay) => {
                                (replay.status, replay.error) = (RunStatus::Failed, stopped)
                            }
                        }
                        if let Err(err) = entry.write(&dir) {
                            history.notice(err.message);
                        }
                    }
                    let created_ms = match &entry.kept {
                        Kept::Sim(run) => run.created_ms,
                        Kept::Replay(replay) => replay.created_ms,
                    };
                    history.last_id_ms = history.last_id_ms.max(created_ms);
                    entry.bytes = size_of(&dir);
                    history.entries.push(entry);
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
            let Some(at) = self
                .entries
                .iter()
                .position(|e| Some(e.id()) != keep && e.status() != RunStatus::Running)
            else {
                // Only the run that just ended (or a running one) is left: it is kept, and
                // the user is told that it alone is over the bound.
                let message = format!(
                    "the run history is over its bound ({} runs, {:.0} MB) with only the newest run left; it is kept",
                    self.settings.max_runs,
                    self.settings.max_bytes as f64 / 1e6
                );
                self.notice(message.clone());
                dropped.push(message);
                break;
            };
            let why = if over_count {
                format!("{} runs", self.settings.max_runs)
            } else {
                format!("{:.0} MB", self.settings.max_bytes as f64 / 1e6)
            };
            let entry = self.entries.remove(at);
            let dir = self.run_dir(entry.id());
            let message = match std::fs::remove_dir_all(&dir) {
                Ok(()) => format!(
                    "the oldest run, \"{}\" ({}), was dropped from the history to keep it within {why}",
                    entry.name(),
                    entry.id()
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

    /// A kept simulation.
    pub fn get(&self, id: &str) -> Result<&StoredRun, AppError> {
        self.entries
            .iter()
            .filter_map(Entry::sim)
            .find(|r| r.id == id)
            .ok_or_else(|| not_found(id))
    }

    /// The newest simulation that is not running.
    pub fn latest(&self) -> Option<&StoredRun> {
        self.entries
            .iter()
            .rev()
            .filter_map(Entry::sim)
            .find(|r| r.status != RunStatus::Running)
    }

    /// A kept replay.
    pub fn get_replay(&self, id: &str) -> Result<&StoredReplay, AppError> {
        match self.entries.iter().find(|e| e.id() == id) {
            Some(entry) => entry.replay().ok_or_else(|| not_a_replay(id)),
            None => Err(not_found(id)),
        }
    }

    /// The newest replay that is not running.
    pub fn latest_replay(&self) -> Option<&StoredReplay> {
        self.entries
            .iter()
            .rev()
            .filter_map(Entry::replay)
            .find(|r| r.status != RunStatus::Running)
    }

    pub fn info(&self, id: &str) -> Result<RunInfo, AppError> {
        self.entries
            .iter()
            .filter(|e| e.sim().is_some())
            .find(|e| e.id() == id)
            .and_then(info)
            .ok_or_else(|| not_found(id))
    }

    pub fn list(&self) -> RunHistory {
        RunHistory {
            runs: self.entries.iter().rev().filter_map(info).collect(),
            replays: self
                .entries
                .iter()
                .rev()
                .filter_map(|e| e.replay().map(|r| r.info(e.bytes)))
                .collect(),
            warnings: self.notices.clone(),
            settings: self.settings,
            bytes: self.entries.iter().map(|e| e.bytes).sum(),
        }
    }

    /// Renames a kept simulation (a replay: [`History::rename_replay`]).
    pub fn rename(&mut self, id: &str, name: &str) -> Result<RunInfo, AppError> {
        self.get(id)?;
        self.rename_any(id, name)?;
        self.info(id)
    }

    /// Renames a kept replay.
    pub fn rename_replay(&mut self, id: &str, name: &str) -> Result<ReplayRunInfo, AppError> {
        self.get_replay(id)?;
        let bytes = self.rename_any(id, name)?;
        Ok(self.get_replay(id)?.info(bytes))
    }

    /// Renames the entry `id`, on disk first; returns its bytes.
    fn rename_any(&mut self, id: &str, name: &str) -> Result<u64, AppError> {
        let name = valid_name(name)?;
        let dir = self.run_dir(id);
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.id() == id)
            .ok_or_else(|| not_found(id))?;
        let slot = match &mut entry.kept {
            Kept::Sim(run) => &mut run.name,
            Kept::Replay(replay) => &mut replay.name,
        };
        let before = std::mem::replace(slot, name);
        if let Err(err) = entry.write(&dir) {
            match &mut entry.kept {
                Kept::Sim(run) => run.name = before,
                Kept::Replay(replay) => replay.name = before,
            }
            return Err(err);
        }
        Ok(entry.bytes)
    }

    pub fn delete(&mut self, id: &str) -> Result<(), AppError> {
        let at = self
            .entries
            .iter()
            .position(|e| e.id() == id)
            .ok_or_else(|| not_found(id))?;
        if self.entries[at].status() == RunStatus::Running {
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

/// A simulation's listing (None for a replay).
fn info(entry: &Entry) -> Option<RunInfo> {
    let run = entry.sim()?;
    Some(RunInfo {
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
    })
}

/// The status of an entry that ended: failed, cancelled, or finished.
fn ended(failed: bool, cancelled: bool) -> RunStatus {
    match (failed, cancelled) {
        (true, _) => RunStatus::Failed,
        (false, true) => RunStatus::Cancelled,
        (false, false) => RunStatus::Finished,
    }
}

fn not_found(id: &str) -> AppError {
    AppError::new(
        ErrorCode::RunNotFound,
        format!("no run {id:?} in the history (it may have been dropped or deleted)"),
    )
}

fn not_a_replay(id: &str) -> AppError {
    AppError::new(
        ErrorCode::RunNotFound,
        format!("run {id:?} in the history is a simulation, not a replay"),
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

/// A run's entry: `replay.json` makes it a replay, otherwise `run.json` a simulation.
fn read_entry(dir: &Path) -> Result<Entry, String> {
    let (file, is_replay) = if dir.join(REPLAY_FILE).is_file() {
        (REPLAY_FILE, true)
    } else {
        (META_FILE, false)
    };
    let path = dir.join(file);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let unreadable = |e: serde_json::Error| format!("{}: {e}", path.display());
    let kept = if is_replay {
        Kept::Replay(Box::new(
            serde_json::from_slice(&bytes).map_err(unreadable)?,
        ))
    } else {
        Kept::Sim(Box::new(
            serde_json::from_slice(&bytes).map_err(unreadable)?,
        ))
    };
    let entry = Entry { kept, bytes: 0 };
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    if entry.id() != name {
        return Err(format!(
            "{} names run {:?} but lies in {name:?}",
            path.display(),
            entry.id()
        ));
    }
    Ok(entry)
}

fn write_json<T: Serialize>(dir: &Path, file: &str, value: &T) -> Result<(), AppError> {
    let path = dir.join(file);
    let tmp = dir.join(format!("{file}.tmp"));
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
    std::fs::write(&tmp, json).map_err(|e| io_error("write", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_error("write", &path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use ratelockr::sim::Pattern;

    fn request() -> SimRequest {
        SimRequest {
            target: SimTarget::Compare {
                limit: 5,
                window_ms: 1000,
            },
            pattern: Pattern::Constant,
            rps: 10.0,
            requests: Some(3),
            duration_ms: None,
            servers: 1,
            keys: 1,
            zipf: false,
            zipf_exponent: None,
            cost: None,
            seed: Some(1),
            naive: false,
            continue_state: false,
            retry: None,
            name: None,
        }
    }

    fn run_one(history: &mut History, name: &str) -> (String, Vec<String>) {
        let request = request();
        let spec = request.to_spec(|_| None).expect("spec");
        let id = history.next_id();
        history
            .begin(&id, name.into(), request, spec)
            .expect("begin");
        std::fs::write(history.records_path(&id), b"seq\n").expect("records");
        let failed = AppError::new(ErrorCode::Internal, "stopped");
        let notes = history.finish(&id, Err(failed)).expect("finish");
        (id, notes)
    }

    #[test]
    fn over_the_byte_bound_the_oldest_goes_and_a_lone_run_is_kept_and_said() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut history = History::open(
            dir.path(),
            HistorySettings {
                max_runs: 10,
                max_bytes: 1,
            },
        );
        let (first, notes) = run_one(&mut history, "a");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("only the newest run left"), "{notes:?}");
        assert_eq!(history.get(&first).expect("kept").status, RunStatus::Failed);
        let (second, notes) = run_one(&mut history, "b");
        assert!(
            notes[0].contains("\"a\"") && notes[0].contains("MB"),
            "{notes:?}"
        );
        assert!(history.get(&first).is_err());
        assert!(!dir.path().join(RUNS_DIR).join(&first).exists());
        // Reopened: the kept run is there, failed with its error.
        let again = History::open(dir.path(), HistorySettings::default());
        assert_eq!(again.list().runs.len(), 1);
        assert_eq!(again.latest().map(|r| r.id.clone()), Some(second));
    }
}
