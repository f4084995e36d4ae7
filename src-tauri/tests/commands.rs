//! The command layer over IPC, as the window calls it: the real handler, the real capabilities
//! and settings store, the mock runtime, and a real redis-server (no mocks of Redis).

use ratelockr::EmbeddedRedis;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener, WebviewWindow, WebviewWindowBuilder};

struct Ui {
    app: App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
}

impl Ui {
    /// The app with its settings in `dir`, optionally pointed at `redis_url` first.
    fn open(dir: &Path, redis_url: Option<&str>) -> Ui {
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

    fn call(&self, cmd: &str, args: Value) -> Result<Value, Value> {
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

    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.call(cmd, args)
            .unwrap_or_else(|err| panic!("{cmd} failed: {err}"))
    }
}

fn redis() -> EmbeddedRedis {
    EmbeddedRedis::start().expect("redis-server on PATH (scripts/deps.sh engine)")
}

fn draft(name: &str, limit: u64) -> Value {
    json!({ "name": name, "algorithm": "fixed_window", "limit": limit, "window_ms": 1000 })
}

#[test]
fn rules_are_validated_inline_and_survive_a_restart() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let ui = Ui::open(dir.path(), Some(&server.url()));
        assert_eq!(ui.ok("rules_list", json!({})), json!([]));
        let err = ui
            .call(
                "rule_save",
                json!({ "original": null, "draft": draft("api", 0) }),
            )
            .expect_err("limit 0 is refused");
        assert_eq!(err["code"], "invalid_rule");
        assert_eq!(err["field"], "limit");
        assert!(
            err["message"].as_str().is_some_and(|m| m.contains("limit")),
            "{err}"
        );
        let err = ui
            .call("rule_validate", json!({ "draft": { "name": "bad name", "algorithm": "token_bucket", "capacity": 5, "refill_per_sec": 1 } }))
            .expect_err("a space in the name");
        assert_eq!(err["field"], "name");

        ui.ok(
            "rule_save",
            json!({ "original": null, "draft": draft("api", 10) }),
        );
        let rules = ui.ok(
            "rule_save",
            json!({ "original": null, "draft": draft("login", 3) }),
        );
        assert_eq!(rules.as_array().map(Vec::len), Some(2));
        let err = ui
            .call(
                "rule_save",
                json!({ "original": null, "draft": draft("api", 5) }),
            )
            .expect_err("duplicate");
        assert_eq!(err["code"], "rule_exists");
        ui.ok(
            "rule_save",
            json!({ "original": "login", "draft": draft("signin", 4) }),
        );
        ui.ok("rule_delete", json!({ "name": "api" }));
    }
    let ui = Ui::open(dir.path(), None);
    assert_eq!(
        ui.ok("rules_list", json!({})),
        json!([{ "name": "signin", "algorithm": "fixed_window", "limit": 4, "window_ms": 1000 }])
    );
}

#[test]
fn a_corrupt_settings_file_is_set_aside_and_reported() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = b"{\"rules\": [ this is not json";
    std::fs::write(dir.path().join("settings.json"), garbage).expect("write");
    // The automatic choice would be used; point it at the test server through a fresh file
    // only after the corrupt one was moved aside, by switching at runtime.
    let ui = Ui::open(dir.path(), None);
    let info = ui.ok("app_info", json!({}));
    let warnings = info["warnings"].to_string();
    assert!(warnings.contains("damaged"), "{warnings}");
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "the damaged file is kept under a new name");
    assert_eq!(std::fs::read(aside[0].path()).expect("read"), garbage);
    ui.ok("connection_switch", json!({ "url": server.url() }));
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": draft("fresh", 2) }),
    );
    assert_eq!(
        ui.ok("rules_list", json!({})).as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn connection_status_test_and_switch_never_show_the_password() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    let status = ui.ok("connection_status", json!({}));
    assert_eq!(status["state"], "connected", "{status}");
    assert!(
        status["rtt_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{status}"
    );

    let secret = "hunter2-secret";
    // A closed port with a password in the URL.
    let dead = format!("redis://app:{secret}@127.0.0.1:1/0");
    let tested = ui.ok("connection_test", json!({ "url": dead }));
    assert_eq!(tested["ok"], false);
    let switched = ui.ok("connection_switch", json!({ "url": dead }));
    assert_eq!(switched["state"], "unreachable", "{switched}");
    assert_eq!(switched["url"], "redis://app:***@127.0.0.1:1/0");
    for reply in [tested, switched, ui.ok("connection_status", json!({}))] {
        assert!(!reply.to_string().contains(secret), "{reply}");
    }
    let settings = std::fs::read_to_string(dir.path().join("settings.json")).expect("saved");
    assert!(
        settings.contains("127.0.0.1:1"),
        "the chosen URL is remembered"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(dir.path().join("settings.json")).expect("stat");
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o600,
            "the file with the password is private to its owner"
        );
    }

    let err = ui
        .call(
            "connection_switch",
            json!({ "url": format!("http://x:{secret}@h") }),
        )
        .expect_err("not a redis URL");
    assert_eq!(err["code"], "invalid_url");
    assert!(!err.to_string().contains(secret), "{err}");

    let back = ui.ok("connection_switch", json!({ "url": server.url() }));
    assert_eq!(back["state"], "connected");
}

