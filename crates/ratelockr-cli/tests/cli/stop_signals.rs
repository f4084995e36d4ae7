//! SIGTERM (what `kill`, `timeout` and service managers send to one process) ends the CLI's
//! long-running commands as Ctrl-C does: `serve` exits cleanly and takes its embedded
//! redis-server with it; a `simulate` run stops and keeps what it sent, its CSV whole; any other
//! command is stopped (exit 130) with its embedded Redis.

use crate::common;

use crate::common::{embedded_server_of, signal, tempdir};
use ratelockr::embedded::ping;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_stops_serve_and_its_embedded_server() {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--embedded", "serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ratelockr serve starts");
    let (dir, port) = embedded_server_of(serve.id());
    // serve listens for signals before it binds its port: once it listens, SIGTERM is its.
    wait_until_listening(serve.id());

    let (exit, stderr) = terminate(&mut serve);
    assert!(
        exit.success(),
        "serve did not exit cleanly: {exit:?}\n{stderr}"
    );
    assert_gone(&dir, port);
}

#[test]
fn sigterm_stops_a_bench_and_its_embedded_server() {
    let mut bench = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--embedded", "bench", "--algorithm", "fixed-window"])
        .args(["--duration-secs", "120", "--no-ceiling"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ratelockr bench starts");
    // The command listens for signals before it starts its Redis.
    let (dir, port) = embedded_server_of(bench.id());

    let (exit, stderr) = terminate(&mut bench);
    assert_eq!(exit.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped by a signal"), "{stderr}");
    assert_gone(&dir, port);
}

/// While a cluster forms, the first signal waits for it (the command stops at its next await);
/// a second one exits at once. Its servers are then left to the next start's sweep.
#[test]
fn a_second_signal_exits_at_once() {
    let mut topology = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--embedded-cluster", "topology"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ratelockr topology starts");
    // Its first node answers: the cluster is forming, seconds from done.
    embedded_server_of(topology.id());
    signal("TERM", topology.id());
    std::thread::sleep(Duration::from_millis(300));
    signal("INT", topology.id());
    let exit = wait_for_exit(&mut topology);
    let stderr = stderr_of(&mut topology);
    ratelockr::embedded::reap_orphans();
    assert_eq!(exit.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("a second signal: exiting at once"),
        "{stderr}"
    );
}

#[test]
fn sigterm_stops_a_simulation_which_keeps_what_it_sent() {
    let redis = common::redis();
    let prefix = common::unique("sigterm-sim");
    let dir = tempdir("sigterm-sim");
    let csv = dir.join("run.csv");
    let mut simulate = Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["--redis", &redis.url(), "--prefix", &prefix, "simulate"])
        .args(["--algorithm", "token-bucket", "--capacity", "10"])
        .args([
            "--refill-per-sec",
            "5",
            "--rps",
            "200",
            "--duration-secs",
            "120",
        ])
        .arg("--csv")
        .arg(&csv)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ratelockr simulate starts");
    // It listens for signals before its first decision: wait until Redis has made some.
    let deadline = Instant::now() + Duration::from_secs(30);
    while evalsha_calls(redis.port()) < 20 {
        assert!(Instant::now() < deadline, "the simulation decided nothing");
        std::thread::sleep(Duration::from_millis(50));
    }

    let (exit, stderr) = terminate(&mut simulate);
    assert_eq!(exit.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled"), "{stderr}");
    let mut reader = csv::Reader::from_path(&csv).expect("the CSV was kept");
    let width = reader.headers().expect("a header").len();
    let rows = reader
        .records()
        .map(|r| r.expect("a whole row").len())
        .inspect(|&n| assert_eq!(n, width, "a short row"))
        .count();
    assert!(rows >= 20, "{rows} rows, fewer than Redis decided");
    let _ = std::fs::remove_dir_all(&dir);
}

/// EVALSHA calls Redis on `port` has run (`INFO commandstats`).
fn evalsha_calls(port: u16) -> u64 {
    let stats = ratelockr::embedded_cluster::query_node(port, &["INFO", "commandstats"])
        .unwrap_or_default();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// Sends `child` SIGTERM and waits for it to exit: its status and what it wrote to stderr.
fn terminate(child: &mut Child) -> (ExitStatus, String) {
    signal("TERM", child.id());
    let exit = wait_for_exit(child);
    (exit, stderr_of(child))
}

/// What an exited `child` wrote to its piped stderr.
fn stderr_of(child: &mut Child) -> String {
    let mut stderr = String::new();
    if let Some(pipe) = child.stderr.as_mut() {
        std::io::Read::read_to_string(pipe, &mut stderr).expect("stderr");
    }
    stderr
}

/// The embedded redis-server on `port`, whose files were in `dir`, is stopped and removed.
fn assert_gone(dir: &std::path::Path, port: u16) {
    assert!(!ping(port), "its redis-server on port {port} still answers");
    assert!(
        !dir.exists(),
        "its server's files remain: {}",
        dir.display()
    );
}

/// Waits for `child` to exit: a guard against a hang (30 s, then it is killed), not a timing.
fn wait_for_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until process `pid` has a listening TCP socket (Linux: its socket inodes in
/// /proc/PID/fd against the listeners of /proc/net/tcp).
fn wait_until_listening(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| {
                fds.flatten()
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .filter_map(|link| {
                        let link = link.to_string_lossy().into_owned();
                        Some(
                            link.strip_prefix("socket:[")?
                                .strip_suffix(']')?
                                .to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let listening = tcp.lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // st 0A is LISTEN; the inode is the tenth field.
            fields.len() > 9 && fields[3] == "0A" && inodes.iter().any(|i| i == fields[9])
        });
        if listening {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
}
