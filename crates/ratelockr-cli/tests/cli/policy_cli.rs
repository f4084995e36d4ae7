//! The `ratelockr` binary with a policies file: `check --policies --policy` (JSON, headers,
//! human output, errors naming the flag, file, line and field) and `stats --policy`.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};
use std::path::Path;

const POLICIES: &str = r#"
[[policies]]
name = "api"
mode = "enforce"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 3
  refill_per_sec = 0.001

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 2
  window_ms = 86400000

  [[policies.overrides]]
  tier = "premium"
  keys = ["premium_*"]
  limits = [ { name = "per-second", algorithm = "token-bucket", capacity = 5, refill_per_sec = 0.001 } ]

[[policies]]
name = "trial"
mode = "shadow"

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 1
  window_ms = 86400000
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the policies file");
    path.display().to_string()
}

#[test]
fn check_json_is_the_policy_decision_and_stats_count_shadow_denials() {
    let server = common::redis();
    let prefix = common::unique("pcli");
    let url = server.url();
    let dir = common::tempdir("pcli");
    let file = write(&dir, "policies.toml", POLICIES);
    let check = |policy: &str, key: &str, extra: &[&str]| {
        let mut args = vec![
            "check",
            "--redis",
            &url,
            "--prefix",
            &prefix,
            "--json",
            "--policies",
            &file,
            "--policy",
            policy,
            "--key",
            key,
        ];
        args.extend(extra);
        json(&ratelockr(&args))
    };
    let now = "1700000000000";
    let first = check("api", "bob", &["--now-ms", now]);
    let keys: Vec<&str> = first
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for field in [
        "allowed",
        "remaining",
        "retry_after_ms",
        "reset_after_ms",
        "fail_open",
        "policy",
        "shadow",
        "would_deny",
        "binding",
        "tier",
        "limits",
    ] {
        assert!(keys.contains(&field), "{field} missing from {first}");
    }
    assert_eq!(first["allowed"], true);
    assert_eq!(first["policy"], "api");
    assert_eq!(
        first["binding"], "daily",
        "1 left of the day against 2 of the bucket"
    );
    assert_eq!(first["remaining"], 1);
    assert_eq!(first["tier"], serde_json::Value::Null);
    assert_eq!(first["limits"].as_array().map(Vec::len), Some(2));
    assert_eq!(first["limits"][0]["name"], "per-second");
    assert_eq!(first["limits"][0]["algorithm"], "token_bucket");
    assert_eq!(first["limits"][0]["remaining"], 2);

    let peek = check("api", "bob", &["--now-ms", now, "--peek"]);
    assert_eq!(peek["remaining"], 1, "a peek consumes nothing: {peek}");
    check("api", "bob", &["--now-ms", now]);
    let denied = check("api", "bob", &["--now-ms", now]);
    assert_eq!(
        (
            &denied["allowed"],
            &denied["would_deny"],
            &denied["binding"]
        ),
        (&false.into(), &true.into(), &"daily".into())
    );
    assert_eq!(denied["limits"][0]["allowed"], true);
    assert_eq!(
        denied["limits"][0]["remaining"], 1,
        "all or nothing: the bucket kept its token"
    );

    let premium = check("api", "premium_1", &["--now-ms", now]);
    assert_eq!(premium["tier"], "premium");
    assert_eq!(premium["limits"].as_array().map(Vec::len), Some(1));
    assert_eq!(premium["limits"][0]["remaining"], 4);

    // Headers: every limit listed, the binding one answering, Retry-After on the 429.
    let answer = check("api", "bob", &["--now-ms", now, "--headers"]);
    assert_eq!(answer["status"], 429);
    let headers: Vec<(String, String)> =
        serde_json::from_value(answer["headers"].clone()).expect("pairs");
    let header = |n: &str| {
        headers
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("RateLimit-Policy").as_deref(),
        Some("\"api.per-second\";q=3;w=3000, \"api.daily\";q=2;w=86400")
    );
    assert!(header("RateLimit")
        .expect("RateLimit")
        .starts_with("\"api.daily\";r=0;t="));
    assert!(header("Retry-After").is_some());

    // Shadow: denied by its limit, admitted all the same, counted as shadow_denied.
    let trial = check("trial", "eve", &[]);
    assert_eq!(
        (&trial["allowed"], &trial["shadow"]),
        (&true.into(), &true.into())
    );
    assert_eq!(trial["would_deny"], false);
    let shadowed = check("trial", "eve", &["--headers"]);
    assert_eq!(
        shadowed["status"], 200,
        "shadow never answers 429: {shadowed}"
    );
    let shadowed = check("trial", "eve", &[]);
    assert_eq!(
        (&shadowed["allowed"], &shadowed["would_deny"]),
        (&true.into(), &true.into())
    );
    let stats = json(&ratelockr(&[
        "stats",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--json",
        "--policy",
        "trial",
        "--policies",
        &file,
    ]));
    let rows = stats.as_array().expect("an array");
    assert_eq!(rows.len(), 30);
    for row in rows {
        let mut fields: Vec<&str> = row
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "allowed",
                "delayed",
                "denied",
                "released",
                "second",
                "settled",
                "shadow_denied"
            ]
        );
    }
    let sum = |field: &str| {
        rows.iter()
            .map(|r| r[field].as_u64().expect("n"))
            .sum::<u64>()
    };
    assert_eq!(
        (sum("allowed"), sum("denied"), sum("shadow_denied")),
        (1, 0, 2)
    );
    assert!(rows[29]["second"].as_u64() > rows[0]["second"].as_u64());

    let human = ratelockr(&[
        "check",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--policies",
        &file,
        "--policy",
        "api",
        "--key",
        "bob",
        "--now-ms",
        now,
    ]);
    let out = text(&human.stdout);
    assert!(human.status.success(), "{}", text(&human.stderr));
    assert!(
        out.contains("denied") && out.contains("binding daily"),
        "{out}"
    );
    assert!(
        out.contains("limit per-second") && out.contains("admits"),
        "{out}"
    );
    assert!(
        out.contains("limit daily") && out.contains("denies"),
        "{out}"
    );
    assert!(out.contains("tier "), "{out}");
}

