//! A cost that was an estimate, settled by the handler's `ActualCost` response extension, over
//! real HTTP against a real redis-server: a policy of a file and a layer of rules alike are
//! charged the actual cost (less: the rest given back; more: charged past the estimate) before
//! the response goes out, so the next request sees it.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use common::{http_with, options, redis, replace_file};
use ratelockr::{RedisTarget, Rule};
use ratelockr_tower::{ActualCost, KeyExtractor, RateLimitInfo, RateLimitLayer};
use std::net::SocketAddr;
use std::time::Duration;

/// Serves `/` behind `layer`, the cost read from `x-estimate`; the handler answers with the
/// remaining the layer saw and settles with `x-actual` when the request has one.
async fn serve(layer: RateLimitLayer) -> SocketAddr {
    let app = Router::new()
        .route(
            "/",
            get(
                |Extension(info): Extension<RateLimitInfo>, headers: HeaderMap| async move {
                    let remaining = match &info.policy {
                        Some(p) => p.remaining,
                        None => info
                            .decisions
                            .iter()
                            .map(|d| d.decision.remaining)
                            .min()
                            .unwrap_or(0),
                    };
                    let mut response: Response = format!("remaining={remaining}").into_response();
                    if let Some(actual) = headers.get("x-actual") {
                        let actual = actual.to_str().expect("ascii").parse().expect("a number");
                        response.extensions_mut().insert(ActualCost(actual));
                    }
                    response
                },
            ),
        )
        .layer(layer);
    support::serve_app(app).await
}

fn builder(server: &ratelockr::EmbeddedRedis, name: &str) -> ratelockr_tower::RateLimitBuilder {
    RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(RedisTarget::parse(&server.url()).expect("url"))
        .options(options(name))
        .cost(|request| {
            request
                .headers()
                .get("x-estimate")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(1)
        })
}

async fn ask(addr: SocketAddr, estimate: u64, actual: Option<u64>) -> (u16, String) {
    let estimate = estimate.to_string();
    let actual = actual.map(|a| a.to_string());
    let mut headers = vec![("x-estimate", estimate.as_str())];
    if let Some(actual) = &actual {
        headers.push(("x-actual", actual.as_str()));
    }
    let (status, _, body) = http_with(addr, "GET", "/", &headers, "").await;
    (status, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_of_a_file_is_settled_from_the_response() {
    let server = redis();
    let dir = common::tempdir("tower-settle");
    let path = dir.join("policies.toml");
    let policies = r#"
[[policies]]
name = "llm"
  [[policies.limits]]
  name = "tokens"
  algorithm = "token-bucket"
  capacity = 5000
  refill_per_sec = 0.001
  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 5000
  window_ms = 86400000
"#;
    replace_file(&path, policies, 1_700_000_000);
    let layer = builder(&server, "tower-settle-policy")
        .from_file(&path, "llm")
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    assert_eq!(
        ask(addr, 1000, Some(640)).await,
        (200, "remaining=4000".into())
    );
    // 360 came back: 5000 - 640 - 1.
    assert_eq!(ask(addr, 1, None).await, (200, "remaining=4359".into()));
    // An estimate of 100 that used 1,000: 900 more, charged before the response went out.
    assert_eq!(
        ask(addr, 100, Some(1000)).await,
        (200, "remaining=4259".into())
    );
    assert_eq!(ask(addr, 1, None).await, (200, "remaining=3358".into()));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_rule_that_admitted_is_settled_from_the_response() {
    let server = redis();
    let layer = builder(&server, "tower-settle-rules")
        .rule(Rule::fixed_window("minute", 3000, Duration::from_secs(60)).expect("valid"))
        .rule(Rule::fixed_window("day", 2000, Duration::from_secs(86_400)).expect("valid"))
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    assert_eq!(
        ask(addr, 1000, Some(400)).await,
        (200, "remaining=1000".into())
    );
    assert_eq!(ask(addr, 1, None).await, (200, "remaining=1599".into()));
    // Past the day's limit: 1,500 more than estimated, kept; the next request waits.
    assert_eq!(
        ask(addr, 100, Some(1600)).await,
        (200, "remaining=1499".into())
    );
    assert_eq!(ask(addr, 1, None).await.0, 429);
}
