//! The IPC surface: each command is a one-line call into [`AppCore`] (or, for exports, a save
//! dialog and then one). No rate-limiting logic lives here.

use crate::events::WindowEvents;
use crate::open_dialog::{choose_log, choose_pem, choose_policies, choose_policies_file};
use crate::save_dialog::choose_path;
use ratelockr::headers::HttpAnswer;
use ratelockr::topology::Topology;
use ratelockr::{Decision, Policy, Rule, TlsOptions};
use ratelockr_app_core::app::inspect::{self, ResetResult, WorkloadPreview};
use ratelockr_app_core::app::metrics::MetricsStatus;
use ratelockr_app_core::app::peek::KeyPeek;
use ratelockr_app_core::app::stats::RuleStats;
use ratelockr_app_core::app::watch::WatchStatus;
use ratelockr_app_core::app::{AppCore, AppInfo};
use ratelockr_app_core::connection::{ConnectionStatus, ConnectionTest};
use ratelockr_app_core::error::AppError;
use ratelockr_app_core::export_path::{confirmed_format, ChartFormat, Exported};
use ratelockr_app_core::history::{HistorySettings, RunHistory};
use ratelockr_app_core::kept_replay::ReplayRunInfo;
use ratelockr_app_core::kept_run::RunInfo;
use ratelockr_app_core::policy_file::{FileVersion, PolicyFileStatus};
use ratelockr_app_core::records::RunRecords;
use ratelockr_app_core::replay::{self, ReplayRequest, ReplayStatus};
use ratelockr_app_core::rules::RuleDraft;
use ratelockr_app_core::settings::MetricsDraft;
use ratelockr_app_core::sim::{SimRequest, SimStatus};
use ratelockr_lab::export::ChartView;
use ratelockr_lab::replay::{ParseSpec, Preview};
use std::sync::Arc;
use tauri::{AppHandle, Runtime, State};

type Core<'a> = State<'a, Arc<AppCore>>;

#[tauri::command]
pub fn app_info(core: Core<'_>) -> AppInfo {
    core.info()
}

#[tauri::command]
pub async fn connection_status(core: Core<'_>) -> Result<ConnectionStatus, AppError> {
    Ok(core.connection_status().await)
}

/// `tls` (CA file, client certificate and key, insecure) goes with a `rediss://` URL.
#[tauri::command]
pub async fn connection_test(
    core: Core<'_>,
    url: String,
    tls: Option<TlsOptions>,
) -> Result<ConnectionTest, AppError> {
    core.connection_test(&url, tls).await
}

#[tauri::command]
pub async fn connection_switch(
    core: Core<'_>,
    url: Option<String>,
    tls: Option<TlsOptions>,
) -> Result<ConnectionStatus, AppError> {
    core.connection_switch(url, tls).await
}

/// A TLS file for the connection form's `field` (`tls_ca`, `tls_cert`, `tls_key`), from the
/// open dialog: its path only, read and checked on Test and Use.
#[tauri::command]
pub async fn connection_pick_file<R: Runtime>(
    app: AppHandle<R>,
    field: String,
) -> Result<String, AppError> {
    choose_pem(&app, &field)
}

/// The cluster's nodes (none on a single Redis): read when asked, never polled.
#[tauri::command]
pub async fn connection_topology(core: Core<'_>) -> Result<Topology, AppError> {
    core.connection_topology().await
}

#[tauri::command]
pub fn rules_list(core: Core<'_>) -> Vec<Rule> {
    core.rules()
}

#[tauri::command]
pub fn rule_validate(core: Core<'_>, draft: RuleDraft) -> Result<Rule, AppError> {
    core.rule_validate(&draft)
}

#[tauri::command]
pub fn rule_save(
    core: Core<'_>,
    original: Option<String>,
    draft: RuleDraft,
) -> Result<Vec<Rule>, AppError> {
    core.rule_save(original.as_deref(), &draft)
}

#[tauri::command]
pub fn rule_delete(core: Core<'_>, name: String) -> Result<Vec<Rule>, AppError> {
    core.rule_delete(&name)
}

/// `draft`: the policy in its policies-file JSON form, as the editor holds it.
#[tauri::command]
pub fn policy_validate(core: Core<'_>, draft: serde_json::Value) -> Result<Policy, AppError> {
    core.policy_validate(&draft)
}

