//! The decision endpoint, for services in any language (design.md, "HTTP: ... the decision
//! endpoint"): `POST /api/check` and `GET /api/rules`, served by `ratelockr serve` beside
//! `GET /api/metrics`.
//!
//! `POST /api/check` takes `{"rule": "<name>" | {<a rule as JSON>}, "key": "...", "cost": 1}`
//! (cost optional, default 1) and answers 200 with the decision, its HTTP answer (`status`, the
//! status a service would send) and `"headers": {name: value}` from [`crate::headers`]. The
//! reply carries the same headers as HTTP headers too. A denial is a decision, not an error.
//! A malformed request is 400 with `{"error": {"code", "message", "field"}}`; a rule name not
//! loaded is 404 (code `unknown_rule`, field `rule`).

use crate::decision::Decision;
use crate::headers::http_answer;
use crate::limiter::Limiter;
use crate::rule::{Algorithm, Rule, RuleError};
use axum::body::Bytes;
use axum::extract::State;
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

/// The endpoint's state: one limiter and the rules loaded at start.
#[derive(Debug, Clone)]
pub struct DecisionApi {
    limiter: Limiter,
    rules: Arc<BTreeMap<String, Rule>>,
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
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        (status, Json(json!({ "error": self }))).into_response()
    }
}

/// A decision and the HTTP answer it implies.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckReply {
    pub rule: String,
    #[serde(flatten)]
    pub decision: Decision,
    /// 200 or 429: what the asking service should answer its own client.
    pub status: u16,
    pub headers: BTreeMap<String, String>,
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
        }
    }

    /// `POST /api/check` and `GET /api/rules`.
    pub fn router(self) -> Router {
        Router::new()
            .route(CHECK_PATH, post(check))
            .route(RULES_PATH, get(list_rules))
            .with_state(self)
    }

    /// One decision from a request body (the JSON above): what `POST /api/check` does.
    pub(crate) async fn check(&self, body: &[u8]) -> Result<CheckReply, ApiError> {
        let request: Value = serde_json::from_slice(body).map_err(|e| ApiError {
            status: 400,
            code: "invalid_json",
            message: format!("the body is not JSON: {e}"),
            field: None,
        })?;
        let Value::Object(fields) = request else {
            return Err(ApiError {
                status: 400,
                code: "invalid_json",
                message: "the body must be a JSON object {\"rule\", \"key\", \"cost\"}".into(),
                field: None,
            });
        };
        let rule = self.rule(fields.get("rule"))?;
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
                    format!("cost must be a whole number from 1 to the rule's limit, got {v}"),
                )
            })?,
        };
        let decision = self
            .limiter
            .check_cost(&rule, key, cost)
            .await
            .map_err(|e| match e {
                RuleError::InvalidCost { .. } => {
                    ApiError::bad("invalid_cost", "cost", e.to_string())
                }
                RuleError::InvalidKey(_) => ApiError::bad("invalid_key", "key", e.to_string()),
                other => ApiError::bad("invalid_rule", "rule", other.to_string()),
            })?;
        let answer = http_answer(&rule, &decision);
        Ok(CheckReply {
            rule: rule.name().to_string(),
            decision,
            status: answer.status,
            headers: answer.headers.into_iter().collect(),
        })
    }

    fn rule(&self, value: Option<&Value>) -> Result<Rule, ApiError> {
        match value {
            None | Some(Value::Null) => Err(ApiError::bad(
                "missing_field",
                "rule",
                "rule is required: a loaded rule's name or a rule as JSON",
            )),
            Some(Value::String(name)) => self.rules.get(name).cloned().ok_or_else(|| ApiError {
                status: 404,
                code: "unknown_rule",
                message: format!(
                    "no rule named {name:?} is loaded (GET {RULES_PATH} lists them; or give the rule as JSON)"
                ),
                field: Some("rule".into()),
            }),
            Some(Value::Object(object)) => inline_rule(object),
            Some(_) => Err(ApiError::bad(
                "invalid_rule",
                "rule",
                "rule must be a loaded rule's name or a rule as JSON",
            )),
        }
    }
}

/// A rule given inline, its errors naming the field inside it (`rule.capacity`, ...).
fn inline_rule(object: &serde_json::Map<String, Value>) -> Result<Rule, ApiError> {
    let name = match object.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(ApiError::bad(
                "invalid_rule",
                "rule.name",
                "an inline rule needs a \"name\" (telemetry counts under it)",
            ))
        }
    };
    let algorithm: Algorithm =
        serde_json::from_value(Value::Object(object.clone())).map_err(|e| {
            let text = e.to_string();
            // serde names the missing or mistyped field in backquotes: point at it.
            let field = text
                .split('`')
                .nth(1)
                .filter(|f| object.contains_key(*f) || text.starts_with("missing field"))
                .map_or("rule.algorithm".to_string(), |f| format!("rule.{f}"));
            ApiError::bad(
                "invalid_rule",
                &field,
                format!("invalid inline rule: {text}"),
            )
        })?;
    Rule::new(name, algorithm).map_err(|e| {
        let field = match &e {
            RuleError::InvalidParameter { parameter, .. } => format!("rule.{parameter}"),
            RuleError::InvalidName(_) => "rule.name".into(),
            _ => "rule".into(),
        };
        ApiError::bad("invalid_rule", &field, e.to_string())
    })
}

async fn check(State(api): State<DecisionApi>, body: Bytes) -> Response {
    match api.check(&body).await {
        Ok(reply) => {
            let mut response = Json(&reply).into_response();
            for (name, value) in &reply.headers {
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

async fn list_rules(State(api): State<DecisionApi>) -> Json<Value> {
    Json(json!({ "rules": api.rules.values().collect::<Vec<_>>() }))
}
