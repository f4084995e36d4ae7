//! The command layer over IPC, as the window calls it: the real handler, the real capabilities
//! and settings store, the mock runtime, and a real redis-server (no mocks of Redis).

use crate::common::{redis, run_allowed, run_request, wait_for_run, Ui};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tauri::{Listener, Manager};

fn draft(name: &str, limit: u64) -> Value {
    json!({ "name": name, "algorithm": "fixed_window", "limit": limit, "window_ms": 1000 })
}

/// Saves a fixed window of `limit` over ten minutes: far longer than any test, so nothing
/// refills on its own and the state only changes when something spends.
fn save_gate(ui: &Ui, name: &str, limit: u64) {
    let gate =
        json!({ "name": name, "algorithm": "fixed_window", "limit": limit, "window_ms": 600000 });
    ui.ok("rule_save", json!({ "original": null, "draft": gate }));
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
    // Defect 7: a refused port is said to be refused, not a timeout.
    let why = tested["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        why.contains("refused") && !why.contains("timeout"),
        "{tested}"
    );
    let switched = ui.ok("connection_switch", json!({ "url": dead }));
    assert_eq!(switched["state"], "unreachable", "{switched}");
    assert!(
        switched["warning"]
            .as_str()
            .is_some_and(|w| w.contains("saved, but nothing answers")),
        "switching to a Redis that does not answer warns: {switched}"
    );
    assert_eq!(switched["url"], "redis://app:***@127.0.0.1:1/0");
    for reply in [tested, switched, ui.ok("connection_status", json!({}))] {
        assert!(!reply.to_string().contains(secret), "{reply}");
    }

    // A port where a web server listens is named for what it is, not for the parser's error.
    let web = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = web.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in web.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.read(&mut [0u8; 256]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let tested = ui.ok(
        "connection_test",
        json!({ "url": format!("redis://127.0.0.1:{port}") }),
    );
    let why = tested["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("not a Redis server") && !why.contains("Parse error"),
        "{tested}"
    );
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
        6,
        "five algorithms and the naive limiter: {status}"
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
    // Offered under the run's own name, not "ratelockr-run.csv" for every run.
    let run_name = ui.ok("runs_list", json!({}))["runs"][0]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let file = std::path::Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a file name");
    assert!(
        file.ends_with(".csv")
            && file
                .starts_with(&run_name[..run_name.find([' ', ':', '(']).unwrap_or(run_name.len())]),
        "{file} for the run {run_name:?}"
    );
    let csv = std::fs::read_to_string(path).expect("exported CSV");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("seq,sent_at_ms,server,rule,algorithm,key,allowed,remaining,retry_after_ms,latency_us,fail_open,reset_after_ms,attempt,offset_ms,binding,tier,would_deny,hold_ms,answered_us")
    );
    assert_eq!(lines.count(), 6 * 300);
    let chart = ui.ok("export_chart", json!({ "format": "svg" }));
    let svg = std::fs::read_to_string(chart["path"].as_str().expect("path")).expect("svg");
    assert!(svg.contains("<svg"), "an SVG chart");
    // Stacked by default (the CLI's view): per bin and so far.
    assert!(svg.contains("Requests per") && svg.contains("admitted so far"));

    // The view on screen is what is drawn: here cumulative, two runs overlaid, a key's state.
    let look = |c: &str| json!({ "colour": c, "dash": [], "width": 2.0 });
    let view = json!({
        "title": "before and after", "subtitle": "zoomed to 0.5–1.5 s",
        "x": [0.0, 0.5, 1.0, 1.5], "x_range": [0.5, 1.5], "y_max": 40.0, "columns": 1,
        "panels": [{ "title": "Runs overlaid", "y_label": "so far", "lines": [
            { "label": "allowed · capacity 10", "look": look("#4f46e5"), "values": [5.0, 10.0, 12.0, 14.0], "stepped": false },
            { "label": "allowed · capacity 30", "look": look("#db2777"), "values": [5.0, 15.0, 25.0, 35.0], "stepped": false }
        ] }],
        "key_state": { "title": "client-0 on compare-fixed-window", "label": "remaining",
            "x": [0.0, 0.4, 1.6], "values": [null, 3.0, null], "ceiling": 10.0 }
    });
    let chart = ui.ok("export_chart", json!({ "format": "svg", "view": view }));
    let svg = std::fs::read_to_string(chart["path"].as_str().expect("path")).expect("svg");
    for text in [
        "allowed · capacity 10",
        "allowed · capacity 30",
        "client-0 on compare-fixed-window",
        "so far",
    ] {
        assert!(svg.contains(text), "{text} missing from the exported view");
    }
    assert!(!svg.contains("Requests per"), "only the measure on screen");
    // A view that cannot be drawn is refused before anything is written, naming the field.
    let mut bad = view;
    bad["panels"][0]["lines"][1]["values"] = json!([1.0]);
    let err = ui
        .call("export_chart", json!({ "format": "png", "view": bad }))
        .expect_err("values do not match x");
    assert_eq!(err["field"], "view.panels[0].lines[1].values", "{err}");
    let pngs: Vec<_> = std::fs::read_dir(out.path())
        .expect("the export dir")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
        .collect();
    assert!(pngs.is_empty(), "nothing written: {pngs:?}");
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
    assert_eq!(status["last"]["status"], "cancelled", "not done: {status}");
    let history = ui.ok("runs_list", json!({}));
    assert_eq!(history["runs"][0]["status"], "cancelled");
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
    assert_eq!(on["port"], port, "the port actually bound, not 0: {on}");
    // Defect 8: an out-of-range port names the field, without serde's internals.
    let err = ui
        .call(
            "metrics_configure",
            json!({ "settings": { "enabled": true, "port": 70000 } }),
        )
        .expect_err("out of range");
    assert_eq!(
        (err["code"].as_str(), err["field"].as_str()),
        (Some("invalid_settings"), Some("port"))
    );
    assert!(!err.to_string().contains("u16"), "{err}");
    // A port in use is said in the app's terms (the CLI's --addr means nothing here).
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let taken_port = taken.local_addr().expect("addr").port();
    let busy = ui.ok(
        "metrics_configure",
        json!({ "settings": { "enabled": true, "port": taken_port } }),
    );
    let why = busy["error"].as_str().expect("reported");
    assert!(why.contains("in use") && !why.contains("--addr"), "{busy}");
    drop(taken);
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

/// The form's shared connections (a run about throughput): the servers take them in turn and
/// decide as many as one connection each would; more connections than servers is refused,
/// naming the field.
#[test]
fn a_run_on_shared_connections_decides_as_one_connection_each_would() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    save_gate(&ui, "pooled", 7);
    for extra in [
        json!({ "servers": 8 }),
        json!({ "servers": 8, "connections": 2 }),
    ] {
        let (allowed, last) = run_allowed(&ui, run_request("pooled", 60, extra.clone()));
        assert_eq!(allowed, 7, "{extra}: {last}");
    }
    let err = ui
        .call(
            "sim_start",
            run_request("pooled", 60, json!({ "servers": 2, "connections": 3 })),
        )
        .expect_err("more connections than servers");
    assert_eq!(err["field"], "connections", "{err}");
}