/// The open policies file, looked at again: a change made outside the app is taken, an
/// invalid one reported (the last good policies stay).
#[tauri::command]
pub async fn policies_file(core: Core<'_>) -> Result<PolicyFileStatus, AppError> {
    Ok(core.policy_file_status())
}

/// A policies file from the open dialog, edited in place from now on (and after a restart).
#[tauri::command]
pub async fn policies_file_open<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
) -> Result<PolicyFileStatus, AppError> {
    core.policy_file_open(&choose_policies_file(&app)?)
}

/// A new policies file where the save dialog confirmed, written by its first save.
#[tauri::command]
pub async fn policies_file_new<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
) -> Result<PolicyFileStatus, AppError> {
    let dest = choose_path(&app, "policies.toml", "Policies file", "toml")?;
    core.policy_file_new(&dest.display().to_string())
}

/// A policy saved in the open file; `base`: the file's version when the edit began.
#[tauri::command]
pub async fn policy_file_save(
    core: Core<'_>,
    original: Option<String>,
    draft: serde_json::Value,
    base: FileVersion,
    overwrite: bool,
) -> Result<PolicyFileStatus, AppError> {
    core.policy_file_save(original.as_deref(), &draft, &base, overwrite)
}

/// The rule `name` put into the open policies file as a policy of one limit.
#[tauri::command]
pub async fn rule_to_policies_file(
    core: Core<'_>,
    name: String,
) -> Result<PolicyFileStatus, AppError> {
    core.rule_to_policy_file(&name)
}

#[tauri::command]
pub async fn policy_file_delete(
    core: Core<'_>,
    name: String,
    base: FileVersion,
    overwrite: bool,
) -> Result<PolicyFileStatus, AppError> {
    core.policy_file_delete(&name, &base, overwrite)
}

#[tauri::command]
pub async fn stats(core: Core<'_>, rules: Vec<String>) -> Result<Vec<RuleStats>, AppError> {
    Ok(core.stats(&rules).await)
}

/// Async so that it runs on the async runtime, where the run is spawned.
#[tauri::command]
pub async fn sim_start<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    request: SimRequest,
) -> Result<SimStatus, AppError> {
    core.sim_start(&request, Arc::new(WindowEvents::new(app)))
}

#[tauri::command]
pub fn sim_cancel(core: Core<'_>) -> SimStatus {
    core.sim_cancel()
}

#[tauri::command]
pub fn sim_status(core: Core<'_>) -> SimStatus {
    core.sim_status()
}

/// Exports a kept run's records (`id` None: the last run).
#[tauri::command]
pub async fn export_csv<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    id: Option<String>,
) -> Result<Exported, AppError> {
    let name = core.run_export_name(id.as_deref(), "", "csv");
    let dest = choose_path(&app, &name, "CSV", "csv")?;
    core.export_csv(&dest, id.as_deref())
}

/// Exports a kept run's chart (`id` None: the last run) to exactly the path the user
/// confirmed, in the format that name asks for: `view` as the screen shows it, or (None) the
/// run's default view.
#[tauri::command]
pub async fn export_chart<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    format: ChartFormat,
    id: Option<String>,
    view: Option<ChartView>,
) -> Result<Exported, AppError> {
    // Refused before the dialog: nothing to confirm for a view that cannot be drawn.
    view.as_ref().map(ChartView::validate).transpose()?;
    let name = core.run_export_name(id.as_deref(), "-chart", format.extension());
    let kind = format.extension().to_uppercase();
    let dest = choose_path(&app, &name, &kind, format.extension())?;
    let format = confirmed_format(&dest)?;
    core.export_chart(&dest, format, id.as_deref(), view.as_ref())
}

#[tauri::command]
pub fn runs_list(core: Core<'_>) -> RunHistory {
    core.runs_list()
}

#[tauri::command]
pub fn run_rename(core: Core<'_>, id: String, name: String) -> Result<RunInfo, AppError> {
    core.run_rename(&id, &name)
}

#[tauri::command]
pub fn run_delete(core: Core<'_>, id: String) -> Result<RunHistory, AppError> {
    core.run_delete(&id)
}

/// Async so that reading a long run's records does not hold up the main thread.
#[tauri::command]
pub async fn run_records(core: Core<'_>, id: String) -> Result<RunRecords, AppError> {
    core.run_records(&id)
}

#[tauri::command]
pub fn history_configure(
    core: Core<'_>,
    settings: HistorySettings,
) -> Result<RunHistory, AppError> {
    core.history_configure(settings)
}

