//! The server named: the engine reads which server it is on (Redis, Valkey or Dragonfly), its
//! version and whether it runs scripts; `ratelockr topology` prints it; a server without
//! scripting is refused at once, by the commands that decide, with a message that says so.
//!
//! Runs on whichever server the harness starts (`RATELOCKR_REDIS_SERVER`): `make test` runs it
//! on Redis and on Valkey. Only Valkey (≥ 9.1, whose Lua engine is a module) can be made to run
//! without scripting, so the refusal is exercised on the Valkey run.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};
use ratelockr::{Scripting, ServerKind};

/// The family and version the server program gives for `--version` (`Valkey 9.1.2 (…)`).
fn expected() -> (ServerKind, String) {
    let shown = common::server();
    let mut words = shown.split_whitespace();
    let kind = match words.next() {
        Some("Valkey") => ServerKind::Valkey,
        Some("Redis") => ServerKind::Redis,
        other => panic!("a server this test does not know: {other:?} ({shown})"),
    };
    (kind, words.next().expect("a version").to_string())
}

#[tokio::test]
async fn the_engine_names_the_server_its_version_and_scripting() {
    let server = common::redis();
    let limiter = common::limiter(&server, "server-info");
    let info = limiter.server().await.expect("the server answers");
    let (kind, version) = expected();
    assert_eq!((info.kind, info.version.as_str()), (kind, version.as_str()));
    assert_eq!(info.scripting, Scripting::Available, "{info:?}");
    assert_eq!(info.scripting_error, None);
    assert_eq!(
        info.to_string(),
        format!("{} {version}, scripting available", kind.as_str())
    );
    // Nothing was written by the probe.
    let size: i64 = common::query(&limiter, &redis::cmd("DBSIZE")).await;
    assert_eq!(size, 0);
}

#[test]
fn topology_prints_the_server() {
    let server = common::redis();
    let url = server.url();
    let (kind, version) = expected();
    let t = json(&ratelockr(&["--redis", &url, "--json", "topology"]));
    let kind_json = serde_json::to_value(kind).expect("json");
    assert_eq!(t["server"]["kind"], kind_json, "{t}");
    assert_eq!(t["server"]["version"], version.as_str(), "{t}");
    assert_eq!(t["server"]["scripting"], "available", "{t}");
    let human = ratelockr(&["--redis", &url, "topology"]);
    assert!(human.status.success(), "{}", text(&human.stderr));
    let shown = format!("server: {} {version}, scripting available", kind.as_str());
    assert!(
        text(&human.stdout).contains(&shown),
        "{:?} lacks {shown:?}",
        text(&human.stdout)
    );
}

#[test]
fn a_server_without_scripting_is_refused_at_once_saying_so() {
    let (kind, version) = expected();
    if kind != ServerKind::Valkey {
        eprintln!(
            "{} cannot run without scripting; the refusal is exercised on Valkey (make test-valkey)",
            common::server()
        );
        return;
    }
    let server = ratelockr::EmbeddedRedis::start_with(&["--enable-module-command", "local"])
        .unwrap_or_else(|err| panic!("{} does not start: {err}", common::server()));
    let url = server.url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let limiter = common::limiter(&server, "no-lua");
        let unloaded: String =
            common::query(&limiter, redis::cmd("MODULE").arg("UNLOAD").arg("lua")).await;
        assert_eq!(unloaded, "OK");
        let info = limiter.server().await.expect("the server answers");
        assert_eq!(info.scripting, Scripting::Missing, "{info:?}");
    });
    let said = format!("Valkey {version} cannot run Lua scripts");
    let runs: [&[&str]; 4] = [
        &["check", "--algorithm", "gcra", "--key", "k"],
        &["simulate", "--algorithm", "fixed-window", "--requests", "5"],
        &[
            "check",
            "--algorithm",
            "token-bucket",
            "--key",
            "k",
            "--json",
        ],
        &["topology"],
    ];
    for args in runs {
        let out = ratelockr(&[&["--redis", url.as_str()], args].concat());
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} was not refused: {stderr}");
        assert!(
            stderr.contains(&said),
            "{args:?}: {stderr:?} lacks {said:?}"
        );
        assert!(
            !text(&out.stdout).contains("fail_open\": true"),
            "{args:?} decided (failing open) instead of refusing"
        );
    }
}