#[test]
fn errors_name_the_flag_the_file_the_line_and_the_field() {
    let dir = common::tempdir("pcli-err");
    let good = write(&dir, "good.toml", POLICIES);
    let bad = write(
        &dir,
        "bad.toml",
        &POLICIES.replace("capacity = 3", "capacity = 0"),
    );
    let url = common::dead_url();
    let run = |args: &[&str]| {
        let mut all = vec!["check", "--redis", &url, "--key", "k"];
        all.extend(args);
        let out = ratelockr(&all);
        assert!(!out.status.success(), "{args:?} should fail");
        text(&out.stderr)
    };
    let err = run(&["--policies", &bad, "--policy", "api"]);
    assert!(
        err.contains("bad.toml") && err.contains("line 9") && err.contains("capacity"),
        "{err}"
    );
    let err = run(&["--policies", &good, "--policy", "nope"]);
    assert!(err.contains("--policy") && err.contains("nope"), "{err}");
    let err = run(&["--policies", &good, "--policy", "api", "--cost", "3"]);
    assert!(err.contains("--cost") && err.contains("daily"), "{err}");
    let err = run(&["--policies", &good]);
    assert!(err.contains("--policy"), "{err}");
    let missing = dir.join("missing.toml").display().to_string();
    let err = run(&["--policies", &missing, "--policy", "api"]);
    assert!(err.contains("missing.toml"), "{err}");
}

