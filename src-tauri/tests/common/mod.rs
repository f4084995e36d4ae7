//! What the app's integration tests share: the app on Tauri's mock runtime with the real
//! handler, capabilities and settings store, called over IPC as the window calls it, and a
//! real redis-server (no mocks of Redis).
//!
//! Each test file uses a part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use ratelockr::EmbeddedRedis;
use serde_json::{json, Value};
use std::path::Path;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

/// The app as the window sees it: commands are called through IPC.
pub struct Ui {
    pub app: App<MockRuntime>,
    pub window: WebviewWindow<MockRuntime>,
}

impl Ui {
    /// The app with its settings in `dir`, optionally pointed at `redis_url` first.
    pub fn open(dir: &Path, redis_url: Option<&str>) -> Ui {
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

/// A fresh directory under the system's temp dir, unique to this process and `name` (what
/// the engine's `tests/common/tls.rs` keeps its certificates in).
pub fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ratelockr-app-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
