//! RateLockr's desktop app: a thin Tauri v2 layer over [`ratelockr_app_core`], the app's
//! behaviour without Tauri (state, connection, rules, simulator, replay, run history...).
//!
//! - [`commands`]    `#[tauri::command]`s, one-line calls into `ratelockr_app_core`
//! - [`events`]      simulator and replay events to the window
//! - [`save_dialog`] where exports go (native dialog, or a directory for tests)
//! - [`open_dialog`] the log to replay, the TLS files and the policies file to watch (native
//!   dialog, or a path for tests)
//! - [`settings_store`] the settings' entries in tauri-plugin-store, each save atomic
//! - [`window_fit`]  the window shrunk to fit a small screen
//! - `run`           one app per user (a second launch focuses its window), the window's size
//!   and position remembered
//! - `bindings`      (tests) the commands `ui/src/api.ts` calls are registered and allowed

#[cfg(test)]
mod bindings;
pub mod commands;
pub mod events;
pub mod open_dialog;
pub mod save_dialog;
pub mod settings_store;
pub mod window_fit;

use ratelockr_app_core::AppCore;
use std::path::PathBuf;
use std::sync::Arc;
use tauri::{Builder, Manager, Runtime};

/// Overrides the data directory (settings, the last run's CSV): tests and side-by-side copies.
pub const DATA_DIR_ENV: &str = "RATELOCKR_DATA_DIR";

/// The commands the window may call; capabilities/main.json grants exactly these.
#[macro_export]
macro_rules! handler {
    () => {
        tauri::generate_handler![
            $crate::commands::app_info,
            $crate::commands::connection_status,
            $crate::commands::connection_test,
            $crate::commands::connection_switch,
            $crate::commands::connection_topology,
            $crate::commands::connection_pick_file,
            $crate::commands::rules_list,
            $crate::commands::rule_validate,
            $crate::commands::rule_save,
            $crate::commands::rule_delete,
            $crate::commands::policy_validate,
            $crate::commands::policies_file,
            $crate::commands::policies_file_open,
            $crate::commands::policies_file_new,
            $crate::commands::policy_file_save,
            $crate::commands::policy_file_delete,
            $crate::commands::rule_to_policies_file,
            $crate::commands::stats,
            $crate::commands::sim_start,
            $crate::commands::sim_cancel,
            $crate::commands::sim_status,
            $crate::commands::export_csv,
            $crate::commands::export_chart,
            $crate::commands::metrics_status,
            $crate::commands::metrics_configure,
            $crate::commands::runs_list,
            $crate::commands::run_rename,
            $crate::commands::run_delete,
            $crate::commands::run_records,
            $crate::commands::history_configure,
            $crate::commands::limiter_reset,
            $crate::commands::limiter_peek,
            $crate::commands::decision_headers,
            $crate::commands::workload_preview,
            $crate::commands::replay_open,
            $crate::commands::replay_sample,
            $crate::commands::replay_preview,
            $crate::commands::replay_start,
            $crate::commands::replay_cancel,
            $crate::commands::replay_status,
            $crate::commands::replay_reopen,
            $crate::commands::replay_rename,
            $crate::commands::replay_export_csv,
            $crate::commands::replay_export_chart,
            $crate::commands::watch_choose,
            $crate::commands::watch_read,
            $crate::commands::watch_close,
        ]
    };
}

/// The app on any runtime: plugins and commands. `run` adds [`install`] as its setup; the
/// tests, on the mock runtime, call [`install`] after building.
pub fn app<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_store::Builder::default().build())
        .invoke_handler(handler!())
}

/// Opens the settings and Redis, puts the state under management and starts the metrics
/// endpoint. `data_dir` None: `$RATELOCKR_DATA_DIR`, else the platform's app data directory.
pub fn install<R: Runtime>(
    app: &tauri::AppHandle<R>,
    data_dir: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    // The limiter's connection manager needs the async runtime's context to exist.
    let core = tauri::async_runtime::block_on(async { open_core(app, data_dir) })?;
    let metrics_core = core.clone();
    tauri::async_runtime::spawn(async move {
        let status = metrics_core.metrics_start().await;
        if let Some(err) = status.error {
            tracing::warn!("metrics endpoint not started: {err}");
        }
    });
    app.manage(core);
    Ok(())
}