#[test]
fn runs_start_full_by_default_and_reset_empties_a_shared_state() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    save_gate(&ui, "gate", 5);
    // Two default runs back to back: each has its own namespace and starts full.
    for _ in 0..2 {
        assert_eq!(run_allowed(&ui, run_request("gate", 20, json!({}))).0, 5);
    }
    // "Continue from the current state": the second such run finds the window used up.
    let shared = json!({ "continue_state": true });
    assert_eq!(
        run_allowed(&ui, run_request("gate", 20, shared.clone())).0,
        5
    );
    assert_eq!(
        run_allowed(&ui, run_request("gate", 20, shared.clone())).0,
        0
    );
    // Reset one key, then the whole rule (every run's namespace included).
    let one = ui.ok(
        "limiter_reset",
        json!({ "rule": "gate", "key": "client-0" }),
    );
    assert_eq!(one["deleted"], 1, "{one}");
    assert_eq!(
        run_allowed(&ui, run_request("gate", 20, shared.clone())).0,
        5
    );
    let all = ui.ok("limiter_reset", json!({ "rule": "gate" }));
    assert_eq!(
        all["deleted"], 3,
        "two fresh runs' keys and the shared one: {all}"
    );
    assert_eq!(
        run_allowed(&ui, run_request("gate", 20, shared)).0,
        5,
        "after a reset the next run starts full"
    );
    let err = ui
        .call("limiter_reset", json!({ "rule": "not a name" }))
        .expect_err("bad name");
    assert_eq!(err["field"], "rule", "{err}");
}

