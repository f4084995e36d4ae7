//! The decision endpoint over real HTTP against a real redis-server: decisions and their
//! headers, errors that name the field, the rules list, and the loopback default.

use crate::common;

use crate::common::{http, limiter};
use ratelockr::api::DecisionApi;
use ratelockr::metrics::MetricsServer;
use ratelockr::{Metrics, Rule};
use serde_json::Value;
use std::net::SocketAddr;

async fn start(server: &ratelockr::EmbeddedRedis) -> SocketAddr {
    let metrics = Metrics::new();
    let limiter = limiter(server, "api").with_observer(std::sync::Arc::new(metrics.clone()));
    let rules = vec![
        Rule::fixed_window("login", 2, std::time::Duration::from_secs(60)).expect("valid"),
        Rule::token_bucket("api", 10, 1.0).expect("valid"),
    ];
    let bound = MetricsServer::bind(metrics, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = bound.local_addr().expect("addr");
    tokio::spawn(bound.run_with(
        DecisionApi::new(limiter, rules).router(),
        std::future::pending(),
    ));
    addr
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn decisions_by_name_and_inline_with_their_headers() {
    let server = common::redis();
    let addr = start(&server).await;
    let ask = r#"{"rule":"login","key":"alice"}"#;
    let (status, headers, body) = http(addr, "POST", "/api/check", ask).await;
    assert_eq!(status, 200, "{body}");
    let reply = json(&body);
    assert_eq!(reply["allowed"], true);
    assert_eq!(reply["remaining"], 1);
    assert_eq!(reply["fail_open"], false);
    assert_eq!(reply["status"], 200);
    assert_eq!(reply["headers"]["RateLimit-Policy"], "\"login\";q=2;w=60");
    assert_eq!(headers["ratelimit"], "\"login\";r=1;t=60");

    http(addr, "POST", "/api/check", ask).await;
    let (status, headers, body) = http(addr, "POST", "/api/check", ask).await;
    assert_eq!(status, 200, "a denial is a decision, not an error: {body}");
    let reply = json(&body);
    assert_eq!(reply["allowed"], false);
    assert_eq!(reply["status"], 429);
    let retry: u64 = headers["retry-after"].parse().expect("whole seconds");
    // The window's time left + 1 ms (lua/fixed_window.lua), rounded up: 61 when the denial
    // comes within the window's first millisecond, as a fast endpoint's third request can.
    assert!((1..=61).contains(&retry), "{retry}");
    assert_eq!(reply["headers"]["Retry-After"], headers["retry-after"]);

    let inline = r#"{"rule":{"name":"adhoc","algorithm":"token_bucket","capacity":3,"refill_per_sec":1},"key":"bob","cost":3}"#;
    let (status, _, body) = http(addr, "POST", "/api/check", inline).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["remaining"], 0);

    let (status, _, body) = http(addr, "GET", "/api/rules", "").await;
    assert_eq!(status, 200);
    let list = json(&body);
    let names: Vec<&str> = list["rules"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["api", "login"]);
}

#[tokio::test]
async fn bad_requests_name_the_field() {
    let server = common::redis();
    let addr = start(&server).await;
    let cases = [
        ("not json", 400, "invalid_json", Value::Null),
        (r#"{"key":"k"}"#, 400, "missing_field", "rule".into()),
        (r#"{"rule":"login"}"#, 400, "missing_field", "key".into()),
        (
            r#"{"rule":"login","key":""}"#,
            400,
            "invalid_key",
            "key".into(),
        ),
        (
            r#"{"rule":"login","key":"k","cost":-1}"#,
            400,
            "invalid_cost",
            "cost".into(),
        ),
        (
            r#"{"rule":"login","key":"k","cost":3}"#,
            400,
            "invalid_cost",
            "cost".into(),
        ),
        (
            r#"{"rule":"nope","key":"k"}"#,
            404,
            "unknown_rule",
            "rule".into(),
        ),
        (
            r#"{"rule":{"name":"x","algorithm":"token_bucket","capacity":0,"refill_per_sec":1},"key":"k"}"#,
            400,
            "invalid_rule",
            "rule.capacity".into(),
        ),
        (
            r#"{"rule":{"algorithm":"fixed_window","limit":1,"window_ms":10},"key":"k"}"#,
            400,
            "invalid_rule",
            "rule.name".into(),
        ),
        (
            r#"{"rule":{"name":"x","algorithm":"token_bucket","capacity":5,"refill_per_sec":"NaN"},"key":"k"}"#,
            400,
            "invalid_rule",
            "rule.refill_per_sec".into(),
        ),
        (
            r#"{"rule":"login","key":"k","cost":1e400}"#,
            400,
            "invalid_number",
            "cost".into(),
        ),
    ];
    for (body, want_status, code, field) in cases {
        let (status, _, reply) = http(addr, "POST", "/api/check", body).await;
        assert_eq!(status, want_status, "{body}: {reply}");
        let error = &json(&reply)["error"];
        assert_eq!(error["code"], code, "{body}: {reply}");
        assert_eq!(error["field"], field, "{body}: {reply}");
        assert!(!error["message"].as_str().unwrap_or("").is_empty());
    }
}

#[tokio::test]
async fn a_body_too_large_is_refused_in_the_json_shape() {
    let server = common::redis();
    let addr = start(&server).await;
    let huge = format!(r#"{{"rule":"login","key":"{}"}}"#, "k".repeat(100 * 1024));
    let (status, headers, body) = http(addr, "POST", "/api/check", &huge).await;
    assert_eq!(status, 413, "{body}");
    assert!(
        headers["content-type"].starts_with("application/json"),
        "{headers:?}"
    );
    let error = &json(&body)["error"];
    assert_eq!(error["code"], "body_too_large", "{body}");
    assert!(
        error["message"].as_str().unwrap_or("").contains("65536"),
        "{body}"
    );
}

#[test]
fn serve_listens_on_loopback_by_default() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ratelockr"))
        .args(["serve", "--help"])
        .output()
        .expect("run ratelockr");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[default: 127.0.0.1:9464]"), "{help}");
    assert!(help.contains("--rules"), "{help}");
}
