//! RateLockr: distributed rate limits on Redis, one atomic Lua script per decision.
//!
//! ```no_run
//! use ratelockr::{Limit, Limiter, LimiterOptions, Policy, RedisTarget, Rule};
//! use std::time::Duration;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let limiter = Limiter::new(&RedisTarget::parse("redis://127.0.0.1:6379")?, LimiterOptions::default());
//! let rule = Rule::token_bucket("api", 100, 10.0)?;
//! let decision = limiter.check(&rule, "user42").await?; // Err only for a cost the rule can never admit
//! if !decision.allowed { /* 429, Retry-After: decision.retry_after_ms */ }
//! let left = limiter.peek(&rule, "user42").await?; // what is left, nothing consumed
//!
//! // Limits stacked in a policy: all admit (and are charged) or none is, in one script call.
//! let policy = Policy::new("api", vec![
//!     Limit::token_bucket("per-second", 10, 10.0)?,
//!     Limit::fixed_window("daily", 2_000, Duration::from_secs(86_400))?,
//! ])?;
//! let decision = limiter.check_policy(&policy, "user42").await?;
//! println!("{left:?} {decision:?}");
//! # Ok(())
//! # }
//! ```
//!
//! This crate is the core a service links: limits and policies, the one decision path,
//! telemetry, metrics, headers, the decision endpoint, cluster and TLS, the embedded Redis. The
//! lab (simulator, replay, sweeps, exports) is `ratelockr-lab`, the `ratelockr` command and its
//! benchmarks are `ratelockr-cli`; both build on this crate and this crate on neither.
//!
//! The modules other crates use (the lab, the CLI, the tower layer, the app, the tests):
//!
//! - [`rule`]      rules: a name and an algorithm with validated parameters
//! - [`scripts`]   the Lua scripts (`lua/`), hashed once, replies parsed into decisions
//! - [`limiter`]   EVALSHA over one shared connection, deadlines, fail-open, failure kinds
//! - [`lease`]     the slot a request holds in its concurrency limits: released, renewed, or
//!   released in the background when dropped
//! - [`settle`]    a request charged an estimate, settled with its actual cost in every limit
//! - [`deny_cache`] opt-in: what Redis just denied is denied in process until Redis's time
//! - [`headers`]   the HTTP status and RateLimit headers a decision implies
//! - [`keys`]      the key layout under a prefix, rule names hash-tagged for Redis Cluster
//! - [`telemetry`] per-second counters written by the scripts, read as 60 GETs in one pipeline
//! - [`commandstats`] Redis's own time per script call (`INFO commandstats`), around a run
//! - [`cluster`]   the topology a Redis Cluster reports (`CLUSTER NODES`)
//! - [`topology`]  which Redis a connection is on, as a person reads it: nodes, roles, slots, RTTs
//! - [`server`]    which server it is (Redis, Valkey, Dragonfly), its version, whether it scripts
//! - [`diagnose`]  a failed connection diagnosed: refused, not a Redis, TLS on the wrong side
//! - [`embedded`]  a managed private redis-server on a free loopback port
//! - [`embedded_cluster`] a private Redis Cluster (masters and replicas) for tests and measurements
//! - [`backend`]   choosing the configured Redis or the embedded one
//! - [`atomic_file`] files written whole or not at all: a temporary file, renamed when complete
//! - [`metrics`]   Prometheus metrics of decisions, served at `GET /api/metrics`
//! - [`api`]       the decision endpoint for any language: `POST /api/check`, `GET /api/rules`
//! - [`rules_file`] a list of rules from a JSON or TOML file (`serve --rules`, `replay --rules`)
//! - [`key_expr`]  key expressions (`ip+path[1]`, `header:x-api-key`): what a policy keys by
//! - [`policy`]    policies: stacked limits decided all or nothing in one call, shadow mode,
//!   tiers; policy files (TOML, JSON; rules files load as policies of one limit)
//!
//! Inside the crate (what of them others use is re-exported below, at the root):
//!
//! - `decision`    a decision is a value: allowed, remaining, retry/reset waits, fail-open
//! - `target`      Redis URLs, all parsed here (`rediss://` with its TLS files, `redis+cluster://`
//!   seeds), that never show their password
//! - `conn`        one connection type over a single Redis and a Redis Cluster
//! - `error`       Redis failures classified (outage, timeout, misconfiguration...) and explained
//! - `acl`         ACL users: the missing permission named, EVAL when SCRIPT LOAD is denied
//! - `local_limiter` degraded mode: the rule's per-instance share, decided in process
//! - `lease_calls` the lease script's calls: release, renew, a lease named by id
//! - `refund`      giving back what an admitted request took, when a later rule denies it
//! - `reset`       deleting a rule's (or one client's) limiter state: a maintenance SCAN
//! - `decide`      the one decision path, for a rule and a policy alike: deny cache, deadline,
//!   telemetry, script call, failure mode, metrics
//! - `rule_check`  a rule's checks and peeks on that path (a policy's are in [`policy::check`])
//! - `tied_child`  child processes (the managed redis-server) that end with their owner

// An item of a crate-private module is `pub(crate)`: `pub` says another crate can reach it.
#![warn(unreachable_pub)]

pub(crate) mod acl;
pub mod api;
pub mod atomic_file;
pub mod backend;
pub mod calendar;
pub mod cluster;
pub mod commandstats;
pub(crate) mod conn;
pub(crate) mod decide;
pub(crate) mod decision;
pub mod deny_cache;
pub mod diagnose;
pub mod embedded;
pub mod embedded_cluster;
pub(crate) mod error;
pub mod headers;
pub mod key_expr;
pub mod keys;
pub mod lease;
pub(crate) mod lease_calls;
pub mod limiter;
pub mod limiter_options;
pub(crate) mod local_limiter;
pub mod log_memory;
pub mod metrics;
pub mod policy;
pub(crate) mod refund;
pub(crate) mod reset;
pub mod rule;
pub(crate) mod rule_check;
pub mod rules_file;
pub mod scripts;
pub mod server;
pub mod settle;
pub mod slot_route;
pub(crate) mod target;
pub mod telemetry;
pub(crate) mod tied_child;
pub mod topology;

pub use backend::{Backend, BackendError, BackendKind};
pub use calendar::{Period, TimeZoneName, WeekStart};
pub use conn::{Conn, ConnOptions};
pub use decision::{DecidedBy, Decision, DecisionJson, Outcome, PolicyOutcome};
pub use deny_cache::DenyCacheOptions;
pub use embedded::{EmbeddedError, EmbeddedRedis};
pub use error::{FailureKind, RedisFailure};
pub use keys::KeySpace;
pub use lease::Lease;
pub use lease_calls::LeaseError;
pub use limiter::{CheckError, DecisionObserver, FailureMode, Limiter, LimiterOptions};
pub use limiter_options::OptionsError;
pub use metrics::Metrics;
pub use policy::check::PolicyCheckError;
pub use policy::file::PolicyFileError;
pub use policy::{
    Limit, Mode, NoAnswer, Override, Policy, PolicyDecisionJson, PolicyError, PolicyVerdict,
};
pub use refund::RefundError;
pub use reset::ResetError;
pub use rule::{Algorithm, AlgorithmKind, Rule, RuleError};
pub use scripts::At;
pub use server::{Scripting, ServerInfo, ServerKind};
pub use settle::SettleError;
pub use target::{RedisTarget, TargetError, TlsError, TlsField, TlsOptions, DEFAULT_REDIS_URL};
pub use telemetry::StatsPoint;
