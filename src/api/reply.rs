//! A decision's reply, built once: the HTTP header fields a decision implies
//! ([`crate::headers`]) become `HeaderValue`s under static names, and the same values are
//! written once into the JSON body's `"headers"` object.

use super::error::ApiError;
use axum::body::Body;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// The fields [`crate::headers`] answers, as the JSON names them and as HTTP sends them.
static FIELDS: [(&str, HeaderName); 6] = [
    (
        "RateLimit-Policy",
        HeaderName::from_static("ratelimit-policy"),
    ),
    ("RateLimit", HeaderName::from_static("ratelimit")),
    ("Retry-After", HeaderName::from_static("retry-after")),
    (
        "X-RateLimit-Limit",
        HeaderName::from_static("x-ratelimit-limit"),
    ),
    (
        "X-RateLimit-Remaining",
        HeaderName::from_static("x-ratelimit-remaining"),
    ),
    (
        "X-RateLimit-Reset",
        HeaderName::from_static("x-ratelimit-reset"),
    ),
];

/// A decision's header fields, each value made once (its text moved in, not copied).
#[derive(Debug, Clone, Default)]
pub(crate) struct Headers(Vec<(usize, HeaderValue)>);

impl Headers {
    /// From [`crate::headers::HttpAnswer::headers`]; a field this endpoint does not know is
    /// left out of both the body and the HTTP header.
    pub(crate) fn from_answer(fields: Vec<(&'static str, String)>) -> Self {
        let mut headers = Vec::with_capacity(fields.len());
        for (name, value) in fields {
            let Some(index) = FIELDS.iter().position(|(n, _)| *n == name) else {
                continue;
            };
            if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(value)) {
                headers.push((index, value));
            }
        }
        Headers(headers)
    }
}

impl Serialize for Headers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (index, value) in &self.0 {
            map.serialize_entry(FIELDS[*index].0, value.to_str().unwrap_or_default())?;
        }
        map.end()
    }
}

/// `reply` as JSON, written once; a reply that cannot be written is a 500 in the error shape.
pub(crate) fn write<T: Serialize>(reply: &T) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(512);
    serde_json::to_writer(&mut body, reply).map_err(|e| ApiError {
        status: 500,
        code: "internal",
        message: format!("the reply could not be written: {e}"),
        field: None,
    })?;
    Ok(body)
}

/// A 200 with a JSON `body` and `headers` (moved in, not copied) as HTTP header fields.
pub(crate) fn respond(body: Vec<u8>, headers: Headers) -> Response {
    let mut response = Response::new(Body::from(body));
    let map = response.headers_mut();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (index, value) in headers.0 {
        map.insert(FIELDS[index].1.clone(), value);
    }
    response
}
