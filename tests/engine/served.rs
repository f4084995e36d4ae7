//! The decision endpoint on a free loopback port, over a policies file written for the test,
//! and its JSON replies read: what the endpoint tests of leases and settle share.

use ratelockr::api::DecisionApi;
use ratelockr::policy::{parse_policies, Format, PolicyWatch};
use ratelockr::{Limiter, Rule};
use serde_json::Value;
use std::net::SocketAddr;

/// `DecisionApi` over `limiter` with `rules` and the TOML `policies` (checked first), served
/// until the test ends; the directory holds the file.
pub async fn serve_policies(
    limiter: Limiter,
    rules: Vec<Rule>,
    policies: &str,
) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policies.toml");
    std::fs::write(&file, policies).expect("write");
    parse_policies(policies, Format::Toml).expect("valid policies");
    let watch = PolicyWatch::load(&file).expect("loads");
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = DecisionApi::new(limiter, rules)
        .with_policies(watch)
        .router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, dir)
}

/// A reply body as JSON, or a failure that shows it.
pub fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// POSTs each `(body, status, code, field)` to `path` at `addr` and checks it is refused so: the
/// status, and the error shape's code and field.
pub async fn assert_refusals(addr: SocketAddr, path: &str, cases: &[(&str, u16, &str, &str)]) {
    for &(body, status, code, field) in cases {
        let (got, _, reply) = crate::common::http(addr, "POST", path, body).await;
        let error = &json(&reply)["error"];
        assert_eq!(
            (got, &error["code"], &error["field"]),
            (status, &Value::from(code), &Value::from(field)),
            "{body}: {reply}"
        );
    }
}
