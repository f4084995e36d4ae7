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

/// Delay instead of deny: GCRA 10 per second, burst 1, max_delay 1000 ms. Five requests at
/// once are all served (200), each handler no earlier than its delay after the request was
/// sent (a lower bound the layer's sleep guarantees, whatever the machine's load: no upper
/// bound is asserted), and some of them waited.
#[tokio::test(flavor = "multi_thread")]
async fn a_delayed_request_is_served_after_its_delay() {
    use std::sync::{Arc, Mutex};
    use tokio::time::Instant;
    let server = redis();
    let dir = common::tempdir("tower-delay");
    let path = dir.join("policies.toml");
    let file = r#"
[[policies]]
name = "smooth"
max_delay_ms = 1000

  [[policies.limits]]
  name = "per-second"
  algorithm = "gcra"
  limit = 10
  window_ms = 1000
  burst = 1
"#;
    replace_file(&path, file, 1_700_000_000);
    let layer = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(RedisTarget::parse(&server.url()).expect("url"))
        .options(options("tower-delay"))
        .from_file(&path, "smooth")
        .build()
        .expect("layer");
    // When each handler ran, by the delay it was given.
    let served: Arc<Mutex<Vec<(u64, Instant)>>> = Arc::default();
    let seen = served.clone();
    let app = Router::new()
        .route(
            "/",
            get(move |Extension(info): Extension<RateLimitInfo>| {
                let seen = seen.clone();
                async move {
                    let delay = info.delay_ms();
                    seen.lock().expect("lock").push((delay, Instant::now()));
                    format!("delay_ms={delay}")
                }
            }),
        )
        .layer(layer);
    let addr = support::serve_app(app).await;
    let sent = Instant::now();
    let replies =
        futures::future::join_all((0..5).map(|_| http_with(addr, "GET", "/", &[], ""))).await;
    for (status, _, body) in &replies {
        assert_eq!(*status, 200, "{body}");
    }
    let served = served.lock().expect("lock").clone();
    assert_eq!(served.len(), 5);
    for (delay, at) in &served {
        assert!(
            at.duration_since(sent) >= Duration::from_millis(*delay),
            "served {:?} after sending, before its delay of {delay} ms",
            at.duration_since(sent)
        );
    }
    let mut delays: Vec<u64> = served.iter().map(|(d, _)| *d).collect();
    delays.sort_unstable();
    assert_eq!(delays[0], 0, "the first passes at once: {delays:?}");
    // Five within one emission interval x 4 of each other: some waited (up to 1000 ms).
    assert!(delays[4] > 0 && delays[4] <= 1000, "{delays:?}");
}
