//! The user's edits of the history: renaming an entry (on disk first, memory after) and
//! deleting one that is not running; what makes a run name valid.

use super::entry::{io_error, Kept};
use super::{not_found, History};
use crate::error::{AppError, ErrorCode};
use crate::kept_replay::ReplayRunInfo;
use crate::kept_run::RunInfo;
use crate::summary::RunStatus;

/// The longest run name.
pub const MAX_NAME_CHARS: usize = 100;

impl History {
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
