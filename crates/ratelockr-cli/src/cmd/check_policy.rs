//! `ratelockr check --policies FILE --policy NAME`: one stacked decision of a policy, and the
//! policy loading that `stats` and `serve` share.

use crate::console::print_json;
use crate::opts::Global;
use anyhow::anyhow;
use ratelockr::policy::{load_policies_file, NoAnswer, PolicyCheckError};
use ratelockr::{At, Decision, Policy};
use std::path::Path;
use std::process::ExitCode;

/// The policy `name` of the file at `path`; errors name the file (line, field) or the flag.
pub fn load_policy(path: &Path, name: &str) -> anyhow::Result<Policy> {
    let policies = load_policies_file(path).map_err(|err| anyhow!("--policies: {err}"))?;
    let names: Vec<&str> = policies.iter().map(Policy::name).collect();
    let known = names.join(", ");
    policies
        .iter()
        .find(|p| p.name() == name)
        .cloned()
        .ok_or_else(|| {
            anyhow!(
                "invalid --policy {name:?}: {} holds no such policy (it holds: {known})",
                path.display()
            )
        })
}

/// The policies `names` of the file at `path`, in the order named (every policy of the file
/// when `names` is empty); errors name the file (line, field) or the flag.
pub fn load_policies(path: &Path, names: &[String]) -> anyhow::Result<Vec<Policy>> {
    if names.is_empty() {
        return load_policies_file(path).map_err(|err| anyhow!("--policies: {err}"));
    }
    names.iter().map(|name| load_policy(path, name)).collect()
}

/// What `check` was asked of a policy: its flags, read by [`super::check`].
pub struct PolicyCheck<'a> {
    pub path: &'a Path,
    pub name: &'a str,
    pub key: &'a str,
    pub cost: u64,
    pub peek: bool,
    pub now_ms: Option<u64>,
    pub headers: bool,
}

pub async fn run(global: &Global, args: PolicyCheck<'_>) -> anyhow::Result<ExitCode> {
    let policy = load_policy(args.path, args.name)?;
    let backend = global.backend()?;
    let limiter = global.deciding_limiter(&backend).await?;
    let at = args.now_ms.map_or(At::ServerClock, At::Millis);
    let decided = match args.peek {
        true => limiter.peek_policy_at(&policy, args.key, at).await,
        false => {
            limiter
                .try_check_policy_at(&policy, args.key, args.cost, at)
                .await
        }
    };
    let decision = match decided {
        Ok(decision) => decision,
        Err(PolicyCheckError::Redis(failure)) => {
            let failure = limiter.diagnose(failure).await;
            eprintln!(
                "ratelockr: fail-open: Redis at {} could not decide ({failure}); the request is allowed without a limit",
                limiter.target()
            );
            Decision::unanswered(&policy, args.key, NoAnswer::FailOpen)
        }
        Err(PolicyCheckError::InvalidCost { cost, max, limit, what }) => {
            return Err(anyhow!(
                "invalid --cost {cost}: must be from 1 to {max} (limit {limit:?}'s {what}); a larger request could never pass"
            ))
        }
        Err(PolicyCheckError::Key(err)) => return Err(crate::opts::flag_error(err)),
    };
    if decision.fail_open() && args.peek {
        eprintln!(
            "ratelockr: Redis at {} could not be asked; nothing is known",
            limiter.target()
        );
    }
    // The lease outlives this process: `ratelockr release --lease ID` gives it back.
    decision.keep_lease();
    if args.headers {
        let answer = ratelockr::headers::policy_answer(&policy, &decision);
        crate::console::print_answer(&answer, global.json)?;
    } else if global.json {
        print_json(&decision)?;
    } else {
        print_human(&decision, args.key, args.peek);
    }
    Ok(ExitCode::SUCCESS)
}

/// The verdict, the binding limit and tier on one line, then one line per limit.
fn print_human(d: &Decision, key: &str, peek: bool) {
    let delayed;
    let verdict = match (peek, d.allowed, d.would_deny()) {
        (true, ..) => "peek",
        (false, true, true) => "shadow-denied (admitted: the policy is in shadow mode)",
        (false, true, false) if d.delay_ms > 0 => {
            delayed = format!(
                "delayed (admitted: delay_ms {}, wait that long, then serve)",
                d.delay_ms
            );
            &delayed
        }
        (false, true, false) => "allowed",
        (false, false, _) => "denied",
    };
    let tier = d.tier().unwrap_or("(none: the policy's own limits)");
    let binding = d.binding().unwrap_or("(unknown: fail-open)");
    println!(
        "{verdict}  policy {}  key {key}  tier {tier}  binding {binding}",
        d.policy_name().unwrap_or_default()
    );
    if let Some(lease) = &d.lease {
        println!(
            "  remaining {}  lease {}  (give it back: ratelockr release --policy {} --key {key} --lease {}; else it expires by itself)",
            d.remaining_or_unknown(),
            lease.id(),
            d.policy_name().unwrap_or_default(),
            lease.id()
        );
    } else if d.allowed || peek {
        println!(
            "  remaining {}  full again in {} ms",
            d.remaining_or_unknown(),
            d.reset_after_ms
        );
    } else {
        println!(
            "  remaining {}  retry after {} ms",
            d.remaining_or_unknown(),
            d.retry_after_ms
        );
    }
    for l in d.limits() {
        let result = if l.allowed { "admits" } else { "denies" };
        println!(
            "  limit {:<16} {:<24} {result}  remaining {}  retry after {} ms  reset after {} ms",
            l.name,
            l.algorithm.to_string(),
            l.remaining,
            l.retry_after_ms,
            l.reset_after_ms
        );
    }
}
