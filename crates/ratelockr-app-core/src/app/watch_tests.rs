//! Watch against a real redis-server: traffic decided by another limiter (another process's
//! connection, as `serve` or the layer would have), the file rewritten under the app's feet,
//! and the app restarted on its settings.

use super::*;
use crate::settings::KEY_WATCH_FILE;
use crate::store::SETTINGS_FILE;
use ratelockr::policy::load_policies_file;
use ratelockr::{EmbeddedRedis, Limiter, LimiterOptions, RedisTarget};
use std::path::Path;

const SHADOW: &str = r#"# the API's new limit, rolled out in shadow first
[[policies]]
name = "watch-api"
key = "ip"
mode = "shadow"

  [[policies.limits]]
  name = "per-minute"
  algorithm = "fixed-window"
  limit = 2
  window_ms = 60000

[[policies]]
name = "watch-login"
mode = "enforce"

  [[policies.limits]]
  name = "burst"
  algorithm = "token-bucket"
  capacity = 5
  refill_per_sec = 1

  [[policies.overrides]]
  tier = "staff"
  keys = ["staff_*"]
  limits = [ { name = "burst", algorithm = "token-bucket", capacity = 50, refill_per_sec = 10 } ]
"#;

/// The file written whole: a temporary file beside it, then a rename (as an editor or a
/// deploy would), so the watch never reads half of it.
fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write the temporary file");
    std::fs::rename(&tmp, path).expect("rename over the file");
}

/// An app on `redis_url` with its settings in `data_dir` (written the first time).
fn app(data_dir: &Path, redis_url: &str) -> AppCore {
    let settings = data_dir.join(SETTINGS_FILE);
    if !settings.exists() {
        std::fs::create_dir_all(data_dir).expect("data dir");
        let first = serde_json::json!({
            "redis_url": redis_url,
            "metrics": {"enabled": false, "port": 0},
        });
        std::fs::write(&settings, first.to_string()).expect("write settings");
    }
    AppCore::open(data_dir.to_path_buf()).expect("the app opens")
}

fn saved_file(data_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(data_dir.join(SETTINGS_FILE)).expect("settings");
    let saved: serde_json::Value = serde_json::from_str(&text).expect("json");
    saved[KEY_WATCH_FILE].clone()
}

/// Another process's limiter on the same Redis, deciding `n` requests of `key` under the
/// policy as the file on disk defines it now.
async fn traffic(redis: &EmbeddedRedis, file: &Path, policy: &str, key: &str, n: usize) {
    let target = RedisTarget::parse(&redis.url()).expect("url");
    let other = Limiter::new(&target, LimiterOptions::default());
    let policies = load_policies_file(file).expect("the file loads");
    let policy = policies
        .iter()
        .find(|p| p.name() == policy)
        .expect("policy");
    for _ in 0..n {
        let decision = other
            .check_policy_cost(policy, key, 1)
            .await
            .expect("decided");
        assert!(!decision.fail_open(), "Redis decided: {decision:?}");
    }
}

#[derive(Debug, Default, PartialEq)]
struct Totals {
    allowed: u64,
    denied: u64,
    shadow_denied: u64,
}

fn totals(policy: &WatchedPolicy) -> Totals {
    policy.points.iter().fold(Totals::default(), |t, p| Totals {
        allowed: t.allowed + p.allowed,
        denied: t.denied + p.denied,
        shadow_denied: t.shadow_denied + p.shadow_denied,
    })
}

