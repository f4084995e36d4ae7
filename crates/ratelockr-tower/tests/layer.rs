//! The layer over real HTTP (an axum server on a loopback port) against a real redis-server
//! that the root crate's harness starts: admitted, denied, fail-open with Redis killed, several
//! rules with the refund, and the key extractors, a spoofed forwarded header included.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use axum::extract::Request;
use axum::routing::get;
use axum::{Extension, Router};
use common::{http_with, options, redis};
use ratelockr::{FailureMode, LimiterOptions, Metrics, Outcome, RedisTarget, Rule};
use ratelockr_tower::{KeyExtractor, RateLimitBuilder, RateLimitInfo, RateLimitLayer};
use std::net::SocketAddr;

/// Serves `/` behind `layer` on a free loopback port, with peer addresses recorded. The
/// handler answers with what the layer told it: the key and whether it failed open.
async fn serve(layer: RateLimitLayer) -> SocketAddr {
    let app = Router::new()
        .route(
            "/",
            get(|Extension(info): Extension<RateLimitInfo>| async move {
                format!("key={} fail_open={}", info.key, info.fail_open())
            }),
        )
        .layer(layer);
    support::serve_app(app).await
}

fn builder(key: KeyExtractor, url: &str, name: &str) -> RateLimitBuilder {
    RateLimitLayer::builder(key)
        .redis(RedisTarget::parse(url).expect("url"))
        .options(options(name))
}

async fn get_with(addr: SocketAddr, headers: &[(&str, &str)]) -> (u16, Header, String) {
    let (status, headers, body) = http_with(addr, "GET", "/", headers, "").await;
    (status, Header(headers), body)
}

struct Header(std::collections::BTreeMap<String, String>);

impl Header {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

#[tokio::test]
async fn admits_then_denies_with_the_standard_fields() {
    let server = redis();
    let layer = builder(KeyExtractor::peer_ip(), &server.url(), "deny")
        .rule(Rule::fixed_window("api", 2, std::time::Duration::from_secs(60)).expect("valid"))
        .headers_on_admitted(true)
        .x_ratelimit_headers(true)
        .build()
        .expect("layer");
    let addr = serve(layer).await;

    let (status, headers, body) = get_with(addr, &[]).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "key=127.0.0.1 fail_open=false")
    );
    assert_eq!(headers.get("ratelimit-policy"), Some("\"api\";q=2;w=60"));
    assert_eq!(headers.get("ratelimit"), Some("\"api\";r=1;t=60"));
    assert_eq!(headers.get("x-ratelimit-remaining"), Some("1"));
    assert_eq!(headers.get("retry-after"), None);

    assert_eq!(get_with(addr, &[]).await.0, 200);
    let (status, headers, body) = get_with(addr, &[]).await;
    assert_eq!(status, 429, "{body}");
    let retry: u64 = headers
        .get("retry-after")
        .expect("Retry-After on a 429")
        .parse()
        .expect("whole seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        headers.get("ratelimit"),
        Some(format!("\"api\";r=0;t={retry}").as_str())
    );
    assert_eq!(headers.get("x-ratelimit-limit"), Some("2"));
}

#[tokio::test]
async fn admitted_responses_carry_no_fields_unless_asked() {
    let server = redis();
    let layer = builder(KeyExtractor::peer_ip(), &server.url(), "quiet")
        .rule(Rule::fixed_window("api", 1, std::time::Duration::from_secs(60)).expect("valid"))
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    let (status, headers, _) = get_with(addr, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("ratelimit"), None);
    let (status, headers, _) = get_with(addr, &[]).await;
    assert_eq!(status, 429);
    assert!(headers.get("ratelimit").is_some() && headers.get("retry-after").is_some());
    assert_eq!(
        headers.get("x-ratelimit-limit"),
        None,
        "X-RateLimit-* is opt-in"
    );
}

