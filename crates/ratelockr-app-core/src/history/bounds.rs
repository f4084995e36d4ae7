//! The history's bounds: at most so many runs and so many bytes, the oldest dropped first
//! (never a running one, nor the run that just ended), and each drop said in words.

use super::{History, HistorySettings};
use crate::summary::RunStatus;

impl History {
    /// New bounds; applied at once (the oldest runs dropped, and said so).
    pub fn set_settings(&mut self, settings: HistorySettings) -> Vec<String> {
        self.settings = settings;
        self.enforce(None)
    }

    /// Drops the oldest runs until the history is within bounds, never `keep` (the run that
    /// just ended) nor a running one. Returns one message per run dropped.
    pub(super) fn enforce(&mut self, keep: Option<&str>) -> Vec<String> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{AppError, ErrorCode};
    use crate::history::RUNS_DIR;
    use crate::sim::{SimRequest, SimTarget};
    use ratelockr_lab::sim::Pattern;

    fn request() -> SimRequest {
        SimRequest {
            target: SimTarget::Compare {
                limit: 5,
                window_ms: 1000,
                in_flight: None,
                max_delay_ms: None,
            },
            pattern: Pattern::Constant,
            rps: 10.0,
            requests: Some(3),
            duration_ms: None,
            servers: 1,
            connections: None,
            keys: 1,
            zipf: false,
            zipf_exponent: None,
            cost: None,
            seed: Some(1),
            naive: false,
            hold_ms: None,
            continue_state: false,
            retry: None,
            sweep: Vec::new(),
            name: None,
        }
    }

    fn run_one(history: &mut History, name: &str) -> (String, Vec<String>) {
        let request = request();
        let spec = request.to_spec(|_| None, |_| None).expect("spec");
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
