//! A request refused, as the client sees it: `{"error": {"code", "message", "field"}}` with
//! the status that says why.

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

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
    pub(crate) fn bad(code: &'static str, field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            code,
            message: message.into(),
            field: Some(field.to_string()),
        }
    }

    pub(crate) fn invalid_json(message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            code: "invalid_json",
            message: message.into(),
            field: None,
        }
    }
}

/// `{"error": {...}}` with the error's status.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Shape<'a> {
            error: &'a ApiError,
        }
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        let body = serde_json::to_vec(&Shape { error: &self }).unwrap_or_default();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}