#[test]
fn a_simulation_runs_streams_stats_and_exports() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    // The only test that exports: the dialog is bypassed through the environment.
    std::env::set_var(ratelockr_app::save_dialog::EXPORT_DIR_ENV, out.path());
    let ui = Ui::open(dir.path(), Some(&server.url()));

    let err = ui.call("export_csv", json!({})).expect_err("no run yet");
    assert_eq!(err["code"], "no_run");
    let bad = json!({ "request": {
        "target": { "kind": "compare", "limit": 10, "window_ms": 1000 },
        "pattern": { "kind": "constant" }, "rps": -5.0, "requests": 100,
        "servers": 2, "keys": 3, "zipf": false, "naive": false } });
    let err = ui.call("sim_start", bad).expect_err("negative rate");
    assert_eq!(
        (err["code"].as_str(), err["field"].as_str()),
        (Some("invalid_workload"), Some("rps"))
    );

    let request = json!({ "request": {
        "target": { "kind": "compare", "limit": 10, "window_ms": 1000 },
        "pattern": { "kind": "constant" }, "rps": 0.0, "requests": 300,
        "servers": 3, "keys": 2, "zipf": false, "naive": true } });
    let refetches = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let (r, f) = (refetches.clone(), finished.clone());
    ui.app.listen_any("refetch-stats", move |_| {
        r.fetch_add(1, Ordering::Relaxed);
    });
    ui.app.listen_any("sim-finished", move |_| {
        f.fetch_add(1, Ordering::Relaxed);
    });
    let started = ui.ok("sim_start", request.clone());
    assert_eq!(started["running"], true);
    let status = wait_for_run(&ui);
    let rows = status["last"]["rows"]
        .as_array()
        .expect("summary rows")
        .clone();
    assert_eq!(
        rows.len(),
        4,
        "three algorithms and the naive limiter: {status}"
    );
    for row in &rows {
        assert_eq!(row["requests"], 300, "{row}");
        let decided = row["allowed"].as_u64().unwrap_or(0) + row["denied"].as_u64().unwrap_or(0);
        assert_eq!(decided, 300, "{row}");
        if row["naive"] == false {
            assert_eq!(row["over_admitted"], 0, "a script never over-admits: {row}");
        }
    }

    let stats = ui.ok(
        "stats",
        json!({ "rules": ["compare-token-bucket", "compare-fixed-window"] }),
    );
    for series in stats.as_array().expect("array") {
        let points = series["points"].as_array().expect("points");
        assert_eq!(points.len(), 30);
        let allowed: u64 = points.iter().filter_map(|p| p["allowed"].as_u64()).sum();
        let denied: u64 = points.iter().filter_map(|p| p["denied"].as_u64()).sum();
        assert_eq!(allowed + denied, 300, "{series}");
    }

    let exported = ui.ok("export_csv", json!({}));
    let path = exported["path"].as_str().expect("path");
    let csv = std::fs::read_to_string(path).expect("exported CSV");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("seq,sent_at_ms,server,rule,algorithm,key,allowed,remaining,retry_after_ms,latency_us,fail_open,reset_after_ms,attempt")
    );
    assert_eq!(lines.count(), 4 * 300);
    let chart = ui.ok("export_chart", json!({ "format": "svg" }));
    let svg = std::fs::read_to_string(chart["path"].as_str().expect("path")).expect("svg");
    assert!(svg.contains("<svg"), "an SVG chart");
}

#[test]
fn cancel_stops_a_long_run() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": draft("slow", 5) }),
    );
    let request = json!({ "request": {
        "target": { "kind": "rule", "name": "slow" },
        "pattern": { "kind": "constant" }, "rps": 50.0, "requests": 100000,
        "servers": 2, "keys": 1, "zipf": false, "naive": false } });
    ui.ok("sim_start", request.clone());
    let err = ui
        .call("sim_start", request)
        .expect_err("one run at a time");
    assert_eq!(err["code"], "simulation_running");
    std::thread::sleep(Duration::from_millis(300));
    ui.ok("sim_cancel", json!({}));
    let status = wait_for_run(&ui);
    assert_eq!(status["last"]["cancelled"], true, "{status}");
}

#[test]
fn the_window_may_call_only_what_its_capability_grants() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    // The settings store is Rust-only: the window gets no store (or dialog) permission.
    let denied = ui.call("plugin:store|load", json!({ "path": "settings.json" }));
    assert!(denied.is_err(), "{denied:?}");
    let denied = ui.call("plugin:dialog|save", json!({ "options": {} }));
    assert!(denied.is_err(), "{denied:?}");
}

#[test]
fn metrics_are_served_on_loopback_and_can_be_switched_off() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": draft("m", 5) }),
    );
    // Port 0: the system picks a free one and the status reports it (no pick-then-bind race).
    let on = ui.ok(
        "metrics_configure",
        json!({ "settings": { "enabled": true, "port": 0 } }),
    );
    let url = on["url"].as_str().expect("serving").to_string();
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/api/metrics"))
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback metrics URL: {url}"));
    assert_ne!(port, 0);
    let body = http_get(port);
    assert!(body.contains("ratelockr_active_rules 1"), "{body}");
    let off = ui.ok(
        "metrics_configure",
        json!({ "settings": { "enabled": false, "port": port } }),
    );
    assert!(off.get("url").is_none(), "{off}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "the endpoint still answers");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn http_get(port: u16) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .write_all(b"GET /api/metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut body = String::new();
    stream.read_to_string(&mut body).expect("read");
    body
}

fn wait_for_run(ui: &Ui) -> Value {
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
