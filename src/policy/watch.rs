//! A policies file in force, reloaded live: [`PolicyWatch`] loads it, polls its modification
//! time and size, and swaps the whole set in at once when a changed file loads. An invalid or
//! half-written file keeps the policies in force, is logged (file, line, field) and counted as
//! a reload error. `serve` and the tower layer share it.

use super::file::{load_policies_file_with, PolicyFileError};
use super::Policy;
use crate::metrics::Metrics;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, SystemTime};

/// How often [`PolicyWatch::spawn`] looks at the file by default.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// Checks a policy's `key` expression; the fronts that evaluate keys pass their parser.
pub type SharedKeyCheck = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// One load of the file: every policy in it, and when the file was last modified.
#[derive(Debug)]
pub struct LoadedPolicies {
    pub path: PathBuf,
    /// The file's modification time at the load.
    pub modified: Option<SystemTime>,
    pub policies: Vec<Policy>,
}

impl LoadedPolicies {
    /// The policy named `name`.
    pub fn get(&self, name: &str) -> Option<&Policy> {
        self.policies.iter().find(|p| p.name() == name)
    }
}

/// What one look at the file did.
#[derive(Debug)]
pub enum Reload {
    /// The file's modification time and size are as at the last look.
    Unchanged,
    /// The file changed and its policies are now in force.
    Reloaded,
    /// The file changed but did not load: the policies in force stay.
    Refused(PolicyFileError),
}

/// The file's modification time and size: what a change is detected by.
type Stamp = (Option<SystemTime>, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len()))
}

/// The policies of one file, kept current. Cheap to clone (one shared state); a decision
/// takes [`PolicyWatch::current`] once and so never sees half of a reload.
#[derive(Clone)]
pub struct PolicyWatch {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// The set in force, swapped whole under the lock (held for a pointer copy only).
    current: RwLock<Arc<LoadedPolicies>>,
    /// The stamp of the last look, loaded or refused: a refused file is not retried until it
    /// changes again.
    seen: Mutex<Option<Stamp>>,
    metrics: Option<Metrics>,
    key_check: Option<SharedKeyCheck>,
}

impl std::fmt::Debug for PolicyWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyWatch")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl PolicyWatch {
    /// Loads `path`; an invalid file is an error here (there is nothing to keep in force).
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, PolicyFileError> {
        Self::load_with(path, None, None)
    }

    /// [`PolicyWatch::load`], counting reloads in `metrics` and checking each policy's `key`
    /// expression with `key_check`.
    pub fn load_with(
        path: impl Into<PathBuf>,
        metrics: Option<Metrics>,
        key_check: Option<SharedKeyCheck>,
    ) -> Result<Self, PolicyFileError> {
        let path = path.into();
        let seen = stamp(&path);
        let loaded = load(&path, key_check.as_ref(), seen)?;
        Ok(PolicyWatch {
            inner: Arc::new(Inner {
                path,
                current: RwLock::new(Arc::new(loaded)),
                seen: Mutex::new(seen),
                metrics,
                key_check,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The policies in force.
    pub fn current(&self) -> Arc<LoadedPolicies> {
        self.inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The policy `name` in force.
    pub fn policy(&self, name: &str) -> Option<Policy> {
        self.current().get(name).cloned()
    }

    /// Looks at the file once: reloads it if its modification time or size changed. A file
    /// still being written (its stamp moves within 50 ms) is left for the next look.
    pub fn poll(&self) -> Reload {
        let inner = &self.inner;
        let now = stamp(&inner.path);
        if now == *inner.seen.lock().unwrap_or_else(|e| e.into_inner()) {
            return Reload::Unchanged;
        }
        std::thread::sleep(Duration::from_millis(50));
        if stamp(&inner.path) != now {
            return Reload::Unchanged;
        }
        *inner.seen.lock().unwrap_or_else(|e| e.into_inner()) = now;
        let result = load(&inner.path, inner.key_check.as_ref(), now);
        if let Some(metrics) = &inner.metrics {
            metrics.policy_reloaded(result.is_ok());
        }
        match result {
            Ok(loaded) => {
                let changed = super::changes::describe(&self.current().policies, &loaded.policies);
                tracing::info!(
                    "reloaded {}: {} ({changed})",
                    inner.path.display(),
                    super::changes::count(loaded.policies.len()),
                );
                *inner.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(loaded);
                Reload::Reloaded
            }
            Err(err) => {
                tracing::error!("{err}; the policies in force stay");
                Reload::Refused(err)
            }
        }
    }

    /// Polls the file every `every` on the tokio runtime, until every clone of this watch is
    /// dropped.
    pub fn spawn(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let watch = PolicyWatch { inner };
                // Reading and parsing a file blocks: off the runtime's workers.
                if tokio::task::spawn_blocking(move || drop(watch.poll()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        })
    }
}

fn load(
    path: &Path,
    key_check: Option<&SharedKeyCheck>,
    modified: Option<Stamp>,
) -> Result<LoadedPolicies, PolicyFileError> {
    let check = key_check.map(|c| c.as_ref() as &dyn Fn(&str) -> Result<(), String>);
    let policies = load_policies_file_with(path, check)?;
    Ok(LoadedPolicies {
        path: path.to_path_buf(),
        modified: modified.and_then(|s| s.0),
        policies,
    })
}
