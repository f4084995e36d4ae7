//! `ratelockr settle`: charges a request that was decided with an estimate (its cost) what it
//! really took, in every limit of its policy at once: of a policy from a file, or of a rule
//! given as flags, as `check` was given it.

use super::policy_target::PolicyTarget;
use crate::console::print_json;
use crate::opts::{flag_error, Global};
use anyhow::anyhow;
use clap::Args;
use ratelockr::SettleError;
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
    #[command(flatten)]
    pub target: PolicyTarget,
}

pub async fn run(global: &Global, args: &SettleArgs) -> anyhow::Result<ExitCode> {
    let policy = args.target.policy("A")?;
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
