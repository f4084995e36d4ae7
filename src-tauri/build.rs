//! The app's Tauri config lives at the repository root (the product card asks for it there);
//! tauri-build is pointed at it, and `generate_context!` in lib.rs reads the same file.
//! The app manifest lists our commands so capabilities can grant them one by one.

const COMMANDS: &[&str] = &[
    "app_info",
    "connection_status",
    "connection_test",
    "connection_switch",
    "connection_topology",
    "connection_pick_file",
    "rules_list",
    "rule_validate",
    "rule_save",
    "rule_delete",
    "policy_validate",
    "policies_file",
    "policies_file_open",
    "policies_file_new",
    "policy_file_save",
    "policy_file_delete",
    "rule_to_policies_file",
    "stats",
    "sim_start",
    "sim_cancel",
    "sim_status",
    "export_csv",
    "export_chart",
    "metrics_status",
    "metrics_configure",
    "runs_list",
    "run_rename",
    "run_delete",
    "run_records",
    "history_configure",
    "limiter_reset",
    "limiter_peek",
    "decision_headers",
    "workload_preview",
    "replay_open",
    "replay_sample",
    "replay_preview",
    "replay_start",
    "replay_cancel",
    "replay_status",
    "replay_reopen",
    "replay_rename",
    "replay_export_csv",
    "replay_export_chart",
    "watch_choose",
    "watch_read",
    "watch_close",
];

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(err) = tauri_build::try_build(attributes) {
        panic!("tauri-build failed: {err:#}");
    }
}