fn policy<'a>(status: &'a WatchStatus, name: &str) -> &'a WatchedPolicy {
    status
        .policies
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} in {status:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn shadow_denials_arrive_then_enforcement_without_reopening() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.toml");
    write_atomically(&file, SHADOW);
    let core = app(&dir.path().join("data"), &redis.url());

    let status = core
        .watch_open(file.to_str().expect("utf-8"))
        .await
        .expect("opens");
    assert_eq!(status.file.as_deref(), file.to_str());
    assert!(status.modified_ms.is_some(), "{status:?}");
    assert_eq!(status.file_error, None);
    assert_eq!(status.redis, redis.url());
    let names: Vec<&str> = status.policies.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["watch-api", "watch-login"],
        "every policy, in file order"
    );
    let api = policy(&status, "watch-api");
    assert_eq!((api.mode, api.key.as_deref()), (Mode::Shadow, Some("ip")));
    assert_eq!(api.limits[0].name(), "per-minute");
    assert_eq!(policy(&status, "watch-login").tiers, ["staff"]);
    for p in &status.policies {
        assert_eq!(p.points.len(), 30, "{p:?}");
        assert_eq!(p.points.last().map(|p| p.second), Some(status.now_second));
        assert_eq!((totals(p), &p.error), (Totals::default(), &None));
    }

    // Traffic the app did not send: 2 pass the limit, 3 more would be denied and are admitted.
    traffic(&redis, &file, "watch-api", "203.0.113.9", 5).await;
    traffic(&redis, &file, "watch-login", "alice", 1).await;
    let status = core.watch_read().await;
    let expected = Totals {
        allowed: 2,
        denied: 0,
        shadow_denied: 3,
    };
    assert_eq!(totals(policy(&status, "watch-api")), expected);
    assert_eq!(totals(policy(&status, "watch-login")).allowed, 1);

    // The file is switched to enforce on disk: the next read has it, without a reopen, and
    // the same client is now denied.
    write_atomically(&file, &SHADOW.replacen("\"shadow\"", "\"enforce\"", 1));
    let status = core.watch_read().await;
    assert_eq!(status.file_error, None);
    assert_eq!(policy(&status, "watch-api").mode, Mode::Enforce);
    traffic(&redis, &file, "watch-api", "203.0.113.9", 2).await;
    let status = core.watch_read().await;
    let expected = Totals {
        allowed: 2,
        denied: 2,
        shadow_denied: 3,
    };
    assert_eq!(totals(policy(&status, "watch-api")), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_file_keeps_the_policies_in_force_and_says_where_it_is_wrong() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.toml");
    write_atomically(&file, SHADOW);
    let core = app(&dir.path().join("data"), &redis.url());
    let opened = core
        .watch_open(file.to_str().expect("utf-8"))
        .await
        .expect("opens");

    let in_force = |status: &WatchStatus| {
        let names: Vec<(String, Mode)> = status
            .policies
            .iter()
            .map(|p| (p.name.clone(), p.mode))
            .collect();
        assert_eq!(
            names,
            [
                ("watch-api".to_string(), Mode::Shadow),
                ("watch-login".to_string(), Mode::Enforce)
            ],
            "the policies in force stay: {status:?}"
        );
        assert_eq!(status.modified_ms, opened.modified_ms, "the file in force");
    };

    // A limit below 1, line 10 (of another length: the watch sees a change by the file's
    // modification time and size, and a time can repeat within the clock's tick).
    write_atomically(&file, &SHADOW.replacen("limit = 2", "limit = -1", 1));
    let status = core.watch_read().await;
    in_force(&status);
    let err = status.file_error.clone().expect("the refusal is shown");
    assert_eq!(err.code, ErrorCode::PolicyFile);
    assert_eq!(err.field.as_deref(), Some("limit"), "{err:?}");
    for part in [
        file.to_str().expect("utf-8"),
        "line 10",
        "policies[0].limits[0].limit",
        "got -1",
    ] {
        assert!(err.message.contains(part), "{part} in {err:?}");
    }
    // Still shown on the next look, though the file has not changed since.
    assert_eq!(core.watch_read().await.file_error, Some(err));

    // Half-written: cut in the middle of a table.
    std::fs::write(
        &file,
        &SHADOW[..SHADOW.find("algorithm = \"token").expect("cut")],
    )
    .expect("write half");
    let status = core.watch_read().await;
    in_force(&status);
    let err = status.file_error.expect("refused");
    assert!(err.message.contains("line"), "{err:?}");

    // Gone.
    std::fs::remove_file(&file).expect("rm");
    let status = core.watch_read().await;
    in_force(&status);
    let err = status.file_error.expect("refused");
    assert!(err.message.contains("cannot read"), "{err:?}");

    // Back, valid and enforced: in force, and the error is gone.
    write_atomically(&file, &SHADOW.replace("\"shadow\"", "\"enforce\""));
    let status = core.watch_read().await;
    assert_eq!(status.file_error, None);
    assert_eq!(policy(&status, "watch-api").mode, Mode::Enforce);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_file_is_refused_at_open_and_the_watched_one_stays() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let good = dir.path().join("policies.toml");
    write_atomically(&good, SHADOW);
    let core = app(&data, &redis.url());
    core.watch_open(good.to_str().expect("utf-8"))
        .await
        .expect("opens");

    let bad = dir.path().join("bad.json");
    let json = r#"{"policies": [{"name": "x", "mode": "loud", "limits": [{"name": "a", "algorithm": "gcra", "limit": 1, "window_ms": 1000}]}]}"#;
    write_atomically(&bad, json);
    let err = core
        .watch_open(bad.to_str().expect("utf-8"))
        .await
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::PolicyFile);
    assert_eq!(err.field.as_deref(), Some("mode"), "{err:?}");
    assert!(err.message.contains("bad.json"), "{err:?}");
    assert!(err.message.contains("policies[0].mode"), "{err:?}");

    let missing = dir.path().join("missing.toml");
    let err = core
        .watch_open(missing.to_str().expect("utf-8"))
        .await
        .expect_err("refused");
    assert_eq!(err.field.as_deref(), Some("path"));
    assert!(err.message.contains("missing.toml"), "{err:?}");
    let err = core.watch_open("  ").await.expect_err("refused");
    assert_eq!(err.field.as_deref(), Some("path"));

    let status = core.watch_read().await;
    assert_eq!(
        status.file.as_deref(),
        good.to_str(),
        "the watched file stays"
    );
    assert_eq!(status.policies.len(), 2);
    assert_eq!(saved_file(&data), good.to_str().expect("utf-8"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_is_remembered_and_one_gone_at_start_is_reported_not_fatal() {
    let redis = EmbeddedRedis::start().expect("redis-server on PATH");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let file = dir.path().join("policies.toml");
    write_atomically(&file, SHADOW);
    let core = app(&data, &redis.url());
    assert_eq!(
        core.watch_read().await.file,
        None,
        "nothing watched at first"
    );
    core.watch_open(file.to_str().expect("utf-8"))
        .await
        .expect("opens");
    assert_eq!(saved_file(&data), file.to_str().expect("utf-8"));
    drop(core);

    // Restarted: the same file, watched again.
    let core = app(&data, &redis.url());
    let status = core.watch_read().await;
    assert_eq!(status.file.as_deref(), file.to_str());
    assert_eq!(status.policies.len(), 2);
    drop(core);

    // Gone while the app was closed: the app starts, says so, and keeps the file.
    std::fs::remove_file(&file).expect("rm");
    let core = app(&data, &redis.url());
    let warnings = core.info().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("Watch") && w.contains(file.to_str().expect("utf-8"))),
        "{warnings:?}"
    );
    let status = core.watch_read().await;
    assert_eq!(status.file.as_deref(), file.to_str());
    assert!(status.policies.is_empty());
    assert_eq!(
        status.file_error.map(|e| e.code),
        Some(ErrorCode::PolicyFile)
    );

    // Back: taken up on the next look.
    write_atomically(&file, SHADOW);
    let status = core.watch_read().await;
    assert_eq!((status.policies.len(), status.file_error), (2, None));

    // Closed: forgotten, in memory and in the settings.
    let status = core.watch_close().await.expect("closes");
    assert_eq!((status.file, status.policies.len()), (None, 0));
    assert_eq!(saved_file(&data), serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_redis_is_said_per_policy() {
    // A port nothing listens on: a redis-server started and stopped.
    let url = {
        let redis = EmbeddedRedis::start().expect("redis-server on PATH");
        redis.url()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.toml");
    write_atomically(&file, SHADOW);
    let core = app(&dir.path().join("data"), &url);
    let status = core
        .watch_open(file.to_str().expect("utf-8"))
        .await
        .expect("opens");
    assert_eq!(status.policies.len(), 2, "the file's policies are shown");
    for p in &status.policies {
        assert!(p.error.is_some(), "{p:?}");
        assert_eq!(p.points.len(), 30, "the axis still moves: {p:?}");
    }
}
