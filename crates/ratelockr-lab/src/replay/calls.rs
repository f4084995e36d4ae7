//! A replay's script calls: each request through every rule's script (or policy's stacked
//! one) as EVALSHAs on the key's lane ([`dispatch`]), and each reply read as the decision of
//! the rule or policy that sent it ([`collect`]), a failure failing that decision open.

use super::decide;
use super::leases::{lease_id, lease_sets, Releases};
use super::read::Req;
use ratelockr::keys::KeySpace;
use ratelockr::limiter::Limiter;
use ratelockr::policy::script::{parse_head, PolicyCall};
use ratelockr::policy::Policy;
use ratelockr::rule::Rule;
use ratelockr::scripts::{At, Call};
use ratelockr::telemetry::COUNTER_TTL_SECS;
use ratelockr::Decision;
use std::sync::atomic::Ordering;

/// What decides a run's requests: a rule's script, or a policy's stacked one.
pub(super) struct Decider {
    pub(super) rule: Rule,
    pub(super) policy: Option<Policy>,
}

impl Decider {
    pub(super) fn new(rule: &Rule, policy: Option<&Policy>) -> Decider {
        Decider {
            rule: rule.clone(),
            policy: policy.cloned(),
        }
    }

    /// The largest cost every limit could admit.
    pub(super) fn max_cost(&self) -> u64 {
        match &self.policy {
            None => self.rule.algorithm().max_cost(),
            Some(policy) => policy
                .all_limits()
                .map(|l| l.algorithm().max_cost())
                .min()
                .unwrap_or(1),
        }
    }
}

/// A batch on its way: per lane, the pending replies and each reply's decision slot, with the
/// tier of a policy's decision (0 for a rule's), found once when its call was built.
pub(super) type Sent = Vec<(decide::Pending, Vec<(usize, usize)>)>;

/// The slot of a lease's release ([`super::leases`]): its reply decides nothing.
const RELEASE: usize = usize::MAX;

/// Sends one batch: every request through every rule (or policy), each key on its lane, the
/// leases of requests that ended by then given back first. Returns, per lane, the pending
/// replies and the (request × rules + rule) slot of each.
pub(super) async fn dispatch(
    lanes: &decide::Lanes,
    keys: &KeySpace,
    deciders: &[Decider],
    reqs: &[Req],
    releases: &mut Releases,
) -> Sent {
    let n = lanes.count();
    let mut commands: Vec<Vec<redis::Cmd>> = (0..n).map(|_| Vec::new()).collect();
    let mut slots: Vec<Vec<(usize, usize)>> = (0..n).map(|_| Vec::new()).collect();
    for (j, req) in reqs.iter().enumerate() {
        for (key_hash, release) in releases.due_by(req.ms) {
            let lane = lanes.lane_of(key_hash);
            commands[lane].push(release);
            slots[lane].push((RELEASE, 0));
        }
        let lane = lanes.lane_of(req.key_hash);
        for (i, decider) in deciders.iter().enumerate() {
            let tier = match &decider.policy {
                None => 0,
                Some(policy) => policy.tier_index(&req.key),
            };
            // With its duration, a request's lease has an id of its own, to give it back.
            let lease = req.duration_ms.and_then(|_| {
                let sets = lease_sets(&decider.rule, decider.policy.as_ref(), tier, keys, &req.key);
                (!sets.is_empty()).then(|| (lease_id(req), sets))
            });
            let id = lease.as_ref().map(|(id, _)| id.as_str());
            let command = match &decider.policy {
                None => {
                    let limiter_key = keys.limiter(&decider.rule, &req.key);
                    Call {
                        algorithm: decider.rule.algorithm(),
                        limiter_key: &limiter_key,
                        stats_keys: None,
                        stats_ttl_secs: COUNTER_TTL_SECS,
                        cost: req.cost,
                        at: At::Millis(req.ms),
                        // Without a duration, a fresh lease per request, never released:
                        // it is held its whole lease_ms (on the log's clock).
                        lease_id: id,
                    }
                    .evalsha()
                }
                Some(policy) => {
                    let limits = policy.tier_limits(tier);
                    let state_keys: Vec<String> = limits
                        .iter()
                        .map(|l| keys.policy_limit(l.kind(), policy.name(), l.name(), &req.key))
                        .collect();
                    PolicyCall {
                        limits,
                        keys: &state_keys,
                        stats_keys: None,
                        stats_ttl_secs: COUNTER_TTL_SECS,
                        cost: req.cost,
                        mode: policy.mode(),
                        at: At::Millis(req.ms),
                        member: id,
                    }
                    // A policy that delays admits what would pass within max_delay_ms.
                    .evalsha_delaying(policy.max_delay_ms(), None)
                }
            };
            if let Some((id, sets)) = lease {
                releases.hold(req, i, id, sets);
            }
            commands[lane].push(command);
            slots[lane].push((j * deciders.len() + i, tier));
        }
    }
    let mut pending = Vec::new();
    for (lane, (cmds, slots)) in commands.into_iter().zip(slots).enumerate() {
        if !cmds.is_empty() {
            pending.push((lanes.submit(lane, cmds).await, slots));
        }
    }
    pending
}

