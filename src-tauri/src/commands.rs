//! The IPC surface: each command is a one-line call into [`AppCore`] (or, for exports, a save
//! dialog and then one). No rate-limiting logic lives here.

use crate::core::connection::{ConnectionStatus, ConnectionTest};
use crate::core::error::AppError;
use crate::core::rules::RuleDraft;
use crate::core::settings::MetricsSettings;
use crate::core::sim::{SimRequest, SimStatus};
use crate::core::{AppCore, AppInfo, ChartFormat, Exported, MetricsStatus, RuleStats};
use crate::events::WindowEvents;
use crate::save_dialog::choose_path;
use ratelockr::Rule;
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

#[tauri::command]
pub async fn connection_test(core: Core<'_>, url: String) -> Result<ConnectionTest, AppError> {
    core.connection_test(&url).await
}

#[tauri::command]
pub async fn connection_switch(
    core: Core<'_>,
    url: Option<String>,
) -> Result<ConnectionStatus, AppError> {
    core.connection_switch(url).await
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

#[tauri::command]
pub async fn export_csv<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
) -> Result<Exported, AppError> {
    core.export_csv(&choose_path(&app, "ratelockr-run.csv", "CSV", "csv")?)
}

#[tauri::command]
pub async fn export_chart<R: Runtime>(
    app: AppHandle<R>,
    core: Core<'_>,
    format: ChartFormat,
) -> Result<Exported, AppError> {
    let name = format!("ratelockr-chart.{}", format.extension());
    let kind = format.extension().to_uppercase();
    core.export_chart(
        &choose_path(&app, &name, &kind, format.extension())?,
        format,
    )
}

#[tauri::command]
pub fn metrics_status(core: Core<'_>) -> MetricsStatus {
    core.metrics_status()
}

#[tauri::command]
pub async fn metrics_configure(
    core: Core<'_>,
    settings: MetricsSettings,
) -> Result<MetricsStatus, AppError> {
    core.metrics_configure(settings).await
}
