//! `ratelockr check` under a concurrency limit prints the lease it took (human and JSON), the
//! lease outlives the process, and `ratelockr release` gives it back by id (or `--renew`s it),
//! for a rule given as flags and for a policy from a file; mistakes name their flag.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};

const POLICIES: &str = r#"
[[policies]]
name = "upload"
  [[policies.limits]]
  name = "in-flight"
  algorithm = "concurrency"
  limit = 1
  lease_ms = 60000
  [[policies.limits]]
  name = "per-minute"
  algorithm = "fixed-window"
  limit = 100
  window_ms = 60000
"#;

#[test]
fn check_takes_a_lease_that_outlives_it_and_release_gives_it_back() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("lcli");
    let rule = [
        "--algorithm",
        "concurrency",
        "--limit",
        "1",
        "--rule",
        "uploads",
    ];
    let global = ["--redis", url.as_str(), "--prefix", prefix.as_str()];
    let run = |command: &str, extra: &[&str]| {
        let mut args: Vec<&str> = global.to_vec();
        args.push(command);
        args.extend(rule);
        args.extend(["--key", "alice"]);
        args.extend(extra);
        ratelockr(&args)
    };
    let out = run("check", &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first = json(&out);
    let id = first["lease"].as_str().expect("a lease id").to_string();
    // The process has exited; its lease is still held.
    let out = run("check", &[]);
    let line = text(&out.stdout);
    assert!(line.starts_with("denied"), "{line}");
    // Human output names the lease and how to give it back.
    let renew = run("release", &["--lease", &id, "--renew"]);
    assert_eq!(
        text(&renew.stdout).split_whitespace().next(),
        Some("renewed"),
        "{}",
        text(&renew.stderr)
    );
    let out = run("release", &["--lease", &id, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&out)["released"], true);
    let out = run("release", &["--lease", &id]);
    assert!(
        text(&out.stdout).starts_with("nothing"),
        "{}",
        text(&out.stdout)
    );
    let out = run("check", &[]);
    let line = text(&out.stdout);
    assert!(
        line.starts_with("allowed") && line.contains(" lease "),
        "{line}"
    );
    assert!(
        line.contains("ratelockr release"),
        "it says how to give it back: {line}"
    );

    // A flag a concurrency rule does not take is refused by name.
    let out = run("check", &["--window-ms", "1000"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--window-ms does not apply"),
        "{}",
        text(&out.stderr)
    );
    // An id may start with '-' (one in 64 do): it is the flag's value, not another flag.
    let out = run("release", &["--lease", "-Uabc"]);
    assert!(
        text(&out.stdout).starts_with("nothing"),
        "{}",
        text(&out.stderr)
    );
    let out = run("release", &["--lease", "a b"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("invalid --lease"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_policys_lease_is_printed_and_released_by_the_policy_and_key() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("lcli-p");
    let dir = common::tempdir("lcli-p");
    let file = dir.join("policies.toml");
    std::fs::write(&file, POLICIES).expect("write");
    let file = file.display().to_string();
    let global = ["--redis", url.as_str(), "--prefix", prefix.as_str()];
    let run = |command: &str, extra: &[&str]| {
        let mut args: Vec<&str> = global.to_vec();
        args.extend([
            command,
            "--policies",
            file.as_str(),
            "--policy",
            "upload",
            "--key",
            "bo",
        ]);
        args.extend(extra);
        ratelockr(&args)
    };
    let out = run("check", &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let decision = json(&out);
    assert_eq!(decision["policy"], "upload");
    let id = decision["lease"].as_str().expect("a lease id").to_string();
    let headers = run("check", &["--headers"]);
    let shown = text(&headers.stdout);
    assert!(shown.contains("429"), "the slot is held: {shown}");
    assert!(shown.contains("qu=\"concurrent-requests\""), "{shown}");
    let out = run("release", &["--lease", &id]);
    assert!(
        text(&out.stdout).starts_with("released"),
        "{}",
        text(&out.stdout)
    );
    let out = run("check", &[]);
    assert!(
        text(&out.stdout).contains(" lease "),
        "{}",
        text(&out.stdout)
    );
    // A policy without a concurrency limit holds no lease.
    let plain = dir.join("plain.toml");
    std::fs::write(
        &plain,
        POLICIES
            .replace("concurrency", "fixed-window")
            .replace("lease_ms = 60000", "window_ms = 1000"),
    )
    .expect("write");
    let plain = plain.display().to_string();
    let mut args: Vec<&str> = global.to_vec();
    args.extend([
        "release",
        "--policies",
        plain.as_str(),
        "--policy",
        "upload",
        "--key",
        "bo",
        "--lease",
        "abc",
    ]);
    let out = ratelockr(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no concurrency limit"),
        "{}",
        text(&out.stderr)
    );
}