#[test]
fn a_peek_reads_the_state_a_run_left_without_spending_it() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    save_gate(&ui, "peeked", 5);
    let peek = |run: &str, key: &str| {
        ui.ok(
            "limiter_peek",
            json!({ "run": run, "target": 0, "key": key }),
        )
    };
    let (allowed, fresh) = run_allowed(&ui, run_request("peeked", 3, json!({ "naive": true })));
    assert_eq!(allowed, 3);
    let fresh = fresh["id"].as_str().expect("id").to_string();

    // After the run: what it left, in its own namespace, with the headers a client would get.
    let first = peek(&fresh, "client-0");
    assert_eq!(first["key"], "client-0");
    assert_eq!(first["decided_as"], format!("run-{fresh}:client-0"));
    assert_eq!(first["decision"]["remaining"], 2, "{first}");
    assert_eq!(first["decision"]["allowed"], true);
    assert_eq!(first["decision"]["fail_open"], false);
    assert_eq!(first["answer"]["status"], 200);
    let headers = first["answer"]["headers"].to_string();
    assert!(
        headers.contains("r=2") && headers.contains("q=5"),
        "{headers}"
    );
    // A peek spends nothing: the second sees what the first saw (only the wait has run on).
    let second = peek(&fresh, "client-0");
    assert_eq!(second["decision"]["remaining"], 2, "{second}");
    assert_eq!(
        second["answer"]["headers"][0],
        first["answer"]["headers"][0]
    );
    let wait = |p: &Value| {
        p["decision"]["reset_after_ms"]
            .as_u64()
            .expect("reset_after_ms")
    };
    assert!(wait(&second) <= wait(&first), "{first} then {second}");
    // A key the run never sent is full.
    assert_eq!(peek(&fresh, "client-9")["decision"]["remaining"], 5);

    // A run that continued the shared state is peeked there; a reset key peeks full.
    let (_, shared) = run_allowed(
        &ui,
        run_request("peeked", 4, json!({ "continue_state": true })),
    );
    let shared = shared["id"].as_str().expect("id").to_string();
    let before = peek(&shared, "client-0");
    assert_eq!(before["decided_as"], "client-0");
    assert_eq!(before["decision"]["remaining"], 1, "{before}");
    ui.ok(
        "limiter_reset",
        json!({ "rule": "peeked", "key": "client-0" }),
    );
    assert_eq!(
        peek(&shared, "client-0")["decision"]["remaining"],
        5,
        "a reset key peeks full"
    );
    assert_eq!(
        peek(&fresh, "client-0")["decision"]["remaining"],
        2,
        "the fresh run's namespace is its own"
    );
    // Its copy of the key is reset by the name the peek gave (the app's "Reset it").
    ui.ok(
        "limiter_reset",
        json!({ "rule": "peeked", "key": first["decided_as"] }),
    );
    assert_eq!(peek(&fresh, "client-0")["decision"]["remaining"], 5);

    // Refusals name what to change.
    let naive = ui
        .call(
            "limiter_peek",
            json!({ "run": fresh, "target": 1, "key": "client-0" }),
        )
        .expect_err("naive");
    assert_eq!(naive["field"], "target", "{naive}");
    let missing = ui
        .call(
            "limiter_peek",
            json!({ "run": fresh, "target": 7, "key": "client-0" }),
        )
        .expect_err("no such target");
    assert_eq!(missing["field"], "target", "{missing}");
    let unknown = ui
        .call(
            "limiter_peek",
            json!({ "run": "nope", "target": 0, "key": "client-0" }),
        )
        .expect_err("no such run");
    assert_eq!(unknown["code"], "run_not_found", "{unknown}");
}

