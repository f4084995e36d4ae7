//! Watch: a policies file followed live, and the last 30 seconds of each of its policies in the
//! app's Redis (allowed, denied, shadow-denied), for traffic the app did not send: `ratelockr
//! serve --policies`, the tower layer or `ratelockr check` in other processes on the same file.
//!
//! The file is the engine's [`PolicyWatch`]: reloaded whole when it changes; a file that is
//! invalid, half-written or gone keeps the policies in force and says why until it loads again.
//! It is looked at on each read, so nothing runs while the panel is not asking. The counts of
//! every policy of the file come from one pipelined read ([`ratelockr::Limiter::policy_stats_at`]).
//! The file chosen is remembered in the settings and opened again at start.

use super::{lock, AppCore};
use crate::error::{AppError, ErrorCode};
use ratelockr::policy::{Limit, Mode, PolicyFileError, PolicyStatsPoint, PolicyWatch, Reload};
use ratelockr::telemetry::now_ms;
use serde::Serialize;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;
use ts_rs::TS;

/// What the Watch panel shows: the file followed, whether it is in force as it is on disk, and
/// the last 30 seconds of each policy in force.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct WatchStatus {
    /// The file followed; absent when nothing is watched.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// When the file in force was modified, in ms since the epoch.
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_ms: Option<u64>,
    /// Why the file on disk is not in force (invalid, half-written, gone), naming the file,
    /// the line or JSON path, and the field: the policies listed are those in force before it
    /// (none, if it never loaded).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_error: Option<AppError>,
    /// The Redis the counts are read from (the app's connection), password redacted.
    pub redis: String,
    /// The newest second of every series (unix seconds).
    #[ts(type = "number")]
    pub now_second: u64,
    pub policies: Vec<WatchedPolicy>,
}

/// One policy in force and its last 30 seconds.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct WatchedPolicy {
    pub name: String,
    pub mode: Mode,
    /// The key expression (`ip`, `header:x-api-key`) as the file writes it.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub limits: Vec<Limit>,
    /// The overrides' tiers, in file order.
    pub tiers: Vec<String>,
    /// 30 seconds, oldest first, the current (incomplete) second last. When Redis cannot say,
    /// zero but for this process's fail-open counts, and `error` says why.
    pub points: Vec<PolicyStatsPoint>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What [`AppCore`] keeps of the watched file.
#[derive(Debug, Default, Clone)]
pub struct WatchSlot {
    /// The file chosen, persisted; kept when it does not load.
    pub(super) file: Option<PathBuf>,
    /// The file's policies in force, once it has loaded.
    watch: Option<PolicyWatch>,
    /// Why the file on disk is not in force; cleared by the next load.
    error: Option<AppError>,
    /// Bumped by each open and close, so a look at an old file does not land on a new one.
    generation: u64,
}

impl WatchSlot {
    /// The slot for the file saved in the settings. A file that does not load (moved, deleted,
    /// broken since) is reported in `warnings` and kept: Watch says why, and takes it up as soon
    /// as it loads.
    pub(super) fn reopen(file: Option<PathBuf>, warnings: &mut Vec<String>) -> WatchSlot {
        let Some(file) = file else {
            return WatchSlot::default();
        };
        match PolicyWatch::load(&file) {
            Ok(watch) => WatchSlot {
                file: Some(file),
                watch: Some(watch),
                ..WatchSlot::default()
            },
            Err(err) => {
                let err = file_error(&err);
                warnings.push(format!(
                    "Watch: the policies file it followed does not load now ({}); it is opened again as soon as it loads, or choose another in the Watch card",
                    err.message
                ));
                WatchSlot {
                    file: Some(file),
                    error: Some(err),
                    ..WatchSlot::default()
                }
            }
        }
    }
}

/// A refused policies file as the UI receives it: the engine's message (the file, the line or
/// JSON path, what is wrong) and the field it is about.
pub fn file_error(err: &PolicyFileError) -> AppError {
    let error = AppError::new(ErrorCode::PolicyFile, err.to_string());
    match err {
        PolicyFileError::Invalid { invalid, .. } => match invalid.field() {
            Some(field) => error.with_field(field),
            None => error,
        },
        PolicyFileError::Read { .. } => error.with_field("path"),
    }
}

/// What one look at the file found.
enum Look {
    Polled(Reload),
    Loaded(PolicyWatch),
    Refused(AppError),
    Nothing,
}

impl AppCore {
    /// Follows the policies file at `path` from now on, and remembers it. An invalid file is
    /// refused (the error names the file, the line or JSON path, and the field) and the file
    /// watched before stays.
    pub async fn watch_open(&self, path: &str) -> Result<WatchStatus, AppError> {
        let path = PathBuf::from(path.trim());
        if path.as_os_str().is_empty() {
            return Err(
                AppError::new(ErrorCode::PolicyFile, "choose a policies file to watch")
                    .with_field("path"),
            );
        }
        let load = path.clone();
        let watch = tokio::task::spawn_blocking(move || PolicyWatch::load(load))
            .await
            .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?
            .map_err(|e| file_error(&e))?;
        self.edit_watch(|slot| {
            slot.file = Some(path);
            slot.watch = Some(watch);
            slot.error = None;
        })?;
        Ok(self.watch_read().await)
    }

