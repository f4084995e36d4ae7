//! `ratelockr replay` as people and scripts use it: the JSON contract of design.md, the sample
//! log's abusive client, `--rules` files, sweeps, previews, and errors that name the flag.

use crate::common;
use crate::helper_cli as cli;

use cli::{json, ratelockr, text};

use std::path::{Path, PathBuf};

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/access.log.gz")
}

#[test]
fn the_sample_logs_abusive_client_is_the_top_denied_key() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("cli-replay");
    let log = sample();
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--json",
        "--log",
        log.to_str().expect("utf-8 path"),
        "--algorithm",
        "token-bucket",
        "--capacity",
        "20",
        "--refill-per-sec",
        "2",
        "--key",
        "ip",
    ]);
    let r = json(&out);
    // design.md's contract, at least these fields.
    for field in ["lines", "parsed", "malformed", "rules"] {
        assert!(r.get(field).is_some(), "no {field}: {r}");
    }
    assert_eq!(r["malformed"], 0);
    assert_eq!(r["lines"], r["parsed"]);
    let rule = &r["rules"][0];
    for field in [
        "rule",
        "algorithm",
        "requests",
        "allowed",
        "denied",
        "keys",
        "keys_denied",
        "top_keys",
    ] {
        assert!(rule.get(field).is_some(), "no rules[0].{field}: {rule}");
    }
    assert_eq!(rule["algorithm"], "token_bucket");
    let top = &rule["top_keys"][0];
    for field in ["key", "requests", "allowed", "denied", "first_denied_ms"] {
        assert!(top.get(field).is_some(), "no top_keys[0].{field}: {top}");
    }
    assert_eq!(top["key"], "203.0.113.66", "{rule}");
    assert!(top["denied"].as_u64() > Some(1000), "{top}");
    // The keys are sorted by denials, most first.
    let denials: Vec<u64> = rule["top_keys"]
        .as_array()
        .expect("array")
        .iter()
        .map(|k| k["denied"].as_u64().expect("a count"))
        .collect();
    assert!(denials.windows(2).all(|w| w[0] >= w[1]), "{denials:?}");
    assert_eq!(r["sweep"], serde_json::json!([]));
}

