//! The desktop app's behaviour without Tauri: connection, rules, stats, simulator, replay,
//! run history, export and metrics over the engine. The Tauri crate's commands are one-line
//! calls into [`AppCore`]; everything here is built, tested (and usable) without a window or
//! WebKitGTK.
//!
//! - [`error`]      the `{code, message, field}` error the UI receives
//! - [`connection`] the Redis in use: status, test, switch
//! - [`transport`]  single node or cluster, plain TCP or TLS: the TLS form and its errors
//! - [`topology`]   a cluster's nodes, roles, slots and round trips
//! - [`rules`]      rule drafts validated by the engine, the rule book
//! - [`settings`]   what is persisted, and how a damaged file is set aside
//! - [`sim`]        simulator requests, progress, summaries and events
//! - [`history`]    the kept runs on disk: bounded, restored after a restart
//! - [`runs`]       the commands over the history: list, rename, delete, records, export
//! - [`records`]    a run's records in columns, for charting
//! - [`inspect`]    reset, the HTTP headers of a decision, the workload preview
//! - [`peek`]       a kept run's client key read live, without spending
//! - [`export_path`] chart exports go exactly where the user confirmed
//! - [`coalesce`]   at most one `refetch-stats` per frame
//! - [`replay`]     a log replayed through rules: preview, progress, cancel, kept in the history
//! - [`kept_replay`] a replay as the history keeps it: the log identified, rules, report

pub mod coalesce;
pub mod connection;
pub mod error;
pub mod export_path;
pub mod history;
pub mod inspect;
pub mod kept_replay;
pub mod peek;
pub mod records;
pub mod replay;
pub mod rules;
pub mod runs;
pub mod settings;
pub mod sim;
pub mod topology;
pub mod transport;

use connection::{Connection, ConnectionStatus, ConnectionTest};
use error::{AppError, ErrorCode};
use history::History;
use ratelockr::telemetry::{now_ms, StatsPoint};
use ratelockr::{Metrics, Rule};
use rules::{RuleBook, RuleDraft};
use serde::Serialize;
use settings::{MetricsDraft, MetricsSettings, Persist, Settings};
use sim::{Relay, SimEvents, SimFinished, SimProgress, SimRequest, SimStatus};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

/// The last 30 seconds of one rule, or why Redis could not say (the fail-open counts, which
/// live in this process, are there either way).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RuleStats {
    pub rule: String,
    pub points: Vec<StatsPoint>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the app shows at start.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AppInfo {
    pub version: String,
    /// Problems met while loading the settings (a damaged file set aside, a refused rule).
    pub warnings: Vec<String>,
    pub data_dir: String,
}

/// A file written by an export.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Exported {
    pub path: String,
}

/// The metrics endpoint's state.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct MetricsStatus {
    pub settings: MetricsSettings,
    /// `http://127.0.0.1:<port>/api/metrics` while serving.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The port actually served on (the system's pick when the settings say 0).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Chart formats for [`AppCore::export_chart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ChartFormat {
    Png,
    Svg,
}

impl ChartFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ChartFormat::Png => "png",
            ChartFormat::Svg => "svg",
        }
    }
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

/// The app's state. Locks are std Mutexes held for field updates only, never across an await.
pub struct AppCore {
    metrics: Metrics,
    conn: RwLock<Connection>,
    redis_url: Mutex<Option<String>>,
    /// The TLS files (paths) and the insecure opt-out saved with `redis_url`.
    redis_tls: Mutex<ratelockr::TlsOptions>,
    rules: Mutex<RuleBook>,
    persist: Box<dyn Persist>,
    warnings: Mutex<Vec<String>>,
    sim: Mutex<SimSlot>,
    /// The kept runs. Lock order: `sim` before `history`, never the other way.
    history: Mutex<History>,
    /// The last run's records in columns, built during the run (small runs only), so its
    /// chart does not wait for its CSV to be read back.
    last_columns: Mutex<Option<records::RunRecords>>,
    metrics_slot: Mutex<MetricsSlot>,
    /// Serializes applying metrics settings (binding is async).
    metrics_apply: tokio::sync::Mutex<()>,
    /// One replay at a time, and the last one's report.
    replay: Mutex<replay::ReplaySlot>,
    data_dir: PathBuf,
}

impl std::fmt::Debug for AppCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppCore")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

/// Why the metrics endpoint did not start, in the app's terms (the engine's message names the
/// CLI's `--addr`, which means nothing here).
fn metrics_error(err: &ratelockr::metrics::ServeError, port: u16) -> String {
    match err {
        ratelockr::metrics::ServeError::AddrInUse { .. } => format!(
            "port {port} is in use by another program; choose another port here, or 0 for any free one"
        ),
        other => other.to_string(),
    }
}