    /// Stops watching, and forgets the file.
    pub async fn watch_close(&self) -> Result<WatchStatus, AppError> {
        self.edit_watch(|slot| {
            slot.file = None;
            slot.watch = None;
            slot.error = None;
        })?;
        Ok(self.watch_read().await)
    }

    /// Looks at the file (reloading it if it changed) and reads the last 30 seconds of every
    /// policy in force, in one pipelined read against the app's Redis.
    pub async fn watch_read(&self) -> WatchStatus {
        self.watch_look().await;
        let (file, watch, file_error) = {
            let slot = lock(&self.watch);
            (slot.file.clone(), slot.watch.clone(), slot.error.clone())
        };
        let connection = self.connection();
        let loaded = watch.map(|w| w.current());
        let now_second = now_ms() / 1000;
        let policies = match &loaded {
            Some(loaded) => read_policies(&connection.limiter, &loaded.policies, now_second).await,
            None => Vec::new(),
        };
        WatchStatus {
            file: file.map(|f| f.display().to_string()),
            modified_ms: loaded
                .and_then(|l| l.modified)
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64),
            file_error,
            redis: connection.backend.target().redacted().to_string(),
            now_second,
            policies,
        }
    }

    /// One look at the watched file: reloaded if it changed, loaded if it never did.
    async fn watch_look(&self) {
        let (file, watch, generation) = {
            let slot = lock(&self.watch);
            (slot.file.clone(), slot.watch.clone(), slot.generation)
        };
        // Reading and parsing a file blocks, and a changing file is looked at twice 50 ms
        // apart: off the runtime's workers.
        let look = tokio::task::spawn_blocking(move || match (watch, file) {
            (Some(watch), _) => Look::Polled(watch.poll()),
            (None, Some(file)) => match PolicyWatch::load(&file) {
                Ok(watch) => Look::Loaded(watch),
                Err(err) => Look::Refused(file_error(&err)),
            },
            (None, None) => Look::Nothing,
        })
        .await
        .unwrap_or(Look::Nothing);
        let mut slot = lock(&self.watch);
        if slot.generation != generation {
            return;
        }
        match look {
            Look::Polled(Reload::Unchanged) | Look::Nothing => {}
            Look::Polled(Reload::Reloaded) => slot.error = None,
            Look::Polled(Reload::Refused(err)) => slot.error = Some(file_error(&err)),
            Look::Loaded(watch) => {
                slot.watch = Some(watch);
                slot.error = None;
            }
            Look::Refused(err) => slot.error = Some(err),
        }
    }

    /// Applies `edit` to the watched file and persists it; when saving fails, the slot is put
    /// back as it was, so memory never claims what the settings file does not hold.
    fn edit_watch(&self, edit: impl FnOnce(&mut WatchSlot)) -> Result<(), AppError> {
        let mut slot = lock(&self.watch);
        let before = slot.clone();
        slot.generation += 1;
        edit(&mut slot);
        drop(slot);
        if let Err(err) = self.save() {
            let mut slot = lock(&self.watch);
            *slot = WatchSlot {
                generation: slot.generation + 1,
                ..before
            };
            return Err(err);
        }
        Ok(())
    }
}

/// The last 30 seconds of each policy, one round trip for all; when Redis cannot say, each
/// policy carries why, with this process's fail-open counts.
async fn read_policies(
    limiter: &ratelockr::Limiter,
    policies: &[ratelockr::Policy],
    now_second: u64,
) -> Vec<WatchedPolicy> {
    let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
    let (series, error) = match limiter.policy_stats_at(&names, now_second).await {
        Ok(series) => (series, None),
        Err(err) => {
            let fail_open = names
                .iter()
                .map(|name| {
                    let ledger = limiter.ledger().fail_open_series(name, now_second);
                    ledger
                        .into_iter()
                        .map(|p| PolicyStatsPoint {
                            second: p.second,
                            fail_open: p.fail_open,
                            ..PolicyStatsPoint::default()
                        })
                        .collect()
                })
                .collect();
            (fail_open, Some(err.to_string()))
        }
    };
    policies
        .iter()
        .zip(series)
        .map(|(policy, points)| WatchedPolicy {
            name: policy.name().to_string(),
            mode: policy.mode(),
            key: policy.key().map(str::to_string),
            limits: policy.limits().to_vec(),
            tiers: policy
                .overrides()
                .iter()
                .map(|o| o.tier().to_string())
                .collect(),
            points,
            error: error.clone(),
        })
        .collect()
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