#[tokio::test]
async fn a_killed_redis_fails_open_visibly() {
    let server = redis();
    let metrics = Metrics::new();
    let layer = builder(KeyExtractor::peer_ip(), &server.url(), "open")
        .rule(Rule::fixed_window("api", 1, std::time::Duration::from_secs(60)).expect("valid"))
        .metrics(metrics.clone())
        .headers_on_admitted(true)
        .fail_open_header(true)
        .build()
        .expect("layer");
    let limiter = layer.limiter().clone();
    let addr = serve(layer).await;
    assert_eq!(get_with(addr, &[]).await.0, 200);
    assert_eq!(get_with(addr, &[]).await.0, 429);

    drop(server);
    for _ in 0..3 {
        let (status, headers, body) = get_with(addr, &[]).await;
        assert_eq!(status, 200, "fail-open admits");
        assert_eq!(body, "key=127.0.0.1 fail_open=true", "the handler sees it");
        assert_eq!(headers.get("ratelimit-fail-open"), Some("1"));
        assert_eq!(headers.get("ratelimit"), None, "nothing is known");
    }
    let kind = Rule::fixed_window("x", 1, std::time::Duration::from_millis(1))
        .expect("valid")
        .kind();
    assert_eq!(metrics.evaluations(kind, Outcome::FailOpen), 3);
    assert!(limiter.ledger().failures_total() >= 3);
}

#[tokio::test]
async fn fail_closed_is_a_429_without_retry_after() {
    let layer = builder(KeyExtractor::peer_ip(), &common::dead_url(), "closed")
        .rule(Rule::fixed_window("api", 5, std::time::Duration::from_secs(60)).expect("valid"))
        .failure_mode(FailureMode::Closed)
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    let (status, headers, _) = get_with(addr, &[]).await;
    assert_eq!(status, 429);
    assert_eq!(headers.get("retry-after"), None);
    assert_eq!(headers.get("ratelimit"), None);
}

#[tokio::test]
async fn a_later_denial_refunds_the_rules_that_admitted() {
    let server = redis();
    // Per second: 3 a client; per hour: 2 a client. The hourly rule denies the third request,
    // so the per-second rule must get that request back.
    let per_second =
        Rule::fixed_window("per-second", 3, std::time::Duration::from_secs(60)).expect("valid");
    let per_hour = Rule::sliding_window_log("per-hour", 2, std::time::Duration::from_secs(3600))
        .expect("valid");
    let layer = builder(KeyExtractor::peer_ip(), &server.url(), "refund")
        .rule(per_second.clone())
        .rule(per_hour.clone())
        .build()
        .expect("layer");
    let limiter = layer.limiter().clone();
    let addr = serve(layer).await;
    assert_eq!(get_with(addr, &[]).await.0, 200);
    assert_eq!(get_with(addr, &[]).await.0, 200);
    let (status, headers, _) = get_with(addr, &[]).await;
    assert_eq!(status, 429);
    assert!(
        headers
            .get("ratelimit-policy")
            .is_some_and(|p| p.starts_with("\"per-hour\"")),
        "the denying rule answers: {:?}",
        headers.0
    );
    // Two requests passed; the denied third was refunded: the per-second window counts 2.
    let peek = limiter.peek(&per_second, "127.0.0.1").await.expect("peek");
    assert_eq!(peek.remaining, 1, "{peek:?}");
    let count: i64 = common::query(
        &limiter,
        redis::cmd("GET").arg(limiter.keys().limiter(&per_second, "127.0.0.1")),
    )
    .await;
    assert_eq!(count, 2);
}

#[tokio::test]
async fn a_first_rule_denial_asks_no_later_rule() {
    let server = redis();
    let first = Rule::fixed_window("first", 1, std::time::Duration::from_secs(60)).expect("valid");
    let second =
        Rule::fixed_window("second", 10, std::time::Duration::from_secs(60)).expect("valid");
    let layer = builder(KeyExtractor::peer_ip(), &server.url(), "order")
        .rule(first)
        .rule(second.clone())
        .build()
        .expect("layer");
    let limiter = layer.limiter().clone();
    let addr = serve(layer).await;
    for _ in 0..4 {
        get_with(addr, &[]).await;
    }
    let peek = limiter.peek(&second, "127.0.0.1").await.expect("peek");
    assert_eq!(
        peek.remaining, 9,
        "only the admitted request reached the second rule"
    );
}