#[test]
fn the_history_keeps_runs_bounded_restores_them_and_exports_an_older_one() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("settings.json"),
        json!({ "redis_url": server.url(), "history": { "max_runs": 2, "max_bytes": 1_000_000_000u64 } })
            .to_string(),
    )
    .expect("seed settings");
    let (first_id, second_id, third_id, third_records);
    {
        let ui = Ui::open(dir.path(), None);
        ui.ok(
            "rule_save",
            json!({ "original": null, "draft": draft("h", 3) }),
        );
        let finished = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
        let f = finished.clone();
        ui.app.listen_any("sim-finished", move |event| {
            let payload: Value = serde_json::from_str(event.payload()).expect("json");
            f.lock().expect("lock").push(payload);
        });
        let (_, first) = run_allowed(
            &ui,
            run_request("h", 10, json!({ "name": "first", "seed": 7 })),
        );
        first_id = first["id"].as_str().expect("id").to_string();
        let (_, second) = run_allowed(&ui, run_request("h", 12, json!({})));
        second_id = second["id"].as_str().expect("id").to_string();
        let renamed = ui.ok(
            "run_rename",
            json!({ "id": second_id, "name": "  second  " }),
        );
        assert_eq!(renamed["name"], "second");
        let err = ui
            .call("run_rename", json!({ "id": second_id, "name": " " }))
            .expect_err("empty");
        assert_eq!(
            (err["code"].as_str(), err["field"].as_str()),
            (Some("invalid_run_name"), Some("name"))
        );

        let history = ui.ok("runs_list", json!({}));
        let runs = history["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0]["id"], second_id.as_str(), "newest first");
        assert_eq!(runs[1]["name"], "first");
        assert_eq!(runs[1]["status"], "finished");
        assert_eq!(runs[1]["request"]["seed"], 7, "the seed used is kept");
        assert_eq!(runs[1]["targets"][0]["rule"]["name"], "h");
        assert_eq!(runs[1]["fresh_state"], true);
        assert_eq!(runs[1]["summary"]["rows"][0]["requests"], 10);
        assert!(runs[1]["bytes"].as_u64().is_some_and(|b| b > 0));

        // A third run: the oldest is dropped, and the user is told, in the event and the list.
        let (_, third) = run_allowed(&ui, run_request("h", 14, json!({})));
        third_id = third["id"].as_str().expect("id").to_string();
        let deadline = Instant::now() + Duration::from_secs(5);
        while finished.lock().expect("lock").len() < 3 {
            assert!(Instant::now() < deadline, "three sim-finished events");
            std::thread::sleep(Duration::from_millis(20));
        }
        let last_event = finished.lock().expect("lock")[2].clone();
        let warning = last_event["warnings"][0].as_str().unwrap_or_default();
        assert!(
            warning.contains("\"first\"") && warning.contains("2 runs"),
            "{last_event}"
        );
        let history = ui.ok("runs_list", json!({}));
        let ids: Vec<&str> = history["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| r["id"].as_str())
            .collect();
        assert_eq!(ids, [third_id.as_str(), second_id.as_str()]);
        assert!(
            history["warnings"].to_string().contains("dropped"),
            "{history}"
        );
        assert!(
            !dir.path().join("runs").join(&first_id).exists(),
            "its files went too"
        );
        let err = ui
            .call("run_records", json!({ "id": first_id }))
            .expect_err("dropped");
        assert_eq!(err["code"], "run_not_found");
        // The run that just ended comes from the columns kept during the run...
        third_records = ui.ok("run_records", json!({ "id": third_id }));
        assert_eq!(third_records["t_ms"].as_array().map(Vec::len), Some(14));
    }
    // ...and after a restart from its CSV: the same columns either way.
    assert_eq!(
        Ui::open(dir.path(), None).ok("run_records", json!({ "id": third_id })),
        third_records
    );
    // After a restart: the same runs, the last one restored as the simulator's last run.
    let ui = Ui::open(dir.path(), None);
    let status = ui.ok("sim_status", json!({}));
    assert_eq!(status["last"]["id"], third_id.as_str(), "{status}");
    assert_eq!(status["last"]["status"], "finished");
    assert_eq!(status["rules"], json!(["h"]));
    let history = ui.ok("runs_list", json!({}));
    assert_eq!(history["runs"].as_array().map(Vec::len), Some(2));
    assert_eq!(history["runs"][1]["name"], "second", "the rename survived");

    // The older run's records, in columns, and its exports (through the core the commands
    // call: the export directory variable belongs to the other export test).
    let records = ui.ok("run_records", json!({ "id": second_id }));
    assert_eq!(records["t_ms"].as_array().map(Vec::len), Some(12));
    assert_eq!(records["keys"], json!(["client-0"]));
    let outcomes = records["outcome"].as_array().expect("outcomes");
    let allowed = outcomes.iter().filter(|o| o.as_u64() == Some(0)).count();
    assert_eq!(allowed, 3);
    assert_eq!(records["targets"][0]["rule"]["name"], "h");
    assert!(records["bin_ms"].as_u64().is_some_and(|b| b <= 100));
    let core = ui.app.state::<Arc<ratelockr_app_core::AppCore>>();
    let out = tempfile::tempdir().expect("tempdir");
    let csv = out.path().join("second.csv");
    core.export_csv(&csv, Some(&second_id)).expect("csv export");
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv").lines().count(),
        13
    );
    let svg = out.path().join("second.svg");
    core.export_chart(
        &svg,
        ratelockr_app_core::export_path::ChartFormat::Svg,
        Some(&second_id),
        None,
    )
    .expect("chart export");
    assert!(std::fs::read_to_string(&svg).expect("svg").contains("<svg"));
    // Never a path other than the one confirmed: a .png name for an SVG is refused, unwritten.
    let wrong = out.path().join("precious.png");
    std::fs::write(&wrong, b"precious").expect("write");
    assert!(core
        .export_chart(
            &wrong,
            ratelockr_app_core::export_path::ChartFormat::Svg,
            Some(&second_id),
            None
        )
        .is_err());
    assert_eq!(std::fs::read(&wrong).expect("read"), b"precious");

    ui.ok("run_delete", json!({ "id": second_id }));
    assert_eq!(
        ui.ok("runs_list", json!({}))["runs"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn a_corrupt_history_entry_is_set_aside_and_reported_not_deleted() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("runs").join("0000000000001");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(broken.join("run.json"), b"{ not json").expect("write");
    std::fs::write(broken.join("records.csv"), b"seq\n1\n").expect("write");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    let history = ui.ok("runs_list", json!({}));
    assert_eq!(history["runs"], json!([]));
    let warnings = history["warnings"].to_string();
    assert!(
        warnings.contains("could not be read") && warnings.contains("runs-aside"),
        "{warnings}"
    );
    let info = ui.ok("app_info", json!({}));
    assert!(
        info["warnings"].to_string().contains("runs-aside"),
        "{info}"
    );
    let aside: Vec<_> = std::fs::read_dir(dir.path().join("runs-aside"))
        .expect("aside dir")
        .filter_map(Result::ok)
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read(aside[0].path().join("run.json")).expect("kept"),
        b"{ not json"
    );
}

#[test]
fn headers_preview_and_the_workload_form_reach_the_engine() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    let rule = json!({ "name": "api", "algorithm": "token_bucket", "capacity": 20, "refill_per_sec": 10.0 });
    let denied = ui.ok(
        "decision_headers",
        json!({ "rule": rule, "decision": { "allowed": false, "remaining": 0, "retry_after_ms": 1001, "reset_after_ms": 2000, "fail_open": false } }),
    );
    assert_eq!(denied["status"], 429);
    assert!(
        denied["headers"]
            .to_string()
            .contains("[\"Retry-After\",\"2\"]"),
        "{denied}"
    );
    let open = ui.ok(
        "decision_headers",
        json!({ "rule": rule, "decision": { "allowed": true, "remaining": -1, "retry_after_ms": 0, "reset_after_ms": 0, "fail_open": true } }),
    );
    assert_eq!(open, json!({ "status": 200, "headers": [] }));

    // Bursts of 20 every 500 ms for 2 s: the preview shows four bursts, not a flat line.
    let burst = json!({ "request": {
        "target": { "kind": "compare", "limit": 10, "window_ms": 1000 },
        "pattern": { "kind": "burst", "size": 20, "every_ms": 500 }, "rps": 40.0,
        "duration_ms": 2000, "servers": 1, "keys": 1, "zipf": false, "naive": false } });
    let preview = ui.ok("workload_preview", burst);
    let bins: Vec<u64> = preview["offered"]
        .as_array()
        .expect("bins")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(
        preview["bin_ms"].as_u64().is_some_and(|b| b <= 100),
        "{preview}"
    );
    assert_eq!(bins.iter().sum::<u64>(), 80);
    assert_eq!(bins.iter().filter(|&&n| n == 20).count(), 4, "{bins:?}");
    assert_eq!(preview["planned"], 80);

    let both = json!({ "request": {
        "target": { "kind": "compare", "limit": 10, "window_ms": 1000 },
        "pattern": { "kind": "constant" }, "rps": 10.0, "requests": 5, "duration_ms": 100,
        "servers": 1, "keys": 1, "zipf": false, "naive": false } });
    let err = ui.call("workload_preview", both).expect_err("both lengths");
    assert_eq!(err["field"], "requests");
    let zipf = json!({ "request": {
        "target": { "kind": "compare", "limit": 10, "window_ms": 1000 },
        "pattern": { "kind": "constant" }, "rps": 10.0, "requests": 5,
        "servers": 1, "keys": 10, "zipf": true, "zipf_exponent": -1.0, "naive": false } });
    let err = ui.call("sim_start", zipf).expect_err("bad exponent");
    assert_eq!(err["field"], "zipf_exponent");
}

