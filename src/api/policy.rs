//! A policy's decision at `POST /api/check` (`{"policy": "api", ...}`) and the list at
//! `GET /api/policies`, from the policies file in force ([`crate::policy::PolicyWatch`]: a
//! decision takes the set once, so a reload never shows it half a file).

use super::error::ApiError;
use super::reply::Headers;
use super::{DecisionApi, POLICIES_PATH};
use crate::headers::policy_answer;
use crate::policy::PolicyCheckError;
use crate::Decision;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::UNIX_EPOCH;

/// A policy's decision (every field of a policy's [`Decision`]) and the HTTP answer it implies.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PolicyReply {
    #[serde(flatten)]
    pub decision: Decision,
    /// 200 or 429: what the asking service should answer its own client (a shadow denial is
    /// a 200).
    pub status: u16,
    pub headers: Headers,
}

impl DecisionApi {
    pub(super) async fn check_policy(
        &self,
        name: &str,
        key: &str,
        cost: u64,
    ) -> Result<PolicyReply, ApiError> {
        let unknown = |loaded: &str| ApiError {
            status: 404,
            code: "unknown_policy",
            message: format!("no policy named {name:?} is loaded ({loaded})"),
            field: Some("policy".into()),
        };
        let Some(watch) = &self.policies else {
            return Err(unknown("serve was started without --policies"));
        };
        // The set in force, held for this decision: the policy is borrowed from it.
        let loaded = watch.current();
        let policy = loaded
            .get(name)
            .ok_or_else(|| unknown(&format!("GET {POLICIES_PATH} lists them")))?;
        let decision = self
            .limiter
            .check_policy_cost(policy, key, cost)
            .await
            .map_err(|e| match e {
                PolicyCheckError::InvalidCost { .. } => {
                    ApiError::bad("invalid_cost", "cost", e.to_string())
                }
                PolicyCheckError::Key(_) => ApiError::bad("invalid_key", "key", e.to_string()),
                // Only the try_ methods return it; the limiter decided by its failure mode.
                PolicyCheckError::Redis(_) => ApiError {
                    status: 503,
                    code: "redis",
                    message: e.to_string(),
                    field: None,
                },
            })?;
        // The caller holds the lease by its id (`POST /api/release`), not this reply.
        decision.keep_lease();
        let answer = policy_answer(policy, &decision);
        Ok(PolicyReply {
            decision,
            status: answer.status,
            headers: Headers::from_answer(answer.headers),
        })
    }

    /// `{"file", "modified_ms", "policies": [...]}`: what is in force and since when (the
    /// file's modification time, ms since the epoch); nulls and an empty list without a file.
    pub(super) fn list_policies(&self) -> Value {
        let Some(watch) = &self.policies else {
            return json!({ "file": null, "modified_ms": null, "policies": [] });
        };
        let loaded = watch.current();
        let modified_ms = loaded
            .modified
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64);
        json!({
            "file": loaded.path.display().to_string(),
            "modified_ms": modified_ms,
            "policies": loaded.policies,
        })
    }
}
