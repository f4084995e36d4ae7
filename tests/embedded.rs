//! A managed redis-server whose owner is killed outright (no Drop, no cleanup) does not live
//! on: the next embedded start on the machine shuts it down and removes its files.

mod common;

use common::embedded_server_of as server_of;
use ratelockr::embedded::{ping, reap_orphans};
use ratelockr::EmbeddedRedis;
use std::process::{Command, Stdio};

#[test]
fn a_server_left_behind_by_a_killed_owner_is_stopped_by_the_next_start() {
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

    // SIGKILL: the owner's Drop never runs.
    owner.kill().expect("kill the owner");
    owner.wait().expect("reap the owner");
    assert!(ping(port), "the server should have outlived its owner");

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
