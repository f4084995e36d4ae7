//! [`AppCore`]: the app's state, which the Tauri commands call into, one file per command
//! group. This file holds the state itself, its opening and saving; the children add the
//! commands over it.
//!
//! - [`connection`] the Redis in use: status, test, switch, topology
//! - [`rules`]      the rule book: validate, save, delete
//! - [`stats`]      the last 30 seconds of each rule, for the live chart
//! - [`sim`]        a simulation started, observed, cancelled and kept
//! - [`runs`]       the kept runs: list, rename, delete, records, export
//! - [`replay`]     a log replayed through rules, kept in the history
//! - [`peek`]       a kept run's client key read live, without spending
//! - [`inspect`]    reset, the HTTP headers of a decision, the workload preview
//! - [`metrics`]    the Prometheus endpoint on loopback
//! - [`watch`]      a policies file followed live, and its policies' last 30 s in Redis
//! - [`policy_file`] the Policies view's file: open, new, looked at, saved in place
//! - [`policies`]   the open file's policies by name, for the simulator, replay and inspector

pub mod connection;
pub mod inspect;
pub mod metrics;
pub mod peek;
pub mod policies;
pub mod policy_file;
pub mod replay;
pub mod rules;
pub mod runs;
pub mod sim;
pub mod stats;
pub mod watch;

use crate::connection::{decision_deadline_setting, Connection};
use crate::error::{AppError, ErrorCode};
use crate::history::History;
use crate::records::RunRecords;
use crate::replay::ReplayStatus;
use crate::rules::RuleBook;
use crate::settings::{MetricsSettings, Persist, Settings};
use crate::sim::SimProgress;
use crate::store;
use ratelockr::Metrics;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

/// What the app shows at start.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AppInfo {
    pub version: String,
    /// Problems met while loading the settings (a damaged file set aside, a refused rule).
    pub warnings: Vec<String>,
    pub data_dir: String,
}

#[derive(Default)]
struct SimSlot {
    /// Set while a run goes on.
    cancel: Option<CancellationToken>,
    rules: Vec<String>,
    progress: Arc<Mutex<Option<SimProgress>>>,
    error: Option<AppError>,
}

struct MetricsSlot {
    settings: MetricsSettings,
    /// Set once settings were applied, so a late start-up cannot undo the user's choice.
    applied: bool,
    shutdown: Option<CancellationToken>,
    url: Option<String>,
    port: Option<u16>,
    error: Option<String>,
}

/// What [`AppCore`] keeps of replays.
#[derive(Debug, Default)]
struct ReplaySlot {
    cancel: Option<CancellationToken>,
    status: ReplayStatus,
}

/// The app's state. Locks are std Mutexes held for field updates only, never across an await.
pub struct AppCore {
    metrics: Metrics,
    conn: RwLock<Connection>,
    redis_url: Mutex<Option<String>>,
    /// The TLS files (paths) and the insecure opt-out saved with `redis_url`.
    redis_tls: Mutex<ratelockr::TlsOptions>,
    rules: Mutex<RuleBook>,
    /// Policies an older version kept in its settings, until they are written to a file.
    legacy_policies: Mutex<Vec<ratelockr::Policy>>,
    /// The policies file the Policies view has open: the one truth of the app's policies.
    policy_file: Mutex<Option<crate::policy_file::PolicyFile>>,
    persist: Box<dyn Persist>,
    /// Held from reading the settings to writing them: two saves (an edit's and a background
    /// one's, such as the embedded Redis's port) write in the order they read, so the file
    /// never ends with the older one's view.
    saving: Mutex<()>,
    warnings: Mutex<Vec<String>>,
    sim: Mutex<SimSlot>,
    /// The kept runs. Lock order: `sim` before `history`, never the other way.
    history: Mutex<History>,
    /// The last run's records in columns, built during the run (small runs only), so its
    /// chart does not wait for its CSV to be read back.
    last_columns: Mutex<Option<RunRecords>>,
    metrics_slot: Mutex<MetricsSlot>,
    /// Serializes applying metrics settings (binding is async).
    metrics_apply: tokio::sync::Mutex<()>,
    /// One replay at a time, and the last one's report.
    replay: Mutex<ReplaySlot>,
    /// The policies file the Watch panel follows.
    watch: Mutex<watch::WatchSlot>,
    /// The embedded redis-server's port, kept across restarts (the settings remember it).
    embedded_port: Mutex<Option<u16>>,
    data_dir: PathBuf,
}

impl std::fmt::Debug for AppCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppCore")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

/// No Redis answers and none can be started (redis-server is not installed): the app still
/// opens, on the default URL, failing open, with the reason (and how to fix it) in a banner.
fn without_redis(
    err: AppError,
    metrics: &Metrics,
    warnings: &mut Vec<String>,
) -> Result<Connection, AppError> {
    if err.code != ErrorCode::EmbeddedUnavailable {
        return Err(err);
    }
    warnings.push(err.message);
    let no_tls = ratelockr::TlsOptions::default();
    Connection::open(Some(ratelockr::DEFAULT_REDIS_URL), &no_tls, metrics).map(|mut conn| {
        conn.configured = false;
        conn
    })
}