#[tokio::test]
async fn api_keys_are_limited_apart_and_a_missing_one_is_refused() {
    let server = redis();
    let layer = builder(
        KeyExtractor::header("x-api-key".parse().expect("name")),
        &server.url(),
        "apikey",
    )
    .rule(Rule::token_bucket("api", 1, 0.01).expect("valid"))
    .missing_key_status(axum::http::StatusCode::UNAUTHORIZED)
    .build()
    .expect("layer");
    let addr = serve(layer).await;
    let alice = [("X-Api-Key", "alice")];
    let bob = [("X-Api-Key", "bob")];
    assert_eq!(get_with(addr, &alice).await.2, "key=alice fail_open=false");
    assert_eq!(get_with(addr, &alice).await.0, 429);
    assert_eq!(get_with(addr, &bob).await.0, 200, "bob has his own bucket");
    let (status, _, body) = get_with(addr, &[]).await;
    assert_eq!(status, 401);
    assert!(body.contains("x-api-key"), "{body}");
}

#[tokio::test]
async fn a_spoofed_forwarded_header_from_an_untrusted_peer_is_ignored() {
    let server = redis();
    // 127.0.0.1 is not a trusted proxy: its X-Forwarded-For is anyone's word.
    let untrusted = builder(
        KeyExtractor::forwarded_ip(["10.0.0.0/8".parse().expect("cidr")]),
        &server.url(),
        "spoof",
    )
    .rule(Rule::fixed_window("api", 1, std::time::Duration::from_secs(60)).expect("valid"))
    .build()
    .expect("layer");
    let addr = serve(untrusted).await;
    let (_, _, body) = get_with(addr, &[("X-Forwarded-For", "198.51.100.1")]).await;
    assert_eq!(body, "key=127.0.0.1 fail_open=false");
    // A fresh spoofed address each time does not buy a fresh allowance.
    let (status, _, _) = get_with(addr, &[("X-Forwarded-For", "198.51.100.2")]).await;
    assert_eq!(status, 429);
    let (status, _, _) = get_with(addr, &[("Forwarded", "for=198.51.100.3")]).await;
    assert_eq!(status, 429);
}

#[tokio::test]
async fn a_trusted_proxy_forwards_the_client_address() {
    let server = redis();
    let layer = builder(
        KeyExtractor::forwarded_ip(["127.0.0.0/8".parse().expect("cidr")]),
        &server.url(),
        "proxy",
    )
    .rule(Rule::fixed_window("api", 1, std::time::Duration::from_secs(60)).expect("valid"))
    .build()
    .expect("layer");
    let addr = serve(layer).await;
    let one = [("X-Forwarded-For", "6.6.6.6, 198.51.100.1")];
    assert_eq!(
        get_with(addr, &one).await.2,
        "key=198.51.100.1 fail_open=false"
    );
    assert_eq!(get_with(addr, &one).await.0, 429);
    let other = [("Forwarded", "for=\"[2001:db8::1]:443\"")];
    assert_eq!(
        get_with(addr, &other).await.2,
        "key=2001:db8::1 fail_open=false"
    );
}

#[tokio::test]
async fn a_closure_gives_key_and_cost() {
    let server = redis();
    let layer = builder(
        KeyExtractor::from_fn("the tenant path segment", |req: &Request| {
            req.uri().path().split('/').nth(2).map(str::to_string)
        }),
        &server.url(),
        "closure",
    )
    .rule(Rule::token_bucket("bytes", 100, 0.01).expect("valid"))
    .cost(|req: &Request| {
        req.headers()
            .get("x-weight")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(1)
    })
    .build()
    .expect("layer");
    let app = Router::new()
        .route("/t/{tenant}", get(|| async { "ok" }))
        .layer(layer);
    let addr = support::serve_app(app).await;
    let heavy = [("X-Weight", "60")];
    let call = |path: &'static str, h: &'static [(&'static str, &'static str)]| async move {
        http_with(addr, "GET", path, h, "").await.0
    };
    assert_eq!(call("/t/acme", &[("X-Weight", "60")]).await, 200);
    assert_eq!(http_with(addr, "GET", "/t/acme", &heavy, "").await.0, 429);
    assert_eq!(call("/t/other", &[("X-Weight", "60")]).await, 200);
    assert_eq!(call("/t/acme", &[("X-Weight", "40")]).await, 200);
    assert_eq!(
        call("/t/acme", &[("X-Weight", "101")]).await,
        413,
        "more than the bucket holds"
    );
}

