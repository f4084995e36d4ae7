//! Watch over IPC, as the window calls it: the open dialog answered by
//! `RATELOCKR_OPEN_POLICIES`, the file followed and remembered, traffic decided by another
//! limiter on the same real redis-server, and an invalid file refused with its field.

use crate::common::{redis, Ui};
use ratelockr::policy::load_policies_file;
use ratelockr::{Limiter, LimiterOptions, RedisTarget};
use ratelockr_app::open_dialog::OPEN_POLICIES_ENV;
use serde_json::{json, Value};

const SHADOW: &str = r#"{"policies": [{"name": "ipc-watch", "mode": "shadow",
  "limits": [{"name": "per-minute", "algorithm": "fixed-window", "limit": 1, "window_ms": 60000}]}]}"#;

fn total(status: &Value, field: &str) -> u64 {
    status["policies"][0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p[field].as_u64().expect("a count"))
        .sum()
}

#[test]
fn a_policies_file_is_watched_live_over_ipc_and_remembered() {
    let _dialog = crate::common::open_dialog();
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.json");
    std::fs::write(&file, SHADOW).expect("write");
    // An invalid file first: refused at the dialog's answer, naming the JSON path's field.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, SHADOW.replace("\"limit\": 1", "\"limit\": \"one\"")).expect("write");
    {
        let ui = Ui::open(dir.path(), Some(&server.url()));
        std::env::set_var(OPEN_POLICIES_ENV, &bad);
        let err = ui.call("watch_choose", json!({})).expect_err("refused");
        assert_eq!(
            (&err["code"], &err["field"]),
            (&json!("policy_file"), &json!("limit")),
            "{err}"
        );
        assert!(
            err["message"]
                .as_str()
                .is_some_and(|m| m.contains("bad.json")),
            "{err}"
        );

        std::env::set_var(OPEN_POLICIES_ENV, &file);
        let status = ui.ok("watch_choose", json!({}));
        assert_eq!(status["file"], json!(file), "{status}");
        assert_eq!(status["policies"][0]["mode"], "shadow", "{status}");

        // Another process's traffic: 1 allowed, 2 shadow-denied.
        let policies = load_policies_file(&file).expect("loads");
        tauri::async_runtime::block_on(async {
            let target = RedisTarget::parse(&server.url()).expect("url");
            let other = Limiter::new(&target, LimiterOptions::default());
            for _ in 0..3 {
                other
                    .check_policy_cost(&policies[0], "k", 1)
                    .await
                    .expect("decided");
            }
        });
        let status = ui.ok("watch_read", json!({}));
        assert_eq!(
            (total(&status, "allowed"), total(&status, "shadow_denied")),
            (1, 2),
            "{status}"
        );
    }
    // Restarted: still watched.
    let ui = Ui::open(dir.path(), None);
    let status = ui.ok("watch_read", json!({}));
    assert_eq!(status["policies"][0]["name"], "ipc-watch", "{status}");
    let closed = ui.ok("watch_close", json!({}));
    assert_eq!(closed.get("file"), None, "{closed}");
}
