//! The embedded Redis keeps its port across restarts: chosen once, remembered in the settings,
//! taken again at the next start; when something else holds it, another is taken and the
//! start-up warnings say so. Against real redis-servers.

use super::super::AppCore;
use crate::connection::LinkState;
use crate::settings::KEY_EMBEDDED_PORT;
use crate::store::SETTINGS_FILE;
use std::path::Path;

/// An app with no Redis URL configured (the automatic choice), the metrics endpoint off.
fn app(data_dir: &Path, remembered: Option<u16>) -> AppCore {
    let settings = serde_json::json!({
        "metrics": {"enabled": false, "port": 0},
        KEY_EMBEDDED_PORT: remembered,
    });
    std::fs::write(data_dir.join(SETTINGS_FILE), settings.to_string()).expect("write settings");
    AppCore::open(data_dir.to_path_buf()).expect("the app opens")
}

fn saved_port(data_dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(data_dir.join(SETTINGS_FILE)).expect("settings");
    let saved: serde_json::Value = serde_json::from_str(&text).expect("json");
    saved[KEY_EMBEDDED_PORT].as_u64()
}

/// The automatic choice takes a Redis on 127.0.0.1:6379 before an embedded one: with one
/// there, these tests cannot see the embedded server, and say so.
fn default_redis_runs() -> bool {
    let runs = crate::connection::default_answers();
    if runs {
        eprintln!("a Redis answers on 127.0.0.1:6379, which the automatic choice prefers: stop it to run this test");
    }
    runs
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_redis_gets_the_same_port_at_the_next_start() {
    if default_redis_runs() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let first = app(dir.path(), None);
    let status = first.connection_status().await;
    assert_eq!(status.state, LinkState::Embedded, "{status:?}");
    let port = first.embedded_port().expect("an embedded server's port");
    assert_eq!(
        saved_port(dir.path()),
        Some(u64::from(port)),
        "remembered at once"
    );
    first.shutdown();
    drop(first);
    assert!(
        !ratelockr::embedded::ping(port),
        "the first app's server is gone"
    );

    let second = AppCore::open(dir.path().to_path_buf()).expect("opens again");
    let status = second.connection_status().await;
    assert_eq!(status.state, LinkState::Embedded, "{status:?}");
    assert_eq!(status.url, format!("redis://127.0.0.1:{port}"));
    assert_eq!(second.embedded_port(), Some(port));
    assert!(
        !second.info().warnings.iter().any(|w| w.contains("busy")),
        "{:?}",
        second.info().warnings
    );
    let commands = status.commands.expect("the commands to copy");
    assert_eq!(commands.cli, format!("redis-cli -p {port}"));
    assert!(
        commands.serve.starts_with(&format!(
            "ratelockr serve --redis redis://127.0.0.1:{port} "
        )),
        "{}",
        commands.serve
    );
    second.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_port_is_replaced_remembered_and_reported() {
    if default_redis_runs() {
        return;
    }
    // Another redis-server holds the remembered port: it must not be taken for the app's own
    // (it would answer the readiness PING), and it is left alone.
    let squatter = ratelockr::EmbeddedRedis::start().expect("redis-server on PATH");
    let busy = squatter.port();
    let dir = tempfile::tempdir().expect("tempdir");
    let core = app(dir.path(), Some(busy));
    let status = core.connection_status().await;
    assert_eq!(status.state, LinkState::Embedded, "{status:?}");
    let port = core.embedded_port().expect("an embedded server's port");
    assert_ne!(port, busy, "another port");
    assert_eq!(status.url, format!("redis://127.0.0.1:{port}"));
    assert_eq!(
        saved_port(dir.path()),
        Some(u64::from(port)),
        "the new one is remembered"
    );
    let warnings = core.info().warnings;
    let said = warnings
        .iter()
        .find(|w| w.contains(&format!("port {busy} was busy")))
        .unwrap_or_else(|| panic!("the move is reported: {warnings:?}"));
    assert!(
        said.contains(&format!("redis://127.0.0.1:{port}")),
        "{said}"
    );
    assert!(
        ratelockr::embedded::ping(busy),
        "the other server still runs"
    );
    core.shutdown();
}

/// A switch to the automatic choice while the app's embedded server runs keeps that server
/// (and its port), rather than starting a second one on another port.
#[tokio::test(flavor = "multi_thread")]
async fn a_switch_to_automatic_keeps_the_running_embedded_server() {
    if default_redis_runs() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let core = app(dir.path(), None);
    let port = core.embedded_port().expect("embedded");
    let status = core.connection_switch(None, None).await.expect("switches");
    assert_eq!(status.url, format!("redis://127.0.0.1:{port}"));
    assert_eq!(status.warning, None);
    assert_eq!(core.embedded_port(), Some(port));
    core.shutdown();
}

#[test]
fn a_saved_port_out_of_range_is_reported_and_a_free_one_taken() {
    use crate::settings::Settings;
    for bad in [
        serde_json::json!(70000),
        serde_json::json!(0),
        serde_json::json!("6390"),
    ] {
        let (settings, warnings) =
            Settings::from_entries(|k| (k == KEY_EMBEDDED_PORT).then(|| bad.clone()));
        assert_eq!(settings.embedded_port, None, "{bad}");
        assert!(warnings[0].contains("embedded Redis"), "{warnings:?}");
    }
    let (settings, warnings) =
        Settings::from_entries(|k| (k == KEY_EMBEDDED_PORT).then(|| serde_json::json!(41234)));
    assert_eq!((settings.embedded_port, warnings.len()), (Some(41234), 0));
}