#[tokio::test]
async fn build_errors_name_what_is_missing() {
    let no_rules = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(RedisTarget::parse("redis://127.0.0.1:1").expect("url"))
        .build()
        .expect_err("no rules");
    assert!(no_rules.to_string().contains(".rule("), "{no_rules}");
    let rule = Rule::fixed_window("api", 1, std::time::Duration::from_secs(1)).expect("valid");
    let twice = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .redis(RedisTarget::parse("redis://127.0.0.1:1").expect("url"))
        .rule(rule.clone())
        .rule(rule.clone())
        .build()
        .expect_err("duplicate");
    assert!(twice.to_string().contains("\"api\""), "{twice}");
    let limiter = common::limiter_with("redis://127.0.0.1:1", LimiterOptions::default());
    let both = RateLimitLayer::builder(KeyExtractor::peer_ip())
        .limiter(limiter)
        .failure_mode(FailureMode::Closed)
        .rule(rule)
        .build()
        .expect_err("options beside a limiter");
    assert!(both.to_string().contains("LimiterOptions"), "{both}");
}

#[tokio::test]
async fn layers_sharing_metrics_each_count_their_rules_while_they_live() {
    let metrics = Metrics::new();
    let layer = |names: &[&str]| {
        names
            .iter()
            .fold(
                RateLimitLayer::builder(KeyExtractor::peer_ip())
                    .redis(RedisTarget::parse("redis://127.0.0.1:1").expect("url"))
                    .metrics(metrics.clone()),
                |b, name| {
                    b.rule(
                        Rule::fixed_window(*name, 1, std::time::Duration::from_secs(1))
                            .expect("valid"),
                    )
                },
            )
            .build()
            .expect("builds")
    };
    let api = layer(&["api", "api-burst"]);
    let admin = layer(&["admin"]);
    let service = tower_layer::Layer::layer(&admin, ());
    assert!(metrics.render().contains("ratelockr_active_rules 3"));
    drop(api);
    assert!(metrics.render().contains("ratelockr_active_rules 1"));
    // The service built from a layer keeps its rules counted after the layer is gone.
    drop(admin);
    assert!(metrics.render().contains("ratelockr_active_rules 1"));
    drop(service);
    assert!(metrics.render().contains("ratelockr_active_rules 0"));
}

#[tokio::test]
async fn degraded_mode_admits_the_local_share_then_denies_with_its_own_wait() {
    // Redis is not there at all: each key gets this instance's share (all of it: 1 instance).
    let layer = builder(KeyExtractor::peer_ip(), &common::dead_url(), "degraded")
        .rule(Rule::fixed_window("api", 2, std::time::Duration::from_secs(60)).expect("valid"))
        .failure_mode(FailureMode::Degraded { instances: 1 })
        .fail_open_header(true)
        .headers_on_admitted(true)
        .build()
        .expect("layer");
    let addr = serve(layer).await;
    for _ in 0..2 {
        let (status, headers, body) = get_with(addr, &[]).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "key=127.0.0.1 fail_open=true")
        );
        assert_eq!(headers.get("ratelimit-fail-open"), Some("1"));
    }
    let (status, headers, _) = get_with(addr, &[]).await;
    assert_eq!(status, 429, "past the local share");
    assert!(headers.get("retry-after").is_some());
    assert_eq!(headers.get("ratelimit"), None, "Redis's state is unknown");
}
