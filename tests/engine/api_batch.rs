//! `POST /api/check/batch` over real HTTP against a real redis-server: answers in the order
//! asked, an item's error at its place without failing the others, the size limit named, and
//! every item failing open on its own when Redis is down.

use crate::common;

use crate::common::{dead_url, http, limiter, limiter_with, options};
use ratelockr::api::{DecisionApi, MAX_BATCH};
use ratelockr::{Limiter, Rule};
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;

async fn start(limiter: Limiter) -> SocketAddr {
    let rules = vec![
        Rule::fixed_window("login", 2, Duration::from_secs(60)).expect("valid"),
        Rule::token_bucket("api", 10, 1.0).expect("valid"),
    ];
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = DecisionApi::new(limiter, rules).router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

async fn batch(addr: SocketAddr, body: &str) -> (u16, Value) {
    let (status, headers, reply) = http(addr, "POST", "/api/check/batch", body).await;
    assert!(
        headers["content-type"].starts_with("application/json"),
        "{headers:?}"
    );
    (status, json(&reply))
}

#[tokio::test]
async fn answers_come_back_in_the_order_asked_with_the_single_shape() {
    let server = common::redis();
    let addr = start(limiter(&server, "batch-order")).await;
    let body = r#"[
        {"rule":"login","key":"alice"},
        {"rule":"api","key":"bob","cost":4},
        {"rule":"login","key":"alice"},
        {"rule":"login","key":"alice"},
        {"rule":{"name":"adhoc","algorithm":"token_bucket","capacity":3,"refill_per_sec":1},"key":"carol","cost":3}
    ]"#;
    let (status, reply) = batch(addr, body).await;
    assert_eq!(status, 200, "{reply}");
    let items = reply.as_array().expect("an array");
    assert_eq!(items.len(), 5, "{reply}");
    let rules: Vec<&str> = items
        .iter()
        .map(|i| i["rule"].as_str().expect("a rule name"))
        .collect();
    assert_eq!(rules, ["login", "api", "login", "login", "adhoc"]);
    assert_eq!(items[1]["remaining"], 6, "{reply}");
    assert_eq!(items[4]["remaining"], 0, "{reply}");
    // The same key's decisions, in order: 2 allowed, then denied, as one by one.
    let login: Vec<(bool, u16)> = [0, 2, 3]
        .iter()
        .map(|&i| {
            let item = &items[i];
            (
                item["allowed"].as_bool().expect("allowed"),
                item["status"].as_u64().expect("status") as u16,
            )
        })
        .collect();
    assert_eq!(login, [(true, 200), (true, 200), (false, 429)], "{reply}");
    // The per-decision shape of POST /api/check, headers included.
    let (_, _, single) = http(addr, "POST", "/api/check", r#"{"rule":"api","key":"dave"}"#).await;
    let single = json(&single);
    let mut fields: Vec<&String> = single.as_object().expect("an object").keys().collect();
    let mut item_fields: Vec<&String> = items[1].as_object().expect("an object").keys().collect();
    fields.sort();
    item_fields.sort();
    assert_eq!(fields, item_fields);
    assert_eq!(
        items[3]["headers"]["RateLimit-Policy"],
        "\"login\";q=2;w=60"
    );
    assert!(items[3]["headers"]["Retry-After"].is_string(), "{reply}");
}

#[tokio::test]
async fn an_item_in_error_is_answered_at_its_place_and_the_others_decided() {
    let server = common::redis();
    let addr = start(limiter(&server, "batch-errors")).await;
    let body = r#"[
        {"rule":"login","key":"k"},
        {"rule":"nope","key":"k"},
        {"rule":"login"},
        {"rule":"login","key":"k","cost":3},
        42,
        {"rule":{"name":"x","algorithm":"token_bucket","capacity":0,"refill_per_sec":1},"key":"k"},
        {"rule":"api","key":"k"}
    ]"#;
    let (status, reply) = batch(addr, body).await;
    assert_eq!(status, 200, "{reply}");
    let items = reply.as_array().expect("an array");
    let want: [(&str, u64, Value); 5] = [
        ("unknown_rule", 404, "rule".into()),
        ("missing_field", 400, "key".into()),
        ("invalid_cost", 400, "cost".into()),
        ("invalid_json", 400, Value::Null),
        ("invalid_rule", 400, "rule.capacity".into()),
    ];
    for (item, (code, status, field)) in items[1..6].iter().zip(want) {
        assert_eq!(item["error"]["code"], code, "{item}");
        assert_eq!(item["error"]["field"], field, "{item}");
        assert_eq!(item["status"], status, "{item}");
        assert!(!item["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    assert_eq!(items[0]["allowed"], true, "{reply}");
    assert_eq!(items[6]["allowed"], true, "{reply}");
    assert_eq!(items[6]["rule"], "api", "{reply}");
}

#[tokio::test]
async fn a_batch_over_the_limit_or_not_an_array_is_refused_naming_why() {
    let server = common::redis();
    let addr = start(limiter(&server, "batch-limit")).await;
    let one = r#"{"rule":"login","key":"k"}"#;
    let over = format!("[{}]", vec![one; MAX_BATCH + 1].join(","));
    let (status, reply) = batch(addr, &over).await;
    assert_eq!(status, 413, "{reply}");
    assert_eq!(reply["error"]["code"], "batch_too_large");
    let message = reply["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(&MAX_BATCH.to_string()), "{message}");

    let full = format!(
        "[{}]",
        vec![r#"{"rule":"api","key":"full"}"#; MAX_BATCH].join(",")
    );
    let (status, reply) = batch(addr, &full).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply.as_array().map(Vec::len), Some(MAX_BATCH));

    for body in [one, "not json", ""] {
        let (status, reply) = batch(addr, body).await;
        assert_eq!(status, 400, "{body}: {reply}");
        assert_eq!(reply["error"]["code"], "invalid_json", "{body}: {reply}");
    }
    let (status, reply) = batch(addr, "[]").await;
    assert_eq!((status, reply), (200, Value::Array(Vec::new())));
}

#[tokio::test]
async fn every_item_fails_open_on_its_own_when_redis_is_down() {
    let limiter = limiter_with(
        &dead_url(),
        ratelockr::LimiterOptions {
            deadline: Duration::from_millis(300),
            ..options("batch-down")
        },
    );
    let addr = start(limiter).await;
    let body = r#"[{"rule":"login","key":"a"},{"rule":"nope","key":"a"},{"rule":"api","key":"b"}]"#;
    let (status, reply) = batch(addr, body).await;
    assert_eq!(status, 200, "{reply}");
    let items = reply.as_array().expect("an array");
    for i in [0, 2] {
        assert_eq!(items[i]["allowed"], true, "{reply}");
        assert_eq!(items[i]["fail_open"], true, "{reply}");
        assert_eq!(items[i]["remaining"], -1, "{reply}");
        assert_eq!(items[i]["status"], 200, "{reply}");
        assert_eq!(items[i]["headers"], serde_json::json!({}), "{reply}");
    }
    assert_eq!(items[1]["error"]["code"], "unknown_rule", "{reply}");
}
