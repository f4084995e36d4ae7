//! Tests of policy files: every shape that loads, and every error naming its file, line or
//! JSON path, and field.

use super::*;
use crate::rule::Algorithm;

const API_TOML: &str = r#"
[[policies]]
name = "api"
key = "header:x-api-key"
mode = "shadow"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 10

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed_window"
  limit = 2000
  window_ms = 86400000

  [[policies.overrides]]
  tier = "premium"
  keys = ["premium_*", "alice"]
  limits = [ { name = "per-second", algorithm = "token-bucket", capacity = 100, refill_per_sec = 100 } ]
"#;

const API_JSON: &str = r#"{"policies": [{
    "name": "api", "key": "header:x-api-key", "mode": "shadow",
    "limits": [
        {"name": "per-second", "algorithm": "token-bucket", "capacity": 10, "refill_per_sec": 10},
        {"name": "daily", "algorithm": "fixed-window", "limit": 2000, "window_ms": 86400000}
    ],
    "overrides": [{"tier": "premium", "keys": ["premium_*", "alice"], "limits": [
        {"name": "per-second", "algorithm": "token_bucket", "capacity": 100, "refill_per_sec": 100}
    ]}]
}]}"#;

fn toml_err(text: &str) -> Invalid {
    parse_policies(text, Format::Toml).expect_err("invalid")
}

fn json_err(text: &str) -> Invalid {
    parse_policies(text, Format::Json).expect_err("invalid")
}

#[test]
fn toml_and_json_hold_the_same_policy() {
    let toml = parse_policies(API_TOML, Format::Toml).expect("valid TOML");
    let json = parse_policies(API_JSON, Format::Json).expect("valid JSON");
    assert_eq!(toml, json);
    let api = &toml[0];
    assert_eq!(
        (api.name(), api.key(), api.mode()),
        ("api", Some("header:x-api-key"), Mode::Shadow)
    );
    assert_eq!(api.limits().len(), 2);
    assert_eq!(
        *api.limits()[1].algorithm(),
        Algorithm::FixedWindow {
            limit: 2000,
            window_ms: 86_400_000
        }
    );
    assert_eq!(api.limits_for("alice").0, Some("premium"));
    // What serializes loads back.
    let out = serde_json::json!({ "policies": toml });
    let again = parse_policies(&out.to_string(), Format::Json).expect("round trip");
    assert_eq!(again, json);
    let one: Policy =
        serde_json::from_value(serde_json::to_value(api).expect("json")).expect("deserializes");
    assert_eq!(&one, api);
}

#[test]
fn todays_rules_files_load_as_policies_of_one_limit() {
    let list = r#"[{"name":"api","algorithm":"token_bucket","capacity":10,"refill_per_sec":2.5},
                   {"name":"login","algorithm":"gcra","limit":5,"window_ms":60000,"burst":5}]"#;
    let object = format!(r#"{{"rules": {list}}}"#);
    let toml = r#"
        [[rules]]
        name = "api"
        algorithm = "token_bucket"
        capacity = 10
        refill_per_sec = 2.5

        [[rules]]
        name = "login"
        algorithm = "gcra"
        limit = 5
        window_ms = 60000
    "#;
    let a = parse_policies(list, Format::Json).expect("list");
    assert_eq!(a.len(), 2);
    assert_eq!(
        a[0],
        Policy::from_rule(&crate::Rule::token_bucket("api", 10, 2.5).expect("valid"))
    );
    assert_eq!(a[1].limits()[0].name(), "login");
    assert_eq!(parse_policies(&object, Format::Json).expect("object"), a);
    // burst defaults to the limit
    assert_eq!(parse_policies(toml, Format::Toml).expect("toml"), a);
    // policies and rules side by side
    let both = format!(
        r#"{{"rules": {list}, "policies": [{{"name": "p", "limits": [{{"name": "l", "algorithm": "fixed-window", "limit": 1, "window_ms": 10}}]}}]}}"#
    );
    assert_eq!(parse_policies(&both, Format::Json).expect("both").len(), 3);
}