#[tauri::command]
pub async fn limiter_reset(
    core: Core<'_>,
    rule: String,
    key: Option<String>,
) -> Result<ResetResult, AppError> {
    core.limiter_reset(&rule, key.as_deref()).await
}

/// A kept run's client key, read live without spending (the engine's peek).
#[tauri::command]
pub async fn limiter_peek(
    core: Core<'_>,
    run: String,
    target: usize,
    key: String,
) -> Result<KeyPeek, AppError> {
    core.limiter_peek(&run, target, &key).await
}

#[tauri::command]
pub fn decision_headers(rule: Rule, decision: Decision) -> HttpAnswer {
    inspect::decision_headers(&rule, &decision)
}

#[tauri::command]
pub fn workload_preview(request: SimRequest) -> Result<WorkloadPreview, AppError> {
    inspect::workload_preview(&request)
}

#[tauri::command]
pub fn metrics_status(core: Core<'_>) -> MetricsStatus {
    core.metrics_status()
}

#[tauri::command]
pub async fn metrics_configure(
    core: Core<'_>,
    settings: MetricsDraft,
) -> Result<MetricsStatus, AppError> {
    core.metrics_configure(settings).await
}

/// The log to replay, from the open dialog.
#[tauri::command]
pub async fn replay_open<R: Runtime>(app: AppHandle<R>) -> Result<String, AppError> {
    choose_log(&app)
}

/// The sample log the project ships (Replay's "Try the sample log").
#[tauri::command]
pub fn replay_sample(core: Core<'_>) -> Result<String, AppError> {
    core.replay_sample()
}

#[tauri::command]
pub async fn replay_preview(path: String, parse: ParseSpec) -> Result<Preview, AppError> {
    replay::preview(&path, &parse)
}

/// Async so that it runs on the async runtime, where the replay is spawned.
#[tauri::command]
pub async fn replay_start<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    request: ReplayRequest,
) -> Result<ReplayStatus, AppError> {
    core.replay_start(&request, Arc::new(WindowEvents::new(app)))
}

#[tauri::command]
pub fn replay_cancel(core: Core<'_>) -> ReplayStatus {
    core.replay_cancel()
}

#[tauri::command]
pub fn replay_status(core: Core<'_>) -> ReplayStatus {
    core.replay_status()
}

/// A kept replay, to show again (after a restart too).
#[tauri::command]
pub fn replay_reopen(core: Core<'_>, id: String) -> Result<ReplayStatus, AppError> {
    core.replay_reopen(&id)
}

#[tauri::command]
pub fn replay_rename(core: Core<'_>, id: String, name: String) -> Result<ReplayRunInfo, AppError> {
    core.replay_rename(&id, &name)
}

/// A kept replay's decisions as CSV; `id` None: the newest replay.
#[tauri::command]
pub async fn replay_export_csv<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    id: Option<String>,
) -> Result<Exported, AppError> {
    let name = core.replay_export_name(id.as_deref(), "", "csv");
    let dest = choose_path(&app, &name, "CSV", "csv")?;
    core.replay_export_csv(&dest, id.as_deref())
}

/// A kept replay's chart (`heatmap` false) or its sweep's heatmaps, in the format the
/// confirmed file name asks for; `id` None: the newest replay.
#[tauri::command]
pub async fn replay_export_chart<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    format: ChartFormat,
    heatmap: bool,
    id: Option<String>,
) -> Result<Exported, AppError> {
    let stem = if heatmap { "heatmap" } else { "chart" };
    let name = core.replay_export_name(id.as_deref(), &format!("-{stem}"), format.extension());
    let kind = format.extension().to_uppercase();
    let dest = choose_path(&app, &name, &kind, format.extension())?;
    confirmed_format(&dest)?;
    core.replay_export_chart(&dest, heatmap, id.as_deref())
}

/// Watch: a policies file from the open dialog, followed from now on (and after a restart).
#[tauri::command]
pub async fn watch_choose<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
) -> Result<WatchStatus, AppError> {
    let path = choose_policies(&app)?;
    core.watch_open(&path).await
}

/// The watched file looked at again, and its policies' last 30 seconds.
#[tauri::command]
pub async fn watch_read(core: Core<'_>) -> Result<WatchStatus, AppError> {
    Ok(core.watch_read().await)
}

#[tauri::command]
pub async fn watch_close(core: Core<'_>) -> Result<WatchStatus, AppError> {
    core.watch_close().await
}