#[test]
fn refetch_cues_are_coalesced_and_one_follows_the_last_decision() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": draft("cue", 5) }),
    );
    // Every event in arrival order: "r" for a cue, "p" for progress, "f" for the end of the run.
    let order = Arc::new(std::sync::Mutex::new(String::new()));
    let (o1, o2, o3) = (order.clone(), order.clone(), order.clone());
    ui.app
        .listen_any("refetch-stats", move |_| o1.lock().expect("lock").push('r'));
    ui.app
        .listen_any("sim-progress", move |_| o3.lock().expect("lock").push('p'));
    ui.app
        .listen_any("sim-finished", move |_| o2.lock().expect("lock").push('f'));
    let requests = 5_000;
    ui.ok(
        "sim_start",
        run_request("cue", requests, json!({ "servers": 4 })),
    );
    let status = wait_for_run(&ui);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !order.lock().expect("lock").contains('f') {
        assert!(Instant::now() < deadline, "sim-finished arrives");
        std::thread::sleep(Duration::from_millis(20));
    }
    let order = order.lock().expect("lock").clone();
    let cues = order.matches('r').count() as u64;
    let duration_ms = status["last"]["duration_ms"].as_u64().expect("duration");
    assert!(
        cues >= 2,
        "the first decision and the last are cued: {order}"
    );
    // At most one per gap, plus the first and the last.
    let gap = ratelockr_app_core::coalesce::EVENT_GAP.as_millis() as u64;
    assert!(
        cues <= duration_ms / gap + 2,
        "{cues} cues in {duration_ms} ms"
    );
    assert!(
        cues < requests,
        "coalesced: {cues} cues for {requests} decisions"
    );
    let progress = order.matches('p').count() as u64;
    assert!(
        progress <= duration_ms / gap + 1,
        "progress events are coalesced too: {progress} in {duration_ms} ms"
    );
    assert!(
        order.replace('p', "").ends_with("rf"),
        "a cue follows the last decision, before the end: {order}"
    );
}

