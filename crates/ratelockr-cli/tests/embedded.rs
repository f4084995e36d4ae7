//! A managed redis-server whose owner is killed outright (no Drop, no cleanup) does not live
//! on: the kernel stops it (Linux, tied to its owner), and the next embedded start on the
//! machine shuts down any that remain and removes their files.

#[path = "../../../tests/common/mod.rs"]
mod common;

use crate::common::embedded_server_of as server_of;
use ratelockr::embedded::{ping, reap_orphans};
use ratelockr::EmbeddedRedis;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Every embedded start sweeps the machine for orphans, so the tests here take turns: one
/// test's start would otherwise stop the other's orphan before that test saw it answer.
static SWEEPS: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SWEEPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Linux: the server is tied to its owner and the kernel stops it when the owner dies.
#[cfg(target_os = "linux")]
#[test]
fn a_server_whose_owner_is_killed_stops_by_itself() {
    let _turn = one_at_a_time();
    if ratelockr::embedded::find_on_path("setpriv").is_none() {
        eprintln!("skipped: no setpriv on PATH (util-linux); the next start reaps instead");
        return;
    }
    // An owner that starts an embedded server and keeps it: serve with a demo workload.
    let mut owner = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args([
            "--embedded",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--demo-rps",
            "5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ratelockr serve starts");
    let (dir, port) = server_of(owner.id());
    assert!(ping(port));

    // SIGKILL: the owner's Drop never runs.
    owner.kill().expect("kill the owner");
    owner.wait().expect("reap the owner");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while ping(port) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!ping(port), "the server on port {port} outlived its owner");
    // Its files go with the next start's sweep.
    let _next = EmbeddedRedis::start().expect("redis-server starts");
    assert!(!dir.exists(), "the files remain: {}", dir.display());
}

/// Where a server does outlive its owner (no setpriv, or started by an older version), the
/// next embedded start on the machine shuts it down and removes its files. The orphan here is
/// left by a shell that starts a server in the background, as an owner would, and exits.
#[test]
fn a_server_left_behind_by_a_dead_owner_is_stopped_by_the_next_start() {
    let _turn = one_at_a_time();
    let server = ratelockr::embedded::find_on_path("redis-server");
    let program = std::env::var(ratelockr::embedded::SERVER_ENV)
        .ok()
        .map(std::path::PathBuf::from)
        .or(server)
        .expect("redis-server on PATH");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let tmp = std::env::temp_dir();
    let owner = Command::new("sh")
        .arg("-c")
        .arg(
            r#"d="$1/ratelockr-redis-$$-$2"; mkdir -p "$d"
exec 0</dev/null 1>/dev/null 2>&1
"$3" --port "$2" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$d" --pidfile "$d/redis.pid" &"#,
        )
        .arg("sh")
        .arg(&tmp)
        .arg(port.to_string())
        .arg(&program)
        .status()
        .expect("the owner runs");
    assert!(owner.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let dir = loop {
        let found = std::fs::read_dir(&tmp)
            .expect("the temp dir")
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("ratelockr-redis-") && n.ends_with(&format!("-{port}"))
                }) && p.join("redis.pid").exists()
            });
        match found {
            Some(dir) if ping(port) => break dir,
            _ => assert!(
                std::time::Instant::now() < deadline,
                "the orphan never answered"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };

    // A server of a live owner (this test) is left alone by the same sweep.
    let live = EmbeddedRedis::start().expect("redis-server starts");
    assert!(!ping(port), "the orphan on port {port} still answers");
    assert!(
        !dir.exists(),
        "the orphan's files remain: {}",
        dir.display()
    );
    assert!(ping(live.port()));
    assert_eq!(reap_orphans(), 0, "a second sweep finds nothing");
    assert!(ping(live.port()), "the sweep stopped a live owner's server");
}

/// A server that died is started again on its own port: connections to it recover by
/// themselves.
#[test]
fn a_killed_server_starts_again_on_its_port() {
    let _turn = one_at_a_time();
    let server = ratelockr::EmbeddedRedis::start().expect("redis-server on PATH");
    assert!(
        !server.restart_if_exited().expect("alive"),
        "nothing to do while it runs"
    );
    let (port, pid) = (server.port(), server.pid());
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let started = std::time::Instant::now();
    while !server.exited() {
        assert!(started.elapsed().as_secs() < 10, "the server ends");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(server.restart_if_exited().expect("starts again"));
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), pid);
    assert!(
        ratelockr::embedded::ping(port),
        "it answers on the same port"
    );
}