#[test]
fn toml_errors_name_the_line_the_path_and_the_field() {
    let cases: &[(&str, &str, usize, &str, &str)] = &[
        // (what to replace, with what, line, path, words in the message)
        (
            "capacity = 100,",
            "capacity = 0,",
            22,
            "policies[0].overrides[0].limits[0].capacity",
            "capacity",
        ),
        (
            "capacity = 10\n",
            "capacity = -1\n",
            10,
            "policies[0].limits[0].capacity",
            "whole number",
        ),
        (
            "refill_per_sec = 10\n",
            "refill_per_sec = \"fast\"\n",
            11,
            "policies[0].limits[0].refill_per_sec",
            "number",
        ),
        (
            "algorithm = \"fixed_window\"",
            "algorithm = \"leaky\"",
            15,
            "policies[0].limits[1].algorithm",
            "unknown algorithm",
        ),
        (
            "limit = 2000",
            "limit = 2000\n  burst = 3",
            17,
            "policies[0].limits[1].burst",
            "not a parameter",
        ),
        (
            "window_ms = 86400000",
            "windw_ms = 86400000",
            17,
            "policies[0].limits[1].windw_ms",
            "unknown field",
        ),
        (
            "name = \"daily\"",
            "name = \"per-second\"",
            14,
            "policies[0].limits[1].name",
            "twice",
        ),
        (
            "name = \"daily\"",
            "name = \"da:ly\"",
            14,
            "policies[0].limits[1].name",
            "limit name",
        ),
        (
            "mode = \"shadow\"",
            "mode = \"dry-run\"",
            5,
            "policies[0].mode",
            "enforce",
        ),
        (
            "name = \"api\"",
            "name = \"a{b}\"",
            3,
            "policies[0].name",
            "invalid name",
        ),
        (
            "tier = \"premium\"",
            "tier = \"\"",
            20,
            "policies[0].overrides[0].tier",
            "invalid tier",
        ),
        (
            "keys = [\"premium_*\", \"alice\"]",
            "keys = [\"premium_*\", 7]",
            21,
            "policies[0].overrides[0].keys[1]",
            "string",
        ),
        (
            "keys = [\"premium_*\", \"alice\"]",
            "keys = []",
            21,
            "policies[0].overrides[0].keys",
            "no key",
        ),
    ];
    for &(from, to, line, at, words) in cases {
        assert!(API_TOML.contains(from), "{from}");
        let err = toml_err(&API_TOML.replacen(from, to, 1));
        assert_eq!((err.line, err.at.as_str()), (Some(line), at), "{to}: {err}");
        assert!(err.message.contains(words), "{to}: {err}");
        assert_eq!(
            err.field(),
            at.rsplit('.')
                .next()
                .map(|s| s.split('[').next().unwrap_or(s))
        );
    }
    // Missing fields point at their table.
    let err = toml_err(&API_TOML.replacen("  capacity = 10\n", "", 1));
    assert_eq!(
        (err.line, err.at.as_str()),
        (Some(7), "policies[0].limits[0].capacity"),
        "{err}"
    );
    assert!(err.message.contains("required"), "{err}");
    // Syntax errors have a line and no path.
    let err = toml_err("[[policies]]\nname = \"api\nlimits = 3\n");
    assert_eq!((err.line, err.at.as_str()), (Some(2), ""), "{err}");
    assert!(err.message.starts_with("not TOML"), "{err}");
}