/// A measurement, not a check (docs/app-performance.md): a 200,000-request run at the maximum
/// rate, counting the events the window would receive, and the size and time of its records
/// as the run chart fetches them. `cargo test -p ratelockr-app --release --test commands
/// measure_a_200k_run -- --ignored --nocapture`
#[test]
#[ignore = "a measurement for docs/app-performance.md; run it by name"]
fn measure_a_200k_run() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": draft("big", 1000) }),
    );
    let counts: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    for (i, event) in ["refetch-stats", "sim-progress"].into_iter().enumerate() {
        let c = counts.clone();
        ui.app.listen_any(event, move |_| {
            c[i].fetch_add(1, Ordering::Relaxed);
        });
    }
    let requests = 200_000;
    ui.ok(
        "sim_start",
        run_request("big", requests, json!({ "servers": 8, "keys": 100 })),
    );
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        let status = ui.ok("sim_status", json!({}));
        if status["running"] == false {
            break status;
        }
        assert!(Instant::now() < deadline, "the run did not end");
        std::thread::sleep(Duration::from_millis(200));
    };
    let id = status["last"]["id"].as_str().expect("id").to_string();
    let duration_ms = status["last"]["duration_ms"].as_u64().unwrap_or(0);
    // The run that just ended: its columns were kept during the run.
    let core = ui.app.state::<Arc<ratelockr_app_core::AppCore>>();
    let started = Instant::now();
    let columns = core.run_records(&id).expect("records");
    let kept_ms = started.elapsed().as_millis();
    let started = Instant::now();
    let bytes = serde_json::to_vec(&columns).expect("serializes").len();
    let serialize_ms = started.elapsed().as_millis();
    let started = Instant::now();
    let records = ui.ok("run_records", json!({ "id": id }));
    let fetch_kept_ms = started.elapsed().as_millis();
    let counted = format!(
        "requests {requests}, run {duration_ms} ms, refetch-stats events {}, sim-progress events {}",
        counts[0].load(Ordering::Relaxed),
        counts[1].load(Ordering::Relaxed)
    );
    drop(ui);
    // After a restart: read back from the run's CSV.
    let ui = Ui::open(dir.path(), None);
    let started = Instant::now();
    let again = ui.ok("run_records", json!({ "id": id }));
    let fetch_csv_ms = started.elapsed().as_millis();
    assert_eq!(again, records);
    let columnar = records.to_string().len();
    let rows = records["t_ms"].as_array().map_or(0, Vec::len);
    // The same records as one JSON object per record, for comparison.
    let csv = dir.path().join("runs").join(&id).join("records.csv");
    let objects: Vec<ratelockr_lab::sim::Record> =
        ratelockr_lab::export::read_records(&csv).expect("records");
    let per_record = serde_json::to_string(&objects).expect("json").len();
    println!("{counted}");
    println!(
        "run_records: {rows} records, {columnar} bytes columnar JSON ({} bytes/record); as JSON objects: {per_record} bytes",
        columnar / rows.max(1)
    );
    println!(
        "run_records of the run just ended: kept columns {kept_ms} ms, to JSON {serialize_ms} ms ({bytes} bytes), whole IPC call {fetch_kept_ms} ms; after a restart, from the CSV: whole IPC call {fetch_csv_ms} ms"
    );
    assert_eq!(rows as u64, requests);
}

/// The sample log (synthetic: a day of ordinary clients and one scraper), see scripts/sample_log.py.
fn sample_log() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples/access.log.gz")
        .display()
        .to_string()
}

