//! The decision endpoint, for services in any language (design.md, "HTTP: ... the decision
//! endpoint" and "Policies"): `POST /api/check`, `POST /api/check/batch`, `GET /api/rules` and
//! `GET /api/policies`,
//! served by `ratelockr serve` beside `GET /api/metrics`.
//!
//! `POST /api/check` takes `{"rule": "<name>" | {<a rule as JSON>}, "key": "...", "cost": 1}`
//! or `{"policy": "<name>", "key": "...", "cost": 1}` (cost optional, default 1) and answers 200
//! with the decision, its HTTP answer (`status`, the status a service would send) and
//! `"headers": {name: value}` from [`crate::headers`]. The reply carries the same headers as
//! HTTP headers too. A denial is a decision, not an error. A malformed request is 400 with
//! `{"error": {"code", "message", "field"}}`; a rule or policy name not loaded is 404 (code
//! `unknown_rule` or `unknown_policy`).
//!
//! `POST /api/check/batch` takes a JSON array of the same requests (at most [`MAX_BATCH`]) and
//! answers an array of the same decision objects in order, an item's error at its place.
//!
//! A decision under concurrency limits carries `"lease"`: the caller gives it back with
//! `POST /api/release` (or renews it with `POST /api/renew`), `{"policy" | "rule", "key",
//! "lease"}`, when its request ends; one never given back expires after its `lease_ms`.
//!
//! A request is read into typed fields that borrow from the body; a loaded rule or policy is
//! borrowed, not cloned; the header fields are made once as `HeaderValue`s, and the JSON body
//! is written once.
//!
//! - `request` the typed request, and the errors that name its fields
//! - `rule`    a rule's decision, by name or inline
//! - `policy`  a policy's decision from the file in force, and the list of what is loaded
//! - `batch`   many decisions in one request, sent to Redis together
//! - `lease`   a lease given back or renewed by its id
//! - `settle`  a request charged an estimate, settled with its actual cost
//! - `reply`   the header fields and the JSON body, each made once
//! - `error`   a refusal in the error shape

mod batch;
mod error;
mod lease;
mod policy;
mod reply;
mod request;
mod rule;
mod settle;

pub use batch::MAX_BATCH;

use crate::limiter::Limiter;
use crate::policy::PolicyWatch;
use crate::rule::Rule;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use error::ApiError;
use reply::Headers;
use request::{CheckRequest, Target};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where decisions are asked for.
pub const CHECK_PATH: &str = "/api/check";
/// Where many decisions are asked for in one request (a JSON array of check requests).
pub const CHECK_BATCH_PATH: &str = "/api/check/batch";
/// Where the loaded rules are listed.
pub const RULES_PATH: &str = "/api/rules";
/// Where the policies in force are listed.
pub const POLICIES_PATH: &str = "/api/policies";
/// Where a lease is given back: `{"policy" | "rule", "key", "lease"}` → `{"released": bool}`.
pub const RELEASE_PATH: &str = "/api/release";
/// Where a lease is renewed: the same body → `{"renewed": bool}`.
pub const RENEW_PATH: &str = "/api/renew";
/// Where a request charged an estimate is settled: `{"policy" | "rule", "key", "charged",
/// "actual"}` → `{"settled": bool}`.
pub const SETTLE_PATH: &str = "/api/settle";

/// The endpoint's state: one limiter, the rules loaded at start and the policies file in
/// force (reloaded by its watch).
#[derive(Debug, Clone)]
pub struct DecisionApi {
    limiter: Limiter,
    rules: Arc<BTreeMap<String, Rule>>,
    policies: Option<PolicyWatch>,
}

/// A decision of either kind, as the reply's JSON.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum CheckReply<'a> {
    Rule(rule::RuleReply<'a>),
    Policy(policy::PolicyReply),
}

impl CheckReply<'_> {
    /// The header fields, taken out for the HTTP answer once the body is written.
    fn take_headers(&mut self) -> Headers {
        match self {
            CheckReply::Rule(r) => std::mem::take(&mut r.headers),
            CheckReply::Policy(p) => std::mem::take(&mut p.headers),
        }
    }
}

