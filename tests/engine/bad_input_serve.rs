//! Bad input to the decision endpoint (`POST /api/check` of `ratelockr serve`): one case (at
//! least) per field of a request, and per parameter of every algorithm's inline rule, each
//! answered with its HTTP status and the JSON error shape `{"error": {"code", "message",
//! "field"}}` naming the field. Never a decision: a caller's own bad input is not admitted.

use crate::common;

use crate::common::{http, limiter};
use ratelockr::api::DecisionApi;
use ratelockr::metrics::MetricsServer;
use ratelockr::policy::PolicyWatch;
use ratelockr::{AlgorithmKind, Metrics, Rule};
use serde_json::{json, Value};
use std::net::SocketAddr;

const POLICIES: &str = r#"
[[policies]]
name = "api"
mode = "enforce"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 1
"#;

async fn start(server: &ratelockr::EmbeddedRedis) -> SocketAddr {
    let metrics = Metrics::new();
    let limiter = limiter(server, "bad-serve").with_observer(std::sync::Arc::new(metrics.clone()));
    let rules = vec![Rule::token_bucket("login", 2, 1.0).expect("valid")];
    let dir = common::tempdir("bad-serve");
    let path = dir.join("policies.toml");
    std::fs::write(&path, POLICIES).expect("write policies");
    let watch = PolicyWatch::load(&path).expect("policies load");
    let bound = MetricsServer::bind(metrics, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = bound.local_addr().expect("addr");
    let api = DecisionApi::new(limiter, rules).with_policies(watch);
    tokio::spawn(bound.run_with(api.router(), std::future::pending()));
    addr
}

/// A valid inline rule of `kind`, as JSON.
fn inline(kind: AlgorithmKind) -> serde_json::Map<String, Value> {
    let mut rule = json!({"name": "x", "algorithm": kind.as_str()});
    for parameter in kind.parameters() {
        let value = match *parameter {
            "refill_per_sec" => json!(1.5),
            "window_ms" => json!(1000),
            "period" => json!("day"),
            "time_zone" => json!("Europe/Berlin"),
            "week_start" => json!("sunday"),
            _ => json!(5),
        };
        rule[parameter] = value;
    }
    rule.as_object().expect("an object").clone()
}

/// One bad request: its body, and the status, code and field the answer must carry.
struct Case {
    body: String,
    status: u16,
    code: &'static str,
    field: Option<String>,
}

fn case(body: impl Into<String>, status: u16, code: &'static str, field: &str) -> Case {
    Case {
        body: body.into(),
        status,
        code,
        field: Some(field.to_string()),
    }
}

fn rule_case(rule: &serde_json::Map<String, Value>, field: &str) -> Case {
    let body = json!({"rule": rule, "key": "k"}).to_string();
    case(body, 400, "invalid_rule", field)
}

/// Every parameter of every algorithm: zero (or below its range), not a number, missing, and
/// another algorithm's parameter beside it.
fn inline_rule_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for kind in AlgorithmKind::ALL {
        let valid = inline(kind);
        for parameter in kind.parameters() {
            let field = format!("rule.{parameter}");
            let word = match *parameter {
                "period" => Some("fortnight"),
                "time_zone" => Some("Mars/Olympus_Mons"),
                "week_start" => Some("friday"),
                _ => None,
            };
            let bads = match word {
                Some(word) => vec![json!(word), json!(5), json!(null)],
                None => vec![json!(0), json!(-1), json!("5"), json!(null), json!(1e300)],
            };
            for bad in bads {
                let mut rule = valid.clone();
                rule.insert(parameter.to_string(), bad);
                cases.push(rule_case(&rule, &field));
            }
            // Left out, a parameter is missing; but a lease's life has a default (a minute), a
            // calendar's zone (UTC) and week start (Monday) too.
            if !matches!(*parameter, "lease_ms" | "time_zone" | "week_start") {
                let mut rule = valid.clone();
                rule.remove(*parameter);
                cases.push(rule_case(&rule, &field));
            }
        }
        let foreign = if kind == AlgorithmKind::TokenBucket {
            "limit"
        } else {
            "capacity"
        };
        let mut rule = valid.clone();
        rule.insert(foreign.into(), json!(3));
        cases.push(rule_case(&rule, &format!("rule.{foreign}")));
        for (name, field) in [(json!("a b"), "rule.name"), (json!(""), "rule.name")] {
            let mut rule = valid.clone();
            rule.insert("name".into(), name);
            cases.push(rule_case(&rule, field));
        }
        let mut rule = valid.clone();
        rule.remove("name");
        cases.push(rule_case(&rule, "rule.name"));
    }
    let mut rule = inline(AlgorithmKind::FixedWindow);
    rule.insert("algorithm".into(), json!("bogus"));
    cases.push(rule_case(&rule, "rule.algorithm"));
    rule.remove("algorithm");
    cases.push(rule_case(&rule, "rule.algorithm"));
    // GCRA: a burst above what the script takes beside its limit is fine; a cost above the
    // burst is the request's error.
    let mut gcra = inline(AlgorithmKind::Gcra);
    gcra.insert("burst".into(), json!(2));
    let body = json!({"rule": gcra, "key": "k", "cost": 3}).to_string();
    cases.push(case(body, 400, "invalid_cost", "cost"));
    cases
}