#[test]
fn rules_files_sweeps_and_previews() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("cli-replay-rules");
    let dir = common::tempdir("cli-replay");
    let log = dir.join("access.log");
    let mut text = String::new();
    for i in 0..30 {
        let ip = if i % 3 == 0 { "::1" } else { "192.0.2.7" };
        text.push_str(&format!(
            "{ip} - - [14/Nov/2023:22:13:{:02} +0000] \"GET /api/v1/x HTTP/1.1\" 200 1 \"-\" \"ua\"\n",
            i / 3
        ));
    }
    std::fs::write(&log, text).expect("write the log");
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        "[[rules]]\nname = \"tb\"\nalgorithm = \"token_bucket\"\ncapacity = 2\nrefill_per_sec = 1.0\n\n[[rules]]\nname = \"fw\"\nalgorithm = \"fixed_window\"\nlimit = 5\nwindow_ms = 10000\n",
    )
    .expect("write the rules");
    let log_arg = log.to_str().expect("utf-8");
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--json",
        "--log",
        log_arg,
        "--rules",
        rules.to_str().expect("utf-8"),
    ]);
    let r = json(&out);
    let names: Vec<&str> = r["rules"]
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x["rule"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["tb", "fw"]);
    // fw: 5 per 10 s window per key; 192.0.2.7 sends 20 in 10 s, ::1 sends 10.
    assert_eq!(r["rules"][1]["denied"], 15 + 5);

    let chart = dir.join("sweep.png");
    let out = ratelockr(&[
        "replay",
        "--redis",
        &url,
        "--prefix",
        &prefix,
        "--json",
        "--log",
        log_arg,
        "--algorithm",
        "fixed-window",
        "--limit",
        "5",
        "--window-ms",
        "10000",
        "--sweep",
        "limit=5,10,20",
        "--sweep",
        "window-ms=1000,10000",
        "--sweep-chart",
        chart.to_str().expect("utf-8"),
    ]);
    let r = json(&out);
    let sweep = r["sweep"].as_array().expect("a sweep");
    assert_eq!(sweep.len(), 6);
    for p in sweep {
        for field in ["params", "denied", "keys_denied"] {
            assert!(p.get(field).is_some(), "no sweep[].{field}: {p}");
        }
    }
    assert!(std::fs::metadata(&chart).expect("the heatmap").len() > 1000);

    let out = ratelockr(&[
        "replay",
        "--log",
        log_arg,
        "--preview",
        "2",
        "--key",
        "ip+path[2]",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("key ::1|v1") && shown.contains("key 192.0.2.7|v1"),
        "{shown}"
    );

    for (args, flag) in [
        (vec!["--key", "cookie"], "--key"),
        (vec!["--path", "("], "--path"),
        // An empty filter would silently replay nothing (or everything).
        (vec!["--method", ""], "--method"),
        (vec!["--path", ""], "--path"),
        (vec!["--sweep", "capacity=1"], "--sweep"),
        (vec!["--refill-per-sec", "0"], "--refill-per-sec"),
    ] {
        let mut all = vec![
            "replay",
            "--redis",
            &url,
            "--log",
            log_arg,
            "--algorithm",
            "token-bucket",
        ];
        all.extend(args);
        if flag == "--sweep" {
            all[6] = "fixed-window";
        }
        let out = ratelockr(&all);
        assert!(!out.status.success(), "{flag} should be refused");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{flag}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn durations_from_nginx_request_time_hold_leases_and_the_report_says_who_had_most_in_flight() {
    let server = common::redis();
    let url = server.url();
    let prefix = common::unique("cli-replay-dur");
    let dir = common::tempdir("cli-replay-dur");
    // nginx's "combined + $request_time": 10.0.0.1 sends three slow requests a second apart
    // (each 2.5 s: up to three in flight), 10.0.0.2 quick ones.
    let line = |ip: &str, second: u32, took: &str| {
        format!("{ip} - - [14/Nov/2023:22:13:{second:02} +0000] \"GET /report HTTP/1.1\" 200 5 \"-\" \"curl/8\" {took}\n")
    };
    let log: String = [
        line("10.0.0.1", 10, "2.500"),
        line("10.0.0.2", 10, "0.010"),
        line("10.0.0.1", 11, "2.500"),
        line("10.0.0.2", 11, "0.010"),
        line("10.0.0.1", 12, "2.500"),
        line("10.0.0.1", 14, "0.100"),
    ]
    .concat();
    let path = dir.join("access.log");
    std::fs::write(&path, log).expect("write the log");
    let path = path.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "--redis",
            url.as_str(),
            "--prefix",
            prefix.as_str(),
            "--log",
            path.as_str(),
            "--algorithm",
            "concurrency",
            "--limit",
            "2",
        ];
        args.extend(extra);
        ratelockr(&args)
    };
    let r = json(&run(&["--duration-field", "request_time", "--json"]));
    assert_eq!(r["malformed"], 0, "{r}");
    let rule = &r["rules"][0];
    // The third slow request finds two in flight; at 14 s the first has ended (12.5 s).
    assert_eq!(
        (rule["allowed"].clone(), rule["denied"].clone()),
        (5.into(), 1.into()),
        "{rule}"
    );
    let in_flight = &rule["in_flight"];
    assert_eq!(in_flight["top_keys"][0]["key"], "10.0.0.1", "{in_flight}");
    assert_eq!(in_flight["top_keys"][0]["peak"], 3, "{in_flight}");
    assert_eq!(in_flight["max"], 3);
    assert_eq!(rule["suggestion"]["value"], 3, "{rule}");
    // Human output says it too.
    let out = run(&["--duration-field", "request_time"]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains("top keys in flight") && shown.contains("peak in flight"),
        "{shown}"
    );
    // Without durations every lease is held its whole lease_ms: the fourth is denied too.
    let r = json(&run(&["--json"]));
    assert_eq!(r["rules"][0]["denied"], 2, "{r}");
    assert!(r["rules"][0].get("in_flight").is_none());
    // A duration that is not one: the error names the line, the field and the value.
    let jsonl = dir.join("log.jsonl");
    std::fs::write(
        &jsonl,
        "{\"ts\":1700000000000,\"ip\":\"a\",\"took\":\"soon\"}\n",
    )
    .expect("write");
    let mut args = vec![
        "replay",
        "--redis",
        url.as_str(),
        "--prefix",
        prefix.as_str(),
    ];
    let jsonl = jsonl.display().to_string();
    args.extend([
        "--log",
        jsonl.as_str(),
        "--algorithm",
        "concurrency",
        "--limit",
        "2",
    ]);
    args.extend(["--duration-field", "took"]);
    let out = ratelockr(&args);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("line 1")
            && err.contains("duration field \"took\"")
            && err.contains("\"soon\""),
        "{err}"
    );
}
