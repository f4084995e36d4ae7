//! What the app's integration tests share: the app on Tauri's mock runtime with the real
//! handler, capabilities and settings store, called over IPC as the window calls it, and a
//! real redis-server (no mocks of Redis).
//!
//! Each test module uses a part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use ratelockr::EmbeddedRedis;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

#[path = "../../../../tests/common/tempdir.rs"]
mod tempdir;
#[allow(unused_imports)] // not every test makes a directory
pub use tempdir::{tempdir, TempDir};

/// The app as the window sees it: commands are called through IPC.
pub struct Ui {
    pub app: App<MockRuntime>,
    pub window: WebviewWindow<MockRuntime>,
}

/// Held by a test while it answers the open dialog through the environment
/// (`RATELOCKR_OPEN_POLICIES`): the tests share one process, so two answering it at once would
/// each open the other's file.
pub fn open_dialog() -> std::sync::MutexGuard<'static, ()> {
    static DIALOG: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DIALOG
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Ui {
    /// The app with its settings in `dir`, optionally pointed at `redis_url` first.
    pub fn open(dir: &Path, redis_url: Option<&str>) -> Ui {
        // These tests count decisions: on a loaded 2-core runner one can outlast the app's
        // interactive 250 ms deadline and fail open. Every test sets the same value.
        std::env::set_var(ratelockr_app_core::connection::DEADLINE_ENV, "2000");
        if let Some(url) = redis_url {
            let settings = dir.join("settings.json");
            if !settings.exists() {
                std::fs::write(&settings, json!({ "redis_url": url }).to_string())
                    .expect("seed settings");
            }
        }
        let app = ratelockr_app::app(mock_builder())
            .build(ratelockr_app::context())
            .expect("app builds");
        ratelockr_app::install(app.handle(), Some(dir.to_path_buf())).expect("state installed");
        let window = WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .expect("window");
        Ui { app, window }
    }

    pub fn call(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        let request = InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            // What the window's origin is on Linux.
            url: "tauri://localhost".parse().expect("url"),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        };
        get_ipc_response(&self.window, request)
            .map(|body| body.deserialize::<Value>().expect("json reply"))
    }

    pub fn ok(&self, cmd: &str, args: Value) -> Value {
        self.call(cmd, args)
            .unwrap_or_else(|err| panic!("{cmd} failed: {err}"))
    }
}

/// A private redis-server for one test.
pub fn redis() -> EmbeddedRedis {
    EmbeddedRedis::start().expect("redis-server on PATH (scripts/deps.sh engine)")
}

/// Waits for the simulation to end; its status (a failed run fails the test).
pub fn wait_for_run(ui: &Ui) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = ui.ok("sim_status", json!({}));
        if status["running"] == false {
            assert!(status.get("error").is_none(), "the run failed: {status}");
            return status;
        }
        assert!(Instant::now() < deadline, "the run did not end: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A single-rule run of `requests` on one key, as fast as possible.
pub fn run_request(rule: &str, requests: u64, extra: Value) -> Value {
    let mut request = json!({
        "target": { "kind": "rule", "name": rule },
        "pattern": { "kind": "constant" }, "rps": 0.0, "requests": requests,
        "servers": 2, "keys": 1, "zipf": false, "naive": false });
    if let (Some(r), Some(e)) = (request.as_object_mut(), extra.as_object()) {
        r.extend(e.clone());
    }
    json!({ "request": request })
}

/// Starts a run, waits for it and returns its summary row's `allowed`, and the summary.
pub fn run_allowed(ui: &Ui, request: Value) -> (u64, Value) {
    ui.ok("sim_start", request);
    let status = wait_for_run(ui);
    let last = status["last"].clone();
    (last["rows"][0]["allowed"].as_u64().expect("allowed"), last)
}
