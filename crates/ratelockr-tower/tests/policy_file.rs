//! The layer held to a policy of a file, over real HTTP against a real redis-server: every
//! limit in one decision with the policy's headers, the handler's view of it, the file
//! reloaded live (a broken one keeps the policy in force), and build errors that name the file.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use axum::routing::get;
use axum::{Extension, Router};
use common::{http_with, options, redis, replace_file};
use ratelockr::{Metrics, RedisTarget, Rule};
use ratelockr_tower::{BuildError, KeyExtractor, RateLimitInfo, RateLimitLayer};
use std::net::SocketAddr;
use std::time::Duration;

fn policies(daily: u64, mode: &str) -> String {
    format!(
        r#"
[[policies]]
name = "api"
mode = "{mode}"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 5
  refill_per_sec = 0.001

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = {daily}
  window_ms = 86400000
"#
    )
}

/// Serves `/` behind `layer`; the handler answers with the policy decision it was given.
async fn serve(layer: RateLimitLayer) -> SocketAddr {
    let app = Router::new()
        .route(
            "/",
            get(|Extension(info): Extension<RateLimitInfo>| async move {
                let p = info.policy.expect("a policy decision");
                format!(
                    "binding={} would_deny={}",
                    p.binding().unwrap_or_default(),
                    p.would_deny()
                )
            }),
        )
        .layer(layer);
    support::serve_app(app).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_file_decides_every_limit_at_once_and_reloads() {
    let server = redis();
    let dir = common::tempdir("tower-policy");
    let path = dir.join("policies.toml");
    replace_file(&path, &policies(2, "enforce"), 1_700_000_000);
    let metrics = Metrics::new();
    let layer = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(RedisTarget::parse(&server.url()).expect("url"))
        .options(options("tower-policy"))
        .metrics(metrics.clone())
        .from_file(&path, "api")
        .headers_on_admitted(true)
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    let get = || http_with(addr, "GET", "/", &[], "");

    let (status, headers, body) = get().await;
    assert_eq!(
        (status, body.as_str()),
        (200, "binding=daily would_deny=false")
    );
    assert_eq!(
        headers["ratelimit-policy"],
        "\"api.per-second\";q=5;w=5000, \"api.daily\";q=2;w=86400"
    );
    assert!(
        headers["ratelimit"].starts_with("\"api.daily\";r=1;"),
        "{headers:?}"
    );
    assert_eq!(get().await.0, 200);
    let (status, headers, _) = get().await;
    assert_eq!(status, 429, "the daily limit of 2");
    assert!(
        headers["ratelimit"].starts_with("\"api.daily\";r=0;"),
        "{headers:?}"
    );
    assert!(headers.contains_key("retry-after"));

    // Shadow, and a larger day: the file is reloaded without a restart.
    replace_file(&path, &policies(50, "shadow"), 1_700_000_100);
    let reloaded = common::eventually(Duration::from_secs(30), || async {
        get().await.0 == 200 && metrics.policy_reloads(true) == 1
    })
    .await;
    assert!(reloaded, "the layer picked up the changed file");
    // The bucket of 5 is spent after 5 admissions: a would-be denial passes in shadow mode.
    let mut shadowed = false;
    for _ in 0..5 {
        let (status, _, body) = get().await;
        assert_eq!(status, 200, "shadow never denies: {body}");
        shadowed |= body == "binding=per-second would_deny=true";
    }
    assert!(shadowed, "the bucket's would-be denial was seen");

    // A broken file keeps the policy in force and is counted.
    replace_file(&path, &policies(0, "shadow"), 1_700_000_200);
    let counted = common::eventually(Duration::from_secs(30), || async {
        metrics.policy_reloads(false) == 1
    })
    .await;
    assert!(counted, "the refused reload is counted");
    assert_eq!(get().await.0, 200, "the shadow policy is still in force");
}

#[test]
fn build_errors_name_the_file_and_the_policy() {
    let dir = common::tempdir("tower-policy-errors");
    let path = dir.join("policies.toml");
    std::fs::write(&path, policies(2, "enforce")).expect("write");
    let target = RedisTarget::parse("redis://127.0.0.1:6379").expect("url");
    let build = |policy: &str| {
        RateLimitLayer::builder(KeyExtractor::peer_ip())
            .redis(target.clone())
            .from_file(&path, policy)
            .build()
    };
    match build("nope") {
        Err(BuildError::Policies(message)) => {
            assert!(
                message.contains("policies.toml") && message.contains("api"),
                "{message}"
            )
        }
        other => panic!("an unknown policy is refused: {other:?}"),
    }
    std::fs::write(&path, policies(0, "enforce")).expect("write");
    match build("api") {
        Err(BuildError::Policies(message)) => {
            assert!(
                message.contains("line 15") && message.contains("limit"),
                "{message}"
            )
        }
        other => panic!("a broken file is refused: {other:?}"),
    }
    let both = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(target)
        .rule(Rule::fixed_window("r", 1, Duration::from_secs(1)).expect("valid"))
        .from_file(&path, "api")
        .build();
    assert_eq!(both.err(), Some(BuildError::RulesWithPolicy));
}
