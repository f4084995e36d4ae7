//! `ratelockr release`: gives back (or with `--renew`, renews) the lease a `check` under
//! concurrency limits printed, by its id: of a policy from a file, or of a rule given as flags.

use crate::console::print_json;
use crate::opts::{flag_error, AlgorithmArg, Global, RuleArgs};
use anyhow::{anyhow, Context};
use clap::Args;
use ratelockr::{LeaseError, Policy};
use std::path::PathBuf;
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
    /// The policies file the lease's policy is in (TOML or JSON, or a rules file).
    #[arg(
        long,
        value_name = "FILE",
        requires = "policy",
        conflicts_with = "algorithm"
    )]
    pub policies: Option<PathBuf>,
    /// The policy of --policies the lease was taken under.
    #[arg(long, value_name = "NAME", requires = "policies")]
    pub policy: Option<String>,
    /// The algorithm of a rule given as flags, as `check` was given it: concurrency.
    #[arg(long, value_enum, required_unless_present = "policies")]
    pub algorithm: Option<AlgorithmArg>,
    #[command(flatten)]
    pub rule: RuleArgs,
}

pub async fn run(global: &Global, args: &ReleaseArgs) -> anyhow::Result<ExitCode> {
    let policy = match (&args.policies, &args.policy, args.algorithm) {
        (Some(path), Some(name), _) => {
            args.rule.refuse_with("--policies")?;
            super::check_policy::load_policy(path, name)?
        }
        (_, _, Some(algorithm)) => Policy::from_rule(&args.rule.rule_for(algorithm.into())?),
        _ => anyhow::bail!("give --policies FILE with --policy NAME, or --algorithm concurrency"),
    };
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