#[test]
fn json_errors_name_the_path_and_the_field() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "\"capacity\": 10,",
            "\"capacity\": 10.5,",
            "policies[0].limits[0].capacity",
            "whole number",
        ),
        (
            "\"capacity\": 100,",
            "\"capacity\": 2000000000,",
            "policies[0].overrides[0].limits[0].capacity",
            "capacity",
        ),
        (
            "\"window_ms\": 86400000",
            "\"window_ms\": 0",
            "policies[0].limits[1].window_ms",
            "window_ms",
        ),
        (
            "\"algorithm\": \"fixed-window\"",
            "\"algorithm\": 3",
            "policies[0].limits[1].algorithm",
            "string",
        ),
        (
            "\"name\": \"api\"",
            "\"nom\": \"api\"",
            "policies[0].nom",
            "unknown field",
        ),
        (
            "\"keys\": [\"premium_*\", \"alice\"], ",
            "",
            "policies[0].overrides[0].keys",
            "required",
        ),
    ];
    for &(from, to, at, words) in cases {
        assert!(API_JSON.contains(from), "{from}");
        let err = json_err(&API_JSON.replacen(from, to, 1));
        assert_eq!((err.line, err.at.as_str()), (None, at), "{to}: {err}");
        assert!(err.message.contains(words), "{to}: {err}");
    }
    let nine: Vec<String> = (0..9)
        .map(|i| {
            format!(r#"{{"name":"l{i}","algorithm":"fixed-window","limit":1,"window_ms":10}}"#)
        })
        .collect();
    let err = json_err(&format!(
        r#"{{"policies":[{{"name":"p","limits":[{}]}}]}}"#,
        nine.join(",")
    ));
    assert_eq!(err.at, "policies[0].limits");
    assert!(err.message.contains("at most 8"), "{err}");
    let err = json_err(r#"{"policies":[{"name":"p","limits":[]}]}"#);
    assert_eq!(err.at, "policies[0].limits");
    let err = json_err(r#"{"policies":[{"name":"p"}]}"#);
    assert_eq!(
        (err.at.as_str(), err.field()),
        ("policies[0].limits", Some("limits"))
    );
    let err = json_err(r#"{"policies":[]}"#);
    assert!(err.message.contains("no policy"), "{err}");
    let err = json_err("[]");
    assert!(err.message.contains("no policy"), "{err}");
    let err = json_err(r#"{"policy":[]}"#);
    assert_eq!(err.at, "policy");
    let err = json_err(
        r#"[{"name":"a","algorithm":"fixed_window","limit":1,"window_ms":10},
                            {"name":"a","algorithm":"fixed_window","limit":2,"window_ms":10}]"#,
    );
    assert_eq!(err.at, "[1].name");
    let err = json_err(
        r#"{"policies":[{"name":"a","limits":[{"name":"x","algorithm":"gcra","limit":1,"window_ms":10}]}],
                           "rules":[{"name":"a","algorithm":"fixed_window","limit":2,"window_ms":10}]}"#,
    );
    assert_eq!(err.at, "rules[0].name");
    let err = json_err(r#"{"policies":[{"name":"a","limits":"none"}]}"#);
    assert!(err.message.contains("expected a list"), "{err}");
    let err = json_err(r#"{"policies":[7]}"#);
    assert_eq!(err.at, "policies[0]");
    let err = json_err("{\n\"policies\": [,]}");
    assert_eq!((err.line, err.at.as_str()), (Some(2), ""), "{err}");
    assert!(err.message.starts_with("not JSON"), "{err}");
    let err = json_err("3");
    assert!(err.message.contains("expected"), "{err}");
}

#[test]
fn key_expressions_are_checked_by_the_front_that_evaluates_them() {
    let check = |key: &str| {
        if key.starts_with("header:") {
            Ok(())
        } else {
            Err(format!("invalid --key term {key:?}"))
        }
    };
    assert!(parse_policies_with(API_TOML, Format::Toml, Some(&check)).is_ok());
    let err = parse_policies_with(
        &API_TOML.replacen("header:x-api-key", "hedder", 1),
        Format::Toml,
        Some(&check),
    )
    .expect_err("bad key");
    assert_eq!((err.line, err.at.as_str()), (Some(4), "policies[0].key"));
    let err = toml_err(&API_TOML.replacen("\"header:x-api-key\"", "\"\"", 1));
    assert_eq!(err.at, "policies[0].key");
}

#[test]
fn files_name_themselves_in_errors() {
    let dir = std::env::temp_dir().join(format!("ratelockr-policy-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("policies.toml");
    std::fs::write(
        &path,
        API_TOML.replacen("capacity = 10\n", "capacity = 0\n", 1),
    )
    .expect("write");
    let err = load_policies_file(&path).expect_err("invalid").to_string();
    assert!(
        err.contains("policies.toml")
            && err.contains("line 10")
            && err.contains("policies[0].limits[0].capacity"),
        "{err}"
    );
    std::fs::write(&path, API_TOML).expect("write");
    assert_eq!(load_policies_file(&path).expect("valid").len(), 1);
    let json = dir.join("policies.json");
    std::fs::write(&json, API_JSON).expect("write");
    assert_eq!(load_policies_file(&json).expect("valid").len(), 1);
    let err = load_policies_file(&dir.join("missing.json"))
        .expect_err("missing")
        .to_string();
    assert!(err.contains("missing.json"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
