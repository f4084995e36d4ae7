//! The Policies view's file over IPC, as the window calls it: opened from the open dialog
//! (answered by `RATELOCKR_OPEN_POLICIES`), changed by another editor and taken, saved in
//! place without touching the other policies, a save over a newer file refused until the user
//! says overwrite, an invalid outside edit shown with the last good policies kept, and the file
//! reopened after a restart; a rule of the app put into it.

use crate::common::{redis, Ui};
use ratelockr::policy::{load_policies_file, Mode};
use ratelockr_app::open_dialog::OPEN_POLICIES_ENV;
use serde_json::{json, Value};
use std::path::Path;

const FILE: &str = r#"[[policies]]
name = "ipc-api"
mode = "shadow"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 10

[[policies]]
name = "ipc-login"

  [[policies.limits]]
  name = "burst"
  algorithm = "fixed-window"
  limit = 5
  window_ms = 60000
"#;

fn login(limit: u64) -> Value {
    json!({"name": "ipc-login", "limits": [
        {"name": "burst", "algorithm": "fixed_window", "limit": limit, "window_ms": 60000}]})
}

fn mode_on_disk(file: &Path) -> Mode {
    load_policies_file(file).expect("the file loads")[0].mode()
}

fn edit_outside(path: &Path, text: &str) {
    let tmp = path.with_extension("outside");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn the_policies_file_is_the_truth_over_ipc() {
    let _dialog = crate::common::open_dialog();
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.toml");
    std::fs::write(&file, FILE).expect("write");
    let enforced = FILE.replacen("mode = \"shadow\"", "mode = \"enforce\"", 1);
    {
        let ui = Ui::open(dir.path(), Some(&server.url()));
        let none = ui.ok("policies_file", json!({}));
        assert_eq!((none.get("file"), &none["policies"]), (None, &json!([])));
        std::env::set_var(OPEN_POLICIES_ENV, &file);
        let opened = ui.ok("policies_file_open", json!({}));
        assert_eq!(opened["file"], json!(file), "{opened}");
        assert_eq!(opened["policies"][0]["mode"], "shadow", "{opened}");
        let began = opened["version"].clone();

        // Another editor switches production to enforce: taken at the next look.
        edit_outside(&file, &enforced);
        let status = ui.ok("policies_file", json!({}));
        assert_eq!(
            (&status["reloaded"], &status["policies"][0]["mode"]),
            (&json!(true), &json!("enforce")),
            "{status}"
        );
        // A save of an edit begun before that change asks first: nothing is written.
        let args = |base: &Value, overwrite: bool| json!({"original": "ipc-login", "draft": login(9), "base": base, "overwrite": overwrite});
        let err = ui
            .call("policy_file_save", args(&began, false))
            .expect_err("stale");
        assert_eq!(err["code"], "file_changed", "{err}");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), enforced);
        // Saved on the version the app shows: ipc-api stays enforced.
        let saved = ui.ok("policy_file_save", args(&status["version"], false));
        assert_eq!(mode_on_disk(&file), Mode::Enforce);
        assert_eq!(saved["policies"][1]["limits"][0]["limit"], 9, "{saved}");

        // An invalid outside edit: the engine's error, the last good policies kept.
        let good = saved["policies"].clone();
        let broken = std::fs::read_to_string(&file)
            .expect("read")
            .replace("capacity = 10", "capacity = -1");
        edit_outside(&file, &broken);
        let status = ui.ok("policies_file", json!({}));
        let error = &status["error"];
        assert_eq!(
            (&error["code"], &error["field"]),
            (&json!("policy_file"), &json!("capacity")),
            "{status}"
        );
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("policies.toml") && m.contains("line")),
            "{status}"
        );
        assert_eq!(status["policies"], good);
        let err = ui
            .call("policy_file_save", args(&status["version"], false))
            .expect_err("the file does not load");
        assert_eq!(err["code"], "file_changed", "{err}");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), broken);
        // Overwrite, the user's word: what the app shows, with the edit.
        ui.ok("policy_file_save", args(&status["version"], true));
        assert_eq!(mode_on_disk(&file), Mode::Enforce);
    }
    // Restarted: the same file is open.
    let ui = Ui::open(dir.path(), None);
    let status = ui.ok("policies_file", json!({}));
    assert_eq!(status["file"], json!(file), "{status}");
    assert_eq!(status["policies"][0]["name"], "ipc-api", "{status}");

    // A rule tuned in the app goes into the same file, as a policy of one limit.
    let rule =
        json!({"name": "ipc-search", "algorithm": "fixed_window", "limit": 7, "window_ms": 1000});
    ui.ok("rule_save", json!({"original": null, "draft": rule}));
    let done = ui.ok("rule_to_policies_file", json!({"name": "ipc-search"}));
    assert_eq!(done["policies"][2]["name"], "ipc-search", "{done}");
    let on_disk = load_policies_file(&file).expect("loads");
    assert_eq!(on_disk[2].limits()[0].name(), "ipc-search");
    assert_eq!(mode_on_disk(&file), Mode::Enforce, "the others untouched");
}