#[test]
fn simulate_and_replay_take_the_same_file() {
    let server = common::redis();
    let url = server.url();
    let dir = common::tempdir("pcli-runs");
    let file = write(&dir, "policies.toml", POLICIES);
    let out = ratelockr(&[
        "simulate",
        "--redis",
        &url,
        "--json",
        "--policies",
        &file,
        "--policy",
        "api",
        "--requests",
        "40",
        "--rps",
        "0",
        "--servers",
        "1",
        "--keys",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = json(&out);
    let api = &report["algorithms"][0];
    assert_eq!(
        (api["rule"].as_str(), api["algorithm"].as_str()),
        (Some("api"), Some("policy"))
    );
    // daily 2 per key binds: the bucket of 3 would admit one more.
    assert_eq!(api["allowed"], 4);
    assert_eq!(api["denied_by"]["daily"], 36);
    let log = dir.join("log.jsonl");
    let lines: String = (0..6)
        .map(|i| {
            format!(
                "{{\"ts\":{},\"ip\":\"premium_{}\"}}\n",
                1_700_000_000_000u64 + i,
                i % 2
            )
        })
        .collect();
    std::fs::write(&log, lines).expect("write the log");
    let log = log.display().to_string();
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--json",
        "--log",
        &log,
        "--policies",
        &file,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = json(&out);
    let names: Vec<&str> = report["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["rule"].as_str())
        .collect();
    assert_eq!(names, ["api", "trial"]);
    assert_eq!(report["rules"][0]["policy"]["tier_keys"]["premium"], 2);
    assert_eq!(report["rules"][1]["policy"]["shadow_denied"], 4);
    assert_eq!(report["changes"][0]["rule"], "trial");
    // Policies that key requests differently cannot share one replay without --key.
    let keyed = write(
        &dir,
        "keyed.toml",
        &POLICIES
            .replacen("mode = \"enforce\"", "mode = \"enforce\"\nkey = \"ip\"", 1)
            .replacen(
                "mode = \"shadow\"",
                "mode = \"shadow\"\nkey = \"header:x-api-key\"",
                1,
            ),
    );
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--log",
        &log,
        "--policies",
        &keyed,
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("key requests differently (ip and header:x-api-key)"),
        "{err}"
    );
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--log",
        &log,
        "--policies",
        &keyed,
        "--key",
        "ip",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Delay instead of deny: `check` says the delay (human and JSON) and denies past max_delay.
#[test]
fn check_prints_the_delay_of_a_delayed_admission() {
    let server = common::redis();
    let prefix = common::unique("pcli-delay");
    let url = server.url();
    let dir = common::tempdir("pcli-delay");
    let file = write(
        &dir,
        "policies.toml",
        r#"
[[policies]]
name = "smooth"
max_delay_ms = 150
  [[policies.limits]]
  name = "per-second"
  algorithm = "gcra"
  limit = 10
  window_ms = 1000
  burst = 1
"#,
    );
    // An explicit clock of this very second, so that its counters are in `stats`' window.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
        .to_string();
    let check = |json_out: bool| {
        let mut args = vec![
            "check",
            "--redis",
            &url,
            "--prefix",
            &prefix,
            "--policies",
            &file,
            "--policy",
            "smooth",
            "--key",
            "k",
            "--now-ms",
            &now,
        ];
        if json_out {
            args.push("--json");
        }
        ratelockr(&args)
    };
    let first = json(&check(true));
    assert!(
        first.get("delay_ms").is_none(),
        "no delay, no field: {first}"
    );
    let human = check(false);
    assert!(human.status.success(), "{}", text(&human.stderr));
    let out = text(&human.stdout);
    assert!(
        out.starts_with("delayed") && out.contains("delay_ms 100"),
        "{out}"
    );
    let second = json(&check(true));
    assert_eq!(
        (&second["allowed"], &second["delay_ms"]),
        (&serde_json::json!(false), &serde_json::Value::Null),
        "200 ms is past max_delay: {second}"
    );
    assert_eq!(second["retry_after_ms"], 50, "{second}");
    // Telemetry: one allowed, one delayed, one denied (in the second of --now-ms).
    let stats = ratelockr(&[
        "stats", "--redis", &url, "--prefix", &prefix, "--policy", "smooth", "--json",
    ]);
    assert!(stats.status.success(), "{}", text(&stats.stderr));
    let rows = json(&stats);
    let sum = |field: &str| {
        rows.as_array()
            .expect("rows")
            .iter()
            .map(|r| r[field].as_u64().expect("n"))
            .sum::<u64>()
    };
    assert_eq!((sum("allowed"), sum("delayed"), sum("denied")), (1, 1, 1));
}
