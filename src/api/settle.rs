//! `POST /api/settle`: a caller that was charged an estimate (the `cost` of its check) settles
//! its request with the actual cost, `{"policy" | "rule", "key", "charged", "actual"}`,
//! answered `{"settled": bool}` (false: nothing changed: `actual == charged`, `charged == 0`,
//! only concurrency limits, or the state to give back to is gone). The difference goes to
//! every limit of the key's tier in one call ([`crate::settle`]).

use super::error::ApiError;
use super::DecisionApi;
use crate::settle::SettleError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

/// `{"policy" | "rule", "key", "charged", "actual"}`; any other field is refused by name.
/// The numbers are read as JSON values so that a bad one is refused naming its field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettleRequest {
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    charged: Option<serde_json::Value>,
    #[serde(default)]
    actual: Option<serde_json::Value>,
}

/// A count the body must carry under `field`: an integer >= 0.
fn count(value: Option<&serde_json::Value>, field: &str) -> Result<u64, ApiError> {
    match value {
        None => Err(ApiError::bad(
            "missing_field",
            field,
            format!("the body must carry \"{field}\", an integer >= 0"),
        )),
        Some(v) => v.as_u64().ok_or_else(|| {
            ApiError::bad(
                "invalid_cost",
                field,
                format!("\"{field}\" must be an integer >= 0, got {v}"),
            )
        }),
    }
}

impl DecisionApi {
    async fn settle(&self, body: &[u8]) -> Result<bool, ApiError> {
        let request: SettleRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid_json(format!(
                "the body must be {{\"policy\" or \"rule\", \"key\", \"charged\", \"actual\"}}: {e}"
            ))
        })?;
        let key = request.key.as_deref().ok_or_else(|| {
            ApiError::bad(
                "missing_field",
                "key",
                "the body must carry \"key\", the client key",
            )
        })?;
        let charged = count(request.charged.as_ref(), "charged")?;
        let actual = count(request.actual.as_ref(), "actual")?;
        let policy = self.named_policy(request.policy.as_deref(), request.rule.as_deref())?;
        self.limiter
            .settle(&policy, key, charged, actual)
            .await
            .map_err(|e| match e {
                SettleError::Key(_) => ApiError::bad("invalid_key", "key", e.to_string()),
                SettleError::Cost { field, .. } => {
                    ApiError::bad("invalid_cost", field, e.to_string())
                }
                SettleError::Redis(failure) => ApiError {
                    status: 503,
                    code: "redis",
                    message: format!("Redis failed: {failure}"),
                    field: None,
                },
            })
    }
}

/// `POST /api/settle`.
pub(super) async fn settle(
    State(api): State<DecisionApi>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return super::body_refused(rejection, super::MAX_BODY).into_response(),
    };
    match api.settle(&body).await {
        Ok(settled) => Json(json!({ "settled": settled })).into_response(),
        Err(err) => err.into_response(),
    }
}
