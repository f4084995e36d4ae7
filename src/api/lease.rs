//! `POST /api/release` and `POST /api/renew`: a caller gives back (or renews) the lease a
//! decision of `POST /api/check` gave it, by `{"policy" | "rule", "key", "lease"}`, answered
//! `{"released": bool}` or `{"renewed": bool}` (false: the lease had been released before, or
//! had expired, and frees or holds nothing). The lease is held in the concurrency limits of the
//! key's tier, as the check took it.

use super::error::ApiError;
use super::{DecisionApi, POLICIES_PATH, RULES_PATH};
use crate::lease::LeaseOp;
use crate::lease_calls::LeaseError;
use crate::policy::Policy;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

/// `{"policy" | "rule", "key", "lease"}`; any other field is refused by name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseRequest {
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    key: String,
    lease: String,
}

impl DecisionApi {
    /// The lease a request names, in the concurrency limits of its policy (or loaded rule).
    async fn lease_call(&self, body: &[u8], op: LeaseOp) -> Result<bool, ApiError> {
        let request: LeaseRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::invalid_json(format!(
                "the body must be {{\"policy\" or \"rule\", \"key\", \"lease\"}}: {e}"
            ))
        })?;
        let policy = self.named_policy(request.policy.as_deref(), request.rule.as_deref())?;
        let lease = self
            .limiter
            .lease_of(&policy, &request.key, &request.lease)
            .map_err(|e| match e {
                LeaseError::NoConcurrencyLimit { .. } => {
                    let field = if request.rule.is_some() {
                        "rule"
                    } else {
                        "policy"
                    };
                    ApiError::bad("no_concurrency_limit", field, e.to_string())
                }
                LeaseError::InvalidId(_) => ApiError::bad("invalid_lease", "lease", e.to_string()),
                LeaseError::Key(_) => ApiError::bad("invalid_key", "key", e.to_string()),
            })?;
        let result = match op {
            LeaseOp::Release => lease.release().await,
            LeaseOp::Renew => lease.renew().await,
        };
        result.map_err(|failure| ApiError {
            status: 503,
            code: "redis",
            message: format!("Redis failed: {failure}"),
            field: None,
        })
    }

    /// The policy a request was decided under (the lease's, the settlement's): a loaded policy,
    /// or a loaded rule as the policy of one limit it is decided as (the same keys).
    pub(super) fn named_policy(
        &self,
        policy: Option<&str>,
        rule: Option<&str>,
    ) -> Result<Policy, ApiError> {
        match (policy, rule) {
            (Some(name), None) => {
                let unknown = |loaded: &str| ApiError {
                    status: 404,
                    code: "unknown_policy",
                    message: format!("no policy named {name:?} is loaded ({loaded})"),
                    field: Some("policy".into()),
                };
                let watch = self
                    .policies
                    .as_ref()
                    .ok_or_else(|| unknown("serve was started without --policies"))?;
                let loaded = watch.current();
                loaded
                    .get(name)
                    .cloned()
                    .ok_or_else(|| unknown(&format!("GET {POLICIES_PATH} lists them")))
            }
            (None, Some(name)) => {
                self.rules
                    .get(name)
                    .map(Policy::from_rule)
                    .ok_or_else(|| ApiError {
                        status: 404,
                        code: "unknown_rule",
                        message: format!(
                            "no rule named {name:?} is loaded (GET {RULES_PATH} lists them)"
                        ),
                        field: Some("rule".into()),
                    })
            }
            _ => Err(ApiError::invalid_json(
                "the body names the request's \"policy\" or its \"rule\" (exactly one)",
            )),
        }
    }
}

/// `POST /api/release`.
pub(super) async fn release(
    State(api): State<DecisionApi>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(&api, body, LeaseOp::Release, "released").await
}

/// `POST /api/renew`.
pub(super) async fn renew(
    State(api): State<DecisionApi>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(&api, body, LeaseOp::Renew, "renewed").await
}

async fn answer(
    api: &DecisionApi,
    body: Result<Bytes, BytesRejection>,
    op: LeaseOp,
    field: &str,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return super::body_refused(rejection, super::MAX_BODY).into_response(),
    };
    match api.lease_call(&body, op).await {
        Ok(done) => Json(json!({ field: done })).into_response(),
        Err(err) => err.into_response(),
    }
}