/// One decision of a replay: a rule's, or a policy's with what its record adds (as indexes
/// into the policy, so nothing is allocated per decision).
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    pub(super) decision: Decision,
    /// 0: the policy's own limits, i + 1: override i.
    pub(super) tier: usize,
    /// The binding limit's index among the tier's limits; None for a rule and on fail-open.
    pub(super) binding: Option<usize>,
    pub(super) would_deny: bool,
}

impl Verdict {
    const FAIL_OPEN: Verdict = Verdict {
        decision: Decision::FAIL_OPEN,
        tier: 0,
        binding: None,
        would_deny: false,
    };
}

/// The second in which a failed replay decision was last logged.
static LAST_WARNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Waits for a batch's replies and reads each as its script answers; a failure becomes a
/// fail-open decision, counted in the limiter's ledger like any other.
pub(super) async fn collect(
    limiter: &Limiter,
    deciders: &[Decider],
    reqs: &[Req],
    pending: Sent,
) -> Vec<Verdict> {
    let r = deciders.len();
    let mut verdicts = vec![Verdict::FAIL_OPEN; reqs.len() * r];
    for (rx, slots) in pending {
        let outcomes = rx.await.unwrap_or_default();
        for (k, (slot, tier)) in slots.into_iter().enumerate() {
            if slot == RELEASE {
                continue;
            }
            let Some(outcome) = outcomes.get(k) else {
                limiter
                    .ledger()
                    .record_failure(ratelockr::FailureKind::Other);
                continue;
            };
            let read = outcome
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|reply| read_reply(&deciders[slot % r], tier, reply));
            match read {
                Ok(verdict) => verdicts[slot] = verdict,
                Err(failure) => {
                    limiter.ledger().record_failure(failure.kind);
                    // Once a second at most, however many decisions fail.
                    let second = ratelockr::telemetry::now_ms() / 1000;
                    if LAST_WARNED.swap(second, Ordering::Relaxed) != second {
                        tracing::warn!(redis = %limiter.target(), "replay decisions failed open: {failure}");
                    }
                }
            }
        }
    }
    verdicts
}

/// A script's reply as the decision of the rule or policy that sent it.
fn read_reply(
    decider: &Decider,
    tier: usize,
    reply: &redis::Value,
) -> Result<Verdict, ratelockr::RedisFailure> {
    let Some(policy) = &decider.policy else {
        return ratelockr::scripts::parse_value(reply).map(|decision| Verdict {
            decision,
            ..Verdict::FAIL_OPEN
        });
    };
    let head = parse_head(reply, policy.tier_limits(tier).len())?;
    Ok(Verdict {
        decision: Decision {
            // Served at its start time: the series counts it there.
            delay_ms: head.delay_ms,
            ..Decision::by_redis(
                head.allowed,
                head.remaining.max(0) as u64,
                head.retry_after_ms,
                head.reset_after_ms,
            )
        },
        tier,
        binding: Some(head.binding),
        would_deny: head.would_deny,
    })
}
