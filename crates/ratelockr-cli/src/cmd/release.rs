//! `ratelockr release`: gives back (or with `--renew`, renews) the lease a `check` under
//! concurrency limits printed, by its id: of a policy from a file, or of a rule given as flags.

use super::policy_target::PolicyTarget;
use crate::console::print_json;
use crate::opts::{flag_error, Global};
use anyhow::{anyhow, Context};
use clap::Args;
use ratelockr::LeaseError;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The lease's id, as `check` printed it (`"lease"` in its JSON). An id may start with
    /// `-` (ids are URL-safe characters), so the value is taken as it is.
    #[arg(long, allow_hyphen_values = true)]
    pub lease: String,
    /// The client key the lease was taken for.
    #[arg(long)]
    pub key: String,
    /// Renew the lease (its lease_ms again from now) instead of giving it back.
    #[arg(long)]
    pub renew: bool,
    #[command(flatten)]
    pub target: PolicyTarget,
}

pub async fn run(global: &Global, args: &ReleaseArgs) -> anyhow::Result<ExitCode> {
    let policy = args.target.policy("concurrency")?;
    let backend = global.backend()?;
    let limiter = global.limiter(&backend)?;
    let lease = limiter
        .lease_of(&policy, &args.key, &args.lease)
        .map_err(|err| match err {
            LeaseError::Key(err) => flag_error(err),
            LeaseError::InvalidId(_) => anyhow!("invalid --lease: {err}"),
            LeaseError::NoConcurrencyLimit { .. } => anyhow!("{err}"),
        })?;
    let (verb, done) = if args.renew {
        ("renewed", lease.renew().await)
    } else {
        ("released", lease.release().await)
    };
    let done = done
        .map_err(|failure| anyhow!(failure))
        .with_context(|| format!("{verb} nothing: Redis at {} failed", limiter.target()))?;
    if global.json {
        print_json(&serde_json::json!({ verb: done, "lease": args.lease }))?;
    } else if done {
        println!(
            "{verb:<9} lease {}  policy {}  key {}",
            args.lease,
            policy.name(),
            args.key
        );
    } else {
        println!(
            "nothing  lease {} held no slot of policy {} for key {} (released before, or expired)",
            args.lease,
            policy.name(),
            args.key
        );
    }
    Ok(ExitCode::SUCCESS)
}
