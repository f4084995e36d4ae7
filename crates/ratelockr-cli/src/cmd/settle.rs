//! `ratelockr settle`: charges a request that was decided with an estimate (its cost) what it
//! really took, in every limit of its policy at once: of a policy from a file, or of a rule
//! given as flags, as `check` was given it.

use crate::console::print_json;
use crate::opts::{flag_error, AlgorithmArg, Global, RuleArgs};
use anyhow::anyhow;
use clap::Args;
use ratelockr::{Policy, SettleError};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct SettleArgs {
    /// The client key the request was decided for.
    #[arg(long)]
    pub key: String,
    /// The cost the request was charged when it was decided (its `--cost`).
    #[arg(long)]
    pub charged: u64,
    /// What it really cost: less gives the rest back, more charges it even past the limit.
    #[arg(long)]
    pub actual: u64,
    /// The policies file the request's policy is in (TOML or JSON, or a rules file).
    #[arg(
        long,
        value_name = "FILE",
        requires = "policy",
        conflicts_with = "algorithm"
    )]
    pub policies: Option<PathBuf>,
    /// The policy of --policies the request was decided under.
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Option<String>,
    /// The algorithm of a rule given as flags, as `check` was given it.
    #[arg(long, value_enum, required_unless_present = "policies")]
    pub algorithm: Option<AlgorithmArg>,
    #[command(flatten)]
    pub rule: RuleArgs,
}

pub async fn run(global: &Global, args: &SettleArgs) -> anyhow::Result<ExitCode> {
    let policy = match (&args.policies, &args.policy, args.algorithm) {
        (Some(path), Some(name), _) => {
            args.rule.refuse_with("--policies")?;
            super::check_policy::load_policy(path, name)?
        }
        (_, _, Some(algorithm)) => Policy::from_rule(&args.rule.rule_for(algorithm.into())?),
        _ => anyhow::bail!("give --policies FILE with --policy NAME, or --algorithm A"),
    };
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let settled = limiter
        .settle(&policy, &args.key, args.charged, args.actual)
        .await
        .map_err(|err| match err {
            SettleError::Key(err) => flag_error(err),
            SettleError::Cost {
                field,
                value,
                reason,
            } => anyhow!("invalid --{field} {value}: {reason}"),
            SettleError::Redis(failure) => anyhow!(failure).context(format!(
                "settled nothing: Redis at {} failed",
                limiter.target()
            )),
        })?;
    let (charged, actual) = (args.charged, args.actual);
    if global.json {
        print_json(&serde_json::json!({
            "settled": settled,
            "policy": policy.name(),
            "key": args.key,
            "charged": charged,
            "actual": actual,
        }))?;
    } else if settled {
        let change = if actual < charged {
            format!("gave back {}", charged - actual)
        } else {
            format!("charged {} more", actual - charged)
        };
        println!(
            "settled  policy {}  key {}  charged {charged}, actual {actual}: {change}",
            policy.name(),
            args.key
        );
    } else {
        println!(
            "nothing  policy {} key {}: nothing to settle (the same cost, a charge of 0, only concurrency limits, or the key's state is gone)",
            policy.name(),
            args.key
        );
    }
    Ok(ExitCode::SUCCESS)
}
