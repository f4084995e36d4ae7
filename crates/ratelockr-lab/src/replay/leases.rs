//! Leases on the log's clock: with durations in the log, a request under a concurrency limit
//! takes its lease under an id of its own (its line's), and gives it back when it ended (its
//! log time + its duration), as the simulator's holds do on the wall clock.
//!
//! The give-back is a call of `lua/lease.lua` at `now_ms` = the end, sent on the key's lane
//! just before the first of the key's requests at or after that end (the lanes keep a key's
//! calls in order), so a request sees exactly the leases still in flight. The outcome of a
//! request is not known when its release is queued (its reply may still be on its way): a
//! denied request's release finds no lease and frees nothing. A lease its request outlives
//! (duration ≥ `lease_ms`) expires by itself on the same clock, and is not released.

use super::read::Req;
use ratelockr::keys::KeySpace;
use ratelockr::lease::{lease_evalsha, LeaseOp};
use ratelockr::policy::Policy;
use ratelockr::rule::{Algorithm, Rule};
use ratelockr::scripts::At;
use std::collections::BTreeMap;

/// A lease to give back.
#[derive(Debug)]
struct Due {
    id: String,
    key_hash: u64,
    /// Each concurrency limit's leases set, with its `lease_ms`.
    sets: Vec<(String, u64)>,
}

/// The leases of requests still in flight on the log's clock, by (end, line, decider).
#[derive(Debug, Default)]
pub(super) struct Releases {
    due: BTreeMap<(u64, u64, usize), Due>,
}

/// The id of the lease `req` takes: its line's, unique in the log and the same every run.
pub(super) fn lease_id(req: &Req) -> String {
    format!("l{}", req.line)
}

/// The concurrency limits' leases sets a request of `key` holds under `rule`, or under tier
/// `tier` of `policy`, with their `lease_ms`; empty when it holds none.
pub(super) fn lease_sets(
    rule: &Rule,
    policy: Option<&Policy>,
    tier: usize,
    keys: &KeySpace,
    key: &str,
) -> Vec<(String, u64)> {
    match policy {
        None => match *rule.algorithm() {
            Algorithm::Concurrency { lease_ms, .. } => vec![(keys.limiter(rule, key), lease_ms)],
            _ => Vec::new(),
        },
        Some(policy) => policy
            .tier_limits(tier)
            .iter()
            .filter_map(|limit| match *limit.algorithm() {
                Algorithm::Concurrency { lease_ms, .. } => Some((
                    keys.policy_limit(limit.kind(), policy.name(), limit.name(), key),
                    lease_ms,
                )),
                _ => None,
            })
            .collect(),
    }
}

impl Releases {
    /// `req`'s lease `id` under decider `decider`, held in `sets`, goes back when the request
    /// ends (if it ends before every lease would expire anyway).
    pub(super) fn hold(&mut self, req: &Req, decider: usize, id: String, sets: Vec<(String, u64)>) {
        let Some(duration) = req.duration_ms else {
            return;
        };
        if sets.iter().all(|&(_, lease_ms)| duration >= lease_ms) {
            return;
        }
        let due = Due {
            id,
            key_hash: req.key_hash,
            sets,
        };
        self.due
            .insert((req.ms.saturating_add(duration), req.line, decider), due);
    }

    /// The release calls due by `now_ms` (requests that ended at or before it), oldest end
    /// first: each with the key hash that picks its lane.
    pub(super) fn due_by(&mut self, now_ms: u64) -> Vec<(u64, redis::Cmd)> {
        let mut out = Vec::new();
        while let Some(entry) = self.due.first_entry() {
            let end = entry.key().0;
            if end > now_ms {
                break;
            }
            let due = entry.remove();
            // Replays write no telemetry: no counter.
            let cmd = lease_evalsha(LeaseOp::Release, &due.id, &due.sets, At::Millis(end), None);
            out.push((due.key_hash, cmd));
        }
        out
    }
}
