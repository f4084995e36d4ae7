//! `ratelockr check`: one decision, of a rule given as flags or of a policy from a file
//! ([`super::check_policy`]).

use crate::console::print_json;
use crate::opts::{flag_error, AlgorithmArg, Global, RuleArgs};
use clap::Args;
use ratelockr::{At, CheckError};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The algorithm of a rule given as flags (not with --policies).
    #[arg(
        long,
        value_enum,
        required_unless_present = "policies",
        conflicts_with = "policies"
    )]
    pub algorithm: Option<AlgorithmArg>,
    /// A policies file (TOML or JSON, or a rules file): decide --policy from it instead.
    #[arg(long, value_name = "FILE", requires = "policy")]
    pub policies: Option<PathBuf>,
    /// The policy of --policies to decide: every limit of the key's tier, all or nothing.
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Option<String>,
    /// The client being limited (a user id, an IP, an API key).
    #[arg(long)]
    pub key: String,
    /// How much of the allowance this request takes.
    #[arg(long, default_value_t = 1, conflicts_with = "peek")]
    pub cost: u64,
    /// Show what is left without consuming anything (a cost of 0; not counted in stats).
    #[arg(long)]
    pub peek: bool,
    /// Decide at this time (ms since the epoch) instead of the Redis server's clock: every
    /// algorithm, the fixed window included, so the same request at the same time gets the
    /// same answer.
    #[arg(long)]
    pub now_ms: Option<u64>,
    /// Print the HTTP answer the decision implies instead (status, RateLimit-Policy,
    /// RateLimit, Retry-After, X-RateLimit-*), as the app's decision inspector shows it;
    /// with --json, `{"status", "headers": [[name, value], ...]}`.
    #[arg(long)]
    pub headers: bool,
    #[command(flatten)]
    pub rule: RuleArgs,
}

pub async fn run(global: &Global, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    crate::opts::policy_needs_file(args.policy.is_some(), args.policies.as_deref())?;
    let Some(algorithm) = args.algorithm else {
        let (Some(path), Some(name)) = (&args.policies, &args.policy) else {
            anyhow::bail!("give --algorithm, or --policies FILE with --policy NAME");
        };
        args.rule.refuse_with("--policies")?;
        let policy = super::check_policy::PolicyCheck {
            path,
            name,
            key: &args.key,
            cost: args.cost,
            peek: args.peek,
            now_ms: args.now_ms,
            headers: args.headers,
        };
        return super::check_policy::run(global, policy).await;
    };
    let rule = args.rule.rule_for(algorithm.into())?;
    crate::console::warn_log_memory("check", rule.name(), rule.algorithm());
    if !args.peek {
        rule.check_cost(args.cost).map_err(flag_error)?;
    }
    let backend = global.backend()?;
    let limiter = global.deciding_limiter(&backend).await?;
    let at = args.now_ms.map_or(At::ServerClock, At::Millis);
    let decided = match args.peek {
        true => limiter.try_peek_at(&rule, &args.key, at).await,
        false => limiter.try_check_at(&rule, &args.key, args.cost, at).await,
    };
    let decision = match decided {
        Ok(decision) => decision,
        Err(CheckError::Rule(err)) => return Err(flag_error(err)),
        Err(CheckError::Redis(failure)) => {
            let failure = limiter.diagnose(failure).await;
            eprintln!(
                "ratelockr: fail-open: Redis at {} could not decide ({failure}); the request is allowed without a limit",
                limiter.target()
            );
            ratelockr::Decision::FAIL_OPEN
        }
    };
    // The lease outlives this process: `ratelockr release --lease ID` gives it back.
    decision.keep_lease();
    if args.headers {
        let answer = ratelockr::headers::http_answer(&rule, &decision);
        crate::console::print_answer(&answer, global.json)?;
    } else if global.json {
        print_json(&decision)?;
    } else if decision.is_fallback() {
        // Redis did not decide: nothing is known of the rule's state (`remaining: -1`).
        let verdict = if decision.allowed {
            "allowed"
        } else {
            "denied"
        };
        println!(
            "{verdict:<9} rule {}  key {}  remaining unknown: Redis did not decide ({})",
            rule.name(),
            args.key,
            if decision.allowed {
                "fail-open"
            } else {
                "fail-closed"
            }
        );
    } else if args.peek {
        println!(
            "peek      rule {}  key {}  remaining {}  full again in {} ms  (nothing consumed)",
            rule.name(),
            args.key,
            decision.remaining,
            decision.reset_after_ms
        );
    } else if let Some(lease) = &decision.lease {
        println!(
            "allowed   rule {}  key {}  remaining {}  lease {}  (give it back: ratelockr release --algorithm concurrency --rule {} --key {} --lease {}; else it expires in {} ms)",
            rule.name(),
            args.key,
            decision.remaining,
            lease.id(),
            rule.name(),
            args.key,
            lease.id(),
            decision.reset_after_ms
        );
    } else if decision.allowed {
        println!(
            "allowed   rule {}  key {}  remaining {}  full again in {} ms",
            rule.name(),
            args.key,
            decision.remaining,
            decision.reset_after_ms
        );
    } else {
        println!(
            "denied    rule {}  key {}  remaining {}  retry after {} ms",
            rule.name(),
            args.key,
            decision.remaining,
            decision.retry_after_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}
