//! What a stacked decision costs Redis (issue 19): `lua/policy.lua` deciding a policy of one,
//! two and three limits, as the engine calls it (telemetry on), beside the standalone scripts
//! of the same limits in the same rounds of `bench --lua` ([`super::lua_cost`] measures them
//! and pairs each stack with the sum of its limits' scripts). The goal: a stack costs at most
//! that sum.

use ratelockr::keys::KeySpace;
use ratelockr::policy::script::PolicyCall;
use ratelockr::policy::{Limit, Mode};
use ratelockr::rule::AlgorithmKind;
use ratelockr::scripts::At;
use ratelockr::telemetry::COUNTER_TTL_SECS;
use ratelockr::PolicyOutcome;

/// The stacks measured: their limits are the bench's rules of these algorithms, in order.
pub(crate) const STACKS: [&[AlgorithmKind]; 4] = [
    &[AlgorithmKind::TokenBucket],
    &[AlgorithmKind::TokenBucket, AlgorithmKind::FixedWindow],
    &[
        AlgorithmKind::TokenBucket,
        AlgorithmKind::FixedWindow,
        AlgorithmKind::Gcra,
    ],
    // In flight beside a rate (issue 35): a lease taken with the bucket's token.
    &[AlgorithmKind::Concurrency, AlgorithmKind::TokenBucket],
];

/// A stack's label, KEYS and ARGV.
pub(crate) type StackCommand = (String, Vec<String>, Vec<String>);

/// A stack's label in reports: "policy of 2 limits (token_bucket + fixed_window)".
pub(crate) fn stack_label(kinds: &[AlgorithmKind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    format!(
        "policy of {} limit{} ({})",
        kinds.len(),
        if kinds.len() == 1 { "" } else { "s" },
        names.join(" + ")
    )
}

/// Each stack's label, KEYS and ARGV as the engine sends them: the limits' state keys under
/// the policy's hash tag with redis-benchmark's `__rand_int__` for the client, this second's
/// telemetry counters, the server's clock, a cost of 1.
pub(crate) fn stack_commands(keys: &KeySpace) -> anyhow::Result<Vec<StackCommand>> {
    let second = ratelockr::telemetry::now_ms() / 1000;
    STACKS
        .iter()
        .map(|kinds| {
            let limits = kinds
                .iter()
                .map(|&kind| {
                    let rule = super::bench_rule(kind)?;
                    Ok(Limit::new(
                        kind.as_str().replace('_', "-"),
                        *rule.algorithm(),
                    )?)
                })
                .collect::<anyhow::Result<Vec<Limit>>>()?;
            let policy = format!("bench-stack-{}", kinds.len());
            let state: Vec<String> = limits
                .iter()
                .map(|l| keys.policy_limit(l.kind(), &policy, l.name(), "__rand_int__"))
                .collect();
            let stats =
                PolicyOutcome::COUNTED.map(|outcome| keys.policy_stats(&policy, second, outcome));
            let call = PolicyCall {
                limits: &limits,
                keys: &state,
                stats_keys: Some([&stats[0], &stats[1], &stats[2]]),
                stats_ttl_secs: COUNTER_TTL_SECS,
                cost: 1,
                mode: Mode::Enforce,
                at: At::ServerClock,
                // redis-benchmark draws a member (the log's, a lease's id) per call.
                member: Some("req-__rand_int__"),
            };
            let words: Vec<String> = call
                .evalsha()
                .args_iter()
                .map(|arg| match arg {
                    redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                    _ => String::new(),
                })
                .collect();
            // EVALSHA <sha> <numkeys> KEYS... ARGV...
            let numkeys: usize = words[2].parse()?;
            let (k, a) = words[3..].split_at(numkeys);
            Ok((stack_label(kinds), k.to_vec(), a.to_vec()))
        })
        .collect()
}
