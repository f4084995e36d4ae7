//! The decision endpoint, for services in any language (design.md, "HTTP: ... the decision
//! endpoint" and "Policies"): `POST /api/check`, `GET /api/rules` and `GET /api/policies`,
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
//! - `rule`    a rule's decision, by name or inline
//! - `policy`  a policy's decision from the file in force, and the list of what is loaded

mod policy;
mod rule;

use crate::limiter::Limiter;
use crate::policy::PolicyWatch;
use crate::rule::Rule;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where decisions are asked for.
pub const CHECK_PATH: &str = "/api/check";
/// Where the loaded rules are listed.
pub const RULES_PATH: &str = "/api/rules";
/// Where the policies in force are listed.
pub const POLICIES_PATH: &str = "/api/policies";

/// The endpoint's state: one limiter, the rules loaded at start and the policies file in
/// force (reloaded by its watch).
#[derive(Debug, Clone)]
pub struct DecisionApi {
    limiter: Limiter,
    rules: Arc<BTreeMap<String, Rule>>,
    policies: Option<PolicyWatch>,
}

/// A request refused, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
}

impl ApiError {
    fn bad(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            code,
            message: message.into(),
            field: Some(field.to_string()),
        }
    }

    fn invalid_json(message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            code: "invalid_json",
            message: message.into(),
            field: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (status, Json(json!({ "error": self }))).into_response()
    }
}

/// The fields every check has, whatever it is checked against.
#[derive(Debug, Clone, Copy)]
struct Request<'a> {
    key: &'a str,
    cost: u64,
}

/// What a check is asked against: the request's `rule` or `policy` value.
enum Target<'a> {
    Rule(&'a Value),
    Policy(&'a Value),
}

/// A decision of either kind, as the reply's JSON.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum CheckReply {
    Rule(rule::RuleReply),
    Policy(policy::PolicyReply),
}

impl CheckReply {
    fn headers(&self) -> &BTreeMap<String, String> {
        match self {
            CheckReply::Rule(r) => &r.headers,
            CheckReply::Policy(p) => &p.headers,
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

    /// `POST /api/check`, `GET /api/rules` and `GET /api/policies`.
    pub fn router(self) -> Router {
        Router::new()
            .route(
                CHECK_PATH,
                post(check)
                    .layer(DefaultBodyLimit::max(MAX_BODY))
                    .fallback(method_not_allowed),
            )
            .route(RULES_PATH, get(list_rules))
            .route(POLICIES_PATH, get(list_policies))
            .with_state(self)
    }

    /// One decision from a request body (the JSON above): what `POST /api/check` does.
    pub(crate) async fn check(&self, body: &[u8]) -> Result<CheckReply, ApiError> {
        let request: Value = serde_json::from_slice(body).map_err(|e| {
            let error = ApiError::invalid_json(format!("the body is not JSON: {e}"));
            match (e.classify(), number_field(body, e.column())) {
                // `"cost": 1e400`: JSON, but no number a field can hold; say which field.
                (serde_json::error::Category::Syntax, Some(field))
                    if e.to_string().contains("number out of range") =>
                {
                    ApiError {
                        code: "invalid_number",
                        field: Some(field),
                        ..error
                    }
                }
                _ => error,
            }
        })?;
        let Value::Object(fields) = request else {
            return Err(ApiError::invalid_json(
                "the body must be a JSON object {\"rule\" or \"policy\", \"key\", \"cost\"}",
            ));
        };
        // A field the endpoint does not know (a typo of cost, a now_ms it does not take) is
        // refused by name: silently dropped, it would decide something else than was asked.
        if let Some(unknown) = fields
            .keys()
            .find(|f| !REQUEST_FIELDS.contains(&f.as_str()))
        {
            return Err(ApiError::bad(
                "unknown_field",
                unknown,
                format!(
                    "unknown field {unknown:?}: a request has {}",
                    REQUEST_FIELDS.join(", ")
                ),
            ));
        }
        let present = |name: &str| fields.get(name).filter(|v| !v.is_null());
        let target = match (present("rule"), present("policy")) {
            (Some(rule), None) => Target::Rule(rule),
            (None, Some(policy)) => Target::Policy(policy),
            (Some(_), Some(_)) => {
                return Err(ApiError::bad(
                    "invalid_policy",
                    "policy",
                    "give either rule or policy, not both",
                ))
            }
            (None, None) => {
                return Err(ApiError::bad(
                    "missing_field",
                    "rule",
                    "rule or policy is required: a loaded rule's name, a rule as JSON, or a loaded policy's name",
                ))
            }
        };
        let key = match fields.get("key") {
            Some(Value::String(key)) => key,
            Some(_) => return Err(ApiError::bad("invalid_key", "key", "key must be a string")),
            None => return Err(ApiError::bad("missing_field", "key", "key is required")),
        };
        let cost = match fields.get("cost") {
            None | Some(Value::Null) => 1,
            Some(v) => v.as_u64().ok_or_else(|| {
                ApiError::bad(
                    "invalid_cost",
                    "cost",
                    format!("cost must be a whole number from 1 to the limit, got {v}"),
                )
            })?,
        };
        let request = Request { key, cost };
        match target {
            Target::Rule(rule) => self.check_rule(rule, request).await.map(CheckReply::Rule),
            Target::Policy(policy) => self
                .check_policy(policy, request)
                .await
                .map(CheckReply::Policy),
        }
    }
}

/// The field whose number ends at `column` (1-based, on a one-line body) of `body`: `"cost"`
/// for `{"key": "k", "cost": 1e400` with the column at its end.
fn number_field(body: &[u8], column: usize) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let before = text.get(..column.min(text.len()))?;
    let key = regex::Regex::new(r#""([^"\\]{1,64})"\s*:\s*[-+0-9.eE]*$"#).ok()?;
    Some(key.captures(before)?.get(1)?.as_str().to_string())
}

/// The fields of a decision request.
const REQUEST_FIELDS: [&str; 4] = ["rule", "policy", "key", "cost"];

/// The largest request body, in bytes: a decision request is a few hundred.
pub const MAX_BODY: usize = 64 * 1024;

async fn check(State(api): State<DecisionApi>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let status = rejection.status();
            return ApiError {
                status: status.as_u16(),
                code: if status == StatusCode::PAYLOAD_TOO_LARGE {
                    "body_too_large"
                } else {
                    "invalid_body"
                },
                message: format!(
                    "{} (a request is at most {MAX_BODY} bytes)",
                    rejection.body_text()
                ),
                field: None,
            }
            .into_response();
        }
    };
    match api.check(&body).await {
        Ok(reply) => {
            let mut response = Json(&reply).into_response();
            for (name, value) in reply.headers() {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::try_from(name.as_str()),
                    HeaderValue::try_from(value.as_str()),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Err(err) => err.into_response(),
    }
}

/// Any method but POST at `/api/check`: 405 in the error shape, with `Allow: POST`.
async fn method_not_allowed() -> Response {
    let mut response = ApiError {
        status: 405,
        code: "method_not_allowed",
        message: format!("{CHECK_PATH} takes POST with a JSON body"),
        field: None,
    }
    .into_response();
    response
        .headers_mut()
        .insert(axum::http::header::ALLOW, HeaderValue::from_static("POST"));
    response
}

async fn list_rules(State(api): State<DecisionApi>) -> Json<Value> {
    Json(json!({ "rules": api.rules.values().collect::<Vec<_>>() }))
}

async fn list_policies(State(api): State<DecisionApi>) -> Json<Value> {
    Json(api.list_policies())
}