/// The most records (requests × rules) a run may have for its columns to be kept in memory
/// after it ends: about 40 MB.
const MAX_CACHED_RECORDS: u64 = 1_000_000;

/// A run's name when the form gives none: what ran, on what traffic (cut to fit).
fn default_run_name(spec: &ratelockr::sim::SimSpec) -> String {
    spec.describe()
        .chars()
        .take(history::MAX_NAME_CHARS)
        .collect()
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
        if let Err(warning) = connection::decision_deadline_setting() {
            warnings.push(warning);
        }
        let conn = match Connection::open(
            settings.redis_url.as_deref(),
            &settings.redis_tls,
            &metrics,
        ) {
            Ok(conn) => conn,
            Err(err) if matches!(err.code, ErrorCode::InvalidUrl | ErrorCode::InvalidTls) => {
                warnings.push(format!(
                    "the saved Redis connection cannot be used ({}); using the automatic choice until you fix it in the Connection card (the saved settings are kept)",
                    err.message
                ));
                Connection::open(None, &ratelockr::TlsOptions::default(), &metrics)
                    .or_else(|err| without_redis(err, &metrics, &mut warnings))?
            }
            Err(err) => without_redis(err, &metrics, &mut warnings)?,
        };
        metrics.set_active_rules(settings.rules.len());
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
        Ok(AppCore {
            metrics,
            conn: RwLock::new(conn),
            redis_url: Mutex::new(settings.redis_url),
            redis_tls: Mutex::new(settings.redis_tls),
            rules: Mutex::new(RuleBook::new(settings.rules)),
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
            data_dir,
        })
    }

    fn connection(&self) -> Connection {
        self.conn.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn save(&self) -> Result<(), AppError> {
        let settings = Settings {
            redis_url: lock(&self.redis_url).clone(),
            redis_tls: lock(&self.redis_tls).clone(),
            metrics: lock(&self.metrics_slot).settings,
            rules: lock(&self.rules).rules().to_vec(),
            history: lock(&self.history).settings(),
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

    // --- connection -------------------------------------------------------------------------

    pub async fn connection_status(&self) -> ConnectionStatus {
        self.connection().status().await
    }

    pub async fn connection_test(
        &self,
        url: &str,
        tls: Option<ratelockr::TlsOptions>,
    ) -> Result<ConnectionTest, AppError> {
        connection::test(url, &transport::normalized(tls)).await
    }

    /// Switches to `url` (None or empty: automatic) with the TLS files `tls` without a
    /// restart, and remembers both. A running simulation keeps its own connection until it
    /// ends.
    pub async fn connection_switch(
        &self,
        url: Option<String>,
        tls: Option<ratelockr::TlsOptions>,
    ) -> Result<ConnectionStatus, AppError> {
        let url = url.filter(|u| !u.trim().is_empty());
        let tls = transport::normalized(tls);
        let metrics = self.metrics.clone();
        let (wanted, wanted_tls) = (url.clone(), tls.clone());
        let conn = tokio::task::spawn_blocking(move || {
            Connection::open(wanted.as_deref(), &wanted_tls, &metrics)
        })
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))??;
        conn.settle().await;
        *self.conn.write().unwrap_or_else(|e| e.into_inner()) = conn;
        *lock(&self.redis_url) = url;
        *lock(&self.redis_tls) = tls;
        self.save()?;
        let mut status = self.connection_status().await;
        if status.state == connection::LinkState::Unreachable {
            status.warning = Some(format!(
                "saved, but nothing answers at {} ({}); decisions fail open until it does",
                status.url,
                status.error.as_deref().unwrap_or("no reply")
            ));
        }
        Ok(status)
    }

    /// The cluster's nodes with their round trips (no nodes on a single Redis).
    pub async fn connection_topology(&self) -> Result<ratelockr::topology::Topology, AppError> {
        topology::read(&self.connection().limiter).await
    }

    // --- rules ------------------------------------------------------------------------------

    pub fn rules(&self) -> Vec<Rule> {
        lock(&self.rules).rules().to_vec()
    }

    pub fn rule_validate(&self, draft: &RuleDraft) -> Result<Rule, AppError> {
        draft.to_rule()
    }

    /// Creates (`original` None) or replaces a rule, persists, and returns all rules.
    pub fn rule_save(
        &self,
        original: Option<&str>,
        draft: &RuleDraft,
    ) -> Result<Vec<Rule>, AppError> {
        let rule = draft.to_rule()?;
        self.edit_rules(|book| book.upsert(original, rule))
    }

    pub fn rule_delete(&self, name: &str) -> Result<Vec<Rule>, AppError> {
        self.edit_rules(|book| book.remove(name).map(drop))
    }

    /// Applies `edit` to the rules and persists them; when saving fails, the rules are put back
    /// as they were, so memory never claims what the file does not hold.
    fn edit_rules(
        &self,
        edit: impl FnOnce(&mut RuleBook) -> Result<(), AppError>,
    ) -> Result<Vec<Rule>, AppError> {
        let mut book = lock(&self.rules);
        let before = book.clone();
        edit(&mut book)?;
        let rules = book.rules().to_vec();
        drop(book);
        if let Err(err) = self.save() {
            *lock(&self.rules) = before;
            return Err(err);
        }
        self.metrics.set_active_rules(rules.len());
        Ok(rules)
    }

    // --- stats ------------------------------------------------------------------------------

    /// The last 30 seconds of each rule: one pipelined read per rule.
    pub async fn stats(&self, rules: &[String]) -> Vec<RuleStats> {
        let limiter = self.connection().limiter;
        let now_second = now_ms() / 1000;
        let mut out = Vec::with_capacity(rules.len());
        for rule in rules.iter().take(16) {
            let (points, error) = match limiter.stats_at(rule, now_second).await {
                Ok(points) => (points, None),
                Err(err) => (
                    limiter.ledger().fail_open_series(rule, now_second),
                    Some(err.to_string()),
                ),
            };
            out.push(RuleStats {
                rule: rule.clone(),
                points,
                error,
            });
        }
        out
    }

    // --- simulator --------------------------------------------------------------------------

    /// Starts a run in the background (call it within a Tokio runtime); its events go to
    /// `events`. Only one run at a time. The run is kept in the history from its start.
    pub fn sim_start(
        self: &Arc<Self>,
        request: &SimRequest,
        events: Arc<dyn SimEvents>,
    ) -> Result<SimStatus, AppError> {
        let mut request = request.clone();
        // The seed actually used is kept, so the run can be repeated from the history.
        request.seed.get_or_insert_with(now_ms);
        let mut spec = request.to_spec(|name| lock(&self.rules).get(name).cloned())?;
        let name = match &request.name {
            Some(name) => history::valid_name(name)?,
            None => default_run_name(&spec),
        };
        let cancel = CancellationToken::new();
        let progress = Arc::new(Mutex::new(None));
        let id = {
            let mut slot = lock(&self.sim);
            if slot.cancel.is_some() {
                return Err(AppError::new(
                    ErrorCode::SimulationRunning,
                    "a simulation is already running; cancel it first",
                ));
            }
            let mut history = lock(&self.history);
            let id = history.next_id();
            if !request.continue_state {
                spec.scope = Some(ratelockr::sim::SimSpec::fresh_scope(&id));
            }
            history.begin(&id, name, request.clone(), spec.clone())?;
            slot.cancel = Some(cancel.clone());
            slot.rules = spec
                .targets
                .iter()
                .map(|t| t.rule.name().to_string())
                .collect();
            slot.progress = progress.clone();
            slot.error = None;
            id
        };
        let core = self.clone();
        let conn = self.connection();
        tokio::spawn(async move {
            let result = core
                .run(&conn, &spec, &id, events.clone(), &progress, cancel)
                .await;
            let finished = core.finish_run(&id, result);
            events.finished(&finished);
        });
        Ok(self.sim_status())
    }

    /// Keeps a run's ending in the history, then frees the simulator.
    fn finish_run(
        &self,
        id: &str,
        result: Result<ratelockr::sim::Report, AppError>,
    ) -> SimFinished {
        let error = result.as_ref().err().cloned();
        let (kept, summary) = {
            let mut history = lock(&self.history);
            let kept = history.finish(id, result);
            let summary = history.get(id).ok().and_then(|run| run.summary());
            (kept, summary)
        };
        let (warnings, error) = match kept {
            Ok(warnings) => (warnings, error),
            Err(err) => (Vec::new(), error.or(Some(err))),
        };
        let mut slot = lock(&self.sim);
        slot.cancel = None;
        slot.error = error.clone();
        SimFinished {
            summary,
            error,
            warnings,
        }
    }

    async fn run(
        &self,
        conn: &Connection,
        spec: &ratelockr::sim::SimSpec,
        id: &str,
        events: Arc<dyn SimEvents>,
        progress: &Mutex<Option<SimProgress>>,
        cancel: CancellationToken,
    ) -> Result<ratelockr::sim::Report, AppError> {
        let csv_path = lock(&self.history).records_path(id);
        let mut sink = ratelockr::export::CsvSink::create(&csv_path)
            .map_err(|e| AppError::new(ErrorCode::Export, e.to_string()))?;
        let mut relay = Relay::new(
            events,
            spec.targets
                .first()
                .map(|t| t.rule.name().to_string())
                .unwrap_or_default(),
            progress,
        );
        // Runs small enough to keep in memory keep their columns for the run chart.
        let records = spec
            .workload
            .planned_requests()
            .map(|n| n.saturating_mul(spec.targets.len() as u64));
        if records.is_some_and(|n| n <= MAX_CACHED_RECORDS) && spec.workload.retry.is_none() {
            relay = relay.with_columns(records::Columns::new(id, spec, 0));
        }
        // The backend stays alive (an embedded server, say) for the run even if the user
        // switches Redis meanwhile.
        let _backend = conn.backend.clone();
        let report =
            ratelockr::sim::run(&conn.limiter, spec, Some(&mut sink), &relay, cancel).await;
        // The last cue goes out after the last record and before `sim-finished`, so the live
        // chart's final fetch sees the whole run.
        relay.flush();
        let report = report?;
        let columns = relay
            .take_columns()
            .and_then(|c| c.finish(report.duration_ms).ok());
        *lock(&self.last_columns) = columns;
        Ok(report)
    }

    pub fn sim_cancel(&self) -> SimStatus {
        if let Some(cancel) = &lock(&self.sim).cancel {
            cancel.cancel();
        }
        self.sim_status()
    }

    pub fn sim_status(&self) -> SimStatus {
        let slot = lock(&self.sim);
        let progress = *lock(&slot.progress);
        let last = lock(&self.history).latest().and_then(|run| run.summary());
        SimStatus {
            running: slot.cancel.is_some(),
            rules: slot.rules.clone(),
            progress,
            last,
            error: slot.error.clone(),
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

    // --- metrics ----------------------------------------------------------------------------

    pub fn metrics_status(&self) -> MetricsStatus {
        let slot = lock(&self.metrics_slot);
        MetricsStatus {
            settings: slot.settings,
            url: slot.url.clone(),
            port: slot.port,
            error: slot.error.clone(),
        }
    }

    /// Applies (and remembers) the metrics settings: stops the endpoint, and starts it again on
    /// 127.0.0.1:`port` when enabled. A taken port is reported in the status, not fatal.
    pub async fn metrics_configure(&self, draft: MetricsDraft) -> Result<MetricsStatus, AppError> {
        let settings = draft.to_settings()?;
        let _applying = self.metrics_apply.lock().await;
        self.apply_metrics(settings).await
    }

    async fn apply_metrics(&self, settings: MetricsSettings) -> Result<MetricsStatus, AppError> {
        if let Some(old) = lock(&self.metrics_slot).shutdown.take() {
            old.cancel();
        }
        let (url, port, error, shutdown) = if settings.enabled {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, settings.port));
            match ratelockr::metrics::MetricsServer::bind(self.metrics.clone(), addr).await {
                Ok(server) => {
                    let bound = server
                        .local_addr()
                        .map(|a| a.port())
                        .unwrap_or(settings.port);
                    let token = CancellationToken::new();
                    let stop = token.clone();
                    tokio::spawn(async move {
                        if let Err(err) = server.run(stop.cancelled_owned()).await {
                            tracing::warn!("metrics endpoint stopped: {err}");
                        }
                    });
                    (
                        Some(format!(
                            "http://127.0.0.1:{bound}{}",
                            ratelockr::metrics::METRICS_PATH
                        )),
                        Some(bound),
                        None,
                        Some(token),
                    )
                }
                Err(err) => (None, None, Some(metrics_error(&err, settings.port)), None),
            }
        } else {
            (None, None, None, None)
        };
        {
            let mut slot = lock(&self.metrics_slot);
            slot.settings = settings;
            slot.applied = true;
            slot.url = url;
            slot.port = port;
            slot.error = error;
            slot.shutdown = shutdown;
        }
        self.save()?;
        Ok(self.metrics_status())
    }

    /// Starts the endpoint as the saved settings say (at app start).
    pub async fn metrics_start(&self) -> MetricsStatus {
        let _applying = self.metrics_apply.lock().await;
        let (settings, applied) = {
            let slot = lock(&self.metrics_slot);
            (slot.settings, slot.applied)
        };
        if applied {
            return self.metrics_status();
        }
        match self.apply_metrics(settings).await {
            Ok(status) => status,
            Err(err) => {
                let mut status = self.metrics_status();
                status.error = Some(err.message);
                status
            }
        }
    }
}
