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
//!
//! - `entry`     one entry on disk: read, refused with a reason, written atomically
//! - `lifecycle` an entry begun when its run starts and ended when it stops
//! - `bounds`    at most so many runs and bytes, the oldest dropped first
//! - `edit`      rename and delete; valid run names

mod bounds;
mod edit;
mod entry;
mod lifecycle;

pub use edit::{valid_name, MAX_NAME_CHARS};

use crate::error::{AppError, ErrorCode};
use crate::kept_replay::{ReplayRunInfo, StoredReplay};
use crate::kept_run::{RunInfo, StoredRun};
use crate::summary::RunStatus;
use entry::{read_entry, size_of, Entry, Kept};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use ts_rs::TS;

pub const RUNS_DIR: &str = "runs";
pub const ASIDE_DIR: &str = "runs-aside";
pub const RECORDS_FILE: &str = "records.csv";
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
                Err(reason) => history.set_aside(&dir, &reason.to_string()),
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
            .find_map(|e| {
                e.sim()
                    .filter(|run| run.id == id)
                    .map(|run| run.info(e.bytes))
            })
            .ok_or_else(|| not_found(id))
    }

    pub fn list(&self) -> RunHistory {
        RunHistory {
            runs: self
                .entries
                .iter()
                .rev()
                .filter_map(|e| e.sim().map(|run| run.info(e.bytes)))
                .collect(),
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
