//! One entry of the run history on disk: a simulation (`run.json`) or a replay
//! (`replay.json`) in its own directory, read back (refused with a reason when it cannot be),
//! and written atomically (beside, then renamed).

use crate::error::{AppError, ErrorCode};
use crate::kept_replay::StoredReplay;
use crate::kept_run::StoredRun;
use crate::summary::RunStatus;
use serde::Serialize;
use std::path::{Path, PathBuf};

const META_FILE: &str = "run.json";
const REPLAY_FILE: &str = "replay.json";

/// What one history entry holds.
pub(super) enum Kept {
    // Both boxed: entries are moved and sorted, and each variant is hundreds of bytes.
    Sim(Box<StoredRun>),
    Replay(Box<StoredReplay>),
}

pub(super) struct Entry {
    pub(super) kept: Kept,
    /// Bytes on disk, records included.
    pub(super) bytes: u64,
}

impl Entry {
    pub(super) fn id(&self) -> &str {
        match &self.kept {
            Kept::Sim(run) => &run.id,
            Kept::Replay(replay) => &replay.id,
        }
    }

    pub(super) fn name(&self) -> &str {
        match &self.kept {
            Kept::Sim(run) => &run.name,
            Kept::Replay(replay) => &replay.name,
        }
    }

    pub(super) fn status(&self) -> RunStatus {
        match &self.kept {
            Kept::Sim(run) => run.status,
            Kept::Replay(replay) => replay.status,
        }
    }

    pub(super) fn sim(&self) -> Option<&StoredRun> {
        match &self.kept {
            Kept::Sim(run) => Some(run),
            Kept::Replay(_) => None,
        }
    }

    pub(super) fn replay(&self) -> Option<&StoredReplay> {
        match &self.kept {
            Kept::Replay(replay) => Some(replay),
            Kept::Sim(_) => None,
        }
    }

    pub(super) fn write(&self, dir: &Path) -> Result<(), AppError> {
        match &self.kept {
            Kept::Sim(run) => write_json(dir, META_FILE, run),
            Kept::Replay(replay) => write_json(dir, REPLAY_FILE, replay),
        }
    }
}

pub(super) fn io_error(what: &str, path: &Path, err: std::io::Error) -> AppError {
    AppError::new(
        ErrorCode::History,
        format!("cannot {what} {}: {err}", path.display()),
    )
}

/// Bytes under `path` (a run's directory).
pub(super) fn size_of(path: &Path) -> u64 {
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

/// Why a run's folder holds no entry the history can keep (the folder is set aside).
#[derive(Debug, thiserror::Error)]
pub(super) enum Unreadable {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The entry's id is not its folder's name.
    #[error("{} names run {id:?} but lies in {folder:?}", path.display())]
    Misplaced {
        path: PathBuf,
        id: String,
        folder: String,
    },
}

/// A run's entry: `replay.json` makes it a replay, otherwise `run.json` a simulation.
pub(super) fn read_entry(dir: &Path) -> Result<Entry, Unreadable> {
    let (file, is_replay) = if dir.join(REPLAY_FILE).is_file() {
        (REPLAY_FILE, true)
    } else {
        (META_FILE, false)
    };
    let path = dir.join(file);
    let bytes = std::fs::read(&path).map_err(|source| Unreadable::Read {
        path: path.clone(),
        source,
    })?;
    let unreadable = |source| Unreadable::Json {
        path: path.clone(),
        source,
    };
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
        return Err(Unreadable::Misplaced {
            id: entry.id().to_string(),
            folder: name.into_owned(),
            path,
        });
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
