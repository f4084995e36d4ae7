//! `POST /api/check/batch`: a JSON array of check requests, each as `POST /api/check` takes
//! it, answered by a JSON array of the same decision objects in the same order. An item that
//! cannot be decided is answered at its place in the error shape (`{"error": {"code",
//! "message", "field"}, "status"}`), without failing the others. Every decision is sent at
//! once on the limiter's shared connection, so the batch's script calls go to Redis together
//! (pipelined: one round trip, not one per item), and each still fails open on its own.

use super::error::ApiError;
use super::reply::{respond, write, Headers};
use super::request::CheckRequest;
use super::{CheckReply, DecisionApi, CHECK_BATCH_PATH};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// The most check requests one batch may hold.
pub const MAX_BATCH: usize = 1000;

/// The largest batch body, in bytes: [`MAX_BATCH`] requests of about a kilobyte each.
pub(super) const MAX_BATCH_BODY: usize = 1024 * 1024;

/// One item's answer: its decision, or why it has none.
enum Item<'a> {
    Decided(CheckReply<'a>),
    Refused(ApiError),
}

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Refused<'e> {
            error: &'e ApiError,
            /// What `POST /api/check` would have answered this item (400, 404, ...).
            status: u16,
        }
        match self {
            Item::Decided(reply) => reply.serialize(serializer),
            Item::Refused(error) => Refused {
                error,
                status: error.status,
            }
            .serialize(serializer),
        }
    }
}

impl DecisionApi {
    /// Every item's answer, in order.
    async fn check_many<'a>(&'a self, items: &[&RawValue]) -> Vec<Item<'a>> {
        let requests: Vec<Result<CheckRequest<'_>, ApiError>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| CheckRequest::parse_item(item, i))
            .collect();
        // All polled in one go: each EVALSHA is queued on the shared connection before any
        // reply is awaited, so they leave together.
        futures::future::join_all(requests.iter().map(|request| async move {
            match request {
                Ok(request) => match self.decide(request).await {
                    Ok(reply) => Item::Decided(reply),
                    Err(error) => Item::Refused(error),
                },
                Err(error) => Item::Refused(error.clone()),
            }
        }))
        .await
    }
}

pub(super) async fn check_batch(
    State(api): State<DecisionApi>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return super::body_refused(rejection, MAX_BATCH_BODY).into_response();
        }
    };
    let items: Vec<&RawValue> = match serde_json::from_slice(&body) {
        Ok(items) => items,
        Err(e) => {
            return ApiError::invalid_json(format!(
                "the body must be a JSON array of check requests \
                 ([{{\"rule\" or \"policy\", \"key\", \"cost\"}}, ...]): {e}"
            ))
            .into_response()
        }
    };
    if items.len() > MAX_BATCH {
        return ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE.as_u16(),
            code: "batch_too_large",
            message: format!(
                "a batch holds at most {MAX_BATCH} requests, this one {} (split it into several \
                 POST {CHECK_BATCH_PATH})",
                items.len()
            ),
            field: None,
        }
        .into_response();
    }
    let answers = api.check_many(&items).await;
    match write(&answers) {
        Ok(body) => respond(body, Headers::default()),
        Err(error) => error.into_response(),
    }
}
