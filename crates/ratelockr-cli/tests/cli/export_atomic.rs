//! No export ever loses a file: a full disk mid-write leaves the old file exactly as it was and
//! nothing beside it, and the CLI replaces an existing file only with `--force`.
//!
//! The full disk is a real one: a small tmpfs mounted for the test (which needs root, as CI and
//! `make test` on a fresh machine have; elsewhere those two tests say they were skipped and the
//! unit tests of `atomic_file` still cover the rename).

use crate::common;
use crate::helper_cli as cli;

use crate::common::{limiter, redis};
use cli::{ratelockr, text};
use ratelockr_lab::export::{render_run_chart, CsvSink, TimelineBuilder};
use ratelockr_lab::sim::{self, Length, Pattern, Record, RecordSink, SimSpec, Workload};
use std::path::Path;
use std::process::Command;
use tokio_util::sync::CancellationToken;

/// A tmpfs of `kib` KiB, unmounted on drop.
struct SmallDisk(common::TempDir);

impl SmallDisk {
    fn mount(name: &str, kib: u32) -> Option<SmallDisk> {
        let dir = common::tempdir(name);
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&*dir)
            .output()
            .is_ok_and(|o| o.status.success());
        if !mounted {
            eprintln!(
                "skipped: cannot mount a tmpfs at {} (not root)",
                dir.display()
            );
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Unmounted first; the directory goes with the field, after this.
        let _ = Command::new("umount").arg(&*self.0).status();
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn record(seq: u64) -> Record {
    Record {
        seq,
        sent_at_ms: seq,
        server: 0,
        rule: "a-rule-with-a-long-name".into(),
        algorithm: ratelockr::rule::AlgorithmKind::TokenBucket.into(),
        key: format!("client-{seq}").into(),
        allowed: seq % 3 != 0,
        remaining: 7,
        retry_after_ms: 0,
        latency_us: 120,
        fail_open: false,
        reset_after_ms: 100,
        attempt: 0,
        offset_ms: 0,
        ..Record::default()
    }
}

#[test]
fn a_csv_that_fills_the_disk_leaves_the_old_file_as_it_was() {
    let Some(disk) = SmallDisk::mount("full-csv", 64) else {
        return;
    };
    let dest = disk.0.join("run.csv");
    let old = b"seq,sent_at_ms\nthe user's earlier export\n".repeat(40);
    std::fs::write(&dest, &old).expect("old file");

    let mut sink = CsvSink::create(&dest).expect("the folder is writable");
    let mut failed = None;
    for seq in 0..200_000 {
        if let Err(e) = sink.write(&record(seq)) {
            failed = Some(e);
            break;
        }
    }
    let ended = sink.flush();
    let err = failed
        .map(Err)
        .unwrap_or(ended)
        .expect_err("the disk is full");
    assert!(
        err.to_string().contains("run.csv"),
        "the error names the file: {err}"
    );
    // A second flush does not put a half file in place either.
    assert!(sink.flush().is_err());
    drop(sink);
    assert_eq!(std::fs::read(&dest).expect("read"), old, "byte for byte");
    assert_eq!(names(&disk.0), ["run.csv"], "no partial file beside it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_that_fills_the_disk_leaves_the_old_file_as_it_was() {
    let Some(disk) = SmallDisk::mount("full-chart", 16) else {
        return;
    };
    let server = redis();
    let limiter = limiter(&server, "full-chart");
    let workload = Workload {
        pattern: Pattern::Burst {
            size: 20,
            every_ms: 200,
        },
        length: Length::DurationMs(1_000),
        servers: 1,
        ..Workload::default()
    };
    let spec = SimSpec::compare("", 10, 1000, workload, false).expect("valid");
    let observer = TimelineBuilder::new(&spec, 0).observer();
    let report = sim::run(&limiter, &spec, None, &observer, CancellationToken::new())
        .await
        .expect("runs");
    let timeline = observer.finish(report.duration_ms);
    for name in ["chart.png", "chart.svg"] {
        let dest = disk.0.join(name);
        std::fs::write(&dest, b"the user's earlier chart").expect("old file");
        let err = render_run_chart(&timeline, &report.workload, &dest).expect_err("no room");
        assert!(err.to_string().contains(name), "{err}");
        assert_eq!(
            std::fs::read(&dest).expect("read"),
            b"the user's earlier chart"
        );
        assert!(
            !names(&disk.0).iter().any(|n| n.contains(".tmp")),
            "no partial file: {:?}",
            names(&disk.0)
        );
    }
    // With room, the same chart replaces the old file whole.
    let roomy = common::tempdir("chart-room");
    let dest = roomy.join("chart.png");
    std::fs::write(&dest, b"old").expect("old file");
    render_run_chart(&timeline, &report.workload, &dest).expect("drawn");
    assert_eq!(&std::fs::read(&dest).expect("read")[..4], b"\x89PNG");
    assert_eq!(names(&roomy), ["chart.png"]);
}

/// `ratelockr simulate` of `requests` against a fixed window of 5 a second, and `extra`.
fn simulate(url: &str, prefix: &str, requests: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "simulate",
        "--redis",
        url,
        "--prefix",
        prefix,
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "1000",
        "--requests",
        requests,
        "--rps",
        "0",
    ];
    args.extend(extra);
    ratelockr(&args)
}

#[test]
fn the_cli_replaces_an_existing_export_only_with_force() {
    let server = redis();
    let url = server.url();
    let prefix = common::unique("cli-force");
    let dir = common::tempdir("cli-force");
    let csv = dir.join("run.csv");
    let chart = dir.join("run.png");
    let csv_arg = csv.display().to_string();
    let chart_arg = chart.display().to_string();
    let run = |extra: &[&str]| simulate(&url, &prefix, "20", extra);

    for (flag, path, arg) in [("--csv", &csv, &csv_arg), ("--chart", &chart, &chart_arg)] {
        std::fs::write(path, b"keep me").expect("old file");
        let out = run(&[flag, arg]);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "refused: {stderr}");
        assert!(
            stderr.contains("--force") && stderr.contains(&path.display().to_string()),
            "names the file and the flag: {stderr}"
        );
        assert_eq!(std::fs::read(path).expect("read"), b"keep me");
    }
    assert_eq!(names(&dir), ["run.csv", "run.png"], "nothing else written");

    let out = run(&["--csv", &csv_arg, "--chart", &chart_arg, "--force"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&csv).expect("read");
    assert!(written.starts_with("seq,sent_at_ms,"), "{written}");
    assert_eq!(written.lines().count(), 21, "the header and 20 rows");
    assert_eq!(&std::fs::read(&chart).expect("read")[..4], b"\x89PNG");
    assert_eq!(names(&dir), ["run.csv", "run.png"]);

    // A new file needs no --force.
    let fresh = dir.join("fresh.csv");
    let out = run(&["--csv", &fresh.display().to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fresh.is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_refuses_to_replace_its_outputs_without_force() {
    let dir = common::tempdir("replay-force");
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/access.log.gz");
    let log_arg = log.display().to_string();
    let csv = dir.join("decisions.csv");
    std::fs::write(&csv, b"keep me").expect("old file");
    let out = ratelockr(&[
        "replay",
        "--redis",
        "redis://127.0.0.1:1",
        "--log",
        &log_arg,
        "--algorithm",
        "token-bucket",
        "--capacity",
        "20",
        "--refill-per-sec",
        "2",
        "--csv",
        &csv.display().to_string(),
    ]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read(&csv).expect("read"), b"keep me");
    assert_eq!(names(&dir), ["decisions.csv"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a user set up around an export survives `--force`: a link stays a link (its target is
/// replaced), the file keeps its permissions; and a place no file can be made is named by its
/// cause, never by a temporary file's name.
#[cfg(target_os = "linux")]
#[test]
fn the_cli_writes_through_a_link_keeps_the_mode_and_names_the_real_cause() {
    use std::os::unix::fs::PermissionsExt;
    let server = redis();
    let url = server.url();
    let prefix = common::unique("cli-link");
    let dir = common::tempdir("cli-link");
    let simulate = |csv: &str| simulate(&url, &prefix, "10", &["--csv", csv, "--force"]);
    std::fs::create_dir(dir.join("shared")).expect("dir");
    let real = dir.join("shared/run.csv");
    std::fs::write(&real, b"old").expect("old");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let link = dir.join("run.csv");
    std::os::unix::fs::symlink("shared/run.csv", &link).expect("link");

    let out = simulate(&link.display().to_string());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let meta = std::fs::symlink_metadata(&link).expect("link");
    assert!(meta.file_type().is_symlink(), "the link is still a link");
    let written = std::fs::read_to_string(&real).expect("read");
    assert!(written.starts_with("seq,sent_at_ms,"), "{written}");
    let mode = std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(names(&dir.join("shared")), ["run.csv"]);

    let out = simulate("/proc/x.csv");
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("/proc/x.csv") && stderr.contains("proc file system"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("x.csv."),
        "no temporary file's name: {stderr}"
    );

    // A read-only file system (a tmpfs mounted so; needs root).
    let Some(ro) = SmallDisk::mount("ro", 64) else {
        return;
    };
    let remounted = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&*ro.0)
        .status()
        .is_ok_and(|s| s.success());
    assert!(remounted, "remount read-only");
    let dest = ro.0.join("run.csv");
    let out = simulate(&dest.display().to_string());
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("read-only file system"), "{stderr}");
    assert!(
        !stderr.contains("run.csv."),
        "no temporary file's name: {stderr}"
    );
}
