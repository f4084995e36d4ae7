//! A tower layer for axum 0.8 that rate-limits requests with RateLockr's Redis scripts: the
//! same rules, keys and decisions as the engine, the desktop app and `ratelockr serve`.
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use ratelockr::{FailureMode, RedisTarget, Rule};
//! use ratelockr_tower::{KeyExtractor, RateLimitLayer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let limit = RateLimitLayer::builder(KeyExtractor::header("x-api-key".parse()?))
//!     .redis(RedisTarget::parse("redis://127.0.0.1:6379")?)
//!     .rule(Rule::token_bucket("api", 20, 10.0)?) // bursts of 20, 10 a second
//!     .failure_mode(FailureMode::Degraded { instances: 2 })
//!     .headers_on_admitted(true)
//!     .build()?;
//! let app = Router::new().route("/", get(|| async { "hello" })).layer(limit);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! # What a request gets
//! - **Admitted** by every rule: the service answers; with
//!   [`RateLimitBuilder::headers_on_admitted`] the response carries `RateLimit-Policy` and
//!   `RateLimit` of the rule with the least remaining.
//! - **Denied** by a rule: `429 Too Many Requests` with `Retry-After`, `RateLimit-Policy` and
//!   `RateLimit` (IETF draft-ietf-httpapi-ratelimit-headers) of the denying rule, and
//!   `X-RateLimit-Limit`, `-Remaining`, `-Reset` with
//!   [`RateLimitBuilder::x_ratelimit_headers`]. The fields come from the engine's one mapping,
//!   [`ratelockr::headers::http_answer`].
//! - **Without a key** (no API-key header, no peer address): 400, or the status set with
//!   [`RateLimitBuilder::missing_key_status`].
//! - **With a cost no rule can admit** (above a capacity, burst or limit, or 0): 413.
//!
//! Every decided request carries a [`RateLimitInfo`] in its extensions (the handler's
//! request and the response alike).
//!
//! A cost that was an estimate is settled by the handler: an [`ActualCost`] in its response's
//! extensions charges every limit (every rule that admitted the request) the difference
//! before the response goes out.
//!
//! # Several rules
//! A request passes only if every rule admits it. Each rule's name is its own Redis Cluster
//! hash tag ([`ratelockr::keys`]), so no two rules can be decided by one atomic script.
//! They are decided **one by one, in the order they were added**, and the first denial stops:
//! the rules behind it are not asked (nothing is taken from them), and the rules before it,
//! which admitted the request, are **refunded** ([`ratelockr::Limiter::refund`], a script of
//! its own) before the 429 goes out. A request that does not pass costs no rule anything.
//! Between a rule's admission and its refund, another request of the same client may see that
//! rule's allowance a little lower than it will be: the window is one round trip per rule.
//! Put the rule that denies most often first. Only Redis's admissions are refunded: a
//! fail-open or degraded one took nothing from Redis.
//!
//! # A policy of a file, reloaded live
//! [`RateLimitBuilder::from_file`] holds the route to a policy of a policies file (design.md,
//! "Policies"): every limit of the key's tier is decided in **one** script call, all or
//! nothing, so nothing needs refunding; `RateLimit-Policy` names every limit
//! (`"api.per-second";q=10;w=1, "api.daily";q=2000;w=86400`) and `RateLimit` the binding one;
//! a shadow policy's would-be denials pass, counted. The file is reloaded when it changes
//! (`ratelockr serve --policies` reloads the same file the same way):
//!
//! ```no_run
//! # use ratelockr::RedisTarget;
//! # use ratelockr_tower::{KeyExtractor, RateLimitLayer};
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let limit = RateLimitLayer::builder(KeyExtractor::peer_ip())
//!     .redis(RedisTarget::parse("redis://127.0.0.1:6379")?)
//!     .from_file("policies.toml", "api")
//!     .headers_on_admitted(true)
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! # When Redis cannot be asked
//! The layer's [`FailureMode`](ratelockr::FailureMode) decides: fail open (the default), fail
//! closed (a 429 without `Retry-After`: nobody knows when it will pass), or degraded (this
//! instance's share of each rule, decided in process). A request let through without Redis is
//! visible three ways: [`RateLimitInfo::fail_open`] in the extensions (and the
//! [`FAIL_OPEN_HEADER`] with [`RateLimitBuilder::fail_open_header`]); the
//! `ratelockr_evaluations_total{result="fail_open"}` metric with
//! [`RateLimitBuilder::metrics`]; and the engine's log line, at most one a second per kind
//! of failure. A fail-open response carries no RateLimit fields: nothing is known.

#![warn(missing_docs)]

mod info;
mod key;
mod layer;
mod leased_body;
mod policy;

pub use info::{ActualCost, RateLimitInfo, RuleDecision};
/// CIDR networks, for [`KeyExtractor::forwarded_ip`]'s trusted proxies.
pub use ipnet::IpNet;
pub use key::{ExpressionError, KeyExtractor, X_FORWARDED_FOR};
pub use layer::{BuildError, RateLimit, RateLimitBuilder, RateLimitLayer, FAIL_OPEN_HEADER};
