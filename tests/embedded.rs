//! A managed redis-server whose owner is killed outright (no Drop, no cleanup) does not live
//! on: the next embedded start on the machine shuts it down and removes its files.

use ratelockr::embedded::{ping, reap_orphans};
use ratelockr::EmbeddedRedis;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The directory and port of the embedded server started by process `owner`, once it is up.
fn server_of(owner: u32) -> (PathBuf, u16) {
    let prefix = format!("ratelockr-redis-{owner}-");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir(std::env::temp_dir())
            .expect("the temp dir")
            .flatten()
            .find_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let port: u16 = name.strip_prefix(&prefix)?.parse().ok()?;
                let dir = entry.path();
                (dir.join("redis.pid").exists() && ping(port)).then_some((dir, port))
            });
        if let Some(found) = found {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "process {owner} started no embedded redis-server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

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

/// SIGTERM (what `kill`, `timeout` and service managers send) stops `serve` as Ctrl-C does:
/// it exits cleanly and takes its embedded redis-server and that server's files with it,
/// rather than dying and leaving them to the next start's sweep.
#[test]
fn sigterm_stops_serve_and_its_embedded_server() {
    let mut owner = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--embedded", "serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ratelockr serve starts");
    let (dir, port) = server_of(owner.id());
    // serve listens for signals before it binds its port: once it listens, SIGTERM is its.
    wait_until_listening(owner.id());

    let status = Command::new("kill")
        .args(["-TERM", &owner.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let exit = wait_with_guard(&mut owner);
    assert!(
        exit.success(),
        "serve did not exit cleanly on SIGTERM: {exit:?}"
    );
    assert!(!ping(port), "its redis-server on port {port} still answers");
    assert!(
        !dir.exists(),
        "its server's files remain: {}",
        dir.display()
    );
}

/// Waits for `child` to exit (a guard against a hang, not a timing: 30 s, then it is killed).
fn wait_with_guard(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until process `pid` has a listening TCP socket besides its embedded server's (Linux:
/// its socket inodes in /proc against /proc/net/tcp's listeners).
fn wait_until_listening(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| {
                fds.flatten()
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .filter_map(|l| {
                        let l = l.to_string_lossy().into_owned();
                        Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let listening = tcp.lines().skip(1).any(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // st 0A: LISTEN; the inode is the tenth field.
            f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9])
        });
        if listening {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
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