fn request_cases() -> Vec<Case> {
    let long_key = "k".repeat(3000);
    vec![
        Case {
            body: "not json".into(),
            status: 400,
            code: "invalid_json",
            field: None,
        },
        Case {
            body: "[]".into(),
            status: 400,
            code: "invalid_json",
            field: None,
        },
        Case {
            body: "".into(),
            status: 400,
            code: "invalid_json",
            field: None,
        },
        case(r#"{"key":"k"}"#, 400, "missing_field", "rule"),
        case(r#"{"rule":"login"}"#, 400, "missing_field", "key"),
        case(r#"{"rule":5,"key":"k"}"#, 400, "invalid_rule", "rule"),
        case(r#"{"rule":null,"key":"k"}"#, 400, "missing_field", "rule"),
        case(r#"{"rule":"nope","key":"k"}"#, 404, "unknown_rule", "rule"),
        case(r#"{"rule":"login","key":5}"#, 400, "invalid_key", "key"),
        case(r#"{"rule":"login","key":""}"#, 400, "invalid_key", "key"),
        case(
            json!({"rule": "login", "key": long_key}).to_string(),
            400,
            "invalid_key",
            "key",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":0}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":-1}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":1.5}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":"2"}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":3}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","cost":1e400}"#,
            400,
            "invalid_number",
            "cost",
        ),
        case(
            r#"{"rule":"login","key":"k","kye":"typo"}"#,
            400,
            "unknown_field",
            "kye",
        ),
        case(
            r#"{"rule":"login","key":"k","now_ms":5}"#,
            400,
            "unknown_field",
            "now_ms",
        ),
        case(
            r#"{"rule":"login","policy":"api","key":"k"}"#,
            400,
            "invalid_policy",
            "policy",
        ),
        case(
            r#"{"policy":"nosuch","key":"k"}"#,
            404,
            "unknown_policy",
            "policy",
        ),
        case(r#"{"policy":5,"key":"k"}"#, 400, "invalid_policy", "policy"),
        case(r#"{"policy":"api"}"#, 400, "missing_field", "key"),
        case(r#"{"policy":"api","key":""}"#, 400, "invalid_key", "key"),
        case(
            r#"{"policy":"api","key":"k","cost":0}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"policy":"api","key":"k","cost":11}"#,
            400,
            "invalid_cost",
            "cost",
        ),
        case(
            r#"{"policy":"api","key":"k","costs":1}"#,
            400,
            "unknown_field",
            "costs",
        ),
    ]
}

#[tokio::test]
async fn every_bad_field_is_answered_in_the_json_shape_naming_it() {
    let server = common::redis();
    let addr = start(&server).await;
    let mut cases = request_cases();
    cases.extend(inline_rule_cases());
    let mut failures = Vec::new();
    for case in &cases {
        let (status, headers, reply) = http(addr, "POST", "/api/check", &case.body).await;
        let body: Value = serde_json::from_str(&reply).unwrap_or(Value::Null);
        let error = &body["error"];
        let want_field = case.field.clone().map_or(Value::Null, Value::String);
        let message = error["message"].as_str().unwrap_or("");
        let problem = if status != case.status {
            Some(format!("status {status}, not {}", case.status))
        } else if error["code"] != case.code {
            Some(format!("code {}, not {}", error["code"], case.code))
        } else if error["field"] != want_field {
            Some(format!("field {}, not {want_field}", error["field"]))
        } else if message.is_empty() {
            Some("no message".into())
        } else if !headers
            .get("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
        {
            Some(format!("content-type {:?}", headers.get("content-type")))
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.push(format!("{}: {problem}: {reply}", case.body));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // None of them reached Redis as a decision: no key was written.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(
            &mut redis::Client::open(server.url())
                .expect("url")
                .get_connection()
                .expect("connect"),
        )
        .expect("KEYS");
    assert!(
        keys.iter()
            .all(|k| !k.contains("{x}") && !k.contains("login")),
        "{keys:?}"
    );
}

#[tokio::test]
async fn the_wrong_method_or_path_is_answered_in_the_json_shape() {
    let server = common::redis();
    let addr = start(&server).await;
    for (method, path, want) in [
        ("GET", "/api/check", 405),
        ("PUT", "/api/check", 405),
        ("POST", "/api/chek", 404),
    ] {
        let (status, headers, reply) = http(addr, method, path, "").await;
        assert_eq!(status, want, "{method} {path}: {reply}");
        let body: Value = serde_json::from_str(&reply)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {reply:?}"));
        assert!(body["error"]["message"].is_string(), "{reply}");
        assert_eq!(
            headers.get("content-type").map(String::as_str),
            Some("application/json"),
            "{method} {path}"
        );
    }
}