/// `$RATELOCKR_DATA_DIR`, when set and not empty.
fn env_data_dir() -> Option<PathBuf> {
    std::env::var_os(DATA_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

fn default_data_dir<R: Runtime>(
    app: &tauri::AppHandle<R>,
) -> Result<PathBuf, Box<dyn std::error::Error>> {
    match env_data_dir() {
        Some(dir) => Ok(dir),
        None => Ok(app.path().app_data_dir()?),
    }
}

/// Opens the main window as tauri.conf.json describes it (`"create": false` there, so that it
/// opens here). With `$RATELOCKR_DATA_DIR` set, the webview keeps its own data (WebKit's
/// caches and storage) under it too, in `webview/`: a test run writes nothing in the home
/// directory, and no earlier run's webview data reaches it.
/// `restored`: the window-state plugin has the user's last size and place for it.
fn open_main_window<R: Runtime>(app: &tauri::AppHandle<R>, restored: bool) -> tauri::Result<()> {
    let Some(config) = app.config().app.windows.iter().find(|w| w.label == "main") else {
        return Ok(());
    };
    let mut config = config.clone();
    // A window placed by the user last time opens there (the window-state plugin restores it
    // as the window is made); centring it afterwards would undo that.
    if restored {
        config.center = false;
    }
    let mut window = tauri::WebviewWindowBuilder::from_config(app, &config)?;
    if let Some(dir) = env_data_dir() {
        window = window.data_directory(dir.join("webview"));
    }
    window.build()?;
    Ok(())
}

fn open_core<R: Runtime>(
    app: &tauri::AppHandle<R>,
    data_dir: Option<PathBuf>,
) -> Result<Arc<AppCore>, Box<dyn std::error::Error>> {
    let dir = match data_dir {
        Some(dir) => dir,
        None => default_data_dir(app)?,
    };
    Ok(Arc::new(AppCore::open_with(dir, |path, entries| {
        settings_store::open(app, path, entries)
    })?))
}

/// The app's Tauri context (config, assets, capabilities) from the root tauri.conf.json.
pub fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!("../tauri.conf.json")
}

/// Waits for SIGINT or SIGTERM and names it; None if the signals cannot be listened to.
async fn stop_signal() -> Option<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok()?;
        tokio::select! {
            ok = tokio::signal::ctrl_c() => ok.ok().map(|()| "SIGINT"),
            _ = term.recv() => Some("SIGTERM"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.ok().map(|()| "Ctrl-C")
    }
}

/// Brings the running app's window to the front: what a second launch does instead of opening
/// a second app (and a second embedded Redis).
fn focus_main<R: Runtime>(app: &tauri::AppHandle<R>) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// The window's size, position and maximized state across restarts. With
/// `$RATELOCKR_DATA_DIR` set (a test, a side-by-side copy) they are kept under it, so a test
/// run starts at the configured size and never moves the user's own window.
fn window_state<R: Runtime>() -> tauri::plugin::TauriPlugin<R> {
    use tauri_plugin_window_state::StateFlags;
    let mut plugin = tauri_plugin_window_state::Builder::new()
        .with_state_flags(StateFlags::SIZE | StateFlags::POSITION | StateFlags::MAXIMIZED);
    if let Some(dir) = env_data_dir() {
        // An absolute name: the plugin joins it to its config directory, which it replaces.
        plugin = plugin.with_filename(dir.join("window-state.json").display().to_string());
    }
    plugin.build()
}

/// True when the window-state plugin (registered by [`run`]) has a size and place saved for
/// the main window.
fn has_saved_state<R: Runtime>(app: &tauri::AppHandle<R>) -> bool {
    use tauri_plugin_window_state::AppHandleExt;
    let name = app.filename();
    let Ok(dir) = app.path().app_config_dir() else {
        return false;
    };
    std::fs::read(dir.join(name))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|saved| saved.get("main").is_some())
}

/// Runs the desktop app.
pub fn run() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,ratelockr=info".into()),
        )
        // Colour only for a person at a terminal (the fmt layer writes to stdout): `make run`
        // piped into a file or a pager gets plain text, as the CLI's log does.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .try_init();
    let mut builder = Builder::default();
    // One app per user: a second launch focuses this one's window and exits. A copy pointed at
    // another data directory ($RATELOCKR_DATA_DIR: a test, a side-by-side copy) runs beside it.
    if env_data_dir().is_none() {
        builder = builder.plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            tracing::info!("a second launch: showing this window instead");
            focus_main(app);
        }));
    }
    let app = match app(builder.plugin(window_state()))
        .setup(|app| {
            // Read once, before the window exists (the plugin may save its state once it does).
            let restored = has_saved_state(app.handle());
            open_main_window(app.handle(), restored)?;
            // A size and place the user left are restored as they were; only a first start
            // fits the configured size to a small screen.
            if !restored {
                window_fit::fit_main_window(app.handle());
            }
            install(app.handle(), None)
        })
        .build(context())
    {
        Ok(app) => app,
        Err(err) => {
            eprintln!("ratelockr-app: {err}");
            std::process::exit(1);
        }
    };
    // Ctrl-C in the terminal (SIGINT to the whole process group) or a SIGTERM: leave as the
    // window's close button does, so the embedded Redis is stopped and no frozen window stays.
    let handle = app.handle().clone();
    tauri::async_runtime::spawn(async move {
        if let Some(name) = stop_signal().await {
            tracing::info!("{name}: closing the app");
            handle.exit(0);
        }
    });
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            if let Some(core) = handle.try_state::<Arc<AppCore>>() {
                core.shutdown();
            }
        }
    });
}
