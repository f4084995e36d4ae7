//! A layer held to a policy of a file ([`crate::RateLimitBuilder::from_file`]): every limit of
//! the key's tier in one script call, all or nothing, with the file reloaded when it changes
//! ([`ratelockr::policy::PolicyWatch`]: a request takes the policy in force once, so a reload
//! never shows it half a file).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ratelockr::headers::{policy_answer, HttpAnswer};
use ratelockr::policy::{PolicyCheckError, PolicyWatch, POLL_EVERY};
use ratelockr::{Decision, Limiter};
use std::sync::Once;

/// The policy a layer decides with, and the watch that keeps its file current.
pub(crate) struct PolicySource {
    pub(crate) watch: PolicyWatch,
    pub(crate) name: String,
    /// The file is polled from the first request on (a runtime is running then).
    watching: Once,
}

impl PolicySource {
    pub(crate) fn new(watch: PolicyWatch, name: String) -> Self {
        PolicySource {
            watch,
            name,
            watching: Once::new(),
        }
    }

    /// The policy's decision for `key` and its HTTP answer; or the response for a request it
    /// cannot decide (an impossible cost or key), or for a policy the file no longer holds.
    pub(crate) async fn decide(
        &self,
        limiter: &Limiter,
        key: &str,
        cost: u64,
    ) -> Result<(Decision, HttpAnswer), Response> {
        self.watching
            .call_once(|| drop(self.watch.spawn(POLL_EVERY)));
        let Some(policy) = self.watch.policy(&self.name) else {
            let message = format!(
                "policy {:?} is no longer in {}: the rate limit cannot be applied\n",
                self.name,
                self.watch.path().display()
            );
            tracing::error!("{}", message.trim_end());
            return Err((StatusCode::SERVICE_UNAVAILABLE, message).into_response());
        };
        let decision = limiter
            .check_policy_cost(&policy, key, cost)
            .await
            .map_err(|err| {
                let status = match err {
                    PolicyCheckError::InvalidCost { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                    _ => StatusCode::BAD_REQUEST,
                };
                (status, format!("policy {:?}: {err}\n", self.name)).into_response()
            })?;
        let answer = policy_answer(&policy, &decision);
        Ok((decision, answer))
    }
}