/// Policies an older version kept in its own settings are written to a policies file in the
/// data dir (a new name: nothing is replaced), which is opened when no file is open: nothing is
/// lost, and from then on the file is the one truth. Returns what stays in the settings (all of
/// them when the file cannot be written), the file to open, and whether they moved.
fn migrate_policies(
    legacy: Vec<ratelockr::Policy>,
    open: Option<PathBuf>,
    data_dir: &std::path::Path,
    warnings: &mut Vec<String>,
) -> (Vec<ratelockr::Policy>, Option<PathBuf>, bool) {
    if legacy.is_empty() {
        return (legacy, open, false);
    }
    let names = legacy
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ");
    match crate::policy_file::migrate(data_dir, &legacy) {
        Ok(path) if open.is_none() => {
            warnings.push(format!(
                "The policies this app used to keep in its own settings ({names}) are now in the policies file {}, open in the Policies view: the file is the one truth, and `ratelockr serve --policies` loads it as it is",
                path.display()
            ));
            (Vec::new(), Some(path), true)
        }
        Ok(path) => {
            warnings.push(format!(
                "The policies this app used to keep in its own settings ({names}) were written to {}; the Policies view keeps the file it had open (open that one to use them)",
                path.display()
            ));
            (Vec::new(), open, true)
        }
        Err(err) => {
            warnings.push(format!(
                "The policies this app kept in its own settings ({names}) could not be written to a policies file ({}); they stay in the settings and are moved at the next start",
                err.message
            ));
            (legacy, open, false)
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AppCore {
    /// Opens the configured Redis (or the default, or an embedded one: blocking, it may start a
    /// redis-server). A configured URL that does not parse, or TLS files that cannot be read
    /// (moved, damaged), are reported and the automatic choice used instead, so a bad setting
    /// never keeps the app from starting; the saved settings are kept as they were.
    pub fn new(
        settings: Settings,
        persist: Box<dyn Persist>,
        mut warnings: Vec<String>,
        data_dir: PathBuf,
    ) -> Result<Self, AppError> {
        let metrics = Metrics::new();
        if let Err(warning) = decision_deadline_setting() {
            warnings.push(warning.to_string());
        }
        let conn = match Connection::open_on(
            settings.redis_url.as_deref(),
            &settings.redis_tls,
            &metrics,
            settings.embedded_port,
        ) {
            Ok(conn) => conn,
            Err(err) if matches!(err.code, ErrorCode::InvalidUrl | ErrorCode::InvalidTls) => {
                warnings.push(format!(
                    "the saved Redis connection cannot be used ({}); using the automatic choice until you fix it in the Connection card (the saved settings are kept)",
                    err.message
                ));
                Connection::open_on(
                    None,
                    &ratelockr::TlsOptions::default(),
                    &metrics,
                    settings.embedded_port,
                )
                .or_else(|err| without_redis(err, &metrics, &mut warnings))?
            }
            Err(err) => without_redis(err, &metrics, &mut warnings)?,
        };
        let (embedded_port, port_moved) =
            connection::remember_port(settings.embedded_port, &conn, &mut warnings);
        metrics.set_active_rules(settings.rules.len());
        let watch = watch::WatchSlot::reopen(settings.watch_file, &mut warnings);
        let (legacy, policies_file, migrated) = migrate_policies(
            settings.policies,
            settings.policies_file,
            &data_dir,
            &mut warnings,
        );
        let policy_file = policies_file.as_deref().map(|path| {
            let file = crate::policy_file::PolicyFile::reopen(path);
            if let Some(err) = file.error() {
                warnings.push(format!(
                    "Policies: the policies file open at the last run does not load now ({}); the Policies view takes it up as soon as it loads, or open another",
                    err.message
                ));
            }
            file
        });
        let history = History::open(&data_dir, settings.history);
        // Entries set aside while opening go to the start-up banner too.
        warnings.extend(history.list().warnings);
        let rules = history
            .latest()
            .map(|run| {
                run.spec
                    .targets
                    .iter()
                    .map(|t| t.rule.name().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let core = AppCore {
            metrics,
            conn: RwLock::new(conn),
            redis_url: Mutex::new(settings.redis_url),
            redis_tls: Mutex::new(settings.redis_tls),
            rules: Mutex::new(RuleBook::new(settings.rules)),
            legacy_policies: Mutex::new(legacy),
            policy_file: Mutex::new(policy_file),
            persist,
            warnings: Mutex::new(warnings),
            sim: Mutex::new(SimSlot {
                rules,
                ..SimSlot::default()
            }),
            history: Mutex::new(history),
            last_columns: Mutex::new(None),
            metrics_slot: Mutex::new(MetricsSlot {
                settings: settings.metrics,
                applied: false,
                shutdown: None,
                url: None,
                port: None,
                error: None,
            }),
            metrics_apply: tokio::sync::Mutex::new(()),
            replay: Mutex::default(),
            watch: Mutex::new(watch),
            embedded_port: Mutex::new(embedded_port),
            saving: Mutex::new(()),
            data_dir,
        };
        if port_moved && !migrated {
            if let Err(err) = core.save() {
                lock(&core.warnings).push(err.message);
            }
        }
        if migrated {
            // The settings drop their copy now: the file holds the policies.
            if let Err(err) = core.save() {
                lock(&core.warnings).push(format!(
                    "{}; the moved policies stay in the settings too, and are moved again at the next start",
                    err.message
                ));
            }
        }
        Ok(core)
    }

    /// Opens the settings and the run history in `data_dir` (created if missing), then Redis
    /// as [`AppCore::new`] does. Warnings met while reading the settings are logged and kept
    /// for the start-up banner.
    pub fn open(data_dir: PathBuf) -> Result<Self, AppError> {
        let io = |err: std::io::Error| AppError::new(ErrorCode::Store, err.to_string());
        std::fs::create_dir_all(&data_dir).map_err(io)?;
        let (settings, persist, warnings) =
            store::open(&data_dir.join(store::SETTINGS_FILE)).map_err(io)?;
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        AppCore::new(settings, Box::new(persist), warnings, data_dir)
    }

    /// As [`AppCore::open`], with the settings kept by the store `persist` makes from the
    /// settings file's path and its entries as read (the desktop app's tauri-plugin-store). A
    /// damaged file is set aside and refused entries reported first, as ever.
    pub fn open_with<E: std::fmt::Display>(
        data_dir: PathBuf,
        persist: impl FnOnce(
            &std::path::Path,
            serde_json::Map<String, serde_json::Value>,
        ) -> Result<Box<dyn Persist>, E>,
    ) -> Result<Self, AppError> {
        let io = |err: std::io::Error| AppError::new(ErrorCode::Store, err.to_string());
        std::fs::create_dir_all(&data_dir).map_err(io)?;
        let path = data_dir.join(store::SETTINGS_FILE);
        let (settings, entries, warnings) = store::load(&path).map_err(io)?;
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        let persist = persist(&path, entries).map_err(|e| {
            AppError::new(
                ErrorCode::Store,
                format!("cannot open the settings store: {e}"),
            )
        })?;
        AppCore::new(settings, persist, warnings, data_dir)
    }

    fn connection(&self) -> Connection {
        self.conn.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Applies `edit` to a book (the rules) and persists it; when saving fails,
    /// the book is put back as it was, so memory never claims what the file does not hold.
    fn edit_book<T: crate::book::Named>(
        &self,
        book: &Mutex<crate::book::Book<T>>,
        edit: impl FnOnce(&mut crate::book::Book<T>) -> Result<(), AppError>,
    ) -> Result<Vec<T>, AppError> {
        let mut guard = lock(book);
        let before = guard.clone();
        edit(&mut guard)?;
        let items = guard.items().to_vec();
        drop(guard);
        if let Err(err) = self.save() {
            *lock(book) = before;
            return Err(err);
        }
        Ok(items)
    }

    fn save(&self) -> Result<(), AppError> {
        let _in_order = lock(&self.saving);
        let settings = Settings {
            redis_url: lock(&self.redis_url).clone(),
            redis_tls: lock(&self.redis_tls).clone(),
            metrics: lock(&self.metrics_slot).settings,
            rules: lock(&self.rules).items().to_vec(),
            policies: lock(&self.legacy_policies).clone(),
            history: lock(&self.history).settings(),
            watch_file: lock(&self.watch).file.clone(),
            policies_file: self.policy_file_path(),
            embedded_port: *lock(&self.embedded_port),
        };
        self.persist
            .save(settings.entries())
            .map_err(|e| AppError::new(ErrorCode::Store, format!("could not save settings: {e}")))
    }

    pub fn info(&self) -> AppInfo {
        AppInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            warnings: lock(&self.warnings).clone(),
            data_dir: self.data_dir.display().to_string(),
        }
    }

    /// Stops what this app started: a running simulation, the metrics endpoint, and the
    /// embedded redis-server (which lives as long as the last reference to its backend). The
    /// app calls it on exit, since Tauri ends the process without dropping managed state.
    pub fn shutdown(&self) {
        self.sim_cancel();
        if let Some(token) = lock(&self.metrics_slot).shutdown.take() {
            token.cancel();
        }
        let mut conn = self.conn.write().unwrap_or_else(|e| e.into_inner());
        let target = conn.backend.target().clone();
        conn.backend = Arc::new(ratelockr::Backend::external(target));
    }
}
