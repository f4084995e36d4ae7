//! The lease script's calls (`lua/lease.lua`): a limiter gives back, or renews, the leases
//! its decisions took ([`crate::lease::Lease`]), and names a lease by id for a caller in
//! another process (serve's `/api/release` and `/api/renew`, `ratelockr release`).

use crate::error::RedisFailure;
use crate::keys::KeySpace;
use crate::lease::{Lease, LeaseHolder, LeaseOp};
use crate::limiter::Limiter;
use crate::policy::Policy;
use crate::rule::{validate_client_key, Algorithm, RuleError};
use crate::scripts::{self, At};
use crate::telemetry::{self, COUNTER_TTL_SECS, RELEASED};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The EVALSHA of `lua/lease.lua` for `op` of lease `id` in `sets`, as its header documents
/// (public for the lab's replay, which gives leases back on the log's clock, in a pipeline).
/// `counter`: a release's telemetry counter of this second (the last key, with its TTL).
pub fn lease_evalsha(
    op: LeaseOp,
    id: &str,
    sets: &[(String, u64)],
    at: At,
    counter: Option<&str>,
) -> redis::Cmd {
    let counter = counter.filter(|_| op == LeaseOp::Release);
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(scripts::lease_script().get_hash())
        .arg(sets.len() + usize::from(counter.is_some()));
    for (key, _) in sets {
        cmd.arg(key.as_str());
    }
    if let Some(counter) = counter {
        cmd.arg(counter);
    }
    cmd.arg(op.as_str()).arg(id);
    match at.millis() {
        None => cmd.arg(""),
        Some(ms) => cmd.arg(ms),
    };
    if counter.is_some() {
        cmd.arg(COUNTER_TTL_SECS);
    }
    if op == LeaseOp::Renew {
        for (_, lease_ms) in sets {
            cmd.arg(*lease_ms);
        }
    }
    cmd
}

impl Limiter {
    /// One call of the lease script under the decision deadline; a failure is counted and
    /// logged like a decision's.
    pub(crate) async fn lease_call(
        &self,
        op: LeaseOp,
        id: &str,
        sets: &[(String, u64)],
    ) -> Result<u64, RedisFailure> {
        if sets.is_empty() {
            return Ok(0);
        }
        // A release is counted in the rule's or policy's telemetry, in the same call.
        let counter = (self.options().telemetry && op == LeaseOp::Release)
            .then(|| KeySpace::tag_of(&sets[0].0))
            .flatten()
            .map(|name| {
                self.keys()
                    .after_stats(name, telemetry::now_ms() / 1000, RELEASED)
            });
        let evalsha = lease_evalsha(op, id, sets, At::ServerClock, counter.as_deref());
        // How many of the sets held the lease live (and now freed or renewed it).
        let result = self
            .invoke_script(&evalsha)
            .await
            .and_then(|reply| crate::error::count_reply(&reply, "lease"));
        if let Some(observer) = self.observer() {
            if let Ok(n) = result {
                observer.lease_ended(op, n > 0);
            }
        }
        result.map_err(|failure| self.failed(failure))
    }
}

/// Why a lease could not be named for release or renewal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LeaseError {
    /// The key's tier of the policy has no concurrency limit: no request holds a lease there.
    #[error("policy {policy:?} has no concurrency limit for this key: its requests hold no lease")]
    NoConcurrencyLimit { policy: String },
    /// A lease id that no decision gives: empty, or not the 1 to 64 plain characters ids are.
    #[error("invalid lease {0:?}: a lease is the id a decision gave (1 to 64 letters, digits, '-' or '_')")]
    InvalidId(String),
    /// An unusable client key.
    #[error(transparent)]
    Key(#[from] RuleError),
}

/// The longest lease id accepted back (the engine's are 16 characters).
const MAX_LEASE_ID_LEN: usize = 64;

impl Limiter {
    /// The lease `id` that a request decided under `policy` for `client_key` holds, named for
    /// release or renewal by a caller that kept only its id (serve's `/api/release` and
    /// `/api/renew`, `ratelockr release`). It is held in the concurrency limits of the key's
    /// tier; dropping it does not release it (the caller decides when).
    pub fn lease_of(
        &self,
        policy: &Policy,
        client_key: &str,
        id: &str,
    ) -> Result<Lease, LeaseError> {
        validate_client_key(client_key)?;
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if id.is_empty() || id.len() > MAX_LEASE_ID_LEN || !id.chars().all(plain) {
            return Err(LeaseError::InvalidId(id.to_string()));
        }
        let (_, limits) = policy.limits_for(client_key);
        let keys = self.keys();
        let sets: Vec<(String, u64)> = limits
            .iter()
            .filter_map(|limit| match *limit.algorithm() {
                Algorithm::Concurrency { lease_ms, .. } => Some((
                    keys.policy_limit(limit.kind(), policy.name(), limit.name(), client_key),
                    lease_ms,
                )),
                _ => None,
            })
            .collect();
        if sets.is_empty() {
            return Err(LeaseError::NoConcurrencyLimit {
                policy: policy.name().to_string(),
            });
        }
        Ok(Lease::held(
            Arc::new(self.clone()),
            id.to_string(),
            sets,
            false,
        ))
    }
}

impl LeaseHolder for Limiter {
    fn lease_call<'a>(
        &'a self,
        op: LeaseOp,
        id: &'a str,
        sets: &'a [(String, u64)],
    ) -> Pin<Box<dyn Future<Output = Result<u64, RedisFailure>> + Send + 'a>> {
        Box::pin(Limiter::lease_call(self, op, id, sets))
    }
}