fn wait_for_replay(ui: &Ui) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = ui.ok("replay_status", json!({}));
        if status["running"] == false {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the replay did not end: {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_replay_of_the_sample_log_names_the_abusive_client_first() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));
    let log = sample_log();

    let preview = ui.ok(
        "replay_preview",
        json!({ "path": log, "parse": { "key": "ip" } }),
    );
    assert_eq!(preview["format"], "combined", "{preview}");
    assert_eq!(preview["gzip"], true);
    let lines = preview["lines"].as_array().expect("lines");
    assert!(!lines.is_empty(), "{preview}");
    assert!(
        lines
            .iter()
            .all(|l| l["key"].as_str().is_some_and(|k| !k.is_empty())),
        "every sample line yields an address: {preview}"
    );
    let err = ui
        .call(
            "replay_preview",
            json!({ "path": log, "parse": { "key": "nonsense[" } }),
        )
        .expect_err("a bad key expression");
    assert_eq!(
        (&err["code"], &err["field"]),
        (&json!("invalid_replay"), &json!("key")),
        "{err}"
    );
    let err = ui
        .call(
            "replay_preview",
            json!({ "path": dir.path().join("none.log"), "parse": {} }),
        )
        .expect_err("no such file");
    assert_eq!(
        (&err["code"], &err["field"]),
        (&json!("log_unreadable"), &json!("path")),
        "{err}"
    );

    // The rule of issue 10's "done when", from the rule book, and an inline one beside it.
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": { "name": "per-ip", "algorithm": "token_bucket", "capacity": 20, "refill_per_sec": 2 } }),
    );
    let finished = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = finished.clone();
    ui.app.listen_any("replay-finished", move |event| {
        let status: Value = serde_json::from_str(event.payload()).expect("json");
        seen.lock().expect("lock").push(status);
    });
    let progress_events = Arc::new(AtomicU64::new(0));
    let counted = progress_events.clone();
    ui.app.listen_any("replay-progress", move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    let err = ui
        .call(
            "replay_start",
            json!({ "request": { "path": log, "rules": [] } }),
        )
        .expect_err("no rule");
    assert_eq!(err["field"], "rules", "{err}");
    ui.ok(
        "replay_start",
        json!({ "request": {
            "path": log,
            "parse": { "key": "ip" },
            "rules": ["per-ip"],
            "inline": { "name": "strict", "algorithm": "fixed_window", "limit": 30, "window_ms": 60000 },
            "sweep": [{ "param": "capacity", "values": [10, 40] }],
        } }),
    );
    let status = wait_for_replay(&ui);
    assert!(status.get("error").is_none_or(Value::is_null), "{status}");
    let report = &status["report"];
    let rules = report["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 2, "{report}");
    for rule in rules {
        // Decisions that fail open (allowed) are no verdict of the rule: the app's 250 ms
        // interactive deadline once failed whole replay pipelines open. Said plainly.
        assert_eq!(
            rule["fail_open"], 0,
            "decisions failed open (Redis did not answer in time): {rule}"
        );
        assert_eq!(
            rule["top_keys"][0]["key"], "203.0.113.66",
            "the scraper is the most denied key under {}",
            rule["rule"]
        );
        assert!(rule["denied"].as_u64() > Some(0), "{rule}");
    }
    assert_eq!(
        report["sweep"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert!(report["requests"].as_u64() > Some(0));
    // The status says "not running" before the window's listener has the event: wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while finished.lock().expect("lock").is_empty() {
        assert!(Instant::now() < deadline, "no replay-finished event came");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        finished
            .lock()
            .expect("lock")
            .last()
            .map(|s| &s["report"]["requests"]),
        Some(&report["requests"]),
        "replay-finished carries the report"
    );
    // Progress reaches the window at most once per EVENT_GAP (the first at once), and the
    // status keeps the last progress, whole, whatever was left unsent.
    let gap = ratelockr_app_core::coalesce::EVENT_GAP.as_millis() as u64;
    let elapsed_ms = report["elapsed_ms"].as_u64().expect("elapsed_ms");
    let sent = progress_events.load(Ordering::Relaxed);
    assert!(
        sent <= elapsed_ms / gap + 1,
        "{sent} progress events in {elapsed_ms} ms"
    );
    assert_eq!(
        status["progress"]["requests"], report["requests"],
        "{status}"
    );

    // Exports, the save dialog answered by the export directory.
    std::env::set_var(ratelockr_app::save_dialog::EXPORT_DIR_ENV, dir.path());
    let exported = ui.ok("replay_export_csv", json!({}));
    let text = std::fs::read_to_string(exported["path"].as_str().expect("path")).expect("csv");
    let requests = report["requests"].as_u64().expect("requests");
    assert_eq!(
        text.lines().count() as u64 - 1,
        2 * requests,
        "one row per decision of the two rules: the sweep's configurations are kept as its points"
    );
    assert!(
        !text.contains("capacity-10") && !text.contains("capacity-40"),
        "no sweep configuration's rows"
    );
    let kept = &ui.ok("runs_list", json!({}))["replays"][0];
    assert_eq!(
        kept["name"], "Sweep of capacity (2 configurations) of access.log.gz",
        "named for what it is"
    );
    let heatmap = ui.ok(
        "replay_export_chart",
        json!({ "format": "svg", "heatmap": true }),
    );
    let svg = std::fs::read_to_string(heatmap["path"].as_str().expect("path")).expect("svg");
    assert!(svg.contains("<svg"), "a heatmap");
}

/// A small combined-format log: `clients` addresses, one request each per second for `secs`.
fn write_log(path: &Path, clients: u32, secs: u32) {
    use std::fmt::Write as _;
    let mut text = String::new();
    for s in 0..secs {
        let (m, sec) = (s / 60, s % 60);
        for c in 0..clients {
            writeln!(
                text,
                "10.0.{}.{} - - [24/Nov/2026:07:{m:02}:{sec:02} +0000] \"GET /api/items HTTP/1.1\" 200 10 \"-\" \"t\"",
                c / 250,
                c % 250
            )
            .expect("write");
        }
    }
    std::fs::write(path, text).expect("log");
}

#[test]
fn a_replay_is_kept_in_the_history_renamed_reopened_after_a_restart_exported_and_deleted() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("small.log");
    write_log(&log, 3, 20);
    let (id, requests);
    {
        let ui = Ui::open(dir.path(), Some(&server.url()));
        ui.ok(
            "rule_save",
            json!({ "original": null, "draft": { "name": "tb", "algorithm": "token_bucket", "capacity": 5, "refill_per_sec": 0.5 } }),
        );
        let started = ui.ok(
            "replay_start",
            json!({ "request": { "path": log, "parse": { "key": "ip" }, "rules": ["tb"] } }),
        );
        id = started["id"]
            .as_str()
            .expect("an id in the history")
            .to_string();
        let status = wait_for_replay(&ui);
        assert_eq!(status["id"], id.as_str(), "{status}");
        requests = status["report"]["requests"].as_u64().expect("requests");
        assert_eq!(requests, 60, "{status}");
        let history = ui.ok("runs_list", json!({}));
        let kept = &history["replays"][0];
        assert_eq!(
            (&kept["id"], &kept["status"], &kept["requests"]),
            (&json!(id), &json!("finished"), &json!(60)),
            "{history}"
        );
        assert_eq!(kept["name"], "Replay of small.log");
        assert_eq!(kept["log"]["name"], "small.log");
        assert_eq!(
            kept["log"]["bytes"].as_u64(),
            Some(std::fs::metadata(&log).expect("meta").len())
        );
        assert_eq!(kept["log"]["sha256"].as_str().map(str::len), Some(64));
        assert_eq!(kept["rules"][0]["name"], "tb");
        assert!(kept["bytes"].as_u64() > Some(0), "its decisions count");
        assert!(
            history["runs"].as_array().is_some_and(Vec::is_empty),
            "a replay is not listed as a simulation: {history}"
        );
        let err = ui
            .call("run_records", json!({ "id": id }))
            .expect_err("not a simulation");
        assert_eq!(err["code"], "run_not_found", "{err}");
        let err = ui
            .call("replay_rename", json!({ "id": id, "name": " " }))
            .expect_err("an empty name");
        assert_eq!(err["field"], "name", "{err}");
        let renamed = ui.ok(
            "replay_rename",
            json!({ "id": id, "name": "  last Tuesday  " }),
        );
        assert_eq!(renamed["name"], "last Tuesday");
    }
    // Restarted: the replay is listed, reopens with its report, and exports.
    let ui = Ui::open(dir.path(), None);
    let history = ui.ok("runs_list", json!({}));
    assert_eq!(history["replays"][0]["name"], "last Tuesday", "{history}");
    let reopened = ui.ok("replay_reopen", json!({ "id": id }));
    assert_eq!(reopened["name"], "last Tuesday");
    assert_eq!(reopened["report"]["requests"], requests);
    assert_eq!(reopened["report"]["rules"][0]["rule"], "tb");
    assert!(reopened["report"]["rules"][0]["denied"].as_u64() > Some(0));
    assert_eq!(reopened["cancelled"], false);
    std::env::set_var(ratelockr_app::save_dialog::EXPORT_DIR_ENV, dir.path());
    let exported = ui.ok("replay_export_csv", json!({ "id": id }));
    let text = std::fs::read_to_string(exported["path"].as_str().expect("path")).expect("csv");
    assert_eq!(text.lines().count() as u64 - 1, requests, "one row each");
    let chart = ui.ok(
        "replay_export_chart",
        json!({ "format": "png", "heatmap": false, "id": id }),
    );
    let png = std::fs::read(chart["path"].as_str().expect("path")).expect("png");
    assert_eq!(&png[1..4], b"PNG");
    let history = ui.ok("run_delete", json!({ "id": id }));
    assert_eq!(history["replays"], json!([]), "{history}");
    assert!(!dir.path().join("runs").join(&id).exists());
    let err = ui
        .call("replay_reopen", json!({ "id": id }))
        .expect_err("deleted");
    assert_eq!(err["code"], "run_not_found");
}

#[test]
fn a_cancelled_replay_is_kept_as_cancelled_and_a_dead_one_as_failed() {
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    // The export below is refused (the replay is running), but the command asks for a path
    // first: without this, run alone, it would open a real save dialog and wait forever.
    std::env::set_var(ratelockr_app::save_dialog::EXPORT_DIR_ENV, dir.path());
    let log = dir.path().join("long.log");
    // 400,000 requests: far more than are decided before the cancel lands.
    write_log(&log, 500, 800);
    let id;
    {
        let ui = Ui::open(dir.path(), Some(&server.url()));
        ui.ok(
            "rule_save",
            json!({ "original": null, "draft": { "name": "fw", "algorithm": "fixed_window", "limit": 10, "window_ms": 1000 } }),
        );
        let started = ui.ok(
            "replay_start",
            json!({ "request": { "path": log, "parse": { "key": "ip" }, "rules": ["fw"] } }),
        );
        id = started["id"].as_str().expect("id").to_string();
        let err = ui
            .call("replay_export_csv", json!({ "id": id }))
            .expect_err("still running");
        assert_eq!(err["code"], "replay_running", "{err}");
        let err = ui
            .call("run_delete", json!({ "id": id }))
            .expect_err("still running");
        assert_eq!(err["code"], "simulation_running", "{err}");
        ui.ok("replay_cancel", json!({}));
        let status = wait_for_replay(&ui);
        assert_eq!(status["cancelled"], true, "{status}");
        assert_eq!(status["report"]["cancelled"], true, "{status}");
        let decided = status["report"]["requests"].as_u64().expect("requests");
        assert!(decided < 400_000, "cancelled before the end: {decided}");
        let history = ui.ok("runs_list", json!({}));
        assert_eq!(history["replays"][0]["status"], "cancelled", "{history}");
        let reopened = ui.ok("replay_reopen", json!({ "id": id }));
        assert_eq!(reopened["cancelled"], true);
    }
    // A replay the app died during: its replay.json still says running.
    let dead = dir.path().join("runs").join("0000000000002");
    std::fs::create_dir_all(&dead).expect("mkdir");
    let mut stored: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("runs").join(&id).join("replay.json")).expect("kept"),
    )
    .expect("json");
    stored["id"] = json!("0000000000002");
    stored["status"] = json!("running");
    stored["report"] = Value::Null;
    std::fs::write(dead.join("replay.json"), stored.to_string()).expect("write");
    let ui = Ui::open(dir.path(), None);
    let history = ui.ok("runs_list", json!({}));
    let replays = history["replays"].as_array().expect("replays");
    assert_eq!(replays.len(), 2, "{history}");
    let died = replays
        .iter()
        .find(|r| r["id"] == "0000000000002")
        .expect("listed");
    assert_eq!(died["status"], "failed", "{died}");
    assert!(died["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("stopped during")));
}