impl DecisionApi {
    /// The endpoint over `limiter` with `rules` (names are unique: a rules file guarantees it).
    pub fn new(limiter: Limiter, rules: Vec<Rule>) -> Self {
        let rules = rules
            .into_iter()
            .map(|r| (r.name().to_string(), r))
            .collect();
        DecisionApi {
            limiter,
            rules: Arc::new(rules),
            policies: None,
        }
    }

    /// Decides `{"policy": ...}` requests with the policies `watch` holds in force.
    pub fn with_policies(mut self, watch: PolicyWatch) -> Self {
        self.policies = Some(watch);
        self
    }

    /// `POST /api/check`, `POST /api/check/batch`, `POST /api/release`, `POST /api/renew`,
    /// `GET /api/rules` and `GET /api/policies`.
    pub fn router(self) -> Router {
        Router::new()
            .route(
                CHECK_PATH,
                post(check)
                    .layer(DefaultBodyLimit::max(MAX_BODY))
                    .fallback(method_not_allowed),
            )
            .route(
                CHECK_BATCH_PATH,
                post(batch::check_batch)
                    .layer(DefaultBodyLimit::max(batch::MAX_BATCH_BODY))
                    .fallback(method_not_allowed),
            )
            .route(
                RELEASE_PATH,
                post(lease::release)
                    .layer(DefaultBodyLimit::max(MAX_BODY))
                    .fallback(method_not_allowed),
            )
            .route(
                RENEW_PATH,
                post(lease::renew)
                    .layer(DefaultBodyLimit::max(MAX_BODY))
                    .fallback(method_not_allowed),
            )
            .route(
                SETTLE_PATH,
                post(settle::settle)
                    .layer(DefaultBodyLimit::max(MAX_BODY))
                    .fallback(method_not_allowed),
            )
            .route(RULES_PATH, get(list_rules))
            .route(POLICIES_PATH, get(list_policies))
            .with_state(self)
    }

    /// One decision from a request body (the JSON above): what `POST /api/check` does.
    pub(crate) async fn check<'a>(&'a self, body: &[u8]) -> Result<CheckReply<'a>, ApiError> {
        let request = CheckRequest::parse(body)?;
        self.decide(&request).await
    }

    /// One parsed request's decision.
    async fn decide<'a>(&'a self, request: &CheckRequest<'_>) -> Result<CheckReply<'a>, ApiError> {
        match &request.target {
            Target::Policy(name) => self
                .check_policy(name, &request.key, request.cost)
                .await
                .map(CheckReply::Policy),
            target => self
                .check_rule(target, &request.key, request.cost)
                .await
                .map(CheckReply::Rule),
        }
    }
}

/// The largest request body, in bytes: a decision request is a few hundred.
pub const MAX_BODY: usize = 64 * 1024;

async fn check(State(api): State<DecisionApi>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_refused(rejection, MAX_BODY).into_response(),
    };
    match api.check(&body).await {
        Ok(mut reply) => {
            // The body holds the headers too: written before they move into the HTTP answer.
            let body = match reply::write(&reply) {
                Ok(body) => body,
                Err(error) => return error.into_response(),
            };
            reply::respond(body, reply.take_headers())
        }
        Err(err) => err.into_response(),
    }
}

/// Any method but POST at `/api/check`: 405 in the error shape, with `Allow: POST`.
async fn method_not_allowed() -> Response {
    let mut response = ApiError {
        status: 405,
        code: "method_not_allowed",
        message: format!(
            "{CHECK_PATH}, {CHECK_BATCH_PATH}, {RELEASE_PATH}, {RENEW_PATH} and {SETTLE_PATH} take POST with a JSON body"
        ),
        field: None,
    }
    .into_response();
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("POST"),
    );
    response
}

/// A body axum could not read (too large, cut short), in the error shape.
fn body_refused(rejection: BytesRejection, limit: usize) -> ApiError {
    let status = rejection.status();
    ApiError {
        status: status.as_u16(),
        code: if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "invalid_body"
        },
        message: format!(
            "{} (a request is at most {limit} bytes)",
            rejection.body_text()
        ),
        field: None,
    }
}

async fn list_rules(State(api): State<DecisionApi>) -> Json<Value> {
    Json(json!({ "rules": api.rules.values().collect::<Vec<_>>() }))
}

async fn list_policies(State(api): State<DecisionApi>) -> Json<Value> {
    Json(api.list_policies())
}
