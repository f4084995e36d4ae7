//! RateLockr: distributed rate limits on Redis, one atomic Lua script per decision.
//!
//! - [`rule`]      rules: a name and an algorithm with validated parameters
//! - [`commandstats`] Redis's own time per script call (`INFO commandstats`), around a run
//! - [`decision`]  a decision is a value: allowed, remaining, retry/reset waits, fail-open
//! - [`scripts`]   the five Lua scripts (`lua/`), hashed once, replies parsed into decisions
//! - [`limiter`]   EVALSHA over one shared connection, deadlines, fail-open, failure kinds
//! - [`acl`]       ACL users: the missing permission named, EVAL when SCRIPT LOAD is denied
//! - [`deny_cache`] opt-in: what Redis just denied is denied in process until Redis's time
//! - [`local_limiter`] degraded mode: the rule's per-instance share, decided in process
//! - [`headers`]   the HTTP status and RateLimit headers a decision implies
//! - [`keys`]      the key layout under a prefix, rule names hash-tagged for Redis Cluster
//! - [`refund`]    giving back what an admitted request took, when a later rule denies it
//! - [`reset`]     deleting a rule's (or one client's) limiter state: a maintenance SCAN
//! - [`telemetry`] per-second counters written by the scripts, read as 60 GETs in one pipeline
//! - [`target`]    Redis URLs that never show their password
//! - [`conn`]      one connection type over a single Redis and a Redis Cluster
//! - [`cluster`]   `redis+cluster://` seed nodes and the topology a cluster reports
//! - [`tls`]       `rediss://`: CA, client certificate and key, the insecure opt-out, errors
//! - [`embedded`]  a managed private redis-server on a free loopback port
//! - [`embedded_cluster`] a private Redis Cluster (masters and replicas) for tests and measurements
//! - [`backend`]   choosing the configured Redis or the embedded one
//! - [`error`]     Redis failures classified: outage, timeout, misconfiguration...
//! - [`sim`]       the traffic simulator: workloads, compare mode (all five), the naive race
//!   demo, the sliding window counter judged by the exact log
//! - [`atomic_file`] files written whole or not at all: a temporary file, renamed when complete
//! - [`export`]    simulation records as CSV, per-second charts as PNG or SVG
//! - [`metrics`]   Prometheus metrics of decisions, served at `GET /api/metrics`
//! - [`replay`]    a real log decided on its own clock through the rules' scripts: who was denied
//! - [`api`]       the decision endpoint for any language: `POST /api/check`, `GET /api/rules`
//! - [`rules_file`] a list of rules from a JSON or TOML file (`serve --rules`, `replay --rules`)
//! - [`policy`]    policies: stacked limits decided all or nothing in one call, shadow mode,
//!   tiers; policy files (TOML, JSON; rules files load as policies of one limit)
//! - [`bench`]     load tests: the engine against redis-benchmark's ceiling, Lua cost, stats cost

pub mod acl;
pub mod api;
pub mod atomic_file;
pub mod backend;
pub mod bench;
pub mod cluster;
pub mod commandstats;
pub mod conn;
pub mod decision;
pub mod deny_cache;
pub mod embedded;
pub mod embedded_cluster;
pub mod error;
pub mod export;
pub mod headers;
pub mod keys;
pub mod limiter;
pub mod local_limiter;
pub mod metrics;
pub mod policy;
pub mod refund;
pub mod replay;
pub mod reset;
pub mod rule;
pub mod rules_file;
pub mod scripts;
pub mod sim;
pub mod target;
pub mod telemetry;
pub mod tls;
pub mod topology;

pub use backend::{Backend, BackendError, BackendKind};
pub use conn::Conn;
pub use decision::{Decision, Outcome, PolicyOutcome};
pub use deny_cache::DenyCacheOptions;
pub use embedded::{EmbeddedError, EmbeddedRedis};
pub use error::{FailureKind, RedisFailure};
pub use keys::KeySpace;
pub use limiter::{CheckError, DecisionObserver, FailureMode, Limiter, LimiterOptions};
pub use metrics::Metrics;
pub use policy::{Limit, Mode, Override, Policy, PolicyDecision};
pub use refund::RefundError;
pub use reset::ResetError;
pub use rule::{Algorithm, AlgorithmKind, Rule, RuleError};
pub use scripts::At;
pub use target::{RedisTarget, TargetError, DEFAULT_REDIS_URL};
pub use telemetry::StatsPoint;
pub use tls::{TlsError, TlsField, TlsOptions};
